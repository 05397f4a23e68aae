/**
 * A cut's segments prepared to run on either side: each on our executor, and each the exporter
 * can take (cut.ts's `onEngine`) also on the onnxruntime engine, so that "auto" can time a
 * segment on both sides (auto.ts) and then run the cut with any placement of its segments.
 *
 * The runs of ours are prepared when first used (a cut whose only engine segment is the whole
 * graph never needs them). An engine run that fails to prepare (the export refuses a node the
 * cut thought exportable) leaves its segment on ours.
 */
import type { Tensor } from "../../core/tensor.js";
import type { FunctionLibrary } from "../../graph/ir.js";
import type { Executor, PreparedRun } from "../../staging/concrete-function.js";
import type { Cut } from "./cut.js";

export interface SegmentRuns {
  cut: Cut;
  /** Per segment, its run on ours (prepared on first use). */
  ours: (k: number) => PreparedRun;
  /** Per segment, its run on the engine; null: it stays ours (not exportable, too small, or its engine run failed). */
  engine: (PreparedRun | null)[];
}

/** A segment's run failed: which segment, and whether it ran on the engine. */
export class SegmentFailure extends Error {
  constructor(readonly segment: number, readonly onEngine: boolean, override readonly cause: unknown) {
    super(`segment ${segment} failed on ${onEngine ? "the engine" : "ours"}: ${(cause as Error)?.message ?? String(cause)}`);
  }
}

function prepared(e: Executor, cut: Cut, k: number, library: FunctionLibrary): PreparedRun {
  const s = cut.segments[k]!;
  return e.prepare?.(s.graph, library, s.numArgInputs) ?? ((inputs: Tensor[]) => e(s.graph, inputs, library, s.numArgInputs));
}

/** Prepares `cut`'s segments: the engine's runs now (failures leave a segment ours), ours on first use. */
export function prepareSegments(cut: Cut, ours: Executor, engine: Executor, library: FunctionLibrary): SegmentRuns {
  const oursRuns: (PreparedRun | undefined)[] = new Array(cut.segments.length);
  const engineRuns = cut.segments.map((s, k) => {
    if (!s.onEngine) return null;
    try {
      return prepared(engine, cut, k, library);
    } catch {
      return null;
    }
  });
  return { cut, ours: (k) => (oursRuns[k] ??= prepared(ours, cut, k, library)), engine: engineRuns };
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
export function placedRun(sr: SegmentRuns, onEngine: boolean[]): PreparedRun {
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
      let outs: Tensor[];
      try {
        outs = runs[k]!(ins);
      } catch (e) {
        throw new SegmentFailure(k, engineSide[k]!, e);
      }
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
export function timedRun(sr: SegmentRuns, onEngine: boolean, inputs: Tensor[], times: number[]): Tensor[] {
  const { segments, numSlots, outputSlots } = sr.cut;
  const slots: Tensor[] = new Array(numSlots);
  for (let i = 0; i < inputs.length; i++) slots[i] = inputs[i]!;
  for (let k = 0; k < segments.length; k++) {
    const s = segments[k]!;
    const ins: Tensor[] = new Array(s.inputSlots.length);
    for (let i = 0; i < ins.length; i++) ins[i] = slots[s.inputSlots[i]!]!;
    const onEngineNow = onEngine && sr.engine[k] !== null;
    const run = onEngineNow ? sr.engine[k]! : sr.ours(k);
    let outs: Tensor[];
    const t0 = performance.now();
    try {
      outs = run(ins);
    } catch (e) {
      throw new SegmentFailure(k, onEngineNow, e);
    }
    times[k] = performance.now() - t0;
    for (let i = 0; i < s.outputSlots.length; i++) slots[s.outputSlots[i]!] = outs[i]!;
  }
  const out: Tensor[] = new Array(outputSlots.length);
  for (let i = 0; i < out.length; i++) out[i] = slots[outputSlots[i]!]!;
  return out;
}
