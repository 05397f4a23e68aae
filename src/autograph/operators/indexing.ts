/**
 * Index reads `x[i]` and writes `x[i] = v`. On tensors: a JS integer or integer tensor picks
 * along the leading axis (a scalar index drops it; negative JS integers count from the end),
 * an array of integers gathers rows, `ag.slice(start, stop, step)` and slice strings
 * ("1:3, ::-1", "...", "0, 2") slice as NumPy does. Writes are functional: the result is a new
 * tensor (a Variable is assigned instead). Arrays, objects and other JS values: exactly `x[i]`
 * and `x[i] = v`.
 */
import { Tensor, makeTensor } from "../../core/tensor.js";
import { Variable } from "../../core/variable.js";
import { withEagerContext } from "../../core/context.js";
import { DtypeError, IndexError, ShapeError, ValueError } from "../../core/errors.js";
import { broadcastShapes, fmtShape, hasUnknownDims, normalizeAxis, shapesEqual, sizeOf } from "../../core/shape.js";
import { applyOp1 } from "../../ops/registry.js";
import { scalarOf, toTensor } from "../../ops/convert.js";
import { cast } from "../../ops/cast.js";
import { arange } from "../../ops/creation.js";
import { broadcastTo, gather, reshape, slice as sliceOp, stack } from "../../ops/shape.js";
import { add, sub } from "../../ops/binary.js";
import { cumsum } from "../../ops/reduce.js";
import { equal, less, logicalNot, logicalOr, notEqual } from "../../ops/compare.js";
import { where } from "../../ops/where.js";
import { AutoGraphError, TensorList, asElement, describeValue, dimSizeOp, isTensorLike, listType, readIfVariable } from "./state.js";

// ---------------------------------------------------------------------------------------------
// dimSize: a dimension known only when the graph runs (the op is declared in state.ts)

/** The size of `axis` as an int32 scalar tensor (a constant when the dimension is known). */
export function dimSize(x: Tensor, axis = 0): Tensor {
  const t = toTensor(x, "dimSize");
  const a = normalizeAxis("dimSize", axis, t.rank);
  const d = t.shape[a]!;
  return d >= 0 ? scalarOf(d, "int32") : applyOp1(dimSizeOp, [t], { axis: a });
}

// ---------------------------------------------------------------------------------------------
// slices

/** `start:stop:step` along the leading axis (Python semantics; null/undefined = default). */
export class SliceSpec {
  constructor(
    readonly start: number | Tensor | null = null,
    readonly stop: number | Tensor | null = null,
    readonly step: number | Tensor | null = null,
  ) {}

  toString(): string {
    const f = (b: number | Tensor | null) => (b === null ? "" : String(b instanceof Tensor ? b.item() : b));
    return `${f(this.start)}:${f(this.stop)}${this.step === null ? "" : `:${f(this.step)}`}`;
  }
}

/** `ag.slice(start, stop, step)`: a slice to index with, as Python's `x[start:stop:step]`. */
export function slice(start?: number | Tensor | null, stop?: number | Tensor | null, step?: number | Tensor | null): SliceSpec {
  return new SliceSpec(start ?? null, stop ?? null, step ?? null);
}

function boundOf(b: number | Tensor | null, what: string): number | null {
  if (b === null) return null;
  if (b instanceof Tensor) {
    const t = readIfVariable(b) as Tensor;
    if (t.isSymbolic) throw new ValueError(`slice ${what} must be known while staging (a JS number or a concrete tensor), got a symbolic tensor`, "getItem");
    if (t.size !== 1) throw new ShapeError(`slice ${what} must be a scalar, got shape ${fmtShape(t.shape)}`, "getItem");
    return Number(t.item());
  }
  if (typeof b !== "number" || !Number.isInteger(b)) throw new ValueError(`slice ${what} must be an integer, got ${describeValue(b)}`, "getItem");
  return b;
}

/** Slice strings: "2", "-1", "1:3", "::-1", "...", "0, 1:2". */
function isIndexString(s: string): boolean {
  return /^\s*[+-]?\d+\s*$/.test(s) || /[:,]|\.\.\./.test(s);
}

// ---------------------------------------------------------------------------------------------
// reads

function checkIndexable(t: Tensor, op: string): void {
  if (t.rank === 0) throw new IndexError(`cannot index a scalar tensor (shape [])`, op);
}

/**
 * Integer index tensors count negative entries from the end (as negative JS integers do): a
 * concrete index is checked now; a symbolic one wraps when the graph runs.
 */
function wrapNegative(t: Tensor, idx: Tensor): Tensor {
  if (idx.dtype === "float32" || idx.dtype === "float64") return idx; // gather reports the dtype
  if (!idx.isSymbolic) {
    const d = idx.dataSync();
    let negative = false;
    for (let k = 0; k < d.length; k++) if (d[k]! < 0) negative = true;
    if (!negative) return idx;
  }
  return where(less(idx, 0), add(idx, dimSize(t, 0)), idx);
}

/** Reads `t[i]` for a tensor `t`. */
function tensorGetItem(t: Tensor, i: unknown): unknown {
  if (typeof i === "number") {
    checkIndexable(t, "getItem");
    if (!Number.isInteger(i)) throw new IndexError(`index ${i} is not an integer`, "getItem");
    const n = t.shape[0]!;
    if (n >= 0) {
      if (i < -n || i >= n) throw new IndexError(`index ${i} is out of range for axis 0 of shape ${fmtShape(t.shape)} (valid: ${-n}..${n - 1})`, "getItem");
      return gather(t, scalarOf(i < 0 ? i + n : i, "int32"), 0);
    }
    return gather(t, i >= 0 ? scalarOf(i, "int32") : add(dimSize(t, 0), i), 0);
  }
  if (typeof i === "string") return sliceOp(t, i);
  if (i instanceof SliceSpec) {
    checkIndexable(t, "getItem");
    return sliceOp(t, [boundOf(i.start, "start")], [boundOf(i.stop, "stop")], [boundOf(i.step, "step")]);
  }
  if (i instanceof Tensor) {
    checkIndexable(t, "getItem");
    const idx = readIfVariable(i) as Tensor;
    if (idx.dtype === "bool") {
      throw new DtypeError(`indexing with a bool tensor (a mask) is not supported: the result's shape would depend on the data; use sc.where`, "getItem");
    }
    return gather(t, wrapNegative(t, idx), 0);
  }
  if (Array.isArray(i)) {
    checkIndexable(t, "getItem");
    return gather(t, i as number[], 0);
  }
  return (t as unknown as Record<PropertyKey, unknown>)[i as PropertyKey];
}

/** A JS base indexed by a tensor: a concrete scalar is its value; symbolic indexes stack the array. */
function jsGetItemByTensor(x: unknown, i: Tensor): unknown {
  const t = readIfVariable(i) as Tensor;
  if (!t.isSymbolic) {
    if (t.size !== 1) throw new IndexError(`cannot index ${describeValue(x)} with a tensor of shape ${fmtShape(t.shape)}; use a scalar`, "getItem");
    return (x as Record<PropertyKey, unknown>)[t.item() as unknown as PropertyKey];
  }
  const isArrayLike = Array.isArray(x) || (ArrayBuffer.isView(x) && !(x instanceof DataView));
  if (isArrayLike) {
    const items = Array.from(x as ArrayLike<unknown>);
    if (items.length > 0 && items.every((v) => isTensorLike(v))) {
      const stacked = stack(items.map((v) => (v instanceof Tensor ? v : toTensor(v as number | boolean, "getItem"))), 0);
      return gather(stacked, wrapNegative(stacked, t), 0);
    }
  }
  throw new AutoGraphError(
    `cannot index ${describeValue(x)} with a symbolic tensor: the index is known only when the graph runs. ` +
      `Index a tensor instead (an array of tensors or numbers is stacked automatically)`,
  );
}

/** `x[i]`. */
export function getItem(x: unknown, i: unknown): unknown {
  if (x instanceof TensorList) {
    if (typeof i === "symbol" || (typeof i === "string" && i in x)) return (x as unknown as Record<PropertyKey, unknown>)[i];
    if (typeof i === "number") {
      // (out of a known length, or not an integer: undefined, as an array gives)
      if (!Number.isInteger(i) || (x.lengthKnown && (i < 0 || i >= (x.length as number)))) return undefined;
      return x.get(i);
    }
    if (i instanceof Tensor) return x.get(i);
    return tensorGetItem(x.buffer, i);
  }
  if (x instanceof Tensor) {
    if (typeof i === "symbol" || (typeof i === "string" && (i in x || !isIndexString(i)))) return (x as unknown as Record<PropertyKey, unknown>)[i];
    return tensorGetItem(readIfVariable(x) as Tensor, i);
  }
  if (x !== null && x !== undefined && i instanceof Tensor) return jsGetItemByTensor(x, i);
  return (x as Record<PropertyKey, unknown>)[i as PropertyKey];
}

// ---------------------------------------------------------------------------------------------
// writes

function valueFor(t: Tensor, v: unknown, shape: readonly number[]): Tensor {
  if (!isTensorLike(v) && !Array.isArray(v)) throw new ValueError(`cannot assign ${describeValue(v)} into a ${t.dtype} tensor`, "setItem");
  let vt = v instanceof Tensor ? (readIfVariable(v) as Tensor) : toTensor(v as number, "setItem", typeof v === "boolean" && t.dtype !== "bool" ? undefined : t.dtype);
  if (vt.dtype !== t.dtype) vt = cast(vt, t.dtype);
  if (shapesEqual(vt.shape, shape)) return vt;
  let ok = false;
  try {
    ok = shapesEqual(broadcastShapes("setItem", vt.shape, shape), shape);
  } catch {
    ok = false;
  }
  if (!ok) throw new ShapeError(`cannot assign a value of shape ${fmtShape(vt.shape)} to a selection of shape ${fmtShape(shape)}`, "setItem");
  return broadcastTo(vt, shape);
}

/** 0, 1, ..., n - 1 for the leading axis of `t` (length known only when the graph runs), as int32. */
function rowNumbers(t: Tensor): Tensor {
  if (t.shape.slice(1).some((d) => d < 0)) throw new ShapeError(`assignment with a symbolic index needs known element dims, got shape ${fmtShape(t.shape)}`, "setItem");
  const flat = reshape(t, [-1, t.shape.slice(1).reduce((a, b) => a * b, 1)]);
  const column = gather(flat, 0, 1);
  const truth = notEqual(column, column);
  const ones = cast(logicalOr(truth, logicalNot(truth)), "int32");
  return sub(cumsum(ones, 0), 1);
}

/** `t[i] = v` for a tensor with a symbolic scalar index along the leading axis. */
function maskUpdate(t: Tensor, idx: Tensor, v: unknown): Tensor {
  checkIndexable(t, "setItem");
  if (idx.dtype === "bool" || idx.dtype === "float32" || idx.dtype === "float64") throw new DtypeError(`indices must be integers, got a ${idx.dtype} tensor`, "setItem");
  if (!idx.shape.every((d) => d === 1)) {
    throw new IndexError(`assignment with a symbolic index needs a scalar index, got shape ${fmtShape(idx.shape)}; use sc.scatterAdd for many rows`, "setItem");
  }
  const n = t.shape[0]!;
  const i = reshape(idx, []);
  const size: Tensor | number = n >= 0 ? n : applyOp1(dimSizeOp, [t], { axis: 0 });
  const k = where(less(i, 0), add(i, size), i);
  // Row numbers: known now, or counted when the graph runs (a tensor list's length).
  const rows = n >= 0 ? withEagerContext(() => arange(n)) : rowNumbers(t);
  const mask = reshape(equal(rows, k), [n, ...t.shape.slice(1).map(() => 1)]);
  return where(mask, valueFor(t, v, t.shape.slice(1)), t);
}

/** `t[i] = v` for a static selection `i`: a new tensor. */
function tensorSetItem(t: Tensor, i: unknown, v: unknown): Tensor {
  if (i instanceof Tensor) {
    const idx = readIfVariable(i) as Tensor;
    if (idx.isSymbolic) return maskUpdate(t, idx, v);
    if (idx.size === 1 && idx.dtype !== "bool") i = Number(idx.item());
    else i = idx;
  }
  if (hasUnknownDims(t.shape)) {
    throw new ShapeError(`assignment into a tensor of partly unknown shape ${fmtShape(t.shape)} is not supported; use sc.where`, "setItem");
  }
  const size = sizeOf(t.shape);
  // The flat positions the selection covers, computed now (they depend only on the shape).
  const positions = withEagerContext(() => {
    const ids = reshape(arange(size), t.shape as number[]);
    const sel = tensorGetItem(ids, i);
    if (!(sel instanceof Tensor)) throw new IndexError(`cannot assign to index ${describeValue(i)} of a tensor`, "setItem");
    return sel;
  });
  const p = positions.dataSync();
  const m = p.length;
  const vals = valueFor(t, v, positions.shape);
  if (m === 0) return t;
  const map = new Int32Array(size).fill(-1);
  for (let k = 0; k < m; k++) map[p[k]!] = k;
  const maskData = new Uint8Array(size);
  const gatherData = new Int32Array(size);
  for (let j = 0; j < size; j++) {
    maskData[j] = map[j]! >= 0 ? 1 : 0;
    gatherData[j] = map[j]! >= 0 ? map[j]! : 0;
  }
  const shape = t.shape as number[];
  const mask = makeTensor("setItem", maskData, shape, "bool");
  const picked = gather(reshape(vals, [m]), makeTensor("setItem", gatherData, shape, "int32"), 0);
  return where(mask, picked, t);
}

/**
 * `x[i] = v`: tensors are updated functionally (the new tensor is returned; a Variable is
 * assigned and returned); other values are assigned natively and returned. `strict` is the
 * mode of the code the assignment comes from: sloppy-mode code (pass false) ignores a failed
 * assignment (a frozen object, a primitive) as JavaScript does there.
 */
export function setItem(x: unknown, i: unknown, v: unknown, strict = true): unknown {
  if (x instanceof TensorList && !(typeof i === "symbol" || (typeof i === "string" && i in x))) {
    x.replaceBuffer(tensorSetItem(x.buffer, i, v), 0);
    return x;
  }
  if (x instanceof Tensor) {
    const native = typeof i === "symbol" || (typeof i === "string" && (i in x || !isIndexString(i)));
    if (!native) {
      if (x instanceof Variable) {
        x.assign(tensorSetItem(x.read(), i, v));
        return x;
      }
      return tensorSetItem(x, i, v);
    }
  } else if (x !== null && x !== undefined && i instanceof Tensor) {
    const t = readIfVariable(i) as Tensor;
    if (t.isSymbolic) {
      // An array of tensors and numbers written at a symbolic index becomes a tensor list (its
      // elements stacked), updated where the index points; the transform rebinds the variable.
      const ty = Array.isArray(x) && Object.getPrototypeOf(x) === Array.prototype && x.length > 0 ? listType([...x, v]) : null;
      if (ty && !hasUnknownDims(ty.elementShape)) {
        const list = new TensorList(stack(
          (x as unknown[]).map((e) => asElement(e, ty.dtype)),
          0,
        ), ty.weak);
        list.buffer = tensorSetItem(list.buffer, t, v);
        return list;
      }
      throw new AutoGraphError(`cannot assign into ${describeValue(x)} at a symbolic index: the index is known only when the graph runs; make it a tensor (sc.stack) first`);
    }
    if (t.size !== 1) throw new IndexError(`cannot index ${describeValue(x)} with a tensor of shape ${fmtShape(t.shape)}; use a scalar`, "setItem");
    i = t.item();
  }
  if (strict || x === null || x === undefined) (x as Record<PropertyKey, unknown>)[i as PropertyKey] = v;
  else Reflect.set(Object(x) as object, i as PropertyKey, v, x);
  return x;
}
