/**
 * Weights stored as Constant nodes. Many exporters (Paddle2ONNX for PaddleOCR, the TorchScript
 * exporter for Silero VAD) write a model's weights as `Constant` nodes instead of initializers;
 * as constants they could not be fine-tuned. onnx.load makes them trainable Variables, as it
 * does floating-point initializers (under the same `trainable` option), when they are data:
 *
 * - the node's `value` attribute is a floating-point tensor of rank 1 or more with at least one
 *   element (a weight, a bias; PP-LCNetV3's learnable scales
 *   have shape [1]; not a BatchNormalization statistic: statistics.ts). Rank-0 scalars stay constants: they are the literals of the exporting
 *   program (HardSwish's 3 and 6, Clip bounds, Pow's exponent), not parameters; so do
 *   `value_float(s)` / `value_int(s)` and integer tensors;
 * - its value is not read while tracing (traceTimeNames: a Reshape's shape, Resize's scales,
 *   Pad's constant value, Range bounds, what decides an If or a Loop, and what computes them):
 *   those stay constants, since a trace folds them and a changed value would not retrace.
 *
 * Constants in If branches and Loop bodies count too (their Variables are captured by the
 * structural node, as outer initializers are); those in model-local functions stay constants
 * (a function may be called several times, each call its own constants).
 */
import { isFloat } from "../../core/dtype.js";
import type { Tensor } from "../../core/tensor.js";
import { Variable } from "../../core/variable.js";
import { AttributeType, has, type GraphProto, type NodeProto, type TensorProto } from "../protobuf.js";
import { STANDARD_DOMAINS } from "./op-table.js";
import { traceTimeNames } from "./static-inputs.js";

/** Whether a Constant's value is a weight: a floating-point tensor of rank >= 1 with elements. */
export const isWeightValue = (t: Tensor): boolean => isFloat(t.dtype) && t.rank >= 1 && t.size > 0;

/**
 * The Constant nodes of `graph` (and its subgraphs) that become trainable Variables, each with
 * its Variable, named by the node's output (a name already taken gets a "#k" suffix).
 */
export function constantWeights(
  graph: GraphProto,
  readTensor: (p: TensorProto, what: string) => Tensor,
  taken: ReadonlySet<string>,
  statistics: ReadonlySet<string>,
): Map<NodeProto, Variable> {
  const atTrace = traceTimeNames(graph, true);
  const out = new Map<NodeProto, Variable>();
  const names = new Set(taken);
  const visit = (g: GraphProto): void => {
    for (const n of g.node) {
      for (const a of n.attribute) {
        if (a.g) visit(a.g);
        for (const sg of a.graphs) visit(sg);
      }
      if (n.op_type !== "Constant" || !STANDARD_DOMAINS.has(n.domain ?? "") || n.attribute.length !== 1) continue;
      const a = n.attribute[0]!;
      const output = n.output[0];
      const tensorAttr = a.type === AttributeType.TENSOR || a.type === AttributeType.UNDEFINED;
      // (dims checked before the value is read: scalars are most of the constants left out)
      if (a.name !== "value" || !tensorAttr || !has(a, "t") || a.t!.dims.length === 0 || !output || atTrace.has(output) || statistics.has(output)) continue;
      const what = `attribute value of Constant ${JSON.stringify(output)}`;
      const t = readTensor(a.t!, what);
      if (!isWeightValue(t)) continue;
      let name = output;
      for (let k = 2; names.has(name); k++) name = `${output}#${k}`;
      names.add(name);
      out.set(n, new Variable(t, { name, trainable: true }));
    }
  };
  visit(graph);
  return out;
}
