#include "zp_device.h"

#include <stdio.h>
#include <string.h>

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
    p->peak_flops_fp16 = c->peak_flops;
    p->peak_flops_bf16 = c->peak_flops;
    p->peak_flops_fp32 = c->peak_flops / 8.0; /* fp32 without tensor cores: 1/8 of the tensor peak (V100) */
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

/* The layer kernels (kernels/zp_nn.h) the executor runs for an element-wise op of the schedule, each
 * over op->elems elements; 0 when the op is not one of the executor's. */
static int op_kernels(const char *name, zp_profile_kernel k[2])
{
    static const struct {
        const char *name;
        int n;
        zp_profile_kernel k[2];
    } map[] = {
        {"layernorm1", 1, {ZP_KERNEL_LAYERNORM_FWD}},
        {"final_layernorm", 1, {ZP_KERNEL_LAYERNORM_FWD}},
        {"residual_dropout_layernorm2", 2, {ZP_KERNEL_RESIDUAL_ADD, ZP_KERNEL_LAYERNORM_FWD}},
        {"residual_dropout", 1, {ZP_KERNEL_RESIDUAL_ADD}},
        {"softmax_dropout", 1, {ZP_KERNEL_SOFTMAX_FWD}},
        {"gelu", 1, {ZP_KERNEL_GELU_FWD}},
        {"embedding", 1, {ZP_KERNEL_EMBED_FWD}},
        {"softmax_cross_entropy", 1, {ZP_KERNEL_XENT_FWD}},
        {"residual_dropout_bwd", 1, {ZP_KERNEL_BIAS_GRAD}},
        {"gelu_bwd", 1, {ZP_KERNEL_GELU_BWD}},
        {"layernorm2_bwd", 1, {ZP_KERNEL_LAYERNORM_BWD}},
        {"layernorm1_bwd", 1, {ZP_KERNEL_LAYERNORM_BWD}},
        {"final_layernorm_bwd", 1, {ZP_KERNEL_LAYERNORM_BWD}},
        {"softmax_dropout_bwd", 1, {ZP_KERNEL_SOFTMAX_BWD}},
        {"softmax_cross_entropy_bwd", 1, {ZP_KERNEL_XENT_BWD}},
        {"embedding_bwd", 1, {ZP_KERNEL_EMBED_BWD}},
    };
    for (size_t i = 0; name && i < sizeof map / sizeof map[0]; i++)
        if (strcmp(name, map[i].name) == 0) {
            k[0] = map[i].k[0];
            k[1] = map[i].k[1];
            return map[i].n;
        }
    return 0;
}

/* Seconds of the measured layer kernels behind an element-wise op, -1 when the profile lacks one. */
static double eltwise_measured(const zp_profile *p, const zp_op *op)
{
    zp_profile_kernel k[2];
    int n = op_kernels(op->name, k);
    if (n == 0 || !(op->elems > 0))
        return -1;
    double t = 0;
    for (int i = 0; i < n; i++) {
        double ti = zp_profile_kernel_time(p, k[i], op->elems);
        if (ti < 0)
            return -1;
        t += ti;
    }
    return t;
}

/* The executor's GEMMs that carry a bias on the host (GPU libraries fuse it into the epilogue):
 * forward QKV and MLP-up add the bias over C (m, n); the weight gradients of QKV, MLP-up and the
 * attention projection also sum dY (k, n) over its rows. 0 without the measured kernels. */
static double gemm_bias_time(const zp_profile *p, const zp_op *op)
{
    const char *n = op->name ? op->name : "";
    double t = -1;
    if (strcmp(n, "qkv") == 0 || strcmp(n, "mlp_up") == 0)
        t = zp_profile_kernel_time(p, ZP_KERNEL_BIAS_ADD, op->m * op->n);
    else if (strcmp(n, "qkv_wgrad") == 0 || strcmp(n, "mlp_up_wgrad") == 0 || strcmp(n, "attn_proj_wgrad") == 0)
        t = zp_profile_kernel_time(p, ZP_KERNEL_BIAS_GRAD, op->k * op->n);
    return t > 0 ? t : 0.0;
}

double zp_device_op_time(const zp_profile *p, const zp_op *op, int gpus_sharing_cpu)
{
    if (op->kind == ZP_OP_CPU) {
        double rate = p->cpu_adam_params_per_s > 0 ? p->cpu_adam_params_per_s : 1e9;
        return op->bytes * (double)(gpus_sharing_cpu > 0 ? gpus_sharing_cpu : 1) / rate;
    }
    if (op->kind != ZP_OP_COMPUTE)
        return 0.0;
    double stream = (p->copy_gbs > 0 ? p->copy_gbs : 100.0) * 1e9;
    switch (op->ckind) {
    case ZP_CK_GEMM: return zp_profile_gemm_time(p, op->m, op->n, op->k) + gemm_bias_time(p, op);
    case ZP_CK_BGEMM: {
        /* one launch of `batch` small GEMMs: the launch overhead once, the rest per entry */
        double one = zp_profile_gemm_time(p, op->m, op->n, op->k) - p->gemm_t0_s;
        return p->gemm_t0_s + op->batch * one;
    }
    case ZP_CK_ELEMENTWISE: {
        double t = eltwise_measured(p, op); /* a profile with the layer kernels: their measured cost */
        return t >= 0 ? t : ZP_DEVICE_ELTWISE_T0 + op->bytes / stream;
    }
    case ZP_CK_ADAM: {
        double t = zp_profile_adam_time(p, op->bytes, 0);
        return t >= 0 ? t : op->bytes * 28.0 / stream;
    }
    }
    return 0.0;
}
