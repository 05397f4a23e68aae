/**
 * Memory planning (an analysis; the graph is not changed): which buffer each intermediate
 * value of a graph with known shapes lives in, so that an executor allocates a few buffers
 * once and reuses them on every call.
 *
 * - Managed values: outputs of registry nodes with fully known shapes. Not managed (absent
 *   from `bufferOf`; the executor allocates or borrows them itself): graph inputs, graph
 *   outputs (callers keep them, so they never share), values passed to nodes with effects
 *   (assignVariable keeps its input as the variable's value; a host function may keep its
 *   arguments), outputs of structural nodes (call,
 *   cond, while, readVariable: their storage comes from elsewhere), of stateful ops
 *   (hostCall returns host tensors' storage), and values of unknown shape. Values inside
 *   regions and callees are not planned here. Outputs of nodes without inputs (constant,
 *   fill, range, eye, random draws) are not managed either: an executor may compute them once
 *   and keep them, so nothing may be written over them.
 * - Outputs of cond, while, call and stateful ops may be their inputs' storage (a branch
 *   returning its operand): their inputs stay alive as long as those outputs, and are not
 *   managed if those outputs escape.
 * - Views (ops declared with `view`: reshape, expandDims, squeeze, identity, stopGradient)
 *   share their input's storage. A view and its source form one alias class with one buffer and one
 *   lifetime (from the source's definition to the last use of any member); a class that
 *   contains a graph output, or whose source is not managed, is not managed.
 * - Reuse: classes whose lifetimes do not overlap share a buffer of the same dtype and size.
 *   A buffer is released after the last node that uses its class, and only reused by
 *   values defined after that node.
 * - In place: an elementwise node (an op with an elementwise expression, or one computing an
 *   elementwise group: fusedElementwise) writes an output into the buffer of an
 *   input whose class dies at that node, when dtype and size agree (same size means the
 *   input is read one to one, element i for output element i) and the input is managed (not
 *   a graph input, not a variable's storage). Such nodes are in `inPlace`.
 */
import { storageBytes, type DType } from "../../core/dtype.js";
import { FunctionLibrary, type Graph, type Value } from "../ir.js";
import { EffectAnalysis, isFullyKnown, registryDef, sizeOfType } from "./util.js";

export interface MemoryPlan {
  /** Value.id -> index into `buffers`, for every managed value (views included). */
  bufferOf: Map<number, number>;
  buffers: { dtype: DType; size: number }[];
  /** Node.id of nodes that write an output into a dying input's buffer. */
  inPlace: Set<number>;
  /** Bytes of all planned buffers. */
  plannedBytes: number;
  /** Bytes if every managed (non-view) value had its own buffer. */
  naiveBytes: number;
}

export function bytesPerElement(d: DType): number {
  return storageBytes(d);
}

interface AliasClass {
  root: Value;
  managed: boolean;
  lastUse: number;
  buffer: number;
}

/**
 * Plans the buffers of `g`'s intermediate values. `lib` lets calls to functions without
 * effects be told apart (without it every call is assumed to keep its arguments).
 */
export function planMemory(g: Graph, lib?: FunctionLibrary): MemoryPlan {
  const classOf = new Map<Value, AliasClass>();
  const classes: AliasClass[] = [];

  // Alias classes and which are managed.
  const unmanaged = (v: Value): AliasClass => {
    const c: AliasClass = { root: v, managed: false, lastUse: -1, buffer: -1 };
    classes.push(c);
    return c;
  };
  for (const v of g.inputs) classOf.set(v, unmanaged(v));
  for (const [i, node] of g.nodes.entries()) {
    const def = registryDef(node.op);
    if (def?.view && node.inputs.length === 1 && node.outputs.length === 1) {
      const src = classOf.get(node.inputs[0]!) ?? unmanaged(node.inputs[0]!);
      classOf.set(node.outputs[0]!, src);
      continue;
    }
    const managed = def !== null && !def.stateful && node.regions.length === 0 && node.inputs.length > 0;
    for (const v of node.outputs) {
      const c: AliasClass = { root: v, managed: managed && isFullyKnown(v.type), lastUse: i, buffer: -1 };
      classes.push(c);
      classOf.set(v, c);
    }
  }
  for (const [i, node] of g.nodes.entries()) {
    for (const v of node.inputs) {
      const c = classOf.get(v);
      if (c && c.lastUse < i) c.lastUse = i;
    }
  }
  // Escaping storage: graph outputs (callers keep them) and inputs of nodes with effects
  // (an assigned variable, or a host function, may keep the tensor).
  const escapes = new Set<AliasClass>();
  for (const v of g.outputs) {
    const c = classOf.get(v);
    if (c) escapes.add(c);
  }
  const effects = new EffectAnalysis(lib ?? new FunctionLibrary());
  for (const node of g.nodes) {
    if (!effects.hasEffects(node)) continue;
    for (const v of node.inputs) {
      const c = classOf.get(v);
      if (c) escapes.add(c);
    }
  }
  // Outputs of control flow, calls and stateful ops may be their inputs' storage (a branch
  // that returns its operand, a loop that runs no iteration): the inputs live as long as the
  // outputs, and escape with them.
  for (let i = g.nodes.length - 1; i >= 0; i--) {
    const node = g.nodes[i]!;
    const def = registryDef(node.op);
    if (def !== null && !def.stateful) continue;
    let last = -1;
    let escaping = false;
    for (const v of node.outputs) {
      const c = classOf.get(v)!;
      last = Math.max(last, c.lastUse);
      if (escapes.has(c)) escaping = true;
    }
    for (const v of node.inputs) {
      const c = classOf.get(v);
      if (!c) continue;
      if (c.lastUse < last) c.lastUse = last;
      if (escaping) escapes.add(c);
    }
  }
  for (const c of escapes) c.managed = false;

  // Linear scan.
  const buffers: { dtype: DType; size: number }[] = [];
  const free = new Map<string, number[]>();
  const keyOf = (dtype: DType, size: number) => `${dtype}:${size}`;
  const inPlace = new Set<number>();
  const dying = new Map<number, AliasClass[]>();
  for (const c of classes) {
    if (!c.managed) continue;
    let l = dying.get(c.lastUse);
    if (!l) dying.set(c.lastUse, (l = []));
    l.push(c);
  }
  let naiveBytes = 0;
  for (const [i, node] of g.nodes.entries()) {
    const def = registryDef(node.op);
    const elementwise = def !== null && (def.elementwise !== undefined || def.group !== undefined);
    const donated = new Set<AliasClass>();
    for (const out of node.outputs) {
      const c = classOf.get(out)!;
      if (!c.managed || c.root !== out) continue;
      const size = sizeOfType(out.type);
      naiveBytes += size * bytesPerElement(out.type.dtype);
      if (elementwise) {
        const donor = node.inputs.map((v) => classOf.get(v)).find(
          (ic) => ic !== undefined && ic.managed && ic.buffer >= 0 && ic.lastUse === i && !donated.has(ic) && buffers[ic.buffer]!.dtype === out.type.dtype && buffers[ic.buffer]!.size === size,
        );
        if (donor) {
          donated.add(donor);
          c.buffer = donor.buffer;
          inPlace.add(node.id);
          continue;
        }
      }
      const list = free.get(keyOf(out.type.dtype, size));
      if (list && list.length > 0) c.buffer = list.pop()!;
      else {
        c.buffer = buffers.length;
        buffers.push({ dtype: out.type.dtype, size });
      }
    }
    // Release the buffers of classes whose last use is this node (not those handed over).
    for (const c of dying.get(i) ?? []) {
      if (c.buffer < 0 || donated.has(c)) continue;
      const b = buffers[c.buffer]!;
      const k = keyOf(b.dtype, b.size);
      let list = free.get(k);
      if (!list) free.set(k, (list = []));
      list.push(c.buffer);
    }
  }

  const bufferOf = new Map<number, number>();
  for (const [v, c] of classOf) if (c.managed && c.buffer >= 0) bufferOf.set(v.id, c.buffer);
  const plannedBytes = buffers.reduce((s, b) => s + b.size * bytesPerElement(b.dtype), 0);
  return { bufferOf, buffers, inPlace, plannedBytes, naiveBytes };
}
