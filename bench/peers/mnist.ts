/**
 * A linear model on the MNIST digits trained by SGD (the AutoGraph paper's in-graph training):
 * the host loop of eager or staged steps, the whole loop staged, and tfjs's host loop.
 */
import * as sc from "../../src/api/index.js";
import { assertClose, type Workload } from "./harness.js";
import { jaxNotPorted, scDefaults, tf, tfBackend } from "./systems.js";

// MNIST linear model, SGD (the AutoGraph paper's in-graph training loop)

export async function mnistWorkload(steps: number, quick = false): Promise<Workload> {
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
        skip: be === "cpu" && quick ? "left out of --quick: seconds per call (below tfjs-wasm's speed); the full run times it" : undefined,
      })),
      jaxNotPorted("an in-place training loop over variables"),
    ],
  };
}
