/**
 * `sc.distributed.init()`: joins the job (MPI_COMM_WORLD under mpirun) and installs its provider
 * for the collective ops; rank and size of this process.
 */
import { checkChoice, checkOptions } from "../core/options.js";
import { ValueError } from "../core/errors.js";
import { collectiveProvider, setCollectiveProvider, DistributedError } from "../ops/collective.js";
import { finalizeMpi, mpiProvider } from "./mpi.js";
import { singleProcessProvider } from "./single.js";

export interface InitOptions {
  /** "mpi" (default: Open MPI through koffi) or "single" (a job of one process, no library). */
  provider?: "mpi" | "single";
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
  checkChoice("distributed.init", "provider", kind, ["mpi", "single"]);
  if (options.libmpi !== undefined && typeof options.libmpi !== "string") throw new ValueError(`libmpi must be a path, got ${typeof options.libmpi}`, "distributed.init");
  const have = collectiveProvider();
  if (have) {
    if (have.name !== kind) throw new DistributedError(`already initialized with the ${have.name} provider; call finalize() before changing it`, "distributed.init");
    return info();
  }
  setCollectiveProvider(kind === "single" ? singleProcessProvider : mpiProvider({ libmpi: options.libmpi }));
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

/** Whether this process is rank 0 (the one that writes checkpoints and logs). */
export function isChief(): boolean {
  const p = collectiveProvider();
  return !p || p.rank === 0;
}

/** Leaves the job (MPI_Finalize): no collective may run afterwards, and MPI cannot be joined again. */
export function finalize(): void {
  const p = collectiveProvider();
  setCollectiveProvider(null);
  if (p?.name === "mpi") finalizeMpi();
}
