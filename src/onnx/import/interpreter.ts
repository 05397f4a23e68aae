/**
 * Interprets an ONNX graph with Stagecraft's ops inside a trace: each node's handler calls
 * registry ops, which record graph nodes. Nodes whose inputs are all known at trace time
 * (constants, shapes, and what follows from them) are computed there and then (constant
 * folding), so shape arithmetic never reaches the staged graph, and ops that take a shape or
 * axes as an attribute get them. Model-local functions (ModelProto.functions) are inlined.
 */
import type { Tensor } from "../../core/tensor.js";
import type { Variable } from "../../core/variable.js";
import { withEagerContext } from "../../core/context.js";
import { StagecraftError } from "../../core/errors.js";
import { has, int64, type ValueInfoProto, type AttributeProto, type FunctionProto, type GraphProto, type NodeProto, type TensorProto } from "../protobuf.js";
import { OnnxError, OnnxModelError, OnnxUnsupportedError } from "../errors.js";
import { handlerFor, STANDARD_DOMAINS, type HandlerResult } from "./op-table.js";
import { NodeContext } from "./node-context.js";
import { Scope, Slot } from "./scope.js";
import { dtypeOfElemType } from "../dtypes.js";
import { storageBytes } from "../../core/dtype.js";
import { RunCounter, TraceBudget, type ModelLimits } from "./limits.js";

export interface InterpreterEnv {
  /** Opset version per domain ("" for the standard one). */
  opsets: ReadonlyMap<string, number>;
  /** Model-local functions by "domain::name". */
  functions: ReadonlyMap<string, FunctionProto>;
  /** Reads a tensor proto (attributes, subgraph initializers) under the load limits. */
  readTensor(p: TensorProto, what: string): Tensor;
  /** The load options' limits (elements, bytes, iterations, inlined nodes, time). */
  limits: ModelLimits;
  /** Constant nodes whose value is a trainable Variable instead (constant-weights.ts). */
  constantWeights?: ReadonlyMap<NodeProto, Variable>;
}

/** Function-call depth beyond which a model is refused (functions calling themselves). */
const MAX_FUNCTION_DEPTH = 64;

export class Interpreter {
  private depth = 0;
  /** What the current trace has used of the limits (a fresh one per trace: beginTrace). */
  private budget: TraceBudget;
  private readonly run: RunCounter;
  constructor(private readonly env: InterpreterEnv) {
    this.run = new RunCounter(env.limits);
    this.budget = new TraceBudget(env.limits, this.run);
  }

  /** Starts the budget of a new trace of the model. */
  beginTrace(): void {
    this.budget = new TraceBudget(this.env.limits, this.run);
  }

  /**
   * Runs the nodes of `g` in `scope` (its inputs and initializers already bound) and returns
   * the slots of its outputs.
   */
  runNodes(
    nodes: readonly NodeProto[],
    scope: Scope,
    outputs: readonly string[],
    what: string,
    attrScope: Map<string, AttributeProto> | null = null,
    declared: readonly ValueInfoProto[] = [],
  ): Slot[] {
    for (const node of nodes) this.runNode(node, scope, attrScope);
    return outputs.map((name, i) => {
      const s = scope.get(name);
      if (s === undefined) throw new OnnxModelError(`${what}: output ${JSON.stringify(name)} is not produced by any node, input or initializer`, "onnx.load");
      const info = declared[i];
      if (info !== undefined) checkDeclared(s, info, what);
      return s;
    });
  }

  /** Runs a subgraph (If branch, Loop/Scan body) in a scope nested in `outer`, inputs bound in order. */
  runGraph(g: GraphProto, outer: Scope, inputs: Slot[], what: string): Slot[] {
    if (inputs.length !== g.input.length) {
      throw new OnnxModelError(`${what} takes ${g.input.length} inputs but is given ${inputs.length}`, "onnx.load");
    }
    const scope = new Scope(outer);
    g.input.forEach((v, i) => scope.set(v.name, inputs[i]!));
    for (const init of g.initializer) {
      const t = this.env.readTensor(init, `initializer ${JSON.stringify(init.name)} of ${what}`);
      scope.set(init.name, Slot.of(t, t));
    }
    if (g.sparse_initializer.length > 0) throw new OnnxUnsupportedError(`${what} has sparse initializers`, "onnx.load");
    return this.runNodes(
      g.node,
      scope,
      g.output.map((o) => o.name),
      what,
      null,
      g.output,
    );
  }

  private runNode(node: NodeProto, scope: Scope, attrScope: Map<string, AttributeProto> | null): void {
    const slots = node.input.map((name) => {
      if (name === "") return null;
      const s = scope.get(name);
      if (s === undefined) throw new OnnxModelError(`${describeNode(node)}: input ${JSON.stringify(name)} is not produced by any earlier node, graph input or initializer`, "onnx.load");
      return s;
    });
    const attrs = attributeMap(node, attrScope);
    const domain = node.domain ?? "";
    const fn = this.env.functions.get(`${domain}::${node.op_type}`);
    let results: (Tensor | Slot | null)[];
    const weight = this.env.constantWeights?.get(node);
    if (weight !== undefined) {
      // Read where it is used, like a trainable initializer; never folded, and no value known
      // at trace time (what reads one there stayed a constant: constant-weights.ts).
      results = [Slot.lazy(() => weight.read(), null, false)];
    } else if (fn !== undefined) {
      results = this.callFunction(fn, node, slots, attrs, scope);
    } else {
      results = this.applyHandler(node, domain, slots, attrs, scope);
    }
    node.output.forEach((name, i) => {
      if (name === "") return;
      // ONNX graphs are in SSA form: a second writer of a name would silently replace the first
      // value (the last writer winning), so it is refused, as onnx.checker does.
      if (scope.hasOwn(name) || node.output.indexOf(name) !== i) {
        throw new OnnxModelError(`${describeNode(node)}: output ${JSON.stringify(name)} is already a value of the graph (an input, initializer or another node's output); each value has one writer`, "onnx.load");
      }
      const r = results[i];
      if (r === undefined || r === null) {
        throw new OnnxUnsupportedError(`${describeNode(node)}: output ${i} (${JSON.stringify(name)}) is not computed by this importer`, "onnx.load");
      }
      const slot = r instanceof Slot ? r : Slot.of(r);
      if (slot.isTensor) chargeValue(this.budget, slot.tensor(), `${describeNode(node)} (output ${JSON.stringify(name)})`);
      scope.set(name, slot);
    });
  }

  private applyHandler(node: NodeProto, domain: string, slots: (Slot | null)[], attrs: Map<string, AttributeProto>, scope: Scope): (Tensor | Slot | null)[] {
    const h = handlerFor(domain, node.op_type);
    if (h === undefined) {
      if (!STANDARD_DOMAINS.has(domain) && !this.env.opsets.has(domain)) {
        throw new OnnxModelError(`${describeNode(node)}: domain ${JSON.stringify(domain)} is not in the model's opset_import`, "onnx.load");
      }
      const where = STANDARD_DOMAINS.has(domain) ? "" : ` of domain ${JSON.stringify(domain)}`;
      throw new OnnxUnsupportedError(`op ${node.op_type}${where} is not supported by the Stagecraft importer`, "onnx.load");
    }
    const opset = this.env.opsets.get(STANDARD_DOMAINS.has(domain) ? "" : domain) ?? this.env.opsets.get("ai.onnx");
    if (opset === undefined) throw new OnnxModelError(`${describeNode(node)}: domain ${JSON.stringify(domain)} is not in the model's opset_import`, "onnx.load");
    if (h.since !== undefined && opset < h.since) {
      throw new OnnxUnsupportedError(`${describeNode(node)}: opset ${opset} semantics of ${node.op_type} are not supported (only opset ${h.since} and newer)`, "onnx.load");
    }
    const ctx = new NodeContext(node, slots, opset, attrs, (g, inputs, what) => this.runGraph(g, scope, inputs, what), (p, what) => this.env.readTensor(p, what), this.budget);
    const hasSubgraphs = node.attribute.some((a) => has(a, "g") || a.graphs.length > 0);
    const foldable = !h.random && !hasSubgraphs && slots.every((s) => s === null || s.canFold);
    const run = (): HandlerResult => {
      try {
        return h.run(ctx);
      } catch (e) {
        throw annotate(e, node);
      }
    };
    const result = foldable ? withEagerContext(run) : run();
    const list = Array.isArray(result) ? result : [result];
    if (foldable) return list.map((r) => (r === null || r instanceof Slot ? r : Slot.of(r, r)));
    return list;
  }

  private callFunction(fn: FunctionProto, node: NodeProto, slots: (Slot | null)[], attrs: Map<string, AttributeProto>, outer: Scope): (Tensor | Slot | null)[] {
    if (++this.depth > MAX_FUNCTION_DEPTH) {
      this.depth = 0;
      throw new OnnxUnsupportedError(`function ${fn.name} calls functions more than ${MAX_FUNCTION_DEPTH} deep (recursive functions are not expressible in ONNX)`, "onnx.load");
    }
    // (the depth guard bounds recursion; this bounds fan-out: f calling g twice, g calling h twice, ...)
    this.budget.chargeInlined(fn.node.length, fn.name);
    try {
      // A function sees only its own inputs: a fresh scope (the outer one is not visible).
      void outer;
      const scope = new Scope(null);
      fn.input.forEach((name, i) => {
        const s = slots[i];
        if (s !== null && s !== undefined) scope.set(name, s);
      });
      // Attribute values: the call's, else the function's defaults.
      const fnAttrs = new Map<string, AttributeProto>();
      for (const a of fn.attribute_proto) fnAttrs.set(a.name, a);
      for (const [k, v] of attrs) fnAttrs.set(k, v);
      return this.runNodes(fn.node, scope, fn.output, `function ${fn.name}`, fnAttrs);
    } finally {
      this.depth--;
    }
  }
}

/** The attributes of a node by name; references to a calling function's attributes resolved. */
function attributeMap(node: NodeProto, attrScope: Map<string, AttributeProto> | null): Map<string, AttributeProto> {
  const m = new Map<string, AttributeProto>();
  for (const a of node.attribute) {
    if (m.has(a.name)) throw new OnnxModelError(`${describeNode(node)}: attribute ${a.name} is given twice`, "onnx.load");
    if (a.ref_attr_name) {
      const v = attrScope?.get(a.ref_attr_name);
      if (v !== undefined) m.set(a.name, v);
      continue;
    }
    m.set(a.name, a);
  }
  return m;
}

/**
 * Refuses an output whose value is not of the type the graph declares for it (an output
 * declared int64 that the nodes compute as float32): the caller would get a value of another
 * type than the model says, without an error. Dims are compared where both are fixed.
 */
function checkDeclared(s: Slot, info: ValueInfoProto, what: string): void {
  const tt = info.type?.tensor_type;
  // (protobufjs gives null for an absent message field, as a mutated model may have it)
  if (tt === undefined || tt === null || !s.isTensor) return;
  const t = s.tensor();
  const name = JSON.stringify(info.name);
  if (has(tt, "elem_type") && tt.elem_type !== 0) {
    const dtype = dtypeOfElemType(tt.elem_type, `output ${name} of ${what}`);
    if (t.dtype !== dtype) throw new OnnxModelError(`${what}: output ${name} is declared ${dtype} but the graph computes it as ${t.dtype}`, "onnx.load");
  }
  if (tt.shape !== undefined && tt.shape !== null) {
    const dims = (tt.shape.dim ?? []).map((d) => (has(d, "dim_value") ? int64(d.dim_value, `a dimension of ${name}`) : null));
    const ok = dims.length === t.rank && dims.every((d, i) => d === null || t.shape[i]! < 0 || d === t.shape[i]);
    if (!ok) {
      const declared = `[${dims.map((d) => (d === null ? "?" : String(d))).join(", ")}]`;
      throw new OnnxModelError(`${what}: output ${name} is declared with shape ${declared} but the graph computes shape [${t.shape.join(", ")}]`, "onnx.load");
    }
  }
}

/** Charges a value's bytes (its known dims; a dim known only at run time counts as 1). */
function chargeValue(budget: TraceBudget, t: Tensor, what: string): void {
  let size = storageBytes(t.dtype);
  for (const d of t.shape) size *= d < 0 ? 1 : d;
  budget.chargeBytes(size, what);
}

export function describeNode(node: NodeProto): string {
  return `${node.op_type}${node.name ? ` node ${JSON.stringify(node.name)}` : ""}`;
}

/** The node path an error raised inside subgraphs carries: "(in ONNX Loop node "outer" > Add node "g")". */
const NODE_PATH = / \(in ONNX (.+)\)$/;

/**
 * Adds the ONNX node to an error's message (typed errors keep their class). An error from a
 * subgraph already names its inner nodes: the outer node is put in front of that one path, so
 * nested Loops and Ifs read as a path, never as repeated suffixes.
 */
function annotate(e: unknown, node: NodeProto): unknown {
  if (e instanceof OnnxError) return e;
  if (e instanceof StagecraftError) {
    const inner = NODE_PATH.exec(e.message);
    const path = inner ? `${describeNode(node)} > ${inner[1]}` : describeNode(node);
    e.message = `${inner ? e.message.slice(0, inner.index) : e.message} (in ONNX ${path})`;
    return e;
  }
  if (e instanceof RangeError && /call stack/i.test(e.message)) {
    return new OnnxUnsupportedError(`${describeNode(node)}: the model nests too deeply to interpret`, "onnx.load");
  }
  return e;
}
