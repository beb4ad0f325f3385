/* zp_schedule.c — the step's structure: per micro-batch the forward (embedding, blocks, LM head), the
 * backward (each block recomputed first under checkpointing) with gradient buckets reduced as they fill,
 * stage 3's parameter gathers one group ahead, Pa/Pa+cpu, then the optimizer (on the device, or on the
 * host with ZeRO-Offload) and the stage-1/2 parameter all-gather. Memory changes go through the plan's
 * layout (zp_layout.c); the program order is zp_schedule_walk's. */
#include "zp_builder.h"
#include "zp_dispatch.h"
#include "zp_layout.h"
#include "zp_schedule.h"

#include "zp_shape.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Ops that take no memory and do not order the streams: left out of a memory-only schedule. */
static int skip(const zp_builder *b) { return b->memory_only || b->st != ZP_OK; }

/* An op of kind `type` is costed as part of FlashAttention when the plan runs it and the kind is one of its
 * parts: 1 + the plan's FlashAttention kernel (zp_op.flash), else 0. */
static int flash_of(const zp_builder *b, int type)
{
    return b->p->flash_attn && zp_op_table[type].flash != ZP_FLASH_NONE ? 1 + b->p->flash_kernel : 0;
}

/* TP overlap (below): an all-gather waiting for its GEMM is emitted first by any other op (tp_ag_flush), or
 * taken by the GEMM that consumes it (tp_ag_gemm: 1 when it did). */
static void tp_ag_flush(zp_builder *b);
static int tp_ag_gemm(zp_builder *b, int type, double m, double n, double k, double batch);

/* One GEMM kernel on the compute stream (its FLOPs counted by the caller). */
static void gemm_push(zp_builder *b, int type, double m, double n, double k, double batch)
{
    if (skip(b))
        return;
    zp_op *o = zp_builder_push(b, ZP_STREAM_COMPUTE, type);
    o->m = m;
    o->n = n;
    o->k = k;
    o->batch = batch;
    o->flops = 2.0 * m * n * k * batch;
    o->flash = flash_of(b, type);
}

/* A GEMM whose FLOPs count `useful` of their executed amount in the step's FLOPs (an expert's rows padded
 * to its capacity and the busiest rank's extra tokens run but are no model FLOPs). */
static void gemm_part(zp_builder *b, int type, double m, double n, double k, double batch, double useful)
{
    b->flops += 2.0 * m * n * k * batch * useful;
    if (b->tp_ag > 0 && tp_ag_gemm(b, type, m, n, k, batch))
        return;
    tp_ag_flush(b);
    gemm_push(b, type, m, n, k, batch);
}

static void gemm(zp_builder *b, int type, double m, double n, double k, double batch)
{
    gemm_part(b, type, m, n, k, batch, 1.0);
}

/* A GEMM's backward: the input gradient dX(m, k) = dY(m, n) . W(n, k) and the weight gradient
 * dW(k, n) = X^T(k, m) . dY(m, n): twice the forward FLOPs. */
static void gemm_bwd(zp_builder *b, int dgrad, int wgrad, double m, double n, double k, double batch)
{
    gemm(b, dgrad, m, k, n, batch);
    gemm(b, wgrad, k, n, m, batch);
}

/* An element-wise op over `elems` elements; its bytes are its row's (the kernels it stands for, in 16-bit
 * activations, scaled to the plan's element size; less its dropout's where the model has none) where the
 * row has them, else `bytes`. */
static void eltwise(zp_builder *b, int type, double bytes, double elems)
{
    tp_ag_flush(b);
    if (skip(b))
        return;
    zp_op *o = zp_builder_push(b, ZP_STREAM_COMPUTE, type);
    const zp_op_info *in = &zp_op_table[type];
    const double per = in->eltbytes - ((b->m->no_dropout & in->dropout) ? in->dropbytes : 0.0);
    o->bytes = in->eltbytes > 0 ? elems * per * b->p->param_bytes / 2.0 : bytes;
    o->elems = elems;
    o->flash = flash_of(b, type);
}

/* A collective or copy of `bytes` on stream s (its kind's facts are the table's). */
static void move(zp_builder *b, int s, int type, double bytes)
{
    if (s != ZP_STREAM_TP)
        tp_ag_flush(b);
    if (skip(b))
        return;
    zp_builder_push(b, s, type)->bytes = bytes;
}

/* A signal or wait on channel c (left out of a collapsed memory-only schedule: see zp_builder.h). */
static void channel_op(zp_builder *b, int s, int type, zp_channel c)
{
    zp_op *o = b->collapse ? NULL : zp_builder_push(b, s, type);
    if (o)
        o->channel = c;
}

/* An op's micro-batch index (an int in zp_op), saturated: a memory-only schedule of a huge accumulation
 * (a global batch of 2^50 sequences) numbers its last micro-batches beyond 2^31. */
static int micro_index(int64_t u) { return u < INT_MAX ? (int)u : INT_MAX; }

static void sig(zp_builder *b, int s, zp_channel c) { channel_op(b, s, ZP_OPK_SIGNAL, c); }
static void wait_ch(zp_builder *b, int s, zp_channel c) { channel_op(b, s, ZP_OPK_WAIT, c); }

/* ---- Megatron's MP collectives, with or without sequence parallelism (Korthikanti et al. 2022) ---- */

/* Tokens an element-wise kernel outside the attention and MLP walks on one MP rank: all T of them, or
 * with sequence parallelism the rank's T/t. */
static double sp_tokens(const zp_builder *b, double T) { return b->p->sp ? T / (double)b->p->mp : T; }

/* After a row-parallel GEMM: its partial sums (T·h fp16) all-reduced over the MP group, or with sequence
 * parallelism reduce-scattered along the sequence (nothing without MP). */
static void mp_reduce(zp_builder *b, double bytes)
{
    if (b->p->mp > 1)
        move(b, ZP_STREAM_COMPUTE, b->p->sp ? ZP_OPK_MP_REDUCE_SCATTER : ZP_OPK_MP_ALLREDUCE, bytes);
}

/* ---- TP communication overlapped with its GEMMs (zp_plan.tp_overlap) ----
 * Sequence parallelism's all-gathers and reduce-scatters split into chunks on the tp stream, each beside a
 * chunk of the GEMM that consumes or produces it (the GEMM split along its token rows, each chunk costed at
 * its own shape's efficiency):
 *  - all-gather -> GEMM (QKV and MLP-up forward; the row-parallel projection's and MLP-down's input gradient
 *    backward): Transformer Engine's ring exchange (split_overlap_ag_p2p) and PyTorch's all-gather-matmul alike:
 *    the GEMM starts on the rank's own shard while the next of the t - 1 others arrives from the ring
 *    neighbour; exposed, whatever of a step the GEMM chunk beside it does not cover;
 *  - GEMM -> reduce-scatter (the projection and MLP-down forward): TE pipelines it over num_splits = 4 chunks
 *    (split_overlap_rs: chunk i reduce-scattered beside GEMM chunk i + 1; the last one exposed); async TP
 *    computes the t - 1 peers' output chunks first, each copied to its owner beside the next, its own last,
 *    then sums the t partials it received;
 *  - backward, the column-parallel input gradient's reduce-scatter (QKV and MLP-up): TE's bulk overlap beside
 *    the weight gradient's GEMM; async TP fuses it with the input gradient's GEMM as in forward.
 * Megatron-core runs the all-reduce without sequence parallelism as before (tp_comm_overlap asserts
 * sequence_parallel); MoE and MLA projections, the LM head and the embedding keep their blocking collectives
 * (no userbuffers there). The chunk counts are TE's defaults (transformer_engine/pytorch/module/base.py,
 * initialize_ub: ring_exchange for qkv_fprop, fc1_fprop, proj_dgrad, fc2_dgrad; pipeline with num_splits 4 for
 * proj_fprop, fc2_fprop; bulk for qkv_dgrad/wgrad, fc1_dgrad/wgrad) and PyTorch's (torch/distributed/
 * _symmetric_memory: one chunk per TP rank). */
static int tp_overlapped(const zp_builder *b)
{
    return zp_plan_tp_overlapped(b->p) && b->p->sp;
}

/* TE's pipelined reduce-scatter: chunks of the GEMM (num_splits, its default). */
#define ZP_TE_RS_SPLITS 4

/* The GEMMs TE's userbuffers (and async TP's matching) take an all-gather into. */
static int tp_ag_consumer(int type)
{
    return type == ZP_OPK_QKV || type == ZP_OPK_MLP_UP || type == ZP_OPK_ATTN_PROJ_DGRAD ||
           type == ZP_OPK_MLP_DOWN_DGRAD;
}

static void tp_ag_flush(zp_builder *b)
{
    const double bytes = b->tp_ag;
    if (!(bytes > 0))
        return;
    b->tp_ag = 0;
    move(b, ZP_STREAM_COMPUTE, ZP_OPK_MP_ALLGATHER, bytes);
}

/* The pending all-gather as a ring beside the GEMM (m rows of the whole sequence split in t chunks): the
 * ring starts at once (the rank's own shard is there), each step signals its chunk in, the GEMM waits for
 * each chunk but its own. 0 (nothing emitted) when `type` does not take it. */
static int tp_ag_gemm(zp_builder *b, int type, double m, double n, double k, double batch)
{
    if (!tp_ag_consumer(type) || batch != 1.0)
        return 0;
    const int t = (int)b->p->mp;
    const double bytes = b->tp_ag;
    b->tp_ag = 0;
    sig(b, ZP_STREAM_COMPUTE, ZP_CH_TP_GO);
    wait_ch(b, ZP_STREAM_TP, ZP_CH_TP_GO);
    for (int i = 1; i < t; i++) {
        move(b, ZP_STREAM_TP, ZP_OPK_TP_AG_STEP, bytes / t);
        sig(b, ZP_STREAM_TP, ZP_CH_TP_DONE);
    }
    for (int i = 0; i < t; i++) {
        if (i > 0)
            wait_ch(b, ZP_STREAM_COMPUTE, ZP_CH_TP_DONE);
        gemm_push(b, type, m / t, n, k, 1);
    }
    return 1;
}

/* One chunk of the tp stream's work once the compute stream has its data: `op` of `bytes`. */
static void tp_chunk(zp_builder *b, int op, double bytes)
{
    sig(b, ZP_STREAM_COMPUTE, ZP_CH_TP_GO);
    wait_ch(b, ZP_STREAM_TP, ZP_CH_TP_GO);
    move(b, ZP_STREAM_TP, op, bytes);
    sig(b, ZP_STREAM_TP, ZP_CH_TP_DONE);
}

/* A row-parallel GEMM (m token rows, its output partial sums) with its reduce-scatter of `bytes` pipelined
 * behind its chunks: TE's num_splits chunks each reduce-scattered by userbuffers' kernel, or async TP's t
 * chunks (the peers' first, each copied to its owner; its own last) and the sum of the t partials. */
static void tp_gemm_rs(zp_builder *b, int type, double m, double n, double k, double bytes)
{
    const int te = b->p->tp_overlap == ZP_TP_OVERLAP_TE, t = (int)b->p->mp, c = te ? ZP_TE_RS_SPLITS : t;
    b->flops += 2.0 * m * n * k;
    tp_ag_flush(b);
    for (int i = 0; i < c; i++) {
        gemm_push(b, type, m / c, n, k, 1);
        if (te)
            tp_chunk(b, ZP_OPK_TP_RS_CHUNK, bytes / c);
        else if (i < c - 1)
            tp_chunk(b, ZP_OPK_TP_RS_STEP, bytes / c);
    }
    for (int i = 0; i < (te ? c : c - 1); i++)
        wait_ch(b, ZP_STREAM_COMPUTE, ZP_CH_TP_DONE);
    if (!te && !skip(b)) { /* t partial chunks of bytes / t read, the reduced one written */
        zp_op *o = zp_builder_push(b, ZP_STREAM_COMPUTE, ZP_OPK_TP_PARTIAL_SUM);
        o->bytes = (t + 1.0) * bytes / t;
        o->elems = bytes / t / b->p->param_bytes;
    }
}

/* Before a column-parallel GEMM (and, in backward, before a row-parallel GEMM's input gradient): the
 * sequence-parallel shards all-gathered; nothing without sequence parallelism. With TP overlap it waits for
 * the GEMM that consumes it (tp_ag_gemm). */
static void mp_gather(zp_builder *b, double bytes)
{
    if (!(b->p->mp > 1 && b->p->sp))
        return;
    tp_ag_flush(b);
    if (tp_overlapped(b))
        b->tp_ag = bytes;
    else
        move(b, ZP_STREAM_COMPUTE, ZP_OPK_MP_ALLGATHER, bytes);
}

/* A row-parallel GEMM and the reduce-scatter (or all-reduce) of its partial sums over MP (`bytes`; 0: none
 * follows it here): pipelined with TP overlap, else one after the other. */
static void gemm_rs(zp_builder *b, int type, double m, double n, double k, double bytes)
{
    if (bytes > 0 && tp_overlapped(b)) {
        tp_gemm_rs(b, type, m, n, k, bytes);
        return;
    }
    gemm(b, type, m, n, k, 1);
    if (bytes > 0)
        mp_reduce(b, bytes);
}

/* A column-parallel GEMM's backward (gemm_bwd's shapes) and the reduce-scatter (or all-reduce) of its input
 * gradient over MP (`bytes`): with TP overlap, TE's bulk reduce-scatter beside the weight gradient, or async
 * TP's pipelined behind the input gradient; else after both. */
static void gemm_bwd_rs(zp_builder *b, int dgrad, int wgrad, double m, double n, double k, double bytes)
{
    if (!tp_overlapped(b)) {
        gemm_bwd(b, dgrad, wgrad, m, n, k, 1);
        mp_reduce(b, bytes);
        return;
    }
    if (b->p->tp_overlap == ZP_TP_OVERLAP_ASYNC) {
        tp_gemm_rs(b, dgrad, m, k, n, bytes);
        gemm(b, wgrad, k, n, m, 1);
        return;
    }
    gemm(b, dgrad, m, k, n, 1);
    tp_chunk(b, ZP_OPK_TP_RS_CHUNK, bytes);
    gemm(b, wgrad, k, n, m, 1);
    wait_ch(b, ZP_STREAM_COMPUTE, ZP_CH_TP_DONE);
}

/* Context parallelism (cp > 1): every slice's K and V of this rank's heads, 16-bit (MLA: each head's K with
 * the shared rotary part), the bytes of an all-gather over the CP group. */
static double cp_kv_bytes(const zp_builder *b, const zp_block_shape *S)
{
    const double kv = S->kv_n + (S->mla ? S->qh * S->rope : 0.0);
    return 2.0 * S->T * kv * (double)b->p->cp;
}

/* Ops on the CP stream once the compute stream has what they move; CP_RING signals that they are done. */
static void cp_transfer(zp_builder *b, int op, int then, double bytes)
{
    sig(b, ZP_STREAM_COMPUTE, ZP_CH_CP_KV);
    wait_ch(b, ZP_STREAM_CP, ZP_CH_CP_KV);
    move(b, ZP_STREAM_CP, op, bytes);
    if (then >= 0)
        move(b, ZP_STREAM_CP, then, bytes);
    sig(b, ZP_STREAM_CP, ZP_CH_CP_RING);
}

/* Before a block's attention (forward, or its backward): the ring passes the slices' K and V (backward: and
 * their gradients back) beside the attention that hides it; the all-gather form (--cp-comm all-gather)
 * gathers them whole first and the attention waits for them. */
static void cp_kv_before(zp_builder *b, const zp_block_shape *S, int backward)
{
    if (b->p->cp <= 1)
        return;
    const int gather = b->p->cp_comm == ZP_CP_ALLGATHER;
    cp_transfer(b, ZP_OPK_CP_KV_RING, backward && !gather ? ZP_OPK_CP_DKV_RING : -1, cp_kv_bytes(b, S));
    if (gather)
        wait_ch(b, ZP_STREAM_COMPUTE, ZP_CH_CP_RING);
}

/* After it: the ring's end waited for; the all-gather form reduce-scatters the gradients of K and V back once
 * the attention's backward is done, and waits for that (its forward has nothing left). */
static void cp_kv_after(zp_builder *b, const zp_block_shape *S, int backward)
{
    if (b->p->cp <= 1)
        return;
    const int gather = b->p->cp_comm == ZP_CP_ALLGATHER;
    if (gather && !backward)
        return;
    if (gather)
        cp_transfer(b, ZP_OPK_CP_DKV_RING, -1, cp_kv_bytes(b, S));
    wait_ch(b, ZP_STREAM_COMPUTE, ZP_CH_CP_RING);
}

/* The attention core of one block (scores, softmax, context): part of its forward, and what selective
 * recompute recomputes before the block's backward. */
static void attention_core(zp_builder *b, const zp_block_shape *S)
{
    const double s = S->s;
    cp_kv_before(b, S, 0);
    gemm(b, ZP_OPK_ATTN_SCORES, s, s, S->dqk, S->bh);
    eltwise(b, ZP_OPK_SOFTMAX, 3.0 * 2.0 * S->bh * s * s, S->bh * s * s);
    gemm(b, ZP_OPK_ATTN_CONTEXT, s, S->dv, s, S->bh);
    cp_kv_after(b, S, 0);
}
/* Attention's projections in (Q, K, V: fused, or MLA's low-rank pairs), the rotary turn, scores, softmax,
 * context. Shapes per MP rank (vocab/zp_shape.h). */
static void attention_forward(zp_builder *b, const zp_block_shape *S)
{
    const double T = S->T, h = S->h;
    if (S->mla) {
        if (S->q_rank > 0) {
            gemm(b, ZP_OPK_Q_DOWN, T, S->q_rank, h, 1);
            eltwise(b, ZP_OPK_MLA_NORM, 2.0 * 2.0 * T * S->q_rank, T * S->q_rank);
            gemm(b, ZP_OPK_Q_UP, T, S->q_n, S->q_rank, 1);
        } else {
            gemm(b, ZP_OPK_QKV, T, S->q_n, h, 1); /* a plain Q projection (DeepSeek-V2-Lite) */
        }
        gemm(b, ZP_OPK_KV_DOWN, T, S->kv_rank + S->rope, h, 1);
        eltwise(b, ZP_OPK_MLA_NORM, 2.0 * 2.0 * T * S->kv_rank, T * S->kv_rank);
        gemm(b, ZP_OPK_KV_UP, T, S->kv_n, S->kv_rank, 1);
    } else {
        gemm(b, ZP_OPK_QKV, T, S->qkv_n, h, 1);
    }
    if (S->rotary)
        eltwise(b, ZP_OPK_ROPE, 2.0 * 2.0 * T * S->rope_n, T * S->rope_n);
    attention_core(b, S);
}

/* ... its backward, then the reduce-scatter (or all-reduce) over MP of its input's gradient (`rs` bytes). */
static void attention_backward(zp_builder *b, const zp_block_shape *S, double rs)
{
    const double T = S->T, h = S->h, s = S->s;
    cp_kv_before(b, S, 1);
    gemm_bwd(b, ZP_OPK_ATTN_CONTEXT_DGRAD, ZP_OPK_ATTN_CONTEXT_WGRAD, s, S->dv, s, S->bh);
    eltwise(b, ZP_OPK_SOFTMAX_BWD, 3.0 * 2.0 * S->bh * s * s, S->bh * s * s);
    gemm_bwd(b, ZP_OPK_ATTN_SCORES_DGRAD, ZP_OPK_ATTN_SCORES_WGRAD, s, s, S->dqk, S->bh);
    cp_kv_after(b, S, 1);
    if (S->rotary)
        eltwise(b, ZP_OPK_ROPE_BWD, 2.0 * 2.0 * T * S->rope_n, T * S->rope_n);
    if (S->mla) {
        gemm_bwd(b, ZP_OPK_KV_UP_DGRAD, ZP_OPK_KV_UP_WGRAD, T, S->kv_n, S->kv_rank, 1);
        eltwise(b, ZP_OPK_MLA_NORM_BWD, 3.0 * 2.0 * T * S->kv_rank, T * S->kv_rank);
        gemm_bwd(b, ZP_OPK_KV_DOWN_DGRAD, ZP_OPK_KV_DOWN_WGRAD, T, S->kv_rank + S->rope, h, 1);
        if (S->q_rank > 0) {
            gemm_bwd(b, ZP_OPK_Q_UP_DGRAD, ZP_OPK_Q_UP_WGRAD, T, S->q_n, S->q_rank, 1);
            eltwise(b, ZP_OPK_MLA_NORM_BWD, 3.0 * 2.0 * T * S->q_rank, T * S->q_rank);
            gemm_bwd(b, ZP_OPK_Q_DOWN_DGRAD, ZP_OPK_Q_DOWN_WGRAD, T, S->q_rank, h, 1);
        } else {
            gemm_bwd(b, ZP_OPK_QKV_DGRAD, ZP_OPK_QKV_WGRAD, T, S->q_n, h, 1);
        }
        mp_reduce(b, rs);
    } else {
        gemm_bwd_rs(b, ZP_OPK_QKV_DGRAD, ZP_OPK_QKV_WGRAD, T, S->qkv_n, h, rs);
    }
}

/* A dense MLP of inner width f per rank: up (and gate: 2f columns), the activation, down; then the
 * reduce-scatter (or all-reduce) over MP of its output's partial sums (`rs` bytes; 0: none here). */
static void mlp_forward(zp_builder *b, const zp_block_shape *S, double f, double rs)
{
    const double T = S->T, h = S->h;
    gemm(b, ZP_OPK_MLP_UP, T, S->gated ? 2.0 * f : f, h, 1);
    if (S->gated)
        eltwise(b, ZP_OPK_GLU, 3.0 * 2.0 * T * f, T * f); /* reads gate and up, writes f */
    else
        eltwise(b, ZP_OPK_GELU, 2.0 * 2.0 * T * f, T * f);
    gemm_rs(b, ZP_OPK_MLP_DOWN, T, h, f, rs);
}

/* ... its backward, and the reduce-scatter (or all-reduce) of its input's gradient (`rs` bytes; 0: none). */
static void mlp_backward(zp_builder *b, const zp_block_shape *S, double f, double rs)
{
    const double T = S->T, h = S->h;
    gemm_bwd(b, ZP_OPK_MLP_DOWN_DGRAD, ZP_OPK_MLP_DOWN_WGRAD, T, h, f, 1);
    if (S->gated)
        eltwise(b, ZP_OPK_GLU_BWD, 5.0 * 2.0 * T * f, T * f); /* reads gate, up, dout; writes both grads */
    else
        eltwise(b, ZP_OPK_GELU_BWD, 3.0 * 2.0 * T * f, T * f);
    if (rs > 0)
        gemm_bwd_rs(b, ZP_OPK_MLP_UP_DGRAD, ZP_OPK_MLP_UP_WGRAD, T, S->gated ? 2.0 * f : f, h, rs);
    else
        gemm_bwd(b, ZP_OPK_MLP_UP_DGRAD, ZP_OPK_MLP_UP_WGRAD, T, S->gated ? 2.0 * f : f, h, 1);
}

/* ---- the EP all-to-alls beside the other micro-batch's compute (zp_plan.ep_overlap) ----
 * Megatron-core's combined 1F1B (--overlap-moe-expert-parallel-comm; megatron/core/pipeline_parallel/
 * combined_1f1b.py) runs the forward of one micro-batch and the backward of another layer by layer, each
 * one's all-to-alls on a communication stream beside the other's compute, as DeepSeek's DualPipe pairs its
 * chunks. The step here keeps one micro-batch's passes in order and stands the other's compute in for it:
 * an all-to-all goes to the EP stream and the compute stream goes on; it waits for it when it issues the
 * next one (the paired pass's compute of one stretch hides one all-to-all: a stretch lasts the longer of
 * the two) and before the pass hands its result to the next stage. Only the passes that have a partner are
 * paired: with pipeline stages the steady state's (not a stage's warm-up forwards and cool-down backwards,
 * nor the first forward and the last backward of the last stage), without them every pass but the first
 * forward and the last backward. The SMs the transfers hold are counted as NCCL's (sim/zp_actors.c). */
static void ep_drain(zp_builder *b)
{
    for (; b->ep_pending > 0; b->ep_pending--)
        wait_ch(b, ZP_STREAM_COMPUTE, ZP_CH_EP_DONE);
}

static void ep_a2a(zp_builder *b, int type, double bytes)
{
    ep_drain(b);
    sig(b, ZP_STREAM_COMPUTE, ZP_CH_EP_GO);
    wait_ch(b, ZP_STREAM_EP, ZP_CH_EP_GO);
    move(b, ZP_STREAM_EP, type, bytes);
    sig(b, ZP_STREAM_EP, ZP_CH_EP_DONE);
    b->ep_pending++;
}

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

/* Compute run beside an all-to-all (the shared experts' part, below), or NULL. */
typedef void (*beside_fn)(zp_builder *b, const zp_block_shape *S);

/* An all-to-all of the MoE dispatch or combine over the EP group (none without EP: the tokens stay); dir 0
 * toward the experts, 1 back from them (zp_block_shape.a2a_bytes). Megatron-core's all-gather dispatcher
 * runs an all-gather where the tokens (forward) or the output gradients (backward) go out and a reduce-
 * scatter where they come back, in place of the all-to-all. With `beside`, the all-to-all goes to the EP
 * stream, the compute stream runs beside() and then waits for it: the stretch lasts the longer of the two,
 * the kernels slowed by the SMs the transfer holds (sim/zp_actors.c). */
static void moe_a2a(zp_builder *b, int type, int dir, const zp_block_shape *S, beside_fn beside)
{
    if (b->p->ep <= 1) {
        if (beside)
            beside(b, S);
        return;
    }
    const zp_dispatch_info *d = zp_dispatch_get(b->p->dispatcher);
    if (d && d->gather) {
        static const int gathered[][2] = {
            {ZP_OPK_A2A_DISPATCH, ZP_OPK_EP_AG_DISPATCH}, {ZP_OPK_A2A_COMBINE, ZP_OPK_EP_RS_COMBINE},
            {ZP_OPK_A2A_COMBINE_BWD, ZP_OPK_EP_AG_COMBINE_BWD}, {ZP_OPK_A2A_DISPATCH_BWD, ZP_OPK_EP_RS_DISPATCH_BWD}};
        for (size_t i = 0; i < sizeof gathered / sizeof gathered[0]; i++)
            if (gathered[i][0] == type)
                type = gathered[i][1];
    }
    if (b->ep_async || beside)
        ep_a2a(b, type, S->a2a_bytes[dir]);
    else
        move(b, ZP_STREAM_COMPUTE, type, S->a2a_bytes[dir]);
    if (beside) {
        beside(b, S);
        ep_drain(b);
    }
}

/* ---- the shared experts beside the all-to-alls (zp_plan.shared_overlap) ----
 * Megatron-core's --moe-shared-expert-overlap (megatron/core/transformer/moe/shared_experts.py, called from
 * the all-to-all dispatcher): the shared experts run on a stream of their own, their up-projection and
 * activation beside the dispatch all-to-all, their down-projection beside the combine's, and the main
 * stream waits for them before it adds their output. In backward autograd runs their backward first (their
 * grad_fn's sequence numbers are set highest) on that stream, beside the combine's all-to-all. The MoE
 * layer's TP reduction of the sum is unchanged (block_mlp). */
static void shared_up(zp_builder *b, const zp_block_shape *S)
{
    const double T = S->T, h = S->h, f = S->f;
    gemm(b, ZP_OPK_MLP_UP, T, S->gated ? 2.0 * f : f, h, 1);
    if (S->gated)
        eltwise(b, ZP_OPK_GLU, 3.0 * 2.0 * T * f, T * f);
    else
        eltwise(b, ZP_OPK_GELU, 2.0 * 2.0 * T * f, T * f);
}

static void shared_down(zp_builder *b, const zp_block_shape *S) { gemm_rs(b, ZP_OPK_MLP_DOWN, S->T, S->h, S->f, 0.0); }

static void shared_bwd(zp_builder *b, const zp_block_shape *S) { mlp_backward(b, S, S->f, 0.0); }

/* The shared experts go beside the all-to-alls: asked for, there are some, and this pass's all-to-alls are
 * not already beside another micro-batch (Megatron-core refuses the two together). */
static int shared_beside(const zp_builder *b, const zp_block_shape *S)
{
    return b->p->shared_overlap && S->f > 0 && !b->ep_async;
}

/* The experts' activation over their e_local x e_rows x e_f elements (bwd: its backward): GLU reads gate
 * and up and writes one (its backward reads three, writes two), GeLU reads and writes one (three). */
static void expert_act(zp_builder *b, const zp_block_shape *S, int bwd)
{
    static const int op[2][2] = {{ZP_OPK_EXPERT_GELU, ZP_OPK_EXPERT_GLU}, {ZP_OPK_EXPERT_GELU_BWD, ZP_OPK_EXPERT_GLU_BWD}};
    static const double tensors[2][2] = {{2.0, 3.0}, {3.0, 5.0}};
    const double n = S->e_local * S->e_rows * S->e_f;
    eltwise(b, op[bwd][S->gated != 0], tensors[bwd][S->gated != 0] * 2.0 * n, n);
}

/* The MoE MLP: router (h -> E, whole on every rank), softmax and top-k, each token copied to its k experts'
 * slots, dispatched, the local experts' up (and gate), activation and down as batched GEMMs of e_rows rows
 * each, the outputs back and summed with the router's weights; then the shared experts as a dense MLP. */
static void moe_forward(zp_builder *b, const zp_block_shape *S)
{
    const double T = S->T, h = S->h, E = S->E, k = S->k, rows = S->e_rows, f = S->e_f;
    const double up = S->gated ? 2.0 * f : f, useful = 1.0 / (b->p->capacity_factor * b->p->moe_imbalance);
    gemm(b, ZP_OPK_ROUTER, T, E, h, 1);
    eltwise(b, ZP_OPK_TOPK, 2.0 * 2.0 * T * E, T * E);
    eltwise(b, ZP_OPK_MOE_PERMUTE, 2.0 * 2.0 * T * k * h, T * k * h);
    const int beside = shared_beside(b, S);
    moe_a2a(b, ZP_OPK_A2A_DISPATCH, 0, S, beside ? shared_up : NULL);
    gemm_part(b, ZP_OPK_EXPERT_UP, rows, up, h, S->e_local, useful);
    expert_act(b, S, 0);
    gemm_part(b, ZP_OPK_EXPERT_DOWN, rows, h, f, S->e_local, useful);
    moe_a2a(b, ZP_OPK_A2A_COMBINE, 1, S, beside ? shared_down : NULL);
    eltwise(b, ZP_OPK_MOE_COMBINE, 2.0 * (T * k * h + T * h), T * k * h);
    if (S->f > 0 && !beside)
        mlp_forward(b, S, S->f, 0.0);
}

static void moe_backward(zp_builder *b, const zp_block_shape *S)
{
    const double T = S->T, h = S->h, E = S->E, k = S->k, rows = S->e_rows, f = S->e_f;
    const double up = S->gated ? 2.0 * f : f, useful = 1.0 / (b->p->capacity_factor * b->p->moe_imbalance);
    const int beside = shared_beside(b, S);
    if (S->f > 0 && !beside)
        mlp_backward(b, S, S->f, 0.0);
    eltwise(b, ZP_OPK_MOE_COMBINE_BWD, 2.0 * (T * h + 2.0 * T * k * h), T * k * h);
    moe_a2a(b, ZP_OPK_A2A_COMBINE_BWD, 0, S, beside ? shared_bwd : NULL);
    gemm_part(b, ZP_OPK_EXPERT_DOWN_DGRAD, rows, f, h, S->e_local, useful);
    gemm_part(b, ZP_OPK_EXPERT_DOWN_WGRAD, f, h, rows, S->e_local, useful);
    expert_act(b, S, 1);
    gemm_part(b, ZP_OPK_EXPERT_UP_DGRAD, rows, h, up, S->e_local, useful);
    gemm_part(b, ZP_OPK_EXPERT_UP_WGRAD, h, up, rows, S->e_local, useful);
    moe_a2a(b, ZP_OPK_A2A_DISPATCH_BWD, 1, S, NULL);
    eltwise(b, ZP_OPK_MOE_PERMUTE_BWD, 2.0 * 2.0 * T * k * h, T * k * h);
    if (b->p->impl == ZP_IMPL_EXEC && b->p->mp > 1) /* zplan's executor sums the gates' partial gradients */
        move(b, ZP_STREAM_COMPUTE, ZP_OPK_ROUTER_DGATE_ALLREDUCE, T * k * 4.0 /* fp32 */);
    eltwise(b, ZP_OPK_TOPK_BWD, 3.0 * 2.0 * T * E, T * E);
    gemm_bwd(b, ZP_OPK_ROUTER_DGRAD, ZP_OPK_ROUTER_WGRAD, T, E, h, 1);
}

/* A block's MLP (its experts in an MoE layer), forward or backward, then the all-reduce over MP of what its
 * row-split GEMM leaves partial: the output forward, the input's gradient backward. */
static void block_mlp(zp_builder *b, const zp_block_shape *S, int backward)
{
    const double rs = 2.0 * S->T * S->h;
    if (S->moe) /* no userbuffers in the MoE layer: its all-gather blocks */
        tp_ag_flush(b);
    if (S->moe && backward)
        moe_backward(b, S);
    else if (S->moe)
        moe_forward(b, S);
    else if (backward)
        mlp_backward(b, S, S->f, rs);
    else
        mlp_forward(b, S, S->f, rs);
    if (S->moe)
        mp_reduce(b, rs);
}

/* Forward of one block on the compute stream (also its recompute), Megatron's layout: column-split Q/K/V
 * and MLP-up, row-split projection and MLP-down, one all-reduce of T·h fp16 after each row-split GEMM.
 * The shapes are the model description's (vocab/zp_shape.c): GQA, MLA, RMSNorm, rotary, gated MLPs;
 * a parallel block (GPT-J, NeoX) feeds attention and MLP the same input, with one norm or two. */
/* Block l's shape, then its input norm (LayerNorm or RMSNorm: reads and writes T·h fp16, over the sequence
 * slice under SP) and SP's all-gather of its output (T·h fp16): how the forward and its op-level recompute
 * start. */
static void block_input_norm(zp_builder *b, zp_block_shape *S)
{
    zp_shape_block(b->m, b->p, b->layer, S);
    const double T = S->T, h = S->h, Ts = sp_tokens(b, T);
    eltwise(b, S->rms ? ZP_OPK_RMSNORM1 : ZP_OPK_LAYERNORM1, 2.0 * 2.0 * Ts * h, Ts * h);
    mp_gather(b, 2.0 * T * h);
}

/* After attention: the residual add and the second norm, fused (reads two T·h, writes one), and SP's
 * all-gather; a parallel block with one norm (GPT-J) has neither. */
static void block_mid_norm(zp_builder *b, const zp_block_shape *S)
{
    if (S->one_norm)
        return;
    const double T = S->T, h = S->h, Ts = sp_tokens(b, T);
    eltwise(b, S->rms ? ZP_OPK_RESID_RMS2 : ZP_OPK_RESID_LN2, 3.0 * 2.0 * 2.0 * Ts * h, Ts * h);
    mp_gather(b, 2.0 * T * h);
}

static void block_forward(zp_builder *b)
{
    zp_block_shape S;
    block_input_norm(b, &S);
    const double T = S.T, h = S.h, Ts = sp_tokens(b, T);
    attention_forward(b, &S);
    gemm_rs(b, ZP_OPK_ATTN_PROJ, T, h, S.o_k, 2.0 * T * h);
    block_mid_norm(b, &S);
    block_mlp(b, &S, 0);
    eltwise(b, ZP_OPK_RESID, 2.0 * 2.0 * 2.0 * Ts * h, Ts * h);
}

static void block_backward(zp_builder *b)
{
    zp_block_shape S;
    zp_shape_block(b->m, b->p, b->layer, &S);
    const double T = S.T, h = S.h, Ts = sp_tokens(b, T);
    eltwise(b, ZP_OPK_RESID_BWD, 2.0 * 2.0 * 2.0 * Ts * h, Ts * h);
    mp_gather(b, 2.0 * T * h);
    block_mlp(b, &S, 1);
    if (!S.one_norm) {
        eltwise(b, S.rms ? ZP_OPK_RMSNORM2_BWD : ZP_OPK_LAYERNORM2_BWD, 3.0 * 2.0 * 2.0 * Ts * h, Ts * h);
        mp_gather(b, 2.0 * T * h);
    }
    gemm_bwd(b, ZP_OPK_ATTN_PROJ_DGRAD, ZP_OPK_ATTN_PROJ_WGRAD, T, h, S.o_k, 1);
    attention_backward(b, &S, 2.0 * T * h);
    eltwise(b, S.rms ? ZP_OPK_RMSNORM1_BWD : ZP_OPK_LAYERNORM1_BWD, 2.0 * 2.0 * 2.0 * Ts * h, Ts * h);
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
        wait_ch(b, ZP_STREAM_COMM, ZP_CH_GATHER_GO);
    const double experts = b->f.gather_exp[item], edp = (double)(b->p->dp / b->p->ep);
    if (b->p->offload == ZP_OFFLOAD_PARAMS) { /* the local fp16 partition comes from the host first */
        const double local = b->p->param_bytes * (params / (double)zp_plan_shard_degree(b->p) + experts / edp);
        if (b->p->nvme & ZP_NVME_PARAMS) /* ... and to the host from the drives */
            move(b, cs, ZP_OPK_NVME_READ, local);
        move(b, cs, ZP_OPK_PARAM_FETCH, local);
    }
    b->lay->gather(b, cs, item);
    move(b, cs, ZP_OPK_PARAM_GATHER, gather_bytes(b, item) * params);
    if (!skip(b))
        b->s[cs].v[b->s[cs].n - 1].item = item;
    if (experts > 0) { /* EP: the local experts' parameters from the ranks holding the same experts */
        move(b, cs, ZP_OPK_PARAM_GATHER_EXP, gather_bytes(b, item) * experts);
        if (!skip(b))
            b->s[cs].v[b->s[cs].n - 1].item = item;
    }
    if (ov)
        sig(b, ZP_STREAM_COMM, ZP_CH_GATHERED);
}

/* Compute starts using group `item`: waits for its gather, lets the next one start, switches to it. */
static void use_gathered(zp_builder *b, int last)
{
    if (b->p->overlap_comm) {
        wait_ch(b, ZP_STREAM_COMPUTE, ZP_CH_GATHERED);
        if (!last)
            sig(b, ZP_STREAM_COMPUTE, ZP_CH_GATHER_GO);
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
    move(b, s, ZP_OPK_GRAD_ALLREDUCE_REPLICA, bytes / (double)g);
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
                wait_ch(b, ZP_STREAM_COMM, ZP_CH_BUCKET);
                move(b, ZP_STREAM_COMM, type, bytes);
            } else if (!b->p->overlap_comm) {
                /* overlap_comm off: the reduction blocks the compute stream */
                move(b, ZP_STREAM_COMPUTE, type, bytes);
                sig(b, ZP_STREAM_COMPUTE, ZP_CH_BUCKET);
                wait_ch(b, ZP_STREAM_COMM, ZP_CH_BUCKET);
            } else {
                sig(b, ZP_STREAM_COMPUTE, ZP_CH_BUCKET);
                wait_ch(b, ZP_STREAM_COMM, ZP_CH_BUCKET); /* the comm stream's reduction of this bucket */
                move(b, ZP_STREAM_COMM, type, bytes);
            }
            replicas_allreduce(b, type, bytes);
            sig(b, ZP_STREAM_COMM, ZP_CH_REDUCED);
            if (k->last_micro && b->p->offload != ZP_OFFLOAD_NONE) {
                /* ZeRO-Offload: the reduced partition of the bucket goes to the host as soon as it is ready */
                sig(b, ZP_STREAM_COMM, ZP_CH_BUCKET_D2H);
                wait_ch(b, ZP_STREAM_PCIE, ZP_CH_BUCKET_D2H);
                move(b, ZP_STREAM_PCIE, ZP_OPK_GRAD_D2H, bytes / group);
                sig(b, ZP_STREAM_PCIE, ZP_CH_GRAD_HOST);
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
    eltwise(b, ZP_OPK_GRAD_ACCUM, params * (w + 2.0 * g), params);
}

/* Pa+cpu: fetch the checkpoint partition of the block below over PCIe once compute asks for it. */
static void ckpt_fetch(zp_builder *b, double bytes)
{
    sig(b, ZP_STREAM_COMPUTE, ZP_CH_CKPT_IN_GO);
    wait_ch(b, ZP_STREAM_PCIE, ZP_CH_CKPT_IN_GO);
    move(b, ZP_STREAM_PCIE, ZP_OPK_CKPT_H2D, bytes);
    sig(b, ZP_STREAM_PCIE, ZP_CH_CKPT_IN);
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
        move(b, ZP_STREAM_COMM, ZP_OPK_PARAM_ALLGATHER_EXP, p->param_bytes * fmin(left, bucket));
        sig(b, ZP_STREAM_COMM, ZP_CH_PARAMS_GATHERED);
    }
    const int experts = b->pg_left;
    for (double left = b->f.psi - b->f.psi_exp; left > 0; left -= bucket, b->pg_left++) {
        move(b, ZP_STREAM_COMM, ZP_OPK_PARAM_ALLGATHER, p->param_bytes * fmin(left, bucket));
        sig(b, ZP_STREAM_COMM, ZP_CH_PARAMS_GATHERED);
    }
    for (int i = 0; i < experts; i++, b->pg_left--) /* the experts' buckets before the first item */
        wait_ch(b, ZP_STREAM_COMPUTE, ZP_CH_PARAMS_GATHERED);
}

/* Before the first forward's item (its parameters `params`; -1: every bucket left): the buckets up to it. */
static void param_gather_wait(zp_builder *b, double params)
{
    b->pg_asked += params;
    for (; b->pg_left > 0 && (params < 0 || b->pg_ready < b->pg_asked); b->pg_left--) {
        wait_ch(b, ZP_STREAM_COMPUTE, ZP_CH_PARAMS_GATHERED);
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
    if (skip(b))
        return;
    zp_op *o = zp_builder_push(b, ZP_STREAM_COMPUTE, type);
    o->bytes = pp_bytes(b);
    o->item = peer;
    o->nowait = b->p2p_async && zp_op_table[type].p2p == ZP_P2P_SEND;
    if (zp_op_table[type].p2p == ZP_P2P_RECV && !b->p->sp && b->p->mp > 1)
        move(b, ZP_STREAM_COMPUTE, ZP_OPK_PP_ALLGATHER, pp_bytes(b) * (double)b->p->mp);
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

/* ---- activation recompute ---- */

/* torchtitan's op-level selective recompute of one block (zp_model_op_sac says which matmuls run again:
 * every second aten.mm, the routed experts' grouped GEMMs, never w2): before the block's backward its forward
 * runs again up to the last tensor backward needs, the MLP's (or the shared experts') activation output, w2's
 * input; what the save list keeps is not computed again: the odd-numbered matmuls, the SDPA kernel,
 * a reduce-scatter (sequence parallelism), the all-to-alls. Everything else before that point is: the norms
 * and SP's all-gathers, the rotary turn, MLA's latent norms, without SP the all-reduce after wo (its output
 * feeds the residual), the router's top-k, the token permutation, the activations. */
static void op_sac_mlp(zp_builder *b, const zp_block_shape *S, double f, unsigned rerun)
{
    const double T = S->T, h = S->h;
    if (rerun & ZP_SAC_W1)
        gemm(b, ZP_OPK_MLP_UP, T, f, h, 1);
    if (rerun & ZP_SAC_W3)
        gemm(b, ZP_OPK_MLP_UP, T, f, h, 1);
    if (S->gated)
        eltwise(b, ZP_OPK_GLU, 3.0 * 2.0 * T * f, T * f);
    else
        eltwise(b, ZP_OPK_GELU, 2.0 * 2.0 * T * f, T * f);
}

static void op_sac_moe(zp_builder *b, const zp_block_shape *S, unsigned rerun)
{
    const double T = S->T, h = S->h, E = S->E, k = S->k, rows = S->e_rows, f = S->e_f;
    const double up = S->gated ? 2.0 * f : f, useful = 1.0 / (b->p->capacity_factor * b->p->moe_imbalance);
    if (rerun & ZP_SAC_ROUTER)
        gemm(b, ZP_OPK_ROUTER, T, E, h, 1);
    eltwise(b, ZP_OPK_TOPK, 2.0 * 2.0 * T * E, T * E);
    eltwise(b, ZP_OPK_MOE_PERMUTE, 2.0 * 2.0 * T * k * h, T * k * h);
    gemm_part(b, ZP_OPK_EXPERT_UP, rows, up, h, S->e_local, useful);
    expert_act(b, S, 0);
    gemm_part(b, ZP_OPK_EXPERT_DOWN, rows, h, f, S->e_local, useful);
    if (S->f > 0)
        op_sac_mlp(b, S, S->f, rerun);
}

static void op_sac_attention(zp_builder *b, const zp_block_shape *S, unsigned rerun)
{
    const double T = S->T, h = S->h;
    if (rerun & ZP_SAC_WQ_A)
        gemm(b, ZP_OPK_Q_DOWN, T, S->q_rank, h, 1);
    if (S->mla && S->q_rank > 0)
        eltwise(b, ZP_OPK_MLA_NORM, 2.0 * 2.0 * T * S->q_rank, T * S->q_rank);
    if (rerun & ZP_SAC_WQ_B)
        gemm(b, ZP_OPK_Q_UP, T, S->q_n, S->q_rank, 1);
    if (rerun & ZP_SAC_WQ)
        gemm(b, ZP_OPK_QKV, T, S->q_n, h, 1);
    if (rerun & ZP_SAC_WK)
        gemm(b, ZP_OPK_QKV, T, S->kvh * S->dqk, h, 1);
    if (rerun & ZP_SAC_WV)
        gemm(b, ZP_OPK_QKV, T, S->kvh * S->dv, h, 1);
    if (rerun & ZP_SAC_WKV_A)
        gemm(b, ZP_OPK_KV_DOWN, T, S->kv_rank + S->rope, h, 1);
    if (S->mla)
        eltwise(b, ZP_OPK_MLA_NORM, 2.0 * 2.0 * T * S->kv_rank, T * S->kv_rank);
    if (rerun & ZP_SAC_WKV_B)
        gemm(b, ZP_OPK_KV_UP, T, S->kv_n, S->kv_rank, 1);
    if (S->rotary)
        eltwise(b, ZP_OPK_ROPE, 2.0 * 2.0 * T * S->rope_n, T * S->rope_n);
    if (rerun & ZP_SAC_WO)
        gemm(b, ZP_OPK_ATTN_PROJ, T, h, S->o_k, 1);
    if (!b->p->sp)
        mp_reduce(b, 2.0 * T * h);
}

static void op_sac_recompute(zp_builder *b)
{
    zp_block_shape S;
    block_input_norm(b, &S);
    zp_op_sac o;
    zp_model_op_sac(b->m, S.moe, &o);
    op_sac_attention(b, &S, o.rerun);
    block_mid_norm(b, &S);
    if (S.moe)
        op_sac_moe(b, &S, o.rerun);
    else
        op_sac_mlp(b, &S, S.f, o.rerun);
}

/* Megatron-core's selective recompute of block l (zp_plan_rc_modules; vocab/zp_plan.h says which module is
 * checkpointed whole and which discards its output): each module's forward again, as the block's forward runs
 * it, before the block's backward; the MLP side first, as backward meets it. mlp and moe run their layer
 * whole, SP's all-gather of the input, the EP all-to-alls and the TP reduction included (Megatron-core's
 * tensor_parallel.checkpoint re-runs the module's forward); moe holds moe_act and shared_experts. The norms
 * run again as the input norm's kernel (reads and writes T·h). */
static void modules_recompute(zp_builder *b)
{
    zp_block_shape S;
    zp_shape_block(b->m, b->p, b->layer, &S);
    const unsigned mods = zp_plan_rc_modules(b->p);
    const double T = S.T, h = S.h, Ts = sp_tokens(b, T);
    const int norm = S.rms ? ZP_OPK_RMSNORM1 : ZP_OPK_LAYERNORM1;
    if ((S.moe && (mods & ZP_RCM_MOE)) || (!S.moe && (mods & ZP_RCM_MLP))) {
        mp_gather(b, 2.0 * T * h);
        block_mlp(b, &S, 0);
    } else if (S.moe) {
        if (mods & ZP_RCM_MOE_ACT)
            expert_act(b, &S, 0);
        if ((mods & ZP_RCM_SHARED_EXPERTS) && S.f > 0) {
            mp_gather(b, 2.0 * T * h);
            mlp_forward(b, &S, S.f, 0.0);
        }
    }
    if ((mods & ZP_RCM_LAYERNORM) && !S.one_norm)
        eltwise(b, norm, 2.0 * 2.0 * Ts * h, Ts * h);
    if ((mods & ZP_RCM_MLA_UP_PROJ) && S.mla) {
        if (S.q_rank > 0)
            gemm(b, ZP_OPK_Q_UP, T, S.q_n, S.q_rank, 1);
        else
            gemm(b, ZP_OPK_QKV, T, S.q_n, h, 1);
        gemm(b, ZP_OPK_KV_UP, T, S.kv_n, S.kv_rank, 1);
        if (S.rotary)
            eltwise(b, ZP_OPK_ROPE, 2.0 * 2.0 * T * S.rope_n, T * S.rope_n);
    }
    if (mods & ZP_RCM_CORE_ATTN)
        attention_core(b, &S);
    if (mods & ZP_RCM_LAYERNORM)
        eltwise(b, norm, 2.0 * 2.0 * Ts * h, Ts * h);
}

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
            wait_ch(b, ZP_STREAM_COMPUTE, ZP_CH_CKPT_IN);
            if (item > c->fb) /* prefetch the checkpoint of the block below */
                ckpt_fetch(b, ckpt_part);
        }
        if ((p->pa || p->pa_cpu) && p->mp > 1)
            move(b, ZP_STREAM_COMPUTE, ZP_OPK_PA_ALLGATHER, 2.0 * T * (double)b->m->hidden);
        block_forward(b);
        b->phase = ZP_PHASE_BACKWARD;
    } else if (p->selective) {
        b->phase = ZP_PHASE_RECOMPUTE;
        modules_recompute(b);
        b->phase = ZP_PHASE_BACKWARD;
    } else if (p->op_sac) {
        b->phase = ZP_PHASE_RECOMPUTE;
        op_sac_recompute(b);
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
/* The LM head on T tokens: the final norm (`norm`: the model's unless it has none; an MTP module's always),
 * TP's gather of its input, the vocab-parallel GEMM and the cross-entropy; backward in reverse, the input's
 * gradient reduced over TP. `main`: the main head, whose forward allocates the logits the layout keeps (with
 * the MTP modules' activations: sim/zp_layout.c ds_logits_bytes). */
static void lm_head(zp_builder *b, double T, int backward, int norm, int main)
{
    const zp_model *m = b->m;
    const double t = (double)b->p->mp, h = (double)m->hidden, V = (double)m->vocab;
    const int rms = m->norm == ZP_NORM_RMSNORM;
    if (!backward) {
        if (norm)
            eltwise(b, rms ? ZP_OPK_FINAL_RMS : ZP_OPK_FINAL_LN, 2.0 * 2.0 * T * h, T * h);
        mp_gather(b, 2.0 * T * h); /* the LM head is a column-parallel GEMM */
        if (main)
            b->lay->logits(b);
        gemm(b, ZP_OPK_LM_HEAD, T, V / t, h, 1);
        eltwise(b, ZP_OPK_XENT, 2.0 * T * (V / t) * (2.0 + 4.0), T * (V / t));
        return;
    }
    eltwise(b, ZP_OPK_XENT_BWD, 2.0 * T * (V / t) * (2.0 + 4.0), T * (V / t));
    gemm_bwd(b, ZP_OPK_LM_HEAD_DGRAD, ZP_OPK_LM_HEAD_WGRAD, T, V / t, h, 1);
    mp_reduce(b, 2.0 * T * h);
    if (norm)
        eltwise(b, rms ? ZP_OPK_FINAL_RMS_BWD : ZP_OPK_FINAL_LN_BWD, 3.0 * 2.0 * T * h, T * h);
}

/* An MTP module's eh_proj (2h -> h, column-parallel) and TP's gather of its output. */
static void mtp_proj(zp_builder *b, double T)
{
    const double t = (double)b->p->mp, h = (double)b->m->hidden;
    gemm(b, ZP_OPK_MTP_PROJ, T, h / t, 2.0 * h, 1);
    mp_gather(b, 2.0 * T * h);
}

static void mtp_forward(zp_builder *b, double T)
{
    const zp_model *m = b->m;
    const double h = (double)m->hidden;
    for (int64_t k = 0; k < m->mtp_layers; k++) {
        b->layer = (int)(m->layers + k);
        eltwise(b, ZP_OPK_EMBEDDING, 2.0 * 2.0 * T * h, T * h);
        mp_reduce(b, 2.0 * T * h);
        eltwise(b, ZP_OPK_MTP_NORMS, 2.0 * 2.0 * 2.0 * T * h, 2.0 * T * h);
        mtp_proj(b, T);
        block_forward(b);
        lm_head(b, T, 0, 1, 0);
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
        lm_head(b, T, 1, 1, 0);
        if (b->p->checkpoint && zp_plan_block_checkpointed(b->p, b->layer)) { /* the projection with its block */
            b->phase = ZP_PHASE_RECOMPUTE;
            mtp_proj(b, T);
            b->phase = ZP_PHASE_BACKWARD;
        }
        recompute(b, (int)m->layers + 1, &none, 0, 0.0);
        block_backward(b);
        gemm_bwd(b, ZP_OPK_MTP_PROJ_DGRAD, ZP_OPK_MTP_PROJ_WGRAD, T, h / t, 2.0 * h, 1);
        mp_reduce(b, 2.0 * 2.0 * T * h);
        eltwise(b, ZP_OPK_MTP_NORMS_BWD, 3.0 * 2.0 * 2.0 * T * h, 2.0 * T * h);
        eltwise(b, ZP_OPK_EMBEDDING_BWD, 2.0 * 2.0 * T * h, T * h);
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
    b->micro = micro_index(u);
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
            eltwise(b, ZP_OPK_EMBEDDING, 2.0 * 2.0 * T * h, T * h);
            mp_reduce(b, 2.0 * T * h); /* vocab-parallel embedding: partial sums reduced */
        } else if (item <= L) {
            b->lay->block_begin(b, item - 1);
            if (kernels_built(b))
                block_forward(b);
            b->lay->block_end(b, item - 1);
            if (pacpu) {
                sig(b, ZP_STREAM_COMPUTE, ZP_CH_CKPT_OUT);
                wait_ch(b, ZP_STREAM_PCIE, ZP_CH_CKPT_OUT);
                move(b, ZP_STREAM_PCIE, ZP_OPK_CKPT_D2H, ckpt_part);
            }
        } else {
            lm_head(b, T, 0, !m->no_final_norm, 1);
            if (kernels_built(b))
                mtp_forward(b, T);
        }
    }
    ep_drain(b); /* the pass's output is whole: its all-to-alls are done */
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
    b->micro = micro_index(u);
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
            lm_head(b, T, 1, !m->no_final_norm, 1);
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
            block_backward(b);
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
        mp_gather(b, 2.0 * T * h); /* the embedding's output gradient, whole on every rank */
        eltwise(b, ZP_OPK_EMBEDDING_BWD, 2.0 * 2.0 * T * h, T * h);
        grad_accumulate(b, u, b->f.grad[0]);
        bucket_add(b, &k, b->f.grad[0], 1);
    } else {
        bucket_add(b, &k, 0.0, 1);
    }
    bucket_add(b, &kx, 0.0, 1);
    ep_drain(b);
    b->lay->micro_end(b);
    if (last_micro)
        b->last_buckets += k.closed + kx.closed;
    if (k.reduce)
        b->reduced_pending += k.closed + kx.closed;
    if (p->stage >= 2) /* the compute stream waits for this pass's reductions */
        for (; b->reduced_pending > 0; b->reduced_pending--)
            wait_ch(b, ZP_STREAM_COMPUTE, ZP_CH_REDUCED);
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
    ep_drain(b);
    tp_ag_flush(b);
    param_gather_wait(b, -1.0);
    b->layer = -1;
    b->micro = micro_index(b->p->grad_accum - 1);
    b->phase = ZP_PHASE_BACKWARD;
    for (; b->flush_pending > 0; b->flush_pending--) /* the pipeline is flushed: the reductions go */
        sig(b, ZP_STREAM_COMPUTE, ZP_CH_BUCKET);
    for (; b->reduced_pending > 0; b->reduced_pending--)
        wait_ch(b, ZP_STREAM_COMPUTE, ZP_CH_REDUCED);
    const zp_pp_stage *st = &b->pps;
    if (st->stages > 1 && (st->embedding || st->head) && !b->m->untied && !skip(b)) {
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
    if (!plan->serial_scaler || skip(b))
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
            move(b, ZP_STREAM_COMPUTE, ZP_OPK_GRAD_ALLREDUCE, 4.0);
        if (plan->mp > 1)
            move(b, ZP_STREAM_COMPUTE, ZP_OPK_MP_ALLREDUCE, 4.0);
    }
}

/* The optimizer on the local partition, and the stage-1/2 all-gather of the updated parameters. */
static void optimizer(zp_builder *b, double bucket, int nb)
{
    const zp_plan *plan = b->p;
    b->phase = ZP_PHASE_OPTIMIZER;
    b->layer = -1;
    b->micro = micro_index(plan->grad_accum - 1);
    const double psi = b->f.psi, part = plan->stage >= 1 ? b->f.psi_all / (double)zp_plan_shard_degree(plan) : psi;
    /* the all-gather of the updated parameters after the step; with overlap_param_gather the next step's
     * (param_gather_start) */
    const int stage12 = (plan->stage == 1 || plan->stage == 2) && !plan->overlap_param_gather;
    if (plan->offload == ZP_OFFLOAD_NONE) {
        scaler_check(b);
        if (!skip(b)) { /* part parameters; k: the bytes of state each saves where Adam's moments are narrower */
            zp_op *o = zp_builder_push(b, ZP_STREAM_COMPUTE, ZP_OPK_ADAM);
            o->bytes = part;
            o->k = zp_plan_moments_saved(plan);
        }
        if (stage12)
            sig(b, ZP_STREAM_COMPUTE, ZP_CH_UPDATED);
    } else {
        for (int i = 0; i < nb; i++)
            wait_ch(b, ZP_STREAM_CPU, ZP_CH_GRAD_HOST);
        const int nvme = plan->nvme & ZP_NVME_OPTIMIZER;
        if (nvme) /* ZeRO-Infinity: fp32 master, m, v and gradients in from the drives */
            move(b, ZP_STREAM_CPU, ZP_OPK_NVME_READ, (plan->k_optimizer + 4.0) * part);
        if (!skip(b))
            zp_builder_push(b, ZP_STREAM_CPU, ZP_OPK_CPU_ADAM)->bytes = part;
        if (nvme) /* ... and the updated states back */
            move(b, ZP_STREAM_CPU, ZP_OPK_NVME_WRITE, plan->k_optimizer * part);
        if (plan->nvme & ZP_NVME_PARAMS) /* the updated 16-bit parameters to the drives */
            move(b, ZP_STREAM_CPU, ZP_OPK_NVME_WRITE, 2.0 * part);
        sig(b, ZP_STREAM_CPU, ZP_CH_OPT_DONE);
        wait_ch(b, ZP_STREAM_PCIE, ZP_CH_OPT_DONE);
        /* the CPU Adam writes a 16-bit copy of the updated partition and that is what goes up, whatever
         * the device computes in (the executor's fp32 expands it on the device) */
        if (plan->offload == ZP_OFFLOAD_OPTIMIZER)
            move(b, ZP_STREAM_PCIE, ZP_OPK_PARAM_H2D, 2.0 * part);
        sig(b, ZP_STREAM_PCIE, ZP_CH_PARAMS_BACK);
        wait_ch(b, ZP_STREAM_COMPUTE, ZP_CH_PARAMS_BACK);
        if (stage12)
            sig(b, ZP_STREAM_COMPUTE, ZP_CH_UPDATED);
    }
    if (stage12) {
        /* every rank updated its partition: all-gather the fp16 parameters, bucket by bucket */
        wait_ch(b, ZP_STREAM_COMM, ZP_CH_UPDATED);
        const double experts = b->f.psi_exp; /* EP: the local experts' parameters, over the EDP group */
        for (double left = psi - experts; left > 0; left -= bucket)
            move(b, ZP_STREAM_COMM, ZP_OPK_PARAM_ALLGATHER, plan->param_bytes * fmin(left, bucket));
        for (double left = experts; left > 0; left -= bucket)
            move(b, ZP_STREAM_COMM, ZP_OPK_PARAM_ALLGATHER_EXP, plan->param_bytes * fmin(left, bucket));
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
