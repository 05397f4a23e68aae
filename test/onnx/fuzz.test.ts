/**
 * A seeded mutation fuzzer over the conformance models (test/fixtures/onnx-node): each model
 * is mutated (bytes flipped, cut or inserted; op types, attributes, tensor dims and dtypes,
 * node inputs, value types, opsets and node order changed), loaded and run on the case's own
 * inputs. Every failure must be one of Stagecraft's typed errors (a StagecraftError: the ONNX
 * layer's OnnxError or an op's ShapeError, DtypeError, ...), never a TypeError, RangeError, a
 * crash, a hang or an unbounded allocation (loads use small element and loop limits).
 * ONNX_FUZZ_ROUNDS=n runs n mutations per model (default 7: 1,190 models); ONNX_FUZZ_SEED=s another seed.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, readFileSync, existsSync } from "node:fs";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import * as sc from "../../src/api/index.js";
import { Rng } from "../util/rng.js";

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
