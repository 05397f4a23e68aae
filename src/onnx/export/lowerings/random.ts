/**
 * ONNX lowerings of the keyed random ops: the counter-based generator of
 * backends/cpu/counter-rng.ts written in ONNX integer and bitwise ops, so that an exported draw
 * gives the bits our executor gives (not onnxruntime's own generator, whose RandomUniform and
 * friends draw other numbers).
 *
 * The generator's words are uint32 tensors: onnxruntime's CPU Add and Mul on uint32 wrap modulo
 * 2^32 (C++ unsigned arithmetic, defined; test/onnx/export-random.test.ts checks it on the
 * constants used here), its BitShift takes uint32 and its Bitwise* ops every integer type. An
 * element index is 64 bits (the CPU's `i` goes past 2^32 for large draws: normal's 2i + 1): it
 * is made in uint64 from a Range and split into its low and high words. The float steps are
 * the CPU's in float64 (exact but for Log, Cos and Exp, see docs/onnx.md), cast to the dtype
 * at the end as the CPU kernel stores them (float16 through float32, as the registry rounds it).
 *
 * Not in the model: a generator's check that it has handed out fewer than 2^52 keys (an ONNX
 * model cannot fail a run; a generator advanced once per call would need 2^52 calls).
 */
import type { DType } from "../../../core/dtype.js";
import { largestBelow } from "../../../core/float-steps.js";
import { sizeOf } from "../../../core/shape.js";
import type { OnnxBuilder } from "../builder.js";
import type { LowerNode } from "../lowering.js";
import { castTo, filled, where, type Table } from "./common.js";

/** A uint32 value of one or several words (a scalar constant for a number). */
type Word = string;

const u32 = (b: OnnxBuilder, v: number): Word => b.scalar(v >>> 0, "uint32");
const xor = (b: OnnxBuilder, x: Word, y: Word): Word => b.op1("BitwiseXor", [x, y]);
const add = (b: OnnxBuilder, x: Word, y: Word): Word => b.op1("Add", [x, y]);
const mul = (b: OnnxBuilder, x: Word, y: Word): Word => b.op1("Mul", [x, y]);
const shr = (b: OnnxBuilder, x: Word, k: number): Word => b.op1("BitShift", [x, u32(b, k)], { direction: "RIGHT" });

/** counter-rng.ts fmix32, on uint32 words. */
function fmix32(b: OnnxBuilder, h0: Word): Word {
  let h = xor(b, h0, shr(b, h0, 16));
  h = mul(b, h, u32(b, 0x85ebca6b));
  h = xor(b, h, shr(b, h, 13));
  h = mul(b, h, u32(b, 0xc2b2ae35));
  return xor(b, h, shr(b, h, 16));
}

/** counter-rng.ts randomBits: 32 random bits of the element whose index has words (lo, hi), under key (k0, k1); all broadcast together. */
function randomBits(b: OnnxBuilder, k0: Word, k1: Word, lo: Word, hi: Word): Word {
  const a = fmix32(b, add(b, xor(b, lo, k0), mul(b, xor(b, hi, u32(b, 0x9e3779b9)), u32(b, 0x27d4eb2f))));
  return fmix32(b, add(b, add(b, xor(b, a, k1), mul(b, lo, u32(b, 0x165667b1))), u32(b, 0x9e3779b9)));
}

/** The words of a 64-bit value x (uint64): low and high uint32. */
function split64(b: OnnxBuilder, x: string): [Word, Word] {
  const lo = b.cast(b.op1("BitwiseAnd", [x, b.scalar(0xffffffff, "uint64")]), "uint32");
  const hi = b.cast(b.op1("BitShift", [x, b.scalar(32, "uint64")], { direction: "RIGHT" }), "uint32");
  return [lo, hi];
}

/** An integer value's two's-complement 64-bit words (an int32 sign-extends, as `Math.floor(v / 2^32) >>> 0` reads it). */
function words64(b: OnnxBuilder, x: string, dtype: DType): [Word, Word] {
  return split64(b, b.cast(castTo(b, x, dtype, "int64"), "uint64"));
}

/** The two words of a key (int32[2]) as uint32 scalars. */
function keyWords(b: OnnxBuilder, key: string): [Word, Word] {
  const k = b.cast(key, "uint32");
  return [b.op1("Gather", [k, b.scalar(0, "int64")], { axis: 0 }), b.op1("Gather", [k, b.scalar(1, "int64")], { axis: 0 })];
}

/** uint32 words to an int32 key (the bits kept). */
const asKey = (b: OnnxBuilder, w: Word): string => b.cast(w, "int32");

/**
 * The words of the element indices `scale * i + offset`, i in [0, count) (count an int64
 * scalar; `n` its value when known: then a high word that is always 0 is the constant 0).
 */
function indexWords(b: OnnxBuilder, count: string, n: number | null, scale: number, offset: number): [Word, Word] {
  let i = b.cast(b.op1("Range", [b.scalar(0, "int64"), count, b.scalar(1, "int64")]), "uint64");
  if (scale !== 1) i = b.op1("Mul", [i, b.scalar(scale, "uint64")]);
  if (offset !== 0) i = b.op1("Add", [i, b.scalar(offset, "uint64")]);
  if (n !== null && scale * n + offset <= 2 ** 32) return [b.cast(i, "uint32"), u32(b, 0)];
  return split64(b, i);
}

/** The number of elements of a value (int64 scalar), and its value when the shape is static. */
function countOf(b: OnnxBuilder, x: string, shape: readonly number[]): [string, number | null] {
  if (shape.every((d) => d >= 0)) {
    const n = sizeOf(shape);
    return [b.scalar(n, "int64"), n];
  }
  return [b.op1("Size", [x]), null];
}

const f64 = (b: OnnxBuilder, w: Word): string => b.cast(w, "float64");
const c64 = (b: OnnxBuilder, v: number): string => b.scalar(v, "float64");

/**
 * counter-rng.ts uniform01 of the indices (lo, hi) in float64: 24 bits for a float32 (or
 * float16) draw, 53 for a float64 draw.
 */
function uniform01(b: OnnxBuilder, k0: Word, k1: Word, [lo, hi]: [Word, Word], bits53: boolean): string {
  const a = randomBits(b, k0, k1, lo, hi);
  if (!bits53) return b.op1("Mul", [f64(b, shr(b, a, 8)), c64(b, 1 / 16777216)]);
  const c = randomBits(b, k1, xor(b, k0, u32(b, 0x5bd1e995)), lo, hi);
  const m = b.op1("Add", [b.op1("Mul", [f64(b, shr(b, a, 5)), c64(b, 67108864)]), f64(b, shr(b, c, 6))]);
  return b.op1("Mul", [m, c64(b, 1 / 9007199254740992)]);
}

/** A float64 value stored as a draw of `dtype` (float16 through float32, as the CPU kernel's result is rounded). */
function store(b: OnnxBuilder, v: string, dtype: DType): string {
  if (dtype === "float64") return v;
  const f = b.cast(v, "float32");
  return dtype === "float32" ? f : b.cast(f, dtype);
}

interface DrawAttrs {
  shape: number[];
  dtype: DType;
}

/** A draw op of a key whose element i is f(the index words of i). */
function drawOf<A extends DrawAttrs>(sample: (b: OnnxBuilder, k: [Word, Word], count: string, n: number, a: A) => string) {
  return (b: OnnxBuilder, [key]: string[], node: LowerNode<A>): string[] => {
    const a = node.attrs;
    const n = sizeOf(a.shape);
    const v = sample(b, keyWords(b, key!), b.scalar(n, "int64"), n, a);
    return [b.op1("Reshape", [store(b, v, a.dtype), b.i64(a.shape)], n === 0 ? { allowzero: 1 } : {})];
  };
}

export const randomLowerings: Table = {
  randomKey: (b, [seed], n) => {
    // key(seed) = [bits(hi, C0, lo), bits(lo, C1, hi)] of the seed's words (lo, hi)
    const [lo, hi] = words64(b, seed!, n.inputTypes[0]!.dtype);
    const one = b.i64([1]);
    const k0 = b.op1("Concat", [b.op1("Reshape", [hi, one]), b.op1("Reshape", [lo, one])], { axis: 0 });
    const i = b.op1("Concat", [b.op1("Reshape", [lo, one]), b.op1("Reshape", [hi, one])], { axis: 0 });
    return [asKey(b, randomBits(b, k0, b.constant([0x85ebca6b, 0xc2b2ae35], "uint32", [2]), i, u32(b, 0)))];
  },
  randomSplit: (b, [key], node) => {
    // key i of n: the bits of indices 2i and 2i + 1
    const count = node.attrs.n as number;
    const [k0, k1] = keyWords(b, key!);
    const idx = b.constant(Array.from({ length: 2 * count }, (_, j) => j), "uint32", [2 * count]);
    const all = asKey(b, randomBits(b, k0, k1, idx, u32(b, 0)));
    if (count === 1) return [all];
    return b.op("Split", [all, b.i64(new Array(count).fill(2))], { axis: 0 }, count);
  },
  randomFoldIn: (b, [key, data], node) => {
    // [bits(k0 ^ C0, k1, d), bits(k0, k1 ^ C1, d)]: one randomBits over keys of two words
    const [k0, k1] = keyWords(b, key!);
    const [d] = words64(b, data!, node.inputTypes[1]!.dtype);
    const one = b.i64([1]);
    const a0 = b.op1("Concat", [b.op1("Reshape", [xor(b, k0, u32(b, 0x3c6ef372)), one]), b.op1("Reshape", [k0, one])], { axis: 0 });
    const a1 = b.op1("Concat", [b.op1("Reshape", [k1, one]), b.op1("Reshape", [xor(b, k1, u32(b, 0xa54ff53a)), one])], { axis: 0 });
    return [asKey(b, randomBits(b, a0, a1, d, u32(b, 0)))];
  },
  randomNextKey: (b, [state]) => {
    // state [k0, k1, counter lo, counter hi] -> [k0, k1, counter + 1] and split key `counter`
    // (the bits of indices 2c and 2c + 1, whose words are (c << 1 | bit, c's high word << 1 | c's top bit))
    const s = b.cast(state!, "uint32");
    const word = (j: number) => b.op1("Gather", [s, b.scalar(j, "int64")], { axis: 0 });
    const [k0, k1, clo, chi] = [word(0), word(1), word(2), word(3)];
    const shl1 = (x: Word) => b.op1("BitShift", [x, u32(b, 1)], { direction: "LEFT" });
    const lo = b.op1("BitwiseOr", [shl1(clo), b.constant([0, 1], "uint32", [2])]);
    const hi = b.op1("BitwiseOr", [shl1(chi), shr(b, clo, 31)]);
    const key = asKey(b, randomBits(b, k0, k1, lo, hi));
    const nlo = add(b, clo, u32(b, 1));
    // (the carry out of the low word: clo was 0xffffffff exactly when its top bit is set and nlo's is not)
    const carry = shr(b, b.op1("BitwiseAnd", [clo, b.op1("BitwiseNot", [nlo])]), 31);
    const nhi = add(b, chi, carry);
    const one = b.i64([1]);
    const next = b.op1("Concat", [b.op1("Slice", [s, b.i64([0]), b.i64([2])]), b.op1("Reshape", [nlo, one]), b.op1("Reshape", [nhi, one])], { axis: 0 });
    return [asKey(b, next), key];
  },
  randomUniform: drawOf<DrawAttrs & { minval: number; maxval: number }>((b, [k0, k1], count, n, a) => {
    const u = uniform01(b, k0, k1, indexWords(b, count, n, 1, 0), a.dtype === "float64");
    const v = b.op1("Add", [c64(b, a.minval), b.op1("Mul", [c64(b, a.maxval - a.minval), u])]);
    // (kept below maxval in the dtype, as the CPU kernel keeps it; an empty range is minval)
    const top = c64(b, a.maxval > a.minval ? largestBelow(a.maxval, a.dtype) : a.minval);
    return where(b, b.op1("Greater", [v, top]), top, v, "float64");
  }),
  randomNormal: drawOf<DrawAttrs & { mean: number; stddev: number }>((b, [k0, k1], count, n, a) => {
    // Box-Muller on the uniforms of indices 2i and 2i + 1, in float64 as the CPU kernel
    const bits53 = a.dtype === "float64";
    const u1 = uniform01(b, k0, k1, indexWords(b, count, n, 2, 0), bits53);
    const u2 = uniform01(b, k0, k1, indexWords(b, count, n, 2, 1), bits53);
    const r = b.op1("Sqrt", [b.op1("Mul", [c64(b, -2), b.op1("Log", [b.op1("Sub", [c64(b, 1), u1])])])]);
    const c = b.op1("Cos", [b.op1("Mul", [c64(b, 2 * Math.PI), u2])]);
    return b.op1("Add", [c64(b, a.mean), b.op1("Mul", [b.op1("Mul", [c64(b, a.stddev), r]), c])]);
  }),
  randomBernoulli: (b, [p, key], node) => {
    // element i is true where the 53-bit uniform i is below p[i] (compared in float64, exact)
    const pt = node.inputTypes[0]!;
    const [k0, k1] = keyWords(b, key!);
    const [count, n] = countOf(b, p!, pt.shape);
    const u = b.op1("Reshape", [uniform01(b, k0, k1, indexWords(b, count, n, 1, 0), true), b.op1("Shape", [p!])], { allowzero: 1 });
    return [b.op1("Less", [u, castTo(b, p!, pt.dtype, "float64")])];
  },
  randomCategorical: (b, [logits, key], node) => {
    // per row: the CDF of exp(logits - max) in float64 (CumSum adds in the CPU kernel's order);
    // sample s of row r draws the 53-bit uniform r * numSamples + s times the row's total, and
    // the CPU's binary search for the first cdf[c] > u over c < classes - 1 is the count of the
    // c < classes - 1 with !(cdf[c] > u) (the test is monotone in c, NaN making it false throughout)
    const lt = node.inputTypes[0]!;
    const samples = node.attrs.numSamples as number;
    const [k0, k1] = keyWords(b, key!);
    const rows = lt.shape.length === 1 ? b.op1("Unsqueeze", [logits!, b.i64([0])]) : logits!;
    const l = castTo(b, rows, lt.dtype, "float64");
    const classes = lt.shape[lt.shape.length - 1]!;
    const batch = lt.shape.length === 1 ? 1 : lt.shape[0]!;
    const outShape = lt.shape.length === 1 ? b.i64([samples]) : b.op1("Concat", [b.op1("Shape", [logits!], { start: 0, end: 1 }), b.i64([samples])], { axis: 0 });
    if (classes === 0 || samples === 0 || batch === 0) return [filled(b, outShape, 0, "int32")];
    const max = b.op1("ReduceMax", [l, b.i64([1])], { keepdims: 1 });
    const cdf = b.op1("CumSum", [b.op1("Exp", [b.op1("Sub", [l, max])]), b.scalar(1, "int64")]);
    const total = b.op1("Slice", [cdf, b.i64([-1]), b.i64([2 ** 62]), b.i64([1])]);
    const count = batch >= 0 ? b.scalar(batch * samples, "int64") : b.op1("Mul", [b.op1("Squeeze", [b.op1("Shape", [logits!], { start: 0, end: 1 }), b.i64([0])]), b.scalar(samples, "int64")]);
    const u01 = uniform01(b, k0, k1, indexWords(b, count, batch >= 0 ? batch * samples : null, 1, 0), true);
    const u = b.op1("Mul", [b.op1("Reshape", [u01, b.i64([-1, samples])]), total]);
    // cdf[:, None, :classes - 1] against u[:, :, None]
    const head = b.op1("Unsqueeze", [b.op1("Slice", [cdf, b.i64([0]), b.i64([-1]), b.i64([1])]), b.i64([1])]);
    const below = b.op1("Not", [b.op1("Greater", [head, b.op1("Unsqueeze", [u, b.i64([2])])])]);
    const idx = b.op1("ReduceSum", [b.cast(below, "int32"), b.i64([2])], { keepdims: 0 });
    return [b.op1("Reshape", [idx, outShape])];
  },
};
