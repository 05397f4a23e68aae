/**
 * Tensors met by JavaScript's own coercions (issue 11, point 8): outside converted code a tensor
 * converted to a number is a TensorCoercionError naming the user's line (never NaN or a
 * constant); inside converted code the constructs that would coerce are converted instead:
 * callbacks given to array methods and to Stagecraft's functions, f.call/apply/bind, built-ins
 * passed as values (Math.abs, Number), isNaN/Number called on tensors, switch on a concrete
 * tensor. A staged function whose return value a staged condition decides between a value and
 * undefined (a `return;`, or the end of the function) is an error rather than zeros.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import * as sc from "../../src/api/index.js";
import { autograph } from "../../src/autograph/api.js";
import { AutoGraphError } from "../../src/autograph/operators/index.js";

type Any = any;
const THIS_FILE = fileURLToPath(import.meta.url);
/** The values of a list of scalar tensors. */
const items = (r: unknown): unknown[] => (r as sc.Tensor[]).map((t) => t.item());
/** The value of a scalar tensor. */
const item = (r: unknown): unknown => (r as sc.Tensor).item();

/** Asserts a TensorCoercionError that points at this file. */
function coercionError(e: unknown): boolean {
  assert.ok(e instanceof sc.StagecraftError && e.name === "TensorCoercionError", `expected a TensorCoercionError, got ${String(e)}`);
  assert.equal(e.location?.file, THIS_FILE, e.message);
  assert.match(e.message, /tensor was converted to a JavaScript (number|primitive)/);
  return true;
}

test("a tensor converted to a number outside converted code is a TensorCoercionError at the user's line", () => {
  const t: Any = sc.scalar(2);
  const cases: [string, () => unknown][] = [
    ["t > 0", () => t > 0],
    ["-t", () => -t],
    ["t | 0", () => t | 0],
    ["t * 2", () => t * 2],
    ["t + 1", () => t + 1],
    ["t == 2", () => t == 2],
    ["isNaN(t)", () => isNaN(t)],
    ["Number(t)", () => Number(t)],
    ["Math.abs(t)", () => Math.abs(t)],
    ["+v (a Variable)", () => +(sc.variable(sc.scalar(1)) as Any)],
  ];
  for (const [what, f] of cases) assert.throws(f, coercionError, what);
  // Strings print the tensor (the library's own messages interpolate tensors too).
  assert.equal(`${t}`, t.toString());
  assert.equal(String(t), "Tensor(2., shape=[], dtype=float32)");
  // Truthiness cannot be intercepted: outside converted code a tensor is an object, always true
  // (docs/autograph.md); converted code reads it.
  const zero = sc.scalar(0);
  const plain = (x: unknown) => (x ? "then" : "else");
  assert.equal(plain(zero), "then");
  assert.equal(autograph(plain)(zero), "else");
});

test("a staged function with tensor operators it cannot convert raises the typed error, not NaN", () => {
  // `Symbol.toPrimitive` sees the symbolic tensor too: tracing without conversion stops here.
  const f = sc.stage((x: Any) => (x > 0 ? 1 : 2), { autograph: false });
  assert.throws(() => f(sc.scalar(1)), coercionError);
});

test("callbacks given to array methods inside a staged function are converted", () => {
  const viaMap = sc.stage((x: Any) => [1, 2].map((v) => v * x));
  assert.deepEqual(items(viaMap(sc.scalar(3))), [3, 6]);
  // A built-in passed as a value: its tensor-aware stand-in.
  const abs = sc.stage((x: Any) => [x, -x].map(Math.abs));
  assert.deepEqual(items(abs(sc.scalar(-3))), [3, 3]);
  const nums = autograph((xs: Any[]) => xs.map(Number));
  assert.deepEqual(nums([sc.scalar(true), 2]).map((v: Any) => (v instanceof sc.Tensor ? v.item() : v)), [1, 2]);
  // reduce and forEach with a closure updating a tensor.
  const total = sc.stage((x: Any) => {
    let s = x * 0;
    [1, 2, 3].forEach((k) => {
      s = s + k * x;
    });
    return [1, 2, 3].reduce((acc, k) => acc + k * x, s);
  });
  assert.equal(item(total(sc.scalar(2))), 24);
  // A predicate on eager tensors is read; on symbolic ones it is an error naming the method.
  const big = autograph((xs: Any[], t: Any) => xs.filter((v) => v > t));
  assert.deepEqual(big([sc.scalar(1), sc.scalar(5), sc.scalar(7)], sc.scalar(4)).map((v: Any) => v.item()), [5, 7]);
  const stagedFilter = sc.stage((x: Any) => [1, 2, 3].filter((v) => v > x).length);
  assert.throws(() => stagedFilter(sc.scalar(1)), (e: unknown) => e instanceof AutoGraphError && /callback given to filter returned a symbolic tensor/.test(e.message));
});

test("callbacks given to sc.cond, sc.whileLoop, sc.grad and tape.record from converted code are converted", () => {
  const f = autograph(
    (x: Any) => {
      const y = sc.cond(x > 0, () => (x > 1 ? x * 2 : x), () => -x);
      const [, n] = sc.whileLoop((v: Any, i: Any) => v < 100, (v: Any, i: Any) => [v * 2 + (i > 2 ? 1 : 0), i + 1], [y, sc.scalar(0, "int32")]);
      const g = sc.grad((z: Any): Any => (z > 0 ? z * z * 3 : -z))(x);
      const tape = new sc.GradientTape();
      tape.watch(x);
      const loss = tape.record(() => (x > 1 ? x * x * 2 : x));
      const [dx] = tape.gradient(loss, [x]);
      return [y, n, g, dx];
    },
    { scope: { sc } },
  );
  const [y, n, g, dx] = items(f(sc.scalar(3)));
  assert.deepEqual([y, n, g, dx], [6, 5, 18, 12]);
  const staged = sc.stage(f);
  assert.deepEqual(items(staged(sc.scalar(3))), [6, 5, 18, 12]);
  assert.deepEqual(items(staged(sc.scalar(0.5))), [0.5, 8, 3, 1]);
});

test("bound methods, f.call and f.apply in converted code use the converted function", () => {
  const obj = {
    k: 10,
    scale(x: Any) {
      return x > 0 ? x * this.k : -x;
    },
  };
  const f = autograph(
    (x: Any) => {
      const bound = obj.scale.bind(obj);
      return [bound(x), obj.scale.call(obj, x), obj.scale.apply(obj, [x]), [x].map(obj.scale, obj)[0]];
    },
    { scope: { obj } },
  );
  assert.deepEqual(items(f(sc.scalar(2))), [20, 20, 20, 20]);
  assert.deepEqual(items(f(sc.scalar(-2))), [2, 2, 2, 2]);
  // Bound functions made outside converted code, passed as values and called.
  const boundOutside = obj.scale.bind(obj);
  const halveAbove = function (this: unknown, a: Any, x: Any) {
    return x > a ? x / 2 : x;
  }.bind(null, 1);
  const staged = sc.stage((x: Any) => [...[x].map(boundOutside), halveAbove(x)]);
  assert.deepEqual(items(staged(sc.scalar(3))), [30, 1.5]);
  assert.deepEqual(items(staged(sc.scalar(-3))), [3, -3]);
});

test("isNaN, isFinite, Number and Boolean called on tensors in converted code compute on the tensor", () => {
  const f = autograph((x: Any) => [isNaN(x), Number.isNaN(x), isFinite(x), Number.isFinite(x), Number.isInteger(x), Number(x), Boolean(x)]);
  const r = (f(sc.tensor([NaN, 1.5, Infinity, 0, 2]) as Any) as Any[]).map((t: sc.Tensor) => t.arraySync());
  assert.deepEqual(r, [
    [true, false, false, false, false],
    [true, false, false, false, false],
    [false, true, false, true, true],
    [false, true, false, true, true],
    [false, false, false, true, true],
    [NaN, 1.5, Infinity, 0, 2],
    [true, true, true, false, true],
  ]);
  assert.deepEqual(f(2), [false, false, true, true, true, 2, true], "JS values: the built-ins themselves");
});

test("switch on a concrete tensor reads its value; on a symbolic one it is an error naming the construct", () => {
  const pick = (x: Any) => {
    switch (x) {
      case 1:
        return "one";
      case 2:
        return "two";
      default:
        return "other";
    }
  };
  const converted = autograph(pick);
  assert.equal(converted(sc.scalar(2, "int32")), "two");
  assert.equal(converted(sc.scalar(5)), "other");
  assert.equal(pick(sc.scalar(2) as Any), "other", "natively a tensor never equals a case");
  const staged = sc.stage((x: Any) => {
    switch (x) {
      case 1:
        return x * 2;
      default:
        return x;
    }
  });
  assert.throws(() => staged(sc.scalar(1)), (e: unknown) => e instanceof AutoGraphError && /switch on a symbolic float32\[\] tensor/.test(e.message) && e.location?.file === THIS_FILE);
});

test("a staged return decided between a value and undefined is an error, not zeros; messages name no generated variable", () => {
  const fallsOff = sc.stage((x: Any) => {
    if (x > 0) return x;
  });
  assert.throws(() => fallsOff(sc.scalar(-3)), (e: unknown) => e instanceof AutoGraphError && /reaches its end \(returning undefined\)/.test(e.message) && !/\$ret/.test(e.message));
  const bareReturn = sc.stage((x: Any) => {
    if (x > 0) return x;
    return;
  });
  assert.throws(() => bareReturn(sc.scalar(-3)), (e: unknown) => e instanceof AutoGraphError && /returns undefined in one branch/.test(e.message) && !/\$retval/.test(e.message));
  const inLoop = sc.stage((x: Any) => {
    for (const v of [1, 2, 3]) {
      if (x > v) return x * v;
    }
  });
  assert.throws(() => inLoop(sc.scalar(2)), (e: unknown) => e instanceof AutoGraphError && !/\$/.test(e.message));
  const strings = sc.stage((x: Any) => {
    if (x > 0) return "pos";
    return "neg";
  });
  assert.throws(() => strings(sc.scalar(1)), (e: unknown) => e instanceof AutoGraphError && /the return value holds different JavaScript values/.test(e.message) && !/\$retval/.test(e.message));
  // Every path returns a value: fine, and an endless loop left only by return is not "the end".
  const ok = sc.stage((x: Any) => {
    while (true) {
      if (x > 10) return x;
      x = x * 2;
    }
  });
  assert.equal(item(ok(sc.scalar(3))), 12);
  // JS values: the function returns undefined natively and converted.
  const plain = autograph((x: number) => {
    if (x > 0) return x;
  });
  assert.equal(plain(-1), undefined);
  assert.equal(plain(2), 2);
});
