#include "zp_device.h"

#include <math.h>
#include <stdio.h>
#include <strings.h>

#include "zp_config.h"
#include "zp_device_fp8.h"

void zp_device_profile_builtin(const zp_cluster *c, zp_profile *p)
{
    zp_profile_init(p);
    snprintf(p->backend, sizeof p->backend, "cuda");
    snprintf(p->machine.gpu, sizeof p->machine.gpu, "%s", c->gpu_name);
    snprintf(p->machine.hostname, sizeof p->machine.hostname, "preset:%s", c->name);
    snprintf(p->machine.zplan_version, sizeof p->machine.zplan_version, "%s", ZP_VERSION);
    p->machine.gpu_count = c->gpus_per_node;
    p->machine.nodes = 1;
    p->machine.ranks = c->gpus_per_node;
    double stream = ZP_DEVICE_STREAM_FRACTION * c->hbm_bw;
    p->copy_gbs = stream / 1e9;
    p->triad_gbs = stream / 1e9;
    p->h2d_gbs = c->pcie_bw / 1e9;
    p->d2h_gbs = c->pcie_bw / 1e9;
    p->peak_flops_fp16 = zp_cluster_peak_flops(c, "fp16");
    p->peak_flops_bf16 = zp_cluster_peak_flops(c, "bf16"); /* V100: no bf16 tensor cores, the fp32 rate */
    p->peak_flops_fp32 = zp_cluster_peak_flops(c, "fp32");
    /* the optimizer step streams ZP_DEVICE_OPTIMIZER_BYTES per parameter (Adam and what goes with it) */
    p->adam_bytes_per_param = ZP_DEVICE_OPTIMIZER_BYTES;
    p->adam_params_per_s = stream / ZP_DEVICE_OPTIMIZER_BYTES;
    p->cpu_adam_params_per_s = c->cpu_adam_rate;
    snprintf(p->gemm_dtype, sizeof p->gemm_dtype, "fp16");
    p->gemm_t0_s = c->kernel_launch;
    p->gemm_s_per_flop = 1.0 / (c->peak_flops * c->gemm_efficiency);
    p->gemm_s_per_byte = 1.0 / stream;
    /* the per-kernel model (zp_profile_device): GEMMs by shape, element-wise kernels by their bytes */
    p->dev.sms = c->sms;
    p->dev.gemm_max_eff = c->gemm_efficiency;
    p->dev.k_half = ZP_DEVICE_K_HALF;
    p->dev.launch_s = c->kernel_launch;
    p->dev.dispatch_s = c->dispatch;
    p->dev.dispatch_block_s = c->dispatch_block > 0 ? c->dispatch_block : ZP_HOST_BLOCK_RATIO * c->dispatch;
    p->dev.coll_dispatch_s = c->coll_dispatch > 0 ? c->coll_dispatch : ZP_HOST_COLL_RATIO * c->dispatch;
    p->dev.nccl_ll_base_s = c->nccl_ll_base;
    p->dev.nccl_ll_hop_s = c->nccl_ll_hop;
    p->dev.unfused_kernels = c->unfused_kernels;
    p->dev.flash_eff = c->flash_efficiency;
    p->dev.flash_seq_half = c->flash_seq_half;
    p->dev.nccl_ctas = c->nccl_ctas;
    p->nvme_read_gbs = c->nvme_read_bw / 1e9;
    p->nvme_write_gbs = c->nvme_write_bw / 1e9;
    const double lat[ZP_PROFILE_NSCOPE] = {c->nvlink_latency, c->ib_latency};
    /* inside a node: a whole domain's group (on a mesh, a smaller group's share: zp_collcost_nv_bw) */
    const double bw[ZP_PROFILE_NSCOPE] = {zp_cluster_group_bw(c, zp_cluster_domain(c)),
                                          c->ib_rail_bw * c->ib_efficiency * c->inter_channels};
    for (int k = 0; k < ZP_PROFILE_NCOLL; k++) {
        for (int s = 0; s < ZP_PROFILE_NSCOPE; s++) {
            zp_profile_coll_fit *f = &p->coll[k][s];
            f->measured = 1;
            f->nranks = 2;
            f->latency_s = lat[s];
            f->busbw_gbs = bw[s] / 1e9;
        }
    }
}

/* ---- the cost functions of the op table (sim/zp_ops.def): seconds on one device ---- */

static double stream_bw(const zp_profile *p) { return (p->copy_gbs > 0 ? p->copy_gbs : 100.0) * 1e9; }

/* The bias a GEMM carries: measured kernels on the host (a calibrated profile): forward QKV and MLP-up add
 * it over C (m, n); the weight gradients of QKV, MLP-up and the projection also sum dY (k, n) over its rows.
 * On a GPU (the device model) a forward bias rides in the GEMM's epilogue (addmm, or the fused bias-GeLU and
 * bias-dropout-add) and a bias gradient is one more kernel reading dY once. */
static double bias_time(const zp_profile *p, const zp_op *op, const zp_op_info *info)
{
    double t = -1;
    if (info->bias == ZP_BIAS_FWD)
        t = zp_profile_kernel_time(p, ZP_KERNEL_BIAS_ADD, op->m * op->n);
    else if (info->bias == ZP_BIAS_WGRAD)
        t = zp_profile_kernel_time(p, ZP_KERNEL_BIAS_GRAD, op->k * op->n);
    if (t < 0 && p->dev.sms > 0 && info->bias == ZP_BIAS_WGRAD)
        t = p->dev.launch_s + 2.0 * op->k * op->n / stream_bw(p);
    return t > 0 ? t : 0.0;
}

/* The bytes of a GEMM's operands that the step last touched long before (zp_op_info.cold; C = A . B per batch
 * entry, A m x k, B k x n, C m x n, in the profile's GEMM element type; C in fp32 as the executor writes it) at
 * the profile's gemm_cold_gbs, s: what its loops, whose buffers stay in cache, did not time. In the cpu
 * executor's step (gpt2-4x256 and tiny-moe at micro-batch 4, 2026-11-27) each GEMM ran slower than the same
 * call run again at once by about its weight's and output's bytes at the STREAM rate (mlp_up 126 us for 3.0 MB,
 * an expert's up projection 35 us for 0.8 MB, the attention context's weight gradient 116 us for 1.5 MB, at
 * 16 GB/s triad: 188, 49 and 94 us), the larger and longer ones less (lm_head 249 us of 12.5 MB): not added
 * on the presets (no gemm_cold_gbs). */
static double cold_time(const zp_profile *p, const zp_op *op, const zp_op_info *info)
{
    if (!(p->gemm_cold_gbs > 0))
        return 0;
    const unsigned c = info->cold ? info->cold : ZP_COLD_B | ZP_COLD_C;
    const double es = zp_profile_gemm_elem_bytes(p), batch = op->batch > 1 ? op->batch : 1;
    const double bytes = ((c & ZP_COLD_A) ? es * op->m * op->k : 0) + ((c & ZP_COLD_B) ? es * op->k * op->n : 0) +
                         ((c & ZP_COLD_C) ? 4.0 * op->m * op->n : 0);
    return batch * bytes / (p->gemm_cold_gbs * 1e9);
}

double zp_cost_gemm(const zp_profile *p, const zp_op *op, const zp_op_info *info, int gpus_per_cpu)
{
    (void)gpus_per_cpu;
    if (p->fp8.recipe && info->fp8) /* a linear layer's GEMM under an FP8 recipe, with its casts */
        return zp_device_fp8_gemm_time(p, op, info) + bias_time(p, op, info);
    return zp_profile_gemm_time(p, op->m, op->n, op->k) + bias_time(p, op, info) + cold_time(p, op, info);
}

/* One launch of `batch` small GEMMs (attention's). */
double zp_cost_bgemm(const zp_profile *p, const zp_op *op, const zp_op_info *info, int gpus_per_cpu)
{
    (void)gpus_per_cpu;
    if (p->fp8.recipe && info->fp8) /* the routed experts' grouped GEMMs (TE's GroupedLinear) in FP8 */
        return zp_device_fp8_gemm_time(p, op, info);
    return zp_profile_gemm_time_batched(p, op->m, op->n, op->k, op->batch) + cold_time(p, op, info);
}

/* A profile with the layer kernels behind the op: their measured cost over op->elems; else the op's bytes at
 * the copy bandwidth plus a launch per kernel. */
double zp_cost_eltwise(const zp_profile *p, const zp_op *op, const zp_op_info *info, int gpus_per_cpu)
{
    (void)gpus_per_cpu;
    const double launch = p->dev.sms > 0 ? p->dev.launch_s : ZP_DEVICE_ELTWISE_T0;
    if (p->eager && info->launches_eager > 0) /* PyTorch eager's kernels: not the fused ones a profile measured */
        return launch * info->launches_eager + op->elems * info->eltbytes_eager / stream_bw(p);
    double t = info->nkern > 0 && op->elems > 0 ? 0.0 : -1.0;
    for (int i = 0; t >= 0 && i < info->nkern; i++) {
        double ti = zp_profile_kernel_time(p, info->kern[i], op->elems);
        t = ti < 0 ? -1.0 : t + ti;
    }
    if (t >= 0)
        return t;
    double bytes = op->bytes;
    if (p->dev.unfused_kernels && info->eltbytes_unfused > 0 && info->eltbytes > 0)
        bytes *= info->eltbytes_unfused / info->eltbytes;
    return launch * zp_device_launches(p, info) + bytes / stream_bw(p);
}

int zp_device_launches(const zp_profile *p, const zp_op_info *info)
{
    if (p->eager && info->launches_eager > 0)
        return info->launches_eager;
    int n = p->dev.unfused_kernels && info->launches_unfused > 0 ? info->launches_unfused : info->launches;
    return n > 0 ? n : 1;
}

/* The fused Adam's bytes a parameter with moments narrower by `saved` bytes: each is read and written once. */
static double adam_stream_bytes(double saved) { return ZP_DEVICE_OPTIMIZER_BYTES - 2.0 * saved; }

double zp_device_adam_bytes(const zp_plan *p) { return adam_stream_bytes(zp_plan_moments_saved(p)); }

double zp_cost_adam(const zp_profile *p, const zp_op *op, const zp_op_info *info, int gpus_per_cpu)
{
    (void)info;
    (void)gpus_per_cpu;
    /* a fused Adam is bound by its stream: moments narrower by op->k bytes a parameter are read and written
     * that much less of ZP_DEVICE_OPTIMIZER_BYTES, that much less of the measured or modelled time */
    const double narrow = adam_stream_bytes(op->k) / ZP_DEVICE_OPTIMIZER_BYTES;
    double t = zp_profile_adam_time(p, op->bytes, 0);
    return (t >= 0 ? t : op->bytes * ZP_DEVICE_OPTIMIZER_BYTES / stream_bw(p)) * narrow;
}

/* The fp16 scaler's per-tensor passes (zp_ops.def SCALER_CHECK): each of op->elems tensors takes, one after
 * the other, ZP_SCALER_CALLS framework calls (two kernels and a blocking device-to-host copy for the overflow
 * check, the same for the norm); the copy drains the GPU, so the host's dispatch of the next tensor cannot
 * run ahead: each call costs its host dispatch and its launch in series. Plus the kernels' bytes at the
 * stream bandwidth. The op's own dispatch (zp_device_host_time) is its first call's, counted here too: one
 * dispatch in ~10^3-10^4 of them. */
#define ZP_SCALER_CALLS 6.0
double zp_cost_scaler_check(const zp_profile *p, const zp_op *op, const zp_op_info *info, int gpus_per_cpu)
{
    (void)info;
    (void)gpus_per_cpu;
    const double launch = p->dev.sms > 0 ? p->dev.launch_s : ZP_DEVICE_ELTWISE_T0;
    return op->elems * ZP_SCALER_CALLS * (launch + p->dev.dispatch_s) + op->bytes / stream_bw(p);
}

/* The host's Adam over the partition; the node's GPUs update theirs on the same CPU. */
double zp_cost_cpu_adam(const zp_profile *p, const zp_op *op, const zp_op_info *info, int gpus_per_cpu)
{
    (void)info;
    double rate = p->cpu_adam_params_per_s > 0 ? p->cpu_adam_params_per_s : 1e9;
    return op->bytes * (double)(gpus_per_cpu > 0 ? gpus_per_cpu : 1) / rate;
}

/* ZeRO-Infinity's swaps: `bytes` read from (H2D) or written to (D2H) the node's drives, which the node's
 * GPUs share. A profile without drive figures: a 3 GB/s drive (PCIe gen3 x4). */
double zp_cost_nvme(const zp_profile *p, const zp_op *op, const zp_op_info *info, int gpus_per_cpu)
{
    double gbs = info->dir == ZP_COPY_H2D ? p->nvme_read_gbs : p->nvme_write_gbs;
    return op->bytes * (double)(gpus_per_cpu > 0 ? gpus_per_cpu : 1) / ((gbs > 0 ? gbs : 3.0) * 1e9);
}

/* The head dimension FlashAttention's kernels run at: FlashAttention-2 is compiled for head dimensions 32,
 * 64, 96, 128, 160, 192 and 256 and runs a head of d on the next one (flash_api.cpp: head_size_rounded =
 * d <= 192 ? round_multiple(d, 32) : 256), its tiles' columns beyond d computed on padding: heads of 80
 * run as 96, MPT-30B's 112 and the zoo 1.5B's 100 as 128. */
double zp_device_flash_head_dim(double d)
{
    if (!(d > 0))
        return d;
    return d <= 192 ? 32.0 * ceil(d / 32.0) : fmax(256.0, d);
}

/* FlashAttention-1 (flash-attn 1.x) has kernels for head dimensions up to 128 and runs a head on the next of
 * 16, 32, 64, 128 (its fmha launchers); its Triton port (flash_attn_triton.py) likewise pads a head to
 * BLOCK_HEADDIM = max(next power of two, 16) and stops at 128. */
static double fa1_head_dim(double d)
{
    double r = 16;
    while (r < d)
        r *= 2;
    return d > 0 ? r : d;
}

/* The kernels' causal forward + backward (Dao 2023, Fig. 4-7; the flash-attention repository's
 * assets/flash2_{a100,h100}_fwd_bwd_benchmark.png), each panel fitted as P s / (s + h) over 512-16k tokens:
 *  FlashAttention-2: P at heads of 64 is 0.907 (A100) and 0.877 (H100) of P at 128: 0.89; h 485-540.
 *  FlashAttention-1 (CUDA, flash-attn 1.x; both GPUs) and its Triton port (flash_attn_triton.py, which MPT's
 *  llm-foundry runs as attn_impl: triton; A100): P at 128 is 0.424, 0.416 (A100) and 0.402 (H100) of
 *  FlashAttention-2's at 128: 0.41; at 64, 0.496, 0.422 and 0.459: 0.46; h 160-375, mean 271 over
 *  FlashAttention-2's 500: 0.54 (fewer rows of work per CTA: it saturates sooner, and lower). */
static const zp_flash_kernel g_flash_kernels[ZP_NFLASH_KERNELS] = {
    [ZP_FLASH_KERNEL_FA2] = {.name = "fa2", .alias = "flash2", .speed64 = 0.89, .speed128 = 1.0,
                             .seq_half_ratio = 1.0, .max_head_dim = 0, .head_dim = zp_device_flash_head_dim},
    [ZP_FLASH_KERNEL_FA1] = {.name = "fa1", .alias = "triton", .speed64 = 0.46, .speed128 = 0.41,
                             .seq_half_ratio = 0.54, .max_head_dim = 128, .head_dim = fa1_head_dim},
};

/* A kernel's long-sequence speed at a padded head dimension hd: its row's figures at 64 and 128, linear
 * between (FlashAttention-2's 96), flat outside (no benchmark beyond). */
static double flash_speed(const zp_flash_kernel *k, double hd)
{
    const double x = hd <= 64 ? 0.0 : hd >= 128 ? 1.0 : (hd - 64) / 64;
    return k->speed64 + x * (k->speed128 - k->speed64);
}

const zp_flash_kernel *zp_flash_kernel_get(int id)
{
    return id >= 0 && id < ZP_NFLASH_KERNELS ? &g_flash_kernels[id] : NULL;
}

zp_status zp_flash_kernel_parse(const char *text, int *id)
{
    for (int i = 0; i < ZP_NFLASH_KERNELS; i++) {
        const zp_flash_kernel *k = &g_flash_kernels[i];
        if (strcasecmp(text, k->name) == 0 || (k->alias && strcasecmp(text, k->alias) == 0)) {
            *id = i;
            return ZP_OK;
        }
    }
    return ZP_FAIL(ZP_EINVAL, "--flash-kernel: unknown FlashAttention kernel '%s' (use fa2 for FlashAttention-2, "
                              "fa1 or triton for FlashAttention-1 and its Triton port)",
                   text);
}

/* FlashAttention (Dao 2023): the causal forward computes the scores and the context over the unmasked half of
 * the s x s blocks, 4 s^2 d / 2 FLOPs per head = the scores GEMM's own FLOPs, at the kernel's efficiency; the
 * backward 2.5 times that (five GEMMs and the recomputed scores); the op's other attention GEMMs and the
 * softmax are inside these two kernels, which run at the padded head dimension (the scores' k in the
 * forward, the columns n of their query gradient in the backward). The efficiency falls with the sequence
 * (op->m: the query rows of the scores and of their gradient) as s / (s + h), h the kernel's share of the
 * preset's flash_seq_half. */
static double flash_time(const zp_profile *p, const zp_op *op, const zp_op_info *info)
{
    if (info->flash == ZP_FLASH_FUSED)
        return 0.0;
    const double peak = zp_profile_gemm_peak(p);
    const int bwd = info->flash == ZP_FLASH_BWD;
    const double d = bwd ? op->n : op->k;
    const zp_flash_kernel *fk = zp_flash_kernel_get(op->flash - 1);
    if (!fk)
        fk = zp_flash_kernel_get(ZP_FLASH_KERNEL_FA2);
    const double hd = d > 0 ? fk->head_dim(d) : 128.0;
    const double pad = d > 0 ? hd / d : 1.0;
    const double work = (bwd ? 2.5 : 1.0) * op->flops * pad;
    const double s = op->m, half = p->dev.flash_seq_half * fk->seq_half_ratio;
    const double eff = p->dev.flash_eff * flash_speed(fk, hd) * (s > 0 ? s / (s + half) : 1.0);
    return p->dev.launch_s + work / (peak * eff);
}

double zp_device_op_time(const zp_profile *p, const zp_op *op, int gpus_sharing_cpu)
{
    const zp_op_info *i = zp_op_info_get(op->type);
    if (!i || !i->cost)
        return 0.0;
    if (op->flash && p->dev.flash_eff > 0) {
        double t = flash_time(p, op, i);
        return t > 0 ? t : 0.0;
    }
    return i->cost(p, op, i, gpus_sharing_cpu);
}

/* The host's side of an op (zp_device.h). A kernel of the model's forward or backward costs what a kernel
 * costs inside an eager framework's transformer block (dispatch_block_s: the module's __call__, autograd's
 * node, the views and reshapes around it that launch nothing, the dispatcher and the launch), ~5 bare ops'
 * on the H100 measured (vocab/zp_cluster.c, "Kernels"); the optimizer's fused multi-tensor calls a bare op's
 * (dispatch_s); a collective or a point-to-point op one torch.distributed call (coll_dispatch_s: c10d's
 * ProcessGroupNCCL work, its stream events and NCCL's enqueue); a copy a bare op's; nothing for what the host
 * runs itself (its Adam) or what is no GPU work (allocations, channels). A profile with a device model but
 * without the block's or the call's figure takes dispatch_s for them; a calibrated one without a device
 * model, the executor's measured backend calls (host_calls_time). */
static double host_calls_time(const zp_profile *p, const zp_op_info *i);

double zp_device_host_time(const zp_profile *p, const zp_op *op)
{
    const zp_op_info *i = zp_op_info_get(op->type);
    if (!i || i->stream == ZP_STREAM_CPU)
        return 0.0;
    if (p->dev.dispatch_s <= 0) /* no framework dispatch: a calibrated backend's calls, if measured (else 0) */
        return host_calls_time(p, i);
    const int bare = zp_op_part(op) == ZP_PART_OPTIMIZER || p->dev.dispatch_block_s <= 0;
    const double block = bare ? p->dev.dispatch_s : p->dev.dispatch_block_s;
    const double call = p->dev.coll_dispatch_s > 0 ? p->dev.coll_dispatch_s : p->dev.dispatch_s;
    switch (i->cls) {
    case ZP_OPC_COMPUTE:
        if (!i->cost)
            return 0.0;
        if (op->flash && p->dev.flash_eff > 0) /* one FlashAttention kernel; the ops inside it none */
            return i->flash == ZP_FLASH_FUSED ? 0.0 : block;
        if (p->fp8.recipe && i->fp8) { /* the FP8 casts are kernels the framework launches too */
            int casts;
            zp_device_fp8_cast_time(p, op, i->fp8, &casts);
            return block * (zp_device_launches(p, i) + casts);
        }
        return block * zp_device_launches(p, i);
    case ZP_OPC_COLL:
    case ZP_OPC_P2P: return call;
    case ZP_OPC_COPY: return p->dev.dispatch_s;
    default: return 0.0;
    }
}

/* A calibrated device backend's host side (the profile's "host_calls", zplan calibrate --backend cuda): the
 * executor issues each op's kernels through the backend, one call each, the GEMMs through cuBLAS (whose
 * host side is longer: its heuristics and argument checks); a collective or copy is one call. */
static double host_calls_time(const zp_profile *p, const zp_op_info *i)
{
    const double gemm = p->host_gemm_s > 0 ? p->host_gemm_s : p->host_kernel_s;
    switch (i->cls) {
    case ZP_OPC_COMPUTE:
        if (!i->cost)
            return 0.0;
        if (i->cost == zp_cost_gemm || i->cost == zp_cost_bgemm) /* and a bias's own kernel, as bias_time */
            return gemm + (i->bias == ZP_BIAS_FWD || i->bias == ZP_BIAS_WGRAD ? p->host_kernel_s : 0.0);
        return p->host_kernel_s * zp_device_launches(p, i);
    case ZP_OPC_COLL:
    case ZP_OPC_P2P:
    case ZP_OPC_COPY: return p->host_kernel_s;
    default: return 0.0;
    }
}
