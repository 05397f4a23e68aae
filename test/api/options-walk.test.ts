/**
 * A walk over the whole public API: every function, constructor and method that takes an
 * options object (found in the source by test/util/options-surface.ts, nested option objects
 * such as fit's `callbacks` included) is called with a misspelt key, and must refuse it with a
 * ValueError that names the API. The table below says, per API, how to call it with a given
 * options object; a new API with an options argument and no row here fails the coverage test,
 * so it cannot ship with its options unchecked.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as sc from "../../src/api/index.js";
import { optionsSites } from "../util/options-surface.js";

type Call = (options: any) => unknown;

const x4 = () => sc.ones([1, 1, 4, 4]);
const model = () => new sc.nn.Linear(1, { inFeatures: 1, seed: 0 });
const fitWith = (extra: object) => sc.nn.fit(model(), { data: [[sc.ones([2, 1]), sc.ones([2, 1])]], loss: sc.nn.mse, optimizer: sc.optim.sgd(), progress: "off", ...extra });
const staged = () => sc.stage((t: sc.Tensor) => t.add(1), { autograph: false }).concrete(sc.scalar(1));
const dataset = () => sc.data.Dataset.fromArray([1, 2, 3]);

/** Per public path: the API named in the error, and a call that passes `options` where the path takes them. */
const TABLE: Record<string, [api: string, call: Call]> = {
  Variable: ["Variable", (o) => new sc.Variable(sc.scalar(1), o)],
  variable: ["variable", (o) => sc.variable(1, o)],
  cumsum: ["cumsum", (o) => sc.cumsum(sc.ones([3]), 0, o)],
  matmul: ["matmul", (o) => sc.matmul(sc.ones([2, 2]), sc.ones([2, 2]), o)],
  conv2d: ["conv2d", (o) => sc.conv2d(x4(), sc.ones([1, 1, 2, 2]), o)],
  conv2dTranspose: ["conv2dTranspose", (o) => sc.conv2dTranspose(x4(), sc.ones([1, 1, 2, 2]), o)],
  maxPool2d: ["maxPool2d", (o) => sc.maxPool2d(x4(), { kernelSize: 2, ...o })],
  avgPool2d: ["avgPool2d", (o) => sc.avgPool2d(x4(), { kernelSize: 2, ...o })],
  topK: ["topK", (o) => sc.topK(sc.ones([3]), 1, o)],
  sort: ["sort", (o) => sc.sort(sc.ones([3]), o)],
  argsort: ["argsort", (o) => sc.argsort(sc.ones([3]), o)],
  "random.Generator": ["random.Generator", (o) => new sc.random.Generator(o)],
  "random.Generator.prototype.uniform": ["random.uniform", (o) => new sc.random.Generator({ seed: 0 }).uniform([2], o)],
  "random.Generator.prototype.normal": ["random.normal", (o) => new sc.random.Generator({ seed: 0 }).normal([2], o)],
  "random.uniform": ["random.uniform", (o) => sc.random.uniform([2], o)],
  "random.normal": ["random.normal", (o) => sc.random.normal([2], o)],
  "random.bernoulli": ["random.bernoulli", (o) => sc.random.bernoulli(sc.scalar(0.5), [2], o)],
  "random.categorical": ["random.categorical", (o) => sc.random.categorical(sc.zeros([1, 3]), 2, o)],
  GradientTape: ["GradientTape", (o) => new sc.GradientTape(o)],
  "GradientTape.prototype.gradient": [
    "GradientTape.gradient",
    (o) => {
      const tape = new sc.GradientTape();
      const v = sc.scalar(1);
      tape.watch(v);
      return tape.gradient(tape.record(() => v.mul(2)), v, o);
    },
  ],
  grad: ["grad", (o) => sc.grad((t: sc.Tensor) => t, o)],
  "io.restore": ["restore", (o) => sc.io.restore({ v: sc.variable(1) }, "missing.ckpt", o)],
  "io.Checkpoint.prototype.restore": ["restore", (o) => new sc.io.Checkpoint({ v: sc.variable(1) }).restore("missing.ckpt", o)],
  valueAndGrad: ["grad", (o) => sc.valueAndGrad((t: sc.Tensor) => t, o)],
  vmap: ["vmap", (o) => sc.vmap((t: sc.Tensor) => t, o)],
  "distributed.init": ["distributed.init", (o) => sc.distributed.init(o)],
  "distributed.DistributedOptimizer": ["distributed.DistributedOptimizer", (o) => sc.distributed.DistributedOptimizer(new sc.optim.SGD({ learningRate: 0.1 }), o)],
  "distributed.allReduceGradients": ["distributed.allReduceGradients", (o) => sc.distributed.allReduceGradients([], o)],
  stage: ["stage", (o) => sc.stage((t: sc.Tensor) => t, o)],
  whileLoop: ["whileLoop", (o) => sc.whileLoop(() => false, (v) => [v], [sc.scalar(0)], o)],
  parseSExpr: ["parseSExpr", (o) => sc.parseSExpr("", o)],
  graphsEqual: ["graphsEqual", (o) => sc.graphsEqual(new sc.Graph("a"), new sc.Graph("b"), undefined, undefined, o)],
  optimize: ["optimize", (o) => { const g = staged(); return sc.optimize(g.graph, g.library, o); }],
  "optimize > inline": ["optimize: inline", (o) => { const g = staged(); return sc.optimize(g.graph, g.library, { inline: o }); }],
  "optimize > fold": ["optimize: fold", (o) => { const g = staged(); return sc.optimize(g.graph, g.library, { fold: o }); }],
  "optimize > fusion": ["optimize: fusion", (o) => { const g = staged(); return sc.optimize(g.graph, g.library, { fusion: o }); }],
  optimizeCopy: ["optimize", (o) => { const g = staged(); return sc.optimizeCopy(g.graph, g.library, o); }],
  "optimizeCopy > inline": ["optimize: inline", (o) => { const g = staged(); return sc.optimizeCopy(g.graph, g.library, { inline: o }); }],
  "optimizeCopy > fold": ["optimize: fold", (o) => { const g = staged(); return sc.optimizeCopy(g.graph, g.library, { fold: o }); }],
  "optimizeCopy > fusion": ["optimize: fusion", (o) => { const g = staged(); return sc.optimizeCopy(g.graph, g.library, { fusion: o }); }],
  autograph: ["autograph", (o) => sc.autograph((t: number) => t, o)],
  "nn.Module.prototype.parameterCount": ["Module.parameterCount", (o) => model().parameterCount(o)],
  "nn.Linear": ["Linear", (o) => new sc.nn.Linear(2, o)],
  "nn.Conv2d": ["Conv2d", (o) => new sc.nn.Conv2d(2, 3, o)],
  "nn.Conv1d": ["Conv1d", (o) => new sc.nn.Conv1d(2, 3, o)],
  "nn.ConvTranspose2d": ["ConvTranspose2d", (o) => new sc.nn.ConvTranspose2d(2, 3, o)],
  "nn.GroupNorm": ["GroupNorm", (o) => new sc.nn.GroupNorm(2, 4, o)],
  "nn.TransformerEncoderLayer": ["TransformerEncoderLayer", (o) => new sc.nn.TransformerEncoderLayer(4, 2, o)],
  "nn.TransformerDecoderLayer": ["TransformerDecoderLayer", (o) => new sc.nn.TransformerDecoderLayer(4, 2, o)],
  "nn.MaxPool2d": ["MaxPool2d", (o) => new sc.nn.MaxPool2d(2, o)],
  "nn.AvgPool2d": ["AvgPool2d", (o) => new sc.nn.AvgPool2d(2, o)],
  "nn.BatchNorm": ["BatchNorm", (o) => new sc.nn.BatchNorm(o)],
  "nn.LayerNorm": ["LayerNorm", (o) => new sc.nn.LayerNorm(4, o)],
  "nn.Dropout": ["Dropout", (o) => new sc.nn.Dropout(0.5, o)],
  "nn.Embedding": ["Embedding", (o) => new sc.nn.Embedding(4, 2, o)],
  "nn.LSTMCell": ["LSTMCell", (o) => new sc.nn.LSTMCell(2, o)],
  "nn.GRUCell": ["GRUCell", (o) => new sc.nn.GRUCell(2, o)],
  "nn.LSTM": ["LSTM", (o) => new sc.nn.LSTM(2, o)],
  "nn.GRU": ["GRU", (o) => new sc.nn.GRU(2, o)],
  "nn.MultiHeadAttention": ["MultiHeadAttention", (o) => new sc.nn.MultiHeadAttention(4, 2, o)],
  "nn.init.normal": ["init.normal", (o) => sc.nn.init.normal(o)],
  "nn.init.uniform": ["init.uniform", (o) => sc.nn.init.uniform(o)],
  "nn.init.glorotUniform": ["init.glorotUniform", (o) => sc.nn.init.glorotUniform(o)],
  "nn.init.glorotNormal": ["init.glorotNormal", (o) => sc.nn.init.glorotNormal(o)],
  "nn.init.heNormal": ["init.heNormal", (o) => sc.nn.init.heNormal(o)],
  "nn.init.heUniform": ["init.heUniform", (o) => sc.nn.init.heUniform(o)],
  "nn.init.lecunNormal": ["init.lecunNormal", (o) => sc.nn.init.lecunNormal(o)],
  "nn.softmaxCrossEntropy": ["softmaxCrossEntropy", (o) => sc.nn.softmaxCrossEntropy(sc.zeros([2, 3]), sc.tensor([0, 1], "int32"), o)],
  "nn.binaryCrossEntropyWithLogits": ["binaryCrossEntropyWithLogits", (o) => sc.nn.binaryCrossEntropyWithLogits(sc.zeros([2]), sc.ones([2]), o)],
  "nn.mse": ["mse", (o) => sc.nn.mse(sc.zeros([2]), sc.ones([2]), o)],
  "nn.huber": ["huber", (o) => sc.nn.huber(sc.zeros([2]), sc.ones([2]), o)],
  "nn.l1": ["l1", (o) => sc.nn.l1(sc.zeros([2]), sc.ones([2]), o)],
  "nn.mae": ["mae", (o) => sc.nn.mae(sc.zeros([2]), sc.ones([2]), o)],
  "nn.nll": ["nll", (o) => sc.nn.nll(sc.zeros([2, 3]), sc.tensor([0, 1], "int32"), o)],
  "nn.klDivergence": ["klDivergence", (o) => sc.nn.klDivergence(sc.zeros([2, 3]), sc.ones([2, 3]), o)],
  "nn.cosineSimilarity": ["cosineSimilarity", (o) => sc.nn.cosineSimilarity(sc.ones([2, 3]), sc.ones([2, 3]), o)],
  "nn.topKAccuracy": ["topKAccuracy", (o) => sc.nn.topKAccuracy(sc.zeros([2, 3]), sc.tensor([0, 1], "int32"), o)],
  "nn.precision": ["precision", (o) => sc.nn.precision(sc.zeros([2]), sc.ones([2]), o)],
  "nn.recall": ["recall", (o) => sc.nn.recall(sc.zeros([2]), sc.ones([2]), o)],
  "nn.f1": ["f1", (o) => sc.nn.f1(sc.zeros([2]), sc.ones([2]), o)],
  "nn.fit": ["fit", (o) => fitWith(o)],
  "nn.fit > callbacks": ["fit: callbacks", (o) => fitWith({ callbacks: o })],
  "nn.evaluate": ["evaluate", (o) => sc.nn.evaluate(model(), { data: [[sc.ones([2, 1]), sc.ones([2, 1])]], loss: sc.nn.mse, ...o })],
  "nn.predict": ["predict", (o) => sc.nn.predict(model(), { data: [sc.ones([2, 1])], ...o })],
  "nn.EarlyStopping": ["EarlyStopping", (o) => new sc.nn.EarlyStopping(o)],
  "nn.ModelCheckpoint": ["ModelCheckpoint", (o) => new sc.nn.ModelCheckpoint({ path: "unused.safetensors", ...o })],
  "nn.ReduceLROnPlateau": ["ReduceLROnPlateau", (o) => new sc.nn.ReduceLROnPlateau(o)],
  "nn.Progress": ["Progress", (o) => new sc.nn.Progress({ total: 1, mode: "off", ...o })],
  "optim.SGD": ["SGD", (o) => new sc.optim.SGD(o)],
  "optim.sgd": ["SGD", (o) => sc.optim.sgd(o)],
  "optim.Adam": ["Adam", (o) => new sc.optim.Adam(o)],
  "optim.AdamW": ["AdamW", (o) => new sc.optim.AdamW(o)],
  "optim.adam": ["Adam", (o) => sc.optim.adam(o)],
  "optim.adamw": ["AdamW", (o) => sc.optim.adamw(o)],
  "optim.RMSprop": ["RMSprop", (o) => new sc.optim.RMSprop(o)],
  "optim.rmsprop": ["RMSprop", (o) => sc.optim.rmsprop(o)],
  "optim.Adagrad": ["Adagrad", (o) => new sc.optim.Adagrad(o)],
  "optim.adagrad": ["Adagrad", (o) => sc.optim.adagrad(o)],
  "optim.stepDecay": ["stepDecay", (o) => sc.optim.stepDecay({ initial: 0.1, stepSize: 10, gamma: 0.5, ...o })],
  "optim.exponentialDecay": ["exponentialDecay", (o) => sc.optim.exponentialDecay({ initial: 0.1, decayRate: 0.5, decaySteps: 10, ...o })],
  "optim.cosineDecay": ["cosineDecay", (o) => sc.optim.cosineDecay({ initial: 0.1, decaySteps: 10, ...o })],
  "data.Dataset.prototype.shuffle": ["Dataset.shuffle", (o) => dataset().shuffle(2, o)],
  "data.Dataset.prototype.batch": ["Dataset.batch", (o) => dataset().batch(2, o)],
  "data.mnist": ["mnist", (o) => sc.data.mnist(o)],
  "onnx.load": ["onnx.load", (o) => sc.onnx.load(new Uint8Array(0), o)],
  "onnx.makeNode": ["onnx.makeNode", (o) => sc.onnx.makeNode("Relu", ["x"], ["y"], {}, o)],
  "onnx.makeModel": ["onnx.makeModel", (o) => sc.onnx.makeModel(sc.onnx.makeGraph([], "g", [], []), o)],
  "onnx.createSession": ["onnx.createSession", (o) => sc.onnx.createSession(new Uint8Array(0), o)],
  "onnx.runConformance": ["onnx.runConformance", (o) => sc.onnx.runConformance("/nonexistent", o)],
  "onnx.exportModel": ["onnx.exportModel", (o) => sc.onnx.exportModel(sc.stage((t: sc.Tensor) => t.add(1), { autograph: false }), [sc.spec([1])], o)],
  "onnx.onnxruntimeExecutor": ["onnx.onnxruntimeExecutor", (o) => sc.onnx.onnxruntimeExecutor(o)],
  "onnx.installEngine": ["onnx.installEngine", (o) => sc.onnx.installEngine("ort-walk", o)],
  initWebGPU: ["initWebGPU", (o) => sc.initWebGPU(o)],
  "remote.connect": ["remote.connect", (o) => sc.remote.connect({ cluster: {}, ...o })],
  "remote.startWorker": ["remote.startWorker", (o) => sc.remote.startWorker(o)],
};

/** What `path` names in the module `sc`, walked at run time ("nn.Linear", "data.Dataset.prototype.batch"). */
function resolvePath(path: string): unknown {
  let at: unknown = sc;
  for (const part of path.split(" > ")[0]!.split(".")) at = at === undefined || at === null ? undefined : (at as Record<string, unknown>)[part];
  return at;
}

test("the table covers every options argument of the public API, and names only real ones", () => {
  const sites = optionsSites();
  const found = new Set(sites.map((s) => s.path));
  // a sanity check of the scan itself: it must see the APIs the issue names, nested ones included
  for (const p of ["data.Dataset.prototype.batch", "data.Dataset.prototype.shuffle", "nn.softmaxCrossEntropy", "optim.cosineDecay", "nn.fit > callbacks", "nn.Progress", "optimize > fold"]) assert.ok(found.has(p), `the scan misses ${p}`);
  const missing = [...found].filter((p) => !(p in TABLE));
  assert.deepEqual(missing, [], `APIs taking options without a row in the table: ${missing.join(", ")}`);
  const stale = Object.keys(TABLE).filter((p) => !found.has(p));
  assert.deepEqual(stale, [], `rows for paths that take no options (renamed or removed?): ${stale.join(", ")}`);
  for (const p of found) assert.equal(typeof resolvePath(p), "function", `${p} is not a function or class of sc`);
});

test("every options argument of the public API refuses a misspelt key, naming the API", async () => {
  const bad = { bogusOptoin: 1 };
  const failures: string[] = [];
  for (const [path, [api, call]] of Object.entries(TABLE)) {
    let error: unknown = null;
    try {
      const r = call(bad);
      if (r && typeof (r as Promise<unknown>).then === "function") await r;
    } catch (e) {
      error = e;
    }
    const ok = error instanceof sc.ValueError && error.message.startsWith(`${api}: unknown option "bogusOptoin"`) && error.message.includes("known options: ");
    if (!ok) failures.push(`${path}: ${error === null ? "accepted the misspelt key" : `${(error as Error).constructor.name}: ${(error as Error).message}`}`);
  }
  assert.deepEqual(failures, []);
});

test("every enum option of the public API refuses a value outside its choices, naming the API (fit's progress: \"none\")", async () => {
  const failures: string[] = [];
  let checked = 0;
  for (const site of optionsSites()) {
    const [api, call] = TABLE[site.path]!;
    for (const { key } of site.choices) {
      checked++;
      let error: unknown = null;
      try {
        const r = call({ [key]: "none-such" });
        if (r && typeof (r as Promise<unknown>).then === "function") await r;
      } catch (e) {
        error = e;
      }
      // dtypes are refused as DtypeErrors, other enums as ValueErrors
      const typed = error instanceof sc.ValueError || (key === "dtype" && error instanceof sc.DtypeError);
      const ok = typed && (error as Error).message.startsWith(`${api}: `) && (error as Error).message.includes("none-such");
      if (!ok) failures.push(`${site.path} { ${key}: "none-such" }: ${error === null ? "accepted" : `${(error as Error).constructor.name}: ${(error as Error).message}`}`);
    }
  }
  assert.ok(checked >= 10, `only ${checked} enum options found`);
  assert.deepEqual(failures, []);
});

test("the options issue 24 found ignored are refused, with the key meant", () => {
  const slip = (api: string, f: () => unknown, key: string, meant: string) =>
    assert.throws(f, (e: Error) => e instanceof sc.ValueError && e.message.startsWith(`${api}: unknown option "${key}"`) && e.message.includes(meant), `${api} { ${key} }`);
  slip("Dataset.batch", () => dataset().batch(2, { dropRemaining: true } as any), "dropRemaining", "dropRemainder");
  slip("softmaxCrossEntropy", () => sc.nn.softmaxCrossEntropy(sc.zeros([2, 3]), sc.tensor([0, 1], "int32"), { label_smoothing: 0.1 } as any), "label_smoothing", "labelSmoothing");
  slip("cosineDecay", () => sc.optim.cosineDecay({ initial: 0.1, decaySteps: 10, warmup: 5 } as any), "warmup", "warmupSteps");
  slip("Dataset.shuffle", () => dataset().shuffle(3, { sed: 1 } as any), "sed", "seed");
  slip("fit: callbacks", () => fitWith({ callbacks: { onEpochEnds: () => {} } }), "onEpochEnds", "onEpochEnd");
  slip("fit", () => fitWith({ class_weight: { 0: 1 } }), "class_weight", "classWeight");
  slip("ReduceLROnPlateau", () => new sc.nn.ReduceLROnPlateau({ min_lr: 0.1 } as any), "min_lr", "minLr");
  slip("ModelCheckpoint", () => new sc.nn.ModelCheckpoint({ path: "p", save_best_only: true } as any), "save_best_only", "saveBestOnly");
  // Keras's sample_weight argument is a third tensor of each batch here: the error says so
  for (const key of ["sampleWeight", "sample_weight"]) {
    assert.throws(() => fitWith({ [key]: sc.ones([2]) }), (e: Error) => e instanceof sc.ValueError && e.message.startsWith(`fit: sample weights are a third tensor of each batch`), key);
    assert.throws(() => sc.nn.evaluate(model(), { data: [[sc.ones([2, 1]), sc.ones([2, 1])]], loss: sc.nn.mse, [key]: sc.ones([2]) } as any), (e: Error) => e instanceof sc.ValueError && e.message.startsWith(`evaluate: sample weights are a third tensor of each batch`), key);
  }
  assert.throws(() => fitWith({ progress: "none" }), (e: Error) => e instanceof sc.ValueError && e.message.startsWith(`fit: progress must be one of "auto", "bar", "lines", "off", got the string "none"`));
  assert.throws(() => fitWith({ callbacks: [{ onStepEnd: "log" }] }), (e: Error) => e instanceof sc.ValueError && /^fit: callbacks\.onStepEnd must be a function/.test(e.message));
  // the right spellings still work
  assert.equal(sc.data.Dataset.fromArray([sc.scalar(1), sc.scalar(2), sc.scalar(3)]).batch(2, { dropRemainder: true }).toArray().length, 1);
  let epochs = 0;
  fitWith({ epochs: 2, callbacks: [{ onEpochEnd: () => epochs++ }] });
  assert.equal(epochs, 2);
});
