/**
 * `sc.distributed.init()`: joins the job (MPI_COMM_WORLD under mpirun) and installs its provider
 * for the collective ops; rank and size of this process.
 */
import { checkChoice, checkOptions } from "../core/options.js";
import { ValueError } from "../core/errors.js";
import { collectiveProvider, setCollectiveProvider, DistributedError, type CollectiveCallCounts } from "../ops/collective.js";
import { finalizeMpi } from "./mpi.js";
import { providerFactory, providerNames } from "./providers.js";

export interface InitOptions {
  /** "mpi" (default: Open MPI through koffi), "single" (a job of one process, no library), or a name given to registerProvider. */
  provider?: string;
  /** Path of libmpi (default: libmpi.so.40 where the loader finds it). */
  libmpi?: string;
}

export interface JobInfo {
  rank: number;
  size: number;
  provider: string;
}

/** Joins the job; calling it again returns the same rank and size. */
export function init(options: InitOptions = {}): JobInfo {
  checkOptions("distributed.init", options, ["provider", "libmpi"]);
  const kind = options.provider ?? "mpi";
  checkChoice("distributed.init", "provider", kind, providerNames());
  if (options.libmpi !== undefined && typeof options.libmpi !== "string") throw new ValueError(`libmpi must be a path, got ${typeof options.libmpi}`, "distributed.init");
  const have = collectiveProvider();
  if (have) {
    if (have.name !== kind) throw new DistributedError(`already initialized with the ${have.name} provider; call finalize() before changing it`, "distributed.init");
    return info();
  }
  const p = providerFactory(kind)({ libmpi: options.libmpi });
  if (p.name !== kind) throw new DistributedError(`the factory registered as ${kind} made a provider named ${p.name}`, "distributed.init");
  setCollectiveProvider(p);
  return info();
}

function current(op: string) {
  const p = collectiveProvider();
  if (!p) throw new DistributedError(`not initialized: call sc.distributed.init() first`, op);
  return p;
}

function info(): JobInfo {
  const p = current("distributed.init");
  return { rank: p.rank, size: p.size, provider: p.name };
}

/** This process's rank (0 ... size-1). */
export function rank(): number {
  return current("distributed.rank").rank;
}

/** The number of processes in the job. */
export function size(): number {
  return current("distributed.size").size;
}

/** Whether this process is rank 0 (the one that writes checkpoints and logs), or not in a job (a program run alone is its own chief). */
export function isChief(): boolean {
  const p = collectiveProvider();
  return !p || p.rank === 0;
}

/** Collective calls this process has made (per kind, since it started), as counted by the provider; elements in all. Zeros from a provider that does not count. */
export function callCounts(): CollectiveCallCounts {
  const p = current("distributed.callCounts");
  return p.callCounts ? { ...p.callCounts() } : { allReduce: 0, broadcast: 0, allGather: 0, elements: 0 };
}

/** Leaves the job (MPI_Finalize): no collective may run afterwards, and MPI cannot be joined again. */
export function finalize(): void {
  const p = collectiveProvider();
  setCollectiveProvider(null);
  if (p?.name === "mpi") finalizeMpi();
}
