// CPU backend kernels (matmul, conv2d and its gradients) against naive reference loops.
import { test } from "node:test";
import assert from "node:assert/strict";
import { matmul, outerProductCalls, OUTER_C_GROUP_BYTES, UNCLEARED_MIN_BYTES, WASM_C_GROUP_BYTES } from "../../../src/backends/cpu/matmul.js";
import { getWasmRuntime } from "../../../src/backends/cpu/wasm-runtime.js";
import { poolStats } from "../../../src/backends/cpu/worker-pool.js";
import { nativeKernels, nativeStats, useNativeKernels } from "../../../src/backends/cpu/native.js";
import { config } from "../../../src/core/config.js";
import { conv2d, conv2dBackpropFilter, conv2dBackpropInput, type Conv2dParams } from "../../../src/backends/cpu/conv.js";
import * as sc from "../../../src/api/index.js";
import { Rng } from "../../util/rng.js";

type Dt = "float32" | "float64";
type Arr = Float32Array | Float64Array;

function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = Math.imul(s ^ (s >>> 15), 1 | s);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
function rand(dt: Dt, n: number, seed: number): Arr {
  const r = rng(seed), a = dt === "float32" ? new Float32Array(n) : new Float64Array(n);
  for (let i = 0; i < n; i++) a[i] = r() * 2 - 1;
  return a;
}
function close(dt: Dt, got: Arr, want: Float64Array, what: string): void {
  assert.equal(got.length, want.length, what + ": length");
  let scale = 1;
  for (const v of want) scale = Math.max(scale, Math.abs(v));
  const tol = (dt === "float32" ? 1e-4 : 1e-10) * scale;
  for (let i = 0; i < want.length; i++) {
    if (!(Math.abs(got[i] - want[i]) <= tol)) assert.fail(`${what}: [${i}] got ${got[i]}, want ${want[i]}`);
  }
}

// ---- matmul ---------------------------------------------------------------------------------

function refMatmul(a: Arr, ao: number[], b: Arr, bo: number[], m: number, k: number, n: number, tA: boolean, tB: boolean): Float64Array {
  const out = new Float64Array(ao.length * m * n);
  for (let z = 0; z < ao.length; z++) {
    for (let i = 0; i < m; i++) for (let j = 0; j < n; j++) {
      let s = 0;
      for (let p = 0; p < k; p++) {
        s += a[ao[z] + (tA ? p * m + i : i * k + p)] * b[bo[z] + (tB ? j * k + p : p * n + j)];
      }
      out[(z * m + i) * n + j] = s;
    }
  }
  return out;
}

function checkMatmul(dt: Dt, m: number, k: number, n: number, tA: boolean, tB: boolean, ao = [0], bo = [0]): void {
  const seed = m * 7919 + k * 31 + n;
  const aLen = Math.max(...ao) + m * k, bLen = Math.max(...bo) + k * n;
  const a = rand(dt, aLen, seed), b = rand(dt, bLen, seed + 1);
  const out = dt === "float32" ? new Float32Array(ao.length * m * n) : new Float64Array(ao.length * m * n);
  out.fill(Number.NaN);
  matmul(dt, a, ao, b, bo, out, m, k, n, tA, tB);
  close(dt, out, refMatmul(a, ao, b, bo, m, k, n, tA, tB), `${dt} ${m}x${k}x${n} tA=${tA} tB=${tB} batch=${ao.length}`);
}

const SIZES: [number, number, number][] = [[1, 1, 1], [7, 13, 5], [1, 64, 300], [33, 1, 40], [65, 129, 67], [300, 200, 100]];
for (const dt of ["float32", "float64"] as const) {
  test(`matmul ${dt}: all transpose combinations, odd sizes`, () => {
    for (const [m, k, n] of SIZES) {
      for (const tA of [false, true]) for (const tB of [false, true]) checkMatmul(dt, m, k, n, tA, tB);
    }
  });
  test(`matmul ${dt}: batches with broadcast and strided offsets`, () => {
    // A broadcast over 3 batches, B distinct
    checkMatmul(dt, 17, 33, 29, false, false, [0, 0, 0], [0, 33 * 29, 2 * 33 * 29]);
    // A distinct, B repeated; batch of 4 big enough to use threads
    checkMatmul(dt, 96, 80, 72, true, false, [0, 96 * 80, 2 * 96 * 80, 3 * 96 * 80], [0, 0, 0, 0]);
    // sparse offsets (gaps between matrices), odd batch count split by rows
    checkMatmul(dt, 130, 70, 50, false, true, [0, 50000, 100000], [5000, 0, 20000]);
  });
}
/** Runs `f` with the native kernels on and off (the WebAssembly kernels), naming the variant. */
function bothKernels(f: (variant: string) => void): void {
  for (const native of [true, false]) {
    useNativeKernels(native);
    try {
      f(native ? "native" : "wasm");
    } finally {
      useNativeKernels(true);
    }
  }
}

test("matmul float32: large, crossing the threading threshold (native kernels and wasm kernels)", () => {
  bothKernels(() => {
    checkMatmul("float32", 257, 300, 263, false, false);
    checkMatmul("float32", 260, 513, 130, true, true);
    checkMatmul("float32", 3, 200, 1100, false, true); // split by columns
    checkMatmul("float32", 140, 150, 160, true, false, [0, 140 * 150, 2 * 140 * 150], [0, 0, 0]); // a batch, B repeated
  });
});
test("matmul float32: a batch whose results pass WASM_C_GROUP_BYTES runs in groups, each product the bits it has alone", () => {
  useNativeKernels(false); // the WebAssembly path is the one that groups
  try {
    // [m, k, n, tA, tB, batch]: a 100 KB product (groups of 40: one full, one partial), and
    // products with k = 2 (the outer products, k = 1, have their own path: the next test)
    const cases: [number, number, number, boolean, boolean, number][] = [[200, 3, 128, false, false, 45], [784, 2, 128, true, false, 23]];
    for (const [m, k, n, tA, tB, batch] of cases) {
      const group = Math.floor(WASM_C_GROUP_BYTES / (m * n * 4));
      assert.ok(group < batch && batch % group !== 0, `the case runs in several groups, the last one partial (group ${group}, batch ${batch})`);
      const ao = Array.from({ length: batch }, (_, i) => i * m * k), bo = Array.from({ length: batch }, (_, i) => ((i * 5) % 3) * k * n); // B shared by some
      const a = rand("float32", batch * m * k, m + k), b = rand("float32", 3 * k * n, n + 1);
      const out = new Float32Array(batch * m * n).fill(Number.NaN);
      matmul("float32", a, ao, b, bo, out, m, k, n, tA, tB);
      close("float32", out, refMatmul(a, ao, b, bo, m, k, n, tA, tB), `${m}x${k}x${n} batch ${batch}`);
      for (const i of [0, group - 1, group, batch - 1]) {
        const alone = new Float32Array(m * n).fill(Number.NaN);
        matmul("float32", a, [ao[i]!], b, [bo[i]!], alone, m, k, n, tA, tB);
        assert.deepEqual(out.subarray(i * m * n, (i + 1) * m * n), alone, `product ${i} of ${batch}`);
      }
    }
  } finally {
    useNativeKernels(true);
  }
});
test("matmul float32, k = 1: outer products, each element 0 + a*b rounded once (a -0 product is +0, as the gemm kernels give), in groups", () => {
  // [m, n, tA, tB, batch]: the per-example weight gradient (784 x 256, A transposed: groups of
  // one), odd columns (the scalar tail), and small products many to a group
  const cases: [number, number, boolean, boolean, number][] = [[784, 256, true, false, 3], [101, 37, false, true, 75], [40, 30, false, false, 230]];
  for (const [m, n, tA, tB, batch] of cases) {
    const group = Math.max(1, Math.floor(OUTER_C_GROUP_BYTES / (m * n * 4)));
    assert.ok(batch > group && (group === 1 || batch % group !== 0), `several groups, the last one partial (group ${group}, batch ${batch})`);
    const a = rand("float32", batch * m, m + n), b = rand("float32", 2 * n, n + 3);
    for (let i = 0; i < a.length; i += 7) a[i] = i % 2 ? 0 : -0; // signed zeros: products -0 and +0
    const ao = Array.from({ length: batch }, (_, i) => i * m), bo = Array.from({ length: batch }, (_, i) => (i % 2) * n); // B shared by every other
    const out = new Float32Array(batch * m * n).fill(Number.NaN);
    const before = outerProductCalls();
    matmul("float32", a, ao, b, bo, out, m, 1, n, tA, tB);
    assert.equal(outerProductCalls() - before, batch, "the outer-product path made them");
    for (let z = 0; z < batch; z++) {
      for (let i = 0; i < m; i++) for (let j = 0; j < n; j++) {
        const want = Math.fround(a[ao[z]! + i]! * b[bo[z]! + j]!) + 0;
        const got = out[(z * m + i) * n + j]!;
        if (!Object.is(got, want)) assert.fail(`${m}x1x${n} tA=${tA} tB=${tB}: [${z}][${i}][${j}] got ${got}, want ${want}`);
      }
    }
  }
});
test("matmul's large outputs are not cleared first, and every element is written (k = 0 and k = 1 through the op)", () => {
  // (an uncleared block may hold anything: a product that left an element unwritten shows it)
  const n = Math.ceil(UNCLEARED_MIN_BYTES / 4 / 600) + 1;
  for (let r = 0; r < 3; r++) {
    const zeros = sc.matmul(sc.zeros([600, 0], "float32"), sc.zeros([0, n], "float32")).dataSync();
    assert.ok(zeros.every((v) => Object.is(v, 0)), "k = 0: zeros");
    const ones = sc.matmul(sc.ones([2, 600, 1], "float32"), sc.ones([2, 1, n], "float32"), { transposeA: false }).dataSync();
    assert.ok(ones.every((v) => v === 1), "k = 1: ones");
    const f64 = sc.matmul(sc.ones([600, 3], "float64"), sc.ones([3, n], "float64")).dataSync();
    assert.ok(f64.every((v) => v === 3), "float64: threes");
  }
});
test("matmul float32: k = 0 gives zeros", () => {
  const out = new Float32Array(40 * 40).fill(7);
  matmul("float32", new Float32Array(0), [0], new Float32Array(0), [0], out, 40, 0, 40, false, false);
  assert.ok(out.every((v) => v === 0));
});

// ---- conv2d ---------------------------------------------------------------------------------

function params(q: Partial<Conv2dParams> & { batch: number; inC: number; inH: number; inW: number; outC: number; kH: number; kW: number }): Conv2dParams {
  const p = { strideH: 1, strideW: 1, padTop: 0, padLeft: 0, dilationH: 1, dilationW: 1, groups: 1, outH: 0, outW: 0, ...q };
  const padH = q.outH === undefined ? 2 * p.padTop : 0, padW = q.outW === undefined ? 2 * p.padLeft : 0;
  if (q.outH === undefined) p.outH = Math.floor((p.inH + padH - p.dilationH * (p.kH - 1) - 1) / p.strideH) + 1;
  if (q.outW === undefined) p.outW = Math.floor((p.inW + padW - p.dilationW * (p.kW - 1) - 1) / p.strideW) + 1;
  return p;
}

/** Calls f(outIndex, xIndex, wIndex) for every multiply of the convolution (naive). */
function taps(p: Conv2dParams, f: (o: number, x: number, w: number) => void): void {
  const cg = p.inC / p.groups, ocg = p.outC / p.groups;
  for (let n = 0; n < p.batch; n++) for (let oc = 0; oc < p.outC; oc++) {
    const g = Math.floor(oc / ocg);
    for (let oh = 0; oh < p.outH; oh++) for (let ow = 0; ow < p.outW; ow++) {
      for (let c = 0; c < cg; c++) for (let ki = 0; ki < p.kH; ki++) for (let kj = 0; kj < p.kW; kj++) {
        const ih = oh * p.strideH - p.padTop + ki * p.dilationH, iw = ow * p.strideW - p.padLeft + kj * p.dilationW;
        if (ih < 0 || ih >= p.inH || iw < 0 || iw >= p.inW) continue;
        f(((n * p.outC + oc) * p.outH + oh) * p.outW + ow,
          ((n * p.inC + g * cg + c) * p.inH + ih) * p.inW + iw,
          ((oc * cg + c) * p.kH + ki) * p.kW + kj);
      }
    }
  }
}

function checkConv(dt: Dt, p: Conv2dParams, name: string): void {
  const xLen = p.batch * p.inC * p.inH * p.inW, wLen = (p.outC * p.inC / p.groups) * p.kH * p.kW;
  const yLen = p.batch * p.outC * p.outH * p.outW;
  const x = rand(dt, xLen, 11), w = rand(dt, wLen, 12), dy = rand(dt, yLen, 13);
  const y = new Float64Array(yLen), dx = new Float64Array(xLen), dw = new Float64Array(wLen);
  taps(p, (o, xi, wi) => { y[o] += x[xi] * w[wi]; dx[xi] += dy[o] * w[wi]; dw[wi] += dy[o] * x[xi]; });
  const mk = (n: number) => { const a = dt === "float32" ? new Float32Array(n) : new Float64Array(n); return a.fill(Number.NaN); };
  const gy = mk(yLen), gdx = mk(xLen), gdw = mk(wLen);
  conv2d(dt, x, w, gy, p);
  close(dt, gy, y, `${dt} ${name} forward`);
  conv2dBackpropInput(dt, dy, w, gdx, p);
  close(dt, gdx, dx, `${dt} ${name} backprop input`);
  conv2dBackpropFilter(dt, x, dy, gdw, p);
  close(dt, gdw, dw, `${dt} ${name} backprop filter`);
}

const CONVS: [string, Conv2dParams][] = [
  ["3x3 basic", params({ batch: 2, inC: 3, inH: 9, inW: 8, outC: 5, kH: 3, kW: 3 })],
  ["1x1", params({ batch: 3, inC: 8, inH: 5, inW: 6, outC: 4, kH: 1, kW: 1 })],
  ["stride 2 + padding", params({ batch: 2, inC: 4, inH: 11, inW: 10, outC: 6, kH: 3, kW: 3, strideH: 2, strideW: 2, padTop: 1, padLeft: 1 })],
  ["asymmetric stride/pad/kernel", params({ batch: 1, inC: 2, inH: 7, inW: 12, outC: 3, kH: 2, kW: 4, strideH: 1, strideW: 3, padTop: 2, padLeft: 0 })],
  ["dilation 2", params({ batch: 2, inC: 3, inH: 12, inW: 11, outC: 4, kH: 3, kW: 3, dilationH: 2, dilationW: 2, padTop: 2, padLeft: 2 })],
  ["groups 2", params({ batch: 2, inC: 6, inH: 8, inW: 8, outC: 4, kH: 3, kW: 3, groups: 2, padTop: 1, padLeft: 1 })],
  ["depthwise", params({ batch: 2, inC: 5, inH: 9, inW: 9, outC: 10, kH: 3, kW: 3, groups: 5, strideH: 2, strideW: 2, padTop: 1, padLeft: 1 })],
  ["big (threads)", params({ batch: 4, inC: 16, inH: 20, inW: 20, outC: 32, kH: 3, kW: 3, padTop: 1, padLeft: 1 })],
  ["kernel larger than padded input rows", params({ batch: 1, inC: 1, inH: 3, inW: 3, outC: 2, kH: 3, kW: 3, padTop: 2, padLeft: 2, strideH: 3, strideW: 3 })],
];
for (const dt of ["float32", "float64"] as const) {
  test(`conv2d ${dt}: forward and gradients match the naive loops`, () => {
    for (const [name, p] of CONVS) checkConv(dt, p, name);
  });
}

/** Convolutions past the native crossover: the edge cases of padding, strides and dilation. */
const BIG_CONVS: [string, Conv2dParams][] = [
  ["3x3 same", params({ batch: 4, inC: 16, inH: 16, inW: 16, outC: 32, kH: 3, kW: 3, padTop: 1, padLeft: 1 })],
  ["stride 2, odd input (rows left over)", params({ batch: 8, inC: 32, inH: 17, inW: 15, outC: 32, kH: 3, kW: 3, strideH: 2, strideW: 2 })],
  ["stride 2, asymmetric same padding", params({ batch: 8, inC: 32, inH: 16, inW: 16, outC: 32, kH: 3, kW: 3, strideH: 2, strideW: 2, outH: 8, outW: 8 })],
  ["1x1 stride 2", params({ batch: 8, inC: 64, inH: 16, inW: 16, outC: 64, kH: 1, kW: 1, strideH: 2, strideW: 2 })],
  ["dilation 2, stride 3 wide", params({ batch: 4, inC: 16, inH: 20, inW: 26, outC: 32, kH: 3, kW: 2, dilationH: 2, dilationW: 3, strideH: 1, strideW: 3, padTop: 2, padLeft: 1 })],
  ["groups 2", params({ batch: 4, inC: 16, inH: 16, inW: 16, outC: 32, kH: 3, kW: 3, groups: 2, padTop: 1, padLeft: 1 })],
];
test("conv2d float32 past the native crossover: forward and gradients match the naive loops (native kernels and wasm kernels)", () => {
  for (const [name, p] of BIG_CONVS) {
    const flops = 2 * p.batch * p.outC * p.outH * p.outW * (p.inC / p.groups) * p.kH * p.kW;
    assert.ok(flops >= config.nativeMinFlops, `${name}: ${flops} flops should be past the crossover`);
  }
  const before = nativeStats().calls;
  bothKernels((variant) => {
    for (const [name, p] of BIG_CONVS) checkConv("float32", p, `${variant} ${name}`);
  });
  // forward and both gradients of every case, less the filter gradient of the grouped one (wasm)
  if (nativeKernels() !== null) assert.equal(nativeStats().calls - before, 3 * BIG_CONVS.length - 1);
});

test("the wasm kernels are loaded and big products ran on the worker pool", () => {
  if (process.env.STAGECRAFT_NO_WASM === "1") return;
  const rt = getWasmRuntime();
  assert.ok(rt !== null, "wasm/build/kernels.wasm should load (run npm run build:wasm)");
  const s = poolStats();
  if (rt.maxThreads > 1) {
    assert.ok(s.parallelJobs > 0, "expected some jobs split over threads");
    assert.ok(s.workerShares + s.revoked > 0);
  }
});

test("float32 tanh is within 3 ulp of the rounded exact value, eagerly and staged; float64 is Math.tanh", () => {
  const rng = new Rng(11);
  const n = 20000;
  const xs = new Float32Array(n);
  for (let i = 0; i < n; i++) xs[i] = Math.fround((rng.next() - 0.5) * 40 * Math.pow(10, -rng.next() * 7));
  xs.set([0, -0, 1e-30, 7.9, 8.9, 9, 9.1, 50, NaN, Infinity, -Infinity], 0);
  const x = sc.tensor(xs, "float32", [n]);
  const bits = new Int32Array(1);
  const asF32 = new Float32Array(bits.buffer);
  const ulps = (a: number, b: number) => {
    asF32[0] = a;
    const ia = bits[0]!;
    asF32[0] = b;
    return Math.abs(ia - bits[0]!);
  };
  for (const y of [sc.tanh(x), sc.stage((t: sc.Tensor) => sc.tanh(t.mul(1)))(x)]) {
    const got = y.dataSync();
    let worst = 0;
    for (let i = 0; i < n; i++) {
      const want = Math.fround(Math.tanh(xs[i]!));
      if (Number.isNaN(want)) assert.ok(Number.isNaN(got[i]!), `tanh(${xs[i]}) = ${got[i]}`);
      else worst = Math.max(worst, ulps(got[i]!, want));
    }
    assert.ok(worst <= 3, `worst error ${worst} ulp`);
    assert.ok(Object.is(got[1], -0) && got[0] === 0 && got[9] === 1 && got[10] === -1);
  }
  const x64 = sc.tensor(Array.from(xs.subarray(0, 100)), "float64");
  assert.deepEqual(Array.from(sc.tanh(x64).dataSync()), Array.from(x64.dataSync(), (v) => Math.tanh(v)));
});
