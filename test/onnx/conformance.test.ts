/**
 * ONNX conformance in `npm test`: a representative subset of ONNX's backend node tests (one case
 * per op family the importer covers, test/fixtures/onnx-node) must all pass, the cases of random
 * draws being "checked without values" (never "passed"); the runner reports unsupported features
 * as skips with reasons, and random cases whose outputs break the op's contract as failures; and
 * the `stagecraft onnx-conformance` command runs.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, writeFileSync, mkdirSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import * as sc from "../../src/api/index.js";
import { randomOpsIn } from "../../src/onnx/conformance-random.js";
import { KEY_OPS } from "../../src/ops/random-keys.js";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const fixtures = path.join(root, "test/fixtures/onnx-node");
const { onnx } = sc;

/** Fixture cases whose outputs are random draws: checked without values, not passed. */
const RANDOM_FIXTURES = ["test_bernoulli_expanded", "test_bernoulli_seed", "test_training_dropout"];

test("every fixture case passes (one per op family); the random draws are checked without values", () => {
  const report = onnx.runConformance(fixtures);
  const bad = report.results.filter((r) => r.status !== (RANDOM_FIXTURES.includes(r.name) ? "checked" : "passed")).map((r) => `${r.name}: ${r.status} (${r.reason})`);
  assert.deepEqual(bad, []);
  assert.equal(report.counts.checked, RANDOM_FIXTURES.length);
  // training mode with ratio 0 is exact: it passes by value
  assert.equal(report.results.find((r) => r.name === "test_training_dropout_zero_ratio_mask")?.status, "passed");
  assert.ok(report.results.length >= 160, `only ${report.results.length} fixture cases`);
  assert.ok(report.families.size >= 150, `only ${report.families.size} op families`);
});

/** A one-node case folder written from builders (input x, output y). */
function writeCase(dir: string, node: Record<string, unknown>, x: sc.Tensor, y: sc.Tensor, opsets: Record<string, number> = {}): void {
  writeGraphCase(dir, [node], { x }, { y }, { opsets });
}

/** A case folder of a graph of `nodes`, its inputs and expected outputs by name. */
function writeGraphCase(dir: string, nodes: Record<string, unknown>[], inputs: Record<string, sc.Tensor>, outputs: Record<string, sc.Tensor>, options: { opsets?: Record<string, number>; opset?: number } = {}): void {
  mkdirSync(path.join(dir, "test_data_set_0"), { recursive: true });
  const info = (vs: Record<string, sc.Tensor>) => Object.entries(vs).map(([n, t]) => onnx.makeValueInfo(n, t.dtype, [...t.shape]));
  const graph = onnx.makeGraph(nodes, "g", info(inputs), info(outputs));
  writeFileSync(path.join(dir, "model.onnx"), onnx.modelBytes(onnx.makeModel(graph, options)));
  for (const [kind, vs] of [["input", inputs], ["output", outputs]] as const) {
    Object.entries(vs).forEach(([n, t], k) => writeFileSync(path.join(dir, `test_data_set_0/${kind}_${k}.pb`), onnx.encode("TensorProto", onnx.tensorToProto(t, n))));
  }
}

test("an unsupported op is skipped with its reason; a wrong expected value fails with where it differs", () => {
  const dir = mkdtempSync(path.join(tmpdir(), "onnx-conf-"));
  const x = sc.tensor([1, -2, 3], "float32");
  writeCase(path.join(dir, "test_custom"), onnx.makeNode("FancyOp", ["x"], ["y"], {}, { domain: "com.example" }), x, x, { "com.example": 1 });
  writeCase(path.join(dir, "test_neg_wrong"), onnx.makeNode("Neg", ["x"], ["y"]), x, sc.tensor([-1, 2, -4], "float32"));
  writeCase(path.join(dir, "test_neg_right"), onnx.makeNode("Neg", ["x"], ["y"]), x, sc.tensor([-1, 2, -3], "float32"));
  const report = onnx.runConformance(dir);
  const by = Object.fromEntries(report.results.map((r) => [r.name, r]));
  assert.equal(by.test_custom!.status, "skipped");
  assert.match(by.test_custom!.reason!, /FancyOp of domain "com\.example" is not supported/);
  assert.equal(by.test_neg_wrong!.status, "failed");
  assert.match(by.test_neg_wrong!.reason!, /1 of 3 elements differ \(first at flat index 2: -3 vs expected -4/);
  assert.equal(by.test_neg_right!.status, "passed");
  assert.deepEqual(report.counts, { passed: 1, checked: 0, failed: 1, skipped: 1 });
  assert.match(onnx.formatReport(report), /3 cases: 1 passed \(33\.3%\), 1 failed, 1 skipped/);
});

test("npx stagecraft onnx-conformance <dir> prints counts by op family", () => {
  const r = spawnSync(process.execPath, [path.join(root, "bin/stagecraft.mjs"), "onnx-conformance", fixtures, "--filter", "^test_(abs|lstm_defaults|scan9_sum)$"], { encoding: "utf8" });
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /^ {2}Abs +1\/0\/0$/m);
  assert.match(r.stdout, /^ {2}LSTM +1\/0\/0$/m);
  assert.match(r.stdout, /^ {2}Scan +1\/0\/0$/m);
  assert.match(r.stdout, /3 cases: 3 passed \(100\.0%\), 0 failed, 0 skipped/);
  const usage = spawnSync(process.execPath, [path.join(root, "bin/stagecraft.mjs"), "nonsense"], { encoding: "utf8" });
  assert.equal(usage.status, 2);
  assert.match(usage.stderr, /usage: stagecraft onnx-conformance <dir>/);
});

test("random cases are checked without values: dtype and shape exactly and the op's contract, which a wrong program fails", () => {
  const dir = mkdtempSync(path.join(tmpdir(), "onnx-conf-random-"));
  const x = sc.linspace(0.5, 2, 40, "float32");
  const someDraw = sc.random.uniform([40], { seed: 1234 });
  const training = { r: sc.scalar(0.5, "float32"), t: sc.scalar(true) };
  // RandomUniformLike: any values of the right dtype and shape are another generator's draw
  writeCase(path.join(dir, "test_random_uniform_like_other_draw"), onnx.makeNode("RandomUniformLike", ["x"], ["y"]), x, someDraw);
  // ... but not of another dtype
  writeCase(path.join(dir, "test_random_uniform_like_wrong_dtype"), onnx.makeNode("RandomUniformLike", ["x"], ["y"]), x, sc.cast(someDraw, "float64"));
  // a program whose outputs leave [low, high) breaks the contract (the family is the op under test)
  const shift = [onnx.makeNode("RandomUniformLike", ["x"], ["u"]), onnx.makeNode("Constant", [], ["five"], { value: sc.scalar(5, "float32") }), onnx.makeNode("Add", ["u", "five"], ["y"])];
  writeGraphCase(path.join(dir, "test_random_uniform_like_shifted"), shift, { x }, { y: someDraw });
  // Dropout in training mode: another mask is fine; output = input * mask * 2 is not
  const dropout = onnx.makeNode("Dropout", ["x", "r", "t"], ["y", "z"]);
  writeGraphCase(path.join(dir, "test_dropout_training_other_mask"), [dropout], { x, ...training }, { y: x, z: sc.fullLike(x, true, "bool") }, { opset: 13 });
  const doubled = [onnx.makeNode("Dropout", ["x", "r", "t"], ["d"]), onnx.makeNode("Constant", [], ["two"], { value: sc.scalar(2, "float32") }), onnx.makeNode("Mul", ["d", "two"], ["y"])];
  writeGraphCase(path.join(dir, "test_dropout_training_doubled"), doubled, { x, ...training }, { y: x }, { opset: 13 });
  // inference mode draws nothing: compared by value, and a wrong value fails
  writeGraphCase(path.join(dir, "test_dropout_inference"), [dropout], { x, r: training.r, t: sc.scalar(false) }, { y: x, z: sc.fullLike(x, true, "bool") }, { opset: 13 });
  writeGraphCase(path.join(dir, "test_dropout_inference_wrong"), [dropout], { x, r: training.r, t: sc.scalar(false) }, { y: sc.mul(x, 2), z: sc.fullLike(x, true, "bool") }, { opset: 13 });

  const report = onnx.runConformance(dir);
  const by = Object.fromEntries(report.results.map((r) => [r.name, r]));
  const status = (n: string) => `${by[n]!.status}: ${by[n]!.reason}`;
  assert.match(status("test_random_uniform_like_other_draw"), /^checked: random draws \(randomUniform\): dtype and shape exact, every value in \[low, high\)/);
  // (the case's model declares y float64, which it does not compute: the load refuses it)
  assert.match(status("test_random_uniform_like_wrong_dtype"), /^failed: OnnxModelError: .*output "y" is declared float64 but the graph computes it as float32/);
  assert.match(status("test_random_uniform_like_shifted"), /^failed: test_data_set_0: output 0: element 0 is 5\.\d+, expected a value in \[0, 1\)/);
  assert.equal(by.test_random_uniform_like_shifted!.family, "RandomUniformLike");
  assert.match(status("test_dropout_training_other_mask"), /^checked: random draws \(randomBernoulli\): .*input \* mask \/ \(1 - ratio\)/);
  assert.match(status("test_dropout_training_doubled"), /^failed: test_data_set_0: output 0: element \d+ is [\d.]+, expected 0 or input \/ \(1 - ratio\) \(scale 2\)/);
  assert.equal(by.test_dropout_inference!.status, "passed");
  assert.match(status("test_dropout_inference_wrong"), /^failed: .*elements differ/);
  assert.deepEqual(report.counts, { passed: 1, checked: 2, failed: 4, skipped: 0 });
  const text = onnx.formatReport(report);
  assert.match(text, /^ {2}Dropout +1\/2\/0 {2}\+ 1 checked without values$/m);
  assert.match(text, /Checked without values \(random draws[^\n]*\n {2}test_dropout_training_other_mask: random draws/);
  assert.match(text, /7 cases: 1 passed \(14\.3%\), 2 checked without values \(random draws\), 4 failed, 0 skipped/);
});

test("a random case is checked under the run's tolerance (a caller's, or the default), as a case compared by value is", () => {
  const dir = mkdtempSync(path.join(tmpdir(), "onnx-conf-random-tol-"));
  const x = sc.linspace(0.5, 2, 40, "float32");
  const inputs = { x, r: sc.scalar(0.5, "float32"), t: sc.scalar(true) };
  // y = Dropout(x) * k: off by a relative k - 1 from input * mask / (1 - ratio) where kept
  const scaled = (k: number, withMask: boolean) => [
    onnx.makeNode("Dropout", ["x", "r", "t"], withMask ? ["d", "z"] : ["d"]),
    onnx.makeNode("Constant", [], ["k"], { value: sc.scalar(k, "float32") }),
    onnx.makeNode("Mul", ["d", "k"], ["y"]),
  ];
  for (const withMask of [false, true]) {
    const outputs: Record<string, sc.Tensor> = withMask ? { y: x, z: sc.fullLike(x, true, "bool") } : { y: x };
    writeGraphCase(path.join(dir, `test_dropout_off_1e-4${withMask ? "_mask" : ""}`), scaled(1 + 1e-4, withMask), inputs, outputs, { opset: 13 });
    writeGraphCase(path.join(dir, `test_dropout_off_1e-2${withMask ? "_mask" : ""}`), scaled(1.01, withMask), inputs, outputs, { opset: 13 });
  }
  const statuses = (tolerance?: { rtol: number; atol: number }) =>
    Object.fromEntries(onnx.runConformance(dir, tolerance ? { tolerance } : {}).results.map((r) => [r.name, `${r.status}${r.status === "failed" ? `: ${r.reason}` : ""}`]));
  // the default (rtol 1e-3) covers 1e-4, not 1e-2
  const byDefault = statuses();
  for (const name of ["test_dropout_off_1e-4", "test_dropout_off_1e-4_mask"]) assert.equal(byDefault[name], "checked", name);
  assert.match(byDefault["test_dropout_off_1e-2"]!, /^failed: test_data_set_0: output 0: element \d+ is [\d.]+, expected 0 or input \/ \(1 - ratio\) \(scale 2\)/);
  assert.match(byDefault["test_dropout_off_1e-2_mask"]!, /^failed: test_data_set_0: output 0: \d+ of 40 elements differ .*\(input \* mask \/ \(1 - ratio\) for the mask returned, scale 2\)/);
  // a caller's tolerance reaches the random check: tighter fails 1e-4, looser passes 1e-2
  const tight = statuses({ rtol: 1e-6, atol: 0 });
  for (const name of ["test_dropout_off_1e-4", "test_dropout_off_1e-4_mask"]) assert.match(tight[name]!, /^failed: /, name);
  const loose = statuses({ rtol: 0.1, atol: 0 });
  for (const name of Object.keys(loose)) assert.equal(loose[name], "checked", name);
});

test("a random case's sequence output is walked as a value case's is: each element's dtype and shape, then the contract of each", () => {
  const dir = mkdtempSync(path.join(tmpdir(), "onnx-conf-random-seq-"));
  const x = sc.linspace(0.5, 2, 8, "float32");
  /** A case y = SequenceConstruct(RandomUniformLike(x), then `last`(x)) whose stored sequence is [x, `stored`]. */
  const write = (name: string, last: Record<string, unknown>, stored: sc.Tensor) => {
    const caseDir = path.join(dir, name);
    mkdirSync(path.join(caseDir, "test_data_set_0"), { recursive: true });
    const nodes = [onnx.makeNode("RandomUniformLike", ["x"], ["a"]), last, onnx.makeNode("SequenceConstruct", ["a", "b"], ["y"])];
    const seqType = { sequence_type: { elem_type: { tensor_type: { elem_type: 1, shape: { dim: [{ dim_value: 8 }] } } } } };
    const graph = onnx.makeGraph(nodes, "g", [onnx.makeValueInfo("x", "float32", [8])], [{ name: "y", type: seqType }]);
    writeFileSync(path.join(caseDir, "model.onnx"), onnx.modelBytes(onnx.makeModel(graph)));
    writeFileSync(path.join(caseDir, "test_data_set_0/input_0.pb"), onnx.encode("TensorProto", onnx.tensorToProto(x, "x")));
    const seq = { name: "y", elem_type: 1, tensor_values: [onnx.tensorToProto(x, ""), onnx.tensorToProto(stored, "")] };
    writeFileSync(path.join(caseDir, "test_data_set_0/output_0.pb"), onnx.encode("SequenceProto", seq));
  };
  write("test_randomuniformlike_seq", onnx.makeNode("RandomUniformLike", ["x"], ["b"]), x);
  // the second element leaves [0, 1): the contract fails it, naming the element
  write("test_randomuniformlike_seq_shifted", onnx.makeNode("Add", ["x", "x"], ["b"]), x);
  // the second element's stored shape differs: the walk fails it
  write("test_randomuniformlike_seq_shape", onnx.makeNode("RandomUniformLike", ["x"], ["b"]), sc.zeros([2, 4]));
  const by = Object.fromEntries(onnx.runConformance(dir).results.map((r) => [r.name, `${r.status}: ${r.reason}`]));
  assert.match(by.test_randomuniformlike_seq!, /^checked: random draws \(randomUniform\): dtype and shape exact, every value in \[low, high\)/);
  assert.match(by.test_randomuniformlike_seq_shifted!, /^failed: test_data_set_0: output 0\[1\]: element 0 is 1, expected a value in \[0, 1\)/);
  assert.match(by.test_randomuniformlike_seq_shape!, /^failed: test_data_set_0: output "y"\[1\]: shape \[8\], expected \[2, 4\]/);
});

test("a program is random by its draws: the ops that only make or advance keys (KEY_OPS) draw nothing", () => {
  const g = new sc.random.Generator({ seed: 1 });
  const keys = (seed: sc.Tensor) => {
    const [a] = sc.random.split(sc.random.foldIn(sc.random.key(seed), 3));
    return sc.add(a!, g.nextKey());
  };
  const draws = (seed: sc.Tensor) => sc.random.uniform([2], { key: keys(seed) });
  const seed = sc.scalar(7, "int32");
  const keysOnly = sc.stage(keys, { autograph: false }).concrete(seed);
  assert.deepEqual([...new Set(keysOnly.graph.nodes.map((n) => n.op))].filter((op) => KEY_OPS.has(op)).sort(), [...KEY_OPS].sort(), "the program holds every key op");
  assert.deepEqual(randomOpsIn(keysOnly.graph, keysOnly.library), []);
  const drawing = sc.stage(draws, { autograph: false }).concrete(seed);
  assert.deepEqual(randomOpsIn(drawing.graph, drawing.library), ["randomUniform"]);
});
