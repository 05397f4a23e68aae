/**
 * The worker server (`stagecraft worker --listen host:port`): a gRPC service that keeps tensors
 * and variables for its clients' sessions, registers their functions from graphs in the
 * S-expression form (parsed and verified here, never evaluated as code), and runs them on its
 * devices. Security defaults: it listens on a loopback address unless a token or TLS is given;
 * with a token, every call must carry it (compared in constant time); every message, tensor and
 * session is size-limited (limits.ts).
 */
import type * as grpc from "@grpc/grpc-js";
import { loadGrpc } from "./grpc.js";
import { randomUUID } from "node:crypto";
import { StagecraftError, ValueError } from "../core/errors.js";
import { device, HOST_DEVICE, listDevices, resolveDevice } from "../core/device.js";
import { Variable } from "../core/variable.js";
import type { Tensor } from "../core/tensor.js";
import { checkOptions, optionKeys } from "../core/options.js";
import { parseSExpr } from "../graph/sexpr.js";
import { verifyGraph } from "../graph/verify.js";
import { ConcreteFunction } from "../staging/concrete-function.js";
import type { Capture } from "../staging/trace-context.js";
import { workerService, type CallRequest, type HandleInfo, type HandleRequest, type RegisterRequest, type StatsReply, type TensorChunk, type TensorRef } from "./proto.js";
import { grpcLength, isLoopback, splitAddress, tokenMatches, TOKEN_METADATA_KEY, workerLimits, type WorkerLimits } from "./limits.js";
import { ChunkAssembler, chunksOf, checkDeclared, tensorBytes, tensorFromBytes, WireCheckFailed } from "./wire.js";
import { bytesOf, CallFault, Session } from "./session.js";
import { firstHostNode, firstOversizeValue } from "./graph-checks.js";

export interface WorkerOptions extends Partial<WorkerLimits> {
  /** host:port to listen on (default "127.0.0.1:0": loopback, a free port). */
  listen?: string;
  /** A secret every call must carry (`connect({ token })`). */
  token?: string;
  /** TLS: the server's certificate chain and private key (PEM). */
  tlsCert?: string | Uint8Array;
  tlsKey?: string | Uint8Array;
}

const WORKER_OPTIONS = optionKeys<WorkerOptions>()("listen", "token", "tlsCert", "tlsKey", "maxMessageBytes", "maxTensorElements", "maxTensorBytes", "maxSessionBytes", "sessionTimeoutMs", "maxCallsInFlight", "inputWaitMs");

export interface Worker {
  /** The address it listens on, with the port chosen (port 0 asks for a free one). */
  readonly address: string;
  readonly port: number;
  readonly limits: WorkerLimits;
  /** What Stats reports, for the whole worker. */
  stats(): StatsReply;
  /** Stops listening and frees every session. */
  close(): Promise<void>;
}

/** Chunks of a streamed transfer leave room for their header under the message limit. */
export function chunkBytesFor(maxMessageBytes: number): number {
  return Math.max(512, Math.min(4 * 2 ** 20, maxMessageBytes - 512));
}

/** A failure as the gRPC status the client gets. */
function statusOf(e: unknown): Partial<grpc.StatusObject> {
  if (e instanceof CallFault) return { code: e.code, details: e.message };
  if (e instanceof WireCheckFailed) return { code: e.overLimit ? loadGrpc().status.RESOURCE_EXHAUSTED : loadGrpc().status.INVALID_ARGUMENT, details: e.message };
  if (e instanceof StagecraftError) return { code: loadGrpc().status.INVALID_ARGUMENT, details: `${e.name}: ${e.message}` };
  const err = e instanceof Error ? e : new Error(String(e));
  return { code: loadGrpc().status.INTERNAL, details: `${err.name}: ${err.message}` };
}

/** A call's deadline as milliseconds since the epoch (Infinity: none). */
function deadlineMs(d: grpc.Deadline): number {
  return d instanceof Date ? d.getTime() : Number.isFinite(d) ? d : Infinity;
}

/** Whether a concrete shape fits a graph input's (-1: any size). */
function shapeFits(shape: readonly number[], want: readonly number[]): boolean {
  return shape.length === want.length && shape.every((d, j) => want[j]! < 0 || want[j] === d);
}

function pastDeadline(d: grpc.Deadline): boolean {
  const t = d instanceof Date ? d.getTime() : d;
  return Number.isFinite(t) && t <= Date.now();
}

function toServiceError(s: Partial<grpc.StatusObject>): grpc.ServiceError {
  return Object.assign(new Error(s.details), { code: s.code, details: s.details, metadata: new (loadGrpc().Metadata)() }) as grpc.ServiceError;
}

export async function startWorker(options: WorkerOptions = {}): Promise<Worker> {
  checkOptions("remote.startWorker", options, WORKER_OPTIONS);
  const limits = workerLimits(options, "remote.startWorker");
  const listen = options.listen ?? "127.0.0.1:0";
  const { host } = splitAddress(listen, "remote.startWorker");
  const tls = options.tlsCert !== undefined || options.tlsKey !== undefined;
  if (tls && (options.tlsCert === undefined || options.tlsKey === undefined)) throw new ValueError("TLS needs both tlsCert and tlsKey", "remote.startWorker");
  const token = options.token;
  if (token !== undefined && (typeof token !== "string" || token.length === 0)) throw new ValueError("token must be a non-empty string", "remote.startWorker");
  if (!isLoopback(host) && token === undefined && !tls) {
    throw new ValueError(
      `refusing to listen on ${listen}, which is not a loopback address, without a token or TLS: anyone who can reach it could run graphs and read tensors (give --token, or --tls-cert and --tls-key)`,
      "remote.startWorker",
    );
  }

  const sessions = new Map<string, Session>();
  const sessionOf = (id: string | undefined): Session => {
    const s = sessions.get(id ?? "");
    if (s === undefined) throw new CallFault(loadGrpc().status.FAILED_PRECONDITION, `no session ${JSON.stringify(id)} on this worker (closed, or freed after ${limits.sessionTimeoutMs} ms without a call)`);
    s.lastSeen = Date.now();
    return s;
  };
  const authorized = (md: grpc.Metadata): boolean => {
    if (token === undefined) return true;
    const v = md.get(TOKEN_METADATA_KEY)[0];
    return tokenMatches(typeof v === "string" ? v : v?.toString("utf8"), token);
  };
  const denied = { code: loadGrpc().status.UNAUTHENTICATED, details: "this worker requires a token, and the call carried none or a wrong one" };

  /** A unary handler; `abandoned` undoes what a call made when its client stopped waiting (deadline, cancel) before the reply. */
  const unary =
    <Req, Res>(fn: (req: Req, deadline: number) => Res | Promise<Res>, abandoned?: (req: Req, res: Res) => void): grpc.handleUnaryCall<Req, Res> =>
    (call, callback) => {
      if (!authorized(call.metadata)) return callback(toServiceError(denied));
      Promise.resolve()
        .then(() => fn(call.request, deadlineMs(call.getDeadline())))
        .then(
          (r) => {
            // (a handler that ran past the deadline ran synchronously, before gRPC's timer could mark the call cancelled)
            if (call.cancelled || pastDeadline(call.getDeadline())) abandoned?.(call.request, r);
            callback(null, r);
          },
          (e) => callback(toServiceError(statusOf(e))),
        );
    };

  const tensorOfRef = (session: Session, ref: TensorRef | undefined, what: string): Tensor => {
    if (ref?.value) return tensorFromBytes(ref.value.dtype, ref.value.shape, ref.value.data ?? new Uint8Array(0), limits);
    if (ref?.handle) return session.get(ref.handle);
    throw new CallFault(loadGrpc().status.INVALID_ARGUMENT, `${what} is neither a tensor nor a handle`);
  };

  /** The function a registration describes: its graph parsed, verified and checked, its captures bound. */
  const build = (session: Session, req: RegisterRequest, bound: Map<number, Variable>): ConcreteFunction => {
    const { graph, library } = parseSExpr(req.sexpr, {
      variables: (id, name) => {
        const v = bound.get(id) ?? session.variables.get(id);
        if (v === undefined) throw new CallFault(loadGrpc().status.INVALID_ARGUMENT, `the graph names variable ${JSON.stringify(name)} (id ${id}), which the request did not create`);
        return v;
      },
    });
    verifyGraph(graph, library);
    const host = firstHostNode(graph, library);
    if (host) throw new CallFault(loadGrpc().status.FAILED_PRECONDITION, `unsupported: the graph has a ${host.op} node, which runs JavaScript of the client's process`);
    const big = firstOversizeValue(graph, library, limits.maxTensorElements);
    if (big) {
      throw new CallFault(loadGrpc().status.RESOURCE_EXHAUSTED, `a ${big.op} node makes a tensor of shape [${big.value.type.shape.join(", ")}] (${big.elements} elements), over the limit of ${limits.maxTensorElements} per tensor`);
    }
    if (req.numArgInputs + req.captures.length !== graph.inputs.length) {
      throw new CallFault(loadGrpc().status.INVALID_ARGUMENT, `the graph has ${graph.inputs.length} inputs, the request gives ${req.numArgInputs} arguments and ${req.captures.length} captures`);
    }
    const captures: Capture[] = req.captures.map((c, i) => {
      const value = graph.inputs[req.numArgInputs + i]!;
      let tensor: Tensor;
      let variable: Variable | undefined;
      if (c.value) {
        tensor = tensorOfRef(session, c.value, `capture ${i}`);
        session.charge(bytesOf(tensor), `capture ${i}`);
      } else {
        variable = session.variables.get(c.variable ?? -1);
        if (variable === undefined) throw new CallFault(loadGrpc().status.INVALID_ARGUMENT, `capture ${i} names variable id ${c.variable}, which the session does not hold`);
        tensor = variable;
      }
      const t = value.type;
      if (tensor.dtype !== t.dtype || !shapeFits(tensor.shape, t.shape)) {
        throw new CallFault(loadGrpc().status.INVALID_ARGUMENT, `capture ${i} is ${tensor.dtype}[${tensor.shape.join(", ")}], the graph's input is ${t.dtype}[${t.shape.join(", ")}]`);
      }
      return variable ? { tensor, value, variable } : { tensor, value };
    });
    return new ConcreteFunction(graph, library, captures, [], req.numArgInputs);
  };

  const register = (req: RegisterRequest): Record<string, never> => {
    const session = sessionOf(req.session);
    try {
      return registerIn(session, req);
    } finally {
      for (const h of req.release ?? []) session.release(h);
    }
  };

  const registerIn = (session: Session, req: RegisterRequest): Record<string, never> => {
    if (session.functions.has(req.name)) throw new CallFault(loadGrpc().status.ALREADY_EXISTS, `a function named ${JSON.stringify(req.name)} is registered in this session already`);
    // Variables: created from the client's values the first time a function of the session names
    // them; a registration that fails takes back the ones it made.
    const made: number[] = [];
    const bytesBefore = session.bytes;
    try {
      for (const v of req.variables) {
        if (session.variables.has(v.id)) continue;
        const value = tensorOfRef(session, v.value, `the value of variable ${v.name}`);
        session.charge(bytesOf(value), `variable ${v.name}`);
        session.variables.set(v.id, new Variable(value, { name: v.name, trainable: v.trainable }));
        made.push(v.id);
      }
      // (a function's own variables: made from the registration's values, set again by each call)
      const bound = new Map<number, Variable>();
      for (const v of req.boundVariables ?? []) {
        const value = tensorOfRef(session, v.value, `the value of variable ${v.name}`);
        session.charge(bytesOf(value), `variable ${v.name}`);
        bound.set(v.id, new Variable(value, { name: v.name, trainable: v.trainable }));
      }
      session.functions.set(req.name, build(session, req, bound));
      if (bound.size > 0) session.boundVariables.set(req.name, [...bound.values()]);
    } catch (e) {
      for (const id of made) session.variables.delete(id);
      session.bytes = bytesBefore;
      throw e;
    }
    return {};
  };

  const call = (req: CallRequest, deadline: number): { outputs: HandleInfo[] } | Promise<{ outputs: HandleInfo[] }> => {
    const session = sessionOf(req.session);
    const named = req.outputHandles ?? [];
    const done = (): void => {
      for (const h of req.release ?? []) session.release(h);
    };
    const run = (): { outputs: HandleInfo[] } => {
      try {
        return callIn(session, req);
      } catch (e) {
        if (named.length > 0) session.failAs(named, e instanceof Error ? e.message : String(e));
        throw e;
      } finally {
        done();
      }
    };
    // (inputs named by the client may be made by an earlier call still waiting for its own: then this one waits)
    const inputHandles = [...req.inputs, ...(req.variableValues ?? [])].map((r) => r?.handle ?? 0);
    const refused = (e: unknown): never => {
      if (named.length > 0) session.failAs(named, e instanceof Error ? e.message : String(e));
      done();
      throw e;
    };
    let waiting: Promise<void> | null;
    try {
      waiting = session.whenPresent(inputHandles, deadline);
    } catch (e) {
      // (over maxCallsInFlight: refused at once, and the calls reading its outputs with it)
      return refused(e);
    }
    if (waiting === null) return run();
    return waiting.then(run, refused);
  };

  const callIn = (session: Session, req: CallRequest): { outputs: HandleInfo[] } => {
    const fn = session.functions.get(req.name);
    if (fn === undefined) throw new CallFault(loadGrpc().status.NOT_FOUND, `no function named ${JSON.stringify(req.name)} is registered in this session`);
    if (req.inputs.length !== fn.numArgInputs) throw new CallFault(loadGrpc().status.INVALID_ARGUMENT, `${req.name} takes ${fn.numArgInputs} tensor arguments, the call gives ${req.inputs.length}`);
    const inputs = req.inputs.map((r, i) => {
      const t = tensorOfRef(session, r, `argument ${i}`);
      const want = fn.graph.inputs[i]!.type;
      if (t.dtype !== want.dtype || !shapeFits(t.shape, want.shape)) {
        throw new CallFault(loadGrpc().status.INVALID_ARGUMENT, `argument ${i} of ${req.name} is ${t.dtype}[${t.shape.join(", ")}], the function takes ${want.dtype}[${want.shape.join(", ")}]`);
      }
      return t;
    });
    const bound = session.boundVariables.get(req.name) ?? [];
    const values = req.variableValues ?? [];
    if (values.length !== bound.length) throw new CallFault(loadGrpc().status.INVALID_ARGUMENT, `${req.name} reads ${bound.length} variables of its own, the call gives ${values.length} values`);
    for (const [i, v] of bound.entries()) {
      const t = tensorOfRef(session, values[i], `the value of variable ${v.name}`);
      if (t.dtype !== v.dtype || !shapeFits(t.shape, v.shape)) {
        throw new CallFault(loadGrpc().status.INVALID_ARGUMENT, `the value for variable ${v.name} of ${req.name} is ${t.dtype}[${t.shape.join(", ")}], the variable is ${v.dtype}[${v.shape.join(", ")}]`);
      }
      v.assign(t);
    }
    session.calls++;
    const dev = resolveDevice(req.device || HOST_DEVICE);
    const outs = device(dev, () => fn.callFlat(inputs));
    for (const t of outs) checkDeclared(t.dtype, t.shape, limits);
    const named = req.outputHandles ?? [];
    if (named.length > 0 && named.length !== outs.length) throw new CallFault(loadGrpc().status.INVALID_ARGUMENT, `${req.name} has ${outs.length} outputs, the call names ${named.length} handles for them`);
    const outputs = outs.map((t, i) => (named.length > 0 ? session.putAs(named[i]!, t) : session.put(t)));
    inlineValues(outs, outputs, req.inlineReplyBytes ?? 0);
    session.lastSeen = Date.now();
    return { outputs };
  };

  /**
   * Puts the values of the small outputs (host storage of at most `each` bytes) in the reply,
   * all of them under half the message limit: a client that reads them needs no Fetch.
   */
  const inlineValues = (outs: Tensor[], infos: HandleInfo[], each: number): void => {
    if (each <= 0) return;
    let budget = limits.maxMessageBytes === Infinity ? Infinity : limits.maxMessageBytes / 2;
    for (let i = 0; i < outs.length; i++) {
      const data = outs[i]!._data;
      if (data === null || data.byteLength > each || data.byteLength > budget) continue;
      budget -= data.byteLength;
      infos[i]!.value = { dtype: outs[i]!.dtype, shape: outs[i]!.shape.slice(), totalBytes: data.byteLength, data: new Uint8Array(data.buffer, data.byteOffset, data.byteLength) };
    }
  };

  const upload: grpc.handleClientStreamingCall<TensorChunk, HandleInfo> = (stream, callback) => {
    if (!authorized(stream.metadata)) return callback(toServiceError(denied));
    let session: Session | null = null;
    let reservation: (() => void) | null = null;
    const assembler = new ChunkAssembler(limits);
    let failed = false;
    const settle = () => {
      reservation?.();
      reservation = null;
    };
    const fail = (e: unknown) => {
      settle();
      if (failed) return;
      failed = true;
      callback(toServiceError(statusOf(e)));
    };
    stream.on("data", (chunk: TensorChunk) => {
      if (failed) return;
      try {
        if (session === null) {
          const s = sessionOf(chunk.session);
          const t = checkDeclared(chunk.dtype, chunk.shape, limits);
          // (the tensor's bytes are held from the first chunk on: concurrent uploads together stay
          // within the session's bytes, and their number within maxCallsInFlight)
          reservation = s.reserve(t.bytes, `an upload of a ${t.dtype} tensor of ${t.bytes} bytes`);
          session = s;
        }
        assembler.add(chunk);
      } catch (e) {
        fail(e);
      }
    });
    stream.on("end", () => {
      if (failed) return;
      try {
        if (session === null) throw new CallFault(loadGrpc().status.INVALID_ARGUMENT, "the upload carried no chunk");
        const t = assembler.finish();
        settle();
        callback(null, (session as Session).put(t));
      } catch (e) {
        fail(e);
      }
    });
    stream.on("error", fail);
  };

  const fetch: grpc.handleServerStreamingCall<HandleRequest, TensorChunk> = (stream) => {
    const fail = (e: unknown) => stream.emit("error", toServiceError(statusOf(e)));
    if (!authorized(stream.metadata)) return stream.emit("error", toServiceError(denied));
    void (async () => {
      const session = sessionOf(stream.request.session);
      const t = session.get(stream.request.handle);
      const bytes = await tensorBytes(t);
      let first = true;
      for (const data of chunksOf(bytes, chunkBytesFor(limits.maxMessageBytes))) {
        if (stream.cancelled) return;
        const msg: TensorChunk = first ? { dtype: t.dtype, shape: t.shape.slice(), totalBytes: bytes.byteLength, data } : { data };
        first = false;
        if (!stream.write(msg)) await new Promise((r) => stream.once("drain", r));
      }
      stream.end();
    })().catch(fail);
  };

  const totals = (session: Session | null): StatsReply => {
    let liveHandles = 0;
    let liveBytes = 0;
    let functions = 0;
    let variables = 0;
    for (const s of sessions.values()) {
      liveHandles += s.handleCount;
      liveBytes += s.bytes;
      functions += s.functions.size;
      variables += s.variables.size;
    }
    return { sessions: sessions.size, liveHandles, liveBytes, functions, variables, sessionHandles: session?.handleCount ?? 0, sessionBytes: session?.bytes ?? 0, sessionFunctions: session?.functions.size ?? 0, sessionCalls: session?.calls ?? 0 };
  };

  const devices = listDevices()
    .filter((d) => d.kind !== "remote")
    .map((d) => d.name);
  const server = new (loadGrpc().Server)({
    "grpc.max_receive_message_length": grpcLength(limits.maxMessageBytes),
    "grpc.max_send_message_length": grpcLength(limits.maxMessageBytes),
  });
  server.addService(workerService(), {
    openSession: unary((req) => {
      const s = new Session(randomUUID(), req.client, limits);
      sessions.set(s.id, s);
      return { session: s.id, devices, maxMessageBytes: limits.maxMessageBytes === Infinity ? 0 : limits.maxMessageBytes, sessionTimeoutMs: limits.sessionTimeoutMs === Infinity ? 0 : limits.sessionTimeoutMs };
    }),
    keepAlive: unary((req) => {
      sessionOf(req.session);
      return {};
    }),
    closeSession: unary((req) => {
      sessions.get(req.session)?.clear();
      sessions.delete(req.session);
      return {};
    }),
    register: unary(register),
    // (the results of a call whose client gave up are never handed out: freed at once)
    call: unary(call, (req, res) => {
      const s = sessions.get(req.session);
      for (const o of res.outputs) s?.release(o.handle);
    }),
    upload,
    fetch,
    release: unary((req) => {
      const s = sessionOf(req.session);
      for (const h of req.handles) s.release(h);
      return {};
    }),
    readVariables: unary((req) => {
      const s = sessionOf(req.session);
      const outputs = req.ids.map((id: number) => {
        const v = s.variables.get(id);
        if (v === undefined) throw new CallFault(loadGrpc().status.NOT_FOUND, `no variable with client id ${id} in this session`);
        return s.put(v.storedValue);
      });
      return { outputs };
    }),
    stats: unary((req) => totals(req.session ? sessionOf(req.session) : null)),
  });

  const credentials = tls
    ? loadGrpc().ServerCredentials.createSsl(null, [{ cert_chain: Buffer.from(options.tlsCert!), private_key: Buffer.from(options.tlsKey!) }], false)
    : loadGrpc().ServerCredentials.createInsecure();
  const port = await new Promise<number>((resolve, reject) => server.bindAsync(listen, credentials, (e, p) => (e ? reject(e) : resolve(p))));

  // Sessions idle past the timeout are freed (their client closed without saying so, or died).
  // Time the worker spent blocked (a graph running) does not count: the keep-alives of the
  // clients waited in the queue meanwhile.
  const timeout = limits.sessionTimeoutMs;
  const period = Math.max(50, Math.min(1000, timeout / 4));
  let lastTick = Date.now();
  const reaper =
    timeout === Infinity
      ? null
      : setInterval(() => {
          const now = Date.now();
          const blocked = Math.max(0, now - lastTick - 2 * period);
          lastTick = now;
          for (const [id, s] of sessions) {
            s.lastSeen += blocked;
            if (now - s.lastSeen > timeout) {
              s.clear();
              sessions.delete(id);
            }
          }
        }, period);
  reaper?.unref();

  const { host: h } = splitAddress(listen, "remote.startWorker");
  return {
    address: `${h}:${port}`,
    port,
    limits,
    stats: () => totals(null),
    close: () =>
      new Promise<void>((resolve) => {
        if (reaper) clearInterval(reaper);
        for (const s of sessions.values()) s.clear();
        sessions.clear();
        server.tryShutdown(() => resolve());
        // (calls still running are cut after a grace period)
        setTimeout(() => server.forceShutdown(), 1000).unref();
      }),
  };
}
