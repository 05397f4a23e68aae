/**
 * `await sc.remote.device(name, fn)`: `fn` (a staged function, or a plain one, which is staged)
 * as an async function that runs on a worker's device. A call traces `fn` here as usual (one
 * concrete function per input signature, its inputSignature and reduceRetracing as for local
 * calls: remote handles trace as tensors of their type), sends
 * that graph once in the S-expression form with the values of the variables it uses and of the
 * tensors it captured (the worker keeps them: later calls update the worker's variables, not
 * these), then calls it by name. Arguments may be local tensors (sent, or uploaded in chunks
 * when large) or RemoteTensors of the same worker (not copied); results stay on the worker as
 * RemoteTensors. Graphs that run JavaScript when they run are refused before anything is sent.
 *
 * Graph AD crosses the call when the gradient is in the graph: `sc.stage(sc.valueAndGrad(loss))`
 * builds the gradient here and sends it as part of the graph. The tape does not record remote
 * calls: a GradientTape around one sees nothing.
 */
import { isTracing } from "../core/context.js";
import { userLocation, ValueError, type SourceLocation } from "../core/errors.js";
import { Tensor } from "../core/tensor.js";
import { Variable } from "../core/variable.js";
import { isPlainObject } from "../core/objects.js";
import { mapStructure } from "../core/structure.js";
import { stage, type StagedFunction } from "../staging/stage.js";
import { HOST_DEVICE } from "../core/device.js";
import { OutputLeaf, type ConcreteFunction } from "../staging/concrete-function.js";
import type { CaptureInit, TensorRef, VariableInit } from "./proto.js";
import { RemoteError, RemoteUnsupportedError } from "./errors.js";
import { RemoteTensor } from "./handle.js";
import { remoteTarget } from "./cluster.js";
import type { WorkerConnection } from "./connection.js";
import { firstHostNode, graphVariables } from "./graph-checks.js";

/** Local tensors become handles' specs too: the trace is keyed by type alone. */
type RemoteArgs<A extends unknown[]> = { [K in keyof A]: A[K] extends Tensor ? Tensor | RemoteTensor : A[K] };
/** What a remote call returns: the function's result with every tensor a RemoteTensor. */
export type RemoteResult<R> = R extends Tensor ? RemoteTensor : R extends readonly unknown[] ? { [K in keyof R]: RemoteResult<R[K]> } : R extends object ? { [K in keyof R]: RemoteResult<R[K]> } : R;

export interface RemoteFunction<A extends unknown[], R> {
  (...args: RemoteArgs<A>): Promise<RemoteResult<R>>;
  /** The remote device it runs on. */
  readonly device: string;
  /** The local variables its registered graphs use, whose worker copies its calls update. */
  readonly variables: Variable[];
  /** The worker's current values of those variables, as local tensors. */
  readVariables(): Promise<Map<Variable, Tensor>>;
}

let nextName = 1;

export async function device<A extends unknown[], R>(name: string, fn: StagedFunction<A, R> | ((...args: A) => R)): Promise<RemoteFunction<A, R>> {
  const api = "remote.device";
  const target = remoteTarget(name, api);
  if (typeof fn !== "function") throw new ValueError(`expected a function to run on ${name}, got ${typeof fn}`, api);
  const staged: StagedFunction<A, R> = "concrete" in fn && typeof fn.concrete === "function" ? (fn as StagedFunction<A, R>) : stage(fn as (...args: A) => R);
  const { connection } = target;
  const registered = new Map<ConcreteFunction, Promise<string>>();
  const variables = new Map<number, Variable>();

  const call = async (...args: RemoteArgs<A>): Promise<RemoteResult<R>> => {
    const loc = userLocation();
    if (isTracing()) throw new ValueError(`a remote function (on ${target.name}) cannot be called while a function is being staged: its call is asynchronous`, api, loc);
    const flat: (Tensor | RemoteTensor)[] = [];
    const standIns = args.map((a) => asStandIns(a, flat, connection, loc));
    const cf = staged.concrete(...(standIns as A));
    if (cf.numArgInputs !== flat.length) throw new ValueError(`${staged.stagedName} traced with ${cf.numArgInputs} tensor inputs, but the call passes ${flat.length} tensors`, api, loc);
    let pending = registered.get(cf);
    if (pending === undefined) {
      registered.set(cf, (pending = register(connection, cf, variables, loc)));
      pending.catch(() => registered.delete(cf));
    }
    const fnName = await pending;
    const budget = { bytes: connection.inlineBytes };
    // (inputs uploaded for this call only: the worker frees them when the call is done)
    const uploaded: number[] = [];
    const inputs: TensorRef[] = [];
    let reply;
    try {
      for (const x of flat) inputs.push(x instanceof RemoteTensor ? { handle: x.handle } : await connection.refOf(x, budget, uploaded, loc));
      reply = await connection.unary("call", { session: connection.session, name: fnName, device: target.device, inputs, release: uploaded }, `Call ${fnName}`, loc);
    } catch (e) {
      // (a call the worker never read leaves its uploads there; freeing a freed handle does nothing)
      connection.release(uploaded, loc).catch(() => {});
      throw e;
    }
    const handles = reply.outputs.map((o) => new RemoteTensor(connection, o.handle, o.dtype as Tensor["dtype"], o.shape, target.name));
    return mapStructure(cf.outputTemplate, (leaf) => (leaf instanceof OutputLeaf ? handles[leaf.index] : leaf.value)) as RemoteResult<R>;
  };

  const readVariables = async (): Promise<Map<Variable, Tensor>> => {
    const loc = userLocation();
    const vars = [...variables.values()];
    const out = new Map<Variable, Tensor>();
    if (vars.length === 0) return out;
    const reply = await connection.unary("readVariables", { session: connection.session, ids: vars.map((v) => v.variableId) }, "ReadVariables", loc);
    try {
      for (const [i, o] of reply.outputs.entries()) out.set(vars[i]!, await connection.fetch(o.handle, "Fetch", loc));
    } finally {
      await connection.release(
        reply.outputs.map((o) => o.handle),
        loc,
      ).catch(() => {});
    }
    return out;
  };

  Object.defineProperty(call, "device", { value: target.name });
  Object.defineProperty(call, "variables", { get: () => [...variables.values()] });
  Object.defineProperty(call, "readVariables", { value: readVariables });
  return call as unknown as RemoteFunction<A, R>;
}

/**
 * `x` with its remote tensors replaced by stand-ins of their types, for tracing (tensors with no
 * storage: tracing replaces them by placeholders; reading one would be a SymbolicValueError, never
 * a wrong value); the tensors and remote tensors collected in `flat` in the order the trace's
 * signature walks them (staging/signature.ts), which is the graph's inputs' order.
 */
function asStandIns(x: unknown, flat: (Tensor | RemoteTensor)[], connection: WorkerConnection, loc: SourceLocation | null): unknown {
  if (x instanceof RemoteTensor) {
    x.checkLive("Call");
    if (x.connection !== connection) {
      throw new RemoteError(`a tensor of worker ${x.connection.address} (${x.device}) was passed to a function of another worker: fetch it first`, connection.address, "Call", "LOCAL", loc);
    }
    flat.push(x);
    return new Tensor(null, x.shape.slice(), x.dtype, HOST_DEVICE);
  }
  if (x instanceof Variable) return x;
  if (x instanceof Tensor) {
    if (x.isSymbolic) throw new ValueError("a remote function takes concrete tensors, got a symbolic one", "remote.device", loc);
    flat.push(x);
    return x;
  }
  if (Array.isArray(x)) return x.map((v) => asStandIns(v, flat, connection, loc));
  if (isPlainObject(x)) return Object.fromEntries(Object.entries(x).map(([k, v]) => [k, asStandIns(v, flat, connection, loc)]));
  return x;
}

/** Sends concrete function `cf` to the worker (with the variables and captures it needs); returns its name there. */
export async function register(connection: WorkerConnection, cf: ConcreteFunction, variables: Map<number, Variable>, loc: SourceLocation | null, fnName?: string): Promise<string> {
  const host = firstHostNode(cf.graph, cf.library);
  if (host) {
    throw new RemoteUnsupportedError(
      `${cf.name} has a ${host.op} node, which runs JavaScript in this process when the graph runs: a worker cannot run it (stage the function without it)`,
      connection.address,
      "Register",
      "LOCAL",
      host.loc ?? loc,
    );
  }
  const name = fnName ?? `${cf.name}_${nextName++}`;
  const budget = { bytes: connection.inlineBytes };
  // (values uploaded for the registration only: the worker frees them when it is done)
  const uploaded: number[] = [];
  try {
    const used = graphVariables(cf.graph, cf.library);
    for (const c of cf.captures) if (c.variable && !used.includes(c.variable)) used.push(c.variable);
    const inits: VariableInit[] = [];
    for (const v of used) {
      if (connection.knownVariables.has(v.variableId)) continue;
      inits.push({ id: v.variableId, name: v.name, trainable: v.trainable, value: await connection.refOf(v.storedValue, budget, uploaded, loc) });
    }
    const captures: CaptureInit[] = [];
    for (const c of cf.captures) captures.push(c.variable ? { variable: c.variable.variableId } : { value: await connection.refOf(c.tensor, budget, uploaded, loc) });
    await connection.unary(
      "register",
      { session: connection.session, name, sexpr: cf.toSExpr(), numArgInputs: cf.numArgInputs, variables: inits, captures, release: uploaded },
      `Register ${name}`,
      loc,
    );
    for (const v of used) {
      connection.knownVariables.add(v.variableId);
      variables.set(v.variableId, v);
    }
    return name;
  } catch (e) {
    // (uploads of a registration that failed before it was sent)
    connection.release(uploaded, loc).catch(() => {});
    throw e;
  }
}
