/**
 * LSTM and GRU cells, and layers that run a cell over a sequence. The loop over the time axis
 * (scanSequence) runs step by step eagerly; inside `sc.stage` it is one graph loop (staging's
 * whileLoop, not T unrolled copies), which graph AD differentiates.
 */
import type { Tensor } from "../../core/tensor.js";
import type { Variable } from "../../core/variable.js";
import { ValueError } from "../../core/errors.js";
import { add, mul, sub } from "../../ops/binary.js";
import { matmul } from "../../ops/linalg.js";
import { concat, dimSizeOp, expandDims, flip, gather, reshape, scatterAdd, slice, split, squeeze, stack, transpose, unstack } from "../../ops/shape.js";
import { cast } from "../../ops/cast.js";
import { notEqual } from "../../ops/compare.js";
import { DtypeError } from "../../core/errors.js";
import { full, onesLikeTensor, zeros, zerosLikeTensor } from "../../ops/fill.js";
import { cumsum } from "../../ops/reduce.js";
import { less, lessEqual } from "../../ops/compare.js";
import { scalarOf } from "../../ops/convert.js";
import { sigmoid, tanh } from "../../ops/unary.js";
import { applyOp1 } from "../../ops/registry.js";
import { whileLoop } from "../../staging/control-flow.js";
import { initScope } from "../../staging/host.js";
import { Module } from "../module.js";
import { axisSize, biasInitOf, kernelInitOf, positiveInt, WEIGHT_KEYS, type WeightOptions, checkLayerOptions } from "./options.js";
import { recordConfig } from "../layer-config.js";

export interface RecurrentOptions extends WeightOptions {
  /** Input features; without it they are read from the first input. */
  inputSize?: number;
}

const RECURRENT_KEYS = [...WEIGHT_KEYS, "inputSize"];

/** The values of a cell's weights for one forward pass. */
export interface CellWeights {
  kernel: Tensor;
  recurrentKernel: Tensor;
  bias: Tensor | null;
  recurrentBias: Tensor | null;
}

/** The weights of a gated cell: x W + h U + b with `gates` blocks of `hidden` columns. */
abstract class GatedCell extends Module {
  readonly hidden: number;
  inputSize: number | undefined;
  kernel!: Variable;
  recurrentKernel!: Variable;
  bias: Variable | null = null;
  protected readonly options: RecurrentOptions;

  constructor(
    readonly layerName: string,
    readonly gates: number,
    hidden: number,
    options: RecurrentOptions,
  ) {
    super();
    checkLayerOptions(layerName, options, RECURRENT_KEYS);
    this.hidden = positiveInt(layerName, "hidden", hidden);
    this.options = options;
    this.inputSize = options.inputSize === undefined ? undefined : positiveInt(layerName, "inputSize", options.inputSize);
    if (this.inputSize !== undefined) this.makeWeights(this.inputSize);
  }

  protected makeWeights(inputSize: number): void {
    const o = this.options;
    const cols = this.gates * this.hidden;
    this.kernel = this.addWeight("kernel", [inputSize, cols], kernelInitOf(o, 0), { dtype: o.dtype });
    this.recurrentKernel = this.addWeight("recurrentKernel", [this.hidden, cols], kernelInitOf(o, 1), { dtype: o.dtype });
    if (o.bias !== false) this.bias = this.addWeight("bias", [cols], biasInitOf(o), { dtype: o.dtype, fanIn: inputSize, fanOut: cols });
  }

  protected override build(x: Tensor): void {
    this.buildFor(axisSize(this.layerName, x, -1, "features", undefined, "the inputSize option"));
  }

  /** Makes the weights for inputs of `inputSize` features, if not made yet (a layer builds its cell so). */
  buildFor(inputSize: number): void {
    if (this.inputSize === undefined) {
      this.inputSize = inputSize;
      initScope(() => this.makeWeights(inputSize));
    }
  }

  /**
   * The weights' current values. A layer reads them at every step of its loop over time: staged,
   * those reads are hoisted out of the loop body into operands of the loop (each weight is read
   * once per call, and tapes see the reads), so reading them before the loop would be no faster.
   */
  weights(): CellWeights {
    return {
      kernel: this.kernel.read(),
      recurrentKernel: this.recurrentKernel.read(),
      bias: this.bias ? this.bias.read() : null,
      recurrentBias: this instanceof GRUCell && this.recurrentBias ? this.recurrentBias.read() : null,
    };
  }

  /** x W (+ b): the input's contribution to every gate. */
  protected inputPart(w: CellWeights, x: Tensor): Tensor {
    axisSize(this.layerName, x, -1, "features", this.inputSize);
    const xw = matmul(x, w.kernel);
    return w.bias ? add(xw, w.bias) : xw;
  }

  /**
   * Zeros for the hidden (and cell) state of a batch: of `batch` rows, or of as many as the
   * leading axis of `like` has (an input [batch, ...], whose batch may be known only when a
   * staged graph runs).
   */
  zeroState(batch: number | Tensor): Tensor {
    const dtype = this.kernel.dtype;
    if (typeof batch === "number") return zeros([batch, this.hidden], dtype);
    const like = batch;
    if (like.rank === 0) throw new ValueError(`the state's batch is the leading axis of an input, got a scalar`, this.layerName);
    if (like.shape[0]! >= 0) return zeros([like.shape[0]!, this.hidden], dtype);
    // [batch, 1] zeros shaped like one column of the input, broadcast against [hidden].
    const column = reshape(slice(like, like.shape.map(() => 0), like.shape.map((_, i) => (i === 0 ? null : 1))), [-1, 1]);
    return add(zerosLikeTensor(column, dtype), zeros([this.hidden], dtype));
  }
}

/**
 * LSTM cell (Hochreiter & Schmidhuber; gates in PyTorch's order i, f, g, o):
 *
 *     [i, f, g, o] = x W + h U + b;  c' = sigmoid(f) c + sigmoid(i) tanh(g);  h' = sigmoid(o) tanh(c')
 *
 * `call(x, [h, c])` -> [h', c'].
 */
export class LSTMCell extends GatedCell {
  constructor(hidden: number, options: RecurrentOptions = {}) {
    super("LSTMCell", 4, hidden, options);
    recordConfig(this, LSTMCell, [hidden, options]);
  }

  forward(x: Tensor, state: [Tensor, Tensor]): [Tensor, Tensor] {
    return this.step(this.weights(), x, state);
  }

  /** One step with the given weight values. */
  step(w: CellWeights, x: Tensor, state: readonly Tensor[]): [Tensor, Tensor] {
    const [h, c] = state as [Tensor, Tensor];
    const z = add(this.inputPart(w, x), matmul(h, w.recurrentKernel));
    const [i, f, g, o] = split(z, 4, -1) as [Tensor, Tensor, Tensor, Tensor];
    const c2 = add(mul(sigmoid(f), c), mul(sigmoid(i), tanh(g)));
    return [mul(sigmoid(o), tanh(c2)), c2];
  }
}

/**
 * GRU cell (Cho et al.; PyTorch's formulation, gates r, z, n):
 *
 *     r = sigmoid(x W_r + h U_r + b_r);  z = sigmoid(x W_z + h U_z + b_z)
 *     n = tanh(x W_n + b_n + r (h U_n + b'_n));  h' = (1 - z) n + z h
 *
 * `call(x, h)` -> h'. (b' is `recurrentBias`, inside the reset gate's product as in PyTorch.)
 */
export class GRUCell extends GatedCell {
  // Not `= null`: a field initializer runs after super(), whose makeWeights (given inputSize)
  // has already made this bias, and would drop it (a GRU with inputSize, or a stacked GRU's
  // upper layers, silently lost b').
  recurrentBias: Variable | null = (this as { recurrentBias?: Variable | null }).recurrentBias ?? null;

  constructor(hidden: number, options: RecurrentOptions = {}) {
    super("GRUCell", 3, hidden, options);
    recordConfig(this, GRUCell, [hidden, options]);
  }

  protected override makeWeights(inputSize: number): void {
    super.makeWeights(inputSize);
    const o = this.options;
    if (o.bias !== false) this.recurrentBias = this.addWeight("recurrentBias", [3 * this.hidden], biasInitOf(o), { dtype: o.dtype, fanIn: this.hidden, fanOut: 3 * this.hidden });
  }

  forward(x: Tensor, h: Tensor): Tensor {
    return this.step(this.weights(), x, h);
  }

  /** One step with the given weight values. */
  step(w: CellWeights, x: Tensor, h: Tensor): Tensor {
    const [xr, xz, xn] = split(this.inputPart(w, x), 3, -1) as [Tensor, Tensor, Tensor];
    let hu = matmul(h, w.recurrentKernel);
    if (w.recurrentBias) hu = add(hu, w.recurrentBias);
    const [hr, hz, hn] = split(hu, 3, -1) as [Tensor, Tensor, Tensor];
    const r = sigmoid(add(xr, hr));
    const z = sigmoid(add(xz, hz));
    const n = tanh(add(xn, mul(r, hn)));
    return add(mul(sub(1, z), n), mul(z, h));
  }
}

/**
 * Runs `step` over the rows of `xs` (time-major), carrying `state` (an array of tensors whose
 * first is the output); returns [outputs stacked on a leading time axis, final state]. Eagerly a
 * plain loop; over a symbolic `xs` one graph loop (staging's whileLoop, not unrolled). With a
 * known number of steps the loop writes row i of a preallocated [time, ...] buffer (every loop
 * value keeps its static shape, so the outputs' time length stays known); with an unknown one
 * the outputs grow a buffer by one row per step. (The loop AutoGraph makes of the same
 * `for...of` with `outputs.push`: the layers sit below AutoGraph, so they write it with
 * staging's control flow.)
 */
function scanSequence(step: (x: Tensor[], state: Tensor[]) => Tensor[], seqs: Tensor[], state: Tensor[]): [Tensor, Tensor[]] {
  const xs = seqs[0]!;
  if (!seqs.some((q) => q.isSymbolic) && !state.some((q) => q.isSymbolic)) {
    const outputs: Tensor[] = [];
    const rows = seqs.map((q) => unstack(q, 0));
    for (let t = 0; t < rows[0]!.length; t++) {
      state = step(rows.map((r) => r[t]!), state);
      outputs.push(state[0]!);
    }
    return [stack(outputs, 0), state];
  }
  const k = state.length;
  const steps = xs.shape[0]!;
  const time = steps >= 0 ? steps : applyOp1(dimSizeOp, [xs], { axis: 0 });
  const first = state[0]!;
  const known = first.shape.every((d) => d >= 0);
  let buffer: Tensor;
  let write: (buf: Tensor, i: Tensor, row: Tensor) => Tensor;
  if (steps >= 0) {
    // [time, ...row] zeros (the row's batch may be known only when the graph runs: broadcast
    // zeros like the row against [time, 1, ...]); step i adds its row into the zeros of row i.
    buffer = known ? full([steps, ...first.shape], 0, first.dtype) : add(zerosLikeTensor(expandDims(first, 0)), zeros([steps, ...first.shape.map(() => 1)], first.dtype));
    write = (buf, i, row) => scatterAdd(buf, reshape(i, [1]), expandDims(row, 0), 0);
  } else {
    // No rows yet, of the row's shape.
    buffer = known ? full([0, ...first.shape], 0, first.dtype) : slice(expandDims(first, 0), [0], [0]);
    write = (buf, _i, row) => concat([buf, expandDims(row, 0)], 0);
  }
  const out = whileLoop(
    (i) => less(i!, time),
    (i, ...rest) => {
      const next = step(seqs.map((q) => gather(q, i!, 0)), rest.slice(0, k));
      return [add(i!, 1), ...next, write(rest[k]!, i!, next[0]!)];
    },
    [scalarOf(0, "int32"), ...state, buffer],
    steps >= 0 ? {} : { shapeInvariants: [null, ...state.map(() => null), [null, ...first.shape.map((d) => (d < 0 ? null : d))]] },
  );
  return [out[k + 1]!, out.slice(1, k + 1)];
}

export interface SequenceOptions extends RecurrentOptions {
  /**
   * Return the output at every step ([batch, time, hidden]) rather than the last (default true).
   * The last is the final hidden state (with a mask: that of each sequence's last real step;
   * bidirectional: the forward and backward final states, concatenated, as Keras's Bidirectional).
   */
  returnSequences?: boolean;
  /** Stacked layers, each running over the previous one's output sequence (default 1, PyTorch's num_layers). */
  numLayers?: number;
  /** Also run a second cell over the reversed sequence and concatenate both outputs: [batch, time, 2 * hidden] (default false). */
  bidirectional?: boolean;
}

const SEQUENCE_KEYS = [...RECURRENT_KEYS, "returnSequences", "numLayers", "bidirectional"];

/**
 * A padding mask as a float [time, batch, 1] (1 at real steps): from a bool or numeric
 * [batch, time] mask (true / nonzero = real), or from int lengths [batch] (steps < length are real).
 */
function timeMajorMask(name: string, x: Tensor, mask: Tensor, dtype: Tensor["dtype"]): Tensor {
  let m = mask;
  if (m.rank === 1) {
    if (m.dtype !== "int32" && m.dtype !== "int64") throw new DtypeError(`lengths (a rank-1 mask) must be int32 or int64, got ${m.dtype}`, name);
    // step t (1-based: running counts of ones along [batch, time]) is real when t <= length
    const steps = squeeze(slice(x, [0, 0, 0], [null, null, 1]), 2);
    m = lessEqual(cumsum(onesLikeTensor(steps, "int32"), 1), expandDims(cast(m, "int32"), 1));
  } else if (m.rank !== 2) {
    throw new ValueError(`mask must be [batch, time] (or lengths [batch]), got shape [${m.shape.join(", ")}]`, name);
  }
  const real = m.dtype === "bool" ? m : notEqual(m, 0);
  return expandDims(transpose(cast(real, dtype), [1, 0]), 2);
}


/**
 * Cells run over a [batch, time, features] sequence: `numLayers` stacked layers, each of one
 * cell (or two with bidirectional: the second runs over the reversed sequence). `cell` is the
 * first layer's forward cell; `extraCells` the others, in the order (layer, direction).
 */
abstract class SequenceLayer<C extends GatedCell> extends Module {
  readonly returnSequences: boolean;
  readonly numLayers: number;
  readonly bidirectional: boolean;
  readonly extraCells: C[];
  constructor(
    readonly cell: C,
    options: SequenceOptions,
    makeCell: (o: RecurrentOptions) => C,
  ) {
    super();
    const name = cell.layerName.replace(/Cell$/, "");
    this.returnSequences = options.returnSequences ?? true;
    this.numLayers = positiveInt(name, "numLayers", options.numLayers ?? 1);
    this.bidirectional = options.bidirectional ?? false;
    for (const k of ["returnSequences", "bidirectional"] as const) {
      if (options[k] !== undefined && typeof options[k] !== "boolean") throw new ValueError(`${k} must be a boolean, got ${String(options[k])}`, name);
    }
    const { returnSequences: _r, numLayers: _n, bidirectional: _b, ...cellOptions } = options;
    const dirs = this.bidirectional ? 2 : 1;
    this.extraCells = [];
    for (let j = 1; j < this.numLayers * dirs; j++) {
      const layer = Math.floor(j / dirs);
      const o: RecurrentOptions = { ...cellOptions, ...(cellOptions.seed === undefined ? {} : { seed: cellOptions.seed + 2 * j }) };
      if (layer > 0) o.inputSize = dirs * cell.hidden;
      this.extraCells.push(makeCell(o));
    }
  }

  /** The cells in the order (layer, direction). */
  get cells(): C[] {
    return [this.cell, ...this.extraCells];
  }

  protected abstract cellStep(c: C, w: CellWeights, x: Tensor, state: Tensor[]): Tensor[];
  /** The zero state of a cell for the batch of `x` [batch, time, features]. */
  protected abstract initialState(c: C, x: Tensor): Tensor[];

  /**
   * x [batch, time, features] -> outputs ([batch, time, hidden * directions], or the last) and
   * the final states (each cell's, in the order of `cells`; `state` gives the initial ones so).
   * `mask`: bool or numeric [batch, time] (true = a real step) or int lengths [batch]: at padded
   * steps a cell keeps its state and outputs zeros (as Keras's masking and PyTorch's packed
   * sequences; the backward direction starts at each sequence's last real step).
   */
  run(x: Tensor, state?: Tensor[], mask?: Tensor): { output: Tensor; state: Tensor[] } {
    const name = this.typeName;
    if (x.rank !== 3) throw new ValueError(`expects [batch, time, features], got shape [${x.shape.join(", ")}]`, name);
    const time = x.shape[1]!;
    if (time === 0) throw new ValueError(`needs at least one time step, got shape [${x.shape.join(", ")}]`, name);
    this.cell.buildFor(axisSize(name, x, 2, "features", undefined, "the inputSize option"));
    const cells = this.cells;
    const dirs = this.bidirectional ? 2 : 1;
    const k = this.initialState(this.cell, x).length;
    if (state !== undefined && (!Array.isArray(state) || state.length !== k * cells.length)) {
      throw new ValueError(`state must be ${k * cells.length} tensors (${k} per cell, ${cells.length} cells), got ${Array.isArray(state) ? state.length : typeof state}`, name);
    }
    const m = mask === undefined || mask === null ? null : timeMajorMask(name, x, mask, this.cell.kernel.dtype);
    let input = transpose(x, [1, 0, 2]);
    const finals: Tensor[] = [];
    let lastOutputs: Tensor[] = [];
    for (let l = 0; l < this.numLayers; l++) {
      const seqs: Tensor[] = [];
      lastOutputs = [];
      for (let d = 0; d < dirs; d++) {
        const j = l * dirs + d;
        const c = cells[j]!;
        c.buildFor(axisSize(name, input, 2, "features"));
        const s0 = state ? state.slice(j * k, (j + 1) * k) : this.initialState(c, x);
        const xs = d === 0 ? input : flip(input, 0);
        const ms = m === null ? null : d === 0 ? m : flip(m, 0);
        const step = (rows: Tensor[], s: Tensor[]): Tensor[] => {
          const next = this.cellStep(c, c.weights(), rows[0]!, s);
          if (rows.length === 1) return next;
          // padded step: keep the state; output zeros (state[0] is the output, kept separately below)
          const real = rows[1]!;
          return next.map((t, i) => add(mul(real, t), mul(sub(1, real), s[i]!)));
        };
        let [seq, last] = scanSequence(step, ms === null ? [xs] : [xs, ms], s0);
        if (ms !== null) seq = mul(seq, ms);
        if (d === 1) seq = flip(seq, 0);
        seqs.push(seq);
        finals.push(...last);
        lastOutputs.push(last[0]!);
      }
      input = dirs === 1 ? seqs[0]! : concat(seqs, 2);
    }
    const output = this.returnSequences ? transpose(input, [1, 0, 2]) : dirs === 1 ? lastOutputs[0]! : concat(lastOutputs, -1);
    return { output, state: finals };
  }

  forward(x: Tensor, state?: Tensor[], mask?: Tensor): Tensor {
    return this.run(x, state, mask).output;
  }
}

/**
 * An LSTM over a [batch, time, features] sequence. `run(x)` also gives the final [h, c] (per
 * cell, with numLayers or bidirectional).
 */
export class LSTM extends SequenceLayer<LSTMCell> {
  constructor(hidden: number, options: SequenceOptions = {}) {
    checkLayerOptions("LSTM", options, SEQUENCE_KEYS);
    const { returnSequences: _r, numLayers: _n, bidirectional: _b, ...cellOptions } = options;
    super(new LSTMCell(hidden, cellOptions), options, (o) => new LSTMCell(hidden, o));
    recordConfig(this, LSTM, [hidden, options]);
  }
  protected cellStep(c: LSTMCell, w: CellWeights, x: Tensor, state: Tensor[]): Tensor[] {
    return c.step(w, x, state);
  }
  protected initialState(c: LSTMCell, x: Tensor): Tensor[] {
    const zero = c.zeroState(x);
    return [zero, zero];
  }
}

/** A GRU over a [batch, time, features] sequence. `run(x)` also gives the final [h] (per cell). */
export class GRU extends SequenceLayer<GRUCell> {
  constructor(hidden: number, options: SequenceOptions = {}) {
    checkLayerOptions("GRU", options, SEQUENCE_KEYS);
    const { returnSequences: _r, numLayers: _n, bidirectional: _b, ...cellOptions } = options;
    super(new GRUCell(hidden, cellOptions), options, (o) => new GRUCell(hidden, o));
    recordConfig(this, GRU, [hidden, options]);
  }
  protected cellStep(c: GRUCell, w: CellWeights, x: Tensor, state: Tensor[]): Tensor[] {
    return [c.step(w, x, state[0]!)];
  }
  protected initialState(c: GRUCell, x: Tensor): Tensor[] {
    return [c.zeroState(x)];
  }
}
