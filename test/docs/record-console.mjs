// Preloaded (node --import) into a docs example's process: records what each console.log call
// printed and the example's line it was called from, so examples.test.ts can compare the output
// with the `// ...` claim on that line. The example itself runs unchanged; console.log still prints.
import { appendFileSync } from "node:fs";
import { format } from "node:util";

const record = process.env.DOCS_EXAMPLE_RECORD;
const file = process.env.DOCS_EXAMPLE_FILE;
if (record && file) {
  const log = console.log.bind(console);
  console.log = (...args) => {
    const limit = Error.stackTraceLimit;
    Error.stackTraceLimit = 50;
    const stack = new Error().stack ?? "";
    Error.stackTraceLimit = limit;
    // The innermost frame in the example's own file (tsx maps .ts lines back to the source).
    const frame = stack.split("\n").find((l) => l.includes(file));
    const line = frame ? Number(/:(\d+):\d+\)?\s*$/.exec(frame)?.[1] ?? 0) : 0;
    appendFileSync(record, JSON.stringify({ line, text: format(...args) }) + "\n");
    log(...args);
  };
}
