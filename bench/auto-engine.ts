// The "auto" engine against our executor and the onnxruntime engine, on the peer suite's staged
// workloads (bench/peers). Each workload is built three times, with the default engine of
// sc.stage set (setDefaultEngine) to ours, "onnxruntime" and "auto" while it is built and around
// each of its calls (so functions it stages lazily get that engine too); its staged systems
// ("stagecraft staged ...") of the three builds first run the same number of calls each
// (warmEqually), then are timed in one interleaved run (the peer harness: alternating rounds). A system whose engine cannot run it (onnxruntime on a graph the
// exporter refuses) shows its error; best-of then is the other.
//
// Reported per staged system: ms per call of each, auto / best-of(ours, onnxruntime) (1.00: auto
// chose the faster; above: the price of choosing), what auto chose (its graphs kept on the plan /
// on ours, fallbacks, and the segments its per-segment step placed on the engine / on ours), and auto's one-time cost: cutting and preparing the plans (planMs) and the
// plans' first runs, which export and make the sessions (firstRunMs), over how many graphs.
//   node --import tsx bench/auto-engine.ts [--rounds N] [workload ...]     (names below; default: all)
// --rounds N: N timed rounds per system instead of the quick run's 5 (rows of a 20-60 ms graph get
// a few calls per round: more rounds, less spread between identical systems).
// ("mixed" is this file's own: a graph whose two engine segments want different sides.)
// --first-call: instead, auto's one-time cost per graph (a fresh function per graph, called until
// auto has chosen): cutting and preparing the plan, the plan's first run (export and sessions),
// beside our first call (trace and compile), for graphs from tiny to a training step.
//   node --import tsx bench/auto-engine.ts --first-call
import { setDefaultEngine } from "../src/api/internals.js";
import { autoStats } from "../src/onnx/partition/auto.js";
import { engineStats } from "../src/onnx/engine.js";
import * as sc from "../src/api/index.js";
import { isMainModule, randomValues } from "./common.js";
import { QUICK, measure, type System, type Workload } from "./peers/harness.js";
import { l2hmcWorkload } from "./peers/l2hmc.js";
import { rnnWorkload } from "./peers/rnn.js";
import { mnistWorkload } from "./peers/mnist.js";
import { beamSearchWorkload } from "./peers/beam-search.js";
import { lbfgsWorkload } from "./peers/lbfgs.js";
import { mamlWorkload } from "./peers/maml.js";
import { seq2seqWorkload } from "./peers/seq2seq.js";
import { treeLstmWorkload } from "./peers/tree-lstm.js";
import { resnetWorkload } from "./peers/resnet.js";
import { convWorkload, matmulWorkload } from "./peers/throughput.js";

/** The peer suite's --quick workloads that stage (the thread-pool ones are left out). */
const WORKLOADS: Record<string, () => Promise<Workload>> = {
  "l2hmc-1": () => l2hmcWorkload(1),
  "l2hmc-32": () => l2hmcWorkload(32),
  "rnn-forward": () => rnnWorkload(64, 32, false),
  "rnn-train": () => rnnWorkload(64, 32, true, true),
  mnist: () => mnistWorkload(100, true),
  "beam-search": beamSearchWorkload,
  lbfgs: lbfgsWorkload,
  maml: mamlWorkload,
  seq2seq: seq2seqWorkload,
  "tree-lstm": treeLstmWorkload,
  resnet: () => resnetWorkload(true),
  "matmul-256": () => matmulWorkload(256),
  "matmul-1024": () => matmulWorkload(1024),
  conv: () => convWorkload({ batch: 32, inC: 16, outC: 16, hw: 32, k: 3, stride: 1 }),
  mixed: mixedWorkload,
};

/**
 * A graph whose two engine segments want different sides (for auto's per-segment choice): an
 * elementwise chain on [256,256] (onnxruntime's kernels ~10x ours), a host call (only ours can
 * run it), then a 64-step loop on a [16] vector (onnxruntime's Loop costs ~1 ms; ours ~0.05 ms).
 * The whole-graph onnxruntime engine cannot run the host call: best-of is ours.
 */
async function mixedWorkload(): Promise<Workload> {
  const x = sc.tensor(randomValues(256 * 256, 6), "float32", [256, 256]);
  const staged = sc.stage((x: sc.Tensor) => {
    const a = sc.softmax(x.mul(2).add(1).exp().log().sqrt().mul(x), -1);
    const h = sc.hostCall((t: sc.Tensor) => t, sc.spec([256, 256], "float32"), a) as sc.Tensor;
    const v0 = sc.sum(h, [0]).slice([0], [16]);
    const [, v] = sc.whileLoop((i: sc.Tensor) => i.less(64), (i: sc.Tensor, v: sc.Tensor) => [i.add(1), sc.tanh(v.mul(0.9).add(0.1))], [sc.scalar(0, "int32"), v0]);
    return v!;
  }, { autograph: false });
  return { name: "mixed: elementwise chain, host call, small loop", call: "one call", systems: [{ name: "stagecraft staged", run: () => staged(x) }] };
}

const ENGINES = ["ours", "onnxruntime", "auto"] as const;
type EngineName = (typeof ENGINES)[number];

/** Runs `f` with sc.stage's default engine set to `engine`. */
function withEngine<T>(engine: EngineName, f: () => T): T {
  const before = setDefaultEngine(engine === "ours" ? null : engine);
  try {
    return f();
  } finally {
    setDefaultEngine(before);
  }
}

/** Calls each engine's build of a system runs before it is timed, and the most time that may take. */
const EQUAL_WARM_CALLS = 2000, EQUAL_WARM_MS = 10000;

/**
 * Every engine's build of a system runs the same number of calls before the harness times
 * them, interleaved in blocks (EQUAL_WARM_CALLS each, fewer when that takes over EQUAL_WARM_MS:
 * then as many as the rounds reached). The harness's own warm-up is by time (its calls per round
 * too), so on a graph whose generated code V8 speeds up over its first thousands of calls the
 * build that was slower at first got fewer calls, stayed slower, and was timed on an earlier
 * point of the same curve: auto, whose first calls go to its warm-up and its measurement,
 * read 5.6x ours on L2HMC batch 1 while running the same code. A system that throws is left to
 * the harness (which reports its error).
 */
async function warmEqually(systems: System[]): Promise<void> {
  const BLOCK = 20;
  const live = systems.map(() => true);
  const t0 = performance.now();
  for (let n = 0; n < EQUAL_WARM_CALLS && performance.now() - t0 < EQUAL_WARM_MS; n += BLOCK) {
    for (let k = 0; k < systems.length; k++) {
      if (!live[k]) continue;
      try {
        await systems[k]!.enter?.();
        for (let i = 0; i < BLOCK; i++) await systems[k]!.run();
      } catch {
        live[k] = false;
      }
    }
  }
}

const isStaged = (s: System) => s.skip === undefined && s.name.startsWith("stagecraft staged") && !s.name.includes("wasm kernels only");

interface AutoRow {
  workload: string;
  system: string;
  ms: Partial<Record<EngineName, number>>;
  errors: string[];
  ratio: number;
  chosePlan: number;
  choseOurs: number;
  fallbacks: number;
  /** Measurements made again (a recheck begun in the row and not ended leaves the graph counted on neither side). */
  rechecks: number;
  /** Engine-eligible segments placed on the engine / kept on ours by the per-segment step. */
  segmentsOnEngine: number;
  segmentsOnOurs: number;
  plans: number;
  /** What auto's last whole-graph measurement on this system compared (medians, ms), if it made one. */
  measured: { ours: number; plan: number; runs: number } | null;
  planMs: number;
  firstRunMs: number;
}

export async function benchAutoEngine(names: string[] = Object.keys(WORKLOADS), log: (line: string) => void = console.log, rounds = QUICK.rounds): Promise<AutoRow[]> {
  const rows: AutoRow[] = [];
  for (const name of names) {
    const make = WORKLOADS[name];
    if (make === undefined) throw new Error(`unknown workload ${name}: the workloads are ${Object.keys(WORKLOADS).join(", ")}`);
    const built: Partial<Record<EngineName, Workload>> = {};
    // (from before the builds: a workload's set-up calls its functions, and auto may choose there)
    let stats0 = { ...autoStats };
    try {
      for (const e of ENGINES) {
        const before = setDefaultEngine(e === "ours" ? null : e);
        try {
          built[e] = await make();
        } finally {
          setDefaultEngine(before);
        }
      }
    } catch (err) {
      log(`  ${name}: set-up failed: ${(err as Error).message.split("\n")[0]}`);
      for (const w of Object.values(built)) w.done?.();
      continue;
    }
    const stagedNames = built.ours!.systems.filter(isStaged).map((s) => s.name);
    for (const sys of stagedNames) {
      const systems: System[] = ENGINES.map((e) => {
        const s = built[e]!.systems.find((x) => x.name === sys)!;
        return { name: `${sys} [${e}]`, enter: s.enter, run: () => withEngine(e, s.run) };
      });
      autoStats.lastMeasured = null;
      await warmEqually(systems);
      const r = await measure({ name: `${name}: ${sys}`, call: built.ours!.call, systems }, { ...QUICK, rounds });
      const ms: AutoRow["ms"] = {};
      const errors: string[] = [];
      r.figures.forEach((f, k) => {
        if (f.ms !== undefined) ms[ENGINES[k]!] = f.ms.median;
        if (f.error !== undefined) errors.push(`${ENGINES[k]}: ${f.error}`);
      });
      const best = Math.min(ms.ours ?? Infinity, ms.onnxruntime ?? Infinity);
      const row: AutoRow = {
        workload: name,
        system: sys,
        ms,
        errors,
        ratio: (ms.auto ?? NaN) / best,
        chosePlan: autoStats.chosePlan - stats0.chosePlan,
        choseOurs: autoStats.choseOurs - stats0.choseOurs,
        fallbacks: autoStats.fallbacks - stats0.fallbacks,
        rechecks: autoStats.rechecks - stats0.rechecks,
        segmentsOnEngine: autoStats.segmentsOnEngine - stats0.segmentsOnEngine,
        segmentsOnOurs: autoStats.segmentsOnOurs - stats0.segmentsOnOurs,
        plans: autoStats.plans - stats0.plans,
        measured: autoStats.lastMeasured,
        planMs: autoStats.planMs - stats0.planMs,
        firstRunMs: autoStats.firstRunMs - stats0.firstRunMs,
      };
      rows.push(row);
      stats0 = { ...autoStats };
      log(`  ${name}: ${sys}: ${fmtRow(row)}`);
    }
    for (const w of Object.values(built)) w.done?.();
  }
  return rows;
}

const f3 = (x: number | undefined) => (x === undefined ? "-" : x.toPrecision(3));

function fmtRow(r: AutoRow): string {
  return (
    `ours ${f3(r.ms.ours)} ms, onnxruntime ${f3(r.ms.onnxruntime)} ms, auto ${f3(r.ms.auto)} ms: auto/best ${r.ratio.toFixed(2)}; ` +
    `graphs on plan ${r.chosePlan}, on ours ${r.choseOurs}, fallbacks ${r.fallbacks}, rechecks ${r.rechecks}; segments placed on engine ${r.segmentsOnEngine}, on ours ${r.segmentsOnOurs}; one-time: ${r.plans} plans, ${r.planMs.toFixed(1)} ms cutting, ${r.firstRunMs.toFixed(1)} ms first runs` +
    (r.measured !== null ? `; auto measured ours ${f3(r.measured.ours)} ms, plan ${f3(r.measured.plan)} ms (${r.measured.runs} runs each)` : "") +
    (r.errors.length > 0 ? `; errors: ${r.errors.join("; ")}` : "")
  );
}

/** Auto's one-time cost for a few graphs (see --first-call above). */
export function firstCallCosts(log: (line: string) => void = console.log): void {
  const rand = (shape: number[], seed: number, scale = 0.1) => sc.tensor(randomValues(shape.reduce((a, b) => a * b, 1), seed, scale), "float32", shape);
  const x = rand([64, 784], 1, 1), W1 = new sc.Variable(rand([784, 256], 2)), W2 = new sc.Variable(rand([256, 10], 3));
  const y = sc.tensor(Array.from({ length: 64 }, (_, i) => i % 10), "int32");
  const mlp = (x: sc.Tensor) => sc.softmax(sc.matmul(sc.relu(sc.matmul(x, W1)), W2), -1);
  const cases: [string, () => () => unknown][] = [
    ["tiny tanh [8] (below the threshold: no session)", () => { const t = rand([8], 4); const f = sc.stage((a: sc.Tensor) => sc.tanh(a)); return () => f(t); }],
    ["elementwise chain [512,512]", () => { const t = rand([512, 512], 5); const f = sc.stage((a: sc.Tensor) => sc.tanh(a.mul(1.5).add(0.25)).mul(a)); return () => f(t); }],
    ["MLP forward [64,784]->256->10", () => { const f = sc.stage(mlp); return () => f(x); }],
    ["MLP training step (SGD, graph AD)", () => {
      const opt = new sc.optim.SGD({ learningRate: 1e-3 });
      const f = sc.stage((x: sc.Tensor, y: sc.Tensor) => opt.minimize(() => sc.nn.softmaxCrossEntropy(sc.matmul(sc.relu(sc.matmul(x, W1)), W2), y), () => [W1, W2]));
      return () => f(x, y);
    }],
  ];
  // (the process's first session loads onnxruntime: a cost paid once, not per graph)
  const t0 = performance.now();
  sc.stage((a: sc.Tensor) => a.add(1), { engine: "onnxruntime" })(rand([4], 6));
  log(`loading onnxruntime and its first session: ${(performance.now() - t0).toFixed(1)} ms (once per process)`);
  log(`${"graph".padEnd(48)} ${"ours 1st".padStart(9)} ${"ours warm".padStart(10)} ${"cut ms".padStart(7)} ${"1st plan run".padStart(13)} ${"sessions".padStart(9)}  chose`);
  for (const [name, make] of cases) {
    const time = (f: () => unknown) => { const t = performance.now(); f(); return performance.now() - t; };
    const ours = withEngine("ours", make);
    const oursFirst = time(ours);
    for (let i = 0; i < 20; i++) ours();
    const oursWarm = Math.min(...Array.from({ length: 5 }, () => time(ours)));
    const s0 = { ...autoStats }, sessions0 = engineStats.sessions;
    const auto = withEngine("auto", make);
    for (let i = 0; i < 20 && autoStats.chosePlan + autoStats.choseOurs === s0.chosePlan + s0.choseOurs && autoStats.fallbacks === s0.fallbacks; i++) auto();
    const chose = autoStats.chosePlan > s0.chosePlan ? "plan" : autoStats.choseOurs > s0.choseOurs ? "ours" : autoStats.plans > s0.plans ? "ours (no engine segment)" : "-";
    log(`${name.padEnd(48)} ${oursFirst.toFixed(1).padStart(9)} ${oursWarm.toFixed(2).padStart(10)} ${(autoStats.planMs - s0.planMs).toFixed(1).padStart(7)} ${(autoStats.firstRunMs - s0.firstRunMs).toFixed(1).padStart(13)} ${String(engineStats.sessions - sessions0).padStart(9)}  ${chose}`);
  }
}

if (isMainModule(import.meta.url) && process.argv.includes("--first-call")) firstCallCosts();
else if (isMainModule(import.meta.url)) {
  const args = process.argv.slice(2);
  const r = args.indexOf("--rounds");
  const rounds = r < 0 ? QUICK.rounds : Number(args[r + 1]);
  if (!(Number.isInteger(rounds) && rounds > 0)) throw new Error(`--rounds takes a positive integer, got ${args[r + 1]}`);
  const names = r < 0 ? args : [...args.slice(0, r), ...args.slice(r + 2)];
  const t = performance.now();
  const rows = await benchAutoEngine(names.length > 0 ? names : undefined, console.log, rounds);
  console.log(`\n${"workload: system".padEnd(60)} ${"ours ms".padStart(9)} ${"ort ms".padStart(9)} ${"auto ms".padStart(9)}  auto/best  plan/ours  seg e/o  one-time ms`);
  for (const r of rows) {
    console.log(
      `${`${r.workload}: ${r.system}`.padEnd(60)} ${f3(r.ms.ours).padStart(9)} ${f3(r.ms.onnxruntime).padStart(9)} ${f3(r.ms.auto).padStart(9)}  ${r.ratio.toFixed(2).padStart(9)}  ${`${r.chosePlan}/${r.choseOurs}`.padStart(9)}  ${`${r.segmentsOnEngine}/${r.segmentsOnOurs}`.padStart(7)}  ${(r.planMs + r.firstRunMs).toFixed(1).padStart(11)}`,
    );
  }
  console.log(`(${((performance.now() - t) / 1000).toFixed(0)} s; onnxruntime sessions made: ${engineStats.sessions})`);
}
