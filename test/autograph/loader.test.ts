/**
 * The AutoGraph loader (`node --import stagecraft/register app.ts`), run in child processes on
 * TypeScript fixtures as a user would run them. Stagecraft's own sources are TypeScript too, so
 * the child also loads tsx (which the loader leaves Stagecraft's files to):
 *   node --import tsx --import ./src/autograph/register.ts test/autograph/fixtures/<file>.ts
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import * as path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { isUserFile } from "../../src/autograph/register-hooks.js";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const FIXTURES = path.join(ROOT, "test/autograph/fixtures");

function runFixture(name: string): string[] {
  const r = spawnSync(process.execPath, ["--import", "tsx", "--import", "./src/autograph/register.ts", path.join("test/autograph/fixtures", name)], {
    cwd: ROOT,
    encoding: "utf8",
    timeout: 120_000,
  });
  assert.equal(r.status, 0, `fixture ${name} failed:\n${r.stdout}\n${r.stderr}`);
  return r.stdout.trim().split("\n");
}

function markerLine(file: string, marker: string): number {
  return readFileSync(path.join(FIXTURES, file), "utf8").split("\n").findIndex((l) => l.includes(marker)) + 1;
}

test("the loader runs a TypeScript file: closures see rebound free variables; tensor control flow is staged by sc.stage", () => {
  const out = runFixture("closures.ts");
  assert.deepEqual(out, [
    "scaled 6",
    "rebound 30",
    // [8, 8] halves to [1, 1] (sum 2 <= 3) and is not above 1; [20, 4] halves to [2.5, 0.5], then - 1.
    "staged [ 1, 1 ] [ 1.5, -0.5 ] traces 1",
    // limitScale rebound to 4: [8, 8] halves once to [4, 4] (sum 8 <= 12), then - 1.
    "restaged [ 3, 3 ]",
    "converted at load time true",
  ]);
});

test("errors in loader-converted code point at the original TypeScript lines; JavaScript modules are converted too", () => {
  const out = runFixture("errors.ts").map((l) => JSON.parse(l) as Record<string, unknown>);
  const typeError = out.find((o) => o.check === "typeerror")!;
  assert.equal(typeError.name, "TypeError");
  assert.match(String(typeError.frame), new RegExp(`errors\\.ts:${markerLine("errors.ts", "MARK-TYPEERROR")}:\\d+\\)$`));
  const staged = out.find((o) => o.check === "staged")!;
  assert.equal(staged.name, "AutoGraphError");
  assert.match(String(staged.message), /variable y is assigned in only one branch/);
  assert.ok(String(staged.message).includes(`errors.ts:${markerLine("errors.ts", "MARK-ONE-BRANCH")}:3`), String(staged.message));
  assert.deepEqual(out.find((o) => o.check === "mjs"), { check: "mjs", converted: true, value: [-2, 1, 0.5] });
});

test("the loader converts user files only (not node_modules, not Stagecraft's own sources)", () => {
  assert.equal(isUserFile(pathToFileURL(path.join(FIXTURES, "closures.ts")).href), true);
  assert.equal(isUserFile(pathToFileURL(path.join(FIXTURES, "helpers.mjs")).href), true);
  assert.equal(isUserFile(pathToFileURL(path.join(ROOT, "node_modules/tsx/dist/loader.mjs")).href), false);
  assert.equal(isUserFile(pathToFileURL(path.join(ROOT, "src/api/index.ts")).href), false);
  assert.equal(isUserFile(pathToFileURL(path.join(ROOT, "dist/api/index.js")).href), false);
  assert.equal(isUserFile("node:fs"), false);
  assert.equal(isUserFile(pathToFileURL(path.join(FIXTURES, "data.json")).href), false);
});
