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

/** The seed's somatize.record over one run: every function and figure, as the CLI's --json gives them. */
export async function recordAnswers(store, run) {
  return {
    runs: await store.runs(),
    forwards: await store.forwards({ run }),
    curve: await store.curve({ run }),
    curveCosts: await store.curveCosts({ run }),
    facts: await store.facts({ run, forward: 4 }),
    noFacts: await store.facts({ run, forward: 999 }),
    nodes: await store.nodes({ run, last: 5 }),
    fleet: await store.fleet({ run }),
    standing: await store.standing(),
    progress: await store.figure({ kind: "progress", run, smooth: 3 }),
    spent: await store.figure({ kind: "spent", run }),
    gantt: await store.figure({ kind: "gantt", run, forward: 4 }),
    machines: await store.figure({ kind: "machines", run }),
  };
}
