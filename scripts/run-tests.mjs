// Runs every test/**/*.test.ts with Node's built-in runner (TypeScript through tsx).
// The WebGPU tests need a Vulkan driver for Dawn: unless STAGECRAFT_WEBGPU_DRIVER=system (use the
// machine's own GPU driver), a software one (Mesa's lavapipe) is set up in .cache/lavapipe/ first
// (scripts/lavapipe.mjs); when that is impossible, the reason travels to the tests, which show it
// as a visible skip.
import { readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { spawnSync } from "node:child_process";
import { lavapipeEnv } from "./lavapipe.mjs";

function find(dir) {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) return find(p);
    return name.endsWith(".test.ts") ? [p] : [];
  });
}
const only = process.argv.slice(2);
const files = only.length > 0 ? only : find("test").sort();
const env = { ...process.env };
// The determinism switch, on unless the caller set it (STAGECRAFT_DETERMINISTIC=0 runs the suite
// on the real default): the tests compare staged and eager results bit for bit, and with "auto"
// as the default engine a graph called past its warm-up (100 steady calls, or 1 s: a slow graph on a
// loaded machine) would move to onnxruntime segments or stay ours by timing. The tests of auto
// turn the switch off for themselves and force its choice (test/exec/partition-*.test.ts,
// test/staging/determinism.test.ts). docs/architecture.md: "Cutting a graph".
if (env.STAGECRAFT_DETERMINISTIC === undefined) env.STAGECRAFT_DETERMINISTIC = "1";
if (env.STAGECRAFT_WEBGPU_DRIVER !== "system") {
  const lvp = lavapipeEnv();
  if (lvp.env) Object.assign(env, lvp.env);
  else {
    env.STAGECRAFT_WEBGPU_UNAVAILABLE = lvp.reason;
    console.log(`WebGPU tests will be skipped: ${lvp.reason}`);
  }
}
const r = spawnSync(process.execPath, ["--import", "tsx", "--test", "--test-reporter=spec", ...files], { stdio: "inherit", env });
process.exit(r.status ?? 1);
