/**
 * summary()'s rows add up to its total for every layer type sc.nn exports, those that keep
 * their weights in a submodule they do not call (LSTM, GRU: their cell) included, and for
 * models that own weights themselves, share a layer, or hold a layer they never call.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as sc from "../../src/api/index.js";

const { nn } = sc;

/** The rows of a summary: [label, params]; and the total it states. */
function parse(summary: string): { rows: [string, number][]; total: number } {
  const lines = summary.split("\n");
  const rules = lines.flatMap((l, i) => (/^-+$/.test(l) ? [i] : []));
  const rows = lines.slice(rules[1]! + 1, rules[2]).map((l): [string, number] => [l.split("   ")[0]!.trim(), Number(l.trim().split(/\s+/).pop()!.replace(/,/g, ""))]);
  const total = Number(/Total params: ([\d,]+)/.exec(summary)![1]!.replace(/,/g, ""));
  return { rows, total };
}

/** Per layer class of sc.nn: an instance and an input (the model is a Sequential of the layer alone). */
const x3 = () => sc.random.normal([2, 5, 4], { seed: 1 });
const LAYERS: Record<string, () => [sc.nn.Module, ...unknown[]]> = {
  Linear: () => [new nn.Linear(3, { seed: 0 }), sc.ones([2, 4])],
  Flatten: () => [new nn.Flatten(), sc.ones([2, 2, 2])],
  Activation: () => [new nn.Activation((t: sc.Tensor) => t.relu()), sc.ones([2, 4])],
  ReLU: () => [new nn.ReLU(), sc.ones([2, 4])],
  Tanh: () => [new nn.Tanh(), sc.ones([2, 4])],
  Sigmoid: () => [new nn.Sigmoid(), sc.ones([2, 4])],
  GELU: () => [new nn.GELU(), sc.ones([2, 4])],
  Softmax: () => [new nn.Softmax(), sc.ones([2, 4])],
  LogSoftmax: () => [new nn.LogSoftmax(), sc.ones([2, 4])],
  Conv2d: () => [new nn.Conv2d(2, 3, { seed: 0 }), sc.ones([1, 1, 5, 5])],
  Conv1d: () => [new nn.Conv1d(2, 3, { seed: 0 }), sc.ones([1, 1, 5])],
  ConvTranspose2d: () => [new nn.ConvTranspose2d(2, 3, { seed: 0 }), sc.ones([1, 1, 3, 3])],
  GroupNorm: () => [new nn.GroupNorm(2, 4), sc.ones([1, 4, 3])],
  TransformerEncoderLayer: () => [new nn.TransformerEncoderLayer(4, 2, { dimFeedforward: 8, seed: 0 }), sc.ones([2, 3, 4])],
  TransformerDecoderLayer: () => [new nn.TransformerDecoderLayer(4, 2, { dimFeedforward: 8, seed: 0 }), sc.ones([2, 3, 4]), sc.ones([2, 2, 4])],
  MaxPool2d: () => [new nn.MaxPool2d(2), sc.ones([1, 1, 4, 4])],
  AvgPool2d: () => [new nn.AvgPool2d(2), sc.ones([1, 1, 4, 4])],
  BatchNorm: () => [new nn.BatchNorm(), sc.ones([2, 4])],
  LayerNorm: () => [new nn.LayerNorm(4), sc.ones([2, 4])],
  Dropout: () => [new nn.Dropout(0.5, { seed: 0 }), sc.ones([2, 4])],
  Embedding: () => [new nn.Embedding(6, 3, { seed: 0 }), sc.tensor([[0, 5]], "int32")],
  LSTMCell: () => [new nn.LSTMCell(3, { seed: 0 }), sc.ones([2, 4]), [sc.zeros([2, 3]), sc.zeros([2, 3])]],
  GRUCell: () => [new nn.GRUCell(3, { seed: 0 }), sc.ones([2, 4]), sc.zeros([2, 3])],
  LSTM: () => [new nn.LSTM(3, { seed: 0 }), x3()],
  GRU: () => [new nn.GRU(3, { seed: 0 }), x3()],
  MultiHeadAttention: () => [new nn.MultiHeadAttention(4, 2, { seed: 0 }), x3()],
  Sequential: () => [new nn.Sequential(new nn.Linear(3, { seed: 0 }), new nn.LSTM(2, { seed: 1 })), sc.ones([2, 5, 4])],
};

/** A model holding one layer, which it calls with the given inputs. */
class Holder extends nn.Module {
  constructor(readonly layer: sc.nn.Module, private readonly rest: unknown[]) {
    super();
  }
  forward(x: unknown): unknown {
    return this.layer.call(x, ...this.rest);
  }
}

test("the table holds every Module class sc.nn exports", () => {
  const classes = Object.entries(nn).filter(([, v]) => typeof v === "function" && v.prototype instanceof nn.Module).map(([k]) => k);
  assert.deepEqual(classes.filter((k) => !(k in LAYERS)), []);
  assert.ok(classes.length >= 20, `found ${classes.length} layer classes`);
});

test("for every layer type, the summary's rows add up to the total, and the layer's row holds its parameters", () => {
  for (const [name, make] of Object.entries(LAYERS)) {
    const [layer, x, ...rest] = make();
    const model = new Holder(layer, rest);
    const { rows, total } = parse(model.summary(x));
    assert.equal(total, model.parameterCount({ all: true }), name);
    assert.equal(rows.reduce((a, [, n]) => a + n, 0), total, `${name}: rows ${JSON.stringify(rows)} vs total ${total}`);
    const own = rows.find(([label]) => label === `layer (${name})`);
    assert.ok(own, `${name}: no row for the layer in ${JSON.stringify(rows)}`);
    // the layer's row holds all of its weights but those of sublayers with rows of their own
    const sub = rows.filter(([label]) => label.startsWith("layer.")).reduce((a, [, n]) => a + n, 0);
    assert.equal(own[1] + sub, layer.parameterCount({ all: true }), `${name}: ${JSON.stringify(rows)}`);
  }
});

test("an LSTM's row counts its cell's weights: 4 h (in + h) + 4 h; a GRU's 3 h (in + h) + 2 * 3 h", () => {
  const lstm = parse(new nn.Sequential(new nn.LSTM(3, { seed: 0 })).summary(x3()));
  assert.deepEqual(lstm.rows, [["layers.0 (LSTM)", 4 * 3 * (4 + 3) + 4 * 3]]);
  const gru = parse(new nn.Sequential(new nn.GRU(3, { seed: 0 })).summary(x3()));
  assert.deepEqual(gru.rows, [["layers.0 (GRU)", 3 * 3 * (4 + 3) + 2 * 3 * 3]]);
});

test("own weights, a shared layer and an uncalled layer still add up", () => {
  class Custom extends nn.Module {
    scale = sc.variable(sc.ones([4]), { name: "scale" });
    shared = new nn.Linear(4, { seed: 0, inFeatures: 4 });
    unused = new nn.Linear(2, { seed: 1, inFeatures: 4 });
    alias = this.shared;
    forward(x: sc.Tensor): sc.Tensor {
      return this.shared.call(this.shared.call(x.mul(this.scale)));
    }
  }
  const { rows, total } = parse(new Custom().summary(sc.ones([1, 4])));
  assert.equal(total, 4 + 20 + 10);
  assert.deepEqual(rows, [["(own) (Custom)", 4 + 10], ["shared (Linear)", 20]]);
});
