import { test } from "node:test";
import assert from "node:assert/strict";
import * as sc from "../src/api/index.js";

function moments(t: sc.Tensor): [number, number] {
  const d = t.dataSync();
  let m = 0;
  for (const v of d) m += v;
  m /= d.length;
  let v2 = 0;
  for (const v of d) v2 += (v - m) ** 2;
  return [m, v2 / d.length];
}

test("draws are reproducible from a seed or key and differ across keys", () => {
  assert.deepEqual(sc.random.normal([5], { seed: 7 }).arraySync(), sc.random.normal([5], { seed: 7 }).arraySync());
  const k = sc.random.key(42);
  const [k1, k2] = sc.random.split(k);
  assert.deepEqual(sc.random.uniform([4], { key: k1 }).arraySync(), sc.random.uniform([4], { key: k1 }).arraySync());
  assert.notDeepEqual(sc.random.uniform([4], { key: k1 }).arraySync(), sc.random.uniform([4], { key: k2 }).arraySync());
  sc.random.setSeed(3);
  const a = sc.random.uniform([3]).arraySync();
  const b = sc.random.uniform([3]).arraySync();
  sc.random.setSeed(3);
  assert.deepEqual(sc.random.uniform([3]).arraySync(), a);
  assert.deepEqual(sc.random.uniform([3]).arraySync(), b);
  assert.notDeepEqual(a, b);
});

test("distributions have the right moments and ranges", () => {
  const u = sc.random.uniform([50000], { seed: 1, minval: -2, maxval: 2 });
  const [mu, vu] = moments(u);
  assert.ok(Math.abs(mu) < 0.03 && Math.abs(vu - 16 / 12) < 0.03, `uniform ${mu} ${vu}`);
  assert.ok(u.dataSync().every((v) => v >= -2 && v < 2));
  const [mn, vn] = moments(sc.random.normal([50000], { seed: 2, mean: 3, stddev: 2, dtype: "float64" }));
  assert.ok(Math.abs(mn - 3) < 0.05 && Math.abs(vn - 4) < 0.1, `normal ${mn} ${vn}`);
  const [mb] = moments(sc.cast(sc.random.bernoulli(0.3, [50000], { seed: 3 }), "float32"));
  assert.ok(Math.abs(mb - 0.3) < 0.01, `bernoulli ${mb}`);
  const logits = sc.log(sc.tensor([[0.2, 0.8], [0.9, 0.1]]));
  const samples = sc.random.categorical(logits, 20000, { seed: 4 });
  assert.deepEqual(samples.shape, [2, 20000]);
  const rows = samples.arraySync() as number[][];
  const p1 = rows.map((r) => r.reduce((s, v) => s + v, 0) / r.length);
  assert.ok(Math.abs(p1[0]! - 0.8) < 0.02 && Math.abs(p1[1]! - 0.1) < 0.02, `categorical ${p1}`);
});
