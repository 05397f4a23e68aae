// Shape ops (src/ops/shape.ts): values against hand-computed (NumPy-checked) results and naive
// reference loops, every dtype for the data-moving ops, gradients' values, and error cases.
import { test } from "node:test";
import assert from "node:assert/strict";
import * as sc from "../../src/api/index.js";
import { Rng } from "../util/rng.js";
import { ravel, size, unravel } from "../util/indexing.js";

type Dt = sc.DType;

// ---- reference helpers (independent of the library) --------------------------------------

/** out[i] = x[f(outIndex)] for every index of outShape. */
function naive(x: ArrayLike<number>, xShape: readonly number[], outShape: readonly number[], f: (o: number[]) => number[]): number[] {
  return Array.from({ length: size(outShape) }, (_, i) => x[ravel(f(unravel(i, outShape)), xShape)]!);
}
/** Values representable in every dtype: distinct per position, exact. */
function valuesFor(dt: Dt, n: number): number[] {
  return Array.from({ length: n }, (_, i) =>
    dt === "bool" ? (i * 7) % 3 === 0 ? 1 : 0 : dt === "uint8" ? (i * 37) % 251 : dt === "int64" ? 2 ** 40 + i * 1001 : dt === "int32" ? i * 7919 - 50000 : i + 0.5,
  );
}
function make(dt: Dt, shape: number[]): { t: sc.Tensor; v: number[] } {
  const v = valuesFor(dt, size(shape));
  return { t: sc.tensor(dt === "bool" ? v.map((x) => x !== 0) : v, dt, shape), v };
}
function flat(t: sc.Tensor): number[] {
  return Array.from(t.dataSync());
}
function randTensor(rng: Rng, shape: number[], dt: Dt = "float64"): { t: sc.Tensor; v: number[] } {
  const v = Array.from({ length: size(shape) }, () => Math.round(rng.uniform(-100, 100)));
  return { t: sc.tensor(v, dt, shape), v };
}
function permutations(n: number): number[][] {
  if (n === 0) return [[]];
  return permutations(n - 1).flatMap((p) => Array.from({ length: n }, (_, k) => [...p.slice(0, k), n - 1, ...p.slice(k)]));
}
function throwsNamed(fn: () => unknown, cls: new (...a: any[]) => Error, op: string, ...parts: (string | RegExp)[]): void {
  assert.throws(fn, (e: unknown) => {
    assert.ok(e instanceof cls, `expected ${cls.name}, got ${String(e)}`);
    const m = (e as Error).message;
    assert.ok(m.startsWith(`${op}: `), `message should name ${op}: ${m}`);
    for (const p of parts) assert.ok(typeof p === "string" ? m.includes(p) : p.test(m), `message should mention ${String(p)}: ${m}`);
    return true;
  });
}
const DTYPES: Dt[] = ["float32", "float64", "int32", "int64", "uint8", "bool"];

// ---- transpose ----------------------------------------------------------------------------

test("transpose: hand-computed and default reversed", () => {
  const x = sc.tensor([[1, 2, 3], [4, 5, 6]]);
  assert.deepEqual(sc.transpose(x).arraySync(), [[1, 4], [2, 5], [3, 6]]);
  assert.deepEqual(x.transpose([1, 0]).arraySync(), [[1, 4], [2, 5], [3, 6]]);
  const y = sc.tensor([[[0, 1], [2, 3]], [[4, 5], [6, 7]]]);
  assert.deepEqual(y.transpose([2, 0, 1]).arraySync(), [[[0, 2], [4, 6]], [[1, 3], [5, 7]]]);
  assert.deepEqual(y.transpose([-1, 0, -2]).arraySync(), [[[0, 2], [4, 6]], [[1, 3], [5, 7]]]);
  assert.equal(x.transpose([0, 1]), x, "identity perm returns the input");
});

test("transpose: every permutation of rank-3 and rank-4 tensors matches naive indexing", () => {
  const rng = new Rng(11);
  for (const shape of [[2, 3, 4], [3, 1, 5, 2], [4, 3, 2, 5]]) {
    const { t, v } = randTensor(rng, shape);
    for (const perm of permutations(shape.length)) {
      const outShape = perm.map((p) => shape[p]!);
      const want = naive(v, shape, outShape, (o) => {
        const i = new Array<number>(shape.length);
        perm.forEach((p, d) => (i[p] = o[d]!));
        return i;
      });
      const got = sc.transpose(t, perm);
      assert.deepEqual(got.shape, outShape);
      assert.deepEqual(flat(got), want, `perm ${perm} of ${shape}`);
    }
  }
});

test("transpose: large and batched shapes (blocked kernel paths)", () => {
  const rng = new Rng(12);
  const cases: [number[], number[]][] = [
    [[67, 131], [1, 0]],
    [[3, 40, 50], [0, 2, 1]],
    [[2, 3, 17, 19], [0, 2, 3, 1]],
    [[2, 17, 19, 3], [0, 3, 1, 2]],
    [[5, 6, 7, 8], [3, 2, 1, 0]],
    [[33, 2, 35], [2, 1, 0]],
  ];
  for (const [shape, perm] of cases) {
    const { t, v } = randTensor(rng, shape, "float32");
    const outShape = perm.map((p) => shape[p]!);
    const want = naive(v, shape, outShape, (o) => {
      const i = new Array<number>(shape.length);
      perm.forEach((p, d) => (i[p] = o[d]!));
      return i;
    });
    assert.deepEqual(flat(sc.transpose(t, perm)), want, `${shape} by ${perm}`);
  }
});

test("transpose, concat, stack, unstack, slice, gather, pad, tile, flip: every dtype", () => {
  for (const dt of DTYPES) {
    const shape = [2, 3, 4];
    const { t, v } = make(dt, shape);
    const check = (y: sc.Tensor, want: number[], what: string) => {
      assert.equal(y.dtype, dt, `${what} ${dt}: dtype`);
      assert.deepEqual(flat(y), want, `${what} ${dt}`);
    };
    check(sc.transpose(t, [2, 0, 1]), naive(v, shape, [4, 2, 3], ([a, b, c]) => [b!, c!, a!]), "transpose");
    check(sc.concat([t, t], 1), naive(v, shape, [2, 6, 4], ([a, b, c]) => [a!, b! % 3, c!]), "concat");
    check(sc.stack([t, t], 3), naive(v, shape, [2, 3, 4, 2], ([a, b, c]) => [a!, b!, c!]), "stack");
    sc.unstack(t, 2).forEach((u, k) => check(u, naive(v, shape, [2, 3], ([a, b]) => [a!, b!, k]), "unstack"));
    check(sc.slice(t, [1, null, -1], [null, null, 0], [1, 2, -2]), naive(v, shape, [1, 2, 2], ([a, b, c]) => [1 + a!, 2 * b!, 3 - 2 * c!]), "slice");
    check(sc.gather(t, [2, 0, 2], 1), naive(v, shape, [2, 3, 4], ([a, b, c]) => [a!, [2, 0, 2][b!]!, c!]), "gather");
    check(sc.gatherND(t, [[1, 2], [0, 1]]), naive(v, shape, [2, 4], ([a, c]) => [[1, 0][a!]!, [2, 1][a!]!, c!]), "gatherND");
    const padded = sc.pad(t, [[0, 0], [1, 0], [0, 1]], dt === "bool" ? true : 7);
    const fillV = dt === "bool" ? 1 : 7;
    check(padded, Array.from({ length: 2 * 4 * 5 }, (_, i) => {
      const [a, b, c] = unravel(i, [2, 4, 5]) as [number, number, number];
      return b === 0 || c === 4 ? fillV : v[ravel([a, b - 1, c], shape)]!;
    }), "pad");
    check(sc.pad(t, [[1, 1], [0, 0], [2, 0]], 0, "reflect"), naive(v, shape, [4, 3, 6], ([a, b, c]) => [[1, 0, 1, 0][a!]!, b!, [2, 1, 0, 1, 2, 3][c!]!]), "pad reflect");
    check(sc.tile(t, [2, 1, 2]), naive(v, shape, [4, 3, 8], ([a, b, c]) => [a! % 2, b!, c! % 4]), "tile");
    check(sc.flip(t, [0, 2]), naive(v, shape, shape, ([a, b, c]) => [1 - a!, b!, 3 - c!]), "flip");
    check(sc.squeeze(sc.expandDims(t, [0, -1])), v, "expandDims/squeeze");
    const parts = sc.split(t, [1, 3], 2);
    check(parts[1]!, naive(v, shape, [2, 3, 3], ([a, b, c]) => [a!, b!, c! + 1]), "split");
    const sa = sc.scatterAdd(t, [1], sc.slice(t, [null, 0], [null, 1]), 1);
    assert.equal(sa.dtype, dt);
  }
});

test("int64 values beyond 2^31 survive every data-moving op exactly", () => {
  const big = [2 ** 52 + 1, -(2 ** 50) - 3, 2 ** 40, 7];
  const x = sc.tensor(big, "int64", [2, 2]);
  assert.deepEqual(flat(x.transpose()), [big[0], big[2], big[1], big[3]]);
  assert.deepEqual(flat(sc.gather(x, [1], 1)), [big[1], big[3]]);
  assert.deepEqual(flat(sc.scatterAdd(x, [0], sc.tensor([[1], [2]], "int64"), 1)), [big[0]! + 1, big[1], big[2]! + 2, big[3]]);
});

// ---- expandDims, squeeze ------------------------------------------------------------------

test("expandDims and squeeze: shapes, negative axes, views", () => {
  const x = sc.tensor([[1, 2, 3], [4, 5, 6]]);
  assert.deepEqual(sc.expandDims(x, 0).shape, [1, 2, 3]);
  assert.deepEqual(sc.expandDims(x, -1).shape, [2, 3, 1]);
  assert.deepEqual(sc.expandDims(x, 1).shape, [2, 1, 3]);
  assert.deepEqual(x.expandDims([0, -1]).shape, [1, 2, 3, 1]);
  assert.deepEqual(flat(sc.expandDims(x, 1)), [1, 2, 3, 4, 5, 6]);
  const y = sc.zeros([1, 2, 1, 3, 1]);
  assert.deepEqual(sc.squeeze(y).shape, [2, 3]);
  assert.deepEqual(y.squeeze(-1).shape, [1, 2, 1, 3]);
  assert.deepEqual(sc.squeeze(y, [0, 2]).shape, [2, 3, 1]);
  assert.equal(sc.squeeze(x), x);
  assert.deepEqual(sc.squeeze(sc.tensor([[5]])).shape, []);
  throwsNamed(() => sc.squeeze(y, 1), sc.ShapeError, "squeeze", "axis 1", "[1, 2, 1, 3, 1]", "size is 2");
  throwsNamed(() => sc.expandDims(x, 3), sc.ShapeError, "expandDims", "axis 3");
  throwsNamed(() => sc.expandDims(x, [1, 1]), sc.ShapeError, "expandDims", "more than once");
});

// ---- concat, stack, unstack, split --------------------------------------------------------

test("concat: values, negative axis, promotion, single input", () => {
  const a = sc.tensor([[1, 2], [3, 4]]);
  const b = sc.tensor([[5], [6]]);
  assert.deepEqual(sc.concat([a, b], 1).arraySync(), [[1, 2, 5], [3, 4, 6]]);
  assert.deepEqual(sc.concat([a, b, a], -1).arraySync(), [[1, 2, 5, 1, 2], [3, 4, 6, 3, 4]]);
  assert.deepEqual(sc.concat([a, sc.tensor([[7, 8]])]).arraySync(), [[1, 2], [3, 4], [7, 8]]);
  const mixed = sc.concat([sc.tensor([1, 2], "int32"), sc.tensor([0.5], "float64")]);
  assert.equal(mixed.dtype, "float64");
  assert.deepEqual(flat(mixed), [1, 2, 0.5]);
  assert.equal(sc.concat([a]), a);
  assert.deepEqual(sc.concat([sc.zeros([0, 2]), a]).shape, [2, 2]);
});

test("concat errors name the offending input and shapes", () => {
  const a = sc.zeros([2, 3]);
  throwsNamed(() => sc.concat([a, a, sc.zeros([3, 3])], 1), sc.ShapeError, "concat", "input 2", "[3, 3]", "[2, 3]", "axis 1");
  throwsNamed(() => sc.concat([a, sc.zeros([2, 3, 1])]), sc.ShapeError, "concat", "input 1", "[2, 3, 1]");
  throwsNamed(() => sc.concat([a, a], 2), sc.ShapeError, "concat", "axis 2", "[2, 3]");
  throwsNamed(() => sc.concat([sc.scalar(1), sc.scalar(2)]), sc.ShapeError, "concat", "scalars");
  throwsNamed(() => sc.concat([]), sc.ValueError, "concat", "empty");
  throwsNamed(() => sc.applyOp(sc.getOp("concat"), [a, sc.zeros([2, 3], "int32")], { axis: 0 }), sc.DtypeError, "concat", "input 1", "int32");
});

test("stack and unstack: values, axes, round trip", () => {
  const a = sc.tensor([1, 2, 3]);
  const b = sc.tensor([4, 5, 6]);
  assert.deepEqual(sc.stack([a, b]).arraySync(), [[1, 2, 3], [4, 5, 6]]);
  assert.deepEqual(sc.stack([a, b], 1).arraySync(), [[1, 4], [2, 5], [3, 6]]);
  assert.deepEqual(sc.stack([a, b], -1).arraySync(), [[1, 4], [2, 5], [3, 6]]);
  assert.deepEqual(sc.stack([1, 2, 3]).arraySync(), [1, 2, 3]);
  const x = sc.tensor([[1, 2, 3], [4, 5, 6]]);
  assert.deepEqual(sc.unstack(x).map((t) => t.arraySync()), [[1, 2, 3], [4, 5, 6]]);
  assert.deepEqual(x.unstack(-1).map((t) => t.arraySync()), [[1, 4], [2, 5], [3, 6]]);
  assert.deepEqual(sc.stack(sc.unstack(x, 1), 1).arraySync(), x.arraySync());
  assert.deepEqual(sc.unstack(sc.zeros([0, 2])), []);
  throwsNamed(() => sc.stack([a, sc.zeros([4])]), sc.ShapeError, "stack", "input 1", "[4]", "[3]");
  throwsNamed(() => sc.stack([a, b], 2), sc.ShapeError, "stack", "axis 2", "[3]");
  throwsNamed(() => sc.unstack(sc.scalar(1)), sc.ShapeError, "unstack", "scalar");
});

test("split: equal pieces, sizes with -1, errors", () => {
  const x = sc.tensor([[0, 1, 2, 3, 4, 5], [6, 7, 8, 9, 10, 11]]);
  assert.deepEqual(sc.split(x, 3, 1).map((t) => t.arraySync()), [[[0, 1], [6, 7]], [[2, 3], [8, 9]], [[4, 5], [10, 11]]]);
  assert.deepEqual(x.split([1, -1, 2], -1).map((t) => t.arraySync()), [[[0], [6]], [[1, 2, 3], [7, 8, 9]], [[4, 5], [10, 11]]]);
  assert.deepEqual(sc.split(x, [0, 2]).map((t) => t.shape), [[0, 6], [2, 6]]);
  assert.deepEqual(sc.split(x, 2).map((t) => t.arraySync()), [[[0, 1, 2, 3, 4, 5]], [[6, 7, 8, 9, 10, 11]]]);
  throwsNamed(() => sc.split(x, [2, 3], 1), sc.ShapeError, "split", "sum to 5", "size 6", "[2, 6]");
  throwsNamed(() => sc.split(x, 4, 1), sc.ShapeError, "split", "4 equal pieces", "size 6");
  throwsNamed(() => sc.split(x, [-1, -1], 1), sc.ShapeError, "split", "more than one -1");
  throwsNamed(() => sc.split(x, [4, 3, -1], 1), sc.ShapeError, "split", "sum to 7");
  throwsNamed(() => sc.split(x, [1.5, 4.5], 1), sc.ShapeError, "split", "1.5");
  throwsNamed(() => sc.split(x, 0), sc.ShapeError, "split", "positive integer");
});

test("split/unstack vjps treat null cotangents as zeros", () => {
  const x = sc.tensor([[1, 2, 3], [4, 5, 6]], "float64");
  const parts = sc.split(x, [1, 2], 1);
  const splitOp = sc.getOp("split");
  const g = splitOp.vjp!({ inputs: [x], outputs: parts, attrs: { sizes: [1, 2], axis: 1 } }, [null, sc.ones([2, 2], "float64")]);
  assert.deepEqual(g[0]!.arraySync(), [[0, 1, 1], [0, 1, 1]]);
  assert.deepEqual(splitOp.vjp!({ inputs: [x], outputs: parts, attrs: { sizes: [1, 2], axis: 1 } }, [null, null]), [null]);
  const rows = sc.unstack(x);
  const u = sc.getOp("unstack").vjp!({ inputs: [x], outputs: rows, attrs: { axis: 0 } }, [sc.tensor([7, 8, 9], "float64"), null]);
  assert.deepEqual(u[0]!.arraySync(), [[7, 8, 9], [0, 0, 0]]);
  // Through the tape: only one piece used.
  const dx = sc.grad((t: sc.Tensor) => sc.sum(sc.mul(sc.split(t, 3, 1)[2]!, 2)))(x) as sc.Tensor;
  assert.deepEqual(dx.arraySync(), [[0, 0, 2], [0, 0, 2]]);
});

// ---- slice --------------------------------------------------------------------------------

test("slice: Python/NumPy semantics on a 1-D range (clamping, negative indices and strides)", () => {
  const x = sc.arange(7);
  // [begin, end, step] -> list(range(7))[begin:end:step], from Python.
  const table: [number | null, number | null, number, number[]][] = [
    [null, null, 1, [0, 1, 2, 3, 4, 5, 6]],
    [2, 5, 1, [2, 3, 4]],
    [-3, null, 1, [4, 5, 6]],
    [null, -2, 1, [0, 1, 2, 3, 4]],
    [5, 2, 1, []],
    [-100, 100, 1, [0, 1, 2, 3, 4, 5, 6]],
    [null, null, 2, [0, 2, 4, 6]],
    [1, null, 3, [1, 4]],
    [null, null, -1, [6, 5, 4, 3, 2, 1, 0]],
    [5, 1, -2, [5, 3]],
    [-1, -8, -1, [6, 5, 4, 3, 2, 1, 0]],
    [100, -100, -3, [6, 3, 0]],
    [-2, null, -2, [5, 3, 1]],
    [2, 5, -1, []],
    [null, 3, -1, [6, 5, 4]],
    [10, null, -1, [6, 5, 4, 3, 2, 1, 0]],
    [-10, null, -1, []],
  ];
  for (const [b, e, s, want] of table) {
    const got = sc.slice(x, [b], [e], [s]);
    assert.deepEqual(flat(got), want, `[${b}:${e}:${s}]`);
    const str = `${b ?? ""}:${e ?? ""}:${s}`;
    assert.deepEqual(flat(x.slice(str)), want, `"${str}"`);
  }
});

test("slice: multi-axis strided slices against per-axis index lists", () => {
  const rng = new Rng(21);
  const shape = [5, 6, 7];
  const { t, v } = randTensor(rng, shape);
  const axisIdx = (n: number, b: number | null, e: number | null, s: number) => flat(sc.slice(sc.arange(n), [b], [e], [s]));
  const specs: [(number | null)[], (number | null)[], number[]][] = [
    [[1, null, -1], [4, null, 0], [2, -1, -3]],
    [[-2, 5, null], [null, 0, null], [-1, -2, 2]],
    [[null, null, null], [null, null, null], [-1, -1, -1]],
    [[0, 2, 3], [5, 3, 4], [4, 1, 1]],
  ];
  for (const [b, e, s] of specs) {
    const lists = shape.map((n, d) => axisIdx(n, b[d]!, e[d]!, s[d]!));
    const want = naive(v, shape, lists.map((l) => l.length), (o) => o.map((k, d) => lists[d]![k]!));
    const got = sc.slice(t, b, e, s);
    assert.deepEqual(got.shape, lists.map((l) => l.length));
    assert.deepEqual(flat(got), want, `${b} ${e} ${s}`);
  }
});

test("slice: partial specs, string specs with indices and ellipsis", () => {
  const x = sc.reshape(sc.arange(24), [2, 3, 4]);
  assert.deepEqual(sc.slice(x, [1]).shape, [1, 3, 4]);
  assert.deepEqual(sc.slice(x, [null, 1], [null, 2]).arraySync(), [[[4, 5, 6, 7]], [[16, 17, 18, 19]]]);
  assert.equal(sc.slice(x, []), x);
  assert.deepEqual(x.slice("1").arraySync(), [[12, 13, 14, 15], [16, 17, 18, 19], [20, 21, 22, 23]]);
  assert.deepEqual(x.slice("..., -1").arraySync(), [[3, 7, 11], [15, 19, 23]]);
  assert.deepEqual(x.slice("-1, ..., ::-2").arraySync(), [[15, 13], [19, 17], [23, 21]]);
  assert.deepEqual(x.slice("0, 1, 2").arraySync(), 6);
  assert.deepEqual(x.slice(":, 1:").shape, [2, 2, 4]);
  throwsNamed(() => x.slice("2"), sc.IndexError, "slice", "index 2", "axis 0", "-2..1");
  throwsNamed(() => x.slice("::0"), sc.ValueError, "slice", "non-zero");
  throwsNamed(() => sc.slice(x, [0], [1], [0]), sc.ValueError, "slice", "non-zero");
  throwsNamed(() => x.slice("a:b"), sc.ShapeError, "slice", "a:b");
  throwsNamed(() => x.slice("1,1,1,1"), sc.ShapeError, "slice", "4 axes", "[2, 3, 4]");
  throwsNamed(() => sc.slice(x, [0, 0, 0, 0]), sc.ShapeError, "slice", "4 entries", "[2, 3, 4]");
  throwsNamed(() => sc.slice(x, [0.5]), sc.ShapeError, "slice", "0.5");
});

test("slice gradient scatters into zeros at the strided positions", () => {
  const x = sc.tensor([0, 1, 2, 3, 4, 5, 6], "float64");
  const g = sc.grad((t: sc.Tensor) => sc.sum(sc.mul(sc.slice(t, [5], [null], [-2]), sc.tensor([10, 20, 30], "float64"))))(x) as sc.Tensor;
  assert.deepEqual(flat(g), [0, 30, 0, 20, 0, 10, 0], "x[5::-2] reads positions 5, 3, 1");
});

// ---- gather, gatherND, scatterAdd ----------------------------------------------------------

test("gather: values against naive indexing, index shapes, axes", () => {
  const rng = new Rng(31);
  const shape = [3, 4, 5];
  const { t, v } = randTensor(rng, shape);
  const idx = [[3, 0, 0], [2, 3, 1]];
  for (const axis of [0, 1, 2, -1]) {
    const a = axis < 0 ? axis + 3 : axis;
    const n = shape[a]!;
    const ix = idx.map((r) => r.map((k) => k % n));
    const outShape = [...shape.slice(0, a), 2, 3, ...shape.slice(a + 1)];
    const want = naive(v, shape, outShape, (o) => [...o.slice(0, a), ix[o[a]!]![o[a + 1]!]!, ...o.slice(a + 2)]);
    const got = sc.gather(t, ix, axis);
    assert.deepEqual(got.shape, outShape);
    assert.deepEqual(flat(got), want, `axis ${axis}`);
  }
  const x = sc.tensor([[1, 2], [3, 4], [5, 6]]);
  assert.deepEqual(x.gather(2).arraySync(), [5, 6], "scalar index drops the axis");
  assert.deepEqual(x.gather(sc.tensor([1, 1], "int64"), 0).arraySync(), [[3, 4], [3, 4]]);
  assert.deepEqual(x.gather(sc.tensor([0], "uint8"), 1).arraySync(), [[1], [3], [5]]);
  assert.deepEqual(x.gather([], 0).shape, [0, 2]);
});

test("gather: out-of-range and negative indices raise IndexError naming index and range", () => {
  const x = sc.tensor([[1, 2, 3], [4, 5, 6]]);
  throwsNamed(() => sc.gather(x, [[0, 1], [5, 0]], 1), sc.IndexError, "gather", "index 5", "position [1, 0]", "axis 1", "0..2");
  throwsNamed(() => sc.gather(x, [-1]), sc.IndexError, "gather", "index -1", "0..1", "negative");
  throwsNamed(() => sc.gather(x, [0.5]), sc.IndexError, "gather", "0.5", "not an integer");
  throwsNamed(() => sc.gather(x, sc.tensor([0, 1])), sc.DtypeError, "gather", "float32");
  throwsNamed(() => sc.gather(x, [0], 2), sc.ShapeError, "gather", "axis 2", "[2, 3]");
  throwsNamed(() => sc.gather(sc.scalar(1), [0]), sc.ShapeError, "gather", "scalar");
});

test("gatherND: values and errors", () => {
  const x = sc.reshape(sc.arange(24), [2, 3, 4]);
  assert.deepEqual(sc.gatherND(x, [[1, 2, 3], [0, 0, 1]]).arraySync(), [23, 1]);
  assert.deepEqual(sc.gatherND(x, [[1, 0], [0, 2]]).arraySync(), [[12, 13, 14, 15], [8, 9, 10, 11]]);
  assert.deepEqual(x.gatherND([[[1], [0]]]).shape, [1, 2, 3, 4]);
  assert.deepEqual(sc.gatherND(x, [1]).arraySync(), x.slice("1").arraySync());
  throwsNamed(() => sc.gatherND(x, [[1, 3]]), sc.IndexError, "gatherND", "[1,3]", "component 1 is 3", "0..2");
  throwsNamed(() => sc.gatherND(x, [[0, 0, 0, 0]]), sc.ShapeError, "gatherND", "[1, 4]", "[2, 3, 4]");
});

test("scatterAdd: duplicates accumulate, axes, broadcast updates, bool", () => {
  assert.deepEqual(flat(sc.scatterAdd(sc.zeros([5]), [1, 3, 1, 1], [1, 2, 3, 4])), [0, 8, 0, 2, 0]);
  const x = sc.tensor([[1, 1, 1], [2, 2, 2]]);
  assert.deepEqual(sc.scatterAdd(x, [2, 0, 2], [[10, 20, 30], [40, 50, 60]], 1).arraySync(), [[21, 1, 41], [52, 2, 102]]);
  assert.deepEqual(x.scatterAdd([1, 1], 5).arraySync(), [[1, 1, 1], [12, 12, 12]]);
  assert.deepEqual(sc.scatterAdd(x, [[0], [0]], sc.tensor([[[1, 2, 3]], [[4, 5, 6]]]), 0).arraySync(), [[6, 8, 10], [2, 2, 2]]);
  const b = sc.scatterAdd(sc.tensor([true, false, false]), [1, 1], sc.tensor([true, true]));
  assert.equal(b.dtype, "bool");
  assert.deepEqual(b.arraySync(), [true, true, false]);
  const u8 = sc.scatterAdd(sc.tensor([250, 0], "uint8"), [0], sc.tensor([10], "uint8"));
  assert.deepEqual(flat(u8), [4, 0], "uint8 wraps modulo 256");
  assert.equal(sc.scatterAdd(sc.tensor([1, 2], "int32"), [0], sc.tensor([0.5], "float64")).dtype, "float64");
  const x0 = sc.zeros([3]);
  sc.scatterAdd(x0, [0], [1]);
  assert.deepEqual(flat(x0), [0, 0, 0], "input storage is not mutated");
  throwsNamed(() => sc.scatterAdd(sc.zeros([3]), [3], [1]), sc.IndexError, "scatterAdd", "index 3", "0..2");
  throwsNamed(() => sc.scatterAdd(sc.zeros([3, 2]), [0, 1], sc.zeros([3, 2])), sc.ShapeError, "scatterAdd", "[3, 2]", "[2, 2]");
});

test("gather and scatterAdd gradients are each other's transposes", () => {
  const x = sc.tensor([1, 2, 3, 4], "float64");
  const gx = sc.grad((t: sc.Tensor) => sc.sum(sc.gather(t, [0, 0, 2, 0])))(x) as sc.Tensor;
  assert.deepEqual(flat(gx), [3, 0, 1, 0]);
  const u = sc.tensor([1, 1, 1], "float64");
  const w = sc.tensor([10, 20, 30, 40], "float64");
  const [dx, du] = sc.grad((a: sc.Tensor, b: sc.Tensor) => sc.sum(sc.mul(sc.scatterAdd(a, [3, 1, 3], b), w)), { argnums: "all" })(x, u) as sc.Tensor[];
  assert.deepEqual(flat(dx!), [10, 20, 30, 40]);
  assert.deepEqual(flat(du!), [40, 20, 40]);
  const m = sc.tensor([[1, 2], [3, 4]], "float64");
  const gm = sc.grad((t: sc.Tensor) => sc.sum(sc.gatherND(t, [[1, 0], [1, 0], [0, 1]])))(m) as sc.Tensor;
  assert.deepEqual(gm.arraySync(), [[0, 1], [2, 0]]);
});

// ---- pad, tile, flip ------------------------------------------------------------------------

test("pad: constant, reflect, symmetric, edge (NumPy values)", () => {
  const x = sc.reshape(sc.arange(12), [3, 4]);
  const p: [number, number][] = [[1, 2], [2, 1]];
  assert.deepEqual(sc.pad(sc.tensor([[1, 2], [3, 4]]), [[1, 0], [0, 2]]).arraySync(), [[0, 0, 0, 0], [1, 2, 0, 0], [3, 4, 0, 0]]);
  assert.deepEqual(sc.pad(sc.tensor([1, 2]), [[1, 1]], -1.5).arraySync(), [-1.5, 1, 2, -1.5]);
  assert.deepEqual(x.pad(p, 0, "reflect").arraySync(), [
    [6, 5, 4, 5, 6, 7, 6], [2, 1, 0, 1, 2, 3, 2], [6, 5, 4, 5, 6, 7, 6], [10, 9, 8, 9, 10, 11, 10], [6, 5, 4, 5, 6, 7, 6], [2, 1, 0, 1, 2, 3, 2],
  ]);
  assert.deepEqual(x.pad(p, 0, "symmetric").arraySync(), [
    [1, 0, 0, 1, 2, 3, 3], [1, 0, 0, 1, 2, 3, 3], [5, 4, 4, 5, 6, 7, 7], [9, 8, 8, 9, 10, 11, 11], [9, 8, 8, 9, 10, 11, 11], [5, 4, 4, 5, 6, 7, 7],
  ]);
  assert.deepEqual(x.pad(p, 0, "edge").arraySync(), [
    [0, 0, 0, 1, 2, 3, 3], [0, 0, 0, 1, 2, 3, 3], [4, 4, 4, 5, 6, 7, 7], [8, 8, 8, 9, 10, 11, 11], [8, 8, 8, 9, 10, 11, 11], [8, 8, 8, 9, 10, 11, 11],
  ]);
  // Pads wider than the axis keep reflecting (NumPy): [1, 2, 3] padded by 5.
  assert.deepEqual(flat(sc.pad(sc.tensor([1, 2, 3]), [[5, 5]], 0, "reflect")), [2, 1, 2, 3, 2, 1, 2, 3, 2, 1, 2, 3, 2]);
  assert.deepEqual(flat(sc.pad(sc.tensor([1, 2, 3]), [[5, 5]], 0, "symmetric")), [2, 3, 3, 2, 1, 1, 2, 3, 3, 2, 1, 1, 2]);
  assert.deepEqual(flat(sc.pad(sc.tensor([7]), [[2, 2]], 0, "reflect")), [7, 7, 7, 7, 7]);
  assert.equal(sc.pad(x, [[0, 0], [0, 0]]), x);
  const g = sc.grad((t: sc.Tensor) => sc.sum(sc.pad(t, [[2, 1]], 0, "reflect")))(sc.tensor([1, 2, 3], "float64")) as sc.Tensor;
  assert.deepEqual(flat(g), [1, 3, 2], "reflect gradient accumulates mirrored positions: [3 2 | 1 2 3 | 2]");
  throwsNamed(() => sc.pad(x, [[1, 1]]), sc.ShapeError, "pad", "1 entries", "[3, 4]");
  throwsNamed(() => sc.pad(x, [[1, 1], [-1, 0]]), sc.ShapeError, "pad", "-1");
  throwsNamed(() => sc.pad(x, [[1, 1], [0.5, 0]]), sc.ShapeError, "pad", "0.5");
  throwsNamed(() => sc.pad(x, [[1, 1], [0, 0]], 0, "wrap" as sc.PadMode), sc.ValueError, "pad", "wrap");
  throwsNamed(() => sc.pad(sc.zeros([0, 2]), [[1, 0], [0, 0]], 0, "edge"), sc.ShapeError, "pad", "empty axis 0");
});

test("tile: NumPy semantics and errors", () => {
  const x = sc.tensor([[1, 2], [3, 4]]);
  assert.deepEqual(sc.tile(x, [2, 1, 3]).arraySync(), [[[1, 2, 1, 2, 1, 2], [3, 4, 3, 4, 3, 4]], [[1, 2, 1, 2, 1, 2], [3, 4, 3, 4, 3, 4]]]);
  assert.deepEqual(sc.tile(sc.tensor([1, 2, 3]), [2]).arraySync(), [1, 2, 3, 1, 2, 3]);
  assert.deepEqual(x.tile([2]).arraySync(), [[1, 2, 1, 2], [3, 4, 3, 4]], "short reps are padded with leading 1s");
  assert.deepEqual(sc.tile(x, [0, 1]).shape, [0, 2]);
  assert.equal(sc.tile(x, [1, 1]), x);
  const g = sc.grad((t: sc.Tensor) => sc.sum(sc.mul(sc.tile(t, [3]), sc.tensor([1, 2, 3, 4, 5, 6], "float64"))))(sc.tensor([0, 0], "float64")) as sc.Tensor;
  assert.deepEqual(flat(g), [1 + 3 + 5, 2 + 4 + 6]);
  throwsNamed(() => sc.tile(x, [1.5, 2]), sc.ShapeError, "tile", "1.5", "non-negative integers", "[2, 2]");
  throwsNamed(() => sc.tile(x, [-1, 2]), sc.ShapeError, "tile", "-1");
});

test("flip: axes, default all, negative axes", () => {
  const x = sc.tensor([[1, 2, 3], [4, 5, 6]]);
  assert.deepEqual(sc.flip(x).arraySync(), [[6, 5, 4], [3, 2, 1]]);
  assert.deepEqual(x.flip(0).arraySync(), [[4, 5, 6], [1, 2, 3]]);
  assert.deepEqual(x.flip(-1).arraySync(), [[3, 2, 1], [6, 5, 4]]);
  assert.deepEqual(sc.flip(sc.tensor(5)).arraySync(), 5);
  throwsNamed(() => sc.flip(x, 2), sc.ShapeError, "flip", "axis 2", "[2, 3]");
  throwsNamed(() => sc.flip(x, [1, -1]), sc.ShapeError, "flip", "more than once", "[2, 3]");
});

// ---- clip -------------------------------------------------------------------------------------

test("clip: values, one-sided, broadcasting, NaN, dtypes", () => {
  const x = sc.tensor([-3, -1, 0, 1, 3, NaN], "float64");
  assert.deepEqual(flat(sc.clip(x, -1.5, 2)), [-1.5, -1, 0, 1, 2, NaN]);
  assert.deepEqual(flat(x.clip(null, 0)), [-3, -1, 0, 0, 0, NaN]);
  assert.deepEqual(flat(x.clip(0)), [0, 0, 0, 1, 3, NaN]);
  assert.deepEqual(sc.clip(sc.tensor([[1, 5], [9, -2]]), sc.tensor([0, 2]), sc.tensor([[4], [6]])).arraySync(), [[1, 4], [6, 2]]);
  const i = sc.clip(sc.tensor([-7, 3, 300], "int32"), 0, 255);
  assert.equal(i.dtype, "int32");
  assert.deepEqual(flat(i), [0, 3, 255]);
  assert.deepEqual(flat(sc.clip(sc.tensor([-7, 3, 300], "int32"), null, 10)), [-7, 3, 10]);
  assert.deepEqual(flat(sc.clip(sc.tensor([2 ** 52, -5], "int64"), 0, null)), [2 ** 52, 0]);
  assert.deepEqual(flat(sc.clip(sc.tensor([1, 200], "uint8"), 5, 100)), [5, 100]);
  assert.equal(sc.clip(sc.tensor([1, 2], "int32"), 0.5, 1.5).dtype, "float32");
  assert.deepEqual(flat(sc.clip(sc.tensor([1, 2, 3], "float64"), 3, 1)), [1, 1, 1], "min > max gives max, as NumPy");
  throwsNamed(() => sc.clip(sc.zeros([2, 3]), sc.zeros([4]), 1), sc.ShapeError, "clip", "[2, 3]", "[4]");
});

test("clip gradient passes where min <= x <= max, else to the binding bound", () => {
  const x = sc.tensor([-2, -1, 0, 1, 2], "float64");
  const lo = sc.tensor(-1, "float64");
  const hi = sc.tensor(1, "float64");
  const [dx, dlo, dhi] = sc.grad((a: sc.Tensor, b: sc.Tensor, c: sc.Tensor) => sc.sum(sc.clip(a, b, c)), { argnums: "all" })(x, lo, hi) as sc.Tensor[];
  assert.deepEqual(flat(dx!), [0, 1, 1, 1, 0]);
  assert.deepEqual(flat(dlo!), [1]);
  assert.deepEqual(flat(dhi!), [1]);
});

test("shape ops accept JS arrays and Variables and are installed as Tensor methods", () => {
  assert.deepEqual(sc.transpose([[1, 2]]).arraySync(), [[1], [2]]);
  const v = sc.variable(sc.tensor([[1, 2], [3, 4]], "float64"));
  assert.deepEqual(sc.flip(v, 0).arraySync(), [[3, 4], [1, 2]]);
  const t = sc.zeros([2, 3]);
  for (const m of ["transpose", "expandDims", "squeeze", "unstack", "split", "slice", "gather", "gatherND", "scatterAdd", "pad", "tile", "flip", "clip", "reshape", "broadcastTo"]) {
    assert.equal(typeof (t as unknown as Record<string, unknown>)[m], "function", m);
  }
});

test("transpose errors: bad perm", () => {
  const x = sc.zeros([2, 3, 4]);
  throwsNamed(() => sc.transpose(x, [0, 1]), sc.ShapeError, "transpose", "[0,1]", "2 entries", "[2, 3, 4]");
  throwsNamed(() => sc.transpose(x, [0, 1, 1]), sc.ShapeError, "transpose", "repeats axis 1", "[2, 3, 4]");
  throwsNamed(() => sc.transpose(x, [0, 1, 3]), sc.ShapeError, "transpose", "invalid axis 3", "[2, 3, 4]");
  throwsNamed(() => sc.transpose(x, [0, 1, 2.5]), sc.ShapeError, "transpose", "2.5");
  throwsNamed(() => sc.applyOp(sc.getOp("transpose"), [x], { perm: [2, 2, 0] }), sc.ShapeError, "transpose", "repeats axis 2");
});
