// Staged vs eager throughput (examples/second) on two small models where per-op overhead
// dominates, measured in the same run (ratio = staged / eager):
// - an L2HMC-style sampler (Levy, Hoffman, Sohl-Dickstein 2018; the TF Eager paper's
//   benchmark) on a strongly correlated 2-D Gaussian: 10 leapfrog steps with the L2HMC
//   augmentation (two small MLPs producing scale, translation and transformation terms),
//   then a Metropolis-Hastings accept/reject, at batch sizes 1, 8 and 32;
// - a small RNN cell loop, h = tanh(x_t W + h U + b), hidden 64, 20 steps, batch 1 and 32.
// Run standalone: node --import tsx bench/staged.ts
import * as sc from "../src/api/index.js";
import { type Row, isMainModule, median, randomValues } from "./common.js";



let seedCounter = 1;
function randomTensor(shape: number[], scale = 1): sc.Tensor {
  return sc.tensor(randomValues(shape.reduce((x, y) => x * y, 1), seedCounter++ * 7919, scale), "float32", shape);
}

// ---------------------------------------------------------------------------------------
// L2HMC

const X_DIM = 2;
const HIDDEN = 10;
const LEAPFROG_STEPS = 10;
const EPS = 0.1;

/** A dense layer y = x W + b (weights as variables, as a model holds them). */
class Dense {
  readonly w: sc.Variable;
  readonly b: sc.Variable;
  constructor(inDim: number, outDim: number, factor = 1) {
    this.w = sc.variable(randomTensor([inDim, outDim], factor * Math.sqrt(1 / inDim)));
    this.b = sc.variable(sc.zeros([outDim]));
  }
  apply(x: sc.Tensor): sc.Tensor {
    return sc.matmul(x, this.w).add(this.b);
  }
}

/** L2HMC's GenericNet: (v, x, t) -> (scale, translation, transformation). */
class GenericNet {
  readonly vLayer = new Dense(X_DIM, HIDDEN, 1 / 3);
  readonly xLayer = new Dense(X_DIM, HIDDEN, 2 / 3);
  readonly tLayer = new Dense(2, HIDDEN, 1 / 3);
  readonly hLayer = new Dense(HIDDEN, HIDDEN);
  readonly scaleLayer = new Dense(HIDDEN, X_DIM, 0.001);
  readonly translationLayer = new Dense(HIDDEN, X_DIM, 0.001);
  readonly transformationLayer = new Dense(HIDDEN, X_DIM, 0.001);
  readonly coeffScale = sc.variable(sc.zeros([1, X_DIM]));
  readonly coeffTransformation = sc.variable(sc.zeros([1, X_DIM]));

  apply(v: sc.Tensor, x: sc.Tensor, t: sc.Tensor): [sc.Tensor, sc.Tensor, sc.Tensor] {
    let h = this.vLayer.apply(v).add(this.xLayer.apply(x)).add(this.tLayer.apply(t));
    h = sc.relu(h);
    h = sc.relu(this.hLayer.apply(h));
    const scale = sc.tanh(this.scaleLayer.apply(h)).mul(sc.exp(this.coeffScale));
    const translation = this.translationLayer.apply(h);
    const transformation = sc.tanh(this.transformationLayer.apply(h)).mul(sc.exp(this.coeffTransformation));
    return [scale, translation, transformation];
  }
}

/** The L2HMC dynamics on U(x) = 0.5 x^T A x (A: inverse covariance of a strongly correlated Gaussian). */
class L2hmc {
  readonly momentumNet = new GenericNet();
  readonly positionNet = new GenericNet();
  readonly precision: sc.Tensor;
  /** Binary masks per step (which coordinates the first x update changes). */
  readonly masks: sc.Tensor[];

  constructor() {
    const cov = [
      [50.05, -49.95],
      [-49.95, 50.05],
    ];
    const det = cov[0]![0]! * cov[1]![1]! - cov[0]![1]! * cov[1]![0]!;
    this.precision = sc.tensor([
      [cov[1]![1]! / det, -cov[0]![1]! / det],
      [-cov[1]![0]! / det, cov[0]![0]! / det],
    ]);
    this.masks = Array.from({ length: LEAPFROG_STEPS }, (_, i) => sc.tensor(i % 2 === 0 ? [1, 0] : [0, 1]));
  }

  energy(x: sc.Tensor): sc.Tensor {
    return sc.sum(sc.matmul(x, this.precision).mul(x), 1).mul(0.5);
  }
  gradEnergy(x: sc.Tensor): sc.Tensor {
    return sc.matmul(x, this.precision);
  }
  hamiltonian(x: sc.Tensor, v: sc.Tensor): sc.Tensor {
    return this.energy(x).add(sc.sum(v.mul(v), 1).mul(0.5));
  }

  time(step: number): sc.Tensor {
    const t = (2 * Math.PI * step) / LEAPFROG_STEPS;
    return sc.tensor([[Math.cos(t), Math.sin(t)]]);
  }

  updateV(x: sc.Tensor, v: sc.Tensor, t: sc.Tensor): [sc.Tensor, sc.Tensor] {
    const grad = this.gradEnergy(x);
    let [scale, translation, transformed] = this.momentumNet.apply(x, grad, t);
    scale = scale.mul(0.5 * EPS);
    transformed = transformed.mul(EPS);
    const vNew = v.mul(sc.exp(scale)).sub(sc.exp(transformed).mul(grad).sub(translation).mul(0.5 * EPS));
    return [vNew, sc.sum(scale, 1)];
  }

  updateX(x: sc.Tensor, v: sc.Tensor, t: sc.Tensor, mask: sc.Tensor, maskInv: sc.Tensor): [sc.Tensor, sc.Tensor] {
    let [scale, translation, transformed] = this.positionNet.apply(v, mask.mul(x), t);
    scale = scale.mul(EPS);
    transformed = transformed.mul(EPS);
    const moved = x.mul(sc.exp(scale)).add(sc.exp(transformed).mul(v).add(translation).mul(EPS));
    const xNew = mask.mul(x).add(maskInv.mul(moved));
    return [xNew, sc.sum(maskInv.mul(scale), 1)];
  }

  /** One sampler transition: 10 augmented leapfrog steps, then accept/reject. */
  transition(x0: sc.Tensor, v0: sc.Tensor, u: sc.Tensor): [sc.Tensor, sc.Tensor] {
    let x = x0,
      v = v0;
    let logdet: sc.Tensor = sc.zeros([x0.shape[0]!]);
    for (let i = 0; i < LEAPFROG_STEPS; i++) {
      const t = this.time(i);
      const mask = this.masks[i]!;
      const maskInv = sc.sub(1, mask);
      let ld: sc.Tensor;
      [v, ld] = this.updateV(x, v, t);
      logdet = logdet.add(ld);
      [x, ld] = this.updateX(x, v, t, mask, maskInv);
      logdet = logdet.add(ld);
      [x, ld] = this.updateX(x, v, t, maskInv, mask);
      logdet = logdet.add(ld);
      [v, ld] = this.updateV(x, v, t);
      logdet = logdet.add(ld);
    }
    const logAccept = this.hamiltonian(x0, v0).sub(this.hamiltonian(x, v)).add(logdet);
    const acceptProb = sc.exp(sc.minimum(logAccept, 0));
    const accept = sc.less(u, acceptProb);
    const next = sc.where(sc.expandDims(accept, 1), x, x0);
    return [next, acceptProb];
  }
}

// ---------------------------------------------------------------------------------------
// RNN

const RNN_HIDDEN = 64;
const RNN_INPUT = 32;
const RNN_STEPS = 20;

class RnnCell {
  readonly w = sc.variable(randomTensor([RNN_INPUT, RNN_HIDDEN], Math.sqrt(1 / RNN_INPUT)));
  readonly u = sc.variable(randomTensor([RNN_HIDDEN, RNN_HIDDEN], Math.sqrt(1 / RNN_HIDDEN)));
  readonly b = sc.variable(sc.zeros([RNN_HIDDEN]));

  run(xs: sc.Tensor[], h0: sc.Tensor): sc.Tensor {
    let h = h0;
    for (const x of xs) h = sc.tanh(sc.matmul(x, this.w).add(sc.matmul(h, this.u)).add(this.b));
    return h;
  }
}

// ---------------------------------------------------------------------------------------
// cases

export interface StagedCase {
  name: string;
  batch: number;
  eager: () => unknown;
  staged: () => unknown;
  /** The staged function's concrete function for these arguments (for inspection). */
  concrete: () => sc.ConcreteFunction;
}

let l2hmcModel: L2hmc | null = null;
let l2hmcStaged: ((x: sc.Tensor, v: sc.Tensor, u: sc.Tensor) => [sc.Tensor, sc.Tensor]) | null = null;

/** One L2HMC transition at `batch`, eagerly and staged (checked to agree). */
export function makeL2hmcBench(batch: number): StagedCase {
  const model = (l2hmcModel ??= new L2hmc());
  const eagerStep = (x: sc.Tensor, v: sc.Tensor, u: sc.Tensor) => model.transition(x, v, u);
  const stagedStep = (l2hmcStaged ??= sc.stage(eagerStep, { name: "l2hmc_transition" }));
  const x = randomTensor([batch, X_DIM], 2);
  const v = randomTensor([batch, X_DIM], 1);
  const u = sc.tensor(randomValues(batch, 99 + batch).map((z) => (z + 1) / 2));
  assertClose(`l2hmc batch ${batch}`, stagedStep(x, v, u)[0], eagerStep(x, v, u)[0]);
  return {
    name: `staged l2hmc 10 leapfrog, batch ${batch}`,
    batch,
    eager: () => eagerStep(x, v, u),
    staged: () => stagedStep(x, v, u),
    concrete: () => (stagedStep as sc.StagedFunction<[sc.Tensor, sc.Tensor, sc.Tensor], unknown>).concrete(x, v, u),
  };
}

let rnnCell: RnnCell | null = null;
let rnnStaged: ((xs: sc.Tensor[], h0: sc.Tensor) => sc.Tensor) | null = null;

/** The 20-step RNN loop at `batch`, eagerly and staged (checked to agree). */
export function makeRnnBench(batch: number): StagedCase {
  const cell = (rnnCell ??= new RnnCell());
  const eagerRnn = (xs: sc.Tensor[], h0: sc.Tensor) => cell.run(xs, h0);
  const stagedRnn = (rnnStaged ??= sc.stage(eagerRnn, { name: "rnn_loop" }));
  const xs = Array.from({ length: RNN_STEPS }, () => randomTensor([batch, RNN_INPUT]));
  const h0 = sc.zeros([batch, RNN_HIDDEN]);
  assertClose(`rnn batch ${batch}`, stagedRnn(xs, h0), eagerRnn(xs, h0));
  return {
    name: `staged rnn h64 x20 steps, batch ${batch}`,
    batch,
    eager: () => eagerRnn(xs, h0),
    staged: () => stagedRnn(xs, h0),
    concrete: () => (stagedRnn as sc.StagedFunction<[sc.Tensor[], sc.Tensor], unknown>).concrete(xs, h0),
  };
}

// ---------------------------------------------------------------------------------------
// timing

let sink: unknown = null;
const WARMUP_CALLS = 2000;

/** Calls of `fn` that take about `seconds`. */
function callsFor(fn: () => unknown, seconds: number): number {
  let n = 1;
  for (;;) {
    const t = performance.now();
    for (let i = 0; i < n; i++) sink = fn();
    const dt = (performance.now() - t) / 1000;
    if (dt >= seconds / 4) return Math.max(1, Math.round((n * seconds) / dt));
    n *= 2;
  }
}

function rate(fn: () => unknown, n: number): number {
  const t = performance.now();
  for (let i = 0; i < n; i++) sink = fn();
  return n / ((performance.now() - t) / 1000);
}

/**
 * Examples per second of both variants. Rounds alternate between them so that load changes on
 * the machine hit both alike; the ratio is the median of the per-pair ratios.
 */
function measure(c: StagedCase, roundSeconds = 0.2, rounds = 7): { eager: number; staged: number; ratio: number } {
  // Warm-up: V8 optimizes a generated function only after it has run ~1000 times (its code
  // runs once per call: no loop makes it hot sooner), so both variants first run at least
  // WARMUP_CALLS times (and 1 s), at most 20 s.
  for (const fn of [c.staged, c.eager]) {
    const t = performance.now();
    for (let i = 0; (i < WARMUP_CALLS || performance.now() - t < 1000) && performance.now() - t < 20_000; i++) sink = fn();
  }
  const ne = callsFor(c.eager, roundSeconds);
  const ns = callsFor(c.staged, roundSeconds);
  const e: number[] = [],
    s: number[] = [],
    r: number[] = [];
  for (let i = 0; i < rounds; i++) {
    const a = rate(c.eager, ne) * c.batch;
    const b = rate(c.staged, ns) * c.batch;
    e.push(a);
    s.push(b);
    r.push(b / a);
  }
  return { eager: median(e), staged: median(s), ratio: median(r) };
}

function assertClose(what: string, a: sc.Tensor | undefined, b: sc.Tensor | undefined, tol = 1e-5): void {
  const x = a!.dataSync(),
    y = b!.dataSync();
  if (x.length !== y.length) throw new Error(`bench/staged: ${what}: ${x.length} vs ${y.length} values`);
  for (let i = 0; i < x.length; i++) {
    if (!(Math.abs(x[i]! - y[i]!) <= tol * (1 + Math.abs(y[i]!)))) throw new Error(`bench/staged: ${what}: staged ${x[i]} != eager ${y[i]} at ${i}`);
  }
}

export async function benchStaged(): Promise<Row[]> {
  const rows: Row[] = [];
  const cases = [...[1, 8, 32].map(makeL2hmcBench), ...[1, 32].map(makeRnnBench)];
  for (const c of cases) {
    const m = measure(c);
    rows.push({ name: c.name, peer: "stagecraft eager", ours: m.staged, theirs: m.eager, unit: "ex/s", ratio: m.ratio });
  }
  if (sink === null) throw new Error("unreachable");
  return rows;
}

if (isMainModule(import.meta.url)) {
  for (const r of await benchStaged()) {
    console.log(`${r.name.padEnd(40)}${r.peer.padEnd(18)}${r.ours.toFixed(0).padStart(10)}${r.theirs.toFixed(0).padStart(10)}  ${r.unit}  ${r.ratio.toFixed(2)}x`);
  }
}
