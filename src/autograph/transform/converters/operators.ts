/**
 * Arithmetic, comparison and unary operators:
 *   a + b       ->  ag.add(a', b')      (- * / % ** < <= > >= === !== == != likewise)
 *   a | b       ->  ag.bitOr(a', b')    (& ^ << >> likewise; ~a -> ag.bitNot(a'))
 *   !a, -a, +a  ->  ag.not(a'), ag.neg(a'), ag.pos(a')
 * Other operators (`in`, `instanceof`, `>>>`, `typeof`, `void`, `delete`) stay native, and so
 * do `-1`, `+2n` (literals). Compound assignment and `++`/`--` are assignments.ts's and
 * indexing.ts's.
 */
import * as t from "../build.js";
import type { ConvertContext } from "./context.js";
import { ConverterPass } from "./pass.js";

export const BINARY_OPS: Readonly<Record<string, string>> = {
  "+": "add",
  "-": "sub",
  "*": "mul",
  "/": "div",
  "%": "mod",
  "**": "pow",
  "<": "lt",
  "<=": "le",
  ">": "gt",
  ">=": "ge",
  "===": "eq",
  "!==": "ne",
  "==": "looseEq",
  "!=": "looseNe",
  "|": "bitOr",
  "&": "bitAnd",
  "^": "bitXor",
  "<<": "shl",
  ">>": "shr",
};

export const UNARY_OPS: Readonly<Record<string, string>> = { "!": "not", "-": "neg", "+": "pos", "~": "bitNot" };

export function convertBinary(ctx: ConvertContext, e: t.BinaryExpression, op: string): t.Expression {
  const left = ctx.expr(e.left as t.Expression);
  const right = ctx.expr(e.right);
  ctx.feature("operator");
  return ctx.agCall(op, [left, right], e);
}

export function convertUnary(ctx: ConvertContext, e: t.UnaryExpression, op: string): t.Expression {
  const arg = ctx.expr(e.argument);
  ctx.feature(op === "not" ? "logical" : "operator");
  return ctx.agCall(op, [arg], e);
}

export class Operators extends ConverterPass {
  static readonly passName = "operators";
  static readonly rewrites = ["BinaryExpression", "UnaryExpression"];
  protected override expression(e: t.Expression): t.Expression | undefined {
    if (e.type === "BinaryExpression") {
      const op = BINARY_OPS[e.operator];
      return op && e.left.type !== "PrivateName" ? convertBinary(this, e, op) : undefined;
    }
    if (e.type === "UnaryExpression") {
      const op = UNARY_OPS[e.operator];
      if (!op || ((e.operator === "-" || e.operator === "+") && (e.argument.type === "NumericLiteral" || e.argument.type === "BigIntLiteral"))) return undefined;
      return convertUnary(this, e, op);
    }
    return undefined;
  }
}
