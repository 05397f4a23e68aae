/**
 * Every differentiable op as the LAST op of a staged function, the seam the registry sweep
 * (grad-sweep.test.ts, whose losses end in a weighted sum) does not reach: an op whose VJP
 * reads its own output (exp, tanh, div, ...) hands the backward a value that is also the
 * function's output. Each gradient case (test/grad-cases, plus cases below for ops whose
 * cases end in another op) is staged as is and differentiated by grad, valueAndGrad, vjp,
 * jvp and tape.gradient, with respect to its inputs and to a captured variable; each is
 * compared with the eager tape on the same function and with float64 finite differences,
 * staged again (two calls: the interpreted first run and the compiled second), and to second
 * order where the case supports it.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as sc from "../src/api/index.js";
import { Rng } from "./util/rng.js";
import { assertClose, numericGrad } from "./util/gradcheck.js";
import { gradTransforms, lossOf, makeProbe, runTransform, type Probe } from "./util/grad-transforms.js";
import type { GradCase } from "./grad-cases/types.js";
import { allCases } from "./grad-cases/index.js";

type LastOpCase = GradCase & { notDerivative?: boolean };

const unpack = (h: sc.Tensor, like: sc.Tensor[]) => sc.applyOp(sc.getOp("unpackResiduals"), [h], { types: like.map((t) => ({ dtype: t.dtype, shape: t.shape })) });
const pack = (xs: sc.Tensor[]) => sc.applyOp(sc.getOp("packResiduals"), xs, {})[0]!;

/**
 * Ops whose registry cases end in another op get one where they are last. (packResiduals is
 * not: its output is a record handle, not a number to differentiate.)
 */
const lastOpCases: LastOpCase[] = [
  { op: "stopGradient", label: "last", inputs: (r) => [r.tensor([2, 3])], fn: (x) => sc.stopGradient(x.exp()), notDerivative: true },
  { op: "stackRead", label: "last", inputs: (r) => [r.tensor([3, 2])], fn: (s) => sc.stackRead(s.exp(), sc.scalar(1, "int32")), secondOrder: true },
  { op: "unpackResiduals", label: "last", inputs: (r) => [r.tensor([4])], fn: (a) => unpack(pack([a.exp()]), [a])[0]!, secondOrder: true },
  { op: "stackPush", label: "last", inputs: (r) => [r.tensor([2, 3]), r.tensor([3])], fn: (s, v) => sc.stackPush(s, v.exp()), secondOrder: true },
  { op: "stackPop", label: "last", inputs: (r) => [r.tensor([3, 2])], fn: (s) => sc.stackPop(s.exp())[1], secondOrder: true },
  { op: "concat", label: "last", inputs: (r) => [r.tensor([2, 3]), r.tensor([1, 3])], fn: (a, b) => sc.concat([a.exp(), b], 0), secondOrder: true },
  { op: "unstack", label: "last", inputs: (r) => [r.tensor([3, 2])], fn: (x) => sc.unstack(x.tanh())[1]!, secondOrder: true },
  { op: "split", label: "last", inputs: (r) => [r.tensor([2, 4])], fn: (x) => sc.split(x.sigmoid(), 2, 1)[0]!, secondOrder: true },
  { op: "(an input returned as is)", inputs: (r) => [r.tensor([2, 3])], fn: (x) => x, secondOrder: true },
];

const cases: LastOpCase[] = [...allCases, ...lastOpCases];

const named = (name: string) => gradTransforms.find((t) => t.name === name)!;
const firstOrder = ["grad", "valueAndGrad", "vjp", "jvp", "tape.gradient of inputs and variables"].map(named);
const secondOrder = [named("grad of grad")];

function compare(got: number[][], want: number[][], tol: number, what: string): void {
  assert.equal(got.length, want.length, `${what}: ${got.length} results vs ${want.length}`);
  got.forEach((g, i) => assertClose(g, want[i]!, tol, `${what}, result ${i}`));
}

/** The transform staged again, called twice (the first call interpreted, the second compiled). */
function stagedTwice(name: string, f: (...xs: sc.Tensor[]) => sc.Tensor, probe: Probe, xs: sc.Tensor[]): number[][][] {
  const g = sc.stage(named(name).build(f, probe), { autograph: false });
  return [0, 1].map(() => g(...xs).map((y) => Array.from(y.dataSync(), Number)));
}

test("every differentiable op has a case in which it is the last op of the staged function", () => {
  const lastOps = new Set<string>();
  for (const c of cases) {
    const xs = c.inputs(new Rng(1));
    const cf = sc.stage(c.fn, { autograph: false }).concrete(...xs);
    const out = cf.graph.outputs[0]!;
    const producer = cf.graph.nodes.find((n) => n.outputs.includes(out));
    if (producer?.op === c.op) lastOps.add(c.op);
  }
  const missing = sc
    .listOps()
    .filter((d) => d.vjp !== undefined && d.name !== "packResiduals")
    .map((d) => d.name)
    .filter((n) => !lastOps.has(n));
  assert.deepEqual(missing, [], `ops never last in a case: ${missing.join(", ")}`);
});

for (const c of cases) {
  test(`${c.op}${c.label ? ` (${c.label})` : ""} as the last op of a staged function`, () => {
    const rng = new Rng(hash(c.op + (c.label ?? "")));
    const xs = c.inputs(rng);
    const probe = makeProbe(rng, c.fn(...xs), xs);
    const staged = sc.stage(c.fn, { autograph: false });
    const tol = 1e-9;
    for (const t of firstOrder) compare(runTransform(t, staged, probe, xs), runTransform(t, c.fn, probe, xs), tol, `${t.name}: staged vs eager tape`);
    const eagerGrad = runTransform(named("grad"), c.fn, probe, xs);
    if (!c.notDerivative) compare(eagerGrad, numericGrad(lossOf(staged, probe), xs, c.eps), (c.tol ?? 1e-6) * 10, "grad of the staged function vs finite differences");
    for (const result of stagedTwice("grad", staged, probe, xs)) compare(result, eagerGrad, tol, "grad staged again vs eager tape");
    for (const name of ["vjp", "jvp"]) {
      const want = runTransform(named(name), c.fn, probe, xs);
      for (const result of stagedTwice(name, staged, probe, xs)) compare(result, want, tol, `${name} staged again vs eager tape`);
    }

    // The first input as a variable the staged function captures: its gradient is that input's.
    const v = sc.variable(xs[0]!, { name: "captured" });
    const rest = xs.slice(1);
    const withVariable = (...ys: sc.Tensor[]) => c.fn(v, ...ys);
    const probeV: Probe = { ...probe, directions: probe.directions.slice(1), variables: [v] };
    const byTape = named("tape.gradient of inputs and variables");
    const gv = runTransform(byTape, sc.stage(withVariable, { autograph: false }), probeV, rest);
    compare(gv, runTransform(byTape, withVariable, probeV, rest), tol, "captured variable: staged vs eager tape");
    compare([gv[gv.length - 1]!], [eagerGrad[0]!], tol, "captured variable's gradient vs the input's");
    for (const result of stagedTwice(byTape.name, sc.stage(withVariable, { autograph: false }), probeV, rest)) compare(result, gv, tol, "captured variable, staged again");

    if (c.secondOrder) {
      for (const t of secondOrder) {
        const want = runTransform(t, c.fn, probe, xs);
        compare(runTransform(t, staged, probe, xs), want, 1e-8, `${t.name}: staged vs eager tape`);
        for (const result of stagedTwice(t.name, staged, probe, xs)) compare(result, want, 1e-8, `${t.name} staged again vs eager tape`);
      }
    }
  });
}

function hash(s: string): number {
  let h = 2166136261;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 16777619);
  return h >>> 0;
}
