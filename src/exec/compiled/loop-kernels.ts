/**
 * Shared loop functions of the compiled executor: the elementwise loops, small products and
 * reductions of generated code (backends/cpu/js-loops.ts) as small functions of their arrays,
 * one function per distinct loop (its source and its arrays' dtypes), shared by every node,
 * segment, instance and compiled graph that needs that loop.
 *
 * Why not inline: V8 (Node 20) compiles a function with TurboFan only after it has run hot,
 * and the compile time of a segment holding dozens of loops is long (200-480 ms each, for the
 * 34 segments of an unrolled L2HMC step, one after another on the compiler thread), so a large
 * graph ran in the interpreter and baseline code for its first ~90 calls, 50x slower than
 * once optimized. A loop that recurs (unrolled steps, layers of the same shape, forward and
 * backward of the same product) is one small function here: called many times per graph call,
 * it warms up within a few calls, compiles in a few milliseconds, and does so once.
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
