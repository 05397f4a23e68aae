/** Shadowing, let/const per-iteration bindings, closures created in loops, hoisting, strictness. */
import { p, type CorpusProgram } from "./types.js";

export const scoping: CorpusProgram[] = [
  p("block shadowing in an if", ["shadowing", "if", "block-scope"], function (c: boolean) {
    let x = 1;
    if (c) {
      let x = 2;
      x += 10;
      console.log("inner", x);
    }
    return x;
  }, [[true], [false]]),

  p("loop body redeclares the loop variable", ["shadowing", "for"], function (n: number) {
    const out: number[] = [];
    for (let i = 0; i < n; i++) {
      let i2 = i;
      {
        let i = i2 * 100;
        out.push(i);
      }
    }
    return out;
  }, [[3]]),

  p("shadowing a parameter in a nested block and loop", ["shadowing", "parameters", "while"], function (x: number) {
    let total = 0;
    {
      const x = 5;
      total += x;
    }
    let k = 0;
    while (k < 2) {
      const x = k * 7;
      total += x;
      k++;
    }
    return total + x;
  }, [[1], [100]], { tensor: true }),

  p("per-iteration let bindings in for", ["closures", "let", "for"], function (n: number) {
    const fns: (() => number)[] = [];
    for (let i = 0; i < n; i++) fns.push(() => i);
    return fns.map((f) => f());
  }, [[0], [4]]),

  p("var in for is shared by closures", ["closures", "var", "for"], function (n: number) {
    const fns: (() => number)[] = [];
    for (var i = 0; i < n; i++) fns.push(() => i);
    return fns.map((f) => f());
  }, [[3]]),

  p("const per iteration of for-of", ["closures", "const", "for-of"], function (xs: string[]) {
    const fns: (() => string)[] = [];
    for (const x of xs) fns.push(() => x + "!");
    return fns.map((f) => f());
  }, [[["a", "b", "c"]]]),

  p("closures over block lets in a while body", ["closures", "let", "while"], function (n: number) {
    const fns: (() => number)[] = [];
    let i = 0;
    while (i < n) {
      const sq = i * i;
      let cube = sq * i;
      fns.push(() => sq + cube);
      cube = 0;
      i++;
    }
    return fns.map((f) => f());
  }, [[4]]),

  p("closure updates an outer variable after the loop", ["closures", "state"], function (n: number) {
    let total = 0;
    const adders: (() => void)[] = [];
    for (let i = 1; i <= n; i++) adders.push(() => (total += i));
    const before = total;
    for (const a of adders) a();
    return [before, total];
  }, [[4]]),

  p("body changes to the loop variable are seen by that iteration's closure", ["closures", "let", "for"], function () {
    const fns: (() => number)[] = [];
    for (let i = 0; i < 3; i++) {
      fns.push(() => i);
      i++;
    }
    return fns.map((f) => f());
  }, [[]]),

  p("a closure that increments the loop variable", ["closures", "let", "for"], function (n: number) {
    let iterations = 0;
    for (let i = 0; i < n; i++) {
      const inc = () => {
        i++;
      };
      inc();
      iterations++;
    }
    return iterations;
  }, [[0], [5], [6]]),

  p("closures capture the loop-head copy per iteration (updates in the head)", ["closures", "let", "for"], function () {
    const getters: (() => number)[] = [];
    const setters: ((v: number) => void)[] = [];
    for (let i = 0; i < 3; i++) {
      getters.push(() => i);
      setters.push((v) => {
        i = v;
      });
    }
    setters[0]!(100);
    return getters.map((g) => g());
  }, [[]]),

  p("var hoisting and function declaration hoisting", ["hoisting", "var", "calls"], function () {
    // @ts-ignore read before the declaration on purpose
    const before = typeof v;
    const r = hoisted(2);
    var v = 3;
    function hoisted(x: number) {
      return x * 10;
    }
    return [before, r, v];
  }, [[]]),

  p("temporal dead zone throws ReferenceError", ["tdz", "let", "try-catch"], function () {
    try {
      // @ts-expect-error used before declaration on purpose
      const a = b + 1;
      let b = 2;
      return [a, b];
    } catch (e) {
      return (e as Error).constructor.name;
    }
  }, [[]]),

  p("nested function parameters shadow outer names", ["shadowing", "calls", "closures"], function (x: number) {
    const y = 10;
    const f = (x: number, y = 2) => x * y;
    function g(y: number) {
      return x + y;
    }
    return [f(3), f(3, 4), g(1), x, y];
  }, [[7]]),

  p("closures in do-while", ["closures", "do-while", "let"], function () {
    const fns: (() => number)[] = [];
    let k = 0;
    do {
      const j = k;
      fns.push(() => j * 2);
      k++;
    } while (k < 3);
    return fns.map((f) => f());
  }, [[]]),

  p("two-level loop closures", ["closures", "nesting", "for"], function (n: number) {
    const fns: (() => string)[] = [];
    for (let i = 0; i < n; i++) {
      for (let j = 0; j < i; j++) {
        fns.push(() => `${i}${j}`);
      }
    }
    return fns.map((f) => f()).join(" ");
  }, [[4]]),

  p("variables named like runtime identifiers", ["shadowing", "names"], function (n: number) {
    const ag = n * 2;
    let $brk = 0;
    let $ret = 1;
    let $cont = 2;
    let $retval = 3;
    for (let i = 0; i < n; i++) {
      if (i === 1) continue;
      if (i === 3) break;
      $brk += ag;
      $cont++;
    }
    $ret += $retval;
    return [ag, $brk, $ret, $cont, $retval];
  }, [[5]]),

  p("this is undefined in a plain call (strict mode)", ["strict-mode", "calls"], function () {
    function whoAmI(this: unknown) {
      return this === undefined ? "undefined" : typeof this;
    }
    return whoAmI();
  }, [[]]),

  p("writing a frozen object's property throws (strict mode)", ["strict-mode", "exception-type", "try-catch"], function (x: number) {
    const o = Object.freeze({ a: 1 });
    try {
      if (x > 0) (o as { a: number }).a = 2;
      return "no error " + o.a;
    } catch (e) {
      return (e as Error).constructor.name + " " + o.a;
    }
  }, [[1], [-1]]),

  p("arguments object inside loops", ["arguments", "for"], function (...rest: number[]) {
    // eslint-disable-next-line prefer-rest-params
    const args = arguments;
    let s = 0;
    for (let i = 0; i < args.length; i++) s += args[i];
    return [s, args.length, rest.length];
  }, [[1, 2, 3], []]),

  p("this in methods called inside a converted loop", ["this", "calls", "for"], function (n: number) {
    const counter = {
      count: 0,
      add(k: number) {
        this.count += k;
        return this;
      },
    };
    for (let i = 0; i < n; i++) counter.add(i).add(1);
    return counter.count;
  }, [[4]]),

  p("const reassignment throws TypeError", ["const", "exception-type", "try-catch"], function () {
    const c = 1;
    try {
      // @ts-expect-error assignment to const on purpose
      c = 2;
    } catch (e) {
      return (e as Error).constructor.name + " " + c;
    }
    return "no error";
  }, [[]]),

  p("loop variable shadows an outer one of the same name", ["shadowing", "for", "let"], function (n: number) {
    let i = 100;
    let s = 0;
    for (let i = 0; i < n; i++) s += i;
    return [i, s];
  }, [[4]], { tensor: true }),

  p("function-local state survives inner loop scopes", ["block-scope", "for", "while"], function (n: number) {
    let acc = 0;
    for (let i = 0; i < n; i++) {
      let local = i;
      while (local > 0) {
        const half = Math.floor(local / 2);
        acc += local - half;
        local = half;
      }
    }
    return acc;
  }, [[0], [6]], { tensor: true }),
];
