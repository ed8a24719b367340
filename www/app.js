// The page's script: routes what is opened to the file or the store view; data is only ever text.
import { specId, version } from "../pkg/browser.js";
import * as adapter from "./store-adapter.js";
import { FLAGS, aboutFlag } from "./flags.js";
import { TENSOR_FILE, judgeFile, judgeableNote, seenOf, statsTable } from "./file-view.js";
import { thresholdsEditor } from "./thresholds.js";
import { showVerdict } from "./verdict-view.js";
import { fill } from "./dom.js";
import { showStore, stopStore } from "./store-page.js";

const $ = (id) => document.getElementById(id);

// ---- status, progress and errors ----

let working = 0;
/** Run `work` showing `message` and an indeterminate progress bar; errors go to the page. */
async function busy(message, work) {
  working += 1;
  $("busy").hidden = false;
  $("status").textContent = message;
  try {
    return await work();
  } finally {
    if ($("status").textContent === message) $("status").textContent = "";
    working -= 1;
    if (working === 0) $("busy").hidden = true;
  }
}

/** Say in the page what went wrong with `what` (a file, a folder, a URL): the core's message. */
export function showError(what, error) {
  const message = error?.message ?? String(error);
  $("error").textContent = message.includes(what) ? message : `${what}: ${message}`;
  $("status").textContent = "";
}

function clearError() {
  $("error").textContent = "";
}

/** Hide what was open: a new file or store replaces it, and a failed one leaves nothing stale. */
function clearViews() {
  for (const id of ["file-view", "file-stats", "store-view", "store-figures", "progress-section"]) {
    if ($(id)) $(id).hidden = true;
  }
  judge = null;
  $("verdict-section").hidden = true;
  fill($("verdict"));
  fill($("judgeable"));
}

// ---- the verdict: whichever view is open says how to judge at given thresholds ----

let judge = null;
const editor = thresholdsEditor($("thresholds"), async (thresholds) => {
  if (!judge) return "";
  try {
    await judge(thresholds);
    return "";
  } catch (e) {
    return e.message;
  }
});

/** Set how the open view is judged, and judge it now at the thresholds in the editor. */
export function setJudge(f) {
  judge = f;
  $("verdict-section").hidden = !f;
  return editor.rejudge();
}

// ---- a tensor file ----

function sizeText(bytes) {
  return bytes >= 1 << 20 ? `${(bytes / (1 << 20)).toFixed(1)} MiB` : `${Math.ceil(bytes / 1024)} KiB`;
}

async function openTensorFile(file) {
  stopStore();
  const stats = await busy(`Reading ${file.name} (${sizeText(file.size)})…`, () => adapter.tensorStats(file));
  $("file-title").textContent = `Tensor file: ${file.name}`;
  const keys = Object.keys(stats);
  $("file-summary").textContent = `${keys.length} tensor${keys.length === 1 ? "" : "s"}, ${sizeText(file.size)}. Statistics over the finite values, in float64.`;
  fill($("stats"), statsTable(stats));
  filterStats();
  $("file-view").hidden = false;
  $("file-stats").hidden = false;
  const seen = seenOf(stats);
  judgeableNote($("judgeable"), seen);
  await setJudge((thresholds) => showVerdict($("verdict"), judgeFile(seen, thresholds), thresholds,
    `Judged from one file (${file.name}), node by node.`));
  $("status").textContent = `Opened ${file.name}.`;
}

/** Show only the statistics rows whose key contains the filter's text. */
function filterStats() {
  const want = $("stats-filter").value.trim().toLowerCase();
  const rows = [...document.querySelectorAll("#stats-table tbody tr")];
  let shown = 0;
  for (const tr of rows) {
    tr.hidden = want !== "" && !tr.firstElementChild.textContent.toLowerCase().includes(want);
    if (!tr.hidden) shown += 1;
  }
  $("stats-shown").textContent = want ? `${shown} of ${rows.length} shown` : "";
}

// ---- a store ----

async function openStore(source, label, live = false, run = null) {
  await showStore(source, label, { busy, showError, setJudge, live, run });
}

// ---- routing what was opened ----

/** Open one File: a tensor file, or a snapshot .zip of a store. */
async function openFile(file) {
  clearError();
  clearViews();
  try {
    if (TENSOR_FILE.test(file.name)) await openTensorFile(file);
    else if (/\.zip$/i.test(file.name)) await openStore(file, file.name);
    else throw new Error("not a store snapshot (.zip) nor a tensor file (.pt, .pth, .npz, .npy, .safetensors)");
  } catch (e) {
    showError(file.name, e);
  }
}

/** Open a folder: a FileList with relative paths, {path, file}[] or a directory handle. */
async function openFolder(source, label, live = false, run = null) {
  clearError();
  clearViews();
  try {
    await openStore(source, label, live, run);
  } catch (e) {
    showError(label, e);
  }
}

/** The files under a dropped directory entry, each with its path under the folder. */
async function filesUnder(entry, prefix = "") {
  if (entry.isFile) {
    const file = await new Promise((ok, bad) => entry.file(ok, bad));
    return [{ path: prefix + entry.name, file }];
  }
  const reader = entry.createReader();
  const out = [];
  for (;;) {
    const batch = await new Promise((ok, bad) => reader.readEntries(ok, bad));
    if (!batch.length) return out;
    for (const e of batch) out.push(...(await filesUnder(e, `${prefix}${entry.name}/`)));
  }
}

async function onDrop(event) {
  event.preventDefault();
  document.body.classList.remove("dragging");
  // Everything must be taken from the items now: they are gone once this handler awaits.
  const items = [...(event.dataTransfer?.items ?? [])].filter((i) => i.kind === "file").map((i) => ({
    handle: i.getAsFileSystemHandle?.() ?? null,
    entry: i.webkitGetAsEntry?.() ?? null,
    file: i.getAsFile(),
  }));
  if (items.length !== 1) {
    showError("drop", new Error(items.length ? "drop one file or one folder at a time" : "nothing to open was dropped"));
    return;
  }
  const [{ handle, entry, file }] = items;
  if (entry?.isDirectory) {
    const h = handle ? await handle.catch(() => null) : null;
    if (h?.kind === "directory") return openFolder(h, h.name, true);
    return busy(`Listing ${entry.name}…`, () => filesUnder(entry))
      .then((files) => openFolder(files, entry.name))
      .catch((e) => showError(entry.name, e));
  }
  if (file) return openFile(file);
}

function wireOpen() {
  document.addEventListener("dragover", (e) => {
    e.preventDefault();
    document.body.classList.add("dragging");
  });
  document.addEventListener("dragleave", (e) => {
    if (!e.relatedTarget) document.body.classList.remove("dragging");
  });
  document.addEventListener("drop", onDrop);
  $("pick-file").addEventListener("change", (e) => {
    const [file] = e.target.files;
    if (file) openFile(file);
  });
  $("pick-folder").addEventListener("change", (e) => {
    const files = [...e.target.files];
    const name = files[0]?.webkitRelativePath.split("/")[0] ?? "folder";
    if (files.length) openFolder(files, name);
  });
  // Where the browser gives a directory handle (Chromium, Edge, Opera), a folder is opened
  // through it alone: read lazily and followed live, with no FileList for the browser to make
  // first (1.5–1.8 s of its own for a store of 5,003 files, docs/page.md). The folder input is
  // the way elsewhere, and here too if the picker is refused (a policy, a sandbox).
  if (typeof window.showDirectoryPicker === "function") {
    $("pick-dir-box").hidden = false;
    $("pick-folder-box").hidden = true;
    $("pick-dir").addEventListener("click", async () => {
      try {
        const h = await window.showDirectoryPicker({ mode: "read" });
        await openFolder(h, h.name, true);
      } catch (e) {
        if (e.name === "AbortError") return;
        if (e.name === "SecurityError" || e.name === "NotAllowedError") $("pick-folder-box").hidden = false;
        showError("folder", e);
      }
    });
  }
  $("url-form").addEventListener("submit", (e) => {
    e.preventDefault();
    openUrl($("store-url").value.trim());
  });
}

/** Open a store served as plain files: only from this page's own origin (the page's policy). */
function openUrl(text, live = false) {
  clearError();
  let url;
  try {
    url = new URL(text, location.href);
  } catch {
    showError(text || "store URL", new Error("not a URL"));
    return;
  }
  // A store shared from object storage (`somatize share`: a .json link) may be on another
  // origin, over https (or http on this machine's loopback, a local S3 server); any other store
  // URL only on the page's own.
  const shared = /\.json$/i.test(url.pathname) &&
    (url.protocol === "https:" || (url.protocol === "http:" && ["127.0.0.1", "localhost"].includes(url.hostname)));
  if (url.origin !== location.origin && !shared) {
    showError(url.href, new Error(`only stores on this page's own site (${location.origin}) can be opened, or a store shared from object storage (a .json link of \`somatize share\`, over https)`));
    return;
  }
  $("store-url").value = url.href;
  // A share link is named without its query: a presigned link's signature is no name.
  openFolder(url.href, shared ? `${url.origin}${url.pathname}` : url.href, live);
}

// ---- the observable id box ----

function showSpecId() {
  $("spec-error").textContent = "";
  try {
    $("spec-id").textContent = specId(JSON.parse($("spec").value));
  } catch (e) {
    $("spec-id").textContent = "";
    $("spec-error").textContent = e.message;
  }
}

// ---- start ----

FLAGS.forEach(aboutFlag); // each flag the page lists is one the core knows (throws otherwise)
$("version").textContent = version();
$("spec").addEventListener("input", showSpecId);
showSpecId();
wireOpen();
$("stats-filter").addEventListener("input", filterStats);
/** Open a store the host of this page hands over (`somatize report` embeds a snapshot's bytes; the
 * notebook widget a source reading from its kernel), as if dropped; `live` follows it, `run` is
 * shown first (else the latest written). */
export function openEmbedded(source, label, live = false, run = null) {
  return openFolder(source, label, live, run);
}
const asked = new URLSearchParams(location.search).get("store");
if (asked) openUrl(asked, new URLSearchParams(location.search).get("live") === "1"); // &live=1: follow it (notebooks' live view)
document.body.dataset.ready = "true";
