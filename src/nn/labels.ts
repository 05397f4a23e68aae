/**
 * The label shapes losses and metrics accept, checked one way for all of them, so that a
 * label tensor of the wrong shape is an error naming the function and both shapes instead of a
 * broadcast that computes something else (labels [N, 1] against logits [N, C] would compare
 * N x N pairs).
 *
 * - Class labels, against logits [..., C]: class indices of the logits' shape without the class
 *   axis ([...], int32 or int64), or one-hot / probability rows of the logits' shape
 *   ([..., C], float). Nothing else: not [N, 1] indices, not float indices.
 * - Targets of a regression or binary loss: the predictions' exact shape.
 *
 * A dimension unknown while staging (-1) matches any size.
 */
import type { Tensor } from "../core/tensor.js";
import { isFloat } from "../core/dtype.js";
import { DtypeError, ShapeError } from "../core/errors.js";

const shapeOf = (t: Tensor): string => `[${t.shape.join(", ")}]`;
const dimsMatch = (a: readonly number[], b: readonly number[]): boolean => a.length === b.length && a.every((d, i) => d < 0 || b[i]! < 0 || d === b[i]);

/** How class labels are given: "indices" ([...] ints) or "dense" (one-hot/probabilities [..., C] floats). */
export type ClassLabels = "indices" | "dense";

/** Checks class labels against logits [..., C] (see above); says which form they are. */
export function checkClassLabels(op: string, logits: Tensor, labels: Tensor): ClassLabels {
  if (!isFloat(logits.dtype)) throw new DtypeError(`logits must be float, got ${logits.dtype}`, op);
  if (logits.rank === 0) throw new ShapeError(`logits must have a class axis (shape [..., classes]), got a scalar`, op);
  const batch = logits.shape.slice(0, -1);
  const accepted = `class indices of shape [${batch.join(", ")}] (int32/int64) or one-hot/probabilities of shape ${shapeOf(logits)} (float)`;
  const isInt = labels.dtype === "int32" || labels.dtype === "int64";
  if (isInt && dimsMatch(labels.shape, batch)) return "indices";
  if (isFloat(labels.dtype) && dimsMatch(labels.shape, logits.shape)) return "dense";
  if (!isInt && !isFloat(labels.dtype)) throw new DtypeError(`labels must be ${accepted}, got ${labels.dtype} labels of shape ${shapeOf(labels)}`, op);
  if (isFloat(labels.dtype) && dimsMatch(labels.shape, batch)) {
    throw new DtypeError(`labels of shape ${shapeOf(labels)} look like class indices but are ${labels.dtype}: class indices must be int32/int64 (cast them), against logits of shape ${shapeOf(logits)}`, op);
  }
  throw new ShapeError(`labels of shape ${shapeOf(labels)} (${labels.dtype}) do not fit logits of shape ${shapeOf(logits)}: give ${accepted}`, op);
}

/** Checks that `targets` have the predictions' shape (no broadcasting between them). */
export function checkSameShape(op: string, predictions: Tensor, targets: Tensor, what = "targets"): void {
  if (!dimsMatch(predictions.shape, targets.shape)) {
    throw new ShapeError(`${what} of shape ${shapeOf(targets)} do not fit predictions of shape ${shapeOf(predictions)}: they must have the same shape`, op);
  }
}
