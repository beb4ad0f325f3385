#include "zp_schedule.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Ops are built per stream (each stream's order is what matters) and concatenated at the end. */
typedef struct {
    zp_op *v;
    int n, cap;
} opvec;

typedef struct {
    const zp_model *m;
    const zp_plan *p;
    const double *items; /* exact group sizes (zp_schedule_build_items) or NULL */
    opvec s[ZP_NSTREAMS];
    zp_status st;
    double flops;
    int micro;
    zp_phase phase;
    int layer;
} builder;

static zp_op *push(builder *b, zp_stream stream, zp_op_kind kind, const char *name)
{
    if (b->st != ZP_OK)
        return NULL;
    opvec *v = &b->s[stream];
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
    o->kind = kind;
    o->stream = stream;
    o->name = name;
    o->micro = b->micro;
    o->phase = b->phase;
    o->layer = b->layer;
    o->batch = 1;
    o->item = -1;
    return o;
}

static void gemm(builder *b, const char *name, double m, double n, double k, double batch)
{
    zp_op *o = push(b, ZP_STREAM_COMPUTE, ZP_OP_COMPUTE, name);
    if (!o)
        return;
    o->ckind = batch > 1 ? ZP_CK_BGEMM : ZP_CK_GEMM;
    o->m = m;
    o->n = n;
    o->k = k;
    o->batch = batch;
    o->flops = 2.0 * m * n * k * batch;
    b->flops += o->flops;
}

/* A GEMM's backward: the input gradient dX(m, k) = dY(m, n) . W(n, k) and the weight gradient
 * dW(k, n) = X^T(k, m) . dY(m, n): twice the forward FLOPs. */
static void gemm_bwd(builder *b, const char *dgrad, const char *wgrad, double m, double n, double k, double batch)
{
    gemm(b, dgrad, m, k, n, batch);
    gemm(b, wgrad, k, n, m, batch);
}

static void eltwise(builder *b, const char *name, double bytes, double elems)
{
    zp_op *o = push(b, ZP_STREAM_COMPUTE, ZP_OP_COMPUTE, name);
    if (o) {
        o->ckind = ZP_CK_ELEMENTWISE;
        o->bytes = bytes;
        o->elems = elems;
    }
}

static void coll(builder *b, zp_stream s, const char *name, zp_coll_kind kind, zp_group g, double bytes)
{
    zp_op *o = push(b, s, ZP_OP_COLL, name);
    if (o) {
        o->coll = kind;
        o->group = g;
        o->bytes = bytes;
    }
}

static void copy(builder *b, zp_stream s, const char *name, zp_copy_dir dir, double bytes)
{
    zp_op *o = push(b, s, ZP_OP_COPY, name);
    if (o) {
        o->dir = dir;
        o->bytes = bytes;
    }
}

static void sig(builder *b, zp_stream s, zp_channel c)
{
    zp_op *o = push(b, s, ZP_OP_SIGNAL, "signal");
    if (o)
        o->channel = c;
}

static void wait_ch(builder *b, zp_stream s, zp_channel c)
{
    zp_op *o = push(b, s, ZP_OP_WAIT, "wait");
    if (o)
        o->channel = c;
}

/* Forward of one block on the compute stream (also its recompute). Shapes per MP rank:
 * T = b*s tokens, t = MP degree, Megatron's column-split QKV and MLP-up, row-split projection and
 * MLP-down, one all-reduce of T*h fp16 after each row-split GEMM. */
static void block_forward(builder *b)
{
    const zp_model *m = b->m;
    const double t = (double)b->p->mp, bs = (double)b->p->micro_batch, s = (double)m->seq;
    const double h = (double)m->hidden, f = (double)m->ffn, a = (double)m->heads, T = bs * s;
    eltwise(b, "layernorm1", 2.0 * 2.0 * T * h, T * h);
    gemm(b, "qkv", T, 3.0 * h / t, h, 1);
    gemm(b, "attn_scores", s, s, h / a, bs * a / t);
    eltwise(b, "softmax_dropout", 3.0 * 2.0 * bs * (a / t) * s * s, bs * (a / t) * s * s);
    gemm(b, "attn_context", s, h / a, s, bs * a / t);
    gemm(b, "attn_proj", T, h, h / t, 1);
    if (b->p->mp > 1)
        coll(b, ZP_STREAM_COMPUTE, "mp_allreduce", ZP_COLL_ALLREDUCE, ZP_GROUP_MP, 2.0 * T * h);
    eltwise(b, "residual_dropout_layernorm2", 3.0 * 2.0 * 2.0 * T * h, T * h);
    gemm(b, "mlp_up", T, f / t, h, 1);
    eltwise(b, "gelu", 2.0 * 2.0 * T * f / t, T * f / t);
    gemm(b, "mlp_down", T, h, f / t, 1);
    if (b->p->mp > 1)
        coll(b, ZP_STREAM_COMPUTE, "mp_allreduce", ZP_COLL_ALLREDUCE, ZP_GROUP_MP, 2.0 * T * h);
    eltwise(b, "residual_dropout", 2.0 * 2.0 * 2.0 * T * h, T * h);
}

static void block_backward(builder *b)
{
    const zp_model *m = b->m;
    const double t = (double)b->p->mp, bs = (double)b->p->micro_batch, s = (double)m->seq;
    const double h = (double)m->hidden, f = (double)m->ffn, a = (double)m->heads, T = bs * s;
    eltwise(b, "residual_dropout_bwd", 2.0 * 2.0 * 2.0 * T * h, T * h);
    gemm_bwd(b, "mlp_down_dgrad", "mlp_down_wgrad", T, h, f / t, 1);
    eltwise(b, "gelu_bwd", 3.0 * 2.0 * T * f / t, T * f / t);
    gemm_bwd(b, "mlp_up_dgrad", "mlp_up_wgrad", T, f / t, h, 1);
    if (b->p->mp > 1)
        coll(b, ZP_STREAM_COMPUTE, "mp_allreduce", ZP_COLL_ALLREDUCE, ZP_GROUP_MP, 2.0 * T * h);
    eltwise(b, "layernorm2_bwd", 3.0 * 2.0 * 2.0 * T * h, T * h);
    gemm_bwd(b, "attn_proj_dgrad", "attn_proj_wgrad", T, h, h / t, 1);
    gemm_bwd(b, "attn_context_dgrad", "attn_context_wgrad", s, h / a, s, bs * a / t);
    eltwise(b, "softmax_dropout_bwd", 3.0 * 2.0 * bs * (a / t) * s * s, bs * (a / t) * s * s);
    gemm_bwd(b, "attn_scores_dgrad", "attn_scores_wgrad", s, s, h / a, bs * a / t);
    gemm_bwd(b, "qkv_dgrad", "qkv_wgrad", T, 3.0 * h / t, h, 1);
    if (b->p->mp > 1)
        coll(b, ZP_STREAM_COMPUTE, "mp_allreduce", ZP_COLL_ALLREDUCE, ZP_GROUP_MP, 2.0 * T * h);
    eltwise(b, "layernorm1_bwd", 2.0 * 2.0 * 2.0 * T * h, T * h);
}

/* The parameter groups in the order forward visits them: the tied embedding, the blocks, and the
 * embedding again as the LM head. Sizes are per MP rank. */
static double item_params(const builder *b, int item)
{
    int L = (int)b->m->layers;
    if (b->items)
        return b->items[item];
    if (item == 0 || item == L + 1)
        return zp_model_params_embedding(b->m) / (double)b->p->mp;
    return zp_model_params_layer(b->m) / (double)b->p->mp;
}

/* Stage 3: the comm stream gathers the groups of one pass ahead of the compute stream (prefetch of
 * one group): group 0 at once, group i after compute signalled it started group i-1. Reductions
 * closed by group i land on the comm stream after the gather of group i+1, so neither waits for
 * the other. */
/* Without overlap_comm the gathers run on the compute stream, where the block needs them. */
static void gather_item(builder *b, int first, int item)
{
    const double params = item_params(b, item);
    zp_stream cs = b->p->overlap_comm ? ZP_STREAM_COMM : ZP_STREAM_COMPUTE;
    if (!first && b->p->overlap_comm)
        wait_ch(b, ZP_STREAM_COMM, ZP_CH_GATHER_GO);
    if (b->p->offload == ZP_OFFLOAD_PARAMS) /* the local fp16 partition comes from the host first */
        copy(b, cs, "param_h2d", ZP_COPY_H2D, b->p->param_bytes * params / (double)b->p->dp);
    coll(b, cs, "param_allgather", ZP_COLL_ALLGATHER, ZP_GROUP_DP, b->p->param_bytes * params);
    if (b->s[cs].n > 0 && b->st == ZP_OK)
        b->s[cs].v[b->s[cs].n - 1].item = item;
    if (b->p->overlap_comm)
        sig(b, ZP_STREAM_COMM, ZP_CH_GATHERED);
}

static void use_gathered(builder *b, int last)
{
    if (!b->p->overlap_comm)
        return; /* gathered in line on the compute stream */
    wait_ch(b, ZP_STREAM_COMPUTE, ZP_CH_GATHERED);
    if (!last)
        sig(b, ZP_STREAM_COMPUTE, ZP_CH_GATHER_GO);
}

typedef struct {
    double bucket;  /* parameters per bucket */
    double filled;  /* parameters in the open bucket */
    int closed;     /* buckets closed this micro-batch */
    int reduce;     /* reduce this micro-batch's buckets */
    int last_micro;
} buckets;

/* Adds `params` gradients to the open bucket; closes (signals) full buckets. Returns how many closed. */
static int bucket_add(builder *b, buckets *k, double params, int flush)
{
    int closed = 0;
    k->filled += params;
    while (k->filled >= k->bucket || (flush && k->filled > 0)) {
        double n = fmin(k->filled, k->bucket);
        k->filled -= n;
        if (k->reduce) {
            int partitioned = b->p->stage >= 2;
            const char *name = partitioned ? "grad_reduce_scatter" : "grad_allreduce";
            zp_coll_kind kind = partitioned ? ZP_COLL_REDUCE_SCATTER : ZP_COLL_ALLREDUCE;
            if (!b->p->overlap_comm) {
                /* overlap_comm off: the reduction blocks the compute stream */
                coll(b, ZP_STREAM_COMPUTE, name, kind, ZP_GROUP_DP, b->p->param_bytes * n);
                sig(b, ZP_STREAM_COMPUTE, ZP_CH_BUCKET);
                wait_ch(b, ZP_STREAM_COMM, ZP_CH_BUCKET);
            } else {
                sig(b, ZP_STREAM_COMPUTE, ZP_CH_BUCKET);
                /* the comm stream's reduction of this bucket */
                wait_ch(b, ZP_STREAM_COMM, ZP_CH_BUCKET);
                coll(b, ZP_STREAM_COMM, name, kind, ZP_GROUP_DP, b->p->param_bytes * n);
            }
            sig(b, ZP_STREAM_COMM, ZP_CH_REDUCED);
            if (k->last_micro && b->p->offload != ZP_OFFLOAD_NONE) {
                /* ZeRO-Offload: the reduced partition of the bucket goes to the host as soon as it is ready */
                sig(b, ZP_STREAM_COMM, ZP_CH_BUCKET_D2H);
                wait_ch(b, ZP_STREAM_PCIE, ZP_CH_BUCKET_D2H);
                copy(b, ZP_STREAM_PCIE, "grad_d2h", ZP_COPY_D2H, b->p->param_bytes * n / (double)b->p->dp);
                sig(b, ZP_STREAM_PCIE, ZP_CH_GRAD_HOST);
            }
            k->closed++;
        }
        closed++;
        if (k->filled <= 0)
            break;
    }
    return closed;
}

static void micro_batch(builder *b, int u, int last_micro, double bucket_params, int *nbuckets)
{
    const zp_plan *p = b->p;
    const zp_model *m = b->m;
    const int L = (int)m->layers;
    const double t = (double)p->mp, bs = (double)p->micro_batch, s = (double)m->seq, h = (double)m->hidden;
    const double V = (double)m->vocab, T = bs * s;
    const int stage3 = p->stage == 3;
    const double ckpt_part = 2.0 * T * h / t; /* a checkpoint's bytes per MP rank with Pa */
    b->micro = u;

    /* ---- forward: items 0 (embedding), 1..L (blocks), L+1 (LM head) ---- */
    b->phase = ZP_PHASE_FORWARD;
    b->layer = -1;
    if (stage3)
        gather_item(b, 1, 0);
    for (int item = 0; item <= L + 1; item++) {
        b->layer = (item >= 1 && item <= L) ? item - 1 : -1;
        if (stage3) {
            use_gathered(b, item == L + 1);
            if (item < L + 1) /* prefetch the next group while this one computes */
                gather_item(b, 0, item + 1);
        }
        if (item == 0) {
            eltwise(b, "embedding", 2.0 * 2.0 * T * h, T * h);
            if (p->mp > 1) /* vocab-parallel embedding: partial sums all-reduced */
                coll(b, ZP_STREAM_COMPUTE, "mp_allreduce", ZP_COLL_ALLREDUCE, ZP_GROUP_MP, 2.0 * T * h);
        } else if (item <= L) {
            block_forward(b);
            if (p->checkpoint && p->pa_cpu) {
                sig(b, ZP_STREAM_COMPUTE, ZP_CH_CKPT_OUT);
                wait_ch(b, ZP_STREAM_PCIE, ZP_CH_CKPT_OUT);
                copy(b, ZP_STREAM_PCIE, "ckpt_d2h", ZP_COPY_D2H, ckpt_part);
            }
        } else {
            eltwise(b, "final_layernorm", 2.0 * 2.0 * T * h, T * h);
            gemm(b, "lm_head", T, V / t, h, 1);
            eltwise(b, "softmax_cross_entropy", 2.0 * T * (V / t) * (2.0 + 4.0), T * (V / t));
        }
    }

    /* ---- backward: LM head, blocks L-1..0 (each recomputed first), embedding. Prefetches (stage-3
     * gathers, Pa+cpu checkpoint fetches) of the next group are queued before the reductions of the
     * current one, so a reduction never delays the next group's data. ---- */
    b->phase = ZP_PHASE_BACKWARD;
    buckets k = {.bucket = bucket_params, .reduce = (p->stage >= 2) || last_micro, .last_micro = last_micro};
    const int pacpu = p->checkpoint && p->pa_cpu;
    b->layer = -1;
    if (stage3)
        gather_item(b, 1, L + 1);
    if (pacpu) {
        sig(b, ZP_STREAM_COMPUTE, ZP_CH_CKPT_IN_GO); /* fetch block L-1's checkpoint */
        b->layer = L - 1;
        wait_ch(b, ZP_STREAM_PCIE, ZP_CH_CKPT_IN_GO);
        copy(b, ZP_STREAM_PCIE, "ckpt_h2d", ZP_COPY_H2D, ckpt_part);
        sig(b, ZP_STREAM_PCIE, ZP_CH_CKPT_IN);
    }
    for (int item = L + 1; item >= 1; item--) {
        b->layer = item <= L ? item - 1 : -1;
        b->phase = ZP_PHASE_BACKWARD;
        if (stage3) {
            use_gathered(b, item == 1);
            if (item > 1)
                gather_item(b, 0, item - 1);
        }
        if (item == L + 1) {
            eltwise(b, "softmax_cross_entropy_bwd", 2.0 * T * (V / t) * (2.0 + 4.0), T * (V / t));
            gemm_bwd(b, "lm_head_dgrad", "lm_head_wgrad", T, V / t, h, 1);
            if (p->mp > 1)
                coll(b, ZP_STREAM_COMPUTE, "mp_allreduce", ZP_COLL_ALLREDUCE, ZP_GROUP_MP, 2.0 * T * h);
            eltwise(b, "final_layernorm_bwd", 3.0 * 2.0 * T * h, T * h);
            continue; /* the tied embedding's gradient completes with the embedding backward */
        }
        if (p->checkpoint) {
            b->phase = ZP_PHASE_RECOMPUTE;
            if (pacpu) {
                wait_ch(b, ZP_STREAM_COMPUTE, ZP_CH_CKPT_IN);
                if (item > 1) { /* prefetch the checkpoint of the block below */
                    sig(b, ZP_STREAM_COMPUTE, ZP_CH_CKPT_IN_GO);
                    wait_ch(b, ZP_STREAM_PCIE, ZP_CH_CKPT_IN_GO);
                    copy(b, ZP_STREAM_PCIE, "ckpt_h2d", ZP_COPY_H2D, ckpt_part);
                    sig(b, ZP_STREAM_PCIE, ZP_CH_CKPT_IN);
                }
            }
            if ((p->pa || p->pa_cpu) && p->mp > 1)
                coll(b, ZP_STREAM_COMPUTE, "pa_allgather", ZP_COLL_ALLGATHER, ZP_GROUP_MP, 2.0 * T * h);
            block_forward(b);
            b->phase = ZP_PHASE_BACKWARD;
        }
        block_backward(b);
        bucket_add(b, &k, item_params(b, item), 0);
    }
    /* embedding backward: scatter-add into the tied embedding's gradient, then the last bucket */
    b->layer = -1;
    /* (stage 3 gathers nothing here: the embedding backward is a scatter-add that needs no weights) */
    eltwise(b, "embedding_bwd", 2.0 * 2.0 * T * h, T * h);
    bucket_add(b, &k, b->items ? b->items[0] : item_params(b, 0) + 2.0 * h / t, 1);
    *nbuckets = k.closed;
    if (k.reduce)
        for (int i = 0; i < k.closed; i++)
            wait_ch(b, ZP_STREAM_COMPUTE, ZP_CH_REDUCED);
}

zp_status zp_schedule_build(const zp_model *model, const zp_plan *plan, zp_schedule *out)
{
    return zp_schedule_build_items(model, plan, NULL, out);
}

zp_status zp_schedule_build_items(const zp_model *model, const zp_plan *plan, const double *items, zp_schedule *out)
{
    memset(out, 0, sizeof *out);
    ZP_TRY(zp_model_validate(model));
    ZP_TRY(zp_plan_validate(plan));
    builder b = {.m = model, .p = plan, .items = items, .st = ZP_OK};
    double psi_mp = zp_model_params(model) / (double)plan->mp;
    if (items) {
        psi_mp = 0;
        for (int64_t i = 0; i <= model->layers; i++) {
            if (!(items[i] > 0))
                return ZP_FAIL(ZP_EINVAL, "schedule: parameter group %d has %g parameters", (int)i, items[i]);
            psi_mp += items[i];
        }
    }
    const double nd = (double)plan->dp;
    /* Without CB all gradients go through one fused buffer as large as the model: one bucket. */
    double bucket = plan->cb ? fmin(plan->bucket, psi_mp) : psi_mp;
    int nb = 0;
    for (int u = 0; u < (int)plan->grad_accum && b.st == ZP_OK; u++)
        micro_batch(&b, u, u == (int)plan->grad_accum - 1, bucket, &nb);

    /* ---- optimizer on the local partition ---- */
    b.phase = ZP_PHASE_OPTIMIZER;
    b.layer = -1;
    const double part = psi_mp / (plan->stage >= 1 ? nd : 1.0);
    if (plan->offload == ZP_OFFLOAD_NONE) {
        zp_op *o = push(&b, ZP_STREAM_COMPUTE, ZP_OP_COMPUTE, "adam");
        if (o) {
            o->ckind = ZP_CK_ADAM;
            o->bytes = part;
        }
        if (plan->stage == 1 || plan->stage == 2)
            sig(&b, ZP_STREAM_COMPUTE, ZP_CH_UPDATED);
    } else {
        for (int i = 0; i < nb; i++)
            wait_ch(&b, ZP_STREAM_CPU, ZP_CH_GRAD_HOST);
        zp_op *o = push(&b, ZP_STREAM_CPU, ZP_OP_CPU, "cpu_adam");
        if (o) {
            o->ckind = ZP_CK_ADAM;
            o->bytes = part;
        }
        sig(&b, ZP_STREAM_CPU, ZP_CH_OPT_DONE);
        wait_ch(&b, ZP_STREAM_PCIE, ZP_CH_OPT_DONE);
        /* the CPU Adam writes a 16-bit copy of the updated partition and that is what goes up, whatever
         * the device computes in (the executor's fp32 expands it on the device) */
        if (plan->offload == ZP_OFFLOAD_OPTIMIZER)
            copy(&b, ZP_STREAM_PCIE, "param_h2d", ZP_COPY_H2D, 2.0 * part);
        sig(&b, ZP_STREAM_PCIE, ZP_CH_PARAMS_BACK);
        wait_ch(&b, ZP_STREAM_COMPUTE, ZP_CH_PARAMS_BACK);
        if (plan->stage == 1 || plan->stage == 2)
            sig(&b, ZP_STREAM_COMPUTE, ZP_CH_UPDATED);
    }
    if (plan->stage == 1 || plan->stage == 2) {
        /* every rank updated its partition: all-gather the fp16 parameters, bucket by bucket */
        wait_ch(&b, ZP_STREAM_COMM, ZP_CH_UPDATED);
        for (double left = psi_mp; left > 0; left -= bucket)
            coll(&b, ZP_STREAM_COMM, "param_allgather", ZP_COLL_ALLGATHER, ZP_GROUP_DP,
                 plan->param_bytes * fmin(left, bucket));
    }
    if (b.st != ZP_OK) {
        for (int i = 0; i < ZP_NSTREAMS; i++)
            free(b.s[i].v);
        return b.st;
    }
    int total = 0;
    for (int i = 0; i < ZP_NSTREAMS; i++)
        total += b.s[i].n;
    out->ops = malloc((size_t)(total ? total : 1) * sizeof *out->ops);
    if (!out->ops) {
        for (int i = 0; i < ZP_NSTREAMS; i++)
            free(b.s[i].v);
        return ZP_FAIL(ZP_ENOMEM, "out of memory building the schedule");
    }
    for (int i = 0; i < ZP_NSTREAMS; i++) {
        if (b.s[i].n)
            memcpy(out->ops + out->n, b.s[i].v, (size_t)b.s[i].n * sizeof *out->ops);
        out->n += b.s[i].n;
        free(b.s[i].v);
    }
    out->cap = out->n;
    out->buckets_per_micro = nb;
    out->bucket_params = bucket;
    out->flops = b.flops;
    return ZP_OK;
}

void zp_schedule_free(zp_schedule *s)
{
    if (!s)
        return;
    free(s->ops);
    memset(s, 0, sizeof *s);
}

const char *zp_stream_name(zp_stream s)
{
    static const char *const n[] = {"compute", "comm", "pcie", "cpu"};
    return (unsigned)s < ZP_NSTREAMS ? n[s] : "?";
}

const char *zp_phase_name(zp_phase p)
{
    static const char *const n[] = {"forward", "recompute", "backward", "optimizer"};
    return (unsigned)p < ZP_NPHASES ? n[p] : "?";
}

const char *zp_schedule_coll_name(zp_coll_kind c)
{
    static const char *const n[] = {"allreduce", "reduce_scatter", "allgather", "broadcast"};
    return (unsigned)c <= ZP_COLL_BROADCAST ? n[c] : "?";
}
