import { test } from "node:test";
import assert from "node:assert/strict";
import * as sc from "../../src/api/index.js";
import { WASM_C_GROUP_BYTES } from "../../src/backends/cpu/matmul.js";
import { Rng } from "../util/rng.js";

const close = (a: sc.Tensor, b: sc.Tensor) => {
  assert.deepEqual(a.shape, b.shape);
  const x = a.dataSync(), y = b.dataSync();
  for (let i = 0; i < x.length; i++) assert.ok(Math.abs(Number(x[i]) - Number(y[i])) < 1e-9, `element ${i}: ${x[i]} vs ${y[i]}`);
};
const loop = (f: (...a: sc.Tensor[]) => sc.Tensor, xs: sc.Tensor[], axes: (number | null)[]) => {
  const n = xs.find((_, i) => axes[i] !== null)!.shape[0]!;
  const outs: sc.Tensor[] = [];
  for (let b = 0; b < n; b++) outs.push(f(...xs.map((x, i) => (axes[i] === null ? x : sc.unstack(x)[b]!))));
  return sc.stack(outs);
};

test("every registry op has a batching rule or a stated refusal", () => {
  const missing = sc.listOps().filter((d) => d.batch === undefined && d.elementwise === undefined).map((d) => d.name);
  assert.deepEqual(missing, [], `ops with neither a batching rule nor a refusal: ${missing.join(", ")}`);
});

test("vmap of an MLP-like function equals the loop, eager and staged", () => {
  const w = sc.tensor([[1, 2, 3], [4, 5, 6]], "float64");
  const f = (wt: sc.Tensor, x: sc.Tensor) => sc.softmax(sc.matmul(x.reshape([1, 2]), wt).tanh(), -1).sum(0).sub(x.mean());
  const xs = sc.tensor([[1, -1], [0.5, 2], [3, 0]], "float64");
  const v = sc.vmap(f, { inAxes: [null, 0] });
  close(v(w, xs), loop(f, [w, xs], [null, 0]));
  close(sc.stage(v, { autograph: false })(w, xs), loop(f, [w, xs], [null, 0]));
});

test("per-example gradients: vmap(grad) equals a loop of grads (float64)", () => {
  const loss = (p: sc.Tensor, x: sc.Tensor, y: sc.Tensor) => sc.square(sc.matmul(x.reshape([1, 3]), p).sum().sub(y)).sum();
  const p = sc.tensor([[0.1], [0.2], [-0.3]], "float64");
  const xs = sc.tensor([[1, 2, 3], [0, 1, -1], [2, 2, 2], [-1, 0, 4]], "float64");
  const ys = sc.tensor([1, 0, 2, -1], "float64");
  const g = sc.vmap(sc.grad(loss), { inAxes: [null, 0, 0] })(p, xs, ys) as sc.Tensor;
  close(g, loop((x, y) => sc.grad(loss)(p, x!, y!), [xs, ys], [0, 0]));
  // grad of vmap: the gradient of the summed batched losses
  const gv = sc.grad((q: sc.Tensor) => sc.vmap((x: sc.Tensor, y: sc.Tensor) => loss(q, x, y))(xs, ys).sum())(p);
  close(gv, sc.sum(g, 0));
});

test("per-example gradients in float32, a weight gradient past the matmul kernel's group size: vmap(grad) equals a loop of grads, eager and staged", () => {
  // 160 outer products of 128 x 64 (5.2 MB) pass WASM_C_GROUP_BYTES: the kernel runs them in groups
  const [IN, OUT, B] = [128, 64, 160];
  assert.ok(B * IN * OUT * 4 > WASM_C_GROUP_BYTES);
  const rng = new Rng(28);
  const w = rng.tensor([IN, OUT], -0.2, 0.2, "float32");
  const xs = rng.tensor([B, IN], -1, 1, "float32");
  const loss = (p: sc.Tensor, x: sc.Tensor) => sc.tanh(sc.matmul(x.reshape([1, IN]), p)).square().sum();
  const want = loop((x) => sc.grad(loss)(w, x!) as sc.Tensor, [xs], [0]).dataSync();
  const vg = sc.vmap(sc.grad(loss), { inAxes: [null, 0] }) as (p: sc.Tensor, x: sc.Tensor) => sc.Tensor;
  for (const [how, g] of [["eager", vg(w, xs)], ["staged", sc.stage(vg, { autograph: false })(w, xs)]] as const) {
    assert.deepEqual(g.shape, [B, IN, OUT]);
    const got = g.dataSync();
    for (let i = 0; i < want.length; i++) {
      if (!(Math.abs(Number(got[i]) - Number(want[i])) <= 1e-5 * (1 + Math.abs(Number(want[i]))))) assert.fail(`${how} [${i}]: ${got[i]} vs ${want[i]}`);
    }
  }
});

test("nested vmap and outAxes", () => {
  const x = sc.tensor([[[1, 2], [3, 4], [5, 6]], [[7, 8], [9, 10], [11, 12]]], "float64");
  const f = (a: sc.Tensor) => a.mul(a).sum();
  const r = sc.vmap(sc.vmap(f))(x);
  close(r, x.mul(x).sum(2));
  close(sc.vmap((a: sc.Tensor) => a.exp(), { outAxes: 1 })(x), sc.transpose(x.exp(), [1, 0, 2]));
});

test("an axis size mismatch is a typed error naming the arguments and sizes", () => {
  assert.throws(() => sc.vmap((a: sc.Tensor, b: sc.Tensor) => a.add(b))(sc.zeros([2, 3]), sc.zeros([4, 3])), (e: Error) => e instanceof sc.ShapeError && /argument 0: 2, argument 1: 4/.test(e.message));
});

test("jacrev = jacfwd = finite differences; hessian", () => {
  const f = (x: sc.Tensor) => sc.matmul(sc.tensor([[1, 2, 0], [0, -1, 3]], "float64"), x.sin().reshape([3, 1])).reshape([2]).mul(x.sum());
  const x = sc.tensor([0.3, -0.7, 1.1], "float64");
  const jr = sc.jacrev(f)(x), jf = sc.jacfwd(f)(x);
  assert.deepEqual(jr.shape, [2, 3]);
  close(jr, jf);
  const eps = 1e-6, xd = [...x.dataSync()], fd: number[][] = [[], []];
  for (let j = 0; j < 3; j++) {
    const p = xd.slice(), m = xd.slice();
    p[j]! += eps; m[j]! -= eps;
    const yp = f(sc.tensor(p, "float64")).dataSync(), ym = f(sc.tensor(m, "float64")).dataSync();
    for (let i = 0; i < 2; i++) fd[i]![j] = (Number(yp[i]) - Number(ym[i])) / (2 * eps);
  }
  const j = jr.dataSync();
  for (let k = 0; k < 6; k++) assert.ok(Math.abs(Number(j[k]) - fd[Math.floor(k / 3)]![k % 3]!) < 1e-6);
  const h = sc.hessian((v: sc.Tensor) => v.mul(v).mul(v).sum())(x);
  close(h, sc.tensor([[6 * 0.3, 0, 0], [0, 6 * -0.7, 0], [0, 0, 6 * 1.1]], "float64"));
});

test("vmap inside stage reads a variable where the graph runs (not its value at trace time); a batched value cannot be assigned", () => {
  const w = sc.variable(sc.tensor(2, "float64"));
  const xs = sc.tensor([1, 2, 3], "float64");
  const f = sc.stage(sc.vmap((x: sc.Tensor) => x.mul(w)), { autograph: false });
  close(f(xs), sc.tensor([2, 4, 6], "float64"));
  w.assign(sc.tensor(10, "float64"));
  close(f(xs), sc.tensor([10, 20, 30], "float64"));
  assert.throws(() => sc.vmap((x: sc.Tensor) => (w.assign(x), x))(xs), (e: Error) => e instanceof sc.ValueError && /batched value/.test(e.message) && /variable/.test(e.message));
  // (the variable is left as it was)
  close(w.peek(), sc.tensor(10, "float64"));
});
