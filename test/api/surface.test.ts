/** The public surface the foundation names: every op as a function, and as a method where natural. */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as sc from "../../src/api/index.js";

const UNARY = "neg abs sign exp log log1p expm1 sqrt rsqrt square reciprocal sin cos tan asin acos atan sinh cosh tanh sigmoid relu leakyRelu elu gelu softplus erf floor ceil round isNaN isFinite";
const BINARY = "add sub mul div floorDiv mod pow maximum minimum atan2 squaredDifference";
const LOGIC = "equal notEqual less lessEqual greater greaterEqual logicalAnd logicalOr logicalNot logicalXor";
const REDUCE = "sum mean prod max min argMax argMin logSumExp any all variance cumsum";
const SHAPE = "reshape transpose expandDims squeeze unstack split slice flip cast clip tile broadcastTo";
const NN = "softmax logSoftmax topK sort argsort";
const FUNCTIONS_ONLY = "where matmul dot outer einsum concat stack gather gatherND scatterAdd pad conv2d conv2dTranspose maxPool2d avgPool2d stopGradient checkNumerics tensor scalar zeros ones full arange linspace eye zerosLike onesLike oneHot";

/** Ops added to the registry for ONNX import, public as functions. */
const ADDED_FOR_ONNX = "asinh acosh atanh truncDiv fmod bitwiseAnd bitwiseOr bitwiseXor bitwiseNot bitShiftLeft bitShiftRight bitcast gatherElements scatterElements scatterND";

const names = (s: string) => s.split(" ");

test("every op the foundation lists is a function of sc", () => {
  const api = sc as unknown as Record<string, unknown>;
  const missing = [UNARY, BINARY, LOGIC, REDUCE, SHAPE, NN, FUNCTIONS_ONLY, ADDED_FOR_ONNX].flatMap(names).filter((n) => typeof api[n] !== "function");
  assert.deepEqual(missing, []);
  for (const n of ["uniform", "normal", "bernoulli", "categorical", "key", "split", "setSeed"]) {
    assert.equal(typeof (sc.random as unknown as Record<string, unknown>)[n], "function", `random.${n}`);
  }
  assert.equal(typeof sc.onnx.load, "function", "onnx.load");
  for (const n of ["grad", "valueAndGrad", "vjp", "customGradient", "variable", "GradientTape"]) {
    assert.equal(typeof (sc as unknown as Record<string, unknown>)[n], "function", n);
  }
});

test("elementwise, reduction, shape and nn ops are Tensor methods too", () => {
  const t = sc.ones([2]) as unknown as Record<string, unknown>;
  const missing = [UNARY, BINARY, LOGIC, REDUCE, SHAPE, NN].flatMap(names).filter((n) => typeof t[n] !== "function");
  assert.deepEqual(missing, []);
  assert.deepEqual(sc.tensor([1, -2]).abs().add(1).arraySync(), [2, 3]);
});
