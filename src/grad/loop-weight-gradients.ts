/**
 * Batched weight gradients of a differentiated while loop. An invariant's per-iteration
 * contribution of the form A^T D (the gradient of x W with respect to W) or of column sums of D
 * (a broadcast bias) sums, over all iterations, to one product of the stacked rows:
 * [A_1; ...; A_T]^T [D_1; ...; D_T]. Those contributions leave the backward loop as rows (one
 * push per iteration instead of a product and an addition of weight-sized tensors), and one
 * large product after the loop computes them, as cuDNN does for RNN weight gradients.
 * (recursive-weight-gradients.ts carries the same batching through recursive calls.)
 */
import type { Tensor } from "../core/tensor.js";
import type { Graph, Node, Value, ValueType } from "../graph/ir.js";
import { matmul } from "../ops/linalg.js";
import { sum } from "../ops/reduce.js";
import { reshape } from "../ops/shape.js";

export interface LoopDeferral {
  /** Per invariant: whether the backward graph still outputs its contribution. */
  summed: boolean[];
  rowTypes: ValueType[];
  /** Backward inputs (kept forward values) that deferred products read from the forward's stacks. */
  forwardRows: Value[];
  deferred: Map<number, (rows: Tensor[], forwardStack: (input: Value) => Tensor) => Tensor>;
}

/**
 * Rewrites the backward graph of one iteration, `g`, whose outputs are [carried cotangents...,
 * contributions to the invariants' gradients...], to [carried..., summed contributions..., rows...]:
 * the contributions that are such products leave as rows, the others stay summed in the loop.
 * A row that is a kept forward value (an input of the backward graph after its `numCotangents`
 * cotangents) is not pushed again: the forward already stacked it.
 */
export function deferLoopWeightGradients(g: Graph, numCarried: number, numCotangents: number, wanted: boolean[]): LoopDeferral {
  const producer = new Map<Value, Node>();
  for (const node of g.nodes) for (const o of node.outputs) producer.set(o, node);
  const rank2 = (v: Value) => v.type.shape.length === 2 && v.type.shape.every((d) => d >= 0);
  const rows: Value[] = [];
  const forwardRows: Value[] = [];
  /** The stack of v's rows over the iterations, in the backward loop's order. */
  const rowsOf = (v: Value): ((stacks: Tensor[], forwardStack: (input: Value) => Tensor) => Tensor) => {
    if (g.inputs.indexOf(v) >= numCotangents) {
      if (!forwardRows.includes(v)) forwardRows.push(v);
      return (_stacks, forwardStack) => forwardStack(v);
    }
    let k = rows.indexOf(v);
    if (k < 0) k = rows.push(v) - 1;
    return (stacks) => stacks[k]!;
  };
  const deferred = new Map<number, (stacks: Tensor[], forwardStack: (input: Value) => Tensor) => Tensor>();
  const summed: boolean[] = [];
  const kept: Value[] = g.outputs.slice(0, numCarried);
  g.outputs.slice(numCarried).forEach((out, i) => {
    summed.push(false);
    if (!wanted[i]) return;
    const p = producer.get(out);
    if (p?.op === "matmul" && p.attrs.transposeA === true && p.attrs.transposeB !== true && rank2(p.inputs[0]!) && rank2(p.inputs[1]!)) {
      const [a, d] = [rowsOf(p.inputs[0]!), rowsOf(p.inputs[1]!)];
      const [k, nOut] = [p.inputs[0]!.type.shape[1]!, p.inputs[1]!.type.shape[1]!];
      deferred.set(i, (stacks, fs) => matmul(reshape(a(stacks, fs), [-1, k]), reshape(d(stacks, fs), [-1, nOut]), { transposeA: true }));
      return;
    }
    const sumNode = p && (p.op === "squeeze" || p.op === "reshape") ? producer.get(p.inputs[0]!) : p;
    const axes = sumNode?.attrs.axes as number[] | undefined;
    if (sumNode?.op === "sum" && rank2(sumNode.inputs[0]!) && axes?.length === 1 && axes[0] === 0) {
      const d = rowsOf(sumNode.inputs[0]!);
      const nOut = sumNode.inputs[0]!.type.shape[1]!;
      const shape = out.type.shape.slice();
      deferred.set(i, (stacks, fs) => reshape(sum(reshape(d(stacks, fs), [-1, nOut]), 0), shape));
      return;
    }
    summed[i] = true;
    kept.push(out);
  });
  g.setOutputs([...kept, ...rows]);
  return { summed, rowTypes: rows.map((v) => v.type), forwardRows, deferred };
}

