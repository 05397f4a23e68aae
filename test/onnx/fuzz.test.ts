/**
 * A seeded mutation fuzzer over the conformance models (test/fixtures/onnx-node): each model
 * is mutated (bytes flipped, cut or inserted; op types, attributes, tensor dims and dtypes,
 * node inputs, value types, opsets and node order changed), loaded and run on the case's own
 * inputs. Every failure must be one of Stagecraft's typed errors (a StagecraftError: the ONNX
 * layer's OnnxError or an op's ShapeError, DtypeError, ...), never a TypeError, RangeError, a
 * crash, a hang or an unbounded allocation (loads use small element and loop limits).
 * ONNX_FUZZ_ROUNDS=n runs n mutations per model (default 7: 1,190 models); ONNX_FUZZ_SEED=s another seed.
 *
 * Then the crafted classes (test/util/onnx-crafted.ts), a few seeded variants each: fan-out
 * functions, nested Loops, run-time growth, total bytes and FIFOs as external data, each of
 * which must give its typed error (OnnxLimitError / OnnxExternalDataError) promptly (the test's
 * timeout guards hangs) with bounded memory.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, readFileSync, existsSync, mkdtempSync, mkdirSync, writeFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { execFileSync, spawnSync } from "node:child_process";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import * as sc from "../../src/api/index.js";
import { Rng } from "../util/rng.js";
import { fanOutModel, nestedLoopsModel, doublingLoopModel, scanRowsModel, constantsSumModel, externalDataModel } from "../util/onnx-crafted.js";

const { onnx } = sc;
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const fixtures = path.join(root, "test/fixtures/onnx-node");
const ROUNDS = Number(process.env.ONNX_FUZZ_ROUNDS ?? 7);
const LIMITS = { maxElements: 2 ** 20, maxLoopIterations: 10_000 };

type Obj = Record<string, any>;

const OPS = ["Add", "Neg", "Reshape", "Transpose", "Concat", "Slice", "Gather", "MatMul", "Conv", "MaxPool", "Softmax", "ReduceSum", "Cast", "Expand", "Tile", "Pad", "Range", "ConstantOfShape", "Loop", "If", "Scan", "Resize", "TopK", "LSTM", "NoSuchOp", ""];
const INTS = [-(2 ** 40), -1_000_000_007, -2, -1, 0, 1, 2, 3, 7, 1_000_000_007, 2 ** 40];
const FLOATS = [NaN, Infinity, -Infinity, 0, -0, 1e30, -1e-30, 0.5];

function pick<T>(rng: Rng, xs: readonly T[]): T {
  return xs[rng.int(0, xs.length)]!;
}

/** Every message of a kind inside a model (nodes, tensors, attributes, value infos), subgraphs included. */
function collect(model: Obj): { nodes: Obj[]; tensors: Obj[]; attrs: Obj[]; values: Obj[]; graphs: Obj[] } {
  const out = { nodes: [] as Obj[], tensors: [] as Obj[], attrs: [] as Obj[], values: [] as Obj[], graphs: [] as Obj[] };
  const walkGraph = (g: Obj | undefined): void => {
    if (!g) return;
    out.graphs.push(g);
    for (const t of g.initializer ?? []) out.tensors.push(t);
    for (const v of [...(g.input ?? []), ...(g.output ?? [])]) out.values.push(v);
    for (const n of g.node ?? []) {
      out.nodes.push(n);
      for (const a of n.attribute ?? []) {
        out.attrs.push(a);
        if (a.t) out.tensors.push(a.t);
        walkGraph(a.g);
        for (const sg of a.graphs ?? []) walkGraph(sg);
      }
    }
  };
  walkGraph(model.graph);
  return out;
}

/** One structural mutation of a decoded model (in place); returns what it did. */
function mutateStructure(rng: Rng, model: Obj): string {
  const { nodes, tensors, attrs, values, graphs } = collect(model);
  switch (rng.int(0, 10)) {
    case 0: {
      const n = nodes.length > 0 ? pick(rng, nodes) : null;
      if (!n) return "no node";
      n.op_type = pick(rng, OPS);
      return `op_type ${n.op_type}`;
    }
    case 1: {
      const n = nodes.length > 0 ? pick(rng, nodes) : null;
      if (!n) return "no node";
      const ins: string[] = n.input ?? [];
      const r = rng.int(0, 4);
      if (r === 0) ins.pop();
      else if (r === 1) ins.push(ins[0] ?? "x");
      else if (r === 2 && ins.length > 0) ins[rng.int(0, ins.length)] = pick(rng, ["", "nowhere", ...(n.output ?? [])]);
      else (n.output ?? []).push("extra_out");
      n.input = ins;
      return "node inputs";
    }
    case 2: {
      const a = attrs.length > 0 ? pick(rng, attrs) : null;
      if (!a) return "no attribute";
      const r = rng.int(0, 5);
      if (r === 0) a.i = pick(rng, INTS);
      else if (r === 1) a.ints = Array.from({ length: rng.int(0, 6) }, () => pick(rng, INTS));
      else if (r === 2) a.f = pick(rng, FLOATS);
      else if (r === 3) a.type = rng.int(0, 16);
      else a.name = pick(rng, ["axis", "perm", "to", "value", "body", "pads", "__proto__"]);
      return `attribute ${a.name}`;
    }
    case 3: {
      const t = tensors.length > 0 ? pick(rng, tensors) : null;
      if (!t) return "no tensor";
      const r = rng.int(0, 5);
      if (r === 0) t.dims = Array.from({ length: rng.int(0, 5) }, () => pick(rng, [0, 1, 2, 3, 1000, 2 ** 31, -1]));
      else if (r === 1) t.data_type = rng.int(0, 28);
      else if (r === 2 && t.raw_data) t.raw_data = t.raw_data.subarray(0, rng.int(0, t.raw_data.length + 1));
      else if (r === 3) {
        t.data_location = 1;
        t.external_data = [{ key: "location", value: pick(rng, ["../../etc/passwd", "/etc/passwd", "missing.bin", "model.onnx"]) }];
      } else t.int64_data = Array.from({ length: rng.int(0, 4) }, () => pick(rng, INTS));
      return "tensor";
    }
    case 4: {
      const v = values.length > 0 ? pick(rng, values) : null;
      if (!v?.type?.tensor_type) return "no value type";
      if (rng.next() < 0.5) v.type.tensor_type.elem_type = rng.int(0, 28);
      else v.type.tensor_type.shape = { dim: Array.from({ length: rng.int(0, 5) }, () => (rng.next() < 0.3 ? { dim_param: "N" } : { dim_value: pick(rng, [0, 1, 2, 5, 2 ** 40]) })) };
      return "value type";
    }
    case 5: {
      const o = pick(rng, model.opset_import as Obj[]);
      o.version = rng.int(0, 32);
      if (rng.next() < 0.3) o.domain = pick(rng, ["", "ai.onnx", "ai.onnx.ml", "com.example"]);
      return "opset";
    }
    case 6: {
      const g = pick(rng, graphs);
      const ns: Obj[] = g.node ?? [];
      if (ns.length > 1) {
        const i = rng.int(0, ns.length);
        const j = rng.int(0, ns.length);
        [ns[i], ns[j]] = [ns[j]!, ns[i]!];
      }
      return "node order";
    }
    case 7: {
      const a = attrs.find((x) => x.g) ?? (attrs.length > 0 ? pick(rng, attrs) : null);
      if (!a) return "no attribute";
      if (a.g) {
        if (rng.next() < 0.5) delete a.g;
        else a.g.output = [];
      } else delete a.type;
      return "subgraph";
    }
    case 8: {
      model.ir_version = pick(rng, [0, 1, 3, 7, 8, 13, 14, 99]);
      return "ir_version";
    }
    default: {
      const g = pick(rng, graphs);
      if (g.output?.length) g.output[0].name = pick(rng, ["", "missing", "x"]);
      return "graph output";
    }
  }
}

/** Byte-level damage: flips, cuts, insertions. */
function mutateBytes(rng: Rng, bytes: Uint8Array): Uint8Array {
  const b = new Uint8Array(bytes); // (a copy: Buffer.slice would be a view)
  switch (rng.int(0, 3)) {
    case 0:
      for (let k = rng.int(1, 8); k > 0; k--) b[rng.int(0, b.length)] ^= 1 << rng.int(0, 8);
      return b;
    case 1:
      return b.subarray(0, rng.int(0, b.length));
    default: {
      const at = rng.int(0, b.length);
      const junk = Uint8Array.from({ length: rng.int(1, 16) }, () => rng.int(0, 256));
      const out = new Uint8Array(b.length + junk.length);
      out.set(b.subarray(0, at));
      out.set(junk, at);
      out.set(b.subarray(at), at + junk.length);
      return out;
    }
  }
}

/** FNV-1a of a case name (31 bits), to give each case its own mutation stream. */
function nameHash(name: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < name.length; i++) h = Math.imul(h ^ name.charCodeAt(i), 0x01000193);
  return h >>> 1;
}

function caseInputs(dir: string): Uint8Array[] {
  const set = path.join(dir, "test_data_set_0");
  if (!existsSync(set)) return [];
  return readdirSync(set)
    .filter((f) => f.startsWith("input_"))
    .sort((a, b) => Number(a.slice(6, -3)) - Number(b.slice(6, -3)))
    .map((f) => readFileSync(path.join(set, f)));
}

test(`mutated conformance models raise only typed errors (${ROUNDS} mutations per model)`, () => {
  const cases = readdirSync(fixtures).filter((d) => existsSync(path.join(fixtures, d, "model.onnx")));
  const seed = Number(process.env.ONNX_FUZZ_SEED ?? 20260613);
  const outcomes = new Map<string, number>();
  let total = 0;
  for (const name of cases) {
    // One stream per case: adding a fixture case does not change the mutations of the others.
    const rng = new Rng(seed ^ nameHash(name));
    const dir = path.join(fixtures, name);
    const original = readFileSync(path.join(dir, "model.onnx"));
    const inputBytes = caseInputs(dir);
    for (let round = 0; round < ROUNDS; round++) {
      let bytes: Uint8Array;
      let what: string;
      if (rng.next() < 0.3) {
        bytes = mutateBytes(rng, original);
        what = "bytes";
      } else {
        const model = onnx.Messages.ModelProto.toObject(onnx.Messages.ModelProto.decode(original), { longs: Number, arrays: true }) as Obj;
        what = mutateStructure(rng, model);
        if (rng.next() < 0.3) what += ", " + mutateStructure(rng, model);
        try {
          bytes = onnx.Messages.ModelProto.encode(onnx.Messages.ModelProto.fromObject(model)).finish();
        } catch {
          continue; // the mutation is not even encodable (protobufjs refused it): nothing to load
        }
      }
      total++;
      let outcome = "ran";
      try {
        const m = onnx.load(bytes, LIMITS);
        const inputs = inputBytes.map((b, i) => {
          try {
            return onnx.readTensorProto(onnx.decode("TensorProto", b), `input ${i}`);
          } catch {
            return sc.zeros([1]);
          }
        });
        m(...inputs.slice(0, m.inputs.length));
      } catch (e) {
        if (!(e instanceof sc.StagecraftError)) {
          assert.fail(`${name}, round ${round} (${what}): ${(e as Error)?.constructor?.name}: ${(e as Error)?.message}\n${(e as Error)?.stack?.split("\n").slice(1, 6).join("\n")}`);
        }
        outcome = e.constructor.name;
      }
      outcomes.set(outcome, (outcomes.get(outcome) ?? 0) + 1);
    }
  }
  assert.ok(total >= 1000 || ROUNDS < 7, `only ${total} mutated models`);
  console.log(`onnx fuzz: ${total} mutated models: ${[...outcomes].sort((a, b) => b[1] - a[1]).map(([k, v]) => `${k} ${v}`).join(", ")}`);
});

// ---- crafted classes ---------------------------------------------------------------------------

const CRAFTED_SEED = Number(process.env.ONNX_FUZZ_SEED ?? 20260613);
/** Heap + external growth allowed for one crafted case (none may approach what it asks for). */
const MEMORY_SLACK = 512 * 2 ** 20;

/** Runs `run` expecting `type` with a message matching `re`; checks the process's memory did not jump. */
function refuses(label: string, run: () => unknown, type: abstract new (...a: never[]) => Error, re: RegExp): void {
  const before = process.memoryUsage().rss;
  assert.throws(run, (e: unknown) => {
    if (!(e instanceof type)) assert.fail(`${label}: expected ${type.name}, got ${(e as Error)?.constructor?.name}: ${(e as Error)?.message}`);
    if (!re.test(e.message)) assert.fail(`${label}: ${type.name} message ${JSON.stringify(e.message)} does not match ${re}`);
    return true;
  }, label);
  const grew = process.memoryUsage().rss - before;
  assert.ok(grew < MEMORY_SLACK, `${label}: rss grew ${(grew / 2 ** 20).toFixed(0)} MiB`);
}

const crafted = new Map<string, number>();
const count = (cls: string) => crafted.set(cls, (crafted.get(cls) ?? 0) + 1);

test("crafted (a) fan-out: functions calling the next twice, depth 12-30, are refused past maxInlinedNodes", { timeout: 60_000 }, () => {
  const rng = new Rng(CRAFTED_SEED ^ 0xa);
  // within the limit the model runs and gives 2^depth (so the refusals below are of a working model)
  assert.equal((onnx.load(fanOutModel(5))(sc.scalar(0)) as sc.Tensor).item(), 32);
  for (let v = 0; v < 4; v++) {
    const depth = rng.int(12, 31);
    // the default (16,384) once (the slowest: it inlines that many nodes first), else a smaller one
    const maxInlinedNodes = v === 0 ? undefined : rng.int(64, 2048);
    const bytes = fanOutModel(depth);
    assert.ok(bytes.length < 4096);
    const fn = onnx.load(bytes, maxInlinedNodes === undefined ? {} : { maxInlinedNodes });
    refuses(`fan-out depth ${depth}, maxInlinedNodes ${maxInlinedNodes ?? "default"}`, () => fn(sc.scalar(0)), onnx.OnnxLimitError, new RegExp(`inline more than ${maxInlinedNodes ?? 16384} nodes \\(the maxInlinedNodes load option\\)`));
    count("fan-out");
  }
});

test("crafted (b) nested Loops: each count under maxLoopIterations, their product past maxTotalIterations", { timeout: 60_000 }, () => {
  const rng = new Rng(CRAFTED_SEED ^ 0xb);
  for (let v = 0; v < 6; v++) {
    const runTime = v % 2 === 1; // known counts are refused while tracing; run-time ones as they run
    const depth = runTime ? 2 : rng.int(2, 4);
    const maxLoopIterations = runTime ? 64 : 4096;
    const trips = Array.from({ length: depth }, () => rng.int(maxLoopIterations >> 2, maxLoopIterations + 1));
    const product = trips.reduce((a, b) => a * b, 1);
    // a total under the product (and over each count, so it is the total that refuses)
    const maxTotalIterations = rng.int(Math.max(...trips) + 1, Math.min(product, runTime ? 1500 : 2 ** 20));
    const fn = onnx.load(nestedLoopsModel(trips, runTime), { maxLoopIterations, maxTotalIterations });
    const args = [...(runTime ? trips.map((t) => sc.tensor([t], "int64")) : []), sc.scalar(0)];
    refuses(`nested ${trips.join(" x ")} (${runTime ? "run-time" : "known"}), maxTotalIterations ${maxTotalIterations}`, () => fn(...args), onnx.OnnxLimitError, /iterations in all.*maxTotalIterations/);
    count("nesting");
  }
  // and counts within the total run: s = the product
  assert.equal((onnx.load(nestedLoopsModel([3, 4], true), { maxTotalIterations: 15 })(sc.tensor([3], "int64"), sc.tensor([4], "int64"), sc.scalar(0)) as sc.Tensor).item(), 12);
});

test("crafted (c) run-time growth: a Loop doubling its carried tensor, and a scan output, are held to maxElements", { timeout: 60_000 }, () => {
  const rng = new Rng(CRAFTED_SEED ^ 0xc);
  for (let v = 0; v < 3; v++) {
    const maxElements = 2 ** rng.int(8, 15);
    const width = rng.int(1, 5);
    const fits = Math.floor(Math.log2(maxElements / width)); // doublings that stay within the limit
    const fn = onnx.load(doublingLoopModel(width), { maxElements });
    assert.equal((fn(sc.scalar(fits, "int64"), sc.ones([width])) as sc.Tensor).shape[0], width * 2 ** fits);
    const m = fits + rng.int(1, 40);
    refuses(`doubling width ${width}, ${m} iterations, maxElements ${maxElements}`, () => fn(sc.scalar(m, "int64"), sc.ones([width])), onnx.OnnxLimitError, new RegExp(`grow.*grew past the limit of ${maxElements} elements.*maxElements`));
    count("run-time growth");
  }
  for (let v = 0; v < 3; v++) {
    const maxElements = 2 ** rng.int(8, 12);
    const width = rng.int(2, 33);
    const fits = Math.floor(maxElements / width); // rows that stay within the limit
    const fn = onnx.load(scanRowsModel(width), { maxElements });
    assert.deepEqual((fn(sc.scalar(fits, "int64"), sc.zeros([width])) as sc.Tensor[])[1]!.shape, [fits, width]);
    const m = fits + rng.int(1, 200);
    refuses(`scan rows of ${width}, ${m} iterations, maxElements ${maxElements}`, () => fn(sc.scalar(m, "int64"), sc.zeros([width])), onnx.OnnxLimitError, /rows.*scan output/);
    count("run-time growth");
  }
});

test("crafted (d) total bytes: k ConstantOfShape and their Sum, each within maxElements, are refused past maxTotalBytes", { timeout: 60_000 }, () => {
  const rng = new Rng(CRAFTED_SEED ^ 0xd);
  for (let v = 0; v < 5; v++) {
    const k = rng.int(2, 7);
    const shape = [rng.int(16, 257), rng.int(16, 257)];
    const bytesEach = 4 * shape[0]! * shape[1]!;
    // room for j of the k + 1 values (k constants and the sum), j < k + 1
    const maxTotalBytes = bytesEach * rng.int(1, k + 1);
    const fn = onnx.load(constantsSumModel(k, shape), { maxElements: shape[0]! * shape[1]!, maxTotalBytes });
    refuses(`${k} constants of [${shape.join(", ")}], maxTotalBytes ${maxTotalBytes}`, () => fn(), onnx.OnnxLimitError, /in all.*the maxTotalBytes load option/);
    // with room for all of them it runs: 1 + 2 + ... + k
    const all = onnx.load(constantsSumModel(k, shape), { maxElements: shape[0]! * shape[1]!, maxTotalBytes: bytesEach * (k + 2) + 4096 })() as sc.Tensor;
    assert.equal(all.dataSync()[0], (k * (k + 1)) / 2);
    count("total bytes");
  }
});

test("crafted (e) FIFOs as external data in the model's folder are refused, not waited on", { timeout: 60_000 }, (t) => {
  if (process.platform === "win32") {
    t.skip("FIFOs (mkfifo) are POSIX only");
    return;
  }
  const rng = new Rng(CRAFTED_SEED ^ 0xe);
  const dir = mkdtempSync(path.join(tmpdir(), "onnx-fuzz-fifo-"));
  try {
    const files: { file: string; location: string }[] = [];
    for (let v = 0; v < 4; v++) {
      const sub = rng.next() < 0.5 ? `d${v}` : "";
      const location = path.posix.join(sub, `w${v}${pick(rng, [".bin", ".data", ""])}`);
      if (sub) mkdirSync(path.join(dir, sub), { recursive: true });
      execFileSync("mkfifo", [path.join(dir, location)]);
      const file = path.join(dir, `m${v}.onnx`);
      writeFileSync(file, externalDataModel(location, rng.int(0, 2) * 16, 16));
      files.push({ file, location });
    }
    // in a child process: a load that blocked on a FIFO would block this runner's event loop too
    const script = `import * as sc from ${JSON.stringify(path.join(root, "src/api/index.ts"))};
for (const f of ${JSON.stringify(files.map((f) => f.file))}) { try { sc.onnx.load(f); console.log("loaded"); } catch (e) { console.log(e.constructor.name + ": " + e.message); } }`;
    const r = spawnSync(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], { cwd: root, timeout: 30_000, encoding: "utf8" });
    assert.equal(r.signal, null, `a load did not return (killed by ${r.signal}); so far:\n${r.stdout}`);
    const lines = r.stdout.trim().split("\n");
    assert.equal(lines.length, files.length, r.stdout + r.stderr);
    files.forEach(({ location }, i) => {
      assert.ok(lines[i]!.startsWith("OnnxExternalDataError: ") && lines[i]!.includes(`${JSON.stringify(location)} is not a regular file`), `${location}: ${lines[i]}`);
      count("FIFO");
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("crafted classes: counts", () => {
  console.log(`onnx fuzz crafted: ${[...crafted].map(([k, v]) => `${k} ${v}`).join(", ")}`);
  assert.ok(crafted.size >= 4);
});
