/**
 * TfIdfVectorizer over integer tokens (pool_int64s; string pools need a string dtype, which
 * Stagecraft lacks). For each gram length n in [min_gram_length, max_gram_length] and skip s
 * (0..max_skip_count; one pass for n = 1), the n tokens at i, i + (s + 1), ... are compared with
 * every pooled n-gram at once (an equality over [rows, positions, grams, n]); matches are counted
 * per gram and mapped to output columns by ngram_indexes, then weighted per mode (TF, IDF, TFIDF).
 */
import type { Tensor } from "../../../core/tensor.js";
import * as ops from "../../../ops/index.js";
import { onnxOp } from "../op-table.js";

onnxOp("TfIdfVectorizer", {
  run(n) {
    const x0 = n.input(0);
    if (n.strings("pool_strings") !== undefined) throw n.unsupported("string pools (pool_strings) need a string dtype, which Stagecraft does not have");
    if (x0.dtype !== "int32" && x0.dtype !== "int64") throw n.fail(`takes int32 or int64 tokens, got ${x0.dtype}`);
    if (x0.rank !== 1 && x0.rank !== 2) throw n.fail(`the input must be [C] or [N, C], got shape [${x0.shape.join(", ")}]`);
    const x = x0.rank === 1 ? ops.expandDims(x0, 0) : x0;
    const [N, C] = x.shape as [number, number];
    const minN = n.int("min_gram_length");
    const maxN = n.int("max_gram_length");
    const maxSkip = n.int("max_skip_count");
    const mode = n.string("mode");
    const counts = n.ints("ngram_counts");
    const indexes = n.ints("ngram_indexes");
    const pool = n.ints("pool_int64s");
    if (minN === undefined || maxN === undefined || maxSkip === undefined || mode === undefined || counts === undefined || indexes === undefined || pool === undefined) {
      throw n.fail("needs min_gram_length, max_gram_length, max_skip_count, mode, ngram_counts, ngram_indexes and pool_int64s");
    }
    if (mode !== "TF" && mode !== "IDF" && mode !== "TFIDF") throw n.fail(`unknown mode ${JSON.stringify(mode)} (TF, IDF or TFIDF)`);
    if (minN < 1 || maxN < minN || maxSkip < 0) throw n.fail(`gram lengths [${minN}, ${maxN}] and max_skip_count ${maxSkip} are invalid`);
    const weights = n.floats("weights") ?? indexes.map(() => 1);
    if (weights.length !== indexes.length) throw n.fail(`weights has ${weights.length} entries for ${indexes.length} n-grams`);
    const width = indexes.length === 0 ? 0 : Math.max(...indexes) + 1;
    if (indexes.some((i) => !Number.isInteger(i) || i < 0)) throw n.fail("ngram_indexes must be non-negative");
    n.checkShape([N, width]);
    let out: Tensor = ops.full([N, width], 0, "float32");
    let gram = 0; // index of the first n-gram of length n among all pooled n-grams
    for (let len = 1; len <= counts.length; len++) {
      const start = counts[len - 1]!;
      const end = len < counts.length ? counts[len]! : pool.length;
      if (start > end || end > pool.length || (end - start) % len !== 0) throw n.fail(`ngram_counts [${counts.join(", ")}] do not divide the pool of ${pool.length} into ${len}-grams`);
      const G = (end - start) / len;
      if (gram + G > indexes.length) throw n.fail(`ngram_indexes has ${indexes.length} entries for more pooled n-grams`);
      if (len >= minN && len <= maxN && G > 0) {
        const grams = ops.tensor(pool.slice(start, end), x.dtype, [1, 1, G, len]);
        let matches: Tensor | null = null;
        for (let s = 0; s <= (len === 1 ? 0 : maxSkip); s++) {
          const span = (len - 1) * (s + 1);
          const L = C - span;
          if (L <= 0) break;
          // [N, L, len]: the tokens of the n-gram starting at each position
          const tokens = ops.stack(Array.from({ length: len }, (_, j) => ops.slice(x, [0, j * (s + 1)], [N, j * (s + 1) + L])), -1);
          const equal = ops.cast(ops.equal(ops.expandDims(tokens, 2), grams), "float32"); // [N, L, G, len]
          const found = ops.sum(ops.min(equal, -1), 1); // [N, G]
          matches = matches === null ? found : ops.add(matches, found);
        }
        if (matches !== null) {
          const map = new Array<number>(G * width).fill(0);
          for (let g = 0; g < G; g++) map[g * width + indexes[gram + g]!] = 1;
          out = ops.add(out, ops.matmul(matches, ops.tensor(map, "float32", [G, width])));
        }
      }
      gram += G;
    }
    const w = ops.tensor(Array.from({ length: width }, (_, col) => weights[indexes.indexOf(col)] ?? 0), "float32", [1, width]);
    if (mode === "IDF") out = ops.mul(ops.cast(ops.greater(out, 0), "float32"), w);
    else if (mode === "TFIDF") out = ops.mul(out, w);
    return x0.rank === 1 ? ops.squeeze(out, 0) : out;
  },
});
