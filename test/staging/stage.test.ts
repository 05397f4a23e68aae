import { test } from "node:test";
import assert from "node:assert/strict";
import * as sc from "../../src/api/index.js";
import { applyOp1, defineOp } from "../../src/ops/registry.js";
import { assertMutateExample } from "../util/mutate-example.js";

const f64 = (v: number[] | number) => sc.tensor(v, "float64");

test("stage traces once per signature and matches eager results", () => {
  const body = (x: sc.Tensor, y: sc.Tensor) => sc.relu(x.mul(y)).add(1);
  const f = sc.stage(body);
  const a = sc.tensor([-1, 2, 3]);
  const b = sc.tensor([4, 5, -6]);
  assert.deepEqual(f(a, b).arraySync(), body(a, b).arraySync());
  assert.equal(f.traceCount, 1);
  f(b, a);
  assert.equal(f.traceCount, 1);
  f(sc.tensor([1, 2]), sc.tensor([3, 4]));
  assert.equal(f.traceCount, 2, "a new shape retraces");
  f(sc.tensor([1, 2], "float64"), sc.tensor([3, 4], "float64"));
  assert.equal(f.traceCount, 3, "a new dtype retraces");
});

test("arrays of tensors: the same signature reuses the trace, a refilled array is seen afresh", () => {
  const f = sc.stage((xs: sc.Tensor[], k: number) => xs.reduce((a, x) => a.add(x), sc.scalar(0)).mul(k));
  const xs = [sc.tensor([1, 2]), sc.tensor([3, 4])];
  assert.deepEqual(f([sc.tensor([1, 1]), sc.tensor([2, 2])], 2).arraySync(), [6, 6]);
  assert.deepEqual(f(xs, 2).arraySync(), [8, 12]);
  assert.deepEqual(f(xs, 2).arraySync(), [8, 12]);
  assert.equal(f.traceCount, 1);
  // the same array object, refilled with tensors of another shape and one more element
  xs[0] = sc.tensor([1, 2, 3]);
  xs[1] = sc.tensor([1, 1, 1]);
  xs.push(sc.tensor([0, 0, 1]));
  assert.deepEqual(f(xs, 2).arraySync(), [4, 6, 10]);
  assert.equal(f.traceCount, 2);
  xs[2] = sc.tensor([5, 5, 5]);
  assert.deepEqual(f(xs, 1).arraySync(), [7, 8, 9]);
  assert.equal(f.traceCount, 3, "a JS number keeps specializing by value");
});

test("Variables and other objects key the cache by identity", () => {
  const f = sc.stage((v: sc.Variable, cfg: { scale(): number }, x: sc.Tensor) => v.read().mul(x).mul(cfg.scale()));
  class Config {
    constructor(private readonly s: number) {}
    scale(): number {
      return this.s;
    }
  }
  const a = sc.variable(sc.tensor([1, 2]));
  const b = sc.variable(sc.tensor([3, 4]));
  const c1 = new Config(2);
  const x = sc.tensor([1, 1]);
  assert.deepEqual(f(a, c1, x).arraySync(), [2, 4]);
  assert.deepEqual(f(a, c1, sc.tensor([2, 2])).arraySync(), [4, 8]);
  assert.equal(f.traceCount, 1, "the same variable and object: one trace");
  assert.deepEqual(f(b, c1, x).arraySync(), [6, 8]);
  assert.equal(f.traceCount, 2, "another variable of the same shape is another key");
  assert.deepEqual(f(a, new Config(3), x).arraySync(), [3, 6]);
  assert.equal(f.traceCount, 3, "another object, even an equal-looking one, is another key");
  a.assign(sc.tensor([5, 5]));
  assert.deepEqual(f(a, c1, x).arraySync(), [10, 10]);
  assert.equal(f.traceCount, 3, "a variable's new value is read at run time, not retraced");
});

test("JS values specialize the graph by value (training flag)", () => {
  let traces = 0;
  const dropoutLike = sc.stage((x: sc.Tensor, training: boolean) => {
    traces++;
    return training ? x.mul(0.5) : x;
  });
  const x = sc.tensor([2, 4]);
  assert.deepEqual(dropoutLike(x, true).arraySync(), [1, 2]);
  assert.deepEqual(dropoutLike(x, false).arraySync(), [2, 4]);
  assert.deepEqual(dropoutLike(x, true).arraySync(), [1, 2]);
  assert.equal(traces, 2, "JS side effects run once per trace");
  assert.equal(dropoutLike.traceCount, 2);
});

test("arrays and objects are keyed by structure and leaves; outputs keep their structure", () => {
  const f = sc.stage((p: { w: sc.Tensor; bs: sc.Tensor[] }, scale: number) => ({ y: p.w.mul(scale).add(p.bs[0]!), n: scale }));
  const out = f({ w: sc.tensor([1, 2]), bs: [sc.tensor([10, 10])] }, 3);
  assert.deepEqual(out.y.arraySync(), [13, 16]);
  assert.equal(out.n, 3);
  f({ w: sc.tensor([5, 6]), bs: [sc.tensor([0, 0])] }, 3);
  assert.equal(f.traceCount, 1);
  f({ w: sc.tensor([5, 6]), bs: [sc.tensor([0, 0])] }, 4);
  assert.equal(f.traceCount, 2);
});

test("inputSignature with null dimensions gives one trace for all batch sizes", () => {
  const f = sc.stage((x: sc.Tensor) => sc.sum(sc.square(x), 1), { inputSignature: [sc.spec([null, 3])] });
  assert.deepEqual(f(sc.ones([2, 3])).arraySync(), [3, 3]);
  assert.deepEqual(f(sc.ones([5, 3])).arraySync(), [3, 3, 3, 3, 3]);
  assert.equal(f.traceCount, 1);
  assert.deepEqual(f.concrete(sc.ones([1, 3])).graph.inputs[0]!.type.shape, [-1, 3]);
  assert.throws(() => f(sc.ones([2, 4])), sc.ShapeError);
  assert.throws(() => f(sc.ones([2, 3], "int32")), sc.DtypeError);
});

test("reduceRetracing generalizes shapes after a retrace", () => {
  const f = sc.stage((x: sc.Tensor) => x.add(1), { reduceRetracing: true });
  f(sc.ones([2]));
  f(sc.ones([3]));
  f(sc.ones([4]));
  f(sc.ones([7]));
  assert.equal(f.traceCount, 2);
  assert.deepEqual(f(sc.ones([9])).shape, [9]);
  assert.equal(f.traceCount, 2);
});

test("frequent retracing warns once with the reason", (t) => {
  const warnings: string[] = [];
  t.mock.method(console, "warn", (m: string) => warnings.push(m));
  const f = sc.stage((x: sc.Tensor, k: number) => x.mul(k), { name: "scaler" });
  for (let k = 0; k < 8; k++) f(sc.ones([2]), k);
  assert.equal(warnings.length, 1);
  assert.match(warnings[0]!, /"scaler" was traced 6 times; the last retrace happened because argument 1 changed from number 4 to number 5/);
});

test("closures: eager tensors become captured inputs", () => {
  const w = sc.tensor([1, 2, 3]);
  const f = sc.stage((x: sc.Tensor) => x.mul(w));
  assert.deepEqual(f(sc.tensor([2, 2, 2])).arraySync(), [2, 4, 6]);
  const cf = f.concrete(sc.tensor([2, 2, 2]));
  assert.equal(cf.captures.length, 1);
  assert.equal(cf.graph.inputs.length, 2);
});

test("the TF Eager paper's mutate(): variables are captured by reference", () => {
  assertMutateExample();
});

test("variables: reads see assignments made earlier in the same graph", () => {
  const v = sc.variable([1, 2]);
  const f = sc.stage((x: sc.Tensor) => {
    const before = v.read().add(0);
    v.assign(x);
    return [before, v.read().mul(10)];
  });
  const [before, after] = f(sc.tensor([5, 6]));
  assert.deepEqual(before!.arraySync(), [1, 2]);
  assert.deepEqual(after!.arraySync(), [50, 60]);
  assert.deepEqual(v.arraySync(), [5, 6]);
});

test("creating a variable in a trace that is not the first is an error naming the line; initScope creates eagerly", () => {
  const f = sc.stage((x: sc.Tensor) => {
    const v = sc.variable(new Array<number>(x.shape[0]!).fill(0));
    return x.add(v);
  });
  f(sc.ones([2]));
  assert.throws(
    () => f(sc.ones([3])),
    (e: Error) => e instanceof sc.ValueError && /created while retracing staged function/.test(e.message) && /stage\.test\.ts:\d+/.test(e.message),
  );
  let created: sc.Variable | null = null;
  const g = sc.stage((x: sc.Tensor) => {
    const v = (created ??= sc.initScope(() => sc.variable(sc.ones([2]))));
    return x.add(v);
  });
  assert.deepEqual(g(sc.tensor([1, 1])).arraySync(), [2, 2]);
  assert.equal(created!.isSymbolic, false);
});

test("reading a symbolic tensor's value explains why and what to use instead", () => {
  const f = sc.stage((x: sc.Tensor) => (x.sum().item() as number) > 0 ? x : x.neg());
  assert.throws(
    () => f(sc.ones([2])),
    (e: Error) => e instanceof sc.SymbolicValueError && /sc\.cond/.test(e.message) && /hostCall/.test(e.message) && /stage\.test\.ts:\d+/.test(e.message),
  );
});

test("composition: a staged function called inside another is a call node into the library", () => {
  const inner = sc.stage((x: sc.Tensor) => x.square());
  const outer = sc.stage((x: sc.Tensor) => inner(x).add(inner(x.add(1))));
  assert.deepEqual(outer(sc.tensor([1, 2])).arraySync(), [5, 13]);
  const cf = outer.concrete(sc.tensor([1, 2]));
  const calls = cf.graph.nodes.filter((n) => n.op === "call");
  assert.equal(calls.length, 2);
  assert.ok(cf.library.functions.has(calls[0]!.attrs.callee as string));
  assert.match(cf.toString(), /call/);
});

test("cond and whileLoop run eagerly and stage as regions", () => {
  const g = sc.stage((x: sc.Tensor) => sc.cond(sc.greater(sc.sum(x), 0), () => x.mul(2), () => x.neg()));
  assert.deepEqual(g(sc.tensor([1, 2])).arraySync(), [2, 4]);
  assert.deepEqual(g(sc.tensor([-1, -2])).arraySync(), [1, 2]);
  assert.equal(g.traceCount, 1);
  assert.deepEqual(sc.cond(sc.tensor(true), () => 1, () => 2), 1);
  const powers = sc.stage((n: sc.Tensor) =>
    sc.whileLoop((i) => sc.less(i, n), (i, acc) => [i.add(1), acc!.mul(2)], [sc.scalar(0), sc.scalar(1)]),
  );
  assert.deepEqual(powers(sc.scalar(10)).map((t) => t.item()), [10, 1024]);
  assert.deepEqual(powers(sc.scalar(3)).map((t) => t.item()), [3, 8]);
  assert.equal(powers.traceCount, 1);
  const eager = sc.whileLoop((i) => sc.less(i, 4), (i) => [i.add(1)], [sc.scalar(0)]);
  assert.equal(eager[0]!.item(), 4);
  assert.throws(() => sc.stage((x: sc.Tensor) => sc.whileLoop((i) => sc.less(sc.sum(i), 10), (i) => [sc.concat([i, i], 0)], [x]))(sc.ones([1])), sc.ShapeError);
});

test("hostCall runs JavaScript at run time and is differentiable", () => {
  const seen: number[] = [];
  const f = sc.stage((x: sc.Tensor) => {
    const y = sc.hostCall((t: sc.Tensor) => {
      seen.push(t.item() as number);
      return sc.square(t);
    }, sc.spec([], "float64"), x) as sc.Tensor;
    return y.mul(3);
  });
  assert.equal(f(f64(2)).item(), 12);
  assert.equal(f(f64(5)).item(), 75);
  assert.deepEqual(seen, [2, 5], "the host function runs per call, not per trace");
  const g = sc.grad((x: sc.Tensor) => f(x))(f64(2));
  assert.equal(g.item(), 12);
});

test("staged print logs at run time", (t) => {
  const logs: string[] = [];
  t.mock.method(console, "log", (...a: unknown[]) => logs.push(a.join(" ")));
  const f = sc.stage((x: sc.Tensor) => {
    sc.print("x is", x);
    return x;
  });
  f(sc.tensor([1, 2]));
  f(sc.tensor([3, 4]));
  assert.deepEqual(logs, ["x is Tensor([1., 2.], shape=[2], dtype=float32)", "x is Tensor([3., 4.], shape=[2], dtype=float32)"]);
});

test("tape integration: gradients through staged calls equal eager ones, to higher order", () => {
  const w = sc.variable(f64([1, 2]));
  const lossFn = (x: sc.Tensor) => sc.sum(sc.square(x.mul(w)));
  const staged = sc.stage(lossFn);
  const x = f64([3, 4]);
  const grads = (fn: (x: sc.Tensor) => sc.Tensor) => {
    const tape = new sc.GradientTape();
    const L = tape.record(() => (tape.watch(x), fn(x)));
    return [L, ...tape.gradient(L, [x, w])].map((t: sc.Tensor) => t.arraySync());
  };
  assert.deepEqual(grads(staged), grads(lossFn));
  const cubic = sc.stage((u: sc.Tensor) => u.sin().mul(u));
  const v = 0.7;
  const d2 = sc.grad(sc.grad((t: sc.Tensor) => cubic(t)))(f64(v)).item() as number;
  assert.ok(Math.abs(d2 - (2 * Math.cos(v) - v * Math.sin(v))) < 1e-12);
  const d3 = sc.grad(sc.grad(sc.grad((t: sc.Tensor) => cubic(t))))(f64(v)).item() as number;
  assert.ok(Math.abs(d3 - (-3 * Math.sin(v) - v * Math.cos(v))) < 1e-12);
});

test("devices: listDevices, device scopes, tensors know their device", () => {
  const ds = sc.listDevices();
  assert.equal(ds[0]!.name, "cpu:0");
  const t = sc.device("cpu", () => sc.ones([2]).add(1));
  assert.equal(t.device, "cpu:0");
  assert.throws(() => sc.device("gpu:3", () => 0), sc.ValueError);
  // an input that lives on another device (a tensor made elsewhere) is copied to the op's device:
  // kernels only ever see inputs on their own device
  const elsewhere = new sc.Tensor(new Float32Array([1, 2]), [2], "float32", "sim:0");
  const seen: string[] = [];
  const probe = defineOp<Record<string, never>>({
    name: "testDeviceProbe",
    family: "test",
    inputs: ["x"],
    infer: (ins) => [ins[0]!],
    kernels: {
      cpu: (ins) => {
        seen.push(...ins.map((x) => x.device));
        return [ins[0]!.concrete().slice()];
      },
    },
  });
  assert.deepEqual(applyOp1(probe, [elsewhere], {}).arraySync(), [1, 2]);
  assert.deepEqual(seen, ["cpu:0"]);
  const sum = sc.add(elsewhere, sc.ones([2]));
  assert.equal(sum.device, "cpu:0");
  assert.deepEqual(sum.arraySync(), [2, 3]);
  assert.equal(elsewhere.device, "sim:0", "the input itself stays where it is");
  const doubled = sc.stage((x: sc.Tensor) => x.mul(2))(elsewhere);
  assert.equal(doubled.device, "cpu:0");
  assert.deepEqual(doubled.arraySync(), [2, 4]);
});

test("scan threads a carry over the leading axis, eagerly and staged", () => {
  const xs = sc.tensor([[1, 2], [3, 4], [5, 6]]);
  const step = (carry: sc.Tensor[], x: sc.Tensor): [sc.Tensor[], sc.Tensor] => {
    const s = carry[0]!.add(x);
    return [[s], s.mul(10)];
  };
  const [[c], ys] = sc.scan(step, [sc.zeros([2])], xs);
  assert.deepEqual(c!.arraySync(), [9, 12]);
  assert.deepEqual(ys.arraySync(), [[10, 20], [40, 60], [90, 120]]);
  const staged = sc.stage((x: sc.Tensor) => sc.scan(step, [sc.zeros([2])], x));
  const [[c2], ys2] = staged(xs);
  assert.deepEqual(c2!.arraySync(), [9, 12]);
  assert.deepEqual(ys2.arraySync(), ys.arraySync());
  assert.ok(staged.concrete(xs).graph.nodes.some((n) => n.op === "while"));
});
