/**
 * Shared runtime pieces of the AutoGraph operators: the error classes, source locations
 * (`loc` strings "file:line:column" written by the transform), the "no value yet" marker,
 * value classification (JS value / concrete tensor / symbolic tensor), and snapshots of the
 * state that staged constructs carry (nests: arrays and plain objects of leaves, restored and
 * rewritten in place so `const` objects mutated in a branch or loop keep their identity).
 */
import { fileURLToPath } from "../../core/platform/node.js";
import { sourceExcerpt, StagecraftError, formatLocation, type SourceLocation } from "../../core/errors.js";
import { Tensor } from "../../core/tensor.js";
import { Variable } from "../../core/variable.js";
import { currentHandler } from "../../core/context.js";
import { fmtShape, hasUnknownDims } from "../../core/shape.js";
import { DEFAULT_FLOAT, promoteTypes, weakScalarDtype, type DType } from "../../core/dtype.js";
import { full } from "../../ops/fill.js";
import { DtypeError, IndexError, ShapeError, ValueError, userLocation } from "../../core/errors.js";
import { scalarOf } from "../../ops/convert.js";
import { cast } from "../../ops/cast.js";
import { concat, dimSizeOp, expandDims, gather, slice, squeeze, stack, unstack } from "../../ops/shape.js";
import { applyOp, applyOp1 } from "../../ops/registry.js";
import { assertOp, registerAssertion } from "../../ops/host.js";
import { add } from "../../ops/binary.js";
import { greater, less } from "../../ops/compare.js";
import { where } from "../../ops/where.js";
import { STACKED, type StackedSequence } from "../../core/tensor-sequence.js";
import { TraceContext } from "../../staging/trace-context.js";

/** Raised when converted code cannot be staged as written (names the variable and the source line). */
export class AutoGraphError extends StagecraftError {
  constructor(message: string, loc?: string | null) {
    super(message, undefined, null);
    const location = parseLoc(loc);
    Object.defineProperty(this, "location", { value: location, enumerable: true });
    const excerpt = sourceExcerpt(location);
    Object.defineProperty(this, "sourceLine", { value: excerpt, enumerable: true });
    const head = `${this.name}: ${this.message}`;
    if (excerpt && this.stack?.startsWith(head)) this.stack = `${head}\n${excerpt}${this.stack.slice(head.length)}`;
  }
}

/** Raised (at run time for staged code) when `ag.assert` / `sc.assert` fails. */
export { AssertionFailedError } from "../../ops/host.js";

/**
 * The value a variable holds before its first assignment when the transform needs to pass
 * one explicitly (`getState` may also return plain `undefined`; both mean "no value yet").
 */
export const UNDEFINED: unique symbol = Symbol("ag.UNDEFINED");

/** What the return value variable holds after `return;` or `return undefined` (see returns.ts). */
export const RETURNED_UNDEFINED: unique symbol = Symbol("returned undefined");

/**
 * A read of a `let`/`const`/`class` binding whose declaration the transform moved up: before
 * its original declaration has run it holds UNDEFINED, and the read throws as natively.
 */
export function tdz<T>(value: T, name: string): T {
  if (value === UNDEFINED) throw new ReferenceError(`Cannot access '${name}' before initialization`);
  return value;
}

export function isUndef(x: unknown): boolean {
  return x === undefined || x === UNDEFINED;
}

/**
 * Names the transform generates (`$brk`, `$ret`, `$retval`, ...) start with `$`: for them an
 * undefined value in one branch or before a staged loop is filled with zeros of the type the
 * other branch / the loop body gives (their flags guarantee the filler is never observed),
 * instead of the error a user variable gets.
 */
export function isGeneratedName(name: string): boolean {
  return name.startsWith("$");
}

/** What the transform's variables stand for, by name without its numeric suffix. */
const GENERATED_MEANINGS: Record<string, string> = {
  $retval: "the return value",
  $ret: "whether the function has returned",
  $brk: "whether the loop has been left by break",
  $cont: "whether the iteration has been left by continue",
  $counter: "the loop counter",
  $fab: "whether a finally block jumped",
  $fexc: "whether a try block threw",
  $fval: "the exception a try block threw",
};

/**
 * How messages name a state variable (or a path in it: `params.w`, `xs[2]`): `variable x`, or
 * what a variable the transform introduced stands for ("the return value"), never its name.
 */
export function subjectOf(path: string): string {
  if (!isGeneratedName(path)) return `variable ${path}`;
  const m = /^(\$[A-Za-z_]+?)(\d*)([.[].*)?$/.exec(path);
  const meaning = m ? GENERATED_MEANINGS[m[1]!] : undefined;
  // `$x` without a known meaning is the per-iteration copy of a loop variable x.
  if (!meaning) return m && !m[2] ? `variable ${path.slice(1)}` : "a value the transform introduced";
  return m![3] ? `${meaning} (at ${m![3]})` : meaning;
}

// ---------------------------------------------------------------------------------------------
// locations

const LOC_RE = /^(.*):(\d+):(\d+)$/;

export function parseLoc(loc: string | null | undefined): SourceLocation | null {
  if (typeof loc !== "string") return null;
  const m = LOC_RE.exec(loc);
  if (!m) return null;
  let file = m[1]!;
  if (file.startsWith("file://")) {
    try {
      file = fileURLToPath(file);
    } catch {
      /* keep the URL */
    }
  }
  return { file, line: Number(m[2]), column: Number(m[3]) };
}

/** " (at file:line:col)" for a transform `loc`, or "" when there is none. */
export function at(loc: string | null | undefined): string {
  if (typeof loc !== "string" || loc === "") return "";
  const p = parseLoc(loc);
  return ` (at ${p ? formatLocation(p) : loc})`;
}

/** The location argument for typed errors (undefined: let the error find the caller's frame). */
export function locArg(loc: string | null | undefined): SourceLocation | undefined {
  return parseLoc(loc) ?? undefined;
}

// ---------------------------------------------------------------------------------------------
// value classification

export function activeTrace(): TraceContext | null {
  const h = currentHandler();
  return h instanceof TraceContext ? h : null;
}

/** A Variable's current value (a graph read while staging); other values unchanged. */
export function readIfVariable<T>(x: T): T | Tensor {
  return x instanceof Variable ? x.read() : x;
}

export function isTensor(x: unknown): x is Tensor {
  return x instanceof Tensor;
}

/** Tensors, numbers and booleans: what may differ between staged branches and iterations. */
export function isTensorLike(x: unknown): x is Tensor | number | boolean {
  return x instanceof Tensor || typeof x === "number" || typeof x === "boolean";
}

export function describeValue(x: unknown): string {
  if (x === UNDEFINED || x === RETURNED_UNDEFINED) return "undefined";
  if (x instanceof Variable) return `sc.Variable ${x.name}`;
  if (x instanceof Tensor) return `a ${x.isSymbolic ? "symbolic " : ""}${x.dtype}${fmtShape(x.shape)} tensor`;
  if (x === null) return "null";
  if (typeof x === "string") return `the string ${JSON.stringify(x.length > 40 ? x.slice(0, 40) + "..." : x)}`;
  if (typeof x === "number" || typeof x === "boolean" || typeof x === "bigint") return `the ${typeof x} ${String(x)}`;
  if (typeof x === "function") return `a function${x.name ? ` (${x.name})` : ""}`;
  if (Array.isArray(x)) return `an array of length ${x.length}`;
  if (typeof x === "object") {
    const ctor = (Object.getPrototypeOf(x) as { constructor?: { name?: string } } | null)?.constructor?.name;
    return ctor && ctor !== "Object" ? `a ${ctor}` : "an object";
  }
  return String(x);
}

/**
 * The dtype of the weakly typed tensor a JS number becomes when staged control flow carries it:
 * integers that fit int32 are int32; other numbers float64 (a JS number's own precision, so
 * `j * 0.1` is not rounded to float32 before it meets a tensor).
 */
export function dtypeOfNumber(v: number | boolean): "bool" | "int32" | "float64" {
  if (typeof v === "boolean") return "bool";
  return Number.isInteger(v) && Math.abs(v) < 2 ** 31 ? "int32" : "float64";
}

// ---------------------------------------------------------------------------------------------
// weakly typed tensors

const weak = new WeakSet<Tensor>();

/**
 * Marks a tensor that stands for a JS number (a staged loop variable or cond output that was a
 * number, and arithmetic on those with JS numbers): like a JS number it takes the dtype of the
 * strongly typed tensors it meets in a branch merge or a loop. Returns the tensor.
 */
export function markWeak<T>(t: T): T {
  if (t instanceof Tensor) weak.add(t);
  return t;
}

export function isWeak(x: unknown): boolean {
  return x instanceof Tensor && weak.has(x);
}

/** A JS number/boolean or a weak tensor. */
export function isWeakOperand(x: unknown): boolean {
  return typeof x === "number" || typeof x === "boolean" || (x instanceof Tensor && weak.has(x));
}

/** The dtype a weak tensor takes where a strong dtype meets it: the one its JS number would take. */
export function weakTensorDtype(w: Tensor, strong: DType): DType {
  const sample = w.dtype === "bool" ? true : isFloatDtype(w.dtype) ? 0.5 : 1;
  return promoteTypes(strong, weakScalarDtype(sample, strong));
}

function isFloatDtype(d: DType): boolean {
  return d === "float32" || d === "float64";
}

/**
 * Operands as JavaScript numbers would meet them: a weak tensor meeting a strongly typed tensor
 * is cast to the dtype its JS number would take there (float64 `j * 0.1` meeting a float32
 * tensor becomes float32, as the JS number would). Other operands are unchanged.
 */
export function weakOperands(args: readonly unknown[]): unknown[] {
  let strong: DType | null = null;
  for (const a of args) if (a instanceof Tensor && !weak.has(a)) strong = strong === null ? a.dtype : promoteTypes(strong, a.dtype);
  if (strong === null) return [...args];
  const d = strong;
  return args.map((a) => {
    if (!(a instanceof Tensor) || !weak.has(a)) return a;
    const to = weakTensorDtype(a, d);
    return a.dtype === to ? a : cast(a, to);
  });
}

// ---------------------------------------------------------------------------------------------
// relaxed shapes

const relaxed = new WeakMap<Tensor, (number | null)[]>();

/**
 * Marks a tensor as one whose shape may change across the iterations of a staged loop it is a
 * variable of: `null` dims may change (default: all of them). Returns the tensor itself.
 */
export function relaxShape<T>(x: T, shape?: readonly (number | null)[]): T {
  if (x instanceof Tensor) relaxed.set(x, shape ? [...shape] : x.shape.map(() => null));
  return x;
}

export function relaxedShapeOf(x: unknown): (number | null)[] | undefined {
  return x instanceof Tensor ? relaxed.get(x) : undefined;
}

// ---------------------------------------------------------------------------------------------
// tensor lists

/**
 * A list buffer's length (its axis 0) where it is known relative to another buffer's while
 * tracing: length(t) = length(base) + delta. Inside a staged loop's body a list's length is
 * unknown, but a push there makes the body's buffer one longer than the one the body started
 * from; with a trip count known at trace time that makes the length after the loop static.
 * Every tensor not in the map is its own base (delta 0).
 */
const lengthRelation = new WeakMap<Tensor, { base: Tensor; delta: number }>();

/** length(t) = length(base) + delta, as far as tracing knows (base = t, delta = 0 at least). */
export function lengthRelative(t: Tensor): { base: Tensor; delta: number } {
  return lengthRelation.get(t) ?? { base: t, delta: 0 };
}

/** Records that `t` is `delta` rows longer than `from` (as lengthRelative(from) goes). */
export function relateLength(t: Tensor, from: Tensor, delta: number): void {
  if (t === from) return;
  const r = lengthRelative(from);
  lengthRelation.set(t, { base: r.base, delta: r.delta + delta });
}

export { dimSizeOp };

/**
 * An array that a staged loop (or a staged if) appends to: its elements live in one tensor
 * (`buffer`, shape [length, ...element shape]) whose length is known only when the graph runs.
 * The variable holds the list after the construct too. Converted code pushes to it, pops from
 * it, indexes it (`xs[i]`, `xs.at(i)`), slices it, maps it, iterates it with for...of and reads
 * its length; the ops that take an array of tensors take it as one (`sc.stack(xs)`,
 * `sc.concat(xs)`), the ops that take a tensor-like as the tensor it stacks to (as they take an
 * array of numbers), and a staged function returning it returns that tensor. `weak`: its
 * elements stand for JS numbers.
 */
export class TensorList implements StackedSequence {
  private current!: Tensor;

  constructor(
    buffer: Tensor,
    readonly weak = false,
  ) {
    this.buffer = buffer;
  }

  get buffer(): Tensor {
    return this.current;
  }
  set buffer(t: Tensor) {
    this.current = t;
    relaxShape(t, [null, ...t.shape.slice(1)]);
  }

  /** Whether the length is known now (a JS number) rather than when the graph runs. */
  get lengthKnown(): boolean {
    return this.current.shape[0]! >= 0;
  }

  /** The number of elements: a JS number when known, else an int32 scalar tensor standing for one. */
  get length(): number | Tensor {
    const n = this.current.shape[0]!;
    return n >= 0 ? n : markWeak(applyOp1(dimSizeOp, [this.current], { axis: 0 }));
  }

  /** Replaces the buffer by `t`, which has `lengthChange` more rows than the current one. */
  replaceBuffer(t: Tensor, lengthChange: number): void {
    relateLength(t, this.current, lengthChange);
    this.buffer = t;
  }

  /** Appends elements (of the list's dtype and element shape); returns the new length. */
  push(...items: unknown[]): number | Tensor {
    for (const item of items) this.replaceBuffer(concat([this.current, expandDims(this.element(item), 0)], 0), 1);
    return this.length;
  }

  /**
   * Removes and returns the last element (undefined when the list is known to be empty; while
   * staging with an unknown length, popping an empty list fails when the graph runs).
   */
  pop(): Tensor | undefined {
    if (this.current.shape[0] === 0) return undefined;
    const last = squeeze(slice(this.current, [-1]), 0);
    // (an empty list of unknown length fails here when the graph runs, so the length is one less)
    this.replaceBuffer(slice(this.current, [0], [-1]), -1);
    return this.weak ? markWeak(last) : last;
  }

  /** The elements stacked: a tensor of shape [length, ...element shape]. */
  stack(): Tensor {
    return this.current;
  }

  [STACKED](dtype?: DType, nonEmptyFor?: string): Tensor {
    const n = this.current.shape[0]!;
    if (nonEmptyFor !== undefined) {
      const fail = () => new ValueError(`needs at least one tensor, got an empty list`, nonEmptyFor);
      if (n === 0) throw fail();
      if (n < 0) {
        const where = userLocation();
        const made = () => new ValueError(`needs at least one tensor, got an empty list`, nonEmptyFor, where);
        applyOp(assertOp, [greater(applyOp1(dimSizeOp, [this.current], { axis: 0 }), 0)], { fnId: registerAssertion(made), message: "" });
      }
    }
    // (an array of JS numbers makes a tensor of the default float dtype, booleans bool)
    const d = dtype ?? (this.weak && this.current.dtype !== "bool" ? DEFAULT_FLOAT : this.current.dtype);
    return this.current.dtype === d ? this.current : cast(this.current, d);
  }

  /** `xs.at(i)`: an integer (or integer tensor) counting from the end when negative; undefined out of a known range. */
  at(i: unknown): unknown {
    if (typeof i === "number" && this.lengthKnown) {
      const n = this.current.shape[0]!;
      const k = Math.trunc(i) || 0;
      if (k < -n || k >= n) return undefined;
    }
    return this.get(typeof i === "number" ? Math.trunc(i) || 0 : i);
  }

  /** The element at an integer index (negative from the end), a JS number or an integer tensor. */
  get(i: unknown): Tensor {
    const t = listElement(this.current, i);
    return this.weak ? markWeak(t) : t;
  }

  /**
   * `xs.slice(start, end)` with JS integers (JavaScript's rules: negative from the end, clamped):
   * a new list. Bounds known only when the graph runs are refused.
   */
  slice(start?: unknown, end?: unknown): TensorList {
    const bound = (b: unknown, what: string): number | null => {
      if (b === undefined) return null;
      if (b instanceof Tensor && !b.isSymbolic && b.size === 1) b = Number(b.item());
      if (typeof b !== "number") {
        throw listError(`slice of a list built in a staged construct needs JS integer bounds, got ${describeValue(b)} as its ${what}; slice sc.stack(xs) with ag.slice or sc.slice instead`);
      }
      return Math.trunc(b) || 0;
    };
    const s = bound(start, "start");
    const e = bound(end, "end");
    return new TensorList(slice(this.current, [s ?? 0], [e ?? Number.MAX_SAFE_INTEGER]), this.weak);
  }

  private element(item: unknown): Tensor {
    const d = this.current.dtype;
    const shape = this.current.shape.slice(1);
    let t: Tensor;
    if (item instanceof Tensor) {
      t = readIfVariable(item) as Tensor;
      if (t.dtype !== d) {
        if (!isWeak(item)) throw new DtypeError(`cannot push a ${t.dtype} tensor onto a list of ${d} tensors`, "push");
        t = cast(t, d);
      }
    } else if (typeof item === "number" || typeof item === "boolean") t = scalarOf(Number(item), d);
    else if (Array.isArray(item) && listType(item)) t = asElement(item, d);
    else throw new DtypeError(`cannot push ${describeValue(item)} onto a list of ${d} tensors`, "push");
    if (t.rank !== shape.length || t.shape.some((x, j) => x >= 0 && shape[j]! >= 0 && x !== shape[j])) {
      throw new ShapeError(`cannot push a tensor of shape ${fmtShape(t.shape)} onto a list of elements of shape ${fmtShape(shape)}`, "push");
    }
    return t;
  }

  *[Symbol.iterator](): Iterator<Tensor> {
    if (!this.lengthKnown) {
      throw listError(
        "a list built in a staged construct has a length known only when the graph runs, so it cannot be spread, destructured or iterated natively; " +
          "iterate it with for...of in converted code, or use sc.stack(xs)",
      );
    }
    if (this.current.shape[0] === 0) return;
    for (const t of unstack(this.current, 0)) yield this.weak ? markWeak(t) : t;
  }

  toString(): string {
    return `TensorList(${this.current.toString()})`;
  }
}

/** An AutoGraphError about what a tensor list cannot do, at the user's line that asked for it. */
export function listError(message: string): AutoGraphError {
  const e = new AutoGraphError(message);
  const where = userLocation();
  if (where) {
    Object.defineProperty(e, "location", { value: where, enumerable: true });
    Object.defineProperty(e, "message", { value: `${message} (at ${formatLocation(where)})` });
    Object.defineProperty(e, "sourceLine", { value: sourceExcerpt(where), enumerable: true });
  }
  return e;
}

/** Row `i` of a list's buffer: a JS integer or an integer scalar tensor, negative counting from the end. */
function listElement(buffer: Tensor, i: unknown): Tensor {
  const n = buffer.shape[0]!;
  if (typeof i === "number") {
    if (!Number.isInteger(i)) throw new IndexError(`index ${i} is not an integer`, "getItem");
    if (n >= 0) {
      if (i < -n || i >= n) throw new IndexError(`index ${i} is out of range for a list of length ${n} (valid: ${-n}..${n - 1})`, "getItem");
      return gather(buffer, scalarOf(i < 0 ? i + n : i, "int32"), 0);
    }
    return gather(buffer, i >= 0 ? scalarOf(i, "int32") : add(applyOp1(dimSizeOp, [buffer], { axis: 0 }), i), 0);
  }
  if (i instanceof Tensor) {
    let idx = readIfVariable(i) as Tensor;
    if (idx.rank !== 0 || idx.dtype === "bool" || idx.dtype === "float32" || idx.dtype === "float64") {
      throw new IndexError(`a list is indexed by an integer scalar, got ${describeValue(idx)}`, "getItem");
    }
    if (idx.dtype !== "int32") idx = cast(idx, "int32");
    const size = n >= 0 ? scalarOf(n, "int32") : applyOp1(dimSizeOp, [buffer], { axis: 0 });
    return gather(buffer, where(less(idx, 0), add(idx, size), idx), 0);
  }
  throw new IndexError(`a list is indexed by an integer, got ${describeValue(i)}`, "getItem");
}

/** The type of a list's elements: their dtype and shape; weak when every element stands for JS numbers. */
export interface ElementType {
  dtype: DType;
  elementShape: readonly number[];
  weak: boolean;
}

/**
 * The common type of values as elements of a tensor list, or null when they cannot form one:
 * tensors, numbers and booleans, and arrays of them (an array element is stacked); strongly
 * typed dtypes must agree, weak ones (numbers) promote; a dim that differs is unknown (-1).
 */
export function listType(values: readonly unknown[]): ElementType | null {
  if (values.length === 0) return null;
  let strong: DType | null = null;
  let weakD: DType | null = null;
  let shape: readonly number[] | null = null;
  for (const v of values) {
    let dtype: DType;
    let s: readonly number[];
    let w: boolean;
    if (v instanceof TensorList) {
      [dtype, s, w] = [v.buffer.dtype, v.buffer.shape, false];
    } else if (v instanceof Tensor) {
      const t = readIfVariable(v) as Tensor;
      [dtype, s, w] = [t.dtype, t.shape, isWeak(v)];
    } else if (typeof v === "number" || typeof v === "boolean") {
      [dtype, s, w] = [dtypeOfNumber(v), [], true];
    } else if (Array.isArray(v) && Object.getPrototypeOf(v) === Array.prototype) {
      const inner = listType(v);
      if (!inner) return null;
      [dtype, s, w] = [inner.dtype, [v.length, ...inner.elementShape], inner.weak];
    } else return null;
    if (shape === null) shape = s;
    else if (shape.length !== s.length) return null;
    else shape = shape.map((d, j) => (d === s[j] ? d : -1));
    if (!w) {
      if (strong !== null && strong !== dtype) return null;
      strong = dtype;
    } else weakD = weakD === null ? dtype : promoteTypes(weakD, dtype);
  }
  return { dtype: strong ?? weakD ?? "float32", elementShape: shape ?? [], weak: strong === null };
}

/** A value (tensor, number, boolean, or array of them) as a list element of this dtype. */
export function asElement(v: unknown, dtype: DType): Tensor {
  if (v instanceof TensorList) v = v.buffer;
  if (Array.isArray(v)) return stack(v.map((x) => asElement(x, dtype)), 0);
  const t = v instanceof Tensor ? (readIfVariable(v) as Tensor) : scalarOf(Number(v), dtype);
  return t.dtype === dtype ? t : cast(t, dtype);
}

/** An empty list of elements of this type (the element shape must be known). */
export function emptyBuffer(dtype: DType, elementShape: readonly number[]): Tensor | null {
  if (hasUnknownDims(elementShape)) return null;
  return full([0, ...elementShape], 0, dtype);
}

// ---------------------------------------------------------------------------------------------
// nests and snapshots

export interface LeafSnap {
  kind: "leaf";
  value: unknown;
}
export interface ArraySnap {
  kind: "array";
  orig: unknown[];
  items: Snap[];
}
export interface ObjectSnap {
  kind: "object";
  orig: Record<string, unknown>;
  keys: string[];
  items: Snap[];
}
/** A TensorList: its one leaf is the buffer. */
export interface ListSnap {
  kind: "list";
  orig: TensorList;
  items: [Snap];
}
export type Snap = LeafSnap | ArraySnap | ObjectSnap | ListSnap;
export type NestSnap = ArraySnap | ObjectSnap | ListSnap;

function isNestArray(x: unknown): x is unknown[] {
  return Array.isArray(x) && Object.getPrototypeOf(x) === Array.prototype;
}

/** A plain object whose own enumerable string keys are all data properties. */
function isNestObject(x: unknown): x is Record<string, unknown> {
  if (x === null || typeof x !== "object" || x instanceof Tensor) return false;
  const p = Object.getPrototypeOf(x);
  if (p !== Object.prototype && p !== null) return false;
  for (const k of Object.keys(x)) {
    const d = Object.getOwnPropertyDescriptor(x, k);
    if (!d || !("value" in d)) return false;
  }
  return true;
}

/** Records a value and, recursively, the contents of the arrays and plain objects in it. */
export function snapshot(x: unknown, open: Set<object> = new Set()): Snap {
  if (x instanceof TensorList) return { kind: "list", orig: x, items: [{ kind: "leaf", value: x.buffer }] };
  if (isNestArray(x) && !open.has(x)) {
    open.add(x);
    const items: Snap[] = new Array(x.length);
    for (let i = 0; i < x.length; i++) items[i] = snapshot(x[i], open);
    open.delete(x);
    return { kind: "array", orig: x, items };
  }
  if (isNestObject(x) && !open.has(x)) {
    open.add(x);
    const keys = Object.keys(x);
    const items = keys.map((k) => snapshot(x[k], open));
    open.delete(x);
    return { kind: "object", orig: x, keys, items };
  }
  return { kind: "leaf", value: x };
}

export function snapValue(s: Snap): unknown {
  return s.kind === "leaf" ? s.value : s.orig;
}

/** Writes a snapshot's contents back into its arrays and objects (only the slots that differ). */
export function restore(s: Snap): void {
  if (s.kind === "leaf") return;
  for (const c of s.items) restore(c);
  if (s.kind === "list") {
    const b = snapValue(s.items[0]) as Tensor;
    if (s.orig.buffer !== b) s.orig.buffer = b;
  } else if (s.kind === "array") {
    const a = s.orig;
    if (a.length !== s.items.length) a.length = s.items.length;
    for (let i = 0; i < s.items.length; i++) {
      const v = snapValue(s.items[i]!);
      if (!Object.is(a[i], v) || !(i in a)) a[i] = v;
    }
  } else {
    const o = s.orig;
    const keep = new Set(s.keys);
    for (const k of Object.keys(o)) if (!keep.has(k)) delete o[k];
    s.keys.forEach((k, i) => {
      const v = snapValue(s.items[i]!);
      if (!Object.is(o[k], v) || !(k in o)) o[k] = v;
    });
  }
}

export interface LeafRef {
  /** The variable name and the path inside it, for messages: `params.w`, `xs[2]`. */
  path: string;
  /** The variable name alone. */
  name: string;
  value: unknown;
}

/** The leaves of a snapshot, depth first, with their paths. */
export function leavesOf(s: Snap, name: string, path: string = name, out: LeafRef[] = []): LeafRef[] {
  if (s.kind === "leaf") out.push({ path, name, value: s.value });
  else if (s.kind === "array") s.items.forEach((c, i) => leavesOf(c, name, `${path}[${i}]`, out));
  else if (s.kind === "list") leavesOf(s.items[0], name, path, out);
  else s.items.forEach((c, i) => leavesOf(c, name, `${path}.${s.keys[i]}`, out));
  return out;
}

/** The same snapshot with its leaves replaced, in order, by `values`. */
export function withLeaves(s: Snap, values: readonly unknown[], pos: { i: number } = { i: 0 }): Snap {
  if (s.kind === "leaf") return { kind: "leaf", value: values[pos.i++] };
  if (s.kind === "array") return { kind: "array", orig: s.orig, items: s.items.map((c) => withLeaves(c, values, pos)) };
  if (s.kind === "list") return { kind: "list", orig: s.orig, items: [withLeaves(s.items[0], values, pos)] };
  return { kind: "object", orig: s.orig, keys: s.keys, items: s.items.map((c) => withLeaves(c, values, pos)) };
}

/** Whether two snapshots have the same nest structure (lengths, keys), ignoring leaf values. */
export function sameStructure(a: Snap, b: Snap): boolean {
  if (a.kind !== b.kind) return false;
  if (a.kind === "leaf") return true;
  if (a.kind === "list") return a.orig === (b as ListSnap).orig;
  if (a.items.length !== (b as ArraySnap | ObjectSnap).items.length) return false;
  if (a.kind === "object" && a.keys.some((k, i) => (b as ObjectSnap).keys[i] !== k)) return false;
  return a.items.every((c, i) => sameStructure(c, (b as ArraySnap | ObjectSnap).items[i]!));
}

/** Where two snapshots' structures first differ, described for an error message. */
export function structureDifference(a: Snap, b: Snap, path: string): string {
  const what = (s: Snap) =>
    s.kind === "leaf" ? describeValue(s.value) : s.kind === "array" ? `an array of length ${s.items.length}` : s.kind === "list" ? "a tensor list" : `an object with keys {${s.keys.join(", ")}}`;
  const shown = (p: string) => (isGeneratedName(p) ? subjectOf(p) : p);
  if (a.kind !== b.kind || a.kind === "leaf" || a.kind === "list") return `${shown(path)} is ${what(a)} in one and ${what(b)} in the other`;
  if (a.kind === "array") {
    const bb = b as ArraySnap;
    if (a.items.length !== bb.items.length) return `${shown(path)} is ${what(a)} in one and ${what(b)} in the other`;
    for (let i = 0; i < a.items.length; i++) if (!sameStructure(a.items[i]!, bb.items[i]!)) return structureDifference(a.items[i]!, bb.items[i]!, `${path}[${i}]`);
  } else {
    const bb = b as ObjectSnap;
    if (a.keys.length !== bb.keys.length || a.keys.some((k, i) => bb.keys[i] !== k)) return `${shown(path)} is ${what(a)} in one and ${what(b)} in the other`;
    for (let i = 0; i < a.items.length; i++) if (!sameStructure(a.items[i]!, bb.items[i]!)) return structureDifference(a.items[i]!, bb.items[i]!, `${path}.${a.keys[i]}`);
  }
  return `${shown(path)} differs`;
}

export type GetState = () => unknown[];
export type SetState = (values: unknown[]) => void;

export const noState: GetState = () => [];
export const noSetState: SetState = () => {};
