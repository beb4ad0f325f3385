/* zp_megatron.c — a plan as Megatron-LM arguments (see zp_megatron.h). */
#include "zp_megatron.h"

#include "zp_dispatch.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "zp_fp8.h"
#include "zp_framework.h"
#include "zp_io.h"
#include "zp_launch.h"
#include "zp_pipeline.h"

zp_status zp_megatron_check(const zp_plan *p)
{
    if (p->stage >= 2)
        return ZP_FAIL(ZP_EUNSUPPORTED, "ZeRO stage %d is not Megatron-LM's (its distributed optimizer is stage 1): "
                                        "run this plan with DeepSpeed (--emit-ds-config)",
                       p->stage);
    if (p->offload != ZP_OFFLOAD_NONE)
        return ZP_FAIL(ZP_EUNSUPPORTED, "offload %s is DeepSpeed's, not Megatron-LM's: use --emit-ds-config",
                       zp_offload_name(p->offload));
    if (p->pa_cpu)
        return ZP_FAIL(ZP_EUNSUPPORTED, "checkpoints in host memory (ZeRO-R Pa+cpu) are DeepSpeed's: use "
                                        "--emit-ds-config");
    if (p->tp_overlap == ZP_TP_OVERLAP_ASYNC && p->mp > 1)
        return ZP_FAIL(ZP_EUNSUPPORTED, "async TP (--tp-comm-overlap async) is torchtitan's: Megatron-core overlaps "
                                        "TP with Transformer Engine's userbuffers (--tp-comm-overlap te)");
    if (p->op_sac || (p->checkpoint && p->ckpt_every > 1)) /* its --recompute-method block counts from the first */
        return ZP_FAIL(ZP_EUNSUPPORTED, "%s is torchtitan's, not Megatron-LM's: use --emit-torchtitan",
                       p->op_sac ? "op-level recompute (--recompute op)" : "every k-th block checkpointed");
    const zp_fp8_info *f8 = zp_fp8_get(p->fp8);
    if (f8 && !f8->megatron)
        return ZP_FAIL(ZP_EUNSUPPORTED, "FP8 recipe %s is torchao's, not Megatron-core's (use --fp8-recipe delayed, "
                                        "current, blockwise or mxfp8, or --emit-torchtitan)",
                       f8->name);
    /* Megatron-core's own rules for the combined 1F1B (transformer_config.py __post_init__) */
    if (p->ep_overlap && p->ep > 1 && p->checkpoint)
        return ZP_FAIL(ZP_EUNSUPPORTED, "Megatron-core refuses --overlap-moe-expert-parallel-comm with full "
                                        "recompute ('disable full recomputation when enabling "
                                        "overlap_moe_expert_parallel_comm'): use --recompute selective or none");
    if (p->ep_overlap && p->ep > 1 && p->pp > 1 && p->schedule != ZP_PP_INTERLEAVED)
        return ZP_FAIL(ZP_EUNSUPPORTED, "Megatron-core runs --overlap-moe-expert-parallel-comm beside pipeline stages "
                                        "only interleaved ('virtual_pipeline_model_parallel_size must be specified "
                                        "when pipeline_model_parallel_size > 1'): give --virtual-stages");
    const zp_dispatch_info *d = zp_dispatch_get(p->dispatcher);
    if (p->ep > 1 && d && !d->megatron)
        return ZP_FAIL(ZP_EUNSUPPORTED, "--moe-dispatcher %s is DeepSeek's own training, not a Megatron-core option "
                                        "(its DeepEP dispatcher sends bf16: --moe-dispatcher deepep)",
                       d->name);
    return ZP_OK;
}

/* The model's MoE blocks in --moe-layer-freq (add_moe_layers) as zplan reads it back (formats/
 * zp_launch_plan.c: a list of at most ZP_LAUNCH_MAX_LAYERS, its dense blocks after the first MoE block at
 * most ZP_MODEL_MAX_DENSE_LIST). */
static int moe_layers_writable(const zp_model *m)
{
    if (zp_model_moe_blocks(m) == m->layers || (m->moe_every > 1 && m->moe_phase == 0 && m->dense_layers <= 0 &&
                                                m->n_dense_list == 0))
        return 1;
    if (m->layers > ZP_LAUNCH_MAX_LAYERS)
        return 0;
    int64_t i = 0, inner = 0;
    while (i < m->layers && !zp_model_block_is_moe(m, i))
        i++;
    for (; i < m->layers; i++)
        inner += !zp_model_block_is_moe(m, i);
    return inner <= ZP_MODEL_MAX_DENSE_LIST;
}

zp_status zp_megatron_check_model(const zp_model *m)
{
    const char *why = NULL;
    if (m->pos == ZP_POS_ALIBI)
        why = "ALiBi positions (Megatron-LM has learned, rope and none)";
    else if (m->mlp == ZP_MLP_GATED && m->act != ZP_ACT_SILU)
        why = "a gated MLP other than SwiGLU (--swiglu is its only gated one)";
    else if (m->parallel)
        why = "parallel attention and MLP blocks";
    else if (m->norm == ZP_NORM_PLAIN || m->block_norms != 0)
        why = "norms other than one LayerNorm or RMSNorm before the attention and one before the MLP";
    else if (m->embed_dim > 0 && m->embed_dim != m->hidden)
        why = "a token embedding narrower than the model with projections";
    else if (m->experts > 0 && m->shared_experts > 0 && m->shared_gate)
        why = "a gated shared expert (Qwen2-MoE's; zplan writes Megatron-core's ungated shared experts only)";
    else if (m->experts > 0 && !moe_layers_writable(m))
        why = "a pattern of MoE blocks that --moe-layer-freq cannot carry back (over 1,024 layers, or more dense "
              "blocks between MoE blocks than zplan reads)";
    if (why)
        return ZP_FAIL(ZP_EUNSUPPORTED, "model %s has %s: zplan cannot state it as Megatron-LM arguments", m->name,
                       why);
    return ZP_OK;
}

typedef struct {
    char *buf;
    size_t len, used;
    int overflow;
} out;

static void add(out *o, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(o->buf + o->used, o->len - o->used, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= o->len - o->used)
        o->overflow = 1;
    else
        o->used += (size_t)n;
}

/* The argument groups both releases name alike (Megatron-LM v2 and Megatron-core). */
static void add_shape(out *o, const zp_model *m)
{
    add(o, "--num-layers %lld --hidden-size %lld --num-attention-heads %lld --ffn-hidden-size %lld --seq-length %lld "
           "--max-position-embeddings %lld",
        (long long)m->layers, (long long)m->hidden, (long long)m->heads, (long long)m->ffn, (long long)m->seq,
        (long long)(m->positions > 0 ? m->positions : m->seq));
    if (m->head_dim > 0 && m->head_dim * m->heads != m->hidden)
        add(o, " --kv-channels %lld", (long long)m->head_dim);
}

static void add_dropouts(out *o, const zp_model *m)
{
    if (m->no_dropout & ZP_DROPOUT_NO_HIDDEN)
        add(o, " --hidden-dropout 0");
    if (m->no_dropout & ZP_DROPOUT_NO_ATTN)
        add(o, " --attention-dropout 0");
}

/* Multi-head latent attention (DeepSeek-V2/V3) as Megatron-core states it (megatron/core/transformer/
 * multi_latent_attention.py): every size given, none left to its defaults; --qk-layernorm for the latent
 * norms DeepSeek's attention has; its multi-token prediction modules. */
static void add_mla(out *o, const zp_model *m)
{
    add(o, " --multi-latent-attention");
    if (m->q_lora_rank > 0)
        add(o, " --q-lora-rank %lld", (long long)m->q_lora_rank);
    add(o, " --kv-lora-rank %lld --qk-head-dim %lld --qk-pos-emb-head-dim %lld --v-head-dim %lld --qk-layernorm",
        (long long)m->kv_lora_rank, (long long)m->qk_nope_dim, (long long)m->qk_rope_dim,
        (long long)m->v_head_dim);
}

/* Which blocks are MoE (--moe-layer-freq): every k-th from block 0 as k, any other pattern as Megatron-core's
 * list, one 0 (dense) or 1 (MoE) a layer, written as runs: DeepSeek-V3's "([0]*3+[1]*58)". Quoted for the
 * shell. */
static void add_moe_layers(out *o, const zp_model *m)
{
    if (zp_model_moe_blocks(m) == m->layers)
        return;
    if (m->moe_every > 1 && m->moe_phase == 0 && m->dense_layers <= 0 && m->n_dense_list == 0) {
        add(o, " --moe-layer-freq %lld", (long long)m->moe_every);
        return;
    }
    add(o, " --moe-layer-freq \"(");
    for (int64_t i = 0, runs = 0; i < m->layers; runs++) {
        const int moe = zp_model_block_is_moe(m, i);
        int64_t j = i;
        while (j < m->layers && zp_model_block_is_moe(m, j) == moe)
            j++;
        add(o, "%s[%d]*%lld", runs ? "+" : "", moe, (long long)(j - i));
        i = j;
    }
    add(o, ")\"");
}

/* The experts: their count, top-k, EP, width, the shared experts as one of their summed width (Megatron-core's
 * --moe-shared-expert-intermediate-size: the same parameters and FLOPs), the router's expert bias, group-
 * limited routing, which blocks are MoE, MTP; the dispatcher planned and its overlaps. */
static void add_moe(out *o, const zp_model *m, const zp_plan *p)
{
    add(o, " --num-experts %lld --moe-router-topk %lld %s %lld", (long long)m->experts, (long long)m->top_k,
        zp_dims_get(ZP_DIM_EP)->megatron, (long long)(p->ep > 0 ? p->ep : 1));
    if (m->expert_ffn > 0 && m->expert_ffn != m->ffn)
        add(o, " --moe-ffn-hidden-size %lld", (long long)m->expert_ffn);
    if (m->shared_experts > 0)
        add(o, " --moe-shared-expert-intermediate-size %lld", (long long)(m->shared_experts * zp_model_shared_ffn(m)));
    if (m->router_bias)
        add(o, " --moe-router-enable-expert-bias");
    if (m->route_groups > 1)
        add(o, " --moe-router-num-groups %lld --moe-router-group-topk %lld", (long long)m->route_groups,
            (long long)m->route_topk);
    add_moe_layers(o, m);
    if (m->mtp_layers > 0)
        add(o, " --mtp-num-layers %lld", (long long)m->mtp_layers);
    /* the dispatcher planned, stated: Megatron-core's default is its all-gather dispatcher */
    const zp_dispatch_info *d = zp_dispatch_get(p->dispatcher);
    add(o, " --moe-token-dispatcher-type %s%s", d->megatron, d->deepep ? " --moe-enable-deepep" : "");
    if (p->ep_overlap && p->ep > 1)
        add(o, " --overlap-moe-expert-parallel-comm");
    if (p->shared_overlap)
        add(o, " --moe-shared-expert-overlap");
}

/* An uneven pipeline layout (vocab/zp_pipeline.h) in Megatron-core's arguments: the interleaved schedule's
 * chunks as --num-virtual-stages-per-pipeline-rank (--num-layers-per-virtual-pipeline-stage assumes an
 * even split); the first and the last stage's layers as --decoder-first/last-pipeline-num-layers when the
 * stages between are alike and every stage's chunks too (what those arguments can state, Megatron-core's
 * get_num_layers_to_build); any other layout as --pipeline-model-parallel-layout, one "|"-separated
 * entry per virtual stage in virtual-stage order, E the embedding, t a transformer layer, m an MTP module
 * (with the loss, where zplan runs them), L the loss (Megatron-core 0.13's custom layout, arguments.py). */
static void add_layout(out *o, const zp_model *m, const zp_plan *p)
{
    const int P = (int)p->pp, v = p->schedule == ZP_PP_INTERLEAVED ? p->vstages : 1;
    if (v > 1)
        add(o, " --num-virtual-stages-per-pipeline-rank %d", v);
    int alike = 1, mid = -1;
    for (int k = 0; k < P * v && alike; k++) {
        const int s = k % P, n = zp_pp_vstage_layers(m, p, k), n0 = zp_pp_vstage_layers(m, p, s);
        alike = n == n0 && n > 0; /* every chunk of a stage alike */
        if (s > 0 && s < P - 1) {
            alike = alike && (mid < 0 || n == mid);
            mid = n;
        }
    }
    if (alike) {
        const int first = zp_pp_vstage_layers(m, p, 0) * v, last = zp_pp_vstage_layers(m, p, P - 1) * v;
        if (mid < 0 || first != mid * v)
            add(o, " --decoder-first-pipeline-num-layers %d", first);
        if (mid < 0 || last != mid * v)
            add(o, " --decoder-last-pipeline-num-layers %d", last);
        return;
    }
    const int n = P * v, x = zp_pp_vstage_layers(m, p, 1), e = x - zp_pp_vstage_layers(m, p, 0),
              ls = x - zp_pp_vstage_layers(m, p, n - 1);
    int even = n > 2 && e >= 0 && e <= 1 && ls >= 0 && ls <= 1 && e + ls > 0;
    for (int k = 1; k < n - 1 && even; k++)
        even = zp_pp_vstage_layers(m, p, k) == x;
    if (even) { /* the embedding and the loss as a layer each: Llama 3 405B's 0,1*126,0 */
        add(o, "%s%s", e ? " --account-for-embedding-in-pipeline-split" : "",
            ls ? " --account-for-loss-in-pipeline-split" : "");
        return;
    }
    add(o, " --pipeline-model-parallel-layout \"");
    for (int k = 0; k < P * v; k++) {
        add(o, "%s%s", k ? "|" : "", k == 0 ? "E" : "");
        for (int i = zp_pp_vstage_layers(m, p, k); i > 0; i--)
            add(o, "t");
        if (k < P * v - 1)
            continue;
        for (int64_t i = 0; i < m->mtp_layers; i++) /* the MTP modules run there (Megatron-core counts them) */
            add(o, "m");
        add(o, "L");
    }
    add(o, "\"");
}

/* The degrees of the dimensions that multiply the GPUs and of those that split the sequence, by the table's
 * Megatron-LM names (vocab/zp_dims.h: --tensor-model-parallel-size, --pipeline-model-parallel-size; the
 * latter when they split it; DP is
 * what they leave); EP comes with the experts (add_moe). */
static void add_parallel(out *o, const zp_model *m, const zp_plan *p)
{
    for (int d = 0; d < ZP_NDIMS; d++) {
        const zp_dim_type *t = zp_dims_get((zp_dim_id)d);
        if ((t->within == t->id || (t->seq_split && p->deg[d] > 1)) && t->megatron)
            add(o, " %s %lld", t->megatron, (long long)p->deg[d]);
    }
    if (p->pp > 1 && p->schedule == ZP_PP_INTERLEAVED && !zp_pp_uneven(p))
        add(o, " --num-layers-per-virtual-pipeline-stage %lld", (long long)(m->layers / (p->pp * p->vstages)));
    if (p->pp > 1 && zp_pp_uneven(p))
        add_layout(o, m, p);
    if (p->cp > 1)
        add(o, " --cp-comm-type %s", zp_cp_comm_megatron((zp_cp_comm)p->cp_comm));
    if (p->pp > 1 && p->schedule == ZP_PP_INTERLEAVED && !p->overlap_p2p_comm) /* Megatron-LM's default is on */
        add(o, " --no-overlap-p2p-communication");
    else if (zp_plan_p2p_overlapped(p) && p->overlap_p2p_warmup_flush)
        add(o, " --overlap-p2p-communication-warmup-flush");
}

static void add_batch(out *o, const zp_plan *p)
{
    add(o, " --micro-batch-size %lld --global-batch-size %.0f", (long long)p->micro_batch, zp_plan_global_batch(p));
}

/* 16-bit parameters: bf16 or fp16 (fp32 training takes neither); fp32 gradients with 16-bit parameters are
 * --accumulate-allreduce-grads-in-fp32 (which both releases force on for bf16) */
static void add_precision(out *o, const zp_plan *p)
{
    if (p->param_bytes == 2.0) {
        add(o, " %s", p->bf16 ? "--bf16" : "--fp16");
        if (zp_plan_grad_bytes(p) == 4.0)
            add(o, " --accumulate-allreduce-grads-in-fp32");
    }
    /* FP8 through Transformer Engine, the recipe planned in its format: E4M3 forward and E5M2 gradients
     * (hybrid, the format Megatron-core's examples use) with one scale a tensor, E4M3 throughout with block
     * scales (TE's default for Float8BlockScaling and MXFP8BlockScaling) */
    const zp_fp8_info *f8 = zp_fp8_get(p->fp8);
    if (f8 && f8->megatron)
        add(o, " --fp8-format %s --fp8-recipe %s", f8->format, f8->megatron);
}

zp_status zp_megatron_args(const zp_model *m, const zp_plan *p, char *buf, size_t len)
{
    ZP_TRY(zp_megatron_check(p));
    ZP_TRY(zp_megatron_check_model(m));
    if (len < 1)
        return ZP_FAIL(ZP_ERANGE, "no room for the arguments");
    buf[0] = '\0';
    out o = {.buf = buf, .len = len};
    add_shape(&o, m);
    /* the vocabulary zplan planned (Megatron-LM pads the tokenizer's to a multiple of
     * make-vocab-size-divisible-by x TP: 1 keeps it as it is, up to TP) */
    add(&o, " --vocab-size %lld --make-vocab-size-divisible-by 1", (long long)m->vocab);
    /* the architecture beyond GPT's defaults (Megatron-LM's own argument names) */
    if (m->kv_heads > 0 && m->kv_heads < m->heads && m->attn != ZP_ATTN_MLA)
        add(&o, " --group-query-attention --num-query-groups %lld", (long long)m->kv_heads);
    if (m->mlp == ZP_MLP_GATED)
        add(&o, " --swiglu");
    if (m->norm == ZP_NORM_RMSNORM)
        add(&o, " --normalization RMSNorm");
    if (m->pos == ZP_POS_ROTARY) /* RoPE's base: 10000 unless the model states it (Llama 3: 500000) */
        add(&o, " --position-embedding-type rope --rotary-base %.0f", m->rope_theta > 0 ? m->rope_theta : 10000.0);
    if (m->untied)
        add(&o, " --untie-embeddings-and-output-weights");
    if ((m->nobias & ZP_BIAS_ALL) == ZP_BIAS_ALL)
        add(&o, " --disable-bias-linear");
    else if (m->nobias == (ZP_BIAS_ATTN_OUT | ZP_BIAS_MLP_UP | ZP_BIAS_MLP_DOWN))
        add(&o, " --disable-bias-linear --add-qkv-bias"); /* Qwen2: a bias on Q, K, V only */
    add_dropouts(&o, m);
    if (m->attn == ZP_ATTN_MLA)
        add_mla(&o, m);
    if (m->experts > 0)
        add_moe(&o, m, p);
    if (p->flash_attn)
        add(&o, " --use-flash-attn");
    if (!p->grad_accum_fusion) /* Megatron-LM fuses by default; the plan was costed with the adds */
        add(&o, " --no-gradient-accumulation-fusion");
    add_parallel(&o, m, p);
    if (p->sp)
        add(&o, " --sequence-parallel");
    if (p->tp_overlap == ZP_TP_OVERLAP_TE && p->sp && p->mp > 1)
        add(&o, " --tp-comm-overlap");
    switch (zp_plan_recompute(p)) {
    case ZP_RECOMPUTE_FULL: add(&o, " --recompute-granularity full --recompute-method uniform --recompute-num-layers 1"); break;
    case ZP_RECOMPUTE_SELECTIVE: {
        char mods[128] = "";
        if (p->rc_modules) /* Megatron-core's default is core_attn alone */
            zp_rc_module_text(p->rc_modules, " ", mods, sizeof mods);
        add(&o, " --recompute-granularity selective%s%s", *mods ? " --recompute-modules " : "", mods);
        break;
    }
    default: break;
    }
    if (p->act_fp8_store)
        add(&o, " --activation-func-fp8-input-store");
    if (!p->swiglu_fusion && m->mlp == ZP_MLP_GATED) /* Megatron-LM's default is fused */
        add(&o, " --no-bias-swiglu-fusion");
    if (zp_plan_moments_saved(p) > 0)
        add(&o, " --use-precision-aware-optimizer --exp-avg-dtype %s --exp-avg-sq-dtype %s",
            zp_adam_moment_name(p->exp_avg_bytes), zp_adam_moment_name(p->exp_avg_sq_bytes));
    if (p->pa && p->mp > 1)
        add(&o, " --distribute-saved-activations");
    add_batch(&o, p);
    if (p->stage == 1)
        add(&o, " --use-distributed-optimizer");
    if (p->overlap_comm)
        add(&o, " --overlap-grad-reduce");
    if (p->overlap_param_gather && p->stage == 1 && p->overlap_comm)
        add(&o, " --overlap-param-gather");
    add_precision(&o, p);
    if (o.used > 0 && buf[o.used - 1] == ' ')
        buf[--o.used] = '\0';
    return o.overflow ? ZP_FAIL(ZP_ERANGE, "the arguments need more than %zu bytes", len) : ZP_OK;
}

zp_status zp_megatron_check_model_v2(const zp_model *m)
{
    const char *why = NULL;
    if (m->attn != ZP_ATTN_STANDARD || (m->kv_heads > 0 && m->kv_heads < m->heads))
        why = "grouped-query or latent attention";
    else if (m->mlp != ZP_MLP_PLAIN || m->act != ZP_ACT_GELU)
        why = "an MLP other than GeLU's";
    else if (m->norm != ZP_NORM_LAYERNORM || m->block_norms != 0 || m->parallel)
        why = "blocks other than GPT's (LayerNorm before the attention and before the MLP)";
    else if (m->pos != ZP_POS_LEARNED)
        why = "positions other than a learned table";
    else if (m->untied)
        why = "an output layer untied from the embedding";
    else if (m->nobias != 0)
        why = "linear layers without biases";
    else if (m->experts > 0)
        why = "mixture-of-experts layers";
    else if (m->embed_dim > 0 && m->embed_dim != m->hidden)
        why = "a token embedding narrower than the model";
    if (why)
        return ZP_FAIL(ZP_EUNSUPPORTED, "model %s has %s: Megatron-LM v2 (--framework megatron-2021) trains GPTs only",
                       m->name, why);
    return ZP_OK;
}

zp_status zp_megatron_args_v2(const zp_model *m, const zp_plan *p, char *buf, size_t len)
{
    ZP_TRY(zp_megatron_check(p));
    ZP_TRY(zp_megatron_check_model_v2(m));
    if (p->stage != 0)
        return ZP_FAIL(ZP_EUNSUPPORTED, "ZeRO stage %d: Megatron-LM v2 has no distributed optimizer", p->stage);
    if (p->sp || zp_plan_recompute(p) == ZP_RECOMPUTE_SELECTIVE || p->flash_attn || p->grad_accum_fusion ||
        zp_plan_tp_overlapped(p))
        return ZP_FAIL(ZP_EUNSUPPORTED, "the plan runs %s, which Megatron-LM v2 does not have",
                       p->sp ? "sequence parallelism"
                       : zp_plan_tp_overlapped(p) ? "TP communication overlap"
                             : p->flash_attn ? "FlashAttention"
                                             : p->grad_accum_fusion ? "gradient-accumulation fusion"
                                                                    : "selective recompute");
    if (len < 1)
        return ZP_FAIL(ZP_ERANGE, "no room for the arguments");
    buf[0] = '\0';
    out o = {.buf = buf, .len = len};
    add_shape(&o, m);
    add_dropouts(&o, m);
    add_parallel(&o, m, p);
    if (zp_plan_recompute(p) == ZP_RECOMPUTE_FULL)
        add(&o, " --checkpoint-activations --checkpoint-num-layers 1");
    if (p->pa && p->mp > 1)
        add(&o, " --distribute-checkpointed-activations");
    add_batch(&o, p);
    add_precision(&o, p);
    return o.overflow ? ZP_FAIL(ZP_ERANGE, "the arguments need more than %zu bytes", len) : ZP_OK;
}

static zp_status write_args(const zp_model *m, const zp_plan *p, const char *args, const char *release,
                            const char *step, const char *path)
{
    char text[8800];
    int n = snprintf(text, sizeof text,
                     "# %s arguments (pretrain_gpt.py) of zplan's plan for %s: %lld GPUs = DP %lld x TP %lld x "
                     "PP %lld%s%s\n%s\n",
                     release, m->name, (long long)zp_plan_gpus(p), (long long)p->dp, (long long)p->mp, (long long)p->pp,
                     step ? "; " : "", step ? step : "", args);
    if (n < 0 || (size_t)n >= sizeof text)
        return ZP_FAIL(ZP_ERANGE, "the arguments are too long");
    return zp_io_write_file(path, text, (size_t)n);
}

zp_status zp_megatron_write(const zp_model *m, const zp_plan *p, const char *step, const char *path)
{
    char args[8192]; /* a custom pipeline layout writes a letter a layer, --moe-layer-freq a run */
    ZP_TRY(zp_megatron_args(m, p, args, sizeof args));
    return write_args(m, p, args, "Megatron-LM", step, path);
}

zp_status zp_megatron_write_for(const zp_model *m, const zp_plan *p, int framework, const char *step,
                                const char *path)
{
    if (framework != ZP_FRAMEWORK_MEGATRON_2021)
        return zp_megatron_write(m, p, step, path);
    char args[1024];
    ZP_TRY(zp_megatron_args_v2(m, p, args, sizeof args));
    return write_args(m, p, args, "Megatron-LM v2", step, path);
}
