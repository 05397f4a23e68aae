// Data-parallel training on MPI, measured under mpirun (skipped, saying why, without mpirun):
//
//  (a) all-reduce bandwidth: sc.distributed.allReduce (the registry op, eager: tensor in, new
//      tensor out) and the MPI provider called directly (preallocated buffers), against C calling
//      MPI_Allreduce (bench/mpi/allreduce.c, compiled with mpicc into a temp dir) on the same
//      float32 buffers of 1 KiB .. 64 MiB with the same numbers of calls; per size the slowest
//      rank's median call (each call timed alone), as GB/s (bytes / time: algorithm bandwidth;
//      for a ring on N ranks, bus bandwidth is that times 2(N-1)/N) and C / ours. The C loop runs
//      twice: as its own program (a reference), and as a library our ranks call between their own
//      measurements, REPS times per size, so that C and ours are timed seconds apart: the ratios.
//      "fresh" is the provider receiving into a new Float32Array per call, as the op's kernel
//      does: the gap between it and "provider" is what allocating the result costs. "in-place op"
//      is sc.distributed.allReduceInPlace on a sc.distributed.hostBuffer (MPI_IN_PLACE, no
//      receive buffer), against C with separate buffers (the baseline) and C with MPI_IN_PLACE.
//      "bucket in place/op": DistributedOptimizer's fused bucket of two gradients (concat + all-
//      reduce), reduced over its own storage (eager allReduceGradients) vs through the op.
//  (b) training throughput of the demo convnet (examples/mnist-convnet.ts's model, Adam, batch
//      32 per rank, staged steps through sc.nn.fit) on 1 rank and on 2 ranks, each rank
//      single-threaded (STAGECRAFT_THREADS=1): examples/s and scaling efficiency
//      throughput(2) / (2 throughput(1)); the time per step spent in MPI_Allreduce during training
//      (the gradient's, and waiting for the other rank), and one all-reduce of the gradient alone.
//      The 1- and 2-rank jobs run alternately, REPS times; figures are medians over them.
//
//   node --import tsx bench/distributed.ts [REPS=3] [--only allreduce|train]
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { median, randomValues } from "./common.js";

const root = fileURLToPath(new URL("..", import.meta.url));
const SIZES = (process.env.SC_BENCH_SIZES_KIB ?? "1,4,16,64,256,1024,4096,16384,65536").split(",").map(Number).map((k) => k * 1024);
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

async function workerAllReduce(lib: string, sizes: number[], reps: number): Promise<void> {
  const sc = await import("../src/api/index.js");
  const { collectiveProvider } = await import("../src/ops/collective.js");
  const { allReduceFresh } = await import("../src/distributed/in-place.js");
  const { createRequire } = await import("node:module");
  const { rank } = sc.distributed.init();
  const p = collectiveProvider()!;
  // the C timing loop (bench/mpi/allreduce.c as a library), on the MPI this process joined
  const koffi = createRequire(import.meta.url)("koffi");
  const cLib = koffi.load(lib);
  const cTimes = cLib.func("void sc_allreduce_times(void *send, void *recv, int count, int calls, void *out)");
  const cInPlaceTimes = cLib.func("void sc_allreduce_in_place_times(void *data, int count, int calls, void *out)");
  const slowest = (t: number) => sc.distributed.allReduce(sc.tensor([t], "float64"), "max").item() as number;
  const barrier = () => sc.distributed.allReduce(sc.tensor([0], "float32"), "sum").dataSync();
  for (const bytes of sizes) {
    const n = bytes / 4;
    const calls = itersFor(bytes);
    const data = randomValues(n, 29 + rank);
    const x = sc.tensor(data, "float32", [n]);
    const recv = new Float32Array(n);
    // (the in-place rows reduce one buffer over and over: its sums double each call and reach
    // Infinity, which adds at the same speed; no reset inside the timed calls)
    const own = sc.distributed.hostBuffer("float32", n);
    own.set(data);
    // each call timed alone, the median kept (robust to the preemptions of a shared machine)
    const medianCall = (call: () => void) => {
      for (let w = 0; w < 2; w++) call();
      barrier();
      const times = new Float64Array(calls);
      for (let k = 0; k < calls; k++) {
        const t0 = performance.now();
        call();
        times[k] = (performance.now() - t0) / 1000;
      }
      return [slowest(median([...times])), slowest(Math.min(...times))] as const;
    };
    for (let r = 0; r < reps; r++) {
      const out = new Float64Array(2);
      cTimes(data, recv, n, calls, out);
      const c = [slowest(out[0]!), slowest(out[1]!)];
      const outIn = new Float64Array(2);
      cInPlaceTimes(own, n, calls, outIn);
      const cIn = [slowest(outIn[0]!), slowest(outIn[1]!)];
      // our op: a tensor in, a new tensor out
      const op = medianCall(() => sc.distributed.allReduce(x, "sum").dataSync());
      // the provider alone (koffi -> MPI_Allreduce), buffers preallocated as in the C program
      const raw = medianCall(() => p.allReduce(data, recv, "float32", "sum"));
      // the provider receiving into a new buffer per call, as the op does (what allocation costs)
      const fresh = medianCall(() => p.allReduce(data, new Float32Array(n), "float32", "sum"));
      // the in-place op on a host array this program owns (MPI_IN_PLACE: no receive buffer)
      const inPlace = medianCall(() => sc.distributed.allReduceInPlace(own, "sum"));
      // DistributedOptimizer's fused bucket of two gradients (concat, then the all-reduce): over
      // the bucket's own storage (what allReduceGradients does eagerly) and through the op
      const halves = [sc.tensor(data.subarray(0, n / 2), "float32", [n / 2]), sc.tensor(data.subarray(n / 2), "float32", [n / 2])];
      const bucket = medianCall(() => allReduceFresh(sc.concat(halves, 0), "sum", halves).dataSync());
      const bucketOp = medianCall(() => sc.distributed.allReduce(sc.concat(halves, 0), "sum").dataSync());
      if (rank === 0) console.log(`bytes ${bytes} calls ${calls} c ${c[0]} op ${op[0]} provider ${raw[0]} fresh ${fresh[0]} inplace ${inPlace[0]} cin ${cIn[0]} bucket ${bucket[0]} bucketop ${bucketOp[0]} c_best ${c[1]} op_best ${op[1]} provider_best ${raw[1]} fresh_best ${fresh[1]} inplace_best ${inPlace[1]} cin_best ${cIn[1]} bucket_best ${bucket[1]} bucketop_best ${bucketOp[1]}`);
    }
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
  // time inside the provider's all-reduce (the library call, waiting for the other rank included)
  const { collectiveProvider } = await import("../src/ops/collective.js");
  const p = collectiveProvider()!;
  const plain = p.allReduce.bind(p);
  let inAllReduce = 0;
  (p as { allReduce: typeof plain }).allReduce = (...args) => {
    const t0 = performance.now();
    plain(...args);
    inAllReduce += performance.now() - t0;
  };
  // epoch 1 traces the staged step; epoch 2 is measured
  let epoch2Start = 0;
  const h = nn.fit(model, { data: batches, optimizer, loss: nn.softmaxCrossEntropy, epochs: 2, progress: "off", callbacks: { onEpochBegin: (e) => { if (e === 2) epoch2Start = inAllReduce; } } });
  const allReducePerStep = sc.distributed.allReduce(sc.tensor([(inAllReduce - epoch2Start) / 1000 / TRAIN_STEPS], "float64"), "mean").item() as number;
  (p as { allReduce: typeof plain }).allReduce = plain;
  const stepsPerSecond = sc.distributed.allReduce(sc.tensor([h.stepsPerSecond[1]!], "float64"), "mean").item() as number;
  // one all-reduce of the model's gradient (every parameter, float32, one fused bucket)
  const params = model.parameterCount();
  const g = sc.tensor(randomValues(params, 7), "float32", [params]);
  for (let w = 0; w < 3; w++) sc.distributed.allReduce(g, "mean").dataSync();
  const t0 = performance.now();
  const reps = 50;
  for (let k = 0; k < reps; k++) sc.distributed.allReduce(g, "mean").dataSync();
  const allReduceSeconds = sc.distributed.allReduce(sc.tensor([(performance.now() - t0) / 1000 / reps], "float64"), "max").item() as number;
  if (rank === 0) console.log(`ranks ${size} steps_per_second ${stepsPerSecond} params ${params} allreduce_seconds ${allReduceSeconds} in_allreduce_per_step ${allReducePerStep}`);
  sc.distributed.finalize();
}

// ---- the driver -------------------------------------------------------------------------------

function fmtBytes(b: number): string {
  return b >= 1 << 20 ? `${b / (1 << 20)} MiB` : `${b / 1024} KiB`;
}

function benchAllReduce(reps: number): void {
  if (spawnSync("mpicc", ["--version"]).status !== 0) {
    console.log("all-reduce bandwidth: skipped: mpicc is not installed (apt-get install libopenmpi-dev)");
    return;
  }
  const dir = mkdtempSync(join(tmpdir(), "sc-bench-mpi-"));
  try {
    const src = join(root, "bench/mpi/allreduce.c");
    const exe = join(dir, "allreduce");
    const lib = join(dir, "liballreduce.so");
    for (const args of [["-O2", "-o", exe, src], ["-O2", "-shared", "-fPIC", "-DSC_LIBRARY", "-o", lib, src]]) {
      const cc = spawnSync("mpicc", args, { encoding: "utf8" });
      if (cc.status !== 0) throw new Error(`mpicc ${args.join(" ")} failed:\n${cc.stderr}`);
    }
    // the C program on its own, once (a reference: its own job, not interleaved)
    const alone = records(mpirun(2, [exe, ...SIZES.map((b) => `${b}:${itersFor(b)}`)]), "bytes");
    // C (the same loop as a library), our op and the provider, interleaved per size in one job
    const rows = records(mpirun(2, nodeWorker("allreduce", lib, String(reps), ...SIZES.map(String))), "bytes");
    for (const [stat, suffix, alonekey] of [["median call", "", "median"], ["fastest call", "_best", "best"]] as const) {
      console.log(`\nall-reduce, 2 ranks, float32 sum: the slowest rank's ${stat}; median of ${reps} interleaved repetitions (GB/s = bytes / time, 1 GB = 1e9 B)`);
      console.log("size        calls   C program alone   C in our job            our op        provider    op/C   provider/C   fresh/C   in-place op   in-place/C   C in place   in-place/C in place   bucket in place/op");
      for (const b of SIZES) {
        const rs = rows.filter((x) => x.bytes === b);
        const c = median(rs.map((x) => x["c" + suffix]!));
        const gbs = (s: number) => `${(b / s / 1e9).toFixed(3).padStart(7)} GB/s`;
        const us = (s: number) => `${(s * 1e6).toFixed(1).padStart(10)} us`;
        const ratio = (k: string, base = "c") => `${(100 * median(rs.map((x) => x[base + suffix]! / x[k + suffix]!))).toFixed(0)}%`;
        console.log(
          `${fmtBytes(b).padEnd(10)}  ${String(itersFor(b)).padStart(5)}   ${gbs(alone.find((x) => x.bytes === b)![alonekey]!)}   ${gbs(c)} ${us(c)}   ${gbs(median(rs.map((x) => x["op" + suffix]!)))}   ${gbs(median(rs.map((x) => x["provider" + suffix]!)))}   ${ratio("op").padStart(5)}   ${ratio("provider").padStart(10)}   ${ratio("fresh").padStart(7)}   ${gbs(median(rs.map((x) => x["inplace" + suffix]!)))}   ${ratio("inplace").padStart(10)}   ${gbs(median(rs.map((x) => x["cin" + suffix]!)))}   ${ratio("inplace", "cin").padStart(19)}   ${ratio("bucket", "bucketop").padStart(18)}`,
        );
      }
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
  console.log("ranks   steps/s   examples/s   step (ms)   in MPI_Allreduce per step (ms)   one gradient all-reduce alone (ms)");
  for (const [n, xs] of [[1, one], [2, two]] as const) {
    const sps = median(xs.map((x) => x.steps_per_second!));
    console.log(`${String(n).padStart(5)}   ${sps.toFixed(2).padStart(7)}   ${median(xs.map(thr)).toFixed(1).padStart(10)}   ${(1000 / sps).toFixed(1).padStart(9)}   ${(1000 * median(xs.map((x) => x.in_allreduce_per_step!))).toFixed(3).padStart(30)}   ${(1000 * median(xs.map((x) => x.allreduce_seconds!))).toFixed(3).padStart(34)}`);
  }
  console.log(`parameters ${one[0]!.params} (${(4 * one[0]!.params!) / 1024} KiB of float32 gradient); scaling efficiency 2 ranks: ${(100 * median(eff)).toFixed(0)}% (per round: ${eff.map((e) => `${(100 * e).toFixed(0)}%`).join(", ")})`);
}

const argv = process.argv.slice(2);
const w = argv.indexOf("--worker");
if (w >= 0) {
  const kind = argv[w + 1];
  if (kind === "allreduce") await workerAllReduce(argv[w + 2]!, argv.slice(w + 4).map(Number), Number(argv[w + 3]));
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
