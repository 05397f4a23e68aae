// The worker's security defaults and limits, on real worker processes: the token, loopback-only
// listening without a token or TLS, message and tensor and session limits (typed errors), and
// tensors larger than a message travelling in chunks both ways.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as sc from "../../src/api/index.js";
import { isLoopback, tokenMatches, workerLimits } from "../../src/remote/limits.js";
import { Rng } from "../util/rng.js";
import { runWorkerCommand, spawnWorker, type WorkerProcess } from "./worker-process.js";

const DEVICE = "/job:worker/task:0/device:cpu:0";
let withToken: WorkerProcess;
let small: WorkerProcess;
let withTls: WorkerProcess | null = null;
let refused: Promise<{ code: number | null; stdout: string; stderr: string }>;
const certDir = mkdtempSync(join(tmpdir(), "stagecraft-tls-"));
/** A self-signed certificate for 127.0.0.1 (null where openssl is missing: the TLS test says so and skips). */
const cert = (() => {
  const r = spawnSync("openssl", ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1",
    "-keyout", join(certDir, "key.pem"), "-out", join(certDir, "cert.pem")], { stdio: "ignore" });
  return r.status === 0 ? { cert: join(certDir, "cert.pem"), key: join(certDir, "key.pem") } : null;
})();

before(async () => {
  // (started together: each takes seconds to load the sources)
  refused = runWorkerCommand(["--listen", "0.0.0.0:0"]);
  [withToken, small, withTls] = await Promise.all([
    spawnWorker(["--token", "s3cret-token"]),
    spawnWorker(["--max-message-bytes", "4096", "--max-tensor-elements", "100000", "--max-session-bytes", "1000000"]),
    // (TLS alone lets a worker listen beyond loopback)
    cert ? spawnWorker(["--listen", "0.0.0.0:0", "--tls-cert", cert.cert, "--tls-key", cert.key]) : Promise.resolve(null),
  ]);
});
after(async () => {
  await Promise.all([withToken?.kill("SIGTERM"), small?.kill("SIGTERM"), withTls?.kill("SIGTERM")]);
  rmSync(certDir, { recursive: true, force: true });
});

test("a worker with TLS listens beyond loopback; clients must speak TLS and trust its certificate", { skip: cert ? false : "openssl is not installed" }, async () => {
  assert.match(withTls!.address, /^0\.0\.0\.0:\d+$/);
  const address = withTls!.address.replace("0.0.0.0", "127.0.0.1");
  // plain text to a TLS port: no session
  await assert.rejects(sc.remote.connect({ cluster: { worker: [address] }, timeoutMs: 5000 }), (e: unknown) => e instanceof sc.remote.RemoteUnavailableError);
  const cluster = await sc.remote.connect({ cluster: { worker: [address] }, tls: { ca: readFileSync(cert!.cert) } });
  try {
    const f = await sc.remote.device(DEVICE, sc.stage((x: sc.Tensor) => x.mul(3)));
    assert.deepEqual(Array.from(await (await f(sc.tensor([1, 2]))).data()), [3, 6]);
  } finally {
    await cluster.close();
  }
});

test("tokens compare in constant time and must match exactly", () => {
  assert.equal(tokenMatches("abc", "abc"), true);
  assert.equal(tokenMatches("abd", "abc"), false);
  assert.equal(tokenMatches("abc ", "abc"), false);
  assert.equal(tokenMatches(undefined, "abc"), false);
  assert.equal(tokenMatches("", "abc"), false);
});

test("loopback addresses", () => {
  for (const h of ["127.0.0.1", "127.1.2.3", "localhost", "[::1]", "::1"]) assert.equal(isLoopback(h), true, h);
  for (const h of ["0.0.0.0", "10.0.0.1", "[::]", "example.com", "128.0.0.1"]) assert.equal(isLoopback(h), false, h);
});

test("bad limits are ValueErrors naming the option, never a limit switched off", () => {
  for (const bad of [0, -1, 1.5, NaN, "10"]) {
    assert.throws(() => workerLimits({ maxTensorBytes: bad }, "test"), (e: unknown) => e instanceof sc.ValueError && /maxTensorBytes/.test((e as Error).message));
  }
  assert.equal(workerLimits({ maxTensorBytes: Infinity }, "test").maxTensorBytes, Infinity);
});

test("a worker refuses to listen on a non-loopback address without a token or TLS", async () => {
  const r = await refused;
  assert.equal(r.code, 2);
  assert.match(r.stderr, /refusing to listen on 0\.0\.0\.0:0, which is not a loopback address/);
  assert.doesNotMatch(r.stdout, /listening/);
  await assert.rejects(sc.remote.startWorker({ listen: "0.0.0.0:0" }), (e: unknown) => e instanceof sc.ValueError);
  // with a token it listens
  const w = await sc.remote.startWorker({ listen: "0.0.0.0:0", token: "t" });
  assert.ok(w.port > 0);
  await w.close();
});

test("a worker with a token refuses calls without it or with a wrong one", async () => {
  for (const token of [undefined, "wrong-token", "s3cret-toke"]) {
    await assert.rejects(
      sc.remote.connect({ cluster: { worker: [withToken.address] }, ...(token !== undefined ? { token } : {}) }),
      (e: unknown) => {
        assert.ok(e instanceof sc.remote.RemoteAuthenticationError, String(e));
        assert.equal(e.address, withToken.address);
        assert.equal(e.code, "UNAUTHENTICATED");
        assert.match(e.message, /OpenSession on worker/);
        return true;
      },
    );
    // (a refused connect leaves no device listed)
    assert.ok(!sc.listDevices().some((d) => d.name === DEVICE));
  }
  const cluster = await sc.remote.connect({ cluster: { worker: [withToken.address] }, token: "s3cret-token" });
  try {
    const f = await sc.remote.device(DEVICE, sc.stage((x: sc.Tensor) => x.add(1)));
    assert.deepEqual(Array.from(await (await f(sc.tensor([1, 2]))).data()), [2, 3]);
  } finally {
    await cluster.close();
  }
});

test("limits: chunked transfers, then messages, tensors and sessions over the worker's limits are typed errors", async () => {
  const cluster = await sc.remote.connect({ cluster: { worker: [small.address] } });
  try {
    // 1. a 200 KB tensor crosses 4 KiB messages in chunks, up and back
    const rng = new Rng(5);
    const big = rng.tensor([50_000], -1, 1, "float32");
    const double = await sc.remote.device(DEVICE, sc.stage((x: sc.Tensor) => x.mul(2)));
    const r = await double(big);
    assert.deepEqual(Array.from(await r.data()), Array.from(big.mul(2).dataSync()));
    await r.dispose();

    // 2. a graph whose text is larger than a message
    const long = sc.stage((x: sc.Tensor) => {
      let y = x;
      for (let i = 0; i < 200; i++) y = y.add(i);
      return y;
    });
    const rf = await sc.remote.device(DEVICE, long);
    await assert.rejects(rf(sc.tensor([1])), (e: unknown) => {
      assert.ok(e instanceof sc.remote.RemoteLimitError, String(e));
      assert.equal(e.code, "RESOURCE_EXHAUSTED");
      assert.match(e.message, /^remote: Register \w+_\d+ on worker 127\.0\.0\.1:\d+: .*at most 4096 bytes/);
      return true;
    });

    // 3. a tensor over the elements limit, sent by the client or made by the graph
    // (any length: the graph has no static shape to refuse, the worker refuses the tensor when it comes)
    const anyLength = await sc.remote.device(DEVICE, sc.stage((x: sc.Tensor) => x.mul(2), { inputSignature: [sc.spec([null])] }));
    const short = await anyLength(sc.tensor([1, 2]));
    assert.deepEqual(Array.from(await short.data()), [2, 4]);
    await short.dispose();
    await assert.rejects(anyLength(sc.zeros([100_001])), (e: unknown) => e instanceof sc.remote.RemoteLimitError && /Upload on worker .*100001 elements, over the limit of 100000/.test((e as Error).message));
    await assert.rejects(double(sc.zeros([100_001])), (e: unknown) => e instanceof sc.remote.RemoteLimitError && /a mul node makes .*100001 elements/.test((e as Error).message));
    const maker = await sc.remote.device(DEVICE, sc.stage((x: sc.Tensor) => sc.zeros([1000, 1000]).add(x)));
    await assert.rejects(maker(sc.tensor([1])), (e: unknown) => e instanceof sc.remote.RemoteLimitError && /1000000 elements/.test((e as Error).message));

    // 4. the session's bytes: 1 MB in all
    const kept: sc.remote.RemoteTensor[] = [];
    assert.equal((await cluster.stats(DEVICE)).sessionBytes, 0);
    const rejected = await (async () => {
      for (let i = 0; i < 10; i++) {
        try {
          kept.push(await double(sc.zeros([50_000])));
        } catch (e) {
          return e;
        }
      }
      return null;
    })();
    assert.ok(rejected instanceof sc.remote.RemoteLimitError, String(rejected));
    assert.match((rejected as Error).message, /over its limit of 1000000/);
    // (4 results and the fifth call's upload make 1 MB: its result would go over)
    assert.equal(kept.length, 4);
    for (const k of kept) await k.dispose();
    // freed: calls work again
    await (await double(sc.zeros([50_000]))).dispose();
  } finally {
    await cluster.close();
  }
});
