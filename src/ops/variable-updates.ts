/**
 * Variable assignment: `v.assign(x)`, `v.assignAdd(x)`, `v.assignSub(x)`. The new value is
 * computed with registry ops and replaces the variable's value (tapes that saved the old
 * value keep it). Values are cast to the variable's dtype when they are JS numbers.
 */
import { Variable } from "../core/variable.js";
import { Tensor, type TensorLike } from "../core/tensor.js";
import { DtypeError } from "../core/errors.js";
import { toTensor } from "./convert.js";
import { add, sub } from "./binary.js";
import { broadcastTo } from "./shape.js";

declare module "../core/variable.js" {
  interface Variable {
    /** Replaces the value (same shape and dtype; JS values are converted to the variable's dtype). */
    assign(value: TensorLike): Variable;
    assignAdd(delta: TensorLike): Variable;
    assignSub(delta: TensorLike): Variable;
  }
}

function valueFor(v: Variable, x: TensorLike, op: string): Tensor {
  const t = x instanceof Tensor ? toTensor(x, op) : toTensor(x, op, v.dtype);
  if (t.dtype !== v.dtype) throw new DtypeError(`variable ${v.name} has dtype ${v.dtype}, got a ${t.dtype} value (cast it first)`, op);
  return t.shape.length < v.shape.length || t.size === 1 ? broadcastTo(t, v.shape) : t;
}

Variable.prototype.assign = function (this: Variable, value: TensorLike): Variable {
  return this.setValue(valueFor(this, value, "assign"), "assign");
};
Variable.prototype.assignAdd = function (this: Variable, delta: TensorLike): Variable {
  return this.setValue(add(this.peek(), valueFor(this, delta, "assignAdd")), "assignAdd");
};
Variable.prototype.assignSub = function (this: Variable, delta: TensorLike): Variable {
  return this.setValue(sub(this.peek(), valueFor(this, delta, "assignSub")), "assignSub");
};
