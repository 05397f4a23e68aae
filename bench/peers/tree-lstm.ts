/**
 * TreeLSTM training step over random binary trees, batch 1 (AutoGraph/Lantern): the binary
 * Tree-LSTM of bench/graph-ad.ts (hidden 128, leaf inputs 64, 5 classes, SGD), one tree per
 * call, cycling over 8 seeded trees of 29 to 59 nodes.
 * - Stagecraft eager: recursion in JavaScript under a GradientTape.
 * - Stagecraft staged: a recursive staged function over node indices (the base case decided by
 *   a symbolic gather), differentiated by graph AD inside the staged training step.
 * - tfjs (cpu, wasm): recursion in JavaScript, tf.variableGrads, the same SGD update.
 * The staged step is checked against the eager one in bench/graph-ad.ts's own run; here the
 * tfjs step's loss is checked against Stagecraft's from the same weights before timing.
 */
import { assertClose, type Workload } from "./harness.js";
import { jaxNotPorted, scDefaults, tf, tfBackend, tfSystems } from "./systems.js";
import { makeTreeStagedStep, randomTree, treeEagerStep, treeWeights, TREE_CLASSES, TREE_HIDDEN, TREE_INPUT, type Tree } from "../graph-ad.js";

const H = TREE_HIDDEN, LR = 0.01;

/** The same step in tfjs: weights copied from Stagecraft's variables as they are now. */
function tfTreeStep(trees: Tree[]): () => tf.Tensor {
  const [wLeaf, bLeaf, u, bU, v, bV] = treeWeights.map((w) => tf.variable(tf.tensor(w.read().dataSync() as Float32Array, [...w.read().shape])));
  const xs = trees.map((t) => tf.tensor2d(t.x.dataSync() as Float32Array, [t.x.shape[0]!, TREE_INPUT]));
  const labels = trees.map((t) => tf.oneHot(tf.tensor1d(t.label.dataSync() as Int32Array, "int32"), TREE_CLASSES));
  const leaf = (x: tf.Tensor) => {
    const [i, o, g] = tf.split(x.matMul(wLeaf!).add(bLeaf!), 3, 1);
    const c = tf.sigmoid(i!).mul(tf.tanh(g!));
    return [tf.sigmoid(o!).mul(tf.tanh(c)), c];
  };
  const node = (t: Tree, x: tf.Tensor, i: number): tf.Tensor[] => {
    if (t.leftJs[i]! < 0) return leaf(x.slice([i, 0], [1, TREE_INPUT]));
    const [hl, cl] = node(t, x, t.leftJs[i]!), [hr, cr] = node(t, x, t.rightJs[i]!);
    const [gi, fl, fr, o, g] = tf.split(tf.concat([hl!, hr!], 1).matMul(u!).add(bU!), 5, 1);
    const c = tf.sigmoid(gi!).mul(tf.tanh(g!)).add(tf.sigmoid(fl!).mul(cl!)).add(tf.sigmoid(fr!).mul(cr!));
    return [tf.sigmoid(o!).mul(tf.tanh(c)), c];
  };
  const vars = [wLeaf!, bLeaf!, u!, bU!, v!, bV!];
  let k = 0;
  return () => {
    const t = k % trees.length;
    k++;
    const { value, grads } = tf.variableGrads(() => {
      const [h] = node(trees[t]!, xs[t]!, 0);
      return tf.neg(tf.sum(tf.logSoftmax(h!.matMul(v!).add(bV!)).mul(labels[t]!))) as tf.Scalar;
    }, vars);
    for (const w of vars) w.assign(w.sub(grads[w.name]!.mul(LR)));
    return value;
  };
}

export async function treeLstmWorkload(): Promise<Workload> {
  const trees = Array.from({ length: 8 }, (_, k) => randomTree(15 + ((k * 37) % 16), 1000 + k));
  const sizes = trees.map((t) => t.nodes);
  scDefaults();
  // tfjs's loss on the first tree from the same weights as Stagecraft's (the weights are put back)
  const init = treeWeights.map((w) => w.read());
  await tfBackend("cpu");
  const theirs = tf.tidy(() => tfTreeStep(trees)().dataSync());
  const ours = treeEagerStep(trees[0]!)[0]!.dataSync();
  treeWeights.forEach((w, k) => w.assign(init[k]!));
  assertClose("TreeLSTM tfjs loss", theirs, ours, 1e-4);
  let e = 0, s = 0;
  // (staged here, not at import: the engine the process default names now, see makeTreeStagedStep)
  const treeStagedStep = makeTreeStagedStep();
  return {
    name: `TreeLSTM training step, hidden ${H}, batch 1, random trees of ${Math.min(...sizes)}-${Math.max(...sizes)} nodes`,
    call: "one training step on one tree (cycling over 8 trees)",
    throughput: { perCall: 1, unit: "trees/s" },
    note: "Goals: staged at least 3x eager, and at least 2x the best JS peer.",
    systems: [
      { name: "stagecraft eager", enter: scDefaults, run: () => treeEagerStep(trees[e++ % trees.length]!) },
      { name: "stagecraft staged", enter: scDefaults, run: () => { const t = trees[s++ % trees.length]!; return treeStagedStep(t.left, t.right, t.x, t.label); } },
      { name: "stagecraft on onnxruntime engine", run: () => null, skip: "recursion: ONNX has no recursive functions" },
      ...tfSystems(() => tfTreeStep(trees)),
      jaxNotPorted("recursion over a tree whose shape is data (jit traces one tree per shape)"),
    ],
  };
}
