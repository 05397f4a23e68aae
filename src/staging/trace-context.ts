/**
 * The staging handler: while a function is traced, op calls record nodes into a graph and
 * return symbolic tensors. Tensors from outside the graph (eager tensors, or symbolic values
 * of an enclosing graph) are captured as extra inputs; variables are read and assigned by
 * reference through readVariable/assignVariable nodes.
 */
import { ValueError, StagecraftError, executing, gradientLocation, userLocation } from "../core/errors.js";
import { checkAllocation } from "../core/shape.js";
import { Tensor } from "../core/tensor.js";
import type { Variable } from "../core/variable.js";
import type { OpHandler } from "../core/context.js";
import type { OpDef } from "../ops/registry.js";
import { assignVariableOp, readVariableOp } from "../ops/structural.js";
import { Graph, uniqueGraphName, type FunctionLibrary, type Value, type ValueType } from "../graph/ir.js";
import { constantAttrsOf } from "../ops/constant.js";
import { makeNode, replaceAllUses } from "../graph/passes/util.js";
import { calleeOf } from "../graph/declarations.js";
import { ALL, registerTrace, variablesAssignedBy } from "./assigned-variables.js";

/** What a symbolic tensor's `symbol` holds. */
export interface SymbolRef {
  readonly value: Value;
  readonly ctx: TraceContext;
}

/** Raised when a tensor from a finished or unrelated trace is used. */
export class StagingError extends StagecraftError {}

export interface Capture {
  /** The outside tensor (concrete, or symbolic in an enclosing context). */
  tensor: Tensor;
  /** The graph input standing for it. */
  value: Value;
  /** Set when the input stands for a variable's value at call time (variablesAsInputs mode). */
  variable?: Variable;
}

export class TraceContext implements OpHandler {
  readonly graph: Graph;
  readonly captures: Capture[] = [];
  private readonly captureByTensor = new Map<number, Value>();
  /** Variables touched by this graph, with the symbolic value each holds at this point. */
  readonly variableValues = new Map<Variable, Tensor>();
  /** variablesAsInputs mode: the graph input standing for each variable read (never cleared). */
  readonly variableInputs = new Map<Variable, Tensor>();
  /**
   * Variables a node emitted here (a cond, loop or call) may have assigned: their value is
   * neither one known here nor the one the graph started with, so a read reads them when the
   * graph runs (`ALL`: any variable, after a call of a function still being traced).
   */
  private readonly stale = new Set<Variable>();
  private staleAll = false;
  /**
   * A region of a structural node (a cond's branch, a loop's condition or body): its variable
   * reads are readVariable nodes, which the construct hoists into operands once its regions are
   * traced (region-variables.ts), rather than reads of the enclosing graph's inputs.
   */
  structuralRegion = false;
  active = true;

  constructor(
    name: string,
    readonly library: FunctionLibrary,
    readonly parent: TraceContext | null = null,
    /** Whether this trace may create variables (the first trace of a staged function). */
    readonly mayCreateVariables = true,
    readonly functionName = name,
    /** Read variables through graph inputs (captures) instead of readVariable nodes. */
    readonly variablesAsInputs = false,
    /** A region (branch or loop body) of an enclosing graph, rather than a function. */
    readonly isRegion = false,
  ) {
    // Function graphs get process-unique names: libraries refer to them by name.
    this.graph = new Graph(isRegion ? name : uniqueGraphName(name));
    functionNames.set(this.graph, functionName);
    registerTrace(this.graph, this);
  }

  symbolic(value: Value): Tensor {
    return new Tensor(null, value.type.shape, value.type.dtype, undefined, { value, ctx: this } satisfies SymbolRef);
  }

  /** A graph input with a fresh symbolic tensor standing for it. */
  placeholder(type: ValueType, name: string): Tensor {
    return this.symbolic(this.graph.addInput(type, name));
  }

  /** The value standing for `t` in this graph, capturing it if it comes from outside. */
  valueOf(t: Tensor): Value {
    const ref = t.symbol as SymbolRef | null;
    if (ref && ref.ctx === this) return ref.value;
    if (ref && !this.isAncestor(ref.ctx)) {
      throw new StagingError(
        `a symbolic tensor (shape [${t.shape.join(", ")}], ${t.dtype}) from ${ref.ctx.active ? "another" : "a finished"} staged function ` +
          `"${ref.ctx.functionName}" was used while staging "${this.functionName}": return it from that function instead of leaking it`,
      );
    }
    let v = this.captureByTensor.get(t.id);
    if (v === undefined) {
      v = this.graph.addInput({ dtype: t.dtype, shape: t.shape }, `capture_${this.captures.length}`);
      this.captures.push({ tensor: t, value: v });
      this.captureByTensor.set(t.id, v);
    }
    return v;
  }

  private isAncestor(ctx: TraceContext): boolean {
    for (let c = this.parent; c; c = c.parent) if (c === ctx) return true;
    return false;
  }

  run(def: OpDef, inputs: Tensor[], attrs: any): Tensor[] {
    const values = inputs.map((t) => this.valueOf(t));
    const types = def.infer(inputs, attrs);
    for (const t of types) checkAllocation(def.name, t.shape, t.dtype);
    const node = this.graph.addNode(def.name, values, attrs ?? {}, types, [], nodeLocation());
    return node.outputs.map((v) => this.symbolic(v));
  }

  /** Records a structural node (ops/structural.ts: its declaration's name) whose inputs are tensors. */
  addStructural(op: string, inputs: Tensor[], attrs: Record<string, unknown>, outTypes: ValueType[], regions: Graph[] = []): Tensor[] {
    const values = inputs.map((t) => this.valueOf(t));
    const node = this.graph.addNode(op, values, attrs, outTypes, regions, nodeLocation());
    if (regions.length > 0 || calleeOf(node) !== null) this.forgetAssigned(variablesAssignedBy(node, this.library));
    return node.outputs.map((v) => this.symbolic(v));
  }

  /** After a node that may assign `assigned`: what was known of their values no longer holds. */
  private forgetAssigned(assigned: ReadonlySet<Variable> | typeof ALL): void {
    if (assigned === ALL) {
      this.variableValues.clear();
      this.staleAll = true;
      return;
    }
    for (const v of assigned) {
      this.variableValues.delete(v);
      this.stale.add(v);
    }
  }

  readVariable(v: Variable): Tensor {
    const stale = this.staleAll || this.stale.has(v);
    // (the graph input standing for v, where there is one and no node here may have assigned v since)
    const known = this.variableValues.get(v) ?? (stale ? undefined : this.variableInputs.get(v));
    if (known) return known;
    if (stale || this.structuralRegion || !this.variablesAsInputs) return this.readVariableNode(v);
    if (this.parent?.variablesAsInputs) {
      // A region (or a backward graph) reads the enclosing graph's variable input.
      const outer = this.parent.readVariable(v);
      this.variableValues.set(v, outer);
      return outer;
    }
    const value = this.graph.addInput({ dtype: v.dtype, shape: v.shape }, `variable_${this.captures.length}`);
    this.captures.push({ tensor: v.storedValue, value, variable: v });
    const t = this.symbolic(value);
    this.variableValues.set(v, t);
    this.variableInputs.set(v, t);
    return t;
  }

  /** A readVariable node: the variable's value when the graph runs. */
  private readVariableNode(v: Variable): Tensor {
    const [value] = this.addStructural(readVariableOp.name, [], { variable: v }, [{ dtype: v.dtype, shape: v.shape }]);
    this.variableValues.set(v, value!);
    return value!;
  }

  assignVariable(v: Variable, value: Tensor): void {
    this.addStructural(assignVariableOp.name, [value], { variable: v }, []);
    this.stale.delete(v);
    this.variableValues.set(v, value.symbol && (value.symbol as SymbolRef).ctx === this ? value : this.symbolic(this.valueOf(value)));
  }

  createVariable(name: string): void {
    if (!this.mayCreateVariables) {
      throw new ValueError(
        `variable ${name} is created while retracing staged function "${this.functionName}"; variables may only be created on ` +
          `the first trace (create them outside the function, or once inside sc.initScope and keep them)`,
        "variable",
        userLocation(),
      );
    }
  }
}

/**
 * Where a node traced now was written: the user's line, or, while a graph is replayed (a
 * gradient split, a recomputation) or a gradient rule runs, the line of the op it stands for;
 * while graph AD traces a gradient, marked with the function differentiated (so the errors the
 * node raises when it runs name it).
 */
function nodeLocation() {
  return gradientLocation(executing.at ?? userLocation());
}

/** The user's name of the function a graph was traced from (graph names are made unique). */
const functionNames = new WeakMap<Graph, string>();

export function functionNameOf(g: Graph): string {
  return functionNames.get(g) ?? g.name;
}

/** The tensors standing for variables' values in `ctx` and the contexts it is nested in. */
export function variableTensors(ctx: TraceContext): [Variable, Tensor][] {
  const found: [Variable, Tensor][] = [];
  for (let c: TraceContext | null = ctx; c; c = c.parent) found.push(...c.variableInputs, ...c.variableValues);
  return found;
}

/**
 * Makes reads of variables in `region` resolve to `replacements[k]` wherever `originals[k]` is
 * the tensor standing for that variable in `outer` (so a tape watching those tensors sees the
 * reads that calls made in the region do).
 */
export function seedVariableReads(region: TraceContext, outer: TraceContext, originals: readonly Tensor[], replacements: readonly Tensor[]): void {
  for (const [v, t] of variableTensors(outer)) {
    const k = originals.indexOf(t);
    if (k >= 0) region.variableInputs.set(v, replacements[k]!);
  }
}

/**
 * Turns captured inputs of a finished trace into nodes of its graph, for graphs that are
 * called with their declared inputs only (recursion by name, gradient splits): an eager
 * tensor (immutable) becomes a constant node, a variable's value a readVariable node (read
 * when the graph runs, as the captured input would have been). Only eager tensors of at most
 * `maxElements`, and captures `embeddable` accepts, are embedded. Returns the captures left as
 * inputs (symbolic values of an enclosing trace, larger tensors, the others).
 */
export function embedCaptures(ctx: TraceContext, maxElements = Infinity, embeddable: (c: Capture) => boolean = () => true): Capture[] {
  const g = ctx.graph;
  const embedded = new Set<Value>();
  const nodes = ctx.captures.flatMap((c) => {
    if (!embeddable(c) || (!c.variable && (c.tensor.isSymbolic || c.tensor.size > maxElements))) return [];
    const type = { dtype: c.value.type.dtype, shape: c.value.type.shape.slice() };
    const node = c.variable ? makeNode(readVariableOp.name, [], { variable: c.variable }, [type]) : makeNode("constant", [], { ...constantAttrsOf(c.tensor) }, [type]);
    replaceAllUses(g, c.value, node.outputs[0]!);
    embedded.add(c.value);
    return [node];
  });
  if (nodes.length === 0) return ctx.captures;
  g.nodes.unshift(...nodes);
  const keep = g.inputs.map((v) => !embedded.has(v));
  g.inputNames = g.inputNames.filter((_, i) => keep[i]);
  g.inputs = g.inputs.filter((_, i) => keep[i]);
  g.inputs.forEach((v, i) => (v.index = i));
  const left = ctx.captures.filter((c) => !embedded.has(c.value));
  ctx.captures.splice(0, ctx.captures.length, ...left);
  return left;
}
