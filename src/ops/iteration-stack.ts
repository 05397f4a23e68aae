/**
 * Iteration stacks: what a differentiated loop keeps of each iteration for its backward pass.
 * A stack is an ordinary tensor [rows, ...rowShape] whose row count is known only when the
 * graph runs (its static leading dim is -1), so a loop can push one row per iteration without
 * knowing its trip count, and the backward loop reads row j with `gather`.
 *
 * The ops are functional (stackPush returns a new stack; the input is unchanged), which keeps
 * them differentiable to any order: stackPush and stackPop are each other's VJP. Pushing is
 * amortized O(row) anyway: storage grows by doubling, and a push writes in place when its
 * input is the newest version of that storage (no other stack extends it). Older versions
 * only ever see their own prefix, so sharing the storage is invisible.
 */
import type { TypedArray } from "../core/dtype.js";
import { DtypeError, ShapeError } from "../core/errors.js";
import { dimsCompatible, fmtShape, sizeOf } from "../core/shape.js";
import type { Tensor } from "../core/tensor.js";
import { applyOp, applyOp1, defineOp, runtimeShapes, type TensorType } from "./registry.js";
import { zerosLikeTensor } from "./fill.js";
import { expandDims, reshape, scatterAdd } from "./shape.js";
import { adoptRecord, recordOf } from "./residuals.js";
import { stackStorage } from "./stack-storage.js";
import { onHost } from "../backends/webgpu/op-kernels/types.js";
import { refuseBatch } from "./batching.js";

/** Elements written so far into each growable storage (its newest stack's length). */
const committed = new WeakMap<ArrayBufferLike, number>();
/**
 * The storage of the empty stack a growable storage's rows were first pushed onto, and the
 * length the newest stack grown from each such empty stack reached. A compiled loop starts
 * every call from the same empty stack (a constant), so from its second call on, the first
 * push allocates what the last call needed and the stack never regrows.
 */
const origin = new WeakMap<ArrayBufferLike, ArrayBufferLike>();
const reached = new WeakMap<ArrayBufferLike, number>();

type Ctor = { new (buffer: ArrayBufferLike, offset: number, length: number): TypedArray; new (length: number): TypedArray };

/**
 * Residual records (ops/residuals.ts) pushed as rows: storage copies the handle's number, so
 * the stack's storage keeps the records of its rows, and reading a row hands them on.
 */
const rowRecords = new WeakMap<ArrayBufferLike, Map<number, object>>();

function recordRow(stack: TypedArray, row: number, value: TypedArray): void {
  const record = value.length === 1 ? recordOf(value) : undefined;
  if (!record) return;
  let rows = rowRecords.get(stack.buffer);
  if (!rows) rowRecords.set(stack.buffer, (rows = new Map()));
  rows.set(row, record);
}

function handOnRecord(stack: TypedArray, row: number, out: TypedArray): void {
  const record = rowRecords.get(stack.buffer)?.get(row);
  if (record) adoptRecord(out, record);
}

/**
 * A copy of storage that stands for the same residual records: those of its rows (a stack of
 * handles) or its own (a handle). Executors copy storage that leaves a call (stack storage is
 * reused by the next call); a copy made with `slice` would lose the records, and unpacking a
 * row read from it later would fail.
 */
export function copyStorage(x: TypedArray): TypedArray {
  const out = x.slice();
  const record = recordOf(x);
  if (record) adoptRecord(out, record);
  const rows = x.byteOffset === 0 ? rowRecords.get(x.buffer) : undefined;
  if (rows) rowRecords.set(out.buffer, new Map([...rows].filter(([row]) => row < x.length)));
  return out;
}

function push(stack: TypedArray, row: TypedArray): TypedArray {
  const len = stack.length;
  const need = len + row.length;
  const ctor = stack.constructor as Ctor;
  const bytes = (stack as { BYTES_PER_ELEMENT: number }).BYTES_PER_ELEMENT;
  const root = origin.get(stack.buffer) ?? stack.buffer;
  let out: TypedArray;
  if (stack.byteOffset === 0 && committed.get(stack.buffer) === len && stack.buffer.byteLength >= need * bytes) {
    out = new ctor(stack.buffer, 0, need);
  } else {
    const capacity = Math.max(need, 2 * len, 8 * row.length, len === 0 ? (reached.get(root) ?? 0) : 0);
    out = new ctor(stackStorage(capacity * bytes), 0, need);
    origin.set(out.buffer, root);
    out.set(stack);
    const rows = rowRecords.get(stack.buffer);
    if (rows) rowRecords.set(out.buffer, new Map(rows));
    else rowRecords.delete(out.buffer); // (reused storage: no records of an earlier call)
  }
  out.set(row, len);
  committed.set(out.buffer, need);
  reached.set(root, need);
  return out;
}

function rowTypeOf(op: string, stack: TensorType): number[] {
  if (stack.shape.length === 0) throw new ShapeError(`a stack has a leading axis of rows, got a scalar`, op);
  return stack.shape.slice(1);
}

export const stackPushOp = defineOp<Record<string, never>>({
  name: "stackPush",
  batch: refuseBatch("an iteration stack (while-loop gradients) holds one example's values; a batched loop stacks batched values instead"),
  family: "shape",
  inputs: ["stack", "value"],
  copiesInputs: [1],
  infer(inputs) {
    const [s, v] = inputs as [TensorType, TensorType];
    if (s.dtype !== v.dtype) throw new DtypeError(`the value has dtype ${v.dtype} but the stack holds ${s.dtype}`, "stackPush");
    const row = rowTypeOf("stackPush", s);
    if (row.length !== v.shape.length || !row.every((d, i) => dimsCompatible(d, v.shape[i]!))) {
      throw new ShapeError(`a stack of rows ${fmtShape(row)} cannot take a value of shape ${fmtShape(v.shape)}`, "stackPush");
    }
    // One more row than the stack has (unknown when its rows are: a stack a loop carries).
    return [{ dtype: s.dtype, shape: [s.shape[0]! >= 0 ? s.shape[0]! + 1 : -1, ...row.map((d, i) => (d >= 0 ? d : v.shape[i]!))] }];
  },
  kernels: { webgpu: onHost("stackPush"), cpu(inputs) {
    const [s, v] = inputs as [Tensor, Tensor];
    const rows = s.shape[0]!;
    if (rows > 0 && !s.shape.slice(1).every((d, i) => d === v.shape[i])) {
      throw new ShapeError(`a stack of rows ${fmtShape(s.shape.slice(1))} cannot take a value of shape ${fmtShape(v.shape)}`, "stackPush");
    }
    const out = push(s.concrete(), v.concrete());
    recordRow(out, rows, v.concrete());
    runtimeShapes.set(out, [rows + 1, ...v.shape]);
    return [out];
  } },
  vjp(_ctx, cts) {
    const [rest, last] = stackPop(cts[0]!);
    return [rest, last];
  },
});

export const stackPopOp = defineOp<Record<string, never>>({
  name: "stackPop",
  batch: refuseBatch("an iteration stack (while-loop gradients) holds one example's values; a batched loop stacks batched values instead"),
  family: "shape",
  inputs: ["stack"],
  infer(inputs) {
    const s = inputs[0]!;
    const row = rowTypeOf("stackPop", s);
    return [
      { dtype: s.dtype, shape: [s.shape[0]! > 0 ? s.shape[0]! - 1 : -1, ...row] },
      { dtype: s.dtype, shape: row },
    ];
  },
  kernels: { webgpu: onHost("stackPop"), cpu(inputs) {
    const s = inputs[0]!;
    const rows = s.shape[0]!;
    if (rows < 1) throw new ShapeError(`cannot pop from an empty stack (shape ${fmtShape(s.shape)})`, "stackPop");
    const data = s.concrete();
    const rowSize = sizeOf(s.shape.slice(1));
    const restLen = data.length - rowSize;
    // The rest shares the storage (it is a prefix, which later pushes onto longer stacks
    // never touch); the popped row is a copy.
    const rest = data.subarray(0, restLen);
    runtimeShapes.set(rest, [rows - 1, ...s.shape.slice(1)]);
    const last = data.slice(restLen);
    handOnRecord(data, rows - 1, last);
    return [rest, last];
  } },
  vjp(ctx, cts) {
    const [rest, last] = ctx.outputs as [Tensor, Tensor];
    return [stackPush(cts[0] ?? zerosLikeTensor(rest), cts[1] ?? zerosLikeTensor(last))];
  },
});

/** A new stack: `stack` with `value` as one more row. */
export function stackPush(stack: Tensor, value: Tensor): Tensor {
  return applyOp1(stackPushOp, [stack, value], {});
}

/** [the stack without its last row, that row]. */
export function stackPop(stack: Tensor): [Tensor, Tensor] {
  const [rest, last] = applyOp(stackPopOp, [stack], {});
  return [rest!, last!];
}

/** Row `index` (an int32 scalar) of a stack; a residual record in that row comes along. */
export const stackReadOp = defineOp<Record<string, never>>({
  name: "stackRead",
  batch: refuseBatch("an iteration stack (while-loop gradients) holds one example's values; a batched loop stacks batched values instead"),
  family: "shape",
  inputs: ["stack", "index"],
  infer(inputs) {
    const [s, i] = inputs as [TensorType, TensorType];
    if (i.dtype !== "int32" || i.shape.length !== 0) throw new DtypeError(`the index must be an int32 scalar, got ${i.dtype}${fmtShape(i.shape)}`, "stackRead");
    return [{ dtype: s.dtype, shape: rowTypeOf("stackRead", s) }];
  },
  kernels: { webgpu: onHost("stackRead"), cpu(inputs) {
    const [s, i] = inputs as [Tensor, Tensor];
    const row = i.concrete()[0]!;
    const rows = s.shape[0]!;
    if (!(row >= 0 && row < rows)) throw new ShapeError(`row ${row} is out of range for a stack of ${rows} rows (shape ${fmtShape(s.shape)})`, "stackRead");
    const size = sizeOf(s.shape.slice(1));
    const data = s.concrete();
    // A view, not a copy: a row never changes once pushed (pushes only write past the newest
    // stack's end, and growing copies into new storage).
    const out = data.subarray(row * size, (row + 1) * size);
    handOnRecord(data, row, out);
    return [out];
  } },
  vjp(ctx, cts) {
    const [s, i] = ctx.inputs as [Tensor, Tensor];
    return [scatterAdd(zerosLikeTensor(s), reshape(i, [1]), expandDims(cts[0]!, 0), 0), null];
  },
});

export function stackRead(stack: Tensor, index: Tensor): Tensor {
  return applyOp1(stackReadOp, [stack, index], {});
}

/** An empty stack for rows like `like` (its shape may have unknown dims while staging). */
export const emptyStackOp = defineOp<Record<string, never>>({
  name: "emptyStack",
  batch: refuseBatch("an iteration stack (while-loop gradients) holds one example's values; a batched loop stacks batched values instead"),
  family: "creation",
  inputs: ["like"],
  infer: (inputs) => [{ dtype: inputs[0]!.dtype, shape: [0, ...inputs[0]!.shape] }],
  kernels: { webgpu: onHost("emptyStack"), cpu(inputs) {
    const like = inputs[0]!;
    const out = new (like.concrete().constructor as Ctor)(0);
    runtimeShapes.set(out, [0, ...like.shape]);
    return [out];
  } },
});

export function emptyStack(like: Tensor): Tensor {
  return applyOp1(emptyStackOp, [like], {});
}
