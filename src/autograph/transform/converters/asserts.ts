/**
 * `if (c) throw e` (no else) becomes a possibly staged assertion:
 *   if (c) throw e  ->  ag.assertOrThrow(c', () => e', loc)
 * With a JS or concrete condition it throws `e` exactly as the native statement does.
 */
import * as t from "../build.js";
import { withLoc } from "../ast.js";
import type { ConvertContext } from "./context.js";

export function isIfThrow(s: t.IfStatement): t.ThrowStatement | null {
  if (s.alternate) return null;
  const c = s.consequent;
  if (c.type === "ThrowStatement") return c;
  if (c.type === "BlockStatement" && c.body.length === 1 && c.body[0]!.type === "ThrowStatement") return c.body[0] as t.ThrowStatement;
  return null;
}

export function convertIfThrow(ctx: ConvertContext, s: t.IfStatement, th: t.ThrowStatement): t.Statement {
  ctx.feature("assert");
  const call = ctx.agCall("assertOrThrow", [ctx.expr(s.test), t.arrowFunctionExpression([], ctx.expr(th.argument)), ctx.loc(s)], s);
  return withLoc(t.expressionStatement(call), s);
}
