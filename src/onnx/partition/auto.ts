/**
 * The "auto" engine: runs a graph on our compiled executor first; once the graph is warm on ours
 * (tiering, like a JIT: functions called a few times never make a session; see `isWarm`), cuts
 * it into segments (cut.ts), and chooses where each segment the exporter can take runs, by
 * measurement on the caller's actual calls (each call runs exactly once, on one side, so its
 * side effects — host calls, variable assignments, draws — happen exactly once):
 *
 * 1. Per segment (when the cut has two or more engine segments): the cut runs with every such
 *    segment on onnxruntime, or every one on ours, alternating call by call, each segment's own
 *    time recorded (segments.ts's `timedRun`). The segments' code of ours is new code, so it
 *    first runs a warm-up (as the whole graph did) before anything is timed. A segment goes to
 *    the engine only when it is at least 3% faster there: the median, over pairs of runs (two
 *    calls on the same argument tensors, else one right after the other: pairs.ts), of its time
 *    there over its time on ours (`chooseSide`), once the pairs settle every segment's side or
 *    the budget is spent (as in step 2, below).
 * 2. Whole graph: the cut with that placement (the "plan") against the whole graph on ours,
 *    alternating, compared the same way (pairs of runs), the same 3% margin. This keeps "all ours" (today's executor,
 *    one compiled graph, no per-call overhead) whenever the placement does not pay as a whole:
 *    per-segment times leave out what the boundaries between sides cost. A cut with one engine
 *    segment goes straight to this step (its per-segment choice is this comparison). The pairs
 *    measured go on until a sign test on them settles the choice, or each side has run
 *    `unsureMs` and `unsureReps` (`measuredEnough`): a few pairs of a slow or noisy graph decide by chance.
 *
 * Why wait for warmth and demand a margin: V8 optimizes our generated code over its first ~100
 * calls, while onnxruntime's native kernels need no warm-up, so a race run on a graph's first
 * calls favours the plan, and it did: beam search and L-BFGS kept plans 2.8-4.8x slower than our
 * warm code. And a tie should stay ours: our results are bit-identical to eager code, the plan's
 * differ by float32 rounding. A plan kept is measured again (step 2) after `recheckCalls` calls on
 * it, then after twice as many each time it is kept, and dropped if ours has become as fast (a
 * choice made under load, or on cold code or a cold cache, is undone); a graph step 2 kept on ours is measured again after `oursRecheckCalls` calls on ours,
 * then after twice as many each time (a wrong choice made under load is not final either way:
 * ResNet's training step stayed on ours in one run of bench/auto-engine.ts where the engine ran
 * it 1.26x as fast). A graph kept on ours for good: none of its segments can go to the engine,
 * or step 1 placed none there.
 *
 * A segment whose engine run fails (a session that does not load, onnxruntime refusing an input)
 * runs on ours for that call, from the same inputs, the variables it assigned put back first
 * (segments.ts): the segments before it, and their host calls, run once, and an error the user
 * caused is raised by ours. While being timed, that segment then stays ours; a plan already kept
 * falls back to ours for the whole graph from the next call: never a wrong answer, never an error
 * the user did not cause. An error raised by a segment of ours propagates, as from the whole graph.
 */
import type { Tensor } from "../../core/tensor.js";
import { isTracing } from "../../core/context.js";
import type { FunctionLibrary, Graph } from "../../graph/ir.js";
import { installedExecutor, type Executor, type PreparedRun } from "../../staging/concrete-function.js";
import { cutGraph } from "./cut.js";
import { engineEligible, placedRun, prepareSegments, timedRun, type SegmentRuns } from "./segments.js";
import { argumentKey, PairedRuns, type Pairs } from "./pairs.js";

/** How "auto" chooses: by measurement, or forced (tests: deterministic, never timing-dependent). */
export type AutoChoice = "measure" | "plan" | "ours";

export interface AutoPolicy {
  choice: AutoChoice;
  /** Calls of a graph run on ours before its plan is made and measured, at least. */
  warmCalls: number;
  /**
   * ...and then until it has run `warmUpMs` ms on ours, or `maxWarmUpCalls` calls, or at least
   * `warmUpCalls` calls that have stopped getting faster (`steadyRatio`), whichever comes first
   * (the segments' code of ours warms up the same way).
   */
  warmUpCalls: number;
  warmUpMs: number;
  maxWarmUpCalls: number;
  /**
   * "Stopped getting faster": the median of the latest calls (a tenth of them, at least 3) is at
   * least `steadyRatio` x the median of as many calls ending halfway (the first call, which
   * compiles, left out). 0: no such condition (tests: a warm-up counted in calls only).
   */
  steadyRatio: number;
  /** Timed runs of each side (after the plan's first, untimed run, which makes its sessions), at least... */
  reps: number;
  /** ...and until each side has run `measureMs` ms in all (a fast graph gets more runs; noise averages out), at most `maxReps`. */
  measureMs: number;
  maxReps: number;
  /**
   * Step 2 goes on past that while its pairs do not settle the choice (`settled`: a sign test
   * on them), until each side has run `unsureMs` ms in all or `maxReps` runs: five pairs of a
   * 40-60 ms graph (ResNet's step) or of a noisy one (Tree-LSTM's, where the pairs' median put the
   * plan ahead while each side's median put it 17% behind) decided by chance.
   */
  unsureMs: number;
  /**
   * ...and at least `unsureReps` runs of each side (unless each has run 4 x `unsureMs`): at
   * 40-160 ms a call (ResNet's step, loaded) 500 ms are 3-12 runs, and six unsettled pairs kept
   * ours where each side's median put the plan 2.1x as fast.
   */
  unsureReps: number;
  /** A segment goes to the engine, and the plan is kept, only when its median time is below `margin` x ours. */
  margin: number;
  /**
   * A plan kept is measured against ours again after this many calls on it, then after twice as
   * many each time it is kept again (a choice made under load, or before our code or a cache
   * warmed, is not final: on a machine loaded 15 deep the warm-up's 1 s ended after ~35 calls
   * of L2HMC batch 32, at 28 ms a call where ours takes 0.8 once warm, and the plan was kept).
   */
  recheckCalls: number;
  /**
   * A graph kept on ours by step 2 (its plan measured slower) is measured again after this many
   * calls on ours, then after twice as many each time ours is kept again: a choice made under
   * load is not final either way, and a plan that is much slower costs its few timed runs, ever
   * more rarely. (Its plan, and its sessions, are kept meanwhile.)
   */
  oursRecheckCalls: number;
  /**
   * Either first recheck comes sooner for a slow graph: after as many calls as take
   * `recheckMs` ms at the measured speed of the side chosen (at least 10), when fewer than the
   * count above (5,000 calls of ResNet's 40-60 ms step are minutes: a wrong choice made under
   * load stood for as long).
   */
  recheckMs: number;
  /**
   * ...but never before the side chosen has run this long (ms, at its measured speed): a
   * recheck times the other side too, at least `reps` runs and `measureMs` each, so a fast graph
   * rechecked every 500 calls paid for it often. MNIST's host-loop step (0.16 ms on the plan,
   * 0.34 on ours) was rechecked six times in one bench row of 2,500 calls and ran at ours' speed.
   */
  recheckMinMs: number;
  /**
   * @internal Tests: the time charged to a measured run (default: the time it took): a whole
   * call (`segment` undefined; "plan" is the cut, "ours" the whole graph on ours) or one
   * segment's run in step 1 (`segment`: its index in the cut; "plan" is its run on the engine).
   */
  timeOf: ((side: "ours" | "plan", ms: number, segment?: number) => number) | null;
}

const envChoice = typeof process !== "undefined" ? process.env.STAGECRAFT_AUTO : undefined;

/** STAGECRAFT_AUTO=plan|ours forces the choice (default: measure): "plan" puts every segment the engine can run there, "ours" runs everything on ours. */
export const autoPolicy: AutoPolicy = {
  choice: envChoice === "plan" || envChoice === "ours" ? envChoice : "measure",
  warmCalls: 3,
  warmUpCalls: 100,
  warmUpMs: 1000,
  maxWarmUpCalls: 1000,
  steadyRatio: 0.9,
  reps: 5,
  measureMs: 30,
  maxReps: 100,
  unsureMs: 500,
  unsureReps: 15,
  margin: 0.97,
  recheckCalls: 500,
  oursRecheckCalls: 5000,
  recheckMs: 10000,
  recheckMinMs: 2000,
  timeOf: null,
};

/** @internal Sets the policy (tests); returns the previous one. */
export function setAutoPolicy(p: Partial<AutoPolicy>): AutoPolicy {
  const before = { ...autoPolicy };
  Object.assign(autoPolicy, p);
  return before;
}

/** Where one segment of a cut runs: on the engine, on ours by choice (or after its engine run failed), or on ours because only ours can run it. */
export type SegmentPlace = "engine" | "ours" | "fixed";

/**
 * What "auto" did (tests and benchmarks). planMs: cutting graphs and preparing their segments;
 * firstRunMs: the plans' first runs while measuring, which make their onnxruntime sessions
 * (export and session creation): together, the one-time cost a graph pays on auto. chosePlan and
 * choseOurs: the graphs measured and kept on each side (a plan measured again moves to the side
 * its new measurement picks); rechecks: those measurements again. segmentsOnEngine and
 * segmentsOnOurs: the engine-eligible segments step 1 placed on each side. lastChoice: the most
 * recent graph's choice, with its cut's placement (on "ours", the placement it measured).
 */
export const autoStats = {
  plans: 0,
  choseOurs: 0,
  chosePlan: 0,
  fallbacks: 0,
  rechecks: 0,
  planMs: 0,
  firstRunMs: 0,
  segmentsOnEngine: 0,
  segmentsOnOurs: 0,
  lastChoice: null as { graph: string; side: "ours" | "plan"; segments: SegmentPlace[] } | null,
  /** The most recent step-2 measurement: the medians (ms) it compared, and how many timed runs of each. */
  lastMeasured: null as { graph: string; ours: number; plan: number; runs: number } | null,
};

/** Step 1: each engine-eligible segment timed on both sides. */
interface SegmentTrial {
  segs: SegmentRuns;
  /** Untimed all-ours runs so far (the segments' code of ours warming up). */
  warm: WarmUp;
  /** Runs with the segments on the engine (the first untimed: it makes the sessions). */
  engineRuns: number;
  /** The timed runs ("plan": the segments on the engine), each with its segments' times. */
  runs: PairedRuns;
}

/** Per graph: its calls so far, and its plan and choice once made. */
interface AutoState {
  /** The calls on ours before the plan was made. */
  warm: WarmUp;
  trial: SegmentTrial | null;
  plan: PreparedRun | null;
  /** The plan's placement, per segment of the cut. */
  places: SegmentPlace[];
  /** null: not chosen yet; "ours" also after a plan failed or has no engine segment. */
  chosen: "ours" | "plan" | null;
  /** Step 2's timed runs. */
  measured: PairedRuns;
  planRuns: number;
  /** Calls on the plan since it was chosen, and the count at which it is measured again (autoPolicy.recheckCalls, doubled at each recheck that keeps it). */
  planCalls: number;
  planRecheckAt: number;
  /** On ours by step 2's measurement: the plan it measured, kept to measure again; null otherwise. */
  parked: PreparedRun | null;
  /** Calls on ours since then, and the count at which the plan is measured again. */
  oursCalls: number;
  oursRecheckAt: number;
}

/**
 * @internal The measured choice: the plan only when, over the pairs of runs (`ours[i]` and
 * `plan[i]`: two calls on the same arguments, or one right after the other; pairs.ts), the median of plan / ours
 * is below `margin` (exported for tests). Pairs, not each side's median taken apart: on a shared
 * machine the load changes while a graph is measured, and two runs in a row see the same load,
 * while the medians of each side can compare one side's busy runs with the other's quiet ones.
 */
export function chooseSide(timesOurs: number[], timesPlan: number[]): "ours" | "plan" {
  const n = Math.min(timesOurs.length, timesPlan.length);
  const ratios: number[] = [];
  for (let i = 0; i < n; i++) {
    const o = timesOurs[i]!, p = timesPlan[i]!;
    ratios.push(o > 0 ? p / o : p > 0 ? Infinity : 1);
  }
  return n > 0 && median(ratios) < autoPolicy.margin ? "plan" : "ours";
}

/** P(X <= s) for X ~ Binomial(n, 1/2). */
function binomialTail(n: number, s: number): number {
  let c = 1, total = 0;
  for (let k = 0; k <= s; k++) {
    total += c;
    c = (c * (n - k)) / (k + 1);
  }
  return total / 2 ** n;
}

/** How unlikely (two-sided, as a sign test) a count of pairs on one side must be for the pairs to settle the choice. */
const SETTLED_P = 0.1;

/**
 * @internal Whether the pairs settle the choice (exported for tests): a sign test of "the plan is
 * below `margin` x ours" (the statistic `chooseSide` reads) over the pairs, the count of pairs
 * with plan / ours below the margin either so high or so low that a coin would give it with
 * probability under 10%. Five pairs all one way settle it; 3 of 5 do not, nor 6 of 10.
 */
export function settled(timesOurs: number[], timesPlan: number[]): boolean {
  const n = Math.min(timesOurs.length, timesPlan.length);
  let below = 0;
  for (let i = 0; i < n; i++) if (timesPlan[i]! < autoPolicy.margin * timesOurs[i]!) below++;
  return binomialTail(n, Math.min(below, n - below)) <= SETTLED_P / 2;
}

/**
 * Code of ours warming up: its calls, their time, and each call's time. Whether it is warm (V8
 * has optimized it) is read off the calls themselves, with a time budget for slow graphs: a
 * budget of 300 ms (or 100 calls) alone ended the warm-up of a large graph while its code was
 * still getting faster (L2HMC batch 32: ~20 calls at 5-10 ms where warm code takes 0.4-0.5 ms;
 * at 100 calls it still took 0.8 ms; the plan measured against that, 0.7-1.1 ms, was kept at 2x
 * ours once warm), while a call count alone keeps a slow graph (a 50-250 ms step that
 * onnxruntime runs in 20) on ours for seconds: so at least 100 calls whose latest are no faster
 * than those halfway (not the ones just before: V8's tiers come by call counts, so code still
 * improving is faster now than at half as many calls, while block-to-block noise of a few calls
 * reads as steady), or 1 s, or 1,000 calls. (@internal exported for its tests)
 */
export class WarmUp {
  /** Calls run so far, and their time in all. */
  calls = 0;
  ms = 0;
  /** Each call's time after the first (which compiles). */
  private readonly times: number[] = [];

  add(ms: number): void {
    this.calls++;
    this.ms += ms;
    if (this.calls > 1) this.times.push(ms);
  }

  get warm(): boolean {
    const p = autoPolicy;
    if (this.calls < p.warmCalls) return false;
    if (this.ms >= p.warmUpMs || this.calls >= p.maxWarmUpCalls) return true;
    return this.calls >= p.warmUpCalls && this.steady();
  }

  private steady(): boolean {
    const ratio = autoPolicy.steadyRatio;
    if (ratio <= 0) return true;
    const t = this.times;
    const b = Math.max(3, Math.floor(t.length / 10));
    const half = t.length >> 1;
    if (half < b) return false;
    return median(t.slice(t.length - b)) >= ratio * median(t.slice(half - b, half));
  }
}

const total = (ts: number[]): number => ts.reduce((a, b) => a + b, 0);

/**
 * The calls before a side chosen is first measured again: `calls`, or fewer where those take more
 * than `recheckMs` at `ms` a call, or more where they take less than `recheckMinMs`.
 */
function firstRecheck(calls: number, ms: number): number {
  if (!(ms > 0)) return calls;
  const p = autoPolicy;
  return Math.max(Math.ceil(p.recheckMinMs / ms), Math.min(calls, Math.max(10, Math.ceil(p.recheckMs / ms))));
}

/** Whether a side has been timed enough. */
function enough(ts: number[]): boolean {
  return ts.length >= autoPolicy.maxReps || (ts.length >= autoPolicy.reps && total(ts) >= autoPolicy.measureMs);
}

/** The pairs' times: whole calls, or segment `k`'s runs. */
function pairTimes(pairs: Pairs, k?: number): [ours: number[], plan: number[]] {
  const of = (r: { ms: number; segments: number[] | null }) => (k === undefined ? r.ms : r.segments![k]!);
  return [pairs.ours.map(of), pairs.plan.map(of)];
}

/**
 * Whether a measurement (step 1's or step 2's) has measured enough to choose, checked once each
 * side has run as often (a pair complete): both sides enough, and the pairs settle it (each of
 * `segments`, for step 1; the whole calls, for step 2) or the budget for an unsettled choice is spent.
 */
function measuredEnough(m: PairedRuns, segments?: number[]): boolean {
  if (!m.balanced) return false;
  const ours = m.times(false), plan = m.times(true);
  if (!enough(ours) || !enough(plan)) return false;
  const p = autoPolicy;
  if (ours.length >= p.maxReps || plan.length >= p.maxReps || unsureSpent(ours, plan)) return true;
  const pairs = m.pairs(p.reps);
  if (pairs === null) return false;
  return segments === undefined ? settled(...pairTimes(pairs)) : segments.every((k) => settled(...pairTimes(pairs, k)));
}

/** Whether the budget for an unsettled choice is spent: `unsureMs` and `unsureReps` of each side, or 4 x `unsureMs`. */
function unsureSpent(a: number[], b: number[]): boolean {
  const p = autoPolicy, ta = total(a), tb = total(b);
  if (ta >= 4 * p.unsureMs && tb >= 4 * p.unsureMs) return true;
  return ta >= p.unsureMs && tb >= p.unsureMs && Math.min(a.length, b.length) >= p.unsureReps;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[s.length >> 1]!;
}

const charged = (side: "ours" | "plan", ms: number, segment?: number): number =>
  autoPolicy.timeOf === null ? ms : autoPolicy.timeOf(side, ms, segment);

/** The placement's names (for autoStats), per segment of the cut. */
function placesOf(segs: SegmentRuns, onEngine: boolean[]): SegmentPlace[] {
  return segs.cut.segments.map((s, k) => (onEngine[k] && segs.segments[k]!.engine !== null ? "engine" : s.onEngine ? "ours" : "fixed"));
}

/** The "auto" executor over onnxruntime engine `engine` and the installed executor (ours). */
export function autoExecutor(engine: Executor): Executor {
  const states = new WeakMap<Graph, AutoState>();
  const ours = (): Executor => installedExecutor();
  const oursRun = (graph: Graph, library: FunctionLibrary, numArgInputs: number): PreparedRun => {
    const e = ours();
    return e.prepare?.(graph, library, numArgInputs) ?? ((inputs) => e(graph, inputs, library, numArgInputs));
  };
  const record = (st: AutoState, graph: Graph, side: "ours" | "plan"): void => {
    autoStats.lastChoice = { graph: graph.name, side, segments: st.places };
  };
  const keepOurs = (st: AutoState): void => {
    st.chosen = "ours";
    st.plan = null;
    st.trial = null;
    st.parked = null;
  };
  /** Cuts the graph and prepares its segments; then the plan to measure (or force), the per-segment trial, or ours when no segment can go to the engine. */
  const makePlan = (st: AutoState, graph: Graph, library: FunctionLibrary, numArgInputs: number): void => {
    const t0 = performance.now();
    try {
      const cut = cutGraph(graph, library, numArgInputs);
      const segs = prepareSegments(cut, ours(), engine, library);
      autoStats.fallbacks += cut.segments.filter((s, k) => s.onEngine && segs.segments[k]!.engine === null).length;
      const eligible = engineEligible(segs);
      if (eligible.length === 0) keepOurs(st);
      else if (eligible.length === 1 || autoPolicy.choice === "plan") {
        const all = segs.segments.map((x) => x.engine !== null);
        st.plan = placedRun(segs, all, planFailed(st));
        st.places = placesOf(segs, all);
      } else {
        st.trial = { segs, warm: new WarmUp(), engineRuns: 0, runs: new PairedRuns() };
      }
      autoStats.plans++;
    } catch {
      keepOurs(st);
      autoStats.fallbacks++;
    }
    autoStats.planMs += performance.now() - t0;
  };
  /**
   * What a plan does when one of its engine segments fails (segments.ts: that call goes on, the
   * segment on ours): the graph runs on ours from the next call on.
   */
  const planFailed = (st: AutoState) => (): void => {
    keepOurs(st);
    autoStats.fallbacks++;
  };
  /** Step 1's placement: each eligible segment on the engine when clearly faster there; then step 2 measures it, or the graph stays ours. */
  const placeSegments = (st: AutoState, graph: Graph, t: SegmentTrial): void => {
    const pairs = t.runs.finalPairs(autoPolicy.reps);
    const onEngine = t.segs.segments.map((x, k) => x.engine !== null && chooseSide(...pairTimes(pairs, k)) === "plan");
    const eligible = engineEligible(t.segs).length;
    const placed = onEngine.filter(Boolean).length;
    autoStats.segmentsOnEngine += placed;
    autoStats.segmentsOnOurs += eligible - placed;
    st.places = placesOf(t.segs, onEngine);
    st.trial = null;
    if (placed === 0) {
      keepOurs(st);
      autoStats.choseOurs++;
      record(st, graph, "ours");
      return;
    }
    st.plan = placedRun(t.segs, onEngine, planFailed(st));
    st.planRuns = 1; // (its sessions exist and its code of ours is warm: its first run is timed)
  };
  /** A call of step 1: the cut with every eligible segment on the engine, or every one on ours, each segment timed. */
  const trialCall = (st: AutoState, graph: Graph, t: SegmentTrial, inputs: Tensor[], numArgInputs: number): Tensor[] => {
    const oursWarm = t.warm.warm;
    const key = oursWarm && t.engineRuns > 0 ? argumentKey(inputs, numArgInputs) : "";
    const onEngine = t.engineRuns === 0 || (oursWarm && t.runs.nextOnPlan(key));
    const times: number[] = new Array(t.segs.cut.segments.length).fill(0);
    let failed = false;
    const t0 = performance.now();
    const out = timedRun(t.segs, onEngine, inputs, times, (k) => {
      // that segment stays ours (it ran there for this call); the others go on being timed (from the start: the runs changed)
      failed = true;
      autoStats.fallbacks++;
      t.segs.segments[k]!.engine = null;
      t.runs = new PairedRuns();
      if (engineEligible(t.segs).length === 0) keepOurs(st);
    });
    if (failed) return out;
    const dt = performance.now() - t0;
    if (onEngine && t.engineRuns++ === 0) autoStats.firstRunMs += dt;
    else if (!oursWarm) t.warm.add(dt);
    else {
      const side = onEngine ? "plan" : "ours";
      const segments = times.map((ms, k) => (t.segs.segments[k]!.engine !== null ? charged(side, ms, k) : ms));
      t.runs.add({ plan: onEngine, key, ms: charged(side, dt), segments });
      if (measuredEnough(t.runs, engineEligible(t.segs))) placeSegments(st, graph, t);
    }
    return out;
  };
  const call = (st: AutoState, graph: Graph, library: FunctionLibrary, numArgInputs: number, run: PreparedRun, inputs: Tensor[]): Tensor[] => {
    if (st.chosen === "ours" && st.parked !== null && st.oursCalls >= st.oursRecheckAt && autoPolicy.choice === "measure" && !isTracing()) {
      // measure again (step 2): the plan kept is timed afresh against ours
      st.chosen = null;
      st.plan = st.parked;
      st.parked = null;
      st.measured = new PairedRuns();
      autoStats.rechecks++;
      autoStats.choseOurs--; // (the counts say where graphs are now: the new choice counts again)
    }
    if (st.chosen === "ours" || isTracing()) return run(inputs);
    if (st.chosen === "plan") {
      if (autoPolicy.choice !== "measure" || ++st.planCalls < st.planRecheckAt) return st.plan!(inputs);
      // measure again (step 2): both sides timed afresh (the plan's sessions exist: its next run is timed)
      st.chosen = null;
      st.measured = new PairedRuns();
      st.planCalls = 0;
      autoStats.rechecks++;
      autoStats.chosePlan--; // (the counts say where graphs are now: the new choice counts again)
    }
    if (autoPolicy.choice === "measure" && !st.warm.warm) {
      const t0 = performance.now();
      const out = run(inputs);
      st.warm.add(performance.now() - t0);
      return out;
    }
    if (autoPolicy.choice === "ours") {
      st.chosen = "ours";
      return run(inputs);
    }
    if (st.plan === null && st.trial === null) {
      makePlan(st, graph, library, numArgInputs);
      if (st.chosen === "ours") return run(inputs);
    }
    if (autoPolicy.choice === "plan") {
      if (st.plan === null) return run(inputs); // (a trial made under "measure": the policy changed)
      st.chosen = "plan";
      record(st, graph, "plan");
      return st.plan!(inputs);
    }
    if (st.trial !== null) return trialCall(st, graph, st.trial, inputs, numArgInputs);
    // step 2: the plan's first run makes its sessions (untimed), then plan and ours alternate (pairs.ts)
    const m = st.measured;
    const key = st.planRuns === 0 ? "" : argumentKey(inputs, numArgInputs);
    const onPlan = st.planRuns === 0 || m.nextOnPlan(key);
    const t0 = performance.now();
    const out = onPlan ? st.plan!(inputs) : run(inputs);
    const dt = charged(onPlan ? "plan" : "ours", performance.now() - t0);
    if (st.chosen !== null) return out; // (the plan failed)
    if (onPlan && st.planRuns++ === 0) autoStats.firstRunMs += dt;
    else m.add({ plan: onPlan, key, ms: dt, segments: null });
    if (measuredEnough(m)) {
      const timesOurs = m.times(false), timesPlan = m.times(true);
      autoStats.lastMeasured = { graph: graph.name, ours: median(timesOurs), plan: median(timesPlan), runs: timesOurs.length };
      st.chosen = chooseSide(...pairTimes(m.finalPairs(autoPolicy.reps)));
      if (st.chosen === "ours") {
        st.parked = st.plan;
        st.plan = null;
        st.oursCalls = 0;
        st.oursRecheckAt = st.oursRecheckAt === 0 ? firstRecheck(autoPolicy.oursRecheckCalls, median(timesOurs)) : 2 * st.oursRecheckAt;
      }
      if (st.chosen === "plan") {
        st.planRecheckAt = st.planRecheckAt === 0 ? firstRecheck(autoPolicy.recheckCalls, median(timesPlan)) : 2 * st.planRecheckAt;
        autoStats.chosePlan++;
      }
      else autoStats.choseOurs++;
      record(st, graph, st.chosen);
    }
    return out;
  };
  const stateOf = (graph: Graph, library: FunctionLibrary): AutoState => {
    let st = states.get(graph);
    if (st === undefined) {
      st = {
        warm: new WarmUp(), trial: null, plan: null, places: [], chosen: null, measured: new PairedRuns(), planRuns: 0, planCalls: 0, planRecheckAt: 0,
        parked: null, oursCalls: 0, oursRecheckAt: 0 };
      states.set(graph, st);
    }
    return st;
  };
  const execute: Executor = (graph, inputs, library, numArgInputs = inputs.length) => {
    const st = stateOf(graph, library);
    if (st.parked !== null) st.oursCalls++;
    return call(st, graph, library, numArgInputs, (ins) => ours()(graph, ins, library, numArgInputs), inputs);
  };
  execute.prepare = (graph, library, numArgInputs) => {
    const st = stateOf(graph, library);
    const run = oursRun(graph, library, numArgInputs);
    // (on ours: one compare, and a count while a plan waits to be measured again)
    return (inputs) => (st.chosen === "ours" && (st.parked === null || ++st.oursCalls < st.oursRecheckAt) ? run(inputs) : call(st, graph, library, numArgInputs, run, inputs));
  };
  return execute;
}

/** Our executor by name (`engine: "stagecraft"`): the installed one, looked up at each preparation. */
export function oursByName(): Executor {
  const execute: Executor = (graph, inputs, library, numArgInputs) => installedExecutor()(graph, inputs, library, numArgInputs);
  execute.prepare = (graph, library, numArgInputs) => {
    const e = installedExecutor();
    return e.prepare?.(graph, library, numArgInputs) ?? ((inputs) => e(graph, inputs, library, numArgInputs));
  };
  return execute;
}
