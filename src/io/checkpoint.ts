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
 * graph is JSON in the metadata key "stagecraft.object_graph" (checkpoint-file.ts). Writes are
 * atomic (atomic-write.ts): a crash leaves the old checkpoint or the new one, never a mix.
 *
 * A restore is strict (every saved value finds its Variable and every Variable its value) and
 * atomic (names, shapes and dtypes are all checked before anything is assigned) by default.
 * Restore-on-create, with `{ deferred: true }`: a saved edge whose object does not exist yet (a
 * layer that makes its variables on its first call, an optimizer slot made on the first step) is
 * parked on its owner and filled when the owner creates it; `status.assertConsumed()` then says
 * what is left.
 */
import { Tensor } from "../core/tensor.js";
import { Variable } from "../core/variable.js";
import { isPlainObject } from "../core/objects.js";
import { checkOptions, optionKeys } from "../core/options.js";
import { ValueError } from "../core/errors.js";
import { initScope } from "../staging/host.js";
import { checkPath, writeFileAtomic } from "./atomic-write.js";
import { CheckpointError } from "./errors.js";
import { edgesOf, tensorName, walkLive } from "./object-graph.js";
import { readCheckpoint, type SavedNode, GRAPH_KEY, FORMAT_KEY, FORMAT } from "./checkpoint-file.js";
import { encodeSafetensors } from "./safetensors.js";
import { Trackable } from "./trackable.js";

export { writeFileAtomic } from "./atomic-write.js";

type Live = object;

function checkRoot(op: string, root: unknown): asserts root is Live {
  if (root === null || typeof root !== "object" || root instanceof Tensor && !(root instanceof Variable)) {
    throw new CheckpointError(`${op} takes a model, an optimizer, a Variable, or an object/array of them; got ${root === null ? "null" : typeof root}`);
  }
}

/** Saves every Variable reachable from `root` (a model, an optimizer, or an object of them) to `path`. */
export function save(root: unknown, path: string): void {
  checkRoot("save", root);
  checkPath("save", path);
  const g = walkLive(root);
  const nodes: SavedNode[] = g.objects.map((_, i) => ({ children: g.children[i]! }));
  const tensors = new Map<string, Tensor>();
  g.objects.forEach((o, i) => {
    const slots = g.slots[i];
    if (slots) nodes[i]!.slots = slots;
    if (o instanceof Variable) {
      const name = tensorName(g, i);
      nodes[i]!.tensor = name;
      tensors.set(name, initScope(() => o.peek()));
    }
  });
  const bytes = encodeSafetensors(tensors, { [FORMAT_KEY]: FORMAT, [GRAPH_KEY]: JSON.stringify({ nodes }) });
  writeFileAtomic(path, bytes, "save");
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

/** Every Variable reachable from `root` (slots included) with its path. */
function liveVariables(root: Live): [string, Variable][] {
  const g = walkLive(root, false);
  const out: [string, Variable][] = [];
  g.objects.forEach((o, i) => {
    if (o instanceof Variable) out.push([g.names[i] || "(root)", o]);
  });
  return out;
}

export interface RestoreOptions {
  /**
   * Whether every saved value must find its Variable and every Variable its saved value (true,
   * the default, like PyTorch's `load_state_dict`): otherwise a CheckpointError lists what is
   * missing and unexpected, and nothing is assigned. With false, what matches is restored and
   * the status tells the rest.
   */
  strict?: boolean;
  /**
   * Whether saved values of objects not made yet (a layer that makes its variables on its first
   * call, an optimizer's slots made on its first step) wait on their owner and fill those
   * objects when they are made (false by default: in strict mode they are an error).
   */
  deferred?: boolean;
}
const RESTORE_OPTIONS = optionKeys<RestoreOptions>()("strict", "deferred");

function flag(name: string, value: unknown, otherwise: boolean): boolean {
  if (value === undefined) return otherwise;
  if (typeof value !== "boolean") throw new ValueError(`option ${name} must be a boolean, got ${typeof value}`, "restore");
  return value;
}

/** A saved edge with no live object now, which its owner may make later. */
type Deferral =
  | { kind: "child"; owner: Trackable; name: string; node: number }
  | { kind: "slot"; optimizer: Trackable; original: Variable; slot: string; node: number }
  | { kind: "waiting"; optimizer: Trackable; original: number; slot: string; node: number };

/** What a restore step will do: nothing is assigned until all of it has been checked. */
interface Plan {
  matched: Map<number, object>;
  assigns: { variable: Variable; value: Tensor; entry: string }[];
  deferrals: Deferral[];
  /** Saved tensors under the deferred edges (filled later, if deferring). */
  deferrable: Set<string>;
  /** Nodes whose waiting slots this plan placed. */
  slotsPlaced: number[];
  /** Optional children the saved object lacks, set to their defaults (Trackable.optionalChildren). */
  defaults: { variable: Variable; value: Tensor }[];
}

const list = (names: string[]) => `${names.slice(0, 8).join(", ")}${names.length > 8 ? `, ... (${names.length - 8} more)` : ""}`;

/** One restore: the saved graph, what of it is matched, and what waits for objects not made yet. */
class RestoreSession {
  readonly liveOf = new Map<number, object>();
  /** Slots waiting for the variable they belong to: saved original node -> [optimizer, slot, saved slot node]. */
  readonly waitingSlots = new Map<number, [Trackable, string, number][]>();
  /** Saved nodes already marked parked (so each subtree is walked once, however many edges reach it). */
  private readonly parkVisited = new Set<number>();

  constructor(
    readonly path: string,
    readonly nodes: SavedNode[],
    readonly tensors: Map<string, Tensor>,
    readonly status: CheckpointStatus,
  ) {}

  /** Matches saved nodes with live objects from `start`, checking every pair (iteratively: deep graphs are fine). */
  plan(start: [number, object][]): Plan {
    const { nodes, tensors, path, liveOf } = this;
    const matched = new Map<number, object>();
    const plan: Plan = { matched, assigns: [], deferrals: [], deferrable: new Set(), slotsPlaced: [], defaults: [] };
    const queue: [number, object][] = [];
    const slotRequests: [Trackable, number, string, number][] = [];
    const visit = (id: number, obj: object) => {
      if (liveOf.has(id) || matched.has(id)) return;
      matched.set(id, obj);
      queue.push([id, obj]);
    };
    for (const [id, obj] of start) visit(id, obj);
    const slotIndex = new Map<Trackable, Map<Variable, Map<string, Variable>>>();
    const liveSlot = (optimizer: Trackable, original: Variable, slot: string): Variable | undefined => {
      let index = slotIndex.get(optimizer);
      if (!index) {
        // (indexed once per optimizer: a scan per saved slot would be quadratic)
        index = new Map();
        for (const [orig, name, v] of optimizer.trackedSlots()) {
          let m = index.get(orig);
          if (!m) index.set(orig, (m = new Map()));
          m.set(name, v);
        }
        slotIndex.set(optimizer, index);
      }
      return index.get(original)?.get(slot);
    };
    let qi = 0;
    let si = 0;
    while (qi < queue.length || si < slotRequests.length) {
      if (qi < queue.length) {
        const [id, live] = queue[qi++]!;
        const saved = nodes[id]!;
        if (saved.tensor !== undefined) {
          const entry = saved.tensor;
          if (!(live instanceof Variable)) throw new CheckpointError(`is a saved variable, but the object at its path is ${live instanceof Trackable ? live.constructor.name : Array.isArray(live) ? "an array" : typeof live}`, { path, entry });
          const value = tensors.get(entry)!;
          if (value.dtype !== live.dtype) throw new CheckpointError(`has dtype ${value.dtype} but variable ${live.name} has dtype ${live.dtype}`, { path, entry });
          if (value.shape.length !== live.shape.length || value.shape.some((d, i) => d !== live.shape[i])) {
            throw new CheckpointError(`has shape [${value.shape.join(", ")}] but variable ${live.name} has shape [${live.shape.join(", ")}]`, { path, entry });
          }
          plan.assigns.push({ variable: live, value, entry });
          const waiting = this.waitingSlots.get(id);
          if (waiting) {
            for (const [optimizer, slot, node] of waiting) slotRequests.push([optimizer, id, slot, node]);
            plan.slotsPlaced.push(id);
          }
        }
        if (live instanceof Trackable) {
          for (const [name, variable, value] of live.optionalChildren()) {
            if (!saved.children.some((c) => c.name === name)) plan.defaults.push({ variable, value });
          }
        }
        if (saved.children.length > 0) {
          const edges = new Map(edgesOf(live, () => `(the object restored from node ${id} of ${path})`).map((e) => [e.name, e.child] as const));
          for (const c of saved.children) {
            const child = edges.get(c.name);
            if (child !== undefined) visit(c.node, child);
            else if (live instanceof Trackable) plan.deferrals.push({ kind: "child", owner: live, name: c.name, node: c.node });
          }
        }
        if (saved.slots && live instanceof Trackable) for (const s of saved.slots) slotRequests.push([live, s.original, s.name, s.node]);
        continue;
      }
      // Slots once the queue is empty: the variables they belong to are matched by then.
      const [optimizer, originalNode, slot, node] = slotRequests[si++]!;
      const original = matched.get(originalNode) ?? liveOf.get(originalNode);
      if (original instanceof Variable) {
        const v = liveSlot(optimizer, original, slot);
        if (v) visit(node, v);
        else plan.deferrals.push({ kind: "slot", optimizer, original, slot, node });
      } else if (original === undefined) {
        plan.deferrals.push({ kind: "waiting", optimizer, original: originalNode, slot, node });
      }
    }
    // The saved tensors under each deferred edge, each subtree walked once.
    const planned = new Set(plan.assigns.map((a) => a.entry));
    const stack = plan.deferrals.map((d) => d.node);
    while (stack.length > 0) {
      const k = stack.pop()!;
      if (this.parkVisited.has(k) || matched.has(k) || liveOf.has(k)) continue;
      this.parkVisited.add(k);
      const n = nodes[k]!;
      if (n.tensor !== undefined && !planned.has(n.tensor) && !this.status.restored.has(n.tensor)) plan.deferrable.add(n.tensor);
      for (const c of n.children) stack.push(c.node);
      for (const s of n.slots ?? []) stack.push(s.node);
    }
    return plan;
  }

  /** Assigns a checked plan's values and (when deferring) parks its deferred edges. */
  commit(plan: Plan, deferred: boolean): void {
    const { status } = this;
    for (const { variable, value, entry } of plan.assigns) {
      initScope(() => variable.assign(value));
      status.restored.add(entry);
      status.parked.delete(entry);
      status.filled.add(variable);
    }
    for (const { variable, value } of plan.defaults) {
      initScope(() => variable.assign(value));
      status.filled.add(variable);
    }
    for (const [id, obj] of plan.matched) this.liveOf.set(id, obj);
    for (const id of plan.slotsPlaced) this.waitingSlots.delete(id);
    if (!deferred) return;
    for (const t of plan.deferrable) if (!status.restored.has(t)) status.parked.add(t);
    for (const d of plan.deferrals) {
      if (d.kind === "child") d.owner.deferChild(d.name, (made) => this.fill(d.node, made));
      else if (d.kind === "slot") d.optimizer.deferSlot(d.original, d.slot, (made) => this.fill(d.node, made));
      else {
        const waiting = this.waitingSlots.get(d.original) ?? [];
        waiting.push([d.optimizer, d.slot, d.node]);
        this.waitingSlots.set(d.original, waiting);
      }
    }
  }

  /** A deferred edge's object was made: check and fill it (and what hangs off it). */
  private fill(node: number, made: unknown): void {
    if (this.liveOf.has(node) || made === null || typeof made !== "object") return;
    this.commit(this.plan([[node, made]]), true);
  }
}

/**
 * Restores `root` from `path`: every saved Variable reachable by the same path from the root is
 * assigned its saved value (shape and dtype must match: a CheckpointError names the entry).
 * Everything is checked before anything is assigned, so a failed restore leaves the objects as
 * they were. Strict by default: a saved value with no Variable, or a Variable with no saved
 * value, is a CheckpointError listing them (`{ strict: false }` restores what matches). With
 * `{ deferred: true }`, objects not made yet are filled when they are made. Returns the status
 * (assertConsumed()).
 */
export function restore(root: unknown, path: string, options?: RestoreOptions): CheckpointStatus {
  checkRoot("restore", root);
  checkPath("restore", path);
  checkOptions("restore", options, RESTORE_OPTIONS);
  const strict = flag("strict", options?.strict, true);
  const deferred = flag("deferred", options?.deferred, false);
  const { nodes, tensors } = readCheckpoint(path);
  const status = new CheckpointStatus(path, root, [...tensors.keys()]);
  const session = new RestoreSession(path, nodes, tensors, status);
  const plan = session.plan([[0, root]]);
  if (strict) {
    const planned = new Set(plan.assigns.map((a) => a.entry));
    const filled = new Set([...plan.assigns, ...plan.defaults].map((a) => a.variable));
    const unexpected = [...tensors.keys()].filter((t) => !planned.has(t) && !(deferred && plan.deferrable.has(t)));
    const missing = liveVariables(root).filter(([, v]) => !filled.has(v)).map(([p]) => p);
    if (unexpected.length > 0 || missing.length > 0) {
      const parts: string[] = [];
      if (unexpected.length > 0) parts.push(`${unexpected.length} saved value(s) with no variable to restore into: ${list(unexpected)}`);
      if (missing.length > 0) parts.push(`${missing.length} variable(s) the checkpoint has no value for: ${list(missing)}`);
      const later = !deferred && unexpected.some((t) => plan.deferrable.has(t));
      throw new CheckpointError(
        `the checkpoint does not match the objects restored into it, nothing was restored: ${parts.join("; ")}. ` +
          (later ? `Some belong to objects not made yet (a layer built on its first call, an optimizer's slots): pass { deferred: true } to fill them when they are made; ` : "") +
          `pass { strict: false } to restore what matches`,
        { path, entry: unexpected[0] ?? missing[0] },
      );
    }
  }
  session.commit(plan, deferred);
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
  restore(path: string, options?: RestoreOptions): CheckpointStatus {
    return restore(this, path, options);
  }
}
