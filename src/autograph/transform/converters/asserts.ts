/**
 * `if (c) throw e` (no else) becomes a possibly staged assertion:
 *   if (c) throw e  ->  ag.assertOrThrow(c', () => e', loc)
 * With a JS or concrete condition it throws `e` exactly as the native statement does.
 */
import * as t from "../build.js";
import { withLoc } from "../ast.js";
import { thrownBy } from "../analyses/exits.js";
import type { ConvertContext } from "./context.js";
import { ConverterPass } from "./pass.js";


export function convertIfThrow(ctx: ConvertContext, s: t.IfStatement, th: t.ThrowStatement): t.Statement {
  ctx.feature("assert");
  const call = ctx.agCall("assertOrThrow", [ctx.expr(s.test), t.arrowFunctionExpression([], ctx.expr(th.argument)), ctx.loc(s)], s);
  return withLoc(t.expressionStatement(call), s);
}

export class Asserts extends ConverterPass {
  static readonly passName = "asserts";
  static readonly rewrites = ["ifThrow"];
  protected override statement(s: t.Statement): t.Statement | undefined {
    if (s.type !== "IfStatement") return undefined;
    const th = thrownBy(s);
    return th ? convertIfThrow(this, s, th) : undefined;
  }
}
