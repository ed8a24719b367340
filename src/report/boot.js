// The report's boot module: the page opens the snapshot embedded in this file, named by its run.
import { openEmbedded } from "somatize/www/app.js";
import { embedded } from "somatize/pkg/report.js";

const report = embedded();
document.title = `somatize report: ${report.run}`;
await openEmbedded(report.snapshot, report.store);
document.body.dataset.report = "ready";
