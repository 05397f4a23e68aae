/**
 * Run in a child process by export-fuzz.test.ts (a native crash of onnxruntime ends this process,
 * not the test runner, and the last "start" line names the program): seeded random programs
 * (test/util/op-program-generator.ts) are staged, exported (sc.onnx.exportModel) and run in
 * onnxruntime on inputs holding NaN, ±Infinity and ±0, some of them empty; onnxruntime's outputs
 * must equal the staged function's (NaN equal to NaN, -0 distinct from +0). Prints a "start" line
 * per program, a line per mismatch, and the counts last. argv: first seed, number of programs.
 */
import * as sc from "../../../src/api/index.js";
import { Rng } from "../../util/rng.js";
import { describeProgram, generateOpProgram, programFunction, programInputs } from "../../util/op-program-generator.js";

const FIRST_SEED = Number(process.argv[2] ?? 1);
const PROGRAMS = Number(process.argv[3] ?? 200);
/** Runs per program: the first without special values, the others with them. */
const RUNS = 3;
const EMPTY_SHARE = 0.15;
const SPECIAL_SHARE = 0.3;
/** For outputs that are not exact (transcendental ops, sums in another order): as export-sweep's. */
const TOLERANCE = { float32: { rtol: 1e-4, atol: 1e-5 }, float64: { rtol: 1e-5, atol: 1e-6 } } as const;

const counts = { programs: 0, runs: 0, runsWithSpecials: 0, specials: 0, emptyRuns: 0, stagedErrors: 0, mismatches: 0, ops: new Set<string>() };
const show = (v: number) => (Object.is(v, -0) ? "-0" : String(v));

/** The first element where `got` differs from `want`, or null. Exact outputs must be equal bit for bit (as numbers). */
function firstDifference(got: sc.Tensor, want: sc.Tensor, exact: boolean, signedZeros: boolean): string | null {
  if (got.dtype !== want.dtype) return `dtype ${got.dtype}, staged ${want.dtype}`;
  if (got.shape.join() !== want.shape.join()) return `shape [${got.shape}], staged [${want.shape}]`;
  const a = got.dataSync() as ArrayLike<number>;
  const b = want.dataSync() as ArrayLike<number>;
  const tol = TOLERANCE[want.dtype as "float32" | "float64"];
  for (let i = 0; i < b.length; i++) {
    const x = Number(a[i]);
    const y = Number(b[i]);
    if (Object.is(x, y)) continue; // (NaN is NaN; -0 is not +0)
    if (!signedZeros && x === 0 && y === 0) continue;
    const close = !exact && tol !== undefined && Number.isFinite(x) && Number.isFinite(y) && !(x === 0 && y === 0) && Math.abs(x - y) <= tol.atol + tol.rtol * Math.abs(y);
    if (!close) return `element ${i} is ${show(x)} in onnxruntime, ${show(y)} staged`;
  }
  return null;
}

const rng = new Rng(FIRST_SEED);
for (let id = FIRST_SEED; id < FIRST_SEED + PROGRAMS; id++) {
  const p = generateOpProgram(rng, id, EMPTY_SHARE);
  console.log(JSON.stringify({ start: describeProgram(p) }));
  const staged = sc.stage(programFunction(p), { name: `program_${id}` });
  const runs = Array.from({ length: RUNS }, (_, r) => programInputs(rng, p, r === 0 ? 0 : SPECIAL_SHARE));
  let model: sc.onnx.ExportedModel;
  try {
    model = sc.onnx.exportModel(staged, runs[0]!.xs);
  } catch (e) {
    if (e instanceof sc.ValueError) {
      // (the staged program refuses these shapes while tracing: max of an empty group)
      counts.stagedErrors++;
      continue;
    }
    throw e;
  }
  counts.programs++;
  for (const s of [...p.steps, ...(p.final ? [p.final] : [])]) counts.ops.add(s.op);
  const session = await sc.onnx.createSession(model.bytes);
  for (const { xs, specials } of runs) {
    let want: sc.Tensor[];
    try {
      want = staged(...xs);
    } catch (e) {
      if (!(e instanceof sc.StagecraftError)) throw e;
      counts.stagedErrors++;
      continue;
    }
    const feeds: Record<string, sc.Tensor> = {};
    model.inputNames.forEach((n, i) => (feeds[n] = xs[i]!));
    const got = await sc.onnx.runSession(session, feeds);
    counts.runs++;
    if (specials > 0) counts.runsWithSpecials++;
    if (xs[0]!.size === 0) counts.emptyRuns++;
    counts.specials += specials;
    model.outputNames.forEach((name, i) => {
      const d = firstDifference(got[name]!, want[i]!, p.exact[i]!, p.signedZeros[i]!);
      if (d === null) return;
      counts.mismatches++;
      const inputs = xs.map((x) => `[${Array.from(x.dataSync() as ArrayLike<number>, show).join(", ")}]`).join(" and ");
      console.log(JSON.stringify({ mismatch: `${describeProgram(p)}\n  output ${i}${p.exact[i] ? " (exact)" : ""}: ${d}; inputs ${inputs}\n  staged [${Array.from(want[i]!.dataSync() as ArrayLike<number>, show).join(", ")}]\n  onnxruntime [${Array.from(got[name]!.dataSync() as ArrayLike<number>, show).join(", ")}]` }));
    });
  }
  await session.release();
}
console.log(JSON.stringify({ counts: { ...counts, ops: counts.ops.size } }));
