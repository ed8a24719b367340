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

/** Bounds under which the small healthy MLP of the store fixture is flagged (STALLED), so
 * that the health answers compared across layers say something. */
export const STRICT = { stalled_update_ratio: 0.5 };

/** The seed's somatize.health over one run: at the defaults and at STRICT. */
export async function healthAnswers(store, run) {
  const seen = await store.seen({ run });
  const node = Object.keys(seen)[0];
  return {
    seen,
    diagnose: await store.diagnosed({ run }),
    strict: await store.diagnosed({ run, thresholds: STRICT }),
    lastTwo: await store.diagnosed({ run, last: 2, thresholds: STRICT }),
    history: await store.history({ run, node }),
    where: Object.fromEntries(await store.where({ run, thresholds: STRICT })),
    alerts: await store.alerts({ run, thresholds: STRICT }),
    profile: await store.figure({ kind: "profile", run, thresholds: STRICT }),
    flags: await store.figure({ kind: "flags", run, thresholds: STRICT }),
    overlaid: await store.figure({ kind: "overlaid", run, thresholds: STRICT }),
    judge: await store.judge({ run, thresholds: STRICT }),
    judgeLastTwo: await store.judge({ run, thresholds: STRICT, last: 2, of: "update_ratio" }),
    profileLastTwo: await store.figure({ kind: "profile", run, thresholds: STRICT, last: 2, of: "update_ratio" }),
  };
}
