/* zp_search_bound.c — lower bounds of a plan's simulated step, cheap enough to screen every fitting plan
 * before any is simulated: the bound (each stream's ops one after another, each no faster than alone;
 * zp_search_step_bound) and its floor (the GEMMs and the blocking MP collectives alone;
 * zp_search_step_floor), with the kernel-time memo both share. tests/sim/test_bound.c holds the bound under
 * the simulated step; tests/unit/test_search.c the floor under the bound. */
#include "zp_search.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "zp_collcost.h"
#include "zp_device.h"
#include "zp_fabric.h"
#include "zp_pipeline.h"
#include "zp_search_int.h"

/* Time the compute stream certainly spends in op: a kernel's (0 for what is not a kernel). Megatron MP
 * collectives are left out: priced by the profile's fit they came out above the simulator's ring in 2 of
 * 1,000 random plans (tests/sim/test_bound.c), and a bound must never exceed the simulated step. */
static double op_bound_s(const zp_profile *prof, const zp_op *op, int64_t mp, int gpus_per_node)
{
    (void)mp;
    (void)gpus_per_node;
    return zp_device_op_time(prof, op, 1);
}

zp_search_opmemo_tab zp_search_opmemo_new(void)
{
    return (zp_search_opmemo_tab){calloc(ZP_SEARCH_OPMEMO, sizeof(zp_search_opmemo)), ZP_SEARCH_OPMEMO};
}

static double op_bound_memo(const zp_search_opmemo_tab *tab, const zp_profile *prof, const zp_op *op, int64_t mp,
                            int gpn)
{
    if (!tab || !tab->v)
        return op_bound_s(prof, op, mp, gpn);
    const double f[7] = {op->m, op->n, op->k, op->batch, op->flops, op->elems, op->bytes};
    uint64_t h = (uint64_t)(unsigned)op->type * 0x9E3779B97F4A7C15ull ^ (uint64_t)(unsigned)op->flash;
    for (int i = 0; i < 7; i++) {
        uint64_t b;
        memcpy(&b, &f[i], sizeof b);
        h = (h ^ b) * 0x100000001B3ull;
    }
    const size_t mask = tab->n - 1; /* n a power of two (ZP_SEARCH_OPMEMO): no division per look-up */
    for (size_t j = (size_t)(h >> 40) & mask, tries = 0; tries < 8; j = (j + 1) & mask, tries++) {
        zp_search_opmemo *e = &tab->v[j];
        if (!e->used) {
            *e = (zp_search_opmemo){.type = op->type, .flash = op->flash, .used = 1, .m = f[0], .n = f[1], .k = f[2],
                          .batch = f[3], .flops = f[4], .elems = f[5], .bytes = f[6]};
            e->t = op_bound_s(prof, op, mp, gpn);
            return e->t;
        }
        if (e->type == op->type && e->flash == op->flash && e->m == f[0] && e->n == f[1] && e->k == f[2] &&
            e->batch == f[3] && e->flops == f[4] && e->elems == f[5] && e->bytes == f[6])
            return e->t;
    }
    return op_bound_s(prof, op, mp, gpn); /* a full neighbourhood: not kept */
}

/* One pipeline stage's sums for its bound: w[u] what micro-batches 0 and 1 run through every chunk, f and
 * b micro-batch 0's forward and a later one's backward through chunk 0 (pipeline_bound_s); 0 when its
 * sample schedule cannot be built. */
typedef struct {
    double w[2], f, b;
} stage_sums;

/* EP overlap (sim/zp_block.c): the compute stream signals EP_GO as it hands the EP stream an all-to-all
 * (idle then: the previous one was waited for) and waits on EP_DONE for it before the next, so the stretch
 * between lasts at least the all-to-all's least time a. While the all-to-all runs it holds a share f of the
 * SMs (the device's NCCL CTAs, sim/zp_actors.c), and kernels beside it run at 1 - f: of the stretch's
 * kernels K and other ops N, either the kernels all ran beside it (at least N + K / (1 - f)) or it ended
 * first, after at least a - N of them had run beside it (at least N + K + f (a - N)); so the stretch lasts
 * at least max(a, N + K + f min(K, a - N)). t[] holds the compute stream's ops' least times; each EP_DONE
 * wait's is set to what that adds to them. Returns the waits' sum. */
static double ep_waits(const zp_sim_input *in, const zp_schedule *sc, double *t)
{
    const int ne = sc->n[ZP_STREAM_EP];
    if (ne == 0)
        return 0.0;
    double *el = malloc((size_t)ne * sizeof *el);
    if (!el || zp_engine_op_least(in, sc, ZP_STREAM_EP, el) != ZP_OK) {
        free(el);
        return 0.0; /* no extra: a lower bound still */
    }
    const zp_profile_device *d = &in->profile->dev;
    const double f = d->sms > 0 && d->nccl_ctas > 0 && d->nccl_ctas < d->sms ? (double)d->nccl_ctas / d->sms : 0.0;
    int k = 0; /* the EP stream's next collective */
    double kern = 0.0, other = 0.0, pending = 0.0, waited = 0.0;
    for (int i = 0; i < sc->n[ZP_STREAM_COMPUTE]; i++) {
        const zp_op *op = &sc->ops[ZP_STREAM_COMPUTE][i];
        const zp_opc cls = zp_op_table[op->type].cls;
        if (cls == ZP_OPC_SIGNAL && op->channel == ZP_CH_EP_GO) {
            while (k < ne && zp_op_table[sc->ops[ZP_STREAM_EP][k].type].cls != ZP_OPC_COLL)
                k++;
            pending = k < ne ? el[k++] : 0.0;
            kern = other = 0.0;
        } else if (cls == ZP_OPC_WAIT && op->channel == ZP_CH_EP_DONE) {
            const double lost = pending > 0 ? f * fmin(kern, fmax(0.0, pending - other)) : 0.0;
            t[i] = fmax(0.0, fmax(pending, other + kern + lost) - (other + kern));
            waited += t[i];
            pending = kern = other = 0.0;
        } else if (cls == ZP_OPC_COMPUTE) {
            kern += t[i];
        } else {
            other += t[i];
        }
    }
    free(el);
    return waited;
}

/* An op's least time t into the sums: every chunk's of its micro-batch (0, or 1 for a later one), and chunk
 * 0's forward of micro-batch 0 or backward of a later one. */
static void stage_sums_add(stage_sums *out, const zp_pp_stage *st, const zp_op *op, double t, int later)
{
    const int u = op->micro > 0;
    out->w[u] += t;
    if (op->layer < 0 || (op->layer >= st->first[0] && op->layer < st->first[0] + st->layers[0])) {
        if (op->phase == ZP_PHASE_FORWARD && u == 0)
            out->f += t;
        else if (op->phase != ZP_PHASE_FORWARD && u == later)
            out->b += t;
    }
}

static int stage_sums_get(const zp_model *model, const zp_profile *prof, const zp_plan *plan, const zp_sim_input *in,
                          const zp_pp_stage *st, int gpn, const zp_search_opmemo_tab *memo, stage_sums *out)
{
    const int later = plan->grad_accum > 1;
    zp_schedule sc;
    if (zp_schedule_build_sample(model, plan, st->stage, &sc) != ZP_OK)
        return 0;
    const int n = sc.n[ZP_STREAM_COMPUTE];
    double *least = malloc((size_t)(n > 0 ? n : 1) * sizeof *least);
    if (!least || zp_engine_op_least(in, &sc, ZP_STREAM_COMPUTE, least) != ZP_OK) {
        free(least);
        zp_schedule_free(&sc);
        return 0;
    }
    *out = (stage_sums){{0, 0}, 0, 0};
    for (int i = 0; i < n; i++) {
        const zp_op *op = &sc.ops[ZP_STREAM_COMPUTE][i];
        least[i] = op_bound_memo(memo, prof, op, plan->mp, gpn) + (zp_op_part(op) == ZP_PART_MP_COMM ? least[i] : 0.0);
    }
    (void)ep_waits(in, &sc, least); /* the sample runs every pass paired: the least the compute stream can hold */
    for (int i = 0; i < n; i++)
        stage_sums_add(out, st, &sc.ops[ZP_STREAM_COMPUTE][i], least[i], later);
    free(least);
    zp_schedule_free(&sc);
    return 1;
}

/* Stages a and b build the same sample ops but for the layers' numbers: neither holds the embedding or
 * the head (nor, then, their tied gradient's all-reduce), their chunks hold as many blocks, and the blocks
 * in the same places are alike in everything a block's ops depend on its number for: MoE or dense
 * (zp_model_block_is_moe: DeepSeek-V3's first 3 dense blocks, moe_every) and checkpointed or not
 * (zp_plan_block_checkpointed: ckpt_every). An op's costs read its kind and sizes, never its layer
 * (op_bound_memo), the stage's parameters and optimizer follow from its blocks, and its P2P peers are
 * not in the bound (PP part, not a kernel), so a's sums are b's, to the bit (tests/unit/test_search.c). */
static int stages_alike(const zp_model *model, const zp_plan *plan, const zp_pp_stage *a, const zp_pp_stage *b)
{
    if (a->embedding || a->head || b->embedding || b->head || a->chunks != b->chunks)
        return 0;
    for (int c = 0; c < a->chunks; c++) {
        if (a->layers[c] != b->layers[c])
            return 0;
        for (int i = 0; i < a->layers[c]; i++) {
            const int64_t x = a->first[c] + i, y = b->first[c] + i;
            if (zp_model_block_is_moe(model, x) != zp_model_block_is_moe(model, y) ||
                zp_plan_block_checkpointed(plan, x) != zp_plan_block_checkpointed(plan, y))
                return 0;
        }
    }
    return 1;
}

/* A lower bound of a pipeline plan's step: stage s runs its own compute stream W_s (its kernels and its
 * blocking collectives: the expert all-to-alls and Megatron's MP collectives, each at its least time) for
 * each of the m micro-batches, cannot start before micro-batch 0 went forward through chunk 0 of the stages
 * before it, and its last backward (micro-batch m-1, chunk 0) still has to go back through them: step >=
 * max_s (sum_{i<s} f_i + W_s + sum_{i<s} b_i), f_i micro-batch 0's forward and b_i a later micro-batch's
 * backward (recompute included) of chunk 0 of stage i, W_s = W0_s + (m - 1) W1_s, W0 and W1 what
 * micro-batches 0 and 1 run through every chunk (zp_schedule_build_sample): each later one runs micro-batch
 * 1's kernels (and adds its gradients into the accumulated ones, which the first does not). For P stages
 * alike this is (m + (P-1)/v) passes of a stage: the bubble, from dependencies. Only the collectives of the
 * MP part count (every micro-batch's, on the compute stream: the DP collectives are not every one's).
 * A stage alike a stage already summed (stages_alike) takes its sums instead of building its sample
 * (`reuse`; 0 builds every stage's): deepseek-v3 on 2,048 GPUs, 6,193 pipeline bounds, most stages alike. */
static double pipeline_bound_s(const zp_model *model, const zp_profile *prof, const zp_plan *plan,
                               const zp_cluster *cluster, const char *platform_file, const zp_search_opmemo_tab *memo,
                               int reuse)
{
    enum { KEPT = 4 }; /* distinct stages kept: the middle ones of up to a few layouts */
    const int P = (int)plan->pp, gpn = cluster->gpus_per_node, later = plan->grad_accum > 1;
    const zp_sim_input in = {.model = model, .plan = plan, .cluster = cluster, .profile = prof,
                             .platform_file = platform_file};
    zp_pp_stage kept_st[KEPT];
    stage_sums kept[KEPT];
    int nkept = 0;
    double sum_f = 0, sum_b = 0, best = 0;
    for (int s = 0; s < P; s++) {
        zp_pp_stage st;
        if (zp_pp_stage_get(model, plan, s, &st) != ZP_OK)
            return 0.0;
        stage_sums x;
        int k = 0;
        while (reuse && k < nkept && !stages_alike(model, plan, &kept_st[k], &st))
            k++;
        if (reuse && k < nkept) {
            x = kept[k];
        } else {
            if (!stage_sums_get(model, prof, plan, &in, &st, gpn, memo, &x))
                return 0.0;
            if (reuse && nkept < KEPT && !st.embedding && !st.head) {
                kept_st[nkept] = st;
                kept[nkept++] = x;
            }
        }
        best = fmax(best, sum_f + x.w[0] + x.w[later] * (double)(plan->grad_accum - 1) + sum_b);
        sum_f += x.f;
        sum_b += x.b;
    }
    return best;
}

/* A non-pipeline plan's sums over its schedule: the compute stream's kernels, its collectives, the comm
 * stream's collectives, each op at its least time. 0 when the schedule cannot be built. */
static int stream_sums(const zp_model *model, const zp_profile *prof, const zp_plan *plan, const zp_cluster *cluster,
                       const char *platform_file, const zp_search_opmemo_tab *memo, double sum[3])
{
    sum[0] = sum[1] = sum[2] = 0.0;
    zp_schedule sc;
    if (zp_schedule_build(model, plan, &sc) != ZP_OK)
        return 0;
    zp_sim_input in = {.model = model, .plan = plan, .cluster = cluster, .profile = prof,
                       .platform_file = platform_file};
    /* EP overlap: every op's least time (its collective's too) for the waits on the all-to-alls (ep_waits) */
    const int n = sc.n[ZP_STREAM_COMPUTE];
    double *t = sc.n[ZP_STREAM_EP] > 0 && !platform_file ? malloc((size_t)(n > 0 ? n : 1) * sizeof *t) : NULL;
    if (t && zp_engine_op_least(&in, &sc, ZP_STREAM_COMPUTE, t) != ZP_OK) {
        free(t);
        t = NULL;
    }
    for (int i = 0; i < n; i++) {
        const double k = op_bound_memo(memo, prof, &sc.ops[ZP_STREAM_COMPUTE][i], plan->mp, cluster->gpus_per_node);
        sum[0] += k;
        if (t)
            t[i] += k;
    }
    if (zp_engine_stream_bounds(&in, &sc, &sum[1], &sum[2]) != ZP_OK)
        sum[1] = sum[2] = 0.0;
    if (t)
        sum[0] += ep_waits(&in, &sc, t);
    free(t);
    zp_schedule_free(&sc);
    return 1;
}

double zp_search_bound_memo(const zp_model *model, const zp_profile *prof, const zp_plan *plan,
                              const zp_cluster *cluster, const char *platform_file, int every_micro_step,
                              const zp_search_opmemo_tab *memo)
{
    double t = 0.0;
    if (plan->pp > 1) {
        /* every_micro_step: each stage built as well (the reference the shortcuts are checked against) */
        t = pipeline_bound_s(model, prof, plan, cluster, platform_file, memo, !every_micro_step);
    } else {
        double sum[3];
        const int64_t m = plan->grad_accum;
        if (!every_micro_step && m > ZP_ACCUM_AFFINE_ABOVE) {
            /* every sum is affine in the micro-steps (zp_schedule.h): taken at two short steps */
            zp_plan pa = *plan, pb = *plan;
            pa.grad_accum = ZP_ACCUM_SAMPLE;
            pb.grad_accum = ZP_ACCUM_SAMPLE + 1;
            double sa[3], sb[3];
            if (!stream_sums(model, prof, &pa, cluster, platform_file, memo, sa) ||
                !stream_sums(model, prof, &pb, cluster, platform_file, memo, sb))
                return 0.0;
            for (int i = 0; i < 3; i++)
                sum[i] = sa[i] + (double)(m - ZP_ACCUM_SAMPLE) * (sb[i] - sa[i]);
        } else if (!stream_sums(model, prof, plan, cluster, platform_file, memo, sum)) {
            return 0.0;
        }
        /* the streams run their ops one after another: the compute stream its kernels and its blocking
         * collectives (Megatron's MP all-reduces), the comm stream its collectives, each op no faster than
         * the simulation can run it alone */
        t = fmax(sum[0] + sum[1], sum[2]);
    }
    /* SimGrid's clock adds the same durations in another order (coalesced runs of local ops) and rounds
     * each event to its timing precision: a plan that overlaps nothing simulates to exactly the bound's sum
     * but for that rounding (found at 3.5e-9 relative); allow 1e-6, far below any difference that matters
     * (and the affine sums' rounding) */
    return t * (1.0 - 1e-6);
}

static double step_bound(const zp_model *model, const zp_profile *prof, const zp_plan *plan,
                         const zp_cluster *cluster, const char *platform_file, int every_micro_step)
{
    zp_search_opmemo_tab memo = zp_search_opmemo_new(); /* NULL: every op priced (the same figures) */
    const double t = zp_search_bound_memo(model, prof, plan, cluster, platform_file, every_micro_step, &memo);
    free(memo.v);
    return t;
}

double zp_search_step_bound(const zp_model *model, const zp_profile *prof, const zp_plan *plan,
                            const zp_cluster *cluster, const char *platform_file)
{
    return step_bound(model, prof, plan, cluster, platform_file, 0);
}

double zp_search_step_bound_every(const zp_model *model, const zp_profile *prof, const zp_plan *plan,
                                  const zp_cluster *cluster, const char *platform_file)
{
    return step_bound(model, prof, plan, cluster, platform_file, 1);
}

/* A cheap lower bound of a plan's bound (zp_search_bound_memo), for the search's lazy bounds (bound_shown):
 * its floor, the linear layers' GEMMs and the blocking MP collectives (the expert all-to-alls, Megatron's
 * MP collectives) alone. Every micro-batch of every plan runs the GEMMs of the blocks and the head and
 * the blocks' MP collectives at sizes set by MP, micro-batch, EP, CP, SP and the TP overlap
 * (zp_shape_block; recompute, Pa, offload, the ZeRO stage and pipelines add ops around them, never take
 * one away). So with T the least of micro-batches 0 and 1's time in those ops in a plan of one stage, no
 * recompute, no extra work and 2 micro-batches (micro-batch 1 with what it caches from micro-batch 0:
 * FP8's weight casts), a step of m micro-batches over P stages holds at least m T of them, and its
 * slowest stage's compute stream at least m T / P: the floor, m T / P, is at most the bound (the
 * non-pipeline bound's compute stream, the pipeline bound's max over its stages), the collectives at the
 * least time both take (zp_collcost_least_time, on the plan's own fabric). Scaled by 1 - 1e-5 against the
 * sums' rounding and the bound's own 1 - 1e-6. tests/unit/test_search.c checks floor <= bound over every
 * fitting plan of searches. The GEMMs and the collectives' kinds and sizes are kept per shape. */

static void floor_pass(const zp_model *model, const zp_profile *prof, const zp_plan *plan, const zp_cluster *cluster,
                       const zp_search_opmemo_tab *memo, zp_search_floor *f)
{
    zp_plan q = *plan;
    q.pp = 1;
    q.vstages = 1;
    q.schedule = ZP_PP_1F1B;
    q.pp_first = q.pp_last = q.pp_layout_n = q.pp_acc = 0; /* one stage: no layout */
    q.pp_layout = NULL;
    q.grad_accum = 2;
    q.pa = q.pa_cpu = 0;
    q.offload = ZP_OFFLOAD_NONE;
    zp_plan_set_recompute(&q, ZP_RECOMPUTE_NONE);
    zp_schedule sc;
    if (zp_schedule_build(model, &q, &sc) != ZP_OK)
        return; /* no floor: 0 */
    for (int i = 0; i < sc.n[ZP_STREAM_COMPUTE]; i++) {
        const zp_op *op = &sc.ops[ZP_STREAM_COMPUTE][i];
        if (op->micro < 0 || op->micro > 1)
            continue;
        if (zp_op_table[op->type].cost == zp_cost_gemm) {
            f->g[op->micro] += op_bound_memo(memo, prof, op, q.mp, cluster->gpus_per_node);
        } else if (zp_op_table[op->type].cls == ZP_OPC_COLL && zp_op_part(op) == ZP_PART_MP_COMM &&
                   !(q.ep_overlap && zp_op_table[op->type].coll == ZP_COLL_ALLTOALL)) {
            /* (with EP overlap a step's all-to-alls may all be hidden: none in the floor) */
            int k = 0;
            while (k < f->ncoll && (f->coll[k].type != op->type || f->coll[k].bytes != op->bytes))
                k++;
            if (k == f->ncoll && f->ncoll < ZP_SEARCH_FLOOR_COLLS)
                f->coll[f->ncoll++] = *op;
            if (k < f->ncoll)
                f->count[k][op->micro]++;
        }
    }
    zp_schedule_free(&sc);
}

double zp_search_floor_memo(const zp_model *model, const zp_profile *prof, const zp_plan *p, const zp_cluster *cluster,
                          const char *platform_file, const zp_search_opmemo_tab *memo, zp_search_floors *gf)
{
    int i = 0;
    while (i < gf->n && !(gf->v[i].mp == p->mp && gf->v[i].b == p->micro_batch && gf->v[i].ep == p->ep &&
                          gf->v[i].cp == p->cp && gf->v[i].sp == p->sp && gf->v[i].tpo == p->tp_overlap))
        i++;
    if (i == gf->n) {
        if (gf->n == gf->cap) {
            const int cap = gf->cap ? 2 * gf->cap : 64;
            zp_search_floor *nv = realloc(gf->v, (size_t)cap * sizeof *nv);
            if (!nv)
                return 0.0; /* no floor: the plan gets its bound */
            gf->v = nv;
            gf->cap = cap;
        }
        zp_search_floor *f = &gf->v[gf->n++];
        memset(f, 0, sizeof *f);
        *f = (zp_search_floor){.mp = p->mp, .b = p->micro_batch, .ep = p->ep, .cp = p->cp, .sp = p->sp,
                          .tpo = p->tp_overlap};
        floor_pass(model, prof, p, cluster, memo, f);
    }
    const zp_search_floor *f = &gf->v[i];
    double t[2] = {f->g[0], f->g[1]};
    if (f->ncoll > 0 && !platform_file) { /* a user's links: the bound has no collectives either */
        const zp_sim_input in = {.model = model, .plan = p, .cluster = cluster, .profile = prof};
        zp_net n;
        if (zp_fabric_setup(&in, 0, &n) == ZP_OK)
            for (int k = 0; k < f->ncoll; k++) {
                const double c = zp_collcost_least_time(&n, &f->coll[k]);
                t[0] += c * f->count[k][0];
                t[1] += c * f->count[k][1];
            }
    }
    return (double)p->grad_accum * fmin(t[0], t[1]) / (double)(p->pp > 0 ? p->pp : 1) * (1.0 - 1e-5);
}

double zp_search_step_floor(const zp_model *model, const zp_profile *prof, const zp_plan *plan,
                            const zp_cluster *cluster, const char *platform_file)
{
    zp_search_floors gf = {0};
    const double t = zp_search_floor_memo(model, prof, plan, cluster, platform_file, NULL, &gf);
    free(gf.v);
    return t;
}
