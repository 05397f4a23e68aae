/**
 * The run-time API: sc.autograph (cache, free variables and scope), generators and async
 * functions, toSource, ag.call converting callees met by converted code, convertForStage.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as sc from "../../src/api/index.js";
import { autograph, convertForStage } from "../../src/autograph/api.js";
import { AutoGraphError, getConverted } from "../../src/autograph/operators/index.js";

test("sc.autograph caches, needs free variables in scope (the error names them and recommends the loader)", () => {
  const f = (x: number) => (x > 0 ? x : -x);
  const g = autograph(f);
  assert.equal(autograph(f), g, "cached");
  assert.equal(autograph(g), g, "a converted function converts to itself");
  assert.equal(getConverted(f), g, "registered for ag.call");
  assert.equal(g.name, "f");
  assert.equal(g(-3), 3);
  let offset = 10;
  const h = (x: number) => x + offset;
  assert.throws(
    () => autograph(h),
    (e: unknown) =>
      e instanceof AutoGraphError && /uses free variable offset/.test(e.message) && /node --import stagecraft\/register/.test(e.message) && /scope: \{ offset \}/.test(e.message) && e.message.includes("api.test.ts"),
  );
  const h2 = autograph(h, { scope: { offset } });
  assert.equal(h2(1), 11);
  offset = 20;
  assert.equal(h2(1), 11, "scope values are read when converting");
  assert.equal(autograph(h, { scope: { offset } })(1), 21);
  const usesGlobal = () => (globalThis as { x?: number }).x;
  assert.equal(autograph(usesGlobal)(), undefined, "globals are passed through");
  // A closure variable named like a global is not taken for the global (a const: its value is
  // read from the closure when converting).
  const performance = { now: () => 42 };
  const timed = () => performance.now();
  assert.equal(autograph(timed)(), 42);
  assert.equal(autograph(timed, { scope: { performance: { now: () => 7 } } })(), 42, "converted once (cached)");
});

test("generators and async functions are left unconverted: sc.autograph returns them as they are; sc.stage refuses them", async () => {
  const a = async function a(x: number) {
    return x > 0 ? "pos" : "neg";
  };
  assert.equal(autograph(a), a);
  assert.equal(await autograph(a)(1), "pos");
  function* g() {
    yield 1;
  }
  assert.equal(autograph(g), g);
  assert.throws(() => convertForStage(async () => 1), (e: unknown) => e instanceof AutoGraphError && /cannot be staged/.test(e.message));
  // Inside a converted module they keep no twin (see the module tests below).
});

test("toSource shows the generated code", () => {
  function absDiff(a: number, b: number) {
    if (a > b) return a - b;
    return b - a;
  }
  const src = autograph.toSource(absDiff);
  assert.match(src, /^function absDiff\(a, b\) \{/);
  // The native copy for a JS-valued condition, and ag.ifStmt for a tensor one.
  assert.match(src, /if \(typeof \(\$c = ag\.gt\(a, b\)\) !== "object"\) \{\s*if \(\$c\) \{/);
  assert.match(src, /\} else ag\.ifStmt\(\$c, \(\) => \{/);
  assert.equal(autograph.toSource(autograph(absDiff)), src);
});

test("ag.call converts callees met by converted code (staged control flow inside a helper)", () => {
  function helper(x: any): any {
    if (x > 0) return x;
    return -x;
  }
  const outer = (x: any): any => helper(x) * 2;
  const staged = sc.stage(autograph(outer, { scope: { helper } }));
  assert.deepEqual(staged(sc.scalar(-3)).arraySync(), 6);
  assert.deepEqual(staged(sc.scalar(4)).arraySync(), 8);
  assert.equal(staged.traceCount, 1, "one trace: the helper's if is a staged cond");
});

test("convertForStage: converted when possible, else the original with a one-time note naming the free variables", () => {
  const pure = (x: any) => (x > 0 ? x : x * 0);
  const r = convertForStage(pure);
  assert.notEqual(r.fn, pure);
  assert.equal(r.note, undefined);
  assert.deepEqual(sc.stage(r.fn)(sc.scalar(-2)).arraySync(), -0);
  // A variable that changes cannot be read once by value: staged by tracing, with a note.
  let limit = 3;
  const closure = (x: any) => {
    if (x > limit) return x;
    return limit;
  };
  const first = convertForStage(closure);
  assert.equal(first.fn, closure);
  assert.ok(first.note && /free variable limit/.test(first.note) && /node --import stagecraft\/register/.test(first.note), first.note);
  assert.equal(convertForStage(closure).note, undefined, "said once");
  limit = 4;
  const plain = (x: any) => sc.add(x, limit);
  assert.equal(convertForStage(plain).note, undefined, "no note when nothing needs conversion");
});
