/**
 * Values of the ops and dtypes added for ONNX import, checked against hand-computed results
 * (the sweeps check eager = staged and the gradients; these check the values themselves).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as sc from "../../src/api/index.js";
import { halfBitsToFloat, floatToHalfBits, roundToFloat16 } from "../../src/core/float16.js";
import { cloneProgram, cse } from "../../src/api/internals.js";

const arr = (t: sc.Tensor) => Array.from(t.dataSync());

test("float16: storage holds float16 values; rounding to nearest even; casts and arithmetic round once per op", () => {
  for (let h = 0; h < 0x7c00; h += 37) assert.equal(floatToHalfBits(halfBitsToFloat(h)), h);
  assert.equal(roundToFloat16(1 + 2 ** -11), 1); // a tie goes to the even neighbour
  assert.equal(roundToFloat16(1 + 3 * 2 ** -11), 1 + 2 ** -9);
  assert.equal(roundToFloat16(65519), 65504);
  assert.equal(roundToFloat16(65520), Infinity);
  assert.ok(Object.is(roundToFloat16(-1e-9), -0));
  const h = sc.cast(sc.tensor([0.1, 1 / 3, 70000, -2.5]), "float16");
  assert.deepEqual(arr(h), [0.0999755859375, 0.333251953125, Infinity, -2.5]);
  assert.deepEqual(arr(sc.add(h, 1)), [1.099609375, 1.3330078125, Infinity, -1.5]);
  assert.equal(sc.mul(sc.tensor([3], "float16"), 1.001).dtype, "float16");
  // 1.001 is stored as 1.0009765625; 3 * that = 3.0029296875 lies halfway between float16 neighbours: the even one
  assert.deepEqual(arr(sc.mul(sc.cast(sc.tensor([3]), "float16"), 1.001)), [3.00390625]);
});

test("integer widths wrap like C; promotion follows NumPy for the new widths", () => {
  assert.deepEqual(arr(sc.add(sc.tensor([127, -128], "int8"), sc.tensor([1, -1], "int8"))), [-128, 127]);
  assert.deepEqual(arr(sc.sub(sc.tensor([0], "uint16"), sc.tensor([1], "uint16"))), [65535]);
  assert.deepEqual(arr(sc.cast(sc.tensor([300.7, -1.5]), "uint8")), [44, 255]);
  assert.equal(sc.promoteTypes("uint8", "int8"), "int16");
  assert.equal(sc.promoteTypes("uint16", "int16"), "int32");
  assert.equal(sc.promoteTypes("uint32", "int8"), "int64");
  assert.equal(sc.promoteTypes("int16", "float16"), "float16");
  assert.equal(sc.promoteTypes("float16", "float32"), "float32");
  assert.equal(sc.promoteTypes("uint8", "int32"), "int32"); // the old chain is unchanged
  assert.equal(sc.promoteTypes("int64", "float32"), "float32");
});

test("truncDiv and fmod are C's division and remainder; floorDiv and mod stay Python's", () => {
  const a = sc.tensor([7, -7, 7, -7], "int32");
  const b = sc.tensor([2, 2, -2, -2], "int32");
  assert.deepEqual(arr(sc.truncDiv(a, b)), [3, -3, -3, 3]);
  assert.deepEqual(arr(sc.fmod(a, b)), [1, -1, 1, -1]);
  assert.deepEqual(arr(sc.floorDiv(a, b)), [3, -4, -4, 3]);
  assert.deepEqual(arr(sc.mod(a, b)), [1, 1, -1, -1]);
  assert.deepEqual(arr(sc.asinh(sc.tensor([0, 1], "float64"))), [0, Math.asinh(1)]);
});

test("bitwise ops and shifts: 64-bit operands exact beyond 32 bits; shifts past the width give 0", () => {
  assert.deepEqual(arr(sc.bitwiseAnd(sc.tensor([2 ** 40 + 6], "int64"), sc.tensor([2 ** 40 + 3], "int64"))), [2 ** 40 + 2]);
  assert.deepEqual(arr(sc.bitwiseOr(sc.tensor([2 ** 33], "uint64"), sc.tensor([1], "uint64"))), [2 ** 33 + 1]);
  assert.deepEqual(arr(sc.bitwiseXor(sc.tensor([0xf0], "uint8"), sc.tensor([0xff], "uint8"))), [0x0f]);
  assert.deepEqual(arr(sc.bitwiseNot(sc.tensor([0, 5], "uint8"))), [255, 250]);
  assert.deepEqual(arr(sc.bitwiseNot(sc.tensor([0, 5], "int32"))), [-1, -6]);
  assert.deepEqual(arr(sc.bitShiftLeft(sc.tensor([1, 1, 3], "uint32"), sc.tensor([31, 32, 1], "uint32"))), [2 ** 31, 0, 6]);
  assert.deepEqual(arr(sc.bitShiftRight(sc.tensor([2 ** 32 - 1, 16], "uint32"), sc.tensor([28, 5], "uint32"))), [15, 0]);
  assert.deepEqual(arr(sc.bitShiftLeft(sc.tensor([3], "uint64"), sc.tensor([40], "uint64"))), [3 * 2 ** 40]);
  assert.deepEqual(arr(sc.bitShiftRight(sc.tensor([-8], "int8"), sc.tensor([1], "int8"))), [-4]);
  assert.throws(() => sc.bitwiseAnd(sc.tensor([1.5]), sc.tensor([1])), sc.DtypeError);
});

test("bitwiseAnd/Or/Xor declare that their operands commute (CSE merges f(a, b) and f(b, a)); the shifts do not", () => {
  const a = sc.tensor([2 ** 40 + 6, -3, 12], "int64"),
    b = sc.tensor([2 ** 40 + 3, 5, -1], "int64");
  for (const op of ["bitwiseAnd", "bitwiseOr", "bitwiseXor"] as const) {
    assert.equal(sc.getOp(op).commutative, true, op);
    assert.deepEqual(arr(sc[op](a, b)), arr(sc[op](b, a)), `${op} commutes`);
    const cf = sc.stage((x: sc.Tensor, y: sc.Tensor) => sc.add(sc[op](x, y), sc[op](y, x)), { autograph: false }).concrete(a, b);
    const { graph, library } = cloneProgram(cf.graph, cf.library);
    cse(graph, library);
    assert.equal(graph.nodes.filter((n) => n.op === op).length, 1, `${op}(a, b) and ${op}(b, a) are one node after CSE`);
  }
  for (const op of ["bitShiftLeft", "bitShiftRight"]) assert.notEqual(sc.getOp(op).commutative, true, op);
});

test("bitcast reads the same bytes as another dtype of the same width", () => {
  assert.deepEqual(arr(sc.bitcast(sc.tensor([1, -2], "float32"), "int32")), [1065353216, -1073741824]);
  assert.deepEqual(arr(sc.bitcast(sc.tensor([-1, 127], "int8"), "uint8")), [255, 127]);
  assert.deepEqual(arr(sc.bitcast(sc.tensor([1], "float64"), "int64")), [4607182418800017408]);
  assert.deepEqual(arr(sc.bitcast(sc.cast(sc.tensor([1]), "float16"), "uint16")), [0x3c00]);
  assert.throws(() => sc.bitcast(sc.tensor([1], "float32"), "int64"), (e: unknown) => e instanceof sc.DtypeError && /the widths differ/.test((e as Error).message));
});

test("gatherElements, scatterElements and scatterND follow ONNX's definitions; bad indices are IndexErrors", () => {
  const x = sc.tensor([[1, 2], [3, 4]], "float32");
  assert.deepEqual(sc.gatherElements(x, sc.tensor([[0, 0], [1, 0]], "int64"), 1).arraySync(), [[1, 1], [4, 3]]);
  const d = sc.tensor([[1, 2, 3, 4, 5]], "float32");
  assert.deepEqual(sc.scatterElements(d, sc.tensor([[1, 3]], "int32"), sc.tensor([[1.1, 2.1]], "float32"), 1).arraySync()[0].map((v: number) => Math.round(v * 10) / 10), [1, 1.1, 3, 2.1, 5]);
  assert.deepEqual(arr(sc.scatterElements(d, sc.tensor([[1, 1]], "int32"), sc.tensor([[10, 20]], "float32"), 1, "add")), [1, 32, 3, 4, 5]);
  assert.deepEqual(arr(sc.scatterElements(d, sc.tensor([[1, 1]], "int32"), sc.tensor([[10, 20]], "float32"), 1, "max")), [1, 20, 3, 4, 5]);
  const base = sc.tensor([1, 2, 3, 4, 5, 6, 7, 8], "float32");
  assert.deepEqual(arr(sc.scatterND(base, sc.tensor([[4], [3], [1], [7]], "int64"), sc.tensor([9, 10, 11, 12], "float32"))), [1, 11, 3, 10, 9, 6, 7, 12]);
  assert.deepEqual(arr(sc.scatterND(base, sc.tensor([[0], [0]], "int64"), sc.tensor([2, 3], "float32"), "mul")), [6, 2, 3, 4, 5, 6, 7, 8]);
  assert.throws(() => sc.gatherElements(x, sc.tensor([[2, 0]], "int32"), 1), (e: unknown) => e instanceof sc.IndexError && /index 2/.test((e as Error).message));
  assert.throws(() => sc.scatterND(base, sc.tensor([[8]], "int32"), sc.tensor([1], "float32")), sc.IndexError);
  assert.throws(() => sc.grad((u: sc.Tensor) => sc.sum(sc.scatterElements(d, sc.tensor([[1]], "int32"), u, 1, "mul")))(sc.tensor([[2]], "float32")), sc.GradientError);
});
