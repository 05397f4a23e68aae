/**
 * `if` statements and the conditional operator:
 *   if (t) A else B  ->  ag.ifStmt(t', () => { A' }, () => { B' }, getState, setState, names, loc)
 *   if (t) A         ->  ag.ifStmt(t', () => { A' }, null, getState, setState, names, loc)
 *   c ? a : b        ->  ag.ifExp(c', () => a', () => b', loc)
 * (Jumps inside branches were lowered to flags before; `if (c) throw e` is in asserts.ts.)
 * Outside a staged copy, the construct gets a native copy for JS-valued conditions:
 *   if (typeof ($c = t') !== "object") { if ($c) { A' } else { B' } } else ag.ifStmt($c, ...)
 * Constructs nested in the closures passed to ag.ifStmt get no native copy of their own
 * (so the code grows with nesting depth times size, not exponentially).
 */
import * as t from "../build.js";
import { bodyList, withLoc } from "../ast.js";
import type { ConvertContext } from "./context.js";
import { stateArgs } from "./state.js";

/** `typeof ($c = test) !== "object"`: a JS primitive condition (tensors are objects). */
function isPrimitive(c: string, test: t.Expression): t.Expression {
  return t.binaryExpression("!==", t.unaryExpression("typeof", t.assignmentExpression("=", t.identifier(c), test)), t.stringLiteral("object"));
}

export function convertIf(ctx: ConvertContext, s: t.IfStatement): t.Statement {
  ctx.feature("if");
  const test = ctx.expr(s.test);
  const staged = (cond: t.Expression) =>
    ctx.closureForm(() => {
      const branch = (b: t.Statement | null | undefined) => t.arrowFunctionExpression([], t.blockStatement(b ? ctx.stmts(bodyList(b)) : []));
      const elseFn = s.alternate ? branch(s.alternate) : t.nullLiteral();
      return withLoc(t.expressionStatement(ctx.agCall("ifStmt", [cond, branch(s.consequent), elseFn, ...stateArgs(ctx, s), ctx.loc(s)], s)), s);
    });
  if (!ctx.nativeCopies || !ctx.tempsAllowed) return staged(test);
  // A JS-valued condition runs the branches inline (no closures: converted recursion goes
  // nearly as deep as native); anything else goes to ag.ifStmt, whose branches are closures.
  const c = ctx.temp("$c");
  const block = (b: t.Statement) => withLoc(t.blockStatement(ctx.stmts(bodyList(b))), b);
  const native = t.ifStatement(t.identifier(c), block(s.consequent), s.alternate ? block(s.alternate) : null);
  return withLoc(t.ifStatement(isPrimitive(c, test), native, staged(t.identifier(c))), s);
}

export function convertIfExp(ctx: ConvertContext, e: t.ConditionalExpression): t.Expression {
  ctx.feature("ternary");
  const test = ctx.expr(e.test);
  const staged = (cond: t.Expression) =>
    ctx.closureForm(() => ctx.agCall("ifExp", [cond, t.arrowFunctionExpression([], ctx.expr(e.consequent)), t.arrowFunctionExpression([], ctx.expr(e.alternate)), ctx.loc(e)], e));
  if (!ctx.nativeCopies || !ctx.tempsAllowed) return staged(test);
  const c = ctx.temp("$c");
  const native = t.conditionalExpression(t.identifier(c), ctx.expr(e.consequent), ctx.expr(e.alternate));
  return withLoc(t.conditionalExpression(isPrimitive(c, test), native, staged(t.identifier(c))), e);
}
