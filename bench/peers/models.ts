/**
 * Model workloads of the staging papers, each written once against lib.ts and run by every
 * system: Stagecraft eager and staged (sc.stage, default settings), tfjs (cpu and wasm
 * backends, tf.tidy per call), onnxruntime-node where a hand-built model expresses it.
 * jax-js is not in these tables: its arrays are moved into every op (`.ref` to keep one), so
 * a model needs its own port, not yet written; it runs the throughput tables.
 */
import * as sc from "../../src/api/index.js";
import { randomValues } from "../common.js";
import { assertClose, type System, type Workload } from "./harness.js";
import { scLib, tfLib, type Lib, type T } from "./lib.js";
import { makeNode } from "../../src/onnx/builders.js";
import { onnxModel, ortEngine, ortF32, ortSession, ortSystem, scDefaults, tf, tfBackend, tfSystems } from "./systems.js";

// ---------------------------------------------------------------------------------------
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
    ],
  };
}

// ---------------------------------------------------------------------------------------
// RNN: h_t = tanh(x_t W + h_{t-1} U + b) (the AutoGraph paper's dynamic RNN)

const RNN_IN = 64, RNN_H = 256;

export async function rnnWorkload(seq: number, batch: number, train: boolean): Promise<Workload> {
  const w = randomValues(RNN_IN * RNN_H, 101, Math.sqrt(1 / RNN_IN)), u = randomValues(RNN_H * RNN_H, 102, Math.sqrt(1 / RNN_H));
  const bias = randomValues(RNN_H, 103, 0.1), xs = randomValues(seq * batch * RNN_IN, 104);
  const make = (lib: Lib) => {
    const W = lib.tensor(w, [RNN_IN, RNN_H]), U = lib.tensor(u, [RNN_H, RNN_H]), B = lib.tensor(bias, [RNN_H]);
    const X = lib.tensor(xs, [seq, batch, RNN_IN]);
    const forward = (X: T, W: T, U: T, B: T) => {
      let h = lib.mul(lib.matmul(lib.unstack(X)[0], W), 0);
      for (const x of lib.unstack(X)) h = lib.tanh(lib.add(lib.add(lib.matmul(x, W), lib.matmul(h, U)), B));
      return h;
    };
    const step = train ? (X: T, W: T, U: T, B: T) => lib.grads((W: T, U: T, B: T) => lib.mean(forward(X, W, U, B)), [W, U, B]) : forward;
    return { step: step as (...a: T[]) => T, args: [X, W, U, B] as T[] };
  };
  const ours = make(scLib);
  const staged = sc.stage(ours.step, { name: train ? "rnn_train" : "rnn_forward", autograph: false });
  scDefaults();
  const first = (r: T) => (Array.isArray(r) ? r[1] : r);
  const want = first(ours.step(...ours.args)).dataSync();
  assertClose("rnn staged", first(staged(...ours.args)).dataSync(), want, 1e-4);
  await tfBackend("cpu");
  const theirs = make(tfLib);
  assertClose("rnn tfjs", tf.tidy(() => first(theirs.step(...theirs.args)).dataSync()), want, 1e-3);
  const engine = ortEngine(ours.step);
  const systems: System[] = [
    { name: "stagecraft eager", enter: scDefaults, run: () => ours.step(...ours.args) },
    { name: "stagecraft staged", enter: scDefaults, run: () => staged(...ours.args) },
    { name: "stagecraft on onnxruntime engine", run: () => engine.staged!(...ours.args), skip: engine.skip },
    ...tfSystems(() => {
      const m = make(tfLib);
      return () => m.step(...m.args);
    }, (b) => (b === "cpu" && batch > 32 ? "tfjs-cpu's products are plain JS loops: minutes per round at this size" : undefined)),
  ];
  if (!train) {
    // the ONNX RNN op: X [seq, batch, in], W [1, H, in], R [1, H, H], B [1, 2H] (Wb then Rb)
    const t = (a: Float32Array, r: number, c: number) => { const o = new Float32Array(r * c); for (let i = 0; i < r; i++) for (let j = 0; j < c; j++) o[j * r + i] = a[i * c + j]!; return o; };
    const Bfull = new Float32Array(2 * RNN_H); Bfull.set(bias);
    const graph = onnxModel(
      [makeNode("RNN", ["x", "w", "r", "b"], ["", "h"], { hidden_size: RNN_H })],
      [["x", [seq, batch, RNN_IN]]],
      [["h", [1, batch, RNN_H]]],
      [
        { name: "w", value: sc.tensor(t(w, RNN_IN, RNN_H), "float32", [1, RNN_H, RNN_IN]) },
        { name: "r", value: sc.tensor(t(u, RNN_H, RNN_H), "float32", [1, RNN_H, RNN_H]) },
        { name: "b", value: sc.tensor(Bfull, "float32", [1, 2 * RNN_H]) },
      ],
    );
    const feeds = { x: ortF32(xs, [seq, batch, RNN_IN]) };
    for (const threads of [1, 0]) {
      const s = await ortSession(graph, threads);
      assertClose("onnxruntime RNN", (await s.run(feeds)).h!.data as Float32Array, want, 1e-3);
      systems.push(ortSystem(`onnxruntime-node${threads === 1 ? ", 1 thread" : ", default threads"}`, s, feeds));
    }
  } else {
    systems.push({ name: "onnxruntime-node", run: () => null, skip: "inference only: a training step needs an exported gradient graph (the ONNX export helper's work)" });
  }
  return {
    name: `RNN hidden ${RNN_H}, sequence ${seq}, batch ${batch}, ${train ? "training step (gradients of W, U, b)" : "forward"}`,
    call: train ? "forward over the sequence and the gradients of every weight" : "the forward pass over the sequence",
    throughput: { perCall: batch, unit: "sequences/s" },
    systems,
  };
}

// ---------------------------------------------------------------------------------------
// MNIST linear model, SGD (the AutoGraph paper's in-graph training loop)

export async function mnistWorkload(steps: number): Promise<Workload> {
  const BATCH = 200, N = 2000;
  const { train } = sc.data.mnist({ layout: "flat" });
  const xs = Float32Array.from(train.images.dataSync().subarray(0, N * 784));
  const ys = new Float32Array(N * 10);
  train.labels.dataSync().subarray(0, N).forEach((d, i) => (ys[i * 10 + d] = 1));
  const X = sc.tensor(xs, "float32", [N, 784]), Y = sc.tensor(ys, "float32", [N, 10]);
  const batches = N / BATCH, LR = 0.5;
  const w = sc.variable(sc.zeros([784, 10])), b = sc.variable(sc.zeros([10]));
  const loss = (x: sc.Tensor, y: sc.Tensor, W: sc.Tensor, B: sc.Tensor) => sc.neg(sc.mean(sc.sum(sc.logSoftmax(sc.matmul(x, W).add(B), -1).mul(y), 1)));
  const sgd = (x: sc.Tensor, y: sc.Tensor) => {
    const [gw, gb] = sc.grad(loss, { argnums: [2, 3] })(x, y, w.read(), b.read()) as sc.Tensor[];
    w.assign(w.read().sub(gw!.mul(LR)));
    b.assign(b.read().sub(gb!.mul(LR)));
  };
  const batchOf = (i: number | sc.Tensor): [sc.Tensor, sc.Tensor] => {
    const step = typeof i === "number" ? sc.scalar(i, "int32") : i;
    const idx = sc.add(sc.arange(0, BATCH, 1, "int32"), sc.mul(sc.mod(step, batches), BATCH));
    return [sc.gather(X, idx, 0), sc.gather(Y, idx, 0)];
  };
  const stagedStep = sc.stage((x: sc.Tensor, y: sc.Tensor) => sgd(x, y), { name: "mnist_step", autograph: false });
  const stagedLoop = sc.stage((n: sc.Tensor) => {
    sc.whileLoop((i) => sc.less(i, n), (i) => { sgd(...batchOf(i)); return [i.add(1)]; }, [sc.scalar(0, "int32")]);
    return w.read();
  }, { name: "mnist_loop", autograph: false });
  const reset = () => { w.assign(sc.zeros([784, 10])); b.assign(sc.zeros([10])); };
  const n = sc.scalar(steps, "int32");
  // the loop staged and the host loop of staged steps train the same model
  scDefaults();
  reset(); for (let i = 0; i < steps; i++) stagedStep(...batchOf(i)); const hostW = w.read().dataSync();
  reset(); const loopW = stagedLoop(n).dataSync();
  assertClose("mnist staged loop vs host loop", loopW, hostW, 1e-4);
  // tfjs: the host loop with tf.train.sgd, as tfjs programs train
  // (every host loop takes its batch as a slice of the data set per step, as the staged loop does)
  let tfState: { opt: tf.SGDOptimizer; W: tf.Variable; B: tf.Variable; x: tf.Tensor; y: tf.Tensor } | null = null;
  const tfLoop = () => {
    const s = tfState!;
    for (let i = 0; i < steps; i++) {
      const at = (i % batches) * BATCH;
      tf.tidy(() => {
        const x = s.x.slice([at, 0], [BATCH, 784]), y = s.y.slice([at, 0], [BATCH, 10]);
        s.opt.minimize(() => tf.neg(tf.mean(tf.sum(tf.mul(tf.logSoftmax(tf.add(tf.matMul(x, s.W), s.B)), y), 1))) as tf.Scalar, false, [s.W, s.B]);
      });
    }
    return s.W.data();
  };
  return {
    name: `MNIST linear model, SGD, batch ${BATCH}, ${steps} steps`,
    call: `${steps} training steps`,
    throughput: { perCall: steps * BATCH, unit: "examples/s" },
    note: "Goal: the whole loop staged at least 1.3x the host loop of staged steps.",
    systems: [
      { name: "stagecraft eager, host loop", enter: scDefaults, run: () => { for (let i = 0; i < steps; i++) sgd(...batchOf(i)); return w.read(); } },
      { name: "stagecraft staged step, host loop", enter: scDefaults, run: () => { for (let i = 0; i < steps; i++) stagedStep(...batchOf(i)); return w.read(); } },
      { name: "stagecraft staged, whole loop", enter: scDefaults, run: () => stagedLoop(n) },
      ...(["cpu", "wasm"] as const).map((be) => ({
        name: `tfjs-${be}, host loop`,
        enter: async () => {
          await tfBackend(be);
          if (tfState) tf.dispose([tfState.W, tfState.B, tfState.x, tfState.y]);
          tfState = { opt: tf.train.sgd(LR), W: tf.variable(tf.zeros([784, 10])), B: tf.variable(tf.zeros([10])), x: tf.tensor2d(xs, [N, 784]), y: tf.tensor2d(ys, [N, 10]) };
        },
        run: tfLoop,
      })),
    ],
  };
}
