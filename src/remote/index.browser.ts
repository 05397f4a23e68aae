/**
 * `sc.remote` in a browser build (package.json "browser" maps index.js here): remote workers talk
 * gRPC over HTTP/2 through @grpc/grpc-js, which needs Node, so every entry point raises a
 * RemoteError saying so. The names match index.ts so that one import works in both builds.
 */
import { StagecraftError } from "../core/errors.js";

export { DEFAULT_WORKER_LIMITS, type WorkerLimits } from "./default-limits.js";

export class RemoteError extends StagecraftError {}
export class RemoteAuthenticationError extends RemoteError {}
export class RemoteLimitError extends RemoteError {}
export class RemoteUnavailableError extends RemoteError {}
export class RemoteUnsupportedError extends RemoteError {}

function needsNode(api: string): never {
  throw new RemoteUnsupportedError(`remote workers need Node (gRPC over HTTP/2 through @grpc/grpc-js); this is a browser build`, api);
}

export function connect(): never {
  return needsNode("remote.connect");
}
export function device(): never {
  return needsNode("remote.device");
}
export function startWorker(): never {
  return needsNode("remote.startWorker");
}
export class Cluster {
  constructor() {
    needsNode("remote.Cluster");
  }
}
export class RemoteTensor {
  constructor() {
    needsNode("remote.RemoteTensor");
  }
}
