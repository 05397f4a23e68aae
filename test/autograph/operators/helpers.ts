/** Helpers the runtime operator tests share. */
import assert from "node:assert/strict";
import * as sc from "../../../src/api/index.js";

export type Any = any;
export const LOC = "user.ts:12:5";

/** The outcome of a thunk: its value, or the name of the error class it threw. */
export function outcome(f: () => unknown): { value?: unknown; error?: string } {
  try {
    return { value: f() };
  } catch (e) {
    return { error: (e as Error).constructor.name };
  }
}

export function sameOutcome(a: { value?: unknown; error?: string }, b: { value?: unknown; error?: string }, what: string): void {
  if (a.error || b.error) {
    assert.equal(a.error, b.error, what);
    return;
  }
  if (typeof a.value === "number" || typeof a.value === "string" || typeof a.value === "boolean" || typeof a.value === "bigint") {
    assert.ok(Object.is(a.value, b.value), `${what}: ${String(a.value)} vs ${String(b.value)}`);
  } else assert.deepEqual(a.value, b.value, what);
}

export const jsValues: unknown[] = [0, -0, 1, -7, 3, 2.5, NaN, Infinity, -Infinity, "", "a", "12", " 3 ", true, false, null, undefined, [], [1], [1, 2], {}, 10n, -3n];
export const show = (v: unknown) => (typeof v === "bigint" ? `${v}n` : typeof v === "string" ? JSON.stringify(v) : Array.isArray(v) ? `[${v.join(",")}]` : String(v));

export function graphOps(f: { concrete: (...a: Any[]) => sc.ConcreteFunction }, ...args: Any[]): string[] {
  const out: string[] = [];
  const walk = (g: Any) => {
    for (const n of g.nodes) {
      out.push(n.op);
      for (const r of n.regions) walk(r);
    }
  };
  walk(f.concrete(...args).graph);
  return out;
}

export const f32 = (v: Any) => sc.tensor(v);
export const near = (a: Any, b: Any, tol = 1e-5) => {
  const fa = [a].flat(Infinity) as number[];
  const fb = [b].flat(Infinity) as number[];
  assert.equal(fa.length, fb.length);
  fa.forEach((x, i) =>
    assert.ok((Number.isNaN(x) && Number.isNaN(fb[i]!)) || x === fb[i] || Math.abs(x - fb[i]!) <= tol * (1 + Math.abs(fb[i]!)), `${x} vs ${fb[i]} in ${JSON.stringify(a)} vs ${JSON.stringify(b)}`),
  );
};
