/**
 * Errors and source maps point at the original code: conversion errors name file:line:col and
 * show the line; runtime errors of converted code carry loc strings and map the stack back.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import * as sc from "../../../src/api/index.js";
import { autograph } from "../../../src/autograph/api.js";
import { AutoGraphError } from "../../../src/autograph/operators/index.js";
import { convertFunctionSource, convertModule, ConversionError } from "../../../src/autograph/transform/convert.js";

const THIS_FILE = fileURLToPath(import.meta.url);
const THIS_SOURCE = readFileSync(THIS_FILE, "utf8").split("\n");
/** 1-based line of the line of this file containing `marker`. */
function lineOf(marker: string): number {
  const i = THIS_SOURCE.findIndex((l) => l.includes(marker) && !l.includes("lineOf("));
  assert.ok(i >= 0, `marker ${marker} not found`);
  return i + 1;
}

test("a conversion error names the original file:line:col and shows the source line", () => {
  class Base {
    m() {
      return 1;
    }
  }
  class Derived extends Base {
    override m() {
      return super.m() + 1; // MARK-SUPER
    }
  }
  const line = lineOf("class Derived extends Base") + 1;
  assert.throws(
    () => autograph(Derived.prototype.m),
    (e: unknown) => {
      assert.ok(e instanceof ConversionError, String(e));
      assert.match(e.message, /methods that use `super` are not converted/);
      assert.ok(e.message.includes(`locations.test.ts:${line}:`), e.message);
      assert.ok(e.message.includes(`\n  ${line} |     override m() {`), `shows the original (TypeScript) line:\n${e.message}`);
      assert.equal(e.sourceLocation.line, line);
      return true;
    },
  );
  assert.throws(
    () => convertModule("export function f(x) {\n  return x +;\n}\n", { filename: "/tmp/broken.js" }),
    (e: unknown) => e instanceof ConversionError && /broken\.js:2:/.test(e.message) && e.message.includes("2 |   return x +;"),
  );
});

test("runtime errors of converted code carry the original location (loc strings and the stack through source maps)", () => {
  function oneBranch(x: any) {
    let y;
    if (x > 0) { // MARK-ONE-BRANCH
      y = x * 2;
    }
    return y;
  }
  const ifLine = lineOf("MARK-ONE-BRANCH");
  assert.match(autograph.toSource(oneBranch), new RegExp(`"[^"]*locations\\.test\\.ts:${ifLine}:5"`));
  assert.throws(
    () => sc.stage(autograph(oneBranch))(sc.scalar(1)),
    (e: unknown) => e instanceof AutoGraphError && /variable y/.test(e.message) && e.message.includes(`locations.test.ts:${ifLine}:5`),
  );
  function boom(o: any) {
    let v = 0;
    if (o.k > 0) {
      v = o.missing.deep; // MARK-BOOM
    }
    return v;
  }
  const boomLine = lineOf("MARK-BOOM");
  try {
    autograph(boom)({ k: 1 });
    assert.fail("should throw");
  } catch (e) {
    assert.ok(e instanceof TypeError);
    const frame = e.stack!.split("\n").find((l) => l.includes("locations.test.ts"));
    assert.ok(frame && frame.includes(`locations.test.ts:${boomLine}:`), `stack points at the original line ${boomLine}:\n${e.stack}`);
  }
});

test("source maps of converted code map generated positions to the original file", () => {
  const src = "function f(x) {\n  let y = 0;\n  if (x > 0) {\n    y = x * 2;\n  }\n  return y;\n}";
  const r = convertFunctionSource(src, { filename: "/src/orig.js", line: 10, column: 2 });
  assert.deepEqual(r.map!.sources, ["/src/orig.js"]);
  assert.equal(r.map!.sourcesContent![0], src);
  // ag.ifStmt(...) is mapped to the `if` at line 12 (10 + 2), column 2.
  const genLine = r.code.split("\n").findIndex((l) => l.includes("ag.ifStmt"));
  const segments = decodeMappings(r.map!.mappings);
  const seg = segments[genLine]!.find((s) => s.origLine === 12 - 1);
  assert.ok(seg, "a mapping from the ag.ifStmt line to original line 12");
  assert.equal(seg.origColumn, 2);
});

/** Minimal VLQ decoding of source-map mappings (per generated line: segments with original line/column, 0-based). */
function decodeMappings(mappings: string): { origLine: number; origColumn: number }[][] {
  const chars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  const lines: { origLine: number; origColumn: number }[][] = [];
  let origLine = 0;
  let origColumn = 0;
  for (const line of mappings.split(";")) {
    const segs: { origLine: number; origColumn: number }[] = [];
    for (const seg of line.split(",").filter(Boolean)) {
      const values: number[] = [];
      let value = 0;
      let shift = 0;
      for (const ch of seg) {
        const d = chars.indexOf(ch);
        value += (d & 31) << shift;
        if (d & 32) shift += 5;
        else {
          values.push(value & 1 ? -(value >> 1) : value >> 1);
          value = 0;
          shift = 0;
        }
      }
      if (values.length >= 4) {
        origLine += values[2]!;
        origColumn += values[3]!;
        segs.push({ origLine, origColumn });
      }
    }
    lines.push(segs);
  }
  return lines;
}
