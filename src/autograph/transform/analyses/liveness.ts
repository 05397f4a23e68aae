/**
 * Liveness: which variables may be read after a point before being overwritten. Computed
 * backwards over the (lowered, structured) statements of one function, with a fixed point
 * for loops. Conservative where it must be: variables used by nested functions, and variables
 * declared outside the function, are treated as live everywhere by the caller; everything
 * live at a `catch`/`finally` is live throughout its `try` block.
 *
 * Results: `liveOut` for each `if` (live after it), `liveInBranches` (live at the start of
 * either branch) and `liveHead` for each loop (live at the loop head: read by the test, by a
 * later iteration, or after the loop).
 */
import * as t from "../build.js";
import { patternIdentifiers } from "../ast.js";
import { readsOf } from "./activity.js";
import type { ScopeInfo, VarKey } from "./scope.js";

type Live = Set<VarKey>;

interface Target {
  labels: string[];
  kind: "loop" | "switch" | "block";
  breakOut: Live;
  head: Live;
}

function union(...sets: Live[]): Live {
  const out = new Set<VarKey>();
  for (const s of sets) for (const k of s) out.add(k);
  return out;
}

function equal(a: Live, b: Live): boolean {
  if (a.size !== b.size) return false;
  for (const k of a) if (!b.has(k)) return false;
  return true;
}

export interface LivenessResult {
  liveOut: Map<t.Node, Live>;
  /** For each `if`: live at the start of either branch (a staged if restores them between branches). */
  liveInBranches: Map<t.Node, Live>;
  liveHead: Map<t.Node, Live>;
}

/**
 * `extraHeadReads(loop)`: names a loop's head reads besides its test (a for...of's exit flags,
 * tested by the runtime before each iteration).
 */
export function computeLiveness(body: t.Statement[], scopes: ScopeInfo, extraHeadReads: (loop: t.Node) => readonly string[] = () => []): LivenessResult {
  const liveOut = new Map<t.Node, Live>();
  const liveInBranches = new Map<t.Node, Live>();
  const liveHead = new Map<t.Node, Live>();
  const targets: Target[] = [];
  let extra: Live = new Set();

  const uses = (n: t.Node | null | undefined): Live => readsOf(n, scopes);

  /** Variables certainly assigned by an expression statement (statement-level `x = e`, sequences). */
  const definiteDefs = (e: t.Expression): VarKey[] => {
    if (e.type === "AssignmentExpression" && e.operator === "=") {
      const ids = e.left.type === "MemberExpression" ? [] : patternIdentifiers(e.left);
      return [...ids.map((i) => scopes.keyOf(i)), ...(e.right.type === "AssignmentExpression" ? definiteDefs(e.right) : [])];
    }
    if (e.type === "SequenceExpression") return e.expressions.flatMap(definiteDefs);
    return [];
  };

  const findTarget = (label: string | null, kind: "break" | "continue"): Target | undefined => {
    for (let i = targets.length - 1; i >= 0; i--) {
      const tg = targets[i]!;
      if (label !== null ? tg.labels.includes(label) : tg.kind === "loop" || (kind === "break" && tg.kind === "switch")) return tg;
    }
    return undefined;
  };

  const list = (stmts: readonly t.Statement[], out: Live): Live => {
    let live = out;
    for (let i = stmts.length - 1; i >= 0; i--) live = stmt(stmts[i]!, live);
    return live;
  };

  const loopFixpoint = (node: t.Node, labels: string[], out: Live, iterate: (head: Live, target: Target) => Live): Live => {
    let head = out;
    for (let k = 0; k < 50; k++) {
      const target: Target = { labels, kind: "loop", breakOut: out, head };
      targets.push(target);
      const next = union(out, iterate(head, target));
      targets.pop();
      if (equal(next, head)) break;
      head = next;
    }
    liveHead.set(node, union(head, extra));
    return head;
  };

  const stmt = (s: t.Statement, out: Live, labels: string[] = []): Live => {
    const r = stmtInner(s, out, labels);
    return extra.size > 0 ? union(r, extra) : r;
  };

  const stmtInner = (s: t.Statement, out: Live, labels: string[]): Live => {
    switch (s.type) {
      case "BlockStatement":
        return list(s.body, out);
      case "ExpressionStatement": {
        const defs = definiteDefs(s.expression);
        const live = new Set(out);
        for (const d of defs) live.delete(d);
        return union(live, uses(s.expression));
      }
      case "VariableDeclaration": {
        let live = new Set(out);
        for (let i = s.declarations.length - 1; i >= 0; i--) {
          const d = s.declarations[i]!;
          for (const id of patternIdentifiers(d.id)) live.delete(scopes.keyOf(id));
          live = union(live, uses(d.init), d.id.type === "Identifier" ? new Set() : uses(d.id));
        }
        return live;
      }
      case "IfStatement": {
        liveOut.set(s, union(out, extra));
        const c = stmt(s.consequent, out);
        const a = s.alternate ? stmt(s.alternate, out) : out;
        liveInBranches.set(s, union(c, a));
        return union(uses(s.test), c, a);
      }
      case "WhileStatement": {
        const headReads = new Set<VarKey>();
        for (const n of extraHeadReads(s)) headReads.add(scopes.keyAt(s, n));
        return loopFixpoint(s, labels, out, (head) => union(uses(s.test), headReads, stmt(s.body, head)));
      }
      case "DoWhileStatement": {
        // (lowered away before analysis; handled for completeness)
        const head = loopFixpoint(s, labels, out, (h) => union(uses(s.test), stmt(s.body, h)));
        return stmt(s.body, head);
      }
      case "ForStatement": {
        const head = loopFixpoint(s, labels, out, (h) => union(uses(s.test), stmt(s.body, union(h, uses(s.update)))));
        return s.init ? (s.init.type === "VariableDeclaration" ? stmt(s.init, head) : union(head, uses(s.init))) : head;
      }
      case "ForOfStatement":
      case "ForInStatement": {
        const left = s.left;
        const leftIds = left.type === "VariableDeclaration" ? left.declarations.flatMap((d) => patternIdentifiers(d.id)) : patternIdentifiers(left);
        const headReads = new Set<VarKey>();
        for (const n of extraHeadReads(s)) headReads.add(scopes.keyAt(s, n));
        const head = loopFixpoint(s, labels, out, (h) => {
          const b = new Set(stmt(s.body, h));
          for (const id of leftIds) b.delete(scopes.keyOf(id));
          return union(b, headReads, left.type === "VariableDeclaration" ? new Set() : uses(left));
        });
        return union(uses(s.right), head);
      }
      case "LabeledStatement": {
        const all = [...labels, s.label.name];
        if (t.isLoop(s.body) || s.body.type === "SwitchStatement" || s.body.type === "LabeledStatement") return stmt(s.body, out, all);
        targets.push({ labels: all, kind: "block", breakOut: out, head: out });
        const r = stmt(s.body, out);
        targets.pop();
        return r;
      }
      case "SwitchStatement": {
        targets.push({ labels, kind: "switch", breakOut: out, head: out });
        let next = out;
        const ins: Live[] = [];
        for (let i = s.cases.length - 1; i >= 0; i--) {
          next = list(s.cases[i]!.consequent, next);
          ins.push(next);
        }
        targets.pop();
        const tests = s.cases.map((c) => uses(c.test));
        const hasDefault = s.cases.some((c) => !c.test);
        return union(uses(s.discriminant), ...tests, ...ins, hasDefault ? new Set() : out);
      }
      case "BreakStatement": {
        const tg = findTarget(s.label?.name ?? null, "break");
        return tg ? tg.breakOut : out;
      }
      case "ContinueStatement": {
        const tg = findTarget(s.label?.name ?? null, "continue");
        return tg ? tg.head : out;
      }
      case "ReturnStatement":
        return uses(s.argument);
      case "ThrowStatement":
        return uses(s.argument);
      case "TryStatement": {
        const fin = s.finalizer ? list(s.finalizer.body, out) : out;
        const handler = s.handler ? list(s.handler.body.body, fin) : new Set<VarKey>();
        const saved = extra;
        extra = union(saved, handler, s.finalizer ? fin : new Set());
        const block = list(s.block.body, fin);
        extra = saved;
        return union(block, handler, s.finalizer ? fin : new Set());
      }
      case "ClassDeclaration":
        return union(out, uses(s));
      case "FunctionDeclaration":
        return out;
      default:
        return union(out, uses(s));
    }
  };

  list(body, new Set());
  return { liveOut, liveInBranches, liveHead };
}
