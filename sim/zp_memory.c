#include "zp_memory.h"

#include "zp_pipeline.h"
#include "zp_zoo.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

double zp_memory_model_states(double psi, int stage, double nd, double nm, double k)
{
    double p = psi / nm;
    switch (stage) {
    case 0: return (2.0 + 2.0 + k) * p;                    /* baseline: 16Ψ */
    case 1: return 4.0 * p + k * p / nd;                   /* Pos:  4Ψ + KΨ/Nd */
    case 2: return 2.0 * p + (2.0 + k) * p / nd;           /* Pos+g: 2Ψ + (K+2)Ψ/Nd */
    default: return (2.0 + 2.0 + k) * p / nd;              /* Pos+g+p: (K+4)Ψ/Nd */
    }
}

double zp_memory_max_params(int stage, double nd, double nm, double k, double gpu_mem)
{
    /* model states are linear in Ψ: Ψ_max = gpu_mem / (bytes per parameter) */
    return gpu_mem / zp_memory_model_states(1.0, stage, nd, nm, k);
}

void zp_memcount_add(zp_memcount *c, zp_mem_cat cat, double bytes)
{
    if ((unsigned)cat >= ZP_MEM_NCAT)
        return;
    c->cur[cat] += bytes;
    if (c->cur[cat] > c->peak[cat])
        c->peak[cat] = c->cur[cat];
    if (cat == ZP_MEM_ACTIVATIONS || cat == ZP_MEM_CHECKPOINTS) {
        c->cur_act += bytes;
        if (c->cur_act > c->peak_act)
            c->peak_act = c->cur_act;
    }
    if (cat == ZP_MEM_HOST || cat == ZP_MEM_NVME)
        return;
    c->cur_dev += bytes;
    if (c->cur_dev > c->peak_dev) {
        c->peak_dev = c->cur_dev;
        memcpy(c->at_peak, c->cur, sizeof c->at_peak);
    }
}

void zp_memcount_result(const zp_memcount *c, zp_memory *out)
{
    const double *a = c->at_peak;
    memset(out, 0, sizeof *out);
    out->params = a[ZP_MEM_PARAMS];
    out->grads = a[ZP_MEM_GRADS];
    out->optimizer = a[ZP_MEM_OPTIMIZER];
    out->checkpoints = a[ZP_MEM_CHECKPOINTS];
    out->activations = a[ZP_MEM_ACTIVATIONS] + a[ZP_MEM_CHECKPOINTS];
    out->buffers = a[ZP_MEM_BUFFERS];
    out->fragmentation = a[ZP_MEM_FRAGMENTATION];
    out->total = c->peak_dev;
    out->host = c->peak[ZP_MEM_HOST];
    out->nvme = c->peak[ZP_MEM_NVME];
    memcpy(out->peak, c->peak, sizeof out->peak);
    out->peak_activations = c->peak_act;
}

static zp_status replay_op(void *ctx, const zp_op *op)
{
    const zp_opc c = zp_op_table[op->type].cls;
    if (c == ZP_OPC_ALLOC)
        zp_memcount_add(ctx, op->cat, op->bytes);
    else if (c == ZP_OPC_FREE)
        zp_memcount_add(ctx, op->cat, -op->bytes);
    return ZP_OK;
}

static zp_status replay_result(const zp_memcount *c, zp_memory *out)
{
    zp_memcount_result(c, out);
    if (!isfinite(out->total) || !isfinite(out->host))
        return ZP_FAIL(ZP_ERANGE, "memory of this plan is beyond representable range");
    return ZP_OK;
}

zp_status zp_memory_replay(const zp_schedule *s, zp_memory *out)
{
    zp_memcount c;
    memset(&c, 0, sizeof c);
    ZP_TRY(zp_schedule_walk(s, 1, -1, replay_op, &c));
    return replay_result(&c, out);
}

zp_status zp_memory_replay_ops(const zp_op *ops, int n, zp_memory *out)
{
    zp_memcount c;
    memset(&c, 0, sizeof c);
    for (int i = 0; i < n; i++)
        replay_op(&c, &ops[i]);
    return replay_result(&c, out);
}

static zp_status estimate_stage(const zp_model *model, const zp_plan *plan, int stage, zp_memory *out)
{
    zp_schedule s;
    ZP_TRY(zp_schedule_build_memory_stage(model, plan, stage, &s));
    zp_status st = zp_memory_replay(&s, out);
    zp_schedule_free(&s);
    return st;
}

zp_status zp_memory_estimate_stages(const zp_model *model, const zp_plan *plan, zp_memory *out, int n)
{
    if (n < plan->pp)
        return ZP_FAIL(ZP_EINVAL, "room for %d of the %lld pipeline stages", n, (long long)plan->pp);
    for (int s = 0; s < (int)plan->pp; s++)
        ZP_TRY(estimate_stage(model, plan, s, &out[s]));
    return ZP_OK;
}

/* With pipeline stages, the worst stage. A stage holds the micro-batches of its warm-up, which never grow
 * with the stage's index, so among the stages between the first and the last with the same layers the
 * first of them holds the most: the first stage, the last, and the first of each layer count between are
 * the candidates. With an uneven layout (a stage's chunks may differ from another's) every stage is.
 * Whether stage s (its layers st) is one, the layer counts of the candidates between seen so far in
 * seen[0..*nseen) (updated). */
static int stage_candidate(const zp_plan *plan, int s, const zp_pp_stage *st, int seen[4], int *nseen)
{
    if (s == 0 || s == (int)plan->pp - 1 || zp_pp_uneven(plan))
        return 1;
    for (int i = 0; i < *nseen; i++)
        if (seen[i] == st->layers[0])
            return 0;
    if (*nseen == 4)
        return 0;
    seen[(*nseen)++] = st->layers[0];
    return 1;
}

/* Whether stage h is a candidate of the plan (pp > 1): 0 too where a stage's layers cannot be had. */
static int is_candidate(const zp_model *model, const zp_plan *plan, int h)
{
    int seen[4], nseen = 0, yes = 0;
    for (int s = 0; s <= h && s < (int)plan->pp; s++) {
        zp_pp_stage st;
        if (zp_pp_stage_get(model, plan, s, &st) != ZP_OK)
            return 0;
        yes = stage_candidate(plan, s, &st, seen, &nseen);
    }
    return h < (int)plan->pp && yes;
}

/* The worst of the candidate stages, in order (stage `pre_stage`'s memory taken from *pre, estimated before:
 * -1, none). With finite caps (bytes: device, host) the walk stops at the first stage above either (*over
 * set, *stopped (may be NULL) that stage; out then holds the stages estimated so far): the plan does not
 * fit whatever the others hold. */
static zp_status estimate_worst(const zp_model *model, const zp_plan *plan, double gpu_cap, double host_cap,
                                int pre_stage, const zp_memory *pre, zp_memory *out, int *over, int *stopped)
{
    *over = 0;
    if (plan->pp <= 1) {
        ZP_TRY(estimate_stage(model, plan, 0, out));
        *over = out->total > gpu_cap || out->host > host_cap;
        return ZP_OK;
    }
    ZP_TRY(zp_pp_check(model, plan));
    int seen[4] = {-1, -1, -1, -1}, nseen = 0;
    double host = 0;
    for (int s = 0; s < (int)plan->pp && !*over; s++) {
        zp_pp_stage st;
        ZP_TRY(zp_pp_stage_get(model, plan, s, &st));
        if (!stage_candidate(plan, s, &st, seen, &nseen))
            continue;
        zp_memory m;
        if (s == pre_stage)
            m = *pre;
        else
            ZP_TRY(estimate_stage(model, plan, s, &m));
        if (s == 0 || m.total > out->total)
            *out = m;
        host = fmax(host, m.host);
        *over = m.total > gpu_cap || m.host > host_cap;
        if (*over && stopped)
            *stopped = s;
    }
    out->host = host;
    return ZP_OK;
}

zp_status zp_memory_estimate(const zp_model *model, const zp_plan *plan, zp_memory *out)
{
    int over;
    return estimate_worst(model, plan, INFINITY, INFINITY, -1, NULL, out, &over, NULL);
}

/* The hinted stage first where it is a candidate: a plan it does not fit is settled by it alone. The worst
 * is then taken in the stages' order as zp_memory_estimate takes it, the hinted one's memory reused. */
int zp_memory_fits_plan(const zp_model *model, const zp_plan *plan, double gpu_mem, double host_mem_per_gpu,
                        int *hint, zp_memory *out)
{
    zp_memory first, m;
    int pre = -1, over;
    if (hint && *hint >= 0 && plan->pp > 1 && zp_pp_check(model, plan) == ZP_OK && is_candidate(model, plan, *hint)) {
        if (estimate_stage(model, plan, *hint, &first) != ZP_OK)
            return 0;
        if (first.total > gpu_mem || first.host > host_mem_per_gpu)
            return 0;
        pre = *hint;
    }
    if (estimate_worst(model, plan, gpu_mem, host_mem_per_gpu, pre, &first, &m, &over, hint) != ZP_OK || over)
        return 0;
    if (out)
        *out = m;
    return zp_memory_fits(&m, gpu_mem, host_mem_per_gpu, NULL, 0);
}

int zp_memory_fits(const zp_memory *m, double gpu_mem, double host_mem_per_gpu, char *reason, int reason_len)
{
    if (m->total > gpu_mem) {
        if (reason) {
            double states = m->params + m->grads + m->optimizer;
            if (states > gpu_mem)
                snprintf(reason, (size_t)reason_len, "model states alone need %.1f GB > %.1f GB usable per GPU",
                         states / 1e9, gpu_mem / 1e9);
            else
                snprintf(reason, (size_t)reason_len,
                         "%.1f GB > %.1f GB usable per GPU (states %.1f GB, activations %.1f GB, buffers %.1f GB%s)",
                         m->total / 1e9, gpu_mem / 1e9, states / 1e9, m->activations / 1e9, m->buffers / 1e9,
                         m->fragmentation > 0 ? ", fragmentation" : "");
        }
        return 0;
    }
    if (m->host > host_mem_per_gpu) {
        if (reason)
            snprintf(reason, (size_t)reason_len, "host memory %.1f GB > %.1f GB per GPU's share", m->host / 1e9,
                     host_mem_per_gpu / 1e9);
        return 0;
    }
    if (reason && reason_len > 0)
        reason[0] = '\0';
    return 1;
}

static int fits_at(const zp_model *model, zp_plan *p, int64_t b, double gpu_mem, double host)
{
    p->micro_batch = b;
    return zp_memory_fits_plan(model, p, gpu_mem, host, NULL, NULL);
}

int64_t zp_memory_max_micro_batch(const zp_model *model, const zp_plan *plan, double gpu_mem,
                                  double host_mem_per_gpu, int64_t cap)
{
    zp_plan p = *plan;
    zp_memory m1, m2;
    p.micro_batch = 1;
    if (zp_memory_estimate(model, &p, &m1) != ZP_OK || !zp_memory_fits(&m1, gpu_mem, host_mem_per_gpu, NULL, 0))
        return 0;
    p.micro_batch = 2;
    if (zp_memory_estimate(model, &p, &m2) != ZP_OK)
        return 0;
    /* The line through b = 1 and 2 (the peak is convex in b: the line is below it beyond 2). */
    double best = (double)cap;
    double slope = m2.total - m1.total;
    if (slope > 0)
        best = fmin(best, 1.0 + floor((gpu_mem - m1.total) / slope));
    double hslope = m2.host - m1.host;
    if (hslope > 0)
        best = fmin(best, 1.0 + floor((host_mem_per_gpu - m1.host) / hslope));
    int64_t hi = best < 1 ? 1 : (int64_t)best;
    if (fits_at(model, &p, hi, gpu_mem, host_mem_per_gpu))
        return hi;
    int64_t lo = 1; /* fits; hi does not: bisect (memory never shrinks as b grows) */
    while (hi - lo > 1) {
        int64_t mid = lo + (hi - lo) / 2;
        if (fits_at(model, &p, mid, gpu_mem, host_mem_per_gpu))
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

static int fits_layers(const zp_model *shape, const zp_plan *plan, double gpu_mem, double host, int64_t layers)
{
    zp_model m = *shape;
    m.layers = layers;
    zp_memory mem;
    if (zp_model_validate(&m) != ZP_OK || zp_memory_estimate(&m, plan, &mem) != ZP_OK)
        return 0;
    return zp_memory_fits(&mem, gpu_mem, host, NULL, 0);
}

zp_status zp_memory_largest_model(const zp_model *shape, const zp_plan *plan, double gpu_mem,
                                  double host_mem_per_gpu, zp_model *out)
{
    ZP_TRY(zp_plan_validate(plan));
    *out = *shape;
    /* Memory grows monotonically with layers (every term is non-decreasing in l): bisect. */
    int64_t lo = 0, hi = 1;
    while (hi < (INT64_C(1) << 40) && fits_layers(shape, plan, gpu_mem, host_mem_per_gpu, hi)) {
        lo = hi;
        hi *= 2;
    }
    while (hi - lo > 1) {
        int64_t mid = lo + (hi - lo) / 2;
        if (fits_layers(shape, plan, gpu_mem, host_mem_per_gpu, mid))
            lo = mid;
        else
            hi = mid;
    }
    out->layers = lo;
    return ZP_OK;
}

static int fits_size(const zp_plan *plan, double gpu_mem, double host, double psi, double *actual)
{
    zp_model m;
    zp_memory mem;
    if (zp_model_from_size(psi, &m) != ZP_OK || zp_memory_estimate(&m, plan, &mem) != ZP_OK)
        return 0;
    *actual = zp_model_params(&m);
    return zp_memory_fits(&mem, gpu_mem, host, NULL, 0);
}

zp_status zp_memory_largest_fitting(const zp_plan *plan, double gpu_mem, double host_mem_per_gpu,
                                    double *params_out)
{
    ZP_TRY(zp_plan_validate(plan));
    /* Memory grows with the size: double until a size does not fit (offload moves the bound far above the
     * device's model states: the host's), then bisect. */
    double lo = 1e7, best = 0, actual;
    if (!fits_size(plan, gpu_mem, host_mem_per_gpu, lo, &actual)) {
        *params_out = 0;
        return ZP_OK;
    }
    best = actual;
    double hi = 2.0 * lo;
    while (hi < ZP_MODEL_MAX_PARAMS && fits_size(plan, gpu_mem, host_mem_per_gpu, hi, &actual)) {
        lo = hi;
        best = fmax(best, actual);
        hi *= 2.0;
    }
    if (hi > ZP_MODEL_MAX_PARAMS)
        hi = ZP_MODEL_MAX_PARAMS;
    while (hi / lo > 1.005) {
        double mid = sqrt(lo * hi);
        if (fits_size(plan, gpu_mem, host_mem_per_gpu, mid, &actual)) {
            lo = mid;
            if (actual > best)
                best = actual;
        } else {
            hi = mid;
        }
    }
    *params_out = best;
    return ZP_OK;
}
