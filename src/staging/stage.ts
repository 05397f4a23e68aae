/**
 * stage(fn): a callable that traces `fn` into a graph the first time it meets an input
 * signature and runs the cached concrete function afterwards.
 */
import { Tensor } from "../core/tensor.js";
import { Variable } from "../core/variable.js";
import { currentHandler, withHandler, withoutRecorders, recorders } from "../core/context.js";
import { FunctionLibrary, type Value } from "../graph/ir.js";
import { TraceContext } from "./trace-context.js";
import { ConcreteFunction, ConstantLeaf, OutputLeaf, type OutputTemplate } from "./concrete-function.js";
import { describeChange, signatureOf, type LeafInfo, type Signature } from "./signature.js";
import { recordStagedCall } from "./staged-gradient.js";
import { emitCall } from "./structural-gradients.js";

export interface StageOptions {
  /** Per positional argument: sc.spec(shape, dtype) (null dims = any size), or nested structures of specs. */
  inputSignature?: unknown[];
  /** After a retrace caused by new shapes, trace once more with the differing dims generalized. */
  reduceRetracing?: boolean;
  /** Name of the graph (default: the function's name). */
  name?: string;
}

export interface StagedFunction<A extends unknown[], R> {
  (...args: A): R;
  /** How many times the function has been traced. */
  readonly traceCount: number;
  /** The concrete function for these arguments (tracing if needed). */
  concrete(...args: A): ConcreteFunction;
  /** The original JavaScript function. */
  readonly pythonFunction: (...args: A) => R;
  readonly stagedName: string;
}

/** Retraces beyond this count warn once, with the reason. */
export const RETRACE_WARNING_THRESHOLD = 5;

export function stage<A extends unknown[], R>(fn: (...args: A) => R, options: StageOptions = {}): StagedFunction<A, R> {
  const name = options.name ?? (fn.name || "staged");
  const cache = new Map<string, ConcreteFunction>();
  const relaxed = new Map<string, number[][]>();
  let traceCount = 0;
  let lastLeaves: LeafInfo[] | null = null;
  let warned = false;

  const structureKey = (sig: Signature) => sig.key.replace(/\[[^\]]*\]@/g, (m) => `[rank${m.split(",").length}]@`);

  function lookup(args: readonly unknown[]): { sig: Signature; cf: ConcreteFunction } {
    let sig = signatureOf(args, name, options.inputSignature);
    let cf = cache.get(sig.key);
    if (cf) return { sig, cf };
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

  function trace(args: readonly unknown[], sig: Signature): ConcreteFunction {
    const outer = currentHandler();
    const ctx = new TraceContext(name, new FunctionLibrary(), outer instanceof TraceContext ? outer : null, traceCount === 0);
    traceCount++;
    let k = 0;
    const symArgs = substitute(args, (t, path) => {
      const leaf = sig.leaves.find((l) => l.kind === "tensor" && l.path === path)!;
      k++;
      return ctx.placeholder({ dtype: t.dtype, shape: leaf.shape! }, inputName(path, k - 1));
    }) as A;
    try {
      const result = withoutRecorders(null, () => withHandler(ctx, () => fn(...symArgs)));
      const outputs: Value[] = [];
      const names: string[] = [];
      const template = templateOf(result, (t, path) => {
        outputs.push(ctx.valueOf(t));
        names.push(path || `output_${outputs.length - 1}`);
        return outputs.length - 1;
      });
      ctx.graph.setOutputs(outputs, names);
      return new ConcreteFunction(ctx.graph, ctx.library, ctx.captures, template, sig.tensors.length);
    } finally {
      ctx.active = false;
    }
  }

  const staged = ((...args: A): R => {
    const h = currentHandler();
    const { sig, cf } = lookup(args);
    if (h instanceof TraceContext) return callFromTrace(h, cf, sig.tensors) as R;
    if (recorders.length > 0) return recordStagedCall(cf, sig.tensors) as R;
    return cf.structureOutputs(cf.callFlat(sig.tensors)) as R;
  }) as StagedFunction<A, R>;
  Object.defineProperty(staged, "traceCount", { get: () => traceCount });
  Object.defineProperty(staged, "pythonFunction", { value: fn });
  Object.defineProperty(staged, "stagedName", { value: name });
  (staged as { concrete: unknown }).concrete = (...args: A) => lookup(args).cf;
  return staged;
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

function isPlainObject(x: unknown): x is Record<string, unknown> {
  if (x === null || typeof x !== "object") return false;
  const p = Object.getPrototypeOf(x);
  return p === Object.prototype || p === null;
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
