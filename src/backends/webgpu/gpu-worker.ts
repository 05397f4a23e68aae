/**
 * The worker thread that holds the GPU device in Node (transport.ts WorkerTransport). It executes
 * each posted batch of commands in order, then submits; reads are answered by message (async) or
 * through the shared buffer the main thread blocks on (sync).
 */
import { parentPort, workerData } from "node:worker_threads";
import { openDevice, type GpuOptions } from "./gpu-api.js";
import { GpuRuntime } from "./runtime.js";
import { decodeBatch, type Command, type EncodedBatch } from "./protocol.js";
import { SYNC_DONE, SYNC_ERROR_BYTES, SYNC_FAILED, SYNC_HEADER_BYTES } from "./protocol.js";

const port = parentPort!;
const opened = await openDevice((workerData as { options: GpuOptions }).options);
if (typeof opened === "string") {
  port.postMessage({ k: "failed", reason: opened });
} else {
  const runtime = new GpuRuntime(opened.device, opened.keepAlive);

  const failShared = (shared: SharedArrayBuffer, message: string) => {
    const state = new Int32Array(shared, 0, 2);
    const bytes = new TextEncoder().encode(message).slice(0, SYNC_ERROR_BYTES);
    new Uint8Array(shared, SYNC_HEADER_BYTES, bytes.length).set(bytes);
    state[1] = bytes.length;
    Atomics.store(state, 0, SYNC_FAILED);
    Atomics.notify(state, 0);
  };

  /** Sends a command's answer: into the shared buffer a synchronous read waits on, or by message. */
  const answer = (c: Extract<Command, { k: "read" | "finish" | "stats" }>, work: Promise<unknown>) => {
    work.then(
      (result) => {
        if (c.k === "read" && c.shared) {
          const state = new Int32Array(c.shared, 0, 2);
          new Uint8Array(c.shared, SYNC_HEADER_BYTES, (result as ArrayBuffer).byteLength).set(new Uint8Array(result as ArrayBuffer));
          Atomics.store(state, 0, SYNC_DONE);
          Atomics.notify(state, 0);
        } else if (c.k === "read") port.postMessage({ k: "data", ticket: c.ticket, data: result }, [result as ArrayBuffer]);
        else port.postMessage({ k: c.k, ticket: c.ticket, stats: result });
      },
      (e: Error) => {
        if (c.k === "read" && c.shared) failShared(c.shared, e.message);
        else port.postMessage({ k: "error", ticket: c.ticket, message: e.message });
      },
    );
  };

  port.on("message", (m: { k: "batch"; batch: EncodedBatch } | { k: "close"; closed?: SharedArrayBuffer }) => {
    if (m.k === "close") {
      // the program's work is done (transport.ts closeAtExit): finish, destroy the device, end
      // this thread before the process exits, so nothing of Dawn's runs while Node tears down
      runtime.finish().catch(() => undefined).finally(() => {
        try {
          runtime.destroy();
        } finally {
          // (the main thread may be blocked in its "exit" handler, waiting for this)
          if (m.closed) {
            const closed = new Int32Array(m.closed);
            Atomics.store(closed, 0, 1);
            Atomics.notify(closed, 0);
          }
          process.exit(0);
        }
      });
      return;
    }
    decodeBatch(m.batch, (c) => {
      const work = runtime.submit(c);
      if (c.k === "read" || c.k === "finish" || c.k === "stats") answer(c, work ?? Promise.resolve(undefined));
    });
    runtime.flush();
  });
  port.postMessage({ k: "ready", description: { adapterInfo: opened.adapterInfo, limits: opened.limits, features: opened.features } });
}
