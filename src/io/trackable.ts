/**
 * The object graph a checkpoint saves (the TF Eager paper's "object-based checkpointing"):
 * every Variable reachable from a root through named edges. A `Trackable` (a Module, an
 * Optimizer) names its own edges; plain objects, arrays and Maps with string keys are
 * followed by their keys. Optimizers also name *slot* variables, which hang off another
 * variable (Adam's "m" of a weight), so they are matched through that variable wherever the
 * model keeps it.
 *
 * Restore-on-create: when a checkpoint holds something the live object does not have yet (a
 * layer whose variables are made on its first call, an optimizer slot made on the first step),
 * the restore is parked on the owner and applied when the owner creates that child
 * (`childCreated` / `slotCreated`).
 */
import type { Variable } from "../core/variable.js";
import type { Tensor } from "../core/tensor.js";

/** Applies a parked restore to the child once it exists. */
export type DeferredRestore = (child: unknown) => void;

export abstract class Trackable {
  /** Named edges to what a checkpoint saves: Trackables, Variables, and arrays/Maps/plain objects of them. */
  abstract trackedChildren(): Iterable<readonly [string, unknown]>;

  /**
   * Tracked Variable children a checkpoint may lack (added after files were written): a restore
   * from a saved object without that edge sets the Variable to the default value given, and a
   * strict restore does not count it as missing. [edge name, the Variable, its default value].
   */
  optionalChildren(): Iterable<readonly [string, Variable, Tensor]> {
    return [];
  }

  /** Slot variables: [the variable the slot belongs to, slot name, slot variable]. */
  trackedSlots(): Iterable<readonly [Variable, string, Variable]> {
    return [];
  }

  private deferredChildren: Map<string, DeferredRestore[]> | undefined;
  private deferredSlots: Map<Variable, Map<string, DeferredRestore>> | undefined;

  /** @internal Parks a restore of child `name` until it is created. */
  deferChild(name: string, restore: DeferredRestore): void {
    this.deferredChildren ??= new Map();
    const list = this.deferredChildren.get(name) ?? [];
    list.push(restore);
    this.deferredChildren.set(name, list);
  }

  /** @internal Parks a restore of slot `slot` of `original` until it is created. */
  deferSlot(original: Variable, slot: string, restore: DeferredRestore): void {
    this.deferredSlots ??= new Map();
    const m = this.deferredSlots.get(original) ?? new Map<string, DeferredRestore>();
    m.set(slot, restore);
    this.deferredSlots.set(original, m);
  }

  /** @internal Names of children with a parked restore (for assertConsumed). */
  pendingChildren(): string[] {
    return [...(this.deferredChildren?.keys() ?? [])];
  }

  /** @internal Number of slots with a parked restore. */
  pendingSlotCount(): number {
    let n = 0;
    for (const m of this.deferredSlots?.values() ?? []) n += m.size;
    return n;
  }

  /** Subclasses call this when they create a child under `name`: a parked restore fills it. */
  protected childCreated(name: string, child: unknown): void {
    const list = this.deferredChildren?.get(name);
    if (!list) return;
    this.deferredChildren!.delete(name);
    for (const restore of list) restore(child);
  }

  /** Subclasses call this when they create slot `slot` of `original`. */
  protected slotCreated(original: Variable, slot: string, variable: Variable): void {
    const m = this.deferredSlots?.get(original);
    const restore = m?.get(slot);
    if (!restore) return;
    m!.delete(slot);
    if (m!.size === 0) this.deferredSlots!.delete(original);
    restore(variable);
  }
}
