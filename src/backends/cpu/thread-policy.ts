/**
 * When to use a second thread: measured, not assumed. On a machine whose other core is busy
 * (another process, the garbage collector), a helper thread makes progress only when the
 * scheduler gives it time, and a job split in halves then waits for the slow half: the
 * two-thread product ran at half the one-thread speed in such a run. So each class of job
 * (a size bucket of one kernel) keeps what its recent runs with one and with more threads
 * cost per flop, uses the cheaper, and now and then runs the other way to notice when the
 * machine changes (a probe). A helper that made no progress at all in a job (it never woke,
 * or took no task) makes threads count as no cheaper than one thread at once.
 *
 * The policy is a pure state machine over the timings it is given (`record`): no clock of its
 * own, so its logic is tested deterministically (test/thread-policy.test.ts).
 */

export interface ThreadPolicyOptions {
  /** Every `probeEvery`-th job of a class runs the way not currently preferred. */
  probeEvery?: number;
  /** Weight of a new timing in the running estimate (exponential moving average). */
  smoothing?: number;
  /** Threads are preferred only when faster than one thread by this factor (hysteresis). */
  margin?: number;
}

interface ClassState {
  /** Estimated seconds per flop with one thread and with several (NaN: not measured yet). */
  one: number;
  many: number;
  jobs: number;
}

export class ThreadPolicy {
  private readonly classes = new Map<string, ClassState>();
  private readonly probeEvery: number;
  private readonly smoothing: number;
  private readonly margin: number;

  constructor(opts: ThreadPolicyOptions = {}) {
    this.probeEvery = opts.probeEvery ?? 16;
    this.smoothing = opts.smoothing ?? 0.3;
    this.margin = opts.margin ?? 1.05;
  }

  private state(key: string): ClassState {
    let s = this.classes.get(key);
    if (s === undefined) this.classes.set(key, (s = { one: NaN, many: NaN, jobs: 0 }));
    return s;
  }

  /** Whether the next job of class `key` should use several threads. */
  useThreads(key: string): boolean {
    const s = this.state(key);
    const n = s.jobs++;
    // first the threaded way, then one thread, then whichever has been cheaper
    if (Number.isNaN(s.many)) return true;
    if (Number.isNaN(s.one)) return false;
    const prefer = s.many * this.margin < s.one;
    return n % this.probeEvery === 0 ? !prefer : prefer;
  }

  /**
   * What a job of class `key` cost: `seconds` for `flops`, with several threads or one. A
   * threaded job whose helpers made no progress (`helperIdle`) counts as no cheaper than one
   * thread, whatever its time.
   */
  record(key: string, threaded: boolean, seconds: number, flops: number, helperIdle = false): void {
    const s = this.state(key);
    const perFlop = seconds / Math.max(1, flops);
    // The preferred way runs often: its estimate is smoothed. A probe of the other way is the
    // only news about it, so it replaces that estimate (one probe brings threads back when the
    // core frees, and a noisy probe is undone by the next run of the way it selects).
    const preferred = !(Number.isNaN(s.many) || Number.isNaN(s.one)) && (s.many * this.margin < s.one) === threaded;
    const update = (old: number, v: number) => (Number.isNaN(old) || !preferred ? v : old + this.smoothing * (v - old));
    if (threaded && helperIdle && !Number.isNaN(s.one)) s.many = Math.max(perFlop, s.one);
    else if (threaded) s.many = update(s.many, perFlop);
    else s.one = update(s.one, perFlop);
  }

  /** The current estimates of class `key` (for tests and benchmarks). */
  estimates(key: string): { one: number; many: number; jobs: number } {
    return { ...this.state(key) };
  }
}

/** A job-class key: the kernel and its size to a factor of two in flops. */
export function jobClass(kernel: string, flops: number): string {
  return `${kernel}:${Math.round(Math.log2(Math.max(1, flops)))}`;
}
