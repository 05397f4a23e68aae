/**
 * The quick example: a 784-128-10 MLP (ReLU, softmax cross-entropy) trained on 8,000 MNIST
 * digits in eager mode with Adam, then its accuracy on the 2,000 held-out digits.
 *
 *     npm run demo:mlp            (node --import tsx examples/mnist-mlp.ts)
 *
 * Options: --epochs N (default 8), --batch N (default 64), --lr X (peak, default 0.006),
 * --hidden N (default 128), --seed N (default 0). Everything is seeded: the split, the
 * shuffling and the initialization, so two runs print the same losses.
 * Exits with status 1 if the test accuracy is below 90%.
 */
import * as sc from "../src/api/index.js";

const { nn, optim, data } = sc;

function argValue(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  if (i < 0) return fallback;
  const v = Number(process.argv[i + 1]);
  if (!Number.isFinite(v)) throw new Error(`--${name} needs a number, got ${process.argv[i + 1]}`);
  return v;
}

const epochs = argValue("epochs", 8);
const batchSize = argValue("batch", 64);
const learningRate = argValue("lr", 0.006);
const hidden = argValue("hidden", 128);
const seed = argValue("seed", 0);

const t0 = performance.now();
const { train, test } = data.mnist({ seed, layout: "flat" });
const trainCount = train.labels.shape[0]!;
console.log(
  `MNIST MLP 784-${hidden}-10: ${trainCount} train / ${test.labels.shape[0]} test digits (loaded in ${((performance.now() - t0) / 1000).toFixed(2)} s); ` +
    `Adam lr ${learningRate} (cosine decay), batch ${batchSize}, ${epochs} epochs, seed ${seed}`,
);

const model = new nn.Sequential(
  new nn.Linear(hidden, { seed: seed * 4 + 1, kernelInit: nn.init.heNormal({ seed: seed * 4 + 1 }) }),
  new nn.ReLU(),
  new nn.Linear(10, { seed: seed * 4 + 2, kernelInit: nn.init.lecunNormal({ seed: seed * 4 + 2 }) }),
);
const stepsPerEpoch = Math.floor(trainCount / batchSize);
const totalSteps = epochs * stepsPerEpoch;
// Cosine decay from `learningRate` to 0 over the run (a schedule computed from the step count).
const opt = new optim.Adam({ learningRate: optim.cosineDecay({ initial: learningRate, decaySteps: totalSteps }) });
const batches = data.Dataset.fromTensorSlices([train.images, train.labels]).shuffle(trainCount, { seed }).batch(batchSize, { dropRemainder: true });

const trainStart = performance.now();
const loss = new nn.Mean();
const accuracy = new nn.Mean();
let step = 0;
let windowStart = performance.now();
for (let epoch = 1; epoch <= epochs; epoch++) {
  for (const [x, y] of batches) {
    let logits: sc.Tensor | null = null;
    const l = opt.minimize(() => nn.softmaxCrossEntropy((logits = model.call(x)), y), () => model.parameters());
    loss.update(l);
    accuracy.update(nn.accuracy(logits!, y));
    if (++step % 50 === 0 || step === totalSteps) {
      const now = performance.now();
      console.log(
        `epoch ${epoch}  step ${String(step).padStart(4)}  loss ${loss.result().toFixed(4)}  ` +
          `train acc ${(100 * accuracy.result()).toFixed(1)}%  ${((1000 * loss.count) / (now - windowStart)).toFixed(1)} steps/s`,
      );
      loss.reset();
      accuracy.reset();
      windowStart = now;
    }
  }
}
const trainSeconds = (performance.now() - trainStart) / 1000;

const testAccuracy = nn.accuracy(model.call(test.images), test.labels).item() as number;
console.log(
  `test accuracy ${(100 * testAccuracy).toFixed(2)}% on ${test.labels.shape[0]} digits; ` +
    `trained ${step} steps in ${trainSeconds.toFixed(1)} s (${(step / trainSeconds).toFixed(1)} steps/s), total ${((performance.now() - t0) / 1000).toFixed(1)} s`,
);
if (testAccuracy < 0.9) {
  console.error(`test accuracy ${(100 * testAccuracy).toFixed(2)}% is below the 90% this demo must reach`);
  process.exitCode = 1;
}
