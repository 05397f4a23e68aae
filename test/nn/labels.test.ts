/**
 * The label shapes every loss and metric accepts (src/nn/labels.ts, one check for all): class
 * indices [N] (int) or one-hot/probabilities [N, C] (float) against logits [N, C]; targets of the
 * predictions' shape for the others. Good shapes give the hand-computed values; every other
 * shape ([N, 1] indices above all, which broadcasting turned into an N x N comparison) is an
 * error naming the function and both shapes.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as sc from "../../src/api/index.js";

const { nn } = sc;
const close = (got: number, want: number, what: string) => assert.ok(Math.abs(got - want) < 1e-5, `${what}: got ${got}, want ${want}`);
const item = (t: sc.Tensor) => t.item() as number;

// logits of 2 rows, 3 classes; the argmax of row 0 is class 0, of row 1 class 2
const logits = sc.tensor([[2, 1, 0], [0, 1, 3]]);
const lse = (r: number[]) => Math.log(r.reduce((a, v) => a + Math.exp(v), 0));
const LSE = [lse([2, 1, 0]), lse([0, 1, 3])];
const indices = sc.tensor([0, 2], "int32");
const oneHot = sc.tensor([[1, 0, 0], [0, 0, 1]]);

test("accuracy: indices [N] and one-hot [N, C] give the right fraction; [N, 1] is refused (it gave 0.5 for 1.0)", () => {
  close(item(nn.accuracy(logits, indices)), 1, "indices, both right");
  close(item(nn.accuracy(logits, sc.tensor([0, 1], "int32"))), 0.5, "indices, one right");
  close(item(nn.accuracy(logits, sc.tensor([0, 2], "int64"))), 1, "int64 indices");
  close(item(nn.accuracy(logits, oneHot)), 1, "one-hot");
  close(item(nn.accuracy(logits, sc.tensor([[0.2, 0.7, 0.1], [0.1, 0.1, 0.8]]))), 0.5, "probabilities: argmax 1 and 2");
  assert.throws(() => nn.accuracy(logits, sc.tensor([[0], [2]], "int32")), (e: Error) => e instanceof sc.ShapeError && /^accuracy: labels of shape \[2, 1\] \(int32\) do not fit logits of shape \[2, 3\]/.test(e.message) && e.message.includes("class indices of shape [2]"));
});

/** Every loss and metric taking class labels, with its value on (logits, row-0-class-0, row-1-class-2) labels. */
const CLASS_FUNCTIONS: [string, (l: sc.Tensor, y: sc.Tensor) => sc.Tensor, number][] = [
  ["accuracy", nn.accuracy, 1],
  ["softmaxCrossEntropy", nn.softmaxCrossEntropy, ((LSE[0]! - 2) + (LSE[1]! - 3)) / 2],
];

test("class-label functions: the same values from indices and one-hot labels, and one error for every bad shape", () => {
  for (const [name, f, want] of CLASS_FUNCTIONS) {
    close(item(f(logits, indices)), want, `${name} with indices`);
    close(item(f(logits, oneHot)), want, `${name} with one-hot labels`);
    const bad: [sc.Tensor, typeof sc.ShapeError | typeof sc.DtypeError][] = [
      [sc.tensor([[0], [2]], "int32"), sc.ShapeError], // [N, 1] indices
      [sc.tensor([0, 2, 1], "int32"), sc.ShapeError], // wrong N
      [sc.tensor([[1, 0], [0, 1]]), sc.ShapeError], // one-hot of the wrong class count
      [sc.tensor([[[1, 0, 0]], [[0, 0, 1]]]), sc.ShapeError], // a rank too many
      [sc.tensor([0, 2]), sc.DtypeError], // float indices
      [sc.tensor([[true, false, false], [false, false, true]], "bool"), sc.DtypeError],
    ];
    for (const [labels, Err] of bad) {
      assert.throws(
        () => f(logits, labels),
        (e: Error) => e instanceof Err && e.message.startsWith(`${name}: `) && e.message.includes(`[${labels.shape.join(", ")}]`) && e.message.includes("[2, 3]"),
        `${name} with labels [${labels.shape.join(", ")}] ${labels.dtype}`,
      );
    }
  }
});

test("softmaxCrossEntropy: label smoothing, reductions and soft labels by hand", () => {
  const perRow = [LSE[0]! - 2, LSE[1]! - 3];
  assert.deepEqual((nn.softmaxCrossEntropy(logits, indices, { reduction: "none" }).arraySync() as number[]).map((v) => Math.round(v * 1e5)), perRow.map((v) => Math.round(v * 1e5)));
  close(item(nn.softmaxCrossEntropy(logits, indices, { reduction: "sum" })), perRow[0]! + perRow[1]!, "sum");
  // smoothing 0.3 over 3 classes: targets 0.8 / 0.1 / 0.1
  const smooth = (r: number[], l: number, k: number) => r.reduce((a, v, j) => a + (j === k ? 0.8 : 0.1) * (l - v), 0);
  close(item(nn.softmaxCrossEntropy(logits, indices, { labelSmoothing: 0.3 })), (smooth([2, 1, 0], LSE[0]!, 0) + smooth([0, 1, 3], LSE[1]!, 2)) / 2, "smoothed");
  const soft = sc.tensor([[0.5, 0.5, 0], [0, 0.25, 0.75]]);
  close(item(nn.softmaxCrossEntropy(logits, soft)), (0.5 * (LSE[0]! - 2) + 0.5 * (LSE[0]! - 1) + 0.25 * (LSE[1]! - 1) + 0.75 * (LSE[1]! - 3)) / 2, "soft labels");
  assert.throws(() => nn.softmaxCrossEntropy(logits, indices, { reduction: "avg" as any }), (e: Error) => e instanceof sc.ValueError && /^softmaxCrossEntropy: reduction must be one of "mean", "sum", "none", got the string "avg"/.test(e.message));
});

/** Every loss taking targets of the predictions' shape, with its hand-computed mean value. */
const p = sc.tensor([[0.5, -1], [2, 0]]);
const z = sc.tensor([[1, 0], [0.5, 0]]);
const e = [0.5, 1, 1.5, 0]; // |p - z|
const bce = (x: number, t: number) => Math.max(x, 0) - x * t + Math.log1p(Math.exp(-Math.abs(x)));
const SAME_SHAPE: [string, (a: sc.Tensor, b: sc.Tensor) => sc.Tensor, number][] = [
  ["mse", nn.mse, e.reduce((a, v) => a + v * v, 0) / 4],
  ["huber", nn.huber, e.reduce((a, v) => a + (v < 1 ? 0.5 * v * v : v - 0.5), 0) / 4],
  ["binaryCrossEntropyWithLogits", nn.binaryCrossEntropyWithLogits, (bce(0.5, 1) + bce(-1, 0) + bce(2, 0.5) + bce(0, 0)) / 4],
];

test("same-shape losses: hand-computed values, and every other target shape refused (no broadcasting)", () => {
  for (const [name, f, want] of SAME_SHAPE) {
    close(item(f(p, z)), want, name);
    for (const bad of [sc.tensor([1, 0]), sc.tensor([[1], [0]]), sc.tensor([[1, 0, 0], [0, 0, 0]]), sc.tensor([[[1, 0], [0.5, 0]]])]) {
      assert.throws(
        () => f(p, bad),
        (err: Error) => err instanceof sc.ShapeError && err.message.startsWith(`${name}: targets of shape [${bad.shape.join(", ")}] do not fit predictions of shape [2, 2]`),
        `${name} with targets [${bad.shape.join(", ")}]`,
      );
    }
  }
  close(item(nn.huber(p, z, { delta: 2 })), e.reduce((a, v) => a + 0.5 * v * v, 0) / 4, "huber delta 2: all quadratic");
});

test("inside a staged function, unknown batch sizes match and a wrong label shape is still refused", () => {
  const f = sc.stage((l: sc.Tensor, y: sc.Tensor) => nn.accuracy(l, y), { inputSignature: [sc.spec([null, 3]), sc.spec([null], "int32")], autograph: false });
  close(item(f(logits, indices) as sc.Tensor), 1, "staged accuracy");
  const g = sc.stage((l: sc.Tensor, y: sc.Tensor) => nn.softmaxCrossEntropy(l, y), { inputSignature: [sc.spec([null, 3]), sc.spec([null, 1], "int32")], autograph: false });
  assert.throws(() => g(logits, sc.tensor([[0], [2]], "int32")), (err: Error) => err instanceof sc.ShapeError && err.message.includes("softmaxCrossEntropy") && err.message.includes("[-1, 1]"));
});
