/**
 * engine "auto" (onnx/partition): a staged graph cut into segments, the exportable ones run as
 * onnxruntime sessions and the rest on our executor, must give our executor's answers. The
 * measured choice is forced to the partitioned plan (setAutoPolicy), so these tests never depend
 * on timings; every function is built so that part of it cannot be exported (a host call) and
 * part of it is big enough for the engine, so the plan really mixes both.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as sc from "../../src/api/index.js";
import { autoStats, chooseSide, setAutoPolicy, settled, WarmUp } from "../../src/onnx/partition/auto.js";
import { cutGraph } from "../../src/onnx/partition/cut.js";
import { Rng } from "../util/rng.js";

setAutoPolicy({ choice: "plan", warmCalls: 0 });
// (the suite's runner turns the determinism switch on, which keeps auto on ours: these are auto's tests)
sc.config.setDeterministic(false);

function close(a: sc.Tensor, b: sc.Tensor, what: string, rtol = 1e-5): void {
  assert.deepEqual(a.shape, b.shape, `${what}: shape`);
  const p = a.dataSync(), q = b.dataSync();
  for (let i = 0; i < p.length; i++) {
    const x = Number(p[i]), y = Number(q[i]);
    assert.ok(Math.abs(x - y) <= rtol * (1 + Math.abs(y)), `${what}: element ${i}: auto ${x}, ours ${y}`);
  }
}

const rng = new Rng(7);
const big = (shape: number[]) => rng.tensor(shape, -0.5, 0.5, "float32");
const heavy = (x: sc.Tensor) => x.matmul(x).tanh().add(1).mul(0.5).sub(0.25);

const cases: [string, (...xs: sc.Tensor[]) => sc.Tensor, sc.Tensor[]][] = [
  ["a host call between two exportable runs", (x) => {
    const h = sc.hostCall((t: sc.Tensor) => sc.mul(t, 3), sc.spec([128, 128], "float32"), heavy(x)) as sc.Tensor;
    return heavy(h);
  }, [big([128, 128])]],
  ["a while loop (one unit) then a reduction", (x) => {
    const [, y] = sc.whileLoop((i: sc.Tensor) => i.less(3), (i: sc.Tensor, a: sc.Tensor) => [i.add(1), heavy(a)], [sc.scalar(0, "int32"), x]);
    return sc.sum(y!, [1]);
  }, [big([128, 128])]],
  ["a cond on a data-dependent predicate", (x) => sc.cond(sc.sum(x).greater(0), () => heavy(x), () => heavy(x).neg()), [big([128, 128])]],
  ["the graph-AD gradient of a loss with a host call", (x) => {
    const loss = (t: sc.Tensor) => sc.sum(sc.square(heavy(sc.hostCall((u: sc.Tensor) => sc.mul(u, 2), sc.spec([128, 128], "float32"), t) as sc.Tensor)));
    return sc.grad(loss)(x) as sc.Tensor;
  }, [big([128, 128])]],
];

for (const [name, f, xs] of cases) {
  test(`auto = ours: ${name}`, () => {
    const ours = sc.stage(f, { autograph: false, engine: "stagecraft" });
    const auto = sc.stage(f, { autograph: false, engine: "auto" });
    const before = autoStats.plans;
    for (let call = 0; call < 3; call++) close(auto(...xs), ours(...xs), `${name}, call ${call}`);
    assert.ok(autoStats.plans > before, `${name}: a partitioned plan was made`);
  });
}

test("auto runs random draws on the engine (they export): the same draws as ours for the same key", () => {
  const spec = sc.spec([128, 128], "float32");
  const f = (x: sc.Tensor, key: sc.Tensor) => {
    const h = sc.hostCall((t: sc.Tensor) => sc.mul(t, 3), spec, heavy(x.add(sc.random.uniform([128, 128], { key })))) as sc.Tensor;
    return heavy(h.add(sc.random.normal([128, 128], { key: sc.random.foldIn(key, 1) })));
  };
  const x = big([128, 128]);
  const cf = sc.stage(f, { autograph: false }).concrete(x, sc.random.key(5));
  const cut = cutGraph(cf.graph, cf.library, 2);
  const placement = (op: string) => cut.segments.filter((s) => s.graph.nodes.some((n) => n.op === op)).map((s) => s.onEngine);
  assert.deepEqual(placement("randomUniform"), [true], "the uniform draw is in an engine segment");
  assert.deepEqual(placement("randomNormal"), [true], "the normal draw is in an engine segment");
  assert.deepEqual(placement("hostCall"), [false]);
  const ours = sc.stage(f, { autograph: false, engine: "stagecraft" });
  const auto = sc.stage(f, { autograph: false, engine: "auto" });
  const before = autoStats.plans;
  for (let call = 0; call < 3; call++) {
    const key = sc.random.key(5 + call);
    close(auto(x, key), ours(x, key), `call ${call}`);
  }
  assert.ok(autoStats.plans > before, "a partitioned plan was made");
});

test("a variable the graph assigns is updated once per call under auto, as ours", () => {
  const mk = () => sc.variable(sc.zeros([128, 128], "float32"));
  const va = mk(), vo = mk();
  const step = (v: sc.Variable) => (x: sc.Tensor) => {
    v.assign(v.read().add(heavy(x)));
    return sc.sum(v.read());
  };
  const x = big([128, 128]);
  const auto = sc.stage(step(va), { autograph: false, engine: "auto" });
  const ours = sc.stage(step(vo), { autograph: false, engine: "stagecraft" });
  for (let call = 0; call < 3; call++) close(auto(x), ours(x), `call ${call}`, 1e-4);
  close(va.read(), vo.read(), "the variables after three calls", 1e-4);
});

// onnxruntime's CPU provider has float32 kernels only for erf (gelu), tan, the inverse and
// hyperbolic trigonometric functions, convolutions and pooling: the export computes their
// float64 values through float32. Auto must not be less accurate than ours: those nodes stay ours.
const float64Cases: [string, (x: sc.Tensor) => sc.Tensor, () => sc.Tensor, string][] = [
  ["gelu (erf)", (x) => sc.gelu(x.matmul(x).mul(0.1)).add(1).mul(0.5).sub(0.25), () => rng.tensor([128, 128], -0.5, 0.5, "float64"), "gelu"],
  ["atan", (x) => sc.atan(x.matmul(x)).add(1).mul(0.5).sub(0.25), () => rng.tensor([128, 128], -0.5, 0.5, "float64"), "atan"],
  ["conv2d", (x) => sc.conv2d(x, x.slice([0, 0, 0, 0], [4, 4, 3, 3])).add(1).mul(0.5).sub(0.25), () => rng.tensor([4, 4, 32, 32], -0.5, 0.5, "float64"), "conv2d"],
];

for (const [name, f, input, op] of float64Cases) {
  test(`auto keeps a float64 ${name} on ours (the engine would compute it through float32), and the rest on the engine`, () => {
    const x = input();
    const cf = sc.stage(f, { autograph: false, engine: "stagecraft" }).concrete(x);
    const cut = cutGraph(cf.graph, cf.library, 1);
    const placement = cut.segments.filter((s) => s.graph.nodes.some((n) => n.op === op)).map((s) => s.onEngine);
    assert.deepEqual(placement, [false], `the float64 ${op} is in a segment of ours`);
    const ours = sc.stage(f, { autograph: false, engine: "stagecraft" });
    const auto = sc.stage(f, { autograph: false, engine: "auto" });
    for (let call = 0; call < 2; call++) close(auto(x), ours(x), `${name}, call ${call}`, 1e-13);
    // (in float32 the engine's kernel is the exact one: the node stays exportable)
    const x32 = sc.cast(x, "float32");
    const cf32 = sc.stage(f, { autograph: false }).concrete(x32);
    assert.ok(cutGraph(cf32.graph, cf32.library, 1).segments.some((s) => s.onEngine && s.graph.nodes.some((n) => n.op === op)), `the float32 ${op} is on the engine`);
  });
}

test("float64 on the engine keeps float64 accuracy: a product then a scaling (onnxruntime's extended optimizations would fuse them with a float32 alpha)", () => {
  const x = rng.tensor([64, 64], -0.5, 0.5, "float64");
  const f = (x: sc.Tensor) => x.matmul(x).mul(0.1).add(1).mul(0.5).sub(0.25);
  const ours = sc.stage(f, { autograph: false, engine: "stagecraft" })(x);
  for (const engine of ["auto", "onnxruntime"]) {
    const s = sc.stage(f, { autograph: false, engine });
    for (let call = 0; call < 2; call++) close(s(x), ours, `${engine}, call ${call}`, 1e-13);
  }
});

// The measured choice. Timings never decide a test: the warm-up is counted in calls here (its
// time budget set out of reach), and the margin rule is checked on given timings.
test("measuring waits until the graph is warm on ours: no plan before warmUpCalls calls", () => {
  const before = setAutoPolicy({ choice: "measure", warmCalls: 3, warmUpCalls: 12, warmUpMs: Infinity, steadyRatio: 0 });
  try {
    const x = big([128, 128]);
    const auto = sc.stage((x: sc.Tensor) => heavy(heavy(x)), { autograph: false, engine: "auto" });
    const ours = sc.stage((x: sc.Tensor) => heavy(heavy(x)), { autograph: false, engine: "stagecraft" });
    const plans0 = autoStats.plans;
    for (let call = 1; call <= 12; call++) {
      close(auto(x), ours(x), `call ${call}`);
      assert.equal(autoStats.plans, plans0, `no plan on call ${call} (the graph is still warming up on ours)`);
    }
    close(auto(x), ours(x), "call 13");
    assert.equal(autoStats.plans, plans0 + 1, "the plan is made on the first call after the warm-up");
  } finally {
    setAutoPolicy(before);
  }
});

test("the warm-up ends only once calls have stopped getting faster (given times): a graph still speeding up is not yet measured", () => {
  const before = setAutoPolicy({ warmCalls: 3, warmUpCalls: 100, warmUpMs: 1000, maxWarmUpCalls: 1000, steadyRatio: 0.9 });
  try {
    const warmAt = (timeOf: (call: number) => number): number => {
      const w = new WarmUp();
      for (let call = 1; call <= 5000; call++) {
        w.add(timeOf(call));
        if (w.warm) return call;
      }
      return -1;
    };
    // a big graph as V8 optimizes it: fast at first, then a slow drift (L2HMC batch 32's shape)
    const drifting = (call: number) => (call === 1 ? 250 : 0.5 + 20 / call);
    const at = warmAt(drifting);
    assert.ok(at > 100, `still getting faster at call 100 (${drifting(100).toFixed(2)} ms against ${drifting(50).toFixed(2)} at call 50): not warm there (warm at ${at})`);
    assert.ok(drifting(at) < 1.1 * 0.5 * 1.25, `warm once within ~25% of its speed (call ${at}: ${drifting(at).toFixed(3)} ms)`);
    // steady calls: warm at the first call past the budget whose halfway block is in
    const steady = warmAt(() => 1);
    assert.equal(steady, 100, "100 calls of 1 ms: the call budget, and steady");
    // a slow graph: warm once the time budget (1,000 ms) is spent, steady or not
    assert.equal(warmAt((call) => (call === 1 ? 400 : 100)), 7);
    // steady calls before 100 are not enough (a plateau between V8's tiers looks steady)
    assert.equal(warmAt((call) => (call < 60 ? 5 : 0.5)), 131, "5 ms a call, then 0.5 from call 60: warm once most of the calls halfway are fast too");
    // a graph that keeps getting faster is warm at the caps at the latest
    assert.equal(warmAt((call) => 100 / call), 1000, "the call cap");
    const dropping = (call: number) => 300 / Math.sqrt(call); // (never steady: sqrt(1/2) < 0.9)
    let spent = 0, capAt = 0;
    while (spent < 1000) spent += dropping(++capAt);
    assert.equal(warmAt(dropping), capAt, "the time budget: warm at the call that brings the warm-up to 1,000 ms");
  } finally {
    setAutoPolicy(before);
  }
});

test("the plan is kept only when clearly faster than ours: a tie or a small gain stays ours", () => {
  const ours = [10, 10, 10, 10, 10];
  assert.equal(chooseSide(ours, [10, 10, 10, 10, 10]), "ours", "a tie");
  assert.equal(chooseSide(ours, [9.8, 9.8, 9.8, 9.8, 9.8]), "ours", "2% faster is within the margin");
  assert.equal(chooseSide(ours, [8, 8, 8, 30, 8]), "plan", "20% faster by the median (one slow outlier)");
  assert.equal(chooseSide(ours, [12, 12, 12, 12, 12]), "ours", "slower");
});

test("the choice compares runs made one after the other (pairs), so a load change during the measurement does not decide it (given times)", () => {
  // runs alternate plan, ours, plan, ours...; the machine gets twice as busy from the third pair on
  // (another process started): the plan is 10% faster in every pair
  const ours = [10, 10, 20, 20, 20, 20, 20];
  const plan = [9, 9, 18, 18, 18, 18, 18];
  assert.equal(chooseSide(ours, plan), "plan", "10% faster in every pair");
  // the load rises in the middle of the plan's runs: the medians of each side taken apart compare
  // the plan's busy runs with ours' quiet ones
  assert.equal(chooseSide([10, 10, 10, 10, 20, 20, 20], [9, 9, 9, 18, 18, 18, 18]), "plan", "10% faster in 6 of 7 pairs");
  // and the other way: the load falls in the middle of the plan's runs, ours 10% faster in every pair but one
  assert.equal(chooseSide([20, 20, 20, 20, 10, 10, 10], [22, 22, 22, 11, 11, 11, 11]), "ours", "10% slower in 6 of 7 pairs");
});

test("a fast plan is not measured again before it has run recheckMinMs, however few calls recheckCalls says (charged times)", () => {
  const before = setAutoPolicy({
    choice: "measure", warmCalls: 0, warmUpCalls: 0, warmUpMs: 0, steadyRatio: 0, reps: 3, measureMs: 0, recheckCalls: 5, recheckMinMs: 40,
    timeOf: (side) => (side === "plan" ? 1 : 2),
  });
  try {
    const x = big([128, 128]);
    const f = (x: sc.Tensor) => heavy(heavy(x)).mul(11);
    const auto = sc.stage(f, { autograph: false, engine: "auto" });
    const s0 = { ...autoStats };
    let calls = 0;
    while (autoStats.chosePlan === s0.chosePlan && calls < 30) (auto(x), calls++);
    assert.equal(autoStats.chosePlan, s0.chosePlan + 1, "the plan was kept: charged 1 ms against ours' 2");
    // (40 ms at the plan's 1 ms a call: 40 calls, not recheckCalls' 5)
    for (let k = 0; k < 38; k++) auto(x);
    assert.equal(autoStats.rechecks, s0.rechecks, "not measured again within 40 ms of its calls");
    for (let k = 0; k < 4; k++) auto(x);
    assert.equal(autoStats.rechecks, s0.rechecks + 1, "measured again once it has run 40 ms");
  } finally {
    setAutoPolicy(before);
  }
});

test("a plan kept is measured again after recheckCalls calls on it, and dropped when ours is now faster (charged times, not real ones)", () => {
  let planIsFaster = true;
  const before = setAutoPolicy({
    choice: "measure", warmCalls: 0, warmUpCalls: 0, warmUpMs: 0, steadyRatio: 0, reps: 3, measureMs: 0, recheckCalls: 5, recheckMinMs: 0,
    timeOf: (side) => ((side === "plan") === planIsFaster ? 1 : 10),
  });
  try {
    const x = big([128, 128]);
    const f = (x: sc.Tensor) => heavy(heavy(x)).mul(2);
    const auto = sc.stage(f, { autograph: false, engine: "auto" });
    const ours = sc.stage(f, { autograph: false, engine: "stagecraft" });
    const s0 = { ...autoStats };
    let calls = 0;
    while (autoStats.chosePlan === s0.chosePlan && calls < 20) close(auto(x), ours(x), `call ${++calls}`);
    assert.equal(autoStats.chosePlan, s0.chosePlan + 1, "the plan was kept: it was charged 1 ms against ours' 10");
    planIsFaster = false;
    while (autoStats.choseOurs === s0.choseOurs && calls < 60) close(auto(x), ours(x), `call ${++calls}`);
    assert.equal(autoStats.rechecks, s0.rechecks + 1, "measured again");
    assert.equal(autoStats.choseOurs, s0.choseOurs + 1, "then kept on ours");
    assert.equal(autoStats.chosePlan, s0.chosePlan, "and no longer counted on the plan");
    const rechecks = autoStats.rechecks;
    for (let k = 0; k < 12; k++) close(auto(x), ours(x), `call ${++calls}`);
    assert.equal(autoStats.rechecks, rechecks, "a graph on ours is not measured again");
  } finally {
    setAutoPolicy(before);
  }
});

test("a graph kept on ours is measured again after oursRecheckCalls calls, then after twice as many, and moves to the plan once it is faster (charged times)", () => {
  let planIsFaster = false;
  const before = setAutoPolicy({
    choice: "measure", warmCalls: 0, warmUpCalls: 0, warmUpMs: 0, steadyRatio: 0, reps: 3, measureMs: 0, oursRecheckCalls: 10, recheckMinMs: 0,
    timeOf: (side) => ((side === "plan") === planIsFaster ? 1 : 10),
  });
  try {
    const x = big([128, 128]);
    const f = (x: sc.Tensor) => heavy(heavy(x)).mul(3);
    const auto = sc.stage(f, { autograph: false, engine: "auto" });
    const ours = sc.stage(f, { autograph: false, engine: "stagecraft" });
    const s0 = { ...autoStats };
    let calls = 0;
    while (autoStats.choseOurs === s0.choseOurs && calls < 20) close(auto(x), ours(x), `call ${++calls}`);
    assert.equal(autoStats.choseOurs, s0.choseOurs + 1, "kept on ours: the plan was charged 10 ms against ours' 1");
    const chosenAt = calls;
    // measured again after 10 calls on ours (the plan still slower: ours again), then after 20
    while (autoStats.rechecks === s0.rechecks && calls < chosenAt + 15) close(auto(x), ours(x), `call ${++calls}`);
    assert.equal(autoStats.rechecks, s0.rechecks + 1, "measured again");
    assert.ok(calls - chosenAt >= 10, `not before 10 calls on ours (at ${calls - chosenAt})`);
    while (autoStats.choseOurs === s0.choseOurs && calls < chosenAt + 40) close(auto(x), ours(x), `call ${++calls}`);
    assert.equal(autoStats.choseOurs, s0.choseOurs + 1, "kept on ours again");
    const againAt = calls;
    planIsFaster = true;
    while (autoStats.rechecks === s0.rechecks + 1 && calls < againAt + 30) close(auto(x), ours(x), `call ${++calls}`);
    assert.ok(calls - againAt >= 20, `the next measurement after twice as many calls (at ${calls - againAt})`);
    while (autoStats.chosePlan === s0.chosePlan && calls < againAt + 60) close(auto(x), ours(x), `call ${++calls}`);
    assert.equal(autoStats.chosePlan, s0.chosePlan + 1, "moved to the plan, now charged 1 ms against ours' 10");
    assert.equal(autoStats.choseOurs, s0.choseOurs, "and no longer counted on ours");
    assert.equal(autoStats.lastChoice?.side, "plan");
  } finally {
    setAutoPolicy(before);
  }
});

test("a plan kept again by its recheck is measured next after twice as many calls (charged times)", () => {
  const before = setAutoPolicy({
    choice: "measure", warmCalls: 0, warmUpCalls: 0, warmUpMs: 0, steadyRatio: 0, reps: 3, measureMs: 0, recheckCalls: 8, recheckMinMs: 0,
    timeOf: (side) => (side === "plan" ? 1 : 10),
  });
  try {
    const x = big([128, 128]);
    const f = (x: sc.Tensor) => heavy(heavy(x)).mul(4);
    const auto = sc.stage(f, { autograph: false, engine: "auto" });
    const ours = sc.stage(f, { autograph: false, engine: "stagecraft" });
    const s0 = { ...autoStats };
    let calls = 0;
    while (autoStats.chosePlan === s0.chosePlan && calls < 20) close(auto(x), ours(x), `call ${++calls}`);
    assert.equal(autoStats.chosePlan, s0.chosePlan + 1, "the plan was kept");
    // the calls at which a measurement starts, and the plan is kept again after each
    const starts: number[] = [];
    const keptAt: number[] = [calls];
    while (starts.length < 3 && calls < 200) {
      const r = autoStats.rechecks, p = autoStats.chosePlan;
      close(auto(x), ours(x), `call ${++calls}`);
      if (autoStats.rechecks > r) starts.push(calls);
      if (autoStats.chosePlan > p) keptAt.push(calls);
    }
    assert.equal(starts.length, 3, "measured again three times");
    assert.deepEqual(starts.map((c, i) => c - keptAt[i]!), [8, 16, 32], "after 8 calls on the plan, then 16, then 32");
  } finally {
    setAutoPolicy(before);
  }
});

test("pairs that do not settle the choice (a sign test) are measured further; all one way, or nearly, they settle it", () => {
  // (margin 0.97: a pair counts for the plan when plan < 0.97 x ours)
  assert.equal(settled([10, 10, 10, 10, 10], [8, 8, 8, 8, 8]), true, "5 of 5 pairs for the plan");
  assert.equal(settled([10, 10, 10, 10, 10], [12, 12, 12, 12, 12]), true, "0 of 5 pairs for the plan");
  assert.equal(settled([10, 10, 10, 10, 10], [8, 8, 8, 12, 12]), false, "3 of 5");
  assert.equal(settled(new Array(10).fill(10), [8, 8, 8, 8, 8, 8, 12, 12, 12, 12]), false, "6 of 10");
  assert.equal(settled(new Array(10).fill(10), [8, 8, 8, 8, 8, 8, 8, 8, 8, 12]), true, "9 of 10");
});

test("step 2 goes on measuring while its pairs are unsettled: five pairs whose median favours the plan by chance do not choose it (charged times)", () => {
  // the plan's charged times, run by run: its first five pairs 3 for the plan (median 0.9 x ours),
  // then it is slower in every pair (1.2 x ours): five pairs alone would have kept the plan
  const plan = (run: number) => (run < 3 ? 9 : 12);
  let planRuns = 0;
  const before = setAutoPolicy({
    choice: "measure", warmCalls: 0, warmUpCalls: 0, warmUpMs: 0, steadyRatio: 0, reps: 5, measureMs: 0, maxReps: 100, unsureMs: 400, oursRecheckCalls: 1e9,
    timeOf: (side) => (side === "ours" ? 10 : plan(planRuns++)),
  });
  try {
    const x = big([128, 128]);
    const f = (x: sc.Tensor) => heavy(heavy(x)).mul(5);
    const auto = sc.stage(f, { autograph: false, engine: "auto" });
    const ours = sc.stage(f, { autograph: false, engine: "stagecraft" });
    const s0 = { ...autoStats };
    let calls = 0;
    while (autoStats.chosePlan + autoStats.choseOurs === s0.chosePlan + s0.choseOurs && calls < 100) close(auto(x), ours(x), `call ${++calls}`);
    assert.equal(autoStats.choseOurs, s0.choseOurs + 1, "kept on ours: slower in most pairs");
    assert.equal(autoStats.chosePlan, s0.chosePlan);
    const runs = autoStats.lastMeasured!.runs;
    assert.ok(runs > 5 && runs < 40, `measured past five pairs, until the pairs settled it (${runs} runs of ours)`);
  } finally {
    setAutoPolicy(before);
  }
});

test("an unsettled step 2 stops once each side has run unsureMs and unsureReps, or 4 x unsureMs (charged times): a 40 ms graph gets more than five runs", () => {
  // the plan alternately 10% faster and 10% slower: never settled
  let planRuns = 0;
  const before = setAutoPolicy({
    choice: "measure", warmCalls: 0, warmUpCalls: 0, warmUpMs: 0, steadyRatio: 0, reps: 5, measureMs: 30, maxReps: 100, unsureMs: 400, unsureReps: 12, oursRecheckCalls: 1e9,
    timeOf: (side) => (side === "ours" ? ms : planRuns++ % 2 === 0 ? 0.9 * ms : 1.1 * ms),
  });
  let ms = 20;
  try {
    const x = big([128, 128]);
    const measured = (k: number): number => {
      const f = (x: sc.Tensor) => heavy(heavy(x)).mul(6 + k);
      const auto = sc.stage(f, { autograph: false, engine: "auto" });
      const s0 = { ...autoStats };
      let calls = 0;
      while (autoStats.chosePlan + autoStats.choseOurs === s0.chosePlan + s0.choseOurs && calls < 200) (auto(x), calls++);
      return autoStats.lastMeasured!.runs;
    };
    assert.equal(measured(0), 20, "20 ms a run: 400 ms of each side (20 runs), past the 12 runs");
    ms = 100;
    assert.equal(measured(1), 12, "100 ms a run: 400 ms after 4 runs, then on to 12 runs");
    ms = 200;
    assert.equal(measured(2), 8, "200 ms a run: 1,600 ms of each side (8 runs), before 12");
  } finally {
    setAutoPolicy(before);
  }
});

test("a slow graph is first measured again after recheckMs of calls at its measured speed, when that is fewer calls than the count (charged times)", () => {
  const before = setAutoPolicy({
    choice: "measure", warmCalls: 0, warmUpCalls: 0, warmUpMs: 0, steadyRatio: 0, reps: 3, measureMs: 0, unsureMs: 0,
    oursRecheckCalls: 5000, recheckCalls: 500, recheckMinMs: 0, recheckMs: 1000,
    timeOf: (side) => (side === "ours" ? 50 : 100),
  });
  try {
    const x = big([128, 128]);
    const f = (x: sc.Tensor) => heavy(heavy(x)).mul(7);
    const auto = sc.stage(f, { autograph: false, engine: "auto" });
    const s0 = { ...autoStats };
    let calls = 0;
    while (autoStats.choseOurs === s0.choseOurs && calls < 20) (auto(x), calls++);
    assert.equal(autoStats.choseOurs, s0.choseOurs + 1, "kept on ours (charged 50 ms against the plan's 100)");
    const chosenAt = calls;
    while (autoStats.rechecks === s0.rechecks && calls < chosenAt + 100) (auto(x), calls++);
    assert.equal(calls - chosenAt, 20, "measured again after 1,000 ms of calls at 50 ms (not after 5,000 calls)");
  } finally {
    setAutoPolicy(before);
  }
});

test("step 2 pairs runs on the same arguments: calls cycling over inputs of unequal work (an even cycle) do not line up with the sides (charged times)", () => {
  // 8 inputs of one shape, cycled: even ones twice the work of odd ones (TreeLSTM's trees, padded
  // to one shape); the plan 10% slower, or 10% faster, on every input. Pairs of consecutive calls
  // gave the plan all the light inputs (or all the heavy ones, by the phase) at every measurement.
  const inputs = Array.from({ length: 8 }, () => big([128, 128]));
  let current = 0;
  let planFactor = 1.1;
  const before = setAutoPolicy({
    choice: "measure", warmCalls: 0, warmUpCalls: 0, warmUpMs: 0, steadyRatio: 0, reps: 5, measureMs: 0, maxReps: 100, unsureMs: 1e9,
    recheckCalls: 1e9, recheckMinMs: 0, oursRecheckCalls: 1e9,
    timeOf: (side) => (current % 2 === 0 ? 20 : 10) * (side === "plan" ? planFactor : 1),
  });
  try {
    const chose = (k: number, phase: number): string => {
      const f = (x: sc.Tensor) => heavy(heavy(x)).mul(20 + k);
      const auto = sc.stage(f, { autograph: false, engine: "auto" });
      const s0 = { ...autoStats };
      for (let c = phase; c < phase + 200 && autoStats.chosePlan + autoStats.choseOurs === s0.chosePlan + s0.choseOurs; c++) {
        current = c % 8;
        auto(inputs[current]!);
      }
      assert.equal(autoStats.chosePlan + autoStats.choseOurs, s0.chosePlan + s0.choseOurs + 1, "chosen");
      return autoStats.lastChoice!.side;
    };
    planFactor = 1.1;
    assert.equal(chose(0, 0), "ours", "the plan 10% slower on every input, first call on input 0");
    assert.equal(chose(1, 1), "ours", "the plan 10% slower on every input, first call on input 1");
    planFactor = 0.9;
    assert.equal(chose(2, 0), "plan", "the plan 10% faster on every input, first call on input 0");
    assert.equal(chose(3, 1), "plan", "the plan 10% faster on every input, first call on input 1");
  } finally {
    setAutoPolicy(before);
  }
});
