/**
 * auto's pairs of timed runs (onnx/partition/pairs.ts): calls on the same argument tensors pair
 * with each other, whatever calls came between; calls on new arguments pair in order, the side
 * that goes first drawn. No timings: the runs' times are given.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as sc from "../../src/api/index.js";
import { argumentKey, PairedRuns } from "../../src/onnx/partition/pairs.js";

const tensors = Array.from({ length: 8 }, (_, k) => sc.tensor([k], "float32", [1]));

/** Runs `calls` calls through `m` (each on `argsOf(c)`), the side as `m` says, timed `ms(side, c)`; returns each call's side. */
function drive(m: PairedRuns, calls: number, argsOf: (c: number) => sc.Tensor[], ms: (plan: boolean, c: number) => number): boolean[] {
  const sides: boolean[] = [];
  for (let c = 0; c < calls; c++) {
    const args = argsOf(c);
    const key = argumentKey(args, args.length);
    const plan = m.nextOnPlan(key);
    m.add({ plan, key, ms: ms(plan, c), segments: null });
    sides.push(plan);
  }
  return sides;
}

test("the same argument tensors give the same key; other tensors, or the same in another order, another", () => {
  const [a, b] = tensors;
  assert.equal(argumentKey([a!, b!], 2), argumentKey([a!, b!], 2));
  assert.notEqual(argumentKey([a!, b!], 2), argumentKey([b!, a!], 2));
  assert.notEqual(argumentKey([a!], 1), argumentKey([sc.tensor([0], "float32", [1])], 1));
  assert.equal(argumentKey([a!, b!], 1), argumentKey([a!, tensors[3]!], 1), "captures (past numArgInputs) are not part of the key");
});

test("calls cycling over 8 argument sets pair each set's run on one side with its run on the other: the plan never always gets the same half", () => {
  // the work of set k (a tree of that many nodes); the plan 10% slower on every set
  const work = [29, 39, 49, 59, 37, 47, 57, 35];
  const m = new PairedRuns();
  drive(m, 48, (c) => [tensors[c % 8]!], (plan, c) => (plan ? 1.1 : 1) * work[c % 8]!);
  const pairs = m.pairs(5)!;
  assert.ok(pairs !== null && pairs.ours.length >= 20, `pairs by arguments (${pairs?.ours.length})`);
  for (let i = 0; i < pairs.ours.length; i++) {
    assert.equal(pairs.ours[i]!.key, pairs.plan[i]!.key, `pair ${i}: both runs on the same arguments`);
    assert.ok(Math.abs(pairs.plan[i]!.ms / pairs.ours[i]!.ms - 1.1) < 1e-9, `pair ${i}: the plan's 10% shows`);
  }
  // every argument set ran on both sides
  for (let k = 0; k < 8; k++) {
    const key = argumentKey([tensors[k]!], 1);
    assert.ok(m.runs.some((r) => r.key === key && r.plan) && m.runs.some((r) => r.key === key && !r.plan), `set ${k} on both sides`);
  }
});

test("while arguments repeat but too few pairs share theirs, there are no pairs to test yet; once measuring ends, the runs pair in order", () => {
  const m = new PairedRuns();
  drive(m, 10, (c) => [tensors[c % 8]!], () => 1);
  // calls 0..7 each on a new set (alternating sides), calls 8 and 9 pair with calls 0 and 1
  assert.equal(m.pairs(5), null);
  assert.equal(m.finalPairs(5).ours.length, 5, "in order: 5 runs of each side");
});

test("calls on new arguments each time pair in order, one right after the other, the side going first drawn (not always the plan)", () => {
  const m = new PairedRuns();
  const sides = drive(m, 40, () => [sc.tensor([1], "float32", [1])], () => 1);
  for (let c = 0; c < 40; c += 2) assert.notEqual(sides[c], sides[c + 1], `calls ${c} and ${c + 1} on the two sides`);
  const firsts = sides.filter((_, c) => c % 2 === 0);
  assert.ok(firsts.some((p) => p) && firsts.some((p) => !p), `the plan first in some pairs, ours in others (${firsts.map(Number).join("")})`);
  const pairs = m.pairs(5)!;
  assert.equal(pairs.ours.length, 20);
  // a work that alternates with the calls (even calls 20 ms, odd 10) cannot line up with one side
  const m2 = new PairedRuns();
  drive(m2, 40, () => [sc.tensor([1], "float32", [1])], (_plan, c) => (c % 2 === 0 ? 20 : 10));
  const planTimes = m2.times(true);
  assert.ok(planTimes.includes(20) && planTimes.includes(10), "the plan ran both the heavy and the light calls");
});

test("one argument set for every call: the sides alternate, pairs are consecutive calls (as before)", () => {
  const m = new PairedRuns();
  const sides = drive(m, 20, () => [tensors[0]!], () => 1);
  for (let c = 0; c < 20; c += 2) assert.notEqual(sides[c], sides[c + 1]);
  assert.equal(m.pairs(5)!.ours.length, 10);
  assert.ok(m.balanced);
});
