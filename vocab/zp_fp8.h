/* zp_fp8.h — FP8 training recipes as data (DESIGN.md: "precision recipes ... are a table too"): which
 * framework casts the linear layers' GEMM operands to FP8, how it finds their scales, what it keeps in
 * memory. The cost of the casts and GEMMs is the device model's (sim/zp_device.c), the memory the layout's
 * (sim/zp_layout.c); this table only says what each recipe does.
 *
 * Only the linear layers of the blocks (QKV, attention projection, MLP; MLA's projections) run in FP8:
 * attention's core stays bf16 (FlashAttention), as do the embedding, the LM head, the router and the
 * element-wise kernels (Transformer Engine's fp8_autocast covers te.Linear / LayerNormLinear / LayerNormMLP;
 * Megatron-core's output layer is not a TE module; torchao's convert_to_float8_training swaps nn.Linear and
 * torchtitan filters out the output layer). The 16-bit parameters, fp32 master weights and Adam's states
 * stay as in bf16 mixed precision. */
#ifndef ZP_FP8_H
#define ZP_FP8_H

#include "zp_status.h"

typedef enum {
    ZP_FP8_NONE = 0,
    ZP_FP8_DELAYED,          /* TE DelayedScaling: scales from an amax history, the amax taken in the cast */
    ZP_FP8_CURRENT,          /* TE Float8CurrentScaling: an amax pass over each tensor before its cast */
    ZP_FP8_AO_TENSORWISE,    /* torchao float8, dynamic tensorwise scales (cuBLASLt _scaled_mm) */
    ZP_FP8_AO_ROWWISE,       /* torchao float8, dynamic rowwise scales (CUTLASS rowwise _scaled_mm) */
    ZP_FP8_BLOCKWISE,        /* TE Float8BlockScaling (DeepSeek-V3's): an FP32 scale per 1x128 block of the
                                activations and gradients, per 128x128 block of the weights */
    ZP_FP8_MXFP8,            /* TE MXFP8BlockScaling: an E8M0 scale per 32 elements, applied by Blackwell's
                                block-scaled tensor cores */
    ZP_NFP8
} zp_fp8_recipe;

typedef struct {
    const char *name;        /* --fp8-recipe value */
    const char *megatron;    /* Megatron-core's --fp8-recipe value; NULL: not a Megatron recipe */
    const char *torchao;     /* torchtitan's [float8] recipe_name; NULL: not a torchao recipe */
    int te;                  /* Transformer Engine: a fused cast-transpose kernel per operand (the amax taken in
                                it), the weights' FP8 copy and transpose cached from the first micro-batch of a
                                step (2 bytes a linear parameter), the FP8 transpose of each input saved for
                                the weight gradient (1 byte an element instead of bf16's 2) */
    int amax_pass;           /* the scale is the tensor's own amax: one more read of the tensor before its cast */
    int rowwise;             /* scales per row: the weight gradient's operands are cast again along the other
                                axis from the saved bf16 tensors (no transpose of an FP8 tensor serves) */
    double gemm_rel;         /* the GEMM's rate relative to cuBLASLt's tensorwise FP8 GEMM */
    double scale_act;        /* bytes of scales per element of an FP8 copy of an activation or gradient (block
                                scales are written beside the data by the cast; 0: one scale a tensor) */
    double scale_weight;     /* ... and of a weight's FP8 copy */
    int needs_mx;            /* needs tensor cores that apply block scales (zp_cluster.fp8_mx: Blackwell) */
    const char *format;      /* Megatron-core's --fp8-format for it: hybrid (E4M3 forward, E5M2 gradients) for
                                the tensor-scaled recipes, e4m3 for the block-scaled ones (TE's defaults) */
} zp_fp8_info;

/* The recipe's row (NULL for ZP_FP8_NONE or out of range). */
const zp_fp8_info *zp_fp8_get(int recipe);
/* Bytes a linear parameter adds for Transformer Engine's cached FP8 weight copies (the weight and its
 * transpose or columnwise copy, each with its block scales): 2 (1 + scale_weight); 0 for torchao's recipes
 * and for none. */
double zp_fp8_weight_cache_bytes(int recipe);
/* A recipe by its --fp8-recipe name (case-insensitive); ZP_EINVAL naming the recipes when unknown. */
zp_status zp_fp8_parse(const char *name, int *out);
/* The recipe whose Megatron-core --fp8-recipe value is `name` ("delayed", "tensorwise", "blockwise",
 * "mxfp8"); ZP_EINVAL naming the values zplan models when it is another. */
zp_status zp_fp8_parse_megatron(const char *name, int *out);
/* The recipe of torchtitan's [float8] recipe_name ("tensorwise", "rowwise"); ZP_EINVAL otherwise. */
zp_status zp_fp8_parse_torchao(const char *name, int *out);
/* "delayed, current, torchao-tensorwise, torchao-rowwise, blockwise, mxfp8": for messages and --help. */
const char *zp_fp8_names(void);

#endif
