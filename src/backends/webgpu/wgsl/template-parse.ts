/**
 * Parses an elementwise op's scalar template (a small subset of JavaScript: the operand names,
 * numbers, unary - and !, arithmetic, comparisons, && and ||, ?:, and calls such as Math.exp or the
 * scalar prelude's erf) into a tree that the WGSL renderer types and renders.
 */

export type Expr =
  | { k: "var"; name: string }
  | { k: "num"; v: number }
  | { k: "un"; op: "-" | "!" | "+"; x: Expr }
  | { k: "bin"; op: string; l: Expr; r: Expr }
  | { k: "cond"; c: Expr; t: Expr; f: Expr }
  | { k: "call"; fn: string; args: Expr[] };

const TOKEN = /\s*(?:(\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?)|([A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*)|(===|!==|==|!=|<=|>=|&&|\|\||[-+*/%<>!?:(),]))/y;

const BINARY: Record<string, number> = {
  "||": 1,
  "&&": 2,
  "===": 3,
  "!==": 3,
  "==": 3,
  "!=": 3,
  "<": 4,
  "<=": 4,
  ">": 4,
  ">=": 4,
  "+": 5,
  "-": 5,
  "*": 6,
  "/": 6,
  "%": 6,
};

export function parseTemplate(src: string): Expr {
  const tokens: string[] = [];
  TOKEN.lastIndex = 0;
  let pos = 0;
  while (pos < src.length) {
    if (/^\s*$/.test(src.slice(pos))) break;
    TOKEN.lastIndex = pos;
    const m = TOKEN.exec(src);
    if (!m) throw new Error(`elementwise template ${JSON.stringify(src)}: cannot read ${JSON.stringify(src.slice(pos, pos + 10))}`);
    tokens.push(m[1] ?? m[2] ?? m[3]!);
    pos = TOKEN.lastIndex;
  }
  let i = 0;
  const peek = () => tokens[i];
  const expect = (t: string) => {
    if (tokens[i] !== t) throw new Error(`elementwise template ${JSON.stringify(src)}: expected ${t}, got ${tokens[i] ?? "the end"}`);
    i++;
  };
  const primary = (): Expr => {
    const t = tokens[i++];
    if (t === undefined) throw new Error(`elementwise template ${JSON.stringify(src)} ends early`);
    if (t === "(") {
      const e = ternary();
      expect(")");
      return e;
    }
    if (t === "-" || t === "!" || t === "+") return { k: "un", op: t, x: unary() };
    if (/^[\d.]/.test(t)) return { k: "num", v: Number(t) };
    if (t === "NaN") return { k: "num", v: NaN };
    if (t === "Infinity") return { k: "num", v: Infinity };
    if (peek() === "(") {
      i++;
      const args: Expr[] = [];
      if (peek() !== ")") {
        for (;;) {
          args.push(ternary());
          if (peek() === ",") i++;
          else break;
        }
      }
      expect(")");
      return { k: "call", fn: t, args };
    }
    return { k: "var", name: t };
  };
  const unary = (): Expr => primary();
  const binary = (minPrec: number): Expr => {
    let l = unary();
    for (;;) {
      const op = peek();
      const prec = op !== undefined ? BINARY[op] : undefined;
      if (prec === undefined || prec < minPrec) return l;
      i++;
      const r = binary(prec + 1);
      l = { k: "bin", op: op!, l, r };
    }
  };
  const ternary = (): Expr => {
    const c = binary(1);
    if (peek() !== "?") return c;
    i++;
    const t = ternary();
    expect(":");
    const f = ternary();
    return { k: "cond", c, t, f };
  };
  const e = ternary();
  if (i !== tokens.length) throw new Error(`elementwise template ${JSON.stringify(src)}: unexpected ${tokens[i]}`);
  return e;
}
