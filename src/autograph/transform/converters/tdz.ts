/**
 * The temporal dead zone of declarations the lowering moved up (lowering/moved-declarations.ts):
 *   let y;   (moved up)  ->  let y = ag.UNDEFINED;
 *   y        (a read)    ->  ag.tdz(y, "y")      (throws ReferenceError while y is ag.UNDEFINED)
 * so that a read before the original declaration throws as it does natively. Runs after the
 * converters that write the variables they read (`x += v` -> `x = ag.add(x, v)`): those reads
 * are of the variable being assigned, as natively.
 */
import * as t from "../build.js";
import { Anno, hasAnno } from "../anno.js";
import { ConverterPass } from "./pass.js";

export class TemporalDeadZone extends ConverterPass {
  static readonly passName = "tdz";
  static readonly rewrites = ["tdz"];
  protected override statement(s: t.Statement): t.Statement | undefined {
    if (s.type !== "VariableDeclaration") return undefined;
    for (const d of s.declarations) {
      if (d.init) d.init = this.expr(d.init);
      else if (d.id.type === "Identifier" && hasAnno(d.id, Anno.TDZ_HOISTED)) d.init = t.memberExpression(t.identifier(this.agName), t.identifier("UNDEFINED"));
    }
    return s;
  }

  protected override expression(e: t.Expression): t.Expression | undefined {
    return e.type === "Identifier" && this.tdzChecked(e) ? this.agCall("tdz", [t.identifier(e.name), t.stringLiteral(e.name)], e) : undefined;
  }
}
