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
