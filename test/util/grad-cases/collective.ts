/**
 * Gradient cases for the collective ops (ops/collective.ts), in a job of one process (the
 * "single" provider: a sum/mean/max over one rank is the identity, a gather of one rank adds an
 * axis). The 2-rank values and gradients are checked under mpirun (test/distributed/mpi.test.ts).
 */
import * as sc from "../../../src/api/index.js";
import type { Rng } from "../rng.js";
import type { GradCase } from "./types.js";

/** The inputs, after joining the one-process job (idempotent). */
const joined = (make: (r: Rng) => sc.Tensor[]) => (r: Rng) => {
  sc.distributed.init({ provider: "single" });
  return make(r);
};

export const cases: GradCase[] = [
  ...(["sum", "mean", "max"] as const).map((reduce) => ({
    op: "allReduce",
    label: reduce,
    inputs: joined((r) => [r.tensor([2, 3])]),
    fn: (x: sc.Tensor) => sc.distributed.allReduce(x, reduce),
  })),
  { op: "broadcast", inputs: joined((r) => [r.tensor([3, 2])]), fn: (x) => sc.distributed.broadcast(x, 0) },
  { op: "allGather", inputs: joined((r) => [r.tensor([2, 2])]), fn: (x) => sc.distributed.allGather(x) },
];
