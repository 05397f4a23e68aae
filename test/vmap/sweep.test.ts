/**
 * The vmap sweep over the registry's gradient cases (test/util/grad-cases): vmap(f) of three
 * stacked examples equals stacking f over them, eagerly and staged.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as sc from "../../src/api/index.js";
import { Rng } from "../util/rng.js";
import { allCases } from "../util/grad-cases/index.js";

for (const c of allCases) {
  test(`vmap ${c.op}${c.label ? ` (${c.label})` : ""}`, () => {
    const rng = new Rng(7);
    const examples = [0, 1, 2].map(() => c.inputs(rng));
    if (examples.some((ex) => ex.some((x, i) => x.shape.join() !== examples[0]![i]!.shape.join()))) return;
    const stacked = examples[0]!.map((_, i) => sc.stack(examples.map((ex) => ex[i]!)));
    const def = sc.listOps().find((d) => d.name === c.op);
    if (def?.batch !== undefined && "refuse" in def.batch) {
      // a stated refusal: a typed error, never a wrong answer
      assert.throws(() => sc.vmap(c.fn)(...stacked), (e: Error) => e instanceof sc.StagecraftError && /cannot/.test(e.message));
      return;
    }
    const want = sc.stack(examples.map((ex) => c.fn(...ex)));
    for (const [mode, got] of [
      ["eager", sc.vmap(c.fn)(...stacked)],
      ["staged", sc.stage(sc.vmap(c.fn), { autograph: false })(...stacked)],
    ] as const) {
      assert.deepEqual(got.shape, want.shape, `${c.op} ${mode}: shape`);
      const g = got.dataSync(), w = want.dataSync();
      for (let k = 0; k < w.length; k++) assert.ok(Math.abs(Number(g[k]) - Number(w[k])) <= 1e-9 * (1 + Math.abs(Number(w[k]))), `${c.op} ${mode}: element ${k} ${g[k]} vs ${w[k]}`);
    }
  });
}
