/**
 * Fused float32 elementwise loops in WebAssembly SIMD for the compiled executor: one module per
 * compiled graph, one exported function per loop, each working on the graph's arena (the
 * memory its WebAssembly products use) at addresses fixed when the graph is compiled.
 *
 * Results are bit-identical to the eager kernels (and to the generated JavaScript loops of
 * exec/loops.ts), which evaluate the registry templates in float64 and round every stored or
 * reused value to float32:
 * - add, sub, mul, div, sqrt, square, reciprocal: a float64 result of float32 operands
 *   rounded to float32 is the correctly rounded float32 result, which the f32x4 instruction
 *   computes;
 * - neg, abs, maximum, minimum, relu: exact, written with selects so that signed zeros and
 *   NaNs come out as the templates give them (Math.max-style instructions treat -0 and +0
 *   differently from `a >= b ? a : b`);
 * - tanh: the float32 rational (backends/cpu/tanh-f32.ts) in float64x2 lanes, the same
 *   operations in the same order, then rounded; past its range the same constants.
 * Lanes are independent, so the last elements of a row (fewer than four) run the same code on
 * splatted operands and store lane 0.
 */
import { broadcastStrides } from "../core/shape.js";
import { collapse } from "./loops.js";
import { TANH_EDGE, TANH_P, TANH_Q, TANH_RANGE } from "../ops/tanh-f32.js";
import {
  brIf, end, f32store, get, i32add, i32c, i32ltS, I32, loop, moduleBytes, set, simd, splatLoad, V128, v128load,
  v128store, SIMD_OP, WA, type WasmMemory, type WasmModule,
} from "./wasm-bytes.js";

/** One fused loop: every input, step and output is float32. Addresses are byte offsets. */
export interface SimdLoop {
  name: string;
  outShape: readonly number[];
  inputs: { at: number; shape: readonly number[] }[];
  /** Operands: index < inputs.length is an input, otherwise step `index - inputs.length`. */
  steps: { op: string; args: number[] }[];
  outputs: { at: number; value: number }[];
}

const OP = SIMD_OP;
const op = (code: number) => simd(code);

function v128const(bytes: Uint8Array): number[] {
  return simd(OP.v128const, ...bytes);
}
const f32x4c = (v: number) => v128const(new Uint8Array(new Float32Array([v, v, v, v]).buffer));
const f64x2c = (v: number) => v128const(new Uint8Array(new Float64Array([v, v]).buffer));
const i32x4c = (v: number) => v128const(new Uint8Array(new Int32Array([v, v, v, v]).buffer));
const shuffle = (lanes: number[]) => simd(OP.shuffle, ...lanes);
/** bytes 8..15 of the first operand, twice: the upper two float32 lanes moved down */
const HIGH_HALF = shuffle([8, 9, 10, 11, 12, 13, 14, 15, 8, 9, 10, 11, 12, 13, 14, 15]);
/** the low 8 bytes of each operand: [a0, a1, b0, b1] */
const LOW_HALVES = shuffle([0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23]);


/** Registry ops with a SIMD form. */
const SIMD_OPS = new Set(["add", "sub", "mul", "div", "neg", "abs", "sqrt", "square", "reciprocal", "maximum", "minimum", "relu", "tanh"]);

export function simdSupported(opName: string): boolean {
  return SIMD_OPS.has(opName);
}

/** Whether a loop over `outShape` with these input shapes has the form the generator handles. */
export function simdLoopFits(outShape: readonly number[], inputShapes: readonly (readonly number[])[]): boolean {
  const { strides } = collapse(outShape, inputShapes.map((s) => broadcastStrides(s, outShape)));
  return strides.every((s) => s[s.length - 1] === 0 || s[s.length - 1] === 1);
}

/** Scratch v128 locals of the tanh code. */
const TANH_TEMPS = 5;

/**
 * Code leaving the rational P(x)/Q(x) of the template on the stack, for the float64x2 on top of
 * the stack (`a`, `y2`, `num`, `den` are scratch locals).
 */
function tanhRational(a: number, y2: number, num: number, den: number): number[] {
  const code = [...set(a), ...get(a), ...get(a), ...op(OP.f64x2mul), ...set(y2)];
  // p = y2 * P0 + P1; p = y2 * p + P2; ... (the template's order; x * y == y * x exactly)
  code.push(...get(y2), ...f64x2c(TANH_P[0]!), ...op(OP.f64x2mul), ...f64x2c(TANH_P[1]!), ...op(OP.f64x2add));
  for (let i = 2; i < TANH_P.length; i++) code.push(...get(y2), ...op(OP.f64x2mul), ...f64x2c(TANH_P[i]!), ...op(OP.f64x2add));
  code.push(...get(a), ...op(OP.f64x2mul), ...set(num));
  code.push(...get(y2), ...f64x2c(TANH_Q[0]!), ...op(OP.f64x2mul), ...f64x2c(TANH_Q[1]!), ...op(OP.f64x2add));
  for (let i = 2; i < TANH_Q.length; i++) code.push(...get(y2), ...op(OP.f64x2mul), ...f64x2c(TANH_Q[i]!), ...op(OP.f64x2add));
  code.push(...set(den), ...get(num), ...get(den), ...op(OP.f64x2div));
  return code;
}

/** tanh of the f32x4 in local `x`, left on the stack; t[0..TANH_TEMPS) are scratch locals. */
function tanhCode(x: number, t: number[]): number[] {
  const [a, y2, num, den, r] = t as [number, number, number, number, number];
  const code: number[] = [];
  // the rational on both halves in float64, rounded to float32
  code.push(...get(x), ...op(OP.promote), ...tanhRational(a, y2, num, den), ...op(OP.demote), ...set(r));
  code.push(...get(x), ...get(x), ...HIGH_HALF, ...op(OP.promote), ...tanhRational(a, y2, num, den), ...op(OP.demote));
  code.push(...set(a), ...get(r), ...get(a), ...LOW_HALVES, ...set(r));
  // outside the range: +-TANH_EDGE below 9 in magnitude, +-1 from 9 on, NaN stays
  code.push(...f32x4c(Math.fround(TANH_EDGE)), ...f32x4c(1), ...get(x), ...op(OP.f32x4abs), ...f32x4c(9), ...op(OP.f32x4lt), ...op(OP.bitselect));
  code.push(...set(a), ...get(x), ...get(a), ...i32x4c(-0x80000000), ...op(OP.bitselect), ...set(a)); // the sign of x
  code.push(...get(x), ...get(a), ...get(x), ...get(x), ...op(OP.f32x4ne), ...op(OP.bitselect), ...set(a)); // NaN stays
  code.push(...get(r), ...get(a));
  code.push(...get(x), ...f32x4c(-TANH_RANGE), ...op(OP.f32x4gt), ...get(x), ...f32x4c(TANH_RANGE), ...op(OP.f32x4lt), ...op(OP.and));
  code.push(...op(OP.bitselect));
  return code;
}

/** Code leaving step `s`'s value on the stack; `arg(j)` pushes its j-th operand. */
function stepCode(opName: string, arg: (j: number) => number[], argLocal: (j: number) => number, temps: number[]): number[] {
  const binary = (code: number) => [...arg(0), ...arg(1), ...op(code)];
  switch (opName) {
    case "add":
      return binary(OP.f32x4add);
    case "sub":
      return binary(OP.f32x4sub);
    case "mul":
      return binary(OP.f32x4mul);
    case "div":
      return binary(OP.f32x4div);
    case "neg":
      return [...arg(0), ...op(OP.f32x4neg)];
    case "abs":
      return [...arg(0), ...op(OP.f32x4abs)];
    case "sqrt":
      return [...arg(0), ...op(OP.f32x4sqrt)];
    case "square":
      return [...arg(0), ...arg(0), ...op(OP.f32x4mul)];
    case "reciprocal":
      return [...f32x4c(1), ...arg(0), ...op(OP.f32x4div)];
    case "maximum":
    case "minimum": {
      // (a !== a || b !== b) ? NaN : (a >= b ? a : b): a where a >= b (<= for minimum) or a is NaN
      const cmp = opName === "maximum" ? OP.f32x4ge : OP.f32x4le;
      return [...arg(0), ...arg(1), ...arg(0), ...arg(1), ...op(cmp), ...arg(0), ...arg(0), ...op(OP.f32x4ne), ...op(OP.or), ...op(OP.bitselect)];
    }
    case "relu":
      return [...arg(0), ...f32x4c(0), ...arg(0), ...f32x4c(0), ...op(OP.f32x4gt), ...op(OP.bitselect)];
    case "tanh":
      return tanhCode(argLocal(0), temps);
    default:
      throw new Error(`internal: no SIMD form for ${opName}`);
  }
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
  // v128 locals: inputs, steps, scratch
  let nv = n32;
  const xLocal = l.inputs.map(() => nv++);
  const sLocal = l.steps.map(() => nv++);
  const temps = Array.from({ length: TANH_TEMPS }, () => nv++);
  const valueLocal = (i: number) => (i < numIn ? xLocal[i]! : sLocal[i - numIn]!);
  const innerStride = strides.map((s) => s[r - 1]!);

  const compute = (): number[] => {
    const code: number[] = [];
    l.steps.forEach((s, k) => {
      code.push(...stepCode(s.op, (j) => get(valueLocal(s.args[j]!)), (j) => valueLocal(s.args[j]!), temps), ...set(sLocal[k]!));
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
