// Elementwise expressions (core/expr.ts): every op's declared expression, rendered by the CPU
// backend, computes what the reference semantics (evaluateExpr) say, bit for bit, on special
// values; and the eager kernels are those renderings.
import { test } from "node:test";
import assert from "node:assert/strict";
import * as sc from "../../src/api/index.js";
import { bindAttrs, evaluateExpr, formFor, type Expr } from "../../src/core/expr.js";
import { jsSource, SCALAR_PRELUDE } from "../../src/backends/cpu/js-expr.js";

const SPECIAL = [NaN, 0, -0, Infinity, -Infinity, 1, -1, 0.5, -0.5, 2.5, -2.5, 1e-8, 3.4e38, -7.90531110763549805, 8.5, -9, 20, 0.3, 123.456];
const ATTRS: Record<string, Record<string, number>> = { leakyRelu: { alpha: 0.3 }, elu: { alpha: 1.7 } };

function tuples(arity: number): number[][] {
  const out: number[][] = [];
  const n = SPECIAL.length ** arity;
  for (let i = 0; i < n; i++) {
    const t: number[] = [];
    for (let k = 0, r = i; k < arity; k++, r = Math.floor(r / SPECIAL.length)) t.push(SPECIAL[r % SPECIAL.length]!);
    out.push(t);
  }
  return out;
}

function jsFunction(e: Expr, arity: number): (...xs: number[]) => number | boolean {
  const names = ["a", "b", "c"].slice(0, arity);
  return new Function(...names, `${SCALAR_PRELUDE}\nreturn ${jsSource(e, names)};`) as (...xs: number[]) => number | boolean;
}

const elementwiseOps = () => sc.listOps().filter((d) => d.elementwise);

test("every elementwise op's expressions render to JavaScript that computes the reference semantics", () => {
  assert.ok(elementwiseOps().length >= 50, "the sweep sees the elementwise ops");
  for (const def of elementwiseOps()) {
    for (const dtype of ["float64", "float32"] as const) {
      const e = bindAttrs(formFor(def.elementwise!, dtype), ATTRS[def.name]);
      const arity = def.inputs.length;
      const js = jsFunction(e, arity);
      for (const xs of tuples(arity)) {
        const want = evaluateExpr(e, xs);
        const got = js(...xs);
        assert.ok(Object.is(Number(got), Number(want)), `${def.name} (${dtype}) at ${xs.join(", ")}: rendered ${got}, reference ${want}`);
      }
    }
  }
});

test("eager elementwise kernels store the reference value rounded into the output dtype", () => {
  for (const def of elementwiseOps()) {
    if (def.name === "where" || def.name.startsWith("logical")) continue; // bool operands: below
    const arity = def.inputs.length;
    const cols = Array.from({ length: arity }, (_, k) => tuples(arity).map((t) => t[k]!));
    for (const dtype of ["float64", "float32"] as const) {
      const ins = cols.map((c) => sc.tensor(c, dtype));
      const [y] = sc.applyOp(def, ins, ATTRS[def.name] ?? {});
      const e = bindAttrs(formFor(def.elementwise!, y!.dtype), ATTRS[def.name]);
      const data = y!.dataSync();
      const stored = new (data.constructor as Float64ArrayConstructor)(1);
      tuples(arity).forEach((_, i) => {
        const xs = ins.map((t) => t.dataSync()[i]!);
        stored[0] = Number(evaluateExpr(e, xs));
        assert.ok(Object.is(data[i], stored[0]), `${def.name} (${dtype}) at ${xs.join(", ")}: kernel ${data[i]}, reference ${stored[0]}`);
      });
    }
  }
  const c = sc.tensor([true, false, true]);
  assert.deepEqual(sc.where(c, sc.tensor([1, 2, 3]), sc.tensor([4, 5, 6])).arraySync(), [1, 5, 3]);
  assert.deepEqual(sc.logicalAnd(c, sc.tensor([true, true, false])).arraySync(), [true, false, false]);
  assert.deepEqual(sc.logicalNot(c).arraySync(), [false, true, false]);
});

test("an expression that reads an attribute needs it bound, with a clear error", () => {
  const leaky = sc.getOp("leakyRelu");
  assert.throws(() => bindAttrs(leaky.elementwise!.expr, {}), /numeric attribute alpha/);
  assert.deepEqual(sc.leakyRelu(sc.tensor([-2, 3], "float64"), 0.5).arraySync(), [-1, 3]);
  assert.deepEqual(sc.leakyRelu(sc.tensor([-2, 3], "float64"), 0.25).arraySync(), [-0.5, 3], "a second attribute value gets its own loop");
});
