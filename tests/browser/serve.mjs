// Run the harness's static server in its own process (for Node tests whose reads block their thread):
// prints the origin on its first line of output, serves until killed.
import { serve } from "./harness.mjs";

const { origin } = await serve();
console.log(origin);
