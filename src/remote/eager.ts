/**
 * Ops placed on a remote device one at a time (the TF-Eager paper's remote eager execution):
 * inside `sc.device("/job:worker/task:0/device:cpu:0", () => ...)`, and for any op whose inputs
 * live there, an eager op is sent to the worker as a one-op graph function. The function is
 * registered once per signature (op, attributes, input dtypes and shapes) and kept on the worker,
 * so a repeated op costs one Call. Its outputs are tensors of the remote device whose dtype and
 * shape are known here at once (the op's shape rule) and whose storage stays on the worker:
 * `await t.data()` fetches it, `t.dispose()` frees it there (and so does the garbage collector).
 *
 * Calls are asynchronous and an op returns before the worker ran it: an output's handle is a
 * promise, which the ops that take it await, so a chain of ops needs no ordering but its data
 * dependencies. A failure on the worker rejects the failed op's outputs and everything computed
 * from them: reading one throws the op's RemoteError (with the user's line of the op), and
 * `await sc.remote.sync()` throws the first failure since the last sync.
 *
 * Local inputs are sent with the call (a snapshot of their values when the op was made); the tape
 * records remote ops like any other, and their backward ops, whose inputs live on the worker, run
 * there too (nothing is fetched for a gradient but what the user reads).
 */
import { recorders } from "../core/context.js";
import { device as onDevice, enableRemotePlacement, HOST_DEVICE } from "../core/device.js";
import { userLocation, type SourceLocation } from "../core/errors.js";
import { Tensor, type DeviceBuffer } from "../core/tensor.js";
import type { TypedArray } from "../core/dtype.js";
import { applyOp, setRemoteOpRunner, type OpDef } from "../ops/registry.js";
import { stage } from "../staging/stage.js";
import { setRemoteCaller, type ConcreteFunction } from "../staging/concrete-function.js";
import type { HandleInfo, TensorRef, VariableInit } from "./proto.js";
import { tensorFromBytes } from "./wire.js";
import { RemoteError, RemoteUnavailableError, RemoteUnsupportedError } from "./errors.js";
import { remoteTarget } from "./cluster.js";
import type { WorkerConnection } from "./connection.js";
import { allNodes, firstHostNode, graphVariables } from "./graph-checks.js";
import { Variable } from "../core/variable.js";
import type { RemoteTensor } from "./handle.js";

const NO_INLINE: Promise<TypedArray | null> = Promise.resolve(null);

/**
 * Outputs of a remote eager call of at most this many bytes come back with the reply (besides
 * staying on the worker): reading one (a loss, a small result) costs no second round trip.
 */
export const INLINE_REPLY_BYTES = 8192;

/** The storage of a tensor on a worker: its handle there (once the op that makes it ran). */
export class RemoteBuffer implements DeviceBuffer {
  private value: TypedArray | null = null;
  private reading: Promise<TypedArray> | null = null;
  private disposed = false;

  constructor(
    readonly connection: WorkerConnection,
    /** The handle this client named for it on the worker. */
    readonly id: number,
    /** Resolves (to `id`) once the call that makes it returned, or rejects with its failure. */
    readonly handle: Promise<number>,
    /** Resolves once the call that makes it was sent (a call reading it may be sent then), or rejects with why it was not. */
    readonly sent: Promise<void>,
    private readonly loc: SourceLocation | null,
    /** The value the call's reply carried (small outputs), or null: then a read fetches it. */
    private readonly inline: Promise<TypedArray | null> = NO_INLINE,
    /** The RemoteTensor whose handle this is (RemoteTensor.asTensor): kept alive by it, never freed by it. */
    private readonly owner: RemoteTensor | null = null,
  ) {}

  read(): Promise<TypedArray> {
    if (this.disposed) return Promise.reject(new RemoteError("the remote tensor was disposed", this.connection.address, "Fetch", "LOCAL", userLocation()));
    if (this.reading === null) {
      const loc = userLocation() ?? this.loc;
      this.reading = this.inline.then((v) => v ?? this.handle.then((h) => this.connection.fetch(h, "Fetch", loc)).then((t) => t.dataSync())).then((v) => (this.value = v));
    }
    return this.reading;
  }

  readSync(): TypedArray | null {
    return this.value;
  }

  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    this.value = null;
    if (this.owner !== null) return; // (the RemoteTensor's handle: its dispose frees it)
    collected.unregister(this);
    // (once its call returned, failed or not: a failed one leaves a mark on the worker that this
    // clears; freed with the next call to this worker, or by a Release of its own soon after)
    const release = () => this.connection.releaseSoon(this.id);
    track(this.connection, this.handle.then(release, release));
  }

  /** @internal Checks that it may be a call's input (an error when disposed). */
  inputOf(what: string, loc: SourceLocation | null): RemoteBuffer {
    if (this.disposed || this.owner?.isDisposed) throw new RemoteError(`an input is a remote tensor that was disposed`, this.connection.address, what, "LOCAL", loc);
    return this;
  }
}

/**
 * `rt` (a result of an `sc.remote.device` function) as an `sc.Tensor` of its remote device, so
 * that eager ops take it (they run there, as for any input that lives there): the same handle on
 * the worker, nothing copied. It holds `rt`, and `rt.dispose()` frees the storage of both;
 * disposing the tensor frees nothing.
 */
export function tensorOfRemote(rt: RemoteTensor): Tensor {
  rt.checkLive("asTensor");
  const out = new Tensor(null, rt.shape.slice(), rt.dtype, rt.device);
  out._buffer = new RemoteBuffer(rt.connection, rt.handle, Promise.resolve(rt.handle), Promise.resolve(), userLocation(), NO_INLINE, rt);
  return out;
}

const collected = new FinalizationRegistry<{ connection: WorkerConnection; id: number; handle: Promise<number> }>(({ connection, id, handle }) => {
  const release = () => connection.releaseLater(id);
  handle.then(release, release);
});

/** Whether `t` lives on a worker (made by a remote op). */
export function isRemoteTensor(t: Tensor): boolean {
  return t._buffer instanceof RemoteBuffer;
}

/** Work in flight per connection, and the first failure not yet reported by sync() (later ones are mostly its consequences). */
const pending = new Map<WorkerConnection, Set<Promise<unknown>>>();
const failures = new Map<WorkerConnection, unknown>();

function track(connection: WorkerConnection, p: Promise<unknown>): void {
  let set = pending.get(connection);
  if (set === undefined) pending.set(connection, (set = new Set()));
  set.add(p);
  p.then(
    () => set.delete(p),
    (e) => {
      set.delete(p);
      if (!failures.has(connection)) failures.set(connection, e);
    },
  );
}

/**
 * Waits until every remote op and release sent so far to the task of `deviceName` (default: every
 * connected task) is done; throws the first failure among them since the last sync.
 */
export async function sync(deviceName?: string): Promise<void> {
  const conns = deviceName === undefined ? [...pending.keys()] : [remoteTarget(deviceName, "remote.sync").connection];
  for (const c of conns) {
    for (;;) {
      const set = pending.get(c);
      if (set === undefined || set.size === 0) break;
      await Promise.allSettled([...set]);
    }
  }
  for (const c of conns) {
    if (failures.has(c)) {
      const f = failures.get(c);
      failures.delete(c);
      throw f;
    }
  }
}

/** One registered one-op function: its name on the worker (once registered). */
interface OpEntry extends Registered {
  captures: number;
}

/** Per connection: one-op functions by signature. */
const opFunctions = new WeakMap<WorkerConnection, Map<string, OpEntry>>();

/** A stable text for an attribute value, or null when it holds something that has no such text (a function, a tensor, a class instance). */
function attrKey(v: unknown): string | null {
  if (v === null) return "null";
  switch (typeof v) {
    case "undefined":
      return "u";
    case "number":
      return Object.is(v, -0) ? "-0" : String(v);
    case "boolean":
      return v ? "T" : "F";
    case "string":
      return JSON.stringify(v);
    case "bigint":
      return `${v}n`;
    case "object":
      break;
    default:
      return null;
  }
  if (Array.isArray(v)) {
    const parts: string[] = [];
    for (const x of v) {
      const k = attrKey(x);
      if (k === null) return null;
      parts.push(k);
    }
    return `[${parts.join(",")}]`;
  }
  if (ArrayBuffer.isView(v) && !(v instanceof DataView)) return `${v.constructor.name}(${Array.from(v as unknown as ArrayLike<number>, (x) => attrKey(x)).join(",")})`;
  const proto = Object.getPrototypeOf(v);
  if (proto !== Object.prototype && proto !== null) return null;
  const parts: string[] = [];
  for (const k of Object.keys(v).sort()) {
    const s = attrKey((v as Record<string, unknown>)[k]);
    if (s === null) return null;
    parts.push(`${JSON.stringify(k)}:${s}`);
  }
  return `{${parts.join(",")}}`;
}

/** The op's signature: name, attributes, input types (null: not cacheable). */
function signatureOf(def: OpDef, inputs: Tensor[], attrs: unknown): string | null {
  const a = attrKey(attrs);
  if (a === null) return null;
  let s = `${def.name}|${a}`;
  for (const x of inputs) s += `|${x.dtype}[${x.shape.join(",")}]`;
  return s;
}

/** The one-op graph function of `def` on inputs of these types (traced here, with no tape watching). */
function oneOpFunction(def: OpDef, inputs: Tensor[], attrs: unknown): ConcreteFunction {
  const standIns = inputs.map((x) => new Tensor(null, x.shape.slice(), x.dtype, HOST_DEVICE));
  const f = stage((...xs: Tensor[]) => applyOp(def, xs, attrs), { name: def.name });
  const saved = recorders.splice(0, recorders.length);
  try {
    return onDevice(HOST_DEVICE, () => f.concrete(...standIns));
  } finally {
    recorders.push(...saved);
  }
}

let nextOpName = 1;

/** The op that reads a variable's value (ops/variable ops): the one variable node a remote eager call may have. */
const READ_VARIABLE = "readVariable";

/**
 * Registers `cf` on the worker with its captures as trailing arguments (their values are sent with
 * each call, read when the call is made). The variables its graph reads become the function's own
 * variables there, set from their local values at each call: never a copy the worker kept, and
 * never the session's variables of sc.remote.device functions. A graph that assigns a variable is
 * refused (its update would be made on the worker, lost to the local variable): that is
 * sc.remote.device's job, whose worker keeps the variables.
 */
function registerFlat(connection: WorkerConnection, deviceName: string, cf: ConcreteFunction, name: string, what: string, loc: SourceLocation | null): Registered {
  const host = firstHostNode(cf.graph, cf.library);
  if (host) {
    throw new RemoteUnsupportedError(`${what} has a ${host.op} node, which runs JavaScript of this process: it cannot run on ${deviceName} (a worker has no such JavaScript)`, connection.address, what, "LOCAL", host.loc ?? loc);
  }
  for (const n of allNodes(cf.graph, cf.library)) {
    if (n.op === READ_VARIABLE) continue;
    const v = Object.values(n.attrs ?? {}).find((a): a is Variable => a instanceof Variable);
    if (v !== undefined) {
      throw new RemoteUnsupportedError(
        `${what} has a ${n.op} node on variable ${v.name}: placed one call at a time on ${deviceName}, the update would be lost to the local variable; run it with sc.remote.device (the worker keeps the variables)`,
        connection.address,
        what,
        "LOCAL",
        n.loc ?? loc,
      );
    }
  }
  for (const v of cf.graph.outputs) {
    if (v.type.shape.some((d) => d < 0)) {
      throw new RemoteUnsupportedError(`${what}'s output shape depends on its values ([${v.type.shape.map((d) => (d < 0 ? "?" : d)).join(", ")}]): its type must be known when the call is made`, connection.address, what, "LOCAL", loc);
    }
  }
  const variables = graphVariables(cf.graph, cf.library);
  const ready = (async () => {
    const budget = { bytes: connection.inlineBytes };
    const uploaded: number[] = [];
    try {
      const boundVariables: VariableInit[] = [];
      for (const v of variables) boundVariables.push({ id: v.variableId, name: v.name, trainable: v.trainable, value: await connection.refOf(v.storedValue, budget, uploaded, loc) });
      await connection.unary(
        "register",
        { session: connection.session, name, sexpr: cf.toSExpr(), numArgInputs: cf.graph.inputs.length, variables: [], captures: [], boundVariables, release: uploaded },
        `Register ${name} for ${what}`,
        loc,
      );
      return name;
    } catch (e) {
      connection.release(uploaded, loc).catch(() => {});
      throw e;
    }
  })();
  return { name: ready, variables };
}

/** A function registered on a worker: its name there (once registered), and the variables each call sends the values of. */
interface Registered {
  name: Promise<string>;
  variables: Variable[];
}

/** Calls registered function `fnName` on `inputs` (remote tensors by handle, local ones sent); its outputs, of `types`, stay there. */
function callOnWorker(
  connection: WorkerConnection,
  target: { device: string; name: string },
  fn: Registered,
  inputs: Tensor[],
  types: readonly { dtype: Tensor["dtype"]; shape: readonly number[] }[],
  what: string,
  loc: SourceLocation | null,
): Tensor[] {
  for (const x of inputs) {
    if (x._buffer instanceof RemoteBuffer && x._buffer.connection !== connection) {
      throw new RemoteError(`an input of ${what} lives on worker ${x._buffer.connection.address} (${x.device}), not on ${target.name}: fetch it first`, connection.address, what, "LOCAL", loc);
    }
  }
  // (local inputs are sent as they are now: a snapshot, as a kernel would have read them now)
  const snapshot = (x: Tensor): RemoteBuffer | Tensor =>
    x._buffer instanceof RemoteBuffer ? x._buffer.inputOf(what, loc) : x._data !== null ? new Tensor(x._data.slice(), x.shape.slice(), x.dtype) : x;
  const refs = inputs.map(snapshot);
  const variableRefs = fn.variables.map((v) => snapshot(v.storedValue));
  // The outputs' handles are named here, so that an op on them can be sent before this call's
  // reply came: a chain of ops is sent without waiting a round trip per op (the worker waits
  // for an input an earlier call is making).
  const ids = types.map(() => connection.clientHandle());
  let markSent!: () => void;
  let notSent!: (e: unknown) => void;
  const sent = new Promise<void>((resolve, reject) => ((markSent = resolve), (notSent = reject)));
  sent.catch(() => {});
  const handles = (async (): Promise<HandleInfo[]> => {
    const name = await fn.name;
    const budget = { bytes: connection.inlineBytes };
    const uploaded: number[] = [];
    const sentRefs: TensorRef[] = [];
    const variableValues: TensorRef[] = [];
    const remoteInputs: RemoteBuffer[] = [];
    const refOf = async (r: RemoteBuffer | Tensor): Promise<TensorRef> => {
      if (r instanceof Tensor) return connection.refOf(r, budget, uploaded, loc);
      // (sent after the call that makes it, which the worker then runs first, or waits for)
      await r.sent;
      remoteInputs.push(r);
      return { handle: r.id };
    };
    try {
      for (const r of refs) sentRefs.push(await refOf(r));
      for (const r of variableRefs) variableValues.push(await refOf(r));
    } catch (e) {
      connection.release(uploaded, loc).catch(() => {});
      throw e;
    }
    const { release, done } = connection.takeReleases(uploaded);
    const reply = connection.unary(
      "call",
      { session: connection.session, name, device: target.device, inputs: sentRefs, variableValues, release, inlineReplyBytes: INLINE_REPLY_BYTES, outputHandles: ids },
      what,
      loc,
    );
    markSent();
    reply.then(
      () => done(null),
      (e) => done(e),
    );
    // (an input's own failure is this op's: what it was computed from failed first)
    for (const r of remoteInputs) {
      try {
        await r.handle;
      } catch (e) {
        await reply.catch(() => {});
        throw e;
      }
    }
    return (await reply).outputs;
  })();
  handles.catch(notSent);
  track(connection, handles);
  return types.map((t, i) => {
    const info = handles.then((hs) => hs[i]!);
    const handle = info.then((o) => {
      if (o.handle !== ids[i]) throw new RemoteUnavailableError(`the worker answered handle ${o.handle} for an output it was asked to name ${ids[i]}`, connection.address, what, "LOCAL", loc);
      return o.handle;
    });
    handle.catch(() => {});
    const inline = info.then((o) => inlineValue(connection, o, t, what, loc));
    inline.catch(() => {});
    const out = new Tensor(null, t.shape.slice(), t.dtype, target.name);
    const buffer = new RemoteBuffer(connection, ids[i]!, handle, sent, loc, inline);
    out._buffer = buffer;
    collected.register(out, { connection, id: ids[i]!, handle }, buffer);
    return out;
  });
}

function inlineValue(connection: WorkerConnection, info: HandleInfo, t: { dtype: Tensor["dtype"]; shape: readonly number[] }, what: string, loc: SourceLocation | null): TypedArray | null {
  const v = info.value;
  if (v === null || v === undefined) return null;
  let got: Tensor;
  try {
    got = tensorFromBytes(v.dtype, v.shape, v.data ?? new Uint8Array(0), { maxTensorElements: Infinity, maxTensorBytes: Infinity });
  } catch (e) {
    throw new RemoteUnavailableError(`the worker sent a malformed value for an output of ${what}: ${(e as Error).message}`, connection.address, what, "LOCAL", loc);
  }
  if (got.dtype !== t.dtype || got.shape.length !== t.shape.length || got.shape.some((d, j) => d !== t.shape[j])) {
    throw new RemoteError(`the worker sent a ${got.dtype}[${got.shape.join(", ")}] value for an output of ${what} that is ${t.dtype}[${t.shape.join(", ")}]`, connection.address, what, "LOCAL", loc);
  }
  return got.dataSync();
}

function runRemote(def: OpDef, inputs: Tensor[], attrs: unknown, deviceName: string): Tensor[] {
  const loc = userLocation();
  const target = remoteTarget(deviceName, def.name);
  const { connection } = target;
  const what = `op ${def.name}`;
  if (def.family === "host") {
    throw new RemoteUnsupportedError(
      `${def.name} runs JavaScript of this process, which a worker cannot run: it cannot be placed on ${target.name} (run it outside the remote device block, on fetched values)`,
      connection.address,
      what,
      "LOCAL",
      loc,
    );
  }
  const types = def.infer(inputs, attrs);
  for (const t of types) {
    if (t.shape.some((d) => d < 0)) {
      throw new RemoteUnsupportedError(`${def.name}'s output shape depends on its values ([${t.shape.map((d) => (d < 0 ? "?" : d)).join(", ")}]): it cannot be placed on ${target.name} one op at a time (stage the function that uses it)`, connection.address, what, "LOCAL", loc);
    }
  }
  let byKey = opFunctions.get(connection);
  if (byKey === undefined) opFunctions.set(connection, (byKey = new Map()));
  let key = signatureOf(def, inputs, attrs);
  let entry = key === null ? undefined : byKey.get(key);
  let captures: Tensor[] = [];
  if (entry === undefined) {
    const cf = oneOpFunction(def, inputs, attrs);
    captures = cf.captureValues();
    // (attributes with no stable text, an object's identity say, are keyed by the graph they make:
    // traced each time, registered once)
    if (key === null && captures.length === 0) {
      key = `graph|${cf.toSExpr()}`;
      entry = byKey.get(key);
    }
    if (entry === undefined) {
      entry = { ...registerFlat(connection, target.name, cf, `op_${def.name}_${nextOpName++}`, what, loc), captures: cf.captures.length };
      // (a function with captures is not cached: its captured values belong to this op's attributes' objects)
      if (key !== null && entry.captures === 0) {
        byKey.set(key, entry);
        const k = key;
        const m = byKey;
        entry.name.catch(() => m.delete(k));
      }
    }
  }
  return callOnWorker(connection, target, entry, captures.length > 0 ? [...inputs, ...captures] : inputs, types, what, loc);
}

/** Registered staged functions per connection. */
const stagedFunctions = new WeakMap<WorkerConnection, WeakMap<ConcreteFunction, Registered>>();

/** An eager call of a staged function placed on a remote device: one Call of its graph there (registered once). */
function callRemote(cf: ConcreteFunction, args: Tensor[], deviceName: string): Tensor[] {
  const loc = userLocation();
  const what = `Call ${cf.name}`;
  const target = remoteTarget(deviceName, what);
  const { connection } = target;
  let byFn = stagedFunctions.get(connection);
  if (byFn === undefined) stagedFunctions.set(connection, (byFn = new WeakMap()));
  let fn = byFn.get(cf);
  if (fn === undefined) {
    byFn.set(cf, (fn = registerFlat(connection, target.name, cf, `${cf.name}_remote_${nextOpName++}`, what, loc)));
    const m = byFn;
    fn.name.catch(() => m.delete(cf));
  }
  return callOnWorker(connection, target, fn, [...args, ...cf.captureValues()], cf.graph.outputs.map((v) => v.type), what, loc);
}

/** Installs the runner: from now on ops may be placed on remote devices (sc.device) or follow their remote inputs there. */
export function installRemoteOps(): void {
  setRemoteOpRunner({ run: runRemote });
  setRemoteCaller(callRemote);
  enableRemotePlacement();
}
