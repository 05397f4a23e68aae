/**
 * JavaScript semantics that converted code must keep (issue 11, point 10): native and converted
 * agree on the temporal dead zone, writes to `arguments`, a jump in a `finally` block that
 * cancels a pending return, recursion depth, functions named in `scope`, async functions.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as sc from "../../src/api/index.js";
import { autograph } from "../../src/autograph/api.js";
import { convertModule } from "../../src/autograph/transform/convert.js";
import { runCaptured } from "../util/differential.js";

type AnyFn = (...args: any[]) => any;

/** Native and converted give the same value or the same exception (type and message). */
function same(fn: AnyFn, inputs: unknown[][], scope?: Record<string, unknown>): void {
  const converted = autograph(fn, scope ? { scope } : {});
  for (const args of inputs) {
    const native = runCaptured(() => fn(...args));
    const conv = runCaptured(() => converted(...args));
    assert.deepStrictEqual(conv, native, `for arguments ${JSON.stringify(args)}:\n${autograph.toSource(fn)}`);
  }
}

test("TDZ: a let read before its declaration throws ReferenceError, also when the lowering moves the declaration", () => {
  same(
    function (x: number) {
      if (x > 0) {
        // @ts-expect-error -- read in its temporal dead zone on purpose
        return y;
      }
      let y = 2;
      return y + x;
    },
    [[1], [-1]],
  );
  same(
    function (x: number) {
      const read = () => later;
      if (x > 5) return read();
      const later = x * 2;
      if (x > 2) return typeof later;
      return read();
    },
    [[1], [3], [9]],
  );
  // `let y;` without an initializer: y is undefined once its declaration has run.
  same(
    function (x: number) {
      // @ts-expect-error -- read in its temporal dead zone on purpose
      if (x > 0) return typeof y;
      let y;
      return [y, typeof y];
    },
    [[1], [0]],
  );
});

test("assigning arguments[i] converts (in strict module code too) and writes the arguments object", () => {
  same(
    function (a: number, b: number) {
      // eslint-disable-next-line prefer-rest-params
      arguments[0] = 10;
      // eslint-disable-next-line prefer-rest-params
      arguments[1] += 5;
      // eslint-disable-next-line prefer-rest-params
      return [a, b, arguments[0], arguments[1], arguments.length];
    },
    [[1, 2]],
  );
  // Sloppy code: the arguments object aliases the parameters.
  const sloppy = new Function("a", "arguments[0] = 7; arguments[0]++; return [a, arguments[0]];") as AnyFn;
  same(sloppy, [[1]]);
  // A module (strict): `arguments = ...` would be a SyntaxError; the generated code must parse.
  const out = convertModule("export function f(a) { arguments[0] = 5; arguments[0] += 1; return [a, arguments[0]]; }", { filename: "/m/args.js" });
  assert.doesNotMatch(out.code, /arguments =/);
  assert.doesNotThrow(() => new Function(out.code.replace(/^import .*$/m, "").replace(/^export /gm, "")));
});

test("continue or break in a finally block cancels the try block's pending return", () => {
  same(
    function (n: number) {
      const log: string[] = [];
      for (let i = 0; i < n; i++) {
        try {
          log.push(`try ${i}`);
          return [i, log];
        } finally {
          log.push(`finally ${i}`);
          if (i < 2) continue;
        }
      }
      return [-1, log];
    },
    [[0], [1], [4]],
  );
  same(
    function (xs: number[]) {
      let out = 0;
      for (const x of xs) {
        try {
          if (x > 2) return x;
          out += x;
        } finally {
          if (x === 3) break;
        }
      }
      return -out;
    },
    [[[1, 3, 5]], [[1, 5, 3]], [[1, 2]]],
  );
});

test("converted recursion goes nearly as deep as native recursion", () => {
  function down(n: number): number {
    if (n <= 0) return 0;
    return 1 + down(n - 1);
  }
  const ternary = (n: number): number => (n <= 0 ? 0 : 1 + ternary(n - 1));
  /** The largest depth that does not overflow the stack (binary search). */
  const maxDepth = (f: (n: number) => number): number => {
    let lo = 10;
    let hi = 1 << 20;
    while (hi - lo > 8) {
      const m = (lo + hi) >>> 1;
      try {
        f(m);
        lo = m;
      } catch (e) {
        assert.ok(e instanceof RangeError, String(e));
        hi = m;
      }
    }
    return lo;
  };
  for (const [f, scope] of [
    [down, { down }],
    [ternary, { ternary }],
  ] as const) {
    const converted = autograph(f as AnyFn, { scope });
    assert.equal(converted(100), 100);
    const native = maxDepth(f);
    const conv = maxDepth(converted);
    // Before: about a tenth of native (a call went through three runtime frames and each `if` through two).
    assert.ok(conv >= native / 3, `${f.name}: converted recursion overflows at depth ${conv}, native at ${native}`);
  }
});

test("a scope given to sc.autograph reaches the functions it names: mutual recursion over tensors is converted", () => {
  function isEven(k: number): boolean {
    if (k === 0) return true;
    return isOdd(k - 1);
  }
  function isOdd(k: number): boolean {
    if (k === 0) return false;
    return isEven(k - 1);
  }
  const even = autograph(isEven, { scope: { isEven, isOdd } });
  assert.equal(even(7), false);
  // Eager tensors: isOdd is converted too (unconverted, `k === 0` on a tensor is never true and
  // the recursion never ends).
  assert.equal(even(sc.scalar(6) as unknown as number), true);
  assert.equal(even(sc.scalar(5) as unknown as number), false);
});

test("staged mutual recursion on an int32 counter returning float32 scalars: the recursive calls' type is found (it guessed int32 only, an error)", () => {
  function evenness(n: any): any {
    return n <= 0 ? sc.scalar(1) : oddness(n - 1);
  }
  function oddness(n: any): any {
    return n <= 0 ? sc.scalar(0) : evenness(n - 1);
  }
  const staged = sc.stage(evenness);
  for (const [n, want] of [[7, 0], [6, 1], [0, 1], [1, 0]] as const) {
    const r = staged(sc.scalar(n, "int32")) as sc.Tensor;
    assert.equal(r.dtype, "float32");
    assert.equal(r.item(), want, `evenness(${n})`);
  }
});

test("async functions and generators are left alone by sc.autograph and by converted code calling them", async () => {
  async function later(x: number) {
    return x > 0 ? "pos" : "neg";
  }
  assert.equal(autograph(later), later);
  const caller = autograph(function (x: number) {
    return later(x);
  }, { scope: { later } });
  assert.equal(await caller(2), "pos");
  function* gen(n: number) {
    for (let i = 0; i < n; i++) yield i;
  }
  assert.equal(autograph(gen), gen);
});
