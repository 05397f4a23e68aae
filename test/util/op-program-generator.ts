/**
 * Seeded random tensor programs for the export fuzzer (test/onnx/export-fuzz.test.ts): a few
 * steps of shape-keeping ops (elementwise, selects, sorts, scans, softmax) over one or two inputs
 * of one shape, then an output of the last value and, often, a reduction of some value. Inputs
 * are drawn with NaN, ±Infinity and ±0 in a share of their entries, and some programs have an
 * empty input (a dim of 0).
 *
 * Each value records whether it is exact: computed only by ops whose results are correctly
 * rounded (add, mul, sqrt, max, ...), so two implementations agree bit for bit. Ops that are
 * discontinuous in their input (floor, sign, comparisons, arg-max) are applied to exact values
 * only: on a value that differs in its last bit between implementations they could differ by a
 * whole step, which says nothing about either's semantics. The comparison is exact for exact
 * values and within a tolerance for the others; NaN equals NaN and -0 differs from +0 in both.
 */
import * as sc from "../../src/api/index.js";
import type { Rng } from "./rng.js";

type T = sc.Tensor;

interface OpEntry {
  name: string;
  arity: 1 | 2;
  /** The result is exact when its inputs are (correctly rounded ops). */
  exact: boolean;
  /** Discontinuous: only applied to exact inputs. */
  needsExact?: boolean;
  /** Takes an axis (drawn from the input's rank). */
  axis?: boolean;
  apply(xs: T[], axis: number): T;
}

/** Shape-keeping ops (the program's steps). */
const STEPS: OpEntry[] = [
  { name: "neg", arity: 1, exact: true, apply: ([x]) => sc.neg(x!) },
  { name: "abs", arity: 1, exact: true, apply: ([x]) => sc.abs(x!) },
  { name: "relu", arity: 1, exact: true, apply: ([x]) => sc.relu(x!) },
  { name: "square", arity: 1, exact: true, apply: ([x]) => sc.square(x!) },
  { name: "sqrt", arity: 1, exact: true, apply: ([x]) => sc.sqrt(x!) },
  { name: "reciprocal", arity: 1, exact: true, apply: ([x]) => sc.reciprocal(x!) },
  { name: "times -0.5", arity: 1, exact: true, apply: ([x]) => sc.mul(x!, -0.5) },
  { name: "plus 1", arity: 1, exact: true, apply: ([x]) => sc.add(x!, 1) },
  { name: "clip", arity: 1, exact: true, apply: ([x]) => sc.clip(x!, -1, 1) },
  { name: "maximum with 0", arity: 1, exact: true, apply: ([x]) => sc.maximum(x!, 0) },
  { name: "minimum with 0", arity: 1, exact: true, apply: ([x]) => sc.minimum(x!, 0) },
  { name: "floor", arity: 1, exact: true, needsExact: true, apply: ([x]) => sc.floor(x!) },
  { name: "ceil", arity: 1, exact: true, needsExact: true, apply: ([x]) => sc.ceil(x!) },
  { name: "round", arity: 1, exact: true, needsExact: true, apply: ([x]) => sc.round(x!) },
  { name: "sign", arity: 1, exact: true, needsExact: true, apply: ([x]) => sc.sign(x!) },
  { name: "exp", arity: 1, exact: false, apply: ([x]) => sc.exp(x!) },
  { name: "log", arity: 1, exact: false, apply: ([x]) => sc.log(x!) },
  { name: "tanh", arity: 1, exact: false, apply: ([x]) => sc.tanh(x!) },
  { name: "sigmoid", arity: 1, exact: false, apply: ([x]) => sc.sigmoid(x!) },
  { name: "sin", arity: 1, exact: false, apply: ([x]) => sc.sin(x!) },
  { name: "atan", arity: 1, exact: false, apply: ([x]) => sc.atan(x!) },
  { name: "leakyRelu", arity: 1, exact: false, apply: ([x]) => sc.leakyRelu(x!) },
  { name: "elu", arity: 1, exact: false, apply: ([x]) => sc.elu(x!) },
  { name: "softplus", arity: 1, exact: false, apply: ([x]) => sc.softplus(x!) },
  { name: "add", arity: 2, exact: true, apply: ([a, b]) => sc.add(a!, b!) },
  { name: "sub", arity: 2, exact: true, apply: ([a, b]) => sc.sub(a!, b!) },
  { name: "mul", arity: 2, exact: true, apply: ([a, b]) => sc.mul(a!, b!) },
  { name: "div", arity: 2, exact: true, apply: ([a, b]) => sc.div(a!, b!) },
  { name: "maximum", arity: 2, exact: true, apply: ([a, b]) => sc.maximum(a!, b!) },
  { name: "minimum", arity: 2, exact: true, apply: ([a, b]) => sc.minimum(a!, b!) },
  { name: "where a > b", arity: 2, exact: true, needsExact: true, apply: ([a, b]) => sc.where(sc.greater(a!, b!), a!, b!) },
  { name: "where isNaN", arity: 2, exact: true, apply: ([a, b]) => sc.where(sc.isNaN(a!), b!, a!) },
  { name: "sort", arity: 1, exact: true, axis: true, apply: ([x], axis) => sc.sort(x!, { axis }) },
  { name: "sort descending", arity: 1, exact: true, axis: true, apply: ([x], axis) => sc.sort(x!, { axis, descending: true }) },
  { name: "flip", arity: 1, exact: true, axis: true, apply: ([x], axis) => sc.flip(x!, axis) },
  { name: "cumsum", arity: 1, exact: false, axis: true, apply: ([x], axis) => sc.cumsum(x!, axis) },
  { name: "softmax", arity: 1, exact: false, axis: true, apply: ([x], axis) => sc.softmax(x!, axis) },
  { name: "logSoftmax", arity: 1, exact: false, axis: true, apply: ([x], axis) => sc.logSoftmax(x!, axis) },
];

/** Reductions (an extra output). */
const FINALS: OpEntry[] = [
  { name: "sum", arity: 1, exact: false, axis: true, apply: ([x], axis) => sc.sum(x!, axis) },
  { name: "mean", arity: 1, exact: false, axis: true, apply: ([x], axis) => sc.mean(x!, axis) },
  { name: "prod", arity: 1, exact: false, axis: true, apply: ([x], axis) => sc.prod(x!, axis) },
  { name: "max", arity: 1, exact: true, axis: true, apply: ([x], axis) => sc.max(x!, axis) },
  { name: "min", arity: 1, exact: true, axis: true, apply: ([x], axis) => sc.min(x!, axis, true) },
  { name: "max of all", arity: 1, exact: true, apply: ([x]) => sc.max(x!) },
  { name: "logSumExp", arity: 1, exact: false, axis: true, apply: ([x], axis) => sc.logSumExp(x!, axis) },
  { name: "argMax", arity: 1, exact: true, needsExact: true, axis: true, apply: ([x], axis) => sc.argMax(x!, axis) },
  { name: "argMin", arity: 1, exact: true, needsExact: true, axis: true, apply: ([x], axis) => sc.argMin(x!, axis) },
];

export interface Step {
  op: string;
  args: number[];
  axis: number;
}

export interface OpProgram {
  id: number;
  dtype: "float32" | "float64";
  shape: number[];
  inputs: number;
  steps: Step[];
  /** The reduction output's step (over `args[0]`), if any. */
  final: Step | null;
  /** Which outputs are exact (see the file comment). */
  exact: boolean[];
  /**
   * Which outputs must keep the sign of a zero: all but a sum or mean over an axis other than the
   * last, which onnxruntime starts at +0 (an allowed difference, docs/onnx.md "Special values").
   */
  signedZeros: boolean[];
}

/** Reductions whose exported form gives +0 for a group of -0s along an axis other than the last. */
const UNSIGNED_ZERO_SUMS = new Set(["sum", "mean"]);

const byName = new Map([...STEPS, ...FINALS].map((e) => [e.name, e]));
const pick = <X>(rng: Rng, xs: readonly X[]): X => xs[rng.int(0, xs.length)]!;

/** One program: shape and dtype, 1-6 steps, the output(s). `emptyShare` of programs have a dim of 0. */
export function generateOpProgram(rng: Rng, id: number, emptyShare: number): OpProgram {
  const rank = rng.int(1, 4);
  const shape = Array.from({ length: rank }, () => rng.int(1, 5));
  if (rng.next() < emptyShare) shape[rng.int(0, rank)] = 0;
  const inputs = rng.int(1, 3);
  const exact: boolean[] = Array.from({ length: inputs }, () => true);
  const steps: Step[] = [];
  for (let s = rng.int(1, 7); s > 0; s--) {
    const e = pick(rng, STEPS);
    const pool = exact.map((_, i) => i).filter((i) => !e.needsExact || exact[i]);
    if (pool.length === 0) continue;
    const args = Array.from({ length: e.arity }, () => pick(rng, pool));
    steps.push({ op: e.name, args, axis: e.axis ? rng.int(0, rank) : 0 });
    exact.push(e.exact && args.every((a) => exact[a]));
  }
  let final: Step | null = null;
  const outExact = [exact[exact.length - 1]!];
  const signedZeros = [true];
  if (rng.next() < 0.7) {
    const e = pick(rng, FINALS);
    const pool = exact.map((_, i) => i).filter((i) => !e.needsExact || exact[i]);
    const arg = pick(rng, pool);
    final = { op: e.name, args: [arg], axis: e.axis ? rng.int(0, rank) : 0 };
    outExact.push(e.exact && exact[arg]!);
    signedZeros.push(!(UNSIGNED_ZERO_SUMS.has(e.name) && final.axis !== rank - 1));
  }
  return { id, dtype: rng.next() < 0.7 ? "float32" : "float64", shape, inputs, steps, final, exact: outExact, signedZeros };
}

/** The program as a function of its inputs (its outputs: the last value, then the reduction). */
export function programFunction(p: OpProgram): (...xs: T[]) => T[] {
  return (...xs: T[]) => {
    const values = [...xs];
    for (const s of p.steps) values.push(byName.get(s.op)!.apply(s.args.map((a) => values[a]!), s.axis));
    const outs = [values[values.length - 1]!];
    if (p.final) outs.push(byName.get(p.final.op)!.apply([values[p.final.args[0]!]!], p.final.axis));
    return outs;
  };
}

/** A readable form of the program, for a failure's report. */
export function describeProgram(p: OpProgram): string {
  const name = (i: number) => (i < p.inputs ? `x${i}` : `v${i}`);
  const lines = p.steps.map((s, k) => `${name(p.inputs + k)} = ${s.op}(${s.args.map(name).join(", ")}${byName.get(s.op)!.axis ? `, axis ${s.axis}` : ""})`);
  if (p.final) lines.push(`out = ${p.final.op}(${name(p.final.args[0]!)}${byName.get(p.final.op)!.axis ? `, axis ${p.final.axis}` : ""})`);
  return `program ${p.id}: ${p.dtype}[${p.shape.join(", ")}] x ${p.inputs}; ${lines.join("; ")}`;
}

export const SPECIALS = [NaN, Infinity, -Infinity, -0, 0] as const;

/**
 * Inputs for one run: values in [-3, 3) (multiples of 1/8: exact in both dtypes), with each
 * entry a special value (NaN, ±Infinity, ±0) with probability `specialShare`. Returns the
 * tensors and how many special entries they hold.
 */
export function programInputs(rng: Rng, p: OpProgram, specialShare: number): { xs: T[]; specials: number } {
  const size = p.shape.reduce((a, b) => a * b, 1);
  let specials = 0;
  const xs = Array.from({ length: p.inputs }, () =>
    sc.tensor(
      Array.from({ length: size }, () => {
        if (rng.next() < specialShare) {
          specials++;
          return pick(rng, SPECIALS);
        }
        return rng.int(-24, 24) / 8;
      }),
      p.dtype,
      p.shape,
    ),
  );
  return { xs, specials };
}
