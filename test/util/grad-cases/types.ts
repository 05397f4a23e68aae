/**
 * A gradient-check case for one registry op. Every differentiable op in the registry must
 * have at least one case (test/grad/sweep.test.ts fails otherwise).
 */
import type * as sc from "../../../src/api/index.js";
import type { Rng } from "../rng.js";

export interface GradCase {
  /** Registry op name this case covers. */
  op: string;
  /** Label for the case (e.g. "broadcast"). */
  label?: string;
  /** Float64 inputs to differentiate with respect to (seeded). */
  inputs: (rng: Rng) => sc.Tensor[];
  /** Applies the op (and only what it needs around it). */
  fn: (...xs: sc.Tensor[]) => sc.Tensor;
  /** Also check second derivatives (elementwise ops). */
  secondOrder?: boolean;
  /** Finite-difference step (default 1e-6). */
  eps?: number;
  /** Relative/absolute tolerance (default 1e-6). */
  tol?: number;
}
