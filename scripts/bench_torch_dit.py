#!/usr/bin/env python3
"""PyTorch baseline for dit's BenchmarkForward and BenchmarkTrainStep.

The same network as package dit (internal/torchref/testdata/lgvae_dit.py is
the reference it is checked against), with tokens of dimension 16, MLP ratio
4, self-conditioning and a 256-dimensional time embedding: `small` (width
128, depth 4, 4 heads; a batch of 64 sets of 64 tokens) or `T` (DiT-T: width
384, depth 6, 6 heads; 256 sets), float32, on THREADS CPU threads. Prints
seconds per no-grad forward pass and per training step (forward, mean
squared error, backward, AdamW), best of the repeats, to be compared with
`go test -run XXX -bench 'TrainStep|Forward' ./dit/` in the same session.

Needs PyTorch (Debian: python3-torch, whose own BLAS is the reference one:
install libopenblas0-pthread too, which Debian then uses for it, and set
OPENBLAS_NUM_THREADS=THREADS).

  /usr/bin/python3 scripts/bench_torch_dit.py [small|T] [THREADS]
"""
import math
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, E, H, ratio):
        super().__init__()
        self.H = H
        self.norm1 = nn.LayerNorm(E, eps=1e-5)
        self.norm2 = nn.LayerNorm(E, eps=1e-5)
        self.qkv = nn.Linear(E, 3 * E)
        self.out = nn.Linear(E, E)
        self.mlp0 = nn.Linear(E, ratio * E)
        self.mlp1 = nn.Linear(ratio * E, E)
        self.ada = nn.Linear(E, 6 * E)

    def forward(self, h, cond, bias):
        B, N, E = h.shape
        H, Dh = self.H, E // self.H
        shift1, scale1, gate1, shift2, scale2, gate2 = self.ada(cond).chunk(6, dim=-1)
        a = self.norm1(h) * (1 + scale1) + shift1
        q, k, v = self.qkv(a).reshape(B, N, 3, H, Dh).permute(2, 0, 3, 1, 4)
        att = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(Dh) + bias, dim=-1)
        o = (att @ v).permute(0, 2, 1, 3).reshape(B, N, E)
        h = h + gate1 * self.out(o)
        f = self.norm2(h) * (1 + scale2) + shift2
        return h + gate2 * self.mlp1(F.gelu(self.mlp0(f)))


class DiT(nn.Module):
    def __init__(self, d=16, E=128, depth=4, H=4, ratio=4, tfd=256):
        super().__init__()
        self.tfd = tfd
        self.inp = nn.Linear(2 * d, E)
        self.t0 = nn.Linear(tfd, E)
        self.t2 = nn.Linear(E, E)
        self.blocks = nn.ModuleList(Block(E, H, ratio) for _ in range(depth))
        self.norm = nn.LayerNorm(E, eps=1e-5)
        self.final = nn.Linear(E, d)

    def forward(self, x, t, mask, xsc):
        m3 = mask.unsqueeze(-1)
        h = self.inp(torch.cat([x, xsc], dim=-1)) * m3
        half = self.tfd // 2
        freqs = torch.exp(-math.log(1e4) * torch.arange(half, dtype=torch.float32) / half)
        arg = t.unsqueeze(-1) * freqs
        temb = torch.cat([torch.cos(arg), torch.sin(arg)], dim=-1)
        cond = F.silu(self.t2(F.silu(self.t0(temb)))).unsqueeze(1)
        B, N = mask.shape
        bias = torch.zeros(B, 1, 1, N).masked_fill(mask.view(B, 1, 1, N) == 0, float("-inf"))
        for b in self.blocks:
            h = b(h, cond, bias)
        return self.final(self.norm(h)) * m3


def best(f, n):
    f()  # warm-up
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        f()
        times.append(time.perf_counter() - t0)
    return min(times)


def main():
    size = sys.argv[1] if len(sys.argv) > 1 else "small"
    threads = int(sys.argv[2]) if len(sys.argv) > 2 else 2
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    N, d = 64, 16
    if size == "T":
        B, net, reps = 256, DiT(d=d, E=384, depth=6, H=6), 3
    else:
        B, net, reps = 64, DiT(d=d), 10
    x, xsc, target = torch.randn(B, N, d), torch.randn(B, N, d), torch.randn(B, N, d)
    t, mask = torch.rand(B), torch.ones(B, N)
    opt = torch.optim.AdamW(net.parameters(), lr=1e-4)

    def forward():
        with torch.no_grad():
            net(x, t, mask, xsc)

    def step():
        opt.zero_grad(set_to_none=True)
        F.mse_loss(net(x, t, mask, xsc), target).backward()
        opt.step()

    print(f"torch {torch.__version__}, DiT {size}, {threads} threads: forward {best(forward, reps):.4f} s, "
          f"training step {best(step, reps):.4f} s")


if __name__ == "__main__":
    main()
