/**
 * Builders of small crafted ONNX models that ask for unbounded work or memory (the classes of
 * issue 26): model-local functions that call the next twice, nested Loops, Loops whose carried
 * value or scan output grows as they run, constants that fit maxElements one by one but not
 * together, and initializers in external data. Each returns the model's bytes; the tests load
 * them under the limits they probe (test/onnx/fuzz.test.ts draws variants of each).
 */
import * as sc from "../../src/api/index.js";

const { onnx } = sc;
const vi = onnx.makeValueInfo;

/** f0(x) = x + 1; f_k(x) = f_{k-1}(f_{k-1}(x)): 2^depth additions once inlined; y = f_depth(x). */
export function fanOutModel(depth: number): Uint8Array {
  const fns = [{ name: "f0", domain: "local", input: ["a"], output: ["b"], node: [onnx.makeNode("Constant", [], ["one"], { value: sc.scalar(1, "float32") }), onnx.makeNode("Add", ["a", "one"], ["b"])], opset_import: [{ domain: "", version: 18 }] }];
  for (let k = 1; k <= depth; k++) {
    fns.push({
      name: `f${k}`,
      domain: "local",
      input: ["a"],
      output: ["b"],
      node: [onnx.makeNode(`f${k - 1}`, ["a"], ["m"], {}, { domain: "local" }), onnx.makeNode(`f${k - 1}`, ["m"], ["b"], {}, { domain: "local" })],
      opset_import: [{ domain: "", version: 18 }, { domain: "local", version: 1 }],
    });
  }
  const g = onnx.makeGraph([onnx.makeNode(`f${depth}`, ["x"], ["y"], {}, { domain: "local" })], "g", [vi("x", "float32", [])], [vi("y", "float32", [])]);
  return onnx.modelBytes(onnx.makeModel(g, { opsets: { local: 1 }, functions: fns }));
}

/**
 * Nested Loops, the outermost first, of the trip counts `trips` (Constants, or when `runTime`
 * the model's inputs M1, M2, ... of shape [1]); the innermost body adds 1 to a carried float,
 * so s = s0 + the product of the counts.
 */
export function nestedLoopsModel(trips: readonly number[], runTime: boolean): Uint8Array {
  const depth = trips.length;
  const count = (k: number): Record<string, unknown>[] => (runTime ? [] : [onnx.makeNode("Constant", [], [`n${k}`], { value: sc.tensor([trips[k - 1]!], "int64") })]);
  const countName = (k: number) => (runTime ? `M${k}` : `n${k}`);
  let inner = onnx.makeGraph(
    [onnx.makeNode("Constant", [], ["one"], { value: sc.scalar(1, "float32") }), onnx.makeNode("Add", [`s${depth}`, "one"], [`t${depth}`]), onnx.makeNode("Identity", [`c${depth}`], [`co${depth}`])],
    `body${depth}`,
    [vi(`i${depth}`, "int64", []), vi(`c${depth}`, "bool", []), vi(`s${depth}`, "float32", [])],
    [vi(`co${depth}`, "bool", []), vi(`t${depth}`, "float32", [])],
  );
  for (let k = depth - 1; k >= 1; k--) {
    inner = onnx.makeGraph(
      [...count(k + 1), onnx.makeNode("Loop", [countName(k + 1), "", `s${k}`], [`t${k}`], { body: inner }, { name: `loop${k + 1}` }), onnx.makeNode("Identity", [`c${k}`], [`co${k}`])],
      `body${k}`,
      [vi(`i${k}`, "int64", []), vi(`c${k}`, "bool", []), vi(`s${k}`, "float32", [])],
      [vi(`co${k}`, "bool", []), vi(`t${k}`, "float32", [])],
    );
  }
  const g = onnx.makeGraph(
    [...count(1), onnx.makeNode("Loop", [countName(1), "", "s0"], ["s"], { body: inner }, { name: "loop1" })],
    "m",
    [...(runTime ? trips.map((_, k) => vi(`M${k + 1}`, "int64", [1])) : []), vi("s0", "float32", [])],
    [vi("s", "float32", [])],
  );
  return onnx.modelBytes(onnx.makeModel(g));
}

/** A Loop "grow" of run-time count M whose body doubles its carried x (Concat x, x); x0 of shape [width]. */
export function doublingLoopModel(width: number): Uint8Array {
  const body = onnx.makeGraph(
    [onnx.makeNode("Concat", ["x_in", "x_in"], ["x_out"], { axis: 0 }), onnx.makeNode("Identity", ["c_in"], ["c_out"])],
    "body",
    [vi("i", "int64", []), vi("c_in", "bool", []), vi("x_in", "float32", [null])],
    [vi("c_out", "bool", []), vi("x_out", "float32", [null])],
  );
  const g = onnx.makeGraph([onnx.makeNode("Loop", ["M", "", "x0"], ["x"], { body }, { name: "grow" })], "g", [vi("M", "int64", []), vi("x0", "float32", [width])], [vi("x", "float32", [null])]);
  return onnx.modelBytes(onnx.makeModel(g));
}

/** A Loop "rows" of run-time count M with a constant carried x of shape [width] that it also scans out: ys is [M, width]. */
export function scanRowsModel(width: number): Uint8Array {
  const body = onnx.makeGraph(
    [onnx.makeNode("Identity", ["x_in"], ["x_out"]), onnx.makeNode("Identity", ["c_in"], ["c_out"]), onnx.makeNode("Identity", ["x_in"], ["scan"])],
    "body",
    [vi("i", "int64", []), vi("c_in", "bool", []), vi("x_in", "float32", [width])],
    [vi("c_out", "bool", []), vi("x_out", "float32", [width]), vi("scan", "float32", [width])],
  );
  const g = onnx.makeGraph([onnx.makeNode("Loop", ["M", "", "x0"], ["x", "ys"], { body }, { name: "rows" })], "g", [vi("M", "int64", []), vi("x0", "float32", [width])], [vi("x", "float32", [width]), vi("ys", "float32", null)]);
  return onnx.modelBytes(onnx.makeModel(g));
}

/** k ConstantOfShape `shape` (values 1..k, float32) and their Sum: y = k (k + 1) / 2 everywhere. */
export function constantsSumModel(k: number, shape: readonly number[]): Uint8Array {
  const nodes = [onnx.makeNode("Constant", [], ["s"], { value: sc.tensor([...shape], "int64") })];
  for (let j = 0; j < k; j++) nodes.push(onnx.makeNode("ConstantOfShape", ["s"], [`c${j}`], { value: sc.tensor([j + 1], "float32") }));
  nodes.push(onnx.makeNode("Sum", Array.from({ length: k }, (_, j) => `c${j}`), ["y"]));
  return onnx.modelBytes(onnx.makeModel(onnx.makeGraph(nodes, "g", [], [vi("y", "float32", [...shape])])));
}

/** y = x + w over float32 [4], w an initializer in external data at `location` (offset, length). */
export function externalDataModel(location: string, offset = 0, length = 16): Uint8Array {
  const w = { name: "w", dims: [4], data_type: onnx.ElemType.FLOAT, data_location: 1, external_data: [{ key: "location", value: location }, { key: "offset", value: String(offset) }, { key: "length", value: String(length) }] };
  const g = onnx.makeGraph([onnx.makeNode("Add", ["x", "w"], ["y"])], "g", [vi("x", "float32", [4])], [vi("y", "float32", [4])]);
  (g.initializer as unknown[]).push(w);
  return onnx.modelBytes(onnx.makeModel(g));
}
