/**
 * The arena of a compiled graph's instance: one memory holding every planned buffer (views at
 * fixed offsets), and, for the WebAssembly nodes (products, SIMD loops), a slot for each operand
 * that is not a planned buffer (copied in when the call needs it), a copy of a B operand laid
 * out for the gemm (transposed, or its rows padded: analysis.ts paddedColumns), and a scratch
 * slot for each result that leaves the call or is computed padded. The memory is a
 * WebAssembly gemm instance's when the graph has WebAssembly nodes, so those address everything
 * in place.
 */
import { storageBytes, storageCtor, type TypedArray } from "../../core/dtype.js";
import { sizeOf } from "../../core/shape.js";
import { gemmInstance } from "../../backends/cpu/wasm/gemm.js";
import { elementwiseInstance, elementwiseModule, type SimdLoop } from "../../backends/cpu/wasm/elementwise.js";
import { config } from "../../core/config.js";
import type { Plan, Strategy, ValueInfo } from "./analysis.js";
import { arenas } from "./graph.js";
import { ResidentRows } from "./resident.js";

/**
 * Smallest product (2*m*n*k flops) the executor's gemm splits over two threads when a worker
 * thread is awake: about 5 us on one core, several times the cost of handing half to a worker.
 */
const SPLIT_MIN_FLOPS = config.splitMinFlops;

export interface Slot {
  /** Byte offset in the arena. */
  at: number;
  /** The Float32Array view's name in the generated code (`${name}src` holds the storage last copied in). */
  name: string;
  /** The node that first needs it. */
  firstUse: number;
  /** Holds a constant: filled once per instance. */
  constant: boolean;
}

export interface Arena {
  /** Declarations of the instance (the memory, views, WebAssembly instances), in order. */
  setup: string[];
  /** Planned buffer i's view name and byte offset. */
  bufNames: string[];
  bufOffsets: number[];
  /** Operands of WebAssembly nodes that are not planned buffers. */
  slots: Map<ValueInfo, Slot>;
  /**
   * B operands of WebAssembly products laid out for the gemm (planned buffers too): transposed
   * and/or rows padded to `ldb` columns, by `bslotKey`.
   */
  bslots: Map<string, Slot>;
  /** Results of WebAssembly nodes that leave the call or are computed padded, by `${node}:${output}`. */
  scratch: Map<string, { at: number; name: string }>;
  /**
   * Product operands that are consecutive rows of a source kept in the arena (resident.ts): the
   * name of the operand's ResidentRows and the source value.
   */
  resident: Map<ValueInfo, { name: string; source: ValueInfo }>;
  /** Values computed by constant nodes (slots holding them are filled once). */
  constData: Map<ValueInfo, TypedArray>;
  /** The byte offset a WebAssembly node reads operand `x` at. */
  operandAt(x: ValueInfo): number;
  /** The byte offset node k writes output i at. */
  resultAt(k: number, i: number): number;
}

/** Whether a WebAssembly product is worth splitting over two threads. */
export function splitGemm(s: Strategy): boolean {
  return s.kind === "wasmMatmul" && s.m >= 8 && 2 * s.m * s.n * s.k >= SPLIT_MIN_FLOPS;
}

/** A product's laid-out B operand: one slot per value and layout. */
export function bslotKey(x: ValueInfo, s: Extract<Strategy, { kind: "wasmMatmul" }>): string {
  return `${x.name}:${s.transB ? "t" : "n"}:${s.ldb}`;
}

/** Largest source (bytes) a compiled instance keeps in its arena for the rows products read (resident.ts). */
const RESIDENT_MAX_BYTES = 32 << 20;

/** Whether a product's B operand is read from a laid-out copy (bslots) rather than in place. */
export function laidOutB(s: Extract<Strategy, { kind: "wasmMatmul" }>): boolean {
  return s.transB || s.ldb !== s.n;
}

/** Lays out the arena of `plan`; `bind(value, hint)` names a value the generated code is given. */
export function layoutArena(plan: Plan, bind: (value: unknown, hint: string) => string): Arena {
  const { nodes, strategies, infos, buffers } = plan;
  const setup: string[] = [];
  let offset = 0;
  const reserve = (bytes: number) => {
    offset = Math.ceil(offset / 16) * 16;
    const at = offset;
    offset += bytes;
    return at;
  };
  const bufNames: string[] = [];
  const bufOffsets: number[] = [];
  buffers.forEach((b, i) => {
    const ctor = storageCtor(b.dtype);
    const at = reserve(b.size * storageBytes(b.dtype));
    bufNames.push(`B${i}`);
    bufOffsets.push(at);
    setup.push(`const B${i} = new ${ctor.name}(ARENA, ${at}, ${b.size});`);
  });
  const wasmNodes = nodes.map((_, k) => k).filter((k) => strategies[k]!.kind === "wasmMatmul" || strategies[k]!.kind === "simd");
  const constData = new Map<ValueInfo, TypedArray>();
  nodes.forEach((node, k) => {
    const st = strategies[k]!;
    if (st.kind === "const") node.outputs.forEach((v, i) => constData.set(infos.get(v)!, st.data[i]!));
  });
  const slots = new Map<ValueInfo, Slot>();
  const bslots = new Map<string, Slot>();
  const scratch = new Map<string, { at: number; name: string }>();
  const slot = (x: ValueInfo, name: string, k: number, size = sizeOf(x.type!.shape)): Slot => {
    const at = reserve(size * 4);
    // the storage last copied in: tensors are immutable, so an operand whose storage did not
    // change since the last call (weights, captured constants) is not copied again
    setup.push(`const ${name} = new Float32Array(ARENA, ${at}, ${size}); let ${name}src = null;`);
    return { at, name, firstUse: k, constant: constData.has(x) };
  };
  for (const k of wasmNodes) {
    const st = strategies[k] as Extract<Strategy, { kind: "wasmMatmul" | "simd" }>;
    nodes[k]!.inputs.forEach((v, i) => {
      const x = infos.get(v)!;
      if (i === 1 && st.kind === "wasmMatmul" && laidOutB(st)) {
        const key = bslotKey(x, st);
        if (!bslots.has(key)) bslots.set(key, slot(x, `TSL${bslots.size}`, k, st.k * st.ldb));
        return;
      }
      if (x.buffer >= 0 || slots.has(x)) return;
      slots.set(x, slot(x, `SL${slots.size}`, k));
    });
    nodes[k]!.outputs.forEach((v, i) => {
      const o = infos.get(v)!;
      const padded = st.kind === "wasmMatmul" && st.ldb !== st.n;
      if (o.buffer >= 0 && !padded) return;
      const size = padded ? st.m * st.ldb : sizeOf(o.type!.shape);
      const at = reserve(size * 4);
      setup.push(`const SC${k}_${i} = new Float32Array(ARENA, ${at}, ${size});`);
      scratch.set(`${k}:${i}`, { at, name: `SC${k}_${i}` });
    });
  }
  // product operands that are consecutive rows of a float32 source that is not this
  // instance's storage (a graph input, a loop's invariant): the source kept in the arena
  // (not for operands a SIMD loop also reads: its addresses are fixed)
  const simdRead = new Set<ValueInfo>();
  for (const k of wasmNodes) if (strategies[k]!.kind === "simd") for (const v of nodes[k]!.inputs) simdRead.add(infos.get(v)!);
  const resident = new Map<ValueInfo, { name: string; source: ValueInfo }>();
  const residentOf = new Map<ValueInfo, string>();
  for (const [x, sl] of slots) {
    const st = x.def >= 0 ? strategies[x.def]! : null;
    if (st?.kind !== "rowSlice" || sl.constant || simdRead.has(x) || x.type!.dtype !== "float32") continue;
    const source = infos.get(nodes[x.def]!.inputs[0]!)!;
    const size = sizeOf(source.type!.shape);
    if (source.buffer >= 0 || source.roots.size > 0 || source.type!.dtype !== "float32" || size * 4 > RESIDENT_MAX_BYTES || size <= sizeOf(x.type!.shape)) continue;
    let copy = residentOf.get(source);
    if (copy === undefined) {
      const at = reserve(size * 4);
      copy = `RC${residentOf.size}`;
      setup.push(`const ${copy} = new Float32Array(ARENA, ${at}, ${size}); const ${copy}at = ${at};`);
      residentOf.set(source, copy);
    }
    const name = `RES${resident.size}`;
    setup.push(`const ${name} = new ${bind(ResidentRows, "ResidentRows")}(${copy}, ${copy}at, ${sl.name}, ${sl.at});`);
    resident.set(x, { name, source });
  }
  const operandAt = (x: ValueInfo): number => (x.buffer >= 0 ? bufOffsets[x.buffer]! : slots.get(x)!.at);
  const resultAt = (k: number, i: number): number => scratch.get(`${k}:${i}`)?.at ?? bufOffsets[infos.get(nodes[k]!.outputs[i]!)!.buffer]!;

  // the SIMD loops, one module per graph
  const simdLoops: SimdLoop[] = [];
  for (const k of wasmNodes) {
    const st = strategies[k]!;
    if (st.kind !== "simd") continue;
    const ins = nodes[k]!.inputs.map((v) => infos.get(v)!);
    simdLoops.push({
      name: `e${k}`,
      outShape: infos.get(nodes[k]!.outputs[0]!)!.type!.shape,
      inputs: ins.map((x) => ({ at: operandAt(x), shape: x.type!.shape })),
      steps: st.group.steps.map((step) => ({ expr: step.expr, args: step.args.slice() })),
      outputs: st.group.outputs.map((step, i) => ({ at: resultAt(k, i), value: ins.length + step })),
    });
  }
  const arenaBytes = Math.max(16, Math.ceil(offset / 16) * 16);
  if (wasmNodes.length > 0) {
    const simdSetup: string[] = [];
    if (simdLoops.length > 0) {
      const mod = bind(elementwiseModule(simdLoops), "SimdModule");
      simdSetup.push(`const EW = ${bind(elementwiseInstance, "simdInstance")}(${mod}, WG.memory);`);
      for (const l of simdLoops) simdSetup.push(`const E${l.name.slice(1)} = EW.${l.name};`);
    }
    const threads = wasmNodes.some((k) => splitGemm(strategies[k]!));
    setup.unshift(`const WG = ${bind(gemmInstance, "gemmInstance")}(${arenaBytes}, ${threads}); const ARENA = WG.memory.buffer; const GEMM = WG.gemm; const PGEMM = WG.split;`, ...simdSetup);
  } else {
    setup.unshift(`const ARENA = new ArrayBuffer(${arenaBytes});`);
  }
  setup.splice(1, 0, `${bind(arenas, "arenas")}.add(ARENA);`);
  return { setup, bufNames, bufOffsets, slots, bslots, resident, scratch, constData, operandAt, resultAt };
}
