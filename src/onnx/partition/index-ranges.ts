/**
 * Value ranges of a graph's integer tensors, for the index checks of index-guard.ts: an interval
 * [lo, hi] that holds every element of a value, whatever the graph's inputs are (unless `seeds`
 * says more about some values). An index op whose indices are known in range needs no check.
 *
 * What gives a known range: constants and fills, range (iota), argMax/argMin ([0, n) over an
 * axis of size n), bools; what keeps or combines one: casts that hold every value, the ops that
 * move or select elements (reshape, slice, unstack, concat, stack, the iteration stacks, and a
 * gather's values, which are its data's: an index out of range is refused on onnxruntime, so no
 * other value comes out), where, minimum/maximum/clip, add/sub/mul/neg/abs, mod by a divisor of known sign; loops: a loop
 * variable holds its initial value's range joined with what the body makes of it, found by
 * iterating (widened to the dtype's whole range when it keeps growing), and inside the body it is
 * narrowed by the loop's condition (`t < n`: t <= hi(n) - 1). Anything else: the dtype's range.
 *
 * Soundness against onnxruntime's arithmetic: a bound past the dtype's range (int32 wraps) gives
 * the whole range; int64 bounds past 2^52 give the whole range too (JS numbers lose exactness
 * there). Float values have no range here.
 */
import type { DType } from "../../core/dtype.js";
import type { Graph, Node, Value } from "../../graph/ir.js";

/** Every element of a value lies in [lo, hi] (integers; lo > hi: no elements). */
export interface Interval {
  lo: number;
  hi: number;
}

export type Ranges = Map<Value, Interval>;

/** The ranges found so far, and those known beforehand (a value's range is what is found, narrowed by its seed). */
interface State {
  env: Ranges;
  seeds: Ranges;
}

function record(st: State, v: Value, r: Interval | null): void {
  const s = st.seeds.get(v);
  const f = r === null ? null : fit(r, v.type.dtype);
  if (f === null) {
    if (s !== undefined) st.env.set(v, s);
    else st.env.delete(v);
  } else st.env.set(v, s === undefined ? f : { lo: Math.max(f.lo, s.lo), hi: Math.min(f.hi, s.hi) });
}

const EMPTY: Interval = { lo: Infinity, hi: -Infinity };

/** The dtype's whole range as onnxruntime computes it (int64 as 64-bit integers); null for floats. */
export function dtypeInterval(d: DType): Interval | null {
  switch (d) {
    case "bool": return { lo: 0, hi: 1 };
    case "int8": return { lo: -128, hi: 127 };
    case "int16": return { lo: -32768, hi: 32767 };
    case "int32": return { lo: -(2 ** 31), hi: 2 ** 31 - 1 };
    case "int64": return { lo: -(2 ** 63), hi: 2 ** 63 };
    case "uint8": return { lo: 0, hi: 255 };
    case "uint16": return { lo: 0, hi: 65535 };
    case "uint32": return { lo: 0, hi: 2 ** 32 - 1 };
    case "uint64": return { lo: 0, hi: 2 ** 64 };
    default: return null;
  }
}

export const isEmpty = (r: Interval) => r.lo > r.hi;
const union = (a: Interval, b: Interval): Interval => ({ lo: Math.min(a.lo, b.lo), hi: Math.max(a.hi, b.hi) });
const same = (a: Interval, b: Interval) => a.lo === b.lo && a.hi === b.hi;

/** `r` as a value of dtype `d` can hold it: r itself, or the dtype's whole range where r leaves it (wrapping) or is inexact. */
function fit(r: Interval, d: DType): Interval | null {
  const full = dtypeInterval(d);
  if (full === null) return null;
  if (isEmpty(r)) return r;
  if (Number.isNaN(r.lo) || Number.isNaN(r.hi) || r.lo < full.lo || r.hi > full.hi) return full;
  if (Math.abs(r.lo) > 2 ** 52 || Math.abs(r.hi) > 2 ** 52) return full;
  return r;
}

/** The range of `v` in `env` (its dtype's whole range when nothing is known); null for floats. */
export function rangeOf(env: Ranges, v: Value): Interval | null {
  return env.get(v) ?? dtypeInterval(v.type.dtype);
}

/** Ops whose output values are some of input 0's values (moved, selected, reshaped). */
export const SELECTS_INPUT0: ReadonlySet<string> = new Set([
  "identity", "stopGradient", "reshape", "squeeze", "expandDims", "transpose", "broadcastTo", "tile", "flip", "slice",
  "unstack", "split", "gather", "gatherND", "gatherElements", "stackRead", "stackPop",
]);
/** Ops whose output values are some of all their inputs' values. */
export const SELECTS_ALL: ReadonlySet<string> = new Set(["concat", "stack", "stackPush"]);

function numbers(xs: unknown): number[] | null {
  if (!Array.isArray(xs) && !ArrayBuffer.isView(xs)) return null;
  const out: number[] = [];
  for (const x of Array.from(xs as ArrayLike<unknown>)) {
    if (typeof x !== "number" || !Number.isFinite(x)) return null;
    out.push(x);
  }
  return out;
}

function ofValues(vals: number[] | null): Interval | null {
  if (vals === null) return null;
  let lo = Infinity, hi = -Infinity;
  for (const x of vals) {
    // (outward: a fractional value stored in an integer dtype is truncated)
    lo = Math.min(lo, Math.floor(x));
    hi = Math.max(hi, Math.ceil(x));
  }
  return { lo, hi };
}

/** The intervals of a plain (non-structural) node's outputs, from its inputs' (null: the dtype's range). */
function transfer(n: Node, ins: (Interval | null)[]): (Interval | null)[] {
  const one = (r: Interval | null): (Interval | null)[] => n.outputs.map(() => r);
  const [a, b, c] = ins;
  const all = ins.every((r) => r !== null);
  const anyEmpty = ins.some((r) => r !== null && isEmpty(r));
  if (SELECTS_INPUT0.has(n.op)) return one(a ?? null);
  if (SELECTS_ALL.has(n.op)) return one(all ? ins.reduce((x, y) => union(x!, y!), EMPTY)! : null);
  switch (n.op) {
    case "constant": return one(ofValues(numbers(n.attrs.values)));
    case "fill": return one(ofValues(numbers([n.attrs.value])));
    case "emptyStack": return one(EMPTY);
    case "range": {
      const { start, step, size } = n.attrs as { start: number; step: number; size: number };
      if (size === 0) return one(EMPTY);
      return one(ofValues(numbers([start, start + (size - 1) * step])));
    }
    case "argMax":
    case "argMin": {
      const axis = n.attrs.axis as number | null;
      const shape = n.inputs[0]!.type.shape;
      const size = axis === null ? (shape.every((d) => d >= 0) ? shape.reduce((p, d) => p * d, 1) : -1) : shape[axis] ?? -1;
      return one(size > 0 ? { lo: 0, hi: size - 1 } : { lo: 0, hi: Infinity });
    }
    case "cast": return one(a ?? null);
    case "where": return one(b !== null && c !== null ? union(b!, c!) : null);
  }
  if (!all) return one(null);
  if (anyEmpty) return one(EMPTY);
  const x = a!, y = b!;
  switch (n.op) {
    case "add": return one({ lo: x.lo + y.lo, hi: x.hi + y.hi });
    case "sub": return one({ lo: x.lo - y.hi, hi: x.hi - y.lo });
    case "mul": {
      const p = [x.lo * y.lo, x.lo * y.hi, x.hi * y.lo, x.hi * y.hi];
      return one({ lo: Math.min(...p), hi: Math.max(...p) });
    }
    // (ours and its export: a - floor(a / b) * b, the divisor's sign; exact while |a| < 2^52,
    // past which float64's a / b could round across an integer)
    case "mod": {
      if (Math.max(Math.abs(x.lo), Math.abs(x.hi)) >= 2 ** 52) return one(null);
      if (y.lo > 0) return one(x.lo >= 0 && x.hi < y.lo ? x : { lo: 0, hi: y.hi - 1 });
      if (y.hi < 0) return one(x.hi <= 0 && x.lo > y.hi ? x : { lo: y.lo + 1, hi: 0 });
      return one(null);
    }
    case "neg": return one({ lo: -x.hi, hi: -x.lo });
    case "abs": return one(x.lo >= 0 ? x : x.hi <= 0 ? { lo: -x.hi, hi: -x.lo } : { lo: 0, hi: Math.max(-x.lo, x.hi) });
    case "maximum": return one({ lo: Math.max(x.lo, y.lo), hi: Math.max(x.hi, y.hi) });
    case "minimum": return one({ lo: Math.min(x.lo, y.lo), hi: Math.min(x.hi, y.hi) });
    // (NumPy's clip: max(x, lo) then min(., hi), lo > hi giving hi)
    case "clip": return one(c === undefined ? null : { lo: Math.min(Math.max(x.lo, y.lo), c!.lo), hi: Math.min(Math.max(x.hi, y.hi), c!.hi) });
  }
  return one(null);
}

/** Computes the ranges of `g`'s values (its regions' too) into `env`; `inputs`: the ranges of g's inputs (default: their dtypes'). */
function analyze(g: Graph, st: State, inputs?: (Interval | null)[]): void {
  const { env } = st;
  g.inputs.forEach((v, i) => record(st, v, inputs?.[i] ?? null));
  for (const n of g.nodes) {
    let outs: (Interval | null)[];
    if (n.op === "while") outs = analyzeWhile(n, st);
    else if (n.op === "cond") {
      const ins = n.inputs.slice(1).map((v) => rangeOf(env, v));
      const [th, el] = n.regions as [Graph, Graph];
      analyze(th, st, ins);
      analyze(el, st, ins);
      outs = n.outputs.map((_, k) => {
        const x = rangeOf(env, th.outputs[k]!), y = rangeOf(env, el.outputs[k]!);
        return x !== null && y !== null ? union(x, y) : null;
      });
    } else if (n.regions.length > 0 || n.op === "call") outs = n.outputs.map(() => null);
    else outs = transfer(n, n.inputs.map((v) => rangeOf(env, v)));
    n.outputs.forEach((v, k) => record(st, v, outs[k] ?? null));
  }
}

/**
 * A while node: its loop variables' ranges (initial value joined with the body's results, to a
 * fixed point; widened to the dtype's range after a few rounds), the body analyzed with them as
 * narrowed by the condition. Returns the node's outputs' ranges.
 */
function analyzeWhile(n: Node, st: State): (Interval | null)[] {
  const { env } = st;
  const [condR, body] = n.regions as [Graph, Graph];
  const numVars = n.attrs.numLoopVars as number;
  let vars = n.inputs.map((v) => rangeOf(env, v));
  for (let round = 0; ; round++) {
    analyze(condR, st, vars);
    const narrowed = narrowByCondition(condR, env, vars);
    analyze(body, st, narrowed);
    let changed = false;
    const next = vars.map((r, k) => {
      if (k >= numVars || r === null) return r;
      const out = rangeOf(env, body.outputs[k]!);
      // (no range for the body's result: none for the variable either, and another round with that)
      if (out === null) {
        changed = true;
        return null;
      }
      let j = union(r, out);
      if (!same(j, r)) {
        changed = true;
        // (still growing after a few rounds: the dtype's range on the growing side)
        if (round >= 3) {
          const full = dtypeInterval(n.inputs[k]!.type.dtype)!;
          j = { lo: j.lo < r.lo ? full.lo : j.lo, hi: j.hi > r.hi ? full.hi : j.hi };
        }
      }
      return j;
    });
    if (!changed) break;
    vars = next;
  }
  return n.outputs.map((_, k) => vars[k] ?? null);
}

/** The loop's variables' ranges where its condition holds: `x < y`, `x <= y`, `x > y`, `x >= y` (either side a variable) and `a && b` narrow them. */
function narrowByCondition(condR: Graph, env: Ranges, vars: (Interval | null)[]): (Interval | null)[] {
  const out = vars.slice();
  const narrow = (v: Value, lo: number, hi: number) => {
    if (v.producer !== null || condR.inputs[v.index] !== v) return;
    const r = out[v.index];
    if (r === null || r === undefined) return;
    out[v.index] = { lo: Math.max(r.lo, lo), hi: Math.min(r.hi, hi) };
  };
  const visit = (b: Value) => {
    const p = b.producer;
    if (p === null) return;
    if (p.op === "logicalAnd") return p.inputs.forEach(visit);
    const [x, y] = p.inputs as [Value, Value];
    const rx = rangeOf(env, x), ry = rangeOf(env, y);
    if (rx === null || ry === null) return;
    // (x < y: x <= hi(y) - 1 and y >= lo(x) + 1; integers)
    const lt = (s: Value, rs: Interval, t: Value, rt: Interval, strict: number) => {
      narrow(s, -Infinity, rt.hi - strict);
      narrow(t, rs.lo + strict, Infinity);
    };
    if (p.op === "less") lt(x, rx, y, ry, 1);
    else if (p.op === "lessEqual") lt(x, rx, y, ry, 0);
    else if (p.op === "greater") lt(y, ry, x, rx, 1);
    else if (p.op === "greaterEqual") lt(y, ry, x, rx, 0);
  };
  visit(condR.outputs[0]!);
  return out;
}

/** The ranges of `g`'s integer values (regions included); `seeds`: ranges known for some values (checked ones: index-guard.ts). */
export function valueRanges(g: Graph, seeds: Ranges = new Map()): Ranges {
  const env: Ranges = new Map();
  analyze(g, { env, seeds });
  return env;
}
