/**
 * `DistributedOptimizer(opt)`: data-parallel training as Horovod does it. Each rank computes the
 * gradients of its own batch; before the update, every gradient is averaged over the ranks by an
 * all-reduce, so every rank applies the same update to the same weights (start them equal with
 * `broadcastVariables`). Small gradients are fused into buckets (Horovod's tensor fusion): one
 * all-reduce per bucket of up to `fusionBytes` of flattened gradients of one dtype, instead of
 * one per variable, which saves the per-call latency that dominates small tensors.
 *
 * The result is the given optimizer itself with its `step` replaced (an object whose prototype is
 * the optimizer): its slots, iterations, schedule and checkpoint entries are the optimizer's, and
 * `minimize`, `applyGradients` and `sc.nn.fit` reach the averaging through `step`. The averaging is
 * written with ops, so a staged training step (fit's default) stages the all-reduces too.
 *
 * Every rank must call the step with the same variables in the same order, and the same ones
 * must have null gradients on every rank (they do when every rank runs the same program): the
 * buckets, and so the collectives, are made from that list.
 */
import { checkChoice, checkOptions } from "../core/options.js";
import { ValueError } from "../core/errors.js";
import type { DType } from "../core/dtype.js";
import type { Tensor } from "../core/tensor.js";
import type { Variable } from "../core/variable.js";
import { sizeOf } from "../core/shape.js";
import { allReduce } from "../ops/collective.js";
import { allReduceFresh } from "./in-place.js";
import { concat } from "../ops/shape/join.js";
import { reshape } from "../ops/shape/reshape.js";
import { slice } from "../ops/shape/slice.js";
import { Optimizer } from "../optim/optimizer.js";

export interface DistributedOptimizerOptions {
  /** Largest bucket of fused gradients, in bytes (default 64 MiB, Horovod's; 0: one all-reduce per gradient). */
  fusionBytes?: number;
  /** "mean" (default: the gradient of the mean loss over all ranks' batches) or "sum". */
  reduce?: "mean" | "sum";
}

const BYTES: Partial<Record<DType, number>> = { float32: 4, float64: 8, int32: 4 };

/** Groups gradient indices into buckets: same dtype, in order, at most `limit` bytes (a larger one alone). */
export function planBuckets(grads: readonly { dtype: DType; size: number }[], limit: number): number[][] {
  const buckets: number[][] = [];
  const open = new Map<DType, { idx: number[]; bytes: number }>();
  grads.forEach((g, i) => {
    const bytes = g.size * (BYTES[g.dtype] ?? 8);
    let b = open.get(g.dtype);
    if (b && b.bytes + bytes > limit) {
      buckets.push(b.idx);
      b = undefined;
    }
    if (!b) open.set(g.dtype, (b = { idx: [], bytes: 0 }));
    b.idx.push(i);
    b.bytes += bytes;
  });
  for (const b of open.values()) buckets.push(b.idx);
  return buckets.sort((a, b) => a[0]! - b[0]!);
}

/** The gradients averaged (or summed) over the ranks, fused into buckets; nulls stay null. */
export function allReduceGradients(grads: readonly (Tensor | null)[], options: DistributedOptimizerOptions = {}): (Tensor | null)[] {
  checkOptions("distributed.allReduceGradients", options, ["fusionBytes", "reduce"]);
  checkChoice("distributed.allReduceGradients", "reduce", options.reduce, ["mean", "sum"]);
  const limit = options.fusionBytes ?? 64 * 1024 * 1024;
  const reduce = options.reduce ?? "mean";
  const live = grads.map((g, i) => ({ g, i })).filter((x): x is { g: Tensor; i: number } => x.g !== null && x.g !== undefined);
  const out: (Tensor | null)[] = grads.map(() => null);
  for (const bucket of planBuckets(live.map((x) => ({ dtype: x.g.dtype, size: sizeOf(x.g.shape) })), limit)) {
    const members = bucket.map((k) => live[k]!);
    if (members.length === 1) {
      out[members[0]!.i] = allReduce(members[0]!.g, reduce);
      continue;
    }
    // (the bucket is made here and seen by no one else: reduced over its own storage, no
    // receive buffer, where in-place.ts allReduceFresh finds that safe)
    const flats = members.map((m) => reshape(m.g, [-1]));
    const flat = allReduceFresh(concat(flats, 0), reduce, flats);
    let at = 0;
    for (const m of members) {
      const n = sizeOf(m.g.shape);
      out[m.i] = reshape(slice(flat, [at], [at + n]), m.g.shape);
      at += n;
    }
  }
  return out;
}

/** `opt` with its gradients averaged over the ranks before every update (see the module comment). */
export function DistributedOptimizer<O extends Optimizer>(opt: O, options: DistributedOptimizerOptions = {}): O {
  checkOptions("distributed.DistributedOptimizer", options, ["fusionBytes", "reduce"]);
  checkChoice("distributed.DistributedOptimizer", "reduce", options.reduce, ["mean", "sum"]);
  if (!(opt instanceof Optimizer)) throw new ValueError(`takes an optimizer (sc.optim.*), got ${typeof opt}`, "distributed.DistributedOptimizer");
  const fb = options.fusionBytes;
  if (fb !== undefined && (typeof fb !== "number" || !Number.isFinite(fb) || fb < 0)) throw new ValueError(`fusionBytes must be a number >= 0, got ${String(fb)}`, "distributed.DistributedOptimizer");
  const opts = { ...options };
  const inner = opt;
  const wrapped = Object.create(inner) as O;
  Object.defineProperty(wrapped, "step", {
    value(grads: readonly (Tensor | null)[], variables: readonly Variable[]): void {
      if (!Array.isArray(grads)) return inner.step.call(wrapped, grads, variables);
      Optimizer.prototype.step.call(inner, allReduceGradients(grads, opts), variables);
    },
  });
  Object.defineProperty(wrapped, "distributed", { value: true });
  return wrapped;
}
