/**
 * State passing for constructs that may be staged:
 *   getState: () => [a, b]             current values
 *   setState: ($s) => { [a, b] = $s }  write back (let/var bindings; others are holes)
 *   names:    ["a", "b"]               for error messages
 */
import * as t from "../build.js";
import { Anno, mark } from "../anno.js";
import type { ConvertContext } from "./context.js";

export function stateArgs(ctx: ConvertContext, node: t.Node): t.Expression[] {
  const { names, assignable } = ctx.state(node);
  const get = t.arrowFunctionExpression([], t.arrayExpression(names.map((n) => t.identifier(n))));
  const s = ctx.stateParam;
  const targets = names.map((n, i) => (assignable[i] ? t.identifier(n) : null));
  const set = targets.some((x) => x)
    ? t.arrowFunctionExpression([t.identifier(s)], t.blockStatement([t.expressionStatement(t.assignmentExpression("=", t.arrayPattern(trimHoles(targets)), t.identifier(s)))]))
    : t.arrowFunctionExpression([], t.blockStatement([]));
  // (nothing in them to convert)
  return [mark(get, Anno.OPAQUE), mark(set, Anno.OPAQUE), t.arrayExpression(names.map((n) => t.stringLiteral(n)))];
}

function trimHoles(targets: (t.Identifier | null)[]): (t.Identifier | null)[] {
  let end = targets.length;
  while (end > 0 && targets[end - 1] === null) end--;
  return targets.slice(0, end);
}
