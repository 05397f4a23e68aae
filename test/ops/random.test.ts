import { test } from "node:test";
import assert from "node:assert/strict";
import * as sc from "../../src/api/index.js";
import { dropout } from "../../src/ops/random.js";

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

// ---- staged draws: fresh per call, one stream with eager; keys as tensor arguments ----------

const arr = (t: sc.Tensor) => Array.from(t.dataSync());

test("a staged sampler draws fresh noise on every call, the same sequence as eager draws from the same seed", () => {
  const sampler = sc.stage((x: sc.Tensor) => x.add(sc.random.normal([4])), { autograph: false });
  sc.random.setSeed(11);
  const eager = [0, 1, 2, 3].map(() => arr(sc.random.normal([4])));
  sc.random.setSeed(11);
  // (first call interpreted, later ones compiled; the draw is the function's last op)
  const staged = [0, 1, 2, 3].map(() => arr(sampler(sc.zeros([4]))));
  assert.deepEqual(staged, eager);
  assert.notDeepEqual(staged[0], staged[1]);
  // eager and staged draws continue one stream
  sc.random.setSeed(11);
  const mixed = [arr(sc.random.normal([4])), arr(sampler(sc.zeros([4]))), arr(sc.random.normal([4])), arr(sampler(sc.zeros([4])))];
  assert.deepEqual(mixed, eager);
  assert.equal(sampler.traceCount, 1);
  // every draw function, un-keyed, staged
  const all = sc.stage(
    (p: sc.Tensor, l: sc.Tensor) => [sc.random.uniform([3]), sc.random.normal([2], { dtype: "float64" }), sc.random.bernoulli(p), sc.random.categorical(l, 3)],
    { autograph: false },
  );
  const p = sc.tensor([0.2, 0.5, 0.9]);
  const l = sc.tensor([[0, 1, 2]]);
  sc.random.setSeed(5);
  const e1 = [sc.random.uniform([3]), sc.random.normal([2], { dtype: "float64" }), sc.random.bernoulli(p), sc.random.categorical(l, 3)].map(arr);
  const e2 = [sc.random.uniform([3]), sc.random.normal([2], { dtype: "float64" }), sc.random.bernoulli(p), sc.random.categorical(l, 3)].map(arr);
  sc.random.setSeed(5);
  assert.deepEqual(all(p, l).map(arr), e1);
  assert.deepEqual(all(p, l).map(arr), e2);
});

test("a Generator keeps its state in a variable: staged and eager draws continue its stream; seeds and keys restart it", () => {
  const g = sc.random.Generator.fromSeed(3);
  const draw = sc.stage(() => g.normal([3]), { autograph: false });
  const seq = [arr(draw()), arr(g.normal([3])), arr(draw()), arr(draw())];
  const h = sc.random.Generator.fromSeed(3);
  assert.deepEqual(seq, [0, 1, 2, 3].map(() => arr(h.normal([3]))));
  assert.deepEqual(arr(g.state), arr(h.state));
  assert.deepEqual(arr(g.state).slice(2), [4, 0], "the counter advanced once per draw");
  // a generator from key K hands out split(K, n)'s keys in order
  const k = sc.random.key(9);
  const fromKey = sc.random.Generator.fromKey(k);
  assert.deepEqual([0, 1, 2].map(() => arr(fromKey.nextKey())), sc.random.split(k, 3).map(arr));
  // reset restarts the stream, staged as eagerly
  const restart = sc.stage(() => {
    g.reset(3);
    return g.uniform([2]);
  }, { autograph: false });
  assert.deepEqual(arr(restart()), arr(sc.random.Generator.fromSeed(3).uniform([2])));
  assert.deepEqual(arr(restart()), arr(restart()));
  // split generators are independent streams
  const [a, b] = sc.random.Generator.fromSeed(1).split(2);
  assert.notDeepEqual(arr(a!.uniform([4])), arr(b!.uniform([4])));
  // a seed (or a key) for one draw gives the same numbers every call: asked for, not frozen by accident
  const seeded = sc.stage(() => sc.random.uniform([2], { seed: 4 }), { autograph: false });
  assert.deepEqual(arr(seeded()), arr(seeded()));
  assert.deepEqual(arr(seeded()), arr(sc.random.uniform([2], { seed: 4 })));
});

test("a key passed to a staged function as a tensor does not retrace; split and foldIn work on symbolic keys", () => {
  const sample = sc.stage((key: sc.Tensor, step: sc.Tensor) => {
    const [a, b] = sc.random.split(key);
    return [sc.random.uniform([3], { key: a }), sc.random.normal([2], { key: sc.random.foldIn(b!, step) })];
  }, { autograph: false });
  let key = sc.random.key(0);
  for (let step = 0; step < 5; step++) {
    const [k1, k2] = sc.random.split(key);
    const got = sample(k1!, sc.scalar(step, "int32")).map(arr);
    const [a, b] = sc.random.split(k1!);
    assert.deepEqual(got, [arr(sc.random.uniform([3], { key: a })), arr(sc.random.normal([2], { key: sc.random.foldIn(b!, step) }))]);
    key = k2!;
  }
  assert.equal(sample.traceCount, 1);
  // a seed held in a tensor gives the key of that number
  const fromSeed = sc.stage((s: sc.Tensor) => sc.random.key(s), { autograph: false });
  for (const s of [0, 7, -3, 2 ** 31 - 1]) assert.deepEqual(arr(fromSeed(sc.scalar(s, "int32"))), arr(sc.random.key(s)));
  assert.deepEqual(arr(sc.random.key(sc.scalar(2 ** 40, "int64"))), arr(sc.random.key(2 ** 40)));
  assert.equal(fromSeed.traceCount, 1);
  // keys are int32[2] tensors; split keys differ from each other and from foldIn's
  const k = sc.random.key(1);
  assert.equal(k.dtype, "int32");
  assert.deepEqual(k.shape, [2]);
  const keys = [...sc.random.split(k, 3), sc.random.foldIn(k, 0), sc.random.foldIn(k, 1)].map((t) => arr(t).join(","));
  assert.equal(new Set(keys).size, 5);
});

test("staged draws inside a loop body are fresh per iteration and match the eager loop", () => {
  const loop = (x: sc.Tensor) => sc.whileLoop((i) => sc.less(i, 3), (i, acc) => [i.add(1), acc!.add(sc.random.normal([2]))], [sc.scalar(0, "int32"), x])[1]!;
  sc.random.setSeed(8);
  const eager = arr(loop(sc.zeros([2])));
  sc.random.setSeed(8);
  const [n0, n1, n2] = [0, 1, 2].map(() => sc.random.normal([2]));
  assert.deepEqual(eager, arr(sc.zeros([2]).add(n0!).add(n1!).add(n2!)), "the eager loop draws once per iteration");
  const staged = sc.stage(loop, { autograph: false });
  sc.random.setSeed(8);
  assert.deepEqual(arr(staged(sc.zeros([2]))), eager);
  assert.notDeepEqual(arr(staged(sc.zeros([2]))), eager, "the next call continues the stream");
});
/** valueAndGrad of a staged function that draws: the gradient is the noise of that call, drawn once per call. */
function checkNoiseGradient(how: string, vg: (x: sc.Tensor) => unknown): void {
  const x = sc.tensor([1, 2, 3], "float64");
  sc.random.setSeed(2);
  const noise = [arr(sc.random.normal([3], { dtype: "float64" })), arr(sc.random.normal([3], { dtype: "float64" }))];
  sc.random.setSeed(2);
  for (let call = 0; call < 2; call++) {
    const [v, g] = vg(x) as [sc.Tensor, sc.Tensor];
    assert.deepEqual(arr(g), noise[call], `${how}: the gradient is the noise of call ${call}`);
    assert.ok(Math.abs((v.arraySync() as number) - (noise[call]![0]! + 2 * noise[call]![1]! + 3 * noise[call]![2]!)) < 1e-12, `${how}: value`);
  }
  assert.deepEqual(arr(sc.random.normal([3], { dtype: "float64" })), arr(sc.random.normal([3], { dtype: "float64", key: nthGlobalKey(2, 2) })), `${how}: one draw per call`);
}

const noisySum = () => sc.stage((x: sc.Tensor) => sc.sum(x.mul(sc.random.normal([3], { dtype: "float64" }))), { autograph: false });

test("the gradient of a staged function that draws (graph AD of the call) uses the noise of that call, drawn once", () => {
  checkNoiseGradient("valueAndGrad", sc.valueAndGrad(noisySum()));
  const f = noisySum();
  checkNoiseGradient("GradientTape", (x) => {
    const tape = new sc.GradientTape();
    tape.watch(x);
    const y = tape.record(() => f(x));
    return [y, tape.gradient(y, x)];
  });
});

test("a staged gradient of a staged function that draws uses the noise of that call", () => {
  checkNoiseGradient("staged valueAndGrad", sc.stage(sc.valueAndGrad(noisySum()), { autograph: false }));
});

/** The key the global generator hands out n-th after setSeed(seed). */
function nthGlobalKey(seed: number, n: number): sc.Tensor {
  return sc.random.split(sc.random.key(seed), n + 1)[n]!;
}

test("keys are checked: dtype, shape, one source of randomness per draw", () => {
  assert.throws(() => sc.random.uniform([2], { key: sc.tensor([1, 2]) }), (e: Error) => e instanceof sc.DtypeError && /key must be an int32 tensor of shape \[2\]/.test(e.message));
  assert.throws(() => sc.random.uniform([2], { key: sc.tensor([1, 2, 3], "int32") }), (e: Error) => e instanceof sc.ShapeError && /got shape \[3\]/.test(e.message));
  assert.throws(() => sc.random.normal([2], { key: { k0: 1, k1: 2 } as any }), (e: Error) => e instanceof sc.ValueError && /key tensor/.test(e.message));
  assert.throws(() => sc.random.normal([2], { key: sc.random.key(1), seed: 1 }), (e: Error) => e instanceof sc.ValueError && /at most one of key, seed and generator/.test(e.message));
  assert.throws(() => sc.random.split(sc.random.key(1), 0), sc.ValueError);
  assert.throws(() => sc.random.foldIn(sc.random.key(1), 1.5), sc.ValueError);
  assert.throws(() => sc.random.normal([2], { sed: 1 } as any), (e: Error) => e instanceof sc.ValueError && /did you mean "seed"/.test(e.message));
});

test("draws in the branches of a staged cond advance the stream only on the branch taken, as eagerly", () => {
  const f = (p: sc.Tensor) => {
    const a = sc.cond(p, () => sc.random.normal([2]), () => sc.random.uniform([2]));
    return [a, sc.random.normal([2])];
  };
  const staged = sc.stage(f, { autograph: false });
  for (const p of [true, false, true]) {
    sc.random.setSeed(4);
    const eager = f(sc.tensor(p)).map(arr);
    sc.random.setSeed(4);
    assert.deepEqual(staged(sc.tensor(p)).map(arr), eager, `predicate ${p}`);
  }
});

test("uniform draws stay below maxval in every float dtype, though minval + (maxval - minval) * u can round up to it", () => {
  // float16 on [0, 1): a draw within 2^-12 of 1 rounded to 1 (about 24 of these 100,000 before);
  // float32 on [65536, 65537): the dtype's step there is 2^-7, so about 1 draw in 256 rounded up.
  const cases: [sc.DType, number, number, number | null][] = [["float16", 0, 1, 1 - 2 ** -11], ["float32", 65536, 65537, 65537 - 2 ** -7], ["float64", -1, 1, null], ["float32", -2, -1, null]];
  for (const [dtype, minval, maxval, top] of cases) {
    const d = sc.random.uniform([100_000], { seed: 11, dtype, minval, maxval }).dataSync();
    let lo = Infinity, hi = -Infinity;
    for (const v of d) (lo = Math.min(lo, v)), (hi = Math.max(hi, v));
    assert.ok(lo >= minval && hi < maxval, `${dtype} [${minval}, ${maxval}): drew values in [${lo}, ${hi}]`);
    // where the dtype is coarse, the largest value below maxval is drawn (the clamp's value, or rounding's)
    if (top !== null) assert.equal(hi, top, `${dtype}: the largest draw`);
  }
});

test("dropout: output = x * mask / (1 - rate) with a bool mask kept with probability 1 - rate; rate 0 draws nothing; bad input is a typed error", () => {
  for (const dtype of ["float32", "float64"] as const) {
    const x = sc.add(sc.random.uniform([100, 100], { seed: 5, dtype }), 1);
    const [y, mask] = dropout(x, 0.25, { seed: 9 });
    assert.deepEqual([y.dtype, y.shape, mask.dtype, mask.shape], [dtype, [100, 100], "bool", [100, 100]]);
    const xs = x.dataSync();
    const ys = y.dataSync();
    const ms = mask.dataSync();
    let kept = 0;
    for (let i = 0; i < xs.length; i++) {
      if (ms[i]) kept++;
      const want = ms[i] ? xs[i]! / 0.75 : 0;
      assert.ok(Math.abs(ys[i]! - want) <= 1e-6 * want, `${dtype} element ${i}: ${ys[i]} vs ${want}`);
    }
    assert.ok(Math.abs(kept / xs.length - 0.75) < 0.02, `${dtype}: kept fraction ${kept / xs.length}`);
    // the same key, the same mask
    assert.deepEqual(dropout(x, 0.25, { seed: 9 })[1].dataSync(), ms);
  }
  // rate 0: the input itself and an all-true mask, and the global stream does not move
  sc.random.setSeed(2);
  const before = sc.random.uniform([3]).arraySync();
  sc.random.setSeed(2);
  const x = sc.tensor([1, -2, 3]);
  const [y, mask] = dropout(x, 0);
  assert.equal(y, x);
  assert.deepEqual(mask.arraySync(), [true, true, true]);
  assert.deepEqual(sc.random.uniform([3]).arraySync(), before);
  assert.throws(() => dropout(x, 1), (e: Error) => e instanceof sc.ValueError && /random\.dropout.*rate must be in \[0, 1\), got 1/s.test(e.message));
  assert.throws(() => dropout(x, Number.NaN), sc.ValueError);
  assert.throws(() => dropout(sc.tensor([1, 2], "int32"), 0.5), (e: Error) => e instanceof sc.DtypeError && /float tensors, got int32/.test(e.message));
  assert.throws(() => dropout(x, 0.5, { seed: 1, key: sc.random.key(1) }), (e: Error) => e instanceof sc.ValueError && /at most one of key, seed and generator/.test(e.message));
});
