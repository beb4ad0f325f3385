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
    q->stage = p->stage;
    for (int d = 0; d < ZP_NDIMS; d++)
        q->deg[d] = d == ZP_DIM_DP ? ZP_SEARCH_ANY : p->deg[d];
    q->micro_batch = p->micro_batch;
    q->global_batch = (int64_t)zp_plan_global_batch(p);
    q->grad_accum = ZP_SEARCH_ANY;
    q->pa = p->pa;
    q->pa_cpu = p->pa_cpu;
    q->offload = p->offload;
    q->recompute = zp_plan_recompute(p);
    q->checkpoint = p->checkpoint;
    q->sp = p->sp;
    q->pp_schedule = p->pp > 1 ? (int)p->schedule : ZP_SEARCH_ANY;
    q->vstages = p->pp > 1 ? p->vstages : ZP_SEARCH_ANY;
}

/* Opens one setting of a pinned request. */
static void open_knob(zp_search_req *q, zp_knob k)
{
    switch (k) {
    case ZP_KNOB_STAGE: q->stage = ZP_SEARCH_ANY; break;
    case ZP_KNOB_TP:
        q->mp = ZP_SEARCH_ANY;
        q->sp = ZP_SEARCH_ANY;
        break;
    case ZP_KNOB_PP:
        q->pp = ZP_SEARCH_ANY;
        q->pp_schedule = ZP_SEARCH_ANY;
        q->vstages = ZP_SEARCH_ANY;
        q->base.pp_first = q->base.pp_last = 0; /* an uneven layout is of the stages given: open with them */
        q->base.pp_layout = NULL;
        q->base.pp_layout_n = 0;
        break;
    case ZP_KNOB_MICRO: q->micro_batch = ZP_SEARCH_ANY; break;
    case ZP_KNOB_RECOMPUTE:
        q->recompute = ZP_SEARCH_ANY;
        q->checkpoint = 1;
        break;
    case ZP_KNOB_SP: q->sp = ZP_SEARCH_ANY; break;
    case ZP_KNOB_OFFLOAD:
        q->offload = q->pa = q->pa_cpu = ZP_SEARCH_ANY;
        break;
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
