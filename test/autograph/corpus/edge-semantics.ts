/**
 * Edge cases of JavaScript semantics that a rewrite can easily get wrong: evaluation order of
 * valueOf/getters through the operators, iterator protocol (early exit closes the iterator,
 * arrays grown while iterated, strings by code point), loop-head closures, destructuring
 * defaults, private fields, super, tagged templates, and sloppy-mode functions.
 */
import { p, type CorpusProgram } from "./types.js";

export const edgeSemantics: CorpusProgram[] = [
  p("valueOf order through arithmetic and comparisons", ["+", "<", ">", "<=", ">=", "==", "side-effects"], function () {
    const log: string[] = [];
    const v = (name: string, x: number) => ({
      valueOf() {
        log.push(name);
        return x;
      },
    });
    const a: any = v("a", 1);
    const b: any = v("b", 2);
    const r = [a + b, a - b, a * b, a / b, a % b, a ** b, a < b, a > b, a <= b, a >= b, a == b, a != b, -a, +b];
    return [r, log.join("")];
  }, [[]]),

  p("unary plus on a BigInt throws TypeError", ["unary+", "bigint", "exception-type", "try-catch"], function () {
    const big: any = 5n;
    const out: string[] = [];
    try {
      out.push(String(+big));
    } catch (e) {
      out.push((e as Error).constructor.name);
    }
    try {
      out.push(String(big + 1));
    } catch (e) {
      out.push((e as Error).constructor.name);
    }
    out.push(String(-big), String(big ** 2n), String(big % 3n));
    try {
      out.push(String(big % 0n));
    } catch (e) {
      out.push((e as Error).constructor.name);
    }
    return out;
  }, [[]]),

  p("break out of for-of over a generator closes it", ["for-of", "break", "generators", "try-finally", "console.log"], function (stop: number) {
    function* numbers() {
      try {
        for (let i = 0; i < 10; i++) {
          console.log("yield", i);
          yield i;
        }
      } finally {
        console.log("generator closed");
      }
    }
    let s = 0;
    for (const v of numbers()) {
      if (v === stop) break;
      s += v;
    }
    return s;
  }, [[2], [20]]),

  p("return and throw out of for-of close the iterator", ["for-of", "return", "throw", "generators", "console.log"], function (mode: number) {
    let closed = 0;
    const iterable = {
      [Symbol.iterator]() {
        let i = 0;
        return {
          next: () => ({ value: i++, done: i > 5 }),
          return: () => {
            closed++;
            console.log("return() called");
            return { value: undefined, done: true };
          },
        };
      },
    };
    const f = () => {
      for (const v of iterable) {
        if (v === 2 && mode === 0) return "returned";
        if (v === 2 && mode === 1) throw new Error("thrown");
      }
      return "finished";
    };
    let r: string;
    try {
      r = f();
    } catch (e) {
      r = (e as Error).message;
    }
    return [r, closed];
  }, [[0], [1], [2]]),

  p("an array grown while iterated is seen by for-of", ["for-of", "push"], function () {
    const arr = [1, 2];
    const seen: number[] = [];
    for (const v of arr) {
      seen.push(v);
      if (v < 4) arr.push(v + 2);
    }
    return seen;
  }, [[]]),

  p("for-of over a string iterates code points", ["for-of", "strings"], function (s: string) {
    const parts: string[] = [];
    for (const ch of s) parts.push(ch);
    return [parts.length, parts.join("|")];
  }, [["a😀b"], ["naïve"]]),

  p("for-of over typed arrays, holes and arguments", ["for-of", "arguments"], function (..._xs: number[]) {
    let s = 0;
    for (const v of new Float64Array([0.5, 1.5])) s += v;
    const holes: unknown[] = [];
    // eslint-disable-next-line no-sparse-arrays
    for (const v of [1, , 3]) holes.push(v);
    // eslint-disable-next-line prefer-rest-params
    for (const a of arguments) s += a;
    return [s, holes];
  }, [[10, 20], []]),

  p("a closure in the for-loop head sees the initial binding", ["closures", "for", "let"], function () {
    const out: number[] = [];
    for (let i = 0, f = () => i; i < 3; i++) out.push(f() * 10 + i);
    return out;
  }, [[]]),

  p("closures created in the loop test capture that iteration", ["closures", "for", "let"], function () {
    const fns: (() => number)[] = [];
    for (let i = 0; fns.push(() => i), i < 3; i++) {
      /* body */
    }
    return fns.map((f) => f());
  }, [[]]),

  p("destructuring defaults are evaluated lazily", ["destructuring", "side-effects", "default-parameters"], function (o: { a?: number; b?: number }) {
    let calls = 0;
    const d = (v: number) => {
      calls++;
      return v;
    };
    const { a = d(10), b = d(20) } = o;
    const [x = d(30), y = d(40)] = [o.a, undefined];
    return [a, b, x, y, calls];
  }, [[{ a: 1 }], [{ b: 2 }], [{}]]),

  p("while with an assignment in the test (regex scan)", ["while", "assignment-expression", "strings"], function (s: string) {
    const re = /\d+/g;
    let m: RegExpExecArray | null;
    let total = 0;
    const found: string[] = [];
    while ((m = re.exec(s)) !== null) {
      found.push(m[0]);
      total += Number(m[0]);
    }
    return [found, total];
  }, [["a1b22c333"], ["none"]]),

  p("private fields and #x in obj", ["classes", "private", "in"], function (n: number) {
    class Counter {
      #count = 0;
      static isCounter(o: object) {
        return #count in o;
      }
      bump(by: number) {
        for (let i = 0; i < by; i++) this.#count += 2;
        return this.#count;
      }
    }
    const c = new Counter();
    return [c.bump(n), Counter.isCounter(c), Counter.isCounter({})];
  }, [[3]]),

  p("super in object methods", ["super", "methods", "calls"], function (x: number) {
    const base = {
      describe(v: number) {
        return "base " + v;
      },
    };
    const derived = {
      __proto__: base,
      describe(v: number) {
        if (v > 0) return "derived(" + super.describe(v * 2) + ")";
        return super.describe(v);
      },
    };
    return derived.describe(x);
  }, [[2], [-1]]),

  p("tagged templates receive strings and values", ["template-literal", "calls"], function (a: number, b: number) {
    const tag = (strings: TemplateStringsArray, ...values: number[]) => strings.raw.join("|") + " / " + values.map((v) => v * 2).join(",");
    return tag`x${a + b}y${a > b ? a : b}z`;
  }, [[1, 2]]),

  p("label on an if inside a loop", ["labeled-block", "for", "if"], function (n: number) {
    const out: string[] = [];
    for (let i = 0; i < n; i++) {
      check: if (i % 2 === 0) {
        if (i === 2) break check;
        out.push("even" + i);
      } else {
        out.push("odd" + i);
      }
    }
    return out;
  }, [[5]]),

  p("new on a member expression and spread of getters", ["new", "getters", "spread"], function () {
    const ns = {
      Pair: class {
        constructor(
          public a: number,
          public b: number,
        ) {}
      },
    };
    let reads = 0;
    const src = {
      get x() {
        reads++;
        return 7;
      },
    };
    const copy = { ...src, y: 1 };
    const pair = new ns.Pair(copy.x, copy.y);
    return [pair.a + pair.b, reads, Object.getOwnPropertyDescriptor(copy, "x")!.get === undefined];
  }, [[]]),

  p("compound assignment on a computed getter/setter member", ["+=", "x[k]=", "getters", "setters", "side-effects"], function () {
    const log: string[] = [];
    let store = 1;
    const o = {
      get v() {
        log.push("get");
        return store;
      },
      set v(x: number) {
        log.push("set" + x);
        store = x;
      },
    };
    const key = "v";
    o[key] += 2;
    o[key] **= 2;
    o[key]--;
    return [store, log.join(",")];
  }, [[]]),

  p("sloppy-mode function: this and frozen writes", ["strict-mode", "x[i]=", "this"], new Function(
    "x",
    `const frozen = Object.freeze([1, 2, 3]);
     const obj = Object.freeze({ a: 1 });
     frozen[0] = x;
     obj.a = x;
     obj["a"] += 1;
     function plain() { return this === globalThis; }
     return [frozen[0], obj.a, plain()];`,
  ) as (x: number) => unknown, [[5]]),

  p("sloppy-mode function: arguments aliases parameters", ["strict-mode", "arguments"], new Function(
    "a",
    "b",
    `arguments[0] = 100;
     b = 7;
     let s = 0;
     for (let i = 0; i < arguments.length; i++) s += arguments[i];
     return [a, arguments[1], s];`,
  ) as (a: number, b: number) => unknown, [[1, 2]]),
];
