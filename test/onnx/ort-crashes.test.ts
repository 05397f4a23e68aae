/**
 * Inputs that crash onnxruntime-node natively (src/onnx/export/ort-crashes.ts) never reach it from
 * the engine or the export: the cases run in a child process (a regression is the child's
 * SIGFPE, not this runner's), which must exit normally with the eager results' shapes and dtypes.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { spawnCollect } from "../util/fresh-process.js";
import { hasOnnxRuntime } from "../../src/onnx/ort.js";
import { ORT_CRASHES } from "../../src/onnx/export/ort-crashes.js";

test("empty TopK/sort/argsort through the onnxruntime engine: the child exits normally with the eager shapes", { skip: !hasOnnxRuntime() && "onnxruntime-node is not installed", timeout: 120_000 }, async () => {
  assert.ok(ORT_CRASHES.length >= 1);
  const script = fileURLToPath(new URL("./child/ort-crash-cases.ts", import.meta.url));
  const r = await spawnCollect(process.execPath, ["--import", "tsx", script], { timeoutMs: 100_000 });
  assert.equal(r.signal, null, `the child died with ${r.signal} (onnxruntime was handed a crashing input)\n${r.stderr}`);
  assert.equal(r.code, 0, r.stderr);
  const lines = r.stdout.trim().split("\n").map((l) => JSON.parse(l) as { name: string; shapes?: number[][]; dtypes?: string[]; eager?: number[][]; eagerDtypes?: string[]; error?: string });
  assert.equal(lines.length, 4);
  for (const l of lines) {
    assert.equal(l.error, undefined, `${l.name}: ${JSON.stringify(l)}`);
    assert.deepEqual(l.shapes, l.eager, l.name);
    assert.deepEqual(l.dtypes, l.eagerDtypes, l.name);
    assert.ok(l.shapes!.every((s) => s.includes(0)), l.name);
  }
});
