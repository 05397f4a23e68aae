// How fast a staged function's first calls are (before V8 has optimized the generated code):
// each workload runs in a fresh process (nothing compiled or warmed by another workload), on
// our executor, one thread, and prints the median ms per call of each block of 10 calls, and
// the total of the first 100 calls.
//
//   node --import tsx bench/cold-start.ts [CHECKOUT=.] [CALLS=200] [WORKLOAD...]
//
// CHECKOUT is the Stagecraft checkout whose bench/peers workloads run (a baseline worktree
// for a before/after). Workloads: l2hmc-1, l2hmc-32, rnn-train, beam-search (default: all four).
import { spawnSync } from "node:child_process";
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";

const WORKLOADS: Record<string, [file: string, fn: string, args: unknown[]]> = {
  "l2hmc-1": ["bench/peers/l2hmc.ts", "l2hmcWorkload", [1]],
  "l2hmc-32": ["bench/peers/l2hmc.ts", "l2hmcWorkload", [32]],
  "rnn-train": ["bench/peers/rnn.ts", "rnnWorkload", [64, 32, true, true]],
  "beam-search": ["bench/peers/beam-search.ts", "beamSearchWorkload", []],
};

const BLOCK = 10;

/** In the child: one workload's staged system, `calls` calls, one line per block. */
async function child(root: string, name: string, calls: number): Promise<void> {
  const [file, fn, args] = WORKLOADS[name]!;
  const mod = await import(pathToFileURL(resolve(root, file)).href);
  const w = await mod[fn](...args);
  const staged = w.systems.find((s: { name: string }) => s.name.startsWith("stagecraft staged"));
  await staged.enter?.();
  const block: number[] = [];
  const medians: number[] = [];
  let first100 = 0;
  for (let i = 0; i < calls; i++) {
    const t0 = performance.now();
    const r = staged.run();
    (r as { dataSync?: () => unknown })?.dataSync?.();
    const dt = performance.now() - t0;
    if (i < 100) first100 += dt;
    block.push(dt);
    if (block.length === BLOCK) {
      block.sort((a, b) => a - b);
      medians.push(block[BLOCK / 2]!);
      block.length = 0;
    }
  }
  console.log(JSON.stringify({ medians, first100 }));
}

const [mode, ...rest] = process.argv.slice(2);
if (mode === "--child") {
  const [root, name, calls] = rest as [string, string, string];
  await child(root, name, Number(calls));
} else {
  const root = resolve(mode ?? ".");
  const calls = Number(rest[0] ?? 200);
  const names = rest.length > 1 ? rest.slice(1) : Object.keys(WORKLOADS);
  console.log(`checkout ${root}; median ms per call of each block of ${BLOCK} calls; total ms of calls 1-100`);
  for (const name of names) {
    const r = spawnSync(process.execPath, ["--import", "tsx", new URL(import.meta.url).pathname, "--child", root, name, String(calls)], {
      env: { ...process.env, STAGECRAFT_THREADS: "1", STAGECRAFT_ENGINE: "stagecraft" },
      encoding: "utf8",
    });
    const line = r.stdout.trim().split("\n").pop() ?? "";
    if (r.status !== 0 || !line.startsWith("{")) {
      console.log(`${name}: failed\n${r.stderr}`);
      continue;
    }
    const { medians, first100 } = JSON.parse(line) as { medians: number[]; first100: number };
    console.log(`${name.padEnd(12)} first 100: ${first100.toFixed(0).padStart(6)} ms   blocks: ${medians.map((m) => m.toFixed(2)).join(" ")}`);
  }
}
