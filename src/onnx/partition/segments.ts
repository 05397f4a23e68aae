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

/** One segment of a cut, ready to run on ours and, where it can, on the engine. */
export interface SegmentRun {
  /** Slots it reads (in its graph's input order) and writes. */
  inputSlots: number[];
  outputSlots: number[];
  /** Its run on ours (prepared on first use; it holds this segment's graph only). */
  ours: () => PreparedRun;
  /** Its run on the engine; null: it stays ours (not exportable, too small, or its engine run failed). */
  engine: PreparedRun | null;
  /** The variables it assigns (put back when its engine run fails). */
  assigned: Variable[];
}

export interface SegmentRuns {
  cut: Cut;
  segments: SegmentRun[];
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
  const segments = cut.segments.map((s): SegmentRun => {
    let engineRun: PreparedRun | null = null;
    if (s.onEngine) {
      try {
        engineRun = prepared(engine, s.engineGraph, s.numArgInputs, library);
      } catch {
        engineRun = null;
      }
    }
    const { graph, numArgInputs } = s;
    let oursRun: PreparedRun | null = null;
    return {
      inputSlots: s.inputSlots,
      outputSlots: s.outputSlots,
      ours: () => (oursRun ??= prepared(ours, graph, numArgInputs, library)),
      engine: engineRun,
      assigned: engineRun === null ? [] : assignedVariables(graph, library),
    };
  });
  return { cut, segments };
}

/** The segments that may run on the engine (an engine run prepared). */
export function engineEligible(sr: SegmentRuns): number[] {
  const out: number[] = [];
  sr.segments.forEach((s, k) => s.engine !== null && out.push(k));
  return out;
}

/**
 * Runs a cut's segments in order through the slot table: each segment with an engine run on the
 * engine when `useEngine`, else on ours; an engine run that fails has its
 * variables put back, `failed` told, and the segment run on ours from the same inputs. With
 * `times`, each segment's time (ms) is written there.
 */
function runSegments(segments: SegmentRun[], numSlots: number, outputSlots: number[], useEngine: boolean,
                     inputs: Tensor[], failed: EngineFailure, times: number[] | null): Tensor[] {
  const slots: Tensor[] = new Array(numSlots);
  for (let i = 0; i < inputs.length; i++) slots[i] = inputs[i]!;
  for (let k = 0; k < segments.length; k++) {
    const s = segments[k]!;
    const ins: Tensor[] = new Array(s.inputSlots.length);
    for (let i = 0; i < ins.length; i++) ins[i] = slots[s.inputSlots[i]!]!;
    const t0 = times === null ? 0 : performance.now();
    let outs: Tensor[];
    if (useEngine && s.engine !== null) {
      const saved = s.assigned.length === 0 ? null : s.assigned.map((v) => v.storedValue);
      try {
        outs = s.engine(ins);
      } catch (e) {
        s.assigned.forEach((v, i) => v.setStoredValue(saved![i]!));
        failed(k, e);
        outs = s.ours()(ins);
      }
    } else outs = s.ours()(ins);
    if (times !== null) times[k] = performance.now() - t0;
    for (let i = 0; i < s.outputSlots.length; i++) slots[s.outputSlots[i]!] = outs[i]!;
  }
  const out: Tensor[] = new Array(outputSlots.length);
  for (let i = 0; i < out.length; i++) out[i] = slots[outputSlots[i]!]!;
  return out;
}

/**
 * The cut run with a fixed placement (`onEngine[k]`: segment k on the engine, where it has an
 * engine run). Adjacent segments of ours run one after the other as they were cut (their code
 * stays the code that was timed and has warmed up; merging them would compile new, cold code: see
 * auto.ts). The closure holds the segments' runs, not the cut: the engine's sessions of segments
 * placed on ours are freed with their graphs, which its state is keyed by.
 */
export function placedRun(sr: SegmentRuns, onEngine: boolean[], failed: EngineFailure): PreparedRun {
  const { numSlots, outputSlots } = sr.cut;
  const segments = sr.segments.map((s, k): SegmentRun => (onEngine[k] && s.engine !== null ? s : { ...s, engine: null, assigned: [] }));
  return (inputs) => runSegments(segments, numSlots, outputSlots, true, inputs, failed, null);
}

/**
 * One timed run of the cut for measuring: the segments with an engine run on the engine when
 * `onEngine`, else all on ours; each segment's time (ms) written to `times[k]`.
 */
export function timedRun(sr: SegmentRuns, onEngine: boolean, inputs: Tensor[], times: number[], failed: EngineFailure): Tensor[] {
  return runSegments(sr.segments, sr.cut.numSlots, sr.cut.outputSlots, onEngine, inputs, failed, times);
}
