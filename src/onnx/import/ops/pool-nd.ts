/**
 * Pooling of any spatial rank, with dilations, and MaxPool's Indices output, lowered onto
 * registry ops: each of the kernel's taps is one strided slice of the (padded) input, the taps
 * are stacked, and max, sum or argmax reduce them. Every step is an ordinary differentiable op,
 * so an imported 3-D or dilated pool trains like the rest of the model. The registry's 2-D
 * maxPool2d/avgPool2d kernels stay the path for the 1-D and 2-D undilated pools.
 */
import type { Tensor } from "../../../core/tensor.js";
import { isFloat, type DType } from "../../../core/dtype.js";
import * as ops from "../../../ops/index.js";
import type { NodeContext } from "../node-context.js";

/** The window geometry of one pooling node over spatial sizes `size`. */
export interface PoolGeometry {
  kernel: number[];
  strides: number[];
  dilations: number[];
  /** Padding before each spatial axis (the node's). */
  begin: number[];
  /** Padding after each spatial axis as the node states it. */
  end: number[];
  /** Extra end padding that ceil_mode adds (never counted, even with count_include_pad). */
  ceilExtra: number[];
  /** Output size per spatial axis. */
  out: number[];
}

/** Explicit pads [begin..., end...] from auto_pad and pads, for spatial sizes and effective kernel sizes. */
export function resolvePads(n: NodeContext, size: number[], keff: number[], strides: number[]): number[] {
  const k = size.length;
  const autoPad = n.string("auto_pad", "NOTSET");
  if (autoPad === "NOTSET") {
    const pads = n.ints("pads", new Array(2 * k).fill(0));
    if (pads.length !== 2 * k) throw n.fail(`pads has ${pads.length} entries, expected ${2 * k}`);
    if (pads.some((p) => p < 0)) throw n.fail(`pads must be non-negative, got [${pads.join(", ")}]`);
    return pads;
  }
  if (autoPad === "VALID") return new Array(2 * k).fill(0);
  if (autoPad !== "SAME_UPPER" && autoPad !== "SAME_LOWER") throw n.fail(`unknown auto_pad ${JSON.stringify(autoPad)}`);
  const begin: number[] = [];
  const end: number[] = [];
  for (let i = 0; i < k; i++) {
    const out = Math.ceil(size[i]! / strides[i]!);
    const total = Math.max((out - 1) * strides[i]! + keff[i]! - size[i]!, 0);
    const small = Math.floor(total / 2);
    begin.push(autoPad === "SAME_UPPER" ? small : total - small);
    end.push(autoPad === "SAME_UPPER" ? total - small : small);
  }
  return [...begin, ...end];
}

/** Reads kernel_shape, strides, dilations, pads, auto_pad and ceil_mode for input x [N, C, ...spatial]. */
export function poolGeometry(n: NodeContext, x: Tensor): PoolGeometry {
  if (x.rank < 3) throw n.fail(`the input must be [N, C, ...spatial], got shape [${x.shape.join(", ")}]`);
  const size = x.shape.slice(2) as number[];
  const k = size.length;
  const kernel = n.ints("kernel_shape");
  if (kernel === undefined) throw n.fail("needs kernel_shape");
  if (kernel.length !== k) throw n.fail(`kernel_shape [${kernel.join(", ")}] does not match the input's spatial rank ${k}`);
  const strides = n.ints("strides", new Array(k).fill(1));
  const dilations = n.ints("dilations", new Array(k).fill(1));
  for (const [name, v] of [["kernel_shape", kernel], ["strides", strides], ["dilations", dilations]] as const) {
    if (v.length !== k || v.some((d) => !Number.isInteger(d) || d < 1)) throw n.fail(`${name} must hold ${k} positive integers, got [${v.join(", ")}]`);
  }
  const keff = kernel.map((kk, i) => (kk - 1) * dilations[i]! + 1);
  const pads = resolvePads(n, size, keff, strides);
  const begin = pads.slice(0, k);
  const end = pads.slice(k);
  const ceil = n.int("ceil_mode", 0) !== 0;
  const out: number[] = [];
  const ceilExtra: number[] = [];
  for (let i = 0; i < k; i++) {
    const padded = size[i]! + begin[i]! + end[i]!;
    if (padded < keff[i]!) throw n.fail(`the window (${keff[i]} with dilation) is larger than the padded input (${padded}) on spatial axis ${i}`);
    let o = (ceil ? Math.ceil : Math.floor)((padded - keff[i]!) / strides[i]!) + 1;
    // ceil_mode: a window must start inside the input or its begin padding.
    if (ceil && (o - 1) * strides[i]! >= size[i]! + begin[i]!) o--;
    out.push(o);
    ceilExtra.push(Math.max(0, (o - 1) * strides[i]! + keff[i]! - padded));
  }
  n.checkShape([x.shape[0]!, x.shape[1]!, ...out]);
  return { kernel, strides, dilations, begin, end, ceilExtra, out };
}

/** Every kernel offset (row-major over the spatial axes). */
function offsets(kernel: number[]): number[][] {
  let all: number[][] = [[]];
  for (const k of kernel) all = all.flatMap((o) => Array.from({ length: k }, (_, j) => [...o, j]));
  return all;
}

/** The smallest value of a dtype (what padded positions hold for max pooling). */
function lowest(dtype: DType): number {
  if (isFloat(dtype)) return -Infinity;
  const lows: Partial<Record<DType, number>> = { int8: -128, int16: -32768, int32: -(2 ** 31), int64: -(2 ** 53), uint8: 0, uint16: 0, uint32: 0, uint64: 0 };
  return lows[dtype] ?? -Infinity;
}

/** The taps [K, N, C, ...out]: x padded with `fill`, one strided slice per kernel offset. */
function taps(x: Tensor, g: PoolGeometry, fill: number): Tensor {
  const k = g.kernel.length;
  const padded = ops.pad(x, [[0, 0], [0, 0], ...g.begin.map((b, i) => [b, g.end[i]! + g.ceilExtra[i]!] as [number, number])], fill);
  const slices = offsets(g.kernel).map((off) => {
    const start = off.map((o, i) => o * g.dilations[i]!);
    return ops.slice(
      padded,
      [0, 0, ...start],
      [x.shape[0]!, x.shape[1]!, ...start.map((s, i) => s + (g.out[i]! - 1) * g.strides[i]! + 1)],
      [1, 1, ...new Array<number>(k).fill(0).map((_, i) => g.strides[i]!)],
    );
  });
  return ops.stack(slices, 0);
}

/**
 * For each tap and output position, the input position it reads on each spatial axis (or -1
 * for padding): per-axis tables [K][axis][out_i].
 */
function tapPositions(g: PoolGeometry, size: number[]): number[][][] {
  return offsets(g.kernel).map((off) =>
    off.map((o, i) => Array.from({ length: g.out[i]! }, (_, p) => {
      const pos = p * g.strides[i]! - g.begin[i]! + o * g.dilations[i]!;
      return pos >= 0 && pos < size[i]! ? pos : -1;
    })),
  );
}

/** Max pooling of any spatial rank (with dilations): the largest tap. */
export function maxPoolNd(x: Tensor, g: PoolGeometry): Tensor {
  return ops.max(taps(x, g, lowest(x.dtype)), 0);
}

/**
 * MaxPool's Indices: the flat index into x (row-major, or with storage_order 1 the spatial axes
 * column-major) of each window's first largest element.
 */
export function maxPoolIndices(x: Tensor, g: PoolGeometry, columnMajor: boolean): Tensor {
  const size = x.shape.slice(2) as number[];
  const k = size.length;
  const spatial = size.reduce((a, b) => a * b, 1);
  // Place value of each spatial axis in the flat index.
  const place = size.map((_, i) => (columnMajor ? size.slice(0, i) : size.slice(i + 1)).reduce((a, b) => a * b, 1));
  const positions = tapPositions(g, size);
  const outCount = g.out.reduce((a, b) => a * b, 1);
  const coords = (p: number): number[] => {
    const c: number[] = new Array<number>(k);
    for (let i = k - 1; i >= 0; i--) {
      c[i] = p % g.out[i]!;
      p = Math.floor(p / g.out[i]!);
    }
    return c;
  };
  // A padded tap takes the index of the window's first real tap: argmax only lands on a padded
  // tap when every earlier tap is padding and the maximum is the fill value, which the first
  // real tap then also holds.
  const table: number[] = new Array<number>(positions.length * outCount);
  for (let p = 0; p < outCount; p++) {
    const c = coords(p);
    const flat = positions.map((axes) => {
      let f = 0;
      for (let i = 0; i < k; i++) {
        const pos = axes[i]![c[i]!]!;
        if (pos < 0) return -1;
        f += pos * place[i]!;
      }
      return f;
    });
    const firstReal = flat.find((f) => f >= 0) ?? 0;
    flat.forEach((f, t) => (table[t * outCount + p] = f >= 0 ? f : firstReal));
  }
  const [N, C] = x.shape as [number, number];
  const argmax = ops.argMax(taps(x, g, lowest(x.dtype)), 0, true); // [1, N, C, ...out]
  const spatialIndex = ops.broadcastTo(ops.tensor(table, "int64", [positions.length, 1, 1, ...g.out]), [positions.length, N, C, ...g.out]);
  const chosen = ops.squeeze(ops.gatherElements(spatialIndex, ops.cast(argmax, "int64"), 0), 0);
  const base = ops.tensor(Array.from({ length: N * C }, (_, i) => i * spatial), "int64", [N, C, ...new Array<number>(k).fill(1)]);
  return ops.add(chosen, base);
}

/** How many taps of each window count towards an average: [1, 1, ...out] (a product over axes). */
function tapCounts(g: PoolGeometry, size: number[], includePad: boolean, dtype: DType): Tensor {
  const perAxis = size.map((s, i) =>
    Array.from({ length: g.out[i]! }, (_, p) => {
      let count = 0;
      for (let j = 0; j < g.kernel[i]!; j++) {
        const pos = p * g.strides[i]! - g.begin[i]! + j * g.dilations[i]!;
        const inside = includePad ? pos >= -g.begin[i]! && pos < s + g.end[i]! : pos >= 0 && pos < s;
        if (inside) count++;
      }
      return count;
    }),
  );
  let counts: number[] = [1];
  for (const axis of perAxis) counts = counts.flatMap((c) => axis.map((a) => c * a));
  return ops.tensor(counts, dtype, [1, 1, ...g.out]);
}

/** Average pooling of any spatial rank (with dilations): the sum of the taps over their count. */
export function avgPoolNd(x: Tensor, g: PoolGeometry, includePad: boolean): Tensor {
  return ops.div(ops.sum(taps(x, g, 0), 0), tapCounts(g, x.shape.slice(2) as number[], includePad, x.dtype));
}

/** Lp pooling of any spatial rank (with dilations): (sum |x|^p)^(1/p) over each window (padding adds 0). */
export function lpPoolNd(x: Tensor, g: PoolGeometry, p: number): Tensor {
  return ops.pow(ops.sum(taps(ops.pow(ops.abs(x), p), g, 0), 0), 1 / p);
}

/**
 * Col2Im's sum of blocks, the adjoint of the taps above: `cols` [N, C, K, ...out] holds, for each
 * of the K block offsets (row-major), the values each window contributes there; each is spread
 * to positions o * stride + offset * dilation of the padded image (zeros between, for the
 * stride), the K spreads add up, and the padding is cropped. Slices, pads and adds only, so it
 * differentiates like them.
 */
export function sumBlocks(cols: Tensor, image: number[], block: number[], strides: number[], dilations: number[], begin: number[], end: number[]): Tensor {
  const k = image.length;
  const [N, C] = cols.shape as [number, number];
  const out = cols.shape.slice(3) as number[];
  const padded = image.map((s, i) => s + begin[i]! + end[i]!);
  let sum: Tensor | null = null;
  offsets(block).forEach((off, t) => {
    let y = ops.squeeze(ops.slice(cols, [0, 0, t, ...out.map(() => 0)], [N, C, t + 1, ...out]), 2);
    for (let i = 0; i < k; i++) {
      const axis = i + 2;
      const s = strides[i]!;
      if (s > 1 && out[i]! > 1) {
        // interleave s - 1 zeros after each entry, then drop the trailing ones
        const shape = y.shape as number[];
        const spread = ops.pad(ops.expandDims(y, axis + 1), [...shape, 1].map((_, d): [number, number] => (d === axis + 1 ? [0, s - 1] : [0, 0])));
        y = ops.reshape(spread, shape.map((d, j) => (j === axis ? d * s : d)));
        y = ops.slice(y, shape.map(() => 0), shape.map((d, j) => (j === axis ? (out[i]! - 1) * s + 1 : d)));
      }
      const before = off[i]! * dilations[i]!;
      const after = padded[i]! - before - y.shape[axis]!;
      y = ops.pad(y, y.shape.map((_, d) => (d === axis ? [before, after] : [0, 0]) as [number, number]));
    }
    sum = sum === null ? y : ops.add(sum, y);
  });
  return ops.slice(sum!, [0, 0, ...begin], [N, C, ...image.map((s, i) => begin[i]! + s)]);
}
