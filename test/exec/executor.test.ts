import { test } from "node:test";
import assert from "node:assert/strict";
import * as sc from "../../src/api/index.js";
import { compiledExecutor, createCompiledExecutor, interpretExecutor, compileGraph, compiledSpecializations, setDefaultExecutor } from "../../src/api/internals.js";
import { FunctionLibrary, Graph, type ValueType } from "../../src/graph/ir.js";
import { Rng } from "../util/rng.js";
import { assertMutateExample } from "../util/mutate-example.js";
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";

/** Same dtype, shape and bit-identical values (NaN equals NaN, -0 differs from +0). */
function assertSame(got: sc.Tensor, want: sc.Tensor, what = ""): void {
  assert.equal(got.dtype, want.dtype, `${what} dtype`);
  assert.deepEqual(got.shape, want.shape, `${what} shape`);
  const a = got.dataSync(),
    b = want.dataSync();
  for (let i = 0; i < b.length; i++) {
    if (!Object.is(a[i], b[i])) assert.fail(`${what} element ${i}: compiled ${a[i]} vs interpreter ${b[i]}`);
  }
}

// In this file every staged call compiles at once (the default executor interprets a
// signature's first call and compiles from the second on; tested at the end).
const compileNow = createCompiledExecutor(0);
setDefaultExecutor(compileNow);

/** Runs `fn` staged with the compiled executor and with the interpreter; both must agree bit for bit. */
function agree(fn: (...xs: sc.Tensor[]) => sc.Tensor | sc.Tensor[], args: sc.Tensor[], what = ""): sc.Tensor[] {
  const f = sc.stage(fn);
  const cf = f.concrete(...args);
  const compiled = cf.callFlat(args, compileNow);
  const interpreted = cf.callFlat(args, interpretExecutor);
  assert.equal(compiled.length, interpreted.length);
  compiled.forEach((t, i) => assertSame(t, interpreted[i]!, `${what} output ${i}`));
  // and the default executor (the compiled one, registered by importing exec/compile.ts)
  const viaStage = f(...args);
  const list = Array.isArray(viaStage) ? viaStage : [viaStage];
  list.forEach((t, i) => assertSame(t, interpreted[i]!, `${what} staged call output ${i}`));
  return compiled;
}

const rng = new Rng(7);

test("elementwise chains (fused into one loop) match the interpreter", () => {
  const x = rng.tensor([3, 4], -2, 2, "float32");
  const y = rng.tensor([3, 4], -2, 2, "float32");
  agree((a, b) => sc.tanh(a.mul(b).add(1)).sub(sc.exp(a.mul(0.5))).mul(b).div(sc.square(a).add(0.25)), [x, y], "f32 chain");
  agree((a, b) => sc.sigmoid(sc.relu(a).sub(b)).add(sc.sqrt(sc.abs(b))), [x, y], "relu/sigmoid chain");
  const xd = rng.tensor([5], -2, 2);
  agree((a) => sc.log1p(sc.square(a)).mul(sc.cos(a)).add(sc.erf(a)), [xd], "f64 chain");
  const i = sc.tensor([7, -3, 12, 0, 5], "int32");
  const j = sc.tensor([2, 2, -5, 3, 4], "int32");
  agree((a, b) => sc.floorDiv(a.mul(3), b).add(sc.mod(a, b)).sub(1), [i, j], "int32 chain (intExpr templates)");
  agree((a, b) => sc.logicalAnd(sc.greater(a, b), sc.less(a, 10)), [i, j], "bool chain");
  // a value used twice (inside and outside the fused group) and several outputs
  agree((a, b) => {
    const t = a.mul(b);
    return [t, sc.exp(t).add(t), sc.sum(t, 1)];
  }, [x, y], "multi-output group");
});

test("broadcasting in compiled loops matches the interpreter", () => {
  const cases: [number[], number[]][] = [
    [[2, 3], [3]],
    [[4, 1, 3], [2, 1]],
    [[1], [2, 3]],
    [[], [3, 2]],
    [[3, 1], [1, 4]],
    [[2, 1, 2, 1], [1, 3, 1, 5]],
    [[0, 3], [3]],
  ];
  for (const [sa, sb] of cases) {
    const a = rng.tensor(sa, -3, 3, "float32");
    const b = rng.tensor(sb, -3, 3, "float32");
    agree((p, q) => p.add(q).mul(q).sub(sc.maximum(p, q)), [a, b], `[${sa}] with [${sb}]`);
    agree((p, q) => sc.where(sc.greater(p, q), p, q.mul(2)), [a, b], `where [${sa}] [${sb}]`);
  }
  const u = sc.tensor([250, 3, 7], "uint8");
  agree((p) => p.add(sc.tensor([10], "uint8")).mul(sc.tensor(2, "uint8")), [u], "uint8 wraps");
  const big = sc.tensor([2147483647, -5], "int32");
  agree((p) => p.add(sc.tensor(1, "int32")).mul(sc.tensor(3, "int32")), [big], "int32 wraps");
  const nan = sc.tensor([NaN, -0, 0, Infinity, -Infinity, 1e-40], "float32");
  agree((p) => sc.maximum(p, 0).add(sc.minimum(p, -0)).mul(p), [nan], "NaN/-0/Inf/denormals");
});

test("matmuls, reductions and kernels in compiled code match the interpreter", () => {
  const shapes: [number, number, number][] = [
    [1, 2, 10],
    [32, 10, 10],
    [4, 40, 4],
    [3, 300, 5],
    [1, 64, 64],
    // the executor's gemm: 4-row tiles with row, 8-column, 4-column and scalar-column tails
    [7, 13, 21],
    [9, 40, 30],
    [32, 64, 64],
    [32, 256, 256],
    [8, 300, 200],
  ];
  for (const [m, k, n] of shapes) {
    for (const dtype of ["float32", "float64"] as sc.DType[]) {
      const a = rng.tensor([m, k], -1, 1, dtype);
      const b = rng.tensor([k, n], -1, 1, dtype);
      const bt = rng.tensor([n, k], -1, 1, dtype);
      const at = rng.tensor([k, m], -1, 1, dtype);
      agree((x, y) => sc.matmul(x, y), [a, b], `matmul ${m}x${k}x${n} ${dtype}`);
      agree((x, y) => sc.matmul(x, y, { transposeB: true }), [a, bt], `matmul^T ${m}x${k}x${n} ${dtype}`);
      agree((x, y) => sc.matmul(x, y, { transposeA: true }), [at, b], `matmul A^T ${m}x${k}x${n} ${dtype}`);
    }
  }
  // products computed by the executor's WebAssembly gemm: operands that are constants,
  // variables, graph inputs or planned buffers; results planned or returned
  const w = sc.variable(rng.tensor([16, 40], -1, 1, "float32"));
  const xs = rng.tensor([8, 16], -1, 1, "float32");
  const out = agree(
    (x) => {
      const h = sc.tanh(sc.matmul(x, w)); // variable operand, planned result
      const e = sc.matmul(h, sc.eye(40, 24)); // constant operand (computed once)
      const r = sc.matmul(sc.relu(h), sc.transpose(sc.matmul(x, w)), { transposeA: false });
      return [sc.matmul(e, sc.ones([24, 12])).add(1), r, sc.matmul(x, w)]; // returned results
    },
    [xs],
    "wasm gemm operands",
  );
  assert.equal(out.length, 3);
  const x = rng.tensor([3, 4, 5], -2, 2, "float32");
  for (const axes of [[0], [1], [2], [0, 1], [1, 2], [0, 2], [0, 1, 2]]) {
    agree((t) => [sc.sum(t, axes), sc.mean(t, axes, true), sc.max(t, axes), sc.min(t, axes), sc.prod(t, axes)], [x], `reductions over ${axes}`);
  }
  const b = sc.tensor([[true, false, true], [true, true, true]]);
  agree((t) => [sc.any(t, 1), sc.all(t, 0), sc.sum(t, 1)], [b], "bool reductions");
  const i = sc.tensor([[1, 2, 3], [4, 5, 6]], "int32");
  agree((t) => [sc.sum(t, 0), sc.mean(t, 1), sc.transpose(t), sc.reshape(t, [3, 2]).add(1), sc.concat([t, t], 0)], [i], "int kernels and views");
  agree((t) => sc.softmax(t.mul(2), -1), [x], "softmax");
});

test("control flow: cond and whileLoop with data-dependent trip counts, nested", () => {
  const collatz = (n: sc.Tensor) =>
    sc.whileLoop(
      (x, _steps) => sc.greater(x, 1),
      (x, steps) => [sc.cond(sc.equal(sc.mod(x, 2), 0), () => sc.floorDiv(x, 2), () => x.mul(3).add(1)), steps.add(1)],
      [n, sc.tensor(0, "int32")],
    );
  const f = sc.stage(collatz);
  for (const start of [1, 6, 27, 97]) {
    const args = [sc.tensor(start, "int32")];
    const [, steps] = f(args[0]!);
    const want = ((s) => {
      let k = 0;
      while (s > 1) {
        s = s % 2 === 0 ? s / 2 : 3 * s + 1;
        k++;
      }
      return k;
    })(start);
    assert.equal(steps!.item(), want, `collatz(${start})`);
    agree(collatz, args, `collatz ${start}`);
  }
  // a loop inside a branch, a branch inside a loop inside a loop
  const nested = (x: sc.Tensor, limit: sc.Tensor) =>
    sc.cond(
      sc.greater(sc.sum(x), 0),
      () =>
        sc.whileLoop(
          (v, i) => sc.less(i, limit),
          (v, i) => {
            const [inner] = sc.whileLoop((w, j) => sc.less(j, i), (w, j) => [w.mul(0.5).add(1), j.add(1)], [v, sc.tensor(0, "int32")]);
            return [sc.cond(sc.greater(sc.max(inner!), 3), () => inner!.sub(1), () => inner!.add(1)), i.add(1)];
          },
          [x, sc.tensor(0, "int32")],
        )[0]!,
      () => x.neg(),
    );
  agree(nested, [sc.tensor([1, 2, 3]), sc.tensor(4, "int32")], "nested, positive branch");
  agree(nested, [sc.tensor([-1, -2, 0.5]), sc.tensor(4, "int32")], "nested, negative branch");
  agree(nested, [sc.tensor([1, 2, 3]), sc.tensor(0, "int32")], "nested, zero iterations");
  // maxIterations
  agree((x) => sc.whileLoop((v) => sc.less(sc.sum(v), 1e9), (v) => [v.mul(2)], [x], { maxIterations: 5 })[0]!, [sc.tensor([1, 2])], "maxIterations");
});

test("values passed through regions keep their buffers alive; branch-dependent shapes", () => {
  // the cond returns an operand that lives in a planned buffer; what follows must not reuse
  // that buffer while the cond's result is still needed
  const passThrough = (x: sc.Tensor, p: sc.Tensor) => {
    const t = x.mul(2);
    const y = sc.cond(p, () => t, () => t.add(1));
    const z = sc.exp(x.add(3)).mul(x);
    const w = sc.whileLoop((v) => sc.less(sc.sum(v), -1e9), (v) => [v.mul(2)], [z.sub(1)])[0]!; // zero iterations
    return [y.add(z).add(w), y];
  };
  for (const p of [true, false]) agree(passThrough, [sc.tensor([0.5, -1, 2]), sc.tensor(p)], `pass-through ${p}`);
  // branches with different shapes: the result's shape is known only at run time
  const ragged = (x: sc.Tensor, p: sc.Tensor) => {
    const r = sc.cond(p, () => x.slice([0], [2]), () => x.mul(3));
    return [sc.sum(r.mul(r)), r.add(1)];
  };
  for (const p of [true, false]) {
    const out = agree(ragged, [sc.tensor([1, 2, 3]), sc.tensor(p)], `ragged ${p}`);
    assert.deepEqual(out[1]!.shape, p ? [2] : [3]);
  }
});

test("a loop whose shapes change per iteration runs through the generic path", () => {
  const grow = (x: sc.Tensor, n: sc.Tensor) =>
    sc.whileLoop((v, i) => sc.less(i, n), (v, i) => [sc.concat([v, v.slice([0], [1]).add(1)], 0), i.add(1)], [x, sc.tensor(0, "int32")], {
      shapeInvariants: [[null], null],
    });
  const f = sc.stage(grow);
  const out = f(sc.tensor([5]), sc.tensor(4, "int32")) as sc.Tensor[];
  assert.deepEqual(out[0]!.arraySync(), [5, 6, 6, 6, 6].map((v, i) => (i === 0 ? 5 : 6)));
  const res = agree(grow, [sc.tensor([1, 2]), sc.tensor(3, "int32")], "growing loop");
  assert.deepEqual(res[0]!.shape, [5]);
  // and what follows the loop depends on its (run-time) shape
  agree((x, n) => sc.sum(grow(x, n)[0]!.mul(2)), [sc.tensor([1, 2]), sc.tensor(3, "int32")], "after a growing loop");
});

test("staged functions calling staged functions become calls compiled natively", () => {
  const inner = sc.stage((x: sc.Tensor) => sc.tanh(x).mul(2));
  const outer = (x: sc.Tensor) => inner(x.add(1)).add(inner(x));
  const f = sc.stage(outer);
  const x = rng.tensor([2, 3], -1, 1, "float32");
  assert.ok(f.concrete(x).graph.nodes.some((n) => n.op === "call"), "the trace has call nodes");
  agree(outer, [x], "calls");
});

const f32: ValueType = { dtype: "float32", shape: [] };

/** fact(n) = n <= 1 ? 1 : n * fact(n - 1), written directly in the IR (a recursive library function). */
function factorialProgram(): { graph: Graph; library: FunctionLibrary } {
  const lib = new FunctionLibrary();
  const fact = new Graph("fact");
  const n = fact.addInput(f32, "n");
  const one = fact.addNode("fill", [], { shape: [], dtype: "float32", value: 1 }, [f32]).outputs[0]!;
  const pred = fact.addNode("lessEqual", [n, one], {}, [{ dtype: "bool", shape: [] }]).outputs[0]!;
  const thenG = new Graph("then");
  thenG.addInput(f32, "n");
  const t1 = thenG.addInput(f32, "one");
  thenG.setOutputs([t1]);
  const elseG = new Graph("else");
  const en = elseG.addInput(f32, "n");
  const e1 = elseG.addInput(f32, "one");
  const nm1 = elseG.addNode("sub", [en, e1], {}, [f32]).outputs[0]!;
  const rec = elseG.addNode("call", [nm1], { callee: "fact" }, [f32]).outputs[0]!;
  elseG.setOutputs([elseG.addNode("mul", [en, rec], {}, [f32]).outputs[0]!]);
  const c = fact.addNode("cond", [pred, n, one], {}, [f32], [thenG, elseG]).outputs[0]!;
  fact.setOutputs([c]);
  lib.add(fact);
  const main = new Graph("main");
  const x = main.addInput(f32, "x");
  const r = main.addNode("call", [x], { callee: "fact" }, [f32]).outputs[0]!;
  main.setOutputs([main.addNode("add", [r, x], {}, [f32]).outputs[0]!]);
  return { graph: main, library: lib };
}

test("a recursive library function built by hand runs compiled (re-entrant instances)", () => {
  const { graph, library } = factorialProgram();
  for (const n of [0, 1, 5, 10]) {
    const want = Array.from({ length: n }, (_, i) => i + 1).reduce((a, b) => a * b, 1) + n;
    const got = compileNow(graph, [sc.scalar(n)], library)[0]!;
    assert.equal(got.item(), want, `fact(${n}) + ${n}`);
    assertSame(got, interpretExecutor(graph, [sc.scalar(n)], library)[0]!, `fact ${n}`);
  }
  // mutual recursion with a vector argument: even(v) / odd(v) on v[0]
  const vec: ValueType = { dtype: "float32", shape: [2] };
  const lib = new FunctionLibrary();
  const mk = (name: string, other: string, base: number) => {
    const g = new Graph(name);
    const v = g.addInput(vec, "v");
    const zero = g.addNode("fill", [], { shape: [2], dtype: "float32", value: 0 }, [vec]).outputs[0]!;
    const first = g.addNode("sum", [g.addNode("mul", [v, g.addNode("constant", [], { dtype: "float32", shape: [2], values: [1, 0] }, [vec]).outputs[0]!], {}, [vec]).outputs[0]!], { axes: [0], keepDims: false }, [f32]).outputs[0]!;
    const zeroS = g.addNode("fill", [], { shape: [], dtype: "float32", value: 0 }, [f32]).outputs[0]!;
    const pred = g.addNode("lessEqual", [first, zeroS], {}, [{ dtype: "bool", shape: [] }]).outputs[0]!;
    const thenG = new Graph("then");
    thenG.addInput(vec, "v");
    const tz = thenG.addInput(vec, "z");
    thenG.setOutputs([thenG.addNode("add", [tz, thenG.addNode("fill", [], { shape: [2], dtype: "float32", value: base }, [vec]).outputs[0]!], {}, [vec]).outputs[0]!]);
    const elseG = new Graph("else");
    const ev = elseG.addInput(vec, "v");
    elseG.addInput(vec, "z");
    const dec = elseG.addNode("sub", [ev, elseG.addNode("constant", [], { dtype: "float32", shape: [2], values: [1, 0] }, [vec]).outputs[0]!], {}, [vec]).outputs[0]!;
    const r = elseG.addNode("call", [dec], { callee: other }, [vec]).outputs[0]!;
    elseG.setOutputs([elseG.addNode("add", [r, ev], {}, [vec]).outputs[0]!]);
    g.setOutputs([g.addNode("cond", [pred, v, zero], {}, [vec], [thenG, elseG]).outputs[0]!]);
    lib.add(g);
    return g;
  };
  const even = mk("even", "odd", 1);
  mk("odd", "even", 0);
  for (const k of [0, 3, 4, 7]) {
    const x = sc.tensor([k, 0.5]);
    const c = compileNow(even, [x], lib)[0]!;
    assertSame(c, interpretExecutor(even, [x], lib)[0]!, `even(${k})`);
    assert.equal(c.dataSync()[0], (k % 2 === 0 ? 1 : 0) + (k * (k + 1)) / 2);
  }
});

test("variables: the mutate() example gives 1.0, then 2.0 eagerly, then 3.0", () => {
  assertMutateExample();
  // values assigned inside compiled code are fresh storage: later calls do not change them
  const w = sc.variable([1, 2]);
  const step = sc.stage((x: sc.Tensor) => {
    w.assign(w.read().mul(x).add(1));
    return w.read().mul(10);
  });
  const kept = step(sc.tensor([2, 3]));
  const snapshot = w.read();
  assert.deepEqual(snapshot.arraySync(), [3, 7]);
  step(sc.tensor([5, 5]));
  assert.deepEqual(snapshot.arraySync(), [3, 7], "an assigned value is not overwritten by the next call");
  assert.deepEqual(kept.arraySync(), [30, 70]);
  assert.deepEqual(w.arraySync(), [16, 36]);
});

test("buffers are reused across calls without corrupting returned outputs", () => {
  const f = sc.stage((x: sc.Tensor, y: sc.Tensor) => {
    const t = sc.tanh(x.mul(y)); // intermediate in a planned buffer
    const u = t.add(1);
    return { a: u.mul(2), view: sc.reshape(u, [6]), same: x, again: u, red: sc.sum(t.mul(3), 0) };
  });
  const x1 = sc.tensor([[1, 2, 3], [4, 5, 6]]);
  const y1 = sc.tensor([0.1, 0.2, 0.3]);
  const first = f(x1, y1);
  const copy = Object.fromEntries(Object.entries(first).map(([k, t]) => [k, (t as sc.Tensor).arraySync()]));
  const second = f(sc.tensor([[9, 9, 9], [9, 9, 9]]), sc.tensor([1, 1, 1]));
  for (const [k, t] of Object.entries(first)) assert.deepEqual((t as sc.Tensor).arraySync(), copy[k], `first result's ${k} unchanged`);
  assert.notDeepEqual(second.a.arraySync(), copy.a);
  assert.equal(first.same, first.same);
  // a product computed in WebAssembly memory and returned stays intact too
  const w = sc.tensor(Array.from({ length: 64 * 32 }, (_, i) => Math.sin(i)), "float32", [64, 32]);
  const g = sc.stage((v: sc.Tensor) => {
    const h = sc.matmul(v, w);
    return [h, sc.matmul(sc.tanh(h), sc.transpose(w))];
  });
  const v1 = sc.ones([2, 64]);
  g(v1);
  const [h1, k1] = g(v1);
  const saved = [h1!.arraySync(), k1!.arraySync()];
  g(sc.full([2, 64], 3));
  assert.deepEqual([h1!.arraySync(), k1!.arraySync()], saved);
  // a product's operand that is a view of a planned buffer is read afresh on every call
  const wv = sc.tensor(Array.from({ length: 16 * 24 }, (_, i) => Math.cos(i)), "float32", [16, 24]);
  const viewed = (t: sc.Tensor) => sc.matmul(sc.reshape(sc.tanh(t), [8, 16]), wv);
  const gv = sc.stage(viewed);
  for (let call = 0; call < 3; call++) {
    const t = rng.tensor([128], -2, 2, "float32");
    assertSame(gv(t), viewed(t), `view operand, call ${call}`);
  }
  // distinct outputs never share storage with each other across calls
  const third = f(x1, y1);
  assert.notEqual(third.a.dataSync().buffer, first.a.dataSync().buffer);
});

test("inputSignature graphs (unknown dims) are specialized per concrete shape", () => {
  const f = sc.stage((x: sc.Tensor) => sc.sum(sc.square(x).add(x), 1), { inputSignature: [sc.spec([null, 3])] });
  for (const rows of [1, 4, 7]) {
    const x = rng.tensor([rows, 3], -1, 1, "float32");
    const cf = f.concrete(x);
    assertSame(cf.callFlat([x], compileNow)[0]!, cf.callFlat([x], interpretExecutor)[0]!, `rows ${rows}`);
    const c = compileGraph(cf.graph, cf.library, [[rows, 3]]);
    assert.deepEqual(c.outs[0]!.shape, [rows]);
    assert.ok(!c.source.includes("runDynamic"), "fully static code: no generic per-node path");
  }
  assert.equal(f.traceCount, 1);
});

test("host calls, prints and run-time errors behave as in the interpreter", (t) => {
  const seen: number[][] = [];
  const f = sc.stage((x: sc.Tensor) => {
    const y = x.mul(2);
    const z = sc.hostCall((v: sc.Tensor) => {
      seen.push(Array.from(v.dataSync()));
      return v.add(100);
    }, sc.spec([2]), y) as sc.Tensor;
    sc.print("value", z);
    return z.sub(1);
  });
  const logs: unknown[][] = [];
  t.mock.method(console, "log", (...a: unknown[]) => logs.push(a));
  assert.deepEqual(f(sc.tensor([1, 2])).arraySync(), [101, 103]);
  assert.deepEqual(f(sc.tensor([3, 4])).arraySync(), [105, 107]);
  assert.deepEqual(seen, [[2, 4], [6, 8]], "host values are not overwritten by later calls");
  assert.equal(logs.length, 2);
  assert.equal(logs[0]![0], "value");
  const g = sc.stage((x: sc.Tensor, i: sc.Tensor) => sc.gather(x.add(1), i));
  assert.throws(() => g(sc.tensor([1, 2, 3]), sc.tensor([0, 5], "int32")), sc.IndexError);
});

test("the generated code is specialized: loops and bound kernels, no per-node dispatch", () => {
  const f = sc.stage((x: sc.Tensor, w: sc.Tensor) => sc.relu(sc.matmul(x, w).add(1)).mul(2));
  const x = sc.ones([2, 3]),
    w = sc.ones([3, 4]);
  const cf = f.concrete(x, w);
  const c = compileGraph(cf.graph, cf.library, [[2, 3], [3, 4]]);
  assert.ok(!c.source.includes("runDynamic"));
  assert.ok(!c.source.includes("infer"));
  assert.match(c.source, /for \(let i = 0; i < 8; i\+\+\)/, "the fused add/relu/mul is one loop over 8 elements");
  assert.strictEqual(compileGraph(cf.graph, cf.library, [[2, 3], [3, 4]]), c, "compiled once per signature");
  assert.deepEqual(f(x, w).arraySync(), [[8, 8, 8, 8], [8, 8, 8, 8]]);
});

test("the default executor interprets a signature's first call and compiles from the second", () => {
  const f = sc.stage((x: sc.Tensor) => sc.exp(x).add(x));
  const x = sc.tensor([1, 2, 3]);
  const cf = f.concrete(x);
  const first = cf.callFlat([x], compiledExecutor);
  assert.equal(compiledSpecializations(cf.graph, cf.library).length, 0, "not compiled after one call");
  const second = cf.callFlat([x], compiledExecutor);
  assert.equal(compiledSpecializations(cf.graph, cf.library).length, 1, "compiled on the second call");
  assertSame(second[0]!, first[0]!);
  cf.callFlat([sc.tensor([1, 2])], compiledExecutor);
  assert.equal(compiledSpecializations(cf.graph, cf.library).length, 1, "a new signature starts interpreted again");
  // a graph run with inputs that contradict its declared types is interpreted, never compiled
  assert.throws(() => compileGraph(cf.graph, cf.library, [[5]]), (e: Error) => e instanceof sc.ShapeError && /compileGraph: input 0 .* is float32\[3\], got float32\[5\]/.test(e.message));
});

test("STAGECRAFT_EXECUTOR=interpret keeps the interpreter as the default executor", () => {
  const root = fileURLToPath(new URL("../..", import.meta.url));
  const script = `
    const sc = await import(${JSON.stringify(root + "src/api/index.ts")});
    const { compiledSpecializations } = await import(${JSON.stringify(root + "src/api/internals.ts")});
    const f = sc.stage((x) => x.add(1));
    const x = sc.tensor([1, 2]);
    for (let i = 0; i < 3; i++) f(x);
    const cf = f.concrete(x);
    console.log(JSON.stringify({ compiled: compiledSpecializations(cf.graph, cf.library).length, value: f(x).arraySync() }));`;
  const run = (env: Record<string, string>) => {
    const r = spawnSync(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], { cwd: root, env: { ...process.env, ...env }, encoding: "utf8" });
    assert.equal(r.status, 0, r.stderr);
    return JSON.parse(r.stdout.trim().split("\n").pop()!) as { compiled: number; value: number[] };
  };
  assert.deepEqual(run({ STAGECRAFT_EXECUTOR: "interpret" }), { compiled: 0, value: [2, 3] });
  assert.deepEqual(run({ STAGECRAFT_EXECUTOR: "" }), { compiled: 1, value: [2, 3] });
});

test("a loop pushing on a stack compiles once: the stack's row count is known only at run time", () => {
  const f = sc.stage((x: sc.Tensor, n: sc.Tensor) => {
    const [, , s] = sc.whileLoop((i) => sc.less(i, n), (i, v, s) => [i.add(1), v!.mul(2), sc.stackPush(s!, v!)], [sc.scalar(0, "int32"), x, sc.emptyStack(x)], {
      shapeInvariants: [null, null, [null, 2]],
    });
    return [s!, sc.stackRead(sc.stackPush(s!, x), sc.scalar(0, "int32"))];
  });
  const x = sc.tensor([1, 3]);
  const cf = f.concrete(x, sc.scalar(3, "int32"));
  for (const [k, rows] of [[3, [[1, 3], [2, 6], [4, 12]]], [1, [[1, 3]]], [0, []], [3, [[1, 3], [2, 6], [4, 12]]]] as const) {
    const [s, first] = cf.callFlat([x, sc.scalar(k, "int32")], compiledExecutor);
    assert.deepEqual(s!.shape, [k, 2]);
    assert.deepEqual(s!.arraySync(), rows);
    assert.deepEqual(first!.arraySync(), [1, 3]);
  }
  const [compiled] = compiledSpecializations(cf.graph, cf.library);
  assert.match(compiled!.source, /for \(let it = 0;/, "the loop is compiled natively (one body for every trip count), not run by the generic path");
});

test("stacks grown again from the same empty stack start with the length the last one reached", () => {
  const empty = sc.zeros([0, 3]);
  let first = empty;
  for (let i = 0; i < 50; i++) first = sc.stackPush(first, sc.full([3], i));
  // a second lineage (a compiled loop's next call starts from the same constant empty stack)
  let second = sc.stackPush(empty, sc.full([3], -1));
  const storage = second.concrete().buffer;
  assert.ok(storage.byteLength >= 50 * 3 * 4, `the first push allocated ${storage.byteLength} bytes`);
  for (let i = 1; i < 50; i++) second = sc.stackPush(second, sc.full([3], -1 - i));
  assert.strictEqual(second.concrete().buffer, storage, "no regrowth");
  assert.deepEqual(sc.stackRead(first, sc.scalar(49, "int32")).arraySync(), [49, 49, 49], "the first lineage is untouched");
  assert.deepEqual(sc.stackRead(second, sc.scalar(49, "int32")).arraySync(), [-50, -50, -50]);
  assert.deepEqual(second.shape, [50, 3]);
});

test("stack storage is reused by the next call, never under a value the call handed out", () => {
  const v = sc.variable(sc.zeros([2]));
  const f = sc.stage((x: sc.Tensor, n: sc.Tensor) => {
    const [, , s] = sc.whileLoop((i) => sc.less(i, n), (i, y, s) => [i.add(1), y!.mul(2), sc.stackPush(s!, y!)], [sc.scalar(0, "int32"), x, sc.emptyStack(x)], {
      shapeInvariants: [null, null, [null, 2]],
    });
    v.assign(sc.stackRead(s!, sc.scalar(1, "int32"))); // a row view of the stack, kept by a variable
    return [s!, sc.reshape(s!, [-1])]; // the stack and a view of it, handed out
  });
  const n = sc.scalar(3, "int32");
  const results: [number[][], number[], number[]][] = [];
  const kept: sc.Tensor[][] = [];
  for (const x of [sc.tensor([1, 3]), sc.tensor([5, 7]), sc.tensor([-1, 0]), sc.tensor([2, 2])]) {
    const [s, flat] = f(x, n) as sc.Tensor[];
    kept.push([s!, flat!, v.read()]);
    results.push([s!.arraySync() as number[][], flat!.arraySync() as number[], v.read().arraySync() as number[]]);
  }
  assert.ok(f.traceCount === 1);
  // every call's outputs and the variable's values keep what that call computed
  kept.forEach(([s, flat, vr], i) => {
    assert.deepEqual(s!.arraySync(), results[i]![0]);
    assert.deepEqual(flat!.arraySync(), results[i]![1]);
    assert.deepEqual(vr!.arraySync(), results[i]![2]);
  });
  assert.deepEqual(results[1], [[[5, 7], [10, 14], [20, 28]], [5, 7, 10, 14, 20, 28], [10, 14]]);
  assert.deepEqual(results[3]![2], [4, 4]);
});
