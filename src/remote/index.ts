/**
 * `sc.remote`: worker servers over gRPC (the TF-Eager paper's remote devices). Start a worker
 * (`stagecraft worker --listen 127.0.0.1:7000`, or `startWorker`), connect to it with a cluster
 * spec, and run staged functions on its devices; their results stay there as RemoteTensors.
 * docs/distributed.md ("Remote workers") has the design, the security defaults and the limits.
 */
export { connect, Cluster, type ConnectOptions } from "./cluster.js";
export { device, type RemoteFunction, type RemoteResult } from "./function.js";
export { RemoteTensor } from "./handle.js";
export { sync, isRemoteTensor } from "./eager.js";
import { installRemoteOps } from "./eager.js";
export { startWorker, type Worker, type WorkerOptions } from "./worker.js";
export { DEFAULT_WORKER_LIMITS, type WorkerLimits } from "./limits.js";
export { RemoteError, RemoteAuthenticationError, RemoteLimitError, RemoteUnavailableError, RemoteUnsupportedError } from "./errors.js";
export type { StatsReply as WorkerStats } from "./proto.js";

// (ops may be placed on a connected worker's device one at a time: eager.ts)
installRemoteOps();
