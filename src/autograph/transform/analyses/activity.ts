/**
 * Activity analysis: the variables a subtree reads and modifies. Assignments, updates,
 * compound assignments, for-in/of heads, member writes (`x.a = v`, `x[i] = v`, `x.a[i]++`:
 * they modify the root variable `x`) and array mutators (`x.push(v)`, `x.pop()`, ...) count as
 * modifications, including those made by functions nested in the subtree (closures may run
 * inside a branch or loop).
 */
import * as t from "../build.js";
import { childNodes, memberRoot, patternIdentifiers, patternMembers } from "../ast.js";
import type { ScopeInfo, VarKey } from "./scope.js";

export interface Activity {
  reads: Set<VarKey>;
  /** Assigned directly (`x = v`, `x += v`, `x++`, destructuring, for-in/of targets). */
  assigned: Set<VarKey>;
  /** Modified through a member (`x.a = v`, `x[i] = v`). */
  memberWritten: Set<VarKey>;
}

/** Array methods that modify the array they are called on. */
const MUTATORS = new Set(["push", "pop", "shift", "unshift", "splice", "reverse", "sort", "fill", "copyWithin"]);

function isReference(node: t.Identifier, parent: t.Node | null, grand: t.Node | null): boolean {
  if (!parent) return true;
  return t.isReferenced(node, parent, grand ?? undefined);
}

export function activityOf(root: t.Node, scopes: ScopeInfo): Activity {
  const reads = new Set<VarKey>();
  const assigned = new Set<VarKey>();
  const memberWritten = new Set<VarKey>();
  const writeTarget = (target: t.Node, isDeclaration: boolean): void => {
    if (!isDeclaration) for (const i of patternIdentifiers(target)) assigned.add(scopes.keyOf(i));
    for (const m of patternMembers(target)) {
      const r = memberRoot(m);
      if (r) memberWritten.add(scopes.keyOf(r));
    }
  };
  const visit = (n: t.Node, parent: t.Node | null, grand: t.Node | null): void => {
    switch (n.type) {
      case "Identifier":
        if (isReference(n, parent, grand)) reads.add(scopes.keyOf(n));
        return;
      case "AssignmentExpression":
        writeTarget(n.left, false);
        if (n.operator !== "=" && n.left.type === "Identifier") reads.add(scopes.keyOf(n.left));
        break;
      case "UpdateExpression":
        if (n.argument.type === "Identifier") {
          assigned.add(scopes.keyOf(n.argument));
          reads.add(scopes.keyOf(n.argument));
        } else {
          const r = memberRoot(n.argument);
          if (r) memberWritten.add(scopes.keyOf(r));
        }
        break;
      case "ForOfStatement":
      case "ForInStatement":
        if (n.left.type !== "VariableDeclaration") writeTarget(n.left, false);
        break;
      case "CallExpression":
      case "OptionalCallExpression": {
        // xs.push(v), xs.pop(), ...: the array is modified (staged loops make tensor lists of them).
        const c = n.callee;
        if ((c.type === "MemberExpression" || c.type === "OptionalMemberExpression") && !c.computed && c.property.type === "Identifier" && MUTATORS.has(c.property.name)) {
          const r = memberRoot(c.object);
          if (r) memberWritten.add(scopes.keyOf(r));
        }
        break;
      }
      default:
        break;
    }
    for (const c of childNodes(n)) visit(c, n, parent);
  };
  visit(root, null, null);
  return { reads, assigned, memberWritten };
}

/** Variables read in a subtree (references only). */
export function readsOf(root: t.Node | null | undefined, scopes: ScopeInfo): Set<VarKey> {
  return root ? activityOf(root, scopes).reads : new Set();
}

/** Keys of every identifier (read or written) inside functions nested in `root`. */
export function capturedKeys(root: t.Node, scopes: ScopeInfo): Set<VarKey> {
  const out = new Set<VarKey>();
  const visit = (n: t.Node, inside: boolean): void => {
    if (inside && n.type === "Identifier") out.add(scopes.keyOf(n));
    const nowInside = inside || (n !== root && (t.isFunction(n) || t.isClass(n)));
    for (const c of childNodes(n)) visit(c, nowInside);
  };
  visit(root, false);
  return out;
}
