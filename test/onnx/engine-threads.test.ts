// STAGECRAFT_THREADS covers the engine's sessions as it covers our kernels: a session of the
// onnxruntime engine (and so of the auto plan's segments) gets that many intra-op threads, i.e.
// that many minus one pool threads beside the caller's. Counted as the threads a new session adds
// to the process (Linux's /proc/self/task), in child processes with the setting at 1 and 3.
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { spawnSync } from "node:child_process";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const script = `
  import { readdirSync } from "node:fs";
  import * as sc from "./src/api/index.js";
  const threads = () => readdirSync("/proc/self/task").length;
  const a = sc.ones([64, 64]);
  // a first session loads the runtime (its own threads are not the session's)
  sc.stage((a) => sc.exp(sc.matmul(a, a)), { engine: "onnxruntime" })(a);
  const before = threads();
  sc.stage((a, b) => sc.tanh(sc.matmul(a, b)), { engine: "onnxruntime" })(a, a);
  console.log(threads() - before);
`;

for (const [setting, poolThreads] of [["1", 0], ["3", 2]] as const) {
  test(`STAGECRAFT_THREADS=${setting}: an engine session adds ${poolThreads} pool thread(s)`, { skip: existsSync("/proc/self/task") ? false : "no /proc/self/task to count threads" }, () => {
    const r = spawnSync(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], {
      cwd: root, timeout: 60_000, encoding: "utf8", env: { ...process.env, STAGECRAFT_THREADS: setting },
    });
    assert.equal(r.status, 0, r.stderr);
    assert.equal(Number(r.stdout.trim()), poolThreads);
  });
}
