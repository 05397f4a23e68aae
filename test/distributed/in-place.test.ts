// In-place all-reduce without a launcher (the 2-rank values are in mpi-in-place-job.mjs): a test
// double says it is rank 0 of 2 and sums as if the other rank sent the same values; it records
// which buffers its calls wrote. Host buffers made by hostBuffer are written in place; tensors'
// storage never is, nor any other array (refused with a typed error, the tensor and its views
// unchanged); Variables are assigned;
// DistributedOptimizer's fused bucket is reduced over its own storage only when nothing else
// can see it.
import { test } from "node:test";
import assert from "node:assert/strict";
import * as sc from "../../src/api/index.js";
import { Rng } from "../util/rng.js";

type Buf = Float32Array | Float64Array | Int32Array;
const calls: { kind: "inPlace" | "outOfPlace"; data: Buf }[] = [];
const double: sc.distributed.CollectiveProvider = {
  name: "test-in-place-double",
  rank: 0,
  size: 2,
  allReduce(send, recv, _dtype, reduce) {
    calls.push({ kind: "outOfPlace", data: recv as Buf });
    for (let i = 0; i < send.length; i++) recv[i] = reduce === "sum" ? 2 * send[i]! : send[i]!;
  },
  allReduceInPlace(data, _dtype, reduce) {
    calls.push({ kind: "inPlace", data: data as Buf });
    if (reduce === "sum") for (let i = 0; i < data.length; i++) data[i] = 2 * data[i]!;
  },
  broadcast() {},
  allGather(send, recv) {
    recv.set(send, 0);
    recv.set(send, send.length);
  },
};
// the same double without allReduceInPlace: reduceInPlace falls back to allReduce(copy, data)
const noInPlace: sc.distributed.CollectiveProvider = { ...double, name: "test-no-in-place", allReduceInPlace: undefined };
sc.distributed.registerProvider(double.name, () => double);
sc.distributed.registerProvider(noInPlace.name, () => noInPlace);

function inJob<T>(name: string, fn: () => T): T {
  sc.distributed.init({ provider: name });
  calls.length = 0;
  try {
    return fn();
  } finally {
    sc.distributed.finalize();
  }
}

const own = <T extends sc.distributed.HostReduceBuffer>(dtype: "float32" | "float64" | "int32", values: number[]): T => {
  const b = sc.distributed.hostBuffer(dtype, values.length);
  b.set(values);
  return b as T;
};

test("allReduceInPlace on a hostBuffer: written in place (the caller's buffer is the receive buffer), float32/float64/int32, sum/mean/max", () => {
  for (const name of [double.name, noInPlace.name]) {
    inJob(name, () => {
      const f32 = own<Float32Array>("float32", [1.5, -2, 3]);
      assert.ok(f32 instanceof Float32Array);
      assert.equal(sc.distributed.allReduceInPlace(f32, "sum"), f32);
      assert.deepEqual([...f32], [3, -4, 6]);
      // (rank 0 of 2, the other rank's values the same: the mean is the value itself)
      const f64 = own<Float64Array>("float64", [1 + 1e-12, 2.5e-300]);
      sc.distributed.allReduceInPlace(f64, "mean");
      assert.deepEqual([...f64], [1 + 1e-12, 2.5e-300]);
      const i32 = own<Int32Array>("int32", [(1 << 24) + 1, -7]);
      sc.distributed.allReduceInPlace(i32, "max");
      assert.deepEqual([...i32], [(1 << 24) + 1, -7]);
      sc.distributed.allReduceInPlace(i32, "sum");
      assert.deepEqual([...i32], [2 * ((1 << 24) + 1), -14]);
      // default: mean
      const m = own<Float32Array>("float32", [4, 8]);
      sc.distributed.allReduceInPlace(m);
      assert.deepEqual([...m], [4, 8]);
      // every call wrote the caller's own array (no receive buffer of ours)
      assert.deepEqual(calls.map((c) => c.data), [f32, f64, i32, i32, m]);
      assert.deepEqual(calls.map((c) => c.kind), Array(5).fill(name === double.name ? "inPlace" : "outOfPlace"));
    });
  }
});

test("allReduceInPlace never writes a tensor's storage: dataSync() memory, views of it, other arrays and tensors are refused, the tensor unchanged", async () => {
  const viaData = sc.tensor([5, 6], "float32");
  const awaited = (await viaData.data()) as Float32Array;
  inJob(double.name, () => {
    const t = sc.tensor([1, 2, 3, 4], "float32");
    const view = sc.reshape(t, [2, 2]);
    const storage = t.dataSync();
    const isRefusal = (e: unknown) => e instanceof sc.ValueError && /hostBuffer\("float32", n\)/.test((e as Error).message) && /tensor's storage/.test((e as Error).message);
    assert.throws(() => sc.distributed.allReduceInPlace(storage as Float32Array, "sum"), isRefusal);
    assert.throws(() => sc.distributed.allReduceInPlace((storage as Float32Array).subarray(1), "sum"), isRefusal);
    assert.throws(() => sc.distributed.allReduceInPlace(new Float32Array(storage.buffer), "sum"), isRefusal);
    // a view's storage, read through the view
    assert.throws(() => sc.distributed.allReduceInPlace(view.dataSync() as Float32Array, "sum"), isRefusal);
    // an array made elsewhere, and views of a hostBuffer's memory (only the buffer itself is known)
    assert.throws(() => sc.distributed.allReduceInPlace(new Float32Array(4), "sum"), isRefusal);
    const mine = sc.distributed.hostBuffer("float32", 4);
    assert.throws(() => sc.distributed.allReduceInPlace(mine.subarray(1), "sum"), isRefusal);
    assert.throws(() => sc.distributed.allReduceInPlace(new Float32Array(mine.buffer), "sum"), isRefusal);
    // a hostBuffer given to sc.tensor is copied: reducing the buffer leaves the tensor
    mine.set([1, 2, 3, 4]);
    const fromMine = sc.tensor(mine, "float32", [4]);
    sc.distributed.allReduceInPlace(mine, "sum");
    assert.deepEqual([...mine], [2, 4, 6, 8]);
    assert.deepEqual([...fromMine.dataSync()], [1, 2, 3, 4]);
    // await data() hands out storage too
    assert.throws(() => sc.distributed.allReduceInPlace(awaited, "sum"), isRefusal);
    assert.deepEqual([...viaData.dataSync()], [5, 6]);
    assert.deepEqual([...t.dataSync()], [1, 2, 3, 4]);
  });
  inJob(double.name, () => {
    const t = sc.tensor([1, 2, 3, 4], "float32");
    const view = sc.reshape(t, [2, 2]);
    assert.throws(() => sc.distributed.allReduceInPlace(t as never, "sum"), (e: unknown) => e instanceof sc.ValueError && /immutable/.test((e as Error).message) && /float32\[4\]/.test((e as Error).message));
    assert.throws(() => sc.distributed.allReduceInPlace(new Uint8Array(3) as never, "sum"), (e: unknown) => e instanceof sc.DtypeError && /Uint8Array/.test((e as Error).message));
    assert.throws(() => sc.distributed.allReduceInPlace(sc.distributed.hostBuffer("int32", 3), "mean"), (e: unknown) => e instanceof sc.DtypeError && /Int32Array/.test((e as Error).message));
    assert.throws(() => sc.distributed.allReduceInPlace(sc.distributed.hostBuffer("float32", 3), "prod" as never), sc.ValueError);
    assert.throws(() => sc.distributed.hostBuffer("uint8" as never, 3), sc.DtypeError);
    assert.throws(() => sc.distributed.hostBuffer("float32", -1), sc.ValueError);
    // nothing reached the provider, and the tensor and its view kept their values
    assert.equal(calls.length, 0);
    assert.deepEqual([...t.dataSync()], [1, 2, 3, 4]);
    assert.deepEqual(view.arraySync(), [[1, 2], [3, 4]]);
    // a copy into a hostBuffer is the caller's
    const copy = sc.distributed.hostBuffer("float32", 4);
    copy.set(t.dataSync());
    sc.distributed.allReduceInPlace(copy, "sum");
    assert.deepEqual([...copy], [2, 4, 6, 8]);
    assert.deepEqual([...t.dataSync()], [1, 2, 3, 4]);
  });
});

test("allReduceInPlace in a staged function: a host array is a DistributedError; a Variable is assigned every call", () => {
  inJob(double.name, () => {
    const host = own<Float32Array>("float32", [1, 2]);
    const bad = sc.stage((x: sc.Tensor) => {
      sc.distributed.allReduceInPlace(host, "sum");
      return x;
    });
    assert.throws(() => bad(sc.tensor([0])), (e: unknown) => e instanceof sc.distributed.DistributedError && /traced/.test((e as Error).message));
    assert.deepEqual([...host], [1, 2]);
    const v = sc.variable(sc.tensor([1, -3], "float32"));
    const f = sc.stage(() => {
      sc.distributed.allReduceInPlace(v, "sum");
      return v.read();
    });
    assert.deepEqual([...f().dataSync()], [2, -6]);
    assert.deepEqual([...f().dataSync()], [4, -12]);
    assert.deepEqual([...v.dataSync()], [4, -12]);
  });
});

test("allReduceInPlace on a Variable: its value replaced; the old value, views of it and a tape's saved value unchanged", () => {
  inJob(double.name, () => {
    const v = sc.variable(sc.tensor([1, 2, 3, 4], "float64"));
    const old = v.read();
    const oldView = sc.reshape(v, [2, 2]);
    const oldStorage = old.dataSync();
    assert.equal(sc.distributed.allReduceInPlace(v, "sum"), v);
    assert.deepEqual([...v.dataSync()], [2, 4, 6, 8]);
    assert.deepEqual([...old.dataSync()], [1, 2, 3, 4]);
    assert.deepEqual(oldView.arraySync(), [[1, 2], [3, 4]]);
    assert.deepEqual([...oldStorage], [1, 2, 3, 4]);
    // a tape that saved v's value: its gradient uses the value it saw
    const w = sc.variable(sc.tensor([3, -1], "float32"));
    const tape = new sc.GradientTape();
    const loss = tape.record(() => sc.sum(sc.mul(w, w)));
    sc.distributed.allReduceInPlace(w, "sum");
    assert.deepEqual([...tape.gradient(loss, [w])[0]!.dataSync()], [6, -2]);
    assert.deepEqual([...w.dataSync()], [6, -2]);
    // dtype rules as the op's
    assert.throws(() => sc.distributed.allReduceInPlace(sc.variable(sc.tensor([1], "int32")), "mean"), sc.DtypeError);
  });
});

// ---- DistributedOptimizer: the fused bucket

const rng = new Rng(11);
const gradsOf = () => [rng.tensor([3, 2], -1, 1, "float32"), rng.tensor([4], -1, 1, "float32"), rng.tensor([2, 2], -1, 1, "float32")];

test("DistributedOptimizer's fused bucket is reduced over its own storage (eager), = the unfused all-reduces bit for bit; the gradients unchanged", () => {
  inJob(double.name, () => {
    for (const reduce of ["mean", "sum"] as const) {
      const grads = gradsOf();
      const before = grads.map((g) => Float32Array.from(g.dataSync()));
      calls.length = 0;
      const fused = sc.distributed.allReduceGradients(grads, { reduce });
      // one call, in place, on a buffer that is none of the gradients' storage
      assert.deepEqual(calls.map((c) => c.kind), ["inPlace"]);
      assert.equal(calls[0]!.data.length, 6 + 4 + 4);
      for (const g of grads) assert.notEqual(calls[0]!.data.buffer, g.dataSync().buffer);
      grads.forEach((g, i) => assert.deepEqual([...g.dataSync()], [...before[i]!], `gradient ${i} unchanged (${reduce})`));
      const unfused = sc.distributed.allReduceGradients(grads, { reduce, fusionBytes: 0 });
      fused.forEach((f, i) => {
        assert.deepEqual(f!.shape, grads[i]!.shape);
        assert.deepEqual([...f!.dataSync()], [...unfused[i]!.dataSync()], `gradient ${i} (${reduce})`);
      });
    }
    // the same gradient twice (one storage): both come back reduced, the gradient unchanged
    const g = rng.tensor([5], -1, 1, "float32");
    const gv = Float32Array.from(g.dataSync());
    const [a, b] = sc.distributed.allReduceGradients([g, sc.reshape(g, [5])], { reduce: "sum" });
    assert.deepEqual([...a!.dataSync()], [...gv].map((x) => 2 * x));
    assert.deepEqual([...b!.dataSync()], [...gv].map((x) => 2 * x));
    assert.deepEqual([...g.dataSync()], [...gv]);
  });
});

test("DistributedOptimizer's fused bucket goes through the all-reduce op where a tape records, and in staged steps", () => {
  inJob(double.name, () => {
    // a recording tape keeps the bucket and the op's record: the op (a new tensor), differentiable
    const x = sc.tensor([1, 2, 3], "float32");
    const tape = new sc.GradientTape();
    tape.watch(x);
    const out = tape.record(() => sc.distributed.allReduceGradients([sc.mul(x, 2), sc.mul(x, 3)], { reduce: "sum" }));
    assert.deepEqual(calls.map((c) => c.kind), ["outOfPlace"]);
    const loss = tape.record(() => sc.add(sc.sum(out[0]!), sc.sum(out[1]!)));
    // the cotangent goes back through the recorded all-reduce (a sum all-reduce of it: the
    // double doubles it), then concat's and mul's: 2 (2 + 3); an unrecorded in-place reduce would give 5
    assert.deepEqual([...tape.gradient(loss, [x])[0]!.dataSync()], [10, 10, 10]);
    // staged: the all-reduce is a node of the graph (the op)
    calls.length = 0;
    const f = sc.stage((a: sc.Tensor, b: sc.Tensor) => sc.distributed.allReduceGradients([a, b], { reduce: "sum" }));
    const r = f(sc.tensor([1, 2]), sc.tensor([3]));
    assert.deepEqual([...r[0]!.dataSync(), ...r[1]!.dataSync()], [2, 4, 6]);
    assert.ok(calls.length > 0 && calls.every((c) => c.kind === "outOfPlace"));
  });
});

test("DistributedOptimizer in a job of 2 (the double): eager minimize steps with the fused in-place bucket = unfused steps, bit for bit", () => {
  inJob(double.name, () => {
    const init = [rng.tensor([3, 2], -1, 1, "float32"), rng.tensor([2], -1, 1, "float32")];
    const X = rng.tensor([8, 3], -1, 1, "float32");
    const run = (fusionBytes: number | undefined) => {
      const [w, b] = init.map((t) => sc.variable(t));
      const opt = sc.distributed.DistributedOptimizer(new sc.optim.Adam({ learningRate: 0.01 }), fusionBytes === undefined ? {} : { fusionBytes });
      for (let i = 0; i < 4; i++) opt.minimize(() => sc.sum(sc.square(sc.add(sc.matmul(X, w!), b!))), [w!, b!]);
      return [w!, b!].map((v) => [...v.dataSync()]);
    };
    calls.length = 0;
    const fused = run(undefined);
    assert.deepEqual(calls.map((c) => c.kind), Array(4).fill("inPlace"));
    assert.deepEqual(fused, run(0));
  });
});
