/**
 * Converted code behaves as the native code with JS values (same result, console output and
 * exception type): operators, evaluation order and getters, indexing, calls, console.log and
 * if-throw, shadowing and the TDZ, assorted syntax, exceptions.
 */
import { test } from "node:test";
import { same } from "../same.js";

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
