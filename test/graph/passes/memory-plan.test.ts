/**
 * planMemory (graph/passes/memory-plan.ts): buffers reused after their last use, in place where
 * safe, never over inputs, variables, constants or values that outlive the node.
 * Each pass runs on small staged functions, before and after in the printed text form, and the
 * result is run by the interpreter against the original on random inputs (bit for bit).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as sc from "../../../src/api/index.js";
import { type Value } from "../../../src/graph/ir.js";
import { cloneProgram, planMemory } from "../../../src/graph/passes/index.js";

function planOf(fn: (...xs: sc.Tensor[]) => unknown, args: sc.Tensor[]) {
  const cf = sc.stage(fn).concrete(...args);
  const { graph, library } = cloneProgram(cf.graph, cf.library);
  return { graph, library, plan: planMemory(graph) };
}

function bufferOfValue(plan: ReturnType<typeof planMemory>, v: Value): number | undefined {
  return plan.bufferOf.get(v.id);
}

test("planMemory: an elementwise chain runs in one buffer, updated in place", () => {
  const { graph, plan } = planOf((x: sc.Tensor) => x.exp().tanh().sin().cos().neg(), [sc.ones([2, 3])]);
  assert.equal(plan.buffers.length, 1);
  assert.deepEqual(plan.buffers, [{ dtype: "float32", size: 6 }]);
  // exp reads the graph input (not in place); tanh, sin, cos overwrite their input; neg is the output.
  assert.deepEqual(
    graph.nodes.filter((n) => plan.inPlace.has(n.id)).map((n) => n.op),
    ["tanh", "sin", "cos"],
  );
  assert.equal(bufferOfValue(plan, graph.outputs[0]!), undefined, "graph outputs are not planned");
  assert.equal(plan.plannedBytes, 24);
  assert.equal(plan.naiveBytes, 4 * 24);
});

test("planMemory: buffers are reused after their last use; views alias their source", () => {
  const w = sc.ones([4, 4]);
  const { graph, plan } = planOf(
    (x: sc.Tensor) => {
      const a = sc.matmul(x, w);
      const b = sc.matmul(a, w);
      const c = sc.matmul(b, w);
      const d = sc.matmul(c, w);
      return sc.matmul(d, w);
    },
    [sc.ones([4, 4])],
  );
  // a, b, c, d: a and b overlap (b is computed from a), c can take a's buffer, d b's.
  assert.equal(plan.buffers.length, 2);
  const [a, b, c, d] = graph.nodes.map((n) => n.outputs[0]!);
  assert.equal(bufferOfValue(plan, c!), bufferOfValue(plan, a!));
  assert.equal(bufferOfValue(plan, d!), bufferOfValue(plan, b!));
  assert.notEqual(bufferOfValue(plan, a!), bufferOfValue(plan, b!));
  assert.equal(plan.inPlace.size, 0, "matmul never runs in place");
  assert.equal(plan.plannedBytes, 2 * 64);
  assert.equal(plan.naiveBytes, 4 * 64);

  const v = planOf(
    (x: sc.Tensor) => {
      const e = x.exp();
      const r = sc.reshape(e, [6]); // shares e's storage, used at the end
      const t = x.tanh(); // cannot take e's buffer: r still needs it
      const u = t.sin();
      return sc.reshape(u, [6]).add(r).neg();
    },
    [sc.ones([2, 3])],
  );
  const [e, r, t, u, r2, sum] = v.graph.nodes.map((n) => n.outputs[0]!);
  assert.equal(bufferOfValue(v.plan, r!), bufferOfValue(v.plan, e!));
  assert.notEqual(bufferOfValue(v.plan, t!), bufferOfValue(v.plan, e!));
  assert.equal(bufferOfValue(v.plan, u!), bufferOfValue(v.plan, t!), "sin runs in place on tanh's buffer");
  assert.equal(bufferOfValue(v.plan, r2!), bufferOfValue(v.plan, u!));
  assert.ok([bufferOfValue(v.plan, e!), bufferOfValue(v.plan, u!)].includes(bufferOfValue(v.plan, sum!)));
  assert.equal(v.plan.buffers.length, 2);
});

test("planMemory never writes over graph inputs, variables, constants or values that outlive the node", () => {
  const w = sc.variable(sc.ones([3]), { name: "wm" });
  const { graph, plan } = planOf(
    (x: sc.Tensor) => {
      const a = x.add(w); // x is an input, w's read is the variable's storage
      const k = sc.full([3], 2).add(a); // the fill is a constant: not planned
      const b = a.mul(k); // a still used below: not in place over a
      return b.add(a);
    },
    [sc.ones([3])],
  );
  const byOp = (op: string) => graph.nodes.filter((n) => n.op === op);
  assert.ok(!plan.inPlace.has(byOp("add")[0]!.id));
  assert.equal(bufferOfValue(plan, byOp("fill")[0]!.outputs[0]!), undefined);
  assert.equal(bufferOfValue(plan, byOp("readVariable")[0]!.outputs[0]!), undefined);
  assert.ok(!plan.inPlace.has(byOp("mul")[0]!.id) || bufferOfValue(plan, byOp("mul")[0]!.outputs[0]!) !== bufferOfValue(plan, byOp("add")[0]!.outputs[0]!));
  for (const v of graph.inputs) assert.equal(bufferOfValue(plan, v), undefined);
});

test("planMemory keeps operands of control flow alive as long as its outputs, and never plans assigned values", () => {
  const w = sc.variable(sc.zeros([3]), { name: "wp" });
  const { graph, plan } = planOf(
    (x: sc.Tensor) => {
      const a = x.exp();
      const c = sc.cond(sc.sum(x).greater(0), () => a.neg(), () => a) as sc.Tensor; // else: c is a's storage
      const b = x.sin().cos(); // defined while c (maybe a) is alive
      const d = c.add(b);
      w.assign(x.tanh());
      return d.mul(d);
    },
    [sc.ones([3])],
  );
  const out = (op: string) => graph.nodes.find((n) => n.op === op)!.outputs[0]!;
  const bufA = bufferOfValue(plan, out("exp"));
  assert.notEqual(bufA, undefined);
  assert.notEqual(bufferOfValue(plan, out("sin")), bufA);
  assert.notEqual(bufferOfValue(plan, out("cos")), bufA);
  assert.equal(bufferOfValue(plan, out("tanh")), undefined, "the variable keeps it");
  assert.equal(bufferOfValue(plan, out("cond")), undefined);
});
