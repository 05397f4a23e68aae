/**
 * The thread policy (backends/cpu/thread-policy.ts) against one thread, with the other cores
 * free and with a competing process spinning on one of them: Stagecraft's default settings
 * vs the same code capped at one thread (setThreadLimit(1)), round by round. Two jobs: the
 * staged RNN forward pass (hidden 256, sequence 64, batch 32: products the compiled executor
 * shares with a worker thread) and an eager 1024^3 product (native kernels, their own threads).
 * Goal: the default never slower than one thread when a core is busy, faster when cores are free.
 */
import { spawn, type ChildProcess } from "node:child_process";
import * as sc from "../../src/api/index.js";
import { setThreadLimit } from "../../src/backends/cpu/worker-pool.js";
import { randomValues } from "../common.js";
import type { Workload } from "./harness.js";
import { scDefaults } from "./systems.js";

const ONE = "stagecraft, 1 thread";

/** A process that keeps one core busy until killed. */
function competitor(): ChildProcess {
  const p = spawn(process.execPath, ["-e", "for (;;) {}"], { stdio: "ignore" });
  p.unref();
  return p;
}

export async function threadsWorkload(job: "rnn" | "matmul", busy: boolean): Promise<Workload> {
  let run: () => unknown;
  if (job === "rnn") {
    const W = sc.tensor(randomValues(64 * 256, 1), "float32", [64, 256]), U = sc.tensor(randomValues(256 * 256, 2, 1 / 16), "float32", [256, 256]);
    const X = sc.tensor(randomValues(64 * 32 * 64, 3), "float32", [64, 32, 64]);
    const f = sc.stage((x: sc.Tensor) => {
      let h = sc.zeros([32, 256]);
      for (const xt of sc.unstack(x, 0)) h = sc.tanh(sc.add(sc.matmul(xt, W), sc.matmul(h, U)));
      return h;
    }, { autograph: false });
    run = () => f(X);
  } else {
    const A = sc.tensor(randomValues(1024 * 1024, 4), "float32", [1024, 1024]), B = sc.tensor(randomValues(1024 * 1024, 5), "float32", [1024, 1024]);
    run = () => sc.matmul(A, B);
  }
  const spinner = busy ? competitor() : null;
  return {
    name: `Threads, ${job === "rnn" ? "staged RNN forward (hidden 256, sequence 64, batch 32)" : "eager matmul 1024^3"}, ${busy ? "one core kept busy by a competing process" : "no competing process of ours"}`,
    call: job === "rnn" ? "one forward pass" : "one product",
    reference: ONE,
    note: "Goal: the default never slower than one thread when a core is busy; faster when the cores are free.",
    systems: [
      { name: "stagecraft, default thread policy", enter: scDefaults, run },
      { name: ONE, enter: () => { scDefaults(); setThreadLimit(1); }, run },
    ],
    done: () => { spinner?.kill(); scDefaults(); },
  };
}
