/**
 * transform/pipeline.ts: the passes, their order, and what the pipeline guarantees around them
 * (the input is not modified, nested functions are left to their own twins, a converter with
 * nothing to do is skipped without changing the result, the operators get a fresh name).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import * as t from "@babel/types";
import { convertFunctionSource, CONVERTERS, LOWERING, PASSES } from "../../../src/autograph/transform/convert.js";
import { convertFunctionNode } from "../../../src/autograph/transform/pipeline.js";
import { parseFunctionSource } from "../../../src/autograph/transform/parse.js";
import { generateCode } from "../../../src/autograph/transform/generate.js";
import { generateProgram } from "../../util/program-generator.js";
import { gen, squash } from "./snippets.js";

const DOCS = readFileSync(fileURLToPath(new URL("../../../docs/autograph.md", import.meta.url)), "utf8");

test("the passes run in the documented order: lowering, then converters", () => {
  assert.deepEqual(PASSES, [
    "declarations",
    "rebindable-consts",
    "branches",
    "break-continue",
    "returns",
    "asserts",
    "if-statements",
    "loops",
    "switch",
    "conditional-expressions",
    "logical",
    "logging",
    "math",
    "calls",
    "operators",
    "assignments",
    "indexing",
    "tdz",
  ]);
  assert.equal(PASSES.length, LOWERING.length + CONVERTERS.length);
  // docs/autograph.md lists them in the same order.
  const documented = [...DOCS.matchAll(/^\d+\. `([a-z-]+)`/gm)].map((m) => m[1]);
  assert.deepEqual(documented, PASSES);
});

test("each pass has a focused test file beside the others", () => {
  const dir = new URL("./", import.meta.url);
  for (const p of LOWERING) assert.doesNotThrow(() => readFileSync(new URL(`lowering/${p.name}.test.ts`, dir)), `lowering/${p.name}.test.ts`);
  for (const c of CONVERTERS) assert.doesNotThrow(() => readFileSync(new URL(`converters/${c.passName}.test.ts`, dir)), `converters/${c.passName}.test.ts`);
});

test("the input is not modified; nested functions keep their source (they get their own twins)", () => {
  const src = "function f(x) { const g = (y) => y > 0 ? y : -y; if (x > 0) return g(x); return 0; }";
  const fn = parseFunctionSource(src, { filename: "t.js" });
  const before = squash(generateCode(fn as t.Node as t.FunctionExpression, { filename: "t.js", sourceContent: src }).code);
  const out = convertFunctionNode(fn, { filename: "t.js", nativeCopies: false });
  assert.equal(squash(generateCode(fn as t.Node as t.FunctionExpression, { filename: "t.js", sourceContent: src }).code), before, "input unchanged");
  // The nested arrow is kept as written; its converted twin is registered beside it (convertFunctionSource).
  assert.match(squash(generateCode(out.node, { filename: "t.js", sourceContent: src }).code), /const g = y => y > 0 \? y : -y;/);
  assert.match(gen(src), /ag\.registerConverted\(g, y => ag\.ifExp\(ag\.gt\(y, 0\), \(\) => y, \(\) => ag\.neg\(y\), "t\.js:1:34"\)\)/);
});

test("a converter with nothing to rewrite is skipped: running every one gives the same code", () => {
  // The pipeline skips a converter when the function has none of the kinds it says it rewrites
  // (ConverterPassClass.rewrites); a kind missing from a list would leave code unconverted.
  const sources = Array.from({ length: 150 }, (_, i) => {
    const p = generateProgram(i + 1);
    return `function f(${p.params.join(", ")}) {\n${p.body}\n}`;
  });
  sources.push("function f(x) { return x; }", "(o) => o?.a[0]", "function f(x) { let y = 0; for (const v of x) { if (v) break; y += v; } return y; }");
  for (const src of sources) {
    for (const nativeCopies of [true, false]) {
      const fn = parseFunctionSource(src, { filename: "t.js" });
      const code = (skipIdle: boolean) => generateCode(convertFunctionNode(fn, { filename: "t.js", nativeCopies, skipIdle }).node, { filename: "t.js", sourceContent: src }).code;
      assert.equal(code(true), code(false), src);
    }
  }
});

test("a function using `ag` gets another name for the operators", () => {
  const code = gen("function f(ag) { return ag + 1; }");
  assert.equal(code, "function f(ag) { return ag2.add(ag, 1); }");
  assert.equal(convertFunctionSource("function f(ag) { return ag + 1; }", { filename: "t.js" }).agName, "ag2");
});
