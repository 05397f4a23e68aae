// A staged training step on the GPU: an MLP classifier trained with SGD, the forward pass, the
// gradients and the update in one staged function that runs as one plan on the webgpu device.
// Prints the device, the loss and the speed. Run from the built package (npm run build):
//   node examples/webgpu-train.mjs
// (without a GPU in Node: eval "$(node scripts/lavapipe.mjs)" first, for Mesa's software driver)
import * as sc from "../dist/api/index.js";

const device = await sc.initWebGPU();
if (!device) {
  console.log(`no WebGPU device: ${sc.webgpuUnavailable()}`);
  process.exit(0);
}
console.log(`device: ${device.description}`);

const [batch, inputs, hidden, classes] = [256, 784, 512, 10];
const init = (shape, seed) => sc.random.uniform(shape, { seed, minval: -Math.sqrt(6 / (shape[0] + shape[1])), maxval: Math.sqrt(6 / (shape[0] + shape[1])) });

// Weights live on the GPU: variables made in the device's scope.
const weights = sc.device("webgpu", () => [init([inputs, hidden], 1), sc.zeros([hidden]), init([hidden, classes], 2), sc.zeros([classes])].map((t) => sc.variable(t)));

const loss = (x, labels, w1, b1, w2, b2) => {
  const logits = sc.relu(x.matmul(w1).add(b1)).matmul(w2).add(b2);
  return sc.neg(sc.mean(sc.sum(sc.logSoftmax(logits, -1).mul(labels), -1)));
};

const trainStep = sc.stage(
  (x, labels) => {
    const [value, grads] = sc.valueAndGrad((...w) => loss(x, labels, ...w), { argnums: [0, 1, 2, 3] })(...weights.map((w) => w.read()));
    weights.forEach((w, k) => w.assign(w.read().sub(grads[k].mul(0.1))));
    return value;
  },
  { autograph: false },
);

// A fixed synthetic batch (the labels follow the sign pattern of the inputs, so the loss falls).
const x = sc.random.uniform([batch, inputs], { seed: 3, minval: -1, maxval: 1 }).to("webgpu");
const labels = sc.oneHot(sc.cast(sc.sum(sc.greater(x.slice([0, 0], [batch, classes]), 0), 1), "int32"), classes + 1).slice([0, 0], [batch, classes]);

const first = performance.now();
console.log(`step 0: loss ${(await trainStep(x, labels).data())[0].toFixed(4)} (first call: trace, plan and compile in ${(performance.now() - first).toFixed(0)} ms)`);
const steps = 50;
const t0 = performance.now();
let last;
for (let i = 1; i <= steps; i++) last = trainStep(x, labels);
const value = (await last.data())[0];
const ms = (performance.now() - t0) / steps;
console.log(`step ${steps}: loss ${value.toFixed(4)}; ${ms.toFixed(2)} ms/step, ${(1000 / ms).toFixed(1)} steps/s, ${((6 * batch * (inputs * hidden + hidden * classes)) / (ms * 1e6)).toFixed(2)} GFLOP/s`);
const stats = await sc.webgpuStats();
console.log(`${stats.compiled} pipelines compiled in ${stats.compileMs.toFixed(0)} ms; ${stats.liveBuffers} GPU buffers in use`);
