#!/usr/bin/env python3
"""bench/gpu_micro.py [-o FILE] [--quick] -- the host-side and small-work figures of one NVIDIA GPU, measured
through PyTorch, as JSON (issue #29: "When a device is lent: measure launch latency, dispatch, small-message NCCL
and cuBLAS small GEMMs on the H100, and put them in the H100 preset with their provenance").

What each figure is, and the preset key it informs (gpus/*.gpu):
  kernel_gap_us     GPU time per back-to-back tiny kernel (a 1-element add) when the host is far ahead: the kernels
                    are queued behind torch.cuda._sleep and timed with CUDA events from the sleep's end (stream
                    launches), and as a CUDA graph's replay; `kernel_launch` ("GPU time per kernel beyond its work")
  host_us           host time per PyTorch eager op, issued back to back without a sync (perf_counter over the
                    loop): a bare in-place add, an add with autograd recording, F.linear, F.layer_norm, an
                    nn.Linear module call, and a forward+backward of a small MLP block per kernel it launches;
                    `dispatch` ("host dispatch per kernel of an eager framework")
  gemm              bf16 / fp8 (torch._scaled_mm, e4m3, tensorwise and rowwise scales) GEMMs at transformer
                    shapes (tokens x hidden, QKV, MLP up/down) from hidden 256 to 8192: GPU time per GEMM from a
                    CUDA graph of the loop (inputs rotated over >= 64 MB so that L2 does not hold them), eager
                    time (host-issued, what an eager loop sees), TFLOP/s and fraction of the datasheet peak;
                    `gemm_efficiency` and the FP8 rate
  host_layers       a 12-block GPT-2 stack at 8 tokens, eager: host time per kernel of the forward (autograd
                    recording) and of the backward, and the GPU-side step time; `dispatch` in a real model
  c10d_host         torch.distributed's all-reduce (NCCL, one rank): host time per call, blocking and async
  tp_region         the host's time per Megatron tensor-parallel region crossing in a forward + backward: its
                    custom autograd Functions, and the all-reduce calls inside them (one-rank NCCL group)
  nccl_1rank        an NCCL all-reduce on a one-rank communicator (this GPU alone) by size: NCCL's per-call floor
                    without any link (what a collective costs before its first hop), in-place, CUDA events
Timing: CUDA events around loops of >= 20 ms, the median of 5 (GEMMs: eager 3, graph replays 5; after warm-up); host times the median of 5 loops.
Exit 0 ok (a section that fails is reported as {"error": ...} and the others still run), 2 no CUDA device.
"""
import argparse
import json
import os
import statistics
import sys
import time


def median_of(f, n=5):
    return statistics.median(f() for _ in range(n))


def ev_time(torch, fn, iters):
    """GPU seconds per call of fn, timed with CUDA events around iters calls, after a warm-up."""
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    fn()
    torch.cuda.synchronize()
    s.record()
    for _ in range(iters):
        fn()
    e.record()
    e.synchronize()
    return s.elapsed_time(e) / 1e3 / iters


def iters_for(torch, fn, target_s=0.02, cap=20000):
    t = ev_time(torch, fn, 10)
    return max(10, min(cap, int(target_s / max(t, 1e-7))))


def kernel_gap(torch):
    x = torch.zeros(1, device="cuda")
    out = {}
    # stream launches queued behind a sleep: the GPU runs them back to back, the host far ahead
    for n in (256, 1024):
        def run():
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            torch.cuda._sleep(100_000_000)  # ~50 ms at ~2 GHz: longer than the host takes to queue n launches
            s.record()
            for _ in range(n):
                x.add_(1.0)
            e.record()
            e.synchronize()
            return s.elapsed_time(e) / 1e3 / n
        run()
        out[f"stream_queued_{n}_us"] = median_of(run) * 1e6
    # a CUDA graph of 1000 adds
    g = torch.cuda.CUDAGraph()
    st = torch.cuda.Stream()
    st.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(st):
        for _ in range(3):
            x.add_(1.0)
    torch.cuda.current_stream().wait_stream(st)
    with torch.cuda.graph(g):
        for _ in range(1000):
            x.add_(1.0)
    out["graph_us"] = median_of(lambda: ev_time(torch, g.replay, 20)) / 1000 * 1e6
    # eager, the host issuing (host-bound when its cost per op exceeds the GPU's)
    out["eager_events_us"] = median_of(lambda: ev_time(torch, lambda: x.add_(1.0), 5000)) * 1e6
    return out


def host_time(torch, fn, n):
    fn()
    torch.cuda.synchronize()

    def run():
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        t1 = time.perf_counter()
        torch.cuda.synchronize()
        return (t1 - t0) / n
    return median_of(run) * 1e6


def host_side(torch):
    F = torch.nn.functional
    out = {}
    x = torch.zeros(64, device="cuda")
    out["add_inplace_us"] = host_time(torch, lambda: x.add_(1.0), 20000)
    a = torch.randn(64, device="cuda", requires_grad=True)
    b = torch.randn(64, device="cuda", requires_grad=True)
    out["add_autograd_us"] = host_time(torch, lambda: a + b, 20000)
    h = 256
    xi = torch.randn(8, h, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(h, h, device="cuda", dtype=torch.bfloat16)
    out["linear_us"] = host_time(torch, lambda: F.linear(xi, w), 10000)
    ln_w = torch.ones(h, device="cuda", dtype=torch.bfloat16)
    ln_b = torch.zeros(h, device="cuda", dtype=torch.bfloat16)
    out["layer_norm_us"] = host_time(torch, lambda: F.layer_norm(xi, (h,), ln_w, ln_b), 10000)
    lin = torch.nn.Linear(h, h, device="cuda", dtype=torch.bfloat16)
    out["linear_module_us"] = host_time(torch, lambda: lin(xi), 10000)
    # a small GPT-style MLP block, forward and backward, eager: host time per kernel launched
    blk = torch.nn.Sequential(torch.nn.LayerNorm(h), torch.nn.Linear(h, 4 * h), torch.nn.GELU(),
                              torch.nn.Linear(4 * h, h)).to("cuda", torch.bfloat16)
    xin = torch.randn(8, h, device="cuda", dtype=torch.bfloat16, requires_grad=True)

    def step():
        y = blk(xin) + xin
        y.sum().backward()
    from torch.profiler import profile, ProfilerActivity
    step()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        step()
        torch.cuda.synchronize()
    kernels = sum(1 for e in prof.events() if e.device_type.name == "CUDA")
    t = host_time(torch, step, 500)
    out["mlp_block_fwd_bwd_us"] = t
    out["mlp_block_kernels"] = kernels
    out["mlp_block_us_per_kernel"] = t / max(kernels, 1)
    return out


def count_kernels(torch, fn):
    """CUDA kernels fn launches (torch.profiler's CUDA events)."""
    from torch.profiler import profile, ProfilerActivity
    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    return sum(1 for e in prof.events() if e.device_type.name == "CUDA")


def host_layers(torch):
    """A GPT-2 block (pre-LN, fused QKV, SDPA causal attention, GELU MLP) stacked 12 deep, eager bf16, at a
    small size (hidden 256 and 1024, 4 heads per 256, 8 tokens: GPU work far below the host's): host time per
    kernel of the forward with autograd recording, of the backward (loss.backward() through the autograd
    engine's C++ thread), and the GPU's own time of the whole step (events), so the host-bound gap shows."""
    F = torch.nn.functional

    class Block(torch.nn.Module):
        def __init__(self, h):
            super().__init__()
            self.h, self.nh = h, h // 64
            self.ln1, self.ln2 = torch.nn.LayerNorm(h), torch.nn.LayerNorm(h)
            self.qkv, self.proj = torch.nn.Linear(h, 3 * h), torch.nn.Linear(h, h)
            self.up, self.down = torch.nn.Linear(h, 4 * h), torch.nn.Linear(4 * h, h)

        def forward(self, x):
            b, t, h = x.shape
            q, k, v = self.qkv(self.ln1(x)).split(h, dim=2)
            q, k, v = (z.view(b, t, self.nh, 64).transpose(1, 2) for z in (q, k, v))
            a = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(b, t, h)
            x = x + self.proj(a)
            return x + self.down(F.gelu(self.up(self.ln2(x))))

    out = {}
    for h in (256, 1024):
        net = torch.nn.Sequential(*[Block(h) for _ in range(12)]).to("cuda", torch.bfloat16)
        x = torch.randn(1, 8, h, device="cuda", dtype=torch.bfloat16, requires_grad=True)
        fwd = lambda: net(x)
        n_fwd = count_kernels(torch, lambda: net(x).sum())
        n_all = count_kernels(torch, lambda: net(x).sum().backward())
        t_fwd = host_time(torch, lambda: net(x).sum(), 50)

        def step():
            net(x).sum().backward()
        t_all = host_time(torch, step, 50)
        gpu = median_of(lambda: ev_time(torch, step, 20))
        out[f"h{h}"] = {"layers": 12, "fwd_kernels": n_fwd, "step_kernels": n_all, "fwd_host_us": t_fwd,
                        "step_host_us": t_all, "fwd_us_per_kernel": t_fwd / n_fwd,
                        "bwd_us_per_kernel": (t_all - t_fwd) / max(n_all - n_fwd, 1),
                        "step_events_us": gpu * 1e6}
        del fwd
    return out


def c10d_host(torch):
    """torch.distributed's NCCL all-reduce on a one-rank group: the host's time per call (perf_counter over
    back-to-back calls), async_op and not, against the GPU-side time (events) of the same loop."""
    import torch.distributed as dist
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29534")
    dist.init_process_group("nccl", rank=0, world_size=1, device_id=torch.device("cuda", 0))
    out = {}
    for size in (1024, 1 << 20):
        x = torch.ones(size // 2, device="cuda", dtype=torch.bfloat16)
        out[f"allreduce_{size}_host_us"] = host_time(torch, lambda: dist.all_reduce(x), 2000)
        out[f"allreduce_{size}_async_host_us"] = host_time(torch, lambda: dist.all_reduce(x, async_op=True), 2000)
    dist.destroy_process_group()
    return out


def tp_region(torch):
    """The host's cost of one Megatron tensor-parallel region crossing, apart from the collective's own call:
    a chain of 64 small linears (8 tokens, hidden 256, eager bf16) whose outputs pass, between each two, through
    (a) nothing, (b) Megatron's region functions as custom autograd Functions (copy-to: identity forward,
    all-reduce backward; reduce-from: all-reduce forward, identity backward) with the all-reduces skipped, and
    (c) the same with the all-reduces run on a one-rank NCCL group; host time of forward + backward per
    crossing: (b) - (a) the Functions' Python (their apply and their backward node, run from the autograd
    engine's thread), (c) - (b) c10d's calls inside a step (against c10d_host's calls back to back)."""
    import torch.distributed as dist
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29535")
    dist.init_process_group("nccl", rank=0, world_size=1, device_id=torch.device("cuda", 0))
    state = {"ar": False}

    class CopyTo(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, g):
            if state["ar"]:
                dist.all_reduce(g)
            return g

    class ReduceFrom(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            if state["ar"]:
                dist.all_reduce(x)
            return x

        @staticmethod
        def backward(ctx, g):
            return g

    n = 64
    lins = [torch.nn.Linear(256, 256, device="cuda", dtype=torch.bfloat16) for _ in range(n)]
    x0 = torch.randn(8, 256, device="cuda", dtype=torch.bfloat16, requires_grad=True)

    def chain(region):
        def run():
            x = x0
            for i, lin in enumerate(lins):
                if region:
                    x = CopyTo.apply(x) if i % 2 == 0 else ReduceFrom.apply(x)
                x = lin(x)
            x.sum().backward()
        return run
    out = {"crossings": n}
    state["ar"] = False
    plain = host_time(torch, chain(False), 50)
    funcs = host_time(torch, chain(True), 50)
    state["ar"] = True
    with_ar = host_time(torch, chain(True), 50)
    out.update({"chain_us": plain, "chain_functions_us": funcs, "chain_functions_allreduce_us": with_ar,
                "functions_us_per_crossing": (funcs - plain) / n,
                "allreduce_us_per_crossing": (with_ar - funcs) / n})
    dist.destroy_process_group()
    return out


GEMM_SHAPES = []  # (name, m tokens, n, k)
for hdim in (256, 512, 1024, 2048, 4096, 8192):
    for m in (1024, 4096, 16384):
        GEMM_SHAPES += [(f"h{hdim}_m{m}_qkv", m, 3 * hdim, hdim), (f"h{hdim}_m{m}_up", m, 4 * hdim, hdim),
                        (f"h{hdim}_m{m}_down", m, hdim, 4 * hdim)]
GEMM_SHAPES.append(("square_8192", 8192, 8192, 8192))


def gemm_one(torch, kind, m, n, k, peak):
    bpe = 1 if kind.startswith("fp8") else 2
    per_set = (m * k + n * k) * bpe + m * n * 2
    sets = max(2, min(32, (64 << 20) // per_set + 1))
    dt = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(kind, torch.bfloat16)
    A = [torch.randn(m, k, device="cuda", dtype=dt) for _ in range(sets)]
    B = [torch.randn(n, k, device="cuda", dtype=dt) for _ in range(sets)]
    if kind.startswith("fp8"):
        f8 = torch.float8_e4m3fn
        A = [a.to(f8) for a in A]
        B = [b.to(f8) for b in B]
        if kind == "fp8_rowwise":
            sa = torch.ones(m, 1, device="cuda")
            sb = torch.ones(1, n, device="cuda")
        else:
            sa = torch.ones((), device="cuda")
            sb = torch.ones((), device="cuda")
        calls = [lambda a=a, b=b: torch._scaled_mm(a, b.t(), scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16)
                 for a, b in zip(A, B)]
    else:
        calls = [lambda a=a, b=b: torch.matmul(a, b.t()) for a, b in zip(A, B)]
    i = [0]

    def one():
        c = calls[i[0] % sets]
        i[0] += 1
        return c()
    flops = 2.0 * m * n * k
    eager = median_of(lambda: ev_time(torch, one, iters_for(torch, one)), 3)
    # the GPU's own time: a graph of `rep` calls over the rotated sets
    rep = max(sets, min(200, int(0.02 / max(eager, 1e-6))))
    g = torch.cuda.CUDAGraph()
    st = torch.cuda.Stream()
    st.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(st):
        for _ in range(3):
            one()
    torch.cuda.current_stream().wait_stream(st)
    with torch.cuda.graph(g):
        for _ in range(rep):
            one()
    graph = median_of(lambda: ev_time(torch, g.replay, 1)) / rep
    del g
    return {"m": m, "n": n, "k": k, "graph_us": graph * 1e6, "eager_us": eager * 1e6,
            "tflops": flops / graph / 1e12, "fraction_of_peak": flops / graph / peak}


def gemms(torch, quick, peaks):
    out = {}
    shapes = GEMM_SHAPES[::4] + [GEMM_SHAPES[-1]] if quick else GEMM_SHAPES
    for kind in ("bf16", "fp8", "fp8_rowwise"):
        rows = {}
        for name, m, n, k in shapes:
            try:
                rows[name] = gemm_one(torch, kind, m, n, k, peaks["fp8" if kind.startswith("fp8") else "bf16"])
            except Exception as ex:  # one shape failing (an fp8 layout cuBLAS refuses) does not stop the rest
                rows[name] = {"error": repr(ex)[:300]}
            torch.cuda.empty_cache()
        out[kind] = rows
    return out


def nccl_one_rank(torch):
    import torch.distributed as dist
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29533")
    dist.init_process_group("nccl", rank=0, world_size=1, device_id=torch.device("cuda", 0))
    out = {"nccl_version": ".".join(map(str, torch.cuda.nccl.version()))}
    rows = {}
    for size in (8, 64, 1024, 8192, 65536, 1 << 20, 8 << 20, 64 << 20):
        x = torch.ones(max(1, size // 2), device="cuda", dtype=torch.bfloat16)
        f = lambda: dist.all_reduce(x)
        rows[str(size)] = median_of(lambda: ev_time(torch, f, iters_for(torch, f, cap=5000))) * 1e6
    out["allreduce_us_by_bytes"] = rows
    dist.destroy_process_group()
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-o", default="-")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only", help="comma-separated sections to run (default: all): kernel_gap_us, host_us, "
                    "host_layers, c10d_host, nccl_1rank, tp_region, gemm")
    args = ap.parse_args()
    try:
        import torch
    except ImportError:
        print("gpu_micro: PyTorch is not importable by this python3 (run it with the interpreter that has torch)",
              file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        print("gpu_micro: no CUDA device", file=sys.stderr)
        return 2
    p = torch.cuda.get_device_properties(0)
    name = torch.cuda.get_device_name(0)
    h100 = "H100" in name or "H200" in name
    peaks = {"bf16": 989e12 if h100 else 312e12, "fp8": 1979e12 if h100 else 0}
    res = {"device": name, "sms": p.multi_processor_count, "torch": torch.__version__,
           "cuda": torch.version.cuda, "peaks_assumed": peaks,
           "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    torch.backends.cuda.matmul.allow_tf32 = True
    sections = (("kernel_gap_us", lambda: kernel_gap(torch)), ("host_us", lambda: host_side(torch)),
                ("host_layers", lambda: host_layers(torch)), ("c10d_host", lambda: c10d_host(torch)),
                ("nccl_1rank", lambda: nccl_one_rank(torch)), ("tp_region", lambda: tp_region(torch)), ("gemm", lambda: gemms(torch, args.quick, peaks)))
    only = set(args.only.split(",")) if args.only else None
    if only and not only <= {k for k, _ in sections}:
        print(f"gpu_micro: --only names unknown sections: {sorted(only - {k for k, _ in sections})}", file=sys.stderr)
        return 2
    for key, fn in sections:
        if only and key not in only:
            continue
        t0 = time.time()
        try:
            res[key] = fn()
        except Exception as ex:
            res[key] = {"error": repr(ex)[:500]}
        print(f"gpu_micro: {key} done in {time.time() - t0:.1f} s", file=sys.stderr, flush=True)
    text = json.dumps(res, indent=1, sort_keys=False)
    if args.o == "-":
        print(text)
    else:
        tmp = args.o + ".tmp"
        with open(tmp, "w") as f:
            f.write(text + "\n")
        os.replace(tmp, args.o)
    return 0


if __name__ == "__main__":
    sys.exit(main())
