#include "zp_fp8.h"

#include <string.h>
#include <strings.h>

/* Rowwise GEMMs: PyTorch's _scaled_mm runs tensorwise scales on cuBLASLt and rowwise scales on a CUTLASS
 * kernel of its own; on H100 "most shapes are within 90-100% of tensor-wise efficiency, but there's a long
 * tail going down to 50%" (pytorch/pytorch issue #147971, fast_accum, all M, N, K powers of two 512-16384):
 * 0.9, the bulk's lower edge. */
#define ZP_FP8_ROWWISE_GEMM_REL 0.9

static const zp_fp8_info g_fp8[ZP_NFP8] = {
    [ZP_FP8_DELAYED] = {.name = "delayed", .megatron = "delayed", .te = 1, .gemm_rel = 1.0},
    [ZP_FP8_CURRENT] = {.name = "current", .megatron = "tensorwise", .te = 1, .amax_pass = 1, .gemm_rel = 1.0},
    [ZP_FP8_AO_TENSORWISE] = {.name = "torchao-tensorwise", .torchao = "tensorwise", .amax_pass = 1,
                              .gemm_rel = 1.0},
    [ZP_FP8_AO_ROWWISE] = {.name = "torchao-rowwise", .torchao = "rowwise", .amax_pass = 1, .rowwise = 1,
                           .gemm_rel = ZP_FP8_ROWWISE_GEMM_REL},
};

const zp_fp8_info *zp_fp8_get(int recipe)
{
    return recipe > ZP_FP8_NONE && recipe < ZP_NFP8 ? &g_fp8[recipe] : NULL;
}

const char *zp_fp8_names(void) { return "delayed, current, torchao-tensorwise, torchao-rowwise"; }

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
    return ZP_FAIL(ZP_EINVAL, "--fp8-recipe %s: zplan models Megatron-core's delayed and tensorwise recipes only",
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
