/**
 * When to use a second thread: measured, not assumed. On a machine whose other core is busy
 * (another process, the garbage collector), a helper thread makes progress only when the scheduler
 * gives it time: a job then waits for the task the helper is on, and a woken helper can take the
 * main thread's own core. So each class of job (one kernel on shapes whose every dimension has the
 * same power of two, jobClass: jobs of very different shapes cost different amounts per flop, and
 * a class mixing them compared one shape's timings with another's) keeps what its recent runs with
 * one and with more threads cost, as the wall time of the whole job (dispatch, work and the wait
 * for the helpers: what the caller pays), and uses the cheaper. Now and then it runs the other way
 * (a probe) to notice when the machine changes: probes are spaced so that their expected extra
 * cost stays under `probeBudget` of the class's time (a probe of threads that cost 3x on a busy
 * machine comes about every 70 jobs, one that costs nothing extra every `minGap` jobs), and at
 * most `maxGap` jobs apart (4096: a threaded probe of a 65 us native product on a busy core cost
 * 2-4 ms, its helper waiting for the core, so at 256 jobs apart the probes alone took 12% of the
 * staged RNN step; the budget spaces them by the class's time instead, about every 85 ms of it
 * there), and a probe that disagrees with the current choice is confirmed by another one
 * `confirmGap` jobs later, so that a change of the machine is followed within a few probes.
 *
 * Threads are used only when two measures agree that they pay:
 * - each way's estimate, the median of its last `window` timings (one stray timing, a
 *   descheduled helper or a collection, neither flips the choice nor sticks to it), and
 * - the median of the last `ratios` paired ratios: each probe's timing against the median of
 *   the other way's timings taken just before it. The way not in use is measured only by
 *   probes, so its estimate is old, while the way in use is measured now; on a shared machine
 *   whose load changes over seconds, comparing an old estimate with a new one made the
 *   choice follow the load (measured on the staged RNN step with four other processes running:
 *   its 65 us products went to threads in 16% of calls, in streaks, while threaded calls were
 *   12-17% slower). A ratio pairs two timings of one moment, so the load divides out.
 * A threaded job whose helper made no progress at all (it never woke, or took no task) counts as
 * no cheaper than one thread. A way's first job in a class is not recorded: it pays one-time
 * costs (the native kernels build a session per thread count on first use). Failing either measure, a class runs on one thread: a wrong
 * choice of one thread costs at most what threads would have saved, a wrong choice of threads
 * on a busy core can cost the whole job again.
 *
 * A policy may instead have a reference way (`reference: "threads"`: onnx.load's native session,
 * whose threaded session is onnxruntime's own configuration, the peer's): a class starts on it and
 * keeps it through noise and ties, and leaves it only on a long run of evidence, a window of
 * probes (`ratios`) of which at least half found the other way faster by the margin and whose
 * summed times say so by `leaveRatio`; as probes replace the window's oldest, the same test takes
 * it back. Each probe is paired with the mean (not the median) of the way in use's last `window`
 * timings, so that a way's tail counts where it is the cost (a busy machine's threads).
 *
 * The policy is a pure state machine over the timings it is given (`record`): no clock of its
 * own, so its logic is tested with simulated timings (test/backends/cpu/thread-policy.test.ts).
 */

export interface ThreadPolicyOptions {
  /** The fewest jobs of a class between two probes. */
  minGap?: number;
  /** The most jobs of a class between two probes, whatever they cost. */
  maxGap?: number;
  /** Jobs between a probe that disagreed with the current choice and the probe confirming it. */
  confirmGap?: number;
  /** Probes' expected extra cost, as a fraction of the class's time since the last probe. */
  probeBudget?: number;
  /** Timings per way that an estimate is the median of. */
  window?: number;
  /** Paired ratios (threads over one thread) whose median decides with the estimates. */
  ratios?: number;
  /** Threads are preferred only when faster than one thread by this factor (hysteresis). */
  margin?: number;
  /**
   * Consecutive jobs of one way that a probe (and each turn of a class's start) runs, 1 by
   * default. Above 1, the first job after a change of way is not recorded: it pays the switch,
   * not the way (onnx.load's native session: a threaded call after one-thread calls waits for
   * its sleeping helpers to be woken and scheduled, 6.6 ms against 0.2 ms warm for Silero VAD at
   * load 15; a one-thread call after threaded ones shares the cores with helpers still winding
   * down), and a policy that timed single probes saw each way at its worst and kept the way it
   * started with.
   */
  probeRun?: number;
  /**
   * A way that holds unless a long run of paired measurements says the other is faster ("threads":
   * onnx.load's native session, whose threaded session is onnxruntime's own configuration, the
   * peer's). Unset (the CPU kernels): threads only where both measures say they pay. With
   * "threads", a class leaves threads only when its last `ratios` probes (each a probe's time
   * against the mean of the other way's last `window` timings, so that a way's tail counts) say
   * one thread is faster in two ways at once: at least half a window of them (`ratios` / 2, so
   * never on the first few) by the margin, so that one or two stray timings do not decide, and
   * their summed times by `leaveRatio`; the same test, as probes replace the window's oldest,
   * takes it back to threads.
   */
  reference?: "threads";
  /** With reference: how much slower (summed over the window's probes) threads must be to be left. */
  leaveRatio?: number;
  /**
   * With reference: the probe budget of probes away from the reference way (probeBudget is that of
   * probes back to it). Those probes guard against a loaded machine, where one thread is the cheaper
   * way and they cost nothing; on a quiet one each costs what threads save (a probe of PP-OCRv4 det
   * on one thread 1.47x a threaded call).
   */
  leaveBudget?: number;
}

interface ClassState {
  /** Seconds per flop of the last timings with one thread and with several (newest last). */
  one: number[];
  many: number[];
  /** The last paired ratios, threaded over one-thread seconds per flop (newest last). */
  ratios: number[];
  /** With reference: each probe's threaded and one-thread seconds per flop (the probe's, and the other way's mean just before it). */
  pairMany: number[];
  pairOne: number[];
  /** The medians of `one`, `many` and `ratios` (NaN for none), kept as each list changes. */
  oneMedian: number;
  manyMedian: number;
  ratioMedian: number;
  /** Whether a job of each way has run (the first pays one-time costs and is not recorded). */
  ranOne: boolean;
  ranMany: boolean;
  jobs: number;
  /** Jobs, and seconds they took, since the last probe. */
  sinceProbe: number;
  spentSinceProbe: number;
  /** Jobs to wait before the next probe at the earliest (minGap, or confirmGap to confirm one). */
  gap: number;
  /** Disagreeing probes in a row (each confirmed soon, up to what flips the ratios' median). */
  disagreed: number;
  /** Flops of the last job (what a probe's extra cost is scaled by). */
  flops: number;
  /** Whether the job handed out last was a probe. */
  probing: boolean;
  /** Jobs left of the current run (a probe's, or a starting turn's) and its way (probeRun > 1). */
  runLeft: number;
  runWay: boolean;
  /** The way of the last job recorded (null: none yet): a job of the other way is a switch. */
  lastWay: boolean | null;
  /** Seconds per flop of the last switch to one thread and to threads (probeRun > 1; NaN: none yet). */
  switchOne: number;
  switchMany: number;
}

/** Scratch for `median` (windows are short): the policy allocates nothing per job. */
let sorted = new Float64Array(16);

/** The median of `x`, sorted by insertion in scratch storage (NaN for none). */
/** A job's end: a probe's ends the probe (the count to the next starts again); another's counts toward the probe budget. */
function endJob(s: ClassState, seconds: number): void {
  if (s.probing) {
    s.sinceProbe = 0;
    s.spentSinceProbe = 0;
    s.probing = false;
  } else {
    s.spentSinceProbe += seconds;
  }
}

function median(x: number[]): number {
  const n = x.length;
  if (n === 0) return NaN;
  if (n > sorted.length) sorted = new Float64Array(2 * n);
  for (let i = 0; i < n; i++) {
    const v = x[i]!;
    let j = i;
    for (; j > 0 && sorted[j - 1]! > v; j--) sorted[j] = sorted[j - 1]!;
    sorted[j] = v;
  }
  return n % 2 === 1 ? sorted[n >> 1]! : (sorted[n / 2 - 1]! + sorted[n / 2]!) / 2;
}

/** Appends `v` to `list`, dropping its oldest beyond `cap`; returns the list's new median. */
function push(list: number[], v: number, cap: number): number {
  list.push(v);
  if (list.length > cap) list.shift();
  return median(list);
}

function sum(x: number[]): number {
  let t = 0;
  for (let i = 0; i < x.length; i++) t += x[i]!;
  return t;
}

function mean(x: number[]): number {
  let t = 0;
  for (let i = 0; i < x.length; i++) t += x[i]!;
  return t / x.length;
}

/** Paired ratios measured while a class starts, alternating ways, before it chooses. */
const FIRST_RATIOS = 3;

export class ThreadPolicy {
  private readonly classes = new Map<string | number, ClassState>();
  private readonly minGap: number;
  private readonly maxGap: number;
  private readonly confirmGap: number;
  private readonly probeBudget: number;
  private readonly window: number;
  private readonly ratioWindow: number;
  private readonly margin: number;
  private readonly probeRun: number;
  private readonly reference: boolean;
  private readonly leaveRatio: number;
  private readonly leaveBudget: number;
  private forced: boolean | null = null;

  constructor(opts: ThreadPolicyOptions = {}) {
    this.minGap = opts.minGap ?? 16;
    this.maxGap = opts.maxGap ?? 4096;
    this.confirmGap = opts.confirmGap ?? 2;
    this.probeBudget = opts.probeBudget ?? 0.03;
    this.window = opts.window ?? 5;
    this.ratioWindow = opts.ratios ?? 5;
    this.margin = opts.margin ?? 1.05;
    this.probeRun = Math.max(1, Math.floor(opts.probeRun ?? 1));
    this.reference = opts.reference === "threads";
    this.leaveRatio = opts.leaveRatio ?? 1.1;
    this.leaveBudget = opts.leaveBudget ?? this.probeBudget;
  }

  private state(key: string | number): ClassState {
    let s = this.classes.get(key);
    if (s === undefined) {
      s = { one: [], many: [], ratios: [], pairMany: [], pairOne: [], oneMedian: NaN, manyMedian: NaN, ratioMedian: NaN, ranOne: false, ranMany: false, jobs: 0, sinceProbe: 0, spentSinceProbe: 0, gap: this.minGap, disagreed: 0, flops: 1, probing: false, runLeft: 0, runWay: false, lastWay: null, switchOne: NaN, switchMany: NaN };
      this.classes.set(key, s);
    }
    return s;
  }

  private starting(s: ClassState): boolean {
    // (with a reference way, one pair starts it: the rest of the evidence comes from probes,
    // spaced by what they cost, where a start of 3 pairs ran 6 of a quiet machine's first blocks
    // on the slower way)
    return s.ratios.length < (this.reference ? 1 : FIRST_RATIOS) || s.one.length === 0 || s.many.length === 0;
  }

  /**
   * Whether threads are the cheaper way by what has been measured: both measures must say so;
   * with reference threads, unless the window of probes says one thread is (`reference`'s comment).
   */
  private prefers(s: ClassState): boolean {
    if (this.reference) {
      return !(2 * this.votesForOne(s) >= this.ratioWindow && sum(s.pairMany) > this.leaveRatio * sum(s.pairOne));
    }
    return s.ratioMedian * this.margin < 1 && s.manyMedian * this.margin < s.oneMedian;
  }

  /** With reference: the window's probes whose threaded time exceeds their one-thread time by the margin. */
  private votesForOne(s: ClassState): number {
    let votes = 0;
    for (let i = 0; i < s.pairMany.length; i++) if (s.pairMany[i]! > this.margin * s.pairOne[i]!) votes++;
    return votes;
  }

  /** Whether the next job of class `key` should use several threads. */
  useThreads(key: string | number): boolean {
    const s = this.state(key);
    s.jobs++;
    s.probing = false;
    if (this.forced !== null) return this.forced;
    // (the rest of a run of probeRun jobs: a probe's, or a starting turn's)
    if (s.runLeft > 0) {
      s.runLeft--;
      s.probing = !this.starting(s);
      return s.runWay;
    }
    // first both ways, alternately (threads first), until FIRST_RATIOS ratios are paired
    if (this.starting(s)) {
      s.runWay = s.many.length <= s.one.length;
      s.runLeft = this.probeRun - 1;
      return s.runWay;
    }
    const prefer = this.prefers(s);
    s.sinceProbe++;
    if (s.sinceProbe > s.gap) {
      // (means: a way whose timings have a long tail, threads waiting for a helper on a busy
      // core, costs its tail too)
      const [other, chosen] = prefer ? [mean(s.one), mean(s.many)] : [mean(s.many), mean(s.one)];
      // (a run's first job, not recorded as it pays the switch, is a probe's cost too: a
      // threaded call of onnx.load's native session after one-thread calls took 30x one)
      const first = this.probeRun > 1 ? (prefer ? s.switchOne : s.switchMany) : NaN;
      const extra = Math.max(0, ((this.probeRun - 1) * (other - chosen) + (Number.isNaN(first) ? other : first) - chosen) * s.flops);
      const budget = this.reference && prefer ? this.leaveBudget : this.probeBudget;
      if (s.gap < this.minGap || s.sinceProbe > this.maxGap || extra <= budget * s.spentSinceProbe) {
        s.probing = true;
        s.runWay = !prefer;
        s.runLeft = this.probeRun - 1;
        return !prefer;
      }
    }
    return prefer;
  }

  /**
   * What a job of class `key` cost: `seconds` of wall time for `flops`, with several threads or
   * one. A threaded job whose helpers made no progress (`helperIdle`) counts as no cheaper than
   * one thread, whatever its time.
   */
  record(key: string | number, threaded: boolean, seconds: number, flops: number, helperIdle = false): void {
    const s = this.state(key);
    const switched = s.lastWay !== null && s.lastWay !== threaded;
    s.lastWay = threaded;
    // a way's first job pays one-time costs (a native session built for that thread count, a
    // worker started, code compiled: 20 ms for a 0.4 ms product), which no later job pays
    if (!(threaded ? s.ranMany : s.ranOne)) {
      if (threaded) s.ranMany = true;
      else s.ranOne = true;
      s.probing = false;
      return;
    }
    // (probeRun > 1: a switch of way pays the switch, not the way: not recorded)
    if (switched && this.probeRun > 1) {
      const perFlop = seconds / Math.max(1, flops);
      if (threaded) s.switchMany = perFlop;
      else s.switchOne = perFlop;
      endJob(s, seconds);
      return;
    }
    s.flops = Math.max(1, flops);
    let perFlop = seconds / s.flops;
    if (threaded && helperIdle && s.one.length > 0) perFlop = Math.max(perFlop, s.oneMedian);
    // a probe (or a starting job) against the other way's timings of just before
    if ((s.probing || this.starting(s)) && (threaded ? s.one : s.many).length > 0) {
      const before = this.prefers(s);
      const ratio = threaded ? perFlop / s.oneMedian : s.manyMedian / perFlop;
      s.ratioMedian = push(s.ratios, ratio, this.ratioWindow);
      if (this.reference) {
        push(s.pairMany, threaded ? perFlop : mean(s.many), this.ratioWindow);
        push(s.pairOne, threaded ? mean(s.one) : perFlop, this.ratioWindow);
        // (the next probe comes soon while the evidence leans away from the way now chosen, so
        // that leaving, or coming back, takes a few dozen jobs, not minutes: on threads, while
        // at least half the window's probes say one thread is faster, up to a window of probes
        // in a row; on one thread, after a probe that said threads are not slower, up to half)
        const threads = this.prefers(s);
        const n = s.pairMany.length;
        const leaning = threads ? 2 * this.votesForOne(s) >= n : s.pairMany[n - 1]! <= this.margin * s.pairOne[n - 1]!;
        s.disagreed = leaning && threads === before ? s.disagreed + 1 : 0;
        s.gap = s.disagreed > 0 && s.disagreed <= (threads ? this.ratioWindow : this.ratioWindow >> 1) ? this.confirmGap : this.minGap;
      } else if (s.probing) {
        // a probe that says the other way is cheaper is confirmed soon by another, as many times
        // as it takes to flip the median (a machine that changed is followed within a few jobs)
        s.disagreed = (ratio * this.margin < 1) !== before ? s.disagreed + 1 : 0;
        s.gap = s.disagreed > 0 && s.disagreed <= this.ratioWindow >> 1 ? this.confirmGap : this.minGap;
      }
    }
    if (threaded) s.manyMedian = push(s.many, perFlop, this.window);
    else s.oneMedian = push(s.one, perFlop, this.window);
    endJob(s, seconds);
  }

  /**
   * Makes every job use threads (true), one thread (false), or the measured choice again (null):
   * for tests that need a given way whatever the machine does.
   */
  force(way: boolean | null): void {
    this.forced = way;
  }

  /** The way force() set (null: the measured choice). */
  get forcedWay(): boolean | null {
    return this.forced;
  }

  /**
   * Forgets every class's timings: the next jobs measure both ways afresh. For a caller that
   * knows the machine changed under it (a benchmark that kept a core busy on purpose, then
   * stopped): otherwise the policy notices only through its probes, tens of jobs per class later.
   */
  forget(): void {
    this.classes.clear();
  }

  /**
   * The current estimates of class `key`: seconds per flop (NaN: not measured yet), the median
   * paired ratio of threads over one thread (NaN: none yet), jobs seen.
   */
  estimates(key: string | number): { one: number; many: number; ratio: number; jobs: number } {
    const s = this.state(key);
    return { one: s.oneMedian, many: s.manyMedian, ratio: s.ratioMedian, jobs: s.jobs };
  }
}

/**
 * A dimension's size class: its power of two (1 -> 0, 2-3 -> 1, 32-63 -> 5; 0 -> -1), at most 31.
 * A job class buckets each dimension so: jobs of one size but different shapes cost different
 * amounts per flop (a product with k = 32 runs at 0.8x the rate of one with k = 256: classes 5
 * and 8), while shapes within a factor of two cost about the same per flop. Keyed by the exact
 * shape instead, every new shape (a last partial batch, another sequence length) started a class
 * afresh (of its first 6 jobs, 3 run threaded) and the classes grew without bound.
 */
export function sizeClass(d: number): number {
  return 31 - Math.clz32(d);
}

/**
 * A job-class key: the kernel, each of the job's dimensions by its size class (sizeClass) and
 * whether A and B are transposed. At most 33 classes per dimension: the classes stay few.
 */
export function jobClass(kernel: string, dims: readonly number[], transA = false, transB = false): string {
  let key = kernel + (transA ? ":T" : ":N") + (transB ? "T" : "N");
  for (let i = 0; i < dims.length; i++) key += ":" + sizeClass(dims[i]!);
  return key;
}
