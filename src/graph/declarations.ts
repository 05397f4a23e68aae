/**
 * What the op declarations (ops/registry.ts) say about IR nodes: the graph layer (passes, the
 * verifier, the printer) asks these instead of naming ops.
 */
import "../ops/index.js";
import { lookupOp, type AnyOpDef, type OpDef, type StructuralForm } from "../ops/registry.js";
import type { Node } from "./ir.js";

/** The declaration of a node's op (registry or structural), or null for an unknown op. */
export function declarationOf(node: Node): AnyOpDef | null {
  return lookupOp(node.op);
}

/** The declaration of a registry op (one with kernels), or null for structural / unknown ops. */
export function registryDef(op: string): OpDef | null {
  const d = lookupOp(op);
  return d && !d.structural ? d : null;
}

/** The structural facts of a node's op, or null when it is not a structural op. */
export function structuralOf(node: Node): StructuralForm<any> | null {
  return lookupOp(node.op)?.structural ?? null;
}

/** The library function a node calls (a structural op with a callee attribute naming one), or null. */
export function calleeOf(node: Node): string | null {
  const key = structuralOf(node)?.calleeAttr;
  if (key === undefined) return null;
  const name = node.attrs[key];
  return typeof name === "string" ? name : null;
}

/** Whether a node calls a library function (whatever its attributes say). */
export function isCall(node: Node): boolean {
  return structuralOf(node)?.calleeAttr !== undefined;
}

/** The name of region `i` of a node (cond: then, else; while: cond, body). */
export function regionLabel(node: Node, i: number): string {
  return structuralOf(node)?.regions[i] ?? `region${i}`;
}
