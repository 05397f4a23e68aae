/**
 * Object-based checkpoints (the TF Eager paper, section 4.3): `save(root, path)` writes every
 * Variable reachable from `root` through named edges, with the graph of those edges;
 * `restore(root, path)` walks the saved graph and the live objects together from the root and
 * fills each Variable it reaches by the same path. So two copies of a model restore alike, the
 * order in which variables were made does not matter, and an optimizer's slots follow the
 * variable they belong to wherever the model keeps it.
 *
 * The file is safetensors (Python's `safetensors.numpy.load_file` reads it): each Variable's
 * tensor is named by its first path from the root ("model/layers.0/kernel"), and the object
 * graph is JSON in the metadata key "stagecraft.object_graph". Writes are atomic: the bytes go
 * to a temporary file beside the target, which is fsynced and renamed over it, so a crash
 * leaves the old checkpoint or the new one, never a mix.
 *
 * Restore-on-create: a saved edge whose object does not exist yet (a layer that makes its
 * variables on its first call, an optimizer slot made on the first step) is parked on its owner
 * and filled when the owner creates it. `status.assertConsumed()` then says what is left.
 */
import { closeSync, fsyncSync, openSync, path as nodePath, readFileSync, renameSync, unlinkSync, writeSync } from "../core/platform/node.js";
import { Tensor } from "../core/tensor.js";
import { Variable } from "../core/variable.js";
import { isPlainObject } from "../core/objects.js";
import { initScope } from "../staging/host.js";
import { CheckpointError } from "./errors.js";
import { decodeSafetensors, encodeSafetensors } from "./safetensors.js";
import { Trackable } from "./trackable.js";

const GRAPH_KEY = "stagecraft.object_graph";
const FORMAT_KEY = "format";
const FORMAT = "stagecraft.checkpoint.v1";

/** One object of the saved graph. */
interface SavedNode {
  /** Named edges to other nodes. */
  children: { name: string; node: number }[];
  /** For a Variable: the name of its tensor in the file. */
  tensor?: string;
  /** For an optimizer: its slot variables, by the node of the variable each belongs to. */
  slots?: { original: number; name: string; node: number }[];
}

type Live = Trackable | Variable | object;

/**
 * The named edges out of an object: a Trackable's tracked children, or the entries of an array,
 * Map or plain object (the root may be one, e.g. `{ model, optimizer }`). Containers inside a
 * Trackable's children are flattened into dotted edge names ("layers.0").
 */
function edgesOf(obj: Live): [string, Trackable | Variable][] {
  const out: [string, Trackable | Variable][] = [];
  const expand = (v: unknown, name: string): void => {
    if (v instanceof Variable || v instanceof Trackable) out.push([name, v]);
    else if (Array.isArray(v)) v.forEach((x, i) => expand(x, `${name}.${i}`));
    else if (v instanceof Map) for (const [k, x] of v) expand(x, `${name}.${String(k)}`);
    else if (isPlainObject(v)) for (const [k, x] of Object.entries(v)) expand(x, `${name}.${k}`);
  };
  if (obj instanceof Variable) return out;
  const top: Iterable<readonly [string, unknown]> =
    obj instanceof Trackable ? obj.trackedChildren() : Array.isArray(obj) ? obj.map((x, i) => [String(i), x] as const) : obj instanceof Map ? [...obj].map(([k, x]) => [String(k), x] as const) : Object.entries(obj);
  for (const [k, v] of top) expand(v, k);
  return out;
}

function checkRoot(op: string, root: unknown): asserts root is Live {
  if (root === null || typeof root !== "object" || root instanceof Tensor && !(root instanceof Variable)) {
    throw new CheckpointError(`${op} takes a model, an optimizer, a Variable, or an object/array of them; got ${root === null ? "null" : typeof root}`);
  }
}

/** The object graph from `root` and the Variables' tensors by name. */
function collect(root: Live): { nodes: SavedNode[]; tensors: Map<string, Tensor> } {
  const ids = new Map<object, number>();
  const names: string[] = [];
  const nodes: SavedNode[] = [];
  const order: object[] = [];
  const add = (o: object, name: string): number => {
    let id = ids.get(o);
    if (id === undefined) {
      id = nodes.length;
      ids.set(o, id);
      nodes.push({ children: [] });
      names.push(name);
      order.push(o);
    }
    return id;
  };
  add(root, "");
  for (let i = 0; i < order.length; i++) {
    const o = order[i]!;
    for (const [edge, child] of edgesOf(o)) {
      nodes[i]!.children.push({ name: edge, node: add(child, names[i] ? `${names[i]}/${edge}` : edge) });
    }
  }
  // Slots hang off variables already in the graph (their own names are under the optimizer).
  for (let i = 0; i < order.length; i++) {
    const o = order[i]!;
    if (!(o instanceof Trackable)) continue;
    for (const [original, slot, v] of o.trackedSlots()) {
      const orig = ids.get(original);
      if (orig === undefined) continue; // a slot of a variable outside the checkpoint cannot be matched
      const node = add(v, `${names[i] ? `${names[i]}/` : ""}slots/${names[orig]}/${slot}`);
      (nodes[i]!.slots ??= []).push({ original: orig, name: slot, node });
    }
  }
  const tensors = new Map<string, Tensor>();
  order.forEach((o, i) => {
    if (o instanceof Variable) {
      const name = names[i] || "variable";
      nodes[i]!.tensor = name;
      tensors.set(name, initScope(() => o.peek()));
    }
  });
  return { nodes, tensors };
}

/** Writes `bytes` to `path` atomically: a temporary file beside it, fsync, rename, fsync of the folder. */
export function writeFileAtomic(path: string, bytes: Uint8Array): void {
  const dir = nodePath.dirname(nodePath.resolve(path));
  const tmp = nodePath.join(dir, `.${nodePath.basename(path)}.tmp-${process.pid}-${Date.now().toString(36)}${Math.random().toString(36).slice(2, 8)}`);
  const fd = openSync(tmp, "w", 0o644);
  try {
    // (in pieces of at most 1 MiB: a process killed meanwhile leaves only the temporary file)
    let at = 0;
    while (at < bytes.byteLength) at += writeSync(fd, bytes, at, Math.min(bytes.byteLength - at, 1 << 20));
    fsyncSync(fd);
  } catch (e) {
    closeSync(fd);
    unlinkSync(tmp);
    throw e;
  }
  closeSync(fd);
  try {
    renameSync(tmp, path);
  } catch (e) {
    unlinkSync(tmp);
    throw e;
  }
  try {
    const dfd = openSync(dir, "r");
    try {
      fsyncSync(dfd);
    } finally {
      closeSync(dfd);
    }
  } catch {
    // (some file systems cannot fsync a directory; the rename itself is still atomic)
  }
}

/** Saves every Variable reachable from `root` (a model, an optimizer, or an object of them) to `path`. */
export function save(root: unknown, path: string): void {
  checkRoot("save", root);
  const { nodes, tensors } = collect(root);
  const bytes = encodeSafetensors(tensors, { [FORMAT_KEY]: FORMAT, [GRAPH_KEY]: JSON.stringify({ nodes }) });
  writeFileAtomic(path, bytes);
}

/** What a restore matched; see assertConsumed. */
export class CheckpointStatus {
  /** Saved tensors restored into a live Variable. */
  readonly restored = new Set<string>();
  /** Saved tensors whose object does not exist yet (parked until it is created). */
  readonly parked = new Set<string>();
  constructor(
    readonly path: string,
    private readonly root: Live,
    private readonly savedTensors: readonly string[],
  ) {}

  /** Saved tensors no live object took (yet). */
  unrestored(): string[] {
    return this.savedTensors.filter((t) => !this.restored.has(t));
  }

  /** Live Variables reachable from the root that the checkpoint gave no value. */
  unmatchedVariables(): string[] {
    const filled = this.filled;
    return liveVariables(this.root).filter(([, v]) => !filled.has(v)).map(([p]) => p);
  }

  /** @internal Variables given a value. */
  readonly filled = new Set<Variable>();

  /**
   * Throws a CheckpointError unless every saved tensor was restored and every Variable now
   * reachable from the root got a value (TF's assert_consumed).
   */
  assertConsumed(): this {
    const left = this.unrestored();
    const unmatched = this.unmatchedVariables();
    if (left.length > 0 || unmatched.length > 0) {
      const parts: string[] = [];
      if (left.length > 0) parts.push(`${left.length} saved value(s) not restored: ${left.slice(0, 8).join(", ")}${left.length > 8 ? ", ..." : ""}`);
      if (unmatched.length > 0) parts.push(`${unmatched.length} variable(s) with no saved value: ${unmatched.slice(0, 8).join(", ")}${unmatched.length > 8 ? ", ..." : ""}`);
      throw new CheckpointError(`restore is incomplete: ${parts.join("; ")}`, { path: this.path, entry: left[0] ?? unmatched[0] });
    }
    return this;
  }

  /** Throws unless every Variable now reachable from the root got a value (saved extras allowed). */
  assertExistingObjectsMatched(): this {
    const unmatched = this.unmatchedVariables();
    if (unmatched.length > 0) throw new CheckpointError(`${unmatched.length} variable(s) with no saved value: ${unmatched.join(", ")}`, { path: this.path, entry: unmatched[0] });
    return this;
  }
}

/** Every Variable reachable from `root` (slots included) with a path. */
function liveVariables(root: Live): [string, Variable][] {
  const seen = new Set<object>([root]);
  const queue: [string, object][] = [["", root]];
  const out: [string, Variable][] = [];
  for (let i = 0; i < queue.length; i++) {
    const [p, o] = queue[i]!;
    if (o instanceof Variable) out.push([p || "(root)", o]);
    for (const [edge, child] of edgesOf(o)) if (!seen.has(child)) {
      seen.add(child);
      queue.push([p ? `${p}/${edge}` : edge, child]);
    }
    if (o instanceof Trackable) for (const [, slot, v] of o.trackedSlots()) if (!seen.has(v)) {
      seen.add(v);
      queue.push([`${p ? `${p}/` : ""}slots/${v.name}/${slot}`, v]);
    }
  }
  return out;
}

/** Reads a checkpoint's object graph and tensors (validated). */
function readCheckpoint(path: string): { nodes: SavedNode[]; tensors: Map<string, Tensor> } {
  let bytes: Uint8Array;
  try {
    bytes = readFileSync(path);
  } catch (e) {
    throw new CheckpointError(`cannot read the checkpoint: ${(e as Error).message}`, { path });
  }
  const file = decodeSafetensors(bytes, path);
  const graphText = file.metadata[GRAPH_KEY];
  if (graphText === undefined) throw new CheckpointError(`is a safetensors file without a Stagecraft object graph (metadata "${GRAPH_KEY}"); read its tensors with sc.io.readSafetensors`, { path });
  let graph: { nodes?: unknown };
  try {
    graph = JSON.parse(graphText) as { nodes?: unknown };
  } catch (e) {
    throw new CheckpointError(`the object graph is not valid JSON (corrupted file): ${(e as Error).message}`, { path });
  }
  const nodes = graph.nodes;
  if (!Array.isArray(nodes) || nodes.length === 0) throw new CheckpointError(`the object graph has no nodes (corrupted file)`, { path });
  const valid = (id: unknown) => Number.isInteger(id) && (id as number) >= 0 && (id as number) < nodes.length;
  for (const n of nodes as SavedNode[]) {
    const ok =
      n && Array.isArray(n.children) && n.children.every((c) => typeof c?.name === "string" && valid(c.node)) &&
      (n.tensor === undefined || typeof n.tensor === "string") &&
      (n.slots === undefined || (Array.isArray(n.slots) && n.slots.every((s) => valid(s?.original) && valid(s?.node) && typeof s?.name === "string")));
    if (!ok) throw new CheckpointError(`the object graph is malformed (corrupted file)`, { path });
  }
  const tensors = new Map<string, Tensor>();
  for (const n of nodes as SavedNode[]) {
    if (n.tensor === undefined) continue;
    const e = file.tensors.get(n.tensor);
    if (!e) throw new CheckpointError(`the object graph names a tensor the file does not hold (corrupted file)`, { path, entry: n.tensor });
    tensors.set(n.tensor, e.tensor);
  }
  return { nodes: nodes as SavedNode[], tensors };
}

/**
 * Restores `root` from `path`: every saved Variable reachable by the same path from the root is
 * assigned its saved value (shape and dtype must match: a CheckpointError names the entry).
 * Objects not made yet are filled when they are made. Returns the status (assertConsumed()).
 */
export function restore(root: unknown, path: string): CheckpointStatus {
  checkRoot("restore", root);
  const { nodes, tensors } = readCheckpoint(path);
  const status = new CheckpointStatus(path, root, [...tensors.keys()]);
  const liveOf = new Map<number, object>();
  /** Slots waiting for the variable they belong to: saved original node -> [optimizer, slot, saved slot node]. */
  const waitingSlots = new Map<number, [Trackable, string, number][]>();

  const placeSlot = (optimizer: Trackable, original: Variable, slot: string, node: number): void => {
    for (const [orig, name, v] of optimizer.trackedSlots()) {
      if (orig === original && name === slot) return match(node, v);
    }
    markParked(node);
    optimizer.deferSlot(original, slot, (v) => match(node, v));
  };

  const markParked = (id: number): void => {
    const visit = (k: number, seen: Set<number>) => {
      if (seen.has(k)) return;
      seen.add(k);
      const t = nodes[k]!.tensor;
      if (t !== undefined && !status.restored.has(t)) status.parked.add(t);
      for (const c of nodes[k]!.children) visit(c.node, seen);
    };
    visit(id, new Set());
  };

  function match(id: number, live: unknown): void {
    if (liveOf.has(id)) return;
    const saved = nodes[id]!;
    liveOf.set(id, live as object);
    if (saved.tensor !== undefined) {
      if (!(live instanceof Variable)) throw new CheckpointError(`is a saved variable, but the object at its path is ${live instanceof Trackable ? live.constructor.name : typeof live}`, { path, entry: saved.tensor });
      const value = tensors.get(saved.tensor)!;
      if (value.dtype !== live.dtype) throw new CheckpointError(`has dtype ${value.dtype} but variable ${live.name} has dtype ${live.dtype}`, { path, entry: saved.tensor });
      if (value.shape.length !== live.shape.length || value.shape.some((d, i) => d !== live.shape[i])) {
        throw new CheckpointError(`has shape [${value.shape.join(", ")}] but variable ${live.name} has shape [${live.shape.join(", ")}]`, { path, entry: saved.tensor });
      }
      initScope(() => live.assign(value));
      status.restored.add(saved.tensor);
      status.parked.delete(saved.tensor);
      status.filled.add(live);
      for (const [optimizer, slot, node] of waitingSlots.get(id) ?? []) placeSlot(optimizer, live, slot, node);
      waitingSlots.delete(id);
    }
    const edges = new Map(edgesOf(live as object));
    for (const c of saved.children) {
      const child = edges.get(c.name);
      if (child !== undefined) match(c.node, child);
      else if (live instanceof Trackable) {
        markParked(c.node);
        live.deferChild(c.name, (made) => match(c.node, made));
      }
    }
    for (const s of saved.slots ?? []) {
      if (!(live instanceof Trackable)) break;
      const original = liveOf.get(s.original);
      if (original instanceof Variable) placeSlot(live, original, s.name, s.node);
      else {
        const list = waitingSlots.get(s.original) ?? [];
        list.push([live, s.name, s.node]);
        waitingSlots.set(s.original, list);
        markParked(s.node);
      }
    }
  }

  match(0, root);
  return status;
}

/** A checkpoint of named objects: `new Checkpoint({ model, optimizer }).save(path)` / `.restore(path)`. */
export class Checkpoint extends Trackable {
  constructor(readonly objects: Record<string, unknown>) {
    super();
    if (!isPlainObject(objects)) throw new CheckpointError(`Checkpoint takes an object of named objects ({ model, optimizer })`);
  }
  override trackedChildren(): Iterable<readonly [string, unknown]> {
    return Object.entries(this.objects);
  }
  save(path: string): void {
    save(this, path);
  }
  restore(path: string): CheckpointStatus {
    return restore(this, path);
  }
}
