/**
 * Every options object of the public API is checked by one validator (core/options.ts): an
 * unknown key is a ValueError naming the API, the key, the nearest known key and the list of
 * known keys, at the caller's line; a non-object is an error too; valid options still work.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as sc from "../../src/api/index.js";

function rejects(api: string, fn: () => unknown, key: string, known: string[], guess?: string): void {
  assert.throws(fn, (e: Error) => {
    assert.ok(e instanceof sc.ValueError, `${api}: expected ValueError, got ${e.constructor.name}: ${e.message}`);
    assert.ok(e.message.startsWith(`${api}: unknown option ${JSON.stringify(key)}`), e.message);
    assert.ok(e.message.includes(`known options: ${known.join(", ")}`), e.message);
    if (guess) assert.ok(e.message.includes(`(did you mean ${JSON.stringify(guess)}?)`), e.message);
    assert.match(e.message, /\(at test\/core\/options\.test\.ts:\d+:\d+\)$/, e.message);
    return true;
  });
}

const x = sc.ones([1, 1, 4, 4]);
const w = sc.ones([1, 1, 2, 2]);
const bad = { bogusOption: 1 } as any;

test("a misspelt option is rejected with the nearest known key and the list (maximumIterations for maxIterations)", () => {
  rejects("whileLoop", () => sc.whileLoop(() => false, (v) => [v], [sc.scalar(0)], { maximumIterations: 5 } as any), "maximumIterations", ["maxIterations", "shapeInvariants"], "maxIterations");
  rejects("stage", () => sc.stage((t: sc.Tensor) => t, { inputSignatures: [] } as any), "inputSignatures", ["inputSignature", "reduceRetracing", "name", "outputSignature", "autograph"], "inputSignature");
  rejects("Adam", () => new sc.optim.Adam({ learning_rate: 0.1 } as any), "learning_rate", ["learningRate", "clipNorm", "beta1", "beta2", "epsilon", "weightDecay", "amsgrad"], "learningRate");
  rejects("GradientTape", () => new sc.GradientTape({ persistant: true } as any), "persistant", ["persistent", "watchAccessedVariables"], "persistent");
});

test("every options object of the public API goes through the validator", async () => {
  const cases: [string, () => unknown, string[]][] = [
    ["stage", () => sc.stage((t: sc.Tensor) => t, bad), ["inputSignature", "reduceRetracing", "name", "outputSignature", "autograph"]],
    ["whileLoop", () => sc.whileLoop(() => false, (v) => [v], [sc.scalar(0)], bad), ["maxIterations", "shapeInvariants"]],
    ["grad", () => sc.grad((t: sc.Tensor) => t, bad), ["argnums"]],
    ["grad", () => sc.valueAndGrad((t: sc.Tensor) => t, bad), ["argnums"]],
    ["GradientTape", () => new sc.GradientTape(bad), ["persistent", "watchAccessedVariables"]],
    [
      "GradientTape.gradient",
      () => {
        const tape = new sc.GradientTape();
        const v = sc.scalar(1);
        tape.watch(v);
        return tape.gradient(tape.record(() => v.mul(2)), v, bad);
      },
      ["outputGradient", "unconnected"],
    ],
    ["SGD", () => sc.optim.sgd(bad), ["learningRate", "clipNorm", "momentum", "nesterov", "weightDecay"]],
    ["SGD", () => new sc.optim.SGD(bad), ["learningRate", "clipNorm", "momentum", "nesterov", "weightDecay"]],
    ["Adam", () => sc.optim.adam(bad), ["learningRate", "clipNorm", "beta1", "beta2", "epsilon", "weightDecay", "amsgrad"]],
    ["AdamW", () => new sc.optim.AdamW(bad), ["learningRate", "clipNorm", "beta1", "beta2", "epsilon", "weightDecay", "amsgrad"]],
    ["RMSprop", () => new sc.optim.RMSprop(bad), ["learningRate", "clipNorm", "rho", "epsilon", "momentum", "centered", "weightDecay"]],
    ["Adagrad", () => new sc.optim.Adagrad(bad), ["learningRate", "clipNorm", "initialAccumulator", "epsilon", "weightDecay"]],
    ["Linear", () => new sc.nn.Linear(2, bad), ["dtype", "seed", "bias", "kernelInit", "biasInit", "inFeatures"]],
    ["Conv2d", () => new sc.nn.Conv2d(2, 3, bad), ["dtype", "seed", "bias", "kernelInit", "biasInit", "inChannels", "strides", "padding", "dilations", "groups"]],
    ["BatchNorm", () => new sc.nn.BatchNorm(bad), ["axis", "numFeatures", "momentum", "epsilon", "affine", "dtype"]],
    ["Dropout", () => new sc.nn.Dropout(0.5, bad), ["seed"]],
    ["fit", () => sc.nn.fit(new sc.nn.Linear(1), bad as any), ["data", "loss", "optimizer", "epochs", "metrics", "validationData", "validationSplit", "stage", "progress", "classWeight", "callbacks"]],
    ["evaluate", () => sc.nn.evaluate(new sc.nn.Linear(1), bad as any), ["data", "loss", "metrics", "stage"]],
    ["predict", () => sc.nn.predict(new sc.nn.Linear(1), bad as any), ["data", "stage"]],
    ["EarlyStopping", () => new sc.nn.EarlyStopping(bad), ["monitor", "minDelta", "patience", "mode", "restoreBestWeights"]],
    ["ModelCheckpoint", () => new sc.nn.ModelCheckpoint({ path: "unused", ...bad }), ["path", "monitor", "saveBestOnly", "mode", "weightsOnly"]],
    ["ReduceLROnPlateau", () => new sc.nn.ReduceLROnPlateau(bad), ["monitor", "factor", "patience", "mode", "minDelta", "cooldown", "minLr"]],
    ["autograph", () => sc.autograph((t: number) => t, bad), ["scope"]],
    ["variable", () => sc.variable(1, bad), ["name", "trainable", "dtype"]],
    ["matmul", () => sc.matmul(sc.ones([2, 2]), sc.ones([2, 2]), bad), ["transposeA", "transposeB"]],
    ["conv2d", () => sc.conv2d(x, w, bad), ["strides", "padding", "dilations", "groups"]],
    ["conv2dTranspose", () => sc.conv2dTranspose(x, w, bad), ["strides", "padding", "dilations", "groups", "outputPadding"]],
    ["maxPool2d", () => sc.maxPool2d(x, { kernelSize: 2, ...bad }), ["kernelSize", "strides", "padding"]],
    ["avgPool2d", () => sc.avgPool2d(x, { kernelSize: 2, ...bad }), ["kernelSize", "strides", "padding"]],
    ["topK", () => sc.topK(sc.ones([3]), 1, bad), ["sorted"]],
    ["sort", () => sc.sort(sc.ones([3]), bad), ["axis", "descending"]],
    ["argsort", () => sc.argsort(sc.ones([3]), bad), ["axis", "descending"]],
    ["cumsum", () => sc.cumsum(sc.ones([3]), 0, bad), ["exclusive", "reverse"]],
    ["parseSExpr", () => sc.parseSExpr("", bad), ["variables"]],
    ["graphsEqual", () => sc.graphsEqual(new sc.Graph("a"), new sc.Graph("b"), undefined, undefined, bad), ["ignoreGraphNames"]],
    ["onnx.load", () => sc.onnx.load(new Uint8Array(0), bad), ["maxElements", "baseDir", "name", "trainable", "maxLoopIterations"]],
    ["onnx.makeModel", () => sc.onnx.makeModel(sc.onnx.makeGraph([], "g", [], []), bad), ["opset", "irVersion", "opsets", "producer", "functions"]],
    ["onnx.makeNode", () => sc.onnx.makeNode("Relu", ["x"], ["y"], {}, bad), ["name", "domain"]],
    ["onnx.runConformance", () => sc.onnx.runConformance("/nonexistent", bad), ["filter", "tolerance", "onCase"]],
  ];
  for (const [api, fn, known] of cases) rejects(api, fn, "bogusOption", known);
  const g = sc.stage((t: sc.Tensor) => t.add(1), { autograph: false }).concrete(sc.scalar(1));
  await assert.rejects(sc.onnx.createSession(new Uint8Array(0), bad), (e: Error) => e instanceof sc.ValueError && /^onnx\.createSession: unknown option "bogusOption"; known options: executionProviders/.test(e.message));
  rejects("optimize", () => sc.optimizeCopy(g.graph, g.library, bad), "bogusOption", ["exactSignedZeros", "maxIterations", "fuse", "verify", "inline", "fold", "fusion", "constantInputs", "onPass"]);
  rejects("optimize: fold", () => sc.optimizeCopy(g.graph, g.library, { fold: bad }), "bogusOption", ["maxElements", "maxSinkElements"]);
});

test("options must be objects; valid options and omitted ones still work", () => {
  assert.throws(() => sc.stage((t: sc.Tensor) => t, 3 as any), (e: Error) => e instanceof sc.ValueError && /^stage: options must be an object, got number 3/.test(e.message));
  assert.throws(() => sc.matmul(sc.ones([2, 2]), sc.ones([2, 2]), "transposeA" as any), (e: Error) => e instanceof sc.ValueError && /the string "transposeA"/.test(e.message));
  assert.deepEqual(sc.matmul(sc.tensor([[1, 2]]), sc.tensor([[3, 4]]), { transposeB: true }).arraySync(), [[11]]);
  assert.equal(sc.stage((t: sc.Tensor) => t.add(1), { name: "plusOne", autograph: false }).stagedName, "plusOne");
  assert.equal(new sc.optim.Adam({ learningRate: 0.1, amsgrad: true }).amsgrad, true);
  // an inherited key is not an option (only own keys are read)
  const withProto = Object.create({ bogusOption: 1 }) as Record<string, unknown>;
  withProto.argnums = 0;
  assert.equal(sc.grad((t: sc.Tensor) => t.mul(3), withProto)(sc.scalar(1)).arraySync(), 3);
});
