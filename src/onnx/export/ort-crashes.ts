/**
 * The inputs known to crash onnxruntime-node natively (a signal that ends the process, not an
 * error it returns), one row per crash, and what the export emits instead. Every model the
 * export makes (exportFunction, exportModel, and the onnxruntime engine's sessions) is lowered
 * through `crashFreeLowering`, so no exported model hands onnxruntime an input of a row.
 *
 * A row's `when` reads the node's static types: it holds only where it can be decided from them
 * (every dim known); a row whose crash needs a symbolic dim to be 0 is guarded by `lower`
 * emitting a form that does not reach the crashing kernel. Add a row for each crash found (the
 * export fuzzer and test/onnx/ort-crashes.test.ts run cases in a child process).
 */
import { sizeOf } from "../../core/shape.js";
import type { OnnxBuilder } from "./builder.js";
import type { LowerFn, LowerNode } from "./lowering.js";

export interface OrtCrash {
  /** Our ops whose lowerings reach the crashing onnxruntime kernel. */
  ops: readonly string[];
  /** What crashes, and in which onnxruntime version (for the docs and the error). */
  what: string;
  /** Whether this node's inputs are the crashing case. */
  when(n: LowerNode): boolean;
  /** The lowering used instead for such a node. */
  lower: LowerFn;
}

const known = (shape: readonly number[]) => shape.every((d) => d >= 0);

/** Outputs that are all empty (every dim known), emitted as empty constants of their types. */
const emptyConstants: LowerFn = (b: OnnxBuilder, _ins, n) => n.outputTypes.map((t) => b.constant([], t.dtype, t.shape));

export const ORT_CRASHES: readonly OrtCrash[] = [
  {
    // TopK's kernel divides by the number of rows (elements / axis length): 0 when another dim is 0.
    ops: ["topK", "sort", "argsort"],
    what: "onnxruntime-node 1.30: TopK of an empty input with k > 0 (a dim other than the axis is 0) dies with SIGFPE",
    when: (n) => n.inputTypes.length > 0 && known(n.inputTypes[0]!.shape) && sizeOf(n.inputTypes[0]!.shape) === 0 && n.outputTypes.every((t) => known(t.shape) && sizeOf(t.shape) === 0),
    lower: emptyConstants,
  },
];

const byOp = new Map<string, OrtCrash[]>();
for (const c of ORT_CRASHES) for (const op of c.ops) byOp.set(op, [...(byOp.get(op) ?? []), c]);

/** The lowering to use for `n` in place of its own: a row's, where `n` is one of its crashing cases; else null. */
export function crashFreeLowering(n: LowerNode): LowerFn | null {
  const rows = byOp.get(n.op);
  if (rows === undefined) return null;
  for (const r of rows) if (r.when(n)) return r.lower;
  return null;
}
