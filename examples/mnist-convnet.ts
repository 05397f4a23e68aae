/**
 * The main demo: a small convnet on the MNIST digits, trained three ways from the same seeded
 * start on the same batches:
 *
 *   eager   every op runs as it is called (a GradientTape records them for the gradient);
 *   step    the training step (forward, gradient, Adam update) is one staged graph: sc.stage;
 *   loop    the training loop itself is staged: a native `for` over steps inside a staged
 *           function, which AutoGraph turns into one graph loop (the AutoGraph paper's in-graph
 *           training); each call runs a chunk of steps.
 *
 * Then it prints a table of steps/s per mode, checks the test accuracy (>= 98%), saves a
 * checkpoint, restores it into a fresh model and checks the accuracy is the same, exports the
 * trained model to ONNX and checks that onnxruntime predicts the same class on every test digit,
 * and writes an SVG plot of the three loss curves (vega-lite, rendered headless).
 *
 *     npm run demo                     (node --import tsx --import ./src/autograph/register.ts examples/mnist-convnet.ts)
 *     npm run demo -- --steps 300 --mode step
 *
 * Options: --steps N per mode (default 800), --mode all|eager|step|loop (default all),
 * --batch N (default 32), --lr X (peak rate, default 0.01), --seed N (default 0),
 * --out DIR (default demo-output). Exits with status 1 if a check fails.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import * as path from "node:path";
import * as vega from "vega";
import * as vegaLite from "vega-lite";
import * as sc from "../src/api/index.js";

const { nn } = sc;

// ---- options -----------------------------------------------------------------------------

function flag(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i < 0 ? fallback : (process.argv[i + 1] ?? fallback);
}
function numberFlag(name: string, fallback: number): number {
  const v = Number(flag(name, String(fallback)));
  if (!Number.isFinite(v)) throw new Error(`--${name} needs a number, got ${flag(name, "")}`);
  return v;
}

const MODES = ["eager", "step", "loop"] as const;
type Mode = (typeof MODES)[number];
const MODE_NAMES: Record<Mode, string> = { eager: "eager", step: "staged step", loop: "staged loop" };
const modeFlag = flag("mode", "all");
const modes: Mode[] = modeFlag === "all" ? [...MODES] : (modeFlag.split(",") as Mode[]);
for (const m of modes) if (!MODES.includes(m)) throw new Error(`--mode must be all or a list of ${MODES.join(", ")}, got ${modeFlag}`);
const steps = numberFlag("steps", 800);
const batch = numberFlag("batch", 32);
const peakRate = numberFlag("lr", 0.01);
const seed = numberFlag("seed", 0);
const outDir = flag("out", "demo-output");
/** Steps per call of the staged loop (progress is reported between calls). */
const CHUNK = 50;

// ---- data and model ----------------------------------------------------------------------

const t0 = performance.now();
const { train, test } = sc.data.mnist({ seed });
/** The training batches, shuffled anew each epoch; every mode gets the same sequence. */
const makeBatches = () =>
  sc.data.Dataset.fromTensorSlices([train.images, train.labels])
    .shuffle(train.labels.shape[0]!, { seed })
    .batch(batch, { dropRemainder: true })
    .repeat();

function makeModel(s: number): sc.nn.Sequential {
  sc.random.setSeed(s);
  return new nn.Sequential(
    new nn.Conv2d(12, 5, { seed: s + 1 }),
    new nn.ReLU(),
    new nn.MaxPool2d(2),
    new nn.Conv2d(24, 5, { seed: s + 2 }),
    new nn.ReLU(),
    new nn.MaxPool2d(2),
    new nn.Flatten(),
    new nn.Linear(64, { seed: s + 3 }),
    new nn.ReLU(),
    new nn.Linear(10, { seed: s + 4 }),
  );
}

function makeOptimizer(): sc.optim.Adam {
  return new sc.optim.Adam({ learningRate: sc.optim.cosineDecay({ initial: peakRate, decaySteps: steps, warmupSteps: Math.min(50, steps) }) });
}

// ---- the training step, and the loop over steps ------------------------------------------

/** One step: loss and batch accuracy, after Adam's update of every parameter. */
function trainStep(model: sc.nn.Module, opt: sc.optim.Optimizer, x: sc.Tensor, y: sc.Tensor): [sc.Tensor, sc.Tensor] {
  let logits: sc.Tensor | null = null;
  const loss = opt.minimize(() => {
    logits = model.call(x);
    return nn.softmaxCrossEntropy(logits!, y);
  }, () => model.parameters());
  return [loss, nn.accuracy(logits!, y)];
}

/**
 * `steps` training steps in one graph: batch i is rows [i * batch, (i + 1) * batch) of xs and ys.
 * A native loop: with `steps` a tensor, AutoGraph makes it a graph loop; the arrays it pushes
 * to become stacked tensors of the per-step losses and accuracies.
 */
function trainLoop(model: sc.nn.Module, opt: sc.optim.Optimizer, xs: sc.Tensor, ys: sc.Tensor, steps: any): [sc.Tensor, sc.Tensor] {
  const losses: any = [];
  const accuracies: any = [];
  for (let i = 0; i < steps; i++) {
    const rows = sc.add(sc.arange(0, batch, 1, "int32"), i * batch);
    const [loss, acc] = trainStep(model, opt, sc.gather(xs, rows), sc.gather(ys, rows));
    losses.push(loss);
    accuracies.push(acc);
  }
  return [losses, accuracies];
}

const predict = sc.stage((model: sc.nn.Module, x: sc.Tensor) => model.call(x));

/** Test accuracy, in eval mode. */
function testAccuracy(model: sc.nn.Module): number {
  model.eval();
  const acc = nn.accuracy(predict(model, test.images), test.labels).item() as number;
  model.train();
  return acc;
}

// ---- training three ways -----------------------------------------------------------------

interface Run {
  mode: Mode;
  model: sc.nn.Sequential;
  optimizer: sc.optim.Adam;
  losses: number[];
  /** Seconds since the mode's start when each step's loss was known. */
  times: number[];
  seconds: number;
  /** Steps/s after the first call (which traces, for staged modes). */
  steadyRate: number;
  accuracy: number;
}

function runMode(mode: Mode): Run {
  const model = makeModel(seed);
  const optimizer = makeOptimizer();
  const losses: number[] = [];
  const times: number[] = [];
  const progress = new nn.Progress({ label: MODE_NAMES[mode].padEnd(11), total: steps });
  const stepFn = mode === "step" ? sc.stage(trainStep) : trainStep;
  const loopFn = sc.stage(trainLoop);
  const it = makeBatches()[Symbol.iterator]();
  const start = performance.now();
  let firstDone = 0;
  const accuracies: number[] = [];
  const record = (l: number, a: number) => {
    losses.push(l);
    accuracies.push(a);
    times.push((performance.now() - start) / 1000);
  };
  /** Mean batch accuracy of the last 20 steps. */
  const recentAccuracy = () => accuracies.slice(-20).reduce((x, y) => x + y, 0) / Math.min(accuracies.length, 20);
  if (mode === "loop") {
    while (losses.length < steps) {
      const n = Math.min(CHUNK, steps - losses.length);
      const chunk: sc.Tensor[][] = [];
      for (let k = 0; k < n; k++) chunk.push(it.next().value as sc.Tensor[]);
      // Always CHUNK batches' rows (one input shape, one trace); only the first n are used.
      while (chunk.length < CHUNK) chunk.push(chunk[chunk.length - 1]!);
      const xs = sc.concat(chunk.map((b) => b[0]!), 0);
      const ys = sc.concat(chunk.map((b) => b[1]!), 0);
      const [l, a] = loopFn(model, optimizer, xs, ys, sc.scalar(n, "int32"));
      const ls = l.dataSync();
      const as = a.dataSync();
      for (let k = 0; k < n; k++) record(ls[k]!, as[k]!);
      if (firstDone === 0) firstDone = performance.now();
      progress.update(losses.length, { loss: losses[losses.length - 1]!, acc: recentAccuracy() });
    }
  } else {
    while (losses.length < steps) {
      const [x, y] = it.next().value as sc.Tensor[];
      const [l, a] = stepFn(model, optimizer, x!, y!);
      record(l.item() as number, a.item() as number);
      if (firstDone === 0) firstDone = performance.now();
      progress.update(losses.length, { loss: losses[losses.length - 1]!, acc: recentAccuracy() });
    }
  }
  const end = performance.now();
  progress.stop();
  const firstSteps = mode === "loop" ? Math.min(CHUNK, steps) : 1;
  const steadyRate = steps > firstSteps ? (steps - firstSteps) / ((end - firstDone) / 1000) : steps / ((end - start) / 1000);
  return { mode, model, optimizer, losses, times, seconds: (end - start) / 1000, steadyRate, accuracy: testAccuracy(model) };
}

console.log(
  `MNIST convnet: ${train.labels.shape[0]} train / ${test.labels.shape[0]} test digits (loaded in ${((performance.now() - t0) / 1000).toFixed(1)} s); ` +
    `${steps} steps per mode, batch ${batch}, Adam (cosine decay from ${peakRate}, warm-up), seed ${seed}`,
);
console.log(makeModel(seed).summary(sc.zeros([1, 1, 28, 28])));
const runs: Run[] = [];
for (const mode of modes) runs.push(runMode(mode));

// ---- results -----------------------------------------------------------------------------

const failures: string[] = [];
const eagerRun = runs.find((r) => r.mode === "eager");
console.log("");
console.log("mode          steps/s   speedup   time (s)   test accuracy");
for (const r of runs) {
  const speedup = eagerRun ? `${(r.steadyRate / eagerRun.steadyRate).toFixed(2)}x` : "-";
  console.log(`${MODE_NAMES[r.mode].padEnd(12)}  ${r.steadyRate.toFixed(1).padStart(7)}   ${speedup.padStart(7)}   ${r.seconds.toFixed(1).padStart(8)}   ${(100 * r.accuracy).toFixed(2)}%`);
  if (r.accuracy < 0.98) failures.push(`${MODE_NAMES[r.mode]}: test accuracy ${(100 * r.accuracy).toFixed(2)}% is below 98%`);
}
console.log("(steps/s after the first call, which traces the staged modes; time includes it)");
if (runs.length > 1) {
  const ref = runs[0]!;
  for (const r of runs.slice(1)) {
    const diff = Math.max(...r.losses.map((l, i) => Math.abs(l - ref.losses[i]!)));
    console.log(`largest loss difference, ${MODE_NAMES[r.mode]} vs ${MODE_NAMES[ref.mode]}: ${diff.toExponential(2)}`);
  }
}

// ---- checkpoint: save, restore into a fresh model, same accuracy -------------------------

mkdirSync(outDir, { recursive: true });
const last = runs[runs.length - 1]!;
const checkpointPath = path.join(outDir, "mnist-convnet.safetensors");
new sc.io.Checkpoint({ model: last.model, optimizer: last.optimizer }).save(checkpointPath);
const fresh = makeModel(seed + 1000);
const freshOptimizer = makeOptimizer();
const status = new sc.io.Checkpoint({ model: fresh, optimizer: freshOptimizer }).restore(checkpointPath, { deferred: true });
const restoredAccuracy = testAccuracy(fresh);
status.assertExistingObjectsMatched();
console.log(
  `checkpoint ${checkpointPath}: restored into a fresh model, test accuracy ${(100 * restoredAccuracy).toFixed(2)}% ` +
    `(trained model: ${(100 * last.accuracy).toFixed(2)}%)${restoredAccuracy === last.accuracy ? ", equal" : ""}`,
);
if (restoredAccuracy !== last.accuracy) failures.push(`the restored model's accuracy ${restoredAccuracy} differs from the trained model's ${last.accuracy}`);

// ---- ONNX: export the trained model, run it in onnxruntime, same predictions ---------------

{
  const model = last.model;
  model.eval();
  const forward = sc.stage((x: sc.Tensor) => model.call(x), { name: "mnist_convnet" });
  // (a symbolic batch dim; parameters named by their module path: layers.0.kernel, ...)
  const exported = sc.onnx.exportModel(forward, [sc.spec([null, 1, 28, 28], "float32", "images")], { model, outputNames: ["logits"] });
  const onnxPath = path.join(outDir, "mnist-convnet.onnx");
  writeFileSync(onnxPath, exported.bytes);
  const session = await sc.onnx.createSession(onnxPath);
  const ortLogits = (await sc.onnx.runSession(session, { images: test.images })).logits!;
  await session.release();
  const ours = sc.argMax(predict(model, test.images), 1).dataSync();
  const theirs = sc.argMax(ortLogits, 1).dataSync();
  model.train();
  let agree = 0;
  for (let i = 0; i < ours.length; i++) if (ours[i] === theirs[i]) agree++;
  const pct = (100 * agree) / ours.length;
  console.log(`ONNX ${onnxPath} (${(exported.bytes.length / 1024).toFixed(0)} KiB, opset ${sc.onnx.EXPORT_OPSET}): onnxruntime predicts the same class as Stagecraft on ${agree} of ${ours.length} test digits (${pct.toFixed(2)}%)`);
  if (agree !== ours.length) failures.push(`onnxruntime's predictions agree with ours on only ${pct.toFixed(2)}% of the test digits`);
}

// ---- plot --------------------------------------------------------------------------------

const plotPath = path.join(outDir, "mnist-convnet-loss.svg");
writeFileSync(plotPath, await lossPlot(runs));
console.log(`loss curves: ${plotPath}`);
console.log(`total ${((performance.now() - t0) / 1000).toFixed(1)} s`);
if (failures.length > 0) {
  for (const f of failures) console.error(`FAILED: ${f}`);
  process.exitCode = 1;
}

/** Two panels: loss per step (the modes compute the same numbers) and loss over seconds (their speed). */
async function lossPlot(rs: Run[]): Promise<string> {
  const values: { step: number; seconds: number; loss: number; mode: string }[] = [];
  for (const r of rs) {
    // A running mean over 20 steps, so the curves are readable.
    let window = 0;
    r.losses.forEach((l, i) => {
      window += l - (i >= 20 ? r.losses[i - 20]! : 0);
      values.push({ step: i + 1, seconds: r.times[i]!, loss: window / Math.min(i + 1, 20), mode: MODE_NAMES[r.mode] });
    });
  }
  const encoding = (x: string, title: string) => ({
    x: { field: x, type: "quantitative", title },
    y: { field: "loss", type: "quantitative", scale: { type: "log" }, title: "training loss (mean of 20 steps)" },
    color: { field: "mode", type: "nominal", title: "mode", sort: rs.map((r) => MODE_NAMES[r.mode]) },
    strokeDash: { field: "mode", type: "nominal", sort: rs.map((r) => MODE_NAMES[r.mode]) },
  });
  const spec = vegaLite.compile({
    $schema: "https://vega.github.io/schema/vega-lite/v6.json",
    title: `MNIST convnet, ${steps} steps per mode: test accuracy ${rs.map((r) => `${MODE_NAMES[r.mode]} ${(100 * r.accuracy).toFixed(2)}%`).join(", ")}`,
    data: { values },
    hconcat: [
      { width: 420, height: 280, mark: { type: "line", strokeWidth: 1.5 }, encoding: encoding("step", "step") },
      { width: 420, height: 280, mark: { type: "line", strokeWidth: 1.5 }, encoding: encoding("seconds", "seconds since the mode started") },
    ],
  } as vegaLite.TopLevelSpec).spec;
  return new vega.View(vega.parse(spec), { renderer: "none" }).toSVG();
}
