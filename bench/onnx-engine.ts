// The onnxruntime engine (`sc.stage(fn, { engine: "onnxruntime" })`) against our compiled
// executor and against onnxruntime running a model built by hand (sc.onnx.makeNode/makeGraph)
// for the same computation, through the same synchronous native session with the engine's
// session options. The hand-built call is the binding's synchronous run that onnxruntime-node's
// public `await session.run(feeds)` makes (without that API's Promise and setImmediate): an
// ort.Tensor over the input's data made once, run, the output's data (no conversion to our tensors).
//
// Rounds are interleaved: within a round every system makes its calls in slices taken in turn
// (A B C A B C ..., starting with a different system each round, odd rounds backwards), so that
// load that comes and goes over milliseconds falls on every system alike; a ratio is taken
// within each round, and the report gives its median and range over the rounds.
// ratio = peer's time / engine's time (above 1: the engine is faster).
// --threads=N gives every onnxruntime session (the engine's, through an engine installed with
// those options, and the hand-built ones) N intra-op threads: on a loaded machine one thread
// each measures the work rather than the scheduler.
// --cpu-time times calls by the process's CPU time (user + system, every thread) instead of the
// wall clock: what the calls cost, without the time the scheduler gave other processes.
// --cases=mlp,training,elementwise,tiny runs only those cases. The tiny case also times the
// hand-built call with its result made a Stagecraft tensor, and that call without a run options
// object (the binding then runs with the session's default ones, as the engine does; the public
// InferenceSession.run always passes one, as the hand-built rows do): the least a staged call
// adds to a run.
//   node --import tsx bench/onnx-engine.ts [rounds] [--threads=N] [--cpu-time] [--cases=...]
import { loadavg } from "node:os";
import * as sc from "../src/api/index.js";
import { syncRuntime } from "../src/onnx/sync-session.js";
import { isMainModule, median, randomValues, type Row } from "./common.js";

const { onnx, nn } = sc;

interface System {
  name: string;
  call: () => unknown;
}

/** A row with the range of the per-round ratios. */
export type RangedRow = Row & { low: number; high: number; rounds: number };

/** Microseconds (wall clock, or process CPU time with --cpu-time) that `calls` calls take. */
function timeCalls(call: () => unknown, calls: number): number {
  if (config.cpuTime) {
    const c0 = process.cpuUsage();
    for (let i = 0; i < calls; i++) call();
    const c = process.cpuUsage(c0);
    return c.user + c.system;
  }
  const t0 = performance.now();
  for (let i = 0; i < calls; i++) call();
  return (performance.now() - t0) * 1000;
}

/** The engine's name and the hand-built sessions' thread count (see --threads). */
const config: { engine: string; threads?: number; cpuTime?: boolean } = { engine: "onnxruntime" };
const installed = new Set<string>();

/**
 * A hand-built model in a synchronous session; `weightsAsInputs` feeds the weights at every call;
 * `wrap` makes each result a Stagecraft tensor (over the result's own data and dims: the least a
 * staged function's call must add to the run); `runOptions` false runs it without a run options object.
 */
function handBuilt(nodes: Record<string, unknown>[], x: sc.Tensor, weights: [string, sc.Tensor][], weightsAsInputs: boolean, wrap = false, runOptions = true): () => unknown {
  const rt = syncRuntime()!;
  const info = (n: string, t: sc.Tensor) => onnx.makeValueInfo(n, t.dtype, [...t.shape]);
  const fed: [string, sc.Tensor][] = [["x", x], ...(weightsAsInputs ? weights : [])];
  const g = onnx.makeGraph(nodes, "hand", fed.map(([n, t]) => info(n, t)), [onnx.makeValueInfo("y", "float32", null)], weightsAsInputs ? [] : weights.map(([name, value]) => ({ name, value })));
  const bytes = onnx.modelBytes(onnx.makeModel(g));
  const s = new rt.Session();
  // (the engine's session options: no spinning threads, which would tax whichever system runs next)
  s.loadModel(bytes.buffer, bytes.byteOffset, bytes.byteLength, {
    executionProviders: ["cpu"],
    graphOptimizationLevel: "all",
    executionMode: "sequential",
    logSeverityLevel: 3,
    extra: { session: { intra_op: { allow_spinning: "0" } } },
    ...(config.threads !== undefined ? { intraOpNumThreads: config.threads } : {}),
  });
  const T = rt.Tensor;
  const fetches = { y: null } as Record<string, null>;
  // (the input is the same at every call: its ort.Tensor and the feeds object are made once)
  const feeds: Record<string, object> = {};
  for (const [n, t] of fed) feeds[n] = new T("float32", t.dataSync() as Float32Array, [...t.shape]);
  const options = {};
  if (wrap && !runOptions) {
    return () => {
      const y = (s.run(feeds, fetches as never) as Record<string, { data: Float32Array; dims: number[] }>).y!;
      return new sc.Tensor(y.data, y.dims, "float32");
    };
  }
  if (wrap) {
    return () => {
      const y = (s.run(feeds, fetches as never, options) as Record<string, { data: Float32Array; dims: number[] }>).y!;
      return new sc.Tensor(y.data, y.dims, "float32");
    };
  }
  return () => (s.run(feeds, fetches as never, options) as Record<string, { data: unknown }>).y!.data;
}

/** Slices a round's calls of each system are split into (taken in turn with the other systems'). */
const SLICES = 10;

/** Times every system in `rounds` interleaved rounds; rows of the engine against each other system. */
function measure(label: string, systems: System[], calls: number, rounds: number): RangedRow[] {
  for (const s of systems) timeCalls(s.call, Math.max(5, calls >> 2)); // warm-up
  const times = new Map<string, number[]>(systems.map((s) => [s.name, []]));
  // (each round starts with the next system; odd rounds go backwards, so that every system
  // follows every other one: a system that leaves threads busy or caches cold taxes them all)
  const n = systems.length;
  const slice = Math.max(1, Math.round(calls / SLICES));
  for (let r = 0; r < rounds; r++) {
    const start = r >> 1;
    const order = Array.from({ length: n }, (_, k) => systems[r % 2 === 0 ? (start + k) % n : (start + n - k + n) % n]!);
    const spent = order.map(() => 0);
    for (let done = 0; done < calls; done += slice) {
      const m = Math.min(slice, calls - done);
      order.forEach((s, k) => (spent[k]! += timeCalls(s.call, m)));
    }
    order.forEach((s, k) => times.get(s.name)!.push(spent[k]! / calls));
  }
  const engine = times.get("engine")!;
  return systems
    .filter((s) => s.name !== "engine")
    .map((s) => {
      const peer = times.get(s.name)!;
      const ratios = peer.map((t, r) => t / engine[r]!);
      return { name: `onnx engine ${label}`, peer: s.name, ours: median(engine), theirs: median(peer), unit: "us/call", ratio: median(ratios), low: Math.min(...ratios), high: Math.max(...ratios), rounds };
    });
}

/** The same values from every system (within float32 tolerance), or an error naming the one that differs. */
function checkSame(label: string, systems: System[], reference: ArrayLike<number>): void {
  for (const s of systems) {
    const r = s.call();
    const got = (r instanceof sc.Tensor ? r.dataSync() : r) as ArrayLike<number>;
    for (let i = 0; i < reference.length; i++) {
      if (!(Math.abs(got[i]! - reference[i]!) <= 1e-4 + 1e-4 * Math.abs(reference[i]!))) throw new Error(`${label}: ${s.name} differs at ${i}: ${got[i]} vs ${reference[i]}`);
    }
  }
}

/** A staged function on the engine and on our executor, and hand-built models of `nodes`, on input x. */
function forwardRows(label: string, f: (x: sc.Tensor) => sc.Tensor, x: sc.Tensor, nodes: Record<string, unknown>[], weights: [string, sc.Tensor][], calls: number, rounds: number, withFloor = false): RangedRow[] {
  const ours = sc.stage(f);
  const engine = sc.stage(f, { engine: config.engine });
  const systems: System[] = [
    { name: "engine", call: () => engine(x) },
    { name: "our executor", call: () => ours(x) },
    { name: weights.length > 0 ? "hand-built ORT model (weights as initializers)" : "hand-built ORT model", call: handBuilt(nodes, x, weights, false) },
    ...(weights.length > 0 ? [{ name: "hand-built ORT model (weights as inputs)", call: handBuilt(nodes, x, weights, true) }] : []),
    ...(withFloor
      ? [
          { name: "hand-built ORT model, result as our Tensor", call: handBuilt(nodes, x, weights, false, true) },
          { name: "the same, no run options (the binding's least)", call: handBuilt(nodes, x, weights, false, true, false) },
        ]
      : []),
  ];
  checkSame(label, systems, ours(x).dataSync());
  return measure(label, systems, calls, rounds);
}

/** The benchmark's cases, by the name --cases takes. */
export const CASES = ["mlp", "training", "elementwise", "tiny"] as const;
export type Case = (typeof CASES)[number];

export async function benchOnnxEngine(rounds = 15, threads?: number, cpuTime = false, cases: readonly Case[] = CASES): Promise<RangedRow[]> {
  config.cpuTime = cpuTime;
  if (threads !== undefined) {
    config.threads = threads;
    config.engine = `onnxruntime-bench-${threads}-threads`;
    if (!installed.has(config.engine)) sc.onnx.installEngine(config.engine, { intraOpNumThreads: threads });
    installed.add(config.engine);
  }
  const rows: RangedRow[] = [];
  // 1. an MLP forward: [64, 784] -> 256 (relu) -> 10 (softmax), weights captured Variables
  if (cases.includes("mlp")) {
    const x = sc.tensor(randomValues(64 * 784, 1), "float32", [64, 784]);
    const W1 = new sc.Variable(sc.tensor(randomValues(784 * 256, 2, 0.05), "float32", [784, 256]), { name: "W1" });
    const b1 = new sc.Variable(sc.tensor(randomValues(256, 3, 0.1), "float32", [256]), { name: "b1" });
    const W2 = new sc.Variable(sc.tensor(randomValues(256 * 10, 4, 0.1), "float32", [256, 10]), { name: "W2" });
    const b2 = new sc.Variable(sc.tensor(randomValues(10, 5, 0.1), "float32", [10]), { name: "b2" });
    const f = (x: sc.Tensor) => sc.softmax(sc.matmul(sc.relu(sc.matmul(x, W1).add(b1)), W2).add(b2), -1);
    const nodes = [
      onnx.makeNode("MatMul", ["x", "W1"], ["h0"]),
      onnx.makeNode("Add", ["h0", "b1"], ["h1"]),
      onnx.makeNode("Relu", ["h1"], ["h2"]),
      onnx.makeNode("MatMul", ["h2", "W2"], ["h3"]),
      onnx.makeNode("Add", ["h3", "b2"], ["h4"]),
      onnx.makeNode("Softmax", ["h4"], ["y"], { axis: -1 }),
    ];
    const weights: [string, sc.Tensor][] = [["W1", W1.storedValue], ["b1", b1.storedValue], ["W2", W2.storedValue], ["b2", b2.storedValue]];
    rows.push(...forwardRows("MLP forward [64,784]->256->10", f, x, nodes, weights, 200, rounds));
  }
  // 2. a training step of the same MLP (forward, graph-AD backward, SGD update, all staged): the
  //    engine runs the exported step (variables fed and written back at every call)
  if (cases.includes("training")) {
    const x = sc.tensor(randomValues(64 * 784, 6), "float32", [64, 784]);
    const y = sc.tensor(Array.from({ length: 64 }, (_, i) => (i * 7) % 10), "int32");
    const make = () => new nn.Sequential(new nn.Linear(256, { seed: 7 }), new nn.ReLU(), new nn.Linear(10, { seed: 8 }));
    const stepOn = (engine?: string) => {
      const model = make();
      model.call(x);
      const opt = new sc.optim.SGD({ learningRate: 1e-3 });
      const step = sc.stage((x: sc.Tensor, y: sc.Tensor) => opt.minimize(() => nn.softmaxCrossEntropy(model.call(x), y), () => model.parameters()), engine ? { engine } : {});
      return () => step(x, y);
    };
    const systems: System[] = [
      { name: "engine", call: stepOn(config.engine) },
      { name: "our executor", call: stepOn() },
    ];
    // (both start from the same weights and take the same steps: their losses agree step by step)
    const losses = systems.map((s) => Array.from({ length: 3 }, () => (s.call() as sc.Tensor).dataSync()[0]!));
    losses[0]!.forEach((l, i) => {
      if (Math.abs(l - losses[1]![i]!) > 1e-4 * Math.abs(l)) throw new Error(`training step ${i}: engine loss ${l}, executor ${losses[1]![i]}`);
    });
    rows.push(...measure("training step (SGD) [64,784]->256->10", systems, 50, rounds));
  }
  // 3. an elementwise chain on [512, 512] (no weights)
  if (cases.includes("elementwise")) {
    const x = sc.tensor(randomValues(512 * 512, 9), "float32", [512, 512]);
    const f = (x: sc.Tensor) => sc.tanh(x.mul(1.5).add(0.25)).mul(x);
    const nodes = [
      onnx.makeNode("Constant", [], ["a"], { value: sc.scalar(1.5, "float32") }),
      onnx.makeNode("Constant", [], ["c"], { value: sc.scalar(0.25, "float32") }),
      onnx.makeNode("Mul", ["x", "a"], ["t0"]),
      onnx.makeNode("Add", ["t0", "c"], ["t1"]),
      onnx.makeNode("Tanh", ["t1"], ["t2"]),
      onnx.makeNode("Mul", ["t2", "x"], ["y"]),
    ];
    rows.push(...forwardRows("elementwise tanh(1.5x+0.25)*x [512,512]", f, x, nodes, [], 100, rounds));
  }
  // 4. a tiny call (per-call overhead: staging's dispatch, feeds, run, results)
  if (cases.includes("tiny")) {
    const x = sc.tensor(randomValues(8, 10), "float32", [8]);
    rows.push(...forwardRows("tiny tanh [8] (per-call overhead)", (x) => sc.tanh(x), x, [onnx.makeNode("Tanh", ["x"], ["y"])], [], 5000, rounds, true));
  }
  return rows;
}

if (isMainModule(import.meta.url)) {
  const args = process.argv.slice(2);
  const rounds = Number(args.find((a) => !a.startsWith("--")) ?? 15);
  const t = args.find((a) => a.startsWith("--threads="));
  const threads = t === undefined ? undefined : Number(t.slice("--threads=".length));
  const cpuTime = args.includes("--cpu-time");
  const c = args.find((a) => a.startsWith("--cases="));
  const cases = c === undefined ? CASES : (c.slice("--cases=".length).split(",") as Case[]);
  const unknown = cases.filter((k) => !CASES.includes(k));
  if (unknown.length > 0) throw new Error(`unknown case(s) ${unknown.join(", ")}: the cases are ${CASES.join(", ")}`);
  const rows = await benchOnnxEngine(rounds, threads, cpuTime, cases);
  console.log(`ratio = peer's time / engine's time (above 1: the engine is faster); median [min..max] over ${rounds} interleaved rounds`);
  console.log(`times: ${cpuTime ? "process CPU time (user + system)" : "wall clock"}; onnxruntime threads: ${threads ?? "its default"}`);
  console.log(`${"case".padEnd(42)} ${"peer".padEnd(48)} ${"engine us".padStart(10)} ${"peer us".padStart(10)}  ratio`);
  for (const r of rows) {
    const range = `[${r.low.toFixed(2)}..${r.high.toFixed(2)}]`;
    const us = (t: number) => t.toFixed(t < 100 ? 2 : 1).padStart(10);
    console.log(`${r.name.replace("onnx engine ", "").padEnd(42)} ${r.peer.padEnd(48)} ${us(r.ours)} ${us(r.theirs)}  ${r.ratio.toFixed(3)}x ${range}`);
  }
  console.log(`load average while measured (1, 5, 15 min): ${loadavg().map((l) => l.toFixed(2)).join(", ")}`);
  console.log("engine sessions made:", sc.onnx.engineStats.sessions);
}
