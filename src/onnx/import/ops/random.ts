/**
 * ONNX's random ops on Stagecraft's keyed generators (ops/random.ts): RandomUniform,
 * RandomNormal, RandomUniformLike, RandomNormalLike, Bernoulli, Multinomial, and Dropout
 * (identity in inference mode, a drawn mask in training mode).
 *
 * Seeds: as in onnxruntime, a node with a `seed` attribute has a generator of its own, started
 * from the seed (truncated to an integer) when the model is loaded, which goes on from call to
 * call (a staged draw is a read and update of the generator's state variable): the same model
 * loaded twice draws the same numbers, call by call. A node without a seed draws from the global
 * generator (`sc.random.setSeed` makes that reproducible). No two implementations draw the same
 * numbers for a seed (the ONNX spec says so for Bernoulli): what an op fixes is the shape, the dtype
 * and the distribution (its range, its support), and that is what the conformance run checks of
 * these ops (conformance-random.ts).
 *
 * The handlers are marked `random`: the interpreter never computes them at trace time, even on
 * known inputs, so a model draws new numbers on every call instead of baking one draw in.
 */
import type { Tensor } from "../../../core/tensor.js";
import { isFloat, type DType } from "../../../core/dtype.js";
import { withEagerContext } from "../../../core/context.js";
import * as ops from "../../../ops/index.js";
import type { NodeProto } from "../../protobuf.js";
import { onnxOp } from "../op-table.js";
import type { NodeContext } from "../node-context.js";

/** The generator of each seeded node (a NodeProto lives as long as its loaded model). */
const seededGenerators = new WeakMap<NodeProto, ops.random.Generator>();

/** Largest seed magnitude whose integer part a key holds exactly. */
const MAX_SEED = 2 ** 53;

/**
 * The generator a node draws from: its own seeded one (`seed` attribute, FLOAT except on
 * Dropout, where it is INT), or undefined for the global generator.
 */
function generatorOf(n: NodeContext, seedType: "float" | "int" = "float"): ops.random.Generator | undefined {
  if (!n.hasAttr("seed")) return undefined;
  let g = seededGenerators.get(n.node);
  if (g === undefined) {
    const raw = seedType === "float" ? n.float("seed")! : n.int("seed")!;
    if (!Number.isFinite(raw) || Math.abs(raw) >= MAX_SEED) throw n.fail(`seed must be a finite number below 2^53 in magnitude, got ${raw}`);
    const seed = Math.trunc(raw);
    // Created outside the trace: a generator's state is a variable that outlives the call.
    g = withEagerContext(() => new ops.random.Generator({ seed, name: `onnx_${n.node.op_type}_seed_${seed}` }));
    seededGenerators.set(n.node, g);
  }
  return g;
}

/** The float dtype of a draw: the `dtype` attribute, else `fallback` (the input's dtype, or float). */
function drawDtype(n: NodeContext, fallback: DType, fallbackWhat: string): DType {
  const given = n.hasAttr("dtype");
  const dtype = given ? n.dtypeAttr("dtype") : fallback;
  if (!isFloat(dtype)) {
    throw n.fail(`draws floating-point values (float16, float, double), but ${given ? "its dtype attribute" : fallbackWhat} is ${dtype}${given ? "" : "; give a float dtype attribute"}`);
  }
  return dtype;
}

/** The `shape` attribute of RandomUniform and RandomNormal (required), checked against the size limit. */
function shapeAttr(n: NodeContext): number[] {
  const shape = n.ints("shape");
  if (shape === undefined) throw n.fail("needs the attribute shape");
  n.checkShape(shape);
  return shape;
}

function finiteAttr(n: NodeContext, name: string, def: number): number {
  const v = n.float(name, def);
  if (!Number.isFinite(v)) throw n.fail(`attribute ${name} must be finite, got ${v}`);
  return v;
}

function uniformDraw(n: NodeContext, shape: number[], dtype: DType): Tensor {
  const low = finiteAttr(n, "low", 0);
  const high = finiteAttr(n, "high", 1);
  if (!(high >= low)) throw n.fail(`attribute high (${high}) must be >= low (${low})`);
  const generator = generatorOf(n);
  return ops.random.uniform(shape, { dtype, minval: low, maxval: high, ...(generator ? { generator } : {}) });
}

function normalDraw(n: NodeContext, shape: number[], dtype: DType): Tensor {
  const mean = finiteAttr(n, "mean", 0);
  const scale = finiteAttr(n, "scale", 1);
  if (scale < 0) throw n.fail(`attribute scale (the standard deviation) must be >= 0, got ${scale}`);
  const generator = generatorOf(n);
  return ops.random.normal(shape, { dtype, mean, stddev: scale, ...(generator ? { generator } : {}) });
}

onnxOp("RandomUniform", { random: true, run: (n) => uniformDraw(n, shapeAttr(n), drawDtype(n, "float32", "")) });
onnxOp("RandomNormal", { random: true, run: (n) => normalDraw(n, shapeAttr(n), drawDtype(n, "float32", "")) });
onnxOp("RandomUniformLike", {
  random: true,
  run(n) {
    const x = n.input(0);
    return uniformDraw(n, [...x.shape], drawDtype(n, x.dtype, "its input's dtype"));
  },
});
onnxOp("RandomNormalLike", {
  random: true,
  run(n) {
    const x = n.input(0);
    return normalDraw(n, [...x.shape], drawDtype(n, x.dtype, "its input's dtype"));
  },
});

/** 1 with probability p (the input), else 0, in the dtype attribute's type (default: the input's). */
onnxOp("Bernoulli", {
  random: true,
  since: 15,
  run(n) {
    const p = n.input(0);
    if (!isFloat(p.dtype)) throw n.fail(`its input (the probabilities) must be a float tensor, got ${p.dtype}`);
    const dtype = n.hasAttr("dtype") ? n.dtypeAttr("dtype") : p.dtype;
    const generator = generatorOf(n);
    const hits = ops.random.bernoulli(p, undefined, generator ? { generator } : {});
    return dtype === "bool" ? hits : ops.cast(hits, dtype);
  },
});

/** sample_size class indices per row of unnormalized log-probabilities [batch, classes]. */
onnxOp("Multinomial", {
  random: true,
  run(n) {
    const logits = n.input(0);
    if (!isFloat(logits.dtype)) throw n.fail(`its input (log-probabilities) must be a float tensor, got ${logits.dtype}`);
    if (logits.rank !== 2) throw n.fail(`its input must be [batch, classes], got shape [${logits.shape.join(", ")}]`);
    const samples = n.int("sample_size", 1);
    if (!Number.isInteger(samples) || samples < 1) throw n.fail(`attribute sample_size must be a positive integer, got ${samples}`);
    const dtype = n.dtypeAttr("dtype", "int32");
    if (dtype !== "int32" && dtype !== "int64") throw n.fail(`attribute dtype must be int32 or int64, got ${dtype}`);
    n.checkShape([logits.shape[0]!, samples]);
    const generator = generatorOf(n);
    const indices = ops.random.categorical(logits, samples, generator ? { generator } : {});
    return dtype === "int32" ? indices : ops.cast(indices, dtype);
  },
});

/**
 * Dropout. Opsets 7 to 11 have no training mode: the output is the input, the mask all ones
 * (of the data's type before opset 10, bool after). From opset 12, `training_mode` (input 2,
 * default false) with `ratio` (input 1, default 0.5) drops each element with probability ratio
 * and scales the kept ones by 1 / (1 - ratio): output = data * mask / (1 - ratio). training_mode
 * sets how the model is traced, and so does ratio in training mode: they must be known when it is
 * (constants, initializers, or static inputs); inference mode reads no ratio (it may be computed
 * at run time). Ratio 0 or inference mode is the exact identity and draws nothing.
 */
onnxOp("Dropout", {
  constInputs: [1, 2],
  random: true,
  run(n) {
    const x = n.input(0);
    if (n.opset < 12) {
      if (n.hasInput(1) || n.hasInput(2)) throw n.fail(`takes one input before opset 12 (ratio is an attribute), got ${n.numInputs}`);
      return [ops.identity(x), n.opset < 10 ? ops.onesLike(x) : ops.fullLike(x, true, "bool")];
    }
    const training = n.hasInput(2) ? scalarOf(n, 2, "training_mode") !== 0 : false;
    // Inference mode ignores ratio's value: read it (it must be known at trace time) only in
    // training mode; its shape is checked either way.
    if (n.hasInput(1)) checkScalar(n, n.input(1).shape, "ratio");
    if (!training) return [ops.identity(x), ops.fullLike(x, true, "bool")];
    const ratio = n.hasInput(1) ? scalarOf(n, 1, "ratio") : 0.5;
    if (!(ratio >= 0 && ratio < 1)) throw n.fail(`ratio must be in [0, 1) in training mode, got ${ratio}`);
    if (!isFloat(x.dtype)) throw n.fail(`drops elements of float tensors, got ${x.dtype}`);
    if (ratio === 0) return [ops.identity(x), ops.fullLike(x, true, "bool")];
    const generator = generatorOf(n, "int");
    return ops.random.dropout(x, ratio, generator ? { generator } : {});
  },
});

/** The single value of known input i (ratio, training_mode). */
function scalarOf(n: NodeContext, i: number, what: string): number {
  const t = n.known(i, what);
  checkScalar(n, t.shape, what);
  return Number(t.dataSync()[0]);
}

/** Refuses a shape holding more than one element (a dimension not yet known passes). */
function checkScalar(n: NodeContext, shape: readonly number[], what: string): void {
  if (shape.some((d) => d >= 0 && d !== 1)) throw n.fail(`${what} must be a scalar, got shape [${shape.join(", ")}]`);
}
