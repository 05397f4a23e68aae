/**
 * Gradients of values that reach a structural construct's region from outside it: a Variable
 * read inside the region, a Variable read before the construct and captured, a watched tensor
 * captured. Every construct of test/grad/region-variable-programs.ts (cond, whileLoop, scan, a
 * converted for...of and if, a call to a staged helper, recursion, nested regions) x every way
 * θ arrives x every place the differentiation happens (a tape around a staged call, a tape
 * inside the staged function, sc.grad inside it, sc.stage(sc.grad(...))) must equal the eager
 * tape, which must equal float64 finite differences.
 *
 * A tape inside a staged function used to give a zero gradient, silently, for a Variable read
 * only inside a region: the region's read was a node of the region, which the tape's watched
 * reads and the structural node's operands never met.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as sc from "../../src/api/index.js";
import { accesses, regionPrograms, type Access, type RegionProgram, type ThetaSource } from "./region-variable-programs.js";
import { assertAllClose, numericGrad } from "../util/gradcheck.js";
import { Rng } from "../util/rng.js";

const rng = new Rng(2024);
const x = rng.tensor([3, 2], 0.1, 0.9);
const thetaValues = rng.tensor([2], 0.3, 0.9);
// The variable and the watched tensor hold the same θ: every access computes the same numbers.
const w = sc.variable(thetaValues, { name: "region_w" });
const p = sc.tensor(Array.from(thetaValues.dataSync()), "float64", [2]);
const programs = regionPrograms(w, p);
/** sc.grad's argument θ (a tensor of its own: the helpers' closed-over p is not it). */
const q0 = sc.tensor(Array.from(thetaValues.dataSync()), "float64", [2]);

/** θ as the loss reaches it; call at the top of the loss (it reads the variable there for "variable read outside"). */
function thetaFor(access: Access, watched: sc.Tensor = p): ThetaSource {
  if (access === "variable read inside") return { access, th: () => w };
  if (access === "variable read outside") {
    const v = w.read();
    return { access, th: () => v };
  }
  return { access, th: () => watched, closedOver: watched === p };
}

const values = (ts: sc.Tensor[]) => ts.map((t) => Array.from(t.dataSync(), Number));

interface Mode {
  name: string;
  /** Staged (or not, for the eager reference) gradients [d/dx, d/dθ]. */
  run(prog: RegionProgram, access: Access, staged: boolean): number[][];
}

/** The source θ's gradient is asked for: the variable, or the watched tensor. */
const sourceOf = (access: Access) => (access === "watched tensor" ? p : w);

/** [d/dx, d/dθ] by a tape recording `f`, which runs the loss. */
function tapeGradients(access: Access, f: (x: sc.Tensor) => sc.Tensor, x0: sc.Tensor): sc.Tensor[] {
  const tape = new sc.GradientTape();
  const loss = tape.record(() => {
    tape.watch(x0);
    if (access === "watched tensor") tape.watch(p);
    return f(x0);
  });
  return tape.gradient(loss, [x0, sourceOf(access)]) as sc.Tensor[];
}

/**
 * The loss as a function of (x, q): q is θ for "watched tensor" (an argument sc.grad watches,
 * which helpers take as an argument), unused otherwise.
 */
const lossXQ = (prog: RegionProgram, access: Access) => (x0: sc.Tensor, q: sc.Tensor) => prog.loss(x0, thetaFor(access, q));

const modes: Mode[] = [
  {
    name: "tape outside stage",
    run(prog, access, staged) {
      const f = (x0: sc.Tensor) => prog.loss(x0, thetaFor(access));
      return values(tapeGradients(access, staged ? sc.stage(f, { autograph: false }) : f, x));
    },
  },
  {
    name: "tape inside stage",
    run(prog, access, staged) {
      const g = (x0: sc.Tensor) => tapeGradients(access, (x1) => prog.loss(x1, thetaFor(access)), x0);
      return values((staged ? sc.stage(g, { autograph: false }) : g)(x));
    },
  },
  {
    name: "sc.grad inside stage",
    run(prog, access, staged) {
      const g = (x0: sc.Tensor, q: sc.Tensor) => sc.grad(lossXQ(prog, access), { argnums: "all" })(x0, q) as sc.Tensor[];
      return values((staged ? sc.stage(g, { autograph: false }) : g)(x, q0));
    },
  },
  {
    name: "sc.stage(sc.grad(...))",
    run(prog, access, staged) {
      const g = sc.grad(lossXQ(prog, access), { argnums: "all" }) as (x0: sc.Tensor, q: sc.Tensor) => sc.Tensor[];
      return values((staged ? sc.stage(g, { autograph: false }) : g)(x, q0));
    },
  },
];

/** What finite differences give for [d/dx, d/dθ] of a mode (sc.grad of a loss that does not use q: zero d/dq). */
function expected(prog: RegionProgram): { full: number[][]; xOnly: number[][] } {
  const loss = (x0: sc.Tensor, th: sc.Tensor) => prog.loss(x0, { access: "variable read outside", th: () => th });
  const full = numericGrad(loss, [x, thetaValues]);
  return { full, xOnly: [full[0]!, [0, 0]] };
}

test("the eager tape of every region program equals float64 finite differences, for every access and mode", () => {
  const failures: string[] = [];
  for (const prog of programs) {
    const fd = expected(prog);
    for (const access of accesses)
      for (const mode of modes) {
        const usesQ = mode.name.startsWith("sc.") ? access === "watched tensor" : true;
        try {
          assertAllClose(mode.run(prog, access, false), usesQ ? fd.full : fd.xOnly, 1e-6, `${prog.name} / ${access} / ${mode.name}: eager vs finite differences`);
        } catch (e) {
          failures.push((e as Error).message.split("\n")[0]!);
        }
      }
  }
  assert.deepEqual(failures, [], failures.join("\n"));
});

test("gradients through regions: every construct x access x mode, staged, equals the eager tape", () => {
  const failures: string[] = [];
  let cases = 0;
  for (const prog of programs)
    for (const access of accesses)
      for (const mode of modes) {
        cases++;
        const what = `${prog.name} / ${access} / ${mode.name}`;
        try {
          assertAllClose(mode.run(prog, access, true), mode.run(prog, access, false), 1e-9, `${what}: staged vs eager`);
        } catch (e) {
          failures.push((e as Error).message.split("\n")[0]!);
        }
      }
  assert.ok(cases >= 120, `only ${cases} cases`);
  assert.deepEqual(failures, [], `${failures.length} of ${cases} cases failed:\n${failures.join("\n")}`);
});

test("the region programs cover cond, while, scan, converted for...of and if, calls, recursion and nested regions", () => {
  const names = programs.map((q) => q.name).join("; ");
  for (const word of ["cond", "whileLoop", "scan", "for...of", "converted if", "staged helper", "recursion", "inside a cond branch", "inside a whileLoop body"]) {
    assert.ok(names.includes(word), `no program with ${word}: ${names}`);
  }
});
