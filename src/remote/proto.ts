/**
 * The wire schema of the worker service, as a protobufjs reflection definition (no .proto file
 * to compile), and the gRPC service definition built on it: every method's path and its
 * (de)serializers. Tensors travel as their storage bytes (the host's little-endian typed array of
 * the dtype's storage, core/dtype.ts) with dtype and shape; a tensor that already lives on the
 * worker travels as its handle number.
 */
import type protobufModule from "protobufjs/light.js";
import type { MethodDefinition, ServiceDefinition } from "@grpc/grpc-js";
import { createRequire } from "../core/platform/node.js";

const SCHEMA = {
  nested: {
    stagecraft: {
      nested: {
        /** A tensor's type; in a chunked transfer the first chunk carries it with the total size. */
        TensorChunk: {
          fields: {
            session: { type: "string", id: 1 },
            dtype: { type: "string", id: 2 },
            shape: { rule: "repeated", type: "uint32", id: 3 },
            totalBytes: { type: "double", id: 4 },
            data: { type: "bytes", id: 5 },
          },
        },
        /** A call's input: a tensor's value, or the handle of one on the worker. */
        TensorRef: {
          oneofs: { kind: { oneof: ["value", "handle"] } },
          fields: { value: { type: "TensorChunk", id: 1 }, handle: { type: "uint32", id: 2 } },
        },
        /** A tensor on the worker: its handle and type. */
        HandleInfo: {
          fields: { handle: { type: "uint32", id: 1 }, dtype: { type: "string", id: 2 }, shape: { rule: "repeated", type: "uint32", id: 3 }, value: { type: "TensorChunk", id: 4 } },
        },
        OpenSessionRequest: { fields: { client: { type: "string", id: 1 } } },
        OpenSessionReply: {
          fields: {
            session: { type: "string", id: 1 },
            devices: { rule: "repeated", type: "string", id: 2 },
            maxMessageBytes: { type: "double", id: 3 },
            sessionTimeoutMs: { type: "double", id: 4 },
          },
        },
        SessionRequest: { fields: { session: { type: "string", id: 1 } } },
        Empty: { fields: {} },
        /** A variable the function reads or writes, created on the worker from the client's value. */
        VariableInit: {
          fields: { id: { type: "uint32", id: 1 }, name: { type: "string", id: 2 }, trainable: { type: "bool", id: 3 }, value: { type: "TensorRef", id: 4 } },
        },
        /** A graph input after the arguments: a captured tensor, or a variable's value at each call. */
        CaptureInit: {
          oneofs: { kind: { oneof: ["value", "variable"] } },
          fields: { value: { type: "TensorRef", id: 1 }, variable: { type: "uint32", id: 2 } },
        },
        RegisterRequest: {
          fields: {
            session: { type: "string", id: 1 },
            name: { type: "string", id: 2 },
            sexpr: { type: "string", id: 3 },
            numArgInputs: { type: "uint32", id: 4 },
            variables: { rule: "repeated", type: "VariableInit", id: 5 },
            captures: { rule: "repeated", type: "CaptureInit", id: 6 },
            release: { rule: "repeated", type: "uint32", id: 7 },
            boundVariables: { rule: "repeated", type: "VariableInit", id: 8 },
          },
        },
        CallRequest: {
          fields: {
            session: { type: "string", id: 1 },
            name: { type: "string", id: 2 },
            device: { type: "string", id: 3 },
            inputs: { rule: "repeated", type: "TensorRef", id: 4 },
            release: { rule: "repeated", type: "uint32", id: 5 },
            variableValues: { rule: "repeated", type: "TensorRef", id: 6 },
            inlineReplyBytes: { type: "uint32", id: 7 },
            outputHandles: { rule: "repeated", type: "uint32", id: 8 },
          },
        },
        HandlesReply: { fields: { outputs: { rule: "repeated", type: "HandleInfo", id: 1 } } },
        HandleRequest: { fields: { session: { type: "string", id: 1 }, handle: { type: "uint32", id: 2 } } },
        ReleaseRequest: { fields: { session: { type: "string", id: 1 }, handles: { rule: "repeated", type: "uint32", id: 2 } } },
        VariablesRequest: { fields: { session: { type: "string", id: 1 }, ids: { rule: "repeated", type: "uint32", id: 2 } } },
        StatsReply: {
          fields: {
            sessions: { type: "uint32", id: 1 },
            liveHandles: { type: "uint32", id: 2 },
            liveBytes: { type: "double", id: 3 },
            functions: { type: "uint32", id: 4 },
            variables: { type: "uint32", id: 5 },
            sessionHandles: { type: "uint32", id: 6 },
            sessionBytes: { type: "double", id: 7 },
            sessionFunctions: { type: "uint32", id: 8 },
            sessionCalls: { type: "double", id: 9 },
          },
        },
      },
    },
  },
};

// (protobufjs loads with the service's first use, workerService(), not with the package entry)
let root: protobufModule.Root | undefined;
function schemaRoot(): protobufModule.Root {
  if (root === undefined) {
    const protobuf = createRequire(import.meta.url)("protobufjs/light.js") as typeof protobufModule;
    root = protobuf.Root.fromJSON(SCHEMA);
  }
  return root;
}

export interface TensorChunk {
  session?: string;
  dtype?: string;
  shape?: number[];
  totalBytes?: number;
  data?: Uint8Array;
}
export interface TensorRef {
  value?: TensorChunk;
  handle?: number;
}
export interface HandleInfo {
  handle: number;
  dtype: string;
  shape: number[];
  /**
   * The tensor's value too, when a call asked for small outputs' values (CallRequest.inlineReplyBytes):
   * a read of it then needs no Fetch. Absent (null once decoded) otherwise.
   */
  value?: TensorChunk | null;
}
export interface OpenSessionRequest {
  client: string;
}
export interface OpenSessionReply {
  session: string;
  devices: string[];
  maxMessageBytes: number;
  sessionTimeoutMs: number;
}
export interface SessionRequest {
  session: string;
}
export type Empty = Record<string, never>;
export interface VariableInit {
  id: number;
  name: string;
  trainable: boolean;
  value: TensorRef;
}
export interface CaptureInit {
  value?: TensorRef;
  variable?: number;
}
export interface RegisterRequest {
  session: string;
  name: string;
  sexpr: string;
  numArgInputs: number;
  variables: VariableInit[];
  captures: CaptureInit[];
  /** Handles freed once the request is done (the uploads made for it), whether it succeeds or not. */
  release?: number[];
  /**
   * Variables the graph reads that belong to this function alone, not to the session (remote
   * eager calls, src/remote/eager.ts): each call sets their values first (CallRequest.variableValues).
   */
  boundVariables?: VariableInit[];
}
export interface CallRequest {
  session: string;
  name: string;
  device: string;
  inputs: TensorRef[];
  /** Handles freed once the call is done (the uploads made for it), whether it succeeds or not. */
  release?: number[];
  /** The values of the function's bound variables for this call, in their registration's order. */
  variableValues?: TensorRef[];
  /**
   * Outputs of at most this many bytes come back with their value in the reply (HandleInfo.value),
   * besides their handle; 0 or absent: none do. The remote eager ops ask for it: reading a small
   * result then costs no second round trip.
   */
  inlineReplyBytes?: number;
  /**
   * Handles the client names for the outputs (session.ts CLIENT_HANDLES_FROM and above), one per
   * output; absent: the worker numbers them. A later call may name one as its input before this
   * call's reply came (the worker waits for it): the remote eager ops send a chain of ops without
   * a round trip per op.
   */
  outputHandles?: number[];
}
export interface HandlesReply {
  outputs: HandleInfo[];
}
export interface HandleRequest {
  session: string;
  handle: number;
}
export interface ReleaseRequest {
  session: string;
  handles: number[];
}
export interface VariablesRequest {
  session: string;
  ids: number[];
}
export interface StatsReply {
  sessions: number;
  liveHandles: number;
  liveBytes: number;
  functions: number;
  variables: number;
  sessionHandles: number;
  sessionBytes: number;
  /** Functions registered in the session (each remote eager op signature is one). */
  sessionFunctions: number;
  /** Calls the session made of its registered functions. */
  sessionCalls: number;
}

/** A message type's (de)serializers: plain objects in, plain objects out (oneof members left unset stay absent). */
function codec<T>(name: string): { serialize: (m: T) => Buffer; deserialize: (b: Buffer) => T } {
  const type = schemaRoot().lookupType(`stagecraft.${name}`);
  return {
    serialize: (m) => {
      const bytes = type.encode(type.fromObject(m as Record<string, unknown>)).finish();
      return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    },
    deserialize: (b) => type.toObject(type.decode(b), { defaults: true, arrays: true, oneofs: false }) as T,
  };
}

function method<Req, Res>(name: string, req: string, res: string, requestStream: boolean, responseStream: boolean): MethodDefinition<Req, Res> {
  const a = codec<Req>(req);
  const b = codec<Res>(res);
  return {
    path: `/stagecraft.Worker/${name}`,
    requestStream,
    responseStream,
    requestSerialize: a.serialize,
    requestDeserialize: a.deserialize,
    responseSerialize: b.serialize,
    responseDeserialize: b.deserialize,
  };
}

/** The worker service: every call but OpenSession names its session. */
const makeWorkerService = () =>
  ({
    openSession: method<OpenSessionRequest, OpenSessionReply>("OpenSession", "OpenSessionRequest", "OpenSessionReply", false, false),
    keepAlive: method<SessionRequest, Empty>("KeepAlive", "SessionRequest", "Empty", false, false),
    closeSession: method<SessionRequest, Empty>("CloseSession", "SessionRequest", "Empty", false, false),
    register: method<RegisterRequest, Empty>("Register", "RegisterRequest", "Empty", false, false),
    call: method<CallRequest, HandlesReply>("Call", "CallRequest", "HandlesReply", false, false),
    upload: method<TensorChunk, HandleInfo>("Upload", "TensorChunk", "HandleInfo", true, false),
    fetch: method<HandleRequest, TensorChunk>("Fetch", "HandleRequest", "TensorChunk", false, true),
    release: method<ReleaseRequest, Empty>("Release", "ReleaseRequest", "Empty", false, false),
    readVariables: method<VariablesRequest, HandlesReply>("ReadVariables", "VariablesRequest", "HandlesReply", false, false),
    stats: method<SessionRequest, StatsReply>("Stats", "SessionRequest", "StatsReply", false, false),
  }) satisfies ServiceDefinition;

export type WorkerService = ReturnType<typeof makeWorkerService>;
let service: WorkerService | undefined;

/** The worker service's definition (built, with the schema, at its first use). */
export function workerService(): WorkerService {
  return (service ??= makeWorkerService());
}
