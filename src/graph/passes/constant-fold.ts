/**
 * Constant folding: a registry node whose inputs are all constants is evaluated now, with
 * the registry kernel, and replaced by a `constant` node (or a `fill` when every element is
 * the same, which stays small whatever the shape). Constants are: `constant` and `fill`
 * nodes, and any other registry op with no inputs that is neither random nor stateful
 * (`range`, `eye`, ...). Those sources are not rewritten themselves, only what consumes them.
 *
 * Never folded: stateful ops, random ops (family "random"), structural ops, nodes whose
 * kernel throws (the error is left to happen at run time, where it did before), and tensors
 * above `maxElements` (inputs or outputs), so graphs stay small.
 *
 * Small constants that a cond or while node passes to its regions (as operands its declaration
 * lets prune drop) are also copied into the regions (where folding and simplification can see
 * them); prune then drops the operand.
 */
import { roundToFloat16 } from "../../core/float16.js";
import { allocStorage } from "../../core/dtype.js";
import type { Tensor } from "../../core/tensor.js";
import type { FunctionLibrary, Graph, Node, Value } from "../ir.js";
import { structuralOf } from "../declarations.js";
import { constantAttrsOf, constantOp } from "../../ops/constant.js";
import { fillOp } from "../../ops/fill.js";
import { allGraphs, evaluateNode, isFullyKnown, isPureRegistryNode, makeNode, refineTypes, replaceAllUses, sizeOfType } from "./util.js";

export interface ConstantFoldOptions {
  /** Largest tensor (elements) folding evaluates or writes into a graph. Default 1e5. */
  maxElements?: number;
  /** Largest constant copied into cond/while regions. Default 64. */
  maxSinkElements?: number;
}

export const DEFAULT_FOLD_LIMIT = 100_000;

/** A node with no inputs that computes a fixed tensor (fill, constant, range, eye, ...). */
export function isConstantSource(node: Node): boolean {
  if (node.inputs.length !== 0 || node.outputs.length === 0) return false;
  const def = isPureRegistryNode(node);
  return def !== null && def.family !== "random" && node.outputs.every((v) => isFullyKnown(v.type));
}

/**
 * The value every element of `v` has, when `v` is produced by a `fill` node or a `constant`
 * node whose elements are all equal; null otherwise. The value is what the storage of v's
 * dtype holds (so -0 stays -0 only in float dtypes, and 0.1 in float32 is fround(0.1); float16
 * values are rounded to float16 as its kernels' outputs are).
 */
export function uniformValueOf(v: Value): number | null {
  const p = v.producer;
  if (!p) return null;
  const dtype = v.type.dtype;
  const cell = allocStorage(dtype, 1);
  if (p.op === fillOp.name) {
    const value = p.attrs.value;
    if (typeof value !== "number") return null;
    // fill stores nothing for a zero value (so -0 becomes +0).
    cell[0] = dtype === "bool" ? (value ? 1 : 0) : value === 0 ? 0 : value;
    return dtype === "float16" ? roundToFloat16(cell[0]!) : cell[0]!;
  }
  if (p.op === constantOp.name) {
    const values = p.attrs.values;
    if (!Array.isArray(values) || values.length === 0) return null;
    const first = values[0];
    if (typeof first !== "number") return null;
    for (let i = 1; i < values.length; i++) if (!Object.is(values[i], first)) return null;
    cell[0] = dtype === "bool" ? (first ? 1 : 0) : first;
    return dtype === "float16" ? roundToFloat16(cell[0]!) : cell[0]!;
  }
  return null;
}

/** Folds constants in `g`, its regions and every library function. Mutates; returns g. */
export function constantFold(g: Graph, lib: FunctionLibrary, options: ConstantFoldOptions = {}): Graph {
  runConstantFold(g, lib, options);
  return g;
}

/** @internal Returns the number of rewrites. */
export function runConstantFold(g: Graph, lib: FunctionLibrary | undefined, options: ConstantFoldOptions = {}): number {
  const limit = options.maxElements ?? DEFAULT_FOLD_LIMIT;
  const sinkLimit = options.maxSinkElements ?? 64;
  let changes = 0;
  for (const graph of allGraphs(g, lib)) changes += foldGraph(graph, limit) + sinkIntoRegions(graph, sinkLimit);
  return changes;
}

/** A tensor of the replacement node for a folded output: a fill when uniform, else constant. */
function replacementFor(t: Tensor): Node {
  const data = t.concrete("fold the value of") as ArrayLike<number>;
  let uniform = data.length > 0 && !Object.is(data[0], -0);
  for (let i = 1; uniform && i < data.length; i++) if (!Object.is(data[i], data[0])) uniform = false;
  const type = { dtype: t.dtype, shape: t.shape.slice() };
  if (uniform) return makeNode(fillOp.name, [], { shape: t.shape.slice(), dtype: t.dtype, value: data[0]! }, [type]);
  return makeNode(constantOp.name, [], { ...constantAttrsOf(t) }, [type]);
}

function foldGraph(g: Graph, limit: number): number {
  /** Values known to be constant, with their producer (evaluated lazily). */
  const known = new Map<Value, Tensor | null>();
  const sourceOf = new Map<Value, Node>();
  let changes = 0;

  const valueOf = (v: Value): Tensor | null => {
    const t = known.get(v);
    if (t !== null && t !== undefined) return t;
    const src = sourceOf.get(v);
    if (!src) return null;
    const def = isPureRegistryNode(src)!;
    let outs: Tensor[];
    try {
      outs = evaluateNode(def, [], src.attrs);
    } catch {
      return null;
    }
    src.outputs.forEach((o, i) => known.set(o, outs[i]!));
    return known.get(v) ?? null;
  };

  for (let i = 0; i < g.nodes.length; i++) {
    const node = g.nodes[i]!;
    if (isConstantSource(node)) {
      if (node.outputs.every((v) => sizeOfType(v.type) <= limit)) {
        for (const v of node.outputs) {
          known.set(v, null);
          sourceOf.set(v, node);
        }
      }
      continue;
    }
    if (node.inputs.length === 0 || node.outputs.length === 0) continue;
    const def = isPureRegistryNode(node);
    if (!def || def.family === "random") continue;
    if (!node.inputs.every((v) => known.has(v))) continue;
    if (!node.outputs.every((v) => isFullyKnown(v.type) && sizeOfType(v.type) <= limit)) continue;
    const args: Tensor[] = [];
    for (const v of node.inputs) {
      const t = valueOf(v);
      if (!t) break;
      args.push(t);
    }
    if (args.length !== node.inputs.length) continue;
    let outs: Tensor[];
    try {
      outs = evaluateNode(def, args, node.attrs);
    } catch {
      continue;
    }
    const replacements = outs.map(replacementFor);
    g.nodes.splice(i, 1, ...replacements);
    node.outputs.forEach((v, k) => {
      const r = replacements[k]!.outputs[0]!;
      replaceAllUses(g, v, r);
      known.set(r, outs[k]!);
    });
    i += replacements.length - 1;
    changes++;
  }
  return changes;
}

/** Copies small constant operands of structural nodes into the regions that use them. */
function sinkIntoRegions(g: Graph, limit: number): number {
  let changes = 0;
  for (const node of g.nodes) {
    const s = structuralOf(node);
    if (!s?.droppableFrom || node.regions.length === 0) continue;
    const first = s.droppableFrom(node.attrs);
    const offset = s.regionOperandsFrom;
    for (let k = first; k < node.inputs.length; k++) {
      const operand = node.inputs[k]!;
      const p = operand.producer;
      if (!p || !isConstantSource(p) || p.outputs.length !== 1 || sizeOfType(operand.type) > limit) continue;
      for (const r of node.regions) {
        const input = r.inputs[k - offset];
        if (!input) continue;
        const used = r.outputs.includes(input) || r.nodes.some((n) => n.inputs.includes(input));
        if (!used) continue;
        const copy = makeNode(p.op, [], p.attrs, [operand.type], [], p.loc);
        r.nodes.unshift(copy);
        replaceAllUses(r, input, copy.outputs[0]!);
        refineTypes(r);
        changes++;
      }
    }
  }
  return changes;
}
