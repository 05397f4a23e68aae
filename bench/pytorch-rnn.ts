// The RNN training step (hidden 256, input 64, batch 32, sequence 64: forward, the gradients of
// W, U, b, an SGD update) in Stagecraft against PyTorch eager, one core each (issue 27's goal:
// "within 1.5x of PyTorch eager on one CPU core"). PyTorch runs in a Python child process
// (bench/pytorch/rnn_step.py, torch.set_num_threads(1)); our side runs with STAGECRAFT_THREADS=1
// (our kernels and the engine's sessions). Rounds interleave the systems (the order rotates each
// round), so a busy machine slows them alike; each system first warms up (auto past its choice).
// Before timing, PyTorch's loss and gradients at the initial weights are checked against ours.
//   STAGECRAFT_TORCH_PYTHON=/path/to/python node --import tsx bench/pytorch-rnn.ts [ROUNDS]
// The Python needs torch (2.x with its own MKL: Debian's python3-torch 1.13 with generic BLAS is
// not the PyTorch users run); without it the bench says why and exits 0.
process.env.STAGECRAFT_THREADS = "1";
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { median, randomValues } from "./common.js";

const [HIDDEN, INPUT, BATCH, SEQ, LR] = [256, 64, 32, 64, 0.01];
const rounds = Number(process.argv[2] ?? 7);
const callsPerRound = 10;
const python = process.env.STAGECRAFT_TORCH_PYTHON ?? "python3";

const probe = spawnSync(python, ["-c", "import torch; print(torch.__version__, torch.get_num_threads())"], { encoding: "utf8" });
if (probe.status !== 0) {
  console.log(`pytorch-rnn: skipped: ${python} cannot import torch (set STAGECRAFT_TORCH_PYTHON to a Python with PyTorch 2.x)`);
  process.exit(0);
}
const torchVersion = probe.stdout.trim().split(" ")[0]!;

const sc = await import("../src/api/index.js");
const { currentDefaultEngine } = await import("../src/api/internals.js");
const w = randomValues(INPUT * HIDDEN, 101, Math.sqrt(1 / INPUT)), u = randomValues(HIDDEN * HIDDEN, 102, Math.sqrt(1 / HIDDEN));
const b = randomValues(HIDDEN, 103, 0.1), x = randomValues(SEQ * BATCH * INPUT, 104);
const dir = mkdtempSync(join(tmpdir(), "stagecraft-torch-"));
const weightsFile = join(dir, "weights.bin");
const all = new Float32Array(w.length + u.length + b.length + x.length);
all.set(w, 0); all.set(u, w.length); all.set(b, w.length + u.length); all.set(x, w.length + u.length + b.length);
writeFileSync(weightsFile, new Uint8Array(all.buffer));

// ours: the staged step of bench/rnn-step-ab.ts (graph AD through a while loop, variables updated in place)
const W = sc.variable(sc.tensor(w, "float32", [INPUT, HIDDEN]), { name: "rnn_W" });
const U = sc.variable(sc.tensor(u, "float32", [HIDDEN, HIDDEN]), { name: "rnn_U" });
const B = sc.variable(sc.tensor(b, "float32", [HIDDEN]), { name: "rnn_b" });
const xs = sc.tensor(x, "float32", [SEQ, BATCH, INPUT]);
const length = sc.scalar(SEQ, "int32");
const cell = (x: any, h: any, w: any, u: any, b: any) => sc.tanh(sc.add(sc.add(sc.matmul(x, w), sc.matmul(h, u)), b));
const loss = (w: any, u: any, b: any) => {
  const [, h] = sc.whileLoop((i: any) => sc.less(i, length), (i: any, h: any) => [i.add(1), cell(sc.gather(xs, i, 0), h, w, u, b)], [sc.scalar(0, "int32"), sc.zeros([BATCH, HIDDEN])]);
  return sc.mean(h);
};
const stepOf = (engine?: string) => sc.stage(() => {
  const [value, grads] = sc.valueAndGrad(loss, { argnums: [0, 1, 2] })(W.read(), U.read(), B.read());
  [W, U, B].forEach((v, k) => v.assign(v.read().sub((grads as any[])[k].mul(LR))));
  return value;
}, { name: `rnn_train_step_${engine ?? "default"}`, ...(engine !== undefined ? { engine } : {}) } as any);

// the check: loss and gradients at the initial weights, ours (eager tape) against PyTorch's
const child = spawn(python, [fileURLToPath(new URL("./pytorch/rnn_step.py", import.meta.url)), weightsFile, String(SEQ), String(BATCH)], { stdio: ["pipe", "pipe", "inherit"] });
const lines = createInterface({ input: child.stdout! })[Symbol.asyncIterator]();
const ask = async (cmd: string): Promise<string> => {
  if (cmd !== "") child.stdin!.write(cmd + "\n");
  const r = await lines.next();
  if (r.done) throw new Error(`pytorch-rnn: the Python process ended (command ${cmd})`);
  return r.value;
};
if ((await ask("")) !== "ready") throw new Error("pytorch-rnn: the Python process did not start");
const gradsFile = join(dir, "grads.bin");
await ask(`grads ${gradsFile}`);
const theirs = readFileSync(gradsFile);
const theirLoss = theirs.readDoubleLE(0);
const [ourLoss, ourGrads] = sc.valueAndGrad(loss, { argnums: [0, 1, 2] })(W.read(), U.read(), B.read()) as [any, any[]];
let offset = 8, worst = Math.abs(theirLoss - ourLoss.item());
for (const g of ourGrads) {
  const mine = g.dataSync() as Float32Array;
  const other = new Float32Array(theirs.buffer.slice(theirs.byteOffset + offset, theirs.byteOffset + offset + mine.length * 4));
  offset += mine.length * 4;
  for (let i = 0; i < mine.length; i++) worst = Math.max(worst, Math.abs(mine[i]! - other[i]!));
}
if (!(worst < 1e-5)) throw new Error(`pytorch-rnn: PyTorch's loss and gradients differ from ours by ${worst}`);

const systems: { name: string; run: (n: number) => Promise<number[]> }[] = [];
const local = (name: string, f: () => unknown) => systems.push({
  name,
  run: async (n) => {
    const t: number[] = [];
    for (let i = 0; i < n; i++) { const t0 = performance.now(); (f() as any).dataSync(); t.push(performance.now() - t0); }
    return t;
  },
});
const defaultStep = stepOf();
// (the staged step's first value is the loss at the initial weights: the graph's answer checked too)
const stagedLoss = (defaultStep() as any).item() as number;
if (!(Math.abs(stagedLoss - ourLoss.item()) < 1e-6)) throw new Error(`pytorch-rnn: the staged step's loss ${stagedLoss} differs from the tape's ${ourLoss.item()}`);
local(`stagecraft staged (default engine: ${currentDefaultEngine()})`, defaultStep);
local("stagecraft staged, our executor", stepOf("stagecraft"));
systems.push({ name: `PyTorch ${torchVersion} eager`, run: async (n) => JSON.parse(await ask(`run ${n}`)) as number[] });

// warm-up: auto runs ours, then measures and chooses (1 s or up to 1,000 calls: auto.ts WarmUp)
for (const s of systems) await s.run(s.name.includes("default") ? 150 : 20);
const perRound = systems.map(() => [] as number[]);
for (let r = 0; r < rounds; r++) {
  for (let j = 0; j < systems.length; j++) {
    const k = (j + r) % systems.length;
    perRound[k]!.push(median(await systems[k]!.run(callsPerRound)));
  }
}
child.stdin!.end();
const torchMs = median(perRound[systems.length - 1]!);
console.log(`RNN training step h${HIDDEN} T${SEQ} B${BATCH}, one thread each; median of ${rounds} interleaved rounds of ${callsPerRound} steps (ms per step)`);
console.log(`(PyTorch's loss and gradients agree with ours to ${worst.toExponential(1)})`);
for (let k = 0; k < systems.length; k++) {
  const m = median(perRound[k]!);
  const lo = Math.min(...perRound[k]!), hi = Math.max(...perRound[k]!);
  console.log(`${systems[k]!.name.padEnd(40)} ${m.toFixed(2).padStart(8)} ms  [${lo.toFixed(2)}..${hi.toFixed(2)}]  ${(m / torchMs).toFixed(2)}x PyTorch's time`);
}
