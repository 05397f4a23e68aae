/**
 * spawnCollect (fresh-process.ts) ends what a program started along with the program: on its time
 * limit, and when it exits leaving a background process that holds its output open.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { processEndsWithin, spawnCollect } from "./fresh-process.js";

test("spawnCollect: a program that exits leaving a background process behind resolves, and the background process is killed", { timeout: 30_000 }, async () => {
  // The background sleep inherits stdout: left alone it would hold the pipe open for a minute.
  const r = await spawnCollect("bash", ["-c", "sleep 60 & echo $!"]);
  assert.equal(r.code, 0);
  assert.equal(r.timedOut, false);
  const pid = Number(r.stdout.trim());
  assert.ok(pid > 0, `printed ${JSON.stringify(r.stdout)}`);
  assert.equal(await processEndsWithin(pid, 2000), true, `process ${pid} still running 2 s after it was killed`);
});

test("spawnCollect: past its time limit the program and what it started are killed, and the result says so", { timeout: 30_000 }, async () => {
  const r = await spawnCollect("bash", ["-c", "sleep 60 & echo $!; wait"], { timeoutMs: 1500 });
  assert.equal(r.timedOut, true);
  assert.equal(r.signal, "SIGKILL");
  assert.equal(r.code, null);
  const pid = Number(r.stdout.trim());
  assert.ok(pid > 0, `printed ${JSON.stringify(r.stdout)}`);
  assert.equal(await processEndsWithin(pid, 2000), true, `process ${pid} still running 2 s after it was killed`);
});

test("spawnCollect: a program that cannot be started rejects", async () => {
  await assert.rejects(spawnCollect("/nonexistent/stagecraft-no-such-program", []), /ENOENT/);
});
