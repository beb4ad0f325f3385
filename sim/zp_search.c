#include "zp_search.h"

#include <stdlib.h>
#include <string.h>

void zp_search_req_default(zp_search_req *r, const zp_model *model, const zp_cluster *cluster, int64_t gpus)
{
    memset(r, 0, sizeof *r);
    r->model = model;
    r->cluster = cluster;
    r->gpu_mem = cluster ? cluster->gpu_mem : 0.0;
    r->gpus = gpus;
    r->stage = ZP_SEARCH_ANY;
    r->mp = ZP_SEARCH_ANY;
    r->micro_batch = ZP_SEARCH_ANY;
    r->global_batch = ZP_SEARCH_ANY;
    r->pa = ZP_SEARCH_ANY;
    r->pa_cpu = ZP_SEARCH_ANY;
    r->offload = ZP_SEARCH_ANY;
    r->checkpoint = 1;
    r->cb = 1;
    r->md = 1;
    r->bucket = ZP_DEFAULT_BUCKET;
    r->k_optimizer = ZP_ADAM_K;
}

zp_status zp_search_validate(const zp_search_req *r)
{
    if (r->gpus < 1)
        return ZP_FAIL(ZP_EINVAL, "--gpus: must be at least 1");
    if (r->gpus > ZP_MAX_GPUS)
        return ZP_FAIL(ZP_ERANGE, "--gpus: %lld is beyond any machine (at most %lld)", (long long)r->gpus,
                       (long long)ZP_MAX_GPUS);
    if (!(r->gpu_mem >= 1e6))
        return ZP_FAIL(ZP_EINVAL, "--gpu-mem: %.0f bytes is too small to hold anything (use e.g. 32G)", r->gpu_mem);
    if (r->stage != ZP_SEARCH_ANY && !zp_stage_get(r->stage))
        return ZP_FAIL(ZP_EINVAL, "--stage: %d is not a ZeRO stage (use 0, 1, 2 or 3)", r->stage);
    if (r->mp != ZP_SEARCH_ANY) {
        if (r->mp < 1)
            return ZP_FAIL(ZP_EINVAL, "--mp: must be at least 1");
        if (r->mp > r->gpus)
            return ZP_FAIL(ZP_EINVAL, "--mp: %lld exceeds the %lld GPUs", (long long)r->mp, (long long)r->gpus);
        if (r->gpus % r->mp != 0)
            return ZP_FAIL(ZP_EINVAL, "--mp: %lld does not divide the %lld GPUs", (long long)r->mp,
                           (long long)r->gpus);
        if (r->model->heads % r->mp != 0)
            return ZP_FAIL(ZP_EINVAL, "--mp: %lld does not divide the model's %lld attention heads (Megatron splits "
                                      "heads across MP ranks)",
                           (long long)r->mp, (long long)r->model->heads);
    }
    if (r->micro_batch != ZP_SEARCH_ANY && r->micro_batch < 1)
        return ZP_FAIL(ZP_EINVAL, "--micro-batch: must be at least 1");
    if (r->micro_batch > ZP_MAX_MICRO_BATCH)
        return ZP_FAIL(ZP_ERANGE, "--micro-batch: at most %lld", (long long)ZP_MAX_MICRO_BATCH);
    if (r->global_batch != ZP_SEARCH_ANY && r->global_batch < 1)
        return ZP_FAIL(ZP_EINVAL, "--global-batch: must be at least 1");
    if (r->global_batch != ZP_SEARCH_ANY && r->mp != ZP_SEARCH_ANY) {
        int64_t dp = r->gpus / r->mp;
        if (r->global_batch % dp != 0)
            return ZP_FAIL(ZP_EINVAL, "--global-batch: %lld is not a multiple of the data-parallel degree %lld",
                           (long long)r->global_batch, (long long)dp);
        if (r->micro_batch != ZP_SEARCH_ANY && r->global_batch % (dp * r->micro_batch) != 0)
            return ZP_FAIL(ZP_EINVAL,
                           "--global-batch: %lld must equal micro-batch %lld x accumulation x data-parallel %lld",
                           (long long)r->global_batch, (long long)r->micro_batch, (long long)dp);
    }
    if ((r->pa == 1 || r->pa_cpu == 1) && !r->checkpoint)
        return ZP_FAIL(ZP_EINVAL, "--pa/--pa-cpu partition activation checkpoints: drop --no-checkpoint");
    if (r->offload == ZP_OFFLOAD_OPTIMIZER && r->stage == 0)
        return ZP_FAIL(ZP_EINVAL, "--offload optimizer needs ZeRO stage 1, 2 or 3 (as in DeepSpeed)");
    if (r->offload == ZP_OFFLOAD_PARAMS && r->stage != ZP_SEARCH_ANY && r->stage != 3)
        return ZP_FAIL(ZP_EINVAL, "--offload params needs ZeRO stage 3 (as in DeepSpeed)");
    if (r->cb && !(r->bucket >= 1 && r->bucket <= 1e15))
        return ZP_FAIL(ZP_EINVAL, "--bucket: must be between 1 and 1e15 elements");
    return zp_model_validate(r->model);
}

static double host_per_gpu(const zp_cluster *c) { return c->host_mem / (double)c->gpus_per_node; }

zp_status zp_search_eval(const zp_model *model, const zp_cluster *cluster, double gpu_mem, const zp_plan *plan,
                         zp_eval *out)
{
    memset(out, 0, sizeof *out);
    out->plan = *plan;
    ZP_TRY(zp_memory_estimate(model, plan, &out->mem));
    out->fits = zp_memory_fits(&out->mem, gpu_mem, host_per_gpu(cluster), out->reason, sizeof out->reason);
    ZP_TRY(zp_analytic_step(model, plan, cluster, &out->time));
    out->global_batch = zp_plan_global_batch(plan);
    double gpus = (double)(plan->dp * plan->mp);
    out->samples_per_s = out->global_batch / out->time.total;
    out->tflops_per_gpu = zp_model_flops_iteration(model, out->global_batch, plan->checkpoint) /
                          (out->time.total * gpus) / 1e12;
    out->pflops = out->tflops_per_gpu * gpus / 1e3;
    out->method = "analytic";
    return ZP_OK;
}

typedef struct {
    zp_eval *v;
    int n, cap;
} evec;

static zp_status evec_push(evec *e, const zp_eval *x)
{
    if (e->n == e->cap) {
        int cap = e->cap ? 2 * e->cap : 64;
        zp_eval *nv = realloc(e->v, (size_t)cap * sizeof *nv);
        if (!nv)
            return ZP_FAIL(ZP_ENOMEM, "out of memory");
        e->v = nv;
        e->cap = cap;
    }
    e->v[e->n++] = *x;
    return ZP_OK;
}

/* Largest divisor of n that is <= limit (n >= 1, limit >= 1). */
static int64_t largest_divisor_le(int64_t n, int64_t limit)
{
    for (int64_t d = limit < n ? limit : n; d > 1; d--)
        if (n % d == 0)
            return d;
    return 1;
}

/* Evaluates one candidate: picks the micro-batch (given, or the largest that fits and, with a
 * global batch, divides it) and records the result. */
static zp_status eval_candidate(const zp_search_req *r, zp_plan *p, evec *out)
{
    const double host = host_per_gpu(r->cluster);
    int64_t per_rank = 0; /* sequences per DP rank per step, when the global batch is fixed */
    if (r->global_batch != ZP_SEARCH_ANY) {
        if (r->global_batch % p->dp != 0)
            return ZP_OK; /* this MP degree cannot keep the batch */
        per_rank = r->global_batch / p->dp;
    }
    int64_t b;
    if (r->micro_batch != ZP_SEARCH_ANY) {
        b = r->micro_batch;
        if (per_rank && per_rank % b != 0)
            return ZP_OK;
    } else {
        int64_t cap = per_rank ? per_rank : ZP_MAX_MICRO_BATCH;
        b = zp_memory_max_micro_batch(r->model, p, r->gpu_mem, host, cap);
        if (b >= 1 && per_rank)
            b = largest_divisor_le(per_rank, b);
        if (b < 1)
            b = 1; /* does not fit even at 1: evaluate there to say why */
    }
    p->micro_batch = b;
    p->grad_accum = per_rank ? per_rank / b : 1;
    zp_eval e;
    ZP_TRY(zp_search_eval(r->model, r->cluster, r->gpu_mem, p, &e));
    return evec_push(out, &e);
}

static int cmp_eval(const void *a, const void *b)
{
    const zp_eval *x = a, *y = b;
    if (x->fits != y->fits)
        return y->fits - x->fits;
    if (x->fits) {
        if (x->samples_per_s != y->samples_per_s)
            return x->samples_per_s < y->samples_per_s ? 1 : -1;
    } else if (x->mem.total != y->mem.total) {
        return x->mem.total < y->mem.total ? -1 : 1; /* closest to fitting first */
    }
    /* ties: the simpler plan first (lower stage, no offload, fewer options) */
    if (x->plan.stage != y->plan.stage)
        return x->plan.stage - y->plan.stage;
    if (x->plan.offload != y->plan.offload)
        return (int)x->plan.offload - (int)y->plan.offload;
    if (x->plan.mp != y->plan.mp)
        return x->plan.mp < y->plan.mp ? -1 : 1;
    return (x->plan.pa + x->plan.pa_cpu) - (y->plan.pa + y->plan.pa_cpu);
}

zp_status zp_search_run(const zp_search_req *r, zp_search_result *out)
{
    memset(out, 0, sizeof *out);
    ZP_TRY(zp_search_validate(r));
    /* When the user fixed the stage, the MP degree and the batch, the plan is exactly theirs: the
     * ZeRO-R options and offload they did not name are off, not searched. */
    int exact = r->stage != ZP_SEARCH_ANY && r->mp != ZP_SEARCH_ANY &&
                (r->micro_batch != ZP_SEARCH_ANY || r->global_batch != ZP_SEARCH_ANY);
    int pa_fixed = r->pa != ZP_SEARCH_ANY ? r->pa : (exact ? 0 : ZP_SEARCH_ANY);
    int pacpu_fixed = r->pa_cpu != ZP_SEARCH_ANY ? r->pa_cpu : (exact ? 0 : ZP_SEARCH_ANY);
    int off_fixed = r->offload != ZP_SEARCH_ANY ? r->offload : (exact ? ZP_OFFLOAD_NONE : ZP_SEARCH_ANY);

    evec all = {0};
    zp_status st = ZP_OK;
    for (int stage = 0; stage <= 3 && st == ZP_OK; stage++) {
        if (r->stage != ZP_SEARCH_ANY && stage != r->stage)
            continue;
        for (int64_t mp = 1; mp <= r->gpus && st == ZP_OK; mp *= 2) {
            if (r->mp != ZP_SEARCH_ANY) {
                mp = r->mp;
            } else if (mp > r->cluster->gpus_per_node || r->gpus % mp != 0 || r->model->heads % mp != 0) {
                continue;
            }
            /* ZeRO-R activation options: none, Pa, Pa+cpu (Pa only matters with MP > 1). */
            for (int ra = 0; ra < 3 && st == ZP_OK; ra++) {
                int pa = ra >= 1, pacpu = ra == 2;
                if (pacpu_fixed == 1) {
                    if (!pacpu)
                        continue;
                } else {
                    if (pacpu_fixed == 0 && pacpu)
                        continue;
                    if (pa_fixed != ZP_SEARCH_ANY && pa != pa_fixed)
                        continue;
                }
                if (!r->checkpoint && ra > 0)
                    continue;
                if (mp == 1 && ra > 0 && pa_fixed != 1 && pacpu_fixed != 1)
                    continue; /* no MP group to partition across */
                for (int off = 0; off <= 2 && st == ZP_OK; off++) {
                    if (off_fixed != ZP_SEARCH_ANY && off != off_fixed)
                        continue;
                    if ((off == ZP_OFFLOAD_OPTIMIZER && stage < 1) || (off == ZP_OFFLOAD_PARAMS && stage != 3))
                        continue;
                    zp_plan p;
                    zp_plan_default(&p, r->gpus / mp);
                    p.stage = stage;
                    p.mp = mp;
                    p.checkpoint = r->checkpoint;
                    p.pa = pa;
                    p.pa_cpu = pacpu;
                    p.cb = r->cb;
                    p.md = r->md;
                    p.bucket = r->bucket;
                    p.offload = (zp_offload)off;
                    p.k_optimizer = r->k_optimizer;
                    st = eval_candidate(r, &p, &all);
                }
            }
            if (r->mp != ZP_SEARCH_ANY)
                break;
        }
    }
    if (st != ZP_OK) {
        free(all.v);
        return st;
    }
    if (all.n == 0) {
        free(all.v);
        return ZP_FAIL(ZP_EINVAL, "no plan satisfies the given options (check --global-batch against the "
                                  "data-parallel degrees: GPUs / MP)");
    }
    if (!exact)
        qsort(all.v, (size_t)all.n, sizeof *all.v, cmp_eval);
    out->plans = all.v;
    out->n = all.n;
    for (int i = 0; i < all.n; i++)
        out->n_fit += all.v[i].fits;
    return ZP_OK;
}

void zp_search_result_free(zp_search_result *r)
{
    if (!r)
        return;
    free(r->plans);
    r->plans = NULL;
    r->n = r->n_fit = 0;
}
