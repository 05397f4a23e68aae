/**
 * The S-expression form of a graph and its function library, and a reader that parses it
 * back into an equal graph.
 *
 *   (module
 *     (graph f
 *       (inputs (%0 arg0 float32 (2 3)) (%1 capture_0 float32 (?)))
 *       (nodes
 *         (node add (inputs %0 %1) (attrs) (outputs (%2 float32 (2 3))))
 *         (node sum (inputs %2) (attrs (axes (list 0)) (keepDims false)) (outputs (%3 float32 (3))))
 *         (node cond (inputs %4 %2) (attrs) (outputs (%5 float32 (2 3)))
 *           (regions (graph then (inputs ...) (nodes ...) (outputs ...)) (graph else ...))))
 *       (outputs (output_0 %3)))
 *     (function g ...))
 *
 * The first form is the root graph: `graph` when it is not a member of the library, `function`
 * when it is (a recursive or composed root). Every other form is a library function, named by
 * its library key. Values are numbered as the text printer numbers them (graph/printer.ts).
 *
 * Names are bare atoms when they look like identifiers, JSON strings otherwise. Attribute
 * values: numbers (`-0`, `NaN`, `Infinity`, `-Infinity` included), JSON strings, `true`,
 * `false`, `null`, `undefined`, `(list ...)`, `(dict (key value) ...)`, typed arrays as
 * `(typed Float32Array 1 2)`, and Variables as `(variable "name" id)`, resolved on reading
 * through `options.variables`. `;` starts a comment that runs to the end of the line.
 */
import { isDType, type DType } from "../core/dtype.js";
import { ValueError, type SourceLocation } from "../core/errors.js";
import { Variable } from "../core/variable.js";
import { FunctionLibrary, Graph, type Value, type ValueType } from "./ir.js";
import { formatNumber, isVariableLike, numberValues } from "./printer.js";
import { isPlainObject } from "../core/objects.js";
import { checkOptions, optionKeys } from "../core/options.js";

// ---------------------------------------------------------------------------------------------
// Writing

const NAME_ATOM = /^[A-Za-z_$][\w$.\-]*$/;

/** A JSON string literal, with the line separators U+2028/U+2029 escaped as well. */
function quote(s: string): string {
  return JSON.stringify(s).replace(/[\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16)}`);
}

function writeName(name: string): string {
  return NAME_ATOM.test(name) ? name : quote(name);
}

const TYPED_ARRAYS: Record<string, new (xs: number[]) => ArrayLike<number>> = {
  Float32Array,
  Float64Array,
  Int8Array,
  Int16Array,
  Int32Array,
  Uint8Array,
  Uint8ClampedArray,
  Uint16Array,
  Uint32Array,
};

function writeAttrValue(x: unknown, where: string): string {
  if (x === undefined) return "undefined";
  if (x === null) return "null";
  if (typeof x === "boolean") return String(x);
  if (typeof x === "number") return formatNumber(x);
  if (typeof x === "string") return quote(x);
  if (Array.isArray(x)) return x.length === 0 ? "(list)" : `(list ${x.map((v, i) => writeAttrValue(v, `${where}[${i}]`)).join(" ")})`;
  if (isVariableLike(x)) return `(variable ${quote(x.name)} ${x.variableId})`;
  if (ArrayBuffer.isView(x)) {
    const name = x.constructor.name;
    if (TYPED_ARRAYS[name] !== x.constructor) throw new ValueError(`attribute ${where} is a ${name}, which has no S-expression form`, "toSExpr", null);
    const items = Array.from(x as unknown as ArrayLike<number>, (v) => formatNumber(v));
    return `(typed ${name}${items.length > 0 ? " " : ""}${items.join(" ")})`;
  }
  if (isPlainObject(x)) {
    const entries = Object.keys(x).map((k) => `(${writeName(k)} ${writeAttrValue(x[k], `${where}.${k}`)})`);
    return entries.length === 0 ? "(dict)" : `(dict ${entries.join(" ")})`;
  }
  const kind = typeof x === "object" ? ((x as object).constructor?.name ?? "object") : typeof x;
  throw new ValueError(`attribute ${where} is a ${kind}, which has no S-expression form (attributes must be JSON-like values or Variables)`, "toSExpr", null);
}

function writeShape(shape: readonly number[]): string {
  return `(${shape.map((d) => (d < 0 ? "?" : String(d))).join(" ")})`;
}

class Writer {
  readonly lines: string[] = [];
  constructor(private readonly numbers: Map<Value, number>, private readonly fnName: string) {}

  ref(v: Value, where: string): string {
    const n = this.numbers.get(v);
    if (n === undefined) {
      throw new ValueError(`function ${this.fnName}: ${where} uses a value (#${v.id}) that is defined nowhere in the function; verify the graph first`, "toSExpr", null);
    }
    return `%${n}`;
  }

  graph(keyword: string, name: string, g: Graph, indent: string): void {
    const inputs = g.inputs.map((v, i) => `(${this.ref(v, "an input")} ${writeName(g.inputNames[i] ?? v.name ?? `input_${i}`)} ${v.type.dtype} ${writeShape(v.type.shape)})`);
    this.lines.push(`${indent}(${keyword} ${writeName(name)}`);
    this.lines.push(`${indent}  (inputs${inputs.length > 0 ? " " : ""}${inputs.join(" ")})`);
    if (g.nodes.length === 0) this.lines.push(`${indent}  (nodes)`);
    else {
      this.lines.push(`${indent}  (nodes`);
      g.nodes.forEach((node, ni) => {
        const where = `node ${ni} (${node.op}) of ${g.name}`;
        const ins = node.inputs.map((v) => this.ref(v, where)).join(" ");
        const attrs = Object.keys(node.attrs ?? {}).map((k) => `(${writeName(k)} ${writeAttrValue(node.attrs[k], `${node.op}.${k}`)})`);
        const outs = node.outputs.map((v) => `(${this.ref(v, where)} ${v.type.dtype} ${writeShape(v.type.shape)})`);
        const head =
          `${indent}    (node ${writeName(node.op)} (inputs${ins ? " " : ""}${ins}) (attrs${attrs.length > 0 ? " " : ""}${attrs.join(" ")}) ` +
          `(outputs${outs.length > 0 ? " " : ""}${outs.join(" ")})`;
        if (node.regions.length === 0) {
          this.lines.push(`${head})`);
          return;
        }
        this.lines.push(head);
        this.lines.push(`${indent}      (regions`);
        for (const r of node.regions) this.graph("graph", r.name, r, indent + "        ");
        this.lines[this.lines.length - 1] += "))";
      });
      this.lines[this.lines.length - 1] += ")";
    }
    const outs = g.outputs.map((v, i) => `(${writeName(g.outputNames[i] ?? `output_${i}`)} ${this.ref(v, `output ${i} of ${g.name}`)})`);
    this.lines.push(`${indent}  (outputs${outs.length > 0 ? " " : ""}${outs.join(" ")}))`);
  }
}

function writeFunction(keyword: string, name: string, g: Graph, lines: string[]): void {
  const w = new Writer(numberValues(g), name);
  w.graph(keyword, name, g, "  ");
  lines.push(...w.lines);
}

/** The graph and every function of `lib` as one S-expression module. */
export function toSExpr(g: Graph, lib?: FunctionLibrary): string {
  const lines = ["(module"];
  let rootKey: string | undefined;
  if (lib) for (const [k, f] of lib.functions) if (f === g) rootKey ??= k;
  writeFunction(rootKey !== undefined ? "function" : "graph", rootKey ?? g.name, g, lines);
  if (lib) for (const [k, f] of lib.functions) if (f !== g || k !== rootKey) writeFunction("function", k, f, lines);
  lines[lines.length - 1] += ")";
  return lines.join("\n") + "\n";
}

// ---------------------------------------------------------------------------------------------
// Reading

interface Pos {
  line: number;
  column: number;
}

export type SNode =
  | { kind: "atom"; text: string; pos: Pos }
  | { kind: "string"; text: string; pos: Pos }
  | { kind: "list"; items: SNode[]; pos: Pos; end: Pos };

function parseError(pos: Pos, message: string): ValueError {
  const loc: SourceLocation = { file: "<sexpr>", line: pos.line, column: pos.column };
  return new ValueError(`${pos.line}:${pos.column}: ${message}`, "parseSExpr", loc);
}

/** Reads every top-level S-expression of `text`. */
export function readSExprs(text: string): SNode[] {
  let i = 0;
  let line = 1;
  let col = 1;
  const advance = () => {
    if (text.charCodeAt(i) === 10) {
      line++;
      col = 1;
    } else col++;
    i++;
  };
  const stack: { items: SNode[]; pos: Pos }[] = [{ items: [], pos: { line: 1, column: 1 } }];
  while (i < text.length) {
    const c = text[i]!;
    if (c === " " || c === "\t" || c === "\n" || c === "\r") {
      advance();
      continue;
    }
    if (c === ";") {
      while (i < text.length && text[i] !== "\n") advance();
      continue;
    }
    const pos = { line, column: col };
    if (c === "(") {
      stack.push({ items: [], pos });
      advance();
      continue;
    }
    if (c === ")") {
      if (stack.length === 1) throw parseError(pos, `unexpected ")"`);
      const top = stack.pop()!;
      advance();
      stack[stack.length - 1]!.items.push({ kind: "list", items: top.items, pos: top.pos, end: pos });
      continue;
    }
    if (c === '"') {
      const start = i;
      advance();
      let closed = false;
      while (i < text.length) {
        const d = text[i]!;
        if (d === "\\") {
          advance();
          if (i < text.length) advance();
          continue;
        }
        if (d === "\n") break;
        advance();
        if (d === '"') {
          closed = true;
          break;
        }
      }
      if (!closed) throw parseError(pos, "unterminated string");
      const raw = text.slice(start, i);
      let s: string;
      try {
        s = JSON.parse(raw) as string;
      } catch {
        throw parseError(pos, `malformed string ${raw}`);
      }
      stack[stack.length - 1]!.items.push({ kind: "string", text: s, pos });
      continue;
    }
    const start = i;
    while (i < text.length && !/[\s();"]/.test(text[i]!)) advance();
    stack[stack.length - 1]!.items.push({ kind: "atom", text: text.slice(start, i), pos });
  }
  if (stack.length > 1) throw parseError(stack[stack.length - 1]!.pos, `unclosed "(" (the text ends at ${line}:${col})`);
  return stack[0]!.items;
}

function describe(n: SNode): string {
  if (n.kind === "atom") return JSON.stringify(n.text);
  if (n.kind === "string") return `the string ${JSON.stringify(n.text)}`;
  const head = n.items[0];
  return head && head.kind === "atom" ? `a (${head.text} ...) form` : n.items.length === 0 ? "()" : "a list";
}

function expectList(n: SNode | undefined, what: string, parent: SNode & { kind: "list" }): SNode & { kind: "list" } {
  if (n === undefined) throw parseError(parent.end, `expected ${what} before ")"`);
  if (n.kind !== "list") throw parseError(n.pos, `expected ${what}, found ${describe(n)}`);
  return n;
}

/** A list whose head is the atom `keyword`. */
function expectForm(n: SNode | undefined, keyword: string, parent: SNode & { kind: "list" }): SNode & { kind: "list" } {
  const l = expectList(n, `(${keyword} ...)`, parent);
  const head = l.items[0];
  if (!head || head.kind !== "atom" || head.text !== keyword) throw parseError(head ? head.pos : l.pos, `expected (${keyword} ...), found ${describe(l)}`);
  return l;
}

function expectName(n: SNode | undefined, what: string, parent: SNode & { kind: "list" }): string {
  if (n === undefined) throw parseError(parent.end, `expected ${what} before ")"`);
  if (n.kind === "list") throw parseError(n.pos, `expected ${what}, found ${describe(n)}`);
  return n.text;
}

function expectEnd(l: SNode & { kind: "list" }, count: number, what: string): void {
  if (l.items.length > count) throw parseError(l.items[count]!.pos, `unexpected ${describe(l.items[count]!)} at the end of ${what}`);
}

const NUMBER_RE = /^[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?$/;

function readNumberAtom(n: SNode): number | undefined {
  if (n.kind !== "atom") return undefined;
  if (n.text === "NaN") return NaN;
  if (n.text === "Infinity" || n.text === "+Infinity") return Infinity;
  if (n.text === "-Infinity") return -Infinity;
  return NUMBER_RE.test(n.text) ? Number(n.text) : undefined;
}

export interface ParseSExprOptions {
  /** Resolves `(variable "name" id)` attributes: by id, or a function of (id, name). */
  variables?: Map<number, Variable> | ((id: number, name: string) => Variable);
}

type Scope = { values: Map<number, Value>; parent: Scope | null };

class Reader {
  constructor(private readonly options: ParseSExprOptions) {}

  attrValue(n: SNode): unknown {
    if (n.kind === "string") return n.text;
    if (n.kind === "atom") {
      switch (n.text) {
        case "true":
          return true;
        case "false":
          return false;
        case "null":
          return null;
        case "undefined":
          return undefined;
      }
      const x = readNumberAtom(n);
      if (x === undefined) throw parseError(n.pos, `expected an attribute value, found ${describe(n)} (strings are written in double quotes)`);
      return x;
    }
    const head = n.items[0];
    if (!head || head.kind !== "atom") throw parseError(head ? head.pos : n.pos, "expected (list ...), (dict ...), (typed ...) or (variable ...)");
    switch (head.text) {
      case "list":
        return n.items.slice(1).map((x) => this.attrValue(x));
      case "dict": {
        const o: Record<string, unknown> = {};
        for (const e of n.items.slice(1)) {
          const entry = expectList(e, "a (key value) entry", n);
          const key = expectName(entry.items[0], "a key", entry);
          if (entry.items.length < 2) throw parseError(entry.end, `expected a value for key ${JSON.stringify(key)}`);
          expectEnd(entry, 2, "a (key value) entry");
          Object.defineProperty(o, key, { value: this.attrValue(entry.items[1]!), enumerable: true, writable: true, configurable: true });
        }
        return o;
      }
      case "typed": {
        const ctorName = expectName(n.items[1], "a typed array type", n);
        const ctor = TYPED_ARRAYS[ctorName];
        if (!ctor) throw parseError(n.items[1]!.pos, `unknown typed array type ${JSON.stringify(ctorName)}`);
        const xs = n.items.slice(2).map((x) => {
          const v = readNumberAtom(x);
          if (v === undefined) throw parseError(x.pos, `expected a number, found ${describe(x)}`);
          return v;
        });
        return new ctor(xs);
      }
      case "variable": {
        const nameNode = n.items[1];
        if (!nameNode || nameNode.kind !== "string") throw parseError(nameNode ? nameNode.pos : n.end, "expected the variable's name as a string");
        const idNode = n.items[2];
        const id = idNode ? readNumberAtom(idNode) : undefined;
        if (idNode === undefined || id === undefined || !Number.isInteger(id)) {
          throw parseError(idNode ? idNode.pos : n.end, "expected the variable's integer id");
        }
        expectEnd(n, 3, "(variable name id)");
        const resolver = this.options.variables;
        const v = resolver instanceof Map ? resolver.get(id) : resolver ? resolver(id, nameNode.text) : undefined;
        if (!v) {
          throw parseError(
            n.pos,
            `variable ${JSON.stringify(nameNode.text)} (id ${id}) cannot be resolved: pass options.variables (a Map from id to Variable, or a function)`,
          );
        }
        return v;
      }
      default:
        throw parseError(head.pos, `unknown attribute form (${head.text} ...); expected list, dict, typed or variable`);
    }
  }

  type(dtypeNode: SNode | undefined, shapeNode: SNode | undefined, parent: SNode & { kind: "list" }): ValueType {
    const dtype = expectName(dtypeNode, "a dtype", parent);
    if (!isDType(dtype)) throw parseError(dtypeNode!.pos, `unknown dtype ${JSON.stringify(dtype)}`);
    const shapeList = expectList(shapeNode, "a shape like (2 3)", parent);
    const shape = shapeList.items.map((d) => {
      if (d.kind === "atom" && d.text === "?") return -1;
      const x = readNumberAtom(d);
      if (x === undefined || !Number.isInteger(x) || x < -1) throw parseError(d.pos, `expected a dimension (a non-negative integer or ?), found ${describe(d)}`);
      return x;
    });
    return { dtype: dtype as DType, shape };
  }

  valueNumber(n: SNode | undefined, parent: SNode & { kind: "list" }): number {
    if (n === undefined) throw parseError(parent.end, `expected a value like %0 before ")"`);
    if (n.kind !== "atom" || !/^%\d+$/.test(n.text)) throw parseError(n.pos, `expected a value like %0, found ${describe(n)}`);
    return Number(n.text.slice(1));
  }

  define(scope: Scope, n: SNode, num: number, v: Value): void {
    if (scope.values.has(num)) throw parseError(n.pos, `value %${num} is defined twice`);
    scope.values.set(num, v);
  }

  lookup(scope: Scope, n: SNode, parent: SNode & { kind: "list" }): Value {
    const num = this.valueNumber(n, parent);
    for (let s: Scope | null = scope; s; s = s.parent) {
      const v = s.values.get(num);
      if (v) return v;
    }
    throw parseError(n.pos, `value %${num} is not defined before this use`);
  }

  /** `(graph|function NAME (inputs ...) (nodes ...) (outputs ...))`. */
  graph(form: SNode & { kind: "list" }, parentScope: Scope | null): Graph {
    const keyword = (form.items[0] as { text: string }).text;
    const name = expectName(form.items[1], `the ${keyword}'s name`, form);
    const g = new Graph(name);
    const scope: Scope = { values: new Map(), parent: parentScope };

    const inputs = expectForm(form.items[2], "inputs", form);
    for (const item of inputs.items.slice(1)) {
      const l = expectList(item, "an input like (%0 x float32 (2 3))", inputs);
      const num = this.valueNumber(l.items[0], l);
      const inName = expectName(l.items[1], "the input's name", l);
      const type = this.type(l.items[2], l.items[3], l);
      expectEnd(l, 4, "an input");
      this.define(scope, l.items[0]!, num, g.addInput(type, inName));
    }

    const nodes = expectForm(form.items[3], "nodes", form);
    for (const item of nodes.items.slice(1)) {
      const nf = expectForm(item, "node", nodes);
      const op = expectName(nf.items[1], "the node's op", nf);
      const ins = expectForm(nf.items[2], "inputs", nf);
      const inputValues = ins.items.slice(1).map((x) => this.lookup(scope, x, ins));
      const attrsForm = expectForm(nf.items[3], "attrs", nf);
      const attrs: Record<string, unknown> = {};
      for (const e of attrsForm.items.slice(1)) {
        const entry = expectList(e, "an attribute like (axis 0)", attrsForm);
        const key = expectName(entry.items[0], "the attribute's name", entry);
        if (entry.items.length < 2) throw parseError(entry.end, `expected a value for attribute ${JSON.stringify(key)}`);
        expectEnd(entry, 2, "an attribute");
        if (Object.prototype.hasOwnProperty.call(attrs, key)) throw parseError(entry.items[0]!.pos, `attribute ${JSON.stringify(key)} is given twice`);
        Object.defineProperty(attrs, key, { value: this.attrValue(entry.items[1]!), enumerable: true, writable: true, configurable: true });
      }
      const outsForm = expectForm(nf.items[4], "outputs", nf);
      const outDefs = outsForm.items.slice(1).map((x) => {
        const l = expectList(x, "an output like (%3 float32 (2))", outsForm);
        const num = this.valueNumber(l.items[0], l);
        const type = this.type(l.items[1], l.items[2], l);
        expectEnd(l, 3, "a node output");
        return { num, type, at: l.items[0]! };
      });
      const node = g.addNode(op, inputValues, attrs, outDefs.map((d) => d.type));
      outDefs.forEach((d, i) => this.define(scope, d.at, d.num, node.outputs[i]!));
      if (nf.items.length > 5) {
        const regions = expectForm(nf.items[5], "regions", nf);
        for (const r of regions.items.slice(1)) node.regions.push(this.graph(expectForm(r, "graph", regions), scope));
        expectEnd(nf, 6, "a node");
      }
    }

    const outputs = expectForm(form.items[4], "outputs", form);
    const outValues: Value[] = [];
    const outNames: string[] = [];
    for (const item of outputs.items.slice(1)) {
      const l = expectList(item, "an output like (output_0 %3)", outputs);
      outNames.push(expectName(l.items[0], "the output's name", l));
      outValues.push(this.lookup(scope, l.items[1]!, l));
      expectEnd(l, 2, "a graph output");
    }
    g.setOutputs(outValues, outNames);
    expectEnd(form, 5, `a ${keyword}`);
    return g;
  }

  module(text: string): { graph: Graph; library: FunctionLibrary } {
    const tops = readSExprs(text);
    if (tops.length === 0) throw parseError({ line: 1, column: 1 }, "expected (module ...), found nothing");
    if (tops.length > 1) throw parseError(tops[1]!.pos, "unexpected text after (module ...)");
    const top = tops[0]!;
    if (top.kind !== "list" || top.items[0]?.kind !== "atom" || (top.items[0] as { text: string }).text !== "module") {
      throw parseError(top.kind === "list" && top.items[0] ? top.items[0].pos : top.pos, `expected (module ...), found ${describe(top)}`);
    }
    const library = new FunctionLibrary();
    let root: Graph | null = null;
    for (const [i, item] of top.items.slice(1).entries()) {
      const l = expectList(item, i === 0 ? "(graph ...) or (function ...)" : "(function ...)", top);
      const head = l.items[0];
      const kw = head && head.kind === "atom" ? head.text : "";
      if (kw === "graph" && i === 0) root = this.graph(l, null);
      else if (kw === "function") {
        const g = this.graph(l, null);
        if (library.functions.has(g.name)) throw parseError(l.items[1]!.pos, `function ${g.name} is defined twice`);
        library.functions.set(g.name, g);
        if (i === 0) root = g;
      } else {
        throw parseError(head ? head.pos : l.pos, i === 0 ? `expected (graph ...) or (function ...), found ${describe(l)}` : `expected (function ...), found ${describe(l)}`);
      }
    }
    if (!root) throw parseError(top.end, "expected the root (graph ...) before ')'");
    return { graph: root, library };
  }
}

/** Reads the S-expression form written by `toSExpr` back into a graph and its library. */
export function parseSExpr(text: string, options: ParseSExprOptions = {}): { graph: Graph; library: FunctionLibrary } {
  checkOptions("parseSExpr", options, optionKeys<ParseSExprOptions>()("variables"));
  return new Reader(options).module(text);
}
