/**
 * The CPU's WebAssembly SIMD rendering of elementwise expressions (core/expr.ts) for float32
 * loops: code leaving four float32 results on the stack (an f32x4), bit-identical to evaluating
 * the expression in float64 as JavaScript does and storing the result into a Float32Array.
 *
 * How the lanes stay exact, node by node:
 * - "exact" values are float32 values whatever precision computes them: the operands, float32
 *   constants, their negation and absolute value, floor and ceil of them, and selections
 *   between exact values;
 * - "rounded" values are exact once rounded to float32, and only the final store (or a select,
 *   negation or absolute value on the way to it, which commute with that rounding) sees them:
 *   one add, sub, mul, div or sqrt of exact operands (IEEE float32 arithmetic on float32
 *   operands is the float64 result correctly rounded), or a constant that float32 cannot hold;
 * - comparisons of exact values are float32 comparisons (masks);
 * - anything else (an operation on a rounded value: `1 / sqrt(x)`, `(a - b) * (a - b)`, the
 *   rational of tanh's float32 form) is evaluated in float64x2 lanes, the same operations in
 *   the same order as JavaScript, and rounded to float32 once, where its value leaves float64.
 * Functions outside arithmetic, comparisons, logic and selection (exp, log, erf, ...) have no
 * SIMD form: `simdRenderable` says no and the executor keeps the JavaScript loop.
 *
 * Subexpressions the tree shares (the same node object used twice, as tanh's x*x) are computed
 * once per lane group into a local.
 */
import type { Expr } from "../../../core/expr.js";
import { get, set, simd, SIMD_OP } from "./bytes.js";

type Kind = "exact" | "rounded" | "mask" | "f64" | "f64mask";

const ARITHMETIC = new Set(["add", "sub", "mul", "div"]);
const COMPARISON = new Set(["eq", "ne", "lt", "le", "gt", "ge"]);
const isValue = (k: Kind) => k === "exact" || k === "rounded" || k === "f64";
const isMask = (k: Kind) => k === "mask" || k === "f64mask";

/** How each node is computed, or null when the expression has no SIMD form. */
function plan(root: Expr): Map<Expr, Kind> | null {
  const kinds = new Map<Expr, Kind>();
  const visit = (e: Expr): Kind | null => {
    const known = kinds.get(e);
    if (known) return known;
    const k = kindOf(e, visit);
    if (k === null) return null;
    kinds.set(e, k);
    return k;
  };
  const k = visit(root);
  return k !== null && isValue(k) ? kinds : null;
}

function kindOf(e: Expr, visit: (e: Expr) => Kind | null): Kind | null {
  switch (e.kind) {
    case "input":
      return "exact";
    case "const":
      return Number.isNaN(e.value) || Math.fround(e.value) === e.value ? "exact" : "rounded";
    case "attr":
      return null;
    case "apply": {
      const ks: Kind[] = [];
      for (const a of e.args) {
        const k = visit(a);
        if (k === null) return null;
        ks.push(k);
      }
      const allValues = ks.every(isValue);
      const allExact = ks.every((k) => k === "exact");
      if (e.fn === "neg" || e.fn === "abs") return allValues ? ks[0]! : null;
      if (ARITHMETIC.has(e.fn) || e.fn === "sqrt") return !allValues ? null : allExact ? "rounded" : "f64";
      if (e.fn === "floor" || e.fn === "ceil") return !allValues ? null : allExact ? "exact" : "f64";
      if (COMPARISON.has(e.fn)) return !allValues ? null : allExact ? "mask" : "f64mask";
      if (e.fn === "and" || e.fn === "or" || e.fn === "not") return !ks.every(isMask) ? null : ks.every((k) => k === "mask") ? "mask" : "f64mask";
      if (e.fn === "select") {
        const [c, t, f] = ks as [Kind, Kind, Kind];
        if (!isMask(c) || !isValue(t) || !isValue(f)) return null;
        if (c === "f64mask") return "f64";
        return t === "exact" && f === "exact" ? "exact" : "rounded";
      }
      return null;
    }
  }
}

/** Whether `e` (attributes bound) has a SIMD form. */
export function simdRenderable(e: Expr): boolean {
  return plan(e) !== null;
}

const OP = SIMD_OP;
const op = (code: number) => simd(code);
const v128const = (bytes: Uint8Array) => simd(OP.v128const, ...bytes);
const f32x4c = (v: number) => v128const(new Uint8Array(new Float32Array([v, v, v, v]).buffer));
const f64x2c = (v: number) => v128const(new Uint8Array(new Float64Array([v, v]).buffer));
/** bytes 8..15 of the first operand, twice: the upper two float32 lanes moved down */
const HIGH_HALF = simd(OP.shuffle, 8, 9, 10, 11, 12, 13, 14, 15, 8, 9, 10, 11, 12, 13, 14, 15);
/** the low 8 bytes of each operand: [a0, a1, b0, b1] */
const LOW_HALVES = simd(OP.shuffle, 0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23);

const F32_OPS: Record<string, number> = {
  neg: OP.f32x4neg, abs: OP.f32x4abs, sqrt: OP.f32x4sqrt, floor: OP.f32x4floor, ceil: OP.f32x4ceil,
  add: OP.f32x4add, sub: OP.f32x4sub, mul: OP.f32x4mul, div: OP.f32x4div,
  eq: OP.f32x4eq, ne: OP.f32x4ne, lt: OP.f32x4lt, le: OP.f32x4le, gt: OP.f32x4gt, ge: OP.f32x4ge,
};
const F64_OPS: Record<string, number> = {
  neg: OP.f64x2neg, abs: OP.f64x2abs, sqrt: OP.f64x2sqrt, floor: OP.f64x2floor, ceil: OP.f64x2ceil,
  add: OP.f64x2add, sub: OP.f64x2sub, mul: OP.f64x2mul, div: OP.f64x2div,
  eq: OP.f64x2eq, ne: OP.f64x2ne, lt: OP.f64x2lt, le: OP.f64x2le, gt: OP.f64x2gt, ge: OP.f64x2ge,
};
const LOGIC: Record<string, number> = { and: OP.and, or: OP.or, not: OP.not };

/**
 * Code leaving the f32x4 value of `e` on the stack. `operand(i)` is the v128 local holding
 * operand i (four float32 lanes); `newLocal()` gives a fresh v128 scratch local.
 */
export function simdCode(e: Expr, operand: (i: number) => number, newLocal: () => number): number[] {
  const kinds = plan(e);
  if (!kinds) throw new Error("internal: this expression has no SIMD form");
  const uses = new Map<Expr, number>();
  const count = (x: Expr) => {
    uses.set(x, (uses.get(x) ?? 0) + 1);
    if (uses.get(x) === 1 && x.kind === "apply") x.args.forEach(count);
  };
  count(e);
  /** Locals of shared nodes, per lane group ("32", "64:0", "64:1"). */
  const cached = new Map<string, Map<Expr, number>>();
  const memo = (group: string, x: Expr, code: () => number[]): number[] => {
    const shared = x.kind === "input" ? group !== "32" : (uses.get(x) ?? 0) > 1 && x.kind === "apply";
    if (!shared) return code();
    let m = cached.get(group);
    if (!m) cached.set(group, (m = new Map()));
    const local = m.get(x);
    if (local !== undefined) return get(local);
    const l = newLocal();
    m.set(x, l);
    return [...code(), ...set(l), ...get(l)];
  };

  /** float32 lanes of an exact, rounded or mask node (f64 value nodes are demoted). */
  const f32 = (x: Expr): number[] =>
    memo("32", x, () => {
      const k = kinds.get(x)!;
      if (k === "f64") return demoted(x);
      if (x.kind === "input") return get(operand(x.index));
      if (x.kind === "const") return f32x4c(Math.fround(x.value));
      if (x.kind !== "apply") throw new Error("internal: unbound attribute");
      if (x.fn === "select") return [...f32(x.args[1]!), ...f32(x.args[2]!), ...f32(x.args[0]!), ...op(OP.bitselect)];
      const code = x.args.flatMap(f32);
      return [...code, ...op(LOGIC[x.fn] ?? F32_OPS[x.fn]!)];
    });

  /** float64 lanes (half 0: lanes 0-1, half 1: lanes 2-3) of any node. */
  const f64 = (x: Expr, half: 0 | 1): number[] =>
    memo(`64:${half}`, x, () => {
      if (x.kind === "input") return [...get(operand(x.index)), ...(half === 1 ? [...get(operand(x.index)), ...HIGH_HALF] : []), ...op(OP.promote)];
      if (x.kind === "const") return f64x2c(x.value);
      if (x.kind !== "apply") throw new Error("internal: unbound attribute");
      if (x.fn === "select") return [...f64(x.args[1]!, half), ...f64(x.args[2]!, half), ...f64(x.args[0]!, half), ...op(OP.bitselect)];
      const code = x.args.flatMap((a) => f64(a, half));
      return [...code, ...op(LOGIC[x.fn] ?? F64_OPS[x.fn]!)];
    });

  /** A node evaluated in float64 on both halves, each rounded to float32, the halves joined. */
  const demoted = (x: Expr): number[] => [...f64(x, 0), ...op(OP.demote), ...f64(x, 1), ...op(OP.demote), ...LOW_HALVES];

  return f32(e);
}
