/**
 * The random-program export fuzzer with special values: seeded random programs of shape-keeping
 * ops and reductions (test/util/op-program-generator.ts), staged, exported and run in
 * onnxruntime on inputs holding NaN, ±Infinity and ±0 (and empty inputs, a dim of 0); the
 * outputs must equal the staged function's, NaN equal to NaN and -0 distinct from +0 but for
 * docs/onnx.md's allowed differences ("Special values"). The programs run in a child process
 * (test/onnx/child/export-fuzz-programs.ts): a native crash of onnxruntime fails this test naming
 * the program that was running, instead of ending the runner (then add the case to
 * src/onnx/export/ort-crashes.ts). EXPORT_FUZZ_PROGRAMS=n runs n programs (default 100),
 * EXPORT_FUZZ_SEED=s another first seed.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { spawnCollect } from "../util/fresh-process.js";
import { hasOnnxRuntime } from "../../src/onnx/ort.js";

const PROGRAMS = Number(process.env.EXPORT_FUZZ_PROGRAMS ?? 100);
const FIRST_SEED = Number(process.env.EXPORT_FUZZ_SEED ?? 1);

interface Counts {
  programs: number;
  runs: number;
  runsWithSpecials: number;
  specials: number;
  emptyRuns: number;
  stagedErrors: number;
  mismatches: number;
  ops: number;
}

test(`export fuzzer: ${PROGRAMS} random programs on special values agree with onnxruntime`, { skip: !hasOnnxRuntime() && "onnxruntime-node is not installed", timeout: 180_000 }, async () => {
  const script = fileURLToPath(new URL("./child/export-fuzz-programs.ts", import.meta.url));
  const r = await spawnCollect(process.execPath, ["--import", "tsx", script, String(FIRST_SEED), String(PROGRAMS)], { timeoutMs: 170_000 });
  const lines = r.stdout.trim().split("\n").filter((l) => l.startsWith("{")).map((l) => JSON.parse(l) as { start?: string; mismatch?: string; counts?: Counts });
  const running = [...lines].reverse().find((l) => l.start !== undefined)?.start;
  assert.equal(r.signal, null, `the child died with ${r.signal} while running ${running} (a native crash of onnxruntime: add it to src/onnx/export/ort-crashes.ts)\n${r.stderr}`);
  assert.equal(r.code, 0, `the child failed while running ${running}:\n${r.stderr}`);
  const counts = lines.find((l) => l.counts !== undefined)?.counts;
  assert.ok(counts, `no counts line:\n${r.stdout.slice(-2000)}`);
  console.log(
    `export fuzz: ${counts.programs} programs (${counts.ops} ops), ${counts.runs} runs in onnxruntime, ${counts.runsWithSpecials} of them with ${counts.specials} special entries, ` +
      `${counts.emptyRuns} on empty inputs, ${counts.stagedErrors} refused by the staged function (max of an empty group), ${counts.mismatches} mismatches`,
  );
  const mismatches = lines.filter((l) => l.mismatch !== undefined).map((l) => l.mismatch!);
  assert.deepEqual(mismatches.slice(0, 5), [], `${mismatches.length} outputs differ from the staged function's`);
  // the run covered what it is for
  assert.ok(counts.programs >= PROGRAMS * 0.85, `${counts.programs} programs exported`);
  assert.ok(counts.runsWithSpecials >= counts.programs, `${counts.runsWithSpecials} runs with special values`);
  assert.ok(counts.emptyRuns > 0 && counts.ops >= 40, `${counts.emptyRuns} empty runs, ${counts.ops} ops`);
});
