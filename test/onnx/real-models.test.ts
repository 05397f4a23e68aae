/**
 * Real models exported by PyTorch (shared/real-models, with onnxruntime's outputs as
 * references): each loads, matches its reference outputs (rtol 1e-3, atol 1e-5), agrees with
 * onnxruntime-node run here, and fine-tunes a few SGD steps with falling loss (its
 * initializers are trainable Variables and the imported graph is differentiated).
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
/** shared/ lies beside the repository (a checkout or a worktree one level deeper). */
const shared = [path.join(root, "../shared"), path.join(root, "../../shared")].find((p) => existsSync(path.join(p, "real-models")));
const MODELS = ["squeezenet1_1", "lstm_classifier", "transformer_encoder", "mlp_dynamo", "cnn_dynamo"];

function readData(dir: string, kind: "input" | "output", count: number): sc.Tensor[] {
  return Array.from({ length: count }, (_, i) => onnx.readTensorProto(onnx.decode("TensorProto", readFileSync(path.join(dir, `test_data_set_0/${kind}_${i}.pb`))), `${kind} ${i}`));
}

for (const name of MODELS) {
  test(`real model ${name}: loads, matches onnxruntime's outputs, fine-tunes with falling loss`, { skip: shared === undefined && "shared/real-models is not beside the repository" }, async () => {
    const dir = path.join(shared!, "real-models", name);
    const model = loadGraph(path.join(dir, "model.onnx"));
    const inputs = readData(dir, "input", model.inputs.length);
    const expected = readData(dir, "output", model.outputs.length);
    const got = model.run(Object.fromEntries(model.inputs.map((info, i) => [info.name, inputs[i]!])));
    model.outputs.forEach((o, i) => assert.equal(onnx.mismatch(got[o.name]!, expected[i]!, onnx.MODEL_TOLERANCE), null, `${name} output ${o.name}`));
    // A second call runs the cached trace and gives the same values.
    const again = model.run(Object.fromEntries(model.inputs.map((info, i) => [info.name, inputs[i]!])));
    model.outputs.forEach((o) => assert.deepEqual(Array.from(again[o.name]!.dataSync()), Array.from(got[o.name]!.dataSync())));

    // onnxruntime-node on the same file agrees (the oracle, run here rather than trusted).
    const ort = await onnx.runOnnxRuntime(path.join(dir, "model.onnx"), Object.fromEntries(model.inputs.map((info, i) => [info.name, inputs[i]!])));
    model.outputs.forEach((o) => assert.equal(onnx.mismatch(got[o.name]!, ort[o.name]!, onnx.MODEL_TOLERANCE), null, `${name} vs onnxruntime-node`));

    // Fine-tuning: pull the first output toward a fixed target; the loss must fall.
    assert.ok(model.variables.length > 0, "the model has trainable variables");
    const target = sc.mul(expected[0]!, -1);
    const loss = () => {
      const out = model(...inputs);
      const y = Array.isArray(out) ? out[0]! : out;
      return sc.mean(sc.square(sc.sub(y, target)));
    };
    const opt = new sc.optim.SGD({ learningRate: name === "squeezenet1_1" ? 1e-3 : 1e-2 });
    const losses: number[] = [];
    for (let step = 0; step < 3; step++) losses.push(opt.minimize(loss, model.variables as sc.Variable[]).item() as number);
    losses.push(loss().item() as number);
    for (let i = 1; i < losses.length; i++) assert.ok(losses[i]! < losses[i - 1]!, `${name}: loss did not fall: ${losses.join(", ")}`);
    // The weights changed, and the model still runs the same trace (no retrace per step).
    assert.equal(model.traceCount, 1);
  });
}
