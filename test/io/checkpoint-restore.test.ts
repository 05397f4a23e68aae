/** Restore: strict by default, deferred on request, atomic, unambiguous names, deep and large graphs. */
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import * as sc from "../../src/api/index.js";

const { nn, io } = sc;
const dir = mkdtempSync(path.join(os.tmpdir(), "stagecraft-restore-"));
process.on("exit", () => rmSync(dir, { recursive: true, force: true }));
const x = sc.random.normal([5, 3], { seed: 1 });
const values = (vs: sc.Variable[]) => vs.map((v) => Array.from(v.dataSync()));
const isCheckpointError = (re: RegExp) => (e: unknown) => e instanceof io.CheckpointError && re.test(e.message);

/** A checkpoint file with the given object graph (and tensors), as a damaged or crafted file would be. */
function writeGraph(name: string, graph: unknown, tensors = new Map<string, sc.Tensor>()): string {
  const file = path.join(dir, name);
  writeFileSync(file, io.encodeSafetensors(tensors, { format: "stagecraft.checkpoint.v1", "stagecraft.object_graph": JSON.stringify(graph) }));
  return file;
}

test("restore is strict by default: another model's checkpoint is a CheckpointError listing what is missing and unexpected, and nothing is assigned", () => {
  const a = new nn.Sequential(new nn.Linear(4, { seed: 1 }), new nn.Linear(2, { seed: 2 }));
  a.call(x);
  const file = path.join(dir, "two-layers.safetensors");
  io.save({ model: a }, file);
  // Another model: one layer of the same shape, and a third layer the file does not have.
  const b = new nn.Sequential(new nn.Linear(4, { seed: 3 }), new nn.Linear(2, { seed: 4 }), new nn.Linear(3, { seed: 5 }));
  b.call(x);
  const before = values(b.variables());
  assert.throws(
    () => io.restore({ model: b }, file),
    isCheckpointError(/two-layers\.safetensors.*does not match.*nothing was restored: 2 variable\(s\) the checkpoint has no value for: model\/layers\.2\/kernel, model\/layers\.2\/bias.*\{ strict: false \}/),
  );
  assert.deepEqual(values(b.variables()), before, "no variable was assigned");
  assert.throws(() => io.restore({ net: a }, file), isCheckpointError(/4 saved value\(s\) with no variable to restore into: model\/layers\.0\/kernel.*4 variable\(s\) the checkpoint has no value for: net\/layers\.0\/kernel/));
  // strict: false restores what matches and tells the rest.
  const status = io.restore({ model: b }, file, { strict: false });
  assert.deepEqual(values(b.variables()).slice(0, 4), values(a.variables()));
  assert.deepEqual(values(b.variables()).slice(4), before.slice(4));
  assert.deepEqual(status.unmatchedVariables(), ["model/layers.2/kernel", "model/layers.2/bias"]);
  assert.throws(() => status.assertConsumed(), io.CheckpointError);
  // Options are checked.
  assert.throws(() => io.restore({ model: b }, file, { strict: "no" } as never), sc.ValueError);
  assert.throws(() => io.restore({ model: b }, file, { lenient: true } as never), /unknown option "lenient"/);
});

test("objects not made yet: an error that suggests { deferred: true } by default, filled when made with it", () => {
  const a = new nn.Sequential(new nn.Linear(4, { seed: 1 }), new nn.Linear(2, { seed: 2 }));
  a.call(x);
  const file = path.join(dir, "lazy.safetensors");
  io.save(a, file);
  const lazy = new nn.Sequential(new nn.Linear(4), new nn.Linear(2));
  assert.throws(() => io.restore(lazy, file), isCheckpointError(/4 saved value\(s\) with no variable to restore into: layers\.0\/kernel.*objects not made yet.*\{ deferred: true \}/));
  const status = io.restore(lazy, file, { deferred: true });
  assert.equal(status.parked.size, 4);
  lazy.call(x);
  status.assertConsumed();
  assert.deepEqual(values(lazy.variables()), values(a.variables()));
  // Deferred does not excuse a saved value no object can ever take (a key the root lacks).
  assert.throws(() => io.restore({ other: new nn.Linear(4) }, file, { deferred: true }), isCheckpointError(/4 saved value\(s\) with no variable/));
});

test("a failed restore assigns nothing: a shape mismatch in layer 1 leaves layer 0 as it was", () => {
  const a = new nn.Sequential(new nn.Linear(4, { seed: 1 }), new nn.Linear(2, { seed: 2 }));
  a.call(x);
  const file = path.join(dir, "atomic.safetensors");
  io.save(a, file);
  const b = new nn.Sequential(new nn.Linear(4, { seed: 3 }), new nn.Linear(5, { seed: 4 }));
  b.call(x);
  const before = values(b.variables());
  assert.throws(() => io.restore(b, file), isCheckpointError(/entry "layers\.1\/kernel": has shape \[4, 2\] but variable .* has shape \[4, 5\]/));
  assert.deepEqual(values(b.variables()), before);
  assert.throws(() => io.restore(b, file, { strict: false }), isCheckpointError(/layers\.1\/kernel/));
  assert.deepEqual(values(b.variables()), before, "also when not strict");
});

test("two objects that would get one name in a checkpoint are refused at save, naming both", () => {
  const v = (n: number) => sc.variable(sc.scalar(n));
  const file = path.join(dir, "ambiguous.safetensors");
  // An attribute "x/y" beside a child x holding y.
  class Holder extends nn.Module {
    forward() {}
  }
  const inner = new Holder();
  (inner as unknown as Record<string, unknown>).y = v(1);
  const m = new Holder();
  Object.assign(m, { x: inner, "x/y": v(2) });
  assert.throws(() => io.save(m, file), isCheckpointError(/\(root\)\["x\/y"\] and \(root\)\.x\.y would both be saved as "x\/y"/));
  // A dotted key beside the object it spells, and Map keys 1 and "1".
  assert.throws(() => io.save({ m: { "a.b": v(1), a: { b: v(2) } } }, file), isCheckpointError(/\(root\)\.m\["a\.b"\] and \(root\)\.m\.a\.b would both be named "m\.a\.b"/));
  assert.throws(() => io.save({ m: new Map<unknown, sc.Variable>([[1, v(1)], ["1", v(2)]]) }, file), isCheckpointError(/\(root\)\.m\.get\(1\) and \(root\)\.m\.get\("1"\) would both be named "m\.1"/));
  // A cyclic container is refused, not a stack overflow.
  const cyclic: unknown[] = [v(1)];
  cyclic.push(cyclic);
  assert.throws(() => io.save({ c: cyclic }, file), isCheckpointError(/\(root\)\.c\[1\] contains itself/));
  // A file whose graph is ambiguous (as the old writer made) is refused, not restored from one value twice.
  const twice = writeGraph("twice.safetensors", { nodes: [{ children: [{ name: "a", node: 1 }, { name: "a", node: 2 }] }, { children: [], tensor: "a" }, { children: [], tensor: "b" }] }, new Map([["a", sc.scalar(1)], ["b", sc.scalar(2)]]));
  assert.throws(() => io.restore({ a: v(0) }, twice), isCheckpointError(/two edges named "a"/));
  const shared = writeGraph("shared.safetensors", { nodes: [{ children: [{ name: "a", node: 1 }, { name: "b", node: 2 }] }, { children: [], tensor: "a" }, { children: [], tensor: "a" }] }, new Map([["a", sc.scalar(1)]]));
  assert.throws(() => io.restore({ a: v(0), b: v(0) }, shared), isCheckpointError(/nodes 1 and 2 of the object graph both name this tensor/));
  // Unambiguous neighbours still save and restore, each to its own value.
  const ok = path.join(dir, "unambiguous.safetensors");
  const src = { m: new Map<unknown, sc.Variable>([[1, v(1)], [2, v(2)]]), "a.c": v(3), a: { b: v(4) } };
  io.save(src, ok);
  const dst = { m: new Map<unknown, sc.Variable>([[1, v(0)], [2, v(0)]]), "a.c": v(0), a: { b: v(0) } };
  io.restore(dst, ok).assertConsumed();
  assert.deepEqual([dst.m.get(1)!.item(), dst.m.get(2)!.item(), dst["a.c"].item(), dst.a.b.item()], [1, 2, 3, 4]);
});

test("a checkpoint written by the format's first writer still restores (test/fixtures/checkpoints/v1-mlp)", () => {
  const file = path.resolve(import.meta.dirname, "../fixtures/checkpoints/v1-mlp.safetensors");
  const expected = JSON.parse(readFileSync(path.resolve(import.meta.dirname, "../fixtures/checkpoints/v1-mlp.expected.json"), "utf8")) as Record<string, number[]>;
  const model = new nn.Sequential(new nn.Linear(4), new nn.ReLU(), new nn.Linear(2));
  model.call(sc.zeros([1, 3]));
  const optimizer = new sc.optim.SGD({ momentum: 0.9 });
  optimizer.minimize(() => sc.sum(model.call(sc.zeros([1, 3]))), () => model.parameters());
  io.restore({ model, optimizer }, file).assertConsumed();
  const got: Record<string, number[]> = {};
  for (const [p, v] of model.namedVariables()) got[`model/${p.replace(/\.(kernel|bias)$/, "/$1")}`] = Array.from(v.dataSync());
  got["optimizer/iterations"] = [Number(optimizer.iterations.item())];
  assert.deepEqual(got, expected);
});

/** A chain of Trackables, each holding the next (the last holds a Variable). */
class Link extends io.Trackable {
  next: Link | undefined;
  v: sc.Variable | undefined;
  override trackedChildren(): Iterable<readonly [string, unknown]> {
    return this.next ? [["n", this.next]] : [["v", this.v]];
  }
}
const chain = (n: number, value: number) => {
  const head = new Link();
  let at = head;
  for (let i = 1; i < n; i++) at = at.next = new Link();
  at.v = sc.variable(sc.scalar(value));
  return { head, leaf: at };
};

test("object graphs far deeper than the call stack save and restore (a 12,000-link chain, 12,000-deep nested arrays)", () => {
  const file = path.join(dir, "deep.safetensors");
  const a = chain(12000, 7);
  io.save(a.head, file);
  const b = chain(12000, 0);
  io.restore(b.head, file).assertConsumed();
  assert.equal(b.leaf.v!.item(), 7);
  // Deferred edges under a deep saved chain (the owner lacks it) are walked without recursion too.
  const status = io.restore(new Link(), file, { deferred: true, strict: false });
  assert.equal(status.parked.size, 1);

  const nest = (value: number) => {
    let c: unknown = sc.variable(sc.scalar(value));
    for (let i = 0; i < 12000; i++) c = [c];
    return c;
  };
  const nested = path.join(dir, "nested.safetensors");
  io.save({ deep: nest(5) }, nested);
  const target = { deep: nest(0) };
  io.restore(target, nested).assertConsumed();
  let leaf: unknown = target.deep;
  while (Array.isArray(leaf)) leaf = leaf[0];
  assert.equal((leaf as sc.Variable).item(), 5);
});

test("a crafted graph of many edges to one large subtree restores in linear time (K edges x K nodes would be quadratic)", () => {
  const K = 30000;
  const nodes: { children: { name: string; node: number }[] }[] = [{ children: [] }, { children: [] }];
  for (let i = 0; i < K; i++) nodes[0]!.children.push({ name: `e${i}`, node: 1 });
  for (let i = 0; i < K; i++) {
    nodes[1]!.children.push({ name: `c${i}`, node: nodes.length });
    nodes.push({ children: [] });
  }
  const file = writeGraph("wide.safetensors", { nodes });
  const t0 = performance.now();
  const status = io.restore(new nn.Sequential(), file, { deferred: true });
  assert.equal(status.parked.size, 0);
  // (quadratically this is 9e8 steps: minutes; linear, well under a second)
  assert.ok(performance.now() - t0 < 3000, `restore took ${(performance.now() - t0).toFixed(0)} ms`);
});

test("a damaged object graph is a CheckpointError, also when it is JSON null or an array", () => {
  for (const graph of [null, [], 3, { nodes: [null] }, { nodes: [{ children: [null] }] }]) {
    const file = writeGraph("damaged.safetensors", graph);
    assert.throws(() => io.restore({}, file), isCheckpointError(/damaged\.safetensors: the object graph (is not a JSON object|has no nodes|is malformed)/), JSON.stringify(graph));
  }
});
