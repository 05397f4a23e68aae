/** &&, ||, ??, ! with JavaScript's lazy semantics and side effects. */
import { p, type CorpusProgram } from "./types.js";

export const logical: CorpusProgram[] = [
  p("&& short-circuits", ["&&", "side-effects", "console.log"], function (a: number, b: number) {
    const calls: string[] = [];
    const f = (name: string, v: number) => {
      calls.push(name);
      console.log("eval", name);
      return v;
    };
    const r = f("a", a) && f("b", b);
    return [r, calls];
  }, [[0, 1], [2, 3], [4, 0]]),

  p("|| returns the first truthy operand", ["||", "values"], function () {
    const [zero, empty, a, nul, undef, nan, arr]: any[] = [0, "", "a", null, undefined, NaN, []];
    return [zero || "x", empty || zero || nul, a || "b", nul || undef, nan || 7, arr || 1];
  }, [[]]),

  p("?? only replaces null and undefined", ["??"], function () {
    const vals: unknown[] = [null, undefined, 0, "", false, NaN, "v"];
    return vals.map((v) => v ?? "default");
  }, [[]]),

  p("! on many values", ["!"], function () {
    const v: any[] = [0, 1, "", "a", null, undefined, NaN, [], {}];
    return [!v[0], !v[1], !v[2], !v[3], !v[4], !v[5], !v[6], !v[7], !v[8], !!v[3], !!v[0]];
  }, [[]]),

  p("mixed && || evaluation order", ["&&", "||", "side-effects", "precedence"], function (a: number, b: number, c: number) {
    const log: string[] = [];
    const t = (n: string, v: number) => (log.push(n), v);
    const r = t("a", a) || (t("b", b) && t("c", c));
    const s = (t("a2", a) || t("b2", b)) && t("c2", c);
    return [r, s, log.join(" ")];
  }, [[0, 0, 0], [1, 0, 1], [0, 1, 0], [0, 1, 2], [3, 0, 0]]),

  p("&& in an if on comparisons", ["&&", "if"], function (x: number, y: number) {
    if (x > 0 && y > 0) return 1;
    return 0;
  }, [[1, 1], [1, -1], [-1, 1], [-1, -1]], { tensor: true }),

  p("|| in a while test", ["||", "while"], function (a: number, b: number) {
    let n = 0;
    while (a > 0 || b > 0) {
      a--;
      b -= 2;
      n++;
    }
    return n;
  }, [[3, 1], [0, 7], [0, 0]], { tensor: true }),

  p("! of a comparison", ["!", "if"], function (x: number) {
    if (!(x > 0)) return -x;
    return x;
  }, [[2], [-2]], { tensor: true }),

  // JS values only: on tensors `a && b` / `a || b` yield bool tensors by design
  // (operators/logical.ts), not the operand values; the next program covers tensors.
  p("&& and || yield operand values", ["&&", "||", "values"], function (a: number, b: number) {
    return (a && b) + (a || b) * 10;
  }, [[0, 5], [3, 5], [3, 0], [0, 0]]),

  p("&& and || on comparisons yield booleans", ["&&", "||", "values"], function (a: number, b: number) {
    const both = a > 0 && b > 0;
    const either = a > 0 || b > 0;
    return [both, either, !both];
  }, [[0, 5], [3, 5], [-3, 0]], { tensor: true }),

  p("?? evaluates the right side lazily", ["??", "side-effects"], function (x: number | null) {
    let count = 0;
    const fallback = () => {
      count++;
      return 42;
    };
    const v = x ?? fallback();
    const w = (x ?? fallback()) ?? fallback();
    return [v, w, count];
  }, [[null], [0], [5]]),

  p("logical assignment operators", ["||=", "&&=", "??=", "side-effects"], function (a: number, b: number | null) {
    let calls = 0;
    const v = (x: number) => {
      calls++;
      return x;
    };
    let x: number = a;
    let y: number | null = b;
    let z: number = a;
    x ||= v(10);
    y ??= v(20);
    z &&= v(30);
    const o: { k?: number } = {};
    o.k ??= v(40);
    o.k ??= v(50);
    return [x, y, z, o.k, calls];
  }, [[0, null], [1, 2]]),

  p("double negation", ["!"], function (x: number) {
    return !!x ? 1 : 0;
  }, [[0], [3]], { tensor: true }),

  p("&& guards a property read", ["&&", "member"], function (useObj: boolean) {
    const o = useObj ? { a: { b: 5 } } : null;
    return (o && o.a.b) ?? "none";
  }, [[true], [false]]),

  p("optional chaining", ["?.", "calls"], function (useObj: boolean) {
    const o: { a?: { b?: number; f?: () => number }; arr?: number[] } | undefined = useObj ? { a: { b: 2, f: () => 7 }, arr: [9] } : undefined;
    return [o?.a?.b, o?.a?.f?.(), o?.arr?.[0], o?.["a"]?.b];
  }, [[true], [false]]),

  p("right operand never evaluated when it would throw", ["&&", "||", "exceptions"], function (x: number) {
    const boom = (): number => {
      throw new Error("evaluated");
    };
    const a = x > 0 || boom();
    const b = x < 0 && boom();
    return [a, b];
  }, [[1]]),

  p("ternary inside && inside ||", ["&&", "||", "ternary", "nesting"], function (x: number) {
    return (x > 5 && (x > 10 ? "big" : "mid")) || (x < 0 ? "neg" : "small");
  }, [[11], [7], [-1], [2]]),

  p("&& chain in a for test", ["&&", "for"], function (xs: number[]) {
    let i = 0;
    for (; i < xs.length && xs[i]! > 0 && xs[i]! !== 99; i++);
    return i;
  }, [[[1, 2, -3, 4]], [[5, 99, 1]], [[1, 1]]]),

  p("! with || on tensors", ["!", "||", "if"], function (a: number, b: number) {
    let r = 0;
    if (!(a > 0) || !(b > 0)) r = 1;
    else r = 2;
    return r;
  }, [[1, 1], [0, 1], [1, 0]], { tensor: true }),

  p("nullish chain with side effects in order", ["??", "side-effects", "console.log"], function () {
    const t = (n: string, v: unknown) => {
      console.log("visit", n);
      return v;
    };
    return t("a", null) ?? t("b", undefined) ?? t("c", 0) ?? t("d", 1);
  }, [[]]),
];
