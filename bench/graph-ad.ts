// Training-step time, eager tape vs the staged graph-AD transform, measured in the same run
// (issue 5's benchmark; ratio = eager time / staged time, > 1 means staging wins). One step is
// the forward pass, the gradient with respect to every weight, and an SGD update of the weights.
// - RNN: h_t = tanh(x_t W + h_{t-1} U + b), hidden 256, input 64, batch 32, float32, sequence
//   lengths 64 and 128, loss = mean of the final h. Eager: a JS loop under the tape (valueAndGrad
//   with respect to the weights). Staged: the same step inside sc.stage, the sequence loop an
//   sc.whileLoop whose trip count is a tensor argument (data-dependent), the gradient by
//   sc.valueAndGrad inside the staged function, the update by Variable.assign.
// - TreeLSTM (binary Tree-LSTM, Tai et al. 2015): hidden 128, leaf inputs 64, 5 classes, a
//   softmax cross-entropy loss on the root, batch 1, over a fixed set of 8 seeded random binary
//   trees of 29 to 59 nodes given as tensors (left/right child index arrays padded to 64 nodes,
//   -1 for none; leaf inputs [64, 64]). Eager: recursive JS over the tree under a GradientTape.
//   Staged: a recursive staged function over node indices (the base case is decided by a
//   symbolic gather of the child array) called from a staged training step that takes a
//   GradientTape with respect to the weight variables.
// Before anything is timed, each staged step's loss, gradients and updated weights are checked
// against the eager step's (float32 tolerance), from the same initial weights.
// Run standalone: node --import tsx bench/graph-ad.ts
import * as sc from "../src/api/index.js";
import { type Row, isMainModule, median, randomValues } from "./common.js";
import { relativeSpread } from "./baseline.js";


const PEER = "stagecraft eager tape";
const LR = 0.01;


function randomTensor(shape: number[], seed: number, scale = 1): sc.Tensor {
  return sc.tensor(randomValues(shape.reduce((x, y) => x * y, 1), seed, scale), "float32", shape);
}

/** w <- w - LR * g for every weight (the same code runs eagerly and while staging). */
function sgdUpdate(weights: readonly sc.Variable[], grads: readonly sc.Tensor[]): void {
  weights.forEach((w, k) => w.assign(w.read().sub(grads[k]!.mul(LR))));
}

interface StepCase {
  name: string;
  /** Training steps one call of eager()/staged() performs. */
  steps: number;
  weights: sc.Variable[];
  /** One call: [loss, ...gradients] of its last step (weights updated). */
  eager: () => sc.Tensor[];
  staged: () => sc.Tensor[];
}

// ---------------------------------------------------------------------------------------
// RNN

const RNN_HIDDEN = 256;
const RNN_INPUT = 64;
const RNN_BATCH = 32;

const rnnW = sc.variable(randomTensor([RNN_INPUT, RNN_HIDDEN], 101, Math.sqrt(1 / RNN_INPUT)), { name: "rnn_W" });
const rnnU = sc.variable(randomTensor([RNN_HIDDEN, RNN_HIDDEN], 102, Math.sqrt(1 / RNN_HIDDEN)), { name: "rnn_U" });
const rnnB = sc.variable(randomTensor([RNN_HIDDEN], 103, 0.1), { name: "rnn_b" });
const rnnWeights = [rnnW, rnnU, rnnB];

const rnnCell = (x: sc.Tensor, h: sc.Tensor, w: sc.Tensor, u: sc.Tensor, b: sc.Tensor): sc.Tensor =>
  sc.tanh(sc.matmul(x, w).add(sc.matmul(h, u)).add(b));

/** Eager: a JS loop over the time steps, the tape recording every op. */
function rnnEagerStep(xs: sc.Tensor): sc.Tensor[] {
  const loss = (w: sc.Tensor, u: sc.Tensor, b: sc.Tensor): sc.Tensor => {
    let h = sc.zeros([xs.shape[1]!, RNN_HIDDEN]);
    for (const x of sc.unstack(xs, 0)) h = rnnCell(x, h, w, u, b);
    return sc.mean(h);
  };
  const [value, grads] = sc.valueAndGrad(loss, { argnums: [0, 1, 2] })(rnnW.read(), rnnU.read(), rnnB.read()) as [sc.Tensor, sc.Tensor[]];
  sgdUpdate(rnnWeights, grads);
  return [value, ...grads];
}

/** Staged: the whole step is one graph; the loop runs `length` (a tensor) iterations. */
const rnnStagedStep = sc.stage(
  (xs: sc.Tensor, length: sc.Tensor): sc.Tensor[] => {
    const loss = (w: sc.Tensor, u: sc.Tensor, b: sc.Tensor): sc.Tensor => {
      const h0 = sc.zeros([xs.shape[1]!, RNN_HIDDEN]);
      const [, h] = sc.whileLoop((i) => sc.less(i, length), (i, h) => [i.add(1), rnnCell(sc.gather(xs, i, 0), h!, w, u, b)], [sc.scalar(0, "int32"), h0]);
      return sc.mean(h!);
    };
    const [value, grads] = sc.valueAndGrad(loss, { argnums: [0, 1, 2] })(rnnW.read(), rnnU.read(), rnnB.read()) as [sc.Tensor, sc.Tensor[]];
    sgdUpdate(rnnWeights, grads);
    return [value, ...grads];
  },
  { name: "rnn_train_step" },
);

function makeRnnCase(seqLen: number): StepCase {
  const xs = randomTensor([seqLen, RNN_BATCH, RNN_INPUT], 200 + seqLen);
  const length = sc.scalar(seqLen, "int32");
  return {
    name: `graph-ad rnn h${RNN_HIDDEN} seq ${seqLen} batch ${RNN_BATCH} train step`,
    steps: 1,
    weights: rnnWeights,
    eager: () => rnnEagerStep(xs),
    staged: () => rnnStagedStep(xs, length),
  };
}

// ---------------------------------------------------------------------------------------
// TreeLSTM

const TREE_HIDDEN = 128;
const TREE_INPUT = 64;
const TREE_CLASSES = 5;
/** Trees are padded to this many nodes (one staged trace for all of them). */
const TREE_MAX_NODES = 64;
const TREE_COUNT = 8;

const H = TREE_HIDDEN;
export { TREE_HIDDEN, TREE_INPUT, TREE_CLASSES, TREE_MAX_NODES };
const treeWLeaf = sc.variable(randomTensor([TREE_INPUT, 3 * H], 301, Math.sqrt(1 / TREE_INPUT)), { name: "tree_W_leaf" });
const treeBLeaf = sc.variable(randomTensor([3 * H], 302, 0.1), { name: "tree_b_leaf" });
const treeU = sc.variable(randomTensor([2 * H, 5 * H], 303, Math.sqrt(1 / (2 * H))), { name: "tree_U" });
const treeBU = sc.variable(randomTensor([5 * H], 304, 0.1), { name: "tree_b_U" });
const treeV = sc.variable(randomTensor([H, TREE_CLASSES], 305, Math.sqrt(1 / H)), { name: "tree_V" });
const treeBV = sc.variable(sc.zeros([TREE_CLASSES]), { name: "tree_b_V" });
export const treeWeights = [treeWLeaf, treeBLeaf, treeU, treeBU, treeV, treeBV];

export interface Tree {
  nodes: number;
  leftJs: number[];
  rightJs: number[];
  /** int32 [TREE_MAX_NODES]: child indices, -1 for none (leaves and padding). */
  left: sc.Tensor;
  right: sc.Tensor;
  /** float32 [TREE_MAX_NODES, TREE_INPUT]: the leaves' inputs (rows of other nodes unused). */
  x: sc.Tensor;
  /** int32 [1]: the class of the tree. */
  label: sc.Tensor;
}

/** A random binary tree with `leaves` leaves (2 * leaves - 1 nodes), numbered in preorder (root 0). */
export function randomTree(leaves: number, seed: number): Tree {
  let s = seed >>> 0;
  const rnd = (): number => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 4294967296;
  };
  const leftJs: number[] = [];
  const rightJs: number[] = [];
  const build = (n: number): number => {
    const id = leftJs.length;
    leftJs.push(-1);
    rightJs.push(-1);
    if (n > 1) {
      const k = 1 + Math.floor(rnd() * (n - 1));
      leftJs[id] = build(k);
      rightJs[id] = build(n - k);
    }
    return id;
  };
  build(leaves);
  const l = new Int32Array(TREE_MAX_NODES).fill(-1);
  const r = new Int32Array(TREE_MAX_NODES).fill(-1);
  l.set(leftJs);
  r.set(rightJs);
  return {
    nodes: leftJs.length,
    leftJs,
    rightJs,
    left: sc.tensor(l, "int32", [TREE_MAX_NODES]),
    right: sc.tensor(r, "int32", [TREE_MAX_NODES]),
    x: randomTensor([TREE_MAX_NODES, TREE_INPUT], seed * 31 + 7),
    label: sc.tensor(new Int32Array([Math.floor(rnd() * TREE_CLASSES)]), "int32", [1]),
  };
}

/** A leaf: x [1, E] -> [h, c] as one [1, 2H] tensor. */
function leafCell(x: sc.Tensor): sc.Tensor {
  const [i, o, u] = sc.split(sc.matmul(x, treeWLeaf).add(treeBLeaf), 3, 1) as [sc.Tensor, sc.Tensor, sc.Tensor];
  const c = sc.sigmoid(i).mul(sc.tanh(u));
  return sc.concat([sc.sigmoid(o).mul(sc.tanh(c)), c], 1);
}

/** An internal node from its children's [h, c] ([1, 2H] each). */
function innerCell(left: sc.Tensor, right: sc.Tensor): sc.Tensor {
  const [hl, cl] = sc.split(left, 2, 1) as [sc.Tensor, sc.Tensor];
  const [hr, cr] = sc.split(right, 2, 1) as [sc.Tensor, sc.Tensor];
  const gates = sc.matmul(sc.concat([hl, hr], 1), treeU).add(treeBU);
  const [i, fl, fr, o, u] = sc.split(gates, 5, 1) as [sc.Tensor, sc.Tensor, sc.Tensor, sc.Tensor, sc.Tensor];
  const c = sc.sigmoid(i).mul(sc.tanh(u)).add(sc.sigmoid(fl).mul(cl)).add(sc.sigmoid(fr).mul(cr));
  return sc.concat([sc.sigmoid(o).mul(sc.tanh(c)), c], 1);
}

function treeLoss(root: sc.Tensor, label: sc.Tensor): sc.Tensor {
  const [h] = sc.split(root, 2, 1) as [sc.Tensor, sc.Tensor];
  const logits = sc.matmul(h, treeV).add(treeBV);
  return sc.neg(sc.sum(sc.logSoftmax(logits, -1).mul(sc.oneHot(label, TREE_CLASSES))));
}

/** Eager: recursion in JavaScript over the tree's JS arrays. */
function treeNodeEager(t: Tree, i: number): sc.Tensor {
  if (t.leftJs[i]! < 0) return leafCell(sc.gather(t.x, sc.tensor([i], "int32"), 0));
  return innerCell(treeNodeEager(t, t.leftJs[i]!), treeNodeEager(t, t.rightJs[i]!));
}

export function treeEagerStep(t: Tree): sc.Tensor[] {
  const tape = new sc.GradientTape();
  const loss = tape.record(() => treeLoss(treeNodeEager(t, 0), t.label));
  const grads = tape.gradient(loss, treeWeights) as sc.Tensor[];
  sgdUpdate(treeWeights, grads);
  return [loss, ...grads];
}

/** Staged recursion over node indices: whether node i is a leaf is known only when it runs. */
const treeNodeStaged: (i: sc.Tensor, left: sc.Tensor, right: sc.Tensor, x: sc.Tensor) => sc.Tensor = sc.stage(
  (i: sc.Tensor, left: sc.Tensor, right: sc.Tensor, x: sc.Tensor): sc.Tensor => {
    const li = sc.gather(left, i, 0);
    const ri = sc.gather(right, i, 0);
    return sc.cond(
      sc.less(li, 0),
      () => leafCell(sc.gather(x, i.reshape([1]), 0)),
      () => innerCell(treeNodeStaged(li, left, right, x), treeNodeStaged(ri, left, right, x)),
    );
  },
  { outputSignature: sc.spec([1, 2 * TREE_HIDDEN], "float32"), name: "tree_lstm_node" },
);

/**
 * The staged training step, a new staged function per call: a function's engine is fixed when it
 * is staged (the process default then), so a benchmark comparing engines stages one per engine.
 */
export const makeTreeStagedStep = () =>
  sc.stage(
    (left: sc.Tensor, right: sc.Tensor, x: sc.Tensor, label: sc.Tensor): sc.Tensor[] => {
      const tape = new sc.GradientTape();
      const loss = tape.record(() => treeLoss(treeNodeStaged(sc.scalar(0, "int32"), left, right, x), label));
      const grads = tape.gradient(loss, treeWeights) as sc.Tensor[];
      sgdUpdate(treeWeights, grads);
      return [loss, ...grads];
    },
    { name: "tree_lstm_train_step" },
  );

export const treeStagedStep = makeTreeStagedStep();

let trees: Tree[] | null = null;

function makeTreeCase(): StepCase {
  trees ??= Array.from({ length: TREE_COUNT }, (_, k) => randomTree(15 + ((k * 37) % 16), 1000 + k));
  const ts = trees;
  const sizes = ts.map((t) => t.nodes);
  let last: sc.Tensor[] = [];
  return {
    name: `graph-ad treelstm h${TREE_HIDDEN} ${TREE_COUNT} trees ${Math.min(...sizes)}-${Math.max(...sizes)} nodes train step`,
    steps: ts.length,
    weights: treeWeights,
    eager: () => {
      for (const t of ts) last = treeEagerStep(t);
      return last;
    },
    staged: () => {
      for (const t of ts) last = treeStagedStep(t.left, t.right, t.x, t.label);
      return last;
    },
  };
}

// ---------------------------------------------------------------------------------------
// checking and timing

/** max |a - b| <= tol * max |b| (+ a tiny absolute floor), per tensor. */
function assertClose(what: string, got: sc.Tensor, want: sc.Tensor, tol = 1e-4): void {
  const a = got.dataSync();
  const b = want.dataSync();
  if (a.length !== b.length) throw new Error(`bench/graph-ad: ${what}: staged has ${a.length} values, eager ${b.length}`);
  let scale = 0;
  for (let i = 0; i < b.length; i++) scale = Math.max(scale, Math.abs(b[i]!));
  for (let i = 0; i < a.length; i++) {
    const err = Math.abs(a[i]! - b[i]!);
    if (!(err <= tol * scale + 1e-7)) throw new Error(`bench/graph-ad: ${what}: staged ${a[i]} != eager ${b[i]} at ${i} (max |eager| ${scale})`);
  }
}

/**
 * From the same weights: the eager call's loss, gradients and updated weights equal the staged
 * call's. The weights are put back afterwards.
 */
function checkCase(c: StepCase): void {
  const init = c.weights.map((w) => w.read());
  const restore = () => c.weights.forEach((w, k) => w.assign(init[k]!));
  try {
    const e = c.eager();
    const eWeights = c.weights.map((w) => w.read());
    restore();
    const s = c.staged();
    if (s.length !== e.length) throw new Error(`bench/graph-ad: ${c.name}: staged returned ${s.length} tensors, eager ${e.length}`);
    s.forEach((t, k) => assertClose(`${c.name}: ${k === 0 ? "loss" : `gradient of ${c.weights[k - 1]!.name}`}`, t, e[k]!));
    c.weights.forEach((w, k) => assertClose(`${c.name}: updated ${w.name}`, w.read(), eWeights[k]!));
  } finally {
    restore();
  }
}

let sink: unknown = null;

/** Milliseconds per training step over `calls` consecutive calls. */
function msPerStep(fn: () => unknown, steps: number, calls: number): number {
  const t = performance.now();
  for (let i = 0; i < calls; i++) sink = fn();
  return (performance.now() - t) / (steps * calls);
}

/** Consecutive calls that take about ROUND_MS (at least one), from the time of one call. */
const ROUND_MS = 150;
const callsPerRound = (fn: () => unknown): number => Math.max(1, Math.round(ROUND_MS / msPerStep(fn, 1, 1)));

/**
 * Median ms/step of both variants after a warm-up (tracing, compiling, V8 tiers). Rounds
 * alternate between them so that load changes on the machine hit both alike; the ratio is the
 * median of the per-round ratios. A round runs one variant for ~150 ms of consecutive steps,
 * as a training loop does: a single step timed right after the other variant's steps would
 * mostly time the garbage collection the other one left running.
 */
function measure(c: StepCase, rounds: number, warmupSeconds: number): { eager: number; staged: number; ratio: number; spread: number | null } {
  for (const fn of [c.staged, c.eager]) {
    const t = performance.now();
    let n = 0;
    while (n < 2 || performance.now() - t < warmupSeconds * 1000) {
      sink = fn();
      n++;
    }
  }
  const e: number[] = [];
  const s: number[] = [];
  const r: number[] = [];
  const ne = callsPerRound(c.eager);
  const ns = callsPerRound(c.staged);
  for (let i = 0; i < rounds; i++) {
    const a = msPerStep(c.eager, c.steps, ne);
    const b = msPerStep(c.staged, c.steps, ns);
    e.push(a);
    s.push(b);
    r.push(a / b);
  }
  return { eager: median(e), staged: median(s), ratio: median(r), spread: relativeSpread(r) };
}

export async function benchGraphAd(): Promise<Row[]> {
  const cases: [StepCase, number, number][] = [
    [makeRnnCase(64), 7, 2],
    [makeRnnCase(128), 5, 2],
    [makeTreeCase(), 7, 3],
  ];
  const rows: Row[] = [];
  for (const [c, rounds, warmup] of cases) {
    checkCase(c);
    const m = measure(c, rounds, warmup);
    rows.push({ name: c.name, peer: PEER, ours: m.staged, theirs: m.eager, unit: "ms/step", ratio: m.ratio, ...(m.spread !== null ? { spread: m.spread } : {}) });
  }
  if (sink === null) throw new Error("unreachable");
  return rows;
}

if (isMainModule(import.meta.url)) {
  const t = performance.now();
  const rows = await benchGraphAd();
  console.log(`${"benchmark (ours = staged, theirs = eager)".padEnd(58)}${"peer".padEnd(24)}${"ours".padStart(9)}${"theirs".padStart(9)}  unit      ratio  goal`);
  for (const r of rows) {
    const goal = r.name.includes("rnn") ? 3 : 2;
    console.log(`${r.name.padEnd(58)}${r.peer.padEnd(24)}${r.ours.toFixed(2).padStart(9)}${r.theirs.toFixed(2).padStart(9)}  ${r.unit}  ${r.ratio.toFixed(2).padStart(5)}x  >= ${goal}x`);
  }
  console.log(`(${((performance.now() - t) / 1000).toFixed(1)} s)`);
}
