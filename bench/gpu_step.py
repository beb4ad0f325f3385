#!/usr/bin/env python3
"""bench/gpu_step.py [-o FILE] [--budget S] [--quick] -- issue #29's small-work regime measured on one GPU: real
training steps of GPT-2-shaped models (350M, 760M, 1.3B; sequence 1,024) as one rank of a Megatron-LM tensor-
parallel group of TP 1-8 runs them, micro-batch 1-8, everything a rank does but the wire.

Each rank's step is Megatron's: the block's column- and row-parallel linears at 1/TP of the width (QKV, the
attention's projection, the MLP's up and down), 1/TP of the heads, the vocabulary-parallel embedding and loss
(Megatron's vocab-parallel cross-entropy: its max, sum-of-exponentials and target-logit all-reduces), and the
tensor-parallel all-reduces where Megatron puts them (the row-parallel outputs' forward, the column-parallel
inputs' backward) as real NCCL calls on a one-rank communicator: each costs what it costs the host (c10d's call,
NCCL's launch) and NCCL's one-rank kernel, not a link's transfer. Mixed precision as Megatron's bf16: bf16
parameters and activations, fp32 main parameters and gradients, the grad-norm clip and a fused Adam over the fp32
copies (torch's multi-tensor _foreach / fused kernels, as apex's multi_tensor_apply), the bf16 copies refreshed.
No dropout, no activation checkpointing, attention as F.scaled_dot_product_attention (flash) or unfused (QK^T,
masked softmax, AV: Megatron's of 2021-2022 without FlashAttention).

For each configuration (one JSON line, written as soon as it is measured, so a run cut short keeps what it has):
  step_ms       wall time of a whole step (zero_grad, forward, backward, optimizer), synchronised, median of
                --steps after 3 warm-up steps
  issue_ms      the host's time to issue that step (perf_counter from its start until the last launch returns,
                before the synchronisation): issue_ms ~ step_ms means the GPU waited for the host
  kernels       CUDA kernels of one step (torch.profiler), gpu_busy_ms the sum of their durations
  fwd_ms, bwd_ms, optim_ms   the step's parts on the GPU (CUDA events between them)
Exit 0 ok (a configuration that fails is a line with "error"), 2 no CUDA device (or PyTorch missing).
"""
import argparse
import json
import math
import os
import statistics
import sys
import time

MODELS = {"350M": (24, 1024, 16), "760M": (24, 1536, 16), "1.3B": (24, 2048, 32)}  # layers, hidden, heads
VOCAB, SEQ = 50257, 1024


def build(torch, L, C, H, tp, attn, dev, dt):
    import torch.distributed as dist
    import torch.nn as nn
    import torch.nn.functional as F

    class CopyToTP(torch.autograd.Function):  # Megatron's f: identity forward, all-reduce backward
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, g):
            if tp > 1:
                g = g.contiguous()
                dist.all_reduce(g)
            return g

    class ReduceFromTP(torch.autograd.Function):  # Megatron's g: all-reduce forward, identity backward
        @staticmethod
        def forward(ctx, x):
            if tp > 1:
                x = x.contiguous()
                dist.all_reduce(x)
            return x

        @staticmethod
        def backward(ctx, g):
            return g

    def ar_fwd(x, op=dist.ReduceOp.SUM if dist.is_available() else None):
        if tp > 1:
            dist.all_reduce(x, op=op)
        return x

    hl, cl = H // tp, C // tp  # heads and width of this rank
    step = 128 * tp  # Megatron pads the vocabulary to a multiple of 128 x TP (--make-vocab-size-divisible-by)
    Vp = (VOCAB + step - 1) // step * step // tp  # vocabulary rows of this rank

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(C), nn.LayerNorm(C)
            self.qkv, self.proj = nn.Linear(C, 3 * cl), nn.Linear(cl, C, bias=False)
            self.fc, self.fcproj = nn.Linear(C, 4 * cl), nn.Linear(4 * cl, C, bias=False)
            self.proj_b, self.fcproj_b = nn.Parameter(torch.zeros(C)), nn.Parameter(torch.zeros(C))

        def forward(self, x):
            B, T, _ = x.shape
            q, k, v = self.qkv(CopyToTP.apply(self.ln1(x))).split(cl, dim=2)
            q, k, v = (t.view(B, T, hl, C // H).transpose(1, 2) for t in (q, k, v))
            if attn == "flash":
                y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            else:
                a = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(C // H))
                a = a.masked_fill(self.mask[:T, :T], float("-inf")).softmax(dim=-1)
                y = a @ v
            y = y.transpose(1, 2).reshape(B, T, cl)
            x = x + ReduceFromTP.apply(self.proj(y)) + self.proj_b
            h = F.gelu(self.fc(CopyToTP.apply(self.ln2(x))), approximate="tanh")
            return x + ReduceFromTP.apply(self.fcproj(h)) + self.fcproj_b

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte, self.wpe = nn.Parameter(torch.randn(Vp, C) * 0.02), nn.Embedding(SEQ, C)
            self.blocks = nn.ModuleList(Block() for _ in range(L))
            self.lnf = nn.LayerNorm(C)

        def forward(self, idx, tgt):
            B, T = idx.shape
            lo = 0  # rank 0's rows of the vocabulary: [0, Vp)
            local = idx - lo
            outside = (local < 0) | (local >= Vp)
            e = F.embedding(local.masked_fill(outside, 0), self.wte).masked_fill(outside.unsqueeze(-1), 0.0)
            x = ReduceFromTP.apply(e) + self.wpe(torch.arange(T, device=idx.device))
            for b in self.blocks:
                x = b(x)
            logits = F.linear(CopyToTP.apply(self.lnf(x)), self.wte).float()  # [B, T, Vp]
            if tp == 1:
                return F.cross_entropy(logits.view(-1, Vp), tgt.view(-1))
            # Megatron's vocab-parallel cross-entropy: max, sum of exponentials and target logit all-reduced
            m = ar_fwd(logits.max(dim=-1)[0].detach(), dist.ReduceOp.MAX)
            z = logits - m.unsqueeze(-1)
            tl = tgt - lo
            tout = (tl < 0) | (tl >= Vp)
            pick = z.gather(-1, tl.masked_fill(tout, 0).unsqueeze(-1)).squeeze(-1).masked_fill(tout, 0.0)
            s = ReduceFromTP.apply(z.exp().sum(dim=-1))
            pick = ReduceFromTP.apply(pick)
            return (s.log() - pick).mean()

    with torch.device(dev):
        net = GPT()
    for b in net.blocks:
        b.register_buffer("mask", torch.ones(SEQ, SEQ, dtype=torch.bool, device=dev).triu(1), persistent=False)
    return net.to(dt)


class Trainer:
    """Megatron's bf16 optimizer: fp32 main copies of the bf16 parameters and of their gradients, the global
    grad norm clipped at 1.0, a fused Adam over the main copies, the bf16 parameters copied back."""

    def __init__(self, torch, net, fused):
        self.torch, self.net = torch, net
        self.params = [p for p in net.parameters()]
        self.main = [p.detach().float().clone() for p in self.params]
        for m in self.main:
            m.grad = torch.zeros_like(m)
        kw = {"fused": True} if fused else {"foreach": True}
        self.opt = torch.optim.AdamW(self.main, lr=1e-4, weight_decay=0.1, **kw)

    def zero(self):
        for p in self.params:
            p.grad = None

    def step(self):
        torch = self.torch
        grads = [p.grad for p in self.params]
        mg = [m.grad for m in self.main]
        torch._foreach_copy_(mg, grads)
        norm = torch.linalg.vector_norm(torch.stack(torch._foreach_norm(mg)))
        scale = (1.0 / (norm + 1e-6)).clamp(max=1.0)
        torch._foreach_mul_(mg, scale)
        self.opt.step()
        torch._foreach_copy_([p.data for p in self.params], self.main)


def one_config(torch, model, tp, mb, attn, steps, dev, dt):
    L, C, H = MODELS[model]
    torch.manual_seed(0)
    net = build(torch, L, C, H, tp, attn, dev, dt)
    tr = Trainer(torch, net, fused=(dev == "cuda"))
    idx = torch.randint(0, VOCAB, (mb, SEQ), device=dev)
    tgt = torch.randint(0, VOCAB, (mb, SEQ), device=dev)
    cuda = dev == "cuda"
    sync = torch.cuda.synchronize if cuda else (lambda: None)

    def step(ev=None):
        tr.zero()
        if ev:
            ev[0].record()
        loss = net(idx, tgt)
        if ev:
            ev[1].record()
        loss.backward()
        if ev:
            ev[2].record()
        tr.step()
        if ev:
            ev[3].record()
        return loss

    for _ in range(3):
        step()
    sync()
    walls, issues, parts = [], [], []
    for _ in range(steps):
        ev = [torch.cuda.Event(enable_timing=True) for _ in range(4)] if cuda else None
        t0 = time.perf_counter()
        loss = step(ev)
        t1 = time.perf_counter()
        sync()
        t2 = time.perf_counter()
        walls.append(t2 - t0)
        issues.append(t1 - t0)
        if ev:
            parts.append([ev[i].elapsed_time(ev[i + 1]) for i in range(3)])
    row = {"model": model, "tp": tp, "mb": mb, "attn": attn, "seq": SEQ,
           "params_per_rank": sum(p.numel() for p in net.parameters()),
           "step_ms": statistics.median(walls) * 1e3, "step_ms_min": min(walls) * 1e3,
           "issue_ms": statistics.median(issues) * 1e3, "loss": float(loss),
           "steps_ms": [round(w * 1e3, 2) for w in walls]}
    if parts:
        for i, k in enumerate(("fwd_ms", "bwd_ms", "optim_ms")):
            row[k] = statistics.median(p[i] for p in parts)
    if cuda:
        row["mem_peak_gib"] = torch.cuda.max_memory_allocated() / 2**30
        try:
            from torch.profiler import profile, ProfilerActivity
            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                step()
                sync()
            ks = [e for e in prof.events() if e.device_type.name == "CUDA"]
            row["kernels"] = len(ks)
            row["gpu_busy_ms"] = sum(getattr(e, "device_time", None) or e.cuda_time for e in ks) / 1e3
        except Exception as ex:  # the profiler is a bonus: the step times stand without it
            row["profiler_error"] = repr(ex)[:200]
    del tr, net
    if cuda:
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-o", default="-", help="JSON lines, appended one configuration at a time")
    ap.add_argument("--budget", type=float, default=300, help="seconds: no configuration is started after it")
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--models", default="350M,760M,1.3B")
    ap.add_argument("--tp", default="1,2,4,8")
    ap.add_argument("--mb", default="1,2,4,8")
    ap.add_argument("--attn", default="flash,unfused", help="the first for every configuration, the others "
                    "at micro-batch 1 and 8")
    ap.add_argument("--shuffle", type=int, metavar="SEED", help="run the configurations in a random order (a "
                    "repeat that does not meet the host's slow spells in the same places)")
    ap.add_argument("--cpu-test", action="store_true", help="a tiny run on the CPU (gloo): checks the script")
    a = ap.parse_args()
    try:
        import torch
        import torch.distributed as dist
    except ImportError:
        print("gpu_step: PyTorch is not importable by this python3", file=sys.stderr)
        return 2
    dev, dt = ("cpu", torch.float32) if a.cpu_test else ("cuda", torch.bfloat16)
    if dev == "cuda" and not torch.cuda.is_available():
        print("gpu_step: no CUDA device", file=sys.stderr)
        return 2
    if a.cpu_test:
        MODELS.clear()
        MODELS["tiny"] = (2, 64, 4)
        a.models, a.steps = "tiny", 2
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29541")
    if dev == "cuda":
        dist.init_process_group("nccl", rank=0, world_size=1, device_id=torch.device("cuda", 0))
        torch.backends.cuda.matmul.allow_tf32 = True
    else:
        dist.init_process_group("gloo", rank=0, world_size=1)
    attns = a.attn.split(",")
    mbs = [int(x) for x in a.mb.split(",")]
    cfgs = [(m, int(tp), mb, attns[0]) for m in a.models.split(",") for tp in a.tp.split(",") for mb in mbs]
    cfgs += [(m, int(tp), mb, at) for at in attns[1:] for m in a.models.split(",") for tp in a.tp.split(",")
             for mb in (mbs[0], mbs[-1])]
    if a.shuffle is not None:
        import random
        random.Random(a.shuffle).shuffle(cfgs)
    head = {"device": torch.cuda.get_device_name(0) if dev == "cuda" else "cpu", "torch": torch.__version__,
            "cuda": torch.version.cuda, "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    out = sys.stdout if a.o == "-" else open(a.o, "a")
    out.write(json.dumps({"about": head}) + "\n")
    out.flush()
    t0 = time.time()
    for m, tp, mb, at in cfgs:
        if time.time() - t0 > a.budget:
            out.write(json.dumps({"skipped": [m, tp, mb, at], "why": "budget"}) + "\n")
            continue
        try:
            row = one_config(torch, m, tp, mb, at, a.steps, dev, dt)
        except Exception as ex:
            row = {"model": m, "tp": tp, "mb": mb, "attn": at, "error": repr(ex)[:300]}
            if dev == "cuda":
                torch.cuda.empty_cache()
        out.write(json.dumps(row) + "\n")
        out.flush()
        print(f"gpu_step: {m} tp{tp} mb{mb} {at}: {row.get('step_ms', row.get('error'))}", file=sys.stderr,
              flush=True)
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
