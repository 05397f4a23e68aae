/**
 * Module conversion (convertModule: every function gets a registered twin in its own scope, top
 * level calls go through the runtime, TypeScript stripped) and the Babel plugin.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { writeFileSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import * as babel from "@babel/core";
import * as sc from "../../../src/api/index.js";
import { autograph } from "../../../src/autograph/api.js";
import { convertModule } from "../../../src/autograph/transform/convert.js";
import autographBabelPlugin from "../../../src/autograph/babel-plugin.js";

type AnyFn = (...args: any[]) => any;
const THIS_FILE = fileURLToPath(import.meta.url);

const RUNTIME_URL = pathToFileURL(path.resolve(path.dirname(THIS_FILE), "../../../src/autograph/operators/index.ts")).href;

test("convertModule gives every function a registered twin in its own scope", () => {
  const code = [
    "export function f(x) { if (x > 0) return x; return -x; }",
    "const g = (x) => x * 2;",
    "class A { m(x) { return x > 1 ? 1 : 0; } static s(x) { return x + 1; } }",
    "const o = { h(x) { return x - 1; } };",
    "export const later = [1, 2].map((v) => v + 1);",
    "async function notMe(x) { return x + 1; }",
    "function* gen() { yield 1 + 1; }",
  ].join("\n");
  const out = convertModule(code, { filename: "/app/m.js", runtime: "stagecraft/autograph-runtime" }).code;
  assert.match(out, /^import \{ ag \} from "stagecraft\/autograph-runtime";\nag\.registerConverted\(f, f\$ag\);/);
  assert.match(out, /function f\$ag\(x\) \{/);
  assert.match(out, /const g = x => x \* 2;\nag\.registerConverted\(g, x => ag\.mul\(x, 2\)\);/);
  assert.match(out, /static \{\s*ag\.registerConverted\(this\.prototype\["m"\], function \(x\) \{/);
  assert.match(out, /ag\.registerConverted\(this\["s"\], function \(x\) \{/);
  assert.match(out, /\(\$obj => \(ag\.registerConverted\(\$obj\["h"\], function \(x\) \{/);
  // A top-level call goes through the runtime (its callback is converted when it is called).
  assert.match(out, /ag\.callMethod\(\[1, 2\], "map", \(\) => \[\(\$f => \(ag\.registerConverted\(\$f, v => ag\.add\(v, 1\)\), \$f\)\)\(v => v \+ 1\)\]\)/);
  assert.doesNotMatch(out, /notMe\$ag|gen\$ag/, "async functions and generators keep no twin");
});

test("a converted module runs: closures see later rebinding, twins are used by sc.autograph, TypeScript is stripped", async () => {
  const dir = mkdtempSync(path.join(tmpdir(), "autograph-module-"));
  try {
    const ts = [
      "interface Box { v: number }",
      "enum Mode { A = 1, B = 2 }",
      "let k: number = 2;",
      "export const scaled = (x: number): number => x * k;",
      "export function setK(v: number): void { k = v; }",
      "export function steps(n: number): number { let c = 0; while (n > 1) { n = n % 2 === 0 ? n / 2 : 3 * n + 1; c++; } return c; }",
      "export const box: Box = { v: Mode.B };",
      "export class Acc { total = 0; add(x: number): number { if (x > 0) this.total += x; return this.total; } }",
      "export const obj = { twice(x: number): number { return x > 0 ? 2 * x : 0; } };",
    ].join("\n");
    const out = convertModule(ts, { filename: path.join(dir, "m.ts"), runtime: RUNTIME_URL, inlineSourceMap: true });
    assert.doesNotMatch(out.code, /interface|: number/);
    assert.match(out.code, /sourceMappingURL=data:application\/json/);
    assert.deepEqual(out.map!.sources, [path.join(dir, "m.ts")]);
    const file = path.join(dir, "m.mjs");
    writeFileSync(file, out.code);
    const m = (await import(pathToFileURL(file).href)) as {
      scaled: AnyFn;
      setK: AnyFn;
      steps: AnyFn;
      box: { v: number };
      Acc: new () => { total: number; add(x: number): number };
      obj: { twice(x: number): number };
    };
    const conv = autograph(m.scaled);
    assert.notEqual(conv, m.scaled);
    assert.equal(conv(3), 6);
    m.setK(5);
    assert.equal(conv(3), 15, "the twin sees the rebound variable");
    assert.equal(autograph(m.steps)(6), 8);
    assert.match(autograph.toSource(m.steps), /ag\.whileStmt/);
    assert.equal(m.box.v, 2);
    const acc = new m.Acc();
    const add = autograph(m.Acc.prototype.add);
    assert.notEqual(add, m.Acc.prototype.add, "class methods have twins");
    assert.equal(add.call(acc, 3), 3);
    assert.equal(add.call(acc, -1), 3);
    assert.equal(acc.add(2), 5);
    assert.notEqual(autograph(m.obj.twice), m.obj.twice, "object methods have twins");
    assert.equal(autograph(m.obj.twice).call(m.obj, 4), 8);
    const staged = sc.stage(autograph(m.steps));
    assert.deepEqual(staged(sc.scalar(6, "float64")).arraySync(), 8);
    assert.deepEqual(staged(sc.scalar(27, "float64")).arraySync(), 111);
    assert.equal(staged.traceCount, 1);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("the Babel plugin (stagecraft/babel) converts a file with other plugins", () => {
  const r = babel.transformSync("const f = (x) => x > 0 ? x : 0;\nexport default f;\n", {
    filename: "/app/file.js",
    babelrc: false,
    configFile: false,
    plugins: [[autographBabelPlugin, { runtime: "my-runtime" }]],
  });
  assert.match(r!.code!, /^import \{ ag \} from "my-runtime";/);
  assert.match(r!.code!, /ag\.registerConverted\(f, x => \{\s*let \$c;\s*return typeof \(\$c = ag\.gt\(x, 0\)\) !== "object" \? \$c \? x : 0 : ag\.ifExp\(\$c, \(\) => x, \(\) => 0, "\/app\/file\.js:1:18"\);\s*\}\);/);
  const skipped = babel.transformSync("const f = (x) => x + 1;", {
    filename: "/app/node_modules/dep/index.js",
    babelrc: false,
    configFile: false,
    plugins: [autographBabelPlugin],
  });
  assert.doesNotMatch(skipped!.code!, /registerConverted/, "node_modules are not converted");
});
