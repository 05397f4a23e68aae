/**
 * What `fit` does differently when its optimizer is a `sc.distributed.DistributedOptimizer` (a
 * data-parallel job: every rank runs the same `fit` on its own shard of the data):
 *
 * - at the start, every variable of the model (and the optimizer's state) is set to rank 0's
 *   values, so all ranks start from the same weights (Horovod's broadcast callback, built in);
 *   a model whose layers build on their first call gets its variables in step 1, so then they are
 *   set to rank 0's after step 1 (as Horovod does): build the model first (call it once, or give
 *   layers their input sizes) for step 1 to start from equal weights too;
 * - the number of batches per epoch, when the data knows it, must be the same on every rank (a
 *   rank with one batch more would wait forever in its extra all-reduce): checked at the start;
 * - each epoch's logged values are those over every rank's batches (the means' totals and the
 *   counting metrics' counts are summed over the ranks), so callbacks such as EarlyStopping see
 *   the same values on every rank and take the same decision;
 * - a stop asked by a callback on one rank stops every rank (checked after each epoch, and after
 *   each step when a callback has an onStepEnd hook: one more small all-reduce per step);
 * - progress bars and epoch lines are printed by rank 0 only.
 *
 * The per-step logs (`history.steps`, `onStepEnd`) stay this rank's own batch's values.
 */
import { withoutRecorders } from "../core/context.js";
import type { Variable } from "../core/variable.js";
import { allReduce, broadcast, collectiveProvider, DistributedError, type CollectiveProvider } from "../ops/collective.js";
import { tensor } from "../ops/creation.js";
import type { Optimizer } from "../optim/optimizer.js";

/** The job `fit` trains in: the collective provider when `optimizer` averages gradients over ranks, else null. */
export function dataParallelJob(optimizer: Optimizer): CollectiveProvider | null {
  if ((optimizer as { distributed?: unknown }).distributed !== true) return null;
  const p = collectiveProvider();
  if (!p) throw new DistributedError(`the optimizer is a DistributedOptimizer but no job is joined: call sc.distributed.init() first`, "fit");
  return p;
}

/** Sets every variable to rank `root`'s value on every rank (all ranks pass the same list, in order). */
export function broadcastFromRoot(variables: readonly Variable[], root = 0): void {
  withoutRecorders(null, () => {
    for (const v of variables) v.assign(broadcast(v.peek(), root));
  });
}

/** `v` summed over the ranks (float64). */
export function sumOverRanks(v: Float64Array): Float64Array {
  return allReduce(tensor(v, "float64", [v.length]), "sum").dataSync() as Float64Array;
}

/** Throws on every rank (the same error, so none is left waiting) unless all ranks have `batches` batches per epoch. */
export function checkSameBatchCount(batches: number | undefined, op: string): void {
  // (unknown or infinite counts: -1, and they must agree too)
  const n = batches === undefined || !Number.isFinite(batches) ? -1 : batches;
  const r = allReduce(tensor([n, -n], "int32", [2]), "max").dataSync();
  const most = r[0]!;
  const least = -r[1]!;
  if (most !== least) {
    throw new DistributedError(`the ranks have different numbers of batches per epoch (from ${least} to ${most}; -1: unknown); every rank must run the same number of steps, or its gradient all-reduces go unanswered: shard the data into equal parts (Dataset.shard, then batch with dropRemainder, or take the smallest shard's count)`, op);
  }
}

/** Each value averaged over the ranks (validation values: exact when every rank evaluates equal-sized parts, or the same data). */
export function meanOverRanks(logs: Record<string, number>): Record<string, number> {
  const keys = Object.keys(logs);
  const s = sumOverRanks(Float64Array.from(keys, (k) => logs[k]!));
  const size = collectiveProvider()!.size;
  const out: Record<string, number> = {};
  keys.forEach((k, i) => (out[k] = s[i]! / size));
  return out;
}

/** Whether `flag` is true on any rank (the same answer on every rank). */
export function anyRank(flag: boolean): boolean {
  return allReduce(tensor([flag ? 1 : 0], "int32", [1]), "max").dataSync()[0] === 1;
}
