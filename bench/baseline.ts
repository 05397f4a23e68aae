// The benchmark baseline guard (`npm run bench -- --record` / `--check`, issue 27): a committed
// file of per-workload medians and spreads (bench/baseline.json), and the comparison of a run
// with it. Timings depend on the machine, so a workload with a peer measured in the same run is
// compared by its ratio to that peer (what the machine does to both cancels out); a workload
// without one is compared by its absolute median, and only when the machine description matches
// the baseline's. A workload is flagged slower when it lost more than its noise allows:
// max(3 x the recorded MAD-based spread, a minimum threshold, 10% by default).
// Everything here except the file helpers is pure (test/scripts/bench-baseline.test.ts).
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import type { Row } from "./common.js";

/** The machine a run was measured on (run.ts fills it from os.cpus(), lscpu and process). */
export interface Machine {
  cpu: string;
  cores: number;
  memoryGiB: number;
  node: string;
  platform: string;
  flags: string;
  /** lscpu's model name, sockets, cores per socket and threads per core, where lscpu exists. */
  lscpu?: string;
}

/** A row of a run with the suite that measured it (run.ts). */
export type SuiteRow = Row & { suite: string };

export interface BaselineEntry {
  suite: string;
  name: string;
  peer: string;
  unit: string;
  ours: number;
  theirs: number;
  /** Ours against the peer (> 1: ours is better); NaN (null in JSON) where there is no peer. */
  ratio: number | null;
  /** Relative MAD-based spread of the ratio (or of ours, without a peer); null where not measured. */
  spread: number | null;
}

export interface Baseline {
  recorded: string;
  commit: string;
  command: string;
  machine: Machine;
  note?: string;
  workloads: Record<string, BaselineEntry>;
}

/** The key of a workload in the baseline: suite, name and peer. */
export const workloadKey = (r: { suite: string; name: string; peer: string }): string => `${r.suite}: ${r.name} vs ${r.peer}`;

const medianOf = (xs: number[]): number => {
  const s = xs.slice().sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 === 1 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

/**
 * The relative spread of samples: 1.4826 x the median absolute deviation over the median (the
 * standard deviation's robust estimate for normal noise, which one outlier round does not move).
 * null for fewer than 3 samples, or a median of 0 or a non-finite one.
 */
export function relativeSpread(samples: readonly number[]): number | null {
  const xs = samples.filter((x) => Number.isFinite(x));
  if (xs.length < 3) return null;
  const m = medianOf(xs);
  if (!(m !== 0 && Number.isFinite(m))) return null;
  return (1.4826 * medianOf(xs.map((x) => Math.abs(x - m)))) / Math.abs(m);
}

/** Whether a unit is a rate (higher is better: GFLOP/s, ex/s) rather than a time. */
export const isRate = (unit: string): boolean => /\/s$/.test(unit.trim());

const hasPeer = (r: { ratio: number | null; theirs: number }): boolean => r.ratio !== null && Number.isFinite(r.ratio) && r.ratio > 0;

/**
 * Rows of several runs of the same suites merged per workload: the median of each figure, and
 * as spread the larger of the rows' own (their median) and the spread of the ratios (or of ours,
 * without a peer) across the runs.
 */
export function mergeRuns(runs: readonly (readonly (SuiteRow & { spread?: number })[])[]): BaselineEntry[] {
  const byKey = new Map<string, (SuiteRow & { spread?: number })[]>();
  for (const run of runs) for (const r of run) byKey.set(workloadKey(r), [...(byKey.get(workloadKey(r)) ?? []), r]);
  return [...byKey.values()].map((rs) => {
    const first = rs[0]!;
    const peer = rs.every(hasPeer);
    const own = rs.map((r) => r.spread).filter((s): s is number => typeof s === "number" && Number.isFinite(s));
    const across = relativeSpread(rs.map((r) => (peer ? r.ratio : r.ours)));
    const spreads = [own.length > 0 ? medianOf(own) : null, across].filter((s): s is number => s !== null);
    return {
      suite: first.suite,
      name: first.name,
      peer: first.peer,
      unit: first.unit,
      ours: medianOf(rs.map((r) => r.ours)),
      theirs: peer ? medianOf(rs.map((r) => r.theirs)) : first.theirs,
      ratio: peer ? medianOf(rs.map((r) => r.ratio)) : null,
      spread: spreads.length > 0 ? Math.max(...spreads) : null,
    };
  });
}

/** Whether two machine descriptions name the same machine and node (absolute times comparable). */
export function sameMachine(a: Machine, b: Machine): boolean {
  return a.cpu === b.cpu && a.cores === b.cores && a.platform === b.platform && a.flags === b.flags && a.node === b.node && (a.lscpu ?? "") === (b.lscpu ?? "");
}

export interface CheckOptions {
  /** The least relative loss flagged (default 0.10). */
  minThreshold?: number;
  /** How many spreads a loss must exceed (default 3). */
  spreads?: number;
}

export type Verdict = "ok" | "slower" | "faster" | "new" | "missing" | "not compared";

export interface Comparison {
  key: string;
  /** What was compared: the ratio to the peer of the same run, or ours' absolute median. */
  basis: "ratio" | "absolute" | "-";
  unit: string;
  baseline: number | null;
  now: number | null;
  /** Relative loss (lossOf): > 0 slower than the baseline. */
  loss: number | null;
  threshold: number | null;
  verdict: Verdict;
  why?: string;
}

/** The loss threshold of a workload: max(spreads x its spread, the minimum). */
export function thresholdOf(spread: number | null, options: CheckOptions = {}): number {
  const min = options.minThreshold ?? 0.1;
  const k = options.spreads ?? 3;
  return Math.max(spread === null ? 0 : k * spread, min);
}

/**
 * How much slower `now` is than `base`, as the growth of the time: 0.25 = 25% longer (for a
 * ratio to the peer or a rate, higher is better: 0.25 = 1.25x lower). Negative: faster.
 */
export function lossOf(base: number, now: number, higherIsBetter: boolean): number {
  return higherIsBetter ? base / now - 1 : now / base - 1;
}

/**
 * A run against the baseline, per workload of the suites that ran. Workloads with a peer are
 * compared by ratio; without one, by absolute median when the machines match, else not at all.
 */
export function compareWithBaseline(baseline: Baseline, rows: readonly SuiteRow[], machine: Machine, options: CheckOptions = {}): Comparison[] {
  const same = sameMachine(baseline.machine, machine);
  const out: Comparison[] = [];
  const seen = new Set<string>();
  for (const r of rows) {
    const key = workloadKey(r);
    seen.add(key);
    const b = baseline.workloads[key];
    if (b === undefined) {
      out.push({ key, basis: "-", unit: r.unit, baseline: null, now: null, loss: null, threshold: null, verdict: "new", why: "not in the baseline" });
      continue;
    }
    const threshold = thresholdOf(b.spread, options);
    let basis: "ratio" | "absolute";
    let base: number, now: number, higherIsBetter: boolean;
    if (hasPeer(b) && hasPeer(r)) {
      [basis, base, now, higherIsBetter] = ["ratio", b.ratio!, r.ratio, true];
    } else if (same && Number.isFinite(r.ours) && b.ours > 0) {
      [basis, base, now, higherIsBetter] = ["absolute", b.ours, r.ours, isRate(r.unit)];
    } else {
      out.push({ key, basis: "-", unit: r.unit, baseline: null, now: null, loss: null, threshold: null, verdict: "not compared", why: same ? "no usable figure" : "no peer, and another machine" });
      continue;
    }
    const loss = lossOf(base, now, higherIsBetter);
    const verdict: Verdict = !Number.isFinite(loss) ? "not compared" : loss > threshold ? "slower" : loss < -threshold ? "faster" : "ok";
    out.push({ key, basis, unit: basis === "ratio" ? "x" : r.unit, baseline: base, now, loss, threshold, verdict });
  }
  // workloads of the suites that ran which the run no longer has
  const ran = new Set(rows.map((r) => r.suite));
  for (const [key, b] of Object.entries(baseline.workloads)) {
    if (ran.has(b.suite) && !seen.has(key)) out.push({ key, basis: "-", unit: b.unit, baseline: null, now: null, loss: null, threshold: null, verdict: "missing", why: "in the baseline, not in this run" });
  }
  return out;
}

const fmt = (x: number | null): string => (x === null ? "-" : Math.abs(x) >= 100 ? x.toFixed(1) : Math.abs(x) >= 1 ? x.toFixed(2) : x.toFixed(3));
const pct = (x: number | null): string => (x === null ? "-" : `${x >= 0 ? "+" : ""}${(x * 100).toFixed(1)}%`);

/** The comparison as a table, with what was compared and on which machine. */
export function formatComparison(cs: readonly Comparison[], baseline: Baseline, machine: Machine): string {
  const same = sameMachine(baseline.machine, machine);
  const lines = [
    `baseline: commit ${baseline.commit}, recorded ${baseline.recorded} on ${baseline.machine.cpu} (${baseline.machine.cores} cores, node ${baseline.machine.node})${baseline.note ? `; ${baseline.note}` : ""}`,
    same
      ? "same machine and node as the baseline: workloads without a peer are compared by absolute median; those with one by their ratio to it"
      : `another machine or node (${machine.cpu}, ${machine.cores} cores, node ${machine.node}): only ratios to a peer measured in the same run are compared`,
    "loss: how much slower than the baseline (+25% = 1.25x the time, or a ratio/rate 1.25x lower); flagged above max(3 x spread, minimum)",
  ];
  const w = Math.max(8, ...cs.map((c) => c.key.length)) + 2;
  lines.push("workload".padEnd(w) + "basis".padEnd(10) + "baseline".padStart(10) + "now".padStart(10) + "  unit    " + "loss".padStart(8) + "limit".padStart(8) + "  verdict");
  for (const c of cs) {
    lines.push(c.key.padEnd(w) + c.basis.padEnd(10) + fmt(c.baseline).padStart(10) + fmt(c.now).padStart(10) + "  " + c.unit.padEnd(8) + pct(c.loss).padStart(8) + (c.threshold === null ? "-" : `${(c.threshold * 100).toFixed(0)}%`).padStart(8) + "  " + (c.verdict === "slower" ? "SLOWER" : c.verdict) + (c.why ? ` (${c.why})` : ""));
  }
  const slower = cs.filter((c) => c.verdict === "slower").length;
  lines.push(slower > 0 ? `${slower} workload(s) slower than the baseline beyond the noise` : "no workload slower than the baseline beyond the noise");
  return lines.join("\n");
}

/** lscpu's description of the CPU (model, sockets, cores, threads), or undefined without lscpu. */
export function lscpuDescription(): string | undefined {
  try {
    const out = execFileSync("lscpu", { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] });
    const field = (k: string) => out.split("\n").find((l) => l.startsWith(k + ":"))?.slice(k.length + 1).trim();
    const parts = [field("Model name"), field("Socket(s)") && `${field("Socket(s)")} socket(s)`, field("Core(s) per socket") && `${field("Core(s) per socket")} core(s) per socket`, field("Thread(s) per core") && `${field("Thread(s) per core")} thread(s) per core`];
    return parts.filter(Boolean).join(", ") || undefined;
  } catch {
    return undefined;
  }
}

/** The checkout's commit (short hash, "+dirty" with uncommitted changes), or "unknown". */
export function currentCommit(): string {
  try {
    const hash = execFileSync("git", ["rev-parse", "--short", "HEAD"], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim();
    const dirty = execFileSync("git", ["status", "--porcelain", "--untracked-files=no"], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim() !== "";
    return hash + (dirty ? "+dirty" : "");
  } catch {
    return "unknown";
  }
}

export function readBaseline(path: string): Baseline | null {
  if (!existsSync(path)) return null;
  const b = JSON.parse(readFileSync(path, "utf8")) as Baseline;
  // (JSON has no NaN: a ratio without a peer is stored as null)
  return b;
}

export function writeBaseline(path: string, b: Baseline): void {
  writeFileSync(path, JSON.stringify(b, null, 2) + "\n");
}
