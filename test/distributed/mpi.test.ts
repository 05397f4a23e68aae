// A 2-process mpirun job checking the collective ops' values, staged and differentiated
// (test/distributed/mpi-job.mjs); skipped, saying why, without mpirun or koffi.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("../..", import.meta.url));
function skipReason(): string | false {
  if (spawnSync("mpirun", ["--version"]).status !== 0) return "mpirun is not installed (apt-get install openmpi-bin)";
  try {
    createRequire(import.meta.url)("koffi");
  } catch {
    return "koffi is not installed (npm install koffi)";
  }
  return false;
}
const skip = skipReason();

test("collectives on 2 MPI ranks: values, staged, gradients", { skip, timeout: 60_000 }, () => {
  const r = spawnSync("mpirun", ["--allow-run-as-root", "--oversubscribe", "-np", "2", "node", "--import", "tsx", "test/distributed/mpi-job.mjs"], { cwd: root, encoding: "utf8", timeout: 60_000, env: { ...process.env, STAGECRAFT_THREADS: "1" } });
  assert.equal(r.status, 0, `mpirun failed:\n${r.stdout}\n${r.stderr}`);
  assert.match(r.stdout, /rank 0 ok/);
  assert.match(r.stdout, /rank 1 ok/);
});
