/**
 * Converted vs native with JS values: same result, console output and exception (type and
 * message), on deep copies of the same arguments.
 */
import assert from "node:assert/strict";
import { format } from "node:util";
import { autograph } from "../../src/autograph/api.js";

type AnyFn = (...args: any[]) => any;

interface Outcome {
  value?: unknown;
  error?: string;
  logs: string[];
}

function run(fn: AnyFn, args: unknown[]): Outcome {
  const logs: string[] = [];
  const original = console.log;
  console.log = (...a: unknown[]) => void logs.push(format(...a));
  try {
    return { value: fn(...args), logs };
  } catch (e) {
    return { error: e instanceof Error ? `${e.constructor.name}: ${e.message}` : `thrown ${String(e)}`, logs };
  } finally {
    console.log = original;
  }
}

/** Deep copy of arrays and plain objects (other values, functions included, are shared). */
function copy<T>(x: T): T {
  if (Array.isArray(x)) return x.map(copy) as T;
  if (x !== null && typeof x === "object" && Object.getPrototypeOf(x) === Object.prototype) {
    return Object.fromEntries(Object.entries(x).map(([k, v]) => [k, copy(v)])) as T;
  }
  return x;
}

/** Runs fn natively and converted on each input: same result, console output and exception. */
export function same(fn: AnyFn, inputs: unknown[][], scope?: Record<string, unknown>): void {
  const converted = autograph(fn, scope ? { scope } : {});
  assert.notEqual(converted, fn);
  for (const args of inputs) {
    const native = run(fn, copy(args));
    const conv = run(converted, copy(args));
    assert.deepStrictEqual(conv, native, `for arguments ${JSON.stringify(args)}:\n${autograph.toSource(fn)}`);
  }
}
