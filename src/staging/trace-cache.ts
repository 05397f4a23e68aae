/**
 * A staged function's trace cache: concrete functions by input signature (signature.ts), one per
 * values of the tracked state their traces read (core/tracked-state.ts: a model's mode), with a
 * fast path for a call whose arguments have the last call's types, relaxed signatures for
 * `reduceRetracing`, a bound on how many it keeps (least recently used evicted), and a warning
 * when a function keeps being retraced.
 */
import { Tensor } from "../core/tensor.js";
import { Variable } from "../core/variable.js";
import { changedRead, stateEpoch } from "../core/tracked-state.js";
import type { ConcreteFunction } from "./concrete-function.js";
import { describeChange, signatureOf, type LeafInfo, type Signature } from "./signature.js";

/** Retraces beyond this count warn once, with the reason. */
export const RETRACE_WARNING_THRESHOLD = 5;

/** How many concrete functions a staged function keeps by default (`stage(fn, { maxTraces })`). */
export const DEFAULT_MAX_TRACES = 64;

/** What a lookup found: the concrete function, or a trace of this very signature in progress. */
export type Lookup<P> = { sig: Signature; cf: ConcreteFunction } | { sig: Signature; pending: P };

export class TraceCache {
  /** Per signature key, its concrete functions (one per values of the tracked state they read). */
  private readonly bySignature = new Map<string, ConcreteFunction[]>();
  /** Every cached concrete function with its key, least recently used first. */
  private readonly recency = new Map<ConcreteFunction, string>();
  /** reduceRetracing: per argument structure (ranks only), the shapes generalized so far. */
  private readonly relaxed = new Map<string, number[][]>();
  /**
   * The last hit, for the common case of a call with the same flat argument types: kept only when
   * every leaf is a tensor or a JS value (a Variable or another object is looked up by `lookup`).
   */
  private last: {
    args: readonly unknown[];
    sig: Signature;
    cf: ConcreteFunction;
    numTensors: number;
    numInputs: number;
    /** Every argument is a tensor and the function captures nothing: a call's arguments are the graph's inputs. */
    argsAreInputs: boolean;
  } | null = null;
  private lastLeaves: LeafInfo[] | null = null;
  private warned = false;

  constructor(
    private readonly name: string,
    private readonly inputSignature: unknown[] | undefined,
    private readonly reduceRetracing: boolean,
    /** The most concrete functions kept; the least recently used goes first. */
    private readonly maxTraces: number = DEFAULT_MAX_TRACES,
    /** Told when no concrete function of `key` is left (the recursion's notes on it may go). */
    private readonly onForget: (key: string) => void = () => {},
  ) {}

  /** How many concrete functions the cache holds. */
  get size(): number {
    return this.recency.size;
  }

  /** The cached function of `key` whose tracked state holds now (made the most recently used). */
  private find(key: string): ConcreteFunction | undefined {
    const variants = this.bySignature.get(key);
    if (variants === undefined) return undefined;
    for (const cf of variants) {
      if (cf.stateIsCurrent()) {
        this.recency.delete(cf);
        this.recency.set(cf, key);
        return cf;
      }
    }
    return undefined;
  }

  /** Caches a new concrete function of `key`, evicting the least recently used beyond the bound. */
  private add(key: string, cf: ConcreteFunction): void {
    const variants = this.bySignature.get(key);
    if (variants === undefined) this.bySignature.set(key, [cf]);
    else variants.push(cf);
    this.recency.set(cf, key);
    while (this.recency.size > this.maxTraces) {
      const [old, oldKey] = this.recency.entries().next().value!;
      this.evict(old, oldKey);
    }
  }

  private evict(cf: ConcreteFunction, key: string): void {
    this.recency.delete(cf);
    const variants = this.bySignature.get(key)!;
    variants.splice(variants.indexOf(cf), 1);
    if (variants.length === 0) {
      this.bySignature.delete(key);
      this.onForget(key);
    }
    if (this.last?.cf === cf) this.last = null;
    cf.release();
  }

  /**
   * The concrete function for `args`: cached; or, when a trace of their signature is in
   * progress (`pending`, a recursive call), that trace; or traced now by `trace` and cached.
   * `traceCount` is how many traces there were before (for the retrace warning).
   */
  lookup<P>(
    args: readonly unknown[],
    pending: (key: string) => P | undefined,
    trace: (args: readonly unknown[], sig: Signature) => ConcreteFunction,
    traceCount: number,
    /** Specs that replace the function's inputSignature for this lookup (concrete() of specs). */
    specs?: readonly unknown[],
  ): Lookup<P> {
    const fast = specs === undefined ? this.sameAsLast(args) : null;
    if (fast !== null) return { sig: { key: this.last!.sig.key, tensors: fast, leaves: this.last!.sig.leaves }, cf: this.last!.cf };
    let sig = signatureOf(args, this.name, specs ?? this.inputSignature);
    let cf = this.find(sig.key);
    if (cf) {
      if (specs !== undefined) return { sig, cf };
      // (arrays are copied: the caller may refill the same array before the next call)
      if (sig.leaves.every((l) => l.kind === "tensor" || l.kind === "value")) {
        const argsAreInputs = cf.captures.length === 0 && args.every((a) => a instanceof Tensor);
        this.last = { args: snapshotArrays(args), sig, cf, numTensors: sig.tensors.length, numInputs: sig.tensors.length + cf.captures.length, argsAreInputs };
      }
      return { sig, cf };
    }
    const p = pending(sig.key);
    if (p !== undefined) return { sig, pending: p };
    if (this.reduceRetracing && specs === undefined) {
      const sk = structureKey(sig);
      const shapes = sig.leaves.filter((l) => l.kind === "tensor").map((l) => l.shape!);
      const prev = this.relaxed.get(sk);
      if (prev) {
        const merged = prev.map((p, i) => p.map((d, j) => (d === shapes[i]![j] ? d : -1)));
        this.relaxed.set(sk, merged);
        sig = signatureOf(args, this.name, this.inputSignature, merged);
        cf = this.find(sig.key);
        if (cf) return { sig, cf };
      } else {
        this.relaxed.set(sk, shapes);
        // (bounded as the functions are: a JS value changing at every call is a new structure each time)
        if (this.relaxed.size > this.maxTraces) this.relaxed.delete(this.relaxed.keys().next().value!);
      }
    }
    if (this.lastLeaves && traceCount >= RETRACE_WARNING_THRESHOLD && !this.warned) {
      this.warned = true;
      console.warn(
        `stagecraft: staged function "${this.name}" was traced ${traceCount + 1} times; the last retrace happened because ${this.retraceReason(sig)}. ` +
          `Pass tensors instead of changing JS values, or use inputSignature / reduceRetracing to trace once for many shapes` +
          (this.recency.size >= this.maxTraces ? `; it keeps its ${this.maxTraces} most recently used traces (stage(fn, { maxTraces }))` : "") +
          `.`,
      );
    }
    cf = trace(args, sig);
    this.add(sig.key, cf);
    this.lastLeaves = sig.leaves;
    return { sig, cf };
  }

  /** Why `sig` was traced again: the arguments changed, or state an earlier trace of it read. */
  private retraceReason(sig: Signature): string {
    const variants = this.bySignature.get(sig.key);
    const changed = variants === undefined ? null : changedRead(variants[variants.length - 1]!.stateReads);
    if (changed !== null) {
      const owner = changed.owner as { typeName?: unknown };
      const who = typeof owner.typeName === "string" ? owner.typeName : changed.owner.constructor?.name ?? "an object";
      return `${who}.${changed.key} changed from ${String(changed.value)} to ${String(changed.current())}`;
    }
    return describeChange(this.lastLeaves!, sig.leaves);
  }

  /** The cached concrete function for `args`' signature and the current tracked state, if any (no tracing). */
  peek(args: readonly unknown[]): ConcreteFunction | undefined {
    return this.bySignature.get(signatureOf(args, this.name, this.inputSignature).key)?.find((cf) => cf.stateIsCurrent());
  }

  /**
   * The fast path of a plain eager call: when `args` have the last hit's signature, the graph's
   * inputs for them (the tensor arguments, then room for the captures' values: see
   * ConcreteFunction.callPrepared) and the function is `lastFunction`; else null (then `lookup`).
   */
  lastHit(args: readonly unknown[]): Tensor[] | null {
    const last = this.last;
    if (last === null || (last.cf.stateCheckedAt !== stateEpoch() && !last.cf.stateIsCurrent())) return null;
    // (the arguments array, made for this call, serves as the inputs when they are the same list)
    if (last.argsAreInputs) return sameTensors(args, last.args) ? (args as Tensor[]) : null;
    const inputs: Tensor[] = new Array(last.numInputs);
    return sameLeaves(args, last.args, inputs, 0) === last.numTensors ? inputs : null;
  }

  /** The concrete function of the last hit (after lastHit found it). */
  get lastFunction(): ConcreteFunction {
    return this.last!.cf;
  }

  /** Same flat signature as the last call (tensors by dtype/shape/device, JS values by value)? */
  private sameAsLast(args: readonly unknown[]): Tensor[] | null {
    if (this.last === null || !this.last.cf.stateIsCurrent()) return null;
    const tensors: Tensor[] = new Array(this.last.numTensors);
    return sameLeaves(args, this.last.args, tensors, 0) === this.last.numTensors ? tensors : null;
  }
}

/** A signature's key with tensor shapes replaced by their ranks. */
function structureKey(sig: Signature): string {
  return sig.key.replace(/\[[^\]]*\]@/g, (m) => `[rank${m.split(",").length}]@`);
}

/**
 * Whether `args` has the signature `prev` (the last hit's arguments: tensors and JS values, in
 * arrays) had: tensors of the same dtypes, shapes and devices, equal JS values, arrays of such, in
 * the order signatureOf flattens them. Writes the tensors into `tensors` from index `at`; returns
 * the index after the last one written, or -1 when the signature differs.
 */
function sameLeaves(args: readonly unknown[], prev: readonly unknown[], tensors: Tensor[], at: number): number {
  if (args.length !== prev.length) return -1;
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    const b = prev[i];
    if (a instanceof Tensor) {
      if (!sameTensorType(a, b)) return -1;
      tensors[at++] = a;
    } else if (Array.isArray(a)) {
      if (!Array.isArray(b) || (at = sameLeaves(a, b, tensors, at)) < 0) return -1;
    } else if (a === null || typeof a !== "object" ? !Object.is(a, b) : true) return -1;
  }
  return at;
}

/** sameLeaves for a last hit whose arguments were all tensors: `args` are tensors of their types. */
function sameTensors(args: readonly unknown[], prev: readonly unknown[]): boolean {
  if (args.length !== prev.length) return false;
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    if (!(a instanceof Tensor) || !sameTensorType(a, prev[i])) return false;
  }
  return true;
}

/**
 * Whether tensor `a` may stand where `b`, a leaf of the last hit, stood: `b` itself (the last hit's
 * tensors have their types and none is a Variable) or a tensor of its dtype, device and shape that
 * is no Variable; never a symbolic tensor.
 */
function sameTensorType(a: Tensor, b: unknown): boolean {
  if (a !== b && (!(b instanceof Tensor) || a instanceof Variable || a.dtype !== b.dtype || a.device !== b.device || !sameShape(a.shape, b.shape))) return false;
  return !a.isSymbolic;
}

function sameShape(a: readonly number[], b: readonly number[]): boolean {
  if (a.length !== b.length) return false;
  for (let d = 0; d < a.length; d++) if (a[d] !== b[d]) return false;
  return true;
}

/** A copy of `args` with every nested array copied too (tensors and other leaves shared). */
function snapshotArrays(args: readonly unknown[]): unknown[] {
  return args.map((a) => (Array.isArray(a) ? snapshotArrays(a) : a));
}
