/**
 * Control flow on batched values (vmap), as JAX batches cond and while_loop:
 *
 * - cond whose predicate is batched (at this level or one below): both branches run on the
 *   batch and the caller's `select` merges them per example (`where`, the [B] predicate
 *   broadcast over each output). A predicate that is symbolic in a trace below (the same for
 *   every example): the cond stays a cond there, its branches run at this level (`atRegion`),
 *   their outputs batched at 0.
 * - whileLoop, eagerly: a JS loop; while the predicate is batched it runs as long as some
 *   example's holds, and each example keeps its state once its own predicate is false
 *   (state = where(pred, body(state), state)), so the trip counts differ per example.
 * - whileLoop over a trace: one while node below. Its loop variables are the batched ones'
 *   values (batch at 0) and the unbatched ones as they are; a variable the body makes batched is
 *   widened and the loop traced again (`Widen`). A batched predicate makes it the masked loop:
 *   the node's condition is any(pred), its body where(pred, body(state), state).
 * - shapeInvariants: a loop whose condition is shared may change its variables' shapes (the
 *   same for every example); a masked one cannot (a finished example keeps its shape): a
 *   ValueError naming the variable.
 *
 * Gradients across the level at a node traced below it: gradient-bridge.ts (each node's
 * `RegionFrame`: the tapes recording outside it, where it is emitted, its promoted values).
 */
import { currentHandler, recorders, withHandler, type OpHandler } from "../core/context.js";
import { ValueError } from "../core/errors.js";
import { mapStructure, type Structure } from "../core/structure.js";
import { Tensor } from "../core/tensor.js";
import { applyOp, getOp } from "../ops/registry.js";
import { batchToFront, materializeBatch } from "../ops/batching.js";
import { toTensor } from "../ops/convert.js";
import { TraceContext } from "../staging/trace-context.js";
import { cond as stagedCond, whileLoop as stagedWhileLoop } from "../staging/control-flow.js";
import { BatchedTensor, isBatchedAt, type BatchLevel } from "./batched-tensor.js";
import { bridgeDown, frameOf, innerTrackers, liftTracked, promoteShared, recordingBelow, regionTapes, type BridgeLevel, type RegionFrame } from "./gradient-bridge.js";

const op = (name: string, xs: Tensor[], attrs: unknown = {}): Tensor => applyOp(getOp(name), xs, attrs as never)[0]!;

/** The unbatched bottom of a (nested) batched value: every example of every level. */
function bottomValue(t: Tensor): Tensor {
  while (t instanceof BatchedTensor) t = t.value;
  return t;
}

/** Whether the handlers below `level` end in a trace (staging) rather than eager execution. */
function tracedBelow(level: BatchLevel): boolean {
  let h: OpHandler = level.outer;
  while ((h as Partial<BatchLevel>).controlFlow !== undefined && (h as BatchLevel).outer !== undefined) h = (h as BatchLevel).outer;
  return h instanceof TraceContext;
}

/**
 * Runs `fn` at `level` inside a region traced below it (a branch or loop body of the handler
 * current now): the level's rules run under that region while `fn` runs.
 */
function atRegion<T>(level: Level, frame: RegionFrame, fn: () => T): T {
  const savedOuter = level.outer;
  level.outer = currentHandler();
  level.frames.push(frame);
  try {
    return withHandler(level, fn);
  } finally {
    level.outer = savedOuter;
    level.frames.pop();
  }
}

/** Runs `fn` under the handler below `level` with `frame` current (a node's operands, lowered where it is emitted). */
function inFrame<T>(level: Level, frame: RegionFrame, fn: () => T): T {
  level.frames.push(frame);
  try {
    return withHandler(level.outer, fn);
  } finally {
    level.frames.pop();
  }
}

/**
 * A value of `level` as a value of the level below, batched at 0 (an unbatched one broadcast).
 * Inside a region, a value from outside it that a tape tracks crosses by a bridge
 * (gradient-bridge.ts), so the node's gradient rule below sees its value tracked.
 */
function lower(level: Level, t: Tensor): Tensor {
  const tapes = regionTapes(level);
  if (tapes !== null) {
    t = promoteShared(level, t);
    bridgeDown(tapes, t, level);
  }
  return isBatchedAt(t, level) ? batchToFront(t.value, t.dim) : materializeBatch(t, null, level.size);
}

/** Runs `fn`, a branch or loop body every example runs whatever its predicate (no variable assignments there). */
function forEveryExample<T>(level: BatchLevel, fn: () => T): T {
  level.everyExample++;
  try {
    return fn();
  } finally {
    level.everyExample--;
  }
}

type Level = BridgeLevel;

export function batchedCond<T>(level: Level, pred: Tensor, thenFn: () => T, elseFn: () => T, select: (pred: Tensor, a: T, b: T) => T): T {
  // per example (batched here or below): both branches, merged by the predicate
  if (pred instanceof BatchedTensor) {
    const [a, b] = forEveryExample(level, () => [thenFn(), elseFn()] as const);
    return select(pred, a, b);
  }
  // the same for every example, symbolic in the trace below: a cond there, branches run here
  const tapes = recorders.slice();
  const frame = frameOf(level, recorders);
  const branch = (fn: () => T) => () =>
    atRegion(level, frame, () => {
      const out = fn();
      return withHandler(level.outer, () => mapStructure(out as Structure<unknown>, (x) => (x instanceof Tensor || typeof x === "number" || typeof x === "boolean" ? lower(level, toTensor(x, "cond")) : x)));
    });
  const out = withHandler(level.outer, () => recordingBelow(level, () => stagedCond(pred, branch(thenFn), branch(elseFn))));
  return mapStructure(out as Structure<unknown>, (x) => (x instanceof Tensor ? liftTracked(tapes, x, level) : x)) as T;
}

/** Per loop variable: the per-example shape it may take (null dims: any), or null (its own, fixed). */
type Invariants = readonly (readonly (number | null)[] | null | undefined)[];

/**
 * A loop variable whose shape changes, in a loop whose condition differs per example: a finished
 * example keeps its state while the others' change shape, and one batched value cannot hold both.
 */
function shapeChangeError(k: number, detail: string): ValueError {
  return new ValueError(
    `loop variable ${k} may change shape (shapeInvariants${detail}) in a loop whose condition differs per example under vmap: a finished example keeps its value while the others' change shape, ` +
      `and one batched value cannot hold both; keep its shape fixed (write rows into a buffer allocated before the loop, with a mask), or make the condition the same for every example`,
    "whileLoop",
  );
}

export function batchedWhile(level: Level, condFn: (...vars: Tensor[]) => Tensor, bodyFn: (...vars: Tensor[]) => Tensor[], init: Tensor[], max: number, inv: Invariants = []): Tensor[] {
  if (!tracedBelow(level)) return eagerWhile(level, condFn, bodyFn, init, max);
  // (a variable a tape inside vmap tracks crosses to the node below by a bridge; a shared one is
  // promoted, batched, so that the node's gradient for it is per example)
  const frame = frameOf(level, recorders);
  // (a variable whose shape may change is batched from the start: one the body batches would be
  // broadcast inside the loop, to a shape not known until it runs)
  let batched = init.map((v, k) => isBatchedAt(v, level) || innerTrackers(frame.tapes, v, level).length > 0 || !!inv[k]);
  let masked = false;
  // each retry widens at least one variable (or turns the loop masked): at most init.length + 1 traces
  for (;;) {
    try {
      return tracedWhile(level, frame, condFn, bodyFn, init, max, batched, masked, inv);
    } catch (e) {
      if (!(e instanceof Widen) || e.level !== level) throw e;
      batched = e.batched;
      masked = e.masked;
    }
  }
}

function where(p: Tensor, a: Tensor, b: Tensor): Tensor {
  return op("where", [p, a, b]);
}

function eagerWhile(level: BatchLevel, condFn: (...vars: Tensor[]) => Tensor, bodyFn: (...vars: Tensor[]) => Tensor[], init: Tensor[], max: number): Tensor[] {
  let vars = init;
  for (let i = 0; i < max; i++) {
    const p = condFn(...vars);
    if (!(p instanceof BatchedTensor)) {
      if (p.dataSync()[0] === 0) break;
      vars = bodyFn(...vars);
      continue;
    }
    // (some example of some level still runs)
    if (!bottomValue(p).dataSync().some((v) => v !== 0)) break;
    const next = forEveryExample(level, () => bodyFn(...vars));
    next.forEach((n, k) => {
      const was = vars[k]!;
      if (n.rank !== was.rank || n.shape.some((d, j) => d !== was.shape[j])) throw shapeChangeError(k, `: [${was.shape.join(", ")}] to [${n.shape.join(", ")}]`);
    });
    vars = next.map((n, k) => where(p, n, vars[k]!));
  }
  return vars;
}

/** Thrown while tracing a batched loop: trace it again with these variables batched. */
class Widen {
  constructor(
    readonly level: BatchLevel,
    readonly batched: boolean[],
    readonly masked: boolean,
  ) {}
}

function tracedWhile(
  level: Level,
  frame: RegionFrame,
  condFn: (...vars: Tensor[]) => Tensor,
  bodyFn: (...vars: Tensor[]) => Tensor[],
  init: Tensor[],
  max: number,
  batched: boolean[],
  masked: boolean,
  inv: Invariants,
): Tensor[] {
  if (masked) {
    const k = inv.findIndex((s) => s !== null && s !== undefined);
    if (k >= 0) throw shapeChangeError(k, ` [${inv[k]!.map((d) => (d === null ? "null" : String(d))).join(", ")}]`);
  }
  const tapes = recorders.slice();
  const lift = (xs: Tensor[]) => xs.map((x, k) => (batched[k] ? new BatchedTensor(x, 0, level) : x));
  const vals = inFrame(level, frame, () => init.map((v, k) => (batched[k] ? lower(level, v) : v)));
  const cond = (...xs: Tensor[]): Tensor =>
    atRegion(level, frame, () => {
      const p = condFn(...lift(xs));
      if (!isBatchedAt(p, level)) return p;
      if (!masked) throw new Widen(level, batched.map(() => true), true);
      // (the node runs while some example's predicate holds)
      const all = batchToFront(p.value, p.dim);
      return withHandler(level.outer, () => op("any", [all], { axes: all.shape.map((_, i) => i), keepDims: false }));
    });
  const body = (...xs: Tensor[]): Tensor[] =>
    atRegion(level, frame, () => {
      const vs = lift(xs);
      let next = masked ? forEveryExample(level, () => bodyFn(...vs)) : bodyFn(...vs);
      if (masked) {
        const p = condFn(...vs);
        next = next.map((n, k) => where(p, n, vs[k]!));
      }
      const widen = next.map((n, k) => batched[k] || isBatchedAt(n, level));
      if (widen.some((w, k) => w !== batched[k])) throw new Widen(level, widen, masked);
      return withHandler(level.outer, () => next.map((n, k) => (batched[k] ? lower(level, n) : n)));
    });
  // (a batched variable's shape below has the batch in front)
  const shapeInvariants = inv.some((x) => x) ? init.map((_, k) => (inv[k] ? (batched[k] ? [level.size, ...inv[k]!] : inv[k]!) : null)) : undefined;
  const options = { ...(Number.isFinite(max) ? { maxIterations: max } : {}), ...(shapeInvariants ? { shapeInvariants } : {}) };
  const out = withHandler(level.outer, () => recordingBelow(level, () => stagedWhileLoop(cond, body, vals, options)));
  return out.map((x, k) => (batched[k] ? liftTracked(tapes, x, level) : x));
}
