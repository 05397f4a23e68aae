/**
 * The losses and metrics of issue 25, each against values computed by hand here (plain JS, not
 * the code under test), staged = eager, and each loss's gradient eager tape = graph AD =
 * float64 central differences.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as sc from "../../src/api/index.js";

const nn = sc.nn;
const close = (a: number, b: number, msg: string, tol = 1e-6) => assert.ok(Math.abs(a - b) <= tol * (1 + Math.abs(b)), `${msg}: ${a} vs ${b}`);
const item = (t: sc.Tensor) => t.item() as number;
const sp = (x: number) => Math.log(1 + Math.exp(x));

const P = [[0.5, -1, 2], [0, 1.5, -0.5]];
const T = [[1, 0, 0.5], [0, 1, 1]];
const lsm = (row: number[]) => { const m = Math.log(row.reduce((a, v) => a + Math.exp(v), 0)); return row.map((v) => v - m); };
const LP = P.map(lsm);
const Q = LP.map((r) => r.map(Math.exp));
const TQ = [[0.2, 0.3, 0.5], [0, 1, 0]];
const cos = (a: number[], b: number[]) => a.reduce((s, v, i) => s + v * b[i]!, 0) / Math.hypot(...a) / Math.hypot(...b);
void Q;

type Case = { name: string; f: (p: sc.Tensor, t: sc.Tensor, o?: any) => sc.Tensor; p: number[][]; t: sc.Tensor; expect: number; opts?: object };
const f64 = (v: number[][]) => sc.tensor(v, "float64");
const cases: Case[] = [
  { name: "l1", f: nn.l1, p: P, t: f64(T), expect: P.flat().reduce((a, v, i) => a + Math.abs(v - T.flat()[i]!), 0) / 6 },
  { name: "mae", f: nn.mae, p: P, t: f64(T), expect: P.flat().reduce((a, v, i) => a + Math.abs(v - T.flat()[i]!), 0) / 6 },
  { name: "nll", f: nn.nll, p: LP, t: sc.tensor([2, 0], "int32"), expect: -(LP[0]![2]! + LP[1]![0]!) / 2 },
  { name: "klDivergence", f: nn.klDivergence, p: LP, t: f64(TQ), expect: TQ.map((r, i) => r.reduce((a, t, j) => a + (t > 0 ? t * (Math.log(t) - LP[i]![j]!) : 0), 0)).reduce((a, v) => a + v, 0) / 2 },
  { name: "cosineSimilarity", f: nn.cosineSimilarity, p: P, t: f64(T), expect: -(cos(P[0]!, T[0]!) + cos(P[1]!, T[1]!)) / 2 },
  { name: "binaryCrossEntropyWithLogits posWeight 3", f: nn.binaryCrossEntropyWithLogits, p: P, t: f64(T), opts: { posWeight: 3 }, expect: P.flat().reduce((a, x, i) => { const z = T.flat()[i]!; return a + 3 * z * sp(-x) + (1 - z) * sp(x); }, 0) / 6 },
  // (P holds a logit 0, where the old max/abs form's gradient was 1 - z instead of 1/2 - z)
  { name: "binaryCrossEntropyWithLogits", f: nn.binaryCrossEntropyWithLogits, p: P, t: f64(T), expect: P.flat().reduce((a, x, i) => { const z = T.flat()[i]!; return a + z * sp(-x) + (1 - z) * sp(x); }, 0) / 6 },
  { name: "huber delta 0.7", f: nn.huber, p: P, t: f64(T), opts: { delta: 0.7 }, expect: P.flat().reduce((a, x, i) => { const e = Math.abs(x - T.flat()[i]!); return a + (e < 0.7 ? 0.5 * e * e : 0.7 * (e - 0.35)); }, 0) / 6 },
];

for (const c of cases) {
  test(`${c.name}: by hand, sum = mean * count, staged (unknown batch) = eager, tape = graph AD = float64 FD`, () => {
    const p = f64(c.p);
    const o = c.opts ?? {};
    close(item(c.f(p, c.t, o)), c.expect, `${c.name} mean`);
    const none = c.f(p, c.t, { ...o, reduction: "none" });
    close(item(c.f(p, c.t, { ...o, reduction: "sum" })), c.expect * none.size, `${c.name} sum`);
    const staged = sc.stage((a: sc.Tensor, b: sc.Tensor) => c.f(a, b, o), { inputSignature: [sc.spec([null, 3], "float64"), sc.spec(c.t.dtype === "int32" ? [null] : [null, 3], c.t.dtype)] });
    close(item(staged(p, c.t)), c.expect, `${c.name} staged`, 1e-12);
    const lossOf = (x: sc.Tensor) => c.f(x, c.t, o);
    const tape = new sc.GradientTape();
    const loss = tape.record(() => { tape.watch(p); return lossOf(p); });
    const eager = (tape.gradient(loss, p) as sc.Tensor).dataSync();
    const stagedLoss = sc.stage(lossOf);
    const tape2 = new sc.GradientTape();
    const loss2 = tape2.record(() => { tape2.watch(p); return stagedLoss(p); });
    const graph = (tape2.gradient(loss2, p) as sc.Tensor).dataSync();
    const flat = c.p.flat();
    for (let i = 0; i < flat.length; i++) {
      const at = (d: number) => item(lossOf(sc.tensor(flat.map((v, j) => (j === i ? v + d : v)), "float64", [2, 3])));
      const fd = (at(1e-6) - at(-1e-6)) / 2e-6;
      close(eager[i]!, fd, `${c.name} eager d/dp[${i}]`, 1e-6);
      close(graph[i]!, eager[i]!, `${c.name} graph AD d/dp[${i}]`, 1e-10);
    }
  });
}

test("losses refuse labels of the wrong shape with a ShapeError, and bad reductions with a ValueError", () => {
  const p = sc.zeros([2, 3]);
  assert.throws(() => nn.l1(p, sc.zeros([2, 1])), sc.ShapeError);
  assert.throws(() => nn.klDivergence(p, sc.zeros([3])), sc.ShapeError);
  assert.throws(() => nn.cosineSimilarity(p, sc.zeros([2, 1])), sc.ShapeError);
  assert.throws(() => nn.nll(p, sc.tensor([[0], [1]], "int32")), sc.ShapeError);
  assert.throws(() => nn.nll(p, sc.zeros([2, 3])), sc.ShapeError);
  assert.throws(() => nn.binaryCrossEntropyWithLogits(p, sc.zeros([2, 3]), { posWeight: sc.ones([2]) }), sc.ShapeError);
  assert.throws(() => nn.l1(p, p, { reduction: "avg" as any }), (e: Error) => e instanceof sc.ValueError && e.message.startsWith("l1: reduction"));
});

test("metrics by hand: topKAccuracy, precision/recall/F1 (binary, macro, counted over batches), MAE/MSE; staged = eager", () => {
  const logits = sc.tensor([[0.1, 0.5, 0.4], [0.9, 0.04, 0.06], [0.2, 0.3, 0.5], [0.3, 0.3, 0.4]]);
  const labels = sc.tensor([2, 1, 2, 0], "int32");
  // by hand: ranks of the label's logit: row0 2nd, row1 3rd (two larger), row2 1st, row3 tied 2nd
  close(item(nn.topKAccuracy(logits, labels, { k: 1 })), 1 / 4, "top1");
  close(item(nn.topKAccuracy(logits, labels, { k: 2 })), 3 / 4, "top2");
  const stagedTop = sc.stage((a: sc.Tensor, b: sc.Tensor) => nn.topKAccuracy(a, b, { k: 2 }), { inputSignature: [sc.spec([null, 3]), sc.spec([null], "int32")] });
  close(item(stagedTop(logits, labels)), 3 / 4, "top2 staged");
  const probs = sc.tensor([0.9, 0.2, 0.7, 0.4, 0.6, 0.1]);
  const truth = sc.tensor([1, 1, 0, 0, 1, 0]);
  // predicted positive: 0, 2, 4 -> tp 2 (0, 4), fp 1 (2), fn 1 (1)
  close(item(nn.precision(probs, truth)), 2 / 3, "precision");
  close(item(nn.recall(probs, truth)), 2 / 3, "recall");
  close(item(nn.f1(probs, truth)), 2 / 3, "f1");
  // threshold 0.65: positives 0.9 (label 1) and 0.7 (label 0)
  close(item(nn.precision(probs, truth, { threshold: 0.65 })), 0.5, "precision at 0.65");
  // macro, argmax predictions [1, 0, 2, 2] against [2, 1, 2, 0]: class0 tp0 fp1 fn1, class1 tp0 fp1 fn1, class2 tp1 fp1 fn1
  close(item(nn.precision(logits, labels, { average: "macro" })), (0 + 0 + 0.5) / 3, "macro precision");
  close(item(nn.recall(logits, labels, { average: "macro" })), (0 + 0 + 0.5) / 3, "macro recall");
  close(item(nn.f1(logits, labels, { average: "macro" })), (0 + 0 + 2 / 4) / 3, "macro f1");
  // counted over two batches equals one big batch (not the mean of the batch ratios)
  const m = new nn.Precision();
  const c1 = m.counts(sc.tensor([0.9, 0.2, 0.7]), sc.tensor([1, 1, 0]));
  const c2 = m.counts(sc.tensor([0.4, 0.6, 0.1]), sc.tensor([0, 1, 0]));
  close(m.fromCounts(sc.add(c1, c2)), 2 / 3, "Precision over batches");
  close(item(nn.meanAbsoluteError(sc.tensor([1, 2, 4]), sc.tensor([2, 2, 1]))), 4 / 3, "mae");
  close(item(nn.meanSquaredError(sc.tensor([1, 2, 4]), sc.tensor([2, 2, 1]))), 10 / 3, "mse");
  assert.throws(() => nn.precision(probs, sc.zeros([6, 1])), sc.ShapeError);
  assert.throws(() => nn.topKAccuracy(logits, sc.tensor([[0], [1], [2], [0]], "int32")), sc.ShapeError);
  // (the options walk's scan does not see constructors inherited from a base class, so here)
  for (const [name, C] of [["Precision", nn.Precision], ["Recall", nn.Recall], ["F1", nn.F1]] as const) {
    assert.throws(() => new C({ treshold: 0.5 } as any), (e: Error) => e instanceof sc.ValueError && e.message.startsWith(`${name}: unknown option "treshold"`));
  }
  assert.throws(() => nn.f1(logits, labels, { average: "micro" as any }), (e: Error) => e instanceof sc.ValueError && e.message.startsWith("f1: average"));
});
