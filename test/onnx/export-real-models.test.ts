/**
 * Round trips of real models (shared/real-models, exported by PyTorch): each loads, is exported
 * back by sc.onnx.exportModel (the imported graph: LSTM unrolled, If/Loop as our control flow,
 * initializers as Variables), and onnxruntime-node runs the exported model on the reference
 * inputs with our outputs and the reference outputs (rtol 1e-3, atol 1e-5).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import * as sc from "../../src/api/index.js";

const { onnx } = sc;
/** onnx.load on our graph always: these tests are of our importer (onnxruntime's session of the bytes is native-session.test.ts's). */
const loadGraph = (source: Uint8Array | string, options: sc.onnx.LoadOptions = {}) => onnx.load(source, { ...options, nativeSession: false });
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const shared = [path.join(root, "../shared"), path.join(root, "../../shared")].find((p) => existsSync(path.join(p, "real-models")));
const MODELS = ["squeezenet1_1", "lstm_classifier", "transformer_encoder", "mlp_dynamo", "cnn_dynamo"];

function readData(dir: string, kind: "input" | "output", count: number): sc.Tensor[] {
  return Array.from({ length: count }, (_, i) => onnx.readTensorProto(onnx.decode("TensorProto", readFileSync(path.join(dir, `test_data_set_0/${kind}_${i}.pb`))), `${kind} ${i}`));
}

for (const name of MODELS) {
  test(`real model ${name}: exported back, onnxruntime gives the same outputs`, { skip: shared === undefined && "shared/real-models is not beside the repository" }, async () => {
    const dir = path.join(shared!, "real-models", name);
    const model = loadGraph(path.join(dir, "model.onnx"));
    const inputs = readData(dir, "input", model.inputs.length);
    const expected = readData(dir, "output", model.outputs.length);
    const ours = model.run(Object.fromEntries(model.inputs.map((info, i) => [info.name, inputs[i]!])));
    const exported = onnx.exportModel(model as never, inputs, { inputNames: model.inputs.map((i) => i.name), outputNames: model.outputs.map((o) => o.name) });
    assert.deepEqual(exported.inputNames, model.inputs.map((i) => i.name));
    const got = await onnx.runOnnxRuntime(exported.bytes, Object.fromEntries(model.inputs.map((info, i) => [info.name, inputs[i]!])));
    model.outputs.forEach((o, i) => {
      assert.equal(onnx.mismatch(got[o.name]!, ours[o.name]!, onnx.MODEL_TOLERANCE), null, `${name} output ${o.name} vs ours`);
      assert.equal(onnx.mismatch(got[o.name]!, expected[i]!, onnx.MODEL_TOLERANCE), null, `${name} output ${o.name} vs the reference`);
    });
    // the weights travel as initializers
    const proto = onnx.decode("ModelProto", exported.bytes) as { graph: { initializer: unknown[] } };
    assert.ok(proto.graph.initializer.length >= model.variables.length);
  });
}
