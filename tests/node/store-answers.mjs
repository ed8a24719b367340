// The answers to the store calls every layer compares (Node, Chromium): plain JS, no Node imports.

/** What `store` says about its runs: format, runs, writers, full and last-3 scans, one fetch. */
export async function answers(store) {
  const runs = await store.listRuns();
  const out = { format: await store.format(), runs, writers: {}, scans: {}, last: {} };
  for (const run of runs) {
    out.writers[run] = await store.writers({ run });
    out.scans[run] = await store.scan({ run });
    out.last[run] = await store.scan({ run, last: 3 });
  }
  out.fetched = await store.fetch({ run: "mlp", forward: 4, writer: "w1" });
  return out;
}
