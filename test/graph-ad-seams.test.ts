/**
 * Graph AD at the seams: structural programs whose output is the structural node's result
 * itself (cond, data-dependent while, scan, converted for...of, calls to staged helpers with
 * loops inside, a loop calling a helper, linear and tree recursion, one with a loop in its
 * body, a layer over captured variables), differentiated by every transform (grad,
 * valueAndGrad, vjp, jvp, tape.gradient of inputs and variables, grad of grad, hvp), each
 * also staged again. All pairs run in one seeded shuffled order in this process, so each
 * runs after other transforms of the same staged functions have run (and compiled), and
 * every result must equal the eager tape's on the same math written with JS control flow;
 * a fresh process computes them in the reverse order and must get the same numbers.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { structuralPrograms } from "./grad-programs.js";
import { lossOf } from "./util/grad-transforms.js";
import { assertClose, numericGrad } from "./util/gradcheck.js";
import { runEager, runStaged, sweepCases } from "./util/seam-sweep.js";

const SEED = 11;

/** The staged results of a fresh process running the sweep in the reverse order. */
function freshProcessResults(): Promise<Record<string, number[][] | string>> {
  const script = fileURLToPath(new URL("./util/seam-sweep.ts", import.meta.url));
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ["--import", "tsx", script, String(SEED)], { stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    child.stdout.on("data", (d: Buffer) => (out += d));
    child.stderr.on("data", (d: Buffer) => (err += d));
    child.on("error", reject);
    child.on("close", (code) => (code === 0 ? resolve(JSON.parse(out)) : reject(new Error(`the fresh process failed (${code}): ${err.slice(-2000)}`))));
  });
}

function compare(got: number[][], want: number[][], tol: number, what: string): void {
  assert.equal(got.length, want.length, `${what}: ${got.length} results vs ${want.length}`);
  got.forEach((g, i) => assertClose(g, want[i]!, tol, `${what}, result ${i}`));
}

test("the eager references of the structural programs match float64 finite differences", () => {
  for (const c of sweepCases(SEED).filter((c) => c.transform.name === "grad")) {
    const fd = numericGrad(lossOf(c.program.eager, c.probe), c.xs);
    compare(runEager(c), fd, 1e-6, `${c.program.name}: eager tape vs finite differences`);
  }
});

test("structural programs: every transform, in a shuffled order, equals the eager tape; a fresh process in the reverse order agrees", async () => {
  const fresh = freshProcessResults();
  const cases = sweepCases(SEED);
  assert.ok(cases.length >= 180, `only ${cases.length} (program, transform) pairs`);
  const mine = new Map<string, number[][]>();
  const failures: string[] = [];
  for (const c of cases) {
    try {
      const got = runStaged(c);
      mine.set(c.key, got);
      compare(got, runEager(c), 1e-9, `${c.key}: staged vs eager`);
    } catch (e) {
      failures.push(`${c.key}: ${(e as Error).message.split("\n")[0]}`);
    }
  }
  const other = await fresh;
  for (const [key, got] of mine) {
    const theirs = other[key];
    if (typeof theirs === "string" || theirs === undefined) failures.push(`${key}: the fresh process got ${theirs ?? "nothing"}`);
    else {
      try {
        compare(got, theirs, 1e-12, `${key}: this process vs a fresh process in the reverse order`);
      } catch (e) {
        failures.push((e as Error).message.split("\n")[0]!);
      }
    }
  }
  assert.deepEqual(failures, [], `${failures.length} of ${cases.length} pairs failed:\n${failures.join("\n")}`);
});

test("the structural programs cover cond, while, scan, for...of, calls, loops calling helpers, recursion and variables", () => {
  const names = structuralPrograms.map((p) => p.name).join("; ");
  for (const word of ["cond", "while", "scan", "for...of", "helper", "loop calling", "linear recursion", "tree recursion with a loop", "variables"]) {
    assert.ok(names.includes(word), `no program with ${word}: ${names}`);
  }
});
