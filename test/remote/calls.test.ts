// Remote staged functions on a real worker process (test/remote/worker-process.ts): results equal
// local calls, handles chain without coming back, dispose and the garbage collector free them on
// the worker, variables live and train there, and graphs that need JavaScript are refused.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { collectUntil as collectGarbageUntil } from "./collect.js";
import * as sc from "../../src/api/index.js";
import { Rng } from "../util/rng.js";
import { spawnWorker, type WorkerProcess } from "./worker-process.js";

const DEVICE = "/job:worker/task:0/device:cpu:0";
const TASK = "/job:worker/task:0";
let worker: WorkerProcess;
let cluster: sc.remote.Cluster;

before(async () => {
  worker = await spawnWorker();
  cluster = await sc.remote.connect({ cluster: { worker: [worker.address] } });
});
after(async () => {
  await cluster?.close();
  await worker?.kill("SIGTERM");
});

const values = async (t: sc.Tensor | sc.remote.RemoteTensor) => Array.from(t instanceof sc.Tensor ? t.dataSync() : await t.data());

test("the worker's devices are listed (ops placed there one by one: eager-ops.test.ts)", () => {
  const d = sc.listDevices().find((x) => x.name === DEVICE);
  assert.equal(d?.kind, "remote");
  assert.deepEqual(cluster.devices, [DEVICE]);
});

for (const dtype of ["float32", "float64", "int32"] as const) {
  test(`a remote call equals the local call (${dtype})`, async () => {
    const rng = new Rng(dtype.length);
    const make = (shape: number[]) => sc.cast(dtype === "int32" ? rng.tensor(shape, -50, 50).round() : rng.tensor(shape), dtype);
    const c = make([4]);
    const f = sc.stage((x: sc.Tensor, y: sc.Tensor) => x.mul(y).add(c).sub(x.sum(0)));
    const x = make([3, 4]);
    const y = make([3, 4]);
    const local = f(x, y);
    const remote = await (await sc.remote.device(DEVICE, f))(x, y);
    assert.equal(remote.dtype, dtype);
    assert.deepEqual(remote.shape, [3, 4]);
    assert.deepEqual(await values(remote), await values(local));
    const fetched = await remote.fetch();
    assert.ok(fetched instanceof sc.Tensor && fetched.dtype === dtype);
  });
}

test("handles passed to the next call stay on the worker; dispose frees them there", async () => {
  const f = await sc.remote.device(DEVICE, sc.stage((a: sc.Tensor, b: sc.Tensor) => a.matmul(b).tanh()));
  const rng = new Rng(7);
  const a = rng.tensor([8, 8], -1, 1, "float32");
  const base = (await cluster.stats(TASK)).sessionHandles;
  const h1 = await f(a, a);
  const h2 = await f(h1, h1);
  const h3 = await f(h2, a);
  assert.equal((await cluster.stats(TASK)).sessionHandles, base + 3);
  const l1 = sc.tanh(sc.matmul(a, a));
  const l3 = sc.tanh(sc.matmul(sc.tanh(sc.matmul(l1, l1)), a));
  assert.deepEqual(await values(h3), await values(l3));
  await h1.dispose();
  await h2.dispose();
  await h2.dispose(); // (twice: nothing more)
  const s = await cluster.stats(TASK);
  assert.equal(s.sessionHandles, base + 1);
  await assert.rejects(f(h1, a), (e: unknown) => e instanceof sc.remote.RemoteError && /disposed/.test((e as Error).message));
  await h3.dispose();
  assert.equal((await cluster.stats(TASK)).sessionHandles, base);
});

test("a handle the garbage collector collects is freed on the worker", async () => {
  const count = async () => (await cluster.stats(TASK)).sessionHandles;
  const collectUntil = (target: number) => collectGarbageUntil(count, target);
  // (earlier tests' handles the collector may take meanwhile go first)
  const base = await collectUntil(0);
  const f = await sc.remote.device(DEVICE, sc.stage((a: sc.Tensor) => a.add(1)));
  const kept = await f(sc.tensor([41]));
  await (async () => {
    for (let i = 0; i < 5; i++) await f(sc.tensor([i]));
  })();
  assert.equal(await count(), base + 6);
  assert.equal(await collectUntil(base + 1), base + 1);
  assert.deepEqual(await values(kept), [42]);
});

test("structured results: arrays and objects of remote tensors, JS values as returned", async () => {
  const f = sc.stage((x: sc.Tensor) => ({ total: x.sum(), parts: [x.mul(2), x.neg()], note: "fixed" }));
  const x = sc.tensor([1, 2, 3]);
  const r = await (await sc.remote.device(DEVICE, f))(x);
  assert.equal(r.note, "fixed");
  assert.deepEqual(await values(r.total), [6]);
  assert.deepEqual(await values(r.parts[0]!), [2, 4, 6]);
  assert.deepEqual(await values(r.parts[1]!), [-1, -2, -3]);
});

// (where the test writes the host-calling ops: the refusal must name these lines)
const SOURCE = readFileSync(fileURLToPath(import.meta.url), "utf8").split("\n");
const lineOf = (marker: string) => SOURCE.findIndex((l) => l.includes(marker) && !l.includes("lineOf")) + 1;

test("a graph with a host call or a print is refused before it is sent, naming the op and the user's line", async () => {
  const withHost = sc.stage((x: sc.Tensor) => sc.hostCall((t) => t.mul(2), sc.spec([3]), x) as sc.Tensor); // HOST-CALL-LINE
  const withPrint = sc.stage((x: sc.Tensor) => {
    sc.print("x is", x); // PRINT-LINE
    return x.add(1);
  });
  const before = (await cluster.stats(TASK)).functions;
  for (const [fn, op, marker] of [[withHost, "hostCall", "HOST-CALL-LINE"], [withPrint, "print", "PRINT-LINE"]] as const) {
    const rf = await sc.remote.device(DEVICE, fn as (x: sc.Tensor) => sc.Tensor);
    await assert.rejects(rf(sc.tensor([1, 2, 3])), (e: unknown) => {
      assert.ok(e instanceof sc.remote.RemoteUnsupportedError, String(e));
      assert.match(e.message, new RegExp(`has a ${op} node`));
      assert.equal(e.location?.line, lineOf(marker));
      assert.match(e.location?.file ?? "", /calls\.test\.ts$/);
      return true;
    });
  }
  assert.equal((await cluster.stats(TASK)).functions, before);
});

test("a staged valueAndGrad runs remotely: the gradient graph is built here and sent with it", async () => {
  const rng = new Rng(11);
  const w = rng.tensor([3, 2], -1, 1, "float32");
  const x = rng.tensor([5, 3], -1, 1, "float32");
  const loss = (w: sc.Tensor, x: sc.Tensor) => sc.matmul(x, w).tanh().square().mean();
  const step = sc.stage(sc.valueAndGrad(loss));
  const [lv, lg] = step(w, x) as unknown as [sc.Tensor, sc.Tensor];
  const [rv, rg] = (await (await sc.remote.device(DEVICE, step))(w, x)) as unknown as [sc.remote.RemoteTensor, sc.remote.RemoteTensor];
  assert.deepEqual(await values(rv), await values(lv));
  assert.deepEqual(rg.shape, [3, 2]);
  assert.deepEqual(await values(rg), await values(lg));
});

/** A linear model's training step with its own variables and optimizer. */
function trainer(w0: sc.Tensor, b0: sc.Tensor, Opt: typeof sc.optim.Adam | typeof sc.optim.SGD) {
  const w = sc.variable(w0, { name: "w" });
  const b = sc.variable(b0, { name: "b" });
  const opt = new Opt({ learningRate: 0.05 });
  const step = sc.stage((x: sc.Tensor, y: sc.Tensor) => {
    const [l, [gw, gb]] = sc.valueAndGrad((w: sc.Tensor, b: sc.Tensor) => sc.matmul(x, w).add(b).sub(y).square().mean(), { argnums: [0, 1] } as never)(w, b) as unknown as [
      sc.Tensor,
      [sc.Tensor, sc.Tensor],
    ];
    opt.step([gw, gb], [w, b]);
    return l;
  });
  return { w, b, step };
}

for (const Opt of [sc.optim.SGD, sc.optim.Adam]) {
  test(`a remote training step (${Opt.name}) updates the worker's variables as the same steps do locally`, async () => {
    const rng = new Rng(23);
    const w0 = rng.tensor([4, 1], -1, 1, "float32");
    const b0 = rng.tensor([1], -1, 1, "float32");
    const local = trainer(w0, b0, Opt);
    const remote = trainer(w0, b0, Opt);
    const rstep = await sc.remote.device(DEVICE, remote.step);
    const x = rng.tensor([16, 4], -1, 1, "float32");
    const y = rng.tensor([16, 1], -1, 1, "float32");
    const localLosses: number[] = [];
    const remoteLosses: number[] = [];
    for (let i = 0; i < 5; i++) {
      localLosses.push((local.step(x, y) as sc.Tensor).item() as number);
      remoteLosses.push(((await (await rstep(x, y)).data()) as Float32Array)[0]!);
    }
    assert.deepEqual(remoteLosses, localLosses);
    assert.ok(localLosses[4]! < localLosses[0]!, "the loss goes down");
    // the weights trained on the worker; the client's copies kept their initial values
    assert.deepEqual(await values(remote.w), await values(w0));
    const read = await rstep.readVariables();
    assert.ok(rstep.variables.includes(remote.w) && rstep.variables.includes(remote.b));
    assert.deepEqual(await values(read.get(remote.w)!), await values(local.w));
    assert.deepEqual(await values(read.get(remote.b)!), await values(local.b));
  });
}

test("a call of a function traced for other types sends the new trace once, under its own name", async () => {
  const f = sc.stage((x: sc.Tensor) => x.mul(x));
  const rf = await sc.remote.device(DEVICE, f);
  const before = (await cluster.stats(TASK)).functions;
  await rf(sc.tensor([1, 2]));
  await rf(sc.tensor([3, 4]));
  const r = await rf(sc.tensor([[1, 2, 3]]));
  assert.deepEqual(await values(r), [1, 4, 9]);
  assert.equal((await cluster.stats(TASK)).functions, before + 2);
});
