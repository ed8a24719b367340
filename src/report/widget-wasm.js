// The notebook widget's first script (a classic one, run as the page is parsed, before plotly):
// ask the widget's module in the parent window for the wasm core's bytes at once and compile
// them while plotly runs; the package entry (widget-entry.js) takes the compiled module.
window.somatizeWasm = new Promise((resolve, reject) => {
  addEventListener("message", function take({ data, source }) {
    if (source !== parent || !data || data.somatize !== "wasm") return;
    removeEventListener("message", take);
    if (data.error) reject(new Error(data.error));
    else resolve(WebAssembly.compile(data.bytes));
  });
  parent.postMessage({ somatize: "wasm" }, "*");
});
