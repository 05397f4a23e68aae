/** matmul, dot, outer, einsum: values vs naive loops, dtypes, rank-1 operands, errors, gradients. */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as sc from "../../src/api/index.js";
import { Rng } from "../util/rng.js";
import { strides, unravel } from "../util/indexing.js";

type Nd = { data: ArrayLike<number>; shape: number[] };



/** Naive batched matmul with NumPy broadcasting of batch dims and transpose flags (rank >= 2). */
function naiveMatmul(a: Nd, b: Nd, tA = false, tB = false): Nd {
  const ra = a.shape.length,
    rb = b.shape.length;
  const m = tA ? a.shape[ra - 1]! : a.shape[ra - 2]!;
  const k = tA ? a.shape[ra - 2]! : a.shape[ra - 1]!;
  const n = tB ? b.shape[rb - 2]! : b.shape[rb - 1]!;
  const ba = a.shape.slice(0, ra - 2),
    bb = b.shape.slice(0, rb - 2);
  const nb = Math.max(ba.length, bb.length);
  const pad = (s: number[]) => [...new Array(nb - s.length).fill(1), ...s];
  const pa = pad(ba),
    pb = pad(bb);
  const batch = pa.map((d, i) => Math.max(d, pb[i]!));
  const sa = strides(a.shape),
    sb = strides(b.shape);
  const nbatch = batch.reduce((x, y) => x * y, 1);
  const out = new Float64Array(nbatch * m * n);
  for (let t = 0; t < nbatch; t++) {
    const idx = unravel(t, batch);
    let ao = 0,
      bo = 0;
    for (let d = 0; d < nb; d++) {
      const ia = pa[d] === 1 ? 0 : idx[d]!;
      const ib = pb[d] === 1 ? 0 : idx[d]!;
      const da = d - (nb - ba.length),
        db = d - (nb - bb.length);
      if (da >= 0) ao += ia * sa[da]!;
      if (db >= 0) bo += ib * sb[db]!;
    }
    for (let i = 0; i < m; i++) {
      for (let j = 0; j < n; j++) {
        let s = 0;
        for (let p = 0; p < k; p++) {
          const av = a.data[ao + (tA ? p * m + i : i * k + p)]!;
          const bv = b.data[bo + (tB ? j * k + p : p * n + j)]!;
          s += av * bv;
        }
        out[t * m * n + i * n + j] = s;
      }
    }
  }
  return { data: out, shape: [...batch, m, n] };
}

function nd(t: sc.Tensor): Nd {
  return { data: t.dataSync(), shape: t.shape as number[] };
}

function assertClose(actual: sc.Tensor, expected: Nd, tol: number, what: string): void {
  assert.deepEqual(actual.shape, expected.shape, `${what}: shape`);
  const a = actual.dataSync();
  assert.equal(a.length, expected.data.length, `${what}: size`);
  for (let i = 0; i < a.length; i++) {
    const e = expected.data[i]!;
    assert.ok(Math.abs(a[i]! - e) <= tol * Math.max(1, Math.abs(e)), `${what}[${i}]: ${a[i]} vs ${e}`);
  }
}

/** Naive einsum: loops over every assignment of all labels (explicit output, letters only). */
function naiveEinsum(eq: string, ...xs: sc.Tensor[]): Nd {
  const [lhs, rhs] = eq.split("->") as [string, string];
  const terms = lhs.split(",");
  const size = new Map<string, number>();
  terms.forEach((t, i) => [...t].forEach((l, d) => size.set(l, xs[i]!.shape[d]!)));
  const labels = [...size.keys()];
  const outShape = [...rhs].map((l) => size.get(l)!);
  const out = new Float64Array(outShape.reduce((a, b) => a * b, 1));
  const total = labels.reduce((a, l) => a * size.get(l)!, 1);
  const datas = xs.map((x) => x.dataSync());
  const xStrides = xs.map((x) => strides(x.shape as number[]));
  const oStrides = strides(outShape);
  for (let c = 0; c < total; c++) {
    const val = new Map<string, number>();
    let r = c;
    for (let i = labels.length - 1; i >= 0; i--) {
      const s = size.get(labels[i]!)!;
      val.set(labels[i]!, r % s);
      r = Math.floor(r / s);
    }
    let p = 1;
    terms.forEach((t, i) => {
      let off = 0;
      [...t].forEach((l, d) => (off += val.get(l)! * xStrides[i]![d]!));
      p *= datas[i]![off]!;
    });
    let o = 0;
    [...rhs].forEach((l, d) => (o += val.get(l)! * oStrides[d]!));
    out[o] += p;
  }
  return { data: out, shape: outShape };
}

// ---------------------------------------------------------------------------------------

test("matmul: every transpose combination, batch broadcast [2,1,3,4] x [5,4,2], vs naive loops", () => {
  const rng = new Rng(1);
  const cases: [number[], number[]][] = [
    [[3, 4], [4, 2]],
    [[2, 1, 3, 4], [5, 4, 2]],
    [[1, 3, 4], [2, 4, 5]],
    [[2, 2, 3], [4, 1, 3, 6]],
    [[3, 1], [1, 5]],
    [[1, 1], [1, 1]],
  ];
  for (const dtype of ["float64", "float32"] as const) {
    for (const [sa, sb] of cases) {
      for (const tA of [false, true]) {
        for (const tB of [false, true]) {
          const shapeA = tA ? [...sa.slice(0, -2), sa[sa.length - 1]!, sa[sa.length - 2]!] : sa;
          const shapeB = tB ? [...sb.slice(0, -2), sb[sb.length - 1]!, sb[sb.length - 2]!] : sb;
          const a = rng.tensor(shapeA, -1, 1, dtype);
          const b = rng.tensor(shapeB, -1, 1, dtype);
          const y = sc.matmul(a, b, { transposeA: tA, transposeB: tB });
          assert.equal(y.dtype, dtype);
          assertClose(y, naiveMatmul(nd(a), nd(b), tA, tB), dtype === "float64" ? 1e-12 : 1e-5, `${JSON.stringify(shapeA)} x ${JSON.stringify(shapeB)} tA=${tA} tB=${tB} ${dtype}`);
        }
      }
    }
  }
  assert.deepEqual(sc.matmul(rng.tensor([2, 1, 3, 4]), rng.tensor([5, 4, 2])).shape, [2, 5, 3, 2]);
});

test("matmul: large float32 products (the SIMD path) match naive loops", () => {
  const rng = new Rng(2);
  for (const [tA, tB] of [[false, false], [true, false], [false, true], [true, true]] as const) {
    const a = rng.tensor(tA ? [2, 40, 33] : [2, 33, 40], -1, 1, "float32");
    const b = rng.tensor(tB ? [1, 29, 40] : [1, 40, 29], -1, 1, "float32");
    assertClose(sc.matmul(a, b, { transposeA: tA, transposeB: tB }), naiveMatmul(nd(a), nd(b), tA, tB), 1e-4, `large tA=${tA} tB=${tB}`);
  }
});

test("matmul: rank-1 operands are promoted and squeezed as in NumPy", () => {
  const rng = new Rng(3);
  const v4 = rng.tensor([4]);
  const m43 = rng.tensor([4, 3]);
  const m24 = rng.tensor([2, 4]);
  const b542 = rng.tensor([5, 4, 2]);
  const b234 = rng.tensor([2, 3, 4]);
  const row = (v: sc.Tensor) => ({ data: v.dataSync(), shape: [1, v.shape[0]!] });
  const col = (v: sc.Tensor) => ({ data: v.dataSync(), shape: [v.shape[0]!, 1] });
  const squeeze = (r: Nd, shape: number[]): Nd => ({ data: r.data, shape });

  assertClose(sc.matmul(v4, m43), squeeze(naiveMatmul(row(v4), nd(m43)), [3]), 1e-12, "vector @ matrix");
  assertClose(sc.matmul(m24, v4), squeeze(naiveMatmul(nd(m24), col(v4)), [2]), 1e-12, "matrix @ vector");
  assertClose(sc.matmul(v4, v4), squeeze(naiveMatmul(row(v4), col(v4)), []), 1e-12, "vector @ vector");
  assertClose(sc.matmul(v4, b542), squeeze(naiveMatmul(row(v4), nd(b542)), [5, 2]), 1e-12, "vector @ batch");
  assertClose(sc.matmul(b234, v4), squeeze(naiveMatmul(nd(b234), col(v4)), [2, 3]), 1e-12, "batch @ vector");
  // transpose flags apply to the matrix operand; a vector has nothing to transpose
  const m34 = rng.tensor([3, 4]);
  assertClose(sc.matmul(v4, m34, { transposeA: true, transposeB: true }), squeeze(naiveMatmul(row(v4), nd(m34), false, true), [3]), 1e-12, "flags");
  assertClose(sc.matmul(m34, v4, { transposeB: true }), squeeze(naiveMatmul(nd(m34), col(v4)), [3]), 1e-12, "flag on vector b");
});

test("matmul: integer dtypes, promotion, and the method form", () => {
  const a = sc.tensor([[1, 2], [3, 4]], "int32");
  const b = sc.tensor([[5, 6], [7, 8]], "int32");
  const y = a.matmul(b);
  assert.equal(y.dtype, "int32");
  assert.deepEqual(y.arraySync(), [[19, 22], [43, 50]]);
  assert.deepEqual(sc.matmul(a, b, { transposeA: true, transposeB: true }).arraySync(), [[23, 31], [34, 46]]);
  const l = sc.matmul(sc.tensor([[1, 2]], "int64"), sc.tensor([[3], [4]], "int64"));
  assert.equal(l.dtype, "int64");
  assert.deepEqual(l.arraySync(), [[11]]);
  const mixed = sc.matmul(a, sc.tensor([[0.5, 0], [0, 0.5]], "float32"));
  assert.equal(mixed.dtype, "float32");
  assert.deepEqual(mixed.arraySync(), [[0.5, 1], [1.5, 2]]);
  assert.equal(sc.matmul(sc.tensor([[1, 2]], "float32"), sc.tensor([[1], [1]], "float64")).dtype, "float64");
  const bools = sc.matmul(sc.tensor([[true, true], [false, true]]), sc.tensor([[true, false], [true, true]]));
  assert.equal(bools.dtype, "int32");
  assert.deepEqual(bools.arraySync(), [[2, 1], [1, 1]]);
  assert.deepEqual(sc.matmul([[1, 2]], [[3], [4]]).arraySync(), [[11]]);
});

test("matmul: zero-size dimensions", () => {
  assert.deepEqual(sc.matmul(sc.ones([3, 0]), sc.ones([0, 2])).arraySync(), [[0, 0], [0, 0], [0, 0]]);
  assert.deepEqual(sc.matmul(sc.ones([0, 3]), sc.ones([3, 2])).shape, [0, 2]);
  assert.deepEqual(sc.matmul(sc.ones([0, 2, 3]), sc.ones([3, 2])).shape, [0, 2, 2]);
});

test("matmul: shape errors name the op and both shapes", () => {
  const check = (f: () => unknown, re: RegExp) =>
    assert.throws(f, (e: Error) => e instanceof sc.ShapeError && e.message.startsWith("matmul:") && re.test(e.message), String(re));
  check(() => sc.matmul(sc.ones([2, 3]), sc.ones([4, 5])), /\[2, 3\].*\[4, 5\]/);
  check(() => sc.matmul(sc.ones([3]), sc.ones([4, 5])), /\[3\].*\[4, 5\]/);
  check(() => sc.matmul(sc.ones([2, 3]), sc.ones([2])), /\[2, 3\].*\[2\]/);
  check(() => sc.matmul(sc.ones([2, 3]), sc.ones([2, 3]), { transposeB: false }), /\[2, 3\].*\[2, 3\]/);
  check(() => sc.matmul(sc.ones([3, 2]), sc.ones([3, 4]), { transposeA: false }), /\[3, 2\].*\[3, 4\]/);
  check(() => sc.matmul(sc.ones([2, 3]), sc.ones([4, 3]), { transposeA: true, transposeB: true }), /transposeA, transposeB/);
  check(() => sc.matmul(sc.ones([2, 2, 3]), sc.ones([4, 3, 2])), /\[2, 2, 3\].*\[4, 3, 2\]/);
  check(() => sc.matmul(sc.scalar(2), sc.ones([2, 2])), /rank >= 1/);
  assert.deepEqual(sc.matmul(sc.ones([2, 3]), sc.ones([2, 3]), { transposeB: true }).shape, [2, 2]);
});

test("dot: scalars, vectors, matrices and NumPy's N-D rule", () => {
  assert.equal(sc.dot([1, 2, 3], [4, 5, 6]).item(), 32);
  assert.deepEqual(sc.dot([1, 2, 3], [4, 5, 6]).shape, []);
  assert.deepEqual(sc.dot([[1, 2], [3, 4]], [[5, 6], [7, 8]]).arraySync(), [[19, 22], [43, 50]]);
  assert.deepEqual(sc.dot([[1, 2], [3, 4]], [1, 1]).arraySync(), [3, 7]);
  assert.deepEqual(sc.dot(2, [1, 2]).arraySync(), [2, 4]);
  assert.deepEqual(sc.tensor([1, 2]).dot([3, 4]).arraySync(), 11);
  const rng = new Rng(4);
  const a = rng.tensor([2, 3, 4]);
  const b = rng.tensor([5, 4, 6]);
  const y = sc.dot(a, b);
  assert.deepEqual(y.shape, [2, 3, 5, 6]);
  const ad = a.dataSync(),
    bd = b.dataSync();
  const expected = new Float64Array(2 * 3 * 5 * 6);
  for (let i = 0; i < 2; i++)
    for (let j = 0; j < 3; j++)
      for (let k = 0; k < 5; k++)
        for (let m = 0; m < 6; m++) {
          let s = 0;
          for (let p = 0; p < 4; p++) s += ad[i * 12 + j * 4 + p]! * bd[k * 24 + p * 6 + m]!;
          expected[((i * 3 + j) * 5 + k) * 6 + m] = s;
        }
  assertClose(y, { data: expected, shape: [2, 3, 5, 6] }, 1e-12, "dot N-D");
  const v = rng.tensor([4]);
  assertClose(sc.dot(a, v), { data: naiveMatmul(nd(a), { data: v.dataSync(), shape: [4, 1] }).data, shape: [2, 3] }, 1e-12, "dot N-D . 1-D");
  assert.deepEqual(sc.dot(a, v).shape, [2, 3]);
  assert.throws(() => sc.dot([1, 2, 3], [1, 2]), (e: Error) => e instanceof sc.ShapeError && /^dot:/.test(e.message) && /\[3\].*\[2\]/.test(e.message));
  assert.throws(() => sc.dot(a, rng.tensor([3, 2])), (e: Error) => e instanceof sc.ShapeError && /^dot:/.test(e.message));
});

test("outer flattens its operands", () => {
  assert.deepEqual(sc.outer([1, 2], [3, 4, 5]).arraySync(), [[3, 4, 5], [6, 8, 10]]);
  assert.deepEqual(sc.outer([[1, 2], [3, 4]], [1, -1]).arraySync(), [[1, -1], [2, -2], [3, -3], [4, -4]]);
  assert.equal(sc.outer(sc.tensor([1, 2], "int32"), sc.tensor([3], "int32")).dtype, "int32");
});

test("einsum: the common equations match naive loops", () => {
  const rng = new Rng(5);
  const cases: [string, number[][]][] = [
    ["ij,jk->ik", [[3, 4], [4, 2]]],
    ["bij,bjk->bik", [[2, 3, 4], [2, 4, 5]]],
    ["i,j->ij", [[3], [4]]],
    ["ii->", [[4, 4]]],
    ["ij->ji", [[3, 5]]],
    ["ij->i", [[3, 5]]],
    ["ij->j", [[3, 5]]],
    ["ij->", [[3, 5]]],
    ["i,i->", [[6], [6]]],
    ["i,i->i", [[6], [6]]],
    ["ii->i", [[3, 3]]],
    ["iij->j", [[3, 3, 2]]],
    ["iji->j", [[3, 2, 3]]],
    ["bji,kjb->kbi", [[2, 4, 3], [5, 4, 2]]],
    ["ij,ij->ij", [[2, 3], [2, 3]]],
    ["ij,kj->ik", [[2, 3], [4, 3]]],
    ["ji,jk->ik", [[3, 2], [3, 4]]],
    ["ji,kj->ik", [[3, 2], [4, 3]]],
    ["ijk,jkl->il", [[2, 3, 4], [3, 4, 5]]],
    ["abc,cd->dba", [[2, 3, 4], [4, 2]]],
    ["ij,jk,kl->il", [[2, 3], [3, 4], [4, 2]]],
    ["i,j,k->ijk", [[2], [3], [2]]],
    ["ii,ij->j", [[3, 3], [3, 2]]],
    ["ij,jk->", [[3, 4], [4, 2]]],
    ["bij,jk->bik", [[2, 3, 4], [4, 5]]],
    ["ij,j->i", [[3, 4], [4]]],
    [",ij->ij", [[], [2, 3]]],
    ["i,->i", [[4], []]],
    ["Ab,bC->AC", [[2, 3], [3, 4]]],
    ["i,i,i->", [[4], [4], [4]]],
    ["ij,ij,ij->i", [[2, 3], [2, 3], [2, 3]]],
    ["bii->b", [[2, 3, 3]]],
    ["ij,ji->", [[3, 4], [4, 3]]],
    ["i,j,i->j", [[3], [2], [3]]],
  ];
  for (const [eq, shapes] of cases) {
    const xs = shapes.map((s) => rng.tensor(s));
    assertClose(sc.einsum(eq, ...xs), naiveEinsum(eq, ...xs), 1e-12, eq);
  }
});

test("einsum: implicit output, whitespace, ellipsis, dtypes", () => {
  const rng = new Rng(6);
  const a = rng.tensor([3, 4]),
    b = rng.tensor([4, 2]);
  assertClose(sc.einsum("ij,jk", a, b), naiveEinsum("ij,jk->ik", a, b), 1e-12, "implicit matmul");
  assertClose(sc.einsum("ji", a), naiveEinsum("ji->ij", a), 1e-12, "implicit transpose (alphabetical output)");
  const sq = rng.tensor([3, 3]);
  assertClose(sc.einsum("ii", sq), naiveEinsum("ii->", sq), 1e-12, "implicit trace");
  assertClose(sc.einsum(" i j , j k -> i k ", a, b), naiveEinsum("ij,jk->ik", a, b), 1e-12, "whitespace");
  assertClose(sc.einsum("ba", a), naiveEinsum("ba->ab", a), 1e-12, "implicit sorts labels");
  // ellipsis: batch dims broadcast
  const x = rng.tensor([2, 1, 3, 4]),
    y = rng.tensor([5, 4, 2]);
  assertClose(sc.einsum("...ij,...jk->...ik", x, y), naiveMatmul(nd(x), nd(y)), 1e-12, "ellipsis matmul");
  assertClose(sc.einsum("...ij,...jk", x, y), naiveMatmul(nd(x), nd(y)), 1e-12, "implicit ellipsis matmul");
  const z = rng.tensor([2, 3, 4]);
  assertClose(sc.einsum("...j->...", z), { data: sc.sum(z, -1).dataSync(), shape: [2, 3] }, 1e-12, "ellipsis row sums");
  assertClose(sc.einsum("i...->...i", z), { data: sc.transpose(z, [1, 2, 0]).dataSync(), shape: [3, 4, 2] }, 1e-12, "ellipsis transpose");
  assertClose(sc.einsum("...ij->ij", z), { data: sc.sum(z, 0).dataSync(), shape: [3, 4] }, 1e-12, "ellipsis summed");
  // dtypes
  const ints = sc.einsum("ij,jk->ik", sc.tensor([[1, 2], [3, 4]], "int32"), sc.tensor([[1, 0], [0, 1]], "int32"));
  assert.equal(ints.dtype, "int32");
  assert.deepEqual(ints.arraySync(), [[1, 2], [3, 4]]);
  assert.equal(sc.einsum("ij,jk->ik", sc.tensor([[1, 2]], "float32"), sc.tensor([[1], [2]], "float64")).dtype, "float64");
  assert.equal(sc.einsum("ii->", sc.tensor([[true, false], [true, true]])).item(), 2);
  assert.equal(sc.einsum("i,i", [1, 2, 3], [4, 5, 6]).item(), 32);
});

test("einsum: bad equations raise errors naming the equation", () => {
  const a = sc.ones([2, 3]);
  const check = (f: () => unknown, type: new (...args: any[]) => Error, eq: string, re: RegExp) =>
    assert.throws(f, (e: Error) => e instanceof type && e.message.startsWith("einsum:") && e.message.includes(JSON.stringify(eq)) && re.test(e.message), `${eq} ${re}`);
  check(() => sc.einsum("ij,jk->ik", a), sc.ValueError, "ij,jk->ik", /2 input terms but 1 operand/);
  check(() => sc.einsum("ij->ik", a), sc.ValueError, "ij->ik", /output label "k"/);
  check(() => sc.einsum("ij->ii", a), sc.ValueError, "ij->ii", /more than once/);
  check(() => sc.einsum("i1->i", a), sc.ValueError, "i1->i", /"1"/);
  check(() => sc.einsum("ij->i->j", a), sc.ValueError, "ij->i->j", /more than one "->"/);
  check(() => sc.einsum("ijk->i", a), sc.ShapeError, "ijk->i", /\[2, 3\]/);
  check(() => sc.einsum("i->i", a), sc.ShapeError, "i->i", /\[2, 3\]/);
  check(() => sc.einsum("ii->i", a), sc.ShapeError, "ii->i", /label "i" has sizes 2 and 3/);
  check(() => sc.einsum("ij,ij->ij", a, sc.ones([3, 2])), sc.ShapeError, "ij,ij->ij", /label "i" has sizes 2 and 3/);
  check(() => sc.einsum("...i,...i->...i", sc.ones([2, 3]), sc.ones([4, 3])), sc.ShapeError, "...i,...i->...i", /ellipsis/);
  check(() => sc.einsum("....i->i", a), sc.ValueError, "....i->i", /"\."/);
  assert.throws(() => sc.einsum("i->i"), (e: Error) => e instanceof sc.ValueError && /no operands/.test(e.message));
});

test("matmul gradients against hand-derived formulas (batch broadcast sums back)", () => {
  const rng = new Rng(7);
  const a = rng.tensor([2, 1, 3, 4]);
  const b = rng.tensor([5, 4, 2]);
  const [ga, gb] = sc.grad((x: sc.Tensor, y: sc.Tensor) => sc.sum(sc.matmul(x, y)), { argnums: "all" })(a, b) as sc.Tensor[];
  assert.deepEqual(ga!.shape, [2, 1, 3, 4]);
  assert.deepEqual(gb!.shape, [5, 4, 2]);
  // d sum(A B) / dA[.., i, p] = sum over the 5 batch b's and columns j of B[b, p, j]
  const bd = b.dataSync();
  const rowSums = Array.from({ length: 4 }, (_, p) => {
    let s = 0;
    for (let t = 0; t < 5; t++) for (let j = 0; j < 2; j++) s += bd[t * 8 + p * 2 + j]!;
    return s;
  });
  const gad = ga!.dataSync();
  for (let i = 0; i < gad.length; i++) assert.ok(Math.abs(gad[i]! - rowSums[i % 4]!) < 1e-12);
  // d sum(A B) / dB[t, p, j] = sum over the 2 batch a's and rows i of A[., 0, i, p]
  const ad = a.dataSync();
  const colSums = Array.from({ length: 4 }, (_, p) => {
    let s = 0;
    for (let t = 0; t < 2; t++) for (let i = 0; i < 3; i++) s += ad[t * 12 + i * 4 + p]!;
    return s;
  });
  const gbd = gb!.dataSync();
  for (let i = 0; i < gbd.length; i++) assert.ok(Math.abs(gbd[i]! - colSums[Math.floor(i / 2) % 4]!) < 1e-12);
});

test("matmul is one registry op in the linalg family; einsum, dot and outer are compositions", () => {
  const def = sc.listOps().find((d) => d.name === "matmul");
  assert.ok(def && def.family === "linalg" && def.vjp);
  for (const name of ["einsum", "dot", "outer"]) assert.ok(!sc.listOps().some((d) => d.name === name), name);
});
