// Runs every test/**/*.test.ts with Node's built-in runner (TypeScript through tsx).
// The WebGPU tests need a Vulkan driver for Dawn: unless STAGECRAFT_WEBGPU_DRIVER=system (use the
// machine's own GPU driver), a software one (Mesa's lavapipe) is set up in .cache/lavapipe/ first
// (scripts/lavapipe.mjs); when that is impossible, the reason travels to the tests, which show it
// as a visible skip.
//
// Files run two at a time (STAGECRAFT_TEST_CONCURRENCY=N for another count; 1 runs them one by
// one): Node's default is one fewer than the cores, which on a 2-core machine is one file at a time,
// and most of a file's time is one core's work (its process start, tsx, tracing and compiling).
// Tests are written for that: ports are 0, scratch folders come from mkdtemp, and a time limit in a
// test is generous enough for a shared core. The files in SERIAL run after the others, one at a time.
//
// STAGECRAFT_TEST_TIMES=FILE writes each file's wall time there, slowest first
// (scripts/test-file-times.mjs).
import { existsSync, readdirSync, statSync } from "node:fs";
import { join, normalize } from "node:path";
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { lavapipeEnv } from "./lavapipe.mjs";

/** Files that must not share the machine with another test file, each with the reason. */
const SERIAL = new Map([
]);

/**
 * The slowest files (as measured by STAGECRAFT_TEST_TIMES, two at a time on a shared 2-core
 * machine, at 236861e; the AutoGraph corpus left the list at c9f4471, from 44 s to ~15), start
 * first, so that the two slots end together instead of one slow file running alone at the end.
 * The rest keep their order.
 */
const SLOW_FIRST = [
  "test/autograph/fuzz.test.ts",
  "test/browser/demo-webgpu.test.ts",
  "test/docs/examples.test.ts",
  "test/distributed/mpi.test.ts",
  "test/backends/webgpu/exit.test.ts",
  "test/browser/demo-page.test.ts",
  "test/staging/default-engine.test.ts",
  "test/remote/faults.test.ts",
  "test/onnx/export-random.test.ts",
  "test/onnx/fuzz.test.ts",
  "test/api/consumer-types.test.ts",
  "test/onnx/export-sweep.test.ts",
  "test/onnx/export-programs.test.ts",
  "test/autograph/transform/pipeline.test.ts",
  "test/core/error-locations.test.ts",
  "test/backends/webgpu/grad-sweep.test.ts",
  "test/grad/last-op.test.ts",
  "test/exec/executor.test.ts",
  "test/onnx/fine-tune-real.test.ts",
  "test/backends/cpu/kernels.test.ts",
];

function find(dir) {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) return find(p);
    return name.endsWith(".test.ts") ? [p] : [];
  });
}
// (a renamed file must not leave these lists silently: the serial one would run beside others)
for (const f of [...SERIAL.keys(), ...SLOW_FIRST]) if (!existsSync(f)) throw new Error(`scripts/run-tests.mjs lists ${f}, which does not exist`);
const only = process.argv.slice(2);
const files = only.length > 0 ? only : find("test").sort();
const concurrency = Number.parseInt(process.env.STAGECRAFT_TEST_CONCURRENCY ?? "2", 10);
if (!(concurrency >= 1)) throw new Error(`STAGECRAFT_TEST_CONCURRENCY must be a whole number from 1, not ${JSON.stringify(process.env.STAGECRAFT_TEST_CONCURRENCY)}`);

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

const rank = (f) => {
  const i = SLOW_FIRST.indexOf(normalize(f));
  return i < 0 ? SLOW_FIRST.length : i;
};
const shared = files.filter((f) => !SERIAL.has(normalize(f))).sort((a, b) => rank(a) - rank(b));
const serial = files.filter((f) => SERIAL.has(normalize(f)));

/** One run of the runner over `list`; returns its exit status. `part` names its times file. */
function runFiles(list, n, part) {
  if (list.length === 0) return 0;
  const reporters = ["--test-reporter=spec", "--test-reporter-destination=stdout"];
  if (env.STAGECRAFT_TEST_TIMES) reporters.push(`--test-reporter=${fileURLToPath(new URL("./test-file-times.mjs", import.meta.url))}`, `--test-reporter-destination=${env.STAGECRAFT_TEST_TIMES}${part}`);
  const r = spawnSync(process.execPath, ["--import", "tsx", "--test", `--test-concurrency=${n}`, ...reporters, ...list], { stdio: "inherit", env });
  return r.status ?? 1;
}

const first = runFiles(shared, concurrency, "");
if (serial.length > 0) console.log(`\nThe ${serial.length} file(s) that run alone (scripts/run-tests.mjs SERIAL):`);
const second = runFiles(serial, 1, ".serial");
process.exit(first !== 0 ? first : second);
