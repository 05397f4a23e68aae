/**
 * Batched weight gradients through recursion. In the backward of a recursive function (a
 * TreeLSTM), every call returns the gradient of each weight it reads and its caller adds
 * them: a weight-sized sum per call. Where a weight's gradient in one call is a sum of
 *
 *   - products A^T D (the gradient of x W with respect to W),
 *   - column sums of D (a broadcast bias),
 *   - the same weight's gradient returned by the recursive calls (through conds too),
 *
 * the backward instead threads stacks through the recursion: each call pushes its rows A and D
 * and passes the stacks on to the calls it makes; the caller of the outermost call computes
 * the weight gradient once, [A_1; ...; A_n]^T [D_1; ...; D_n], from the final stacks. This is
 * the loop rule's batching (loop-weight-gradients.ts) carried through calls.
 *
 * The rewrite is applied to the backward function of a self-recursive callee (call-gradient.ts)
 * when every value on the way from those terms to the gradient output is used once (so
 * nothing else reads the sums that disappear) and the function calls no other function whose
 * backward is rewritten.
 */
import type { Variable } from "../core/variable.js";
import type { Tensor } from "../core/tensor.js";
import { matmul } from "../ops/linalg.js";
import { sum } from "../ops/reduce.js";
import { reshape } from "../ops/shape.js";
import type { Graph, Node, Value, ValueType } from "../graph/ir.js";
import { makeNode } from "../graph/passes/util.js";
import { calleeOf } from "../graph/declarations.js";
import { callOp, condOp } from "../ops/structural.js";

/** A weight whose gradient a backward function returns as stacks of rows. */
export interface DeferredWeight {
  variable: Variable;
  /** "outer": stacks of A and D rows (gradient A^T D); "rows": a stack of D rows (column sums). */
  kind: "outer" | "rows";
  /** The row type of each stack. */
  rowTypes: ValueType[];
  /** The gradient's type. */
  type: ValueType;
}

type Term =
  | { kind: "outer"; at: Node; a: Value; d: Value }
  | { kind: "rows"; at: Node; d: Value }
  | { kind: "selfCall"; at: Node }
  | { kind: "branches"; at: Node; output: number; branches: [Term[], Term[]] };

const stackType = (row: ValueType): ValueType => ({ dtype: row.dtype, shape: [-1, ...row.shape] });
const known = (v: Value) => v.type.shape.every((d) => d > 0);

function useCounts(g: Graph): Map<Value, number> {
  const uses = new Map<Value, number>();
  const use = (v: Value) => uses.set(v, (uses.get(v) ?? 0) + 1);
  for (const node of g.nodes) node.inputs.forEach(use);
  g.outputs.forEach(use);
  return uses;
}

/**
 * The terms whose sum is `v` in `g`, or null when `v` is not such a sum. `selfOutput` is the
 * index of this weight's gradient among the outputs of `self` (the function's own backward).
 */
function termsOf(g: Graph, v: Value, self: string, selfOutput: number, uses: Map<Value, number>): Term[] | null {
  if ((uses.get(v) ?? 0) !== 1) return null;
  const p = v.producer;
  if (!p) return null;
  switch (p.op) {
    case "fill":
      return p.attrs.value === 0 ? [] : null;
    case "add": {
      const [x, y] = p.inputs as [Value, Value];
      if (x === y || !sameType(x.type, v.type) || !sameType(y.type, v.type)) return null;
      const a = termsOf(g, x, self, selfOutput, uses);
      const b = a && termsOf(g, y, self, selfOutput, uses);
      return a && b ? [...a, ...b] : null;
    }
    case "matmul": {
      const [a, d] = p.inputs as [Value, Value];
      if (p.attrs.transposeA !== true || p.attrs.transposeB === true) return null;
      if (a.type.shape.length !== 2 || d.type.shape.length !== 2 || !known(a) || !known(d)) return null;
      return [{ kind: "outer", at: p, a, d }];
    }
    case "squeeze":
    case "reshape":
    case "sum": {
      const s = p.op === "sum" ? p : p.inputs[0]!.producer;
      if (p.op !== "sum" && (uses.get(p.inputs[0]!) ?? 0) !== 1) return null;
      const d = s?.inputs[0];
      const axes = s?.attrs.axes as number[] | undefined;
      if (s?.op !== "sum" || !d || d.type.shape.length !== 2 || !known(d) || axes?.length !== 1 || axes[0] !== 0) return null;
      return [{ kind: "rows", at: s, d }];
    }
    case callOp.name:
      return calleeOf(p) === self && v.index === selfOutput ? [{ kind: "selfCall", at: p }] : null;
    case condOp.name: {
      const [thenG, elseG] = p.regions as [Graph, Graph];
      const t = termsOf(thenG, thenG.outputs[v.index]!, self, selfOutput, useCounts(thenG));
      const e = t && termsOf(elseG, elseG.outputs[v.index]!, self, selfOutput, useCounts(elseG));
      return t && e ? [{ kind: "branches", at: p, output: v.index, branches: [t, e] }] : null;
    }
    default:
      return null;
  }
}

function sameType(a: ValueType, b: ValueType): boolean {
  return a.dtype === b.dtype && a.shape.length === b.shape.length && a.shape.every((d, i) => d === b.shape[i]);
}

/** The kind and row types all local terms agree on (recursive calls agree by construction). */
function planOf(variable: Variable, type: ValueType, terms: Term[]): DeferredWeight | null {
  let plan: DeferredWeight | null = null;
  const visit = (ts: Term[]): boolean =>
    ts.every((t) => {
      if (t.kind === "selfCall") return true;
      if (t.kind === "branches") return visit(t.branches[0]) && visit(t.branches[1]);
      const rowTypes = t.kind === "outer" ? [t.a.type, t.d.type] : [t.d.type];
      if (t.kind === "outer" && !sameType(t.at.outputs[0]!.type, type)) return false;
      if (!plan) plan = { variable, kind: t.kind, rowTypes, type };
      return plan.kind === t.kind && plan.rowTypes.every((r, i) => sameType(r, rowTypes[i]!));
    });
  return visit(terms) ? plan : null;
}

/**
 * Rewrites `g`, the body of the backward function `self` whose outputs `weightOutputs[k]` are
 * the gradients of `variables[k]`: the weights whose gradients can be deferred leave the
 * outputs, and their stacks become extra inputs (in) and outputs (out), threaded through the
 * recursive calls. Returns the deferred weights (in order), or [] when nothing changes.
 */
export function deferRecursiveWeightGradients(g: Graph, self: string, variables: Variable[], weightOutputs: number[]): DeferredWeight[] {
  if (selfCalls(g, self).size === 0) return [];
  if (anyCall(g, (name) => name !== self && deferredOf.has(name))) return [];
  const uses = useCounts(g);
  const plans: { plan: DeferredWeight; terms: Term[]; output: number }[] = [];
  weightOutputs.forEach((output, k) => {
    const v = g.outputs[output]!;
    const terms = termsOf(g, v, self, output, uses);
    const plan = terms && planOf(variables[k]!, v.type, terms);
    if (plan && terms) plans.push({ plan, terms, output });
  });
  // Every recursive call takes the stacks of every deferred weight, so each weight's sum must
  // run through every recursive call.
  const calls = selfCalls(g, self);
  const covered = plans.filter((p) => {
    const found = new Set<Node>();
    collectCalls(p.terms, found);
    return found.size === calls.size;
  });
  if (covered.length === 0) return [];
  plans.splice(0, plans.length, ...covered);
  const deferred = plans.map((p) => p.plan);
  // Recursive calls now take and return the stacks: the plan is registered first.
  deferredOf.set(self, { deferred, outputs: plans.map((p) => p.output) });
  const stacksIn = deferred.flatMap((d, k) => d.rowTypes.map((t, j) => g.addInput(stackType(t), `stack_${k}_${j}`)));
  const stacksOut = thread(g, plans.map((p) => p.terms), deferred.map((d) => d.rowTypes.length), stacksIn, self);
  const removed = new Set(plans.map((p) => p.output));
  const keep = g.outputs.map((_, i) => !removed.has(i));
  g.setOutputs(
    [...g.outputs.filter((_, i) => keep[i]), ...stacksOut],
    [...g.outputNames.filter((_, i) => keep[i]), ...stacksOut.map((_, i) => `stack_out_${i}`)],
  );
  return deferred;
}

/** The deferral of each rewritten backward function, by name: its weights and the outputs they left. */
const deferredOf = new Map<string, { deferred: DeferredWeight[]; outputs: number[] }>();

/**
 * Threads the stacks (flattened: per weight, its stacks in order) through `g`'s terms in node
 * order; returns the final stacks. `termsByWeight[k]` are weight k's terms in `g`.
 */
function thread(g: Graph, termsByWeight: Term[][], counts: number[], stacks: Value[], self: string): Value[] {
  const offsets: number[] = [];
  let total = 0;
  for (const n of counts) {
    offsets.push(total);
    total += n;
  }
  const current = stacks.slice();
  const byNode = new Map<Node, { weight: number; term: Term }[]>();
  termsByWeight.forEach((terms, k) =>
    terms.forEach((term) => {
      const list = byNode.get(term.at) ?? [];
      list.push({ weight: k, term });
      byNode.set(term.at, list);
    }),
  );
  const nodes: Node[] = [];
  for (const node of g.nodes) {
    const here = byNode.get(node);
    if (!here) {
      nodes.push(node);
      continue;
    }
    const first = here[0]!.term;
    if (first.kind === "outer" || first.kind === "rows") {
      nodes.push(node);
      for (const { weight, term } of here) {
        const rows = term.kind === "outer" ? [term.a, term.d] : term.kind === "rows" ? [term.d] : [];
        rows.forEach((row, j) => {
          const at = offsets[weight]! + j;
          const push = makeNode("stackPush", [current[at]!, row], {}, [stackType(row.type)], [], node.loc);
          nodes.push(push);
          current[at] = push.outputs[0]!;
        });
      }
    } else if (first.kind === "selfCall") {
      // The recursive call takes every deferred weight's stacks and returns them.
      const info = deferredOf.get(self)!;
      const keep = node.outputs.map((_, i) => !info.outputs.includes(i));
      const call = makeNode(callOp.name, [...node.inputs, ...current], node.attrs, [...node.outputs.filter((_, i) => keep[i]).map((o) => o.type), ...current.map((s) => s.type)], [], node.loc);
      let k = 0;
      node.outputs.forEach((o, i) => {
        if (keep[i]) replaceValue(g, o, call.outputs[k++]!);
      });
      current.forEach((_, i) => (current[i] = call.outputs[k + i]!));
      nodes.push(call);
    } else {
      // A cond: both branches take the stacks and return them (a branch without terms passes them on).
      const [thenG, elseG] = node.regions as [Graph, Graph];
      const removedOutputs = new Set(here.map((h) => (h.term as { output: number }).output));
      const branchTerms = (b: 0 | 1) => termsByWeight.map((_, k) => here.filter((h) => h.weight === k).flatMap((h) => (h.term as Extract<Term, { kind: "branches" }>).branches[b]));
      const rewriteBranch = (r: Graph, b: 0 | 1): void => {
        const ins = current.map((s, i) => r.addInput(s.type, `stack_${i}`));
        const outs = thread(r, branchTerms(b), counts, ins, self);
        const keep = r.outputs.map((_, i) => !removedOutputs.has(i));
        r.setOutputs([...r.outputs.filter((_, i) => keep[i]), ...outs], [...r.outputNames.filter((_, i) => keep[i]), ...outs.map((_, i) => `stack_out_${i}`)]);
      };
      rewriteBranch(thenG, 0);
      rewriteBranch(elseG, 1);
      const keep = node.outputs.map((_, i) => !removedOutputs.has(i));
      const cond = makeNode(condOp.name, [...node.inputs, ...current], node.attrs, [...node.outputs.filter((_, i) => keep[i]).map((o) => o.type), ...current.map((s) => s.type)], [thenG, elseG], node.loc);
      let k = 0;
      node.outputs.forEach((o, i) => {
        if (keep[i]) replaceValue(g, o, cond.outputs[k++]!);
      });
      current.forEach((_, i) => (current[i] = cond.outputs[k + i]!));
      nodes.push(cond);
    }
  }
  g.nodes = nodes;
  return current;
}

function anyCall(g: Graph, test: (callee: string) => boolean): boolean {
  return g.nodes.some((n) => { const callee = calleeOf(n); return (callee !== null && test(callee)) || n.regions.some((r) => anyCall(r, test)); });
}

/** The call nodes of function `self` in `g` and its regions. */
export function selfCalls(g: Graph, self: string, found = new Set<Node>()): Set<Node> {
  for (const n of g.nodes) {
    if (calleeOf(n) === self) found.add(n);
    for (const r of n.regions) selfCalls(r, self, found);
  }
  return found;
}

function collectCalls(terms: Term[], found: Set<Node>): void {
  for (const t of terms) {
    if (t.kind === "selfCall") found.add(t.at);
    if (t.kind === "branches") t.branches.forEach((b) => collectCalls(b, found));
  }
}

function replaceValue(g: Graph, from: Value, to: Value): void {
  for (const n of g.nodes) n.inputs = n.inputs.map((v) => (v === from ? to : v));
  g.outputs = g.outputs.map((v) => (v === from ? to : v));
}

/** The weight gradient from its final stacks. */
export function gradientFromStacks(d: DeferredWeight, stacks: Tensor[]): Tensor {
  if (d.kind === "outer") {
    const [a, dd] = d.rowTypes as [ValueType, ValueType];
    return matmul(reshape(stacks[0]!, [-1, a.shape[1]!]), reshape(stacks[1]!, [-1, dd.shape[1]!]), { transposeA: true });
  }
  const row = d.rowTypes[0]!;
  return reshape(sum(reshape(stacks[0]!, [-1, row.shape[1]!]), 0), d.type.shape.slice());
}
