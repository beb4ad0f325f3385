/* zp_layout.c — the memory of a step as alloc and free ops: DeepSpeed's as the planner models it, and
 * zplan's executor's (see zp_layout.h). */
#include "zp_layout.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "zp_dispatch.h"
#include "zp_fp8.h"
#include "zp_memory.h"
#include "zp_shape.h"
#include "zp_shard.h"
#include "zp_tensors.h"

void zp_layout_facts_free(zp_layout_facts *f)
{
    if (!f)
        return;
    free(f->gather);
    free(f->grad);
    free(f->gather_exp);
    free(f->grad_exp);
    memset(f, 0, sizeof *f);
}

static zp_status facts_alloc(const zp_model *m, zp_layout_facts *f)
{
    memset(f, 0, sizeof *f);
    f->gather = calloc((size_t)m->layers + 2, sizeof *f->gather);
    f->grad = calloc((size_t)m->layers + 2, sizeof *f->grad);
    f->gather_exp = calloc((size_t)m->layers + 2, sizeof *f->gather_exp);
    f->grad_exp = calloc((size_t)m->layers + 2, sizeof *f->grad_exp);
    if (!f->gather || !f->grad || !f->gather_exp || !f->grad_exp) {
        zp_layout_facts_free(f);
        return ZP_FAIL(ZP_ENOMEM, "out of memory");
    }
    return ZP_OK;
}

/* ================================================================ DeepSpeed / Megatron-LM (the planner) */

/* The multi-token prediction modules (zp_model.mtp_layers) in the head's group: their blocks, projections and
 * norms (the routed experts' share 1/ep, in the experts' group), and with `embedding` the word embedding's copy
 * Megatron-core builds on the last stage for them (gpt_model.py: pre_process or mtp_process) when that stage
 * does not hold the embedding. */
static void ds_mtp(const zp_model *m, const zp_plan *p, int embedding, zp_layout_facts *f)
{
    const int64_t L = m->layers;
    const double t = (double)p->mp, ep = (double)p->ep;
    double all, experts;
    zp_shape_mtp_params(m, &all, &experts);
    if (all <= 0)
        return;
    if (ep <= 1)
        experts = 0.0;
    const double own = (all - experts) / t + (embedding ? zp_model_params_embedding(m) / t : 0.0);
    f->gather[L + 1] += own;
    f->grad[L + 1] += own;
    f->gather_exp[L + 1] += experts / t / ep;
    f->grad_exp[L + 1] += experts / t / ep;
    f->psi_exp += experts / t / ep;
}

/* Groups per MP rank: block i is 1/mp of the model's block i; the embedding group (gathered for the
 * embedding and, tied, again as the LM head) is (V + s)h/mp for GPT; the output side (final norm, an
 * untied LM head) completes its gradients with the embedding's when tied (GPT: 2h/mp more), else as its
 * own group right after the head's backward. With EP the rank holds 1/ep of a block's experts, reduced over
 * their own group (gather_exp/grad_exp). With pipeline stages a stage holds its chunks' blocks; the first the
 * embedding, the last (Megatron-LM) the final norm and the head, with its own copy of the word embedding
 * when they are tied, whose gradient is all-reduced with the first stage's (group L+1). */
static zp_status ds_facts(const zp_model *m, const zp_plan *p, const zp_pp_stage *st, zp_layout_facts *f)
{
    ZP_TRY(facts_alloc(m, f));
    const double t = (double)p->mp, emb = zp_model_params_embedding(m) / t, head = zp_model_params_head(m) / t;
    const int64_t L = m->layers;
    const double ep = (double)p->ep;
    double kind_all[2], kind_exp[2]; /* a block's parameters are its kind's (zp_shape_block_params): each summed once */
    int have[2] = {0, 0};
    for (int c = 0; c < st->chunks; c++)
        for (int64_t i = st->first[c] + 1; i <= st->first[c] + st->layers[c]; i++) {
            const int moe = zp_model_block_is_moe(m, i - 1);
            if (!have[moe])
                zp_shape_block_params(m, i - 1, &kind_all[moe], &kind_exp[moe]);
            have[moe] = 1;
            const double all = kind_all[moe], experts = kind_exp[moe];
            if (ep > 1 && experts > 0) {
                f->gather[i] = f->grad[i] = (all - experts) / t;
                f->gather_exp[i] = f->grad_exp[i] = experts / t / ep;
                f->psi_exp += f->grad_exp[i];
            } else {
                f->gather[i] = f->grad[i] = all / t;
            }
        }
    if (st->stages == 1) {
        f->gather[0] = emb;
        f->gather[L + 1] = m->untied ? head : emb;
        f->grad[0] = m->untied ? emb : emb + head;
        f->grad[L + 1] = m->untied ? head : 0.0;
        ds_mtp(m, p, 0, f);
        zp_shape_params(m, p, &f->psi, &f->psi_all);
        return ZP_OK;
    }
    if (st->embedding)
        f->gather[0] = f->grad[0] = emb;
    if (st->head) {
        const double E = (double)(m->embed_dim > 0 ? m->embed_dim : m->hidden);
        const double word = m->untied ? 0.0 : (double)m->vocab * E / t;
        f->gather[L + 1] = f->grad[L + 1] = word + head;
        ds_mtp(m, p, !st->embedding && m->untied, f);
    }
    for (int64_t i = 0; i <= L + 1; i++)
        f->psi += f->grad[i] + f->grad_exp[i];
    f->psi_all = f->psi + f->psi_exp * (ep - 1.0); /* the other EP ranks' experts, partitioned over DP too */
    return ZP_OK;
}

/* Short-lived tensors and buffers interleave without MD and leave ZP_FRAGMENTATION_FRACTION of what they
 * occupy unusable (ZeRO §6.3): every such alloc (and its free) carries a fragmentation companion. */
static void ds_mem(zp_builder *b, int s, int alloc, zp_buf buf, int index, zp_mem_cat cat, double bytes)
{
    if (zp_buf_per_of(buf) == ZP_PER_LAYER)
        bytes *= b->repeat; /* a collapsed memory-only schedule: this block stands for `repeat` of them */
    zp_builder_mem(b, s, alloc, buf, index, cat, bytes);
    int fragments = cat == ZP_MEM_ACTIVATIONS || cat == ZP_MEM_CHECKPOINTS || cat == ZP_MEM_GRADS ||
                    cat == ZP_MEM_BUFFERS;
    if (!b->p->md && fragments)
        zp_builder_mem(b, s, alloc, ZP_BUF_FRAG, index, ZP_MEM_FRAGMENTATION, ZP_FRAGMENTATION_FRACTION * bytes);
}

/* Stage 3: DeepSpeed fetches module by module and prefetches up to stage3_prefetch_bucket_size parameters
 * ahead, releasing what exceeds stage3_max_live_parameters; at least the largest tensor is whole. zplan's
 * step gathers a group (`largest`: the largest one a rank gathers) at a time: the group in use plus the
 * prefetched part of the next, at most the rank's `psi` parameters. */
static double stage3_live(const zp_model *m, const zp_plan *p, double largest, double psi)
{
    const double ahead = p->stage3_prefetch > 0 ? fmin(p->stage3_prefetch, largest) : largest;
    double live = largest + ahead;
    if (p->stage3_max_live > 0)
        live = fmax(fmin(live, p->stage3_max_live), zp_model_params_largest_tensor_rank(m, p->mp));
    return fmin(live, psi);
}

/* FP8 training with a Transformer Engine recipe (vocab/zp_fp8.h). */
static int fp8_te(const zp_plan *p)
{
    const zp_fp8_info *r = zp_fp8_get(p->fp8);
    return r && r->te;
}

/* Transformer Engine keeps each FP8 linear layer's weight cast to FP8 and its FP8 transpose (the forward's
 * and the input gradient's operands) from the first micro-batch of a step to the last (TE docs, "FP8 weight
 * caching": is_first_microbatch; Linear's weight_fp8 / weight_t_fp8 workspaces): 2 bytes a parameter of the
 * linear layers this rank holds (`held` parameters of all its tensors, the linear layers' share of them:
 * the blocks', not the embedding's nor the LM head's; routed experts included, TE's GroupedLinear caches
 * theirs alike). */
static double ds_fp8_weight_bytes(const zp_builder *b, double held)
{
    const double all = zp_model_params(b->m);
    const double outer = zp_model_params_embedding(b->m) + zp_model_params_head(b->m);
    return all > 0 ? zp_fp8_weight_cache_bytes(b->p->fp8) * held * fmax(all - outer, 0.0) / all : 0.0;
}

/* What FP8 saves of a block's kept activations: Transformer Engine saves the FP8 (transposed) copy of each
 * linear layer's input for its weight gradient instead of the bf16 input (TE's Linear / LayerNormLinear
 * save inputmat_t in FP8 under fp8_autocast): 1 byte an element less. The inputs are Korthikanti's terms
 * (models/zp_model.c block_activation): the attention's input (2h a token) and the MLP's (2h, unless it is
 * the same tensor), replicated over TP without SP, and the projection's input (2·a·dv) and the dense MLP's
 * down-projection input (2f), split by TP. In an MoE block the experts' too, as TE's GroupedLinear saves
 * its FP8 inputs alike (grouped_linear.py: the quantized inputmats kept for the weight gradient): the tokens'
 * k copies at the routed experts' up projections (2kh, replicated as block_activation's), the routed and
 * shared experts' down-projection inputs (2(k·fe + ns·fs), split by TP). torchao's Float8Linear saves the
 * bf16 input and casts again in backward: nothing saved. */
static double ds_fp8_saved(const zp_builder *b)
{
    const zp_model *m = b->m;
    if (!fp8_te(b->p))
        return 0.0;
    const double t = (double)b->p->mp, tokens = (double)m->seq * (double)b->p->micro_batch;
    const double h = (double)m->hidden;
    const double moe = m->layers > 0 ? (double)zp_model_moe_blocks(m) / (double)m->layers : 0.0;
    const double k = (double)m->top_k;
    const double rep = h * (1.0 + (m->parallel && m->block_norms == 1 ? 0.0 : 1.0)) + moe * k * h;
    const double experts = k * (double)zp_model_expert_ffn(m) +
                           (double)m->shared_experts * (double)zp_model_shared_ffn(m);
    const double split = (double)m->heads * (double)zp_model_v_head_dim(m) + (1.0 - moe) * (double)m->ffn +
                         moe * experts;
    const double saved = 1.0 - zp_fp8_get(b->p->fp8)->scale_act; /* bf16's 2 bytes less the FP8 copy and its scales */
    return saved * tokens * (b->p->sp ? (rep + split) / t : rep + split / t);
}

/* Sharded data parallelism beside pipelines and in hybrid shards (torchtitan's FSDP2 with
 * torch.distributed.pipelining): a stage's micro-batches run their backward with gradient sync off
 * (pipelining/stage.py, backward_maybe_with_nosync: set_requires_gradient_sync(False) until the last
 * backward), so from stage 2 on the stage also holds its gradients whole (Ψ of the gradients' type: FSDP2
 * accumulates them in its reduce dtype) until the one reduce-scatter after the last micro-batch; stage 3
 * keeping its parameters gathered (reshard_after_forward False, torchtitan's default with pipelines) holds
 * the stage's Ψ whole less its own shard instead of DeepSpeed's live window; with a shard group of G ranks
 * every partition below is ÷G instead of ÷Nd.
 *
 * Model states (ZeRO §5, Table 1): with Ψ parameters per MP rank, fp16 parameters 2Ψ (÷Nd at stage 3),
 * fp16 gradients 2Ψ (4Ψ with fp32 gradients, Megatron-LM's recipe: 2 + 4 + 12 = 18 bytes a parameter with
 * Adam; ÷Nd from stage 2), KΨ of optimizer states (÷Nd from stage 1). Buffers (ZeRO §6.2): CB's two buckets
 * (reduce, in the gradients' type, and all-gather) of min(bucket, Ψ) elements, or without CB an fp32 fused
 * buffer of 4Ψ.
 *
 * Offload as DeepSpeed runs it (ZeRO-Offload, Ren et al. 2021 §4; deepspeed/runtime/zero/stage_1_and_2.py
 * and stage3.py with offload_optimizer): the optimizer states and an fp32 gradient partition (4 bytes a
 * parameter) live in pinned host memory, and from stage 2 on each reduced gradient bucket is copied into
 * that partition as soon as it is reduced, so the device keeps no gradient partition of its own, only the
 * buckets (stage 1 all-reduces whole gradients at the end and keeps them). ZeRO-3 Offload moves the
 * fp16 parameters to the host too. ZeRO-Infinity (offload device "nvme") keeps the offloaded states on
 * NVMe and only DeepSpeed's swap buffers in host memory (ZP_NVME_*: optimizer states and gradients are
 * swapped per sub-group, parameters through fixed buffers). */
/* The token dispatcher's own buffers, allocated at the first MoE block and kept: Megatron-core's all-gather
 * dispatcher gathers the EP group's hidden states into its global memory buffer
 * (gather_from_sequence_parallel_region(..., use_global_buffer=True)), EP x T x h 16-bit elements (the
 * dispatch's bytes, zp_block_shape.a2a_bytes), reused by every block and micro-batch; DeepEP holds its
 * NVLink and RDMA buffers (zp_dispatch_buffer_bytes); the all-to-all's are the step's activations. */
static void ds_ep_buffers(zp_builder *b)
{
    const zp_dispatch_info *d = zp_dispatch_get(b->p->dispatcher);
    if (!d || b->p->ep <= 1 || zp_model_moe_blocks(b->m) <= 0)
        return;
    double bytes = zp_dispatch_buffer_bytes(b->p->dispatcher, b->p->ep, b->m->hidden);
    for (int64_t i = 0; d->gather && i < b->m->layers; i++)
        if (zp_model_block_is_moe(b->m, i)) {
            zp_block_shape S;
            zp_shape_block(b->m, b->p, i, &S);
            bytes = S.a2a_bytes[0];
            break;
        }
    if (bytes > 0)
        ds_mem(b, -1, 1, ZP_BUF_EP_COMM, 0, ZP_MEM_BUFFERS, bytes);
}

static void ds_setup(zp_builder *b)
{
    const zp_plan *p = b->p;
    const zp_stage_info *si = zp_stage_get(p->stage);
    /* nd: the ranks a partition spans, DP or hybrid sharding's shard group */
    const double nd = (double)zp_plan_shard_degree(p), nm = (double)p->mp, psi = b->f.psi, k = zp_plan_optimizer_bytes(p);
    const double pb = p->param_bytes > 0 ? p->param_bytes : 2.0;
    const int offload = p->offload != ZP_OFFLOAD_NONE;
    const double psi_all = b->f.psi_all; /* partitioned: psi_all / nd per rank (EP: psi < psi_all) */
    const double params = pb * (si->partitions_params ? psi_all / nd : psi);
    if (p->offload != ZP_OFFLOAD_PARAMS)
        ds_mem(b, -1, 1, ZP_BUF_MODEL_PARAMS, 0, ZP_MEM_PARAMS, params);
    else if (p->nvme & ZP_NVME_PARAMS) {
        ds_mem(b, -1, 1, ZP_BUF_NVME_PARAMS, 0, ZP_MEM_NVME, params);
        ds_mem(b, -1, 1, ZP_BUF_MODEL_PARAMS, 0, ZP_MEM_HOST,
               pb * fmin(params / pb, ZP_NVME_PARAM_BUFFERS * ZP_NVME_PARAM_BUFFER_SIZE));
    } else
        ds_mem(b, -1, 1, ZP_BUF_MODEL_PARAMS, 0, ZP_MEM_HOST, params);
    if (fp8_te(p)) /* Transformer Engine's FP8 weights and their transposes, beside the bf16 parameters */
        ds_mem(b, -1, 1, ZP_BUF_FP8_WEIGHTS, 0, ZP_MEM_PARAMS, ds_fp8_weight_bytes(b, params / pb));
    if (si->partitions_params && p->persistence_threshold > 0) /* whole on every rank (DeepSpeed) */
        ds_mem(b, -1, 1, ZP_BUF_PERSISTENT, 0, ZP_MEM_PARAMS,
               pb * zp_model_params_small_tensors(b->m, p->mp, p->persistence_threshold) * (1.0 - 1.0 / nd));
    const double gb = zp_plan_grad_bytes(p); /* 4: fp32 gradients (Megatron-LM's main_grad: 18 B/param) */
    if (!(offload && si->partitions_grads)) /* offloaded from stage 2 on: streamed to the host per bucket */
        ds_mem(b, -1, 1, ZP_BUF_MODEL_GRADS, 0, ZP_MEM_GRADS, gb * (si->partitions_grads ? psi_all / nd : psi));
    if (zp_plan_grads_once(p)) /* beside pipeline stages the micro-batches' gradients accumulate whole */
        ds_mem(b, -1, 1, ZP_BUF_MODEL_GRADS, 1, ZP_MEM_GRADS, gb * psi);
    const double part = si->partitions_optimizer ? psi_all / nd : psi;
    if (offload && (p->nvme & ZP_NVME_OPTIMIZER)) {
        /* on the drives: the fp32 master, m, v and gradients; in host memory the swap buffers of a sub-group */
        ds_mem(b, -1, 1, ZP_BUF_NVME_OPT, 0, ZP_MEM_NVME, (k + 4.0) * part);
        ds_mem(b, -1, 1, ZP_BUF_OPT_STATES, 0, ZP_MEM_HOST,
               4.0 * ZP_NVME_OPT_BUFFERS * fmin(part, ZP_NVME_SUB_GROUP));
    } else {
        ds_mem(b, -1, 1, ZP_BUF_OPT_STATES, 0, offload ? ZP_MEM_HOST : ZP_MEM_OPTIMIZER, k * part);
        if (offload)
            ds_mem(b, -1, 1, ZP_BUF_HOST_GRADS, 0, ZP_MEM_HOST, 4.0 * part);
    }
    ds_mem(b, -1, 1, ZP_BUF_FUSED, 0, ZP_MEM_BUFFERS, p->cb ? (gb + pb) * fmin(p->bucket, psi) : 4.0 * psi);
    if (si->partitions_params) {
        double largest = zp_model_params_largest_layer(b->m) / nm;
        if (p->ep > 1) { /* the groups as this rank gathers them: 1/ep of each MoE block's experts */
            largest = (double)b->m->vocab * (double)(b->m->embed_dim > 0 ? b->m->embed_dim : b->m->hidden) / nm;
            for (int64_t i = 1; i <= b->m->layers; i++)
                largest = fmax(largest, b->f.gather[i] + b->f.gather_exp[i]);
        }
        const double gathered = p->fp8_all_gather ? 1.0 : pb; /* FSDP2's FP8 all-gather keeps FP8 copies */
        /* kept gathered (FSDP2's reshard_after_forward False): the stage's parameters whole */
        const double live = zp_plan_reshards(p) ? stage3_live(b->m, p, largest, psi) : psi;
        ds_mem(b, -1, 1, ZP_BUF_GATHER_POOL, 0, ZP_MEM_BUFFERS, gathered * live * (1.0 - 1.0 / nd));
    }
    ds_ep_buffers(b);
}

double zp_layout_stage3_live(const zp_model *m, const zp_plan *p)
{
    const double nm = (double)p->mp;
    return stage3_live(m, p, zp_model_params_largest_layer(m) / nm, zp_model_params(m) / nm);
}

/* The attention core of one block: 5·a·s²·b/t bytes (scores, softmax output, dropout mask; 4 without
 * attention dropout: zp_model_score_bytes), which
 * selective recompute does not keep and FlashAttention never stores. */
static double ds_core_bytes(const zp_builder *b)
{
    if (b->p->flash_attn)
        return 0.0;
    const double s = (double)b->m->seq;
    return zp_model_score_bytes(b->m) * (double)b->m->heads * s * s * (double)b->p->micro_batch / (double)b->p->mp;
}

/* A mean block's figure of zp_model's per MP rank (layer(m, micro-batch, t)): with sequence parallelism all
 * of it is split over the t ranks, else only the terms the model splits. */
static double ds_per_rank(const zp_builder *b, double (*layer)(const zp_model *, double, int64_t))
{
    const double mb = (double)b->p->micro_batch;
    return b->p->sp ? layer(b->m, mb, 1) / (double)b->p->mp : layer(b->m, mb, b->p->mp);
}

/* Activations (Korthikanti et al. 2022; ZeRO §6.1 for Pa): without recompute every block keeps its
 * activations, s·b·h·(10 + 24/t + 5·a·s/(h·t)) bytes (all of it ÷t with sequence parallelism: s·b·h·(34 +
 * 5·a·s/h)/t), from its forward to its backward, less the attention core with FlashAttention and, where the
 * SwiGLU is one fused kernel (zp_plan_glu_fused), the SiLU's output that eager PyTorch keeps; with full
 * recompute a block keeps a checkpoint of 2·s·b·h (÷t with Pa or SP, in host memory with Pa+cpu) and one
 * block's working set is live from the first forward to the end of the pass's backward; selective recompute
 * keeps everything but the attention core, recomputed one block at a time in backward. The logits and their
 * gradient, 2·2·b·s·V/t, live from the LM head to the end of the micro-batch's backward. With pipeline
 * stages a stage holds these for every micro-batch in flight (its forward done, its backward not yet): the
 * schedule's order says how many. */
static double ds_block_acts(const zp_builder *b)
{
    const double mb = (double)b->p->micro_batch;
    double acts = ds_per_rank(b, zp_model_activation_bytes_layer);
    if (b->p->flash_attn) /* FlashAttention keeps no s x s scores, softmax or dropout mask (5 or 4 bytes a score) */
        acts -= zp_model_score_bytes(b->m) * mb * (double)b->m->heads / (double)b->p->mp * (double)b->m->seq *
                (double)b->m->seq;
    acts -= ds_fp8_saved(b);
    if (b->p->act_fp8_store) /* a SwiGLU's input kept as FP8 (--activation-func-fp8-input-store) */
        acts -= ds_per_rank(b, zp_model_glu_fp8_saved_layer);
    if (zp_plan_glu_fused(b->p)) /* a fused SwiGLU keeps no SiLU output (Megatron-core's bias_swiglu_impl) */
        acts -= ds_per_rank(b, zp_model_glu_fused_saved_layer);
    return acts > 0 ? acts : 0.0;
}

/* What torchtitan's op-level selective recompute keeps of a block (zp_model_op_sac says which matmuls'
 * outputs; zp_block_recompute_op in zp_block.c which ops run again): the block's input (the checkpoint
 * wrapper's), the kept matmuls' outputs (Llama's wq's Q, wv's V, w1's T x f and w2's T x h, partial before the
 * MP reduction; an MoE block's gate's logits, its shared experts'), the SDPA kernel's output and its fp32
 * log-sum-exp per query head, with sequence parallelism the two reduce-scatters' outputs, with EP the
 * dispatch's and the combine's all-to-all outputs (a rank's T·k·cf token copies each way); bf16 but the
 * log-sum-exp. Per MP rank, bytes. The attention is a fused SDPA kernel in torchtitan: no s x s scores are
 * kept whatever flash_attn says. */
static double ds_op_sac_kept_block(const zp_builder *b, int64_t block)
{
    zp_block_shape S;
    zp_shape_block(b->m, b->p, block, &S);
    zp_op_sac o;
    zp_model_op_sac(b->m, S.moe, &o);
    const double T = S.T, h = S.h, Ts = b->p->sp ? T / (double)b->p->mp : T;
    const struct {
        unsigned bit; /* 0: kept whatever the parity (the SDPA kernel's output) */
        double n;     /* elements per token */
    } out[] = {{ZP_SAC_WQ, S.q_n},      {ZP_SAC_WK, S.kvh * S.dqk}, {ZP_SAC_WV, S.kvh * S.dv},
               {ZP_SAC_WQ_A, S.q_rank}, {ZP_SAC_WQ_B, S.q_n},       {ZP_SAC_WKV_A, S.kv_rank + S.rope},
               {ZP_SAC_WKV_B, S.kv_n},  {ZP_SAC_WO, h},             {0, S.o_k},
               {ZP_SAC_ROUTER, S.E},    {ZP_SAC_W1, S.f},           {ZP_SAC_W3, S.f}};
    double n = 0.0; /* summed in the block's order */
    for (size_t i = 0; i < sizeof out / sizeof out[0]; i++)
        if (out[i].bit == 0 || (o.kept & out[i].bit))
            n += out[i].n;
    double kept = 2.0 * Ts * h + 2.0 * T * n + 4.0 * T * S.qh;
    if (o.kept & ZP_SAC_W2)
        kept += 2.0 * T * h;
    if (b->p->sp && b->p->mp > 1)
        kept += 2.0 * 2.0 * Ts * h;
    if (S.moe && b->p->ep > 1)
        kept += S.a2a_bytes[0] + S.a2a_bytes[1];
    return kept;
}

/* ... of the mean block, as ds_block_acts counts a block (zp_model_activation_bytes_layer): the dense and the
 * MoE blocks' weighted by their numbers. */
static double ds_op_sac_kept(const zp_builder *b)
{
    const zp_model *m = b->m;
    const int64_t moe = zp_model_moe_blocks(m), dense = m->layers - moe;
    int64_t first[2] = {-1, -1}; /* the first dense and the first MoE block */
    for (int64_t i = 0; i < m->layers && (first[0] < 0 || first[1] < 0); i++)
        if (first[zp_model_block_is_moe(m, i)] < 0)
            first[zp_model_block_is_moe(m, i)] = i;
    if (moe == 0)
        return ds_op_sac_kept_block(b, first[0]);
    if (dense == 0)
        return ds_op_sac_kept_block(b, first[1]);
    return ((double)dense * ds_op_sac_kept_block(b, first[0]) + (double)moe * ds_op_sac_kept_block(b, first[1])) /
           (double)m->layers;
}

/* What selective recompute's modules (zp_plan_rc_modules) no longer keep of the mean block, per MP rank as
 * ds_block_acts (all of it ÷t with sequence parallelism), and in *most the largest one's: the modules are
 * recomputed one at a time before their backward, so that is the working set. The attention core's is
 * ds_core_bytes; moe holds moe_act's and shared_experts' inside it. FP8 keeps a GEMM's input as its copy
 * (ds_fp8_saved): that copy is what discarding the input frees. */
static double ds_rc_saved(const zp_builder *b, double *most)
{
    unsigned mods = zp_plan_rc_modules(b->p);
    if (mods & ZP_RCM_MOE)
        mods &= ~(unsigned)(ZP_RCM_MOE_ACT | ZP_RCM_SHARED_EXPERTS);
    const double gin = fp8_te(b->p) ? 1.0 + zp_fp8_get(b->p->fp8)->scale_act : 2.0;
    const double mb = (double)b->p->micro_batch, t = (double)b->p->mp;
    const unsigned glu = (b->p->act_fp8_store ? ZP_GLU_FP8_INPUT : 0u) | (zp_plan_glu_fused(b->p) ? ZP_GLU_FUSED : 0u);
    double sum = 0.0;
    *most = (mods & ZP_RCM_CORE_ATTN) ? ds_core_bytes(b) : 0.0;
    for (int i = 0; zp_rc_module_get(i); i++) {
        const unsigned bit = zp_rc_module_get(i)->bit;
        if (bit == ZP_RCM_CORE_ATTN || !(mods & bit))
            continue;
        const double x = b->p->sp ? zp_model_rc_saved_layer(b->m, bit, mb, 1, gin, glu) / t
                                   : zp_model_rc_saved_layer(b->m, bit, mb, b->p->mp, gin, glu);
        sum += x;
        *most = fmax(*most, x);
    }
    return sum + ((mods & ZP_RCM_CORE_ATTN) ? ds_core_bytes(b) : 0.0);
}

/* What a block keeps from its forward to its backward when it is not checkpointed whole, and the working
 * set of the block being (re)computed: a whole block's under full recompute (of every block or of every
 * k-th: the others keep theirs), what op-level recompute computes again beside what it keeps, selective
 * recompute's largest module. */
static double ds_block_kept(const zp_builder *b)
{
    double most;
    if (b->p->op_sac)
        return fmin(ds_op_sac_kept(b), ds_block_acts(b));
    return b->p->selective ? fmax(ds_block_acts(b) - ds_rc_saved(b, &most), 0.0) : ds_block_acts(b);
}
static double ds_work_bytes(const zp_builder *b)
{
    double most = 0.0;
    if (b->p->checkpoint)
        return zp_plan_ckpt_fraction(b->p, b->m->layers) > 0 ? ds_block_acts(b) : 0.0;
    if (b->p->op_sac)
        return ds_block_acts(b) - ds_block_kept(b);
    if (b->p->selective)
        ds_rc_saved(b, &most);
    return most;
}

static void ds_block_begin(zp_builder *b, int l)
{
    if (!zp_plan_block_checkpointed(b->p, l))
        ds_mem(b, ZP_STREAM_COMPUTE, 1, ZP_BUF_BLOCK_ACTS, l, ZP_MEM_ACTIVATIONS, ds_block_kept(b));
    if (ds_work_bytes(b) > 0 && !b->work_live) {
        ds_mem(b, ZP_STREAM_COMPUTE, 1, ZP_BUF_BLOCK_WORK, 0, ZP_MEM_ACTIVATIONS, ds_work_bytes(b));
        b->work_live = 1;
    }
}

static double ds_ckpt_bytes(const zp_builder *b)
{
    double c = zp_model_checkpoint_bytes_layer(b->m, (double)b->p->micro_batch);
    return (b->p->pa || b->p->pa_cpu || b->p->sp) ? c / (double)b->p->mp : c;
}

static void ds_ckpt(zp_builder *b, int l, int alloc)
{
    if (zp_plan_block_checkpointed(b->p, l))
        ds_mem(b, ZP_STREAM_COMPUTE, alloc, ZP_BUF_CKPT, l, b->p->pa_cpu ? ZP_MEM_HOST : ZP_MEM_CHECKPOINTS,
               ds_ckpt_bytes(b));
    else if (!alloc)
        ds_mem(b, ZP_STREAM_COMPUTE, 0, ZP_BUF_BLOCK_ACTS, l, ZP_MEM_ACTIVATIONS, ds_block_kept(b));
}

static void ds_block_end(zp_builder *b, int l) { ds_ckpt(b, l, 1); }
static void ds_block_done(zp_builder *b, int l) { ds_ckpt(b, l, 0); }

/* The head's activations from its forward to the end of its backward: the logits (fp32, T x V/t) and, per
 * multi-token prediction depth (sim/zp_schedule.c mtp_forward), its logits again, what its block keeps (its
 * checkpoint when the blocks are checkpointed) and eh_proj's input (2h a token, 16-bit). */
static double ds_logits_bytes(zp_builder *b)
{
    const double T = (double)b->p->micro_batch * (double)b->m->seq;
    const double logits = 4.0 * T * (double)b->m->vocab / (double)b->p->mp;
    double mtp = 0.0;
    const int layer = b->layer;
    for (int64_t k = 0; k < b->m->mtp_layers; k++) {
        b->layer = (int)(b->m->layers + k);
        mtp += logits + 2.0 * T * 2.0 * (double)b->m->hidden +
               (zp_plan_block_checkpointed(b->p, b->layer) ? ds_ckpt_bytes(b) : ds_block_kept(b));
    }
    b->layer = layer;
    return logits + mtp;
}

static void ds_logits(zp_builder *b)
{
    ds_mem(b, ZP_STREAM_COMPUTE, 1, ZP_BUF_LOGITS, 0, ZP_MEM_ACTIVATIONS, ds_logits_bytes(b));
}

static void ds_micro_end(zp_builder *b)
{
    if (b->pass_head)
        ds_mem(b, ZP_STREAM_COMPUTE, 0, ZP_BUF_LOGITS, 0, ZP_MEM_ACTIVATIONS, ds_logits_bytes(b));
    if (b->work_live) {
        ds_mem(b, ZP_STREAM_COMPUTE, 0, ZP_BUF_BLOCK_WORK, 0, ZP_MEM_ACTIVATIONS, ds_work_bytes(b));
        b->work_live = 0;
    }
}

/* Stage 3's gathered parameters live in the fixed pool allocated at setup. */
static void ds_gather(zp_builder *b, int s, int item)
{
    (void)b;
    (void)s;
    (void)item;
}

static void ds_use(zp_builder *b, int item)
{
    (void)b;
    (void)item;
}

/* ================================================================ zplan's executor */

/* The flat layout of one MP rank (of its pipeline stage): group 0 (the embedding group, also gathered as
 * the LM head) and the blocks, where zp_tensors_stage_get puts them; units cut at every group boundary and
 * every bucket boundary from the top (zp_shard.h), each sharded into dp pieces. */
static zp_status ex_facts(const zp_model *m, const zp_plan *p, const zp_pp_stage *pps, zp_layout_facts *f)
{
    zp_tensors_stage x;
    ZP_TRY(zp_tensors_stage_get(m, p, pps->stage, &x));
    ZP_TRY(facts_alloc(m, f));
    const size_t L = (size_t)m->layers;
    if (x.emb && x.hsz == 0) { /* tied: one group, gathered as the embedding and again as the LM head */
        f->gather[0] = f->gather[L + 1] = (double)x.esz;
        /* its gradient completes with the embedding's backward, or on the last of several stages with the
         * head's */
        f->grad[pps->embedding ? 0 : L + 1] = (double)x.esz;
    } else if (x.emb) {
        f->gather[0] = f->grad[0] = (double)x.esz;
    }
    if (x.head) /* untied: the head group completes first (the top of the layout) */
        f->gather[L + 1] = f->grad[L + 1] = (double)x.hsz;
    for (int l = x.l0; l < x.l0 + x.nl; l++) {
        f->gather[l + 1] = f->grad[l + 1] = (double)x.bsz;
        /* the local experts (every MoE block's, whatever EP): reduced and partitioned over the EDP group */
        f->gather_exp[l + 1] = f->grad_exp[l + 1] = (double)x.xsz;
    }
    f->n = x.n;
    f->nx = x.nx;
    f->psi_exp = (double)x.nx;
    f->psi = (double)(x.n + x.nx);
    f->psi_all = (double)x.n + (double)x.nx * (double)(p->ep > 0 ? p->ep : 1);
    f->bucket = p->cb ? (size_t)llround(fmin(p->bucket, f->psi)) : (size_t)llround(f->psi);
    if (f->bucket < 1)
        f->bucket = 1;
    zp_units u;
    zp_status st = zp_tensors_units(m, p, pps->stage, f->bucket, 0, &u);
    if (st != ZP_OK) {
        zp_layout_facts_free(f);
        return st;
    }
    f->shard = u.shard_size; /* the same on every rank: a unit's pieces are equal (the last one padded) */
    f->max_piece = u.max_piece;
    zp_units_free(&u);
    if (x.nx > 0) {
        if ((st = zp_tensors_units_exp(m, p, pps->stage, f->bucket, 0, &u)) != ZP_OK) {
            zp_layout_facts_free(f);
            return st;
        }
        f->xshard = u.shard_size;
        f->xmax_piece = u.max_piece;
        zp_units_free(&u);
    }
    return ZP_OK;
}

/* One fp32 tensor of `n` elements (setup); none when the architecture has no such tensor (n = 0). */
static void ex_tensor(zp_builder *b, zp_buf buf, int index, zp_mem_cat cat, double n)
{
    if (n > 0)
        zp_builder_mem(b, -1, 1, buf, index, cat, 4.0 * n);
}

/* Context parallelism, all-gather form (exec/zp_exec_cp.c): this rank's K and V rows (kv elements: 2 kv_n
 * wide), the CP group's gathered (gathered again before the backward, so one working copy), their gradients;
 * the ring form: two K and V chunks (the one in hand, the one in flight) and, backward, two of their
 * gradients, never the gathered sequence. */
static void ex_cp_tensors(zp_builder *b, const zp_plan *p, double kv)
{
    if (p->cp <= 1)
        return;
    if (p->cp_comm == ZP_CP_RING) {
        static const zp_buf ring_bufs[] = {ZP_BUF_CP_KV, ZP_BUF_CP_KV_NEXT, ZP_BUF_CP_DKV, ZP_BUF_CP_DKV_NEXT};
        for (size_t k = 0; k < sizeof ring_bufs / sizeof ring_bufs[0]; k++)
            ex_tensor(b, ring_bufs[k], 0, ZP_MEM_ACTIVATIONS, kv);
        return;
    }
    ex_tensor(b, ZP_BUF_CP_KV, 0, ZP_MEM_ACTIVATIONS, kv);
    ex_tensor(b, ZP_BUF_CP_KV_ALL, 0, ZP_MEM_ACTIVATIONS, kv * (double)p->cp);
    ex_tensor(b, ZP_BUF_CP_DKV_ALL, 0, ZP_MEM_ACTIVATIONS, kv * (double)p->cp);
}

/* A block's attention scores (elements, per activation set) and the backward's working d_att: B NHl T T cp
 * (T: the rank's slice; with context parallelism its queries' scores against every slice's keys). The ring
 * form (exec/zp_exec_cp.c) keeps, per block, each query row's log-sum-exp instead of its scores (flash
 * attention's saved statistic); its working set is one (sequence, head)'s chunk of probabilities and their
 * gradients (2 T T), the running sums or the rows' D of every head (B NHl T) and one rescale per row (T). */
static void ex_att_sizes(const zp_plan *p, double B, double NHl, double T, double *att, double *datt)
{
    if (p->cp > 1 && p->cp_comm == ZP_CP_RING) {
        *att = B * NHl * T;
        *datt = 2.0 * T * T + B * NHl * T + T;
        return;
    }
    *att = *datt = B * NHl * T * T * (double)(p->cp > 1 ? p->cp : 1);
}

/* Everything the executor holds from its start: model states, communication buffers and the
 * activations of the step (allocated once and reused by every micro-batch and step; the stage-3 groups
 * alone come and go). Elements: BT = B·T tokens, this MP rank's widths (zp_tensors_shape); activations per
 * Korthikanti et al. without dropout, plus the norms' row statistics. A mixture-of-experts block keeps its
 * router's probabilities and gates, the rows it received for its local experts, their hidden and activated
 * values and the rows that came back; the executor drops no token, so the received rows are sized for the
 * worst case: every token of the EP group routed to this rank's experts, R = ep·BT·k rows. */
static void ex_setup(zp_builder *b)
{
    const zp_plan *p = b->p;
    const zp_model *m = b->m;
    zp_tensors_shape sh;
    if (zp_tensors_shape_get(m, p, &sh) != ZP_OK) /* facts built it: cannot fail here */
        return;
    const double N = (double)b->f.n, shard = (double)b->f.shard, piece = (double)b->f.max_piece;
    const double NX = (double)b->f.nx, xshard = (double)b->f.xshard, xpiece = (double)b->f.xmax_piece;
    const double dp = (double)p->dp, edp = (double)(p->dp / (p->ep > 0 ? p->ep : 1)), t = (double)p->mp;
    const double C = (double)sh.C, B = (double)p->micro_batch, T = (double)sh.T, BT = B * T;
    const double Vl = (double)sh.Vl, NHl = (double)sh.NHl;
    const double stat = sh.rms ? 0.0 : BT;
    double att, datt;
    ex_att_sizes(p, B, NHl, T, &att, &datt);
    /* model states */
    if (p->stage == 3)
        ex_tensor(b, ZP_BUF_PSHARD, 0, ZP_MEM_PARAMS, shard);
    else
        ex_tensor(b, ZP_BUF_PARAMS, 0, ZP_MEM_PARAMS, N);
    if (p->stage < 2) {
        ex_tensor(b, ZP_BUF_GRADS, 0, ZP_MEM_GRADS, N);
    } else {
        ex_tensor(b, ZP_BUF_GSHARD, 0, ZP_MEM_GRADS, shard);
        ex_tensor(b, ZP_BUF_GWORK, 0, ZP_MEM_BUFFERS, N + dp); /* + dp: the last piece's padding reads past */
    }
    const double opt_n = p->stage == 0 ? N : shard;
    if (p->offload == ZP_OFFLOAD_OPTIMIZER) {
        /* ZeRO-Offload: the partition's moments, fp32 master copy, gradient partition and fp16 copy */
        ex_tensor(b, ZP_BUF_OPT_M, 0, ZP_MEM_HOST, opt_n);
        ex_tensor(b, ZP_BUF_OPT_V, 0, ZP_MEM_HOST, opt_n);
        ex_tensor(b, ZP_BUF_H_MASTER, 0, ZP_MEM_HOST, opt_n);
        ex_tensor(b, ZP_BUF_H_GRAD, 0, ZP_MEM_HOST, opt_n);
        zp_builder_mem(b, -1, 1, ZP_BUF_H_HALF, 0, ZP_MEM_HOST, 2.0 * opt_n);
    } else {
        ex_tensor(b, ZP_BUF_OPT_M, 0, ZP_MEM_OPTIMIZER, opt_n);
        ex_tensor(b, ZP_BUF_OPT_V, 0, ZP_MEM_OPTIMIZER, opt_n);
    }
    /* the routed experts' states: the same over their own flat layout and the EDP group */
    if (NX > 0) {
        ex_tensor(b, p->stage == 3 ? ZP_BUF_XPSHARD : ZP_BUF_XPARAMS, 0, ZP_MEM_PARAMS, p->stage == 3 ? xshard : NX);
        if (p->stage < 2) {
            ex_tensor(b, ZP_BUF_XGRADS, 0, ZP_MEM_GRADS, NX);
        } else {
            ex_tensor(b, ZP_BUF_XGSHARD, 0, ZP_MEM_GRADS, xshard);
            ex_tensor(b, ZP_BUF_XGWORK, 0, ZP_MEM_BUFFERS, NX + edp);
        }
        ex_tensor(b, ZP_BUF_XOPT_M, 0, ZP_MEM_OPTIMIZER, p->stage == 0 ? NX : xshard);
        ex_tensor(b, ZP_BUF_XOPT_V, 0, ZP_MEM_OPTIMIZER, p->stage == 0 ? NX : xshard);
    }
    if (p->stage >= 1)
        ex_tensor(b, ZP_BUF_TMP, 0, ZP_MEM_BUFFERS, fmax(piece, xpiece));
    if (p->stage == 1 || p->stage == 2)
        ex_tensor(b, ZP_BUF_GBUF, 0, ZP_MEM_BUFFERS, fmax(piece * dp, xpiece * edp));
    /* one block's stored activations: every block's without checkpointing, one set with it; with pipeline
     * stages those of the stage's blocks, for each micro-batch in flight (index layer + L·slot) */
    zp_tensors_stage x;
    if (zp_tensors_stage_get(m, p, b->pps.stage, &x) != ZP_OK) /* facts built it: cannot fail here */
        x = (zp_tensors_stage){.nl = (int)m->layers, .slots = 1};
    const int Li = (int)m->layers, l1 = x.l0 + x.nl;
    const double qkv = BT * (double)sh.qkv_n, q = BT * (double)sh.q_n;
    const double R = (double)sh.ep * BT * (double)sh.k, Ek = BT * (double)sh.k; /* MoE rows received, sent */
    const int moe = sh.moe;
    static const zp_buf set_bufs[] = {ZP_BUF_LN1, ZP_BUF_LN1_MEAN, ZP_BUF_LN1_RSTD, ZP_BUF_QKV, ZP_BUF_ATT,
                                      ZP_BUF_ATTY, ZP_BUF_X1, ZP_BUF_LN2, ZP_BUF_LN2_MEAN, ZP_BUF_LN2_RSTD,
                                      ZP_BUF_FCH, ZP_BUF_FCHG, ZP_BUF_RPROB, ZP_BUF_GATE, ZP_BUF_XD, ZP_BUF_EH,
                                      ZP_BUF_EA, ZP_BUF_RB};
    const double set_n[] = {BT * C, stat, BT, qkv, att, q, BT * C, BT * C, stat, BT,
                            moe ? 0 : BT * (double)sh.up, moe ? 0 : BT * (double)sh.Fl,
                            BT * (double)sh.E, Ek, R * C, R * (double)sh.e_up, R * (double)sh.e_f, Ek * C};
    for (int k = 0; k < (p->checkpoint ? 1 : x.slots); k++)
        for (int l = p->checkpoint ? 0 : x.l0; l < (p->checkpoint ? 1 : l1); l++)
            for (size_t j = 0; j < sizeof set_n / sizeof set_n[0]; j++)
                ex_tensor(b, set_bufs[j], l + Li * k, ZP_MEM_ACTIVATIONS, set_n[j]);
    if (p->checkpoint) {
        ex_tensor(b, ZP_BUF_RESID, 0, ZP_MEM_ACTIVATIONS, BT * C);
        const int pa = p->pa && p->mp > 1;
        const double ck = pa ? (double)zp_shard_piece((size_t)(BT * C), (int)p->mp) : BT * C;
        if (p->md) /* MD: all checkpoints in one contiguous region */
            ex_tensor(b, ZP_BUF_CK_REGION, 0, ZP_MEM_CHECKPOINTS, (double)x.nl * x.slots * ck);
        else
            for (int k = 0; k < x.slots; k++)
                for (int l = x.l0; l < l1; l++)
                    ex_tensor(b, ZP_BUF_CK, l + Li * k, ZP_MEM_CHECKPOINTS, ck);
        if (pa)
            ex_tensor(b, ZP_BUF_XIN_WORK, 0, ZP_MEM_ACTIVATIONS, ck * t);
    } else {
        for (int k = 0; k < x.slots; k++)
            for (int l = x.l0; l <= l1; l++) /* block inputs and the last block's output */
                ex_tensor(b, ZP_BUF_RES, l + (Li + 1) * k, ZP_MEM_ACTIVATIONS, BT * C);
    }
    /* the head (on its stage) and the backward working tensors of one block */
    static const struct {
        zp_buf buf;
        int head; /* only on the stage with the LM head */
    } bufs[] = {{ZP_BUF_PROJ, 0},  {ZP_BUF_LNF, 1},   {ZP_BUF_LNF_MEAN, 1}, {ZP_BUF_LNF_RSTD, 1}, {ZP_BUF_LOGITS, 1},
                {ZP_BUF_XMX, 1},   {ZP_BUF_XSE, 1},   {ZP_BUF_XLT, 1},      {ZP_BUF_DRES, 0},     {ZP_BUF_DLN, 0},
                {ZP_BUF_DQKV, 0},  {ZP_BUF_DATTY, 0}, {ZP_BUF_DATT, 0},     {ZP_BUF_DFCH, 0},     {ZP_BUF_DGLU, 0},
                {ZP_BUF_MSEND, 0}, {ZP_BUF_MROWS, 0}, {ZP_BUF_DEA, 0},      {ZP_BUF_DEH, 0},      {ZP_BUF_DGATE, 0},
                {ZP_BUF_DRLOG, 0}};
    const double n[] = {BT * C, BT * C, stat, BT, BT * Vl, BT, BT, BT, BT * C, BT * C, qkv, q, datt,
                        moe ? 0 : BT * (double)sh.up, !moe && sh.gated ? BT * (double)sh.Fl : 0,
                        Ek * C, R * C, R * (double)sh.e_f, sh.gated ? R * (double)sh.e_up : 0, Ek,
                        BT * (double)sh.E};
    for (size_t k = 0; k < sizeof n / sizeof n[0]; k++)
        if (b->pps.head || !bufs[k].head)
            ex_tensor(b, bufs[k].buf, 0, ZP_MEM_ACTIVATIONS, n[k]);
    ex_cp_tensors(b, p, BT * 2.0 * (double)sh.kv_n);
}

static void ex_nothing(zp_builder *b, int l)
{
    (void)b;
    (void)l;
}

static void ex_nothing0(zp_builder *b) { (void)b; }

/* Stage 3: a group is gathered into a new buffer (+ dp elements: the last unit's padding spills past
 * it), its local experts into another (+ dp/ep: the EDP group's); gathered again (the LM head for the
 * backward), the old copy goes first. */
static void ex_group_mem(zp_builder *b, int s, int alloc, int item)
{
    const double edp = (double)(b->p->dp / (b->p->ep > 0 ? b->p->ep : 1));
    zp_builder_mem(b, s, alloc, ZP_BUF_GATHERED, item, ZP_MEM_BUFFERS, 4.0 * (b->f.gather[item] + (double)b->p->dp));
    if (b->f.gather_exp[item] > 0)
        zp_builder_mem(b, s, alloc, ZP_BUF_XGATHERED, item, ZP_MEM_BUFFERS, 4.0 * (b->f.gather_exp[item] + edp));
}

static void ex_gather(zp_builder *b, int s, int item)
{
    if (b->live[item])
        ex_group_mem(b, s, 0, item);
    b->live[item] = 1;
    ex_group_mem(b, s, 1, item);
}

/* Compute switches groups: the one it used is freed (the next one is already gathered). */
static void ex_use(zp_builder *b, int item)
{
    const int prev = b->item;
    b->item = item;
    if (prev < 0 || prev == item)
        return;
    ex_group_mem(b, ZP_STREAM_COMPUTE, 0, prev);
    b->live[prev] = 0;
}

/* ================================================================ the table */

static const zp_layout g_layouts[] = {
    [ZP_IMPL_DEEPSPEED] = {"deepspeed", 1, ds_facts, ds_setup, ds_block_begin, ds_block_end, ds_block_done, ds_logits,
                           ds_micro_end, ds_gather, ds_use},
    [ZP_IMPL_EXEC] = {"zplan-exec", 0, ex_facts, ex_setup, ex_nothing, ex_nothing, ex_nothing, ex_nothing0,
                      ex_nothing0, ex_gather, ex_use},
};

const zp_layout *zp_layout_get(zp_impl impl)
{
    return (unsigned)impl < sizeof g_layouts / sizeof g_layouts[0] ? &g_layouts[impl] : NULL;
}
