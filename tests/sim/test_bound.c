/* The search's pruning bound (zp_search_step_bound: the compute stream's kernels and blocking collectives,
 * or the comm stream's collectives, each stream's ops one after another at their least time) is a true lower
 * bound of the simulated step: on random plans across models, clusters, stages, MP, micro-batches,
 * ZeRO-R options, offload, precision, overlap, pipeline stages (1F1B, GPipe, interleaved), sequence
 * parallelism and selective recompute, bound <= simulated in every case. The search skips a
 * plan whose bound is no better than the best simulated step and shows that bound as its step (">="), so
 * a bound above a simulation would hide a better plan or rank a plan above one that beats it.
 *
 * A plain program (not Criterion): it forks its simulations itself (zp_simrun, two at a time), prints the
 * figures and exits 1 on a violation. ZP_BOUND_PLANS (default 1000) and ZP_BOUND_SEED (default 1) change
 * the sample. Layers are kept small (1-24) so that the 1,000 simulations take seconds on 2 cores:
 * the bound's argument does not depend on depth. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zp_device.h"
#include "zp_dispatch.h"
#include "zp_pipeline.h"
#include "zp_search.h"
#include "zp_simrun.h"
#include "zp_time.h"
#include "zp_zoo.h"

static uint64_t g_rng, g_rng_ep = 7, g_rng_rc = 11, g_rng_p2p = 13; /* the others: the MoE dispatch options,
                                          the recompute modules and the pipeline sends' overlap, drawn beside the
                                          plans (the plans drawn are those of seed 1 before them) */

static uint32_t rnd_of(uint64_t *state, uint32_t n) /* uniform in [0, n) (splitmix64) */
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return (uint32_t)(z % n);
}

static uint32_t rnd(uint32_t n) { return rnd_of(&g_rng, n); }

typedef struct {
    zp_model model;
    zp_plan plan;
    const zp_cluster *cluster;
    zp_profile prof;
    double bound;
} sample;

/* A random model: a zoo model or a GPT of a random size, cut to 1-24 layers; moe: an MoE zoo model. */
static void random_model(zp_model *m, int moe)
{
    if (moe) {
        do
            *m = zp_zoo_get((int)rnd((uint32_t)zp_zoo_count()))->model;
        while (m->experts <= 1);
    } else if (rnd(2)) {
        int n = zp_zoo_count();
        *m = zp_zoo_get((int)rnd((uint32_t)n))->model;
    } else {
        static const double sizes[] = {125e6, 350e6, 1.5e9, 8e9, 20e9, 100e9};
        zp_model_from_size(sizes[rnd(6)], m);
    }
    m->layers = 1 + rnd(24);
    static const int64_t seqs[] = {128, 512, 1024, 2048};
    m->seq = seqs[rnd(4)];
}

static int64_t random_mp(const zp_model *m, int64_t gpus, int64_t gpn)
{
    int64_t opts[8], n = 0;
    for (int64_t mp = 1; mp <= gpus && mp <= gpn && n < 8; mp *= 2)
        if (gpus % mp == 0 && m->heads % mp == 0)
            opts[n++] = mp;
    return opts[rnd((uint32_t)n)];
}

/* A random plan; moe: of an MoE model, a pipeline tried first (its expert all-to-alls on the stages'
 * compute streams). */
static void random_sample(sample *s, int moe)
{
    memset(s, 0, sizeof *s);
    random_model(&s->model, moe);
    s->cluster = zp_cluster_get((int)rnd((uint32_t)zp_cluster_count()));
    const int64_t gpn = s->cluster->gpus_per_node;
    static const int64_t nodes[] = {1, 2, 4, 8, 25};
    int64_t gpus = rnd(5) == 0 ? (int64_t)1 << rnd(3) : nodes[rnd(5)] * gpn; /* part of a node, or whole nodes */
    int64_t mp = random_mp(&s->model, gpus, gpn);
    zp_plan *p = &s->plan;
    zp_plan_default(p, gpus / mp);
    p->mp = mp;
    p->stage = (int)rnd(4);
    p->micro_batch = 1 + rnd(8);
    p->grad_accum = rnd(20) == 0 ? 9 + rnd(8) : 1 + rnd(3); /* 5%: past 8, the bound's affine sums */
    p->checkpoint = rnd(4) != 0;
    if (p->checkpoint && mp > 1) {
        int ra = (int)rnd(3);
        p->pa = ra >= 1;
        p->pa_cpu = ra == 2;
    }
    p->offload = p->stage == 3 ? (zp_offload)rnd(3) : p->stage >= 1 ? (zp_offload)rnd(2) : ZP_OFFLOAD_NONE;
    p->cb = rnd(4) != 0;
    static const double buckets[] = {5e7, 2e8, 5e8};
    p->bucket = buckets[rnd(3)];
    p->md = rnd(2);
    p->overlap_comm = rnd(3) != 0;
    if (rnd(5) == 0) { /* fp32 training */
        p->param_bytes = 4.0;
        p->k_optimizer = 8.0;
    }
    /* half of the stage 0-1 plans as pipelines: 2 or 4 stages of the GPUs of one MP group's DP ranks, a
     * schedule, sequence parallelism, selective recompute (taken only where the pipeline checks pass) */
    if (p->stage <= 1 && (moe || rnd(2) == 0)) {
        zp_plan q = *p;
        q.offload = ZP_OFFLOAD_NONE;
        q.pp = 2 << rnd(2);
        if (gpus % (mp * q.pp) == 0) {
            q.dp = gpus / mp / q.pp;
            q.schedule = (zp_pp_schedule)rnd(ZP_PP_NSCHEDULES);
            q.vstages = q.schedule == ZP_PP_INTERLEAVED ? 2 : 1;
            q.overlap_p2p_comm = (int)rnd_of(&g_rng_p2p, 2); /* the interleaved schedule's sends overlapped */
            q.grad_accum = q.schedule == ZP_PP_INTERLEAVED ? q.pp * (1 + rnd(2)) : 1 + rnd(8);
            if (rnd(3) == 0) {
                q.pa = q.pa_cpu = 0;
                zp_plan_set_recompute(&q, ZP_RECOMPUTE_SELECTIVE);
                /* half of them with Megatron-core's modules: any set of them (zp_rc_module_get's bits), the
                   ones the model has nothing for changing nothing */
                if (rnd_of(&g_rng_rc, 2))
                    q.rc_modules = ZP_RCM_CORE_ATTN | (unsigned)rnd_of(&g_rng_rc, ZP_RCM_ALL + 1);
            }
            q.sp = mp > 1 && !q.pa && !q.pa_cpu && rnd(2);
            zp_pp_place pl; /* a stage fills whole nodes or shares one */
            if (zp_plan_validate(&q) == ZP_OK && zp_pp_check(&s->model, &q) == ZP_OK &&
                zp_pp_place_get(&q, zp_cluster_domain(s->cluster), &pl) == ZP_OK)
                *p = q;
        }
    }
    /* an MoE model's experts sharded over EP ranks (a power of two dividing DP and the experts): its
     * all-to-alls block the compute stream, and the pipeline bound counts them; or, overlapped, run on the
     * EP stream beside the other micro-batch's compute, where the bounds count their waits (ep_waits); by
     * Megatron's all-to-all or DeepEP's dispatch */
    if (s->model.experts > 1 && (moe || rnd(3) != 0)) {
        zp_plan q = *p;
        q.ep = (int64_t)2 << rnd(4);
        q.dispatcher = (int)rnd_of(&g_rng_ep, 2);
        q.ep_overlap = (int)rnd_of(&g_rng_ep, 2);
        /* or the shared experts beside the all-to-alls (Megatron-core: all-to-all dispatch, no combined 1F1B) */
        q.shared_overlap = q.dispatcher == ZP_DISPATCH_ALLTOALL && !q.ep_overlap && s->model.shared_experts > 0 &&
                           rnd_of(&g_rng_ep, 2);
        if (q.dp % q.ep == 0 && s->model.experts % q.ep == 0 && zp_plan_validate(&q) == ZP_OK &&
            (q.pp <= 1 || zp_pp_check(&s->model, &q) == ZP_OK))
            *p = q;
    }
    zp_device_profile_builtin(s->cluster, &s->prof);
}

int main(void)
{
    const char *env = getenv("ZP_BOUND_PLANS");
    int n = env ? atoi(env) : 1000;
    env = getenv("ZP_BOUND_SEED");
    g_rng = env ? strtoull(env, NULL, 10) : 1;
    if (n < 1)
        n = 1;
    /* and MoE plans, pipelines with expert parallelism where one could be drawn (the pipeline bound's
     * all-to-alls): ZP_BOUND_MOE (default 200) */
    env = getenv("ZP_BOUND_MOE");
    const int n_moe = env ? atoi(env) : 200, n_plain = n;
    if (n_moe > 0)
        n += n_moe;
    sample *S = calloc((size_t)n, sizeof *S);
    zp_sim_job *J = calloc((size_t)n, sizeof *J);
    if (!S || !J) {
        fprintf(stderr, "out of memory\n");
        return 1;
    }
    int stages[4] = {0}, clusters[16] = {0}, pipelines = 0, experts = 0, shared = 0, modules = 0, p2p = 0;
    for (int i = 0; i < n; i++) {
        for (int tries = 0; tries < 100; tries++) { /* an MoE pipeline with EP, where one can be drawn */
            random_sample(&S[i], i >= n_plain);
            if (i < n_plain || (S[i].plan.pp > 1 && S[i].plan.ep > 1))
                break;
        }
        if (zp_plan_validate(&S[i].plan) != ZP_OK || zp_model_validate(&S[i].model) != ZP_OK) {
            fprintf(stderr, "sample %d: invalid: %s\n", i, zp_error_message());
            return 1;
        }
        S[i].bound = zp_search_step_bound(&S[i].model, &S[i].prof, &S[i].plan, S[i].cluster, NULL);
        J[i].in = (zp_sim_input){.model = &S[i].model, .plan = &S[i].plan, .cluster = S[i].cluster,
                                 .profile = &S[i].prof};
        stages[S[i].plan.stage]++;
        pipelines += S[i].plan.pp > 1;
        experts += S[i].plan.ep > 1;
        shared += S[i].plan.ep > 1 && S[i].plan.shared_overlap;
        modules += S[i].plan.selective && S[i].plan.rc_modules;
        p2p += zp_plan_p2p_overlapped(&S[i].plan);
        for (int c = 0; c < zp_cluster_count() && c < 16; c++)
            clusters[c] += zp_cluster_get(c) == S[i].cluster;
    }
    double t0 = zp_time_now_s();
    if (zp_simrun_many(J, n, 2) != ZP_OK) {
        fprintf(stderr, "simulations did not run: %s\n", zp_error_message());
        return 1;
    }
    int bad = 0, failed = 0, checked = 0;
    double min_ratio = HUGE_VAL, sum_ratio = 0;
    for (int i = 0; i < n; i++) {
        const zp_plan *p = &S[i].plan;
        if (J[i].st != ZP_OK) {
            failed++;
            fprintf(stderr, "sample %d (%s, %s, stage %d, MP %lld, DP %lld): simulation failed: %s\n", i,
                    S[i].model.name, S[i].cluster->name, p->stage, (long long)p->mp, (long long)p->dp, J[i].err);
            continue;
        }
        checked++;
        double sim = J[i].res.step_time, ratio = sim / S[i].bound;
        sum_ratio += ratio;
        if (ratio < min_ratio)
            min_ratio = ratio;
        if (!(S[i].bound <= sim)) {
            bad++;
            fprintf(stderr,
                    "VIOLATION sample %d: bound %.9g s > simulated %.9g s (%s with %lld layers, %s, %lld GPUs, "
                    "stage %d, MP %lld, EP %lld, PP %lld %s, SP %d, sel %d, micro-batch %lld x %lld, ckpt %d, pa %d pa_cpu %d, offload %s, cb %d, "
                    "overlap %d, %g-byte parameters)\n",
                    i, S[i].bound, sim, S[i].model.name, (long long)S[i].model.layers, S[i].cluster->name,
                    (long long)zp_plan_gpus(p), p->stage, (long long)p->mp, (long long)p->ep, (long long)p->pp, zp_pp_schedule_name(p->schedule),
                    p->sp, p->selective, (long long)p->micro_batch,
                    (long long)p->grad_accum, p->checkpoint, p->pa, p->pa_cpu, zp_offload_name(p->offload), p->cb,
                    p->overlap_comm, p->param_bytes);
        }
    }
    /* the bound of a step of more than 8 micro-steps sums steps of 3 and 4 (affine in the micro-steps): it
     * equals the sum over every micro-step */
    int affine = 0, affine_bad = 0;
    for (int i = 0; i < n; i++) {
        if (S[i].plan.pp > 1)
            continue;
        zp_plan q = S[i].plan;
        q.grad_accum = 9 + (int64_t)(i % 32);
        const double a = zp_search_step_bound(&S[i].model, &S[i].prof, &q, S[i].cluster, NULL);
        const double b = zp_search_step_bound_every(&S[i].model, &S[i].prof, &q, S[i].cluster, NULL);
        affine++;
        if (!(fabs(a - b) <= 1e-9 * b)) {
            affine_bad++;
            fprintf(stderr, "AFFINE sample %d (stage %d, %lld micro-steps): bound %.12g s from steps of 3 and 4, "
                    "%.12g s from every micro-step\n", i, q.stage, (long long)q.grad_accum, a, b);
        }
    }
    printf("bounds of 9-40 micro-steps from steps of 3 and 4: %d of %d equal to every micro-step's (1e-9)\n",
           affine - affine_bad, affine);
    bad += affine_bad;
    /* so is the simulated step (zp_simrun_many simulates such a step at 3 and 4 micro-steps): every 8th
     * non-pipeline plan at 9-16 micro-steps, both ways */
    int ns = 0;
    zp_plan *QP = calloc((size_t)n, sizeof *QP);
    zp_sim_job *A = calloc((size_t)n, sizeof *A), *B = calloc((size_t)n, sizeof *B);
    int *of = calloc((size_t)n, sizeof *of);
    if (!QP || !A || !B || !of) {
        fprintf(stderr, "out of memory\n");
        return 1;
    }
    for (int i = 0; i < n; i += 8) {
        if (S[i].plan.pp > 1)
            continue;
        QP[ns] = S[i].plan;
        QP[ns].grad_accum = 9 + (int64_t)(i % 8);
        A[ns].in = (zp_sim_input){.model = &S[i].model, .plan = &QP[ns], .cluster = S[i].cluster, .profile = &S[i].prof};
        B[ns] = A[ns];
        B[ns].in.every_micro_batch = 1;
        of[ns++] = i;
    }
    if (zp_simrun_many(A, ns, 2) != ZP_OK || zp_simrun_many(B, ns, 2) != ZP_OK) {
        fprintf(stderr, "simulations did not run: %s\n", zp_error_message());
        return 1;
    }
    int sim_bad = 0;
    for (int j = 0; j < ns; j++) {
        if (A[j].st != ZP_OK || B[j].st != ZP_OK) {
            failed++;
            continue;
        }
        const zp_sim_result *x = &A[j].res, *r = &B[j].res;
        int ok = fabs(x->step_time - r->step_time) <= 1e-9 * r->step_time &&
                 fabs(x->compute - r->compute) <= 1e-9 * r->step_time &&
                 fabs(x->dp_exposed - r->dp_exposed) <= 1e-9 * r->step_time;
        for (int ph = 0; ph < ZP_NPHASES; ph++)
            ok &= fabs(x->phase[ph] - r->phase[ph]) <= 1e-9 * r->step_time;
        if (!ok) {
            sim_bad++;
            fprintf(stderr, "EXTRAPOLATED sample %d (stage %d, %lld micro-steps, EP %lld, dispatcher %d, EP overlap %d, shared %d): "
                    "step %.12g s from steps of 3 and 4, %.12g s simulating every micro-step\n", of[j], QP[j].stage,
                    (long long)QP[j].grad_accum, (long long)QP[j].ep, QP[j].dispatcher, QP[j].ep_overlap, QP[j].shared_overlap,
                    x->step_time, r->step_time);
        }
    }
    printf("steps of 9-16 micro-steps simulated at 3 and 4: %d of %d equal to simulating every micro-step (1e-9)\n",
           ns - sim_bad, ns);
    bad += sim_bad;
    free(QP);
    free(A);
    free(B);
    free(of);
    printf("random plans: %d (stages 0-3: %d %d %d %d; clusters:", n, stages[0], stages[1], stages[2], stages[3]);
    for (int c = 0; c < zp_cluster_count() && c < 16; c++)
        printf(" %s %d", zp_cluster_get(c)->name, clusters[c]);
    printf("; pipelines %d, %d interleaved with the sends overlapped; expert-parallel %d, %d with the shared experts beside; %d with recompute modules)\nsimulated: %d in %.1f s; bound <= simulated: %d of %d; simulated / bound: min %.12f, mean %.3f\n",
           pipelines, p2p, experts, shared, modules, checked, zp_time_now_s() - t0, checked - bad, checked, min_ratio, checked ? sum_ratio / checked : 0);
    free(S);
    free(J);
    if (bad || failed) {
        printf("%d violations, %d failed simulations\n", bad, failed);
        return 1;
    }
    printf("1 passed, 0 failed\n");
    return 0;
}
