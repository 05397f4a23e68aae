/**
 * Tracked state: JS-side state of long-lived objects that changes what a traced function
 * computes without being a tensor or a Variable (a Module's `training` and `trainable` flags).
 *
 * While a staged function is traced, reading such state records (owner, key, value) in the
 * innermost open collection (`collectStateReads`); the concrete function keeps what its trace
 * read and is valid only while every recorded state still has the value it was traced with.
 * Any change bumps one global epoch, so a call checks its function with a single integer
 * compare while nothing changed (`stateEpoch`), and re-reads the recorded values only after a
 * change.
 */

/** One read of tracked state: `owner[key]` was `value` when the function was traced. */
export interface StateRead {
  readonly owner: object;
  readonly key: string;
  readonly value: unknown;
  /** Reads the state's current value (without recording a read). */
  readonly current: () => unknown;
}

let epoch = 0;

/** The number of tracked-state changes so far (compared, not interpreted). */
export function stateEpoch(): number {
  return epoch;
}

/** Called by a setter of tracked state when the value actually changes. */
export function stateChanged(): void {
  epoch++;
}

/** The open collections, innermost last (a staged function traced while another is traced). */
const collections: Map<object, Map<string, StateRead>>[] = [];

/**
 * Records that tracked state was read (a no-op unless a staged function is being traced).
 * The first read of `owner[key]` in a trace is the one kept: the trace computed with it.
 */
export function noteStateRead(owner: object, key: string, value: unknown, current: () => unknown): void {
  const top = collections.length === 0 ? null : collections[collections.length - 1]!;
  if (top === null) return;
  let byKey = top.get(owner);
  if (byKey === undefined) top.set(owner, (byKey = new Map()));
  if (!byKey.has(key)) byKey.set(key, { owner, key, value, current });
}

/** Records reads made elsewhere (a cached function called while tracing) in the open collection. */
export function noteStateReads(reads: readonly StateRead[]): void {
  if (collections.length === 0) return;
  for (const r of reads) noteStateRead(r.owner, r.key, r.value, r.current);
}

/**
 * Runs `f` collecting the tracked state it reads; returns its result and the reads. The reads
 * also join the enclosing collection (an enclosing trace embeds what this one traced).
 */
export function collectStateReads<R>(f: () => R): { result: R; reads: StateRead[] } {
  const mine = new Map<object, Map<string, StateRead>>();
  collections.push(mine);
  let result: R;
  try {
    result = f();
  } finally {
    collections.pop();
  }
  const reads: StateRead[] = [];
  for (const byKey of mine.values()) for (const r of byKey.values()) reads.push(r);
  noteStateReads(reads);
  return { result, reads };
}

/** The first read whose state no longer has the traced value, or null when all still hold. */
export function changedRead(reads: readonly StateRead[]): StateRead | null {
  for (const r of reads) if (!Object.is(r.current(), r.value)) return r;
  return null;
}
