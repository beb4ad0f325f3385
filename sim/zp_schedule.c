/* zp_schedule.c — the step's structure: per micro-batch the forward (embedding, blocks, LM head), the
 * backward (each block recomputed first under checkpointing) with gradient buckets reduced as they fill,
 * stage 3's parameter gathers one group ahead, Pa/Pa+cpu, then the optimizer (on the device, or on the
 * host with ZeRO-Offload) and the stage-1/2 parameter all-gather. Memory changes go through the plan's
 * layout (zp_layout.c); the program order is zp_schedule_walk's. */
#include "zp_block.h"
#include "zp_builder.h"
#include "zp_emit.h"
#include "zp_layout.h"
#include "zp_schedule.h"

#include "zp_shape.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The passes of a stage's step: a forward and a backward of each micro-batch through each of its chunks. */
static int64_t pass_count(const zp_plan *p) { return 2 * p->grad_accum * (p->pp > 1 ? p->vstages : 1); }

/* Pass k of a stage's pass order is in the steady state: after the stage's warm-up forwards (at least
 * `least` of them) and before as many cool-down backwards. */
static int steady_pass(const zp_plan *p, int stage, int64_t k, int64_t least)
{
    int64_t w = zp_pp_warmup(p, stage);
    if (w < least)
        w = least;
    return k >= w && k < pass_count(p) - w;
}

/* Pass k of a stage's pass order has a partner in the combined 1F1B (above). */
static int ep_paired(const zp_plan *p, int stage, int64_t k)
{
    return p->ep_overlap && p->ep > 1 && steady_pass(p, stage, k, 1);
}

/* Pass k of a stage's pass order sends without waiting (zp_plan.overlap_p2p_comm). Megatron-core's
 * interleaved schedule (schedules.py, forward_backward_pipelining_with_interleaving) with overlap_p2p_comm
 * posts each steady-state pass's send and the next pass's receive asynchronously (send_forward_recv_forward
 * and send_backward_recv_backward with overlap_p2p_comm=True) and waits for that send only after posting
 * the next one, so the transfer runs beside the next pass's compute; its warm-up forwards and cool-down
 * backwards still wait for their sends (batched and waited for, as without overlap), unless
 * --overlap-p2p-communication-warmup-flush (overlap_p2p_warmup_flush) posts theirs so too: then every send
 * runs beside the next pass. The receives are the same either way: a
 * stage's mailboxes take a send at once (sim/zp_actors.c), and a pass waits for its input's arrival. The
 * NCCL send kernel's SMs (a channel or two of 132) are not counted. */
static int p2p_nowait(const zp_plan *p, int stage, int64_t k)
{
    return zp_plan_p2p_overlapped(p) && (p->overlap_p2p_warmup_flush || steady_pass(p, stage, k, 0));
}

/* Stage 3: the comm stream gathers the groups of one pass ahead of the compute stream (prefetch of
 * one group): group 0 at once, group i after compute signalled it started group i-1. Reductions
 * closed by group i land on the comm stream after the gather of group i+1, so neither waits for
 * the other. Without overlap_comm the gathers run on the compute stream, where the block needs them. */
/* Bytes a gathered parameter of `item` moves: its own type, or 1 byte where FSDP2 all-gathers the blocks'
 * weights in FP8 (torchao's enable_fsdp_float8_all_gather: each rank casts its shard, the gather moves the
 * FP8 copy; the embedding and LM head stay bf16). */
static double gather_bytes(const zp_builder *b, int item)
{
    return b->p->fp8_all_gather && item >= 1 && item <= b->m->layers ? 1.0 : b->p->param_bytes;
}

static void gather_item(zp_builder *b, int first, int item)
{
    const double params = b->f.gather[item];
    const int ov = b->p->overlap_comm, cs = ov ? ZP_STREAM_COMM : ZP_STREAM_COMPUTE;
    if (!first && ov)
        zp_emit_wait(b, ZP_STREAM_COMM, ZP_CH_GATHER_GO);
    const double experts = b->f.gather_exp[item], edp = (double)(b->p->dp / b->p->ep);
    if (b->p->offload == ZP_OFFLOAD_PARAMS) { /* the local fp16 partition comes from the host first */
        const double local = b->p->param_bytes * (params / (double)zp_plan_shard_degree(b->p) + experts / edp);
        if (b->p->nvme & ZP_NVME_PARAMS) /* ... and to the host from the drives */
            zp_emit_move(b, cs, ZP_OPK_NVME_READ, local);
        zp_emit_move(b, cs, ZP_OPK_PARAM_FETCH, local);
    }
    b->lay->gather(b, cs, item);
    zp_emit_move(b, cs, ZP_OPK_PARAM_GATHER, gather_bytes(b, item) * params);
    if (!zp_emit_skipped(b))
        b->s[cs].v[b->s[cs].n - 1].item = item;
    if (experts > 0) { /* EP: the local experts' parameters from the ranks holding the same experts */
        zp_emit_move(b, cs, ZP_OPK_PARAM_GATHER_EXP, gather_bytes(b, item) * experts);
        if (!zp_emit_skipped(b))
            b->s[cs].v[b->s[cs].n - 1].item = item;
    }
    if (ov)
        zp_emit_signal(b, ZP_STREAM_COMM, ZP_CH_GATHERED);
}

/* Compute starts using group `item`: waits for its gather, lets the next one start, switches to it. */
static void use_gathered(zp_builder *b, int last)
{
    if (b->p->overlap_comm) {
        zp_emit_wait(b, ZP_STREAM_COMPUTE, ZP_CH_GATHERED);
        if (!last)
            zp_emit_signal(b, ZP_STREAM_COMPUTE, ZP_CH_GATHER_GO);
    }
}

typedef struct {
    double bucket;  /* parameters per bucket */
    double filled;  /* parameters in the open bucket */
    int closed;     /* buckets closed this micro-batch */
    int reduce;     /* reduce this micro-batch's buckets */
    int last_micro;
    int experts;    /* the routed experts' gradients with EP > 1: reduced over the EDP group */
} buckets;

/* Hybrid sharding: a bucket reduce-scattered over the shard group (G ranks) leaves each rank a shard of
 * 1/G of it, summed over its group only; the dp / G replicas of that shard all-reduce it (FSDP2 HSDP's
 * all-reduce over the replicate dimension after the reduce-scatter; MiCS's second hop). On the stream of
 * the reduce-scatter, right after it. */
static void replicas_allreduce(zp_builder *b, int type, double bytes)
{
    const int64_t g = zp_plan_shard_degree(b->p);
    if (g >= b->p->dp || type != ZP_OPK_GRAD_REDUCE_SCATTER)
        return;
    const int s = b->p->overlap_comm || b->pps.stages > 1 ? ZP_STREAM_COMM : ZP_STREAM_COMPUTE;
    zp_emit_move(b, s, ZP_OPK_GRAD_ALLREDUCE_REPLICA, bytes / (double)g);
}

/* Adds `params` gradients to the open bucket; closes (signals) full buckets. */
static void bucket_add(zp_builder *b, buckets *k, double params, int flush)
{
    k->filled += params;
    while (k->filled >= k->bucket || (flush && k->filled > 0)) {
        double n = fmin(k->filled, k->bucket);
        k->filled -= n;
        if (k->reduce) {
            const int rs = b->p->stage >= 2;
            const int type = k->experts ? (rs ? ZP_OPK_GRAD_REDUCE_SCATTER_EXP : ZP_OPK_GRAD_ALLREDUCE_EXP)
                                        : (rs ? ZP_OPK_GRAD_REDUCE_SCATTER : ZP_OPK_GRAD_ALLREDUCE);
            const double group = (double)(k->experts ? b->p->dp / b->p->ep : b->p->dp);
            const double bytes = zp_plan_grad_bytes(b->p) * n; /* fp32 gradients reduce in fp32 */
            if (!b->p->overlap_comm && b->pps.stages > 1) {
                /* overlap_comm off with pipeline stages: the reductions start after the pipeline flush, as
                 * DeepSpeed's pipeline engine runs them (ReduceGrads after the last backward) and Megatron-LM
                 * did before --overlap-grad-reduce (allreduce_gradients after forward_backward_func); a
                 * reduction in the middle of the cooldown would hold up the stages waiting for this one's
                 * gradients. passes_end releases them and the compute stream waits for all. */
                b->flush_pending++;
                zp_emit_wait(b, ZP_STREAM_COMM, ZP_CH_BUCKET);
                zp_emit_move(b, ZP_STREAM_COMM, type, bytes);
            } else if (!b->p->overlap_comm) {
                /* overlap_comm off: the reduction blocks the compute stream */
                zp_emit_move(b, ZP_STREAM_COMPUTE, type, bytes);
                zp_emit_signal(b, ZP_STREAM_COMPUTE, ZP_CH_BUCKET);
                zp_emit_wait(b, ZP_STREAM_COMM, ZP_CH_BUCKET);
            } else {
                zp_emit_signal(b, ZP_STREAM_COMPUTE, ZP_CH_BUCKET);
                zp_emit_wait(b, ZP_STREAM_COMM, ZP_CH_BUCKET); /* the comm stream's reduction of this bucket */
                zp_emit_move(b, ZP_STREAM_COMM, type, bytes);
            }
            replicas_allreduce(b, type, bytes);
            zp_emit_signal(b, ZP_STREAM_COMM, ZP_CH_REDUCED);
            if (k->last_micro && b->p->offload != ZP_OFFLOAD_NONE) {
                /* ZeRO-Offload: the reduced partition of the bucket goes to the host as soon as it is ready */
                zp_emit_signal(b, ZP_STREAM_COMM, ZP_CH_BUCKET_D2H);
                zp_emit_wait(b, ZP_STREAM_PCIE, ZP_CH_BUCKET_D2H);
                zp_emit_move(b, ZP_STREAM_PCIE, ZP_OPK_GRAD_D2H, bytes / group);
                zp_emit_signal(b, ZP_STREAM_PCIE, ZP_CH_GRAD_HOST);
            }
            k->closed++;
        }
        if (k->filled <= 0)
            break;
    }
}

/* A micro-batch's gradients of `params` parameters added into the accumulated ones by an add kernel, where
 * the framework does that (zp_plan.grad_accum_fusion off; DeepSpeed's memory layout, not the executor's,
 * which fuses it): with ZeRO stage 0-1 (stage 2-3 reduce every micro-batch's gradients instead, but beside
 * pipeline stages accumulate them whole as stage 0-1 do: zp_plan_grads_once), each
 * micro-batch after the first adds its 16-bit gradients into .grad (read, read, write: 3 x 2 bytes a
 * parameter), and fp32 gradients beside 16-bit parameters take every micro-batch's add (DeepSpeed's bf16
 * and Megatron-LM's main_grad hooks: 2 read, 4 read, 4 written). */
static void grad_accumulate(zp_builder *b, int64_t u, double params)
{
    const zp_plan *p = b->p;
    if (p->grad_accum_fusion || p->impl != ZP_IMPL_DEEPSPEED || (p->stage >= 2 && !zp_plan_grads_once(p)) ||
        !(params > 0))
        return;
    const double g = zp_plan_grad_bytes(p), w = p->param_bytes;
    const int fp32_acc = g > w;
    if (u == 0 && !fp32_acc)
        return;
    zp_emit_eltwise(b, ZP_OPK_GRAD_ACCUM, params * (w + 2.0 * g), params);
}

/* Pa+cpu: fetch the checkpoint partition of the block below over PCIe once compute asks for it. */
static void ckpt_fetch(zp_builder *b, double bytes)
{
    zp_emit_signal(b, ZP_STREAM_COMPUTE, ZP_CH_CKPT_IN_GO);
    zp_emit_wait(b, ZP_STREAM_PCIE, ZP_CH_CKPT_IN_GO);
    zp_emit_move(b, ZP_STREAM_PCIE, ZP_OPK_CKPT_H2D, bytes);
    zp_emit_signal(b, ZP_STREAM_PCIE, ZP_CH_CKPT_IN);
}

/* Whether a block's own ops are built: not in a collapsed memory-only schedule, which holds the layout's
 * alloc and free ops alone (a kernel, a collective or a copy is left out of any memory-only schedule: skip;
 * a channel op out of a collapsed one: channel_op), so its blocks' forward, recompute and backward would
 * shape ops only to leave every one out (their other state, the FLOPs and a TP all-gather held for its
 * GEMM, is read by nothing a memory-only schedule keeps). */
static int kernels_built(const zp_builder *b)
{
    return !b->collapse;
}

/* The items of the current pass's chunk: 0 (the embedding) when it has it, its blocks 1 + l, L + 1 (the
 * head) when it has it; the whole model without pipeline stages. */
typedef struct {
    int lo, hi;   /* first and last item */
    int fb, lb;   /* first and last block item (fb > lb: no block) */
    int nblocks;
} chunk_items;

static chunk_items items_of(const zp_builder *b, int chunk)
{
    const zp_pp_stage *st = &b->pps;
    const int L = (int)b->m->layers, emb = st->embedding && chunk == 0, head = st->head && chunk == st->chunks - 1;
    chunk_items c = {.fb = st->first[chunk] + 1, .lb = st->first[chunk] + st->layers[chunk],
                     .nblocks = st->layers[chunk]};
    c.lo = emb ? 0 : c.fb;
    c.hi = head ? L + 1 : c.lb;
    return c;
}

/* The next item of a pass going up (dir 1) or down (-1); a collapsed memory-only schedule builds one block
 * standing for all of the chunk's. */
static int next_item(const zp_builder *b, const chunk_items *c, int item, int dir)
{
    if (b->collapse && dir > 0 && item == c->fb && c->nblocks > 0) /* (a head-only chunk's fb is the head) */
        return c->lb + 1;
    if (b->collapse && dir < 0 && item > c->fb && c->nblocks > 0)
        return c->fb;
    return item + dir;
}

static void set_item(zp_builder *b, const chunk_items *c, int item)
{
    const int L = (int)b->m->layers;
    b->layer = (item >= 1 && item <= L) ? item - 1 : -1;
    b->repeat = b->collapse && b->layer >= 0 ? (double)c->nblocks : 1.0;
}

/* ---- the distributed optimizer's parameter all-gather beside the next forward (overlap_param_gather) ----
 * Megatron-core's --overlap-param-gather: the all-gather of the parameters the optimizer updated is not waited
 * for after the step but launched bucket by bucket as the next step's first forward reaches the layers of each
 * (forward pre-hooks). In the steady-state step the schedule builds, the comm stream gathers the previous
 * step's update first thing, bucket after bucket (the routed experts' first), and the first micro-batch's
 * forward waits, before each item, for the buckets that hold its parameters. */
static void param_gather_start(zp_builder *b, double bucket)
{
    const zp_plan *p = b->p;
    if (!p->overlap_param_gather || (p->stage != 1 && p->stage != 2))
        return;
    b->phase = ZP_PHASE_FORWARD;
    b->pg_bucket = bucket;
    for (double left = b->f.psi_exp; left > 0; left -= bucket, b->pg_left++) {
        zp_emit_move(b, ZP_STREAM_COMM, ZP_OPK_PARAM_ALLGATHER_EXP, p->param_bytes * fmin(left, bucket));
        zp_emit_signal(b, ZP_STREAM_COMM, ZP_CH_PARAMS_GATHERED);
    }
    const int experts = b->pg_left;
    for (double left = b->f.psi - b->f.psi_exp; left > 0; left -= bucket, b->pg_left++) {
        zp_emit_move(b, ZP_STREAM_COMM, ZP_OPK_PARAM_ALLGATHER, p->param_bytes * fmin(left, bucket));
        zp_emit_signal(b, ZP_STREAM_COMM, ZP_CH_PARAMS_GATHERED);
    }
    for (int i = 0; i < experts; i++, b->pg_left--) /* the experts' buckets before the first item */
        zp_emit_wait(b, ZP_STREAM_COMPUTE, ZP_CH_PARAMS_GATHERED);
}

/* Before the first forward's item (its parameters `params`; -1: every bucket left): the buckets up to it. */
static void param_gather_wait(zp_builder *b, double params)
{
    b->pg_asked += params;
    for (; b->pg_left > 0 && (params < 0 || b->pg_ready < b->pg_asked); b->pg_left--) {
        zp_emit_wait(b, ZP_STREAM_COMPUTE, ZP_CH_PARAMS_GATHERED);
        b->pg_ready += b->pg_bucket;
    }
}

/* ---- pipeline point-to-point ---- */

/* A micro-batch's activation (or its gradient) between pipeline stages: T x h per rank; Megatron-LM's
 * scatter/gather (Narayanan et al. §4.1) sends 1/t of it from each MP rank over its own NIC and all-gathers
 * it over NVLink on arrival; with sequence parallelism the tensor is the rank's shard already. */
static double pp_bytes(const zp_builder *b)
{
    const double T = (double)b->p->micro_batch * (double)b->m->seq;
    return b->p->param_bytes * T * (double)b->m->hidden / (double)b->p->mp;
}

static void pp_p2p(zp_builder *b, int type, int peer)
{
    if (zp_emit_skipped(b))
        return;
    zp_op *o = zp_builder_push(b, ZP_STREAM_COMPUTE, type);
    o->bytes = pp_bytes(b);
    o->item = peer;
    o->nowait = b->p2p_async && zp_op_table[type].p2p == ZP_P2P_SEND;
    if (zp_op_table[type].p2p == ZP_P2P_RECV && !b->p->sp && b->p->mp > 1)
        zp_emit_move(b, ZP_STREAM_COMPUTE, ZP_OPK_PP_ALLGATHER, pp_bytes(b) * (double)b->p->mp);
}

/* The virtual stage of a chunk of this stage is the first (it gets tokens, not activations) or the last
 * (it gets the loss, not a gradient). */
static int first_virtual(const zp_builder *b, int chunk) { return b->pps.stage == 0 && chunk == 0; }
static int last_virtual(const zp_builder *b, int chunk)
{
    return b->pps.stage == b->pps.stages - 1 && chunk == b->pps.chunks - 1;
}
static int prev_stage(const zp_builder *b) { return (b->pps.stage + b->pps.stages - 1) % b->pps.stages; }
static int next_stage(const zp_builder *b) { return (b->pps.stage + 1) % b->pps.stages; }

/* Before block l's backward: under full recompute its forward again (Pa+cpu's checkpoint back first, Pa's
 * all-gather; with ckpt_every only in the blocks checkpointed), under selective recompute its modules
 * again, under op-level recompute half its GEMMs and its elementwise ops; nothing without recompute. */
static void recompute(zp_builder *b, int item, const chunk_items *c, int pacpu, double ckpt_part)
{
    const zp_plan *p = b->p;
    const double T = (double)p->micro_batch * (double)b->m->seq;
    if (p->checkpoint && zp_plan_block_checkpointed(p, b->layer)) {
        b->phase = ZP_PHASE_RECOMPUTE;
        if (pacpu) {
            zp_emit_wait(b, ZP_STREAM_COMPUTE, ZP_CH_CKPT_IN);
            if (item > c->fb) /* prefetch the checkpoint of the block below */
                ckpt_fetch(b, ckpt_part);
        }
        if ((p->pa || p->pa_cpu) && p->mp > 1)
            zp_emit_move(b, ZP_STREAM_COMPUTE, ZP_OPK_PA_ALLGATHER, 2.0 * T * (double)b->m->hidden);
        zp_block_forward(b);
        b->phase = ZP_PHASE_BACKWARD;
    } else if (p->selective) {
        b->phase = ZP_PHASE_RECOMPUTE;
        zp_block_recompute_modules(b);
        b->phase = ZP_PHASE_BACKWARD;
    } else if (p->op_sac) {
        b->phase = ZP_PHASE_RECOMPUTE;
        zp_block_recompute_op(b);
        b->phase = ZP_PHASE_BACKWARD;
    }
}

/* ---- multi-token prediction (zp_model.mtp_layers; Megatron-core's multi_token_prediction.py) ----
 * On the last stage, after the main head: per depth k the next tokens' embedding (a lookup of the word
 * embedding's copy there) and the hidden states, each RMS-normed, concatenated and projected from 2h back to h
 * (eh_proj, column-parallel: its output gathered over TP), a block of the model's (block L + k: DeepSeek-V3's
 * an MoE block), the final norm, the shared LM head and its cross-entropy; backward in reverse, the block and
 * the projection recomputed as the other blocks are (models/zp_model.c counts them so). The modules' weights
 * are in the head's group (sim/zp_layout.c ds_mtp): held, reduced over DP and updated with it; their
 * activations are held with the head's logits (ds_logits_bytes). */
static void mtp_forward(zp_builder *b, double T)
{
    const zp_model *m = b->m;
    const double h = (double)m->hidden;
    for (int64_t k = 0; k < m->mtp_layers; k++) {
        b->layer = (int)(m->layers + k);
        zp_emit_eltwise(b, ZP_OPK_EMBEDDING, 2.0 * 2.0 * T * h, T * h);
        zp_emit_mp_reduce(b, 2.0 * T * h);
        zp_emit_eltwise(b, ZP_OPK_MTP_NORMS, 2.0 * 2.0 * 2.0 * T * h, 2.0 * T * h);
        zp_block_mtp_proj(b, T);
        zp_block_forward(b);
        zp_block_lm_head(b, T, 0, 1, 0);
    }
    b->layer = -1;
}

static void mtp_backward(zp_builder *b, double T)
{
    const zp_model *m = b->m;
    const double t = (double)b->p->mp, h = (double)m->hidden;
    const chunk_items none = {0};
    for (int64_t k = m->mtp_layers - 1; k >= 0; k--) {
        b->layer = (int)(m->layers + k);
        zp_block_lm_head(b, T, 1, 1, 0);
        if (b->p->checkpoint && zp_plan_block_checkpointed(b->p, b->layer)) { /* the projection with its block */
            b->phase = ZP_PHASE_RECOMPUTE;
            zp_block_mtp_proj(b, T);
            b->phase = ZP_PHASE_BACKWARD;
        }
        recompute(b, (int)m->layers + 1, &none, 0, 0.0);
        zp_block_backward(b);
        zp_emit_gemm_bwd(b, ZP_OPK_MTP_PROJ_DGRAD, ZP_OPK_MTP_PROJ_WGRAD, T, h / t, 2.0 * h, 1);
        zp_emit_mp_reduce(b, 2.0 * 2.0 * T * h);
        zp_emit_eltwise(b, ZP_OPK_MTP_NORMS_BWD, 3.0 * 2.0 * 2.0 * T * h, 2.0 * T * h);
        zp_emit_eltwise(b, ZP_OPK_EMBEDDING_BWD, 2.0 * 2.0 * T * h, T * h);
    }
    b->layer = -1;
}

/* The forward pass of micro-batch u through chunk `chunk` of this stage: the activation from the stage
 * before (or the embedding), the chunk's blocks, then the activation to the next stage (or the head). */
static void forward_pass(zp_builder *b, int64_t u, int chunk)
{
    const zp_plan *p = b->p;
    const zp_model *m = b->m;
    const int L = (int)m->layers;
    const double t = (double)p->mp, bs = (double)p->micro_batch, s = (double)m->seq, h = (double)m->hidden;
    const double T = bs * s;
    /* stage 3 gathers each group before its forward, unless it kept them gathered from the step's first
     * micro-batch: with pipeline stages and reshard_after_forward False (torch.distributed.pipelining leaves
     * every backward but the last unresharded: set_reshard_after_backward(False)) */
    const int stage3 = p->stage == 3 && (zp_plan_reshards(p) || p->pp <= 1 || u == 0);
    const int pacpu = p->checkpoint && p->pa_cpu;
    const double ckpt_part = 2.0 * T * h / t; /* a checkpoint's bytes per MP rank with Pa */
    const chunk_items c = items_of(b, chunk);
    b->micro = zp_emit_micro(u);
    b->phase = ZP_PHASE_FORWARD;
    b->layer = -1;
    b->pass_head = c.hi == L + 1;
    if (!first_virtual(b, chunk)) {
        b->layer = c.fb - 1;
        pp_p2p(b, ZP_OPK_PP_RECV_ACT, prev_stage(b));
    }

    /* ---- items 0 (embedding), 1..L (blocks), L+1 (LM head) ---- */
    if (stage3)
        gather_item(b, 1, c.lo);
    for (int item = c.lo; item <= c.hi; item = next_item(b, &c, item, 1)) {
        set_item(b, &c, item);
        if (u == 0)
            param_gather_wait(b, b->f.grad[item]);
        if (stage3) {
            use_gathered(b, item == c.hi);
            if (item < c.hi) /* prefetch the next group while this one computes */
                gather_item(b, 0, next_item(b, &c, item, 1));
            b->lay->use(b, item);
        }
        if (item == 0) {
            zp_emit_eltwise(b, ZP_OPK_EMBEDDING, 2.0 * 2.0 * T * h, T * h);
            zp_emit_mp_reduce(b, 2.0 * T * h); /* vocab-parallel embedding: partial sums reduced */
        } else if (item <= L) {
            b->lay->block_begin(b, item - 1);
            if (kernels_built(b))
                zp_block_forward(b);
            b->lay->block_end(b, item - 1);
            if (pacpu) {
                zp_emit_signal(b, ZP_STREAM_COMPUTE, ZP_CH_CKPT_OUT);
                zp_emit_wait(b, ZP_STREAM_PCIE, ZP_CH_CKPT_OUT);
                zp_emit_move(b, ZP_STREAM_PCIE, ZP_OPK_CKPT_D2H, ckpt_part);
            }
        } else {
            zp_block_lm_head(b, T, 0, !m->no_final_norm, 1);
            if (kernels_built(b))
                mtp_forward(b, T);
        }
    }
    zp_block_ep_drain(b); /* the pass's output is whole: its all-to-alls are done */
    if (!last_virtual(b, chunk)) {
        b->layer = c.lb - 1;
        b->repeat = 1.0;
        pp_p2p(b, ZP_OPK_PP_SEND_ACT, next_stage(b));
    }
}

/* The backward pass of micro-batch u through chunk `chunk`: the gradient from the stage after (or the
 * loss), the LM head, the blocks from the top (each recomputed first), the embedding, the gradient to the
 * stage before. Prefetches (stage-3 gathers, Pa+cpu checkpoint fetches) of the next group are queued
 * before the reductions of the current one, so a reduction never delays the next group's data. Gradient
 * buckets are reduced as they fill in the passes that `reduce` (stage 2-3: every micro-batch, but beside
 * pipeline stages the last as torch.distributed.pipelining runs FSDP2; else the chunk's last). */
static void backward_pass(zp_builder *b, int64_t u, int chunk, double bucket_params)
{
    const zp_plan *p = b->p;
    const zp_model *m = b->m;
    const int L = (int)m->layers;
    const double t = (double)p->mp, bs = (double)p->micro_batch, s = (double)m->seq, h = (double)m->hidden;
    const double T = bs * s;
    /* stage 3 gathers again for the backward what it freed after the forward (reshard_after_forward) */
    const int stage3 = zp_plan_reshards(p), pacpu = p->checkpoint && p->pa_cpu;
    const double ckpt_part = 2.0 * T * h / t;
    const chunk_items c = items_of(b, chunk);
    const int last_micro = u == p->grad_accum - 1;
    b->micro = zp_emit_micro(u);
    b->phase = ZP_PHASE_BACKWARD;
    b->pass_head = c.hi == L + 1;
    buckets k = {.bucket = bucket_params, .reduce = (p->stage >= 2 && !zp_plan_grads_once(p)) || last_micro,
                 .last_micro = last_micro};
    buckets kx = k; /* the experts' own buckets (EP > 1) */
    kx.experts = 1;
    b->layer = -1;
    b->repeat = 1.0;
    if (!last_virtual(b, chunk)) {
        b->layer = c.lb - 1;
        pp_p2p(b, ZP_OPK_PP_RECV_GRAD, next_stage(b));
        b->layer = -1;
    }
    if (stage3)
        gather_item(b, 1, c.hi);
    if (pacpu && c.nblocks > 0) {
        b->layer = c.lb - 1;
        ckpt_fetch(b, ckpt_part); /* the top block's checkpoint */
    }
    const int bottom = c.lo == 0 ? 1 : c.lo; /* the embedding's backward comes after the loop */
    const int top = b->collapse && c.hi == c.lb && c.nblocks > 0 ? c.fb : c.hi; /* collapsed: one block */
    for (int item = top; item >= bottom; item = next_item(b, &c, item, -1)) {
        set_item(b, &c, item);
        b->phase = ZP_PHASE_BACKWARD;
        if (stage3) {
            use_gathered(b, item == bottom);
            if (item > bottom)
                gather_item(b, 0, next_item(b, &c, item, -1));
            b->lay->use(b, item);
        }
        if (item == L + 1) {
            if (kernels_built(b))
                mtp_backward(b, T);
            zp_block_lm_head(b, T, 1, !m->no_final_norm, 1);
            /* tied: the embedding's gradient completes with the embedding backward (one stage), or is the
             * last stage's own copy (pipeline stages); an untied head's is done */
            if (b->f.grad[L + 1] > 0) {
                grad_accumulate(b, u, b->f.grad[L + 1] + b->f.grad_exp[L + 1]);
                bucket_add(b, &k, b->f.grad[L + 1], 0);
            }
            if (b->f.grad_exp[L + 1] > 0) /* the MTP blocks' routed experts (ds_mtp, sim/zp_layout.c) */
                bucket_add(b, &kx, b->f.grad_exp[L + 1], 0);
            continue;
        }
        if (kernels_built(b)) {
            recompute(b, item, &c, pacpu, ckpt_part);
            zp_block_backward(b);
        }
        b->lay->block_done(b, item - 1);
        grad_accumulate(b, u, b->f.grad[item] + b->f.grad_exp[item]);
        bucket_add(b, &k, b->f.grad[item], 0);
        if (b->f.grad_exp[item] > 0)
            bucket_add(b, &kx, b->f.grad_exp[item], 0);
    }
    /* embedding backward: scatter-add into the tied embedding's gradient (stage 3 gathers nothing for
     * it: a scatter-add needs no weights), then the last bucket */
    b->layer = -1;
    b->repeat = 1.0;
    if (c.lo == 0) {
        if (stage3)
            b->lay->use(b, -1);
        zp_emit_mp_gather(b, 2.0 * T * h); /* the embedding's output gradient, whole on every rank */
        zp_emit_eltwise(b, ZP_OPK_EMBEDDING_BWD, 2.0 * 2.0 * T * h, T * h);
        grad_accumulate(b, u, b->f.grad[0]);
        bucket_add(b, &k, b->f.grad[0], 1);
    } else {
        bucket_add(b, &k, 0.0, 1);
    }
    bucket_add(b, &kx, 0.0, 1);
    zp_block_ep_drain(b);
    b->lay->micro_end(b);
    if (last_micro)
        b->last_buckets += k.closed + kx.closed;
    if (k.reduce)
        b->reduced_pending += k.closed + kx.closed;
    if (p->stage >= 2) /* the compute stream waits for this pass's reductions */
        for (; b->reduced_pending > 0; b->reduced_pending--)
            zp_emit_wait(b, ZP_STREAM_COMPUTE, ZP_CH_REDUCED);
    if (!first_virtual(b, chunk)) {
        b->layer = c.fb - 1;
        pp_p2p(b, ZP_OPK_PP_SEND_GRAD, prev_stage(b));
    }
}

/* The end of the step's passes: the reductions held for the pipeline flush released, those not waited for
 * yet waited for, and with pipeline stages the tied embedding's gradient all-reduced between the first and
 * the last stage (Megatron-LM). */
static void passes_end(zp_builder *b)
{
    zp_block_ep_drain(b);
    zp_emit_tp_flush(b);
    param_gather_wait(b, -1.0);
    b->layer = -1;
    b->micro = zp_emit_micro(b->p->grad_accum - 1);
    b->phase = ZP_PHASE_BACKWARD;
    for (; b->flush_pending > 0; b->flush_pending--) /* the pipeline is flushed: the reductions go */
        zp_emit_signal(b, ZP_STREAM_COMPUTE, ZP_CH_BUCKET);
    for (; b->reduced_pending > 0; b->reduced_pending--)
        zp_emit_wait(b, ZP_STREAM_COMPUTE, ZP_CH_REDUCED);
    const zp_pp_stage *st = &b->pps;
    if (st->stages > 1 && (st->embedding || st->head) && !b->m->untied && !zp_emit_skipped(b)) {
        zp_op *o = zp_builder_push(b, ZP_STREAM_COMPUTE, ZP_OPK_EMBED_GRAD_ALLREDUCE);
        const double E = (double)(b->m->embed_dim > 0 ? b->m->embed_dim : b->m->hidden);
        o->bytes = b->p->param_bytes * (double)b->m->vocab * E / (double)b->p->mp;
        o->item = st->embedding ? st->stages - 1 : 0;
    }
}

/* The fp16 loss scaler of Megatron-LM 2019 / DeepSpeed 2020 (zp_plan.serial_scaler) before the update: the
 * overflow check and the gradient norm tensor by tensor (SCALER_CHECK), each all-reducing its flag or its sum
 * over DP (stages 1-2: DeepSpeed's partitions) and MP. The tensors: Megatron-LM 2019's GPT-2 block holds 12
 * (two LayerNorms' gain and bias, the QKV, projection, h->4h and 4h->h weights and biases), the embedding
 * group 4 (word and position embeddings, the final LayerNorm's two). Stage 0 (Megatron-LM's FP16_Optimizer)
 * and stage 1 (zero_optimizer_stage1.py: CheckOverflow over every fp16 group, get_grad_norm per parameter)
 * walk every tensor of the MP rank; stage 2 (deepspeed_zero_optimizer.py: averaged_gradients) the tensors of
 * its partition. Bytes per element: the check reads the fp16 gradient, writes and reads its fp32 copy (10);
 * the norm: stage 2's .double().norm() 2 + 8 + 8, stage 1's .float().norm() 2 + 4 + 4, stage 0's over the
 * fp32 master gradients 4. */
static void scaler_check(zp_builder *b)
{
    const zp_plan *plan = b->p;
    if (!plan->serial_scaler || zp_emit_skipped(b))
        return;
    double blocks = 0.0;
    for (int64_t l = 1; l <= b->m->layers; l++)
        blocks += b->f.grad[l] > 0 ? 1.0 : 0.0;
    const double tensors = 12.0 * blocks + 4.0;
    const double shard = plan->stage >= 2 ? (double)zp_plan_shard_degree(plan) : 1.0;
    const double norm_bytes = plan->stage >= 2 ? 18.0 : plan->stage == 1 ? 10.0 : 4.0;
    zp_op *o = zp_builder_push(b, ZP_STREAM_COMPUTE, ZP_OPK_SCALER_CHECK);
    o->elems = fmax(1.0, ceil(tensors / shard));
    o->bytes = (10.0 + norm_bytes) * b->f.psi / shard;
    for (int pass = 0; pass < 2; pass++) { /* the overflow flag, then the norm */
        if (plan->stage >= 1 && plan->dp > 1)
            zp_emit_move(b, ZP_STREAM_COMPUTE, ZP_OPK_GRAD_ALLREDUCE, 4.0);
        if (plan->mp > 1)
            zp_emit_move(b, ZP_STREAM_COMPUTE, ZP_OPK_MP_ALLREDUCE, 4.0);
    }
}

/* The optimizer on the local partition, and the stage-1/2 all-gather of the updated parameters. */
static void optimizer(zp_builder *b, double bucket, int nb)
{
    const zp_plan *plan = b->p;
    b->phase = ZP_PHASE_OPTIMIZER;
    b->layer = -1;
    b->micro = zp_emit_micro(plan->grad_accum - 1);
    const double psi = b->f.psi, part = plan->stage >= 1 ? b->f.psi_all / (double)zp_plan_shard_degree(plan) : psi;
    /* the all-gather of the updated parameters after the step; with overlap_param_gather the next step's
     * (param_gather_start) */
    const int stage12 = (plan->stage == 1 || plan->stage == 2) && !plan->overlap_param_gather;
    if (plan->offload == ZP_OFFLOAD_NONE) {
        scaler_check(b);
        if (!zp_emit_skipped(b)) { /* part parameters; k: state bytes each saves where the moments are narrower */
            zp_op *o = zp_builder_push(b, ZP_STREAM_COMPUTE, ZP_OPK_ADAM);
            o->bytes = part;
            o->k = zp_plan_moments_saved(plan);
        }
        if (stage12)
            zp_emit_signal(b, ZP_STREAM_COMPUTE, ZP_CH_UPDATED);
    } else {
        for (int i = 0; i < nb; i++)
            zp_emit_wait(b, ZP_STREAM_CPU, ZP_CH_GRAD_HOST);
        const int nvme = plan->nvme & ZP_NVME_OPTIMIZER;
        if (nvme) /* ZeRO-Infinity: fp32 master, m, v and gradients in from the drives */
            zp_emit_move(b, ZP_STREAM_CPU, ZP_OPK_NVME_READ, (plan->k_optimizer + 4.0) * part);
        if (!zp_emit_skipped(b))
            zp_builder_push(b, ZP_STREAM_CPU, ZP_OPK_CPU_ADAM)->bytes = part;
        if (nvme) /* ... and the updated states back */
            zp_emit_move(b, ZP_STREAM_CPU, ZP_OPK_NVME_WRITE, plan->k_optimizer * part);
        if (plan->nvme & ZP_NVME_PARAMS) /* the updated 16-bit parameters to the drives */
            zp_emit_move(b, ZP_STREAM_CPU, ZP_OPK_NVME_WRITE, 2.0 * part);
        zp_emit_signal(b, ZP_STREAM_CPU, ZP_CH_OPT_DONE);
        zp_emit_wait(b, ZP_STREAM_PCIE, ZP_CH_OPT_DONE);
        /* the CPU Adam writes a 16-bit copy of the updated partition and that is what goes up, whatever
         * the device computes in (the executor's fp32 expands it on the device) */
        if (plan->offload == ZP_OFFLOAD_OPTIMIZER)
            zp_emit_move(b, ZP_STREAM_PCIE, ZP_OPK_PARAM_H2D, 2.0 * part);
        zp_emit_signal(b, ZP_STREAM_PCIE, ZP_CH_PARAMS_BACK);
        zp_emit_wait(b, ZP_STREAM_COMPUTE, ZP_CH_PARAMS_BACK);
        if (stage12)
            zp_emit_signal(b, ZP_STREAM_COMPUTE, ZP_CH_UPDATED);
    }
    if (stage12) {
        /* every rank updated its partition: all-gather the fp16 parameters, bucket by bucket */
        zp_emit_wait(b, ZP_STREAM_COMM, ZP_CH_UPDATED);
        const double experts = b->f.psi_exp; /* EP: the local experts' parameters, over the EDP group */
        for (double left = psi - experts; left > 0; left -= bucket)
            zp_emit_move(b, ZP_STREAM_COMM, ZP_OPK_PARAM_ALLGATHER, plan->param_bytes * fmin(left, bucket));
        for (double left = experts; left > 0; left -= bucket)
            zp_emit_move(b, ZP_STREAM_COMM, ZP_OPK_PARAM_ALLGATHER_EXP, plan->param_bytes * fmin(left, bucket));
    }
}

static void builder_free(zp_builder *b)
{
    for (int i = 0; i < ZP_NSTREAMS; i++)
        free(b->s[i].v);
    free(b->setup.v);
    free(b->live);
    zp_layout_facts_free(&b->f);
}

/* Program-order ids, by walking the schedule once. */
static zp_status number(void *ctx, const zp_op *op)
{
    int *next = ctx;
    ((zp_op *)op)->id = (*next)++;
    return ZP_OK;
}

/* The passes a schedule builds, as ranges of the stage's pass order (zp_pp_pass_at). A memory-only
 * schedule leaves out the steady-state pass pairs that repeat the memory of the ones kept: the state after
 * every P·v pairs (each chunk P times forward and backward) is the same, so the warm-up, the first and the
 * last P·v pairs and the cool-down hold every peak (without pipeline stages: the first and the last
 * micro-batch). GPipe keeps its passes (every forward is in flight at once). Returns the number of
 * ranges (at most 3) in r[][2] = {first, end}. */
static int pass_ranges(const zp_plan *plan, int stage, int memory_only, int64_t r[3][2])
{
    const int64_t v = plan->pp > 1 ? plan->vstages : 1, total = pass_count(plan);
    const int64_t w = zp_pp_warmup(plan, stage), steady = total / 2 - w, period = (plan->pp > 1 ? plan->pp : 1) * v;
    if (!memory_only || (plan->pp > 1 && plan->schedule == ZP_PP_GPIPE) || steady <= 2 * period) {
        r[0][0] = 0;
        r[0][1] = total;
        return 1;
    }
    r[0][0] = 0;
    r[0][1] = w + 2 * period;
    r[1][0] = w + 2 * (steady - period);
    r[1][1] = total;
    return 2;
}

/* What build() makes: the step, its memory-only form, or a sample of one micro-batch's passes. */
enum { BUILD_STEP, BUILD_MEMORY, BUILD_SAMPLE };

static zp_status build(const zp_model *model, const zp_plan *plan, int stage, int mode, zp_schedule *out)
{
    const int memory_only = mode == BUILD_MEMORY;
    memset(out, 0, sizeof *out);
    ZP_TRY(zp_model_validate(model));
    ZP_TRY(zp_plan_validate(plan));
    if (plan->op_sac)
        ZP_TRY(zp_model_check_op_sac(model));
    if (plan->impl == ZP_IMPL_EXEC && (plan->op_sac || plan->ckpt_every > 1))
        return ZP_FAIL(ZP_EUNSUPPORTED, "%s: zplan's executor checkpoints every block or none (the simulator "
                                        "models torchtitan's modes)",
                       plan->op_sac ? "--recompute op" : "--checkpoint-every");
    /* The model as one rank runs it: with the sequence split (context parallelism) its slice of each
     * sequence, every token-proportional op and activation of the slice (zp_shape_block: its queries
     * meet every slice's keys); the learned positions stay the whole sequence's. */
    zp_model slice = *model;
    const int64_t split = zp_dims_seq_split(plan->deg);
    if (split > 1) {
        if (slice.positions == 0)
            slice.positions = model->seq;
        slice.seq = model->seq / split;
        model = &slice;
    }
    zp_builder b = {.m = model, .p = plan, .lay = zp_layout_get(plan->impl), .st = ZP_OK,
                    .memory_only = memory_only, .item = -1, .repeat = 1.0};
    if (!b.lay)
        return ZP_FAIL(ZP_EINVAL, "schedule: unknown implementation %d", (int)plan->impl);
    ZP_TRY(zp_pp_stage_get(model, plan, stage, &b.pps));
    /* blocks alike: not with every k-th block checkpointed (the others keep their activations) */
    b.collapse = memory_only && b.lay->compute_only && plan->ckpt_every <= 1;
    ZP_TRY(b.lay->facts(model, plan, &b.pps, &b.f));
    b.live = calloc((size_t)model->layers + 2, 1);
    if (!b.live) {
        builder_free(&b);
        return ZP_FAIL(ZP_ENOMEM, "out of memory building the schedule");
    }
    const double psi = b.f.psi;
    /* Without CB all gradients go through one fused buffer as large as the model: one bucket. */
    const double bucket = plan->cb ? fmin(plan->bucket, psi) : psi;
    if (psi / bucket > ZP_SCHEDULE_MAX_BUCKETS) {
        builder_free(&b);
        return ZP_FAIL(ZP_EINVAL, "--bucket: %.4g elements cut the %.4g parameters of a rank into %.3g buckets per "
                                  "step (at most %.0e): use a bucket of at least %.4g elements (DeepSpeed's "
                                  "default is 5e8)",
                       bucket, psi, psi / bucket, ZP_SCHEDULE_MAX_BUCKETS, ceil(psi / ZP_SCHEDULE_MAX_BUCKETS));
    }
    b.lay->setup(&b);
    if (mode != BUILD_SAMPLE)
        param_gather_start(&b, bucket);
    int64_t ranges[3][2];
    const int nr = mode == BUILD_SAMPLE ? 0 : pass_ranges(plan, stage, memory_only, ranges);
    for (int j = 0; j < nr; j++)
        for (int64_t k = ranges[j][0]; k < ranges[j][1] && b.st == ZP_OK; k++) {
            const zp_pp_pass x = zp_pp_pass_at(plan, stage, k);
            b.ep_async = ep_paired(plan, stage, k);
            b.p2p_async = p2p_nowait(plan, stage, k);
            if (x.backward)
                backward_pass(&b, x.micro, x.chunk, bucket);
            else
                forward_pass(&b, x.micro, x.chunk);
        }
    /* the sample: micro-batch 0, and 1 where there is one (a later micro-batch adds its gradients into the
     * accumulated ones: grad_accumulate) */
    b.ep_async = plan->ep_overlap && plan->ep > 1; /* the sample bounds the step from below: overlapped */
    b.p2p_async = zp_plan_p2p_overlapped(plan);
    for (int64_t u = 0; mode == BUILD_SAMPLE && u < (plan->grad_accum > 1 ? 2 : 1); u++) {
        for (int c = 0; c < b.pps.chunks; c++)
            forward_pass(&b, u, c);
        for (int c = b.pps.chunks - 1; c >= 0; c--)
            backward_pass(&b, u, c, bucket);
    }
    passes_end(&b);
    const int nb = b.last_buckets;
    if (mode != BUILD_SAMPLE)
        optimizer(&b, bucket, nb);
    if (b.st != ZP_OK) {
        zp_status st = b.st;
        builder_free(&b);
        return st;
    }
    for (int i = 0; i < ZP_NSTREAMS; i++) {
        out->ops[i] = b.s[i].v;
        out->n[i] = b.s[i].n;
        b.s[i].v = NULL;
    }
    out->setup = b.setup.v;
    out->nsetup = b.setup.n;
    b.setup.v = NULL;
    out->buckets_per_micro = nb;
    out->bucket_params = bucket;
    out->flops = memory_only ? 0.0 : b.flops;
    out->params = psi;
    out->memory_only = memory_only;
    out->stage = stage;
    builder_free(&b);
    if (mode == BUILD_SAMPLE) { /* for the bounds' sums: not walked in program order, no ids (-1) */
        out->nops = out->nsetup;
        for (int i = 0; i < ZP_NSTREAMS; i++)
            out->nops += out->n[i];
        return ZP_OK;
    }
    int next = 0;
    zp_status st = zp_schedule_walk(out, 1, -1, number, &next);
    out->nops = next;
    if (st != ZP_OK)
        zp_schedule_free(out);
    return st;
}

zp_status zp_schedule_build(const zp_model *model, const zp_plan *plan, zp_schedule *out)
{
    return build(model, plan, 0, BUILD_STEP, out);
}

zp_status zp_schedule_build_stage(const zp_model *model, const zp_plan *plan, int stage, zp_schedule *out)
{
    return build(model, plan, stage, BUILD_STEP, out);
}

zp_status zp_schedule_build_memory(const zp_model *model, const zp_plan *plan, zp_schedule *out)
{
    return build(model, plan, 0, BUILD_MEMORY, out);
}

zp_status zp_schedule_build_memory_stage(const zp_model *model, const zp_plan *plan, int stage, zp_schedule *out)
{
    return build(model, plan, stage, BUILD_MEMORY, out);
}

zp_status zp_schedule_build_sample(const zp_model *model, const zp_plan *plan, int stage, zp_schedule *out)
{
    return build(model, plan, stage, BUILD_SAMPLE, out);
}

void zp_schedule_free(zp_schedule *s)
{
    if (!s)
        return;
    for (int i = 0; i < ZP_NSTREAMS; i++)
        free(s->ops[i]);
    free(s->setup);
    memset(s, 0, sizeof *s);
}

zp_status zp_schedule_walk(const zp_schedule *s, int with_setup, int stop_phase, zp_walk_fn fn, void *ctx)
{
    for (int i = 0; with_setup && i < s->nsetup; i++)
        ZP_TRY(fn(ctx, &s->setup[i]));
    int pos[ZP_NSTREAMS] = {0}, end[ZP_NSTREAMS], tok[ZP_NCHANNELS] = {0};
    for (int st = 0; st < ZP_NSTREAMS; st++) {
        end[st] = s->n[st];
        for (int i = 0; stop_phase >= 0 && i < s->n[st]; i++)
            if ((int)s->ops[st][i].phase == stop_phase) {
                end[st] = i;
                break;
            }
    }
    /* One op of stream st: 0 when it is a wait with no token (blocked), else 1 after running it. */
#define STEP(st, res)                                                                  \
    do {                                                                               \
        const zp_op *o_ = &s->ops[st][pos[st]];                                        \
        const zp_opc c_ = zp_op_table[o_->type].cls;                                   \
        if (c_ == ZP_OPC_WAIT && tok[o_->channel] == 0) {                              \
            (res) = 0;                                                                 \
        } else {                                                                       \
            if (c_ == ZP_OPC_WAIT)                                                     \
                tok[o_->channel]--;                                                    \
            else if (c_ == ZP_OPC_SIGNAL)                                              \
                tok[o_->channel]++;                                                    \
            ZP_TRY(fn(ctx, o_));                                                       \
            pos[st]++;                                                                 \
            (res) = 1;                                                                 \
        }                                                                              \
    } while (0)
    for (;;) {
        int progress = 1;
        while (progress) {
            progress = 0;
            for (int st = 1; st < ZP_NSTREAMS; st++)
                while (pos[st] < end[st]) {
                    int ran;
                    STEP(st, ran);
                    if (!ran)
                        break;
                    progress = 1;
                }
        }
        if (pos[0] < end[0]) {
            int ran;
            STEP(0, ran);
            if (!ran)
                return ZP_FAIL(ZP_ERUNTIME, "schedule deadlock: compute waits on channel %s at operation %d",
                               zp_channel_name(s->ops[0][pos[0]].channel), pos[0]);
            continue;
        }
        for (int st = 1; st < ZP_NSTREAMS; st++)
            if (pos[st] < end[st])
                return ZP_FAIL(ZP_ERUNTIME, "schedule deadlock: stream %s waits on channel %s at operation %d of %d",
                               zp_stream_name((zp_stream)st), zp_channel_name(s->ops[st][pos[st]].channel),
                               pos[st], end[st]);
        return ZP_OK;
    }
#undef STEP
}
