/**
 * The graph AD transform leaves no bookkeeping behind: after optimization, the gradient of
 * straight-line code is no bigger than a hand-derived backward graph (+10%), and loops keep
 * only the per-iteration values their backward reads. Also forward mode (jvp, hvp).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as sc from "../../src/api/index.js";
import type { Graph } from "../../src/graph/ir.js";
import { Rng } from "../util/rng.js";
import { assertClose, numericGrad } from "../util/gradcheck.js";

function countNodes(g: Graph): number {
  return g.nodes.reduce((n, node) => n + 1 + node.regions.reduce((m, r) => m + countNodes(r), 0), 0);
}

function optimizedNodeCount(f: sc.StagedFunction<any[], unknown>, args: unknown[]): { count: number; ops: string[] } {
  const cf = f.concrete(...args);
  const { graph } = sc.optimizeCopy(cf.graph, cf.library, { fuse: false });
  return { count: countNodes(graph), ops: graph.nodes.map((n) => n.op) };
}

const BOOKKEEPING = new Set(["identity", "fillLike", "stopGradient", "customGradient", "sumToLike"]);

test("MLP: the optimized transform gradient is within 10% of a hand-derived backward graph", () => {
  const r = new Rng(1);
  const x = r.tensor([8, 4], -1, 1, "float32");
  const y = r.tensor([8, 3], -1, 1, "float32");
  const params = [r.tensor([4, 5], -1, 1, "float32"), r.tensor([5], -1, 1, "float32"), r.tensor([5, 3], -1, 1, "float32"), r.tensor([3], -1, 1, "float32")];
  const loss = (x: sc.Tensor, y: sc.Tensor, w1: sc.Tensor, b1: sc.Tensor, w2: sc.Tensor, b2: sc.Tensor) =>
    sc.sum(sc.square(sc.matmul(sc.tanh(sc.matmul(x, w1).add(b1)), w2).add(b2).sub(y)));
  const auto = sc.stage((x: sc.Tensor, y: sc.Tensor, w1: sc.Tensor, b1: sc.Tensor, w2: sc.Tensor, b2: sc.Tensor) => {
    const [l, g] = sc.valueAndGrad((a: sc.Tensor, b: sc.Tensor, c: sc.Tensor, d: sc.Tensor) => loss(x, y, a, b, c, d), { argnums: "all" })(w1, b1, w2, b2);
    return [l, ...g];
  });
  const hand = sc.stage((x: sc.Tensor, y: sc.Tensor, w1: sc.Tensor, b1: sc.Tensor, w2: sc.Tensor, b2: sc.Tensor) => {
    const h = sc.tanh(sc.matmul(x, w1).add(b1));
    const d = sc.matmul(h, w2).add(b2).sub(y);
    const l = sc.sum(sc.square(d));
    const dOut = d.mul(2);
    const dh = sc.matmul(dOut, w2, { transposeB: true });
    const dz = dh.mul(sc.sub(1, h.square()));
    return [l, sc.matmul(x, dz, { transposeA: true }), sc.sum(dz, 0), sc.matmul(h, dOut, { transposeA: true }), sc.sum(dOut, 0)];
  });
  const args = [x, y, ...params];
  const a = (auto as (...xs: sc.Tensor[]) => unknown)(...args) as sc.Tensor[];
  const b = (hand as (...xs: sc.Tensor[]) => unknown)(...args) as sc.Tensor[];
  a.forEach((t, i) => assertClose(t.dataSync(), b[i]!.dataSync(), 1e-5, `output ${i}`));
  const na = optimizedNodeCount(auto, args);
  const nb = optimizedNodeCount(hand, args);
  assert.ok(na.count <= Math.ceil(nb.count * 1.1), `transform: ${na.count} nodes (${na.ops.join(" ")}) vs hand-derived ${nb.count} (${nb.ops.join(" ")})`);
  assert.deepEqual(na.ops.filter((o) => BOOKKEEPING.has(o)), []);
});

test("small convnet: the optimized transform gradient is within 10% of a hand-derived backward graph", () => {
  const r = new Rng(2);
  const x = r.tensor([2, 3, 6, 6], -1, 1, "float32");
  const k = r.tensor([4, 3, 3, 3], -1, 1, "float32");
  const auto = sc.stage((x: sc.Tensor, k: sc.Tensor) => {
    const [l, g] = sc.valueAndGrad((w: sc.Tensor) => sc.sum(sc.relu(sc.conv2d(x, w, { padding: "same" }))))(k);
    return [l, g];
  });
  const hand = sc.stage((x: sc.Tensor, k: sc.Tensor) => {
    const z = sc.conv2d(x, k, { padding: "same" });
    const l = sc.sum(sc.relu(z));
    const dz = sc.cast(sc.greater(z, 0), "float32");
    const dk = sc.applyOp(sc.getOp("conv2dBackpropFilter"), [x, dz], (auto.concrete(x, k).graph.nodes.find((n) => n.op === "conv2dBackpropFilter") ?? { attrs: {} }).attrs)[0]!;
    return [l, dk];
  });
  const a = auto(x, k) as sc.Tensor[];
  const b = hand(x, k) as sc.Tensor[];
  a.forEach((t, i) => assertClose(t.dataSync(), b[i]!.dataSync(), 1e-4, `output ${i}`));
  const na = optimizedNodeCount(auto, [x, k]);
  const nb = optimizedNodeCount(hand, [x, k]);
  assert.ok(na.count <= Math.ceil(nb.count * 1.1), `transform: ${na.count} nodes (${na.ops.join(" ")}) vs hand-derived ${nb.count} (${nb.ops.join(" ")})`);
  assert.deepEqual(na.ops.filter((o) => BOOKKEEPING.has(o)), []);
});

test("loops keep only the per-iteration values the backward reads (bytes measured)", () => {
  // a' = a * c never needs a's old value for its gradient; b' = sin(b) does.
  const c = sc.tensor([1.1, 1.2, 1.3, 1.4], "float64");
  const f = sc.stage((a: sc.Tensor, b: sc.Tensor) => {
    const [, a2, b2] = sc.whileLoop((i) => sc.less(i, 5), (i, a, b) => [i.add(1), a!.mul(c), b!.sin()], [sc.scalar(0, "int32"), a, b]);
    return sc.sum(a2!.add(b2!));
    // (our executor, named: the test watches our stackPush kernel, which a partitioned plan's
    // onnxruntime segment would not call)
  }, { engine: "stagecraft" });
  const a = sc.ones([4], "float64");
  const b = sc.ones([4], "float64");
  const tape = new sc.GradientTape();
  const keptBytes: number[] = [];
  // Watch every row the differentiated forward pushes on a stack for its backward.
  const kernels = sc.getOp("stackPush").kernels;
  const original = kernels.cpu!;
  kernels.cpu = (inputs, attrs, outs) => {
    const data = original(inputs, attrs, outs);
    keptBytes.push(...data.map((d) => d.byteLength));
    return data;
  };
  try {
    const loss = tape.record(() => (tape.watch([a, b]), f(a, b)));
    const [ga, gb] = tape.gradient(loss, [a, b]);
    assertClose(ga.dataSync(), c.dataSync().map((v) => v ** 5), 1e-12, "d/da");
    let v = 1;
    let d = 1;
    for (let i = 0; i < 5; i++) {
      d *= Math.cos(v);
      v = Math.sin(v);
    }
    assertClose(gb.dataSync(), [d, d, d, d], 1e-12, "d/db");
  } finally {
    kernels.cpu = original;
  }
  // One stack (b's values), one row of 4 float64 per iteration, 160 bytes in the end; a is not kept.
  assert.deepEqual(keptBytes, [32, 64, 96, 128, 160]);
});

test("jvp (forward mode) and Hessian-vector products through staged control flow", () => {
  const f64 = (v: number[]) => sc.tensor(v, "float64");
  const g = sc.stage((x: sc.Tensor) =>
    sc.cond(
      sc.greater(sc.sum(x), 0),
      () => sc.whileLoop((i, v) => sc.less(i, 3), (i, v) => [i.add(1), v!.sin().mul(v!).add(v!)], [sc.scalar(0, "int32"), x])[1]!,
      () => x.exp(),
    ),
  );
  const x = f64([0.3, 0.5]);
  const t = f64([1, -2]);
  const [y, jt] = sc.jvp(g, [x], [t]);
  assert.equal(y.shape[0], 2);
  // J·t by finite differences along t
  const h = 1e-6;
  const plus = g(x.add(t.mul(h))).dataSync();
  const minus = g(x.sub(t.mul(h))).dataSync();
  assertClose(jt.dataSync(), Array.from(plus, (p, i) => (p - minus[i]!) / (2 * h)), 1e-6, "jvp");
  const scalar = (z: sc.Tensor) => sc.sum(g(z).square());
  const hv = sc.hvp(scalar, x, t);
  const gradAt = (z: sc.Tensor) => (sc.grad(scalar)(z) as sc.Tensor).dataSync();
  const gp = gradAt(x.add(t.mul(h)));
  const gm = gradAt(x.sub(t.mul(h)));
  assertClose(hv.dataSync(), Array.from(gp, (p, i) => (p - gm[i]!) / (2 * h)), 1e-5, "hvp");
  const fd = numericGrad((z) => sc.sum(g(z).mul(f64([1, 0]))), [x]);
  assert.ok(fd[0]!.every(Number.isFinite));
});
