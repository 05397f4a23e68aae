/** nn ops: softmax, logSoftmax, conv2d, conv2dTranspose, pooling, topK, sort, argsort, against naive reference loops. */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as sc from "../../src/api/index.js";
import { Rng } from "../util/rng.js";

function close(actual: ArrayLike<number>, expected: ArrayLike<number>, tol: number, what = ""): void {
  assert.equal(actual.length, expected.length, `${what}: length ${actual.length} vs ${expected.length}`);
  for (let i = 0; i < actual.length; i++) {
    const a = actual[i]!, e = expected[i]!;
    if (Number.isNaN(e)) {
      assert.ok(Number.isNaN(a), `${what}: element ${i}: ${a} vs NaN`);
      continue;
    }
    assert.ok(Math.abs(a - e) <= tol * Math.max(1, Math.abs(e)), `${what}: element ${i}: ${a} vs ${e}`);
  }
}

const prod = (s: number[]): number => s.reduce((a, b) => a * b, 1);

// ---- reference implementations (independent of the library) ---------------------------------

/** conv2d by 7 nested loops; pads [top, left, bottom, right]. */
function refConv2d(x: ArrayLike<number>, xs: number[], w: ArrayLike<number>, ws: number[], s: [number, number], pads: number[], d: [number, number], groups: number) {
  const [N, C, H, W] = xs as [number, number, number, number];
  const [O, Cg, kH, kW] = ws as [number, number, number, number];
  const oH = Math.floor((H + pads[0]! + pads[2]! - d[0] * (kH - 1) - 1) / s[0]) + 1;
  const oW = Math.floor((W + pads[1]! + pads[3]! - d[1] * (kW - 1) - 1) / s[1]) + 1;
  const Og = O / groups;
  const out = new Float64Array(N * O * oH * oW);
  for (let n = 0; n < N; n++)
    for (let o = 0; o < O; o++)
      for (let oh = 0; oh < oH; oh++)
        for (let ow = 0; ow < oW; ow++) {
          let acc = 0;
          const g = Math.floor(o / Og);
          for (let c = 0; c < Cg; c++)
            for (let ki = 0; ki < kH; ki++)
              for (let kj = 0; kj < kW; kj++) {
                const ih = oh * s[0] - pads[0]! + ki * d[0];
                const iw = ow * s[1] - pads[1]! + kj * d[1];
                if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                acc += x[((n * C + g * Cg + c) * H + ih) * W + iw]! * w[((o * Cg + c) * kH + ki) * kW + kj]!;
              }
          out[((n * O + o) * oH + oh) * oW + ow] = acc;
        }
  return { data: out, shape: [N, O, oH, oW] };
}

/** Transposed conv: every input element scatters x * w into the output (PyTorch layout [inC, outC/groups, kH, kW]). */
function refConv2dTranspose(
  x: ArrayLike<number>, xs: number[], w: ArrayLike<number>, ws: number[],
  s: [number, number], pads: number[], d: [number, number], groups: number, op: [number, number],
) {
  const [N, C, H, W] = xs as [number, number, number, number];
  const [, Og, kH, kW] = ws as [number, number, number, number];
  const Cg = C / groups;
  const O = Og * groups;
  const oH = (H - 1) * s[0] - pads[0]! - pads[2]! + d[0] * (kH - 1) + 1 + op[0];
  const oW = (W - 1) * s[1] - pads[1]! - pads[3]! + d[1] * (kW - 1) + 1 + op[1];
  const out = new Float64Array(N * O * oH * oW);
  for (let n = 0; n < N; n++)
    for (let c = 0; c < C; c++)
      for (let ih = 0; ih < H; ih++)
        for (let iw = 0; iw < W; iw++)
          for (let o = 0; o < Og; o++)
            for (let ki = 0; ki < kH; ki++)
              for (let kj = 0; kj < kW; kj++) {
                const oh = ih * s[0] - pads[0]! + ki * d[0];
                const ow = iw * s[1] - pads[1]! + kj * d[1];
                if (oh < 0 || oh >= oH || ow < 0 || ow >= oW) continue;
                const g = Math.floor(c / Cg);
                out[((n * O + g * Og + o) * oH + oh) * oW + ow] += x[((n * C + c) * H + ih) * W + iw]! * w[((c * Og + o) * kH + ki) * kW + kj]!;
              }
  return { data: out, shape: [N, O, oH, oW] };
}

/** Pooling by hand: windows clipped to the image; avg divides by the clipped count. */
function refPool(kind: "max" | "avg", x: ArrayLike<number>, xs: number[], k: [number, number], s: [number, number], pads: number[]) {
  const [N, C, H, W] = xs as [number, number, number, number];
  const oH = Math.floor((H + pads[0]! + pads[2]! - k[0]) / s[0]) + 1;
  const oW = Math.floor((W + pads[1]! + pads[3]! - k[1]) / s[1]) + 1;
  const out = new Float64Array(N * C * oH * oW);
  for (let n = 0; n < N; n++)
    for (let c = 0; c < C; c++)
      for (let oh = 0; oh < oH; oh++)
        for (let ow = 0; ow < oW; ow++) {
          const vals: number[] = [];
          for (let i = 0; i < k[0]; i++)
            for (let j = 0; j < k[1]; j++) {
              const h = oh * s[0] - pads[0]! + i, w = ow * s[1] - pads[1]! + j;
              if (h >= 0 && h < H && w >= 0 && w < W) vals.push(x[((n * C + c) * H + h) * W + w]!);
            }
          out[((n * C + c) * oH + oh) * oW + ow] =
            kind === "max" ? (vals.some(Number.isNaN) ? NaN : Math.max(...vals)) : vals.reduce((a, b) => a + b, 0) / vals.length;
        }
  return { data: out, shape: [N, C, oH, oW] };
}

/** TensorFlow's "same" pads for one dimension. */
function same(size: number, k: number, s: number, d = 1): [number, number] {
  const keff = d * (k - 1) + 1;
  const total = Math.max(0, (Math.ceil(size / s) - 1) * s + keff - size);
  return [Math.floor(total / 2), total - Math.floor(total / 2)];
}

// ---- softmax / logSoftmax ----------------------------------------------------------------------

test("softmax and logSoftmax: hand-computed values", () => {
  const e = [Math.exp(1), Math.exp(2), Math.exp(3)];
  const z = e[0]! + e[1]! + e[2]!;
  close(sc.softmax(sc.tensor([1, 2, 3], "float64")).dataSync(), e.map((v) => v / z), 1e-12, "softmax");
  close(sc.logSoftmax(sc.tensor([1, 2, 3], "float64")).dataSync(), [1, 2, 3].map((v) => v - Math.log(z)), 1e-12, "logSoftmax");
  // max shift: huge logits stay finite
  close(sc.softmax(sc.tensor([1000, 1001], "float64")).dataSync(), [1 / (1 + Math.E), Math.E / (1 + Math.E)], 1e-12, "shifted");
  close(sc.logSoftmax(sc.tensor([-1000, 0], "float64")).dataSync(), [-1000, 0], 1e-12, "log shifted");
  // -Infinity entries get zero probability
  close(sc.softmax(sc.tensor([0, -Infinity], "float64")).dataSync(), [1, 0], 0, "-inf");
  // a NaN poisons its slice only
  close(sc.softmax(sc.tensor([[1, NaN], [0, 0]], "float64")).dataSync(), [NaN, NaN, 0.5, 0.5], 0, "nan");
});

test("softmax over any axis matches a reference loop; dtypes", () => {
  const rng = new Rng(11);
  const shape = [3, 4, 5];
  const x = rng.tensor(shape, -3, 3);
  const xd = x.dataSync();
  for (const axis of [0, 1, 2, -1]) {
    const a = axis < 0 ? axis + 3 : axis;
    const strides = [20, 5, 1];
    const ref = new Float64Array(60);
    const refLog = new Float64Array(60);
    for (let i = 0; i < 60; i++) {
      const pos = [Math.floor(i / 20), Math.floor(i / 5) % 4, i % 5];
      let z = 0;
      for (let j = 0; j < shape[a]!; j++) z += Math.exp(xd[i + (j - pos[a]!) * strides[a]!]!);
      ref[i] = Math.exp(xd[i]!) / z;
      refLog[i] = xd[i]! - Math.log(z);
    }
    close(sc.softmax(x, axis).dataSync(), ref, 1e-12, `softmax axis ${axis}`);
    close(x.logSoftmax(axis).dataSync(), refLog, 1e-12, `logSoftmax axis ${axis}`);
  }
  const f32 = sc.softmax(sc.cast(x, "float32"), 1);
  assert.equal(f32.dtype, "float32");
  close(f32.dataSync(), sc.softmax(x, 1).dataSync(), 1e-6, "float32");
  const ints = sc.softmax(sc.tensor([1, 2, 3], "int32"));
  assert.equal(ints.dtype, "float32");
  close(ints.dataSync(), sc.softmax(sc.tensor([1, 2, 3], "float64")).dataSync(), 1e-6, "int32");
  assert.throws(() => sc.softmax(x, 3), (e: Error) => e instanceof sc.ShapeError && /softmax/.test(e.message));
  assert.throws(() => sc.logSoftmax(sc.scalar(1)), (e: Error) => e instanceof sc.ShapeError && /logSoftmax/.test(e.message));
});

test("softmax gradient matches the closed form", () => {
  const x = sc.tensor([0.5, -1, 2], "float64");
  const w = [1, 2, 3];
  const g = sc.grad((t: sc.Tensor) => sc.sum(sc.mul(sc.softmax(t), sc.tensor(w, "float64"))))(x) as sc.Tensor;
  const y = sc.softmax(x).dataSync();
  const dot = y[0]! * w[0]! + y[1]! * w[1]! + y[2]! * w[2]!;
  close(g.dataSync(), [0, 1, 2].map((i) => y[i]! * (w[i]! - dot)), 1e-12, "dsoftmax");
});

// ---- conv2d ------------------------------------------------------------------------------------

interface ConvCase {
  x: number[]; w: number[]; strides?: [number, number]; pads: number[]; padding?: sc.Padding2d; dil?: [number, number]; groups?: number;
}

test("conv2d matches the 7-loop reference (strides, paddings, dilations, groups, float32/float64)", () => {
  const rng = new Rng(21);
  const cases: ConvCase[] = [
    { x: [2, 3, 6, 7], w: [4, 3, 3, 3], pads: [0, 0, 0, 0] },
    { x: [1, 2, 7, 6], w: [3, 2, 3, 2], strides: [2, 2], pads: [...[same(7, 3, 2)[0], same(6, 2, 2)[0]], same(7, 3, 2)[1], same(6, 2, 2)[1]], padding: "same" },
    { x: [1, 2, 6, 6], w: [2, 2, 3, 3], strides: [2, 2], pads: [0, 0, 1, 1], padding: "same" }, // total pad 1: after
    { x: [2, 2, 7, 7], w: [2, 2, 3, 3], dil: [2, 2], pads: [1, 1, 1, 1], padding: 1 },
    { x: [2, 4, 5, 5], w: [6, 2, 3, 3], groups: 2, pads: [1, 2, 0, 1], padding: [[1, 0], [2, 1]] },
    { x: [1, 6, 6, 5], w: [6, 1, 2, 3], groups: 6, strides: [1, 2], dil: [2, 1], pads: [2, 1, 2, 1], padding: [2, 1] },
    { x: [1, 3, 4, 4], w: [2, 3, 4, 4], pads: [0, 0, 0, 0] }, // kernel == input: 1x1 output
  ];
  for (const [ci, c] of cases.entries()) {
    for (const dtype of ["float64", "float32"] as const) {
      const x = rng.tensor(c.x, -1, 1, dtype);
      const w = rng.tensor(c.w, -1, 1, dtype);
      const y = sc.conv2d(x, w, { strides: c.strides ?? 1, padding: c.padding ?? "valid", dilations: c.dil ?? 1, groups: c.groups ?? 1 });
      const ref = refConv2d(x.dataSync(), c.x, w.dataSync(), c.w, c.strides ?? [1, 1], c.pads, c.dil ?? [1, 1], c.groups ?? 1);
      assert.deepEqual(y.shape, ref.shape, `case ${ci} shape`);
      assert.equal(y.dtype, dtype);
      close(y.dataSync(), ref.data, dtype === "float64" ? 1e-12 : 1e-5, `case ${ci} ${dtype}`);
    }
  }
  // "same" with stride 1 keeps the size; with stride 2 gives ceil(H / 2)
  assert.deepEqual(sc.conv2d(sc.zeros([1, 1, 5, 6]), sc.zeros([1, 1, 3, 4]), { padding: "same" }).shape, [1, 1, 5, 6]);
  assert.deepEqual(sc.conv2d(sc.zeros([1, 1, 5, 6]), sc.zeros([1, 1, 3, 3]), { padding: "same", strides: 2 }).shape, [1, 1, 3, 3]);
});

test("conv2d: a hand-computed example", () => {
  // 1x1x3x3 input, 2x2 all-ones filter: sums of 2x2 blocks
  const x = sc.tensor([[[[1, 2, 3], [4, 5, 6], [7, 8, 9]]]]);
  const w = sc.ones([1, 1, 2, 2]);
  assert.deepEqual(sc.conv2d(x, w).arraySync(), [[[[12, 16], [24, 28]]]]);
  assert.deepEqual(sc.conv2d(x, w, { strides: 2, padding: 1 }).arraySync(), [[[[1, 5], [11, 28]]]]);
  // a JS array filter takes the input's dtype
  assert.equal(sc.conv2d(sc.cast(x, "float64"), [[[[1]]]]).dtype, "float64");
});

test("conv2dTranspose matches the scatter reference and is the adjoint of conv2d", () => {
  const rng = new Rng(31);
  const cases: { x: number[]; w: number[]; s: [number, number]; pads: number[]; padding?: sc.Padding2d; d?: [number, number]; g?: number; op?: [number, number] }[] = [
    { x: [2, 3, 4, 5], w: [3, 2, 3, 3], s: [1, 1], pads: [0, 0, 0, 0] },
    { x: [1, 2, 3, 4], w: [2, 3, 3, 3], s: [2, 2], pads: [1, 1, 1, 1], padding: 1, op: [1, 0] },
    { x: [1, 4, 3, 3], w: [4, 1, 2, 3], s: [2, 3], pads: [0, 1, 1, 0], padding: [[0, 1], [1, 0]], g: 2, d: [2, 1], op: [1, 2] },
    { x: [2, 4, 3, 3], w: [4, 3, 3, 3], s: [1, 1], pads: [2, 2, 2, 2], padding: 2, g: 4 },
  ];
  for (const [ci, c] of cases.entries()) {
    for (const dtype of ["float64", "float32"] as const) {
      const x = rng.tensor(c.x, -1, 1, dtype);
      const w = rng.tensor(c.w, -1, 1, dtype);
      const y = sc.conv2dTranspose(x, w, { strides: c.s, padding: c.padding ?? "valid", dilations: c.d ?? 1, groups: c.g ?? 1, outputPadding: c.op ?? 0 });
      const ref = refConv2dTranspose(x.dataSync(), c.x, w.dataSync(), c.w, c.s, c.pads, c.d ?? [1, 1], c.g ?? 1, c.op ?? [0, 0]);
      assert.deepEqual(y.shape, ref.shape, `case ${ci} shape`);
      close(y.dataSync(), ref.data, dtype === "float64" ? 1e-12 : 1e-5, `case ${ci} ${dtype}`);
      if (dtype === "float64") {
        // <conv2dTranspose(x, w), z> == <x, conv2d(z, w)>
        const z = rng.tensor(y.shape as number[]);
        const lhs = sc.sum(sc.mul(y, z)).item() as number;
        const back = sc.conv2d(z, w, { strides: c.s, padding: c.padding ?? "valid", dilations: c.d ?? 1, groups: c.g ?? 1 });
        assert.deepEqual(back.shape, c.x);
        close([lhs], [sc.sum(sc.mul(x, back)).item() as number], 1e-10, `case ${ci} adjoint`);
      }
    }
  }
  // "same": output = input * stride
  assert.deepEqual(sc.conv2dTranspose(sc.zeros([1, 2, 3, 4]), sc.zeros([2, 1, 3, 3]), { strides: 2, padding: "same" }).shape, [1, 1, 6, 8]);
  assert.deepEqual(sc.conv2dTranspose(sc.zeros([1, 2, 3, 4]), sc.zeros([2, 1, 1, 1]), { strides: 3, padding: "same" }).shape, [1, 1, 9, 12]);
  // hand example: a single 1 scatters the filter
  const one = sc.tensor([[[[0, 1]]]]);
  assert.deepEqual(sc.conv2dTranspose(one, sc.tensor([[[[1, 2], [3, 4]]]]), { strides: 2 }).arraySync(), [[[[0, 0, 1, 2], [0, 0, 3, 4]]]]);
});

test("conv2d gradients equal the reference-loop adjoints (float32 path)", () => {
  const rng = new Rng(41);
  const xs = [2, 4, 7, 6], ws = [6, 2, 3, 3];
  const x = rng.tensor(xs, -1, 1, "float32");
  const w = rng.tensor(ws, -1, 1, "float32");
  const opts = { strides: 2, padding: "same" as const, groups: 2 };
  const y = sc.conv2d(x, w, opts);
  const dy = rng.tensor(y.shape as number[], -1, 1, "float32");
  const [gx, gw] = sc.grad((a: sc.Tensor, b: sc.Tensor) => sc.sum(sc.mul(sc.conv2d(a, b, opts), dy)), { argnums: "all" })(x, w) as sc.Tensor[];
  // dx[i] = sum over outputs of dy * w at the taps touching i: compute by probing the reference with unit vectors of dw/dx via linearity
  const pads = [same(7, 3, 2)[0], same(6, 3, 2)[0], same(7, 3, 2)[1], same(6, 3, 2)[1]];
  const refDx = new Float64Array(prod(xs));
  const refDw = new Float64Array(prod(ws));
  const xd = x.dataSync(), wd = w.dataSync(), dyd = dy.dataSync();
  const [N, C, H, W] = xs as [number, number, number, number];
  const [O, Cg, kH, kW] = ws as [number, number, number, number];
  const [, , oH, oW] = y.shape as [number, number, number, number];
  for (let n = 0; n < N; n++)
    for (let o = 0; o < O; o++)
      for (let oh = 0; oh < oH; oh++)
        for (let ow = 0; ow < oW; ow++) {
          const g = Math.floor(o / (O / 2));
          const d = dyd[((n * O + o) * oH + oh) * oW + ow]!;
          for (let c = 0; c < Cg; c++)
            for (let ki = 0; ki < kH; ki++)
              for (let kj = 0; kj < kW; kj++) {
                const ih = oh * 2 - pads[0]! + ki, iw = ow * 2 - pads[1]! + kj;
                if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                const xi = ((n * C + g * Cg + c) * H + ih) * W + iw, wi = ((o * Cg + c) * kH + ki) * kW + kj;
                refDx[xi] += d * wd[wi]!;
                refDw[wi] += d * xd[xi]!;
              }
        }
  close(gx.dataSync(), refDx, 1e-4, "dx");
  close(gw.dataSync(), refDw, 1e-4, "dw");
});

test("conv2d errors", () => {
  const x = sc.zeros([1, 4, 5, 5]);
  assert.throws(
    () => sc.conv2d(x, sc.zeros([6, 3, 3, 3]), { groups: 2 }),
    (e: Error) => e instanceof sc.ShapeError && /conv2d/.test(e.message) && e.message.includes("[1, 4, 5, 5]") && e.message.includes("[6, 3, 3, 3]") && /groups=2/.test(e.message),
  );
  assert.throws(() => sc.conv2d(x, sc.zeros([3, 2, 3, 3]), { groups: 2 }), (e: Error) => e instanceof sc.ShapeError && /not divisible by groups=2/.test(e.message));
  assert.throws(
    () => sc.conv2d(x, sc.zeros([2, 4, 6, 3])),
    (e: Error) => e instanceof sc.ShapeError && /conv2d/.test(e.message) && /larger than the padded input/.test(e.message),
  );
  assert.throws(() => sc.conv2d(x, sc.zeros([2, 4, 3, 3]), { dilations: 3 }), (e: Error) => e instanceof sc.ShapeError && /larger than the padded input/.test(e.message));
  sc.conv2d(x, sc.zeros([2, 4, 6, 3]), { padding: [[1, 0], [0, 0]] }); // fits once padded
  assert.throws(() => sc.conv2d(sc.zeros([4, 5, 5]), sc.zeros([2, 4, 3, 3])), (e: Error) => e instanceof sc.ShapeError && /conv2d/.test(e.message) && /4-D/.test(e.message));
  assert.throws(() => sc.conv2d(x, sc.zeros([2, 4, 3])), (e: Error) => e instanceof sc.ShapeError && /4-D/.test(e.message));
  assert.throws(() => sc.conv2d(x, sc.zeros([2, 4, 3, 3], "float64")), (e: Error) => e instanceof sc.DtypeError && /float32 and float64/.test(e.message));
  assert.throws(() => sc.conv2d(sc.zeros([1, 4, 5, 5], "int32"), sc.zeros([2, 4, 3, 3], "int32")), sc.DtypeError);
  assert.throws(() => sc.conv2d(x, sc.zeros([2, 4, 3, 3]), { strides: 0 }), (e: Error) => e instanceof sc.ValueError && /strides/.test(e.message));
  assert.throws(() => sc.conv2d(x, sc.zeros([2, 4, 3, 3]), { strides: 1.5 }), sc.ValueError);
  assert.throws(() => sc.conv2d(x, sc.zeros([2, 4, 3, 3]), { groups: 0 }), sc.ValueError);
  assert.throws(() => sc.conv2d(x, sc.zeros([2, 4, 3, 3]), { padding: -1 }), (e: Error) => e instanceof sc.ValueError && /padding/.test(e.message));
  assert.throws(() => sc.conv2d(x, sc.zeros([2, 4, 3, 3]), { padding: "full" as never }), sc.ValueError);
  // transposed
  assert.throws(
    () => sc.conv2dTranspose(x, sc.zeros([3, 2, 3, 3])),
    (e: Error) => e instanceof sc.ShapeError && /conv2dTranspose/.test(e.message) && e.message.includes("[1, 4, 5, 5]") && e.message.includes("[3, 2, 3, 3]") && /groups=1/.test(e.message),
  );
  assert.throws(() => sc.conv2dTranspose(x, sc.zeros([4, 2, 3, 3]), { strides: 2, outputPadding: 2 }), (e: Error) => e instanceof sc.ValueError && /outputPadding/.test(e.message));
  assert.throws(() => sc.conv2dTranspose(x, sc.zeros([4, 2, 3, 3]), { padding: "same", outputPadding: 1, strides: 2 }), sc.ValueError);
  assert.throws(() => sc.conv2dTranspose(sc.zeros([1, 4, 1, 1]), sc.zeros([4, 2, 1, 1]), { padding: 1 }), (e: Error) => e instanceof sc.ShapeError && /output would be/.test(e.message));
  assert.throws(() => sc.conv2dTranspose(sc.zeros([4, 5, 5]), sc.zeros([4, 2, 3, 3])), sc.ShapeError);
  assert.throws(() => sc.conv2d(sc.zeros([1, 4, 0, 5]), sc.zeros([2, 4, 1, 1]), { padding: 1 }), (e: Error) => e instanceof sc.ShapeError && /spatial/.test(e.message));
});

test("conv2d and pooling with an empty batch", () => {
  const x = sc.zeros([0, 2, 4, 4], "float64");
  const w = sc.ones([3, 2, 3, 3], "float64");
  assert.deepEqual(sc.conv2d(x, w).shape, [0, 3, 2, 2]);
  const [gx, gw] = sc.grad((a: sc.Tensor, b: sc.Tensor) => sc.sum(sc.conv2d(a, b)), { argnums: "all" })(x, w) as sc.Tensor[];
  assert.deepEqual(gx.shape, [0, 2, 4, 4]);
  assert.deepEqual(Array.from(gw.dataSync()), new Array(54).fill(0));
  assert.deepEqual(sc.maxPool2d(x, { kernelSize: 2 }).shape, [0, 2, 2, 2]);
  assert.deepEqual(sc.avgPool2d(x, { kernelSize: 2 }).shape, [0, 2, 2, 2]);
});

// ---- pooling -----------------------------------------------------------------------------------

test("maxPool2d and avgPool2d match hand loops (strides, padding, float32/float64/int32)", () => {
  const rng = new Rng(51);
  const cases: { x: number[]; k: [number, number]; s?: [number, number]; padding?: sc.Padding2d; pads: number[] }[] = [
    { x: [2, 3, 6, 6], k: [2, 2], pads: [0, 0, 0, 0] },
    { x: [1, 2, 7, 5], k: [3, 3], s: [2, 2], padding: 1, pads: [1, 1, 1, 1] },
    { x: [1, 2, 7, 6], k: [3, 2], s: [2, 1], padding: "same", pads: [same(7, 3, 2)[0], same(6, 2, 1)[0], same(7, 3, 2)[1], same(6, 2, 1)[1]] },
    { x: [2, 1, 5, 5], k: [2, 3], s: [3, 2], padding: [[1, 0], [2, 1]], pads: [1, 2, 0, 1] },
  ];
  for (const [ci, c] of cases.entries()) {
    for (const dtype of ["float64", "float32"] as const) {
      const x = rng.tensor(c.x, -2, 2, dtype);
      const opts = { kernelSize: c.k, strides: c.s ?? c.k, padding: c.padding ?? "valid" };
      for (const kind of ["max", "avg"] as const) {
        const y = kind === "max" ? sc.maxPool2d(x, opts) : sc.avgPool2d(x, opts);
        const ref = refPool(kind, x.dataSync(), c.x, c.k, c.s ?? c.k, c.pads);
        assert.deepEqual(y.shape, ref.shape, `case ${ci} ${kind} shape`);
        assert.equal(y.dtype, dtype);
        close(y.dataSync(), ref.data, dtype === "float64" ? 1e-12 : 1e-6, `case ${ci} ${kind} ${dtype}`);
      }
    }
  }
  const xi = sc.tensor([[[[1, -5, 3], [7, 2, -8], [0, 4, 6]]]], "int32");
  const mi = sc.maxPool2d(xi, { kernelSize: 2, strides: 1 });
  assert.equal(mi.dtype, "int32");
  assert.deepEqual(mi.arraySync(), [[[[7, 3], [7, 6]]]]);
});

test("pooling: hand examples (avg excludes padding, NaN, negative values under padding)", () => {
  const x = sc.tensor([[[[1, 2], [3, 4]]]], "float64");
  // kernel 2, stride 1, padding 1: 3x3 windows over a 4x4 padded grid; avg counts only real pixels
  assert.deepEqual(sc.avgPool2d(x, { kernelSize: 2, strides: 1, padding: 1 }).arraySync(), [[[[1, 1.5, 2], [2, 2.5, 3], [3, 3.5, 4]]]]);
  // max never picks padding, even for all-negative windows
  const neg = sc.tensor([[[[-1, -2], [-3, -4]]]], "float64");
  assert.deepEqual(sc.maxPool2d(neg, { kernelSize: 2, strides: 1, padding: 1 }).arraySync(), [[[[-1, -1, -2], [-1, -1, -2], [-3, -3, -4]]]]);
  const withNaN = sc.tensor([[[[1, NaN, 2, 3]]]], "float64");
  const m = sc.maxPool2d(withNaN, { kernelSize: [1, 2] }).dataSync();
  assert.ok(Number.isNaN(m[0]!) && m[1] === 3);
  // default strides = kernel size
  assert.deepEqual(sc.maxPool2d(sc.reshape(sc.arange(16), [1, 1, 4, 4]), { kernelSize: 2 }).arraySync(), [[[[5, 7], [13, 15]]]]);
});

test("pooling gradients: max routes to the (first) argmax, avg spreads over the unpadded window", () => {
  const x = sc.tensor([[[[1, 5, 5], [2, 0, 3], [4, 4, 1]]]], "float64");
  const gmax = sc.grad((t: sc.Tensor) => sc.sum(sc.maxPool2d(t, { kernelSize: 2, strides: 1 })))(x) as sc.Tensor;
  // windows: [1,5,2,0]->5@(0,1); [5,5,0,3]->5@(0,1) (first); [2,0,4,4]->4@(2,0); [0,3,4,1]->4@(2,1)
  assert.deepEqual(gmax.arraySync(), [[[[0, 2, 0], [0, 0, 0], [1, 1, 0]]]]);
  const gavg = sc.grad((t: sc.Tensor) => sc.sum(sc.avgPool2d(t, { kernelSize: 2, strides: 1, padding: 1 })))(sc.tensor([[[[1, 2], [3, 4]]]], "float64")) as sc.Tensor;
  // each pixel is in one 1-count, two 2-count and one 4-count window: 1 + 1/2 + 1/2 + 1/4
  close(gavg.dataSync(), [2.25, 2.25, 2.25, 2.25], 1e-12, "avg grad");
  // second derivative of max pooling is zero; of avg pooling as well (linear)
  const hx = sc.grad((t: sc.Tensor) => sc.sum(sc.mul(sc.grad((u: sc.Tensor) => sc.sum(sc.square(sc.maxPool2d(u, { kernelSize: 2 }))))(t) as sc.Tensor, 1)))(
    sc.tensor([[[[1, 2], [3, 4]]]], "float64"),
  ) as sc.Tensor;
  // d/dx sum(2 * max * onehot) = 2 at the argmax
  assert.deepEqual(hx.arraySync(), [[[[0, 0], [0, 2]]]]);
});

test("pooling errors", () => {
  assert.throws(() => sc.maxPool2d(sc.zeros([3, 4, 4]), { kernelSize: 2 }), (e: Error) => e instanceof sc.ShapeError && /maxPool2d/.test(e.message) && /4-D/.test(e.message));
  assert.throws(
    () => sc.avgPool2d(sc.zeros([1, 1, 3, 3]), { kernelSize: 4 }),
    (e: Error) => e instanceof sc.ShapeError && /avgPool2d/.test(e.message) && /larger than the padded input/.test(e.message),
  );
  assert.throws(() => sc.maxPool2d(sc.zeros([1, 1, 4, 4]), { kernelSize: 2, padding: 2 }), (e: Error) => e instanceof sc.ValueError && /smaller than the kernel/.test(e.message));
  assert.throws(() => sc.maxPool2d(sc.zeros([1, 1, 4, 4]), { kernelSize: 0 }), (e: Error) => e instanceof sc.ValueError && /kernelSize/.test(e.message));
  assert.throws(() => sc.maxPool2d(sc.zeros([1, 1, 4, 4]), {} as never), (e: Error) => e instanceof sc.ValueError && /kernelSize/.test(e.message));
  assert.throws(() => sc.avgPool2d(sc.zeros([1, 1, 4, 4], "int32"), { kernelSize: 2 }), (e: Error) => e instanceof sc.DtypeError && /avgPool2d/.test(e.message));
  assert.throws(() => sc.maxPool2d(sc.zeros([1, 1, 4, 4], "bool"), { kernelSize: 2 }), sc.DtypeError);
  assert.throws(() => sc.maxPool2d(sc.zeros([1, 1, 0, 4]), { kernelSize: 1 }), (e: Error) => e instanceof sc.ShapeError && /spatial/.test(e.message));
});

// ---- topK / sort / argsort ---------------------------------------------------------------------

/** Reference order: descending or ascending by value, NaN the largest (last ascending, first descending), ties by index. */
function refOrder(row: number[], descending: boolean): number[] {
  return row
    .map((v, i) => [v, i] as const)
    .sort((a, b) => {
      const an = Number.isNaN(a[0]), bn = Number.isNaN(b[0]);
      if (an || bn) return an === bn ? a[1] - b[1] : (an ? 1 : -1) * (descending ? -1 : 1);
      if (a[0] !== b[0]) return descending ? b[0] - a[0] : a[0] - b[0];
      return a[1] - b[1];
    })
    .map((p) => p[1]);
}

test("topK: hand examples, ties, NaN, unsorted, k = 0", () => {
  const [v, i] = sc.topK([3, 1, 4, 1, 5, 9, 2, 6], 3);
  assert.deepEqual(v.arraySync(), [9, 6, 5]);
  assert.deepEqual(i.arraySync(), [5, 7, 4]);
  assert.equal(i.dtype, "int32");
  const [tv, ti] = sc.topK([[1, 3, 3, 2], [5, 5, 5, 5]], 2);
  assert.deepEqual(tv.arraySync(), [[3, 3], [5, 5]]);
  assert.deepEqual(ti.arraySync(), [[1, 2], [0, 1]]);
  // NaN is the largest value (as in PyTorch), after +Inf
  const [nv, ni] = sc.topK(sc.tensor([NaN, 1, -Infinity, 2, Infinity, NaN], "float64"), 4);
  assert.deepEqual(Array.from(ni.dataSync()), [0, 5, 4, 3]);
  assert.ok(Number.isNaN(nv.dataSync()[0]!) && Number.isNaN(nv.dataSync()[1]!));
  const [uv, ui] = sc.topK([3, 1, 4, 1, 5, 9, 2, 6], 3, { sorted: false });
  assert.deepEqual(ui.arraySync(), [4, 5, 7]);
  assert.deepEqual(uv.arraySync(), [5, 9, 6]);
  const [ev, ei] = sc.topK(sc.zeros([2, 3]), 0);
  assert.deepEqual(ev.shape, [2, 0]);
  assert.deepEqual(ei.shape, [2, 0]);
  const [iv] = sc.tensor([[7, -2, 9]], "int32").topK(2);
  assert.equal(iv.dtype, "int32");
  assert.deepEqual(iv.arraySync(), [[9, 7]]);
});

test("topK and sort match a reference on random rows (both kernel paths)", () => {
  const rng = new Rng(61);
  for (const [rows, n, k] of [[5, 200, 3], [3, 200, 200], [4, 50, 40], [2, 1000, 32], [6, 7, 2]] as const) {
    // duplicates and NaN included
    const vals = Array.from({ length: rows * n }, () => (rng.next() < 0.05 ? NaN : Math.round(rng.uniform(-20, 20) * 4) / 4));
    const x = sc.tensor(vals, "float64", [rows, n]);
    const [v, i] = sc.topK(x, k);
    const sorted = sc.sort(x, { descending: true }).dataSync();
    const order = sc.argsort(x).dataSync();
    for (let r = 0; r < rows; r++) {
      const row = vals.slice(r * n, (r + 1) * n);
      const desc = refOrder(row, true);
      assert.deepEqual(Array.from(i.dataSync().slice(r * k, (r + 1) * k)), desc.slice(0, k), `topK rows=${rows} n=${n} k=${k} row ${r}`);
      close(v.dataSync().slice(r * k, (r + 1) * k), desc.slice(0, k).map((j) => row[j]!), 0, "topK values");
      close(sorted.slice(r * n, (r + 1) * n), desc.map((j) => row[j]!), 0, "sort descending");
      assert.deepEqual(Array.from(order.slice(r * n, (r + 1) * n)), refOrder(row, false), "argsort");
    }
  }
});

test("sort / argsort along any axis, descending, NaN the largest, stable, dtypes", () => {
  const x = sc.tensor([[3, 1, 2], [1, NaN, 0], [2, 2, -1]], "float64");
  assert.deepEqual(sc.argsort(x, { axis: 0 }).arraySync(), [[1, 0, 2], [2, 2, 1], [0, 1, 0]]);
  const s0 = sc.sort(x, { axis: 0 }).arraySync() as number[][];
  assert.deepEqual(s0[0], [1, 1, -1]);
  assert.deepEqual(s0[1], [2, 2, 0]);
  assert.equal(s0[2]![0], 3);
  assert.ok(Number.isNaN(s0[2]![1]!));
  const d = sc.sort(x, { descending: true }).arraySync() as number[][];
  assert.deepEqual(d[0], [3, 2, 1]);
  assert.deepEqual(d[1]!.slice(1), [1, 0]);
  assert.ok(Number.isNaN(d[1]![0]!));
  assert.deepEqual(sc.argsort(sc.tensor([Infinity, NaN, 1, NaN, Infinity], "float64"), { descending: true }).arraySync(), [1, 3, 0, 4, 2]);
  assert.deepEqual(sc.argsort(sc.tensor([NaN, Infinity, 1, NaN, Infinity], "float64")).arraySync(), [2, 1, 4, 0, 3]);
  assert.deepEqual(sc.argsort([2, 1, 2, 1, 2], { descending: true }).arraySync(), [0, 2, 4, 1, 3]);
  assert.deepEqual(sc.argsort([2, 1, 2, 1, 2]).arraySync(), [1, 3, 0, 2, 4]);
  const i32 = sc.tensor([5, -3, 7], "int32").sort();
  assert.equal(i32.dtype, "int32");
  assert.deepEqual(i32.arraySync(), [-3, 5, 7]);
  assert.deepEqual(sc.tensor([true, false, true]).sort().arraySync(), [false, true, true]);
  // middle axis of a 3-D tensor vs a reference
  const rng = new Rng(71);
  const t = rng.tensor([3, 40, 4]);
  const td = t.dataSync();
  const got = sc.argsort(t, { axis: 1, descending: true }).dataSync();
  for (let a = 0; a < 3; a++)
    for (let c = 0; c < 4; c++) {
      const col = Array.from({ length: 40 }, (_, j) => td[(a * 40 + j) * 4 + c]!);
      assert.deepEqual(Array.from({ length: 40 }, (_, j) => got[(a * 40 + j) * 4 + c]), refOrder(col, true));
    }
});

test("sort and topK gradients follow the permutation", () => {
  const x = sc.tensor([[3, 0, 1, 2], [0.5, 2, 1.5, 1]], "float64");
  const w = sc.tensor([[1, 2, 3, 4], [10, 20, 30, 40]], "float64");
  const gs = sc.grad((t: sc.Tensor) => sc.sum(sc.mul(sc.sort(t, { descending: true }), w)))(x) as sc.Tensor;
  assert.deepEqual(gs.arraySync(), [[1, 4, 3, 2], [40, 10, 20, 30]]);
  const ga = sc.grad((t: sc.Tensor) => sc.sum(sc.mul(sc.sort(t, { axis: 0 }), w)))(x) as sc.Tensor;
  assert.deepEqual(ga.arraySync(), [[10, 2, 3, 40], [1, 20, 30, 4]]);
  const gk = sc.grad((t: sc.Tensor) => sc.sum(sc.mul(sc.topK(t, 2)[0], sc.tensor([[1, 2], [3, 4]], "float64"))))(x) as sc.Tensor;
  assert.deepEqual(gk.arraySync(), [[1, 0, 0, 2], [0, 3, 4, 0]]);
});

test("topK / sort errors", () => {
  assert.throws(
    () => sc.topK(sc.zeros([2, 3]), 4),
    (e: Error) => e instanceof sc.ShapeError && /topK/.test(e.message) && /k = 4/.test(e.message) && e.message.includes("[2, 3]"),
  );
  assert.throws(() => sc.topK(sc.zeros([3]), -1), (e: Error) => e instanceof sc.ValueError && /topK/.test(e.message));
  assert.throws(() => sc.topK(sc.zeros([3]), 1.5), sc.ValueError);
  assert.throws(() => sc.topK(sc.scalar(1), 1), (e: Error) => e instanceof sc.ShapeError && /scalar/.test(e.message));
  assert.throws(() => sc.sort(sc.zeros([2, 3]), { axis: 2 }), (e: Error) => e instanceof sc.ShapeError && /sort/.test(e.message));
  assert.throws(() => sc.argsort(sc.scalar(1)), (e: Error) => e instanceof sc.ShapeError && /argsort/.test(e.message));
  assert.throws(() => sc.sort(sc.zeros([2]), { descending: "yes" as never }), sc.ValueError);
});
