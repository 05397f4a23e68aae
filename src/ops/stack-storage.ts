/**
 * Storage for the stacks a compiled call grows (ops/iteration-stack.ts), kept by the compiled
 * graph and reused by its next call: a differentiated loop's stacks are as large as all its
 * iterations' kept values, and allocating them afresh on every call (ArrayBuffers, outside
 * V8's heap) brings full garbage collections every few calls.
 *
 * A compiled graph's entry from JavaScript (CompiledGraph.run) runs inside its scope; pushes
 * that need new storage take it from the scope, and the scope takes all of it back when the
 * call returns. Nothing a call hands out may alias that storage afterwards, so every place a
 * value leaves the call (its outputs, variable assignments, stateful kernels, the generic path)
 * copies values whose storage `isScopedStorage` (exec/compile.ts).
 */

const scoped = new WeakSet<ArrayBufferLike>();

/** Free buffers kept per scope at most (the largest are kept). */
const MAX_FREE = 64;

export class StackScope {
  private free: ArrayBuffer[] = [];
  private inUse: ArrayBuffer[] = [];

  /** A buffer of at least `bytes` bytes (contents undefined): the smallest free one that fits. */
  take(bytes: number): ArrayBuffer {
    let best = -1;
    for (let i = 0; i < this.free.length; i++) {
      const b = this.free[i]!.byteLength;
      if (b >= bytes && (best < 0 || b < this.free[best]!.byteLength)) best = i;
    }
    const buf = best >= 0 ? this.free.splice(best, 1)[0]! : new ArrayBuffer(bytes);
    scoped.add(buf);
    this.inUse.push(buf);
    return buf;
  }

  /** Takes back every buffer handed out since the last release. */
  release(): void {
    if (this.inUse.length === 0) return;
    this.free.push(...this.inUse);
    this.inUse = [];
    if (this.free.length > MAX_FREE) this.free = this.free.sort((a, b) => b.byteLength - a.byteLength).slice(0, MAX_FREE);
  }
}

let current: StackScope | null = null;

/** Runs fn with stack storage taken from `scope`, which takes it all back when fn returns. */
export function withStackScope<T>(scope: StackScope, fn: () => T): T {
  const outer = current;
  current = scope;
  try {
    return fn();
  } finally {
    current = outer;
    scope.release();
  }
}

/** Storage for a growing stack: the current scope's, or a new buffer outside any. */
export function stackStorage(bytes: number): ArrayBuffer {
  return current ? current.take(bytes) : new ArrayBuffer(bytes);
}

/** Whether `buffer` belongs to a stack scope (it is reused once its call returns). */
export function isScopedStorage(buffer: ArrayBufferLike): boolean {
  return scoped.has(buffer);
}
