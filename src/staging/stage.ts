/**
 * stage(fn): a callable that traces `fn` into a graph the first time it meets an input
 * signature and runs the cached concrete function afterwards.
 */
import { Tensor } from "../core/tensor.js";
import { Variable } from "../core/variable.js";
import { currentHandler, withHandler, withoutRecorders, recorders } from "../core/context.js";
import { FunctionLibrary, type Value, type ValueType } from "../graph/ir.js";
import { TraceContext, StagingError } from "./trace-context.js";
import { ConcreteFunction, ConstantLeaf, OutputLeaf, type OutputTemplate } from "./concrete-function.js";
import { describeChange, signatureOf, TensorSpec, type LeafInfo, type Signature } from "./signature.js";
import { leaves, mapStructure, type Structure } from "../core/structure.js";
import { ValueError } from "../core/errors.js";
import { recordStagedCall } from "./staged-gradient.js";
import { emitCall } from "./call-gradient.js";
import { isPlainObject } from "../core/objects.js";

export interface StageOptions {
  /** Per positional argument: sc.spec(shape, dtype) (null dims = any size), or nested structures of specs. */
  inputSignature?: unknown[];
  /** After a retrace caused by new shapes, trace once more with the differing dims generalized. */
  reduceRetracing?: boolean;
  /** Name of the graph (default: the function's name). */
  name?: string;
  /**
   * The output types of a recursive function (a spec, or a structure of specs), used for its
   * recursive calls while it is traced. Without it the first tensor argument's type is
   * assumed, and the function is traced once more with the types it actually returned.
   */
  outputSignature?: unknown;
  /** Convert the function with AutoGraph first (default true). */
  autograph?: boolean;
}

export interface StagedFunction<A extends unknown[], R> {
  (...args: A): R;
  /** How many times the function has been traced. */
  readonly traceCount: number;
  /** The concrete function for these arguments (tracing if needed). */
  concrete(...args: A): ConcreteFunction;
  readonly stagedName: string;
}

/** Retraces beyond this count warn once, with the reason. */
export const RETRACE_WARNING_THRESHOLD = 5;

/**
 * Converts a function's source before it is staged (AutoGraph): installed by the package
 * entry (api/wiring.ts), so staging has no static dependency on the transform.
 */
export type StageConverter = (fn: (...args: any[]) => any) => { fn: (...args: any[]) => any; note?: string };
let stageConverter: StageConverter | null = null;

/** @internal */
export function setStageConverter(c: StageConverter): void {
  stageConverter = c;
}

export function stage<A extends unknown[], R>(original: (...args: A) => R, options: StageOptions = {}): StagedFunction<A, R> {
  const name = options.name ?? (original.name || "staged");
  let converted: ((...args: A) => R) | null = null;
  // Conversion happens on first use (the converter may not be installed at definition time).
  const body = (...args: A): R => {
    if (converted === null) {
      if (stageConverter && options.autograph !== false) {
        const r = stageConverter(original);
        if (r.note) console.warn(r.note);
        converted = r.fn as (...args: A) => R;
      } else converted = original;
    }
    return converted(...args);
  };
  const fn = body;
  const cache = new Map<string, ConcreteFunction>();
  const relaxed = new Map<string, number[][]>();
  let traceCount = 0;
  let lastLeaves: LeafInfo[] | null = null;
  let warned = false;

  const structureKey = (sig: Signature) => sig.key.replace(/\[[^\]]*\]@/g, (m) => `[rank${m.split(",").length}]@`);

  /** Signatures being traced right now: a call with one of them is a recursive call. */
  const inProgress = new Map<string, PendingTrace>();
  /** Output types learned from a first trace of a recursive function. */
  const learned = new Map<string, { types: ValueType[]; template: OutputTemplate }>();

  /** The last hit, for the common case of a call with the same flat argument types. */
  let last: { args: readonly unknown[]; sig: Signature; cf: ConcreteFunction } | null = null;

  /** Same flat signature as the last call (tensors by dtype/shape/device, JS values by value)? */
  function sameAsLast(args: readonly unknown[]): Tensor[] | null {
    if (last === null) return null;
    const tensors: Tensor[] = [];
    return sameLeaves(args, last.args, tensors) ? tensors : null;
  }

  /**
   * Whether `args` has the signature `prev` had: tensors of the same dtypes, shapes and devices,
   * equal JS values, arrays of such (in the order signatureOf flattens them). Collects the tensors.
   */
  function sameLeaves(args: readonly unknown[], prev: readonly unknown[], tensors: Tensor[]): boolean {
    if (args.length !== prev.length) return false;
    for (let i = 0; i < args.length; i++) {
      const a = args[i];
      const b = prev[i];
      if (a instanceof Tensor) {
        if (!(b instanceof Tensor) || a instanceof Variable || b instanceof Variable || a.isSymbolic || a.dtype !== b.dtype || a.device !== b.device) return false;
        const sa = a.shape;
        const sb = b.shape;
        if (sa.length !== sb.length) return false;
        for (let d = 0; d < sa.length; d++) if (sa[d] !== sb[d]) return false;
        tensors.push(a);
      } else if (Array.isArray(a)) {
        if (!Array.isArray(b) || !sameLeaves(a, b, tensors)) return false;
      } else if (a === null || typeof a !== "object" ? !Object.is(a, b) : true) return false;
    }
    return true;
  }

  function lookup(args: readonly unknown[]): { sig: Signature; cf: ConcreteFunction } | { sig: Signature; pending: PendingTrace } {
    const fast = sameAsLast(args);
    if (fast !== null && last !== null) return { sig: { key: last.sig.key, tensors: fast, leaves: last.sig.leaves }, cf: last.cf };
    let sig = signatureOf(args, name, options.inputSignature);
    let cf = cache.get(sig.key);
    if (cf) {
      // (arrays are copied: the caller may refill the same array before the next call)
      if (!sig.leaves.some((l) => l.kind === "object")) last = { args: snapshotArrays(args), sig, cf };
      return { sig, cf };
    }
    const pending = inProgress.get(sig.key);
    if (pending) return { sig, pending };
    if (options.reduceRetracing) {
      const sk = structureKey(sig);
      const shapes = sig.leaves.filter((l) => l.kind === "tensor").map((l) => l.shape!);
      const prev = relaxed.get(sk);
      if (prev) {
        const merged = prev.map((p, i) => p.map((d, j) => (d === shapes[i]![j] ? d : -1)));
        relaxed.set(sk, merged);
        sig = signatureOf(args, name, options.inputSignature, merged);
        cf = cache.get(sig.key);
        if (cf) return { sig, cf };
      } else relaxed.set(sk, shapes);
    }
    if (lastLeaves && traceCount >= RETRACE_WARNING_THRESHOLD && !warned) {
      warned = true;
      console.warn(
        `stagecraft: staged function "${name}" was traced ${traceCount + 1} times; the last retrace happened because ${describeChange(lastLeaves, sig.leaves)}. ` +
          `Pass tensors instead of changing JS values, or use inputSignature / reduceRetracing to trace once for many shapes.`,
      );
    }
    cf = trace(args, sig);
    cache.set(sig.key, cf);
    lastLeaves = sig.leaves;
    return { sig, cf };
  }

  function trace(args: readonly unknown[], sig: Signature, attempt = 0): ConcreteFunction {
    const outer = currentHandler();
    const ctx = new TraceContext(name, new FunctionLibrary(), outer instanceof TraceContext ? outer : null, traceCount === 0);
    traceCount++;
    ctx.library.add(ctx.graph);
    const guess = learned.get(sig.key) ?? recursionGuess(options.outputSignature, sig, attempt);
    const pending: PendingTrace = { ctx, types: guess.types, template: guess.template, recursiveCalls: 0 };
    inProgress.set(sig.key, pending);
    let k = 0;
    const symArgs = substitute(args, (t, path) => {
      const leaf = sig.leaves.find((l) => l.kind === "tensor" && l.path === path)!;
      k++;
      return ctx.placeholder({ dtype: t.dtype, shape: leaf.shape! }, inputName(path, k - 1));
    }) as A;
    try {
      let result: unknown;
      try {
        result = withoutRecorders(null, () => withHandler(ctx, () => fn(...symArgs)));
      } catch (e) {
        // A recursive call typed by a wrong guess can make the body fail: try the next guess.
        const guesses = sig.leaves.filter((l) => l.kind === "tensor").length;
        if (pending.recursiveCalls > 0 && options.outputSignature === undefined && !learned.has(sig.key) && attempt + 1 < guesses) {
          ctx.active = false;
          inProgress.delete(sig.key);
          return trace(args, sig, attempt + 1);
        }
        if (pending.recursiveCalls > 0 && options.outputSignature === undefined && e instanceof Error) {
          e.message += ` (while tracing recursive staged function "${name}" with guessed output types ${describeTypes(pending.types)}: give stage(fn, { outputSignature }))`;
        }
        throw e;
      }
      const outputs: Value[] = [];
      const names: string[] = [];
      const template = templateOf(result, (t, path) => {
        outputs.push(ctx.valueOf(t));
        names.push(path || `output_${outputs.length - 1}`);
        return outputs.length - 1;
      });
      ctx.graph.setOutputs(outputs, names);
      if (pending.recursiveCalls > 0) {
        if (ctx.captures.length > 0) {
          throw new StagingError(
            `recursive staged function "${name}" closes over ${ctx.captures.length} eager tensor(s); pass them as arguments or hold them in variables`,
          );
        }
        const types = outputs.map((v) => v.type);
        if (!sameTypes(types, pending.types) || !sameTemplate(template, pending.template)) {
          if (learned.has(sig.key) || options.outputSignature !== undefined) {
            throw new StagingError(
              `recursive staged function "${name}" returns ${describeTypes(types)} but its recursive calls were typed ${describeTypes(pending.types)}; ` +
                `give stage(fn, { outputSignature }) the types it returns`,
            );
          }
          learned.set(sig.key, { types, template });
          ctx.active = false;
          inProgress.delete(sig.key);
          return trace(args, sig, attempt + 1);
        }
      }
      return new ConcreteFunction(ctx.graph, ctx.library, ctx.captures, template, sig.tensors.length);
    } finally {
      ctx.active = false;
      if (inProgress.get(sig.key) === pending) inProgress.delete(sig.key);
    }
  }

  const staged = ((...args: A): R => {
    const h = currentHandler();
    const found = lookup(args);
    const sig = found.sig;
    if ("pending" in found) {
      // A recursive call while this very signature is being traced: a call node to the
      // function under construction (by name), typed by outputSignature or the guess.
      const p = found.pending;
      p.recursiveCalls++;
      const outs = emitCall({ graph: p.ctx.graph, library: p.ctx.library }, sig.tensors, p.types, false);
      return mapStructure(p.template, (leaf) => (leaf instanceof OutputLeaf ? outs[leaf.index] : leaf.value)) as R;
    }
    const cf = found.cf;
    if (h instanceof TraceContext) return callFromTrace(h, cf, sig.tensors) as R;
    if (recorders.length > 0) return recordStagedCall(cf, sig.tensors) as R;
    return cf.structureOutputs(cf.callFlat(sig.tensors)) as R;
  }) as StagedFunction<A, R>;
  Object.defineProperty(staged, "traceCount", { get: () => traceCount });
  Object.defineProperty(staged, "stagedName", { value: name });
  (staged as { concrete: unknown }).concrete = (...args: A) => {
    const found = lookup(args);
    if ("pending" in found) throw new StagingError(`concrete() of "${name}" was asked for while that signature is being traced`);
    return found.cf;
  };
  return staged;
}

interface PendingTrace {
  ctx: TraceContext;
  types: ValueType[];
  template: OutputTemplate;
  recursiveCalls: number;
}

/** Output types assumed for recursive calls: outputSignature, else the `attempt`-th tensor argument's type. */
function recursionGuess(outputSignature: unknown, sig: Signature, attempt: number): { types: ValueType[]; template: OutputTemplate } {
  if (outputSignature !== undefined) {
    const types: ValueType[] = [];
    const template = mapStructure(outputSignature as Structure<unknown>, (s) => {
      if (!(s instanceof TensorSpec)) throw new ValueError(`outputSignature must hold sc.spec(...) leaves, got ${String(s)}`, "stage");
      types.push({ dtype: s.dtype, shape: s.shape });
      return new OutputLeaf(types.length - 1);
    }) as OutputTemplate;
    return { types, template };
  }
  const first = sig.leaves.filter((l) => l.kind === "tensor")[attempt];
  if (!first) return { types: [], template: new ConstantLeaf(undefined) };
  return { types: [{ dtype: first.dtype!, shape: first.shape! }], template: new OutputLeaf(0) };
}

function sameTypes(a: ValueType[], b: ValueType[]): boolean {
  return a.length === b.length && a.every((t, i) => t.dtype === b[i]!.dtype && t.shape.length === b[i]!.shape.length && t.shape.every((d, j) => d === b[i]!.shape[j]));
}

function sameTemplate(a: OutputTemplate, b: OutputTemplate): boolean {
  const la = leaves(a as Structure<unknown>);
  const lb = leaves(b as Structure<unknown>);
  return la.length === lb.length && la.every((x, i) => (x instanceof OutputLeaf ? lb[i] instanceof OutputLeaf && (lb[i] as OutputLeaf).index === x.index : !(lb[i] instanceof OutputLeaf)));
}

/** A copy of `args` with every nested array copied too (tensors and other leaves shared). */
function snapshotArrays(args: readonly unknown[]): unknown[] {
  return args.map((a) => (Array.isArray(a) ? snapshotArrays(a) : a));
}

function describeTypes(ts: ValueType[]): string {
  return `(${ts.map((t) => `${t.dtype}[${t.shape.map((d) => (d < 0 ? "?" : d)).join(", ")}]`).join(", ")})`;
}

/** Emits a call node to `cf` in the graph being built by `ctx`. */
export function callFromTrace(_ctx: TraceContext, cf: ConcreteFunction, args: Tensor[]): unknown {
  const outs = emitCall({ graph: cf.graph, library: cf.library }, [...args, ...cf.captureValues()], cf.graph.outputs.map((v) => v.type));
  return cf.structureOutputs(outs);
}

function inputName(path: string, index: number): string {
  const cleaned = path.replace(/^argument /, "arg").replace(/\[(\d+)\]/g, "_$1").replace(/\./g, "_");
  return /^[A-Za-z_][\w]*$/.test(cleaned) ? cleaned : `input_${index}`;
}

/** Replaces tensor leaves (not variables) of an argument structure. */
function substitute(args: readonly unknown[], f: (t: Tensor, path: string) => Tensor): unknown[] {
  const walk = (x: unknown, path: string): unknown => {
    if (x instanceof Variable) return x;
    if (x instanceof Tensor) return f(x, path);
    if (Array.isArray(x)) return x.map((v, i) => walk(v, `${path}[${i}]`));
    if (isPlainObject(x)) {
      const o: Record<string, unknown> = {};
      for (const k of Object.keys(x)) o[k] = walk(x[k], `${path}.${k}`);
      return o;
    }
    return x;
  };
  return args.map((a, i) => walk(a, `argument ${i}`));
}

/** The output template of a traced result; tensor leaves are numbered by `onTensor`. */
function templateOf(result: unknown, onTensor: (t: Tensor, path: string) => number): OutputTemplate {
  const walk = (x: unknown, path: string): OutputTemplate => {
    if (x instanceof Tensor) return new OutputLeaf(onTensor(x instanceof Variable ? x.read() : x, path));
    if (Array.isArray(x)) return x.map((v, i) => walk(v, path ? `${path}_${i}` : `output_${i}`));
    if (isPlainObject(x)) {
      const o: Record<string, OutputTemplate> = {};
      for (const k of Object.keys(x)) o[k] = walk(x[k], path ? `${path}_${k}` : k);
      return o;
    }
    return new ConstantLeaf(x);
  };
  return walk(result, "");
}
