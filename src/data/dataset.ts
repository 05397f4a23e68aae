/**
 * `sc.data.Dataset`: an input pipeline, as tf.data's. A dataset is a recipe for a sequence of
 * elements (tensors, or arrays/objects of tensors); every `for...of` over it runs the recipe
 * again (a new epoch). Transformations return new datasets:
 *
 * ```ts
 * const ds = sc.data.Dataset.fromTensorSlices([images, labels]).shuffle(10_000, { seed: 0 }).batch(64);
 * for (const [x, y] of ds) step(x, y);
 * ```
 *
 * `shuffle` is seeded and draws a new order on each epoch (from the seed and the epoch number),
 * so a run is reproducible. Elements are made on demand, on the thread that trains.
 *
 * Elements may be promises: a `map` whose function is async (reading or fetching files) makes
 * them, later `map`s and `batch` chain onto them, `shuffle`, `take`, `skip` and `repeat` move
 * them unopened. `prefetch(n)` reads `n` elements ahead, which starts their work early, and
 * `for await` takes the values in order:
 *
 * ```ts
 * const ds = sc.data.Dataset.fromArray(files).map(async (f) => decode(await readFile(f))).batch(32).prefetch(2);
 * for await (const [x, y] of ds) step(x, y); // the next batches' files are read during the step
 * ```
 *
 * Prefetching helps only such asynchronous work (I/O, workers, timers): a synchronous pipeline
 * runs on the same thread as the step, so reading it ahead overlaps nothing (prefetch.ts).
 */
import { Tensor } from "../core/tensor.js";
import { ShapeError, ValueError } from "../core/errors.js";
import { isPlainObject } from "../core/objects.js";
import { checkOptions } from "../core/options.js";
import { tensor } from "../ops/creation.js";
import { stack } from "../ops/shape.js";
import { mulberry32 } from "./rng.js";
import { isThenable, prefetched } from "./prefetch.js";

/** A dataset element: a tensor, or an array or plain object of elements. */
export type Element = Tensor | readonly Element[] | { readonly [k: string]: Element };

function mapLeaves(e: unknown, f: (t: Tensor, path: string) => unknown, path = "element"): unknown {
  if (e instanceof Tensor) return f(e, path);
  if (Array.isArray(e)) return e.map((x, i) => mapLeaves(x, f, `${path}[${i}]`));
  if (isPlainObject(e)) return Object.fromEntries(Object.entries(e).map(([k, x]) => [k, mapLeaves(x, f, `${path}.${k}`)]));
  if (isThenable(e)) throw new ValueError(`${path} is a promise inside an element: an async map must return the whole element, not hold promises in it`, "Dataset");
  throw new ValueError(`a dataset element must be a tensor or an array/object of tensors, got ${e === null ? "null" : typeof e} at ${path}`, "Dataset");
}

function leavesOf(e: unknown): Tensor[] {
  const out: Tensor[] = [];
  mapLeaves(e, (t) => out.push(t));
  return out;
}

export class Dataset<T = Element> implements Iterable<T> {
  /**
   * @param source makes a fresh iterator for epoch `epoch` (0, 1, ...)
   * @param size the number of elements when known (Infinity for a repeated dataset)
   */
  constructor(
    private readonly source: (epoch: number) => Iterator<T>,
    readonly size: number | undefined,
  ) {}

  private epochs = 0;

  [Symbol.iterator](): Iterator<T> {
    return this.source(this.epochs++);
  }

  /** The elements of a fresh epoch as an array. */
  toArray(): T[] {
    return [...this];
  }

  /**
   * One element per row (first axis) of the given tensors, which must have the same number
   * of rows: `fromTensorSlices([x, y])` yields `[x[i], y[i]]`. Rows are views of the tensors'
   * data (no op runs per row).
   */
  static fromTensorSlices<E extends Element>(data: E): Dataset<E> {
    const leaves = leavesOf(data);
    if (leaves.length === 0) throw new ValueError(`fromTensorSlices needs at least one tensor`, "Dataset");
    const n = leaves[0]!.shape[0];
    for (const t of leaves) {
      if (t.isSymbolic) throw new ValueError(`fromTensorSlices needs concrete tensors (it runs outside staged code)`, "Dataset");
      if (t.rank === 0 || t.shape[0] !== n) {
        throw new ShapeError(`every tensor must have the same number of rows: got shapes ${leaves.map((l) => `[${l.shape.join(", ")}]`).join(" and ")}`, "Dataset.fromTensorSlices");
      }
    }
    const rows = n ?? 0;
    const sliceAt = (i: number): E =>
      mapLeaves(data, (t) => {
        const rowShape = t.shape.slice(1);
        const rowSize = rowShape.reduce((a, b) => a * b, 1);
        return tensor(t.dataSync().subarray(i * rowSize, (i + 1) * rowSize) as Float32Array, t.dtype, rowShape);
      }) as E;
    return new Dataset<E>(function* () {
      for (let i = 0; i < rows; i++) yield sliceAt(i);
    }, rows);
  }

  /** The items of an array, in order. */
  static fromArray<E>(items: readonly E[]): Dataset<E> {
    const copy = items.slice();
    return new Dataset<E>(() => copy[Symbol.iterator](), copy.length);
  }

  /** The elements a generator function yields; it is called again for every epoch. */
  static fromGenerator<E>(make: () => Iterable<E>, size?: number): Dataset<E> {
    if (typeof make !== "function") throw new ValueError(`fromGenerator takes a function returning an iterable, got ${typeof make}`, "Dataset");
    return new Dataset<E>(() => make()[Symbol.iterator](), size);
  }

  /**
   * Applies `fn` to every element. An async `fn` makes the elements promises (see `prefetch`);
   * on promise elements, `fn` is applied to each value when it is ready.
   */
  map<U>(fn: (element: Awaited<T>) => U): Dataset<T extends PromiseLike<unknown> ? Promise<Awaited<U>> : U> {
    const src = this.source;
    return new Dataset(function* (epoch) {
      const it = src(epoch);
      for (let r = it.next(); !r.done; r = it.next()) {
        const e = r.value;
        yield (isThenable(e) ? Promise.resolve(e).then((v) => fn(v as Awaited<T>)) : fn(e as Awaited<T>)) as T extends PromiseLike<unknown> ? Promise<Awaited<U>> : U;
      }
    }, this.size);
  }

  /** Keeps the elements for which `fn` is true (elements must be values, not promises). */
  filter(fn: (element: T) => boolean): Dataset<T> {
    const src = this.source;
    return new Dataset<T>(function* (epoch) {
      const it = src(epoch);
      for (let r = it.next(), i = 0; !r.done; r = it.next(), i++) {
        if (isThenable(r.value)) {
          throw new ValueError(`element ${i} is a promise (an async map's): filter needs values, so filter before the async map, or inside it`, "Dataset.filter");
        }
        if (fn(r.value)) yield r.value;
      }
    }, undefined);
  }

  /**
   * Every `size`-th element starting at `index` (tf.data's shard): rank `index` of a job of
   * `size` processes reads its own disjoint part. Shard before shuffling with a per-rank seed.
   */
  shard(size: number, index: number): Dataset<T> {
    checkCount("shard", size, 1);
    checkCount("shard", index);
    if (index >= size) throw new ValueError(`shard index ${index} must be below the number of shards ${size}`, "Dataset.shard");
    const src = this.source;
    const n = this.size;
    return new Dataset<T>(function* (epoch) {
      const it = src(epoch);
      for (let r = it.next(), i = 0; !r.done; r = it.next(), i++) if (i % size === index) yield r.value;
    }, n === undefined ? undefined : n === Infinity ? Infinity : Math.max(0, Math.ceil((n - index) / size)));
  }

  /** The first `count` elements. */
  take(count: number): Dataset<T> {
    checkCount("take", count);
    const src = this.source;
    return new Dataset<T>(function* (epoch) {
      const it = src(epoch);
      for (let i = 0; i < count; i++) {
        const r = it.next();
        if (r.done) return;
        yield r.value;
      }
    }, this.size === undefined ? undefined : Math.min(this.size, count));
  }

  /** All but the first `count` elements. */
  skip(count: number): Dataset<T> {
    checkCount("skip", count);
    const src = this.source;
    return new Dataset<T>(function* (epoch) {
      const it = src(epoch);
      for (let i = 0; i < count; i++) if (it.next().done) return;
      for (let r = it.next(); !r.done; r = it.next()) yield r.value;
    }, this.size === undefined ? undefined : Math.max(0, this.size - count));
  }

  /** The dataset `count` times over (forever without a count); each pass is a new epoch of the source. */
  repeat(count?: number): Dataset<T> {
    if (count !== undefined) checkCount("repeat", count);
    const src = this.source;
    return new Dataset<T>(function* (epoch) {
      for (let k = 0; count === undefined || k < count; k++) {
        let any = false;
        const it = src(epoch * (count ?? 1) + k);
        for (let r = it.next(); !r.done; r = it.next()) {
          any = true;
          yield r.value;
        }
        if (!any) return; // an empty dataset repeated forever is empty
      }
    }, this.size === undefined ? undefined : count === undefined ? (this.size === 0 ? 0 : Infinity) : this.size * count);
  }

  /**
   * Shuffles with a buffer of `bufferSize` elements (tf.data's algorithm: a buffer at least
   * as large as the dataset gives a uniform shuffle). Seeded; each epoch gets a new order.
   */
  shuffle(bufferSize: number, options: { seed?: number } = {}): Dataset<T> {
    checkOptions("Dataset.shuffle", options, ["seed"]);
    checkCount("shuffle", bufferSize, 1);
    const seed = options.seed ?? 0;
    if (!Number.isInteger(seed)) throw new ValueError(`seed must be an integer, got ${seed}`, "Dataset.shuffle");
    const src = this.source;
    return new Dataset<T>(function* (epoch) {
      const next = mulberry32(seed * 7919 + epoch * 104729 + 1);
      const it = src(epoch);
      const buf: T[] = [];
      let r = it.next();
      for (; !r.done && buf.length < bufferSize; r = it.next()) buf.push(r.value);
      while (buf.length > 0) {
        const j = Math.floor(next() * buf.length);
        const out = buf[j]!;
        if (!r.done) {
          buf[j] = r.value;
          r = it.next();
        } else {
          buf[j] = buf[buf.length - 1]!;
          buf.pop();
        }
        yield out;
      }
    }, this.size);
  }

  /**
   * Groups `size` consecutive elements into one, stacking each tensor along a new first axis
   * (elements must have the same structure and shapes). The last, smaller batch is kept unless
   * `dropRemainder`.
   */
  batch(size: number, options: { dropRemainder?: boolean } = {}): Dataset<T> {
    checkOptions("Dataset.batch", options, ["dropRemainder"]);
    checkCount("batch", size, 1);
    const drop = options.dropRemainder ?? false;
    const src = this.source;
    const stackAll = (items: T[]): T => {
      const first = items[0] as unknown;
      const lists = items.map((e) => leavesOf(e));
      let k = 0;
      return mapLeaves(first, (_t, path) => {
        const column = lists.map((l) => l[k]!);
        k++;
        const shape = column[0]!.shape;
        for (const t of column) {
          if (t.dtype !== column[0]!.dtype || t.shape.length !== shape.length || t.shape.some((d, i) => d !== shape[i])) {
            throw new ShapeError(`cannot batch elements whose ${path} differ: [${shape.join(", ")}] ${column[0]!.dtype} and [${t.shape.join(", ")}] ${t.dtype}`, "Dataset.batch");
          }
        }
        return stack(column, 0);
      }) as T;
    };
    const n = this.size;
    return new Dataset<T>(function* (epoch) {
      const it = src(epoch);
      let group: T[] = [];
      // (a group holding promises, an async map's elements, is stacked when they are all ready)
      const batchOf = (items: T[]): T => (items.some(isThenable) ? (Promise.all(items).then((vs) => stackAll(vs as T[])) as T) : stackAll(items));
      for (let r = it.next(); !r.done; r = it.next()) {
        group.push(r.value);
        if (group.length === size) {
          yield batchOf(group);
          group = [];
        }
      }
      if (group.length > 0 && !drop) yield batchOf(group);
    }, n === undefined ? undefined : n === Infinity ? Infinity : drop ? Math.floor(n / size) : Math.ceil(n / size));
  }

  /**
   * Reads up to `n` elements ahead of the one being consumed (per pass; at most `n` held). Worth
   * it when elements are produced asynchronously: promise elements (an async `map`'s) are started
   * as soon as they are read, so with `for await`, the next `n` elements' I/O overlaps with the
   * work on the current one. On a synchronous pipeline it overlaps nothing (one thread does both)
   * and only holds more elements. Order and seeded shuffles are unchanged; an error raised
   * making element i (or a promise element rejecting) reaches the consumer at element i, after
   * the elements before it, with the index in its message and the original error as `cause`.
   */
  prefetch(n: number): Dataset<T> {
    checkCount("prefetch", n);
    const src = this.source;
    return new Dataset<T>((epoch) => prefetched(src(epoch), n), this.size);
  }
}

function checkCount(op: string, n: number, min = 0): void {
  if (typeof n !== "number" || !Number.isInteger(n) || n < min) throw new ValueError(`${op} takes an integer >= ${min}, got ${String(n)}`, `Dataset.${op}`);
}
