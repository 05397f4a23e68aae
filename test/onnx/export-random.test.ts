/**
 * The keyed random ops exported to ONNX (src/onnx/export/lowerings/random.ts): run in
 * onnxruntime, every op gives our executor's bits: keys (of seeds, split, foldIn, a generator's
 * next key), uniform, bernoulli and categorical draws exactly, normal draws exactly in float16
 * and float32 but for a rare value next to a zero of the cosine, and in float64 within the
 * tolerance docs/onnx.md states (onnxruntime's float64 Log and Cos are not V8's). Shapes include
 * empty and odd ones and unknown dims; keys come from inputs, seeds, split/foldIn and generators
 * (whose state variable the model reads and writes back); `engine: "onnxruntime"` runs staged
 * functions with draws (dropout in a model) with our executor's outputs, call after call.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as sc from "../../src/api/index.js";
import { Rng } from "../util/rng.js";

const { onnx, nn } = sc;
const vi = onnx.makeValueInfo;
const values = (t: sc.Tensor): number[] => Array.from(t.dataSync(), Number);

/** Stages f, exports it for these inputs (tensors, or specs when `specs` is given), runs it in onnxruntime on `xs`; returns [onnxruntime's outputs, ours]. */
async function both(f: (...a: sc.Tensor[]) => sc.Tensor | sc.Tensor[], xs: sc.Tensor[], specs?: sc.TensorSpec[]): Promise<[sc.Tensor[], sc.Tensor[]]> {
  const staged = sc.stage(f, { autograph: false });
  const m = onnx.exportModel(staged, specs ?? xs);
  const feeds: Record<string, sc.Tensor> = {};
  m.inputNames.forEach((n, i) => (feeds[n] = xs[i]!));
  const got = await onnx.runOnnxRuntime(m.bytes, feeds);
  const ours = [staged(...xs)].flat();
  assert.equal(m.outputNames.length, ours.length);
  return [m.outputNames.map((n) => got[n]!), ours];
}

/** Bit-for-bit equality (Object.is: -0 and NaN too), with dtype and shape. */
function sameBits(got: sc.Tensor, want: sc.Tensor, what: string): void {
  assert.equal(got.dtype, want.dtype, `${what}: dtype`);
  assert.deepEqual(got.shape, want.shape, `${what}: shape`);
  const a = got.dataSync(), b = want.dataSync();
  for (let i = 0; i < b.length; i++) if (!Object.is(a[i], b[i])) assert.fail(`${what}: element ${i} is ${a[i]} in onnxruntime, ${b[i]} ours`);
}

async function assertSame(f: (...a: sc.Tensor[]) => sc.Tensor | sc.Tensor[], xs: sc.Tensor[], what: string, specs?: sc.TensorSpec[]): Promise<void> {
  const [got, ours] = await both(f, xs, specs);
  got.forEach((g, i) => sameBits(g, ours[i]!, `${what}, output ${i}`));
}

const SEEDS = [0, 1, -1, 12345, 2 ** 40 + 3, -(2 ** 33) - 7];
const keys = () => SEEDS.map((s) => sc.random.key(s));
const SHAPES: number[][] = [[], [0], [3, 0], [1], [7], [37, 29], [3, 5, 7]];

test("onnxruntime's uint32 Mul and Add wrap modulo 2^32 and its BitShift takes uint32, as the lowering needs", async () => {
  // (the generator's constants and words with the top bit set: products far past 2^32)
  const a = [0xffffffff, 0x85ebca6b, 0xc2b2ae35, 0x9e3779b9, 0x80000001, 12345];
  const c = [0xc2b2ae35, 0x85ebca6b, 0x27d4eb2f, 0x165667b1, 0xffffffff, 0x80000000];
  const g = onnx.makeGraph(
    [onnx.makeNode("Mul", ["a", "c"], ["m"]), onnx.makeNode("Add", ["a", "c"], ["s"]), onnx.makeNode("BitShift", ["a", "k"], ["r"], { direction: "RIGHT" })],
    "g",
    [vi("a", "uint32", [6]), vi("c", "uint32", [6]), vi("k", "uint32", [])],
    [vi("m", "uint32", [6]), vi("s", "uint32", [6]), vi("r", "uint32", [6])],
  );
  const got = await onnx.runOnnxRuntime(onnx.modelBytes(onnx.makeModel(g)), { a: sc.tensor(a, "uint32"), c: sc.tensor(c, "uint32"), k: sc.scalar(13, "uint32") });
  assert.deepEqual(values(got.m!), a.map((x, i) => Math.imul(x, c[i]!) >>> 0));
  assert.deepEqual(values(got.s!), a.map((x, i) => (x + c[i]!) >>> 0));
  assert.deepEqual(values(got.r!), a.map((x) => x >>> 13));
});

test("uniform: onnxruntime gives our bits, for every dtype, shape (empty and odd too), key and range", async () => {
  for (const dtype of ["float32", "float64", "float16"] as sc.DType[]) {
    for (const shape of SHAPES) {
      const f = (k: sc.Tensor) => [sc.random.uniform(shape, { key: k, dtype }), sc.random.uniform(shape, { key: k, dtype, minval: -3, maxval: 1e-3 })];
      for (const k of keys()) await assertSame(f, [k], `uniform ${dtype}[${shape}] key [${values(k)}]`);
    }
    // a range so narrow that minval + span * u rounds up to maxval in the dtype: kept below it, as ours; an empty range is minval
    const narrow = (k: sc.Tensor) => [sc.random.uniform([400], { key: k, dtype, minval: 1, maxval: 1 + 2 ** -9 }), sc.random.uniform([5], { key: k, dtype, minval: 2, maxval: 2 })];
    await assertSame(narrow, [sc.random.key(3)], `uniform ${dtype} narrow range`);
  }
});

test("uniform from a seed, and from a key made of a seed tensor, split and foldIn inside the function", async () => {
  await assertSame(() => sc.random.uniform([11, 3], { seed: 77 }), [], "uniform of a seed");
  const f = (seed: sc.Tensor, step: sc.Tensor) => {
    const [a, b] = sc.random.split(sc.random.foldIn(sc.random.key(seed), step), 2);
    return [sc.random.uniform([9], { key: a! }), sc.random.normal([4, 2], { key: b! }), a!, b!];
  };
  for (const [seed, step] of [[5, 0], [-9, 3], [123456, -1], [2 ** 31 - 1, 2 ** 31 - 1]] as const) {
    await assertSame(f, [sc.scalar(seed, "int32"), sc.scalar(step, "int32")], `seed ${seed}, step ${step}`);
  }
});

test("keys: of int32, int64 and uint8 seeds (negative and past 2^32 too), split into 1, 2 and 5, folded with int32, int64 and uint8 data", async () => {
  const seeds: [number, sc.DType][] = [[0, "int32"], [-1, "int32"], [2 ** 31 - 1, "int32"], [-(2 ** 31), "int32"], [7, "int64"], [-(2 ** 40) - 5, "int64"], [2 ** 52 + 1, "int64"], [200, "uint8"]];
  for (const [s, d] of seeds) {
    const t = sc.scalar(s, d);
    await assertSame((x) => sc.random.key(x), [t], `key(${s} ${d})`);
    // (and equal to the key of the JS number: the op is the same function of the seed)
    assert.deepEqual(values(sc.random.key(t)), values(sc.random.key(s)));
  }
  for (const k of keys()) for (const n of [1, 2, 5]) await assertSame((x) => sc.random.split(x, n), [k], `split(key [${values(k)}], ${n})`);
  const data: [number, sc.DType][] = [[0, "int32"], [-3, "int32"], [2 ** 31 - 1, "int32"], [5, "int64"], [-(2 ** 35) - 1, "int64"], [2 ** 33 + 9, "int64"], [255, "uint8"]];
  for (const k of keys()) for (const [v, d] of data) await assertSame((x, y) => sc.random.foldIn(x, y), [k, sc.scalar(v, d)], `foldIn(key [${values(k)}], ${v} ${d})`);
});

test("bernoulli: exact, for float32, float64 and float16 probabilities (0, 1 and values next to draws too), static and unknown shapes", async () => {
  const rng = new Rng(11);
  for (const dtype of ["float32", "float64", "float16"] as sc.DType[]) {
    for (const shape of SHAPES) {
      const p = rng.tensor(shape, 0, 1, dtype);
      for (const k of keys().slice(0, 3)) await assertSame((q, x) => sc.random.bernoulli(q, undefined, { key: x }), [p, k], `bernoulli ${dtype}[${shape}]`);
    }
    // probabilities 0 and 1, and each our own 53-bit uniform (the comparison u < p at its edge)
    const k = sc.random.key(8);
    const u = sc.random.uniform([64], { key: k, dtype: "float64" });
    const p = sc.cast(sc.concat([sc.tensor([0, 1, 0, 1], "float64"), u]), dtype);
    const drawn = sc.stage((q: sc.Tensor, x: sc.Tensor) => sc.random.bernoulli(q, undefined, { key: x }), { autograph: false })(sc.cast(u, "float64"), k);
    if (dtype === "float64") assert.deepEqual(values(drawn), new Array(64).fill(0), "u < u is false: the edge is reached");
    await assertSame((q, x) => sc.random.bernoulli(q, undefined, { key: x }), [p, k], `bernoulli ${dtype} at the edges`);
  }
  // unknown dims: the element count and shape are read at run time
  const p = rng.tensor([5, 3], 0, 1, "float32");
  await assertSame((q, x) => sc.random.bernoulli(q, undefined, { key: x }), [p, sc.random.key(2)], "bernoulli of [null, 3]", [sc.spec([null, 3], "float32"), sc.spec([2], "int32")]);
  await assertSame((q, x) => sc.random.bernoulli(q, undefined, { key: x }), [sc.zeros([0, 3]), sc.random.key(2)], "bernoulli of [null, 3] at 0 rows", [sc.spec([null, 3], "float32"), sc.spec([2], "int32")]);
  await assertSame(() => sc.random.bernoulli(0.3, [4, 9], { seed: 5 }), [], "bernoulli of a scalar p and a shape, from a seed");
});

test("categorical: exact, for 1-D and 2-D logits, one class, no samples, no rows, -inf, +inf and NaN logits, float64 and float16 logits, unknown batch", async () => {
  const rng = new Rng(12);
  const cat = (n: number) => (l: sc.Tensor, k: sc.Tensor) => sc.random.categorical(l, n, { key: k });
  const cases: [string, sc.Tensor, number][] = [
    ["[5]", rng.tensor([5], -2, 2, "float32"), 200],
    ["[4, 9]", rng.tensor([4, 9], -3, 3, "float32"), 31],
    ["[3, 1] (one class)", rng.tensor([3, 1], -1, 1, "float32"), 7],
    ["[2, 6] no samples", rng.tensor([2, 6], -1, 1, "float32"), 0],
    ["[0, 4] no rows", sc.zeros([0, 4]), 5],
    ["[2, 0] no classes", sc.zeros([2, 0]), 3],
    ["[3, 4] with -inf, +inf and NaN", sc.tensor([0, -Infinity, 1, -Infinity, -Infinity, -Infinity, -Infinity, -Infinity, 1, Infinity, 0, NaN], "float32", [3, 4]), 9],
    ["[6, 13] float64", rng.tensor([6, 13], -4, 4, "float64"), 17],
    ["[2, 5] float16", rng.tensor([2, 5], -2, 2, "float16"), 11],
    ["[1, 1000] (nearly flat)", rng.tensor([1, 1000], -1e-3, 1e-3, "float32"), 500],
  ];
  for (const [what, l, n] of cases) for (const k of keys().slice(0, 3)) await assertSame(cat(n), [l, k], `categorical ${what} key [${values(k)}]`);
  const l = rng.tensor([7, 4], -1, 1, "float32");
  await assertSame(cat(6), [l, sc.random.key(4)], "categorical of [null, 4]", [sc.spec([null, 4], "float32"), sc.spec([2], "int32")]);
});

/** A float64 value's unit in the last place. */
function ulp64(x: number): number {
  const b = new Float64Array([Math.abs(x)]);
  const u = new BigUint64Array(b.buffer);
  u[0]! += 1n;
  return b[0]! - Math.abs(x);
}

/** A float32 value's unit in the last place. */
function ulp32(x: number): number {
  const b = new Float32Array([Math.abs(x)]);
  const u = new Uint32Array(b.buffer);
  u[0]! += 1;
  return b[0]! - Math.fround(Math.abs(x));
}

/**
 * The bound docs/onnx.md states for a normal draw: |onnxruntime - ours| <= 2^-48 * stddev + 2
 * ulp of ours (onnxruntime's float64 Cos is off by up to 2^-51 absolutely, its Log by 2 ulp; the
 * largest measured over 2^22 draws: 1.8e-15 * stddev); a float32 value differs only where its
 * float64 value was that close to a rounding boundary (1 of 2^22 measured), at most by 1 ulp of
 * float32 or by the float64 bound.
 */
function normalClose(got: sc.Tensor, want: sc.Tensor, stddev: number, what: string): number {
  assert.equal(got.dtype, want.dtype);
  assert.deepEqual(got.shape, want.shape);
  const a = got.dataSync(), b = want.dataSync();
  let differ = 0;
  for (let i = 0; i < b.length; i++) {
    if (a[i] === b[i]) continue;
    differ++;
    const d = Math.abs(a[i]! - b[i]!);
    const bound = 2 ** -48 * stddev + 2 * ulp64(b[i]!) + (want.dtype === "float64" ? 0 : ulp32(b[i]!));
    assert.ok(d <= bound, `${what}: element ${i} is ${a[i]} in onnxruntime, ${b[i]} ours (|d| ${d} > ${bound})`);
  }
  return differ;
}

test("normal: float16 and float32 draws are our bits but for rare values next to a zero of the cosine; float64 within the stated bound", async () => {
  const counts: Record<string, [number, number]> = {};
  for (const dtype of ["float32", "float64", "float16"] as sc.DType[]) {
    counts[dtype] = [0, 0];
    for (const shape of [...SHAPES, [4099]]) {
      for (const [mean, stddev] of [[0, 1], [3, 0.01], [-1, 50]]) {
        const f = (k: sc.Tensor) => sc.random.normal(shape, { key: k, dtype, mean, stddev });
        for (const k of keys().slice(0, 3)) {
          const [[got], [ours]] = await both(f, [k]);
          counts[dtype]![0] += normalClose(got!, ours!, stddev, `normal ${dtype}[${shape}] (${mean}, ${stddev})`);
          counts[dtype]![1] += ours!.size;
        }
      }
    }
  }
  // (float64 values differ often, in their last bits; float16 and float32 ones almost never)
  assert.equal(counts.float16![0], 0, "float16: every value is ours");
  assert.ok(counts.float32![0] <= 1, `float32: ${counts.float32![0]} of ${counts.float32![1]} values differ`);
  assert.ok(counts.float64![0] > 0, "float64: the bound is needed (onnxruntime's Log and Cos are not V8's)");
});

test("a generator in a staged function: the model reads its state variable and outputs the advanced state, which is ours", async () => {
  const g = new sc.random.Generator({ seed: 21 });
  const f = () => [g.uniform([5]), g.normal([3, 3]), g.bernoulli(sc.fullLike(sc.zeros([4]), 0.5)), g.categorical(sc.zeros([2, 3]), 4)];
  const staged = sc.stage(f, { autograph: false });
  const m = onnx.exportModel(staged, []);
  const before = values(g.state.read());
  const got = await onnx.runOnnxRuntime(m.bytes, {});
  const ours = staged();
  m.outputNames.forEach((n, i) => sameBits(got[n]!, ours[i]!, `draw ${i}`));
  assert.equal(m.updatedVariables.length, 1);
  assert.equal(m.updatedVariables[0]!.variable, g.state);
  sameBits(got[m.updatedVariables[0]!.output]!, g.state.read(), "the updated state");
  assert.notDeepEqual(values(g.state.read()), before, "the state advanced");
});

test("a generator's next key as its counter's low word wraps (the carry into the high word, index words past 2^32)", async () => {
  const g = new sc.random.Generator({ seed: 3 });
  const f = () => [g.nextKey(), g.nextKey()];
  for (const [lo, hi] of [[-1, 0], [-2, 0], [-1, 7], [2 ** 31 - 1, 0], [-1, 0xffffe], [123, 0xffffe]] as const) {
    const start = g.state.read().dataSync();
    const state = sc.tensor([start[0]!, start[1]!, lo, hi], "int32");
    g.state.assign(state);
    const staged = sc.stage(f, { autograph: false });
    const m = onnx.exportModel(staged, []);
    const got = await onnx.runOnnxRuntime(m.bytes, {});
    g.state.assign(state);
    const ours = staged();
    m.outputNames.forEach((n, i) => sameBits(got[n]!, ours[i]!, `counter (${lo}, ${hi}): key ${i}`));
    sameBits(got[m.updatedVariables[0]!.output]!, g.state.read(), `counter (${lo}, ${hi}): the state`);
  }
});

test("engine onnxruntime runs draws: key argument, seed, generator and the global generator, call after call, as ours", () => {
  const runs = () => onnx.engineStats.runs;
  const keyed = (x: sc.Tensor, k: sc.Tensor) => sc.add(x, sc.random.normal([4, 6], { key: k }));
  const ortKeyed = sc.stage(keyed, { engine: "onnxruntime" });
  const oursKeyed = sc.stage(keyed);
  const x = new Rng(3).tensor([4, 6], -1, 1, "float32");
  const r0 = runs();
  for (const s of [1, 2, 3]) sameBits(ortKeyed(x, sc.random.key(s)), oursKeyed(x, sc.random.key(s)), `keyed, seed ${s}`);
  assert.equal(runs() - r0, 3, "each call ran in onnxruntime");

  // two generators from one seed: the engine's and ours advance alike, and draw fresh values per call
  const mk = () => new sc.random.Generator({ seed: 99 });
  const ga = mk(), go = mk();
  const step = (g: sc.random.Generator) => (p: sc.Tensor) => [g.uniform([3, 5]), g.bernoulli(p), g.categorical(sc.log(p), 6)];
  const ortGen = sc.stage(step(ga), { engine: "onnxruntime" });
  const oursGen = sc.stage(step(go));
  const p = new Rng(4).tensor([2, 5], 0.05, 0.95, "float32");
  let last: number[] = [];
  for (let call = 0; call < 3; call++) {
    const a = ortGen(p), o = oursGen(p);
    a.forEach((t, i) => sameBits(t, o[i]!, `generator, call ${call}, output ${i}`));
    assert.notDeepEqual(values(a[0]!), last, "fresh draws on every call");
    last = values(a[0]!);
    sameBits(ga.state.read(), go.state.read(), `generator states after call ${call}`);
  }

  // the global generator, seeded inside the function (each call restarts the stream), and from a seed
  const global = () => {
    sc.random.setSeed(1234);
    return [sc.random.uniform([7]), sc.random.normal([2]), sc.random.uniform([3], { seed: 5 })];
  };
  const ortGlobal = sc.stage(global, { engine: "onnxruntime" })();
  const oursGlobal = sc.stage(global)();
  ortGlobal.forEach((t, i) => sameBits(t, oursGlobal[i]!, `global generator, output ${i}`));
});

test("engine onnxruntime: a small model with dropout in training mode, staged, gives our outputs and masks call after call", () => {
  const make = () => new nn.Sequential(new nn.Linear(16, { seed: 1 }), new nn.ReLU(), new nn.Dropout(0.3, { seed: 8 }), new nn.Linear(4, { seed: 2 }));
  const ma = make(), mo = make();
  const f = (m: sc.nn.Module) => (x: sc.Tensor) => m.call(x) as sc.Tensor;
  const ort = sc.stage(f(ma), { engine: "onnxruntime" });
  const ours = sc.stage(f(mo));
  const rng = new Rng(9);
  const r0 = onnx.engineStats.runs;
  for (const n of [3, 3, 5]) {
    const x = rng.tensor([n, 10], -1, 1, "float32");
    const a = ort(x), o = ours(x);
    assert.deepEqual(a.shape, o.shape);
    // (the masks are ours bit for bit; the matrix products are onnxruntime's float32 sums)
    const p = a.dataSync(), q = o.dataSync();
    for (let i = 0; i < q.length; i++) assert.ok(Math.abs(p[i]! - q[i]!) <= 1e-5 * (1 + Math.abs(q[i]!)), `batch ${n}: element ${i}: ${p[i]} in onnxruntime, ${q[i]} ours`);
  }
  assert.equal(onnx.engineStats.runs - r0, 3, "each call ran in onnxruntime");
  const drop = (m: sc.nn.Sequential) => (m.layers[2] as sc.nn.Dropout).randomState;
  sameBits(drop(ma).read(), drop(mo).read(), "the dropout generators advanced alike");
  assert.equal(drop(ma).read().dataSync()[2], 3, "one key per call");
  // a dropout mask and the kept values scaled, by hand: exact
  const dr = (x: sc.Tensor, k: sc.Tensor) => {
    const keep = sc.random.bernoulli(sc.fullLike(x, 0.6), undefined, { key: k });
    return [keep, sc.div(sc.mul(x, sc.cast(keep, "float32")), 0.6)];
  };
  const x = rng.tensor([6, 7], -1, 1, "float32");
  const a = sc.stage(dr, { engine: "onnxruntime" })(x, sc.random.key(1)), o = sc.stage(dr)(x, sc.random.key(1));
  a.forEach((t, i) => sameBits(t, o[i]!, `dropout output ${i}`));
});
