/**
 * ONNX backend node tests as a conformance suite (`npx stagecraft onnx-conformance <dir>`):
 * each case folder holds model.onnx and test_data_set_N/{input,output}_K.pb. A case passes
 * when every output matches (NODE_TEST_TOLERANCE for floats, exact otherwise); it is skipped
 * when the importer says it does not support something (an op, a dtype, an attribute), and
 * fails otherwise (a wrong value, or any other error), with the reason. A case whose program
 * draws random numbers cannot match one generator's stored draw: it is "checked" without values
 * instead (dtype, shape and the op's contract, conformance-random.ts), and counted apart.
 */
import { existsSync, path, readdirSync, readFileSync, statSync } from "../core/platform/node.js";
import { Tensor } from "../core/tensor.js";
import { decode, type SequenceProto, type OptionalProto, type TypeProto } from "./protobuf.js";
import { readTensorProto } from "./tensor-proto.js";
import { mismatch, typeMismatch, NODE_TEST_TOLERANCE, type Tolerance } from "./compare.js";
import { randomOpsIn, RANDOM_CONTRACTS } from "./conformance-random.js";
import { OnnxUnsupportedError } from "./errors.js";
import { load, type ModelValue } from "./import/load.js";
import { supportedOnnxOps } from "./import/op-table.js";
import { checkOptions, optionKeys } from "../core/options.js";

/** "checked": the outputs are random draws, checked without values (conformance-random.ts). */
export type CaseStatus = "passed" | "checked" | "failed" | "skipped";

export interface CaseResult {
  name: string;
  /** The op family the case tests (its main op type). */
  family: string;
  status: CaseStatus;
  /** Why it failed or was skipped, (checked) what was checked, or (passed) the tolerance override it passed under. */
  reason?: string;
}

/**
 * Cases whose stored expected outputs carry the reference implementation's own rounding error
 * above NODE_TEST_TOLERANCE's atol, each with the tolerance that covers that error and why.
 * The error is the reference's, not ours: each entry names the check that shows it.
 */
export const REFERENCE_TOLERANCE: ReadonlyMap<string, { tolerance: Tolerance; why: string }> = new Map([
  [
    "test_dft_inverse_opset19",
    {
      // numpy.fft.ifft of a complex64 array computes in single precision: the exactly-zero
      // imaginary parts at the Nyquist frequency come out as 1.9073e-7 (numpy in float64 gives
      // 7e-16; ours 6e-15). 1.9e-7 is 0.004 float32 ulps of the output's largest value (54),
      // below what any float32 DFT can promise but above atol 1e-7. Two float32 epsilons of
      // absolute slack (as other ONNX backends use for this case) covers it.
      tolerance: { rtol: 1e-3, atol: 2 * 2 ** -23 },
      why: "expected zeros hold numpy's single-precision ifft rounding (1.9e-7)",
    },
  ],
]);

export interface ConformanceOptions {
  /** Only cases whose folder name matches. */
  filter?: RegExp;
  tolerance?: Tolerance;
  /** Called after each case (progress). */
  onCase?: (r: CaseResult, index: number, total: number) => void;
}

const CONFORMANCE_OPTIONS = optionKeys<ConformanceOptions>()("filter", "tolerance", "onCase");

export interface ConformanceReport {
  results: CaseResult[];
  counts: Record<CaseStatus, number>;
  /** Counts per op family. */
  families: Map<string, Record<CaseStatus, number>>;
  /** Skip reasons (the first line of each), with how many cases each covers. */
  skipReasons: Map<string, number>;
  /** Passed cases that passed under a REFERENCE_TOLERANCE override, with its reason. */
  overrides: Map<string, string>;
  /** Cases checked without values (random draws), with what was checked. */
  checked: Map<string, string>;
}

/** The case folders of a directory (those holding model.onnx), sorted. */
export function listCases(dir: string): string[] {
  return readdirSync(dir)
    .filter((d) => existsSync(path.join(dir, d, "model.onnx")))
    .sort();
}

/** Reads one input/output file as the type the model declares for it. */
function readValue(file: string, type: TypeProto | undefined): ModelValue {
  const bytes = readFileSync(file);
  if (type?.sequence_type) return readSequence(decode("SequenceProto", bytes, file));
  if (type?.optional_type) return readOptional(decode("OptionalProto", bytes, file));
  return readTensorProto(decode("TensorProto", bytes, file), path.basename(file));
}
function readSequence(s: SequenceProto): ModelValue[] {
  if (s.elem_type !== 1 && s.elem_type !== 0) throw new OnnxUnsupportedError(`sequences of non-tensor elements (type ${s.elem_type}) are not supported`, "onnx.conformance");
  return s.tensor_values.map((t, i) => readTensorProto(t, `sequence element ${i}`));
}
function readOptional(o: OptionalProto): ModelValue {
  if (o.tensor_value) return readTensorProto(o.tensor_value, "optional value");
  if (o.sequence_value) return readSequence(o.sequence_value);
  return null;
}

/** A comparison of one output tensor with its expected one: null when it matches, else how it does not. */
type TensorCheck = (actual: Tensor, expected: Tensor) => string | null;

/** Walks an output (a tensor, a sequence, an optional) against its expected value, checking each tensor with `check`. */
function compareValue(actual: unknown, expected: ModelValue, check: TensorCheck, what: string): string | null {
  if (expected === null) return actual === null || actual === undefined ? null : `${what}: expected an empty optional`;
  if (Array.isArray(expected)) {
    if (!Array.isArray(actual)) return `${what}: expected a sequence of ${expected.length}`;
    if (actual.length !== expected.length) return `${what}: sequence of ${actual.length}, expected ${expected.length}`;
    for (let i = 0; i < expected.length; i++) {
      const m = compareValue(actual[i], expected[i]!, check, `${what}[${i}]`);
      if (m) return m;
    }
    return null;
  }
  if (!(actual instanceof Tensor)) return `${what}: expected a tensor`;
  const m = check(actual, expected);
  return m === null ? null : `${what}: ${m}`;
}

/** Runs one case folder. */
export function runCase(caseDir: string, tolerance: Tolerance = NODE_TEST_TOLERANCE): CaseResult {
  const name = path.basename(caseDir);
  const override = REFERENCE_TOLERANCE.get(name);
  const tol = override ? { rtol: Math.max(tolerance.rtol, override.tolerance.rtol), atol: Math.max(tolerance.atol, override.tolerance.atol) } : tolerance;
  let family = name.replace(/^test_/, "");
  try {
    // (our graph: the case checks our importer, not onnxruntime's session of the same bytes)
    const model = load(path.join(caseDir, "model.onnx"), { nativeSession: false });
    family = familyOf(name, model.proto.graph?.node.map((n) => n.op_type) ?? []);
    const graph = model.proto.graph!;
    const types = new Map(graph.input.concat(graph.output).map((v) => [v.name, v.type]));
    const sets = readdirSync(caseDir).filter((d) => d.startsWith("test_data_set_") && statSync(path.join(caseDir, d)).isDirectory());
    if (sets.length === 0) return { name, family, status: "skipped", reason: "no test data" };
    let checked: string | null = null;
    for (const set of sets.sort()) {
      const dir = path.join(caseDir, set);
      const inputs = model.inputs.map((info, k) => readValue(path.join(dir, `input_${k}.pb`), types.get(info.name)));
      const expected = model.outputs.map((info, k) => readValue(path.join(dir, `output_${k}.pb`), types.get(info.name)));
      const feeds: Record<string, ModelValue> = Object.fromEntries(inputs.map((v, k) => [model.inputs[k]!.name, v]));
      const actual: Record<string, ModelValue> = model.run(feeds);
      const concrete = model.concrete(...inputs);
      const draws = randomOpsIn(concrete.graph, concrete.library);
      const contract = draws.length > 0 ? RANDOM_CONTRACTS.get(family) : undefined;
      if (draws.length > 0 && contract === undefined) return { name, family, status: "skipped", reason: `its outputs are random draws (${draws.join(", ")}) and no contract check is written for ${family}` };
      // A random draw's values are the generator's: compare its dtypes and shapes here, the contract checks the rest.
      const check: TensorCheck = contract ? typeMismatch : (a, e) => mismatch(a, e, tol);
      for (let k = 0; k < expected.length; k++) {
        const o = model.outputs[k]!;
        const m = compareValue(actual[o.name], expected[k]!, check, `output ${JSON.stringify(o.name)}`);
        if (m) return { name, family, status: "failed", reason: `${set}: ${m}` };
      }
      if (contract) {
        const m = contract.check({ graph, feeds, outputs: model.outputs.map((o) => actual[o.name]!), tolerance: tol });
        if (m) return { name, family, status: "failed", reason: `${set}: ${m}` };
        checked = `random draws (${draws.join(", ")}): dtype and shape exact, ${contract.what}`;
      }
    }
    if (checked !== null) return { name, family, status: "checked", reason: checked };
    return override ? { name, family, status: "passed", reason: `tolerance atol ${tol.atol.toPrecision(3)}: ${override.why}` } : { name, family, status: "passed" };
  } catch (e) {
    const err = e as Error;
    const reason = `${err.name ?? "Error"}: ${firstLine(err.message ?? String(e))}`;
    return { name, family, status: e instanceof OnnxUnsupportedError ? "skipped" : "failed", reason };
  }
}

/** Runs every case of `dir`. */
export function runConformance(dir: string, options: ConformanceOptions = {}): ConformanceReport {
  checkOptions("onnx.runConformance", options, CONFORMANCE_OPTIONS);
  const cases = listCases(dir).filter((c) => !options.filter || options.filter.test(c));
  const results: CaseResult[] = [];
  cases.forEach((c, i) => {
    const r = runCase(path.join(dir, c), options.tolerance);
    results.push(r);
    options.onCase?.(r, i, cases.length);
  });
  const counts: Record<CaseStatus, number> = { passed: 0, checked: 0, failed: 0, skipped: 0 };
  const families = new Map<string, Record<CaseStatus, number>>();
  const skipReasons = new Map<string, number>();
  const overrides = new Map<string, string>();
  const checked = new Map<string, string>();
  for (const r of results) {
    counts[r.status]++;
    if (r.status === "passed" && r.reason) overrides.set(r.name, r.reason);
    if (r.status === "checked") checked.set(r.name, r.reason ?? "");
    let f = families.get(r.family);
    if (!f) families.set(r.family, (f = { passed: 0, checked: 0, failed: 0, skipped: 0 }));
    f[r.status]++;
    if (r.status === "skipped") {
      const reason = (r.reason ?? "").replace(/ \(at [^)]*\)$/, "").replace(/node "[^"]*"/g, "node").replace(/^OnnxUnsupportedError: onnx\.load: /, "");
      skipReasons.set(reason, (skipReasons.get(reason) ?? 0) + 1);
    }
  }
  return { results, counts, families, skipReasons, overrides, checked };
}

/** The op family of a case: its op type, or for a small graph the op whose name the case's name starts with. */
function familyOf(caseName: string, opTypes: string[]): string {
  const unique = [...new Set(opTypes)];
  if (unique.length === 1) return unique[0]!;
  // An expanded case (the op's function body) is named after the op: match the longest op name.
  const flat = caseName.replace(/^test_/, "").replace(/_/g, "").toLowerCase();
  let best = "";
  for (const op of [...unique, ...supportedOnnxOps()]) if (flat.startsWith(op.toLowerCase()) && op.length > best.length) best = op;
  return best || caseName.replace(/^test_/, "").split("_")[0]!;
}

function firstLine(s: string): string {
  const line = s.split("\n")[0]!;
  return line.length > 300 ? `${line.slice(0, 300)}...` : line;
}

/** The report as text: totals, per family, and the skip reasons. */
export function formatReport(report: ConformanceReport, verbose = false): string {
  const lines: string[] = [];
  const total = report.results.length;
  if (verbose) {
    for (const r of report.results) if (r.status !== "passed" && r.status !== "checked") lines.push(`${r.status.toUpperCase().padEnd(7)} ${r.name}: ${r.reason}`);
    lines.push("");
  }
  lines.push("By op family (passed/failed/skipped):");
  for (const [f, c] of [...report.families].sort((a, b) => a[0].localeCompare(b[0]))) {
    lines.push(`  ${f.padEnd(34)} ${c.passed}/${c.failed}/${c.skipped}${c.checked > 0 ? `  + ${c.checked} checked without values` : ""}`);
  }
  lines.push("", "Skip reasons:");
  for (const [reason, k] of [...report.skipReasons].sort((a, b) => b[1] - a[1])) lines.push(`  ${String(k).padStart(4)}  ${reason}`);
  if (report.overrides.size > 0) {
    lines.push("", "Passed under a documented tolerance override (the reference's rounding, see REFERENCE_TOLERANCE):");
    for (const [name, why] of report.overrides) lines.push(`  ${name}: ${why}`);
  }
  if (report.checked.size > 0) {
    lines.push("", "Checked without values (random draws: no generator reproduces the stored draw; see RANDOM_CONTRACTS):");
    for (const [name, what] of report.checked) lines.push(`  ${name}: ${what}`);
  }
  const { passed, checked, failed, skipped } = report.counts;
  const randomPart = checked > 0 ? `, ${checked} checked without values (random draws)` : "";
  lines.push("", `${total} cases: ${passed} passed (${((100 * passed) / Math.max(total, 1)).toFixed(1)}%)${randomPart}, ${failed} failed, ${skipped} skipped`);
  return lines.join("\n");
}
