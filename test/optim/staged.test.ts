/**
 * Optimizers inside sc.stage (issue 11, point 6): the step count, the schedule's value and every
 * slot are Variables, so 5 training steps give the same numbers eagerly, with the step staged,
 * and inside one staged function whose native `for` over the steps AutoGraph turns into a graph
 * loop; all three equal an update computed by hand (float64 JS, below).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as sc from "../../src/api/index.js";
import * as optim from "../../src/optim/index.js";

const STEPS = 5;
const W0 = [0.5, -1.25, 2];
const A = [1, 0.5, 3];
const C = [0.2, 0.4, -0.6];

/** loss = 0.5 * sum(a * (w - c)^2); its gradient is a * (w - c). */
const lossOf = (w: sc.Tensor): sc.Tensor => sc.mul(sc.sum(sc.mul(sc.tensor(A, "float64"), sc.square(sc.sub(w, sc.tensor(C, "float64"))))), 0.5);
const gradOf = (w: number[]): number[] => w.map((wi, i) => A[i]! * (wi - C[i]!));

interface Case {
  name: string;
  make: () => optim.Optimizer;
  /** The rate for 0-based step s, by hand. */
  rate: (s: number) => number;
  /** One hand-computed update of w (mutates w and the state), at 1-based step t with rate lr. */
  update: (w: number[], g: number[], lr: number, t: number, state: Record<string, number[]>) => void;
}

const zeros = (): number[] => [0, 0, 0];
const cases: Case[] = [
  {
    name: "SGD momentum, weight decay, step decay",
    make: () => new optim.SGD({ momentum: 0.9, weightDecay: 0.1, learningRate: optim.stepDecay({ initial: 0.1, stepSize: 2, gamma: 0.5 }) }),
    rate: (s) => 0.1 * 0.5 ** Math.floor(s / 2),
    update(w, g, lr, _t, st) {
      const v = (st.v ??= zeros());
      for (let i = 0; i < 3; i++) {
        v[i] = 0.9 * v[i]! + g[i]!;
        w[i] = w[i]! * (1 - lr * 0.1) - lr * v[i]!;
      }
    },
  },
  {
    name: "SGD Nesterov, exponential decay",
    make: () => new optim.SGD({ momentum: 0.8, nesterov: true, learningRate: optim.exponentialDecay({ initial: 0.2, decayRate: 0.5, decaySteps: 3 }) }),
    rate: (s) => 0.2 * 0.5 ** (s / 3),
    update(w, g, lr, _t, st) {
      const v = (st.v ??= zeros());
      for (let i = 0; i < 3; i++) {
        v[i] = 0.8 * v[i]! + g[i]!;
        w[i] = w[i]! - lr * (g[i]! + 0.8 * v[i]!);
      }
    },
  },
  {
    name: "Adam, cosine decay with warm-up",
    make: () => new optim.Adam({ beta1: 0.8, beta2: 0.9, epsilon: 1e-6, learningRate: optim.cosineDecay({ initial: 0.1, decaySteps: 3, warmupSteps: 2, warmupFrom: 0.01, alpha: 0.1 }) }),
    rate: (s) => (s < 2 ? 0.01 + (0.1 - 0.01) * (s / 2) : 0.1 * (0.9 * 0.5 * (1 + Math.cos((Math.PI * Math.min(s - 2, 3)) / 3)) + 0.1)),
    update(w, g, lr, t, st) {
      const m = (st.m ??= zeros()), v = (st.v ??= zeros());
      for (let i = 0; i < 3; i++) {
        m[i] = 0.8 * m[i]! + 0.2 * g[i]!;
        v[i] = 0.9 * v[i]! + 0.1 * g[i]! * g[i]!;
        w[i] = w[i]! - (lr * (m[i]! / (1 - 0.8 ** t))) / (Math.sqrt(v[i]! / (1 - 0.9 ** t)) + 1e-6);
      }
    },
  },
  {
    name: "AdamW (AMSGrad), global-norm clipping, cosine decay",
    make: () => new optim.AdamW({ amsgrad: true, weightDecay: 0.05, clipNorm: 1, learningRate: optim.cosineDecay({ initial: 0.05, decaySteps: 5 }) }),
    rate: (s) => 0.05 * 0.5 * (1 + Math.cos((Math.PI * Math.min(s, 5)) / 5)),
    update(w, gRaw, lr, t, st) {
      const norm = Math.sqrt(gRaw.reduce((a, x) => a + x * x, 0));
      const g = gRaw.map((x) => x * (1 / Math.max(norm, 1)));
      const m = (st.m ??= zeros()), v = (st.v ??= zeros()), vMax = (st.vMax ??= zeros());
      for (let i = 0; i < 3; i++) {
        m[i] = 0.9 * m[i]! + 0.1 * g[i]!;
        v[i] = 0.999 * v[i]! + 0.001 * g[i]! * g[i]!;
        vMax[i] = Math.max(vMax[i]!, v[i]!);
        w[i] = w[i]! * (1 - lr * 0.05) - (lr * (m[i]! / (1 - 0.9 ** t))) / (Math.sqrt(vMax[i]! / (1 - 0.999 ** t)) + 1e-8);
      }
    },
  },
  {
    name: "RMSprop centered with momentum, step decay",
    make: () => new optim.RMSprop({ rho: 0.9, momentum: 0.5, centered: true, learningRate: optim.stepDecay({ initial: 0.05, stepSize: 3, gamma: 0.1 }) }),
    rate: (s) => 0.05 * 0.1 ** Math.floor(s / 3),
    update(w, g, lr, _t, st) {
      const ms = (st.ms ??= zeros()), mg = (st.mg ??= zeros()), buf = (st.buf ??= zeros());
      for (let i = 0; i < 3; i++) {
        ms[i] = 0.9 * ms[i]! + 0.1 * g[i]! * g[i]!;
        mg[i] = 0.9 * mg[i]! + 0.1 * g[i]!;
        buf[i] = 0.5 * buf[i]! + g[i]! / (Math.sqrt(ms[i]! - mg[i]! * mg[i]!) + 1e-8);
        w[i] = w[i]! - lr * buf[i]!;
      }
    },
  },
  {
    name: "Adagrad, exponential decay (staircase)",
    make: () => new optim.Adagrad({ initialAccumulator: 0.1, learningRate: optim.exponentialDecay({ initial: 0.3, decayRate: 0.7, decaySteps: 2, staircase: true }) }),
    rate: (s) => 0.3 * 0.7 ** Math.floor(s / 2),
    update(w, g, lr, _t, st) {
      const acc = (st.acc ??= [0.1, 0.1, 0.1]);
      for (let i = 0; i < 3; i++) {
        acc[i] = acc[i]! + g[i]! * g[i]!;
        w[i] = w[i]! - (lr * g[i]!) / (Math.sqrt(acc[i]!) + 1e-10);
      }
    },
  },
];

/** w after each of STEPS steps, computed by hand. */
function byHand(c: Case): number[][] {
  const w = W0.slice();
  const state: Record<string, number[]> = {};
  const out: number[][] = [];
  for (let s = 0; s < STEPS; s++) {
    c.update(w, gradOf(w), c.rate(s), s + 1, state);
    out.push(w.slice());
  }
  return out;
}

/** One training step: the tape's gradient of the loss, then the optimizer's update. */
function trainStep(w: sc.Variable, opt: optim.Optimizer): sc.Tensor {
  const tape = new sc.GradientTape();
  const loss = tape.record(() => lossOf(w));
  opt.step([tape.gradient(loss, w) as sc.Tensor], [w]);
  return loss;
}

/** All STEPS steps in one staged function: a native `for` over a tensor count, converted by AutoGraph. */
function trainLoop(w: sc.Variable, opt: optim.Optimizer, steps: sc.Tensor): sc.Tensor {
  let loss = sc.scalar(0, "float64");
  for (let i: any = sc.scalar(0, "int32"); i < steps; i = i + 1) {
    loss = trainStep(w, opt);
  }
  return loss;
}
const convertedLoop = sc.autograph(trainLoop, { scope: { sc, trainStep } });

function close(actual: ArrayLike<number>, expected: ArrayLike<number>, what: string, tol = 1e-12): void {
  assert.equal(actual.length, expected.length, what);
  for (let i = 0; i < expected.length; i++) {
    assert.ok(Math.abs(actual[i]! - expected[i]!) <= tol * (1 + Math.abs(expected[i]!)), `${what}[${i}]: got ${actual[i]}, expected ${expected[i]}`);
  }
}

for (const c of cases) {
  test(`${c.name}: eager = staged step = staged loop over steps = by hand, over ${STEPS} steps`, () => {
    const expected = byHand(c);
    const rates = Array.from({ length: STEPS }, (_, s) => c.rate(s));

    const eagerW = sc.variable(sc.tensor(W0, "float64"));
    const eagerOpt = c.make();
    for (let s = 0; s < STEPS; s++) {
      trainStep(eagerW, eagerOpt);
      close(eagerW.dataSync(), expected[s]!, `eager w after step ${s + 1}`);
      close([eagerOpt.learningRateVariable.item() as number], [rates[s]!], `eager rate of step ${s + 1}`);
    }

    const stagedW = sc.variable(sc.tensor(W0, "float64"));
    const stagedOpt = c.make();
    const staged = sc.stage(trainStep);
    for (let s = 0; s < STEPS; s++) {
      staged(stagedW, stagedOpt);
      close(stagedW.dataSync(), expected[s]!, `staged w after step ${s + 1}`);
      close([stagedOpt.learningRateVariable.item() as number], [rates[s]!], `staged rate of step ${s + 1}`);
    }
    assert.equal(staged.traceCount, 1, "one trace serves every step");
    assert.equal(stagedOpt.iterations.item(), STEPS);

    const loopW = sc.variable(sc.tensor(W0, "float64"));
    const loopOpt = c.make();
    const loop = sc.stage(convertedLoop);
    loop(loopW, loopOpt, sc.scalar(2, "int32"));
    close(loopW.dataSync(), expected[1]!, "in-graph loop: w after 2 steps");
    loop(loopW, loopOpt, sc.scalar(STEPS - 2, "int32"));
    close(loopW.dataSync(), expected[STEPS - 1]!, `in-graph loop: w after ${STEPS} steps`);
    assert.equal(loop.traceCount, 1);
    assert.equal(loopOpt.iterations.item(), STEPS);
    close([loopOpt.learningRateVariable.item() as number], [rates[STEPS - 1]!], "in-graph loop: rate of the last step");

    // The slots agree too.
    for (const slot of eagerOpt.slotNames) {
      close(loopOpt.getSlot(loopW, slot)!.dataSync(), eagerOpt.getSlot(eagerW, slot)!.dataSync(), `slot ${slot}: loop vs eager`);
      close(stagedOpt.getSlot(stagedW, slot)!.dataSync(), eagerOpt.getSlot(eagerW, slot)!.dataSync(), `slot ${slot}: staged vs eager`);
    }
  });
}

test("float32 variables: staged steps equal eager steps bit for bit", () => {
  const make = () => new optim.Adam({ learningRate: optim.cosineDecay({ initial: 0.05, decaySteps: 4, warmupSteps: 1 }) });
  const lossF = (w: sc.Tensor) => sc.sum(sc.square(sc.sub(w, sc.tensor([0.3, -0.2]))));
  const step = (w: sc.Variable, opt: optim.Optimizer) => opt.minimize(() => lossF(w), [w]);
  const we = sc.variable(sc.tensor([1, 2]));
  const ws = sc.variable(sc.tensor([1, 2]));
  const oe = make();
  const os = make();
  const staged = sc.stage(step);
  for (let i = 0; i < 5; i++) {
    step(we, oe);
    staged(ws, os);
    assert.deepEqual(Array.from(ws.dataSync()), Array.from(we.dataSync()), `step ${i + 1}`);
  }
  assert.equal(ws.dtype, "float32");
});
