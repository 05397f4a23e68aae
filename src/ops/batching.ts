/**
 * Batching rules (vmap): how an op runs on inputs that carry a batch axis. Each op declares
 * its rule in its one declaration (`batch`, as it declares its VJP); elementwise ops need none
 * (their rule follows from being elementwise: `batchRuleOf`). The rules here are few and
 * declarative, each serving many ops:
 *
 * - `elementwiseBatch`: batch axes moved to the front, operands aligned so broadcasting applies
 *   per example (matmul uses it too: its leading dims broadcast);
 * - `leadingBatch(shift)`: every input gets the batch axis at 0 (an unbatched one is broadcast),
 *   the op's axis attributes are shifted by one (`shift`), outputs are batched at 0;
 * - `mergeBatch`: the batch is folded into the op's own leading (N) axis (conv, pooling);
 * - `perExample`: the examples one at a time, stacked (random draws with a batched key: each
 *   example's own key, so independent draws; ops with no cheaper rule yet);
 * - `refuseBatch(reason)`: the op cannot be batched, and says why.
 *
 * Rules compute with registry ops (looked up by name, so this file imports no op file) under
 * whatever handler runs below the vmap (eager, a staging trace, an outer vmap): a batched
 * function inside `stage` emits ordinary graph ops.
 */
import type { Tensor } from "../core/tensor.js";
import { ValueError } from "../core/errors.js";
import { applyOp, getOp, setElementwiseBatchRule } from "./registry.js";

/** A batch axis per value (null: the value is the same for every example). */
export type BatchDims = (number | null)[];

export interface BatchResult {
  outputs: Tensor[];
  dims: BatchDims;
}

/** What a rule sees: the op's inputs (batched values whole), their batch axes, attrs, the batch size. */
export interface BatchContext<A> {
  readonly op: string;
  readonly inputs: Tensor[];
  readonly dims: BatchDims;
  readonly attrs: A;
  readonly size: number;
}

export type BatchRule<A = any> = { readonly rule: string; apply(ctx: BatchContext<A>): BatchResult } | { readonly refuse: string };

const op = (name: string, inputs: Tensor[], attrs: unknown): Tensor[] => applyOp(getOp(name), inputs, attrs as never);

/** `t` with its batch axis `d` moved to axis 0. */
export function batchToFront(t: Tensor, d: number): Tensor {
  if (d === 0) return t;
  const perm = [d, ...t.shape.map((_, i) => i).filter((i) => i !== d)];
  return op("transpose", [t], { perm })[0]!;
}

/** `t` (batched at 0 or unbatched) as a tensor batched at 0 of batch `size`. */
export function materializeBatch(t: Tensor, d: number | null, size: number): Tensor {
  if (d !== null) return batchToFront(t, d);
  const withAxis = op("reshape", [t], { shape: [1, ...t.shape] })[0]!;
  return op("broadcastTo", [withAxis], { shape: [size, ...t.shape] })[0]!;
}

/** The per-example rank of a value batched at `d` (or unbatched). */
const exampleRank = (t: Tensor, d: number | null): number => (d === null ? t.rank : t.rank - 1);

/**
 * Batched operands at axis 0 with 1s inserted after it up to per-example rank `rank`, so that
 * right-aligned broadcasting pairs per-example axes; unbatched operands as they are.
 */
export function alignForBroadcast(inputs: Tensor[], dims: BatchDims, rank: number): Tensor[] {
  return inputs.map((t, i) => {
    const d = dims[i]!;
    if (d === null) return t;
    const front = batchToFront(t, d);
    const missing = rank - (front.rank - 1);
    if (missing <= 0) return front;
    return op("reshape", [front], { shape: [front.shape[0]!, ...new Array<number>(missing).fill(1), ...front.shape.slice(1)] })[0]!;
  });
}

/** Elementwise ops (derived for every op with an expression) and ops that broadcast like them. */
export const elementwiseBatch: BatchRule = {
  rule: "elementwise",
  apply(ctx) {
    const rank = Math.max(...ctx.inputs.map((t, i) => exampleRank(t, ctx.dims[i]!)));
    const outputs = applyOp(getOp(ctx.op), alignForBroadcast(ctx.inputs, ctx.dims, rank), ctx.attrs);
    return { outputs, dims: outputs.map(() => 0) };
  },
};

setElementwiseBatchRule(elementwiseBatch);

/** Normalizes an axis of a per-example rank `rank` and shifts it past the batch axis. */
export const shiftAxis = (a: number, rank: number): number => (a < 0 ? a + rank : a) + 1;

/**
 * Every input batched at 0 (unbatched ones broadcast to the batch), attributes shifted past
 * the batch axis by `shift` (which sees the per-example rank of input 0), outputs batched at 0.
 * `materialize` limits which inputs get the batch when unbatched (the others stay as they are).
 */
export function leadingBatch<A>(rule: string, shift: (attrs: A, rank: number, size: number) => A, materialize?: readonly number[]): BatchRule<A> {
  return {
    rule,
    apply(ctx) {
      const rank = exampleRank(ctx.inputs[0]!, ctx.dims[0]!);
      const inputs = ctx.inputs.map((t, i) =>
        ctx.dims[i] === null && materialize && !materialize.includes(i) ? t : materializeBatch(t, ctx.dims[i]!, ctx.size),
      );
      const outputs = applyOp(getOp(ctx.op), inputs, shift(ctx.attrs, rank, ctx.size));
      return { outputs, dims: outputs.map(() => 0) };
    },
  };
}

/** No attribute changes: the op is the same per row (cast, identity, fillLike, ...). */
export const sameAttrsBatch: BatchRule = leadingBatch("leading", (a) => a);
/** `attrs.axis` (one axis) shifted. */
export const axisBatch: BatchRule = leadingBatch<{ axis: number }>("axis", (a, r) => ({ ...a, axis: shiftAxis(a.axis, r) }));
/** `attrs.axes` (a list) shifted. */
export const axesBatch: BatchRule = leadingBatch<{ axes: number[] }>("axes", (a, r) => ({ ...a, axes: a.axes.map((x) => shiftAxis(x, r)) }));

/** The examples one at a time: each batched input unstacked, the op per example, outputs stacked. */
export const perExample: BatchRule = {
  rule: "per-example",
  apply(ctx) {
    const rows = ctx.inputs.map((t, i) => (ctx.dims[i] === null ? null : op("unstack", [t], { axis: ctx.dims[i] })));
    const def = getOp(ctx.op);
    const per: Tensor[][] = [];
    for (let b = 0; b < ctx.size; b++) per.push(applyOp(def, ctx.inputs.map((t, i) => rows[i]?.[b] ?? t), ctx.attrs));
    const outputs = per[0]!.map((_, k) => op("stack", per.map((o) => o[k]!), { axis: 0 })[0]!);
    return { outputs, dims: outputs.map(() => 0) };
  },
};

/**
 * The first rule that fits: `when(ctx)` picks `fast`, else `fallback` (gather with unbatched
 * indices shifts its axis; with batched indices it goes per example).
 */
export function batchWhen<A>(rule: string, when: (ctx: BatchContext<A>) => boolean, fast: BatchRule<A>, fallback: BatchRule<A> = perExample): BatchRule<A> {
  return {
    rule,
    apply(ctx) {
      const r = when(ctx) ? fast : fallback;
      if ("refuse" in r) throw new ValueError(`${ctx.op} cannot be batched: ${r.refuse}`, ctx.op);
      return r.apply(ctx);
    },
  };
}

/**
 * Ops whose axis 0 is already independent items (conv2d, pooling, NCHW): the batch is folded into
 * it (inputs `merged`, which get the batch), the op runs once, and the outputs are unfolded.
 * Any other input batched: per example.
 */
export function mergeBatch(merged: readonly number[]): BatchRule {
  const fast: BatchRule = {
    rule: "merge",
    apply(ctx) {
      const inputs = ctx.inputs.map((t, i) => {
        if (!merged.includes(i)) return t;
        const f = materializeBatch(t, ctx.dims[i]!, ctx.size);
        return op("reshape", [f], { shape: [f.shape[0]! * f.shape[1]!, ...f.shape.slice(2)] })[0]!;
      });
      const outs = applyOp(getOp(ctx.op), inputs, ctx.attrs);
      const outputs = outs.map((o) => op("reshape", [o], { shape: [ctx.size, o.shape[0]! / ctx.size, ...o.shape.slice(1)] })[0]!);
      return { outputs, dims: outputs.map(() => 0) };
    },
  };
  return batchWhen("merge", (ctx) => ctx.dims.every((d, i) => d === null || merged.includes(i)), fast);
}

/** reshape: the batch axis kept in front of the per-example shape. */
export const reshapeBatch: BatchRule = leadingBatch<{ shape: number[] }>("reshape", (a, _r, size) => ({ ...a, shape: [size, ...a.shape] }), []);
/** transpose: the batch axis stays first. */
export const transposeBatch: BatchRule = leadingBatch<{ perm: number[] }>("transpose", (a) => ({ ...a, perm: [0, ...a.perm.map((p) => p + 1)] }), []);
/** slice: the batch axis taken whole. */
export const sliceBatch: BatchRule = leadingBatch<{ begin: (number | null)[]; end: (number | null)[]; strides: number[] }>(
  "slice",
  (a) => ({ ...a, begin: [null, ...a.begin], end: [null, ...a.end], strides: [1, ...a.strides] }),
  [],
);
/** pad: no padding of the batch axis. */
export const padBatch: BatchRule = leadingBatch<{ paddings: [number, number][] }>("pad", (a) => ({ ...a, paddings: [[0, 0], ...a.paddings] }), [0]);

/** broadcastTo: the batched operand aligned (1s after the batch axis), then broadcast to [batch, ...shape]. */
export const broadcastBatch: BatchRule<{ shape: number[] }> = {
  rule: "broadcast",
  apply(ctx) {
    const [x] = alignForBroadcast(ctx.inputs, ctx.dims, ctx.attrs.shape.length);
    const outputs = op("broadcastTo", [x!], { ...ctx.attrs, shape: [ctx.size, ...ctx.attrs.shape] });
    return { outputs, dims: [0] };
  },
};

/** dimSize: the size of the per-example axis, which is the same for every example (unbatched). */
export const dimSizeBatch: BatchRule<{ axis: number }> = {
  rule: "unbatched output",
  apply(ctx) {
    const d = ctx.dims[0]!;
    const a = ctx.attrs.axis < 0 ? ctx.attrs.axis + ctx.inputs[0]!.rank - 1 : ctx.attrs.axis;
    const outputs = op("dimSize", [ctx.inputs[0]!], { ...ctx.attrs, axis: a >= d ? a + 1 : a });
    return { outputs, dims: [null] };
  },
};

/** A stated refusal: the op cannot run on batched values (the message says why). */
export const refuseBatch = (reason: string): BatchRule => ({ refuse: reason });

/**
 * matmul: a batched left operand times an unbatched matrix (the layers of a per-example
 * network: x W with x batched, W shared) folds the batch into the left operand's rows, so it is
 * one [batch * rows, k] x [k, n] product instead of `batch` products of a few rows each (one
 * matrix-vector product per example for x of shape [1, k]: ~20x slower). Every other case
 * (both batched, the right operand batched, a transposed left operand, unknown dims) broadcasts
 * the leading dims (`elementwiseBatch`); a vector operand goes per example.
 */
export const matmulBatch: BatchRule<{ transposeA: boolean; transposeB: boolean }> = {
  rule: "matmul",
  apply(ctx) {
    const [a, b] = ctx.inputs as [Tensor, Tensor];
    const [da, db] = ctx.dims;
    const known = (t: Tensor) => t.shape.every((d) => d >= 0);
    if (da !== null && db === null && b.rank === 2 && !ctx.attrs.transposeA && a.rank >= 3 && known(a) && known(b)) {
      const front = batchToFront(a, da);
      const k = front.shape[front.rank - 1]!;
      const rows = op("reshape", [front], { shape: [front.shape.slice(0, -1).reduce((x, y) => x * y, 1), k] })[0]!;
      const prod = op("matmul", [rows, b], ctx.attrs)[0]!;
      const outputs = op("reshape", [prod], { shape: [...front.shape.slice(0, -1), prod.shape[1]!] });
      return { outputs, dims: [0] };
    }
    const rankOk = ctx.inputs.every((t, i) => t.rank - (ctx.dims[i] === null ? 0 : 1) >= 2);
    return (rankOk ? elementwiseBatch : perExample).apply(ctx);
  },
};
