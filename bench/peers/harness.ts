/**
 * Timing workloads against peers: every system of a workload runs in rounds that alternate
 * between the systems, so a load change on the machine hits every system alike. Each round
 * runs one system's calls back to back for about `roundMs` (as a training loop does) and
 * yields one sample, milliseconds per call; a figure is the median of the samples, with their
 * range.
 *
 * The order within rounds is balanced (see roundOrder): every system runs right after every
 * other one equally often. With a plain rotation the order is cyclic and a system always
 * follows the same one: in the AutoGraph workloads the converted program ran right after the
 * eager one (whose garbage the next system's round collects) in 4 of 5 rounds, the
 * hand-written one never.
 *
 * A workload with a reference (the hand-written graph code, one thread) is judged by its
 * paired ratios, so it runs many short rounds (PAIRED): two samples taken within a few tens
 * of ms see the same load. Each sample also records the process's CPU time (all threads);
 * the note gives each system's CPU time per call and the same per-round ratio on CPU time, which a shared machine's load, taking
 * the CPU away from the process, does not change (it still counts a waiting helper thread's
 * spinning, and threads that share work count their sum).
 */
/** A ratio with its range, "1.023x (0.95–1.10)"; "–" for none. */
export const fmtRatio = (v?: { median: number; lo: number; hi: number }): string => (v ? `${v.median.toFixed(3)}x (${v.lo.toFixed(2)}–${v.hi.toFixed(2)})` : "–");

export interface System {
  /** e.g. "stagecraft staged", "tfjs-wasm". */
  name: string;
  /** Runs once before each of this system's rounds (e.g. selects a tfjs backend). */
  enter?: () => Promise<void> | void;
  /** One call of the workload. */
  run: () => unknown;
  /** Why this system does not run the workload (the row says so instead of a figure). */
  skip?: string;
}

export interface Workload {
  /** The table's title. */
  name: string;
  /** What one call does (for the table's note): "one training step", "one sample of batch 8". */
  call: string;
  /** Throughput figures: units per call and the unit name (examples/s, GFLOP/s); else ms per call. */
  throughput?: { perCall: number; unit: string };
  systems: System[];
  /** A note printed under the table (the setup, what the goal is). */
  note?: string;
  /** A system every other is also compared with, round by round (e.g. hand-written graph code). */
  reference?: string;
  /** Runs after the workload is measured (or fails): stops what its set-up started. */
  done?: () => void;
  /**
   * Round settings of this workload that replace the run's (e.g. more, shorter rounds, whose
   * paired ratios the machine's other load disturbs less), as a function of the run's.
   */
  rounds?: (run: MeasureOptions) => MeasureOptions;
}

export interface Figure {
  system: string;
  /** ms per call: median, min, max of the samples. */
  ms?: { median: number; lo: number; hi: number; samples: number };
  skip?: string;
  error?: string;
  /** Median over rounds of (the reference's ms / this system's ms) in the same round (> 1: faster). */
  vsReference?: { median: number; lo: number; hi: number };
  /** Process CPU time (all threads) per call, ms: median, min, max of the samples. */
  cpuMs?: { median: number; lo: number; hi: number };
  /** As vsReference, on the samples' process CPU time. */
  vsReferenceCpu?: { median: number; lo: number; hi: number };
}

export interface WorkloadResult {
  name: string;
  call: string;
  note?: string;
  throughput?: { perCall: number; unit: string };
  reference?: string;
  figures: Figure[];
}

export interface MeasureOptions {
  rounds: number;
  roundMs: number;
  warmupMs: number;
}

/** Calls a warm-up aims for, and the most it lasts, in multiples of its planned length. */
const WARMUP_CALLS = 1000, WARMUP_CAP = 25;
/** The fewest warm-up calls of a Stagecraft system (see warmUp). */
const OUR_WARMUP_CALLS = 200;

export const QUICK: MeasureOptions = { rounds: 5, roundMs: 120, warmupMs: 300 };
export const FULL: MeasureOptions = { rounds: 9, roundMs: 300, warmupMs: 1500 };

/**
 * Rounds for paired ratios: five times as many as the run's, each `shorter` times as short
 * (at least `minMs`), so that the two samples of a round see the same load.
 */
export const paired = (shorter: number, minMs: number) => (run: MeasureOptions): MeasureOptions =>
  ({ rounds: run.rounds * 5 + 1, roundMs: Math.max(minMs, run.roundMs / shorter), warmupMs: run.warmupMs });

/**
 * The rounds of a workload with a reference (unless it sets its own): five times as many
 * rounds, a quarter as long (QUICK: 26 rounds of 30 ms per system instead of 5 of 120 ms).
 */
export const PAIRED = paired(4, 25);

/**
 * The workload function exported by bench/peers/<file>.ts (the first export whose name ends in
 * "Workload"): for the scripts that run one workload by its file's name.
 */
export async function loadWorkload(file: string): Promise<(...args: unknown[]) => Promise<Workload>> {
  const mod = (await import(`./${file}.js`)) as Record<string, unknown>;
  const make = Object.values(mod).find((f): f is (...a: unknown[]) => Promise<Workload> => typeof f === "function" && f.name.endsWith("Workload"));
  if (make === undefined) throw new Error(`bench/peers/${file}.ts exports no ...Workload function`);
  return make;
}

let sink: unknown = null;
const isPromise = (x: unknown): x is Promise<unknown> => typeof (x as { then?: unknown } | null)?.then === "function";

async function call(fn: () => unknown): Promise<void> {
  const r = fn();
  sink = isPromise(r) ? await r : r;
}

interface Sample {
  /** Wall ms per call. */
  ms: number;
  /** Process CPU ms (user + system, all threads) per call. */
  cpuMs: number;
}

/** ms per call of `calls` consecutive calls, wall and process CPU time. */
async function timeCalls(fn: () => unknown, calls: number): Promise<Sample> {
  const c = process.cpuUsage(), t = performance.now();
  for (let i = 0; i < calls; i++) await call(fn);
  const ms = (performance.now() - t) / calls, cpu = process.cpuUsage(c);
  return { ms, cpuMs: (cpu.user + cpu.system) / 1000 / calls };
}

/**
 * The systems' order in round `r`, a Williams design: over n rounds (2n when n is odd, the
 * second n the first reversed) every system runs right after every other one equally often,
 * and in every position. Two systems: A B, B A (ABBA); four: 0 1 3 2, 1 2 0 3, 2 3 1 0,
 * 3 0 2 1. What a system leaves behind (garbage to collect, a helper thread still spinning, a
 * cache it filled) lands on each of the others alike instead of always on the same one.
 */
export function roundOrder<T>(systems: readonly T[], r: number): T[] {
  const n = systems.length;
  if (n === 0) return [];
  const base = systems.map((_, j) => (j === 0 ? 0 : j % 2 === 1 ? (j + 1) / 2 : n - j / 2));
  const cycle = n % 2 === 0 ? n : 2 * n, k = r % cycle, shift = k % n;
  const order = base.map((b) => systems[(b + shift) % n]!);
  return k >= n ? order.reverse() : order;
}

/**
 * Runs `fn` for at least `ms` and `minCalls` calls, then until its pace no longer improves by
 * more than 20% from one block of calls to the next, or it has run WARMUP_CALLS times; at most
 * WARMUP_CAP x `ms`. Stagecraft's systems get a minimum number of calls: V8 tiers the generated
 * code of a staged function up by its count of calls, and until then it can run tens of times
 * slower (the L2HMC sampler's first 50 calls took 59 ms each on the shared 2-core machine, the
 * calls after 100 about 2 ms) at a steady pace that a warm-up by time alone takes for the end.
 */
async function warmUp(fn: () => unknown, ms: number, minCalls: number): Promise<void> {
  const t = performance.now();
  let prev = Infinity, n = 0;
  for (;;) {
    const b = performance.now();
    let k = 0;
    while (k < 2 || performance.now() - b < ms / 3) {
      await call(fn);
      k++;
    }
    n += k;
    const now = performance.now(), per = (now - b) / k;
    if (now - t >= WARMUP_CAP * ms || (now - t >= ms && n >= minCalls && (n >= WARMUP_CALLS || per > 0.8 * prev))) return;
    prev = per;
  }
}

const median = (x: number[]) => x.slice().sort((a, b) => a - b)[x.length >> 1]!;

/** Measures every system of `w` in alternating rounds. A system that throws is reported with its error. */
export async function measure(w: Workload, runOpts: MeasureOptions): Promise<WorkloadResult> {
  const opts = w.rounds ? w.rounds(runOpts) : w.reference !== undefined ? PAIRED(runOpts) : runOpts;
  const live = w.systems.filter((s) => s.skip === undefined);
  const figures = new Map<string, Figure>(w.systems.map((s) => [s.name, s.skip !== undefined ? { system: s.name, skip: s.skip } : { system: s.name }]));
  const calls = new Map<string, number>();
  const samples = new Map<string, Sample[]>(live.map((s) => [s.name, []]));
  const failed = new Set<string>();
  const guard = async (s: System, body: () => Promise<void>) => {
    if (failed.has(s.name)) return;
    try {
      await body();
    } catch (e) {
      failed.add(s.name);
      figures.set(s.name, { system: s.name, error: (e as Error).message.split("\n")[0]!.slice(0, 160) });
    }
  };
  // warm-up (JIT tiers, traces, compiled graphs, sessions), then calls per round from its pace
  for (const s of live) {
    await guard(s, async () => {
      await s.enter?.();
      await warmUp(s.run, opts.warmupMs, isOurs(s.name) ? OUR_WARMUP_CALLS : 0);
      const per = (await timeCalls(s.run, 1)).ms;
      calls.set(s.name, Math.max(1, Math.round(opts.roundMs / Math.max(per, 1e-3))));
    });
  }
  for (let r = 0; r < opts.rounds; r++) {
    for (const s of roundOrder(live, r)) {
      await guard(s, async () => {
        await s.enter?.();
        samples.get(s.name)!.push(await timeCalls(s.run, calls.get(s.name)!));
      });
    }
  }
  const spread = (x: number[]) => ({ median: median(x), lo: Math.min(...x), hi: Math.max(...x) });
  for (const s of live) {
    const x = samples.get(s.name)!;
    if (failed.has(s.name) || x.length === 0) continue;
    const ms = x.map((v) => v.ms);
    figures.set(s.name, { system: s.name, ms: { ...spread(ms), samples: x.length }, cpuMs: spread(x.map((v) => v.cpuMs)) });
  }
  const ref = w.reference !== undefined && !failed.has(w.reference) ? samples.get(w.reference) : undefined;
  let note = w.note;
  if (ref !== undefined && ref.length > 0) {
    // paired by round: both systems ran within the same round, under the same load
    const cpuRatios: string[] = [], cpuMs: string[] = [];
    for (const s of live) {
      const x = samples.get(s.name)!, f = figures.get(s.name)!;
      if (failed.has(s.name) || x.length !== ref.length) continue;
      f.vsReference = spread(x.map((v, i) => ref[i]!.ms / v.ms));
      f.vsReferenceCpu = spread(x.map((v, i) => ref[i]!.cpuMs / v.cpuMs));
      cpuMs.push(`${s.name} ${f.cpuMs!.median.toPrecision(3)} ms`);
      if (s.name !== w.reference) cpuRatios.push(`${s.name} ${fmtRatio(f.vsReferenceCpu)}`);
    }
    const cpuNote =
      `Process CPU time per call (all threads; median of rounds): ${cpuMs.join(", ")}. ` +
      `Per round on process CPU time instead of wall time, vs ${w.reference}: ${cpuRatios.join(", ")}; ${opts.rounds} rounds of ${opts.roundMs} ms.`;
    note = note ? `${note} ${cpuNote}` : cpuNote;
  }
  if (sink === undefined) sink = null;
  return { name: w.name, call: w.call, note, throughput: w.throughput, reference: w.reference, figures: w.systems.map((s) => figures.get(s.name)!) };
}

/** Throws unless |got - want| <= tol * (1 + |want|) elementwise: peers are checked before they are timed. */
export function assertClose(what: string, got: ArrayLike<number>, want: ArrayLike<number>, tol = 1e-3): void {
  if (got.length !== want.length) throw new Error(`${what}: ${got.length} values, expected ${want.length}`);
  for (let i = 0; i < want.length; i++) {
    if (!(Math.abs(got[i]! - want[i]!) <= tol * (1 + Math.abs(want[i]!)))) throw new Error(`${what}: ${got[i]} at ${i}, expected ${want[i]}`);
  }
}

/** Whether a system name is Stagecraft's own (the others are peers). */
export const isOurs = (system: string): boolean => system.startsWith("stagecraft");
