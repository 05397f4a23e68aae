/**
 * `sc.distributed`: data-parallel training on a collective library (MPI today). Launch N copies
 * with `mpirun -np N node train.js`; each calls `init()`, gets its rank and size, reads its shard
 * of the data, starts from rank 0's weights and averages gradients with `DistributedOptimizer`.
 */
export { init, finalize, rank, size, isChief, type InitOptions, type JobInfo } from "./init.js";
export { allReduce, broadcast, allGather, DistributedError, type ReduceKind, type CollectiveProvider } from "../ops/collective.js";
export { MpiUnavailableError } from "./mpi.js";
export { DistributedOptimizer, allReduceGradients, type DistributedOptimizerOptions } from "./optimizer.js";
export { broadcastVariables, saveOnChief, type VariableSource } from "./variables.js";
