"""Tests of score.py's reading and judging, on hand-written diagnose answers (standard library).

    python3 -m unittest bench/verdict/test_score.py
"""

import json
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import score  # noqa: E402

SEVERE = {"NAN", "INF", "VANISHING", "EXPLODING", "DEAD", "SATURATED", "STALLED",
          "OVERSTEPPING"}


def answer(diagnosis, **extra):
    doc = {"run": "r", "forwards": 3, "diagnosis": diagnosis, "thresholds": {}}
    doc.update(extra)
    return json.dumps(doc)


class ParseAnswer(unittest.TestCase):
    def test_rows_are_node_flag_pairs_without_counts(self):
        rows, forwards, faults = score.parse_answer(
            answer({"fc1": ["DEAD_CHANNELS(3)", "STALLED"], "fc2": ["STALLED"]}))
        self.assertEqual(rows, [("fc1", "DEAD_CHANNELS"), ("fc1", "STALLED"), ("fc2", "STALLED")])
        self.assertEqual(forwards, 3)
        self.assertIsNone(faults)

    def test_a_faults_list_beside_a_root_only_diagnosis_leaves_rows_to_the_diagnosis(self):
        rows, _, faults = score.parse_answer(
            answer({"fc1": ["NAN"]}, faults=[{"flag": "NAN", "nodes": ["fc1", "fc2"]}]))
        self.assertEqual(rows, [("fc1", "NAN")])
        self.assertEqual(len(faults), 1)

    def test_what_a_fault_folds_is_raised_but_not_a_row(self):
        faults = [{"node": "fc1", "flag": "VANISHING",
                   "folded": [{"node": "fc1", "flag": "STALLED"}, {"node": "fc2", "flag": "DEAD_CHANNELS(4)"}]}]
        rows, _, got = score.parse_answer(answer({"fc1": ["VANISHING"]}, faults=faults))
        lab = {"condition": "vanishing", "must": ["VANISHING"], "must_not": ["STALLED"]}
        r = score.judge(lab, rows, SEVERE, got)
        self.assertEqual(r["raised"], ["DEAD_CHANNELS", "STALLED", "VANISHING"])
        self.assertEqual(r["rows"], 1)
        self.assertEqual(r["wrong"], ["STALLED"], "a forbidden flag folded under a root is still wrong")
        self.assertFalse(r["right"])

    def test_malformed_answers_are_refused(self):
        for bad in ['{"run": "r"}', answer(["NAN"]), answer({"fc1": "NAN"}),
                    answer({"fc1": [3]})]:
            with self.assertRaises(ValueError, msg=bad):
                score.parse_answer(bad)


class Judge(unittest.TestCase):
    def label(self, **kw):
        lab = {"condition": "nan", "must": ["NAN|INF"], "must_not": ["STALLED"], "where": []}
        lab.update(kw)
        return lab

    def test_an_alternative_is_met_by_either_flag(self):
        r = score.judge(self.label(), [("fc1", "INF")], SEVERE)
        self.assertTrue(r["right"] and r["caught"])
        self.assertEqual(r["missing"], [])

    def test_a_forbidden_flag_makes_a_caught_run_wrong(self):
        r = score.judge(self.label(), [("fc1", "NAN"), ("fc2", "STALLED")], SEVERE)
        self.assertTrue(r["caught"])
        self.assertFalse(r["right"])
        self.assertEqual(r["wrong"], ["STALLED"])
        self.assertEqual(r["rows"], 2)

    def test_a_missing_flag_is_named(self):
        r = score.judge(self.label(must=["VANISHING", "NAN|INF"]), [("fc1", "NAN")], SEVERE)
        self.assertEqual(r["missing"], ["VANISHING"])
        self.assertFalse(r["caught"] or r["right"])

    def test_healthy_clean_and_quiet(self):
        healthy = self.label(condition="healthy", must=[], must_not=sorted(SEVERE))
        r = score.judge(healthy, [("out", "MISSING_NORMALISATION")], SEVERE)
        self.assertTrue(r["right"] and r["clean"])
        self.assertFalse(r["quiet"])
        r = score.judge(healthy, [], SEVERE)
        self.assertTrue(r["quiet"] and r["clean"])
        r = score.judge(healthy, [("fc1", "DEAD")], SEVERE)
        self.assertFalse(r["clean"] or r["right"])

    def test_a_local_cause_must_be_on_a_labelled_node(self):
        lab = self.label(condition="dead", must=["DEAD"], must_not=[], where=["act1"])
        self.assertTrue(score.judge(lab, [("act1", "DEAD")], SEVERE)["located"])
        self.assertFalse(score.judge(lab, [("act2", "DEAD"), ("act1", "STALLED")],
                                     SEVERE)["located"])
        self.assertIsNone(score.judge(self.label(), [], SEVERE)["located"])


class PerFlag(unittest.TestCase):
    def test_precision_recall_and_alternatives(self):
        labels = {
            "a": {"condition": "nan", "must": ["NAN|INF"], "must_not": ["STALLED"]},
            "b": {"condition": "nan", "must": ["NAN|INF"], "must_not": ["STALLED"]},
            "c": {"condition": "healthy", "must": [], "must_not": ["NAN", "STALLED"]},
        }
        answers = {"a": [("x", "NAN")], "b": [("x", "STALLED")], "c": [("x", "NAN")]}
        results = {n: score.judge(labels[n], answers[n], SEVERE) for n in labels}
        t = score.per_flag(results, labels)
        # a: group met by NAN (counts for NAN only); b: group unmet (missed by NAN and INF)
        self.assertEqual((t["NAN"]["wanted"], t["NAN"]["found"]), (2, 1))
        self.assertEqual((t["INF"]["wanted"], t["INF"]["found"]), (1, 0))
        # c raises NAN where forbidden: NAN's precision is 1 / 2
        self.assertEqual(t["NAN"]["false_alarm"], 1)
        self.assertAlmostEqual(t["NAN"]["precision"], 0.5)
        self.assertEqual(t["STALLED"]["false_alarm"], 1)
        self.assertIsNone(t["STALLED"]["recall"])


if __name__ == "__main__":
    unittest.main()
