/**
 * Calls: the runtime converts callees (when their source is available and they are user
 * functions) and calls everything else as it is.
 *   f(a, ...b)   ->  ag.callee(f')(a', ...b')    (the call stays native: no extra frame)
 *   o.m(a)       ->  ag.callMethod(o', "m", [a'])
 *   o.m(f(a))    ->  ag.callMethod(o', "m", () => [ag.callee(f)(a')])   (method read first)
 *   o[k](a)      ->  ag.callMethod(o', k', [a'])
 * `console.log` and `Math.*` go to logging.ts and math.ts. Calls on `ag` (and the twin
 * registrations of twins.ts) stay as they are; calls on `super`, `import()`, direct `eval`,
 * optional calls and private methods stay native (arguments converted).
 */
import * as t from "../build.js";
import { withLoc } from "../ast.js";
import type { ConvertContext } from "./context.js";
import { convertConsoleLog, isConsoleLog } from "./logging.js";
import { convertMathCall, mathFunction } from "./math.js";

export function convertArgs(ctx: ConvertContext, args: t.CallExpression["arguments"]): (t.Expression | t.SpreadElement)[] {
  return args.map((a) => {
    if (a.type === "SpreadElement") return withLoc(t.spreadElement(ctx.expr(a.argument)), a);
    if (a.type === "ArgumentPlaceholder") return a as unknown as t.Expression;
    return ctx.expr(a as t.Expression);
  });
}

/** Literals, identifiers, `this` and functions: evaluating them runs no user code. */
function isSimple(a: t.Node): boolean {
  return (
    a.type === "Identifier" ||
    a.type === "ThisExpression" ||
    (t.isLiteral(a) && a.type !== "TemplateLiteral") ||
    a.type === "ArrowFunctionExpression" ||
    a.type === "FunctionExpression"
  );
}

/** The helper twins.ts wraps function expressions in: `(($f) => (ag.registerConverted($f, twin), $f))(fn)`. */
function isTwinRegistration(ctx: ConvertContext, callee: t.Node): boolean {
  if (callee.type !== "ArrowFunctionExpression" || callee.body.type !== "SequenceExpression") return false;
  const first = callee.body.expressions[0];
  return first?.type === "CallExpression" && ctx.isAg(first.callee);
}

export function convertCall(ctx: ConvertContext, e: t.CallExpression): t.Expression {
  const callee = e.callee;
  if (ctx.isAg(callee) || isTwinRegistration(ctx, callee)) return e;
  const args = convertArgs(ctx, e.arguments);
  if (callee.type === "Super" || callee.type === "Import" || callee.type === "V8IntrinsicIdentifier") return withLoc(t.callExpression(callee, args), e);
  if (callee.type === "Identifier" && callee.name === "eval") return withLoc(t.callExpression(callee, args), e);
  const plainArgs = args.every((a) => a.type !== "SpreadElement") ? (args as t.Expression[]) : null;
  if (isConsoleLog(ctx, callee)) return convertConsoleLog(ctx, e, args as t.Expression[]);
  const math = mathFunction(ctx, callee);
  if (math && plainArgs) return convertMathCall(ctx, e, math, plainArgs);
  if (callee.type === "MemberExpression") {
    if (callee.object.type === "Super" || callee.property.type === "PrivateName") {
      const object = callee.object.type === "Super" ? callee.object : ctx.expr(callee.object);
      return withLoc(t.callExpression(withLoc(t.memberExpression(object, callee.property, callee.computed), callee), args), e);
    }
    ctx.feature("call");
    const key = callee.computed ? ctx.expr(callee.property as t.Expression) : t.stringLiteral((callee.property as t.Identifier).name);
    // Arguments with side effects go in a thunk, so the method is read before they run (JS order).
    const simple = e.arguments.every((a) => isSimple(a));
    const list = t.arrayExpression(args);
    return ctx.agCall("callMethod", [ctx.expr(callee.object), key, simple ? list : t.arrowFunctionExpression([], list)], e);
  }
  ctx.feature("call");
  return withLoc(t.callExpression(ctx.agCall("callee", [ctx.expr(callee as t.Expression)], e), args), e);
}
