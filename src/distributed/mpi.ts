/**
 * The MPI collective provider: Open MPI's libmpi.so.40 called through koffi (an FFI package with
 * prebuilt binaries, an optional dependency). Open MPI's handles (MPI_COMM_WORLD, MPI_FLOAT,
 * MPI_SUM, ...) are the addresses of global symbols (ompi_mpi_comm_world, ...), which koffi gives.
 * Calls block the JS thread until every rank made the same call, as MPI's do.
 */
import { createRequire } from "../core/platform/node.js";
import type { DType, TypedArray } from "../core/dtype.js";
import { DistributedError, type CollectiveCallCounts, type CollectiveProvider } from "../ops/collective.js";

/** koffi or libmpi is missing: what to install. */
export class MpiUnavailableError extends DistributedError {}

const LIBMPI_CANDIDATES = ["libmpi.so.40", "/usr/lib/x86_64-linux-gnu/libmpi.so.40", "/usr/lib/aarch64-linux-gnu/libmpi.so.40", "libmpi.so"];
const MPI_THREAD_SINGLE = 0;
/** Open MPI's MPI_IN_PLACE (mpi.h: `#define MPI_IN_PLACE ((void *) 1)`). */
const MPI_IN_PLACE = 1;

/* eslint-disable @typescript-eslint/no-explicit-any */
type Fn = (...args: any[]) => number;

interface Binding {
  finalize: Fn;
  allreduce: Fn;
  /** MPI_Allreduce declared with the send buffer as an address, for MPI_IN_PLACE (Open MPI's is (void *) 1). */
  allreduceInPlace: Fn;
  bcast: Fn;
  allgather: Fn;
  world: unknown;
  types: Record<"float32" | "float64" | "int32", unknown>;
  ops: Record<"sum" | "max", unknown>;
}

function loadKoffi(): any {
  try {
    return createRequire(import.meta.url)("koffi");
  } catch (e) {
    throw new MpiUnavailableError(`the FFI package koffi is not installed (it is an optional dependency: npm install koffi): ${(e as Error).message}`, "distributed.init");
  }
}

function loadLibmpi(koffi: any, path: string | undefined): { lib: any; path: string } {
  const tried: string[] = [];
  for (const p of path ? [path] : LIBMPI_CANDIDATES) {
    try {
      // (global: Open MPI's plugins resolve libmpi's symbols from the global namespace)
      return { lib: koffi.load(p, { global: true }), path: p };
    } catch (e) {
      tried.push(`${p}: ${(e as Error).message}`);
    }
  }
  throw new MpiUnavailableError(`cannot load Open MPI's libmpi (install it: apt-get install openmpi-bin libopenmpi3, or pass { libmpi: path }); tried ${tried.join("; ")}`, "distributed.init");
}

let binding: Binding | null = null;
/** Every MPI collective this process called (empty buffers make no call and are not counted). */
const calls: CollectiveCallCounts = { allReduce: 0, broadcast: 0, allGather: 0, elements: 0 };
let initialized = false;

/** Initializes MPI (once per process) and returns the provider of MPI_COMM_WORLD. */
export function mpiProvider(options: { libmpi?: string } = {}): CollectiveProvider {
  const koffi = loadKoffi();
  const { lib } = loadLibmpi(koffi, options.libmpi);
  const initThread = lib.func("int MPI_Init_thread(void *argc, void *argv, int required, _Out_ int *provided)");
  const commRank = lib.func("int MPI_Comm_rank(void *comm, _Out_ int *rank)");
  const commSize = lib.func("int MPI_Comm_size(void *comm, _Out_ int *size)");
  const isInit = lib.func("int MPI_Initialized(_Out_ int *flag)");
  const sym = (name: string): unknown => {
    try {
      return lib.symbol(name);
    } catch (e) {
      throw new MpiUnavailableError(`libmpi has no symbol ${name}: is it Open MPI's (MPICH names its handles differently)? ${(e as Error).message}`, "distributed.init");
    }
  };
  if (!binding) {
    binding = {
      finalize: lib.func("int MPI_Finalize()"),
      allreduce: lib.func("int MPI_Allreduce(void *send, void *recv, int count, void *datatype, void *op, void *comm)"),
      // (the same symbol, its send parameter an integer: an address and an intptr_t travel alike in the C ABI)
      allreduceInPlace: lib.func("int MPI_Allreduce(intptr_t send, void *recv, int count, void *datatype, void *op, void *comm)"),
      bcast: lib.func("int MPI_Bcast(void *buffer, int count, void *datatype, int root, void *comm)"),
      allgather: lib.func("int MPI_Allgather(void *send, int sendcount, void *sendtype, void *recv, int recvcount, void *recvtype, void *comm)"),
      world: sym("ompi_mpi_comm_world"),
      types: { float32: sym("ompi_mpi_float"), float64: sym("ompi_mpi_double"), int32: sym("ompi_mpi_int") },
      ops: { sum: sym("ompi_mpi_op_sum"), max: sym("ompi_mpi_op_max") },
    };
  }
  const b = binding;
  const flag = [0];
  isInit(flag);
  if (!flag[0]) {
    const provided = [0];
    check(initThread(null, null, MPI_THREAD_SINGLE, provided), "MPI_Init_thread");
    initialized = true;
  }
  const r = [0];
  const s = [0];
  check(commRank(b.world, r), "MPI_Comm_rank");
  check(commSize(b.world, s), "MPI_Comm_size");
  const typeOf = (d: DType): unknown => {
    const t = (b.types as Record<string, unknown>)[d];
    if (t === undefined) throw new DistributedError(`MPI collectives carry float32, float64 or int32, got ${d}`, "mpi");
    return t;
  };
  return {
    callCounts: () => calls,
    name: "mpi",
    rank: r[0]!,
    size: s[0]!,
    allReduce(send: TypedArray, recv: TypedArray, dtype: DType, reduce: "sum" | "max") {
      if (send.length === 0) return;
      calls.allReduce++;
      calls.elements += send.length;
      check(b.allreduce(send, recv, send.length, typeOf(dtype), b.ops[reduce], b.world), "MPI_Allreduce");
    },
    allReduceInPlace(data: TypedArray, dtype: DType, reduce: "sum" | "max") {
      if (data.length === 0) return;
      calls.allReduce++;
      calls.elements += data.length;
      check(b.allreduceInPlace(MPI_IN_PLACE, data, data.length, typeOf(dtype), b.ops[reduce], b.world), "MPI_Allreduce");
    },
    broadcast(data: TypedArray, dtype: DType, root: number) {
      if (data.length === 0) return;
      calls.broadcast++;
      calls.elements += data.length;
      check(b.bcast(data, data.length, typeOf(dtype), root, b.world), "MPI_Bcast");
    },
    allGather(send: TypedArray, recv: TypedArray, dtype: DType) {
      if (send.length === 0) return;
      calls.allGather++;
      calls.elements += send.length;
      const t = typeOf(dtype);
      check(b.allgather(send, send.length, t, recv, send.length, t, b.world), "MPI_Allgather");
    },
  };
}

/** MPI_Finalize, when this process initialized MPI (after it no collective may run). */
export function finalizeMpi(): void {
  if (binding && initialized) {
    initialized = false;
    check(binding.finalize(), "MPI_Finalize");
  }
}

function check(code: number, what: string): void {
  // (MPI's default error handler aborts the job on errors; a nonzero code reaches us only when
  // the handler returns)
  if (code !== 0) throw new DistributedError(`${what} failed with MPI error code ${code}`, "mpi");
}
