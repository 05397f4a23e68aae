/**
 * In-place all-reduce, as PyTorch's `dist.all_reduce(tensor)` and Horovod's `allreduce_` do it:
 * the result overwrites the input, so no receive buffer is allocated per call (a fresh buffer's
 * allocation and first-touch page faults are what keeps the eager op below C's bandwidth:
 * bench/RESULTS.md).
 *
 * Why not on any tensor: tensors are immutable. reshape and identity results share their
 * input's storage, tapes keep the tensors they saved, `dataSync()` hands out the storage itself,
 * and the compiled executor skips copying an input whose storage it has seen before. Writing
 * into a tensor's storage would change all of those silently. So the in-place write happens only
 * where nobody else can see the memory:
 *  - a host buffer made by `hostBuffer(dtype, length)` for this purpose: written through
 *    MPI_IN_PLACE. Any other array is refused, since nothing cheap tells a caller's own array
 *    from a tensor's storage handed out by `dataSync()` (marking every dataSync() result costs
 *    0.1-0.2 us per call, a WeakSet insert, against ~1.5 us for a whole small eager op); the
 *    buffers made here are recorded once, when they are made;
 *  - storage the library has just made and not handed out (`allReduceFresh`: the
 *    DistributedOptimizer's fused bucket, concatenated right before its all-reduce).
 * A Variable is reduced by assignment: its new value is the all-reduce of its value (a new
 * buffer, as every assign makes; tapes and views of the old value keep it), eager or staged.
 */
import { allocStorage, type DType, type TypedArray } from "../core/dtype.js";
import { DtypeError, ValueError } from "../core/errors.js";
import { fmtShape } from "../core/shape.js";
import { Tensor } from "../core/tensor.js";
import { Variable } from "../core/variable.js";
import { HOST_DEVICE } from "../core/device.js";
import { isTracing, recorders } from "../core/context.js";
import { allReduce, reduceInPlace, DistributedError, COLLECTIVE_DTYPES, type ReduceKind } from "../ops/collective.js";
import "../ops/variable-updates.js";

/** A host array allReduceInPlace writes into (made by hostBuffer). */
export type HostReduceBuffer = Float32Array | Float64Array | Int32Array;

/** The buffers hostBuffer made (weakly held: forgotten with them). */
const ownBuffers = new WeakSet<object>();

/**
 * A zero-filled host array of `length` elements (Float32Array, Float64Array or Int32Array for
 * `dtype`) that allReduceInPlace may write: the program's own memory, never a tensor's storage
 * (`sc.tensor(buffer)` copies it). Fill it, reduce it in place, read it; reuse it across calls.
 */
export function hostBuffer(dtype: "float32", length: number): Float32Array;
export function hostBuffer(dtype: "float64", length: number): Float64Array;
export function hostBuffer(dtype: "int32", length: number): Int32Array;
export function hostBuffer(dtype: DType, length: number): HostReduceBuffer;
export function hostBuffer(dtype: DType, length: number): HostReduceBuffer {
  if (!COLLECTIVE_DTYPES.includes(dtype)) throw new DtypeError(`collectives take float32, float64 or int32 buffers, got ${JSON.stringify(dtype)}`, "distributed.hostBuffer");
  if (typeof length !== "number" || !Number.isInteger(length) || length < 0) throw new ValueError(`length must be an integer >= 0, got ${String(length)}`, "distributed.hostBuffer");
  const b = allocStorage(dtype, length) as HostReduceBuffer;
  ownBuffers.add(b);
  return b;
}

const OP = "distributed.allReduceInPlace";
const KINDS: readonly ReduceKind[] = ["sum", "mean", "max"];

function dtypeOfArray(a: unknown): DType | null {
  return a instanceof Float32Array ? "float32" : a instanceof Float64Array ? "float64" : a instanceof Int32Array ? "int32" : null;
}

function describe(x: unknown): string {
  if (x === null) return "null";
  if (ArrayBuffer.isView(x)) return x.constructor.name;
  if (x instanceof Tensor) return `a ${x.dtype}${fmtShape(x.shape)} tensor`;
  return typeof x === "object" ? (x.constructor?.name ?? "an object") : typeof x;
}

/**
 * Every rank's values combined ("sum", "mean" or "max") into `target` itself, the same result on
 * every rank. `target` is a host buffer made by hostBuffer (written in place: MPI_IN_PLACE,
 * no allocation; eager only) or a Variable (its value replaced by the all-reduce of it; eager or
 * staged). Returns `target`. A tensor is refused: tensors are immutable (use allReduce).
 */
export function allReduceInPlace<T extends HostReduceBuffer | Variable>(target: T, reduce: ReduceKind = "mean"): T {
  if (!KINDS.includes(reduce)) throw new ValueError(`reduce must be "sum", "mean" or "max", got ${JSON.stringify(reduce)}`, OP);
  if (target instanceof Variable) {
    (target as Variable).assign(allReduce(target, reduce));
    return target;
  }
  if (target instanceof Tensor) {
    throw new ValueError(
      `takes a Variable or a host buffer (sc.distributed.hostBuffer), got ${describe(target)}: tensors are immutable (views, tapes and staged functions share their storage), ` +
        `so one is never written in place. Use allReduce(x) for a new tensor, or keep the value in a Variable`,
      OP,
    );
  }
  const dtype = dtypeOfArray(target);
  if (dtype === null) {
    throw new DtypeError(`takes a Float32Array, Float64Array or Int32Array made by sc.distributed.hostBuffer (or a Variable), got ${describe(target)}`, OP);
  }
  const data = target as HostReduceBuffer;
  if (reduce === "mean" && dtype === "int32") throw new DtypeError(`a mean all-reduce needs a float array, got an Int32Array of ${data.length} (reduce with "sum")`, OP);
  if (isTracing()) {
    throw new DistributedError(
      `a host array cannot be reduced inside a staged function: the call would run once, when the function is traced, not each time it runs. ` +
        `Reduce a Variable (allReduceInPlace(v)) or a tensor (allReduce(x)) there`,
      OP,
    );
  }
  if (!ownBuffers.has(data)) {
    throw new ValueError(
      `writes only host buffers made by sc.distributed.hostBuffer("${dtype}", n), got a ${data.constructor.name} of ${data.length} made elsewhere: ` +
        `an array from dataSync() or data() is a tensor's storage, which never changes (views, tapes and staged functions share it). ` +
        `Copy the values into a hostBuffer (buf.set(values)), or use allReduce(tensor)`,
      OP,
    );
  }
  reduceInPlace(data as TypedArray, dtype, reduce, OP);
  return target;
}

/**
 * The all-reduce of `t`, written over `t`'s own storage when the caller has just made `t` and
 * handed it to no one (the fused bucket's concat): eagerly on the host, with no tape or other
 * recorder active (a recorder keeps `t`, and would need the op's record), and `t`'s storage not
 * shared with `sources` (the tensors it was made from). Anywhere else the all-reduce op (a new
 * tensor; staged, a node of the graph).
 */
export function allReduceFresh(t: Tensor, reduce: ReduceKind, sources: readonly Tensor[]): Tensor {
  const data = t._data;
  // (the op's own checks and errors: a dtype collectives do not carry, an int32 mean)
  if (!COLLECTIVE_DTYPES.includes(t.dtype) || dtypeOfArray(data) !== t.dtype || (reduce === "mean" && t.dtype === "int32")) return allReduce(t, reduce);
  if (isTracing() || recorders.length > 0 || data === null || t._buffer !== null || t.device !== HOST_DEVICE || t instanceof Variable) return allReduce(t, reduce);
  if (sources.some((s) => s === t || s._data === data || (s._data !== null && s._data.buffer === data.buffer))) return allReduce(t, reduce);
  reduceInPlace(data, t.dtype, reduce, "allReduce");
  return t;
}
