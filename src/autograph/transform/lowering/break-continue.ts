/**
 * The break/continue pass: every converted loop becomes a `while` (or a `for...of`) with a single
 * exit (loops.ts), and the `break` and `continue` statements that would leave a closure become
 * flags (flags.ts):
 *
 *   while (t) { A; if (c) break; B }   ->  let $brk = false;
 *                                          while (!$brk && t) { A; if (c) { $brk = true } else { B } }
 *
 * A jump is lowered when a closure boundary lies between it and its target: the target is a
 * converted loop (while, do-while, for, for-of), or the jump sits inside a converted `if` (or a
 * guard) below a native target (for-in, switch, labeled block). Other jumps stay native. A flag
 * whose target is native is turned back into a native jump (`if ($brk) break L;`) at the first
 * level from which the target is reachable without crossing a closure. `return` is the next
 * pass's (returns.ts).
 */
import * as t from "../build.js";
import { withLoc } from "../ast.js";
import { FlagLowering, type Flag, type JumpTarget, type LoopStatement, type Lowered, type LoweringContext } from "./flags.js";
import { lowerDoWhile, lowerFor, lowerForIn, lowerForOf, lowerWhile, type LoopLowering } from "./loops.js";

class BreakContinueLowering extends FlagLowering implements LoopLowering {
  brkFlag(target: JumpTarget): Flag {
    target.brk ??= { name: this.names.fresh("$brk"), kind: "brk", target };
    return target.brk;
  }

  contFlag(target: JumpTarget): Flag {
    target.cont ??= { name: this.names.fresh("$cont"), kind: "cont", target };
    return target.cont;
  }

  protected lowerJump(s: t.BreakStatement | t.ContinueStatement | t.ReturnStatement): Lowered | null {
    if (s.type === "ReturnStatement") return null;
    const kind = s.type === "BreakStatement" ? "break" : "continue";
    const target = this.findTarget(s.label?.name ?? null, kind);
    if (!target || (!target.converted && this.depth <= target.depth)) return null;
    const f = kind === "break" ? this.brkFlag(target) : this.contFlag(target);
    const out: t.Statement[] = [withLoc(t.expressionStatement(t.assignmentExpression("=", t.identifier(f.name), t.booleanLiteral(true))), s)];
    out.push(...this.leaveFinallies(this.targets.indexOf(target), s, f));
    return { out, sets: new Set([f]) };
  }

  protected lowerLoop(s: LoopStatement, labels: string[]): Lowered {
    switch (s.type) {
      case "WhileStatement":
        return lowerWhile(this, s, labels);
      case "DoWhileStatement":
        return lowerDoWhile(this, s, labels);
      case "ForStatement":
        return lowerFor(this, s, labels);
      case "ForOfStatement":
        return lowerForOf(this, s, labels);
      case "ForInStatement":
        return lowerForIn(this, s, labels);
    }
  }
}

/** Lowers the breaks and continues of a function body, and its loops, in place. */
export function lowerBreakContinue(body: t.BlockStatement, ctx: LoweringContext): void {
  body.body = new BreakContinueLowering(ctx, true).lowerList(body.body).out;
}
