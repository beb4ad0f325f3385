#!/usr/bin/python3
"""PyTorch DDP (gloo) training of the same GPT decoder zplan exec trains: pre-LN blocks, causal
self-attention, GeLU (tanh) MLP, tied LM head, no dropout, fp32, Adam. Prints one JSON line with the
median step time (without the first step) and tokens/s over the global batch.

usage: ddp_gpt.py NP LAYERS HIDDEN HEADS SEQ VOCAB MICRO_BATCH STEPS"""
import json, math, os, sys, time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, C, H):
        super().__init__()
        self.H = H
        self.ln1, self.ln2 = nn.LayerNorm(C), nn.LayerNorm(C)
        self.qkv, self.proj = nn.Linear(C, 3 * C), nn.Linear(C, C)
        self.fc, self.fcproj = nn.Linear(C, 4 * C), nn.Linear(4 * C, C)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(C, dim=2)
        q, k, v = (t.view(B, T, self.H, C // self.H).transpose(1, 2) for t in (q, k, v))
        att = (q @ k.transpose(-2, -1)) / math.sqrt(C // self.H)
        mask = torch.ones(T, T, dtype=torch.bool).tril()
        att = att.masked_fill(~mask, float("-inf")).softmax(dim=-1)
        y = (att @ v).transpose(1, 2).reshape(B, T, C)
        x = x + self.proj(y)
        return x + self.fcproj(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class GPT(nn.Module):
    def __init__(self, L, C, H, T, V):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(V, C), nn.Embedding(T, C)
        self.blocks = nn.ModuleList(Block(C, H) for _ in range(L))
        self.lnf = nn.LayerNorm(C)

    def forward(self, idx, tgt):
        T = idx.shape[1]
        x = self.wte(idx) + self.wpe(torch.arange(T))
        for b in self.blocks:
            x = b(x)
        logits = self.lnf(x) @ self.wte.weight.t()  # tied LM head
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), tgt.reshape(-1))


def worker(rank, np_, L, C, H, T, V, B, steps, out):
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29533")
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=np_)
    torch.manual_seed(1)
    model = nn.parallel.DistributedDataParallel(GPT(L, C, H, T, V))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(100 + rank)
    times = []
    for s in range(steps):
        tok = torch.randint(0, V, (B, T + 1), generator=g)
        dist.barrier()
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss = model(tok[:, :-1], tok[:, 1:])
        loss.backward()
        opt.step()
        dt = torch.tensor(time.perf_counter() - t0)
        dist.all_reduce(dt, op=dist.ReduceOp.MAX)
        times.append(dt.item())
    if rank == 0:
        m = sorted(times[1:]) if len(times) > 1 else times
        med = m[len(m) // 2] if len(m) % 2 else 0.5 * (m[len(m) // 2 - 1] + m[len(m) // 2])
        with open(out, "w") as f:
            json.dump({"ranks": np_, "step_s": med, "tokens_per_s": B * T * np_ / med,
                       "params": sum(p.numel() for p in model.parameters()), "torch": torch.__version__}, f)
    dist.destroy_process_group()


if __name__ == "__main__":
    np_, L, C, H, T, V, B, steps = (int(a) for a in sys.argv[1:9])
    out = "/tmp/zplan_ddp_%d.json" % os.getpid()
    mp.spawn(worker, args=(np_, L, C, H, T, V, B, steps, out), nprocs=np_, join=True)
    print(open(out).read())
    os.unlink(out)
