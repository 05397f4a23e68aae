/**
 * Normalization before lowering, all semantics-preserving for strict-mode code:
 * - `var` declarations are hoisted to the top of the function (`var a, b;`), their
 *   initializers becoming assignments in place (branch and loop bodies become closures, in
 *   which a `var` would otherwise be local);
 * - function declarations move to the start of their statement list (they are hoisted there
 *   anyway), so that the rest of a list can be wrapped in a guard or a branch;
 * - `const x` whose elements are written (`x[i] = v`, a functional update that rebinds `x`
 *   when `x` holds a tensor) or that is pushed to (`x.push(v)`: a staged loop makes it a
 *   tensor list, rebound after the loop) becomes `let x` when `x` is never assigned directly.
 */
import * as t from "@babel/types";
import { childNodes, patternIdentifiers } from "./ast.js";

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

const LIST_MUTATORS = new Set(["push", "pop"]);

/** Names written as `x[i] = v` / `x[i] op= v` / `x[i]++` or pushed to (`x.push(v)`), and names assigned directly. */
function elementWrites(node: t.Node): { indexed: Set<string>; assigned: Set<string> } {
  const indexed = new Set<string>();
  const assigned = new Set<string>();
  const visit = (n: t.Node): void => {
    if (t.isFunction(n) || t.isClass(n)) return;
    if (n.type === "AssignmentExpression" || n.type === "UpdateExpression") {
      const target = n.type === "AssignmentExpression" ? n.left : n.argument;
      if (target.type === "MemberExpression" && target.computed && target.object.type === "Identifier") indexed.add(target.object.name);
      if (n.type === "AssignmentExpression") for (const i of patternIdentifiers(n.left)) assigned.add(i.name);
      else if (target.type === "Identifier") assigned.add(target.name);
    }
    // xs.push(v), xs.pop(): a staged loop turns xs into a tensor list, rebinding it after the loop.
    if (n.type === "CallExpression" && n.callee.type === "MemberExpression" && !n.callee.computed && n.callee.object.type === "Identifier" && n.callee.property.type === "Identifier" && LIST_MUTATORS.has(n.callee.property.name)) {
      indexed.add(n.callee.object.name);
    }
    if ((n.type === "ForOfStatement" || n.type === "ForInStatement") && n.left.type !== "VariableDeclaration") {
      for (const i of patternIdentifiers(n.left)) assigned.add(i.name);
    }
    for (const c of childNodes(n)) visit(c);
  };
  visit(node);
  return { indexed, assigned };
}

function constToLet(node: t.Node, names: Set<string>): void {
  const visit = (n: t.Node): void => {
    if (t.isFunction(n) || t.isClass(n)) return;
    if (n.type === "VariableDeclaration" && n.kind === "const" && n.declarations.every((d) => d.init)) {
      const declared = n.declarations.flatMap((d) => patternIdentifiers(d.id).map((i) => i.name));
      if (declared.some((d) => names.has(d))) n.kind = "let";
    }
    for (const c of childNodes(n)) visit(c);
  };
  visit(node);
}

/** Normalizes the body of `fn` in place (fn must be a fresh copy). */
export function normalizeFunction(fn: t.Function): void {
  if (fn.body.type !== "BlockStatement") return;
  const body = fn.body;
  const names = new Set<string>();
  hoistVarsIn(body, names);
  hoistFunctionDeclarations(body);
  const { indexed, assigned } = elementWrites(body);
  const toLet = new Set([...indexed].filter((n) => !assigned.has(n)));
  if (toLet.size > 0) constToLet(body, toLet);
  if (names.size > 0) {
    const decl = t.variableDeclaration(
      "var",
      [...names].map((n) => t.variableDeclarator(t.identifier(n))),
    );
    body.body.unshift(decl);
  }
}
