// The compiled executor's data paths for in-graph training loops (issue 17, the MNIST workload):
// - a gather whose indices are consecutive (a range, plus a scalar offset known at run time) is
//   a view of its input's rows instead of a copy (analysis.ts rowSlice), the kernel otherwise;
// - a product whose n is not a multiple of 4 runs in the executor's gemm with B and C padded
//   to a multiple of 4 columns (analysis.ts paddedColumns), so no column falls to the gemm's
//   latency-bound scalar tail.
// Every case: compiled = interpreter bit for bit, at the seams (the op as the last op of a
// staged function or loop body, a gradient through the loop, a variable assigned in the loop
// and read after it), and the generated code shows the path was taken.
import { test } from "node:test";
import assert from "node:assert/strict";
import * as sc from "../../src/api/index.js";
import { compiledSpecializations, createCompiledExecutor, interpretExecutor } from "../../src/api/internals.js";
import { CompiledGraph } from "../../src/exec/compiled/graph.js";
import { paddedColumns } from "../../src/exec/compiled/analysis.js";
import { ResidentRows } from "../../src/exec/compiled/resident.js";
import { arenas } from "../../src/exec/compiled/graph.js";
import { IndexError } from "../../src/core/errors.js";
import { Rng } from "../util/rng.js";

const compileNow = createCompiledExecutor(0);
const rng = new Rng(17);

function assertSame(got: sc.Tensor, want: sc.Tensor, what: string): void {
  assert.equal(got.dtype, want.dtype, `${what} dtype`);
  assert.deepEqual(got.shape, want.shape, `${what} shape`);
  const a = got.dataSync(),
    b = want.dataSync();
  for (let i = 0; i < b.length; i++) if (!Object.is(a[i], b[i])) assert.fail(`${what} element ${i}: compiled ${a[i]} vs interpreter ${b[i]}`);
}

/** The generated source of every graph compiled while `fn` runs (bodies and callees included). */
function sourcesOf(fn: () => void): string {
  const seen: string[] = [];
  const finish = CompiledGraph.prototype.finish;
  CompiledGraph.prototype.finish = function (this: CompiledGraph, ...a: Parameters<typeof finish>) {
    finish.apply(this, a);
    seen.push(this.source);
  };
  try {
    fn();
  } finally {
    CompiledGraph.prototype.finish = finish;
  }
  return seen.join("\n");
}

/** Compiled (once compiled, then again: instances reused) and interpreted agree; returns the compiled outputs and the generated code. */
function agree(fn: (...xs: sc.Tensor[]) => sc.Tensor | sc.Tensor[], args: sc.Tensor[], what: string): { outs: sc.Tensor[]; source: string } {
  const cf = sc.stage(fn, { autograph: false }).concrete(...args);
  let outs: sc.Tensor[] = [];
  const source = sourcesOf(() => (outs = cf.callFlat(args, compileNow)));
  const again = cf.callFlat(args, compileNow);
  const want = cf.callFlat(args, interpretExecutor);
  assert.equal(outs.length, want.length);
  want.forEach((t, i) => {
    assertSame(outs[i]!, t, `${what} output ${i}`);
    assertSame(again[i]!, t, `${what} output ${i} (second call)`);
  });
  return { outs, source };
}

// ---------------------------------------------------------------------------------------------
// consecutive gathers

test("gather of a range plus a run-time offset: a view of the rows, as the interpreter's, at every offset", () => {
  const x = rng.tensor([12, 5], -1, 1, "float32");
  const rowsAt = (t: sc.Tensor, at: sc.Tensor) => sc.gather(t, sc.add(sc.arange(0, 4, 1, "int32"), at), 0);
  for (const at of [0, 3, 6]) {
    // the gather as the last op: its result leaves the call (a view of the input's storage)
    const { source } = agree((t, a) => rowsAt(t, a), [x, sc.scalar(at, "int32")], `offset ${at}`);
    assert.match(source, /\.subarray\(F\d+ \* 5, \(F\d+ \+ 4\) \* 5\)/, "the gather reads the rows as a view");
    // offset first, range second; then consumed by an elementwise op and a reduction
    agree((t, a) => [sc.tanh(sc.gather(t, sc.add(a, sc.arange(2, 6, 1, "int32")), 0)), sc.sum(rowsAt(t, a), 1)], [x, sc.scalar(at, "int32")], `offset ${at} + 2, used`);
  }
  agree((t, a) => rowsAt(t, a), [x, sc.scalar(8, "int32")], "the last rows");
  const eager = rowsAt(x, sc.scalar(5, "int32")).dataSync();
  assert.deepEqual(Array.from(eager), Array.from(x.dataSync().subarray(25, 45)), "eager reads rows 5..8");
});

test("a consecutive gather out of range raises the kernel's IndexError in compiled code, naming the op", () => {
  const x = rng.tensor([12, 5], -1, 1, "float32");
  const f = sc.stage((t: sc.Tensor, a: sc.Tensor) => sc.gather(t, sc.add(sc.arange(0, 4, 1, "int32"), a), 0), { autograph: false });
  const cf = f.concrete(x, sc.scalar(0, "int32"));
  for (const at of [9, -1, 2147483647, -2147483648]) {
    for (const ex of [compileNow, interpretExecutor]) {
      assert.throws(
        () => cf.callFlat([x, sc.scalar(at, "int32")], ex),
        (e: unknown) => e instanceof IndexError && /gather/.test(e.message) && /out of range for axis 0 of size 12/.test(e.message),
        `offset ${at}`,
      );
    }
  }
  // and the same call still works in range afterwards (the instance was not left broken)
  assertSame(cf.callFlat([x, sc.scalar(8, "int32")], compileNow)[0]!, cf.callFlat([x, sc.scalar(8, "int32")], interpretExecutor)[0]!, "after the errors");
});

test("constant ranges, inner axes with unit outer dims, and the gathers that stay copies", () => {
  const x = rng.tensor([1, 9, 3], -1, 1, "float32");
  const { source } = agree((t) => sc.gather(t, sc.arange(2, 7, 1, "int32"), 1), [x], "constant range on axis 1 behind a unit dim");
  assert.match(source, /\.subarray\(/);
  const y = rng.tensor([3, 9], -1, 1, "float32");
  // outer dims > 1, a step of 2, reversed: not consecutive rows, gathered by the kernel
  const other = agree(
    (t) => [sc.gather(t, sc.arange(2, 6, 1, "int32"), 1), sc.gather(t, sc.arange(0, 3, 2, "int32"), 0), sc.gather(t, sc.tensor([2, 1, 0], "int32"), 0)],
    [y],
    "not views",
  );
  assert.doesNotMatch(other.source, /\.subarray\(/);
  // float64 and int32 data; a scalar index (rank-0 result rows)
  agree((t, a) => sc.gather(t, sc.add(sc.arange(0, 2, 1, "int32"), a), 0), [rng.tensor([5, 2], -1, 1, "float64"), sc.scalar(3, "int32")], "float64 rows");
  agree((t, a) => sc.gather(t, sc.add(sc.arange(1, 3, 1, "int32"), a), 0), [sc.tensor([[1, 2], [3, 4], [5, 6], [7, 8]], "int32"), sc.scalar(1, "int32")], "int32 rows");
});

test("a view of a planned buffer keeps that buffer alive while the view is read", () => {
  const x = rng.tensor([10, 6], -1, 1, "float32");
  const z = rng.tensor([10, 6], -1, 1, "float32");
  agree(
    (t, u, a) => {
      const h = sc.tanh(t.mul(2)); // planned buffer
      const rows = sc.gather(h, sc.add(sc.arange(0, 3, 1, "int32"), a), 0); // a view of it
      // values of h's size computed while the view is live: none may take h's buffer
      const e = sc.exp(u).add(1);
      const f = sc.sin(e).mul(u);
      return [rows.mul(3).add(sc.sum(f, 0)), sc.sum(e, 0)];
    },
    [x, z, sc.scalar(4, "int32")],
    "view of a planned buffer",
  );
});

// ---------------------------------------------------------------------------------------------
// padded products

test("paddedColumns pads n to a multiple of 4 only where the scalar tail costs more than the copies", () => {
  assert.equal(paddedColumns(200, 10, 784), 12);
  assert.equal(paddedColumns(784, 10, 200), 12);
  assert.equal(paddedColumns(64, 3, 64), 4);
  assert.equal(paddedColumns(64, 16, 64), 16);
  assert.equal(paddedColumns(4, 1001, 1000), 1001); // one tail column of a wide product: not worth copying B
});

test("padded products (n not a multiple of 4) match the interpreter: transposes, operand and result kinds", () => {
  for (const [m, k, n] of [
    [64, 96, 10],
    [13, 50, 3],
    [33, 70, 1],
    [8, 300, 5],
    [6, 40, 7],
  ] as [number, number, number][]) {
    const ldb = paddedColumns(m, n, k);
    assert.notEqual(ldb, n, `${m}x${k}x${n} is padded`);
    const a = rng.tensor([m, k], -1, 1, "float32"),
      at = rng.tensor([k, m], -1, 1, "float32");
    const b = rng.tensor([k, n], -1, 1, "float32"),
      bt = rng.tensor([n, k], -1, 1, "float32");
    const padded = new RegExp(`GEMM\\(\\d+, \\d+, \\d+, ${m}, ${ldb}, `);
    // the product as the last op (result leaves the call), B a graph input
    assert.match(agree((p, q) => sc.matmul(p, q), [a, b], `${m}x${k}x${n}`).source, padded);
    agree((p, q) => sc.matmul(p, q, { transposeB: true }), [a, bt], `${m}x${k}x${n} B^T`);
    agree((p, q) => sc.matmul(p, q, { transposeA: true }), [at, b], `${m}x${k}x${n} A^T`);
    agree((p, q) => sc.matmul(p, q, { transposeA: true, transposeB: true }), [at, bt], `${m}x${k}x${n} A^T B^T`);
    // B a planned buffer, a constant, a variable; the result planned (read by later ops)
    const w = sc.variable(b);
    agree(
      (p, q) => {
        const c1 = sc.matmul(p, sc.tanh(q)); // B planned, result planned
        const c2 = sc.matmul(p, sc.ones([k, n]).mul(0.5)); // B constant
        const c3 = sc.matmul(p, w.read()); // B a variable's storage
        return [sc.relu(c1).add(c2), c3.mul(c3), sc.sum(c1, 1)];
      },
      [a, b],
      `${m}x${k}x${n} operand kinds`,
    );
  }
});

// ---------------------------------------------------------------------------------------------
// the training loop: both paths inside a while body

/** A linear softmax model trained by SGD over batches picked as consecutive rows (the MNIST workload, small). */
function trainingLoop(rows: number, features: number, classes: number, batch: number) {
  const X = rng.tensor([rows, features], 0, 1, "float32");
  const labels = Array.from({ length: rows }, () => rng.int(0, classes));
  const Y = sc.tensor(labels.flatMap((l) => Array.from({ length: classes }, (_, c) => (c === l ? 1 : 0))), "float32", [rows, classes]);
  const w = sc.variable(sc.zeros([features, classes]));
  const b = sc.variable(sc.zeros([classes]));
  const batches = rows / batch;
  const loss = (x: sc.Tensor, y: sc.Tensor, W: sc.Tensor, B: sc.Tensor) => sc.neg(sc.mean(sc.sum(sc.logSoftmax(sc.matmul(x, W).add(B), -1).mul(y), 1)));
  const sgd = (x: sc.Tensor, y: sc.Tensor) => {
    const [gw, gb] = sc.grad(loss, { argnums: [2, 3] })(x, y, w.read(), b.read()) as sc.Tensor[];
    w.assign(w.read().sub(gw!.mul(0.5)));
    b.assign(b.read().sub(gb!.mul(0.5)));
  };
  const batchOf = (i: number | sc.Tensor): [sc.Tensor, sc.Tensor] => {
    const step = typeof i === "number" ? sc.scalar(i, "int32") : i;
    const idx = sc.add(sc.arange(0, batch, 1, "int32"), sc.mul(sc.mod(step, batches), batch));
    return [sc.gather(X, idx, 0), sc.gather(Y, idx, 0)];
  };
  const loop = sc.stage(
    (n: sc.Tensor) => {
      sc.whileLoop((i) => sc.less(i, n), (i) => (sgd(...batchOf(i)), [i.add(1)]), [sc.scalar(0, "int32")]);
      return [w.read(), b.read()]; // the variables read after the loop
    },
    { autograph: false },
  );
  const reset = () => {
    w.assign(sc.zeros([features, classes]));
    b.assign(sc.zeros([classes]));
  };
  return { X, Y, w, b, sgd, batchOf, loop, reset, loss };
}

test("a training loop over consecutive batches with a padded product: compiled = interpreter = eager host loop", () => {
  const t = trainingLoop(60, 40, 10, 12);
  const n = sc.scalar(7, "int32");
  const cf = t.loop.concrete(n);
  t.reset();
  let compiled: sc.Tensor[] = [];
  const source = sourcesOf(() => (compiled = cf.callFlat([n], compileNow)));
  const afterCompiled = [t.w.read(), t.b.read()];
  assert.match(source, /\.subarray\(F\d+ \* 40, \(F\d+ \+ 12\) \* 40\)/, "the batch is a view of the data set's rows");
  assert.match(source, /GEMM\([^,]+, \d+, \d+, 12, 12, /, "the forward product runs padded");
  assert.match(source, /GEMM\([^,]+, \d+, \d+, 40, 12, /, "the weight gradient's product runs padded");
  t.reset();
  const interpreted = cf.callFlat([n], interpretExecutor);
  compiled.forEach((c, i) => assertSame(c, interpreted[i]!, `trained parameter ${i}`));
  assertSame(afterCompiled[0]!, t.w.read(), "the variable read after the loop");
  // a second compiled call reuses the instances (the data set already in place)
  t.reset();
  const again = cf.callFlat([n], compileNow);
  again.forEach((c, i) => assertSame(c, interpreted[i]!, `second call, parameter ${i}`));
  // the eager host loop: the same training, bit for bit (the eager products run the WebAssembly
  // sgemm, whose arithmetic the padded executor gemm reproduces)
  t.reset();
  for (let i = 0; i < 7; i++) t.sgd(...t.batchOf(i));
  assertSame(compiled[0]!, t.w.read(), "eager host loop's w");
  assertSame(compiled[1]!, t.b.read(), "eager host loop's b");
});

test("a gradient through a loop whose body gathers consecutive rows and multiplies them (padded): compiled = interpreter = eager", () => {
  const X = rng.tensor([20, 8], -1, 1, "float32");
  const W0 = rng.tensor([8, 3], -1, 1, "float32");
  const body = (x: sc.Tensor, w: sc.Tensor, n: sc.Tensor) => {
    const [, acc] = sc.whileLoop(
      (i) => sc.less(i, n),
      (i, a) => {
        const rows = sc.gather(x, sc.add(sc.arange(0, 5, 1, "int32"), sc.mul(i, 3)), 0);
        return [i.add(1), a!.add(sc.sum(sc.tanh(sc.matmul(rows, w)), 0))];
      },
      [sc.scalar(0, "int32"), sc.zeros([3])],
      { maxIterations: 10 },
    );
    return sc.sum(acc!.mul(acc!));
  };
  const g = sc.stage((x: sc.Tensor, w: sc.Tensor, n: sc.Tensor) => sc.grad(body, { argnums: [0, 1] })(x, w, n) as sc.Tensor[], { autograph: false });
  const n = sc.scalar(4, "int32");
  const cf = g.concrete(X, W0, n);
  const compiled = cf.callFlat([X, W0, n], compileNow);
  const interpreted = cf.callFlat([X, W0, n], interpretExecutor);
  compiled.forEach((c, i) => assertSame(c, interpreted[i]!, `gradient ${i}`));
  const eager = sc.grad(body, { argnums: [0, 1] })(X, W0, n) as sc.Tensor[];
  eager.forEach((e, i) => {
    const a = e.dataSync(),
      b = compiled[i]!.dataSync();
    for (let j = 0; j < a.length; j++) assert.ok(Math.abs(a[j]! - b[j]!) <= 1e-4 * (1 + Math.abs(a[j]!)), `eager gradient ${i}[${j}] ${a[j]} vs ${b[j]}`);
  });
  // rows past the last iteration's batch get no gradient
  assert.ok(Array.from(compiled[0]!.dataSync().subarray(14 * 8)).every((v) => v === 0));
  assert.ok(compiledSpecializations(cf.graph, cf.library).length >= 1);
});

test("a loop invariant in the caller's planned buffer is copied into the body's operand slots on every call, not kept from the last", () => {
  // The body's WebAssembly operand slots skip copying storage they copied last time; the
  // caller's planned buffer is the same object on every call with other contents (this gave
  // the first call's products on later calls).
  const W = rng.tensor([32, 32], -1, 1, "float32");
  const V = rng.tensor([32, 10], -1, 1, "float32");
  const f = sc.stage(
    (x: sc.Tensor) => {
      const h = sc.tanh(x.mul(2)); // planned in the caller, an invariant of the loop
      const [, acc, acc2, acc3] = sc.whileLoop(
        (i) => sc.less(i, 3),
        (i, a, b, c) => [i.add(1), a!.add(sc.matmul(h, W)), b!.add(sc.matmul(W, h)), c!.add(sc.matmul(h, V))], // h as A, as B, as a padded B
        [sc.scalar(0, "int32"), sc.zeros([32, 32]), sc.zeros([32, 32]), sc.zeros([32, 10])],
      );
      return [acc!, acc2!, acc3!];
    },
    { autograph: false },
  );
  const cf = f.concrete(rng.tensor([32, 32], -1, 1, "float32"));
  for (let call = 0; call < 3; call++) {
    const x = rng.tensor([32, 32], -1, 1, "float32");
    const got = cf.callFlat([x], compileNow),
      want = cf.callFlat([x], interpretExecutor);
    got.forEach((g, i) => assertSame(g, want[i]!, `call ${call} output ${i}`));
  }
});

test("a consecutive gather and a padded product as the last ops of a loop body (their results carried to the next iteration)", () => {
  const X = rng.tensor([32, 64], -1, 1, "float32");
  const W = rng.tensor([64, 64], -1, 1, "float32");
  const V = rng.tensor([64, 5], -1, 1, "float32");
  assert.equal(paddedColumns(8, 5, 64), 8);
  const f = sc.stage(
    (x: sc.Tensor, n: sc.Tensor) => {
      const [, rows, prod] = sc.whileLoop(
        (i) => sc.less(i, n),
        (i, r, p) => {
          const next = sc.gather(x, sc.add(sc.arange(0, 8, 1, "int32"), sc.mul(sc.mod(i, 4), 8)), 0); // rows of the invariant, carried
          return [i.add(1), next, sc.matmul(sc.tanh(r!.add(next)), W).matmul(V).add(p!)]; // a padded [8, 64] x [64, 5], carried
        },
        [sc.scalar(0, "int32"), sc.zeros([8, 64]), sc.zeros([8, 5])],
      );
      return [rows!, prod!];
    },
    { autograph: false },
  );
  for (const steps of [0, 1, 5]) {
    const n = sc.scalar(steps, "int32");
    const cf = f.concrete(X, n);
    let got: sc.Tensor[] = [];
    const source = sourcesOf(() => (got = cf.callFlat([X, n], compileNow)));
    const want = cf.callFlat([X, n], interpretExecutor);
    got.forEach((g, i) => assertSame(g, want[i]!, `${steps} iterations, output ${i}`));
    if (steps > 0) assertSame(got[0]!, sc.gather(X, sc.arange(((steps - 1) % 4) * 8, ((steps - 1) % 4) * 8 + 8, 1, "int32"), 0), "the last batch");
    if (steps === 0) {
      assert.match(source, /\.subarray\(/, "the batch is a view");
      assert.match(source, /GEMM\(\d+, \d+, \d+, 8, 8, /, "the product runs padded");
    }
  }
});

// ---------------------------------------------------------------------------------------------
// the data set kept in the arena for the products that read its rows (resident.ts)

test("ResidentRows: the source copied whole the second time in a row it comes, never when reused storage; other rows copied into the slot", () => {
  const memory = new ArrayBuffer(4096);
  const copy = new Float32Array(memory, 1024, 40),
    slot = new Float32Array(memory, 2048, 8);
  const r = new ResidentRows(copy, 1024, slot, 2048);
  const X = Float32Array.from({ length: 40 }, (_, i) => i);
  const rows = (src: Float32Array, first: number) => src.subarray(first * 4, first * 4 + 8);
  assert.equal(r.place(X, rows(X, 2)), 2048, "first sight: the rows are copied into the slot");
  assert.deepEqual(Array.from(slot), [8, 9, 10, 11, 12, 13, 14, 15]);
  assert.equal(r.place(X, rows(X, 3)), 1024 + 48, "second sight: read in place in the arena copy");
  assert.deepEqual(Array.from(copy), Array.from(X));
  assert.equal(r.address, 1024 + 48, "later products of the call read the address");
  const Y = Float32Array.from({ length: 40 }, (_, i) => -i);
  assert.equal(r.place(Y, rows(Y, 0)), 2048, "another source: copied rows again");
  assert.deepEqual(Array.from(slot), [-0, -1, -2, -3, -4, -5, -6, -7]);
  assert.equal(r.place(X, rows(X, 1)), 1024 + 16, "X again: the arena copy still holds it");
  assert.equal(r.place(Y, rows(Y, 1)), 1024 + 16, "Y the second time without being held: copied whole");
  assert.deepEqual(Array.from(copy), Array.from(Y));
  assert.equal(r.place(X, rows(X, 1)), 2048, "X now: copied rows (the arena copy holds Y)");
  assert.equal(r.place(X, Float32Array.from([1, 2, 3, 4, 5, 6, 7, 8])), 2048, "rows that are not a view of the source: copied");
  assert.deepEqual(Array.from(slot), [1, 2, 3, 4, 5, 6, 7, 8]);
  // storage another compiled instance reuses with other contents is never held
  const other = new ArrayBuffer(160);
  arenas.add(other);
  const Z = new Float32Array(other);
  for (let i = 0; i < 3; i++) assert.equal(r.place(Z, rows(Z, 0)), 2048, `reused storage, call ${i}`);
});

test("a training loop's batch read where the data set lies in the arena: every call, a new data set, results as the interpreter's", () => {
  const W = rng.tensor([40, 10], -1, 1, "float32");
  const f = sc.stage(
    (x: sc.Tensor, n: sc.Tensor) => {
      const [, acc] = sc.whileLoop(
        (i) => sc.less(i, n),
        (i, a) => {
          const batch = sc.gather(x, sc.add(sc.arange(0, 12, 1, "int32"), sc.mul(sc.mod(i, 5), 12)), 0);
          return [i.add(1), a!.add(sc.matmul(batch, W)).add(sc.matmul(batch, sc.tanh(a!), { transposeA: true }).sum())];
        },
        [sc.scalar(0, "int32"), sc.zeros([12, 10])],
      );
      return acc!;
    },
    { autograph: false },
  );
  const X1 = rng.tensor([60, 40], -1, 1, "float32"),
    X2 = rng.tensor([60, 40], -1, 1, "float32");
  const n = sc.scalar(7, "int32");
  const cf = f.concrete(X1, n);
  const source = sourcesOf(() => cf.callFlat([X1, n], compileNow));
  assert.match(source, /RES\d+\.place\(/, "the batch's rows are placed in the arena copy of the data set");
  for (const X of [X1, X2, X1, X2, X2]) assertSame(cf.callFlat([X, n], compileNow)[0]!, cf.callFlat([X, n], interpretExecutor)[0]!, "a call");
  // the data set computed in the caller (its planned buffer, new contents every call)
  const g = sc.stage((x: sc.Tensor, m: sc.Tensor) => f(sc.tanh(x), m), { autograph: false });
  const cg = g.concrete(X1, n);
  for (const X of [X1, X2, X1]) assertSame(cg.callFlat([X, n], compileNow)[0]!, cg.callFlat([X, n], interpretExecutor)[0]!, "a call on a computed data set");
});
