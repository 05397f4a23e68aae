/**
 * AutoGraph source transform: generated code of each converter on small snippets (before/after),
 * behaviour of converted vs native code with JS values (same result, console output and
 * exception type), the run-time API (sc.autograph, toSource, convertForStage, ag.call converting
 * callees), module conversion and the Babel plugin, and errors and source maps pointing at the
 * original code.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { format } from "node:util";
import { readFileSync, writeFileSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import * as babel from "@babel/core";
import * as sc from "../src/api/index.js";
import { autograph, convertForStage } from "../src/autograph/api.js";
import { AutoGraphError, getConverted } from "../src/autograph/operators/index.js";
import { convertFunctionSource, convertModule, ConversionError } from "../src/autograph/transform/convert.js";
import autographBabelPlugin from "../src/autograph/babel-plugin.js";

type AnyFn = (...args: any[]) => any;

const THIS_FILE = fileURLToPath(import.meta.url);
const THIS_SOURCE = readFileSync(THIS_FILE, "utf8").split("\n");
/** 1-based line of the line of this file containing `marker`. */
function lineOf(marker: string): number {
  const i = THIS_SOURCE.findIndex((l) => l.includes(marker) && !l.includes("lineOf("));
  assert.ok(i >= 0, `marker ${marker} not found`);
  return i + 1;
}

/**
 * The generated code of a function's source, whitespace collapsed: the staged form (the `ag`
 * contract), without the native copies `if` and `?:` also get (tested on their own below).
 */
function gen(src: string, nativeCopies = false): string {
  return squash(convertFunctionSource(src, { filename: "t.js", line: 1, column: 0, nativeCopies }).code);
}
const squash = (s: string) => s.replace(/\s+/g, " ").trim();

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
function same(fn: AnyFn, inputs: unknown[][], scope?: Record<string, unknown>): void {
  const converted = autograph(fn, scope ? { scope } : {});
  assert.notEqual(converted, fn);
  for (const args of inputs) {
    const native = run(fn, copy(args));
    const conv = run(converted, copy(args));
    assert.deepStrictEqual(conv, native, `for arguments ${JSON.stringify(args)}:\n${autograph.toSource(fn)}`);
  }
}

// ---------------------------------------------------------------------------------------------
// generated code (before/after)

test("control-flow converter: if/else and the ternary", () => {
  assert.equal(
    gen("function f(x) { let y = 0; if (x > 0) { y = 1; } else { y = 2; } return y; }"),
    'function f(x) { let y = 0; ag.ifStmt(ag.gt(x, 0), () => { y = 1; }, () => { y = 2; }, () => [y], $s => { [y] = $s; }, ["y"], "t.js:1:28"); return y; }',
  );
  // t is modified in the branch but not live after it: not part of the state; no else: null.
  assert.equal(
    gen("function f(x) { let y = 0; let t; if (x) { t = 1; y = t; } return y; }"),
    'function f(x) { let y = 0; let t; ag.ifStmt(x, () => { t = 1; y = t; }, null, () => [y], $s => { [y] = $s; }, ["y"], "t.js:1:35"); return y; }',
  );
  assert.equal(gen("(c, a, b) => c ? a : b"), '(c, a, b) => ag.ifExp(c, () => a, () => b, "t.js:1:14")');
  // A const object modified through a member is carried but not reassigned (the runtime rewrites it in place).
  assert.equal(
    gen("function f(c) { const o = { a: 0 }; if (c) o.a = 1; return o; }"),
    'function f(c) { const o = { a: 0 }; ag.ifStmt(c, () => { o.a = 1; }, null, () => [o], () => {}, ["o"], "t.js:1:37"); return o; }',
  );
});

test("control-flow converter: a variable read by the other branch is carried (restored between staged branches)", () => {
  const code = gen("function f(n) { let flag = false; let r = 0; if (n < 2) { flag = true; r = 1; } else { if (!flag) r = 2; } return r; }");
  assert.match(code, /\}, \(\) => \[flag, r\], \$s => \{ \[flag, r\] = \$s; \}, \["flag", "r"\], "t\.js:1:46"\); return r; \}$/);
});

test("loops converter: while, do-while (body once, then as while), for with break, for-of with continue", () => {
  assert.equal(
    gen("function f(n) { let i = 0; while (i < n) { i += 1; } return i; }"),
    'function f(n) { let i = 0; ag.whileStmt(() => ag.lt(i, n), () => { i = ag.add(i, 1); }, () => [i], $s => { [i] = $s; }, ["i"], "t.js:1:28"); return i; }',
  );
  assert.equal(
    gen("function f(n) { let i = 0; do { i++; } while (i < n); return i; }"),
    'function f(n) { let i = 0; { typeof i === "object" ? i = ag.sub(i, -1) : ++i; } ag.whileStmt(() => ag.lt(i, n), () => { typeof i === "object" ? i = ag.sub(i, -1) : ++i; }, () => [i], $s => { [i] = $s; }, ["i"], "t.js:1:28"); return i; }',
  );
  assert.equal(
    gen("function f(n) { let s = 0; for (let i = 0; i < n; i++) { if (i === 3) break; s += i; } return s; }"),
    "function f(n) { let s = 0; { let i = 0; let $brk = false; " +
      "ag.whileStmt(() => ag.and(() => ag.not($brk), () => ag.lt(i, n)), () => { " +
      'ag.ifStmt(ag.eq(i, 3), () => { $brk = true; }, () => { s = ag.add(s, i); }, () => [s, $brk], $s => { [s, $brk] = $s; }, ["s", "$brk"], "t.js:1:58"); ' +
      'ag.ifStmt(ag.not($brk), () => { typeof i === "object" ? i = ag.sub(i, -1) : ++i; }, null, () => [i], $s => { [i] = $s; }, ["i"], "t.js:1:51"); ' +
      '}, () => [s, i, $brk], $s => { [s, i, $brk] = $s; }, ["s", "i", "$brk"], "t.js:1:28"); } return s; }',
  );
  assert.equal(
    gen("function f(xs) { let s = 0; for (const x of xs) { if (x < 0) continue; s += x; } return s; }"),
    "function f(xs) { let s = 0; ag.forOf(xs, x => { let $cont = false; " +
      'ag.ifStmt(ag.lt(x, 0), () => { $cont = true; }, () => { s = ag.add(s, x); }, () => [s], $s => { [s] = $s; }, ["s"], "t.js:1:51"); ' +
      '}, () => [s], $s => { [s] = $s; }, ["s"], "t.js:1:29"); return s; }',
  );
});

test("loops converter: per-iteration copies of loop-head let bindings captured by closures", () => {
  assert.equal(
    gen("function f() { const fs = []; for (let i = 0; i < 2; i++) fs.push(() => i); return fs; }"),
    // (fs, pushed to, becomes let: a staged loop would make it a tensor list and rebind it.)
    "function f() { let fs = []; { let i = 0; ag.whileStmt(() => ag.lt(i, 2), () => { " +
      'let $i = i; { let i = $i; ag.callMethod(fs, "push", [() => i]); $i = i; } i = $i; typeof i === "object" ? i = ag.sub(i, -1) : ++i; ' +
      '}, () => [fs, i], $s => { [fs, i] = $s; }, ["fs", "i"], "t.js:1:31"); } return fs; }',
  );
  // Without a closure capturing i there is no copy.
  assert.doesNotMatch(gen("function f() { let s = 0; for (let i = 0; i < 2; i++) s += i; return s; }"), /\$i/);
});

test("jumps converter: return lowered to flags (the rest goes into the other branch), return from a loop", () => {
  assert.equal(
    gen("function f(x) { if (x > 0) { return 1; } return 2; }"),
    "function f(x) { let $ret = false, $retval; " +
      'ag.ifStmt(ag.gt(x, 0), () => { $retval = 1; $ret = true; }, () => { $retval = 2; $ret = true; }, () => [$retval], $s => { [$retval] = $s; }, ["$retval"], "t.js:1:17"); ' +
      "return ag.retval($retval); }",
  );
  assert.equal(
    gen("function f(xs) { for (const x of xs) { if (x) return x; } return null; }"),
    "function f(xs) { let $ret = false, $retval; ag.forOf(xs, x => { " +
      'ag.ifStmt(x, () => { $retval = ag.ret(x); $ret = true; }, null, () => [$ret, $retval], $s => { [$ret, $retval] = $s; }, ["$ret", "$retval"], "t.js:1:40"); ' +
      '}, () => [$ret, $retval], $s => { [$ret, $retval] = $s; }, ["$ret", "$retval"], "t.js:1:18", () => ag.not($ret)); ' +
      'ag.ifStmt(ag.not($ret), () => { $retval = null; $ret = true; }, null, () => [$retval], $s => { [$retval] = $s; }, ["$retval"], "t.js:1:59"); ' +
      "return ag.retval($retval); }",
  );
  // Control can reach the end: the final return checks that no staged condition decides it.
  assert.match(gen("function f(x) { if (x > 0) return x; }"), /return ag\.retval\(\$retval, \$ret, "t\.js:1:1"\); \}$/);
  assert.match(gen("function f(x) { while (true) { if (x > 9) return x; x++; } }"), /return ag\.retval\(\$retval\); \}$/);
  // A return outside any converted construct stays native.
  assert.equal(gen("function f(x) { const y = x; return y; }"), "function f(x) { const y = x; return y; }");
});

test("jumps converter: labeled continue stops the inner loop and runs the outer update", () => {
  const code = gen("function f(n) { let c = 0; outer: for (let i = 0; i < n; i++) { for (let j = 0; j < n; j++) { if (j > i) continue outer; c++; } } return c; }");
  assert.match(code, /ag\.whileStmt\(\(\) => ag\.and\(\(\) => ag\.not\(\$cont\), \(\) => ag\.lt\(j, n\)\)/);
  assert.match(code, /let \$cont = false;/);
  assert.doesNotMatch(code, /outer:/);
});

test("jumps converter: jumps out of a switch or for...in under a converted if are re-issued natively", () => {
  const code = gen("function f(xs) { let n = 0; for (const k in xs) { switch (xs[k]) { case 0: if (n > 2) break; n++; break; default: n += 2; } } return n; }");
  assert.match(code, /for \(const k in xs\) \{ let \$brk = false; \$L: switch \(ag\.switchValue\(ag\.getItem\(xs, k\), "t\.js:1:51"\)\)/);
  assert.match(code, /if \(\$brk === true \|\| \$brk !== false && ag\.assertOrThrow\(true, \(\) => new TypeError\("autograph: a jump/);
  assert.match(code, /break \$L;/);
});

test("logical converter: && || ?? with thunks, ! as ag.not", () => {
  assert.equal(gen("(a, b) => (a && b || !a) ?? b"), "(a, b) => ag.nullish(() => ag.or(() => ag.and(() => a, () => b), () => ag.not(a)), () => b)");
});

test("operators converter: arithmetic, comparison, unary, compound assignment, ++/--", () => {
  assert.equal(gen("(a, b) => -a + b * 2 - (a % b) ** 2 <= +b"), "(a, b) => ag.le(ag.sub(ag.add(ag.neg(a), ag.mul(b, 2)), ag.pow(ag.mod(a, b), 2)), ag.pos(b))");
  assert.equal(gen("(a, b) => a === b || a != b || a instanceof b || -1"), "(a, b) => ag.or(() => ag.or(() => ag.or(() => ag.eq(a, b), () => ag.looseNe(a, b)), () => a instanceof b), () => -1)");
  assert.equal(
    gen("function f(x, o) { x += 1; o.p *= 2; x++; return x--; }"),
    'function f(x, o) { let $t; x = ag.add(x, 1); o.p = ag.mul(o.p, 2); typeof x === "object" ? x = ag.sub(x, -1) : ++x; return typeof x === "object" ? ($t = ag.sub(x, 0), x = ag.sub($t, 1), $t) : x--; }',
  );
  // A complex object is evaluated once.
  assert.equal(gen("function f(g) { g().p += 1; }"), "function f(g) { let $o; ($o = ag.callee(g)()).p = ag.add($o.p, 1); }");
});

test("indexing converter: reads, writes (functional update rebinding x), nested and compound writes", () => {
  assert.equal(gen("(x, i, j) => x[i][j]"), "(x, i, j) => ag.getItem(ag.getItem(x, i), j)");
  assert.equal(
    gen("function f(x, i, v) { x[i] = v; x[i][0] += v; return x; }"),
    "function f(x, i, v) { let $k, $c; x = ag.setItem(x, i, v); $k = i, $c = ag.getItem(x, $k), x = ag.setItem(x, $k, ag.setItem($c, 0, ag.add(ag.getItem($c, 0), v))); return x; }",
  );
  // A container that is not a local variable is written back only when setItem made a new value.
  assert.equal(gen("function f(o, v) { o.w[0] = v; return o; }"), "function f(o, v) { let $c, $r; $c = o.w, $r = ag.setItem($c, 0, v), $r !== $c && (o.w = $r); return o; }");
  // const x with element writes becomes let (so a tensor can be rebound).
  assert.match(gen("function f(v) { const x = [0]; x[0] = v; return x; }"), /let x = \[0\]; x = ag\.setItem\(x, 0, v\);/);
});

test("calls converter: ag.callee and ag.callMethod (arguments with effects in a thunk, so the method is read first)", () => {
  assert.equal(
    gen("function f(o, g) { g(1); o.m(2, ...o.rest); return o.n(g(3)); }"),
    'function f(o, g) { ag.callee(g)(1); ag.callMethod(o, "m", () => [2, ...o.rest]); return ag.callMethod(o, "n", () => [ag.callee(g)(3)]); }',
  );
  assert.equal(gen("(o, k) => o[k](1)"), "(o, k) => ag.callMethod(o, k, [1])");
});

test("logging, asserts and math converters", () => {
  assert.equal(gen("function f(x) { console.log('x is', x); }"), "function f(x) { ag.print('x is', x); }");
  assert.equal(
    gen("function f(x) { if (x < 0) throw new RangeError('negative'); return x; }"),
    "function f(x) { ag.assertOrThrow(ag.lt(x, 0), () => new RangeError('negative'), \"t.js:1:17\"); return x; }",
  );
  assert.equal(gen("(x, y) => Math.max(Math.exp(x), y) + Math.PI"), "(x, y) => ag.add(ag.math.max(ag.math.exp(x), y), Math.PI)");
  // A local `Math` or `console` is not the global one.
  assert.equal(gen("(Math) => Math.exp(1)"), 'Math => ag.callMethod(Math, "exp", [1])');
});

test("var declarations are hoisted out of branch and loop closures; a function using `ag` gets another name for the operators", () => {
  assert.match(gen("function f(c) { if (c) { var v = 1; } return v; }"), /^function f\(c\) \{ var v; ag\.ifStmt\(c, \(\) => \{ v = 1; \}/);
  const code = gen("function f(ag) { return ag + 1; }");
  assert.equal(code, "function f(ag) { return ag2.add(ag, 1); }");
  assert.equal(convertFunctionSource("function f(ag) { return ag + 1; }", { filename: "t.js" }).agName, "ag2");
});

// ---------------------------------------------------------------------------------------------
// behaviour: converted vs native with JS values

test("if / else if / else, nested branches, the ternary and a variable assigned in one branch", () => {
  same(
    function (x: number) {
      let r = "";
      let only;
      if (x > 10) r = "big";
      else if (x > 0) {
        r = "small";
        if (x % 2 === 0) r += " even";
        else r += " odd";
      } else {
        only = x < -5 ? "very negative" : "negative";
        r = only;
      }
      return [r, only];
    },
    [[20], [3], [4], [-1], [-9]],
  );
});

test("loops: while, do-while, for with continue (the update still runs), for-of over arrays, strings, Maps and generators", () => {
  same(
    function (n: number) {
      let i = 0;
      let s = 0;
      while (i < n) {
        i++;
        if (i % 3 === 0) continue;
        s += i;
      }
      let j = 0;
      do j += 2;
      while (j < n);
      let t = 0;
      for (let k = 0; k < n; k++) {
        if (k % 2) continue;
        t += k;
      }
      return [i, s, j, t];
    },
    [[0], [1], [7]],
  );
  same(
    function (xs: number[], word: string) {
      const out: unknown[] = [];
      for (const x of xs) out.push(x * 2);
      for (const ch of word) out.push(ch);
      for (const [k, v] of new Map([["a", 1], ["b", 2]])) out.push(k + v);
      function* gen() {
        yield 1;
        yield 2;
        yield 3;
      }
      for (const g of gen()) {
        if (g === 2) continue;
        out.push(g);
      }
      return out;
    },
    [[[1, 2, 3], "hé"], [[], ""]],
  );
});

test("break leaves a for-of early and closes the iterator; an endless generator is fine", () => {
  same(
    function () {
      const log: string[] = [];
      function* naturals() {
        try {
          for (let i = 0; ; i++) yield i;
        } finally {
          log.push("closed");
        }
      }
      let s = 0;
      for (const v of naturals()) {
        if (v > 4) break;
        s += v;
      }
      return [s, log];
    },
    [[]],
  );
});

test("labeled break and continue across nested loops; return from inside nested loops", () => {
  same(
    function (n: number) {
      const pairs: string[] = [];
      outer: for (let i = 0; i < n; i++) {
        for (let j = 0; j < n; j++) {
          if (j > i) continue outer;
          if (i + j > 4) break outer;
          pairs.push(`${i}${j}`);
        }
      }
      return pairs;
    },
    [[0], [3], [6]],
  );
  same(
    function (m: number[][], t: number) {
      for (let r = 0; r < m.length; r++) {
        for (const v of m[r]!) {
          if (v === t) return [r, v];
        }
      }
      return null;
    },
    [[[[1, 2], [3, 4]], 3], [[[1]], 9]],
  );
});

test("closures created in loops capture per-iteration bindings", () => {
  same(
    function () {
      const fs: (() => number)[] = [];
      for (let i = 0; i < 3; i++) {
        fs.push(() => i * 10);
        if (i === 1) continue;
      }
      const gs: (() => number)[] = [];
      for (const v of [7, 8]) gs.push(() => v);
      let k = 0;
      const hs: (() => number)[] = [];
      while (k < 2) {
        const captured = k;
        hs.push(() => captured);
        k++;
      }
      return [...fs, ...gs, ...hs].map((f) => f());
    },
    [[]],
  );
});

test("switch with break, fall-through, continue and return; for...in with break and continue under converted ifs", () => {
  same(
    function (xs: number[]) {
      let n = 0;
      const seen: string[] = [];
      for (const v of xs) {
        switch (v) {
          // @ts-expect-error -- falls through to case 1 on purpose (noFallthroughCasesInSwitch)
          case 0:
            if (n > 2) break;
            n += 1;
          // falls through
          case 1:
            n += 10;
            break;
          case 2:
            if (n > 5) continue;
            n += 100;
            break;
          case 9:
            if (v === 9) return ["early", n];
            break;
          default:
            n -= 1;
        }
        seen.push(String(v));
      }
      const o: Record<string, number> = { a: 1, b: 2, c: 3, d: 4 };
      let keys = "";
      for (const k in o) {
        if (o[k] === 2) continue;
        if (o[k] === 4) break;
        keys += k;
      }
      return [n, seen, keys];
    },
    [[[0, 1, 2, 3]], [[0, 0, 0, 0, 2, 2]], [[1, 9, 0]]],
  );
});

test("labeled blocks, try/catch/finally with jumps (a return or break in finally wins over an exception)", () => {
  same(
    function (x: number) {
      const log: string[] = [];
      block: {
        if (x > 1) break block;
        log.push("in block");
      }
      const f = () => {
        try {
          log.push("try");
          if (x > 0) throw new Error("x");
          return "from try";
        } finally {
          log.push("finally");
          if (x > 5) return "from finally";
        }
      };
      let r: unknown;
      try {
        r = f();
      } catch (e) {
        r = `caught ${(e as Error).message}`;
      }
      let i = 0;
      for (; i < 5; i++) {
        try {
          if (i === 2) throw new Error("lost");
        } finally {
          if (i === 2) break;
        }
      }
      return [r, log, i];
    },
    [[0], [2], [9]],
  );
});

test("logical operators keep JavaScript's laziness and operand values", () => {
  same(
    function (a: unknown, b: unknown) {
      const log: string[] = [];
      const t = (v: unknown, name: string) => (log.push(name), v);
      const r1 = t(a, "a") && t(b, "b");
      const r2 = t(a, "a") || t(b, "b");
      const r3 = t(a, "a") ?? t(b, "b");
      const r4 = !t(a, "a");
      return [r1, r2, r3, r4, log];
    },
    [[0, 5], [3, ""], [null, "x"], [undefined, 0], [NaN, 1]],
  );
});

test("operators on JS values: strings, coercion, NaN and -0, compound assignment, ++/-- on strings and properties", () => {
  same(
    function (a: any, b: any) {
      let s = a;
      s += b;
      let n = a;
      n++;
      let m = b;
      const old = m--;
      const o = { p: a, q: [b] };
      o.p *= 2;
      o.q[0] += "!";
      o.q[0]++;
      return [a + b, a - b, a * b, a / b, a % b, a ** 2, a < b, a <= b, a > b, a >= b, a === b, a !== b, a == b, a != b, -a, +b, s, n, m, old, o];
    },
    [[1, 2], ["5", 3], [-0, 0], [NaN, "x"], [null, undefined], ["a", "b"], [7, "7"]],
  );
});

test("getters and evaluation order: o.m(args) reads the method first, compound assignment reads before the right side", () => {
  same(
    function () {
      const log: string[] = [];
      const o = {
        v: 1,
        get m() {
          log.push("get m");
          return (x: number) => x + this.v;
        },
        get p() {
          log.push("get p");
          return this.v;
        },
        set p(x: number) {
          log.push(`set p ${x}`);
          this.v = x;
        },
      };
      const arg = (x: number) => (log.push(`arg ${x}`), x);
      const r = o.m(arg(1));
      o.p += arg(2);
      const arr = [1, 2, 3];
      arr[arg(0)] += arg(10);
      return [r, o.v, arr, log];
    },
    [[]],
  );
});

test("index reads and writes on arrays and objects; the value of an assignment expression", () => {
  same(
    function (xs: number[], k: string) {
      const m = [[1, 2], [3, 4]];
      m[1]![0] = 30;
      m[0]![1] += 5;
      const obj: Record<string, number> = { a: 1 };
      obj[k] = 2;
      const v = (xs[0] = 9);
      const frozen = Object.freeze({ inner: [0, 0] });
      frozen.inner[1] = 7;
      let last = xs[xs.length - 1];
      xs[1]!++;
      return [m, obj, v, xs, frozen.inner, last, m[1]![0]! + m[0]![1]!];
    },
    [[[1, 2, 3], "b"], [[5, 6], "a"]],
  );
});

test("calls: this in methods, spread arguments, nested function declarations, recursion", () => {
  same(
    function (n: number) {
      const counter = {
        count: 0,
        add(k: number) {
          if (k > 0) this.count += k;
          return this;
        },
      };
      counter.add(2).add(-1).add(n);
      function fact(k: number): number {
        if (k <= 1) return 1;
        return k * fact(k - 1);
      }
      const max = Math.max(...[3, n, 1]);
      return [counter.count, fact(n), max];
    },
    [[0], [5]],
  );
});

test("console.log output and exceptions (if-throw) are the same", () => {
  same(
    function (x: number) {
      console.log("start", x, { x });
      for (let i = 0; i < 2; i++) console.log("i =", i);
      if (x < 0) throw new RangeError(`negative: ${x}`);
      if (x === 0) throw "zero";
      console.log("done");
      return Math.sqrt(x) + Math.abs(-x);
    },
    [[4], [-1], [0]],
  );
});

test("shadowing, TDZ-free hoisting of declarations that earlier closures see, and names like the generated ones", () => {
  same(
    function (n: number) {
      const ag = n * 2;
      let $brk = 0;
      let $ret = 1;
      const read = () => later;
      if (n > 3) return [ag, $brk, $ret, "early"];
      const later = n + 100;
      let x = 1;
      {
        let x = 2;
        x += n;
        $brk += x;
      }
      for (let i = 0; i < n; i++) {
        if (i === 1) continue;
        $ret += i;
      }
      return [ag, $brk, $ret, x, read()];
    },
    [[1], [3], [5]],
  );
});

test("assorted syntax: for-of targets and destructuring, var loops, do-while with continue, optional chains, templates, typeof/delete/in", () => {
  same(
    function (pairs: [number, string][], o: any) {
      const out: unknown[] = [];
      let last: unknown;
      const box = { v: 0 };
      for (last of [1, 2]) out.push(last);
      for (box.v of [3, 4]) out.push(box.v);
      for (const [n, s] of pairs) out.push(`${s}=${n * 2}`);
      for (const { length } of ["ab", "c"]) out.push(length);
      const fs: (() => number)[] = [];
      for (var i = 0; i < 3; i++) fs.push(() => i);
      out.push(fs.map((f) => f()), i);
      let j = 0;
      do {
        j++;
        if (j === 2) continue;
        out.push(`j${j}`);
      } while (j < 4);
      out.push(o?.a?.b, o?.list?.[1], o?.fn?.(2), o.missing?.());
      // @ts-expect-error -- an undeclared variable: typeof does not throw
      const undeclaredType = typeof undeclaredVariable;
      out.push(undeclaredType, typeof o, "a" in o, delete o.a, void 0, (j++, j));
      let u: any = null;
      u ??= 5;
      let w: any = 0;
      w ||= 7;
      w &&= w + 1;
      out.push(u, w, [1, 2, 3].map((x) => (x % 2 ? x : -x)), new Date(0).getTime(), String.raw`a${1 + 1}b`);
      return out;
    },
    [[[[1, "a"], [2, "b"]], { a: { b: 3 }, list: [5, 6], fn: (x: number) => x * 10 }], [[], { a: null }]],
  );
});

test("exceptions: thrown from conditions and loop bodies, caught inside loops with continue and break", () => {
  same(
    function (xs: unknown[]) {
      const log: string[] = [];
      for (const x of xs) {
        try {
          if ((x as { bad?: boolean }).bad) throw new TypeError("bad item");
          if (x === 0) continue;
          if (x === 9) break;
          log.push(`ok ${String(x)}`);
        } catch (e) {
          log.push(`caught ${(e as Error).message}`);
          continue;
        } finally {
          log.push("finally");
        }
        log.push("after try");
      }
      if (xs.length > 3) throw new RangeError("too long");
      return log;
    },
    [[[1, 0, { bad: true }, 9]], [[1, 2, 3, 4, 5]], [[null]]],
  );
});

// ---------------------------------------------------------------------------------------------
// the run-time API

test("sc.autograph caches, needs free variables in scope (the error names them and recommends the loader)", () => {
  const f = (x: number) => (x > 0 ? x : -x);
  const g = autograph(f);
  assert.equal(autograph(f), g, "cached");
  assert.equal(autograph(g), g, "a converted function converts to itself");
  assert.equal(getConverted(f), g, "registered for ag.call");
  assert.equal(g.name, "f");
  assert.equal(g(-3), 3);
  let offset = 10;
  const h = (x: number) => x + offset;
  assert.throws(
    () => autograph(h),
    (e: unknown) =>
      e instanceof AutoGraphError && /uses free variable offset/.test(e.message) && /node --import stagecraft\/register/.test(e.message) && /scope: \{ offset \}/.test(e.message) && e.message.includes("autograph-transform.test.ts"),
  );
  const h2 = autograph(h, { scope: { offset } });
  assert.equal(h2(1), 11);
  offset = 20;
  assert.equal(h2(1), 11, "scope values are read when converting");
  assert.equal(autograph(h, { scope: { offset } })(1), 21);
  const usesGlobal = () => (globalThis as { x?: number }).x;
  assert.equal(autograph(usesGlobal)(), undefined, "globals are passed through");
  // A closure variable named like a global is not taken for the global (a const: its value is
  // read from the closure when converting).
  const performance = { now: () => 42 };
  const timed = () => performance.now();
  assert.equal(autograph(timed)(), 42);
  assert.equal(autograph(timed, { scope: { performance: { now: () => 7 } } })(), 42, "converted once (cached)");
});

test("generators and async functions are left unconverted: sc.autograph returns them as they are; sc.stage refuses them", async () => {
  const a = async function a(x: number) {
    return x > 0 ? "pos" : "neg";
  };
  assert.equal(autograph(a), a);
  assert.equal(await autograph(a)(1), "pos");
  function* g() {
    yield 1;
  }
  assert.equal(autograph(g), g);
  assert.throws(() => convertForStage(async () => 1), (e: unknown) => e instanceof AutoGraphError && /cannot be staged/.test(e.message));
  // Inside a converted module they keep no twin (see the module tests below).
});

test("toSource shows the generated code", () => {
  function absDiff(a: number, b: number) {
    if (a > b) return a - b;
    return b - a;
  }
  const src = autograph.toSource(absDiff);
  assert.match(src, /^function absDiff\(a, b\) \{/);
  // The native copy for a JS-valued condition, and ag.ifStmt for a tensor one.
  assert.match(src, /if \(typeof \(\$c = ag\.gt\(a, b\)\) !== "object"\) \{\s*if \(\$c\) \{/);
  assert.match(src, /\} else ag\.ifStmt\(\$c, \(\) => \{/);
  assert.equal(autograph.toSource(autograph(absDiff)), src);
});

test("ag.call converts callees met by converted code (staged control flow inside a helper)", () => {
  function helper(x: any): any {
    if (x > 0) return x;
    return -x;
  }
  const outer = (x: any): any => helper(x) * 2;
  const staged = sc.stage(autograph(outer, { scope: { helper } }));
  assert.deepEqual(staged(sc.scalar(-3)).arraySync(), 6);
  assert.deepEqual(staged(sc.scalar(4)).arraySync(), 8);
  assert.equal(staged.traceCount, 1, "one trace: the helper's if is a staged cond");
});

test("convertForStage: converted when possible, else the original with a one-time note naming the free variables", () => {
  const pure = (x: any) => (x > 0 ? x : x * 0);
  const r = convertForStage(pure);
  assert.notEqual(r.fn, pure);
  assert.equal(r.note, undefined);
  assert.deepEqual(sc.stage(r.fn)(sc.scalar(-2)).arraySync(), -0);
  // A variable that changes cannot be read once by value: staged by tracing, with a note.
  let limit = 3;
  const closure = (x: any) => {
    if (x > limit) return x;
    return limit;
  };
  const first = convertForStage(closure);
  assert.equal(first.fn, closure);
  assert.ok(first.note && /free variable limit/.test(first.note) && /node --import stagecraft\/register/.test(first.note), first.note);
  assert.equal(convertForStage(closure).note, undefined, "said once");
  limit = 4;
  const plain = (x: any) => sc.add(x, limit);
  assert.equal(convertForStage(plain).note, undefined, "no note when nothing needs conversion");
});

// ---------------------------------------------------------------------------------------------
// errors and source maps

test("a conversion error names the original file:line:col and shows the source line", () => {
  class Base {
    m() {
      return 1;
    }
  }
  class Derived extends Base {
    override m() {
      return super.m() + 1; // MARK-SUPER
    }
  }
  const line = lineOf("class Derived extends Base") + 1;
  assert.throws(
    () => autograph(Derived.prototype.m),
    (e: unknown) => {
      assert.ok(e instanceof ConversionError, String(e));
      assert.match(e.message, /methods that use `super` are not converted/);
      assert.ok(e.message.includes(`autograph-transform.test.ts:${line}:`), e.message);
      assert.ok(e.message.includes(`\n  ${line} |     override m() {`), `shows the original (TypeScript) line:\n${e.message}`);
      assert.equal(e.sourceLocation.line, line);
      return true;
    },
  );
  assert.throws(
    () => convertModule("export function f(x) {\n  return x +;\n}\n", { filename: "/tmp/broken.js" }),
    (e: unknown) => e instanceof ConversionError && /broken\.js:2:/.test(e.message) && e.message.includes("2 |   return x +;"),
  );
});

test("runtime errors of converted code carry the original location (loc strings and the stack through source maps)", () => {
  function oneBranch(x: any) {
    let y;
    if (x > 0) { // MARK-ONE-BRANCH
      y = x * 2;
    }
    return y;
  }
  const ifLine = lineOf("MARK-ONE-BRANCH");
  assert.match(autograph.toSource(oneBranch), new RegExp(`"[^"]*autograph-transform\\.test\\.ts:${ifLine}:5"`));
  assert.throws(
    () => sc.stage(autograph(oneBranch))(sc.scalar(1)),
    (e: unknown) => e instanceof AutoGraphError && /variable y/.test(e.message) && e.message.includes(`autograph-transform.test.ts:${ifLine}:5`),
  );
  function boom(o: any) {
    let v = 0;
    if (o.k > 0) {
      v = o.missing.deep; // MARK-BOOM
    }
    return v;
  }
  const boomLine = lineOf("MARK-BOOM");
  try {
    autograph(boom)({ k: 1 });
    assert.fail("should throw");
  } catch (e) {
    assert.ok(e instanceof TypeError);
    const frame = e.stack!.split("\n").find((l) => l.includes("autograph-transform.test.ts"));
    assert.ok(frame && frame.includes(`autograph-transform.test.ts:${boomLine}:`), `stack points at the original line ${boomLine}:\n${e.stack}`);
  }
});

test("source maps of converted code map generated positions to the original file", () => {
  const src = "function f(x) {\n  let y = 0;\n  if (x > 0) {\n    y = x * 2;\n  }\n  return y;\n}";
  const r = convertFunctionSource(src, { filename: "/src/orig.js", line: 10, column: 2 });
  assert.deepEqual(r.map!.sources, ["/src/orig.js"]);
  assert.equal(r.map!.sourcesContent![0], src);
  // ag.ifStmt(...) is mapped to the `if` at line 12 (10 + 2), column 2.
  const genLine = r.code.split("\n").findIndex((l) => l.includes("ag.ifStmt"));
  const segments = decodeMappings(r.map!.mappings);
  const seg = segments[genLine]!.find((s) => s.origLine === 12 - 1);
  assert.ok(seg, "a mapping from the ag.ifStmt line to original line 12");
  assert.equal(seg.origColumn, 2);
});

/** Minimal VLQ decoding of source-map mappings (per generated line: segments with original line/column, 0-based). */
function decodeMappings(mappings: string): { origLine: number; origColumn: number }[][] {
  const chars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  const lines: { origLine: number; origColumn: number }[][] = [];
  let origLine = 0;
  let origColumn = 0;
  for (const line of mappings.split(";")) {
    const segs: { origLine: number; origColumn: number }[] = [];
    for (const seg of line.split(",").filter(Boolean)) {
      const values: number[] = [];
      let value = 0;
      let shift = 0;
      for (const ch of seg) {
        const d = chars.indexOf(ch);
        value += (d & 31) << shift;
        if (d & 32) shift += 5;
        else {
          values.push(value & 1 ? -(value >> 1) : value >> 1);
          value = 0;
          shift = 0;
        }
      }
      if (values.length >= 4) {
        origLine += values[2]!;
        origColumn += values[3]!;
        segs.push({ origLine, origColumn });
      }
    }
    lines.push(segs);
  }
  return lines;
}

// ---------------------------------------------------------------------------------------------
// modules: convertModule and the Babel plugin

const RUNTIME_URL = pathToFileURL(path.resolve(path.dirname(THIS_FILE), "../src/autograph/operators/index.ts")).href;

test("convertModule gives every function a registered twin in its own scope", () => {
  const code = [
    "export function f(x) { if (x > 0) return x; return -x; }",
    "const g = (x) => x * 2;",
    "class A { m(x) { return x > 1 ? 1 : 0; } static s(x) { return x + 1; } }",
    "const o = { h(x) { return x - 1; } };",
    "export const later = [1, 2].map((v) => v + 1);",
    "async function notMe(x) { return x + 1; }",
    "function* gen() { yield 1 + 1; }",
  ].join("\n");
  const out = convertModule(code, { filename: "/app/m.js", runtime: "stagecraft/autograph-runtime" }).code;
  assert.match(out, /^import \{ ag \} from "stagecraft\/autograph-runtime";\nag\.registerConverted\(f, f\$ag\);/);
  assert.match(out, /function f\$ag\(x\) \{/);
  assert.match(out, /const g = x => x \* 2;\nag\.registerConverted\(g, x => ag\.mul\(x, 2\)\);/);
  assert.match(out, /static \{\s*ag\.registerConverted\(this\.prototype\["m"\], function \(x\) \{/);
  assert.match(out, /ag\.registerConverted\(this\["s"\], function \(x\) \{/);
  assert.match(out, /\(\$obj => \(ag\.registerConverted\(\$obj\["h"\], function \(x\) \{/);
  // A top-level call goes through the runtime (its callback is converted when it is called).
  assert.match(out, /ag\.callMethod\(\[1, 2\], "map", \(\) => \[\(\$f => \(ag\.registerConverted\(\$f, v => ag\.add\(v, 1\)\), \$f\)\)\(v => v \+ 1\)\]\)/);
  assert.doesNotMatch(out, /notMe\$ag|gen\$ag/, "async functions and generators keep no twin");
});

test("a converted module runs: closures see later rebinding, twins are used by sc.autograph, TypeScript is stripped", async () => {
  const dir = mkdtempSync(path.join(tmpdir(), "autograph-module-"));
  try {
    const ts = [
      "interface Box { v: number }",
      "enum Mode { A = 1, B = 2 }",
      "let k: number = 2;",
      "export const scaled = (x: number): number => x * k;",
      "export function setK(v: number): void { k = v; }",
      "export function steps(n: number): number { let c = 0; while (n > 1) { n = n % 2 === 0 ? n / 2 : 3 * n + 1; c++; } return c; }",
      "export const box: Box = { v: Mode.B };",
      "export class Acc { total = 0; add(x: number): number { if (x > 0) this.total += x; return this.total; } }",
      "export const obj = { twice(x: number): number { return x > 0 ? 2 * x : 0; } };",
    ].join("\n");
    const out = convertModule(ts, { filename: path.join(dir, "m.ts"), runtime: RUNTIME_URL, inlineSourceMap: true });
    assert.doesNotMatch(out.code, /interface|: number/);
    assert.match(out.code, /sourceMappingURL=data:application\/json/);
    assert.deepEqual(out.map!.sources, [path.join(dir, "m.ts")]);
    const file = path.join(dir, "m.mjs");
    writeFileSync(file, out.code);
    const m = (await import(pathToFileURL(file).href)) as {
      scaled: AnyFn;
      setK: AnyFn;
      steps: AnyFn;
      box: { v: number };
      Acc: new () => { total: number; add(x: number): number };
      obj: { twice(x: number): number };
    };
    const conv = autograph(m.scaled);
    assert.notEqual(conv, m.scaled);
    assert.equal(conv(3), 6);
    m.setK(5);
    assert.equal(conv(3), 15, "the twin sees the rebound variable");
    assert.equal(autograph(m.steps)(6), 8);
    assert.match(autograph.toSource(m.steps), /ag\.whileStmt/);
    assert.equal(m.box.v, 2);
    const acc = new m.Acc();
    const add = autograph(m.Acc.prototype.add);
    assert.notEqual(add, m.Acc.prototype.add, "class methods have twins");
    assert.equal(add.call(acc, 3), 3);
    assert.equal(add.call(acc, -1), 3);
    assert.equal(acc.add(2), 5);
    assert.notEqual(autograph(m.obj.twice), m.obj.twice, "object methods have twins");
    assert.equal(autograph(m.obj.twice).call(m.obj, 4), 8);
    const staged = sc.stage(autograph(m.steps));
    assert.deepEqual(staged(sc.scalar(6, "float64")).arraySync(), 8);
    assert.deepEqual(staged(sc.scalar(27, "float64")).arraySync(), 111);
    assert.equal(staged.traceCount, 1);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("the Babel plugin (stagecraft/babel) converts a file with other plugins", () => {
  const r = babel.transformSync("const f = (x) => x > 0 ? x : 0;\nexport default f;\n", {
    filename: "/app/file.js",
    babelrc: false,
    configFile: false,
    plugins: [[autographBabelPlugin, { runtime: "my-runtime" }]],
  });
  assert.match(r!.code!, /^import \{ ag \} from "my-runtime";/);
  assert.match(r!.code!, /ag\.registerConverted\(f, x => \{\s*let \$c;\s*return typeof \(\$c = ag\.gt\(x, 0\)\) !== "object" \? \$c \? x : 0 : ag\.ifExp\(\$c, \(\) => x, \(\) => 0, "\/app\/file\.js:1:18"\);\s*\}\);/);
  const skipped = babel.transformSync("const f = (x) => x + 1;", {
    filename: "/app/node_modules/dep/index.js",
    babelrc: false,
    configFile: false,
    plugins: [autographBabelPlugin],
  });
  assert.doesNotMatch(skipped!.code!, /registerConverted/, "node_modules are not converted");
});
