/**
 * `console.log(...)` becomes `ag.print(...)`: a staged print when it meets a symbolic tensor,
 * `console.log` otherwise.
 */
import type * as t from "@babel/types";
import type { ConvertContext } from "./context.js";
import { ConverterPass } from "./pass.js";

export function isConsoleLog(ctx: ConvertContext, callee: t.Node): boolean {
  return (
    callee.type === "MemberExpression" &&
    !callee.computed &&
    callee.object.type === "Identifier" &&
    callee.object.name === "console" &&
    callee.property.type === "Identifier" &&
    callee.property.name === "log" &&
    !ctx.isShadowed("console", callee.object)
  );
}

export function convertConsoleLog(ctx: ConvertContext, e: t.CallExpression, args: t.CallExpression["arguments"]): t.Expression {
  ctx.feature("print");
  return ctx.agCall("print", args as t.Expression[], e);
}

export class Logging extends ConverterPass {
  static readonly passName = "logging";
  static readonly rewrites = ["name:console"];
  protected override expression(e: t.Expression): t.Expression | undefined {
    if (e.type !== "CallExpression" || !isConsoleLog(this, e.callee)) return undefined;
    return convertConsoleLog(this, e, this.args(e.arguments));
  }
}
