/**
 * The CPU's eager elementwise kernels, rendered from an op's expression (core/expr.ts) as
 * JavaScript (js-expr.ts). Each (expression, arity) compiles once into specialized loops for:
 * all operands contiguous and same-shaped, scalar operands, and general NumPy broadcasting
 * (strided, 0 strides on broadcast dimensions).
 */
import { allocStorage, type TypedArray } from "../../core/dtype.js";
import { bindAttrs, hasAttrs, type ElementwiseForm, type Expr } from "../../core/expr.js";
import { broadcastStrides, shapesEqual, sizeOf, type Shape } from "../../core/shape.js";
import type { CpuKernel } from "./kernel.js";
import { jsSource, SCALAR_PRELUDE, storeConversion } from "./js-expr.js";

const NAMES = ["a", "b", "c", "d", "e", "f"];

export type ElementwiseLoop = (inputs: TypedArray[], shapes: Shape[], out: TypedArray, outShape: Shape) => void;

const cache = new Map<string, ElementwiseLoop>();

/** The loop computing the JavaScript expression `expr` over operands named a, b, c, ... */
export function elementwiseLoop(expr: string, arity: number): ElementwiseLoop {
  const key = arity + "|" + expr;
  let fn = cache.get(key);
  if (fn === undefined) {
    fn = compile(expr, arity);
    cache.set(key, fn);
  }
  return fn;
}

/**
 * The loop computing expression `e` (attributes bound) of `arity` operands; `int64Store`: each
 * value converted as a store into int64 storage (a Float64Array, which converts nothing itself).
 */
export function expressionLoop(e: Expr, arity: number, int64Store = false): ElementwiseLoop {
  const src = jsSource(e, NAMES.slice(0, arity));
  return elementwiseLoop(int64Store ? storeConversion("int64", src) : src, arity);
}

/**
 * The CPU kernel of an elementwise op: its expression for the output's dtype (attributes bound
 * per node), one loop over the broadcast output shape.
 */
export function elementwiseKernel(form: ElementwiseForm): CpuKernel<Readonly<Record<string, unknown>> | undefined> {
  // The loops of the expression and of the float32 form, made on first use; per attribute
  // values when the expression reads attributes.
  let exprLoop: ElementwiseLoop | null = null;
  let f32Loop: ElementwiseLoop | null = null;
  let int64Loop: ElementwiseLoop | null = null;
  const bound = new Map<string, ElementwiseLoop>();
  const loopFor = (e: Expr, arity: number, attrs: Readonly<Record<string, unknown>> | undefined, int64: boolean): ElementwiseLoop => {
    if (!hasAttrs(e)) return expressionLoop(e, arity, int64);
    const key = `${e === form.f32 ? "f32" : int64 ? "i64" : ""}${JSON.stringify(attrs ?? {})}`;
    let loop = bound.get(key);
    if (loop === undefined) {
      loop = expressionLoop(bindAttrs(e, attrs), arity, int64);
      if (bound.size < 256) bound.set(key, loop);
    }
    return loop;
  };
  const attrFree = !hasAttrs(form.expr) && (form.f32 === undefined || !hasAttrs(form.f32));
  const f32Form = form.f32;
  return (inputs, attrs, outs) => {
    const o = outs[0]!;
    const out = allocStorage(o.dtype, sizeOf(o.shape));
    const arity = inputs.length;
    const f32 = f32Form !== undefined && o.dtype === "float32";
    // (int64 and uint64 storage is a Float64Array: their values are converted as stores, js-expr.ts)
    const int64 = o.dtype === "int64" || o.dtype === "uint64";
    let loop = f32 ? f32Loop : int64 ? int64Loop : exprLoop;
    if (loop === null) {
      loop = loopFor(f32 ? f32Form! : form.expr, arity, attrs, int64);
      if (attrFree) {
        if (f32) f32Loop = loop;
        else if (int64) int64Loop = loop;
        else exprLoop = loop;
      }
    }
    const datas = new Array<TypedArray>(arity);
    const shapes = new Array<Shape>(arity);
    for (let i = 0; i < arity; i++) {
      datas[i] = inputs[i]!.concrete();
      shapes[i] = inputs[i]!.shape;
    }
    loop(datas, shapes, out, o.shape);
    return [out];
  };
}

function compile(expr: string, arity: number): ElementwiseLoop {
  const names = NAMES.slice(0, arity);
  const ins = names.map((n) => `const ${n}$ = inputs[${names.indexOf(n)}];`).join("\n");
  // Contiguous case: every operand either has the output's size or is a scalar.
  const contigReads = names.map((n, i) => `const ${n} = scalar${i} ? ${n}$[0] : ${n}$[i];`).join(" ");
  const stridedReads = names.map((n, i) => `const ${n} = ${n}$[off${i} + j * in${i}];`).join(" ");
  const src = `
${SCALAR_PRELUDE}
${ins}
const n = out.length;
if (!general) {
  ${names.map((n, i) => `const scalar${i} = ${n}$.length === 1 && n !== 1;`).join("\n  ")}
  for (let i = 0; i < n; i++) { ${contigReads} out[i] = ${expr}; }
  return;
}
const rank = outShape.length;
const inner = outShape[rank - 1];
if (n === 0) return;
${names.map((_, i) => `const s${i} = strides[${i}]; const in${i} = s${i}[rank - 1]; let off${i} = 0;`).join("\n")}
const counters = new Int32Array(rank);
let o = 0;
const outer = n / inner;
for (let k = 0; k < outer; k++) {
  for (let j = 0; j < inner; j++) { ${stridedReads} out[o++] = ${expr}; }
  for (let d = rank - 2; d >= 0; d--) {
    counters[d]++;
    ${names.map((_, i) => `off${i} += s${i}[d];`).join(" ")}
    if (counters[d] < outShape[d]) break;
    ${names.map((_, i) => `off${i} -= s${i}[d] * outShape[d];`).join(" ")}
    counters[d] = 0;
  }
}`;
  const body = new Function("inputs", "out", "outShape", "general", "strides", src) as (
    inputs: TypedArray[],
    out: TypedArray,
    outShape: Shape,
    general: boolean,
    strides: number[][] | null,
  ) => void;
  return (inputs, shapes, out, outShape) => {
    let general = false;
    for (let i = 0; i < shapes.length; i++) {
      const s = shapes[i]!;
      if (!(shapesEqual(s, outShape) || sizeOf(s) === 1)) {
        general = true;
        break;
      }
    }
    if (!general || outShape.length === 0) return body(inputs, out, outShape, false, null);
    const strides = shapes.map((s) => broadcastStrides(s, outShape));
    body(inputs, out, outShape, true, strides);
  };
}
