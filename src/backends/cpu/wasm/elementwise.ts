/**
 * Fused float32 elementwise loops in WebAssembly SIMD for the compiled executor: one module per
 * compiled graph, one exported function per loop, each working on the graph's arena (the
 * memory its WebAssembly products use) at addresses fixed when the graph is compiled.
 *
 * Each step is an elementwise expression (core/expr.ts) rendered by simd-expr.ts, which gives
 * exactly the float32 results of the JavaScript rendering (the eager kernels and the generated
 * JavaScript loops of js-loops.ts), special values and signed zeros included; expressions it
 * cannot render keep the JavaScript loop (simdRenderable). Lanes are independent, so the last
 * elements of a row (fewer than four) run the same code on splatted operands and store lane 0.
 */
import type { Expr } from "../../../core/expr.js";
import { broadcastStrides } from "../../../core/shape.js";
import { collapse } from "../js-loops.js";
import { simdCode } from "./simd-expr.js";
import {
  brIf, end, f32store, get, i32add, i32c, i32ltS, I32, loop, moduleBytes, set, simd, splatLoad, V128, v128load,
  v128store, SIMD_OP, WA, type WasmMemory, type WasmModule,
} from "./bytes.js";

export { simdRenderable } from "./simd-expr.js";

/** One fused loop: every input, step and output is float32. Addresses are byte offsets. */
export interface SimdLoop {
  name: string;
  outShape: readonly number[];
  inputs: { at: number; shape: readonly number[] }[];
  /** Operands: index < inputs.length is an input, otherwise step `index - inputs.length`. */
  steps: { expr: Expr; args: number[] }[];
  outputs: { at: number; value: number }[];
}

const OP = SIMD_OP;

/** Whether a loop over `outShape` with these input shapes has the form the generator handles. */
export function simdLoopFits(outShape: readonly number[], inputShapes: readonly (readonly number[])[]): boolean {
  const { strides } = collapse(outShape, inputShapes.map((s) => broadcastStrides(s, outShape)));
  return strides.every((s) => s[s.length - 1] === 0 || s[s.length - 1] === 1);
}

/** The body of one loop's function, and its locals. */
function loopFunction(l: SimdLoop): { body: number[]; locals: [number, number][] } {
  const ins = l.inputs.map((x) => broadcastStrides(x.shape, l.outShape));
  const { dims, strides } = collapse(l.outShape, ins);
  const r = dims.length;
  const numIn = l.inputs.length;
  // i32 locals: level counters, per-input pointers per level, output pointers, the column
  let n32 = 0;
  const counter = dims.map(() => n32++);
  const ptr = l.inputs.map(() => dims.map(() => n32++));
  const outPtr = l.outputs.map(() => n32++);
  const col = n32++;
  // v128 locals: inputs, steps, then scratch locals of the steps' code
  let nv = n32;
  const xLocal = l.inputs.map(() => nv++);
  const sLocal = l.steps.map(() => nv++);
  const valueLocal = (i: number) => (i < numIn ? xLocal[i]! : sLocal[i - numIn]!);
  const newLocal = () => nv++;
  const innerStride = strides.map((s) => s[r - 1]!);

  const compute = (): number[] => {
    const code: number[] = [];
    l.steps.forEach((s, k) => {
      code.push(...simdCode(s.expr, (j) => valueLocal(s.args[j]!), newLocal), ...set(sLocal[k]!));
    });
    return code;
  };
  /** One group of `width` (4 or 1) elements: loads, steps, stores, pointer advances. */
  const group = (width: 4 | 1): number[] => {
    const code: number[] = [];
    l.inputs.forEach((_, i) => {
      if (innerStride[i] === 0) return; // loaded once per row
      code.push(...get(ptr[i]![r - 1]!), ...(width === 4 ? v128load() : splatLoad()), ...set(xLocal[i]!));
    });
    code.push(...compute());
    l.outputs.forEach((o, k) => {
      code.push(...get(outPtr[k]!), ...get(valueLocal(o.value)));
      code.push(...(width === 4 ? v128store() : [...simd(OP.extractLaneF32, 0), ...f32store()]));
      code.push(...get(outPtr[k]!), ...i32c(width * 4), ...i32add, ...set(outPtr[k]!));
    });
    l.inputs.forEach((_, i) => {
      if (innerStride[i] === 0) return;
      code.push(...get(ptr[i]![r - 1]!), ...i32c(width * 4), ...i32add, ...set(ptr[i]![r - 1]!));
    });
    return code;
  };
  const enter = (d: number): number[] => {
    const code: number[] = [];
    l.inputs.forEach((x, i) => code.push(...(d === 0 ? i32c(x.at) : get(ptr[i]![d - 1]!)), ...set(ptr[i]![d]!)));
    return code;
  };
  const inner = (): number[] => {
    const n = dims[r - 1]!;
    const code = enter(r - 1);
    l.inputs.forEach((_, i) => {
      if (innerStride[i] === 0) code.push(...get(ptr[i]![r - 1]!), ...splatLoad(), ...set(xLocal[i]!));
    });
    const vecEnd = n - (n % 4);
    if (vecEnd > 0) {
      code.push(...i32c(0), ...set(col), ...loop, ...group(4));
      code.push(...get(col), ...i32c(4), ...i32add, ...set(col), ...get(col), ...i32c(vecEnd), ...i32ltS, ...brIf(0), ...end);
    }
    for (let t = vecEnd; t < n; t++) code.push(...group(1));
    return code;
  };
  const level = (d: number): number[] => {
    if (d === r - 1) return inner();
    const code = [...enter(d), ...i32c(0), ...set(counter[d]!), ...loop, ...level(d + 1)];
    l.inputs.forEach((_, i) => {
      const st = strides[i]![d]!;
      if (st !== 0) code.push(...get(ptr[i]![d]!), ...i32c(st * 4), ...i32add, ...set(ptr[i]![d]!));
    });
    code.push(...get(counter[d]!), ...i32c(1), ...i32add, ...set(counter[d]!), ...get(counter[d]!), ...i32c(dims[d]!), ...i32ltS, ...brIf(0), ...end);
    return code;
  };
  const body: number[] = [];
  l.outputs.forEach((o, k) => body.push(...i32c(o.at), ...set(outPtr[k]!)));
  body.push(...level(0));
  return { body, locals: [[n32, I32], [nv - n32, V128]] };
}

/** A module exporting one function per loop (by its name), importing the arena memory. */
export function elementwiseModule(loops: SimdLoop[]): WasmModule {
  if (!WA) throw new Error("WebAssembly is not available");
  return new WA.Module(moduleBytes(loops.map((l) => ({ name: l.name, params: [], ...loopFunction(l) }))));
}

/** The module's loop functions working on `memory`. */
export function elementwiseInstance(mod: WasmModule, memory: WasmMemory): Record<string, () => void> {
  return new WA!.Instance(mod, { env: { memory } }).exports as Record<string, () => void>;
}
