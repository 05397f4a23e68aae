/**
 * Every layer's shapes while staging, three ways:
 * - known inputs: the shapes seen while tracing are the eager shapes, and no value of the traced
 *   graph (loop bodies included) has an unknown dim (so shape arithmetic on a staged tensor is
 *   right, and fit() can stage LSTM -> Flatten -> Linear);
 * - unknown batch (and time, for sequences) in the inputSignature: one staged function runs on
 *   two different sizes and gives the eager results;
 * - the same function exported to ONNX with those dims symbolic, run in onnxruntime-node on the
 *   two sizes, against eager.
 * Every layer class `sc.nn` exports needs a case (the last test).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as sc from "../../src/api/index.js";
import type { Graph } from "../../src/graph/ir.js";
import { Rng } from "../util/rng.js";

const { nn } = sc;

interface ShapeCase {
  name: string;
  /** The sc.nn classes this case covers. */
  layers: string[];
  make: () => sc.nn.Module;
  /** Inputs for a batch of `batch` (and sequences of `time` steps where the layer takes them). */
  inputs: (rng: Rng, batch: number, time: number) => sc.Tensor[];
  /** Per input, the axes left unknown (null) in the inputSignature: batch, and time for sequences. */
  dynamic: number[][];
  /** The size the case keeps known (the same at both sizes the unknown-dims runs take). */
  fixed?: "batch" | "time";
  call?: (m: sc.nn.Module, ...xs: sc.Tensor[]) => sc.Tensor;
  eval?: boolean;
  /** Runs before every evaluation (Dropout: the same mask each time). */
  reset?: (m: sc.nn.Module) => void;
  /** Why the case is not exported to ONNX (the refusal is by design, docs/onnx.md). */
  noExport?: string;
}

const f = (r: Rng, shape: number[]) => r.tensor(shape, -1, 1, "float32");
const ids = (r: Rng, shape: number[], n: number) => sc.tensor(Array.from({ length: shape.reduce((a, b) => a * b, 1) }, () => r.int(0, n - 1)), "int32", shape);
const causal = (t: number) => sc.tensor(Array.from({ length: t * t }, (_, i) => i % t <= Math.floor(i / t)), "bool", [t, t]);

const cases: ShapeCase[] = [
  { name: "Linear", layers: ["Linear"], make: () => new nn.Linear(3, { seed: 1 }), inputs: (r, b) => [f(r, [b, 4])], dynamic: [[0]] },
  { name: "Linear over [batch, time, features]", layers: ["Linear"], make: () => new nn.Linear(3, { seed: 1 }), inputs: (r, b, t) => [f(r, [b, t, 4])], dynamic: [[0, 1]] },
  { name: "Flatten", layers: ["Flatten"], make: () => new nn.Flatten(), inputs: (r, b) => [f(r, [b, 3, 4])], dynamic: [[0]] },
  {
    name: "activations",
    layers: ["Activation", "ReLU", "Tanh", "Sigmoid", "GELU", "Softmax", "LogSoftmax", "Sequential"],
    make: () => new nn.Sequential(new nn.Activation(sc.exp, "exp"), new nn.ReLU(), new nn.Tanh(), new nn.Sigmoid(), new nn.GELU(), new nn.Softmax(), new nn.LogSoftmax(1)),
    inputs: (r, b, t) => [f(r, [b, t, 3])],
    dynamic: [[0, 1]],
  },
  { name: "Conv2d", layers: ["Conv2d"], make: () => new nn.Conv2d(3, 3, { seed: 2, padding: "same", strides: 2 }), inputs: (r, b) => [f(r, [b, 2, 5, 5])], dynamic: [[0]] },
  { name: "MaxPool2d", layers: ["MaxPool2d"], make: () => new nn.MaxPool2d(2), inputs: (r, b) => [f(r, [b, 2, 4, 4])], dynamic: [[0]] },
  { name: "AvgPool2d", layers: ["AvgPool2d"], make: () => new nn.AvgPool2d(3, { strides: 2, padding: "same" }), inputs: (r, b) => [f(r, [b, 2, 5, 5])], dynamic: [[0]] },
  { name: "BatchNorm (train mode)", layers: ["BatchNorm"], make: () => new nn.BatchNorm(), inputs: (r, b) => [f(r, [b + 1, 2, 2, 2])], dynamic: [[0]] },
  { name: "BatchNorm (eval mode)", layers: ["BatchNorm"], make: () => new nn.BatchNorm({ numFeatures: 3 }), inputs: (r, b) => [f(r, [b, 3])], dynamic: [[0]], eval: true },
  { name: "LayerNorm", layers: ["LayerNorm"], make: () => new nn.LayerNorm(), inputs: (r, b, t) => [f(r, [b, t, 4])], dynamic: [[0, 1]] },
  {
    name: "Dropout (train mode)",
    layers: ["Dropout"],
    make: () => new nn.Dropout(0.5, { seed: 6 }),
    inputs: (r, b) => [f(r, [b, 4])],
    dynamic: [[0]],
    reset: (m) => (m as sc.nn.Dropout).generator.reset(6),
  },
  { name: "Dropout (eval mode)", layers: ["Dropout"], make: () => new nn.Dropout(0.5, { seed: 6 }), inputs: (r, b) => [f(r, [b, 4])], dynamic: [[0]], eval: true },
  { name: "Embedding", layers: ["Embedding"], make: () => new nn.Embedding(5, 3, { seed: 7 }), inputs: (r, b, t) => [ids(r, [b, t], 5)], dynamic: [[0, 1]] },
  {
    name: "LSTMCell",
    layers: ["LSTMCell"],
    make: () => new nn.LSTMCell(3, { seed: 8 }),
    inputs: (r, b) => [f(r, [b, 2]), f(r, [b, 3]), f(r, [b, 3])],
    dynamic: [[0], [0], [0]],
    call: (m, x, h, c) => sc.concat((m as sc.nn.LSTMCell).call(x, [h, c]), -1),
  },
  { name: "GRUCell", layers: ["GRUCell"], make: () => new nn.GRUCell(3, { seed: 9 }), inputs: (r, b) => [f(r, [b, 2]), f(r, [b, 3])], dynamic: [[0], [0]], call: (m, x, h) => m.call(x, h) },
  { name: "LSTM", layers: ["LSTM"], make: () => new nn.LSTM(3, { seed: 10 }), inputs: (r, b, t) => [f(r, [b, t, 2])], dynamic: [[0, 1]] },
  { name: "LSTM (final state)", layers: ["LSTM"], make: () => new nn.LSTM(3, { seed: 10 }), inputs: (r, b, t) => [f(r, [b, t, 2])], dynamic: [[0, 1]], call: (m, x) => sc.concat((m as sc.nn.LSTM).run(x).state, -1) },
  { name: "GRU (last output)", layers: ["GRU"], make: () => new nn.GRU(2, { seed: 11, returnSequences: false }), inputs: (r, b, t) => [f(r, [b, t, 2])], dynamic: [[0, 1]] },
  { name: "GRU", layers: ["GRU"], make: () => new nn.GRU(2, { seed: 11 }), inputs: (r, b, t) => [f(r, [b, t, 2])], dynamic: [[0, 1]] },
  { name: "GRU (unknown batch only)", layers: ["GRU"], make: () => new nn.GRU(2, { seed: 11 }), inputs: (r, b, t) => [f(r, [b, t, 2])], dynamic: [[0]], fixed: "time" },
  {
    name: "MultiHeadAttention (self, causal mask)",
    layers: ["MultiHeadAttention"],
    make: () => new nn.MultiHeadAttention(4, 2, { seed: 12 }),
    inputs: (r, b, t) => [f(r, [b, t, 4]), causal(t)],
    dynamic: [[0, 1], [0, 1]],
    call: (m, q, mask) => m.call(q, q, q, mask),
  },
  { name: "MultiHeadAttention (unknown batch only)", layers: ["MultiHeadAttention"], make: () => new nn.MultiHeadAttention(4, 2, { seed: 12 }), inputs: (r, b, t) => [f(r, [b, t, 4])], dynamic: [[0]], fixed: "time" },
  { name: "MultiHeadAttention (unknown time only)", layers: ["MultiHeadAttention"], make: () => new nn.MultiHeadAttention(4, 2, { seed: 12 }), inputs: (r, b, t) => [f(r, [b, t, 4])], dynamic: [[1]], fixed: "batch" },
  {
    name: "MultiHeadAttention (cross)",
    layers: ["MultiHeadAttention"],
    make: () => new nn.MultiHeadAttention(4, 1, { seed: 13 }),
    inputs: (r, b, t) => [f(r, [b, t, 4]), f(r, [b, t + 1, 4])],
    dynamic: [[0, 1], [0, 1]],
    call: (m, q, kv) => m.call(q, kv, kv),
  },
  { name: "Conv1d", layers: ["Conv1d"], make: () => new nn.Conv1d(3, 3, { seed: 30, padding: "same" }), inputs: (r, b, t) => [f(r, [b, 2, t])], dynamic: [[0]], fixed: "time" },
  { name: "ConvTranspose2d", layers: ["ConvTranspose2d"], make: () => new nn.ConvTranspose2d(3, 3, { seed: 31, strides: 2 }), inputs: (r, b) => [f(r, [b, 2, 3, 3])], dynamic: [[0]] },
  { name: "GroupNorm", layers: ["GroupNorm"], make: () => new nn.GroupNorm(2, 4), inputs: (r, b, t) => [f(r, [b, 4, t, 3])], dynamic: [[0, 2]] },
  { name: "LSTM (2 layers, bidirectional, lengths mask)", layers: ["LSTM"], make: () => new nn.LSTM(3, { seed: 32, numLayers: 2, bidirectional: true }), inputs: (r, b, t) => [f(r, [b, t, 2]), sc.tensor(Array.from({ length: b }, (_, i) => t - (i % 2)), "int32")], dynamic: [[0, 1], [0]], call: (m, x, len) => m.call(x, undefined, len) },
  { name: "TransformerEncoderLayer (key mask)", layers: ["TransformerEncoderLayer"], make: () => new nn.TransformerEncoderLayer(4, 2, { dimFeedforward: 8, dropout: 0, seed: 33 }), inputs: (r, b, t) => [f(r, [b, t, 4])], dynamic: [[0, 1]] },
  { name: "TransformerDecoderLayer (causal, normFirst)", layers: ["TransformerDecoderLayer"], make: () => new nn.TransformerDecoderLayer(4, 2, { dimFeedforward: 8, dropout: 0, seed: 34, causal: true, normFirst: true }), inputs: (r, b, t) => [f(r, [b, t, 4]), f(r, [b, t + 1, 4])], dynamic: [[0, 1], [0, 1]], call: (m, tgt, mem) => m.call(tgt, mem) },
  {
    name: "LSTM -> Flatten -> Linear",
    layers: ["Sequential", "LSTM", "Flatten", "Linear"],
    make: () => new nn.Sequential(new nn.LSTM(3, { seed: 14 }), new nn.Flatten(), new nn.Linear(2, { seed: 15 })),
    inputs: (r, b, t) => [f(r, [b, t, 2])],
    dynamic: [[0]],
    fixed: "time",
  },
];

const runOf = (c: ShapeCase) => c.call ?? ((m: sc.nn.Module, ...xs: sc.Tensor[]) => m.call(...xs) as sc.Tensor);
const TIME = 4;
/** The two (batch, time) sizes an unknown-dims run takes. */
const sizesOf = (c: ShapeCase): [number, number][] => [
  [c.fixed === "batch" ? 3 : 1, TIME],
  [3, c.fixed === "time" ? TIME : TIME + 2],
];

function setUp(c: ShapeCase): sc.nn.Module {
  const m = c.make();
  if (c.eval) m.eval();
  return m;
}

/** Values of `g` (regions included) with an unknown dim, as "op[shape]". */
function unknownValues(g: Graph): string[] {
  return g.nodes.flatMap((n) => [...n.outputs.filter((v) => v.type.shape.some((d) => d < 0)).map((v) => `${n.op}[${v.type.shape.join(", ")}]`), ...n.regions.flatMap(unknownValues)]);
}

function assertClose(got: sc.Tensor, want: sc.Tensor, tol: number, what: string): void {
  assert.deepEqual(got.shape, want.shape, `${what}: shape`);
  const a = got.dataSync();
  const b = want.dataSync();
  for (let i = 0; i < b.length; i++) if (!(Math.abs(a[i]! - b[i]!) <= tol * (1 + Math.abs(b[i]!)))) assert.fail(`${what}: element ${i} is ${a[i]} but ${b[i]} eager`);
}

/** The inputSignature of `c`'s inputs `xs` with its dynamic axes unknown. */
const signatureOf = (c: ShapeCase, xs: sc.Tensor[]) => xs.map((x, i) => sc.spec(x.shape.map((d, a) => (c.dynamic[i]!.includes(a) ? null : d)), x.dtype, `x${i}`));

for (const c of cases) {
  test(`${c.name}: known inputs keep every traced shape known, and the traced output shape is the eager one`, () => {
    const m = setUp(c);
    const run = runOf(c);
    const xs = c.inputs(new Rng(3), 2, TIME);
    c.reset?.(m);
    const eager = run(m, ...xs);
    let traced: number[] = [];
    const cf = sc
      .stage((layer: sc.nn.Module, ...a: sc.Tensor[]) => {
        const y = run(layer, ...a);
        traced = [...y.shape];
        return y;
      })
      .concrete(m, ...xs);
    assert.deepEqual(traced, eager.shape, `${c.name}: traced output shape`);
    assert.deepEqual(unknownValues(cf.graph), [], `${c.name}: values of unknown shape in the traced graph`);
  });

  test(`${c.name}: staged with unknown batch/time, one function runs two sizes as eager does`, () => {
    const m = setUp(c);
    const run = runOf(c);
    const rng = new Rng(4);
    const sizes = sizesOf(c);
    const shapes = sizes.map(([b, t]) => c.inputs(rng, b, t));
    let traced: number[] = [];
    const staged = sc.stage(
      (...a: sc.Tensor[]) => {
        const y = run(m, ...a);
        traced = [...y.shape];
        return y;
      },
      { inputSignature: signatureOf(c, shapes[0]!) },
    );
    for (const xs of shapes) {
      c.reset?.(m);
      const want = run(m, ...xs);
      c.reset?.(m);
      const got = staged(...xs);
      assertClose(got, want, 1e-6, `${c.name} at input shapes ${xs.map((x) => `[${x.shape}]`).join(" ")}`);
      // The dims the unknown input dims do not decide stay known (the last axis is a feature axis in every case).
      assert.ok(traced.at(-1)! >= 0 && traced.every((d, i) => d < 0 || d === want.shape[i]), `${c.name}: traced shape [${traced}] vs [${want.shape}]`);
    }
    assert.equal(staged.traceCount, 1, `${c.name}: one trace for both sizes`);
  });

  if (c.noExport === undefined) {
    test(`${c.name}: exported to ONNX with unknown batch/time, onnxruntime gives the eager results at two sizes`, async () => {
      const m = setUp(c);
      const run = runOf(c);
      const rng = new Rng(5);
      const sizes = sizesOf(c);
      const shapes = sizes.map(([b, t]) => c.inputs(rng, b, t));
      const staged = sc.stage((...a: sc.Tensor[]) => run(m, ...a));
      const bytes = sc.onnx.exportFunction(staged, ...signatureOf(c, shapes[0]!));
      for (const xs of shapes) {
        const got = await sc.onnx.runOnnxRuntime(bytes, Object.fromEntries(xs.map((x, i) => [`x${i}`, x])));
        c.reset?.(m);
        assertClose(got.output_0!, run(m, ...xs), 1e-4, `${c.name} in onnxruntime at input shapes ${xs.map((x) => `[${x.shape}]`).join(" ")}`);
      }
    });
  }
}

test("every layer class of sc.nn has a case", () => {
  const covered = new Set(cases.flatMap((c) => c.layers));
  const layers = Object.entries(nn)
    .filter(([, v]) => typeof v === "function" && (v as { prototype?: unknown }).prototype instanceof nn.Module)
    .map(([k]) => k);
  assert.ok(layers.includes("LSTM") && layers.includes("Sequential"), `found the layer classes: ${layers.join(", ")}`);
  const missing = layers.filter((k) => !covered.has(k));
  assert.deepEqual(missing, [], `sc.nn layers without a case in test/nn/shapes.test.ts: ${missing.join(", ")}`);
  for (const k of covered) assert.ok(layers.includes(k), `a case names ${k}, which is no layer class of sc.nn`);
});

test("staged greedy decoding: the last step of an LSTM's output is read by its static time length, as eagerly", () => {
  const lstm = new nn.LSTM(3, { seed: 16 });
  const head = new nn.Linear(4, { seed: 17 });
  const embed = new nn.Embedding(4, 2, { seed: 18 });
  // Feeds back the argmax of the last step's logits, twice; the length grows by one each step.
  const generate = (prompt: sc.Tensor) => {
    let tokens = prompt;
    for (let k = 0; k < 2; k++) {
      const h = lstm.call(embed.call(tokens)) as sc.Tensor;
      const t = h.shape[1]!;
      const last = sc.reshape(sc.slice(h, [0, t - 1, 0], [h.shape[0]!, t, 3]), [h.shape[0]!, 3]);
      const next = sc.cast(sc.argMax(head.call(last) as sc.Tensor, -1), "int32");
      tokens = sc.concat([tokens, sc.reshape(next, [h.shape[0]!, 1])], 1);
    }
    return tokens;
  };
  const prompt = sc.tensor([[0, 1, 2, 3, 1], [3, 2, 1, 0, 2]], "int32");
  const eager = generate(prompt);
  const staged = sc.stage(generate)(prompt);
  assert.deepEqual(staged.shape, [2, 7]);
  assert.deepEqual(Array.from(staged.dataSync()), Array.from(eager.dataSync()));
});

test("fit() stages LSTM -> Flatten -> Linear and trains it (the loss falls)", () => {
  const rng = new Rng(19);
  const x = rng.tensor([16, 5, 2], -1, 1, "float32");
  const y = sc.sum(x, [1]);
  const model = new nn.Sequential(new nn.LSTM(4, { seed: 20 }), new nn.Flatten(), new nn.Linear(2, { seed: 21 }));
  const history = nn.fit(model, {
    data: sc.data.Dataset.fromTensorSlices([x, y]).batch(8),
    loss: nn.mse,
    optimizer: new sc.optim.Adam({ learningRate: 0.05 }),
    epochs: 4,
    progress: "off",
  });
  const losses = history.epochs.map((e) => e.loss!);
  assert.equal(losses.length, 4);
  assert.ok(losses.every(Number.isFinite) && losses[3]! < losses[0]!, `losses ${losses.join(", ")}`);
});

test("a layer whose feature size is unknown says which option gives it", () => {
  const staged = (m: sc.nn.Module) => sc.stage((x: sc.Tensor) => m.call(x) as sc.Tensor, { inputSignature: [sc.spec([2, null])] });
  assert.throws(() => staged(new nn.Linear(3))(sc.zeros([2, 4])), (e: unknown) => e instanceof sc.ShapeError && /features size of the input is unknown.*with the inFeatures option when creating the layer, or in the inputSignature/.test(e.message));
  const lstm = sc.stage((x: sc.Tensor) => new nn.LSTM(3).call(x) as sc.Tensor, { inputSignature: [sc.spec([null, null, null])] });
  assert.throws(() => lstm(sc.zeros([2, 3, 4])), (e: unknown) => e instanceof sc.ShapeError && /with the inputSize option/.test(e.message));
  // with the feature size known, unknown batch and time are no obstacle
  const known = sc.stage((x: sc.Tensor) => new nn.LSTM(3, { inputSize: 4, seed: 1 }).call(x) as sc.Tensor, { inputSignature: [sc.spec([null, null, 4])] });
  assert.deepEqual(known(sc.zeros([2, 3, 4])).shape, [2, 3, 3]);
});
