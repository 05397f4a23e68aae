/**
 * `if` statements and the conditional operator:
 *   if (t) A else B  ->  ag.ifStmt(t', () => { A' }, () => { B' }, getState, setState, names, loc)
 *   if (t) A         ->  ag.ifStmt(t', () => { A' }, null, getState, setState, names, loc)
 *   c ? a : b        ->  ag.ifExp(c', () => a', () => b', loc)
 * (Jumps inside branches were lowered to flags before; `if (c) throw e` is in asserts.ts.)
 */
import * as t from "../build.js";
import { bodyList, withLoc } from "../ast.js";
import type { ConvertContext } from "./context.js";
import { stateArgs } from "./state.js";

export function convertIf(ctx: ConvertContext, s: t.IfStatement): t.Statement {
  ctx.feature("if");
  const branch = (b: t.Statement | null | undefined) => t.arrowFunctionExpression([], t.blockStatement(b ? ctx.stmts(bodyList(b)) : []));
  const elseFn = s.alternate ? branch(s.alternate) : t.nullLiteral();
  const call = ctx.agCall("ifStmt", [ctx.expr(s.test), branch(s.consequent), elseFn, ...stateArgs(ctx, s), ctx.loc(s)], s);
  return withLoc(t.expressionStatement(call), s);
}

export function convertIfExp(ctx: ConvertContext, e: t.ConditionalExpression): t.Expression {
  ctx.feature("ternary");
  return ctx.agCall("ifExp", [ctx.expr(e.test), t.arrowFunctionExpression([], ctx.expr(e.consequent)), t.arrowFunctionExpression([], ctx.expr(e.alternate)), ctx.loc(e)], e);
}
