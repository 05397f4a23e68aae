/**
 * The platform seam (src/core/platform): the stack parser on real stacks of Chromium, Firefox
 * and Safari; the browser side exports what the Node side does and gives the same kernel bytes.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { parseStack } from "../../src/core/platform/stack.js";
import * as nodePlatform from "../../src/core/platform/node.js";
import * as browserPlatform from "../../src/core/platform/browser.js";
import { utf8ToBase64 } from "../../src/core/platform/encoding.js";

const frames = (stack: string) => parseStack(stack).map((f) => [f.functionName, f.file, f.line, f.column]);

test("stacks of Chromium 156 (captured in the headless browser): named, anonymous, method and generated-code frames", () => {
  // new Error().stack in a page: nested calls, a method, new Function with and without a sourceURL, eval
  assert.deepEqual(
    frames("Error: x\n    at inner (http://127.0.0.1:8123/app.js:1:27)\n    at Model.step (http://127.0.0.1:8123/app.js:2:31)\n    at http://127.0.0.1:8123/app.js:6:30\n    at http://127.0.0.1:8123/app.js:6:37"),
    [
      ["inner", "http://127.0.0.1:8123/app.js", 1, 27],
      ["Model.step", "http://127.0.0.1:8123/app.js", 2, 31],
      ["", "http://127.0.0.1:8123/app.js", 6, 30],
      ["", "http://127.0.0.1:8123/app.js", 6, 37],
    ],
  );
  assert.deepEqual(frames("Error: x\n    at inner (http://127.0.0.1:8123/app.js:1:27)\n    at eval (http://127.0.0.1:8123/gen.js?autograph=3:3:8)\n    at http://127.0.0.1:8123/app.js:7:17")[1], [
    "eval",
    "http://127.0.0.1:8123/gen.js?autograph=3",
    3,
    8,
  ]);
  // code made by new Function / eval has no file: its frames are not the user's
  assert.deepEqual(frames("Error: x\n    at inner (http://127.0.0.1:8123/app.js:1:27)\n    at eval (eval at <anonymous> (http://127.0.0.1:8123/app.js:4:23), <anonymous>:3:8)\n    at http://127.0.0.1:8123/app.js:8:16"), [
    ["inner", "http://127.0.0.1:8123/app.js", 1, 27],
    ["eval", "", 3, 8],
    ["", "http://127.0.0.1:8123/app.js", 8, 16],
  ]);
  // Node's own format is V8's: paths, file URLs, async and constructor frames
  assert.deepEqual(frames("Error\n    at async run (file:///home/u/app.mjs:3:5)\n    at new Model (/home/u/model.js:10:2)\n    at node:internal/main:1:1"), [
    ["run", "file:///home/u/app.mjs", 3, 5],
    ["Model", "/home/u/model.js", 10, 2],
    ["", "node:internal/main", 1, 1],
  ]);
});

test("stacks of Firefox and Safari (captured ones, from error-stack-parser's fixtures): names, anonymous frames, eval'd code", () => {
  // Firefox 31+
  assert.deepEqual(frames("foo@http://path/to/file.js:41:13\nbar@http://path/to/file.js:1:1\n.plugin/e.fn[c]/<@http://path/to/file.js:1:1\n"), [
    ["foo", "http://path/to/file.js", 41, 13],
    ["bar", "http://path/to/file.js", 1, 1],
    [".plugin/e.fn[c]/<", "http://path/to/file.js", 1, 1],
  ]);
  // Firefox 43+: eval'd code (its positions are in generated code: no file)
  assert.deepEqual(
    frames(
      "baz@http://localhost:8080/file.js line 26 > eval line 2 > eval:1:30\nfoo@http://localhost:8080/file.js line 26 > eval:2:96\n" +
        "@http://localhost:8080/file.js line 26 > eval:4:18\nspeak@http://localhost:8080/file.js:26:17\n@http://localhost:8080/file.js:33:9",
    ),
    [
      ["baz", "", 1, 30],
      ["foo", "", 2, 96],
      ["", "", 4, 18],
      ["speak", "http://localhost:8080/file.js", 26, 17],
      ["", "http://localhost:8080/file.js", 33, 9],
    ],
  );
  // Firefox: new Function code, and the first frame after an await
  assert.deepEqual(frames("anonymous@http://localhost:8080/app.js line 4 > Function:3:8\nasync*train@http://localhost:8080/app.js:20:3"), [
    ["anonymous", "", 3, 8],
    ["train", "http://localhost:8080/app.js", 20, 3],
  ]);
  // Safari 8: a frame without a name, native code skipped
  assert.deepEqual(frames("http://path/to/file.js:47:22\nfoo@http://path/to/file.js:52:15\nbar@http://path/to/file.js:108:23\n[native code]"), [
    ["", "http://path/to/file.js", 47, 22],
    ["foo", "http://path/to/file.js", 52, 15],
    ["bar", "http://path/to/file.js", 108, 23],
  ]);
});

test("the browser platform exports every name the Node platform does, and gives the same kernel module", () => {
  assert.deepEqual(Object.keys(browserPlatform).sort(), Object.keys(nodePlatform).sort());
  assert.equal(nodePlatform.PLATFORM, "node");
  assert.equal(browserPlatform.PLATFORM, "browser");
  assert.deepEqual(browserPlatform.kernelWasmBytes(), new Uint8Array(nodePlatform.kernelWasmBytes()));
  // no threads where a thread may not block (here: no Web Workers at all)
  assert.equal(browserPlatform.availableParallelism(), 1);
  assert.equal(browserPlatform.startKernelWorker("", {}, []), null);
  assert.throws(() => browserPlatform.readFileSync("/etc/hostname"), /fs\.readFileSync is not available in the browser/);
  assert.throws(() => browserPlatform.createRequire("x")("mnist"), /require\("mnist"\) is not available in the browser/);
});

test("the browser platform tells the library's frames from the user's by where it was loaded from", () => {
  // (run from source here: browser.ts is in src/core/platform, so the library is src/)
  const root = browserPlatform.LIB_ROOT;
  assert.match(root, /\/src$/);
  assert.equal(browserPlatform.isLibraryFile(`${root}/ops/binary.ts`), true);
  assert.equal(browserPlatform.isLibraryFile(`${root}/ops/binary.ts?v=123`), true);
  assert.equal(browserPlatform.isLibraryFile(`${root.replace(/\/src$/, "")}/examples/app.ts`), false);
  assert.equal(browserPlatform.isLibraryFile(`${root}-other/x.js`), false);
  const site = browserPlatform.callSites(() => {}).find((s) => !browserPlatform.isLibraryFile(s.file ?? ""))!;
  assert.match(site.file ?? "", /platform\.test\.ts$/);
});

test("utf8ToBase64 agrees with Buffer on text outside ASCII and on long text", () => {
  for (const s of ["", "abc", "é→∑ 𝔁", "x".repeat(70000) + "ü"]) assert.equal(utf8ToBase64(s), Buffer.from(s, "utf8").toString("base64"));
});
