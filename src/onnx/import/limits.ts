/**
 * The load options that bound what a model may make a process do (elements per tensor, bytes
 * in all, Loop iterations in all, nodes inlined from functions, time of a run), their
 * defaults, their validation, and the per-trace budget that the interpreter charges. Every
 * limit is a non-negative integer or Infinity (no limit): NaN, negatives and fractions are a
 * ValueError, never a limit silently switched off.
 */
import { OnnxLimitError } from "../errors.js";
import { checkLimit } from "../../core/options.js";

export interface ModelLimits {
  /** Elements of any one tensor (declared, or made while tracing or running). */
  maxElements: number;
  /** Bytes of all the values a model computes in one trace (initializers and folded constants included). */
  maxTotalBytes: number;
  /** Iterations of any one Loop. */
  maxLoopIterations: number;
  /** Iterations of all the Loops of one run together (nested loops multiply). */
  maxTotalIterations: number;
  /** Nodes inlined from model-local functions in one trace (functions calling others fan out). */
  maxInlinedNodes: number;
  /** Milliseconds a run's Loops may take (Infinity: no deadline). */
  maxRunMs: number;
}

export const DEFAULT_MODEL_LIMITS: ModelLimits = {
  maxElements: 2 ** 28,
  maxTotalBytes: 2 ** 31,
  maxLoopIterations: 2 ** 24,
  maxTotalIterations: 2 ** 26,
  maxInlinedNodes: 2 ** 14,
  maxRunMs: Infinity,
};

/** The limits of `options` with the defaults; a ValueError naming the option for a bad value. */
export function modelLimits(options: Partial<Record<keyof ModelLimits, unknown>>): ModelLimits {
  const out = { ...DEFAULT_MODEL_LIMITS };
  for (const k of Object.keys(DEFAULT_MODEL_LIMITS) as (keyof ModelLimits)[]) {
    const v = options[k];
    if (v === undefined) continue;
    out[k] = checkLimit("onnx.load", k, v, 0);
  }
  return out;
}

/**
 * The iterations and time of the model's Loops while it runs, shared by every trace of one
 * loaded model: staged host calls in the loops' bodies (ticks) count each iteration, and the
 * outermost loop's first iteration starts the count and the clock again.
 */
export class RunCounter {
  private iterations = 0;
  private start = 0;
  private readonly fnIds = new Map<string, number>();
  constructor(readonly limits: ModelLimits) {}

  /** One iteration of the loop `label`; `restart`: the first iteration of an outermost loop. */
  tick(label: string, restart: boolean): void {
    if (restart) {
      this.iterations = 0;
      this.start = Date.now();
    }
    const { maxTotalIterations, maxRunMs } = this.limits;
    if (++this.iterations > maxTotalIterations) {
      throw new OnnxLimitError(`${label}: the model's Loops ran more than ${maxTotalIterations} iterations in all (nested loops multiply; the maxTotalIterations load option)`, "onnx.load");
    }
    if (maxRunMs !== Infinity && Date.now() - this.start > maxRunMs) {
      throw new OnnxLimitError(`${label}: the model's Loops ran longer than ${maxRunMs} ms (the maxRunMs load option), after ${this.iterations} iterations`, "onnx.load");
    }
  }
  /** The host function id of a tick of `label` (one per loop and kind, however often it is traced). */
  fnIdOf(label: string, restart: boolean, register: (fn: (...xs: { dataSync(): ArrayLike<number | bigint> }[]) => never[]) => number): number {
    const key = `${restart ? "outer" : "inner"}:${label}`;
    let id = this.fnIds.get(key);
    if (id === undefined) {
      id = register((...xs) => {
        this.tick(label, restart && Number(xs[0]!.dataSync()[0]) === 0);
        return [];
      });
      this.fnIds.set(key, id);
    }
    return id;
  }
}

/** What one trace of a model has used of its limits. */
export class TraceBudget {
  bytes = 0;
  inlinedNodes = 0;
  /** The product of the trip counts of the Loops being traced around the current node (Infinity: one is decided at run time). */
  loopFactor = 1;
  /** How many Loops are being traced around the current node. */
  loopDepth = 0;
  constructor(
    readonly limits: ModelLimits,
    readonly run: RunCounter,
  ) {}

  /** Charges `bytes` more; OnnxLimitError naming `what` past maxTotalBytes. */
  chargeBytes(bytes: number, what: string): void {
    this.checkBytes(bytes, what);
    this.bytes += bytes;
  }
  /** Refuses, before allocating, a value of `bytes` that would take the trace past maxTotalBytes. */
  checkBytes(bytes: number, what: string): void {
    const max = this.limits.maxTotalBytes;
    if (this.bytes + bytes > max) {
      throw new OnnxLimitError(
        `${what}: the model's values would take ${fmtBytes(this.bytes + bytes)} in all (${fmtBytes(this.bytes)} so far), more than the limit of ${fmtBytes(max)} (the maxTotalBytes load option)`,
        "onnx.load",
      );
    }
  }
  /** Charges the nodes of one inlined function call; OnnxLimitError past maxInlinedNodes. */
  chargeInlined(nodes: number, fn: string): void {
    this.inlinedNodes += nodes;
    const max = this.limits.maxInlinedNodes;
    if (this.inlinedNodes > max) {
      throw new OnnxLimitError(`function ${fn}: the model's function calls inline more than ${max} nodes (the maxInlinedNodes load option); functions that call others several times fan out`, "onnx.load");
    }
  }
}

function fmtBytes(n: number): string {
  return n >= 2 ** 20 ? `${(n / 2 ** 20).toFixed(1)} MiB` : `${n} bytes`;
}
