/**
 * ONNX control flow as Stagecraft control flow: If -> sc.cond, Loop and Scan -> sc.whileLoop
 * (scan outputs gathered on iteration stacks). Subgraphs see the names of the graphs around
 * them; the tracer turns the outer values they use into operands of the structural node.
 * A predicate known at trace time takes its branch directly (as sc.cond does for JS values).
 * Under a run-time predicate, a branch that cannot be traced for these shapes is staged as one
 * that raises OnnxModelError if taken (condWithRaisingBranch).
 */
import type { Tensor } from "../../../core/tensor.js";
import * as ops from "../../../ops/index.js";
import { cond, guardedWhileLoop, whileLoop } from "../../../staging/control-flow.js";
import { stage } from "../../../staging/stage.js";
import { onnxOp } from "../op-table.js";
import type { NodeContext } from "../node-context.js";
import { Slot } from "../scope.js";
import { OnnxLimitError, OnnxModelError } from "../../errors.js";
import { ShapeError } from "../../../core/errors.js";
import { applyOp } from "../../../ops/registry.js";
import { dimSizeOp } from "../../../ops/shape/dim-size.js";
import { assertOp, hostCallOp, registerAssertion, registerHostFunction } from "../../../ops/host.js";
import { axisOf } from "./shape.js";
import type { GraphProto } from "../../protobuf.js";
import { staticInputNames } from "../static-inputs.js";

const scalarOf = (t: Tensor): Tensor => (t.rank === 0 ? t : ops.reshape(t, []));

/** Whether a subgraph declares a sequence or optional output (a structure fixed at trace time here). */
const returnsStructure = (g: GraphProto | null | undefined): boolean => (g?.output ?? []).some((o) => !!o.type?.sequence_type || !!o.type?.optional_type);

onnxOp("If", {
  slots: true,
  // Branches that return sequences or optionals make the output's structure depend on the
  // condition: the condition is then a trace key (the model traces once per value it takes).
  constInputsOf: (node) => (node.attribute.some((a) => (a.name === "then_branch" || a.name === "else_branch") && returnsStructure(a.g)) ? [0] : []),
  run(n) {
    const c = n.input(0);
    if (c.size !== 1) throw n.fail(`the condition must hold one value, got shape [${c.shape.join(", ")}]`);
    const thenG = n.graph("then_branch");
    const elseG = n.graph("else_branch");
    const known = n.slot(0).known();
    if (known !== null) return n.runSubgraph(known.dataSync()[0] !== 0 ? thenG : elseG, [], "If branch");
    const pred = scalarOf(c.dtype === "bool" ? c : ops.notEqual(c, 0));
    let failing: "then" | "else" | null = null;
    const branch = (g: typeof thenG, which: "then" | "else") => () => {
      try {
        return n.runSubgraph(g, [], "If branch").map((s) => {
          if (!s.isTensor) throw n.unsupported("branches that return sequences or optionals need a condition known at trace time");
          return s.tensor();
        });
      } catch (e) {
        if (failing === null && untraceable(e)) failing = which;
        throw e;
      }
    };
    try {
      return cond(pred, branch(thenG, "then"), branch(elseG, "else"));
    } catch (e) {
      if (failing === null) throw e;
      return condWithRaisingBranch(n, pred, failing, failing === "then" ? branch(elseG, "else") : branch(thenG, "then"), e as Error);
    }
  },
});

/**
 * Errors that say a branch cannot be traced for this call's shapes (its shapes contradict the
 * model's declarations or an op's rules): the model may still never take that branch for these
 * inputs, as onnxruntime, which runs only the branch taken, would not.
 */
const untraceable = (e: unknown): boolean => e instanceof OnnxModelError || e instanceof ShapeError;

/**
 * An If whose `failing` branch cannot be traced under a run-time condition: stages the other
 * branch as it is and, for the failing one, a branch that raises OnnxModelError (the trace
 * error's message) if the model ever takes it, returning placeholder zeros of the other
 * branch's types otherwise never seen. Never a wrong answer: taking it is an error. The working
 * branch is traced first (the condition negated where it is the else branch) to learn its types.
 */
function condWithRaisingBranch(n: NodeContext, pred: Tensor, failing: "then" | "else", working: () => Tensor[], cause: Error): Tensor[] {
  let types: { dtype: Tensor["dtype"]; shape: readonly number[] }[] | null = null;
  const first = (): Tensor[] => {
    const outs = working();
    types = outs.map((t) => ({ dtype: t.dtype, shape: t.shape }));
    return outs;
  };
  const message = `${n.label}: the ${failing} branch cannot run for these input shapes, and the condition, decided at run time, took it: ${cause.message}`;
  let fnId = limitAssertions.get(message);
  if (fnId === undefined) {
    fnId = registerAssertion(() => new OnnxModelError(message, "If"));
    limitAssertions.set(message, fnId);
  }
  const id = fnId;
  // (the condition under which the raising branch runs, negated: false there, so the assert raises)
  const takenWhen = failing === "then" ? pred : ops.logicalNot(pred);
  const raising = (): Tensor[] => {
    applyOp(assertOp, [ops.logicalNot(takenWhen)], { fnId: id, message });
    return types!.map((t) => ops.full(t.shape.map((d) => Math.max(d, 0)), 0, t.dtype));
  };
  return cond(ops.logicalNot(takenWhen), first, raising);
}

/** The output types of `fn` on `args`, from a trace that is discarded (to size the scan-output stacks). */
function probe(fn: (...xs: Tensor[]) => Tensor[], args: Tensor[]): { dtype: Tensor["dtype"]; shape: readonly number[] }[] {
  const cf = stage(fn, { autograph: false, name: "onnx_loop_probe" }).concrete(...args);
  return cf.graph.outputs.map((v) => v.type);
}

/**
 * A Loop carrying sequences or optionals (whose lengths are trace-time structure here): unrolled
 * while tracing, which needs the trip count and the condition known then (static inputs: see
 * constInputsOf below), and the body's condition output known after each iteration.
 */
function unrolledLoop(n: NodeContext, body: GraphProto): (Slot | null)[] {
  const trips = n.hasInput(0) ? n.slot(0).known() : null;
  const cond0 = n.hasInput(1) ? n.slot(1).known() : null;
  if ((n.hasInput(0) && trips === null) || (n.hasInput(1) && cond0 === null)) {
    throw n.unsupported("a Loop carrying sequences or optionals, or whose body needs its iteration number at trace time, needs its trip count and condition known at trace time");
  }
  if (trips === null && cond0 === null) throw n.fail("a Loop with neither a trip count nor a condition never ends");
  const max = trips === null ? Infinity : Number(trips.dataSync()[0]);
  let carried = n.slots.slice(2).map((s) => {
    if (s === null) throw n.fail("a loop-carried value is missing");
    return s;
  });
  const numCarried = carried.length;
  let cond = cond0 === null ? true : Number(cond0.dataSync()[0]) !== 0;
  const scans: Slot[][] = [];
  for (let i = 0; i < max && cond; i++) {
    if (i >= n.maxLoopIterations) throw new OnnxLimitError(`${n.label}: more than ${n.maxLoopIterations} iterations (the maxLoopIterations load option)`, "onnx.load");
    const it = ops.scalar(i, "int64");
    const c = ops.scalar(cond);
    const outs = n.runSubgraph(body, [Slot.of(it, it), Slot.of(c, c), ...carried], "Loop body");
    if (outs.length < 1 + numCarried) throw n.fail(`the body returns ${outs.length} outputs, expected at least ${numCarried + 1}`);
    const next = outs[0]!.known();
    if (next === null) throw n.unsupported("a Loop carrying sequences or optionals needs its condition known at trace time, but the body computes it from run-time data");
    cond = Number(next.dataSync()[0]) !== 0;
    carried = outs.slice(1, 1 + numCarried);
    scans.push(outs.slice(1 + numCarried));
  }
  const numScan = body.output.length - 1 - numCarried;
  if (numScan > 0 && scans.length === 0) throw n.unsupported("a Loop carrying sequences that runs no iteration has scan outputs of unknown shape");
  const scanOuts = Array.from({ length: numScan }, (_, k) => Slot.of(ops.stack(scans.map((row) => row[k]!.tensor()), 0)));
  return [...carried, ...scanOuts];
}

/** Whether a graph declares a sequence or optional input after the first `skip` (a Loop body's carried values). */
const takesStructure = (g: GraphProto | null | undefined, skip: number): boolean => (g?.input ?? []).slice(skip).some((i) => !!i.type?.sequence_type || !!i.type?.optional_type);

/**
 * Whether a Loop body needs its iteration number as a known value at trace time (a Slice whose
 * bounds are computed from it, as ONNX's test_loop11 has): then the loop unrolls while tracing.
 */
const needsKnownIteration = (g: GraphProto | null | undefined): boolean =>
  !!g && g.input.length > 0 && staticInputNames(g, new Set([g.input[0]!.name])).size > 0;

const unrolls = (g: GraphProto | null | undefined): boolean => takesStructure(g, 2) || needsKnownIteration(g);

onnxOp("Loop", {
  slots: true,
  // Carrying sequences or optionals, or needing the iteration number at trace time: the loop
  // unrolls while tracing, so its trip count and condition are trace keys.
  constInputsOf: (node) => (node.attribute.some((a) => a.name === "body" && unrolls(a.g)) ? [0, 1] : []),
  run(n) {
    const body = n.graph("body");
    if (n.slots.slice(2).some((s) => s !== null && !s.isTensor) || needsKnownIteration(body)) return unrolledLoop(n, body);
    const maxTrips = n.optional(0);
    const cond0 = n.optional(1);
    const carried0 = n.inputsFrom(2);
    const numCarried = carried0.length;
    if (body.input.length !== numCarried + 2) throw n.fail(`the body takes ${body.input.length} inputs, expected ${numCarried + 2}`);
    const numScan = body.output.length - 1 - numCarried;
    if (numScan < 0) throw n.fail(`the body returns ${body.output.length} outputs, expected at least ${numCarried + 1}`);
    const i0 = ops.scalar(0, "int64");
    const c0 = cond0 === null ? ops.scalar(true) : scalarOf(cond0);
    // Nested loops multiply: the trip counts known while tracing are refused past
    // maxTotalIterations now; a nest with a count decided at run time counts as it runs (ticks).
    const budget = n.budget;
    const knownTripsEarly = n.hasInput(0) ? n.slot(0).known() : null;
    const bound = knownTripsEarly !== null ? Math.max(0, Number(knownTripsEarly.dataSync()[0])) : Infinity;
    const factor = bound === 0 ? 0 : budget.loopFactor * bound;
    if (knownTripsEarly !== null && factor > budget.limits.maxTotalIterations) {
      throw new OnnxLimitError(
        `${n.label}: its trip count ${bound} inside the Loops around it makes ${factor.toExponential(3)} iterations in all, more than the limit of ${budget.limits.maxTotalIterations} (the maxTotalIterations load option)`,
        "onnx.load",
      );
    }
    const outermost = budget.loopDepth === 0;
    const ticks = (!Number.isFinite(factor) && Number.isFinite(budget.limits.maxTotalIterations)) || Number.isFinite(budget.limits.maxRunMs);
    const runBody = (i: Tensor, c: Tensor, carried: Tensor[]): Tensor[] => {
      const [f, d] = [budget.loopFactor, budget.loopDepth];
      budget.loopFactor = factor;
      budget.loopDepth = d + 1;
      try {
        if (ticks) stageTick(n, i, outermost);
        return n.runSubgraph(body, [Slot.of(i), Slot.of(c), ...carried.map((t) => Slot.of(t))], "Loop body").map((s) => s.tensor());
      } finally {
        budget.loopFactor = f;
        budget.loopDepth = d;
      }
    };
    const types = probe((i, c, ...carried) => runBody(i, c, carried), [i0, c0, ...carried0]);
    const stacks0 = types.slice(1 + numCarried).map((t) => ops.emptyStack(ops.full(t.shape.map((d) => Math.max(d, 0)), 0, t.dtype)));
    // Carried values may change shape across iterations (ONNX allows it): relax those dims.
    const invariants = [
      null,
      null,
      ...carried0.map((t, k) => {
        const s = types[1 + k]!.shape;
        return s.length === t.rank && s.every((d, j) => d === t.shape[j]) ? null : s.map((d, j) => (d === t.shape[j] ? d : null));
      }),
      ...stacks0.map((s) => [null, ...s.shape.slice(1)]),
    ];
    const limit = maxTrips === null ? null : scalarOf(maxTrips);
    const knownTrips = n.hasInput(0) ? n.slot(0).known() : null;
    if (knownTrips !== null && Number(knownTrips.dataSync()[0]) > n.maxLoopIterations) {
      throw new OnnxLimitError(`${n.label}: the trip count ${Number(knownTrips.dataSync()[0])} is more than the limit of ${n.maxLoopIterations} (the maxLoopIterations load option)`, "onnx.load");
    }
    // A count decided at run time (or none: the condition alone) could run forever: the staged
    // loop stops after maxLoopIterations (a guard of the process, which export leaves out), and
    // one check after it raises OnnxLimitError when the model's loop wanted to go on.
    const guarded = knownTrips === null && Number.isFinite(n.maxLoopIterations);
    const loopCond = (i: Tensor, c: Tensor): Tensor => (limit === null ? c : ops.logicalAnd(ops.less(i, limit), c));
    const step = (i?: Tensor, c?: Tensor, ...rest: Tensor[]): Tensor[] => {
      const r = runBody(i!, c!, rest.slice(0, numCarried));
      // Shapes made while the loop runs (a carried value whose dims change, the rows stacked
      // so far) are held to maxElements as they are made: a staged guard per iteration.
      invariants.slice(2, 2 + numCarried).forEach((inv, k) => {
        if (inv !== null) stageSizeGuard(n, r[1 + k]!, null, `loop-carried value ${k} (${JSON.stringify(body.output[1 + k]?.name ?? "")})`);
      });
      for (let k = 0; k < types.length - 1 - numCarried; k++) stageSizeGuard(n, r[1 + numCarried + k]!, ops.add(i!, 1), `scan output ${k}`);
      const stacks = rest.slice(numCarried).map((s, k) => ops.stackPush(s, r[1 + numCarried + k]!));
      return [ops.add(i!, 1), scalarOf(r[0]!), ...r.slice(1, 1 + numCarried), ...stacks];
    };
    const vars0 = [i0, c0, ...carried0, ...stacks0];
    const shapeInvariants = invariants.some((v) => v !== null) ? invariants : undefined;
    const outs = guarded
      ? guardedWhileLoop((i, c) => loopCond(i!, c!), step, vars0, { maxIterations: n.maxLoopIterations, shapeInvariants })
      : whileLoop((i, c) => loopCond(i!, c!), step, vars0, { shapeInvariants });
    if (guarded) checkIterationLimit(n, outs[0]!, loopCond(outs[0]!, outs[1]!));
    return outs.slice(2);
  },
});

/**
 * Stages one count of the run's Loop iterations (and a look at the clock) at the start of an
 * iteration: a host call with no outputs, marked a guard, which export leaves out. The
 * outermost loop's tick takes the iteration number: its first iteration starts the count.
 */
function stageTick(n: NodeContext, i: Tensor, outermost: boolean): void {
  const fnId = n.budget.run.fnIdOf(n.label, outermost, (fn) => registerHostFunction(fn, "onnx_loop_budget", null));
  applyOp(hostCallOp, outermost ? [i] : [], { fnId, name: "onnx_loop_budget", outputs: [], guard: true });
}

/**
 * Stages a guard that `t` (times `rows` of it, for a scan output's stack) has at most
 * maxElements elements when the graph runs: its dims known while tracing and, for the others,
 * their run-time sizes (dimSize), multiplied in float64.
 */
function stageSizeGuard(n: NodeContext, t: Tensor, rows: Tensor | null, what: string): void {
  const max = n.maxElements;
  if (max === Infinity) return;
  let known = 1;
  let size: Tensor | null = rows === null ? null : ops.cast(rows, "float64");
  t.shape.forEach((d, axis) => {
    if (d >= 0) known *= d;
    else {
      const dim = ops.cast(applyOp(dimSizeOp, [t], { axis })[0]!, "float64");
      size = size === null ? dim : ops.mul(size, dim);
    }
  });
  if (size === null) {
    if (known > max) throw new OnnxLimitError(`${n.label}: ${what} would have ${known} elements, more than the limit of ${max} elements (the maxElements load option)`, "onnx.load");
    return;
  }
  const message = `${n.label}: ${what} grew past the limit of ${max} elements as the loop ran (the maxElements load option)`;
  let fnId = limitAssertions.get(message);
  if (fnId === undefined) {
    fnId = registerAssertion(() => new OnnxLimitError(message, "onnx.load"));
    limitAssertions.set(message, fnId);
  }
  const ok = ops.lessEqual(ops.mul(size, ops.scalar(known, "float64")), ops.scalar(max, "float64"));
  applyOp(assertOp, [ok], { fnId, message, guard: true });
}

/** One assertion per distinct message (a node under a limit), however often models are traced. */
const limitAssertions = new Map<string, number>();

/**
 * Stages the check after a guarded Loop (one whose trip count is not known while tracing): the
 * loop stopped at maxLoopIterations while its condition, on the values it ended with, still
 * held, so the model's loop runs longer than the limit: OnnxLimitError naming the node and the
 * option. A loop that ends by itself at exactly the limit has a false condition there and
 * passes. The assert is a guard (ops/host.ts): export leaves it out.
 */
function checkIterationLimit(n: NodeContext, iterations: Tensor, wantsMore: Tensor): void {
  const max = n.maxLoopIterations, label = n.label;
  const message = `${label}: the loop ran more than ${max} iterations (the maxLoopIterations load option); its trip count and condition are decided at run time`;
  let fnId = limitAssertions.get(message);
  if (fnId === undefined) {
    fnId = registerAssertion(() => new OnnxLimitError(message, "onnx.load"));
    limitAssertions.set(message, fnId);
  }
  const ok = ops.logicalOr(ops.less(iterations, ops.scalar(max, "int64")), ops.logicalNot(wantsMore));
  applyOp(assertOp, [ok], { fnId, message, guard: true });
}

/**
 * The Scan loop: the body over rows i = 0 .. length-1 of `xs` (scan axis first, directions
 * applied), carrying `states0`; returns the final states and the scan outputs stacked [length, ...].
 */
function scanLoop(n: NodeContext, body: ReturnType<NodeContext["graph"]>, states0: Tensor[], xs: Tensor[]): { states: Tensor[]; stacked: Tensor[] } {
  const numState = states0.length;
  const length = xs[0]!.shape[0]!;
  if (xs.some((x) => x.shape[0] !== length)) throw n.fail("the scan inputs have different lengths along their scan axes");
  const runBody = (states: Tensor[], rows: Tensor[]): Tensor[] =>
    n.runSubgraph(body, [...states, ...rows].map((t) => Slot.of(t)), "Scan body").map((s) => s.tensor());
  const row0 = xs.map((x) => ops.gather(x, ops.scalar(0, "int32"), 0));
  const types = probe((...a) => runBody(a.slice(0, numState), a.slice(numState)), [...states0, ...row0]);
  const stacks0 = types.slice(numState).map((t) => ops.emptyStack(ops.full(t.shape.map((d) => Math.max(d, 0)), 0, t.dtype)));
  const outs = whileLoop(
    (i) => ops.less(i!, length),
    (i, ...rest) => {
      const rows = xs.map((x) => ops.gather(x, i!, 0));
      const r = runBody(rest.slice(0, numState), rows);
      const stacks = rest.slice(numState).map((s, k) => ops.stackPush(s, r[numState + k]!));
      return [ops.add(i!, 1), ...r.slice(0, numState), ...stacks];
    },
    [ops.scalar(0, "int32"), ...states0, ...stacks0],
    { shapeInvariants: [null, ...states0.map(() => null), ...stacks0.map((s) => [null, ...s.shape.slice(1)])] },
  );
  const stacked = outs.slice(1 + numState).map((s, k) => ops.reshape(s, [length, ...types[numState + k]!.shape]));
  return { states: outs.slice(1, 1 + numState), stacked };
}

/** Scan axis first, reversed where the direction is backwards: the loop reads row i. */
function scanRows(x: Tensor, axis: number, reverse: boolean): Tensor {
  const moved = axis === 0 ? x : ops.transpose(x, [axis, ...[...Array(x.rank).keys()].filter((d) => d !== axis)]);
  return reverse ? ops.flip(moved, 0) : moved;
}

/**
 * Scan 8: inputs [sequence_lens?, states..., scan inputs...], all with a leading batch axis (scan
 * inputs [batch, sequence, ...]); the body runs per batch entry. Each batch entry is its own
 * scan loop; results are stacked back along the batch axis.
 */
function scan8(n: NodeContext): Tensor[] {
  const body = n.graph("body");
  const numScanIn = n.int("num_scan_inputs");
  if (numScanIn === undefined || numScanIn < 1) throw n.fail("needs a positive num_scan_inputs");
  const inputs = n.inputsFrom(1);
  const numState = inputs.length - numScanIn;
  if (numState < 0) throw n.fail(`has ${inputs.length} inputs after sequence_lens but num_scan_inputs is ${numScanIn}`);
  const states0 = inputs.slice(0, numState);
  const xsIn = inputs.slice(numState);
  const batch = inputs[0]!.shape[0];
  if (batch === undefined || inputs.some((t) => t.rank < 1 || t.shape[0] !== batch)) throw n.fail("every state and scan input needs the same leading batch axis");
  if (xsIn.some((x) => x.rank < 2)) throw n.fail("scan inputs must be [batch, sequence, ...]");
  const seq = xsIn[0]!.shape[1]!;
  if (n.hasInput(0)) {
    const lens = n.knownInts(0, "sequence_lens");
    if (lens.length !== batch) throw n.fail(`sequence_lens has ${lens.length} entries for a batch of ${batch}`);
    if (lens.some((l) => l !== seq)) throw n.unsupported(`sequence_lens [${lens.join(", ")}] shorter than the scan inputs' length ${seq} are not supported`);
  }
  const dirs = n.ints("directions", new Array(numScanIn).fill(0));
  if (dirs.length !== numScanIn) throw n.fail(`directions has ${dirs.length} entries for ${numScanIn} scan inputs`);
  const per = Array.from({ length: batch }, (_, b) => {
    const at = (t: Tensor) => ops.gather(t, ops.scalar(b, "int32"), 0);
    return scanLoop(n, body, states0.map(at), xsIn.map((x, k) => scanRows(at(x), 0, dirs[k] !== 0)));
  });
  const states = states0.map((_, k) => ops.stack(per.map((p) => p.states[k]!), 0));
  const stacked = per[0]!.stacked.map((_, k) => ops.stack(per.map((p) => p.stacked[k]!), 0));
  return [...states, ...stacked];
}

onnxOp("Scan", {
  run(n: NodeContext) {
    if (n.opset < 9) return scan8(n);
    const body = n.graph("body");
    const numScanIn = n.int("num_scan_inputs");
    if (numScanIn === undefined || numScanIn < 1) throw n.fail("needs a positive num_scan_inputs");
    const inputs = n.inputsFrom(0);
    const numState = inputs.length - numScanIn;
    if (numState < 0) throw n.fail(`has ${inputs.length} inputs but num_scan_inputs is ${numScanIn}`);
    const states0 = inputs.slice(0, numState);
    const xsIn = inputs.slice(numState);
    const inAxes = n.ints("scan_input_axes", new Array(numScanIn).fill(0)).map((a, k) => axisOf(n, a, xsIn[k]!.rank));
    const inDirs = n.ints("scan_input_directions", new Array(numScanIn).fill(0));
    const xs = xsIn.map((x, k) => scanRows(x, inAxes[k]!, inDirs[k] !== 0));
    const { states, stacked } = scanLoop(n, body, states0, xs);
    const numScanOut = stacked.length;
    const outAxes = n.ints("scan_output_axes", new Array(numScanOut).fill(0));
    const outDirs = n.ints("scan_output_directions", new Array(numScanOut).fill(0));
    const scanOuts = stacked.map((s, k) => {
      let y = s;
      if (outDirs[k]) y = ops.flip(y, 0);
      const a = axisOf(n, outAxes[k]!, y.rank);
      if (a !== 0) {
        const perm = [...Array(y.rank).keys()].slice(1);
        perm.splice(a, 0, 0);
        y = ops.transpose(y, perm);
      }
      return y;
    });
    return [...states, ...scanOuts];
  },
});
