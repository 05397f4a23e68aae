/**
 * Reading a dataset ahead (`Dataset.prefetch`), and the elements that make it worth doing:
 * promises, from a map whose function is async (reading files, fetching, decoding elsewhere).
 *
 * JavaScript runs the pipeline and the training step on one thread, so reading ahead overlaps
 * nothing that runs synchronously: a synchronous pipeline (slices, shuffle, batch) prefetched
 * does the same work at another moment, holding more elements. What can overlap is what runs
 * off the thread: I/O, timers, workers, and what onnxruntime or the WebGPU queue run on their own.
 * A prefetched pipeline whose elements are promises starts up to `n` of them ahead of the one
 * the consumer waits for, so their waiting overlaps with the training step.
 */
import { StagecraftError, ValueError } from "../core/errors.js";

/** Whether `x` is a promise (or any thenable): an element still being produced. */
export function isThenable(x: unknown): x is PromiseLike<unknown> {
  return (typeof x === "object" || typeof x === "function") && x !== null && typeof (x as { then?: unknown }).then === "function";
}

/**
 * The error raised for element `index` of a pass over a prefetched dataset: of the same class
 * when it is one of Stagecraft's typed errors, a ValueError otherwise; the original is its `cause`.
 */
export function elementError(error: unknown, index: number): Error {
  if (error instanceof StagecraftError) {
    const Ctor = error.constructor as new (message: string, op?: string, location?: null) => StagecraftError;
    return Object.assign(new Ctor(`element ${index}: ${error.message}`, "Dataset.prefetch", null), { cause: error });
  }
  const what = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  return Object.assign(new ValueError(`element ${index} failed: ${what}`, "Dataset.prefetch", null), { cause: error });
}

type Slot<T> = { ok: true; value: T } | { ok: false; error: Error };

/**
 * The elements of `it` in order, reading up to `ahead` of them before the consumer asks. An
 * element that is a promise is started when read (and its rejection, named with the element's
 * index, reaches the consumer when it awaits that element, never earlier as an unhandled
 * rejection). An error raised while reading element i is raised when the consumer reaches
 * element i, after the elements before it, and ends the pass.
 */
export function* prefetched<T>(it: Iterator<T>, ahead: number): Generator<T, void, undefined> {
  // a ring of ahead + 1 slots: the element handed out next and the ones read ahead of it
  const slots: (Slot<T> | undefined)[] = new Array(ahead + 1);
  let head = 0;
  let count = 0;
  let index = 0;
  let done = false;
  const read = (): void => {
    const i = index++;
    let slot: Slot<T>;
    try {
      const r = it.next();
      if (r.done) {
        done = true;
        return;
      }
      let value = r.value;
      if (isThenable(value)) {
        const p = Promise.resolve(value).catch((e: unknown) => {
          throw elementError(e, i);
        });
        p.catch(() => {}); // handled when the consumer awaits it
        value = p as T;
      }
      slot = { ok: true, value };
    } catch (e) {
      done = true; // an iterator that threw is finished
      slot = { ok: false, error: elementError(e, i) };
    }
    slots[(head + count) % slots.length] = slot;
    count++;
  };
  let finished = false;
  try {
    for (;;) {
      while (!done && count < slots.length) read();
      if (count === 0) {
        finished = true;
        return;
      }
      const slot = slots[head]!;
      slots[head] = undefined;
      head = (head + 1) % slots.length;
      count--;
      if (!slot.ok) {
        finished = true;
        throw slot.error;
      }
      yield slot.value;
    }
  } finally {
    // the consumer stopped early (break, return, an exception): close the source too
    if (!finished && !done) it.return?.();
  }
}
