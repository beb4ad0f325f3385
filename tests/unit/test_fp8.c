/* FP8 training (issue #28 point 1): the FP8 peak of the presets, the linear GEMMs' rate and casts on the
 * device model, the memory terms of each recipe, FSDP2's FP8 all-gather. */
#include <criterion/criterion.h>

#include "../zp_test.h"
#include <math.h>

#include "zp_device.h"
#include "zp_device_fp8.h"
#include "zp_fp8.h"
#include "zp_memory.h"
#include "zp_ops.h"
#include "zp_zoo.h"

Test(fp8, presets_peak)
{
    cr_expect_float_eq(zp_cluster_peak_flops(zp_test_preset("dgx-h100"), "fp8"), 1979e12, 1);
    cr_expect_float_eq(zp_cluster_peak_flops(zp_test_preset("dgx-h200"), "fp8"), 1979e12, 1);
    cr_expect(zp_cluster_has_fp8(zp_test_preset("dgx-h100")));
    cr_expect(!zp_cluster_has_fp8(zp_test_preset("dgx-a100")));
    cr_expect(!zp_cluster_has_fp8(zp_test_preset("dgx2")));
    cr_expect_eq(zp_cluster_peak_flops(zp_test_preset("dgx-a100"), "fp8"), 0);
}

Test(fp8, recipes_parse)
{
    int r = 0;
    cr_expect_eq(zp_fp8_parse("delayed", &r), ZP_OK);
    cr_expect_eq(r, ZP_FP8_DELAYED);
    cr_expect_eq(zp_fp8_parse("TORCHAO-ROWWISE", &r), ZP_OK);
    cr_expect_eq(r, ZP_FP8_AO_ROWWISE);
    cr_expect_eq(zp_fp8_parse("nvfp4", &r), ZP_EINVAL);
    cr_expect_eq(zp_fp8_parse("mxfp8", &r), ZP_OK);
    cr_expect_eq(r, ZP_FP8_MXFP8);
    cr_expect_eq(zp_fp8_parse_megatron("tensorwise", &r), ZP_OK);
    cr_expect_eq(r, ZP_FP8_CURRENT);
    cr_expect_eq(zp_fp8_parse_megatron("blockwise", &r), ZP_OK);
    cr_expect_eq(r, ZP_FP8_BLOCKWISE);
    cr_expect_eq(zp_fp8_parse_megatron("nvfp4", &r), ZP_EINVAL);
    cr_expect_eq(zp_fp8_parse_torchao("mxfp8", &r), ZP_EINVAL); /* torchao's MX converters are not modelled */
    cr_expect_eq(zp_fp8_parse_torchao("rowwise", &r), ZP_OK);
    cr_expect_eq(r, ZP_FP8_AO_ROWWISE);
}

static void h100_fp8(int recipe, zp_profile *p)
{
    zp_device_profile_builtin(zp_test_preset("dgx-h100"), p);
    zp_device_profile_fp8(zp_test_preset("dgx-h100"), recipe, 0, p);
}

/* A large GEMM: FP8 runs at the FP8 peak times the bf16 efficiency times the kernel benchmark's ratio
 * (cutlass #1662: 1296.9 of 1979 in FP8, 764.9 of 989 in bf16), 1.70x the bf16 GEMM. */
Test(fp8, gemm_rate_large_shape)
{
    zp_profile p;
    h100_fp8(ZP_FP8_DELAYED, &p);
    const double m = 16384, n = 8192, k = 8192;
    const double t16 = zp_profile_gemm_time(&p, m, n, k), t8 = zp_device_fp8_gemm_only(&p, m, n, k, 1);
    const double rate8 = 2 * m * n * k / t8;
    cr_expect(rate8 > 1200e12 && rate8 < 1320e12, "FP8 GEMM %.0f TFLOP/s", rate8 / 1e12);
    cr_expect_float_eq(t16 / t8, 1979.0 / 989.0 * ZP_DEVICE_FP8_EFF_REL, 0.02, "speedup %.3f", t16 / t8);
    cr_expect_float_eq(t16 / t8, 1296.9 / 764.9, 0.02);
    /* rowwise scaling's CUTLASS GEMM: 0.9 of tensorwise (pytorch #147971) */
    zp_profile r;
    h100_fp8(ZP_FP8_AO_ROWWISE, &r);
    cr_expect_float_eq(zp_device_fp8_gemm_only(&r, m, n, k, 1) / t8, 1 / 0.9, 0.01);
    /* small GEMMs gain less: the launch and the waves do not shrink */
    const double s16 = zp_profile_gemm_time(&p, 1024, 1024, 1024), s8 = zp_device_fp8_gemm_only(&p, 1024, 1024, 1024, 1);
    cr_expect(s16 / s8 < t16 / t8, "small %.2f large %.2f", s16 / s8, t16 / t8);
}

/* The casts: memory-bound kernels at the profile's stream bandwidth, each with a launch. */
Test(fp8, cast_bytes_by_recipe_and_role)
{
    zp_profile p;
    h100_fp8(ZP_FP8_DELAYED, &p);
    const double bw = p.copy_gbs * 1e9, L = p.dev.launch_s;
    zp_op op = {.m = 8192, .n = 4096, .k = 4096, .micro = 0};
    int nl;
    /* TE delayed, forward of the first micro-batch: X and W cast-transposed, 4 B an element each */
    double t = zp_device_fp8_cast_time(&p, &op, ZP_FP8_OP_FWD, &nl);
    cr_expect_float_eq(t, 4 * (op.m * op.k + op.k * op.n) / bw + 2 * L, 1e-12);
    cr_expect_eq(nl, 2);
    op.micro = 1; /* later micro-batches: the cached FP8 weight */
    cr_expect_float_eq(zp_device_fp8_cast_time(&p, &op, ZP_FP8_OP_FWD, &nl), 4 * op.m * op.k / bw + L, 1e-12);
    cr_expect_eq(zp_device_fp8_cast_time(&p, &op, ZP_FP8_OP_WGRAD, &nl), 0);
    /* current scaling: one more read of each tensor for its amax */
    h100_fp8(ZP_FP8_CURRENT, &p);
    cr_expect_float_eq(zp_device_fp8_cast_time(&p, &op, ZP_FP8_OP_DGRAD, &nl), 6 * op.m * op.k / bw + 2 * L, 1e-12);
    /* torchao eager: 33 B and 6 kernels a cast; the weight gradient casts X again and transposes dY */
    h100_fp8(ZP_FP8_AO_TENSORWISE, &p);
    cr_expect_float_eq(zp_device_fp8_cast_time(&p, &op, ZP_FP8_OP_WGRAD, &nl),
                       (33 * op.m * op.k + 2 * op.k * op.n) / bw + 7 * L, 1e-12);
    /* the op's time is the GEMM and its casts; ops that are not linear layers stay bf16 */
    const zp_op_info *qkv = zp_op_info_get(ZP_OPK_QKV);
    cr_assert(qkv && qkv->fp8 == ZP_FP8_OP_FWD);
    cr_expect_eq(zp_op_info_get(ZP_OPK_LM_HEAD)->fp8, ZP_FP8_OP_NONE);
    cr_expect_eq(zp_op_info_get(ZP_OPK_ATTN_SCORES)->fp8, ZP_FP8_OP_NONE);
    cr_expect_eq(zp_op_info_get(ZP_OPK_EXPERT_UP_WGRAD)->fp8, ZP_FP8_OP_WGRAD); /* TE's GroupedLinear */
    /* a grouped GEMM of 4 experts: 4 times one expert's GEMM (its waves shared) and its casts */
    zp_op g = op;
    g.batch = 4;
    cr_expect_float_eq(zp_device_fp8_cast_time(&p, &g, ZP_FP8_OP_WGRAD, &nl),
                       4 * (33 * op.m * op.k + 2 * op.k * op.n) / bw + 7 * L, 1e-12);
    cr_expect(zp_device_fp8_gemm_only(&p, 8192, 4096, 4096, 4) <= 4 * zp_device_fp8_gemm_only(&p, 8192, 4096, 4096, 1));
}

/* The block-scaled recipes: TE's quantize writes both FP8 copies and their scales in one pass, no amax
 * pass: 4 B an element and 2 x the scale bytes (blockwise: an FP32 scale per 128 activations, per 128 x 128
 * weights; MXFP8: one byte per 32 of either). Only Blackwell's tensor cores take MXFP8. */
Test(fp8, block_scaled_casts_and_gpus)
{
    zp_profile p;
    zp_op op = {.m = 8192, .n = 4096, .k = 4096, .micro = 0};
    int nl;
    h100_fp8(ZP_FP8_BLOCKWISE, &p);
    const double bw = p.copy_gbs * 1e9, L = p.dev.launch_s;
    const double a = op.m * op.k, w = op.k * op.n;
    cr_expect_float_eq(zp_device_fp8_cast_time(&p, &op, ZP_FP8_OP_FWD, &nl),
                       ((4 + 2 * 4.0 / 128) * a + (4 + 2 * 4.0 / 16384) * w) / bw + 2 * L, 1e-12);
    cr_expect_eq(nl, 2);
    cr_expect_eq(zp_device_fp8_cast_time(&p, &op, ZP_FP8_OP_WGRAD, &nl), 0); /* both transposes made already */
    h100_fp8(ZP_FP8_MXFP8, &p);
    cr_expect_float_eq(zp_device_fp8_cast_time(&p, &op, ZP_FP8_OP_FWD, &nl), (4 + 2.0 / 32) * (a + w) / bw + 2 * L,
                       1e-12);
    /* the GEMM at the tensorwise rate */
    zp_profile d;
    h100_fp8(ZP_FP8_DELAYED, &d);
    cr_expect_float_eq(zp_device_fp8_gemm_only(&p, 16384, 8192, 8192, 1), zp_device_fp8_gemm_only(&d, 16384, 8192, 8192, 1),
                       1e-15);
    cr_expect(zp_fp8_get(ZP_FP8_MXFP8)->needs_mx && !zp_fp8_get(ZP_FP8_BLOCKWISE)->needs_mx);
    cr_expect(zp_test_preset("dgx-b200")->fp8_mx && zp_test_preset("gb200-nvl72")->fp8_mx);
    cr_expect(!zp_test_preset("dgx-h100")->fp8_mx && !zp_test_preset("dgx-h200")->fp8_mx);
}

static void mem_of(const char *model, int stage, int recipe, int all_gather, zp_memory *out)
{
    const zp_zoo_entry *z = zp_zoo_find(model);
    cr_assert(z);
    zp_plan p;
    zp_plan_default(&p, 8);
    p.stage = stage;
    p.checkpoint = 0;
    p.flash_attn = 1;
    p.bf16 = 1;
    p.fp8 = recipe;
    p.fp8_all_gather = all_gather;
    cr_assert_eq(zp_memory_estimate(&z->model, &p, out), ZP_OK);
}

/* TE keeps FP8 weights and transposes (2 B a linear parameter held) and saves FP8 linear inputs (1 B an
 * element less); torchao keeps neither. */
Test(fp8, memory_terms)
{
    const zp_model *m = &zp_zoo_find("llama-3-8b")->model;
    zp_memory b, te, ao;
    mem_of("llama-3-8b", 1, ZP_FP8_NONE, 0, &b);
    mem_of("llama-3-8b", 1, ZP_FP8_DELAYED, 0, &te);
    mem_of("llama-3-8b", 1, ZP_FP8_AO_TENSORWISE, 0, &ao);
    const double linear = zp_model_params(m) - zp_model_params_embedding(m) - zp_model_params_head(m);
    cr_expect_float_eq(te.params - b.params, 2 * linear, 1e3, "FP8 cache %.4g B", te.params - b.params);
    /* saved inputs of one micro-batch (TP 1): QKV and MLP inputs (h each), projection (a * dv = h), down (f) */
    const double tokens = (double)m->seq, saved = tokens * (3.0 * m->hidden + m->ffn) * m->layers;
    cr_expect_float_eq(b.activations - te.activations, saved, 1e3, "saved %.4g B", b.activations - te.activations);
    cr_expect_float_eq(ao.params, b.params, 1);
    cr_expect_float_eq(ao.activations, b.activations, 1);
    /* MXFP8: each FP8 copy carries a 1-byte scale per 32 elements, the weights' two and the saved inputs' one */
    zp_memory mx;
    mem_of("llama-3-8b", 1, ZP_FP8_MXFP8, 0, &mx);
    cr_expect_float_eq(mx.params - b.params, 2 * (1 + 1.0 / 32) * linear, 1e3);
    cr_expect_float_eq(b.activations - mx.activations, (1 - 1.0 / 32) * saved, 1e3);
}

/* An MoE block's experts save FP8 inputs too (TE's GroupedLinear): Mixtral at TP 1 saves, a token a layer, the
 * attention's and the MoE's inputs (2h), the tokens' k copies at the experts (kh), the projection's input (a·dv)
 * and the experts' down-projection inputs (k·fe): 1 byte each less than bf16. */
Test(fp8, memory_moe_experts_saved_in_fp8)
{
    const zp_model *m = &zp_zoo_find("mixtral-8x7b")->model;
    cr_assert(m->experts > 1 && m->shared_experts == 0 && zp_model_moe_blocks(m) == m->layers);
    zp_memory b, te;
    mem_of("mixtral-8x7b", 1, ZP_FP8_NONE, 0, &b);
    mem_of("mixtral-8x7b", 1, ZP_FP8_DELAYED, 0, &te);
    const double h = (double)m->hidden, k = (double)m->top_k;
    const double per = 2 * h + k * h + (double)m->heads * (double)zp_model_v_head_dim(m) +
                       k * (double)zp_model_expert_ffn(m);
    const double saved = (double)m->seq * per * (double)m->layers;
    cr_expect_float_eq(b.activations - te.activations, saved, 1e3, "saved %.6g B, want %.6g",
                       b.activations - te.activations, saved);
}

/* FSDP2's FP8 all-gather: stage 3's gathered blocks in 1 byte. */
Test(fp8, all_gather_pool)
{
    zp_memory b, g;
    mem_of("llama-3-8b", 3, ZP_FP8_AO_TENSORWISE, 0, &b);
    mem_of("llama-3-8b", 3, ZP_FP8_AO_TENSORWISE, 1, &g);
    cr_expect(g.buffers < b.buffers, "buffers %.4g vs %.4g", g.buffers, b.buffers);
}
