/**
 * The importer's lowerings for ONNX variants beyond the registry's 2-D kernels (pool-nd.ts,
 * 3-D ConvTranspose, GatherND batch_dims, Pad wrap, Scan 8, If returning optionals, irfft),
 * checked against direct loops written here in float64 on shapes, strides, dilations and
 * paddings the backend node tests do not cover; the differentiable ones also by
 * graph AD = eager tape = finite differences.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as sc from "../../src/api/index.js";
import { checkGradients, assertClose } from "../util/gradcheck.js";
import { Rng } from "../util/rng.js";
import { readFileSync } from "node:fs";
import * as path from "node:path";
import { fileURLToPath } from "node:url";

const fixtures = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../fixtures/onnx-node");

const { onnx } = sc;
/** onnx.load on our graph always: these tests are of our importer (onnxruntime's session of the bytes is native-session.test.ts's). */
const loadGraph = (source: Uint8Array | string, options: sc.onnx.LoadOptions = {}) => onnx.load(source, { ...options, nativeSession: false });
const vi = onnx.makeValueInfo;

/** A one-node model over float64 (or given) inputs, loaded. */
function oneNode(op: string, inputs: [string, sc.Tensor][], outputs: [string, sc.DType, number[] | null][], attrs: Record<string, unknown> = {}, opset = 22) {
  const graph = onnx.makeGraph(
    [onnx.makeNode(op, inputs.map(([n]) => n), outputs.map(([n]) => n), attrs as never)],
    "g",
    inputs.map(([n, t]) => vi(n, t.dtype, [...t.shape])),
    outputs.map(([n, d, s]) => vi(n, d, s)),
  );
  return loadGraph(onnx.modelBytes(onnx.makeModel(graph, { opset, irVersion: 10 })));
}

const data = (t: sc.Tensor): number[] => Array.from(t.dataSync(), Number);

/** Row-major strides of a shape. */
const stridesOf = (shape: number[]): number[] => shape.map((_, i) => shape.slice(i + 1).reduce((a, b) => a * b, 1));

/** Direct N-D pooling: max / average (count_include_pad) / indices, ceil_mode, dilations. */
function poolReference(x: sc.Tensor, kind: "max" | "avg", a: { kernel: number[]; strides: number[]; dilations: number[]; pads: number[]; ceil: boolean; includePad?: boolean }) {
  const shape = x.shape as number[];
  const xs = data(x);
  const size = shape.slice(2);
  const k = size.length;
  const out = size.map((s, i) => {
    const keff = (a.kernel[i]! - 1) * a.dilations[i]! + 1;
    const span = s + a.pads[i]! + a.pads[i + k]! - keff;
    let o = (a.ceil ? Math.ceil(span / a.strides[i]!) : Math.floor(span / a.strides[i]!)) + 1;
    if (a.ceil && (o - 1) * a.strides[i]! >= s + a.pads[i]!) o--;
    return o;
  });
  const st = stridesOf(shape);
  const values: number[] = [];
  const indices: number[] = [];
  const outCount = out.reduce((p, q) => p * q, 1);
  for (let nc = 0; nc < shape[0]! * shape[1]!; nc++) {
    for (let p = 0; p < outCount; p++) {
      const o: number[] = [];
      let r = p;
      for (let i = k - 1; i >= 0; i--) {
        o[i] = r % out[i]!;
        r = Math.floor(r / out[i]!);
      }
      let best = -Infinity;
      let bestAt = -1;
      let sum = 0;
      let count = 0;
      const kCount = a.kernel.reduce((q, w) => q * w, 1);
      for (let t = 0; t < kCount; t++) {
        const off: number[] = [];
        let rr = t;
        for (let i = k - 1; i >= 0; i--) {
          off[i] = rr % a.kernel[i]!;
          rr = Math.floor(rr / a.kernel[i]!);
        }
        const pos = off.map((j, i) => o[i]! * a.strides[i]! - a.pads[i]! + j * a.dilations[i]!);
        const inside = pos.every((q, i) => q >= 0 && q < size[i]!);
        const insidePadded = pos.every((q, i) => q >= -a.pads[i]! && q < size[i]! + a.pads[i + k]!);
        if (a.includePad ? insidePadded : inside) count++;
        if (!inside) continue;
        const flat = nc * st[1]! + pos.reduce((acc, q, i) => acc + q * st[i + 2]!, 0);
        const v = xs[flat]!;
        sum += v;
        if (v > best) {
          best = v;
          bestAt = flat;
        }
      }
      values.push(kind === "max" ? best : sum / count);
      indices.push(bestAt);
    }
  }
  return { values, indices, shape: [shape[0]!, shape[1]!, ...out] };
}

test("3-D MaxPool/AveragePool with dilations, strides, pads and ceil_mode match direct loops; graph AD = tape = finite differences", () => {
  const rng = new Rng(31);
  const x = rng.tensor([2, 2, 5, 6, 7]);
  const cases = [
    { kernel: [2, 3, 2], strides: [2, 1, 3], dilations: [2, 1, 2], pads: [1, 0, 1, 0, 2, 1], ceil: true, includePad: false },
    { kernel: [3, 2, 2], strides: [1, 2, 2], dilations: [1, 2, 1], pads: [1, 1, 0, 1, 0, 1], ceil: false, includePad: true },
  ];
  for (const c of cases) {
    for (const kind of ["max", "avg"] as const) {
      const attrs = { kernel_shape: c.kernel, strides: c.strides, dilations: c.dilations, pads: c.pads, ceil_mode: c.ceil ? 1 : 0, ...(kind === "avg" ? { count_include_pad: c.includePad ? 1 : 0 } : {}) };
      const ref = poolReference(x, kind, c);
      const m = oneNode(kind === "max" ? "MaxPool" : "AveragePool", [["x", x]], [["y", "float64", null]], attrs);
      const y = m(x) as sc.Tensor;
      assert.deepEqual(y.shape, ref.shape, `${kind} ${JSON.stringify(c)}`);
      assertClose(data(y), ref.values, 1e-12, `${kind} pool ${JSON.stringify(c)}`);
      const w = rng.tensor(ref.shape);
      const loss = (t: sc.Tensor) => sc.sum(sc.mul(m(t) as sc.Tensor, w));
      const tape = sc.grad(loss)(x) as sc.Tensor;
      const graph = sc.grad(sc.stage(loss, { autograph: false }))(x) as sc.Tensor;
      assertClose(data(graph), data(tape), 1e-12, `${kind}: graph AD vs tape`);
      checkGradients(loss, [x], 1e-6, `${kind} pool 3-D`);
    }
  }
});

test("MaxPool's Indices (row- and column-major, padded and dilated) match direct loops", () => {
  const rng = new Rng(7);
  const x = rng.tensor([2, 3, 5, 6]);
  for (const storage of [0, 1]) {
    const attrs = { kernel_shape: [3, 2], strides: [2, 2], dilations: [1, 2], pads: [1, 1, 1, 0], storage_order: storage };
    const m = oneNode("MaxPool", [["x", x]], [["y", "float64", null], ["i", "int64", null]], attrs);
    const out = m.run({ x });
    const ref = poolReference(x, "max", { kernel: [3, 2], strides: [2, 2], dilations: [1, 2], pads: [1, 1, 1, 0], ceil: false });
    assertClose(data(out.y as sc.Tensor), ref.values, 0, "values");
    // Column-major: the spatial coordinates h, w give h + w * H (batch and channel as before).
    const [, , H, W] = x.shape as number[];
    const want = storage === 0 ? ref.indices : ref.indices.map((f) => {
      const plane = Math.floor(f / (H! * W!));
      const h = Math.floor((f % (H! * W!)) / W!);
      const wCol = f % W!;
      return plane * H! * W! + h + wCol * H!;
    });
    assert.equal((out.i as sc.Tensor).dtype, "int64");
    assert.deepEqual(data(out.i as sc.Tensor), want, `storage_order ${storage}`);
  }
});

test("3-D ConvTranspose with strides, dilations, pads, output_padding, groups and bias matches a direct loop; gradients", () => {
  const rng = new Rng(5);
  const [N, C, D, H, W, G, Mg] = [1, 4, 3, 2, 3, 2, 1];
  const x = rng.tensor([N, C, D, H, W]);
  const w = rng.tensor([C, Mg, 2, 2, 3]);
  const b = rng.tensor([G * Mg]);
  const strides = [2, 1, 2];
  const dilations = [2, 1, 1];
  const pads = [1, 0, 1, 0, 1, 0];
  const outPad = [1, 0, 1];
  const kernel = [2, 2, 3];
  const full = [D, H, W].map((s, i) => strides[i]! * (s - 1) + (kernel[i]! - 1) * dilations[i]! + 1 + outPad[i]!);
  const out = full.map((f, i) => f - pads[i]! - pads[i + 3]!);
  const M = G * Mg;
  const ref = new Array<number>(N * M * out[0]! * out[1]! * out[2]!).fill(0);
  const xs = data(x);
  const ws = data(w);
  const cPerG = C / G;
  for (let c = 0; c < C; c++) {
    const g = Math.floor(c / cPerG);
    for (let m = 0; m < Mg; m++) {
      const oc = g * Mg + m;
      for (let d = 0; d < D; d++) for (let h = 0; h < H; h++) for (let ww = 0; ww < W; ww++) {
        for (let kd = 0; kd < 2; kd++) for (let kh = 0; kh < 2; kh++) for (let kw = 0; kw < 3; kw++) {
          const od = d * strides[0]! + kd * dilations[0]! - pads[0]!;
          const oh = h * strides[1]! + kh * dilations[1]! - pads[1]!;
          const ow = ww * strides[2]! + kw * dilations[2]! - pads[2]!;
          if (od < 0 || oh < 0 || ow < 0 || od >= out[0]! || oh >= out[1]! || ow >= out[2]!) continue;
          ref[((oc * out[0]! + od) * out[1]! + oh) * out[2]! + ow]! += xs[((c * D + d) * H + h) * W + ww]! * ws[(((c * Mg + m) * 2 + kd) * 2 + kh) * 3 + kw]!;
        }
      }
    }
  }
  for (let oc = 0; oc < M; oc++) for (let i = 0; i < out[0]! * out[1]! * out[2]!; i++) ref[oc * out[0]! * out[1]! * out[2]! + i]! += data(b)[oc]!;
  const m = oneNode("ConvTranspose", [["x", x], ["w", w], ["b", b]], [["y", "float64", null]], { strides, dilations, pads, output_padding: outPad, group: G });
  const y = m(x, w, b) as sc.Tensor;
  assert.deepEqual(y.shape, [N, M, ...out]);
  assertClose(data(y), ref, 1e-12, "ConvTranspose 3-D");
  const wy = rng.tensor([N, M, ...out]);
  const loss = (xt: sc.Tensor, wt: sc.Tensor) => sc.sum(sc.mul(m(xt, wt, b) as sc.Tensor, wy));
  const tape = sc.grad(loss, { argnums: "all" })(x, w) as sc.Tensor[];
  const graph = sc.grad(sc.stage(loss, { autograph: false }), { argnums: "all" })(x, w) as sc.Tensor[];
  tape.forEach((g, i) => assertClose(data(graph[i]!), data(g), 1e-12, `graph AD vs tape, input ${i}`));
  checkGradients(loss, [x, w], 1e-6, "ConvTranspose 3-D");
});

test("GatherND with batch_dims 2 and negative indices matches a direct loop", () => {
  const rng = new Rng(3);
  const x = rng.tensor([2, 3, 4, 5, 2]);
  // indices [2, 3, 2, 2]: per batch pair, two index tuples over axes 2 and 3
  const idx = sc.tensor(Array.from({ length: 2 * 3 * 2 * 2 }, (_, i) => (i % 2 === 0 ? (i % 4) - 2 : (i % 5) - 3)), "int64", [2, 3, 2, 2]);
  const m = oneNode("GatherND", [["x", x], ["i", idx]], [["y", "float64", null]], { batch_dims: 2 });
  const y = m(x, idx) as sc.Tensor;
  assert.deepEqual(y.shape, [2, 3, 2, 2]);
  const xs = data(x);
  const is = data(idx);
  const want: number[] = [];
  for (let b0 = 0; b0 < 2; b0++) for (let b1 = 0; b1 < 3; b1++) for (let t = 0; t < 2; t++) {
    const base = ((b0 * 3 + b1) * 2 + t) * 2;
    const i0 = (is[base]! + 4) % 4;
    const i1 = (is[base + 1]! + 5) % 5;
    for (let e = 0; e < 2; e++) want.push(xs[(((b0 * 3 + b1) * 4 + i0) * 5 + i1) * 2 + e]!);
  }
  assert.deepEqual(data(y), want);
  const loss = (t: sc.Tensor) => sc.sum(sc.square(m(t, idx) as sc.Tensor));
  checkGradients(loss, [x], 1e-6, "GatherND batch_dims");
});

test("Pad mode wrap with pads longer than the axis and negative pads matches a direct loop", () => {
  const x = sc.tensor([1, 2, 3, 4, 5, 6], "float64", [2, 3]);
  const pads = sc.tensor([3, -1, 1, 4], "int64", [4]);
  const graph = onnx.makeGraph([onnx.makeNode("Pad", ["x", "p"], ["y"], { mode: "wrap" })], "g", [vi("x", "float64", [2, 3])], [vi("y", "float64", null)], [{ name: "p", value: pads }]);
  const m = loadGraph(onnx.modelBytes(onnx.makeModel(graph, { opset: 19 })));
  const y = m(x) as sc.Tensor;
  // axis 0: begin 3, end 1 -> 6 rows (i - 3) mod 2; axis 1: crop 1 at the start, 4 at the end -> 6 cols (j + 1) mod 3
  const want: number[] = [];
  for (let i = 0; i < 6; i++) for (let j = 0; j < 6; j++) want.push(data(x)[(((i - 3) % 2) + 2) % 2 * 3 + ((j + 1) % 3)]!);
  assert.deepEqual(y.shape, [6, 6]);
  assert.deepEqual(data(y), want);
});

test("Scan 8 (batch axis) runs each batch entry's loop: sums and running sums per entry", () => {
  const body = onnx.makeGraph(
    [onnx.makeNode("Add", ["s_in", "x_t"], ["s_out"]), onnx.makeNode("Identity", ["s_out"], ["y_t"])],
    "body",
    [vi("s_in", "float64", [2]), vi("x_t", "float64", [2])],
    [vi("s_out", "float64", [2]), vi("y_t", "float64", [2])],
  );
  const graph = onnx.makeGraph(
    [onnx.makeNode("Scan", ["", "s0", "xs"], ["s", "ys"], { body, num_scan_inputs: 1, directions: [1] })],
    "g",
    [vi("s0", "float64", [2, 2]), vi("xs", "float64", [2, 3, 2])],
    [vi("s", "float64", [2, 2]), vi("ys", "float64", [2, 3, 2])],
  );
  const m = loadGraph(onnx.modelBytes(onnx.makeModel(graph, { opset: 8, irVersion: 3 })));
  const s0 = sc.tensor([[0, 100], [1, 2]], "float64");
  const xs = sc.tensor([[[1, 2], [3, 4], [5, 6]], [[10, 20], [30, 40], [50, 60]]], "float64");
  const out = m.run({ s0, xs });
  assert.deepEqual(data(out.s as sc.Tensor), [9, 112, 91, 122]);
  // direction 1: the rows are read last to first, the running sums stacked in that order
  assert.deepEqual(data(out.ys as sc.Tensor), [5, 106, 8, 110, 9, 112, 51, 62, 81, 102, 91, 122]);
});

test("If whose branches return optionals: the condition is a trace key, each value takes its branch", () => {
  // test_if_opt: then -> an empty optional; else -> Optional(Sequence([x])), x = [1..5]
  const m = loadGraph(readFileSync(path.join(fixtures, "test_if_opt/model.onnx")));
  assert.deepEqual(m.staticInputs, ["cond"]);
  const some = m(sc.tensor(false)) as sc.Tensor[];
  assert.equal(some.length, 1);
  assert.deepEqual(data(some[0]!), [1, 2, 3, 4, 5]);
  assert.equal(m(sc.tensor(true)), null);
  assert.equal((m(sc.tensor(false)) as sc.Tensor[]).length, 1);
  // inside a staged function the condition is symbolic: a typed error says it must be concrete
  assert.throws(() => sc.stage((c: sc.Tensor) => m(c) as sc.Tensor[], { autograph: false })(sc.tensor(true)), /must be a concrete tensor/);
});

test("DFT: inverse and inverse one-sided (irfft) of a float64 spectrum match the direct sums", () => {
  const rng = new Rng(11);
  const N = 7;
  const signal = rng.tensor([2, N, 1]);
  const fwd = oneNode("DFT", [["x", signal]], [["y", "float64", null]], { onesided: 1 }, 19);
  const half = fwd(signal) as sc.Tensor; // [2, 4, 2]
  assert.deepEqual(half.shape, [2, 4, 2]);
  const len = sc.tensor([N], "int64", []);
  const graph = onnx.makeGraph([onnx.makeNode("DFT", ["x", "n"], ["y"], { inverse: 1, onesided: 1, axis: 1 })], "g", [vi("x", "float64", [2, 4, 2])], [vi("y", "float64", null)], [{ name: "n", value: len }]);
  const inv = loadGraph(onnx.modelBytes(onnx.makeModel(graph, { opset: 19 })));
  const back = inv(half) as sc.Tensor;
  assert.deepEqual(back.shape, [2, N, 1]);
  assertClose(data(back), data(signal), 1e-12, "irfft(rfft(x)) = x (odd length)");
  // the full inverse of a complex spectrum: direct sum (1/N) sum_k X_k e^{2 pi i k n / N}
  const spec = rng.tensor([1, N, 2]);
  const full = oneNode("DFT", [["x", spec]], [["y", "float64", null]], { inverse: 1 }, 19);
  const got = data(full(spec) as sc.Tensor);
  const s = data(spec);
  for (let n = 0; n < N; n++) {
    let re = 0;
    let im = 0;
    for (let k = 0; k < N; k++) {
      const a = (2 * Math.PI * k * n) / N;
      re += s[2 * k]! * Math.cos(a) - s[2 * k + 1]! * Math.sin(a);
      im += s[2 * k]! * Math.sin(a) + s[2 * k + 1]! * Math.cos(a);
    }
    assert.ok(Math.abs(got[2 * n]! - re / N) < 1e-12 && Math.abs(got[2 * n + 1]! - im / N) < 1e-12, `element ${n}`);
  }
});

test("CumProd (prefix products) with zeros and negatives: forward against a direct loop, exclusive/reverse, gradients", () => {
  const x = sc.tensor([[2, -1.5, 0, 3, 0.5, -2, 1.25], [0.5, 0, 0, -3, 2, 1, -1]], "float64");
  const axis = sc.tensor([1], "int64", []);
  for (const [exclusive, reverse] of [[0, 0], [1, 0], [0, 1], [1, 1]]) {
    const graph = onnx.makeGraph([onnx.makeNode("CumProd", ["x", "a"], ["y"], { exclusive, reverse })], "g", [vi("x", "float64", [2, 7])], [vi("y", "float64", null)], [{ name: "a", value: axis }]);
    const m = loadGraph(onnx.modelBytes(onnx.makeModel(graph, { opset: 26 })));
    const xs = data(x);
    const want: number[] = [];
    for (let r = 0; r < 2; r++) {
      for (let j = 0; j < 7; j++) {
        let p = 1;
        for (let i = 0; i < 7; i++) {
          const take = reverse ? (exclusive ? i > j : i >= j) : exclusive ? i < j : i <= j;
          if (take) p *= xs[r * 7 + i]!;
        }
        want.push(p);
      }
    }
    assertClose(data(m(x) as sc.Tensor), want, 1e-15, `exclusive ${exclusive} reverse ${reverse}`);
    const loss = (t: sc.Tensor) => sc.sum(sc.mul(m(t) as sc.Tensor, sc.tensor([[1, 2, 3, 4, 5, 6, 7], [7, 6, 5, 4, 3, 2, 1]], "float64")));
    const tape = sc.grad(loss)(x) as sc.Tensor;
    const graphAd = sc.grad(sc.stage(loss, { autograph: false }))(x) as sc.Tensor;
    assertClose(data(graphAd), data(tape), 1e-12, "graph AD vs tape");
    checkGradients(loss, [x], 1e-6, `CumProd exclusive ${exclusive} reverse ${reverse}`);
  }
});

test("Momentum nesterov and Adam with norm_coefficient_post follow the specification's formulas (T = 0 and T > 0)", () => {
  const domain = "ai.onnx.preview.training";
  const X = [0.5, -1.25, 2];
  const G = [0.1, -0.3, 0.7];
  const S = [0.05, 0.2, -0.4];
  const S2 = [0.3, 0.1, 0.2];
  const t = (v: number[]) => sc.tensor(v, "float64", [3]);
  const build = (op: string, states: number, attrs: Record<string, unknown>) => {
    const names = ["X", "G", "V", "H"].slice(0, 2 + states);
    const graph = onnx.makeGraph(
      [onnx.makeNode(op, ["R", "T", ...names], names.filter((n) => n !== "G").map((n) => `${n}_new`), attrs as never, { domain })],
      "g",
      [vi("R", "float64", []), vi("T", "int64", []), ...names.map((n) => vi(n, "float64", [3]))],
      names.filter((n) => n !== "G").map((n) => vi(`${n}_new`, "float64", [3])),
    );
    return loadGraph(onnx.modelBytes(onnx.makeModel(graph, { opsets: { [domain]: 1 } })));
  };
  const R = 0.1;
  for (const T of [0, 3]) {
    const Tt = sc.tensor([T], "int64", []);
    const [alpha, beta, norm] = [0.875, 0.75, 0.015625]; // float32-exact (attributes are float32)
    const mom = build("Momentum", 1, { alpha, beta, norm_coefficient: norm, mode: "nesterov" }).run({ R: sc.scalar(R, "float64"), T: Tt, X: t(X), G: t(G), V: t(S) });
    const wantV = X.map((x, i) => alpha * S[i]! + (T > 0 ? beta : 1) * (norm * x + G[i]!));
    const wantX = X.map((x, i) => x - R * (norm * x + G[i]! + alpha * wantV[i]!));
    assertClose(data(mom.V_new as sc.Tensor), wantV, 1e-14, `nesterov V, T=${T}`);
    assertClose(data(mom.X_new as sc.Tensor), wantX, 1e-14, `nesterov X, T=${T}`);
    const [a2, b2, eps, post] = [0.8125, 0.9375, 2 ** -10, 0.125];
    const adam = build("Adam", 2, { alpha: a2, beta: b2, epsilon: eps, norm_coefficient: norm, norm_coefficient_post: post }).run({ R: sc.scalar(R, "float64"), T: Tt, X: t(X), G: t(G), V: t(S), H: t(S2) });
    const g = X.map((x, i) => norm * x + G[i]!);
    const v = g.map((gi, i) => a2 * S[i]! + (1 - a2) * gi);
    const h = g.map((gi, i) => b2 * S2[i]! + (1 - b2) * gi * gi);
    const rate = T > 0 ? (R * Math.sqrt(1 - b2 ** T)) / (1 - a2 ** T) : R;
    assertClose(data(adam.X_new as sc.Tensor), X.map((x, i) => (1 - post) * (x - rate * (v[i]! / (Math.sqrt(h[i]!) + eps)))), 1e-14, `Adam X, T=${T}`);
    assertClose(data(adam.H_new as sc.Tensor), h, 1e-14, `Adam H, T=${T}`);
  }
});

test("Col2Im with strides, dilations and pads matches a direct loop (the adjoint of im2col); gradients", () => {
  const rng = new Rng(17);
  const [N, C] = [2, 2];
  const image = [5, 6];
  const block = [2, 3];
  const strides = [2, 1];
  const dilations = [1, 2];
  const pads = [1, 0, 0, 2];
  const out = image.map((s, i) => Math.floor((s + pads[i]! + pads[i + 2]! - ((block[i]! - 1) * dilations[i]! + 1)) / strides[i]!) + 1);
  const K = block[0]! * block[1]!;
  const L = out[0]! * out[1]!;
  const x = rng.tensor([N, C * K, L]);
  const xs = data(x);
  const want = new Array<number>(N * C * image[0]! * image[1]!).fill(0);
  for (let b = 0; b < N; b++) for (let c = 0; c < C; c++) for (let kh = 0; kh < block[0]!; kh++) for (let kw = 0; kw < block[1]!; kw++) {
    for (let oh = 0; oh < out[0]!; oh++) for (let ow = 0; ow < out[1]!; ow++) {
      const h = oh * strides[0]! - pads[0]! + kh * dilations[0]!;
      const w = ow * strides[1]! - pads[1]! + kw * dilations[1]!;
      if (h < 0 || w < 0 || h >= image[0]! || w >= image[1]!) continue;
      want[((b * C + c) * image[0]! + h) * image[1]! + w]! += xs[(b * C * K + c * K + kh * block[1]! + kw) * L + oh * out[1]! + ow]!;
    }
  }
  const shapes = [
    { name: "image", value: sc.tensor(image, "int64", [2]) },
    { name: "block", value: sc.tensor(block, "int64", [2]) },
  ];
  const graph = onnx.makeGraph([onnx.makeNode("Col2Im", ["x", "image", "block"], ["y"], { strides, dilations, pads })], "g", [vi("x", "float64", [N, C * K, L])], [vi("y", "float64", null)], shapes);
  const m = loadGraph(onnx.modelBytes(onnx.makeModel(graph, { opset: 18 })));
  const y = m(x) as sc.Tensor;
  assert.deepEqual(y.shape, [N, C, ...image]);
  assertClose(data(y), want, 1e-12, "Col2Im");
  const wy = rng.tensor([N, C, ...image]);
  const loss = (t: sc.Tensor) => sc.sum(sc.mul(m(t) as sc.Tensor, wy));
  assertClose(data(sc.grad(sc.stage(loss, { autograph: false }))(x) as sc.Tensor), data(sc.grad(loss)(x) as sc.Tensor), 1e-12, "graph AD vs tape");
  checkGradients(loss, [x], 1e-6, "Col2Im");
});

test("Unique along an axis, sorted and unsorted, staged (a host call) and differentiable in its values", () => {
  const x = sc.tensor([[1, 3, 1, 0, 3], [2, 4, 2, 5, 4]], "float64");
  for (const sortedAttr of [1, 0]) {
    const graph = onnx.makeGraph(
      [onnx.makeNode("Unique", ["x"], ["y", "i", "inv", "c"], { axis: 1, sorted: sortedAttr })],
      "g",
      [vi("x", "float64", [2, 5])],
      [vi("y", "float64", null), vi("i", "int64", null), vi("inv", "int64", null), vi("c", "int64", null)],
    );
    const m = loadGraph(onnx.modelBytes(onnx.makeModel(graph, { opset: 11 })));
    const out = m.run({ x });
    // columns: (1,2) (3,4) (1,2) (0,5) (3,4)
    if (sortedAttr) {
      assert.deepEqual(data(out.y as sc.Tensor), [0, 1, 3, 5, 2, 4]);
      assert.deepEqual(data(out.i as sc.Tensor), [3, 0, 1]);
      assert.deepEqual(data(out.inv as sc.Tensor), [1, 2, 1, 0, 2]);
      assert.deepEqual(data(out.c as sc.Tensor), [1, 2, 2]);
    } else {
      assert.deepEqual(data(out.y as sc.Tensor), [1, 3, 0, 2, 4, 5]);
      assert.deepEqual(data(out.i as sc.Tensor), [0, 1, 3]);
      assert.deepEqual(data(out.inv as sc.Tensor), [0, 1, 0, 2, 1]);
      assert.deepEqual(data(out.c as sc.Tensor), [2, 2, 1]);
    }
    // staged inside another function: the host call runs when the graph runs; the gradient reaches x
    const loss = (t: sc.Tensor) => sc.sum(sc.square(m(t)[0] as sc.Tensor));
    const g = sc.grad(sc.stage(loss, { autograph: false }))(x) as sc.Tensor;
    assert.deepEqual(data(g), data(sc.grad(loss)(x) as sc.Tensor));
    const firsts = sortedAttr ? [3, 0, 1] : [0, 1, 3];
    assert.deepEqual(data(g), data(x).map((v, k) => (firsts.includes(k % 5) ? 2 * v : 0)));
  }
});

test("TfIdfVectorizer IDF and TFIDF modes with weights, skips and a 1-D input match direct counting", () => {
  const tokens = [4, 2, 4, 2, 7, 4, 9, 2, 4];
  const x = sc.tensor(tokens, "int32", [9]);
  // unigrams 4, 9; bigrams (4,2), (2,4); output columns permuted by ngram_indexes
  const attrs = { min_gram_length: 1, max_gram_length: 2, max_skip_count: 2, ngram_counts: [0, 2], ngram_indexes: [3, 0, 1, 2], pool_int64s: [4, 9, 4, 2, 2, 4], weights: [0.5, 2, 0.25, 4] };
  const count = (gram: number[]): number => {
    if (gram.length === 1) return tokens.filter((t) => t === gram[0]).length;
    let c = 0;
    for (let s = 0; s <= 2; s++) for (let i = 0; i + s + 1 < tokens.length; i++) if (tokens[i] === gram[0] && tokens[i + s + 1] === gram[1]) c++;
    return c;
  };
  const tf = [[4], [9], [4, 2], [2, 4]].map(count);
  for (const mode of ["TF", "IDF", "TFIDF"]) {
    const graph = onnx.makeGraph([onnx.makeNode("TfIdfVectorizer", ["x"], ["y"], { ...attrs, mode })], "g", [vi("x", "int32", [9])], [vi("y", "float32", null)]);
    const y = loadGraph(onnx.modelBytes(onnx.makeModel(graph, { opset: 9 })))(x) as sc.Tensor;
    const want = [0, 0, 0, 0];
    tf.forEach((c, g) => (want[attrs.ngram_indexes[g]!] = mode === "TF" ? c : mode === "IDF" ? (c > 0 ? attrs.weights[g]! : 0) : c * attrs.weights[g]!));
    assert.deepEqual(y.shape, [4]);
    assert.deepEqual(data(y), want, mode);
  }
});

test("AffineGrid 3-D (both align_corners) and TensorScatter circular match direct formulas", () => {
  const rng = new Rng(23);
  const theta = rng.tensor([2, 3, 4]);
  const size = [2, 1, 2, 3, 4];
  for (const align of [0, 1]) {
    const graph = onnx.makeGraph([onnx.makeNode("AffineGrid", ["t", "s"], ["g"], { align_corners: align })], "g", [vi("t", "float64", [2, 3, 4])], [vi("g", "float64", null)], [{ name: "s", value: sc.tensor(size, "int64", [5]) }]);
    const g = loadGraph(onnx.modelBytes(onnx.makeModel(graph, { opset: 20 })))(theta) as sc.Tensor;
    assert.deepEqual(g.shape, [2, 2, 3, 4, 3]);
    const c = (m: number, i: number) => (align ? -1 + (2 * i) / (m - 1) : (2 * i + 1) / m - 1);
    const th = data(theta);
    const want: number[] = [];
    for (let b = 0; b < 2; b++) for (let d = 0; d < 2; d++) for (let h = 0; h < 3; h++) for (let w = 0; w < 4; w++) {
      const v = [c(4, w), c(3, h), c(2, d), 1];
      for (let r = 0; r < 3; r++) want.push(v.reduce((acc, vi2, k) => acc + vi2 * th[(b * 3 + r) * 4 + k]!, 0));
    }
    assertClose(data(g), want, 1e-12, `AffineGrid align_corners ${align}`);
  }
  const past = sc.tensor(Array.from({ length: 2 * 4 * 2 }, (_, i) => i), "float64", [2, 4, 2]);
  const update = sc.tensor([100, 101, 102, 103, 200, 201, 202, 203], "float64", [2, 2, 2]);
  const widx = sc.tensor([3, 1], "int64", [2]);
  const graph = onnx.makeGraph([onnx.makeNode("TensorScatter", ["p", "u", "w"], ["y"], { mode: "circular", axis: 1 })], "g", [vi("p", "float64", [2, 4, 2]), vi("u", "float64", [2, 2, 2]), vi("w", "int64", [2])], [vi("y", "float64", null)]);
  const y = loadGraph(onnx.modelBytes(onnx.makeModel(graph, { opset: 24 })))(past, update, widx) as sc.Tensor;
  // batch 0 writes rows 3 and (wrapped) 0; batch 1 writes rows 1 and 2
  assert.deepEqual(data(y), [102, 103, 2, 3, 4, 5, 100, 101, 8, 9, 200, 201, 202, 203, 14, 15]);
});

test("DeformConv with groups, offset groups, strides, dilations, pads and a mask matches a direct loop; gradients in X, W, offsets and mask", () => {
  const rng = new Rng(29);
  const [N, C, H, W, M, kH, kW, G, OG] = [1, 4, 4, 5, 2, 2, 2, 2, 2];
  const [sH, sW, dH, dW, pT, pL, pB, pR] = [1, 2, 1, 2, 1, 0, 0, 1];
  const oH = Math.floor((H + pT + pB - ((kH - 1) * dH + 1)) / sH) + 1;
  const oW = Math.floor((W + pL + pR - ((kW - 1) * dW + 1)) / sW) + 1;
  const K = kH * kW;
  const x = rng.tensor([N, C, H, W]);
  const w = rng.tensor([M, C / G, kH, kW]);
  const off = rng.tensor([N, OG * 2 * K, oH, oW], -1.5, 1.5);
  const mask = rng.tensor([N, OG * K, oH, oW], 0.2, 1);
  const b = rng.tensor([M]);
  const xs = data(x), ws = data(w), os = data(off), ms = data(mask);
  const at = (c: number, h: number, ww: number) => (h >= 0 && h < H && ww >= 0 && ww < W ? xs[(c * H + h) * W + ww]! : 0);
  const sample = (c: number, y: number, xx: number) => {
    const y0 = Math.floor(y), x0 = Math.floor(xx), ly = y - y0, lx = xx - x0;
    return at(c, y0, x0) * (1 - ly) * (1 - lx) + at(c, y0, x0 + 1) * (1 - ly) * lx + at(c, y0 + 1, x0) * ly * (1 - lx) + at(c, y0 + 1, x0 + 1) * ly * lx;
  };
  const want: number[] = [];
  for (let m = 0; m < M; m++) for (let oh = 0; oh < oH; oh++) for (let ow = 0; ow < oW; ow++) {
    let acc = data(b)[m]!;
    const g = Math.floor(m / (M / G));
    for (let cl = 0; cl < C / G; cl++) {
      const c = g * (C / G) + cl;
      const og = Math.floor(c / (C / OG));
      for (let i = 0; i < kH; i++) for (let j = 0; j < kW; j++) {
        const k = i * kW + j;
        const dy = os[((og * 2 * K + 2 * k) * oH + oh) * oW + ow]!;
        const dx = os[((og * 2 * K + 2 * k + 1) * oH + oh) * oW + ow]!;
        const v = sample(c, oh * sH - pT + i * dH + dy, ow * sW - pL + j * dW + dx) * ms[((og * K + k) * oH + oh) * oW + ow]!;
        acc += v * ws[((m * (C / G) + cl) * kH + i) * kW + j]!;
      }
    }
    want.push(acc);
  }
  const graph = onnx.makeGraph(
    [onnx.makeNode("DeformConv", ["x", "w", "o", "b", "m"], ["y"], { group: G, offset_group: OG, strides: [sH, sW], dilations: [dH, dW], pads: [pT, pL, pB, pR], kernel_shape: [kH, kW] })],
    "g",
    [vi("x", "float64", [N, C, H, W]), vi("w", "float64", [M, C / G, kH, kW]), vi("o", "float64", [...off.shape]), vi("b", "float64", [M]), vi("m", "float64", [...mask.shape])],
    [vi("y", "float64", null)],
  );
  const model = loadGraph(onnx.modelBytes(onnx.makeModel(graph, { opset: 22 })));
  const y = model(x, w, off, b, mask) as sc.Tensor;
  assert.deepEqual(y.shape, [N, M, oH, oW]);
  assertClose(data(y), want, 1e-12, "DeformConv");
  const wy = rng.tensor([N, M, oH, oW]);
  const loss = (xt: sc.Tensor, wt: sc.Tensor, ot: sc.Tensor, mt: sc.Tensor) => sc.sum(sc.mul(model(xt, wt, ot, b, mt) as sc.Tensor, wy));
  const tape = sc.grad(loss, { argnums: "all" })(x, w, off, mask) as sc.Tensor[];
  const staged = sc.grad(sc.stage(loss, { autograph: false }), { argnums: "all" })(x, w, off, mask) as sc.Tensor[];
  tape.forEach((g, i) => assertClose(data(staged[i]!), data(g), 1e-12, `graph AD vs tape, input ${i}`));
  checkGradients(loss, [x, w, off, mask], 1e-6, "DeformConv");
});

test("Det: batches of 1x1 to 5x5 (with zero diagonals that need pivoting, and a singular one) match Laplace expansion; gradients", () => {
  const rng = new Rng(41);
  const laplace = (m: number[][]): number => (m.length === 1 ? m[0]![0]! : m[0]!.reduce((acc, v, j) => acc + (j % 2 ? -1 : 1) * v * laplace(m.slice(1).map((r) => r.filter((_, c) => c !== j))), 0));
  for (const size of [1, 2, 3, 5]) {
    const x = rng.tensor([2, 3, size, size]);
    const vals = data(x);
    if (size > 1) vals[0] = 0; // a zero first pivot: the first matrix needs a row swap
    if (size > 2) for (let c = 0; c < size; c++) vals[size * size + size + c] = 2 * vals[size * size + c]!; // a singular second matrix (rows 0 and 1 proportional)
    const xt = sc.tensor(vals, "float64", [2, 3, size, size]);
    const graph = onnx.makeGraph([onnx.makeNode("Det", ["x"], ["y"])], "g", [vi("x", "float64", [2, 3, size, size])], [vi("y", "float64", null)]);
    const m = loadGraph(onnx.modelBytes(onnx.makeModel(graph, { opset: 22 })));
    const y = m(xt) as sc.Tensor;
    assert.deepEqual(y.shape, [2, 3]);
    const want = Array.from({ length: 6 }, (_, b) => laplace(Array.from({ length: size }, (_, r) => vals.slice(b * size * size + r * size, b * size * size + (r + 1) * size))));
    assertClose(data(y), want, 1e-12, `Det ${size}x${size}`);
    if (size > 2) assert.ok(Math.abs(data(y)[1]!) < 1e-12, "the singular matrix has determinant 0");
    const w = rng.tensor([2, 3]);
    const loss = (t: sc.Tensor) => sc.sum(sc.mul(m(t) as sc.Tensor, w));
    const probe = rng.tensor([2, 3, size, size]);
    assertClose(data(sc.grad(sc.stage(loss, { autograph: false }))(probe) as sc.Tensor), data(sc.grad(loss)(probe) as sc.Tensor), 1e-12, "graph AD vs tape");
    checkGradients(loss, [probe], 1e-6, `Det ${size}x${size}`);
  }
});

test("RoiAlign (half_pixel, adaptive sampling, avg and max) matches onnxruntime; staged with run-time rois (a host call) and differentiable in X", async () => {
  const rng = new Rng(43);
  const x = rng.tensor([2, 3, 7, 8], -1, 1, "float32");
  const rois = sc.tensor([0.5, 1, 6.5, 5, 2, 0, 7.9, 6.9, -1, -0.5, 3, 2.5, 4, 4, 4.2, 4.1], "float32", [4, 4]);
  const batch = sc.tensor([1, 0, 1, 0], "int64", [4]);
  for (const mode of ["avg", "max"]) {
    const graph = onnx.makeGraph(
      [onnx.makeNode("RoiAlign", ["x", "r", "b"], ["y"], { mode, output_height: 3, output_width: 2, sampling_ratio: 0, spatial_scale: 0.9, coordinate_transformation_mode: "half_pixel" })],
      "g",
      [vi("x", "float32", [2, 3, 7, 8]), vi("r", "float32", [4, 4]), vi("b", "int64", [4])],
      [vi("y", "float32", null)],
    );
    const bytes = onnx.modelBytes(onnx.makeModel(graph, { opset: 18 }));
    const m = loadGraph(bytes);
    const ours = m(x, rois, batch) as sc.Tensor;
    const theirs = (await onnx.runOnnxRuntime(bytes, { x, r: rois, b: batch })).y!;
    assert.deepEqual(ours.shape, [4, 3, 3, 2]);
    assertClose(data(ours), data(theirs), 1e-5, `RoiAlign ${mode} vs onnxruntime`);
    // rois as traced values: the sample positions come from a host call when the graph runs
    const staged = sc.stage((t: sc.Tensor, r: sc.Tensor) => m(t, r, batch) as sc.Tensor, { autograph: false });
    assertClose(data(staged(x, rois)), data(ours), 0, `${mode}: staged = eager`);
    const w = rng.tensor([4, 3, 3, 2], -1, 1, "float32");
    const loss = (t: sc.Tensor) => sc.sum(sc.mul(m(t, rois, batch) as sc.Tensor, w));
    assertClose(data(sc.grad(sc.stage(loss, { autograph: false }))(x) as sc.Tensor), data(sc.grad(loss)(x) as sc.Tensor), 1e-6, `${mode}: graph AD vs tape`);
    if (mode === "avg") {
      const x64 = sc.cast(x, "float64");
      const m64 = loadGraph(onnx.modelBytes(onnx.makeModel(onnx.makeGraph(graph.node as never, "g", [vi("x", "float64", [2, 3, 7, 8]), vi("r", "float32", [4, 4]), vi("b", "int64", [4])], [vi("y", "float64", null)]), { opset: 18 })));
      const w64 = sc.cast(w, "float64");
      checkGradients((t: sc.Tensor) => sc.sum(sc.mul(m64(t, rois, batch) as sc.Tensor, w64)), [x64], 1e-6, "RoiAlign avg");
    }
  }
});

test("an input read inside an If branch whose output sets a shape is a static input (test_affine_grid_2d_expanded)", () => {
  const m = loadGraph(readFileSync(path.join(fixtures, "test_affine_grid_2d_expanded/model.onnx")));
  assert.deepEqual(m.staticInputs, ["size"]);
});

test("a Loop carrying a sequence unrolls while tracing: its trip count and condition are static inputs, each value traced once", () => {
  const m = loadGraph(readFileSync(path.join(fixtures, "test_loop13_seq/model.onnx")));
  assert.deepEqual(m.staticInputs, ["trip_count", "cond"]);
  // the body appends x[0 : i + 1] of x = [1, 2, 3, 4, 5] on iteration i
  const run = (trips: number, cond: boolean) => m(sc.tensor(trips, "int64"), sc.tensor(cond), []) as sc.Tensor[];
  assert.deepEqual(run(3, true).map(data), [[1], [1, 2], [1, 2, 3]]);
  assert.deepEqual(run(0, true), []);
  assert.deepEqual(run(4, false), []);
});
