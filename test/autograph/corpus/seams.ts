/**
 * Seams between JavaScript and tensors (issue 11): callbacks given to array methods and to
 * built-ins passed as values, f.call/apply/bind, isNaN/Number on values, switch, TDZ, writes to
 * `arguments`, jumps in `finally`, recursion through a scope, returns that fall off the end, JS
 * numbers carried through loops (weak types), and the constructs TensorFlow's AutoGraph stages
 * (a variable first assigned in a loop, an object gaining keys, writes at a loop counter, pop,
 * nested lists, a conditional choosing between closures). Helpers used here are module-level
 * bindings that never change: run-time conversion resolves them without a `scope`.
 */
import { p, type CorpusProgram } from "./types.js";

const SCALE = 3;

function squareIfPositive(v: number): number {
  return v > 0 ? v * v : -v;
}

const scaler = {
  k: 2,
  apply(v: number): number {
    return v > 1 ? v * this.k : v;
  },
};

function isEvenRec(k: number): boolean {
  if (k <= 0) return k === 0;
  return isOddRec(k - 1);
}
function isOddRec(k: number): boolean {
  if (k <= 0) return false;
  return isEvenRec(k - 1);
}

export const seams: CorpusProgram[] = [
  p("map with a callback computing on the argument", ["callbacks", "map", "*"], function (x: number) {
    return [1, 2, 3].map((v) => v * x + SCALE);
  }, [[2], [-0.5]], { tensor: true }),

  p("reduce and forEach with a closure updating a variable", ["callbacks", "reduce", "forEach", "closures"], function (x: number) {
    let s = x * 0;
    [1, 2, 3].forEach((k) => {
      if (x > k) s = s + k;
    });
    return [1, 2, 3].reduce((acc, k) => (k > x ? acc + k * x : acc - k), s);
  }, [[0.5], [2.5], [4]], { tensor: true }),

  p("built-ins passed as values", ["callbacks", "Math.*", "builtins-as-values"], function (x: number) {
    return [x, -x, x / 4].map(Math.abs).map(Math.floor);
  }, [[3.5], [-9]], { tensor: true }),

  p("a module function passed to map", ["callbacks", "helper", "ternary"], function (x: number) {
    return [x, x - 2, x + 2].map(squareIfPositive);
  }, [[1], [3]], { tensor: true }),

  p("filter and some with predicates on numbers", ["callbacks", "filter", "some"], function (xs: number[], t: number) {
    const big = xs.filter((v) => v > t);
    return [big.length, xs.some((v) => v === t), xs.every((v) => v > -10), xs.findIndex((v) => v > t)];
  }, [[[1, 5, 9], 4], [[1, 2], 4]]),

  p("bound methods, call and apply", ["callbacks", "bind", "call", "apply", "this"], function (x: number) {
    const bound = scaler.apply.bind(scaler);
    return [bound(x), scaler.apply.call(scaler, x), scaler.apply.apply(scaler, [x]), [x].map(scaler.apply, scaler)[0]];
  }, [[0.5], [3]], { tensor: true }),

  p("isNaN, isFinite, Number and Boolean on numbers", ["builtins", "isNaN", "Number"], function (x: number) {
    return [isNaN(x), Number.isNaN(x / x), isFinite(1 / x), Number.isInteger(x), Number(x > 1), Boolean(x)];
  }, [[0], [2], [1.5]]),

  p("switch on a number", ["switch", "break"], function (x: number) {
    let out = 0;
    switch (x) {
      case 1:
        out = 10;
        break;
      case 2:
      case 3:
        out += x * 3;
        break;
      default:
        out = -1;
    }
    return out;
  }, [[1], [2], [3], [7]], { tensor: { staged: false } }),

  p("TDZ: a let read before its declaration, after an early return", ["tdz", "return", "exception-type"], function (x: number) {
    if (x > 0) {
      // @ts-expect-error -- read in its temporal dead zone on purpose
      return later * 2;
    }
    const later = x - 1;
    return later;
  }, [[1], [-1]], { tensor: { staged: false } }),

  p("writes to arguments", ["arguments", "x[i] write", "+="], function (a: number, b: number) {
    // eslint-disable-next-line prefer-rest-params
    arguments[0] = 10;
    // eslint-disable-next-line prefer-rest-params
    arguments[1] += 1;
    // eslint-disable-next-line prefer-rest-params
    return [a, b, arguments[0], arguments[1]];
  }, [[1, 2]]),

  p("continue in finally cancels a pending return", ["finally", "continue", "return"], function (n: number) {
    let tries = 0;
    for (let i = 0; i < n; i++) {
      try {
        tries++;
        return [i, tries];
      } finally {
        if (i < 2) continue;
      }
    }
    return [-1, tries];
  }, [[0], [1], [5]]),

  p("mutual recursion between module functions", ["recursion", "helper"], function (n: number) {
    return [isEvenRec(n), isOddRec(n)];
  }, [[0], [5], [8]], { tensor: { staged: false } }),

  p("a return under a condition, falling off the end otherwise", ["return", "undefined"], function (x: number) {
    if (x > 0) return x * 2;
  }, [[3], [-3]], { tensor: { staged: false } }),

  p("a bare return beside a value", ["return", "undefined"], function (x: number) {
    if (x > 0) return;
    return x;
  }, [[3], [-3]], { tensor: { staged: false } }),

  p("a loop counter returned beside a float", ["weak types", "while", "return"], function (x: number) {
    let i = 0;
    while (x < 100) {
      if (x > 5) return i;
      x = x + 1.5;
      i++;
    }
    return x;
  }, [[2], [200], [5.25]], { tensor: true }),

  p("a JS number accumulated in a loop keeps JS precision", ["weak types", "while", "*"], function (n: number) {
    let j = 0;
    let acc = 0;
    while (j < n) {
      acc = acc + j * 0.1;
      j++;
    }
    return [acc, j * 0.1, j / 3];
  }, [[0], [7]], { tensor: { dtypes: { 0: "int32" } } }),

  p("a variable first assigned inside a loop and used after it", ["parity", "while", "undefined-before-loop"], function (x: number) {
    let y;
    while (x < 10) {
      y = x * 2;
      x = x + 3;
    }
    return y;
  }, [[1], [9]], { tensor: true }),

  p("an object that gains a key inside a loop", ["parity", "while", "objects"], function (x: number) {
    const o: { a: number; b?: number } = { a: x };
    while (x < 10) {
      o.b = x * 2;
      x = x + 4;
    }
    return o;
  }, [[1], [7]], { tensor: true }),

  p("array writes at the loop counter", ["parity", "for", "x[i] write"], function (n: number) {
    const xs = [0, 0, 0, 0];
    for (let i = 0; i < n; i++) xs[i] = i * 10 + 1;
    return xs;
  }, [[0], [2], [4]], { tensor: { dtypes: { 0: "int32" } } }),

  p("pop in a loop", ["parity", "while", "pop"], function (x: number) {
    const xs = [x, x * 2, x * 3];
    let s = 0;
    while (s < 4 && xs.length > 0) s = s + (xs.pop() as number);
    return s;
  }, [[1], [0.75]], { tensor: { staged: false } }),

  p("pop until a sum is reached (staged: a tensor list)", ["parity", "while", "pop"], function (x: number) {
    const xs = [x, x * 2, x * 3];
    let s = x * 0;
    while (s < 4) s = s + (xs.pop() as number);
    return s;
  }, [[1], [0.75]], { tensor: true }),

  p("nested lists filled in loops", ["parity", "for", "push", "nested lists"], function (n: number) {
    const rows: number[][] = [];
    for (let i = 0; i < n; i++) {
      const row: number[] = [];
      for (let j = 0; j < 3; j++) row.push(i * 10 + j);
      rows.push(row);
    }
    return rows;
  }, [[1], [3]], { tensor: { dtypes: { 0: "int32" } } }),

  p("a conditional choosing between closures, called", ["parity", "closures", "ternary", "if"], function (x: number) {
    const g = (v: number) => v * v * 3;
    const h = (v: number) => v - 1;
    const chosen = x > 0 ? g : h;
    let k = (v: number) => v * 2;
    if (x < -1) k = (v: number) => -v;
    return chosen(x) + k(x);
  }, [[2], [-0.5], [-3]], { tensor: true }),
];
