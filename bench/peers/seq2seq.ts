/**
 * A small seq2seq model with attention (the AutoGraph paper's appendix), one training step:
 * vocabulary 32, embeddings 32, hidden 64, batch 8; a tanh-RNN encoder over 12 source tokens;
 * a decoder with dot-product attention over the encoder's states, teacher-forced over a target
 * whose length is a tensor argument (a data-dependent loop), softmax cross-entropy summed over
 * the steps; the gradients of all nine weights.
 *
 * One source with a native `for` loop over the tensor length runs eagerly and staged after
 * AutoGraph's conversion; the decoder loop written with sc.whileLoop is the hand-written graph
 * code. Both staged steps' gradients are checked against the eager step's before timing.
 */
import * as sc from "../../src/api/index.js";
import { randomValues } from "../common.js";
import { assertClose, type Workload } from "./harness.js";
import { HAND_WRITTEN, engineSystem, jaxNotPorted, scDefaults, tfNotPorted } from "./systems.js";

const V = 32, E = 32, H = 64, B = 8, SRC = 12, TGT = 10;
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type T = any;

/** The encoder's states [SRC, B, H] (a static loop: unrolled alike in every version). */
function encode(src: T, emb: T, we: T, ue: T, be: T): T {
  let h = sc.zeros([B, H]);
  const states: T[] = [];
  for (const tok of sc.unstack(src, 0)) {
    h = sc.tanh(sc.add(sc.add(sc.matmul(sc.gather(emb, tok, 0), we), sc.matmul(h, ue)), be));
    states.push(h);
  }
  return sc.stack(states, 0);
}

/** One decoder step with attention: [h, the step's summed cross-entropy]. */
function decodeStep(enc: T, h: T, prev: T, next: T, p: T[]): T[] {
  const [emb, , , , wd, ud, bd, wo, bo] = p;
  const attn = sc.softmax(sc.sum(sc.mul(enc, sc.expandDims(h, 0)), 2), 0);
  const ctx = sc.sum(sc.mul(sc.expandDims(attn, 2), enc), 0);
  const h1 = sc.tanh(sc.add(sc.add(sc.matmul(sc.concat([sc.gather(emb, prev, 0), ctx], 1), wd), sc.matmul(h, ud)), bd));
  const logp = sc.logSoftmax(sc.add(sc.matmul(h1, wo), bo), -1);
  return [h1, sc.neg(sc.sum(sc.mul(logp, sc.oneHot(next, V))))];
}

/** The training step, the decoder a native `for` over the tensor `length` (converted by AutoGraph). */
function trainStep(src: T, tgt: T, length: T, ...params: T[]): T[] {
  const loss = (...p: T[]) => {
    const enc = encode(src, p[0], p[1], p[2], p[3]);
    let h = sc.gather(enc, SRC - 1, 0);
    let total = sc.scalar(0);
    for (let t = 0; t < length; t++) {
      const [h1, l] = decodeStep(enc, h, sc.gather(tgt, t, 0), sc.gather(tgt, t + 1, 0), p);
      h = h1;
      total = total + l;
    }
    return sc.div(total, sc.cast(length, "float32"));
  };
  return sc.grad(loss, { argnums: [0, 1, 2, 3, 4, 5, 6, 7, 8] })(...params) as T[];
}

/** The same with the decoder loop written with sc.whileLoop. */
export function trainStepByHand(src: sc.Tensor, tgt: sc.Tensor, length: sc.Tensor, ...params: sc.Tensor[]): sc.Tensor[] {
  const loss = (...p: sc.Tensor[]) => {
    const enc = encode(src, p[0], p[1], p[2], p[3]);
    const [, , total] = sc.whileLoop(
      (t) => sc.less(t!, length),
      (t, h, total) => {
        const [h1, l] = decodeStep(enc, h, sc.gather(tgt, t!, 0), sc.gather(tgt, sc.add(t!, 1), 0), p);
        return [sc.add(t!, 1), h1, sc.add(total!, l)];
      },
      [sc.scalar(0, "int32"), sc.gather(enc, SRC - 1, 0), sc.scalar(0)],
    );
    return sc.div(total!, sc.cast(length, "float32"));
  };
  return sc.grad(loss, { argnums: [0, 1, 2, 3, 4, 5, 6, 7, 8] })(...params) as sc.Tensor[];
}

/** The training step's arguments: source and target tokens, the target's length, the nine weights. */
export function seq2seqArgs(): T[] {
  const shapes = [[V, E], [E, H], [H, H], [H], [E + H, H], [H, H], [H], [H, V], [V]];
  const params = shapes.map((s, i) => sc.tensor(randomValues(s.reduce((a, b) => a * b, 1), 800 + i, s.length === 1 ? 0.1 : Math.sqrt(1 / s[0]!)), "float32", s));
  const tokens = (n: number, seed: number) => sc.tensor(Int32Array.from(randomValues(n * B, seed), (v) => Math.floor((v + 1) * (V / 2)) % V), "int32", [n, B]);
  const src = tokens(SRC, 811), tgt = tokens(TGT + 1, 812), length = sc.scalar(TGT, "int32");
  return [src, tgt, length, ...params];
}

/** The training step converted by AutoGraph (eager; stage it to stage). */
export function convertedTrainStep(): (...a: T[]) => T {
  return sc.autograph(trainStep, { scope: { sc, encode, decodeStep, SRC } });
}

export async function seq2seqWorkload(): Promise<Workload> {
  const args = seq2seqArgs();
  type Fn = (...a: T[]) => T;
  const eager: Fn = convertedTrainStep();
  const converted: Fn = sc.stage(eager, { name: "seq2seq_train_step" });
  const byHand: Fn = sc.stage(trainStepByHand, { name: "seq2seq_train_step_by_hand", autograph: false });
  scDefaults();
  const want = (eager(...args) as sc.Tensor[]).map((g) => g.dataSync());
  for (const [name, fn] of [["converted", converted], ["by hand", byHand]] as const) {
    (fn(...args) as sc.Tensor[]).forEach((g, i) => assertClose(`seq2seq ${name} gradient ${i}`, g.dataSync(), want[i]!, 1e-4));
  }
  return {
    name: `Seq2seq with attention, training step: batch ${B}, source ${SRC}, target ${TGT} (a tensor length), hidden ${H}`,
    call: "forward over source and target and the gradients of all weights",
    throughput: { perCall: B, unit: "sequences/s" },
    note: "Goal: AutoGraph's conversion within 3% of the hand-written loop.",
    reference: HAND_WRITTEN,
    systems: [
      { name: "stagecraft eager", enter: scDefaults, run: () => eager(...args) },
      { name: "stagecraft staged (AutoGraph)", enter: scDefaults, run: () => converted(...args) },
      { name: HAND_WRITTEN, enter: scDefaults, run: () => byHand(...args) },
      engineSystem(eager, args, converted(...args)),
      ...tfNotPorted(),
      jaxNotPorted("a loop over a length that is data, with gradients"),
    ],
  };
}
