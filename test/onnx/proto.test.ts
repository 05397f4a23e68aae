/**
 * The protobuf layer: the compiled schema matches the vendored official .proto files, messages
 * round-trip through protobufjs, int64 fields beyond 2^53 are refused where they must be exact,
 * and TensorProto reading handles every data field and dtype.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import * as sc from "../../src/api/index.js";
import { int64 } from "../../src/onnx/protobuf.js";

const { onnx } = sc;
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

test("src/onnx/proto/schema.ts is what scripts/gen-onnx-schema.mjs makes from the .proto files", async () => {
  const gen = (await import(path.join(root, "scripts/gen-onnx-schema.mjs"))) as { schemaModule: () => string };
  assert.equal(readFileSync(path.join(root, "src/onnx/proto/schema.ts"), "utf8"), gen.schemaModule(), "run node scripts/gen-onnx-schema.mjs");
});

test("a model round-trips through encode and decode; int64 fields beyond 2^53 are refused where exactness matters", () => {
  const g = onnx.makeGraph([onnx.makeNode("Transpose", ["x"], ["y"], { perm: [1, 0] })], "g", [onnx.makeValueInfo("x", "int64", [2, "N"])], [onnx.makeValueInfo("y", "int64", ["N", 2])]);
  const bytes = onnx.modelBytes(onnx.makeModel(g, { opset: 21, irVersion: 10 }));
  const m = onnx.decode("ModelProto", bytes);
  assert.equal(int64(m.ir_version, "ir"), 10);
  assert.equal(m.graph!.node[0]!.op_type, "Transpose");
  assert.deepEqual(m.graph!.node[0]!.attribute[0]!.ints.map((v) => int64(v, "perm")), [1, 0]);
  assert.equal(m.graph!.input[0]!.type!.tensor_type!.shape!.dim[1]!.dim_param, "N");
  // 2^53 + 1 as a Long (high and low 32-bit words)
  const big = onnx.decode("TensorProto", onnx.encode("TensorProto", { dims: [{ low: 1, high: 2 ** 21, unsigned: false }], data_type: 1 }));
  assert.throws(() => int64(big.dims[0]!, "a dimension"), (e: unknown) => e instanceof onnx.OnnxLimitError && /beyond the 2\^53/.test((e as Error).message));
  assert.throws(() => onnx.encode("TensorProto", { dims: "oops" }), onnx.OnnxDecodeError);
});

test("TensorProto: raw data and every typed field, for every dtype, and back", () => {
  const values: Record<string, number[]> = {
    float32: [1.5, -2, 0], float64: [1e-300, -0.5, 3], float16: [0.5, -65504, 0.0999755859375], int8: [-128, 127, 0], int16: [-32768, 5, 7],
    int32: [-(2 ** 31), 2 ** 31 - 1, 3], int64: [-(2 ** 53), 2 ** 53, -1], uint8: [0, 255, 7], uint16: [65535, 0, 1], uint32: [2 ** 32 - 1, 0, 5], uint64: [2 ** 53, 0, 9], bool: [1, 0, 1],
  };
  for (const [dtype, vals] of Object.entries(values)) {
    const t = sc.tensor(vals, dtype as sc.DType, [3]);
    const back = onnx.readTensorProto(onnx.decode("TensorProto", onnx.encode("TensorProto", onnx.tensorToProto(t, "t"))));
    assert.equal(back.dtype, dtype);
    assert.deepEqual(Array.from(back.dataSync()), Array.from(t.dataSync()), dtype);
  }
  // the typed fields other writers use
  const E = onnx.ElemType;
  const read = (p: Record<string, unknown>) => Array.from(onnx.readTensorProto(onnx.decode("TensorProto", onnx.encode("TensorProto", p))).dataSync());
  assert.deepEqual(read({ dims: [2], data_type: E.FLOAT, float_data: [1.5, 2] }), [1.5, 2]);
  assert.deepEqual(read({ dims: [2], data_type: E.INT64, int64_data: [-3, 4] }), [-3, 4]);
  assert.deepEqual(read({ dims: [2], data_type: E.UINT32, uint64_data: [4294967295, 1] }), [4294967295, 1]);
  assert.deepEqual(read({ dims: [2], data_type: E.FLOAT16, int32_data: [0x3c00, 0xc000] }), [1, -2]);
  assert.deepEqual(read({ dims: [2], data_type: E.INT8, int32_data: [-5, 100] }), [-5, 100]);
  assert.deepEqual(read({ dims: [1], data_type: E.DOUBLE, double_data: [0.1] }), [0.1]);
  assert.throws(() => read({ dims: [3], data_type: E.FLOAT, float_data: [1] }), (e: unknown) => e instanceof onnx.OnnxModelError && /float_data holds 1/.test((e as Error).message));
  assert.throws(() => read({ dims: [1], data_type: E.BFLOAT16, int32_data: [1] }), (e: unknown) => e instanceof onnx.OnnxUnsupportedError && /bfloat16/.test((e as Error).message));
});
