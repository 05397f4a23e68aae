/**
 * The thread policy (backends/cpu/thread-policy.ts) against one thread, with the other cores
 * free and with a competing process spinning on one of them: Stagecraft's default settings vs
 * the same code capped at one thread (setThreadLimit(1)), in alternating rounds, so the ratio
 * of each round compares the two under the same load. Four jobs: the staged RNN training step
 * (hidden 256, sequence 64, batch 32: products on the native kernels' threads and row-shared
 * products of the compiled executor), eager 256^3 and 1024^3 products, and a small-op eager
 * loop (products too small to split: what the policy costs where threads cannot help).
 * Goal (issue 17): the default never slower than one thread when a core is busy, faster when
 * the cores are free. Run alone: `node --import tsx bench/peers/threads.ts [--full]` (the
 * tables on the console; `npm run bench` runs them with the other workloads).
 */
import { spawn, type ChildProcess } from "node:child_process";
import * as sc from "../../src/api/index.js";
import { poolPolicy, poolStats, setThreadLimit } from "../../src/backends/cpu/worker-pool.js";
import { nativePolicy, nativeStats } from "../../src/backends/cpu/native.js";
import { isMainModule, randomValues } from "../common.js";
import { FULL, QUICK, measure, paired, type Workload } from "./harness.js";
import { consoleTables } from "./report.js";
import { scDefaults } from "./systems.js";

const ONE = "stagecraft, 1 thread";
export const THREAD_JOBS = ["rnn-train", "matmul-256", "matmul-1024", "small-ops"] as const;
export type ThreadJob = (typeof THREAD_JOBS)[number];

/**
 * A process that keeps one core busy until killed; it also exits by itself once its parent is
 * gone (checked every ~16M iterations, a few ms), so a benchmark that dies leaves no spinner.
 */
function competitor(): ChildProcess {
  const loop = `const p = ${process.pid}; for (let i = 0; ; i++) if ((i & 0xffffff) === 0 && process.ppid !== p) process.exit(0);`;
  const p = spawn(process.execPath, ["-e", loop], { stdio: "ignore" });
  p.unref();
  return p;
}

function job(name: ThreadJob): { title: string; call: string; run: () => unknown } {
  if (name === "rnn-train") {
    const H = 256, IN = 64, seq = 64, batch = 32;
    const W = sc.tensor(randomValues(IN * H, 1, 1 / 8), "float32", [IN, H]), U = sc.tensor(randomValues(H * H, 2, 1 / 16), "float32", [H, H]);
    const B = sc.tensor(randomValues(H, 3, 0.1), "float32", [H]), X = sc.tensor(randomValues(seq * batch * IN, 4), "float32", [seq, batch, IN]);
    const loss = (X: sc.Tensor, W: sc.Tensor, U: sc.Tensor, B: sc.Tensor) => {
      let h = sc.zeros([batch, H]);
      for (const x of sc.unstack(X, 0)) h = sc.tanh(sc.add(sc.add(sc.matmul(x, W), sc.matmul(h, U)), B));
      return sc.mean(h);
    };
    const grads = sc.grad((W: sc.Tensor, U: sc.Tensor, B: sc.Tensor) => loss(X, W, U, B), { argnums: [0, 1, 2] }) as unknown as (...a: sc.Tensor[]) => sc.Tensor[];
    const step = sc.stage((W: sc.Tensor, U: sc.Tensor, B: sc.Tensor) => grads(W, U, B), { name: "rnn_train_threads", autograph: false });
    return { title: "staged RNN training step (hidden 256, sequence 64, batch 32)", call: "one training step (gradients of W, U, b)", run: () => step(W, U, B) };
  }
  if (name === "small-ops") {
    // an eager 8-layer tanh MLP on a batch of 16: 16x64x64 products and elementwise ops
    const Ws = Array.from({ length: 8 }, (_, i) => sc.tensor(randomValues(64 * 64, 10 + i, 1 / 8), "float32", [64, 64]));
    const x = sc.tensor(randomValues(16 * 64, 9), "float32", [16, 64]);
    return {
      title: "eager small ops (8 layers of tanh(h W + h) on 16 x 64)",
      call: "one forward pass (24 small ops)",
      run: () => { let h = x; for (const W of Ws) h = sc.tanh(sc.add(sc.matmul(h, W), h)); return h.dataSync(); },
    };
  }
  const n = name === "matmul-256" ? 256 : 1024;
  const A = sc.tensor(randomValues(n * n, 4), "float32", [n, n]), B = sc.tensor(randomValues(n * n, 5), "float32", [n, n]);
  return { title: `eager matmul ${n}^3`, call: "one product", run: () => sc.matmul(A, B) };
}

/** How many of a system's measured calls' native calls and worker-pool jobs ran threaded. */
interface Tally { calls: number; enters: number; native: number; nativeThreaded: number; poolThreaded: number }
const tally = (): Tally => ({ calls: 0, enters: 0, native: 0, nativeThreaded: 0, poolThreaded: 0 });

/**
 * Counts of the systems' threaded jobs, taken once per round, not per call: `enter` (the
 * harness calls it once before a system's warm-up and once before each of its rounds) adds
 * what ran since the previous one to the system entered then, and `settle` adds the last
 * round's. A system's counts start with its first measured round (its second enter).
 */
function roundCounter() {
  let current: Tally | null = null;
  let n0 = nativeStats(), p0 = poolStats();
  const settle = () => {
    const n1 = nativeStats(), p1 = poolStats();
    if (current !== null) {
      current.native += n1.calls - n0.calls;
      current.nativeThreaded += n1.threaded - n0.threaded;
      current.poolThreaded += p1.parallelJobs - p0.parallelJobs + p1.splitCalls - p0.splitCalls;
    }
    n0 = n1;
    p0 = p1;
  };
  /** The system `name`, its counts kept in `into`. */
  const counted = (name: string, enter: () => void, run: () => unknown, into: Tally) => ({
    name,
    run: () => { into.calls++; return run(); },
    enter: () => {
      settle();
      if (++into.enters === 2) Object.assign(into, { ...tally(), enters: 2 });
      current = into;
      enter();
    },
  });
  return { counted, settle };
}

export async function threadsWorkload(name: ThreadJob, busy: boolean): Promise<Workload> {
  const { title, call, run } = job(name);
  const spinner = busy ? competitor() : null;
  // (the harness's note gives each system's process CPU time per call, what the job takes from
  // the machine: a helper thread that spins, or waits on a busy core, shows there even where the
  // wall time hides it)
  const dflt = tally(), counter = roundCounter();
  // (counts, not timings: which of the default's jobs ran on several threads)
  const threaded = (x: Tally) => `${x.nativeThreaded} of ${x.native} native calls and ${x.poolThreaded} worker-pool jobs threaded in ${x.calls} calls`;
  const goal = "Goal: the default never slower than one thread when a core is busy; faster when the cores are free. " +
    "The ratio column is the default's speed over one thread's, round by round (the machine's other load hits both alike)." +
    (name === "small-ops" ? " No job here is large enough to split: both systems run the same code, so this ratio's spread is the run's noise floor." : "");
  return {
    name: `Threads, ${title}, ${busy ? "one core kept busy by a competing process" : "no competing process of ours"}`,
    call,
    reference: ONE,
    // (read when the measurement ends: the counts of the measured rounds)
    get note() {
      counter.settle();
      return `${goal} Default: ${threaded(dflt)}.`;
    },
    systems: [
      counter.counted("stagecraft, default thread policy", scDefaults, run, dflt),
      counter.counted(ONE, () => { scDefaults(); setThreadLimit(1); }, run, tally()),
    ],
    // many short rounds: each round's ratio pairs two samples taken within ~0.1 s, so the other
    // load of a shared machine, which changes over seconds, disturbs the median of ratios less
    rounds: paired(3, 40),
    // the policy's timings of a core kept busy on purpose would hold the next workloads to one
    // thread until its probes noticed the core free again (tens of jobs per class)
    done: () => { spinner?.kill(); poolPolicy.forget(); nativePolicy.forget(); scDefaults(); },
  };
}

if (isMainModule(import.meta.url)) {
  const opts = process.argv.includes("--full") ? FULL : QUICK;
  for (const name of THREAD_JOBS) {
    for (const busy of [false, true]) {
      const w = await threadsWorkload(name, busy);
      try {
        console.log(consoleTables([await measure(w, opts)]));
      } finally {
        w.done?.();
      }
    }
  }
  process.exit(0);
}
