/**
 * Exits: where control leaves a statement. Whether a statement always jumps (so the statements
 * after it never run when it is reached), whether it contains a jump at all, and whether
 * control can reach the end of a function body (it then returns undefined).
 */
import * as t from "../build.js";
import { childNodes, walk } from "../ast.js";

/** The throw of `if (c) throw e` (no else), or null. */
export function thrownBy(s: t.IfStatement): t.ThrowStatement | null {
  if (s.alternate) return null;
  const c = s.consequent;
  if (c.type === "ThrowStatement") return c;
  if (c.type === "BlockStatement" && c.body.length === 1 && c.body[0]!.type === "ThrowStatement") return c.body[0] as t.ThrowStatement;
  return null;
}

/** `if (c) throw e` (no else): an assertion, never restructured or lowered. */
export function isThrowOnly(s: t.IfStatement): boolean {
  return thrownBy(s) !== null;
}

/** Whether a `return`, `break` or `continue` occurs in `s` (nested functions aside). */
export function containsJump(s: t.Node): boolean {
  let found = false;
  walk(s, (n) => {
    if (found) return false;
    if (t.isFunction(n) || t.isClass(n)) return false;
    if (n.type === "ReturnStatement" || n.type === "BreakStatement" || n.type === "ContinueStatement") found = true;
    return undefined;
  });
  return found;
}

/** Whether control never falls through `s` to the next statement. */
export function alwaysExits(s: t.Statement, inner: Set<string> = new Set()): boolean {
  switch (s.type) {
    case "ReturnStatement":
    case "ThrowStatement":
      return true;
    case "BreakStatement":
    case "ContinueStatement":
      return !(s.label && inner.has(s.label.name));
    case "BlockStatement":
      return s.body.some((x) => alwaysExits(x, inner));
    case "IfStatement":
      return !!s.alternate && alwaysExits(s.consequent, inner) && alwaysExits(s.alternate, inner);
    case "LabeledStatement": {
      if (t.isLoop(s.body) || s.body.type === "SwitchStatement") return false;
      const next = new Set(inner);
      next.add(s.label.name);
      return alwaysExits(s.body, next);
    }
    case "TryStatement":
      if (s.finalizer && alwaysExits(s.finalizer, inner)) return true;
      return alwaysExits(s.block, inner) && (!s.handler || alwaysExits(s.handler.body, inner));
    default:
      return false;
  }
}

/** Whether a loop statement's test is missing or the literal `true` (`for (;;)`, `while (true)`). */
function isEndless(s: t.Statement): boolean {
  if (s.type === "ForStatement") return !s.test || (s.test.type === "BooleanLiteral" && s.test.value);
  if (s.type === "WhileStatement" || s.type === "DoWhileStatement") return s.test.type === "BooleanLiteral" && s.test.value;
  return false;
}

/** Whether a `break` inside `body` leaves the loop `body` belongs to (labels: that loop's labels). */
function breaksOut(body: t.Node, labels: readonly string[]): boolean {
  let found = false;
  const visit = (n: t.Node, nested: boolean): void => {
    if (found || t.isFunction(n) || t.isClass(n)) return;
    if (n.type === "BreakStatement" && (n.label ? labels.includes(n.label.name) : !nested)) {
      found = true;
      return;
    }
    const inner = nested || t.isLoop(n) || n.type === "SwitchStatement";
    for (const c of childNodes(n)) visit(c, inner);
  };
  visit(body, false);
  return found;
}

/**
 * Whether control can reach the end of a function body (it then returns undefined): no
 * statement of the body always exits, and none is an endless loop without a `break`. (Asked of
 * the body as written: the lowering moves statements into branches.)
 */
export function endReachable(body: readonly t.Statement[]): boolean {
  for (const s of body) {
    if (alwaysExits(s)) return false;
    let loop: t.Statement = s;
    const labels: string[] = [];
    while (loop.type === "LabeledStatement") {
      labels.push(loop.label.name);
      loop = loop.body;
    }
    if (isEndless(loop) && !breaksOut((loop as t.Loop).body, labels)) return false;
  }
  return true;
}
