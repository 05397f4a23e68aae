// What a worker checks on its own, whatever the client: requests made directly on the wire (past
// the client's checks) with graphs that call JavaScript, malformed graphs, and arguments of the
// wrong type; and the wire format's checks of tensors' bytes. The worker runs in this process.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import * as sc from "../../src/api/index.js";
import { remoteTarget } from "../../src/remote/cluster.js";
import { ChunkAssembler, tensorFromBytes, WireCheckFailed } from "../../src/remote/wire.js";

let worker: sc.remote.Worker;
let cluster: sc.remote.Cluster;
const DEVICE = "/job:worker/task:0/device:cpu:0";

before(async () => {
  worker = await sc.remote.startWorker();
  cluster = await sc.remote.connect({ cluster: { worker: [worker.address] } });
});
after(async () => {
  await cluster.close();
  await worker.close();
});

const register = (sexpr: string, numArgInputs = 1) => {
  const { connection } = remoteTarget(DEVICE, "test");
  return connection.unary("register", { session: connection.session, name: `direct_${Math.random()}`, sexpr, numArgInputs, variables: [], captures: [] }, "Register direct", null);
};

test("the worker refuses a graph with a host call sent past the client's check", async () => {
  const f = sc.stage((x: sc.Tensor) => sc.hostCall((t) => t, sc.spec([2]), x) as sc.Tensor);
  const text = f.concrete(sc.tensor([1, 2])).toSExpr();
  await assert.rejects(register(text), (e: unknown) => e instanceof sc.remote.RemoteUnsupportedError && /hostCall node/.test((e as Error).message) && (e as sc.remote.RemoteError).code === "FAILED_PRECONDITION");
  assert.equal(worker.stats().functions, 0);
});

test("a malformed graph is a RemoteError carrying the worker's parse error", async () => {
  await assert.rejects(register("(module (graph f (inputs) (nodes (node nosuchop (inputs) (attrs) (outputs))) (outputs)))", 0), (e: unknown) => {
    assert.ok(e instanceof sc.remote.RemoteError, String(e));
    assert.equal(e.code, "INVALID_ARGUMENT");
    assert.match(e.message, /nosuchop/);
    return true;
  });
  await assert.rejects(register("(module (graph", 0), (e: unknown) => e instanceof sc.remote.RemoteError && /parseSExpr/.test((e as Error).message));
});

test("arguments of another type than the registered graph's are refused, naming the argument", async () => {
  const f = sc.stage((x: sc.Tensor) => x.add(1));
  const name = `typed_${Math.random()}`;
  const { connection } = remoteTarget(DEVICE, "test");
  await connection.unary("register", { session: connection.session, name, sexpr: f.concrete(sc.tensor([1, 2])).toSExpr(), numArgInputs: 1, variables: [], captures: [] }, "Register", null);
  const call = (dtype: string, shape: number[], data: Uint8Array) =>
    connection.unary("call", { session: connection.session, name, device: "cpu:0", inputs: [{ value: { dtype, shape, totalBytes: data.byteLength, data } }] }, "Call", null);
  const ok = await call("float32", [2], new Uint8Array(new Float32Array([1, 2]).buffer));
  assert.equal(ok.outputs.length, 1);
  await assert.rejects(call("float32", [3], new Uint8Array(new Float32Array([1, 2, 3]).buffer)), (e: unknown) => e instanceof sc.remote.RemoteError && /argument 0 .* is float32\[3\], the function takes float32\[2\]/.test((e as Error).message));
  await assert.rejects(call("float32", [2], new Uint8Array(4)), (e: unknown) => e instanceof sc.remote.RemoteError && /takes 8 bytes, 4 came/.test((e as Error).message));
  await assert.rejects(call("float99", [2], new Uint8Array(8)), (e: unknown) => e instanceof sc.remote.RemoteError && /unknown dtype/.test((e as Error).message));
});

test("the wire's checks of a tensor's bytes against its declared type", () => {
  const limits = { maxTensorElements: 100, maxTensorBytes: 1000 };
  const t = tensorFromBytes("int32", [2], new Uint8Array(new Int32Array([7, -3]).buffer), limits);
  assert.deepEqual(Array.from(t.dataSync()), [7, -3]);
  assert.throws(() => tensorFromBytes("int32", [2, -1], new Uint8Array(0), limits), (e: unknown) => e instanceof WireCheckFailed && !e.overLimit);
  assert.throws(() => tensorFromBytes("float64", [200], new Uint8Array(1600), limits), (e: unknown) => e instanceof WireCheckFailed && e.overLimit);
  const a = new ChunkAssembler(limits);
  a.add({ dtype: "float32", shape: [3], totalBytes: 12, data: new Uint8Array(new Float32Array([1, 2]).buffer) });
  assert.throws(() => a.finish(), /ended after 8 of 12 bytes/);
  a.add({ data: new Uint8Array(new Float32Array([3]).buffer) });
  assert.deepEqual(Array.from(a.finish().dataSync()), [1, 2, 3]);
  assert.throws(() => a.add({ data: new Uint8Array(1) }), /more than the 12 bytes declared/);
  assert.throws(() => new ChunkAssembler(limits).add({ dtype: "float32", shape: [3], totalBytes: 10 }), /declares 10 bytes/);
});

test("a call naming an input handle an earlier call has not made yet waits for it; one whose input's call failed fails; handles it names must be the client's and unused", async () => {
  const { connection } = remoteTarget(DEVICE, "test");
  const f = sc.stage((x: sc.Tensor) => x.add(1));
  const name = `chain_${Math.random()}`;
  await connection.unary("register", { session: connection.session, name, sexpr: f.concrete(sc.tensor([1, 2])).toSExpr(), numArgInputs: 1, variables: [], captures: [] }, "Register", null);
  const value = (xs: number[]) => {
    const data = new Float32Array(xs);
    return { value: { dtype: "float32", shape: [xs.length], totalBytes: data.byteLength, data: new Uint8Array(data.buffer) } };
  };
  const call = (inputs: object[], outputHandles: number[], timeoutMs?: number) =>
    connection.unary("call", { session: connection.session, name, device: "", inputs, outputHandles, inlineReplyBytes: 64 } as never, "Call", null, timeoutMs);
  const base = 2 ** 31 + 1_000_000;
  // the consumer arrives first: it waits until the producer made its input
  const consumer = call([{ handle: base }], [base + 1]);
  await new Promise((r) => setTimeout(r, 50));
  const producer = await call([value([1, 2])], [base]);
  assert.equal(producer.outputs[0]!.handle, base);
  const out = (await consumer).outputs[0]!;
  assert.equal(out.handle, base + 1);
  assert.deepEqual(Array.from(new Float32Array(new Uint8Array(out.value!.data!).buffer)), [3, 4]);
  // a producer that fails (a wrong argument) fails the call that reads its output, waiting or not
  const waiting = call([{ handle: base + 2 }], [base + 3]);
  await assert.rejects(call([value([1, 2, 3])], [base + 2]), (e: unknown) => e instanceof sc.remote.RemoteError && e.code === "INVALID_ARGUMENT");
  const failedInput = (e: unknown) => e instanceof sc.remote.RemoteError && e.code === "FAILED_PRECONDITION" && /output of a call that failed/.test((e as Error).message);
  await assert.rejects(waiting, failedInput);
  await assert.rejects(call([{ handle: base + 2 }], [base + 4]), failedInput);
  // an input no call makes: the call fails at its deadline
  await assert.rejects(call([{ handle: base + 5 }], [base + 6], 300), (e: unknown) => e instanceof sc.remote.RemoteError && e.code === "DEADLINE_EXCEEDED");
  // output handles: in the client's range, and not in use
  await assert.rejects(call([value([1, 2])], [7]), (e: unknown) => e instanceof sc.remote.RemoteError && e.code === "INVALID_ARGUMENT" && /client/.test((e as Error).message));
  await assert.rejects(call([value([1, 2])], [base]), (e: unknown) => e instanceof sc.remote.RemoteError && e.code === "INVALID_ARGUMENT" && /already in use/.test((e as Error).message));
  await connection.release([base, base + 1, base + 2, base + 3, base + 4, base + 5, base + 6], null);
});
