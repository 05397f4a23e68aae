/**
 * Gradients across a vmap level (grad inside vmap, staged, through a cond or while node traced
 * below the level). The tape inside vmap tracks batched values (BatchedTensor), but a structural
 * node is emitted below the level, on their values, which that tape does not track: the node's
 * gradient rule (graph AD) would see untracked inputs and the gradient would be lost. So the
 * crossing is recorded on the tape as two entries, which are the only places batched values
 * and their values below meet:
 *
 * - down (`t` -> `t.value`): the value below is tracked; its cotangent (a tensor below, batch at
 *   `t.dim`) is the cotangent of `t` at the level, batched at that axis;
 * - up (a value below, batch at 0 -> the level's batched value): the level's cotangent, moved
 *   to axis 0 below (an unbatched one, the same for every example, broadcast to the batch).
 *
 * The node's own gradient then is graph AD's, below the level, on the whole batch (for a masked
 * loop: the gradient of `where(pred, body, state)` iterated, so a finished example's gradient
 * passes through unchanged), as in grad(vmap(f)). Its entries' VJPs run under the handler below
 * the level (`recordingBelow`): the tape computes the gradient inside vmap, under the level, and
 * the backward loop or cond the rule emits is on values below, not a loop to batch.
 */
import { pushRecorder, recorders as activeRecorders, removeRecorder, withHandler, withoutRecorders, type OpRecorder } from "../core/context.js";
import { GradientError } from "../core/errors.js";
import type { Tensor } from "../core/tensor.js";
import type { OpDef, VjpContext } from "../ops/registry.js";
import { batchToFront, materializeBatch } from "../ops/batching.js";
import { BatchedTensor, isBatchedAt, type BatchLevel } from "./batched-tensor.js";

/**
 * A tape recording the gradient computation itself (a second derivative) would lose it at the
 * bridge (its cotangents cross the level unrecorded): refused while any tape records.
 */
function refuseHigherOrder(name: string): void {
  if (activeRecorders.length > 0) {
    throw new GradientError(
      "a second derivative inside vmap, staged, through a cond or while loop traced below the vmap level is not supported yet; take the outer derivative outside vmap, or run it eagerly",
      name,
    );
  }
}

/**
 * The typed error for a value the same for every example that a tape inside vmap tracks, used in
 * a region traced below the level: the node's gradient for it would be the batch's total, not
 * each example's.
 */
export function sharedTrackedError(opName: string): GradientError {
  return new GradientError(
    `a gradient with respect to a value shared by every example (unbatched) reaches ${opName} inside a staged cond or while loop under vmap (grad inside vmap, staged): ` +
      `the loop below the vmap level would give the batch's total, not each example's; pass that value batched (inAxes 0, broadcast), take the gradient outside vmap, or run vmap(grad(f)) eagerly`,
    "vmap",
  );
}

/**
 * Whether a tape of `tapes` started inside vmap (not one of `level.outerTapes`, the tapes active
 * when vmap was called, whose gradient of a shared value is the batch's total) tracks `t`, a
 * value the same for every example of `level`.
 */
export function sharedTracked(tapes: readonly OpRecorder[], t: Tensor, level: BatchLevel & { readonly outerTapes: readonly OpRecorder[] }): boolean {
  return !isBatchedAt(t, level) && tapes.some((r) => !level.outerTapes.includes(r) && r.tracks(t));
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
    vjp: (_ctx, cts) => {
      if (!cts[0]) return [null];
      refuseHigherOrder(name);
      return [vjp(cts[0])];
    },
  };
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
      return new BatchedTensor(ct, t.dim, level);
    });
    r.recordOp(def, [t], {}, [t.value]);
  }
}

/**
 * `v` (a value below `level`, batch at 0) as the level's batched value; every tape of `tapes`
 * that tracks `v` records the crossing, so the batched value is tracked too.
 */
export function liftTracked(tapes: readonly OpRecorder[], v: Tensor, level: BatchLevel): BatchedTensor {
  const lifted = new BatchedTensor(v, 0, level);
  for (const r of tapes) {
    if (!r.tracks(v)) continue;
    const def = bridgeDef("vmapGradientUp", [lifted], (ct) => (isBatchedAt(ct, level) ? batchToFront(ct.value, ct.dim) : materializeBatch(ct, null, level.size)));
    r.recordOp(def, [v], {}, [lifted]);
  }
  return lifted;
}

/**
 * Runs `fn` (which emits a structural node below `level`) with every active tape replaced by one
 * that records the same entries, their VJPs run under the handler below the level (as it is
 * when the gradient is computed).
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
        r.recordOp(vjp === undefined ? d : { ...d, vjp: (ctx: VjpContext<unknown>, cts: (Tensor | null)[]) => withHandler(level.outer, () => vjp.call(d, ctx, cts)) }, inputs, attrs, outputs);
      },
    }),
  );
  return withoutRecorders(null, () => {
    below.forEach(pushRecorder);
    try {
      return fn();
    } finally {
      below.forEach(removeRecorder);
    }
  });
}
