/**
 * Loops for the break/continue pass: every converted loop becomes a `while` (or a `for...of`)
 * whose body has a single exit, its jumps lowered to flags:
 *   for (init; t; u) B   ->  { init; let $brk = false;
 *                              while (!$brk && t) { let $cont = false; B'; if (!$brk) u } }
 *   do B while (t)       ->  { B' } while (!$brk && t) { B' }      (B once, then as while)
 * with per-iteration copies of the loop-head `let` bindings when closures capture them
 * (see lowerFor):
 *   while (t) { let $i = i; { let i = $i; B'; $i = i } i = $i; u }
 * `for...in` stays a native loop (its jumps are re-issued natively).
 * The loop tests, the update's guard and a for...of's exit flags are annotated, so that the
 * return pass adds its flag to them.
 */
import * as t from "../build.js";
import { bodyList, namesUsedInNestedFunctions, notAll, patternIdentifiers, withLoc } from "../ast.js";
import type { NameGen } from "../names.js";
import { Anno, copyTree, mark, setAnno } from "../anno.js";
import { and, type Flag, type JumpTarget, type Lowered } from "./flags.js";

/** What the loops need from the break/continue pass. */
export interface LoopLowering {
  readonly names: NameGen;
  brkFlag(target: JumpTarget): Flag;
  depth: number;
  lowerList(stmts: readonly t.Statement[]): Lowered;
  withTarget<T>(target: JumpTarget, fn: () => T): T;
  inBranch<T>(fn: () => T): T;
  flagDecl(f: Flag | undefined): t.Statement[];
  labeled(target: JumpTarget, stmt: t.Statement): t.Statement;
}

/** A converted loop's `while`, its test annotated: exit flags, then the loop's own test. */
function whileLoop(flags: string[], test: t.Expression | null, body: t.BlockStatement, at: t.Node): t.WhileStatement {
  const loop = withLoc(t.whileStatement(test ? and(notAll(flags), test) : notAll(flags)!, body), at);
  setAnno(loop, Anno.LOOP_EXIT, { flags, test });
  return loop;
}

/** Flags that end the loop: everything its body may set except its own `continue` flag. */
function exitFlags(sets: Set<Flag>, target: JumpTarget): string[] {
  return [...sets].filter((f) => f !== target.cont).map((f) => f.name);
}

function remaining(sets: Set<Flag>, target: JumpTarget): Set<Flag> {
  return new Set([...sets].filter((f) => f !== target.brk && f !== target.cont));
}

function loopTarget(L: LoopLowering, labels: string[], converted: boolean): JumpTarget {
  return { kind: "loop", converted, depth: converted ? L.depth + 1 : L.depth, labels };
}

function lowerConvertedBody(L: LoopLowering, target: JumpTarget, body: t.Statement): Lowered {
  return L.withTarget(target, () => L.inBranch(() => L.lowerList(bodyList(body))));
}

export function lowerWhile(L: LoopLowering, s: t.WhileStatement, labels: string[]): Lowered {
  const target = loopTarget(L, labels, true);
  const body = lowerConvertedBody(L, target, s.body);
  const loop = whileLoop(exitFlags(body.sets, target), s.test, withLoc(t.blockStatement([...L.flagDecl(target.cont), ...body.out]), s.body), s);
  return { out: [...L.flagDecl(target.brk), loop], sets: remaining(body.sets, target) };
}

export function lowerDoWhile(L: LoopLowering, s: t.DoWhileStatement, labels: string[]): Lowered {
  const target = loopTarget(L, labels, true);
  // The first iteration runs as a plain block (same closure depth as the loop statement).
  const first = L.withTarget(target, () => L.lowerList(bodyList(copyTree(s.body, false))));
  const rest = lowerConvertedBody(L, target, s.body);
  const sets = new Set([...first.sets, ...rest.sets]);
  const once = mark(withLoc(t.blockStatement([...L.flagDecl(target.cont), ...first.out]), s.body), Anno.FIRST_ITERATION);
  const loop = whileLoop(exitFlags(sets, target), s.test, withLoc(t.blockStatement([...L.flagDecl(target.cont), ...rest.out]), s.body), s);
  return { out: [...L.flagDecl(target.brk), once, loop], sets: remaining(sets, target) };
}

function plumbing<S extends t.Statement>(s: S, kind: "update" | "copy"): S {
  setAnno(s, Anno.LOOP_PLUMBING, kind);
  return s;
}

/** Per-iteration copies: `let $i = i; { let i = $i; ...stmts; $i = i; } i = $i;`. */
function perIteration(L: LoopLowering, names: string[], stmts: t.Statement[]): t.Statement[] {
  const carriers = names.map((n) => L.names.fresh(`$${n}`));
  const copy = (to: string, from: string) => plumbing(t.expressionStatement(t.assignmentExpression("=", t.identifier(to), t.identifier(from))), "copy");
  return [
    plumbing(t.variableDeclaration("let", names.map((n, k) => t.variableDeclarator(t.identifier(carriers[k]!), t.identifier(n)))), "copy"),
    t.blockStatement([
      plumbing(t.variableDeclaration("let", names.map((n, k) => t.variableDeclarator(t.identifier(n), t.identifier(carriers[k]!)))), "copy"),
      ...stmts,
      ...names.map((n, k) => copy(carriers[k]!, n)),
    ]),
    ...names.map((n, k) => copy(n, carriers[k]!)),
  ];
}

/**
 * `for (init; test; update) body`. Loop-head `let` bindings follow JavaScript's per-iteration
 * environments where closures can observe them:
 * - captured in the body only: per-iteration copies around the body;
 * - captured in the test or update: each iteration's environment holds [the previous
 *   iteration's update,] the test and the body, so the test moves into the body:
 *     { copy; if (t) B else $brk = true }  while (!$brk) { copy; u; if (t) B else $brk = true }
 * - captured in the initializer: the loop runs on copies of the initialized bindings, so the
 *   initializer's closures keep seeing the first values.
 */
export function lowerFor(L: LoopLowering, s: t.ForStatement, labels: string[]): Lowered {
  const target = loopTarget(L, labels, true);
  const init = s.init;
  const headLets = init && init.type === "VariableDeclaration" && init.kind === "let" ? init.declarations.flatMap((d) => patternIdentifiers(d.id).map((i) => i.name)) : [];
  const captures = (n: t.Node | null | undefined): boolean => {
    if (!n || headLets.length === 0) return false;
    const used = namesUsedInNestedFunctions(n);
    return headLets.some((h) => used.has(h));
  };
  const initCaptured = init?.type === "VariableDeclaration" && init.declarations.some((d) => captures(d.init));
  const headCaptured = captures(s.test) || captures(s.update);
  const bodyCaptured = captures(s.body);

  let loopStmts: t.Statement[];
  let sets: Set<Flag>;
  if (headCaptured) {
    const brk = L.brkFlag(target);
    const iteration = (withUpdate: boolean): t.Statement[] => {
      const test = s.test ? copyTree(s.test, false) : t.booleanLiteral(true);
      const step = t.ifStatement(test, copyTree(s.body, false), t.blockStatement([t.expressionStatement(t.assignmentExpression("=", t.identifier(brk.name), t.booleanLiteral(true)))]));
      withLoc(step, s);
      return [...(withUpdate && s.update ? [withLoc(t.expressionStatement(copyTree(s.update, false)), s.update)] : []), step];
    };
    // The first iteration runs as a plain block (as a do-while's does), then the loop.
    // (Lowered first, then wrapped in the copies: the copies back must run even after a continue.)
    const first = L.withTarget(target, () => L.lowerList(iteration(false)));
    const rest = L.withTarget(target, () => L.inBranch(() => L.lowerList(iteration(true))));
    sets = new Set([...first.sets, ...rest.sets, brk]);
    const exits = exitFlags(sets, target);
    const loop = whileLoop(exits, null, withLoc(t.blockStatement([...L.flagDecl(target.cont), ...perIteration(L, headLets, rest.out)]), s.body), s);
    loopStmts = [...L.flagDecl(target.brk), mark(t.blockStatement([...L.flagDecl(target.cont), ...perIteration(L, headLets, first.out)]), Anno.FIRST_ITERATION), loop];
  } else {
    const body = lowerConvertedBody(L, target, s.body);
    sets = body.sets;
    const exits = exitFlags(body.sets, target);
    const loopBody: t.Statement[] = [...L.flagDecl(target.cont), ...(bodyCaptured ? perIteration(L, headLets, body.out) : body.out)];
    if (s.update) {
      const u = withLoc(t.expressionStatement(s.update), s.update);
      const guard = notAll(exits);
      if (guard) {
        const g = withLoc(t.ifStatement(guard, t.blockStatement([u])), s.update);
        setAnno(g, Anno.GUARD, exits);
        loopBody.push(plumbing(g, "update"));
      } else loopBody.push(plumbing(u, "update"));
    }
    const loop = whileLoop(exits, s.test ?? t.booleanLiteral(true), withLoc(t.blockStatement(loopBody), s.body), s);
    loopStmts = [...L.flagDecl(target.brk), loop];
  }
  const out: t.Statement[] = [];
  if (init) out.push(init.type === "VariableDeclaration" ? init : withLoc(t.expressionStatement(init), init));
  if (initCaptured) {
    // The initializer's closures keep the first environment: the loop runs on copies.
    const temps = headLets.map((n) => L.names.fresh(`$${n}`));
    out.push(t.variableDeclaration("let", headLets.map((n, k) => t.variableDeclarator(t.identifier(temps[k]!), t.identifier(n)))));
    out.push(mark(t.blockStatement([t.variableDeclaration("let", headLets.map((n, k) => t.variableDeclarator(t.identifier(n), t.identifier(temps[k]!)))), ...loopStmts]), Anno.LOOP_BLOCK));
  } else out.push(...loopStmts);
  return { out: init && init.type === "VariableDeclaration" ? [mark(withLoc(t.blockStatement(out), s), Anno.LOOP_BLOCK)] : out, sets: remaining(sets, target) };
}

export function lowerForOf(L: LoopLowering, s: t.ForOfStatement, labels: string[]): Lowered {
  if (s.await) return { out: [s], sets: new Set() };
  const target = loopTarget(L, labels, true);
  const body = lowerConvertedBody(L, target, s.body);
  const loop = withLoc(t.forOfStatement(s.left, s.right, withLoc(t.blockStatement([...L.flagDecl(target.cont), ...body.out]), s.body)), s);
  setAnno(loop, Anno.FOR_OF_EXIT, exitFlags(body.sets, target));
  return { out: [...L.flagDecl(target.brk), loop], sets: remaining(body.sets, target) };
}

export function lowerForIn(L: LoopLowering, s: t.ForInStatement, labels: string[]): Lowered {
  const target = loopTarget(L, labels, false);
  const body = L.withTarget(target, () => L.lowerList(bodyList(s.body)));
  const loop = withLoc(t.forInStatement(s.left, s.right, withLoc(t.blockStatement([...L.flagDecl(target.cont), ...body.out]), s.body)), s);
  return { out: [...L.flagDecl(target.brk), L.labeled(target, loop)], sets: remaining(body.sets, target) };
}
