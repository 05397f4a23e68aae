/**
 * sc.onnx.exportFunction / exportModel: what a model declares (IR version, opset, input and
 * output names, symbolic dims, initializers named by module path), and the typed errors for
 * what ONNX cannot hold (the op and the user's line named; recursion said so). A small RNN (GRU)
 * and its whole training step (forward, graph-AD backward through the loop, the optimizer
 * update), and an in-graph training loop, run in onnxruntime-node with our results.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import * as sc from "../../src/api/index.js";

const { nn } = sc;

function maxRelDiff(a: sc.Tensor, b: sc.Tensor): number {
  assert.deepEqual(a.shape, b.shape);
  const x = a.dataSync();
  const y = b.dataSync();
  let worst = 0;
  for (let i = 0; i < x.length; i++) worst = Math.max(worst, Math.abs(x[i]! - y[i]!) / (1e-6 + Math.abs(y[i]!)));
  return worst;
}

/** The line of this file holding `text` (what errors must point at). */
const lineOf = (text: string) => readFileSync(fileURLToPath(import.meta.url), "utf8").split("\n").findIndex((l) => l.includes(text) && !l.includes("lineOf")) + 1;

const seq = (n: number, shape: number[], dtype: sc.DType = "float32") => sc.tensor(Array.from({ length: n }, (_, i) => Math.sin(i + 1)), dtype, shape);

test("a model declares its IR version and opset, names inputs after parameters or specs, and keeps null dims symbolic", async () => {
  const f = sc.stage((x: sc.Tensor, y: sc.Tensor) => sc.tanh(sc.matmul(x, y)));
  const bytes = sc.onnx.exportFunction(f, sc.spec([null, 3], "float32", "features"), sc.spec([3, 2]));
  const m = sc.onnx.decode("ModelProto", bytes) as any;
  assert.equal(Number(m.ir_version), sc.onnx.EXPORT_IR_VERSION);
  assert.equal(Number(m.opset_import[0].version), sc.onnx.EXPORT_OPSET);
  assert.ok(sc.onnx.EXPORT_OPSET >= 18);
  assert.deepEqual(m.graph.input.map((i: any) => i.name), ["features", "arg1"]);
  const dims = m.graph.input[0].type.tensor_type.shape.dim;
  assert.equal(dims[0].dim_param, "features_dim0");
  assert.equal(Number(dims[1].dim_value), 3);
  // the symbolic batch takes any size in onnxruntime
  for (const n of [1, 4]) {
    const x = seq(n * 3, [n, 3]);
    const y = seq(6, [3, 2]);
    const got = await sc.onnx.runOnnxRuntime(bytes, { features: x, arg1: y });
    assert.ok(maxRelDiff(got.output_0!, f(x, y)) < 1e-5);
  }
  const named = sc.onnx.exportModel(f, [sc.spec([2, 3]), sc.spec([3, 2])], { inputNames: ["a", "b"], outputNames: ["out"] });
  assert.deepEqual([named.inputNames, named.outputNames], [["a", "b"], ["out"]]);
  assert.throws(() => sc.onnx.exportModel(f, [sc.spec([2, 3]), sc.spec([3, 2])], { inputNames: ["a"] }), sc.ValueError);
  assert.throws(() => sc.onnx.exportModel(f, [sc.spec([2, 3]), sc.spec([3, 2])], { inputNmes: ["a"] } as never), sc.ValueError);
});

test("a concrete function exports too, and a model's variables are initializers named by their module path", async () => {
  const model = new nn.Sequential(new nn.Linear(4, { seed: 1 }), new nn.ReLU(), new nn.Linear(2, { seed: 2 }));
  const f = sc.stage((x: sc.Tensor) => model.call(x));
  const x = seq(6, [2, 3]);
  const cf = f.concrete(x);
  const m = sc.onnx.exportModel(cf, [], { model });
  assert.deepEqual([...m.variableNames.values()], ["layers.0.kernel", "layers.0.bias", "layers.2.kernel", "layers.2.bias"]);
  const proto = sc.onnx.decode("ModelProto", m.bytes) as any;
  assert.deepEqual(proto.graph.initializer.map((t: any) => t.name).sort(), ["layers.0.bias", "layers.0.kernel", "layers.2.bias", "layers.2.kernel"]);
  const got = await sc.onnx.runOnnxRuntime(m.bytes, { arg0: x });
  assert.ok(maxRelDiff(got.output_0!, f(x)) < 1e-5);
  // (without the model: the variables' own names, made unique)
  const plain = sc.onnx.exportModel(cf, []);
  assert.deepEqual([...plain.variableNames.values()], ["Linear/kernel", "Linear/bias", "Linear/kernel_1", "Linear/bias_1"]);
});

test("an op without an ONNX form is refused with OnnxUnsupportedError naming the op and the user's line", () => {
  const f = sc.stage((x: sc.Tensor) => {
    const y = x.mul(2);
    sc.print("y is", y); // (the line the error names)
    return y;
  });
  assert.throws(
    () => sc.onnx.exportFunction(f, sc.spec([2])),
    (e: unknown) => e instanceof sc.onnx.OnnxUnsupportedError && /cannot export op print/.test(e.message) && e.location?.file.endsWith("export.test.ts") === true && e.location.line === lineOf('sc.print("y is", y)'),
  );
  const r = sc.stage((x: sc.Tensor) => sc.bitcast(x, "int32"));
  assert.throws(() => sc.onnx.exportFunction(r, sc.spec([2])), /cannot export op bitcast: ONNX has no bit-reinterpreting cast/);
});

test("a staged recursive function is refused: the error says ONNX has no recursion and where", () => {
  const fact: sc.StagedFunction<[sc.Tensor], sc.Tensor> = sc.stage(
    (n: sc.Tensor): sc.Tensor => sc.cond(n.lessEqual(1), () => sc.onesLike(n), () => n.mul(fact(n.sub(1)))),
    { name: "fact" },
  );
  assert.throws(
    () => sc.onnx.exportFunction(fact, sc.spec([], "float32")),
    (e: unknown) => e instanceof sc.onnx.OnnxUnsupportedError && /staged recursive function fact: ONNX has no recursion/.test(e.message) && e.location?.file.endsWith("export.test.ts") === true,
  );
});

test("a GRU over a sequence (a Loop with the time axis symbolic) runs in onnxruntime with our outputs", async () => {
  const model = new nn.Sequential(new nn.GRU(4, { seed: 1, returnSequences: true }), new nn.Linear(3, { seed: 2 }));
  const f = sc.stage((x: sc.Tensor) => model.call(x));
  const m = sc.onnx.exportModel(f, [sc.spec([2, null, 3], "float32", "tokens")], { model });
  for (const T of [1, 5, 9]) {
    const x = seq(2 * T * 3, [2, T, 3]);
    const got = await sc.onnx.runOnnxRuntime(m.bytes, { tokens: x });
    assert.ok(maxRelDiff(got[m.outputNames[0]!]!, f(x)) < 1e-4, `T = ${T}`);
  }
});

test("a whole training step (forward, graph-AD backward through a GRU loop, Adam) gives the same updated weights in onnxruntime", async () => {
  const model = new nn.Sequential(new nn.GRU(4, { seed: 3, returnSequences: false }), new nn.Linear(3, { seed: 4 }));
  const x = seq(2 * 5 * 3, [2, 5, 3]);
  const y = sc.tensor([0, 2], "int32");
  model.call(x);
  const opt = new sc.optim.Adam({ learningRate: 0.01 });
  const step = sc.stage((x: sc.Tensor, y: sc.Tensor) => opt.minimize(() => nn.softmaxCrossEntropy(model.call(x), y), () => model.parameters()));
  for (let round = 0; round < 2; round++) {
    // (exported from the weights and optimizer state as they are now: round 1 starts after a step)
    const m = sc.onnx.exportModel(step, [x, y], { model });
    const names = m.updatedVariables.map((u) => u.output);
    for (const p of ["layers.0.cell.kernel", "layers.0.cell.recurrentKernel", "layers.1.kernel", "layers.1.bias"]) assert.ok(names.includes(`${p}.updated`), `${p} is updated`);
    const got = await sc.onnx.runOnnxRuntime(m.bytes, { arg0: x, arg1: y });
    const loss = step(x, y);
    assert.ok(maxRelDiff(got[m.outputNames[0]!]!, loss) < 1e-5);
    for (const u of m.updatedVariables) assert.ok(maxRelDiff(got[u.output]!, u.variable.storedValue) < 1e-4, `${u.output}`);
  }
});

test("a training step whose model calls a staged function exports (its gradient's residual record is the names it keeps): the same loss and weights", async () => {
  // (the gradient of a staged call packs what its backward keeps into one record; export inlines
  // both halves, so the record is only the names of those values)
  const W = new sc.Variable(seq(12, [4, 3]), { name: "W" });
  const layer = sc.stage((x: sc.Tensor) => sc.tanh(sc.matmul(x, W)));
  const x = seq(8, [2, 4]);
  const y = sc.tensor([0, 2], "int32");
  const opt = new sc.optim.SGD({ learningRate: 0.1 });
  const step = sc.stage((x: sc.Tensor, y: sc.Tensor) => opt.minimize(() => nn.softmaxCrossEntropy(layer(x), y), () => [W]));
  for (let round = 0; round < 2; round++) {
    const m = sc.onnx.exportModel(step, [x, y]);
    const got = await sc.onnx.runOnnxRuntime(m.bytes, { arg0: x, arg1: y });
    const loss = step(x, y);
    assert.ok(maxRelDiff(got[m.outputNames[0]!]!, loss) < 1e-5);
    const w = m.updatedVariables.find((u) => u.variable === W)!;
    assert.ok(maxRelDiff(got[w.output]!, W.storedValue) < 1e-5, `round ${round}: W`);
  }
  // second order through the staged call, and the call in an unrolled loop
  const g = sc.stage((v: sc.Tensor) => sc.tanh(v.mul(v)));
  const second = sc.stage((v: sc.Tensor) => sc.grad((u: sc.Tensor) => sc.sum(sc.grad((w: sc.Tensor) => sc.sum(g(w)))(u)))(v));
  const thrice = sc.stage((v: sc.Tensor) =>
    sc.grad((u: sc.Tensor) => {
      let a = u;
      for (let i = 0; i < 3; i++) a = g(a);
      return sc.sum(a);
    })(v),
  );
  for (const f of [second, thrice]) {
    const r = await sc.onnx.runOnnxRuntime(sc.onnx.exportFunction(f, x), { arg0: x });
    assert.ok(maxRelDiff(Object.values(r)[0]!, f(x)) < 1e-4);
  }
});

test("a staged call's residual record that would leave a branch is refused, naming the user's line", () => {
  const g = sc.stage((v: sc.Tensor) => sc.tanh(v.mul(v)));
  const f = sc.stage((v: sc.Tensor) => sc.grad((u: sc.Tensor) => sc.sum(sc.cond(sc.greater(sc.sum(u), 0), () => g(u), () => u.mul(2))))(v)); // the cond line
  assert.throws(
    () => sc.onnx.exportFunction(f, seq(4, [4])),
    (e: Error) => e instanceof sc.onnx.OnnxUnsupportedError && /residual record/.test(e.message) && e.message.includes(`export.test.ts:${lineOf("// the cond line")}:`),
  );
});

test("an in-graph training loop (a staged for over steps) exports as one Loop that computes the same weights", async () => {
  const model = new nn.Sequential(new nn.Linear(8, { seed: 5 }), new nn.ReLU(), new nn.Linear(3, { seed: 6 }));
  const x = seq(6 * 4, [6, 4]);
  const y = sc.tensor([0, 2, 1, 1, 0, 2], "int32");
  model.call(x);
  const opt = new sc.optim.SGD({ learningRate: 0.1 });
  function train(x: sc.Tensor, y: sc.Tensor, steps: sc.Tensor) {
    let loss = sc.scalar(0);
    for (let i: any = sc.scalar(0, "int32"); i < steps; i = i + 1) {
      loss = opt.minimize(() => nn.softmaxCrossEntropy(model.call(x), y), () => model.parameters());
    }
    return loss;
  }
  const st = sc.stage(train);
  const steps = sc.scalar(7, "int32");
  const m = sc.onnx.exportModel(st, [x, y, steps], { model });
  const proto = sc.onnx.decode("ModelProto", m.bytes) as any;
  assert.deepEqual(proto.graph.node.filter((n: any) => n.op_type === "Loop").length, 1);
  const got = await sc.onnx.runOnnxRuntime(m.bytes, { arg0: x, arg1: y, arg2: steps });
  const before = model.parameters().map((p) => p.storedValue);
  const loss = st(x, y, steps);
  assert.ok(maxRelDiff(got[m.outputNames[0]!]!, loss) < 1e-4);
  assert.equal(m.updatedVariables.length >= 4, true);
  for (const u of m.updatedVariables) assert.ok(maxRelDiff(got[u.output]!, u.variable.storedValue) < 1e-4, u.output);
  // (the weights did move: the loop trained)
  assert.ok(model.parameters().some((p, i) => maxRelDiff(p.storedValue, before[i]!) > 1e-3));
});

test("staged and concrete functions have toOnnx()", async () => {
  const f = sc.stage((x: sc.Tensor) => sc.relu(x).sum());
  const x = sc.tensor([-1, 2, 3], "float32");
  for (const bytes of [f.toOnnx(sc.spec([null], "float32", "x")), f.concrete(x).toOnnx()]) {
    const m = sc.onnx.decode("ModelProto", bytes) as any;
    const name = m.graph.input[0].name as string;
    const got = await sc.onnx.runOnnxRuntime(bytes, { [name]: x });
    assert.equal(got.output_0!.dataSync()[0], 5);
  }
});

test("relu exports as ONNX Relu (float32 and float64; its expression for integers) with the same NaN and -0 results in onnxruntime", async () => {
  const f = sc.stage((x: sc.Tensor) => sc.relu(x));
  for (const dtype of ["float32", "float64", "int32", "int8"] as const) {
    const vals = dtype.startsWith("float") ? [NaN, -0, 0, -1, 2, Infinity, -Infinity] : [-128, -1, 0, 1, 127];
    const x = sc.tensor(vals, dtype);
    const bytes = f.toOnnx(x);
    const ops = (sc.onnx.decode("ModelProto", bytes) as any).graph.node.map((n: any) => n.op_type as string);
    assert.equal(ops.includes("Relu"), dtype.startsWith("float"), `${dtype}: ${ops.join(", ")}`);
    const got = await sc.onnx.runOnnxRuntime(bytes, { arg0: x });
    const want = f(x).dataSync();
    // (Object.is: NaN must stay NaN and -0 stay -0)
    got.output_0!.dataSync().forEach((g, i) => assert.ok(Object.is(g, want[i]), `${dtype} relu(${vals[i]}): ${g} in onnxruntime, ${want[i]} ours`));
  }
});

test("atan2 keeps Math.atan2's signed zeros and infinities in onnxruntime (ONNX has no Atan2)", async () => {
  const f = sc.stage((y: sc.Tensor, x: sc.Tensor) => sc.atan2(y, x));
  const vals = [-0, 0, 1, -1, -2.5, NaN, Infinity, -Infinity];
  const ys = vals.flatMap((a) => vals.map(() => a));
  const xs = vals.flatMap(() => vals);
  for (const dtype of ["float64", "float32"] as const) {
    const y = sc.tensor(ys, dtype);
    const x = sc.tensor(xs, dtype);
    const got = (await sc.onnx.runOnnxRuntime(f.toOnnx(y, x), { arg0: y, arg1: x })).output_0!.dataSync();
    const want = f(y, x).dataSync();
    want.forEach((w, i) => assert.ok(Object.is(got[i], w) || Math.abs(got[i]! - w) < 1e-6, `${dtype} atan2(${ys[i]}, ${xs[i]}): ${got[i]} in onnxruntime, ${w} ours`));
  }
});

test("integer results that wrap (2147483646 + 2147483646 in int32, 250 + 250 in uint8, ...) wrap in onnxruntime as ours do", async () => {
  const f = sc.stage((x: sc.Tensor) => x.add(x).sub(3));
  const cases: [sc.DType, number[]][] = [
    ["int32", [2147483646, -2147483647, 1073741824, 5, -5]],
    ["uint32", [4000000000, 1, 2147483648]],
    ["int16", [30000, -30000, 7]],
    ["uint16", [65000, 1, 40000]],
    ["int8", [100, -100, 64, -64]],
    ["uint8", [250, 1, 128]],
  ];
  for (const [dtype, vals] of cases) {
    const x = sc.tensor(vals, dtype);
    const got = (await sc.onnx.runOnnxRuntime(f.toOnnx(x), { arg0: x })).output_0!.dataSync();
    assert.deepEqual([...got], [...f(x).dataSync()], dtype);
  }
});
