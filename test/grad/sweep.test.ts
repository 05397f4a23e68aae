/**
 * The registry-wide gradient sweep: every differentiable op passes a float64
 * finite-difference check, its graph-transform gradient (staged) equals the eager one, and no
 * differentiable op may exist without a case.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as sc from "../../src/api/index.js";
import { Rng } from "../util/rng.js";
import { assertClose, checkGradients, weightedLoss } from "../util/gradcheck.js";
import type { GradCase } from "../util/grad-cases/types.js";
import { allCases } from "../util/grad-cases/index.js";

const cases: GradCase[] = allCases;

test("every differentiable op in the registry has a gradient case", () => {
  const covered = new Set(cases.map((c) => c.op));
  const missing = sc
    .listOps()
    .filter((d) => d.vjp !== undefined)
    .map((d) => d.name)
    .filter((n) => !covered.has(n));
  assert.deepEqual(missing, [], `ops without a gradient case: ${missing.join(", ")}`);
  for (const c of cases) assert.ok(sc.listOps().some((d) => d.name === c.op), `case names unknown op ${c.op}`);
});

for (const c of cases) {
  test(`gradient ${c.op}${c.label ? ` (${c.label})` : ""}`, () => {
    const rng = new Rng(hash(c.op + (c.label ?? "")));
    const xs = c.inputs(rng);
    const loss = weightedLoss(c.fn, rng, xs);
    checkGradients(loss, xs, c.tol ?? 1e-6, c.op, c.eps);
    // The graph transform (staged function differentiated by the tape: forward and backward
    // graphs built from the same VJP) gives the eager gradient.
    const eager = sc.grad(loss, { argnums: "all" })(...xs) as sc.Tensor[];
    const staged = sc.grad(sc.stage(loss, { autograph: false }), { argnums: "all" })(...xs) as sc.Tensor[];
    staged.forEach((g, i) => assertClose(g.dataSync(), eager[i]!.dataSync(), 1e-10, `${c.op}: staged vs eager gradient of input ${i}`));
    if (c.secondOrder) {
      // d/dx of (d loss/dx . v) for a fixed v: checks the VJP of the VJP.
      const v = xs.map((x) => rng.tensor(x.shape as number[], 0.5, 1.5));
      const gradDotV = (...ys: sc.Tensor[]) => {
        const g = sc.grad(loss, { argnums: "all" })(...ys) as sc.Tensor[];
        return g.map((gi, i) => sc.sum(sc.mul(gi, v[i]!))).reduce((a, b) => sc.add(a, b));
      };
      checkGradients(gradDotV, xs, (c.tol ?? 1e-6) * 10, `${c.op} (second order)`, c.eps);
    }
  });
}

function hash(s: string): number {
  let h = 2166136261;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 16777619);
  return h >>> 0;
}
