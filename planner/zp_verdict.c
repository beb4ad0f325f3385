/* zp_verdict.c — the verdict on a launch (see zp_verdict.h): searches from the launch's own request, one
 * with every plan setting open and one per setting opened alone. */
#include "zp_verdict.h"

#include <string.h>

const char *zp_knob_name(zp_knob k)
{
    static const char *const names[ZP_NKNOBS] = {"stage", "tp", "pp", "micro", "recompute", "sp", "offload"};
    return (unsigned)k < ZP_NKNOBS ? names[k] : "?";
}

static int is_bound(const zp_eval *e) { return e->method && strcmp(e->method, "bound") == 0; }

/* A request for exactly `p` (its batch included), the searches' settings of `base`. */
static void pin_plan(const zp_search_req *base, const zp_plan *p, zp_search_req *q)
{
    *q = *base;
    q->trace_path = NULL;
    q->progress = NULL;
    q->progress_ctx = NULL;
    q->exact = 0;
    zp_plan *b = &q->base;
    b->stage = p->stage;
    for (int d = 0; d < ZP_NDIMS; d++)
        b->deg[d] = p->deg[d];
    b->micro_batch = p->micro_batch;
    q->global_batch = (int64_t)zp_plan_global_batch(p);
    b->pa = p->pa;
    b->pa_cpu = p->pa_cpu;
    b->offload = p->offload;
    zp_search_req_give_recompute(q, zp_plan_recompute(p));
    q->checkpoint = p->checkpoint;
    b->sp = p->sp;
    b->schedule = p->schedule;
    b->vstages = p->vstages;
    /* given: all but DP (what the others leave), the accumulation (the global batch's) and, without a
     * pipeline, its schedule and chunks */
    const uint32_t open = ZP_SEARCH_DIM(ZP_DIM_DP) | ZP_SEARCH_ACCUM |
                          (p->pp > 1 ? 0u : (uint32_t)(ZP_SEARCH_SCHEDULE | ZP_SEARCH_VSTAGES));
    q->searched = (q->searched & (ZP_SEARCH_BF16 | ZP_SEARCH_TP_OVERLAP)) | open;
}

/* Opens one setting of a pinned request. */
static void open_knob(zp_search_req *q, zp_knob k)
{
    switch (k) {
    case ZP_KNOB_STAGE: zp_search_req_open(q, ZP_SEARCH_STAGE); break;
    case ZP_KNOB_TP: zp_search_req_open(q, ZP_SEARCH_DIM(ZP_DIM_TP) | ZP_SEARCH_SP); break;
    case ZP_KNOB_PP:
        zp_search_req_open(q, ZP_SEARCH_DIM(ZP_DIM_PP) | ZP_SEARCH_SCHEDULE | ZP_SEARCH_VSTAGES);
        q->base.pp_first = q->base.pp_last = 0; /* an uneven layout is of the stages given: open with them */
        q->base.pp_layout = NULL;
        q->base.pp_layout_n = 0;
        break;
    case ZP_KNOB_MICRO: zp_search_req_open(q, ZP_SEARCH_MICRO_BATCH); break;
    case ZP_KNOB_RECOMPUTE:
        zp_search_req_open(q, ZP_SEARCH_RECOMPUTE);
        q->checkpoint = 1;
        break;
    case ZP_KNOB_SP: zp_search_req_open(q, ZP_SEARCH_SP); break;
    case ZP_KNOB_OFFLOAD: zp_search_req_open(q, ZP_SEARCH_OFFLOAD | ZP_SEARCH_PA | ZP_SEARCH_PA_CPU); break;
    default: break;
    }
}

zp_status zp_verdict_best_in(const zp_search_req *q, const zp_search_result *res, zp_verdict_runs runs, int ctx,
                             zp_eval *out, int *index, int *searches)
{
    *index = -1;
    int resimulated = 0;
    for (int i = 0; i < res->n; i++) {
        const zp_eval *e = &res->plans[i];
        if (!e->fits || (runs && !runs(ctx, &e->plan)))
            continue;
        if (*index >= 0 && e->time.total >= out->time.total)
            break; /* sorted best first: neither this one (a bound is a lower bound) nor any after beats it */
        zp_eval x = *e;
        if (is_bound(e)) {
            if (resimulated++ >= 8)
                break;
            zp_search_req one;
            zp_search_result r1;
            pin_plan(q, &e->plan, &one);
            ZP_TRY(zp_search_run(&one, &r1));
            if (searches)
                (*searches)++;
            const int ok = r1.n > 0 && r1.plans[0].fits && !is_bound(&r1.plans[0]);
            if (ok)
                x = r1.plans[0];
            zp_search_result_free(&r1);
            if (!ok)
                continue;
        }
        if (*index < 0 || x.time.total < out->time.total) {
            *out = x;
            *index = i;
        }
    }
    return ZP_OK;
}

/* The best fitting plan of q that runs (*found 0 when none). */
static zp_status best_of(const zp_search_req *q, zp_verdict_runs runs, int ctx, zp_eval *out, int *found,
                         int *searches)
{
    zp_search_result res;
    ZP_TRY(zp_search_run(q, &res));
    (*searches)++;
    int index = -1;
    zp_status st = zp_verdict_best_in(q, &res, runs, ctx, out, &index, searches);
    *found = index >= 0;
    zp_search_result_free(&res);
    return st;
}

zp_status zp_verdict_find(const zp_search_req *pinned, const zp_eval *launch, zp_verdict_runs runs, int ctx,
                          zp_verdict *v)
{
    memset(v, 0, sizeof *v);
    zp_search_req q;
    pin_plan(pinned, &launch->plan, &q);
    /* every setting open at the launch's global batch */
    for (int k = 0; k < ZP_NKNOBS; k++)
        open_knob(&q, (zp_knob)k);
    ZP_TRY(best_of(&q, runs, ctx, &v->best, &v->has_best, &v->searches));
    /* one setting at a time */
    for (int k = 0; k < ZP_NKNOBS; k++) {
        pin_plan(pinned, &launch->plan, &q);
        open_knob(&q, (zp_knob)k);
        if (zp_search_validate(&q) != ZP_OK)
            continue;
        zp_eval e;
        int found = 0;
        ZP_TRY(best_of(&q, runs, ctx, &e, &found, &v->searches));
        if (!found || (launch->fits && e.time.total >= launch->time.total))
            continue;
        if (!v->has_change || e.time.total < v->changed.time.total) {
            v->changed = e;
            v->change = (zp_knob)k;
            v->has_change = 1;
        }
    }
    return ZP_OK;
}
