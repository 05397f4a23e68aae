/** break, continue (labeled too) and return anywhere. */
import { p, type CorpusProgram } from "./types.js";

export const jumps: CorpusProgram[] = [
  p("break in while", ["while", "break"], function (n: number) {
    let i = 0;
    while (i < 100) {
      if (i * i > n) break;
      i++;
    }
    return i;
  }, [[0], [10], [50]], { tensor: true }),

  p("continue in for still runs the update", ["for", "continue"], function (n: number) {
    let s = 0;
    for (let i = 0; i < n; i++) {
      if (i % 3 === 0) continue;
      s += i;
    }
    return s;
  }, [[0], [10]], { tensor: true }),

  p("continue in while after the decrement", ["while", "continue"], function (n: number) {
    let s = 0;
    while (n > 0) {
      n--;
      if (n % 2 === 0) continue;
      s += n;
    }
    return s;
  }, [[0], [9]], { tensor: true }),

  p("break leaves only the inner loop", ["for", "break", "nesting"], function (n: number) {
    let s = 0;
    for (let i = 0; i < n; i++) {
      for (let j = 0; j < n; j++) {
        if (j > i) break;
        s += 1;
      }
    }
    return s;
  }, [[0], [4]], { tensor: true }),

  p("labeled break leaves the outer loop", ["for", "labeled-break", "nesting"], function (n: number) {
    let s = 0;
    outer: for (let i = 0; i < 10; i++) {
      for (let j = 0; j < 10; j++) {
        if (i * j > n) break outer;
        s += i + j;
      }
    }
    return s;
  }, [[0], [12], [100]], { tensor: true }),

  p("labeled continue skips the rest of the outer body", ["for", "labeled-continue", "nesting"], function (n: number) {
    let s = 0;
    let tail = 0;
    outer: for (let i = 0; i < n; i++) {
      for (let j = 0; j < n; j++) {
        if (j === i) continue outer;
        s += j;
      }
      tail++;
    }
    return [s, tail];
  }, [[0], [4]], { tensor: true }),

  p("break out of a labeled block", ["labeled-block"], function (x: number) {
    let r = 0;
    block: {
      r = 1;
      if (x > 0) break block;
      r = 2;
    }
    return r;
  }, [[1], [-1]]),

  p("return inside a loop", ["for", "return"], function (n: number) {
    for (let i = 0; i < 100; i++) {
      if (i * 3 > n) return i;
    }
    return -1;
  }, [[0], [10], [400]], { tensor: true }),

  p("return inside nested loops", ["for", "return", "nesting"], function (target: number) {
    for (let i = 0; i < 5; i++) {
      for (let j = 0; j < 5; j++) {
        if (i * 5 + j === target) return i * 100 + j;
      }
    }
    return -1;
  }, [[0], [13], [24], [99]], { tensor: true }),

  p("return from a loop inside an if", ["if", "while", "return"], function (x: number) {
    if (x > 0) {
      let i = 0;
      while (true) {
        i++;
        if (i * i >= x) return i;
      }
    }
    return -x;
  }, [[17], [1], [-3]], { tensor: true }),

  p("return in an if in a loop in an if", ["if", "for", "return", "nesting"], function (a: number, b: number) {
    let s = 0;
    if (a > 0) {
      for (let i = 0; i < a; i++) {
        s += i;
        if (s > b) {
          if (i % 2 === 0) return s * 10;
          return s * 100;
        }
      }
    } else {
      s = -1;
    }
    return s;
  }, [[5, 3], [5, 5], [3, 100], [-1, 0]], { tensor: true }),

  p("return in do-while", ["do-while", "return"], function (n: number) {
    let i = 0;
    do {
      i += 2;
      if (i > n) return i;
    } while (i < 50);
    return -1;
  }, [[0], [7], [80]], { tensor: true }),

  p("break in if/else inside a loop", ["while", "break", "else"], function (n: number) {
    let a = 0;
    let b = 0;
    while (true) {
      if (a < n) {
        a += 2;
      } else {
        b = a * 2;
        break;
      }
    }
    return a + b;
  }, [[0], [5]], { tensor: true }),

  p("continue in for-of", ["for-of", "continue"], function (xs: number[]) {
    let s = 0;
    for (const v of xs) {
      if (v < 0) continue;
      s += v;
    }
    return s;
  }, [[[1, -2, 3, -4, 5]], [[-1]]], { tensor: true }),

  p("break in for-of", ["for-of", "break"], function (xs: number[]) {
    let s = 0;
    for (const v of xs) {
      if (v === 0) break;
      s += v;
    }
    return s;
  }, [[[1, 2, 0, 4]], [[3, 3]]], { tensor: true }),

  p("labeled continue over nested for-of", ["for-of", "labeled-continue"], function (m: number[][]) {
    const firstNeg: number[] = [];
    let count = 0;
    rows: for (const row of m) {
      for (const v of row) {
        if (v < 0) {
          firstNeg.push(v);
          continue rows;
        }
        count++;
      }
      firstNeg.push(0);
    }
    return [firstNeg, count];
  }, [[[[1, -2, 3], [4, 5, 6], [-7, 8, 9]]]]),

  p("return an element from for-of", ["for-of", "return"], function (xs: number[]) {
    for (const v of xs) if (v > 10) return v;
    return 0;
  }, [[[1, 20, 30]], [[1, 2]]], { tensor: true }),

  p("break and continue in the same loop", ["for", "break", "continue"], function (n: number) {
    const seen: number[] = [];
    for (let i = 0; ; i++) {
      if (i % 2 === 0) continue;
      if (i > n) break;
      seen.push(i);
    }
    return seen;
  }, [[0], [9]]),

  p("bare return inside a loop", ["for", "return", "undefined"], function (n: number) {
    for (let i = 0; i < 10; i++) {
      console.log("iteration", i);
      if (i === n) return;
    }
    return "done";
  }, [[2], [20]]),

  p("returns at different depths", ["return", "nesting", "while", "if"], function (x: number) {
    if (x < 0) return "negative";
    let i = 0;
    while (i < 3) {
      if (x === i) return "small " + i;
      for (let j = 0; j < 3; j++) {
        if (x === 10 + i * 3 + j) return "pair " + i + "," + j;
      }
      i++;
    }
    return "other";
  }, [[-1], [0], [2], [10], [15], [18], [99]]),

  p("break out of do-while from a nested if", ["do-while", "break", "nesting"], function (n: number) {
    let i = 0;
    let hits = 0;
    do {
      i++;
      if (i % 2 === 0) {
        hits++;
        if (hits >= n) break;
      }
    } while (i < 20);
    return [i, hits];
  }, [[1], [3], [50]], { tensor: true }),

  p("labeled break from three levels", ["labeled-break", "nesting", "for"], function (limit: number) {
    let count = 0;
    a: for (let i = 0; i < 4; i++) {
      for (let j = 0; j < 4; j++) {
        for (let k = 0; k < 4; k++) {
          count++;
          if (i + j + k === limit) break a;
        }
      }
    }
    return count;
  }, [[0], [4], [100]], { tensor: true }),

  p("continue in do-while tests the updated variable", ["do-while", "continue"], function (n: number) {
    let i = 10;
    let s = 0;
    do {
      i -= 3;
      if (i > n) continue;
      s += i;
    } while (i > 0);
    return [i, s];
  }, [[0], [5]], { tensor: true }),

  p("state after a loop with break", ["for", "break", "state"], function (xs: number[]) {
    let idx = -1;
    let last = 0;
    for (let i = 0; i < xs.length; i++) {
      last = xs[i]!;
      if (last > 5) {
        idx = i;
        break;
      }
    }
    return { idx, last };
  }, [[[1, 7, 9]], [[1, 2]]]),

  p("return in both branches inside a loop", ["for", "return", "if"], function (x: number) {
    for (let i = 0; i < 5; i++) {
      if (x > i) return "gt" + i;
      else return "le" + i;
    }
    return "unreachable";
  }, [[3], [-3]]),

  p("labeled continue with outer update expressions", ["for", "labeled-continue"], function (n: number) {
    const pairs: string[] = [];
    outer: for (let i = 0, k = 100; i < n; i++, k -= 10) {
      for (let j = 0; j < 3; j++) {
        if (j === 1) continue outer;
        pairs.push(`${i}/${j}/${k}`);
      }
    }
    return pairs;
  }, [[3]]),

  p("break inside switch does not leave the loop", ["switch", "break", "continue", "for"], function (n: number) {
    const out: string[] = [];
    for (let i = 0; i < n; i++) {
      switch (i % 3) {
        case 0:
          out.push("zero");
          break;
        case 1:
          continue;
        default:
          out.push("two");
      }
      out.push("after" + i);
    }
    return out;
  }, [[5]]),

  p("continue in nested while with labels", ["while", "labeled-continue", "nesting"], function (n: number) {
    let i = 0;
    let s = 0;
    outer: while (i < n) {
      i++;
      let j = 0;
      while (j < n) {
        j++;
        if (j > i) continue outer;
        s += j;
      }
    }
    return s;
  }, [[0], [4]], { tensor: true }),

  p("loop exit by return keeps later code unreached", ["while", "return", "console.log"], function (n: number) {
    let i = 0;
    while (i < 10) {
      i++;
      if (i === n) {
        console.log("found", i);
        return i * 2;
      }
      console.log("after check", i);
    }
    console.log("fell out");
    return -1;
  }, [[3], [20]]),
];
