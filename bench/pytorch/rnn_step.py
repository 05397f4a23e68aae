# The RNN training step of bench/pytorch-rnn.ts in PyTorch eager, driven over stdin/stdout so the
# Node side can interleave its rounds with ours (one process each, one thread each).
#   python rnn_step.py WEIGHTS.bin SEQ BATCH
# WEIGHTS.bin: float32 little-endian W [64, 256], U [256, 256], b [256], xs [SEQ, BATCH, 64].
# Commands, one per line:
#   grads OUT.bin  write the loss and the gradients of W, U, b at the initial weights (float64 then
#                  float32 arrays), print "ok"
#   run N          N training steps (forward, gradients, SGD update), print the per-step ms as JSON
import json
import sys
import time

import numpy as np
import torch

torch.set_num_threads(1)
torch.manual_seed(0)
INPUT, HIDDEN, LR = 64, 256, 0.01
path, seq, batch = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
flat = np.fromfile(path, dtype="<f4")
sizes = [INPUT * HIDDEN, HIDDEN * HIDDEN, HIDDEN, seq * batch * INPUT]
parts = np.split(flat, np.cumsum(sizes)[:-1])
W0 = torch.from_numpy(parts[0].reshape(INPUT, HIDDEN).copy())
U0 = torch.from_numpy(parts[1].reshape(HIDDEN, HIDDEN).copy())
b0 = torch.from_numpy(parts[2].copy())
xs = torch.from_numpy(parts[3].reshape(seq, batch, INPUT).copy())


def loss_and_grads(W, U, b):
    W, U, b = (t.detach().requires_grad_(True) for t in (W, U, b))
    h = torch.zeros(batch, HIDDEN)
    for t in range(seq):
        h = torch.tanh(xs[t] @ W + h @ U + b)
    loss = h.mean()
    gW, gU, gb = torch.autograd.grad(loss, [W, U, b])
    return loss, (gW, gU, gb)


weights = [W0.clone(), U0.clone(), b0.clone()]


def step():
    loss, grads = loss_and_grads(*weights)
    with torch.no_grad():
        for w, g in zip(weights, grads):
            w.sub_(g * LR)
    return loss


print("ready", flush=True)
for line in sys.stdin:
    cmd = line.split()
    if not cmd:
        continue
    if cmd[0] == "grads":
        loss, grads = loss_and_grads(W0, U0, b0)
        with open(cmd[1], "wb") as f:
            f.write(np.array([loss.item()], dtype="<f8").tobytes())
            for g in grads:
                f.write(g.numpy().astype("<f4").tobytes())
        print("ok", flush=True)
    elif cmd[0] == "run":
        times = []
        for _ in range(int(cmd[1])):
            t0 = time.perf_counter()
            step()
            times.append((time.perf_counter() - t0) * 1000)
        print(json.dumps(times), flush=True)
    else:
        print(json.dumps({"error": f"unknown command {cmd[0]}"}), flush=True)
