/** ONNX losses: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss (composed of registry ops). */
import type { Tensor } from "../../../core/tensor.js";
import * as ops from "../../../ops/index.js";
import { onnxOp } from "../op-table.js";
import type { NodeContext } from "../node-context.js";

/**
 * -logProb[n, target[n, ...], ...] weighted by weight[target] (0 where target == ignore_index),
 * reduced by "none", "sum" or "mean" (divided by the total weight).
 */
function nll(n: NodeContext, logProb: Tensor, target: Tensor, weight: Tensor | null): Tensor {
  const reduction = n.string("reduction", "mean");
  if (reduction !== "none" && reduction !== "sum" && reduction !== "mean") throw n.fail(`unknown reduction ${JSON.stringify(reduction)}`);
  if (logProb.rank < 2 || target.rank !== logProb.rank - 1) {
    throw n.fail(`input of shape [${logProb.shape.join(", ")}] needs a target of rank ${logProb.rank - 1}, got [${target.shape.join(", ")}]`);
  }
  const ignore = n.int("ignore_index");
  const keep = ignore === undefined ? null : ops.notEqual(target, ignore);
  const safe = keep === null ? target : ops.where(keep, target, ops.zerosLike(target));
  const picked = ops.squeeze(ops.gatherElements(logProb, ops.expandDims(safe, 1), 1), 1);
  let w: Tensor | null = weight === null ? null : ops.gather(weight, safe, 0);
  if (keep !== null) w = w === null ? ops.cast(keep, logProb.dtype) : ops.where(keep, w, 0);
  const loss = w === null ? ops.neg(picked) : ops.neg(ops.mul(picked, w));
  if (reduction === "none") return loss;
  const total = ops.sum(loss);
  if (reduction === "sum") return total;
  return ops.div(total, w === null ? loss.size : ops.sum(w));
}

onnxOp("NegativeLogLikelihoodLoss", {
  run: (n) => nll(n, n.input(0), n.input(1), n.optional(2)),
});

onnxOp("SoftmaxCrossEntropyLoss", {
  run(n) {
    const logProb = ops.logSoftmax(n.input(0), 1);
    return [nll(n, logProb, n.input(1), n.optional(2)), logProb];
  },
});
