/**
 * Errors from inside nested subgraphs name the node path once: `(in ONNX Loop node "outer" >
 * Loop node "inner" > Add node "g")`, and a limit error's own node label is not prefixed again
 * by its op ("Loop: Loop node ..." before).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as sc from "../../src/api/index.js";

const { onnx } = sc;
const vi = onnx.makeValueInfo;

/** Two nested Loops of M iterations; the inner body adds x to a [3] constant (x is [2]: a shape error). */
function nested(innerNodes: ReturnType<typeof onnx.makeNode>[], xShape: number[]) {
  const inner = onnx.makeGraph(
    [...innerNodes, onnx.makeNode("Identity", ["c_in"], ["c_out"])],
    "inner_body",
    [vi("j", "int64", []), vi("c_in", "bool", []), vi("x_in", "float32", xShape)],
    [vi("c_out", "bool", []), vi("x_out", "float32", xShape)],
  );
  const outer = onnx.makeGraph(
    [onnx.makeNode("Loop", ["M", "", "y_in"], ["y_out"], { body: inner }, { name: "inner" }), onnx.makeNode("Identity", ["d_in"], ["d_out"])],
    "outer_body",
    [vi("i", "int64", []), vi("d_in", "bool", []), vi("y_in", "float32", xShape)],
    [vi("d_out", "bool", []), vi("y_out", "float32", xShape)],
  );
  const g = onnx.makeGraph([onnx.makeNode("Loop", ["M", "", "x0"], ["x"], { body: outer }, { name: "outer" })], "g", [vi("M", "int64", []), vi("x0", "float32", xShape)], [vi("x", "float32", xShape)]);
  return onnx.modelBytes(onnx.makeModel(g));
}

test("a shape error two Loops deep names the node path once, outermost first", () => {
  const three = onnx.makeNode("Constant", [], ["three"], { value: sc.tensor([1, 2, 3], "float32") });
  const add = onnx.makeNode("Add", ["x_in", "three"], ["x_out"], {}, { name: "g" });
  const fn = onnx.load(nested([three, add], [2]));
  assert.throws(
    () => fn(sc.scalar(2, "int64"), sc.tensor([1, 2])),
    (e: unknown) => {
      const m = (e as Error).message;
      assert.ok(e instanceof sc.StagecraftError, m);
      assert.match(m, /\(in ONNX Loop node "outer" > Loop node "inner" > Add node "g"\)/);
      assert.equal(m.match(/in ONNX/g)!.length, 1, m);
      return true;
    },
  );
});

test("a nested Loop past maxTotalIterations says so once: no repeated 'Loop:' prefix", { timeout: 60_000 }, () => {
  const bytes = nested([onnx.makeNode("Identity", ["x_in"], ["x_out"])], [1]);
  const fn = onnx.load(bytes, { maxTotalIterations: 50 });
  assert.throws(
    () => fn(sc.scalar(10, "int64"), sc.tensor([1])),
    (e: unknown) => {
      const m = (e as Error).message;
      assert.ok(e instanceof onnx.OnnxLimitError, m);
      assert.match(m, /maxTotalIterations/);
      assert.doesNotMatch(m, /Loop: Loop/);
      assert.match(m, /^onnx\.load: Loop node "(inner|outer)"/);
      return true;
    },
  );
});
