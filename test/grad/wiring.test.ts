/**
 * Graph AD is wired in explicitly: the package entry fills the gradient slots of the structural
 * ops' declarations (cond, while, call) and the host-function differentiator; staging only hands
 * nodes to whatever rule the declaration holds. Without the package entry nothing is installed,
 * and using what is missing is a typed error that says how to get it.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import * as sc from "../../src/api/index.js";
import { callOp, condOp, whileOp, readVariableOp, assignVariableOp } from "../../src/api/internals.js";

const root = fileURLToPath(new URL("../..", import.meta.url));

test("the package entry installs graph AD's rules on the cond, while and call declarations", () => {
  for (const op of [condOp, whileOp, callOp]) assert.equal(typeof op.gradient, "function", op.name);
  // variables are read and assigned by reference: their gradients flow through the values, no rule
  for (const op of [readVariableOp, assignVariableOp]) assert.equal(op.gradient, undefined, op.name);
  // and the rules are the ones in use: a staged cond and loop under a tape differentiate
  const f = sc.stage(
    (x: sc.Tensor) => sc.cond(sc.greater(sc.sum(x), 0), () => sc.whileLoop((i, _v) => sc.less(i, 3), (i, v) => [i.add(1), v.mul(x)], [sc.scalar(0, "int32"), x])[1]!, () => x),
    { autograph: false },
  );
  assert.deepEqual(Array.from(sc.grad((x: sc.Tensor) => sc.sum(f(x)))(sc.tensor([2], "float64")).dataSync()), [4 * 2 ** 3]);
});

/** Runs `code` (an ES module importing from src/) in a fresh Node process; returns its stdout lines. */
function fresh(code: string): string[] {
  const r = spawnSync(process.execPath, ["--import", "tsx", "--input-type=module", "-e", code], { cwd: root, encoding: "utf8", timeout: 60_000 });
  assert.equal(r.status, 0, r.stderr);
  return r.stdout.trim().split("\n");
}

test("without the package entry, staging has no gradient rules and no executor, and says so", () => {
  const lines = fresh(`
    import "./src/ops/index.js";
    import { tensor, greater, sum } from "./src/ops/index.js";
    import { GradientTape } from "./src/ad/tape.js";
    import { stage } from "./src/staging/stage.js";
    import { cond } from "./src/staging/control-flow.js";
    const report = (f) => { try { f(); console.log("no error"); } catch (e) { console.log(e.constructor.name + ": " + e.message); } };
    const f = stage((x) => cond(greater(sum(x), 0), () => x.mul(2), () => x), { autograph: false });
    const x = tensor([1, 2]);
    // a tape inside a staged function records a cond; a tape records an eager call of a staged function
    const taped = (y) => { const t = new GradientTape(); return t.record(() => { t.watch(y); return cond(greater(sum(y), 0), () => y.mul(2), () => y); }); };
    report(() => stage(taped, { autograph: false })(x));
    report(() => { const tape = new GradientTape(); tape.record(() => { tape.watch(x); return f(x); }); });
    report(() => f(x));
  `);
  assert.match(lines[0]!, /^GradientError: cond: a tape records a staged cond, but no gradient rule for cond is installed: import Stagecraft through its package entry/);
  assert.match(lines[1]!, /^GradientError: call: a tape records a staged call, but no gradient rule for call is installed/);
  assert.match(lines[2]!, /^StagingError: no executor is installed to run staged functions: import Stagecraft through its package entry/);
});
