/**
 * A cut's segments prepared to run on either side: each on our executor, and each the exporter
 * can take (cut.ts's `onEngine`) also on the onnxruntime engine, so that "auto" can time a
 * segment on both sides (auto.ts) and then run the cut with any placement of its segments.
 *
 * The runs of ours are prepared when first used (a cut whose only engine segment is the whole
 * graph never needs them). An engine run that fails to prepare (the export refuses a node the
 * cut thought exportable) leaves its segment on ours.
 *
 * An engine run that fails when called (onnxruntime refuses an input, e.g. a negative index the
 * index guard maps out of its range) does not fail the call: the variables that segment assigned
 * are put back, the failure is reported to the caller (auto.ts moves the graph or the segment to
 * ours), and the segment runs on ours from the same inputs, so the segments before it, and their
 * host calls, run once, and an error the user caused is raised by ours, as the whole graph on ours
 * would raise it. An error raised by a segment of ours propagates as it is.
 */
import type { Tensor } from "../../core/tensor.js";
import type { Variable } from "../../core/variable.js";
import type { FunctionLibrary, Graph } from "../../graph/ir.js";
import { assignVariableOp, callOp } from "../../ops/structural.js";
import type { Executor, PreparedRun } from "../../staging/concrete-function.js";
import type { Cut } from "./cut.js";

export interface SegmentRuns {
  cut: Cut;
  /** Per segment, its run on ours (prepared on first use). */
  ours: (k: number) => PreparedRun;
  /** Per segment, its run on the engine; null: it stays ours (not exportable, too small, or its engine run failed). */
  engine: (PreparedRun | null)[];
  /** Per segment, the variables it assigns (put back when its engine run fails). */
  assigned: Variable[][];
}

/** Told that segment `k`'s engine run failed with `error` (the call goes on, that segment on ours). */
export type EngineFailure = (k: number, error: unknown) => void;

/** The variables a graph (its regions and callees too) assigns. */
export function assignedVariables(graph: Graph, library: FunctionLibrary): Variable[] {
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

function prepared(e: Executor, graph: Graph, numArgInputs: number, library: FunctionLibrary): PreparedRun {
  return e.prepare?.(graph, library, numArgInputs) ?? ((inputs: Tensor[]) => e(graph, inputs, library, numArgInputs));
}

/** Prepares `cut`'s segments: the engine's runs now (failures leave a segment ours), ours on first use. */
export function prepareSegments(cut: Cut, ours: Executor, engine: Executor, library: FunctionLibrary): SegmentRuns {
  const oursRuns: (PreparedRun | undefined)[] = new Array(cut.segments.length);
  const engineRuns = cut.segments.map((s) => {
    if (!s.onEngine) return null;
    try {
      return prepared(engine, s.engineGraph, s.numArgInputs, library);
    } catch {
      return null;
    }
  });
  const assigned = cut.segments.map((s, k) => (engineRuns[k] === null ? [] : assignedVariables(s.graph, library)));
  return { cut, ours: (k) => (oursRuns[k] ??= prepared(ours, cut.segments[k]!.graph, cut.segments[k]!.numArgInputs, library)), engine: engineRuns, assigned };
}

/** Segment `k` on the engine; when that run fails, its variables put back, `failed` told, the segment on ours. */
function onEngineOrOurs(sr: SegmentRuns, k: number, run: PreparedRun, ins: Tensor[], failed: EngineFailure): Tensor[] {
  const vars = sr.assigned[k]!;
  const saved = vars.length === 0 ? null : vars.map((v) => v.storedValue);
  try {
    return run(ins);
  } catch (e) {
    vars.forEach((v, i) => v.setStoredValue(saved![i]!));
    failed(k, e);
    return sr.ours(k)(ins);
  }
}

/** The segments that may run on the engine (an engine run prepared). */
export function engineEligible(sr: SegmentRuns): number[] {
  const out: number[] = [];
  sr.engine.forEach((r, k) => r !== null && out.push(k));
  return out;
}

/**
 * The cut run with a fixed placement (`onEngine[k]`: segment k on the engine, where it has an
 * engine run): one closure over the chosen runs, no per-call choice. Adjacent segments of ours
 * run one after the other as they were cut (their code stays the code that was timed and has
 * warmed up; merging them would compile new, cold code: see auto.ts).
 */
export function placedRun(sr: SegmentRuns, onEngine: boolean[], failed: EngineFailure): PreparedRun {
  const { numSlots, outputSlots } = sr.cut;
  const runs = sr.cut.segments.map((_, k) => (onEngine[k] && sr.engine[k] !== null ? sr.engine[k]! : sr.ours(k)));
  const engineSide = runs.map((r, k) => r === sr.engine[k]);
  // (the closure holds the slots, not the segments' graphs: the engine's sessions of segments
  // placed on ours are then freed with the graphs, which its state is keyed by)
  const segments = sr.cut.segments.map((s) => ({ inputSlots: s.inputSlots, outputSlots: s.outputSlots }));
  return (inputs) => {
    const slots: Tensor[] = new Array(numSlots);
    for (let i = 0; i < inputs.length; i++) slots[i] = inputs[i]!;
    for (let k = 0; k < segments.length; k++) {
      const s = segments[k]!;
      const ins: Tensor[] = new Array(s.inputSlots.length);
      for (let i = 0; i < ins.length; i++) ins[i] = slots[s.inputSlots[i]!]!;
      const outs = engineSide[k] ? onEngineOrOurs(sr, k, runs[k]!, ins, failed) : runs[k]!(ins);
      for (let i = 0; i < s.outputSlots.length; i++) slots[s.outputSlots[i]!] = outs[i]!;
    }
    const out: Tensor[] = new Array(outputSlots.length);
    for (let i = 0; i < out.length; i++) out[i] = slots[outputSlots[i]!]!;
    return out;
  };
}

/**
 * One timed run of the cut for measuring: the segments with an engine run on the engine when
 * `onEngine`, else all on ours; each segment's time (ms) written to `times[k]`.
 */
export function timedRun(sr: SegmentRuns, onEngine: boolean, inputs: Tensor[], times: number[], failed: EngineFailure): Tensor[] {
  const { segments, numSlots, outputSlots } = sr.cut;
  const slots: Tensor[] = new Array(numSlots);
  for (let i = 0; i < inputs.length; i++) slots[i] = inputs[i]!;
  for (let k = 0; k < segments.length; k++) {
    const s = segments[k]!;
    const ins: Tensor[] = new Array(s.inputSlots.length);
    for (let i = 0; i < ins.length; i++) ins[i] = slots[s.inputSlots[i]!]!;
    const engineRun = onEngine ? sr.engine[k] ?? null : null;
    const t0 = performance.now();
    const outs = engineRun !== null ? onEngineOrOurs(sr, k, engineRun, ins, failed) : sr.ours(k)(ins);
    times[k] = performance.now() - t0;
    for (let i = 0; i < s.outputSlots.length; i++) slots[s.outputSlots[i]!] = outs[i]!;
  }
  const out: Tensor[] = new Array(outputSlots.length);
  for (let i = 0; i < out.length; i++) out[i] = slots[outputSlots[i]!]!;
  return out;
}
