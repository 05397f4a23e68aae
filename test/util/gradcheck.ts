/** Finite-difference gradient checks in float64. */
import assert from "node:assert/strict";
import * as sc from "../../src/api/index.js";
import type { Rng } from "./rng.js";

/** A scalar loss: sum(f(xs) * w) with fixed random weights w, so every output element matters. */
export function weightedLoss(f: (...xs: sc.Tensor[]) => sc.Tensor, rng: Rng, probe: sc.Tensor[]): (...xs: sc.Tensor[]) => sc.Tensor {
  const y = f(...probe);
  const w = rng.tensor(y.shape as number[], 0.5, 1.5, "float64");
  return (...xs) => sc.sum(sc.mul(sc.cast(f(...xs), "float64"), w));
}

/** Central differences of a scalar function with respect to each input. */
export function numericGrad(loss: (...xs: sc.Tensor[]) => sc.Tensor, xs: sc.Tensor[], eps = 1e-6): number[][] {
  return xs.map((x, k) => {
    const base = Array.from(x.dataSync());
    return base.map((_, i) => {
      const at = (delta: number) => {
        const v = base.slice();
        v[i]! += delta;
        const args = xs.slice();
        args[k] = sc.tensor(v, "float64", x.shape as number[]);
        return loss(...args).item() as number;
      };
      return (at(eps) - at(-eps)) / (2 * eps);
    });
  });
}

export function assertClose(actual: ArrayLike<number>, expected: ArrayLike<number>, tol: number, what: string): void {
  assert.equal(actual.length, expected.length, `${what}: length ${actual.length} vs ${expected.length}`);
  for (let i = 0; i < actual.length; i++) {
    const a = actual[i]!;
    const e = expected[i]!;
    const err = Math.abs(a - e) / Math.max(1, Math.abs(e));
    assert.ok(err <= tol, `${what}: element ${i}: analytic ${a} vs numeric ${e} (error ${err.toExponential(2)} > ${tol})`);
  }
}

/** Analytic (tape) gradient of `loss` vs central differences. */
export function checkGradients(loss: (...xs: sc.Tensor[]) => sc.Tensor, xs: sc.Tensor[], tol: number, what: string, eps = 1e-6): void {
  const analytic = sc.grad(loss, { argnums: "all" })(...xs) as sc.Tensor[];
  const numeric = numericGrad(loss, xs, eps);
  analytic.forEach((g, k) => assertClose(g.dataSync(), numeric[k]!, tol, `${what} d/dx${k}`));
}

/** assertClose over lists of results (one array of numbers per result). */
export function assertAllClose(got: number[][], want: number[][], tol: number, what: string): void {
  assert.equal(got.length, want.length, `${what}: ${got.length} results vs ${want.length}`);
  got.forEach((g, i) => assertClose(g, want[i]!, tol, `${what}, result ${i}`));
}
