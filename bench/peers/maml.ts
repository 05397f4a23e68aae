/**
 * MAML on sinusoids (Finn et al. 2017; the AutoGraph paper's appendix): a 1-40-40-1 ReLU
 * network, 4 tasks per meta-batch (amplitude 0.1-5, phase 0-pi), 10 support and 10 query points
 * each, inner SGD steps at rate 0.01 whose count is a tensor argument, and the meta-gradient
 * of the query loss after adaptation with respect to the initial weights: second order, through
 * the inner loop.
 *
 * One source with a native `for` loop over the tensor step count runs eagerly and staged after
 * AutoGraph's conversion; the inner loop written with sc.whileLoop is the hand-written graph
 * code. Both staged meta-gradients are checked against the eager one before timing.
 */
import * as sc from "../../src/api/index.js";
import { randomValues } from "../common.js";
import { assertClose, type Workload } from "./harness.js";
import { HAND_WRITTEN, engineSystem, jaxNotPorted, scDefaults, tfNotPorted } from "./systems.js";

const TASKS = 4, SHOTS = 10, HIDDEN = 40, ALPHA = 0.01, INNER_STEPS = 5;
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type T = any;

function net(x: T, w1: T, b1: T, w2: T, b2: T, w3: T, b3: T): T {
  const h = sc.relu(sc.add(sc.matmul(sc.relu(sc.add(sc.matmul(x, w1), b1)), w2), b2));
  return sc.add(sc.matmul(h, w3), b3);
}
const mse = (x: T, y: T, ...p: T[]) => sc.mean(sc.square(sc.sub(net(x, ...(p as [T, T, T, T, T, T])), y)));
const innerGrad = (x: T, y: T, ...p: T[]): T[] => sc.grad((...q: T[]) => mse(x, y, ...q), { argnums: [0, 1, 2, 3, 4, 5] })(...p) as T[];
const sgd = (p: T[], g: T[]) => p.map((v, i) => sc.sub(v, sc.mul(g[i], ALPHA)));

/** The meta-gradient, the inner loop a native `for` over the tensor `steps` (converted by AutoGraph). */
function metaGrad(xs: T, ys: T, xq: T, yq: T, steps: T, ...params: T[]): T[] {
  const metaLoss = (...init: T[]) => {
    let total = sc.scalar(0);
    for (let task = 0; task < TASKS; task++) {
      const x = sc.gather(xs, task, 0), y = sc.gather(ys, task, 0);
      let [w1, b1, w2, b2, w3, b3] = init;
      for (let i = 0; i < steps; i++) [w1, b1, w2, b2, w3, b3] = sgd([w1, b1, w2, b2, w3, b3], innerGrad(x, y, w1, b1, w2, b2, w3, b3));
      total = sc.add(total, mse(sc.gather(xq, task, 0), sc.gather(yq, task, 0), w1, b1, w2, b2, w3, b3));
    }
    return sc.div(total, TASKS);
  };
  return sc.grad(metaLoss, { argnums: [0, 1, 2, 3, 4, 5] })(...params) as T[];
}

/** The same with the inner loop written with sc.whileLoop. */
function metaGradByHand(xs: sc.Tensor, ys: sc.Tensor, xq: sc.Tensor, yq: sc.Tensor, steps: sc.Tensor, ...params: sc.Tensor[]): sc.Tensor[] {
  const metaLoss = (...init: sc.Tensor[]) => {
    let total = sc.scalar(0);
    for (let task = 0; task < TASKS; task++) {
      const x = sc.gather(xs, task, 0), y = sc.gather(ys, task, 0);
      const [, ...adapted] = sc.whileLoop(
        (i) => sc.less(i!, steps),
        (i, ...p) => [sc.add(i!, 1), ...sgd(p, innerGrad(x, y, ...p))],
        [sc.scalar(0, "int32"), ...init],
      );
      total = sc.add(total, mse(sc.gather(xq, task, 0), sc.gather(yq, task, 0), ...adapted));
    }
    return sc.div(total, TASKS);
  };
  return sc.grad(metaLoss, { argnums: [0, 1, 2, 3, 4, 5] })(...params) as sc.Tensor[];
}

/** Seeded tasks: [TASKS, SHOTS, 1] inputs in [-5, 5] and their sinusoid values. */
function tasks(seed: number): sc.Tensor[] {
  const amp = randomValues(TASKS, seed).map((v) => 2.55 + 2.45 * v), phase = randomValues(TASKS, seed + 1).map((v) => (Math.PI / 2) * (1 + v));
  const x = randomValues(TASKS * SHOTS, seed + 2, 5);
  const y = x.map((v, i) => amp[Math.floor(i / SHOTS)]! * Math.sin(v + phase[Math.floor(i / SHOTS)]!));
  return [sc.tensor(x, "float32", [TASKS, SHOTS, 1]), sc.tensor(y, "float32", [TASKS, SHOTS, 1])];
}

export async function mamlWorkload(): Promise<Workload> {
  const shapes = [[1, HIDDEN], [HIDDEN], [HIDDEN, HIDDEN], [HIDDEN], [HIDDEN, 1], [1]];
  const params = shapes.map((s, i) => sc.tensor(randomValues(s.reduce((a, b) => a * b, 1), 700 + i, s.length === 1 ? 0 : Math.sqrt(3 / s[0]!)), "float32", s));
  const [xs, ys] = tasks(710), [xq, yq] = tasks(720);
  const steps = sc.scalar(INNER_STEPS, "int32");
  const args: T[] = [xs!, ys!, xq!, yq!, steps, ...params];
  type Fn = (...a: T[]) => T;
  const eager: Fn = sc.autograph(metaGrad, { scope: { sc, sgd, innerGrad, mse, TASKS } });
  const converted: Fn = sc.stage(eager, { name: "maml_meta_gradient" });
  const byHand: Fn = sc.stage(metaGradByHand as Fn, { name: "maml_meta_gradient_by_hand", autograph: false });
  scDefaults();
  const want = (eager(...args) as sc.Tensor[]).map((g) => g.dataSync());
  for (const [name, fn] of [["converted", converted], ["by hand", byHand]] as const) {
    (fn(...args) as sc.Tensor[]).forEach((g, i) => assertClose(`MAML ${name} meta-gradient ${i}`, g.dataSync(), want[i]!, 1e-4));
  }
  return {
    name: `MAML on sinusoids: meta-gradient over ${TASKS} tasks, ${INNER_STEPS} inner steps (a tensor count), 1-${HIDDEN}-${HIDDEN}-1 network`,
    call: "one meta-gradient (second order through the inner loops)",
    note: "Goal: AutoGraph's conversion within 3% of the hand-written loops.",
    reference: HAND_WRITTEN,
    systems: [
      { name: "stagecraft eager", enter: scDefaults, run: () => eager(...args) },
      { name: "stagecraft staged (AutoGraph)", enter: scDefaults, run: () => converted(...args) },
      { name: HAND_WRITTEN, enter: scDefaults, run: () => byHand(...args) },
      engineSystem(eager, args, converted(...args)),
      ...tfNotPorted(),
      jaxNotPorted("second-order gradients through a loop"),
    ],
  };
}
