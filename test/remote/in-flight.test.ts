// A worker's bounds on calls in flight, with a real worker process (`stagecraft worker
// --max-calls-in-flight 3 --input-wait-ms 1500`): calls of one session waiting for inputs that no
// earlier call makes are capped (one more is a RemoteLimitError, and so is an upload), a call
// without a deadline waits at most inputWaitMs (then a typed error), and the releases held back
// while calls wait are made once they end. Uploads under way hold their bytes (a Session alone).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import * as sc from "../../src/api/index.js";
import { remoteTarget } from "../../src/remote/cluster.js";
import { spawnWorker, type WorkerProcess } from "./worker-process.js";
import { Session, CallFault } from "../../src/remote/session.js";
import { DEFAULT_WORKER_LIMITS } from "../../src/remote/default-limits.js";
import { status as grpcStatus } from "@grpc/grpc-js";

const DEVICE = "/job:worker/task:0/device:cpu:0";
let worker: WorkerProcess;
let cluster: sc.remote.Cluster;

before(async () => {
  worker = await spawnWorker(["--max-calls-in-flight", "3", "--input-wait-ms", "1500"]);
  cluster = await sc.remote.connect({ cluster: { worker: [worker.address] }, timeoutMs: 20_000 });
});
after(async () => {
  await cluster?.close();
  await worker?.kill();
});

test("calls waiting for inputs no call makes: capped per session (a RemoteLimitError), each bounded in time without a deadline; held releases made after", async () => {
  const { connection } = remoteTarget(DEVICE, "test");
  const f = sc.stage((x: sc.Tensor) => x.add(1));
  const name = `wait_${Math.random()}`;
  await connection.unary("register", { session: connection.session, name, sexpr: f.concrete(sc.tensor([1, 2])).toSExpr(), numArgInputs: 1, variables: [], captures: [] }, "Register", null);
  const value = (xs: number[]) => {
    const data = new Float32Array(xs);
    return { value: { dtype: "float32", shape: [xs.length], totalBytes: data.byteLength, data: new Uint8Array(data.buffer) } };
  };
  // (timeoutMs Infinity: the call carries no deadline)
  const call = (inputs: object[], outputHandles: number[], release: number[] = []) =>
    connection.unary("call", { session: connection.session, name, device: "", inputs, outputHandles, release } as never, "Call", null, Infinity);
  const stats = () => connection.unary("stats", { session: connection.session }, "Stats", null);
  const base = 2 ** 31 + 2_000_000;
  // a handle the session holds, released below while calls wait
  await call([value([1, 2])], [base + 100]);
  const held = (await stats()).sessionHandles;

  // three calls without a deadline wait for handles no call makes (the worker's cap is 3)
  const started = Date.now();
  const waiting = [0, 1, 2].map((k) => call([{ handle: base + k }], [base + 10 + k]));
  waiting.forEach((p) => p.catch(() => {}));
  await new Promise((r) => setTimeout(r, 200));
  // a fourth: refused at once, naming the limit
  await assert.rejects(call([{ handle: base + 3 }], [base + 13]), (e: unknown) => {
    assert.ok(e instanceof sc.remote.RemoteLimitError, String(e));
    assert.equal(e.code, "RESOURCE_EXHAUSTED");
    assert.match(e.message, /call 4 of this session in flight/);
    assert.match(e.message, /maxCallsInFlight/);
    return true;
  });
  // the refused call's output fails the calls that read it (they do not wait for it)
  await assert.rejects(call([{ handle: base + 13 }], [base + 14]), (e: unknown) => e instanceof sc.remote.RemoteError && e.code === "FAILED_PRECONDITION");
  // an upload is a call in flight too (it holds its tensor's memory until its last chunk)
  await assert.rejects(connection.upload("float32", [4], new Uint8Array(16), null), (e: unknown) => e instanceof sc.remote.RemoteLimitError && /maxCallsInFlight/.test((e as Error).message));
  // a call whose inputs are all here runs meanwhile, and its release is held while others wait
  const ran = await call([value([5, 6])], [base + 20], [base + 100]);
  assert.equal(ran.outputs.length, 1);
  assert.equal((await stats()).sessionHandles, held + 1, "the release waits for the waiting calls");

  // each waiting call ends at the worker's inputWaitMs, though it has no deadline: a typed error
  for (const p of waiting) {
    await assert.rejects(p, (e: unknown) => {
      assert.ok(e instanceof sc.remote.RemoteUnavailableError, String(e));
      assert.equal(e.code, "DEADLINE_EXCEEDED");
      assert.match(e.message, /waited 1500 ms \(the worker's inputWaitMs\)/);
      return true;
    });
  }
  assert.ok(Date.now() - started < 15_000, `the waits ended after ${Date.now() - started} ms`);
  // the held release is made now, and the session takes calls in flight again
  assert.equal((await stats()).sessionHandles, held);
  const later = call([{ handle: base + 30 }], [base + 31]);
  const uploaded = await connection.upload("float32", [2], new Uint8Array(new Float32Array([7, 8]).buffer), null);
  await call([{ handle: uploaded.handle }], [base + 30]);
  assert.equal((await later).outputs[0]!.handle, base + 31);
  await connection.release([base + 20, base + 30, base + 31, uploaded.handle], null);
});

test("an upload under way holds its tensor's bytes and a call in flight: concurrent uploads stay within the session's bytes; a cleared session drops them", () => {
  const limits = { ...DEFAULT_WORKER_LIMITS, maxSessionBytes: 100, maxCallsInFlight: 2 };
  const s = new Session("s", "test", limits);
  const first = s.reserve(60, "an upload of 60 bytes");
  assert.equal(s.callsInFlight, 1);
  // a second upload of 60 bytes would hold 120 of the session's 100
  assert.throws(() => s.reserve(60, "an upload of 60 bytes"), (e: unknown) => e instanceof CallFault && e.code === grpcStatus.RESOURCE_EXHAUSTED && /held by uploads under way/.test(e.message));
  // so would a tensor kept meanwhile
  assert.throws(() => s.put(sc.zeros([12], "float32")), (e: unknown) => e instanceof CallFault && e.code === grpcStatus.RESOURCE_EXHAUSTED);
  const second = s.reserve(40, "an upload of 40 bytes");
  // a third call in flight is over maxCallsInFlight (2)
  assert.throws(() => s.reserve(1, "an upload of 1 byte"), (e: unknown) => e instanceof CallFault && /maxCallsInFlight/.test(e.message));
  first();
  first(); // (once only)
  assert.equal(s.callsInFlight, 1);
  s.put(sc.zeros([15], "float32")); // the finished upload's 60 bytes, now charged as a handle
  assert.equal(s.bytes, 60);
  s.clear();
  second(); // (its session was cleared meanwhile: nothing to give back)
  assert.equal(s.callsInFlight, 0);
  assert.equal(s.bytes, 0);
  s.reserve(100, "an upload of 100 bytes");
});
