/**
 * Elementwise ONNX ops: math, activations, comparisons, logic, casts. ONNX broadcasting is
 * NumPy's, as ours; ONNX binary ops take operands of one dtype, so no promotion happens.
 */
import type { Tensor } from "../../../core/tensor.js";
import { isFloat, isInteger } from "../../../core/dtype.js";
import * as ops from "../../../ops/index.js";
import { onnxOp } from "../op-table.js";
import type { NodeContext } from "../node-context.js";

type Unary = (x: Tensor) => Tensor;
type Binary = (a: Tensor, b: Tensor) => Tensor;

const unary = (op: string, f: Unary): void => onnxOp(op, { run: (n) => f(n.input(0)) });
const binary = (op: string, f: Binary): void => onnxOp(op, { run: (n) => f(n.input(0), n.input(1)) });

unary("Abs", ops.abs);
unary("Neg", ops.neg);
unary("Exp", ops.exp);
unary("Log", ops.log);
unary("Sqrt", ops.sqrt);
unary("Reciprocal", ops.reciprocal);
unary("Sin", ops.sin);
unary("Cos", ops.cos);
unary("Tan", ops.tan);
unary("Asin", ops.asin);
unary("Acos", ops.acos);
unary("Atan", ops.atan);
unary("Sinh", ops.sinh);
unary("Cosh", ops.cosh);
unary("Tanh", ops.tanh);
unary("Sigmoid", ops.sigmoid);
unary("Relu", ops.relu);
unary("Softplus", ops.softplus);
unary("Erf", ops.erf);
unary("Floor", ops.floor);
unary("Ceil", ops.ceil);
unary("Round", ops.round);
unary("Sign", ops.sign);
unary("IsNaN", ops.isNaN);
unary("Not", ops.logicalNot);
unary("Softsign", (x) => ops.div(x, ops.add(ops.abs(x), 1)));
onnxOp("Identity", { slots: true, run: (n) => [n.slot(0)] });

onnxOp("IsInf", {
  run(n) {
    const x = n.input(0);
    const pos = n.int("detect_positive", 1) !== 0;
    const neg = n.int("detect_negative", 1) !== 0;
    const inf = ops.logicalAnd(ops.logicalNot(ops.isFinite(x)), ops.logicalNot(ops.isNaN(x)));
    if (pos && neg) return inf;
    if (!pos && !neg) return ops.fullLike(x, false, "bool");
    return ops.logicalAnd(inf, pos ? ops.greater(x, 0) : ops.less(x, 0));
  },
});

binary("Add", ops.add);
binary("Sub", ops.sub);
binary("Mul", ops.mul);
binary("Equal", ops.equal);
binary("Less", ops.less);
binary("LessOrEqual", ops.lessEqual);
binary("Greater", ops.greater);
binary("GreaterOrEqual", ops.greaterEqual);
binary("And", ops.logicalAnd);
binary("Or", ops.logicalOr);
binary("Xor", ops.logicalXor);

onnxOp("Div", {
  run(n) {
    const a = n.input(0);
    const b = n.input(1);
    // Integer division truncates toward zero (C semantics).
    return isInteger(a.dtype) ? ops.truncDiv(a, b) : ops.div(a, b);
  },
});

onnxOp("Mod", {
  run(n) {
    const a = n.input(0);
    const b = n.input(1);
    // fmod = 1: the remainder has the dividend's sign (C fmod); else the divisor's (Python).
    return n.int("fmod", 0) !== 0 ? ops.fmod(a, b) : ops.mod(a, b);
  },
});

onnxOp("Pow", {
  run(n) {
    const a = n.input(0);
    const b = n.input(1);
    // The result has the base's dtype whatever the exponent's.
    if (isFloat(a.dtype) && (a.dtype as string) !== "float16") return ops.pow(a, ops.cast(b, a.dtype));
    return ops.cast(ops.pow(ops.cast(a, "float64"), ops.cast(b, "float64")), a.dtype);
  },
});

/** Max, Min, Sum, Mean: variadic with broadcasting. */
function variadic(op: string, f: Binary, finish?: (y: Tensor, count: number) => Tensor): void {
  onnxOp(op, {
    run(n) {
      const xs = n.inputsFrom(0);
      if (xs.length === 0) throw n.fail("needs at least one input");
      let y = xs[0]!;
      for (let i = 1; i < xs.length; i++) y = f(y, xs[i]!);
      if (xs.length === 1 && y === xs[0]) y = ops.identity(y);
      return finish ? finish(y, xs.length) : y;
    },
  });
}
variadic("Max", ops.maximum);
variadic("Min", ops.minimum);
variadic("Sum", ops.add);
variadic("Mean", ops.add, (y, k) => ops.div(y, k));

onnxOp("Where", { run: (n) => ops.where(n.input(0), n.input(1), n.input(2)) });

// Activations ---------------------------------------------------------------------------------

onnxOp("LeakyRelu", { run: (n) => ops.leakyRelu(n.input(0), n.float("alpha", 0.01)) });
onnxOp("Elu", { run: (n) => ops.elu(n.input(0), n.float("alpha", 1)) });
onnxOp("Selu", {
  run(n) {
    const alpha = n.float("alpha", 1.67326319217681884765625);
    const gamma = n.float("gamma", 1.05070102214813232421875);
    return ops.mul(ops.elu(n.input(0), alpha), gamma);
  },
});
onnxOp("Celu", {
  run(n) {
    const x = n.input(0);
    const alpha = n.float("alpha", 1);
    // max(0, x) + min(0, alpha * (exp(x / alpha) - 1))
    return ops.add(ops.relu(x), ops.minimum(ops.mul(ops.expm1(ops.div(x, alpha)), alpha), 0));
  },
});
onnxOp("ThresholdedRelu", {
  run(n) {
    const x = n.input(0);
    return ops.where(ops.greater(x, n.float("alpha", 1)), x, 0);
  },
});
onnxOp("HardSigmoid", {
  run(n) {
    const x = n.input(0);
    return ops.clip(ops.add(ops.mul(x, n.float("alpha", 0.2)), n.float("beta", 0.5)), 0, 1);
  },
});
onnxOp("HardSwish", {
  run(n) {
    const x = n.input(0);
    return ops.mul(x, ops.clip(ops.add(ops.mul(x, 1 / 6), 0.5), 0, 1));
  },
});
onnxOp("PRelu", {
  run(n) {
    const x = n.input(0);
    const slope = n.input(1);
    return ops.where(ops.less(x, 0), ops.mul(x, slope), x);
  },
});
onnxOp("Mish", { run: (n) => ops.mul(n.input(0), ops.tanh(ops.softplus(n.input(0)))) });
onnxOp("Swish", { run: (n) => ops.mul(n.input(0), ops.sigmoid(ops.mul(n.input(0), n.float("alpha", 1)))) });
onnxOp("Gelu", {
  run(n) {
    const x = n.input(0);
    if (n.string("approximate", "none") === "tanh") {
      // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
      const inner = ops.mul(ops.add(x, ops.mul(ops.mul(ops.mul(x, x), x), 0.044715)), Math.sqrt(2 / Math.PI));
      return ops.mul(ops.mul(x, 0.5), ops.add(ops.tanh(inner), 1));
    }
    return ops.gelu(x);
  },
});
onnxOp("Shrink", {
  run(n) {
    const x = n.input(0);
    const lambd = n.float("lambd", 0.5);
    const bias = n.float("bias", 0);
    const y = ops.where(ops.less(x, -lambd), ops.add(x, bias), ops.where(ops.greater(x, lambd), ops.sub(x, bias), 0));
    return ops.cast(y, x.dtype);
  },
});

onnxOp("Clip", {
  run(n) {
    const x = n.input(0);
    if (n.opset < 11) return ops.clip(x, n.float("min", -3.4028234663852886e38), n.float("max", 3.4028234663852886e38));
    return ops.clip(x, n.optional(1), n.optional(2));
  },
});

// Casts ---------------------------------------------------------------------------------------

onnxOp("Cast", {
  run(n: NodeContext) {
    const to = n.dtypeAttr("to");
    return ops.cast(n.input(0), to);
  },
});
onnxOp("CastLike", { run: (n) => ops.cast(n.input(0), n.input(1).dtype) });

unary("Asinh", ops.asinh);
unary("Acosh", ops.acosh);
unary("Atanh", ops.atanh);

binary("BitwiseAnd", ops.bitwiseAnd);
binary("BitwiseOr", ops.bitwiseOr);
binary("BitwiseXor", ops.bitwiseXor);
unary("BitwiseNot", ops.bitwiseNot);
onnxOp("BitShift", {
  run(n) {
    const dir = n.string("direction");
    if (dir !== "LEFT" && dir !== "RIGHT") throw n.fail(`direction must be LEFT or RIGHT, got ${JSON.stringify(dir)}`);
    return (dir === "LEFT" ? ops.bitShiftLeft : ops.bitShiftRight)(n.input(0), n.input(1));
  },
});
onnxOp("BitCast", { run: (n) => ops.bitcast(n.input(0), n.dtypeAttr("to")) });
