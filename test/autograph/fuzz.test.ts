/**
 * AutoGraph differential fuzzing (issue 4, "Proof of semantic preservation"): seeded random
 * programs (test/util/program-generator.ts) compiled natively with `new Function` and converted
 * from the same source, run on the same arguments: the return values, console output and
 * exceptions (type and message) must be identical.
 *
 * The bulk run converts with the transform's own entry point (`convertFunctionSource`, bound to
 * `ag` as sc.autograph binds it); a smaller run at the end goes through `sc.autograph` itself
 * (imported last: importing it installs the on-demand converter `ag.call` uses for closures).
 *
 * FUZZ_PROGRAMS (default 3000), FUZZ_AUTOGRAPH_PROGRAMS (default 100) and FUZZ_SEED (default 1)
 * change the run; a divergence prints the seed, the arguments, the program and the generated
 * code. Reproduce one program with `generateProgram(seed)`.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { inspect } from "node:util";
import { ag } from "../../src/autograph/operators/index.js";
import { convertFunctionSource } from "../../src/autograph/transform/convert.js";
import { generateProgram, type GeneratedProgram } from "../util/program-generator.js";
import { runCaptured, startWatchdog, type Outcome } from "../util/differential.js";

const PROGRAMS = Number(process.env.FUZZ_PROGRAMS ?? 3000);
const AUTOGRAPH_PROGRAMS = Number(process.env.FUZZ_AUTOGRAPH_PROGRAMS ?? 100);
const FIRST_SEED = Number(process.env.FUZZ_SEED ?? 1);
/** Divergences printed in full (all are counted). */
const SHOW = 5;

type AnyFn = (...args: unknown[]) => unknown;

// Fuel makes every generated loop finite, but a converted construct could still spin (say a
// loop test re-evaluated without its body): the watchdog kills the run naming the seed.
const heartbeat = startWatchdog("autograph fuzz");

const show = (x: unknown) => inspect(x, { depth: 6, breakLength: 160 });

function describeOutcome(o: Outcome): string {
  return `${o.threw ? `threw ${o.errorType}: ${o.errorMessage}` : `returned ${show(o.value)}`}; logs ${show(o.logs)}`;
}

function sameOutcome(a: Outcome, b: Outcome): boolean {
  try {
    assert.deepStrictEqual(a, b);
    return true;
  } catch {
    return false;
  }
}

interface Divergence {
  seed: number;
  report: string;
}

/** A converter under test: the converted function and a way to show its generated code. */
interface Converter {
  convert(native: AnyFn): AnyFn;
  source(native: AnyFn): string;
}

/**
 * The transform's entry point for one function, bound to the operators as sc.autograph binds it.
 * With JS values every `if` and `?:` takes its native copy; `nativeCopies: false` generates only
 * the staged form (closures given to ag.ifStmt / ag.ifExp), so its semantics are fuzzed too.
 */
function viaTransform(nativeCopies: boolean): Converter {
  const opts = { filename: "fuzz.js", nativeCopies };
  return {
    convert(native) {
      const r = convertFunctionSource(Function.prototype.toString.call(native), opts);
      return new Function(r.agName, `return (${r.code});`)(ag) as AnyFn;
    },
    source(native) {
      return convertFunctionSource(Function.prototype.toString.call(native), opts).code;
    },
  };
}

function checkProgram(p: GeneratedProgram, converter: Converter, timing: { convert: number }): Divergence | null {
  const native = new Function(...p.params, p.body) as AnyFn;
  let converted: AnyFn;
  const t0 = performance.now();
  try {
    converted = converter.convert(native);
  } catch (e) {
    return { seed: p.seed, report: `seed ${p.seed}: conversion failed: ${(e as Error).message}\n${p.source}` };
  }
  timing.convert += performance.now() - t0;
  for (const args of p.inputs) {
    const a = runCaptured(() => native(...args));
    const b = runCaptured(() => converted(...args));
    if (!sameOutcome(a, b)) {
      let generated: string;
      try {
        generated = converter.source(native);
      } catch (e) {
        generated = `(generated code unavailable: ${(e as Error).message})`;
      }
      return {
        seed: p.seed,
        report: [
          `seed ${p.seed}, arguments ${show(args)}:`,
          `  native:    ${describeOutcome(a)}`,
          `  converted: ${describeOutcome(b)}`,
          `program (generateProgram(${p.seed})):`,
          p.source,
          `generated:`,
          generated,
        ].join("\n"),
      };
    }
  }
  return null;
}

/** Runs `count` programs from `firstSeed` through `converter` (per seed); fails listing every divergence. */
function fuzz(label: string, converterFor: (seed: number) => Converter, firstSeed: number, count: number): void {
  const start = performance.now();
  const timing = { convert: 0 };
  const divergences: Divergence[] = [];
  let runs = 0;
  let threw = 0;
  for (let i = 0; i < count; i++) {
    const seed = firstSeed + i;
    if (i % 20 === 0) heartbeat(`${label}, seed ${seed}`);
    const p = generateProgram(seed);
    runs += p.inputs.length;
    const d = checkProgram(p, converterFor(seed), timing);
    if (d) divergences.push(d);
    if (i < 200) {
      // How often runs end in an exception (natively), to show the fuzzer exercises them.
      const f = new Function(...p.params, p.body) as AnyFn;
      for (const args of p.inputs) if (runCaptured(() => f(...args)).threw) threw++;
    }
  }
  const seconds = (performance.now() - start) / 1000;
  console.log(
    `autograph fuzz (${label}): ${count} programs (seeds ${firstSeed}..${firstSeed + count - 1}), ${runs} runs, ` +
      `${divergences.length} divergences, ${seconds.toFixed(1)} s (conversion ${(timing.convert / 1000).toFixed(1)} s, ` +
      `${(timing.convert / Math.max(1, count)).toFixed(1)} ms per program); ${threw} of the first ${Math.min(count, 200) * 3} runs end in an exception`,
  );
  if (divergences.length > 0) {
    assert.fail(
      `${divergences.length} of ${count} programs diverge (seeds ${divergences.map((d) => d.seed).join(", ")}):\n\n` +
        divergences
          .slice(0, SHOW)
          .map((d) => d.report)
          .join("\n\n"),
    );
  }
}

test("the program generator is deterministic and covers every construct", () => {
  const a = generateProgram(12345);
  const b = generateProgram(12345);
  assert.deepEqual(a, b);
  assert.notEqual(generateProgram(12346).body, a.body);
  // Over a sample, every construct appears, programs compile, and natively they terminate
  // without running out of fuel.
  const constructs: Record<string, RegExp> = {
    "if/else": /\} else \{/,
    "else if": /\} else if \(/,
    while: /^\s*(L\d+: )?while \(/m,
    "do-while": /\} while \(/,
    for: /for \(let i\d+ =/,
    "for-of": / of \[/,
    break: /break;/,
    "labeled break": /break [LB]\d+;/,
    continue: /continue;/,
    "labeled continue": /continue L\d+;/,
    "early return": /if \(.*\) return \[/,
    switch: /switch \(/,
    "labeled block": /B\d+: \{/,
    "&&": /&&/,
    "||": /\|\|/,
    "??": /\?\?/,
    "!": /!\(/,
    ternary: / \? /,
    "compound assignment": /[+\-*]= /,
    "++/--": /\+\+|--[a-z]/,
    "console.log": /console\.log\("L/,
    throw: /throw new RangeError/,
    "try/catch": /catch \(err\)/,
    finally: /finally \{/,
    closures: /fns\.push\(\(\) =>/,
    "closures updating state": /fns\.push\(\(\) => \(\w+ \+=/,
    "helper function": /helper\(/,
    "closure updating a variable (bump)": /bump\(/,
    "x[i] read": /[^.]arr\[/,
    "x[i] write": /^\s+arr\[.*\] [+-]?= /m,
    push: /arr\.push\(/,
    pop: /arr\.pop\(\)/,
    "object members": /obj\.[pq] [+-]?= /,
    strings: /"s" \+/,
    "block let/const": /^\s+(let|const) [kw]\d+ =/m,
    "callbacks (map/reduce/filter/some)": /\]\.(map|reduce|filter|some)\(\(/,
    "forEach updating a variable": /\.forEach\(\(q\d+\) => \{ if/,
    "built-ins as values": /\.map\((Math\.abs|Number)\)/,
    "isNaN / Number / Math.max": /(isNaN|Number|Math\.max)\(/,
    "helper via call/apply/bind": /helper\.(call|apply|bind)\(/,
    "arguments[i] writes": /arguments\[\d\] [+-]?= /,
    "TDZ read after an early return": /return \[?t\d+[,\]; ]/,
    "continue in finally": /\} finally \{\n\s+if \(.*\) continue;/,
  };
  const seen = new Map<string, number>();
  let outOfFuel = 0;
  const original = console.log;
  console.log = () => {};
  try {
    for (let s = 0; s < 300; s++) {
      const p = generateProgram(FIRST_SEED + s);
      for (const [name, re] of Object.entries(constructs)) if (re.test(p.body)) seen.set(name, (seen.get(name) ?? 0) + 1);
      const f = new Function(...p.params, p.body) as AnyFn;
      for (const args of p.inputs) {
        try {
          f(...args);
        } catch (e) {
          if ((e as Error).message === "out of fuel") outOfFuel++;
        }
      }
    }
  } finally {
    console.log = original;
  }
  for (const name of Object.keys(constructs)) assert.ok((seen.get(name) ?? 0) > 0, `no program in the sample uses ${name}`);
  assert.equal(outOfFuel, 0, "natively, generated programs terminate within their fuel");
});

test(`autograph fuzz: ${PROGRAMS} random programs, native vs converted (convertFunctionSource; odd seeds without native copies)`, () => {
  const withCopies = viaTransform(true);
  const stagedForm = viaTransform(false);
  fuzz("transform", (seed) => (seed % 2 === 1 ? stagedForm : withCopies), FIRST_SEED, PROGRAMS);
});

test(`autograph fuzz: ${AUTOGRAPH_PROGRAMS} random programs, native vs sc.autograph`, async () => {
  // Imported here, last: it installs the on-demand converter that ag.call uses for closures.
  const { autograph } = await import("../../src/autograph/api.js");
  const viaAutograph: Converter = { convert: (f) => autograph(f), source: (f) => autograph.toSource(f) };
  // Seeds after the bulk run's, so these programs are new ones.
  fuzz("sc.autograph", () => viaAutograph, FIRST_SEED + PROGRAMS, AUTOGRAPH_PROGRAMS);
});
