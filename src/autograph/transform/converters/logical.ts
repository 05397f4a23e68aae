/**
 * `&&`, `||`, `??` with JavaScript's lazy semantics: both operands become thunks, the right
 * one evaluated only when JavaScript would evaluate it.
 *   a && b  ->  ag.and(() => a', () => b')      (|| -> ag.or, ?? -> ag.nullish)
 * (`!a` is operators.ts's.)
 */
import * as t from "../build.js";
import type { ConvertContext } from "./context.js";
import { ConverterPass } from "./pass.js";

const LOGICAL: Readonly<Record<string, string>> = { "&&": "and", "||": "or", "??": "nullish" };

export function convertLogical(ctx: ConvertContext, e: t.LogicalExpression): t.Expression {
  ctx.feature("logical");
  const a = t.arrowFunctionExpression([], ctx.expr(e.left));
  const b = t.arrowFunctionExpression([], ctx.expr(e.right));
  return ctx.agCall(LOGICAL[e.operator]!, [a, b], e);
}

export class LogicalExpressions extends ConverterPass {
  static readonly passName = "logical";
  static readonly rewrites = ["LogicalExpression"];
  protected override expression(e: t.Expression): t.Expression | undefined {
    return e.type === "LogicalExpression" ? convertLogical(this, e) : undefined;
  }
}
