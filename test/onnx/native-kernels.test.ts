// onnxruntime-node's kernels for the CPU backend (onnx/native-kernels.ts) against the
// WebAssembly kernels and a float64 reference, on shapes that exercise every attribute: strides,
// dilations, asymmetric and zero padding, 1x1 and non-square filters, a single image; each
// kernel reading and writing views of shared memory (the compiled executor's arena) as well as
// ordinary arrays. Both forms of the filter gradient (im2col and a batched product; the swapped
// convolution, used past the column limit) are checked.
import { test } from "node:test";
import assert from "node:assert/strict";
import type { Conv2dParams } from "../../src/backends/cpu/conv.js";
import { conv2d, conv2dBackpropFilter, conv2dBackpropInput } from "../../src/backends/cpu/conv.js";
import { useNativeKernels } from "../../src/backends/cpu/native.js";
import { filterGradModel, ortNativeKernels } from "../../src/onnx/native-kernels.js";
import { SessionCache, syncRuntime } from "../../src/onnx/sync-session.js";
import { Rng } from "../util/rng.js";

const hasOrt = syncRuntime() !== null;

function params(o: Partial<Conv2dParams> & { inH: number; inW: number }): Conv2dParams {
  const p: Conv2dParams = { batch: 2, inC: 3, outC: 4, kH: 3, kW: 3, outH: 0, outW: 0, strideH: 1, strideW: 1, padTop: 0, padLeft: 0, dilationH: 1, dilationW: 1, groups: 1, ...o };
  // the output rows the forward convolution gives with these pads (bottom/right as `o` implies)
  const pb = (o as { padBottom?: number }).padBottom ?? 0, pr = (o as { padRight?: number }).padRight ?? 0;
  p.outH = Math.floor((p.inH + p.padTop + pb - ((p.kH - 1) * p.dilationH + 1)) / p.strideH) + 1;
  p.outW = Math.floor((p.inW + p.padLeft + pr - ((p.kW - 1) * p.dilationW + 1)) / p.strideW) + 1;
  return p;
}

const SHAPES: [string, Conv2dParams][] = [
  ["3x3 'same'", params({ inH: 8, inW: 8, padTop: 1, padLeft: 1, padBottom: 1, padRight: 1 } as Partial<Conv2dParams> & { inH: number; inW: number })],
  ["3x3 stride 2, pads only bottom/right (TF 'same')", params({ inH: 9, inW: 8, strideH: 2, strideW: 2, padBottom: 1, padRight: 1 } as Partial<Conv2dParams> & { inH: number; inW: number })],
  ["1x1 stride 2", params({ inH: 8, inW: 8, kH: 1, kW: 1, strideH: 2, strideW: 2 })],
  ["1x1 stride 1 (the columns are x itself)", params({ inH: 5, inW: 7, kH: 1, kW: 1 })],
  ["2x3 dilated (2, 1), stride (1, 2), pads [2, 1, 0, 3]", params({ inH: 9, inW: 10, kH: 2, kW: 3, dilationH: 2, strideW: 2, padTop: 2, padLeft: 1, padRight: 3 } as Partial<Conv2dParams> & { inH: number; inW: number })],
  ["one image, valid, rows cut off by the stride", params({ batch: 1, inH: 10, inW: 10, strideH: 3, strideW: 3 })],
  ["3x2 dilated (1, 3), stride 1, pads [2, 0, 1, 4]", params({ inH: 7, inW: 9, kH: 3, kW: 2, dilationW: 3, padTop: 2, padBottom: 1, padRight: 4 } as Partial<Conv2dParams> & { inH: number; inW: number })],
  ["stride 1, valid, 5x5 filter", params({ inH: 9, inW: 8, kH: 5, kW: 5 })],
  ["1x1 stride 1 padded by 1 (a pad past the kernel)", params({ inH: 5, inW: 6, kH: 1, kW: 1, padTop: 1, padLeft: 1, padBottom: 1, padRight: 1 } as Partial<Conv2dParams> & { inH: number; inW: number })],
];

const fill = (n: number, r: Rng, shared: boolean): Float32Array => {
  const a = shared ? new Float32Array(new SharedArrayBuffer(n * 4)) : new Float32Array(n);
  for (let i = 0; i < n; i++) a[i] = r.next() * 2 - 1;
  return a;
};

/** The float64 reference of the filter gradient and the input gradient (the loop kernels). */
function reference(p: Conv2dParams, x: Float32Array, w: Float32Array, dy: Float32Array) {
  const dw = new Float64Array(w.length), dx = new Float64Array(x.length), y = new Float64Array(dy.length);
  conv2dBackpropFilter("float64", Float64Array.from(x), Float64Array.from(dy), dw, p);
  conv2dBackpropInput("float64", Float64Array.from(dy), Float64Array.from(w), dx, p);
  conv2d("float64", Float64Array.from(x), Float64Array.from(w), y, p);
  return { dw, dx, y };
}

function assertNear(name: string, got: ArrayLike<number>, want: ArrayLike<number>): void {
  assert.equal(got.length, want.length, name);
  for (let i = 0; i < want.length; i++) {
    assert.ok(Math.abs(got[i]! - want[i]!) <= 1e-5 * (1 + Math.abs(want[i]!)) * 8, `${name} [${i}]: ${got[i]} vs ${want[i]}`);
  }
}

test("native convolution, input and filter gradients = the WebAssembly kernels = float64, on shared and ordinary arrays", { skip: hasOrt ? false : "onnxruntime-node not loaded" }, () => {
  const r = new Rng(11);
  for (const [name, p] of SHAPES) {
    for (const shared of [false, true]) {
      const x = fill(p.batch * p.inC * p.inH * p.inW, r, shared), w = fill(p.outC * p.inC * p.kH * p.kW, r, shared), dy = fill(p.batch * p.outC * p.outH * p.outW, r, shared);
      const ref = reference(p, x, w, dy);
      const out = (n: number) => (shared ? new Float32Array(new SharedArrayBuffer(n * 4)) : new Float32Array(n)).fill(NaN);
      const y = out(dy.length), dx = out(x.length), dw = out(w.length);
      ortNativeKernels.conv2d(x, w, y, p, 1);
      assert.ok(ortNativeKernels.conv2dBackpropInput(dy, w, dx, p, 1), `${name}: input gradient expressed`);
      assert.ok(ortNativeKernels.conv2dBackpropFilter(x, dy, dw, p, 1), `${name}: filter gradient expressed`);
      const tag = `${name} (${shared ? "shared" : "ordinary"} arrays)`;
      assertNear(`${tag} forward`, y, ref.y);
      assertNear(`${tag} input gradient`, dx, ref.dx);
      assertNear(`${tag} filter gradient`, dw, ref.dw);
      useNativeKernels(false);
      try {
        const wasm = new Float32Array(w.length);
        conv2dBackpropFilter("float32", x, dy, wasm, p);
        assertNear(`${tag} filter gradient vs the WebAssembly kernel`, dw, wasm);
      } finally {
        useNativeKernels(true);
      }
    }
  }
});

test("both forms of the native filter gradient (im2col + a batched product, the swapped convolution) = float64", { skip: hasOrt ? false : "onnxruntime-node not loaded" }, () => {
  const r = new Rng(12), cache = new SessionCache();
  for (const [name, p] of SHAPES) {
    const x = fill(p.batch * p.inC * p.inH * p.inW, r, false), w = fill(p.outC * p.inC * p.kH * p.kW, r, false), dy = fill(p.batch * p.outC * p.outH * p.outW, r, false);
    const ref = reference(p, x, w, dy);
    for (const form of ["im2col", "swapped"] as const) {
      const dw = new Float32Array(w.length).fill(NaN);
      cache.get(`${form} ${name}`, 1, () => filterGradModel(p, form))!.run(
        { x: [x, [p.batch, p.inC, p.inH, p.inW]], dy: [dy, [p.batch, p.outC, p.outH, p.outW]] },
        { dw: [dw, [p.outC, p.inC, p.kH, p.kW]] },
      );
      assertNear(`${name}: ${form} form`, dw, ref.dw);
    }
  }
});

test("the native convolution and both its gradients give the same bits on 1, 2 and 4 threads (the thread policy picks per call)", { skip: hasOrt ? false : "onnxruntime-node not loaded" }, () => {
  const r = new Rng(13);
  const resnet = (o: Partial<Conv2dParams>) => params({ batch: 16, inC: 16, outC: 16, inH: 32, inW: 32, padTop: 1, padLeft: 1, padBottom: 1, padRight: 1, ...o } as Partial<Conv2dParams> & { inH: number; inW: number });
  const shapes = [...SHAPES.map(([, p]) => p), resnet({}), resnet({ inC: 3 }), resnet({ inC: 32, outC: 32, inH: 16, inW: 16 }), params({ batch: 16, inC: 16, outC: 32, inH: 32, inW: 32, kH: 1, kW: 1, strideH: 2, strideW: 2 })];
  for (const p of shapes) {
    const x = fill(p.batch * p.inC * p.inH * p.inW, r, true), dy = fill(p.batch * p.outC * p.outH * p.outW, r, true), w = fill(p.outC * p.inC * p.kH * p.kW, r, true);
    const runs = [1, 2, 4].map((t) => {
      const dw = new Float32Array(w.length), dx = new Float32Array(x.length), y = new Float32Array(dy.length);
      ortNativeKernels.conv2dBackpropFilter(x, dy, dw, p, t);
      ortNativeKernels.conv2dBackpropInput(dy, w, dx, p, t);
      ortNativeKernels.conv2d(x, w, y, p, t);
      return [dw, dx, y].map((a) => Array.from(new Uint32Array(a.buffer)));
    });
    ["filter gradient", "input gradient", "forward"].forEach((what, i) => {
      assert.deepEqual(runs[1]![i], runs[0]![i], `${JSON.stringify(p)}: ${what} on 2 threads`);
      assert.deepEqual(runs[2]![i], runs[0]![i], `${JSON.stringify(p)}: ${what} on 4 threads`);
    });
  }
});
