/**
 * ONNX sequences and optionals. A sequence's length and element positions are known at trace
 * time here (a sequence is a list of slots while the model is traced, a JS array of tensors at
 * its inputs and outputs), so the sequence ops rearrange slots and the tensors stay staged.
 */
import * as ops from "../../../ops/index.js";
import { onnxOp } from "../op-table.js";
import type { NodeContext } from "../node-context.js";
import { Slot } from "../scope.js";
import { axisOf, int64Tensor } from "./shape.js";

/** Input i as a sequence (its element slots). */
function seq(n: NodeContext, i: number): Slot[] {
  const s = n.slot(i);
  if (!s.isSequence) throw n.fail(`input ${i} must be a sequence`);
  return s.items!;
}

/** A position into a sequence of `len` (negative counts from the end); `extra` allows len itself. */
function position(n: NodeContext, i: number, len: number, def: number, extra = 0): number {
  const p = n.hasInput(i) ? n.knownInts(i, "position")[0]! : def;
  const q = p < 0 ? p + len : p;
  if (!(q >= 0 && q < len + extra)) throw n.fail(`position ${p} is out of range for a sequence of ${len}`);
  return q;
}

onnxOp("SequenceEmpty", { slots: true, run: (n) => [Slot.sequence([], n.hasAttr("dtype") ? n.dtypeAttr("dtype") : "float32")] });
onnxOp("SequenceConstruct", { slots: true, run: (n) => [Slot.sequence(n.slots.filter((s): s is Slot => s !== null))] });
onnxOp("SequenceLength", { slots: true, run: (n) => int64Tensor([seq(n, 0).length], []) });
onnxOp("SequenceAt", {
  slots: true,
  constInputs: [1],
  run(n) {
    const items = seq(n, 0);
    return [items[position(n, 1, items.length, 0)]!];
  },
});
onnxOp("SequenceInsert", {
  slots: true,
  constInputs: [2],
  run(n) {
    const items = seq(n, 0).slice();
    items.splice(position(n, 2, items.length, items.length, 1), 0, n.slot(1));
    return [Slot.sequence(items, n.slot(0).elemDtype)];
  },
});
onnxOp("SequenceErase", {
  slots: true,
  constInputs: [1],
  run(n) {
    const items = seq(n, 0).slice();
    items.splice(position(n, 1, items.length, items.length - 1), 1);
    return [Slot.sequence(items, n.slot(0).elemDtype)];
  },
});
onnxOp("ConcatFromSequence", {
  slots: true,
  run(n) {
    const xs = seq(n, 0).map((s) => s.tensor());
    if (xs.length === 0) throw n.fail("cannot concatenate an empty sequence");
    const newAxis = n.int("new_axis", 0) !== 0;
    const axis = n.int("axis");
    if (axis === undefined) throw n.fail("needs the attribute axis");
    const a = axisOf(n, axis, xs[0]!.rank + (newAxis ? 1 : 0));
    return newAxis ? ops.stack(xs, a) : ops.concat(xs, a);
  },
});
onnxOp("SplitToSequence", {
  slots: true,
  constInputs: [1],
  run(n) {
    const x = n.input(0);
    const axis = axisOf(n, n.int("axis", 0), x.rank);
    const keep = n.int("keepdims", 1) !== 0;
    const dim = x.shape[axis]!;
    let sizes: number[];
    if (n.hasInput(1)) {
      const split = n.knownInts(1, "split");
      if (n.known(1).rank === 0) {
        const k = split[0]!;
        if (!(k > 0)) throw n.fail(`split ${k} must be positive`);
        sizes = [];
        for (let left = dim; left > 0; left -= k) sizes.push(Math.min(k, left));
      } else sizes = split;
      return [Slot.sequence(ops.split(x, sizes, axis).map((t) => Slot.of(t)))];
    }
    const pieces = ops.split(x, new Array(dim).fill(1), axis);
    return [Slot.sequence(pieces.map((t) => Slot.of(keep ? t : ops.squeeze(t, axis))))];
  },
});
onnxOp("SequenceMap", {
  slots: true,
  run(n) {
    const body = n.graph("body");
    const first = seq(n, 0);
    const others = n.slots.slice(1);
    const numOut = body.output.length;
    const outs: Slot[][] = Array.from({ length: numOut }, () => []);
    for (let i = 0; i < first.length; i++) {
      const args = [first[i]!, ...others.map((s) => (s === null ? Slot.none() : s.isSequence ? s.items![i]! : s))];
      n.runSubgraph(body, args, "SequenceMap body").forEach((r, k) => outs[k]!.push(r));
    }
    return outs.map((items) => Slot.sequence(items));
  },
});

onnxOp("Optional", { slots: true, run: (n) => [n.hasInput(0) ? n.slot(0) : Slot.none()] });
onnxOp("OptionalHasElement", {
  slots: true,
  run: (n) => ops.scalar(n.hasInput(0) && !n.slot(0).isNone, "bool"),
});
onnxOp("OptionalGetElement", {
  slots: true,
  run(n) {
    const s = n.slot(0);
    if (s.isNone) throw n.fail("the optional is empty");
    return [s];
  },
});
