/**
 * `switch (d)` -> `switch (ag.switchValue(d', loc))`: a concrete tensor discriminant is read
 * (a scalar); a symbolic one is an error naming the line (a switch compares with `===` while
 * tracing: write `if / else if`). Cases stay native.
 */
import * as t from "../build.js";
import { ConverterPass } from "./pass.js";

export class Switches extends ConverterPass {
  static readonly passName = "switch";
  static readonly rewrites = ["SwitchStatement"];
  protected override statement(s: t.Statement): t.Statement | undefined {
    if (s.type !== "SwitchStatement") return undefined;
    this.feature("if");
    s.discriminant = this.agCall("switchValue", [this.expr(s.discriminant), this.loc(s)], s.discriminant);
    for (const c of s.cases) {
      if (c.test) c.test = this.expr(c.test);
      this.stmts(c.consequent);
    }
    return s;
  }
}
