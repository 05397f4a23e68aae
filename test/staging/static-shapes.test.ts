/**
 * Static shapes while tracing, op by op: a dim known from the inputs' shapes stays known. For
 * every case of the eager-vs-staged registry sweep whose inputs are fully known (the gradient
 * cases and test/staging/staged-cases*.ts), tracing it must give every value of the graph (the
 * loops' and conditionals' regions included) a fully known shape, and the traced outputs' shapes
 * must be the eager outputs' shapes. (Shape arithmetic on a traced tensor, `h.shape[1] - 1`,
 * silently goes wrong when a known dim reads -1.) Every registry op needs such a case.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as sc from "../../src/api/index.js";
import type { Graph } from "../../src/graph/ir.js";
import { Rng } from "../util/rng.js";
import { allCases } from "../util/grad-cases/index.js";
import { cases as baseStagedCases, type StagedCase } from "./staged-cases.js";
import { cases as dtypeCases } from "./staged-cases-dtypes.js";

/** Ops whose output sizes depend on their inputs' values (none today): their shapes may be unknown. */
const VALUE_DEPENDENT_SHAPES = new Set<string>();

const flat = (r: sc.Tensor | sc.Tensor[]): sc.Tensor[] => (Array.isArray(r) ? r : [r]);
const apply = (op: string, xs: sc.Tensor[], attrs: Record<string, unknown>) => sc.applyOp(sc.getOp(op), xs, attrs);

/** Ops the sweeps' cases reach only through unknown dims (their functions avoid them for known shapes), applied directly. */
const direct: StagedCase[] = [
  { op: "fillLike", inputs: (r) => [r.tensor([3, 2], -1, 1, "float32")], fn: (x) => apply("fillLike", [x], { dtype: "int32", value: 2 }) },
  { op: "dimSize", inputs: (r) => [r.tensor([3, 2], -1, 1, "float32")], fn: (x) => apply("dimSize", [x], { axis: 1 }) },
  { op: "emptyStack", inputs: (r) => [r.tensor([3, 2], -1, 1, "float32")], fn: (x) => sc.stackPush(apply("emptyStack", [x], {})[0]!, x) },
];

const known: StagedCase[] = [...allCases.map((c): StagedCase => ({ op: c.op, label: c.label, inputs: c.inputs, fn: c.fn })), ...baseStagedCases, ...dtypeCases, ...direct].filter(
  (c) => c.options?.inputSignature === undefined,
);
const nameOf = (c: StagedCase) => `${c.op}${c.label ? ` (${c.label})` : ""}`;

/** Each value of `g` (regions included) with an unknown dim, as "op[shape]". */
function unknownValues(g: Graph): string[] {
  const out: string[] = [];
  for (const n of g.nodes) {
    if (!VALUE_DEPENDENT_SHAPES.has(n.op)) for (const v of n.outputs) if (v.type.shape.some((d) => d < 0)) out.push(`${n.op}[${v.type.shape.join(", ")}]`);
    for (const r of n.regions) out.push(...unknownValues(r));
  }
  return out;
}

/** Runs `fn` with console.log silenced (the print cases). */
function quiet<T>(fn: () => T): T {
  const log = console.log;
  console.log = () => {};
  try {
    return fn();
  } finally {
    console.log = log;
  }
}

const eagerRuns = new Set<string>();

for (const c of known) {
  const name = nameOf(c);
  test(`static shapes while tracing: ${name}`, () => {
    const xs = c.inputs(new Rng(name.length * 31 + 5));
    let eager: sc.Tensor[];
    try {
      eager = quiet(() => flat(c.fn(...xs)));
    } catch {
      return; // a case of bad input (the eager-vs-staged sweep checks the staged error)
    }
    eagerRuns.add(c.op);
    let traced: number[][] = [];
    const cf = quiet(() =>
      sc
        .stage((...a: sc.Tensor[]) => {
          const r = flat(c.fn(...a));
          traced = r.map((t) => [...t.shape]);
          return r;
        }, c.options)
        .concrete(...xs),
    );
    assert.deepEqual(traced, eager.map((t) => [...t.shape]), `${name}: traced output shapes vs eager`);
    assert.deepEqual(unknownValues(cf.graph), [], `${name}: values of unknown shape in the traced graph\n${String(cf)}`);
  });
}

test("every registry op has a case of known shapes that runs eagerly", () => {
  const missing = sc
    .listOps()
    .filter((d) => d.family !== "ad")
    .map((d) => d.name)
    .filter((n) => !eagerRuns.has(n));
  assert.deepEqual(missing, [], `registry ops without a case of known shapes: ${missing.join(", ")}`);
});

test("AutoGraph: a list pushed to in a staged for...of over a tensor of known length stacks to its static shape (issue 24)", () => {
  const seen: unknown[] = [];
  const f = sc.autograph(
    function (x: any) {
      const out: any[] = [];
      for (const row of x) out.push(row * row);
      const s = sc.stack(out);
      seen.push([...s.shape], out.length);
      return sc.sum(s.slice([s.shape[0] - 1, 0])); // (shape arithmetic on the stacked list: its last row)
    },
    { scope: { sc, seen } },
  );
  const x = new Rng(24).tensor([5, 3], -1, 1, "float32");
  const eager = f(x) as sc.Tensor;
  const eagerSeen = seen.splice(0);
  assert.deepEqual(eagerSeen, [[5, 3], 5]);
  const staged = sc.stage(f);
  const got = staged(x) as sc.Tensor;
  assert.deepEqual(seen, eagerSeen, "shape and length seen while tracing vs eager");
  assert.deepEqual(got.arraySync(), eager.arraySync());
  // the gradient, eagerly and staged again: 2 x on the last row, 0 elsewhere
  const g = sc.grad(f);
  const ge = g(x) as sc.Tensor;
  const gs = sc.stage(g)(x) as sc.Tensor;
  // (zeros as +0: the rows the slice drops get a zero of either sign)
  const rows = (t: sc.Tensor) => (t.arraySync() as number[][]).map((r) => r.map((v) => v + 0));
  assert.deepEqual(rows(gs), rows(ge));
  const xv = x.arraySync() as number[][];
  assert.deepEqual(rows(ge), xv.map((r, i) => r.map((v) => (i === 4 ? Math.fround(2 * v) : 0))));
});
