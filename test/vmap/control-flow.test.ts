/**
 * vmap over control flow: cond, whileLoop and AutoGraph's native if / ?: / while / for with a
 * predicate that differs per example (both branches selected by where; a masked loop, each
 * example stopping at its own trip count), and with one that is the same for every example (the
 * cond or loop stays one). Every result is compared to a JS loop over the examples, eagerly,
 * staged (vmap inside stage) and with the staged function inside vmap.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as sc from "../../src/api/index.js";
import { Rng } from "../util/rng.js";

type Any = any;
type F = (...xs: sc.Tensor[]) => unknown;

/** Every leaf of `got` equals `want`'s (same shapes; relative `tol`, 0: bit for bit). */
function same(got: unknown, want: unknown, tol = 0, what = "result"): void {
  if (Array.isArray(want)) {
    assert.ok(Array.isArray(got), `${what}: not an array`);
    assert.equal(got.length, want.length, `${what}: length`);
    want.forEach((w, i) => same(got[i], w, tol, `${what}[${i}]`));
    return;
  }
  const g = got as sc.Tensor, w = want as sc.Tensor;
  assert.deepEqual(g.shape, w.shape, `${what}: shape`);
  assert.equal(g.dtype, w.dtype, `${what}: dtype`);
  const x = g.dataSync(), y = w.dataSync();
  for (let i = 0; i < y.length; i++) {
    const a = Number(x[i]), b = Number(y[i]);
    assert.ok(a === b || Math.abs(a - b) <= tol * (1 + Math.abs(b)), `${what}: element ${i}: ${a} vs ${b}`);
  }
}

/** f over the examples one at a time (axis 0 of the batched arguments), results stacked leaf by leaf. */
function loop(f: F, args: sc.Tensor[], axes: (number | null)[] = args.map(() => 0)): unknown {
  const n = args.find((_, i) => axes[i] !== null)!.shape[0]!;
  const outs: unknown[] = [];
  for (let b = 0; b < n; b++) outs.push(f(...args.map((a, i) => (axes[i] === null ? a : sc.unstack(a)[b]!))));
  const stackLeaves = (xs: unknown[]): unknown => (Array.isArray(xs[0]) ? (xs[0] as unknown[]).map((_, k) => stackLeaves(xs.map((x) => (x as unknown[])[k]))) : sc.stack(xs as sc.Tensor[]));
  return stackLeaves(outs);
}

/** vmap(f) eagerly, inside stage, and the staged f inside vmap: each equals the loop. */
function allWays(f: F, args: sc.Tensor[], { axes = args.map(() => 0) as (number | null)[], autograph = false, tol = 0 } = {}): void {
  // (with AutoGraph: the loop and the eager vmap run the converted f)
  const one = autograph ? (sc.autograph(f, { scope: { sc } }) as F) : f;
  const want = loop(one, args, axes);
  const opts = { inAxes: axes };
  same(sc.vmap(one, opts)(...args), want, tol, "vmap (eager)");
  same(sc.stage(sc.vmap(f, opts), { autograph })(...args), want, tol, "stage(vmap)");
  same(sc.vmap(sc.stage(f, { autograph }), opts)(...args), want, tol, "vmap(stage)");
}

/** The printed graph of stage(vmap(f)) for these arguments. */
const graphOf = (f: F, args: sc.Tensor[], inAxes?: (number | null)[], autograph = false) => sc.stage(sc.vmap(f, { inAxes }), { autograph }).concrete(...args).toString();

// Newton's iteration for sqrt(a) until |x^2 - a| < tol: a different number of steps per example.
const newton = (a: sc.Tensor) =>
  sc.whileLoop(
    (x) => x.mul(x).sub(a).abs().greater(a.mul(1e-12)),
    (x, n) => [x.add(a.div(x)).mul(0.5), n!.add(1)],
    [a, sc.scalar(0, "int32")],
  );

// Collatz steps of n (float64): a cond inside the loop body, both batched.
const collatz = (n0: sc.Tensor) =>
  sc.whileLoop(
    (n) => n.notEqual(1),
    (n, k) => [sc.cond(n.sub(n.div(2).floor().mul(2)).equal(0), () => n.div(2), () => n.mul(3).add(1)), k!.add(1)],
    [n0, sc.scalar(0, "float64")],
  );

test("batched cond: each example takes its own branch (structures of outputs), all three ways", () => {
  const xs = new Rng(3).tensor([6, 2], -2, 2);
  const f = (x: sc.Tensor) =>
    sc.cond(
      x.sum().greater(0),
      () => [x.exp(), { s: x.sum(), k: 1 }],
      () => [x.mul(x).neg(), { s: x.prod(), k: 1 }],
    );
  // (both branches are taken somewhere in the batch)
  const sums = sc.sum(xs, 1).dataSync();
  assert.ok([...sums].some((s) => s > 0) && [...sums].some((s) => s <= 0));
  const g = (x: sc.Tensor) => {
    const [a, o] = f(x) as [sc.Tensor, { s: sc.Tensor; k: number }];
    assert.equal(o.k, 1);
    return [a, o.s];
  };
  allWays(g, [xs]);
  // a batched predicate selects: no cond node, both branches computed and a where
  const printed = graphOf(g, [xs]);
  assert.ok(/where\(/.test(printed) && !/= cond\(/.test(printed), printed);
});

test("cond whose predicate is the same for every example stays a cond (staged), batched operands in its branches", () => {
  const xs = new Rng(5).tensor([4, 3]);
  const f = (x: sc.Tensor, k: sc.Tensor) => sc.cond(k.greater(0), () => x.mul(k), () => x.sub(k).sum(0, true).add(x));
  for (const k of [2, -2]) allWays(f, [xs, sc.scalar(k, "float64")], { axes: [0, null] });
  assert.ok(/= cond\(/.test(graphOf(f, [xs, sc.scalar(2, "float64")], [0, null])));
});

test("grad of vmap, staged, through a cond whose predicate is shared: the cond node's gradient", () => {
  const xs = new Rng(21).tensor([5], -2, 2);
  const f = (x: sc.Tensor, k: sc.Tensor) => sc.vmap((e: sc.Tensor) => sc.cond(k.greater(0), () => e.mul(e).mul(k), () => e.sin()))(x).sum();
  const staged = sc.stage(sc.grad(f), { autograph: false });
  for (const k of [2, -2]) {
    const kt = sc.scalar(k, "float64");
    const want = loop((x) => sc.grad((e: sc.Tensor) => sc.cond(kt.greater(0), () => e.mul(e).mul(kt), () => e.sin()))(x!), [xs]);
    same(staged(xs, kt), want, 1e-15, `k = ${k}`);
  }
});

test("batched while: Newton's sqrt with per-example trip counts, eager and staged", () => {
  const as = sc.tensor([1.5, 2, 9, 100, 1e4, 1e6, 1e9], "float64");
  const want = loop(newton, [as]) as sc.Tensor[];
  // (trip counts differ per example)
  assert.ok(new Set(want[1]!.dataSync()).size >= 5, `trip counts ${want[1]!.dataSync()}`);
  allWays(newton, [as]);
  const printed = graphOf(newton, [as]);
  assert.ok(/= while\(/.test(printed) && /any\(/.test(printed) && /where\(/.test(printed), printed);
});

test("batched while: Collatz steps 1..7 per example, with a batched cond in the body", () => {
  const ns = sc.tensor([2, 4, 8, 16, 5, 64, 3], "float64");
  const want = loop(collatz, [ns]) as sc.Tensor[];
  assert.deepEqual([...want[1]!.dataSync()], [1, 2, 3, 4, 5, 6, 7]);
  allWays(collatz, [ns]);
});

test("a loop whose condition is the same for every example stays a plain loop; a variable the body batches is widened", () => {
  const xs = new Rng(9).tensor([5]);
  const f = (x: sc.Tensor, n: sc.Tensor) => sc.whileLoop((i) => i.less(n), (i, acc) => [i.add(1), acc!.add(x).mul(1.5)], [sc.scalar(0, "int32"), sc.scalar(0, "float64")])[1]!;
  allWays(f, [xs, sc.scalar(4, "int32")], { axes: [0, null] });
  const printed = graphOf(f, [xs, sc.scalar(4, "int32")], [0, null]);
  assert.ok(/= while\(/.test(printed) && !/any\(/.test(printed), printed);
});

test("maxIterations caps each example's own trip count", () => {
  const as = sc.tensor([2, 9, 1e6], "float64");
  const capped = (a: sc.Tensor) => sc.whileLoop((x) => x.mul(x).sub(a).abs().greater(1e-9), (x, n) => [x.add(a.div(x)).mul(0.5), n!.add(1)], [a, sc.scalar(0, "int32")], { maxIterations: 5 });
  assert.deepEqual([...(loop(capped, [as]) as sc.Tensor[])[1]!.dataSync()], [4, 5, 5]);
  allWays(capped, [as]);
});

test("gradients through a batched while: vmap(grad) and grad(vmap) equal a loop of grads (float64)", () => {
  const as = sc.tensor([1.5, 2, 9, 100, 1e4], "float64");
  const w = sc.tensor(0.7, "float64");
  // damped Newton (the shared weight p is the step, a loop invariant), its root scaled by p
  const f = (a: sc.Tensor, p: sc.Tensor) => {
    const [x] = sc.whileLoop((x) => x.mul(x).sub(a).abs().greater(a.mul(1e-12)), (x) => [x.sub(p.mul(x.mul(x).sub(a)).div(x.mul(2)))], [a.mul(p)]);
    return x!.mul(p).sin();
  };
  const perExample = (a: sc.Tensor) => sc.grad(f, { argnums: [0, 1] })(a, w) as sc.Tensor[];
  const want = loop(perExample, [as]) as sc.Tensor[];
  same(sc.vmap((a: sc.Tensor) => sc.grad(f, { argnums: [0, 1] })(a, w) as sc.Tensor[])(as), want, 1e-13, "vmap(grad)");
  // grad of the summed batch: the per-example gradients of a, and their sum for the weight
  const total = (a: sc.Tensor, p: sc.Tensor) => sc.vmap((e: sc.Tensor) => f(e, p))(a).sum();
  const g = sc.grad(total, { argnums: [0, 1] })(as, w) as sc.Tensor[];
  same(g[0], want[0], 1e-13, "grad(vmap) wrt a");
  same(g[1], sc.sum(want[1]!), 1e-12, "grad(vmap) wrt p");
  const gs = sc.stage(sc.grad(total, { argnums: [0, 1] }), { autograph: false })(as, w) as sc.Tensor[];
  same(gs[0], want[0], 1e-13, "stage(grad(vmap)) wrt a");
  same(gs[1], sc.sum(want[1]!), 1e-12, "stage(grad(vmap)) wrt p");
});

test("nested vmap with a predicate batched at both levels", () => {
  const xs = new Rng(11).tensor([3, 4], 0.5, 50);
  const ks = sc.tensor([1, 2, 3, 4], "float64");
  // sqrt(x * k) by Newton, its trip count depending on both examples
  const f = (x: sc.Tensor, k: sc.Tensor) => newton(x.mul(k))[0]!.add(sc.cond(x.greater(k.mul(5)), () => k, () => x.neg()));
  const inner = (x: sc.Tensor) => sc.vmap((xi: sc.Tensor, k: sc.Tensor) => f(xi, k))(x, ks);
  const want = loop((row) => loop((xi, k) => f(xi!, k!), [row!, ks]) as sc.Tensor, [xs]);
  same(sc.vmap(inner)(xs), want, 0, "eager");
  same(sc.stage(sc.vmap(inner), { autograph: false })(xs), want, 0, "staged");
});

// AutoGraph: native control flow in converted functions.

/** |x^2 - a| (typed as any: converted code compares it with native operators). */
const residual = (x: Any, a: Any): Any => sc.abs(x * x - a);

function agIf(x: Any) {
  let y;
  if (x.sum() > 0) y = x * 2;
  else y = 10 - x;
  return y;
}
function agReturn(x: Any) {
  if (x > 1) return x * x;
  if (x > -1) return sc.sin(x);
  return -x;
}
const agTernary = (x: Any) => (x > 0 ? sc.exp(x) : x * 3 - 1);
function agNewton(a: Any) {
  let x = a;
  let steps = 0;
  while (residual(x, a) > a * 1e-12) {
    x = (x + a / x) * 0.5;
    steps = steps + 1;
  }
  return [x, x * 0 + steps];
}
function agForCondition(a: Any) {
  let x = a;
  let i = 0;
  for (; residual(x, a) > a * 1e-12; i++) x = (x + a / x) * 0.5;
  return x + i;
}
function agBreak(a: Any) {
  let x = a;
  let i = 0;
  while (i < 100) {
    if (residual(x, a) < a * 1e-12) break;
    x = (x + a / x) * 0.5;
    i = i + 1;
  }
  return x + i;
}
function agRange(n: Any) {
  let s = 0;
  for (const i of sc.range(n) as Any) s = s + i * i;
  return s;
}
function agInPlace(x: Any) {
  const a = [x, x * 3];
  const o = { s: x, t: { u: x } };
  if (x > 0) {
    a[0] = x * 2;
    o.s = x * 5;
  } else {
    a[1] = x - 5;
    o.t.u = x * 7;
  }
  return a[0] + a[1] + o.s + o.t.u;
}
function agForOf(row: Any) {
  let acc = 0;
  for (const v of row) {
    if (v > 0) acc = acc + v;
    else acc = acc * 0.5;
  }
  return acc;
}

test("AutoGraph: native if / return / ?: / while / for with per-example conditions, staged both ways and converted eagerly", () => {
  const rng = new Rng(13);
  const xs = rng.tensor([6, 3], -2, 2);
  const vs = rng.tensor([7], -3, 3);
  const as = sc.tensor([1.5, 2, 9, 100, 1e4, 1e6], "float64");
  for (const [f, args] of [
    [agIf, [xs]],
    [agReturn, [vs]],
    [agTernary, [vs]],
    [agNewton, [as]],
    [agForCondition, [as]],
    [agBreak, [as]],
    [agInPlace, [vs]],
    [agRange, [sc.tensor([0, 1, 2, 5, 3], "int32")]],
    [agForOf, [xs]],
  ] as [F, sc.Tensor[]][]) {
    const converted = sc.autograph(f, { scope: { sc } }) as F;
    const want = loop(converted, args);
    same(sc.vmap(converted)(...args), want, 0, `${f.name}: vmap(autograph)`);
    same(sc.stage(sc.vmap(f))(...args), want, 0, `${f.name}: stage(vmap)`);
    same(sc.vmap(sc.stage(f))(...args), want, 0, `${f.name}: vmap(stage)`);
  }
  // an if whose condition is shared by every example stays a cond node
  function sharedIf(x: Any, k: Any) {
    let y;
    if (k > 0) y = x * k;
    else y = x - k;
    return y;
  }
  for (const k of [2, -2]) allWays(sharedIf as F, [xs, sc.scalar(k, "float64")], { axes: [0, null], autograph: true });
  assert.ok(/= cond\(/.test(graphOf(sharedIf as F, [xs, sc.scalar(2, "float64")], [0, null], true)));
  // (the staged while is one loop node with the masked body)
  const printed = sc.stage(sc.vmap(agNewton)).concrete(as).toString();
  assert.ok(/= while\(/.test(printed) && /where\(/.test(printed), printed);
});

test("what cannot be batched is a typed error naming the construct and why", () => {
  const as = sc.tensor([2, 9], "float64");
  // branches that give different JavaScript values per example
  const jsValue = (x: Any) => {
    let label = "neg";
    if (x > 0) label = "pos";
    return label === "pos" ? x : -x;
  };
  assert.throws(() => sc.vmap(sc.autograph(jsValue, { scope: { sc } }) as F)(as), (e: Error) => e instanceof sc.StagecraftError && /label/.test(e.message) && /vmap/.test(e.message));
  // a variable assigned where only some examples go (every example runs the branch or body)
  const v = sc.variable(sc.tensor(0, "float64"));
  const assigns = [
    (x: sc.Tensor) => sc.cond(x.greater(3), () => (v.assign(sc.tensor(1, "float64")), x), () => x),
    (x: sc.Tensor) => sc.whileLoop((y) => y.less(5), (y) => (v.assign(sc.tensor(2, "float64")), [y.add(1)]), [x])[0]!,
  ];
  for (const f of assigns) {
    for (const run of [() => sc.vmap(f)(as), () => sc.stage(sc.vmap(f), { autograph: false })(as)]) {
      assert.throws(run, (e: Error) => e instanceof sc.ValueError && /variable/.test(e.message) && /differs per example/.test(e.message));
    }
  }
  assert.equal(v.peek().dataSync()[0], 0);
  // a list that grows by a different count per example
  const grow = (a: Any) => {
    const ys = [];
    let x = a;
    while (x > 1) {
      ys.push(x);
      x = x / 2;
    }
    return x;
  };
  assert.throws(() => sc.stage(sc.vmap(grow))(as), (e: Error) => e instanceof sc.AutoGraphError && /ys changes length/.test(e.message) && /vmap/.test(e.message));
  // a recursion ending on a batched cond (both branches run: it never ends)
  const recurse: (n: sc.Tensor, x: sc.Tensor) => sc.Tensor = sc.stage((n: sc.Tensor, x: sc.Tensor): sc.Tensor => sc.cond(n.lessEqual(0), () => x.exp(), () => recurse(n.sub(1), x.mul(0.9))), {
    autograph: false,
  });
  assert.throws(() => sc.vmap(recurse)(sc.tensor([1, 2], "int32"), as), (e: Error) => e instanceof sc.RecursionDepthError && /under vmap/.test(e.message) && /both branches/.test(e.message));
  // branch results of different ranks
  assert.throws(
    () => sc.vmap((x: sc.Tensor) => sc.cond(x.greater(3), () => x, () => x.reshape([1])))(as),
    (e: Error) => e instanceof sc.ShapeError && /cond/.test(e.message) && /rank/.test(e.message),
  );
});

test("staged vmap(grad(f)) through a masked while, a shared-predicate cond and a shared counter loop: each example's gradient (graph AD below the level)", () => {
  const as = sc.tensor([1.5, 2, 9, 100, 1e4], "float64");
  const cases: [string, F, sc.Tensor[], (number | null)[]][] = [
    ["masked while (Newton)", (a) => sc.grad((b: sc.Tensor) => newton(b)[0]!.mul(b))(a!), [as], [0]],
    ["batched cond of loops", (a) => sc.grad((b: sc.Tensor) => sc.cond(b.greater(5), () => newton(b)[0]!.mul(b), () => newton(b)[0]!))(a!), [as], [0]],
    ["shared counter loop", (x) => sc.grad((e: sc.Tensor) => sc.whileLoop((i) => i.less(3), (i, s) => [i.add(1), s!.mul(e).sin()], [sc.scalar(0, "int32"), e])[1]!)(x!), [new Rng(31).tensor([4])], [0]],
  ];
  for (const k of [2, -2]) {
    cases.push([`shared-predicate cond, k = ${k}`, (x, kt) => sc.grad((e: sc.Tensor) => sc.cond(kt!.greater(0), () => e.mul(e).mul(kt!), () => e.sin().mul(kt!)))(x!), [new Rng(32).tensor([4], -2, 2), sc.scalar(k, "float64")], [0, null]]);
  }
  for (const [name, f, args, axes] of cases) {
    const want = loop(f, args, axes);
    same(sc.stage(sc.vmap(f, { inAxes: axes }), { autograph: false })(...args), want, 1e-14, `${name}: stage(vmap(grad))`);
    same(sc.vmap(f, { inAxes: axes })(...args), want, 0, `${name}: vmap(grad) eagerly`);
  }
  // (the staged one is one while node with the masked body, and its gradient loop)
  const printed = sc.stage(sc.vmap(cases[0]![1]), { autograph: false }).concrete(as).toString();
  assert.ok((printed.match(/= while\(/g) ?? []).length >= 2 && /any\(/.test(printed), printed);
});

test("shapeInvariants under vmap: a loop whose condition is shared grows its variables per example (sc.whileLoop and an AutoGraph list); a per-example condition is a typed refusal", () => {
  const xs = new Rng(61).tensor([3, 2]);
  const n = sc.scalar(3, "int32");
  // doubling a per-example vector while a shared counter runs
  const grow = (x: sc.Tensor, k: sc.Tensor) =>
    sc.whileLoop((i) => i.less(k), (i, y) => [i.add(1), sc.concat([y!, y!.mul(i.cast("float64").add(1))], 0)], [sc.scalar(0, "int32"), x], { shapeInvariants: [null, [null]] })[1]!;
  allWays(grow as F, [xs, n], { axes: [0, null] });
  // AutoGraph: a list pushed once per iteration of a tensor-bounded range (a TensorList in the loop)
  function rows(x: Any, k: Any) {
    const ys = [];
    for (const i of sc.range(k) as Any) ys.push(x * (i + 1));
    return sc.stack(ys);
  }
  allWays(rows as F, [xs, n], { axes: [0, null], autograph: true });
  // the same with a native while on a shared counter: one trip count for every example, so the
  // list grows by the same count in each (a per-example condition is a refusal: the next test)
  function whileRows(x: Any, k: Any) {
    const ys = [];
    let i = 0;
    while (i < k) {
      ys.push(x * (i + 1));
      i = i + 1;
    }
    return sc.stack(ys);
  }
  allWays(whileRows as F, [xs, n], { axes: [0, null], autograph: true });
  // the gradient of a shared weight through it, per example (vs a loop of gradients and finite differences)
  function rowsOf(p: Any, x: Any, k: Any) {
    const ys = [];
    for (const i of sc.range(k) as Any) ys.push(sc.sin(x * p * (i + 1)));
    return sc.sum(sc.stack(ys));
  }
  const p = sc.scalar(0.7, "float64");
  const conv = sc.autograph(rowsOf, { scope: { sc } }) as (p: sc.Tensor, x: sc.Tensor, k: sc.Tensor) => sc.Tensor;
  const want = loop((x) => sc.grad(conv)(p, x!, n), [xs]) as sc.Tensor;
  const opts = { inAxes: [null, 0, null] };
  same(sc.stage(sc.vmap(sc.grad(rowsOf), opts))(p, xs, n), want, 1e-14, "stage(vmap(grad))");
  same(sc.vmap(sc.grad(conv), opts)(p, xs, n), want, 1e-14, "vmap(grad) eagerly");
  sc.unstack(xs).forEach((x, i) => {
    const at = (q: number) => conv(sc.scalar(q, "float64"), x, n).item() as number;
    const d = (at(0.7 + 1e-6) - at(0.7 - 1e-6)) / 2e-6;
    assert.ok(Math.abs(want.dataSync()[i]! - d) <= 1e-6 * (1 + Math.abs(d)), `example ${i}: ${want.dataSync()[i]} vs finite difference ${d}`);
  });
  // a per-example condition: a finished example would keep its shape while the others' grow
  const perExample = (x: sc.Tensor) => sc.whileLoop((y) => y.sum().less(10), (y) => [sc.concat([y, y], 0)], [x], { shapeInvariants: [[null]] })[0]!;
  for (const run of [() => sc.vmap(perExample)(xs.abs().add(1)), () => sc.stage(sc.vmap(perExample), { autograph: false })(xs.abs().add(1))]) {
    assert.throws(run, (e: Error) => e instanceof sc.ValueError && /whileLoop/.test(e.message) && /shapeInvariants/.test(e.message) && /differs per example/.test(e.message));
  }
});
