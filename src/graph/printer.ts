/**
 * The readable text form of graphs. Values are numbered canonically per function: the
 * graph's inputs first, then each node's outputs in order; a region's values continue the
 * count right after the outputs of the node that owns it (textual order), so the numbering
 * does not depend on the global value ids. Unknown dimensions print as `?`.
 *
 *   graph f(%0 arg0: float32[2, 3], %1 capture_0: float32[3]) -> (output_0: float32[?, 3]) {
 *     %2: float32[2, 3] = add(%0, %1)
 *     %3: float32[?, 3] = sum(%2) {axes: [0], keepDims: false}
 *     return %3
 *   }
 */
import type { FunctionLibrary, Graph, Node, Value, ValueType } from "./ir.js";
import { isPlainObject } from "../core/objects.js";
import { calleeOf, regionLabel, structuralOf } from "./declarations.js";

/**
 * Canonical numbers of every value defined in `g` and its regions (inputs, then node outputs,
 * then the node's regions, depth first). A value defined twice keeps its first number.
 */
export function numberValues(g: Graph): Map<Value, number> {
  const numbers = new Map<Value, number>();
  let next = 0;
  const def = (v: Value) => {
    if (!numbers.has(v)) numbers.set(v, next++);
  };
  const walk = (graph: Graph) => {
    for (const v of graph.inputs) def(v);
    for (const n of graph.nodes) {
      for (const v of n.outputs) def(v);
      for (const r of n.regions) walk(r);
    }
  };
  walk(g);
  return numbers;
}

export function formatDim(d: number): string {
  return d < 0 ? "?" : String(d);
}

/** `float32[2, ?]`; a scalar is `float32[]`. */
export function formatType(t: ValueType): string {
  return `${t.dtype}[${t.shape.map(formatDim).join(", ")}]`;
}

const IDENT = /^[A-Za-z_$][\w$]*$/;

/** A Variable in an attribute (duck-typed: the graph layer does not import variables). */
export function isVariableLike(x: unknown): x is { name: string; variableId: number } {
  return x !== null && typeof x === "object" && typeof (x as { variableId?: unknown }).variableId === "number" && typeof (x as { name?: unknown }).name === "string";
}

export function formatNumber(n: number): string {
  return Object.is(n, -0) ? "-0" : String(n);
}

/** Compact, JS-like text of an attribute value (Variables print as their name). */
export function formatAttrValue(x: unknown): string {
  if (x === undefined) return "undefined";
  if (x === null) return "null";
  if (typeof x === "number") return formatNumber(x);
  if (typeof x === "string") return quote(x);
  if (typeof x === "boolean") return String(x);
  if (typeof x === "bigint") return `${x}n`;
  if (Array.isArray(x)) return `[${x.map(formatAttrValue).join(", ")}]`;
  if (ArrayBuffer.isView(x) && !(x instanceof DataView)) {
    const arr = x as unknown as ArrayLike<number>;
    return `${x.constructor.name}[${Array.from(arr, (v) => formatNumber(Number(v))).join(", ")}]`;
  }
  if (isVariableLike(x)) return x.name;
  if (isPlainObject(x)) return formatAttrs(x);
  if (typeof x === "function") return `<function ${x.name || "anonymous"}>`;
  return `<${(x as object).constructor?.name ?? "object"}>`;
}

/** A JSON string literal, with the line separators U+2028/U+2029 escaped as well. */
function quote(s: string): string {
  return JSON.stringify(s).replace(/[\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16)}`);
}

function formatKey(k: string): string {
  return IDENT.test(k) ? k : quote(k);
}

/** `{axes: [0], keepDims: false}`. */
export function formatAttrs(attrs: Record<string, unknown>): string {
  const keys = Object.keys(attrs);
  if (keys.length === 0) return "{}";
  return `{${keys.map((k) => `${formatKey(k)}: ${formatAttrValue(attrs[k])}`).join(", ")}}`;
}


function formatName(name: string): string {
  return IDENT.test(name) ? name : quote(name);
}

class Printer {
  readonly lines: string[] = [];
  constructor(private readonly numbers: Map<Value, number>) {}

  ref(v: Value): string {
    const n = this.numbers.get(v);
    return n === undefined ? `%<undefined #${v.id}>` : `%${n}`;
  }

  /** `graph f(...) -> (...) {`; a region's label stands alone when it is also its name. */
  header(keyword: string, g: Graph, region = false): string {
    const ins = g.inputs.map((v, i) => `${this.ref(v)} ${formatName(g.inputNames[i] ?? v.name ?? `input_${i}`)}: ${formatType(v.type)}`);
    const outs = g.outputs.map((v, i) => `${formatName(g.outputNames[i] ?? `output_${i}`)}: ${formatType(v.type)}`);
    const title = region && keyword === g.name ? keyword : `${keyword} ${formatName(g.name)}`;
    return `${title}(${ins.join(", ")}) -> (${outs.join(", ")}) {`;
  }

  body(g: Graph, indent: string): void {
    for (const node of g.nodes) this.node(node, indent);
    this.lines.push(`${indent}return${g.outputs.length > 0 ? " " : ""}${g.outputs.map((v) => this.ref(v)).join(", ")}`);
  }

  node(node: Node, indent: string): void {
    const lhs =
      node.outputs.length === 0 ? "" : `${node.outputs.map((v) => `${this.ref(v)}: ${formatType(v.type)}`).join(", ")} = `;
    let attrs = node.attrs ?? {};
    let op = formatName(node.op);
    const callee = calleeOf(node);
    if (callee !== null) {
      // `call @f`: the attribute naming the callee is written as the call's target
      op = `${op} @${formatName(callee)}`;
      const key = structuralOf(node)!.calleeAttr!;
      attrs = Object.fromEntries(Object.entries(attrs).filter(([k]) => k !== key));
    }
    const attrText = Object.keys(attrs).length > 0 ? ` ${formatAttrs(attrs)}` : "";
    const head = `${indent}${lhs}${op}(${node.inputs.map((v) => this.ref(v)).join(", ")})${attrText}`;
    if (node.regions.length === 0) {
      this.lines.push(head);
      return;
    }
    this.lines.push(`${head} {`);
    node.regions.forEach((r, i) => {
      this.lines.push(`${indent}  ${this.header(regionLabel(node, i), r, true)}`);
      this.body(r, indent + "    ");
      this.lines.push(`${indent}  }`);
    });
    this.lines.push(`${indent}}`);
  }
}

function printWith(keyword: string, g: Graph): string {
  const p = new Printer(numberValues(g));
  p.lines.push(p.header(keyword, g));
  p.body(g, "  ");
  p.lines.push("}");
  return p.lines.join("\n");
}

/** The graph as readable text (see the module comment for the format). */
export function printGraph(g: Graph): string {
  return printWith("graph", g);
}

/** `root` (if given) followed by every other function of the library, separated by blank lines. */
export function printLibrary(lib: FunctionLibrary, root?: Graph): string {
  const parts: string[] = [];
  if (root) parts.push(printGraph(root));
  for (const [, g] of lib.functions) if (g !== root) parts.push(printWith("function", g));
  return parts.join("\n\n");
}
