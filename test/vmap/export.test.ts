/**
 * Vmapped staged functions exported to ONNX and run in onnxruntime: the batched graph (rules
 * emitting ordinary ops, a batched cond as where, a masked while as a Loop, a shared-predicate
 * cond as an If) must give, in onnxruntime and on the onnxruntime engine, the staged result,
 * which must equal a JS loop over the examples.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as sc from "../../src/api/index.js";
import { dropout } from "../../src/ops/random.js";
import { Rng } from "../util/rng.js";

type F = (...xs: any[]) => unknown;

const leaves = (x: unknown): sc.Tensor[] =>
  x instanceof sc.Tensor ? [x] : Array.isArray(x) ? x.flatMap(leaves) : x !== null && typeof x === "object" ? Object.values(x).flatMap(leaves) : [];

/** Leaf by leaf: same shapes, values within relative `tol` (0: bit for bit). */
function same(got: sc.Tensor[], want: sc.Tensor[], tol: number, what: string): void {
  assert.equal(got.length, want.length, `${what}: number of outputs`);
  want.forEach((w, i) => {
    const g = got[i]!;
    assert.deepEqual(g.shape, w.shape, `${what}: output ${i} shape`);
    const a = g.dataSync(), b = w.dataSync();
    for (let k = 0; k < b.length; k++) {
      const x = Number(a[k]), y = Number(b[k]);
      assert.ok(Object.is(x, y) || Math.abs(x - y) <= tol * (1 + Math.abs(y)), `${what}: output ${i}[${k}]: ${x} vs ${y}`);
    }
  });
}

/** f over the examples one at a time (axis 0 where `axes` says 0), each output leaf stacked. */
function loop(f: F, args: unknown[], axes: (0 | null)[]): sc.Tensor[] {
  const n = (args[axes.indexOf(0)] as sc.Tensor).shape[0]!;
  const rows = args.map((a, i) => (axes[i] === null ? null : sc.unstack(a as sc.Tensor)));
  const outs = Array.from({ length: n }, (_, b) => leaves(f(...args.map((a, i) => rows[i]?.[b] ?? a))));
  return outs[0]!.map((_, k) => sc.stack(outs.map((o) => o[k]!)));
}

/**
 * stage(vmap(f)) equals the loop; its exported model run in onnxruntime equals the staged
 * result; stage(vmap(f), { engine: "onnxruntime" }) runs in onnxruntime and equals it too.
 */
async function exportsLikeLoop(f: F, args: unknown[], axes: (0 | null)[], tol: number): Promise<sc.onnx.ExportedModel> {
  const want = loop(f, args, axes);
  const staged = sc.stage(sc.vmap(f, { inAxes: axes }), { autograph: false });
  const ours = leaves(staged(...args));
  same(ours, want, tol, "stage(vmap(f)) vs the loop");
  const model = sc.onnx.exportModel(staged as never, args);
  const flatArgs = leaves(args);
  assert.equal(model.inputNames.length, flatArgs.length);
  const feeds: Record<string, sc.Tensor> = {};
  model.inputNames.forEach((n, i) => (feeds[n] = flatArgs[i]!));
  const got = await sc.onnx.runOnnxRuntime(model.bytes, feeds);
  same(model.outputNames.map((n) => got[n]!), ours, tol, "onnxruntime vs staged");
  const engine = sc.stage(sc.vmap(f, { inAxes: axes }), { autograph: false, engine: "onnxruntime" });
  const runs = sc.onnx.engineStats.runs;
  same(leaves(engine(...args)), ours, tol, "engine vs staged");
  same(leaves(engine(...args)), ours, tol, "engine (second call) vs staged");
  assert.equal(sc.onnx.engineStats.runs - runs, 2, "each engine call ran in onnxruntime");
  return model;
}

const rng = new Rng(28);
const W1 = rng.tensor([3, 5]), b1 = rng.tensor([5]), W2 = rng.tensor([5, 2]), b2 = rng.tensor([2]);
const xs = rng.tensor([6, 3]), ys = rng.tensor([6, 2]);
type Params = { W1: sc.Tensor; b1: sc.Tensor; W2: sc.Tensor; b2: sc.Tensor };
const params: Params = { W1, b1, W2, b2 };
/** One example's squared error through a two-layer MLP. */
const loss = (p: Params, x: sc.Tensor, y: sc.Tensor) => {
  const h = sc.tanh(sc.matmul(x.reshape([1, 3]), p.W1).add(p.b1));
  return sc.matmul(h, p.W2).add(p.b2).reshape([2]).sub(y).square().sum();
};

test("export of vmap: an MLP's per-example loss", async () => {
  const model = await exportsLikeLoop((p: Params, x: sc.Tensor, y: sc.Tensor) => loss(p, x, y), [params, xs, ys], [null, 0, 0], 1e-12);
  assert.equal(model.outputNames.length, 1);
});

test("export of vmap(grad(loss), { inAxes: [null, 0, 0] }): per-example gradients of every parameter", async () => {
  await exportsLikeLoop(sc.grad(loss), [params, xs, ys], [null, 0, 0], 1e-12);
});

test("export of a staged jacrev (vmap over the VJP's identity rows) and of vmap(jacrev)", async () => {
  const g = (x: sc.Tensor) => sc.concat([x.sin().mul(x.sum()), x.prod().reshape([1])], 0);
  const x = rng.tensor([4]);
  const staged = sc.stage(sc.jacrev(g), { autograph: false });
  const jac = staged(x) as sc.Tensor;
  assert.deepEqual(jac.shape, [5, 4]);
  // (rows of the Jacobian are the gradients of each output)
  for (let i = 0; i < 5; i++) same([sc.unstack(jac)[i]!], [sc.grad((v: sc.Tensor) => sc.unstack(g(v))[i]!)(x)], 1e-14, `row ${i}`);
  const model = sc.onnx.exportModel(staged as never, [x]);
  const got = await sc.onnx.runOnnxRuntime(model.bytes, { [model.inputNames[0]!]: x });
  same([got[model.outputNames[0]!]!], [jac], 1e-12, "onnxruntime vs staged jacrev");
  await exportsLikeLoop(sc.jacrev(g), [rng.tensor([3, 4])], [0], 1e-12);
});

test("export of vmap with a batched cond (where) and a batched while (a masked Loop: Newton's sqrt, own trip count per example)", async () => {
  const newton = (a: sc.Tensor) =>
    sc.whileLoop(
      (x) => x.mul(x).sub(a).abs().greater(a.mul(1e-12)),
      (x, n) => [x.add(a.div(x)).mul(0.5), n!.add(1)],
      [a, sc.scalar(0, "int32")],
    );
  const f = (a: sc.Tensor) => {
    const [r, n] = newton(a) as sc.Tensor[];
    return [sc.cond(n!.greater(6), () => r!.neg(), () => r!.mul(2)), n];
  };
  const as = sc.tensor([1.5, 2, 9, 100, 1e4, 1e6, 1e9], "float64");
  const steps = loop(f, [as], [0])[1]!.dataSync();
  // (trip counts differ per example, and the cond takes both branches)
  assert.ok(new Set(steps).size >= 4 && [...steps].some((n) => n > 6) && [...steps].some((n) => n <= 6), `trip counts ${steps}`);
  await exportsLikeLoop(f, [as], [0], 0);
  const printed = sc.stage(sc.vmap(f), { autograph: false }).concrete(as).toString();
  assert.ok(/= while\(/.test(printed) && /any\(/.test(printed) && !/= cond\(/.test(printed), printed);
});

test("export of vmap with a shared predicate: the cond stays an If, a shared counter loop stays a plain Loop", async () => {
  const f = (x: sc.Tensor, k: sc.Tensor) => {
    const c = sc.cond(k.greater(0), () => x.mul(k), () => x.sub(k).sum(0, true).add(x));
    const [, acc] = sc.whileLoop((i) => i.less(3), (i, s) => [i.add(1), s!.mul(0.5).add(c)], [sc.scalar(0, "int32"), c]) as sc.Tensor[];
    return acc;
  };
  const x = rng.tensor([4, 3]);
  for (const k of [2, -2]) await exportsLikeLoop(f, [x, sc.scalar(k, "float64")], [0, null], 1e-12);
  const printed = sc.stage(sc.vmap(f, { inAxes: [0, null] }), { autograph: false }).concrete(x, sc.scalar(2, "float64")).toString();
  assert.ok(/= cond\(/.test(printed) && /= while\(/.test(printed) && !/any\(/.test(printed), printed);
});

test("export of vmap over random draws with a batched key: onnxruntime draws each example's own numbers", async () => {
  const keys = sc.stack(sc.random.split(sc.random.key(11), 5));
  const x = rng.tensor([6]);
  const f = (k: sc.Tensor) => [
    sc.random.uniform([3], { key: k }),
    sc.random.normal([2, 2], { key: k }),
    sc.random.categorical(sc.tensor([[0, 1, 2]], "float64"), 4, { key: k }),
    dropout(x, 0.5, { key: k })[0],
  ];
  await exportsLikeLoop(f, [keys], [0], 0);
});
