/**
 * What a list offers after staged loops and conditionals (issue 24): each operation on a list
 * built in a loop with a data-dependent trip count (tensor predicate), a loop with a static trip
 * count (for...of over a tensor of known length, staged), and a push inside an if on a tensor
 * predicate; lists of tensors and lists of JS numbers. Each row runs eagerly and under
 * `sc.stage` with AutoGraph: the same values, or a clear AutoGraphError naming the operation.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as sc from "../../src/api/index.js";
import { AutoGraphError } from "../../src/autograph/operators/index.js";

type Any = any;
/** A result as nested numbers: tensors read, arrays of tensors and numbers as their values. */
const numbers = (x: Any): Any => (x instanceof sc.Tensor ? x.arraySync() : Array.isArray(x) ? x.map(numbers) : x);

// Builders: each returns a list (the variable after a staged construct).
/* eslint-disable */
const builders: Record<string, string> = {
  // tensors, data-dependent trip count
  whileTensors: "const xs = []; let y = x; while (y < 20) { xs.push(y); y = y * 2; }",
  // JS numbers (a counter), data-dependent trip count
  whileNumbers: "const xs = []; let i = 0; let y = x; while (y < 20) { xs.push(i); i = i + 1; y = y * 2; }",
  // static trip count: a staged for...of over a tensor of known length
  forOfStatic: "const xs = []; for (const v of sc.stack([x, x + 1, x + 2])) { xs.push(v * 2); }",
  // a push inside an if on a tensor predicate
  ifPush: "const xs = [x]; if (x > 2) { xs.push(x + 1); }",
  ifPushNumbers: "const xs = [1]; if (x > 2) { xs.push(2); }",
};
const uses: Record<string, string> = {
  length: "return xs.length;",
  first: "return xs[0];",
  last: "return xs[xs.length - 1];",
  atEnd: "return xs.at(-1);",
  slice: "return sc.stack(xs.slice(1));",
  forOf: "let s = 0; for (const v of xs) { s = s + v; } return s;",
  map: "return sc.stack(xs.map((v) => v * 3));",
  stack: "return sc.stack(xs);",
  concat: "return sc.concat(xs.map((v) => sc.reshape(v, [1])));",
  sum: "return sc.sum(sc.stack(xs));",
  lengthArith: "return xs.length * 2 + 1;",
};

function make(body: string): (x: Any) => Any {
  return new Function("sc", `return function f(x) { ${body} }`)(sc) as (x: Any) => Any;
}

test("lists after staged loops and ifs: the same values eagerly and staged", () => {
  for (const [bName, build] of Object.entries(builders)) {
    for (const [uName, use] of Object.entries(uses)) {
      const f = make(`${build} ${use}`);
      const converted = sc.autograph(f, { scope: { sc } });
      const staged = sc.stage(converted);
      for (const x of [1, 30, 3]) {
        const what = `${bName} / ${uName} for x = ${x}`;
        let eager: Any;
        try {
          eager = numbers(converted(sc.scalar(x)));
        } catch {
          eager = undefined;
        }
        // (an empty list's xs[0] is undefined, its sc.stack an error: staged, a typed error when the graph runs)
        if (eager === undefined) {
          assert.throws(() => staged(sc.scalar(x)), (e: Error) => e instanceof sc.StagecraftError, what);
          continue;
        }
        const got = numbers(staged(sc.scalar(x)));
        assert.deepEqual(got, eager, what);
        assert.ok(typeof got === "number" || Array.isArray(got), `${what}: a value, got ${got}`);
      }
    }
  }
});

test("the issue's examples: sc.stack of a list a for...of pushed to, a list's length after a while", () => {
  const stackIt = sc.autograph(function (m: Any) {
    const out: Any[] = [];
    for (const row of m) out.push(row * 2);
    return sc.stack(out);
  }, { scope: { sc } });
  assert.deepEqual(sc.stage(stackIt)(sc.tensor([[1, 2], [3, 4]])).arraySync(), [[2, 4], [6, 8]]);
  const len: Any = sc.stage(sc.autograph(function (x: Any) {
    const xs: Any[] = [];
    let y = x;
    while (y < 20) {
      xs.push(y);
      y = y * 2;
    }
    return xs.length;
  }));
  assert.equal(len(sc.scalar(1)).item(), 5);
  assert.equal(len(sc.scalar(30)).item(), 0);
  assert.equal(len.traceCount, 1);
});

test("what a list of unknown length cannot do is an AutoGraphError naming it and the user's line", () => {
  const cases: Record<string, RegExp> = {
    "return [...xs];": /cannot be spread, destructured or iterated natively/,
    "const [a] = xs; return a;": /cannot be spread, destructured or iterated natively/,
    "return xs.filter((v) => v > 1);": /filter\(\) is not supported on a list built in a staged construct \(its length is known only when the graph runs\)/,
    "xs.reverse(); return xs;": /reverse\(\) is not supported/,
    "return xs.slice(xs.length - 1);": /slice of a list built in a staged construct needs JS integer bounds/,
  };
  for (const [use, re] of Object.entries(cases)) {
    const f = make(`${builders.whileTensors} ${use}`);
    const staged = sc.stage(sc.autograph(f, { scope: { sc } }));
    assert.throws(() => staged(sc.scalar(1)), (e: Error) => e instanceof AutoGraphError && re.test(e.message) && (e as Any).location !== null, use);
  }
  // a known length (an if's list is known on neither side only when the lengths differ): native semantics
  const known = sc.stage(sc.autograph(make("const xs = [x]; let y = x; while (y < 20) { xs[0] = y; y = y * 2; } return xs.filter(() => true).length;"), { scope: { sc } }));
  assert.equal(known(sc.scalar(1)), 1);
});

test("sc.stack and sc.concat take a list along any axis; an empty one is their error when the graph runs", () => {
  const f = sc.stage(sc.autograph(make("const xs = []; let i = 0; while (i < x) { xs.push(sc.ones([2]) * i); i = i + 1; } return [sc.stack(xs, 1), sc.concat(xs, 0)];"), { scope: { sc } }));
  const [s, c] = f(sc.scalar(3, "int32")) as sc.Tensor[];
  assert.deepEqual(s!.arraySync(), [[0, 1, 2], [0, 1, 2]]);
  assert.deepEqual(c!.arraySync(), [0, 0, 1, 1, 2, 2]);
  assert.throws(() => f(sc.scalar(0, "int32")), /stack: needs at least one tensor, got an empty list/);
});

// Lists built in staged loops whose trip count is known at trace time (a for...of over a tensor
// of known length, without break), each reporting `[sc.stack(xs).shape, xs.length]` as seen
// while tracing: the same as eagerly (static), not [-1, ...] and a length tensor.
const staticLength: Record<string, string> = {
  pushRows: "const xs = []; for (const row of m) xs.push(row * 2);",
  prefixTwoPushes: "const xs = [m[0]]; for (const row of m) { xs.push(row); xs.push(row + 1); }",
  pushPushPop: "const xs = [m[0]]; for (const row of m) { xs.push(row); xs.push(row * 3); xs.pop(); }",
  nestedForOf: "const xs = []; for (const row of m) { for (const v of row) xs.push(sc.reshape(v, [1])); }",
  twoLoops: "const xs = []; for (const row of m) xs.push(row); for (const row of m) xs.push(row * 3);",
  numbers: "const xs = []; let k = 0; for (const row of m) { xs.push(k); k = k + 1; }",
  // written at a tensor index in a while of unknown trip count: no push, so the length stays known
  indexWrites: "const xs = [m[0], m[1]]; let i = 0; while (sc.sum(m) > i) { xs[i % 2] = xs[i % 2] + 1; i = i + 10; }",
  // JS bounds: the loop runs natively (unrolled), the list is an array
  jsBounds: "const xs = []; for (let i = 0; i < 4; i++) xs.push(m[i]);",
};
// Data-dependent trip counts: the length is known only when the graph runs (never a wrong static one).
const dynamicLength: Record<string, string> = {
  breakOnData: "const xs = []; for (const row of m) { if (sc.sum(row) > 10) break; xs.push(row); }",
  continueOnData: "const xs = []; for (const row of m) { if (sc.sum(row) > 10) continue; xs.push(row); }",
  pushInIf: "const xs = []; for (const row of m) { if (sc.sum(row) > 10) xs.push(row); }",
};

test("a list after a staged loop of known trip count has a static length while tracing; values as eager", () => {
  const report = "seen.push([sc.stack(xs).shape, typeof xs.length === 'number' ? xs.length : 'tensor']); return [sc.stack(xs), xs.length];";
  const inputs = [
    sc.tensor([[1, 2, 3], [4, 5, 6], [7, 8, 9], [1, 1, 1], [2, 2, 2]]),
    sc.tensor([[0, 1, 0], [1, 2, 3], [9, 9, 9], [0, 0, 0], [5, 5, 5]]),
  ];
  for (const [name, build] of [...Object.entries(staticLength), ...Object.entries(dynamicLength)]) {
    const seen: Any[] = [];
    const f = new Function("sc", "seen", `return function f(m) { ${build} ${report} }`)(sc, seen) as (m: Any) => Any;
    const converted = sc.autograph(f, { scope: { sc, seen } });
    const staged = sc.stage(converted);
    for (const m of inputs) {
      seen.length = 0;
      const eager = numbers(converted(m));
      const eagerSeen = seen.splice(0);
      const got = numbers(staged(m));
      assert.deepEqual(got, eager, `${name}: values`);
      if (seen.length === 0) continue; // (traced once: the first input's trace serves the second)
      if (name in staticLength) assert.deepEqual(seen, eagerSeen, `${name}: shape and length seen while tracing vs eager`);
      else assert.ok(seen[0][0][0] === -1 && seen[0][1] === "tensor", `${name}: a data-dependent length must stay unknown, got ${JSON.stringify(seen)}`);
    }
    assert.equal(staged.traceCount, 1, name);
  }
});
