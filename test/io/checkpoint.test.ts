/** Checkpoints: object-graph matching, restore-on-create, optimizer state, safetensors files, damage. */
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, writeFileSync, readdirSync, rmSync, existsSync, statSync } from "node:fs";
import { spawn, spawnSync } from "node:child_process";
import * as os from "node:os";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import * as sc from "../../src/api/index.js";

const { nn, io } = sc;
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const dir = mkdtempSync(path.join(os.tmpdir(), "stagecraft-ckpt-"));
process.on("exit", () => rmSync(dir, { recursive: true, force: true }));

const makeModel = (seed?: number) =>
  new nn.Sequential(new nn.Linear(4, seed === undefined ? {} : { seed }), new nn.ReLU(), new nn.BatchNorm(), new nn.Linear(2, seed === undefined ? {} : { seed: seed + 1 }));
const x = sc.random.normal([5, 3], { seed: 1 });
const y = sc.tensor([0, 1, 1, 0, 1], "int32");
const trainSteps = (m: sc.nn.Module, opt: sc.optim.Optimizer, n: number) => {
  for (let i = 0; i < n; i++) opt.minimize(() => nn.softmaxCrossEntropy(m.call(x), y), () => m.parameters());
};
const values = (m: sc.nn.Module) => m.variables().map((v) => Array.from(v.dataSync()));

test("save/restore by object graph: a second copy of the model restores, whatever order it made its variables in", () => {
  const a = makeModel(1);
  const opt = new sc.optim.Adam({ learningRate: 0.05 });
  trainSteps(a, opt, 3);
  const file = path.join(dir, "a.safetensors");
  io.save({ model: a, optimizer: opt }, file);

  // The copy is built eagerly in another order (its last layer first), with other initial values.
  const b = makeModel(99);
  (b.layers[3] as sc.nn.Linear).call(sc.zeros([1, 4]));
  b.call(x);
  const status = io.restore({ model: b, optimizer: new sc.optim.Adam({ learningRate: 0.05 }) }, file, { deferred: true });
  assert.deepEqual(values(b), values(a));
  assert.equal(status.parked.size, 12, "Adam's slots wait for the copy's first step");
  assert.throws(() => status.assertConsumed(), (e: unknown) => e instanceof io.CheckpointError && /12 saved value\(s\) not restored: optimizer\/slots\/model\/layers\.0\/kernel\/m/.test(e.message));
  status.assertExistingObjectsMatched();
  // Two copies of one model in one checkpoint restore into two copies.
  const pair = path.join(dir, "pair.safetensors");
  const c = makeModel(3);
  c.call(x);
  io.save([a, c], pair);
  const [a2, c2] = [makeModel(), makeModel()];
  a2.call(x);
  c2.call(x);
  io.restore([a2, c2], pair).assertConsumed();
  assert.deepEqual(values(a2), values(a));
  assert.deepEqual(values(c2), values(c));
});

test("restore-on-create: variables and optimizer slots made after restore get the saved values, and training continues identically", () => {
  const a = makeModel(4);
  const optA = new sc.optim.Adam({ learningRate: sc.optim.cosineDecay({ initial: 0.05, decaySteps: 10 }) });
  trainSteps(a, optA, 3);
  const file = path.join(dir, "resume.safetensors");
  new io.Checkpoint({ model: a, optimizer: optA }).save(file);

  const b = makeModel(); // lazy: no variables yet
  const optB = new sc.optim.Adam({ learningRate: sc.optim.cosineDecay({ initial: 0.05, decaySteps: 10 }) });
  const status = new io.Checkpoint({ model: b, optimizer: optB }).restore(file, { deferred: true });
  assert.equal(b.variables().length, 0);
  assert.equal(optB.iterations.item(), 3, "the step count is restored at once");
  assert.ok(status.parked.size > 0);
  // Continue both for 2 steps (staged for b): identical numbers, so the slots were restored.
  trainSteps(a, optA, 2);
  const step = sc.stage((m: sc.nn.Module, o: sc.optim.Optimizer) => o.minimize(() => nn.softmaxCrossEntropy(m.call(x), y), () => m.parameters()));
  step(b, optB);
  step(b, optB);
  status.assertConsumed();
  assert.deepEqual(values(b), values(a));
  assert.equal(optB.iterations.item(), 5);
});

test("mismatched, truncated and corrupted files give CheckpointErrors naming the file and the entry", () => {
  const a = makeModel(5);
  a.call(x);
  const file = path.join(dir, "good.safetensors");
  io.save({ model: a }, file);
  const bytes = readFileSync(file);
  const expectError = (f: () => unknown, re: RegExp) => assert.throws(f, (e: unknown) => e instanceof io.CheckpointError && re.test(e.message) && e.path !== undefined);

  const wide = new nn.Sequential(new nn.Linear(5), new nn.ReLU(), new nn.BatchNorm(), new nn.Linear(2));
  wide.call(x);
  expectError(() => io.restore({ model: wide }, file), /good\.safetensors, entry "model\/layers\.0\/kernel": has shape \[3, 4\] but variable .* has shape \[3, 5\]/);
  const f64 = new nn.Sequential(new nn.Linear(4, { dtype: "float64" }));
  f64.call(sc.cast(x, "float64"));
  expectError(() => io.restore({ model: f64 }, file), /entry "model\/layers\.0\/kernel": has dtype float32 but variable .* has dtype float64/);

  const truncated = path.join(dir, "truncated.safetensors");
  for (const keep of [4, 100, bytes.length - 7]) {
    writeFileSync(truncated, bytes.subarray(0, keep));
    expectError(() => io.restore({ model: makeModel() }, truncated), /truncated\.safetensors.*(the file is truncated|not valid JSON)/);
  }
  const corrupted = path.join(dir, "corrupted.safetensors");
  const bad = Buffer.from(bytes);
  bad[8] = 0x78; // the header's JSON no longer starts with "{"
  writeFileSync(corrupted, bad);
  expectError(() => io.restore({ model: makeModel() }, corrupted), /corrupted\.safetensors: the header is not valid JSON/);
  const header = Number(bytes.readBigUInt64LE(0));
  const json = JSON.parse(bytes.subarray(8, 8 + header).toString()) as Record<string, { data_offsets: number[] }>;
  const name = "model/layers.0/bias";
  json[name]!.data_offsets = [json[name]!.data_offsets[0]! + 4, json[name]!.data_offsets[1]! + 4];
  const text = Buffer.from(JSON.stringify(json).padEnd(header));
  writeFileSync(corrupted, Buffer.concat([bytes.subarray(0, 8), text, bytes.subarray(8 + header)]));
  expectError(() => io.restore({ model: makeModel() }, corrupted), /entry "model\/layers\.0\/bias": (leaves a hole|overlaps)/);
  expectError(() => io.restore({ model: makeModel() }, path.join(dir, "missing.safetensors")), /missing\.safetensors: cannot read the checkpoint/);
  // A safetensors file without an object graph is refused for restore (and readable as tensors).
  expectError(() => io.restore({ model: makeModel() }, path.join(ROOT, "test/fixtures/safetensors/small.safetensors")), /without a Stagecraft object graph/);
});

test("a process killed while writing a checkpoint leaves the previous checkpoint whole", async () => {
  const file = path.join(dir, "killed.safetensors");
  const a = makeModel(6);
  a.call(x);
  io.save({ model: a }, file);
  const before = readFileSync(file);
  // The child writes a ~64 MB checkpoint over the same path; it is killed once its temporary file grows.
  const child = spawn(process.execPath, ["--import", "tsx", "-e", `
    import * as sc from ${JSON.stringify(path.join(ROOT, "src/api/index.ts"))};
    const big = sc.variable(sc.zeros([16, 1024, 1024]));
    sc.io.save({ model: { big } }, ${JSON.stringify(file)});
    console.log("finished");`], { cwd: ROOT, stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  child.stdout.on("data", (d) => (output += d));
  child.stderr.on("data", (d) => (output += d));
  const killedMidWrite = await new Promise<boolean>((resolve) => {
    const timer = setInterval(() => {
      const tmp = readdirSync(dir).find((n) => n.startsWith(".killed.safetensors.tmp-"));
      if (tmp && statSync(path.join(dir, tmp)).size > 0) {
        child.kill("SIGKILL");
        clearInterval(timer);
        resolve(true);
      }
    }, 2);
    child.on("exit", () => {
      clearInterval(timer);
      resolve(false);
    });
  });
  await new Promise((r) => (child.exitCode !== null || child.signalCode !== null ? r(null) : child.on("exit", r)));
  assert.ok(killedMidWrite, `the child was to be killed mid-write; it exited first: ${output}`);
  assert.deepEqual(readFileSync(file), before, "the checkpoint is the old one, byte for byte");
  const b = makeModel();
  b.call(x);
  io.restore({ model: b }, file).assertConsumed();
  assert.deepEqual(values(b), values(a));
  // The killed writer's full-size temporary file is ours and its process is gone: the next save removes it.
  const leftovers = readdirSync(dir).filter((n) => n.startsWith(".killed.safetensors.tmp-"));
  assert.equal(leftovers.length, 1, "the killed save left its temporary file");
  io.save({ model: a }, file);
  assert.deepEqual(readdirSync(dir).filter((n) => n.startsWith(".killed")), [], "the next save removed it");
});

test("reads a safetensors file written by Python's safetensors (float32/64, int64, bool, float16)", () => {
  const f = io.readSafetensors(path.join(ROOT, "test/fixtures/safetensors/small.safetensors"));
  const expected = JSON.parse(readFileSync(path.join(ROOT, "test/fixtures/safetensors/small.expected.json"), "utf8")) as Record<string, { shape: number[]; values: number[] }>;
  assert.deepEqual([...f.tensors.keys()].sort(), Object.keys(expected).sort());
  for (const [name, e] of Object.entries(expected)) {
    const t = f.tensors.get(name)!;
    assert.deepEqual(t.shape, e.shape, name);
    assert.deepEqual(Array.from(t.tensor.dataSync()), e.values, name);
  }
  assert.equal(f.tensors.get("steps")!.dtype, "int64");
  assert.equal(f.tensors.get("half")!.fileDtype, "F16");
  assert.equal(f.tensors.get("half")!.dtype, "float16", "F16 is read as float16 (exactly)");
  assert.deepEqual(f.metadata, { framework: "pt" });
});

test("every dtype is written in its own safetensors dtype and read back as itself, values exact", () => {
  const cases: [sc.DType, string, number[]][] = [
    ["float16", "F16", [0.5, -65504, 6e-8, 1 / 3, -0]],
    ["float32", "F32", [0.1, -3e38, 1e-45]],
    ["float64", "F64", [0.1, -1e300]],
    ["int8", "I8", [-128, 127, -1]],
    ["int16", "I16", [-32768, 32767, -2]],
    ["int32", "I32", [-(2 ** 31), 2 ** 31 - 1]],
    ["int64", "I64", [-(2 ** 53), 2 ** 53]],
    ["uint8", "U8", [0, 255]],
    ["uint16", "U16", [0, 65535]],
    ["uint32", "U32", [0, 2 ** 32 - 1]],
    ["uint64", "U64", [0, 2 ** 53]],
    ["bool", "BOOL", [1, 0]],
  ];
  const tensors = new Map(cases.map(([d, , v]) => [d, sc.tensor(v, d)] as const));
  const bytes = io.encodeSafetensors(tensors);
  const header = JSON.parse(new TextDecoder().decode(bytes.subarray(8, 8 + Number(new DataView(bytes.buffer).getBigUint64(0, true))))) as Record<
    string,
    { dtype: string; data_offsets: [number, number] }
  >;
  const back = io.decodeSafetensors(bytes);
  for (const [d, fileDtype] of cases) {
    assert.equal(header[d]!.dtype, fileDtype, d);
    const e = back.tensors.get(d)!;
    assert.equal(e.dtype, d);
    assert.deepEqual(Array.from(e.tensor.dataSync()), Array.from(tensors.get(d)!.dataSync()), d);
  }
  // float16 is two bytes an element in the file (its storage here is a Float32Array)
  const [begin, end] = header.float16!.data_offsets;
  assert.equal(end - begin, 5 * 2);
});

test("a checkpoint is a safetensors file Python's safetensors reads (when Python has the package)", (t) => {
  const probe = spawnSync("python3", ["-c", "import safetensors.numpy"], { encoding: "utf8" });
  if (probe.status !== 0) {
    t.skip("python3 with the safetensors package is not installed here");
    return;
  }
  const a = makeModel(7);
  const opt = new sc.optim.SGD({ momentum: 0.9 });
  trainSteps(a, opt, 1);
  const file = path.join(dir, "for-python.safetensors");
  io.save({ model: a, optimizer: opt }, file);
  const r = spawnSync("python3", ["-c", `
import json, sys
from safetensors.numpy import load_file
d = load_file(sys.argv[1])
print(json.dumps({k: [str(v.dtype), list(v.shape), float(v.reshape(-1)[0]) if v.size else None] for k, v in d.items()}))`, file], { encoding: "utf8" });
  assert.equal(r.status, 0, r.stderr);
  const read = JSON.parse(r.stdout) as Record<string, [string, number[], number]>;
  const kernel = a.namedVariables().find(([p]) => p === "layers.0.kernel")![1];
  assert.deepEqual(read["model/layers.0/kernel"], ["float32", [3, 4], kernel.dataSync()[0]]);
  assert.deepEqual(read["optimizer/iterations"], ["int32", [], 1]);
  assert.deepEqual(read["optimizer/slots/model/layers.0/kernel/velocity"]!.slice(0, 2), ["float32", [3, 4]]);
  assert.ok(existsSync(file));
});
