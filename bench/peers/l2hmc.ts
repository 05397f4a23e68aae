/**
 * The L2HMC sampler (TF Eager paper): written once against lib.ts and run by Stagecraft eager,
 * staged and on the onnxruntime engine where `sc.stage` has it, and by tfjs (cpu, wasm; tf.tidy
 * per call).
 */
import * as sc from "../../src/api/index.js";
import { randomValues } from "../common.js";
import type { Workload } from "./harness.js";
import { scLib, tfLib, type Lib, type T } from "./lib.js";
import { jaxNotPorted, ortEngine, scDefaults, tf, tfSystems } from "./systems.js";

// L2HMC (Levy, Hoffman, Sohl-Dickstein 2018; the TF Eager paper's sampler benchmark)

const X_DIM = 2, HIDDEN = 10, LEAPFROG = 10, EPS = 0.1;

interface Weights { [name: string]: Float32Array }

/** The weights of the two GenericNets (seeded), as plain arrays every library loads. */
function l2hmcWeights(): Weights {
  const w: Weights = {};
  let seed = 1;
  for (const net of ["m", "p"]) {
    const dense = (name: string, i: number, o: number, f: number) => {
      w[`${net}${name}W`] = randomValues(i * o, seed++ * 7919, f * Math.sqrt(1 / i));
      w[`${net}${name}b`] = new Float32Array(o);
    };
    dense("v", X_DIM, HIDDEN, 1 / 3);
    dense("x", X_DIM, HIDDEN, 2 / 3);
    dense("t", 2, HIDDEN, 1 / 3);
    dense("h", HIDDEN, HIDDEN, 1);
    dense("s", HIDDEN, X_DIM, 0.001);
    dense("q", HIDDEN, X_DIM, 0.001);
    dense("r", HIDDEN, X_DIM, 0.001);
  }
  return w;
}

/** One sampler transition from x: momentum and the accept threshold drawn inside, 10 augmented leapfrog steps (20 energy gradients), Metropolis-Hastings. */
function l2hmc(lib: Lib, weights: Weights): (x: T) => T {
  const shapes: Record<string, number[]> = {};
  const W: Record<string, T> = {};
  for (const [k, v] of Object.entries(weights)) {
    const inDim = k[1] === "v" || k[1] === "x" || k[1] === "t" ? X_DIM : HIDDEN;
    shapes[k] = k.endsWith("b") ? [v.length] : [inDim, v.length / inDim];
    W[k] = lib.tensor(v, shapes[k]!);
  }
  const cov = [[50.05, -49.95], [-49.95, 50.05]], det = 50.05 * 50.05 - 49.95 * 49.95;
  const precision = lib.tensor(Float32Array.from([cov[1]![1]! / det, -cov[0]![1]! / det, -cov[1]![0]! / det, cov[0]![0]! / det]), [2, 2]);
  const masks = Array.from({ length: LEAPFROG }, (_, i) => lib.tensor(Float32Array.from(i % 2 === 0 ? [1, 0] : [0, 1]), [2]));
  const times = Array.from({ length: LEAPFROG }, (_, i) => lib.tensor(Float32Array.from([Math.cos((2 * Math.PI * i) / LEAPFROG), Math.sin((2 * Math.PI * i) / LEAPFROG)]), [1, 2]));
  const dense = (n: string, x: T) => lib.add(lib.matmul(x, W[n + "W"]), W[n + "b"]);
  const net = (p: string, v: T, x: T, t: T): [T, T, T] => {
    let h = lib.relu(lib.add(lib.add(dense(p + "v", v), dense(p + "x", x)), dense(p + "t", t)));
    h = lib.relu(dense(p + "h", h));
    return [lib.tanh(dense(p + "s", h)), dense(p + "q", h), lib.tanh(dense(p + "r", h))];
  };
  const gradEnergy = (x: T) => lib.matmul(x, precision);
  const energy = (x: T) => lib.mul(lib.sum(lib.mul(gradEnergy(x), x), 1), 0.5);
  const hamiltonian = (x: T, v: T) => lib.add(energy(x), lib.mul(lib.sum(lib.mul(v, v), 1), 0.5));
  const updateV = (x: T, v: T, t: T): [T, T] => {
    const g = gradEnergy(x);
    let [s, q, r] = net("m", x, g, t);
    s = lib.mul(s, 0.5 * EPS);
    r = lib.mul(r, EPS);
    return [lib.sub(lib.mul(v, lib.exp(s)), lib.mul(lib.sub(lib.mul(lib.exp(r), g), q), 0.5 * EPS)), lib.sum(s, 1)];
  };
  const updateX = (x: T, v: T, t: T, m: T, mi: T): [T, T] => {
    let [s, q, r] = net("p", v, lib.mul(m, x), t);
    s = lib.mul(s, EPS);
    r = lib.mul(r, EPS);
    const moved = lib.add(lib.mul(x, lib.exp(s)), lib.mul(lib.add(lib.mul(lib.exp(r), v), q), EPS));
    return [lib.add(lib.mul(m, x), lib.mul(mi, moved)), lib.sum(lib.mul(mi, s), 1)];
  };
  return (x0: T) => {
    const batch = x0.shape[0];
    const v0 = lib.normal([batch, X_DIM]);
    const u = lib.uniform([batch]);
    let x = x0, v = v0, logdet: T = lib.mul(lib.sum(x0, 1), 0), ld: T;
    for (let i = 0; i < LEAPFROG; i++) {
      const m = masks[i], mi = lib.sub(1, m), t = times[i];
      [v, ld] = updateV(x, v, t); logdet = lib.add(logdet, ld);
      [x, ld] = updateX(x, v, t, m, mi); logdet = lib.add(logdet, ld);
      [x, ld] = updateX(x, v, t, mi, m); logdet = lib.add(logdet, ld);
      [v, ld] = updateV(x, v, t); logdet = lib.add(logdet, ld);
    }
    const accept = lib.exp(lib.minimum(lib.add(lib.sub(hamiltonian(x0, v0), hamiltonian(x, v)), logdet), 0));
    return lib.where(lib.expandDims(lib.less(u, accept), 1), x, x0);
  };
}

export async function l2hmcWorkload(batch: number): Promise<Workload> {
  const w = l2hmcWeights();
  const x0 = randomValues(batch * X_DIM, 77 + batch, 2);
  const scStep = l2hmc(scLib, w);
  const X = sc.tensor(x0, "float32", [batch, X_DIM]);
  const staged = sc.stage(scStep, { name: "l2hmc_sample", autograph: false });
  // fresh draws per staged call: two calls give different samples
  scDefaults();
  const a = staged(X).dataSync(), b = staged(X).dataSync();
  if (a.every((v: number, i: number) => v === b[i]) && batch > 1) throw new Error("l2hmc: two staged samples are equal: draws are frozen");
  const engine = ortEngine(scStep);
  return {
    name: `L2HMC sampler, batch ${batch}`,
    call: `one transition of ${batch} chain(s): 10 augmented leapfrog steps, 20 energy gradients, fresh momentum and accept draws`,
    throughput: { perCall: batch, unit: "samples/s" },
    systems: [
      { name: "stagecraft eager", enter: scDefaults, run: () => scStep(X) },
      { name: "stagecraft staged", enter: scDefaults, run: () => staged(X) },
      { name: "stagecraft on onnxruntime engine", run: () => engine.staged!(X), skip: engine.skip },
      ...tfSystems(() => {
        const step = l2hmc(tfLib, w), x = tf.tensor(x0, [batch, X_DIM]);
        return () => step(x);
      }),
      { name: "onnxruntime-node", run: () => null, skip: "no hand-built model: 20 small subgraphs with random draws; the engine row will run it" },
      jaxNotPorted("fresh random draws inside the jitted step need key plumbing"),
    ],
  };
}
