/**
 * engine "auto" (onnx/partition): a staged graph cut into segments, the exportable ones run as
 * onnxruntime sessions and the rest on our executor, must give our executor's answers. The
 * measured choice is forced to the partitioned plan (setAutoPolicy), so these tests never depend
 * on timings; every function is built so that part of it cannot be exported (a host call) and
 * part of it is big enough for the engine, so the plan really mixes both.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as sc from "../../src/api/index.js";
import { autoStats, setAutoPolicy } from "../../src/onnx/partition/auto.js";
import { cutGraph } from "../../src/onnx/partition/cut.js";
import { Rng } from "../util/rng.js";

setAutoPolicy({ choice: "plan", warmCalls: 0 });

function close(a: sc.Tensor, b: sc.Tensor, what: string, rtol = 1e-5): void {
  assert.deepEqual(a.shape, b.shape, `${what}: shape`);
  const p = a.dataSync(), q = b.dataSync();
  for (let i = 0; i < p.length; i++) {
    const x = Number(p[i]), y = Number(q[i]);
    assert.ok(Math.abs(x - y) <= rtol * (1 + Math.abs(y)), `${what}: element ${i}: auto ${x}, ours ${y}`);
  }
}

const rng = new Rng(7);
const big = (shape: number[]) => rng.tensor(shape, -0.5, 0.5, "float32");
const heavy = (x: sc.Tensor) => x.matmul(x).tanh().add(1).mul(0.5).sub(0.25);

const cases: [string, (...xs: sc.Tensor[]) => sc.Tensor, sc.Tensor[]][] = [
  ["a host call between two exportable runs", (x) => {
    const h = sc.hostCall((t: sc.Tensor) => sc.mul(t, 3), sc.spec([128, 128], "float32"), heavy(x)) as sc.Tensor;
    return heavy(h);
  }, [big([128, 128])]],
  ["a while loop (one unit) then a reduction", (x) => {
    const [, y] = sc.whileLoop((i: sc.Tensor) => i.less(3), (i: sc.Tensor, a: sc.Tensor) => [i.add(1), heavy(a)], [sc.scalar(0, "int32"), x]);
    return sc.sum(y!, [1]);
  }, [big([128, 128])]],
  ["a cond on a data-dependent predicate", (x) => sc.cond(sc.sum(x).greater(0), () => heavy(x), () => heavy(x).neg()), [big([128, 128])]],
  ["the graph-AD gradient of a loss with a host call", (x) => {
    const loss = (t: sc.Tensor) => sc.sum(sc.square(heavy(sc.hostCall((u: sc.Tensor) => sc.mul(u, 2), sc.spec([128, 128], "float32"), t) as sc.Tensor)));
    return sc.grad(loss)(x) as sc.Tensor;
  }, [big([128, 128])]],
];

for (const [name, f, xs] of cases) {
  test(`auto = ours: ${name}`, () => {
    const ours = sc.stage(f, { autograph: false, engine: "stagecraft" });
    const auto = sc.stage(f, { autograph: false, engine: "auto" });
    const before = autoStats.plans;
    for (let call = 0; call < 3; call++) close(auto(...xs), ours(...xs), `${name}, call ${call}`);
    assert.ok(autoStats.plans > before, `${name}: a partitioned plan was made`);
  });
}

test("auto runs random draws on the engine (they export): the same draws as ours for the same key", () => {
  const spec = sc.spec([128, 128], "float32");
  const f = (x: sc.Tensor, key: sc.Tensor) => {
    const h = sc.hostCall((t: sc.Tensor) => sc.mul(t, 3), spec, heavy(x.add(sc.random.uniform([128, 128], { key })))) as sc.Tensor;
    return heavy(h.add(sc.random.normal([128, 128], { key: sc.random.foldIn(key, 1) })));
  };
  const x = big([128, 128]);
  const cf = sc.stage(f, { autograph: false }).concrete(x, sc.random.key(5));
  const cut = cutGraph(cf.graph, cf.library, 2);
  const placement = (op: string) => cut.segments.filter((s) => s.graph.nodes.some((n) => n.op === op)).map((s) => s.onEngine);
  assert.deepEqual(placement("randomUniform"), [true], "the uniform draw is in an engine segment");
  assert.deepEqual(placement("randomNormal"), [true], "the normal draw is in an engine segment");
  assert.deepEqual(placement("hostCall"), [false]);
  const ours = sc.stage(f, { autograph: false, engine: "stagecraft" });
  const auto = sc.stage(f, { autograph: false, engine: "auto" });
  const before = autoStats.plans;
  for (let call = 0; call < 3; call++) {
    const key = sc.random.key(5 + call);
    close(auto(x, key), ours(x, key), `call ${call}`);
  }
  assert.ok(autoStats.plans > before, "a partitioned plan was made");
});

test("a variable the graph assigns is updated once per call under auto, as ours", () => {
  const mk = () => sc.variable(sc.zeros([128, 128], "float32"));
  const va = mk(), vo = mk();
  const step = (v: sc.Variable) => (x: sc.Tensor) => {
    v.assign(v.read().add(heavy(x)));
    return sc.sum(v.read());
  };
  const x = big([128, 128]);
  const auto = sc.stage(step(va), { autograph: false, engine: "auto" });
  const ours = sc.stage(step(vo), { autograph: false, engine: "stagecraft" });
  for (let call = 0; call < 3; call++) close(auto(x), ours(x), `call ${call}`, 1e-4);
  close(va.read(), vo.read(), "the variables after three calls", 1e-4);
});
