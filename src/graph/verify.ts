/**
 * The graph verifier: checks the invariants every pass must keep (and every builder must
 * establish), and throws a GraphVerificationError naming the graph, the node and the values
 * involved (numbered as the printer numbers them) on the first violation.
 *
 * Checked: every value is defined once, before it is used, in the graph that uses it (a
 * region sees only its own inputs and nodes, never its enclosing graph's values); outputs are
 * defined; registry ops exist, get as many inputs as they declare, and their recorded output
 * types agree with their shape rule (when every input shape is fully known) and their attributes
 * pass the op's own check (OpDef.checkAttrs); structural nodes (cond, while, call, variables)
 * have the regions their declaration names and pass its rule against their regions and callee
 * (ops/structural.ts). With a library, every function in it is verified too.
 */
import { StagecraftError } from "../core/errors.js";
import "../ops/index.js";
import { listStructuralOps, lookupOp, type OpDef, type RegionSignature } from "../ops/registry.js";
import type { FunctionLibrary, Graph, Node, Value, ValueType } from "./ir.js";
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

function typesEqual(a: ValueType, b: ValueType): boolean {
  return a.dtype === b.dtype && a.shape.length === b.shape.length && a.shape.every((d, i) => d === b.shape[i]);
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? "" : "s"}`;
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

  private regions(node: Node, expected: number, labels: readonly string[], where: string, enclosing: Graph[]): void {
    if (node.regions.length !== expected) this.fail(where, `${node.op} needs ${plural(expected, "region")} (${labels.join(", ")}), got ${node.regions.length}`);
    node.regions.forEach((r, i) => this.graph(r, `${where} > region ${i} (${labels[i] ?? "?"})`, enclosing));
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



  private node(node: Node, where: string, enclosing: Graph[]): void {
    const decl = lookupOp(node.op);
    if (!decl) {
      const structural = listStructuralOps().map((d) => d.name);
      this.fail(where, `unknown op ${JSON.stringify(node.op)} (neither a registry op nor a structural op: ${structural.join(", ")})`);
    }
    if (!decl.structural) {
      try {
        decl.checkAttrs?.(node.attrs ?? {}, node.inputs.length);
      } catch (e) {
        this.fail(where, (e as Error).message);
      }
      this.registryNode(node, decl, where);
      return;
    }
    const s = decl.structural;
    const attrs = node.attrs ?? {};
    this.regions(node, s.regions.length, s.regions, where, enclosing);
    let callee: (RegionSignature & { name: string }) | null = null;
    if (s.calleeAttr !== undefined) {
      const name = attrs[s.calleeAttr];
      if (typeof name !== "string") this.fail(where, `attrs.${s.calleeAttr} must be a function name, got ${JSON.stringify(name)}`);
      const f = this.lib?.functions.get(name);
      if (!f) this.fail(where, this.lib ? `calls ${name}, which is not in the function library` : `calls ${name}, but no function library was given`);
      callee = { name, ...signatureOf(f) };
    }
    try {
      s.check({
        inputs: node.inputs.map((v) => v.type),
        outputs: node.outputs.map((v) => v.type),
        attrs,
        regions: node.regions.map(signatureOf),
        callee,
        describeInput: (i) => this.name(node.inputs[i]!),
      });
    } catch (e) {
      this.fail(where, (e as Error).message);
    }
  }
}

function signatureOf(g: Graph): RegionSignature {
  return { inputs: g.inputs.map((v) => v.type), outputs: g.outputs.map((v) => v.type), inputNames: g.inputNames, outputNames: g.outputNames };
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
