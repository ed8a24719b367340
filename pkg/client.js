// The page's (or Node's main thread's) side of the package's store worker: calls posted by id,
// answers and errors matched back, and stores that outlive a trap of the worker's wasm. Shared
// by browser.js (a Web Worker running worker.js) and node.js (a worker_threads Worker running
// store-worker-node.js); each entry gives the way to start its worker.
import { errorFrom } from "./errors.js";

/**
 * The one worker of this page or process, started on first use; answers arrive by id.
 *
 * `spawn({message(data), error(text)})` starts a worker and returns {post(message),
 * terminate(), busy(waiting)}: `busy` says whether calls are waiting (Node keeps the process
 * alive only then).
 *
 * A trap of the wasm (a Rust panic is an `unreachable`, an allocation it cannot make, a stack
 * overflow) leaves its instance unusable: the worker answers that call with `fatal` and is
 * replaced by a fresh one. The failing call rejects with the trap's message; calls that were
 * waiting are sent again to the new worker once; stores are reopened there on their next call.
 */
export class WorkerClient {
  #spawn;
  #worker;
  #pending = new Map(); // id -> {resolve, reject, method, args, retried}
  #next = 1;
  /** How many workers were started (a store opened in an earlier one is reopened). */
  generation = 0;

  constructor(spawn) {
    this.#spawn = spawn;
    this.#start();
  }

  #start() {
    this.generation += 1;
    let answered = false;
    const worker = this.#spawn({
      message: (data) => {
        if (worker !== this.#worker) return; // a replaced worker's late answer: asked again of the new one
        answered = true;
        const p = this.#pending.get(data.id);
        if (!p) return;
        this.#pending.delete(data.id);
        this.#idle();
        if (data.error) {
          p.reject(errorFrom(data.error));
          if (data.error.fatal) this.#restart();
        } else p.resolve(data.result);
      },
      error: (text) => {
        if (worker !== this.#worker) return;
        const e = new Error(`the somatize worker failed: ${text ?? "it could not start"}`);
        for (const p of this.#pending.values()) p.reject(e);
        this.#pending.clear();
        this.#idle();
        // One that worked and then failed is replaced; one that could not start is not retried
        // (its next call fails again, saying why).
        if (answered) this.#restart();
      },
    });
    this.#worker = worker;
  }

  #idle() {
    if (this.#pending.size === 0) this.#worker.busy(false);
  }

  /** Replace a worker whose wasm trapped; what was waiting is asked again of the new one. */
  #restart() {
    this.#worker.terminate();
    const waiting = [...this.#pending.entries()];
    this.#pending.clear();
    this.#start();
    for (const [id, p] of waiting) {
      if (p.retried || STORE_METHODS.has(p.method)) {
        // A store call names a handle of the dead worker: its Opened opens it again and asks again.
        p.reject(Object.assign(new Error("the somatize worker was restarted"), { restarted: true }));
        continue;
      }
      p.retried = true;
      this.#pending.set(id, p);
      this.#worker.post({ id, method: p.method, args: p.args });
    }
    this.#worker.busy(this.#pending.size > 0);
  }

  /** Post {id, method, args}; resolve with its result, reject with the error the worker sent
   * (a SomatizeError where the core gave a code). */
  post(method, ...args) {
    const id = this.#next++;
    return new Promise((resolve, reject) => {
      this.#pending.set(id, { resolve, reject, method, args, retried: false });
      this.#worker.busy(true);
      this.#worker.post({ id, method, args });
    });
  }
}

/** Methods about one store's handle: after a restart the store is opened again before them. */
const STORE_METHODS = new Set(["open", "call", "stats", "refresh", "close"]);

/**
 * A store open in the worker, by what it was opened from: after the worker was restarted it is
 * opened again (same source, same options) on its next call, so a Store outlives a trap.
 */
export class Opened {
  #client;
  #source;
  #options;
  #handle = null; // {generation, id: Promise of the handle} in the worker of that generation
  closed = false;

  constructor(client, source, options) {
    this.#client = client;
    this.#source = source;
    this.#options = options;
  }

  /** The handle in the current worker, opening the store there if it is not open yet. */
  async handle() {
    for (;;) {
      if (this.closed) throw new Error("the store is closed");
      const generation = this.#client.generation;
      if (this.#handle?.generation !== generation) {
        const id = this.#client.post("open", this.#source, this.#options).then((r) => r.handle);
        const h = { generation, id };
        this.#handle = h;
        id.catch(() => {
          if (this.#handle === h) this.#handle = null;
        });
      }
      try {
        return await this.#handle.id;
      } catch (e) {
        if (!e.restarted) throw e; // the open itself failed; a restart meanwhile opens again
      }
    }
  }

  /** Post `method` on this store; a store call caught by a restart is asked again once. */
  async post(method, ...args) {
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.#client.post(method, await this.handle(), ...args);
      } catch (e) {
        if (!e.restarted || attempt > 0) throw e;
      }
    }
  }

  /** What a `Store` calls: this store's calls, numbers, freshness check and close, in the worker. */
  backend() {
    return {
      call: (name, opts) => this.post("call", name, opts),
      stats: () => this.post("stats"),
      refresh: () => this.post("refresh"),
      close: () => this.close(),
    };
  }

  async close() {
    if (this.closed) return;
    this.closed = true;
    const h = this.#handle;
    this.#handle = null;
    const id = await h?.id.catch(() => null);
    if (id != null && h.generation === this.#client.generation) await this.#client.post("close", id).catch(() => {});
  }
}
