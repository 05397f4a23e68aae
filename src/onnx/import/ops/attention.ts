/**
 * ONNX Attention (opset 23+): scaled dot-product attention with an optional mask, causal
 * masking, sliding windows, a key/value cache, grouped-query heads and softcap, composed of
 * registry ops as ONNX's reference describes it. A row with no attendable key gives zeros.
 */
import type { Tensor } from "../../../core/tensor.js";
import * as ops from "../../../ops/index.js";
import { onnxOp } from "../op-table.js";
import { Slot } from "../scope.js";

/** [B, S, H * d] -> [B, H, S, d]. */
const splitHeads = (x: Tensor, heads: number): Tensor => ops.transpose(ops.reshape(x, [x.shape[0]!, x.shape[1]!, heads, x.shape[2]! / heads]), [0, 2, 1, 3]);

onnxOp("Attention", {
  run(n) {
    let q = n.input(0);
    let k = n.input(1);
    let v = n.input(2);
    const mask = n.optional(3);
    const pastK = n.optional(4);
    const pastV = n.optional(5);
    const nonpad = n.optional(6);
    const threeD = q.rank === 3;
    if (threeD) {
      const qh = n.int("q_num_heads");
      const kvh = n.int("kv_num_heads");
      if (qh === undefined || kvh === undefined) throw n.fail("3-D inputs need q_num_heads and kv_num_heads");
      q = splitHeads(q, qh);
      k = splitHeads(k, kvh);
      v = splitHeads(v, kvh);
    } else if (q.rank !== 4) throw n.fail(`Q must have rank 3 or 4, got shape [${q.shape.join(", ")}]`);
    const dtype = q.dtype;
    const scale = Math.sqrt(n.float("scale") ?? 1 / Math.sqrt(q.shape[3]!));
    if (pastK !== null) k = ops.concat([pastK, k], 2);
    if (pastV !== null) v = ops.concat([pastV, v], 2);
    const presentK = k;
    const presentV = v;
    const S = q.shape[2]!;
    const L = k.shape[2]!;
    const negInf = ops.scalar(-Infinity, dtype);
    const zero = ops.scalar(0, dtype);
    // The additive bias: 0 where a key may be attended, -inf where it may not.
    let m = mask;
    if (m !== null && m.shape[m.rank - 1]! < L) {
      const pad = L - m.shape[m.rank - 1]!;
      m = ops.pad(m, m.shape.map((_, d) => (d === m!.rank - 1 ? [0, pad] : [0, 0]) as [number, number]), m.dtype === "bool" ? false : -Infinity);
    }
    const toBias = (b: Tensor): Tensor => (b.dtype === "bool" ? ops.where(b, zero, negInf) : b);
    let bias: Tensor = ops.full([S, L], 0, dtype);
    if (m !== null) bias = ops.add(bias, toBias(m));
    const causal = n.int("is_causal", 0) !== 0;
    const left = n.int("left_window_size", -1);
    const right = n.int("right_window_size", -1);
    // Offset of the query block among the keys (per batch with nonpad_kv_seqlen).
    const offset: Tensor = pastK !== null ? ops.scalar(pastK.shape[2]!, "float64") : nonpad !== null ? ops.reshape(ops.sub(ops.cast(nonpad, "float64"), S), [-1, 1, 1, 1]) : ops.scalar(0, "float64");
    const i = ops.reshape(ops.arange(0, S, 1, "float64"), [S, 1]);
    const j = ops.reshape(ops.arange(0, L, 1, "float64"), [1, L]);
    const diff = ops.sub(ops.add(i, offset), j); // query position minus key position
    if (causal) bias = ops.add(bias, ops.where(ops.greaterEqual(diff, 0), zero, negInf));
    if (left >= 0) bias = ops.add(bias, ops.where(ops.lessEqual(diff, left), zero, negInf));
    if (right >= 0) bias = ops.add(bias, ops.where(ops.lessEqual(ops.neg(diff), right), zero, negInf));
    if (nonpad !== null) {
      const valid = ops.less(j, ops.reshape(ops.cast(nonpad, "float64"), [-1, 1, 1, 1]));
      bias = ops.add(bias, ops.where(valid, zero, negInf));
    }
    // Grouped-query attention: each key/value head serves consecutive query heads.
    const qHeads = q.shape[1]!;
    const kvHeads = k.shape[1]!;
    if (qHeads !== kvHeads) {
      if (qHeads % kvHeads !== 0) throw n.fail(`${qHeads} query heads are not a multiple of ${kvHeads} key/value heads`);
      const rep = (t: Tensor): Tensor => {
        const [B, H, T, D] = t.shape as [number, number, number, number];
        return ops.reshape(ops.broadcastTo(ops.expandDims(t, 2), [B, H, qHeads / kvHeads, T, D]), [B, qHeads, T, D]);
      };
      k = rep(k);
      v = rep(v);
    }
    let qk = ops.matmul(ops.mul(q, scale), ops.mul(k, scale), { transposeB: true });
    const softcap = n.float("softcap", 0);
    if (softcap > 0) qk = ops.mul(ops.tanh(ops.div(qk, softcap)), softcap);
    const mode = n.int("qk_matmul_output_mode", 0);
    const withBias = ops.add(qk, bias);
    // Rows whose bias is -inf everywhere attend nothing: zeros, not NaN.
    const dead = ops.equal(ops.max(bias, -1, true), -Infinity);
    const safeLogits = ops.where(dead, zero, withBias);
    const probs = ops.where(dead, zero, ops.softmax(safeLogits, -1));
    let y = ops.matmul(probs, v);
    if (threeD) {
      y = ops.transpose(y, [0, 2, 1, 3]);
      y = ops.reshape(y, [y.shape[0]!, y.shape[1]!, -1]);
    }
    const qkOut = mode === 3 ? probs : mode === 2 ? withBias : qk;
    return [y, presentK, presentV, qkOut];
  },
});

/**
 * LinearAttention (a recurrent state S [B, Hkv, dk, dv] updated per step): "linear" S += k v^T,
 * "gated" decays S by exp(decay) first, "delta" writes beta (v - S^T k) instead of v, and
 * "gated_delta" does both; each output row is scale * q^T S (key/value heads shared by groups
 * of query heads). Unrolled over the sequence at trace time.
 */
onnxOp("LinearAttention", {
  run(n) {
    const qh = n.int("q_num_heads");
    const kvh = n.int("kv_num_heads");
    if (qh === undefined || kvh === undefined || qh <= 0 || kvh <= 0 || qh % kvh !== 0) throw n.fail("needs q_num_heads, a positive multiple of kv_num_heads");
    const rule = n.string("update_rule", "gated_delta");
    if (!["linear", "gated", "delta", "gated_delta"].includes(rule)) throw n.fail(`unknown update_rule ${JSON.stringify(rule)}`);
    const gating = rule === "gated" || rule === "gated_delta";
    const delta = rule === "delta" || rule === "gated_delta";
    const query = n.input(0);
    const outDtype = query.dtype;
    const f32 = (t: Tensor) => ops.cast(t, "float32");
    const q = f32(splitHeads(query, qh));
    const k = f32(splitHeads(n.input(1), kvh));
    const v = f32(splitHeads(n.input(2), kvh));
    const past = n.optional(3);
    const decayIn = n.optional(4);
    const betaIn = n.optional(5);
    if (gating !== (decayIn !== null) || delta !== (betaIn !== null)) throw n.fail(`update_rule ${rule} needs ${gating ? "" : "no "}decay and ${delta ? "" : "no "}beta`);
    const [B, , T, dk] = q.shape as [number, number, number, number];
    const dv = v.shape[3]!;
    const decay = decayIn === null ? null : decayIn.shape[2] === kvh ? ops.transpose(ops.reshape(f32(decayIn), [B, T, kvh, 1]), [0, 2, 1, 3]) : f32(splitHeads(decayIn, kvh));
    const beta = betaIn === null ? null : ops.transpose(ops.reshape(f32(betaIn), [B, T, betaIn.shape[2]!, 1]), [0, 2, 1, 3]);
    let state = past === null ? ops.full([B, kvh, dk, dv], 0, "float32") : f32(past);
    const scaleAttr = n.float("scale", 0);
    const scale = scaleAttr === 0 ? 1 / Math.sqrt(dk) : scaleAttr;
    const step = (t: Tensor, i: number): Tensor => ops.squeeze(ops.slice(t, [null, null, i], [null, null, i + 1]), 2);
    const group = qh / kvh;
    const outs: Tensor[] = [];
    for (let i = 0; i < T; i++) {
      const qt = step(q, i);
      const kt = step(k, i);
      let vt = step(v, i);
      if (decay !== null) state = ops.mul(state, ops.expandDims(ops.exp(step(decay, i)), -1));
      if (beta !== null) {
        const retrieved = ops.squeeze(ops.matmul(ops.expandDims(kt, 2), state), 2);
        vt = ops.mul(step(beta, i), ops.sub(vt, retrieved));
      }
      state = ops.add(state, ops.mul(ops.expandDims(kt, -1), ops.expandDims(vt, -2)));
      const read = group === 1 ? state : ops.reshape(ops.broadcastTo(ops.expandDims(state, 2), [B, kvh, group, dk, dv]), [B, qh, dk, dv]);
      outs.push(ops.mul(ops.squeeze(ops.matmul(ops.expandDims(qt, 2), read), 2), scale));
    }
    const y = ops.reshape(ops.transpose(ops.stack(outs, 2), [0, 2, 1, 3]), [B, T, qh * dv]);
    return [ops.cast(y, outDtype), ops.cast(state, past?.dtype ?? outDtype)];
  },
});

/**
 * ai.onnx.preview FlexAttention: Q [B, Hq, L, E], K [B, Hkv, S, E], V [B, Hkv, S, Ev] (Hq a
 * multiple of Hkv: key/value heads repeated for grouped queries); scores (Q sqrt(scale))
 * (K sqrt(scale))^T with scale 1/sqrt(E) by default, then the score_mod subgraph, softmax over
 * the keys (float16 in float32), the prob_mod subgraph, and the product with V, as the
 * operator's function body does.
 */
onnxOp(
  "FlexAttention",
  {
    run(n) {
      const [q0, k0, v0] = [n.input(0), n.input(1), n.input(2)];
      if (q0.rank !== 4 || k0.rank !== 4 || v0.rank !== 4) throw n.fail("Q, K and V must be [batch, heads, sequence, head size]");
      const [B, Hq, , E] = q0.shape as [number, number, number, number];
      const [, Hkv, S] = k0.shape as [number, number, number];
      if (k0.shape[0] !== B || v0.shape[0] !== B || v0.shape[1] !== Hkv || v0.shape[2] !== S || k0.shape[3] !== E || Hkv < 1 || Hq % Hkv !== 0) {
        throw n.fail(`incompatible shapes Q [${q0.shape.join(", ")}], K [${k0.shape.join(", ")}], V [${v0.shape.join(", ")}]`);
      }
      const dtype = q0.dtype === "float16" ? "float32" : q0.dtype;
      const [q, k, v] = [q0, k0, v0].map((t) => (t.dtype === dtype ? t : ops.cast(t, dtype))) as [Tensor, Tensor, Tensor];
      const repeat = (t: Tensor): Tensor => {
        if (Hq === Hkv) return t;
        const [, , s, d] = t.shape as [number, number, number, number];
        return ops.reshape(ops.broadcastTo(ops.expandDims(t, 2), [B, Hkv, Hq / Hkv, s, d]), [B, Hq, s, d]);
      };
      const scale = n.float("scale") ?? 1 / Math.sqrt(E);
      const root = Math.sqrt(scale);
      let scores = ops.matmul(ops.mul(q, root), ops.mul(repeat(k), root), { transposeB: true });
      const modded = (name: string, t: Tensor): Tensor => {
        if (!n.hasAttr(name)) return t;
        const outs = n.runSubgraph(n.graph(name), [Slot.of(t)], name);
        if (outs.length !== 1) throw n.fail(`${name} must return one tensor, got ${outs.length} values`);
        const y = outs[0]!.tensor();
        if (y.rank !== t.rank || y.shape.some((d, i) => d !== t.shape[i])) throw n.fail(`${name} returned shape [${y.shape.join(", ")}], expected [${t.shape.join(", ")}]`);
        return y.dtype === t.dtype ? y : ops.cast(y, t.dtype);
      };
      scores = modded("score_mod", scores);
      const probs = modded("prob_mod", ops.softmax(scores, -1));
      const y = ops.matmul(probs, repeat(v));
      return y.dtype === q0.dtype ? y : ops.cast(y, q0.dtype);
    },
  },
  "ai.onnx.preview",
);
