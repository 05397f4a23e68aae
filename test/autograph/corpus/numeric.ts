/** Programs that compute on numbers: run with JS values, eager tensors and staged. */
import { p, type CorpusProgram } from "./types.js";

function square(x: number): number {
  return x * x;
}

export const numeric: CorpusProgram[] = [
  p("relu with if", ["if", "numeric"], function (x: number) {
    let y = x;
    if (x < 0) y = 0;
    return y;
  }, [[-1.5], [2.5]], { tensor: true }),

  p("clamp with nested ifs", ["if", "else-if", "numeric"], function (x: number, lo: number, hi: number) {
    if (x < lo) return lo;
    else if (x > hi) return hi;
    return x;
  }, [[-5, -1, 1], [0.5, -1, 1], [7, -1, 1]], { tensor: true }),

  p("horner polynomial over coefficients", ["for-of", "numeric"], function (coeffs: number[], x: number) {
    let acc = 0;
    for (const c of coeffs) acc = acc * x + c;
    return acc;
  }, [[[1, -2, 3], 2], [[0.5, 0, -1, 4], -1.5]], { tensor: true }),

  p("dot product with an index loop", ["for", "x[i]", "numeric"], function (a: number[], b: number[], n: number) {
    let s = 0;
    for (let i = 0; i < n; i++) s += a[i]! * b[i]!;
    return s;
  }, [[[1, 2, 3], [4, 5, 6], 3]], { tensor: { wrap: [0, 1] } }),

  p("maximum with for-of and if", ["for-of", "if", "numeric"], function (xs: number[]) {
    let m = -Infinity;
    for (const v of xs) if (v > m) m = v;
    return m;
  }, [[[3, -1, 7, 2]], [[-4, -2]]], { tensor: true }),

  p("argmax with a counter", ["for-of", "if", "numeric"], function (xs: number[]) {
    let best = -Infinity;
    let idx = -1;
    let i = 0;
    for (const v of xs) {
      if (v > best) {
        best = v;
        idx = i;
      }
      i++;
    }
    return idx;
  }, [[[3, -1, 7, 2]], [[9, 1]]], { tensor: true }),

  p("fast exponentiation", ["while", "%", "Math", "numeric"], function (base: number, e: number) {
    let result = 1;
    while (e > 0) {
      if (e % 2 === 1) result *= base;
      base *= base;
      e = Math.floor(e / 2);
    }
    return result;
  }, [[3, 0], [3, 5], [2, 10], [1.5, 3]], { tensor: true }),

  p("sum of digits", ["while", "%", "Math", "numeric"], function (x: number) {
    let s = 0;
    while (x > 0) {
      s += x % 10;
      x = Math.floor(x / 10);
    }
    return s;
  }, [[0], [9], [12345]], { tensor: true }),

  p("is prime with an early return", ["for", "return", "numeric"], function (n: number) {
    if (n < 2) return 0;
    for (let d = 2; d * d <= n; d++) {
      if (n % d === 0) return 0;
    }
    return 1;
  }, [[1], [2], [9], [13], [25], [29]], { tensor: true }),

  p("count above threshold", ["for-of", "if", "numeric"], function (xs: number[], t: number) {
    let c = 0;
    for (const v of xs) if (v > t) c += 1;
    return c;
  }, [[[1, 5, 3, 8], 2.5], [[1, 1], 5]], { tensor: true }),

  p("cumulative sums pushed into an array", ["for-of", "push", "numeric"], function (xs: number[]) {
    const out: number[] = [];
    let s = 0;
    for (const v of xs) {
      s += v;
      out.push(s);
    }
    return out;
  }, [[[1, 2, 3, 4]]], { tensor: true }),

  p("exponential series until the term is small", ["while", "floats", "Math", "numeric"], function (x: number) {
    let term = 1;
    let sum = 1;
    let k = 1;
    while (Math.abs(term) > 1e-15) {
      term = (term * x) / k;
      sum += term;
      k++;
    }
    return sum;
  }, [[1], [-0.5], [2]], { tensor: true }),

  p("softplus with Math.log and Math.exp", ["Math", "if", "numeric"], function (x: number) {
    if (x > 20) return x;
    return Math.log(1 + Math.exp(x));
  }, [[-3], [0.5], [25]], { tensor: true }),

  p("halving loop with break on a threshold", ["while", "break", "numeric"], function (x: number) {
    let steps = 0;
    while (true) {
      x = x / 2;
      steps++;
      if (x < 1) break;
    }
    return [x, steps];
  }, [[1], [100]], { tensor: true }),

  p("nested ternary in a loop body", ["for", "ternary", "numeric"], function (xs: number[]) {
    let s = 0;
    for (const v of xs) s += v > 1 ? v * 2 : v < -1 ? -v : 0;
    return s;
  }, [[[2, -3, 0.5, 5]]], { tensor: true }),

  p("mean and variance in two passes", ["for-of", "numeric"], function (xs: number[]) {
    let s = 0;
    let n = 0;
    for (const v of xs) {
      s += v;
      n++;
    }
    const mean = s / n;
    let ss = 0;
    for (const v of xs) ss += (v - mean) ** 2;
    return [mean, ss / n];
  }, [[[1, 2, 3, 4]], [[2.5, -1]]], { tensor: true }),

  p("index of the first negative", ["for-of", "return", "numeric"], function (xs: number[]) {
    let i = 0;
    for (const v of xs) {
      if (v < 0) return i;
      i++;
    }
    return -1;
  }, [[[1, 2, -3, 4]], [[1, 2]]], { tensor: true }),

  p("matrix-vector product with nested for-of", ["for-of", "nesting", "push", "numeric"], function (m: number[][], v: number[]) {
    const out: number[] = [];
    for (const row of m) {
      let s = 0;
      let j = 0;
      for (const a of row) {
        s += a * v[j]!;
        j++;
      }
      out.push(s);
    }
    return out;
  }, [[[[1, 2], [3, 4], [5, 6]], [10, -1]]], { tensor: true }),

  p("helper squared in an accumulate loop", ["calls", "helper", "while", "numeric"], function (x: number) {
    let s = 0;
    let k = 0;
    while (s < x) {
      k++;
      s += square(k);
    }
    return [k, s];
  }, [[0], [10], [100]], { scope: { square }, tensor: true }),

  p("integer division and remainder loop", ["while", "%", "Math", "numeric"], function (a: number, b: number) {
    let q = 0;
    let r = a;
    while (r >= b) {
      r -= b;
      q++;
    }
    return [q, r, Math.floor(a / b), a % b];
  }, [[17, 5], [4, 9]], { tensor: true }),

  p("piecewise linear interpolation", ["for", "x[i]", "if", "break", "numeric"], function (xs: number[], ys: number[], x: number) {
    let y = ys[0]!;
    for (let i = 0; i + 1 < 4; i++) {
      if (x >= xs[i]! && x <= xs[i + 1]!) {
        const t = (x - xs[i]!) / (xs[i + 1]! - xs[i]!);
        y = ys[i]! + t * (ys[i + 1]! - ys[i]!);
        break;
      }
    }
    return y;
  }, [[[0, 1, 2, 4], [0, 10, 5, 5], 0.5], [[0, 1, 2, 4], [0, 10, 5, 5], 3], [[0, 1, 2, 4], [0, 10, 5, 5], 9]], { tensor: true }),

  p("logistic map iterations", ["for", "floats", "numeric"], function (r: number, x: number, n: number) {
    for (let i = 0; i < n; i++) x = r * x * (1 - x);
    return x;
  }, [[3.5, 0.25, 10], [2.5, 0.5, 6]], { tensor: { wrap: [0, 1] } }),

  p("bisection root finding", ["while", "if", "floats", "numeric"], function (target: number) {
    let lo = 0;
    let hi = Math.max(1, target);
    for (let it = 0; it < 60; it++) {
      const mid = (lo + hi) / 2;
      if (mid * mid * mid < target) lo = mid;
      else hi = mid;
    }
    return (lo + hi) / 2;
  }, [[8], [0.5], [30]], { tensor: true }),

  p("sign changes counted over an array", ["for-of", "&&", "||", "numeric"], function (xs: number[]) {
    let prev = 0;
    let changes = 0;
    for (const v of xs) {
      if ((prev > 0 && v < 0) || (prev < 0 && v > 0)) changes++;
      if (v !== 0) prev = v;
    }
    return changes;
  }, [[[1, -1, 0, -2, 3, 3, -1]], [[0, 0]]], { tensor: true }),

  p("compound operators on floats in a do-while", ["do-while", "*=", "-=", "numeric"], function (x: number) {
    let y = x;
    let n = 0;
    do {
      y *= 0.75;
      y -= 0.125;
      n++;
    } while (y > 1 && n < 50);
    return [y, n];
  }, [[0.5], [10]], { tensor: true }),

  p("early return inside nested for-of over a matrix", ["for-of", "return", "nesting", "numeric"], function (m: number[][], t: number) {
    let r = 0;
    for (const row of m) {
      let c = 0;
      for (const v of row) {
        if (v === t) return r * 10 + c;
        c++;
      }
      r++;
    }
    return -1;
  }, [[[[1, 2], [3, 4]], 3], [[[1, 2], [3, 4]], 7]], { tensor: true }),

  p("triangle numbers below a bound", ["while", "push", "numeric"], function (bound: number) {
    const out: number[] = [];
    let k = 1;
    let t = 1;
    while (t < bound) {
      out.push(t);
      k++;
      t += k;
    }
    return out;
  }, [[20]], { tensor: { wrap: [] } }),

  p("abs via ternary and Math.abs agree", ["ternary", "Math", "numeric"], function (x: number) {
    const a = x < 0 ? -x : x;
    return a - Math.abs(x) + a;
  }, [[-2.5], [3]], { tensor: true }),
];
