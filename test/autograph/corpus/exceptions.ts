/** throw, try/catch/finally, exception types through converted code. */
import { p, type CorpusProgram } from "./types.js";

class CorpusError extends Error {
  constructor(
    message: string,
    readonly code: number,
  ) {
    super(message);
    this.name = "CorpusError";
  }
}

function failIfNegative(x: number): number {
  if (x < 0) throw new RangeError("negative: " + x);
  return x * 2;
}

export const exceptions: CorpusProgram[] = [
  p("throw and catch an Error", ["throw", "try-catch"], function (x: number) {
    try {
      if (x > 1) throw new Error("too big " + x);
      return "ok";
    } catch (e) {
      return "caught " + (e as Error).message;
    }
  }, [[1], [5]]),

  p("uncaught custom error class", ["throw", "exception-type"], function (x: number) {
    if (x === 3) throw new CorpusError("three", 3);
    return x;
  }, [[1], [3]], { scope: { CorpusError } }),

  p("RangeError thrown from inside a loop", ["throw", "for", "exception-type"], function (n: number) {
    let s = 0;
    for (let i = 0; i < 10; i++) {
      s += i;
      if (s > n) throw new RangeError("sum " + s + " passed " + n);
    }
    return s;
  }, [[100], [7]]),

  p("return in finally overrides", ["try-finally", "return"], function (x: number) {
    const log: string[] = [];
    const f = () => {
      try {
        log.push("try");
        if (x > 0) throw new Error("x");
        return "from try";
      } finally {
        log.push("finally");
        // eslint-disable-next-line no-unsafe-finally
        if (x > 5) return "from finally";
      }
    };
    let r: string;
    try {
      r = f();
    } catch (e) {
      r = "caught " + (e as Error).message;
    }
    return [r, log];
  }, [[0], [1], [9]]),

  p("try/catch in a loop with continue in catch", ["try-catch", "for", "continue"], function (xs: number[]) {
    const out: number[] = [];
    let errors = 0;
    for (const x of xs) {
      try {
        if (x === 0) throw new Error("zero");
      } catch {
        errors++;
        continue;
      }
      out.push(10 / x);
    }
    return [out, errors];
  }, [[[1, 0, 2, 0, 5]]]),

  p("break inside try runs finally", ["try-finally", "break", "while"], function (n: number) {
    const log: string[] = [];
    let i = 0;
    while (true) {
      try {
        i++;
        if (i >= n) break;
        log.push("body" + i);
      } finally {
        log.push("finally" + i);
      }
    }
    return log;
  }, [[1], [3]]),

  p("return inside try logs in finally", ["try-finally", "return", "console.log"], function (x: number) {
    try {
      console.log("trying", x);
      return x * 2;
    } finally {
      console.log("finally", x);
    }
  }, [[4]]),

  p("throw non-Error values", ["throw", "try-catch"], function (kind: number) {
    try {
      if (kind === 0) throw "a string";
      if (kind === 1) throw 42;
      if (kind === 2) throw { code: 7 };
      throw null;
    } catch (e) {
      return [typeof e, e];
    }
  }, [[0], [1], [2], [3]]),

  p("nested try with rethrow", ["try-catch", "throw", "nesting"], function (x: number) {
    const log: string[] = [];
    try {
      try {
        if (x > 0) throw new TypeError("inner " + x);
        log.push("no throw");
      } catch (e) {
        log.push("inner caught " + (e as Error).message);
        if (x > 5) throw e;
      } finally {
        log.push("inner finally");
      }
    } catch (e) {
      log.push("outer caught " + (e as Error).constructor.name);
    }
    return log;
  }, [[0], [1], [9]]),

  p("TypeError from calling a non-function", ["exception-type", "calls"], function (x: number) {
    const fns: any = { a: () => 1 };
    return fns[x > 0 ? "a" : "b"]();
  }, [[1], [-1]], { exceptionTypeOnly: true }),

  p("TypeError from reading a property of undefined is caught", ["try-catch", "exception-type"], function (x: number) {
    const o: any = x > 0 ? { a: { b: 1 } } : {};
    try {
      return o.a.b;
    } catch (e) {
      return (e as Error).constructor.name;
    }
  }, [[1], [-1]]),

  p("if (...) throw on numbers", ["if-throw", "exception-type"], function (x: number) {
    if (x > 10) throw new RangeError("x too large");
    return x * 3;
  }, [[2], [11]], { tensor: true }),

  p("exception thrown in the right operand of &&", ["&&", "throw", "try-catch"], function (x: number) {
    const check = (v: number) => {
      if (v > 3) throw new Error("check failed for " + v);
      return true;
    };
    try {
      return x > 0 && check(x);
    } catch (e) {
      return (e as Error).message;
    }
  }, [[-1], [2], [5]]),

  p("exception from a getter", ["getters", "exception-type", "try-catch"], function (x: number) {
    const o = {
      get v(): number {
        if (x < 0) throw new SyntaxError("bad getter");
        return x;
      },
    };
    let r = 0;
    try {
      r = o.v + o.v;
    } catch (e) {
      return (e as Error).name + ": " + (e as Error).message;
    }
    return r;
  }, [[2], [-2]]),

  p("catch parameter shadows an outer variable", ["try-catch", "shadowing"], function (x: number) {
    const e = "outer";
    let seen = "";
    try {
      if (x) throw "inner";
    } catch (e) {
      seen = String(e);
    }
    return [e, seen];
  }, [[1], [0]]),

  p("finally with break discards the exception", ["try-finally", "break", "for"], function () {
    let i = 0;
    for (; i < 5; i++) {
      try {
        if (i === 2) throw new Error("lost");
      } finally {
        // eslint-disable-next-line no-unsafe-finally
        if (i === 2) break;
      }
    }
    return i;
  }, [[]]),

  p("error from a helper in a loop, caught outside", ["calls", "try-catch", "for"], function (xs: number[]) {
    const out: number[] = [];
    try {
      for (const x of xs) out.push(failIfNegative(x));
    } catch (e) {
      return [out, (e as Error).constructor.name, (e as Error).message];
    }
    return [out];
  }, [[[1, 2, -3, 4]], [[5]]], { scope: { failIfNegative } }),

  p("throw from a closure created in a loop", ["closures", "throw", "try-catch"], function () {
    const fns: (() => number)[] = [];
    for (let i = 0; i < 3; i++)
      fns.push(() => {
        if (i === 1) throw new EvalError("closure " + i);
        return i;
      });
    const out: unknown[] = [];
    for (const f of fns) {
      try {
        out.push(f());
      } catch (e) {
        out.push((e as Error).constructor.name + " " + (e as Error).message);
      }
    }
    return out;
  }, [[]]),

  p("uncaught error thrown after logging", ["throw", "console.log", "exception-type"], function (n: number) {
    for (let i = 0; i < n; i++) console.log("step", i);
    throw new URIError("after " + n + " steps");
  }, [[2]]),

  p("exception escapes nested loops", ["throw", "nesting", "exception-type"], function (target: number) {
    for (let i = 0; i < 4; i++) {
      for (let j = 0; j < 4; j++) {
        if (i * j === target) throw new CorpusError("hit " + i + "," + j, i * 10 + j);
      }
    }
    return "miss";
  }, [[6], [7]], { scope: { CorpusError } }),
];
