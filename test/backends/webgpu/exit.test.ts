// The end of a program that used WebGPU: the worker holding the device finishes its batches and
// closes before the process exits. Terminated mid-batch at exit, it made Dawn throw into a torn-down
// JavaScript environment: "FATAL ERROR: Error::ThrowAsJavaScriptException napi_throw", an abort
// (4 of 6 runs of this program before the fix).
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync, type SpawnSyncReturns } from "node:child_process";
import { fileURLToPath } from "node:url";
import { gpuSkip } from "../../util/webgpu.js";

const fixture = (name: string) => fileURLToPath(new URL(`./fixtures/${name}`, import.meta.url));

/** Runs `program` five times: each must end by itself with `status`, never by a signal or Dawn's abort. */
function runFiveTimes(program: string, status: number, check: (r: SpawnSyncReturns<string>) => void = () => {}): void {
  for (let run = 0; run < 5; run++) {
    const r = spawnSync(process.execPath, ["--import", "tsx", program], { encoding: "utf8", timeout: 60_000 });
    assert.ok(!/FATAL ERROR/.test(r.stderr), `run ${run}: ${r.stderr.slice(-400)}`);
    assert.equal(r.signal, null, `run ${run}: killed by ${r.signal}`);
    assert.equal(r.status, status, `run ${run}: exit code ${r.status}: ${r.stderr.slice(-400)}`);
    check(r);
  }
}

test("a program ending right after posting GPU work and frees exits cleanly (5 runs)", { skip: gpuSkip }, () => {
  runFiveTimes(fixture("exit-after-frees.ts"), 0);
});

test("an uncaught exception ending a program that holds the device exits with the error, not a napi abort (5 runs)", { skip: gpuSkip }, () => {
  // (before the "exit" handler closed the device: SIGABRT with "FATAL ERROR: ... napi_throw" in 3 of 3 runs)
  runFiveTimes(fixture("exit-on-uncaught.ts"), 1, (r) => assert.match(r.stderr, /uncaught on purpose/));
});
