/**
 * The compiled executor's analysis of a graph specialized for concrete input types: each node's
 * output types (propagated by the ops' shape rules; a type known only at run time makes the
 * node and what depends on it dynamic), its strategy (how the generated code computes it, asked
 * of the op's declaration: view, elementwise expression or group, product, reduction, kernels),
 * which values escape the call, their live ranges, and the plan of buffers values share.
 */
import { config } from "../../core/config.js";
import { storageCtor, type DType, type TypedArray } from "../../core/dtype.js";
import { bindAttrs, formFor, type ElementwiseGroup, type ReductionForm } from "../../core/expr.js";
import { MAX_ELEMENTS, sizeOf } from "../../core/shape.js";
import type { Variable } from "../../core/variable.js";
import type { FunctionLibrary, Graph, Node, Value } from "../../graph/ir.js";
import { getOp, type OpDef, type TensorType } from "../../ops/registry.js";
import { assignVariableOp, callOp, condOp, readVariableOp, whileOp } from "../../ops/structural.js";
import { WASM_MIN_MNK } from "../../backends/cpu/matmul.js";
import { getWasmRuntime } from "../../backends/cpu/wasm-runtime.js";
import { gemmModule } from "../../backends/cpu/wasm/gemm.js";
import { nativeMatmulWins } from "../../backends/cpu/native.js";
import { simdLoopFits, simdRenderable } from "../../backends/cpu/wasm/elementwise.js";
import type { MatmulArith } from "../../backends/cpu/js-loops.js";
import { prepareForExecution } from "../prepare.js";
import { isStack, type CompiledGraph, type OutputDesc } from "./graph.js";

/**
 * Largest inline matmuls (m*n*k) by the arithmetic they reproduce; bigger ones call the kernel.
 * Measured: reproducing the float32 WebAssembly sgemm in JS costs ~2 ns per multiply-add (two
 * roundings each), so past ~1500 the kernel call (~3-4 us, copies included) is cheaper.
 */
const INLINE_SGEMM_MAX = config.inlineSgemmMax;
const INLINE_LOOP_MAX = 4096;
/**
 * Largest product (m*n*k) for the executor's WebAssembly gemm: past it the sgemm kernel's
 * threads win. Below it the executor's gemm wins on data kept in place (no copies, no packing:
 * measured 25-35% faster on 32 x 256 x 256 products in a loop), as long as B fits in L2.
 */
const WASM_GEMM_MAX = config.wasmGemmMax;
/** Largest B (k*n elements) for the executor's gemm: it streams all of B for every 4 rows. */
const WASM_GEMM_MAX_B = 262144;
/**
 * Smallest float32 elementwise loop (output elements) run as WebAssembly SIMD: below it the
 * call and any operand copies cost more than the generated JavaScript loop.
 */
const SIMD_MIN_ELEMENTS = config.simdMinElements;

/** The compiled graph for a callee or region called with these input types, or null (run it dynamically). */
export type Lookup = (graph: Graph, library: FunctionLibrary, types: readonly TensorType[]) => CompiledGraph | null;

/** What code generation needs: the prepared graph, each node's strategy, each value's facts, the buffers. */
export interface Plan {
  graph: Graph;
  library: FunctionLibrary;
  nodes: Node[];
  strategies: Strategy[];
  infos: Map<Value, ValueInfo>;
  outInfos: ValueInfo[];
  buffers: { dtype: DType; size: number }[];
}

/** How the generated code computes a node. */
export type Strategy =
  /** a view: the input's storage */
  | { kind: "alias" }
  /** a JavaScript loop computing an elementwise group (one op, or a fused chain) */
  | { kind: "loop"; group: ElementwiseGroup }
  | { kind: "matmul"; arith: MatmulArith; transA: boolean; transB: boolean }
  /**
   * a product by the executor's WebAssembly gemm; `ldb` is the row length of B and C in the
   * arena: n, or n rounded up to a multiple of 4 (B copied into a padded slot, C computed into
   * a padded scratch and compacted), so that no column is left to the gemm's scalar tail
   */
  | { kind: "wasmMatmul"; m: number; k: number; n: number; ldb: number; transA: boolean; transB: boolean }
  /** a WebAssembly SIMD loop computing an elementwise group in the arena */
  | { kind: "simd"; group: ElementwiseGroup }
  | { kind: "reduce"; form: ReductionForm; outer: number; red: number; inner: number }
  | { kind: "const"; data: TypedArray[] }
  | { kind: "kernel"; def: OpDef; escapesInputs: boolean }
  /**
   * a gather whose indices are consecutive (a range, plus a scalar offset known at run time):
   * a view of `rows` rows of `inner` elements of its input from row `start` (+ the offset),
   * when those lie in the input's `n` rows; the kernel otherwise (it raises the range error)
   */
  | { kind: "rowSlice"; def: OpDef; start: number; offset: ValueInfo | null; rows: number; inner: number; n: number }
  | { kind: "read" }
  | { kind: "assign" }
  | { kind: "callGraph"; callee: CompiledGraph }
  | { kind: "branch"; then: CompiledGraph; else: CompiledGraph }
  | { kind: "loopGraph"; cond: CompiledGraph; body: CompiledGraph }
  | { kind: "runtime" }
  | { kind: "dynamic" };

export interface ValueInfo {
  /** Concrete type, or null for a value only known at run time (a Tensor). */
  type: TensorType | null;
  /** Local name in the generated code. */
  name: string;
  /** Written by inline code into storage this function allocates. */
  inline: boolean;
  /** Leaves the function (must be fresh storage). */
  escapes: boolean;
  /** Planned buffer index (inline values that do not escape). */
  buffer: number;
  /** Node index of the definition (-1 for inputs) and of the last use (nodes.length for outputs). */
  def: number;
  lastUse: number;
  /** Values (inline, planned) whose storage this value may share. */
  roots: Set<ValueInfo>;
}

const isConcrete = (s: readonly number[]) => s.every((d) => d >= 0);


const compilable = (t: TensorType) => isConcrete(t.shape) || isStack(t);

/** The stack type a loop variable of type `before` becomes when an iteration changes only its row count (`after`), or null. */
function rowsGrown(before: TensorType, after: TensorType): TensorType | null {
  if (isStack(before) || before.shape.length === 0 || after.shape.length !== before.shape.length || after.shape[0] === before.shape[0]) return null;
  const stack = { dtype: before.dtype, shape: [-1, ...before.shape.slice(1)] };
  return isStack(stack) && typesEqual({ dtype: after.dtype, shape: after.shape.slice(1) }, { dtype: before.dtype, shape: before.shape.slice(1) }) ? stack : null;
}

export function typesEqual(a: TensorType, b: TensorType): boolean {
  return a.dtype === b.dtype && a.shape.length === b.shape.length && a.shape.every((d, i) => d === b.shape[i]);
}

/**
 * Plans the compiled code of `c`: each node's type (concrete, or known only at run time) and
 * strategy, which values escape, live ranges, and the buffer plan. Callees and regions are
 * compiled through `lookup` (recursively).
 */
export function analyze(c: CompiledGraph, lookup: Lookup): Plan {
  const { graph: g, library } = prepareForExecution(c.graph, c.library, c.inputTypes);
  const nodes = g.nodes;
  const infos = new Map<Value, ValueInfo>();
  const mk = (v: Value, type: TensorType | null, defIndex: number): ValueInfo => {
    const info: ValueInfo = { type, name: `${type ? "v" : "t"}${infos.size}`, inline: false, escapes: false, buffer: -1, def: defIndex, lastUse: defIndex, roots: new Set() };
    infos.set(v, info);
    return info;
  };
  g.inputs.forEach((v, i) => mk(v, c.inputTypes[i]!, -1));
  const strategies: Strategy[] = [];

  // 1. types and strategies
  nodes.forEach((node, k) => {
    const ins = node.inputs.map((v) => infos.get(v)!);
    const inTypes = ins.map((x) => x.type);
    const setOuts = (types: (TensorType | null)[]) => node.outputs.forEach((v, i) => mk(v, types[i] ?? null, k));
    const dynamic = () => {
      strategies.push({ kind: "dynamic" });
      setOuts(node.outputs.map(() => null));
    };
    if (inTypes.some((t) => t === null)) return dynamic();
    const types = inTypes as TensorType[];
    switch (node.op) {
      case readVariableOp.name: {
        const variable = node.attrs.variable as Variable;
        strategies.push({ kind: "read" });
        return setOuts([{ dtype: variable.dtype, shape: variable.shape }]);
      }
      case assignVariableOp.name:
        strategies.push({ kind: "assign" });
        return setOuts([]);
      case callOp.name: {
        const calleeGraph = library.get(node.attrs.callee as string);
        const callee = lookup(calleeGraph, library, types);
        if (!callee) return dynamic();
        strategies.push({ kind: "callGraph", callee });
        return setOuts(allOrNothing(callOutputs(callee, types)));
      }
      case condOp.name: {
        const [thenG, elseG] = node.regions as [Graph, Graph];
        const operands = types.slice(1);
        const t = lookup(thenG, library, operands);
        const e = lookup(elseG, library, operands);
        if (!t || !e || !isPredicate(types[0]!)) return dynamic();
        strategies.push({ kind: "branch", then: t, else: e });
        const to = callOutputs(t, operands),
          eo = callOutputs(e, operands);
        return setOuts(allOrNothing(to.map((x, i) => (x && eo[i] && typesEqual(x, eo[i]!) ? x : null))));
      }
      case whileOp.name: {
        const [condG, bodyG] = node.regions as [Graph, Graph];
        const n = node.attrs.numLoopVars as number;
        const attempt = (loopTypes: TensorType[]) => {
          const condC = lookup(condG, library, loopTypes);
          const bodyC = lookup(bodyG, library, loopTypes);
          if (!condC || !bodyC) return null;
          const co = callOutputs(condC, loopTypes);
          const bo = callOutputs(bodyC, loopTypes);
          const stable = co.length === 1 && co[0] !== null && isPredicate(co[0]!) && bo.length === n && bo.every((t, i) => t !== null && typesEqual(t, loopTypes[i]!));
          return { condC, bodyC, bo, stable };
        };
        let loop = attempt(types);
        // Loop variables whose row count changes per iteration (a stack pushed to, an AutoGraph
        // list concatenated to: [0, ...rows] in, [1, ...rows] or [-1, ...rows] out): compile the
        // loop once, for the stack type [-1, ...rows], instead of running the body by the generic
        // path with a new shape (a new specialization, interpreted at first) every iteration.
        const grown = loop?.bo.map((t, i) => (i < n && t ? rowsGrown(types[i]!, t) : null));
        if (loop && !loop.stable && grown?.some((t) => t !== null)) loop = attempt(types.map((t, i) => grown[i] ?? t));
        if (!loop?.stable) return dynamic(); // shapes change across iterations: generic loop, bodies compiled per shape
        strategies.push({ kind: "loopGraph", cond: loop.condC, body: loop.bodyC });
        return setOuts(loop.bo.slice(0, n) as TensorType[]);
      }
    }
    let def: OpDef;
    let group: ElementwiseGroup | null = null;
    let outTypes: TensorType[];
    try {
      def = getOp(node.op);
      outTypes = def.infer(types, node.attrs);
    } catch {
      return dynamic(); // the generic path raises the error if the node runs
    }
    // (an output too large to allocate: the generic path raises the error when the node runs)
    if (!outTypes.every(compilable) || !def.kernels.cpu || outTypes.some((t) => sizeOf(t.shape) > MAX_ELEMENTS)) return dynamic();
    setOuts(outTypes);
    if (!outTypes.every((t) => isConcrete(t.shape)) || !types.every((t) => isConcrete(t.shape))) {
      strategies.push({ kind: "runtime" });
      return;
    }
    if (def.stateful) {
      strategies.push({ kind: "kernel", def, escapesInputs: true });
    } else if (types.length === 0) {
      let data: TypedArray[] | null = null;
      try {
        data = def.kernels.cpu!([], node.attrs, outTypes);
      } catch {
        data = null;
      }
      strategies.push(data ? { kind: "const", data } : { kind: "kernel", def, escapesInputs: false });
    } else if (node.op === "gather" && rowSlice(node, ins, types, strategies, nodes, infos)) {
      strategies.push({ kind: "rowSlice", def, ...rowSlice(node, ins, types, strategies, nodes, infos)! });
    } else if (def.view && outTypes.length === 1 && outTypes[0]!.dtype === types[0]!.dtype && sizeOf(outTypes[0]!.shape) === sizeOf(types[0]!.shape)) {
      strategies.push({ kind: "alias" });
    } else if ((group = elementwiseGroupOf(def, node, types, outTypes)) !== null) {
      strategies.push(simdLoop(types, outTypes, group) ?? { kind: "loop", group });
    } else if (def.product && wasmMatmul(types, outTypes[0]!, def.product(node.attrs))) {
      strategies.push({ kind: "wasmMatmul", ...wasmMatmul(types, outTypes[0]!, def.product(node.attrs))! });
    } else if (def.product && inlineMatmul(types, outTypes[0]!, def.product(node.attrs))) {
      const { transposeA: transA, transposeB: transB } = def.product(node.attrs);
      strategies.push({ kind: "matmul", arith: inlineMatmul(types, outTypes[0]!, def.product(node.attrs))!, transA, transB });
    } else if (def.reduction && reductionView(types[0]!.shape, (node.attrs as { axes: number[] }).axes)) {
      strategies.push({ kind: "reduce", form: def.reduction, ...reductionView(types[0]!.shape, (node.attrs as { axes: number[] }).axes)! });
    } else {
      strategies.push({ kind: "kernel", def, escapesInputs: false });
    }
  });
  const outInfos = g.outputs.map((v) => infos.get(v)!);

  // 2. escapes (propagated back through views), inline values, aliasing roots, liveness
  const markEscape = (info: ValueInfo) => (info.escapes = true);
  outInfos.forEach(markEscape);
  nodes.forEach((node, k) => {
    const s = strategies[k]!;
    if (s.kind === "assign" || s.kind === "dynamic" || s.kind === "runtime" || (s.kind === "kernel" && s.escapesInputs)) node.inputs.forEach((v) => markEscape(infos.get(v)!));
  });
  for (let k = nodes.length - 1; k >= 0; k--) {
    const kind = strategies[k]!.kind;
    if ((kind === "alias" || kind === "rowSlice") && infos.get(nodes[k]!.outputs[0]!)!.escapes) markEscape(infos.get(nodes[k]!.inputs[0]!)!);
  }
  nodes.forEach((node, k) => {
    const s = strategies[k]!;
    const ins = node.inputs.map((v) => infos.get(v)!);
    for (const x of ins) x.lastUse = Math.max(x.lastUse, k);
    const outs = node.outputs.map((v) => infos.get(v)!);
    if (s.kind === "loop" || s.kind === "simd" || s.kind === "matmul" || s.kind === "reduce" || s.kind === "wasmMatmul") {
      for (const o of outs) {
        o.inline = true;
        if (!o.escapes) o.roots.add(o);
      }
    } else if (s.kind === "alias" || s.kind === "rowSlice" || s.kind === "kernel" || s.kind === "runtime" || s.kind === "callGraph" || s.kind === "branch" || s.kind === "loopGraph") {
      // Conservatively, the outputs may share storage with any input.
      for (const o of outs) for (const x of ins) for (const r of x.roots) o.roots.add(r);
    }
  });
  for (const o of outInfos) o.lastUse = nodes.length;
  const rootEnd = new Map<ValueInfo, number>();
  for (const info of infos.values()) for (const r of info.roots) rootEnd.set(r, Math.max(rootEnd.get(r) ?? -1, info.lastUse));

  // 3. buffer plan: planned values share buffers when their lifetimes do not overlap
  const buffers: { dtype: DType; size: number }[] = [];
  const free: number[] = [];
  const releaseAt = new Map<number, ValueInfo[]>();
  for (const [r, end] of rootEnd) {
    const list = releaseAt.get(end) ?? [];
    list.push(r);
    releaseAt.set(end, list);
  }
  const klass = (d: DType) => storageCtor(d).name;
  nodes.forEach((node, k) => {
    for (const v of node.outputs) {
      const o = infos.get(v)!;
      if (!o.inline || o.escapes) continue;
      const size = sizeOf(o.type!.shape);
      const idx = free.findIndex((b) => buffers[b]!.size === size && klass(buffers[b]!.dtype) === klass(o.type!.dtype));
      if (idx >= 0) o.buffer = free.splice(idx, 1)[0]!;
      else {
        o.buffer = buffers.length;
        buffers.push({ dtype: o.type!.dtype, size });
      }
    }
    for (const r of releaseAt.get(k) ?? []) if (r.buffer >= 0) free.push(r.buffer);
  });

  // views of planned buffers are those buffers (the WebAssembly products address them directly)
  nodes.forEach((node, k) => {
    if (strategies[k]!.kind === "alias") infos.get(node.outputs[0]!)!.buffer = infos.get(node.inputs[0]!)!.buffer;
  });

  return { graph: g, library, nodes, strategies, infos, outInfos, buffers };
}

/**
 * The elementwise group a node computes: an elementwise op's expression as one step (its dtype's
 * form, attributes bound), or the group an op like fusedElementwise declares; null otherwise.
 */
function elementwiseGroupOf(def: OpDef, node: Node, types: TensorType[], outTypes: TensorType[]): ElementwiseGroup | null {
  if (def.elementwise && outTypes.length === 1) {
    const dtype = outTypes[0]!.dtype;
    return { numInputs: types.length, steps: [{ expr: bindAttrs(formFor(def.elementwise, dtype), node.attrs), args: types.map((_, i) => i), dtype }], outputs: [0] };
  }
  return def.group?.(node.attrs, types) ?? null;
}

/** The first of `data`'s values when they are consecutive integers (a range with step 1), else null. */
function consecutive(data: TypedArray): number | null {
  if (!(data instanceof Int32Array) || data.length === 0) return null;
  const first = data[0]!;
  for (let i = 1; i < data.length; i++) if (data[i] !== first + i) return null;
  return first;
}

/**
 * A gather that reads consecutive rows (rowSlice strategy): x's dims before the axis are all 1,
 * and the int32 indices are a constant range with step 1, or such a range plus an int32 scalar
 * (range(a, a + rows) + offset, as a batch's rows are picked in a training loop).
 */
function rowSlice(node: Node, ins: ValueInfo[], types: TensorType[], strategies: Strategy[], nodes: Node[], infos: Map<Value, ValueInfo>): { start: number; offset: ValueInfo | null; rows: number; inner: number; n: number } | null {
  const [x, idx] = types as [TensorType, TensorType];
  const axis = (node.attrs as { axis: number }).axis;
  if (idx.dtype !== "int32" || !Number.isInteger(axis) || axis < 0 || axis >= x.shape.length || sizeOf(x.shape.slice(0, axis)) !== 1) return null;
  const rows = sizeOf(idx.shape);
  const shape = { n: x.shape[axis]!, rows, inner: sizeOf(x.shape.slice(axis + 1)) };
  const constRange = (info: ValueInfo): number | null => {
    const s = info.def >= 0 ? strategies[info.def] : undefined;
    if (s?.kind !== "const") return null;
    const i = nodes[info.def]!.outputs.findIndex((v) => infos.get(v) === info);
    return consecutive(s.data[i]!);
  };
  const direct = constRange(ins[1]!);
  if (direct !== null) return { start: direct, offset: null, ...shape };
  const d = ins[1]!.def;
  if (d < 0 || nodes[d]!.op !== "add" || nodes[d]!.inputs.length !== 2) return null;
  const [a, b] = nodes[d]!.inputs.map((v) => infos.get(v)!) as [ValueInfo, ValueInfo];
  const scalar = (info: ValueInfo) => info.type !== null && info.type.dtype === "int32" && sizeOf(info.type.shape) === 1;
  for (const [range, offset] of [[a, b], [b, a]] as const) {
    const start = constRange(range);
    if (start !== null && scalar(offset) && sizeOf(range.type!.shape) === rows) return { start, offset, ...shape };
  }
  return null;
}

/** Region and call outputs are all static or all Tensors (one calling convention per node). */
function allOrNothing(outs: OutputDesc[]): OutputDesc[] {
  return outs.some((o) => o === null) ? outs.map(() => null) : outs;
}

function isPredicate(t: TensorType): boolean {
  return t.dtype === "bool" && sizeOf(t.shape) === 1;
}

/** Output types of a call to `callee` (types assumed from its declaration while it is being built). */
function callOutputs(callee: CompiledGraph, types: TensorType[]): OutputDesc[] {
  if (callee.built) return callee.outs;
  // A recursive call to a graph being compiled: its declared output types hold when the
  // call's input types are exactly the declared ones and fully known.
  const g = callee.graph;
  const declaredIn = g.inputs.map((v) => v.type);
  const exact = declaredIn.length === types.length && declaredIn.every((t, i) => typesEqual(t, types[i]!));
  const outs = g.outputs.map((v) => (exact && compilable(v.type) ? { dtype: v.type.dtype, shape: v.type.shape.slice() } : null));
  callee.assumedOuts = outs;
  return outs;
}

/** [outer, red, inner] when the reduced axes are one non-empty contiguous run. */
function reductionView(shape: readonly number[], axes: readonly number[]): { outer: number; red: number; inner: number } | null {
  if (!Array.isArray(axes) || axes.length === 0) return null;
  for (let i = 1; i < axes.length; i++) if (axes[i] !== axes[i - 1]! + 1) return null;
  const start = axes[0]!,
    end = axes[axes.length - 1]! + 1;
  if (start < 0 || end > shape.length) return null;
  return { outer: sizeOf(shape.slice(0, start)), red: sizeOf(shape.slice(start, end)), inner: sizeOf(shape.slice(end)) };
}

interface MatmulAttrs {
  transposeA: boolean;
  transposeB: boolean;
}

/**
 * A float32 product the executor's WebAssembly gemm computes (exec/wasm-gemm.ts): where the
 * eager kernel uses the WebAssembly sgemm (same arithmetic) and the product is small enough
 * that the general kernel (packing, threads) would not be faster. A transposed B is kept
 * transposed in its slot (once per new storage: a loop's weight is transposed once per call).
 */
function wasmMatmul(types: TensorType[], out: TensorType, attrs: MatmulAttrs): { m: number; k: number; n: number; ldb: number; transA: boolean; transB: boolean } | null {
  const [a, b] = types as [TensorType, TensorType];
  if (a.shape.length !== 2 || b.shape.length !== 2 || out.shape.length !== 2) return null;
  if (out.dtype !== "float32" || a.dtype !== "float32" || b.dtype !== "float32") return null;
  const m = out.shape[0]!,
    n = out.shape[1]!;
  const transA = !!attrs.transposeA;
  const k = transA ? a.shape[0]! : a.shape[1]!;
  const mnk = m * n * k;
  if (mnk < WASM_MIN_MNK || mnk > WASM_GEMM_MAX || mnk <= INLINE_SGEMM_MAX || k * n > WASM_GEMM_MAX_B) return null;
  // (the eager kernel runs it natively: calling the kernel gives the same bits)
  if (nativeMatmulWins(m, n, k)) return null;
  if (getWasmRuntime() === null || gemmModule() === null) return null;
  return { m, k, n, ldb: paddedColumns(m, n, k), transA, transB: !!attrs.transposeB };
}

/**
 * The row length of B and C a product of n columns runs at in the executor's gemm: n rounded
 * up to a multiple of 4 where the columns past the last multiple of 4 would cost more in the
 * gemm's scalar tail (one dependent chain of k float32 adds per element, latency-bound: a
 * 200 x 784 x 10 product took 3.5x as long as 200 x 784 x 8) than padding costs (copying B
 * into a padded slot, C out of a padded scratch); n otherwise. Padding columns of B are never
 * read into the first n columns of C, so the results are the same bits.
 */
export function paddedColumns(m: number, n: number, k: number): number {
  const tail = n % 4;
  return tail !== 0 && tail * m * k > (m + k) * n ? n + 4 - tail : n;
}

/**
 * An elementwise loop (one op or a fused chain) the executor runs as WebAssembly SIMD
 * (exec/wasm-elementwise.ts): float32 throughout, ops with a SIMD form, large enough.
 */
function simdLoop(types: TensorType[], outTypes: TensorType[], group: ElementwiseGroup): Extract<Strategy, { kind: "simd" }> | null {
  const outShape = outTypes[0]!.shape;
  if (sizeOf(outShape) < SIMD_MIN_ELEMENTS || gemmModule() === null) return null;
  if (!types.every((t) => t.dtype === "float32") || !outTypes.every((t) => t.dtype === "float32" && t.shape.length === outShape.length && t.shape.every((d, i) => d === outShape[i]))) return null;
  if (!group.steps.every((st) => st.dtype === "float32" && simdRenderable(st.expr))) return null;
  if (!simdLoopFits(outShape, types.map((t) => t.shape))) return null;
  return { kind: "simd", group };
}



/**
 * Whether a matmul runs as inline code, and which eager path's arithmetic it reproduces: the
 * TypeScript loops below WASM_MIN_MNK (and for float64), the WebAssembly sgemm above it, up to
 * the size where calling the kernel gets cheaper than the inline loops.
 */
function inlineMatmul(types: TensorType[], out: TensorType, attrs: MatmulAttrs): MatmulArith | null {
  const [a, b] = types as [TensorType, TensorType];
  if (a.shape.length !== 2 || b.shape.length !== 2 || out.shape.length !== 2) return null;
  if (a.dtype !== out.dtype || b.dtype !== out.dtype) return null;
  const m = out.shape[0]!,
    n = out.shape[1]!;
  const k = attrs.transposeA ? a.shape[0]! : a.shape[1]!;
  const mnk = m * n * k;
  if (out.dtype === "float64") return mnk <= INLINE_LOOP_MAX ? "loop" : null;
  if (out.dtype !== "float32") return null;
  if (mnk < WASM_MIN_MNK) return "loop";
  if (getWasmRuntime() === null) return mnk <= INLINE_LOOP_MAX ? "loop" : null;
  return mnk <= INLINE_SGEMM_MAX ? "sgemm" : null;
}
