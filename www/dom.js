// DOM helpers: every piece of data becomes a text node; no markup is ever parsed from data.

/** An element with attributes (strings, or `on<event>` handlers) and children (nodes or text). */
export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith("on") && typeof value === "function") node.addEventListener(name.slice(2), value);
    else if (name === "dataset") Object.assign(node.dataset, value);
    else node.setAttribute(name, value === true ? "" : String(value));
  }
  append(node, children);
  return node;
}

/** Append children: nodes as they are, anything else as text. */
export function append(node, children) {
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

/** Replace a node's children. */
export function fill(node, ...children) {
  node.replaceChildren();
  return append(node, children);
}

/**
 * A table: `columns` is [{key, label, numeric?, cell?(row) -> node|text}], `rows` plain objects.
 * Numeric columns are right-aligned; the caption is text.
 */
export function table(caption, columns, rows, attrs = {}) {
  return el("table", attrs, caption ? el("caption", {}, caption) : null, el("thead", {}, headRow(columns)),
    el("tbody", {}, rows.map((row) => tableRow(columns, row))));
}

/** A table's header row for `columns` (as `table` takes them). */
export function headRow(columns) {
  return el("tr", {}, columns.map((c) => el("th", { scope: "col", class: c.numeric ? "num" : null }, c.label)));
}

/** One body row of `row` for `columns` (as `table` takes them): the first cell is the row's header. */
export function tableRow(columns, row) {
  return el("tr", {}, columns.map((c, i) => {
    const value = c.cell ? c.cell(row) : row[c.key];
    const tag = i === 0 && !c.plain ? "th" : "td";
    return el(tag, { scope: tag === "th" ? "row" : null, class: c.numeric ? "num" : null }, value);
  }));
}
