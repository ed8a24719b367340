// The page's script: wires the controls to the somatize package. Store contents are shown as text, never HTML.
import { specId, version } from "../pkg/browser.js";

const $ = (id) => document.getElementById(id);

function showSpecId() {
  $("spec-error").textContent = "";
  try {
    $("spec-id").textContent = specId(JSON.parse($("spec").value));
  } catch (e) {
    $("spec-id").textContent = "";
    $("spec-error").textContent = e.message;
  }
}

$("version").textContent = version();
$("spec").addEventListener("input", showSpecId);
showSpecId();
document.body.dataset.ready = "true";
