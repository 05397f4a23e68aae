/**
 * Constructs TensorFlow's AutoGraph stages that were refused (issue 11, "Parity"), translated
 * from its reference tests: a variable first assigned inside a staged loop and used after it
 * (the graph checks that the loop ran), an object that gains a key inside a staged loop, array
 * element writes at a symbolic index, `pop` and nested lists in staged loops, and a staged
 * conditional that chooses between two closures and calls the result (differentiable, as in
 * Myia). Each runs staged and must equal the same program run natively on numbers.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as sc from "../../src/api/index.js";
import { AutoGraphError } from "../../src/autograph/operators/index.js";

type Any = any;

/** Tensors (and arrays / objects of them) as plain numbers. */
function plain(x: unknown): unknown {
  if (x instanceof sc.Tensor) return x.arraySync();
  if (Array.isArray(x)) return x.map(plain);
  if (x !== null && typeof x === "object") return Object.fromEntries(Object.entries(x).map(([k, v]) => [k, plain(v)]));
  return x;
}

/** The staged function on tensor inputs gives what the function gives natively on numbers. */
function sameAsNative(fn: (...a: Any[]) => unknown, inputs: number[][], dtypes: sc.DType[] = []): void {
  const staged = sc.stage(fn);
  for (const args of inputs) {
    const native = fn(...args);
    const got = staged(...args.map((a, i) => sc.scalar(a, dtypes[i] ?? "float64")));
    assert.deepEqual(plain(got), plain(native), `for ${JSON.stringify(args)}`);
  }
  assert.equal(staged.traceCount, 1, "one trace for every input");
}

test("a variable first assigned inside a staged loop is usable after it; the graph checks that the loop ran", () => {
  const f = (x: Any) => {
    let y;
    let n = 0;
    while (x < 10) {
      y = x * 2;
      x = x + 3;
      n++;
    }
    return [y, n];
  };
  sameAsNative(f, [[1], [8], [9.5]]);
  const staged = sc.stage(f);
  assert.throws(
    () => staged(sc.scalar(20, "float64")),
    (e: unknown) => e instanceof AutoGraphError && /variable y gets its first value inside a staged while loop \(at .*autograph\/parity\.test\.ts:\d+:\d+\), which ran zero times/.test((e as Error).message),
  );
  // Differentiable through the loop: dy/dx = 2 (y = 2 * (x + 3k)).
  const g = sc.grad((x: Any) => (staged(x) as Any)[0])(sc.scalar(1, "float64"));
  assert.equal(g.item(), 2);
});

test("an object that gains a key inside a staged loop", () => {
  sameAsNative(
    (x: Any) => {
      const o: Any = { a: x };
      while (x < 10) {
        o.b = x * 2;
        o.inner = { c: x + 1 };
        x = x + 3;
      }
      return o;
    },
    [[1], [7]],
  );
});

test("array element writes at a symbolic index, pop, and nested lists in staged loops", () => {
  // Writes at the loop counter (a symbolic index): the array becomes a tensor list.
  sameAsNative(
    (n: Any) => {
      let xs: Any = [0, 0, 0, 0];
      for (let i = 0; i < n; i++) xs[i] = i * 10 + 1;
      return xs;
    },
    [[2], [4], [0]],
    ["int32"],
  );
  // pop until a sum is reached.
  sameAsNative(
    (x: Any) => {
      let xs: Any = [x, x * 2, x * 3];
      let s = x * 0;
      while (s < 4) s = s + xs.pop();
      return s;
    },
    [[1], [0.75]],
  );
  // Lists of lists.
  sameAsNative(
    (n: Any) => {
      let rows: Any = [];
      for (let i = 0; i < n; i++) {
        const row = [];
        for (let j = 0; j < 3; j++) row.push(i * 10 + j);
        rows.push(row);
      }
      return rows;
    },
    [[1], [3]],
    ["int32"],
  );
});

test("a staged conditional that chooses between two closures and calls the result; its gradient", () => {
  const f = (x: Any) => {
    const g = (v: Any) => v * v * 3;
    const h = (v: Any) => v - 1;
    const chosen = x > 0 ? g : h;
    let k = (v: Any) => v * 2;
    if (x < -1) k = (v: Any) => -v;
    return chosen(x) + k(x);
  };
  sameAsNative(f, [[2], [-0.5], [-3]]);
  const staged = sc.stage(f);
  for (const [x, dx] of [
    [2, 6 * 2 + 2],
    [-0.5, 1 + 2],
    [-3, 1 - 1],
  ] as const) {
    assert.equal(sc.grad(staged as Any)(sc.scalar(x, "float64")).item(), dx, `d/dx at ${x}`);
  }
});
