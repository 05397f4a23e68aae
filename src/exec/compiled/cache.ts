/**
 * The compiled executor's cache: the specializations of a graph (with its function library) by
 * concrete input signature, compiled once a signature has run `compileAfter` times (analysis.ts,
 * then codegen.ts), interpreted before that, and interpreted for good when the types do not fit
 * the graph or it has too many specializations.
 */
import type { DType } from "../../core/dtype.js";
import { ShapeError } from "../../core/errors.js";
import type { Tensor } from "../../core/tensor.js";
import type { FunctionLibrary, Graph, Node } from "../../graph/ir.js";
import { interpret, runNode, type ExecEnv } from "../interpreter.js";
import { analyze } from "./analysis.js";
import { generate, TooLargeError } from "./codegen.js";
import { CompiledGraph } from "./graph.js";

/** Specializations per graph before the executor gives up compiling it and interprets. */
const MAX_SPECIALIZATIONS = 16;

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
export function lookup(graph: Graph, library: FunctionLibrary, types: readonly { shape: readonly number[]; dtype: DType }[], compileAfter = 0): CompiledGraph | null {
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
    generate(c, analyze(c, lookup), runDynamic);
  } catch (e) {
    entry.compiled = null;
    if (!(e instanceof TooLargeError)) throw e;
    entry.interpret = true; // beyond what one generated function can bind: interpret it
    return null;
  }
  return c;
}


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


/** Runs a graph on concrete tensors through its specialization, or the interpreter. */
export function runGraphWith(compileAfter: number): (graph: Graph, inputs: Tensor[], env: ExecEnv) => Tensor[] {
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





/** The generic path for one node: shape rule + kernel (structural ops: regions compiled per shape). */
function runDynamic(node: Node, args: Tensor[], library: FunctionLibrary): Tensor[] {
  return runNode(node, args, { library }, runGraph);
}

// ---------------------------------------------------------------------------------------
