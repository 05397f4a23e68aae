/**
 * The return pass: a `return` that would leave a closure (it sits in a converted `if` or loop)
 * becomes a flag and a value, so that branches and loop bodies have a single exit and the
 * function one return:
 *
 *   if (c) return x; rest    ->  let $ret = false, $retval;
 *   (after branches.ts:          if (c) { $retval = x; $ret = true } else { rest' }
 *    if (c) { return x } else { rest })     ...
 *                                return ag.retval($retval);
 *
 * `$retval = ag.ret(v)` marks a returned undefined (staged control flow cannot carry one), and
 * `ag.retval($retval, $ret, loc)` (when control can also reach the end of the function) raises
 * an error when a staged condition decides between returning and reaching the end. If some
 * returns are lowered, all are (a native return would not see a return pending in a finally
 * block). Loops whose body may return get `!$ret` in their test (the break/continue pass's loop
 * tests take it beside their own flags).
 */
import * as t from "../build.js";
import { bodyList, notAll, withLoc } from "../ast.js";
import { Anno, getAnno, hasAnno, setAnno } from "../anno.js";
import { isThrowOnly } from "../analyses/exits.js";
import { and, FlagLowering, type Flag, type LoopStatement, type Lowered, type LoweringContext } from "./flags.js";

/** Expressions whose value is never undefined (a lowered `return` of one needs no ag.ret). */
function neverUndefined(e: t.Expression): boolean {
  if (e.type === "UnaryExpression") return e.operator !== "void";
  return (
    (t.isLiteral(e) && e.type !== "TemplateLiteral") ||
    e.type === "TemplateLiteral" ||
    e.type === "ArrayExpression" ||
    e.type === "ObjectExpression" ||
    e.type === "BinaryExpression" ||
    e.type === "NewExpression" ||
    t.isFunction(e) ||
    t.isClass(e)
  );
}

class ReturnLowering extends FlagLowering {
  ret: Flag | null = null;
  retval = "";
  /** Lower every return (not only those below a closure boundary). */
  lowerAllReturns = false;

  private agCall(name: string, args: t.Expression[]): t.CallExpression {
    return t.callExpression(t.memberExpression(t.identifier(this.ctx.agName), t.identifier(name)), args);
  }

  private retFlag(): Flag {
    if (!this.ret) {
      this.ret = { name: this.names.fresh("$ret"), kind: "ret", target: null };
      this.retval = this.names.fresh("$retval");
    }
    return this.ret;
  }

  protected lowerJump(s: t.BreakStatement | t.ContinueStatement | t.ReturnStatement): Lowered | null {
    if (s.type !== "ReturnStatement") return null;
    if (this.depth === 0 && !this.lowerAllReturns) return null;
    const f = this.retFlag();
    const value = s.argument ?? t.identifier("undefined");
    const stored = neverUndefined(value) ? value : this.agCall("ret", [value]);
    return {
      out: [
        withLoc(t.expressionStatement(t.assignmentExpression("=", t.identifier(this.retval), stored)), s),
        withLoc(t.expressionStatement(t.assignmentExpression("=", t.identifier(f.name), t.booleanLiteral(true))), s),
        ...this.leaveFinallies(-1, s, f),
      ],
      sets: new Set([f]),
    };
  }

  /** Loops are the break/continue pass's: `while`, `for...of` (converted) and `for...in` (native). */
  protected lowerLoop(s: LoopStatement, labels: string[]): Lowered {
    if (s.type === "ForInStatement") {
      const target = { kind: "loop" as const, converted: false, depth: this.depth, labels };
      const body = this.withTarget(target, () => this.lowerList(bodyList(s.body)));
      const loop = withLoc(t.forInStatement(s.left, s.right, withLoc(t.blockStatement(body.out), s.body)), s);
      return { out: [this.labeled(target, loop)], sets: body.sets };
    }
    if (s.type === "ForOfStatement" && s.await) return { out: [s], sets: new Set() };
    if (s.type !== "WhileStatement" && s.type !== "ForOfStatement") throw new Error(`internal: a ${s.type} after the break/continue pass`);
    const first = this.firstIterationFlags;
    this.firstIterationFlags = [];
    const target = { kind: "loop" as const, converted: true, depth: this.depth + 1, labels };
    const body = this.withTarget(target, () => this.inBranch(() => this.lowerList(bodyList(s.body))));
    const block = withLoc(t.blockStatement(body.out), s.body);
    const sets = new Set([...first, ...body.sets]);
    const exits = [...sets].map((f) => f.name);
    if (s.type === "ForOfStatement") {
      const loop = withLoc(t.forOfStatement(s.left, s.right, block), s);
      setAnno(loop, Anno.FOR_OF_EXIT, [...(getAnno(s, Anno.FOR_OF_EXIT) ?? []), ...exits]);
      return { out: [loop], sets };
    }
    const before = getAnno(s, Anno.LOOP_EXIT) ?? { flags: [], test: s.test };
    const flags = [...before.flags, ...exits];
    const loop = withLoc(t.whileStatement(before.test ? and(notAll(flags), before.test) : notAll(flags)!, block), s);
    setAnno(loop, Anno.LOOP_EXIT, { flags, test: before.test });
    return { out: [loop], sets };
  }

  /** Lowers the function body. */
  run(body: t.BlockStatement, endReachable: boolean, functionLoc: t.StringLiteral): void {
    // If some returns are lowered and some not, all are: every return then goes through
    // $retval (a native return would not see a return in a finally block, say).
    const where = returnDepths(body.body);
    this.lowerAllReturns = where.top && where.below;
    const r = this.lowerList(body.body);
    if (!this.ret) {
      body.body = r.out;
      return;
    }
    // (ag.retval reads the flag when the end is reachable: staged constructs carry it)
    const args: t.Expression[] = [t.identifier(this.retval)];
    if (endReachable) args.push(t.identifier(this.ret.name), functionLoc);
    body.body = [
      t.variableDeclaration("let", [t.variableDeclarator(t.identifier(this.ret.name), t.booleanLiteral(false)), t.variableDeclarator(t.identifier(this.retval))]),
      ...r.out,
      t.returnStatement(this.agCall("retval", args)),
    ];
  }
}

/**
 * Where the returns of a body are: at the top (not in a converted `if` or loop: they would stay
 * native) and below (in one: they are lowered), the way the lowering counts depth.
 */
function returnDepths(body: readonly t.Statement[]): { top: boolean; below: boolean } {
  const where = { top: false, below: false };
  const visit = (s: t.Statement, below: boolean): void => {
    switch (s.type) {
      case "ReturnStatement":
        if (below) where.below = true;
        else where.top = true;
        return;
      case "BlockStatement":
        for (const x of s.body) visit(x, below);
        return;
      case "IfStatement":
        if (isThrowOnly(s) || hasAnno(s, Anno.NATIVE_JUMP)) return;
        visit(s.consequent, true);
        if (s.alternate) visit(s.alternate, true);
        return;
      case "LabeledStatement":
        visit(s.body, below);
        return;
      case "WhileStatement":
        visit(s.body, true);
        return;
      case "ForOfStatement":
        if (!s.await) visit(s.body, true);
        return;
      case "ForInStatement":
        visit(s.body, below);
        return;
      case "SwitchStatement":
        for (const c of s.cases) for (const x of c.consequent) visit(x, below);
        return;
      case "TryStatement":
        for (const x of s.block.body) visit(x, below);
        if (s.handler) for (const x of s.handler.body.body) visit(x, below);
        if (s.finalizer) for (const x of s.finalizer.body) visit(x, below);
        return;
      default:
        return;
    }
  };
  for (const s of body) visit(s, false);
  return where;
}

/**
 * Lowers the returns of a function body in place (after the break/continue pass).
 * `endReachable`: whether control can reach the end of the body as written (analyses/exits.ts);
 * `functionLoc`: the function's `loc` string (for ag.retval's error).
 */
export function lowerReturns(body: t.BlockStatement, ctx: LoweringContext, endReachable: boolean, functionLoc: t.StringLiteral): void {
  new ReturnLowering(ctx, false).run(body, endReachable, functionLoc);
}
