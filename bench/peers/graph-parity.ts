/**
 * What AutoGraph's conversion and the hand-written graph code of the appendix workloads each
 * execute: op counts by op and region (library functions under "fn:"), traced and as the
 * executor runs them (optimized for the call's types), and where they differ.
 *   node --import tsx bench/peers/graph-parity.ts [maml lbfgs beam-search seq2seq]
 * The workload files stage "<name>" and "<name>_by_hand"; their first calls (the checks
 * against eager) are recorded at the executor.
 */
import "../../src/api/index.js";
import { installedExecutor, setDefaultExecutor } from "../../src/staging/concrete-function.js";
import { prepareForExecution } from "../../src/exec/prepare.js";
import type { FunctionLibrary, Graph } from "../../src/graph/ir.js";
import { programOpCounts } from "../../src/graph/op-counts.js";
import type { TensorType } from "../../src/ops/registry.js";
import { loadWorkload } from "./harness.js";

const seen = new Map<string, { graph: Graph; library: FunctionLibrary; types: TensorType[] }>();
const executor = installedExecutor();
setDefaultExecutor((g, inputs, lib, n) => {
  if (!seen.has(g.name)) seen.set(g.name, { graph: g, library: lib, types: inputs.map((t) => ({ dtype: t.dtype, shape: t.shape.slice() })) });
  return executor(g, inputs, lib, n);
});

const total = (m: Map<string, number>) => [...m.values()].reduce((a, b) => a + b, 0);

const names = process.argv.slice(2);
for (const file of names.length > 0 ? names : ["maml", "lbfgs", "beam-search", "seq2seq"]) {
  seen.clear();
  (await (await loadWorkload(file))()).done?.();
  for (const hand of [...seen.keys()].filter((k) => k.endsWith("_by_hand"))) {
    const a = seen.get(hand.slice(0, -"_by_hand".length)), b = seen.get(hand)!;
    if (a === undefined) continue;
    const programs = [
      ["traced", a, b],
      ["executed", prepareForExecution(a.graph, a.library, a.types), prepareForExecution(b.graph, b.library, b.types)],
    ] as const;
    for (const [label, x, y] of programs) {
      const cx = programOpCounts(x.graph, x.library), cy = programOpCounts(y.graph, y.library);
      const diff = [...new Set([...cx.keys(), ...cy.keys()])].sort().filter((k) => cx.get(k) !== cy.get(k)).map((k) => `${k} ${cx.get(k) ?? 0} vs ${cy.get(k) ?? 0}`);
      console.log(`${file} ${label}: converted ${total(cx)} nodes, hand-written ${total(cy)}; differences: ${diff.join(", ") || "none"}`);
    }
  }
}
process.exit(0);
