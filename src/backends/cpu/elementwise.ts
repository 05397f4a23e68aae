/**
 * Loop generation for elementwise ops from their scalar templates (ops/registry.ts
 * ElementwiseTemplate). Each (expression, arity) compiles once into specialized loops for:
 * all operands contiguous and same-shaped, scalar operands, and general NumPy broadcasting
 * (strided, 0 strides on broadcast dimensions). The staging executor reuses the templates to
 * fuse chains into single loops.
 */
import type { TypedArray } from "../../core/dtype.js";
import { SCALAR_PRELUDE } from "./scalar-math.js";
import { broadcastStrides, shapesEqual, sizeOf, type Shape } from "../../core/shape.js";

const NAMES = ["a", "b", "c"];

export type ElementwiseLoop = (inputs: TypedArray[], shapes: Shape[], out: TypedArray, outShape: Shape) => void;

const cache = new Map<string, ElementwiseLoop>();

export function elementwiseLoop(expr: string, arity: number): ElementwiseLoop {
  const key = arity + "|" + expr;
  let fn = cache.get(key);
  if (fn === undefined) {
    fn = compile(expr, arity);
    cache.set(key, fn);
  }
  return fn;
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
