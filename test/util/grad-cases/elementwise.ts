/** Gradient cases for unary, binary, where, cast, identity and stopGradient. */
import * as sc from "../../../src/api/index.js";
import type { GradCase } from "./types.js";

type Domain = "any" | "positive" | "unit" | "awayFromZero" | "offIntegers";

const UNARY: [string, Domain][] = [
  ["neg", "any"], ["abs", "awayFromZero"], ["sign", "awayFromZero"], ["exp", "any"], ["log", "positive"],
  ["log1p", "positive"], ["expm1", "any"], ["sqrt", "positive"], ["rsqrt", "positive"], ["square", "any"],
  ["reciprocal", "awayFromZero"], ["sin", "any"], ["cos", "any"], ["tan", "unit"], ["asin", "unit"],
  ["acos", "unit"], ["atan", "any"], ["sinh", "any"], ["cosh", "any"], ["tanh", "any"], ["sigmoid", "any"],
  ["relu", "awayFromZero"], ["softplus", "any"], ["erf", "any"], ["gelu", "any"], ["floor", "offIntegers"],
  ["ceil", "offIntegers"], ["round", "offIntegers"],
];

function input(domain: Domain, shape: number[]) {
  return (rng: import("../rng.js").Rng): sc.Tensor[] => {
    switch (domain) {
      case "any":
        return [rng.tensor(shape, -1.5, 1.5)];
      case "positive":
        return [rng.tensor(shape, 0.3, 2)];
      case "unit":
        return [rng.tensor(shape, -0.8, 0.8)];
      case "awayFromZero":
        return [rng.awayFromZero(shape)];
      case "offIntegers":
        return [sc.add(sc.floor(rng.tensor(shape, -3, 3)), rng.tensor(shape, 0.2, 0.4))];
    }
  };
}

const unaryFns = sc as unknown as Record<string, (x: sc.Tensor, ...rest: number[]) => sc.Tensor>;

export const cases: GradCase[] = [
  ...UNARY.map(([op, domain]): GradCase => ({ op, inputs: input(domain, [2, 3]), fn: (x) => unaryFns[op]!(x), secondOrder: true })),
  { op: "leakyRelu", inputs: input("awayFromZero", [2, 3]), fn: (x) => sc.leakyRelu(x, 0.1), secondOrder: true },
  { op: "elu", inputs: input("awayFromZero", [2, 3]), fn: (x) => sc.elu(x, 0.7), secondOrder: true },

  { op: "add", label: "broadcast", inputs: (r) => [r.tensor([2, 3]), r.tensor([3])], fn: sc.add, secondOrder: true },
  { op: "sub", label: "broadcast", inputs: (r) => [r.tensor([2, 1]), r.tensor([1, 3])], fn: sc.sub, secondOrder: true },
  { op: "mul", label: "broadcast", inputs: (r) => [r.tensor([4, 2, 3]), r.tensor([2, 1])], fn: sc.mul, secondOrder: true },
  { op: "mul", label: "scalar", inputs: (r) => [r.tensor([2, 3])], fn: (x) => sc.mul(x, 3) },
  { op: "div", label: "broadcast", inputs: (r) => [r.tensor([2, 3]), r.awayFromZero([3])], fn: sc.div, secondOrder: true },
  { op: "mod", inputs: (r) => [r.tensor([2, 3], 0.1, 0.9), r.tensor([2, 3], 1.1, 1.9)], fn: sc.mod, secondOrder: true },
  { op: "floorDiv", inputs: (r) => [r.tensor([2, 3], 0.1, 0.9), r.tensor([2, 3], 1.1, 1.9)], fn: sc.floorDiv },
  { op: "pow", label: "broadcast", inputs: (r) => [r.tensor([2, 3], 0.5, 2), r.tensor([3], -1.5, 2)], fn: sc.pow, secondOrder: true },
  { op: "maximum", inputs: (r) => [r.tensor([2, 3]), r.tensor([2, 3])], fn: sc.maximum, secondOrder: true },
  { op: "minimum", label: "broadcast", inputs: (r) => [r.tensor([2, 3]), r.tensor([1, 3])], fn: sc.minimum, secondOrder: true },
  { op: "atan2", inputs: (r) => [r.awayFromZero([2, 3]), r.awayFromZero([2, 3])], fn: sc.atan2, secondOrder: true },
  { op: "squaredDifference", label: "broadcast", inputs: (r) => [r.tensor([2, 3]), r.tensor([3])], fn: sc.squaredDifference, secondOrder: true },

  {
    op: "where",
    label: "broadcast",
    inputs: (r) => [r.tensor([2, 3]), r.tensor([3])],
    fn: (a, b) => sc.where(sc.tensor([[true, false, true], [false, false, true]]), a, b),
    secondOrder: true,
  },
  { op: "cast", inputs: (r) => [r.tensor([2, 3])], fn: (x) => sc.cast(sc.cast(x, "float32"), "float64"), eps: 1e-2, tol: 1e-4 },
  { op: "identity", inputs: (r) => [r.tensor([2, 3])], fn: (x) => sc.identity(x) },
  { op: "stopGradient", inputs: (r) => [r.tensor([2, 3])], fn: (x) => sc.add(sc.mul(sc.stopGradient(x), 0), x) },
];
