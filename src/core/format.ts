/** NumPy-like printing of tensors, with shape and dtype. */
import type { DType, TypedArray } from "./dtype.js";
import type { Shape } from "./shape.js";

const EDGE = 3;
const SUMMARIZE_OVER = 1000;

function fmtNumber(v: number, dtype: DType, precision: number): string {
  if (dtype === "bool") return v ? "true" : "false";
  if (dtype !== "float32" && dtype !== "float64" && dtype !== "float16") return String(v);
  if (Number.isNaN(v)) return "nan";
  if (!Number.isFinite(v)) return v > 0 ? "inf" : "-inf";
  if (Number.isInteger(v) && Math.abs(v) < 1e16) return `${v}.`;
  const a = Math.abs(v);
  if (a !== 0 && (a < 1e-4 || a >= 1e16)) return v.toExponential(precision);
  const rounded = Number(v.toFixed(precision));
  return Number.isInteger(rounded) ? `${rounded}.` : String(rounded);
}

export function formatTensor(data: TypedArray, shape: Shape, dtype: DType): string {
  const size = data.length;
  const summarize = size > SUMMARIZE_OVER;
  const precision = dtype === "float64" ? 8 : 4;
  const cells: string[] = [];
  for (let i = 0; i < size; i++) cells.push(fmtNumber(data[i]!, dtype, precision));
  const width = cells.reduce((w, c) => Math.max(w, c.length), 0);
  const prefix = "Tensor(";
  const strides: number[] = [];
  let acc = 1;
  for (let i = shape.length - 1; i >= 0; i--) {
    strides[i] = acc;
    acc *= shape[i]!;
  }
  const render = (dim: number, offset: number, indent: string): string => {
    if (dim === shape.length) return cells[offset]!.padStart(width);
    const n = shape[dim]!;
    const idx: (number | null)[] = [];
    if (summarize && n > 2 * EDGE) {
      for (let i = 0; i < EDGE; i++) idx.push(i);
      idx.push(null);
      for (let i = n - EDGE; i < n; i++) idx.push(i);
    } else for (let i = 0; i < n; i++) idx.push(i);
    const parts = idx.map((i) => (i === null ? "..." : render(dim + 1, offset + i * strides[dim]!, indent + " ")));
    const sep = dim === shape.length - 1 ? ", " : "," + "\n".repeat(shape.length - dim - 1) + indent + " ";
    return `[${parts.join(sep)}]`;
  };
  const body = shape.length === 0 ? cells[0]! : render(0, 0, " ".repeat(prefix.length));
  return `${prefix}${body}, shape=[${shape.join(", ")}], dtype=${dtype})`;
}
