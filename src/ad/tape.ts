/**
 * GradientTape: records differentiable op calls on watched tensors and computes gradients
 * by running the registry's VJP rules in reverse. VJPs are ordinary op calls, so a tape
 * that is recording while another computes a gradient records the gradient computation
 * itself: nesting gives higher-order derivatives.
 */
import { pushRecorder, removeRecorder, traceCallback, withoutRecorders, type OpRecorder } from "../core/context.js";
import { atNode, executing, GradientError, type SourceLocation } from "../core/errors.js";
import { checkChoice, checkOptions, optionKeys } from "../core/options.js";
import { Tensor } from "../core/tensor.js";
import { Variable, variableReadObservers, type VariableReadObserver } from "../core/variable.js";
import { isFloat } from "../core/dtype.js";
import type { OpDef } from "../ops/registry.js";
import { add } from "../ops/binary.js";
import { cast } from "../ops/cast.js";
import { onesLikeTensor, zerosLikeTensor } from "../ops/fill.js";
import { mapStructure, type Structure } from "../core/structure.js";

interface Entry {
  def: OpDef;
  inputs: Tensor[];
  attrs: unknown;
  outputs: Tensor[];
  /**
   * Where the op was written, when known as it ran (a node of a graph being replayed or
   * executed): its VJP runs there, so the gradient's nodes and errors name that line.
   */
  loc: SourceLocation | null;
}

export interface GradientTapeOptions {
  /** Allow several gradient() calls (the tape keeps its record). */
  persistent?: boolean;
  /** Watch variables read while recording (default true). */
  watchAccessedVariables?: boolean;
}

const TAPE_OPTIONS = optionKeys<GradientTapeOptions>()("persistent", "watchAccessedVariables");

/**
 * What gradient() does with a source it has no gradient for: one the tape never watched (a
 * tensor not watched while recording, a variable not read while recording or not trainable),
 * or one it watched that the target does not depend on. "error" (the default) raises a
 * GradientError naming the source, as PyTorch does: a silent zero would hide a forgotten
 * watch(). "zero" returns zeros of the source's shape and dtype, "none" returns null (TF's
 * unconnected_gradients), for the cases where that is meant (a parameter the loss leaves out,
 * a frozen variable).
 */
export type UnconnectedGradients = "error" | "zero" | "none";

export interface GradientOptions {
  outputGradient?: Tensor | Tensor[];
  unconnected?: UnconnectedGradients;
}
const UNCONNECTED: readonly UnconnectedGradients[] = ["error", "zero", "none"];
const GRADIENT_OPTIONS = optionKeys<GradientOptions>()("outputGradient", "unconnected");

export class GradientTape implements OpRecorder, VariableReadObserver {
  readonly persistent: boolean;
  readonly watchAccessedVariables: boolean;
  private readonly tracked = new Set<number>();
  private readonly entries: Entry[] = [];
  /** Value tensors read from each variable while recording. */
  private readonly variableReads = new Map<Variable, Set<Tensor>>();
  private recording = false;
  private used = false;

  constructor(options: GradientTapeOptions = {}) {
    checkOptions("GradientTape", options, TAPE_OPTIONS);
    this.persistent = options.persistent ?? false;
    this.watchAccessedVariables = options.watchAccessedVariables ?? true;
  }

  /** Starts recording (prefer `record(fn)`, which always stops). */
  start(): this {
    if (this.recording) throw new GradientError("tape is already recording", "GradientTape");
    this.recording = true;
    pushRecorder(this);
    variableReadObservers.push(this);
    return this;
  }

  stop(): this {
    if (!this.recording) return this;
    this.recording = false;
    removeRecorder(this);
    const i = variableReadObservers.lastIndexOf(this);
    if (i >= 0) variableReadObservers.splice(i, 1);
    return this;
  }

  /** Records everything `fn` computes on watched tensors; returns fn's result. */
  record<T>(fn: (tape: this) => T): T {
    const run = traceCallback(fn);
    this.start();
    try {
      return run(this);
    } finally {
      this.stop();
    }
  }

  /** Runs `fn` without this tape recording it. */
  stopRecording<T>(fn: () => T): T {
    return withoutRecorders([this], fn);
  }

  /** Marks tensors (or variables) as sources to differentiate with respect to. */
  watch(...xs: (Tensor | Tensor[])[]): void {
    for (const x of xs.flat()) {
      if (x instanceof Variable) this.onVariableRead(x, x.peek(), true);
      else if (x instanceof Tensor) this.tracked.add(x.id);
      else throw new GradientError(`watch() takes tensors or variables, got ${typeof x}`, "GradientTape.watch");
    }
  }

  tracks(t: Tensor): boolean {
    return this.tracked.has(t.id);
  }

  /** The variables read while recording. */
  watchedVariables(): Variable[] {
    return [...this.variableReads.keys()];
  }

  onVariableRead(v: Variable, value: Tensor, explicit = false): void {
    if (!explicit && (!this.watchAccessedVariables || !v.trainable)) return;
    this.tracked.add(value.id);
    let reads = this.variableReads.get(v);
    if (!reads) this.variableReads.set(v, (reads = new Set()));
    reads.add(value);
  }

  /** OpRecorder: keeps the call if it is differentiable and touches a tracked tensor. */
  recordOp(def: OpDef, inputs: Tensor[], attrs: unknown, outputs: Tensor[]): void {
    if (def.vjp === undefined) return;
    let touches = false;
    for (let i = 0; i < inputs.length; i++) {
      if (this.tracked.has(inputs[i]!.id)) {
        touches = true;
        break;
      }
    }
    if (!touches) return;
    this.entries.push({ def, inputs, attrs, outputs, loc: executing.at });
    for (let i = 0; i < outputs.length; i++) if (isFloat(outputs[i]!.dtype)) this.tracked.add(outputs[i]!.id);
  }

  /**
   * d(target)/d(sources). `sources` may be a tensor, a variable, or a nested array/object of
   * them; the result has the same structure. `outputGradient` seeds the target's cotangent
   * (default ones, i.e. the gradient of sum(target)).
   */
  gradient<S extends Structure<Tensor>>(
    target: Tensor | Tensor[],
    sources: S,
    options: GradientOptions = {},
  ): Structure<Tensor | null> & any {
    checkOptions("GradientTape.gradient", options, GRADIENT_OPTIONS);
    checkChoice("GradientTape.gradient", "unconnected", options.unconnected, UNCONNECTED);
    if (this.used && !this.persistent) {
      throw new GradientError("gradient() was already called on this non-persistent tape; create it with { persistent: true } to call it again", "GradientTape.gradient");
    }
    this.used = true;
    const targets = Array.isArray(target) ? target : [target];
    const seeds = options.outputGradient === undefined ? null : Array.isArray(options.outputGradient) ? options.outputGradient : [options.outputGradient];
    if (seeds) checkSeeds(targets, seeds);
    const unconnected = options.unconnected ?? "error";
    return withoutRecorders([this], () => {
      const sourceIds = new Set<number>();
      mapStructure(sources, (s) => {
        for (const t of this.sourceTensors(s)) sourceIds.add(t.id);
        return null;
      });
      const cts = this.backprop(targets, seeds, sourceIds);
      const single = !Array.isArray(sources) && sources instanceof Tensor;
      return mapStructure(sources, (s, path) => {
        let g: Tensor | null = null;
        for (const t of this.sourceTensors(s)) {
          const c = cts.get(t.id);
          if (c) g = g ? add(g, c) : c;
        }
        if (g === null) {
          if (unconnected === "error") throw this.unconnectedError(s, single ? "the source" : `sources${path.startsWith("[") ? path : `.${path}`}`);
          return unconnected === "zero" ? zerosLikeTensor(s instanceof Variable ? s.peek() : s) : null;
        }
        return g.dtype === s.dtype ? g : cast(g, s.dtype);
      });
    });
  }

  private sourceTensors(s: Tensor): Tensor[] {
    if (!(s instanceof Tensor)) throw new GradientError(`sources must be tensors or variables, got ${typeof s}`, "GradientTape.gradient");
    if (s instanceof Variable) return [...(this.variableReads.get(s) ?? [])];
    return [s];
  }

  /** Why `s` has no gradient: never watched by this tape, or watched but not reached from the target. */
  private unconnectedError(s: Tensor, where: string): GradientError {
    const fmt = `shape [${s.shape.map((d) => (d < 0 ? "?" : d)).join(", ")}], ${s.dtype}`;
    const what = s instanceof Variable ? `${where} (variable "${s.name}", ${fmt})` : `${where} (${fmt})`;
    const accept = `pass { unconnected: "zero" } for zeros or { unconnected: "none" } for null where that is meant`;
    const watched = s instanceof Variable ? this.variableReads.has(s) : this.tracked.has(s.id);
    if (!watched) {
      const why =
        s instanceof Variable
          ? !s.trainable
            ? "it is not trainable, so reading it does not watch it: tape.watch(v) it while recording"
            : !this.watchAccessedVariables
              ? "the tape has watchAccessedVariables: false: tape.watch(v) it while recording"
              : "it was not read while the tape recorded"
          : "call tape.watch(x) while recording, before x is used";
      return new GradientError(`${what} was never watched by this tape: ${why}; or ${accept}`, "GradientTape.gradient");
    }
    const why = isFloat(s.dtype)
      ? "the target does not depend on it through any recorded differentiable op (it was not used, or only through stopRecording, stopGradient or a non-differentiable op)"
      : `gradients flow only to floating-point tensors, and it is ${s.dtype}`;
    return new GradientError(`${what} is watched but not connected to the target: ${why}; ${accept}`, "GradientTape.gradient");
  }

  private backprop(targets: Tensor[], seeds: Tensor[] | null, sourceIds: Set<number>): Map<number, Tensor> {
    // Forward sweep: which entries depend on a source (others need no cotangent).
    const reach = new Set(sourceIds);
    const relevant = new Array<boolean>(this.entries.length).fill(false);
    for (let e = 0; e < this.entries.length; e++) {
      const entry = this.entries[e]!;
      if (entry.inputs.some((t) => reach.has(t.id))) {
        relevant[e] = true;
        for (const o of entry.outputs) reach.add(o.id);
      }
    }
    const cts = new Map<number, Tensor>();
    const accumulate = (t: Tensor, g: Tensor): void => {
      const prev = cts.get(t.id);
      cts.set(t.id, prev ? add(prev, g) : g);
    };
    targets.forEach((t, i) => accumulate(t, seeds ? seeds[i]! : onesLikeTensor(t)));
    for (let e = this.entries.length - 1; e >= 0; e--) {
      if (!relevant[e]) continue;
      const entry = this.entries[e]!;
      const outCts = outputCotangents(entry, cts);
      if (outCts.every((c) => c === null)) continue;
      // Outputs without a cotangent pass null (zero): multi-output VJPs skip that work.
      // inputs no source reaches get no cotangent: their VJP work (a convolution's input gradient for data) is skipped
      const needs = entry.inputs.map((x) => reach.has(x.id) && isFloat(x.dtype));
      const vjpCtx = { inputs: entry.inputs, outputs: entry.outputs, attrs: entry.attrs, needs };
      const inCts = entry.loc === null ? entry.def.vjp!(vjpCtx, outCts) : atNode(entry.loc, () => entry.def.vjp!(vjpCtx, outCts));
      for (let i = 0; i < entry.inputs.length; i++) {
        const g = inCts[i];
        const x = entry.inputs[i]!;
        if (g && reach.has(x.id) && isFloat(x.dtype)) accumulate(x, g);
      }
    }
    return cts;
  }
}

/**
 * The cotangent each output slot of `entry` receives. The tape keys cotangents by tensor, and
 * a tensor's cotangent is the sum over all its uses, so it must reach the entry once: a tensor
 * that fills several output slots (a staged forward returning a value both as an output and
 * as a value its backward reads) gets it in its first slot only, and an output slot holding
 * one of the entry's own inputs (a value passed through) gets none, since the input already
 * carries that cotangent. Handing it to every slot would count it twice.
 */
function outputCotangents(entry: Entry, cts: Map<number, Tensor>): (Tensor | null)[] {
  const outs = entry.outputs;
  let aliased = false;
  for (let i = 0; i < outs.length && !aliased; i++) {
    if (entry.inputs.includes(outs[i]!)) aliased = true;
    for (let j = 0; j < i && !aliased; j++) if (outs[j] === outs[i]) aliased = true;
  }
  if (!aliased) return outs.map((o) => cts.get(o.id) ?? null);
  return outs.map((o, i) => (entry.inputs.includes(o) || outs.indexOf(o) < i ? null : (cts.get(o.id) ?? null)));
}

/**
 * The cotangents seeding a gradient (outputGradient; vjp's cotangents and jvp's tangents come
 * here) must have their targets' shapes: one of another shape would broadcast into a gradient
 * of the wrong shape without an error.
 */
function checkSeeds(targets: Tensor[], seeds: readonly unknown[]): void {
  if (seeds.length !== targets.length) {
    throw new GradientError(`got ${seeds.length} output gradients (cotangents) for ${targets.length} targets`, "GradientTape.gradient");
  }
  const fmt = (shape: readonly number[]) => `[${shape.map((d) => (d < 0 ? "?" : d)).join(", ")}]`;
  seeds.forEach((seed, i) => {
    if (!(seed instanceof Tensor)) throw new GradientError(`output gradient ${i} must be a tensor, got ${seed === null ? "null" : typeof seed}`, "GradientTape.gradient");
    const t = targets[i]!;
    const same = seed.rank === t.rank && seed.shape.every((d, j) => d === t.shape[j] || d < 0 || t.shape[j]! < 0);
    if (!same) {
      throw new GradientError(
        `output gradient ${i} (a cotangent) has shape ${fmt(seed.shape)} but its target has shape ${fmt(t.shape)}: they must be equal (one would broadcast into a gradient of the wrong shape)`,
        "GradientTape.gradient",
      );
    }
  });
}
