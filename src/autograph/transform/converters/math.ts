/**
 * `Math.f(...)` becomes `ag.math.f(...)` (`Math.exp(x)` is `sc.exp(x)` on a tensor, `Math.exp(x)` on a
 * number; functions without a tensor form say so when they meet a tensor).
 */
import type * as t from "@babel/types";
import type { ConvertContext } from "./context.js";
import { ConverterPass } from "./pass.js";

export const MATH_FUNCTIONS: ReadonlySet<string> = new Set(
  Object.getOwnPropertyNames(Math).filter((k) => typeof (Math as unknown as Record<string, unknown>)[k] === "function"),
);

export function mathFunction(ctx: ConvertContext, callee: t.Node): string | null {
  if (
    callee.type === "MemberExpression" &&
    !callee.computed &&
    callee.object.type === "Identifier" &&
    callee.object.name === "Math" &&
    callee.property.type === "Identifier" &&
    MATH_FUNCTIONS.has(callee.property.name) &&
    !ctx.isShadowed("Math", callee.object)
  ) {
    return callee.property.name;
  }
  return null;
}

export function convertMathCall(ctx: ConvertContext, e: t.CallExpression, name: string, args: t.Expression[]): t.Expression {
  ctx.feature("math");
  return ctx.agCall(`math.${name}`, args, e);
}

export class MathCalls extends ConverterPass {
  static readonly passName = "math";
  static readonly rewrites = ["name:Math"];
  protected override expression(e: t.Expression): t.Expression | undefined {
    if (e.type !== "CallExpression" || e.arguments.some((a) => a.type === "SpreadElement")) return undefined;
    const name = mathFunction(this, e.callee);
    return name ? convertMathCall(this, e, name, this.args(e.arguments) as t.Expression[]) : undefined;
  }
}
