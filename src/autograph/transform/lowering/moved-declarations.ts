/**
 * Declarations the lowering moves up. When the statements after a jump move into a branch or a
 * guard (`if (!$brk) { ... }`), a `let`/`const`/`class` declaration among them whose name occurs
 * before them (closures there may read it) is declared before them instead (`let y;`) and
 * assigned in place (`y = 2`), so the code before still sees the binding.
 *
 * Natively a read of `y` before `y = 2` throws ReferenceError (its temporal dead zone). The
 * moved declaration's identifiers are annotated (Anno.TDZ_HOISTED): converted, `y` starts as
 * `ag.UNDEFINED` and direct reads go through `ag.tdz(y, "y")` (converters/tdz.ts); reads inside
 * functions nested in the code before the declaration (and their converted twins) are
 * rewritten here.
 */
import * as t from "../build.js";
import { declaredNames, identifierNames, patternIdentifiers, withLoc } from "../ast.js";
import { Anno, hasAnno, mark } from "../anno.js";

/** Names declared in a subtree, functions nested in it excluded (params of `root` included). */
function declaredIn(root: t.Node): Set<string> {
  const out = new Set<string>();
  if (t.isFunction(root)) for (const p of root.params) for (const i of patternIdentifiers(p)) out.add(i.name);
  if ((root.type === "FunctionExpression" || root.type === "ClassExpression") && root.id) out.add(root.id.name);
  const visit = (n: t.Node, top: boolean): void => {
    if (!top && (t.isFunction(n) || t.isClass(n))) {
      if ((n.type === "FunctionDeclaration" || n.type === "ClassDeclaration") && n.id) out.add(n.id.name);
      return;
    }
    if (n.type === "VariableDeclarator") for (const i of patternIdentifiers(n.id)) out.add(i.name);
    if (n.type === "CatchClause" && n.param) for (const i of patternIdentifiers(n.param)) out.add(i.name);
    for (const k of t.visitorKeys(n.type) ?? []) {
      const v = (n as unknown as Record<string, unknown>)[k];
      for (const c of Array.isArray(v) ? v : [v]) if (c && typeof c === "object" && typeof (c as t.Node).type === "string") visit(c as t.Node, false);
    }
  };
  visit(root, true);
  return out;
}

function isScope(n: t.Node): boolean {
  return t.isFunction(n) || t.isClass(n) || n.type === "BlockStatement" || n.type === "CatchClause" || t.isFor(n) || n.type === "SwitchStatement";
}

function isRead(id: t.Identifier, parent: t.Node, grandparent: t.Node | null): boolean {
  if (parent.type === "UpdateExpression") return false;
  if ((parent.type === "AssignmentExpression" || parent.type === "AssignmentPattern") && parent.left === id) return false;
  if ((parent.type === "ForInStatement" || parent.type === "ForOfStatement") && parent.left === id) return false;
  return t.isReferenced(id, parent, grandparent ?? undefined);
}

/**
 * Rewrites the reads of `names` inside functions nested in `stmts` (where those names are not
 * shadowed) as `agName.tdz(name, "name")`, in place.
 */
function checkReadsInNestedFunctions(stmts: readonly t.Statement[], names: ReadonlySet<string>, agName: string): void {
  const visit = (n: t.Node, parent: t.Node | null, grandparent: t.Node | null, inFunction: boolean, shadowed: ReadonlySet<string>): t.Node => {
    if (n.type === "Identifier" && inFunction && parent && names.has(n.name) && !shadowed.has(n.name) && isRead(n, parent, grandparent)) {
      return t.callExpression(t.memberExpression(t.identifier(agName), t.identifier("tdz")), [t.identifier(n.name), t.stringLiteral(n.name)]);
    }
    let inner = shadowed;
    if (isScope(n)) {
      const d = [...declaredIn(n)].filter((x) => names.has(x));
      if (d.length > 0) inner = new Set([...shadowed, ...d]);
      if ([...names].every((x) => inner.has(x))) return n;
    }
    const nowInFunction = inFunction || t.isFunction(n);
    const rec = n as unknown as Record<string, unknown>;
    for (const k of t.visitorKeys(n.type) ?? []) {
      const v = rec[k];
      if (Array.isArray(v)) {
        for (let i = 0; i < v.length; i++) {
          const c = v[i];
          if (c && typeof c === "object" && typeof (c as t.Node).type === "string") v[i] = visit(c as t.Node, n, parent, nowInFunction, inner);
        }
      } else if (v && typeof v === "object" && typeof (v as t.Node).type === "string") rec[k] = visit(v as t.Node, n, parent, nowInFunction, inner);
    }
    return n;
  };
  for (const s of stmts) visit(s, null, null, false, new Set());
}

/**
 * Moves up the declarations in `rest` whose names occur in `before` (they go to `out`, before
 * `rest`'s new place). A declaration an earlier pass moved up (`let y;`, Anno.MOVED_DECLARATION)
 * moves again whole: its reads were checked when it first moved, from a place before this one.
 * Edits `rest` in place.
 */
export function hoistRestDeclarations(rest: t.Statement[], before: readonly t.Statement[], out: t.Statement[], agName: string): void {
  let seen: Set<string> | null = null;
  for (let k = 0; k < rest.length; k++) {
    const r = rest[k]!;
    if (!((r.type === "VariableDeclaration" && r.kind !== "var") || r.type === "ClassDeclaration")) continue;
    const names = declaredNames(r);
    if (names.length === 0) continue;
    if (!seen) {
      seen = new Set<string>();
      for (const b of before) identifierNames(b, seen);
    }
    if (!names.some((n) => seen!.has(n))) continue;
    if (hasAnno(r, Anno.MOVED_DECLARATION)) {
      out.push(r);
      rest.splice(k--, 1);
      continue;
    }
    const ids = names.map((n) => mark(t.identifier(n), Anno.TDZ_HOISTED));
    checkReadsInNestedFunctions([...before, ...rest.slice(0, k)], new Set(names), agName);
    out.push(mark(t.variableDeclaration("let", ids.map((id) => t.variableDeclarator(id))), Anno.MOVED_DECLARATION));
    if (r.type === "ClassDeclaration") {
      const expr = t.classExpression(r.id, r.superClass, r.body, r.decorators ?? []);
      rest[k] = withLoc(t.expressionStatement(t.assignmentExpression("=", t.identifier(r.id!.name), withLoc(expr, r))), r);
    } else {
      // `let y;` initializes y to undefined where it stands (before it, y is in its TDZ).
      const parts = r.declarations.map((d) => withLoc(t.assignmentExpression("=", d.id as t.LVal, d.init ?? t.identifier("undefined")), d));
      rest[k] = withLoc(t.expressionStatement(parts.length === 1 ? parts[0]! : t.sequenceExpression(parts)), r);
    }
  }
}
