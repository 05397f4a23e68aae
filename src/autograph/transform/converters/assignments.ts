/**
 * Assignments that read and write a variable or a property (elements are indexing.ts's):
 *   x += v  ->  x = ag.add(x, v')                 (-= *= /= %= **= likewise)
 *   o.p += v  ->  o.p = ag.add(o.p, v')           (a complex object is evaluated once: ($o = f()).p = ...)
 *   x++  ->  typeof x === "object" ? x = ag.increment(x, 1) : ++x     (see convertUpdate)
 */
import * as t from "../build.js";
import { withLoc } from "../ast.js";
import type { ConvertContext } from "./context.js";
import { ConverterPass } from "./pass.js";
import { COMPOUND_OPS, isObject, isStable, nativeConditional, nativeMember, nativeUpdate, incrementCall, numericCall, updateValue } from "./common.js";

/**
 * `++`/`--`. A JS primitive takes the native operator (numbers, strings, BigInt: exactly
 * JavaScript's conversions); an object goes through `ag.increment(x, +-1)`: a tensor becomes
 * `x + 1` (one add, as hand-written graph code has it), another object gets `++` on a copy:
 *   x++        ->  typeof x === "object" ? x = ag.increment(x, 1) : ++x        (value unused)
 *   y = x++    ->  y = typeof x === "object" ? ($t = ag.toNumeric(x), x = ag.increment($t, 1), $t) : x++
 *   o.p++      ->  $o = o, $c = $o.p, $o.p = typeof $c === "object" ? ag.increment($c, 1) : ++$c
 */
export function convertUpdate(ctx: ConvertContext, e: t.UpdateExpression, valueUsed: boolean): t.Expression | undefined {
  const arg = e.argument;
  const postfixValue = valueUsed && !e.prefix;
  if (arg.type === "Identifier") {
    if (postfixValue && !ctx.tempsAllowed) return e;
    ctx.feature("operator");
    const x = () => t.identifier(arg.name);
    let tensorPath: t.Expression;
    if (!postfixValue) tensorPath = t.assignmentExpression("=", x(), incrementCall(ctx, e, x()));
    else {
      const old = ctx.temp("$t");
      tensorPath = t.sequenceExpression([
        t.assignmentExpression("=", t.identifier(old), numericCall(ctx, e, x())),
        t.assignmentExpression("=", x(), incrementCall(ctx, e, t.identifier(old))),
        t.identifier(old),
      ]);
    }
    return withLoc(nativeConditional(isObject(x()), tensorPath, nativeUpdate(e, x(), postfixValue ? false : true)), e);
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
  if (arg.type === "MemberExpression" && !arg.computed) return withLoc(t.updateExpression(e.operator, nativeMember(ctx, arg), e.prefix), e);
  return undefined;
}

/** `x op= v` and `o.p op= v` for arithmetic compound operators (computed members: indexing.ts). */
export function convertCompoundToVariableOrProperty(ctx: ConvertContext, e: t.AssignmentExpression, op: string): t.Expression | undefined {
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
  return undefined;
}

export class Assignments extends ConverterPass {
  static readonly passName = "assignments";
  static readonly rewrites = ["UpdateExpression", "compoundAssignment"];
  protected override expression(e: t.Expression, valueUsed: boolean): t.Expression | undefined {
    if (e.type === "UpdateExpression" && !(e.argument.type === "MemberExpression" && e.argument.computed)) return convertUpdate(this, e, valueUsed);
    if (e.type === "AssignmentExpression") {
      const op = COMPOUND_OPS[e.operator];
      if (op && (e.left.type === "Identifier" || (e.left.type === "MemberExpression" && !e.left.computed))) return convertCompoundToVariableOrProperty(this, e, op);
    }
    return undefined;
  }
}
