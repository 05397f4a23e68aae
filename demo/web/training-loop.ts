/**
 * The demo page's training loop, without the page: steps a trainer until paused, one loop at a
 * time, and drops a step that finishes after its trainer was replaced (Reset).
 *
 * Why it is its own piece: a step is asynchronous (its values are awaited: on WebGPU that is a
 * read-back, seconds on a software renderer), so Pause and Reset arrive while one is in flight.
 * The page's first loop stopped only by checking a flag after each step, and Resume started a new
 * loop at once: a paused step that returned after Reset then recorded its loss into the new run,
 * and that old loop, finding the flag set again, went on stepping beside the new one. The browser
 * test compared the losses by position, so that one late loss (from the other device) read as
 * "WebGPU disagrees with the CPU" under load. Here a pause takes effect after the step in flight
 * (`active` stays true until then), starting while a loop is still finishing reuses that loop, and
 * a step's result is handed on only if its trainer is still the current one.
 */

/** T: what is trained (the demo's Trainer, train.ts, or a stand-in in tests); R: a step's result. */
export interface LoopHooks<T, R> {
  /** Runs one step of `trainer`. */
  step(trainer: T): Promise<R>;
  /** Runs after each step whose trainer is still current (it may await: the loop waits). */
  onStep(result: R, trainer: T): void | Promise<void>;
  /** A step or onStep failed: the loop has stopped. */
  onError(e: unknown): void;
  /** The loop has stopped (after a pause, or an error); no step is in flight. */
  onStop?(): void;
}

export class TrainingLoop<T, R> {
  /** Whether training should go on: the Train / Pause button's state. */
  private wanted = false;
  /** The loop while it runs (a step may still be in flight after a pause). */
  private running: Promise<void> | null = null;

  constructor(
    private current: T,
    private readonly hooks: LoopHooks<T, R>,
  ) {}

  get trainer(): T {
    return this.current;
  }

  /** Whether training was asked for (and not paused since). */
  get started(): boolean {
    return this.wanted;
  }

  /** Whether a loop is running: true from start() until the step in flight at a pause has returned. */
  get active(): boolean {
    return this.running !== null;
  }

  /** Starts stepping; a loop still finishing its last step after a pause carries on instead of a second one starting. */
  start(): void {
    this.wanted = true;
    if (this.running) return;
    this.running = this.loop()
      .catch((e: unknown) => {
        this.wanted = false;
        this.hooks.onError(e);
      })
      .finally(() => {
        this.running = null;
        if (this.wanted) this.start();
        else this.hooks.onStop?.();
      });
  }

  /** Stops after the step in flight (its result still counts: its trainer is current). */
  pause(): void {
    this.wanted = false;
  }

  /** Pauses and trains `trainer` from now on: a step of the old trainer still in flight is dropped when it returns. */
  replace(trainer: T): void {
    this.pause();
    this.current = trainer;
  }

  private async loop(): Promise<void> {
    while (this.wanted) {
      const trainer = this.current;
      const result = await this.hooks.step(trainer);
      if (trainer !== this.current) continue; // (Reset while it ran: the result is the old run's)
      await this.hooks.onStep(result, trainer);
    }
  }
}
