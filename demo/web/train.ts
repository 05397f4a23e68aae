/**
 * The demo's model and training, without the page: a small convnet on MNIST digits, trained
 * step by step eagerly or as a staged graph (sc.stage), on a device the page picks.
 * The digits come as bytes (see scripts/demo-web.ts, which writes them from sc.data.mnist()).
 */
import * as sc from "stagecraft";

const { nn } = sc;

export type Mode = "eager" | "staged";

/** Digits as the server sends them: a header, then train and test pixels (uint8) and labels. */
export interface Digits {
  train: { images: sc.Tensor; labels: sc.Tensor };
  test: { images: sc.Tensor; labels: sc.Tensor };
}

/** Parses mnist.bin: int32 trainCount, int32 testCount, pixels (count x 784 bytes), labels (count bytes), train then test. */
export function parseDigits(bytes: ArrayBuffer): Digits {
  const head = new Int32Array(bytes, 0, 2);
  const [trainCount, testCount] = [head[0]!, head[1]!];
  let offset = 8;
  const take = (count: number) => {
    const pixels = new Uint8Array(bytes, offset, count * 784);
    offset += count * 784;
    const labels = new Uint8Array(bytes, offset, count);
    offset += count;
    const images = new Float32Array(count * 784);
    for (let i = 0; i < images.length; i++) images[i] = pixels[i]! / 255;
    return { images: sc.tensor(images, "float32", [count, 1, 28, 28]), labels: sc.tensor(Int32Array.from(labels), "int32") };
  };
  return { train: take(trainCount), test: take(testCount) };
}

export function makeModel(seed: number): sc.nn.Sequential {
  sc.random.setSeed(seed);
  return new nn.Sequential(
    new nn.Conv2d(8, 5, { seed: seed + 1 }),
    new nn.ReLU(),
    new nn.MaxPool2d(2),
    new nn.Conv2d(16, 5, { seed: seed + 2 }),
    new nn.ReLU(),
    new nn.MaxPool2d(2),
    new nn.Flatten(),
    new nn.Linear(10, { seed: seed + 3 }),
  );
}

/** One step: loss and batch accuracy, after Adam's update of every parameter. */
function trainStep(model: sc.nn.Module, opt: sc.optim.Optimizer, x: sc.Tensor, y: sc.Tensor): [sc.Tensor, sc.Tensor] {
  let logits: sc.Tensor | null = null;
  const loss = opt.minimize(() => {
    logits = model.call(x);
    return nn.softmaxCrossEntropy(logits!, y);
  }, () => model.parameters());
  return [loss, nn.accuracy(logits!, y)];
}

const stagedStep = sc.stage(trainStep);
const predictLogits = sc.stage((model: sc.nn.Module, x: sc.Tensor) => model.call(x));

export interface StepResult {
  loss: number;
  batchAccuracy: number;
  /** Milliseconds the step took (the first staged step includes tracing). */
  ms: number;
}

/** A training run: one model and optimizer; each step may run eagerly or staged, on any device. */
export class Trainer {
  readonly model: sc.nn.Sequential;
  readonly optimizer: sc.optim.Adam;
  private readonly batches: Iterator<[sc.Tensor, sc.Tensor]>;
  steps = 0;

  constructor(readonly digits: Digits, options: { seed?: number; batch?: number; learningRate?: number } = {}) {
    const seed = options.seed ?? 0;
    this.model = makeModel(seed);
    this.optimizer = new sc.optim.Adam({ learningRate: options.learningRate ?? 0.003 });
    const n = digits.train.labels.shape[0]!;
    this.batches = sc.data.Dataset.fromTensorSlices([digits.train.images, digits.train.labels] as [sc.Tensor, sc.Tensor])
      .shuffle(n, { seed })
      .batch(options.batch ?? 32, { dropRemainder: true })
      .repeat()
      [Symbol.iterator]() as Iterator<[sc.Tensor, sc.Tensor]>;
  }

  /** One training step (values read with `await data()`: a device may keep them in its memory). */
  async step(mode: Mode, device: string): Promise<StepResult> {
    const [x, y] = this.batches.next().value as [sc.Tensor, sc.Tensor];
    const t0 = performance.now();
    const [loss, acc] = sc.device(device, () => (mode === "staged" ? stagedStep : trainStep)(this.model, this.optimizer, x, y));
    const [l, a] = await Promise.all([loss.data(), acc.data()]);
    this.steps++;
    return { loss: l[0] as number, batchAccuracy: a[0] as number, ms: performance.now() - t0 };
  }

  /** Accuracy on the first `count` test digits (eval mode). */
  async testAccuracy(count: number, device: string): Promise<number> {
    const images = sc.slice(this.digits.test.images, [0, 0, 0, 0], [count, 1, 28, 28]);
    const labels = sc.slice(this.digits.test.labels, [0], [count]);
    this.model.eval();
    try {
      const acc = sc.device(device, () => nn.accuracy(predictLogits(this.model, images), labels));
      return (await acc.data())[0] as number;
    } finally {
      this.model.train();
    }
  }

  /** Probabilities of the ten digits for one 28x28 image (pixels in [0, 1], row-major). */
  async classify(pixels: Float32Array, device: string): Promise<number[]> {
    this.model.eval();
    try {
      const p = sc.device(device, () => sc.softmax(predictLogits(this.model, sc.tensor(pixels, "float32", [1, 1, 28, 28]))));
      return Array.from(await p.data(), Number);
    } finally {
      this.model.train();
    }
  }
}
