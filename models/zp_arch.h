/* zp_arch.h — (models/ internal) the architecture of each model family as designated-initializer
 * fragments of a zp_model, shared by the zoo's entries and the HuggingFace family table so that a
 * family is described once. GPT-2 is every field at zero. Each fragment sets a field at most once
 * (-Woverride-init). */
#ifndef ZP_ARCH_H
#define ZP_ARCH_H

#include "zp_model.h"

/* Llama, Mistral, Mixtral (+ experts), DeepSeek (+ MLA, experts): separate bias-less Q/K/V, SwiGLU,
 * RMSNorm, RoPE, untied LM head; no dropout (neither Meta's code nor transformers' has a residual dropout,
 * and attention_dropout is 0; Megatron-LM's Llama recipes set both dropouts to 0), so no masks kept. */
#define ZP_ARCH_LLAMA                                                                                          \
    .qkv_separate = 1, .mlp = ZP_MLP_GATED, .act = ZP_ACT_SILU, .norm = ZP_NORM_RMSNORM, .nobias = ZP_BIAS_ALL, \
    .pos = ZP_POS_ROTARY, .untied = 1, .no_dropout = ZP_DROPOUT_NO_HIDDEN | ZP_DROPOUT_NO_ATTN
/* Qwen2 (and Qwen2-MoE): Llama with biases on Q, K and V only. */
#define ZP_ARCH_QWEN2                                                                                          \
    .qkv_separate = 1, .mlp = ZP_MLP_GATED, .act = ZP_ACT_SILU, .norm = ZP_NORM_RMSNORM,                       \
    .nobias = ZP_BIAS_ATTN_OUT | ZP_BIAS_MLP_UP | ZP_BIAS_MLP_DOWN, .pos = ZP_POS_ROTARY, .untied = 1,           \
    .no_dropout = ZP_DROPOUT_NO_HIDDEN | ZP_DROPOUT_NO_ATTN
/* Gemma: GeGLU (tanh GeLU), tied embeddings; Gemma 2 adds .block_norms = 4. */
#define ZP_ARCH_GEMMA                                                                                          \
    .qkv_separate = 1, .mlp = ZP_MLP_GATED, .act = ZP_ACT_GELU, .norm = ZP_NORM_RMSNORM, .nobias = ZP_BIAS_ALL, \
    .pos = ZP_POS_ROTARY, .no_dropout = ZP_DROPOUT_NO_HIDDEN | ZP_DROPOUT_NO_ATTN
/* Phi-3: Llama with fused QKV and fused gate/up tensors. */
#define ZP_ARCH_PHI3                                                                                           \
    .gate_up_fused = 1, .mlp = ZP_MLP_GATED, .act = ZP_ACT_SILU, .norm = ZP_NORM_RMSNORM, .nobias = ZP_BIAS_ALL, \
    .pos = ZP_POS_ROTARY, .untied = 1
/* GPT-NeoX / Pythia: fused QKV, LayerNorm, plain GeLU MLP with biases, parallel block with two norms,
 * rotary, untied. */
#define ZP_ARCH_NEOX .pos = ZP_POS_ROTARY, .parallel = 1, .untied = 1
/* GPT-J: parallel block with ONE LayerNorm, bias-less attention, rotary, untied LM head with a bias. */
#define ZP_ARCH_GPTJ                                                                                           \
    .qkv_separate = 1, .nobias = ZP_BIAS_QKV | ZP_BIAS_ATTN_OUT, .pos = ZP_POS_ROTARY, .parallel = 1,          \
    .block_norms = 1, .untied = 1, .lm_head_bias = 1
/* Falcon-7B (parallel block, one norm, multi-query, no biases); Falcon-40B/180B set kv_heads and two
 * norms (new_decoder_architecture). */
#define ZP_ARCH_FALCON .nobias = ZP_BIAS_ALL, .pos = ZP_POS_ROTARY, .parallel = 1, .block_norms = 1
/* OPT: learned positions (2 extra rows), ReLU, separate Q/K/V with biases, tied. */
#define ZP_ARCH_OPT .qkv_separate = 1, .act = ZP_ACT_RELU
/* BLOOM: ALiBi and a LayerNorm after the token embedding. */
#define ZP_ARCH_BLOOM .pos = ZP_POS_ALIBI, .embed_norm = 1

#endif
