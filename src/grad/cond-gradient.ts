/**
 * The gradient rule for cond. Each branch is split once (backward-trace.ts) into a forward
 * that also returns a record (ops/residuals.ts) of the values its VJP reads, and that VJP.
 * The emitted cond returns the outputs and the taken branch's record (records of different
 * layouts have one type); the backward is a cond on the same predicate whose branches unpack
 * their own record and run their VJP: the backward takes the branch the forward took, and
 * recomputes nothing, calls made in the branch included.
 */
import type { Tensor } from "../core/tensor.js";
import { currentHandler, withoutRecorders } from "../core/context.js";
import { isFloat } from "../core/dtype.js";
import { GradientError } from "../core/errors.js";
import { zerosLikeTensor } from "../ops/fill.js";
import { packResiduals, unpackResiduals } from "../ops/residuals.js";
import { condOp } from "../ops/structural.js";
import { GradientTape } from "../ad/tape.js";
import type { Graph } from "../graph/ir.js";
import { seedVariableReads, TraceContext } from "../staging/trace-context.js";
import { replay } from "../staging/replay.js";
import { cond, probeTracer } from "../staging/control-flow.js";
import type { CondNode } from "../staging/recording.js";
import { differentiating, recordsAllowed, traceBackward, type BackwardTrace } from "./backward-trace.js";
import { recordEntry, regionVjp } from "./tape-entry.js";
import { withCalleeVariables } from "./callee-variables.js";

interface BranchSplit {
  /** (operands..., outside...) -> (outputs..., record) */
  forward: Graph;
  outside: Tensor[];
  backward: BackwardTrace;
}

function splitBranch(p: CondNode, g: Graph, name: string): BranchSplit {
  const library = p.ctx.library;
  let fwd: TraceContext | null = null;
  let backward: BackwardTrace | null = null;
  const probe = probeTracer(p.ctx)(
    p.operands.map((t) => ({ dtype: t.dtype, shape: t.shape })),
    (...xs) => {
      const ctx = (fwd = currentHandler() as TraceContext);
      // Variables read in the branch (by the calls it makes) resolve to the operands that
      // stand for their values, so that the branch's tape sees those reads.
      seedVariableReads(ctx, p.ctx, p.operands, xs);
      const tape = new GradientTape({ persistent: true });
      const outs = tape.record(() => {
        tape.watch(xs.filter((x) => isFloat(x.dtype)));
        return replay(g, library, xs);
      });
      const bwd = (backward = traceBackward(ctx, `${name}_vjp`, tape, outs, xs, xs.map((x) => isFloat(x.dtype)), p.types));
      return [...outs, packResiduals(bwd.kept.map((v) => ctx.symbolic(v)))];
    },
  );
  if (!fwd || !backward) throw new GradientError("the gradient rule's probe of a branch did not run", condOp.name);
  return { forward: probe.graph, outside: (fwd as TraceContext).captures.map((c) => c.tensor), backward };
}

/**
 * The gradient rule for cond: emits the cond augmented with its taken branch's record, records
 * its gradient, returns its outputs.
 */
export function condGradient(node: CondNode): Tensor[] {
  // Variables that calls in the branches read are operands too, so that their gradients leave.
  const p = { ...node, operands: withCalleeVariables(node.ctx, [node.thenG, node.elseG], node.operands) };
  return differentiating(p.ctx.functionName, () => augmentedCond(p));
}

function augmentedCond(p: CondNode): Tensor[] {
  const library = p.ctx.library;
  if (!recordsAllowed()) return recomputingCond(p);
  const m = p.types.length;
  const branches = [splitBranch(p, p.thenG, "then"), splitBranch(p, p.elseG, "else")] as const;
  const forward = (b: BranchSplit) => () => replay(b.forward, library, [...p.operands, ...b.outside]);
  const res = withoutRecorders(null, () => cond(p.pred, forward(branches[0]), forward(branches[1])));
  const outs = res.slice(0, m);
  const record = res[m]!;
  // The record is an output of the entry too, so an outer tape sees how it depends on the operands.
  recordEntry(condOp.name, p.ctx.functionName, [p.pred, ...p.operands], res, (cts) => {
    const filled = outs.map((o, i) => cts[i] ?? zerosLikeTensor(o));
    const recordCt = cts[m];
    const n = p.operands.length;
    const backward = (b: BranchSplit) => () => {
      if (recordCt) {
        // Higher order through the record: differentiate the branch's forward (recomputed).
        const wrt = [...p.operands.map(() => true), ...b.outside.map(() => false)];
        return regionVjp(b.forward, library, [...p.operands, ...b.outside], [...filled, recordCt], [], wrt).slice(0, n);
      }
      const kept = unpackResiduals(record, b.backward.kept.map((v) => v.type));
      return replay(b.backward.graph, library, [...filled, ...b.backward.inputs.map((x) => ("kept" in x ? kept[x.kept]! : x.outside))]);
    };
    return [null, ...cond(p.pred, backward(branches[0]), backward(branches[1]))];
  });
  return outs;
}

/** Where no record may be kept: the plain cond, whose backward branches recompute their forward. */
function recomputingCond(p: CondNode): Tensor[] {
  const library = p.ctx.library;
  const outs = p.ctx.addStructural(condOp.name, [p.pred, ...p.operands], {}, p.types, [p.thenG, p.elseG]);
  recordEntry(condOp.name, p.ctx.functionName, [p.pred, ...p.operands], outs, (cts) => {
    const filled = outs.map((o, i) => cts[i] ?? zerosLikeTensor(o));
    const branch = (g: Graph) => () => {
      const h = currentHandler();
      if (h instanceof TraceContext) seedVariableReads(h, p.ctx, p.operands, p.operands);
      return regionVjp(g, library, p.operands, filled);
    };
    return [null, ...cond(p.pred, branch(p.thenG), branch(p.elseG))];
  });
  return outs;
}
