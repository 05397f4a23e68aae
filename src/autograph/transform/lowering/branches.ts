/**
 * Single-exit branches: the statements after an `if` one of whose branches always jumps (returns,
 * breaks, continues or throws) move into its other branch, so that a jump ends its branch:
 *
 *   if (c) return x; rest    ->  if (c) { return x } else { rest }
 *
 * Then the jump lowering needs no guard for them (`if (!$ret) { rest }`): a staged `if` carries
 * the rest in its branch. Declarations in the moved statements that earlier code may see are
 * declared before the `if` (moved-declarations.ts). `if (c) throw e` stays as it is (an assertion).
 * Runs before the jump lowering, on the statement lists it will lower.
 */
import * as t from "../build.js";
import { withLoc } from "../ast.js";
import { alwaysExits, containsJump, isThrowOnly } from "../analyses/exits.js";
import { hoistRestDeclarations } from "./moved-declarations.js";

function restructureList(list: readonly t.Statement[], agName: string): t.Statement[] {
  const work = [...list];
  const out: t.Statement[] = [];
  for (let i = 0; i < work.length; i++) {
    let s = work[i]!;
    if (s.type === "IfStatement" && i + 1 < work.length && !isThrowOnly(s) && containsJump(s)) {
      const ce = alwaysExits(s.consequent);
      const ae = s.alternate ? alwaysExits(s.alternate) : false;
      if (ce !== ae) {
        const rest = work.splice(i + 1);
        hoistRestDeclarations(rest, work.slice(0, i + 1), out, agName);
        const restLoc = rest[0];
        s = ce
          ? withLoc(t.ifStatement(s.test, s.consequent, withLoc(t.blockStatement([...(s.alternate ? [s.alternate] : []), ...rest]), s.alternate ?? restLoc)), s)
          : withLoc(t.ifStatement(s.test, withLoc(t.blockStatement([s.consequent, ...rest]), s.consequent), s.alternate), s);
      }
    }
    out.push(restructure(s, agName));
  }
  return out;
}

/** The statement with the lists inside it restructured (those the jump lowering lowers). */
function restructure(s: t.Statement, agName: string): t.Statement {
  const body = (b: t.Statement): t.Statement => (b.type === "BlockStatement" ? withLoc(t.blockStatement(restructureList(b.body, agName), b.directives), b) : restructure(b, agName));
  switch (s.type) {
    case "BlockStatement":
      return body(s);
    case "IfStatement":
      if (isThrowOnly(s)) return s;
      s.consequent = body(s.consequent);
      if (s.alternate) s.alternate = body(s.alternate);
      return s;
    case "LabeledStatement":
    case "WhileStatement":
    case "DoWhileStatement":
    case "ForStatement":
    case "ForInStatement":
      s.body = body(s.body);
      return s;
    case "ForOfStatement":
      if (!s.await) s.body = body(s.body);
      return s;
    case "SwitchStatement":
      for (const c of s.cases) c.consequent = restructureList(c.consequent, agName);
      return s;
    case "TryStatement":
      s.block.body = restructureList(s.block.body, agName);
      if (s.handler) s.handler.body.body = restructureList(s.handler.body.body, agName);
      if (s.finalizer) s.finalizer.body = restructureList(s.finalizer.body, agName);
      return s;
    default:
      return s;
  }
}

/** Restructures a function body in place. */
export function restructureBranches(body: t.BlockStatement, agName: string): void {
  body.body = restructureList(body.body, agName);
}
