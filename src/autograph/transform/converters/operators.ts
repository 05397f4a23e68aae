/**
 * Arithmetic, comparison and unary operators, and compound assignment to variables and
 * properties:
 *   a + b  ->  ag.add(a', b')      (- * / % ** < <= > >= === !== == != likewise)
 *   a | b  ->  ag.bitOr(a', b')   (& ^ << >> likewise; ~a -> ag.bitNot(a'))
 *   !a, -a, +a  ->  ag.not(a'), ag.neg(a'), ag.pos(a')
 *   x += v  ->  x = ag.add(x, v')
 *   o.p += v  ->  o.p = ag.add(o.p, v')   (a complex object is evaluated once: ($o = f()).p = ...)
 *   x++  ->  typeof x === "object" ? x = ag.sub(x, -1) : ++x     (see convertUpdate)
 * Other operators (`in`, `instanceof`, `>>>`, `typeof`, `void`, `delete`) stay native.
 */
import * as t from "../build.js";
import { withLoc } from "../ast.js";
import type { ConvertContext } from "./context.js";

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

export function convertBinary(ctx: ConvertContext, e: t.BinaryExpression): t.Expression {
  const op = BINARY_OPS[e.operator];
  const left = e.left.type === "PrivateName" ? e.left : ctx.expr(e.left);
  const right = ctx.expr(e.right);
  if (!op || left.type === "PrivateName") return withLoc(t.binaryExpression(e.operator, left, right), e);
  ctx.feature("operator");
  return ctx.agCall(op, [left, right], e);
}

/** A member expression target with its object and key converted natively (no getItem). */
export function nativeMember(ctx: ConvertContext, m: t.MemberExpression): t.MemberExpression {
  const object = m.object.type === "Super" ? m.object : ctx.expr(m.object);
  const property = m.computed ? ctx.expr(m.property as t.Expression) : m.property;
  return withLoc(t.memberExpression(object, property, m.computed), m);
}

export function convertUnary(ctx: ConvertContext, e: t.UnaryExpression): t.Expression {
  const op = UNARY_OPS[e.operator];
  if (e.operator === "typeof" && e.argument.type === "Identifier") {
    // `typeof x` of an undeclared name is "undefined"; of a binding in its TDZ it throws.
    return ctx.tdzChecked(e.argument) ? withLoc(t.unaryExpression("typeof", ctx.expr(e.argument)), e) : e;
  }
  if (e.operator === "delete") {
    const a = e.argument;
    if (a.type === "MemberExpression") return withLoc(t.unaryExpression("delete", nativeMember(ctx, a), true), e);
    return e;
  }
  if ((e.operator === "-" || e.operator === "+") && (e.argument.type === "NumericLiteral" || e.argument.type === "BigIntLiteral")) return e;
  const arg = ctx.expr(e.argument);
  if (!op) return withLoc(t.unaryExpression(e.operator, arg, e.prefix), e);
  ctx.feature(op === "not" ? "logical" : "operator");
  return ctx.agCall(op, [arg], e);
}

/**
 * `++`/`--`. A JS primitive takes the native operator (numbers, strings, BigInt: exactly
 * JavaScript's conversions); an object (a tensor) goes through `ag.sub(x, -1)`, which also
 * converts other objects to numbers as `++` does:
 *   x++        ->  typeof x === "object" ? x = ag.sub(x, -1) : ++x        (value unused)
 *   y = x++    ->  y = typeof x === "object" ? ($t = ag.sub(x, 0), x = ag.sub($t, -1), $t) : x++
 *   o.p++      ->  $o = o, $c = $o.p, $o.p = typeof $c === "object" ? ag.sub($c, -1) : ++$c
 * (`x[i]++` is in indexing.ts.)
 */
export function convertUpdate(ctx: ConvertContext, e: t.UpdateExpression, valueUsed: boolean): t.Expression {
  const arg = e.argument;
  const postfixValue = valueUsed && !e.prefix;
  if (arg.type === "Identifier") {
    if (postfixValue && !ctx.tempsAllowed) return e;
    ctx.feature("operator");
    const x = () => t.identifier(arg.name);
    const step = stepOf(e);
    let tensorPath: t.Expression;
    if (!postfixValue) tensorPath = t.assignmentExpression("=", x(), ctx.agCall("sub", [x(), step], e));
    else {
      const old = ctx.temp("$t");
      tensorPath = t.sequenceExpression([
        t.assignmentExpression("=", t.identifier(old), ctx.agCall("sub", [x(), t.numericLiteral(0)], e)),
        t.assignmentExpression("=", x(), ctx.agCall("sub", [t.identifier(old), step], e)),
        t.identifier(old),
      ]);
    }
    const native = t.updateExpression(e.operator, x(), postfixValue ? false : true);
    return withLoc(t.conditionalExpression(isObject(x()), tensorPath, native), e);
  }
  if (arg.type === "MemberExpression" && !arg.computed && ctx.tempsAllowed) {
    ctx.feature("operator");
    const parts: t.Expression[] = [];
    let obj: () => t.Expression;
    if (isStable(arg.object)) {
      const o = arg.object;
      obj = () => t.cloneNode(o) as t.Expression;
    } else {
      const tmp = ctx.temp("$o");
      parts.push(t.assignmentExpression("=", t.identifier(tmp), ctx.expr(arg.object as t.Expression)));
      obj = () => t.identifier(tmp);
    }
    const member = () => t.memberExpression(obj(), t.cloneNode(arg.property));
    const c = ctx.temp("$c");
    parts.push(t.assignmentExpression("=", t.identifier(c), member()));
    const u = updateValue(ctx, e, c, postfixValue);
    parts.push(...u.before, t.assignmentExpression("=", member(), u.next));
    if (u.result) parts.push(u.result);
    return withLoc(t.sequenceExpression(parts), e);
  }
  if (arg.type === "MemberExpression") return withLoc(t.updateExpression(e.operator, nativeMember(ctx, arg), e.prefix), e);
  return e;
}

/** `ag.sub` step: -1 for ++, 1 for --. */
export function stepOf(e: t.UpdateExpression): t.Expression {
  return t.numericLiteral(e.operator === "++" ? -1 : 1);
}

/** `typeof v === "object"` (tensors; null too, which ag.sub converts as ++ does). */
export function isObject(v: t.Expression): t.Expression {
  return t.binaryExpression("===", t.unaryExpression("typeof", v), t.stringLiteral("object"));
}

/**
 * The new value of an update of the value held in temporary `c` (read once), and for a postfix
 * whose value is used, the expressions computing the old value first and the result.
 */
export function updateValue(ctx: ConvertContext, e: t.UpdateExpression, c: string, postfixValue: boolean): { before: t.Expression[]; next: t.Expression; result: t.Expression | null } {
  const cur = () => t.identifier(c);
  const step = stepOf(e);
  if (!postfixValue) {
    const next = t.conditionalExpression(isObject(cur()), ctx.agCall("sub", [cur(), step], e), t.updateExpression(e.operator, cur(), true));
    return { before: [], next, result: null };
  }
  // $old = typeof $c === "object" ? ag.sub($c, 0) : $c++   (a primitive $c is now the new value)
  const old = ctx.temp("$t");
  const before = [t.assignmentExpression("=", t.identifier(old), t.conditionalExpression(isObject(cur()), ctx.agCall("sub", [cur(), t.numericLiteral(0)], e), t.updateExpression(e.operator, cur(), false)))];
  const next = t.conditionalExpression(isObject(cur()), ctx.agCall("sub", [t.identifier(old), step], e), cur());
  return { before, next, result: t.identifier(old) };
}

/** Whether evaluating `e` twice is the same as once (no side effects, same value). */
export function isStable(e: t.Node): boolean {
  return e.type === "ThisExpression" || e.type === "Identifier" || e.type === "Super";
}

/** `x op= v` and `o.p op= v` for arithmetic compound operators (computed members: indexing.ts). */
export function convertCompoundToVariableOrProperty(ctx: ConvertContext, e: t.AssignmentExpression, op: string): t.Expression | null {
  const left = e.left;
  if (left.type === "Identifier") {
    ctx.feature("operator");
    const value = ctx.agCall(op, [t.identifier(left.name), ctx.expr(e.right)], e);
    return withLoc(t.assignmentExpression("=", left, value), e);
  }
  if (left.type === "MemberExpression" && !left.computed) {
    const prop = left.property as t.Identifier | t.PrivateName;
    let target: t.MemberExpression;
    let current: t.MemberExpression;
    if (isStable(left.object)) {
      target = t.memberExpression(t.cloneNode(left.object) as t.Expression, prop);
      current = t.memberExpression(t.cloneNode(left.object) as t.Expression, t.cloneNode(prop));
    } else if (ctx.tempsAllowed) {
      const tmp = ctx.temp("$o");
      target = t.memberExpression(t.assignmentExpression("=", t.identifier(tmp), ctx.expr(left.object as t.Expression)), prop);
      current = t.memberExpression(t.identifier(tmp), t.cloneNode(prop));
    } else {
      return withLoc(t.assignmentExpression(e.operator, nativeMember(ctx, left), ctx.expr(e.right)), e);
    }
    ctx.feature("operator");
    return withLoc(t.assignmentExpression("=", withLoc(target, left), ctx.agCall(op, [current, ctx.expr(e.right)], e)), e);
  }
  return null;
}
