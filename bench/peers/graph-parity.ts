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
import type { TensorType } from "../../src/ops/registry.js";
import type { Workload } from "./harness.js";

const seen = new Map<string, { graph: Graph; library: FunctionLibrary; types: TensorType[] }>();
const executor = installedExecutor();
setDefaultExecutor((g, inputs, lib, n) => {
  if (!seen.has(g.name)) seen.set(g.name, { graph: g, library: lib, types: inputs.map((t) => ({ dtype: t.dtype, shape: t.shape.slice() })) });
  return executor(g, inputs, lib, n);
});

function counts(g: Graph, out = new Map<string, number>(), prefix = ""): Map<string, number> {
  for (const n of g.nodes) {
    out.set(prefix + n.op, (out.get(prefix + n.op) ?? 0) + 1);
    n.regions.forEach((r, i) => counts(r, out, `${prefix}${n.op}.${i}/`));
  }
  return out;
}
function programCounts(g: Graph, lib: FunctionLibrary): Map<string, number> {
  const m = counts(g);
  for (const f of lib.functions.values()) if (f !== g) counts(f, m, "fn:");
  return m;
}
const total = (m: Map<string, number>) => [...m.values()].reduce((a, b) => a + b, 0);

const names = process.argv.slice(2);
for (const file of names.length > 0 ? names : ["maml", "lbfgs", "beam-search", "seq2seq"]) {
  seen.clear();
  const mod = (await import(`./${file}.js`)) as Record<string, unknown>;
  const make = Object.values(mod).find((f): f is () => Promise<Workload> => typeof f === "function" && f.name.endsWith("Workload"))!;
  (await make()).done?.();
  for (const hand of [...seen.keys()].filter((k) => k.endsWith("_by_hand"))) {
    const a = seen.get(hand.slice(0, -"_by_hand".length)), b = seen.get(hand)!;
    if (a === undefined) continue;
    const programs = [
      ["traced", a, b],
      ["executed", prepareForExecution(a.graph, a.library, a.types), prepareForExecution(b.graph, b.library, b.types)],
    ] as const;
    for (const [label, x, y] of programs) {
      const cx = programCounts(x.graph, x.library), cy = programCounts(y.graph, y.library);
      const diff = [...new Set([...cx.keys(), ...cy.keys()])].sort().filter((k) => cx.get(k) !== cy.get(k)).map((k) => `${k} ${cx.get(k) ?? 0} vs ${cy.get(k) ?? 0}`);
      console.log(`${file} ${label}: converted ${total(cx)} nodes, hand-written ${total(cy)}; differences: ${diff.join(", ") || "none"}`);
    }
  }
}
process.exit(0);
