/**
 * A checkpoint file's format: safetensors whose metadata holds the object graph as JSON
 * ("stagecraft.object_graph": { nodes: [{ children: [{ name, node }], tensor?, slots? }] }).
 * Reading validates the whole graph (shape of every node, edge targets, names unique per node,
 * one node per tensor) and decodes every tensor before a restore assigns anything.
 */
import { readFileSync } from "../core/platform/node.js";
import type { Tensor } from "../core/tensor.js";
import { CheckpointError } from "./errors.js";
import { decodeSafetensors } from "./safetensors.js";

export const GRAPH_KEY = "stagecraft.object_graph";
export const FORMAT_KEY = "format";
export const FORMAT = "stagecraft.checkpoint.v1";

/** One object of the saved graph. */
export interface SavedNode {
  /** Named edges to other nodes. */
  children: { name: string; node: number }[];
  /** For a Variable: the name of its tensor in the file. */
  tensor?: string;
  /** For an optimizer: its slot variables, by the node of the variable each belongs to. */
  slots?: { original: number; name: string; node: number }[];
}

/** Reads a checkpoint's object graph and tensors (validated). */
export function readCheckpoint(path: string): { nodes: SavedNode[]; tensors: Map<string, Tensor> } {
  let bytes: Uint8Array;
  try {
    bytes = readFileSync(path);
  } catch (e) {
    throw new CheckpointError(`cannot read the checkpoint: ${(e as Error).message}`, { path });
  }
  const file = decodeSafetensors(bytes, path);
  const graphText = file.metadata[GRAPH_KEY];
  if (graphText === undefined) throw new CheckpointError(`is a safetensors file without a Stagecraft object graph (metadata "${GRAPH_KEY}"); read its tensors with sc.io.readSafetensors`, { path });
  let graph: unknown;
  try {
    graph = JSON.parse(graphText);
  } catch (e) {
    throw new CheckpointError(`the object graph is not valid JSON (corrupted file): ${(e as Error).message}`, { path });
  }
  if (graph === null || typeof graph !== "object" || Array.isArray(graph)) throw new CheckpointError(`the object graph is not a JSON object (corrupted file)`, { path });
  const nodes = (graph as { nodes?: unknown }).nodes;
  if (!Array.isArray(nodes) || nodes.length === 0) throw new CheckpointError(`the object graph has no nodes (corrupted file)`, { path });
  const valid = (id: unknown) => Number.isInteger(id) && (id as number) >= 0 && (id as number) < nodes.length;
  const byTensor = new Map<string, number>();
  nodes.forEach((n: SavedNode, i) => {
    const ok =
      n !== null && typeof n === "object" && Array.isArray(n.children) && n.children.every((c) => c !== null && typeof c === "object" && typeof c.name === "string" && valid(c.node)) &&
      (n.tensor === undefined || typeof n.tensor === "string") &&
      (n.slots === undefined || (Array.isArray(n.slots) && n.slots.every((s) => s !== null && typeof s === "object" && valid(s.original) && valid(s.node) && typeof s.name === "string")));
    if (!ok) throw new CheckpointError(`the object graph is malformed at node ${i} (corrupted file)`, { path });
    const names = new Set<string>();
    for (const c of n.children) {
      if (names.has(c.name)) throw new CheckpointError(`node ${i} of the object graph has two edges named ${JSON.stringify(c.name)}, so neither can be matched (a damaged file, or one written before ambiguous names were refused)`, { path, entry: c.name });
      names.add(c.name);
    }
    if (n.tensor !== undefined) {
      if (byTensor.has(n.tensor)) throw new CheckpointError(`nodes ${byTensor.get(n.tensor)} and ${i} of the object graph both name this tensor, so they cannot be told apart (a damaged file, or one written before ambiguous names were refused)`, { path, entry: n.tensor });
      byTensor.set(n.tensor, i);
    }
  });
  const tensors = new Map<string, Tensor>();
  for (const name of byTensor.keys()) {
    const e = file.tensors.get(name);
    if (!e) throw new CheckpointError(`the object graph names a tensor the file does not hold (corrupted file)`, { path, entry: name });
    tensors.set(name, e.tensor);
  }
  return { nodes: nodes as SavedNode[], tensors };
}
