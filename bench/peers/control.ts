/**
 * An A/A control for the paired ratios of a workload with a reference: the workload's systems
 * as the suite runs them, plus the reference a second time under another name (the same staged
 * function, called from a second system entry). Its ratio to the reference is the
 * measurement's own noise: a difference of AutoGraph's conversion from the hand-written code
 * is real only beyond it.
 *   node --import tsx bench/peers/control.ts maml [runs] [--staged-only]    (lbfgs, beam-search, seq2seq)
 * `--staged-only` keeps only Stagecraft's staged systems (AutoGraph's, the hand-written code and
 * the control): no eager system or peer whose garbage and threads land in their rounds.
 * Prints, per run, the per-round ratios (wall and process CPU time) of every Stagecraft staged
 * system to the reference: median (range).
 */
import { QUICK, fmtRatio, loadWorkload, measure } from "./harness.js";

const stagedOnly = process.argv.includes("--staged-only");
const [file, runsArg] = process.argv.slice(2).filter((a) => !a.startsWith("--"));
if (file === undefined) throw new Error("usage: node --import tsx bench/peers/control.ts <workload file> [runs]");
const w = await (await loadWorkload(file))();
const ref = w.systems.find((s) => s.name === w.reference);
if (ref === undefined) throw new Error(`${file}: the workload has no reference system`);
const control = `${ref.name} again (A/A control)`;
w.systems.push({ ...ref, name: control });
if (stagedOnly) w.systems = w.systems.filter((s) => s.name === control || /^stagecraft staged/.test(s.name));
for (let run = 1; run <= Number(runsArg ?? 1); run++) {
  const r = await measure(w, QUICK);
  for (const f of r.figures) {
    if (f.vsReference === undefined || f.system === w.reference || !/staged|control/.test(f.system)) continue;
    console.log(`${file} run ${run}: ${f.system.padEnd(50)} wall ${fmtRatio(f.vsReference)}  cpu ${fmtRatio(f.vsReferenceCpu)}  (${f.ms!.median.toPrecision(3)} ms, cpu ${f.cpuMs!.median.toPrecision(3)} ms per call)`);
  }
}
w.done?.();
process.exit(0);
