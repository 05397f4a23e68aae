/**
 * sc.nn.saveModel / loadModel: a whole model (classes, configs, weights) saved and loaded in a
 * fresh process that has none of the model's code, outputs bit-for-bit equal; registered user
 * classes; and model.json / weights treated as hostile input (typed errors, bounded allocation).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync, existsSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import * as sc from "../../src/api/index.js";

const { nn } = sc;
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const scratch = mkdtempSync(path.join(tmpdir(), "sc-save-model-"));
process.on("exit", () => rmSync(scratch, { recursive: true, force: true }));
let dirs = 0;
const freshDir = () => path.join(scratch, `m${dirs++}`);

const bits = (t: sc.Tensor) => Buffer.from((t.dataSync() as Float32Array).buffer.slice(0)).toString("hex");
const out = (m: sc.nn.Module, x: sc.Tensor) => m.call(x) as sc.Tensor;

/** One fit step (so the weights are not their initial values, and Adam has run). */
function trainOneStep(model: sc.nn.Module, x: sc.Tensor, y: sc.Tensor): void {
  nn.fit(model, { data: [[x, y]], loss: nn.mse, optimizer: new sc.optim.Adam({ learningRate: 0.05 }), epochs: 1, progress: "off" });
}

class Residual extends nn.Module {
  readonly fc: sc.nn.Linear;
  constructor(readonly dim: number, readonly seed: number) {
    super();
    this.fc = new nn.Linear(dim, { inFeatures: dim, seed });
  }
  getConfig(): unknown[] {
    return [this.dim, this.seed];
  }
  forward(x: sc.Tensor): sc.Tensor {
    return sc.add(sc.relu(this.fc.call(x) as sc.Tensor), x);
  }
}

test("saved models load in a fresh process without their code, outputs bit-for-bit equal (after a fit step)", () => {
  const cases: { dir: string; x: sc.Tensor; expect: string }[] = [];
  const add = (model: sc.nn.Module, x: sc.Tensor, y: sc.Tensor) => {
    model.call(x); // builds the lazily built layers
    trainOneStep(model, x, y);
    model.eval();
    const dir = freshDir();
    nn.saveModel(model, dir);
    cases.push({ dir, x, expect: bits(out(model, x)) });
  };
  // Linear (lazily built), ReLU, Dropout, Linear
  add(new nn.Sequential(new nn.Linear(8, { seed: 1 }), new nn.ReLU(), new nn.Dropout(0.5, { seed: 2 }), new nn.Linear(3, { seed: 3 })),
    sc.random.normal([4, 5], { seed: 4 }), sc.random.normal([4, 3], { seed: 5 }));
  // Conv2d, BatchNorm (running statistics), pooling, Flatten, Linear
  add(new nn.Sequential(new nn.Conv2d(3, 3, { seed: 6, padding: "same" }), new nn.BatchNorm(), new nn.Tanh(), new nn.MaxPool2d(2), new nn.Flatten(), new nn.Linear(2, { seed: 7 })),
    sc.random.normal([2, 2, 4, 4], { seed: 8 }), sc.random.normal([2, 2], { seed: 9 }));
  // a stacked LSTM, LayerNorm, Linear
  add(new nn.Sequential(new nn.LSTM(4, { seed: 10, numLayers: 2, returnSequences: false }), new nn.LayerNorm(), new nn.Linear(2, { seed: 11 })),
    sc.random.normal([3, 5, 2], { seed: 12 }), sc.random.normal([3, 2], { seed: 13 }));

  // and a model of a registered user class, which the fresh process does not have
  nn.registerLayer("Residual", Residual);
  const userDir = freshDir();
  nn.saveModel(new nn.Sequential(new Residual(4, 20)), userDir);

  // The child imports only the library (one process for every case: each start costs seconds).
  const script = `import * as sc from ${JSON.stringify(path.join(root, "src/api/index.ts"))};
const { cases, userDir } = JSON.parse(process.argv[1]);
const bits = (t) => Buffer.from(t.dataSync().buffer.slice(0)).toString("hex");
for (const c of cases) {
  const m = sc.nn.loadModel(c.dir).eval();
  console.log(bits(m.call(sc.tensor(c.x, "float32").reshape(c.shape))));
}
try { sc.nn.loadModel(userDir); console.log("loaded"); } catch (e) { console.log(e.constructor.name + " " + (e instanceof sc.nn.ModelConfigError) + ": " + e.message); }`;
  const arg = JSON.stringify({ cases: cases.map((c) => ({ dir: c.dir, x: Array.from(c.x.dataSync() as Float32Array), shape: c.x.shape })), userDir });
  const r = spawnSync(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script, arg], { cwd: root, timeout: 60_000, encoding: "utf8" });
  assert.equal(r.status, 0, r.stderr);
  const lines = r.stdout.trim().split("\n");
  assert.deepEqual(lines.slice(0, cases.length), cases.map((c) => c.expect));
  assert.match(lines[cases.length]!, /^UnknownLayerError true: loadModel: unknown layer class "Residual" at model\.args\[0\]: register it with sc\.nn\.registerLayer\("Residual", Residual\)/);
});

test("a registered user class round-trips (its child layers and weights by path)", () => {
  nn.registerLayer("Residual", Residual); // (again: the same class under the same name is fine)
  const model = new nn.Sequential(new Residual(4, 20), new nn.Linear(2, { seed: 21 }));
  const x = sc.random.normal([3, 4], { seed: 22 });
  trainOneStep(model, x, sc.random.normal([3, 2], { seed: 23 }));
  model.eval();
  const dir = freshDir();
  nn.saveModel(model, dir);
  const loaded = nn.loadModel(dir).eval();
  assert.ok((loaded as sc.nn.Sequential).layers[0] instanceof Residual);
  assert.equal(bits(out(loaded, x)), bits(out(model, x)));
});

test("frozen modules stay frozen; a model that cannot be described is refused at save, writing nothing", () => {
  const model = new nn.Sequential(new nn.Linear(3, { inFeatures: 2, seed: 1 }), new nn.Linear(1, { inFeatures: 3, seed: 2 }));
  model.layers[0]!.trainable = false;
  const dir = freshDir();
  nn.saveModel(model, dir);
  const loaded = nn.loadModel(dir) as sc.nn.Sequential;
  assert.deepEqual(loaded.layers.map((l) => l.trainable), [false, true]);
  assert.equal(loaded.parameterCount(), 4);

  const noSave = freshDir();
  assert.throws(() => nn.saveModel(new nn.Sequential(new nn.Activation(sc.relu)), noSave), (e: unknown) => e instanceof nn.ModelConfigError && /model\.args\[0\] is a Activation, which is not registered/.test((e as Error).message));
  class MyLinear extends nn.Linear {}
  assert.throws(() => nn.saveModel(new MyLinear(2), noSave), (e: unknown) => e instanceof nn.ModelConfigError && /MyLinear, which is not registered/.test((e as Error).message));
  nn.registerLayer("MyLinear", MyLinear);
  // registered, but it neither records its arguments nor has getConfig: not saved as a Linear
  assert.throws(() => nn.saveModel(new MyLinear(2), noSave), (e: unknown) => e instanceof nn.ModelConfigError && /\(MyLinear\) has no config: give the class a getConfig\(\)/.test((e as Error).message));
  const shared = new nn.Linear(2, { inFeatures: 2 });
  assert.throws(() => nn.saveModel(new nn.Sequential(shared, shared), noSave), (e: unknown) => e instanceof nn.ModelConfigError && /model\.args\[1\] is the same layer as model\.args\[0\]/.test((e as Error).message));
  assert.equal(existsSync(noSave), false);
  assert.throws(() => nn.registerLayer("Linear", MyLinear), (e: unknown) => e instanceof nn.ModelConfigError && /already registered/.test((e as Error).message));
});

test("a tampered model.json or weights file gives typed errors, never a wrong model or an unbounded allocation", () => {
  const model = new nn.Sequential(new nn.Linear(3, { inFeatures: 2, seed: 1 }), new nn.ReLU(), new nn.Linear(1, { inFeatures: 3, seed: 2 }));
  const dir = freshDir();
  nn.saveModel(model, dir);
  const file = path.join(dir, "model.json");
  const good = JSON.parse(readFileSync(file, "utf8"));
  assert.deepEqual(good.model.args[0], { $layer: { class: "Linear", args: [3, { inFeatures: 2, seed: 1 }] } });
  const tamper = (edit: (j: any) => void, check: (e: unknown) => boolean) => {
    const j = structuredClone(good);
    edit(j);
    writeFileSync(file, JSON.stringify(j));
    assert.throws(() => nn.loadModel(dir), check, JSON.stringify(j));
  };
  const configError = (re: RegExp) => (e: unknown) => e instanceof nn.ModelConfigError && re.test((e as Error).message);
  const checkpointError = (re: RegExp) => (e: unknown) => e instanceof sc.io.CheckpointError && re.test((e as Error).message);
  tamper((j) => (j.extra = 1), configError(/unknown key\(s\) "extra"/));
  tamper((j) => (j.format = "v0"), configError(/format must be "stagecraft\.model\.v1"/));
  tamper((j) => (j.model.args[1].$layer.class = "Nope"), (e) => e instanceof nn.UnknownLayerError && e.className === "Nope" && /model\.args\[1\]/.test(e.message));
  tamper((j) => (j.model.args[1].$layer.class = "__proto__"), (e) => e instanceof nn.UnknownLayerError);
  tamper((j) => (j.model.args[1].$layer.class = 5), configError(/model\.args\[1\]\.class must be a string, got number 5/));
  tamper((j) => (j.model.args[0].$layer.config = {}), configError(/unknown key\(s\) "config"/));
  tamper((j) => (j.model.args[0] = { $layer: { class: "Linear", args: [3] }, $x: 1 }), configError(/unknown key\(s\) "\$layer", "\$x"/));
  tamper((j) => (j.model.args[0].$layer.args[1].inFeatures = "2"), (e) => e instanceof sc.ValueError && /inFeatures must be a positive integer/.test((e as Error).message));
  tamper((j) => (j.model.args[0].$layer.args[1].typo = 1), (e) => e instanceof sc.ValueError && /unknown option "typo"/.test((e as Error).message));
  tamper((j) => (j.frozen = ["9"]), configError(/frozen names "9", which is no module/));
  // weights that do not fit the architecture: a wrong shape, a missing and an extra value
  tamper((j) => (j.model.args[0].$layer.args[0] = 4), checkpointError(/has shape \[2, 3\] but variable Linear\/kernel has shape \[2, 4\]/));
  tamper((j) => (j.model.args[2].$layer.args[1].bias = false), checkpointError(/1 saved value\(s\) with no variable to restore into: .*bias/));
  tamper((j) => j.model.args.push({ $layer: { class: "Linear", args: [1, { inFeatures: 1 }] } }), checkpointError(/variable\(s\) the checkpoint has no value for: layers\.3\/kernel, layers\.3\/bias/));
  // sizes in the JSON never allocate more than the weights file holds (this would be 40 GB)
  tamper((j) => (j.model.args[0].$layer.args = [100000, { inFeatures: 100000 }]), checkpointError(/makes more weights \(40000000000 bytes so far\) than the weights file holds/));
  // deep nesting and non-JSON
  tamper((j) => {
    let v: unknown = { class: "ReLU", args: [] };
    for (let i = 0; i < 200; i++) v = { class: "Sequential", args: [{ $layer: v }] };
    j.model = v;
  }, configError(/nested deeper than 64/));
  writeFileSync(file, "{not json");
  assert.throws(() => nn.loadModel(dir), configError(/is not JSON/));
  writeFileSync(file, JSON.stringify(good));
  assert.equal(bits(out(nn.loadModel(dir), sc.ones([1, 2]))), bits(out(model, sc.ones([1, 2]))));
  rmSync(path.join(dir, "weights.safetensors"));
  assert.throws(() => nn.loadModel(dir), checkpointError(/weights\.safetensors: cannot read it/));
});

test("every built-in layer round-trips its config and weights (non-default options, lazily built ones too)", () => {
  const r = (shape: number[], seed: number) => sc.random.normal(shape, { seed });
  const cases: [sc.nn.Module, sc.Tensor[]][] = [
    [new nn.Linear(3, { seed: 1, bias: false }), [r([2, 4], 1)]],
    [new nn.Conv1d(3, 2, { seed: 2, padding: "same", dilations: 2 }), [r([2, 2, 5], 2)]],
    [new nn.Conv2d(4, [2, 3], { seed: 3, strides: [1, 2], groups: 2 }), [r([1, 2, 4, 5], 3)]],
    [new nn.ConvTranspose2d(2, 2, { seed: 4, strides: 2 }), [r([1, 3, 3, 3], 4)]],
    [new nn.MaxPool2d(2), [r([1, 1, 4, 4], 5)]],
    [new nn.AvgPool2d(2, { strides: 1 }), [r([1, 1, 4, 4], 6)]],
    [new nn.BatchNorm({ momentum: 0.2, epsilon: 1e-3 }), [r([4, 3], 7)]],
    [new nn.LayerNorm(), [r([2, 5], 8)]],
    [new nn.LayerNorm([2, 3], { epsilon: 1e-3 }), [r([2, 2, 3], 9)]],
    [new nn.GroupNorm(2, 4), [r([2, 4, 3], 10)]],
    [new nn.Dropout(0.3, { seed: 1 }), [r([2, 3], 11)]],
    [new nn.Embedding(10, 3, { seed: 5 }), [sc.tensor([[1, 9], [0, 3]], "int32")]],
    [new nn.LSTM(3, { seed: 6, bidirectional: true }), [r([2, 4, 2], 12)]],
    [new nn.GRU(3, { seed: 7, numLayers: 2, returnSequences: false }), [r([2, 4, 2], 13)]],
    [new nn.MultiHeadAttention(4, 2, { seed: 8 }), [r([2, 3, 4], 14)]],
    [new nn.TransformerEncoderLayer(4, 2, { dimFeedforward: 8, normFirst: true, activation: "gelu", seed: 9 }), [r([2, 3, 4], 15)]],
    [new nn.TransformerDecoderLayer(4, 2, { dimFeedforward: 8, causal: true, seed: 10 }), [r([2, 3, 4], 16), r([2, 2, 4], 17)]],
    [new nn.Sequential(new nn.Flatten(), new nn.GELU(), new nn.Sigmoid(), new nn.Softmax(0), new nn.LogSoftmax()), [r([2, 2, 2], 18)]],
  ];
  let seed = 100;
  for (const [layer, inputs] of cases) {
    layer.call(...inputs);
    // every float weight away from its initial value (running variances kept positive)
    for (const [p, v] of layer.namedVariables()) {
      if (v.dtype !== "float32") continue;
      const [minval, maxval] = p.endsWith("runningVar") ? [0.5, 1.5] : [-0.5, 0.5];
      v.assign(sc.random.uniform([...v.shape], { seed: seed++, minval, maxval }));
    }
    layer.eval();
    const dir = freshDir();
    nn.saveModel(layer, dir);
    const loaded = nn.loadModel(dir).eval();
    assert.equal(loaded.constructor, layer.constructor);
    assert.equal(bits(loaded.call(...inputs) as sc.Tensor), bits(layer.call(...inputs) as sc.Tensor), layer.typeName);
  }
});

test("a GRU given inputSize keeps its recurrent bias (the rebuilt layers are given it; it was dropped)", () => {
  const cell = new nn.GRUCell(3, { inputSize: 2 });
  assert.notEqual(cell.recurrentBias, null);
  assert.deepEqual(cell.namedVariables().map(([p]) => p).sort(), ["bias", "kernel", "recurrentBias", "recurrentKernel"]);
  // a stacked GRU's upper layer is made with inputSize too: 4 weights per cell
  assert.equal(new nn.GRU(3, { numLayers: 2, inputSize: 2 }).variables().length, 8);
});
