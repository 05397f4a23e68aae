/**
 * Rebindable constants: `const x` whose elements are written (`x[i] = v`, a functional update
 * that rebinds `x` when `x` holds a tensor) or that is pushed to (`x.push(v)`: a staged loop makes
 * it a tensor list, rebound after the loop) becomes `let x` when `x` is never assigned directly.
 */
import * as t from "../build.js";
import { childNodes, patternIdentifiers } from "../ast.js";

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

/** Turns the constants of a function body that need rebinding into `let`s, in place. */
export function rebindableConsts(fn: t.Function): void {
  if (fn.body.type !== "BlockStatement") return;
  const { indexed, assigned } = elementWrites(fn.body);
  const toLet = new Set([...indexed].filter((n) => !assigned.has(n)));
  if (toLet.size > 0) constToLet(fn.body, toLet);
}
