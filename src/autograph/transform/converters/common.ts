/**
 * Code the converters share: the native forms of the tests generated code makes (`typeof c ===
 * "object"`: is it a tensor), the `ag` operators of compound assignment, `++`/`--` on a value
 * read once (assignments.ts, indexing.ts), and targets written natively.
 */
import * as t from "../build.js";
import { native } from "../anno.js";
import type { ConvertContext } from "./context.js";

/** `typeof ($c = test) !== "object"`: a JS primitive condition (tensors are objects). */
export function isPrimitive(c: string, test: t.Expression): t.Expression {
  return native(t.binaryExpression("!==", t.unaryExpression("typeof", t.assignmentExpression("=", t.identifier(c), test)), t.stringLiteral("object")));
}

/** Compound assignment operators with an `ag` counterpart (`+=` -> "add"). */
export const COMPOUND_OPS: Readonly<Record<string, string>> = {
  "+=": "add",
  "-=": "sub",
  "*=": "mul",
  "/=": "div",
  "%=": "mod",
  "**=": "pow",
  "|=": "bitOr",
  "&=": "bitAnd",
  "^=": "bitXor",
  "<<=": "shl",
  ">>=": "shr",
};

/** A member expression target with its object and key converted natively (no getItem), in place. */
export function nativeMember(ctx: ConvertContext, m: t.MemberExpression): t.MemberExpression {
  if (m.object.type !== "Super") m.object = ctx.expr(m.object);
  if (m.computed) m.property = ctx.expr(m.property as t.Expression);
  return m;
}

/** `ag.increment(v, 1)` for ++, `ag.increment(v, -1)` for --: a tensor takes one add or sub, as written by hand. */
export function incrementCall(ctx: ConvertContext, e: t.UpdateExpression, v: t.Expression): t.Expression {
  return ctx.agCall("increment", [v, t.numericLiteral(e.operator === "++" ? 1 : -1)], e);
}

/** `ag.toNumeric(v)`: the value a postfix update evaluates to (a tensor as it is). */
export function numericCall(ctx: ConvertContext, e: t.UpdateExpression, v: t.Expression): t.Expression {
  return ctx.agCall("toNumeric", [v], e);
}

/** `typeof v === "object"` (tensors; null too, which ag.increment converts as ++ does). */
export function isObject(v: t.Expression): t.Expression {
  return native(t.binaryExpression("===", t.unaryExpression("typeof", v), t.stringLiteral("object")));
}

/** `++c` / `c--`: the native operator (left as it is by the other converters). */
export function nativeUpdate(e: t.UpdateExpression, target: t.Expression, prefix: boolean): t.UpdateExpression {
  return native(t.updateExpression(e.operator, target, prefix));
}

/** `test ? a : b` left native. */
export function nativeConditional(test: t.Expression, a: t.Expression, b: t.Expression): t.ConditionalExpression {
  return native(t.conditionalExpression(test, a, b));
}

/**
 * The new value of an update of the value held in temporary `c` (read once), and for a postfix
 * whose value is used, the expressions computing the old value first and the result.
 */
export function updateValue(ctx: ConvertContext, e: t.UpdateExpression, c: string, postfixValue: boolean): { before: t.Expression[]; next: t.Expression; result: t.Expression | null } {
  const cur = () => t.identifier(c);
  if (!postfixValue) {
    const next = nativeConditional(isObject(cur()), incrementCall(ctx, e, cur()), nativeUpdate(e, cur(), true));
    return { before: [], next, result: null };
  }
  // $old = typeof $c === "object" ? ag.toNumeric($c) : $c++   (a primitive $c is now the new value)
  const old = ctx.temp("$t");
  const before = [t.assignmentExpression("=", t.identifier(old), nativeConditional(isObject(cur()), numericCall(ctx, e, cur()), nativeUpdate(e, cur(), false)))];
  const next = nativeConditional(isObject(cur()), incrementCall(ctx, e, t.identifier(old)), cur());
  return { before, next, result: t.identifier(old) };
}

/** Whether evaluating `e` twice is the same as once (no side effects, same value). */
export function isStable(e: t.Node): boolean {
  return e.type === "ThisExpression" || e.type === "Identifier" || e.type === "Super";
}
