// `npm run bench`: every benchmark in one process, printed as one table of ratios against
// peers measured in the same run (ratio > 1 means Stagecraft is better: faster or higher
// throughput), and written to bench/results.json (machine, node version, rows).
// `npm run bench -- dispatch` runs only the named suites and updates only their rows.
// `npm run bench -- --quick` runs the short form of every suite that has one (the peer suite:
// fewer sizes, shorter rounds; dispatch: fewer calls) and leaves out the suites whose workloads
// the peer suite also times (staged, graph-ad); the peer suite writes its own tables
// (bench/peers/index.ts).
// `npm run bench -- --record` also writes bench/baseline.json (per workload: median and spread,
// the machine, node and commit); `--check` compares the run with it and exits 1 when a workload
// is slower than the baseline beyond its noise (bench/baseline.ts says how). `--repeat=N` runs
// the suites N times and keeps the median per workload (the spread across runs counts as noise).
// They combine with a suite list and --quick: `npm run bench -- --quick --check`. A check does
// not rewrite the peer tables; BENCH_BASELINE_NOTE="..." stores a note with a recording (a
// recording of some suites keeps the other suites' workloads, with the new machine description).
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { cpus, totalmem } from "node:os";
import { fileURLToPath } from "node:url";
import { benchDispatch } from "./dispatch.js";
import * as sc from "../src/api/index.js";
import { currentDefaultEngine } from "../src/api/internals.js";
import type { Row } from "./common.js";
import { compareWithBaseline, currentCommit, formatComparison, lscpuDescription, mergeRuns, readBaseline, workloadKey, writeBaseline, type Machine } from "./baseline.js";

interface Suite {
  name: string;
  file: string;
  run: () => Promise<Row[]>;
  /** Left out of `--quick` (its workloads have tables in the peer suite). */
  fullOnly?: boolean;
}

const here = (f: string): string => fileURLToPath(new URL(f, import.meta.url));

const suites: Suite[] = [
  { name: "dispatch", file: "dispatch.ts", run: () => benchDispatch(quick ? 0.25 : 1) },
  { name: "staged", file: "staged.ts", run: async () => (await import("./staged.js")).benchStaged(), fullOnly: true },
  { name: "autograph", file: "autograph.ts", run: async () => (await import("./autograph.js")).benchAutograph() },
  {
    name: "matmul",
    file: "matmul.ts",
    run: async () => {
      const mod = (await import("./matmul.js")) as { benchMatmul?: () => Promise<Row[]> };
      if (typeof mod.benchMatmul !== "function") throw new Error("bench/matmul.ts does not export benchMatmul()");
      return mod.benchMatmul();
    },
  },
  { name: "vmap", file: "vmap.ts", run: async () => (await import("./vmap.js")).benchVmap(quick ? 3 : 7) },
  { name: "graph-ad", file: "graph-ad.ts", run: async () => (await import("./graph-ad.js")).benchGraphAd(), fullOnly: true },
  { name: "real-models", file: "real-models.ts", run: async () => (await import("./real-models.js")).benchRealModels(quick) },
  {
    name: "peers",
    file: "peers/index.ts",
    run: async () => {
      const peers = await import("./peers/index.js");
      const results = await peers.benchPeers(quick);
      console.log("\n" + (await import("./peers/report.js")).consoleTables(results));
      // (a check leaves the committed tables alone)
      if (check) console.log("--check: the peer tables in bench/RESULTS.md, peers.json and peers.svg are left as they are");
      else {
        await peers.writePeerResults(results, { ...machine }, quick);
        console.log("wrote the peer tables to bench/RESULTS.md, bench/peers.json and bench/peers.svg");
      }
      return [];
    },
  },
];

/** The CPU's SIMD flags that matter for the kernels (from /proc/cpuinfo where there is one). */
function simdFlags(): string {
  try {
    const line = readFileSync("/proc/cpuinfo", "utf8").split("\n").find((l) => l.startsWith("flags")) ?? "";
    const have = new Set(line.split(/\s+/));
    return ["sse4_2", "avx", "avx2", "fma", "avx512f", "avx512bw", "avx512vl", "avx512_vnni", "avx512_bf16", "amx_tile"].filter((f) => have.has(f)).join(" ") || "unknown";
  } catch {
    return "unknown";
  }
}

function fmt(x: number): string {
  if (!Number.isFinite(x)) return String(x);
  const a = Math.abs(x);
  return a >= 100 ? x.toFixed(1) : a >= 1 ? x.toFixed(2) : x.toFixed(3);
}

function printTable(rows: Row[]): void {
  const w = Math.max(9, ...rows.map((r) => r.name.length)) + 2;
  const p = Math.max(4, ...rows.map((r) => r.peer.length)) + 2;
  console.log("benchmark".padEnd(w) + "peer".padEnd(p) + "ours".padStart(10) + "theirs".padStart(10) + "  unit      " + "ratio".padStart(7));
  for (const r of rows) {
    console.log(r.name.padEnd(w) + r.peer.padEnd(p) + fmt(r.ours).padStart(10) + fmt(r.theirs).padStart(10) + "  " + r.unit.padEnd(8) + (r.ratio.toFixed(2) + "x").padStart(9));
  }
}

const lscpu = lscpuDescription();
const machine: Machine = {
  cpu: cpus()[0]?.model ?? "unknown",
  cores: cpus().length,
  memoryGiB: Math.round(totalmem() / 2 ** 30),
  node: process.version,
  platform: `${process.platform}-${process.arch}`,
  flags: simdFlags(),
  ...(lscpu !== undefined ? { lscpu } : {}),
};
console.log(`Stagecraft benchmarks on ${machine.cpu}, ${machine.cores} cores, ${machine.memoryGiB} GiB, node ${machine.node}`);
// ("stagecraft staged" rows stage without naming an engine: they run on the default, which is
// "auto" where onnxruntime-node is installed; the rows naming an engine say so)
const defaultEngine = `${currentDefaultEngine()}${sc.config.isDeterministic() ? " (determinism switch on: our executor)" : ""}`;
console.log(`default engine of sc.stage: ${defaultEngine}`);

type SuiteRow = Row & { suite: string; measured: string };
const rows: SuiteRow[] = [];
const ran = new Set<string>();
const failures: string[] = [];
const args = process.argv.slice(2);
const quick = args.includes("--quick");
const record = args.includes("--record");
const check = args.includes("--check");
const repeatArg = args.find((a) => a.startsWith("--repeat="));
const repeat = repeatArg === undefined ? 1 : Number(repeatArg.slice("--repeat=".length));
const flags = new Set(["--quick", "--record", "--check"]);
const unknownFlags = args.filter((a) => a.startsWith("--") && !flags.has(a) && a !== repeatArg);
if (unknownFlags.length > 0 || !(Number.isInteger(repeat) && repeat >= 1) || (record && check)) {
  console.error(`usage: npm run bench -- [SUITE ...] [--quick] [--record | --check] [--repeat=N]${unknownFlags.length > 0 ? ` (unknown: ${unknownFlags.join(" ")})` : ""}`);
  process.exit(2);
}
const only = args.filter((a) => !a.startsWith("--"));
const unknownSuites = only.filter((n) => !suites.some((s) => s.name === n));
if (unknownSuites.length > 0) {
  console.error(`unknown suite(s) ${unknownSuites.join(", ")}: the suites are ${suites.map((s) => s.name).join(", ")}`);
  process.exit(2);
}
// (before the suites: the peer suite rewrites RESULTS.md, peers.json and peers.svg)
const commit = currentCommit();
const runs: SuiteRow[][] = [];
for (let k = 0; k < repeat; k++) {
  if (repeat > 1) console.log(`\n--- run ${k + 1} of ${repeat} ---`);
  const runRows: SuiteRow[] = [];
  for (const s of suites) {
    if (only.length > 0 ? !only.includes(s.name) : quick && s.fullOnly) continue;
    if (!existsSync(here(s.file))) {
      console.log(`(skipping ${s.name}: bench/${s.file} is not there)`);
      continue;
    }
    const t = performance.now();
    try {
      const r = await s.run();
      runRows.push(...r.map((row) => ({ suite: s.name, measured: new Date().toISOString(), ...row })));
      ran.add(s.name);
      console.log(`${s.name}: ${r.length} rows in ${((performance.now() - t) / 1000).toFixed(1)} s`);
    } catch (e) {
      failures.push(`${s.name}: ${(e as Error).stack ?? String(e)}`);
      console.error(`${s.name} FAILED: ${(e as Error).message}`);
    }
  }
  runs.push(runRows);
}
// (with --repeat, a workload's figures are its medians over the runs)
const merged = new Map(mergeRuns(runs).map((e) => [workloadKey(e), e]));
rows.push(
  ...runs[0]!.map((r) => {
    const m = merged.get(workloadKey(r))!;
    return { ...r, ours: m.ours, theirs: m.theirs, ratio: m.ratio ?? NaN, ...(m.spread !== null ? { spread: m.spread } : {}) };
  }),
);
console.log("");
printTable(rows);
// Rows of suites that did not run this time (a subset was asked for, or one failed) are kept.
const resultsPath = here("results.json");
let kept: SuiteRow[] = [];
if (existsSync(resultsPath)) {
  try {
    const old = JSON.parse(readFileSync(resultsPath, "utf8")) as { rows?: SuiteRow[] };
    kept = (old.rows ?? []).filter((r) => typeof r.suite === "string" && !ran.has(r.suite));
  } catch {
    kept = [];
  }
}
const all = [...rows, ...kept].sort((a, b) => suites.findIndex((s) => s.name === a.suite) - suites.findIndex((s) => s.name === b.suite));
writeFileSync(resultsPath, JSON.stringify({ date: new Date().toISOString(), machine, defaultEngine, rows: all }, null, 2) + "\n");
console.log(`\nwrote bench/results.json`);
const baselinePath = here("baseline.json");
const command = `npm run bench -- ${args.join(" ")}`.trim();
if (record && failures.length === 0) {
  // (a recording of some suites keeps the other suites' workloads)
  const old = readBaseline(baselinePath);
  const keptWorkloads = Object.fromEntries(Object.entries(old?.workloads ?? {}).filter(([, e]) => !ran.has(e.suite)));
  const note = process.env.BENCH_BASELINE_NOTE;
  writeBaseline(baselinePath, {
    recorded: new Date().toISOString(),
    commit,
    command,
    machine,
    ...(note ? { note } : {}),
    workloads: { ...keptWorkloads, ...Object.fromEntries([...merged].filter(([k]) => rows.some((r) => workloadKey(r) === k))) },
  });
  console.log(`wrote bench/baseline.json (${merged.size} workloads${Object.keys(keptWorkloads).length > 0 ? `, ${Object.keys(keptWorkloads).length} kept from suites that did not run` : ""})`);
} else if (record) {
  console.error("bench/baseline.json not written: a suite failed");
}
if (check) {
  const baseline = readBaseline(baselinePath);
  if (baseline === null) {
    console.error("bench/baseline.json is not there: record one with `npm run bench -- --record`");
    process.exitCode = 1;
  } else {
    const cs = compareWithBaseline(baseline, rows, machine);
    console.log("\n" + formatComparison(cs, baseline, machine));
    if (cs.some((c) => c.verdict === "slower")) process.exitCode = 1;
  }
}
if (failures.length > 0) {
  console.error(`\n${failures.length} benchmark suite(s) failed:\n${failures.join("\n")}`);
  process.exitCode = 1;
}
