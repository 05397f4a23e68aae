// Gradients nobody asked for are not computed (VjpContext.needs): a convolution whose input is
// data gets no input gradient, a product with a data operand no gradient for it, in eager code
// and in the graph that tracing records (so no executor runs them, the ONNX engine included);
// the gradients that are asked for are unchanged, bit for bit, and still match float64 finite
// differences; asking for the data's gradient too still gives it.
import { test } from "node:test";
import assert from "node:assert/strict";
import * as sc from "../../src/api/index.js";
import { Rng } from "../util/rng.js";
import { checkGradients, numericGrad, assertClose } from "../util/gradcheck.js";

const rng = new Rng(41);
const x = rng.tensor([2, 3, 6, 6], -1, 1, "float32"); // data
const w1 = rng.tensor([4, 3, 3, 3], -0.5, 0.5, "float32");
const w2 = rng.tensor([5, 4, 3, 3], -0.5, 0.5, "float32");
const wt = rng.tensor([5, 4, 2, 2], -0.5, 0.5, "float32"); // a conv2dTranspose filter [inC, outC, kH, kW]
const fc = rng.tensor([4, 3], -0.5, 0.5, "float32");

/** conv -> relu -> conv (stride 2) -> conv2dTranspose -> mean over space -> product with fc. */
function loss(x: sc.Tensor, w1: sc.Tensor, w2: sc.Tensor, wt: sc.Tensor, fc: sc.Tensor): sc.Tensor {
  const h = sc.relu(sc.conv2d(x, w1, { padding: "same" }));
  const k = sc.tanh(sc.conv2d(h, w2, { strides: 2, padding: 1 }));
  const u = sc.conv2dTranspose(k, wt, { strides: 2 });
  return sc.sum(sc.tanh(sc.matmul(sc.mean(u, [2, 3]), fc)));
}
const weights = [w1, w2, wt, fc];
const withData = (...ws: sc.Tensor[]) => loss(x, ws[0]!, ws[1]!, ws[2]!, ws[3]!);
const gradWeights = sc.grad(withData, { argnums: [0, 1, 2, 3] });
const gradAll = sc.grad(loss, { argnums: [0, 1, 2, 3, 4] });

const opCounts = (g: sc.Graph): Map<string, number> => {
  const m = new Map<string, number>();
  for (const n of g.nodes) m.set(n.op, (m.get(n.op) ?? 0) + 1);
  return m;
};
const graphOf = (f: (...a: sc.Tensor[]) => unknown, args: sc.Tensor[]) => sc.stage(f, { autograph: false }).concrete(...args).graph;
const bits = (t: sc.Tensor) => Array.from(new Uint32Array(Float32Array.from(t.dataSync()).buffer));

test("the traced gradient of the weights computes no input gradient for the data (first convolution)", () => {
  const only = opCounts(graphOf((...ws: sc.Tensor[]) => gradWeights(...ws), weights));
  const all = opCounts(graphOf((...a: sc.Tensor[]) => gradAll(a[0]!, a[1]!, a[2]!, a[3]!, a[4]!), [x, ...weights]));
  // one conv2dTranspose forward; the input gradients of the two convolutions (conv2dTranspose)
  // and of the conv2dTranspose (a conv2d): the data's is the one dropped
  assert.equal(all.get("conv2dTranspose"), 3, "with the data's gradient");
  assert.equal(only.get("conv2dTranspose"), 2, "without it: the first convolution's input gradient is gone");
  assert.equal(only.get("conv2dBackpropFilter"), 3, "every filter gradient stays");
  assert.equal(only.get("conv2d"), all.get("conv2d"), "the conv2dTranspose's input gradient (a conv2d) stays");
});

test("a product whose operand is data computes no gradient for it", () => {
  const a = rng.tensor([8, 6], -1, 1, "float32"), b = rng.tensor([6, 5], -1, 1, "float32");
  const f = (b: sc.Tensor) => sc.sum(sc.tanh(sc.matmul(a, b, { transposeA: false })));
  const g = opCounts(graphOf((b: sc.Tensor) => sc.grad(f)(b) as sc.Tensor, [b]));
  assert.equal(g.get("matmul"), 2, "the forward product and the weight's gradient only");
  const both = opCounts(graphOf((a: sc.Tensor, b: sc.Tensor) => sc.grad((p: sc.Tensor, q: sc.Tensor) => sc.sum(sc.tanh(sc.matmul(p, q))), { argnums: [0, 1] })(a, b) as sc.Tensor[], [a, b]));
  assert.equal(both.get("matmul"), 3, "asked for both: both gradients");
});

test("the weights' gradients are unchanged bit for bit, eager and staged, whether or not the data's is asked for", () => {
  const only = gradWeights(...weights) as sc.Tensor[];
  const all = (gradAll(x, w1, w2, wt, fc) as sc.Tensor[]).slice(1);
  const staged = sc.stage((...ws: sc.Tensor[]) => gradWeights(...ws), { autograph: false });
  for (const call of ["first", "compiled"]) {
    const s = staged(...weights) as sc.Tensor[];
    s.forEach((g, i) => assert.deepEqual(bits(g), bits(only[i]!), `staged weight ${i} (${call} call)`));
  }
  only.forEach((g, i) => assert.deepEqual(bits(g), bits(all[i]!), `weight ${i}`));
});

test("float64: the weights' gradients and, when asked for, the data's match finite differences", () => {
  const x64 = sc.cast(x, "float64"), ws64 = weights.map((w) => sc.cast(w, "float64"));
  checkGradients(loss, [x64, ...ws64], 1e-6, "all five");
  const wOnly = (...ws: sc.Tensor[]) => loss(x64, ws[0]!, ws[1]!, ws[2]!, ws[3]!);
  const analytic = sc.grad(wOnly, { argnums: [0, 1, 2, 3] })(...ws64) as sc.Tensor[];
  const numeric = numericGrad(wOnly, ws64);
  analytic.forEach((g, k) => assertClose(g.dataSync(), numeric[k]!, 1e-6, `weight ${k} only`));
});

test("a gradient of a gradient through the convolutions (hvp on the weights, data fixed) matches finite differences of the gradient", () => {
  const x64 = sc.cast(x, "float64"), w164 = sc.cast(w1, "float64"), w264 = sc.cast(w2, "float64");
  const f = (a: sc.Tensor, b: sc.Tensor) => sc.sum(sc.tanh(sc.conv2d(sc.tanh(sc.conv2d(x64, a, { padding: "same" })), b, { strides: 2, padding: 1 })));
  const v = [rng.tensor([4, 3, 3, 3]), rng.tensor([5, 4, 3, 3])];
  // hvp differentiates a function of one argument: the pair of filters
  const hv = sc.hvp((ws: sc.Tensor[]) => f(ws[0]!, ws[1]!), [w164, w264], v) as sc.Tensor[];
  const g = sc.grad(f, { argnums: [0, 1] });
  const eps = 1e-5;
  const at = (s: number) => g(sc.add(w164, sc.mul(v[0]!, s)), sc.add(w264, sc.mul(v[1]!, s))) as sc.Tensor[];
  const plus = at(eps), minus = at(-eps);
  hv.forEach((h, k) => {
    const fd = Array.from(plus[k]!.dataSync(), (p, i) => (p - minus[k]!.dataSync()[i]!) / (2 * eps));
    assertClose(h.dataSync(), fd, 1e-5, `hvp ${k}`);
  });
});
