/**
 * Jacobians built from vmap: jacrev maps the VJP over the rows of an identity (one backward pass
 * per output element, batched), jacfwd maps the JVP over the columns; hessian = jacfwd(jacrev).
 * For f of one tensor argument returning one tensor: the result has shape [...out, ...in].
 */
import { jvp, vjp } from "../grad/functional.js";
import type { Tensor } from "../core/tensor.js";
import { applyOp, getOp } from "../ops/registry.js";
import { vmap } from "./vmap.js";

const op = (name: string, xs: Tensor[], attrs: unknown) => applyOp(getOp(name), xs, attrs as never)[0]!;
/** The identity of size n in dtype `dtype`, its rows shaped as `shape`. */
const basis = (shape: readonly number[], dtype: Tensor["dtype"]): Tensor => {
  const n = shape.reduce((a, b) => a * b, 1);
  return op("reshape", [op("eye", [], { n, m: n, dtype })], { shape: [n, ...shape] });
};

export function jacrev(f: (x: Tensor) => Tensor): (x: Tensor) => Tensor {
  return (x) => {
    const [y, back] = vjp(f, x);
    const rows = vmap((ct: Tensor) => back(ct)[0] as Tensor)(basis(y.shape, y.dtype));
    return op("reshape", [rows], { shape: [...y.shape, ...x.shape] });
  };
}

export function jacfwd(f: (x: Tensor) => Tensor): (x: Tensor) => Tensor {
  return (x) => {
    const cols = vmap((t: Tensor) => jvp(f, [x], [t])[1] as Tensor, { outAxes: -1 })(basis(x.shape, x.dtype));
    const yShape = cols.shape.slice(0, -1);
    return op("reshape", [cols], { shape: [...yShape, ...x.shape] });
  };
}

export const hessian = (f: (x: Tensor) => Tensor): ((x: Tensor) => Tensor) => jacfwd(jacrev(f));
