// The demo's convnet (examples/mnist-convnet.ts) trained by a host loop of staged steps and by
// the whole loop staged (AutoGraph's in-graph training), measured in alternating rounds, in CPU
// time per step (worker threads included), so that whatever else runs hits both alike. With a
// baseline checkout, both checkouts are loaded in one process and all four run interleaved.
//
//   node --import tsx bench/training-loop.ts [BASELINE_CHECKOUT] [ROUNDS=7] [STEPS_PER_CALL=25]
//
// Prints, per checkout, the median ms/step of each mode and the median of the per-round ratios
// (step / loop: > 1 means the staged loop is faster), and the baseline / candidate ratio of the
// staged loop. STAGECRAFT_THREADS=1 measures the single-thread work alone.
import { resolve } from "node:path";
import { median } from "./common.js";

type Sc = typeof import("../src/api/index.js");
const BATCH = 32;

async function setup(root: string, steps: number) {
  const sc: Sc = await import(resolve(root, "src/api/index.ts"));
  const { nn } = sc;
  const { train } = sc.data.mnist({ seed: 0 });
  const model = () =>
    new nn.Sequential(
      new nn.Conv2d(12, 5, { seed: 1 }), new nn.ReLU(), new nn.MaxPool2d(2),
      new nn.Conv2d(24, 5, { seed: 2 }), new nn.ReLU(), new nn.MaxPool2d(2),
      new nn.Flatten(), new nn.Linear(64, { seed: 3 }), new nn.ReLU(), new nn.Linear(10, { seed: 4 }),
    );
  const trainStep = (m: InstanceType<Sc["nn"]["Module"]>, opt: InstanceType<Sc["optim"]["Adam"]>, x: InstanceType<Sc["Tensor"]>, y: InstanceType<Sc["Tensor"]>) => {
    let logits: InstanceType<Sc["Tensor"]> | null = null;
    const loss = opt.minimize(() => {
      logits = m.call(x);
      return nn.softmaxCrossEntropy(logits!, y);
    }, () => m.parameters());
    return [loss, nn.accuracy(logits!, y)];
  };
  // as in the demo: a native loop over a tensor count, pushing each step's loss and accuracy
  const trainLoop = (m: any, opt: any, xs: any, ys: any, n: any) => {
    const losses: any = [];
    const accuracies: any = [];
    for (let i = 0; i < n; i++) {
      const rows = sc.add(sc.arange(0, BATCH, 1, "int32"), i * BATCH);
      const [loss, acc] = trainStep(m, opt, sc.gather(xs, rows), sc.gather(ys, rows));
      losses.push(loss);
      accuracies.push(acc);
    }
    return [losses, accuracies];
  };
  const xs = sc.tensor(train.images.dataSync().slice(0, steps * BATCH * 784), "float32", [steps * BATCH, 1, 28, 28]);
  const ys = sc.tensor(train.labels.dataSync().slice(0, steps * BATCH), train.labels.dtype, [steps * BATCH]);
  const rows = (i: number) => sc.add(sc.arange(0, BATCH, 1, "int32"), i * BATCH);
  const xb = Array.from({ length: steps }, (_, i) => sc.gather(xs, rows(i)));
  const yb = Array.from({ length: steps }, (_, i) => sc.gather(ys, rows(i)));
  const stepModel = model(), stepOpt = new sc.optim.Adam({ learningRate: 0.001 });
  const loopModel = model(), loopOpt = new sc.optim.Adam({ learningRate: 0.001 });
  const stepFn = sc.stage(trainStep), loopFn = sc.stage(trainLoop);
  const n = sc.scalar(steps, "int32");
  return {
    step: () => { for (let i = 0; i < steps; i++) stepFn(stepModel, stepOpt, xb[i]!, yb[i]!)[0]!.item(); },
    loop: () => { (loopFn(loopModel, loopOpt, xs, ys, n) as any)[0].dataSync(); },
  };
}

const cpuMs = (f: () => void) => {
  const t = process.cpuUsage();
  f();
  const d = process.cpuUsage(t);
  return (d.user + d.system) / 1000;
};

const [baseRoot, roundsArg = "7", stepsArg = "25"] = process.argv.slice(2);
const rounds = Number(roundsArg), steps = Number(stepsArg);
const checkouts = [...(baseRoot ? [["baseline", resolve(baseRoot)]] : []), ["candidate", resolve(".")]] as const;
type Run = { name: string; step: () => void; loop: () => void; step_ms: number[]; loop_ms: number[]; ratio: number[] };
const runs: Run[] = [];
for (const [name, root] of checkouts) runs.push({ name, ...(await setup(root, steps)), step_ms: [] as number[], loop_ms: [] as number[], ratio: [] as number[] });
for (const r of runs) for (let i = 0; i < 2; i++) (r.step(), r.loop()); // trace and compile
for (let k = 0; k < rounds; k++) {
  for (const r of runs) {
    const s = cpuMs(r.step) / steps, l = cpuMs(r.loop) / steps;
    r.step_ms.push(s); r.loop_ms.push(l); r.ratio.push(s / l);
  }
}
const fmt = (x: number[]) => `${median(x).toFixed(3)} [${Math.min(...x).toFixed(2)}..${Math.max(...x).toFixed(2)}]`;
for (const r of runs) console.log(`${r.name}: staged step ${median(r.step_ms).toFixed(2)} ms/step, staged loop ${median(r.loop_ms).toFixed(2)} ms/step, loop speedup over the step ${fmt(r.ratio)}`);
if (runs.length === 2) console.log(`staged loop, baseline / candidate: ${fmt(runs[0]!.loop_ms.map((b, i) => b / runs[1]!.loop_ms[i]!))}`);
