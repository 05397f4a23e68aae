/**
 * Recursion of staged functions. A call with a signature that is being traced right now is a
 * recursive call: it becomes a call node to the function under construction (by name), typed by
 * `outputSignature` or, without one, by a guess (a tensor argument's type) that a first trace
 * corrects. A recursion that cannot end, or that overflows the JavaScript stack while tracing
 * or running, is a RecursionDepthError naming the function.
 */
import { nextTensorId, type Tensor } from "../core/tensor.js";
import { RecursionDepthError, ValueError, type CallDepthExceeded } from "../core/errors.js";
import { DEFAULT_FLOAT } from "../core/dtype.js";
import type { ValueType } from "../graph/ir.js";
import { recursiveFunctions } from "../graph/passes/inline.js";
import { calleeOf } from "../graph/declarations.js";
import { leaves, mapStructure, type Structure } from "../core/structure.js";
import { embedCaptures, StagingError, type Capture, type TraceContext } from "./trace-context.js";
import { ConcreteFunction, ConstantLeaf, OutputLeaf, type OutputTemplate } from "./concrete-function.js";
import { describeChange, TensorSpec, type LeafInfo, type Signature } from "./signature.js";
import { emitCall } from "./call.js";

/** Eager tensors up to this size that a recursive function closes over become constants. */
const MAX_EMBEDDED_ELEMENTS = 4096;
/**
 * Traces of one staged function that may nest (a recursive call with a new signature is traced
 * inside the trace calling it): past this a RecursionDepthError says the recursion never closes.
 * An explicit count, so the error does not depend on the stack the caller had left (the stack
 * holds about 600 nested traces of a small function); documented in README.md, "Staging".
 */
export const MAX_NESTED_TRACES = 200;

/** A trace in progress, which recursive calls with its signature call. */
export interface PendingTrace {
  ctx: TraceContext;
  types: ValueType[];
  template: OutputTemplate;
  recursiveCalls: number;
  /** The signature traced (for the error when nested traces overflow the stack). */
  leaves: LeafInfo[];
  /** Tensors the function closes over, which recursive calls pass on after the arguments. */
  passed: Tensor[];
}

/** One staged function's traces in progress and the output types its recursive calls learned. */
export class Recursion {
  /** Signatures being traced right now: a call with one of them is a recursive call. */
  private readonly inProgress = new Map<string, PendingTrace>();
  /** Output types learned from a first trace of a recursive function. */
  private readonly learned = new Map<string, { types: ValueType[]; template: OutputTemplate }>();
  /**
   * Per signature, the tensors a first trace found the function closing over (made before the
   * trace: an eager tensor from outside, which a tape may watch): they are inputs of its graph,
   * and its recursive calls pass them on, so gradients reach them.
   */
  private readonly closedOver = new Map<string, Tensor[]>();

  constructor(
    private readonly name: string,
    private readonly outputSignature: unknown,
  ) {}

  /** Forgets what was learned tracing `key` (its traces were evicted from the cache). */
  forget(key: string): void {
    this.learned.delete(key);
    this.closedOver.delete(key);
  }

  /** The trace in progress for this signature key, if any. */
  pending(key: string): PendingTrace | undefined {
    return this.inProgress.get(key);
  }

  /**
   * Traces the function for `sig`: `open` makes the trace context, `run` runs the function in
   * it, `finish` sets its result as the graph's outputs. Recursive calls met meanwhile call the
   * graph under construction; when they were typed by a guess that turns out wrong, the
   * function is traced again with the next guess or the types it returned.
   */
  trace(
    sig: Signature,
    open: () => TraceContext,
    run: (ctx: TraceContext) => unknown,
    finish: (ctx: TraceContext, result: unknown) => { template: OutputTemplate; outputs: { type: ValueType }[] },
    attempt = 0,
  ): ConcreteFunction {
    if (this.inProgress.size >= MAX_NESTED_TRACES && !this.inProgress.has(sig.key)) throw this.nestingError(sig);
    const madeBefore = nextTensorId();
    const ctx = open();
    const guess = this.learned.get(sig.key) ?? recursionGuess(this.outputSignature, sig, attempt);
    const passed = this.closedOver.get(sig.key) ?? [];
    const pending: PendingTrace = { ctx, types: guess.types, template: guess.template, recursiveCalls: 0, leaves: sig.leaves, passed };
    this.inProgress.set(sig.key, pending);
    const retry = (next = attempt + 1) => {
      ctx.active = false;
      this.inProgress.delete(sig.key);
      return this.trace(sig, open, run, finish, next);
    };
    try {
      let result: unknown;
      try {
        result = run(ctx);
      } catch (e) {
        // A recursive call typed by a wrong guess can make the body fail: try the next guess.
        const guesses = guessCount(sig);
        if (pending.recursiveCalls > 0 && this.outputSignature === undefined && !this.learned.has(sig.key) && attempt + 1 < guesses) return retry();
        if (pending.recursiveCalls > 0 && this.outputSignature === undefined && e instanceof Error) {
          e.message += ` (while tracing recursive staged function "${this.name}" with guessed output types ${describeTypes(pending.types)}: give stage(fn, { outputSignature }))`;
        }
        throw e;
      }
      const { template, outputs } = finish(ctx, result);
      if (pending.recursiveCalls > 0) {
        const closed = this.checkCloses(ctx, sig.tensors.length, madeBefore, passed);
        if (closed.length > passed.length) {
          // Traced again with them passed on by the recursive calls (the same guess of types).
          this.closedOver.set(sig.key, closed);
          return retry(attempt);
        }
        const types = outputs.map((v) => v.type);
        if (!sameTypes(types, pending.types) || !sameTemplate(template, pending.template)) {
          if (this.learned.has(sig.key) || this.outputSignature !== undefined) {
            throw new StagingError(
              `recursive staged function "${this.name}" returns ${describeTypes(types)} but its recursive calls were typed ${describeTypes(pending.types)}; ` +
                `give stage(fn, { outputSignature }) the types it returns`,
            );
          }
          this.learned.set(sig.key, { types, template });
          return retry();
        }
      }
      return new ConcreteFunction(ctx.graph, ctx.library, ctx.captures, template, sig.tensors.length);
    } finally {
      ctx.active = false;
      if (this.inProgress.get(sig.key) === pending) this.inProgress.delete(sig.key);
    }
  }

  /**
   * A recursive call while its signature is being traced: a call node to the function under
   * construction (by name), typed by outputSignature or the guess.
   */
  call(p: PendingTrace, args: Tensor[]): unknown {
    p.recursiveCalls++;
    const outs = emitCall({ graph: p.ctx.graph, library: p.ctx.library }, [...args, ...p.passed], p.types, false);
    return mapStructure(p.template, (leaf) => (leaf instanceof OutputLeaf ? outs[leaf.index] : leaf.value));
  }

  /** Tracing `sig` would nest more than MAX_NESTED_TRACES traces of this function. */
  private nestingError(sig: Signature): RecursionDepthError {
    const nested = [...this.inProgress.values()];
    return new RecursionDepthError(
      `staged function "${this.name}" recursed more than ${MAX_NESTED_TRACES} nested traces deep while being traced: its recursive calls keep ` +
        `changing their argument signatures (${describeChange(nested[nested.length - 1]!.leaves, sig.leaves)}), so each is traced anew and the recursion never closes into a recursive graph function; ` +
        `keep the arguments' shapes and JS values the same across recursive calls (pass a depth as a tensor, not a JS number), or write it as a loop`,
      this.name,
    );
  }

  /** The executors' call-depth limit reached while this function ran, as an error naming it. */
  callDepthError(e: CallDepthExceeded): RecursionDepthError {
    return new RecursionDepthError(
      `staged function "${this.name}" recursed more than ${e.limit} calls deep while running: the recursion of "${e.callee}" went deeper than ` +
        `graph functions may nest; make the recursion shallower, or write it as a loop (sc.whileLoop, or a while loop in converted code)`,
      this.name,
    );
  }

  /**
   * A JavaScript stack overflow under this function, as a typed error that names it: while
   * tracing, recursive calls with ever new signatures (each traced anew, nested); while running
   * (`cached`: the concrete function that ran, if known), recursion of its graph functions deeper
   * than the stack holds. (Raised at the innermost call with stack enough to build it; the calls
   * above pass it on.)
   */
  overflowError(e: RangeError, cached: () => ConcreteFunction | undefined): RecursionDepthError | RangeError {
    const name = this.name;
    try {
      const nested = [...this.inProgress.values()].filter((p) => p.ctx.active);
      if (nested.length > 1) {
        const change = describeChange(nested[nested.length - 2]!.leaves, nested[nested.length - 1]!.leaves);
        return new RecursionDepthError(
          `staged function "${name}" recursed past the JavaScript stack while being traced (${nested.length} nested traces): its recursive calls keep ` +
            `changing their argument signatures (${change}), so each is traced anew and the recursion never closes into a recursive graph function; ` +
            `keep the arguments' shapes and JS values the same across recursive calls (pass a depth as a tensor, not a JS number), or write it as a loop`,
          name,
        );
      }
      const cf = cached();
      const recursive = cf ? [...recursiveFunctions(cf.library)] : [];
      return new RecursionDepthError(
        `staged function "${name}" ran out of JavaScript stack${cf ? " while running" : ""}` +
          (recursive.length > 0 ? `: the recursion of ${recursive.map((r) => `"${r}"`).join(", ")} went deeper than the stack holds; ` : "; ") +
          `make the recursion shallower, write it as a loop (sc.whileLoop, or a while loop in converted code), or give Node a larger stack (node --stack-size)`,
        name,
      );
    } catch (again) {
      return isStackOverflow(again) ? e : (again as Error as RangeError);
    }
  }

  /**
   * A recursive function's graph must be able to return. Its recursive calls pass their
   * arguments and the tensors `passed` on: tensors made while it was traced (`madeBefore` and
   * after: constants made in the body) that it still captures become constant nodes (small
   * ones; others are an error); the tensors from before (closed over) are its graph inputs
   * after the `numArgs` arguments, in the order of `passed`. Returns every closed-over tensor:
   * `passed` and those this trace found first (the function is traced again passing them on).
   */
  private checkCloses(ctx: TraceContext, numArgs: number, madeBefore: number, passed: Tensor[]): Tensor[] {
    const selfCall = ctx.graph.nodes.find((n) => calleeOf(n) === ctx.graph.name);
    if (selfCall) {
      throw new RecursionDepthError(
        `staged function "${this.name}" calls itself unconditionally, so every call recurses again and it never returns: ` +
          `put the recursive call in a branch of a tensor condition (sc.cond, or an if on a tensor in converted code) whose other branch does not recurse`,
        this.name,
        selfCall.loc ?? undefined,
      );
    }
    const closedOver = (c: Capture) => !c.variable && c.tensor.id < madeBefore;
    const left = embedCaptures(ctx, MAX_EMBEDDED_ELEMENTS, (c) => !closedOver(c)).filter((c) => !closedOver(c));
    if (left.length > 0) {
      throw new StagingError(
        `recursive staged function "${this.name}" closes over ${left.length} tensor(s) (${left.map((c) => `${c.tensor.dtype}[${c.tensor.shape.join(", ")}]`).join(", ")}) ` +
          `that are not constants of at most ${MAX_EMBEDDED_ELEMENTS} elements; pass them as arguments or hold them in variables`,
      );
    }
    const found = ctx.captures.filter((c) => closedOver(c) && !passed.includes(c.tensor)).map((c) => c.tensor);
    if (found.length === 0) passCapturesFirst(ctx, numArgs, passed);
    return [...passed, ...found];
  }
}

/** Orders the captured inputs of `ctx`'s graph: the tensors of `passed` first (as recursive calls pass them), then the others. */
function passCapturesFirst(ctx: TraceContext, numArgs: number, passed: Tensor[]): void {
  if (passed.length === 0) return;
  const g = ctx.graph;
  const first = passed.map((t) => ctx.captures.find((c) => c.tensor === t)).filter((c): c is Capture => c !== undefined);
  const ordered = [...first, ...ctx.captures.filter((c) => !first.includes(c))];
  const names = new Map(g.inputs.map((v, i) => [v, g.inputNames[i]!] as const));
  ctx.captures.splice(0, ctx.captures.length, ...ordered);
  g.inputs = [...g.inputs.slice(0, numArgs), ...ordered.map((c) => c.value)];
  g.inputNames = g.inputs.map((v) => names.get(v)!);
  g.inputs.forEach((v, i) => (v.index = i));
}

export function isStackOverflow(e: unknown): boolean {
  return e instanceof RangeError && /Maximum call stack size exceeded/.test(e.message);
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
  // A tensor argument's type, then (a float computed from an integer, as a count or a depth) its
  // shape as DEFAULT_FLOAT: isEven(n) over an int32 n returns a float32 scalar.
  const tensors = sig.leaves.filter((l) => l.kind === "tensor");
  const first = tensors[attempt % Math.max(tensors.length, 1)];
  if (!first) return { types: [], template: new ConstantLeaf(undefined) };
  const dtype = attempt < tensors.length ? first.dtype! : DEFAULT_FLOAT;
  return { types: [{ dtype, shape: first.shape! }], template: new OutputLeaf(0) };
}

/** How many guesses recursionGuess has for `sig`: each tensor argument's type, then its shape as DEFAULT_FLOAT (where that differs). */
function guessCount(sig: Signature): number {
  const tensors = sig.leaves.filter((l) => l.kind === "tensor");
  return tensors.length + (tensors.some((l) => l.dtype !== DEFAULT_FLOAT) ? tensors.length : 0);
}

function sameTypes(a: ValueType[], b: ValueType[]): boolean {
  return a.length === b.length && a.every((t, i) => t.dtype === b[i]!.dtype && t.shape.length === b[i]!.shape.length && t.shape.every((d, j) => d === b[i]!.shape[j]));
}

function sameTemplate(a: OutputTemplate, b: OutputTemplate): boolean {
  const la = leaves(a as Structure<unknown>);
  const lb = leaves(b as Structure<unknown>);
  return la.length === lb.length && la.every((x, i) => (x instanceof OutputLeaf ? lb[i] instanceof OutputLeaf && (lb[i] as OutputLeaf).index === x.index : !(lb[i] instanceof OutputLeaf)));
}

function describeTypes(ts: ValueType[]): string {
  return `(${ts.map((t) => `${t.dtype}[${t.shape.map((d) => (d < 0 ? "?" : d)).join(", ")}]`).join(", ")})`;
}
