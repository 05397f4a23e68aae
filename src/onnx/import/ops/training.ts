/**
 * The optimizer update ops of ONNX's ai.onnx.preview.training domain (Adagrad, Momentum, Adam)
 * as elementwise registry ops. Each takes a learning rate R and an update count T (scalars), then
 * n tensors to optimize, their n gradients and their n (or 2n) optimizer states, and returns the
 * n updated tensors and the updated states. The formulas are the operator specifications'.
 */
import type { Tensor } from "../../../core/tensor.js";
import * as ops from "../../../ops/index.js";
import { onnxOp } from "../op-table.js";
import type { NodeContext } from "../node-context.js";

const TRAINING = "ai.onnx.preview.training";

/** R, T and the groups of n inputs after them (X, G, then `states` state groups). */
function groups(n: NodeContext, states: number): { R: Tensor; T: Tensor; xs: Tensor[][] } {
  const rest = n.inputsFrom(2);
  const parts = 2 + states;
  if (rest.length === 0 || rest.length % parts !== 0) throw n.fail(`takes R, T and ${parts} groups of equally many tensors, got ${rest.length} tensors after R and T`);
  const count = rest.length / parts;
  const xs = Array.from({ length: parts }, (_, g) => rest.slice(g * count, (g + 1) * count));
  for (let i = 0; i < count; i++) {
    const shape = xs[0]![i]!.shape;
    for (let g = 1; g < parts; g++) {
      const t = xs[g]![i]!;
      if (t.shape.length !== shape.length || t.shape.some((d, k) => d !== shape[k])) throw n.fail(`input group ${g} entry ${i} has shape [${t.shape.join(", ")}], expected [${shape.join(", ")}]`);
    }
  }
  const R = n.input(0);
  const T = n.input(1);
  if (R.size !== 1 || T.size !== 1) throw n.fail(`R and T must be scalars, got shapes [${R.shape.join(", ")}] and [${T.shape.join(", ")}]`);
  return { R: ops.reshape(R, []), T: ops.reshape(T, []), xs };
}

/** x cast to the dtype of `like` (the update count T is int64). */
const as = (x: Tensor, like: Tensor): Tensor => (x.dtype === like.dtype ? x : ops.cast(x, like.dtype));

onnxOp(
  "Adagrad",
  {
    run(n) {
      const { R, T, xs } = groups(n, 1);
      const decay = n.float("decay_factor", 0);
      const eps = n.float("epsilon", 1e-6);
      const norm = n.float("norm_coefficient", 0);
      const [X, G, H] = xs as [Tensor[], Tensor[], Tensor[]];
      const outX: Tensor[] = [];
      const outH: Tensor[] = [];
      X.forEach((x, i) => {
        const r = ops.div(as(R, x), ops.add(ops.mul(as(T, x), decay), 1));
        const g = ops.add(ops.mul(x, norm), G[i]!);
        const h = ops.add(H[i]!, ops.square(g));
        outX.push(ops.sub(x, ops.div(ops.mul(r, g), ops.add(ops.sqrt(h), eps))));
        outH.push(h);
      });
      return [...outX, ...outH];
    },
  },
  TRAINING,
);

onnxOp(
  "Momentum",
  {
    run(n) {
      const { R, T, xs } = groups(n, 1);
      const alpha = n.float("alpha");
      const beta = n.float("beta");
      const norm = n.float("norm_coefficient");
      const mode = n.string("mode");
      if (alpha === undefined || beta === undefined || norm === undefined || mode === undefined) throw n.fail("needs the alpha, beta, mode and norm_coefficient attributes");
      if (mode !== "standard" && mode !== "nesterov") throw n.fail(`unknown mode ${JSON.stringify(mode)} (standard or nesterov)`);
      const [X, G, V] = xs as [Tensor[], Tensor[], Tensor[]];
      const outX: Tensor[] = [];
      const outV: Tensor[] = [];
      X.forEach((x, i) => {
        const g = ops.add(ops.mul(x, norm), G[i]!);
        // The first update (T = 0) takes the whole gradient.
        const b = ops.where(ops.greater(T, 0), ops.scalar(beta, x.dtype), ops.scalar(1, x.dtype));
        const v = ops.add(ops.mul(V[i]!, alpha), ops.mul(b, g));
        const step = mode === "standard" ? v : ops.add(g, ops.mul(v, alpha));
        outX.push(ops.sub(x, ops.mul(as(R, x), step)));
        outV.push(v);
      });
      return [...outX, ...outV];
    },
  },
  TRAINING,
);

onnxOp(
  "Adam",
  {
    run(n) {
      const { R, T, xs } = groups(n, 2);
      const alpha = n.float("alpha", 0.9);
      const beta = n.float("beta", 0.999);
      const eps = n.float("epsilon", 1e-6);
      const norm = n.float("norm_coefficient", 0);
      const post = n.float("norm_coefficient_post", 0);
      const [X, G, V, H] = xs as [Tensor[], Tensor[], Tensor[], Tensor[]];
      const outX: Tensor[] = [];
      const outV: Tensor[] = [];
      const outH: Tensor[] = [];
      X.forEach((x, i) => {
        const g = ops.add(ops.mul(x, norm), G[i]!);
        const v = ops.add(ops.mul(V[i]!, alpha), ops.mul(g, 1 - alpha));
        const h = ops.add(ops.mul(H[i]!, beta), ops.mul(ops.square(g), 1 - beta));
        // Bias correction from the update count (none on the first update, T = 0).
        const t = as(T, x);
        const r = as(R, x);
        const corrected = ops.div(ops.mul(r, ops.sqrt(ops.sub(1, ops.pow(ops.scalar(beta, x.dtype), t)))), ops.sub(1, ops.pow(ops.scalar(alpha, x.dtype), t)));
        const rate = ops.where(ops.greater(T, 0), corrected, r);
        const updated = ops.sub(x, ops.mul(rate, ops.div(v, ops.add(ops.sqrt(h), eps))));
        outX.push(post === 0 ? updated : ops.mul(updated, 1 - post));
        outV.push(v);
        outH.push(h);
      });
      return [...outX, ...outV, ...outH];
    },
  },
  TRAINING,
);
