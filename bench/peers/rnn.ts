/**
 * The RNN of the AutoGraph paper (hidden 256), forward and training step: written once against
 * lib.ts and run by Stagecraft eager, staged and on the onnxruntime engine where `sc.stage` has
 * it, by tfjs (cpu, wasm) and, for the forward pass, by onnxruntime-node's RNN op.
 */
import * as sc from "../../src/api/index.js";
import { randomValues } from "../common.js";
import { assertClose, type System, type Workload } from "./harness.js";
import { scLib, tfLib, type Lib, type T } from "./lib.js";
import { makeNode } from "../../src/onnx/builders.js";
import { jaxNotPorted, onnxModel, ortEngine, ortF32, ortSession, ortSystem, scDefaults, tf, tfBackend, tfSystems } from "./systems.js";

// RNN: h_t = tanh(x_t W + h_{t-1} U + b) (the AutoGraph paper's dynamic RNN)

const RNN_IN = 64, RNN_H = 256;

export async function rnnWorkload(seq: number, batch: number, train: boolean, quick = false): Promise<Workload> {
  const w = randomValues(RNN_IN * RNN_H, 101, Math.sqrt(1 / RNN_IN)), u = randomValues(RNN_H * RNN_H, 102, Math.sqrt(1 / RNN_H));
  const bias = randomValues(RNN_H, 103, 0.1), xs = randomValues(seq * batch * RNN_IN, 104);
  const make = (lib: Lib) => {
    const W = lib.tensor(w, [RNN_IN, RNN_H]), U = lib.tensor(u, [RNN_H, RNN_H]), B = lib.tensor(bias, [RNN_H]);
    const X = lib.tensor(xs, [seq, batch, RNN_IN]);
    const forward = (X: T, W: T, U: T, B: T) => {
      let h = lib.mul(lib.matmul(lib.unstack(X)[0], W), 0);
      for (const x of lib.unstack(X)) h = lib.tanh(lib.add(lib.add(lib.matmul(x, W), lib.matmul(h, U)), B));
      return h;
    };
    const step = train ? (X: T, W: T, U: T, B: T) => lib.grads((W: T, U: T, B: T) => lib.mean(forward(X, W, U, B)), [W, U, B]) : forward;
    return { step: step as (...a: T[]) => T, args: [X, W, U, B] as T[] };
  };
  const ours = make(scLib);
  const staged = sc.stage(ours.step, { name: train ? "rnn_train" : "rnn_forward", autograph: false });
  scDefaults();
  const first = (r: T) => (Array.isArray(r) ? r[1] : r);
  const want = first(ours.step(...ours.args)).dataSync();
  assertClose("rnn staged", first(staged(...ours.args)).dataSync(), want, 1e-4);
  await tfBackend("cpu");
  const theirs = make(tfLib);
  assertClose("rnn tfjs", tf.tidy(() => first(theirs.step(...theirs.args)).dataSync()), want, 1e-3);
  const engine = ortEngine(ours.step);
  const systems: System[] = [
    { name: "stagecraft eager", enter: scDefaults, run: () => ours.step(...ours.args) },
    { name: "stagecraft staged", enter: scDefaults, run: () => staged(...ours.args) },
    { name: "stagecraft on onnxruntime engine", run: () => engine.staged!(...ours.args), skip: engine.skip },
    jaxNotPorted("a Python-style loop over the sequence"),
    ...tfSystems(() => {
      const m = make(tfLib);
      return () => m.step(...m.args);
    }, (b) => (b !== "cpu" ? undefined
      : batch > 32 ? "tfjs-cpu's products are plain JS loops: minutes per round at this size"
      : quick && train ? "left out of --quick: seconds per step (a tenth of tfjs-wasm's speed); the full run times it" : undefined)),
  ];
  if (!train) {
    // the ONNX RNN op: X [seq, batch, in], W [1, H, in], R [1, H, H], B [1, 2H] (Wb then Rb)
    const t = (a: Float32Array, r: number, c: number) => { const o = new Float32Array(r * c); for (let i = 0; i < r; i++) for (let j = 0; j < c; j++) o[j * r + i] = a[i * c + j]!; return o; };
    const Bfull = new Float32Array(2 * RNN_H); Bfull.set(bias);
    const graph = onnxModel(
      [makeNode("RNN", ["x", "w", "r", "b"], ["", "h"], { hidden_size: RNN_H })],
      [["x", [seq, batch, RNN_IN]]],
      [["h", [1, batch, RNN_H]]],
      [
        { name: "w", value: sc.tensor(t(w, RNN_IN, RNN_H), "float32", [1, RNN_H, RNN_IN]) },
        { name: "r", value: sc.tensor(t(u, RNN_H, RNN_H), "float32", [1, RNN_H, RNN_H]) },
        { name: "b", value: sc.tensor(Bfull, "float32", [1, 2 * RNN_H]) },
      ],
    );
    const feeds = { x: ortF32(xs, [seq, batch, RNN_IN]) };
    for (const threads of [1, 0]) {
      const s = await ortSession(graph, threads);
      assertClose("onnxruntime RNN", (await s.run(feeds)).h!.data as Float32Array, want, 1e-3);
      systems.push(ortSystem(`onnxruntime-node${threads === 1 ? ", 1 thread" : ", default threads"}`, s, feeds));
    }
  } else {
    systems.push({ name: "onnxruntime-node", run: () => null, skip: "inference only: a training step needs an exported gradient graph (the ONNX export helper's work)" });
  }
  return {
    name: `RNN hidden ${RNN_H}, sequence ${seq}, batch ${batch}, ${train ? "training step (gradients of W, U, b)" : "forward"}`,
    call: train ? "forward over the sequence and the gradients of every weight" : "the forward pass over the sequence",
    throughput: { perCall: batch, unit: "sequences/s" },
    systems,
  };
}
