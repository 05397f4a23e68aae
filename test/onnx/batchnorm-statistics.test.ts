/**
 * BatchNormalization's running mean and variance are buffers, not parameters (statistics.ts):
 * onnx.load leaves them out of the trainable variables, as initializers and as Constant nodes,
 * so fine-tuning moves the scale, bias and weights but never the statistics (PyTorch's and
 * Keras's behaviour); the model still matches onnxruntime.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as sc from "../../src/api/index.js";
import { Rng } from "../util/rng.js";

const { onnx } = sc;
const vi = onnx.makeValueInfo;
const node = onnx.makeNode;

/** y = BatchNormalization(Conv(x, W), scale, bias, mean, var): the statistics as initializers or Constant nodes. */
function convBnModel(rng: Rng, statisticsAs: "initializers" | "constants"): Uint8Array {
  const W = rng.tensor([3, 2, 3, 3], -0.5, 0.5, "float32");
  const scale = rng.tensor([3], 0.5, 1.5, "float32"), bias = rng.tensor([3], -0.5, 0.5, "float32");
  const mean = rng.tensor([3], -0.2, 0.2, "float32"), variance = rng.tensor([3], 0.5, 2, "float32");
  const stats = statisticsAs === "constants" ? [node("Constant", [], ["mean"], { value: mean }), node("Constant", [], ["var"], { value: variance })] : [];
  const g = onnx.makeGraph(
    [...stats, node("Conv", ["x", "W"], ["c"], { pads: [1, 1, 1, 1] }), node("BatchNormalization", ["c", "scale", "bias", "mean", "var"], ["y"], { epsilon: 1e-5 })],
    "conv_bn",
    [vi("x", "float32", [2, 2, 5, 5])],
    [vi("y", "float32", [2, 3, 5, 5])],
    [
      { name: "W", value: W },
      { name: "scale", value: scale },
      { name: "bias", value: bias },
      ...(statisticsAs === "initializers" ? [{ name: "mean", value: mean }, { name: "var", value: variance }] : []),
    ],
  );
  return onnx.modelBytes(onnx.makeModel(g));
}

for (const statisticsAs of ["initializers", "constants"] as const) {
  test(`BatchNormalization statistics as ${statisticsAs} are not trainable; fine-tuning with weight decay leaves them as they are`, async () => {
    const bytes = convBnModel(new Rng(3), statisticsAs);
    const model = onnx.load(bytes, { nativeSession: false }); // (our graph: compared with onnxruntime below)
    assert.deepEqual(model.variables.map((v) => v.name).sort(), ["W", "bias", "scale"]);
    const x = new Rng(4).tensor([2, 2, 5, 5], -1, 1, "float32");
    // (the statistics as loaded, to compare after training)
    const before = statisticsAs === "initializers" ? ["mean", "var"].map((n) => Array.from(model.initializers.get(n)!.read().dataSync() as Float32Array)) : [];
    const out0 = (model(x) as sc.Tensor).dataSync() as Float32Array;
    const reference = await onnx.runOnnxRuntime(bytes, { x });
    const ref = reference.y!.dataSync() as Float32Array;
    for (let i = 0; i < ref.length; i++) assert.ok(Math.abs(out0[i]! - ref[i]!) <= 1e-5 * (1 + Math.abs(ref[i]!)), `element ${i}: ${out0[i]} vs onnxruntime ${ref[i]}`);
    const opt = new sc.optim.AdamW({ learningRate: 0.1, weightDecay: 0.5 });
    const scale0 = Array.from(model.initializers.get("scale")!.read().dataSync() as Float32Array);
    for (let step = 0; step < 3; step++) opt.minimize(() => sc.mean(sc.square(model(x) as sc.Tensor)), () => model.variables);
    const scale1 = Array.from(model.initializers.get("scale")!.read().dataSync() as Float32Array);
    assert.notDeepEqual(scale1, scale0, "the scale was trained");
    if (statisticsAs === "initializers") {
      const after = ["mean", "var"].map((n) => Array.from(model.initializers.get(n)!.read().dataSync() as Float32Array));
      assert.deepEqual(after, before, "the running statistics are untouched");
      assert.ok(!model.initializers.get("mean")!.trainable && !model.initializers.get("var")!.trainable);
    } else assert.deepEqual([...model.constants.keys()], [], "the statistics stay constants");
  });
}
