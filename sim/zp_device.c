#include "zp_device.h"

#include <stdio.h>

#include "zp_config.h"

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
    /* Fused Adam streams 28 bytes per parameter (fp32 param, m, v read and written; fp16 grad read; fp16
     * param written). */
    p->adam_bytes_per_param = 28.0;
    p->adam_params_per_s = stream / 28.0;
    p->cpu_adam_params_per_s = c->cpu_adam_rate;
    snprintf(p->gemm_dtype, sizeof p->gemm_dtype, "fp16");
    p->gemm_t0_s = 8e-6; /* launch + wave-quantisation tail of a cuBLAS GEMM */
    p->gemm_s_per_flop = 1.0 / (c->peak_flops * c->gemm_efficiency);
    p->gemm_s_per_byte = 1.0 / stream;
    const double lat[ZP_PROFILE_NSCOPE] = {c->nvlink_latency, c->ib_latency};
    const double bw[ZP_PROFILE_NSCOPE] = {c->nvlink_bw, c->ib_rail_bw * c->ib_efficiency * c->inter_channels};
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

/* The bias a GEMM carries on the host (GPU libraries fuse it into the epilogue): forward QKV and MLP-up
 * add it over C (m, n); the weight gradients of QKV, MLP-up and the projection also sum dY (k, n) over
 * its rows. 0 without the measured kernels. */
static double bias_time(const zp_profile *p, const zp_op *op, const zp_op_info *info)
{
    double t = -1;
    if (info->bias == ZP_BIAS_FWD)
        t = zp_profile_kernel_time(p, ZP_KERNEL_BIAS_ADD, op->m * op->n);
    else if (info->bias == ZP_BIAS_WGRAD)
        t = zp_profile_kernel_time(p, ZP_KERNEL_BIAS_GRAD, op->k * op->n);
    return t > 0 ? t : 0.0;
}

double zp_cost_gemm(const zp_profile *p, const zp_op *op, const zp_op_info *info, int gpus_per_cpu)
{
    (void)gpus_per_cpu;
    return zp_profile_gemm_time(p, op->m, op->n, op->k) + bias_time(p, op, info);
}

/* One launch of `batch` small GEMMs: the launch overhead once, the rest per entry. */
double zp_cost_bgemm(const zp_profile *p, const zp_op *op, const zp_op_info *info, int gpus_per_cpu)
{
    (void)info;
    (void)gpus_per_cpu;
    double one = zp_profile_gemm_time(p, op->m, op->n, op->k) - p->gemm_t0_s;
    return p->gemm_t0_s + op->batch * one;
}

/* A profile with the layer kernels behind the op: their measured cost over op->elems; else the bytes at
 * the copy bandwidth plus a launch. */
double zp_cost_eltwise(const zp_profile *p, const zp_op *op, const zp_op_info *info, int gpus_per_cpu)
{
    (void)gpus_per_cpu;
    double t = info->nkern > 0 && op->elems > 0 ? 0.0 : -1.0;
    for (int i = 0; t >= 0 && i < info->nkern; i++) {
        double ti = zp_profile_kernel_time(p, info->kern[i], op->elems);
        t = ti < 0 ? -1.0 : t + ti;
    }
    return t >= 0 ? t : ZP_DEVICE_ELTWISE_T0 + op->bytes / stream_bw(p);
}

double zp_cost_adam(const zp_profile *p, const zp_op *op, const zp_op_info *info, int gpus_per_cpu)
{
    (void)info;
    (void)gpus_per_cpu;
    double t = zp_profile_adam_time(p, op->bytes, 0);
    return t >= 0 ? t : op->bytes * 28.0 / stream_bw(p);
}

/* The host's Adam over the partition; the node's GPUs update theirs on the same CPU. */
double zp_cost_cpu_adam(const zp_profile *p, const zp_op *op, const zp_op_info *info, int gpus_per_cpu)
{
    (void)info;
    double rate = p->cpu_adam_params_per_s > 0 ? p->cpu_adam_params_per_s : 1e9;
    return op->bytes * (double)(gpus_per_cpu > 0 ? gpus_per_cpu : 1) / rate;
}

double zp_device_op_time(const zp_profile *p, const zp_op *op, int gpus_sharing_cpu)
{
    const zp_op_info *i = zp_op_info_get(op->type);
    return i && i->cost ? i->cost(p, op, i, gpus_sharing_cpu) : 0.0;
}
