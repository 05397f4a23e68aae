/**
 * One vmap level: the handler vmap pushes. An op with an input batched at this level runs its
 * batching rule (ops/batching.ts) under `outer`; other ops pass through to `outer`. Control flow
 * (cond, whileLoop, AutoGraph's if/while) is batched by batched-control-flow.ts.
 */
import { recorders, withHandler, withoutRecorders, type ControlFlowTransform, type OpHandler, type OpRecorder, type OpRef } from "../core/context.js";
import { ValueError } from "../core/errors.js";
import type { Tensor } from "../core/tensor.js";
import type { Variable } from "../core/variable.js";
import { batchRuleOf, type OpDef } from "../ops/registry.js";
import type { BatchDims } from "../ops/batching.js";
import { BatchedTensor, isBatchedAt, type BatchLevel } from "./batched-tensor.js";
import { batchedCond, batchedWhile } from "./batched-control-flow.js";
import { bridgeDown, promoteShared, regionTapes, type BridgeLevel, type RegionFrame } from "./gradient-bridge.js";

export class VmapLevel implements OpHandler, BatchLevel, BridgeLevel {
  /**
   * The cond/while nodes being traced below this level, outermost first: the tapes that recorded
   * outside them. A value they track, used in a region, crosses to the level below by a bridge
   * (gradient-bridge.ts), so the structural node's gradient rule below sees it tracked.
   */
  readonly frames: RegionFrame[] = [];
  everyExample = 0;
  /** The tapes recording when vmap was called (grad of vmap): not inside this level. */
  readonly outerTapes: readonly OpRecorder[] = recorders.slice();
  readonly controlFlow: ControlFlowTransform;

  constructor(
    public outer: OpHandler,
    readonly size: number,
  ) {
    this.controlFlow = {
      cond: (pred, thenFn, elseFn, select) => batchedCond(this, pred, thenFn, elseFn, select),
      whileLoop: (cond, body, vars, max, shapeInvariants) => batchedWhile(this, cond, body, vars, max, shapeInvariants ?? []),
      batches: (t) => isBatchedAt(t, this),
    };
  }

  /** A variable is read where the level below reads it (a graph read while a trace is below: not its value now, baked in). */
  readVariable(v: Variable): Tensor {
    return withHandler(this.outer, () => v.peek());
  }

  /** Assigned below; a value that differs per example has no one value to assign. */
  assignVariable(v: Variable, value: Tensor): void {
    if (value instanceof BatchedTensor && value.level === this) {
      throw new ValueError(`variable ${v.name} cannot be assigned a batched value (one per example) under vmap; return the values from the function, or assign a reduction of them (their mean) outside vmap`, "assign");
    }
    if (this.everyExample > 0) {
      throw new ValueError(
        `variable ${v.name} is assigned in a branch of a cond (or the body of a loop) whose predicate differs per example under vmap: every example runs it, ` +
          `so the assignment cannot be made for some examples only; compute the value with the cond and assign it after, outside vmap`,
        "assign",
      );
    }
    withHandler(this.outer, () => v.setValue(value));
  }

  createVariable(name: string): void {
    this.outer.createVariable?.(name);
  }

  run(ref: OpRef, inputs: Tensor[], attrs: any): Tensor[] {
    // (inside a region traced below: a shared value a tape inside vmap tracks is promoted, so the node's gradient for it is per example)
    if (this.frames.length > 0) inputs = inputs.map((t) => promoteShared(this, t));
    const dims: BatchDims = inputs.map((t) => (t instanceof BatchedTensor && t.level === this ? t.dim : null));
    const values = inputs.map((t, i) => (dims[i] === null ? t : (t as BatchedTensor).value));
    // (not batched here: the level below runs it; applyOp's recorders see it once, from our caller)
    if (dims.every((d) => d === null)) return this.outer.run(ref, values, attrs);
    const def = ref as OpDef;
    // (inside a region traced below: a batched value from outside it that a tape tracks crosses by a bridge)
    const tapes = regionTapes(this);
    if (tapes !== null) for (let i = 0; i < inputs.length; i++) if (dims[i] !== null) bridgeDown(tapes, inputs[i]!, this);
    const rule = batchRuleOf(def);
    if (rule === null) throw new ValueError(`op ${def.name} has no batching rule`, "vmap");
    if ("refuse" in rule) throw new ValueError(`${def.name} cannot run on batched values: ${rule.refuse}`, "vmap");
    // The rule's ops below are not recorded on tapes started inside this level: those track the
    // level's values (this op, recorded by our caller), and would otherwise follow a shared value
    // below too, where a node's gradient would give the batch's total for it.
    const inner = recorders.filter((r) => !this.outerTapes.includes(r));
    const r = withoutRecorders(inner, () => withHandler(this.outer, () => rule.apply({ op: def.name, inputs: values, dims, attrs, size: this.size })));
    return r.outputs.map((o, k) => (r.dims[k] === null ? o : new BatchedTensor(o, r.dims[k]!, this)));
  }
}
