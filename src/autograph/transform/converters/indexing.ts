/**
 * Index reads and writes.
 *   x[i]          ->  ag.getItem(x', i')
 *   x[i] = v      ->  x = ag.setItem(x, i', v')
 *                     (a tensor: functional update that rebinds x; an array or object: native
 *                     assignment, setItem returns x itself)
 *   x[i][j] = v   ->  x = ag.setItem(x, $k = i', ag.setItem(ag.getItem(x, $k), j', v'))
 *   o.a[i] = v    ->  ($c = o.a, $r = ag.setItem($c, i', v'), $r !== $c && (o.a = $r))
 *   x[i] += v     ->  x = ag.setItem(x, $k = i', ag.add(ag.getItem(x, $k), v'))
 *   x[i]++        ->  $k = i', $c = ag.getItem(x, $k), x = ag.setItem(x, $k, typeof $c === "object" ? ag.increment($c, 1) : ++$c)
 * Each subexpression is evaluated once, in JavaScript's order. Where the container is not a
 * rebindable local variable, the new value is written back only when it differs (so arrays and
 * objects see exactly the native assignment).
 */
import * as t from "../build.js";
import { withLoc } from "../ast.js";
import { native } from "../anno.js";
import type { ConvertContext } from "./context.js";
import { ConverterPass } from "./pass.js";
import { COMPOUND_OPS, isStable, nativeMember, updateValue } from "./common.js";

export function convertIndexRead(ctx: ConvertContext, m: t.MemberExpression): t.Expression {
  if (m.object.type === "Super") return nativeMember(ctx, m);
  ctx.feature("index");
  return ctx.agCall("getItem", [ctx.expr(m.object), ctx.expr(m.property as t.Expression)], m);
}

interface Place {
  /** Expressions evaluated first (into temporaries), in order. */
  prep: t.Expression[];
  /** The current value (after prep; no side effects). */
  get(): t.Expression;
  /** Assigns a new value. */
  set(v: t.Expression): t.Expression;
  /** Whether set() may run unconditionally (a rebindable local, or a value-only place). */
  unconditional: boolean;
}

const assign = (name: string, v: t.Expression): t.AssignmentExpression => t.assignmentExpression("=", t.identifier(name), v);

function isLiteralKey(e: t.Node): boolean {
  return e.type === "NumericLiteral" || e.type === "StringLiteral" || e.type === "BooleanLiteral" || e.type === "NullLiteral";
}

function placeOf(ctx: ConvertContext, e: t.Expression): Place {
  if (e.type === "Identifier") {
    const name = e.name;
    // `arguments` (and `eval`) cannot be assigned in strict code: the object is written in place.
    if ((name === "arguments" || name === "eval") && !ctx.isShadowed(name, e)) {
      return { prep: [], get: () => t.identifier(name), set: (v) => v, unconditional: true };
    }
    return {
      prep: [],
      get: () => t.identifier(name),
      set: (v) => t.assignmentExpression("=", t.identifier(name), v),
      unconditional: ctx.isAssignableLocal(e),
    };
  }
  if (e.type === "MemberExpression" && !e.computed) {
    const prep: t.Expression[] = [];
    let obj: () => t.Expression;
    if (isStable(e.object) && e.object.type !== "Super") {
      const o = e.object;
      obj = () => t.cloneNode(o);
    } else if (e.object.type === "Super") {
      obj = () => t.super() as unknown as t.Expression;
    } else {
      const p = ctx.temp("$p");
      prep.push(assign(p, ctx.expr(e.object)));
      obj = () => t.identifier(p);
    }
    const prop = e.property;
    return {
      prep,
      get: () => t.memberExpression(obj(), t.cloneNode(prop)),
      set: (v) => t.assignmentExpression("=", t.memberExpression(obj(), t.cloneNode(prop)), v),
      unconditional: false,
    };
  }
  if (e.type === "MemberExpression" && e.computed && e.object.type !== "Super") {
    const parent = placeOf(ctx, e.object);
    const prep = [...parent.prep];
    const cur = current(ctx, parent, prep);
    const key = keyOf(ctx, e.property as t.Expression, prep);
    return {
      prep,
      get: () => ctx.agCall("getItem", [cur(), key()]),
      set: (v) => writeIndexed(ctx, parent, cur, key(), v),
      unconditional: parent.unconditional,
    };
  }
  const p = ctx.temp("$p");
  return { prep: [assign(p, ctx.expr(e))], get: () => t.identifier(p), set: (v) => v, unconditional: true };
}

/** The container's current value, read once (before the key is evaluated). */
function current(ctx: ConvertContext, parent: Place, prep: t.Expression[]): () => t.Expression {
  if (parent.unconditional && parent.prep.length === 0) return parent.get;
  const c = ctx.temp("$c");
  prep.push(assign(c, parent.get()));
  return () => t.identifier(c);
}

function keyOf(ctx: ConvertContext, k: t.Expression, prep: t.Expression[]): () => t.Expression {
  if (isLiteralKey(k)) return () => t.cloneNode(k);
  const name = ctx.temp("$k");
  prep.push(assign(name, ctx.expr(k)));
  return () => t.identifier(name);
}

/** `ag.setItem(x, k, v)` (with `false` for sloppy-mode code, where a failed write is ignored). */
function setItemCall(ctx: ConvertContext, args: t.Expression[], at?: t.Node): t.CallExpression {
  return ctx.agCall("setItem", ctx.strict ? args : [...args, t.booleanLiteral(false)], at);
}

function writeIndexed(ctx: ConvertContext, parent: Place, cur: () => t.Expression, key: t.Expression, value: t.Expression): t.Expression {
  const updated = setItemCall(ctx, [cur(), key, value]);
  if (parent.unconditional) return parent.set(updated);
  const r = ctx.temp("$r");
  return t.sequenceExpression([assign(r, updated), native(t.logicalExpression("&&", native(t.binaryExpression("!==", t.identifier(r), cur())), parent.set(t.identifier(r))))]);
}

/** `T[k] = v` and `T[k] op= v` (arithmetic compound operators). */
export function convertIndexAssignment(ctx: ConvertContext, e: t.AssignmentExpression, valueUsed: boolean): t.Expression {
  const left = e.left as t.MemberExpression;
  const op = e.operator === "=" ? null : COMPOUND_OPS[e.operator];
  if (left.object.type === "Super" || (e.operator !== "=" && !op) || !ctx.tempsAllowed) {
    return withLoc(t.assignmentExpression(e.operator, nativeMember(ctx, left), ctx.expr(e.right)), e);
  }
  ctx.feature("index");
  if (op) ctx.feature("operator");
  const obj = left.object;
  // The contract's simple form: x = ag.setItem(x, i', v').
  if (!op && !valueUsed && obj.type === "Identifier" && ctx.isAssignableLocal(obj) && obj.name !== "arguments") {
    const call = setItemCall(ctx, [t.identifier(obj.name), ctx.expr(left.property as t.Expression), ctx.expr(e.right)], e);
    return withLoc(t.assignmentExpression("=", t.identifier(obj.name), call), e);
  }
  const parent = placeOf(ctx, obj);
  const prep = [...parent.prep];
  const cur = current(ctx, parent, prep);
  let key: t.Expression;
  let value: t.Expression;
  if (op) {
    const k = keyOf(ctx, left.property as t.Expression, prep);
    key = k();
    value = ctx.agCall(op, [ctx.agCall("getItem", [cur(), k()]), ctx.expr(e.right)], e);
  } else {
    key = ctx.expr(left.property as t.Expression);
    value = ctx.expr(e.right);
  }
  let result: string | null = null;
  if (valueUsed) {
    result = ctx.temp("$v");
    value = assign(result, value);
  }
  const parts = [...prep, writeIndexed(ctx, parent, cur, key, value)];
  if (result) parts.push(t.identifier(result));
  const out = parts.length === 1 ? parts[0]! : t.sequenceExpression(parts);
  return withLoc(out, e);
}

/** `x[i]++`, `--x[i]` (see convertUpdate in assignments.ts). */
export function convertIndexUpdate(ctx: ConvertContext, e: t.UpdateExpression, valueUsed: boolean): t.Expression {
  const left = e.argument as t.MemberExpression;
  if (left.object.type === "Super" || !ctx.tempsAllowed) return withLoc(t.updateExpression(e.operator, nativeMember(ctx, left), e.prefix), e);
  ctx.feature("index");
  ctx.feature("operator");
  const parent = placeOf(ctx, left.object);
  const prep = [...parent.prep];
  const cur = current(ctx, parent, prep);
  const k = keyOf(ctx, left.property as t.Expression, prep);
  const c = ctx.temp("$c");
  prep.push(assign(c, ctx.agCall("getItem", [cur(), k()])));
  const u = updateValue(ctx, e, c, valueUsed && !e.prefix);
  prep.push(...u.before);
  let value = u.next;
  let result = u.result;
  if (valueUsed && !result) {
    const v = ctx.temp("$v");
    value = assign(v, value);
    result = t.identifier(v);
  }
  const parts = [...prep, writeIndexed(ctx, parent, cur, k(), value)];
  if (result) parts.push(result);
  return withLoc(t.sequenceExpression(parts), e);
}

export class Indexing extends ConverterPass {
  static readonly passName = "indexing";
  static readonly rewrites = ["computedMember"];
  protected override expression(e: t.Expression, valueUsed: boolean): t.Expression | undefined {
    switch (e.type) {
      case "MemberExpression":
        return e.computed && !this.isAg(e) ? convertIndexRead(this, e) : undefined;
      case "AssignmentExpression":
        return e.left.type === "MemberExpression" && e.left.computed ? convertIndexAssignment(this, e, valueUsed) : undefined;
      case "UpdateExpression":
        return e.argument.type === "MemberExpression" && e.argument.computed ? convertIndexUpdate(this, e, valueUsed) : undefined;
      default:
        return undefined;
    }
  }
}
