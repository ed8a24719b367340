"""The example notebook run without Jupyter: every code cell, in order, in one namespace.

What each cell's last expression shows (its ``_repr_html_``) is checked: the report is an
``<iframe sandbox="allow-scripts" srcdoc>`` holding a whole self-contained report, the live view an
iframe on 127.0.0.1 that the server answers with the page and the store. The outputs are written
to ``$SOMATIZE_NOTEBOOK_OUT`` (default ``target/notebook/``) as HTML files with a manifest, for
``tests/browser/report-notebook.test.mjs`` to open in Chromium.

Run: ``SOMATIZE_BIN=target/release/somatize python3 tests/notebook_test.py`` (the binary defaults
to this repository's release build, else its debug build). Needs the package built
(``scripts/build-wasm.sh``). Standard library only; the notebook's ``somatize.show`` cell needs
anywidget, so it is run with the torch venv's python (scripts/test.sh installs anywidget there).
"""

import ast
import html
import io
import json
import os
import re
import sys
import unittest
import urllib.request
from contextlib import redirect_stdout
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK = ROOT / "examples" / "notebook.ipynb"
OUT = Path(os.environ.get("SOMATIZE_NOTEBOOK_OUT", ROOT / "target" / "notebook"))


def run_cell(source, namespace):
    """Run one cell as IPython would: its statements, then its last expression's value (or None)."""
    tree = ast.parse(source)
    last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
    exec(compile(tree, "<cell>", "exec"), namespace)
    if last is None:
        return None
    return eval(compile(ast.Expression(last.value), "<cell>", "eval"), namespace)


def fetch(url):
    with urllib.request.urlopen(url, timeout=10) as r:
        return r.status, r.read().decode("utf-8", "replace")


class Notebook(unittest.TestCase):
    """Runs the notebook once (setUpClass) and checks what it showed."""

    @classmethod
    def setUpClass(cls):
        nb = json.loads(NOTEBOOK.read_text(encoding="utf-8"))
        cls.nb = nb
        cls.namespace = {"__name__": "__main__"}
        cls.shown = []  # (cell index, value, its HTML or None, printed text)
        cls.live_answers = None
        cwd = os.getcwd()
        os.chdir(NOTEBOOK.parent)  # Jupyter runs a notebook in its own folder
        try:
            for i, cell in enumerate(nb["cells"]):
                if cell["cell_type"] != "code":
                    continue
                printed = io.StringIO()
                with redirect_stdout(printed):
                    value = run_cell("".join(cell["source"]), cls.namespace)
                shown = value._repr_html_() if hasattr(value, "_repr_html_") else None
                cls.shown.append((i, value, shown, printed.getvalue()))
                if shown and type(value).__name__ == "Live":
                    # Ask the server now: a later cell stops it.
                    cls.live_answers = {
                        "page": fetch(value.url),
                        "listing": fetch(re.sub(r"/www/index\.html.*", "/store/listing.jsonl", value.url)),
                    }
        finally:
            os.chdir(cwd)
        cls.write_outputs()

    @classmethod
    def write_outputs(cls):
        OUT.mkdir(parents=True, exist_ok=True)
        manifest = {"store": str(cls.namespace["store"]), "binary": cls.namespace["sn"].binary(), "outputs": []}
        for i, value, shown, _ in cls.shown:
            if not shown:
                continue
            name = f"cell-{i}.html"
            (OUT / name).write_text(
                f'<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>cell {i}</title></head>'
                f"<body>\n{shown}\n</body></html>\n",
                encoding="utf-8",
            )
            manifest["outputs"].append({"cell": i, "kind": type(value).__name__, "file": name,
                                        "run": getattr(value, "run", None)})
        (OUT / "manifest.json").write_text(json.dumps(manifest, indent=1), encoding="utf-8")

    def of_kind(self, kind):
        return [(i, v, h) for i, v, h, _ in self.shown if h and type(v).__name__ == kind]

    def test_the_notebook_is_nbformat_4_and_every_code_cell_ran(self):
        self.assertEqual(self.nb["nbformat"], 4)
        for cell in self.nb["cells"]:
            self.assertIn(cell["cell_type"], ("markdown", "code"))
            self.assertIsInstance(cell["source"], list)
            if cell["cell_type"] == "code":
                self.assertEqual(cell["outputs"], [], "the example is saved without outputs")
        code = [c for c in self.nb["cells"] if c["cell_type"] == "code"]
        self.assertEqual(len(self.shown), len(code))

    def test_the_demo_trained_every_run(self):
        runs = [r["run"] for r in self.namespace["runs"]]
        self.assertEqual(sorted(runs), sorted(["healthy", "vanishing", "exploding", "dead_relu",
                                               "saturated", "stalled", "overstepping"]))
        printed = "".join(p for _, _, _, p in self.shown)
        self.assertIn("vanishing", printed)

    def test_the_report_is_a_sandboxed_srcdoc_iframe_holding_the_whole_report(self):
        [(_, value, shown)] = self.of_kind("Report")
        self.assertEqual(value.run, "vanishing")
        self.assertTrue(shown.startswith('<iframe sandbox="allow-scripts" srcdoc="'), shown[:80])
        srcdoc = re.search(r'srcdoc="([^"]*)"', shown).group(1)
        self.assertNotIn("<", srcdoc, "the document is escaped inside the attribute")
        self.assertEqual(html.unescape(srcdoc), value.html, "the attribute gives back the report exactly")
        doc = value.html
        self.assertTrue(doc.startswith("<!doctype html>"))
        self.assertIn('id="somatize-snapshot"', doc)
        self.assertIn('"run":"vanishing"', doc)
        markup = re.sub(r"(<(script|style)\b[^>]*>).*?(</\2>)", r"\1\3", doc, flags=re.S | re.I)
        self.assertIsNone(re.search(r'\s(?:src|href)="https?:', markup), "the report links nothing to fetch")
        self.assertIn("default-src 'none'", doc)

    def test_the_live_view_is_the_served_page_over_the_store(self):
        [(_, value, shown)] = self.of_kind("Live")
        self.assertRegex(value.url, r"^http://127\.0\.0\.1:\d+/www/index\.html\?store=/store/&live=1$")
        self.assertIn(f'src="{html.escape(value.url)}"', shown)
        status, page = self.live_answers["page"]
        self.assertEqual(status, 200)
        self.assertIn("<title>somatize</title>", page)
        status, listing = self.live_answers["listing"]
        self.assertEqual(status, 200)
        listed = {json.loads(line)["run"] for line in listing.splitlines() if line.strip()}
        self.assertIn("vanishing", listed)
        self.assertIsNotNone(value.process.poll(), "the last cell stopped the server")

    def test_the_store_view_is_a_widget_that_reads_the_store_through_the_kernel(self):
        [value] = [v for _, v, _, _ in self.shown if type(v).__name__ == "StoreView"]
        self.assertEqual((value.store, value.run, value.live, value.mode), ("demo", "vanishing", False, "store"))
        bundle = value._repr_mimebundle_()
        data = bundle[0] if isinstance(bundle, tuple) else bundle
        self.assertEqual(data["application/vnd.jupyter.widget-view+json"]["model_id"], value.model_id)
        self.assertIn("export default", value._esm if isinstance(value._esm, str) else Path(value._esm).read_text())
        sent = []
        value.send = lambda content, buffers=None: sent.append((content, buffers or []))
        value._on_msg(value, {"type": "somatize.read", "id": 1, "asks": [{"op": "list", "path": "runs"}]}, [])
        # The first read brings the store's listing along (the root's, down to the runs' packs),
        # then the answer asked for: every listing of "runs" names the demo's runs.
        self.assertTrue(sent[-1][0]["done"])
        listed = [a["names"] for c, _ in sent for a in c["answers"] if a["op"] == "list" and a["path"] == "runs"]
        self.assertTrue(listed)
        for names in listed:
            self.assertEqual(names, sorted(r["run"] for r in self.namespace["runs"]))
        [root] = [a["names"] for c, _ in sent for a in c["answers"] if a["op"] == "list" and a["path"] == ""]
        self.assertIn("somatize-store.json", root)

    def test_helper_failures_carry_the_binarys_message(self):
        sn = self.namespace["sn"]
        with self.assertRaises(sn.SomatizeError) as got:
            sn.report(self.namespace["store"], "no_such_run")
        self.assertIn('no run "no_such_run"', str(got.exception))
        self.assertIn("vanishing", str(got.exception), "the runs the store holds are named")

    def test_a_hostile_run_name_stays_inside_the_iframe_attributes(self):
        sn = self.namespace["sn"]
        shown = sn.Report('<p title="x">&amp;</p>', '"><script>alert(1)</script>')._repr_html_()
        self.assertNotIn("<script>", shown)
        self.assertNotIn("<p", shown)
        self.assertEqual(shown.count("<iframe "), 1)
        self.assertTrue(shown.endswith("></iframe>"))


if __name__ == "__main__":
    unittest.main(verbosity=2)
