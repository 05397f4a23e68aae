// A run that fails on onnxruntime is reported once: as the typed error we throw (which carries
// onnxruntime's message), not also as a line onnxruntime's logger prints to stderr. The plan's
// segments rerun on ours after such a failure, so a stray stderr line there told the user about
// an error they never got. In a child process, because the logger writes to the process's stderr.
import { test } from "node:test";
import assert from "node:assert/strict";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { spawnSync } from "node:child_process";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

test("a failed onnxruntime run raises our error and prints nothing to stderr", () => {
  const script = `
    import * as sc from "./src/api/index.js";
    const f = sc.stage((x, i) => sc.gather(sc.mul(x, 2), i, 0), { engine: "onnxruntime" });
    const x = sc.tensor([1, 2, 3, 4]);
    console.log(Array.from(f(x, sc.tensor([1, 2], "int32")).dataSync()).join(","));
    try { f(x, sc.tensor([1, 9], "int32")); console.log("no error"); }
    catch (e) { console.log(e.constructor.name + ": " + e.message.split("\\n")[0]); }
  `;
  const r = spawnSync(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], { cwd: root, timeout: 60_000, encoding: "utf8" });
  assert.equal(r.status, 0, r.stderr);
  const lines = r.stdout.trim().split("\n");
  assert.equal(lines[0], "4,6");
  assert.match(lines[1]!, /^OnnxError: .*Gather.*idx=9/);
  assert.equal(r.stderr, "");
});
