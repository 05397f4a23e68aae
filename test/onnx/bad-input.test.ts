/**
 * Bad ONNX input gets a typed error that says what is wrong, never a crash, a hang or an
 * unbounded allocation: truncated and corrupted bytes, unknown ops and domains, unsupported
 * opsets and IR versions, external data that is missing, out of range or outside the model's
 * folder, tensors declaring 1e12 elements, wrong inputs at call time.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, writeFileSync, mkdirSync, symlinkSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import { execFileSync, spawnSync } from "node:child_process";
import * as sc from "../../src/api/index.js";

const { onnx } = sc;
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

/** y = Neg(x) over float32 [2, 3], with optional extra nodes/initializers. */
function negModel(options: { opType?: string; domain?: string; opset?: number; irVersion?: number; opsets?: Record<string, number> } = {}): Uint8Array {
  const node = onnx.makeNode(options.opType ?? "Neg", ["x"], ["y"], {}, options.domain ? { domain: options.domain } : {});
  const g = onnx.makeGraph([node], "g", [onnx.makeValueInfo("x", "float32", [2, 3])], [onnx.makeValueInfo("y", "float32", [2, 3])]);
  return onnx.modelBytes(onnx.makeModel(g, { opset: options.opset ?? 18, irVersion: options.irVersion ?? 8, opsets: options.opsets ?? {} }));
}

test("a well-formed model loads and runs (the base the other cases break)", () => {
  const m = onnx.load(negModel());
  assert.deepEqual((m(sc.tensor([[1, 2, 3], [4, 5, 6]])) as sc.Tensor).arraySync(), [[-1, -2, -3], [-4, -5, -6]]);
});

test("truncated and corrupted bytes: OnnxDecodeError naming the message type", () => {
  const bytes = readFileSync(path.join(root, "test/fixtures/onnx-node/test_abs/model.onnx"));
  for (const cut of [1, 7, bytes.length >> 1, bytes.length - 1]) {
    assert.throws(() => onnx.load(bytes.subarray(0, cut)), (e: unknown) => e instanceof onnx.OnnxError, `cut at ${cut}`);
  }
  assert.throws(() => onnx.load(bytes.subarray(0, 7)), (e: unknown) => e instanceof onnx.OnnxDecodeError && /are not a valid ONNX ModelProto/.test((e as Error).message));
  assert.throws(() => onnx.load(new Uint8Array([0xff, 0xff, 0xff, 0xff, 0x0f])), onnx.OnnxDecodeError);
  assert.throws(() => onnx.load("/nonexistent/model.onnx"), (e: unknown) => e instanceof onnx.OnnxError && /cannot read/.test((e as Error).message));
  assert.throws(() => onnx.load(42 as unknown as Uint8Array), sc.ValueError);
});

test("unknown ops and domains, unsupported opsets and IR versions: typed errors naming them", () => {
  assert.throws(() => onnx.load(negModel({ opType: "NoSuchOp" }))(sc.zeros([2, 3])), (e: unknown) => e instanceof onnx.OnnxUnsupportedError && /op NoSuchOp is not supported/.test((e as Error).message));
  assert.throws(
    () => onnx.load(negModel({ opType: "Neg", domain: "com.example" }))(sc.zeros([2, 3])),
    (e: unknown) => e instanceof onnx.OnnxModelError && /domain "com\.example" is not in the model's opset_import/.test((e as Error).message),
  );
  assert.throws(
    () => onnx.load(negModel({ opType: "Neg", domain: "com.example", opsets: { "com.example": 1 } }))(sc.zeros([2, 3])),
    (e: unknown) => e instanceof onnx.OnnxUnsupportedError && /Neg of domain "com\.example"/.test((e as Error).message),
  );
  assert.throws(() => onnx.load(negModel({ opset: 99 })), (e: unknown) => e instanceof onnx.OnnxUnsupportedError && /opset 99 of the standard domain is not supported \(7 to 28\)/.test((e as Error).message));
  assert.throws(() => onnx.load(negModel({ opset: 3 })), onnx.OnnxUnsupportedError);
  assert.throws(() => onnx.load(negModel({ irVersion: 99 })), (e: unknown) => e instanceof onnx.OnnxUnsupportedError && /IR version 99/.test((e as Error).message));
});

test("a tensor declaring 1e12 elements is refused before anything is allocated", () => {
  const huge = { name: "w", dims: [1000000, 1000000], data_type: onnx.ElemType.FLOAT, raw_data: new Uint8Array(8) };
  const node = onnx.makeNode("Add", ["x", "w"], ["y"]);
  const g = onnx.makeGraph([node], "g", [onnx.makeValueInfo("x", "float32", [1])], [onnx.makeValueInfo("y", "float32", [1])]);
  (g.initializer as unknown[]).push(huge);
  const bytes = onnx.modelBytes(onnx.makeModel(g));
  const before = process.memoryUsage().rss;
  assert.throws(() => onnx.load(bytes), (e: unknown) => e instanceof onnx.OnnxLimitError && /declares 1\.000e\+12 elements/.test((e as Error).message));
  assert.ok(process.memoryUsage().rss - before < 512 * 2 ** 20, "no large allocation");
  // a declared input of that size, and a ConstantOfShape asked for it, are refused too
  const g2 = onnx.makeGraph([onnx.makeNode("Neg", ["x"], ["y"])], "g", [onnx.makeValueInfo("x", "float32", [1e6, 1e6])], [onnx.makeValueInfo("y", "float32", null)]);
  assert.throws(() => onnx.load(onnx.modelBytes(onnx.makeModel(g2))), onnx.OnnxLimitError);
  const shape = sc.tensor([1e6, 1e6], "int64");
  const g3 = onnx.makeGraph(
    [onnx.makeNode("Constant", [], ["s"], { value: shape }), onnx.makeNode("ConstantOfShape", ["s"], ["y"])],
    "g",
    [],
    [onnx.makeValueInfo("y", "float32", null)],
  );
  assert.throws(() => onnx.load(onnx.modelBytes(onnx.makeModel(g3)))(), (e: unknown) => e instanceof onnx.OnnxLimitError && /ConstantOfShape/.test((e as Error).message));
  // a data size that does not match the dims
  const short = { name: "w", dims: [4], data_type: onnx.ElemType.FLOAT, raw_data: new Uint8Array(8) };
  const g4 = onnx.makeGraph([node], "g", [onnx.makeValueInfo("x", "float32", [4])], [onnx.makeValueInfo("y", "float32", [4])]);
  (g4.initializer as unknown[]).push(short);
  assert.throws(() => onnx.load(onnx.modelBytes(onnx.makeModel(g4))), (e: unknown) => e instanceof onnx.OnnxModelError && /raw_data holds 8 bytes/.test((e as Error).message));
});

/** A model whose initializer w lives in external data at `location` (offset, length). */
function externalModel(location: string, offset = 0, length = 16): Uint8Array {
  const w = { name: "w", dims: [4], data_type: onnx.ElemType.FLOAT, data_location: 1, external_data: [{ key: "location", value: location }, { key: "offset", value: String(offset) }, { key: "length", value: String(length) }] };
  const g = onnx.makeGraph([onnx.makeNode("Add", ["x", "w"], ["y"])], "g", [onnx.makeValueInfo("x", "float32", [4])], [onnx.makeValueInfo("y", "float32", [4])]);
  (g.initializer as unknown[]).push(w);
  return onnx.modelBytes(onnx.makeModel(g));
}

test("external data: read beside the model; missing, short, escaping or absolute locations refused", () => {
  const dir = mkdtempSync(path.join(tmpdir(), "onnx-ext-"));
  const inner = path.join(dir, "model");
  mkdirSync(inner);
  writeFileSync(path.join(inner, "w.bin"), new Uint8Array(new Float32Array([1, 2, 3, 4]).buffer));
  writeFileSync(path.join(dir, "secret.bin"), new Uint8Array(new Float32Array([9, 9, 9, 9]).buffer));
  const save = (name: string, bytes: Uint8Array) => {
    const p = path.join(inner, name);
    writeFileSync(p, bytes);
    return p;
  };
  const ok = onnx.load(save("ok.onnx", externalModel("w.bin")));
  assert.deepEqual(Array.from((ok(sc.zeros([4])) as sc.Tensor).dataSync()), [1, 2, 3, 4]);
  const refused = (file: string, re: RegExp) => assert.throws(() => onnx.load(file), (e: unknown) => e instanceof onnx.OnnxExternalDataError && re.test((e as Error).message), re.source);
  refused(save("missing.onnx", externalModel("nope.bin")), /is not found beside the model/);
  refused(save("escape.onnx", externalModel("../secret.bin")), /points outside the model's folder/);
  refused(save("absolute.onnx", externalModel(path.join(dir, "secret.bin"))), /is absolute/);
  refused(save("past-end.onnx", externalModel("w.bin", 8)), /past its end/);
  refused(save("length.onnx", externalModel("w.bin", 0, 12)), /does not match the tensor's 16 bytes/);
  symlinkSync(path.join(dir, "secret.bin"), path.join(inner, "link.bin"));
  refused(save("link.onnx", externalModel("link.bin")), /points outside the model's folder/);
  // from bytes there is no folder, unless one is given
  assert.throws(() => onnx.load(externalModel("w.bin")), (e: unknown) => e instanceof onnx.OnnxModelError && /not loaded from a path/.test((e as Error).message));
  const fromBytes = onnx.load(externalModel("w.bin"), { baseDir: inner });
  assert.deepEqual(Array.from((fromBytes(sc.ones([4])) as sc.Tensor).dataSync()), [2, 3, 4, 5]);
});

test("wrong inputs at call time: ShapeError / DtypeError / ValueError naming the input", () => {
  const m = onnx.load(negModel());
  assert.throws(() => m(sc.zeros([3, 2])), (e: unknown) => e instanceof sc.ShapeError && /input "x" of model g must have shape \[2, 3\], got \[3, 2\]/.test((e as Error).message));
  assert.throws(() => m(sc.zeros([2, 3], "float64")), (e: unknown) => e instanceof sc.DtypeError && /must be float32, got float64/.test((e as Error).message));
  assert.throws(() => m(), (e: unknown) => e instanceof sc.ValueError && /takes 1 inputs \(x\), got 0/.test((e as Error).message));
  assert.throws(() => m.run({}), (e: unknown) => e instanceof sc.ValueError && /missing inputs x/.test((e as Error).message));
  assert.throws(() => m.run({ x: sc.zeros([2, 3]), z: sc.zeros([1]) }), (e: unknown) => e instanceof sc.ValueError && /no inputs named z/.test((e as Error).message));
  // names from the model are data, never code or object keys with meaning
  const node = onnx.makeNode("Neg", ["__proto__"], ["constructor"], {}, { name: "toString" });
  const g = onnx.makeGraph([node], "g", [onnx.makeValueInfo("__proto__", "float32", [1])], [onnx.makeValueInfo("constructor", "float32", [1])]);
  const odd = onnx.load(onnx.modelBytes(onnx.makeModel(g)));
  assert.throws(() => odd.run({}), sc.ValueError);
  const out = odd.run({ ["__proto__"]: sc.tensor([2]) } as Record<string, sc.Tensor>);
  assert.deepEqual(Object.keys(out), ["constructor"]);
  assert.equal((Object.values(out)[0] as sc.Tensor).item(), -2);
});

test("an optional input that an op reads at trace time is a typed error, not a crash (found by the fuzzer)", () => {
  const optional = { name: "o", type: { optional_type: { elem_type: { tensor_type: { elem_type: onnx.ElemType.INT32, shape: { dim: [] } } } } } };
  const g = onnx.makeGraph([onnx.makeNode("Range", ["o", "o", "o"], ["y"])], "g", [optional], [onnx.makeValueInfo("y", "int32", null)]);
  const m = onnx.load(onnx.modelBytes(onnx.makeModel(g)));
  assert.deepEqual(m.staticInputs, []);
  assert.throws(() => m(sc.scalar(3, "int32")), (e: unknown) => e instanceof onnx.OnnxUnsupportedError && /start must be known when the model is traced/.test((e as Error).message));
});

test("onnxruntime-node is optional: without it the error says how to add it", async () => {
  assert.equal(onnx.hasOnnxRuntime(), true);
  assert.throws(
    () => onnx.loadOnnxRuntime("onnxruntime-node-not-installed"),
    (e: unknown) => e instanceof onnx.OnnxRuntimeMissingError && /npm install onnxruntime-node@1\.30/.test((e as Error).message),
  );
  // and with it, a model built here runs in onnxruntime as it runs here
  const g = onnx.makeGraph([onnx.makeNode("Gemm", ["x", "w"], ["y"], { transB: 1, alpha: 0.5 })], "g", [onnx.makeValueInfo("x", "float32", [2, 3])], [onnx.makeValueInfo("y", "float32", [2, 4])], [{ name: "w", value: sc.reshape(sc.arange(0, 12, 1, "float32"), [4, 3]) }]);
  const bytes = onnx.modelBytes(onnx.makeModel(g));
  const x = sc.tensor([[1, 2, 3], [-1, 0, 4]], "float32");
  const ours = onnx.load(bytes)(x) as sc.Tensor;
  const theirs = (await onnx.runOnnxRuntime(bytes, { x })).y!;
  assert.equal(onnx.mismatch(ours, theirs), null);
});

test("a value written by two nodes is refused, naming the node and the value (ONNX graphs are SSA: the last writer won)", () => {
  const vi = onnx.makeValueInfo;
  const twice = onnx.makeGraph([onnx.makeNode("Neg", ["x"], ["y"]), onnx.makeNode("Abs", ["x"], ["y"], {}, { name: "second" })], "g", [vi("x", "float32", [2])], [vi("y", "float32", [2])]);
  assert.throws(
    () => onnx.load(onnx.modelBytes(onnx.makeModel(twice)))(sc.tensor([1, -2])),
    (e: unknown) => e instanceof onnx.OnnxModelError && /Abs node "second": output "y" is already a value of the graph/.test((e as Error).message),
  );
  // a node writing over a graph input, and one node naming an output twice
  const overInput = onnx.makeGraph([onnx.makeNode("Neg", ["x"], ["x"])], "g", [vi("x", "float32", [2])], [vi("x", "float32", [2])]);
  assert.throws(() => onnx.load(onnx.modelBytes(onnx.makeModel(overInput)))(sc.tensor([1, -2])), (e: unknown) => e instanceof onnx.OnnxModelError && /Neg: output "x" is already/.test((e as Error).message));
  const split = onnx.makeGraph([onnx.makeNode("Split", ["x"], ["a", "a"], { axis: 0, num_outputs: 2 })], "g", [vi("x", "float32", [2])], [vi("a", "float32", [1])]);
  assert.throws(() => onnx.load(onnx.modelBytes(onnx.makeModel(split)))(sc.tensor([1, -2])), (e: unknown) => e instanceof onnx.OnnxModelError && /output "a" is already/.test((e as Error).message));
});

test("an output declared of one type that the graph computes as another is refused, naming the output", () => {
  const vi = onnx.makeValueInfo;
  const asInt = onnx.makeGraph([onnx.makeNode("Neg", ["x"], ["y"])], "g", [vi("x", "float32", [2])], [vi("y", "int64", [2])]);
  assert.throws(
    () => onnx.load(onnx.modelBytes(onnx.makeModel(asInt)))(sc.tensor([1, -2])),
    (e: unknown) => e instanceof onnx.OnnxModelError && /output "y" is declared int64 but the graph computes it as float32/.test((e as Error).message),
  );
  const wrongShape = onnx.makeGraph([onnx.makeNode("Neg", ["x"], ["y"])], "g", [vi("x", "float32", [2])], [vi("y", "float32", [3])]);
  assert.throws(() => onnx.load(onnx.modelBytes(onnx.makeModel(wrongShape)))(sc.tensor([1, -2])), (e: unknown) => e instanceof onnx.OnnxModelError && /output "y" is declared with shape \[3\] but the graph computes shape \[2\]/.test((e as Error).message));
  // symbolic and unknown dims are not checked; an If branch's declared output is
  const sym = onnx.makeGraph([onnx.makeNode("Neg", ["x"], ["y"])], "g", [vi("x", "float32", ["n"])], [vi("y", "float32", ["n"])]);
  assert.deepEqual((onnx.load(onnx.modelBytes(onnx.makeModel(sym)))(sc.tensor([1, -2])) as sc.Tensor).arraySync(), [-1, 2]);
  const branch = (op: string, dtype: "float32" | "int64") => onnx.makeGraph([onnx.makeNode(op, ["x"], ["b"])], "br", [], [vi("b", dtype, [2])]);
  const ifG = onnx.makeGraph([onnx.makeNode("If", ["c"], ["y"], { then_branch: branch("Neg", "int64"), else_branch: branch("Abs", "float32") })], "g", [vi("c", "bool", []), vi("x", "float32", [2])], [vi("y", "float32", [2])]);
  assert.throws(() => onnx.load(onnx.modelBytes(onnx.makeModel(ifG)))(sc.scalar(true), sc.tensor([1, -2])), (e: unknown) => e instanceof onnx.OnnxModelError && /If branch: output "b" is declared int64/.test((e as Error).message));
});

test("external data that is a FIFO in the model's folder is refused at once, not waited on forever", () => {
  const dir = mkdtempSync(path.join(tmpdir(), "onnx-fifo-"));
  execFileSync("mkfifo", [path.join(dir, "w.bin")]);
  const file = path.join(dir, "m.onnx");
  writeFileSync(file, externalModel("w.bin"));
  // in a child process: a load that blocks on the FIFO would block this runner's event loop too
  const script = `import * as sc from ${JSON.stringify(path.join(root, "src/api/index.ts"))};
try { sc.onnx.load(${JSON.stringify(file)}); console.log("loaded"); } catch (e) { console.log(e.constructor.name + ": " + e.message); }`;
  const r = spawnSync(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], { cwd: root, timeout: 30_000, encoding: "utf8" });
  assert.equal(r.signal, null, `the load did not return (killed by ${r.signal})`);
  assert.match(r.stdout, /^OnnxExternalDataError: .*"w\.bin" is not a regular file/);
});

test("an external data location with a NUL in it says so (not that it is absolute)", () => {
  const dir = mkdtempSync(path.join(tmpdir(), "onnx-nul-"));
  writeFileSync(path.join(dir, "ok.bin"), new Uint8Array(16));
  const file = path.join(dir, "m.onnx");
  writeFileSync(file, externalModel("ok.bin\0x"));
  assert.throws(() => onnx.load(file), (e: unknown) => e instanceof onnx.OnnxExternalDataError && /contains a NUL character/.test((e as Error).message) && !/absolute/.test((e as Error).message));
});

test("exporting a staged function of arguments without their specs says what is missing (not its first op's 'expected a tensor')", () => {
  const f = sc.stage((x: sc.Tensor) => sc.neg(x), { name: "negate" });
  for (const run of [() => sc.onnx.exportFunction(f), () => (f.toOnnx as (...s: unknown[]) => Uint8Array)(), () => (f.concrete as (...s: unknown[]) => unknown)()]) {
    assert.throws(run, (e: unknown) => e instanceof sc.StagingError && /"negate" takes 1 argument and has no inputSignature/.test((e as Error).message) && !/expected a tensor/.test((e as Error).message));
  }
  // (with specs, or a signature, it exports)
  assert.ok(sc.onnx.exportFunction(f, sc.spec([null, 3])).length > 0);
  assert.ok(sc.onnx.exportFunction(sc.stage((x: sc.Tensor) => sc.neg(x), { inputSignature: [sc.spec([2])] })).length > 0);
});

test("a Gather index out of ONNX's range is named as the model wrote it (-9), not as wrapped (-5); in-range negatives wrap", () => {
  const vi = onnx.makeValueInfo;
  const x = sc.tensor([10, 11, 12, 13]);
  // indices known when traced (a Constant): checked at trace time, with ONNX's range -4..3
  const constant = (values: number[]) =>
    onnx.load(onnx.modelBytes(onnx.makeModel(onnx.makeGraph([onnx.makeNode("Constant", [], ["i"], { value: sc.tensor(values, "int64") }), onnx.makeNode("Gather", ["x", "i"], ["y"], { axis: 0 }, { name: "pick" })], "g", [vi("x", "float32", [4])], [vi("y", "float32", [values.length])]))));
  assert.deepEqual(Array.from((constant([-4, -1, 0, 3])(x) as sc.Tensor).dataSync()), [10, 13, 10, 13]);
  for (const [bad, pos] of [[-9, 1], [-5, 0], [4, 1]] as const) {
    const values = pos === 0 ? [bad, 0] : [0, bad];
    assert.throws(
      () => constant(values)(x),
      (e: unknown) => e instanceof sc.IndexError && new RegExp(`index ${bad} at position \\[${pos}\\] of indices \\(shape \\[2\\]\\) is out of range for axis 0 of size 4 .*valid indices are -4\\.\\.3`).test((e as Error).message) && /Gather node "pick"/.test((e as Error).message) && !/not wrapped/.test((e as Error).message),
      `index ${bad}`,
    );
  }
  // indices given at run time: only -4..-1 wrap, so -9 reaches the kernel's check unchanged, and
  // the kernel states ONNX's range -4..3 (not its own 0..3) and names the node
  const runTime = onnx.load(onnx.modelBytes(onnx.makeModel(onnx.makeGraph([onnx.makeNode("Gather", ["x", "i"], ["y"], { axis: 0 }, { name: "pick" })], "g", [vi("x", "float32", [4]), vi("i", "int64", [2])], [vi("y", "float32", [2])]))));
  assert.deepEqual(Array.from((runTime(x, sc.tensor([-4, -1], "int64")) as sc.Tensor).dataSync()), [10, 13]);
  assert.deepEqual(Array.from((runTime(x, sc.tensor([0, 3], "int64")) as sc.Tensor).dataSync()), [10, 13]);
  for (const [bad, pos] of [[-9, 1], [-5, 0], [4, 1], [2 ** 40, 0]] as const) {
    const values = pos === 0 ? [bad, 0] : [0, bad];
    assert.throws(
      () => runTime(x, sc.tensor(values, "int64")),
      (e: unknown) => {
        const m = (e as Error).message;
        return e instanceof sc.IndexError && new RegExp(`index ${bad} at position \\[${pos}\\] of indices \\(shape \\[2\\]\\) is out of range for axis 0 of size 4 .*valid indices are -4\\.\\.3`).test(m) && /Gather node "pick"/.test(m) && !/0\.\.3|not wrapped/.test(m);
      },
      `run-time index ${bad}`,
    );
  }
  // a gather of the library itself keeps its own range 0..3 (no wrapping)
  assert.throws(() => sc.gather(x, sc.tensor([-1], "int64")), (e: unknown) => e instanceof sc.IndexError && /valid indices are 0\.\.3 \(negative indices are not wrapped\)/.test((e as Error).message));
});
