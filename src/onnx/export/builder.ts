/**
 * The exporter's graph builder: emits ONNX nodes (as the plain objects builders.ts makes) with
 * model-unique value names, constants, and nested builders for If/Loop bodies. ONNX subgraphs
 * see the names of their enclosing graphs, so a body refers to outer values by name.
 */
import { Tensor } from "../../core/tensor.js";
import { allocStorage, type DType } from "../../core/dtype.js";
import type { SourceLocation } from "../../core/errors.js";
import { makeNode, type AttributeValue } from "../builders.js";
import { elemTypeOfDtype } from "../dtypes.js";
import { OnnxUnsupportedError } from "../errors.js";
import { ResidualRecords } from "./residual-records.js";

/** Value names shared by a model's graph and all its subgraphs (ONNX wants them unique). */
export class NameSource {
  private readonly used = new Set<string>();
  fresh(base: string): string {
    const clean = base.replace(/[^\w./:-]/g, "_") || "v";
    let name = clean;
    for (let i = 1; this.used.has(name); i++) name = `${clean}_${i}`;
    this.used.add(name);
    return name;
  }
  reserve(name: string): boolean {
    if (this.used.has(name)) return false;
    this.used.add(name);
    return true;
  }
}

export class OnnxBuilder {
  readonly nodes: Record<string, unknown>[] = [];
  /** Where the node being lowered was made (errors name it). */
  loc: SourceLocation | null = null;
  /** The registry op being lowered (errors name it). */
  opName = "";

  constructor(
    readonly names: NameSource,
    /** The model's residual records (residual-records.ts), shared with its subgraphs. */
    readonly records: ResidualRecords = new ResidualRecords(),
  ) {}

  /** A builder for a subgraph (an If branch, a Loop body), sharing the model's names and records. */
  child(): OnnxBuilder {
    const b = new OnnxBuilder(this.names, this.records);
    b.loc = this.loc;
    b.opName = this.opName;
    return b;
  }

  fresh(base = "t"): string {
    return this.names.fresh(base);
  }

  /** Emits a node; returns its output names. */
  op(opType: string, inputs: string[], attrs: Record<string, AttributeValue> = {}, numOutputs = 1): string[] {
    const outs = Array.from({ length: numOutputs }, () => this.fresh(opType.toLowerCase()));
    this.records.checkInputs(opType, inputs);
    this.nodes.push(makeNode(opType, inputs, outs, attrs));
    return outs;
  }

  /** Emits a node with one output; returns its name. */
  op1(opType: string, inputs: string[], attrs: Record<string, AttributeValue> = {}): string {
    return this.op(opType, inputs, attrs, 1)[0]!;
  }

  /** Emits a node writing to given output names. */
  opTo(opType: string, inputs: string[], outputs: string[], attrs: Record<string, AttributeValue> = {}): void {
    this.records.checkInputs(opType, inputs);
    this.nodes.push(makeNode(opType, inputs, outputs, attrs));
  }

  /** A constant tensor (a Constant node). */
  constant(values: readonly number[], dtype: DType, shape: readonly number[] = [values.length]): string {
    const data = allocStorage(dtype, values.length);
    for (let i = 0; i < values.length; i++) data[i] = values[i]!;
    return this.op1("Constant", [], { value: new Tensor(data, [...shape], dtype) });
  }

  scalar(value: number, dtype: DType): string {
    return this.constant([value], dtype, []);
  }

  /** A 1-D int64 constant (shapes, axes, starts, ...). */
  i64(values: readonly number[]): string {
    return this.constant(values, "int64", [values.length]);
  }

  cast(x: string, to: DType): string {
    return this.op1("Cast", [x], { to: elemTypeOfDtype(to) });
  }

  /** The typed error every lowering raises for what ONNX (or this exporter) cannot express. */
  unsupported(why: string): never {
    throw new OnnxUnsupportedError(`cannot export ${this.opName ? `op ${this.opName}` : "this node"}: ${why}`, "onnx.export", this.loc);
  }
}
