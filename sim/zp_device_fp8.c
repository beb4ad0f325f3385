#include "zp_device_fp8.h"

#include <math.h>

#include "zp_fp8.h"

/* Bytes per element and kernels of one cast of a bf16 tensor to FP8, memory-bound (costed at the profile's
 * stream bandwidth plus a launch each):
 *  - Transformer Engine: one fused cast-transpose kernel (transformer_engine/common/transpose/
 *    cast_transpose.cu) reads the bf16 tensor (2 B) and writes its FP8 copy and FP8 transpose (1 + 1 B), the
 *    amax reduced in the same kernel; delayed scaling takes the scale from the amax history (one fused
 *    amax-and-scale update for all tensors per step, negligible), current scaling first reads the tensor
 *    once more for its amax (TE's Float8CurrentScaling: compute_amax, then the cast with that scale).
 *  - torchao in eager mode (zplan models no torch.compile): the amax is torch.max(torch.abs(x)) (abs reads
 *    2 and writes 2, max reads 2: 6 B, 2 kernels), the cast hp_tensor_to_float8 x.to(float32) * scale,
 *    clamp, .to(float8) (2+4, 4+4, 4+4, 4+1: 27 B, 4 kernels): 33 B and 6 kernels a tensor. */
#define ZP_FP8_TE_CAST_BYTES 4.0
#define ZP_FP8_AMAX_BYTES 2.0
#define ZP_FP8_EAGER_BYTES 33.0
#define ZP_FP8_EAGER_LAUNCHES 6
/* A transpose copy of an FP8 tensor (torchao's .t().contiguous() of grad_output for the weight gradient):
 * read 1, write 1. */
#define ZP_FP8_TRANSPOSE_BYTES 2.0

void zp_device_profile_fp8(const zp_cluster *c, int recipe, int all_gather, zp_profile *p)
{
    const zp_fp8_info *r = zp_fp8_get(recipe);
    if (!r || !(c->peak_flops_fp8 > 0))
        return;
    p->fp8.recipe = recipe;
    p->fp8.peak_flops = c->peak_flops_fp8;
    p->fp8.gemm_max_eff = c->gemm_efficiency * ZP_DEVICE_FP8_EFF_REL * r->gemm_rel;
    p->fp8.all_gather = all_gather;
}

static double stream_bw(const zp_profile *p) { return (p->copy_gbs > 0 ? p->copy_gbs : 100.0) * 1e9; }

/* The FP8 GEMM on the device model: the bf16 model's tile and wave quantization and k-loop fill
 * (zp_profile_gemm_shape_efficiency) over the FP8 peak and efficiency, its 1-byte operands and bf16 result
 * against HBM; without a device model (a calibrated host profile), the measured time over the FP8
 * speedup of the peaks. */
double zp_device_fp8_gemm_only(const zp_profile *p, double m, double n, double k, double batch)
{
    const double peak16 = zp_profile_gemm_peak(p);
    const zp_fp8_info *r = zp_fp8_get(p->fp8.recipe);
    if (!(p->dev.sms > 0) || !(p->dev.gemm_max_eff > 0))
        return batch * zp_profile_gemm_time(p, m, n, k) * peak16 /
               (p->fp8.peak_flops * ZP_DEVICE_FP8_EFF_REL * (r ? r->gemm_rel : 1.0));
    /* FP8's main loop steps twice as deep in k (Hopper's FP8 wgmma takes k = 32 an instruction against
     * bf16's 16; CUTLASS's and cuBLASLt's FP8 tiles are 128 deep against 64): its fill and drain cost two
     * such steps, so k_half doubles: k / (k + 2 k_half) in place of the bf16 model's k / (k + k_half).
     * Measured on an H100 (tests/sim/test_device.c, h100_gemms_against_a_measured_h100): at k = 512 the
     * bf16 fill alone left FP8 GEMMs 28% fast. */
    const double kh = p->dev.k_half;
    const double shape = zp_profile_gemm_shape_efficiency(p, m, n, k, batch) / p->dev.gemm_max_eff * (k + kh) /
                         (k + 2.0 * kh);
    const double eff = p->fp8.gemm_max_eff * shape;
    const double flops = 2.0 * m * n * k * batch, bytes = (m * k + k * n + 2.0 * m * n) * batch;
    return fmax(flops / (p->fp8.peak_flops * eff), bytes / stream_bw(p)) + p->dev.launch_s;
}

/* One cast of `elems` bf16 elements: its bytes (added to *bytes) and kernels (to *launches); `scale` bytes
 * of block scales an element written beside each of TE's two FP8 copies (the block-scaled recipes). */
static void cast_one(const zp_fp8_info *r, double elems, double scale, double *bytes, int *launches)
{
    if (r->te) {
        *bytes += elems * (ZP_FP8_TE_CAST_BYTES + 2.0 * scale + (r->amax_pass ? ZP_FP8_AMAX_BYTES : 0.0));
        *launches += 1 + r->amax_pass;
    } else {
        *bytes += elems * ZP_FP8_EAGER_BYTES;
        *launches += ZP_FP8_EAGER_LAUNCHES;
    }
}

/* What each GEMM casts (A(m, k) . B(k, n) as the op states it):
 *  forward Y = X.W: X (A) every micro-batch; W (B): TE once a step, in the first micro-batch's forward
 *    (Megatron-core passes is_first_microbatch: the FP8 weight and its transpose are cached for the rest);
 *    torchao every forward, unless FSDP2 all-gathers it in FP8 (cast on the 1/DP shard before the gather);
 *  input gradient dX = dY.W^T: dY (A) cast; W^T: TE's cached transpose, torchao casts the saved bf16
 *    weight again (Float8Linear saves high-precision tensors for backward) unless gathered in FP8;
 *  weight gradient dW = X^T.dY: TE's cast-transposes made both operands' transposes already; torchao
 *    casts the saved bf16 input again and transposes dY's FP8 copy (tensorwise), or casts both along the
 *    other axis (rowwise: no transpose of a rowwise-scaled tensor is scaled right). */
double zp_device_fp8_cast_time(const zp_profile *p, const zp_op *op, zp_fp8_op role, int *launches)
{
    const zp_fp8_info *r = zp_fp8_get(p->fp8.recipe);
    double bytes = 0;
    int n = 0;
    if (!r || role == ZP_FP8_OP_NONE) {
        *launches = 0;
        return 0.0;
    }
    const double batch = op->batch > 1 ? op->batch : 1.0; /* a grouped GEMM's experts: each its own tensors */
    const double a = op->m * op->k * batch, b = op->k * op->n * batch;
    if (role == ZP_FP8_OP_FWD || role == ZP_FP8_OP_DGRAD)
        cast_one(r, a, r->scale_act, &bytes, &n);
    if (role == ZP_FP8_OP_FWD && (r->te ? op->micro == 0 : !p->fp8.all_gather))
        cast_one(r, b, r->scale_weight, &bytes, &n);
    if (role == ZP_FP8_OP_DGRAD && !r->te && !p->fp8.all_gather)
        cast_one(r, b, r->scale_weight, &bytes, &n);
    if (role == ZP_FP8_OP_WGRAD && !r->te) {
        cast_one(r, a, r->scale_act, &bytes, &n);
        if (r->rowwise)
            cast_one(r, b, r->scale_weight, &bytes, &n);
        else
            bytes += b * ZP_FP8_TRANSPOSE_BYTES, n++;
    }
    *launches = n;
    const double launch = p->dev.sms > 0 ? p->dev.launch_s : 0.0;
    return bytes / stream_bw(p) + launch * n;
}

double zp_device_fp8_gemm_time(const zp_profile *p, const zp_op *op, const zp_op_info *info)
{
    int n;
    return zp_device_fp8_gemm_only(p, op->m, op->n, op->k, op->batch > 1 ? op->batch : 1.0) +
           zp_device_fp8_cast_time(p, op, info->fp8, &n);
}
