/** ONNX lowerings of the bitwise ops, fused elementwise groups, the custom-gradient op and residual records; the refusals. (The random ops: random.ts.) */
import type { DType } from "../../../core/dtype.js";
import type { ElementwiseGroup } from "../../../core/expr.js";
import { getOp } from "../../../ops/registry.js";
import type { OnnxBuilder } from "../builder.js";
import { lowerGroup } from "../elementwise.js";
import type { LowerNode } from "../lowering.js";
import { castTo, where, type Table } from "./common.js";

const asOutput = (b: OnnxBuilder, ins: string[], n: LowerNode): string[] => ins.map((x, i) => castTo(b, x, n.inputTypes[i]!.dtype, n.outputTypes[0]!.dtype));

function bitwise(opType: string) {
  return (b: OnnxBuilder, ins: string[], n: LowerNode): string[] => [b.op1(opType, asOutput(b, ins, n))];
}

/** Shifts by `b` bits: ONNX's BitShift (unsigned only) on the unsigned type of the operand's width; 0 where b is negative or >= the width. */
function shift(direction: "LEFT" | "RIGHT") {
  return (b: OnnxBuilder, ins: string[], n: LowerNode): string[] => {
    const out = n.outputTypes[0]!.dtype;
    const [a, s] = asOutput(b, ins, n) as [string, string];
    const wide = out === "int64" || out === "uint64";
    const width = wide ? 64 : 32;
    const signed = !out.startsWith("uint");
    const sI = b.cast(s, "int64");
    const negative = b.op1("Less", [sI, b.scalar(0, "int64")]);
    const zero = b.scalar(0, out);
    if (direction === "RIGHT" && signed) {
      // arithmetic shift: floor(a / 2^min(b, width - 1))
      const k = b.op1("Min", [sI, b.scalar(width - 1, "int64")]);
      const p = b.op1("Pow", [b.scalar(2, "float64"), b.cast(k, "float64")]);
      const q = b.cast(b.op1("Floor", [b.op1("Div", [b.cast(a, "float64"), p])]), out);
      return [where(b, negative, zero, q, out)];
    }
    const u: DType = wide ? "uint64" : "uint32";
    const tooFar = b.op1("Or", [negative, b.op1("GreaterOrEqual", [sI, b.scalar(width, "int64")])]);
    const safe = b.cast(b.op1("Where", [tooFar, b.scalar(0, "int64"), sI]), u);
    const r = castTo(b, b.op1("BitShift", [b.cast(a, u), safe], { direction }), u, out);
    return [where(b, tooFar, zero, r, out)];
  };
}

export const otherLowerings: Table = {
  bitwiseAnd: bitwise("BitwiseAnd"),
  bitwiseOr: bitwise("BitwiseOr"),
  bitwiseXor: bitwise("BitwiseXor"),
  bitwiseNot: bitwise("BitwiseNot"),
  bitShiftLeft: shift("LEFT"),
  bitShiftRight: shift("RIGHT"),
  fusedElementwise: (b, ins, n) => {
    const def = getOp("fusedElementwise");
    const group = def.group!(n.attrs, n.inputTypes) as ElementwiseGroup | null;
    if (group === null) return b.unsupported("its attributes make no elementwise group");
    return lowerGroup(b, group, ins.map((name, i) => ({ name, dtype: n.inputTypes[i]!.dtype })));
  },
  // the forward of a custom gradient is the values it was given
  customGradient: (b, ins, n) => ins.slice(n.attrs.numInputs).map((x) => b.op1("Identity", [x])),
  // A residual record is the list of the names it packs (export/residual-records.ts)
  packResiduals: (b, ins) => [b.records.pack(b.fresh("residuals"), ins, b.loc)],
  unpackResiduals: (b, ins, n) =>
    b.records.unpack(ins[0]!, n.outputTypes.length) ??
    b.unsupported("the value it unpacks is no residual record made in the exported model (a zero cotangent of one, in a higher-order gradient, has no ONNX form)"),
  // A guard Stagecraft added (an imported Loop's iteration limit) is no part of the program: it
  // exports as nothing. An assertion the program states has no ONNX form.
  assert: (b, _ins, n) => (n.attrs.guard === true ? [] : b.unsupported(refusals.assert!)),
  // (likewise the count of an imported model's Loop iterations: a host call with no outputs)
  hostCall: (b, _ins, n) => (n.attrs.guard === true && n.outputTypes.length === 0 ? [] : b.unsupported(refusals.hostCall!)),
};

/** Ops without an ONNX form, with the reason export gives. */
/** Collectives talk to the other processes of an MPI job, which an ONNX model cannot reach. */
const COLLECTIVE = "a collective communicates with the other processes of a distributed job, which an ONNX model cannot reach";

export const refusals: Record<string, string> = {
  allReduce: COLLECTIVE,
  broadcast: COLLECTIVE,
  allGather: COLLECTIVE,
  hostCall: "it calls a JavaScript function, which an ONNX model cannot hold",
  print: "printing calls into JavaScript, which an ONNX model cannot hold",
  assert: "an assertion calls into JavaScript, which an ONNX model cannot hold",
  bitcast: "ONNX has no bit-reinterpreting cast",
};
