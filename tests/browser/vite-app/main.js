// The Vite test app: the package imported by name, a store opened in its worker, the answers shown as JSON.
import { openStore, specId } from "somatize";

const out = document.querySelector("#out");
try {
  const store = await openStore(new URLSearchParams(location.search).get("store"));
  const runs = await store.listRuns();
  const { rows } = await store.scan({ run: runs[0], last: 2 });
  const id = specId({ source: "param", selector: "w", reduction: "l2" });
  out.textContent = JSON.stringify({ runs, last: rows.map((r) => r.forward), id });
} catch (e) {
  out.textContent = `error: ${e.message}`;
}
