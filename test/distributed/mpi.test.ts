// 2-process mpirun jobs: the collective ops' values, staged and differentiated
// (test/distributed/mpi-job.mjs); in-place all-reduce (mpi-in-place-job.mjs); data-parallel fit, tensor fusion, chief-only writes
// (mpi-fit-job.mjs); skipped, saying why, without mpirun or koffi.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { createRequire } from "node:module";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
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

const mpirun = (args: string[]) =>
  spawnSync("mpirun", ["--allow-run-as-root", "--oversubscribe", "-np", "2", "node", "--import", "tsx", ...args], { cwd: root, encoding: "utf8", timeout: 60_000, env: { ...process.env, STAGECRAFT_THREADS: "1" } });

test("collectives on 2 MPI ranks: values (float32, float64, int32), staged, gradients", { skip, timeout: 60_000 }, () => {
  const r = mpirun(["test/distributed/mpi-job.mjs"]);
  assert.equal(r.status, 0, `mpirun failed:\n${r.stdout}\n${r.stderr}`);
  assert.match(r.stdout, /rank 0 ok/);
  assert.match(r.stdout, /rank 1 ok/);
});

test("in-place all-reduce on 2 MPI ranks (MPI_IN_PLACE) = the op, bit for bit; tensors' storage refused; the fused in-place bucket", { skip, timeout: 60_000 }, () => {
  const r = mpirun(["test/distributed/mpi-in-place-job.mjs"]);
  assert.equal(r.status, 0, `mpirun failed:\n${r.stdout}\n${r.stderr}`);
  assert.match(r.stdout, /rank 0 in-place ok/);
  assert.match(r.stdout, /rank 1 in-place ok/);
});

test("fit on 2 MPI ranks = one process on the combined batches; tensor fusion; chief-only writes", { skip, timeout: 60_000 }, () => {
  const dir = mkdtempSync(join(tmpdir(), "sc-mpi-fit-"));
  try {
    const r = mpirun(["test/distributed/mpi-fit-job.mjs", dir]);
    assert.equal(r.status, 0, `mpirun failed:\n${r.stdout}\n${r.stderr}`);
    assert.match(r.stdout, /rank 0 fit ok/);
    assert.match(r.stdout, /rank 1 fit ok/);
    // the chief-only callback wrote once per epoch, from rank 0 only; saveOnChief wrote one file
    const lines = readFileSync(join(dir, "epochs.log"), "utf8").trim().split("\n");
    assert.deepEqual(lines.map((l) => l.split(" loss ")[0]), ["rank 0 epoch 1", "rank 0 epoch 2"]);
    assert.deepEqual(readdirSync(dir).filter((f) => f.endsWith(".safetensors")), ["model-saved-by-rank0.safetensors"]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("examples/mnist-distributed.ts trains under mpirun -np 2 (a few steps)", { skip, timeout: 60_000 }, () => {
  const dir = mkdtempSync(join(tmpdir(), "sc-mpi-demo-"));
  try {
    const r = mpirun(["examples/mnist-distributed.ts", "--steps", "4", "--epochs", "1", "--min-accuracy", "0", "--out", dir]);
    assert.equal(r.status, 0, `mpirun failed:\n${r.stdout}\n${r.stderr}`);
    assert.match(r.stdout, /MNIST convnet on 2 rank\(s\): 4 steps per epoch, batch 32 per rank \(64 in all\)/);
    // rank 0 alone prints: one epoch line, one result line
    assert.equal(r.stdout.match(/^epoch 1\/1: loss/gm)?.length, 1, r.stdout);
    assert.equal(r.stdout.match(/test accuracy/g)?.length, 1, r.stdout);
    assert.deepEqual(readdirSync(dir), ["mnist-distributed.safetensors"]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
