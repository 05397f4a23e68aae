/**
 * ONNX conformance in `npm test`: a representative subset of ONNX's backend node tests (one case
 * per op family the importer covers, test/fixtures/onnx-node) must all pass; the runner reports
 * unsupported features as skips with reasons; and the `stagecraft onnx-conformance` command runs.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, writeFileSync, mkdirSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import * as sc from "../../src/api/index.js";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const fixtures = path.join(root, "test/fixtures/onnx-node");
const { onnx } = sc;

test("every fixture case passes (one per op family)", () => {
  const report = onnx.runConformance(fixtures);
  const bad = report.results.filter((r) => r.status !== "passed").map((r) => `${r.name}: ${r.status} (${r.reason})`);
  assert.deepEqual(bad, []);
  assert.ok(report.results.length >= 160, `only ${report.results.length} fixture cases`);
  assert.ok(report.families.size >= 150, `only ${report.families.size} op families`);
});

/** A one-node case folder written from builders (input x, output y). */
function writeCase(dir: string, node: Record<string, unknown>, x: sc.Tensor, y: sc.Tensor, opsets: Record<string, number> = {}): void {
  mkdirSync(path.join(dir, "test_data_set_0"), { recursive: true });
  const graph = onnx.makeGraph([node], "g", [onnx.makeValueInfo("x", x.dtype, [...x.shape])], [onnx.makeValueInfo("y", y.dtype, [...y.shape])]);
  writeFileSync(path.join(dir, "model.onnx"), onnx.modelBytes(onnx.makeModel(graph, { opsets })));
  writeFileSync(path.join(dir, "test_data_set_0/input_0.pb"), onnx.encode("TensorProto", onnx.tensorToProto(x, "x")));
  writeFileSync(path.join(dir, "test_data_set_0/output_0.pb"), onnx.encode("TensorProto", onnx.tensorToProto(y, "y")));
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
  assert.deepEqual(report.counts, { passed: 1, failed: 1, skipped: 1 });
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
