/**
 * Loops of a large graph's generated code as functions (codegen.ts loopCall; a small graph's
 * stay inline, fastest once optimized): the elementwise loops, small products and reductions
 * (backends/cpu/js-loops.ts) were inlined in their segment, and V8
 * (Node 20) optimizes a function only once it has run hot: the 34 segments of an unrolled
 * L2HMC step each took 200-480 ms of TurboFan time (--trace-opt), one after another, so the
 * graph ran unoptimized for its first ~90 calls, 50x slower than once optimized. A loop that
 * recurs (unrolled steps, layers of one shape) is one small function instead, called many
 * times per graph call: it warms up in a few calls and compiles in a few milliseconds, once.
 *
 * A loop over an instance's fixed arrays (planned buffers, constants) is a function of that
 * instance naming them (codegen.ts): V8 folds the address and length of an array a single
 * closure holds, and a product with its arrays as arguments ran ~1.5x as long as with them
 * folded. A loop on no fixed array loses nothing by taking every array as an argument: it is
 * shared here by every graph.
 *
 * A small loop (config.sharedLoopWork element steps per call or fewer) takes every array as an
 * argument too, fixed or not, and is shared here: V8 optimizes a function once it has run enough
 * bytecode (3 ticks plus one per 150 bytes of its bytecode, a tick per 66 KB run, in Node 20), so
 * a function run once per graph call whose loops are short reaches TurboFan after ~500 calls
 * whatever its size. Named after their own planned buffers, the 237 loops of L2HMC at batch 1
 * (products of [1,2] by [2,10], chains over 2-10 elements) were 237 such functions, optimized
 * one after another from call 0 to call ~1,900 (--trace-opt): the graph ran at 0.65-0.9 ms a
 * call over its first 150 calls, 0.16 by call 450, 0.04 only past 1,000. Shared, they are 29
 * functions, each called many times per graph call: 0.08 ms by call 30, 0.04 by 150. What the
 * folding saves is a few instructions per loop, noise beside a call on loops this short; a
 * longer loop runs enough bytecode on its own to be optimized in a few calls, and keeps its
 * fixed arrays named.
 */
import { SCALAR_PRELUDE } from "../../backends/cpu/js-expr.js";

/** A shared loop: its arrays in, in the order the generated call passes them. */
export type LoopKernel = (...arrays: unknown[]) => void;

/** Distinct loops kept; past it a loop gets a function of its own (correct, only colder). */
const MAX_KERNELS = 4096;

const kernels = new Map<string, { fn: LoopKernel; source: string }>();
let created = 0;

/**
 * The function running `body` (a block of js-loops.ts source over the parameters $0..$n-1)
 * for arrays of `dtypes` (part of the key so each function sees one typed-array kind per
 * parameter and its property accesses stay monomorphic). `kind` names it in profiles.
 */
export function loopKernel(kind: string, body: string, dtypes: readonly string[]): { fn: LoopKernel; source: string } {
  const key = `${dtypes.join(",")}|${body}`;
  const hit = kernels.get(key);
  if (hit) return hit;
  const name = `${kind}${created++}`;
  const params = dtypes.map((_, i) => `$${i}`).join(", ");
  const source = `function ${name}(${params}) ${body}`;
  const fn = new Function(`"use strict";\n${SCALAR_PRELUDE}\nreturn ${source};`)() as LoopKernel;
  const k = { fn, source };
  if (kernels.size < MAX_KERNELS) kernels.set(key, k);
  return k;
}
