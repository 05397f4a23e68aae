// The benchmark baseline guard's comparison (bench/baseline.ts): which workloads a run flags as
// slower than the recorded baseline, by ratio to a peer or by absolute median, and with what
// threshold. Pure logic on made-up figures: no timing is measured here.
import { test } from "node:test";
import assert from "node:assert/strict";
import { compareWithBaseline, formatComparison, lossOf, mergeRuns, relativeSpread, sameMachine, thresholdOf, workloadKey, type Baseline, type BaselineEntry, type Machine, type SuiteRow } from "../../bench/baseline.js";

const machine: Machine = { cpu: "Test CPU @ 3GHz", cores: 2, memoryGiB: 8, node: "v20.0.0", platform: "linux-x64", flags: "avx2 fma", lscpu: "Test CPU, 1 socket(s)" };
const other: Machine = { ...machine, cpu: "Other CPU", cores: 16 };

const row = (name: string, ours: number, theirs: number, unit = "ms", ratio = unit.endsWith("/s") ? ours / theirs : theirs / ours): SuiteRow => ({ suite: "s", name, peer: "peer", ours, theirs, unit, ratio });
const entry = (r: SuiteRow, spread: number | null): BaselineEntry => ({ suite: r.suite, name: r.name, peer: r.peer, unit: r.unit, ours: r.ours, theirs: r.theirs, ratio: Number.isFinite(r.ratio) ? r.ratio : null, spread });
const baselineOf = (entries: BaselineEntry[], m = machine): Baseline => ({ recorded: "2026-01-01T00:00:00Z", commit: "abc1234", command: "npm run bench -- --record", machine: m, workloads: Object.fromEntries(entries.map((e) => [workloadKey(e), e])) });
const verdicts = (cs: { key: string; verdict: string }[]) => Object.fromEntries(cs.map((c) => [c.key, c.verdict]));

test("relativeSpread is 1.4826 x MAD / median, robust to one outlier, null below 3 samples", () => {
  assert.equal(relativeSpread([1, 2]), null);
  assert.equal(relativeSpread([5, 5, 5, 5]), 0);
  // median 10.5, deviations 1.5, 0.5, 0.5, 89.5 -> MAD 1 (the outlier does not move it)
  assert.ok(Math.abs(relativeSpread([9, 10, 11, 100])! - (1.4826 * 1) / 10.5) < 1e-12);
  assert.equal(relativeSpread([0, 0, 0]), null);
});

test("the threshold is max(3 x spread, the minimum), the minimum alone without a spread", () => {
  assert.equal(thresholdOf(null), 0.1);
  assert.equal(thresholdOf(0.01), 0.1);
  assert.ok(Math.abs(thresholdOf(0.05) - 0.15) < 1e-12);
  assert.equal(thresholdOf(0.05, { minThreshold: 0.2 }), 0.2);
  assert.ok(Math.abs(thresholdOf(0.05, { spreads: 5 }) - 0.25) < 1e-12);
});

test("lossOf: the growth of a time; for a ratio or rate (higher is better) the inverse", () => {
  assert.ok(Math.abs(lossOf(10, 12.5, false) - 0.25) < 1e-12);
  assert.ok(Math.abs(lossOf(2, 1.6, true) - 0.25) < 1e-12);
  assert.ok(lossOf(2, 2.5, true) < 0);
});

test("a workload with a peer is compared by ratio: a machine twice as slow for both passes, ours alone slower fails", () => {
  const a = row("a", 10, 20), b = row("b", 10, 20), c = row("c", 10, 20);
  const base = baselineOf([entry(a, 0.02), entry(b, 0.02), entry(c, 0.02)]);
  // on another machine: a is twice as slow but so is its peer; b is 30% slower alone; c 5% slower alone
  const now = [row("a", 20, 40), row("b", 13, 20), row("c", 10.5, 20)];
  const cs = compareWithBaseline(base, now, other);
  assert.deepEqual(verdicts(cs), { "s: a vs peer": "ok", "s: b vs peer": "slower", "s: c vs peer": "ok" });
  assert.ok(cs.every((x) => x.basis === "ratio"));
  const b2 = cs.find((x) => x.key === "s: b vs peer")!;
  assert.ok(Math.abs(b2.loss! - 0.3) < 1e-9, `loss ${b2.loss}`);
});

test("the recorded spread widens the threshold: a 20% loss passes with spread 0.1, fails with 0.02", () => {
  const a = row("a", 10, 20);
  const now = [row("a", 12, 20)];
  assert.equal(compareWithBaseline(baselineOf([entry(a, 0.1)]), now, machine)[0]!.verdict, "ok");
  assert.equal(compareWithBaseline(baselineOf([entry(a, 0.02)]), now, machine)[0]!.verdict, "slower");
});

test("rates (GFLOP/s): a lower ratio to the peer is slower; a higher one beyond the noise is faster", () => {
  const a = row("mm", 40, 20, "GFLOP/s");
  const base = baselineOf([entry(a, 0.01)]);
  assert.equal(compareWithBaseline(base, [row("mm", 30, 20, "GFLOP/s")], other)[0]!.verdict, "slower");
  assert.equal(compareWithBaseline(base, [row("mm", 60, 20, "GFLOP/s")], other)[0]!.verdict, "faster");
});

test("a workload without a peer is compared by absolute median on the same machine only", () => {
  const lone: SuiteRow = { suite: "s", name: "conversion", peer: "-", ours: 2, theirs: NaN, unit: "ms", ratio: NaN };
  const base = baselineOf([entry(lone, null)]);
  const slow = [{ ...lone, ours: 2.5 }];
  const same = compareWithBaseline(base, slow, { ...machine });
  assert.equal(same[0]!.basis, "absolute");
  assert.equal(same[0]!.verdict, "slower");
  const elsewhere = compareWithBaseline(base, slow, other);
  assert.equal(elsewhere[0]!.verdict, "not compared");
  // another node version is another machine for absolute times
  assert.equal(compareWithBaseline(base, slow, { ...machine, node: "v22.0.0" })[0]!.verdict, "not compared");
  // a rate without a peer: lower is slower
  const rate: SuiteRow = { ...lone, name: "throughput", unit: "ex/s", ours: 100 };
  assert.equal(compareWithBaseline(baselineOf([entry(rate, null)]), [{ ...rate, ours: 80 }], machine)[0]!.verdict, "slower");
  assert.equal(compareWithBaseline(baselineOf([entry(rate, null)]), [{ ...rate, ours: 120 }], machine)[0]!.verdict, "faster");
});

test("new workloads and ones missing from a suite that ran are reported, not flagged; other suites' are left out", () => {
  const kept = row("kept", 10, 20), gone = row("gone", 10, 20);
  const elsewhere: SuiteRow = { ...row("x", 10, 20), suite: "other" };
  const cs = compareWithBaseline(baselineOf([entry(kept, 0.01), entry(gone, 0.01), entry(elsewhere, 0.01)]), [row("kept", 10, 20), row("fresh", 1, 2)], machine);
  assert.deepEqual(verdicts(cs), { "s: kept vs peer": "ok", "s: fresh vs peer": "new", "s: gone vs peer": "missing" });
  const text = formatComparison(cs, baselineOf([entry(kept, 0.01)]), machine);
  assert.match(text, /same machine and node as the baseline/);
  assert.match(text, /no workload slower/);
  assert.match(formatComparison(compareWithBaseline(baselineOf([entry(kept, 0.01)]), [row("kept", 20, 20)], other), baselineOf([entry(kept, 0.01)]), other), /only ratios to a peer[\s\S]*SLOWER[\s\S]*1 workload\(s\) slower/);
});

test("mergeRuns: medians per workload, spread the larger of the rows' own and the spread across runs", () => {
  const runs = [[{ ...row("a", 10, 20), spread: 0.01 }], [{ ...row("a", 11, 20), spread: 0.01 }], [{ ...row("a", 12, 20), spread: 0.01 }]];
  const [m] = mergeRuns(runs);
  assert.equal(m!.ours, 11);
  assert.equal(m!.ratio, 20 / 11);
  const across = relativeSpread([2, 20 / 11, 20 / 12])!;
  assert.ok(across > 0.01);
  assert.equal(m!.spread, across);
  // one run: the row's own spread; without any, null
  assert.equal(mergeRuns([[{ ...row("b", 1, 2), spread: 0.04 }]])[0]!.spread, 0.04);
  assert.equal(mergeRuns([[row("b", 1, 2)]])[0]!.spread, null);
  // no peer: ratio null
  assert.equal(mergeRuns([[{ suite: "s", name: "c", peer: "-", ours: 1, theirs: NaN, unit: "ms", ratio: NaN }]])[0]!.ratio, null);
});

test("sameMachine compares CPU, cores, flags, platform, lscpu and node", () => {
  assert.ok(sameMachine(machine, { ...machine, memoryGiB: 16 }));
  assert.ok(!sameMachine(machine, other));
  assert.ok(!sameMachine(machine, { ...machine, flags: "avx2" }));
  assert.ok(!sameMachine(machine, { ...machine, lscpu: "x" }));
});
