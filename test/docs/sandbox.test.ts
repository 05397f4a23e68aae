/**
 * The docs sandbox (sandbox.ts) runs `sh` examples with bash in the example's own project, as a new
 * user's shell would: the package's command on PATH, the repository's own tools not, `set -e`
 * semantics, and a time limit that ends the example with everything it started.
 */
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { CodeBlock } from "./markdown-blocks.js";
import { examplePath, Sandbox } from "./sandbox.js";
import { processEndsWithin } from "../util/fresh-process.js";

const sandbox = new Sandbox("sandbox-test");
after(() => sandbox.dispose());

function commands(code: string): CodeBlock {
  return { file: "sandbox.test.md", line: 1, lang: "sh", kind: "commands", code };
}

test("a commands example runs with bash in its project: `stagecraft` is on PATH, the repository's tsx is not", { timeout: 60_000 }, async () => {
  const r = await sandbox.run(commands("stagecraft --help > help.txt 2>&1\nhead -n 1 help.txt\ncommand -v tsx || echo 'no tsx'\npwd\n"), 30_000);
  assert.equal(r.code, 0, r.stderr);
  const [usage, tsx, cwd] = r.stdout.trim().split("\n");
  assert.match(usage!, /^usage: stagecraft /);
  assert.equal(tsx, "no tsx");
  assert.equal(cwd, sandbox.dir);
});

test("the example's PATH drops every node_modules/.bin but the project's own", () => {
  const path = examplePath("/tmp/app", "/repo/node_modules/.bin:/usr/bin:/repo/node_modules/.bin/:/node_modules/.bin:/bin");
  assert.equal(path, "/tmp/app/node_modules/.bin:/usr/bin:/bin");
});

test("a commands example stops at its first failing command (bash -e)", { timeout: 60_000 }, async () => {
  const r = await sandbox.run(commands("echo before\nfalse\necho after\n"), 30_000);
  assert.equal(r.code, 1);
  assert.equal(r.stdout, "before\n");
});

test("an example past its time limit is killed with the processes it started", { timeout: 30_000 }, async () => {
  const r = await sandbox.run(commands("sleep 60 &\necho $! > sleep.pid\nwait\n"), 1500);
  assert.equal(r.signal, "SIGKILL");
  const pid = Number(readFileSync(join(sandbox.dir, "sleep.pid"), "utf8"));
  assert.ok(pid > 0);
  assert.equal(await processEndsWithin(pid, 2000), true, `process ${pid} still running 2 s after it was killed`);
});
