/**
 * Lowering of `break`, `continue` and `return` to flag variables and guards, so that every
 * branch and loop body (which become closures) has a single exit:
 *
 *   while (t) { A; if (c) break; B }   ->  let $brk = false;
 *                                          while (!$brk && t) { A; if (c) { $brk = true } else { B } }
 *   if (c) return x; rest              ->  if (c) { $retval = x; $ret = true } else { rest }
 *                                          ... return $retval;
 *
 * A jump is lowered when a closure boundary lies between it and its target: the target is a
 * converted loop (while, do-while, for, for-of), or the jump sits inside a converted `if` (or a
 * guard) below a native target (for-in, switch, labeled block) or below the function body
 * (`return`). Other jumps stay native. A flag whose target is native is turned back into a
 * native jump (`if ($brk) break L;`) at the first level from which the target is reachable
 * without crossing a closure; the statements after one that may set a flag are otherwise
 * guarded (`if (!$brk) { ... }`), or moved into the other branch of an `if` whose branch
 * always jumps. Loop tests become `!$brk && t`.
 */
import * as t from "../build.js";
import { bodyList, childNodes, declaredNames, identifierNames, letDecl, notAll, walk, withLoc } from "../ast.js";
import type { NameGen } from "../names.js";
import { lowerDoWhile, lowerFor, lowerForIn, lowerForOf, lowerWhile, type LoopLowering } from "./loops.js";
import { checkReadsInNestedFunctions } from "./tdz.js";

export interface Flag {
  name: string;
  kind: "brk" | "cont" | "ret";
  target: JumpTarget | null;
}

export interface JumpTarget {
  kind: "loop" | "switch" | "block";
  /** A converted loop: its body is a closure; every jump to it is lowered. */
  converted: boolean;
  /** Closure depth of the target's body. */
  depth: number;
  labels: string[];
  brk?: Flag;
  cont?: Flag;
  /** Label used to re-issue a native jump to this target (an existing one, or generated). */
  nativeLabel?: string;
}

export interface Lowered {
  out: t.Statement[];
  sets: Set<Flag>;
}

export interface LoweringResult {
  /** `if` statements generated to re-issue native jumps (not converted). */
  nativeIfs: WeakSet<t.Node>;
  /** For each for-of loop: the flags that stop it (passed as its extra test). */
  forOfExit: Map<t.Node, string[]>;
  /** Whether returns were lowered (the body ends with `return $retval`). */
  loweredReturns: boolean;
  /**
   * Declaring identifiers of `let`/`const`/`class` bindings moved up (hoistRestDeclarations):
   * the converter starts them as `ag.UNDEFINED` and checks reads (`ag.tdz`), so a read before
   * the original declaration still throws ReferenceError.
   */
  tdzHoisted: WeakSet<t.Identifier>;
  /**
   * When returns were lowered: the return flag, the return value variable (every assignment to
   * it is a lowered `return`), the function's final `return $retval`, and whether the end of
   * the original body is reachable (a path may return undefined by falling off it).
   */
  returns: { flag: string; value: string; final: t.ReturnStatement; endReachable: boolean } | null;
}

function assignBool(name: string, value: boolean): t.ExpressionStatement {
  return t.expressionStatement(t.assignmentExpression("=", t.identifier(name), t.booleanLiteral(value)));
}

function isThrowOnly(s: t.IfStatement): boolean {
  if (s.alternate) return false;
  const c = s.consequent;
  return c.type === "ThrowStatement" || (c.type === "BlockStatement" && c.body.length === 1 && c.body[0]!.type === "ThrowStatement");
}

function containsJump(s: t.Node): boolean {
  let found = false;
  walk(
    s,
    (n) => {
      if (found) return false;
      if (t.isFunction(n) || t.isClass(n)) return false;
      if (n.type === "ReturnStatement" || n.type === "BreakStatement" || n.type === "ContinueStatement") found = true;
      return undefined;
    },
  );
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
 * statement of the body always exits, and none is an endless loop without a `break`.
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

interface FinallyContext {
  /** Set (`$fab = true`) when the finally block completes by a lowered jump. */
  abrupt: string | null;
  /** Targets enclosing the try statement (jumps to them leave the finally block). */
  targetCount: number;
  /**
   * Flags the try block and its handler may have set (a pending return, break or continue):
   * a jump out of the finally block replaces that completion, so it clears them.
   */
  pending: Flag[];
}

export class Lowering implements LoopLowering {
  nativeIfs = new WeakSet<t.Node>();
  readonly forOfExit = new Map<t.Node, string[]>();
  tdzHoisted = new WeakSet<t.Identifier>();
  depth = 0;
  targets: JumpTarget[] = [];
  ret: Flag | null = null;
  retval = "";
  /** Lower every return (not only those below a closure boundary). */
  private lowerAllReturns = false;
  private nativeReturns = 0;
  private finallies: FinallyContext[] = [];

  constructor(
    readonly names: NameGen,
    /** The operators' identifier (for the TDZ checks of moved declarations). */
    private readonly agName = "ag",
  ) {}

  // ---- flags --------------------------------------------------------------------------

  brkFlag(target: JumpTarget): Flag {
    target.brk ??= { name: this.names.fresh("$brk"), kind: "brk", target };
    return target.brk;
  }

  contFlag(target: JumpTarget): Flag {
    target.cont ??= { name: this.names.fresh("$cont"), kind: "cont", target };
    return target.cont;
  }

  retFlag(): Flag {
    if (!this.ret) {
      this.ret = { name: this.names.fresh("$ret"), kind: "ret", target: null };
      this.retval = this.names.fresh("$retval");
    }
    return this.ret;
  }

  nativeLabel(target: JumpTarget): string {
    target.nativeLabel ??= target.labels[0] ?? this.names.fresh("$L");
    return target.nativeLabel;
  }

  /** `let $brk = false;` for a target whose break flag was used. */
  flagDecl(f: Flag | undefined): t.Statement[] {
    return f ? [letDecl(f.name, t.booleanLiteral(false))] : [];
  }

  /** Wraps a native target statement in its labels (and a generated one if needed). */
  labeled(target: JumpTarget, stmt: t.Statement): t.Statement {
    const labels = [...target.labels];
    if (target.nativeLabel && !labels.includes(target.nativeLabel)) labels.push(target.nativeLabel);
    let out = stmt;
    for (let i = labels.length - 1; i >= 0; i--) out = t.labeledStatement(t.identifier(labels[i]!), out);
    return out;
  }

  withTarget<T>(target: JumpTarget, fn: () => T): T {
    this.targets.push(target);
    try {
      return fn();
    } finally {
      this.targets.pop();
    }
  }

  inBranch<T>(fn: () => T): T {
    this.depth++;
    try {
      return fn();
    } finally {
      this.depth--;
    }
  }

  // ---- statement lists ----------------------------------------------------------------

  /** `if (F) break L;` / `if (F) continue L;`: a native jump re-issued from its flag. */
  private nativeJump(f: Flag, kind: "break" | "continue", target: JumpTarget, at: t.Node): t.Statement {
    const label = t.identifier(this.nativeLabel(target));
    const jump = kind === "break" ? t.breakStatement(label) : t.continueStatement(label);
    const s = withLoc(t.ifStatement(t.identifier(f.name), jump), at);
    this.nativeIfs.add(s);
    return s;
  }

  /** How a pending flag is handled at the current level. */
  private resolve(f: Flag): "reissue" | "exit" | "guard" {
    if (f.target && !f.target.converted && f.target.depth === this.depth && this.targets.includes(f.target)) return "reissue";
    const inner = this.targets[this.targets.length - 1];
    if (inner && !inner.converted && inner.depth === this.depth) return "exit";
    return "guard";
  }

  /**
   * Declarations (let/const/class) at the top of `rest` whose names occur before it: they
   * are declared before the guard (`let y;`) and assigned in place, so that the code before
   * still sees them once `rest` moves into a block.
   */
  private hoistRestDeclarations(rest: t.Statement[], before: t.Statement[], out: t.Statement[]): void {
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
      const ids = names.map((n) => t.identifier(n));
      ids.forEach((id) => this.tdzHoisted.add(id));
      checkReadsInNestedFunctions([...before, ...rest.slice(0, k)], new Set(names), this.agName);
      out.push(t.variableDeclaration("let", ids.map((id) => t.variableDeclarator(id))));
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

  lowerList(stmts: readonly t.Statement[]): Lowered {
    const work = [...stmts];
    const out: t.Statement[] = [];
    const pending = new Set<Flag>();
    for (let i = 0; i < work.length; i++) {
      let s = work[i]!;
      // An `if` one of whose branches always jumps: the rest goes into the other branch.
      if (s.type === "IfStatement" && i + 1 < work.length && !isThrowOnly(s) && containsJump(s)) {
        const ce = alwaysExits(s.consequent);
        const ae = s.alternate ? alwaysExits(s.alternate) : false;
        if (ce !== ae) {
          const rest = work.splice(i + 1);
          this.hoistRestDeclarations(rest, work.slice(0, i + 1), out);
          const restLoc = rest[0];
          s = ce
            ? withLoc(t.ifStatement(s.test, s.consequent, withLoc(t.blockStatement([...(s.alternate ? [s.alternate] : []), ...rest]), s.alternate ?? restLoc)), s)
            : withLoc(t.ifStatement(s.test, withLoc(t.blockStatement([s.consequent, ...rest]), s.consequent), s.alternate), s);
          work[i] = s;
        }
      }
      const r = this.lowerStmt(s);
      out.push(...r.out);
      if (r.sets.size === 0) continue;
      const guard: Flag[] = [];
      for (const f of r.sets) {
        const mode = this.resolve(f);
        if (mode === "reissue") {
          out.push(this.nativeJump(f, f.kind === "cont" ? "continue" : "break", f.target!, s));
        } else if (mode === "exit") {
          const inner = this.targets[this.targets.length - 1]!;
          out.push(this.nativeJump(f, "break", inner, s));
          pending.add(f);
        } else {
          guard.push(f);
          pending.add(f);
        }
      }
      if (guard.length > 0 && i + 1 < work.length) {
        const rest = work.splice(i + 1);
        this.hoistRestDeclarations(rest, work.slice(0, i + 1), out);
        const g = withLoc(t.ifStatement(notAll(guard.map((f) => f.name))!, withLoc(t.blockStatement(rest), rest[0])), rest[0]);
        work.push(g);
      }
    }
    return { out, sets: pending };
  }

  private lowerBody(s: t.Statement): Lowered {
    const r = this.lowerList(bodyList(s));
    return { out: r.out, sets: r.sets };
  }

  // ---- statements ---------------------------------------------------------------------

  private findTarget(label: string | null, kind: "break" | "continue"): JumpTarget | null {
    for (let i = this.targets.length - 1; i >= 0; i--) {
      const tg = this.targets[i]!;
      if (label !== null) {
        if (tg.labels.includes(label)) return tg;
      } else if (tg.kind === "loop" || (kind === "break" && tg.kind === "switch")) return tg;
    }
    return null;
  }

  lowerStmt(s: t.Statement, labels: string[] = []): Lowered {
    const none = new Set<Flag>();
    switch (s.type) {
      case "BlockStatement": {
        const r = this.lowerList(s.body);
        return { out: [withLoc(t.blockStatement(r.out, s.directives), s)], sets: r.sets };
      }
      case "IfStatement": {
        if (isThrowOnly(s)) return { out: [s], sets: none };
        const c = this.inBranch(() => this.lowerBody(s.consequent));
        const a = s.alternate ? this.inBranch(() => this.lowerBody(s.alternate!)) : null;
        const n = withLoc(t.ifStatement(s.test, withLoc(t.blockStatement(c.out), s.consequent), a ? withLoc(t.blockStatement(a.out), s.alternate) : null), s);
        return { out: [n], sets: new Set([...c.sets, ...(a?.sets ?? [])]) };
      }
      case "BreakStatement":
      case "ContinueStatement": {
        const kind = s.type === "BreakStatement" ? "break" : "continue";
        const target = this.findTarget(s.label?.name ?? null, kind);
        if (!target || (!target.converted && this.depth <= target.depth)) return { out: [s], sets: none };
        const f = kind === "break" ? this.brkFlag(target) : this.contFlag(target);
        const out: t.Statement[] = [withLoc(t.expressionStatement(t.assignmentExpression("=", t.identifier(f.name), t.booleanLiteral(true))), s)];
        out.push(...this.leaveFinallies(this.targets.indexOf(target), s, f));
        return { out, sets: new Set([f]) };
      }
      case "ReturnStatement": {
        if (this.depth === 0 && !this.lowerAllReturns) {
          this.nativeReturns++;
          return { out: [s], sets: none };
        }
        const f = this.retFlag();
        const value = s.argument ?? t.identifier("undefined");
        return {
          out: [
            withLoc(t.expressionStatement(t.assignmentExpression("=", t.identifier(this.retval), value)), s),
            withLoc(t.expressionStatement(t.assignmentExpression("=", t.identifier(f.name), t.booleanLiteral(true))), s),
            ...this.leaveFinallies(-1, s, f),
          ],
          sets: new Set([f]),
        };
      }
      case "LabeledStatement": {
        const all = [...labels, s.label.name];
        const body = s.body;
        if (body.type === "LabeledStatement" || t.isLoop(body) || body.type === "SwitchStatement") return this.lowerStmt(body, all);
        const target: JumpTarget = { kind: "block", converted: false, depth: this.depth, labels: all };
        const r = this.withTarget(target, () => this.lowerStmt(body));
        const inner = r.out.length === 1 ? r.out[0]! : t.blockStatement(r.out);
        const sets = new Set([...r.sets].filter((f) => f !== target.brk));
        return { out: [...this.flagDecl(target.brk), this.labeled(target, inner)], sets };
      }
      case "WhileStatement":
        return lowerWhile(this, s, labels);
      case "DoWhileStatement":
        return lowerDoWhile(this, s, labels);
      case "ForStatement":
        return lowerFor(this, s, labels);
      case "ForOfStatement":
        return lowerForOf(this, s, labels);
      case "ForInStatement":
        return lowerForIn(this, s, labels);
      case "SwitchStatement": {
        const target: JumpTarget = { kind: "switch", converted: false, depth: this.depth, labels };
        const sets = new Set<Flag>();
        const cases = this.withTarget(target, () =>
          s.cases.map((c) => {
            const r = this.lowerList(c.consequent);
            r.sets.forEach((f) => sets.add(f));
            return withLoc(t.switchCase(c.test ?? null, r.out), c);
          }),
        );
        if (target.brk) sets.delete(target.brk);
        const sw = withLoc(t.switchStatement(s.discriminant, cases), s);
        return { out: [...this.flagDecl(target.brk), this.labeled(target, sw)], sets };
      }
      case "TryStatement": {
        const b = this.lowerList(s.block.body);
        const h = s.handler ? this.lowerList(s.handler.body.body) : null;
        const fctx: FinallyContext = { abrupt: null, targetCount: this.targets.length, pending: [...b.sets, ...(h?.sets ?? [])] };
        let f: Lowered | null = null;
        if (s.finalizer) {
          this.finallies.push(fctx);
          try {
            f = this.lowerList(s.finalizer.body);
          } finally {
            this.finallies.pop();
          }
        }
        const sets = new Set([...b.sets, ...(h?.sets ?? []), ...(f?.sets ?? [])]);
        const handler = s.handler ? withLoc(t.catchClause(s.handler.param ?? null, withLoc(t.blockStatement(h!.out), s.handler.body)), s.handler) : null;
        const block = withLoc(t.blockStatement(b.out), s.block);
        if (!f || !fctx.abrupt) {
          const n = withLoc(t.tryStatement(block, handler, f ? withLoc(t.blockStatement(f.out), s.finalizer) : null), s);
          return { out: [n], sets };
        }
        // A finally block that ends with a (lowered) jump discards the exception in flight, as
        // a native one does: the exception is held, and rethrown after the block unless it jumped.
        const exc = this.names.fresh("$fexc");
        const val = this.names.fresh("$fval");
        const caught = this.names.fresh("$fe");
        const inner = handler ? t.blockStatement([withLoc(t.tryStatement(block, handler, null), s)]) : block;
        const hold = t.catchClause(t.identifier(caught), t.blockStatement([assignBool(exc, true), t.expressionStatement(t.assignmentExpression("=", t.identifier(val), t.identifier(caught)))]));
        const rethrow = withLoc(t.ifStatement(t.logicalExpression("&&", t.identifier(exc), t.unaryExpression("!", t.identifier(fctx.abrupt))), t.throwStatement(t.identifier(val))), s.finalizer);
        const n = withLoc(t.tryStatement(inner, hold, withLoc(t.blockStatement([...f.out, rethrow]), s.finalizer)), s);
        const decl = t.variableDeclaration("let", [
          t.variableDeclarator(t.identifier(fctx.abrupt), t.booleanLiteral(false)),
          t.variableDeclarator(t.identifier(exc), t.booleanLiteral(false)),
          t.variableDeclarator(t.identifier(val)),
        ]);
        return { out: [decl, n], sets };
      }
      default:
        if (labels.length > 0) return { out: [labels.reduceRight<t.Statement>((acc, l) => t.labeledStatement(t.identifier(l), acc), s)], sets: none };
        return { out: [s], sets: none };
    }
  }

  /**
   * `$fab = true` for each finally block a lowered jump leaves (its target is outside the try
   * statement; `targetIndex` -1 for return), and the pending jumps of that try statement
   * cleared (`continue` in a finally block cancels a `return` of its try block, as natively).
   */
  private leaveFinallies(targetIndex: number, at: t.Node, own: Flag): t.Statement[] {
    const out: t.Statement[] = [];
    for (const fc of this.finallies) {
      if (targetIndex < fc.targetCount) {
        fc.abrupt ??= this.names.fresh("$fab");
        out.push(withLoc(assignBool(fc.abrupt, true), at));
        for (const p of fc.pending) if (p !== own) out.push(withLoc(assignBool(p.name, false), at));
      }
    }
    return out;
  }

  /** Lowers a function body in place; returns what the converters need to know. */
  lowerFunctionBody(body: t.BlockStatement): LoweringResult {
    const original = t.cloneNode(body, true, false);
    const names = this.names.snapshot();
    let r = this.lowerList(body.body);
    if (this.ret && this.nativeReturns > 0) {
      // Some returns were lowered and some not: lower them all, so that every return goes
      // through $retval (a native return would not see a return in a finally block, say).
      this.names.restore(names);
      this.nativeIfs = new WeakSet();
      this.tdzHoisted = new WeakSet();
      this.forOfExit.clear();
      this.targets = [];
      this.finallies = [];
      this.depth = 0;
      this.ret = null;
      this.lowerAllReturns = true;
      r = this.lowerList(original.body);
    }
    let stmts = r.out;
    let returns: LoweringResult["returns"] = null;
    if (this.ret) {
      // (reading the flag when the end is reachable keeps it live: staged constructs carry it)
      const reachable = endReachable(original.body);
      const final = t.returnStatement(reachable ? t.sequenceExpression([t.identifier(this.ret.name), t.identifier(this.retval)]) : t.identifier(this.retval));
      stmts = [
        t.variableDeclaration("let", [t.variableDeclarator(t.identifier(this.ret.name), t.booleanLiteral(false)), t.variableDeclarator(t.identifier(this.retval))]),
        ...stmts,
        final,
      ];
      returns = { flag: this.ret.name, value: this.retval, final, endReachable: reachable };
    }
    body.body = stmts;
    return { nativeIfs: this.nativeIfs, forOfExit: this.forOfExit, loweredReturns: !!this.ret, tdzHoisted: this.tdzHoisted, returns };
  }
}
