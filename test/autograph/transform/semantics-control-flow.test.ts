/**
 * Converted code behaves as the native code with JS values (same result, console output and
 * exception type): control flow: if / else, loops, break and continue (labeled too), closures in
 * loops, switch, for...in, labeled blocks, try / catch / finally with jumps.
 */
import { test } from "node:test";
import { same } from "../same.js";

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
