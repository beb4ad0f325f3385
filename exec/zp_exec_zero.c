/* zp_exec_zero.c — the collectives and the optimizer: Megatron's MP all-reduce and Pa's gather, ZeRO's
 * gradient buckets (all-reduce at stages 0-1, reduce-scatter into the shard at 2-3), the stage-1/2
 * all-gather of updated parameters and stage 3's gather of a parameter group, the fused Adam, and
 * ZeRO-Offload's copies and host Adam. Shard arithmetic is zp_shard.h's (units of the flat layout, each
 * cut into dp equal pieces in rank order). */
#include <math.h>

#include "zp_exec_impl.h"

/* the partial sums the previous row-parallel GEMM (or the embedding) left, summed over the MP group */
zp_status x_mp_allreduce(zp_exec_session *S, const zp_op *o)
{
    (void)o;
    if (!S->pending)
        return ZP_FAIL(ZP_ERUNTIME, "schedule: mp_allreduce with no partial sums before it");
    zp_status st = zp_exec_mp_allreduce(S, S->pending, S->pending_n, ZP_OP_SUM);
    S->pending = NULL;
    return st;
}

/* Pa: the MP ranks' checkpoint partitions, in rank order, are the block's input */
zp_status x_pa_allgather(zp_exec_session *S, const zp_op *o)
{
    return S->be->allgather(S->mpc, zp_exec_ckpt(S, o->layer, o->micro), BUF(S, XIN_WORK, 0), S->ck_len, ZP_DT_F32);
}

/* One of the two flat layouts ZeRO runs over: the dense parameters (reduced and partitioned over the DP
 * group), or the routed experts' (over the EDP group: the DP ranks holding the same experts). An op of
 * group EDP (its row in sim/zp_ops.def) is the experts'. */
typedef struct {
    size_t n;
    const zp_units *units;
    zp_comm *c;
    int parts, rank;
    zp_buf params, pshard, grads, gshard, gwork, gathered;
    int *bucket_k, *gather_k;
} flat;

static flat flat_of(zp_exec_session *S, int experts)
{
    if (experts)
        return (flat){S->NX, &S->xunits, S->edpc, S->edp, S->edr, ZP_BUF_XPARAMS, ZP_BUF_XPSHARD, ZP_BUF_XGRADS,
                      ZP_BUF_XGSHARD, ZP_BUF_XGWORK, ZP_BUF_XGATHERED, &S->bucket_xk, &S->gather_xk};
    return (flat){S->N, &S->units, S->dpc, S->dp, S->dr, ZP_BUF_PARAMS, ZP_BUF_PSHARD, ZP_BUF_GRADS, ZP_BUF_GSHARD,
                  ZP_BUF_GWORK, ZP_BUF_GATHERED, &S->bucket_k, &S->gather_k};
}

static int op_experts(const zp_op *o)
{
    const zp_op_info *in = zp_op_info_get(o->type);
    return in && in->group == ZP_GROUP_EDP;
}

#define FB(S, id) ((float *)(S)->slot[(id)][0])

/* The k-th gradient bucket of a micro-batch: [n - (k+1) bucket, n - k bucket). */
static zp_status bucket_bounds(const zp_exec_session *S, const flat *F, int k, size_t *lo, size_t *hi)
{
    size_t top = (size_t)k * S->bucket;
    if (top >= F->n)
        return ZP_FAIL(ZP_ERUNTIME, "schedule: bucket %d beyond the %zu parameters", k, F->n);
    *hi = F->n - top;
    *lo = *hi > S->bucket ? *hi - S->bucket : 0;
    return ZP_OK;
}

/* The same, checked against the op's size (`params` elements). */
static zp_status bucket_range(const zp_exec_session *S, const flat *F, int k, double params, size_t *lo, size_t *hi)
{
    ZP_TRY(bucket_bounds(S, F, k, lo, hi));
    if (fabs(params - (double)(*hi - *lo)) > 0.5)
        return ZP_FAIL(ZP_ERUNTIME, "schedule: bucket %d of %g parameters, the layout has %zu", k, params, *hi - *lo);
    return ZP_OK;
}

/* Stages 0-1: all-reduce the next bucket in place (every rank keeps every reduced gradient). Stages 2-3:
 * one reduce-scatter per unit, straight from the bucket (pieces in rank order; the padding of the last
 * piece reads the next values of the bucket, which has dp elements of slack). The first micro-batch of the
 * step lands in this rank's gradient shard directly; later ones arrive in the piece buffer and are added
 * (DeepSpeed accumulates into the partition the same way). */
zp_status x_grad_reduce(zp_exec_session *S, const zp_op *o)
{
    const flat F = flat_of(S, op_experts(o));
    size_t lo, hi;
    ZP_TRY(bucket_range(S, &F, (*F.bucket_k)++, o->bytes / S->plan.param_bytes, &lo, &hi));
    if (S->plan.stage < 2) {
        float *g = FB(S, F.grads) + lo;
        return F.parts > 1 ? S->be->allreduce(F.c, g, g, hi - lo, ZP_DT_F32, ZP_OP_SUM) : ZP_OK;
    }
    float *gwork = FB(S, F.gwork), *gshard = FB(S, F.gshard), *tmp = BUF(S, TMP, 0);
    for (int i = zp_units_find(F.units, lo); i < F.units->n && F.units->u[i].hi <= hi; i++) {
        const zp_unit *u = &F.units->u[i];
        float *g = gshard + u->shard_off;
        if (o->micro == 0) {
            ZP_TRY(S->be->reduce_scatter(F.c, gwork + u->lo, g, u->piece, ZP_DT_F32, ZP_OP_SUM));
            continue;
        }
        ZP_TRY(S->be->reduce_scatter(F.c, gwork + u->lo, tmp, u->piece, ZP_DT_F32, ZP_OP_SUM));
        ZP_TRY(S->nn->add(g, tmp, u->size));
    }
    return ZP_OK;
}

/* Stages 1-2: all-gather the updated parameters of the next bucket, in place: each rank's piece of a
 * unit already sits where the unit's pieces in rank order put it. The last piece's padding (fewer than
 * dp elements past the unit) receives the last rank's values of whatever follows, so this rank's own
 * values there are saved (in the piece buffer) and put back; a unit whose padding would run past the
 * parameters goes through the piece and gathered-bucket buffers instead. */
zp_status x_param_allgather(zp_exec_session *S, const zp_op *o)
{
    const flat F = flat_of(S, op_experts(o));
    size_t lo, hi;
    ZP_TRY(bucket_range(S, &F, (*F.gather_k)++, o->bytes / S->plan.param_bytes, &lo, &hi));
    float *params = FB(S, F.params), *tmp = BUF(S, TMP, 0);
    for (int i = zp_units_find(F.units, lo); i < F.units->n && F.units->u[i].hi <= hi; i++) {
        const zp_unit *u = &F.units->u[i];
        size_t end = u->lo + u->piece * (size_t)F.parts; /* end of the padded unit */
        size_t spill = end - u->hi;                        /* < parts, kept in tmp */
        if (end <= F.n && spill <= F.units->max_piece) {
            ZP_TRY(S->be->copy_on_device(tmp, params + u->hi, spill * sizeof(float)));
            float *mine = params + u->lo + (size_t)F.rank * u->piece;
            ZP_TRY(S->be->allgather(F.c, mine, params + u->lo, u->piece, ZP_DT_F32));
            ZP_TRY(S->be->copy_on_device(params + u->hi, tmp, spill * sizeof(float)));
            continue;
        }
        float *gbuf = BUF(S, GBUF, 0);
        ZP_TRY(S->be->zero(tmp, u->piece * sizeof(float)));
        ZP_TRY(S->be->copy_on_device(tmp, params + u->off, u->size * sizeof(float)));
        ZP_TRY(S->be->allgather(F.c, tmp, gbuf, u->piece, ZP_DT_F32));
        ZP_TRY(S->be->copy_on_device(params + u->lo, gbuf, (u->hi - u->lo) * sizeof(float)));
    }
    return ZP_OK;
}

/* Stage 3: gather parameter group o->item from every rank's shard into the buffer the schedule just
 * allocated for it (the all-gathers write every element, the padding spill included); the experts' op
 * gathers block o->item - 1's local experts over the EDP group. */
zp_status x_param_gather(zp_exec_session *S, const zp_op *o)
{
    const int item = o->item, experts = op_experts(o);
    const flat F = flat_of(S, experts);
    if (item < 0 || item > (int)S->L + 1 || !S->slot[F.gathered][item])
        return ZP_FAIL(ZP_ERUNTIME, "schedule: param_gather of group %d without its buffer", item);
    float *g = (float *)S->slot[F.gathered][item];
    const size_t lo = experts ? (size_t)(item - 1 - S->xs.l0) * S->xsz : zp_exec_item_lo(S, item);
    const size_t len = experts ? S->xsz : zp_exec_item_len(S, item);
    const float *pshard = FB(S, F.pshard);
    for (int i = zp_units_find(F.units, lo); i < F.units->n && F.units->u[i].hi <= lo + len; i++) {
        const zp_unit *u = &F.units->u[i];
        ZP_TRY(S->be->allgather(F.c, pshard + u->shard_off, g + (u->lo - lo), u->piece, ZP_DT_F32));
    }
    return ZP_OK;
}

/* One fused Adam step of n elements on backend `be` (the device's, or the cpu's for the host-side
 * optimizer of ZeRO-Offload, which also writes the fp16 copy `half`; NULL for none). */
static zp_status adam_on(zp_exec_session *S, const zp_kernels_backend *be, float *p, const float *g, float *m,
                         float *v, uint16_t *half, size_t n)
{
    if (n == 0)
        return ZP_OK;
    zp_adam_hparams hp = zp_adam_hparams_default();
    hp.lr = S->cfg.lr;
    hp.step = S->step + 1;
    zp_adam_buffers buf = {.n = n, .param = p, .grad = g, .m = m, .v = v, .half = half, .half_dtype = ZP_DT_F16};
    zp_adam_result r;
    return be->adam_step(&hp, &buf, &r);
}

/* The fused Adam on this rank's optimizer partition of one flat layout: everything (stage 0), the shard
 * (stage 3), or its pieces of the flat parameters (stages 1-2, all-gathered next). */
static zp_status adam_flat(zp_exec_session *S, const flat *F, float *m, float *v)
{
    switch (S->plan.stage) {
    case 0: return adam_on(S, S->be, FB(S, F->params), FB(S, F->grads), m, v, NULL, F->n);
    case 3: return adam_on(S, S->be, FB(S, F->pshard), FB(S, F->gshard), m, v, NULL, F->units->shard_size);
    default:
        for (int i = 0; i < F->units->n; i++) {
            const zp_unit *u = &F->units->u[i];
            const float *g = S->plan.stage == 1 ? FB(S, F->grads) + u->off : FB(S, F->gshard) + u->shard_off;
            ZP_TRY(adam_on(S, S->be, FB(S, F->params) + u->off, g, m + u->shard_off, v + u->shard_off, NULL, u->size));
        }
        return ZP_OK;
    }
}

/* Adam over the dense partition, then the routed experts' (one element-wise update: the split changes
 * nothing of its math). */
zp_status x_adam(zp_exec_session *S, const zp_op *o)
{
    (void)o;
    flat F = flat_of(S, 0);
    ZP_TRY(adam_flat(S, &F, BUF(S, OPT_M, 0), BUF(S, OPT_V, 0)));
    if (S->NX == 0)
        return ZP_OK;
    F = flat_of(S, 1);
    return adam_flat(S, &F, BUF(S, XOPT_M, 0), BUF(S, XOPT_V, 0));
}

/* ---- ZeRO-Offload (the schedule's pcie and cpu streams); host buffers are in shard layout ---- */

/* This rank's partition of the next reduced bucket (last micro-batch) to the host. */
zp_status x_grad_d2h(zp_exec_session *S, const zp_op *o)
{
    size_t lo = 0, hi = 0;
    const flat F = flat_of(S, 0);
    ZP_TRY(bucket_range(S, &F, S->d2h_k++, o->bytes / S->plan.param_bytes * (double)S->dp, &lo, &hi));
    if (S->cfg.test_faults & ZP_EXEC_FAULT_NO_GRAD_D2H)
        return ZP_OK;
    for (int i = zp_units_find(&S->units, lo); i < S->units.n && S->units.u[i].hi <= hi; i++) {
        const zp_unit *u = &S->units.u[i];
        /* stage 1: whole all-reduced gradients, this rank's piece at u->off; stages 2-3: the shard */
        const float *g = S->plan.stage == 1 ? BUF(S, GRADS, 0) + u->off : BUF(S, GSHARD, 0) + u->shard_off;
        ZP_TRY(S->be->copy_to_host(BUF(S, H_GRAD, 0) + u->shard_off, g, u->size * sizeof(float)));
    }
    return ZP_OK;
}

/* The cpu backend's fused Adam over the whole partition on the host, writing the fp16 copy that goes back
 * to the device (padding elements: gradient 0, parameter 0, unchanged). */
zp_status x_cpu_adam(zp_exec_session *S, const zp_op *o)
{
    (void)o;
    return adam_on(S, &zp_kernels_cpu, BUF(S, H_MASTER, 0), BUF(S, H_GRAD, 0), BUF(S, OPT_M, 0), BUF(S, OPT_V, 0),
                   (uint16_t *)S->slot[ZP_BUF_H_HALF][0], S->units.shard_size);
}

/* The fp16 partition back to the device, unit by unit through the piece buffer (max_piece floats hold
 * max_piece fp16 values), expanded there into the fp32 working parameters: the shard at stage 3, this
 * rank's pieces of the flat parameters at stages 1-2 (all-gathered next). */
zp_status x_param_h2d(zp_exec_session *S, const zp_op *o)
{
    (void)o;
    uint16_t *stage = (uint16_t *)BUF(S, TMP, 0);
    const uint16_t *half = (const uint16_t *)S->slot[ZP_BUF_H_HALF][0];
    for (int i = 0; i < S->units.n; i++) {
        const zp_unit *u = &S->units.u[i];
        if (u->size == 0)
            continue;
        float *dst = S->plan.stage == 3 ? BUF(S, PSHARD, 0) + u->shard_off : BUF(S, PARAMS, 0) + u->off;
        ZP_TRY(S->be->copy_to_device(stage, half + u->shard_off, u->size * sizeof *stage));
        ZP_TRY(S->nn->f16_to_f32(dst, stage, u->size));
    }
    return ZP_OK;
}
