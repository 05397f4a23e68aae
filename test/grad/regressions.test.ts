/**
 * Regressions of issue 11's graph AD points, each as reported: doubled gradients of an op
 * whose VJP reads its own output (1), `sc.stage(sc.grad(f))` through loops, calls and
 * recursion (2), results that depended on call history (3), arguments outside `argnums`
 * (4), and errors that named internal graphs instead of the user's function and line (5).
 * The sweeps (test/grad/last-op.test.ts, test/grad/seams.test.ts) cover the classes.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import * as sc from "../../src/api/index.js";
import { assertClose } from "../util/gradcheck.js";

const f64 = (v: sc.NestedArray) => sc.tensor(v, "float64");
const data = (t: sc.Tensor) => Array.from(t.dataSync(), Number);
const grow = (v: sc.Tensor) => v.mul(1.3).add(v.sin().mul(0.2));

/** The line of this file holding `marker` (error locations must name it). */
function lineOf(marker: string): number {
  const lines = readFileSync(fileURLToPath(import.meta.url), "utf8").split("\n");
  const i = lines.findIndex((l) => l.includes(marker) && !l.includes("lineOf("));
  assert.ok(i >= 0, `marker ${marker} not found`);
  return i + 1;
}

// ---------------------------------------------------------------------------------------
// 1. doubled gradients

test("1: the gradient of a staged exp or div (the VJP reads the output) is not doubled", () => {
  const x = sc.scalar(1.2, "float64");
  assert.equal(sc.grad(sc.stage((x: sc.Tensor) => sc.exp(x), { autograph: false }))(x).item(), Math.exp(1.2));
  assert.equal(sc.grad(sc.stage((x: sc.Tensor) => sc.div(x, 5), { autograph: false }))(x).item(), 0.2);
  const tanh = sc.stage((x: sc.Tensor) => sc.tanh(x), { autograph: false });
  const [value, g] = sc.valueAndGrad(tanh)(x);
  assert.equal(value.item(), Math.tanh(1.2));
  assertClose(data(g), [1 - Math.tanh(1.2) ** 2], 1e-15, "valueAndGrad");
  assertClose(data(sc.vjp(tanh, x)[1](sc.scalar(2, "float64"))[0]), [2 * (1 - Math.tanh(1.2) ** 2)], 1e-15, "vjp");
  assertClose(data(sc.jvp(tanh, [x], [sc.scalar(3, "float64")])[1]), [3 * (1 - Math.tanh(1.2) ** 2)], 1e-15, "jvp");
});

test("1: a staged tanh(x W) layer gives dW once, on the first (interpreted) and later (compiled) calls", () => {
  const w = sc.variable(f64([[0.3, -0.2], [0.5, 0.1]]));
  const x = f64([[1, 2], [3, -1]]);
  const layer = (x: sc.Tensor) => sc.tanh(sc.matmul(x, w));
  const tape0 = new sc.GradientTape();
  const want = data(tape0.gradient(tape0.record(() => sc.sum(layer(x))), w));
  const staged = sc.stage(layer, { autograph: false });
  for (let call = 0; call < 3; call++) {
    const tape = new sc.GradientTape();
    const loss = tape.record(() => sc.sum(staged(x)));
    assertClose(data(tape.gradient(loss, w)), want, 1e-14, `dW, call ${call}`);
  }
});

test("1: a staged function returning one value twice, or its input, counts each use once", () => {
  const x = f64([0.5, -0.3]);
  const twice = sc.stage((x: sc.Tensor) => { const y = x.exp(); return [y, y]; }, { autograph: false });
  const g = sc.grad((x: sc.Tensor) => { const [a, b] = twice(x) as unknown as sc.Tensor[]; return sc.sum(a!.mul(2).add(b!)); })(x);
  assertClose(data(g), data(x.exp().mul(3)), 1e-15, "d/dx (2 e^x + e^x)");
  const same = sc.stage((x: sc.Tensor) => x, { autograph: false });
  assertClose(data(sc.grad((x: sc.Tensor) => sc.sum(same(x).mul(x)))(x)), data(x.mul(2)), 1e-15, "d/dx x*x through a passthrough");
});

test("1: a tape entry whose outputs repeat a tensor, or pass an input through, gets its cotangent once", () => {
  const x = f64([1, 2]);
  const y = sc.exp(x);
  const seen: (sc.Tensor | null)[][] = [];
  // An entry x -> (y, y, x) whose VJP passes the cotangent of its first output to x.
  const def = { ...sc.getOp("identity"), name: "aliasing", vjp: (_ctx: unknown, cts: (sc.Tensor | null)[]) => (seen.push(cts), [cts[0] ?? null]) };
  const tape = new sc.GradientTape();
  const loss = tape.record(() => {
    tape.watch(x);
    tape.recordOp(def as never, [x], {}, [y, y, x]);
    return sc.sum(y.mul(3)).add(sc.sum(x));
  });
  const g = tape.gradient(loss, x);
  assert.equal(seen.length, 1);
  assert.ok(seen[0]![0] !== null && seen[0]![1] === null && seen[0]![2] === null, "only the first slot of y gets its cotangent");
  assertClose(data(g), [3 + 1, 3 + 1], 1e-15, "cotangent of y (3) through the entry, plus x's own (1)");
});

// ---------------------------------------------------------------------------------------
// 2. sc.stage(sc.grad(f)) through loops, calls and recursion

const loopF = sc.stage((x: sc.Tensor) => sc.whileLoop((v) => sc.less(v, 5), (v) => [grow(v)], [x])[0]!, { autograph: false });
const loopEager = (x: sc.Tensor) => { let v = x; while ((v.item() as number) < 5) v = grow(v); return v; };

test("2: sc.stage(sc.grad(f)) of a staged data-dependent loop, first and second order", () => {
  const x = sc.scalar(0.9, "float64");
  const want = sc.grad(loopEager)(x).item() as number;
  assertClose([sc.stage(sc.grad(loopF), { autograph: false })(x).item() as number], [want], 1e-12, "first order");
  const want2 = sc.grad(sc.grad(loopEager))(x).item() as number;
  assertClose([sc.stage(sc.grad(sc.grad(loopF)), { autograph: false })(x).item() as number], [want2], 1e-10, "second order");
});

test("2: staged gradients through calls to helpers with a while, a scan, a converted for...of, and a recursion with a loop", () => {
  const scanHelper = sc.stage((xs: sc.Tensor) => sc.scan((c, x) => { const h = sc.tanh(c[0]!.add(x)); return [[h], h]; }, [sc.zeros([2], "float64")], xs)[1], { autograph: false });
  const forOf = sc.stage(sc.autograph(function rows(xs: sc.Tensor) { let h = sc.zeros([2], "float64"); for (const x of xs as unknown as sc.Tensor[]) h = sc.tanh(h.add(x)); return h; }, { scope: { sc } }));
  const rec: (n: sc.Tensor, x: sc.Tensor) => sc.Tensor = sc.stage(
    (n: sc.Tensor, x: sc.Tensor): sc.Tensor => sc.cond(sc.lessEqual(n, 0), () => x, () => rec(n.sub(1), sc.whileLoop((i, v) => sc.less(i, 2), (i, v) => [i.add(1), v!.sin()], [sc.scalar(0, "int32"), x])[1]!)),
    { autograph: false },
  );
  const xs = f64([[0.1, 0.2], [0.3, -0.4], [0.5, 0.6]]);
  const rows = (xs: sc.Tensor) => { let h = sc.zeros([2], "float64"); for (const x of sc.unstack(xs)) h = sc.tanh(h.add(x)); return h; };
  const cases: [string, (x: sc.Tensor) => sc.Tensor, (x: sc.Tensor) => sc.Tensor, sc.Tensor][] = [
    ["while", (x) => loopF(x), loopEager, sc.scalar(0.9, "float64")],
    ["scan", (x) => scanHelper(x), (x) => sc.stack(sc.unstack(x).reduce<sc.Tensor[]>((hs, r) => [...hs, sc.tanh((hs[hs.length - 1] ?? sc.zeros([2], "float64")).add(r))], [])), xs],
    ["for...of", (x) => forOf(x), rows, xs],
    ["recursion with a loop", (x) => rec(sc.scalar(2, "float64"), x), (x) => x.sin().sin().sin().sin(), f64([0.3, 0.7])],
  ];
  for (const [name, f, eager, x] of cases) {
    const g = sc.stage(sc.grad((x: sc.Tensor) => sc.sum(f(x))), { autograph: false });
    const want = data(sc.grad((x: sc.Tensor) => sc.sum(eager(x)))(x));
    for (let call = 0; call < 2; call++) assertClose(data(g(x)), want, 1e-12, `${name}, call ${call}`);
  }
});

test("2: a helper reading a non-trainable variable, or whose VJP makes an eager index map, differentiates under a staged gradient", () => {
  const scale = sc.variable(f64([0.5, 2]), { trainable: false });
  const scaled = sc.stage((x: sc.Tensor) => x.mul(scale).sin(), { autograph: false });
  const padded = sc.stage((x: sc.Tensor) => sc.pad(x, [[1, 1]], 0, "reflect").square(), { autograph: false });
  const x = f64([0.3, 0.4]);
  const want = data(sc.grad((x: sc.Tensor) => sc.sum(x.mul(scale).sin()))(x));
  assertClose(data(sc.grad((x: sc.Tensor) => sc.sum(scaled(x)))(x)), want, 1e-15, "eager grad of a call");
  assertClose(data(sc.stage(sc.grad((x: sc.Tensor) => sc.sum(scaled(x))), { autograph: false })(x)), want, 1e-15, "staged grad of a call");
  const x3 = f64([0.3, 0.4, 0.7]);
  const wantPad = data(sc.grad((x: sc.Tensor) => sc.sum(sc.pad(x, [[1, 1]], 0, "reflect").square()))(x3));
  assertClose(data(sc.stage(sc.grad((x: sc.Tensor) => sc.sum(padded(x))), { autograph: false })(x3)), wantPad, 1e-15, "pad reflect");
});

// ---------------------------------------------------------------------------------------
// 3. results that depended on call history

const treeW = sc.variable(f64([[0.5, -0.3], [0.2, 0.4]]));
const tree: (i: sc.Tensor, x: sc.Tensor) => sc.Tensor = sc.stage(
  (i: sc.Tensor, x: sc.Tensor): sc.Tensor =>
    sc.cond(
      sc.greaterEqual(i.mul(2).add(1), 7),
      () => sc.tanh(sc.gather(x, sc.cast(i, "int32"), 0)),
      () => sc.tanh(sc.matmul(tree(i.mul(2).add(1), x).add(tree(i.mul(2).add(2), x)).reshape([1, 2]), treeW).reshape([2]).add(sc.gather(x, sc.cast(i, "int32"), 0))),
    ),
  { outputSignature: sc.spec([2], "float64"), autograph: false },
);
const treeEager = (i: number, x: sc.Tensor): sc.Tensor => {
  const xi = sc.gather(x, sc.scalar(i, "int32"), 0);
  if (2 * i + 1 >= 7) return sc.tanh(xi);
  return sc.tanh(sc.matmul(treeEager(2 * i + 1, x).add(treeEager(2 * i + 2, x)).reshape([1, 2]), treeW).reshape([2]).add(xi));
};

test("3: grad of grad of a staged tree recursion is the same on every call, after a first-order gradient", () => {
  const x = f64([[0.1, 0.2], [0.3, -0.4], [0.5, 0.6], [-0.7, 0.1], [0.2, 0.3], [0.4, -0.5], [0.6, 0.7]]);
  const v = f64([[1, -1], [0.5, 2], [1, 1], [-1, 0.5], [2, 1], [0.3, -0.2], [1, 0.7]]);
  const second = (f: (x: sc.Tensor) => sc.Tensor) => sc.grad((y: sc.Tensor) => sc.sum(sc.grad((z: sc.Tensor) => sc.sum(f(z)))(y).mul(v)));
  const want = data(second((x) => treeEager(0, x))(x));
  sc.grad((x: sc.Tensor) => sc.sum(tree(f64(0), x)))(x);
  for (let call = 0; call < 3; call++) assertClose(data(second((x) => tree(f64(0), x))(x)), want, 1e-12, `call ${call}`);
  const [, jt] = sc.jvp((x: sc.Tensor) => tree(f64(0), x), [x], [v]);
  const [, jtEager] = sc.jvp((x: sc.Tensor) => treeEager(0, x), [x], [v]);
  assertClose(data(jt as sc.Tensor), data(jtEager as sc.Tensor), 1e-12, "jvp after them");
});

test("3: after sc.jvp, grad of grad of a loop calling a staged helper (and jvp again) still unpack their records", () => {
  const helper = sc.stage((x: sc.Tensor) => x.sin().mul(x).exp(), { autograph: false });
  const f = sc.stage((x: sc.Tensor) => sc.whileLoop((i) => sc.less(i, 3), (i, v) => [i.add(1), helper(v!).mul(0.5)], [sc.scalar(0, "int32"), x])[1]!, { autograph: false });
  const eager = (x: sc.Tensor) => { let v = x; for (let i = 0; i < 3; i++) v = v.sin().mul(v).exp().mul(0.5); return v; };
  const x = f64([0.2, -0.4]);
  const t = f64([1, 0.5]);
  const jvpOf = (g: (x: sc.Tensor) => sc.Tensor) => data(sc.jvp(g, [x], [t])[1] as sc.Tensor);
  const gradGrad = (g: (x: sc.Tensor) => sc.Tensor) => data(sc.grad((y: sc.Tensor) => sc.sum(sc.grad((z: sc.Tensor) => sc.sum(g(z)))(y)))(x));
  for (let call = 0; call < 2; call++) {
    assertClose(jvpOf(f), jvpOf(eager), 1e-12, `jvp, call ${call}`);
    assertClose(gradGrad(f), gradGrad(eager), 1e-12, `grad of grad, call ${call}`);
  }
});

// ---------------------------------------------------------------------------------------
// 4. arguments outside argnums

test("4: grad passes the arguments it does not differentiate through untouched", () => {
  const seen: unknown[] = [];
  const f = (x: sc.Tensor, k: number, flags: { square: boolean }, perm: number[]) => {
    seen.push(k, flags, perm);
    const y = sc.transpose(x, perm).mul(k);
    return sc.sum(flags.square ? y.square() : y);
  };
  const x = f64([[1, 2, 3], [4, 5, 6]]);
  const flags = { square: false };
  const perm = [1, 0];
  assertClose(data(sc.grad(f, { argnums: 0 })(x, 3, flags, perm)), [3, 3, 3, 3, 3, 3], 0, "d/dx");
  assert.equal(seen[0], 3);
  assert.equal(seen[1], flags);
  assert.equal(seen[2], perm);
  const staged = sc.stage(f, { autograph: false });
  const g = sc.grad(staged, { argnums: 0 });
  for (let call = 0; call < 3; call++) assertClose(data(g(x, 3, flags, perm)), [3, 3, 3, 3, 3, 3], 0, `staged, call ${call}`);
  assert.equal(staged.traceCount, 1, "one trace: the JS arguments keep their values");
  const [value, grads] = sc.valueAndGrad(staged, { argnums: [0] })(x, 2, { square: true }, perm);
  assert.equal(value.item(), 4 * 91);
  assertClose(data((grads as sc.Tensor[])[0]!), data(x.mul(8)), 0, "d/dx sum((2x)^2)");
});

// ---------------------------------------------------------------------------------------
// 5. errors name the user's function and line

test("5: an error while differentiating a staged loop names the function and the loop's line, no internal graph", () => {
  const growing = sc.stage(
    function growing(x: sc.Tensor) {
      return sc.sum(sc.whileLoop((v) => sc.less(sc.sum(v), 10), (v) => [sc.concat([v, v.mul(1.1)], 0)], [x], { shapeInvariants: [[null]] })[0]!); // LOOP-LINE
    },
    { autograph: false },
  );
  const x = f64([0.5, 0.7]);
  for (const run of [() => sc.grad(growing)(x), () => sc.stage(sc.grad(growing), { autograph: false })(x)]) {
    assert.throws(run, (e: unknown) => {
      assert.ok(e instanceof sc.StagecraftError, String(e));
      assert.match(e.message, /in the gradient of staged function "growing"/);
      assert.doesNotMatch(e.message, /_forward|_backward|_vjp|staged_\d/);
      assert.equal(e.location?.line, lineOf("LOOP-LINE"));
      // The cause is the loop variable changing shape, not an inputSignature (there is none).
      assert.ok(e instanceof sc.ShapeError, String(e));
      assert.match(e.message, /^whileLoop: loop variable 0 changes shape across iterations \(float64\[2\] at the start, float64\[\?\] as its shapeInvariants allow\)/);
      assert.match(e.message, /the gradient of concat in the loop's body/);
      assert.doesNotMatch(e.message, /inputSignature/);
      return true;
    });
  }
});

test("5: an error raised when a staged gradient runs names the function differentiated, as one raised while tracing it does", () => {
  const pick = sc.stage(
    function pick(x: sc.Tensor, i: sc.Tensor) {
      return sc.sum(sc.gather(x.exp(), i, 0)); // RUNTIME-PICK
    },
    { autograph: false },
  );
  const looped = sc.stage(
    function looped(x: sc.Tensor, i: sc.Tensor) {
      const [, acc] = sc.whileLoop((k, _a) => sc.less(k, 2), (k, a) => [k.add(1), a.add(sc.sum(sc.gather(x.sin(), i, 0)))], [sc.scalar(0, "int32"), sc.scalar(0, "float64")]); // RUNTIME-LOOP
      return acc!;
    },
    { autograph: false },
  );
  const branched = sc.stage(
    function branched(x: sc.Tensor, i: sc.Tensor) {
      return sc.cond(sc.greater(sc.sum(x), 0), () => sc.sum(sc.gather(x.square(), i, 0)), () => sc.sum(x)); // RUNTIME-COND
    },
    { autograph: false },
  );
  const x = f64([0.5, 0.7]);
  const good = sc.tensor([1], "int32");
  const bad = sc.tensor([5], "int32");
  for (const [f, name, marker] of [[pick, "pick", "RUNTIME-PICK"], [looped, "looped", "RUNTIME-LOOP"], [branched, "branched", "RUNTIME-COND"]] as const) {
    const g = sc.stage(sc.grad(f), { autograph: false });
    g(x, good); // traced and run once: the next error is raised by the compiled graph as it runs
    assert.throws(
      () => g(x, bad),
      (e: unknown) => {
        assert.ok(e instanceof sc.IndexError, String(e));
        assert.match(e.message, new RegExp(`in the gradient of staged function "${name}"`), name);
        assert.equal(e.message.match(/in the gradient of/g)?.length, 1, "named once");
        assert.equal(e.location?.line, lineOf(marker), name);
        return true;
      },
    );
    // The function itself (no gradient) raises the error without the note.
    assert.throws(
      () => f(x, bad),
      (e: unknown) => e instanceof sc.IndexError && !/in the gradient of/.test(e.message) && e.location?.line === lineOf(marker),
    );
  }
});

test("5: a kernel error in the forward of a gradient names the op's line and the function", () => {
  const pick = sc.stage(
    function pick(x: sc.Tensor, i: sc.Tensor) {
      return sc.sum(sc.gather(x.exp(), i, 0)); // GATHER-LINE
    },
    { autograph: false },
  );
  assert.throws(
    () => sc.grad(pick)(f64([0.5, 0.7]), sc.tensor([5], "int32")),
    (e: unknown) => {
      assert.ok(e instanceof sc.IndexError, String(e));
      assert.match(e.message, /in the gradient of staged function "pick"/);
      assert.equal(e.location?.line, lineOf("GATHER-LINE"));
      return true;
    },
  );
});

test("a staged function returning a variable as is sees its assignments, and its gradient reaches it", () => {
  const v = sc.variable(f64([1, 2]));
  const f = sc.stage(() => v, { autograph: false });
  assert.deepEqual(data(f()), [1, 2]);
  v.assign(f64([5, 6]));
  assert.deepEqual(data(f()), [5, 6]);
  const tape = new sc.GradientTape();
  const loss = tape.record(() => sc.sum(sc.mul(f(), 3)));
  assert.deepEqual(data(tape.gradient(loss, v)), [3, 3]);
});

test("a variable passed to applyOp directly is read: tapes see it, staged code reads its current value", () => {
  const v = sc.variable(f64([[1, 2], [3, 4]]));
  const tape = new sc.GradientTape();
  const loss = tape.record(() => sc.sum(sc.applyOp(sc.getOp("stackRead"), [v, sc.scalar(1, "int32")], {})[0]!.square()));
  assert.deepEqual(data(tape.gradient(loss, v)), [0, 0, 6, 8]);
  const read = sc.stage(() => sc.applyOp(sc.getOp("stackRead"), [v, sc.scalar(0, "int32")], {})[0]!, { autograph: false });
  assert.deepEqual(data(read()), [1, 2]);
  v.assign(f64([[7, 8], [9, 10]]));
  assert.deepEqual(data(read()), [7, 8]);
});

test("a recursive staged function may close over a small eager constant", () => {
  const step = sc.tensor([0.5, 0.25], "float64");
  const rec: (n: sc.Tensor, x: sc.Tensor) => sc.Tensor = sc.stage(
    (n: sc.Tensor, x: sc.Tensor): sc.Tensor => sc.cond(sc.lessEqual(n, 0), () => x, () => rec(n.sub(1), x.mul(step).add(sc.scalar(1, "float64")))),
    { autograph: false },
  );
  const x = f64([1, 2]);
  assert.deepEqual(data(rec(f64(2), x)), data(x.mul(step).add(1).mul(step).add(1)));
  assertClose(data(sc.grad((x: sc.Tensor) => sc.sum(rec(f64(2), x)))(x)), data(step.mul(step)), 1e-15, "d/dx");
});
