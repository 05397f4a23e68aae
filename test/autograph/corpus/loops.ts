/** while, do...while, for(;;), for...of, for...in. */
import { range } from "../../../src/autograph/operators/index.js";
import { p, type CorpusProgram } from "./types.js";

export const loops: CorpusProgram[] = [
  p("while sum with counter", ["while", "+="], function (n: number) {
    let s = 0;
    let i = 0;
    while (i < n) {
      s += i;
      i++;
    }
    return s;
  }, [[0], [1], [6]], { tensor: true }),

  p("while decrementing a parameter", ["while", "--", "parameters"], function (n: number) {
    let s = 0;
    while (n > 0) {
      s += n;
      n--;
    }
    return [s, n];
  }, [[5], [0], [-2]], { tensor: true }),

  p("do-while runs once when the test is false", ["do-while"], function (n: number) {
    let c = 0;
    do {
      c++;
    } while (c < n);
    return c;
  }, [[0], [1], [4]], { tensor: true }),

  p("do-while with continue re-evaluates the test", ["do-while", "continue"], function (n: number) {
    let i = 0;
    let s = 0;
    do {
      i++;
      if (i % 2 === 1) continue;
      s += i;
    } while (i < n);
    return [i, s];
  }, [[0], [5], [8]], { tensor: true }),

  p("for sum of squares", ["for"], function (n: number) {
    let s = 0;
    for (let i = 0; i < n; i++) s += i * i;
    return s;
  }, [[0], [1], [5]], { tensor: true }),

  p("for with two loop variables", ["for", "comma"], function (n: number) {
    let s = 0;
    for (let i = 0, j = n; i < j; i++, j--) s += j - i;
    return s;
  }, [[0], [5], [10]], { tensor: true }),

  p("for(;;) with break", ["for", "break"], function (n: number) {
    let i = 0;
    for (;;) {
      if (i >= n) break;
      i++;
    }
    return i;
  }, [[0], [3]], { tensor: true }),

  p("for with var is function-scoped", ["for", "var"], function (n: number) {
    for (var i = 0; i < n; i++) {
      /* empty */
    }
    return i;
  }, [[0], [4]], { tensor: true }),

  p("for-of over an array", ["for-of"], function (xs: number[]) {
    let s = 0;
    for (const v of xs) s += v;
    return s;
  }, [[[1, 2, 3]], [[5]], [[-1, 0.5, 2.25, 8]]], { tensor: true }),

  p("for-of over entries", ["for-of", "destructuring"], function (xs: string[]) {
    const out: string[] = [];
    for (const [i, v] of xs.entries()) out.push(`${i}:${v}`);
    return out.join(",");
  }, [[["a", "b", "c"]], [[]]]),

  p("for-of over a string", ["for-of", "strings"], function (s: string) {
    let vowels = 0;
    for (const ch of s) if ("aeiou".includes(ch)) vowels++;
    return vowels;
  }, [["autograph"], [""]]),

  p("for-of destructuring pairs", ["for-of", "destructuring"], function (pairs: [number, number][]) {
    let s = 0;
    for (const [a, b] of pairs) s += a * b;
    return s;
  }, [[[[1, 2], [3, 4], [5, 6]]], [[]]]),

  p("nested for loops", ["for", "nesting"], function (n: number) {
    let s = 0;
    for (let i = 0; i < n; i++) {
      for (let j = 0; j <= i; j++) {
        s += i * 10 + j;
      }
    }
    return s;
  }, [[0], [1], [4]], { tensor: true }),

  p("while with && in the test", ["while", "&&"], function (n: number) {
    let i = 0;
    let s = 0;
    while (i < n && s < 20) {
      s += i;
      i++;
    }
    return [i, s];
  }, [[3], [10], [100]], { tensor: true }),

  p("fibonacci with a temporary", ["for", "state"], function (n: number) {
    let a = 0;
    let b = 1;
    for (let i = 0; i < n; i++) {
      const t = a + b;
      a = b;
      b = t;
    }
    return a;
  }, [[0], [1], [10]], { tensor: true }),

  p("fibonacci with destructuring swap", ["for", "destructuring"], function (n: number) {
    let a = 0;
    let b = 1;
    for (let i = 0; i < n; i++) [a, b] = [b, a + b];
    return [a, b];
  }, [[0], [7]], { tensor: true }),

  p("for-of over rows of a matrix", ["for-of", "nesting"], function (m: number[][]) {
    let s = 0;
    let k = 1;
    for (const row of m) {
      for (const v of row) {
        s += v * k;
        k++;
      }
    }
    return s;
  }, [[[[1, 2], [3, 4], [5, 6]]]], { tensor: true }),

  p("for counting down by two", ["for", "-="], function (n: number) {
    const seen: number[] = [];
    for (let i = n; i > 0; i -= 2) seen.push(i);
    return seen;
  }, [[7], [0], [4]]),

  p("for with an empty body", ["for", "empty"], function (n: number) {
    let i = 0;
    for (i = 0; i < n; i++);
    return i;
  }, [[0], [6]], { tensor: true }),

  p("loops whose test is false at once", ["while", "for", "do-while"], function (x: number) {
    let a = 0;
    while (x > 100) a++;
    for (let i = 10; i < x; i++) a += 100;
    do a += 1000; while (x > 100);
    return a;
  }, [[3]], { tensor: true }),

  p("collatz steps", ["while", "ternary", "%"], function (x: number) {
    let steps = 0;
    while (x !== 1) {
      x = x % 2 === 0 ? x / 2 : 3 * x + 1;
      steps++;
    }
    return steps;
  }, [[1], [6], [27]], { tensor: true }),

  p("gcd with destructuring", ["while", "destructuring", "%"], function (a: number, b: number) {
    while (b !== 0) [a, b] = [b, a % b];
    return a;
  }, [[48, 18], [7, 13], [10, 0]], { tensor: true }),

  p("push in a loop then sum", ["for", "push", "for-of"], function (n: number) {
    const xs: number[] = [];
    for (let i = 0; i < n; i++) xs.push(i * 2 + 1);
    let s = 0;
    for (const v of xs) s += v;
    return s;
  }, [[0], [5]], { tensor: true }),

  p("loop variable declared before the loop", ["for", "let"], function (n: number) {
    let i;
    let s = 0;
    for (i = 0; i < n; i += 1) s += 2;
    return [i, s];
  }, [[0], [3]], { tensor: true }),

  p("for-of over Set and Map", ["for-of", "iterables"], function () {
    const s = new Set([3, 1, 3, 2]);
    const m = new Map<string, number>([["a", 1], ["b", 2]]);
    let out = "";
    for (const v of s) out += v;
    for (const [k, v] of m) out += k + v;
    return out;
  }, [[]]),

  p("do-while with break", ["do-while", "break"], function (n: number) {
    let i = 0;
    do {
      i += 3;
      if (i > n) break;
      i -= 1;
    } while (true);
    return i;
  }, [[0], [10]], { tensor: true }),

  p("newton square root", ["while", "Math", "floats"], function (x: number) {
    let g = x / 2 + 1;
    let it = 0;
    while (Math.abs(g * g - x) > 1e-12 && it < 100) {
      g = 0.5 * (g + x / g);
      it++;
    }
    return g;
  }, [[2], [9], [0.25]], { tensor: true }),

  p("for-in over object keys (left native)", ["for-in"], function () {
    const o: Record<string, number> = { a: 1, b: 2, c: 3 };
    let keys = "";
    let s = 0;
    for (const k in o) {
      keys += k;
      s += o[k]!;
    }
    return [keys, s];
  }, [[]]),

  p("while over a shrinking array", ["while", "pop", "length"], function (xs: number[]) {
    let s = 0;
    while (xs.length > 0) {
      const v = xs.pop()!;
      s = s * 10 + v;
    }
    return [s, xs.length];
  }, [[[1, 2, 3]], [[]]]),

  p("loop updates an object field", ["for", "member-assignment"], function (n: number) {
    const acc = { total: 0, count: 0 };
    for (let i = 1; i <= n; i++) {
      acc.total += i;
      acc.count++;
    }
    return acc;
  }, [[0], [4]]),

  p("triangular loop with while inside for", ["for", "while", "nesting"], function (n: number) {
    let s = 0;
    for (let i = 0; i < n; i++) {
      let j = i;
      while (j > 0) {
        s += j;
        j--;
      }
    }
    return s;
  }, [[0], [5]], { tensor: true }),
];

/** Loops over ranges (`range` is what converted code and sc.range iterate; natively a range of numbers). */
export const rangeLoops: CorpusProgram[] = [
  p("for-of over range(n)", ["for-of", "range"], function (n: number) {
    let s = 0;
    for (const i of range(n) as Iterable<number>) s += i * 2;
    return s;
  }, [[0], [1], [6]], { scope: { range }, tensor: true }),

  p("for-of over range(start, stop, step)", ["for-of", "range"], function (a: number, b: number) {
    let s = 0;
    for (const i of range(a, b, 3) as Iterable<number>) s = s * 2 + i;
    return s;
  }, [[1, 10], [5, 5], [-4, 3]], { scope: { range }, tensor: true }),

  p("descending range", ["for-of", "range"], function (n: number) {
    const seen: number[] = [];
    for (const i of range(n, 0, -1) as Iterable<number>) seen.push(i);
    return seen;
  }, [[4], [0]], { scope: { range } }),

  p("nested ranges with break", ["for-of", "range", "break", "nesting"], function (n: number) {
    let count = 0;
    for (const i of range(n) as Iterable<number>) {
      for (const j of range(n) as Iterable<number>) {
        if (j > i) break;
        count += i - j + 1;
      }
    }
    return count;
  }, [[0], [4]], { scope: { range }, tensor: true }),

  p("early return from a range loop", ["for-of", "range", "return"], function (n: number, t: number) {
    for (const i of range(n) as Iterable<number>) {
      if (i * i >= t) return i;
    }
    return -1;
  }, [[10, 30], [3, 30]], { scope: { range }, tensor: true }),

  p("range loop with continue and a float accumulator", ["for-of", "range", "continue", "floats"], function (n: number) {
    let s = 0.5;
    for (const i of range(n) as Iterable<number>) {
      if (i % 2 === 0) continue;
      s = s * 1.5 + i;
    }
    return s;
  }, [[0], [7]], { scope: { range }, tensor: true }),
];
