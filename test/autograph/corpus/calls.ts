/** Helper calls (converted too), recursion, getters with side effects, methods, callbacks. */
import { p, type CorpusProgram } from "./types.js";

function relu(x: number): number {
  if (x > 0) return x;
  return 0;
}

function clampedSquare(x: number, hi: number): number {
  let y = x * x;
  if (y > hi) y = hi;
  return y;
}

function sumTo(n: number): number {
  let s = 0;
  for (let i = 1; i <= n; i++) s += i;
  return s;
}

function firstAbove(xs: number[], t: number): number {
  for (const v of xs) {
    if (v > t) return v;
  }
  return -1;
}

function recSum(n: number): number {
  return n <= 0 ? 0 : n + recSum(n - 1);
}

class Vec {
  constructor(
    public x: number,
    public y: number,
  ) {}
  add(o: Vec): Vec {
    return new Vec(this.x + o.x, this.y + o.y);
  }
  get norm1(): number {
    return Math.abs(this.x) + Math.abs(this.y);
  }
}

export const calls: CorpusProgram[] = [
  p("helper with an if", ["calls", "helper", "if"], function (x: number) {
    return relu(x) + relu(-x) * 2;
  }, [[3], [-4]], { scope: { relu }, tensor: true }),

  p("helper called in a loop", ["calls", "helper", "for"], function (n: number) {
    let s = 0;
    for (let i = 0; i < n; i++) s += clampedSquare(i, 10);
    return s;
  }, [[0], [6]], { scope: { clampedSquare }, tensor: true }),

  p("helper with a loop, called with a tensor bound", ["calls", "helper", "for"], function (n: number) {
    return sumTo(n) * 2;
  }, [[0], [5]], { scope: { sumTo }, tensor: true }),

  p("helper returning from inside for-of", ["calls", "helper", "for-of", "return"], function (xs: number[], t: number) {
    return firstAbove(xs, t);
  }, [[[1, 5, 9], 4], [[1, 2], 4]], { scope: { firstAbove }, tensor: true }),

  p("factorial by local recursion", ["recursion", "calls"], function (n: number) {
    function fact(k: number): number {
      if (k <= 1) return 1;
      return k * fact(k - 1);
    }
    return fact(n);
  }, [[0], [1], [6]], { tensor: true }),

  p("fibonacci by local recursion", ["recursion", "calls", "ternary"], function (n: number) {
    const fib = (k: number): number => (k < 2 ? k : fib(k - 1) + fib(k - 2));
    return fib(n);
  }, [[0], [1], [10]], { tensor: { staged: false } }),

  p("mutual recursion with hoisted declarations", ["recursion", "hoisting"], function (n: number) {
    return [isEven(n), isOdd(n)];
    function isEven(k: number): boolean {
      return k === 0 ? true : isOdd(k - 1);
    }
    function isOdd(k: number): boolean {
      return k === 0 ? false : isEven(k - 1);
    }
  }, [[0], [7], [10]]),

  p("recursive helper from scope", ["recursion", "helper"], function (n: number) {
    return recSum(n);
  }, [[0], [5]], { scope: { recSum }, tensor: { staged: false } }),

  p("getters evaluated once and in order", ["getters", "side-effects", "console.log"], function () {
    const log: string[] = [];
    const o = {
      get a() {
        log.push("a");
        console.log("get a");
        return 1;
      },
      get b() {
        log.push("b");
        console.log("get b");
        return 2;
      },
    };
    const s = o.a + o.b * o.a;
    const t = o.b > o.a ? o.a : o.b;
    return [s, t, log.join("")];
  }, [[]]),

  p("getter in a loop condition", ["getters", "while", "side-effects"], function (n: number) {
    let reads = 0;
    let i = 0;
    const box = {
      get limit() {
        reads++;
        return n;
      },
    };
    while (i < box.limit) i++;
    return [i, reads];
  }, [[0], [3]]),

  p("method calls bind this", ["this", "calls", "methods"], function (x: number) {
    const acc = {
      k: 3,
      scale(v: number) {
        return v * this.k;
      },
    };
    let s = 0;
    for (let i = 0; i < 3; i++) s += acc.scale(x + i);
    return s;
  }, [[2]]),

  p("spread arguments and rest parameters", ["calls", "spread", "rest"], function (xs: number[]) {
    const sum = (...vs: number[]) => {
      let s = 0;
      for (const v of vs) s += v;
      return s;
    };
    return [sum(...xs), sum(1, ...xs, 2), Math.max(...xs, -Infinity)];
  }, [[[1, 2, 3]], [[]]]),

  p("default parameters evaluated per call", ["calls", "default-parameters", "side-effects"], function () {
    let counter = 0;
    const next = () => ++counter;
    const f = (a = next(), b = a * 10) => [a, b];
    return [f(), f(5), f(undefined, 1), counter];
  }, [[]]),

  p("callbacks to native array methods", ["callbacks", "closures"], function (xs: number[]) {
    const doubled = xs.map((x) => x * 2);
    const evens = xs.filter((x) => x % 2 === 0);
    const total = xs.reduce((a, b) => a + b, 0);
    const found = xs.find((x) => x > 2);
    const sorted = [...xs].sort((a, b) => b - a);
    return { doubled, evens, total, found, sorted };
  }, [[[3, 1, 4, 1, 5]]]),

  p("counter closures returned from a function", ["closures", "calls", "for"], function (n: number) {
    const makeCounter = (start: number) => {
      let c = start;
      return () => c++;
    };
    const a = makeCounter(10);
    const b = makeCounter(100);
    const out: number[] = [];
    for (let i = 0; i < n; i++) out.push(i % 2 === 0 ? a() : b());
    return out;
  }, [[5]]),

  p("native functions are called as they are", ["calls", "native"], function (x: number) {
    return [JSON.stringify({ x, y: [x] }), String(x), parseInt("42px"), Number.isInteger(x), Array.from({ length: 3 }, (_, i) => i * x), Object.keys({ a: 1, b: 2 })];
  }, [[3], [2.5]]),

  p("constructing a class from scope", ["calls", "new", "classes", "getters"], function (n: number) {
    let v = new Vec(0, 0);
    for (let i = 0; i < n; i++) v = v.add(new Vec(i, -2 * i));
    return [v.x, v.y, v.norm1, v instanceof Vec];
  }, [[4]], { scope: { Vec } }),

  p("helper with early return in a loop", ["calls", "helper", "return", "for-of"], function (xs: number[]) {
    let s = 0;
    for (const x of xs) s += firstAbove([x, x * 2, x * 3], 5);
    return s;
  }, [[[1, 2, 3, 6]]], { scope: { firstAbove } }),

  p("immediately invoked function in a loop", ["calls", "iife", "for"], function (n: number) {
    const out: number[] = [];
    for (let i = 0; i < n; i++) {
      out.push(
        ((k) => {
          if (k % 2) return k * 10;
          return -k;
        })(i),
      );
    }
    return out;
  }, [[4]]),

  p("argument evaluation order", ["calls", "side-effects", "console.log"], function () {
    const order: string[] = [];
    const t = (name: string, v: number) => {
      order.push(name);
      console.log("arg", name);
      return v;
    };
    const f = (a: number, b: number, c: number) => a * 100 + b * 10 + c;
    const r = f(t("a", 1), t("b", 2), t("c", 3)) + t("d", 4);
    return [r, order];
  }, [[]]),

  p("recursive depth-first search", ["recursion", "for-of", "push", "pop"], function (n: number) {
    const results: string[] = [];
    const path: number[] = [];
    const dfs = (depth: number) => {
      if (depth === n) {
        results.push(path.join(""));
        return;
      }
      for (const c of [1, 2]) {
        if (path.length > 0 && path[path.length - 1] === c) continue;
        path.push(c);
        dfs(depth + 1);
        path.pop();
      }
    };
    dfs(0);
    return results;
  }, [[3], [0]]),

  p("computed getter key evaluated once", ["getters", "x[k]", "side-effects"], function () {
    let reads = 0;
    const o: Record<string, number> = {};
    Object.defineProperty(o, "hot", {
      get() {
        reads++;
        return reads * 10;
      },
    });
    const key = "hot";
    const a = o[key]! + o[key]!;
    return [a, reads];
  }, [[]]),

  p("function stored in an array is called with the array as this", ["calls", "this", "x[i]"], function () {
    const fns: any[] = [
      function (this: unknown) {
        return Array.isArray(this) ? "array this" : String(this);
      },
    ];
    const first = fns[0]();
    const detached = fns[0];
    return [first, detached()];
  }, [[]]),

  p("generator functions are left as they are", ["generators", "for-of"], function (n: number) {
    function* upTo(k: number) {
      for (let i = 0; i < k; i++) {
        if (i === 2) continue;
        yield i * i;
      }
    }
    const out: number[] = [];
    for (const v of upTo(n)) out.push(v);
    return out;
  }, [[5]]),

  p("method chaining on results", ["calls", "methods"], function (s: string) {
    return s.trim().split(" ").map((w) => w.toUpperCase()).reverse().join("-");
  }, [["  hello autograph world "]]),

  p("class declared inside the program", ["classes", "getters", "calls"], function (n: number) {
    class Acc {
      total = 0;
      add(v: number) {
        if (v > 0) this.total += v;
        return this;
      }
      get doubled() {
        return this.total * 2;
      }
    }
    const a = new Acc();
    for (let i = -2; i < n; i++) a.add(i);
    return a.doubled;
  }, [[4]]),

  p("setter side effects with compound assignment", ["setters", "side-effects", "for"], function (n: number) {
    const log: number[] = [];
    let raw = 1;
    const o = {
      get v() {
        return raw;
      },
      set v(x: number) {
        log.push(x);
        raw = x;
      },
    };
    for (let i = 0; i < n; i++) o.v *= 2;
    return [raw, log];
  }, [[3]]),
];
