/**
 * Second and third derivatives through loops (and conds) written inline in a trace: the loop
 * is emitted by the gradient rule while the staged function is traced, and the backward loop
 * an inner gradient emits reads the forward's stacks, so an outer gradient has to reach the
 * loop's inputs through those stacks. Each program is differentiated twice in every way the
 * API composes (eager, staged around both gradients, staged between them, gradients around a
 * staged call, sc.hvp eager and staged) and compared with the eager tape and with float64
 * central differences of the eager first derivative.
 */
import { test } from "node:test";
import * as sc from "../../src/api/index.js";
import { Rng } from "../util/rng.js";
import { assertClose } from "../util/gradcheck.js";

type F = (x: sc.Tensor) => sc.Tensor;

interface Program {
  name: string;
  /** A scalar float64 function of one tensor, written with staged control flow. */
  f: F;
  input: (r: Rng) => sc.Tensor;
}

const f64 = (v: sc.NestedArray) => sc.tensor(v, "float64");
const i32 = (v: number) => sc.scalar(v, "int32");
/** Strictly increasing for v > 0, so loops on `v < bound` terminate. */
const grow = (v: sc.Tensor) => v.mul(1.3).add(v.sin().mul(0.2));
const step = (v: sc.Tensor) => v.mul(v).mul(0.3).add(v.sin());
const noAutograph = { autograph: false } as const;

const nativeWhile = sc.autograph(
  function nativeWhile(x: sc.Tensor) {
    let v = x as unknown as number;
    while (v < 5) v = grow(v as unknown as sc.Tensor) as unknown as number;
    return v as unknown as sc.Tensor;
  },
  { scope: { grow } },
);
const nativeFor = sc.autograph(
  function nativeFor(x: sc.Tensor) {
    let v = x;
    for (let i = i32(0) as unknown as number; i < 3; i = (i as unknown as sc.Tensor).add(1) as unknown as number) v = step(v).add(x.cos().mul(0.1));
    return sc.sum(v);
  },
  { scope: { sc, i32, step } },
);

const sinTimes = sc.stage((v: sc.Tensor) => v.sin().mul(v), noAutograph);
const pairCall = sc.stage((a: sc.Tensor, b: sc.Tensor) => a.mul(a).mul(b).sin(), noAutograph);

const programs: Program[] = [
  {
    name: "squaring until 5 (data-dependent trip count)",
    f: (b) => sc.whileLoop((x) => x.less(5), (x) => [x.mul(x).add(0.1)], [b])[0]!,
    input: () => f64(1.5),
  },
  {
    name: "fixed count with an int counter",
    f: (x) => sc.sum(sc.whileLoop((i) => sc.less(i, 3), (i, v) => [i.add(1), step(v!)], [i32(0), x])[1]!),
    input: (r) => r.tensor([2], 0.2, 0.8),
  },
  {
    name: "data-dependent trip count on a vector",
    f: (x) => sc.sum(sc.whileLoop((v) => sc.less(sc.sum(v), 4), (v) => [grow(v)], [x])[0]!.square()),
    input: (r) => r.tensor([2], 0.4, 0.6),
  },
  {
    name: "captured values (one depends on the input, one is a constant)",
    f: (x) => {
      const c = x.cos();
      const k = f64([0.5, -0.25]);
      return sc.sum(sc.whileLoop((i) => sc.less(i, 3), (i, v) => [i.add(1), v!.mul(c).add(v!.sin().mul(k))], [i32(0), x])[1]!);
    },
    input: (r) => r.tensor([2], 0.3, 0.9),
  },
  {
    name: "a loop variable's initial value the body also captures",
    f: (x) => sc.sum(sc.whileLoop((i) => sc.less(i, 3), (i, v) => [i.add(1), v!.mul(v!).mul(0.5).add(x.mul(x)).sin()], [i32(0), x])[1]!),
    input: (r) => r.tensor([2], 0.2, 0.8),
  },
  {
    name: "several loop variables",
    f: (x) => {
      const [, a, b] = sc.whileLoop((i) => sc.less(i, 3), (i, a, b) => [i.add(1), a!.mul(b!).add(a!.sin()), b!.sub(a!.square().mul(0.1))], [i32(0), x, x.exp().mul(0.5)]);
      return sc.sum(a!.mul(b!));
    },
    input: (r) => r.tensor([2], -0.5, 0.5),
  },
  {
    name: "nested loops (the inner reads the outer's variable)",
    f: (x) => {
      const outer = sc.whileLoop(
        (i) => sc.less(i, 2),
        (i, v) => {
          const w = v!;
          const inner = sc.whileLoop((j) => sc.less(j, 2), (j, u) => [j.add(1), u!.mul(w).sin().add(u!)], [i32(0), w]);
          return [i.add(1), inner[1]!];
        },
        [i32(0), x],
      );
      return sc.sum(outer[1]!);
    },
    input: (r) => r.tensor([2], 0.2, 0.7),
  },
  {
    name: "matrix product with the input as the loop's weight",
    f: (x) => {
      const v0 = sc.sum(x, 0).reshape([1, 2]);
      return sc.sum(sc.whileLoop((i) => sc.less(i, 3), (i, v) => [i.add(1), sc.tanh(sc.matmul(v!, x))], [i32(0), v0])[1]!);
    },
    input: (r) => r.tensor([2, 2], -0.8, 0.8),
  },
  {
    name: "a loop stopped by maxIterations",
    f: (x) => sc.sum(sc.whileLoop((v) => sc.less(sc.sum(v), 100), (v) => [v.mul(v).add(v.sin())], [x], { maxIterations: 2 })[0]!),
    input: (r) => r.tensor([2], 0.2, 0.6),
  },
  {
    name: "a staged call in the loop's body",
    f: (x) => sc.sum(sc.whileLoop((i) => sc.less(i, 3), (i, v) => [i.add(1), sinTimes(v!)], [i32(0), x])[1]!),
    input: (r) => r.tensor([2], 0.3, 0.9),
  },
  {
    name: "cond in the loop's body",
    f: (x) =>
      sc.sum(sc.whileLoop((i) => sc.less(i, 3), (i, v) => [i.add(1), sc.cond(sc.greater(sc.sum(v!), 0), () => v!.sin().mul(v!).add(v!), () => v!.cos())], [i32(0), x])[1]!),
    input: (r) => r.tensor([2], 0.3, 0.9),
  },
  {
    name: "AutoGraph-converted native while",
    f: (x) => nativeWhile(x),
    input: () => f64(0.9),
  },
  {
    name: "AutoGraph-converted native for loop",
    f: (x) => nativeFor(x),
    input: (r) => r.tensor([2], 0.2, 0.8),
  },
  ...[0.6, -0.6].map(
    (at): Program => ({
      name: `inline cond (${at > 0 ? "then" : "else"} branch)`,
      f: (x) => sc.cond(sc.greater(sc.sum(x), 0), () => sc.sum(x.sin().mul(x).exp()), () => sc.sum(x.mul(x).mul(x.cos()))),
      input: (r) => r.tensor([2], at - 0.2, at + 0.2),
    }),
  ),
  {
    name: "loop inside an inline cond",
    f: (x) => sc.cond(sc.greater(sc.sum(x), 0), () => sc.sum(sc.whileLoop((i) => sc.less(i, 2), (i, v) => [i.add(1), step(v!)], [i32(0), x])[1]!), () => sc.sum(x.exp())),
    input: (r) => r.tensor([2], 0.2, 0.6),
  },
  {
    name: "a staged call given the same tensor twice",
    f: (x) => sc.sum(pairCall(x, x)),
    input: (r) => r.tensor([2], 0.2, 0.8),
  },
];

/** x -> sum(grad(f)(x) * u): the first derivative along u, a scalar to differentiate again. */
const along = (g: F, u: sc.Tensor): F => (x) => sc.sum(sc.mul(g(x), u));
const d1 = (f: F, u: sc.Tensor): F => along(sc.grad(f) as F, u);

/** Central differences in float64 of scalar `f` at `x`. */
function finiteDifferences(f: F, x: sc.Tensor, eps = 1e-5): number[] {
  const base = Array.from(x.dataSync());
  return base.map((_, i) => {
    const at = (delta: number) => {
      const v = base.slice();
      v[i]! += delta;
      return f(sc.tensor(v, "float64", x.shape as number[])).item() as number;
    };
    return (at(eps) - at(-eps)) / (2 * eps);
  });
}

const data = (t: sc.Tensor) => Array.from(t.dataSync());

for (const p of programs) {
  test(`second derivative through ${p.name}`, () => {
    const rng = new Rng(11);
    const x = p.input(rng);
    const u = rng.tensor(x.shape as number[], 0.5, 1.5);
    // H u, the reference: the eager tape (JS control flow under the tape) twice.
    const eager = data(sc.grad(d1(p.f, u))(x) as sc.Tensor);
    assertClose(eager, finiteDifferences(d1(p.f, u), x), 1e-6, `${p.name}: eager grad(grad) vs finite differences of the first derivative`);
    const staged = sc.stage(p.f, noAutograph);
    const ways: [string, () => sc.Tensor][] = [
      ["stage(grad(grad(f)))", () => sc.stage(sc.grad(d1(p.f, u)), noAutograph)(x) as sc.Tensor],
      ["stage(grad(stage(grad(f))))", () => sc.stage(sc.grad(along(sc.stage(sc.grad(p.f), noAutograph) as F, u)), noAutograph)(x) as sc.Tensor],
      ["grad(stage(grad(f)))", () => sc.grad(along(sc.stage(sc.grad(p.f), noAutograph) as F, u))(x) as sc.Tensor],
      ["grad(grad(stage(f)))", () => sc.grad(d1(staged, u))(x) as sc.Tensor],
      ["stage(grad(grad(stage(f))))", () => sc.stage(sc.grad(d1(staged, u)), noAutograph)(x) as sc.Tensor],
      ["hvp(f)", () => sc.hvp(p.f, x, u) as sc.Tensor],
      ["stage(hvp(f))", () => sc.stage((y: sc.Tensor) => sc.hvp(p.f, y, u) as sc.Tensor, noAutograph)(x)],
    ];
    for (const [way, run] of ways) {
      // Twice: the first call of a staged function interprets its graph, later ones compile it.
      for (let call = 0; call < 2; call++) assertClose(data(run()), eager, 1e-9, `${p.name}: ${way} (call ${call}) vs eager grad(grad)`);
    }
  });
}

for (const name of ["squaring until 5 (data-dependent trip count)", "several loop variables", "nested loops (the inner reads the outer's variable)"]) {
  const p = programs.find((q) => q.name === name)!;
  test(`third derivative through ${p.name}`, () => {
    const rng = new Rng(5);
    const x = p.input(rng);
    const u = rng.tensor(x.shape as number[], 0.5, 1.5);
    const w = rng.tensor(x.shape as number[], 0.5, 1.5);
    const second = d1(d1(p.f, u), w);
    const eager = data(sc.grad(second)(x) as sc.Tensor);
    assertClose(eager, finiteDifferences(second, x), 1e-6, `${p.name}: eager third derivative vs finite differences of the second`);
    const staged = sc.stage(p.f, noAutograph);
    const ways: [string, () => sc.Tensor][] = [
      ["stage(grad(grad(grad(f))))", () => sc.stage(sc.grad(second), noAutograph)(x) as sc.Tensor],
      ["stage(grad(stage(grad(grad(f)))))", () => sc.stage(sc.grad(along(sc.stage(sc.grad(d1(p.f, u)), noAutograph) as F, w)), noAutograph)(x) as sc.Tensor],
      ["grad(grad(grad(stage(f))))", () => sc.grad(d1(d1(staged, u), w))(x) as sc.Tensor],
    ];
    for (const [way, run] of ways) assertClose(data(run()), eager, 1e-9, `${p.name}: ${way} vs eager`);
  });
}

test("second derivative with respect to a variable an inline loop reads (nested tapes, staged and eager)", () => {
  const w = sc.variable(f64([[0.3, -0.2], [0.5, 0.4]]));
  const u = f64([[1, 0.5], [-0.3, 0.8]]);
  const loss = (x: sc.Tensor) => sc.sum(sc.whileLoop((i) => sc.less(i, 3), (i, v) => [i.add(1), sc.tanh(sc.matmul(v!, w))], [i32(0), x])[1]!);
  /** d/dw of sum(dloss/dw * u): the Hessian with respect to w along u. */
  const hessianAlong = (x: sc.Tensor) => {
    const outer = new sc.GradientTape();
    const along = outer.record(() => {
      const inner = new sc.GradientTape();
      const l = inner.record(() => loss(x));
      return sc.sum(sc.mul(inner.gradient(l, [w])[0]!, u));
    });
    return outer.gradient(along, [w])[0]!;
  };
  const x = f64([[0.5, 0.3]]);
  const eager = data(hessianAlong(x));
  // float64 central differences of the first derivative along u, in w
  const at = (delta: number) => {
    const saved = w.read();
    w.assign(saved.add(u.mul(delta)));
    const tape = new sc.GradientTape();
    const l = tape.record(() => loss(x));
    const g = data(tape.gradient(l, [w])[0]!);
    w.assign(saved);
    return g;
  };
  const plus = at(1e-5);
  const minus = at(-1e-5);
  assertClose(eager, plus.map((p, i) => (p - minus[i]!) / 2e-5), 1e-6, "eager vs finite differences");
  const staged = sc.stage(hessianAlong, noAutograph);
  for (let call = 0; call < 2; call++) assertClose(data(staged(x)), eager, 1e-9, `staged (call ${call}) vs eager`);
});
