/**
 * Tracing a function for one input signature: a new function graph whose inputs stand for the
 * tensor arguments (placeholders typed by the signature, unknown dims -1), the function run on
 * them with the trace as the handler and no tape recording, and its result as the graph's
 * outputs plus the template that rebuilds the caller's structure.
 */
import { STACKED, isStackedSequence } from "../core/tensor-sequence.js";
import { Tensor } from "../core/tensor.js";
import { Variable } from "../core/variable.js";
import { currentHandler, withHandler, withoutRecorders } from "../core/context.js";
import { isPlainObject } from "../core/objects.js";
import { FunctionLibrary, type Value } from "../graph/ir.js";
import { TraceContext } from "./trace-context.js";
import { ConstantLeaf, OutputLeaf, type OutputTemplate } from "./concrete-function.js";
import type { Signature } from "./signature.js";

/**
 * A trace context for a new function graph named after `name`, nested in the trace that is
 * running (a staged function called while another is traced), with a library holding its graph.
 */
export function openTrace(name: string, mayCreateVariables: boolean): TraceContext {
  const outer = currentHandler();
  const ctx = new TraceContext(name, new FunctionLibrary(), outer instanceof TraceContext ? outer : null, mayCreateVariables);
  ctx.library.add(ctx.graph);
  return ctx;
}

/** Runs `fn` in `ctx` on `args` whose tensors (not variables) are replaced by placeholders typed by `sig`. */
export function runOnPlaceholders(ctx: TraceContext, fn: (...args: any[]) => unknown, args: readonly unknown[], sig: Signature): unknown {
  let k = 0;
  const symArgs = substitute(args, (t, path) => {
    const leaf = sig.leaves.find((l) => l.kind === "tensor" && l.path === path)!;
    k++;
    return ctx.placeholder({ dtype: t.dtype, shape: leaf.shape! }, inputName(path, k - 1));
  });
  return withoutRecorders(null, () => withHandler(ctx, () => fn(...symArgs)));
}

/** Makes the tensors of a traced function's `result` the outputs of its graph; returns its template. */
export function setResult(ctx: TraceContext, result: unknown): { template: OutputTemplate; outputs: Value[] } {
  const outputs: Value[] = [];
  const names: string[] = [];
  // (inside the trace: a variable returned as is is read by a node, at every call)
  const template = withoutRecorders(null, () =>
    withHandler(ctx, () =>
      templateOf(result, (t, path) => {
        outputs.push(ctx.valueOf(t));
        names.push(path || `output_${outputs.length - 1}`);
        return outputs.length - 1;
      }),
    ),
  );
  ctx.graph.setOutputs(outputs, names);
  return { template, outputs };
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
    // (an AutoGraph tensor list: returned as the tensor of its stacked elements)
    if (isStackedSequence(x)) return new OutputLeaf(onTensor(x[STACKED](), path));
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
