/**
 * The structural ops: nodes that own regions (cond, while), call a library function (call), or
 * read and write variables by reference (readVariable, assignVariable). Executors run them
 * themselves (exec/structural.ts); these declarations carry what every other layer needs: how
 * many regions and what they are called, which inputs reach the regions, what a node calls, its
 * effects, and its type rule against its regions (the verifier runs it).
 *
 * Layers refer to these declarations (condOp.name, def.structural.selectsRegion, ...), never to
 * the op names as strings.
 */
import type { DType } from "../core/dtype.js";
import type { TensorType } from "../core/tensor-type.js";
import { defineStructuralOp, type RegionSignature, type StructuralNode } from "./registry.js";

function fail(message: string): never {
  throw new Error(message);
}

/** `float32[2, ?]` (as the graph printer writes types). */
function typeText(t: TensorType): string {
  return `${t.dtype}[${t.shape.map((d) => (d < 0 ? "?" : String(d))).join(", ")}]`;
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? "" : "s"}`;
}

/** A value of type `from` may flow into a slot of type `to`: same dtype and rank, dims equal or unknown in `to`. */
function assignable(from: TensorType, to: TensorType): boolean {
  if (from.dtype !== to.dtype || from.shape.length !== to.shape.length) return false;
  for (let i = 0; i < to.shape.length; i++) {
    const t = to.shape[i]!;
    if (t >= 0 && from.shape[i] !== t) return false;
  }
  return true;
}

const isBoolScalar = (t: TensorType): boolean => t.dtype === "bool" && t.shape.length === 0;

/** A region's inputs against the operands the node passes it (operand k is node input `from + k`). */
function checkRegionInputs(n: StructuralNode<unknown>, r: RegionSignature, from: number, label: string): void {
  const operands = n.inputs.slice(from);
  if (r.inputs.length !== operands.length) fail(`the ${label} region takes ${plural(r.inputs.length, "input")} but the node passes ${plural(operands.length, "operand")}`);
  r.inputs.forEach((t, i) => {
    if (!assignable(operands[i]!, t)) fail(`the ${label} region's input ${i} has type ${typeText(t)}, but the operand ${n.describeInput(from + i)} is ${typeText(operands[i]!)}`);
  });
}

/** cond(pred, ...operands) { then } { else }: the branch the predicate selects runs on the operands. */
export const condOp = defineStructuralOp<Record<string, never>>({
  name: "cond",
  family: "structural",
  inputs: ["pred", "operands"],
  variadic: true,
  structural: {
    regions: ["then", "else"],
    regionOperandsFrom: 1,
    droppableFrom: () => 1,
    selectsRegion: true,
    inheritsEffects: true,
    check(n) {
      if (n.inputs.length < 1) fail("cond needs a predicate input");
      if (!isBoolScalar(n.inputs[0]!)) fail(`the predicate ${n.describeInput(0)} must be a bool scalar, got ${typeText(n.inputs[0]!)}`);
      ["then", "else"].forEach((label, ri) => {
        const r = n.regions[ri]!;
        checkRegionInputs(n, r, 1, label);
        if (r.outputs.length !== n.outputs.length) fail(`the ${label} region returns ${plural(r.outputs.length, "value")}, but the cond node has ${plural(n.outputs.length, "output")}`);
        r.outputs.forEach((t, i) => {
          if (!assignable(t, n.outputs[i]!)) fail(`the ${label} region's output ${i} is ${typeText(t)}, but the cond node's output ${i} is ${typeText(n.outputs[i]!)}`);
        });
      });
    },
  },
});

export interface WhileAttrs {
  /** The first numLoopVars inputs are loop variables (the node's outputs); the rest are loop invariants. */
  numLoopVars: number;
  maxIterations?: number;
  /** maxIterations is a guard of the process, not the program's own count: export leaves it out. */
  maxIterationsIsGuard?: boolean;
}

/** while(...loopVars, ...invariants) { cond } { body }: body maps the loop variables while cond holds. */
export const whileOp = defineStructuralOp<WhileAttrs>({
  name: "while",
  family: "structural",
  inputs: ["loopVars", "invariants"],
  variadic: true,
  structural: {
    regions: ["cond", "body"],
    regionOperandsFrom: 0,
    droppableFrom: (attrs) => attrs.numLoopVars,
    inheritsEffects: true,
    check(n) {
      const { numLoopVars, maxIterations, maxIterationsIsGuard } = n.attrs;
      if (typeof numLoopVars !== "number" || !Number.isInteger(numLoopVars) || numLoopVars < 0 || numLoopVars > n.inputs.length) {
        fail(`attrs.numLoopVars must be an integer in [0, ${n.inputs.length}], got ${JSON.stringify(numLoopVars)}`);
      }
      if (maxIterations !== undefined && !(typeof maxIterations === "number" && maxIterations >= 0 && (Number.isInteger(maxIterations) || maxIterations === Infinity))) {
        fail(`attrs.maxIterations must be a non-negative integer, got ${JSON.stringify(maxIterations)}`);
      }
      if (maxIterationsIsGuard !== undefined && (maxIterationsIsGuard !== true || maxIterations === undefined)) {
        fail(`attrs.maxIterationsIsGuard must be true (with a maxIterations), got ${JSON.stringify(maxIterationsIsGuard)}`);
      }
      const [condR, bodyR] = n.regions as [RegionSignature, RegionSignature];
      checkRegionInputs(n, condR, 0, "cond");
      checkRegionInputs(n, bodyR, 0, "body");
      if (condR.outputs.length !== 1 || !isBoolScalar(condR.outputs[0]!)) fail(`the cond region must return one bool scalar, got (${condR.outputs.map(typeText).join(", ")})`);
      if (bodyR.outputs.length !== numLoopVars) fail(`the body region returns ${plural(bodyR.outputs.length, "value")}, but the loop has ${plural(numLoopVars, "loop variable")}`);
      bodyR.outputs.forEach((t, i) => {
        if (!assignable(t, bodyR.inputs[i]!) || !assignable(t, condR.inputs[i]!)) {
          fail(`the body region's output ${i} is ${typeText(t)}, which does not match loop variable ${i} (${typeText(bodyR.inputs[i]!)})`);
        }
      });
      if (n.outputs.length !== numLoopVars) fail(`the while node has ${plural(n.outputs.length, "output")}, but ${plural(numLoopVars, "loop variable")}`);
      n.outputs.forEach((out, i) => {
        const init = n.inputs[i]!;
        if (!assignable(init, out) || !assignable(bodyR.outputs[i]!, out)) {
          fail(`the while node's output ${i} is ${typeText(out)}, but loop variable ${i} is ${typeText(init)} initially and ${typeText(bodyR.outputs[i]!)} after the body`);
        }
      });
    },
  },
});

/** call(...args) @callee: runs the library function named by attrs.callee. */
export const callOp = defineStructuralOp<{ callee: string }>({
  name: "call",
  family: "structural",
  inputs: ["args"],
  variadic: true,
  structural: {
    regions: [],
    regionOperandsFrom: 0,
    calleeAttr: "callee",
    inheritsEffects: true,
    check(n) {
      const f = n.callee!;
      if (n.inputs.length !== f.inputs.length) fail(`calls ${f.name} with ${plural(n.inputs.length, "argument")}, but it takes ${f.inputs.length}`);
      n.inputs.forEach((t, i) => {
        if (!assignable(t, f.inputs[i]!)) fail(`argument ${i} (${n.describeInput(i)}) is ${typeText(t)}, but ${f.name}'s input ${i} (${f.inputNames[i]}) is ${typeText(f.inputs[i]!)}`);
      });
      if (n.outputs.length !== f.outputs.length) fail(`the call has ${plural(n.outputs.length, "output")}, but ${f.name} returns ${f.outputs.length}`);
      n.outputs.forEach((out, i) => {
        if (!assignable(f.outputs[i]!, out)) fail(`output ${i} is ${typeText(out)}, but ${f.name}'s output ${i} (${f.outputNames[i]}) is ${typeText(f.outputs[i]!)}`);
      });
    },
  },
});

/** What a variable attribute must look like (a Variable, duck-typed: graphs built by other front ends). */
interface VariableLike {
  name: string;
  variableId: number;
  dtype: DType;
  shape: readonly number[];
}

function variableOf(attrs: { variable?: unknown }): VariableLike | null {
  const v = attrs.variable as Partial<VariableLike> | null | undefined;
  if (v === null || typeof v !== "object") return null;
  return typeof v.variableId === "number" && typeof v.name === "string" && typeof v.dtype === "string" && Array.isArray(v.shape) ? (v as VariableLike) : null;
}

function checkVariable(attrs: { variable?: unknown }): VariableLike {
  const v = variableOf(attrs);
  if (!v) fail(`attrs.variable must be a Variable`);
  return v;
}

/** readVariable() {variable}: the variable's value where the node runs. */
export const readVariableOp = defineStructuralOp<{ variable: unknown }>({
  name: "readVariable",
  family: "structural",
  inputs: [],
  readsVariables: true,
  structural: {
    regions: [],
    regionOperandsFrom: 0,
    variable: variableOf,
    check(n) {
      const v = checkVariable(n.attrs);
      const vt = { dtype: v.dtype, shape: v.shape };
      if (n.inputs.length !== 0 || n.outputs.length !== 1) fail(`readVariable takes no inputs and has one output, got ${n.inputs.length} and ${n.outputs.length}`);
      if (!assignable(vt, n.outputs[0]!)) fail(`reads variable ${v.name} (${typeText(vt)}) into a ${typeText(n.outputs[0]!)} value`);
    },
  },
});

/** assignVariable(value) {variable}: replaces the variable's value. */
export const assignVariableOp = defineStructuralOp<{ variable: unknown }>({
  name: "assignVariable",
  family: "structural",
  inputs: ["value"],
  stateful: true,
  writesVariables: true,
  structural: {
    regions: [],
    regionOperandsFrom: 0,
    variable: variableOf,
    check(n) {
      const v = checkVariable(n.attrs);
      const vt = { dtype: v.dtype, shape: v.shape };
      if (n.inputs.length !== 1 || n.outputs.length !== 0) fail(`assignVariable takes one input and has no outputs, got ${n.inputs.length} and ${n.outputs.length}`);
      if (!assignable(n.inputs[0]!, vt)) fail(`assigns ${n.describeInput(0)} (${typeText(n.inputs[0]!)}) to variable ${v.name} (${typeText(vt)})`);
    },
  },
});
