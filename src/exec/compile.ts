/**
 * The compiled executor. A graph is specialized once per concrete input signature into a
 * generated JavaScript function:
 *
 * - shapes are propagated through the graph by re-running each op's shape rule on concrete
 *   input shapes (graphs traced with `inputSignature` have unknown dims);
 * - elementwise ops (and fused elementwise groups) become inline loops over concrete shapes,
 *   small matrix products inline loops, pure views (reshape, identity, ...) no code at all,
 *   and ops without inputs (fills, ranges, keyed random draws) constants computed once;
 * - every other op calls its registry kernel directly, bound ahead with its output types: no
 *   shape inference, no Tensor wrapping, no handler dispatch on the hot path;
 * - intermediate buffers written by inline loops are planned ahead (shared between values whose
 *   lifetimes do not overlap) and reused across calls; values that leave the function (outputs,
 *   assigned variable values, host-call arguments) get fresh storage, because tensors are
 *   immutable and callers keep them;
 * - cond, while and call are compiled natively: regions and library functions are specialized
 *   recursively (a while body once its loop-variable shapes are fixed; recursive functions
 *   through a pool of instances, so re-entrant calls never share buffers). A node whose output
 *   shapes are only known at run time (a loop whose shapes change per iteration, branches with
 *   different shapes, host calls with unknown dims) runs through the generic path (shape rule +
 *   kernel, regions compiled per shape) and so does everything downstream of it. Stacks (a
 *   leading dim known only at run time, known rows) are the exception: they stay static values,
 *   the nodes touching them run shape rule and kernel at run time, and a loop pushing on them
 *   compiles once.
 *
 * The generated code is split into segments of bounded size so V8 optimizes each of them.
 * `STAGECRAFT_EXECUTOR=interpret` keeps the reference interpreter as the default executor.
 */
import { Tensor } from "../core/tensor.js";
import type { Variable } from "../core/variable.js";
import { storageCtor, type DType, type TypedArray } from "../core/dtype.js";
import { MAX_ELEMENTS, sizeOf } from "../core/shape.js";
import { ShapeError, executing } from "../core/errors.js";
import { currentDevice } from "../core/device.js";
import { isTracing, withEagerContext } from "../core/context.js";
import { getOp, type OpDef, type TensorType } from "../ops/registry.js";
import "../ops/index.js";
import type { FunctionLibrary, Graph, Node, Value } from "../graph/ir.js";
import { SCALAR_PRELUDE } from "../backends/cpu/scalar-math.js";
import { WASM_MIN_MNK } from "../backends/cpu/matmul.js";
import { nativeMatmulWins } from "../backends/cpu/native/native-kernels.js";
import { getWasmRuntime } from "../backends/cpu/wasm-runtime.js";
import { gemmInstance, gemmModule } from "./wasm-gemm.js";
import { isScopedStorage, StackScope, withStackScope } from "../ops/stack-storage.js";
import { elementwiseInstance, elementwiseModule, simdLoopFits, simdSupported, type SimdLoop } from "./wasm-elementwise.js";
import { interpret, runNode, type ExecEnv } from "./interpreter.js";
import { structuralHandlers } from "./structural.js";
import { setDefaultExecutor, type Executor } from "../staging/concrete-function.js";
import { elementwiseSource, matmulSource, type MatmulArith, reduceSource, templateFor, INLINE_REDUCTIONS, type LoopInput, type LoopOutput, type LoopStep } from "./loops.js";
import { prepareForExecution, fusedSteps } from "./prepare.js";

/** A compiled graph's output: concrete type known at compile time, or null (a Tensor at run time). */
export type OutputDesc = TensorType | null;

type RawFn = (ins: TypedArray[], dev: string) => (TypedArray | Tensor)[];

/** Ops whose kernel returns its input's storage unchanged (same size and dtype). */
const VIEW_OPS = new Set(["reshape", "expandDims", "squeeze", "identity", "stopGradient"]);

/**
 * Size of a generated segment: V8 does not optimize functions past ~60 KB of bytecode, and
 * smaller functions get optimized sooner.
 */
const SEGMENT_CHARS = Number(process.env.STAGECRAFT_SEGMENT_CHARS ?? 12000);
const SEGMENT_NODES = 64;
/**
 * Largest inline matmuls (m*n*k) by the arithmetic they reproduce; bigger ones call the kernel.
 * Measured: reproducing the float32 WebAssembly sgemm in JS costs ~2 ns per multiply-add (two
 * roundings each), so past ~1500 the kernel call (~3-4 us, copies included) is cheaper.
 */
const INLINE_SGEMM_MAX = Number(process.env.STAGECRAFT_INLINE_SGEMM_MAX ?? 1536);
const INLINE_LOOP_MAX = 4096;
/**
 * Largest product (m*n*k) for the executor's WebAssembly gemm: past it the sgemm kernel's
 * threads win. Below it the executor's gemm wins on data kept in place (no copies, no packing:
 * measured 25-35% faster on 32 x 256 x 256 products in a loop), as long as B fits in L2.
 */
const WASM_GEMM_MAX = Number(process.env.STAGECRAFT_WASM_GEMM_MAX ?? 4194304);
/**
 * Smallest product (2*m*n*k flops) the executor's gemm splits over two threads when a worker
 * thread is awake: about 5 us on one core, several times the cost of handing half to a worker.
 */
const SPLIT_MIN_FLOPS = Number(process.env.STAGECRAFT_SPLIT_MIN_FLOPS ?? 2 * 32 * 64 * 64);
/** Largest B (k*n elements) for the executor's gemm: it streams all of B for every 4 rows. */
const WASM_GEMM_MAX_B = 262144;
/**
 * Smallest float32 elementwise loop (output elements) run as WebAssembly SIMD: below it the
 * call and any operand copies cost more than the generated JavaScript loop.
 */
const SIMD_MIN_ELEMENTS = Number(process.env.STAGECRAFT_SIMD_MIN_ELEMENTS ?? 256);
/** The k-block size of the WebAssembly sgemm (wasm/sgemm.ts KC). */
const SGEMM_KC = 256;
/** Instances (buffer sets) kept per compiled graph for re-entrant calls. */
const MAX_POOLED_INSTANCES = 64;
/** Constants one generated function binds at most (they are parameters of its factory). */
const MAX_CONSTANTS = 30000;
/** Specializations per graph before the executor gives up compiling it and interprets. */
const MAX_SPECIALIZATIONS = 16;

/** A graph specialized for concrete input shapes. */
export class CompiledGraph {
  /** Output descriptors (set once built). */
  outs: OutputDesc[] = [];
  /** The generated source (for inspection and debugging). */
  source = "";
  /** Output types assumed by recursive callers while this graph was being compiled. */
  assumedOuts: OutputDesc[] | null = null;
  private factory: (() => RawFn) | null = null;
  private readonly pool: RawFn[] = [];
  /** Stack storage scopes of calls from JavaScript (one per re-entrant call). */
  private readonly scopes: StackScope[] = [];
  private wrapShapes: (readonly number[])[] = [];

  constructor(
    readonly graph: Graph,
    readonly library: FunctionLibrary,
    readonly inputTypes: readonly TensorType[],
  ) {}

  get built(): boolean {
    return this.factory !== null;
  }

  /** @internal Installs the generated code. */
  finish(outs: OutputDesc[], source: string, factory: () => RawFn): void {
    this.outs = outs;
    this.source = source;
    this.factory = factory;
    this.wrapShapes = outs.map((o) => (o ? Object.freeze(o.shape.slice()) : []));
  }

  /** Runs on raw storage; outputs are storage (static outputs) or Tensors (dynamic ones). */
  raw(ins: TypedArray[], dev: string): (TypedArray | Tensor)[] {
    const inst = this.pool.length > 0 ? this.pool.pop()! : this.factory!();
    const at = executing.at;
    try {
      return inst(ins, dev);
    } finally {
      executing.at = at;
      // Re-entrant calls (recursion) create more instances; a few are kept for next time.
      if (this.pool.length < MAX_POOLED_INSTANCES) this.pool.push(inst);
    }
  }

  /** Like raw, with every output as a Tensor. */
  rawTensors(ins: TypedArray[], dev: string): Tensor[] {
    return this.wrap(this.raw(ins, dev), dev);
  }

  private wrap(outs: (TypedArray | Tensor)[], dev: string): Tensor[] {
    const res = new Array<Tensor>(outs.length);
    for (let i = 0; i < outs.length; i++) {
      const d = this.outs[i];
      res[i] = d ? new Tensor(outs[i] as TypedArray, isStack(d) ? runtimeShape(d, outs[i] as TypedArray) : this.wrapShapes[i]!, d.dtype, dev) : (outs[i] as Tensor);
    }
    return res;
  }

  /**
   * Runs the graph on concrete tensors (the entry from JavaScript): stacks it grows take their
   * storage from a scope of this graph, reused by its next call, so outputs in that storage
   * are copied (ops/stack-storage.ts).
   */
  run(inputs: Tensor[]): Tensor[] {
    const n = inputs.length;
    const ins = new Array<TypedArray>(n);
    for (let i = 0; i < n; i++) ins[i] = inputs[i]!.concrete();
    const dev = currentDevice();
    const scope = this.scopes.pop() ?? new StackScope();
    try {
      return withStackScope(scope, () => {
        const outs = this.raw(ins, dev);
        for (let i = 0; i < outs.length; i++) {
          const o = outs[i]!;
          outs[i] = o instanceof Tensor ? leavingTensor(o) : leavingStorage(o);
        }
        return this.wrap(outs, dev);
      });
    } finally {
      if (this.scopes.length < MAX_POOLED_INSTANCES) this.scopes.push(scope);
    }
  }
}

// ---------------------------------------------------------------------------------------
// cache

interface Entry {
  shapes: (readonly number[])[];
  dtypes: DType[];
  compiled: CompiledGraph | null;
  /** Calls seen (run-time lookups), for compiling only what runs more than `compileAfter` times. */
  calls: number;
  /** Never compiled (incompatible types or too many specializations): interpret. */
  interpret: boolean;
}

const cache = new WeakMap<Graph, WeakMap<FunctionLibrary, Entry[]>>();

function entriesFor(graph: Graph, library: FunctionLibrary): Entry[] {
  let byLib = cache.get(graph);
  if (!byLib) cache.set(graph, (byLib = new WeakMap()));
  let list = byLib.get(library);
  if (!list) byLib.set(library, (list = []));
  return list;
}

function sameSignature(e: Entry, types: readonly { shape: readonly number[]; dtype: DType }[]): boolean {
  if (e.shapes.length !== types.length) return false;
  for (let i = 0; i < types.length; i++) {
    const a = e.shapes[i]!,
      b = types[i]!.shape;
    if (e.dtypes[i] !== types[i]!.dtype || a.length !== b.length) return false;
    for (let j = 0; j < a.length; j++) if (a[j] !== b[j]) return false;
  }
  return true;
}

/** Why `types` cannot be the inputs of `graph` (dtype, rank or a known dim differs), or null. */
function incompatibility(graph: Graph, types: readonly { shape: readonly number[]; dtype: DType }[]): string | null {
  if (types.length !== graph.inputs.length) return `graph ${graph.name} takes ${graph.inputs.length} inputs, got ${types.length}`;
  for (let i = 0; i < types.length; i++) {
    const want = graph.inputs[i]!.type,
      got = types[i]!;
    const ok = want.dtype === got.dtype && want.shape.length === got.shape.length && want.shape.every((d, j) => d < 0 || d === got.shape[j]);
    if (!ok) return `input ${i} (${graph.inputNames[i]}) of graph ${graph.name} is ${want.dtype}[${want.shape.map((d) => (d < 0 ? "?" : d)).join(", ")}], got ${got.dtype}[${got.shape.join(", ")}]`;
  }
  return null;
}

/**
 * The compiled graph for these input types, or null (interpret instead): the types do not
 * match the graph's declared input types, the graph has too many specializations, or this
 * signature has been seen at most `compileAfter` times (compiling costs more than
 * interpreting a graph that runs once).
 */
function lookup(graph: Graph, library: FunctionLibrary, types: readonly { shape: readonly number[]; dtype: DType }[], compileAfter = 0): CompiledGraph | null {
  const list = entriesFor(graph, library);
  let entry: Entry | undefined;
  for (let i = 0; i < list.length; i++) {
    if (sameSignature(list[i]!, types)) {
      entry = list[i]!;
      break;
    }
  }
  if (!entry) {
    entry = { shapes: types.map((t) => t.shape.slice()), dtypes: types.map((t) => t.dtype), compiled: null, calls: 0, interpret: false };
    list.push(entry);
    entry.interpret = list.length > MAX_SPECIALIZATIONS || incompatibility(graph, types) !== null;
  }
  if (entry.compiled) return entry.compiled;
  if (entry.interpret || ++entry.calls <= compileAfter) return null;
  const c = new CompiledGraph(graph, library, types.map((t) => ({ dtype: t.dtype, shape: t.shape.slice() })));
  entry.compiled = c;
  try {
    build(c);
  } catch (e) {
    entry.compiled = null;
    if (!(e instanceof TooLargeError)) throw e;
    entry.interpret = true; // beyond what one generated function can bind: interpret it
    return null;
  }
  return c;
}

/** A graph too large for one generated function (it is interpreted instead). */
class TooLargeError extends Error {}

/** The specializations of `graph` compiled so far (with `library`), for inspection. */
export function compiledSpecializations(graph: Graph, library: FunctionLibrary): CompiledGraph[] {
  return entriesFor(graph, library)
    .map((e) => e.compiled)
    .filter((c): c is CompiledGraph => c !== null);
}

/**
 * Specializes `graph` (with the functions of `library` it calls) for concrete input shapes;
 * cached per graph, library and input signature.
 */
export function compileGraph(graph: Graph, library: FunctionLibrary, inputShapes: readonly (readonly number[])[]): CompiledGraph {
  if (inputShapes.length !== graph.inputs.length) {
    throw new Error(`graph ${graph.name} takes ${graph.inputs.length} inputs, got ${inputShapes.length} shapes`);
  }
  const types = graph.inputs.map((v, i) => ({ dtype: v.type.dtype, shape: inputShapes[i]! }));
  const why = incompatibility(graph, types);
  if (why) throw new ShapeError(why, "compileGraph");
  const c = lookup(graph, library, types);
  if (!c) throw new Error(`graph ${graph.name} is interpreted: more than ${MAX_SPECIALIZATIONS} specializations, or too large for one generated function`);
  return c;
}

/**
 * Calls of a graph signature interpreted before it is compiled (`STAGECRAFT_COMPILE_AFTER`,
 * default 1: the first call interprets, the second compiles). Tracing already costs more than
 * an interpreted run, so functions called once never pay for compilation.
 */
export const DEFAULT_COMPILE_AFTER = Number(process.env.STAGECRAFT_COMPILE_AFTER ?? 1);

/** Runs a graph on concrete tensors through its specialization, or the interpreter. */
function runGraphWith(compileAfter: number): (graph: Graph, inputs: Tensor[], env: ExecEnv) => Tensor[] {
  return (graph, inputs, env) => {
    if (inputs.length !== graph.inputs.length) {
      throw new Error(`graph ${graph.name} takes ${graph.inputs.length} inputs, got ${inputs.length}`);
    }
    const c = lookup(graph, env.library, inputs, compileAfter);
    if (!c) return interpret(graph, inputs, env);
    return c.run(inputs);
  };
}

/**
 * Regions run by the generic path (shapes known only at run time): compiled when a shape
 * signature comes back (a loop whose shapes grow every iteration stays interpreted).
 */
const runGraph = runGraphWith(1);

/** An executor that compiles a graph signature once it has run `compileAfter` times. */
export function createCompiledExecutor(compileAfter = DEFAULT_COMPILE_AFTER): Executor {
  const run = runGraphWith(compileAfter);
  return (graph, inputs, library) => {
    if (isTracing()) return withEagerContext(() => run(graph, inputs, { library }));
    return run(graph, inputs, { library });
  };
}

/** The compiled executor (the default one unless STAGECRAFT_EXECUTOR=interpret). */
export const compiledExecutor: Executor = createCompiledExecutor();

/** The reference interpreter as an Executor (for comparisons and debugging). */
export const interpretExecutor: Executor = (graph, inputs, library) => interpret(graph, inputs, { library });

/** Storage leaving a compiled call: copied if a stack scope owns it (it is reused after the call). */
function leavingStorage(x: TypedArray): TypedArray {
  return isScopedStorage(x.buffer) ? x.slice() : x;
}

function leavingTensor(t: Tensor): Tensor {
  const data = t.concrete();
  return isScopedStorage(data.buffer) ? new Tensor(data.slice(), t.shape, t.dtype, t.device) : t;
}

/** The generic path for one node: shape rule + kernel (structural ops: regions compiled per shape). */
function runDynamic(node: Node, args: Tensor[], library: FunctionLibrary): Tensor[] {
  return runNode(node, args, { library }, runGraph);
}

// ---------------------------------------------------------------------------------------
// analysis

type Strategy =
  | { kind: "alias" }
  | { kind: "elementwise"; def: OpDef }
  | { kind: "fused" }
  | { kind: "matmul"; arith: MatmulArith }
  | { kind: "wasmMatmul"; m: number; k: number; n: number; transA: boolean; transB: boolean }
  | { kind: "simd"; steps: { op: string; args: number[] }[]; outputs: number[] }
  | { kind: "reduce"; outer: number; red: number; inner: number }
  | { kind: "const"; data: TypedArray[] }
  | { kind: "kernel"; def: OpDef; escapesInputs: boolean }
  | { kind: "readVariable" }
  | { kind: "assignVariable" }
  | { kind: "call"; callee: CompiledGraph }
  | { kind: "cond"; then: CompiledGraph; else: CompiledGraph }
  | { kind: "while"; cond: CompiledGraph; body: CompiledGraph }
  | { kind: "runtime" }
  | { kind: "dynamic" };

interface ValueInfo {
  /** Concrete type, or null for a value only known at run time (a Tensor). */
  type: TensorType | null;
  /** Local name in the generated code. */
  name: string;
  /** Written by inline code into storage this function allocates. */
  inline: boolean;
  /** Leaves the function (must be fresh storage). */
  escapes: boolean;
  /** Planned buffer index (inline values that do not escape). */
  buffer: number;
  /** Node index of the definition (-1 for inputs) and of the last use (nodes.length for outputs). */
  def: number;
  lastUse: number;
  /** Values (inline, planned) whose storage this value may share. */
  roots: Set<ValueInfo>;
}

const isConcrete = (s: readonly number[]) => s.every((d) => d >= 0);

/**
 * A stack (ops/iteration-stack.ts): only the leading dim is unknown, the rows have a known,
 * non-empty shape, so the storage's length tells the row count. Compiled code passes stacks
 * as storage like any static value; nodes that read or write them run their shape rule and
 * kernel at run time ("runtime" strategy), and loops carrying them compile once.
 */
function isStack(t: TensorType): boolean {
  return t.shape.length >= 1 && t.shape[0] === -1 && t.shape.slice(1).every((d) => d > 0);
}

/** The run-time shape of storage `data` of static type `t` (a stack's rows from its length). */
export function runtimeShape(t: TensorType, data: { length: number }): number[] {
  if (!isStack(t)) return t.shape.slice();
  const rest = t.shape.slice(1);
  return [data.length / sizeOf(rest), ...rest];
}

const compilable = (t: TensorType) => isConcrete(t.shape) || isStack(t);

function typesEqual(a: TensorType, b: TensorType): boolean {
  return a.dtype === b.dtype && a.shape.length === b.shape.length && a.shape.every((d, i) => d === b.shape[i]);
}

function build(c: CompiledGraph): void {
  const { graph: g, library } = prepareForExecution(c.graph, c.library, c.inputTypes);
  const nodes = g.nodes;
  const infos = new Map<Value, ValueInfo>();
  const mk = (v: Value, type: TensorType | null, defIndex: number): ValueInfo => {
    const info: ValueInfo = { type, name: `${type ? "v" : "t"}${infos.size}`, inline: false, escapes: false, buffer: -1, def: defIndex, lastUse: defIndex, roots: new Set() };
    infos.set(v, info);
    return info;
  };
  g.inputs.forEach((v, i) => mk(v, c.inputTypes[i]!, -1));
  const strategies: Strategy[] = [];

  // 1. types and strategies
  nodes.forEach((node, k) => {
    const ins = node.inputs.map((v) => infos.get(v)!);
    const inTypes = ins.map((x) => x.type);
    const setOuts = (types: (TensorType | null)[]) => node.outputs.forEach((v, i) => mk(v, types[i] ?? null, k));
    const dynamic = () => {
      strategies.push({ kind: "dynamic" });
      setOuts(node.outputs.map(() => null));
    };
    if (inTypes.some((t) => t === null)) return dynamic();
    const types = inTypes as TensorType[];
    switch (node.op) {
      case "readVariable": {
        const variable = node.attrs.variable as Variable;
        strategies.push({ kind: "readVariable" });
        return setOuts([{ dtype: variable.dtype, shape: variable.shape }]);
      }
      case "assignVariable":
        strategies.push({ kind: "assignVariable" });
        return setOuts([]);
      case "call": {
        const calleeGraph = library.get(node.attrs.callee as string);
        const callee = lookup(calleeGraph, library, types);
        if (!callee) return dynamic();
        strategies.push({ kind: "call", callee });
        return setOuts(allOrNothing(callOutputs(callee, types)));
      }
      case "cond": {
        const [thenG, elseG] = node.regions as [Graph, Graph];
        const operands = types.slice(1);
        const t = lookup(thenG, library, operands);
        const e = lookup(elseG, library, operands);
        if (!t || !e || !isPredicate(types[0]!)) return dynamic();
        strategies.push({ kind: "cond", then: t, else: e });
        const to = callOutputs(t, operands),
          eo = callOutputs(e, operands);
        return setOuts(allOrNothing(to.map((x, i) => (x && eo[i] && typesEqual(x, eo[i]!) ? x : null))));
      }
      case "while": {
        const [condG, bodyG] = node.regions as [Graph, Graph];
        const n = node.attrs.numLoopVars as number;
        const attempt = (loopTypes: TensorType[]) => {
          const condC = lookup(condG, library, loopTypes);
          const bodyC = lookup(bodyG, library, loopTypes);
          if (!condC || !bodyC) return null;
          const co = callOutputs(condC, loopTypes);
          const bo = callOutputs(bodyC, loopTypes);
          const stable = co.length === 1 && co[0] !== null && isPredicate(co[0]!) && bo.length === n && bo.every((t, i) => t !== null && typesEqual(t, loopTypes[i]!));
          return { condC, bodyC, bo, stable };
        };
        let loop = attempt(types);
        // Stacks growing by a row per iteration: compile the loop once, for stack types.
        const grown = loop?.bo.map((t, i) => (i < n && t && isStack(t) && !isStack(types[i]!) && typesEqual({ dtype: t.dtype, shape: t.shape.slice(1) }, { dtype: types[i]!.dtype, shape: types[i]!.shape.slice(1) }) ? t : null));
        if (loop && !loop.stable && grown?.some((t) => t !== null)) loop = attempt(types.map((t, i) => grown[i] ?? t));
        if (!loop?.stable) return dynamic(); // shapes change across iterations: generic loop, bodies compiled per shape
        strategies.push({ kind: "while", cond: loop.condC, body: loop.bodyC });
        return setOuts(loop.bo.slice(0, n) as TensorType[]);
      }
    }
    let def: OpDef;
    let fused: ReturnType<typeof fusedSteps> = null;
    let outTypes: TensorType[];
    try {
      def = getOp(node.op);
      outTypes = def.infer(types, node.attrs);
    } catch {
      return dynamic(); // the generic path raises the error if the node runs
    }
    // (an output too large to allocate: the generic path raises the error when the node runs)
    if (!outTypes.every(compilable) || outTypes.some((t) => sizeOf(t.shape) > MAX_ELEMENTS)) return dynamic();
    setOuts(outTypes);
    if (!outTypes.every((t) => isConcrete(t.shape)) || !types.every((t) => isConcrete(t.shape))) {
      strategies.push({ kind: "runtime" });
      return;
    }
    if (def.stateful) {
      strategies.push({ kind: "kernel", def, escapesInputs: true });
    } else if (types.length === 0) {
      let data: TypedArray[] | null = null;
      try {
        data = def.kernel([], node.attrs, outTypes);
      } catch {
        data = null;
      }
      strategies.push(data ? { kind: "const", data } : { kind: "kernel", def, escapesInputs: false });
    } else if (VIEW_OPS.has(node.op) && outTypes.length === 1 && outTypes[0]!.dtype === types[0]!.dtype && sizeOf(outTypes[0]!.shape) === sizeOf(types[0]!.shape)) {
      strategies.push({ kind: "alias" });
    } else if (def.elementwise && outTypes.length === 1) {
      const steps = [{ op: node.op, args: types.map((_, i) => i), dtype: outTypes[0]!.dtype }];
      strategies.push(simdLoop(types, outTypes, steps, [0]) ?? { kind: "elementwise", def });
    } else if (node.op === "fusedElementwise" && (fused = fusedSteps(node, types)) !== null) {
      strategies.push(simdLoop(types, outTypes, fused.steps, fused.outputs) ?? { kind: "fused" });
    } else if (node.op === "matmul" && wasmMatmul(types, outTypes[0]!, node.attrs as MatmulAttrs)) {
      strategies.push({ kind: "wasmMatmul", ...wasmMatmul(types, outTypes[0]!, node.attrs as MatmulAttrs)! });
    } else if (node.op === "matmul" && inlineMatmul(types, outTypes[0]!, node.attrs as { transposeA?: boolean })) {
      strategies.push({ kind: "matmul", arith: inlineMatmul(types, outTypes[0]!, node.attrs as { transposeA?: boolean })! });
    } else if (INLINE_REDUCTIONS[node.op] && reductionView(types[0]!.shape, (node.attrs as { axes: number[] }).axes)) {
      strategies.push({ kind: "reduce", ...reductionView(types[0]!.shape, (node.attrs as { axes: number[] }).axes)! });
    } else {
      strategies.push({ kind: "kernel", def, escapesInputs: false });
    }
  });
  const outInfos = g.outputs.map((v) => infos.get(v)!);

  // 2. escapes (propagated back through views), inline values, aliasing roots, liveness
  const markEscape = (info: ValueInfo) => (info.escapes = true);
  outInfos.forEach(markEscape);
  nodes.forEach((node, k) => {
    const s = strategies[k]!;
    if (s.kind === "assignVariable" || s.kind === "dynamic" || s.kind === "runtime" || (s.kind === "kernel" && s.escapesInputs)) node.inputs.forEach((v) => markEscape(infos.get(v)!));
  });
  for (let k = nodes.length - 1; k >= 0; k--) {
    if (strategies[k]!.kind === "alias" && infos.get(nodes[k]!.outputs[0]!)!.escapes) markEscape(infos.get(nodes[k]!.inputs[0]!)!);
  }
  nodes.forEach((node, k) => {
    const s = strategies[k]!;
    const ins = node.inputs.map((v) => infos.get(v)!);
    for (const x of ins) x.lastUse = Math.max(x.lastUse, k);
    const outs = node.outputs.map((v) => infos.get(v)!);
    if (s.kind === "elementwise" || s.kind === "fused" || s.kind === "simd" || s.kind === "matmul" || s.kind === "reduce" || s.kind === "wasmMatmul") {
      for (const o of outs) {
        o.inline = true;
        if (!o.escapes) o.roots.add(o);
      }
    } else if (s.kind === "alias" || s.kind === "kernel" || s.kind === "runtime" || s.kind === "call" || s.kind === "cond" || s.kind === "while") {
      // Conservatively, the outputs may share storage with any input.
      for (const o of outs) for (const x of ins) for (const r of x.roots) o.roots.add(r);
    }
  });
  for (const o of outInfos) o.lastUse = nodes.length;
  const rootEnd = new Map<ValueInfo, number>();
  for (const info of infos.values()) for (const r of info.roots) rootEnd.set(r, Math.max(rootEnd.get(r) ?? -1, info.lastUse));

  // 3. buffer plan: planned values share buffers when their lifetimes do not overlap
  const buffers: { dtype: DType; size: number }[] = [];
  const free: number[] = [];
  const releaseAt = new Map<number, ValueInfo[]>();
  for (const [r, end] of rootEnd) {
    const list = releaseAt.get(end) ?? [];
    list.push(r);
    releaseAt.set(end, list);
  }
  const klass = (d: DType) => storageCtor(d).name;
  nodes.forEach((node, k) => {
    for (const v of node.outputs) {
      const o = infos.get(v)!;
      if (!o.inline || o.escapes) continue;
      const size = sizeOf(o.type!.shape);
      const idx = free.findIndex((b) => buffers[b]!.size === size && klass(buffers[b]!.dtype) === klass(o.type!.dtype));
      if (idx >= 0) o.buffer = free.splice(idx, 1)[0]!;
      else {
        o.buffer = buffers.length;
        buffers.push({ dtype: o.type!.dtype, size });
      }
    }
    for (const r of releaseAt.get(k) ?? []) if (r.buffer >= 0) free.push(r.buffer);
  });

  // views of planned buffers are those buffers (the WebAssembly products address them directly)
  nodes.forEach((node, k) => {
    if (strategies[k]!.kind === "alias") infos.get(node.outputs[0]!)!.buffer = infos.get(node.inputs[0]!)!.buffer;
  });

  // 4. code
  const gen = new Codegen(c, g, library);
  gen.emit(nodes, strategies, infos, outInfos, buffers);
}

/** Region and call outputs are all static or all Tensors (one calling convention per node). */
function allOrNothing(outs: OutputDesc[]): OutputDesc[] {
  return outs.some((o) => o === null) ? outs.map(() => null) : outs;
}

function isPredicate(t: TensorType): boolean {
  return t.dtype === "bool" && sizeOf(t.shape) === 1;
}

/** Output types of a call to `callee` (types assumed from its declaration while it is being built). */
function callOutputs(callee: CompiledGraph, types: TensorType[]): OutputDesc[] {
  if (callee.built) return callee.outs;
  // A recursive call to a graph being compiled: its declared output types hold when the
  // call's input types are exactly the declared ones and fully known.
  const g = callee.graph;
  const declaredIn = g.inputs.map((v) => v.type);
  const exact = declaredIn.length === types.length && declaredIn.every((t, i) => typesEqual(t, types[i]!));
  const outs = g.outputs.map((v) => (exact && compilable(v.type) ? { dtype: v.type.dtype, shape: v.type.shape.slice() } : null));
  callee.assumedOuts = outs;
  return outs;
}

/** [outer, red, inner] when the reduced axes are one non-empty contiguous run. */
function reductionView(shape: readonly number[], axes: readonly number[]): { outer: number; red: number; inner: number } | null {
  if (!Array.isArray(axes) || axes.length === 0) return null;
  for (let i = 1; i < axes.length; i++) if (axes[i] !== axes[i - 1]! + 1) return null;
  const start = axes[0]!,
    end = axes[axes.length - 1]! + 1;
  if (start < 0 || end > shape.length) return null;
  return { outer: sizeOf(shape.slice(0, start)), red: sizeOf(shape.slice(start, end)), inner: sizeOf(shape.slice(end)) };
}

interface MatmulAttrs {
  transposeA?: boolean;
  transposeB?: boolean;
}

/**
 * A float32 product the executor's WebAssembly gemm computes (exec/wasm-gemm.ts): where the
 * eager kernel uses the WebAssembly sgemm (same arithmetic) and the product is small enough
 * that the general kernel (packing, threads) would not be faster. A transposed B is kept
 * transposed in its slot (once per new storage: a loop's weight is transposed once per call).
 */
function wasmMatmul(types: TensorType[], out: TensorType, attrs: MatmulAttrs): { m: number; k: number; n: number; transA: boolean; transB: boolean } | null {
  const [a, b] = types as [TensorType, TensorType];
  if (a.shape.length !== 2 || b.shape.length !== 2 || out.shape.length !== 2) return null;
  if (out.dtype !== "float32" || a.dtype !== "float32" || b.dtype !== "float32") return null;
  const m = out.shape[0]!,
    n = out.shape[1]!;
  const transA = !!attrs.transposeA;
  const k = transA ? a.shape[0]! : a.shape[1]!;
  const mnk = m * n * k;
  if (mnk < WASM_MIN_MNK || mnk > WASM_GEMM_MAX || mnk <= INLINE_SGEMM_MAX || k * n > WASM_GEMM_MAX_B) return null;
  // (the eager kernel runs it natively: the kernel path gives the same bits)
  if (nativeMatmulWins(m, n, k)) return null;
  if (getWasmRuntime() === null || gemmModule() === null) return null;
  return { m, k, n, transA, transB: !!attrs.transposeB };
}

/**
 * An elementwise loop (one op or a fused chain) the executor runs as WebAssembly SIMD
 * (exec/wasm-elementwise.ts): float32 throughout, ops with a SIMD form, large enough.
 */
function simdLoop(types: TensorType[], outTypes: TensorType[], steps: { op: string; args: number[]; dtype: DType }[], outputs: number[]): Extract<Strategy, { kind: "simd" }> | null {
  const outShape = outTypes[0]!.shape;
  if (sizeOf(outShape) < SIMD_MIN_ELEMENTS || gemmModule() === null) return null;
  if (!types.every((t) => t.dtype === "float32") || !outTypes.every((t) => t.dtype === "float32" && t.shape.length === outShape.length && t.shape.every((d, i) => d === outShape[i]))) return null;
  if (!steps.every((st) => st.dtype === "float32" && simdSupported(st.op))) return null;
  if (!simdLoopFits(outShape, types.map((t) => t.shape))) return null;
  return { kind: "simd", steps: steps.map((st) => ({ op: st.op, args: st.args.slice() })), outputs: outputs.map((i) => types.length + i) };
}

/** Whether a WebAssembly product is worth splitting over two threads. */
function splitGemm(s: Strategy): boolean {
  return s.kind === "wasmMatmul" && s.m >= 8 && 2 * s.m * s.n * s.k >= SPLIT_MIN_FLOPS;
}

/** dst (k x n, row-major) = the transpose of src (n x k, row-major). */
function transposeInto(dst: Float32Array, src: TypedArray, n: number, k: number): void {
  for (let j = 0; j < n; j++) {
    const row = j * k;
    for (let p = 0; p < k; p++) dst[p * n + j] = src[row + p]!;
  }
}

/**
 * Whether a matmul runs as inline code, and which eager path's arithmetic it reproduces: the
 * TypeScript loops below WASM_MIN_MNK (and for float64), the WebAssembly sgemm above it, up to
 * the size where calling the kernel gets cheaper than the inline loops.
 */
function inlineMatmul(types: TensorType[], out: TensorType, attrs: { transposeA?: boolean }): MatmulArith | null {
  const [a, b] = types as [TensorType, TensorType];
  if (a.shape.length !== 2 || b.shape.length !== 2 || out.shape.length !== 2) return null;
  if (a.dtype !== out.dtype || b.dtype !== out.dtype) return null;
  const m = out.shape[0]!,
    n = out.shape[1]!;
  const k = attrs.transposeA ? a.shape[0]! : a.shape[1]!;
  const mnk = m * n * k;
  if (out.dtype === "float64") return mnk <= INLINE_LOOP_MAX ? "loop" : null;
  if (out.dtype !== "float32") return null;
  if (mnk < WASM_MIN_MNK) return "loop";
  if (getWasmRuntime() === null) return mnk <= INLINE_LOOP_MAX ? "loop" : null;
  return mnk <= INLINE_SGEMM_MAX ? "sgemm" : null;
}

// ---------------------------------------------------------------------------------------
// code generation

class Codegen {
  private readonly constNames: string[] = [];
  private readonly constValues: unknown[] = [];
  private readonly setup: string[] = [];

  constructor(
    private readonly c: CompiledGraph,
    private readonly g: Graph,
    private readonly library: FunctionLibrary,
  ) {}

  private konst(value: unknown, hint = "K"): string {
    const i = this.constValues.indexOf(value);
    if (i >= 0 && typeof value === "object" && value !== null) return this.constNames[i]!;
    const name = `${hint}${this.constNames.length}`;
    this.constNames.push(name);
    this.constValues.push(value);
    return name;
  }

  emit(nodes: Node[], strategies: Strategy[], infos: Map<Value, ValueInfo>, outInfos: ValueInfo[], buffers: { dtype: DType; size: number }[]): void {
    // arena: every planned buffer is a view of one ArrayBuffer per instance (the memory of a
    // WebAssembly gemm instance when the graph has products it computes)
    let offset = 0;
    const bufNames: string[] = [];
    const bufOffsets: number[] = [];
    const reserve = (bytes: number) => {
      offset = Math.ceil(offset / 16) * 16;
      const at = offset;
      offset += bytes;
      return at;
    };
    buffers.forEach((b, i) => {
      const ctor = storageCtor(b.dtype);
      const bytes = (ctor as unknown as { BYTES_PER_ELEMENT: number }).BYTES_PER_ELEMENT;
      const at = reserve(b.size * bytes);
      bufNames.push(`B${i}`);
      bufOffsets.push(at);
      this.setup.push(`const B${i} = new ${ctor.name}(ARENA, ${at}, ${b.size});`);
    });
    // operands of WebAssembly products and loops that are not planned buffers are copied into
    // slots (once per call, at their first use; constants once per instance), and escaping
    // results are computed in a scratch slot
    const wasmNodes = nodes.map((_, k) => k).filter((k) => strategies[k]!.kind === "wasmMatmul" || strategies[k]!.kind === "simd");
    const constData = new Map<ValueInfo, TypedArray>();
    nodes.forEach((node, k) => {
      const st = strategies[k]!;
      if (st.kind === "const") node.outputs.forEach((v, i) => constData.set(infos.get(v)!, st.data[i]!));
    });
    const slots = new Map<ValueInfo, { at: number; name: string; firstUse: number; constant: boolean }>();
    // transposed B operands (any storage, planned buffers too), by value
    const tslots = new Map<ValueInfo, { at: number; name: string; firstUse: number; constant: boolean }>();
    // by node and output: `${k}:${i}`
    const scratch = new Map<string, { at: number; name: string }>();
    for (const k of wasmNodes) {
      const st = strategies[k] as Extract<Strategy, { kind: "wasmMatmul" | "simd" }>;
      nodes[k]!.inputs.forEach((v, i) => {
        const x = infos.get(v)!;
        if (i === 1 && st.kind === "wasmMatmul" && st.transB) {
          if (tslots.has(x)) return;
          const size = sizeOf(x.type!.shape);
          const name = `TSL${tslots.size}`;
          const at = reserve(size * 4);
          this.setup.push(`const ${name} = new Float32Array(ARENA, ${at}, ${size}); let ${name}src = null;`);
          tslots.set(x, { at, name, firstUse: k, constant: constData.has(x) });
          return;
        }
        if (x.buffer >= 0 || slots.has(x)) return;
        const size = sizeOf(x.type!.shape);
        const name = `SL${slots.size}`;
        const at = reserve(size * 4);
        // the storage last copied in: tensors are immutable, so an operand whose storage did not
        // change since the last call (weights, captured constants) is not copied again
        this.setup.push(`const ${name} = new Float32Array(ARENA, ${at}, ${size}); let ${name}src = null;`);
        slots.set(x, { at, name, firstUse: k, constant: constData.has(x) });
      });
      nodes[k]!.outputs.forEach((v, i) => {
        const o = infos.get(v)!;
        if (o.buffer >= 0) return;
        const size = sizeOf(o.type!.shape);
        const at = reserve(size * 4);
        this.setup.push(`const SC${k}_${i} = new Float32Array(ARENA, ${at}, ${size});`);
        scratch.set(`${k}:${i}`, { at, name: `SC${k}_${i}` });
      });
    }
    const operandAt = (x: ValueInfo): number => (x.buffer >= 0 ? bufOffsets[x.buffer]! : slots.get(x)!.at);
    const resultAt = (k: number, i: number): number => scratch.get(`${k}:${i}`)?.at ?? bufOffsets[infos.get(nodes[k]!.outputs[i]!)!.buffer]!;
    // the SIMD loops, one module per graph
    const simdLoops: SimdLoop[] = [];
    for (const k of wasmNodes) {
      const st = strategies[k]!;
      if (st.kind !== "simd") continue;
      const ins = nodes[k]!.inputs.map((v) => infos.get(v)!);
      simdLoops.push({
        name: `e${k}`,
        outShape: infos.get(nodes[k]!.outputs[0]!)!.type!.shape,
        inputs: ins.map((x) => ({ at: operandAt(x), shape: x.type!.shape })),
        steps: st.steps,
        outputs: st.outputs.map((value, i) => ({ at: resultAt(k, i), value })),
      });
    }
    const arenaBytes = Math.max(16, Math.ceil(offset / 16) * 16);
    if (wasmNodes.length > 0) {
      const make = this.konst(gemmInstance, "gemmInstance");
      const simdSetup: string[] = [];
      if (simdLoops.length > 0) {
        const mod = this.konst(elementwiseModule(simdLoops), "SimdModule");
        simdSetup.push(`const EW = ${this.konst(elementwiseInstance, "simdInstance")}(${mod}, WG.memory);`);
        for (const l of simdLoops) simdSetup.push(`const E${l.name.slice(1)} = EW.${l.name};`);
      }
      const threads = wasmNodes.some((k) => splitGemm(strategies[k]!));
      this.setup.unshift(`const WG = ${make}(${arenaBytes}, ${threads}); const ARENA = WG.memory.buffer; const GEMM = WG.gemm; const PGEMM = WG.split;`, ...simdSetup);
    } else {
      this.setup.unshift(`const ARENA = new ArrayBuffer(${arenaBytes});`);
    }
    const Tensor_ = this.konst(Tensor, "Tensor");

    // Code is generated per node, then cut into segments of bounded size; values used in a
    // later segment than the one defining them live in the instance array V.
    const nodeCode: string[][] = nodes.map(() => []);
    const nodeUses: Set<ValueInfo>[] = nodes.map(() => new Set());
    let current = 0;
    const use = (info: ValueInfo): string => {
      nodeUses[current]!.add(info);
      return info.name;
    };
    const define = (info: ValueInfo, expr: string) => {
      nodeCode[current]!.push(`const ${info.name} = ${expr};`);
    };
    // storage leaving the function must not be this instance's arena
    const fresh = (info: ValueInfo): string => {
      const x = use(info);
      if (info.type === null || info.roots.size === 0) return x;
      return `(${x}.buffer === ARENA ? ${x}.slice() : ${x})`;
    };
    /**
     * A value as a Tensor for a kernel or the generic path; where the value `leaves` the call
     * (a variable, a stateful kernel, the generic path may keep it), stack-scope storage is
     * copied too (ops/stack-storage.ts: it is reused once the call returns).
     */
    let stackTemps = 0;
    const tensorOf = (info: ValueInfo, leaves: boolean): string => {
      if (info.type === null) return leaves ? `${this.konst(leavingTensor, "leavingTensor")}(${use(info)})` : use(info);
      const storage = leaves ? `${this.konst(leavingStorage, "leavingStorage")}(${fresh(info)})` : fresh(info);
      if (isStack(info.type)) {
        const x = `X${current}_${stackTemps++}`;
        nodeCode[current]!.push(`const ${x} = ${storage};`);
        return `new ${Tensor_}(${x}, ${this.konst(runtimeShape, "runtimeShape")}(${this.konst(info.type, "T")}, ${x}), ${JSON.stringify(info.type.dtype)}, dev)`;
      }
      return `new ${Tensor_}(${storage}, ${this.konst(Object.freeze(info.type.shape.slice()), "S")}, ${JSON.stringify(info.type.dtype)}, dev)`;
    };
    /** Copies an operand of a WebAssembly node into its slot (planned buffers are in place). */
    const copyIn = (x: ValueInfo, k: number, out: string[]): void => {
      if (x.buffer >= 0) return;
      const sl = slots.get(x)!;
      if (sl.constant) {
        const copy = `${sl.name}.set(${this.konst(constData.get(x)!, "C")});`;
        if (!this.setup.includes(copy)) this.setup.push(copy);
      } else {
        const src = use(x);
        // (storage that may be a view of this instance's buffers changes in place: always copied)
        const copy = x.roots.size > 0 ? `${sl.name}.set(${src});` : `if (${sl.name}src !== ${src}) { ${sl.name}.set(${src}); ${sl.name}src = ${src}; }`;
        if (sl.firstUse === k && !out.includes(copy)) out.push(copy);
      }
    };
    const target = (info: ValueInfo): string => {
      if (info.buffer >= 0) return bufNames[info.buffer]!;
      return `new ${storageCtor(info.type!.dtype).name}(${sizeOf(info.type!.shape)})`;
    };

    nodes.forEach((node, k) => {
      current = k;
      const out = nodeCode[k]!;
      const s = strategies[k]!;
      const ins = node.inputs.map((v) => infos.get(v)!);
      const outs = node.outputs.map((v) => infos.get(v)!);
      const id = String(k);
      switch (s.kind) {
        case "alias":
          define(outs[0]!, use(ins[0]!));
          break;
        case "const":
          outs.forEach((o, i) => define(o, this.konst(s.data[i]!, "C")));
          break;
        case "readVariable":
          define(outs[0]!, `${this.konst(node.attrs.variable, "Var")}.storedValue.concrete()`);
          break;
        case "assignVariable":
          out.push(`${this.konst(node.attrs.variable, "Var")}.setStoredValue(${tensorOf(ins[0]!, true)});`);
          break;
        case "elementwise": {
          const o = outs[0]!;
          define(o, target(o));
          const step: LoopStep = { expr: templateFor(s.def, node.attrs, o.type!.dtype), args: ins.map((_, i) => i), dtype: o.type!.dtype };
          const loopIns: LoopInput[] = ins.map((x) => ({ array: use(x), shape: x.type!.shape }));
          out.push(elementwiseSource(id, o.type!.shape, loopIns, [step], [{ array: o.name, value: ins.length }]));
          break;
        }
        case "fused": {
          const f = fusedSteps(node, ins.map((x) => x.type!))!;
          for (const o of outs) define(o, target(o));
          const loopIns: LoopInput[] = ins.map((x) => ({ array: use(x), shape: x.type!.shape }));
          const steps: LoopStep[] = f.steps.map((st) => ({ expr: templateFor(getOp(st.op), st.attrs, st.dtype), args: st.args, dtype: st.dtype }));
          const loopOuts: LoopOutput[] = outs.map((o, i) => ({ array: o.name, value: ins.length + f.outputs[i]! }));
          out.push(elementwiseSource(id, outs[0]!.type!.shape, loopIns, steps, loopOuts));
          break;
        }
        case "matmul": {
          const o = outs[0]!;
          const [a, b] = ins as [ValueInfo, ValueInfo];
          const tA = !!node.attrs.transposeA,
            tB = !!node.attrs.transposeB;
          const m = o.type!.shape[0]!,
            n = o.type!.shape[1]!;
          const kk = tA ? a.type!.shape[0]! : a.type!.shape[1]!;
          define(o, target(o));
          out.push(matmulSource(id, use(a), use(b), o.name, o.type!.dtype as "float32" | "float64", m, kk, n, tA, tB, s.arith));
          break;
        }
        case "simd": {
          for (const x of ins) copyIn(x, k, out);
          out.push(`E${k}();`);
          outs.forEach((o, i) => {
            const sc = scratch.get(`${k}:${i}`);
            define(o, sc ? `${sc.name}.slice()` : bufNames[o.buffer]!);
          });
          break;
        }
        case "wasmMatmul": {
          const o = outs[0]!;
          const [a, b] = ins as [ValueInfo, ValueInfo];
          const offsetOf = (x: ValueInfo): number => {
            copyIn(x, k, out);
            return operandAt(x);
          };
          const transposedOffsetOf = (x: ValueInfo): number => {
            const sl = tslots.get(x)!;
            const t = this.konst(transposeInto, "transposeInto");
            if (sl.constant) {
              const copy = `${t}(${sl.name}, ${this.konst(constData.get(x)!, "C")}, ${s.n}, ${s.k});`;
              if (!this.setup.includes(copy)) this.setup.push(copy);
            } else {
              const src = x.buffer >= 0 ? bufNames[x.buffer]! : use(x);
              // (planned buffers and views of them change in place: always transposed)
              const copy =
                x.buffer >= 0 || x.roots.size > 0
                  ? `${t}(${sl.name}, ${src}, ${s.n}, ${s.k});`
                  : `if (${sl.name}src !== ${src}) { ${t}(${sl.name}, ${src}, ${s.n}, ${s.k}); ${sl.name}src = ${src}; }`;
              if ((sl.firstUse === k || x.buffer >= 0 || x.roots.size > 0) && !out.includes(copy)) out.push(copy);
            }
            return sl.at;
          };
          const aAt = offsetOf(a),
            bAt = s.transB ? transposedOffsetOf(b) : offsetOf(b);
          const sc = scratch.get(`${k}:0`);
          const cAt = resultAt(k, 0);
          const sai = s.transA ? 1 : s.k,
            sap = s.transA ? s.m : 1;
          for (let p0 = 0; p0 < s.k; p0 += SGEMM_KC) {
            const kk = Math.min(SGEMM_KC, s.k - p0);
            out.push(`${splitGemm(s) ? "PGEMM" : "GEMM"}(${aAt + p0 * sap * 4}, ${bAt + p0 * s.n * 4}, ${cAt}, ${s.m}, ${s.n}, ${kk}, ${sai}, ${sap}, ${p0 > 0 ? 1 : 0});`);
          }
          define(o, sc ? `${sc.name}.slice()` : bufNames[o.buffer]!);
          break;
        }
        case "reduce": {
          const o = outs[0]!;
          define(o, target(o));
          out.push(reduceSource(id, node.op, use(ins[0]!), o.name, o.type!.dtype, s.outer, s.red, s.inner));
          break;
        }
        case "kernel": {
          const def = this.konst(s.def, "Op");
          const attrs = this.konst(node.attrs, "Attr");
          const outTypes = this.konst(outs.map((o) => ({ dtype: o.type!.dtype, shape: Object.freeze(o.type!.shape.slice()) })), "OT");
          let args: string;
          if (s.escapesInputs) {
            args = `[${ins.map((x) => tensorOf(x, true)).join(", ")}]`;
          } else {
            // handles made once per instance; only their storage changes per call
            const hs = ins.map((x, i) => {
              const h = `H${k}_${i}`;
              this.setup.push(`const ${h} = new ${Tensor_}(null, ${this.konst(Object.freeze(x.type!.shape.slice()), "S")}, ${JSON.stringify(x.type!.dtype)}, "cpu:0");`);
              out.push(`${h}._data = ${use(x)};`);
              return h;
            });
            this.setup.push(`const IN${k} = [${hs.join(", ")}];`);
            args = `IN${k}`;
          }
          // (the node's location names a kernel error; reset after, so nothing else inherits it)
          const ex = this.konst(executing, "EX");
          out.push(`${ex}.at = ${this.konst(node.loc, "Loc")}; const R${k} = ${def}.kernel(${args}, ${attrs}, ${outTypes}); ${ex}.at = null;`);
          outs.forEach((o, i) => define(o, `R${k}[${i}]`));
          break;
        }
        case "call":
        case "cond": {
          const regionIns = s.kind === "cond" ? ins.slice(1) : ins;
          const arr = `[${regionIns.map((x) => use(x)).join(", ")}]`;
          const anyDynamic = outs.some((o) => o.type === null);
          const method = anyDynamic ? "rawTensors" : "raw";
          let callee: string;
          if (s.kind === "call") callee = this.konst(s.callee, "Fn");
          else callee = `(${use(ins[0]!)}[0] !== 0 ? ${this.konst(s.then, "Then")} : ${this.konst(s.else, "Else")})`;
          out.push(`const R${k} = ${callee}.${method}(${arr}, dev);`);
          outs.forEach((o, i) => define(o, `R${k}[${i}]`));
          break;
        }
        case "while": {
          const n = node.attrs.numLoopVars as number;
          const max = (node.attrs.maxIterations as number | undefined) ?? Infinity;
          const condF = this.konst(s.cond, "Cond");
          const bodyF = this.konst(s.body, "Body");
          const vars = ins.slice(0, n).map((x, i) => {
            out.push(`let L${k}_${i} = ${use(x)};`);
            return `L${k}_${i}`;
          });
          const inv = ins.slice(n).map((x) => use(x));
          const all = `[${[...vars, ...inv].join(", ")}]`;
          out.push(`for (let it = 0; it < ${Number.isFinite(max) ? max : "Infinity"}; it++) {`);
          out.push(`  if (${condF}.raw(${all}, dev)[0][0] === 0) break;`);
          out.push(`  const r = ${bodyF}.raw(${all}, dev);`);
          vars.forEach((v, i) => out.push(`  ${v} = r[${i}];`));
          out.push(`}`);
          outs.forEach((o, i) => define(o, vars[i]!));
          break;
        }
        case "runtime": {
          const nodeK = this.konst(node, "Node");
          const lib = this.konst(this.library, "Lib");
          const dyn = this.konst(runDynamic, "runDynamic");
          // (stack ops work on stack-scope storage in place; a stateful op may keep its inputs; a
          // pushed row is copied at once, so it may stay a view of this instance's buffers)
          const stateful = !!structuralHandlers[node.op] || getOp(node.op).stateful === true;
          const args = ins.map((x, i) => (node.op === "stackPush" && i === 1 && x.type !== null && !isStack(x.type) ? `new ${Tensor_}(${use(x)}, ${this.konst(Object.freeze(x.type.shape.slice()), "S")}, ${JSON.stringify(x.type.dtype)}, dev)` : tensorOf(x, stateful)));
          out.push(`const R${k} = ${dyn}(${nodeK}, [${args.join(", ")}], ${lib});`);
          outs.forEach((o, i) => define(o, `R${k}[${i}].concrete()`));
          break;
        }
        case "dynamic": {
          const nodeK = this.konst(node, "Node");
          const lib = this.konst(this.library, "Lib");
          const dyn = this.konst(runDynamic, "runDynamic");
          out.push(`const R${k} = ${dyn}(${nodeK}, [${ins.map((x) => tensorOf(x, true)).join(", ")}], ${lib});`);
          outs.forEach((o, i) => define(o, `R${k}[${i}]`));
          break;
        }
      }
    });

    // the outputs (read after the last segment)
    current = nodes.length;
    nodeUses.push(new Set());
    const results = outInfos.map((o) => (o.type === null ? use(o) : fresh(o)));

    // segments
    const segOfNode: number[] = [];
    let segIndex = 0,
      chars = 0,
      count = 0;
    nodes.forEach((_, k) => {
      const size = nodeCode[k]!.reduce((a, l) => a + l.length + 1, 0);
      if (count > 0 && (chars + size > SEGMENT_CHARS || count >= SEGMENT_NODES)) {
        segIndex++;
        chars = 0;
        count = 0;
      }
      segOfNode.push(segIndex);
      chars += size;
      count++;
    });
    const numSegs = nodes.length === 0 ? 0 : segIndex + 1;
    segOfNode.push(numSegs); // the results
    const defSeg = (info: ValueInfo) => (info.def < 0 ? -1 : segOfNode[info.def]!);
    const slot = new Map<ValueInfo, number>();
    for (const info of infos.values()) if (info.def < 0) slot.set(info, slot.size); // graph inputs arrive in V
    nodeUses.forEach((uses, k) => {
      for (const x of uses) if (defSeg(x) !== segOfNode[k] && !slot.has(x)) slot.set(x, slot.size);
    });
    const segments: string[][] = Array.from({ length: numSegs + 1 }, () => []);
    const loaded: Set<ValueInfo>[] = segments.map(() => new Set());
    nodeUses.forEach((uses, k) => {
      const sg = segOfNode[k]!;
      for (const x of uses) {
        if (defSeg(x) === sg || loaded[sg]!.has(x)) continue;
        loaded[sg]!.add(x);
        segments[sg]!.push(`const ${x.name} = V[${slot.get(x)}];`);
      }
    });
    nodes.forEach((node, k) => {
      const lines = segments[segOfNode[k]!]!;
      lines.push(`// ${node.op}`, ...nodeCode[k]!);
      for (const v of node.outputs) {
        const info = infos.get(v)!;
        if (slot.has(info)) lines.push(`V[${slot.get(info)}] = ${info.name};`);
      }
    });
    const inputLoads = this.g.inputs.map((v, i) => `V[${slot.get(infos.get(v)!)}] = ins[${i}];`);
    const segFns = segments
      .slice(0, numSegs)
      .map((lines, i) => `function seg${i}(dev) {\n${lines.join("\n")}\n}`)
      .join("\n");
    const body = `"use strict";
${SCALAR_PRELUDE}
return function makeInstance() {
${this.setup.join("\n")}
const V = new Array(${Math.max(1, slot.size)}).fill(null);
${segFns}
return function run(ins, dev) {
${inputLoads.join("\n")}
${segments
  .slice(0, numSegs)
  .map((_, i) => `seg${i}(dev);`)
  .join("\n")}
${segments[numSegs]!.join("\n")}
return [${results.join(", ")}];
};
};`;
    if (this.constNames.length > MAX_CONSTANTS) throw new TooLargeError(`graph ${this.g.name} needs ${this.constNames.length} bound constants`);
    const make = new Function(...this.constNames, body)(...this.constValues) as () => RawFn;
    const outs = outInfos.map((o) => (o.type ? { dtype: o.type.dtype, shape: o.type.shape.slice() } : null));
    if (this.c.assumedOuts) {
      const assumed = this.c.assumedOuts;
      const ok = assumed.every((a, i) => a === null || (outs[i] !== null && typesEqual(a, outs[i]!)));
      if (!ok) throw new Error(`internal: recursive function ${this.g.name} compiled to other output types than its callers assumed`);
      // A caller that assumed a dynamic output receives Tensors through rawTensors; a static
      // assumption requires a static output, checked above.
    }
    this.c.finish(outs, body, make);
  }
}

// ---------------------------------------------------------------------------------------

if (process.env.STAGECRAFT_EXECUTOR !== "interpret") setDefaultExecutor(compiledExecutor);

export type { LoopStep };
