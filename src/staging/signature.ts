/**
 * Trace-cache keys. Tensors key by (dtype, shape, device); JS primitives by value; Variables
 * by identity; arrays and plain objects by structure and leaves; other objects (functions,
 * class instances) by identity, held weakly.
 */
import { Tensor } from "../core/tensor.js";
import { Variable } from "../core/variable.js";
import { allocStorage, type DType } from "../core/dtype.js";
import { ShapeError, DtypeError } from "../core/errors.js";
import { isPlainObject } from "../core/objects.js";

/** An input specification: `null` (or -1) dimensions accept any size. */
export class TensorSpec {
  readonly shape: readonly number[];
  constructor(
    shape: readonly (number | null)[],
    readonly dtype: DType = "float32",
    readonly name?: string,
  ) {
    this.shape = shape.map((d) => (d === null ? -1 : d));
  }
  toString(): string {
    return `spec([${this.shape.map((d) => (d < 0 ? "null" : d)).join(", ")}], ${this.dtype})`;
  }
}

export function spec(shape: readonly (number | null)[], dtype: DType = "float32", name?: string): TensorSpec {
  return new TensorSpec(shape, dtype, name);
}

/**
 * An object that changes how a staged function traces without changing identity (a model in
 * train or eval mode) implements `[traceKey]()`: its result joins the object's identity in the
 * cache key, so each mode gets its own trace.
 */
export const traceKey: unique symbol = Symbol.for("stagecraft.traceKey");

/** The traceKey of `o`, or "" when it has none. */
function objectMode(o: object): string {
  const f = (o as { [traceKey]?: unknown })[traceKey];
  return typeof f === "function" ? `(${String(f.call(o))})` : "";
}

let nextObjectId = 1;
const objectIds = new WeakMap<object, number>();
function objectId(o: object): number {
  let id = objectIds.get(o);
  if (id === undefined) objectIds.set(o, (id = nextObjectId++));
  return id;
}

/** One leaf of a signature, described for retrace diagnostics. */
export interface LeafInfo {
  path: string;
  kind: "tensor" | "variable" | "value" | "object";
  describe: string;
  /** For tensors: dtype and (possibly relaxed) shape. */
  dtype?: DType;
  shape?: number[];
}

export interface Signature {
  key: string;
  /** Tensor leaves in order: the staged function's graph inputs. */
  tensors: Tensor[];
  leaves: LeafInfo[];
}

/**
 * Computes the signature of `args`. `relaxed` (from inputSignature or reduceRetracing)
 * gives, per tensor leaf, the shape to key and trace with (-1 = any size).
 */
export function signatureOf(args: readonly unknown[], fnName: string, specs?: readonly unknown[], relaxed?: readonly (readonly number[])[]): Signature {
  const tensors: Tensor[] = [];
  const leaves: LeafInfo[] = [];
  const parts: string[] = [];
  const walk = (x: unknown, s: unknown, path: string): void => {
    if (x instanceof Variable) {
      parts.push(`V${x.variableId}`);
      leaves.push({ path, kind: "variable", describe: `variable ${x.name}` });
      return;
    }
    if (x instanceof Tensor) {
      let shape = x.shape.slice();
      if (s instanceof TensorSpec) shape = checkAgainstSpec(x, s, path, fnName);
      const r = relaxed?.[tensors.length];
      if (r && r.length === shape.length) shape = shape.map((d, i) => (r[i]! < 0 ? -1 : d));
      tensors.push(x);
      parts.push(`T${x.dtype}[${shape.join(",")}]@${x.device}`);
      leaves.push({ path, kind: "tensor", describe: `tensor ${x.dtype}[${shape.map((d) => (d < 0 ? "?" : d)).join(", ")}]`, dtype: x.dtype, shape });
      return;
    }
    if (Array.isArray(x)) {
      parts.push(`[${x.length}`);
      x.forEach((v, i) => walk(v, Array.isArray(s) ? s[i] : undefined, `${path}[${i}]`));
      parts.push("]");
      return;
    }
    if (isPlainObject(x)) {
      const keys = Object.keys(x);
      parts.push(`{${keys.map((k) => JSON.stringify(k)).join(",")}`);
      for (const k of keys) walk(x[k], isPlainObject(s) ? s[k] : undefined, `${path}.${k}`);
      parts.push("}");
      return;
    }
    if (x !== null && (typeof x === "object" || typeof x === "function")) {
      const mode = objectMode(x);
      parts.push(`O${objectId(x)}${mode}`);
      leaves.push({ path, kind: "object", describe: `${typeof x === "function" ? "function" : "object"} #${objectId(x)}${mode}` });
      return;
    }
    const d = typeof x === "number" && Object.is(x, -0) ? "-0" : typeof x === "string" ? JSON.stringify(x) : String(x);
    parts.push(`${typeof x}:${d}`);
    leaves.push({ path, kind: "value", describe: `${typeof x} ${d}` });
  };
  args.forEach((a, i) => walk(a, specs?.[i], `argument ${i}`));
  return { key: parts.join(" "), tensors, leaves };
}

function checkAgainstSpec(x: Tensor, s: TensorSpec, path: string, fnName: string): number[] {
  if (x.dtype !== s.dtype) throw new DtypeError(`${path} has dtype ${x.dtype} but the input signature says ${s}`, fnName);
  const ok = x.shape.length === s.shape.length && x.shape.every((d, i) => s.shape[i]! < 0 || s.shape[i] === d);
  if (!ok) throw new ShapeError(`${path} has shape [${x.shape.join(", ")}] which does not match the input signature ${s}`, fnName);
  return s.shape.slice();
}

/** Explains how a new signature differs from an earlier one (for retrace warnings). */
export function describeChange(prev: LeafInfo[], next: LeafInfo[]): string {
  const changes: string[] = [];
  const n = Math.max(prev.length, next.length);
  for (let i = 0; i < n; i++) {
    const a = prev[i];
    const b = next[i];
    if (!a || !b || a.path !== b.path) return "the structure of the arguments changed";
    if (a.describe !== b.describe) changes.push(`${b.path} changed from ${a.describe} to ${b.describe}`);
  }
  return changes.join("; ") || "the structure of the arguments changed";
}

/** Whether an argument structure holds sc.spec(...) leaves. */
export function containsSpec(x: unknown): boolean {
  if (x instanceof TensorSpec) return true;
  if (Array.isArray(x)) return x.some(containsSpec);
  if (isPlainObject(x)) return Object.values(x).some(containsSpec);
  return false;
}

/** Arguments standing for specs: each spec a zero tensor of its dtype (unknown dims 1), checked against the spec by signatureOf. */
export function specArguments(x: unknown): any {
  if (x instanceof TensorSpec) return zerosOf(x.shape.map((d) => (d < 0 ? 1 : d)), x.dtype);
  if (Array.isArray(x)) return x.map(specArguments);
  if (isPlainObject(x)) return Object.fromEntries(Object.entries(x).map(([k, v]) => [k, specArguments(v)]));
  return x;
}

function zerosOf(shape: number[], dtype: DType): Tensor {
  return new Tensor(allocStorage(dtype, shape.reduce((a, b) => a * b, 1)), shape, dtype);
}
