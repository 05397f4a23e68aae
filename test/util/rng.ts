/** Seeded test data (mulberry32): tests are deterministic. */
import * as sc from "../../src/api/index.js";
import { mulberry32 } from "./mulberry32.js";

export class Rng {
  readonly next: () => number;
  constructor(seed = 1234) {
    this.next = mulberry32(seed);
  }
  uniform(lo = -1, hi = 1): number {
    return lo + (hi - lo) * this.next();
  }
  int(lo: number, hi: number): number {
    return lo + Math.floor(this.next() * (hi - lo));
  }
  /** A float64 tensor of uniform values in [lo, hi). */
  tensor(shape: number[], lo = -1, hi = 1, dtype: sc.DType = "float64"): sc.Tensor {
    const n = shape.reduce((a, b) => a * b, 1);
    return sc.tensor(Array.from({ length: n }, () => this.uniform(lo, hi)), dtype, shape);
  }
  /** Values bounded away from zero (|x| in [lo, hi]), random sign. */
  awayFromZero(shape: number[], lo = 0.3, hi = 1.5): sc.Tensor {
    const n = shape.reduce((a, b) => a * b, 1);
    return sc.tensor(Array.from({ length: n }, () => (this.next() < 0.5 ? -1 : 1) * this.uniform(lo, hi)), "float64", shape);
  }
}
