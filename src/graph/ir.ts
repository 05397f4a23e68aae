/**
 * The graph IR. A Graph has named, typed inputs and outputs and a list of nodes in
 * topological order. A node applies an op by name: a registry op, or a structural op
 * (ops/structural.ts) that owns regions (cond: then, else; while: cond, body) or calls a
 * function of the library (call). Values carry a dtype and a shape whose unknown dimensions
 * are -1.
 */
import type { DType } from "../core/dtype.js";
import type { SourceLocation } from "../core/errors.js";

export const UNKNOWN_DIM = -1;

export interface ValueType {
  readonly dtype: DType;
  readonly shape: readonly number[];
}

let nextValueId = 1;
let nextNodeId = 1;

export class Value {
  readonly id = nextValueId++;
  constructor(
    public type: ValueType,
    /** The node that produces this value, or null for a graph input. */
    public producer: Node | null,
    /** Output index on the producer (or input index for graph inputs). */
    public index: number,
    public name?: string,
  ) {}
}

export class Node {
  readonly id = nextNodeId++;
  outputs: Value[] = [];
  constructor(
    public op: string,
    public inputs: Value[],
    public attrs: Record<string, unknown>,
    /** Nested graphs for structural ops (cond: then/else; while: cond/body). */
    public regions: Graph[] = [],
    /** Where the user's code created this node. */
    public loc: SourceLocation | null = null,
  ) {}

  addOutputs(types: ValueType[]): Value[] {
    this.outputs = types.map((t, i) => new Value(t, this, i));
    return this.outputs;
  }
}

export class Graph {
  inputs: Value[] = [];
  inputNames: string[] = [];
  outputs: Value[] = [];
  outputNames: string[] = [];
  nodes: Node[] = [];

  constructor(public name: string) {}

  addInput(type: ValueType, name: string): Value {
    const v = new Value(type, null, this.inputs.length, name);
    this.inputs.push(v);
    this.inputNames.push(name);
    return v;
  }

  addNode(op: string, inputs: Value[], attrs: Record<string, unknown>, outTypes: ValueType[], regions: Graph[] = [], loc: SourceLocation | null = null): Node {
    const n = new Node(op, inputs, attrs, regions, loc);
    n.addOutputs(outTypes);
    this.nodes.push(n);
    return n;
  }

  setOutputs(values: Value[], names?: string[]): void {
    this.outputs = values;
    this.outputNames = names ?? values.map((_, i) => `output_${i}`);
  }
}

const usedNames = new Map<string, number>();

/** A process-unique function name: `base` the first time, then `base_1`, `base_2`, ... */
export function uniqueGraphName(base: string): string {
  const n = usedNames.get(base);
  usedNames.set(base, (n ?? 0) + 1);
  return n === undefined ? base : `${base}_${n}`;
}

/** Functions a graph may call (by name); calls may be recursive. */
export class FunctionLibrary {
  readonly functions = new Map<string, Graph>();

  /** Adds a function; names are unique per process (see uniqueGraphName), so never renamed. */
  add(g: Graph): string {
    const existing = this.functions.get(g.name);
    if (existing !== undefined && existing !== g) throw new Error(`two different functions are named ${g.name} in one library`);
    this.functions.set(g.name, g);
    return g.name;
  }

  get(name: string): Graph {
    const g = this.functions.get(name);
    if (!g) throw new Error(`function ${name} is not in the library`);
    return g;
  }
}
