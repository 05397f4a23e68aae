/**
 * The webgpu device: placement and moves, residency, reading (sync in Node's worker mode, async
 * everywhere, a typed error where a thread cannot block), float64's refusal, memory (dispose, tidy,
 * garbage collection), errors kernels find on the GPU, random bits equal to the CPU's, and staged
 * functions as device plans (compiled once, loops that read one scalar per iteration or none).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import * as sc from "../../../src/api/index.js";
import { unplanned } from "../../../src/exec/webgpu-executor.js";
import { gpuInfo, gpuSkip, onGpu } from "../../util/webgpu.js";

const skip = gpuSkip;
const live = async () => (await sc.webgpuStats())!.liveBuffers;
setFlagsFromString("--expose-gc");
const gc = runInNewContext("gc") as () => void;
/**
 * The live count once earlier tests' garbage is freed: their unreachable tensors free their
 * buffers through a FinalizationRegistry, whose callbacks run at any await, so a count taken
 * before that drains could drop mid-test by buffers that are not the test's (a fresh clone's
 * run saw 19 -> 8 across one dispose).
 */
async function settledLive(): Promise<number> {
  let n = await live();
  for (let i = 0; i < 10; i++) {
    gc();
    await new Promise((r) => setTimeout(r, 10));
    const m = await live();
    if (m === n) break;
    n = m;
  }
  return n;
}

test("webgpu:0 is listed and scoped; the CPU stays the default", { skip }, () => {
  assert.equal(gpuInfo!.name, "webgpu:0");
  assert.ok(sc.listDevices().some((d) => d.name === "webgpu:0" && d.kind === "webgpu"));
  const a = sc.tensor([1, 2, 3]);
  assert.equal(a.device, "cpu:0");
  const b = onGpu(() => sc.tensor([1, 2, 3]).mul(2));
  assert.equal(b.device, "webgpu:0");
  assert.equal(sc.tensor([1]).device, "cpu:0", "outside the scope, new tensors are on the CPU");
  assert.deepEqual(Array.from(b.dataSync()), [2, 4, 6]);
});

test("to() moves data both ways; mixing devices copies into the op's device", { skip }, () => {
  const x = sc.tensor([[1, 2], [3, 4]]);
  const g = x.to("webgpu");
  assert.equal(g.device, "webgpu:0");
  assert.equal(g.to("webgpu"), g, "already there: the same tensor");
  const back = g.mul(3).to("cpu");
  assert.equal(back.device, "cpu:0");
  assert.deepEqual(back.arraySync(), [[3, 6], [9, 12]]);
  const mixed = onGpu(() => x.add(g));
  assert.equal(mixed.device, "webgpu:0");
  assert.deepEqual(mixed.arraySync(), [[2, 4], [6, 8]]);
  assert.equal(sc.add(g, x).device, "webgpu:0", "outside a scope, an op runs on its inputs' accelerator");
  assert.equal(sc.device("cpu", () => sc.add(g, x)).device, "cpu:0", "a CPU scope brings it back");
  assert.equal(g.mul(2).device, "webgpu:0", "a GPU tensor's ops stay on the GPU");
});

test("results stay in GPU memory until read; reads are cached", { skip }, async () => {
  const y = onGpu(() => sc.tensor([1, 2, 3, 4]).exp().sum());
  assert.equal(y._data, null, "no host copy before a read");
  const v = await y.data();
  assert.ok(Math.abs(v[0]! - (Math.E + Math.E ** 2 + Math.E ** 3 + Math.E ** 4)) < 1e-3);
  assert.equal(y.dataSync(), await y.data(), "a second read returns the copy made by the first");
  assert.deepEqual(await onGpu(() => sc.tensor([[true, false]])).array(), [[true, false]]);
  assert.match(String(onGpu(() => sc.tensor([1.5]))), /1\.5/);
});

test("on the device's own thread (a browser's case) synchronous reads are a typed error; async reads work", { skip }, () => {
  const script = `
    import * as sc from "./src/api/index.ts";
    await sc.initWebGPU({ thread: "main" });
    const y = sc.device("webgpu", () => sc.tensor([1, 2, 3]).mul(2));
    try { y.dataSync(); console.log("no error"); } catch (e) { console.log(e.constructor.name + ": " + e.message.split(" (at")[0]); }
    console.log(JSON.stringify(Array.from(await y.data())));
  `;
  const r = spawnSync(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], { encoding: "utf8", env: process.env });
  assert.equal(r.status, 0, r.stderr);
  const lines = r.stdout.trim().split("\n");
  assert.match(lines[0]!, /^ValueError: dataSync: cannot call dataSync\(\) on a tensor on webgpu:0 synchronously: .*await tensor\.data\(\)/);
  assert.equal(lines[1], "[2,4,6]");
});

test("float64 tensors stay on the host on the device; computing with them is a DtypeError, never a downcast", { skip }, () => {
  const x = sc.tensor([1.5, 2.5], "float64").to("webgpu");
  assert.equal(x.device, "webgpu:0");
  assert.deepEqual(Array.from(x.dataSync()), [1.5, 2.5]);
  assert.equal(onGpu(() => sc.zeros([3], "float64")).dtype, "float64");
  assert.throws(
    () => onGpu(() => x.mul(2)),
    (e: unknown) => e instanceof sc.DtypeError && /^mul: float64 has no WGSL type/.test(e.message) && /cast to float32/.test(e.message),
  );
  const y = onGpu(() => sc.cast(x, "float32").mul(2));
  assert.deepEqual(Array.from(y.dataSync()), [3, 5]);
  assert.throws(() => onGpu(() => sc.cast(sc.tensor([1, 2]), "int64").add(1)), sc.DtypeError);
});

test("dispose() frees a buffer at once; views keep theirs; a disposed tensor cannot be read", { skip }, async () => {
  const base = onGpu(() => sc.tensor([1, 2, 3, 4]));
  base.dataSync();
  const x = onGpu(() => base.mul(2));
  const v = x.reshape([2, 2]);
  const before = await settledLive();
  x.dispose();
  assert.equal(await live(), before, "the view still holds the buffer");
  assert.deepEqual(v.arraySync(), [[2, 4], [6, 8]]);
  v.dispose();
  assert.equal(await live(), before - 1);
  assert.throws(() => onGpu(() => x.add(1)), /disposed/);
  assert.deepEqual(Array.from(base.dataSync()), [1, 2, 3, 4]); // (base stays reachable until the counts are taken)
});

test("tidy() frees what it made except its result", { skip }, async () => {
  const x = onGpu(() => sc.tensor([1, 2, 3]));
  x.dataSync();
  const before = await settledLive();
  const r = sc.tidy(() => onGpu(() => x.mul(2).add(1).exp().sum()));
  assert.equal(await live(), before + 1, "only the result remains");
  assert.ok(Math.abs(r.item() as number - (Math.exp(3) + Math.exp(5) + Math.exp(7))) < 0.01);
});

test("tensors the garbage collector finds unreachable free their buffers", { skip }, async () => {
  const before = await settledLive();
  (() => {
    for (let i = 0; i < 20; i++) onGpu(() => sc.tensor([i, i + 1]).mul(2));
  })();
  for (let i = 0; i < 5 && (await live()) > before; i++) {
    gc();
    await new Promise((r) => setTimeout(r, 10));
  }
  assert.ok((await live()) <= before, `buffers left: ${(await live()) - before}`);
});

test("an index out of range found by a GPU kernel raises an IndexError at the next read", { skip }, () => {
  const x = onGpu(() => sc.tensor([[1, 2], [3, 4]]));
  const y = onGpu(() => sc.gather(x, sc.tensor([0, 5], "int32"), 0));
  assert.throws(() => y.dataSync(), (e: unknown) => e instanceof sc.IndexError && /index 5 at position \[1\]/.test(e.message) && /device\.test\.ts/.test(e.message));
  // the error is reported once; the device keeps working
  assert.deepEqual(onGpu(() => sc.gather(x, sc.tensor([1], "int32"), 0)).arraySync(), [[3, 4]]);
  const staged = sc.stage((a: sc.Tensor, i: sc.Tensor) => sc.gather(a, i, 1));
  assert.throws(() => onGpu(() => staged(x, sc.tensor([2], "int32"))).dataSync(), sc.IndexError);
});

test("random draws give the CPU's numbers (uniform: the same bits)", { skip }, () => {
  const key = sc.random.key(42);
  const cpu = sc.random.uniform([1000], { key, minval: 0, maxval: 1 });
  const gpu = onGpu(() => sc.random.uniform([1000], { key, minval: 0, maxval: 1 }));
  assert.deepEqual(Array.from(gpu.dataSync()), Array.from(cpu.dataSync()));
  const n1 = sc.random.normal([500], { key });
  const n2 = onGpu(() => sc.random.normal([500], { key }));
  n1.dataSync().forEach((v, i) => assert.ok(Math.abs(v - n2.dataSync()[i]!) < 1e-5 * (1 + Math.abs(v)), `normal ${i}`));
  const p = sc.full([300], 0.3);
  assert.deepEqual(Array.from(onGpu(() => sc.random.bernoulli(p.to("webgpu"), undefined, { key })).dataSync()), Array.from(sc.random.bernoulli(p, undefined, { key }).dataSync()));
});

test("a staged function is planned once per signature and compiles no pipeline on later calls", { skip }, async () => {
  const f = sc.stage((x: sc.Tensor, w: sc.Tensor) => sc.tanh(sc.matmul(x, w)).mul(0.5).add(x.sum(1, true)));
  const x = onGpu(() => sc.random.uniform([8, 16], { seed: 1 }));
  const w = onGpu(() => sc.random.uniform([16, 16], { seed: 2 }));
  const first = onGpu(() => f(x, w));
  first.dataSync();
  const compiled = (await sc.webgpuStats())!.compiled;
  const second = onGpu(() => f(x, w));
  assert.deepEqual(Array.from(second.dataSync()), Array.from(first.dataSync()));
  assert.equal((await sc.webgpuStats())!.compiled, compiled, "no new pipeline");
  assert.ok(![...unplanned.keys()].some((n) => n.startsWith(f.name ?? "\0")), "planned");
  const cpu = f(x.to("cpu"), w.to("cpu"));
  cpu.dataSync().forEach((v, i) => assert.ok(Math.abs(v - first.dataSync()[i]!) < 1e-5 * (1 + Math.abs(v))));
});

test("a staged loop keeps its state on the GPU: a counted loop reads nothing back, a data-dependent one a scalar per iteration", { skip }, async () => {
  const counted = sc.stage((x: sc.Tensor) =>
    sc.whileLoop((i: sc.Tensor) => sc.less(i, 7), (i: sc.Tensor, y: sc.Tensor) => [i.add(1), y.mul(0.5).add(1)], [sc.scalar(0, "int32"), x])[1]!,
  );
  const untilSmall = sc.stage((x: sc.Tensor) => sc.whileLoop((y: sc.Tensor) => sc.greater(sc.max(y), 1), (y: sc.Tensor) => [y.mul(0.5)], [x])[0]!);
  const x = sc.tensor([8, 4, 2]);
  const reads = async () => (await sc.webgpuStats())!.predicateReads;
  const r0 = await reads();
  const a = onGpu(() => counted(x.to("webgpu")));
  assert.deepEqual(Array.from(a.dataSync()), Array.from(counted(x).dataSync()));
  assert.equal(await reads(), r0, "a known trip count reads no predicate");
  const b = onGpu(() => untilSmall(x.to("webgpu")));
  assert.deepEqual(Array.from(b.dataSync()), [1, 0.5, 0.25]);
  assert.equal((await reads()) - r0, 4, "three iterations: four predicates read");
});

test("a staged cond on the GPU takes the branch its predicate selects", { skip }, () => {
  const f = sc.stage((x: sc.Tensor) => sc.cond(sc.greater(sc.sum(x), 0), () => x.mul(2), () => x.neg()));
  assert.deepEqual(Array.from(onGpu(() => f(sc.tensor([1, 2]).to("webgpu"))).dataSync()), [2, 4]);
  assert.deepEqual(Array.from(onGpu(() => f(sc.tensor([-1, -2]).to("webgpu"))).dataSync()), [1, 2]);
});

test("variables read and assigned by a staged function on the GPU", { skip }, () => {
  const v = onGpu(() => sc.variable(sc.tensor([1, 2, 3])));
  const step = sc.stage((g: sc.Tensor) => {
    v.assign(v.read().sub(g.mul(0.5)));
    return v.read().sum();
  });
  const s1 = onGpu(() => step(sc.tensor([2, 2, 2]).to("webgpu")));
  const s2 = onGpu(() => step(sc.tensor([2, 2, 2]).to("webgpu")));
  assert.equal(s1.item(), 3);
  assert.equal(s2.item(), 0);
  assert.deepEqual(Array.from(v.read().dataSync()), [-1, 0, 1]);
  assert.equal(v.read().device, "webgpu:0");
});

test("a differentiated loop (a staged RNN training step) runs as one plan: stacks in GPU buffers, no predicate read", { skip }, async () => {
  const H = 8, I = 4, B = 3;
  const mk = (s: number[], seed: number) => sc.random.uniform(s, { seed, minval: -0.5, maxval: 0.5 });
  const make = (dev: string) => sc.device(dev, () => [sc.variable(mk([I, H], 1)), sc.variable(mk([H, H], 2)), sc.variable(mk([H], 3))]);
  const stepFor = (ws: sc.Variable[]) =>
    sc.stage(
      (xs: sc.Tensor, length: sc.Tensor) => {
        const loss = (w: sc.Tensor, u: sc.Tensor, b: sc.Tensor) => {
          const [, h] = sc.whileLoop((i) => sc.less(i, length), (i, h) => [i.add(1), sc.tanh(sc.matmul(sc.gather(xs, i, 0), w).add(sc.matmul(h!, u)).add(b))], [sc.scalar(0, "int32"), sc.zeros([B, H])]);
          return sc.mean(h!);
        };
        const [v, g] = sc.valueAndGrad(loss, { argnums: [0, 1, 2] })(ws[0]!.read(), ws[1]!.read(), ws[2]!.read()) as [sc.Tensor, sc.Tensor[]];
        ws.forEach((w, k) => w.assign(w.read().sub(g[k]!.mul(0.1))));
        return v;
      },
      { autograph: false },
    );
  const cpuW = make("cpu"), gpuW = make("webgpu");
  const cpuStep = stepFor(cpuW), gpuStep = stepFor(gpuW);
  const xs = mk([6, B, I], 4);
  const reads0 = (await sc.webgpuStats())!.predicateReads;
  for (const T of [5, 5, 3]) {
    const a = cpuStep(xs, sc.scalar(T, "int32")).item() as number;
    const b = onGpu(() => gpuStep(xs.to("webgpu"), sc.scalar(T, "int32"))).item() as number;
    assert.ok(Math.abs(a - b) < 1e-5, `loss with ${T} steps: ${b} on the GPU, ${a} on the CPU`);
  }
  cpuW.forEach((w, k) => w.read().dataSync().forEach((v, i) => assert.ok(Math.abs(v - gpuW[k]!.read().dataSync()[i]!) < 1e-5, `weight ${k}[${i}]`)));
  assert.equal((await sc.webgpuStats())!.predicateReads, reads0, "trip counts known from the host-side length: nothing read back");
  assert.ok(![...unplanned.values()].some((r) => /stack/.test(r) && !/stackPop/.test(r)), [...unplanned].join("; "));
});

test("a fused chain over more broadcast inputs than a kernel binds (and a large parameter block) matches the CPU", { skip }, () => {
  const shapes = [[2, 3, 1, 4, 5], [1, 3, 2, 1, 5], [2, 1, 2, 4, 1], [5], [4, 1], [3, 1, 1, 1], [2, 1, 1, 1, 1], [1, 1, 2, 1, 1], [1, 3, 1, 4, 1], [2, 3, 2, 4, 5], [1, 1, 1, 1, 5], [3, 2, 4, 1]];
  shapes.push(...shapes.slice(0, 9).map((s) => s.slice(1))); // 21 inputs: more than 16 buffers per kernel, 100+ parameter words
  const xs = shapes.map((s, i) => sc.random.uniform(s, { seed: 100 + i }));
  const f = (...t: sc.Tensor[]) => t.slice(1).reduce((acc, x, i) => (i % 2 ? acc.mul(x.add(1)) : acc.add(x.mul(0.5))), t[0]!).tanh();
  const cpu = f(...xs);
  const eager = onGpu(() => f(...xs.map((x) => x.to("webgpu"))));
  const staged = onGpu(() => sc.stage(f)(...xs.map((x) => x.to("webgpu"))));
  for (const g of [eager, staged]) g.dataSync().forEach((v, i) => assert.ok(Math.abs(v - cpu.dataSync()[i]!) < 1e-5, `element ${i}: ${v} vs ${cpu.dataSync()[i]}`));
});
