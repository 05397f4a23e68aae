/**
 * The staging handler: while a function is traced, op calls record nodes into a graph and
 * return symbolic tensors. Tensors from outside the graph (eager tensors, or symbolic values
 * of an enclosing graph) are captured as extra inputs; variables are read and assigned by
 * reference through readVariable/assignVariable nodes.
 */
import { ValueError, StagecraftError, userLocation } from "../core/errors.js";
import { Tensor } from "../core/tensor.js";
import type { Variable } from "../core/variable.js";
import type { OpHandler } from "../core/context.js";
import type { OpDef } from "../ops/registry.js";
import { assignVariableOp, readVariableOp } from "../ops/structural.js";
import { Graph, uniqueGraphName, type FunctionLibrary, type Value, type ValueType } from "../graph/ir.js";

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
    const node = this.graph.addNode(def.name, values, attrs ?? {}, types, [], userLocation());
    return node.outputs.map((v) => this.symbolic(v));
  }

  /** Records a structural node (ops/structural.ts: its declaration's name) whose inputs are tensors. */
  addStructural(op: string, inputs: Tensor[], attrs: Record<string, unknown>, outTypes: ValueType[], regions: Graph[] = []): Tensor[] {
    const values = inputs.map((t) => this.valueOf(t));
    const node = this.graph.addNode(op, values, attrs, outTypes, regions, userLocation());
    return node.outputs.map((v) => this.symbolic(v));
  }

  readVariable(v: Variable): Tensor {
    // (the graph input standing for v, where there is one: after calls clear the known values)
    const known = this.variableValues.get(v) ?? this.variableInputs.get(v);
    if (known) return known;
    if (this.variablesAsInputs && this.parent?.variablesAsInputs) {
      // A region (or a backward graph) reads the enclosing graph's variable input.
      const outer = this.parent.readVariable(v);
      this.variableValues.set(v, outer);
      return outer;
    }
    if (this.variablesAsInputs) {
      const value = this.graph.addInput({ dtype: v.dtype, shape: v.shape }, `variable_${this.captures.length}`);
      this.captures.push({ tensor: v.storedValue, value, variable: v });
      const t = this.symbolic(value);
      this.variableValues.set(v, t);
      this.variableInputs.set(v, t);
      return t;
    }
    const [value] = this.addStructural(readVariableOp.name, [], { variable: v }, [{ dtype: v.dtype, shape: v.shape }]);
    this.variableValues.set(v, value!);
    return value!;
  }

  assignVariable(v: Variable, value: Tensor): void {
    this.addStructural(assignVariableOp.name, [value], { variable: v }, []);
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
