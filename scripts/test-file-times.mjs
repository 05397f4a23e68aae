// A node:test reporter of each test file's wall time (from the runner starting the file's process
// to its end: startup and imports included) and its number of tests. A line is written as each
// file ends (so a run cut short still says where its time went; with files run side by side the
// runner may report a file's tests after its end, so these lines give no count), then all files
// again, slowest first, with their counts, and the sum. scripts/run-tests.mjs adds it when STAGECRAFT_TEST_TIMES names a file to
// write; the times say where the suite's budget goes, they are never asserted.
import { relative } from "node:path";

const line = (seconds, tests, failed, file) =>
  `${seconds.toFixed(1).padStart(7)} s  ${String(tests).padStart(4)} tests  ${failed ? "FAIL " : ""}${relative(process.cwd(), file)}\n`;

export default async function* fileTimes(source) {
  const files = new Map();
  const entry = (file) => {
    let e = files.get(file);
    if (!e) files.set(file, (e = { seconds: 0, tests: 0, failed: false }));
    return e;
  };
  const started = Date.now();
  for await (const { type, data } of source) {
    if (!data?.file) continue;
    if (type === "test:complete" && data.name === data.file && data.nesting === 0) {
      // (a file is a test of its own, named by its path, whose duration spans its process)
      const e = entry(data.file);
      e.seconds = (data.details?.duration_ms ?? 0) / 1000;
      yield `ended at ${((Date.now() - started) / 1000).toFixed(0).padStart(5)} s: ${e.seconds.toFixed(1).padStart(7)} s  ${relative(process.cwd(), data.file)}\n`;
    } else if ((type === "test:pass" || type === "test:fail") && data.details?.type !== "suite") {
      const e = entry(data.file);
      e.tests++;
      if (type === "test:fail") e.failed = true;
    }
  }
  const rows = [...files].sort((a, b) => b[1].seconds - a[1].seconds);
  let sum = 0;
  yield "\nslowest first:\n";
  for (const [file, e] of rows) {
    sum += e.seconds;
    yield line(e.seconds, e.tests, e.failed, file);
  }
  yield `${sum.toFixed(1).padStart(7)} s  summed over ${rows.length} files, ${((Date.now() - started) / 1000).toFixed(0)} s from the first to the last\n`;
}
