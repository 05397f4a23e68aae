/**
 * What the tracer tells the recorders (gradient tapes) about structural nodes. A registry op
 * reaches the tapes through applyOp, and each tape looks up the op's VJP on its declaration. A
 * cond, while or call node is different: to be differentiated as a program it must be emitted
 * augmented for its gradient (a loop that keeps what its backward reads on stacks, a branch or
 * callee that returns a record of it). So while tapes record, the tracer does not emit it
 * plainly: it hands the node it would emit to the gradient rule on its op's declaration
 * (StructuralOpDef.gradient, ops/structural.ts), which emits it, records its tape entry and
 * returns the node's outputs.
 *
 * The rules are graph AD's (src/grad), installed at wiring time (the package entry, api/);
 * staging knows what a node is made of, never how it is differentiated.
 */
import type { Tensor } from "../core/tensor.js";
import { GradientError } from "../core/errors.js";
import type { StructuralOpDef } from "../ops/registry.js";
import { callOp, condOp, whileOp } from "../ops/structural.js";
import type { Graph, ValueType } from "../graph/ir.js";
import type { TraceContext } from "./trace-context.js";
import type { ConcreteFunction, FunctionBundle } from "./concrete-function.js";

/** A cond over traced branches, about to be emitted in `ctx`. */
export interface CondNode {
  readonly ctx: TraceContext;
  readonly pred: Tensor;
  /** The values both branches read (their inputs, in order). */
  readonly operands: Tensor[];
  readonly thenG: Graph;
  readonly elseG: Graph;
  /** The cond's output types. */
  readonly types: ValueType[];
}

/** A while loop over a traced condition and body, about to be emitted in `ctx`. */
export interface WhileNode {
  readonly ctx: TraceContext;
  /** The loop variables' initial values. */
  readonly init: Tensor[];
  /** The values the condition and body read besides the loop variables (their inputs after them). */
  readonly invariants: Tensor[];
  /** The loop variables' types (unknown dims where shapeInvariants allow them to change). */
  readonly types: ValueType[];
  readonly condG: Graph;
  readonly bodyG: Graph;
  /**
   * Emits a while node of this loop's attributes over new loop variables (`types`, starting at
   * `init`), tracing `condFn` and `bodyFn` as its regions; returns its outputs.
   */
  emit(types: ValueType[], init: Tensor[], condFn: (...xs: Tensor[]) => Tensor, bodyFn: (...xs: Tensor[]) => Tensor[]): Tensor[];
}

/**
 * A call node about to be emitted in `ctx`. `calleeComplete` is false for a recursive call met
 * while its callee is still being traced.
 */
export interface TracedCall {
  readonly ctx: TraceContext;
  readonly callee: FunctionBundle;
  readonly args: Tensor[];
  readonly outTypes: ValueType[];
  readonly calleeComplete: boolean;
}

/** A staged function called from eager code: it runs now, and is one tape entry. */
export interface EagerCall {
  readonly ctx: null;
  readonly fn: ConcreteFunction;
  readonly args: Tensor[];
}

export type CallNode = TracedCall | EagerCall;

/** A structural op's gradient rule, as the tracer calls it (the type of its slot, per op). */
export type GradientRule<N> = (node: N) => Tensor[];

/** `op`'s gradient rule, installed at wiring time. */
function ruleOf<N>(op: StructuralOpDef): GradientRule<N> {
  const rule = op.gradient as GradientRule<N> | undefined;
  if (rule === undefined) {
    throw new GradientError(
      `a tape records a staged ${op.name}, but no gradient rule for ${op.name} is installed: import Stagecraft through its package entry (src/api/index.ts), which installs graph AD`,
      op.name,
    );
  }
  return rule;
}

/** While tapes record: the cond, emitted and recorded by its op's gradient rule. */
export function recordCond(node: CondNode): Tensor[] {
  return ruleOf<CondNode>(condOp)(node);
}

/** While tapes record: the loop, emitted and recorded by its op's gradient rule. */
export function recordWhile(node: WhileNode): Tensor[] {
  return ruleOf<WhileNode>(whileOp)(node);
}

/** While tapes record: the call, emitted (or, from eager code, run) and recorded by its op's gradient rule. */
export function recordCall(node: CallNode): Tensor[] {
  return ruleOf<CallNode>(callOp)(node);
}
