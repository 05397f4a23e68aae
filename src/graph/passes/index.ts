/**
 * Graph optimization passes and the pipeline that runs them.
 *
 * Every pass has the shape `(g: Graph, lib: FunctionLibrary) => Graph`: it rewrites `g` (and
 * its regions and library functions) in place and returns it. `optimize` runs
 *
 *   [bind constant inputs] -> ( inline -> simplify -> constantFold -> cse -> prune -> ifConvert )*
 *   -> fusion
 *
 * repeating the bracketed group until nothing changes (at most `maxIterations` rounds), then
 * fusion once, last; the verifier runs after every pass. Memory planning (planMemory) is an
 * analysis the executor runs on the optimized graph.
 *
 * Semantics are kept: stateful nodes (hostCall, print, assignVariable, and control flow or
 * calls containing them) are never removed, merged, folded or reordered; readVariable is not
 * merged across anything that may assign; random ops are not folded. One documented
 * exception, as in XLA and Grappler: `x + 0` on floats is folded to x (which maps x = -0 to
 * -0 instead of +0); pass `exactSignedZeros: true` to keep it.
 *
 * `optimize` mutates. Graphs and library functions of concrete functions are shared (with
 * callers, and with staged gradients that replay them through the tape, which a fused node
 * cannot do): executors should optimize a copy, `optimizeCopy(g, lib)`.
 */
import type { Tensor } from "../../core/tensor.js";
import type { FunctionLibrary, Graph } from "../ir.js";
import { verifyGraph } from "../verify.js";
import { bindConstantInputs } from "./bind-constants.js";
import { runConstantFold, type ConstantFoldOptions } from "./constant-fold.js";
import { runCse } from "./cse.js";
import { runFusion, type FusionOptions } from "./fusion.js";
import { runInline, type InlineOptions } from "./inline.js";
import { runPrune } from "./prune.js";
import { runIfConvert } from "./if-convert.js";
import { runSimplify, type SimplifyOptions } from "./simplify.js";
import { cloneProgram } from "./util.js";
import { checkOptions, optionKeys } from "../../core/options.js";

export { constantOp, constantAttrsOf, type ConstantAttrs } from "../../ops/constant.js";
export { constantFold, uniformValueOf, isConstantSource, DEFAULT_FOLD_LIMIT, type ConstantFoldOptions } from "./constant-fold.js";
export { cse } from "./cse.js";
export { prune } from "./prune.js";
export { ifConvert, IF_CONVERT_MAX_NODES, IF_CONVERT_MAX_ELEMENTS } from "./if-convert.js";
export { simplify, type SimplifyOptions } from "./simplify.js";
export { inline, recursiveFunctions, DEFAULT_INLINE_THRESHOLD, type InlineOptions } from "./inline.js";
export { fusedElementwiseOp } from "../../ops/fused.js";
export { fuse, type FusedAttrs, type FusedStep, type FusionOptions } from "./fusion.js";
export { planMemory, bytesPerElement, type MemoryPlan } from "./memory-plan.js";
export { bindConstantInputs } from "./bind-constants.js";
export { cloneGraph, cloneProgram, refineTypes, EffectAnalysis } from "./util.js";

export interface OptimizeOptions extends SimplifyOptions {
  /** Rounds of inline -> simplify -> fold -> cse -> prune -> ifConvert at most. Default 10. */
  maxIterations?: number;
  /** Run fusion at the end. Default true. */
  fuse?: boolean;
  /** Verify the graph after every pass (GraphVerificationError names the pass). Default true. */
  verify?: boolean;
  inline?: InlineOptions | false;
  fold?: ConstantFoldOptions;
  fusion?: FusionOptions;
  /**
   * Graph inputs known to be constant (input index -> tensor), e.g. a concrete function's
   * non-variable captures: they become constant nodes first. Never pass variables' values.
   */
  constantInputs?: ReadonlyMap<number, Tensor>;
  /** Called after each pass with its name and how many rewrites it made. */
  onPass?: (pass: string, changes: number, g: Graph) => void;
}

const OPTIMIZE_OPTIONS = optionKeys<OptimizeOptions>()("exactSignedZeros", "maxIterations", "fuse", "verify", "inline", "fold", "fusion", "constantInputs", "onPass");

type Pass = [name: string, run: (g: Graph, lib: FunctionLibrary) => number];

/** Runs the pass pipeline on `g` and `lib` (in place); returns `g`. */
export function optimize(g: Graph, lib: FunctionLibrary, options: OptimizeOptions = {}): Graph {
  checkOptions("optimize", options, OPTIMIZE_OPTIONS);
  if (options.inline !== false) checkOptions("optimize: inline", options.inline, optionKeys<InlineOptions>()("threshold", "maxGrowth"));
  checkOptions("optimize: fold", options.fold, optionKeys<ConstantFoldOptions>()("maxElements", "maxSinkElements"));
  checkOptions("optimize: fusion", options.fusion, optionKeys<FusionOptions>()("maxSteps"));
  const verify = options.verify ?? true;
  const check = (name: string) => {
    if (!verify) return;
    try {
      verifyGraph(g, lib);
    } catch (e) {
      if (e instanceof Error) e.message = `after pass ${name}: ${e.message}`;
      throw e;
    }
  };
  const report = (name: string, n: number) => {
    options.onPass?.(name, n, g);
    check(name);
  };
  if (options.constantInputs && options.constantInputs.size > 0) report("bindConstantInputs", bindConstantInputs(g, options.constantInputs));

  const passes: Pass[] = [];
  if (options.inline !== false) passes.push(["inline", (x, l) => runInline(x, l, options.inline || {})]);
  passes.push(["simplify", (x, l) => runSimplify(x, l, options)]);
  passes.push(["constantFold", (x, l) => runConstantFold(x, l, options.fold)]);
  passes.push(["cse", (x, l) => runCse(x, l)]);
  passes.push(["prune", (x, l) => runPrune(x, l)]);
  passes.push(["ifConvert", (x, l) => runIfConvert(x, l)]);

  const rounds = options.maxIterations ?? 10;
  for (let round = 0; round < rounds; round++) {
    let changes = 0;
    for (const [name, run] of passes) {
      const n = run(g, lib);
      changes += n;
      report(name, n);
    }
    if (changes === 0) break;
  }
  if (options.fuse ?? true) report("fusion", runFusion(g, lib, options.fusion));
  return g;
}

/**
 * Optimizes a deep copy of `g` and `lib`, leaving the originals untouched (they may be
 * shared with other concrete functions and replayed by tapes). Returns the copies.
 */
export function optimizeCopy(g: Graph, lib: FunctionLibrary, options: OptimizeOptions = {}): { graph: Graph; library: FunctionLibrary } {
  const copy = cloneProgram(g, lib);
  optimize(copy.graph, copy.library, options);
  return copy;
}
