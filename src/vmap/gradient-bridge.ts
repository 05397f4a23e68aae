/**
 * Gradients across a vmap level (grad inside vmap, staged, through a cond or while node traced
 * below the level). The tape inside vmap tracks batched values (BatchedTensor), but a structural
 * node is emitted below the level, on their values, which that tape does not track: the node's
 * gradient rule (graph AD) would see untracked inputs and the gradient would be lost. So the
 * crossing is recorded on the tape as entries, which are the only places batched values and
 * their values below meet:
 *
 * - down (`t` -> `t.value`): the value below is tracked; its cotangent (a tensor below, batch at
 *   `t.dim`) is the cotangent of `t` at the level, batched at that axis;
 * - up (a value below, batch at `dim` -> the level's batched value): the level's cotangent,
 *   crossed down to axis `dim` below;
 * - promote (`p`, the same for every example -> `P`, batched, its value `p` broadcast over the
 *   batch below): a value shared by every example that the tape differentiates with respect to
 *   and that a node below uses. Used as it is, the node's gradient for it would be the batch's
 *   total; broadcast, the node's gradient for its value is one row per example, and `P`'s
 *   cotangent (each example's) is `p`'s: per-example gradients, as JAX's
 *   vmap(grad(f), in_axes=(None, 0)). The broadcast is computed where the outermost node that
 *   needs it is emitted (`RegionFrame.scope`), so every enclosing node captures it, not `p`.
 *
 * The node's own gradient then is graph AD's, below the level, on the whole batch (for a masked
 * loop: the gradient of `where(pred, body, state)` iterated, so a finished example's gradient
 * passes through unchanged), as in grad(vmap(f)). Its entries' VJPs run under the handler below
 * the level (`recordingBelow`): the tape computes the gradient inside vmap, under the level, and
 * the backward loop or cond the rule emits is on values below, not a loop to batch.
 *
 * Each bridge's VJP crosses its cotangent with bridges of its own (`liftTracked`, `crossDown`)
 * and the node's VJP records below as the forward did, so a tape recording the gradient
 * computation (a second derivative: vmap(grad(grad)), grad(vmap(grad)), a Hessian-vector
 * product) follows the cotangents across the level.
 *
 * Tapes started inside a level track its values only: the ops a batching rule runs below are not
 * recorded on them (level.ts), so their gradients below come only through these bridges.
 */
import { pushRecorder, recorders as activeRecorders, removeRecorder, withHandler, withoutRecorders, type OpHandler, type OpRecorder } from "../core/context.js";
import { GradientError } from "../core/errors.js";
import { StagingError } from "../staging/trace-context.js";
import type { Tensor } from "../core/tensor.js";
import type { OpDef, VjpContext } from "../ops/registry.js";
import { applyOp, getOp } from "../ops/registry.js";
import { materializeBatch } from "../ops/batching.js";
import { BatchedTensor, isBatchedAt, type BatchLevel } from "./batched-tensor.js";

/** A cond or while node being traced below a level: what its regions need to cross the level. */
export interface RegionFrame {
  /** The tapes recording outside the node (this node's and every enclosing node's of the level). */
  readonly tapes: readonly OpRecorder[];
  /** The handler the node is emitted under (its enclosing region, or the level's base). */
  readonly scope: OpHandler;
  /**
   * The levels below (a nested vmap's outer levels) as they were when the node was entered: their
   * handler below and how many nodes they were tracing. A value promoted for this node is computed
   * in that state, not in the region an outer level is tracing by the time it is needed.
   */
  readonly below: readonly { readonly level: BridgeLevel; readonly outer: OpHandler; readonly depth: number }[];
  /** Shared values promoted for this node's regions (by tensor id). */
  readonly promoted: Map<number, BatchedTensor>;
}

/** What the bridges need of a level (vmap/level.ts). */
export interface BridgeLevel extends BatchLevel {
  /** The nodes being traced below the level, outermost first. */
  readonly frames: RegionFrame[];
  /** The tapes recording when vmap was called (grad of vmap): they track the values below. */
  readonly outerTapes: readonly OpRecorder[];
}

/** Whether handler `h` is a vmap level (one the bridges know). */
export const isBridgeLevel = (h: OpHandler): h is BridgeLevel => Array.isArray((h as Partial<BridgeLevel>).frames) && (h as Partial<BridgeLevel>).outer !== undefined;

/** The frame of a node about to be traced below `level` (tapes recording now, as well as the enclosing nodes'). */
export function frameOf(level: BridgeLevel, recording: readonly OpRecorder[]): RegionFrame {
  const outside = regionTapes(level) ?? [];
  const below: RegionFrame["below"][number][] = [];
  for (let h = level.outer; isBridgeLevel(h); h = h.outer) below.push({ level: h, outer: h.outer, depth: h.frames.length });
  return { tapes: [...outside, ...recording.filter((r) => !outside.includes(r))], scope: level.outer, below, promoted: new Map() };
}

/** Runs `fn` under `frame`'s scope, the levels below it as they were when its node was entered. */
function atFrameScope<T>(frame: RegionFrame, fn: () => T): T {
  const saved = frame.below.map((b) => ({ outer: b.level.outer, frames: b.level.frames.splice(b.depth) }));
  for (const b of frame.below) b.level.outer = b.outer;
  try {
    return withHandler(frame.scope, fn);
  } finally {
    frame.below.forEach((b, i) => {
      b.level.outer = saved[i]!.outer;
      b.level.frames.push(...saved[i]!.frames);
    });
  }
}

/** The tapes inside the node being traced now (null outside any region). */
export const regionTapes = (level: BridgeLevel): readonly OpRecorder[] | null => level.frames.at(-1)?.tapes ?? null;

/** Tapes of `tapes` started inside `level` (not grad of vmap's) that track `t`. */
export function innerTrackers(tapes: readonly OpRecorder[], t: Tensor, level: BridgeLevel): OpRecorder[] {
  return tapes.filter((r) => !level.outerTapes.includes(r) && r.tracks(t));
}

/** Runs `fn` with exactly `tapes` recording. */
function recordingOnly<T>(tapes: readonly OpRecorder[], fn: () => T): T {
  return withoutRecorders(null, () => {
    tapes.forEach(pushRecorder);
    try {
      return fn();
    } finally {
      tapes.forEach(removeRecorder);
    }
  });
}

function bridgeDef(name: string, outputs: Tensor[], vjp: (ct: Tensor) => Tensor): OpDef {
  return {
    name,
    family: "ad",
    inputs: ["x"],
    infer: () => outputs.map((o) => ({ dtype: o.dtype, shape: o.shape })),
    kernels: {
      cpu: () => {
        throw new GradientError("a vmap gradient bridge is a tape entry and has no kernel", name);
      },
    },
    vjp: (_ctx, cts) => (cts[0] ? [vjp(cts[0])] : [null]),
  };
}

/** `v` (batch at `from`, or unbatched when null) with its batch at axis `to`, of batch `size`. */
function moveBatch(v: Tensor, from: number | null, to: number, size: number): Tensor {
  const front = materializeBatch(v, from, size);
  if (to === 0) return front;
  const perm = front.shape.map((_, i) => i).slice(1);
  perm.splice(to, 0, 0);
  return applyOp(getOp("transpose"), [front], { perm } as never)[0]!;
}

/**
 * `p` (unbatched at `level`) as the level's batched value: its value `p` broadcast over the batch,
 * computed under `scope` where only the tapes of `others` record it (grad of vmap: the total is
 * right for them), and on each of `inner` an identity entry p -> P (each example's cotangent of
 * `P` is that example's cotangent of `p`).
 */
function promoteAt(level: BridgeLevel, inScope: <T>(fn: () => T) => T, p: Tensor, inner: readonly OpRecorder[], others: readonly OpRecorder[]): BatchedTensor {
  const value = recordingOnly(
    others.filter((r) => r.tracks(p)),
    () => inScope(() => materializeBatch(p, null, level.size)),
  );
  const promoted = new BatchedTensor(value, 0, level);
  const def = bridgeDef("vmapGradientPromote", [promoted], (ct) => ct);
  for (const r of inner) r.recordOp(def, [p], {}, [promoted]);
  return promoted;
}

/**
 * Inside a region traced below `level`: `t`, or, when it is the same for every example and a tape
 * started inside the level tracks it, its promoted batched value (computed once, where the
 * outermost node whose tapes include such a tape is emitted).
 */
export function promoteShared(level: BridgeLevel, t: Tensor): Tensor {
  const tapes = regionTapes(level);
  if (tapes === null || isBatchedAt(t, level)) return t;
  const inner = innerTrackers(tapes, t, level);
  if (inner.length === 0) return t;
  const frame = level.frames.find((f) => f.tapes.some((r) => inner.includes(r)))!;
  let promoted = frame.promoted.get(t.id);
  if (promoted === undefined) {
    try {
      promoted = promoteAt(level, (fn) => atFrameScope(frame, fn), t, inner, frame.tapes.filter((r) => !inner.includes(r)));
    } catch (e) {
      // (a value made inside the node's region, a variable's read there: the tape watches it, but it cannot be broadcast outside the node)
      if (!(e instanceof StagingError)) throw e;
      throw new GradientError(
        `a gradient with respect to a value shared by every example that is made inside a staged cond or while loop under vmap (a variable read in the loop's body or a branch, watched by a tape inside vmap) is not supported: ` +
          `it would need to be broadcast over the batch outside the loop, where it does not exist; read the variable before the loop and use that value inside, or run vmap(grad(f)) eagerly`,
        "vmap",
      );
    }
    frame.promoted.set(t.id, promoted);
  }
  return promoted;
}

/**
 * Whether tape `r` needs the gradient of `t` (batched at its level) at that level: it tracks `t`
 * but not its value below (grad inside vmap). (grad of vmap tracks the value below as well: the
 * node's gradient rule there serves it, and no bridge is needed.)
 */
export function losesGradient(r: OpRecorder, t: BatchedTensor): boolean {
  return r.tracks(t) && !r.tracks(t.value);
}

/** Records `t` -> `t.value` on every tape of `tapes` that would lose `t`'s gradient below the level. */
export function bridgeDown(tapes: readonly OpRecorder[], t: Tensor, level: BatchLevel): void {
  if (!isBatchedAt(t, level)) return;
  for (const r of tapes) {
    if (!losesGradient(r, t)) continue;
    const def = bridgeDef("vmapGradientDown", [t.value], (ct) => {
      if (ct instanceof BatchedTensor && ct.level === level) throw new GradientError("the cotangent of a value below a vmap level is batched at that level", "vmap");
      return liftTracked(activeRecorders.slice(), ct, level, t.dim);
    });
    r.recordOp(def, [t], {}, [t.value]);
  }
}

/**
 * A cotangent at `level` (batched or not) as a value below, batch at axis `dim`, the crossing
 * recorded on the tapes recording now (a second derivative): a batched one by a down bridge, one
 * the same for every example that a tape inside the level tracks by a promotion.
 */
function crossDown(level: BridgeLevel, ct: Tensor, dim: number): Tensor {
  const tapes = activeRecorders.slice();
  let t = ct;
  if (!isBatchedAt(t, level)) {
    const inner = innerTrackers(tapes, t, level);
    if (inner.length > 0) t = promoteAt(level, (fn) => withHandler(level.outer, fn), t, inner, tapes.filter((r) => !inner.includes(r)));
  }
  bridgeDown(tapes, t, level);
  const u = t;
  return withHandler(level.outer, () => (isBatchedAt(u, level) ? moveBatch(u.value, u.dim, dim, level.size) : moveBatch(u, null, dim, level.size)));
}

/**
 * `v` (a value below `level`, batch at `dim`) as the level's batched value; every tape of `tapes`
 * that tracks `v` records the crossing, so the batched value is tracked too.
 */
export function liftTracked(tapes: readonly OpRecorder[], v: Tensor, level: BatchLevel, dim = 0): BatchedTensor {
  const lifted = new BatchedTensor(v, dim, level);
  for (const r of tapes) {
    if (!r.tracks(v)) continue;
    const def = bridgeDef("vmapGradientUp", [lifted], (ct) => crossDown(level as BridgeLevel, ct, dim));
    r.recordOp(def, [v], {}, [lifted]);
  }
  return lifted;
}

/**
 * Runs `fn` (which emits a structural node below `level`) with every active tape replaced by one
 * that records the same entries, their VJPs run under the handler below the level (as it is
 * when the gradient is computed), themselves recorded so (a tape recording the gradient).
 */
export function recordingBelow<T>(level: BatchLevel, fn: () => T): T {
  const tapes = activeRecorders.slice();
  if (tapes.length === 0) return fn();
  const below = tapes.map(
    (r): OpRecorder => ({
      tracks: (t) => r.tracks(t),
      recordOp(def, inputs, attrs, outputs) {
        const d = def as OpDef;
        const vjp = d.vjp;
        const run = (ctx: VjpContext<unknown>, cts: (Tensor | null)[]) => {
          return withHandler(level.outer, () => recordingBelow(level, () => vjp!.call(d, ctx, cts)));
        };
        r.recordOp(vjp === undefined ? d : { ...d, vjp: run }, inputs, attrs, outputs);
      },
    }),
  );
  return recordingOnly(below, fn);
}
