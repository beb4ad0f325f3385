/* zp_launch_plan.c — what a launch file states as zplan's model and its exactly pinned request, with each
 * framework's defaults for what the file leaves out (see zp_launch.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "zp_dispatch.h"
#include "zp_fp8.h"
#include "zp_framework.h"
#include "zp_io.h"
#include "zp_launch.h"
#include "zp_megatron.h"
#include "zp_torchtitan.h"

/* The vocabulary of a tokenizer type the launch names, or 0 when zplan does not know it: Megatron-LM's GPT-2
 * BPE (50257 tokens, its gpt2-vocab.json). */
static int64_t tokenizer_vocab(const char *t)
{
    if (strcasecmp(t, "GPT2BPETokenizer") == 0)
        return 50257;
    return 0;
}

/* The vocabulary the model trains with: Megatron-LM and NeMo pad the tokenizer's to a multiple of
 * make-vocab-size-divisible-by (128 by default) x TP (megatron/training/tokenizer: _vocab_size_with_padding). */
static zp_status launch_vocab(const zp_launch *l, int64_t *vocab)
{
    int64_t v = l->vocab > 0 ? l->vocab : tokenizer_vocab(l->tokenizer);
    if (v == 0)
        return ZP_FAIL(ZP_EINVAL, "%s: the vocabulary is not stated (tokenizer '%s' is not one zplan knows): state "
                                  "it (Megatron-LM --vocab-size, NeMo model.tokenizer) or give --model",
                       l->name, l->tokenizer[0] ? l->tokenizer : "none");
    if (v > (INT64_C(1) << 32) || l->vocab_multiple > 1000000 || l->tp > ZP_MAX_GPUS)
        return ZP_FAIL(ZP_EINVAL, "%s: vocabulary %lld, its multiple %lld or TP %lld out of range", l->name,
                       (long long)v, (long long)l->vocab_multiple, (long long)l->tp);
    if (l->kind == ZP_LAUNCH_MEGATRON || l->kind == ZP_LAUNCH_NEMO) {
        const int64_t mult = (l->vocab_multiple > 0 ? l->vocab_multiple : 128) * (l->tp > 0 ? l->tp : 1);
        v = (v + mult - 1) / mult * mult;
    }
    *vocab = v;
    return ZP_OK;
}

/* Megatron-core's MoE arguments as the model's experts: --moe-router-topk (2 unless stated, its default),
 * --moe-ffn-hidden-size (the FFN's unless stated), one shared expert of --moe-shared-expert-intermediate-size,
 * the router's expert bias, group-limited routing, and which blocks are MoE (--moe-layer-freq: every k-th from
 * block 0, or a list: its leading dense blocks, and the others dense listed). */
static zp_status launch_moe(const zp_launch *l, zp_model *m)
{
    if (l->experts <= 0) {
        if (l->topk || l->moe_ffn || l->shared_ffn || l->route_groups || l->moe_every || l->moe_pattern)
            return ZP_FAIL(ZP_EINVAL, "%s: MoE arguments without --num-experts", l->name);
        return ZP_OK;
    }
    m->experts = l->experts;
    m->top_k = l->topk > 0 ? l->topk : 2;
    m->expert_ffn = l->moe_ffn > 0 && l->moe_ffn != m->ffn ? l->moe_ffn : 0;
    m->shared_experts = l->shared_ffn > 0;
    m->shared_ffn = l->shared_ffn;
    m->router_bias = l->router_bias == 1;
    m->route_groups = l->route_groups;
    m->route_topk = l->route_topk;
    if (l->moe_every > 1)
        m->moe_every = l->moe_every;
    if (l->moe_pattern) {
        if (l->moe_pattern != m->layers)
            return ZP_FAIL(ZP_EINVAL, "%s: --moe-layer-freq lists %d layers, the model has %lld (Megatron-core asserts "
                                      "one entry a layer)",
                           l->name, l->moe_pattern, (long long)m->layers);
        int64_t lead = 0;
        while (lead < m->layers && l->moe_dense[lead])
            lead++;
        m->dense_layers = lead;
        for (int64_t i = lead; i < m->layers; i++)
            if (l->moe_dense[i]) {
                if (m->n_dense_list >= ZP_MODEL_MAX_DENSE_LIST)
                    return ZP_FAIL(ZP_EINVAL, "%s: --moe-layer-freq: more than %d dense layers between MoE layers",
                                   l->name, ZP_MODEL_MAX_DENSE_LIST);
                m->dense_list[m->n_dense_list++] = (int32_t)i;
            }
    }
    return ZP_OK;
}

/* Megatron-core's multi-head latent attention (--multi-latent-attention, megatron/core/transformer/
 * multi_latent_attention.py) with its sizes, each Megatron-core's default where not stated (arguments.py:
 * --q-lora-rank none, a plain Q projection; --kv-lora-rank 32; --qk-head-dim 128; --qk-pos-emb-head-dim 64;
 * --v-head-dim 128); --num-query-groups and --kv-channels do not apply to it. */
static zp_status launch_mla(const zp_launch *l, zp_model *m)
{
    if (l->mla != 1) {
        if (l->q_lora || l->kv_lora || l->qk_head || l->qk_pos || l->v_head)
            return ZP_FAIL(ZP_EINVAL, "%s: latent-attention sizes (--q-lora-rank, --kv-lora-rank, --qk-head-dim, ...) "
                                      "without --multi-latent-attention", l->name);
        return ZP_OK;
    }
    m->attn = ZP_ATTN_MLA;
    m->kv_heads = 0;
    m->head_dim = 0;
    m->qkv_separate = 1;
    m->q_lora_rank = l->q_lora > 0 ? l->q_lora : 0;
    m->kv_lora_rank = l->kv_lora > 0 ? l->kv_lora : 32;
    m->qk_nope_dim = l->qk_head > 0 ? l->qk_head : 128;
    m->qk_rope_dim = l->qk_pos > 0 ? l->qk_pos : 64;
    m->v_head_dim = l->v_head > 0 ? l->v_head : 128;
    return ZP_OK;
}

zp_status zp_launch_model(const zp_launch *l, zp_model *m, int *stated)
{
    *stated = l->layers > 0 || l->hidden > 0 || l->heads > 0;
    if (!*stated)
        return ZP_OK;
    if (!(l->layers > 0 && l->hidden > 0 && l->heads > 0))
        return ZP_FAIL(ZP_EINVAL, "%s: the model needs its layers, hidden size and attention heads (%s missing)",
                       l->name, l->layers <= 0 ? "layers" : l->hidden <= 0 ? "hidden size" : "heads");
    if (l->seq <= 0)
        return ZP_FAIL(ZP_EINVAL, "%s: the sequence length is not stated", l->name);
    if (l->experts > 0 && l->kind == ZP_LAUNCH_TORCHTITAN)
        return ZP_FAIL(ZP_EINVAL, "%s: mixture-of-experts launches are read from Megatron-LM's arguments and NeMo's "
                                  "YAML (give --model and the options)",
                       l->name);
    int64_t vocab = 0;
    ZP_TRY(launch_vocab(l, &vocab));
    const char *base = strrchr(l->name, '/');
    ZP_TRY(zp_model_init(m, base ? base + 1 : l->name, l->layers, l->hidden, l->heads, l->seq, vocab, l->ffn));
    if (l->kv_heads > 0 && l->kv_heads != l->heads) {
        m->kv_heads = l->kv_heads;
        m->qkv_separate = 1;
    }
    if (l->head_dim > 0 && l->head_dim * l->heads != l->hidden)
        m->head_dim = l->head_dim;
    if (l->swiglu == 1) {
        m->mlp = ZP_MLP_GATED;
        m->act = ZP_ACT_SILU;
    }
    if (l->rmsnorm == 1)
        m->norm = ZP_NORM_RMSNORM;
    if (l->rope == 1) {
        m->pos = ZP_POS_ROTARY;
        m->rope_theta = l->rope_theta;
    } else if (l->positions > 0) {
        m->positions = l->positions;
    }
    m->untied = l->untied == 1;
    if (l->no_bias == 1)
        m->nobias = l->qkv_bias == 1 ? ZP_BIAS_ALL & ~ZP_BIAS_QKV : ZP_BIAS_ALL;
    if (l->hidden_dropout == 0)
        m->no_dropout |= ZP_DROPOUT_NO_HIDDEN;
    if (l->attn_dropout == 0)
        m->no_dropout |= ZP_DROPOUT_NO_ATTN;
    ZP_TRY(launch_moe(l, m));
    ZP_TRY(launch_mla(l, m));
    if (l->mtp > 0)
        m->mtp_layers = l->mtp;
    return zp_model_validate(m);
}

int64_t zp_launch_gpus(const zp_launch *l)
{
    if (l->gpus_per_node <= 0)
        return 0;
    return l->gpus_per_node * (l->nodes > 0 ? l->nodes : 1);
}

/* The data-parallel degree and the ZeRO stage: what TP x PP leave (torchtitan: its FSDP and DDP degrees). */
/* DP: the GPUs over TP x PP, context parallelism's ranks among them (zplan's DP holds the CP ranks, as
 * Megatron-core's data-parallel group with context parallelism does); the replicas of the batch are DP / CP. */
static zp_status launch_dp(zp_launch *l, int64_t gpus, int64_t tp, int64_t pp, int64_t cp, int64_t *dp, int *stage)
{
    if (tp > gpus || pp > gpus || gpus % (tp * pp) != 0)
        return ZP_FAIL(ZP_EINVAL, "%s: tensor x pipeline parallelism (%lld x %lld) do not divide the %lld GPUs "
                                  "(--gpus)",
                       l->name, (long long)tp, (long long)pp, (long long)gpus);
    *dp = gpus / (tp * pp);
    if (cp > *dp || *dp % cp != 0)
        return ZP_FAIL(ZP_EINVAL, "%s: context parallelism %lld does not divide the %lld ranks that tensor x pipeline "
                                  "parallelism (%lld x %lld) leave of the %lld GPUs",
                       l->name, (long long)cp, (long long)*dp, (long long)tp, (long long)pp, (long long)gpus);
    *stage = l->stage != ZP_LAUNCH_UNSET ? l->stage : 0;
    if (l->kind != ZP_LAUNCH_TORCHTITAN)
        return ZP_OK;
    /* torchtitan: FSDP over data_parallel_shard_degree (-1: what is left) and the CP ranks, DDP over the
     * replicate degree */
    const int64_t rep = l->dp_replicate > 0 ? l->dp_replicate : 1, rest = *dp / cp;
    const int64_t shard = l->dp_shard > 0 ? l->dp_shard : rest / rep;
    if (rep > rest || shard > rest || rep * shard != rest || shard < 1)
        return ZP_FAIL(ZP_EINVAL, "%s: parallelism.data_parallel_replicate_degree %lld x data_parallel_shard_degree "
                                  "%lld must be the %lld GPUs' data-parallel degree (GPUs / (TP x PP x CP))",
                       l->name, (long long)rep, (long long)shard, (long long)rest);
    /* HSDP (replicate and shard both above 1): FSDP within the shard x CP ranks (torchtitan's mesh puts
     * dp_shard and cp inside dp_replicate), all-reduced across the replicas: --shard-group */
    if (rep > 1 && shard > 1)
        l->shard_group = shard * cp;
    *stage = shard * cp > 1 ? 3 : 0;
    return ZP_OK;
}

/* The batch: micro x accumulation x DP = global, each stated or derived (as the framework does). */
static zp_status launch_batch(zp_launch *l, int64_t dp, zp_search_req *r)
{
    int64_t micro = l->micro_batch, global = l->global_batch;
    if (micro <= 0) {
        micro = 1;
        zp_launch_note(l, "micro-batch not stated: 1");
    }
    const double most = (double)(INT64_C(1) << 50); /* sequences: beyond any run, and no overflow below */
    if ((double)micro * (double)dp * (double)(l->grad_accum > 0 ? l->grad_accum : 1) > most ||
        (double)global > most)
        return ZP_FAIL(ZP_EINVAL, "%s: the batch (micro-batch %lld x DP %lld) is beyond %.0f sequences", l->name,
                       (long long)micro, (long long)dp, most);
    if (global <= 0)
        global = micro * dp * (l->grad_accum > 0 ? l->grad_accum : 1);
    if (global % (micro * dp) != 0)
        return ZP_FAIL(ZP_EINVAL, "%s: the global batch %lld is not a multiple of micro-batch %lld x data-parallel "
                                  "%lld (as the framework requires)",
                       l->name, (long long)global, (long long)micro, (long long)dp);
    r->base.micro_batch = micro;
    r->global_batch = global;
    r->base.grad_accum = global / (micro * dp);
    zp_search_req_give(r, ZP_SEARCH_MICRO_BATCH | ZP_SEARCH_GLOBAL_BATCH | ZP_SEARCH_ACCUM);
    return ZP_OK;
}

/* bf16 gradients in Megatron-LM (megatron/training/arguments.py, the bf16 branch): --main-grads-dtype bf16 needs
 * the precision-aware optimizer and contradicts --accumulate-allreduce-grads-in-fp32 (both asserted there);
 * --grad-reduce-in-bf16 overrides that flag; either is bf16 training's. */
static zp_status check_grad_bf16(const zp_launch *l, int prec)
{
    if (l->main_grads_bf16 != 1 && l->grad_bf16 != 1)
        return ZP_OK;
    const char *what = l->main_grads_bf16 == 1 ? "--main-grads-dtype bf16" : "--grad-reduce-in-bf16";
    if (prec != ZP_LAUNCH_BF16)
        return ZP_FAIL(ZP_EINVAL, "%s: %s: Megatron-LM keeps gradients in bf16 beside --bf16 parameters only (add "
                                  "--bf16, or drop it)",
                       l->name, what);
    if (l->main_grads_bf16 == 1 && l->precision_aware != 1)
        return ZP_FAIL(ZP_EINVAL, "%s: --main-grads-dtype bf16 is the precision-aware optimizer's (Megatron-core: "
                                  "\"main_grads_dtype can only be fp32 when not using precision-aware optimizer\"): "
                                  "add --use-precision-aware-optimizer",
                       l->name);
    if (l->main_grads_bf16 == 1 && l->grad_fp32 == 1)
        return ZP_FAIL(ZP_EINVAL, "%s: --main-grads-dtype bf16 beside --accumulate-allreduce-grads-in-fp32: Megatron-LM "
                                  "refuses it (\"--main-grads-dtype can only be fp32 when "
                                  "--accumulate-allreduce-grads-in-fp32 is set\"): drop one",
                       l->name);
    return ZP_OK;
}

/* Precision: 16-bit mixed precision or fp32; the gradients' type. Megatron-LM and NeMo train in fp32 unless
 * told (--fp16/--bf16, trainer.precision), and keep bf16 models' gradients in fp32 (arguments.py forces
 * accumulate_allreduce_grads_in_fp32) unless they are bf16 (check_grad_bf16); torchtitan's FSDP computes in
 * bf16 and reduces in fp32 by default. */
static zp_status launch_precision(zp_launch *l, zp_search_req *r)
{
    int prec = l->precision;
    if (prec == ZP_LAUNCH_UNSET) {
        prec = l->kind == ZP_LAUNCH_TORCHTITAN ? ZP_LAUNCH_BF16 : ZP_LAUNCH_FP32;
        zp_launch_note(l, "precision not stated: %s, the framework's default",
                       prec == ZP_LAUNCH_BF16 ? "bf16 mixed precision" : "fp32");
    }
    r->base.param_bytes = prec == ZP_LAUNCH_FP32 ? 4.0 : 2.0;
    r->base.k_optimizer = prec == ZP_LAUNCH_FP32 ? 8.0 : ZP_ADAM_K;
    r->base.bf16 = prec == ZP_LAUNCH_BF16;
    zp_search_req_give(r, ZP_SEARCH_BF16);
    ZP_TRY(check_grad_bf16(l, prec));
    int fp32_grads = l->grad_fp32 == 1 || prec == ZP_LAUNCH_BF16;
    if (l->kind == ZP_LAUNCH_TORCHTITAN && l->grad_fp32 != ZP_LAUNCH_UNSET)
        fp32_grads = l->grad_fp32; /* FSDP's reduce dtype, as stated */
    else if (l->grad_bf16 == 1 || l->main_grads_bf16 == 1)
        fp32_grads = 0;
    r->base.grad_bytes = prec != ZP_LAUNCH_FP32 && fp32_grads ? 4.0 : 0.0;
    /* Megatron-core's OptimizerConfig.store_param_remainders (default true) hands Transformer Engine's FusedAdam
     * bf16 parameters' fp32 main copies as their low 16 bits alone: not modelled, said */
    if (l->precision_aware == 1 && prec == ZP_LAUNCH_BF16)
        zp_launch_note(l, "--use-precision-aware-optimizer: Megatron-core keeps only the low 16 bits of the fp32 "
                          "main parameters beside bf16 ones (store_param_remainders, its default); zplan counts "
                          "them whole, 2 bytes a parameter over the DP ranks more");
    /* FP8: the linear layers' GEMMs in FP8 beside bf16 (Megatron-core's default recipe is delayed scaling,
     * torchao's tensorwise) */
    if (l->fp8 && prec != ZP_LAUNCH_BF16)
        return ZP_FAIL(ZP_EINVAL, "%s: FP8 training beside %s: zplan models FP8 with bf16 mixed precision (add "
                                  "--bf16)",
                       l->name, prec == ZP_LAUNCH_FP16 ? "fp16" : "fp32");
    if (l->fp8 && l->fp8_all_gather == 1 && l->fp8_recipe == ZP_FP8_AO_ROWWISE)
        return ZP_FAIL(ZP_EINVAL, "%s: enable_fsdp_float8_all_gather with recipe_name rowwise: torchao all-gathers "
                                  "FP8 weights with tensorwise scales only",
                       l->name);
    if (l->fp8) {
        r->base.fp8 = l->fp8_recipe ? l->fp8_recipe
                                    : l->kind == ZP_LAUNCH_TORCHTITAN ? ZP_FP8_AO_TENSORWISE : ZP_FP8_DELAYED;
        r->base.fp8_all_gather = l->fp8_all_gather == 1;
        r->base.bf16 = 1;
    }
    return ZP_OK;
}

/* An uneven pipeline layout as Megatron-core states it: the first and the last stage's layers; the
 * embedding and the loss counted as a layer of the first and the last virtual stage (each virtual stage
 * then gets (L + those) / (P·v), the first and the last one less; Megatron-core's
 * account_for_embedding/loss_in_pipeline_split); or the layers of every virtual stage. The request points at
 * the launch's own layout, which outlives the search. */
/* torchtitan's own split of the layers over its P·v virtual stages (zp_torchtitan_split: the embedding and the
 * output weigh pipeline_parallel_first/last_stage_less_layers, 1 each by default), as a layout where it is not
 * the even one. */
static zp_status torchtitan_layout(zp_launch *l, int64_t pp, int64_t v, const zp_search_req *r)
{
    const int64_t n = pp * v, L = r->model->layers;
    const int64_t a = l->tt_first_less == ZP_LAUNCH_UNSET ? 1 : l->tt_first_less,
                  b = l->tt_last_less == ZP_LAUNCH_UNSET ? 1 : l->tt_last_less;
    int split[ZP_PP_MAX_LAYOUT];
    if (zp_torchtitan_split(L, n, a, b, split) != ZP_OK)
        return ZP_FAIL(ZP_EINVAL, "%s: %s", l->name, zp_error_message());
    int even = L % n == 0;
    for (int64_t k = 0; k < n && even; k++)
        even = split[k] == L / n;
    if (even)
        return ZP_OK;
    memcpy(l->pp_layout, split, (size_t)n * sizeof *split);
    l->pp_layout_n = (int)n;
    return ZP_OK;
}

static zp_status launch_layout(zp_launch *l, int64_t pp, int64_t v, zp_search_req *r)
{
    if (l->kind == ZP_LAUNCH_TORCHTITAN && pp > 1)
        ZP_TRY(torchtitan_layout(l, pp, v, r));
    if (!l->pp_first && !l->pp_last && !l->pp_acc_emb && !l->pp_acc_loss && !l->pp_layout_n)
        return ZP_OK;
    if (pp < 2)
        return ZP_FAIL(ZP_EINVAL, "%s: an uneven pipeline layout without pipeline stages (give "
                                  "--pipeline-model-parallel-size)", l->name);
    if (l->pp_first > r->model->layers || l->pp_last > r->model->layers)
        return ZP_FAIL(ZP_EINVAL, "%s: more layers on the first or the last stage than the model's %lld", l->name,
                       (long long)r->model->layers);
    r->base.pp_first = (int)l->pp_first;
    r->base.pp_last = (int)l->pp_last;
    if (l->pp_acc_emb || l->pp_acc_loss) {
        const int64_t n = pp * v, all = r->model->layers + l->pp_acc_emb + l->pp_acc_loss;
        if (l->pp_layout_n || l->pp_first || l->pp_last || all % n != 0 || n > ZP_PP_MAX_LAYOUT)
            return ZP_FAIL(ZP_EINVAL, "%s: --account-for-embedding/loss-in-pipeline-split: the %lld layers with the "
                                      "embedding and the loss must divide over the %lld virtual stages, without "
                                      "another layout",
                           l->name, (long long)all, (long long)n);
        /* torchtitan's split with those weights: the same, as all divides */
        ZP_TRY(zp_torchtitan_split(r->model->layers, n, l->pp_acc_emb, l->pp_acc_loss, l->pp_layout));
        l->pp_layout_n = (int)n;
    }
    if (l->pp_layout_n && l->kind == ZP_LAUNCH_MEGATRON && l->pp_layout_mtp != r->model->mtp_layers)
        return ZP_FAIL(ZP_EINVAL, "%s: --pipeline-model-parallel-layout places %d MTP module%s (m), the model has %lld "
                                  "(--mtp-num-layers): Megatron-core asserts they match",
                       l->name, l->pp_layout_mtp, l->pp_layout_mtp == 1 ? "" : "s", (long long)r->model->mtp_layers);
    if (l->pp_layout_n) {
        r->base.pp_layout = l->pp_layout;
        r->base.pp_layout_n = l->pp_layout_n;
    }
    return ZP_OK;
}

/* Expert parallelism and its dispatch: EP dividing the DP ranks and the experts; Megatron-core's token
 * dispatcher (allgather, its default when none is stated; alltoall; flex, which zplan models on DeepEP), the
 * overlap (alltoall or flex only, as Megatron-core asserts), the capacity factor. */
static zp_status launch_experts(zp_launch *l, int64_t dp, zp_search_req *r)
{
    zp_plan *b = &r->base;
    const int titan = l->kind == ZP_LAUNCH_TORCHTITAN;
    const char *epk = titan ? "parallelism.expert_parallel_degree"
                      : l->kind == ZP_LAUNCH_NEMO ? "model.expert_model_parallel_size"
                                                  : "--expert-model-parallel-size";
    if (b->ep > 1 && (!r->model || r->model->experts <= 0))
        return ZP_FAIL(ZP_EINVAL, "%s: %s %lld without experts (%s)", l->name, epk, (long long)b->ep,
                       titan ? "the model has none" : "--num-experts");
    if (b->ep > 1 && (dp % b->ep != 0 || r->model->experts % b->ep != 0))
        return ZP_FAIL(ZP_EINVAL, "%s: %s %lld must divide the %lld data-parallel ranks and the %lld experts", l->name,
                       epk, (long long)b->ep, (long long)dp, (long long)r->model->experts);
    /* torchtitan's experts: split over TP as zplan splits them (expert_tensor_parallel_degree = TP), or whole on
     * each EP rank at TP 1; its token dispatch is an all-to-all (a copy per token and expert) */
    if (titan && b->ep > 1 && l->etp > 0 && l->etp != b->mp)
        return ZP_FAIL(ZP_EINVAL, "%s: parallelism.expert_tensor_parallel_degree %lld with tensor_parallel_degree "
                                  "%lld: zplan splits the experts over TP as the other layers (give %lld)",
                       l->name, (long long)l->etp, (long long)b->mp, (long long)b->mp);
    if (titan && b->ep > 1 && l->etp <= 0 && b->mp > 1)
        return ZP_FAIL(ZP_EINVAL, "%s: expert parallelism beside tensor_parallel_degree %lld: torchtitan's "
                                  "expert_tensor_parallel_degree defaults to 1 (experts whole), which zplan does not "
                                  "model: give parallelism.expert_tensor_parallel_degree = %lld",
                       l->name, (long long)b->mp, (long long)b->mp);
    if (titan) {
        b->dispatcher = ZP_DISPATCH_ALLTOALL;
        return ZP_OK;
    }
    const int nemo = l->kind == ZP_LAUNCH_NEMO;
    const char *type = nemo ? "model.moe_token_dispatcher_type" : "--moe-token-dispatcher-type",
               *deepep = nemo ? "model.moe_enable_deepep: true" : "--moe-enable-deepep";
    const int gather = l->moe_dispatch == 0 || l->moe_dispatch == 3;
    if (l->ep_overlap == 1 && b->ep > 1 && gather)
        return ZP_FAIL(ZP_EINVAL, "%s: --overlap-moe-expert-parallel-comm with the allgather token dispatcher (%s): "
                                  "Megatron-core overlaps alltoall or flex only; state %s alltoall",
                       l->name, l->moe_dispatch ? "stated" : "its default when the dispatcher is not given", type);
    if (l->moe_dispatch == 2 && !l->deepep)
        return ZP_FAIL(ZP_EINVAL, "%s: %s flex without %s: zplan models flex on DeepEP", l->name, type, deepep);
    b->dispatcher = l->moe_dispatch == 2 ? ZP_DISPATCH_DEEPEP : gather && r->model && r->model->experts > 0
                                                                ? ZP_DISPATCH_ALLGATHER
                                                                : ZP_DISPATCH_ALLTOALL;
    b->ep_overlap = l->ep_overlap == 1 && b->ep > 1;
    /* Megatron-core's rules for the shared experts beside the all-to-alls (transformer_config.py) */
    const char *so = nemo ? "model.moe_shared_expert_overlap" : "--moe-shared-expert-overlap";
    if (l->shared_overlap == 1 && b->dispatcher != ZP_DISPATCH_ALLTOALL)
        return ZP_FAIL(ZP_EINVAL, "%s: %s with the %s token dispatcher: Megatron-core runs it with alltoall only; "
                                  "state %s alltoall or drop %s",
                       l->name, so, zp_dispatch_get(b->dispatcher)->name, type, so);
    if (l->shared_overlap == 1 && l->ep_overlap == 1)
        return ZP_FAIL(ZP_EINVAL, "%s: %s with %s: Megatron-core refuses the two together; keep one", l->name, so,
                       nemo ? "model.overlap_moe_expert_parallel_comm" : "--overlap-moe-expert-parallel-comm");
    b->shared_overlap = l->shared_overlap == 1;
    if (l->ep_overlap == 1 && b->ep <= 1)
        zp_launch_note(l, "--overlap-moe-expert-parallel-comm without expert parallelism: nothing to overlap");
    if (l->capacity > 0)
        b->capacity_factor = l->capacity;
    return ZP_OK;
}

zp_status zp_launch_request(zp_launch *l, zp_search_req *r)
{
    const int64_t tp = l->tp > 0 ? l->tp : 1, pp = l->pp > 0 ? l->pp : 1, cp = l->cp > 0 ? l->cp : 1;
    int64_t dp = 1;
    int stage = 0;
    ZP_TRY(launch_dp(l, r->gpus, tp, pp, cp, &dp, &stage));
    zp_plan *b = &r->base;
    b->stage = stage;
    b->mp = tp;
    b->pp = pp;
    b->ep = l->ep > 0 ? l->ep : 1;
    b->cp = cp;
    b->cp_comm = l->cp_comm;
    zp_search_req_give(r, ZP_SEARCH_STAGE | ZP_SEARCH_DIM(ZP_DIM_TP) | ZP_SEARCH_DIM(ZP_DIM_PP) |
                              ZP_SEARCH_DIM(ZP_DIM_EP) | ZP_SEARCH_DIM(ZP_DIM_CP) | ZP_SEARCH_PA | ZP_SEARCH_PA_CPU |
                              ZP_SEARCH_OFFLOAD | ZP_SEARCH_SP | ZP_SEARCH_TP_OVERLAP);
    ZP_TRY(launch_batch(l, dp / cp, r));
    ZP_TRY(launch_experts(l, dp, r));
    r->exact = 1;
    b->pa = l->pa == 1 && tp > 1; /* ZeRO-R Pa splits checkpoints over the TP ranks: nothing to split at TP 1 */
    b->pa_cpu = 0;
    if (b->pa && l->recompute != ZP_RECOMPUTE_FULL)
        return ZP_FAIL(ZP_EINVAL, "%s: checkpoints distributed over TP need full recompute (Megatron-LM refuses "
                                  "--distribute-saved-activations without --recompute-granularity full)",
                       l->name);
    b->offload = ZP_OFFLOAD_NONE;
    zp_recompute rc = l->recompute != ZP_LAUNCH_UNSET ? (zp_recompute)l->recompute : ZP_RECOMPUTE_NONE;
    if (l->kind == ZP_LAUNCH_TORCHTITAN && rc == ZP_RECOMPUTE_SELECTIVE) {
        /* torchtitan's selective modes: op-level, or every k-th block whole (its default option is "2") */
        const int64_t k = l->sac_every != ZP_LAUNCH_UNSET ? l->sac_every : 2;
        rc = l->sac_op ? ZP_RECOMPUTE_OP : ZP_RECOMPUTE_FULL;
        b->ckpt_every = l->sac_op || k <= 1 ? 0 : (int)(k < r->model->layers ? k : r->model->layers + 1);
        if (l->sac_op)
            ZP_TRY(zp_model_check_op_sac(r->model));
    }
    zp_search_req_give_recompute(r, rc);
    r->checkpoint = rc == ZP_RECOMPUTE_FULL;
    /* Megatron-core reads its modules with selective granularity only (core_attn alone, its default, is 0
     * here); --moe-layer-recompute appends moe to them */
    unsigned mods = l->rc_modules ? l->rc_modules : (unsigned)ZP_RCM_CORE_ATTN;
    if (l->moe_layer_rc)
        mods |= ZP_RCM_MOE;
    b->act_fp8_store = l->act_fp8_store == 1; /* a SwiGLU's input kept as FP8 */
    /* Megatron-core fuses a SwiGLU unless told not to (the flag means nothing to a model without one) */
    b->swiglu_fusion = l->swiglu_fusion != 0 || r->model->mlp != ZP_MLP_GATED;
    if (!b->swiglu_fusion && b->act_fp8_store) { /* mlp.py passes fp8_input_store to the fused kernel only */
        zp_launch_note(l, "activation_func_fp8_input_store without the SwiGLU fusion: Megatron-core keeps the FP8 "
                          "input in its fused kernel only, so the input stays in the training type");
        b->act_fp8_store = 0;
    }
    if ((l->exp_avg_bytes > 0 || l->exp_avg_sq_bytes > 0) && l->precision_aware != 1)
        return ZP_FAIL(ZP_EINVAL, "%s: Adam's moments in another type than fp32 (--exp-avg-dtype, --exp-avg-sq-dtype) "
                                  "are Megatron-core's precision-aware optimizer's: add --use-precision-aware-optimizer",
                       l->name);
    b->exp_avg_bytes = l->exp_avg_bytes;
    b->exp_avg_sq_bytes = l->exp_avg_sq_bytes;
    if (rc == ZP_RECOMPUTE_SELECTIVE)
        b->rc_modules = mods == ZP_RCM_CORE_ATTN ? 0u : mods;
    else if (mods != ZP_RCM_CORE_ATTN)
        zp_launch_note(l, "recompute modules without selective granularity: Megatron-core does not use them");
    /* torchtitan's TP always shards the norms' activations along the sequence (SequenceParallel) */
    b->sp = l->kind == ZP_LAUNCH_TORCHTITAN ? tp > 1 : l->sp == 1 && tp > 1;
    if (l->kind != ZP_LAUNCH_TORCHTITAN && l->sp == 1 && tp == 1) /* Megatron-core: "disabled when TP == 1" */
        zp_launch_note(l, "sequence parallelism at TP 1: nothing to shard (Megatron-core turns it off)");
    int64_t v = l->vstages > 1 ? l->vstages : 1;
    if (v > ZP_MAX_VSTAGES)
        return ZP_FAIL(ZP_EINVAL, "%s: %lld virtual stages: zplan models at most %d", l->name, (long long)v,
                       ZP_MAX_VSTAGES);
    if (l->vp > 0 && pp > 1) {
        if (l->vp > r->model->layers || r->model->layers % (pp * l->vp) != 0)
            return ZP_FAIL(ZP_EINVAL, "%s: %lld layers per virtual stage x %lld stages do not divide the %lld layers",
                           l->name, (long long)l->vp, (long long)pp, (long long)r->model->layers);
        v = r->model->layers / (pp * l->vp);
    }
    if (pp > 1) { /* the schedule and chunks given with the stages */
        b->schedule = v > 1 ? ZP_PP_INTERLEAVED : ZP_PP_1F1B;
        b->vstages = (int)v;
        zp_search_req_give(r, ZP_SEARCH_SCHEDULE | ZP_SEARCH_VSTAGES);
    }
    ZP_TRY(launch_layout(l, pp, v, r));
    ZP_TRY(launch_precision(l, r));
    /* Megatron-core fuses the weight-gradient accumulation unless told not to; PyTorch (torchtitan) does not */
    r->base.grad_accum_fusion = l->fusion != ZP_LAUNCH_UNSET ? l->fusion : l->kind == ZP_LAUNCH_MEGATRON;
    r->base.flash_attn = l->flash != ZP_LAUNCH_UNSET ? l->flash : l->kind == ZP_LAUNCH_TORCHTITAN;
    r->base.overlap_comm = l->overlap != ZP_LAUNCH_UNSET ? l->overlap : l->kind == ZP_LAUNCH_TORCHTITAN;
    /* the distributed optimizer's all-gather beside the next forward (with its grad reduce overlapped) */
    r->base.overlap_param_gather = l->param_gather == 1 && r->base.overlap_comm && l->stage == 1;
    /* the interleaved schedule's sends beside the next pass: Megatron-LM's argument defaults to on, NeMo's
     * YAML to off; torchtitan's interleaved schedules (torch.distributed.pipelining's batched isends) are
     * taken as Megatron-LM's */
    r->base.overlap_p2p_comm = l->p2p_overlap != ZP_LAUNCH_UNSET ? l->p2p_overlap : l->kind != ZP_LAUNCH_NEMO;
    if (l->p2p_warmup_flush == 1 && !r->base.overlap_p2p_comm) /* Megatron-core reads the two apart */
        return ZP_FAIL(ZP_EINVAL, "%s: the warm-up's and the flush's pipeline sends overlapped without the steady "
                                  "state's (--overlap-p2p-communication-warmup-flush without overlap_p2p_comm) are "
                                  "not modelled: drop one",
                       l->name);
    r->base.overlap_p2p_warmup_flush = l->p2p_warmup_flush == 1;
    /* TP overlap as the launch asks (off unless it does: every framework's default); at TP 1 nothing to do */
    b->tp_overlap = l->tp_overlap > 0 && tp > 1 ? l->tp_overlap : ZP_TP_OVERLAP_OFF;
    if (b->tp_overlap != ZP_TP_OVERLAP_OFF && !b->sp)
        return ZP_FAIL(ZP_EINVAL, "%s: TP communication overlap needs sequence parallelism (Megatron-core asserts "
                                  "tp_comm_overlap with sequence_parallel): add --sequence-parallel "
                                  "(NeMo: sequence_parallel: true)",
                       l->name);
    if (b->tp_overlap != ZP_TP_OVERLAP_OFF && r->cluster && tp > r->cluster->gpus_per_node)
        return ZP_FAIL(ZP_EINVAL, "%s: TP %lld spans nodes of %d GPUs: its overlapped communication maps the peers' "
                                  "memory over NVLink (TP inside a node, or no overlap)",
                       l->name, (long long)tp, r->cluster->gpus_per_node);
    r->base.reshard = l->reshard;
    r->base.shard_group = l->shard_group;
    /* torchtitan without training.compile (its default) runs the blocks eager; its async TP only compiled
     * ("currently only effective when compile is enabled", job_config.py) */
    r->base.eager = l->kind == ZP_LAUNCH_TORCHTITAN && l->compile != 1;
    if (l->kind == ZP_LAUNCH_TORCHTITAN && l->compile == ZP_LAUNCH_UNSET)
        zp_launch_note(l, "training.compile not stated: PyTorch eager, torchtitan's default");
    if (b->eager && b->tp_overlap == ZP_TP_OVERLAP_ASYNC) {
        zp_launch_note(l, "enable_async_tensor_parallel without training.compile: torchtitan runs async TP "
                          "compiled only, so TP communication is not overlapped");
        b->tp_overlap = ZP_TP_OVERLAP_OFF;
    }
    return ZP_OK;
}

int zp_launch_runs(zp_launch_kind kind, const zp_plan *p)
{
    switch (kind) {
    case ZP_LAUNCH_MEGATRON:
    case ZP_LAUNCH_NEMO: return zp_megatron_check(p) == ZP_OK;
    case ZP_LAUNCH_TORCHTITAN: return zp_torchtitan_check(p) == ZP_OK;
    case ZP_LAUNCH_DEEPSPEED: return zp_dsconfig_check(p) == ZP_OK;
    default: return 1;
    }
}

const char *zp_launch_key_of(zp_launch_kind kind, const char *what)
{
    static const char *const knobs[] = {"stage", "tp", "pp", "micro", "recompute", "sp", "offload", "pa"};
    static const char *const names[ZP_NLAUNCH][8] = {
        {"--use-distributed-optimizer", "--tensor-model-parallel-size", "--pipeline-model-parallel-size",
         "--micro-batch-size", "--recompute-granularity", "--sequence-parallel", "offload", "Pa"},
        {"parallelism.data_parallel_shard_degree (FSDP) or _replicate_degree (DDP)",
         "parallelism.tensor_parallel_degree", "parallelism.pipeline_parallel_degree",
         "training.local_batch_size", "activation_checkpoint.mode", "SP", "offload", "Pa"},
        {"model.optim.name distributed_fused_adam", "model.tensor_model_parallel_size",
         "model.pipeline_model_parallel_size", "model.micro_batch_size", "model.activations_checkpoint_granularity",
         "model.sequence_parallel", "offload", "Pa"},
        {"zero_optimization.stage", "Megatron --tensor-model-parallel-size", "pipeline stages (PipelineModule)",
         "train_micro_batch_size_per_gpu", "activation_checkpointing", "SP",
         "zero_optimization.offload_optimizer", "activation_checkpointing.partition_activations"}};
    for (int i = 0; i < 8; i++)
        if (strcmp(what, knobs[i]) == 0)
            return (unsigned)kind < ZP_NLAUNCH ? names[kind][i] : what;
    return what;
}

/* Reading a launch is here, above the format readers (each uses zp_launch.c's entries and key tables), so
 * zp_launch.c never calls back into them. */
zp_status zp_launch_read(const char *path, zp_launch_kind kind, zp_launch *l)
{
    char *text = NULL;
    ZP_TRY(zp_io_read_file(path, 16u << 20, &text, NULL));
    zp_status st;
    switch (kind) {
    case ZP_LAUNCH_MEGATRON: st = zp_megatron_args_parse(text, path, l); break;
    case ZP_LAUNCH_TORCHTITAN: st = zp_torchtitan_parse(text, path, l); break;
    case ZP_LAUNCH_NEMO: st = zp_nemo_parse(text, path, l); break;
    default: st = ZP_FAIL(ZP_EINVAL, "%s: not a launch kind zplan reads", path); break;
    }
    free(text);
    return st;
}
