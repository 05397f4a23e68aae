/**
 * Builders of ONNX messages as plain objects (encode() turns a model into bytes), in the
 * manner of onnx.helper: makeNode, makeGraph, makeModel, makeValueInfo, makeAttribute.
 * The exporter and the tests build models with them.
 */
import type { Tensor } from "../core/tensor.js";
import type { DType } from "../core/dtype.js";
import { encode, AttributeType } from "./protobuf.js";
import { elemTypeOfDtype } from "./dtypes.js";
import { tensorToProto } from "./tensor-proto.js";
import { checkOptions, optionKeys } from "../core/options.js";

/** An attribute value: numbers (int if integral and `ints`/`int` not forced), strings, tensors, graphs, lists. */
export type AttributeValue = number | string | number[] | string[] | Tensor | GraphObject | { ints: number[] } | { floats: number[] } | { int: number } | { float: number };

export type GraphObject = Record<string, unknown> & { __graph: true };

export function makeAttribute(name: string, value: AttributeValue): Record<string, unknown> {
  if (typeof value === "string") return { name, type: AttributeType.STRING, s: new TextEncoder().encode(value) };
  if (typeof value === "number") return Number.isInteger(value) ? { name, type: AttributeType.INT, i: value } : { name, type: AttributeType.FLOAT, f: value };
  if (Array.isArray(value)) {
    if (value.every((v) => typeof v === "string")) return { name, type: AttributeType.STRINGS, strings: (value as string[]).map((v) => new TextEncoder().encode(v)) };
    const nums = value as number[];
    return nums.every(Number.isInteger) ? { name, type: AttributeType.INTS, ints: nums } : { name, type: AttributeType.FLOATS, floats: nums };
  }
  if ("__graph" in value) {
    const { __graph: _, ...g } = value;
    return { name, type: AttributeType.GRAPH, g };
  }
  if ("ints" in value) return { name, type: AttributeType.INTS, ints: value.ints };
  if ("floats" in value) return { name, type: AttributeType.FLOATS, floats: value.floats };
  if ("int" in value) return { name, type: AttributeType.INT, i: value.int };
  if ("float" in value) return { name, type: AttributeType.FLOAT, f: value.float };
  return { name, type: AttributeType.TENSOR, t: tensorToProto(value as Tensor) };
}

export function makeNode(opType: string, inputs: string[], outputs: string[], attributes: Record<string, AttributeValue> = {}, options: { name?: string; domain?: string } = {}): Record<string, unknown> {
  checkOptions("onnx.makeNode", options, ["name", "domain"]);
  return {
    op_type: opType,
    input: inputs,
    output: outputs,
    attribute: Object.entries(attributes).map(([k, v]) => makeAttribute(k, v)),
    ...(options.name ? { name: options.name } : {}),
    ...(options.domain ? { domain: options.domain } : {}),
  };
}

/** A tensor value's declared type; a dim is a size, a symbolic name, or null (unknown). */
export function makeValueInfo(name: string, dtype: DType, shape: readonly (number | string | null)[] | null): Record<string, unknown> {
  const tensorType: Record<string, unknown> = { elem_type: elemTypeOfDtype(dtype) };
  if (shape !== null) tensorType.shape = { dim: shape.map((d) => (typeof d === "number" ? { dim_value: d } : typeof d === "string" ? { dim_param: d } : {})) };
  return { name, type: { tensor_type: tensorType } };
}

export function makeGraph(
  nodes: Record<string, unknown>[],
  name: string,
  inputs: Record<string, unknown>[],
  outputs: Record<string, unknown>[],
  initializers: { name: string; value: Tensor }[] = [],
): GraphObject {
  return {
    __graph: true,
    node: nodes,
    name,
    input: inputs,
    output: outputs,
    initializer: initializers.map((i) => tensorToProto(i.value, i.name)),
  };
}

export interface ModelOptions {
  /** Standard-domain opset (default 18). */
  opset?: number;
  /** IR version (default 8, which onnxruntime 1.30 reads with opset 18). */
  irVersion?: number;
  /** Other domains' opsets. */
  opsets?: Record<string, number>;
  producer?: string;
  functions?: Record<string, unknown>[];
}

const MODEL_OPTIONS = optionKeys<ModelOptions>()("opset", "irVersion", "opsets", "producer", "functions");

export function makeModel(graph: GraphObject, options: ModelOptions = {}): Record<string, unknown> {
  checkOptions("onnx.makeModel", options, MODEL_OPTIONS);
  const { __graph: _, ...g } = graph;
  return {
    ir_version: options.irVersion ?? 8,
    opset_import: [{ domain: "", version: options.opset ?? 18 }, ...Object.entries(options.opsets ?? {}).map(([domain, version]) => ({ domain, version }))],
    producer_name: options.producer ?? "stagecraft",
    graph: g,
    ...(options.functions ? { functions: options.functions } : {}),
  };
}

/** The bytes of a model built with makeModel. */
export function modelBytes(model: Record<string, unknown>): Uint8Array {
  return encode("ModelProto", model);
}
