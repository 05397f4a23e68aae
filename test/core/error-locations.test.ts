/**
 * Error locations under source maps, in child processes run as users run them: the built package
 * (dist/, whose source maps point at src/**.ts) with `--enable-source-maps`, TypeScript through tsx,
 * and the AutoGraph loader (`--import stagecraft/register`, which turns source maps on and maps the
 * code it converts). Every error must name the fixture's own line, never Stagecraft's files.
 * The dist/ cases need a build (`npm run build`; `npm test` builds first).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import * as path from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const FIXTURES = path.join(ROOT, "test/fixtures/errors");
const SRC_ENTRY = "../../../src/api/index.ts";

interface Report {
  check: string;
  threw?: boolean;
  name: string;
  message: string;
  location: { file: string; line: number; column: number } | null;
  sourceLine: string | null;
}

function run(args: string[], fixture: string, entry: string): Report[] {
  const r = spawnSync(process.execPath, [...args, path.join("test/fixtures/errors", fixture)], {
    cwd: ROOT,
    encoding: "utf8",
    timeout: 120_000,
    env: { ...process.env, SC_ENTRY: entry, NODE_OPTIONS: "" },
  });
  assert.equal(r.status, 0, `${args.join(" ")} ${fixture} failed:\n${r.stdout}\n${r.stderr}`);
  return r.stdout
    .trim()
    .split("\n")
    .map((l) => JSON.parse(l) as Report);
}

function markerLine(file: string, marker: string): number {
  return readFileSync(path.join(FIXTURES, file), "utf8").split("\n").findIndex((l) => l.includes(marker)) + 1;
}

/** Each check names the fixture's line of its marker, in the message, the location and the excerpt. */
function assertLocations(reports: Report[], fixture: string): void {
  const expected: [string, string, string][] = [
    ["eager", "MARK-EAGER", "ShapeError"],
    ["trace", "MARK-TRACE", "ShapeError"],
    ["run", "MARK-RUN", "IndexError"],
  ];
  for (const [check, marker, name] of expected) {
    const r = reports.find((x) => x.check === check);
    assert.ok(r, `no report for ${check}`);
    assert.equal(r.name, name, `${check}: ${r.message}`);
    const line = markerLine(fixture, marker);
    assert.equal(r.location?.file, path.join(FIXTURES, fixture), `${check}: ${r.message}`);
    assert.equal(r.location?.line, line, `${check}: ${r.message}`);
    assert.ok(r.message.endsWith(`(at test/fixtures/errors/${fixture}:${line}:${r.location!.column})`), `${check}: ${r.message}`);
    assert.ok(r.sourceLine?.includes(marker), `${check}: the excerpt shows the user's line: ${r.sourceLine}`);
    assert.doesNotMatch(r.message, /src[\\/]|dist[\\/]|errors\.ts/, `${check}: ${r.message}`);
  }
}

const built = existsSync(path.join(ROOT, "dist/api/index.js"));

test("the built package with --enable-source-maps: errors name the user's JavaScript line", { skip: !built && "dist/ is not built" }, () => {
  assertLocations(run(["--enable-source-maps"], "locations.mjs", "stagecraft"), "locations.mjs");
});

test("the built package through the AutoGraph loader (stagecraft/register): errors name the user's TypeScript line", { skip: !built && "dist/ is not built" }, () => {
  assertLocations(run(["--import", "./dist/autograph/register.js"], "locations.ts", "stagecraft"), "locations.ts");
  assertLocations(run(["--enable-source-maps", "--import", "./dist/autograph/register.js"], "locations.ts", "stagecraft"), "locations.ts");
});

test("the sources through tsx, with --enable-source-maps and with the loader: errors name the user's TypeScript line", () => {
  assertLocations(run(["--import", "tsx", "--enable-source-maps"], "locations.ts", SRC_ENTRY), "locations.ts");
  assertLocations(run(["--import", "tsx", "--import", "./src/autograph/register.ts"], "locations.ts", SRC_ENTRY), "locations.ts");
});
