/**
 * The timed runs of auto's measurements (auto.ts, steps 1 and 2), two sides ("ours" and "plan")
 * compared by pairs of runs: which side the next call runs on, and which runs pair up.
 *
 * Runs pair by their inputs: a call whose argument tensors are the very ones an earlier call on
 * the other side had (tensors are immutable: the same data, so the same work) pairs with that
 * call. Calls whose work depends on their data otherwise made pairs of unequal work: TreeLSTM's
 * benchmark cycles over 8 trees of 29-59 nodes, all padded to the same shapes, and the sides
 * alternated call by call, so the plan ran trees 0, 2, 4, 6 and ours 1, 3, 5, 7 at every
 * measurement, each pair a smaller tree against a larger one or the other way, in 3 pairs of 4 in
 * the plan's favour by the trees alone: a plan measured slower by each side's median (9.85 ms
 * against 9.55) was kept. Calls whose arguments are new tensors each time (a training step on
 * fresh batches) pair in order, as before, the i-th run of each side; the side that goes first in
 * such a pair is drawn (a fixed-seed generator, so a run of a program is repeatable), so inputs
 * whose work alternates with an even period cannot line up with the sides either.
 */
import type { Tensor } from "../../core/tensor.js";

/** One timed call: its side, the key of its arguments, its time, and (step 1) each segment's. */
export interface TimedCall {
  plan: boolean;
  key: string;
  ms: number;
  segments: number[] | null;
}

/** Pairs of runs: `ours[i]` and `plan[i]` are one pair's two calls. */
export interface Pairs {
  ours: TimedCall[];
  plan: TimedCall[];
}

/** Ids of tensors seen as arguments while measuring (a weak map: nothing is kept alive). */
const ids = new WeakMap<Tensor, number>();
let nextId = 0;

/** The key of a call's arguments (the first `numArgInputs` inputs: captures are the same for every call): their identities. */
export function argumentKey(inputs: readonly Tensor[], numArgInputs: number): string {
  let key = "";
  for (let i = 0; i < numArgInputs; i++) {
    const t = inputs[i]!;
    let id = ids.get(t);
    if (id === undefined) ids.set(t, (id = nextId++));
    key += `${id},`;
  }
  return key;
}

/** The timed runs of one measurement. */
export class PairedRuns {
  readonly runs: TimedCall[] = [];
  private readonly byKey = new Map<string, { ours: TimedCall[]; plan: TimedCall[] }>();
  private planCount = 0;
  private oursCount = 0;
  /** A fixed-seed xorshift: which side goes first in a pair of calls with new arguments. */
  private seed = 0x2545f491;

  /** Whether the next call, with arguments `key`, runs on the plan: the other side of an unpaired run with the same arguments, else of the latest unpaired run, else drawn. */
  nextOnPlan(key: string): boolean {
    const k = this.byKey.get(key);
    if (k !== undefined && k.plan.length !== k.ours.length) return k.plan.length < k.ours.length;
    if (this.planCount !== this.oursCount) return this.planCount < this.oursCount;
    let x = this.seed;
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    this.seed = x >>> 0;
    return (this.seed & 1) === 0;
  }

  add(run: TimedCall): void {
    this.runs.push(run);
    let k = this.byKey.get(run.key);
    if (k === undefined) this.byKey.set(run.key, (k = { ours: [], plan: [] }));
    (run.plan ? k.plan : k.ours).push(run);
    if (run.plan) this.planCount++;
    else this.oursCount++;
  }

  /** Each side's whole-call times, in order. */
  times(plan: boolean): number[] {
    const out: number[] = [];
    for (const r of this.runs) if (r.plan === plan) out.push(r.ms);
    return out;
  }

  /** Whether as many runs have been made on each side (a pair is complete). */
  get balanced(): boolean {
    return this.planCount === this.oursCount;
  }

  /** Whether some arguments were seen in more than one call (then runs pair by arguments). */
  private get keysRepeat(): boolean {
    return this.byKey.size < this.runs.length;
  }

  /** The pairs of runs with the same arguments. */
  private keyedPairs(): Pairs {
    const out: Pairs = { ours: [], plan: [] };
    for (const k of this.byKey.values()) {
      const n = Math.min(k.ours.length, k.plan.length);
      for (let i = 0; i < n; i++) (out.ours.push(k.ours[i]!), out.plan.push(k.plan[i]!));
    }
    return out;
  }

  /** The pairs in order: the i-th run of each side. */
  private orderPairs(): Pairs {
    const ours = this.runs.filter((r) => !r.plan), plan = this.runs.filter((r) => r.plan);
    const n = Math.min(ours.length, plan.length);
    return { ours: ours.slice(0, n), plan: plan.slice(0, n) };
  }

  /**
   * The pairs to test and choose by: the runs with the same arguments once there are at least
   * `min` such pairs, or in order where no arguments repeat; null while arguments repeat but
   * fewer than `min` pairs share theirs (the sign test waits for them).
   */
  pairs(min: number): Pairs | null {
    const keyed = this.keyedPairs();
    if (keyed.ours.length >= min) return keyed;
    return this.keysRepeat ? null : this.orderPairs();
  }

  /** The pairs to choose by once measuring has ended: as `pairs`, else (too few pairs by arguments) in order. */
  finalPairs(min: number): Pairs {
    return this.pairs(min) ?? this.orderPairs();
  }
}
