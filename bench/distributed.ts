// Data-parallel training on MPI, measured under mpirun (skipped, saying why, without mpirun):
//
//  (a) all-reduce bandwidth: sc.distributed.allReduce (the registry op, eager: tensor in, new
//      tensor out) and the MPI provider called directly (preallocated buffers), against a plain C
//      program calling MPI_Allreduce (bench/mpi/allreduce.c, compiled with mpicc into a temp dir)
//      on the same float32 buffers of 1 KiB .. 64 MiB with the same iteration counts; per size
//      the slowest rank's median call (each call timed alone), as GB/s (bytes / time: algorithm bandwidth; for a ring
//      on N ranks, bus bandwidth is that times 2(N-1)/N) and ours / C.
//  (b) training throughput of the demo convnet (examples/mnist-convnet.ts's model, Adam, batch
//      32 per rank, staged steps through sc.nn.fit) on 1 rank and on 2 ranks, each rank
//      single-threaded (STAGECRAFT_THREADS=1): examples/s and scaling efficiency
//      throughput(2) / (2 throughput(1)); and the time of one all-reduce of the model's gradient.
//
// The C and our jobs, and the 1- and 2-rank jobs, run alternately, ROUNDS times; figures are
// medians over the rounds (ratios: medians of the per-round ratios).
//
//   node --import tsx bench/distributed.ts [ROUNDS=3] [--only allreduce|train]
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { median, randomValues } from "./common.js";

const root = fileURLToPath(new URL("..", import.meta.url));
const SIZES = [1, 4, 16, 64, 256, 1024, 4096, 16384, 65536].map((k) => k * 1024);
/** Calls per measurement: about 64 MiB moved, at least 5 and at most 2000 calls. */
const itersFor = (bytes: number) => Math.max(5, Math.min(2000, Math.floor(2 ** 26 / bytes)));
const TRAIN_BATCH = 32;
const TRAIN_STEPS = 30;

const MPIRUN = ["--allow-run-as-root", "--oversubscribe", "--bind-to", "none"];

function mpirun(np: number, command: string[]): string {
  const r = spawnSync("mpirun", [...MPIRUN, "-np", String(np), ...command], { cwd: root, encoding: "utf8", env: { ...process.env, STAGECRAFT_THREADS: "1" }, maxBuffer: 1 << 24 });
  if (r.status !== 0) throw new Error(`mpirun -np ${np} ${command.join(" ")} failed (${r.status}):\n${r.stdout}\n${r.stderr}`);
  return r.stdout;
}

const nodeWorker = (...args: string[]) => ["node", "--import", "tsx", "bench/distributed.ts", "--worker", ...args];

/** Lines "key value key value ..." as records. */
function records(out: string, first: string): Record<string, number>[] {
  return out
    .split("\n")
    .filter((l) => l.startsWith(first + " "))
    .map((l) => {
      const f = l.trim().split(/\s+/);
      const r: Record<string, number> = {};
      for (let i = 0; i + 1 < f.length; i += 2) r[f[i]!] = Number(f[i + 1]);
      return r;
    });
}

// ---- workers (one per rank, under mpirun) -----------------------------------------------------

async function workerAllReduce(sizes: number[]): Promise<void> {
  const sc = await import("../src/api/index.js");
  const { collectiveProvider } = await import("../src/ops/collective.js");
  const { rank } = sc.distributed.init();
  const p = collectiveProvider()!;
  const slowest = (t: number) => sc.distributed.allReduce(sc.tensor([t], "float64"), "max").item() as number;
  const barrier = () => sc.distributed.allReduce(sc.tensor([0], "float32"), "sum").dataSync();
  for (const bytes of sizes) {
    const n = bytes / 4;
    const iters = itersFor(bytes);
    const data = randomValues(n, 29 + rank);
    const x = sc.tensor(data, "float32", [n]);
    const recv = new Float32Array(n);
    // each call timed alone, the median kept (robust to the preemptions of a shared machine)
    const medianCall = (call: () => void) => {
      for (let w = 0; w < 2; w++) call();
      barrier();
      const times = new Float64Array(iters);
      for (let k = 0; k < iters; k++) {
        const t0 = performance.now();
        call();
        times[k] = (performance.now() - t0) / 1000;
      }
      return slowest(median([...times]));
    };
    // our op: a tensor in, a new tensor out
    const op = medianCall(() => sc.distributed.allReduce(x, "sum").dataSync());
    // the provider alone (koffi -> MPI_Allreduce), buffers preallocated as in the C program
    const raw = medianCall(() => p.allReduce(data, recv, "float32", "sum"));
    if (rank === 0) console.log(`bytes ${bytes} iters ${iters} op ${op} provider ${raw}`);
  }
  sc.distributed.finalize();
}

async function workerTrain(): Promise<void> {
  const sc = await import("../src/api/index.js");
  const { nn } = sc;
  const { rank, size } = sc.distributed.init();
  sc.random.setSeed(0);
  const model = new nn.Sequential(
    new nn.Conv2d(12, 5, { seed: 1 }), new nn.ReLU(), new nn.MaxPool2d(2),
    new nn.Conv2d(24, 5, { seed: 2 }), new nn.ReLU(), new nn.MaxPool2d(2),
    new nn.Flatten(), new nn.Linear(64, { seed: 3 }), new nn.ReLU(), new nn.Linear(10, { seed: 4 }),
  );
  model.call(sc.zeros([1, 1, 28, 28]));
  // (seeded random digits: the step's cost does not depend on the pixels)
  const batches = Array.from({ length: TRAIN_STEPS }, (_, i) => [
    sc.tensor(randomValues(TRAIN_BATCH * 784, 1000 * rank + i, 0.5).map((v) => v + 0.5), "float32", [TRAIN_BATCH, 1, 28, 28]),
    sc.tensor(Array.from({ length: TRAIN_BATCH }, (_, j) => (i * 7 + j * 3 + rank) % 10), "int32", [TRAIN_BATCH]),
  ]);
  const optimizer = sc.distributed.DistributedOptimizer(new sc.optim.Adam({ learningRate: 0.001 }));
  // epoch 1 traces the staged step; epoch 2 is measured
  const h = nn.fit(model, { data: batches, optimizer, loss: nn.softmaxCrossEntropy, epochs: 2, progress: "off" });
  const stepsPerSecond = sc.distributed.allReduce(sc.tensor([h.stepsPerSecond[1]!], "float64"), "mean").item() as number;
  // one all-reduce of the model's gradient (every parameter, float32, one fused bucket)
  const params = model.parameterCount();
  const g = sc.tensor(randomValues(params, 7), "float32", [params]);
  for (let w = 0; w < 3; w++) sc.distributed.allReduce(g, "mean").dataSync();
  const t0 = performance.now();
  const reps = 50;
  for (let k = 0; k < reps; k++) sc.distributed.allReduce(g, "mean").dataSync();
  const allReduceSeconds = sc.distributed.allReduce(sc.tensor([(performance.now() - t0) / 1000 / reps], "float64"), "max").item() as number;
  if (rank === 0) console.log(`ranks ${size} steps_per_second ${stepsPerSecond} params ${params} allreduce_seconds ${allReduceSeconds}`);
  sc.distributed.finalize();
}

// ---- the driver -------------------------------------------------------------------------------

function fmtBytes(b: number): string {
  return b >= 1 << 20 ? `${b / (1 << 20)} MiB` : `${b / 1024} KiB`;
}

function benchAllReduce(rounds: number): void {
  if (spawnSync("mpicc", ["--version"]).status !== 0) {
    console.log("all-reduce bandwidth: skipped: mpicc is not installed (apt-get install libopenmpi-dev)");
    return;
  }
  const dir = mkdtempSync(join(tmpdir(), "sc-bench-mpi-"));
  try {
    const exe = join(dir, "allreduce");
    const cc = spawnSync("mpicc", ["-O2", "-o", exe, join(root, "bench/mpi/allreduce.c")], { encoding: "utf8" });
    if (cc.status !== 0) throw new Error(`mpicc failed:\n${cc.stderr}`);
    const args = SIZES.map((b) => `${b}:${itersFor(b)}`);
    const per = new Map<number, { c: number[]; op: number[]; raw: number[]; opRatio: number[]; rawRatio: number[] }>();
    for (const b of SIZES) per.set(b, { c: [], op: [], raw: [], opRatio: [], rawRatio: [] });
    for (let r = 0; r < rounds; r++) {
      const c = records(mpirun(2, [exe, ...args]), "bytes");
      const ours = records(mpirun(2, nodeWorker("allreduce", ...SIZES.map(String))), "bytes");
      for (const b of SIZES) {
        const cs = c.find((x) => x.bytes === b)!.seconds_per_call!;
        const o = ours.find((x) => x.bytes === b)!;
        const e = per.get(b)!;
        e.c.push(cs);
        e.op.push(o.op!);
        e.raw.push(o.provider!);
        e.opRatio.push(cs / o.op!);
        e.rawRatio.push(cs / o.provider!);
      }
      process.stderr.write(`all-reduce round ${r + 1}/${rounds} done\n`);
    }
    console.log(`\nall-reduce, 2 ranks, float32 sum (median of ${rounds} rounds; GB/s = bytes / time per call, 1 GB = 1e9 B)`);
    console.log("size        calls   C MPI_Allreduce        our op        provider    op/C   provider/C");
    for (const b of SIZES) {
      const e = per.get(b)!;
      const gbs = (s: number) => `${(b / s / 1e9).toFixed(3).padStart(7)} GB/s`;
      const us = (s: number) => `${(s * 1e6).toFixed(1)} us`;
      console.log(
        `${fmtBytes(b).padEnd(10)}  ${String(itersFor(b)).padStart(5)}   ${gbs(median(e.c))} ${us(median(e.c)).padStart(10)}   ${gbs(median(e.op))}   ${gbs(median(e.raw))}   ${(100 * median(e.opRatio)).toFixed(0).padStart(4)}%   ${(100 * median(e.rawRatio)).toFixed(0).padStart(5)}%`,
      );
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function benchTrain(rounds: number): void {
  const one: Record<string, number>[] = [];
  const two: Record<string, number>[] = [];
  for (let r = 0; r < rounds; r++) {
    one.push(records(mpirun(1, nodeWorker("train")), "ranks")[0]!);
    two.push(records(mpirun(2, nodeWorker("train")), "ranks")[0]!);
    process.stderr.write(`training round ${r + 1}/${rounds} done\n`);
  }
  const thr = (x: Record<string, number>) => x.steps_per_second! * TRAIN_BATCH * x.ranks!;
  const eff = one.map((o, i) => thr(two[i]!) / (2 * thr(o)));
  console.log(`\ndemo convnet training, Adam, batch ${TRAIN_BATCH} per rank, STAGECRAFT_THREADS=1 per rank (median of ${rounds} rounds; epoch 2 of ${TRAIN_STEPS} staged steps)`);
  console.log("ranks   steps/s   examples/s   step (ms)   gradient all-reduce (ms)");
  for (const [n, xs] of [[1, one], [2, two]] as const) {
    const sps = median(xs.map((x) => x.steps_per_second!));
    console.log(`${String(n).padStart(5)}   ${sps.toFixed(2).padStart(7)}   ${median(xs.map(thr)).toFixed(1).padStart(10)}   ${(1000 / sps).toFixed(1).padStart(9)}   ${(1000 * median(xs.map((x) => x.allreduce_seconds!))).toFixed(3).padStart(10)}`);
  }
  console.log(`parameters ${one[0]!.params} (${(4 * one[0]!.params!) / 1024} KiB of float32 gradient); scaling efficiency 2 ranks: ${(100 * median(eff)).toFixed(0)}% (per round: ${eff.map((e) => `${(100 * e).toFixed(0)}%`).join(", ")})`);
}

const argv = process.argv.slice(2);
const w = argv.indexOf("--worker");
if (w >= 0) {
  const kind = argv[w + 1];
  if (kind === "allreduce") await workerAllReduce(argv.slice(w + 2).map(Number));
  else if (kind === "train") await workerTrain();
  else throw new Error(`unknown worker ${kind}`);
} else if (spawnSync("mpirun", ["--version"]).status !== 0) {
  console.log("bench/distributed.ts: skipped: mpirun is not installed (apt-get install openmpi-bin libopenmpi-dev)");
} else {
  const o = argv.indexOf("--only");
  const only = o >= 0 ? argv[o + 1] : undefined;
  const rounds = Number(argv.find((a, i) => /^\d+$/.test(a) && argv[i - 1] !== "--only") ?? 3);
  console.log(`machine: ${cpus()[0]?.model ?? "?"}, ${cpus().length} cores; node ${process.version}; ${spawnSync("mpirun", ["--version"], { encoding: "utf8" }).stdout.split("\n")[0]!.replace("mpirun ", "")}`);
  if (only !== "train") benchAllReduce(rounds);
  if (only !== "allreduce") benchTrain(rounds);
}
