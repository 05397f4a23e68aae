/** Arithmetic, comparison, compound assignment, string concatenation, mixed types. */
import { p, type CorpusProgram } from "./types.js";

export const operators: CorpusProgram[] = [
  p("arithmetic precedence", ["+", "-", "*", "/", "precedence"], function (a: number, b: number, c: number, d: number, e: number) {
    return a + b * c - d / e;
  }, [[1, 2, 3, 4, 8], [-1.5, 0.5, 4, 9, -3]], { tensor: true }),

  p("% with negative operands (truncated)", ["%"], function () {
    return [7 % 3, -7 % 3, 7 % -3, -7 % -3, 5.5 % 2, -0 % 5, 3 % 0];
  }, [[]]),

  p("% on positive operands", ["%"], function (a: number, b: number) {
    return a % b;
  }, [[7, 3], [9, 3], [10.5, 4]], { tensor: true }),

  p("% with a negative dividend on tensors", ["%"], function (a: number, b: number) {
    return a % b;
  }, [[-7, 3], [7, -3]], { tensor: true }),

  p("** is right associative", ["**", "precedence"], function (a: number, b: number) {
    return [2 ** 3 ** 2, (-2) ** 2, a ** b, a ** -1, a ** 0.5];
  }, [[4, 3], [9, 2]], { tensor: true }),

  p("unary minus and plus", ["unary-", "unary+"], function (x: number) {
    return [-x, +x, -(-x), - -x, +"3", -"4", +true, -false, +"", +"abc"];
  }, [[5], [-2]]),

  p("unary minus on tensors", ["unary-"], function (x: number) {
    const y = -x;
    return -(y * 2) + +x;
  }, [[5], [-2.5]], { tensor: true }),

  p("all comparisons", ["<", "<=", ">", ">=", "===", "!=="], function (a: number, b: number) {
    return [a < b, a <= b, a > b, a >= b, a === b, a !== b];
  }, [[1, 2], [2, 2], [3, 2]], { tensor: true }),

  p("== and === across types", ["==", "===", "mixed-types"], function () {
    const [one, oneStr, nul, undef, nan, empty, arr1, zero]: any[] = [1, "1", null, undefined, NaN, "", [1], 0];
    return [one == oneStr, nul == undef, nul === undef, nan == nan, zero == empty, oneStr !== one, arr1 == one, nul != zero];
  }, [[]]),

  p("compound assignments", ["+=", "-=", "*=", "/=", "%=", "**="], function (x: number) {
    let a = x;
    a += 3;
    a -= 1;
    a *= 4;
    a /= 2;
    let b = a;
    b %= 5;
    let c = b + 1;
    c **= 2;
    return [a, b, c];
  }, [[1], [6]], { tensor: true }),

  p("string concatenation is left to right", ["+", "strings"], function (n: number) {
    return ["a" + 1 + 2, 1 + 2 + "a", "a" + (1 + 2), n + "" + n, "" + null + undefined + true];
  }, [[7]]),

  p("mixed-type arithmetic", ["mixed-types", "+", "-", "*"], function () {
    const u: any = undefined;
    const o: any = {};
    const t: any = true;
    const n: any = null;
    const five: any = "5";
    const arr2: any = [2];
    return [t + 1, n + 1, u + 1, [] + o, five * ("2" as any), five - 2, five + 2, arr2 * 3];
  }, [[]]),

  p("infinities, NaN and -0", ["/", "NaN", "floats"], function (x: number) {
    return [x / 0, -x / 0, 0 / 0, Object.is(-0 * x, -0), 1 / (x - x), NaN < 1, NaN >= 1, Infinity - Infinity];
  }, [[1], [-1]]),

  p("prefix and postfix updates", ["++", "--"], function (x: number) {
    let i = x;
    const a = i++;
    const b = ++i;
    const c = i--;
    const d = --i;
    return [a, b, c, d, i];
  }, [[0], [5]], { tensor: true }),

  p("update expressions on members and elements", ["++", "--", "member-assignment"], function () {
    const o = { n: 1 };
    const arr = [10, 20];
    const r1 = o.n++;
    const r2 = ++arr[1]!;
    arr[0]--;
    return [r1, r2, o, arr];
  }, [[]]),

  p("compound assignment on a computed member evaluates the key once", ["+=", "member-assignment", "side-effects"], function () {
    const arr = [1, 2, 3];
    const log: number[] = [];
    let k = 0;
    const next = () => {
      log.push(k);
      return k++;
    };
    arr[next()] += 10;
    arr[next()] *= 5;
    const o: Record<string, number> = { a: 1 };
    o[["a"][next() - 2]!] **= 3;
    return [arr, log, o];
  }, [[]]),

  p("bitwise operators are untouched", ["bitwise"], function (a: number, b: number) {
    return [a & b, a | b, a ^ b, ~a, a << 2, a >> 1, -a >>> 28];
  }, [[12, 10], [-5, 3]]),

  p("string comparisons", ["<", ">", "strings"], function (a: string, b: string) {
    return [a < b, a > b, a <= b, a >= b, a === b];
  }, [["apple", "banana"], ["b", "B"], ["x", "x"]]),

  p("typeof, in and instanceof", ["typeof", "in", "instanceof"], function (x: unknown) {
    const o = { k: 1 };
    return [typeof x, "k" in o, "z" in o, x instanceof Array, typeof undefined, typeof null];
  }, [[1], ["s"], [[1]], [null]]),

  p("comma and void", ["comma", "void"], function (x: number) {
    let a = 0;
    const b = (a++, a++, a * x);
    const c = void a;
    return [a, b, c];
  }, [[3]]),

  p("chained assignment", ["assignment-expression"], function (x: number) {
    let a = 0;
    let b = 0;
    a = b = x * 2;
    return a + b;
  }, [[3], [-1]], { tensor: true }),

  p("string += in a loop", ["+=", "strings", "for"], function (n: number) {
    let s = "";
    for (let i = 0; i < n; i++) s += i % 2 === 0 ? "x" : i;
    return s;
  }, [[0], [6]]),

  p("Math functions", ["Math"], function (x: number, y: number) {
    return Math.max(x, y) + Math.min(x, y) * 2 + Math.exp(x / 10) + Math.sqrt(Math.abs(y)) + Math.log(1 + x * x) + Math.tanh(y);
  }, [[1, 4], [-2.5, 0.75]], { tensor: true }),

  p("Math.floor, ceil, sign and pow", ["Math"], function (x: number) {
    return Math.floor(x) * 100 + Math.ceil(x) * 10 + Math.sign(x) + Math.pow(x, 2);
  }, [[2.25], [-3.75]], { tensor: true }),

  p("BigInt arithmetic is untouched", ["bigint"], function () {
    let b = 1n;
    for (let i = 0; i < 70; i++) b *= 2n;
    return (b + 3n).toString();
  }, [[]]),

  p("BigInt ++ and --", ["++", "--", "bigint"], function () {
    let b = 5n;
    b++;
    ++b;
    const old = b--;
    let s: any = "5";
    const sOld = s++;
    return [b, old, s, sOld];
  }, [[]]),

  p("unary minus binds tighter than ** needs parentheses", ["**", "unary-"], function (x: number) {
    return [-(x ** 2), (-x) ** 2, 2 ** -x];
  }, [[3], [-2]], { tensor: true }),

  p("division and /= on floats", ["/", "/="], function (x: number) {
    let y = x;
    y /= 3;
    y /= 0.5;
    return y / 7;
  }, [[1], [-10]], { tensor: true }),

  p("+= with a string operand concatenates", ["+=", "strings", "mixed-types"], function (x: number) {
    let a: any = x;
    a += "1";
    let b: any = "2";
    b -= 1;
    let c: any = "2";
    c *= "3" as any;
    return [a, b, c];
  }, [[1]]),

  p("unary minus on non-numbers", ["unary-", "mixed-types"], function () {
    const v: any[] = [true, "  12 ", null, undefined, [], [5], {}];
    return v.map((x) => -x);
  }, [[]]),

  p("loose equality on tensors and numbers", ["==", "!="], function (a: number, b: number) {
    return [a == b, a != b];
  }, [[2, 2], [1, 2]], { tensor: true }),

  p("template literals with expressions", ["template-literal", "+"], function (a: number, b: number) {
    return `${a} + ${b} = ${a + b}; ${a > b ? "a" : "b"} wins`;
  }, [[2, 3], [5, 1]]),

  p("compound assignment on a getter/setter pair", ["+=", "getters", "side-effects"], function () {
    const log: string[] = [];
    let store = 5;
    const o = {
      get v() {
        log.push("get");
        return store;
      },
      set v(x: number) {
        log.push("set " + x);
        store = x;
      },
    };
    o.v += 2;
    o.v *= 3;
    o.v++;
    return [store, log];
  }, [[]]),
];
