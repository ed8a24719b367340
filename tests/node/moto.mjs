// moto's S3 server on 127.0.0.1 for the Node and browser layers (stores on object storage):
// started from SOMATIZE_MOTO_SERVER (the path of `moto_server`; scripts/test.sh installs moto
// and sets it), never a remote endpoint. Without the variable the tests using it fail.
import { spawn } from "node:child_process";
import { createServer } from "node:net";

const freePort = () =>
  new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });

/** Start moto and create `bucket`. Answers {port, endpoint, env (for the CLI: endpoint and test
 * credentials, as a user sets them), url(prefix) (an s3:// store URL), request(method, path,
 * body?, headers?) (a plain unsigned request, which moto takes for bucket settings), stop()}. */
export async function startMoto(bucket = "somatize-js") {
  const server = process.env.SOMATIZE_MOTO_SERVER;
  if (!server) throw new Error("SOMATIZE_MOTO_SERVER is not set: give the path of moto's server (pip install 'moto[server]'; scripts/test.sh sets it)");
  const port = await freePort();
  const child = spawn(server, ["-H", "127.0.0.1", "-p", String(port)], { stdio: "ignore" });
  const endpoint = `http://127.0.0.1:${port}`;
  const request = (method, path, body, headers = {}) => fetch(`${endpoint}${path}`, { method, body, headers });
  const t0 = Date.now();
  for (;;) {
    try {
      if ((await request("PUT", `/${bucket}`)).ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() - t0 > 60_000) {
      child.kill();
      throw new Error(`moto_server at ${server} did not answer on port ${port}`);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  const env = {
    ...process.env,
    AWS_ENDPOINT_URL: endpoint,
    AWS_ALLOW_HTTP: "true",
    AWS_ACCESS_KEY_ID: "testing",
    AWS_SECRET_ACCESS_KEY: "testing",
    AWS_REGION: "us-east-1",
  };
  return { port, endpoint, env, request, url: (prefix) => `s3://${bucket}/${prefix}`, stop: () => child.kill() };
}
