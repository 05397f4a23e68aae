/**
 * Collective ops: allReduce, broadcast and allGather across the processes of a job (one rank per
 * process). They are registry ops like any other: they run eagerly, are traced into staged graphs,
 * and their kernels call the installed collective provider (src/distributed: MPI today; NCCL would
 * be a second provider with device kernels, docs/distributed.md). Ops know no provider: the
 * distributed layer installs one with `setCollectiveProvider` when `sc.distributed.init()` runs.
 *
 * Every collective is `stateful`: it is never pruned, merged, folded or reordered, because every
 * rank must make the same collective calls in the same order (a rank that skipped one would leave
 * the others waiting).
 *
 * Gradients (the loss being the sum of every rank's loss): a sum all-reduce's gradient is a sum
 * all-reduce of the cotangents, a mean's a mean all-reduce, a max's the summed cotangent where the
 * input equals the maximum; broadcast's is the summed cotangent on the root (zero elsewhere);
 * allGather's is this rank's rows of the summed cotangent.
 */
import { allocStorage, type DType, type TypedArray } from "../core/dtype.js";
import { DtypeError, ShapeError, StagecraftError, ValueError } from "../core/errors.js";
import { fmtShape } from "../core/shape.js";
import type { Tensor, TensorLike } from "../core/tensor.js";
import { applyOp1, defineOp, type OpDef } from "./registry.js";
import { perExample, sameAttrsBatch } from "./batching.js";
import { toTensor } from "./convert.js";
import { cast } from "./cast.js";
import { equal } from "./compare.js";
import { mul } from "./binary.js";
import { zerosLikeTensor } from "./fill.js";
import { slice } from "./shape/slice.js";
import { onHost } from "../backends/webgpu/op-kernels/types.js";

/** The dtypes collectives carry. */
export const COLLECTIVE_DTYPES: readonly DType[] = ["float32", "float64", "int32"];

/** How elements of the ranks' buffers are combined ("mean" is a sum divided by the size). */
export type ReduceKind = "sum" | "mean" | "max";

/**
 * A collective engine (MPI, NCCL...): calls on host buffers, blocking until every rank made the
 * same call. `recv` has the length the op's shape rule gives; providers may assume float32,
 * float64 or int32 storage (Float32Array, Float64Array, Int32Array).
 */
export interface CollectiveProvider {
  /** "mpi", "nccl", ... (for messages). */
  readonly name: string;
  readonly rank: number;
  readonly size: number;
  allReduce(send: TypedArray, recv: TypedArray, dtype: DType, reduce: "sum" | "max"): void;
  /**
   * `data` reduced in place (MPI_IN_PLACE: one buffer, the result over the input). Optional: a
   * provider without it gets `allReduce(copy of data, data)` (reduceInPlace below).
   */
  allReduceInPlace?(data: TypedArray, dtype: DType, reduce: "sum" | "max"): void;
  /** `data` in place: the root's values on every rank. */
  broadcast(data: TypedArray, dtype: DType, root: number): void;
  /** `recv` is `size` blocks of send's length, rank r's in block r. */
  allGather(send: TypedArray, recv: TypedArray, dtype: DType): void;
  /** The calls made into the library so far (`sc.distributed.callCounts()`: tests of tensor fusion, benchmarks). */
  callCounts?(): CollectiveCallCounts;
}

/** Library calls of each kind, and the elements sent by them. */
export interface CollectiveCallCounts {
  allReduce: number;
  broadcast: number;
  allGather: number;
  /** Elements of the send buffers, summed over the calls. */
  elements: number;
}

/** A collective op called before `sc.distributed.init()` (or after finalize). */
export class DistributedError extends StagecraftError {}

let provider: CollectiveProvider | null = null;

/** Installs (or with null removes) the provider collective kernels call. */
export function setCollectiveProvider(p: CollectiveProvider | null): void {
  provider = p;
}

/** The installed provider, or null. */
export function collectiveProvider(): CollectiveProvider | null {
  return provider;
}

function need(op: string): CollectiveProvider {
  if (!provider) throw new DistributedError(`no collective provider: call sc.distributed.init() first (and launch the program with mpirun -np N)`, op);
  return provider;
}

function checkDtype(op: string, t: { dtype: DType; shape: readonly number[] }): void {
  if (!COLLECTIVE_DTYPES.includes(t.dtype)) throw new DtypeError(`collectives take float32, float64 or int32 tensors, got ${t.dtype}${fmtShape(t.shape)}`, op);
}


/**
 * Every rank's `data` combined into `data` itself, through the installed provider: the result
 * overwrites the input (no receive buffer is allocated). Only for memory nobody else reads:
 * a host array the caller owns, or storage the library has just made and not handed out.
 */
export function reduceInPlace(data: TypedArray, dtype: DType, reduce: ReduceKind, op = "allReduceInPlace"): void {
  const p = need(op);
  const kind = reduce === "max" ? "max" : "sum";
  if (p.allReduceInPlace) p.allReduceInPlace(data, dtype, kind);
  else p.allReduce(data.slice(), data, dtype, kind);
  if (reduce === "mean") for (let i = 0; i < data.length; i++) data[i] = data[i]! / p.size;
}

interface AllReduceAttrs {
  reduce: ReduceKind;
}

export const allReduceOp: OpDef<AllReduceAttrs> = defineOp<AllReduceAttrs>({
  name: "allReduce",
  // (elementwise across ranks: the batched tensor reduces whole, each example with its own)
  batch: sameAttrsBatch,
  family: "collective",
  inputs: ["x"],
  stateful: true,
  checkAttrs(attrs) {
    if (attrs.reduce !== "sum" && attrs.reduce !== "mean" && attrs.reduce !== "max") throw new Error(`attrs.reduce must be "sum", "mean" or "max", got ${JSON.stringify(attrs.reduce)}`);
  },
  infer(inputs, a) {
    const x = inputs[0]!;
    checkDtype("allReduce", x);
    if (a.reduce === "mean" && x.dtype === "int32") throw new DtypeError(`a mean all-reduce needs a float tensor, got int32${fmtShape(x.shape)} (cast it, or reduce with "sum")`, "allReduce");
    return [{ dtype: x.dtype, shape: x.shape.slice() }];
  },
  kernels: {
    webgpu: onHost("allReduce"),
    cpu(inputs, a, outs) {
      const p = need("allReduce");
      const x = inputs[0]!;
      const send = x.concrete() as TypedArray;
      const recv = allocStorage(outs[0]!.dtype, send.length);
      p.allReduce(send, recv, x.dtype, a.reduce === "max" ? "max" : "sum");
      if (a.reduce === "mean") for (let i = 0; i < recv.length; i++) recv[i] = recv[i]! / p.size;
      return [recv];
    },
  },
  vjp(ctx, cts) {
    const ct = cts[0]!;
    const { reduce } = ctx.attrs;
    if (reduce === "max") {
      const x = ctx.inputs[0]!;
      return [mul(applyOp1(allReduceOp, [ct], { reduce: "sum" }), cast(equal(x, ctx.outputs[0]!), x.dtype))];
    }
    return [applyOp1(allReduceOp, [ct], { reduce })];
  },
});

interface BroadcastAttrs {
  root: number;
}

export const broadcastOp = defineOp<BroadcastAttrs>({
  name: "broadcast",
  batch: sameAttrsBatch,
  family: "collective",
  inputs: ["x"],
  stateful: true,
  checkAttrs(attrs) {
    if (typeof attrs.root !== "number" || !Number.isInteger(attrs.root) || attrs.root < 0) throw new Error(`attrs.root must be a rank (an integer >= 0), got ${JSON.stringify(attrs.root)}`);
  },
  infer(inputs) {
    const x = inputs[0]!;
    checkDtype("broadcast", x);
    return [{ dtype: x.dtype, shape: x.shape.slice() }];
  },
  kernels: {
    webgpu: onHost("broadcast"),
    cpu(inputs, a) {
      const p = need("broadcast");
      if (a.root >= p.size) throw new ValueError(`root ${a.root} is not a rank of this job (size ${p.size})`, "broadcast");
      const data = (inputs[0]!.concrete() as TypedArray).slice();
      p.broadcast(data, inputs[0]!.dtype, a.root);
      return [data];
    },
  },
  vjp(ctx, cts) {
    const p = need("broadcast");
    const summed = applyOp1(allReduceOp, [cts[0]!], { reduce: "sum" });
    return [p.rank === ctx.attrs.root ? summed : zerosLikeTensor(ctx.inputs[0]!)];
  },
});

interface AllGatherAttrs {
  /** The job's size when the op was made (every rank's block goes along axis 0). */
  size: number;
}

export const allGatherOp = defineOp<AllGatherAttrs>({
  name: "allGather",
  // (gathers along axis 0: one example at a time keeps each example's gather its own)
  batch: perExample,
  family: "collective",
  inputs: ["x"],
  stateful: true,
  checkAttrs(attrs) {
    if (typeof attrs.size !== "number" || !Number.isInteger(attrs.size) || attrs.size < 1) throw new Error(`attrs.size must be the job's size (an integer >= 1), got ${JSON.stringify(attrs.size)}`);
  },
  infer(inputs, a) {
    const x = inputs[0]!;
    checkDtype("allGather", x);
    if (x.shape.length === 0) throw new ShapeError(`allGather concatenates along axis 0: it needs a tensor of rank >= 1, got a scalar (reshape it to [1])`, "allGather");
    const d0 = x.shape[0]!;
    return [{ dtype: x.dtype, shape: [d0 < 0 ? -1 : d0 * a.size, ...x.shape.slice(1)] }];
  },
  kernels: {
    webgpu: onHost("allGather"),
    cpu(inputs, a, outs) {
      const p = need("allGather");
      if (a.size !== p.size) throw new ValueError(`the op was made for a job of size ${a.size}, this one has ${p.size}`, "allGather");
      const send = inputs[0]!.concrete() as TypedArray;
      const recv = allocStorage(outs[0]!.dtype, send.length * p.size);
      p.allGather(send, recv, inputs[0]!.dtype);
      return [recv];
    },
  },
  vjp(ctx, cts) {
    const p = need("allGather");
    const x = ctx.inputs[0]!;
    const rows = x.shape[0]!;
    const summed = applyOp1(allReduceOp, [cts[0]!], { reduce: "sum" });
    return [slice(summed, [p.rank * rows], [(p.rank + 1) * rows])];
  },
});

const REDUCE_KINDS: readonly ReduceKind[] = ["sum", "mean", "max"];

/** Every rank's `x` combined elementwise ("sum", "mean" or "max"); the same result on every rank. */
export function allReduce(x: TensorLike, reduce: ReduceKind = "mean"): Tensor {
  if (!REDUCE_KINDS.includes(reduce)) throw new ValueError(`reduce must be "sum", "mean" or "max", got ${JSON.stringify(reduce)}`, "allReduce");
  return applyOp1(allReduceOp, [toTensor(x, "allReduce")], { reduce });
}

/** Rank `root`'s `x` on every rank (every rank passes a tensor of the same shape and dtype). */
export function broadcast(x: TensorLike, root = 0): Tensor {
  if (typeof root !== "number" || !Number.isInteger(root) || root < 0) throw new ValueError(`root must be a rank (an integer >= 0), got ${String(root)}`, "broadcast");
  return applyOp1(broadcastOp, [toTensor(x, "broadcast")], { root });
}

/** Every rank's `x` concatenated along axis 0, rank 0's rows first. */
export function allGather(x: TensorLike): Tensor {
  const p = need("allGather");
  return applyOp1(allGatherOp, [toTensor(x, "allGather")], { size: p.size });
}
