/**
 * The demo convnet (examples/mnist-convnet.ts's model) trained data-parallel with `sc.nn.fit`:
 * one process per rank, each on its own shard of the digits, gradients averaged by an MPI
 * all-reduce after every step (sc.distributed.DistributedOptimizer), so every rank holds the same
 * weights. Rank 0 prints the progress and writes the checkpoint.
 *
 *     STAGECRAFT_THREADS=1 mpirun -np 2 node --import tsx examples/mnist-distributed.ts
 *     node --import tsx examples/mnist-distributed.ts          (alone: a job of one process)
 *
 * (Open MPI run as root also needs --allow-run-as-root; more ranks than cores, --oversubscribe.)
 * Options: --epochs N (default 2), --steps N (steps per epoch, default all of the shard),
 * --batch N per rank (default 32; the global batch is N x ranks), --lr X (Adam, default 0.002),
 * --seed N (default 0), --out DIR (default demo-output), --min-accuracy X (default 0.93: exit
 * status 1 below it).
 */
import { mkdirSync } from "node:fs";
import * as path from "node:path";
import * as sc from "../src/api/index.js";

const { nn } = sc;

function numberFlag(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  if (i < 0) return fallback;
  const v = Number(process.argv[i + 1]);
  if (!Number.isFinite(v)) throw new Error(`--${name} needs a number, got ${process.argv[i + 1]}`);
  return v;
}
const epochs = numberFlag("epochs", 2);
const batch = numberFlag("batch", 32);
const learningRate = numberFlag("lr", 0.002);
const seed = numberFlag("seed", 0);
const minAccuracy = numberFlag("min-accuracy", 0.93);
const outIndex = process.argv.indexOf("--out");
const outDir = outIndex < 0 ? "demo-output" : process.argv[outIndex + 1]!;

// Under mpirun (Open MPI sets OMPI_COMM_WORLD_SIZE) join the MPI job; alone, a job of one process.
const { rank, size } = sc.distributed.init({ provider: process.env.OMPI_COMM_WORLD_SIZE ? "mpi" : "single" });
const chief = sc.distributed.isChief();

const { train, test } = sc.data.mnist({ seed });
const rows = train.labels.shape[0]!;
// Every rank must take the same number of steps: the smallest shard's whole batches.
const shardSteps = Math.floor(Math.floor(rows / size) / batch);
const steps = Math.min(numberFlag("steps", shardSteps), shardSteps);
const data = sc.data.Dataset.fromTensorSlices([train.images, train.labels])
  .shard(size, rank)
  .shuffle(Math.ceil(rows / size), { seed: seed + rank })
  .batch(batch, { dropRemainder: true })
  .take(steps);

// The demo's convnet, built (its layers make their weights on the first call) from one seed;
// fit starts every rank from rank 0's weights anyway.
sc.random.setSeed(seed);
const model = new nn.Sequential(
  new nn.Conv2d(12, 5, { seed: seed + 1 }),
  new nn.ReLU(),
  new nn.MaxPool2d(2),
  new nn.Conv2d(24, 5, { seed: seed + 2 }),
  new nn.ReLU(),
  new nn.MaxPool2d(2),
  new nn.Flatten(),
  new nn.Linear(64, { seed: seed + 3 }),
  new nn.ReLU(),
  new nn.Linear(10, { seed: seed + 4 }),
);
model.call(sc.zeros([1, 1, 28, 28]));
const optimizer = sc.distributed.DistributedOptimizer(new sc.optim.Adam({ learningRate }));

if (chief) console.log(`MNIST convnet on ${size} rank(s): ${steps} steps per epoch, batch ${batch} per rank (${batch * size} in all), ${epochs} epoch(s), Adam lr ${learningRate}`);
const started = performance.now();
const history = nn.fit(model, {
  data,
  optimizer,
  loss: nn.softmaxCrossEntropy,
  epochs,
  metrics: { accuracy: nn.accuracy },
  // (fit prints on rank 0 only; "lines" keeps the output of mpirun readable)
  progress: "lines",
});
const seconds = (performance.now() - started) / 1000;

// The ranks hold the same weights, so each would compute the same test accuracy: the chief does.
let failed = false;
if (chief) {
  model.eval();
  const accuracy = nn.accuracy(model.call(test.images), test.labels).item() as number;
  const examples = steps * epochs * batch * size;
  console.log(`trained in ${seconds.toFixed(1)} s (${(examples / seconds).toFixed(0)} examples/s over ${size} rank(s)); test accuracy ${(100 * accuracy).toFixed(2)}%; last epoch loss ${history.epochs.at(-1)!.loss!.toFixed(4)}`);
  mkdirSync(outDir, { recursive: true });
  const file = path.join(outDir, "mnist-distributed.safetensors");
  sc.distributed.saveOnChief(model, file);
  console.log(`checkpoint ${file} (written by rank 0)`);
  if (accuracy < minAccuracy) {
    console.error(`FAILED: test accuracy ${(100 * accuracy).toFixed(2)}% is below ${(100 * minAccuracy).toFixed(2)}%`);
    failed = true;
  }
}
sc.distributed.finalize();
if (failed) process.exitCode = 1;
