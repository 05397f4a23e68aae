/**
 * The live object graph a checkpoint saves and restores into: every Trackable and Variable
 * reachable from a root through named edges. Save and restore walk it with the same code, so the
 * Variables a restore expects are exactly the ones a save of the same objects writes.
 *
 * Names must be unambiguous: containers are flattened into dotted edge names ("layers.0") and
 * paths are joined with "/", so an attribute "a.b" beside `a: { b }`, an attribute "x/y" beside
 * a child `x` holding `y`, or Map keys 1 and "1" would give two objects one name (one silently
 * dropped at save, both restored from the other). Those are refused with a CheckpointError that
 * names both, rather than escaped, so the names in a file stay the plain paths Python users see.
 *
 * Every walk is iterative (an explicit stack or queue): a chain of tens of thousands of objects
 * is walked, not a call-stack overflow.
 */
import { Variable } from "../core/variable.js";
import { isPlainObject } from "../core/objects.js";
import { CheckpointError } from "./errors.js";
import { Trackable } from "./trackable.js";

export type GraphObject = Trackable | Variable;

/** An edge out of an object: its name in the checkpoint, the object, and how JS code reaches it (".layers[0]"). */
export interface Edge {
  name: string;
  child: GraphObject;
  access: string;
}

const IDENT = /^[A-Za-z_$][\w$]*$/;
const propAccess = (k: string) => (IDENT.test(k) ? `.${k}` : `[${JSON.stringify(k)}]`);
const mapAccess = (k: unknown) => `.get(${typeof k === "string" ? JSON.stringify(k) : typeof k === "number" || typeof k === "bigint" || typeof k === "boolean" ? String(k) : `<${typeof k}>`})`;

/**
 * The named edges out of an object: a Trackable's tracked children, or the entries of an array,
 * Map or plain object (the root may be one, e.g. `{ model, optimizer }`). Containers are
 * flattened into dotted edge names ("layers.0"). Two edges of one name are a CheckpointError
 * naming both (`where` names the object), as is a container that contains itself.
 */
export function edgesOf(obj: object, where: () => string): Edge[] {
  const out: Edge[] = [];
  if (obj instanceof Variable) return out;
  const top: [string, unknown, string][] = [];
  if (obj instanceof Trackable) for (const [k, v] of obj.trackedChildren()) top.push([k, v, propAccess(k)]);
  else if (Array.isArray(obj)) obj.forEach((v, i) => top.push([String(i), v, `[${i}]`]));
  else if (obj instanceof Map) for (const [k, v] of obj) top.push([String(k), v, mapAccess(k)]);
  else for (const [k, v] of Object.entries(obj)) top.push([k, v, propAccess(k)]);
  if (top.length === 1 && (top[0]![1] instanceof Variable || top[0]![1] instanceof Trackable)) return [{ name: top[0]![0], child: top[0]![1], access: top[0]![2] }];

  // Depth-first in entry order, with an explicit stack; `open` holds the containers being expanded.
  type Frame = { entries: [string, unknown, string][]; at: number; container: object | null };
  const stack: Frame[] = [{ entries: top, at: 0, container: null }];
  const open = new Set<object>();
  while (stack.length > 0) {
    const frame = stack[stack.length - 1]!;
    if (frame.at === frame.entries.length) {
      stack.pop();
      if (frame.container) open.delete(frame.container);
      continue;
    }
    const [name, v, access] = frame.entries[frame.at++]!;
    if (v instanceof Variable || v instanceof Trackable) out.push({ name, child: v, access });
    else if (Array.isArray(v) || v instanceof Map || isPlainObject(v)) {
      if (open.has(v)) throw new CheckpointError(`${where()}${access} contains itself (a cyclic array, Map or object cannot be named in a checkpoint)`);
      open.add(v);
      const entries: [string, unknown, string][] = [];
      if (Array.isArray(v)) v.forEach((x, i) => entries.push([`${name}.${i}`, x, `${access}[${i}]`]));
      else if (v instanceof Map) for (const [k, x] of v) entries.push([`${name}.${String(k)}`, x, `${access}${mapAccess(k)}`]);
      else for (const [k, x] of Object.entries(v)) entries.push([`${name}.${k}`, x, `${access}${propAccess(k)}`]);
      stack.push({ entries, at: 0, container: v });
    }
  }
  if (out.length < 2) return out;
  const seen = new Map<string, string>();
  for (const e of out) {
    const other = seen.get(e.name);
    if (other !== undefined) {
      throw new CheckpointError(
        `${where()}${other} and ${where()}${e.access} would both be named ${JSON.stringify(e.name)} in a checkpoint; rename one (checkpoint names must be unambiguous)`,
        { entry: e.name },
      );
    }
    seen.set(e.name, e.access);
  }
  return out;
}

/** The live graph from a root, breadth-first: node 0 is the root. */
export interface LiveGraph {
  objects: object[];
  /** Each object's first path from the root ("model/layers.0/kernel"); a Variable's tensor name. */
  names: string[];
  /** Named edges to other nodes. */
  children: { name: string; node: number }[][];
  /** An optimizer's slot variables, by the node of the variable each belongs to. */
  slots: ({ original: number; name: string; node: number }[] | undefined)[];
}

/** The root's name in messages. */
const ROOT = "(root)";

/** How JS code reaches node `id` from the root ("(root).model.layers[0].kernel"). */
function accessPath(parent: number[], access: string[], id: number): string {
  const parts: string[] = [];
  for (let k = id; k > 0; k = parent[k]!) parts.push(access[k]!);
  return ROOT + parts.reverse().join("");
}

/**
 * Walks the live graph from `root`. With `tensorNames`, also refuses two Variables whose paths
 * are one string (a CheckpointError naming both).
 */
export function walkLive(root: object, tensorNames = true): LiveGraph {
  const ids = new Map<object, number>();
  const g: LiveGraph = { objects: [], names: [], children: [], slots: [] };
  const parent: number[] = [];
  const access: string[] = [];
  const add = (o: object, name: string, from: number, how: string): number => {
    let id = ids.get(o);
    if (id === undefined) {
      id = g.objects.length;
      ids.set(o, id);
      g.objects.push(o);
      g.names.push(name);
      g.children.push([]);
      g.slots.push(undefined);
      parent.push(from);
      access.push(how);
    }
    return id;
  };
  add(root, "", -1, "");
  for (let i = 0; i < g.objects.length; i++) {
    const prefix = g.names[i] ? `${g.names[i]}/` : "";
    for (const e of edgesOf(g.objects[i]!, () => accessPath(parent, access, i))) {
      g.children[i]!.push({ name: e.name, node: add(e.child, prefix + e.name, i, e.access) });
    }
  }
  // Slots hang off variables already in the graph (their own names are under the optimizer).
  const reached = g.objects.length;
  for (let i = 0; i < reached; i++) {
    const o = g.objects[i]!;
    if (!(o instanceof Trackable)) continue;
    for (const [original, slot, v] of o.trackedSlots()) {
      const orig = ids.get(original);
      if (orig === undefined || orig >= reached) continue; // a slot of a variable outside the checkpoint cannot be matched
      const node = add(v, `${g.names[i] ? `${g.names[i]}/` : ""}slots/${g.names[orig]}/${slot}`, i, ` slot ${JSON.stringify(slot)} of ${accessPath(parent, access, orig)}`);
      (g.slots[i] ??= []).push({ original: orig, name: slot, node });
    }
  }
  if (tensorNames) {
    const byName = new Map<string, number>();
    g.objects.forEach((o, i) => {
      if (!(o instanceof Variable)) return;
      const name = tensorName(g, i);
      const other = byName.get(name);
      if (other !== undefined) {
        throw new CheckpointError(`${accessPath(parent, access, other)} and ${accessPath(parent, access, i)} would both be saved as ${JSON.stringify(name)}; rename one (checkpoint names must be unambiguous)`, { entry: name });
      }
      byName.set(name, i);
    });
  }
  return g;
}

/** The tensor name of a Variable node (a Variable saved as the root itself is "variable"). */
export function tensorName(g: LiveGraph, id: number): string {
  return g.names[id] || "variable";
}
