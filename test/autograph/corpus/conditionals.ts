/** if / else if / else, ternaries, their nesting and truthiness. */
import { p, type CorpusProgram } from "./types.js";

export const conditionals: CorpusProgram[] = [
  p("if-else assigns", ["if", "else"], function (x: number) {
    let y = 0;
    if (x > 0) y = 1;
    else y = -1;
    return y;
  }, [[3], [-2], [0]], { tensor: true }),

  p("else-if chain", ["if", "else-if", "else"], function (x: number) {
    let code = 0;
    if (x < -10) code = -2;
    else if (x < 0) code = -1;
    else if (x === 0) code = 0;
    else if (x <= 10) code = 1;
    else code = 2;
    console.log("code", code);
    return code * 100 + x;
  }, [[-20], [-5], [0], [7], [10], [11]], { tensor: true }),

  p("if without else", ["if"], function (x: number) {
    let y = x;
    if (x < 0) y = -x;
    return y;
  }, [[-4], [4], [0]], { tensor: true }),

  p("nested if in both branches", ["if", "else", "nesting"], function (a: number, b: number) {
    let r = 0;
    if (a > 0) {
      if (b > 0) r = 1;
      else r = 2;
    } else {
      if (b > 0) r = 3;
      else r = 4;
    }
    return r;
  }, [[1, 1], [1, -1], [-1, 1], [-1, -1]], { tensor: true }),

  p("ternary", ["ternary"], function (x: number) {
    return x > 0 ? x * 2 : x - 1;
  }, [[5], [-5], [0]], { tensor: true }),

  p("nested ternary sign", ["ternary", "nesting", "==="], function (x: number) {
    return x < 0 ? -1 : x === 0 ? 0 : 1;
  }, [[-3], [0], [9]], { tensor: true }),

  p("ternary evaluates one branch only", ["ternary", "side-effects", "console.log"], function (x: number) {
    const trace: string[] = [];
    const left = () => {
      trace.push("left");
      console.log("left");
      return 10;
    };
    const right = () => {
      trace.push("right");
      console.log("right");
      return 20;
    };
    const v = x > 0 ? left() : right();
    return [v, trace];
  }, [[1], [-1]]),

  p("truthiness of JS values", ["if", "truthiness"], function () {
    const values: unknown[] = [0, -0, "", "0", null, undefined, NaN, [], {}, 1, "a", Infinity, 0n, 1n];
    const out: boolean[] = [];
    for (const v of values) {
      if (v) out.push(true);
      else out.push(false);
    }
    return out;
  }, [[]]),

  p("both branches assign several variables", ["if", "else", "state"], function (x: number) {
    let a = 0;
    let b = 0;
    if (x > 1) {
      a = x;
      b = 2;
    } else {
      a = -x;
      b = 3;
    }
    return a * b;
  }, [[5], [1], [-2]], { tensor: true }),

  p("branch-local const", ["if", "const", "block-scope"], function (x: number) {
    let y = 0;
    if (x > 0) {
      const t = x * 2;
      y = t + 1;
    } else {
      const t = x * 3;
      y = t - 1;
    }
    return y;
  }, [[2], [-2]], { tensor: true }),

  p("return in both branches", ["if", "else", "return"], function (x: number) {
    if (x >= 0) {
      return x + 100;
    } else {
      return x - 100;
    }
  }, [[1], [-1], [0]], { tensor: true }),

  p("return in one branch then fall through", ["if", "return"], function (x: number) {
    if (x > 3) return 1;
    const y = x * 2;
    if (y > 2) return 2;
    return 3;
  }, [[4], [2], [0]], { tensor: true }),

  p("deep else-if with early returns", ["else-if", "return", "nesting"], function (a: number, b: number) {
    if (a > 0) {
      if (b > 0) return a + b;
      else if (b < 0) {
        if (a > 5) return a * 10;
        return a - b;
      }
    } else if (a < 0) {
      return b > a ? b : a;
    }
    return 0;
  }, [[1, 2], [6, -1], [2, -3], [1, 0], [-1, 5], [-5, -9], [0, 4]], { tensor: true }),

  p("variable assigned in one branch only (JS keeps undefined)", ["if", "undefined"], function (x: number) {
    let y: number | undefined;
    if (x > 0) y = 1;
    return y;
  }, [[1], [-1]]),

  p("assignment inside the condition", ["if", "assignment-expression"], function (x: number) {
    let y = 0;
    let z = 0;
    if ((y = x * 2) > 3) z = y;
    else z = -y;
    return y + z * 10;
  }, [[1], [3]], { tensor: true }),

  p("string comparison condition", ["if", "strings", "==="], function (s: string) {
    if (s === "a") return "is a";
    else if (s < "m") return "first half";
    return "second half";
  }, [["a"], ["c"], ["z"]]),

  p("dangling else binds to the inner if", ["if", "else", "nesting"], function (a: number, b: number) {
    let r = 0;
    if (a > 0) if (b > 0) r = 1;
    else r = 2;
    return r;
  }, [[1, 1], [1, -1], [-1, 1], [-1, -1]], { tensor: true }),

  p("ternary with sequence expressions", ["ternary", "comma", "console.log"], function (x: number) {
    const r = x > 0 ? (console.log("pos"), 1) : (console.log("neg"), 2);
    return r;
  }, [[1], [-1]]),

  p("branches push to an array", ["if", "push"], function (xs: number[]) {
    const evens: number[] = [];
    const odds: number[] = [];
    for (const x of xs) {
      if (x % 2 === 0) evens.push(x);
      else odds.push(x);
    }
    return { evens, odds };
  }, [[[1, 2, 3, 4, 5, 6]], [[]]]),

  p("ternary of mixed types", ["ternary", "mixed-types"], function (x: number) {
    const v = x > 0 ? "pos" : x < 0 ? null : 0;
    return [v, typeof v];
  }, [[1], [-1], [0]]),

  p("piecewise function on floats", ["else-if", "floats"], function (x: number) {
    let y = 0;
    if (x < -1) y = -1 - (x + 1) * 0.5;
    else if (x < 1) y = x * x * 0.5;
    else y = 0.5 + (x - 1) * 2.25;
    return y;
  }, [[-3.5], [-0.25], [0.75], [2.5]], { tensor: true }),

  p("if on a boolean argument", ["if", "booleans"], function (flag: boolean, x: number) {
    if (flag) return x * 2;
    if (!flag && x > 0) return x;
    return -1;
  }, [[true, 3], [false, 3], [false, -3]], { tensor: { wrap: [1] } }),

  p("if with empty branches", ["if", "else", "empty"], function (x: number) {
    let y = 1;
    if (x > 0) {
    } else {
      y = 2;
    }
    if (x > 5) {
      y = 3;
    } else {
    }
    return y;
  }, [[1], [-1], [6]], { tensor: true }),

  p("condition with side-effecting call evaluated once", ["if", "side-effects"], function (x: number) {
    let calls = 0;
    const check = (v: number) => {
      calls++;
      return v > 2;
    };
    let r = "";
    if (check(x)) r = "big";
    else if (check(x + 2)) r = "medium";
    else r = "small";
    return [r, calls];
  }, [[3], [1], [-5]]),

  p("a scratch variable set in one branch is unchanged in the other", ["if", "else", "state"], function (x: number) {
    let tmp = 0;
    let y = 0;
    if (x > 0) {
      tmp = x * 2;
      y = tmp + 1;
    } else {
      y = tmp - 1;
    }
    return y;
  }, [[3], [-3]], { tensor: true }),

  p("a flag set in the then branch is not seen by the else branch", ["if", "else", "state"], function (n: number) {
    let flag = false;
    let r = 0;
    if (n < 2) {
      flag = true;
      r = 1;
    } else {
      if (!flag) r = 2;
    }
    return r;
  }, [[1], [5]], { tensor: true }),

  p("ternary as loop body value", ["ternary", "for", "nesting"], function (n: number) {
    let s = 0;
    for (let i = 0; i < n; i++) s += i % 3 === 0 ? i : i % 3 === 1 ? -i : 2 * i;
    return s;
  }, [[0], [7], [10]], { tensor: true }),
];
