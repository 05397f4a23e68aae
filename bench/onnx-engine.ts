// The onnxruntime engine (`sc.stage(fn, { engine: "onnxruntime" })`) against our compiled
// executor and against onnxruntime running a model built by hand (sc.onnx.makeNode/makeGraph)
// for the same computation, through the same synchronous native session. Interleaved rounds
// (each starting with the next system), median time per call.
//   node --import tsx bench/onnx-engine.ts
import * as sc from "../src/api/index.js";
import { syncRuntime } from "../src/onnx/sync-session.js";
import { isMainModule, median, randomValues, type Row } from "./common.js";

const { onnx } = sc;

interface System {
  name: string;
  call: () => unknown;
}

function timePerCall(s: System, calls: number): number {
  const t0 = performance.now();
  for (let i = 0; i < calls; i++) s.call();
  return ((performance.now() - t0) * 1000) / calls;
}

/** A hand-built model run in a synchronous session; `weightsAsInputs` feeds the weights at every call (as the engine does). */
function handBuilt(nodes: Record<string, unknown>[], inputs: [string, sc.Tensor][], weights: [string, sc.Tensor][], output: string, outDtype: sc.DType, weightsAsInputs: boolean): () => unknown {
  const rt = syncRuntime()!;
  const info = (n: string, t: sc.Tensor) => onnx.makeValueInfo(n, t.dtype, [...t.shape]);
  const graphInputs = [...inputs, ...(weightsAsInputs ? weights : [])];
  const g = onnx.makeGraph(nodes, "hand", graphInputs.map(([n, t]) => info(n, t)), [onnx.makeValueInfo(output, outDtype, null)], weightsAsInputs ? [] : weights.map(([name, value]) => ({ name, value })));
  const bytes = onnx.modelBytes(onnx.makeModel(g));
  const s = new rt.Session();
  // (the engine's session options: no spinning threads, which would tax whichever system runs next)
  s.loadModel(bytes.buffer, bytes.byteOffset, bytes.byteLength, {
    graphOptimizationLevel: "all",
    executionMode: "sequential",
    logSeverityLevel: 3,
    extra: { session: { intra_op: { allow_spinning: "0" } } },
  });
  const fetches = { [output]: null } as Record<string, null>;
  return () => {
    const feeds: Record<string, object> = {};
    for (const [n, t] of graphInputs) feeds[n] = onnx.toOrtTensor(t);
    const r = s.run(feeds, fetches as never, {}) as Record<string, unknown>;
    return onnx.fromOrtTensor(r[output] as never);
  };
}

export async function benchOnnxEngine(rounds = 15): Promise<Row[]> {
  const rows: Row[] = [];
  // 1. an MLP forward: [64, 784] -> 256 (relu) -> 10 (softmax)
  {
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
    rows.push(...compare("MLP forward [64,784]->256->10", f, x, nodes, weights, 200, rounds));
  }
  // 2. an elementwise chain on [512, 512] (no weights)
  {
    const x = sc.tensor(randomValues(512 * 512, 6), "float32", [512, 512]);
    const f = (x: sc.Tensor) => sc.tanh(x.mul(1.5).add(0.25)).mul(x);
    const nodes = [
      onnx.makeNode("Constant", [], ["a"], { value: sc.scalar(1.5, "float32") }),
      onnx.makeNode("Constant", [], ["c"], { value: sc.scalar(0.25, "float32") }),
      onnx.makeNode("Mul", ["x", "a"], ["t0"]),
      onnx.makeNode("Add", ["t0", "c"], ["t1"]),
      onnx.makeNode("Tanh", ["t1"], ["t2"]),
      onnx.makeNode("Mul", ["t2", "x"], ["y"]),
    ];
    rows.push(...compare("elementwise tanh(1.5x+0.25)*x [512,512]", f, x, nodes, [], 100, rounds));
  }
  // 3. a tiny call (per-call overhead: feeds, run, results)
  {
    const x = sc.tensor(randomValues(8, 7), "float32", [8]);
    const f = (x: sc.Tensor) => sc.tanh(x);
    rows.push(...compare("tiny tanh [8] (per-call overhead)", f, x, [onnx.makeNode("Tanh", ["x"], ["y"])], [], 2000, rounds));
  }
  return rows;
}

function compare(label: string, f: (x: sc.Tensor) => sc.Tensor, x: sc.Tensor, nodes: Record<string, unknown>[], weights: [string, sc.Tensor][], calls: number, rounds: number): Row[] {
  const ours = sc.stage(f);
  const engine = sc.stage(f, { engine: "onnxruntime" });
  const systems: System[] = [
    { name: "engine", call: () => engine(x) },
    { name: "executor", call: () => ours(x) },
    { name: "hand-init", call: handBuilt(nodes, [["x", x]], weights, "y", "float32", false) },
    ...(weights.length > 0 ? [{ name: "hand-inputs", call: handBuilt(nodes, [["x", x]], weights, "y", "float32", true) }] : []),
  ];
  // (the same values from every system, then warm-up)
  const ref = ours(x).dataSync();
  for (const s of systems) {
    const got = (s.call() as sc.Tensor).dataSync();
    for (let i = 0; i < ref.length; i++) if (Math.abs(got[i]! - ref[i]!) > 1e-4 + 1e-4 * Math.abs(ref[i]!)) throw new Error(`${label}: ${s.name} differs at ${i}: ${got[i]} vs ${ref[i]}`);
    timePerCall(s, Math.max(5, calls >> 3));
  }
  const times = new Map<string, number[]>(systems.map((s) => [s.name, []]));
  // (each round starts with the next system, so that no system always follows the same one)
  for (let r = 0; r < rounds; r++) {
    for (let k = 0; k < systems.length; k++) {
      const s = systems[(r + k) % systems.length]!;
      times.get(s.name)!.push(timePerCall(s, calls));
    }
  }
  const t = (n: string) => median(times.get(n)!);
  const rows: Row[] = [
    { name: `onnx engine ${label}`, peer: "our executor", ours: t("engine"), theirs: t("executor"), unit: "us/call", ratio: t("executor") / t("engine") },
    { name: `onnx engine ${label}`, peer: "hand-built ORT model (weights as initializers)", ours: t("engine"), theirs: t("hand-init"), unit: "us/call", ratio: t("hand-init") / t("engine") },
  ];
  if (times.has("hand-inputs")) rows.push({ name: `onnx engine ${label}`, peer: "hand-built ORT model (weights as inputs)", ours: t("engine"), theirs: t("hand-inputs"), unit: "us/call", ratio: t("hand-inputs") / t("engine") });
  return rows;
}

if (isMainModule(import.meta.url)) {
  const rows = await benchOnnxEngine();
  console.log("engine sessions made:", sc.onnx.engineStats.sessions);
  for (const r of rows) console.log(`${r.name.padEnd(52)} ${r.peer.padEnd(48)} ${r.ours.toFixed(1).padStart(9)} ${r.theirs.toFixed(1).padStart(9)} ${r.unit}  ${r.ratio.toFixed(3)}x`);
}
