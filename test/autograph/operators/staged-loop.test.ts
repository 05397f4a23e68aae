/**
 * Staged loops (operators/staged-loop.ts): while and for...of over symbolic tensors and ranges,
 * loop variables retyped or relaxed, variables first assigned inside, break and return flags,
 * nests and JS values carried.
 * The calls are written as the source transform generates them (docs/autograph.md).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as sc from "../../../src/api/index.js";
import { ag, AutoGraphError } from "../../../src/autograph/operators/index.js";
import { LOC, graphOps, f32, type Any } from "./helpers.js";

/** i = 0; acc = 1; while (i < n) { acc = acc * 2; i++ } */
function powers(n: sc.Tensor) {
  let i: Any = 0;
  let acc: Any = 1;
  ag.whileStmt(
    () => ag.lt(i, n),
    () => {
      acc = ag.mul(acc, 2);
      i = ag.add(i, 1);
    },
    () => [i, acc],
    (s) => ([i, acc] = s),
    ["i", "acc"],
    LOC,
  );
  return [i, acc];
}

test("staged while: a while node; JS numbers the body changes become tensors; results equal eager", () => {
  const staged = sc.stage(powers);
  for (const n of [0, 1, 5, 10]) {
    const e = powers(sc.scalar(n)) as Any[];
    const s = staged(sc.scalar(n)) as sc.Tensor[];
    assert.equal(s[0]!.item(), typeof e[0] === "number" ? e[0] : e[0].item());
    assert.equal(s[1]!.item(), typeof e[1] === "number" ? e[1] : e[1].item());
  }
  assert.equal(staged.traceCount, 1);
  assert.ok(graphOps(staged, sc.scalar(3)).includes("while"));
  assert.deepEqual(staged(sc.scalar(10)).map((t: sc.Tensor) => t.dtype), ["int32", "int32"], "integer JS numbers become int32");
});

test("staged while: a JS number accumulating float tensors is retyped (and broadcast) from what the body gives", () => {
  const f = (x: sc.Tensor, n: sc.Tensor) => {
    let i: Any = 0;
    let acc: Any = 0;
    ag.whileStmt(
      () => ag.lt(i, n),
      () => {
        acc = ag.add(acc, ag.mul(x, i));
        i = ag.add(i, 1);
      },
      () => [i, acc],
      (s) => ([i, acc] = s),
      ["i", "acc"],
      LOC,
    );
    return acc;
  };
  const staged = sc.stage(f);
  const x = sc.tensor([1, 2, 3], "float64");
  const s = staged(x, sc.scalar(4)) as sc.Tensor;
  assert.equal(s.dtype, "float64");
  assert.deepEqual(s.arraySync(), (f(x, sc.scalar(4)) as sc.Tensor).arraySync());
  assert.deepEqual(s.arraySync(), [6, 12, 18]);
});

test("JS numbers that become tensors are weakly typed: they take the dtype of the tensors they meet in branches and inner loops", () => {
  // let m = -Infinity; for (const v of xs) if (v > m) m = v; return m
  const maxOf = (xs: sc.Tensor) => {
    let m: Any = ag.neg(Infinity);
    ag.forOf(xs, (v: Any) => {
      ag.ifStmt(ag.gt(v, m), () => (m = v), null, () => [m], (st) => ([m] = st), ["m"], LOC);
    }, () => [m], (st) => ([m] = st), ["m"], LOC);
    return m;
  };
  const xs = sc.tensor([3, -1, 7.25, 2], "float64");
  const r = sc.stage(maxOf)(xs) as sc.Tensor;
  assert.equal(r.dtype, "float64");
  assert.equal(r.item(), 7.25);
  assert.equal((maxOf(xs) as sc.Tensor).item(), 7.25);
  // let s = 0, k = 1; for (row of m) for (v of row) { s += v * k; k++ }
  const weighted = (m: sc.Tensor) => {
    let s: Any = 0;
    let k: Any = 1;
    ag.forOf(m, (row: Any) => {
      ag.forOf(row, (v: Any) => {
        s = ag.add(s, ag.mul(v, k));
        k = ag.add(k, 1);
      }, () => [s, k], (st) => ([s, k] = st), ["s", "k"], LOC);
    }, () => [s, k], (st) => ([s, k] = st), ["s", "k"], LOC);
    return [s, k];
  };
  const m = sc.tensor([[1, 2], [3, 4.5]], "float64");
  const got = sc.stage(weighted)(m) as sc.Tensor[];
  assert.equal(got[0]!.dtype, "float64");
  assert.equal(got[0]!.item(), 1 + 4 + 9 + 18);
  assert.equal(got[1]!.dtype, "int32", "the counter stays an integer");
  assert.equal(got[1]!.item(), 5);
  // a number in one branch and a float64 tensor in the other
  const pick = sc.stage((x: sc.Tensor) => {
    let y: Any = 0;
    ag.ifStmt(ag.gt(x, 0), () => (y = ag.mul(x, 0.5)), () => (y = ag.sub(y, 1)), () => [y], (st) => ([y] = st), ["y"], LOC);
    return y;
  });
  assert.equal((pick(sc.scalar(3, "float64")) as sc.Tensor).item(), 1.5);
  assert.equal((pick(sc.scalar(-3, "float64")) as sc.Tensor).item(), -1);
  assert.equal((pick(sc.scalar(-3, "float64")) as sc.Tensor).dtype, "float64");
});

test("staged while: dtype and shape changes of a loop variable are errors naming it and the loc; relaxShape allows shapes to change", () => {
  const dtypeChange = sc.stage((x: sc.Tensor, n: sc.Tensor) => {
    let i: Any = 0;
    let acc: Any = x;
    ag.whileStmt(() => ag.lt(i, n), () => {
      acc = sc.cast(acc, "int32");
      i = ag.add(i, 1);
    }, () => [i, acc], (s) => ([i, acc] = s), ["i", "acc"], "loop.ts:3:5");
    return acc;
  });
  assert.throws(
    () => dtypeChange(f32([1]), sc.scalar(2)),
    (e: Error) => e instanceof AutoGraphError && /^variable acc changes dtype from float32 to int32 inside a staged while loop \(at loop\.ts:3:5\)/.test(e.message),
  );
  const grow = (x: sc.Tensor, n: sc.Tensor, relax: boolean) => {
    let i: Any = 0;
    let acc: Any = relax ? ag.relaxShape(x) : x;
    ag.whileStmt(() => ag.lt(i, n), () => {
      acc = sc.concat([acc, acc]);
      i = ag.add(i, 1);
    }, () => [i, acc], (s) => ([i, acc] = s), ["i", "acc"], "loop.ts:8:5");
    return acc;
  };
  assert.throws(
    () => sc.stage(grow)(f32([1]), sc.scalar(2), false),
    (e: Error) => e instanceof AutoGraphError && /^variable acc changes shape from \[1\] to \[2\] inside a staged while loop \(at loop\.ts:8:5\).*relaxShape\(acc\)/.test(e.message),
  );
  const relaxed = sc.stage(grow);
  assert.deepEqual((relaxed(f32([1, 2]), sc.scalar(2), true) as sc.Tensor).arraySync(), [1, 2, 1, 2, 1, 2, 1, 2]);
  // the shapeInvariants option does the same by name
  const withOpt = sc.stage((x: sc.Tensor, n: sc.Tensor) => {
    let i: Any = 0;
    let acc: Any = x;
    ag.whileStmt(() => ag.lt(i, n), () => {
      acc = sc.concat([acc, x]);
      i = ag.add(i, 1);
    }, () => [i, acc], (s) => ([i, acc] = s), ["i", "acc"], LOC, { shapeInvariants: { acc: [null] } });
    return acc;
  });
  assert.deepEqual((withOpt(f32([3]), sc.scalar(3)) as sc.Tensor).arraySync(), [3, 3, 3, 3]);
});

test("staged while: variables first assigned inside the loop, JS values changed by the body, and test side effects are errors", () => {
  const firstInside = sc.stage((n: sc.Tensor) => {
    let i: Any = 0;
    let last: Any;
    ag.whileStmt(() => ag.lt(i, n), () => {
      last = ag.mul(i, 2);
      i = ag.add(i, 1);
    }, () => [i, last], (s) => ([i, last] = s), ["i", "last"], "loop.ts:20:1");
    return last;
  });
  // It starts from zeros, and the graph checks that the loop ran (as TensorFlow's AutoGraph does).
  assert.equal(firstInside(sc.scalar(3)).item(), 4);
  assert.throws(
    () => firstInside(sc.scalar(0)),
    (e: Error) => e instanceof AutoGraphError && e.message.startsWith("variable last gets its first value inside a staged while loop (at loop.ts:20:1), which ran zero times"),
  );
  // A value that cannot start from zeros (partly unknown shape) is still refused.
  const unknownShape = sc.stage(
    (n: sc.Tensor, x: sc.Tensor) => {
      let i: Any = 0;
      let last: Any;
      ag.whileStmt(() => ag.lt(i, n), () => {
        last = x;
        i = ag.add(i, 1);
      }, () => [i, last], (s) => ([i, last] = s), ["i", "last"], "loop.ts:20:1");
      return last;
    },
    { inputSignature: [sc.spec([], "float32"), sc.spec([null], "float32")] },
  );
  assert.throws(
    () => unknownShape(sc.scalar(3), sc.tensor([1, 2])),
    (e: Error) => e instanceof AutoGraphError && e.message === "variable last is first assigned inside a staged while loop (at loop.ts:20:1) and used after it; assign it before the loop",
  );
  const jsChange = sc.stage((n: sc.Tensor) => {
    let i: Any = 0;
    let s = "";
    ag.whileStmt(() => ag.lt(i, n), () => {
      s = s + "x";
      i = ag.add(i, 1);
    }, () => [i, s], (v) => ([i, s] = v as [Any, string]), ["i", "s"], "loop.ts:30:1");
    return i;
  });
  assert.throws(() => jsChange(sc.scalar(3)), (e: Error) => e instanceof AutoGraphError && /variable s holds the string "" and is changed to the string "x"/.test(e.message) && /loop\.ts:30:1/.test(e.message));
  const testEffect = sc.stage((n: sc.Tensor) => {
    let i: Any = 0;
    ag.whileStmt(() => ag.lt((i = ag.add(i, 1)), n), () => {}, () => [i], (v) => ([i] = v), ["i"], "loop.ts:40:1");
    return i;
  });
  assert.throws(() => testEffect(sc.scalar(3)), (e: Error) => e instanceof AutoGraphError && /the condition of a staged while loop \(at loop\.ts:40:1\) assigns variable i/.test(e.message));
});

test("staged for...of over a symbolic tensor iterates its leading axis with a counter and gather", () => {
  const f = (xs: sc.Tensor) => {
    let acc: Any = sc.zeros([2]);
    let count: Any = 0;
    ag.forOf(
      xs,
      (row: Any) => {
        acc = ag.add(acc, ag.mul(row, row));
        count = ag.add(count, 1);
      },
      () => [acc, count],
      (s) => ([acc, count] = s),
      ["acc", "count"],
      LOC,
    );
    return [acc, count];
  };
  const staged = sc.stage(f);
  const xs = sc.tensor([[1, 2], [3, 4], [5, 6]]);
  const e = f(xs) as Any[];
  const s = staged(xs) as sc.Tensor[];
  assert.deepEqual(s[0]!.arraySync(), e[0].arraySync());
  assert.deepEqual(s[0]!.arraySync(), [35, 56]);
  assert.equal(s[1]!.item(), 3);
  const ops = graphOps(staged, xs);
  assert.ok(ops.includes("while") && ops.includes("gather"));
  // unknown leading dimension: the trip count is read when the graph runs
  const dyn = sc.stage(f, { inputSignature: [sc.spec([null, 2])] });
  assert.deepEqual((dyn(sc.tensor([[1, 1], [2, 2]])) as sc.Tensor[])[0]!.arraySync(), [5, 5]);
  assert.deepEqual((dyn(xs) as sc.Tensor[])[0]!.arraySync(), [35, 56]);
  assert.equal(dyn.traceCount, 1);
  assert.ok(graphOps(dyn, xs).includes("dimSize"));
});

test("staged for...of over range(n) with a symbolic n is a counter loop (positive and negative steps)", () => {
  const f = (n: sc.Tensor) => {
    let total: Any = 0;
    ag.forOf(ag.range(n), (k: Any) => (total = ag.add(total, ag.mul(k, k))), () => [total], (s) => ([total] = s), ["total"], LOC);
    let down: Any = 0;
    ag.forOf(ag.range(n, 0, -2), (k: Any) => (down = ag.add(down, k)), () => [down], (s) => ([down] = s), ["down"], LOC);
    return [total, down];
  };
  const staged = sc.stage(f);
  for (const n of [0, 1, 4, 7]) {
    const s = staged(sc.scalar(n, "int32")) as sc.Tensor[];
    let t = 0;
    for (let k = 0; k < n; k++) t += k * k;
    let d = 0;
    for (let k = n; k > 0; k -= 2) d += k;
    assert.equal(s[0]!.item(), t);
    assert.equal(s[1]!.item(), d);
    const e = f(sc.scalar(n, "int32")) as Any[];
    assert.equal(typeof e[0] === "number" ? e[0] : e[0].item(), t);
  }
  assert.equal(graphOps(staged, sc.scalar(3, "int32")).filter((o) => o === "while").length, 2);
  const sym = sc.stage((n: sc.Tensor) => [...ag.range(n)]);
  assert.throws(() => sym(sc.scalar(2)), (e: Error) => e instanceof AutoGraphError && /converted for\.\.\.of/.test(e.message));
});

test("break and return inside staged loops (transform-lowered flags, $-named generated variables)", () => {
  // for (const row of xs) { if (sum(row) > limit) break; acc = acc + row }
  const brk = (xs: sc.Tensor, limit: sc.Tensor) => {
    let acc: Any = sc.zeros([2]);
    let $brk: Any = false;
    ag.forOf(
      xs,
      (row: Any) => {
        ag.ifStmt(ag.gt(sc.sum(row), limit), () => ($brk = true), () => (acc = ag.add(acc, row)), () => [$brk, acc], (s) => ([$brk, acc] = s), ["$brk", "acc"], LOC);
      },
      () => [$brk, acc],
      (s) => ([$brk, acc] = s),
      ["$brk", "acc"],
      LOC,
      { extraTest: () => ag.not($brk) },
    );
    return acc;
  };
  const xs = sc.tensor([[1, 1], [2, 2], [9, 9], [1, 1]]);
  const stagedBrk = sc.stage(brk);
  for (const limit of [100, 5, 1]) {
    assert.deepEqual((stagedBrk(xs, sc.scalar(limit)) as sc.Tensor).arraySync(), (brk(xs, sc.scalar(limit)) as sc.Tensor).arraySync(), `limit ${limit}`);
  }
  // function first(xs) { for (const row of xs) { if (sum(row) > 3) return row; } return zeros }
  const first = (rows: sc.Tensor) => {
    let $ret: Any = false;
    let $retval: Any;
    ag.forOf(
      rows,
      (row: Any) => {
        ag.ifStmt(ag.gt(sc.sum(row), 3), () => {
          $ret = true;
          $retval = row;
        }, null, () => [$ret, $retval], (s) => ([$ret, $retval] = s), ["$ret", "$retval"], LOC);
      },
      () => [$ret, $retval],
      (s) => ([$ret, $retval] = s),
      ["$ret", "$retval"],
      LOC,
      { extraTest: () => ag.not($ret) },
    );
    ag.ifStmt(ag.not($ret), () => {
      $ret = true;
      $retval = sc.full([2], -1);
    }, null, () => [$ret, $retval], (s) => ([$ret, $retval] = s), ["$ret", "$retval"], LOC);
    return $retval;
  };
  const stagedFirst = sc.stage(first);
  for (const data of [[[1, 1], [2, 2], [3, 3]], [[0, 0], [1, 1]], [[5, 0], [9, 9]]]) {
    const t = sc.tensor(data);
    assert.deepEqual((stagedFirst(t) as sc.Tensor).arraySync(), (first(t) as sc.Tensor).arraySync(), JSON.stringify(data));
  }
  assert.ok(graphOps(stagedFirst, sc.tensor([[1, 1]])).includes("while"));
  // ... and when the returned value is an array: `return [row, sum(row)]` inside the loop
  const firstPair = (rows: sc.Tensor) => {
    let $ret: Any = false;
    let $retval: Any;
    ag.forOf(
      rows,
      (row: Any) => {
        ag.ifStmt(ag.gt(sc.sum(row), 3), () => {
          $ret = true;
          $retval = [row, sc.sum(row)];
        }, () => {}, () => [$ret, $retval], (s) => ([$ret, $retval] = s), ["$ret", "$retval"], LOC);
      },
      () => [$ret, $retval],
      (s) => ([$ret, $retval] = s),
      ["$ret", "$retval"],
      LOC,
      () => ag.not($ret),
    );
    ag.ifStmt(ag.not($ret), () => {
      $ret = true;
      $retval = [sc.full([2], -1), 0];
    }, () => {}, () => [$ret, $retval], (s) => ([$ret, $retval] = s), ["$ret", "$retval"], LOC);
    return $retval;
  };
  const stagedPair = sc.stage(firstPair);
  for (const data of [[[1, 1], [2, 2], [3, 3]], [[0, 0], [1, 1]]]) {
    const t = sc.tensor(data);
    const e = firstPair(t) as Any[];
    const got = stagedPair(t) as sc.Tensor[];
    assert.deepEqual(got[0]!.arraySync(), e[0].arraySync());
    assert.equal(got[1]!.item(), typeof e[1] === "number" ? e[1] : e[1].item());
  }
  // A symbolic break flag in a loop over a JS array guards the remaining iterations.
  const overArray = (x: sc.Tensor) => {
    let acc: Any = 0;
    let $brk: Any = false;
    ag.forOf(
      [1, 2, 3, 4],
      (k: number) => {
        ag.ifStmt(ag.gt(ag.mul(x, k), 5), () => ($brk = true), () => (acc = ag.add(acc, k)), () => [$brk, acc], (s) => ([$brk, acc] = s), ["$brk", "acc"], LOC);
      },
      () => [$brk, acc],
      (s) => ([$brk, acc] = s),
      ["$brk", "acc"],
      LOC,
      { extraTest: () => ag.not($brk) },
    );
    return acc;
  };
  const stagedArr = sc.stage(overArray);
  for (const x of [0.5, 2, 10]) {
    const e = overArray(sc.scalar(x));
    assert.equal((stagedArr(sc.scalar(x)) as sc.Tensor).item(), typeof e === "number" ? e : (e as sc.Tensor).item(), `x=${x}`);
  }
});

test("staged loops carry nests, variables and invariant JS values", () => {
  const w = sc.variable(sc.tensor([1, 2]));
  const f = (n: sc.Tensor) => {
    const st = { m: sc.zeros([2]), steps: 0, tag: "t" };
    let cur: Any = w;
    let i: Any = 0;
    ag.whileStmt(
      () => ag.lt(i, n),
      () => {
        st.m = ag.add(st.m, cur) as Any;
        st.steps = ag.add(st.steps, 1) as Any;
        cur = ag.mul(cur, 2);
        i = ag.add(i, 1);
      },
      () => [st, cur, i],
      (s) => ([, cur, i] = s),
      ["st", "cur", "i"],
      LOC,
    );
    return [st.m, st.steps, st.tag, cur];
  };
  const staged = sc.stage(f);
  const s = staged(sc.scalar(3)) as Any[];
  const e = f(sc.scalar(3)) as Any[];
  assert.deepEqual(s[0].arraySync(), e[0].arraySync());
  assert.deepEqual(s[0].arraySync(), [7, 14]);
  assert.equal(s[1].item(), 3);
  assert.equal(s[2], "t");
  assert.deepEqual(s[3].arraySync(), [8, 16]);
  w.assign(sc.tensor([10, 0]));
  assert.deepEqual((staged(sc.scalar(1)) as Any[])[0].arraySync(), [10, 0], "the variable is read when the graph runs");
});
