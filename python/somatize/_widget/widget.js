// The anywidget module of somatize.show and somatize.Live (docs/notebooks.md).
//
// It asks the kernel for the page (the store view: the page's modules and plotly inlined into one
// gzipped HTML document) and the wasm core (gzipped bytes beside it), both shipped in the Python
// package (no CDN, no network); shows the page in a sandboxed iframe (an opaque origin, apart from
// the notebook), hands it the wasm (still gzipped: the iframe inflates it as it compiles), and relays between the two: the page's reads of the store go
// to the kernel as custom messages, and the bytes come back as binary buffers, chunked (the
// kernel sends at most a few MiB per message).
//
// Kernel messages (content, buffers):
//   to the kernel:   {type: "somatize.page"}, {type: "somatize.prime"}, {type: "somatize.read", id, asks},
//                    {type: "somatize.hello"}
//   from the kernel: {type: "somatize.page", what: "page"|"wasm", part, parts} + [gzip bytes],
//                    {type: "somatize.answers", id, answers, done, error?} + [bytes…] (answers name a buffer by index),
//                    {type: "somatize.primed", answers, done, error?} + [bytes…] (the same answers, unasked: the
//                    store's listing and the named run's files, asked for once as the view renders),
//                    {type: "somatize.rows", errors} + [Float64Array of forward, value, took_us, flags]
//
// A kernel restarted (or shut down) under the view: Jupyter's widget manager marks the model's
// channel dead (the model's "comm_live_update" event); the view says so at once, and reads asked
// after it fail with that, rather than waiting for the model's `timeout`.

/** A buffer of a custom message as bytes (ipywidgets gives DataViews, others ArrayBuffers). */
function bytesOf(b) {
  if (b instanceof ArrayBuffer) return new Uint8Array(b);
  if (ArrayBuffer.isView(b)) return new Uint8Array(b.buffer, b.byteOffset, b.byteLength);
  throw new Error("the kernel sent a buffer that is not bytes");
}

/** How long a read may wait for the kernel by default (a kernel gone never answers); the
 * model's `timeout` (seconds) sets it. */
const ASK_TIMEOUT_MS = 120000;
const askTimeout = (model) => (Number(model.get("timeout")) > 0 ? Number(model.get("timeout")) * 1000 : ASK_TIMEOUT_MS);
/** What the view says when the kernel went away (the model's channel is dead). */
const GONE = "the kernel went away (restarted or shut down): this view can no longer read the store; run the cell again";

let assets = null; // {page: Promise<string>, wasm: Promise<Uint8Array> (gzipped)}, asked once per notebook window

/** The page's HTML and the wasm's gzipped bytes: gzipped parts from the kernel, joined (the page
 * decompressed); each Promise settles as soon as its parts are here (the iframe starts on the
 * page while the wasm comes). */
function pageAndWasm(model, listen) {
  if (assets) return assets;
  const parts = { page: [], wasm: [] };
  const waiting = {};
  const mine = {};
  for (const what of ["page", "wasm"]) {
    mine[what] = new Promise((resolve, reject) => (waiting[what] = { resolve, reject }));
    mine[what].catch(() => {}); // said by whoever awaits it
  }
  const timer = setTimeout(() => fail(new Error("the kernel did not send the somatize page")), askTimeout(model));
  const off = listen((msg, buffers) => {
    if (msg?.type !== "somatize.page") return;
    if (msg.error) return fail(new Error(msg.error));
    const what = msg.what === "wasm" ? "wasm" : "page";
    const got = parts[what];
    got[msg.part] = bytesOf(buffers[0]).slice();
    if (got.filter(Boolean).length !== msg.parts || !waiting[what]) return;
    // The page is decompressed here (the iframe's srcdoc); the wasm stays gzipped: the iframe
    // decompresses it into WebAssembly.compileStreaming (widget-wasm.js), compiling as it inflates.
    const value = what === "page"
      ? new Response(new Blob(got).stream().pipeThrough(new DecompressionStream("gzip"))).text()
      : new Blob(got).arrayBuffer().then((b) => new Uint8Array(b));
    value.catch((e) => fail(e));
    waiting[what].resolve(value);
    delete waiting[what];
    if (!waiting.page && !waiting.wasm) {
      clearTimeout(timer);
      off();
    }
  });
  function fail(e) {
    clearTimeout(timer);
    off();
    for (const w of Object.values(waiting)) w.reject(e);
    if (assets === mine) assets = null; // asked again by the next view
  }
  assets = mine;
  model.send({ type: "somatize.page" });
  return mine;
}

async function render({ model, el }) {
  const handlers = new Set();
  const onCustom = (msg, buffers) => {
    for (const h of [...handlers]) h(msg, buffers ?? []);
  };
  const listen = (h) => {
    handlers.add(h);
    return () => handlers.delete(h);
  };
  model.on("msg:custom", onCustom);

  const status = document.createElement("p");
  status.className = "somatize-widget-status";
  status.textContent = "somatize: loading the view…";
  el.append(status);
  const frame = document.createElement("iframe");
  frame.className = "somatize-widget";
  frame.setAttribute("sandbox", "allow-scripts allow-downloads");
  frame.title = model.get("mode") === "live" ? `somatize: ${model.get("title")}` : `somatize: store ${model.get("store")}`;
  frame.style.cssText = `width: 100%; height: ${Number(model.get("height")) || 900}px; border: 1px solid #ccc;`;

  // Reads the page asks for: relayed to the kernel, answered with its buffers, by id.
  const asks = new Map(); // id -> {frameId, answers, buffers}
  let nextId = 1;
  listen((msg, buffers) => {
    if (msg?.type !== "somatize.answers") return;
    const a = asks.get(msg.id);
    if (!a) return;
    for (const ans of msg.answers ?? []) {
      const out = { ...ans };
      if (typeof ans.buffer === "number") out.bytes = bytesOf(buffers[ans.buffer]).slice();
      delete out.buffer;
      a.answers.push(out);
    }
    if (msg.error || msg.done) {
      asks.delete(msg.id);
      clearTimeout(a.timer);
      const k = (times.kernel ??= { trips: 0, ms: 0, bytes: 0 });
      k.trips += 1;
      k.ms += Math.round(performance.now() - a.sent);
      k.bytes += a.answers.reduce((n, x) => n + (x.bytes?.length ?? 0), 0);
      frame.contentWindow?.postMessage({ somatize: "answers", id: a.frameId, answers: a.answers, error: msg.error }, "*");
    }
  });
  const rowsFromKernel = [];
  listen((msg, buffers) => {
    if (msg?.type !== "somatize.rows") return;
    const bytes = bytesOf(buffers[0]);
    const packed = new Float64Array(bytes.slice().buffer);
    const rows = { somatize: "rows", start: msg.start ?? 0, packed, errors: msg.errors ?? null };
    if (ready) frame.contentWindow?.postMessage(rows, "*");
    else rowsFromKernel.push(rows);
  });

  // The times of this view (ms since render), for docs/notebooks.md's open time: el.dataset.somatizeTimes.
  const t0 = performance.now();
  const times = { at: Math.round(t0) }; // render's own time on the notebook window's clock
  const mark = (name) => (times[name] ??= Math.round(performance.now() - t0));
  const said = () => (el.dataset.somatizeTimes = JSON.stringify(times));

  // What the kernel sends unasked for a store view (the listing, the named run's files), asked
  // for now, beside the page and the wasm: the view starts with them (no round trip to open the
  // run's verdict). Settles with the answers, or null (the view then asks for what it reads).
  let primedDone = null;
  const primed = model.get("mode") === "live" ? Promise.resolve(null) : new Promise((resolve) => {
    const got = [];
    let off = () => {};
    const timer = setTimeout(() => primedDone(null), askTimeout(model));
    primedDone = (value) => {
      clearTimeout(timer);
      off();
      if (value) times.primed = { ms: Math.round(performance.now() - t0), bytes: value.reduce((n, a) => n + (a.bytes?.length ?? 0), 0) };
      resolve(value);
    };
    off = listen((msg, buffers) => {
      if (msg?.type !== "somatize.primed") return;
      for (const ans of msg.answers ?? []) {
        const out = { ...ans };
        if (typeof ans.buffer === "number") out.bytes = bytesOf(buffers[ans.buffer]).slice();
        delete out.buffer;
        got.push(out);
      }
      if (msg.error) primedDone(null);
      else if (msg.done) primedDone(got);
    });
  });

  // The kernel went away: said at once, and no read waits for it any more.
  let gone = false;
  const onGone = () => {
    if (gone) return;
    gone = true;
    primedDone?.(null);
    status.textContent = `somatize: ${GONE}`;
    el.dataset.somatize = "gone";
    for (const [id, a] of asks) {
      clearTimeout(a.timer);
      asks.delete(id);
      frame.contentWindow?.postMessage({ somatize: "answers", id: a.frameId, error: GONE }, "*");
    }
  };
  model.on("comm_live_update", onGone);

  let ready = false;
  const onFrame = ({ data, source }) => {
    if (source !== frame.contentWindow || !data || typeof data.somatize !== "string") return;
    if (data.somatize === "wasm") {
      mark("wasmAsked");
      pageAndWasm(model, listen).wasm.then(
        (bytes) => {
          mark("wasm");
          const copy = bytes.slice();
          frame.contentWindow?.postMessage({ somatize: "wasm", gzip: copy }, "*", [copy.buffer]);
        },
        (e) => frame.contentWindow?.postMessage({ somatize: "wasm", error: e.message }, "*"),
      );
    } else if (data.somatize === "ready") {
      mark("ready");
      primed.then((answers) => {
        if (!frame.contentWindow) return;
        mark("init");
        ready = true;
        const transfer = [...new Set((answers ?? []).map((a) => a.bytes?.buffer).filter(Boolean))];
        frame.contentWindow.postMessage({
          somatize: "init", mode: model.get("mode"), store: model.get("store"), run: model.get("run") || null,
          live: model.get("live"), title: model.get("title"), smooth: model.get("smooth"), primed: gone ? null : answers,
        }, "*", gone ? [] : transfer);
        for (const r of rowsFromKernel.splice(0)) frame.contentWindow.postMessage(r, "*");
        // Everything so far (rows already had are skipped by their `start`).
        if (model.get("mode") === "live") model.send({ type: "somatize.hello" });
      });
    } else if (data.somatize === "ask") {
      if (gone) {
        frame.contentWindow?.postMessage({ somatize: "answers", id: data.id, error: GONE }, "*");
        return;
      }
      const id = nextId++;
      const timer = setTimeout(() => {
        asks.delete(id);
        frame.contentWindow?.postMessage({ somatize: "answers", id: data.id, error: "the kernel did not answer (was it restarted? run the cell again)" }, "*");
      }, askTimeout(model));
      asks.set(id, { frameId: data.id, answers: [], timer, sent: performance.now() });
      model.send({ type: "somatize.read", id, asks: data.asks });
    } else if (data.somatize === "shown") {
      mark("shown");
      said();
      if (!gone) status.textContent = "";
      el.dataset.somatize = "shown";
    } else if (data.somatize === "drawn") {
      mark("verdict");
      times.frame = data.marks;
      times.reads = data.reads;
      said();
    } else if (data.somatize === "failed") {
      status.textContent = `somatize: ${data.message}`;
      el.dataset.somatize = "failed";
    }
  };
  window.addEventListener("message", onFrame);

  const both = pageAndWasm(model, listen); // asked first: the page, then the wasm, then the store's bytes
  both.wasm.then(() => mark("wasmHere"), () => {});
  if (model.get("mode") !== "live") model.send({ type: "somatize.prime" });
  try {
    frame.srcdoc = await both.page;
    mark("page");
    el.append(frame);
    status.textContent = "somatize: starting the view…";
  } catch (e) {
    status.textContent = `somatize: ${e.message}`;
    el.dataset.somatize = "failed";
  }
  return () => {
    window.removeEventListener("message", onFrame);
    model.off("msg:custom", onCustom);
    model.off("comm_live_update", onGone);
    for (const a of asks.values()) clearTimeout(a.timer);
    primedDone?.(null);
    frame.remove();
  };
}

export default { render };
