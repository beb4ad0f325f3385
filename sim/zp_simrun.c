#include "zp_simrun.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "zp_child.h"
#include "zp_schedule.h"

/* What a simulation process sends back. */
typedef struct {
    zp_status st;
    zp_sim_result res;
    char err[256];
} wire;

/* Runs in the child. SimGrid writes to stdout and stderr on its own: the child's go to /dev/null, so
 * that the parent's output stays clean. */
static int run_child(void *ctx, void *result)
{
    zp_sim_job *job = ctx;
    wire *w = result;
    w->st = zp_engine_run(&job->in, &w->res);
    if (w->st != ZP_OK)
        snprintf(w->err, sizeof w->err, "%s", zp_error_message());
    return 0;
}

static void finish(zp_sim_job *job, const zp_child *c, const wire *w)
{
    if (c->result_len == sizeof *w) {
        job->st = w->st;
        job->res = w->res;
        snprintf(job->err, sizeof job->err, "%s", w->err);
    } else {
        char how[128];
        zp_child_describe(c, how, sizeof how);
        job->st = ZP_ERUNTIME;
        snprintf(job->err, sizeof job->err, "the simulation process %s", how);
    }
}

static zp_status run_pool(zp_sim_job *jobs, int n, int parallel)
{
    if (parallel <= 0) {
        long cpus = sysconf(_SC_NPROCESSORS_ONLN);
        parallel = cpus > 0 ? (int)cpus : 1;
    }
    if (parallel > n)
        parallel = n;
    if (parallel > 64)
        parallel = 64;
    if (parallel < 1)
        parallel = 1;
    /* slot i runs job slot_job[i] (-1: free) in kids[i], whose result arrives in wires[i] */
    zp_child *kids = calloc((size_t)parallel, sizeof *kids);
    wire *wires = calloc((size_t)parallel, sizeof *wires);
    int *slot_job = malloc((size_t)parallel * sizeof *slot_job);
    if (!kids || !wires || !slot_job) {
        free(kids);
        free(wires);
        free(slot_job);
        return ZP_FAIL(ZP_ENOMEM, "out of memory");
    }
    for (int i = 0; i < parallel; i++)
        slot_job[i] = -1;
    int next = 0, running = 0;
    zp_status st = ZP_OK;
    while ((next < n && st == ZP_OK) || running > 0) {
        for (int i = 0; i < parallel && next < n && st == ZP_OK; i++) {
            if (slot_job[i] >= 0)
                continue;
            kids[i] = (zp_child){.fn = run_child, .ctx = &jobs[next], .result = &wires[i],
                                 .result_size = sizeof wires[i],
                                 .flags = ZP_CHILD_STDOUT_NULL | ZP_CHILD_STDERR_NULL | ZP_CHILD_DIE_WITH_PARENT};
            st = zp_child_start(&kids[i]);
            if (st == ZP_OK) {
                slot_job[i] = next++;
                running++;
            }
        }
        if (running == 0)
            break;
        /* collect whichever child has written its result (or died: its pipe closes) */
        int i;
        zp_status ws = zp_child_wait_any(kids, parallel, &i);
        if (ws != ZP_OK) {
            st = ws;
            break;
        }
        finish(&jobs[slot_job[i]], &kids[i], &wires[i]);
        slot_job[i] = -1;
        running--;
    }
    for (int i = 0; i < parallel; i++)
        zp_child_kill(&kids[i]); /* none left running unless waiting failed */
    free(kids);
    free(wires);
    free(slot_job);
    return st;
}

/* A step of gradient accumulation is affine in its micro-steps (zp_schedule.h): without a pipeline, a step
 * of m > ZP_ACCUM_AFFINE_ABOVE micro-steps is simulated at two short steps and extrapolated as below (every
 * stage: ZeRO's per-micro-step gathers and reductions repeat alike; tests/sim/test_bound.c compares random
 * plans). A
 * pipeline of P stages without ZeRO's per-micro-batch collectives (stage 0 or 1) runs a step that is
 * affine in its micro-batches m once the pipeline is full (m >= P): each further micro-batch adds the
 * bottleneck stage's period, while the fill, the drain, the gradients' all-reduce and the optimizer do not
 * depend on m (checked for 1F1B, GPipe and interleaved schedules at m = P to 6P to the clock's rounding,
 * tests/sim/test_sim.c). Such a step of m >= m2 + P micro-batches is simulated at m1 = P and m2 = 2P (2P and
 * 3P for the interleaved schedule, which needs multiples of P) and every figure extrapolated:
 * x(m) = x(m1) + (x(m2) - x(m1)) (m - m1) / (m2 - m1). 1,008B on 3,072 GPUs (P = 64, m = 512,
 * interleaved): 128 and 192 micro-batches simulated instead of 512, in two processes at once. */
static int extrapolable(const zp_sim_input *in, int64_t *m1, int64_t *m2)
{
    const zp_plan *p = in->plan;
    if (in->every_micro_batch || in->trace_path || !p)
        return 0;
    if (p->pp <= 1) { /* gradient accumulation: affine in the micro-steps (zp_schedule.h) */
        *m1 = ZP_ACCUM_SAMPLE;
        *m2 = ZP_ACCUM_SAMPLE + 1;
        return p->grad_accum > ZP_ACCUM_AFFINE_ABOVE;
    }
    if (p->stage > 1)
        return 0;
    /* the interleaved schedule's warm-up, min(2(P - s - 1) + (v - 1) P, m v) forwards on stage s (Megatron-LM),
     * is capped by m v below m = 1.5 P: from 2P on every stage's warm-up is its own */
    const int64_t first = p->schedule == ZP_PP_INTERLEAVED ? 2 : 1;
    *m1 = first * p->pp;
    *m2 = (first + 1) * p->pp;
    return p->grad_accum >= *m2 + p->pp;
}

/* What a simulation costs, roughly: micro-batches x stages. */
static double sim_cost(const zp_sim_job *j)
{
    const zp_plan *p = j->in.plan;
    return p ? (double)(p->grad_accum > 0 ? p->grad_accum : 1) * (double)(p->pp > 0 ? p->pp : 1) : 0.0;
}

static void extrapolate(const zp_sim_result *a, const zp_sim_result *b, double f, zp_sim_result *out)
{
    *out = *b; /* the counts that do not depend on m (nodes, stages, the mode) */
#define X(field) out->field = a->field + (b->field - a->field) * f
    X(step_time);
    X(compute);
    X(nccl_contention);
    X(host_wait);
    X(mp_comm);
    X(dp_exposed);
    X(optimizer);
    X(offload_exposed);
    X(pp_exposed);
    X(comm_busy);
    X(pcie_busy);
    X(flops_per_gpu);
    X(activities);
    X(tree_allreduces);
    for (int i = 0; i < ZP_ENGINE_MAX_STAGE_STATS; i++)
        X(stage_busy[i]);
    for (int i = 0; i < ZP_NPHASES; i++)
        X(phase[i]);
    for (int i = 0; i < ZP_NOPK; i++)
        X(kind[i]);
#undef X
}

zp_status zp_simrun_many(zp_sim_job *jobs, int n, int parallel)
{
    int extra = 0;
    int64_t m1, m2;
    for (int j = 0; j < n; j++)
        extra += extrapolable(&jobs[j].in, &m1, &m2);
    if (extra == 0)
        return run_pool(jobs, n, parallel);
    /* each extrapolated job runs as two shorter ones (m1, then m2), side by side: sub-job i is half[i]
     * of jobs[of[i]] (0: the job itself or its m1 step, 1: its m2 step) */
    const int total = n + extra;
    zp_sim_job *sub = calloc((size_t)total, sizeof *sub);
    zp_plan *plans = calloc((size_t)total, sizeof *plans);
    int *of = calloc((size_t)total, sizeof *of), *half = calloc((size_t)total, sizeof *half);
    const zp_sim_job **part = calloc((size_t)2 * (size_t)n, sizeof *part); /* [2j + half] after the run */
    zp_status st = sub && plans && of && half && part ? ZP_OK : ZP_FAIL(ZP_ENOMEM, "out of memory");
    for (int j = 0, k = 0; st == ZP_OK && j < n; j++) {
        const int two = extrapolable(&jobs[j].in, &m1, &m2);
        for (int h = 0; h <= two; h++, k++) {
            sub[k] = jobs[j];
            of[k] = j;
            half[k] = h;
            if (two) {
                plans[k] = *jobs[j].in.plan;
                plans[k].grad_accum = h ? m2 : m1;
                sub[k].in.plan = &plans[k];
            }
        }
    }
    /* longest first (micro-batches x stages), so that those run at once end together */
    for (int i = 1; st == ZP_OK && i < total; i++)
        for (int j = i; j > 0 && sim_cost(&sub[j]) > sim_cost(&sub[j - 1]); j--) {
            zp_sim_job t = sub[j];
            sub[j] = sub[j - 1];
            sub[j - 1] = t;
            int o = of[j], h = half[j];
            of[j] = of[j - 1], half[j] = half[j - 1];
            of[j - 1] = o, half[j - 1] = h;
        }
    /* as many at once as the caller asked for its jobs, scaled to the sub-jobs, within the CPUs */
    int par = parallel;
    if (parallel > 0) {
        const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
        const int want = parallel * total / n, cap = cpus > parallel ? (int)cpus : parallel;
        par = want < cap ? want : cap;
    }
    if (st == ZP_OK)
        st = run_pool(sub, total, par);
    for (int i = 0; st == ZP_OK && i < total; i++)
        part[2 * of[i] + half[i]] = &sub[i];
    for (int j = 0; st == ZP_OK && j < n; j++) {
        const zp_sim_job *a = part[2 * j], *b = part[2 * j + 1];
        const zp_sim_job *bad = a->st != ZP_OK ? a : b && b->st != ZP_OK ? b : NULL;
        jobs[j].st = bad ? bad->st : ZP_OK;
        snprintf(jobs[j].err, sizeof jobs[j].err, "%s", bad ? bad->err : "");
        if (bad)
            continue;
        if (b) { /* the two steps' micro-batches are their plans' */
            const double ma = (double)a->in.plan->grad_accum, mb = (double)b->in.plan->grad_accum;
            extrapolate(&a->res, &b->res, ((double)jobs[j].in.plan->grad_accum - ma) / (mb - ma), &jobs[j].res);
        } else {
            jobs[j].res = a->res;
        }
    }
    free(sub);
    free(plans);
    free(of);
    free(half);
    free(part);
    return st;
}

zp_status zp_simrun_one(zp_sim_job *job)
{
    ZP_TRY(zp_simrun_many(job, 1, 1));
    if (job->st != ZP_OK)
        return ZP_FAIL(job->st, "%s", job->err);
    return ZP_OK;
}
