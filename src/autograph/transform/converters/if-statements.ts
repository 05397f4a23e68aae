/**
 * `if` statements:
 *   if (t) A else B  ->  ag.ifStmt(t', () => { A' }, () => { B' }, getState, setState, names, loc)
 *   if (t) A         ->  ag.ifStmt(t', () => { A' }, null, getState, setState, names, loc)
 * (Jumps inside branches were lowered to flags before; `if (c) throw e` is asserts.ts's.)
 * Outside a staged copy, the statement gets a native copy for JS-valued conditions:
 *   if (typeof ($c = t') !== "object") { if ($c) { A' } else { B' } } else ag.ifStmt($c, ...)
 * Constructs nested in the closures passed to ag.ifStmt get no native copy of their own
 * (so the code grows with nesting depth times size, not exponentially).
 *
 * A jump the lowering re-issued natively from its flag (`if ($brk) break L;`) stays a native
 * `if`; a flag set by a staged `if` cannot leave a native construct, and a TypeError says so:
 *   if ($brk === true || $brk !== false && ag.assertOrThrow(true, () => new TypeError(...), loc)) break L;
 */
import * as t from "../build.js";
import { bodyList, withLoc } from "../ast.js";
import { Anno, copyTree, hasAnno, native } from "../anno.js";
import type { ConvertContext } from "./context.js";
import { ConverterPass, stagedBranch } from "./pass.js";
import { stateArgs } from "./state.js";
import { isPrimitive } from "./common.js";

export function convertIf(ctx: ConvertContext, s: t.IfStatement): t.Statement {
  ctx.feature("if");
  const test = ctx.expr(s.test);
  const staged = (cond: t.Expression, consequent: t.Statement, alternate: t.Statement | null | undefined) =>
    ctx.closureForm(() => {
      const branch = (b: t.Statement) => stagedBranch(t.arrowFunctionExpression([], t.blockStatement(ctx.stmts(bodyList(b)))));
      const elseFn = alternate ? branch(alternate) : t.nullLiteral();
      return withLoc(t.expressionStatement(ctx.agCall("ifStmt", [cond, branch(consequent), elseFn, ...stateArgs(ctx, s), ctx.loc(s)], s)), s);
    });
  if (!ctx.nativeCopies || !ctx.tempsAllowed) return staged(test, s.consequent, s.alternate);
  // A JS-valued condition runs the branches inline (no closures: converted recursion goes
  // nearly as deep as native); anything else goes to ag.ifStmt, whose branches are closures.
  const consequent = copyTree(s.consequent, true);
  const alternate = s.alternate ? copyTree(s.alternate, true) : null;
  const c = ctx.temp("$c");
  const block = (b: t.Statement) => withLoc(t.blockStatement(ctx.stmts(bodyList(b))), b);
  const nativeIf = t.ifStatement(t.identifier(c), block(s.consequent), s.alternate ? block(s.alternate) : null);
  return withLoc(t.ifStatement(isPrimitive(c, test), nativeIf, staged(t.identifier(c), consequent, alternate)), s);
}

/** A jump re-issued natively from its flag (`if ($brk) break L;`), checked. */
function convertNativeJump(ctx: ConvertContext, s: t.IfStatement): t.Statement {
  const flag = (s.test as t.Identifier).name;
  const message = `autograph: a jump (break, continue or return) under an if whose condition is a staged tensor cannot leave a for...in loop, a switch or a labeled block (at ${ctx.loc(s).value}); use a for...of or while loop, or a condition known while tracing`;
  const isTrue = native(t.binaryExpression("===", t.identifier(flag), t.booleanLiteral(true)));
  const notFalse = native(t.binaryExpression("!==", t.identifier(flag), t.booleanLiteral(false)));
  const fail = ctx.agCall("assertOrThrow", [t.booleanLiteral(true), t.arrowFunctionExpression([], t.newExpression(t.identifier("TypeError"), [t.stringLiteral(message)])), ctx.loc(s)]);
  const test = native(t.logicalExpression("||", isTrue, native(t.logicalExpression("&&", notFalse, fail))));
  return withLoc(t.ifStatement(test, s.consequent), s);
}

export class IfStatements extends ConverterPass {
  static readonly passName = "if-statements";
  static readonly rewrites = ["IfStatement"];
  protected override statement(s: t.Statement): t.Statement | undefined {
    if (s.type !== "IfStatement") return undefined;
    if (hasAnno(s, Anno.NATIVE_JUMP)) return convertNativeJump(this, s);
    return convertIf(this, s);
  }
}
