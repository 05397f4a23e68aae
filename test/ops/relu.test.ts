/**
 * relu's semantics: max(x, 0) that propagates NaN (as ONNX Relu, PyTorch, TensorFlow and JAX do)
 * and passes -0 through, the same eagerly (JavaScript kernel), staged (the compiled executor's
 * JavaScript and WebAssembly SIMD loops, alone and fused into a chain, as the last op) and in
 * the gradient (tape and graph AD, against float64 finite differences).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as sc from "../../src/api/index.js";

const SPECIAL = [NaN, -0, 0, -1, 2, 0.5, -1e-30, 1e30, Infinity, -Infinity];
/** relu by definition, independent of the library. */
const ref = (v: number): number => (Number.isNaN(v) ? NaN : v < 0 ? 0 : v);

function assertRelu(got: ArrayLike<number>, input: readonly number[], what: string, dtype: "float32" | "float64"): void {
  assert.equal(got.length, input.length, what);
  for (let i = 0; i < input.length; i++) {
    const want = dtype === "float32" ? Math.fround(ref(input[i]!)) : ref(input[i]!);
    // (Object.is: NaN is NaN, and -0 must stay -0)
    assert.ok(Object.is(got[i], want), `${what}: relu(${Object.is(input[i], -0) ? "-0" : input[i]}) is ${Object.is(got[i], -0) ? "-0" : got[i]}, expected ${Object.is(want, -0) ? "-0" : want}`);
  }
}

for (const dtype of ["float32", "float64"] as const) {
  test(`relu ${dtype}: NaN propagates and -0 passes through, eagerly and staged`, () => {
    const x = sc.tensor(SPECIAL, dtype);
    assertRelu(sc.relu(x).dataSync(), SPECIAL, "eager", dtype);
    assertRelu(x.relu().dataSync(), SPECIAL, "method", dtype);
    // relu as the staged function's last op, and inside a fused chain
    const last = sc.stage((t: sc.Tensor) => sc.relu(t));
    for (let i = 0; i < 3; i++) assertRelu(last(x).dataSync(), SPECIAL, `staged (call ${i})`, dtype);
    const chain = sc.stage((t: sc.Tensor) => sc.relu(t.mul(1)).add(0));
    assertRelu(chain(x).dataSync(), SPECIAL.map((v) => v * 1 + 0), "staged chain", dtype);
  });

  test(`relu ${dtype}: the executor's vector loops over large arrays keep NaN and -0`, () => {
    const n = 4099; // (not a multiple of the vector width: the tail too)
    const vals = Array.from({ length: n }, (_, i) => SPECIAL[i % SPECIAL.length]! * ((i % 7) - 3));
    const x = sc.tensor(vals, dtype);
    const f = sc.stage((t: sc.Tensor) => sc.relu(t.add(t)).mul(0.5));
    const want = vals.map((v) => ref(ref((v + v)) * 0.5));
    for (let i = 0; i < 3; i++) {
      const got = f(x).dataSync();
      for (let k = 0; k < n; k++) assert.ok(Object.is(got[k], want[k]) || Object.is(got[k], dtype === "float32" ? Math.fround(want[k]!) : want[k]), `call ${i}: element ${k} (${vals[k]}): ${got[k]} vs ${want[k]}`);
    }
    assertRelu(sc.relu(x).dataSync(), vals, "eager, large", dtype);
  });
}

test("relu int32: integers clamp at 0", () => {
  const x = sc.tensor([-2147483648, -1, 0, 1, 2147483647], "int32");
  assert.deepEqual([...sc.relu(x).dataSync()], [0, 0, 0, 1, 2147483647]);
  assert.deepEqual([...sc.stage((t: sc.Tensor) => sc.relu(t))(x).dataSync()], [0, 0, 0, 1, 2147483647]);
});

test("relu's gradient: tape = graph AD = float64 finite differences; NaN inputs give NaN in the loss, not a silent 0", () => {
  const vals = [-2, -0.5, 0.25, 1.5, 3];
  const x = sc.tensor(vals, "float64");
  const loss = (t: sc.Tensor) => sc.relu(t.mul(t).sub(1)).sum();
  const tape = sc.grad(loss)(x) as sc.Tensor;
  const staged = sc.stage((t: sc.Tensor) => sc.grad(loss)(t) as sc.Tensor)(x);
  const h = 1e-6;
  for (let i = 0; i < vals.length; i++) {
    const f = (d: number) => loss(sc.tensor(vals.map((v, k) => (k === i ? v + d : v)), "float64")).dataSync()[0]!;
    const fd = (f(h) - f(-h)) / (2 * h);
    assert.ok(Math.abs(tape.dataSync()[i]! - fd) < 1e-6, `tape ${i}: ${tape.dataSync()[i]} vs ${fd}`);
    assert.ok(Math.abs(staged.dataSync()[i]! - fd) < 1e-6, `graph AD ${i}: ${staged.dataSync()[i]} vs ${fd}`);
  }
  // a diverged value reaches the loss (relu used to turn it into 0)
  const diverged = sc.tensor([1, NaN, -3], "float64");
  assert.ok(Number.isNaN(loss(diverged).dataSync()[0]!));
  assert.ok(Number.isNaN(sc.stage(loss)(diverged).dataSync()[0]!));
});
