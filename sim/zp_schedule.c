/* zp_schedule.c — the step's structure: per micro-batch the forward (embedding, blocks, LM head), the
 * backward (each block recomputed first under checkpointing) with gradient buckets reduced as they fill,
 * stage 3's parameter gathers one group ahead, Pa/Pa+cpu, then the optimizer (on the device, or on the
 * host with ZeRO-Offload) and the stage-1/2 parameter all-gather. Memory changes go through the plan's
 * layout (zp_layout.c); the program order is zp_schedule_walk's. */
#include "zp_schedule_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

zp_op *zp_builder_push(zp_builder *b, int s, int type)
{
    if (b->st != ZP_OK)
        return NULL;
    zp_opvec *v = s < 0 ? &b->setup : &b->s[s];
    if (v->n == v->cap) {
        int cap = v->cap ? 2 * v->cap : 256;
        zp_op *nv = realloc(v->v, (size_t)cap * sizeof *nv);
        if (!nv) {
            b->st = ZP_FAIL(ZP_ENOMEM, "out of memory building the schedule");
            return NULL;
        }
        v->v = nv;
        v->cap = cap;
    }
    zp_op *o = &v->v[v->n++];
    memset(o, 0, sizeof *o);
    o->type = type;
    o->stream = s < 0 ? ZP_STREAM_COMPUTE : (zp_stream)s;
    o->phase = s < 0 ? ZP_PHASE_SETUP : b->phase;
    o->micro = s < 0 ? 0 : b->micro;
    o->layer = s < 0 ? -1 : b->layer;
    o->batch = 1;
    o->item = -1;
    o->id = -1;
    return o;
}

void zp_builder_mem(zp_builder *b, int s, int alloc, zp_buf buf, int index, zp_mem_cat cat, double bytes)
{
    zp_op *o = zp_builder_push(b, s, alloc ? ZP_OPK_ALLOC : ZP_OPK_FREE);
    if (o) {
        o->buf = buf;
        o->item = index;
        o->cat = cat;
        o->bytes = bytes;
    }
}

/* Ops that take no memory and do not order the streams: left out of a memory-only schedule. */
static int skip(const zp_builder *b) { return b->memory_only || b->st != ZP_OK; }

static void gemm(zp_builder *b, int type, double m, double n, double k, double batch)
{
    b->flops += 2.0 * m * n * k * batch;
    if (skip(b))
        return;
    zp_op *o = zp_builder_push(b, ZP_STREAM_COMPUTE, type);
    o->m = m;
    o->n = n;
    o->k = k;
    o->batch = batch;
    o->flops = 2.0 * m * n * k * batch;
}

/* A GEMM's backward: the input gradient dX(m, k) = dY(m, n) . W(n, k) and the weight gradient
 * dW(k, n) = X^T(k, m) . dY(m, n): twice the forward FLOPs. */
static void gemm_bwd(zp_builder *b, int dgrad, int wgrad, double m, double n, double k, double batch)
{
    gemm(b, dgrad, m, k, n, batch);
    gemm(b, wgrad, k, n, m, batch);
}

static void eltwise(zp_builder *b, int type, double bytes, double elems)
{
    if (skip(b))
        return;
    zp_op *o = zp_builder_push(b, ZP_STREAM_COMPUTE, type);
    o->bytes = bytes;
    o->elems = elems;
}

/* A collective or copy of `bytes` on stream s (its kind's facts are the table's). */
static void move(zp_builder *b, int s, int type, double bytes)
{
    if (skip(b))
        return;
    zp_builder_push(b, s, type)->bytes = bytes;
}

/* A signal or wait on channel c (left out of a collapsed memory-only schedule: see zp_schedule_impl.h). */
static void channel_op(zp_builder *b, int s, int type, zp_channel c)
{
    zp_op *o = b->collapse ? NULL : zp_builder_push(b, s, type);
    if (o)
        o->channel = c;
}

static void sig(zp_builder *b, int s, zp_channel c) { channel_op(b, s, ZP_OPK_SIGNAL, c); }
static void wait_ch(zp_builder *b, int s, zp_channel c) { channel_op(b, s, ZP_OPK_WAIT, c); }

/* Forward of one block on the compute stream (also its recompute). Shapes per MP rank:
 * T = b*s tokens, t = MP degree, Megatron's column-split QKV and MLP-up, row-split projection and
 * MLP-down, one all-reduce of T*h fp16 after each row-split GEMM. */
static void block_forward(zp_builder *b)
{
    const zp_model *m = b->m;
    const double t = (double)b->p->mp, bs = (double)b->p->micro_batch, s = (double)m->seq;
    const double h = (double)m->hidden, f = (double)m->ffn, a = (double)m->heads, T = bs * s;
    const int mp = b->p->mp > 1;
    eltwise(b, ZP_OPK_LAYERNORM1, 2.0 * 2.0 * T * h, T * h);
    gemm(b, ZP_OPK_QKV, T, 3.0 * h / t, h, 1);
    gemm(b, ZP_OPK_ATTN_SCORES, s, s, h / a, bs * a / t);
    eltwise(b, ZP_OPK_SOFTMAX, 3.0 * 2.0 * bs * (a / t) * s * s, bs * (a / t) * s * s);
    gemm(b, ZP_OPK_ATTN_CONTEXT, s, h / a, s, bs * a / t);
    gemm(b, ZP_OPK_ATTN_PROJ, T, h, h / t, 1);
    if (mp)
        move(b, ZP_STREAM_COMPUTE, ZP_OPK_MP_ALLREDUCE, 2.0 * T * h);
    eltwise(b, ZP_OPK_RESID_LN2, 3.0 * 2.0 * 2.0 * T * h, T * h);
    gemm(b, ZP_OPK_MLP_UP, T, f / t, h, 1);
    eltwise(b, ZP_OPK_GELU, 2.0 * 2.0 * T * f / t, T * f / t);
    gemm(b, ZP_OPK_MLP_DOWN, T, h, f / t, 1);
    if (mp)
        move(b, ZP_STREAM_COMPUTE, ZP_OPK_MP_ALLREDUCE, 2.0 * T * h);
    eltwise(b, ZP_OPK_RESID, 2.0 * 2.0 * 2.0 * T * h, T * h);
}

static void block_backward(zp_builder *b)
{
    const zp_model *m = b->m;
    const double t = (double)b->p->mp, bs = (double)b->p->micro_batch, s = (double)m->seq;
    const double h = (double)m->hidden, f = (double)m->ffn, a = (double)m->heads, T = bs * s;
    const int mp = b->p->mp > 1;
    eltwise(b, ZP_OPK_RESID_BWD, 2.0 * 2.0 * 2.0 * T * h, T * h);
    gemm_bwd(b, ZP_OPK_MLP_DOWN_DGRAD, ZP_OPK_MLP_DOWN_WGRAD, T, h, f / t, 1);
    eltwise(b, ZP_OPK_GELU_BWD, 3.0 * 2.0 * T * f / t, T * f / t);
    gemm_bwd(b, ZP_OPK_MLP_UP_DGRAD, ZP_OPK_MLP_UP_WGRAD, T, f / t, h, 1);
    if (mp)
        move(b, ZP_STREAM_COMPUTE, ZP_OPK_MP_ALLREDUCE, 2.0 * T * h);
    eltwise(b, ZP_OPK_LAYERNORM2_BWD, 3.0 * 2.0 * 2.0 * T * h, T * h);
    gemm_bwd(b, ZP_OPK_ATTN_PROJ_DGRAD, ZP_OPK_ATTN_PROJ_WGRAD, T, h, h / t, 1);
    gemm_bwd(b, ZP_OPK_ATTN_CONTEXT_DGRAD, ZP_OPK_ATTN_CONTEXT_WGRAD, s, h / a, s, bs * a / t);
    eltwise(b, ZP_OPK_SOFTMAX_BWD, 3.0 * 2.0 * bs * (a / t) * s * s, bs * (a / t) * s * s);
    gemm_bwd(b, ZP_OPK_ATTN_SCORES_DGRAD, ZP_OPK_ATTN_SCORES_WGRAD, s, s, h / a, bs * a / t);
    gemm_bwd(b, ZP_OPK_QKV_DGRAD, ZP_OPK_QKV_WGRAD, T, 3.0 * h / t, h, 1);
    if (mp)
        move(b, ZP_STREAM_COMPUTE, ZP_OPK_MP_ALLREDUCE, 2.0 * T * h);
    eltwise(b, ZP_OPK_LAYERNORM1_BWD, 2.0 * 2.0 * 2.0 * T * h, T * h);
}

/* Stage 3: the comm stream gathers the groups of one pass ahead of the compute stream (prefetch of
 * one group): group 0 at once, group i after compute signalled it started group i-1. Reductions
 * closed by group i land on the comm stream after the gather of group i+1, so neither waits for
 * the other. Without overlap_comm the gathers run on the compute stream, where the block needs them. */
static void gather_item(zp_builder *b, int first, int item)
{
    const double params = b->f.gather[item];
    const int ov = b->p->overlap_comm, cs = ov ? ZP_STREAM_COMM : ZP_STREAM_COMPUTE;
    if (!first && ov)
        wait_ch(b, ZP_STREAM_COMM, ZP_CH_GATHER_GO);
    if (b->p->offload == ZP_OFFLOAD_PARAMS) /* the local fp16 partition comes from the host first */
        move(b, cs, ZP_OPK_PARAM_FETCH, b->p->param_bytes * params / (double)b->p->dp);
    b->lay->gather(b, cs, item);
    move(b, cs, ZP_OPK_PARAM_GATHER, b->p->param_bytes * params);
    if (!skip(b))
        b->s[cs].v[b->s[cs].n - 1].item = item;
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
} buckets;

/* Adds `params` gradients to the open bucket; closes (signals) full buckets. */
static void bucket_add(zp_builder *b, buckets *k, double params, int flush)
{
    k->filled += params;
    while (k->filled >= k->bucket || (flush && k->filled > 0)) {
        double n = fmin(k->filled, k->bucket);
        k->filled -= n;
        if (k->reduce) {
            const int type = b->p->stage >= 2 ? ZP_OPK_GRAD_REDUCE_SCATTER : ZP_OPK_GRAD_ALLREDUCE;
            const double bytes = zp_plan_grad_bytes(b->p) * n; /* fp32 gradients reduce in fp32 */
            if (!b->p->overlap_comm) {
                /* overlap_comm off: the reduction blocks the compute stream */
                move(b, ZP_STREAM_COMPUTE, type, bytes);
                sig(b, ZP_STREAM_COMPUTE, ZP_CH_BUCKET);
                wait_ch(b, ZP_STREAM_COMM, ZP_CH_BUCKET);
            } else {
                sig(b, ZP_STREAM_COMPUTE, ZP_CH_BUCKET);
                wait_ch(b, ZP_STREAM_COMM, ZP_CH_BUCKET); /* the comm stream's reduction of this bucket */
                move(b, ZP_STREAM_COMM, type, bytes);
            }
            sig(b, ZP_STREAM_COMM, ZP_CH_REDUCED);
            if (k->last_micro && b->p->offload != ZP_OFFLOAD_NONE) {
                /* ZeRO-Offload: the reduced partition of the bucket goes to the host as soon as it is ready */
                sig(b, ZP_STREAM_COMM, ZP_CH_BUCKET_D2H);
                wait_ch(b, ZP_STREAM_PCIE, ZP_CH_BUCKET_D2H);
                move(b, ZP_STREAM_PCIE, ZP_OPK_GRAD_D2H, bytes / (double)b->p->dp);
                sig(b, ZP_STREAM_PCIE, ZP_CH_GRAD_HOST);
            }
            k->closed++;
        }
        if (k->filled <= 0)
            break;
    }
}

/* Pa+cpu: fetch the checkpoint partition of the block below over PCIe once compute asks for it. */
static void ckpt_fetch(zp_builder *b, double bytes)
{
    sig(b, ZP_STREAM_COMPUTE, ZP_CH_CKPT_IN_GO);
    wait_ch(b, ZP_STREAM_PCIE, ZP_CH_CKPT_IN_GO);
    move(b, ZP_STREAM_PCIE, ZP_OPK_CKPT_H2D, bytes);
    sig(b, ZP_STREAM_PCIE, ZP_CH_CKPT_IN);
}

static void micro_batch(zp_builder *b, int u, int last_micro, double bucket_params, int *nbuckets)
{
    const zp_plan *p = b->p;
    const zp_model *m = b->m;
    const int L = (int)m->layers;
    const double t = (double)p->mp, bs = (double)p->micro_batch, s = (double)m->seq, h = (double)m->hidden;
    const double V = (double)m->vocab, T = bs * s;
    const int stage3 = p->stage == 3, pacpu = p->checkpoint && p->pa_cpu;
    const double ckpt_part = 2.0 * T * h / t; /* a checkpoint's bytes per MP rank with Pa */
    b->micro = u;

    /* ---- forward: items 0 (embedding), 1..L (blocks), L+1 (LM head) ---- */
    b->phase = ZP_PHASE_FORWARD;
    b->layer = -1;
    if (stage3)
        gather_item(b, 1, 0);
    for (int item = 0; item <= L + 1; item = b->collapse && item == 1 ? L + 1 : item + 1) {
        b->layer = (item >= 1 && item <= L) ? item - 1 : -1;
        b->repeat = b->collapse && b->layer >= 0 ? (double)L : 1.0;
        if (stage3) {
            use_gathered(b, item == L + 1);
            if (item < L + 1) /* prefetch the next group while this one computes */
                gather_item(b, 0, item + 1);
            b->lay->use(b, item);
        }
        if (item == 0) {
            eltwise(b, ZP_OPK_EMBEDDING, 2.0 * 2.0 * T * h, T * h);
            if (p->mp > 1) /* vocab-parallel embedding: partial sums all-reduced */
                move(b, ZP_STREAM_COMPUTE, ZP_OPK_MP_ALLREDUCE, 2.0 * T * h);
        } else if (item <= L) {
            b->lay->block_begin(b, item - 1);
            block_forward(b);
            b->lay->block_end(b, item - 1);
            if (pacpu) {
                sig(b, ZP_STREAM_COMPUTE, ZP_CH_CKPT_OUT);
                wait_ch(b, ZP_STREAM_PCIE, ZP_CH_CKPT_OUT);
                move(b, ZP_STREAM_PCIE, ZP_OPK_CKPT_D2H, ckpt_part);
            }
        } else {
            eltwise(b, ZP_OPK_FINAL_LN, 2.0 * 2.0 * T * h, T * h);
            b->lay->logits(b);
            gemm(b, ZP_OPK_LM_HEAD, T, V / t, h, 1);
            eltwise(b, ZP_OPK_XENT, 2.0 * T * (V / t) * (2.0 + 4.0), T * (V / t));
        }
    }

    /* ---- backward: LM head, blocks L-1..0 (each recomputed first), embedding. Prefetches (stage-3
     * gathers, Pa+cpu checkpoint fetches) of the next group are queued before the reductions of the
     * current one, so a reduction never delays the next group's data. ---- */
    b->phase = ZP_PHASE_BACKWARD;
    buckets k = {.bucket = bucket_params, .reduce = (p->stage >= 2) || last_micro, .last_micro = last_micro};
    b->layer = -1;
    if (stage3)
        gather_item(b, 1, L + 1);
    if (pacpu) {
        b->layer = L - 1;
        ckpt_fetch(b, ckpt_part); /* block L-1's checkpoint */
    }
    for (int item = L + 1; item >= 1; item = b->collapse && item == L + 1 ? 1 : item - 1) {
        b->layer = item <= L ? item - 1 : -1;
        b->repeat = b->collapse && b->layer >= 0 ? (double)L : 1.0;
        b->phase = ZP_PHASE_BACKWARD;
        if (stage3) {
            use_gathered(b, item == 1);
            if (item > 1)
                gather_item(b, 0, item - 1);
            b->lay->use(b, item);
        }
        if (item == L + 1) {
            eltwise(b, ZP_OPK_XENT_BWD, 2.0 * T * (V / t) * (2.0 + 4.0), T * (V / t));
            gemm_bwd(b, ZP_OPK_LM_HEAD_DGRAD, ZP_OPK_LM_HEAD_WGRAD, T, V / t, h, 1);
            if (p->mp > 1)
                move(b, ZP_STREAM_COMPUTE, ZP_OPK_MP_ALLREDUCE, 2.0 * T * h);
            eltwise(b, ZP_OPK_FINAL_LN_BWD, 3.0 * 2.0 * T * h, T * h);
            continue; /* the tied embedding's gradient completes with the embedding backward */
        }
        if (p->checkpoint) {
            b->phase = ZP_PHASE_RECOMPUTE;
            if (pacpu) {
                wait_ch(b, ZP_STREAM_COMPUTE, ZP_CH_CKPT_IN);
                if (item > 1) /* prefetch the checkpoint of the block below */
                    ckpt_fetch(b, ckpt_part);
            }
            if ((p->pa || p->pa_cpu) && p->mp > 1)
                move(b, ZP_STREAM_COMPUTE, ZP_OPK_PA_ALLGATHER, 2.0 * T * h);
            block_forward(b);
            b->phase = ZP_PHASE_BACKWARD;
        }
        block_backward(b);
        b->lay->block_done(b, item - 1);
        bucket_add(b, &k, b->f.grad[item], 0);
    }
    /* embedding backward: scatter-add into the tied embedding's gradient (stage 3 gathers nothing for
     * it: a scatter-add needs no weights), then the last bucket */
    b->layer = -1;
    b->repeat = 1.0;
    if (stage3)
        b->lay->use(b, -1);
    eltwise(b, ZP_OPK_EMBEDDING_BWD, 2.0 * 2.0 * T * h, T * h);
    bucket_add(b, &k, b->f.grad[0], 1);
    b->lay->micro_end(b);
    *nbuckets = k.closed;
    if (k.reduce)
        for (int i = 0; i < k.closed; i++)
            wait_ch(b, ZP_STREAM_COMPUTE, ZP_CH_REDUCED);
}

/* The optimizer on the local partition, and the stage-1/2 all-gather of the updated parameters. */
static void optimizer(zp_builder *b, double bucket, int nb)
{
    const zp_plan *plan = b->p;
    b->phase = ZP_PHASE_OPTIMIZER;
    b->layer = -1;
    b->micro = (int)plan->grad_accum - 1;
    const double psi = b->f.psi, part = psi / (plan->stage >= 1 ? (double)plan->dp : 1.0);
    const int stage12 = plan->stage == 1 || plan->stage == 2;
    if (plan->offload == ZP_OFFLOAD_NONE) {
        if (!skip(b))
            zp_builder_push(b, ZP_STREAM_COMPUTE, ZP_OPK_ADAM)->bytes = part;
        if (stage12)
            sig(b, ZP_STREAM_COMPUTE, ZP_CH_UPDATED);
    } else {
        for (int i = 0; i < nb; i++)
            wait_ch(b, ZP_STREAM_CPU, ZP_CH_GRAD_HOST);
        if (!skip(b))
            zp_builder_push(b, ZP_STREAM_CPU, ZP_OPK_CPU_ADAM)->bytes = part;
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
        for (double left = psi; left > 0; left -= bucket)
            move(b, ZP_STREAM_COMM, ZP_OPK_PARAM_ALLGATHER, plan->param_bytes * fmin(left, bucket));
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

static zp_status build(const zp_model *model, const zp_plan *plan, int memory_only, zp_schedule *out)
{
    memset(out, 0, sizeof *out);
    ZP_TRY(zp_model_validate(model));
    ZP_TRY(zp_plan_validate(plan));
    zp_builder b = {.m = model, .p = plan, .lay = zp_layout_get(plan->impl), .st = ZP_OK,
                    .memory_only = memory_only, .item = -1, .repeat = 1.0};
    if (!b.lay)
        return ZP_FAIL(ZP_EINVAL, "schedule: unknown implementation %d", (int)plan->impl);
    b.collapse = memory_only && b.lay->compute_only;
    ZP_TRY(b.lay->facts(model, plan, &b.f));
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
    int nb = 0;
    const int ga = (int)plan->grad_accum;
    for (int u = 0; u < ga && b.st == ZP_OK; u++) {
        if (memory_only && u > 0 && u < ga - 1) {
            u = ga - 2; /* the micro-batches between the first and the last allocate exactly as the first */
            continue;
        }
        micro_batch(&b, u, u == ga - 1, bucket, &nb);
    }
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
    builder_free(&b);
    int next = 0;
    zp_status st = zp_schedule_walk(out, 1, -1, number, &next);
    out->nops = next;
    if (st != ZP_OK)
        zp_schedule_free(out);
    return st;
}

zp_status zp_schedule_build(const zp_model *model, const zp_plan *plan, zp_schedule *out)
{
    return build(model, plan, 0, out);
}

zp_status zp_schedule_build_memory(const zp_model *model, const zp_plan *plan, zp_schedule *out)
{
    return build(model, plan, 1, out);
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
