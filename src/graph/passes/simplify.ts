/**
 * Algebraic simplification. Rewrites, each only where the result keeps exactly the dtype and
 * shape of the value it replaces (so `x * 1` where the 1 broadcasts x to a bigger shape, or
 * changes its dtype, stays):
 *
 *   x * 1, 1 * x, x / 1, x - 0, x + (-0), pow(x, 1)        -> x
 *   x + 0, 0 + x   (ints always; floats unless exactSignedZeros: it maps x = -0 to +0)
 *   neg(neg(x)), identity(x), cast(x, x.dtype)              -> x
 *   transpose(transpose(x, p), q)                           -> transpose(x, p∘q), or x
 *   a reshaping view of reshaping views of x (reshape, expandDims, squeeze: view "reshape")
 *                                                           -> reshape(x, shape), or x
 *   reshape(x, x.shape)                                      -> x
 *   cond(constant predicate, ...)                            -> the taken region, inlined
 *                                        (any structural op whose predicate selects a region)
 *
 * Constants are recognized from `fill` nodes and `constant` nodes whose elements are all
 * equal. Captured tensors are graph inputs, not constants (optimize's `constantInputs`
 * option turns known captures into constant nodes first). The replaced nodes are left for
 * prune to remove when nothing else uses them.
 */
import { isInteger, type DType } from "../../core/dtype.js";
import type { FunctionLibrary, Graph, Node, Value } from "../ir.js";
import { registryDef, structuralOf } from "../declarations.js";
import { reshapeOp } from "../../ops/shape.js";
import { uniformValueOf } from "./constant-fold.js";
import { allGraphs, isFullyKnown, makeNode, refineTypes, sameType, spliceGraph } from "./util.js";

export interface SimplifyOptions {
  /**
   * Keep `x + 0` for float x (it turns -0 into +0, so the rewrite is not bit-exact for
   * x = -0). Default false: folded, as XLA and Grappler do.
   */
  exactSignedZeros?: boolean;
}

/** Simplifies `g`, its regions and library functions. Mutates; returns g. */
export function simplify(g: Graph, lib: FunctionLibrary, options: SimplifyOptions = {}): Graph {
  runSimplify(g, lib, options);
  return g;
}

/** @internal Returns the number of rewrites. */
export function runSimplify(g: Graph, lib: FunctionLibrary | undefined, options: SimplifyOptions = {}): number {
  let changes = 0;
  // Inlining a cond adds region nodes to the host: visit the host again until stable.
  for (const graph of allGraphs(g, lib)) changes += simplifyGraph(graph, options);
  return changes;
}

function isConst(v: Value, c: number): boolean {
  const u = uniformValueOf(v);
  return u !== null && Object.is(u, c);
}
function isZero(v: Value): boolean {
  const u = uniformValueOf(v);
  return u === 0; // +0 or -0
}
function isNegZero(v: Value): boolean {
  return isConst(v, -0);
}
function isPosZero(v: Value): boolean {
  return isConst(v, 0);
}

function simplifyGraph(g: Graph, options: SimplifyOptions): number {
  let changes = 0;
  // Replaced values, applied to each node's inputs as it is reached (one sweep, not one per rewrite).
  const replace = new Map<Value, Value>();
  const resolve = (v: Value): Value => {
    let r = v;
    for (let next = replace.get(r); next !== undefined; next = replace.get(r)) r = next;
    return r;
  };
  for (let i = 0; i < g.nodes.length; i++) {
    const node = g.nodes[i]!;
    for (let k = 0; k < node.inputs.length; k++) node.inputs[k] = resolve(node.inputs[k]!);
    if (structuralOf(node)?.selectsRegion) {
      const taken = constantPredicate(node.inputs[0]!);
      if (taken !== null) {
        const region = node.regions[taken ? 0 : 1]!;
        const results = spliceGraph(g, i + 1, region, node.inputs.slice(structuralOf(node)!.regionOperandsFrom));
        g.nodes.splice(i, 1);
        node.outputs.forEach((v, k) => replace.set(v, results[k]!));
        changes++;
        i--; // visit the inlined nodes
      }
      continue;
    }
    if (node.outputs.length !== 1) continue;
    const out = node.outputs[0]!;
    const r = rewrite(node, out.type.dtype, options);
    if (r === null) continue;
    if (r instanceof Array) {
      // A replacement node (composed transpose / reshape), inserted in place of the old one.
      const [fresh] = r;
      g.nodes.splice(i, 1, fresh);
      replace.set(out, fresh.outputs[0]!);
      changes++;
      continue;
    }
    if (!sameType(r.type, out.type)) continue;
    replace.set(out, r);
    changes++;
  }
  if (replace.size > 0) {
    for (let k = 0; k < g.outputs.length; k++) g.outputs[k] = resolve(g.outputs[k]!);
    // An inlined cond's results may be more precise than its outputs were.
    refineTypes(g);
  }
  return changes;
}

/** The value of a bool scalar predicate produced by a constant, or null. */
function constantPredicate(v: Value): boolean | null {
  if (v.type.dtype !== "bool" || v.type.shape.length !== 0) return null;
  const u = uniformValueOf(v);
  return u === null ? null : u !== 0;
}

/** A value that replaces `node`'s output, a one-element array holding a new node, or null. */
function rewrite(node: Node, dtype: DType, options: SimplifyOptions): Value | [Node] | null {
  const [a, b] = node.inputs as [Value, Value | undefined];
  const sameAs = (x: Value) => sameType(x.type, node.outputs[0]!.type);
  switch (node.op) {
    case "identity":
      return a;
    case "cast":
      return a.type.dtype === node.attrs.dtype ? a : null;
    case "neg": {
      const p = a.producer;
      return p && p.op === "neg" ? p.inputs[0]! : null;
    }
    case "mul":
      if (isConst(b!, 1) && sameAs(a)) return a;
      if (isConst(a, 1) && sameAs(b!)) return b!;
      return null;
    case "div":
      return isConst(b!, 1) && sameAs(a) ? a : null;
    case "pow":
      return isConst(b!, 1) && sameAs(a) ? a : null;
    case "sub":
      // x - 0 is x for every x (-0 - 0 = -0); x - (-0) = x + 0 is not, for x = -0.
      if (isPosZero(b!) && sameAs(a)) return a;
      if (isNegZero(b!) && sameAs(a) && (isInteger(dtype) || !options.exactSignedZeros)) return a;
      return null;
    case "add": {
      const exactOk = (zero: Value) => isNegZero(zero) || isInteger(dtype) || dtype === "bool" || !options.exactSignedZeros;
      if (isZero(b!) && sameAs(a) && exactOk(b!)) return a;
      if (isZero(a) && sameAs(b!) && exactOk(a)) return b!;
      return null;
    }
    case "transpose": {
      const p = a.producer;
      if (!p || p.op !== "transpose") return null;
      const inner = p.attrs.perm as number[];
      const outer = node.attrs.perm as number[];
      const composed = outer.map((o) => inner[o]!);
      const x = p.inputs[0]!;
      if (composed.every((d, k) => d === k)) return x;
      return [makeNode("transpose", [x], { perm: composed }, [node.outputs[0]!.type], [], node.loc)];
    }
  }
  if (registryDef(node.op)?.view === "reshape") return composeReshapes(node);
  return null;
}

const isReshape = (v: Value): boolean => v.producer !== null && registryDef(v.producer.op)?.view === "reshape";

/** A chain of reshaping views (reshape, expandDims, squeeze) ending at `node`, as one reshape of its source, or its source. */
function composeReshapes(node: Node): Value | [Node] | null {
  const out = node.outputs[0]!.type;
  if (!isFullyKnown(out)) return null;
  const a = node.inputs[0]!;
  let x = a;
  while (isReshape(x)) x = x.producer!.inputs[0]!;
  if (sameType(x.type, out)) return x;
  if (x === a) return null; // nothing to compose
  if (!isFullyKnown(x.type)) return null;
  return [makeNode(reshapeOp.name, [x], { shape: out.shape.slice() }, [out], [], node.loc)];
}
