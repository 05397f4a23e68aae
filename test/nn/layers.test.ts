/**
 * Every layer's gradients (inputs and parameters) against float64 central differences, three
 * ways: the eager tape; a tape inside a staged function (the training-step case); and graph AD
 * (a tape around a call of a staged forward).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as sc from "../../src/api/index.js";
import { assertClose } from "../util/gradcheck.js";
import { Rng } from "../util/rng.js";
import type { Graph } from "../../src/graph/ir.js";

const { nn } = sc;
const F64 = { dtype: "float64" as const };

interface LayerCase {
  name: string;
  make: () => sc.nn.Module;
  /** Inputs (float64 ones are differentiated). */
  inputs: (rng: Rng) => sc.Tensor[];
  call?: (m: sc.nn.Module, ...xs: sc.Tensor[]) => sc.Tensor;
  /** Runs before every evaluation (Dropout: the same mask each time). */
  reset?: (m: sc.nn.Module) => void;
  /** Evaluate in eval mode. */
  eval?: boolean;
}

const cases: LayerCase[] = [
  { name: "Linear", make: () => new nn.Linear(3, { ...F64, seed: 1 }), inputs: (r) => [r.tensor([2, 4], -1, 1, "float64")] },
  { name: "Linear over [batch, time, features]", make: () => new nn.Linear(2, { ...F64, seed: 2 }), inputs: (r) => [r.tensor([2, 3, 3], -1, 1, "float64")] },
  { name: "Conv2d (same padding, strides 2)", make: () => new nn.Conv2d(3, 3, { ...F64, seed: 3, padding: "same", strides: 2 }), inputs: (r) => [r.tensor([2, 2, 5, 5], -1, 1, "float64")] },
  { name: "Conv2d (groups 2, no bias)", make: () => new nn.Conv2d(4, [2, 3], { ...F64, seed: 4, groups: 2, bias: false }), inputs: (r) => [r.tensor([1, 2, 4, 5], -1, 1, "float64")] },
  { name: "MaxPool2d", make: () => new nn.MaxPool2d(2), inputs: (r) => [r.tensor([2, 2, 4, 4], -1, 1, "float64")] },
  { name: "AvgPool2d (same padding)", make: () => new nn.AvgPool2d(3, { strides: 2, padding: "same" }), inputs: (r) => [r.tensor([1, 2, 5, 5], -1, 1, "float64")] },
  { name: "Flatten then Linear", make: () => new nn.Sequential(new nn.Flatten(), new nn.Linear(2, { ...F64, seed: 5 })), inputs: (r) => [r.tensor([2, 2, 2, 2], -1, 1, "float64")] },
  {
    name: "activations in a Sequential (Tanh, Sigmoid, GELU, ReLU, LogSoftmax)",
    make: () => new nn.Sequential(new nn.Linear(4, { ...F64, seed: 14 }), new nn.Tanh(), new nn.Sigmoid(), new nn.GELU(), new nn.Linear(3, { ...F64, seed: 15 }), new nn.ReLU(), new nn.LogSoftmax()),
    inputs: (r) => [r.tensor([2, 3], -1, 1, "float64")],
  },
  { name: "BatchNorm (train mode, NCHW)", make: () => new nn.BatchNorm(F64), inputs: (r) => [r.tensor([3, 2, 2, 2], -1, 1, "float64")] },
  { name: "BatchNorm (eval mode, [N, C])", make: () => new nn.BatchNorm({ ...F64, numFeatures: 3 }), inputs: (r) => [r.tensor([4, 3], -1, 1, "float64")], eval: true },
  { name: "LayerNorm", make: () => new nn.LayerNorm(undefined, F64), inputs: (r) => [r.tensor([2, 3, 4], -1, 1, "float64")] },
  {
    name: "Dropout (one mask)",
    make: () => new nn.Dropout(0.5, { seed: 6 }),
    inputs: (r) => [r.tensor([3, 4], -1, 1, "float64")],
    reset: (m) => (m as sc.nn.Dropout).generator.reset(6),
  },
  { name: "Embedding", make: () => new nn.Embedding(5, 3, { ...F64, seed: 7 }), inputs: () => [sc.tensor([[0, 4], [2, 0]], "int32")] },
  {
    name: "LSTMCell",
    make: () => new nn.LSTMCell(3, { ...F64, seed: 8 }),
    inputs: (r) => [r.tensor([2, 2], -1, 1, "float64"), r.tensor([2, 3], -1, 1, "float64"), r.tensor([2, 3], -1, 1, "float64")],
    call: (m, x, h, c) => sc.concat((m as sc.nn.LSTMCell).call(x, [h, c]), -1),
  },
  { name: "GRUCell", make: () => new nn.GRUCell(3, { ...F64, seed: 9 }), inputs: (r) => [r.tensor([2, 2], -1, 1, "float64"), r.tensor([2, 3], -1, 1, "float64")], call: (m, x, h) => m.call(x, h) },
  { name: "LSTM over a sequence", make: () => new nn.LSTM(3, { ...F64, seed: 10 }), inputs: (r) => [r.tensor([2, 4, 2], -1, 1, "float64")] },
  { name: "GRU over a sequence (last output)", make: () => new nn.GRU(2, { ...F64, seed: 11, returnSequences: false }), inputs: (r) => [r.tensor([2, 3, 2], -1, 1, "float64")] },
  // The layers read their weights at every step of the loop over time; the same math with the
  // weights read once before the loop (as they did while a tape could not see a variable read in
  // a staged loop body) must give the same gradients, every way.
  {
    name: "LSTM over a sequence, weights read once before the loop",
    make: () => new nn.LSTM(3, { ...F64, seed: 10 }),
    inputs: (r) => [r.tensor([2, 4, 2], -1, 1, "float64")],
    call: (m, x) => weightsReadBeforeLoop(m as sc.nn.LSTM, x),
  },
  {
    name: "GRU over a sequence (last output), weights read once before the loop",
    make: () => new nn.GRU(2, { ...F64, seed: 11, returnSequences: false }),
    inputs: (r) => [r.tensor([2, 3, 2], -1, 1, "float64")],
    call: (m, x) => weightsReadBeforeLoop(m as sc.nn.GRU, x),
  },
  {
    name: "MultiHeadAttention (self, masked)",
    make: () => new nn.MultiHeadAttention(4, 2, { ...F64, seed: 12 }),
    inputs: (r) => [r.tensor([2, 3, 4], -1, 1, "float64")],
    call: (m, q) => m.call(q, q, q, sc.tensor([[true, false, false], [true, true, false], [true, true, true]], "bool")),
  },
  {
    name: "MultiHeadAttention (cross)",
    make: () => new nn.MultiHeadAttention(4, 1, { ...F64, seed: 13 }),
    inputs: (r) => [r.tensor([1, 2, 4], -1, 1, "float64"), r.tensor([1, 3, 4], -1, 1, "float64")],
    call: (m, q, kv) => m.call(q, kv, kv),
  },
  { name: "Conv1d (padding [1, 0], strides 2)", make: () => new nn.Conv1d(2, 3, { ...F64, seed: 40, padding: [1, 0], strides: 2 }), inputs: (r) => [r.tensor([2, 2, 6], -1, 1, "float64")] },
  { name: "ConvTranspose2d (strides 2, outputPadding 1)", make: () => new nn.ConvTranspose2d(2, 2, { ...F64, seed: 41, strides: 2, outputPadding: 1 }), inputs: (r) => [r.tensor([1, 2, 2, 3], -1, 1, "float64")] },
  { name: "GroupNorm", make: () => new nn.GroupNorm(2, 4, F64), inputs: (r) => [r.tensor([2, 4, 3], -1, 1, "float64")] },
  { name: "GRU (2 layers, bidirectional, bool mask)", make: () => new nn.GRU(2, { ...F64, seed: 42, numLayers: 2, bidirectional: true }), inputs: (r) => [r.tensor([2, 3, 2], -1, 1, "float64")], call: (m, x) => m.call(x, undefined, sc.tensor([[true, true, true], [true, true, false]], "bool")) },
  { name: "TransformerEncoderLayer (post-norm, key mask)", make: () => new nn.TransformerEncoderLayer(4, 2, { ...F64, dimFeedforward: 6, dropout: 0, seed: 43 }), inputs: (r) => [r.tensor([2, 3, 4], -1, 1, "float64")], call: (m, x) => m.call(x, undefined, sc.tensor([[true, true, false], [true, true, true]], "bool")) },
  { name: "TransformerDecoderLayer (causal, normFirst, gelu)", make: () => new nn.TransformerDecoderLayer(4, 1, { ...F64, dimFeedforward: 6, dropout: 0, seed: 44, causal: true, normFirst: true, activation: "gelu" }), inputs: (r) => [r.tensor([1, 3, 4], -1, 1, "float64"), r.tensor([1, 2, 4], -1, 1, "float64")], call: (m, t, mem) => m.call(t, mem) },
];

/** A converted for...of over time steps (AutoGraph's loop; the layers write theirs with staging's whileLoop: the gradients must agree). */
const scanSteps = sc.autograph(
  function scanSteps(step: (x: sc.Tensor, s: sc.Tensor[]) => sc.Tensor[], seq: sc.Tensor, state: sc.Tensor[]) {
    const outputs: sc.Tensor[] = [];
    for (const x of seq as unknown as sc.Tensor[]) {
      state = step(x, state);
      outputs.push(state[0]!);
    }
    return [outputs, state];
  },
  { scope: {} },
) as (step: (x: sc.Tensor, s: sc.Tensor[]) => sc.Tensor[], seq: sc.Tensor, state: sc.Tensor[]) => [sc.Tensor[] | sc.Tensor, sc.Tensor[]];

/** `layer`'s output with its cell's weights read once, before the loop over time. */
function weightsReadBeforeLoop(layer: sc.nn.LSTM | sc.nn.GRU, x: sc.Tensor): sc.Tensor {
  const cell = layer.cell;
  cell.buildFor(x.shape[2]!);
  const w = cell.weights();
  const zero = cell.zeroState(x.shape[0]!);
  const [outs, last] =
    cell instanceof nn.LSTMCell
      ? scanSteps((xt, s) => cell.step(w, xt, s), sc.transpose(x, [1, 0, 2]), [zero, zero])
      : scanSteps((xt, s) => [(cell as sc.nn.GRUCell).step(w, xt, s[0]!)], sc.transpose(x, [1, 0, 2]), [zero]);
  const seq = Array.isArray(outs) ? sc.stack(outs, 0) : outs;
  return layer.returnSequences ? sc.transpose(seq, [1, 0, 2]) : last[0]!;
}

test("staged, nn.LSTM and nn.GRU read each weight once, before the loop over time (the loop reads no variable)", () => {
  for (const layer of [new nn.LSTM(3, { ...F64, seed: 10 }), new nn.GRU(2, { ...F64, seed: 11 })]) {
    const x = sc.zeros([2, 4, 2], "float64");
    const cf = sc.stage((m: sc.nn.Module, xs: sc.Tensor) => m.call(xs) as sc.Tensor, { autograph: false }).concrete(layer, x);
    const loops = cf.graph.nodes.filter((n) => n.op === "while");
    assert.equal(loops.length, 1, String(cf));
    const readsIn = (g: Graph): number => g.nodes.reduce((k, n) => k + (n.op === "readVariable" ? 1 : 0) + n.regions.reduce((j, r) => j + readsIn(r), 0), 0);
    assert.equal(readsIn(cf.graph), layer.parameters().length, String(cf));
    assert.equal(loops[0]!.regions.reduce((k, r) => k + readsIn(r), 0), 0, String(cf));
  }
});

for (const c of cases) {
  test(`${c.name}: eager tape = tape in a staged step = graph AD = finite differences (float64)`, () => {
    const rng = new Rng(c.name.length * 101 + 7);
    const layer = c.make();
    if (c.eval) layer.eval();
    const inputs = c.inputs(rng);
    const run = c.call ?? ((m: sc.nn.Module, ...xs: sc.Tensor[]) => m.call(...xs) as sc.Tensor);
    c.reset?.(layer);
    const probe = run(layer, ...inputs);
    const weights = rng.tensor(probe.shape as number[], 0.5, 1.5, "float64");
    const lossOf = (m: sc.nn.Module, ...xs: sc.Tensor[]) => sc.sum(sc.mul(sc.cast(run(m, ...xs), "float64"), weights));
    const diffInputs = inputs.filter((x) => x.dtype === "float64");
    const params = layer.parameters();
    assert.ok(params.length > 0 || diffInputs.length > 0);

    /** Gradients w.r.t. the float inputs and the parameters, from a tape. */
    const tapeGrads = (forward: (m: sc.nn.Module, ...xs: sc.Tensor[]) => sc.Tensor, m: sc.nn.Module, ...xs: sc.Tensor[]): sc.Tensor[] => {
      const tape = new sc.GradientTape();
      const watched = xs.filter((x) => x.dtype === "float64");
      const loss = tape.record(() => {
        tape.watch(...watched);
        return forward(m, ...xs);
      });
      return tape.gradient(loss, [...watched, ...params]) as sc.Tensor[];
    };

    c.reset?.(layer);
    const eager = tapeGrads(lossOf, layer, ...inputs);
    c.reset?.(layer);
    const stagedStep = sc.stage((m: sc.nn.Module, ...xs: sc.Tensor[]) => tapeGrads(lossOf, m, ...xs))(layer, ...inputs);
    c.reset?.(layer);
    const stagedForward = sc.stage(lossOf);
    const graphAD = tapeGrads((m, ...xs) => stagedForward(m, ...xs), layer, ...inputs);

    const evalLoss = (): number => {
      c.reset?.(layer);
      return lossOf(layer, ...inputs).item() as number;
    };
    const eps = 1e-6;
    const numeric: number[][] = [];
    for (const x of diffInputs) {
      const data = x.dataSync() as Float64Array;
      numeric.push(Array.from(data, (_, i) => {
        const keep = data[i]!;
        data[i] = keep + eps;
        const up = evalLoss();
        data[i] = keep - eps;
        const down = evalLoss();
        data[i] = keep;
        return (up - down) / (2 * eps);
      }));
    }
    for (const v of params) {
      const base = Float64Array.from(v.dataSync());
      numeric.push(Array.from(base, (_, i) => {
        const at = (d: number) => {
          const p = base.slice();
          p[i]! += d;
          v.assign(sc.tensor(p, "float64", v.shape as number[]));
          return evalLoss();
        };
        const g = (at(eps) - at(-eps)) / (2 * eps);
        v.assign(sc.tensor(base, "float64", v.shape as number[]));
        return g;
      }));
    }
    const names = [...diffInputs.map((_, i) => `input ${i}`), ...layer.namedParameters().map(([p]) => p)];
    numeric.forEach((n, k) => {
      assertClose(eager[k]!.dataSync(), n, 1e-6, `${c.name}: eager d/d ${names[k]}`);
      assertClose(stagedStep[k]!.dataSync(), eager[k]!.dataSync(), 1e-10, `${c.name}: tape in staged step d/d ${names[k]}`);
      assertClose(graphAD[k]!.dataSync(), eager[k]!.dataSync(), 1e-10, `${c.name}: graph AD d/d ${names[k]}`);
    });
  });
}

test("Conv1d and ConvTranspose2d on tiny inputs match values computed by hand", () => {
  const c1 = new nn.Conv1d(1, 2, { kernelInit: () => sc.tensor([[[1, -2]]], "float32"), biasInit: () => sc.tensor([0.5], "float32") });
  // y[i] = x[i] - 2 x[i+1] + 0.5
  assert.deepEqual(Array.from((c1.call(sc.tensor([[[1, 2, 4, 8]]], "float32")) as sc.Tensor).dataSync()), [1 - 4 + 0.5, 2 - 8 + 0.5, 4 - 16 + 0.5]);
  const ct = new nn.ConvTranspose2d(1, 2, { strides: 2, bias: false, kernelInit: () => sc.tensor([[[[1, 2], [3, 4]]]], "float32") });
  // stride 2, 2x2 kernel: each input pixel v writes v * kernel into its own 2x2 block
  const y = ct.call(sc.tensor([[[[1, 10]]]], "float32")) as sc.Tensor;
  assert.deepEqual(y.shape, [1, 1, 2, 4]);
  assert.deepEqual(Array.from(y.dataSync()), [1, 2, 10, 20, 3, 4, 30, 40]);
});

test("a masked RNN keeps its state over padded steps and outputs zeros there (= the unpadded sequence)", () => {
  const rng = new Rng(50);
  const lstm = new nn.LSTM(3, { seed: 51, bidirectional: true });
  const x = rng.tensor([1, 4, 2], -1, 1, "float32");
  const short = sc.slice(x, [0, 0, 0], [1, 2, 2]);
  const masked = lstm.call(x, undefined, sc.tensor([2], "int32")) as sc.Tensor;
  const plain = lstm.call(short) as sc.Tensor;
  assertClose(sc.slice(masked, [0, 0, 0], [1, 2, 6]).dataSync(), plain.dataSync(), 1e-6, "real steps");
  assert.deepEqual(Array.from(sc.slice(masked, [0, 2, 0], [1, 4, 6]).dataSync()).map(Math.abs), Array(12).fill(0));
});
