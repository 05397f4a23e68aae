/**
 * Waiting for the garbage collector to free remote handles (the tests of handles freed when
 * their local tensors are collected): forces collections until the worker's count of handles
 * reaches a target.
 */
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";

setFlagsFromString("--expose-gc");
const gc = runInNewContext("gc") as () => void;

/** Collects until `count()` reaches `target` (or 50 rounds of 20 ms pass); returns the last count. */
export async function collectUntil(count: () => Promise<number>, target: number): Promise<number> {
  let now = await count();
  for (let round = 0; round < 50 && now > target; round++) {
    gc();
    await new Promise((r) => setTimeout(r, 20));
    now = await count();
  }
  return now;
}
