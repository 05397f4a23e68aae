// The compiled executor's WebAssembly SIMD elementwise loops (backends/cpu/wasm/: each op's
// expression rendered by simd-expr.ts) give exactly the eager kernels' float32 results, special
// values and broadcasting included.
import { test } from "node:test";
import assert from "node:assert/strict";
import * as sc from "../../../src/api/index.js";
import { compileGraph } from "../../../src/api/internals.js";
import { Rng } from "../../util/rng.js";
import { bindAttrs, formFor } from "../../../src/core/expr.js";
import { simdRenderable } from "../../../src/backends/cpu/wasm/simd-expr.js";
import { roundToFloat16 } from "../../../src/core/float16.js";

const f32 = Math.fround;
const TANH_RANGE = 7.90531110763549805;
/** The float32 neighbours of x. */
function neighbours(x: number): number[] {
  const a = new Float32Array([x]);
  const bits = new Int32Array(a.buffer);
  const out: number[] = [];
  for (const d of [-1, 1]) {
    bits[0] = bits[0]! + d;
    out.push(a[0]!);
    bits[0] = bits[0]! - d;
  }
  return out;
}
const SPECIAL = [
  NaN, 0, -0, Infinity, -Infinity, 1, -1, 0.5, -0.5, 1e-8, -1e-8, 1e-40, -1e-40, 3.4e38, -3.4e38,
  TANH_RANGE, -TANH_RANGE, ...neighbours(TANH_RANGE), ...neighbours(-TANH_RANGE), 8.5, -8.5, 9, -9, ...neighbours(9), ...neighbours(-9), 20, -20,
].map(f32);

/** Special values first, then values of mixed scales (seeded). */
function values(n: number, rng: Rng): number[] {
  return Array.from({ length: n }, (_, i) => (i < SPECIAL.length ? SPECIAL[i]! : f32(rng.uniform(-1, 1) * 10 ** rng.int(-3, 2))));
}

function tensorOf(shape: number[], rng: Rng, shift = 0): sc.Tensor {
  const n = shape.reduce((a, b) => a * b, 1);
  const v = values(n + shift, rng).slice(shift);
  return sc.tensor(v, "float32", shape);
}

/** Bit-identical float32 data (every NaN counts as equal to every NaN). */
function assertSameBits(what: string, got: sc.Tensor, want: sc.Tensor): void {
  assert.deepEqual(got.shape, want.shape, `${what}: shape`);
  const a = got.dataSync() as Float32Array,
    b = want.dataSync() as Float32Array;
  const ab = new Uint32Array(a.buffer, a.byteOffset, a.length),
    bb = new Uint32Array(b.buffer, b.byteOffset, b.length);
  for (let i = 0; i < a.length; i++) {
    if (Number.isNaN(a[i]) && Number.isNaN(b[i])) continue;
    if (ab[i] !== bb[i]) assert.fail(`${what}: element ${i}: compiled ${a[i]} (0x${ab[i]!.toString(16)}) vs eager ${b[i]} (0x${bb[i]!.toString(16)})`);
  }
}

/** Stages fn, checks that its compiled code runs SIMD loops, and compares with eager calls. */
function checkAgainstEager(what: string, fn: (...xs: sc.Tensor[]) => sc.Tensor | sc.Tensor[], args: sc.Tensor[], simdLoops = 1): void {
  const staged = sc.stage(fn, { autograph: false });
  const cf = staged.concrete(...args);
  const compiled = compileGraph(cf.graph, cf.library, args.map((a) => a.shape));
  const calls = compiled.source.match(/\bE\d+\(\);/g) ?? [];
  assert.equal(calls.length, simdLoops, `${what}: SIMD loops in the compiled code`);
  const want = fn(...args);
  for (let call = 0; call < 2; call++) {
    // the first call is interpreted, the later ones compiled
    const got = staged(...args);
    const g = Array.isArray(got) ? got : [got],
      w = Array.isArray(want) ? want : [want];
    assert.equal(g.length, w.length);
    g.forEach((t, i) => assertSameBits(`${what} output ${i}`, t, w[i]!));
  }
}

const UNARY: [string, (x: sc.Tensor) => sc.Tensor][] = [
  ["neg", sc.neg], ["abs", sc.abs], ["sqrt", sc.sqrt], ["square", sc.square], ["reciprocal", sc.reciprocal], ["relu", sc.relu], ["tanh", sc.tanh],
];
const BINARY: [string, (a: sc.Tensor, b: sc.Tensor) => sc.Tensor][] = [
  ["add", sc.add], ["sub", sc.sub], ["mul", sc.mul], ["div", sc.div], ["maximum", sc.maximum], ["minimum", sc.minimum],
];

test("SIMD unary ops equal the eager kernels bit for bit (tails of 1-3 elements, special values)", () => {
  const rng = new Rng(7);
  for (const shape of [[9, 37], [300], [4, 66]]) {
    const x = tensorOf(shape, rng);
    for (const [name, op] of UNARY) checkAgainstEager(`${name} ${JSON.stringify(shape)}`, (a) => op(a), [x]);
  }
});

test("SIMD tanh over a dense sweep of float32 values: the rational, the edges, the tails", () => {
  // every 97th float32 bit pattern from 0 to 9.5 and their negatives, plus specials
  const vals: number[] = [...SPECIAL];
  const bits = new Int32Array(1),
    fl = new Float32Array(bits.buffer);
  for (let b = 0; ; b += 9973) {
    bits[0] = b;
    if (!(fl[0]! <= 9.5)) break;
    vals.push(fl[0]!, -fl[0]!);
  }
  const x = sc.tensor(vals, "float32", [vals.length]);
  checkAgainstEager("tanh sweep", (a) => sc.tanh(a), [x]);
});

test("SIMD binary ops equal the eager kernels with broadcasting (rows, columns, scalars) in both positions", () => {
  const rng = new Rng(8);
  const full = tensorOf([9, 37], rng);
  const others = [tensorOf([9, 37], rng, 5), tensorOf([37], rng, 3), tensorOf([9, 1], rng, 11), sc.tensor(f32(0.75), "float32"), sc.tensor(NaN, "float32")];
  for (const [name, op] of BINARY) {
    for (const o of others) {
      checkAgainstEager(`${name} [9,37] with ${JSON.stringify(o.shape)}`, (a, b) => op(a, b), [full, o]);
      checkAgainstEager(`${name} ${JSON.stringify(o.shape)} with [9,37]`, (a, b) => op(b, a), [full, o]);
    }
  }
});

test("fused SIMD chains: the RNN cell, its backward, several outputs and weak constants", () => {
  const rng = new Rng(9);
  const a = tensorOf([32, 64], rng),
    b = tensorOf([32, 64], rng, 2),
    bias = tensorOf([64], rng, 4);
  checkAgainstEager("add add tanh", (p, q, r) => sc.tanh(p.add(q).add(r)), [a, b, bias]);
  checkAgainstEager("tanh backward", (y, dy) => dy.mul(sc.sub(1, y.mul(y))), [sc.tanh(a), b]);
  checkAgainstEager("two outputs", (p, q) => {
    const z = p.mul(q).sub(0.25);
    return [sc.tanh(z), sc.relu(z).div(3)];
  }, [a, b]);
  checkAgainstEager("max/min clip chain", (p, q) => sc.minimum(sc.maximum(p.mul(2), q.neg()), sc.abs(q)).add(1e-3), [a, b]);
});

test("ops whose expressions need float64 lanes or selects equal the eager kernels bit for bit", () => {
  // rsqrt, floorDiv, mod, squaredDifference and leakyRelu with an alpha float32 cannot hold round a
  // float64 intermediate: they run in float64x2 lanes; sign, floor, ceil, clip are exact selects.
  const rng = new Rng(11);
  const x = tensorOf([9, 37], rng);
  const y = tensorOf([9, 37], rng, 7);
  const lo = tensorOf([37], rng, 2);
  const unary: [string, (t: sc.Tensor) => sc.Tensor][] = [
    ["sign", sc.sign], ["rsqrt", sc.rsqrt], ["floor", sc.floor], ["ceil", sc.ceil],
    ["leakyRelu 0.2", (t) => sc.leakyRelu(t, 0.2)], ["leakyRelu 0.5", (t) => sc.leakyRelu(t, 0.5)],
  ];
  for (const [name, op] of unary) checkAgainstEager(name, (a) => op(a), [x]);
  const binary: [string, (a: sc.Tensor, b: sc.Tensor) => sc.Tensor][] = [["floorDiv", sc.floorDiv], ["mod", sc.mod], ["squaredDifference", sc.squaredDifference]];
  for (const [name, op] of binary) {
    checkAgainstEager(name, (a, b) => op(a, b), [x, y]);
    checkAgainstEager(`${name} by a row`, (a, b) => op(a, b), [x, lo]);
  }
  checkAgainstEager("clip", (a, l, h) => sc.clip(a, l, h), [x, lo, sc.add(lo, 0.5)]);
  checkAgainstEager("rsqrt then mul, fused", (a, b) => sc.rsqrt(a).mul(b).sub(sc.sign(b)), [x, y]);
});

test("every elementwise op whose float32 expression has a SIMD form runs as SIMD and equals the eager kernel", () => {
  const rng = new Rng(12);
  const operands = [tensorOf([9, 37], rng), tensorOf([9, 37], rng, 3), tensorOf([37], rng, 6)];
  let swept = 0;
  for (const def of sc.listOps()) {
    if (!def.elementwise || def.inputs.length > 3) continue;
    const attrs = def.name === "leakyRelu" || def.name === "elu" ? { alpha: 0.3 } : {};
    const args = operands.slice(0, def.inputs.length);
    let probe: sc.Tensor;
    try {
      probe = sc.applyOp(def, args, attrs)[0]!;
    } catch {
      continue; // not defined on float32 operands (where's condition is bool)
    }
    if (probe.dtype !== "float32" || !simdRenderable(bindAttrs(formFor(def.elementwise, "float32"), attrs))) continue;
    checkAgainstEager(`${def.name} (sweep)`, (...xs) => sc.applyOp(def, xs, attrs)[0]!, args);
    swept++;
  }
  assert.ok(swept >= 20, `swept ${swept} ops`);
});

test("below the size threshold, other dtypes and ops without a SIMD form use the JavaScript loops", () => {
  const rng = new Rng(10);
  const small = tensorOf([4, 8], rng);
  checkAgainstEager("small add", (p) => p.add(1), [small], 0);
  const big = tensorOf([20, 30], rng);
  checkAgainstEager("exp has no SIMD form", (p) => sc.exp(p.mul(0.01)), [big], 0);
  const f64 = sc.cast(big, "float64");
  checkAgainstEager("float64 stays in JavaScript", (p) => p.add(1), [f64], 0);
});

test("float16 (float32 storage, values rounded to float16) never runs as SIMD: its loops round every step", () => {
  const rng = new Rng(11);
  const big = sc.cast(tensorOf([20, 30], rng), "float16");
  const other = sc.cast(tensorOf([30], rng), "float16");
  // the same ops on float32 run as SIMD (one fused loop): float16 must not
  checkAgainstEager("float32 twin", (p, q) => sc.relu(p.mul(1.001).add(q)), [sc.cast(big, "float32"), sc.cast(other, "float32")], 1);
  checkAgainstEager("float16 chain", (p, q) => sc.relu(p.mul(1.001).add(q)), [big, other], 0);
  checkAgainstEager("float16 tanh and sqrt", (p) => [sc.tanh(p), sc.sqrt(sc.abs(p))], [big], 0);
  // float32 steps around float16 ones: the float32 loops (before and after) run as SIMD, the float16 ones in JavaScript
  checkAgainstEager("float32 through float16 and back", (p) => sc.cast(sc.cast(p.mul(3), "float16").add(0.1), "float32").mul(0.5), [sc.cast(big, "float32")], 2);
  const h = sc.stage((p: sc.Tensor) => p.mul(1.001).add(other), { autograph: false });
  for (let call = 0; call < 2; call++) {
    const got = h(big).dataSync();
    for (const v of got) assert.equal(v, roundToFloat16(v), "every stored value is a float16 number");
  }
});
