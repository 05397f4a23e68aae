/**
 * Run in a child process by ort-crashes.test.ts: the cases that crash onnxruntime-node 1.30
 * natively (SIGFPE), through Stagecraft's onnxruntime engine and export. Prints one JSON line per
 * case: its result's shapes and values, or the typed error it raised.
 */
import * as sc from "../../../src/api/index.js";

const cases: [string, () => sc.Tensor[]][] = [
  ["topK of [0, 4], k 2", () => sc.topK(sc.zeros([0, 4]), 2) as unknown as sc.Tensor[]],
  ["sort of [0, 3]", () => [sc.sort(sc.zeros([0, 3]))]],
  ["argsort of [2, 0, 3] along axis 2", () => [sc.argsort(sc.zeros([2, 0, 3]), { axis: 2 })]],
  ["topK of the empty slice of a non-empty input", () => sc.topK(sc.tensor([[3, 1, 2]]).slice([0, 0], [0, 3]), 2) as unknown as sc.Tensor[]],
];

for (const [name, f] of cases) {
  let line: object;
  try {
    const eager = f();
    const staged = sc.stage(f, { engine: "onnxruntime" })() as unknown as sc.Tensor[] | sc.Tensor;
    const outs = Array.isArray(staged) ? staged : [staged];
    line = { name, shapes: outs.map((t) => t.shape), dtypes: outs.map((t) => t.dtype), eager: eager.map((t) => t.shape), eagerDtypes: eager.map((t) => t.dtype) };
  } catch (e) {
    line = { name, error: (e as Error).constructor.name, message: (e as Error).message };
  }
  console.log(JSON.stringify(line));
}
