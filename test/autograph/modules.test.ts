/**
 * AutoGraph in ordinary ES modules (issue 11, point 12), in child processes as a user runs them:
 * - without the loader, sc.stage converts functions whose free variables are the library's
 *   namespace, imported bindings and module constants (read once, by value) with no note and
 *   no `scope`; sc.stage(sc.grad(f)) says nothing about Stagecraft's own closures; a variable
 *   that changes is said once per source location;
 * - with the loader (`node --import stagecraft/register`), calls in top-level code go through
 *   the runtime, so sc.grad receives converted functions and main() runs converted.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import * as path from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

function run(file: string, loader: boolean): { stdout: string[]; stderr: string } {
  const args = ["--import", "tsx", ...(loader ? ["--import", "./src/autograph/register.ts"] : []), path.join("test/autograph/fixtures", file)];
  const r = spawnSync(process.execPath, args, { cwd: ROOT, encoding: "utf8", timeout: 120_000 });
  assert.equal(r.status, 0, `${file} failed:\n${r.stdout}\n${r.stderr}`);
  return { stdout: r.stdout.trim().split("\n"), stderr: r.stderr };
}

test("run-time conversion in a plain ES module: imports, the library namespace and constants need no scope and give no note", () => {
  const { stdout, stderr } = run("plain-module.ts", false);
  assert.deepEqual(stdout, [
    // 40 -> 20 -> 10 (not > 10), relu(10) * 3; 0.5: softClip (an imported function, converted when called) gives tanh(0.5).
    "step 30 0.46211713552474976 traces 1",
    "grad 12 -1",
    // sc.stage(sc.grad(loss)) in plain code: loss is converted when traced.
    "plain 12 -1",
    "mutable TensorCoercionError",
    "mutable TensorCoercionError",
    "mutable TensorCoercionError",
  ]);
  // One note, about the user's variable that changes (three closures from one source location).
  const notes = stderr.split("\n").filter((l) => l.startsWith("stagecraft:"));
  assert.equal(notes.length, 1, stderr);
  assert.match(notes[0]!, /free variable offset/);
  assert.doesNotMatch(stderr, /free variables? (sc|relu|scalar|softClip|SCALE)\b/);
});

test("with the loader, top-level calls run converted code: sc.stage(sc.grad(loss)) and main() work on tensors", () => {
  const { stdout, stderr } = run("loader-module.ts", true);
  assert.deepEqual(stdout, ["grad 12 -1", "falsy", "mapped [ -10, 20 ]"]);
  assert.equal(stderr.trim(), "");
});
