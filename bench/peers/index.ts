/**
 * The peer suite: the staging papers' workloads and the heavy-op throughputs, every system in
 * alternating rounds (harness.ts), written as tables to bench/RESULTS.md (between the
 * peer-tables markers), as rows to bench/peers.json and as a chart to bench/peers.svg.
 * `--quick`: fewer sizes, shorter rounds (a fresh clone runs it in minutes).
 */
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { FULL, QUICK, measure, type Workload, type WorkloadResult } from "./harness.js";
import { chartSvg, markdownTables } from "./report.js";
import { convWorkload, matmulWorkload } from "./throughput.js";
import { l2hmcWorkload } from "./l2hmc.js";
import { rnnWorkload } from "./rnn.js";
import { mnistWorkload } from "./mnist.js";
import { beamSearchWorkload } from "./beam-search.js";
import { lbfgsWorkload } from "./lbfgs.js";
import { mamlWorkload } from "./maml.js";
import { seq2seqWorkload } from "./seq2seq.js";
import { treeLstmWorkload } from "./tree-lstm.js";
import { resnetWorkload } from "./resnet.js";
import { THREAD_JOBS, threadsWorkload } from "./threads.js";
import { nativeStats } from "../../src/backends/cpu/native.js";

const here = (f: string): string => fileURLToPath(new URL(f, import.meta.url));

function plan(quick: boolean): (() => Promise<Workload>)[] {
  const sizes = quick ? [256, 1024] : [128, 256, 512, 1024];
  const convs = quick
    ? [{ batch: 32, inC: 16, outC: 16, hw: 32, k: 3, stride: 1 }]
    : [{ batch: 32, inC: 16, outC: 16, hw: 32, k: 3, stride: 1 }, { batch: 32, inC: 32, outC: 64, hw: 16, k: 3, stride: 2 }, { batch: 8, inC: 64, outC: 64, hw: 56, k: 3, stride: 1 }];
  const rnn = quick ? [[64, 32]] : [[64, 32], [128, 32], [64, 256], [128, 256]];
  return [
    ...(quick ? [1, 32] : [1, 8, 32]).map((b) => () => l2hmcWorkload(b)),
    ...rnn.flatMap(([s, b]) => [() => rnnWorkload(s!, b!, false), () => rnnWorkload(s!, b!, true, quick)]),
    () => mnistWorkload(quick ? 100 : 1000, quick),
    beamSearchWorkload,
    lbfgsWorkload,
    mamlWorkload,
    seq2seqWorkload,
    treeLstmWorkload,
    () => resnetWorkload(quick),
    ...THREAD_JOBS.flatMap((job) => [false, true].map((busy) => () => threadsWorkload(job, busy))),
    ...sizes.map((s) => () => matmulWorkload(s)),
    ...convs.map((c) => () => convWorkload(c)),
  ];
}

export async function benchPeers(quick: boolean, log: (line: string) => void = console.log): Promise<WorkloadResult[]> {
  const results: WorkloadResult[] = [];
  for (const make of plan(quick)) {
    const t = performance.now();
    let w: Workload;
    try {
      w = await make();
    } catch (e) {
      // a workload whose set-up or cross-check fails is reported, and the others still run
      const name = `(a workload failed to set up: ${(e as Error).message.split("\n")[0]})`;
      results.push({ name, call: "-", figures: [] });
      log(`  ${name}`);
      continue;
    }
    let r: WorkloadResult;
    try {
      r = await measure(w, quick ? QUICK : FULL);
    } finally {
      w.done?.();
    }
    results.push(r);
    log(`  ${w.name}: ${((performance.now() - t) / 1000).toFixed(1)} s`);
  }
  return results;
}

const BEGIN = "<!-- peer-tables:begin -->", END = "<!-- peer-tables:end -->";

/** Writes the tables into RESULTS.md (replacing the previous ones), peers.json and peers.svg. */
export async function writePeerResults(results: WorkloadResult[], machine: Record<string, unknown>, quick: boolean): Promise<void> {
  const date = new Date().toISOString();
  writeFileSync(here("../peers.json"), JSON.stringify({ date, quick, machine, native: nativeStats(), results }, null, 2) + "\n");
  writeFileSync(here("../peers.svg"), await chartSvg(results, `Stagecraft vs peers (${String(machine.cpu)}, ${String(machine.cores)} cores, node ${String(machine.node)})`));
  const body = [
    BEGIN,
    `Run ${date}${quick ? " (`--quick`)" : ""} on ${String(machine.cpu)}, ${String(machine.cores)} cores (${String(machine.flags)}), node ${String(machine.node)}.`,
    "",
    "![speed relative to the best peer](peers.svg)",
    "",
    markdownTables(results),
    END,
  ].join("\n");
  const path = here("../RESULTS.md");
  const old = existsSync(path) ? readFileSync(path, "utf8") : "# Benchmark results\n";
  const a = old.indexOf(BEGIN), b = old.indexOf(END);
  const next = a >= 0 && b > a ? old.slice(0, a) + body + old.slice(b + END.length) : old.trimEnd() + "\n\n## Against the peers on the staging papers' workloads\n\n" + body + "\n";
  writeFileSync(path, next);
}
