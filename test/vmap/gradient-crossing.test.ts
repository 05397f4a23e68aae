/**
 * Gradients that cross a vmap level at a cond or while node traced below it (staged), compared,
 * in float64, with a JS loop of the unvmapped function's gradients (exact to rounding) and with
 * central finite differences:
 *
 * - a gradient with respect to a value shared by every example (inAxes null) used in or before a
 *   batched loop or a shared-predicate cond: per-example gradients stacked, as JAX's
 *   vmap(grad(f), in_axes=(None, 0)); grad of the batch's sum gives their total;
 * - second derivatives through the level (vmap(grad(grad)), grad(vmap(grad)) summed, vmap of a
 *   Hessian-vector product) through a cond node and a while node, staged and eager.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as sc from "../../src/api/index.js";
import { Rng } from "../util/rng.js";

type Any = any;
type G = (p: sc.Tensor, a: sc.Tensor) => sc.Tensor;

/** Every element of `got` equals `want`'s to relative `tol`. */
function close(got: sc.Tensor, want: sc.Tensor, tol: number, what: string): void {
  assert.deepEqual(got.shape, want.shape, `${what}: shape`);
  assert.equal(got.dtype, want.dtype, `${what}: dtype`);
  const x = got.dataSync(), y = want.dataSync();
  for (let i = 0; i < y.length; i++) {
    const a = Number(x[i]), b = Number(y[i]);
    assert.ok(Math.abs(a - b) <= tol * (1 + Math.abs(b)), `${what}: element ${i}: ${a} vs ${b}`);
  }
}

/** Central differences of the scalar h at the scalar x (float64). */
function fd(h: (x: sc.Tensor) => sc.Tensor, x: sc.Tensor, eps = 1e-6): number {
  const v = x.item() as number;
  const at = (u: number) => h(sc.scalar(u, "float64")).item() as number;
  return (at(v + eps) - at(v - eps)) / (2 * eps);
}

/** f over the examples of `as` one at a time, stacked. */
const loop = (f: (a: sc.Tensor) => sc.Tensor, as: sc.Tensor) => sc.stack(sc.unstack(as).map(f));

// Per-example functions of a shared weight p and an example a.
/** Damped Newton for sqrt(a) with step p (a masked loop, p in its body, its initial value and after it). */
const damped: G = (p, a) => {
  const [x] = sc.whileLoop((x) => x.mul(x).sub(a).abs().greater(a.mul(1e-12)), (x) => [x.sub(p.mul(x.mul(x).sub(a)).div(x.mul(2)))], [a.mul(p)]);
  return x!.mul(p).sin();
};
/** p only before a masked loop: y = a p halved until below 0.1 (a trip count per example). */
const before: G = (p, a) => sc.whileLoop((x) => x.greater(0.1), (x) => [x.mul(0.5).add(x.sin().mul(0.01))], [a.mul(p)])[0]!.mul(a);
/** A loop whose condition is shared (a counter), p in its body. */
const counter: G = (p, a) => sc.whileLoop((i) => i.less(3), (i, s) => [i.add(1), s!.mul(p).add(a).sin()], [sc.scalar(0, "int32"), a.mul(p)])[1]!;
/** A cond whose predicate is shared (p's sign), p in both branches. */
const sharedCond: G = (p, a) => sc.cond(p.greater(0), () => a.mul(p).mul(p).exp(), () => a.mul(p).sin().mul(p));
/** AutoGraph: a native while with a per-example condition, p in the body. */
function agLoop(p: Any, a: Any) {
  let x = a;
  let n = 0;
  while (x > 0.5) {
    x = x * p - 0.01 * n;
    n = n + 1;
  }
  return x * p + n;
}

test("vmap(grad) with respect to a shared value used in or before a staged batched loop or a shared cond: per-example gradients", () => {
  const as = sc.tensor([1.5, 2, 9, 100, 1e4], "float64");
  const cases: [string, G, sc.Tensor, sc.Tensor[], boolean][] = [
    ["damped Newton (masked loop)", damped, as, [sc.scalar(0.7, "float64")], false],
    ["shared value before a masked loop", before, as, [sc.scalar(0.7, "float64")], false],
    ["shared counter loop", counter, new Rng(42).tensor([4]), [sc.scalar(0.8, "float64")], false],
    ["shared-predicate cond", sharedCond, new Rng(43).tensor([4]), [sc.scalar(0.6, "float64"), sc.scalar(-0.6, "float64")], false],
    ["AutoGraph while", agLoop as unknown as G, sc.tensor([0.7, 3, 20, 400], "float64"), [sc.scalar(0.8, "float64")], true],
  ];
  for (const [name, f, xs, weights, autograph] of cases) {
    const one = (autograph ? sc.autograph(f, { scope: { sc } }) : f) as G;
    for (const p of weights) {
      const dp = sc.grad(one) as (p: sc.Tensor, a: sc.Tensor) => sc.Tensor;
      const want = loop((a) => dp(p, a), xs);
      // (trip counts or branches differ enough that the gradients differ per example)
      assert.ok(new Set(want.dataSync()).size === xs.size, `${name}: per-example gradients ${want.dataSync()}`);
      const opts = { inAxes: [null, 0] };
      close(sc.vmap(sc.grad(one), opts)(p, xs), want, 1e-13, `${name}: vmap(grad) eagerly`);
      close(sc.stage(sc.vmap(sc.grad(f), opts), { autograph })(p, xs), want, 1e-13, `${name}: stage(vmap(grad))`);
      close(sc.vmap(sc.stage(sc.grad(f), { autograph }), opts)(p, xs), want, 1e-13, `${name}: vmap(stage(grad))`);
      close(sc.stage(sc.vmap(sc.stage(sc.grad(f), { autograph }), opts), { autograph })(p, xs), want, 1e-13, `${name}: stage(vmap(stage(grad)))`);
      // the gradient of the batch's sum is the per-example gradients' total
      const total = (q: sc.Tensor, ys: sc.Tensor) => sc.vmap(f, opts)(q, ys).sum();
      close(sc.stage(sc.grad(total), { autograph })(p, xs), sc.sum(want), 1e-12, `${name}: stage(grad(sum of vmap))`);
      // and each example's gradient is its finite difference
      const got = sc.stage(sc.vmap(sc.grad(f), opts), { autograph })(p, xs).dataSync();
      sc.unstack(xs).forEach((a, i) => {
        const d = fd((q) => one(q, a), p);
        assert.ok(Math.abs(got[i]! - d) <= 1e-6 * (1 + Math.abs(d)), `${name}: example ${i}: ${got[i]} vs finite difference ${d}`);
      });
    }
  }
});

test("vmap(grad) of a shared value staged through nested loops and a loop variable it starts", () => {
  const as = sc.tensor([1.5, 2, 9, 40], "float64");
  const p = sc.scalar(0.9, "float64");
  // an inner loop (shared counter) in a masked loop's body, p used only in the inner one; p as a loop variable's start
  const nested: G = (q, a) =>
    sc.whileLoop((x) => x.greater(1), (x) => [sc.whileLoop((i) => i.less(2), (i, y) => [i.add(1), y!.mul(q)], [sc.scalar(0, "int32"), x])[1]!.sub(0.05)], [a])[0]!;
  const start: G = (q, a) => sc.whileLoop((x, i) => i!.less(a), (x, i) => [x!.mul(x!).mul(0.3).cos().add(a.mul(0.01)), i!.add(1)], [q, sc.scalar(0, "float64")])[0]!;
  for (const [name, f] of [["nested loops", nested], ["loop variable started by p", start]] as const) {
    const want = loop((a) => (sc.grad(f) as G)(p, a), as);
    assert.ok(new Set(want.dataSync()).size === as.size, `${name}: ${want.dataSync()}`);
    close(sc.stage(sc.vmap(sc.grad(f), { inAxes: [null, 0] }), { autograph: false })(p, as), want, 1e-13, `${name}: stage(vmap(grad))`);
    close(sc.vmap(sc.grad(f), { inAxes: [null, 0] })(p, as), want, 1e-13, `${name}: vmap(grad)`);
    sc.unstack(as).forEach((a, i) => {
      const d = fd((q) => f(q, a), p);
      assert.ok(Math.abs(want.dataSync()[i]! - d) <= 1e-6 * (1 + Math.abs(d)), `${name}: example ${i}: finite difference ${d}`);
    });
  }
});

test("second derivatives through a staged cond node below the level: vmap(grad(grad)), grad(vmap(grad)) summed, vmap(hvp), a shared weight's", () => {
  const xs = new Rng(51).tensor([5], -2, 2);
  for (const k of [2, -2]) {
    const kt = sc.scalar(k, "float64");
    const h = (e: sc.Tensor) => sc.cond(kt.greater(0), () => e.mul(e).mul(e).mul(kt), () => e.sin().mul(e).mul(kt));
    const want = loop((x) => sc.grad(sc.grad(h))(x), xs);
    const what = `k = ${k}`;
    close(sc.vmap(sc.grad(sc.grad(h)))(xs), want, 1e-14, `${what}: vmap(grad(grad)) eagerly`);
    close(sc.stage(sc.vmap(sc.grad(sc.grad(h))), { autograph: false })(xs), want, 1e-14, `${what}: stage(vmap(grad(grad)))`);
    const summed = (x: sc.Tensor) => sc.vmap(sc.grad(h))(x).sum();
    close(sc.stage(sc.grad(summed), { autograph: false })(xs), want, 1e-14, `${what}: stage(grad(vmap(grad)))`);
    close(sc.grad(summed)(xs), want, 1e-14, `${what}: grad(vmap(grad)) eagerly`);
    sc.unstack(xs).forEach((x, i) => {
      const d = fd(sc.grad(h), x);
      assert.ok(Math.abs(want.dataSync()[i]! - d) <= 1e-6 * (1 + Math.abs(d)), `${what}: example ${i}: ${want.dataSync()[i]} vs finite difference ${d}`);
    });
    // a Hessian-vector product per example: x and v batched, the cond's predicate shared
    const f = (x: sc.Tensor) => sc.cond(kt.greater(0), () => x.mul(x).mul(x).sum().mul(kt), () => x.sin().mul(x).sum());
    const X = new Rng(52).tensor([4, 3], -1.5, 1.5);
    const V = new Rng(53).tensor([4, 3]);
    const hv = (x: sc.Tensor, v: sc.Tensor) => sc.hvp(f, x, v) as sc.Tensor;
    const wantHv = sc.stack(sc.unstack(X).map((x, i) => hv(x, sc.unstack(V)[i]!)));
    close(sc.vmap(hv)(X, V), wantHv, 1e-14, `${what}: vmap(hvp) eagerly`);
    close(sc.stage(sc.vmap(hv), { autograph: false })(X, V), wantHv, 1e-14, `${what}: stage(vmap(hvp))`);
    // (hvp = H v: the finite difference of the gradient along v)
    const x0 = sc.unstack(X)[0]!, v0 = sc.unstack(V)[0]!;
    const dir = (t: number) => sc.grad(f)(x0.add(v0.mul(t))) as sc.Tensor;
    const fdHv = dir(1e-6).sub(dir(-1e-6)).div(2e-6).dataSync();
    wantHv.dataSync().slice(0, 3).forEach((w, j) => assert.ok(Math.abs(w - fdHv[j]!) <= 1e-6 * (1 + Math.abs(w)), `${what}: hvp element ${j}: ${w} vs ${fdHv[j]}`));
    // a shared weight's second derivative, per example
    const p = sc.scalar(0.7, "float64");
    const hp: G = (q, a) => sc.cond(kt.greater(0), () => a.mul(q).mul(q).mul(q).exp(), () => a.mul(q).sin().mul(q));
    const wantP = loop((a) => sc.grad(sc.grad((q: sc.Tensor) => hp(q, a)))(p), xs);
    const perExample = (q: sc.Tensor, a: sc.Tensor) => sc.grad(sc.grad((r: sc.Tensor) => hp(r, a)))(q);
    close(sc.stage(sc.vmap(perExample, { inAxes: [null, 0] }), { autograph: false })(p, xs), wantP, 1e-13, `${what}: stage(vmap(grad(grad))) of a shared weight`);
    close(sc.vmap(perExample, { inAxes: [null, 0] })(p, xs), wantP, 1e-13, `${what}: vmap(grad(grad)) of a shared weight eagerly`);
  }
});

test("second derivatives through a staged while node below the level: vmap(grad(grad)), grad(vmap(grad)) summed, vmap(hvp), staged and eager, each example's", () => {
  const as = sc.tensor([1.5, 2, 9, 100], "float64");
  const newton = (a: sc.Tensor) => sc.whileLoop((x) => x.mul(x).sub(a).abs().greater(a.mul(1e-12)), (x) => [x.add(a.div(x)).mul(0.5)], [a])[0]!;
  const h = (b: sc.Tensor) => newton(b).mul(b.sin());
  const wantStaged = loop((a) => sc.grad(sc.grad(h))(a), as);
  close(sc.stage(sc.vmap(sc.grad(sc.grad(h))), { autograph: false })(as), wantStaged, 1e-13, "stage(vmap(grad(grad)))");
  close(sc.stage(sc.grad((x: sc.Tensor) => sc.vmap(sc.grad(h))(x).sum()), { autograph: false })(as), wantStaged, 1e-13, "stage(grad(vmap(grad)))");
  // a counter loop (shared predicate), and a Hessian-vector product per example through it
  const counter = (x: sc.Tensor) => sc.whileLoop((i) => i.less(3), (i, y) => [i.add(1), y!.mul(y!).mul(0.5).sin()], [sc.scalar(0, "int32"), x])[1]!;
  const xs = sc.tensor([0.3, -0.8, 1.1], "float64");
  close(sc.stage(sc.vmap(sc.grad(sc.grad(counter))), { autograph: false })(xs), loop((x) => sc.grad(sc.grad(counter))(x), xs), 1e-13, "counter loop: stage(vmap(grad(grad)))");
  const f = (x: sc.Tensor) => counter(x).sum();
  const X = new Rng(61).tensor([3, 2], -1, 1), V = new Rng(62).tensor([3, 2]);
  const hv = (x: sc.Tensor, v: sc.Tensor) => sc.hvp(f, x, v) as sc.Tensor;
  const wantHv = sc.stack(sc.unstack(X).map((x, i) => hv(x, sc.unstack(V)[i]!)));
  close(sc.stage(sc.vmap(hv), { autograph: false })(X, V), wantHv, 1e-13, "counter loop: stage(vmap(hvp))");
  const want = loop((a) => sc.grad(sc.grad(h))(a), as);
  close(sc.vmap(sc.grad(sc.grad(h)))(as), want, 1e-14, "vmap(grad(grad)) eagerly");
  close(sc.grad((x: sc.Tensor) => sc.vmap(sc.grad(h))(x).sum())(as), want, 1e-14, "grad(vmap(grad)) eagerly");
  sc.unstack(as).forEach((a, i) => {
    const d = fd(sc.grad(h), a, 1e-6 * (a.item() as number));
    assert.ok(Math.abs(want.dataSync()[i]! - d) <= 1e-5 * (1 + Math.abs(d)), `example ${i}: ${want.dataSync()[i]} vs finite difference ${d}`);
  });
});

test("nested vmap(vmap(grad)) of a shared value through staged loops and conds: each (row, example)'s gradient", () => {
  const bs = sc.tensor([[1.5, 2, 9], [0.7, 3, 5]], "float64");
  const p = sc.scalar(0.8, "float64");
  const cases: [string, G][] = [
    ["p in a masked loop's body", (q, a) => sc.whileLoop((x) => x.greater(1), (x) => [x.mul(q).sub(0.05)], [a])[0]!],
    ["p before a masked loop", (q, a) => sc.whileLoop((x) => x.greater(1), (x) => [x.mul(0.5)], [a.mul(q)])[0]!],
    ["p in a shared counter loop", (q, a) => sc.whileLoop((i) => i.less(3), (i, x) => [i.add(1), x!.mul(q).sin()], [sc.scalar(0, "int32"), a])[1]!],
    ["p in a shared-predicate cond", (q, a) => sc.cond(q.greater(0.5), () => a.mul(q).mul(q), () => a)],
    ["a shared cond in a masked loop", (q, a) => sc.whileLoop((x) => x.greater(1), (x) => [sc.cond(q.greater(0.5), () => x.mul(q), () => x.mul(0.5)).sub(0.05)], [a])[0]!.mul(q)],
  ];
  const opts = { inAxes: [null, 0] };
  for (const [name, f] of cases) {
    const want = sc.stack(sc.unstack(bs).map((row) => loop((a) => (sc.grad(f) as G)(p, a), row)));
    close(sc.stage(sc.vmap(sc.vmap(sc.grad(f), opts), opts), { autograph: false })(p, bs), want, 1e-13, `${name}: stage(vmap(vmap(grad)))`);
    close(sc.vmap(sc.vmap(sc.grad(f), opts), opts)(p, bs), want, 1e-13, `${name}: vmap(vmap(grad)) eagerly`);
    const a0 = sc.unstack(sc.unstack(bs)[1]!)[1]!;
    const d = fd((q) => f(q, a0), p);
    assert.ok(Math.abs(want.dataSync()[4]! - d) <= 1e-6 * (1 + Math.abs(d)), `${name}: ${want.dataSync()[4]} vs finite difference ${d}`);
  }
});

test("a tape-watched value made inside a staged loop under vmap (a variable read in its body) is a typed refusal; eagerly each example's", () => {
  const as = sc.tensor([1.5, 2, 9, 40], "float64");
  const v = sc.variable(sc.scalar(0.8, "float64"));
  const g = (a: sc.Tensor) => {
    const tape = new sc.GradientTape();
    const y = tape.record(() => sc.whileLoop((x) => x.greater(1), (x) => [x.mul(v.read()).sub(0.05)], [a])[0]!);
    return tape.gradient(y, v) as sc.Tensor;
  };
  assert.throws(
    () => sc.stage(sc.vmap(g), { autograph: false })(as),
    (e: Error) => e instanceof sc.GradientError && /made inside a staged cond or while loop under vmap/.test(e.message) && /read the variable before the loop/.test(e.message),
  );
  close(sc.vmap(g)(as), loop(g, as), 1e-14, "vmap eagerly");
});
