/**
 * WebGPU entries of elementwise work that is not one op's expression: a group of steps (the
 * fusedElementwise op) as one WGSL kernel; the bitwise ops and bitcast (whose CPU kernels are
 * JavaScript source, for BigInt) as expressions of WGSL-only functions (wgsl/render.ts). (An op declared with an expression needs no entry: the
 * backend renders it, backend.ts elementwiseKernel.)
 */
import type { DType } from "../../../core/dtype.js";
import { DtypeError } from "../../../core/errors.js";
import * as E from "../../../core/expr.js";
import type { ElementwiseGroup, ElementwiseStep, Expr, ScalarFn } from "../../../core/expr.js";
import type { TensorType } from "../../../core/tensor-type.js";
import { elementwise } from "../kernels/elementwise.js";
import type { WebGpuEntry } from "./types.js";

/** The entry of an op computing the elementwise group `group(attrs, inputs)` describes. */
export function groupGpu<A>(op: string, group: (attrs: A, inputs: readonly TensorType[]) => ElementwiseGroup | null): WebGpuEntry {
  return {
    op,
    gpu: (dev, inputs, attrs: A, outs) => {
      const g = group(attrs, inputs);
      if (!g) throw new Error(`${op}: its attributes describe no elementwise group for these inputs`);
      return elementwise(dev, inputs, g.steps, g.outputs, outs[0]!.shape, op);
    },
  };
}

/** A bitwise op's attributes (ops/bitwise.ts): 64-bit operands, unsigned ones. */
interface BitAttrs {
  wide: number;
  unsigned: number;
}

/** The WGSL-only functions of the bitwise ops (wgsl/render.ts renders them on i32 operands). */
type BitFn = "bitAnd" | "bitOr" | "bitXor" | "bitNot" | "shl" | "shr" | "shru";

const bitExpr = (fn: BitFn, arity: number): Expr => ({ kind: "apply", fn: fn as ScalarFn, args: arity === 1 ? [E.a] : [E.a, E.b] });

/**
 * The entry of a bitwise op: its operation as one elementwise WGSL kernel (with broadcasting) on
 * 32-bit words, stored as the output dtype stores (the low 8 bits for uint8), as the CPU's
 * JavaScript 32-bit operators and typed-array store compute it. 64-bit operands have no GPU
 * storage (storage.ts hostDtype): the backend raises its DtypeError before this runs.
 */
function bitwiseGpu(op: string, fn: (a: BitAttrs) => BitFn, arity: number): WebGpuEntry {
  return {
    op,
    gpu: (dev, inputs, attrs: BitAttrs, outs) => {
      const o = outs[0]!;
      const f = fn(attrs);
      const step: ElementwiseStep = { expr: bitExpr(f, arity), args: inputs.map((_, i) => i), dtype: o.dtype };
      return elementwise(dev, inputs, [step], [0], o.shape, op, undefined, `${f}:${o.dtype}@${arity}`);
    },
  };
}

export const bitwiseGpuEntries = {
  bitwiseAnd: bitwiseGpu("bitwiseAnd", () => "bitAnd", 2),
  bitwiseOr: bitwiseGpu("bitwiseOr", () => "bitOr", 2),
  bitwiseXor: bitwiseGpu("bitwiseXor", () => "bitXor", 2),
  bitwiseNot: bitwiseGpu("bitwiseNot", () => "bitNot", 1),
  bitShiftLeft: bitwiseGpu("bitShiftLeft", () => "shl", 2),
  bitShiftRight: bitwiseGpu("bitShiftRight", (a) => (a.unsigned ? "shru" : "shr"), 2),
  /**
   * bitcast between float32 and int32 (the same 32-bit word); other pairs of GPU dtypes (uint8 and
   * bool: one byte each, stored as words) are refused; the host dtypes run on the host (wide).
   */
  bitcast: {
    op: "bitcast",
    wide: true,
    gpu: (dev, [x], a: { dtype: DType }, outs) => {
      const o = outs[0]!;
      const words = (d: DType) => d === "float32" || d === "int32";
      if (!(words(x!.dtype) && words(a.dtype))) {
        throw new DtypeError(`bitcast from ${x!.dtype} to ${a.dtype} has no WebGPU kernel (the webgpu device reinterprets float32 and int32 words); run it on the CPU (x.to("cpu"))`, "bitcast");
      }
      const step: ElementwiseStep = { expr: { kind: "apply", fn: "bitcastWord" as ScalarFn, args: [E.a] }, args: [0], dtype: o.dtype };
      return elementwise(dev, [x!], [step], [0], o.shape, "bitcast", undefined, `bitcast:${x!.dtype}:${o.dtype}`);
    },
  } satisfies WebGpuEntry,
};
