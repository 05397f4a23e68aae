/**
 * Lowering jumps to flags: the machinery the break/continue pass and the return pass share.
 *
 * A construct that may be staged becomes a closure (a branch of `ag.ifStmt`, the body of
 * `ag.whileStmt`), and no jump can leave a closure. A jump that would is lowered to a flag:
 * `$brk = true` instead of `break`. The statements after a statement that may set a flag are
 * then
 * - guarded: `if (!$brk) { ...rest }` (the flag's target lies beyond a closure boundary), or
 * - left by a native jump: `if ($ret) break L;` when the innermost target is a native construct
 *   (switch, for...in, labeled block) at this level: the flag stays pending after it, or
 * - reissued: `if ($brk) break L;` at the first level from which the flag's own (native) target
 *   is reachable without crossing a closure; the flag ends there.
 * A loop whose body may set a flag gets it in its test (`while (!$brk && t)`); a `try` whose
 * finally block is left by a lowered jump holds the exception in flight (a native jump out of a
 * finally block discards it) and clears the jumps its try block left pending.
 *
 * Each pass lowers its own jumps (`lowerJump`) and handles loops its own way (`lowerLoop`); jumps
 * of other kinds pass through. The flags of an earlier pass are known by their annotations:
 * guards (Anno.GUARD) and loop tests (Anno.LOOP_EXIT, Anno.FOR_OF_EXIT) take a later pass's flags
 * too, and a finally block left by an earlier pass's jump (Anno.FINALLY_LEAVE) clears a later
 * pass's pending flags there.
 */
import * as t from "../build.js";
import { bodyList, letDecl, notAll, withLoc } from "../ast.js";
import type { NameGen } from "../names.js";
import { isThrowOnly } from "../analyses/exits.js";
import { Anno, getAnno, hasAnno, mark, setAnno } from "../anno.js";
import { hoistRestDeclarations } from "./moved-declarations.js";

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

/** What a lowering pass needs from the pipeline. */
export interface LoweringContext {
  readonly names: NameGen;
  /** The operators' identifier. */
  readonly agName: string;
}

export type LoopStatement = t.WhileStatement | t.DoWhileStatement | t.ForStatement | t.ForOfStatement | t.ForInStatement;

interface FinallyContext {
  /** Set (`$fab = true`) when the finally block completes by a lowered jump. */
  abrupt: string | null;
  /** Whether `abrupt` came from an earlier pass (the try statement already holds the exception). */
  inherited: boolean;
  /** Targets enclosing the try statement (jumps to them leave the finally block). */
  targetCount: number;
  /**
   * This pass's flags the try block and its handler may have set (a pending return, break or
   * continue): a jump out of the finally block replaces that completion, so it clears them.
   */
  pending: Flag[];
}

/** The statement an earlier pass lowered `s` from (where code generated for `s` is positioned). */
function origin(s: t.Statement): t.Statement {
  return getAnno(s, Anno.LOWERED_FROM) ?? s;
}

export function assignBool(name: string, value: boolean): t.ExpressionStatement {
  return t.expressionStatement(t.assignmentExpression("=", t.identifier(name), t.booleanLiteral(value)));
}

/** `a && b` (`b` alone when `a` is null). */
export function and(a: t.Expression | null, b: t.Expression): t.Expression {
  return a ? t.logicalExpression("&&", a, b) : b;
}

export abstract class FlagLowering {
  depth = 0;
  targets: JumpTarget[] = [];
  private finallies: FinallyContext[] = [];

  constructor(
    readonly ctx: LoweringContext,
    /** Annotate what each statement was lowered into with it (Anno.LOWERED_FROM), for a later pass. */
    private readonly recordOrigins: boolean,
  ) {}

  get names(): NameGen {
    return this.ctx.names;
  }

  /** Lowers a jump of this pass's kind; null for the others (they stay as they are). */
  protected abstract lowerJump(s: t.BreakStatement | t.ContinueStatement | t.ReturnStatement): Lowered | null;

  /** Lowers a loop statement (labels: the labels on it). */
  protected abstract lowerLoop(s: LoopStatement, labels: string[]): Lowered;

  // ---- flags and targets --------------------------------------------------------------

  nativeLabel(target: JumpTarget): string {
    target.nativeLabel ??= target.labels[0] ?? this.names.fresh("$L");
    return target.nativeLabel;
  }

  /** `let $brk = false;` for a flag that was used. */
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

  findTarget(label: string | null, kind: "break" | "continue"): JumpTarget | null {
    for (let i = this.targets.length - 1; i >= 0; i--) {
      const tg = this.targets[i]!;
      if (label !== null) {
        if (tg.labels.includes(label)) return tg;
      } else if (tg.kind === "loop" || (kind === "break" && tg.kind === "switch")) return tg;
    }
    return null;
  }

  // ---- statement lists ----------------------------------------------------------------

  /** `if (F) break L;` / `if (F) continue L;`: a native jump re-issued from its flag. */
  private nativeJump(f: Flag, kind: "break" | "continue", target: JumpTarget, at: t.Node): t.Statement {
    const label = t.identifier(this.nativeLabel(target));
    const jump = kind === "break" ? t.breakStatement(label) : t.continueStatement(label);
    return mark(withLoc(t.ifStatement(t.identifier(f.name), jump), at), Anno.NATIVE_JUMP);
  }

  /** How a pending flag is handled at the current level. */
  private resolve(f: Flag): "reissue" | "exit" | "guard" {
    if (f.target && !f.target.converted && f.target.depth === this.depth && this.targets.includes(f.target)) return "reissue";
    const inner = this.targets[this.targets.length - 1];
    if (inner && !inner.converted && inner.depth === this.depth) return "exit";
    return "guard";
  }

  /**
   * `if (!F && ...) { rest }`. When `rest` is a single guard of an earlier pass, its test takes
   * these flags too (one guard, not two nested ones).
   */
  private guard(flags: Flag[], rest: t.Statement[]): t.Statement {
    const names = flags.map((f) => f.name);
    const only = rest.length === 1 ? rest[0]! : null;
    const earlier = only ? getAnno(only, Anno.GUARD) : undefined;
    if (only && earlier && only.type === "IfStatement") {
      const all = [...earlier, ...names.filter((n) => !earlier.includes(n))];
      only.test = notAll(all)!;
      setAnno(only, Anno.GUARD, all);
      return only;
    }
    // (positioned at the first statement of the rest, declarations moved up by an earlier pass aside)
    const at = origin(rest.find((r) => !hasAnno(r, Anno.MOVED_DECLARATION)) ?? rest[0]!);
    const g = withLoc(t.ifStatement(notAll(names)!, withLoc(t.blockStatement(rest), at)), at);
    setAnno(g, Anno.GUARD, names);
    return g;
  }

  /**
   * Flags set by the first iteration of the loop being lowered (run as a block before it): the
   * loop's test takes them too (see lowerList).
   */
  protected firstIterationFlags: Flag[] = [];

  /**
   * Lowers `work[i]`, and the loop after it when it is a loop's first iteration: the two are one
   * statement (the flags the first iteration sets end the loop: they go in its test, and are
   * handled after it). Returns how many statements were lowered.
   */
  private lowerUnit(work: readonly t.Statement[], i: number): { r: Lowered; n: number } {
    const s = work[i]!;
    if (!hasAnno(s, Anno.FIRST_ITERATION) || i + 1 >= work.length) return { r: this.lowerStmt(s), n: 1 };
    // (The first iteration is lowered inside the loop, as a target, though not in a closure.)
    const first = this.withTarget({ kind: "loop", converted: true, depth: this.depth + 1, labels: [] }, () => this.lowerStmt(s));
    this.firstIterationFlags = [...first.sets];
    const loop = this.lowerStmt(work[i + 1]!);
    this.firstIterationFlags = [];
    return { r: { out: [...first.out, ...loop.out], sets: new Set([...first.sets, ...loop.sets]) }, n: 2 };
  }

  lowerList(stmts: readonly t.Statement[]): Lowered {
    const work = [...stmts];
    const out: t.Statement[] = [];
    const pending = new Set<Flag>();
    for (let i = 0; i < work.length; i++) {
      const s = work[i]!;
      const { r, n } = this.lowerUnit(work, i);
      i += n - 1;
      if (this.recordOrigins) for (const o of r.out) if (o !== s && !hasAnno(o, Anno.LOWERED_FROM)) setAnno(o, Anno.LOWERED_FROM, origin(s));
      out.push(...r.out);
      if (r.sets.size === 0) continue;
      const guard: Flag[] = [];
      for (const f of r.sets) {
        const mode = this.resolve(f);
        if (mode === "reissue") {
          out.push(this.nativeJump(f, f.kind === "cont" ? "continue" : "break", f.target!, origin(s)));
        } else if (mode === "exit") {
          const inner = this.targets[this.targets.length - 1]!;
          out.push(this.nativeJump(f, "break", inner, origin(s)));
          pending.add(f);
        } else {
          guard.push(f);
          pending.add(f);
        }
      }
      if (guard.length > 0 && i + 1 < work.length) {
        const rest = work.splice(i + 1);
        hoistRestDeclarations(rest, work.slice(0, i + 1), out, this.ctx.agName);
        // A loop body's plumbing after it (the update, copies of loop-head bindings) is not
        // part of the rest: the copies run anyway, the update gets its own guard.
        let end = rest.length;
        while (end > 0 && hasAnno(rest[end - 1]!, Anno.LOOP_PLUMBING)) end--;
        if (end > 0) work.push(this.guard(guard, rest.slice(0, end)));
        for (const p of rest.slice(end)) work.push(getAnno(p, Anno.LOOP_PLUMBING) === "update" ? this.plumbing(this.guard(guard, [p]), "update") : p);
      }
    }
    return { out, sets: pending };
  }

  private plumbing(s: t.Statement, kind: "update" | "copy"): t.Statement {
    setAnno(s, Anno.LOOP_PLUMBING, kind);
    return s;
  }

  lowerBody(s: t.Statement): Lowered {
    return this.lowerList(bodyList(s));
  }

  // ---- statements ---------------------------------------------------------------------

  lowerStmt(s: t.Statement, labels: string[] = []): Lowered {
    const none = new Set<Flag>();
    switch (s.type) {
      case "BlockStatement": {
        if (hasAnno(s, Anno.LOOP_BLOCK)) {
          // A loop and its declarations: one statement (its flags are handled after it).
          const out: t.Statement[] = [];
          const sets = new Set<Flag>();
          for (let i = 0; i < s.body.length; ) {
            const { r, n } = this.lowerUnit(s.body, i);
            out.push(...r.out);
            r.sets.forEach((f) => sets.add(f));
            i += n;
          }
          return { out: [mark(withLoc(t.blockStatement(out, s.directives), s), Anno.LOOP_BLOCK)], sets };
        }
        const r = this.lowerList(s.body);
        return { out: [withLoc(t.blockStatement(r.out, s.directives), s)], sets: r.sets };
      }
      case "IfStatement": {
        if (isThrowOnly(s) || hasAnno(s, Anno.NATIVE_JUMP)) return { out: [s], sets: none };
        const c = this.inBranch(() => this.lowerBody(s.consequent));
        const a = s.alternate ? this.inBranch(() => this.lowerBody(s.alternate!)) : null;
        const n = withLoc(t.ifStatement(s.test, withLoc(t.blockStatement(c.out), s.consequent), a ? withLoc(t.blockStatement(a.out), s.alternate) : null), s);
        const guardFlags = getAnno(s, Anno.GUARD);
        if (guardFlags) setAnno(n, Anno.GUARD, guardFlags);
        const plumbing = getAnno(s, Anno.LOOP_PLUMBING);
        if (plumbing) setAnno(n, Anno.LOOP_PLUMBING, plumbing);
        return { out: [n], sets: new Set([...c.sets, ...(a?.sets ?? [])]) };
      }
      case "BreakStatement":
      case "ContinueStatement":
      case "ReturnStatement":
        return this.lowerJump(s) ?? { out: [s], sets: none };
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
      case "DoWhileStatement":
      case "ForStatement":
      case "ForOfStatement":
      case "ForInStatement":
        return this.lowerLoop(s, labels);
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
      case "TryStatement":
        return this.lowerTry(s);
      case "ExpressionStatement": {
        // An earlier pass's jump leaves a finally block here: it replaces this pass's pending jumps too.
        const left = getAnno(s, Anno.FINALLY_LEAVE);
        const fc = left ? this.finallies.find((c) => c.abrupt === left) : undefined;
        if (fc && fc.pending.length > 0) return { out: [s, ...fc.pending.map((p) => withLoc(assignBool(p.name, false), s))], sets: none };
        return { out: [s], sets: none };
      }
      default:
        if (labels.length > 0) return { out: [labels.reduceRight<t.Statement>((acc, l) => t.labeledStatement(t.identifier(l), acc), s)], sets: none };
        return { out: [s], sets: none };
    }
  }

  private lowerTry(s: t.TryStatement): Lowered {
    const b = this.lowerList(s.block.body);
    const h = s.handler ? this.lowerList(s.handler.body.body) : null;
    const inherited = getAnno(s, Anno.TRY_ABRUPT) ?? null;
    const fctx: FinallyContext = { abrupt: inherited, inherited: inherited !== null, targetCount: this.targets.length, pending: [...b.sets, ...(h?.sets ?? [])] };
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
    if (!f || !fctx.abrupt || fctx.inherited) {
      const n = withLoc(t.tryStatement(block, handler, f ? withLoc(t.blockStatement(f.out), s.finalizer) : null), s);
      if (inherited) setAnno(n, Anno.TRY_ABRUPT, inherited);
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
    setAnno(n, Anno.TRY_ABRUPT, fctx.abrupt);
    const decl = t.variableDeclaration("let", [
      t.variableDeclarator(t.identifier(fctx.abrupt), t.booleanLiteral(false)),
      t.variableDeclarator(t.identifier(exc), t.booleanLiteral(false)),
      t.variableDeclarator(t.identifier(val)),
    ]);
    return { out: [decl, n], sets };
  }

  /**
   * `$fab = true` for each finally block a lowered jump leaves (its target is outside the try
   * statement; `targetIndex` -1 for return), and the pending jumps of that try statement
   * cleared (`continue` in a finally block cancels a `return` of its try block, as natively).
   */
  leaveFinallies(targetIndex: number, at: t.Node, own: Flag): t.Statement[] {
    const out: t.Statement[] = [];
    for (const fc of this.finallies) {
      if (targetIndex < fc.targetCount) {
        fc.abrupt ??= this.names.fresh("$fab");
        out.push(withLoc(assignBool(fc.abrupt, true), at));
        for (const p of fc.pending) if (p !== own) out.push(withLoc(assignBool(p.name, false), at));
        setAnno(out[out.length - 1]!, Anno.FINALLY_LEAVE, fc.abrupt);
      }
    }
    return out;
  }
}
