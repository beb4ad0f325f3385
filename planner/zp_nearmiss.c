/* zp_nearmiss.c — what to change when no plan fits (see zp_nearmiss.h). */
#include "zp_nearmiss.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The options one change opens or sets (each is one search). */
typedef enum {
    R_MICRO,  /* --micro-batch given: searched */
    R_STAGE,  /* --stage given (below 3): searched */
    R_MP,     /* --mp given: searched */
    R_OFFLOAD, /* --offload given: searched */
    R_PA,     /* --pa / --pa-cpu / --no-pa given: searched */
    R_CKPT,   /* --no-checkpoint: checkpointing on */
    R_CB,     /* --no-cb: CB on */
    R_MD,     /* --no-md: MD on */
    R_ACCUM,  /* --grad-accum given: searched */
    R_GLOBAL, /* --global-batch given: the default batch */
    R_EXACT,  /* --exact: the options not given searched */
    R_ALL,    /* every plan option searched */
    R_NKIND
} relax;

/* The options each change opens to the search (ZP_SEARCH_* bits; 0: it sets an option instead). */
static const uint32_t g_opens[R_NKIND] = {
    [R_MICRO] = ZP_SEARCH_MICRO_BATCH,
    [R_STAGE] = ZP_SEARCH_STAGE,
    [R_MP] = ZP_SEARCH_DIM(ZP_DIM_TP),
    [R_OFFLOAD] = ZP_SEARCH_OFFLOAD,
    [R_PA] = ZP_SEARCH_PA | ZP_SEARCH_PA_CPU,
    [R_ACCUM] = ZP_SEARCH_ACCUM,
    [R_GLOBAL] = ZP_SEARCH_GLOBAL_BATCH | ZP_SEARCH_MICRO_BATCH | ZP_SEARCH_ACCUM,
    [R_ALL] = ZP_SEARCH_STAGE | ZP_SEARCH_DIM(ZP_DIM_TP) | ZP_SEARCH_MICRO_BATCH | ZP_SEARCH_ACCUM | ZP_SEARCH_PA |
              ZP_SEARCH_PA_CPU | ZP_SEARCH_OFFLOAD,
};

static int applies(const zp_search_req *r, relax k)
{
    const zp_plan *b = &r->base;
    switch (k) {
    case R_STAGE: return zp_search_req_given(r, ZP_SEARCH_STAGE) && b->stage < 3;
    case R_OFFLOAD: return zp_search_req_given(r, ZP_SEARCH_OFFLOAD) && b->offload != ZP_OFFLOAD_PARAMS;
    case R_PA: /* Pa or Pa+cpu given, not Pa+cpu on (nothing holds less) */
        return (zp_search_req_given(r, ZP_SEARCH_PA) || zp_search_req_given(r, ZP_SEARCH_PA_CPU)) &&
               !(zp_search_req_given(r, ZP_SEARCH_PA_CPU) && b->pa_cpu == 1);
    case R_CKPT: return !r->checkpoint;
    case R_CB: return !b->cb;
    case R_MD: return !b->md;
    case R_GLOBAL: return zp_search_req_given(r, ZP_SEARCH_GLOBAL_BATCH);
    case R_EXACT: return r->exact;
    case R_ALL: return 1;
    default: return zp_search_req_given(r, g_opens[k]);
    }
}

static void apply(zp_search_req *q, relax k)
{
    zp_search_req_open(q, g_opens[k]);
    switch (k) {
    case R_CKPT: q->checkpoint = 1; break;
    case R_CB: q->base.cb = 1; break;
    case R_MD: q->base.md = 1; break;
    case R_EXACT: q->exact = 0; break;
    case R_ALL: q->exact = 0; q->checkpoint = q->base.cb = q->base.md = 1; break;
    default: break;
    }
}

/* Each change: the option to give (NULL: a phrase instead) and what it is, in words. */
static const struct {
    const char *opt, *what;
} g_relax[R_NKIND] = {
    [R_MICRO] = {"--micro-batch", "micro-batch"},
    [R_STAGE] = {"--stage", "ZeRO stage"},
    [R_MP] = {"--mp", "model parallelism"},
    [R_OFFLOAD] = {"--offload", "offload"},
    [R_PA] = {NULL, "ZeRO-R activation partitioning"},
    [R_CKPT] = {NULL, "activation checkpointing, was off"},
    [R_CB] = {NULL, "constant-size buckets (CB)"},
    [R_MD] = {NULL, "contiguous memory (MD)"},
    [R_ACCUM] = {"--grad-accum", "gradient accumulation"},
    [R_GLOBAL] = {"--global-batch", "global batch (changes the training)"},
    [R_EXACT] = {NULL, "the options not given searched instead of pinned"},
    [R_ALL] = {NULL, "stage, MP, micro-batch, ZeRO-R and offload all searched"},
};

/* The value of a change's option in plan e (new) or in request r (given), as typed. */
static void value_of(relax k, const zp_search_req *r, const zp_eval *e, char *buf, size_t len)
{
    const zp_plan *p = e ? &e->plan : NULL;
    switch (k) {
    case R_MICRO: snprintf(buf, len, "%lld", (long long)(p ? p : &r->base)->micro_batch); break;
    case R_STAGE: snprintf(buf, len, "%d", (p ? p : &r->base)->stage); break;
    case R_MP: snprintf(buf, len, "%lld", (long long)(p ? p : &r->base)->mp); break;
    case R_OFFLOAD: snprintf(buf, len, "%s", zp_offload_name((p ? p : &r->base)->offload)); break;
    case R_ACCUM: snprintf(buf, len, "%lld", (long long)(p ? p : &r->base)->grad_accum); break;
    case R_GLOBAL: snprintf(buf, len, "%.0f", p ? e->global_batch : (double)r->global_batch); break;
    case R_PA: snprintf(buf, len, "%s", !p ? "" : p->pa_cpu ? "--pa-cpu" : p->pa ? "--pa" : "--no-pa"); break;
    case R_CKPT: snprintf(buf, len, "--checkpoint"); break;
    case R_CB: snprintf(buf, len, "drop --no-cb"); break;
    case R_MD: snprintf(buf, len, "drop --no-md"); break;
    case R_EXACT: snprintf(buf, len, "drop --exact"); break;
    default: snprintf(buf, len, "drop the plan options"); break;
    }
}

/* The change, as options, read off the plan the relaxed search chose. */
static void describe(relax k, const zp_search_req *r, const zp_eval *e, zp_fix *f)
{
    char now[48], was[48];
    value_of(k, r, e, now, sizeof now);
    if (!g_relax[k].opt) {
        snprintf(f->change, sizeof f->change, "%s", now);
        snprintf(f->what, sizeof f->what, "%s", g_relax[k].what);
        return;
    }
    value_of(k, r, NULL, was, sizeof was);
    snprintf(f->change, sizeof f->change, "%s %s", g_relax[k].opt, now);
    snprintf(f->what, sizeof f->what, "%s, was %s", g_relax[k].what, was);
}

/* The search of q: memory first, then (when r simulates) the figures of its best few plans. *found = 0
 * when nothing fits or q is not a valid request. */
static zp_status try_req(const zp_search_req *r, zp_search_req q, zp_eval *best, int *found)
{
    *found = 0;
    q.progress = NULL;
    q.trace_path = NULL;
    q.simulate = 0;
    zp_search_result res;
    zp_status st = zp_search_run(&q, &res);
    if (st == ZP_ENOMEM)
        return st;
    if (st != ZP_OK)
        return ZP_OK; /* not a valid request (a batch the new degrees cannot divide, ...): no fix */
    int fit = res.n_fit > 0;
    zp_search_result_free(&res);
    if (!fit)
        return ZP_OK;
    q.simulate = r->simulate;
    if (q.simulate && q.max_simulated > 4)
        q.max_simulated = 4; /* the best few: a fix's figures, not a full answer */
    ZP_TRY(zp_search_run(&q, &res));
    for (int i = 0; i < res.n && !*found; i++)
        if (res.plans[i].fits) {
            *best = res.plans[i];
            *found = 1;
        }
    zp_search_result_free(&res);
    return ZP_OK;
}

static int fits_seq(const zp_eval *c, const zp_model *shape, int64_t seq, double usable, double host)
{
    zp_model m = *shape;
    m.seq = seq;
    zp_memory mem;
    return zp_model_validate(&m) == ZP_OK && zp_memory_estimate(&m, &c->plan, &mem) == ZP_OK &&
           zp_memory_fits(&mem, usable, host, NULL, 0);
}

static int cmp_fix(const void *a, const void *b)
{
    const zp_fix *x = a, *y = b;
    if (x->more_gpus != y->more_gpus)
        return x->more_gpus - y->more_gpus;
    double sx = x->plan.samples_per_s, sy = y->plan.samples_per_s;
    return sx > sy ? -1 : sx < sy ? 1 : 0;
}

zp_status zp_near_miss_find(const zp_search_req *r, const zp_search_result *res, zp_near_miss *out)
{
    memset(out, 0, sizeof *out);
    if (res->n_fit > 0 || res->n == 0)
        return ZP_OK;
    out->closest = res->plans[0]; /* no plan fits: sorted by memory, least first */
    const double usable = zp_search_usable_mem(r), host = zp_cluster_host_per_gpu(r->cluster, r->host_mem, r->gpus);
    const zp_eval *c = &out->closest;
    /* as given: the largest micro-batch, sequence and model that fit the closest plan */
    out->max_micro_batch = zp_memory_max_micro_batch(r->model, &c->plan, usable, host, ZP_MAX_MICRO_BATCH);
    if (out->max_micro_batch > c->plan.micro_batch)
        out->max_micro_batch = 0; /* it fits at a larger one only through another change (cannot happen) */
    int64_t lo = 0, hi = r->model->seq; /* hi does not fit */
    while (hi - lo > 1) {
        int64_t mid = lo + (hi - lo) / 2;
        if (fits_seq(c, r->model, mid, usable, host))
            lo = mid;
        else
            hi = mid;
    }
    out->max_seq = lo;
    zp_model big;
    ZP_TRY(zp_memory_largest_model(r->model, &c->plan, usable, host, &big));
    out->max_layers = big.layers;
    out->max_params = big.layers > 0 ? zp_model_params(&big) : 0;

    /* one change each */
    int any_single = 0;
    for (int k = 0; k < R_NKIND && out->nfix < ZP_NEAR_MAX_FIXES; k++) {
        if (!applies(r, (relax)k) || (k == R_ALL && any_single))
            continue;
        zp_search_req q = *r;
        apply(&q, (relax)k);
        zp_fix *f = &out->fix[out->nfix];
        int found;
        ZP_TRY(try_req(r, q, &f->plan, &found));
        if (!found)
            continue;
        describe((relax)k, r, &f->plan, f);
        out->nfix++;
        any_single |= k != R_ALL;
    }
    /* more GPUs, everything else as given: the fewest, doubling (at most 64 times as many); when no change
     * of one option fits, more GPUs with every plan option searched */
    const int nsingle = out->nfix;
    for (int all = 0; all < 2 && out->nfix == nsingle && out->nfix < ZP_NEAR_MAX_FIXES; all++) {
        if (all && nsingle > 0)
            break;
        for (int64_t g = r->gpus * 2; g <= r->gpus * 64 && g <= ZP_MAX_GPUS; g *= 2) {
            zp_search_req q = *r;
            q.gpus = g;
            if (all)
                apply(&q, R_ALL);
            zp_fix *f = &out->fix[out->nfix];
            int found;
            ZP_TRY(try_req(r, q, &f->plan, &found));
            if (!found)
                continue;
            snprintf(f->change, sizeof f->change, "--gpus %lld%s", (long long)g, all ? ", drop the plan options" : "");
            snprintf(f->what, sizeof f->what, "%lld times the GPUs, was %lld%s", (long long)(g / r->gpus),
                     (long long)r->gpus, all ? "; stage, MP, ZeRO-R and offload searched" : "");
            f->more_gpus = 1;
            out->nfix++;
            break;
        }
    }
    qsort(out->fix, (size_t)out->nfix, sizeof out->fix[0], cmp_fix);
    return ZP_OK;
}

static int fits_layers(const zp_search_req *r, zp_model *m, int64_t layers, int *err)
{
    m->layers = layers;
    zp_search_req q = *r;
    q.model = m;
    q.simulate = 0;
    q.progress = NULL;
    q.trace_path = NULL;
    zp_search_result res;
    zp_status st = zp_search_run(&q, &res);
    if (st != ZP_OK) {
        *err = st == ZP_ENOMEM;
        return 0;
    }
    int fit = res.n_fit > 0;
    zp_search_result_free(&res);
    return fit;
}

zp_status zp_near_miss_max_model(const zp_search_req *r, zp_model *out, int64_t *layers)
{
    zp_model m = *r->model;
    int err = 0;
    int64_t lo = 0, hi = 1;
    while (hi < (INT64_C(1) << 24) && fits_layers(r, &m, hi, &err)) {
        lo = hi;
        hi *= 2;
    }
    while (!err && hi - lo > 1) {
        int64_t mid = lo + (hi - lo) / 2;
        if (fits_layers(r, &m, mid, &err))
            lo = mid;
        else
            hi = mid;
    }
    if (err)
        return ZP_FAIL(ZP_ENOMEM, "out of memory");
    m.layers = lo > 0 ? lo : r->model->layers;
    *out = m;
    *layers = lo;
    return ZP_OK;
}
