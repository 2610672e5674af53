#!/usr/bin/env python3
"""Independent PyTorch implementation of lgflow's LG-VAE (undirected) and DiT.

For every <case>.in.safetensors in the directory given as the only argument
(default: this script's directory) this script rebuilds the model from the
weights and configuration in the file, runs it in float64, and writes
<case>.out.safetensors:

  LG-VAE cases (metadata kind "vae"), evaluation mode (z = mu):
    mu, logvar            (nodes, d), nodes concatenated graph by graph
    edge_logits           (B, N, N, C), C = EdgeClasses + 1
    node_logits           (B*N, NodeClasses), if the model has node classes
    loss.total, loss.edge, loss.node, loss.kl
    grad.<param>          d loss.total / d param, for every parameter

  DiT cases (metadata kind "dit"):
    out                   (B, N, d)
    loss                  sum(out * input.probe)
    grad.<param>          d loss / d param

The model is written from the semantics of lgflow's Go code (vae.Model.Encode,
DecodeDense, Objective; dit.Model.Forward), not translated from it: ordinary
PyTorch ops, autograd for the gradients. Safetensors files are parsed here
directly (8-byte little-endian header length, JSON header, little-endian data),
so no safetensors package is needed; every tensor is F64.

Run it through `go test -tags reference -run TestGenerate ./internal/torchref`,
which writes the inputs first.
"""

import glob
import json
import math
import os
import struct
import sys

import numpy as np
import torch
import torch.nn.functional as F

torch.set_default_dtype(torch.float64)


# ---------------------------------------------------------------- safetensors

def load_safetensors(path):
    """Returns ({name: float64 ndarray}, metadata dict)."""
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n].decode("utf-8"))
    data = raw[8 + n:]
    meta = header.pop("__metadata__", {}) or {}
    out = {}
    for name, info in header.items():
        if info["dtype"] != "F64":
            raise ValueError(f"{path}: {name} has dtype {info['dtype']}, want F64")
        b, e = info["data_offsets"]
        arr = np.frombuffer(data[b:e], dtype="<f8").reshape(info["shape"])
        out[name] = arr.copy()
    return out, meta


def save_safetensors(path, tensors, metadata=None):
    """Writes float64 tensors, sorted by name, header padded to 8 bytes."""
    header = {}
    if metadata:
        header["__metadata__"] = metadata
    blobs, off = [], 0
    for name in sorted(tensors):
        a = np.array(tensors[name], dtype="<f8", order="C")  # keeps 0-d arrays 0-d
        b = a.tobytes()
        header[name] = {"dtype": "F64", "shape": list(a.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header, separators=(",", ":")).encode("utf-8")
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


# ---------------------------------------------------------------- helpers

def linear(P, prefix, x, bias=True):
    """y = x W^T + b with W (out, in), PyTorch's layout (lgflow's too)."""
    w = P[prefix + ".weight"]
    b = P.get(prefix + ".bias") if bias else None
    return F.linear(x, w, b)


def gelu(x):
    """The exact (erf) GELU."""
    return 0.5 * x * (1.0 + torch.erf(x / math.sqrt(2.0)))


def layer_norm(P, prefix, x, eps=1e-5):
    """Normalise over the last axis with the biased variance, then affine."""
    mean = x.mean(-1, keepdim=True)
    var = ((x - mean) ** 2).mean(-1, keepdim=True)
    y = (x - mean) / torch.sqrt(var + eps)
    return y * P[prefix + ".weight"] + P[prefix + ".bias"]


def params_from(arrays):
    return {k[len("param."):]: torch.tensor(v, requires_grad=True)
            for k, v in arrays.items() if k.startswith("param.")}


# ---------------------------------------------------------------- LG-VAE

def read_graphs(A):
    """Graphs of an LG-VAE case: (n, edges (M, 3), node labels or None,
    eigenvalues (K,), eigenvectors (n, K))."""
    gs = []
    g = 0
    while f"feat.{g}.vectors" in A:
        vec = A[f"feat.{g}.vectors"]
        labels = A.get(f"graph.{g}.node_labels")
        gs.append(dict(n=vec.shape[0], edges=A[f"graph.{g}.edges"].astype(int),
                       labels=None if labels is None else labels.astype(int),
                       values=A[f"feat.{g}.values"], vectors=vec))
        g += 1
    return gs


def vae_encode(P, cfg, gs):
    """The LG-VAE encoder: returns mu, logvar (nodes, d)."""
    K, h, d = cfg["k"], cfg["phi_width"], cfg["latent"]
    # phi's inputs per (node, slot): the eigenvector entry (times sqrt(n)
    # with scale_eigvecs), the eigenvalue plus the learnable offset, and a
    # mask of the slots j < min(n, K). Padded slots have entry 0 and
    # eigenvalue 0 (+ offset); their phi output is masked away.
    u_rows, lam_rows, slot_rows = [], [], []
    for g in gs:
        n = g["n"]
        scale = math.sqrt(n) if cfg.get("scale_eigvecs") else 1.0
        u = np.zeros((n, K))
        lam = np.zeros((n, K))
        slot = np.zeros((n, K))
        k = min(n, K)
        u[:, :k] = scale * g["vectors"][:, :k]
        lam[:, :k] = g["values"][None, :k]
        slot[:, :k] = 1
        u_rows.append(u)
        lam_rows.append(lam)
        slot_rows.append(slot)
    u = torch.tensor(np.concatenate(u_rows))          # (nodes, K)
    lam = torch.tensor(np.concatenate(lam_rows))      # (nodes, K)
    slot = torch.tensor(np.concatenate(slot_rows))    # (nodes, K)
    lam = lam + P["encoder.eig_eps"]                  # eps is (1, K)

    x = torch.stack([u, lam], dim=-1)                 # (nodes, K, 2)
    phi = torch.relu(linear(P, "encoder.phi.2", torch.relu(linear(P, "encoder.phi.0", x))))
    if cfg.get("phi_gate"):
        gate = linear(P, "encoder.phi_gate.2", torch.relu(linear(P, "encoder.phi_gate.0", lam.unsqueeze(-1))))
        phi = phi + gate * u.unsqueeze(-1)            # (nodes, K, h)
    hid = (phi * slot.unsqueeze(-1)).sum(dim=1)       # (nodes, h)

    offsets = np.cumsum([0] + [g["n"] for g in gs])
    if cfg.get("node_classes", 0) > 0 and any(g["labels"] is not None for g in gs):
        labels = np.concatenate([g["labels"] if g["labels"] is not None else np.zeros(g["n"], int) for g in gs])
        hid = hid + P["encoder.node_emb.weight"][torch.tensor(labels)]

    # Both directions of every undirected edge, with its class.
    src, dst, cls = [], [], []
    for g, off in zip(gs, offsets):
        for a, b, c in g["edges"]:
            src += [off + a, off + b]
            dst += [off + b, off + a]
            cls += [c, c]
    src, dst, cls = torch.tensor(src), torch.tensor(dst), torch.tensor(cls)

    for l in range(cfg["layers"]):
        pre = f"encoder.rho.{l}"
        # GINE with eps = 0: MLP(h_i + sum_{j->i} ReLU(h_j + E[class_ji])).
        msg = torch.relu(hid[src] + P[pre + ".conv.edge.weight"][cls])
        agg = torch.zeros_like(hid).index_add(0, dst, msg)
        z = linear(P, pre + ".conv.mlp.1", gelu(linear(P, pre + ".conv.mlp.0", hid + agg)))
        if cfg["norm"] == "layer":
            z = layer_norm(P, pre + ".norm", z)
        elif cfg["norm"] != "none":
            raise ValueError(f"norm {cfg['norm']} not implemented here")
        z = gelu(z)
        hid = z if l == 0 else hid + z

    out = linear(P, "encoder.head.2", gelu(linear(P, "encoder.head.0", hid)))
    mu, logvar = out[:, :d], out[:, d:]
    return mu, torch.clamp(logvar, -30.0, 20.0)


def vae_decode(P, cfg, z, sizes):
    """The LG-VAE decoder on padded latents z (B, N, d): edge logits
    (B, N, N, C) and node logits (B*N, a) or None."""
    B, N, d = z.shape
    C = cfg["edge_classes"] + 1
    node_logits = None
    if cfg.get("node_classes", 0) > 0:
        node_logits = linear(P, "decoder.node_head", z.reshape(B * N, d))
    p = linear(P, "decoder.proj", z)                  # (B, N, 2*C*d)
    q = p[..., :C * d].reshape(B, N, C, d).permute(0, 2, 1, 3)   # (B, C, N, d)
    k = p[..., C * d:].reshape(B, N, C, d).permute(0, 2, 1, 3)
    s = q @ k.transpose(-1, -2) / math.sqrt(d)        # (B, C, N, N)
    s = 0.5 * (s + s.transpose(-1, -2))

    mask = torch.zeros(B, 1, N, N)
    count = torch.ones(B, 1, N, 1)
    for b, n in enumerate(sizes):
        mask[b, 0, :n, :n] = 1 - torch.eye(n)
        count[b, 0, :n, 0] = max(n - 1, 1)
    # Row-wise DeepSet over row i's valid scores s_ij (j != i, real):
    # logit_ij = rho(GELU(w_self * s_ij + b_self + W_ctx phi(mean_j s_ij))).
    row_mean = (s * mask).sum(-1, keepdim=True) / count            # (B, C, N, 1)
    ctx = linear(P, "decoder.deepset.ctx", linear(P, "decoder.deepset.phi", row_mean), bias=False)  # (B, C, N, Ds)
    self_term = linear(P, "decoder.deepset.self", s.unsqueeze(-1))  # (B, C, N, N, Ds)
    hid = gelu(self_term + ctx.unsqueeze(3))
    logit = linear(P, "decoder.deepset.out", hid).squeeze(-1)      # (B, C, N, N)
    logit = logit.permute(0, 2, 3, 1)                               # (B, N, N, C)
    if cfg.get("symmetric_logits"):
        logit = 0.5 * (logit + logit.transpose(1, 2))
    return logit, node_logits, mask


def vae_case(A, meta):
    cfg = json.loads(meta["config"])
    if cfg.get("directed") or cfg.get("refine", 0) or cfg.get("eta", 0):
        raise ValueError("only undirected models without refinement or orbit noise are implemented")
    P = params_from(A)
    gs = read_graphs(A)
    sizes = [g["n"] for g in gs]
    B, N, d = len(gs), max(sizes), cfg["latent"]
    C = cfg["edge_classes"] + 1

    mu, logvar = vae_encode(P, cfg, gs)
    # Evaluation mode: z = mu, padded with zero rows.
    rows = []
    off = 0
    for n in sizes:
        rows.append(torch.cat([mu[off:off + n], torch.zeros(N - n, d)]))
        off += n
    z = torch.stack(rows)
    edge_logits, node_logits, mask = vae_decode(P, cfg, z, sizes)

    # Edge cross-entropy, averaged over valid ordered pairs (i != j, real).
    target = torch.zeros(B, N, N, dtype=torch.long)
    for b, g in enumerate(gs):
        for a, c, lab in g["edges"]:
            target[b, a, c] = lab + 1
            target[b, c, a] = lab + 1
    nll = -torch.log_softmax(edge_logits, -1).gather(-1, target.unsqueeze(-1)).squeeze(-1)
    w = mask.squeeze(1)
    loss_edge = (nll * w).sum() / w.sum()
    total = loss_edge

    loss_node = torch.zeros(())
    if node_logits is not None and any(g["labels"] is not None for g in gs):
        nt = torch.zeros(B * N, dtype=torch.long)
        nw = torch.zeros(B * N)
        for b, g in enumerate(gs):
            if g["labels"] is not None:
                nt[b * N:b * N + g["n"]] = torch.tensor(g["labels"])
            nw[b * N:b * N + g["n"]] = 1
        nll = -torch.log_softmax(node_logits, -1).gather(-1, nt.unsqueeze(-1)).squeeze(-1)
        loss_node = (nll * nw).sum() / nw.sum()
        total = total + loss_node

    # KL(N(mu, e^logvar) || N(0, I)), summed over d, averaged over nodes.
    kl = 0.5 * (mu ** 2 + torch.exp(logvar) - 1 - logvar).sum(-1).mean()
    if cfg["kl_weight"] != 0:
        total = total + cfg["kl_weight"] * kl
    total.backward()

    out = {"mu": mu, "logvar": logvar, "edge_logits": edge_logits,
           "loss.total": total, "loss.edge": loss_edge, "loss.node": loss_node, "loss.kl": kl}
    if node_logits is not None:
        out["node_logits"] = node_logits
    out = {k: v.detach().numpy() for k, v in out.items()}
    for name, p in P.items():
        out["grad." + name] = (p.grad if p.grad is not None else torch.zeros_like(p)).numpy()
    return out


# ---------------------------------------------------------------- DiT

def dit_case(A, meta):
    cfg = json.loads(meta["config"])
    P = params_from(A)
    x = torch.tensor(A["input.x"])
    B, N, d = x.shape
    t = torch.tensor(A["input.t"])
    mask = torch.tensor(A["input.mask"]) if "input.mask" in A else torch.ones(B, N)
    E, H = cfg["width"], cfg["heads"]
    Dh = E // H
    m3 = mask.unsqueeze(-1)

    h = x
    if cfg.get("self_cond"):
        xsc = torch.tensor(A["input.xsc"]) if "input.xsc" in A else torch.zeros(B, N, d)
        h = torch.cat([x, xsc], dim=-1)
    h = linear(P, "x_embed", h) * m3

    # Sinusoidal time embedding, cosines first: f_k = 10000^(-k/half).
    half = cfg["time_freq_dim"] // 2
    freqs = torch.exp(-math.log(1e4) * torch.arange(half, dtype=torch.float64) / half)
    arg = t.unsqueeze(-1) * freqs
    temb = torch.cat([torch.cos(arg), torch.sin(arg)], dim=-1)
    c = linear(P, "t_embed.2", F.silu(linear(P, "t_embed.0", temb)))
    cond = F.silu(c).unsqueeze(1)                     # (B, 1, E)

    # Key-padding attention: query i attends to key j iff mask_j = 1.
    bias = torch.zeros(B, 1, 1, N).masked_fill(mask.view(B, 1, 1, N) == 0, float("-inf"))
    for i in range(cfg["depth"]):
        pre = f"blocks.{i}"
        shift1, scale1, gate1, shift2, scale2, gate2 = linear(P, pre + ".adaLN", cond).chunk(6, dim=-1)
        a = layer_norm(P, pre + ".norm1", h) * (1 + scale1) + shift1
        qkv = linear(P, pre + ".attn.qkv", a).reshape(B, N, 3, H, Dh).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]              # (B, H, N, Dh)
        att = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(Dh) + bias, dim=-1)
        o = (att @ v).permute(0, 2, 1, 3).reshape(B, N, E)
        h = h + gate1 * linear(P, pre + ".attn.out", o)
        f = layer_norm(P, pre + ".norm2", h) * (1 + scale2) + shift2
        h = h + gate2 * linear(P, pre + ".mlp.1", gelu(linear(P, pre + ".mlp.0", f)))
    out = linear(P, "final", layer_norm(P, "final_norm", h)) * m3

    loss = (out * torch.tensor(A["input.probe"])).sum()
    loss.backward()
    res = {"out": out.detach().numpy(), "loss": loss.detach().numpy()}
    for name, p in P.items():
        res["grad." + name] = (p.grad if p.grad is not None else torch.zeros_like(p)).numpy()
    return res


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    paths = sorted(glob.glob(os.path.join(root, "*.in.safetensors")))
    if not paths:
        sys.exit(f"no *.in.safetensors in {root}")
    for path in paths:
        A, meta = load_safetensors(path)
        kind = meta.get("kind")
        if kind == "vae":
            out = vae_case(A, meta)
        elif kind == "dit":
            out = dit_case(A, meta)
        else:
            sys.exit(f"{path}: unknown kind {kind!r}")
        dst = path[:-len(".in.safetensors")] + ".out.safetensors"
        save_safetensors(dst, out, {"generator": "lgvae_dit.py", "torch": torch.__version__})
        print(f"{os.path.basename(dst)}: {len(out)} tensors")


if __name__ == "__main__":
    main()
