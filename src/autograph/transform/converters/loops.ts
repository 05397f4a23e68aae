/**
 * Loops (after the lowering, every converted loop is a `while` or a `for...of` with one exit):
 *   while (t) B            ->  ag.whileStmt(() => t', () => { B' }, getState, setState, names, loc)
 *   for (const x of it) B  ->  ag.forOf(it', (x) => { B' }, getState, setState, names, loc[, () => !$brk])
 * The for...of's extra test is its exit flags (Anno.FOR_OF_EXIT): the runtime checks it before
 * taking the next item. `for await` stays native.
 */
import * as t from "../build.js";
import { bodyList, notAll, withLoc } from "../ast.js";
import { Anno, getAnno } from "../anno.js";
import type { ConvertContext } from "./context.js";
import { ConverterPass } from "./pass.js";
import { stateArgs } from "./state.js";

export function convertWhile(ctx: ConvertContext, s: t.WhileStatement): t.Statement {
  ctx.feature("loop");
  const test = t.arrowFunctionExpression([], ctx.expr(s.test));
  const body = t.arrowFunctionExpression([], t.blockStatement(ctx.stmts(bodyList(s.body))));
  const call = ctx.agCall("whileStmt", [test, body, ...stateArgs(ctx, s), ctx.loc(s)], s);
  return withLoc(t.expressionStatement(call), s);
}

export function convertForOf(ctx: ConvertContext, s: t.ForOfStatement): t.Statement {
  ctx.feature("loop");
  const stmts = ctx.stmts(bodyList(s.body));
  let param: t.Identifier | t.Pattern | t.RestElement;
  const left = s.left;
  if (left.type === "VariableDeclaration") {
    param = left.declarations[0]!.id as t.Identifier | t.Pattern;
  } else {
    // An existing variable or member as the target: assigned at the start of each iteration.
    const v = ctx.names.fresh("$v");
    param = t.identifier(v);
    const assign = t.expressionStatement(t.assignmentExpression("=", left as t.LVal, t.identifier(v)));
    stmts.unshift(...ctx.stmts([withLoc(assign, left)]));
  }
  const body = t.arrowFunctionExpression([param], t.blockStatement(stmts));
  const args: t.Expression[] = [ctx.expr(s.right), body, ...stateArgs(ctx, s), ctx.loc(s)];
  const extra = notAll(getAnno(s, Anno.FOR_OF_EXIT) ?? []);
  if (extra) args.push(t.arrowFunctionExpression([], ctx.expr(extra)));
  return withLoc(t.expressionStatement(ctx.agCall("forOf", args, s)), s);
}

export class Loops extends ConverterPass {
  static readonly passName = "loops";
  static readonly rewrites = ["WhileStatement", "ForOfStatement"];
  /** (a for...of's extra test, `() => !$brk && !$ret`) */
  static readonly adds = ["UnaryExpression", "LogicalExpression"];
  protected override statement(s: t.Statement): t.Statement | undefined {
    if (s.type === "WhileStatement") return convertWhile(this, s);
    if (s.type === "ForOfStatement" && !s.await) return convertForOf(this, s);
    return undefined;
  }
}
