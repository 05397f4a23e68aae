/**
 * The "auto" engine: runs a graph on our compiled executor first; once the graph is warm on ours
 * (tiering, like a JIT: functions called a few times never make a session; see `isWarm`), cuts
 * it into segments (cut.ts), the exportable ones on onnxruntime sessions, and measures that plan
 * against our executor on the caller's actual calls, interleaved (one run per call, so a call's
 * side effects — host calls, variable assignments, draws — happen exactly once), and keeps the
 * plan only when it is clearly faster (per graph: one choice between "all ours" and "the plan";
 * the plan itself places each segment by what the exporter can express and the size threshold).
 *
 * Why wait for warmth and demand a margin: V8 optimizes our generated code over its first ~100
 * calls, while onnxruntime's native kernels need no warm-up, so a race run on a graph's first
 * calls favours the plan, and it did: beam search and L-BFGS kept plans 2.8-4.8x slower than our
 * warm code. And a tie should stay ours: our results are bit-identical to eager code, the plan's
 * differ by float32 rounding. A plan kept is measured again after `recheckCalls` calls on it, and
 * dropped if ours has become as fast (a choice made under load, or on a cold cache, is undone);
 * a graph kept on ours stays there.
 *
 * A plan that fails to build or run (an export refused partway, a session that does not load)
 * falls back to our executor for that graph, the variables it assigned put back first, and the
 * call runs again on ours: never a wrong answer, never an error the user did not cause.
 */
import type { Tensor } from "../../core/tensor.js";
import type { Variable } from "../../core/variable.js";
import { isTracing } from "../../core/context.js";
import type { FunctionLibrary, Graph } from "../../graph/ir.js";
import { assignVariableOp, callOp } from "../../ops/structural.js";
import { installedExecutor, type Executor, type PreparedRun } from "../../staging/concrete-function.js";
import { cutGraph, type Cut } from "./cut.js";

/** How "auto" chooses: by measurement, or forced (tests: deterministic, never timing-dependent). */
export type AutoChoice = "measure" | "plan" | "ours";

export interface AutoPolicy {
  choice: AutoChoice;
  /** Calls of a graph run on ours before its plan is made and measured, at least. */
  warmCalls: number;
  /** ...and then until it has run `warmUpCalls` calls or `warmUpMs` ms on ours, whichever comes first. */
  warmUpCalls: number;
  warmUpMs: number;
  /** Timed runs of each side (after the plan's first, untimed run, which makes its sessions), at least... */
  reps: number;
  /** ...and until each side has run `measureMs` ms in all (a fast graph gets more runs; noise averages out), at most `maxReps`. */
  measureMs: number;
  maxReps: number;
  /** The plan is kept only when its median time is below `margin` x ours. */
  margin: number;
  /** A plan kept is measured against ours again after this many calls on it (a choice made under load, or before a cache warmed, is not final). */
  recheckCalls: number;
  /** @internal Tests: the time charged to a measured call (default: the time it took). */
  timeOf: ((side: "ours" | "plan", ms: number) => number) | null;
}

const envChoice = typeof process !== "undefined" ? process.env.STAGECRAFT_AUTO : undefined;

/** STAGECRAFT_AUTO=plan|ours forces the choice (default: measure). */
export const autoPolicy: AutoPolicy = {
  choice: envChoice === "plan" || envChoice === "ours" ? envChoice : "measure",
  warmCalls: 3,
  warmUpCalls: 100,
  warmUpMs: 300,
  reps: 5,
  measureMs: 30,
  maxReps: 50,
  margin: 0.97,
  recheckCalls: 2000,
  timeOf: null,
};

/** @internal Sets the policy (tests); returns the previous one. */
export function setAutoPolicy(p: Partial<AutoPolicy>): AutoPolicy {
  const before = { ...autoPolicy };
  Object.assign(autoPolicy, p);
  return before;
}

/**
 * What "auto" did (tests and benchmarks). planMs: cutting graphs and preparing their segments;
 * firstRunMs: the plans' first runs while measuring, which make their onnxruntime sessions
 * (export and session creation): together, the one-time cost a graph pays on auto. chosePlan and
 * choseOurs: the graphs measured and kept on each side (a plan measured again moves to the side
 * its new measurement picks); rechecks: those measurements again.
 */
export const autoStats = { plans: 0, choseOurs: 0, chosePlan: 0, fallbacks: 0, rechecks: 0, planMs: 0, firstRunMs: 0 };

/** Per graph: its calls so far, and its plan and choice once made. */
interface AutoState {
  calls: number;
  /** Time spent in calls on ours before the plan was made. */
  warmMs: number;
  plan: PreparedRun | null;
  /** null: not chosen yet; "ours" also after a plan failed or has no engine segment. */
  chosen: "ours" | "plan" | null;
  timesOurs: number[];
  timesPlan: number[];
  planRuns: number;
  /** Calls on the plan since it was chosen (rechecked at autoPolicy.recheckCalls). */
  planCalls: number;
  /** Variables the graph assigns (put back when a plan's run fails partway). */
  assigned: Variable[];
}

/** The variables a graph (its regions and callees too) assigns. */
function assignedVariables(graph: Graph, library: FunctionLibrary): Variable[] {
  const out = new Set<Variable>();
  const seen = new Set<Graph>();
  const walk = (g: Graph): void => {
    if (seen.has(g)) return;
    seen.add(g);
    for (const n of g.nodes) {
      if (n.op === assignVariableOp.name) out.add(n.attrs.variable as Variable);
      n.regions.forEach(walk);
      if (n.op === callOp.name && library.functions.has(n.attrs.callee as string)) walk(library.get(n.attrs.callee as string));
    }
  };
  walk(graph);
  return [...out];
}

/** Runs a cut: each segment's prepared run on its executor, the cut tensors through the slot table. */
export function planRun(cut: Cut, ours: Executor, engine: Executor, library: FunctionLibrary): PreparedRun {
  const runs = cut.segments.map((s) => {
    const e = s.onEngine ? engine : ours;
    return e.prepare?.(s.graph, library, s.numArgInputs) ?? ((inputs: Tensor[]) => e(s.graph, inputs, library, s.numArgInputs));
  });
  const { segments, numSlots, outputSlots } = cut;
  return (inputs) => {
    const slots: Tensor[] = new Array(numSlots);
    for (let i = 0; i < inputs.length; i++) slots[i] = inputs[i]!;
    for (let k = 0; k < segments.length; k++) {
      const s = segments[k]!;
      const ins: Tensor[] = new Array(s.inputSlots.length);
      for (let i = 0; i < ins.length; i++) ins[i] = slots[s.inputSlots[i]!]!;
      const outs = runs[k]!(ins);
      for (let i = 0; i < s.outputSlots.length; i++) slots[s.outputSlots[i]!] = outs[i]!;
    }
    const out: Tensor[] = new Array(outputSlots.length);
    for (let i = 0; i < out.length; i++) out[i] = slots[outputSlots[i]!]!;
    return out;
  };
}

/** @internal The measured choice: the plan only when its median is below `margin` x ours (exported for tests). */
export function chooseSide(timesOurs: number[], timesPlan: number[]): "ours" | "plan" {
  return median(timesPlan) < autoPolicy.margin * median(timesOurs) ? "plan" : "ours";
}

/** Whether a graph has run long enough on ours for V8 to have optimized its code. */
function isWarm(st: AutoState): boolean {
  return st.calls > autoPolicy.warmCalls && (st.calls > autoPolicy.warmUpCalls || st.warmMs >= autoPolicy.warmUpMs);
}

/** Whether both sides have been timed enough to choose. */
function measuredEnough(st: AutoState): boolean {
  const enough = (ts: number[]) =>
    ts.length >= autoPolicy.maxReps || (ts.length >= autoPolicy.reps && ts.reduce((a, b) => a + b, 0) >= autoPolicy.measureMs);
  return enough(st.timesOurs) && enough(st.timesPlan);
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[s.length >> 1]!;
}

/** The "auto" executor over onnxruntime engine `engine` and the installed executor (ours). */
export function autoExecutor(engine: Executor): Executor {
  const states = new WeakMap<Graph, AutoState>();
  const ours = (): Executor => installedExecutor();
  const oursRun = (graph: Graph, library: FunctionLibrary, numArgInputs: number): PreparedRun => {
    const e = ours();
    return e.prepare?.(graph, library, numArgInputs) ?? ((inputs) => e(graph, inputs, library, numArgInputs));
  };
  const makePlan = (st: AutoState, graph: Graph, library: FunctionLibrary, numArgInputs: number): void => {
    const t0 = performance.now();
    try {
      const cut = cutGraph(graph, library, numArgInputs);
      if (!cut.segments.some((s) => s.onEngine)) st.chosen = "ours";
      else st.plan = planRun(cut, ours(), engine, library);
      autoStats.plans++;
    } catch {
      st.chosen = "ours";
      autoStats.fallbacks++;
    }
    autoStats.planMs += performance.now() - t0;
  };
  /** One call on the plan; on failure the graph falls back to ours (its variables put back) and the call runs there. */
  const runPlan = (st: AutoState, inputs: Tensor[], fallback: PreparedRun): Tensor[] => {
    const saved = st.assigned.map((v) => v.storedValue);
    try {
      return st.plan!(inputs);
    } catch {
      st.assigned.forEach((v, k) => v.setStoredValue(saved[k]!));
      st.plan = null;
      st.chosen = "ours";
      autoStats.fallbacks++;
      return fallback(inputs);
    }
  };
  const call = (st: AutoState, graph: Graph, library: FunctionLibrary, numArgInputs: number, run: PreparedRun, inputs: Tensor[]): Tensor[] => {
    if (st.chosen === "ours" || isTracing()) return run(inputs);
    if (st.chosen === "plan") {
      if (autoPolicy.choice !== "measure" || ++st.planCalls < autoPolicy.recheckCalls) return runPlan(st, inputs, run);
      // measure again: both sides timed afresh (the plan's sessions exist: its next run is timed)
      st.chosen = null;
      st.timesOurs = [];
      st.timesPlan = [];
      st.planCalls = 0;
      autoStats.rechecks++;
      autoStats.chosePlan--; // (the counts say where graphs are now: the new choice counts again)
    }
    st.calls++;
    if (autoPolicy.choice === "measure" && !isWarm(st)) {
      const t0 = performance.now();
      const out = run(inputs);
      st.warmMs += performance.now() - t0;
      return out;
    }
    if (autoPolicy.choice === "ours") {
      st.chosen = "ours";
      return run(inputs);
    }
    if (st.plan === null) {
      makePlan(st, graph, library, numArgInputs);
      if (st.plan === null) return run(inputs);
    }
    if (autoPolicy.choice === "plan") {
      st.chosen = "plan";
      return runPlan(st, inputs, run);
    }
    // measuring: the plan's first run makes its sessions (untimed), then plan and ours alternate
    const onPlan = st.planRuns === 0 || st.timesPlan.length <= st.timesOurs.length;
    const t0 = performance.now();
    const out = onPlan ? runPlan(st, inputs, run) : run(inputs);
    const measured = performance.now() - t0;
    const dt = autoPolicy.timeOf === null ? measured : autoPolicy.timeOf(onPlan ? "plan" : "ours", measured);
    if (st.chosen !== null) return out; // (the plan failed)
    if (onPlan) {
      if (st.planRuns++ > 0) st.timesPlan.push(dt);
      else autoStats.firstRunMs += dt;
    } else st.timesOurs.push(dt);
    if (measuredEnough(st)) {
      st.chosen = chooseSide(st.timesOurs, st.timesPlan);
      if (st.chosen === "ours") st.plan = null;
      if (st.chosen === "plan") autoStats.chosePlan++;
      else autoStats.choseOurs++;
    }
    return out;
  };
  const stateOf = (graph: Graph, library: FunctionLibrary): AutoState => {
    let st = states.get(graph);
    if (st === undefined) {
      st = { calls: 0, warmMs: 0, plan: null, chosen: null, timesOurs: [], timesPlan: [], planRuns: 0, planCalls: 0, assigned: assignedVariables(graph, library) };
      states.set(graph, st);
    }
    return st;
  };
  const execute: Executor = (graph, inputs, library, numArgInputs = inputs.length) =>
    call(stateOf(graph, library), graph, library, numArgInputs, (ins) => ours()(graph, ins, library, numArgInputs), inputs);
  execute.prepare = (graph, library, numArgInputs) => {
    const st = stateOf(graph, library);
    const run = oursRun(graph, library, numArgInputs);
    return (inputs) => (st.chosen === "ours" ? run(inputs) : call(st, graph, library, numArgInputs, run, inputs));
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
