/**
 * ONNX recurrent layers RNN, GRU and LSTM, unrolled over the sequence at trace time (its
 * length is part of the input shape): each step is a few matmuls and elementwise ops, so the
 * gradient is the ordinary one of the unrolled graph. Both layouts, all three directions,
 * sequence_lens (steps past a sequence's length keep its state and output zeros), peepholes,
 * clip, input_forget, linear_before_reset and the activation list are supported.
 */
import type { Tensor } from "../../../core/tensor.js";
import * as ops from "../../../ops/index.js";
import { onnxOp } from "../op-table.js";
import type { NodeContext } from "../node-context.js";

type Act = (x: Tensor) => Tensor;

/** The activation named `name` with its optional alpha/beta (ONNX's RNN activation list). */
function activation(n: NodeContext, name: string, alpha: number | undefined, beta: number | undefined): Act {
  switch (name.toLowerCase()) {
    case "sigmoid":
      return ops.sigmoid;
    case "tanh":
      return ops.tanh;
    case "relu":
      return ops.relu;
    case "affine":
      return (x) => ops.add(ops.mul(x, alpha ?? 1), beta ?? 0);
    case "leakyrelu":
      return (x) => ops.leakyRelu(x, alpha ?? 0.01);
    case "thresholdedrelu":
      return (x) => ops.where(ops.greater(x, alpha ?? 1), x, 0);
    case "scaledtanh":
      return (x) => ops.mul(ops.tanh(ops.mul(x, beta ?? 1)), alpha ?? 1);
    case "hardsigmoid":
      return (x) => ops.clip(ops.add(ops.mul(x, alpha ?? 0.2), beta ?? 0.5), 0, 1);
    case "elu":
      return (x) => ops.elu(x, alpha ?? 1);
    case "softsign":
      return (x) => ops.div(x, ops.add(ops.abs(x), 1));
    case "softplus":
      return ops.softplus;
    default:
      throw n.unsupported(`activation ${JSON.stringify(name)} is not supported`);
  }
}

interface Common {
  x: Tensor[]; // per step [batch, input]
  batch: number;
  hidden: number;
  dirs: number;
  directions: ("forward" | "reverse")[];
  /** Per step [batch, 1] bool: the step is inside the sequence (null: all are). */
  valid: (Tensor | null)[];
  acts: Act[];
  clip: number | undefined;
  layout: number;
}

function common(n: NodeContext, defaults: string[]): Common {
  const layout = n.int("layout", 0);
  let X = n.input(0);
  if (layout === 1) X = ops.transpose(X, [1, 0, 2]);
  const batch = X.shape[1]!;
  const hidden = n.int("hidden_size") ?? n.input(2).shape[2]!;
  const dir = n.string("direction", "forward");
  const directions: ("forward" | "reverse")[] = dir === "bidirectional" ? ["forward", "reverse"] : dir === "reverse" ? ["reverse"] : dir === "forward" ? ["forward"] : [];
  if (directions.length === 0) throw n.fail(`unknown direction ${JSON.stringify(dir)}`);
  const x = ops.unstack(X, 0);
  const lens = n.optional(4);
  const valid: (Tensor | null)[] = x.map((_, t) => (lens === null ? null : ops.reshape(ops.less(t, ops.cast(lens, "float64")), [batch, 1])));
  const names = n.strings("activations") ?? [];
  const alphas = n.floats("activation_alpha") ?? [];
  const betas = n.floats("activation_beta") ?? [];
  const per = defaults.length;
  const acts: Act[] = [];
  for (let d = 0; d < directions.length; d++) {
    for (let k = 0; k < per; k++) {
      const i = d * per + k;
      acts.push(activation(n, names[i] ?? defaults[k]!, alphas[i], betas[i]));
    }
  }
  return { x, batch, hidden, dirs: directions.length, directions, valid, acts, clip: n.float("clip"), layout };
}

const clipped = (c: Common, x: Tensor): Tensor => (c.clip === undefined ? x : ops.clip(x, -c.clip, c.clip));
/** State update that keeps the old state past a sequence's end. */
const keep = (valid: Tensor | null, next: Tensor, prev: Tensor): Tensor => (valid === null ? next : ops.where(valid, next, prev));
const zeroPast = (valid: Tensor | null, h: Tensor): Tensor => (valid === null ? h : ops.where(valid, h, 0));

/** Direction d's slice of a [dirs, ...] weight. */
const dirSlice = (w: Tensor, d: number): Tensor => ops.squeeze(ops.slice(w, [d], [d + 1]), 0);

/** Direction d's input weights W, recurrent weights R and bias B (null when the node has none). */
function directionWeights(n: NodeContext, d: number): { w: Tensor; r: Tensor; b: Tensor | null } {
  const B = n.optional(3);
  return { w: dirSlice(n.input(1), d), r: dirSlice(n.input(2), d), b: B === null ? null : dirSlice(B, d) };
}

/** Packs per-direction outputs: Y [seq, dirs, batch, hidden] (or layout 1) and the final states. */
function outputs(c: Common, ys: Tensor[][], finals: Tensor[][]): Tensor[] {
  // ys[d][t]: [batch, hidden]
  let Y = ops.stack(
    c.x.map((_, t) => ops.stack(ys.map((perDir) => perDir[t]!), 0)),
    0,
  );
  const states = finals.map((perDir) => ops.stack(perDir, 0));
  if (c.layout === 1) {
    Y = ops.transpose(Y, [2, 0, 1, 3]);
    return [Y, ...states.map((s) => ops.transpose(s, [1, 0, 2]))];
  }
  return [Y, ...states];
}

function initial(n: NodeContext, c: Common, i: number, d: number, dtype: Tensor["dtype"]): Tensor {
  const s = n.optional(i);
  if (s === null) return ops.full([c.batch, c.hidden], 0, dtype);
  return dirSlice(c.layout === 1 ? ops.transpose(s, [1, 0, 2]) : s, d);
}

/** Runs `step` over the sequence in direction d; returns the per-step outputs (in time order) and the final state. */
function scanDirection<S extends Tensor[]>(c: Common, d: number, state: S, step: (x: Tensor, s: S, valid: Tensor | null) => S): { ys: Tensor[]; final: S } {
  const order = c.directions[d] === "forward" ? c.x.map((_, t) => t) : c.x.map((_, t) => c.x.length - 1 - t);
  const ys = new Array<Tensor>(c.x.length);
  let s = state;
  for (const t of order) {
    s = step(c.x[t]!, s, c.valid[t]!);
    ys[t] = zeroPast(c.valid[t]!, s[0]!);
  }
  return { ys, final: s };
}

onnxOp("RNN", {
  run(n) {
    const c = common(n, ["Tanh"]);
    const W = n.input(1);
    const ys: Tensor[][] = [];
    const hs: Tensor[] = [];
    for (let d = 0; d < c.dirs; d++) {
      const { w, r, b } = directionWeights(n, d);
      const bias = b === null ? null : ops.add(ops.slice(b, [0], [c.hidden]), ops.slice(b, [c.hidden], [2 * c.hidden]));
      const f = c.acts[d]!;
      const run = scanDirection(c, d, [initial(n, c, 5, d, W.dtype)], (x, [h], valid) => {
        let pre = ops.add(ops.matmul(x, w, { transposeB: true }), ops.matmul(h!, r, { transposeB: true }));
        if (bias !== null) pre = ops.add(pre, bias);
        return [keep(valid, f(clipped(c, pre)), h!)];
      });
      ys.push(run.ys);
      hs.push(run.final[0]!);
    }
    return outputs(c, ys, [hs]);
  },
});

onnxOp("GRU", {
  run(n) {
    const c = common(n, ["Sigmoid", "Tanh"]);
    const W = n.input(1);
    const H = c.hidden;
    const lbr = n.int("linear_before_reset", 0) !== 0;
    const ys: Tensor[][] = [];
    const hs: Tensor[] = [];
    for (let d = 0; d < c.dirs; d++) {
      const { w, r, b } = directionWeights(n, d);
      const gate = (t: Tensor, k: number): Tensor => ops.slice(t, [k * H], [(k + 1) * H]);
      const part = (m: Tensor, k: number): Tensor => ops.slice(m, [k * H], [(k + 1) * H]);
      const [f, g] = [c.acts[2 * d]!, c.acts[2 * d + 1]!];
      const run = scanDirection(c, d, [initial(n, c, 5, d, W.dtype)], (x, [h], valid) => {
        const xw = (k: number) => ops.matmul(x, part(w, k), { transposeB: true });
        const hr = (k: number) => ops.matmul(h!, part(r, k), { transposeB: true });
        const wb = (k: number) => (b === null ? 0 : gate(b, k));
        const rb = (k: number) => (b === null ? 0 : gate(b, 3 + k));
        const z = f(clipped(c, ops.add(ops.add(ops.add(xw(0), hr(0)), wb(0)), rb(0))));
        const rt = f(clipped(c, ops.add(ops.add(ops.add(xw(1), hr(1)), wb(1)), rb(1))));
        const hTilde = lbr
          ? g(clipped(c, ops.add(ops.add(xw(2), ops.mul(rt, ops.add(hr(2), rb(2)))), wb(2))))
          : g(clipped(c, ops.add(ops.add(ops.add(xw(2), ops.matmul(ops.mul(rt, h!), part(r, 2), { transposeB: true })), rb(2)), wb(2))));
        const next = ops.add(ops.mul(ops.sub(1, z), hTilde), ops.mul(z, h!));
        return [keep(valid, next, h!)];
      });
      ys.push(run.ys);
      hs.push(run.final[0]!);
    }
    return outputs(c, ys, [hs]);
  },
});

onnxOp("LSTM", {
  run(n) {
    const c = common(n, ["Sigmoid", "Tanh", "Tanh"]);
    const [W, P] = [n.input(1), n.optional(7)];
    const H = c.hidden;
    const coupled = n.int("input_forget", 0) !== 0;
    const ys: Tensor[][] = [];
    const hs: Tensor[] = [];
    const cs: Tensor[] = [];
    for (let d = 0; d < c.dirs; d++) {
      const { w, r, b } = directionWeights(n, d);
      const p = P === null ? null : dirSlice(P, d);
      const bias = b === null ? null : ops.add(ops.slice(b, [0], [4 * H]), ops.slice(b, [4 * H], [8 * H]));
      const [f, g, h] = [c.acts[3 * d]!, c.acts[3 * d + 1]!, c.acts[3 * d + 2]!];
      const run = scanDirection(c, d, [initial(n, c, 5, d, W.dtype), initial(n, c, 6, d, W.dtype)], (x, [hPrev, cPrev], valid) => {
        let gates = ops.add(ops.matmul(x, w, { transposeB: true }), ops.matmul(hPrev!, r, { transposeB: true }));
        if (bias !== null) gates = ops.add(gates, bias);
        // Gate order i, o, f, c (ONNX); peepholes p = [Pi, Po, Pf].
        const [gi, go, gf, gc] = ops.split(gates, 4, 1) as [Tensor, Tensor, Tensor, Tensor];
        const peep = (k: number): Tensor | number => (p === null ? 0 : ops.slice(p, [k * H], [(k + 1) * H]));
        const i = f(clipped(c, ops.add(gi, ops.mul(peep(0), cPrev!))));
        const fg = coupled ? ops.sub(1, i) : f(clipped(c, ops.add(gf, ops.mul(peep(2), cPrev!))));
        const cNew = ops.add(ops.mul(fg, cPrev!), ops.mul(i, g(clipped(c, gc))));
        const o = f(clipped(c, ops.add(go, ops.mul(peep(1), cNew))));
        const hNew = ops.mul(o, h(cNew));
        return [keep(valid, hNew, hPrev!), keep(valid, cNew, cPrev!)];
      });
      ys.push(run.ys);
      hs.push(run.final[0]!);
      cs.push(run.final[1]!);
    }
    return outputs(c, ys, [hs, cs]);
  },
});
