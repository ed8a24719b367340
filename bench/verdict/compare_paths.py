"""The verdict through `somatize.torch.watch` against the verdict from whole-tensor dumps, run by
run, over the benchmark's runs recorded both ways (generate.py --watch-store):

    python3 bench/verdict/compare_paths.py --dumps-store S --watch-store W \
        [--labels bench/verdict/labels.json] [--bin target/release/somatize]

For every labelled run in both stores it prints the flags each record raises (a fault's root
and what it folds, as score.py counts them), whether the two sets are equal, and whether each
is right by the run's label; last the line

    paths: N/M runs raise the same flags; dumps right A/M, watch right B/M

Differences are expected where the two records hold different things, and the table says so:
the watch path records every step (norms every step, full summaries every `every`-th) where
the dumps hold every `every`-th step whole, and torch sends no CKA (LEAKAGE needs the dumps'
tensors or keep_tensors_every). Exits 0 (it reports; the scores are score.py's to judge).
"""

import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
import score  # noqa: E402


def flags(binary, store, run):
    rows, _, faults = score.diagnose(binary, store, run)
    return rows, faults, sorted({f for _, f in score.shown(rows, faults)})


def where(binary, store, run):
    """The verdict as the seed has it (`diagnose --json`: each node and the flags raised at
    it, what is folded included)."""
    p = subprocess.run([binary, "diagnose", store, "--run", run, "--json"], capture_output=True,
                       text=True, check=True)
    return json.loads(p.stdout)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dumps-store", required=True)
    ap.add_argument("--watch-store", required=True)
    ap.add_argument("--labels", default=os.path.join(HERE, "labels.json"))
    ap.add_argument("--bin", default=os.path.join(ROOT, "target", "release", "somatize"))
    args = ap.parse_args()
    with open(args.labels) as f:
        doc = json.load(f)
    labels, severe = doc["runs"], set(doc.get("severe", []))
    have = [n for n in labels
            if all(os.path.isdir(os.path.join(s, "runs", n))
                   for s in (args.dumps_store, args.watch_store))]
    same = same_where = right_d = right_w = 0
    print(f"{'run':<40} {'same':<5} {'where':<6} {'dumps':<6} {'watch':<6} "
          "flags (dumps | watch)")
    for name in have:
        rd, fd, a = flags(args.bin, args.dumps_store, name)
        rw, fw, b = flags(args.bin, args.watch_store, name)
        jd = score.judge(labels[name], rd, severe, fd)
        jw = score.judge(labels[name], rw, severe, fw)
        at = where(args.bin, args.dumps_store, name) == where(args.bin, args.watch_store, name)
        same += a == b
        same_where += at
        right_d += jd["right"]
        right_w += jw["right"]
        print(f"{name:<40} {'yes' if a == b else 'NO':<5} {'yes' if at else 'NO':<6} "
              f"{'right' if jd['right'] else 'WRONG':<6} {'right' if jw['right'] else 'WRONG':<6} "
              f"{','.join(a) or '-'} | {','.join(b) or '-'}")
    n = len(have)
    print(f"paths: {same}/{n} runs raise the same flags, {same_where}/{n} on the same nodes; "
          f"dumps right {right_d}/{n}, watch right {right_w}/{n}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
