
import { measure, QUICK } from "/work/wt/bench2/bench/peers/harness.ts";
import { consoleTables } from "/work/wt/bench2/bench/peers/report.ts";
const name = process.argv[2]!;
const mod = await import(`/work/wt/bench2/bench/peers/${name}.ts`);
const make = Object.values(mod).find((f) => typeof f === "function" && (f as any).name.endsWith("Workload")) as any;
const t = performance.now();
const w = await make(...process.argv.slice(3).map(Number));
console.log("setup", ((performance.now() - t) / 1000).toFixed(1), "s");
const r = await measure(w, QUICK);
console.log(consoleTables([r]));
console.log("total", ((performance.now() - t) / 1000).toFixed(1), "s");
