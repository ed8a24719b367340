// The kernel connection VS Code's Jupyter extension builds in a notebook's webview for its
// ipywidgets renderer (@jupyterlab/services), bundled into one module by
// tests/browser/vscode-widget.test.mjs.
export { KernelConnection } from "@jupyterlab/services/lib/kernel/default.js";
export { ServerConnection } from "@jupyterlab/services/lib/serverconnection.js";
