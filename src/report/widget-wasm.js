// The notebook widget's first script (a classic one, run as the page is parsed): ask the
// widget's module in the parent window for the wasm core at once and compile it off the main
// thread as it comes; the package entry (widget-entry.js) takes the compiled module. The parent
// sends the wasm gzipped (as the kernel sent it): it is inflated into WebAssembly.compileStreaming,
// which compiles while the bytes arrive.
window.somatizeWasm = new Promise((resolve, reject) => {
  addEventListener("message", function take({ data, source }) {
    if (source !== parent || !data || data.somatize !== "wasm") return;
    removeEventListener("message", take);
    if (data.error) reject(new Error(data.error));
    else {
      const inflated = new Blob([data.gzip]).stream().pipeThrough(new DecompressionStream("gzip"));
      resolve(WebAssembly.compileStreaming(new Response(inflated, { headers: { "content-type": "application/wasm" } })));
    }
  });
  parent.postMessage({ somatize: "wasm" }, "*");
});
