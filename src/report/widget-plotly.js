// The notebook widget's plotly.js, loaded off the HTML parse: the page holds its text in a
// `<script type="text/plain" id="somatize-plotly">` (tokenized, not run), and this script runs it
// from a blob: URL, an external script Chromium compiles on a background thread while the frame
// parses on, evaluates its modules and takes the wasm; inline, plotly was parsed and compiled on
// the frame's main thread before anything else could run (docs/notebooks.md, "Measured"). Its
// integrity is the hash the page's Content-Security-Policy allows. www/figure.js's `plotly()`
// waits for `somatizePlotly` before a figure is drawn.
window.somatizePlotly = new Promise((resolve, reject) => {
  const text = document.getElementById("somatize-plotly");
  const s = document.createElement("script");
  const url = URL.createObjectURL(new Blob([text.textContent], { type: "text/javascript" }));
  s.src = url;
  s.integrity = text.dataset.integrity;
  s.onload = () => {
    URL.revokeObjectURL(url);
    performance.mark("somatize:plotly");
    if (globalThis.Plotly) resolve(globalThis.Plotly);
    else reject(new Error("plotly.js did not define Plotly"));
  };
  s.onerror = () => reject(new Error("plotly.js did not load (the widget's page: its integrity or the policy refused it)"));
  text.remove(); // its text is in the blob now
  document.head.append(s);
});
window.somatizePlotly.catch(() => {}); // said where a figure is drawn
