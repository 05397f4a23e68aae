/**
 * What the compiled executor takes from the graph optimizer (graph/passes): the graph to
 * compile for concrete input types.
 *
 * The traced graph stays as it is (it is printed, differentiated and replayed by tapes); the
 * executor compiles a copy whose input types are the concrete ones, refined through the shape
 * rules (so fusion, which needs known shapes, applies to graphs traced with unknown dims), then
 * optimized. Graphs that come out of such a copy (its regions and library functions) are not
 * optimized again; when compiled for more precise input types than they declare, they are
 * copied, refined and fused once more.
 */
import { config } from "../core/config.js";
import { FunctionLibrary, type Graph } from "../graph/ir.js";
import { cloneGraph, cloneProgram, fuse, optimize, refineTypes } from "../graph/passes/index.js";
import { type TensorType } from "../ops/registry.js";
import { graphsWithin } from "../graph/passes/util.js";

/** Graphs produced by prepareForExecution (already optimized). */
const optimized = new WeakSet<Graph>();

/** `STAGECRAFT_OPTIMIZE=0` compiles traced graphs without the optimizer (for debugging). */
const OPTIMIZE = config.optimize;
/**
 * `STAGECRAFT_VERIFY=1` runs the graph verifier after every pass (the pass tests always do;
 * at run time it triples the optimization time of large graphs).
 */
const VERIFY = config.verify;

function sameTypes(g: Graph, types: readonly TensorType[]): boolean {
  return g.inputs.every((v, i) => {
    const t = types[i]!;
    return v.type.dtype === t.dtype && v.type.shape.length === t.shape.length && v.type.shape.every((d, j) => d === t.shape[j]);
  });
}

function setInputTypes(g: Graph, types: readonly TensorType[]): void {
  g.inputs.forEach((v, i) => (v.type = { dtype: types[i]!.dtype, shape: types[i]!.shape.slice() }));
}

function mark(g: Graph, lib: FunctionLibrary | null): void {
  for (const x of graphsWithin(g)) optimized.add(x);
  if (lib) for (const f of lib.functions.values()) for (const x of graphsWithin(f)) optimized.add(x);
}

/**
 * The graph (and library) to compile for `g` called with `types`: an optimized copy with the
 * concrete input types, or `g` itself when it already is one.
 */
export function prepareForExecution(g: Graph, lib: FunctionLibrary, types: readonly TensorType[]): { graph: Graph; library: FunctionLibrary } {
  if (!OPTIMIZE) return { graph: g, library: lib };
  if (optimized.has(g)) {
    if (sameTypes(g, types)) return { graph: g, library: lib };
    // A region or library function of an optimized program, called with more precise types.
    const copy = cloneGraph(g);
    setInputTypes(copy, types);
    refineTypes(copy);
    fuse(copy, new FunctionLibrary());
    mark(copy, null);
    return { graph: copy, library: lib };
  }
  const copy = cloneProgram(g, lib);
  setInputTypes(copy.graph, types);
  refineTypes(copy.graph);
  optimize(copy.graph, copy.library, { verify: VERIFY });
  mark(copy.graph, copy.library);
  return copy;
}
