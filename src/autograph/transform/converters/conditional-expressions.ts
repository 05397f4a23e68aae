/**
 * The conditional operator:
 *   c ? a : b  ->  ag.ifExp(c', () => a', () => b', loc)
 * Outside a staged copy it gets a native copy for JS-valued conditions (as `if` does, see
 * if-statements.ts):
 *   typeof ($c = c') !== "object" ? ($c ? a' : b') : ag.ifExp($c, () => a'', () => b'', loc)
 */
import * as t from "../build.js";
import { withLoc } from "../ast.js";
import { copyTree, native } from "../anno.js";
import type { ConvertContext } from "./context.js";
import { isPrimitive } from "./common.js";
import { ConverterPass, stagedBranch } from "./pass.js";

export function convertIfExp(ctx: ConvertContext, e: t.ConditionalExpression): t.Expression {
  ctx.feature("ternary");
  const test = ctx.expr(e.test);
  const staged = (cond: t.Expression, consequent: t.Expression, alternate: t.Expression) =>
    ctx.closureForm(() =>
      ctx.agCall("ifExp", [cond, stagedBranch(t.arrowFunctionExpression([], ctx.expr(consequent))), stagedBranch(t.arrowFunctionExpression([], ctx.expr(alternate))), ctx.loc(e)], e),
    );
  if (!ctx.nativeCopies || !ctx.tempsAllowed) return staged(test, e.consequent, e.alternate);
  const consequent = copyTree(e.consequent, true);
  const alternate = copyTree(e.alternate, true);
  const c = ctx.temp("$c");
  const nativeCopy = native(t.conditionalExpression(t.identifier(c), ctx.expr(e.consequent), ctx.expr(e.alternate)));
  return withLoc(native(t.conditionalExpression(isPrimitive(c, test), nativeCopy, staged(t.identifier(c), consequent, alternate))), e);
}

export class ConditionalExpressions extends ConverterPass {
  static readonly passName = "conditional-expressions";
  static readonly rewrites = ["ConditionalExpression"];
  protected override expression(e: t.Expression): t.Expression | undefined {
    return e.type === "ConditionalExpression" ? convertIfExp(this, e) : undefined;
  }
}
