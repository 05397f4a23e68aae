/** dimSize: the size of an axis when the graph runs (an int32 scalar), for shapes unknown while staging. */
import { ShapeError } from "../../core/errors.js";
import { fmtShape } from "../../core/shape.js";
import { defineOp } from "../registry.js";
import { shapeGpu } from "../../backends/webgpu/op-kernels/shape.js";
import { dimSizeBatch } from "../batching.js";

export const dimSizeOp = defineOp<{ axis: number }>({
  name: "dimSize",
  batch: dimSizeBatch,
  family: "shape",
  inputs: ["x"],
  infer(inputs, attrs) {
    const x = inputs[0]!;
    if (!Number.isInteger(attrs.axis) || attrs.axis < 0 || attrs.axis >= x.shape.length) {
      throw new ShapeError(`axis ${String(attrs.axis)} is out of range for shape ${fmtShape(x.shape)}`, "dimSize");
    }
    return [{ shape: [], dtype: "int32" }];
  },
  kernels: {
    webgpu: shapeGpu.dimSize,
    cpu(inputs, attrs) {
      const out = new Int32Array(1);
      out[0] = inputs[0]!.shape[attrs.axis]!;
      return [out];
    },
  },
});
