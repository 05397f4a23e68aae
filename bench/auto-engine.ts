// The "auto" engine against our executor and the onnxruntime engine, on the peer suite's staged
// workloads (bench/peers). Each workload is built three times, with the default engine of
// sc.stage set (setDefaultEngine) to ours, "onnxruntime" and "auto" while it is built and around
// each of its calls (so functions it stages lazily get that engine too); its staged systems
// ("stagecraft staged ...") of the three builds are timed in one interleaved run (the peer
// harness: alternating rounds). A system whose engine cannot run it (onnxruntime on a graph the
// exporter refuses) shows its error; best-of then is the other.
//
// Reported per staged system: ms per call of each, auto / best-of(ours, onnxruntime) (1.00: auto
// chose the faster; above: the price of choosing), what auto chose (its graphs kept on the plan /
// on ours, fallbacks), and auto's one-time cost: cutting and preparing the plans (planMs) and the
// plans' first runs, which export and make the sessions (firstRunMs), over how many graphs.
//   node --import tsx bench/auto-engine.ts [workload ...]     (names below; default: all)
import { setDefaultEngine } from "../src/api/internals.js";
import { autoStats } from "../src/onnx/partition/auto.js";
import { engineStats } from "../src/onnx/engine.js";
import { isMainModule } from "./common.js";
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
};

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
  plans: number;
  planMs: number;
  firstRunMs: number;
}

export async function benchAutoEngine(names: string[] = Object.keys(WORKLOADS), log: (line: string) => void = console.log): Promise<AutoRow[]> {
  const rows: AutoRow[] = [];
  for (const name of names) {
    const make = WORKLOADS[name];
    if (make === undefined) throw new Error(`unknown workload ${name}: the workloads are ${Object.keys(WORKLOADS).join(", ")}`);
    const built: Partial<Record<EngineName, Workload>> = {};
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
      const stats0 = { ...autoStats };
      const r = await measure({ name: `${name}: ${sys}`, call: built.ours!.call, systems }, QUICK);
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
        plans: autoStats.plans - stats0.plans,
        planMs: autoStats.planMs - stats0.planMs,
        firstRunMs: autoStats.firstRunMs - stats0.firstRunMs,
      };
      rows.push(row);
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
    `graphs on plan ${r.chosePlan}, on ours ${r.choseOurs}, fallbacks ${r.fallbacks}; one-time: ${r.plans} plans, ${r.planMs.toFixed(1)} ms cutting, ${r.firstRunMs.toFixed(1)} ms first runs` +
    (r.errors.length > 0 ? `; errors: ${r.errors.join("; ")}` : "")
  );
}

if (isMainModule(import.meta.url)) {
  const names = process.argv.slice(2);
  const t = performance.now();
  const rows = await benchAutoEngine(names.length > 0 ? names : undefined);
  console.log(`\n${"workload: system".padEnd(60)} ${"ours ms".padStart(9)} ${"ort ms".padStart(9)} ${"auto ms".padStart(9)}  auto/best  plan/ours  one-time ms`);
  for (const r of rows) {
    console.log(
      `${`${r.workload}: ${r.system}`.padEnd(60)} ${f3(r.ms.ours).padStart(9)} ${f3(r.ms.onnxruntime).padStart(9)} ${f3(r.ms.auto).padStart(9)}  ${r.ratio.toFixed(2).padStart(9)}  ${`${r.chosePlan}/${r.choseOurs}`.padStart(9)}  ${(r.planMs + r.firstRunMs).toFixed(1).padStart(11)}`,
    );
  }
  console.log(`(${((performance.now() - t) / 1000).toFixed(0)} s; onnxruntime sessions made: ${engineStats.sessions})`);
}
