/**
 * Weak typing through staged control flow (issue 11, point 9): a JS number a staged loop or
 * conditional carries becomes a weakly typed tensor that behaves as the JS number would: it
 * takes the dtype of the strongly typed tensors it meets (a loop counter returned beside a
 * float32 tensor is float32), arithmetic among such numbers is JavaScript's (integers stay
 * int32; fractions are float64, so `j * 0.1` is not rounded to float32 before it meets a
 * tensor), and messages name no variable the transform introduced.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as sc from "../../src/api/index.js";
import { autograph } from "../../src/autograph/api.js";
import { AutoGraphError } from "../../src/autograph/operators/index.js";

type Any = any;
const values = (r: unknown): unknown[] => (r as sc.Tensor[]).map((t) => t.item());

test("a loop counter returned beside a float tensor takes the float dtype (was: a dtype error naming $retval)", () => {
  const f = (x: Any) => {
    let i = 0;
    while (x < 100) {
      if (x > 5) return i;
      x = x + 1;
      i++;
    }
    return x;
  };
  const staged = sc.stage(f);
  for (const v of [2, 200, 5.5]) {
    const r = staged(sc.scalar(v)) as sc.Tensor;
    assert.equal(r.dtype, "float32");
    assert.equal(r.item(), f(v), `x = ${v}`);
  }
  // A counter merged with a float in a conditional expression.
  const g = sc.stage((x: Any) => {
    let n = 0;
    while (x > 1) {
      x = x / 2;
      n++;
    }
    return x > 0.7 ? n : x;
  });
  const r = g(sc.scalar(10)) as sc.Tensor;
  assert.equal(r.dtype, "float32");
  assert.equal(r.item(), 0.625);
});

test("JS numbers carried through a staged loop compute as JS numbers: j * 0.1 is not rounded to float32", () => {
  const sum = (n: Any) => {
    let acc: Any = sc.scalar(0, "float64");
    let j = 0;
    while (j < n) {
      acc = acc + j * 0.1;
      j++;
    }
    return [acc, j * 0.1, j / 4, Math.sqrt(j)];
  };
  const native = (n: number) => {
    let acc = 0;
    let j = 0;
    while (j < n) {
      acc = acc + j * 0.1;
      j++;
    }
    return [acc, j * 0.1, j / 4, Math.sqrt(j)];
  };
  const staged = sc.stage(sum);
  const out = staged(sc.scalar(7, "int32")) as sc.Tensor[];
  assert.deepEqual(out.map((t) => t.dtype), ["float64", "float64", "float64", "float64"]);
  assert.deepEqual(values(out), native(7), "exactly the JS numbers");
  // Meeting a float32 tensor, the weak number becomes float32 as the JS number would (one rounding).
  const scaled = sc.stage((x: Any, n: Any) => {
    let j = 0;
    let acc = x * 0;
    while (j < n) {
      acc = acc + x.mul(j * 0.1);
      j++;
    }
    return acc;
  });
  const x = sc.scalar(3);
  const got = scaled(x, sc.scalar(4, "int32")) as unknown as sc.Tensor;
  let eager = sc.scalar(0);
  for (let j = 0; j < 4; j++) eager = eager.add(x.mul(j * 0.1));
  assert.equal(got.dtype, "float32");
  assert.equal(got.item(), eager.item());
});

test("a number a staged conditional gives stays weak: it takes the dtype of the tensors it meets later", () => {
  const f = sc.stage((x: Any, y: Any) => {
    const k = x > 0 ? 2 : 0.5; // weak: int32 and float64 combine to float64
    return [k, y * k];
  });
  const [k, yk] = f(sc.scalar(-1), sc.tensor([1, 2], "float32")) as unknown as sc.Tensor[];
  assert.equal(k!.dtype, "float64");
  assert.equal(k!.item(), 0.5);
  assert.equal(yk!.dtype, "float32");
  assert.deepEqual(yk!.arraySync(), [0.5, 1]);
});

test("messages about staged state never name the transform's variables ($retval, $brk, $ret)", () => {
  const programs: [string, (x: Any) => unknown][] = [
    [
      "a string returned under a tensor condition",
      (x: Any) => {
        if (x > 0) return "pos";
        return x;
      },
    ],
    [
      "a break flag and a return value changing structure",
      (x: Any) => {
        for (const k of [1, 2, 3]) {
          if (x > k) break;
          if (x < -k) return [x, x];
        }
        return x;
      },
    ],
    [
      "a number that becomes an array in a loop",
      (x: Any) => {
        let i = 0;
        while (x > 0) {
          if (x > 5) return [i];
          x = x - 1;
          i++;
        }
        return i;
      },
    ],
  ];
  for (const [what, fn] of programs) {
    assert.throws(
      () => sc.stage(autograph(fn))(sc.scalar(3)),
      (e: unknown) => {
        assert.ok(e instanceof AutoGraphError || e instanceof sc.StagecraftError, `${what}: ${String(e)}`);
        assert.doesNotMatch((e as Error).message, /\$(retval|ret|brk|cont|counter|fab)\b/, what);
        return true;
      },
      what,
    );
  }
});

test("a JS number carried by a staged loop given to sc.scalar / sc.tensor / sc.full / sc.fullLike makes what the number makes (it was a ValueError)", () => {
  const loop = sc.stage((x: Any) => {
    let acc = x;
    let i = 0;
    while (sc.less(sc.scalar(i), 3)) {
      acc = acc + sc.full([2], i) + sc.fullLike(acc, i * 0.5) + sc.tensor(i);
      i = i + 1;
    }
    return acc;
  });
  function native(x: number[]): number[] {
    let acc = x.slice();
    let i = 0;
    while (i < 3) {
      acc = acc.map((a) => a + i + i * 0.5 + i);
      i = i + 1;
    }
    return acc;
  }
  const out = loop(sc.zeros([2]));
  assert.equal(out.dtype, "float32");
  assert.deepEqual(out.arraySync(), native([0, 0]));
  // a dtype given is the dtype made
  const f64 = sc.stage((x: Any) => {
    let i = 0;
    let acc = x;
    while ((sc.sum(acc) as Any) < 5) {
      acc = acc + sc.scalar(i, "float64");
      i = i + 1;
    }
    return acc;
  });
  const r = f64(sc.tensor([0.5], "float64"));
  assert.equal(r.dtype, "float64");
  assert.deepEqual(r.arraySync(), [6.5]);
});
