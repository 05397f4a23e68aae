/**
 * Declarations hoisted where JavaScript hoists them, so that later passes may move statements
 * into closures and blocks (semantics-preserving for strict-mode code):
 * - `var` declarations go to the top of the function (`var a, b;`), their initializers
 *   becoming assignments in place (branch and loop bodies become closures, in which a `var`
 *   would otherwise be local);
 * - function declarations move to the start of their statement list (they are hoisted there
 *   anyway), so that the rest of a list can be wrapped in a guard or a branch.
 */
import * as t from "../build.js";
import { patternIdentifiers } from "../ast.js";

function isVar(d: t.Node | null | undefined): d is t.VariableDeclaration {
  return !!d && d.type === "VariableDeclaration" && d.kind === "var";
}

function declaratorsToExpression(d: t.VariableDeclaration): t.Expression | null {
  const parts: t.Expression[] = [];
  for (const decl of d.declarations) {
    if (!decl.init) continue;
    const target = decl.id as t.LVal;
    const a = t.assignmentExpression("=", target as t.PatternLike as t.LVal, decl.init);
    a.loc = decl.loc;
    a.start = decl.start ?? null;
    a.end = decl.end ?? null;
    parts.push(a);
  }
  if (parts.length === 0) return null;
  return parts.length === 1 ? parts[0]! : t.sequenceExpression(parts);
}

/** Rewrites `var` inside a statement (not nested functions); collects the names. */
function hoistVarsIn(node: t.Node, names: Set<string>): void {
  const visitList = (list: t.Statement[]): void => {
    for (let i = 0; i < list.length; i++) {
      const s = list[i]!;
      if (isVar(s)) {
        for (const d of s.declarations) for (const n of patternIdentifiers(d.id)) names.add(n.name);
        const e = declaratorsToExpression(s);
        list[i] = e ? Object.assign(t.expressionStatement(e), { loc: s.loc, start: s.start, end: s.end }) : t.emptyStatement();
      } else visitStmt(s);
    }
  };
  const visitBody = (s: t.Statement): t.Statement => {
    if (isVar(s)) {
      const tmp = [s as t.Statement];
      visitList(tmp);
      return tmp[0]!;
    }
    visitStmt(s);
    return s;
  };
  const visitStmt = (s: t.Node): void => {
    switch (s.type) {
      case "BlockStatement":
        visitList(s.body);
        break;
      case "IfStatement":
        s.consequent = visitBody(s.consequent);
        if (s.alternate) s.alternate = visitBody(s.alternate);
        break;
      case "WhileStatement":
      case "DoWhileStatement":
        s.body = visitBody(s.body);
        break;
      case "ForStatement":
        if (isVar(s.init)) {
          for (const d of s.init.declarations) for (const n of patternIdentifiers(d.id)) names.add(n.name);
          s.init = declaratorsToExpression(s.init);
        }
        s.body = visitBody(s.body);
        break;
      case "ForInStatement":
      case "ForOfStatement":
        if (isVar(s.left)) {
          const d = s.left.declarations[0]!;
          for (const n of patternIdentifiers(d.id)) names.add(n.name);
          s.left = d.id as t.LVal;
        }
        s.body = visitBody(s.body);
        break;
      case "LabeledStatement":
        s.body = visitBody(s.body);
        break;
      case "SwitchStatement":
        for (const c of s.cases) visitList(c.consequent);
        break;
      case "TryStatement":
        visitList(s.block.body);
        if (s.handler) visitList(s.handler.body.body);
        if (s.finalizer) visitList(s.finalizer.body);
        break;
      case "WithStatement":
        s.body = visitBody(s.body);
        break;
      default:
        break;
    }
  };
  visitStmt(node);
}

/** Moves function declarations to the start of every statement list (stable). */
function hoistFunctionDeclarations(node: t.Node): void {
  const sortList = (list: t.Statement[]): void => {
    const fns = list.filter((s) => s.type === "FunctionDeclaration");
    if (fns.length > 0 && fns.length < list.length) {
      const rest = list.filter((s) => s.type !== "FunctionDeclaration");
      list.splice(0, list.length, ...fns, ...rest);
    }
    for (const s of list) visit(s);
  };
  const visit = (s: t.Node): void => {
    switch (s.type) {
      case "BlockStatement":
        sortList(s.body);
        break;
      case "IfStatement":
        visit(s.consequent);
        if (s.alternate) visit(s.alternate);
        break;
      case "WhileStatement":
      case "DoWhileStatement":
      case "ForStatement":
      case "ForInStatement":
      case "ForOfStatement":
      case "LabeledStatement":
        visit(s.body);
        break;
      case "SwitchStatement":
        for (const c of s.cases) sortList(c.consequent);
        break;
      case "TryStatement":
        visit(s.block);
        if (s.handler) visit(s.handler.body);
        if (s.finalizer) visit(s.finalizer);
        break;
      default:
        break;
    }
  };
  visit(node);
}

/**
 * Hoists the declarations of a function body in place (fn must be a fresh copy): `var`s to the
 * top of the function, function declarations to the start of their statement lists.
 */
export function hoistDeclarations(fn: t.Function): void {
  if (fn.body.type !== "BlockStatement") return;
  const body = fn.body;
  const names = new Set<string>();
  hoistVarsIn(body, names);
  hoistFunctionDeclarations(body);
  if (names.size > 0) {
    const decl = t.variableDeclaration(
      "var",
      [...names].map((n) => t.variableDeclarator(t.identifier(n))),
    );
    body.body.unshift(decl);
  }
}
