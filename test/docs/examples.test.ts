/**
 * Every code example in README.md and docs/*.md runs, as a new user would run it (sandbox.ts: its
 * own folder with `stagecraft` installed from this repository's built dist/, a fresh process), and
 * prints what its comments say it prints (claims.ts). Examples that cannot run here carry an
 * annotation in the Markdown (markdown-blocks.ts) and are listed by the last test, never skipped
 * silently. Needs the build (`npm test` builds first; alone: `npm run build` then
 * `node --import tsx --test test/docs/examples.test.ts`).
 */
import { test, describe, before, after } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { codeBlocks, type CodeBlock } from "./markdown-blocks.js";
import { Sandbox, REPO } from "./sandbox.js";
import { CHECKS, checkClaims, claimsOf } from "./claims.js";

const DOCS = ["README.md", ...readdirSync(join(REPO, "docs")).filter((f) => f.endsWith(".md")).sort().map((f) => `docs/${f}`)];
const BLOCKS = new Map(DOCS.map((doc) => [doc, codeBlocks(doc, readFileSync(join(REPO, doc), "utf8"))]));
const EXAMPLES = [...BLOCKS.values()].flat().filter((b) => b.kind !== "text");

/**
 * How many examples are marked no-run. A new mark must be deliberate: add it here too, with the
 * reason in the Markdown (the last test lists them all).
 */
const EXPECTED_NO_RUN = 12; // (12th: the README's remote eager ops, which need a running worker)
const TIMEOUT_MS = 120_000;

function newestMtime(dir: string, ext: string): number {
  let newest = 0;
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    const s = statSync(p);
    if (s.isDirectory()) newest = Math.max(newest, newestMtime(p, ext));
    else if (name.endsWith(ext)) newest = Math.max(newest, s.mtimeMs);
  }
  return newest;
}

function where(b: CodeBlock): string {
  return `${b.file}:${b.line} (${b.lang})`;
}

let gpuSkip: string | false | undefined;
/** What became of each needs-webgpu example in this run (none: its test did not get that far, or was filtered out). */
const gpuOutcome = new Map<CodeBlock, string>();
async function webgpuSkip(): Promise<string | false> {
  gpuSkip ??= (await import("../util/webgpu.js")).gpuSkip;
  return gpuSkip;
}

test("the examples run against a build of the current sources", () => {
  const src = newestMtime(join(REPO, "src"), ".ts");
  const dist = newestMtime(join(REPO, "dist"), ".js");
  assert.ok(dist >= src, "dist/ is older than src/: run `npm run build` (npm test does) before this test");
});

// Documents run side by side (two at a time: a docs folder each, the type check beside them); a
// document's examples run in order, one at a time: a later example may read what an earlier one
// wrote (README's ONNX import loads the model.onnx its export example wrote). Node's subtests
// inherit their parent's concurrency, so each document's suite sets its own.
describe("examples", { concurrency: 2 }, () => {
  for (const doc of DOCS) {
    const examples = BLOCKS.get(doc)!.filter((b) => b.kind !== "text");
    if (examples.length === 0) continue;
    describe(doc, { concurrency: 1 }, () => {
      let sandbox: Sandbox;
      before(() => (sandbox = new Sandbox(doc)));
      after(() => sandbox.dispose());
      for (const block of examples) {
        const skip = block.mark?.kind === "no-run" ? `no-run: ${block.mark.reason}` : false;
        test(`line ${block.line} (${block.lang})`, { skip, timeout: TIMEOUT_MS + 10_000 }, async (t) => {
          if (block.mark?.kind === "needs-webgpu") {
            const why = await webgpuSkip();
            gpuOutcome.set(block, why ? `skipped: ${why}` : "ran");
            if (why) return t.skip(why);
          }
          const result = await sandbox.run(block, TIMEOUT_MS);
          // Name the doc's lines in what the example printed ("example-3.ts:5:7" is the block's line 5).
          const docLines = (text: string) => text.replace(/\bexample-\d+\.(?:ts|js|sh):(\d+)/g, (_, l: string) => `${block.file}:${block.line + Number(l)}`);
          const output = docLines(`\n--- stdout\n${result.stdout.slice(-3000)}\n--- stderr\n${result.stderr.slice(-3000)}`);
          assert.equal(result.signal, null, `${where(block)} was killed (${result.signal}) after ${TIMEOUT_MS / 1000} s${output}`);
          assert.equal(result.code, 0, `${where(block)} exited with ${result.code}${output}`);
          const failures = checkClaims(claimsOf(block.code), result.prints);
          assert.deepEqual(
            failures.map((f) => `${block.file}:${block.line + f.claim.line} "// ${f.claim.comment}": ${f.message}`),
            [],
            `${where(block)} printed something other than its comments say${output}`,
          );
          t.diagnostic(`${result.seconds.toFixed(1)} s`);
        });
      }
    });
  }

  test("the TypeScript examples type-check in a strict project against the package's declarations", async () => {
    const sandbox = new Sandbox("typecheck");
    try {
      const blocks = EXAMPLES.filter((b) => (b.lang === "ts" || b.lang === "typescript") && b.mark?.kind !== "no-run");
      const { code, output, files } = await sandbox.typecheck(blocks);
      // tsc reports "example-3.ts(5,7): error ...": name the doc's own line instead.
      const errors = output.replace(/^(?:typecheck\/)?(example-\d+\.ts)\((\d+),(\d+)\)/gm, (all, file: string, line: string, col: string) => {
        const b = files.get(file);
        return b ? `${b.file}:${b.line + Number(line)}:${col}` : all;
      });
      assert.equal(code, 0, errors);
    } finally {
      sandbox.dispose();
    }
  });
});

test("every `sc.…` name the docs mention, in prose or code, is in the package's public API", async () => {
  // The built entry point, as `import * as sc from "stagecraft"` gives it (the examples above run it):
  // the package's self-reference resolves through package.json's "exports" to dist/.
  const sc = (await import("stagecraft")) as unknown as Record<string, unknown>;
  const missing = new Set<string>();
  for (const doc of DOCS) {
    const text = readFileSync(join(REPO, doc), "utf8");
    text.split("\n").forEach((line, i) => {
      for (const m of line.matchAll(/\bsc((?:\.[A-Za-z_$][\w$]*)+)/g)) {
        let value: unknown = sc;
        for (const key of m[1]!.slice(1).split(".")) {
          if (value === null || value === undefined || !(key in Object(value))) {
            missing.add(`${doc}:${i + 1}: sc${m[1]}`);
            break;
          }
          value = (value as Record<string, unknown>)[key];
        }
      }
    });
  }
  assert.deepEqual([...missing], []);
});

test("every check in claims.ts belongs to a claim in the docs", () => {
  const used = new Set(EXAMPLES.flatMap((b) => claimsOf(b.code).map((c) => c.comment)));
  assert.deepEqual(Object.keys(CHECKS).filter((c) => !used.has(c)), []);
});

test("examples not run here are marked, with a reason, and listed", (t) => {
  const noRun = EXAMPLES.filter((b) => b.mark?.kind === "no-run");
  const gpu = EXAMPLES.filter((b) => b.mark?.kind === "needs-webgpu");
  for (const b of noRun) t.diagnostic(`no-run ${where(b)}: ${b.mark?.kind === "no-run" ? b.mark.reason : ""}`);
  for (const b of gpu) t.diagnostic(`needs-webgpu ${where(b)}: ${gpuOutcome.get(b) ?? "not run in this run (its test was filtered out or never started)"}`);
  t.diagnostic(`${EXAMPLES.length} examples in ${DOCS.length} documents (${DOCS.join(", ")}): ${EXAMPLES.length - noRun.length} run, ${noRun.length} marked no-run`);
  assert.equal(noRun.length, EXPECTED_NO_RUN, "a no-run mark was added or removed: update EXPECTED_NO_RUN deliberately");
});
