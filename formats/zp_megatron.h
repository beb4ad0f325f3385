/* zp_megatron.h — a plan as Megatron-LM's command-line arguments (pretrain_gpt.py): tensor and pipeline
 * sizes, virtual stages, sequence parallelism, recompute granularity, micro and global batch, the
 * distributed optimizer (ZeRO stage 1), and the model: its shape, vocabulary, attention (GQA), MLP (SwiGLU),
 * norms, positions (rope and its base), embeddings, biases and dropouts. Reading them back is
 * zp_launch.h's zp_megatron_args_parse. */
#ifndef ZP_MEGATRON_H
#define ZP_MEGATRON_H

#include <stddef.h>

#include "zp_model.h"
#include "zp_plan.h"

/* ZP_OK when Megatron-LM runs the plan: ZeRO stage 0 or 1 (its distributed optimizer), no offload, no
 * checkpoints in host memory; else ZP_EUNSUPPORTED saying why. */
zp_status zp_megatron_check(const zp_plan *p);
/* ZP_OK when Megatron-LM's arguments can state the model's architecture (GPT, or Llama-like: GQA, SwiGLU,
 * RMSNorm, rope, untied head, no biases or Qwen2's QKV bias, uniform MoE); else ZP_EUNSUPPORTED naming what
 * it cannot (MLA, ALiBi, GeGLU, parallel blocks, extra norms, shared experts, dense blocks among MoE). */
zp_status zp_megatron_check_model(const zp_model *m);
/* The arguments, one line ("--tensor-model-parallel-size 8 --pipeline-model-parallel-size 2 ..."), into
 * buf; ZP_ERANGE when len is too small. */
zp_status zp_megatron_args(const zp_model *m, const zp_plan *p, char *buf, size_t len);
/* A comment line naming the plan (and `step`, a phrase such as "step 3.2 s (simgrid)", when not NULL), then
 * the arguments, written atomically to `path`. */
zp_status zp_megatron_write(const zp_model *m, const zp_plan *p, const char *step, const char *path);

/* Megatron-LM v2 (2021: --framework megatron-2021), whose arguments name fewer things and some otherwise
 * (--checkpoint-activations for full recompute): ZP_OK when they state the model, which must be a GPT
 * (LayerNorm, GeLU MLP, learned positions, tied embeddings, biases, one attention head per K/V head, no
 * experts); else ZP_EUNSUPPORTED naming what they cannot. */
zp_status zp_megatron_check_model_v2(const zp_model *m);
/* The plan as Megatron-LM v2's arguments (ZeRO stage 0 only: v2 had no distributed optimizer; no SP or
 * selective recompute), into buf. */
zp_status zp_megatron_args_v2(const zp_model *m, const zp_plan *p, char *buf, size_t len);
/* zp_megatron_write for a framework (a zp_framework_id): v2's arguments for megatron-2021, else
 * Megatron-core's. */
zp_status zp_megatron_write_for(const zp_model *m, const zp_plan *p, int framework, const char *step,
                                const char *path);

#endif
