// Forwards' rows built from the columns the core answers them as (src/wasm/readback.rs,
// `ForwardColumns`): the wasm calls forwardRows; the Node entry builds the rows its store
// worker answered as columns a part at a time (forwardRowParts), between turns of its event loop.
//
// Columns: `nums` holds forward, written_us and took_us (n each), then each field's value where
// String(value) writes its text (NaN elsewhere); `ints` holds each row's writer (an index into
// `writers`), its number of fields and whether it broke (n each), then each field's name (an
// index into `names`), then where its text ends in `texts`; `errors` is [row, error] for rows
// that have one. Keys are set in the order the core serialises them, so each row is the object
// JSON.parse would make of the row's JSON (`__proto__` as an own key, as JSON.parse makes it).

/** Rows `from` to `to` (exclusive), `at` saying where the previous row's fields ended. */
function rowsOf(n, nums, ints, writers, names, errors, texts, from, to, at) {
  const m = (ints.length - 3 * n) / 2;
  const rows = new Array(to - from);
  let e = at.e;
  let errorAt = e < errors.length ? errors[e][0] : -1;
  let f = at.field;
  let end = at.text;
  for (let i = from; i < to; i++) {
    const row = { forward: nums[i], writer: writers[ints[i]], written_us: nums[n + i], took_us: nums[2 * n + i], broke: ints[2 * n + i] !== 0 };
    if (i === errorAt) {
      row.error = errors[e][1];
      e++;
      errorAt = e < errors.length ? errors[e][0] : -1;
    }
    for (let k = ints[n + i]; k > 0; k--, f++) {
      const name = names[ints[3 * n + f]];
      const stop = ints[3 * n + m + f];
      const v = nums[3 * n + f];
      const text = v === v ? String(v) : texts.slice(end, stop);
      end = stop;
      if (name === "__proto__") Object.defineProperty(row, name, { value: text, writable: true, enumerable: true, configurable: true });
      else row[name] = text;
    }
    rows[i - from] = row;
  }
  Object.assign(at, { e, field: f, text: end });
  return rows;
}

/** Every row. */
export function forwardRows(n, nums, ints, writers, names, errors, texts) {
  return rowsOf(n, nums, ints, writers, names, errors, texts, 0, n, { e: 0, field: 0, text: 0 });
}

/** The rows in parts of `part` rows, in order. */
export function* forwardRowParts([n, nums, ints, writers, names, errors, texts], part) {
  const at = { e: 0, field: 0, text: 0 };
  for (let from = 0; from < n; from += part) {
    yield rowsOf(n, nums, ints, writers, names, errors, texts, from, Math.min(n, from + part), at);
  }
}
