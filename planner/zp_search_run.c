/* zp_search_run.c — the plan search (zp_search_run): the candidates the request leaves open, walked over the
 * dimensions' table, each at the largest micro-batch that fits (the memory model), screened by their bounds
 * (zp_search_bound.c), the best simulated in rounds, and ranked; a request is checked before (zp_search_check.c). */
#include "zp_search.h"

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include "zp_device.h"
#include "zp_device_fp8.h"
#include "zp_simrun.h"
#include "zp_time.h"
#include "zp_search_int.h"
#include "zp_units.h"

/* Upper bound of a plan's simulated throughput, samples/s (HUGE_VAL: no bound known). */
static double throughput_bound(const zp_eval *e)
{
    return e->bound_s > 0 ? e->global_batch / e->bound_s : HUGE_VAL;
}

/* A plan left unsimulated shows its bound: the step at least bound_s, the throughputs at most. */
static void apply_bound(const zp_model *model, zp_eval *e, const char *why)
{
    e->unsimulated = why;
    if (!(e->bound_s > 0))
        return; /* no bound known: it keeps its analytic estimate */
    double gpus = (double)zp_plan_gpus(&e->plan);
    memset(&e->time, 0, sizeof e->time);
    e->time.compute = e->time.total = e->bound_s;
    e->samples_per_s = e->global_batch / e->bound_s;
    e->tflops_per_gpu = zp_analytic_flops_executed(model, &e->plan, e->global_batch) / (e->bound_s * gpus) / 1e12;
    e->pflops = e->tflops_per_gpu * gpus / 1e3;
    e->method = "bound";
}

typedef struct {
    int idx;
    double bound; /* samples/s at most: from the plan's bound, or from its floor (zp_search_floor_memo) */
    int floor;    /* 1: bound is the floor's, the plan's own bound not yet computed */
} cand;

/* A fitting plan is dominated when another fitting plan runs the same batch (stage, MP, micro-batch,
 * accumulation, checkpointing) with a subset of its extra work: Pa adds an all-gather per block,
 * Pa+cpu adds PCIe copies, offload replaces the GPU Adam by the CPU's and adds copies. Those options
 * buy memory (a larger micro-batch: another candidate), never speed at the same batch. Plan j of out
 * dominates plan i: j fits, runs i's batch, and its extra work is a strict subset of i's. */
static int dominates(const zp_search_result *out, int j, int i)
{
    const zp_plan *p = &out->plans[i].plan, *q = &out->plans[j].plan;
    if (j == i || !out->plans[j].fits || q->stage != p->stage || q->mp != p->mp || q->ep != p->ep ||
        q->micro_batch != p->micro_batch || q->grad_accum != p->grad_accum || q->checkpoint != p->checkpoint ||
        q->selective != p->selective || q->rc_modules != p->rc_modules || q->sp != p->sp || q->pp != p->pp ||
        q->schedule != p->schedule || q->vstages != p->vstages)
        return 0;
    int work = p->pa + p->pa_cpu + (p->offload != ZP_OFFLOAD_NONE) + (p->offload == ZP_OFFLOAD_PARAMS);
    int qwork = q->pa + q->pa_cpu + (q->offload != ZP_OFFLOAD_NONE) + (q->offload == ZP_OFFLOAD_PARAMS);
    int subset = q->pa <= p->pa && q->pa_cpu <= p->pa_cpu &&
                 (q->offload == ZP_OFFLOAD_NONE || q->offload == p->offload ||
                  (q->offload == ZP_OFFLOAD_OPTIMIZER && p->offload == ZP_OFFLOAD_PARAMS));
    return subset && qwork < work;
}

/* The plans that may dominate one another run the same batch: equal in every field dominates() compares
 * besides the extra work. Sorting the plans' indices by those fields puts each plan's possible twins in one
 * run of `order`, so that a plan is checked against its run instead of every plan (deepseek-v3 on 2,048
 * GPUs at 15,360 sequences: 9,992 plans, 1e8 pairs before). dominates() still decides each pair, so the
 * answers are the pairwise loop's. run_lo[i] and run_hi[i]: plan i's run in `order`. */
typedef struct {
    int *order, *run_lo, *run_hi;
} twins;

static int cmp_batch(const void *a, const void *b, void *ctx)
{
    const zp_search_result *out = ctx;
    const zp_plan *p = &out->plans[*(const int *)a].plan, *q = &out->plans[*(const int *)b].plan;
    const int64_t x[12] = {p->stage, p->mp, p->ep, p->micro_batch, p->grad_accum, p->checkpoint, p->selective,
                           p->rc_modules, p->sp, p->pp, p->schedule, p->vstages};
    const int64_t y[12] = {q->stage, q->mp, q->ep, q->micro_batch, q->grad_accum, q->checkpoint, q->selective,
                           q->rc_modules, q->sp, q->pp, q->schedule, q->vstages};
    for (int k = 0; k < 12; k++)
        if (x[k] != y[k])
            return x[k] < y[k] ? -1 : 1;
    return 0;
}

static void twins_free(twins *t)
{
    free(t->order);
    free(t->run_lo);
    free(t->run_hi);
    memset(t, 0, sizeof *t);
}

static zp_status twins_find(const zp_search_result *out, twins *t)
{
    const size_t n = (size_t)(out->n > 0 ? out->n : 1);
    t->order = malloc(n * sizeof *t->order);
    t->run_lo = malloc(n * sizeof *t->run_lo);
    t->run_hi = malloc(n * sizeof *t->run_hi);
    if (!t->order || !t->run_lo || !t->run_hi) {
        twins_free(t);
        return ZP_FAIL(ZP_ENOMEM, "out of memory");
    }
    for (int i = 0; i < out->n; i++)
        t->order[i] = i;
    qsort_r(t->order, (size_t)out->n, sizeof *t->order, cmp_batch, (void *)out);
    for (int lo = 0, hi; lo < out->n; lo = hi) {
        for (hi = lo + 1; hi < out->n && cmp_batch(&t->order[lo], &t->order[hi], (void *)out) == 0; hi++)
            ;
        for (int k = lo; k < hi; k++) {
            t->run_lo[t->order[k]] = lo;
            t->run_hi[t->order[k]] = hi;
        }
    }
    return ZP_OK;
}

static int dominated(const zp_search_result *out, const twins *t, int i)
{
    for (int k = t->run_lo[i]; k < t->run_hi[i]; k++)
        if (dominates(out, t->order[k], i))
            return 1;
    return 0;
}

/* A dominated plan runs its twin's step and more: its step is at least the slowest step of the plans that
 * dominate it and are not dominated themselves (a least-work dominator is one), not only its own bound.
 * Those twins' steps are final (simulated or bounded) when this runs. */
static void raise_dominated(const zp_model *model, zp_search_result *out, const twins *t)
{
    for (int i = 0; i < out->n; i++) {
        zp_eval *e = &out->plans[i];
        if (!e->fits || !e->dominated)
            continue;
        double twin = 0; /* s */
        for (int k = t->run_lo[i]; k < t->run_hi[i]; k++) {
            const int j = t->order[k];
            if (!out->plans[j].dominated && dominates(out, j, i) && out->plans[j].time.total > twin)
                twin = out->plans[j].time.total;
        }
        if (twin > e->bound_s) {
            e->bound_s = twin;
            apply_bound(model, e, e->unsimulated);
        }
    }
}

static int cmp_cand(const void *a, const void *b)
{
    const cand *x = a, *y = b;
    return x->bound < y->bound ? 1 : (x->bound > y->bound ? -1 : x->idx - y->idx);
}

/* Simulates the fitting plans, most promising first, in rounds of `jobs` processes; a plan whose
 * throughput bound is below the best simulated throughput cannot win and is not simulated (branch and
 * bound). Every fitting plan left unsimulated shows its bound (method "bound"), so no figure shown is
 * better than what the simulation could give it. Then simulates the recommended plan once more to write
 * its trace. */
/* The profile that prices the request's plans: the user's or the preset's, for the plans' precision (bf16
 * without bf16 tensor cores, fp32 training). */
static void search_profile(const zp_search_req *r, zp_profile *builtin, zp_profile *typed)
{
    const zp_profile *prof = r->profile;
    if (!prof) {
        zp_device_profile_builtin(r->cluster, builtin);
        prof = builtin;
    }
    zp_plan probe = r->base; /* every candidate's precision: the base plan's, bf16 as resolved */
    probe.bf16 = zp_search_bf16(r);
    zp_profile_for_dtype(prof, zp_plan_precision_name(&probe), typed);
    if (r->base.fp8 && r->cluster) /* the linear layers' GEMMs at the FP8 rate */
        zp_device_profile_fp8(r->cluster, r->base.fp8, r->base.fp8_all_gather, typed);
    typed->eager = r->base.eager; /* torch.compile off: the blocks' elementwise ops as eager's kernels */
}

/* What makes plans' ops alike (MP, micro-batch, EP, CP, SP, PP, TP overlap): -1, 0 or 1 as p's shape is
 * before, the same as or after q's. */
static int shape_cmp(const zp_plan *p, const zp_plan *q)
{
    const int64_t x[7] = {p->mp, p->micro_batch, p->ep, p->cp, p->sp, p->pp, p->tp_overlap};
    const int64_t y[7] = {q->mp, q->micro_batch, q->ep, q->cp, q->sp, q->pp, q->tp_overlap};
    for (int k = 0; k < 7; k++)
        if (x[k] != y[k])
            return x[k] < y[k] ? -1 : 1;
    return 0;
}

/* Plan indices by shape, then index. */
static int cmp_shape(const void *a, const void *b, void *ctx)
{
    const zp_search_result *out = ctx;
    const int i = *(const int *)a, j = *(const int *)b;
    const int c = shape_cmp(&out->plans[i].plan, &out->plans[j].plan);
    return c ? c : i - j;
}

/* Every fitting plan's bound (zp_search_step_bound), the plans taken by the shape of their ops
 * (cmp_shape) so that one kernel-time memo serves a run of plans alike, emptied where the shape changes:
 * the memo returns the very doubles it was given (op_bound_memo), so the bounds are those of each plan
 * alone (tests/unit/test_search.c). deepseek-v3 on 2,048 GPUs: 7,987 bounds, half of them in the same
 * GEMMs as the plan before. With bound_shown the dominated plans (marked before) get none: 3,354
 * bounds there instead of 7,987. */
static zp_status bound_plans(const zp_search_req *r, const zp_profile *prof, zp_search_result *out,
                             unsigned char *floor)
{
    zp_search_floors gf = {0};
    int *order = malloc((size_t)(out->n > 0 ? out->n : 1) * sizeof *order), n = 0;
    zp_search_opmemo_tab memo = zp_search_opmemo_new();
    if (!order || !memo.v) {
        free(order);
        free(memo.v);
        return ZP_FAIL(ZP_ENOMEM, "out of memory");
    }
    for (int i = 0; i < out->n; i++)
        if (out->plans[i].fits && !(r->bound_shown > 0 && out->plans[i].dominated))
            order[n++] = i;
    qsort_r(order, (size_t)n, sizeof *order, cmp_shape, out);
    for (int k = 0; k < n; k++) {
        zp_eval *e = &out->plans[order[k]];
        if (k > 0 && shape_cmp(&out->plans[order[k - 1]].plan, &e->plan) != 0)
            memset(memo.v, 0, ZP_SEARCH_OPMEMO * sizeof *memo.v); /* another shape: other ops */
        if (floor) { /* lazy: the floor now, the bound where it is needed (settle) */
            e->bound_s = zp_search_floor_memo(r->model, prof, &e->plan, r->cluster, r->platform_file, &memo, &gf);
            floor[order[k]] = 1;
        } else {
            e->bound_s = zp_search_bound_memo(r->model, prof, &e->plan, r->cluster, r->platform_file, 0, &memo);
        }
    }
    free(gf.v);
    free(order);
    free(memo.v);
    return ZP_OK;
}

/* The fitting plans worth simulating, into c (as many as fit), each with its bound: not those dominated,
 * nor (beyond ZP_SIM_MAX_FULL_NODES nodes) those whose reduced simulation is not exact. */
static zp_status screen_plans(const zp_search_req *r, const zp_profile *prof, zp_search_result *out,
                              const twins *tw, unsigned char *floor, cand *c, int *ncand)
{
    const int64_t gpn = zp_cluster_domain(r->cluster); /* the simulation's nodes are NVLink domains */
    const int too_large = (r->gpus + gpn - 1) / gpn > ZP_SIM_MAX_FULL_NODES; /* for the full simulation */
    for (int i = 0; i < out->n; i++) /* first: bound_plans may leave them out */
        if (out->plans[i].fits && dominated(out, tw, i)) {
            out->plans[i].unsimulated = "the same batch as a plan with less extra work (Pa, Pa+cpu and offload "
                                        "buy memory, not speed)";
            out->plans[i].dominated = 1;
            out->n_dominated++;
        }
    ZP_TRY(bound_plans(r, prof, out, floor));
    *ncand = 0;
    for (int i = 0; i < out->n; i++) {
        zp_eval *e = &out->plans[i];
        if (!e->fits || e->dominated)
            continue;
        if (too_large) { /* only plans whose reduced simulation is exact (or asked for): the others keep
                            their bound */
            zp_sim_input in = {.model = r->model, .plan = &e->plan, .cluster = r->cluster,
                               .profile = prof, .platform_file = r->platform_file, .sim = r->sim,
                               .oversubscription = r->oversubscription};
            zp_sim_mode mode;
            zp_status st = zp_engine_pick(&in, &mode, NULL, 0);
            if (st != ZP_OK)
                return st;
            if (mode != ZP_SIM_REDUCED) {
                e->unsimulated = "it needs the full simulation, which takes at most 2048 nodes";
                out->n_too_large++;
                continue;
            }
        }
        c[(*ncand)++] = (cand){.idx = i, .bound = throughput_bound(e), .floor = floor && floor[i]};
    }
    qsort(c, (size_t)*ncand, sizeof *c, cmp_cand);
    return ZP_OK;
}

/* The simulation rounds' state: candidates by bound, the jobs of a round, the best so far. */
typedef struct {
    cand *c;
    int nc, next, done;
    zp_sim_job *jobs;
    int *which;
    int at_once;
    double best;           /* samples/s */
    int best_idx;
    zp_sim_input best_in;
    twins tw;              /* the plans' runs of possible twins (dominated, raise_dominated) */
    unsigned char *floor;  /* lazy bounds (bound_shown > 0): per plan, 1 while its bound_s is its floor; else NULL */
    zp_search_opmemo_tab memo;       /* ... the kernel-time memo of the bounds computed then */
    int memo_idx;          /* ... the plan whose shape the memo holds (-1: none) */
} rounds;

/* Lazy bounds: plan i's own bound in place of its floor (its throughput bound falls or stays). */
static void tighten(const zp_search_req *r, const zp_profile *prof, zp_search_result *out, rounds *R, int i)
{
    zp_eval *e = &out->plans[i];
    if (R->memo_idx >= 0 && shape_cmp(&out->plans[R->memo_idx].plan, &e->plan) != 0)
        memset(R->memo.v, 0, ZP_SEARCH_OPMEMO * sizeof *R->memo.v); /* another shape: other ops */
    R->memo_idx = i;
    e->bound_s = zp_search_bound_memo(r->model, prof, &e->plan, r->cluster, r->platform_file, 0,
                                 R->memo.v ? &R->memo : NULL);
    R->floor[i] = 0;
}

/* c[at..n) sorted by cmp_cand on their bounds, floors or not: until c[at] holds a plan's own bound, that
 * plan's bound is computed and it moves back to its place. Then c[at] is the candidate that sorting every
 * plan's own bound would have put there: a floor's throughput is at least its plan's, so no plan behind
 * c[at] has a bound above it (ties by index, as cmp_cand). */
static void settle(const zp_search_req *r, const zp_profile *prof, zp_search_result *out, rounds *R, cand *c, int at,
                   int n)
{
    while (at < n && c[at].floor) {
        cand x = c[at];
        tighten(r, prof, out, R, x.idx);
        x.bound = throughput_bound(&out->plans[x.idx]);
        x.floor = 0;
        int j = at;
        for (; j + 1 < n && cmp_cand(&c[j + 1], &x) < 0; j++)
            c[j] = c[j + 1];
        c[j] = x;
    }
}

/* One round: up to at_once candidates whose bound can still beat the best, simulated at once; 0 in *n when
 * none is left. */
static zp_status simulate_round(const zp_search_req *r, const zp_profile *prof, zp_search_result *out, rounds *R,
                                int *n)
{
    *n = 0;
    while (*n < R->at_once && R->next < R->nc && R->done + *n < r->max_simulated) {
        if (R->floor)
            settle(r, prof, out, R, R->c, R->next, R->nc);
        const cand *k = &R->c[R->next];
        if (k->bound <= R->best)
            break; /* sorted by bound: no later candidate can win either */
        R->next++;
        R->which[*n] = k->idx;
        R->jobs[*n] = (zp_sim_job){.in = {.model = r->model, .plan = &out->plans[k->idx].plan, .cluster = r->cluster,
                                          .profile = prof, .platform_file = r->platform_file, .sim = r->sim,
                                          .oversubscription = r->oversubscription}};
        (*n)++;
    }
    if (*n == 0)
        return ZP_OK;
    ZP_TRY(zp_simrun_many(R->jobs, *n, *n));
    for (int j = 0; j < *n; j++) {
        zp_eval *e = &out->plans[R->which[j]];
        if (R->jobs[j].st != ZP_OK)
            return ZP_FAIL(R->jobs[j].st, "simulating stage %d, MP %lld, micro-batch %lld: %s", e->plan.stage,
                           (long long)e->plan.mp, (long long)e->plan.micro_batch, R->jobs[j].err);
        zp_search_eval_simulated(r->model, e, &R->jobs[j].res);
        if (e->samples_per_s > R->best) {
            R->best = e->samples_per_s;
            R->best_idx = R->which[j];
            R->best_in = R->jobs[j].in;
        }
    }
    return ZP_OK;
}

/* Lazy bounds: the answer shows the best bound_shown fitting plans not dominated, the simulated ones first
 * (cmp_eval), then those bounded by throughput. The unsimulated ones that can be among those get their own
 * bound: in the order of their bounds (settle), until bound_shown - simulated of them have one and the
 * next one's floor is below the last one's bound (ties computed too: cmp_eval orders them by plan). A plan
 * left with its floor is bounded below the rows shown, as its own bound would be. */
static zp_status show_bounds(const zp_search_req *r, const zp_profile *prof, zp_search_result *out, rounds *R)
{
    const int want = r->bound_shown - R->done;
    if (!R->floor || want <= 0)
        return ZP_OK;
    cand *c = malloc((size_t)(out->n > 0 ? out->n : 1) * sizeof *c);
    if (!c)
        return ZP_FAIL(ZP_ENOMEM, "out of memory");
    int n = 0, found = 0;
    for (int i = 0; i < out->n; i++) {
        const zp_eval *e = &out->plans[i];
        if (e->fits && !e->dominated && e->unsimulated)
            c[n++] = (cand){.idx = i, .bound = throughput_bound(e), .floor = R->floor[i]};
    }
    qsort(c, (size_t)n, sizeof *c, cmp_cand);
    double last = HUGE_VAL; /* samples/s: the bound of the last row shown */
    for (int at = 0; at < n && !(found >= want && c[at].bound < last); at++) {
        settle(r, prof, out, R, c, at, n);
        if (found < want && out->plans[c[at].idx].bound_s > 0) { /* a row with no bound is not ranked so */
            found++;
            last = c[at].bound;
        }
    }
    free(c);
    return ZP_OK;
}

/* Why each candidate left unsimulated was: beaten by its bound, or past the simulations allowed; every
 * fitting plan left unsimulated then shows its bound. A floor at or below the best is its plan's bound's
 * verdict too; one above it is replaced by the plan's bound to tell. */
static zp_status mark_unsimulated(const zp_search_req *r, const zp_profile *prof, zp_search_result *out, rounds *R)
{
    for (int k = R->next; k < R->nc; k++) {
        zp_eval *e = &out->plans[R->c[k].idx];
        if (R->c[k].floor && R->c[k].bound > R->best) {
            tighten(r, prof, out, R, R->c[k].idx);
            R->c[k].bound = throughput_bound(e);
            R->c[k].floor = 0;
        }
        if (R->c[k].bound <= R->best) {
            e->unsimulated = "its kernels alone, or its collectives alone, take longer than the best simulated step";
            out->n_pruned++;
        } else {
            e->unsimulated = "more plans than the simulations allowed";
            out->n_capped++;
        }
    }
    ZP_TRY(show_bounds(r, prof, out, R));
    for (int i = 0; i < out->n; i++)
        if (out->plans[i].fits && out->plans[i].unsimulated)
            apply_bound(r->model, &out->plans[i], out->plans[i].unsimulated);
    raise_dominated(r->model, out, &R->tw);
    return ZP_OK;
}

static zp_status simulate_plans(const zp_search_req *r, zp_search_result *out)
{
    zp_profile builtin, typed;
    search_profile(r, &builtin, &typed);
    const zp_profile *prof = &typed;
    int nfit = 0;
    for (int i = 0; i < out->n; i++)
        nfit += out->plans[i].fits;
    if (nfit == 0)
        return ZP_OK; /* nothing to simulate */
    rounds R = {.best_idx = -1, .memo_idx = -1};
    if (r->bound_shown > 0) { /* lazy bounds: the floors first (bound_plans), the bounds as needed */
        R.floor = calloc((size_t)out->n, 1);
        R.memo = zp_search_opmemo_new(); /* NULL: every op priced alike */
    }
    R.at_once = r->jobs > 0 ? r->jobs : (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (R.at_once < 1)
        R.at_once = 1;
    R.c = calloc((size_t)nfit, sizeof *R.c);
    R.jobs = calloc((size_t)R.at_once, sizeof *R.jobs);
    R.which = calloc((size_t)R.at_once, sizeof *R.which);
    const int short_of_memory = !R.c || !R.jobs || !R.which || (r->bound_shown > 0 && !R.floor);
    zp_status st = short_of_memory ? ZP_FAIL(ZP_ENOMEM, "out of memory") : twins_find(out, &R.tw);
    const int ready = st == ZP_OK;
    if (st == ZP_OK)
        st = screen_plans(r, prof, out, &R.tw, R.floor, R.c, &R.nc);
#ifdef __GLIBC__
    /* every simulation is a fork of this process, which copies its page tables: the schedules the walk and
     * the bounds built and freed leave ~250 MB of free heap mapped (deepseek-v3 at 15,360 sequences), so
     * give it back first (no figure changes: only free pages go) */
    malloc_trim(0);
#endif
    const double t0 = zp_time_now_s();
    while (st == ZP_OK && R.next < R.nc && R.done < r->max_simulated) {
        int n;
        st = simulate_round(r, prof, out, &R, &n);
        if (n == 0)
            break;
        R.done += n;
        if (r->progress && R.floor) /* the next candidate's own bound */
            settle(r, prof, out, &R, R.c, R.next, R.nc);
        if (r->progress) { /* the total shrinks to what will run once the bound ends the search */
            const int ended = R.next >= R.nc || R.c[R.next].bound <= R.best;
            r->progress(r->progress_ctx, R.done, ended ? R.done : (R.nc < r->max_simulated ? R.nc : r->max_simulated));
        }
    }
    out->n_simulated = R.done;
    if (ready) {
        const zp_status mst = mark_unsimulated(r, prof, out, &R);
        if (st == ZP_OK)
            st = mst;
    }
    if (st == ZP_OK && r->trace_path && R.best_idx >= 0) {
        zp_sim_job tj = {.in = R.best_in};
        tj.in.trace_path = r->trace_path;
        st = zp_simrun_one(&tj);
    }
    out->sim_wall_s = zp_time_now_s() - t0;
    free(R.c);
    free(R.jobs);
    free(R.which);
    twins_free(&R.tw);
    free(R.floor);
    free(R.memo.v);
    return st;
}

static int method_rank(const zp_eval *e)
{
    return strcmp(e->method, "simgrid") == 0 ? 0 : e->dominated ? 2 : strcmp(e->method, "bound") == 0 ? 1 : 3;
}

static int cmp_eval(const void *a, const void *b)
{
    const zp_eval *x = a, *y = b;
    if (x->fits != y->fits)
        return y->fits - x->fits;
    /* simulated plans before those bounded, bounded before those dominated and those only estimated: a
     * bound is never ranked above a simulated plan it has not beaten */
    int xs = method_rank(x), ys = method_rank(y);
    if (x->fits && xs != ys)
        return xs - ys;
    if (x->fits) { /* by tokens/s: plans of different global batches compare by throughput, not step */
        if (x->tokens_per_s != y->tokens_per_s)
            return x->tokens_per_s < y->tokens_per_s ? 1 : -1;
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
    if (x->plan.pa + x->plan.pa_cpu != y->plan.pa + y->plan.pa_cpu)
        return (x->plan.pa + x->plan.pa_cpu) - (y->plan.pa + y->plan.pa_cpu);
    if (x->plan.ep != y->plan.ep)
        return x->plan.ep < y->plan.ep ? -1 : 1;
    if (x->plan.pp != y->plan.pp)
        return x->plan.pp < y->plan.pp ? -1 : 1;
    if (x->plan.vstages != y->plan.vstages)
        return x->plan.vstages - y->plan.vstages;
    if (x->plan.sp != y->plan.sp)
        return x->plan.sp - y->plan.sp;
    return (int)zp_plan_recompute(&x->plan) - (int)zp_plan_recompute(&y->plan);
}

zp_status zp_search_run(const zp_search_req *r, zp_search_result *out)
{
    memset(out, 0, sizeof *out);
    ZP_TRY(zp_search_validate(r));
    zp_eval *all = NULL;
    int n = 0;
    int64_t target = 0;
    ZP_TRY(zp_search_walk(r, &all, &n, &target));
    if (n == 0) {
        free(all);
        if (deg_given(r, ZP_DIM_EP) && r->base.ep > 1)
            return ZP_FAIL(ZP_EINVAL, "no plan satisfies the given options: --ep %lld must divide the data-parallel "
                                      "degree (GPUs / MP) of some MP degree searched", (long long)r->base.ep);
        return ZP_FAIL(ZP_EINVAL, "no plan satisfies the given options (check --global-batch against the "
                                  "data-parallel degrees: GPUs / (MP x PP); the interleaved schedule needs the "
                                  "micro-batches per step a multiple of --pp)");
    }
    qsort(all, (size_t)n, sizeof *all, cmp_eval);
    out->default_batch = target;
    out->plans = all;
    out->n = n;
    for (int i = 0; i < n; i++)
        out->n_fit += all[i].fits;
    if (r->simulate) {
        zp_status sst = simulate_plans(r, out);
        if (sst != ZP_OK) {
            zp_search_result_free(out);
            return sst;
        }
        for (int i = 0; i < out->n; i++) /* the simulated or bounded steps' tokens/s and MFU */
            zp_units_fill(r->model, r->cluster, &out->plans[i]);
        qsort(out->plans, (size_t)out->n, sizeof *out->plans, cmp_eval);
    }
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
