/**
 * The software-driver setup and what the tests do without a GPU: scripts/lavapipe.mjs says why it
 * cannot set up the driver, and a WebGPU test file run without a driver reports visible skips with
 * that reason (never a silent pass). Also the command batches' word encoding (protocol.ts).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BatchEncoder, decodeBatch, type Command } from "../../../src/backends/webgpu/protocol.js";

test("lavapipe setup without apt-get says why, and leaves no half-made cache", () => {
  const cache = join(mkdtempSync(join(tmpdir(), "lvp-")), "cache");
  const r = spawnSync(process.execPath, ["scripts/lavapipe.mjs", cache], { encoding: "utf8", env: { ...process.env, PATH: "/nonexistent" } });
  assert.equal(r.status, 0);
  assert.match(r.stderr, /lavapipe setup needs apt-get and dpkg/);
  assert.match(r.stdout, /^echo ".*needs apt-get and dpkg.*" >&2$/m, "the printed shell code reports the reason instead of exporting a broken driver");
});

test("without a driver, WebGPU tests are visible skips that give the reason", () => {
  const env: NodeJS.ProcessEnv = { ...process.env, NODE_TEST_CONTEXT: undefined, STAGECRAFT_WEBGPU_UNAVAILABLE: "testing: no driver here", VK_ICD_FILENAMES: "/nonexistent.json", VK_DRIVER_FILES: "/nonexistent.json" };
  const r = spawnSync(process.execPath, ["--import", "tsx", "--test", "--test-reporter=tap", "test/backends/webgpu/device.test.ts"], { encoding: "utf8", env });
  assert.equal(r.status, 0, r.stderr);
  const skips = r.stdout.split("\n").filter((l) => /# SKIP WebGPU unavailable: testing: no driver here/.test(l));
  assert.ok(skips.length >= 10, `skips shown: ${skips.length}\n${r.stdout.slice(0, 2000)}`);
  assert.match(r.stdout, /# pass 0/);
});

test("command batches travel as words and decode to the same commands", () => {
  const cmds: Command[] = [
    { k: "alloc", id: 7, bytes: 1024 },
    { k: "run", kernel: 3, buffers: [7, 8, 9], params: new Uint32Array([1, 2, 0xffffffff]), groups: [4, 5, 6] },
    { k: "write", id: 7, offset: 0, data: new Float32Array([1.5]) },
    { k: "run", kernel: 4, buffers: [], params: null, groups: [1, 1, 1] },
    { k: "free", id: 7 },
  ];
  const enc = new BatchEncoder();
  for (let r = 0; r < 2000; r++) for (const c of cmds) enc.push(c); // (grows past its first buffer)
  const b = enc.take();
  const out: Command[] = [];
  decodeBatch(b, (c) => out.push(c));
  assert.equal(out.length, cmds.length * 2000);
  const norm = (c: Command) => JSON.parse(JSON.stringify(c, (_k, v) => (ArrayBuffer.isView(v) ? Array.from(v as Uint32Array) : v)));
  out.slice(0, cmds.length).forEach((c, i) => assert.deepEqual(norm(c), norm(cmds[i]!)));
  assert.equal(enc.take().words.length, 0, "take() starts a new batch");
});
