/** console.log output through converted code. */
import { p, type CorpusProgram } from "./types.js";

export const logging: CorpusProgram[] = [
  p("console.log with values of every kind", ["console.log"], function (x: number) {
    console.log("x is", x, [1, [2, 3]], { a: x, b: "s" }, undefined, null, true, -0, NaN, 10n);
    return x;
  }, [[3]]),

  p("console.log in every iteration", ["console.log", "for"], function (n: number) {
    let s = 0;
    for (let i = 0; i < n; i++) {
      s += i;
      console.log("i =", i, "s =", s);
    }
    return s;
  }, [[4]], { tensor: true }),

  p("console.log format specifiers", ["console.log", "format"], function (n: number) {
    console.log("%d items cost %s (%i%%)", n, "cheap", 7.9);
    console.log("%o and %j", { k: [1] }, 2);
    return n;
  }, [[5]]),

  p("console.log with no arguments", ["console.log"], function () {
    console.log();
    console.log("");
    return 0;
  }, [[]]),

  p("console.log in branches and nested functions", ["console.log", "if", "calls"], function (x: number) {
    const inner = (v: number) => {
      if (v > 0) console.log("inner positive", v);
      else console.log("inner non-positive", v);
      return v * 2;
    };
    if (x > 1) console.log("outer big");
    else console.log("outer small");
    return inner(x - 1);
  }, [[3], [0]]),

  p("aliased console.log", ["console.log", "aliasing"], function (x: number) {
    const log = console.log;
    log("aliased", x);
    const { log: log2 } = console;
    log2("destructured", x);
    return x;
  }, [[1]]),

  p("console.log returns undefined", ["console.log", "values"], function () {
    const r = console.log("value?");
    return [r, typeof r];
  }, [[]]),

  p("console.log while a loop searches", ["console.log", "while", "break"], function (target: number) {
    let lo = 0;
    let hi = 64;
    while (lo < hi) {
      const mid = Math.floor((lo + hi) / 2);
      console.log("probe", mid);
      if (mid === target) {
        lo = mid;
        break;
      }
      if (mid < target) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }, [[37], [0], [63]], { tensor: true }),

  p("console.log of strings built in a loop", ["console.log", "strings", "for"], function (n: number) {
    let line = "";
    for (let i = 0; i < n; i++) {
      line += "*";
      console.log(line);
    }
    return line.length;
  }, [[3]]),
];
