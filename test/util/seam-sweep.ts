/**
 * The structural gradient sweep (test/grad/seams.test.ts): every structural program
 * (test/util/grad-programs.ts) under every transform (test/util/grad-transforms.ts), in a given
 * order, in one process. Run as a script it prints the staged results as JSON, in the reverse
 * of the seeded order: the test compares them with its own, computed in that order after the
 * other transforms, so no result may depend on what ran before it.
 */
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import * as sc from "../../src/api/index.js";
import { structuralPrograms, type StructuralProgram } from "./grad-programs.js";
import { gradTransforms, makeProbe, runTransform, type GradTransform, type Probe } from "./grad-transforms.js";
import { Rng } from "./rng.js";

export interface SweepCase {
  key: string;
  program: StructuralProgram;
  transform: GradTransform;
  xs: sc.Tensor[];
  probe: Probe;
  /** The program staged (one staged function per program, shared by all its transforms). */
  staged: (...xs: sc.Tensor[]) => sc.Tensor;
}

/** Every (program, transform) pair that applies, in a seeded shuffled order. */
export function sweepCases(seed: number): SweepCase[] {
  const cases: SweepCase[] = [];
  structuralPrograms.forEach((program, k) => {
    const rng = new Rng(100 + k);
    const xs = program.inputs(rng);
    const probe = makeProbe(rng, program.eager(...xs), xs, program.variables);
    const staged = sc.stage(program.fn, { autograph: false });
    for (const transform of gradTransforms) {
      if (transform.needs === "one input" && xs.length !== 1) continue;
      if (transform.needs === "variables" && !program.variables) continue;
      cases.push({ key: `${program.name} / ${transform.name}`, program, transform, xs, probe, staged });
    }
  });
  const rng = new Rng(seed);
  for (let i = cases.length - 1; i > 0; i--) {
    const j = Math.floor(rng.next() * (i + 1));
    [cases[i], cases[j]] = [cases[j]!, cases[i]!];
  }
  return cases;
}

export function runStaged(c: SweepCase): number[][] {
  return runTransform(c.transform, c.staged, c.probe, c.xs);
}

export function runEager(c: SweepCase): number[][] {
  return runTransform(c.transform, c.program.eager, c.probe, c.xs, false);
}

// As a script: `node --import tsx test/util/seam-sweep.ts SEED` prints { key: values } of the
// staged results, computed in the reverse of the order sweepCases(SEED) gives.
if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const seed = Number(process.argv[2] ?? 1);
  const out: Record<string, number[][] | string> = {};
  for (const c of sweepCases(seed).reverse()) {
    try {
      out[c.key] = runStaged(c);
    } catch (e) {
      out[c.key] = `error: ${(e as Error).message}`;
    }
  }
  process.stdout.write(JSON.stringify(out));
}
