/**
 * The last-op gradient sweep (test/grad/last-op.test.ts): every gradient case (test/util/grad-cases,
 * plus cases where an op that is never last in them is last) staged as is, so its op is the
 * staged function's last, and differentiated by every first-order transform, staged again,
 * with respect to a captured variable, and to second order. Run as a script it prints the
 * staged results of every case as JSON, the cases in reverse order: the test compares them
 * with its own, so no result may depend on what ran before it.
 */
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import * as sc from "../../src/api/index.js";
import type { GradCase } from "./grad-cases/types.js";
import { allCases } from "./grad-cases/index.js";
import { gradTransforms, makeProbe, runTransform, type GradTransform, type Probe } from "./grad-transforms.js";
import { Rng } from "./rng.js";

export type LastOpCase = GradCase & { notDerivative?: boolean };

const unpack = (h: sc.Tensor, like: sc.Tensor[]) => sc.applyOp(sc.getOp("unpackResiduals"), [h], { types: like.map((t) => ({ dtype: t.dtype, shape: t.shape })) });
const pack = (xs: sc.Tensor[]) => sc.applyOp(sc.getOp("packResiduals"), xs, {})[0]!;

/**
 * Ops whose registry cases end in another op get one where they are last. (packResiduals is
 * not: its output is a record handle, not a number to differentiate.)
 */
const extraCases: LastOpCase[] = [
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

export const lastOpCases: LastOpCase[] = [...allCases, ...extraCases];

export const caseName = (c: LastOpCase) => `${c.op}${c.label ? ` (${c.label})` : ""}`;

const named = (name: string) => gradTransforms.find((t) => t.name === name)!;
export const gradT = named("grad");
const firstOrder = ["grad", "valueAndGrad", "vjp", "jvp", "tape.gradient of inputs and variables"].map(named);
const stagedAgain = ["grad", "vjp", "jvp"].map(named);
const byTape = named("tape.gradient of inputs and variables");
const secondOrder = [named("grad of grad")];

export interface LastOpSetup {
  c: LastOpCase;
  xs: sc.Tensor[];
  probe: Probe;
  /** The case staged: its op is the staged function's last. */
  staged: (...xs: sc.Tensor[]) => sc.Tensor;
  /** The case with its first input a variable the function captures (and its staged form). */
  withVariable: (...rest: sc.Tensor[]) => sc.Tensor;
  stagedWithVariable: (...rest: sc.Tensor[]) => sc.Tensor;
  probeV: Probe;
}

export function setUp(c: LastOpCase): LastOpSetup {
  const rng = new Rng(hash(caseName(c)));
  const xs = c.inputs(rng);
  const probe = makeProbe(rng, c.fn(...xs), xs);
  const v = sc.variable(xs[0]!, { name: "captured" });
  const withVariable = (...rest: sc.Tensor[]) => c.fn(v, ...rest);
  return {
    c,
    xs,
    probe,
    staged: sc.stage(c.fn, { autograph: false }),
    withVariable,
    stagedWithVariable: sc.stage(withVariable, { autograph: false }),
    probeV: { ...probe, directions: probe.directions.slice(1), variables: [v] },
  };
}

type Results = Map<string, number[][]>;

/** The transform staged again, called twice (the first call interpreted, the second compiled). */
function stagedTwice(out: Results, key: string, t: GradTransform, f: (...xs: sc.Tensor[]) => sc.Tensor, probe: Probe, xs: sc.Tensor[]): void {
  const g = sc.stage(t.build(f, probe), { autograph: false });
  for (let call = 0; call < 2; call++) out.set(`${key}, staged again, call ${call}`, g(...xs).map((y) => Array.from(y.dataSync(), Number)));
}

/**
 * Every result of the staged case, by key; `reference(key)` names the eager result it must
 * equal (a result staged again equals the eager transform's).
 */
export function stagedResults(s: LastOpSetup): Results {
  const out: Results = new Map();
  const rest = s.xs.slice(1);
  for (const t of firstOrder) out.set(t.name, runTransform(t, s.staged, s.probe, s.xs));
  for (const t of stagedAgain) stagedTwice(out, t.name, t, s.staged, s.probe, s.xs);
  out.set("variable", runTransform(byTape, s.stagedWithVariable, s.probeV, rest));
  stagedTwice(out, "variable", byTape, s.stagedWithVariable, s.probeV, rest);
  if (s.c.secondOrder) {
    for (const t of secondOrder) {
      out.set(t.name, runTransform(t, s.staged, s.probe, s.xs));
      stagedTwice(out, t.name, t, s.staged, s.probe, s.xs);
    }
  }
  return out;
}

export const reference = (key: string) => key.replace(/, staged again, call \d$/, "");

/** The eager tape's results for every reference key of stagedResults. */
export function eagerResults(s: LastOpSetup): Results {
  const out: Results = new Map();
  for (const t of firstOrder) out.set(t.name, runTransform(t, s.c.fn, s.probe, s.xs));
  out.set("variable", runTransform(byTape, s.withVariable, s.probeV, s.xs.slice(1)));
  if (s.c.secondOrder) for (const t of secondOrder) out.set(t.name, runTransform(t, s.c.fn, s.probe, s.xs));
  return out;
}

function hash(s: string): number {
  let h = 2166136261;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 16777619);
  return h >>> 0;
}

// As a script: the staged results of every case, cases in reverse order, as JSON.
if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const out: Record<string, Record<string, number[][]> | string> = {};
  for (const c of lastOpCases.slice().reverse()) {
    try {
      out[caseName(c)] = Object.fromEntries(stagedResults(setUp(c)));
    } catch (e) {
      out[caseName(c)] = `error: ${(e as Error).message}`;
    }
  }
  process.stdout.write(JSON.stringify(out));
}
