/**
 * What an ONNX op handler sees of one node: its inputs (as Stagecraft tensors, with the values
 * known while tracing where there are some), its attributes (typed getters with defaults),
 * the opset version in force, and a way to run subgraphs. Every complaint about the node is an
 * OnnxModelError naming the node.
 */
import type { Tensor } from "../../core/tensor.js";
import type { DType } from "../../core/dtype.js";
import { has, int64, utf8, AttributeType, type AttributeProto, type GraphProto, type NodeProto, type TensorProto } from "../protobuf.js";
import { OnnxLimitError, OnnxModelError, OnnxUnsupportedError } from "../errors.js";
import { dtypeOfElemType } from "../dtypes.js";
import type { Slot } from "./scope.js";
import type { TraceBudget } from "./limits.js";

/** Runs a subgraph (an If branch, a Loop body) with `inputs` bound to its formal inputs. */
export type SubgraphRunner = (g: GraphProto, inputs: Slot[], what: string) => Slot[];

export class NodeContext {
  constructor(
    readonly node: NodeProto,
    /** The node's inputs in order; null where an optional input is omitted (""). */
    readonly slots: (Slot | null)[],
    /** Version of the node's domain in the model's opset_import. */
    readonly opset: number,
    private readonly attrs: Map<string, AttributeProto>,
    readonly runSubgraph: SubgraphRunner,
    readonly readTensor: (p: TensorProto, what: string) => Tensor,
    /** What the trace has used of the load options' limits. */
    readonly budget: TraceBudget,
  ) {}

  /** Largest number of elements a tensor the model makes may have (LoadOptions.maxElements). */
  get maxElements(): number {
    return this.budget.limits.maxElements;
  }
  /** Largest trip count of one Loop (LoadOptions.maxLoopIterations). */
  get maxLoopIterations(): number {
    return this.budget.limits.maxLoopIterations;
  }

  /**
   * Refuses, before anything is allocated, an output whose shape comes from values in the model
   * (ConstantOfShape, Expand, Tile, Range, Pad, Resize, ...) when it is invalid or too large.
   */
  checkShape(shape: readonly number[], what = "the output"): void {
    let size = 1;
    for (const d of shape) {
      if (!Number.isInteger(d) || d < 0) throw this.fail(`${what} would have an invalid dimension ${d} (shape [${shape.join(", ")}])`);
      size *= d;
    }
    if (size > this.maxElements) {
      throw new OnnxLimitError(`${this.label}: ${what} would have ${size.toExponential(3)} elements (shape [${shape.join(", ")}]), more than the limit of ${this.maxElements}`, "onnx.load");
    }
    // (at least a byte an element: refused before allocating when even that passes the total)
    this.budget.checkBytes(size, `${this.label}: ${what} (shape [${shape.join(", ")}])`);
  }

  /** "Op 'name'" for messages. */
  get label(): string {
    return `${this.node.op_type}${this.node.name ? ` node ${JSON.stringify(this.node.name)}` : ""}`;
  }

  fail(message: string): OnnxModelError {
    return new OnnxModelError(`${this.label}: ${message}`, "onnx.load");
  }
  unsupported(message: string): OnnxUnsupportedError {
    return new OnnxUnsupportedError(`${this.label}: ${message}`, "onnx.load");
  }

  get numInputs(): number {
    return this.slots.length;
  }
  /** Whether input i is given (present and not ""). */
  hasInput(i: number): boolean {
    return i < this.slots.length && this.slots[i] !== null;
  }
  /** Input i as a tensor (required). */
  input(i: number): Tensor {
    const s = this.slots[i];
    if (s === undefined || s === null) throw this.fail(`needs input ${i}, which is missing`);
    return s.tensor();
  }
  /** Input i, or null when omitted. */
  optional(i: number): Tensor | null {
    const s = this.slots[i];
    return s === undefined || s === null ? null : s.tensor();
  }
  /** The slot of input i (sequences and optionals travel as slots). */
  slot(i: number): Slot {
    const s = this.slots[i];
    if (s === undefined || s === null) throw this.fail(`needs input ${i}, which is missing`);
    return s;
  }
  /** All given inputs from i on (variadic ops). */
  inputsFrom(i: number): Tensor[] {
    const out: Tensor[] = [];
    for (let k = i; k < this.slots.length; k++) if (this.slots[k] !== null) out.push(this.slots[k]!.tensor());
    return out;
  }
  /** The value of input i known while tracing (a shape, axes, ...), as a concrete tensor. */
  known(i: number, what = `input ${i}`): Tensor {
    const s = this.slots[i];
    if (s === undefined || s === null) throw this.fail(`needs input ${i} (${what}), which is missing`);
    const k = s.known();
    if (k === null) {
      throw new OnnxUnsupportedError(
        `${this.label}: ${what} must be known when the model is traced (it sets a shape, axes or sizes), but it is computed from the model's data at run time`,
        "onnx.load",
      );
    }
    return k;
  }
  /** Input i's known values as integers (shapes, axes, pads), or `def` when omitted. */
  knownInts(i: number, what: string): number[];
  knownInts(i: number, what: string, def: number[] | null): number[] | null;
  knownInts(i: number, what: string, def?: number[] | null): number[] | null {
    if (!this.hasInput(i)) {
      if (def !== undefined) return def;
      throw this.fail(`needs input ${i} (${what}), which is missing`);
    }
    const t = this.known(i, what);
    const d = t.dataSync();
    const out = new Array<number>(d.length);
    for (let k = 0; k < d.length; k++) {
      const v = Number(d[k]);
      if (!Number.isInteger(v)) throw this.fail(`${what} must hold integers, got ${v}`);
      out[k] = v;
    }
    return out;
  }
  /** Input i's known values as numbers. */
  knownNumbers(i: number, what: string): number[] {
    return Array.from(this.known(i, what).dataSync(), Number);
  }

  // Attributes -----------------------------------------------------------------------------

  hasAttr(name: string): boolean {
    return this.attrs.has(name);
  }
  private attr(name: string, type: number): AttributeProto | undefined {
    const a = this.attrs.get(name);
    if (a === undefined) return undefined;
    if (a.type !== type && a.type !== AttributeType.UNDEFINED) {
      throw this.fail(`attribute ${name} has type ${typeName(a.type)}, expected ${typeName(type)}`);
    }
    return a;
  }
  int(name: string, def: number): number;
  int(name: string, def?: number): number | undefined;
  int(name: string, def?: number): number | undefined {
    const a = this.attr(name, AttributeType.INT);
    return a === undefined ? def : int64(a.i, `attribute ${name} of ${this.label}`);
  }
  float(name: string, def: number): number;
  float(name: string, def?: number): number | undefined;
  float(name: string, def?: number): number | undefined {
    const a = this.attr(name, AttributeType.FLOAT);
    return a === undefined ? def : a.f;
  }
  string(name: string, def: string): string;
  string(name: string, def?: string): string | undefined;
  string(name: string, def?: string): string | undefined {
    const a = this.attr(name, AttributeType.STRING);
    return a === undefined ? def : utf8(a.s);
  }
  ints(name: string, def: number[]): number[];
  ints(name: string, def?: number[]): number[] | undefined;
  ints(name: string, def?: number[]): number[] | undefined {
    const a = this.attr(name, AttributeType.INTS);
    return a === undefined ? def : a.ints.map((v) => int64(v, `attribute ${name} of ${this.label}`));
  }
  floats(name: string, def?: number[]): number[] | undefined {
    const a = this.attr(name, AttributeType.FLOATS);
    return a === undefined ? def : a.floats.slice();
  }
  strings(name: string, def?: string[]): string[] | undefined {
    const a = this.attr(name, AttributeType.STRINGS);
    return a === undefined ? def : a.strings.map(utf8);
  }
  tensor(name: string): Tensor | undefined {
    const a = this.attr(name, AttributeType.TENSOR);
    if (a === undefined) return undefined;
    if (!has(a, "t")) throw this.fail(`attribute ${name} holds no tensor`);
    return this.readTensor(a.t!, `attribute ${name} of ${this.label}`);
  }
  graph(name: string): GraphProto {
    const a = this.attr(name, AttributeType.GRAPH);
    if (a === undefined || !has(a, "g")) throw this.fail(`needs the graph attribute ${name}`);
    return a.g!;
  }
  /** A dtype attribute (Cast's `to`, ...). */
  dtypeAttr(name: string, def?: DType): DType {
    const v = this.int(name);
    if (v === undefined) {
      if (def !== undefined) return def;
      throw this.fail(`needs the attribute ${name}`);
    }
    return dtypeOfElemType(v, `attribute ${name} of ${this.label}`);
  }
  /** The names of the attributes present, for checks of unknown ones. */
  attributeNames(): string[] {
    return [...this.attrs.keys()];
  }
}

const TYPE_NAMES = new Map<number, string>(Object.entries(AttributeType).map(([k, v]) => [v, k]));
function typeName(t: number): string {
  return TYPE_NAMES.get(t) ?? `type ${t}`;
}
