/**
 * An imported model run as onnxruntime's own session. The graph path feeds the model's weights
 * (Variables) to the executor as inputs, so nothing of the model can be folded; onnxruntime's
 * session of the ORIGINAL bytes folds constants and fuses kernels over its initializers. When a
 * call can only have the answer those bytes give, it runs on that session (made once, at the
 * first such call), synchronously through the native binding (sync-session.ts):
 *
 *  - no trace, staging or vmap is active (isTracing: those see the model's ops), no tape records
 *    (recorders, variable-read observers: a tape must see the reads and ops to differentiate),
 *    no device scope other than the CPU, and every input is a host tensor;
 *  - every Variable of the model (initializers, Constant-node weights) holds the very tensor it
 *    held at load. Tensors are immutable and every assignment (assign, an optimizer's step, a
 *    checkpoint restore, an executor's assign node) replaces a Variable's stored tensor, so that
 *    identity is the Variable's version: the first call that finds one changed retires the
 *    session for good (its copy of the weights is stale; the graph path serves from then on).
 *
 * Threads: onnxruntime's default is one intra-op thread per core, whose helpers spin between
 * tasks. For a small model (Silero VAD: ~0.2 ms a call) handing each op's work to a helper costs
 * more than it saves, and on a shared machine the helper waits for a core while the call waits
 * for it: measured on the 2-core VM under load, Silero's call took 1.4-8x as long on the default
 * session as on a one-thread session, and PP-OCRv4 det's 1.4x; on a quiet machine a large model
 * runs faster on every core, with helpers that spin within the call (without, PP-OCRv4 rec's two
 * threads were slower than one on a quiet machine, where onnxruntime's spinning default was 1.3x
 * faster than one thread). So a call runs on one of two sessions of the same bytes: onnxruntime's
 * own default session (its thread count, or STAGECRAFT_THREADS' where set) whose helpers stop
 * spinning at each call's end, and a one-thread one (nativeSessionOptions), chosen per input
 * signature by the thread policy (backends/cpu/thread-policy.ts), with the threaded session as
 * its reference way (NATIVE_POLICY_OPTIONS): onnxruntime's own configuration is what a signature
 * starts on and keeps, and it leaves it only when, of the last 8 probes (each a block of the
 * other way against the mean of the last 5 blocks of the way in use, so that a way's tail
 * counts: on a busy machine a threaded call whose helper lost its core waits a time slice), at
 * least 4 found one thread faster by 5% AND their summed times say threads are 1.1x slower. The
 * same test, as new probes replace old ones in the window, takes it back to threads. While the evidence leans towards leaving, probes come 2 blocks apart (leaving
 * a loaded machine's threads takes a few dozen blocks); otherwise probes of one thread are spaced
 * to cost at most 1% of the time (leaveBudget), probes of threads 3%. Why a reference: the rule
 * before (threads only where both the medians and the paired ratios of a window of 5 said they
 * were faster by 5%, one thread on any tie) ran PP-OCRv4 det and rec on one thread for 58-95% of
 * the bench's calls on the quiet 2-core machine, where threaded they ran at onnxruntime's speed
 * (det 19.2 ms, one thread 28.3): a few noisy threaded blocks were enough to leave, and a tie
 * went to one thread (simulated blocks on par, 15% noise: 75% of them on one thread). On a loaded machine one thread still wins (Silero VAD 1.4-8x): there probes of
 * one thread are consistently faster and the test is met within the first few dozen blocks.
 * The policy chooses per block of calls (BLOCK_SECONDS) and is given each block's mean per call,
 * so that a way's tail counts; its probes are 2 blocks whose first is not recorded (the switch,
 * not the way: a threaded call after one-thread calls waits for its sleeping helpers, 6.6 ms
 * against 0.2 ms warm for Silero VAD at load 15, and single probes kept whichever way a
 * signature started with). The
 * first call of a signature runs on both and compares their outputs bit for bit: only where they
 * are the same may the one-thread session serve that signature (MLAS splits its products and
 * convolutions by rows and columns, so they were the same for every model measured; an op whose
 * split changes its sums keeps the default session, whose answer is onnxruntime's own session's).
 * Models over DUAL_MAX_BYTES keep one session (a second copies the weights).
 *
 * Each input signature is still traced once (ConcreteFunction), as a graph call would: the
 * trace-time limits and our importer's errors stay what they are, and the trace's output types
 * are what onnxruntime's outputs must have (dtype, rank, known dims, in the graph's order);
 * outputs that differ retire the session and the call runs on the graph. Models with a Loop run on
 * the graph always (onnxruntime would not stop at maxLoopIterations, maxTotalIterations or
 * maxRunMs), as do models with external data (the session would read the files again, maybe
 * changed) and models with sequence or optional inputs or outputs.
 */
import type { Tensor } from "../../core/tensor.js";
import { variableReadObservers, type Variable } from "../../core/variable.js";
import { isTracing, recorders } from "../../core/context.js";
import { HOST_DEVICE, scopedDevice } from "../../core/device.js";
import { OutputLeaf, type ConcreteFunction } from "../../staging/concrete-function.js";
import { sizeOf } from "../../core/shape.js";
import { ThreadPolicy, type ThreadPolicyOptions } from "../../backends/cpu/thread-policy.js";
import { configuredThreads } from "../../backends/cpu/wasm-runtime.js";
import { config } from "../../core/config.js";
import type { GraphProto, ModelProto, NodeProto } from "../protobuf.js";
import { syncRuntime } from "../sync-session.js";
import { fromOrtResult } from "../ort.js";
import { ortTensor } from "../engine.js";
import type { OnnxValueInfo } from "./load.js";
import { STANDARD_DOMAINS } from "./op-table.js";
import { someNode, subgraphsOf } from "./graph-walk.js";

/** How an imported model's calls ran (a live object: read it after calls). */
export interface ModelCallStats {
  /** Eager calls run on onnxruntime's session of the model's own bytes. */
  native: number;
  /** Calls run on our graph (the staged function). */
  graph: number;
  /** Why calls cannot run on the native session any more (or ever), or null while they may. */
  nativeOff: string | null;
  /** Of the native calls, those run on the one-thread session (the rest on onnxruntime's default threads). */
  oneThread: number;
}

/**
 * The policy's options (exported for tests): probes of 2 blocks (the first pays the switch), and
 * onnxruntime's own threaded session as the reference way, left only when a window of 8 probes
 * says one thread is faster (header comment).
 */
export const NATIVE_POLICY_OPTIONS: ThreadPolicyOptions = { probeRun: 2, reference: "threads", ratios: 8, leaveRatio: 1.1, leaveBudget: 0.01 };

/**
 * Chooses, per model and input signature, between the default-threads session and the
 * one-thread one, by their measured wall times (exported for tests: `force`).
 */
export const nativeSessionPolicy = new ThreadPolicy(NATIVE_POLICY_OPTIONS);

/** Models larger than this (bytes) keep one session: a second would hold a second copy of the weights. */
export const DUAL_MAX_BYTES = 64 * 2 ** 20;

type Runtime = NonNullable<ReturnType<typeof syncRuntime>>;
type BindingSession = InstanceType<Runtime["Session"]>;

/** ONNX element type of float64. */
const DOUBLE = 11;

/** What a traced signature says onnxruntime's outputs must be; null where it cannot be checked (then the graph runs). */
type Expected = { dtype: string; shape: readonly number[] }[] | null;

/**
 * Per input signature: its expected outputs; whether the one-thread session may serve it (null:
 * not yet known); its policy class; the current block of calls (its way, calls left, calls in
 * it, seconds spent so far).
 */
interface SignatureState {
  expected: Expected;
  dual: boolean | null;
  key: string;
  threaded: boolean;
  left: number;
  block: number;
  spent: number;
}

/**
 * The policy chooses a way per block of calls lasting about this long (seconds), up to
 * MAX_BLOCK calls, and is given the block's mean time per call: a call's own time is mostly
 * the median call's, while on a busy machine what a way costs is in its tail (a threaded call
 * whose helper lost its core waits a time slice for it: Silero VAD's calls had a median of
 * 0.2-0.3 ms on both ways at load 14, and means of 1.5-20 ms per 60 calls), which a block's
 * mean counts and the policy's medians of single calls do not.
 */
export const BLOCK_SECONDS = 0.004;
export const MAX_BLOCK = 32;

type RunOutputs = Record<string, { data: unknown; dims: readonly number[]; type: string }>;

let signatureIds = 0;

/** (the largest input, in elements, whose onnxruntime tensor is kept for the next call, as engine.ts keeps its feeds) */
const KEEP_FED_ELEMENTS = 4096;

export class NativeSession {
  /** onnxruntime's default threads (or STAGECRAFT_THREADS'), and one thread (null until opened, or where there is one session). */
  private many: BindingSession | null = null;
  private one: BindingSession | null = null;
  private opened = false;
  private T: Runtime["Tensor"] | null = null;
  private readonly loadValues: Tensor[];
  private readonly signatures = new WeakMap<ConcreteFunction, SignatureState>();
  private readonly feeds: Record<string, object> = {};
  private readonly fetches: Record<string, null> = {};
  /** Per input: a small tensor fed at an earlier call and the onnxruntime tensor made for it (tensors are immutable). */
  private readonly fedTensors: (Tensor | null)[];
  private readonly fedOrt: object[];

  constructor(
    private readonly bytes: Uint8Array,
    private readonly proto: ModelProto,
    private readonly variables: readonly Variable[],
    private readonly inputs: readonly OnnxValueInfo[],
    private readonly outputs: readonly OnnxValueInfo[],
    readonly stats: ModelCallStats,
  ) {
    this.loadValues = variables.map((v) => v.storedValue);
    for (const o of outputs) this.fetches[o.name] = null;
    this.fedTensors = inputs.map(() => null);
    this.fedOrt = inputs.map(() => ({}));
    stats.nativeOff = whyNever(proto, inputs, outputs);
  }

  /**
   * Whether this call may run on the session: the context allows it, the inputs are host
   * tensors, and every Variable is at its load-time value (else the session is retired).
   */
  usable(inputs: readonly Tensor[]): boolean {
    if (this.stats.nativeOff !== null) return false;
    if (isTracing() || recorders.length > 0 || variableReadObservers.length > 0) return false;
    const d = scopedDevice();
    if (d !== null && d !== HOST_DEVICE) return false;
    for (let k = 0; k < inputs.length; k++) {
      const t = inputs[k]!;
      if (t.isSymbolic || t.device !== HOST_DEVICE) return false;
    }
    const vars = this.variables;
    for (let k = 0; k < vars.length; k++) {
      if (vars[k]!.storedValue !== this.loadValues[k]) {
        this.retire(`Variable ${JSON.stringify(vars[k]!.name)} was assigned after load: the session's copy of the weights is stale`);
        return false;
      }
    }
    return true;
  }

  /**
   * Runs the model on a session (inputs in the graph's order, all of them), its outputs
   * checked against `cf`'s; null where the graph must run instead.
   */
  run(cf: ConcreteFunction, inputs: readonly Tensor[]): Tensor[] | null {
    let sig = this.signatures.get(cf);
    if (sig === undefined) this.signatures.set(cf, (sig = { expected: expectedOutputs(cf, this.outputs.length), dual: null, key: `native ${signatureIds++}`, threaded: true, left: 0, block: 1, spent: 0 }));
    const expected = sig.expected;
    if (expected === null) return null;
    if (!this.opened) this.open();
    const many = this.many;
    if (many === null) return null;
    const feeds = this.feeds;
    for (let k = 0; k < inputs.length; k++) feeds[this.inputs[k]!.name] = this.fed(k, inputs[k]!);
    let out: RunOutputs | null;
    let onOne = false;
    try {
      if (sig.dual === null) {
        // The signature's first call: the default session's answer, and whether the one-thread
        // session gives the very same bits (only then may it serve this signature).
        out = this.runOn(many);
        sig.dual = out !== null && this.one !== null && sameBits(out, this.runOn(this.one), this.outputs);
      } else if (!sig.dual) {
        out = this.runOn(many);
      } else {
        // (a forced way, for tests, holds from the next call on, whatever block is under way)
        const forced = nativeSessionPolicy.forcedWay;
        if (forced !== null && forced !== sig.threaded) sig.left = 0;
        if (sig.left === 0) {
          sig.threaded = nativeSessionPolicy.useThreads(sig.key);
          sig.left = sig.block;
          sig.spent = 0;
        }
        const threaded = sig.threaded;
        const t0 = performance.now();
        out = this.runOn(threaded ? many : this.one!);
        sig.spent += (performance.now() - t0) / 1000;
        if (out === null) sig.left = 0;
        else if (--sig.left === 0) {
          const perCall = sig.spent / sig.block;
          nativeSessionPolicy.record(sig.key, threaded, perCall, 1);
          sig.block = Math.max(1, Math.min(MAX_BLOCK, Math.round(BLOCK_SECONDS / Math.max(perCall, 1e-6))));
        }
        onOne = !threaded;
      }
    } finally {
      for (const k in feeds) delete feeds[k];
    }
    // (a failed run: the graph gives this call its answer, or our error for it)
    if (out === null) return null;
    const results: Tensor[] = new Array(this.outputs.length);
    for (let k = 0; k < results.length; k++) {
      const o = out[this.outputs[k]!.name];
      const t = o === undefined ? null : fromOrtResult(o);
      const e = expected[k]!;
      if (t === null || t.dtype !== e.dtype || !fits(t.shape, e.shape)) {
        this.retire(`onnxruntime's output ${JSON.stringify(this.outputs[k]!.name)} is ${t === null ? "missing" : `${t.dtype} [${t.shape.join(", ")}]`} where the graph's is ${e.dtype} [${e.shape.join(", ")}]`);
        return null;
      }
      results[k] = t;
    }
    this.stats.native++;
    if (onOne) this.stats.oneThread++;
    return results;
  }

  /** One run of `s` on the current feeds; null where onnxruntime refused them. */
  private runOn(s: BindingSession): RunOutputs | null {
    try {
      return s.run(this.feeds, this.fetches) as RunOutputs;
    } catch {
      return null;
    }
  }

  /** The onnxruntime tensor of input `k` holding `t`: the one made at an earlier call when `t` is the tensor kept then. */
  private fed(k: number, t: Tensor): object {
    if (this.fedTensors[k] === t) return this.fedOrt[k]!;
    const o = ortTensor(this.T!, t);
    if (sizeOf(t.shape) <= KEEP_FED_ELEMENTS) {
      this.fedTensors[k] = t;
      this.fedOrt[k] = o;
    }
    return o;
  }

  /**
   * Makes the sessions (once): `many` with onnxruntime's default threads (STAGECRAFT_THREADS'
   * count where set), `one` with one thread where that differs and the model is small enough
   * for a second copy; `many` stays null, with the reason kept, where onnxruntime cannot take the model.
   */
  private open(): void {
    this.opened = true;
    const rt = syncRuntime();
    if (rt === null) {
      this.stats.nativeOff = "onnxruntime-node is not installed";
      return;
    }
    const configured = config.threads !== undefined && config.threads !== "";
    const threads = configuredThreads();
    const options = nativeSessionOptions(hasFloat64(this.proto), threads, configured);
    const load = (o: object): BindingSession => {
      const s = new rt.Session();
      const b = this.bytes;
      s.loadModel(b.buffer, b.byteOffset, b.byteLength, o);
      return s;
    };
    try {
      this.many = load(options.many);
    } catch (e) {
      this.stats.nativeOff = `onnxruntime could not load the model: ${(e as Error).message.split("\n")[0]}`;
      return;
    }
    this.T = rt.Tensor;
    if (options.one !== null && this.bytes.byteLength <= DUAL_MAX_BYTES) {
      try {
        this.one = load(options.one);
      } catch {
        this.one = null;
      }
    }
  }

  private retire(why: string): void {
    this.stats.nativeOff = why;
    this.many?.dispose();
    this.one?.dispose();
    this.many = this.one = null;
  }
}

/**
 * The options of the two sessions (exported for tests): `many` is onnxruntime's own defaults, as
 * InferenceSession.create gives them (its thread count, or STAGECRAFT_THREADS' where set; helpers
 * that spin between the tasks of a call), plus `session.force_spinning_stop`: at the end of each
 * run the helpers stop spinning and sleep, where the default lets them spin on (measured: 25-48
 * ms of CPU in the 300 ms after a PP-OCR cls call, against 0.3-2 ms with the stop). So within a
 * call the session is the very configuration of onnxruntime's default session, and after it
 * nothing of it takes the core the caller (a one-thread call, our own kernels) needs next.
 * Helpers that never spin (allow_spinning 0, what this session had before) made two threads
 * slower than one on PP-OCRv4 rec on a quiet machine, where onnxruntime's spinning default was
 * 1.3x faster than one thread. `one` has one thread (no helpers to spin), null where `many` has
 * one already (STAGECRAFT_THREADS=1, one core). Both at the basic optimization level for models
 * with float64 values: onnxruntime's extended fusions write float64 constants as float32
 * attributes (engine.ts hasFloat64), and the graph keeps double exact.
 */
export function nativeSessionOptions(float64: boolean, threads: number, configured: boolean): { many: object; one: object | null } {
  const base = { executionProviders: ["cpu"], logSeverityLevel: 3, ...(float64 ? { graphOptimizationLevel: "basic" } : {}) };
  const many = { ...base, ...(threads <= 1 ? { intraOpNumThreads: 1 } : configured ? { intraOpNumThreads: threads } : {}), extra: { session: { force_spinning_stop: "1" } } };
  const one = threads <= 1 ? null : { ...base, intraOpNumThreads: 1, extra: { session: { intra_op: { allow_spinning: "0" } } } };
  return { many, one };
}

/** Whether two runs' outputs hold the same bits (dtype, dims and every element; NaN as NaN). */
function sameBits(a: RunOutputs, b: RunOutputs | null, outputs: readonly OnnxValueInfo[]): boolean {
  if (b === null) return false;
  for (const o of outputs) {
    const x = a[o.name], y = b[o.name];
    if (x === undefined || y === undefined || x.type !== y.type || x.dims.length !== y.dims.length) return false;
    for (let i = 0; i < x.dims.length; i++) if (x.dims[i] !== y.dims[i]) return false;
    const p = x.data as ArrayLike<unknown>, q = y.data as ArrayLike<unknown>;
    if (p.length !== q.length) return false;
    if (ArrayBuffer.isView(p) && ArrayBuffer.isView(q)) {
      // (bytes, not values: -0 and 0 differ, and a NaN equals itself)
      const u = new Uint8Array(p.buffer, p.byteOffset, p.byteLength), v = new Uint8Array(q.buffer, q.byteOffset, q.byteLength);
      if (u.length !== v.length) return false;
      for (let i = 0; i < u.length; i++) if (u[i] !== v[i]) return false;
    } else {
      for (let i = 0; i < p.length; i++) if (!Object.is(p[i], q[i])) return false;
    }
  }
  return true;
}

/** The output types of a traced signature, when its outputs are the graph's tensors in order. */
function expectedOutputs(cf: ConcreteFunction, n: number): Expected {
  const t = cf.outputTemplate;
  if (!Array.isArray(t) || t.length !== n) return null;
  const out: { dtype: string; shape: readonly number[] }[] = [];
  for (const leaf of t) {
    if (!(leaf instanceof OutputLeaf)) return null;
    const type = cf.graph.outputs[leaf.index]?.type;
    if (type === undefined) return null;
    out.push(type);
  }
  return out;
}

/** Whether a shape fits a traced one (unknown dims, -1, fit any). */
function fits(shape: readonly number[], traced: readonly number[]): boolean {
  if (shape.length !== traced.length) return false;
  for (let i = 0; i < shape.length; i++) if (traced[i]! >= 0 && traced[i] !== shape[i]) return false;
  return true;
}

/** Why no call of this model can run on a native session (null: calls may). */
function whyNever(proto: ModelProto, inputs: readonly OnnxValueInfo[], outputs: readonly OnnxValueInfo[]): string | null {
  const g = proto.graph!;
  const odd = [...inputs, ...outputs].find((v) => v.kind !== "tensor");
  if (odd !== undefined) return `${JSON.stringify(odd.name)} is a ${odd.kind}`;
  if (g.initializer.some((t) => t.data_location === 1)) return "the model has external data";
  if (hasOp(g, proto, (n) => n.op_type === "Loop")) return "the model has a Loop (its iteration and time limits are the graph's)";
  const off = (n: NodeProto) => ORT_DIFFERS.has(n.op_type) || (n.op_type === "Pad" && n.attribute.some((a) => a.name === "mode" && bytesText(a.s) === "wrap"));
  if (hasOp(g, proto, off)) return "the model has an op whose onnxruntime 1.30 kernel differs from the ONNX reference (MaxUnpool, DFT, STFT, Pad wrap): the graph's answer is the spec's";
  return null;
}

/**
 * Ops whose onnxruntime 1.30 CPU kernels fail the ONNX reference cases our graph passes
 * (test/onnx/conformance.test.ts run on the session: MaxUnpool with output_shape puts values
 * where the reference has 0; DFT and STFT off by up to 1.6e-4; Pad "wrap" with pads longer
 * than the axis wraps otherwise: conformance-lowerings.test.ts). Models with them stay on the graph.
 */
const ORT_DIFFERS = new Set(["MaxUnpool", "DFT", "STFT"]);

function bytesText(b: Uint8Array | string | undefined): string {
  return b === undefined ? "" : typeof b === "string" ? b : new TextDecoder().decode(b);
}

/** Whether the graph, its subgraphs or the model's functions (and theirs) have a node `is` picks (standard domain). */
function hasOp(g: GraphProto, proto: ModelProto, is: (n: NodeProto) => boolean): boolean {
  const standard = (n: NodeProto) => STANDARD_DOMAINS.has(n.domain ?? "") && is(n);
  return someNode(g.node, standard) || proto.functions.some((f) => someNode(f.node, standard));
}

/** Whether the model declares float64 values (initializers, inputs, outputs, value_info, Cast to double, Constants). */
function hasFloat64(proto: ModelProto): boolean {
  const graphs = [proto.graph!];
  for (let i = 0; i < graphs.length; i++) {
    const g = graphs[i]!;
    if (g.initializer.some((t) => t.data_type === DOUBLE)) return true;
    if ([...g.input, ...g.output, ...g.value_info].some((v) => v.type?.tensor_type?.elem_type === DOUBLE)) return true;
    for (const n of g.node) {
      for (const a of n.attribute) if ((a.name === "to" && Number(a.i) === DOUBLE) || a.t?.data_type === DOUBLE) return true;
      graphs.push(...subgraphsOf(n));
    }
  }
  return false;
}
