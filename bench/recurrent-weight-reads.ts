// Where a recurrent layer reads its weights: at every step of its loop over time (what
// nn.LSTM and nn.GRU do) or once before the loop (what they did while a tape could not see a
// variable read inside a staged loop body). Both ways are measured in alternating rounds in
// one process, in CPU time per call: eager forward + backward, a staged training step (a tape
// inside the staged function) and graph AD (a tape around a call of a staged forward). Prints
// the median time per call of each way and the median of the per-round ratios (once / every
// step: > 1 means reading at every step is faster), and whether the staged graphs have the same ops.
//
//   node --import tsx bench/recurrent-weight-reads.ts [ROUNDS=9]
import * as sc from "../src/api/index.js";
import { median, randomValues } from "./common.js";

const [B, T, F, H] = [16, 24, 32, 64];
const rounds = Number(process.argv[2] ?? 9);
const xs = sc.tensor(randomValues(B * T * F, 3), "float32", [B, T, F]);

/** The loop with the weights read once, before it (the layer's former code). */
const scanOnce = sc.autograph(
  function scanOnce(step: (x: sc.Tensor, s: sc.Tensor[]) => sc.Tensor[], seq: sc.Tensor, state: sc.Tensor[]) {
    const outputs: sc.Tensor[] = [];
    for (const x of seq as unknown as sc.Tensor[]) {
      state = step(x, state);
      outputs.push(state[0]!);
    }
    return [outputs, state];
  },
  { scope: {} },
) as (step: (x: sc.Tensor, s: sc.Tensor[]) => sc.Tensor[], seq: sc.Tensor, state: sc.Tensor[]) => [sc.Tensor[] | sc.Tensor, sc.Tensor[]];

function ways(kind: "LSTM" | "GRU") {
  const layer = kind === "LSTM" ? new sc.nn.LSTM(H, { seed: 1 }) : new sc.nn.GRU(H, { seed: 1 });
  layer.call(xs);
  const cell = layer.cell as sc.nn.LSTMCell & sc.nn.GRUCell;
  const everyStep = (x: sc.Tensor) => sc.sum(layer.call(x) as sc.Tensor);
  const once = (x: sc.Tensor) => {
    const w = cell.weights();
    const s0 = kind === "LSTM" ? [cell.zeroState(B), cell.zeroState(B)] : [cell.zeroState(B)];
    const step = kind === "LSTM" ? (xt: sc.Tensor, s: sc.Tensor[]) => cell.step(w, xt, s as [sc.Tensor, sc.Tensor]) : (xt: sc.Tensor, s: sc.Tensor[]) => [(cell as sc.nn.GRUCell).step(w, xt, s[0]!)];
    const [outs] = scanOnce(step, sc.transpose(x, [1, 0, 2]), s0);
    return sc.sum(Array.isArray(outs) ? sc.stack(outs, 0) : outs);
  };
  const params = layer.parameters();
  const tapeGrads = (loss: (x: sc.Tensor) => sc.Tensor) => (x: sc.Tensor) => {
    const tape = new sc.GradientTape();
    const l = tape.record(() => loss(x));
    return tape.gradient(l, params) as sc.Tensor[];
  };
  const modes = (loss: (x: sc.Tensor) => sc.Tensor) => {
    const stagedLoss = sc.stage(loss, { autograph: false });
    return {
      eager: tapeGrads(loss),
      "staged step": sc.stage(tapeGrads(loss), { autograph: false }),
      "graph AD": tapeGrads((x) => stagedLoss(x)),
      forwardGraph: () => String(stagedLoss.concrete(xs)),
    };
  };
  return { everyStep: modes(everyStep), once: modes(once) };
}

const cpuMs = (f: () => void, calls: number): number => {
  const t0 = process.cpuUsage();
  for (let i = 0; i < calls; i++) f();
  const t = process.cpuUsage(t0);
  return (t.user + t.system) / 1000 / calls;
};

for (const kind of ["LSTM", "GRU"] as const) {
  const w = ways(kind);
  // (the same ops, up to their order and operands' order: the reads are hoisted before the loop)
  const ops = (g: string) => [...g.matchAll(/= (\w+)\(/g)].map((m) => m[1]).sort().join(" ");
  console.log(`${kind} h${H} batch ${B} time ${T} features ${F}: staged forward graphs have the same ops: ${ops(w.everyStep.forwardGraph()) === ops(w.once.forwardGraph())}`);
  for (const mode of ["eager", "staged step", "graph AD"] as const) {
    const calls = mode === "eager" ? 2 : 10;
    const a = w.everyStep[mode];
    const b = w.once[mode];
    a(xs); b(xs);
    const ta: number[] = [];
    const tb: number[] = [];
    const ratio: number[] = [];
    for (let r = 0; r < rounds; r++) {
      // (alternating which goes first)
      let x: number, y: number;
      if (r % 2 === 0) {
        x = cpuMs(() => a(xs), calls);
        y = cpuMs(() => b(xs), calls);
      } else {
        y = cpuMs(() => b(xs), calls);
        x = cpuMs(() => a(xs), calls);
      }
      ta.push(x);
      tb.push(y);
      ratio.push(y / x);
    }
    console.log(`  ${mode.padEnd(12)} every step ${median(ta).toFixed(2)} ms, once ${median(tb).toFixed(2)} ms, once/every step ${median(ratio).toFixed(3)}`);
  }
}
