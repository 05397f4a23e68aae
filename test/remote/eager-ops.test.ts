// Ops placed on a worker one at a time (src/remote/eager.ts), on a real worker process
// (test/remote/worker-process.ts): results equal local ones, each op signature is registered once
// on the worker, the tape differentiates through remote ops and remote staged calls (as locally,
// and as finite differences say), host ops are refused at the user's line, and dispose frees the
// worker's handle.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { collectUntil as collectGarbageUntil } from "./collect.js";
import * as sc from "../../src/api/index.js";
import { Rng } from "../util/rng.js";
import { numericGrad } from "../util/gradcheck.js";
import { spawnWorker, type WorkerProcess } from "./worker-process.js";
import { WorkerConnection } from "../../src/remote/connection.js";

const DEVICE = "/job:worker/task:0/device:cpu:0";
const TASK = "/job:worker/task:0";
/** A worker with a small tensor limit, whose refusals come back after the op returned. */
const SMALL = "/job:small/task:0/device:cpu:0";
let worker: WorkerProcess;
let small: WorkerProcess;
let cluster: sc.remote.Cluster;
let smallCluster: sc.remote.Cluster;

before(async () => {
  [worker, small] = await Promise.all([spawnWorker(), spawnWorker(["--max-tensor-elements", "1000"])]);
  cluster = await sc.remote.connect({ cluster: { worker: [worker.address] } });
  smallCluster = await sc.remote.connect({ cluster: { small: [small.address] } });
});
after(async () => {
  await cluster?.close();
  await smallCluster?.close();
  await Promise.all([worker?.kill("SIGTERM"), small?.kill("SIGTERM")]);
});

/** The line of this file it is called on. */
const here = (): number => Number(/eager-ops\.test\.ts:(\d+)/.exec(new Error().stack!.split("\n")[2]!)![1]);
const values = async (t: sc.Tensor) => Array.from(await t.data());
const stats = async () => {
  await sc.remote.sync(DEVICE);
  return cluster.stats(TASK);
};

for (const dtype of ["float32", "float64"] as const) {
  test(`ops placed on the worker one by one equal the same ops run here (${dtype})`, async () => {
    const rng = new Rng(dtype === "float32" ? 3 : 4);
    const a = rng.tensor([3, 5], -1, 1, dtype);
    const b = rng.tensor([5, 4], -1, 1, dtype);
    const row = rng.tensor([4], -1, 1, dtype);
    const program = (x: sc.Tensor, w: sc.Tensor, r: sc.Tensor) => {
      const h = x.matmul(w).add(r).tanh(); // broadcasting a row over a matrix
      const s = h.sum(1); // a reduction over an axis
      const m = h.mean(0).exp();
      const big = h.max(); // a reduction to a scalar
      return [h, s, m, big, h.mul(s.reshape([3, 1])).sub(2)];
    };
    const local = program(a, b, row);
    const remote = sc.device(DEVICE, () => program(a, b, row));
    for (const [i, r] of remote.entries()) {
      // (types are known at once, before the worker ran anything)
      assert.equal(r.device, DEVICE);
      assert.equal(r.dtype, dtype);
      assert.deepEqual(r.shape, local[i]!.shape);
      assert.throws(() => r.dataSync(), /synchronously/);
      assert.deepEqual(await values(r), Array.from(local[i]!.dataSync()), `output ${i}`);
    }
    // An op outside the block on a remote input follows it there; a local input is sent.
    const after = remote[0]!.mul(row);
    assert.equal(after.device, DEVICE);
    assert.deepEqual(await values(after), Array.from(local[0]!.mul(row).dataSync()));
  });
}

test("a repeated op is registered once on the worker and costs one call", async () => {
  const rng = new Rng(11);
  const x = rng.tensor([2, 3]);
  const y = rng.tensor([3]);
  const before = await stats();
  let acc = sc.device(DEVICE, () => x.add(y));
  for (let i = 0; i < 4; i++) acc = sc.device(DEVICE, () => acc.add(y));
  const once = await stats();
  assert.equal(once.sessionFunctions - before.sessionFunctions, 1, "one function for five adds of one signature");
  assert.equal(once.sessionCalls - before.sessionCalls, 5);
  assert.deepEqual(await values(acc), Array.from(x.add(y).add(y).add(y).add(y).add(y).dataSync()));
  // Another shape, or other attributes, is another signature.
  sc.device(DEVICE, () => rng.tensor([4, 3]).add(y));
  sc.device(DEVICE, () => acc.sum(0));
  sc.device(DEVICE, () => acc.sum(1));
  sc.device(DEVICE, () => acc.sum(1));
  const more = await stats();
  assert.equal(more.sessionFunctions - once.sessionFunctions, 3);
  assert.equal(more.sessionCalls - once.sessionCalls, 4);
});

/** The loss of a small layer, with its ops placed on `where` (null: here). */
const layerLoss = (where: string | null) => (x: sc.Tensor, w: sc.Tensor, b: sc.Tensor) => {
  const body = () => x.matmul(w).add(b).tanh().square().mean();
  return where === null ? body() : sc.device(where, body);
};

test("the tape differentiates through remote ops: the local gradient, and finite differences", async () => {
  const rng = new Rng(21);
  const x = rng.tensor([4, 3]);
  const w = rng.tensor([3, 2]);
  const b = rng.tensor([2]);
  const [value, grads] = sc.valueAndGrad(layerLoss(DEVICE), { argnums: [0, 1, 2] })(x, w, b) as unknown as [sc.Tensor, sc.Tensor[]];
  const [lvalue, lgrads] = sc.valueAndGrad(layerLoss(null), { argnums: [0, 1, 2] })(x, w, b) as unknown as [sc.Tensor, sc.Tensor[]];
  assert.equal(value.device, DEVICE);
  assert.deepEqual(await values(value), Array.from(lvalue.dataSync()));
  const numeric = numericGrad(layerLoss(null), [x, w, b]);
  for (const [i, g] of grads.entries()) {
    // (the backward ops ran on the worker: their inputs live there)
    assert.equal(g.device, DEVICE, `gradient ${i} stays remote`);
    const got = await values(g);
    const want = Array.from(lgrads[i]!.dataSync());
    for (let j = 0; j < want.length; j++) {
      assert.ok(Math.abs(got[j]! - want[j]!) <= 1e-15 * Math.max(1, Math.abs(want[j]!)), `gradient ${i}[${j}]: ${got[j]} vs local ${want[j]}`);
      assert.ok(Math.abs(got[j]! - numeric[i]![j]!) < 1e-6, `gradient ${i}[${j}]: ${got[j]} vs finite differences ${numeric[i]![j]}`);
    }
  }
});

test("the tape differentiates through a remote staged call: one call forward, the local gradient, finite differences", async () => {
  const rng = new Rng(31);
  const x = rng.tensor([3, 3]);
  const w = rng.tensor([3, 3]);
  const f = sc.stage((a: sc.Tensor, m: sc.Tensor) => a.matmul(m).sin().mul(a).sum());
  const remoteLoss = (a: sc.Tensor, m: sc.Tensor) => sc.device(DEVICE, () => f(a, m));
  // Without a tape, a staged call placed there is one Call of its whole graph.
  const before = await stats();
  const y = remoteLoss(x, w);
  const once = await stats();
  assert.equal(once.sessionCalls - before.sessionCalls, 1);
  assert.deepEqual(await values(y), Array.from(f(x, w).dataSync()));
  const grads = sc.grad(remoteLoss, { argnums: [0, 1] })(x, w) as unknown as sc.Tensor[];
  const lgrads = sc.grad(f, { argnums: [0, 1] })(x, w) as unknown as sc.Tensor[];
  const numeric = numericGrad((a, m) => f(a, m), [x, w]);
  for (const [i, g] of grads.entries()) {
    assert.equal(g.device, DEVICE);
    const got = await values(g);
    const want = Array.from(lgrads[i]!.dataSync());
    for (let j = 0; j < want.length; j++) {
      assert.ok(Math.abs(got[j]! - want[j]!) <= 1e-15 * Math.max(1, Math.abs(want[j]!)), `gradient ${i}[${j}]: ${got[j]} vs local ${want[j]}`);
      assert.ok(Math.abs(got[j]! - numeric[i]![j]!) < 1e-6, `gradient ${i}[${j}]: ${got[j]} vs finite differences ${numeric[i]![j]}`);
    }
  }
});

test("a staged call placed there reads its variables' local values at each call, and the tape differentiates them", async () => {
  const v = sc.variable(sc.tensor([1, 2, 3], "float64"), { name: "v" });
  const f = sc.stage((a: sc.Tensor) => a.mul(v).sin().sum());
  const x = sc.tensor([0.5, -1, 2], "float64");
  assert.deepEqual(await values(sc.device(DEVICE, () => f(x))), Array.from(f(x).dataSync()));
  v.assign(sc.tensor([10, 20, 30], "float64"));
  assert.deepEqual(await values(sc.device(DEVICE, () => f(x))), Array.from(f(x).dataSync()), "the new value, not the first call's");
  const tape = new sc.GradientTape();
  const y = tape.record(() => sc.device(DEVICE, () => f(x)));
  const [gv, gx] = tape.gradient(y, [v, x]) as sc.Tensor[];
  const localTape = new sc.GradientTape();
  const ly = localTape.record(() => f(x));
  const [lgv, lgx] = localTape.gradient(ly, [v, x]) as sc.Tensor[];
  assert.deepEqual(await values(gv!), Array.from(lgv!.dataSync()));
  assert.deepEqual(await values(gx!), Array.from(lgx!.dataSync()));
});

test("a staged call that assigns a variable is refused there, before anything is sent (the update would be lost)", async () => {
  const v = sc.variable(sc.tensor([1, 2, 3], "float64"), { name: "counter" });
  const bump = sc.stage((a: sc.Tensor) => {
    v.assign(v.add(a));
    return v.read();
  });
  const before = await stats();
  assert.throws(
    () => sc.device(DEVICE, () => bump(sc.tensor([1, 1, 1], "float64"))),
    (e: unknown) => e instanceof sc.remote.RemoteUnsupportedError && /counter/.test((e as Error).message) && /sc\.remote\.device/.test((e as Error).message),
  );
  assert.equal((await stats()).sessionFunctions, before.sessionFunctions);
  assert.deepEqual(Array.from(v.dataSync()), [1, 2, 3]);
});

test("a host op in a remote device block is a RemoteUnsupportedError naming the op and the user's line", () => {
  const x = sc.tensor([1, 2, 3]);
  const unsupported = (op: string, l: number) => (e: unknown) =>
    e instanceof sc.remote.RemoteUnsupportedError && e.message.includes(op) && e.message.includes(DEVICE) && (e as sc.StagecraftError).location?.line === l;
  assert.throws(() => sc.device(DEVICE, () => sc.print("x is", x)), unsupported("print", here()));
  assert.throws(() => sc.device(DEVICE, () => sc.hostCall((t: sc.Tensor) => t, sc.spec([3], "float32"), x)), unsupported("hostCall", here()));
  // A staged function with a print in it, called there: refused before anything is sent, at the print's line.
  let printLine = 0;
  const g = sc.stage((t: sc.Tensor) => {
    printLine = here(); sc.print(t); // prettier-ignore
    return t.add(1);
  });
  assert.throws(() => sc.device(DEVICE, () => g(x)), (e: unknown) => unsupported("print", printLine)(e));
});

test("a remote device block inside a function being staged is refused (its ops would run here)", () => {
  const f = sc.stage((t: sc.Tensor) => sc.device(DEVICE, () => t.add(1)));
  assert.throws(() => f(sc.tensor([1])), (e: unknown) => e instanceof sc.ValueError && /being staged/.test((e as Error).message) && /sc\.remote\.device/.test((e as Error).message));
});

test("dispose frees a remote op's output on the worker; reading it afterwards is an error", async () => {
  const x = sc.tensor([1, 2, 3, 4]);
  const t = sc.device(DEVICE, () => x.mul(2));
  assert.deepEqual(await values(t), [2, 4, 6, 8]);
  const held = (await stats()).sessionHandles;
  t.dispose();
  assert.equal((await stats()).sessionHandles, held - 1);
  const u = sc.device(DEVICE, () => x.mul(3));
  u.dispose();
  await assert.rejects(u.data(), (e: unknown) => e instanceof sc.remote.RemoteError && /disposed/.test((e as Error).message));
  assert.throws(() => sc.device(DEVICE, () => u.add(1)), (e: unknown) => e instanceof sc.remote.RemoteError && /disposed/.test((e as Error).message));
});

test("a worker's refusal comes back on reading the op's output (and what was computed from it) and on sync, with the op and the user's line", async () => {
  const big = sc.zeros([2000]);
  const line = here(); const y = sc.device(SMALL, () => big.add(1)); // prettier-ignore
  const z = y.sum(); // (placed there too: its input lives there)
  assert.equal(z.device, SMALL);
  const refused = (e: unknown) =>
    e instanceof sc.remote.RemoteLimitError && /op add/.test((e as Error).message) && /2000 elements/.test((e as Error).message) && (e as sc.StagecraftError).location?.line === line;
  await assert.rejects(y.data(), refused);
  await assert.rejects(z.data(), refused);
  await assert.rejects(sc.remote.sync(SMALL), refused);
  await sc.remote.sync(SMALL); // (reported once)
  // The connection goes on working.
  assert.deepEqual(await values(sc.device(SMALL, () => sc.tensor([1, 2]).add(1))), [2, 3]);
});

test("a remote op's output the garbage collector collects is freed on the worker", async () => {
  const count = async () => (await stats()).sessionHandles;
  const collectUntil = (target: number) => collectGarbageUntil(count, target);
  const base = await collectUntil(0);
  const x = sc.tensor([41]);
  const kept = sc.device(DEVICE, () => x.add(1));
  (() => {
    for (let i = 0; i < 5; i++) sc.device(DEVICE, () => x.add(i));
  })();
  assert.equal(await count(), base + 6);
  assert.equal(await collectUntil(base + 1), base + 1);
  assert.deepEqual(await values(kept), [42]);
});

/** The RPCs this process sends while `fn` runs, by method (fetch: a Fetch stream). */
async function rpcsDuring(fn: () => Promise<void>): Promise<Record<string, number>> {
  const proto = WorkerConnection.prototype;
  const { unary, fetch } = proto;
  const counts: Record<string, number> = {};
  proto.unary = function (this: WorkerConnection, method: string, ...rest: unknown[]) {
    counts[method] = (counts[method] ?? 0) + 1;
    return (unary as (...a: unknown[]) => Promise<unknown>).call(this, method, ...rest);
  } as typeof unary;
  proto.fetch = function (this: WorkerConnection, ...rest: unknown[]) {
    counts.fetch = (counts.fetch ?? 0) + 1;
    return (fetch as (...a: unknown[]) => Promise<unknown>).apply(this, rest);
  } as typeof fetch;
  try {
    await fn();
  } finally {
    proto.unary = unary;
    proto.fetch = fetch;
  }
  return counts;
}

test("a small remote result comes back with its call (reading it sends no Fetch; a large one is fetched when read), and its dispose rides on the next call", async () => {
  const rng = new Rng(29);
  const inputs = [rng.tensor([3], -2, 2, "float32"), rng.tensor([2, 2], -2, 2, "float64"), sc.tensor([3, -4, 5], "int32")];
  for (const x of inputs) sc.device(DEVICE, () => x.neg()).dispose(); // (each signature registered first)
  await sc.remote.sync(DEVICE);
  const held = (await stats()).sessionHandles;
  const counts = await rpcsDuring(async () => {
    for (const x of inputs) {
      const y = sc.device(DEVICE, () => x.neg());
      assert.deepEqual(await values(y), Array.from(x.neg().dataSync()));
      assert.equal(y.dtype, x.dtype);
      y.dispose();
    }
    await sc.remote.sync(DEVICE);
  });
  // three Calls; the first two disposals went with the next Call, the last one alone after the loop
  assert.deepEqual(counts, { call: 3, release: 1 });
  assert.equal((await stats()).sessionHandles, held);
  // a larger one (16 KiB) stays on the worker until read: one Fetch then, with the same values
  const big = rng.tensor([4096], -1, 1, "float32");
  const local = Array.from(big.mul(3).dataSync());
  sc.device(DEVICE, () => big.mul(3)).dispose();
  await sc.remote.sync(DEVICE);
  const bigCounts = await rpcsDuring(async () => {
    const y = sc.device(DEVICE, () => big.mul(3));
    assert.deepEqual(await values(y), local);
    assert.deepEqual(await values(y), local); // (fetched once)
  });
  assert.deepEqual(bigCounts, { call: 1, fetch: 1 });
});

test("a chain of remote ops is sent without waiting for each reply (the worker runs them in order); values, failures and frees as one at a time", async () => {
  const proto = WorkerConnection.prototype;
  const { unary } = proto;
  let inFlight = 0;
  let most = 0;
  proto.unary = function (this: WorkerConnection, method: string, ...rest: unknown[]) {
    const p = (unary as (...a: unknown[]) => Promise<unknown>).call(this, method, ...rest);
    if (method !== "call") return p;
    most = Math.max(most, ++inFlight);
    return p.finally(() => inFlight--);
  } as typeof unary;
  const x = new Rng(31).tensor([5], -1, 1, "float32");
  // (one op per step: every result but the last is disposed)
  const step = (t: sc.Tensor, i: number) => (i % 2 === 0 ? t.mul(1.5) : t.add(i));
  let local = x;
  for (let i = 0; i < 21; i++) local = step(local, i);
  const held = (await stats()).sessionHandles;
  try {
    for (let i = 0; i < 2; i++) sc.device(DEVICE, () => step(x, i)).dispose(); // (each signature registered first)
    await sc.remote.sync(DEVICE);
    let y = sc.device(DEVICE, () => step(x, 0));
    for (let i = 1; i < 21; i++) {
      const next = sc.device(DEVICE, () => step(y, i));
      y.dispose(); // (disposed before its reply came: freed after the op that reads it)
      y = next;
    }
    const got = await values(y);
    assert.ok(most >= 20, `the chain's calls were in flight together (at most ${most} were)`);
    Array.from(local.dataSync()).forEach((v, j) => assert.ok(Math.abs(got[j]! - v) <= 1e-5 * Math.max(1, Math.abs(v)), `element ${j}: ${got[j]} vs ${v}`));
    y.dispose();
  } finally {
    proto.unary = unary;
  }
  assert.equal((await stats()).sessionHandles, held);
  // a failure early in a chain comes back from every later op, as the op that failed
  const big = sc.zeros([2000]);
  const line = here(); const a = sc.device(SMALL, () => big.add(1)); // prettier-ignore
  let b = a.sum(); // (placed there: its input lives there)
  for (let i = 0; i < 5; i++) b = b.mul(2);
  const refused = (e: unknown) => e instanceof sc.remote.RemoteLimitError && /op add/.test((e as Error).message) && (e as sc.StagecraftError).location?.line === line;
  await assert.rejects(b.data(), refused);
  await assert.rejects(sc.remote.sync(SMALL), refused);
  assert.deepEqual(await values(sc.device(SMALL, () => sc.tensor([1, 2]).mul(2))), [2, 4]);
});

test("a RemoteTensor from sc.remote.device feeds eager ops there as a tensor (asTensor): same handle, nothing copied; its dispose frees it", async () => {
  const x = new Rng(32).tensor([2, 3], -1, 1, "float32");
  const double = await sc.remote.device(DEVICE, sc.stage((t: sc.Tensor) => t.mul(2)));
  const rt = (await double(x)) as sc.remote.RemoteTensor;
  const held = (await stats()).sessionHandles;
  const t = rt.asTensor();
  assert.equal(t.device, DEVICE);
  assert.deepEqual([t.dtype, t.shape], ["float32", [2, 3]]);
  const z = t.add(1); // (placed there: the input lives there)
  const y = z.sum(1);
  assert.equal(y.device, DEVICE);
  const want = Array.from(x.mul(2).add(1).sum(1).dataSync());
  (await values(y)).forEach((v, j) => assert.ok(Math.abs(v - want[j]!) <= 1e-6, `element ${j}: ${v} vs ${want[j]}`));
  assert.deepEqual(await values(t), Array.from(x.mul(2).dataSync()));
  t.dispose(); // (frees nothing: the handle is the RemoteTensor's)
  z.dispose();
  y.dispose();
  assert.equal((await stats()).sessionHandles, held);
  assert.deepEqual(Array.from(await rt.data()), Array.from(x.mul(2).dataSync()));
  const u = rt.asTensor();
  await rt.dispose();
  assert.equal((await stats()).sessionHandles, held - 1);
  assert.throws(() => u.add(1), (e: unknown) => e instanceof sc.remote.RemoteError && /disposed/.test((e as Error).message));
  assert.throws(() => rt.asTensor(), (e: unknown) => e instanceof sc.remote.RemoteError && /disposed/.test((e as Error).message));
});
