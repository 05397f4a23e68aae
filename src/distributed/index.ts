/**
 * `sc.distributed`: data-parallel training on a collective library (MPI today). Launch N copies
 * with `mpirun -np N node train.js`; each calls `init()`, gets its rank and size, reads its shard
 * of the data, starts from rank 0's weights and averages gradients with `DistributedOptimizer`.
 */
export { init, finalize, rank, size, isChief, callCounts, type InitOptions, type JobInfo } from "./init.js";
export { allReduce, broadcast, allGather, DistributedError, type ReduceKind, type CollectiveProvider, type CollectiveCallCounts } from "../ops/collective.js";
export { registerProvider, type ProviderFactory, type ProviderOptions } from "./providers.js";
export { chiefOnly, saveOnChief } from "./chief.js";
export { MpiUnavailableError } from "./mpi.js";
export { DistributedOptimizer, allReduceGradients, type DistributedOptimizerOptions } from "./optimizer.js";
export { allReduceInPlace, hostBuffer, type HostReduceBuffer } from "./in-place.js";
export { broadcastVariables, type VariableSource } from "./variables.js";
