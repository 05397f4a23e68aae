/**
 * The graph verifier: checks the invariants every pass must keep (and every builder must
 * establish), and throws a GraphVerificationError naming the graph, the node and the values
 * involved (numbered as the printer numbers them) on the first violation.
 *
 * Checked: every value is defined once, before it is used, in the graph that uses it (a
 * region sees only its own inputs and nodes, never its enclosing graph's values); outputs are
 * defined; registry ops exist, get as many inputs as they declare, and their recorded output
 * types agree with their shape rule (when every input shape is fully known); cond / while /
 * call / variable / print nodes are well formed and their regions and callees agree with the
 * node's operand and output types. With a library, every function in it is verified too.
 */
import { StagecraftError } from "../core/errors.js";
import "../ops/index.js";
import { getOp, type OpDef } from "../ops/registry.js";
import { STRUCTURAL_OPS, type FunctionLibrary, type Graph, type Node, type Value, type ValueType } from "./ir.js";
import { formatType, numberValues } from "./printer.js";

/** A graph breaks an IR invariant. `path` says where (function > node > region). */
export class GraphVerificationError extends StagecraftError {
  constructor(
    message: string,
    /** Where: `function f > node 2 (cond) > region 0 (then) > node 1 (add)`. */
    readonly path: string,
  ) {
    super(`graph verification failed in ${path}: ${message}`, undefined, null);
  }
}

/**
 * Whether a value of type `from` may flow into a slot of type `to`: same dtype and rank,
 * and each dimension equal or unknown (-1) in `to`.
 */
function assignable(from: ValueType, to: ValueType): boolean {
  if (from.dtype !== to.dtype || from.shape.length !== to.shape.length) return false;
  for (let i = 0; i < to.shape.length; i++) {
    const t = to.shape[i]!;
    if (t >= 0 && from.shape[i] !== t) return false;
  }
  return true;
}

function typesEqual(a: ValueType, b: ValueType): boolean {
  return a.dtype === b.dtype && a.shape.length === b.shape.length && a.shape.every((d, i) => d === b.shape[i]);
}

function isBoolScalar(t: ValueType): boolean {
  return t.dtype === "bool" && t.shape.length === 0;
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? "" : "s"}`;
}

interface VariableLike {
  name: string;
  variableId: number;
  dtype: ValueType["dtype"];
  shape: readonly number[];
}

function asVariable(x: unknown): VariableLike | null {
  if (x === null || typeof x !== "object") return null;
  const v = x as Partial<VariableLike>;
  return typeof v.variableId === "number" && typeof v.name === "string" && typeof v.dtype === "string" && Array.isArray(v.shape) ? (v as VariableLike) : null;
}

function registryOp(name: string): OpDef | null {
  try {
    return getOp(name);
  } catch {
    return null;
  }
}

class Verifier {
  /** Every value defined anywhere so far (across functions), with where it was defined. */
  private readonly definedAt = new Map<Value, string>();
  private numbers = new Map<Value, number>();
  /** Values of each graph being verified (for "used before defined" / "enclosing graph"). */
  private readonly graphOf = new Map<Value, Graph>();
  private readonly verified = new Set<Graph>();

  constructor(private readonly lib: FunctionLibrary | undefined) {}

  fn(g: Graph, label: string): void {
    if (this.verified.has(g)) return;
    this.verified.add(g);
    this.numbers = numberValues(g);
    this.graph(g, label, []);
  }

  private name(v: Value): string {
    const n = this.numbers.get(v);
    if (n !== undefined) return `%${n}`;
    const origin = v.producer ? `output ${v.index} of a ${v.producer.op} node` : `input ${v.index}${v.name ? ` (${v.name})` : ""} of some graph`;
    return `a value from outside this function (${origin}, ${formatType(v.type)})`;
  }

  private fail(path: string, message: string): never {
    throw new GraphVerificationError(message, path);
  }

  private define(v: Value, g: Graph, where: string, path: string): void {
    const prev = this.definedAt.get(v);
    if (prev !== undefined) this.fail(path, `${this.name(v)} is defined twice: by ${prev} and by ${where}`);
    this.definedAt.set(v, where);
    this.graphOf.set(v, g);
  }

  /**
   * @param enclosing the graphs enclosing `g` (outermost first), to tell a value leaking from an
   * enclosing graph from one that belongs nowhere.
   */
  private graph(g: Graph, path: string, enclosing: Graph[]): void {
    if (g.inputNames.length !== g.inputs.length) this.fail(path, `${plural(g.inputs.length, "input")} but ${plural(g.inputNames.length, "input name")}`);
    if (g.outputNames.length !== g.outputs.length) this.fail(path, `${plural(g.outputs.length, "output")} but ${plural(g.outputNames.length, "output name")}`);
    const scope = new Set<Value>();
    const later = new Set<Value>();
    for (const n of g.nodes) for (const v of n.outputs) later.add(v);

    g.inputs.forEach((v, i) => {
      if (v.producer !== null || v.index !== i) this.fail(path, `input ${i} (${g.inputNames[i]}) is ${v.producer ? `an output of a ${v.producer.op} node` : `recorded as input ${v.index}`}, not input ${i} of this graph`);
      this.define(v, g, `input ${i} of ${path}`, path);
      scope.add(v);
    });

    const use = (v: Value, what: string, where: string) => {
      if (scope.has(v)) return;
      if (later.has(v)) this.fail(where, `${what} ${this.name(v)} is used before it is defined`);
      const owner = this.graphOf.get(v);
      if (owner && enclosing.includes(owner)) {
        this.fail(where, `${what} ${this.name(v)} belongs to an enclosing graph; a region may only use its own inputs and the values of its own nodes (pass it as an operand of the node)`);
      }
      this.fail(where, `${what} ${this.name(v)} is not defined in this graph`);
    };

    g.nodes.forEach((node, ni) => {
      const where = `${path} > node ${ni} (${node.op})`;
      node.inputs.forEach((v, i) => use(v, `input ${i}`, where));
      this.node(node, where, [...enclosing, g]);
      node.outputs.forEach((v, i) => {
        if (v.producer !== node || v.index !== i) this.fail(where, `output ${i} (${this.name(v)}) is recorded as ${v.producer ? `output ${v.index} of a ${v.producer.op} node` : "a graph input"}`);
        this.define(v, g, `output ${i} of ${where}`, where);
        scope.add(v);
      });
    });

    g.outputs.forEach((v, i) => use(v, `output ${i} (${g.outputNames[i]})`, path));
  }

  private regions(node: Node, expected: number, labels: string[], where: string, enclosing: Graph[]): void {
    if (node.regions.length !== expected) this.fail(where, `${node.op} needs ${plural(expected, "region")} (${labels.join(", ")}), got ${node.regions.length}`);
    node.regions.forEach((r, i) => this.graph(r, `${where} > region ${i} (${labels[i] ?? "?"})`, enclosing));
  }

  /** Checks a region's inputs against the operands it receives. */
  private regionInputs(r: Graph, operands: readonly Value[], label: string, where: string): void {
    if (r.inputs.length !== operands.length) this.fail(where, `the ${label} region takes ${plural(r.inputs.length, "input")} but the node passes ${plural(operands.length, "operand")}`);
    r.inputs.forEach((v, i) => {
      const o = operands[i]!;
      if (!assignable(o.type, v.type)) this.fail(where, `the ${label} region's input ${i} has type ${formatType(v.type)}, but the operand ${this.name(o)} is ${formatType(o.type)}`);
    });
  }

  /** Arity and the shape rule of a registry op (skipped when an input dim is unknown). */
  private registryNode(node: Node, def: OpDef, where: string): void {
    if (node.regions.length > 0) this.fail(where, `registry op ${node.op} cannot have regions (got ${node.regions.length})`);
    if (!def.variadic && node.inputs.length !== def.inputs.length) {
      this.fail(where, `${node.op} takes ${plural(def.inputs.length, "input")} (${def.inputs.join(", ")}), got ${node.inputs.length}`);
    }
    if (!node.inputs.every((v) => v.type.shape.every((d) => d >= 0))) return;
    let inferred: ValueType[];
    try {
      inferred = def.infer(
        node.inputs.map((v) => ({ dtype: v.type.dtype, shape: v.type.shape })),
        node.attrs ?? {},
      );
    } catch (e) {
      this.fail(where, `the shape rule of ${node.op} rejects its inputs (${node.inputs.map((v) => formatType(v.type)).join(", ")}): ${(e as Error).message}`);
    }
    if (inferred.length !== node.outputs.length) this.fail(where, `${node.op} produces ${plural(inferred.length, "output")}, but the node records ${node.outputs.length}`);
    inferred.forEach((t, i) => {
      const v = node.outputs[i]!;
      if (!typesEqual(t, v.type)) this.fail(where, `output ${i} is recorded as ${formatType(v.type)}, but ${node.op}'s shape rule gives ${formatType(t)}`);
    });
  }

  /** hostCall's attributes, checked before its shape rule reads them. */
  private hostCallAttrs(node: Node, where: string): void {
    const attrs = node.attrs ?? {};
    if (typeof attrs.fnId !== "number") this.fail(where, `attrs.fnId must be a number, got ${JSON.stringify(attrs.fnId)}`);
    const outs = attrs.outputs;
    const ok = Array.isArray(outs) && outs.every((o: unknown) => o !== null && typeof o === "object" && typeof (o as ValueType).dtype === "string" && Array.isArray((o as ValueType).shape));
    if (!ok) this.fail(where, `attrs.outputs must be an array of {dtype, shape} output specs, got ${JSON.stringify(outs)}`);
  }

  /** print's items: text, or the index of one of its inputs. */
  private printAttrs(node: Node, where: string): void {
    const items = (node.attrs ?? {}).items;
    if (!Array.isArray(items)) this.fail(where, "attrs.items must be an array of {text} and {input} items");
    items.forEach((it: unknown, i) => {
      const item = it as { text?: unknown; input?: unknown } | null;
      const ok =
        item !== null &&
        typeof item === "object" &&
        (typeof item.text === "string" || (typeof item.input === "number" && Number.isInteger(item.input) && item.input >= 0 && item.input < node.inputs.length));
      if (!ok) this.fail(where, `print item ${i} must be {text: string} or {input: k} with k < ${node.inputs.length}, got ${JSON.stringify(it)}`);
    });
  }

  private node(node: Node, where: string, enclosing: Graph[]): void {
    const attrs = node.attrs ?? {};
    if (!STRUCTURAL_OPS.has(node.op)) {
      const def = registryOp(node.op);
      if (!def) this.fail(where, `unknown op ${JSON.stringify(node.op)} (neither a registry op nor a structural op: ${[...STRUCTURAL_OPS].join(", ")})`);
      if (node.op === "hostCall") this.hostCallAttrs(node, where);
      else if (node.op === "print") this.printAttrs(node, where);
      this.registryNode(node, def, where);
      return;
    }

    switch (node.op) {
      case "cond": {
        if (node.inputs.length < 1) this.fail(where, "cond needs a predicate input");
        const pred = node.inputs[0]!;
        if (!isBoolScalar(pred.type)) this.fail(where, `the predicate ${this.name(pred)} must be a bool scalar, got ${formatType(pred.type)}`);
        this.regions(node, 2, ["then", "else"], where, enclosing);
        const operands = node.inputs.slice(1);
        const labels = ["then", "else"];
        node.regions.forEach((r, ri) => {
          const label = labels[ri]!;
          this.regionInputs(r, operands, label, where);
          if (r.outputs.length !== node.outputs.length) this.fail(where, `the ${label} region returns ${plural(r.outputs.length, "value")}, but the cond node has ${plural(node.outputs.length, "output")}`);
          r.outputs.forEach((v, i) => {
            const out = node.outputs[i]!;
            if (!assignable(v.type, out.type)) this.fail(where, `the ${label} region's output ${i} is ${formatType(v.type)}, but the cond node's output ${i} is ${formatType(out.type)}`);
          });
        });
        return;
      }
      case "while": {
        const numLoopVars = attrs.numLoopVars;
        if (typeof numLoopVars !== "number" || !Number.isInteger(numLoopVars) || numLoopVars < 0 || numLoopVars > node.inputs.length) {
          this.fail(where, `attrs.numLoopVars must be an integer in [0, ${node.inputs.length}], got ${JSON.stringify(numLoopVars)}`);
        }
        const maxIterations = attrs.maxIterations;
        if (maxIterations !== undefined && !(typeof maxIterations === "number" && maxIterations >= 0 && (Number.isInteger(maxIterations) || maxIterations === Infinity))) {
          this.fail(where, `attrs.maxIterations must be a non-negative integer, got ${JSON.stringify(maxIterations)}`);
        }
        this.regions(node, 2, ["cond", "body"], where, enclosing);
        const [condG, bodyG] = node.regions as [Graph, Graph];
        this.regionInputs(condG, node.inputs, "cond", where);
        this.regionInputs(bodyG, node.inputs, "body", where);
        if (condG.outputs.length !== 1 || !isBoolScalar(condG.outputs[0]!.type)) {
          this.fail(where, `the cond region must return one bool scalar, got (${condG.outputs.map((v) => formatType(v.type)).join(", ")})`);
        }
        if (bodyG.outputs.length !== numLoopVars) this.fail(where, `the body region returns ${plural(bodyG.outputs.length, "value")}, but the loop has ${plural(numLoopVars, "loop variable")}`);
        bodyG.outputs.forEach((v, i) => {
          const slot = bodyG.inputs[i]!.type;
          const condSlot = condG.inputs[i]!.type;
          if (!assignable(v.type, slot) || !assignable(v.type, condSlot)) {
            this.fail(where, `the body region's output ${i} is ${formatType(v.type)}, which does not match loop variable ${i} (${formatType(slot)})`);
          }
        });
        if (node.outputs.length !== numLoopVars) this.fail(where, `the while node has ${plural(node.outputs.length, "output")}, but ${plural(numLoopVars, "loop variable")}`);
        node.outputs.forEach((out, i) => {
          const init = node.inputs[i]!;
          if (!assignable(init.type, out.type) || !assignable(bodyG.outputs[i]!.type, out.type)) {
            this.fail(where, `the while node's output ${i} is ${formatType(out.type)}, but loop variable ${i} is ${formatType(init.type)} initially and ${formatType(bodyG.outputs[i]!.type)} after the body`);
          }
        });
        return;
      }
      case "call": {
        this.regions(node, 0, [], where, enclosing);
        const callee = attrs.callee;
        if (typeof callee !== "string") this.fail(where, `attrs.callee must be a function name, got ${JSON.stringify(callee)}`);
        const f = this.lib?.functions.get(callee);
        if (!f) this.fail(where, this.lib ? `calls ${callee}, which is not in the function library` : `calls ${callee}, but no function library was given`);
        if (node.inputs.length !== f.inputs.length) this.fail(where, `calls ${callee} with ${plural(node.inputs.length, "argument")}, but it takes ${f.inputs.length}`);
        node.inputs.forEach((v, i) => {
          const p = f.inputs[i]!;
          if (!assignable(v.type, p.type)) this.fail(where, `argument ${i} (${this.name(v)}) is ${formatType(v.type)}, but ${callee}'s input ${i} (${f.inputNames[i]}) is ${formatType(p.type)}`);
        });
        if (node.outputs.length !== f.outputs.length) this.fail(where, `the call has ${plural(node.outputs.length, "output")}, but ${callee} returns ${f.outputs.length}`);
        node.outputs.forEach((out, i) => {
          const r = f.outputs[i]!;
          if (!assignable(r.type, out.type)) this.fail(where, `output ${i} is ${formatType(out.type)}, but ${callee}'s output ${i} (${f.outputNames[i]}) is ${formatType(r.type)}`);
        });
        return;
      }
      case "readVariable":
      case "assignVariable": {
        this.regions(node, 0, [], where, enclosing);
        const v = asVariable(attrs.variable);
        if (!v) this.fail(where, `attrs.variable must be a Variable`);
        const vt: ValueType = { dtype: v.dtype, shape: v.shape };
        if (node.op === "readVariable") {
          if (node.inputs.length !== 0 || node.outputs.length !== 1) this.fail(where, `readVariable takes no inputs and has one output, got ${node.inputs.length} and ${node.outputs.length}`);
          if (!assignable(vt, node.outputs[0]!.type)) this.fail(where, `reads variable ${v.name} (${formatType(vt)}) into a ${formatType(node.outputs[0]!.type)} value`);
        } else {
          if (node.inputs.length !== 1 || node.outputs.length !== 0) this.fail(where, `assignVariable takes one input and has no outputs, got ${node.inputs.length} and ${node.outputs.length}`);
          const x = node.inputs[0]!;
          if (!assignable(x.type, vt)) this.fail(where, `assigns ${this.name(x)} (${formatType(x.type)}) to variable ${v.name} (${formatType(vt)})`);
        }
        return;
      }
      default:
        // Structural ops added later: no regions; their attributes are their executors' business.
        this.regions(node, 0, [], where, enclosing);
    }
  }
}

/**
 * Verifies `g` and, when given, every function of `lib`. Throws GraphVerificationError on the
 * first violation; returns nothing when the graph is well formed.
 */
export function verifyGraph(g: Graph, lib?: FunctionLibrary): void {
  const v = new Verifier(lib);
  let rootKey: string | undefined;
  if (lib) for (const [k, f] of lib.functions) if (f === g) rootKey ??= k;
  v.fn(g, `${rootKey !== undefined ? "function" : "graph"} ${g.name}`);
  if (lib) for (const [k, f] of lib.functions) v.fn(f, `function ${k}`);
}
