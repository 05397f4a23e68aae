/**
 * The remote layer's typed errors. Each names the worker's address and the call (the gRPC
 * method, with the function's name where there is one), and carries the user's line where the
 * call was made: errors arrive in a gRPC callback, after the user's stack is gone, so the
 * client takes the location when a call starts and hands it on.
 */
import { StagecraftError, type SourceLocation } from "../core/errors.js";
import type { ServiceError } from "@grpc/grpc-js";
import { loadGrpc } from "./grpc.js";

/** A remote call failed: the worker refused it, it ran out of time, or the worker is gone. */
export class RemoteError extends StagecraftError {
  constructor(
    message: string,
    /** The worker's address, host:port. */
    readonly address: string,
    /** The call, e.g. "Call train_step" or "Register". */
    readonly call: string,
    /** The gRPC status name ("UNAVAILABLE", "DEADLINE_EXCEEDED", ...), or "LOCAL" for checks made before sending. */
    readonly code: string,
    location?: SourceLocation | null,
  ) {
    super(`${call} on worker ${address}: ${message}`, "remote", location);
  }
}
/** The worker refused the client's token (none given, or a wrong one). */
export class RemoteAuthenticationError extends RemoteError {}
/** A message, tensor or session went over one of the worker's limits (or the client's). */
export class RemoteLimitError extends RemoteError {}
/** The worker cannot be reached, went away during the call, or did not answer before the deadline. */
export class RemoteUnavailableError extends RemoteError {}
/** A graph that needs JavaScript when it runs (a host call, a print, an assertion) cannot run on a worker. */
export class RemoteUnsupportedError extends RemoteError {}

/** The typed error for a failed gRPC call to `address`. */
export function remoteErrorOf(e: ServiceError, address: string, call: string, location: SourceLocation | null): RemoteError {
  const code = loadGrpc().status[e.code] ?? String(e.code);
  const detail = e.details || e.message;
  switch (e.code) {
    case loadGrpc().status.UNAUTHENTICATED:
    case loadGrpc().status.PERMISSION_DENIED:
      return new RemoteAuthenticationError(detail, address, call, code, location);
    case loadGrpc().status.RESOURCE_EXHAUSTED:
      return new RemoteLimitError(detail, address, call, code, location);
    case loadGrpc().status.UNAVAILABLE:
    case loadGrpc().status.DEADLINE_EXCEEDED:
    case loadGrpc().status.CANCELLED:
      return new RemoteUnavailableError(detail, address, call, code, location);
    case loadGrpc().status.FAILED_PRECONDITION:
      if (detail.startsWith("unsupported:")) return new RemoteUnsupportedError(detail.slice("unsupported:".length).trim(), address, call, code, location);
      return new RemoteError(detail, address, call, code, location);
    default:
      return new RemoteError(detail, address, call, code, location);
  }
}
