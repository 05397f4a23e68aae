/**
 * Walking an ONNX graph's nodes with those of its subgraphs (If branches, Loop and Scan bodies,
 * in the attributes `g` and `graphs`).
 */
import type { GraphProto, NodeProto } from "../protobuf.js";

/** The subgraphs a node's attributes hold. */
export function subgraphsOf(n: NodeProto): GraphProto[] {
  const out: GraphProto[] = [];
  for (const a of n.attribute) {
    if (a.g) out.push(a.g);
    out.push(...a.graphs);
  }
  return out;
}

/** Whether `is` picks some node of `nodes` or of their subgraphs, at any depth (stops at the first). */
export function someNode(nodes: readonly NodeProto[], is: (n: NodeProto) => boolean): boolean {
  for (const n of nodes) {
    if (is(n)) return true;
    for (const g of subgraphsOf(n)) if (someNode(g.node, is)) return true;
  }
  return false;
}
