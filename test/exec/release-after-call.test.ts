// A compiled graph's instance keeps no result of a call after it returns: the results are the
// caller's to drop (a staged per-example gradient returns 205 MB; held by the instance until
// its next call, it stayed alive while that call allocated the next one). (Inputs a product
// copies into the instance's WebAssembly memory are held on purpose: the copy is skipped when
// the next call passes the same storage, arena.ts.)
import { test } from "node:test";
import assert from "node:assert/strict";
import * as v8 from "node:v8";
import * as vm from "node:vm";
import * as sc from "../../src/api/index.js";
import { createCompiledExecutor } from "../../src/api/internals.js";

// (the test runner passes no --expose-gc: the flag set now makes a gc function for a new context)
v8.setFlagsFromString("--expose-gc");
const gc = vm.runInNewContext("gc") as () => void;

const compileNow = createCompiledExecutor(0);

/** Whether `ref`'s target is collected within a few collections (each after the current job ends). */
async function collected(ref: WeakRef<object>): Promise<boolean> {
  for (let round = 0; round < 10; round++) {
    await new Promise((r) => setTimeout(r, 0));
    gc();
    if (ref.deref() === undefined) return true;
  }
  return false;
}

test("compiled graph: the storage of a call's results is collectable once the caller drops them", async () => {
  // a matmul (a kernel node), an elementwise loop and a reduction: values in several strategies
  const f = sc.stage((x: sc.Tensor, w: sc.Tensor) => {
    const h = sc.tanh(sc.matmul(x, w)).mul(2);
    return [h, h.sum(-1)];
  }, { autograph: false, engine: "stagecraft" });
  const w = sc.tensor(Array.from({ length: 64 * 32 }, (_, i) => Math.sin(i)), "float32", [64, 32]);
  const shapeX = [16, 64];
  const cf = f.concrete(sc.zeros(shapeX, "float32"), w);
  const refs = ((): WeakRef<object>[] => {
    const x = sc.tensor(Array.from({ length: 16 * 64 }, (_, i) => Math.cos(i)), "float32", shapeX);
    const [h, s] = cf.callFlat([x, w], compileNow) as [sc.Tensor, sc.Tensor];
    assert.equal(h.shape.join(","), "16,32");
    assert.equal(s.shape.join(","), "16");
    return [new WeakRef(h.dataSync()), new WeakRef(s.dataSync())];
  })();
  const names = ["the matmul-tanh result", "the sum"];
  for (let i = 0; i < refs.length; i++) assert.ok(await collected(refs[i]!), `${names[i]} is still held after the call`);
  // (and the instance still runs: a second call gives the same values as a fresh eager run)
  const x2 = sc.tensor(Array.from({ length: 16 * 64 }, (_, i) => Math.sin(i * 0.3)), "float32", shapeX);
  const [h2] = cf.callFlat([x2, w], compileNow) as [sc.Tensor];
  assert.deepEqual(Array.from(h2.dataSync()), Array.from(sc.tanh(sc.matmul(x2, w)).mul(2).dataSync()));
});
