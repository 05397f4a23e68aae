/**
 * Calls: the runtime converts callees (when their source is available and they are user
 * functions) and calls everything else as it is.
 *   f(a, ...b)   ->  ag.callee(f')(a', ...b')    (the call stays native: no extra frame)
 *   o.m(a)       ->  ag.callMethod(o', "m", [a'])
 *   o.m(f(a))    ->  ag.callMethod(o', "m", () => [ag.callee(f)(a')])   (method read first)
 *   o[k](a)      ->  ag.callMethod(o', k', [a'])
 * `console.log` and `Math.*` were logging.ts's and math.ts's. Calls on `ag` stay as they are
 * (their arguments are converted: the generated code's own); calls on `super`, `import()`,
 * direct `eval`, optional calls and private methods stay native (arguments converted).
 */
import * as t from "../build.js";
import { withLoc } from "../ast.js";
import type { ConvertContext } from "./context.js";
import { ConverterPass } from "./pass.js";

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

/** A call to convert, or null for the calls that stay native. */
function convertCall(pass: ConverterPass & ConvertContext, e: t.CallExpression): t.Expression | null {
  const callee = e.callee;
  if (pass.isAg(callee)) return null;
  if (callee.type === "Super" || callee.type === "Import" || callee.type === "V8IntrinsicIdentifier") return null;
  if (callee.type === "Identifier" && callee.name === "eval") return null;
  if (callee.type === "MemberExpression") {
    if (callee.object.type === "Super" || callee.property.type === "PrivateName") return null;
    // Arguments with side effects go in a thunk, so the method is read before they run (JS order).
    const simple = e.arguments.every((a) => isSimple(a));
    const args = pass.args(e.arguments);
    pass.feature("call");
    const key = callee.computed ? pass.expr(callee.property as t.Expression) : t.stringLiteral((callee.property as t.Identifier).name);
    const list = t.arrayExpression(args as (t.Expression | t.SpreadElement)[]);
    return pass.agCall("callMethod", [pass.expr(callee.object), key, simple ? list : t.arrowFunctionExpression([], list)], e);
  }
  const args = pass.args(e.arguments);
  pass.feature("call");
  return withLoc(t.callExpression(pass.agCall("callee", [pass.expr(callee as t.Expression)], e), args), e);
}

export class Calls extends ConverterPass {
  static readonly passName = "calls";
  static readonly rewrites = ["CallExpression"];
  protected override expression(e: t.Expression): t.Expression | undefined {
    return e.type === "CallExpression" ? (convertCall(this, e) ?? undefined) : undefined;
  }
}
