/** x[i] reads and writes on arrays and objects, push/pop. */
import { p, type CorpusProgram } from "./types.js";

export const indexing: CorpusProgram[] = [
  p("indexed reads in a counted loop", ["x[i]", "for"], function (xs: number[], n: number) {
    let s = 0;
    for (let i = 0; i < n; i++) s += xs[i]! * (i + 1);
    return s;
  }, [[[1, 2, 3, 4], 4], [[5, 6, 7], 2]], { tensor: { wrap: [0] } }),

  p("two-dimensional reads", ["x[i][j]", "for", "nesting"], function (m: number[][], rows: number, cols: number) {
    let trace = 0;
    let total = 0;
    for (let i = 0; i < rows; i++) {
      for (let j = 0; j < cols; j++) {
        total += m[i]![j]!;
        if (i === j) trace += m[i]![j]!;
      }
    }
    return [trace, total];
  }, [[[[1, 2, 3], [4, 5, 6], [7, 8, 9]], 3, 3]], { tensor: { wrap: [0] } }),

  p("writes into a fresh array", ["x[i]=", "for"], function (n: number) {
    const ys: number[] = [];
    for (let i = 0; i < n; i++) ys[i] = i * i;
    ys[n + 1] = -1;
    return [ys, ys.length, 1 in ys];
  }, [[0], [3]]),

  p("writes to an input array are visible to aliases", ["x[i]=", "aliasing"], function (xs: number[]) {
    const alias = xs;
    xs[0] = 100;
    alias[1] = 200;
    return [xs, alias === xs];
  }, [[[1, 2, 3]]]),

  p("computed object keys", ["x[k]", "x[k]=", "objects"], function (keys: string[]) {
    const counts: Record<string, number> = {};
    for (const k of keys) {
      if (counts[k] === undefined) counts[k] = 0;
      counts[k] = counts[k]! + 1;
    }
    return counts;
  }, [[["a", "b", "a", "c", "a"]], [[]]]),

  p("push and pop as a stack", ["push", "pop"], function (ops: string) {
    const stack: number[] = [];
    const popped: (number | undefined)[] = [];
    let v = 0;
    for (const op of ops) {
      if (op === "+") stack.push(++v);
      else popped.push(stack.pop());
    }
    return [stack, popped];
  }, [["++-+--+"], ["-"]]),

  p("push returns the length; pop from empty is undefined", ["push", "pop"], function () {
    const a: number[] = [];
    const l1 = a.push(1);
    const l2 = a.push(2, 3);
    const x = a.pop();
    const y = [].pop();
    return [l1, l2, x, y, a];
  }, [[]]),

  p("nested member writes", ["x[i]=", "member-assignment", "nesting"], function () {
    const o = { a: { b: [1, 2, 3] }, c: [[0, 0], [0, 0]] };
    for (let i = 0; i < 3; i++) o.a.b[i]! += i * 10;
    o.c[1]![0] = 5;
    o.c[0]![1]! += 7;
    return o;
  }, [[]]),

  p("the index expression is evaluated once", ["x[i]=", "side-effects", "console.log"], function () {
    const xs = [0, 0, 0, 0];
    let k = 0;
    const next = () => {
      console.log("next", k);
      return k++;
    };
    xs[next()] = 5;
    xs[next()] += 6;
    xs[next()]++;
    return [xs, k];
  }, [[]]),

  p("out-of-range and odd keys", ["x[i]", "undefined"], function () {
    const xs: any = [1, 2, 3];
    xs["foo"] = "bar";
    xs[-1] = "neg";
    return [xs[5], xs[-1], xs["foo"], xs.length, xs["1"], xs[1.5]];
  }, [[]]),

  p("string indexing", ["x[i]", "strings"], function (s: string) {
    let out = "";
    for (let i = s.length - 1; i >= 0; i--) out += s[i];
    return [out, s[100]];
  }, [["abc"], [""]]),

  p("indexed write on a tensor rebinds it", ["x[i]=", "functional-update"], function (xs: number[]) {
    xs[0] = 5;
    xs[2] = xs[1]! * 3;
    return xs;
  }, [[[1, 2, 3]], [[0, -1, 4]]], { tensor: true }),

  p("row writes of a matrix", ["x[i][j]=", "nesting"], function (n: number) {
    const m: number[][] = [];
    for (let i = 0; i < n; i++) {
      m.push([]);
      for (let j = 0; j < n; j++) m[i]![j] = i === j ? 1 : 0;
    }
    return m;
  }, [[3]]),

  p("push in a counted loop", ["push", "for"], function (n: number) {
    const out: number[] = [];
    let x = 1;
    for (let i = 0; i < n; i++) {
      x = x * 2;
      out.push(x);
    }
    return out;
  }, [[4]], { tensor: { wrap: [] } }),

  p("pop until a condition", ["pop", "while", "break"], function (xs: number[]) {
    let sum = 0;
    while (xs.length > 0) {
      const v = xs.pop()!;
      if (v < 0) break;
      sum += v;
    }
    return [sum, xs];
  }, [[[1, -2, 3, 4]], [[5, 6]]]),

  p("array length assignment and holes", ["length", "x[i]="], function () {
    const a = [1, 2, 3, 4];
    a.length = 2;
    const b: number[] = [];
    b[3] = 1;
    return [a, b.length, 0 in b, b.indexOf(1)];
  }, [[]]),

  p("delete a property", ["delete", "objects"], function () {
    const o: Record<string, number> = { a: 1, b: 2 };
    const d = delete o.a;
    return [d, Object.keys(o), o.a];
  }, [[]]),

  p("for-of over Object.keys with reads", ["for-of", "x[k]", "objects"], function () {
    const o: Record<string, number> = { x: 3, y: 4, z: 5 };
    let s = "";
    for (const k of Object.keys(o)) s += k + "=" + o[k] + ";";
    return s;
  }, [[]]),

  p("indexed reads with a data-dependent index", ["x[i]", "while"], function (xs: number[], start: number) {
    let i = start;
    let steps = 0;
    while (xs[i]! > 0 && steps < 10) {
      i = xs[i]!;
      steps++;
    }
    return [i, steps];
  }, [[[2, 0, 3, 1], 0], [[1, 2, 3, 0], 0]], { tensor: { dtypes: { 0: "int32", 1: "int32" } } }),

  p("negative and chained indexing of nested arrays", ["x[i][j]", "x[i]"], function () {
    const grid = [[1, [2, 3]], [4, [5, [6]]]] as any;
    return [grid[0][1][1], grid[1][1][1][0], grid.at(-1)[0], grid[2]];
  }, [[]]),

  p("swap elements", ["x[i]=", "destructuring"], function (xs: number[]) {
    [xs[0], xs[2]] = [xs[2]!, xs[0]!];
    const t = xs[1]!;
    xs[1] = xs[0]!;
    xs[0] = t;
    return xs;
  }, [[[1, 2, 3]]]),

  p("indexed writes in a data-dependent loop", ["x[i]=", "x[i]", "while", "functional-update"], function (xs: number[], n: number) {
    let i = 0;
    while (i < n) {
      xs[i] = xs[i]! * 2 + i;
      i = i + 1;
    }
    return xs;
  }, [[[1, 2, 3, 4], 2], [[5, 6, 7, 8], 4]], { tensor: { dtypes: { 1: "int32" } } }),

  p("bubble sort with indexed writes", ["x[i]=", "x[i]", "for", "if"], function (xs: number[], n: number) {
    for (let pass = 0; pass < n; pass++) {
      for (let i = 0; i + 1 < n; i++) {
        if (xs[i]! > xs[i + 1]!) {
          const t = xs[i]!;
          xs[i] = xs[i + 1]!;
          xs[i + 1] = t;
        }
      }
    }
    return xs;
  }, [[[3, 1, 2, 5, 4], 5], [[2, 2, -1, 0, 9], 5]], { tensor: { wrap: [0] } }),
];
