/**
 * Random draws under vmap, through the public API. A batched key (one per example, e.g.
 * stack(random.split(key, n))) gives each example exactly the draws of its own key: the loop over
 * the keys, eagerly, staged (stage(vmap)) and with the staged function inside vmap. An unbatched
 * key (a closed-over key, a seed, a generator) gives, as in JAX, the same draws for every example:
 * one draw, not one per example (a generator advances once per call of the vmapped function).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as sc from "../../src/api/index.js";
import { dropout } from "../../src/ops/random.js";
import { Rng } from "../util/rng.js";

type F = (k: sc.Tensor) => sc.Tensor;

function bitsEqual(got: sc.Tensor, want: sc.Tensor, what: string): void {
  assert.deepEqual(got.shape, want.shape, `${what}: shape`);
  assert.equal(got.dtype, want.dtype, `${what}: dtype`);
  const a = got.dataSync(), b = want.dataSync();
  for (let i = 0; i < b.length; i++) assert.ok(Object.is(Number(a[i]), Number(b[i])), `${what}: element ${i}: ${a[i]} vs ${b[i]}`);
}

const keys = sc.stack(sc.random.split(sc.random.key(2028), 5));
const p = sc.tensor([0.1, 0.5, 0.9, 0.3], "float64");
const logits = sc.tensor([[0, 1, 2], [2, 1, -1]], "float64");
const x = new Rng(4).tensor([8], 0.5, 2);

const draws: [string, F][] = [
  ["uniform", (k) => sc.random.uniform([3], { key: k })],
  ["uniform (float64, range)", (k) => sc.random.uniform([2, 3], { key: k, minval: -2, maxval: 5, dtype: "float64" })],
  ["normal", (k) => sc.random.normal([2, 2], { key: k, mean: 1, stddev: 3 })],
  ["bernoulli", (k) => sc.random.bernoulli(p, undefined, { key: k })],
  ["bernoulli (scalar p, shape)", (k) => sc.random.bernoulli(0.4, [6], { key: k })],
  ["categorical", (k) => sc.random.categorical(logits, 4, { key: k })],
  ["dropout", (k) => dropout(x, 0.5, { key: k })[0]],
  ["split", (k) => sc.stack(sc.random.split(k, 3))],
  ["foldIn", (k) => sc.random.foldIn(k, 7)],
  ["a key split inside, then a draw of each part", (k) => {
    const [a, b] = sc.random.split(k);
    return sc.random.uniform([2], { key: a! }).add(sc.random.normal([2], { key: b! }));
  }],
];

for (const [name, f] of draws) {
  test(`vmap over a batched key: ${name} gives each example its own key's draws (eager, stage(vmap), vmap(stage))`, () => {
    const want = sc.stack(sc.unstack(keys).map((k) => f(k)));
    bitsEqual(sc.vmap(f)(keys), want, "vmap (eager)");
    bitsEqual(sc.stage(sc.vmap(f), { autograph: false })(keys) as sc.Tensor, want, "stage(vmap)");
    bitsEqual(sc.vmap(sc.stage(f, { autograph: false }))(keys), want, "vmap(stage)");
    // (the examples' draws differ: a rule that reused one key would fail here)
    const rows = sc.unstack(want).map((r) => [...r.dataSync()].join());
    if (name !== "bernoulli (scalar p, shape)" && name !== "bernoulli" && name !== "dropout") assert.equal(new Set(rows).size, rows.length, `${name}: every example's draws differ`);
  });
}

test("vmap over a batched key along axis 1 (inAxes) draws the keys of that axis", () => {
  const f: F = (k) => sc.random.normal([3], { key: k });
  const want = sc.stack(sc.unstack(keys).map(f));
  bitsEqual(sc.vmap(f, { inAxes: 1 })(sc.transpose(keys)), want, "vmap, inAxes 1");
});

test("vmap over a batched key and batched probabilities: bernoulli of each example's p with its key", () => {
  const ps = new Rng(9).tensor([5, 4], 0, 1);
  const f = (k: sc.Tensor, q: sc.Tensor) => sc.random.bernoulli(q, undefined, { key: k });
  const want = sc.stack(sc.unstack(keys).map((k, b) => f(k, sc.unstack(ps)[b]!)));
  bitsEqual(sc.vmap(f)(keys, ps), want, "vmap (eager)");
  bitsEqual(sc.stage(sc.vmap(f), { autograph: false })(keys, ps) as sc.Tensor, want, "stage(vmap)");
});

test("an unbatched key under vmap (closed over, or inAxes null) gives the same draws for every example, as in JAX", () => {
  const k = sc.random.key(5);
  const xs = new Rng(6).tensor([4, 3]);
  const one = sc.random.uniform([3], { key: k, dtype: "float64" });
  const f = (e: sc.Tensor) => e.add(sc.random.uniform([3], { key: k, dtype: "float64" }));
  const want = sc.stack(sc.unstack(xs).map((e) => e.add(one)));
  bitsEqual(sc.vmap(f)(xs), want, "closed-over key, eager");
  bitsEqual(sc.stage(sc.vmap(f), { autograph: false })(xs) as sc.Tensor, want, "closed-over key, stage(vmap)");
  const g = (e: sc.Tensor, key: sc.Tensor) => e.add(sc.random.uniform([3], { key, dtype: "float64" }));
  bitsEqual(sc.vmap(g, { inAxes: [0, null] })(xs, k), want, "key argument with inAxes null");
  // dropout of a batched x with an unbatched key: one mask for every example
  const masks = sc.vmap((e: sc.Tensor) => dropout(e, 0.5, { key: k })[1])(new Rng(7).tensor([6, 8]));
  const rows = sc.unstack(masks).map((r) => [...r.dataSync()].join());
  assert.equal(new Set(rows).size, 1, "one mask for all examples");
  bitsEqual(sc.unstack(masks)[0]!, dropout(sc.unstack(new Rng(7).tensor([6, 8]))[0]!, 0.5, { key: k })[1], "the mask of that key");
});

test("a seed or a generator under vmap: one draw for every example, and the generator advances once per call", () => {
  const xs = new Rng(8).tensor([3, 4]);
  const seeded = sc.vmap((e: sc.Tensor) => e.add(sc.random.normal([4], { seed: 12, dtype: "float64" })))(xs);
  const one = sc.random.normal([4], { seed: 12, dtype: "float64" });
  bitsEqual(seeded, sc.stack(sc.unstack(xs).map((e) => e.add(one))), "seed");
  for (const staged of [false, true]) {
    const gen = new sc.random.Generator({ seed: 3 });
    const ref = new sc.random.Generator({ seed: 3 });
    const h = (e: sc.Tensor) => e.add(sc.random.uniform([4], { generator: gen, dtype: "float64" }));
    const run = staged ? (sc.stage(sc.vmap(h), { autograph: false }) as (t: sc.Tensor) => sc.Tensor) : sc.vmap(h);
    for (let call = 0; call < 2; call++) {
      const d = sc.random.uniform([4], { generator: ref, dtype: "float64" });
      bitsEqual(run(xs), sc.stack(sc.unstack(xs).map((e) => e.add(d))), `generator, ${staged ? "staged" : "eager"}, call ${call}`);
    }
  }
});
