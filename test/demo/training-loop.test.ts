/**
 * The demo page's training loop (demo/web/training-loop.ts) with steps whose completion the test
 * decides, so the interleaving behind test/browser/demo-webgpu.test.ts's one-in-five failure is
 * forced, not hoped for: a step still in flight when Pause, Reset and Train are pressed, returning
 * after all three. Before the loop was its own piece, that late step's loss went into the new run
 * (the browser test then compared WebGPU's step i with the CPU's step i-1) and its loop went on
 * stepping beside the new one.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { TrainingLoop } from "../../demo/web/training-loop.js";

/** A trainer whose steps return when the test resolves them. */
class FakeTrainer {
  readonly pending: ((loss: number) => void)[] = [];
  inFlight = 0;
  maxInFlight = 0;
  constructor(readonly name: string) {}
  step(): Promise<number> {
    this.inFlight++;
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
    return new Promise((resolve) =>
      this.pending.push((loss) => {
        this.inFlight--;
        resolve(loss);
      }),
    );
  }
  /** Resolves the oldest step in flight with `loss`. */
  finish(loss: number): void {
    const next = this.pending.shift();
    assert.ok(next, `${this.name} has a step in flight`);
    next(loss);
  }
}

/** Lets every promise reaction queued so far run (a step's result reaching the loop and beyond). */
const settle = () => new Promise((resolve) => setTimeout(resolve, 0));

function harness(first: FakeTrainer) {
  const recorded: [string, number][] = [];
  const errors: unknown[] = [];
  let stops = 0;
  const loop = new TrainingLoop<FakeTrainer, number>(first, {
    step: (t) => t.step(),
    onStep: (loss, t) => void recorded.push([t.name, loss]),
    onError: (e) => void errors.push(e),
    onStop: () => void stops++,
  });
  return { loop, recorded, errors, stops: () => stops };
}

test("a step in flight across Pause, Reset and Train is dropped, and only one loop steps the new trainer", async () => {
  const a = new FakeTrainer("a");
  const b = new FakeTrainer("b");
  const h = harness(a);
  h.loop.start();
  a.finish(1);
  await settle();
  assert.equal(a.pending.length, 1, "the second step of a is in flight");

  h.loop.pause();
  assert.equal(h.loop.active, true, "paused, but a's step is still in flight");
  h.loop.replace(b); // Reset
  h.loop.start(); // Train again, before a's step has returned
  await settle();
  assert.equal(b.pending.length, 0, "b waits for the loop that is still finishing a's step");

  a.finish(99); // the late step of the discarded run
  await settle();
  assert.equal(b.pending.length, 1, "the same loop goes on with b");
  b.finish(10);
  await settle();
  b.finish(11);
  await settle();
  h.loop.pause();
  b.finish(12);
  await settle();

  assert.deepEqual(h.recorded, [["a", 1], ["b", 10], ["b", 11], ["b", 12]]);
  assert.equal(b.maxInFlight, 1, "never two steps of b at once (two loops)");
  assert.equal(a.pending.length + b.pending.length, 0);
  assert.equal(h.loop.active, false);
  assert.equal(h.stops(), 1, "one stop, after the last step in flight returned");
  assert.deepEqual(h.errors, []);
});

test("a pause takes effect after the step in flight, which still counts", async () => {
  const a = new FakeTrainer("a");
  const h = harness(a);
  h.loop.start();
  assert.equal(h.loop.active, true);
  h.loop.pause();
  assert.equal(h.loop.started, false);
  assert.equal(h.loop.active, true, "a step is in flight");
  a.finish(3);
  await settle();
  assert.equal(h.loop.active, false);
  assert.deepEqual(h.recorded, [["a", 3]]);
  assert.equal(a.pending.length, 0, "no step after the pause");
  assert.equal(h.stops(), 1);
});

test("pausing and resuming while a step is in flight keeps one loop", async () => {
  const a = new FakeTrainer("a");
  const h = harness(a);
  h.loop.start();
  h.loop.pause();
  h.loop.start();
  a.finish(1);
  await settle();
  a.finish(2);
  await settle();
  h.loop.pause();
  a.finish(3);
  await settle();
  assert.deepEqual(h.recorded, [["a", 1], ["a", 2], ["a", 3]]);
  assert.equal(a.maxInFlight, 1);
  assert.equal(h.stops(), 1);
});

test("a failing step stops the loop and is reported once", async () => {
  const errors: unknown[] = [];
  const failing = new TrainingLoop<{ name: string }, number>({ name: "bad" }, {
    step: () => Promise.reject(new Error("device lost")),
    onStep: () => assert.fail("no step succeeded"),
    onError: (e) => void errors.push(e),
  });
  failing.start();
  await settle();
  assert.equal(failing.active, false);
  assert.equal(failing.started, false);
  assert.equal(errors.length, 1);
  assert.match(String(errors[0]), /device lost/);
});
