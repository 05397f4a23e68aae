// Reuse of a disposed tensor's large storage (core/storage-pool.ts): a matrix product's output of
// 16 MB and more goes back to a pool when every tensor on it is disposed and no array of it was
// handed out, and the next product of that size writes into it. What must never happen: anyone
// who can still read the old storage (a dataSync array, a reshape or slice of the tensor, a
// variable given its value, a staged function that captured it) seeing the new product's values.
import { test } from "node:test";
import assert from "node:assert/strict";
import * as sc from "../../src/api/index.js";
import { clearStoragePool, storagePoolStats } from "../../src/core/storage-pool.js";
import { Tensor } from "../../src/core/tensor.js";

const M = 2048, N = 4096; // an outer product [M, 1] x [1, N]: 32 MB of float32
const col = (seed: number) => sc.tensor(Array.from({ length: M }, (_, i) => Math.sin(seed + i)), "float32", [M, 1]);
const row = (seed: number) => sc.tensor(Array.from({ length: N }, (_, i) => Math.cos(seed + i)), "float32", [1, N]);
/** The product of seed `s`, element (i, j), as float32. */
const want = (s: number, i: number, j: number) => Math.fround(Math.fround(Math.sin(s + i)) * Math.fround(Math.cos(s + j)));
/** Checks a few elements of `t` (read through an op, which hands out no array: no escape) against seed `s`. */
function checkSampled(t: sc.Tensor, s: number, what: string): void {
  for (const [i, j] of [[0, 0], [1, 7], [M - 1, N - 1], [977, 3001]] as const) {
    const got = sc.slice(t.reshape([M, N]), [i, j], [i + 1, j + 1]).item();
    assert.equal(got, want(s, i, j), `${what}: element (${i}, ${j})`);
  }
}
const product = (s: number) => sc.matmul(col(s), row(s));

test("storage pool: a disposed product's storage serves the next product of its size", () => {
  clearStoragePool();
  const before = storagePoolStats();
  const p = product(1);
  checkSampled(p, 1, "first product");
  p.dispose();
  assert.equal(storagePoolStats().released - before.released, 1, "the disposed product's storage was given back");
  const q = product(2);
  assert.equal(storagePoolStats().reused - before.reused, 1, "the next product of that size took it");
  checkSampled(q, 2, "the product written into reused storage");
  assert.equal(storagePoolStats().freeBuffers, 0);
});

test("storage pool: a disposed product is an error to read, never the values of what reuses it", () => {
  clearStoragePool();
  const p = product(3);
  p.dispose();
  product(4);
  assert.throws(() => p.dataSync(), (e: unknown) => e instanceof sc.ValueError && /disposed/.test((e as Error).message));
  assert.throws(() => sc.add(p, 1), /disposed/);
  assert.match(String(p), /disposed/);
  p.dispose(); // (twice: nothing more happens)
});

test("storage pool: an array dataSync handed out before dispose keeps its values", async () => {
  clearStoragePool();
  const before = storagePoolStats();
  const p = product(5);
  const seen = p.dataSync();
  const e = product(6);
  const seenAsync = await e.data();
  p.dispose();
  e.dispose();
  assert.equal(storagePoolStats().released - before.released, 0, "storage handed out is never pooled");
  const q = product(7), r = product(8);
  checkSampled(q, 7, "a later product");
  checkSampled(r, 8, "a later product");
  assert.equal(seen[977 * N + 3001], want(5, 977, 3001));
  assert.equal(seen[0], want(5, 0, 0));
  assert.equal(seenAsync[(M - 1) * N + N - 1], want(6, M - 1, N - 1));
  // (and the tensors themselves stay readable: their storage is never reused)
  checkSampled(p, 5, "a disposed product whose array was handed out");
});

test("storage pool: a reshape or slice of a disposed product keeps the storage until it is disposed too", () => {
  clearStoragePool();
  const before = storagePoolStats();
  const p = product(9);
  const flat = p.reshape([M * N]);
  const rows = sc.slice(p, [1000, 0], [1008, N]);
  p.dispose();
  const q = product(10);
  checkSampled(q, 10, "a product made while views of the disposed one live");
  // (the views read what the disposed tensor held)
  assert.equal(sc.slice(flat, [977 * N + 3001], [977 * N + 3002]).item(), want(9, 977, 3001));
  assert.equal(sc.slice(rows, [3, 5], [4, 6]).item(), want(9, 1003, 5));
  flat.dispose();
  rows.dispose();
  assert.equal(storagePoolStats().released - before.released, 1, "given back once the reshape is disposed too");
  product(12);
  assert.equal(sc.slice(rows, [3, 5], [4, 6]).item(), want(9, 1003, 5));
});

test("storage pool: a tensor on part of a product's storage keeps it from reuse", () => {
  // (eager slices copy; executors and kernels may hand out views of part of an array)
  clearStoragePool();
  const before = storagePoolStats();
  for (const [at, len] of [[0, 1], [0, 16], [3, 1], [N, N], [M * N - 4, 4]] as const) {
    const p = product(23);
    const part = new Tensor(p._store!.subarray(at, at + len), [len], "float32");
    p.dispose();
    product(24);
    assert.equal(part.dataSync()[0], want(23, Math.floor(at / N), at % N), `view of ${len} at ${at}`);
    part.dispose();
  }
  assert.equal(storagePoolStats().released - before.released, 0);
});

test("storage pool: one element sliced from a product still reads it after the product is disposed", () => {
  clearStoragePool();
  for (const [begin, end] of [[[0, 0], [1, 1]], [[0, 0], [1, 4]], [[5, 9], [6, 10]]] as const) {
    const p = product(20);
    const e = sc.slice(p, begin, end);
    const e0 = sc.slice(p.reshape([M * N]), [0], [1]);
    p.dispose();
    product(21);
    product(22);
    assert.equal(e.reshape([-1]).arraySync()[0], want(20, begin[0], begin[1]), `slice from (${begin})`);
    assert.equal(e0.item(), want(20, 0, 0));
  }
});

test("storage pool: a variable given a product's value keeps it after the product is disposed", () => {
  clearStoragePool();
  const p = product(11);
  const v = sc.variable(p);
  const w = sc.variable(sc.zeros([M, N]));
  w.assign(p);
  p.dispose();
  product(12);
  product(13);
  checkSampled(v, 11, "variable made from a disposed product");
  checkSampled(w, 11, "variable assigned a disposed product");
});

test("storage pool: a staged function that captured a product never reads what reuses its storage", () => {
  clearStoragePool();
  const p = product(14);
  const f = sc.stage((x: sc.Tensor) => sc.slice(x.add(p), [977, 3001], [978, 3002]), { autograph: false });
  assert.equal(f(sc.zeros([M, N])).item(), want(14, 977, 3001));
  p.dispose();
  product(15);
  let got: number | undefined;
  try {
    got = f(sc.zeros([M, N])).item() as number;
  } catch (e) {
    assert.match((e as Error).message, /disposed/);
  }
  if (got !== undefined) assert.equal(got, want(14, 977, 3001));
});

test("storage pool: staged per-example gradients are the same in reused storage", () => {
  // the issue's case, smaller: vmap(grad) of an MLP's per-example loss, w1's gradient 32 x 784 x 256 (25.7 MB)
  clearStoragePool();
  const before = storagePoolStats();
  const IN = 784, H = 256, B = 32;
  const vals = (n: number, s: number) => Array.from({ length: n }, (_, i) => Math.sin(s * 7919 + i * 12.9898) * 0.1);
  const params = { w1: sc.tensor(vals(IN * H, 1), "float32", [IN, H]), w2: sc.tensor(vals(H * 10, 2), "float32", [H, 10]) };
  const loss = (p: typeof params, x: sc.Tensor, y: sc.Tensor) =>
    sc.mean(sc.logSoftmax(sc.matmul(sc.tanh(sc.matmul(x.reshape([1, IN]), p.w1)), p.w2), -1).mul(y.reshape([1, 10])).sum(-1).neg());
  const vg = sc.stage(sc.vmap(sc.grad(loss) as (p: typeof params, x: sc.Tensor, y: sc.Tensor) => typeof params, { inAxes: [null, 0, 0] }), { autograph: false });
  const xs = (s: number) => sc.tensor(vals(B * IN, s), "float32", [B, IN]);
  const ys = sc.oneHot(sc.tensor(Array.from({ length: B }, (_, i) => i % 10), "int32"), 10).cast("float32");
  // the reference: each call's w1 gradient read out (so never pooled)
  const ref = [3, 4].map((s) => vg(params, xs(s), ys).w1.dataSync());
  // then the same calls whose results are disposed, each writing into the last one's storage
  for (let round = 0; round < 2; round++) {
    for (const [k, s] of [3, 4].entries()) {
      const g = vg(params, xs(s), ys);
      const got = sc.reshape(g.w1, [B * IN * H]);
      for (const i of [0, 1, 12345, 200000, B * IN * H - 1]) assert.equal(sc.slice(got, [i], [i + 1]).item(), ref[k]![i], `call ${s}, round ${round}, element ${i}`);
      got.dispose();
      g.w1.dispose();
      g.w2.dispose();
    }
  }
  assert.ok(storagePoolStats().reused - before.reused >= 3, `per-example gradients reused storage (${storagePoolStats().reused - before.reused} times)`);
});

test("storage pool: host tensors not made by a product are left as they are by dispose", () => {
  const t = sc.tensor(new Float32Array(5 << 20).fill(2), "float32", [5 << 20]); // 20 MB, the caller's array
  t.dispose();
  assert.equal(t.dataSync()[7], 2);
  const small = product(16).sum();
  small.dispose();
  assert.equal(typeof small.item(), "number");
});
