// What the index checks of the "auto" plan's onnxruntime segments cost (partition/index-guard.ts),
// on seq2seq's training step (bench/peers/seq2seq.ts, both versions), whose graph the cut makes one
// engine segment: that segment's session run unchecked, with the checks as the cut now places them
// (index-ranges.ts leaves out those known in range and moves loop bodies' checks out of the
// loops), and with every index checked where it is used (as before), beside the whole step staged
// on our executor; interleaved rounds of 5 calls each, ms per call, min and median.
//   node --import tsx bench/index-checks.ts [--rounds N]
import * as sc from "../src/api/index.js";
import { cutGraph } from "../src/onnx/partition/cut.js";
import { guardIndices } from "../src/onnx/partition/index-guard.js";
import { onnxruntimeExecutor } from "../src/onnx/engine.js";
import { cloneGraph } from "../src/graph/passes/util.js";
import type { Tensor } from "../src/core/tensor.js";
import { convertedTrainStep, seq2seqArgs, trainStepByHand } from "./peers/seq2seq.js";

const rounds = Number(process.argv[process.argv.indexOf("--rounds") + 1] ?? 0) || 60;
const args = seq2seqArgs();
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Staged = ((...a: any[]) => unknown) & { concrete(...a: unknown[]): any };
const versions: [string, () => Staged][] = [
  ["AutoGraph", () => sc.stage(convertedTrainStep(), { engine: "stagecraft" }) as never],
  ["hand-written", () => sc.stage(trainStepByHand, { autograph: false, engine: "stagecraft" }) as never],
];
const median = (a: number[]) => [...a].sort((x, y) => x - y)[a.length >> 1]!;
console.log(`load ${(await import("node:fs")).readFileSync("/proc/loadavg", "utf8").trim()}`);
for (const [name, make] of versions) {
  const staged = make();
  const cf = staged.concrete(...args);
  const cut = cutGraph(cf.graph, cf.library, cf.numArgInputs);
  if (cut.segments.length !== 1 || !cut.segments[0]!.onEngine) throw new Error(`${name}: expected one engine segment, got ${cut.segments.length}`);
  const seg = cut.segments[0]!;
  const every = cloneGraph(seg.graph);
  guardIndices(every, true);
  const all = [...args, ...cf.captures.map((c: { tensor: Tensor }) => c.tensor)];
  const inputs = seg.inputSlots.map((s) => all[s]!);
  const engine = onnxruntimeExecutor();
  const runs: [string, () => unknown][] = [
    ["session unchecked", ((r) => () => r(inputs))(engine.prepare!(seg.graph, cf.library, seg.numArgInputs))],
    ["session, checks as placed now", ((r) => () => r(inputs))(engine.prepare!(seg.engineGraph, cf.library, seg.numArgInputs))],
    ["session, every index checked where used", ((r) => () => r(inputs))(engine.prepare!(every, cf.library, seg.numArgInputs))],
    ["ours (the whole step staged)", () => staged(...args)],
  ];
  // (warm: ours' generated code over its first ~100 calls, the sessions' first runs)
  for (let i = 0; i < 300; i++) staged(...args);
  for (let i = 0; i < 20; i++) runs.forEach(([, run]) => run());
  const times: number[][] = runs.map(() => []);
  for (let r = 0; r < rounds; r++) {
    runs.forEach(([, run], k) => {
      const t0 = performance.now();
      for (let j = 0; j < 5; j++) run();
      times[k]!.push((performance.now() - t0) / 5);
    });
  }
  const wheres = (g: { nodes: { op: string; regions: unknown[] }[] }): number => g.nodes.reduce((n, m) => n + (m.op === "where" ? 1 : 0) + (m.regions as never[]).reduce((a, r) => a + wheres(r), 0), 0);
  console.log(`seq2seq ${name}: checks (where nodes) now ${wheres(seg.engineGraph)}, every index ${wheres(every)}`);
  runs.forEach(([label], k) => console.log(`  ${label.padEnd(42)} min ${Math.min(...times[k]!).toFixed(3)} ms, median ${median(times[k]!).toFixed(3)} ms`));
}
console.log(`load ${(await import("node:fs")).readFileSync("/proc/loadavg", "utf8").trim()}`);
