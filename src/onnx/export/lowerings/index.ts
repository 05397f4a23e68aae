/**
 * Fills the registry's `onnx` slots (ops/registry.ts OnnxLowering): the lowering of every op the
 * exporter writes by hand, and the reason for every op it refuses. Elementwise ops without an
 * entry are lowered from their expressions (export/elementwise.ts).
 */
import { lookupOp } from "../../../ops/registry.js";
import type { LowerFn } from "../lowering.js";
import { shapeLowerings } from "./shape.js";
import { mathLowerings } from "./math.js";
import { otherLowerings, refusals } from "./other.js";
import { randomLowerings } from "./random.js";
import "../lowering.js";

let installed = false;

export function installLowerings(): void {
  if (installed) return;
  installed = true;
  const tables: Record<string, LowerFn>[] = [shapeLowerings, mathLowerings, otherLowerings, randomLowerings];
  for (const t of tables) {
    for (const [name, lower] of Object.entries(t)) {
      const def = lookupOp(name);
      if (def === null || def.structural !== undefined) throw new Error(`internal: ONNX lowering for ${name}, which is not a registry op`);
      def.onnx = { ...def.onnx, lower };
    }
  }
  for (const [name, refused] of Object.entries(refusals)) {
    const def = lookupOp(name);
    if (def === null) throw new Error(`internal: ONNX refusal for ${name}, which is not a registry op`);
    def.onnx = { ...def.onnx, refused };
  }
}
