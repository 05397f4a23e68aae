// One workload's staged system built three times (default engine ours, "onnxruntime", "auto"),
// every build warmed the same number of calls, then R interleaved rounds of K calls each (the
// same K for all, the order rotating and reversing): medians of ms per call, per-round ratios
// (auto/ours, auto/onnxruntime, onnxruntime/ours), and process CPU ms per call. A check of
// bench/auto-engine.ts's rows with equal calls per round instead of equal time.
//   node --import tsx bench/auto-direct.ts WORKLOAD [SYSTEM="stagecraft staged"] [K=3] [R=15] [WARM=200]
// (WORKLOAD: l2hmc-1, resnet, seq2seq, tree-lstm)
import { setDefaultEngine } from "../src/api/internals.js";
import { autoStats } from "../src/onnx/partition/auto.js";
import { l2hmcWorkload } from "./peers/l2hmc.js";
import { resnetWorkload } from "./peers/resnet.js";
import { seq2seqWorkload } from "./peers/seq2seq.js";
import { treeLstmWorkload } from "./peers/tree-lstm.js";
const W: Record<string, () => Promise<any>> = { "l2hmc-1": () => l2hmcWorkload(1), resnet: () => resnetWorkload(true), seq2seq: seq2seqWorkload, "tree-lstm": treeLstmWorkload };
const [name, sysName = "stagecraft staged", K = "3", R = "15", WARM = "200"] = process.argv.slice(2);
const E = ["ours", "onnxruntime", "auto"] as const;
const runs: (() => unknown)[] = [];
for (const e of E) {
  const before = setDefaultEngine(e === "ours" ? null : e);
  const w = await W[name!]!();
  setDefaultEngine(before);
  const s = w.systems.find((x: any) => x.name === sysName)!;
  runs.push(() => { const b = setDefaultEngine(e === "ours" ? null : e); try { s.enter?.(); return s.run(); } finally { setDefaultEngine(b); } });
}
const ok = E.map(() => true);
for (let i = 0; i < Number(WARM); i++) runs.forEach((r, k) => { if (ok[k]) try { r(); } catch { ok[k] = false; } });
console.log("after warm:", JSON.stringify(autoStats.lastMeasured), JSON.stringify(autoStats.lastChoice));
const ms: number[][] = E.map(() => []), cpu: number[][] = E.map(() => []);
for (let r = 0; r < Number(R); r++) {
  const order = [0, 1, 2].map((k) => (k + r) % 3);
  if (r % 2) order.reverse();
  for (const k of order) {
    if (!ok[k]) continue;
    const c = process.cpuUsage(), t = performance.now();
    for (let i = 0; i < Number(K); i++) runs[k]!();
    ms[k]!.push((performance.now() - t) / Number(K));
    const d = process.cpuUsage(c); cpu[k]!.push((d.user + d.system) / 1000 / Number(K));
  }
}
const med = (a: number[]) => a.slice().sort((x, y) => x - y)[a.length >> 1]!;
const ratio = (a: number[], b: number[]) => med(a.map((x, i) => x / b[i]!));
console.log(`${name} ${sysName}: median ms ours ${ok[0] ? med(ms[0]!).toPrecision(3) : "-"}, ort ${ok[1] ? med(ms[1]!).toPrecision(3) : "-"}, auto ${med(ms[2]!).toPrecision(3)}; per-round auto/ours ${ratio(ms[2]!, ms[0]!).toFixed(2)}${ok[1] ? `, auto/ort ${ratio(ms[2]!, ms[1]!).toFixed(2)}, ort/ours ${ratio(ms[1]!, ms[0]!).toFixed(2)}` : ""}; cpu ms ours ${med(cpu[0]!).toPrecision(3)} ort ${ok[1] ? med(cpu[1]!).toPrecision(3) : "-"} auto ${med(cpu[2]!).toPrecision(3)}`);
