/**
 * The peers as the workloads use them: tfjs backends, jax-js, onnxruntime-node sessions of
 * hand-built models, and the Stagecraft variants (eager, staged, WebAssembly kernels only, the
 * onnxruntime engine where `sc.stage` has it).
 */
import * as tf from "@tensorflow/tfjs";
import "@tensorflow/tfjs-backend-wasm";
import * as ort from "onnxruntime-node";
import * as sc from "../../src/api/index.js";
import { useNativeKernels } from "../../src/backends/cpu/native.js";
import { makeGraph, makeModel, makeValueInfo, modelBytes } from "../../src/onnx/builders.js";
import { setThreadLimit } from "../../src/backends/cpu/worker-pool.js";
import { assertClose, type System } from "./harness.js";

/** Selects a tfjs backend ("cpu" or "wasm") for the calls that follow. */
export async function tfBackend(name: "cpu" | "wasm"): Promise<void> {
  if (tf.getBackend() !== name) await tf.setBackend(name);
  await tf.ready();
  if (tf.getBackend() !== name) throw new Error(`tfjs backend ${name} did not initialize`);
}

/**
 * One tfjs call as its users write it: the result read with `await data()` (tfjs-wasm's
 * dataSync() is ~30x slower than data() on the same product), intermediates disposed.
 */
export async function tfRun(f: () => tf.Tensor | tf.Tensor[]): Promise<void> {
  const out = tf.tidy(f);
  const list = Array.isArray(out) ? out : [out];
  await Promise.all(list.map((t) => t.data()));
  tf.dispose(list);
}

/** Stagecraft's defaults for the systems that follow (native kernels on, every thread). */
export function scDefaults(): void {
  useNativeKernels(true);
  setThreadLimit(Infinity);
}

/** Stagecraft with only its portable kernels (WebAssembly SIMD + worker threads). */
export function scWasmOnly(): void {
  useNativeKernels(false);
  setThreadLimit(Infinity);
}

/**
 * `sc.stage(fn, { engine: "onnxruntime" })`, or why there is no such system yet (the option
 * is checked: an unknown option is an error).
 */
export function ortEngine<A extends unknown[], R>(fn: (...args: A) => R): { staged?: (...args: A) => R; skip?: string } {
  try {
    return { staged: sc.stage(fn, { engine: "onnxruntime" } as unknown as sc.StageOptions) as unknown as (...args: A) => R };
  } catch (e) {
    return { skip: `sc.stage(fn, { engine: "onnxruntime" }) is not available yet (${(e as Error).constructor.name})` };
  }
}

/** The bytes of a hand-built model (src/onnx's builders) with float32 inputs and outputs. */
export function onnxModel(nodes: Record<string, unknown>[], inputs: [string, number[]][], outputs: [string, number[]][], initializers: { name: string; value: sc.Tensor }[] = []): Uint8Array {
  const vi = ([name, dims]: [string, number[]]) => makeValueInfo(name, "float32", dims);
  return modelBytes(makeModel(makeGraph(nodes, "peer", inputs.map(vi), outputs.map(vi), initializers), { opset: 17 }));
}

/** An onnxruntime-node session of a hand-built model, run as its users do (await session.run). */
export async function ortSession(model: Uint8Array, threads: number): Promise<ort.InferenceSession> {
  return ort.InferenceSession.create(model, { intraOpNumThreads: threads, interOpNumThreads: 1, executionMode: "sequential", graphOptimizationLevel: "all" });
}

export function ortSystem(name: string, session: ort.InferenceSession, feeds: Record<string, ort.Tensor>): System {
  return { name, run: () => session.run(feeds) };
}

export const ortF32 = (data: Float32Array, dims: number[]) => new ort.Tensor("float32", data, dims);

/** tfjs-cpu and tfjs-wasm, each with its own copy of the model (`make` runs on entering the backend). */
export function tfSystems(make: () => () => unknown, skip?: (backend: "cpu" | "wasm") => string | undefined): System[] {
  return (["cpu", "wasm"] as const).map((b) => {
    let step: (() => unknown) | null = null;
    return {
      name: `tfjs-${b}`,
      enter: async () => { await tfBackend(b); step ??= make(); },
      run: () => tfRun(step as () => tf.Tensor | tf.Tensor[]),
      skip: skip?.(b),
    };
  });
}

/** jax-js's row where a workload has no jax-js port, with the reason. */
export function jaxNotPorted(why: string): System {
  return { name: "jax-js", run: () => null, skip: `not ported: ${why}; jax-js moves arrays into every op (\`.ref\` to keep one), so each model needs its own port` };
}

/** The hand-written graph code's row, the reference that AutoGraph's conversion is held to. */
export const HAND_WRITTEN = "stagecraft staged (hand-written sc.whileLoop)";

/** tfjs's rows where a workload has no tfjs port yet (its goals compare Stagecraft's own variants). */
export function tfNotPorted(why = "not ported yet: this workload's goal compares AutoGraph's conversion with hand-written graph code"): System[] {
  return (["cpu", "wasm"] as const).map((b) => ({ name: `tfjs-${b}`, run: () => null, skip: why }));
}

/**
 * The row of `sc.stage(fn, { engine: "onnxruntime" })` called with `args`: checked against
 * `want` (the staged function's outputs) before it is timed; a function the engine cannot run
 * (an export error, an op without ONNX form) is reported as not run, with the engine's message.
 */
export function engineSystem(fn: (...a: never[]) => unknown, args: unknown[], want: unknown): System {
  const name = "stagecraft on onnxruntime engine";
  const e = ortEngine(fn as (...a: unknown[]) => unknown);
  if (e.skip !== undefined) return { name, run: () => null, skip: e.skip };
  const flat = (r: unknown): sc.Tensor[] => (Array.isArray(r) ? r.flatMap(flat) : r instanceof sc.Tensor ? [r] : []);
  try {
    const got = flat(e.staged!(...args)), ref = flat(want);
    if (got.length !== ref.length) throw new Error(`${got.length} outputs, the staged function gives ${ref.length}`);
    got.forEach((g, i) => assertClose(`engine output ${i}`, g.dataSync(), ref[i]!.dataSync(), 1e-3));
  } catch (err) {
    return { name, run: () => null, skip: `the engine does not run it: ${(err as Error).message.split("\n")[0]!.slice(0, 140)}` };
  }
  return { name, enter: scDefaults, run: () => e.staged!(...args) };
}

export { tf, ort };
