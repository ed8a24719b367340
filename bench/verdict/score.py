"""Score somatize's verdict on the labelled corpus (python3 standard library only).

    python3 bench/verdict/score.py [--bin target/release/somatize] [--store bench/verdict/corpus]
                                   [--labels bench/verdict/labels.json] [--json FILE]

For every run in labels.json it runs `somatize diagnose STORE --run R --with-bounds`, compares the
flags raised with the run's label, and prints a table per run, a table per flag, where a local
cause was found, and then, last, exactly one line:

    verdict: R/N runs right; healthy clean C/H, quiet Q/H; sick caught S/K; W wrong flags; median M rows per sick run

- right: every required flag raised (a group `A|B` is met by either) and no forbidden flag;
- clean: a healthy run raising no severe flag (labels.json `severe`); quiet: raising no flag;
- caught: a sick run raising every required flag (forbidden ones aside);
- wrong flags: (run, flag) pairs raised that the run's label forbids, summed over runs;
- rows: (node, flag) pairs in the answer's `diagnosis`; the median is over the sick runs.

Per flag: a run *wants* the flag when one of its `must` groups names it (a group `A|B` met by
A counts as wanted and found for A only; an unmet group as wanted and missed for each member);
*forbids* it when its `must_not` names it. Precision is
found / (found + raised-where-forbidden); raised where the label says neither is counted apart.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))


def base(flag):
    """`DEAD_CHANNELS(3)` -> `DEAD_CHANNELS`."""
    return flag.split("(", 1)[0]


def parse_answer(text):
    """The (node, flag) rows of one `somatize diagnose --with-bounds` answer, flags without counts.

    The one place that reads diagnose's output: `{run, forwards, diagnosis: {node: [flags]},
    thresholds}` today; a `faults` list beside a root-only `diagnosis` later. Rows are the
    `diagnosis` pairs either way. Returns (rows, forwards, faults or None)."""
    doc = json.loads(text)
    diagnosis = doc.get("diagnosis")
    if not isinstance(diagnosis, dict):
        raise ValueError("diagnose --json: no `diagnosis` object")
    rows = []
    for node, flags in diagnosis.items():
        if not isinstance(flags, list):
            raise ValueError(f"diagnose --json: flags of {node!r} are not a list")
        for f in flags:
            if not isinstance(f, str):
                raise ValueError(f"diagnose --json: a flag of {node!r} is not a string")
            rows.append((node, base(f)))
    return rows, doc.get("forwards"), doc.get("faults")


def diagnose(binary, store, run):
    p = subprocess.run([binary, "diagnose", store, "--run", run, "--with-bounds"],
                       capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"somatize diagnose {store} --run {run} exited {p.returncode}: "
                           f"{p.stderr.strip()}")
    return parse_answer(p.stdout)


def shown(rows, faults):
    """Every (node, flag) the answer raises: the faults' roots and what each folds under it
    (a consequence is raised and shown, under its root: STALLED under VANISHING, the DEAD
    units an overstep left). Without a `faults` list, the rows."""
    if not faults:
        return list(rows)
    out = []
    for fault in faults:
        for f in [fault] + list(fault.get("folded") or []):
            node, flag = f.get("node"), f.get("flag")
            if not isinstance(node, str) or not isinstance(flag, str):
                raise ValueError("diagnose --json: a fault without a node and a flag")
            out.append((node, base(flag)))
    return out


def judge(label, rows, severe, faults=None):
    """Score one answer against its label. A flag counts as raised when the answer shows it,
    as a fault's root or folded under one; a forbidden flag folded under a root is wrongly
    raised all the same. Rows are the faults (the roots)."""
    findings = shown(rows, faults)
    raised = sorted({f for _, f in findings})
    groups = [g.split("|") for g in label.get("must", [])]
    met = [any(f in raised for f in g) for g in groups]
    missing = ["|".join(g) for g, ok in zip(groups, met) if not ok]
    wrong = sorted(f for f in set(label.get("must_not", [])) if f in raised)
    where = label.get("where") or []
    located = None
    if where and groups:
        wanted = {f for g in groups for f in g}
        located = any(n in where and f in wanted for n, f in findings)
    healthy = label["condition"] == "healthy"
    return {
        "condition": label["condition"],
        "right": not missing and not wrong,
        "raised": raised,
        "missing": missing,
        "wrong": wrong,
        "rows": len(rows),
        "clean": healthy and not any(f in severe for f in raised),
        "quiet": healthy and not raised,
        "caught": (not healthy) and not missing,
        "where": where,
        "located": located,
        "groups": groups,
        "met": met,
    }


def per_flag(results, labels):
    table = {}

    def row(f):
        return table.setdefault(f, {"wanted": 0, "found": 0, "forbidden": 0,
                                    "false_alarm": 0, "unjudged": 0})

    for name, r in results.items():
        lab = labels[name]
        wanted = set()
        for g, ok in zip(r["groups"], r["met"]):
            # a met group counts for the members raised; an unmet one as missed by all
            for f in g:
                wanted.add(f)
                if ok and f not in r["raised"]:
                    continue
                row(f)["wanted"] += 1
                row(f)["found"] += int(ok)
        forbidden = set(lab.get("must_not", []))
        for f in forbidden:
            row(f)["forbidden"] += 1
            row(f)["false_alarm"] += int(f in r["raised"])
        for f in r["raised"]:
            if f not in wanted and f not in forbidden:
                row(f)["unjudged"] += 1
    for f, t in table.items():
        fired = t["found"] + t["false_alarm"]
        t["precision"] = t["found"] / fired if fired else None
        t["recall"] = t["found"] / t["wanted"] if t["wanted"] else None
    return dict(sorted(table.items()))


def pct(x):
    return "-" if x is None else f"{100 * x:.0f}%"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", default=os.path.join(ROOT, "target", "release", "somatize"))
    ap.add_argument("--store", default=os.path.join(HERE, "corpus"))
    ap.add_argument("--labels", default=os.path.join(HERE, "labels.json"))
    ap.add_argument("--json", help="write the scores as JSON to this file")
    args = ap.parse_args()
    with open(args.labels) as f:
        doc = json.load(f)
    labels = doc["runs"]
    severe = set(doc["severe"])
    if not labels:
        sys.exit("labels.json names no runs")
    results = {}
    for name, lab in labels.items():
        rows, forwards, faults = diagnose(args.bin, args.store, name)
        r = judge(lab, rows, severe, faults)
        r["forwards"] = forwards
        r["answer"] = [list(x) for x in rows]
        results[name] = r

    w = max(len(n) for n in results)
    print(f"{'run':<{w}}  {'condition':<13} ok  rows  raised / missing / wrongly raised")
    for name, r in results.items():
        print(f"{name:<{w}}  {r['condition']:<13} {'Y ' if r['right'] else '- '}"
              f"{r['rows']:>5}  {','.join(r['raised']) or '-'} / {','.join(r['missing']) or '-'}"
              f" / {','.join(r['wrong']) or '-'}")
    flags = per_flag(results, labels)
    print()
    print(f"{'flag':<22} {'wanted':>6} {'found':>5} {'recall':>6} {'forbid':>6} {'false':>5} "
          f"{'precis':>6} {'other':>5}")
    for f, t in flags.items():
        print(f"{f:<22} {t['wanted']:>6} {t['found']:>5} {pct(t['recall']):>6} "
              f"{t['forbidden']:>6} {t['false_alarm']:>5} {pct(t['precision']):>6} "
              f"{t['unjudged']:>5}")
    local = {n: r for n, r in results.items() if r["located"] is not None}
    on_node = sum(1 for r in local.values() if r["located"])
    print()
    print(f"local causes found on the right node: {on_node}/{len(local)}")
    for n, r in local.items():
        print(f"  {n}: want {'|'.join(sorted({f for g in r['groups'] for f in g}))} at "
              f"{','.join(r['where'])}: {'yes' if r['located'] else 'no'}")

    healthy = [r for r in results.values() if r["condition"] == "healthy"]
    sick = [r for r in results.values() if r["condition"] != "healthy"]
    summary = {
        "right": sum(r["right"] for r in results.values()), "runs": len(results),
        "clean": sum(r["clean"] for r in healthy), "quiet": sum(r["quiet"] for r in healthy),
        "healthy": len(healthy), "caught": sum(r["caught"] for r in sick), "sick": len(sick),
        "wrong_flags": sum(len(r["wrong"]) for r in results.values()),
        "median_rows_sick": statistics.median([r["rows"] for r in sick]) if sick else 0,
        "located": on_node, "local": len(local),
    }
    m = summary["median_rows_sick"]
    m = int(m) if float(m).is_integer() else m
    line = (f"verdict: {summary['right']}/{summary['runs']} runs right; healthy clean "
            f"{summary['clean']}/{summary['healthy']}, quiet {summary['quiet']}/"
            f"{summary['healthy']}; sick caught {summary['caught']}/{summary['sick']}; "
            f"{summary['wrong_flags']} wrong flags; median {m} rows per sick run")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"summary": summary, "line": line, "flags": flags, "runs": results}, f,
                      indent=1)
            f.write("\n")
    print()
    print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
