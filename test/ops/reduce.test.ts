/** Reductions and cumsum: values vs naive loops, dtypes, empty groups, NaN, errors, gradients. */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as sc from "../../src/api/index.js";
import { Rng } from "../util/rng.js";
import { unravel } from "../util/indexing.js";

// ---------------------------------------------------------------------------------------
// Naive references: iterate over every element, compute its output slot from its index.


/** Groups the elements of (data, shape) by their reduction slot; returns groups and output shape. */
function groups(data: ArrayLike<number>, shape: number[], axes: number[], keepDims: boolean): { groups: number[][]; shape: number[] } {
  const keptDims = shape.map((_, d) => d).filter((d) => !axes.includes(d));
  const outShapeNoKeep = keptDims.map((d) => shape[d]!);
  const outSize = outShapeNoKeep.reduce((a, b) => a * b, 1);
  const gs: number[][] = Array.from({ length: outSize }, () => []);
  for (let i = 0; i < data.length; i++) {
    const idx = unravel(i, shape);
    let o = 0;
    for (const d of keptDims) o = o * shape[d]! + idx[d]!;
    gs[o]!.push(data[i]!);
  }
  const outShape = keepDims ? shape.map((s, d) => (axes.includes(d) ? 1 : s)) : outShapeNoKeep;
  return { groups: gs, shape: outShape };
}

const REF: Record<string, (g: number[]) => number> = {
  sum: (g) => g.reduce((a, b) => a + b, 0),
  mean: (g) => g.reduce((a, b) => a + b, 0) / g.length,
  prod: (g) => g.reduce((a, b) => a * b, 1),
  max: (g) => (g.some(Number.isNaN) ? NaN : Math.max(...g)),
  min: (g) => (g.some(Number.isNaN) ? NaN : Math.min(...g)),
  logSumExp: (g) => Math.log(g.reduce((a, b) => a + Math.exp(b), 0)),
  variance: (g) => {
    const m = g.reduce((a, b) => a + b, 0) / g.length;
    return g.reduce((a, b) => a + (b - m) * (b - m), 0) / g.length;
  },
};

function assertAllClose(actual: ArrayLike<number>, expected: ArrayLike<number>, tol: number, what: string): void {
  assert.equal(actual.length, expected.length, `${what}: length`);
  for (let i = 0; i < actual.length; i++) {
    const a = actual[i]!,
      e = expected[i]!;
    if (Number.isNaN(e)) {
      assert.ok(Number.isNaN(a), `${what}[${i}]: expected NaN, got ${a}`);
      continue;
    }
    if (!Number.isFinite(e)) {
      assert.equal(a, e, `${what}[${i}]`);
      continue;
    }
    assert.ok(Math.abs(a - e) <= tol * Math.max(1, Math.abs(e)), `${what}[${i}]: ${a} vs ${e}`);
  }
}

function subsets(n: number): number[][] {
  const out: number[][] = [];
  for (let m = 0; m < 1 << n; m++) out.push(Array.from({ length: n }, (_, i) => i).filter((i) => m & (1 << i)));
  return out;
}

const fns = sc as unknown as Record<string, (x: sc.Tensor, axis?: number | number[] | null, keepDims?: boolean) => sc.Tensor>;

// ---------------------------------------------------------------------------------------

test("float reductions over every axis subset, with and without keepDims, match naive loops", () => {
  const rng = new Rng(11);
  const shape = [2, 3, 4];
  for (const dtype of ["float64", "float32"] as const) {
    const x = rng.tensor(shape, -1.5, 1.5, dtype);
    const data = x.dataSync();
    for (const op of Object.keys(REF)) {
      for (const axes of subsets(3)) {
        for (const keepDims of [false, true]) {
          const y = fns[op]!(x, axes, keepDims);
          const ref = groups(data, shape, axes, keepDims);
          assert.deepEqual(y.shape, ref.shape, `${op} ${JSON.stringify(axes)} keepDims=${keepDims} shape`);
          assert.equal(y.dtype, dtype, `${op} dtype`);
          const expected = ref.groups.map((g) => REF[op]!(g));
          assertAllClose(y.dataSync(), expected, dtype === "float64" ? 1e-12 : 1e-5, `${op} ${JSON.stringify(axes)} keepDims=${keepDims} ${dtype}`);
        }
      }
    }
  }
});

test("axis null / undefined reduces everything; methods work the same", () => {
  const x = sc.tensor([[1, 5, 3], [4, 2, 6]], "float64");
  assert.equal(sc.sum(x).item(), 21);
  assert.equal(sc.mean(x, null).item(), 3.5);
  assert.equal(x.prod().item(), 720);
  assert.equal(x.max().item(), 6);
  assert.equal(x.min().item(), 1);
  assert.deepEqual(x.sum(null, true).shape, [1, 1]);
  assert.deepEqual(x.mean(1).arraySync(), [3, 4]);
  assert.deepEqual(x.max(0).arraySync(), [4, 5, 6]);
  assert.deepEqual(x.min(1, true).arraySync(), [[1], [2]]);
  assert.deepEqual(x.argMax(1).arraySync(), [1, 2]);
  assert.deepEqual(x.argMin(0).arraySync(), [0, 1, 0]);
  assert.ok(Math.abs((x.variance().item() as number) - 35 / 12) < 1e-12);
  assert.ok(Math.abs((x.logSumExp().item() as number) - Math.log([1, 5, 3, 4, 2, 6].reduce((a, b) => a + Math.exp(b), 0))) < 1e-12);
  assert.deepEqual(x.cumsum(1).arraySync(), [[1, 6, 9], [4, 6, 12]]);
  assert.equal(x.greater(5).any().item(), true);
  assert.equal(x.greater(1).all().item(), false);
});

test("negative axes count from the end", () => {
  const rng = new Rng(12);
  const x = rng.tensor([2, 3, 4]);
  assert.deepEqual(sc.sum(x, -1).dataSync(), sc.sum(x, 2).dataSync());
  assert.deepEqual(sc.max(x, [-1, 0], true).dataSync(), sc.max(x, [0, 2], true).dataSync());
  assert.deepEqual(sc.mean(x, [-3, -2]).shape, [4]);
  assert.deepEqual(sc.argMax(x, -2).dataSync(), sc.argMax(x, 1).dataSync());
  assert.deepEqual(sc.cumsum(x, -1).dataSync(), sc.cumsum(x, 2).dataSync());
});

test("integer and bool dtypes: sums promote to int32, mean gives float32, max keeps the dtype", () => {
  const b = sc.tensor([[true, false, true], [true, true, true]]);
  const s = sc.sum(b, 1);
  assert.equal(s.dtype, "int32");
  assert.deepEqual(s.arraySync(), [2, 3]);
  const u = sc.tensor([200, 100, 50], "uint8");
  assert.equal(sc.sum(u).dtype, "int32");
  assert.equal(sc.sum(u).item(), 350);
  assert.equal(sc.prod(sc.tensor([3, 4, 5], "uint8")).item(), 60);
  const i = sc.tensor([[-5, -2, -9], [7, -1, 3]], "int32");
  assert.equal(sc.mean(i).dtype, "float32");
  assert.ok(Math.abs((sc.mean(i).item() as number) + 7 / 6) < 1e-6);
  assert.equal(sc.mean(b).dtype, "float32");
  // all-negative int32 groups (the max identity must not be clamped into int32 storage)
  assert.deepEqual(sc.max(i, 1).arraySync(), [-2, 7]);
  assert.equal(sc.max(i, 1).dtype, "int32");
  assert.deepEqual(sc.max(i, 0).arraySync(), [7, -1, 3]);
  assert.deepEqual(sc.min(sc.tensor([[5, 9], [7, 8]], "uint8"), 0).arraySync(), [5, 8]);
  assert.equal(sc.min(i, 0).dtype, "int32");
  // int32 sums over non-contiguous axes (two passes) and int32 wrap-around like int32 adds
  const big = sc.tensor([[[1, 2], [3, 4]], [[5, 6], [7, 8]]], "int32");
  assert.deepEqual(sc.sum(big, [0, 2]).arraySync(), [14, 22]);
  assert.equal(sc.sum(sc.tensor([2147483647, 1], "int32")).item(), -2147483648);
  assert.equal(sc.prod(sc.tensor([[2, 3], [4, 5]], "int64"), [0, 1]).dtype, "int64");
  assert.equal(sc.variance(sc.tensor([1, 2, 3, 4], "int32")).dtype, "float32");
  assert.equal(sc.logSumExp(sc.tensor([0, 0], "int32")).dtype, "float32");
  assert.ok(Math.abs((sc.logSumExp(sc.tensor([0, 0], "int32")).item() as number) - Math.LN2) < 1e-6);
  assert.equal(sc.cumsum(b, 1).dtype, "int32");
  assert.deepEqual(sc.cumsum(b, 1).arraySync(), [[1, 1, 2], [1, 2, 3]]);
  assert.throws(() => sc.logSumExp(b), (e: Error) => e instanceof sc.DtypeError && /logSumExp/.test(e.message));
  assert.throws(() => sc.variance(b), (e: Error) => e instanceof sc.DtypeError && /variance/.test(e.message));
});

test("float32 sums accumulate in float64", () => {
  const n = 100000;
  const x = sc.full([n], 0.1, "float32");
  const s = sc.sum(x).item() as number;
  assert.ok(Math.abs(s - n * Math.fround(0.1)) < 1e-2, `sum ${s}`);
  const m = sc.mean(sc.full([4, n / 4], 0.1, "float32"), 1).dataSync();
  for (const v of m) assert.ok(Math.abs(v - 0.1) < 1e-6);
});

test("any / all over axes; non-zero (and NaN) is true", () => {
  const x = sc.tensor([[0, 0, 2], [0, 0, 0], [NaN, 1, -1]], "float64");
  assert.deepEqual(sc.any(x, 1).arraySync(), [true, false, true]);
  assert.deepEqual(sc.all(x, 1).arraySync(), [false, false, true]);
  assert.deepEqual(sc.any(x, 0, true).arraySync(), [[true, true, true]]);
  assert.deepEqual(sc.all(x, [0, 1]).arraySync(), false);
  assert.equal(sc.any(x).dtype, "bool");
  const b = sc.tensor([[true, false], [true, true]]);
  assert.deepEqual(sc.all(b, 0).arraySync(), [true, false]);
  assert.deepEqual(sc.any(sc.logicalNot(b), 1).arraySync(), [true, false]);
  assert.deepEqual(sc.all(b, []).arraySync(), [[true, false], [true, true]]);
});

test("empty reductions give the identity (or NaN); max/min/argMax of an empty group raise", () => {
  const e = sc.zeros([0, 3], "float64");
  assert.deepEqual(sc.sum(e, 0).arraySync(), [0, 0, 0]);
  assert.deepEqual(sc.prod(e, 0).arraySync(), [1, 1, 1]);
  assert.ok(sc.mean(e, 0).arraySync().every(Number.isNaN));
  assert.ok(sc.variance(e, 0).arraySync().every(Number.isNaN));
  assert.deepEqual(sc.logSumExp(e, 0).arraySync(), [-Infinity, -Infinity, -Infinity]);
  assert.deepEqual(sc.any(e, 0).arraySync(), [false, false, false]);
  assert.deepEqual(sc.all(e, 0).arraySync(), [true, true, true]);
  assert.equal(sc.sum(e).item(), 0);
  assert.equal(sc.sum(sc.zeros([0], "int32")).dtype, "int32");
  // reducing the non-empty axis of an empty tensor gives an empty result
  assert.deepEqual(sc.max(e, 1).shape, [0]);
  assert.deepEqual(sc.argMax(e, 1).shape, [0]);
  assert.deepEqual(sc.sum(e, 1, true).shape, [0, 1]);
  assert.deepEqual(sc.cumsum(e, 0).shape, [0, 3]);
  for (const op of ["max", "min"]) {
    assert.throws(() => fns[op]!(e, 0), (err: Error) => err instanceof sc.ValueError && err.message.startsWith(`${op}:`) && /\[0, 3\]/.test(err.message));
    assert.throws(() => fns[op]!(e), sc.ValueError);
  }
  assert.throws(() => sc.argMax(e, 0), (err: Error) => err instanceof sc.ValueError && /argMax/.test(err.message));
  assert.throws(() => sc.argMin(e), (err: Error) => err instanceof sc.ValueError && /argMin/.test(err.message));
});

test("max/min propagate NaN; argMax/argMin pick the first NaN", () => {
  const x = sc.tensor([[1, NaN, 3], [4, 5, 6], [NaN, -1, NaN]], "float64");
  const mx = sc.max(x, 1).dataSync();
  assert.ok(Number.isNaN(mx[0]!) && mx[1] === 6 && Number.isNaN(mx[2]!));
  const mn = sc.min(x, 0).dataSync();
  assert.ok(Number.isNaN(mn[0]!) && Number.isNaN(mn[1]!) && Number.isNaN(mn[2]!));
  assert.ok(Number.isNaN(sc.max(x).item() as number));
  assert.ok(Number.isNaN(sc.min(sc.tensor([NaN, 1], "float32")).item() as number));
  assert.ok(Number.isNaN(sc.max(sc.tensor([1, NaN], "float32")).item() as number));
  assert.deepEqual(sc.argMax(x, 1).arraySync(), [1, 2, 0]);
  assert.deepEqual(sc.argMin(x, 1).arraySync(), [1, 0, 0]);
  assert.deepEqual(sc.argMax(x, 0).arraySync(), [2, 0, 2]);
  assert.ok(Number.isNaN(sc.logSumExp(x, 1).dataSync()[0]!));
});

test("argMax/argMin: int32, first occurrence on ties, keepDims, flattened, any axis vs naive", () => {
  const x = sc.tensor([[3, 7, 7, 1], [2, 2, 0, 0]]);
  const am = sc.argMax(x, 1);
  assert.equal(am.dtype, "int32");
  assert.deepEqual(am.arraySync(), [1, 0]);
  assert.deepEqual(sc.argMin(x, 1).arraySync(), [3, 2]);
  assert.deepEqual(sc.argMax(x, 1, true).arraySync(), [[1], [0]]);
  assert.deepEqual(sc.argMax(x, 0).arraySync(), [0, 0, 0, 0]);
  assert.equal(sc.argMax(x).item(), 1);
  assert.equal(sc.argMin(x).item(), 6);
  assert.deepEqual(sc.argMin(x, null, true).shape, [1, 1]);
  assert.equal(sc.argMax(sc.tensor([[false, true], [true, true]])).item(), 1);
  const rng = new Rng(5);
  const shape = [3, 4, 5];
  const y = rng.tensor(shape);
  const data = y.dataSync();
  for (let axis = 0; axis < 3; axis++) {
    const { groups: gs } = groups(data, shape, [axis], false);
    assert.deepEqual(Array.from(sc.argMax(y, axis).dataSync()), gs.map((g) => g.indexOf(Math.max(...g))), `argMax axis ${axis}`);
    assert.deepEqual(Array.from(sc.argMin(y, axis).dataSync()), gs.map((g) => g.indexOf(Math.min(...g))), `argMin axis ${axis}`);
  }
  const ints = sc.tensor([-4, -9, -1, -9], "int32");
  assert.equal(sc.argMin(ints).item(), 1);
  assert.equal(sc.argMax(ints).item(), 2);
});

test("logSumExp is stable for large and infinite values", () => {
  const x = sc.tensor([[1000, 1000], [-1000, -1000], [-Infinity, -Infinity], [Infinity, 1], [-Infinity, 0]], "float64");
  const y = sc.logSumExp(x, 1).dataSync();
  assert.ok(Math.abs(y[0]! - (1000 + Math.LN2)) < 1e-9);
  assert.ok(Math.abs(y[1]! - (-1000 + Math.LN2)) < 1e-9);
  assert.equal(y[2], -Infinity);
  assert.equal(y[3], Infinity);
  assert.equal(y[4], 0);
  const f32 = sc.logSumExp(sc.tensor([88, 89, 90], "float32")).item() as number;
  assert.ok(Math.abs(f32 - (90 + Math.log(1 + Math.exp(-1) + Math.exp(-2)))) < 1e-4);
  // the gradient is softmax, also for large values
  const g = sc.grad((t: sc.Tensor) => sc.logSumExp(t))(sc.tensor([1000, 1000, 1000, 1000], "float64")) as sc.Tensor;
  for (const v of g.dataSync()) assert.ok(Math.abs(v - 0.25) < 1e-12);
});

test("variance is two-pass accurate for large offsets", () => {
  const x = sc.tensor([1e8 + 1, 1e8 + 2, 1e8 + 3, 1e8 + 4], "float64");
  assert.ok(Math.abs((sc.variance(x).item() as number) - 1.25) < 1e-6);
  assert.deepEqual(sc.variance(sc.tensor([[1, 3], [2, 2]], "float64"), 1, true).arraySync(), [[1], [0]]);
});

test("cumsum: every flag combination along every axis matches naive loops", () => {
  const rng = new Rng(21);
  const shape = [2, 3, 4];
  const x = rng.tensor(shape);
  const data = x.dataSync();
  const strides = [12, 4, 1];
  for (let axis = 0; axis < 3; axis++) {
    for (const exclusive of [false, true]) {
      for (const reverse of [false, true]) {
        const y = sc.cumsum(x, axis, { exclusive, reverse });
        assert.deepEqual(y.shape, shape);
        const expected = Array.from(data, (_, i) => {
          const idx = unravel(i, shape);
          const n = shape[axis]!;
          let s = 0;
          for (let r = 0; r < n; r++) {
            const take = reverse ? (exclusive ? r > idx[axis]! : r >= idx[axis]!) : exclusive ? r < idx[axis]! : r <= idx[axis]!;
            if (take) s += data[i + (r - idx[axis]!) * strides[axis]!]!;
          }
          return s;
        });
        assertAllClose(y.dataSync(), expected, 1e-12, `cumsum axis=${axis} exclusive=${exclusive} reverse=${reverse}`);
      }
    }
  }
  assert.deepEqual(sc.cumsum(sc.tensor([[1, 2], [3, 4]])).arraySync(), [1, 3, 6, 10]);
  assert.deepEqual(sc.cumsum(sc.tensor([1, 2, 3]), 0, { exclusive: true }).arraySync(), [0, 1, 3]);
  assert.deepEqual(sc.cumsum(sc.tensor([1, 2, 3]), 0, { reverse: true }).arraySync(), [6, 5, 3]);
  assert.deepEqual(sc.cumsum(sc.tensor([[1, 2], [3, 4]], "int32"), 0).arraySync(), [[1, 2], [4, 6]]);
  assert.equal(sc.cumsum(sc.tensor([[1, 2], [3, 4]], "int32"), 0).dtype, "int32");
});

test("bad axes raise ShapeError naming the op", () => {
  const x = sc.ones([2, 3]);
  for (const op of ["sum", "mean", "prod", "max", "min", "logSumExp", "variance", "any", "all"]) {
    assert.throws(() => fns[op]!(x, 2), (e: Error) => e instanceof sc.ShapeError && e.message.startsWith(`${op}:`) && /axis 2/.test(e.message), op);
    assert.throws(() => fns[op]!(x, -3), (e: Error) => e instanceof sc.ShapeError && e.message.startsWith(`${op}:`), op);
    assert.throws(() => fns[op]!(x, [0, -2]), (e: Error) => e instanceof sc.ShapeError && /more than once/.test(e.message), op);
    assert.throws(() => fns[op]!(x, 0.5), (e: Error) => e instanceof sc.ShapeError && e.message.startsWith(`${op}:`), op);
  }
  assert.throws(() => sc.argMax(x, 2), (e: Error) => e instanceof sc.ShapeError && /^argMax:/.test(e.message));
  assert.throws(() => sc.argMin(x, [0, 1] as unknown as number), (e: Error) => e instanceof sc.ValueError && /^argMin:/.test(e.message));
  assert.throws(() => sc.cumsum(x, 2), (e: Error) => e instanceof sc.ShapeError && /^cumsum:/.test(e.message));
  assert.throws(() => sc.cumsum(x, [0] as unknown as number), (e: Error) => e instanceof sc.ValueError && /^cumsum:/.test(e.message));
  assert.throws(() => sc.sum(sc.scalar(1), 0), sc.ShapeError);
  assert.equal(sc.sum(sc.scalar(3)).item(), 3);
});

test("max/min gradients split evenly between ties", () => {
  const g = sc.grad((t: sc.Tensor) => sc.max(t))(sc.tensor([1, 3, 3, 2], "float64")) as sc.Tensor;
  assert.deepEqual(Array.from(g.dataSync()), [0, 0.5, 0.5, 0]);
  const x = sc.tensor([[1, 1, 1], [5, 2, 5]], "float64");
  const gmax = sc.grad((t: sc.Tensor) => sc.sum(sc.mul(sc.max(t, 1), sc.tensor([3, 2], "float64"))))(x) as sc.Tensor;
  assert.deepEqual(gmax.arraySync(), [[1, 1, 1], [1, 0, 1]]);
  const gmin = sc.grad((t: sc.Tensor) => sc.sum(sc.min(t, 0, true)))(sc.tensor([[1, 2, 1], [5, 2, 5]], "float64")) as sc.Tensor;
  assert.deepEqual(gmin.arraySync(), [[1, 0.5, 1], [0, 0.5, 0]]);
});

test("prod gradient with zeros: exact, no NaN", () => {
  const d = (values: number[]) => Array.from((sc.grad((t: sc.Tensor) => sc.prod(t))(sc.tensor(values, "float64")) as sc.Tensor).dataSync());
  assert.deepEqual(d([2, 3, 4]), [12, 8, 6]);
  assert.deepEqual(d([2, 0, 3]), [0, 6, 0]);
  assert.deepEqual(d([0, 0, 3]), [0, 0, 0]);
  assert.deepEqual(d([0]), [1]);
  const g = sc.grad((t: sc.Tensor) => sc.sum(sc.prod(t, 0)))(sc.tensor([[0, 2], [5, 0], [7, 3]], "float64")) as sc.Tensor;
  assert.deepEqual(g.arraySync(), [[35, 0], [0, 6], [0, 0]]);
});

test("mean, variance and cumsum gradients by hand", () => {
  const g = sc.grad((t: sc.Tensor) => sc.sum(sc.mean(t, 1)))(sc.ones([2, 4], "float64")) as sc.Tensor;
  assert.deepEqual(g.arraySync(), [[0.25, 0.25, 0.25, 0.25], [0.25, 0.25, 0.25, 0.25]]);
  const gv = sc.grad((t: sc.Tensor) => sc.variance(t))(sc.tensor([1, 2, 3, 6], "float64")) as sc.Tensor;
  // d var / d x_i = 2 (x_i - mean) / n, mean = 3
  assert.deepEqual(Array.from(gv.dataSync()), [-1, -0.5, 0, 1.5]);
  const gc = sc.grad((t: sc.Tensor) => sc.sum(sc.mul(sc.cumsum(t, 0), sc.tensor([1, 10, 100], "float64"))))(sc.zeros([3], "float64")) as sc.Tensor;
  assert.deepEqual(Array.from(gc.dataSync()), [111, 110, 100]);
  const ge = sc.grad((t: sc.Tensor) => sc.sum(sc.mul(sc.cumsum(t, 0, { exclusive: true, reverse: true }), sc.tensor([1, 10, 100], "float64"))))(
    sc.zeros([3], "float64"),
  ) as sc.Tensor;
  assert.deepEqual(Array.from(ge.dataSync()), [0, 1, 11]);
});

test("reductions are in the registry with the reduce family", () => {
  for (const name of ["sum", "mean", "prod", "max", "min", "argMax", "argMin", "logSumExp", "any", "all", "variance", "cumsum"]) {
    const def = sc.listOps().find((d) => d.name === name);
    assert.ok(def, name);
    assert.equal(def!.family, "reduce");
    assert.equal(def!.vjp !== undefined, !["argMax", "argMin", "any", "all"].includes(name), `${name} differentiability`);
  }
});
