/**
 * @grpc/grpc-js, loaded at its first use (a connect, a worker started, a call's failure read):
 * the package entry exports sc.remote, and loading gRPC costs start-up that a program without
 * remote workers should not pay. Node's `require` loads it synchronously. (Browsers never load
 * this layer: package.json's "browser" field replaces remote/index.js.)
 */
import { createRequire } from "../core/platform/node.js";
import type * as Grpc from "@grpc/grpc-js";

let grpc: typeof Grpc | undefined;

export function loadGrpc(): typeof Grpc {
  return (grpc ??= createRequire(import.meta.url)("@grpc/grpc-js") as typeof Grpc);
}
