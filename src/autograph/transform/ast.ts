/**
 * Small AST helpers shared by the analyses and converters (Babel node types and builders).
 */
import * as t from "./build.js";

/** Copies the source position of `from` onto `to` (for locations and source maps). */
export function withLoc<T extends t.Node>(to: T, from: t.Node | null | undefined): T {
  if (from?.loc) {
    to.loc = from.loc;
    to.start = from.start ?? null;
    to.end = from.end ?? null;
  }
  return to;
}

export function id(name: string, from?: t.Node | null): t.Identifier {
  return withLoc(t.identifier(name), from);
}

/** Children of a node in evaluation order (the visitor keys of Babel's definitions). */
export function childNodes(node: t.Node): t.Node[] {
  const keys = t.visitorKeys(node.type) ?? [];
  const out: t.Node[] = [];
  for (const k of keys) {
    const v = (node as unknown as Record<string, unknown>)[k];
    if (Array.isArray(v)) {
      for (const c of v) if (c && typeof c === "object" && typeof (c as t.Node).type === "string") out.push(c as t.Node);
    } else if (v && typeof v === "object" && typeof (v as t.Node).type === "string") out.push(v as t.Node);
  }
  return out;
}

/**
 * Visits `node` and its descendants depth first. `enter` returning false skips the children.
 * Nested functions are entered unless `skipFunctions` (the root itself is always entered).
 */
export function walk(node: t.Node, enter: (n: t.Node, parent: t.Node | null) => boolean | void, skipFunctions = false): void {
  const visit = (n: t.Node, parent: t.Node | null, root: boolean): void => {
    if (!root && skipFunctions && (t.isFunction(n) || t.isClass(n))) {
      if (enter(n, parent) === false) return;
      return;
    }
    if (enter(n, parent) === false) return;
    for (const c of childNodes(n)) visit(c, n, false);
  };
  visit(node, null, true);
}

/**
 * Whether `fn` uses `super` itself (arrow functions inside it share its `super`; other nested
 * functions and classes have their own).
 */
export function usesSuper(fn: t.Function): boolean {
  let found = false;
  walk(fn, (n) => {
    if (found) return false;
    if (n.type === "Super") found = true;
    return n === fn || !((t.isFunction(n) && n.type !== "ArrowFunctionExpression") || t.isClass(n));
  });
  return found;
}

/**
 * The places a binding pattern or assignment target writes: its identifiers and member
 * expressions (`[a, b.x, { c: d[i] }, ...e] = ...`), through defaults, rests, parameter
 * properties and TypeScript/parenthesis wrappers.
 */
function patternTargets(p: t.Node | null | undefined, out: (t.Identifier | t.MemberExpression)[]): void {
  if (!p) return;
  switch (p.type) {
    case "Identifier":
    case "MemberExpression":
      out.push(p);
      break;
    case "ArrayPattern":
      for (const e of p.elements) patternTargets(e, out);
      break;
    case "ObjectPattern":
      for (const prop of p.properties) patternTargets(prop.type === "RestElement" ? prop.argument : (prop.value as t.Node), out);
      break;
    case "AssignmentPattern":
      patternTargets(p.left, out);
      break;
    case "RestElement":
      patternTargets(p.argument, out);
      break;
    case "TSParameterProperty":
      patternTargets(p.parameter, out);
      break;
    case "TSAsExpression":
    case "TSSatisfiesExpression":
    case "TSNonNullExpression":
    case "TSTypeAssertion":
    case "ParenthesizedExpression":
      patternTargets(p.expression, out);
      break;
    default:
      break;
  }
}

/** The identifiers a binding pattern (or assignment target) writes. */
export function patternIdentifiers(p: t.Node | null | undefined): t.Identifier[] {
  const out: (t.Identifier | t.MemberExpression)[] = [];
  patternTargets(p, out);
  return out.filter((x): x is t.Identifier => x.type === "Identifier");
}

/** The member expressions an assignment target pattern writes (`[a.x, b[i]] = ...`). */
export function patternMembers(p: t.Node | null | undefined): t.MemberExpression[] {
  const out: (t.Identifier | t.MemberExpression)[] = [];
  patternTargets(p, out);
  return out.filter((x): x is t.MemberExpression => x.type === "MemberExpression");
}

/** The identifier at the root of a member chain (`x` in `x.a[i].b`), if any. */
export function memberRoot(e: t.Node): t.Identifier | null {
  let cur: t.Node = e;
  for (;;) {
    if (cur.type === "MemberExpression" || cur.type === "OptionalMemberExpression") cur = cur.object;
    else if (cur.type === "TSNonNullExpression" || cur.type === "TSAsExpression" || cur.type === "ParenthesizedExpression") cur = cur.expression;
    else break;
  }
  return cur.type === "Identifier" ? cur : null;
}

/** Names declared by a declaration statement (let/const/var/class/function). */
export function declaredNames(s: t.Statement): string[] {
  if (s.type === "VariableDeclaration") return s.declarations.flatMap((d) => patternIdentifiers(d.id).map((i) => i.name));
  if ((s.type === "FunctionDeclaration" || s.type === "ClassDeclaration") && s.id) return [s.id.name];
  return [];
}

/** Every identifier name occurring in a subtree (references, bindings, anything). */
export function identifierNames(node: t.Node, out: Set<string> = new Set()): Set<string> {
  walk(node, (n) => {
    if (n.type === "Identifier") out.add(n.name);
  });
  return out;
}

/** Names referenced (as identifiers) inside functions nested in `node`. */
export function namesUsedInNestedFunctions(node: t.Node): Set<string> {
  const out = new Set<string>();
  walk(node, (n) => {
    if (t.isFunction(n) || t.isClass(n)) {
      identifierNames(n, out);
      return false;
    }
    return undefined;
  });
  return out;
}

/** `!a && !b && ...` (flags), or null for none. */
export function notAll(flags: string[]): t.Expression | null {
  let e: t.Expression | null = null;
  for (const f of flags) {
    const n = t.unaryExpression("!", t.identifier(f));
    e = e ? t.logicalExpression("&&", e, n) : n;
  }
  return e;
}

export function letDecl(name: string, init?: t.Expression | null): t.VariableDeclaration {
  return t.variableDeclaration("let", [t.variableDeclarator(t.identifier(name), init ?? null)]);
}

/** Strips TypeScript-only wrappers around an expression (`x as T`, `x!`, `<T>x`, `x satisfies T`). */
export function unwrapTS(e: t.Node): t.Node {
  let cur = e;
  while (
    cur.type === "TSAsExpression" ||
    cur.type === "TSNonNullExpression" ||
    cur.type === "TSTypeAssertion" ||
    cur.type === "TSSatisfiesExpression" ||
    cur.type === "TSInstantiationExpression"
  ) {
    cur = (cur as { expression: t.Node }).expression;
  }
  return cur;
}

/** The statements of a statement used as a body (a block's list, or the statement alone). */
export function bodyList(s: t.Statement): t.Statement[] {
  return s.type === "BlockStatement" ? s.body : [s];
}
