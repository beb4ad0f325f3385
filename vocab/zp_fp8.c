#include "zp_fp8.h"

#include <string.h>
#include <strings.h>

/* Rowwise GEMMs: PyTorch's _scaled_mm runs tensorwise scales on cuBLASLt and rowwise scales on a CUTLASS
 * kernel of its own; on H100 "most shapes are within 90-100% of tensor-wise efficiency, but there's a long
 * tail going down to 50%" (pytorch/pytorch issue #147971, fast_accum, all M, N, K powers of two 512-16384):
 * 0.9, the bulk's lower edge. */
#define ZP_FP8_ROWWISE_GEMM_REL 0.9

/* Block-scaled GEMMs:
 *  - blockwise on Hopper: Transformer Engine runs it on cuBLASLt's 1x128 / 128x128 FP32 scale modes
 *    (CUDA 12.9: CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F, BLK128x128_32F), which NVIDIA measures at 1.75x the
 *    BF16 GEMM on large shapes ("Boosting Matrix Multiplication Speed and Flexibility with NVIDIA cuBLAS
 *    12.9", May 2025); the tensorwise GEMM this table is relative to is 1.70x BF16 on H100 (cutlass #1662,
 *    sim/zp_device_fp8.h): 1.0, no slower. DeepSeek's DeepGEMM, the same 1x128 / 128x128 scaling with its
 *    CUDA-core promotion, reports "1350+ FP8 TFLOPS" on H800 (README, Feb 2025), at cuBLASLt's tensorwise
 *    1,297 on H100 (cutlass #1662) alike.
 *  - mxfp8 on Blackwell: the tensor cores apply the E8M0 block scales in the MMA itself (tcgen05.mma
 *    kind::mxf8f6f4, PTX ISA 8.7) at the FP8 rate: the B200 datasheet's 4.5 PFLOP/s dense FP8 holds for
 *    MXFP8 (TE docs, "MXFP8": "native hardware acceleration on Blackwell"); cuBLASLt's MXFP8 GEMM: 1.0.
 * Their casts are TE's quantize kernels, which write the rowwise and the columnwise FP8 copies and their
 * scales in one pass over the bf16 tensor (no amax pass: each block's scale is its own amax): blockwise
 * 4 bytes an FP32 scale per 128 elements of activations and gradients (1/32 byte an element), per 128 x 128
 * of weights (1/4096); mxfp8 a 1-byte E8M0 scale per 32 elements of either (TE docs, "FP8 Blockwise
 * Scaling", "MXFP8": data formats). */
static const zp_fp8_info g_fp8[ZP_NFP8] = {
    [ZP_FP8_DELAYED] = {.name = "delayed", .megatron = "delayed", .te = 1, .gemm_rel = 1.0, .format = "hybrid"},
    [ZP_FP8_CURRENT] = {.name = "current", .megatron = "tensorwise", .te = 1, .amax_pass = 1, .gemm_rel = 1.0,
                        .format = "hybrid"},
    [ZP_FP8_AO_TENSORWISE] = {.name = "torchao-tensorwise", .torchao = "tensorwise", .amax_pass = 1,
                              .gemm_rel = 1.0},
    [ZP_FP8_AO_ROWWISE] = {.name = "torchao-rowwise", .torchao = "rowwise", .amax_pass = 1, .rowwise = 1,
                           .gemm_rel = ZP_FP8_ROWWISE_GEMM_REL},
    [ZP_FP8_BLOCKWISE] = {.name = "blockwise", .megatron = "blockwise", .te = 1, .gemm_rel = 1.0,
                          .scale_act = 4.0 / 128.0, .scale_weight = 4.0 / (128.0 * 128.0), .format = "e4m3"},
    [ZP_FP8_MXFP8] = {.name = "mxfp8", .megatron = "mxfp8", .te = 1, .gemm_rel = 1.0, .scale_act = 1.0 / 32.0,
                      .scale_weight = 1.0 / 32.0, .needs_mx = 1, .format = "e4m3"},
};

const zp_fp8_info *zp_fp8_get(int recipe)
{
    return recipe > ZP_FP8_NONE && recipe < ZP_NFP8 ? &g_fp8[recipe] : NULL;
}

double zp_fp8_weight_cache_bytes(int recipe)
{
    const zp_fp8_info *r = zp_fp8_get(recipe);
    return r && r->te ? 2.0 * (1.0 + r->scale_weight) : 0.0;
}

const char *zp_fp8_names(void) { return "delayed, current, torchao-tensorwise, torchao-rowwise, blockwise, mxfp8"; }

zp_status zp_fp8_parse(const char *name, int *out)
{
    for (int r = ZP_FP8_NONE + 1; r < ZP_NFP8; r++)
        if (strcasecmp(name, g_fp8[r].name) == 0) {
            *out = r;
            return ZP_OK;
        }
    return ZP_FAIL(ZP_EINVAL, "--fp8-recipe: '%s' is not an FP8 recipe (use %s)", name, zp_fp8_names());
}

zp_status zp_fp8_parse_megatron(const char *name, int *out)
{
    for (int r = ZP_FP8_NONE + 1; r < ZP_NFP8; r++)
        if (g_fp8[r].megatron && strcmp(name, g_fp8[r].megatron) == 0) {
            *out = r;
            return ZP_OK;
        }
    return ZP_FAIL(ZP_EINVAL, "--fp8-recipe %s: not a Megatron-core recipe zplan models (use delayed, tensorwise, "
                              "blockwise or mxfp8)",
                   name);
}

zp_status zp_fp8_parse_torchao(const char *name, int *out)
{
    for (int r = ZP_FP8_NONE + 1; r < ZP_NFP8; r++)
        if (g_fp8[r].torchao && strcmp(name, g_fp8[r].torchao) == 0) {
            *out = r;
            return ZP_OK;
        }
    return ZP_FAIL(ZP_EINVAL, "recipe_name \"%s\": zplan models torchao's tensorwise and rowwise float8 only", name);
}
