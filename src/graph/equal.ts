/**
 * Structural equality of graphs modulo value ids: same names, input/output names and types,
 * same ops in the same order with deep-equal attributes, the same wiring and the same regions.
 * With both libraries given, called functions are compared too (recursion is handled:
 * a pair of functions being compared is assumed equal while it is compared).
 */
import type { FunctionLibrary, Graph, Node, Value, ValueType } from "./ir.js";
import { isPlainObject } from "../core/objects.js";
import { checkOptions, optionKeys } from "../core/options.js";
import { isVariableLike } from "./printer.js";
import { calleeOf } from "./declarations.js";

export interface GraphEqualityOptions {
  /** Ignore graph names (root, regions, not callee names). Default false. */
  ignoreGraphNames?: boolean;
}

const EQUALITY_OPTIONS = optionKeys<GraphEqualityOptions>()("ignoreGraphNames");

/**
 * Deep equality of attribute values: numbers by Object.is (so -0 != 0 and NaN == NaN),
 * arrays and typed arrays elementwise, plain objects by own keys (order ignored),
 * Variables by identity or by id and name.
 */
export function attrValuesEqual(a: unknown, b: unknown): boolean {
  if (Object.is(a, b)) return true;
  if (typeof a !== typeof b || a === null || b === null || typeof a !== "object") return false;
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!attrValuesEqual(a[i], b[i])) return false;
    return true;
  }
  if (ArrayBuffer.isView(a) || ArrayBuffer.isView(b)) {
    if (!ArrayBuffer.isView(a) || !ArrayBuffer.isView(b) || a.constructor !== b.constructor) return false;
    const x = a as unknown as ArrayLike<number>;
    const y = b as unknown as ArrayLike<number>;
    if (x.length !== y.length) return false;
    for (let i = 0; i < x.length; i++) if (!Object.is(x[i], y[i])) return false;
    return true;
  }
  if (isVariableLike(a) || isVariableLike(b)) {
    return isVariableLike(a) && isVariableLike(b) && a.variableId === b.variableId && a.name === b.name;
  }
  if (isPlainObject(a) && isPlainObject(b)) {
    const ka = Object.keys(a);
    const kb = Object.keys(b);
    if (ka.length !== kb.length) return false;
    for (const k of ka) {
      if (!Object.prototype.hasOwnProperty.call(b, k) || !attrValuesEqual(a[k], b[k])) return false;
    }
    return true;
  }
  return false;
}

function typesEqual(a: ValueType, b: ValueType): boolean {
  return a.dtype === b.dtype && a.shape.length === b.shape.length && a.shape.every((d, i) => d === b.shape[i]);
}

function fmtType(t: ValueType): string {
  return `${t.dtype}[${t.shape.map((d) => (d < 0 ? "?" : d)).join(", ")}]`;
}

class Comparer {
  /** a's values -> b's values. */
  private readonly map = new Map<Value, Value>();
  private readonly assumed = new Set<string>();

  constructor(
    private readonly libA: FunctionLibrary | undefined,
    private readonly libB: FunctionLibrary | undefined,
    private readonly options: GraphEqualityOptions,
  ) {}

  graph(a: Graph, b: Graph, where: string): string | null {
    if (!this.options.ignoreGraphNames && a.name !== b.name) return `${where}: names differ (${a.name} vs ${b.name})`;
    if (a.inputs.length !== b.inputs.length) return `${where}: ${a.inputs.length} vs ${b.inputs.length} inputs`;
    for (let i = 0; i < a.inputs.length; i++) {
      const va = a.inputs[i]!;
      const vb = b.inputs[i]!;
      if (a.inputNames[i] !== b.inputNames[i]) return `${where}: input ${i} is named ${a.inputNames[i]} vs ${b.inputNames[i]}`;
      if (!typesEqual(va.type, vb.type)) return `${where}: input ${i} has type ${fmtType(va.type)} vs ${fmtType(vb.type)}`;
      this.map.set(va, vb);
    }
    if (a.nodes.length !== b.nodes.length) return `${where}: ${a.nodes.length} vs ${b.nodes.length} nodes`;
    for (let i = 0; i < a.nodes.length; i++) {
      const d = this.node(a.nodes[i]!, b.nodes[i]!, `${where} > node ${i} (${a.nodes[i]!.op})`);
      if (d) return d;
    }
    if (a.outputs.length !== b.outputs.length) return `${where}: ${a.outputs.length} vs ${b.outputs.length} outputs`;
    for (let i = 0; i < a.outputs.length; i++) {
      if (a.outputNames[i] !== b.outputNames[i]) return `${where}: output ${i} is named ${a.outputNames[i]} vs ${b.outputNames[i]}`;
      if (!this.sameValue(a.outputs[i]!, b.outputs[i]!)) return `${where}: output ${i} (${a.outputNames[i]}) comes from different values`;
      if (!typesEqual(a.outputs[i]!.type, b.outputs[i]!.type)) return `${where}: output ${i} has type ${fmtType(a.outputs[i]!.type)} vs ${fmtType(b.outputs[i]!.type)}`;
    }
    return null;
  }

  private sameValue(a: Value, b: Value): boolean {
    const m = this.map.get(a);
    return m !== undefined ? m === b : a === b;
  }

  private node(a: Node, b: Node, where: string): string | null {
    if (a.op !== b.op) return `${where}: op ${a.op} vs ${b.op}`;
    if (a.inputs.length !== b.inputs.length) return `${where}: ${a.inputs.length} vs ${b.inputs.length} inputs`;
    for (let i = 0; i < a.inputs.length; i++) if (!this.sameValue(a.inputs[i]!, b.inputs[i]!)) return `${where}: input ${i} is wired differently`;
    if (!attrValuesEqual(a.attrs ?? {}, b.attrs ?? {})) return `${where}: attributes differ`;
    if (a.outputs.length !== b.outputs.length) return `${where}: ${a.outputs.length} vs ${b.outputs.length} outputs`;
    for (let i = 0; i < a.outputs.length; i++) {
      if (!typesEqual(a.outputs[i]!.type, b.outputs[i]!.type)) return `${where}: output ${i} has type ${fmtType(a.outputs[i]!.type)} vs ${fmtType(b.outputs[i]!.type)}`;
      this.map.set(a.outputs[i]!, b.outputs[i]!);
    }
    if (a.regions.length !== b.regions.length) return `${where}: ${a.regions.length} vs ${b.regions.length} regions`;
    for (let i = 0; i < a.regions.length; i++) {
      const d = this.graph(a.regions[i]!, b.regions[i]!, `${where} > region ${i}`);
      if (d) return d;
    }
    const callee = calleeOf(a);
    if (callee !== null && this.libA && this.libB) {
      const calleeB = calleeOf(b) ?? "";
      const key = `${callee}\u0000${calleeB}`;
      if (!this.assumed.has(key)) {
        this.assumed.add(key);
        const fa = this.libA.functions.get(callee);
        const fb = this.libB.functions.get(calleeB);
        if (!fa || !fb) {
          if (fa || fb) return `${where}: function ${callee} is in only one library`;
        } else {
          const d = this.graph(fa, fb, `function ${callee}`);
          if (d) return d;
        }
      }
    }
    return null;
  }

  libraries(a: FunctionLibrary, b: FunctionLibrary): string | null {
    const ka = [...a.functions.keys()];
    const kb = [...b.functions.keys()];
    for (const k of ka) if (!b.functions.has(k)) return `function ${k} is only in the first library`;
    for (const k of kb) if (!a.functions.has(k)) return `function ${k} is only in the second library`;
    for (const k of ka) {
      const key = `${k}\u0000${k}`;
      if (this.assumed.has(key)) continue;
      this.assumed.add(key);
      const d = this.graph(a.functions.get(k)!, b.functions.get(k)!, `function ${k}`);
      if (d) return d;
    }
    return null;
  }
}

/**
 * The first structural difference between two graphs (a path and what differs), or null
 * when they are equal. See `graphsEqual`.
 */
export function graphDifference(a: Graph, b: Graph, libA?: FunctionLibrary, libB?: FunctionLibrary, options: GraphEqualityOptions = {}): string | null {
  checkOptions("graphsEqual", options, EQUALITY_OPTIONS);
  return new Comparer(libA, libB, options).graph(a, b, `graph ${a.name}`);
}

/**
 * Structural equality modulo value ids. With both libraries, the functions the graphs call
 * (transitively) must be equal as well; without them, calls are compared by callee name.
 */
export function graphsEqual(a: Graph, b: Graph, libA?: FunctionLibrary, libB?: FunctionLibrary, options: GraphEqualityOptions = {}): boolean {
  return graphDifference(a, b, libA, libB, options) === null;
}

/** The first difference between two libraries (same function names, each pair equal), or null. */
export function libraryDifference(a: FunctionLibrary, b: FunctionLibrary, options: GraphEqualityOptions = {}): string | null {
  checkOptions("librariesEqual", options, EQUALITY_OPTIONS);
  return new Comparer(a, b, options).libraries(a, b);
}

export function librariesEqual(a: FunctionLibrary, b: FunctionLibrary, options: GraphEqualityOptions = {}): boolean {
  return libraryDifference(a, b, options) === null;
}
