/* zp_emit.c — the ops a step is made of (zp_emit.h): one op appended to a stream of the builder each, its
 * kind's facts from zp_ops.def; Megatron's MP collectives, with or without sequence parallelism and TP
 * overlap. */
#include "zp_emit.h"

#include <limits.h>

/* Ops that take no memory and do not order the streams: left out of a memory-only schedule. */
int zp_emit_skipped(const zp_builder *b) { return b->memory_only || b->st != ZP_OK; }

/* An op of kind `type` is costed as part of FlashAttention when the plan runs it and the kind is one of its
 * parts: 1 + the plan's FlashAttention kernel (zp_op.flash), else 0. */
static int flash_of(const zp_builder *b, int type)
{
    return b->p->flash_attn && zp_op_table[type].flash != ZP_FLASH_NONE ? 1 + b->p->flash_kernel : 0;
}

/* TP overlap (below): an all-gather waiting for its GEMM is emitted first by any other op (zp_emit_tp_flush), or
 * taken by the GEMM that consumes it (tp_ag_gemm: 1 when it did). */
static int tp_ag_gemm(zp_builder *b, int type, double m, double n, double k, double batch);

/* One GEMM kernel on the compute stream (its FLOPs counted by the caller). */
static void gemm_push(zp_builder *b, int type, double m, double n, double k, double batch)
{
    if (zp_emit_skipped(b))
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
void zp_emit_gemm_part(zp_builder *b, int type, double m, double n, double k, double batch, double useful)
{
    b->flops += 2.0 * m * n * k * batch * useful;
    if (b->tp_ag > 0 && tp_ag_gemm(b, type, m, n, k, batch))
        return;
    zp_emit_tp_flush(b);
    gemm_push(b, type, m, n, k, batch);
}

void zp_emit_gemm(zp_builder *b, int type, double m, double n, double k, double batch)
{
    zp_emit_gemm_part(b, type, m, n, k, batch, 1.0);
}

/* A GEMM's backward: the input gradient dX(m, k) = dY(m, n) . W(n, k) and the weight gradient
 * dW(k, n) = X^T(k, m) . dY(m, n): twice the forward FLOPs. */
void zp_emit_gemm_bwd(zp_builder *b, int dgrad, int wgrad, double m, double n, double k, double batch)
{
    zp_emit_gemm(b, dgrad, m, k, n, batch);
    zp_emit_gemm(b, wgrad, k, n, m, batch);
}

/* An element-wise op over `elems` elements; its bytes are its row's (the kernels it stands for, in 16-bit
 * activations, scaled to the plan's element size; less its dropout's where the model has none) where the
 * row has them, else `bytes`. */
void zp_emit_eltwise(zp_builder *b, int type, double bytes, double elems)
{
    zp_emit_tp_flush(b);
    if (zp_emit_skipped(b))
        return;
    zp_op *o = zp_builder_push(b, ZP_STREAM_COMPUTE, type);
    const zp_op_info *in = &zp_op_table[type];
    const double per = in->eltbytes - ((b->m->no_dropout & in->dropout) ? in->dropbytes : 0.0);
    o->bytes = in->eltbytes > 0 ? elems * per * b->p->param_bytes / 2.0 : bytes;
    o->elems = elems;
    o->flash = flash_of(b, type);
}

/* A collective or copy of `bytes` on stream s (its kind's facts are the table's). */
void zp_emit_move(zp_builder *b, int s, int type, double bytes)
{
    if (s != ZP_STREAM_TP)
        zp_emit_tp_flush(b);
    if (zp_emit_skipped(b))
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
int zp_emit_micro(int64_t u) { return u < INT_MAX ? (int)u : INT_MAX; }

void zp_emit_signal(zp_builder *b, int s, zp_channel c) { channel_op(b, s, ZP_OPK_SIGNAL, c); }
void zp_emit_wait(zp_builder *b, int s, zp_channel c) { channel_op(b, s, ZP_OPK_WAIT, c); }

/* ---- Megatron's MP collectives, with or without sequence parallelism (Korthikanti et al. 2022) ---- */

/* Tokens an element-wise kernel outside the attention and MLP walks on one MP rank: all T of them, or
 * with sequence parallelism the rank's T/t. */
double zp_emit_sp_tokens(const zp_builder *b, double T) { return b->p->sp ? T / (double)b->p->mp : T; }

/* After a row-parallel GEMM: its partial sums (T·h fp16) all-reduced over the MP group, or with sequence
 * parallelism reduce-scattered along the sequence (nothing without MP). */
void zp_emit_mp_reduce(zp_builder *b, double bytes)
{
    if (b->p->mp > 1)
        zp_emit_move(b, ZP_STREAM_COMPUTE, b->p->sp ? ZP_OPK_MP_REDUCE_SCATTER : ZP_OPK_MP_ALLREDUCE, bytes);
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

void zp_emit_tp_flush(zp_builder *b)
{
    const double bytes = b->tp_ag;
    if (!(bytes > 0))
        return;
    b->tp_ag = 0;
    zp_emit_move(b, ZP_STREAM_COMPUTE, ZP_OPK_MP_ALLGATHER, bytes);
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
    zp_emit_signal(b, ZP_STREAM_COMPUTE, ZP_CH_TP_GO);
    zp_emit_wait(b, ZP_STREAM_TP, ZP_CH_TP_GO);
    for (int i = 1; i < t; i++) {
        zp_emit_move(b, ZP_STREAM_TP, ZP_OPK_TP_AG_STEP, bytes / t);
        zp_emit_signal(b, ZP_STREAM_TP, ZP_CH_TP_DONE);
    }
    for (int i = 0; i < t; i++) {
        if (i > 0)
            zp_emit_wait(b, ZP_STREAM_COMPUTE, ZP_CH_TP_DONE);
        gemm_push(b, type, m / t, n, k, 1);
    }
    return 1;
}

/* One chunk of the tp stream's work once the compute stream has its data: `op` of `bytes`. */
static void tp_chunk(zp_builder *b, int op, double bytes)
{
    zp_emit_signal(b, ZP_STREAM_COMPUTE, ZP_CH_TP_GO);
    zp_emit_wait(b, ZP_STREAM_TP, ZP_CH_TP_GO);
    zp_emit_move(b, ZP_STREAM_TP, op, bytes);
    zp_emit_signal(b, ZP_STREAM_TP, ZP_CH_TP_DONE);
}

/* A row-parallel GEMM (m token rows, its output partial sums) with its reduce-scatter of `bytes` pipelined
 * behind its chunks: TE's num_splits chunks each reduce-scattered by userbuffers' kernel, or async TP's t
 * chunks (the peers' first, each copied to its owner; its own last) and the sum of the t partials. */
static void tp_gemm_rs(zp_builder *b, int type, double m, double n, double k, double bytes)
{
    const int te = b->p->tp_overlap == ZP_TP_OVERLAP_TE, t = (int)b->p->mp, c = te ? ZP_TE_RS_SPLITS : t;
    b->flops += 2.0 * m * n * k;
    zp_emit_tp_flush(b);
    for (int i = 0; i < c; i++) {
        gemm_push(b, type, m / c, n, k, 1);
        if (te)
            tp_chunk(b, ZP_OPK_TP_RS_CHUNK, bytes / c);
        else if (i < c - 1)
            tp_chunk(b, ZP_OPK_TP_RS_STEP, bytes / c);
    }
    for (int i = 0; i < (te ? c : c - 1); i++)
        zp_emit_wait(b, ZP_STREAM_COMPUTE, ZP_CH_TP_DONE);
    if (!te && !zp_emit_skipped(b)) { /* t partial chunks of bytes / t read, the reduced one written */
        zp_op *o = zp_builder_push(b, ZP_STREAM_COMPUTE, ZP_OPK_TP_PARTIAL_SUM);
        o->bytes = (t + 1.0) * bytes / t;
        o->elems = bytes / t / b->p->param_bytes;
    }
}

/* Before a column-parallel GEMM (and, in backward, before a row-parallel GEMM's input gradient): the
 * sequence-parallel shards all-gathered; nothing without sequence parallelism. With TP overlap it waits for
 * the GEMM that consumes it (tp_ag_gemm). */
void zp_emit_mp_gather(zp_builder *b, double bytes)
{
    if (!(b->p->mp > 1 && b->p->sp))
        return;
    zp_emit_tp_flush(b);
    if (tp_overlapped(b))
        b->tp_ag = bytes;
    else
        zp_emit_move(b, ZP_STREAM_COMPUTE, ZP_OPK_MP_ALLGATHER, bytes);
}

/* A row-parallel GEMM and the reduce-scatter (or all-reduce) of its partial sums over MP (`bytes`; 0: none
 * follows it here): pipelined with TP overlap, else one after the other. */
void zp_emit_gemm_rs(zp_builder *b, int type, double m, double n, double k, double bytes)
{
    if (bytes > 0 && tp_overlapped(b)) {
        tp_gemm_rs(b, type, m, n, k, bytes);
        return;
    }
    zp_emit_gemm(b, type, m, n, k, 1);
    if (bytes > 0)
        zp_emit_mp_reduce(b, bytes);
}

/* A column-parallel GEMM's backward (gemm_bwd's shapes) and the reduce-scatter (or all-reduce) of its input
 * gradient over MP (`bytes`): with TP overlap, TE's bulk reduce-scatter beside the weight gradient, or async
 * TP's pipelined behind the input gradient; else after both. */
void zp_emit_gemm_bwd_rs(zp_builder *b, int dgrad, int wgrad, double m, double n, double k, double bytes)
{
    if (!tp_overlapped(b)) {
        zp_emit_gemm_bwd(b, dgrad, wgrad, m, n, k, 1);
        zp_emit_mp_reduce(b, bytes);
        return;
    }
    if (b->p->tp_overlap == ZP_TP_OVERLAP_ASYNC) {
        tp_gemm_rs(b, dgrad, m, k, n, bytes);
        zp_emit_gemm(b, wgrad, k, n, m, 1);
        return;
    }
    zp_emit_gemm(b, dgrad, m, k, n, 1);
    tp_chunk(b, ZP_OPK_TP_RS_CHUNK, bytes);
    zp_emit_gemm(b, wgrad, k, n, m, 1);
    zp_emit_wait(b, ZP_STREAM_COMPUTE, ZP_CH_TP_DONE);
}
