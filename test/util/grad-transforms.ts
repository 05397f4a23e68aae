/**
 * Every way the library differentiates a function, as one list: grad, valueAndGrad, vjp, jvp,
 * tape.gradient (inputs and variables), second order (grad of grad, hvp), and the same
 * gradients staged again. The gradient sweeps apply each to a staged program and to its eager
 * counterpart and compare.
 */
import * as sc from "../../src/api/index.js";
import type { Rng } from "./rng.js";

type F = (...xs: sc.Tensor[]) => sc.Tensor;

/** Fixed probe data for one function: output cotangent, input directions, variables. */
export interface Probe {
  /** Weights of the output (the cotangent of vjp, and loss = sum(f(xs) * outWeights)). */
  outWeights: sc.Tensor;
  /** One direction per input (jvp tangents, second-order probes). */
  directions: sc.Tensor[];
  variables: sc.Variable[];
}

export function makeProbe(rng: Rng, out: sc.Tensor, xs: sc.Tensor[], variables: sc.Variable[] = []): Probe {
  return {
    outWeights: rng.tensor(out.shape as number[], 0.5, 1.5, "float64"),
    directions: xs.map((x) => rng.tensor(x.shape as number[], -1, 1, "float64")),
    variables,
  };
}

export interface GradTransform {
  name: string;
  /** Whether it needs a function of one argument (hvp), or variables. */
  needs?: "one input" | "variables";
  /** Whether the transform is staged again (then it applies to staged programs only; the reference is `build` unstaged). */
  stagedAgain?: boolean;
  /** Higher than first order. */
  secondOrder?: boolean;
  build(f: F, p: Probe): (...xs: sc.Tensor[]) => sc.Tensor[];
}

export const lossOf = (f: F, p: Probe) => (...xs: sc.Tensor[]) => sc.sum(sc.mul(sc.cast(f(...xs), "float64"), p.outWeights));
const dot = (gs: sc.Tensor[], vs: sc.Tensor[]) => gs.map((g, i) => sc.sum(sc.mul(g, vs[i]!))).reduce((a, b) => sc.add(a, b));
const gradAll = (f: F) => (...xs: sc.Tensor[]) => sc.grad(f, { argnums: "all" })(...xs) as sc.Tensor[];

const firstOrder: GradTransform[] = [
  { name: "grad", build: (f, p) => gradAll(lossOf(f, p)) },
  {
    name: "valueAndGrad",
    build: (f, p) => (...xs) => {
      const [v, g] = sc.valueAndGrad(lossOf(f, p), { argnums: "all" })(...xs);
      return [v, ...(g as sc.Tensor[])];
    },
  },
  { name: "vjp", build: (f, p) => (...xs) => sc.vjp(f, ...xs)[1](p.outWeights) as sc.Tensor[] },
  { name: "jvp", build: (f, p) => (...xs) => [sc.jvp(f, xs, p.directions)[1] as sc.Tensor] },
  {
    name: "tape.gradient of inputs and variables",
    build: (f, p) => (...xs) => {
      const tape = new sc.GradientTape();
      const loss = tape.record(() => {
        tape.watch(xs);
        return lossOf(f, p)(...xs);
      });
      // (an op with a zero derivative, sign or floor, leaves its input unconnected: the other
      // transforms and finite differences give zeros there, which is what is compared)
      return tape.gradient(loss, [...xs, ...p.variables], { unconnected: "zero" }) as sc.Tensor[];
    },
  },
  {
    name: "valueAndGrad of variables",
    needs: "variables",
    build: (f, p) => (...xs) => {
      const tape = new sc.GradientTape();
      const loss = tape.record(() => lossOf(f, p)(...xs));
      return [loss, ...(tape.gradient(loss, p.variables) as sc.Tensor[])];
    },
  },
];

const secondOrder: GradTransform[] = [
  { name: "grad of grad", secondOrder: true, build: (f, p) => gradAll((...xs) => dot(gradAll(lossOf(f, p))(...xs), p.directions)) },
  { name: "hvp", secondOrder: true, needs: "one input", build: (f, p) => (x) => [sc.hvp(lossOf(f, p), x, p.directions[0]) as sc.Tensor] },
  {
    name: "grad of the variables' gradient",
    secondOrder: true,
    needs: "variables",
    build: (f, p) => (...xs) =>
      gradAll((...ys) => {
        const tape = new sc.GradientTape();
        const loss = tape.record(() => lossOf(f, p)(...ys));
        const g = tape.gradient(loss, p.variables) as sc.Tensor[];
        return g.map((t) => sc.sum(t.square())).reduce((a, c) => a.add(c));
      })(...xs),
  },
];

/** The first- and second-order transforms, then the same staged again (sc.stage around each). */
export const gradTransforms: GradTransform[] = [
  ...firstOrder,
  ...secondOrder,
  ...[...firstOrder, ...secondOrder].map((t): GradTransform => ({ ...t, name: `${t.name}, staged again`, stagedAgain: true })),
];

/** Runs transform `t` of `f` (staged again when the transform says so); returns flat values. */
export function runTransform(t: GradTransform, f: F, p: Probe, xs: sc.Tensor[], stageAgain = t.stagedAgain ?? false): number[][] {
  const g = t.build(f, p);
  const run = stageAgain ? sc.stage(g, { autograph: false }) : g;
  return run(...xs).map((y) => Array.from(y.dataSync(), Number));
}
