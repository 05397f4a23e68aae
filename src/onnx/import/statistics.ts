/**
 * BatchNormalization's running statistics (inputs 3 and 4, `input_mean` and `input_var`) are
 * not parameters: PyTorch keeps them as buffers, Keras as non-trainable weights, and neither
 * fine-tunes them by gradient. Made trainable like the other floating-point initializers, an
 * optimizer would move them by their (nonzero) gradients, and weight decay would shrink a
 * variance towards zero: a fine-tuned model quietly unlike the one its framework would train.
 * onnx.load keeps them out of the trainable variables (an initializer becomes a non-trainable
 * Variable, a Constant node stays a constant).
 */
import type { GraphProto } from "../protobuf.js";
import { STANDARD_DOMAINS } from "./op-table.js";
import { someNode } from "./graph-walk.js";

/** The value names that some BatchNormalization of `graph` (or of its subgraphs) reads as its running mean or variance. */
export function batchNormStatistics(graph: GraphProto): Set<string> {
  const out = new Set<string>();
  someNode(graph.node, (n) => {
    if (n.op_type === "BatchNormalization" && STANDARD_DOMAINS.has(n.domain ?? "")) for (const k of [3, 4]) if (n.input[k]) out.add(n.input[k]!);
    return false; // (every node)
  });
  return out;
}
