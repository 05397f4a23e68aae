/**
 * When to use a second thread: measured, not assumed. On a machine whose other core is busy
 * (another process, the garbage collector), a helper thread makes progress only when the
 * scheduler gives it time: a job then waits for the task the helper is on, and a woken helper
 * can take the main thread's own core. So each class of job (a size bucket of one kernel)
 * keeps what its recent runs with one and with more threads cost, as the wall time of the whole
 * job (dispatch, work and the wait for the helpers: what the caller pays), and uses the cheaper.
 * Now and then it runs the other way (a probe) to notice when the machine changes: probes are
 * spaced so that their expected extra cost stays under `probeBudget` of the class's time
 * (a probe of threads that cost 3x on a busy machine comes about every 70 jobs, one that costs
 * nothing extra every `minGap` jobs), and at most `maxGap` jobs apart.
 * A helper that made no progress at all in a job (it never woke, or took no task) makes that
 * job count as no cheaper than one thread.
 *
 * An estimate is the median of the last `window` timings of its way: one stray timing (a
 * descheduled helper, a collection) neither flips the choice nor sticks to it.
 *
 * The policy is a pure state machine over the timings it is given (`record`): no clock of its
 * own, so its logic is tested with simulated timings (test/backends/cpu/thread-policy.test.ts).
 */

export interface ThreadPolicyOptions {
  /** The fewest jobs of a class between two probes. */
  minGap?: number;
  /** The most jobs of a class between two probes, whatever they cost. */
  maxGap?: number;
  /** Probes' expected extra cost, as a fraction of the class's time since the last probe. */
  probeBudget?: number;
  /** Timings per way that an estimate is the median of. */
  window?: number;
  /** Threads are preferred only when faster than one thread by this factor (hysteresis). */
  margin?: number;
}

interface ClassState {
  /** Seconds per flop of the last timings with one thread and with several (newest last). */
  one: number[];
  many: number[];
  jobs: number;
  /** Jobs, and seconds they took, since the last probe. */
  sinceProbe: number;
  spentSinceProbe: number;
  /** Flops of the last job (what a probe's extra cost is scaled by). */
  flops: number;
  /** Whether the job handed out last was a probe. */
  probing: boolean;
}

const median = (x: number[]): number => {
  if (x.length === 0) return NaN;
  const s = x.slice().sort((a, b) => a - b);
  return s.length % 2 === 1 ? s[s.length >> 1]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

export class ThreadPolicy {
  private readonly classes = new Map<string, ClassState>();
  private readonly minGap: number;
  private readonly maxGap: number;
  private readonly probeBudget: number;
  private readonly window: number;
  private readonly margin: number;
  private forced: boolean | null = null;

  constructor(opts: ThreadPolicyOptions = {}) {
    this.minGap = opts.minGap ?? 16;
    this.maxGap = opts.maxGap ?? 256;
    this.probeBudget = opts.probeBudget ?? 0.03;
    this.window = opts.window ?? 3;
    this.margin = opts.margin ?? 1.05;
  }

  private state(key: string): ClassState {
    let s = this.classes.get(key);
    if (s === undefined) {
      s = { one: [], many: [], jobs: 0, sinceProbe: 0, spentSinceProbe: 0, flops: 1, probing: false };
      this.classes.set(key, s);
    }
    return s;
  }

  /** Whether threads are the cheaper way for class `key` by what has been measured (no probe). */
  private prefers(s: ClassState): boolean {
    return median(s.many) * this.margin < median(s.one);
  }

  /** Whether the next job of class `key` should use several threads. */
  useThreads(key: string): boolean {
    const s = this.state(key);
    s.jobs++;
    s.probing = false;
    if (this.forced !== null) return this.forced;
    // first both ways, alternately (threads first), until each has two timings
    if (s.many.length < 2 || s.one.length < 2) return s.many.length <= s.one.length;
    const prefer = this.prefers(s);
    s.sinceProbe++;
    if (s.sinceProbe > this.minGap) {
      const extra = Math.max(0, (prefer ? median(s.one) - median(s.many) : median(s.many) - median(s.one)) * s.flops);
      if (s.sinceProbe > this.maxGap || extra <= this.probeBudget * s.spentSinceProbe) {
        s.probing = true;
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
  record(key: string, threaded: boolean, seconds: number, flops: number, helperIdle = false): void {
    const s = this.state(key);
    s.flops = Math.max(1, flops);
    let perFlop = seconds / s.flops;
    if (threaded && helperIdle && s.one.length > 0) perFlop = Math.max(perFlop, median(s.one));
    const list = threaded ? s.many : s.one;
    list.push(perFlop);
    if (list.length > this.window) list.shift();
    if (s.probing) {
      s.sinceProbe = 0;
      s.spentSinceProbe = 0;
      s.probing = false;
    } else {
      s.spentSinceProbe += seconds;
    }
  }

  /**
   * Makes every job use threads (true), one thread (false), or the measured choice again (null):
   * for tests that need a given way whatever the machine does.
   */
  force(way: boolean | null): void {
    this.forced = way;
  }

  /**
   * Forgets every class's timings: the next jobs measure both ways afresh. For a caller that
   * knows the machine changed under it (a benchmark that kept a core busy on purpose, then
   * stopped): otherwise the policy notices only through its probes, tens of jobs per class later.
   */
  forget(): void {
    this.classes.clear();
  }

  /** The current estimates of class `key`: seconds per flop (NaN: not measured yet), jobs seen. */
  estimates(key: string): { one: number; many: number; jobs: number } {
    const s = this.state(key);
    return { one: median(s.one), many: median(s.many), jobs: s.jobs };
  }
}

/** A job-class key: the kernel and its size to a factor of two in flops. */
export function jobClass(kernel: string, flops: number): string {
  return `${kernel}:${Math.round(Math.log2(Math.max(1, flops)))}`;
}
