/**
 * The `stagecraft` command line (bin/stagecraft.mjs):
 *   stagecraft onnx-conformance <dir> [--filter REGEX] [--verbose] [--json FILE]
 * runs ONNX backend node test cases and prints passed/failed/skipped, per op family, with reasons,
 * and apart from them the cases of random draws checked without values (src/onnx/conformance-random.ts);
 *   stagecraft worker [--listen HOST:PORT] [--token T] [--tls-cert F --tls-key F] [--max-message-bytes N] ...
 * starts a worker server (src/remote/worker.ts) and runs until SIGINT or SIGTERM.
 */
import { writeFileSync, existsSync } from "node:fs";
import "./index.js";
import { runConformance, formatReport } from "../onnx/conformance.js";
import { workerMain } from "./worker-cli.js";

const USAGE = `usage: stagecraft onnx-conformance <dir> [--filter REGEX] [--verbose] [--json FILE]
       stagecraft worker [--listen HOST:PORT] [--token T] [--tls-cert F --tls-key F] [--max-message-bytes N] (stagecraft worker --help)

  <dir>           a folder of ONNX backend node test cases (each with model.onnx and test_data_set_N/)
  --filter REGEX  only the cases whose folder name matches
  --verbose       list every case that failed or was skipped, with its reason
  --json FILE     also write every case's result as JSON`;

/** Runs the command line; returns the exit code (a worker's when it stops). */
export function main(argv: string[]): number | Promise<number> {
  const [command, ...rest] = argv;
  if (command === "worker") return workerMain(rest);
  if (command !== "onnx-conformance") {
    console.error(command === undefined || command === "--help" ? USAGE : `unknown command ${JSON.stringify(command)}\n\n${USAGE}`);
    return command === "--help" ? 0 : 2;
  }
  let dir: string | undefined;
  let filter: RegExp | undefined;
  let verbose = false;
  let json: string | undefined;
  for (let i = 0; i < rest.length; i++) {
    const a = rest[i]!;
    if (a === "--filter") filter = new RegExp(rest[++i] ?? "");
    else if (a === "--verbose") verbose = true;
    else if (a === "--json") json = rest[++i];
    else if (a === "--help") {
      console.log(USAGE);
      return 0;
    } else if (dir === undefined) dir = a;
    else {
      console.error(`unexpected argument ${JSON.stringify(a)}\n\n${USAGE}`);
      return 2;
    }
  }
  if (dir === undefined || !existsSync(dir)) {
    console.error(dir === undefined ? USAGE : `no such folder: ${dir}`);
    return 2;
  }
  const report = runConformance(dir, {
    ...(filter ? { filter } : {}),
    onCase: (_r, i, total) => {
      if ((i + 1) % 200 === 0 || i + 1 === total) process.stderr.write(`  ${i + 1}/${total} cases\n`);
    },
  });
  console.log(formatReport(report, verbose));
  if (json) writeFileSync(json, JSON.stringify(report.results, null, 1));
  return 0;
}
