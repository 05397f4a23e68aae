/**
 * The Tensor handle. In eager mode it owns concrete storage; while a function is being
 * staged it stands for a symbolic value (`symbol`) in the graph under construction.
 * The same op call does either, decided by the context stack (core/context.ts).
 *
 * Methods (`a.add(b)` etc.) are attached in ops/methods.ts, next to the op functions.
 */
import { type DType, type TypedArray, allocStorage, isDType, DEFAULT_FLOAT } from "./dtype.js";
import { type Shape, sizeOf, fmtShape, checkShape } from "./shape.js";
import { DtypeError, ShapeError, StagecraftError, ValueError } from "./errors.js";
import { formatTensor } from "./format.js";
import { currentDevice, HOST_DEVICE } from "./device.js";
import { isTracing } from "./context.js";
import { roundToFloat16 } from "./float16.js";
import { isPoolable, markEscaped, noteEscape, noteHolder, pool, POOL_MIN_BYTES, releaseStorage } from "./storage-pool.js";

let nextId = 1;

/** The id the next tensor made will get: tensors with a smaller id existed before (ids only grow). */
export function nextTensorId(): number {
  return nextId;
}

/** Raised when a symbolic (staged) tensor's value is read at trace time. */
export class SymbolicValueError extends StagecraftError {}

/**
 * Storage a backend keeps outside host memory (a GPU buffer), and how to read it back: a tensor
 * holding one has no host storage (`_data` is null) until it is read.
 */
export interface DeviceBuffer {
  /** The values as host data, once they are ready. */
  read(): Promise<TypedArray>;
  /** The values now, or null when they can only be awaited (a GPU's buffers). */
  readSync(): TypedArray | null;
  /** Drops tensor `t`'s hold on this storage now (Tensor.dispose); absent where memory is collected. */
  dispose?(t: Tensor): void;
}

/**
 * Raised when JavaScript converts a tensor to a number (`t > 0`, `-t`, `t | 0`, `isNaN(t)`,
 * `Number(t)`, `t + 1`, `t == 1`): JavaScript has no operator overloading, so without this the
 * result would be NaN or a constant, silently.
 */
export class TensorCoercionError extends StagecraftError {}

/** What converts a tensor to a primitive with each hint (for the message). */
const COERCIONS: Record<string, string> = {
  number: "an arithmetic, comparison, bitwise or unary operator (`t > 0`, `-t`, `t | 0`), Number(t), isNaN(t) or a Math function",
  default: "`+` or `==` (`t + 1`, `t == 0`)",
};

/**
 * What a disposed host tensor whose storage was poolable holds instead (core/storage-pool.ts):
 * every read is an error, never the values of whatever reuses the storage.
 */
const disposedError = () => new ValueError(`a disposed tensor was read (its storage was given back for reuse by tensor.dispose())`, "dataSync");
export const DISPOSED_STORAGE: DeviceBuffer = {
  read: () => Promise.reject(disposedError()),
  readSync: () => {
    throw disposedError();
  },
};

export class Tensor {
  /** Unique id, used by tapes and graph builders. */
  readonly id: number = nextId++;
  readonly dtype: DType;
  readonly shape: readonly number[];
  readonly device: string;
  /**
   * @internal The host storage (`_data` without counting a read as an escape: core/storage-pool.ts).
   * Only Tensor's own methods and the storage pool's reasoning may rely on reads of it not escaping.
   */
  _store: TypedArray | null;
  /** @internal Storage on a device other than host memory (backends/backend.ts), or null. */
  _buffer: DeviceBuffer | null;
  /** @internal The symbolic value in a graph under construction (owned by staging/). */
  symbol: unknown;

  /**
   * `device` defaults to where the storage is: host data is on the host device (an op on
   * another device moves it there), a symbolic tensor on the current device.
   */
  constructor(data: TypedArray | null, shape: Shape, dtype: DType, device?: string, symbol: unknown = null) {
    this._store = data;
    // (core/storage-pool.ts: arrays at offset 0 are never on a poolable buffer)
    if (pool.inUse && data !== null && data.byteOffset !== 0) noteHolder(data);
    this._buffer = null;
    this.shape = shape;
    this.dtype = dtype;
    this.device = device ?? (data !== null ? HOST_DEVICE : currentDevice());
    this.symbol = symbol;
  }

  get rank(): number {
    return this.shape.length;
  }
  get size(): number {
    return sizeOf(this.shape);
  }
  /**
   * The size of axis 0, as an array's length (rows of a matrix, items of a batch): so
   * `for (let i = 0; i < x.length; i++)` runs over the rows. A scalar has none, and a staged
   * tensor whose axis 0 is unknown has no number for it until the graph runs: both are errors,
   * never undefined.
   */
  get length(): number {
    if (this.shape.length === 0) {
      throw new ShapeError(`a scalar tensor (shape []) has no length: length is the size of axis 0 (use size for the number of elements)`, "Tensor.length");
    }
    const n = this.shape[0]!;
    if (n < 0) {
      throw new ShapeError(
        `the length of a tensor of shape [${this.shape.map((d) => (d < 0 ? "?" : d)).join(", ")}] is unknown while the function is staged (axis 0 has no size until the graph runs): ` +
          `loop over its rows with for...of in converted code (AutoGraph stages the loop), or give the inputSignature a concrete size for axis 0`,
        "Tensor.length",
      );
    }
    return n;
  }
  /**
   * @internal Concrete host storage, or null for a symbolic tensor (or one whose storage is a device
   * buffer). Reading it outside a kernel run, or storing into it, keeps large storage out of the
   * pool of disposed storage (core/storage-pool.ts): the reader may keep the array.
   */
  get _data(): TypedArray | null {
    const d = this._store;
    if (pool.inUse && d !== null && d.byteLength >= POOL_MIN_BYTES) noteEscape(d);
    return d;
  }
  set _data(d: TypedArray | null) {
    if (pool.inUse && d !== null) markEscaped(d);
    this._store = d;
  }

  get isSymbolic(): boolean {
    return this._store === null && this._buffer === null;
  }

  /** @internal The concrete storage; throws a clear error for symbolic tensors. */
  concrete(what = "read the value of"): TypedArray {
    const d = this._store;
    if (d !== null) {
      if (pool.inUse && d.byteLength >= POOL_MIN_BYTES) noteEscape(d);
      return d;
    }
    if (this._buffer !== null) {
      const data = this._buffer.readSync();
      if (data === null) {
        throw new ValueError(`cannot ${what} a tensor on ${this.device} synchronously: its data is in device memory; use \`await tensor.data()\``, "dataSync");
      }
      return data;
    }
    throw new SymbolicValueError(
      `cannot ${what} a symbolic tensor (shape ${fmtShape(this.shape)}, ${this.dtype}) while a function is being staged: ` +
        `its value exists only when the graph runs. Use sc.cond/sc.whileLoop (or AutoGraph's native if/while) for ` +
        `data-dependent control flow, or sc.hostCall to run JavaScript on the value at run time`,
    );
  }

  /**
   * The flat values (a copy is not made: do not mutate). int64 values are returned as numbers.
   * The array stays valid after `dispose()` (its storage is then never reused).
   */
  dataSync(): TypedArray {
    const d = this.concrete("call dataSync() on");
    if (pool.inUse) markEscaped(d);
    return d;
  }

  /** The flat values, on any device (a device's memory is read back when it is ready). */
  async data(): Promise<TypedArray> {
    if (this._store === null && this._buffer !== null) return this._buffer.read();
    const d = this.concrete("call data() on");
    if (pool.inUse) markEscaped(d);
    return d;
  }

  /** The values as (nested) JS arrays, on any device (read back when they are ready). */
  async array(): Promise<any> {
    await this.data();
    return this.arraySync();
  }

  /**
   * Frees device memory this tensor holds (a GPU buffer) now, instead of when the tensor is
   * garbage collected; reading it afterwards is an error. In host memory, large storage a matrix
   * product made (16 MB and more: core/storage-pool.ts) is given back for the next product of
   * its size once every tensor on it (the product, its reshapes) is disposed; a tensor disposed
   * so is an error to read. Storage that may still be read elsewhere (an array of it handed out
   * by dataSync or data, a variable's value, a tensor on part of it) is never reused, and
   * disposing its tensors changes nothing; nor does disposing other host tensors (the garbage
   * collector frees them).
   */
  dispose(): void {
    if (this._buffer !== null) {
      this._buffer.dispose?.(this);
      return;
    }
    const d = this._store;
    if (!pool.inUse || d === null || !isPoolable(d)) return;
    this._store = null;
    this._buffer = DISPOSED_STORAGE;
    releaseStorage(d);
  }

  /** The values as (nested) JS arrays; bool as booleans. */
  arraySync(): any {
    const data = this._store ?? this.concrete("call arraySync() on"); // (copied out: not an escape)
    const isBool = this.dtype === "bool";
    const shape = this.shape;
    if (shape.length === 0) return isBool ? data[0] !== 0 : data[0];
    const build = (dim: number, offset: number, stride: number): any[] => {
      const n = shape[dim]!;
      const inner = stride / n;
      const out = new Array(n);
      if (dim === shape.length - 1) {
        for (let i = 0; i < n; i++) out[i] = isBool ? data[offset + i] !== 0 : data[offset + i];
      } else {
        for (let i = 0; i < n; i++) out[i] = build(dim + 1, offset + i * inner, inner);
      }
      return out;
    };
    return build(0, 0, this.size);
  }

  /** The single value of a size-1 tensor. */
  item(): number | boolean {
    const data = this.concrete("call item() on");
    if (data.length !== 1) {
      throw new ShapeError(`item() needs a tensor with exactly one element, got shape ${fmtShape(this.shape)}`, "item");
    }
    return this.dtype === "bool" ? data[0] !== 0 : data[0]!;
  }

  toString(): string {
    if (this.isSymbolic) return `Tensor(<symbolic>, shape=${fmtShape(this.shape)}, dtype=${this.dtype})`;
    if (this._buffer === DISPOSED_STORAGE) return `Tensor(<disposed>, shape=${fmtShape(this.shape)}, dtype=${this.dtype})`;
    const data = this._store ?? this._buffer!.readSync();
    if (data === null) return `Tensor(<on ${this.device}: await data()>, shape=${fmtShape(this.shape)}, dtype=${this.dtype})`;
    return formatTensor(data, this.shape, this.dtype);
  }

  [Symbol.for("nodejs.util.inspect.custom")](): string {
    return this.toString();
  }

  /**
   * Strings (`${t}`, String(t)) give the printed tensor; a number is an error, since JavaScript
   * operators cannot compute on tensors. (Truthiness cannot be intercepted: `if (t)` outside
   * converted code is always true, as for every object; see docs/autograph.md.)
   */
  [Symbol.toPrimitive](hint: string): string {
    if (hint === "string") return this.toString();
    throw new TensorCoercionError(
      `a ${this.isSymbolic ? "symbolic " : ""}${this.dtype}${fmtShape(this.shape)} tensor was converted to a JavaScript ${hint === "number" ? "number" : "primitive"} by ${COERCIONS[hint] ?? COERCIONS.number}, ` +
        `which would give NaN or a constant: JavaScript operators do not compute on tensors. Convert the function with AutoGraph (sc.stage, sc.autograph, ` +
        `or run with \`node --import stagecraft/register\`) so operators and control flow work on tensors, use the tensor's methods (t.greater(0), t.neg()), ` +
        `or read a value with t.item()${hint === "default" ? " (for text, use `${t}` or t.toString())" : ""}` +
        (isTracing()
          ? `. (While staging: if this function was given to a Stagecraft function outside converted code, as in sc.stage(sc.grad(f)) in plain code, give it converted: sc.grad(sc.autograph(f)).)`
          : ""),
    );
  }
}

export type NestedArray = number | boolean | NestedArray[];
export type TensorLike = Tensor | number | boolean | NestedArray | TypedArray;

/** Shape and flat values of a nested JS array; throws ShapeError when ragged. */
function flatten(op: string, value: NestedArray): { shape: number[]; flat: (number | boolean)[] } {
  const shape: number[] = [];
  let probe: NestedArray = value;
  while (Array.isArray(probe)) {
    shape.push(probe.length);
    if (probe.length === 0) break;
    probe = probe[0]!;
  }
  const flat: (number | boolean)[] = [];
  const walk = (v: NestedArray, dim: number, path: number[]): void => {
    if (dim === shape.length) {
      if (Array.isArray(v)) {
        throw new ShapeError(`ragged nested array: element at [${path.join("][")}] is an array but expected a scalar (inferred shape ${fmtShape(shape)})`, op);
      }
      if (typeof v !== "number" && typeof v !== "boolean") {
        throw new ValueError(`element at [${path.join("][")}] is ${typeof v} (${String(v)}), expected a number or boolean`, op);
      }
      flat.push(v);
      return;
    }
    if (!Array.isArray(v) || v.length !== shape[dim]) {
      const got = Array.isArray(v) ? `length ${v.length}` : `a scalar`;
      throw new ShapeError(`ragged nested array: element at [${path.join("][")}] has ${got}, expected length ${shape[dim]} (inferred shape ${fmtShape(shape)})`, op);
    }
    for (let i = 0; i < v.length; i++) walk(v[i]!, dim + 1, [...path, i]);
  };
  walk(value, 0, []);
  return { shape, flat };
}

function isTypedArray(v: unknown): v is TypedArray {
  return ArrayBuffer.isView(v) && !(v instanceof DataView);
}

/** Creates a concrete tensor from a JS value (number, boolean, nested array, typed array). */
export function makeTensor(op: string, value: TensorLike, shape?: Shape, dtype?: DType): Tensor {
  if (dtype !== undefined && !isDType(dtype)) throw new DtypeError(`unknown dtype ${JSON.stringify(dtype)}`, op);
  if (value instanceof Tensor) {
    if (shape || (dtype && dtype !== value.dtype)) throw new ValueError(`got a Tensor; use reshape/cast to change its shape or dtype`, op);
    return value;
  }
  let flat: ArrayLike<number | boolean>;
  let inferredShape: number[];
  let inferredDtype: DType;
  if (isTypedArray(value)) {
    flat = value as ArrayLike<number>;
    inferredShape = [value.length];
    inferredDtype =
      value instanceof Float64Array
        ? "float64"
        : value instanceof Int32Array
          ? "int32"
          : value instanceof Uint8Array
            ? "uint8"
            : value instanceof Int8Array
              ? "int8"
              : value instanceof Int16Array
                ? "int16"
                : value instanceof Uint16Array
                  ? "uint16"
                  : value instanceof Uint32Array
                    ? "uint32"
                    : "float32";
  } else if (typeof value === "number" || typeof value === "boolean") {
    flat = [value];
    inferredShape = [];
    inferredDtype = typeof value === "boolean" ? "bool" : DEFAULT_FLOAT;
  } else if (Array.isArray(value)) {
    const f = flatten(op, value);
    flat = f.flat;
    inferredShape = f.shape;
    inferredDtype = f.flat.length > 0 && f.flat.every((x) => typeof x === "boolean") ? "bool" : DEFAULT_FLOAT;
  } else {
    throw new ValueError(`cannot make a tensor from ${value === null ? "null" : typeof value}`, op);
  }
  const d = dtype ?? inferredDtype;
  let finalShape = inferredShape;
  if (shape !== undefined) {
    finalShape = checkShape(op, shape);
    if (sizeOf(finalShape) !== flat.length) {
      throw new ShapeError(`${flat.length} values cannot have shape ${fmtShape(finalShape)} (size ${sizeOf(finalShape)})`, op);
    }
  }
  const data = allocStorage(d, flat.length);
  if (d === "bool") for (let i = 0; i < flat.length; i++) data[i] = flat[i] ? 1 : 0;
  else if (d === "int64" || d === "uint64") for (let i = 0; i < flat.length; i++) data[i] = Math.trunc(Number(flat[i]));
  else if (d === "float16") for (let i = 0; i < flat.length; i++) data[i] = roundToFloat16(Number(flat[i]));
  else for (let i = 0; i < flat.length; i++) data[i] = Number(flat[i]);
  return new Tensor(data, finalShape, d);
}
