/**
 * One workload of the peer suite, standalone, its table printed (not written to RESULTS.md):
 *   node --import tsx bench/peers/one.ts beam-search          (the file's name in bench/peers/)
 *   node --import tsx bench/peers/one.ts rnn 64 32 1           (its workload function's arguments)
 * Without arguments a workload gets `true` (its --quick form where it has one). `--full` times
 * with the full run's rounds.
 */
import { FULL, QUICK, loadWorkload, measure } from "./harness.js";
import { consoleTables } from "./report.js";

const args = process.argv.slice(2).filter((a) => a !== "--full");
const name = args[0];
if (name === undefined) throw new Error("usage: node --import tsx bench/peers/one.ts <workload file> [arguments]");
const make = await loadWorkload(name);
const t = performance.now();
const w = await make(...(args.length > 1 ? args.slice(1).map(Number) : [true]));
const r = await measure(w, process.argv.includes("--full") ? FULL : QUICK);
w.done?.();
console.log(consoleTables([r]));
console.log(`${((performance.now() - t) / 1000).toFixed(1)} s`);
