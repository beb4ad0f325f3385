/* zp_search_walk.c — the candidates of a search (zp_search_walk): the request's open dimensions walked over
 * the dimensions' table (vocab/zp_dims.h), then each set of degrees' shapes (pipeline schedule and chunks,
 * sequence parallelism, recompute, TP overlap), ZeRO-R options and offload, each candidate evaluated at its
 * batches: the largest micro-batch that fits, or the default batch (eval_candidate). */
#include "zp_search.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "zp_pipeline.h"
#include "zp_search_int.h"

/* Appends x to a growable array (a struct of v, n, cap: elements of x's type), its room doubled from `first`
 * when full; returns ZP_ENOMEM from the caller (the array kept) when the memory is not there. */
#define VEC_PUSH(vec, x, first)                                                                                \
    do {                                                                                                       \
        if ((vec)->n == (vec)->cap) {                                                                          \
            const int cap_ = (vec)->cap ? 2 * (vec)->cap : (first);                                            \
            void *nv_ = realloc((vec)->v, (size_t)cap_ * sizeof *(vec)->v);                                    \
            if (!nv_)                                                                                          \
                return ZP_FAIL(ZP_ENOMEM, "out of memory");                                                    \
            (vec)->v = nv_;                                                                                    \
            (vec)->cap = cap_;                                                                                 \
        }                                                                                                      \
        (vec)->v[(vec)->n++] = (x);                                                                            \
    } while (0)

typedef struct {
    zp_eval *v;
    int n, cap;
} evec;

static zp_status evec_push(evec *e, const zp_eval *x)
{
    VEC_PUSH(e, *x, 64);
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

static zp_status push_eval_known(const zp_search_req *r, zp_plan *p, int64_t b, int64_t accum, const zp_memory *known,
                                 evec *out)
{
    p->micro_batch = b;
    p->grad_accum = accum;
    zp_eval e;
    ZP_TRY(zp_search_eval_known(r->model, r->cluster, zp_search_usable_mem(r), r->host_mem, p, known, &e));
    return evec_push(out, &e);
}

static zp_status push_eval(const zp_search_req *r, zp_plan *p, int64_t b, int64_t accum, evec *out)
{
    return push_eval_known(r, p, b, accum, NULL, out);
}

/* A micro-batch b of a pipeline plan with `per_rank` sequences per DP rank: it divides them, and the
 * interleaved schedule needs the micro-batches a multiple of the stages. */
static int pipeline_micro_ok(const zp_plan *p, int64_t per_rank, int64_t b)
{
    if (per_rank % b != 0)
        return 0;
    return p->schedule != ZP_PP_INTERLEAVED || (per_rank / b) % p->pp == 0;
}

/* The fits tests of one pipeline candidate at its micro-batches: eval_pipeline changes only the plan's
 * micro-batch and accumulation, so (b, m) keys the test (zp_memory_estimate is a function of the model and
 * the plan), and the micro-batches its bisection tried are not estimated again when evaluated. The test
 * stops at the first stage above the memory (zp_memory_fits_plan), so a plan that does not fit has no
 * estimate kept (evaluated, it is estimated anew), but at micro-batch 1, estimated whole: a candidate that
 * does not fit there is evaluated there to say why. */
#define PIPE_MEMO 64
typedef struct {
    int n;
    int64_t b[PIPE_MEMO], m[PIPE_MEMO];
    int fits[PIPE_MEMO], known[PIPE_MEMO]; /* known: mem is the plan's zp_memory_estimate */
    zp_memory mem[PIPE_MEMO];
    int hint; /* the stage where the last test that failed stopped (zp_memory_fits_plan), -1 at first */
} pipe_memo;

static int pipe_memo_find(const pipe_memo *pm, int64_t b, int64_t m)
{
    for (int i = 0; i < pm->n; i++)
        if (pm->b[i] == b && pm->m[i] == m)
            return i;
    return -1;
}

static int pipe_memo_fits(pipe_memo *pm, const zp_search_req *r, const zp_plan *p)
{
    const int k = pipe_memo_find(pm, p->micro_batch, p->grad_accum);
    if (k >= 0)
        return pm->fits[k];
    const double usable = zp_search_usable_mem(r), host = zp_cluster_host_per_gpu(r->cluster, r->host_mem, r->gpus);
    zp_memory m;
    int known, fits;
    if (p->micro_batch == 1) {
        known = zp_memory_estimate(r->model, p, &m) == ZP_OK;
        fits = known && zp_memory_fits(&m, usable, host, NULL, 0);
    } else {
        known = fits = zp_memory_fits_plan(r->model, p, usable, host, &pm->hint, &m);
    }
    const int i = pm->n < PIPE_MEMO ? pm->n++ : PIPE_MEMO - 1; /* full: the last slot is reused */
    pm->b[i] = p->micro_batch;
    pm->m[i] = p->grad_accum;
    pm->fits[i] = fits;
    pm->known[i] = known;
    if (known)
        pm->mem[i] = m;
    return fits;
}

/* A pipeline plan at a fixed global batch: the micro-batch sets how many micro-batches fill the pipeline
 * (m = per_rank / b) and so what every stage holds in flight, so the fitting test runs at each b with its
 * own m (memory never shrinks as b grows at a fixed per_rank: the micro-batches in flight x b do not).
 * The largest b that fits, and the smaller powers of two (a smaller micro-batch shrinks the bubble, and
 * can win over the GEMMs' efficiency). */
static int pipeline_fits(const zp_search_req *r, zp_plan *p, int64_t per_rank, int64_t b, pipe_memo *pm)
{
    p->micro_batch = b;
    p->grad_accum = per_rank / b > 0 ? per_rank / b : 1;
    return pipe_memo_fits(pm, r, p);
}

/* push_eval of a pipeline candidate at micro-batch b, its memory from the memo when estimated before. */
static zp_status push_pipeline(const zp_search_req *r, zp_plan *p, int64_t b, int64_t accum, pipe_memo *pm,
                               evec *out)
{
    const int k = pipe_memo_find(pm, b, accum);
    return push_eval_known(r, p, b, accum, k >= 0 && pm->known[k] ? &pm->mem[k] : NULL, out);
}

static zp_status eval_pipeline(const zp_search_req *r, zp_plan *p, int64_t per_rank, evec *out)
{
    if (p->schedule == ZP_PP_INTERLEAVED && per_rank % p->pp != 0)
        return ZP_OK; /* no micro-batch makes the micro-batches a multiple of the stages */
    pipe_memo pm = {.n = 0, .hint = -1};
    /* the largest b that fits, by bisection (memory grows with b), then the largest b below it that the
     * batch and the schedule take */
    int64_t lo = 0, hi = (per_rank < ZP_MAX_MICRO_BATCH ? per_rank : ZP_MAX_MICRO_BATCH) + 1;
    while (hi - lo > 1) {
        const int64_t mid = lo + (hi - lo) / 2;
        if (pipeline_fits(r, p, per_rank, mid, &pm))
            lo = mid;
        else
            hi = mid;
    }
    int64_t best = 0;
    for (int64_t b = lo; b >= 1 && !best; b--)
        if (pipeline_micro_ok(p, per_rank, b) && pipeline_fits(r, p, per_rank, b, &pm))
            best = b;
    if (!best) /* does not fit even at 1: evaluated there to say why */
        return push_pipeline(r, p, 1, per_rank, &pm, out);
    ZP_TRY(push_pipeline(r, p, best, per_rank / best, &pm, out));
    for (int64_t b = 1; b < best; b *= 2)
        if (pipeline_micro_ok(p, per_rank, b))
            ZP_TRY(push_pipeline(r, p, b, per_rank / b, &pm, out));
    return ZP_OK;
}

/* Evaluates one candidate: the micro-batch the options fix (given; the global batch over the
 * accumulation given; with --exact the global batch over DP, else 1), or the largest that fits (with a
 * global batch: that divides it) and the next smaller one (half of it, or the next divisor): a smaller
 * micro-batch can win when it lets gradient accumulation or communication overlap differ. With the
 * default batch (`target` sequences, no batch option given) each DP rank runs ceil(target / DP)
 * sequences or a little more: the fewest accumulation steps whose micro-batch fits, the micro-batch
 * balanced over them (and one step more as the smaller candidate). */
static zp_status eval_candidate(const zp_search_req *r, int64_t target, zp_plan *p, evec *out)
{
    const double host = zp_cluster_host_per_gpu(r->cluster, r->host_mem, r->gpus), usable = zp_search_usable_mem(r);
    const int accum_given = given(r, ZP_SEARCH_ACCUM);
    const int64_t given_accum = accum_given ? r->base.grad_accum : 1;
    if (target > 0) {
        const int64_t replicas = zp_plan_replicas(p);
        int64_t per = (target + replicas - 1) / replicas;
        if (p->pp > 1) { /* whole micro-batches per pipeline flush; interleaving wants a multiple of the stages */
            if (p->schedule == ZP_PP_INTERLEAVED)
                per = (per + p->pp - 1) / p->pp * p->pp;
            return eval_pipeline(r, p, per, out);
        }
        int64_t b = zp_memory_max_micro_batch(r->model, p, usable, host, per);
        if (b < 1)
            return push_eval(r, p, 1, per, out); /* does not fit even at 1: evaluated there to say why */
        int64_t accum = (per + b - 1) / b;
        b = (per + accum - 1) / accum;
        ZP_TRY(push_eval(r, p, b, accum, out));
        int64_t smaller = (per + accum) / (accum + 1); /* ceil(per / (accum + 1)) */
        if (b > 1 && smaller < b)
            ZP_TRY(push_eval(r, p, smaller, accum + 1, out));
        return ZP_OK;
    }
    int64_t per_rank = 0; /* sequences per DP rank per step, when the global batch is fixed */
    if (given(r, ZP_SEARCH_GLOBAL_BATCH)) {
        if (r->global_batch % zp_plan_replicas(p) != 0)
            return ZP_OK; /* these degrees cannot keep the batch */
        per_rank = r->global_batch / zp_plan_replicas(p);
    }
    int64_t fixed = given(r, ZP_SEARCH_MICRO_BATCH) ? r->base.micro_batch : 0; /* 0: searched */
    if (!fixed && per_rank && accum_given) {
        if (per_rank % given_accum != 0)
            return ZP_OK;
        fixed = per_rank / given_accum;
    }
    if (!fixed && r->exact)
        fixed = per_rank ? per_rank : 1;
    if (fixed) {
        if (per_rank && per_rank % fixed != 0)
            return ZP_OK;
        const int64_t m = per_rank ? per_rank / fixed : given_accum;
        if (p->pp > 1 && p->schedule == ZP_PP_INTERLEAVED && m % p->pp != 0)
            return ZP_OK; /* the interleaved schedule needs the micro-batches a multiple of the stages */
        return push_eval(r, p, fixed, m, out);
    }
    if (p->pp > 1 && !per_rank && p->schedule == ZP_PP_INTERLEAVED && given_accum % p->pp != 0)
        return ZP_OK;
    if (p->pp > 1 && per_rank)
        return eval_pipeline(r, p, per_rank, out);
    if (p->grad_accum < 1 || accum_given)
        p->grad_accum = given_accum;
    int64_t cap = per_rank ? per_rank : ZP_MAX_MICRO_BATCH;
    int64_t b = zp_memory_max_micro_batch(r->model, p, usable, host, cap);
    if (b < 1)
        return push_eval(r, p, 1, per_rank ? per_rank : given_accum, out); /* evaluated at 1 to say why */
    if (per_rank)
        b = largest_divisor_le(per_rank, b);
    ZP_TRY(push_eval(r, p, b, per_rank ? per_rank / b : given_accum, out));
    int64_t smaller = per_rank ? largest_divisor_le(per_rank, b - 1) : b / 2;
    if (b > 1 && smaller >= 1 && smaller < b)
        ZP_TRY(push_eval(r, p, smaller, per_rank ? per_rank / smaller : given_accum, out));
    return ZP_OK;
}

int zp_search_bf16(const zp_search_req *r)
{
    if (given(r, ZP_SEARCH_BF16))
        return r->base.bf16;
    const zp_framework *f = zp_framework_get(r->framework);
    return !(f && f->fp16_only) && r->cluster && zp_cluster_has_bf16(r->cluster);
}

/* The default global batch in tokens: GPT-3's batch for its largest model not larger than this one
 * (Brown et al. 2020, Table 2.1: 0.5M tokens from 125M to 760M parameters, 1M at 1.3B and 2.7B, 2M at
 * 6.7B and 13B, 3.2M at 175B), the batch a team training a model of that size would start from. */
double zp_search_default_batch_tokens(double params)
{
    return params >= 175e9 ? 3.2e6 : params >= 6.7e9 ? 2e6 : params >= 1.3e9 ? 1e6 : 0.5e6;
}

int64_t zp_search_default_batch(const zp_model *model)
{
    double seqs = floor(zp_search_default_batch_tokens(zp_model_params(model)) / (double)model->seq + 0.5);
    return seqs < 1 ? 1 : (int64_t)seqs;
}

/* What a candidate's parallel shape adds to stage and MP: pipeline stages, schedule and chunks, sequence
 * parallelism, recompute. */
typedef struct {
    int64_t pp;
    zp_pp_schedule schedule;
    int vstages;
    int sp;
    zp_recompute recompute;
    int tp_overlap;    /* a zp_tp_overlap */
    int pp_acc;        /* the embedding and the loss counted in the split (zp_plan.pp_acc) */
    unsigned rc_modules; /* selective recompute's modules under --recompute-modules auto (zp_plan.rc_modules) */
} shape;

typedef struct {
    shape *v;
    int n, cap;
} shapes;

static zp_status shapes_push(shapes *x, shape s)
{
    VEC_PUSH(x, s, 32);
    return ZP_OK;
}

/* v chunks on each of P stages fit the model: they divide its layers evenly, or the uneven layout given
 * fits them. */
static int chunks_fit(const zp_search_req *r, int64_t P, int v, int64_t L)
{
    if (!zp_pp_uneven(&r->base))
        return v == 1 || L % (P * v) == 0;
    zp_plan q = r->base;
    q.pp = P;
    q.vstages = v;
    return zp_pp_fits(r->model, &q);
}

/* Schedules and chunks for P stages: the ones given; else 1F1B and interleaved 1F1B with every v >= 2 that
 * divides the layers per stage, or that divides them with the embedding and the loss counted (acc_fit)
 * (GPipe runs the same passes as 1F1B holding more micro-batches: taken when given only). */
static zp_status schedules_for(const zp_search_req *r, shape base, shapes *out)
{
    if (base.pp == 1) {
        base.schedule = ZP_PP_1F1B;
        base.vstages = 1;
        return shapes_push(out, base);
    }
    for (int sc = 0; sc < ZP_PP_NSCHEDULES; sc++) {
        if (given(r, ZP_SEARCH_SCHEDULE) ? sc != (int)r->base.schedule
                                         : (sc == ZP_PP_GPIPE || (r->exact && sc != ZP_PP_1F1B) ||
                                            (given(r, ZP_SEARCH_VSTAGES) && r->base.vstages > 1 &&
                                             sc != ZP_PP_INTERLEAVED)))
            continue;
        base.schedule = (zp_pp_schedule)sc;
        if (sc != ZP_PP_INTERLEAVED) {
            base.vstages = 1;
            if (!chunks_fit(r, base.pp, 1, r->model->layers))
                continue; /* a layout of virtual stages: interleaved only */
            ZP_TRY(shapes_push(out, base));
            continue;
        }
        const zp_framework *f = zp_framework_get(r->framework); /* valid: zp_search_validate */
        if (f->interleave_min_pp == 0 || base.pp < f->interleave_min_pp)
            continue; /* not in the framework's release (validate_framework refused it given) */
        const int64_t L = r->model->layers;
        for (int v = 2; v <= ZP_MAX_VSTAGES; v++) {
            if (given(r, ZP_SEARCH_VSTAGES) && v != r->base.vstages)
                continue;
            const int even = chunks_fit(r, base.pp, v, L);
            base.pp_acc = even ? 0 : zp_search_acc_fit(r, f, base.pp, v, L);
            if (!even && !base.pp_acc)
                continue;
            base.vstages = v;
            ZP_TRY(shapes_push(out, base));
        }
        base.pp_acc = 0;
    }
    return ZP_OK;
}

/* TP overlap `tpo` for a shape of MP degree mp with sequence parallelism sp: the one asked (on every plan
 * that can run it: sequence-parallel over an MP group inside a node; an MP 1 plan has nothing to overlap), or
 * searched (ZP_SEARCH_TP_OVERLAP) off and the framework's form both, where a plan can run it. */
static int tp_overlap_wanted(const zp_search_req *r, const zp_framework *f, int64_t mp, int sp, int tpo)
{
    const int can = sp && mp > 1 && r->cluster && mp <= r->cluster->gpus_per_node;
    if (r->base.eager && tpo == ZP_TP_OVERLAP_ASYNC) /* torchtitan's async TP runs under torch.compile only */
        return 0;
    if (!given(r, ZP_SEARCH_TP_OVERLAP))
        return tpo == ZP_TP_OVERLAP_OFF || (can && tpo == f->tp_overlap);
    return tpo == (can ? r->base.tp_overlap : ZP_TP_OVERLAP_OFF);
}

/* --recompute-modules auto: selective recompute's module sets, cheapest recompute first, each adding what
 * the model has to the one before (Megatron-core's modules, vocab/zp_plan.c; what each keeps and costs again:
 * models/zp_model.c zp_model_rc_saved_layer, sim/zp_block.c zp_block_recompute_modules):
 *  1. core_attn, Megatron-core's default (0);
 *  2. layernorm and moe_act: their forward again is elementwise kernels only, no GEMM;
 *  3. and mla_up_proj: MLA's Q, K and V up-projections, GEMMs of the latent width (DeepSeek-V3's recipe,
 *     report §3.3.2, is sets 2 and 3's modules);
 *  4. and mlp and shared_experts: the dense MLPs' and the shared experts' GEMMs.
 * The experts' own GEMMs (moe) are left to full recompute. A set the model adds nothing to is skipped. */
int zp_search_rc_ladder(const zp_model *m, unsigned out[ZP_RC_LADDER])
{
    const int64_t moe = m ? zp_model_moe_blocks(m) : 0;
    const unsigned step[ZP_RC_LADDER] = {
        0u, ZP_RCM_LAYERNORM | (moe > 0 ? (unsigned)ZP_RCM_MOE_ACT : 0u),
        m && m->attn == ZP_ATTN_MLA ? (unsigned)ZP_RCM_MLA_UP_PROJ : 0u,
        (m && moe < m->layers ? (unsigned)ZP_RCM_MLP : 0u) |
            (moe > 0 && m->shared_experts > 0 ? (unsigned)ZP_RCM_SHARED_EXPERTS : 0u)};
    int n = 0;
    unsigned have = 0u;
    for (int k = 0; k < ZP_RC_LADDER; k++)
        if (k == 0 || (step[k] & ~have)) {
            have |= step[k];
            out[n++] = have;
        }
    return n;
}

/* Every shape of (stage, degrees): sequence parallelism, recompute, TP overlap, schedule and chunks. */
static zp_status shapes_for(const zp_search_req *r, const zp_dim_ctx *c, shapes *out)
{
    out->n = 0;
    const int64_t mp = c->deg[ZP_DIM_TP], pp = c->deg[ZP_DIM_PP];
    const zp_framework *f = zp_framework_get(r->framework); /* valid: zp_search_validate */
    const int sp_given = given(r, ZP_SEARCH_SP), rc_given = given(r, ZP_SEARCH_RECOMPUTE);
    const int rc_asked = rc_given ? (int)zp_search_req_recompute(r) : -1;
    for (int sp = 0; sp <= 1; sp++) {
        if (sp_given ? sp != r->base.sp : (sp && (r->exact || mp == 1 || !f->sp)))
            continue;
        if (given(r, ZP_SEARCH_TP_OVERLAP) && r->base.tp_overlap > ZP_TP_OVERLAP_OFF && mp > 1 && !sp && !sp_given)
            continue; /* overlap asked: its plans are sequence-parallel (Megatron-core asserts it) */
        for (int rc = 0; rc < ZP_NRECOMPUTE; rc++) {
            /* checkpoint 0 without a recompute: no full recompute (a DeepSpeed config of no checkpoints) */
            int want = rc_given ? rc == rc_asked
                                : (!r->checkpoint ? rc != ZP_RECOMPUTE_FULL && (!r->exact || rc == ZP_RECOMPUTE_NONE)
                                                  : (!r->exact || rc == ZP_RECOMPUTE_FULL));
            if (!want || (rc == ZP_RECOMPUTE_SELECTIVE && !f->selective))
                continue;
            if (rc == ZP_RECOMPUTE_OP && rc_asked != ZP_RECOMPUTE_OP) /* torchtitan's: only when asked */
                continue;
            unsigned sets[ZP_RC_LADDER] = {0};
            const int nsets = rc == ZP_RECOMPUTE_SELECTIVE && r->rc_auto ? zp_search_rc_ladder(r->model, sets) : 1;
            for (int tpo = 0; tpo < ZP_NTP_OVERLAP; tpo++) {
                if (!tp_overlap_wanted(r, f, mp, sp, tpo))
                    continue;
                for (int k = 0; k < nsets; k++) {
                    shape base = {.pp = pp, .sp = sp, .recompute = (zp_recompute)rc, .tp_overlap = tpo,
                                  .rc_modules = sets[k]};
                    ZP_TRY(schedules_for(r, base, out));
                }
            }
        }
    }
    return ZP_OK;
}

/* The search: a walk over the dimension table (each dimension's degrees, given or searched), then over the
 * options of each set of degrees (shapes, ZeRO-R, offload), each candidate at its batches (eval_candidate). */
typedef struct {
    const zp_search_req *r;
    const zp_framework *fw;
    int stage;
    int64_t target;        /* the default batch every candidate runs, 0 when options fix it */
    int pa, pacpu, off;    /* given (or pinned by --exact), or ZP_DIM_ANY: searched */
    zp_dim_id order[ZP_NDIMS];
    int norder;
    shapes sh;
    evec all;
} walk;

/* The dimensions the search decides, from the table: first those that multiply the GPUs (TP, PP; DP is what
 * they leave), then those inside another (EP inside DP), whose range depends on it. */
static void walk_order(walk *w)
{
    w->norder = 0;
    for (int pass = 0; pass < 2; pass++)
        for (int d = 0; d < ZP_NDIMS; d++) {
            const zp_dim_type *t = zp_dims_get((zp_dim_id)d);
            if (t->next && (t->within == t->id) == (pass == 0))
                w->order[w->norder++] = t->id;
        }
}

/* What the request adds to the table's range: a pipeline needs micro-batches to fill it (a global batch
 * or an accumulation) unless given, ZeRO stage 0 or 1 (DeepSpeed's pipeline engine) unless stage and
 * pipeline are both given (torchtitan runs FSDP2 beside pipelines), and a DP degree
 * that divides the global batch. */
static int request_takes(const walk *w, const zp_dim_ctx *c, zp_dim_id id, int64_t d)
{
    const zp_search_req *r = w->r;
    if (id != ZP_DIM_PP || d == 1)
        return 1;
    if (w->fw->no_pipeline)
        return 0; /* the release has no pipeline engine */
    const int fill = given(r, ZP_SEARCH_GLOBAL_BATCH) || given(r, ZP_SEARCH_ACCUM);
    if (!deg_given(r, ZP_DIM_PP) && (r->exact || !fill))
        return 0;
    /* ZeRO-2/3 beside pipeline stages (torchtitan's FSDP2) when both are given (a shard group given asks for
     * them) and the framework runs them; not searched, so a search without them offers what it always has */
    const int sharded = given(r, ZP_SEARCH_STAGE) || r->base.shard_group > 0;
    if (w->stage >= 2 && (!sharded || !deg_given(r, ZP_DIM_PP) || w->stage > w->fw->pp_max_stage))
        return 0;
    const int64_t dp = r->gpus / c->deg[ZP_DIM_TP] / d;
    return !given(r, ZP_SEARCH_GLOBAL_BATCH) || r->global_batch % dp == 0;
}

/* The next degree of dimension `id` after `prev` (0: the first), 0 when none: the given one (or 1 under
 * --exact) if the decided degrees admit it, else the row's range. */
static int64_t walk_next(const walk *w, const zp_dim_ctx *c, zp_dim_id id, int64_t prev)
{
    const zp_dim_type *t = zp_dims_get(id);
    const int pinned = deg_given(w->r, id) || w->r->exact; /* --exact: what is not given is 1 */
    const int64_t fixed = deg_given(w->r, id) ? w->r->base.deg[id] : 1;
    if (pinned)
        return prev == 0 && (!t->admits || t->admits(c, fixed)) && request_takes(w, c, id, fixed) ? fixed : 0;
    for (int64_t d = t->next(c, prev); d > 0; d = t->next(c, d))
        if (request_takes(w, c, id, d))
            return d;
    return 0;
}

/* A candidate's plan: the degrees and shape decided, the ZeRO-R and offload choice, the rest the
 * request's. */
static void candidate_plan(const walk *w, const zp_dim_ctx *c, const shape *x, int ra, int off, zp_plan *p)
{
    const zp_search_req *r = w->r;
    *p = r->base;
    p->micro_batch = p->grad_accum = 1; /* the batch is eval_candidate's */
    for (int d = 0; d < ZP_NDIMS; d++)
        p->deg[d] = c->deg[d];
    p->dp = r->gpus / zp_dims_gpus(c->deg);
    p->stage = w->stage;
    p->schedule = x->schedule;
    p->vstages = x->vstages;
    p->pp_acc = x->pp_acc;
    p->sp = x->sp;
    p->tp_overlap = x->tp_overlap;
    zp_plan_set_recompute(p, x->recompute);
    if (r->rc_auto)
        p->rc_modules = x->rc_modules;
    p->pa = ra >= 1;
    p->pa_cpu = ra == 2;
    p->offload = (zp_offload)off;
    p->bf16 = zp_search_bf16(r);
    /* what the framework's release forces: fp32 gradients beside bf16 (Megatron-LM v2), no overlap */
    p->grad_bytes = p->bf16 && p->param_bytes == 2.0 && w->fw->bf16_fp32_grads ? 4.0 : r->base.grad_bytes;
    p->overlap_comm = r->base.overlap_comm && w->fw->overlap;
    /* the fp16 loss scaler's per-tensor checks (deepspeed-2020); bf16 and fp32 have no loss scaling */
    p->serial_scaler = w->fw->serial_scaler && !p->bf16 && p->param_bytes == 2.0;
    p->interleave_all_warmup = w->fw->interleave_all_warmup; /* Megatron-LM v2's warm-up at m = P */
    p->overlap_p2p_comm = r->base.overlap_p2p_comm && w->fw->p2p_overlap;
    p->overlap_p2p_warmup_flush = r->base.overlap_p2p_warmup_flush && p->overlap_p2p_comm;
    p->swiglu_fusion = r->base.swiglu_fusion && w->fw->swiglu_fusion;
    p->overlap_param_gather = r->base.overlap_param_gather && p->overlap_comm && (p->stage == 1 || p->stage == 2) &&
                              p->offload == ZP_OFFLOAD_NONE;
    p->nvme = off == ZP_OFFLOAD_NONE ? 0 : (off == ZP_OFFLOAD_PARAMS ? r->base.nvme : r->base.nvme & ZP_NVME_OPTIMIZER);
}

/* ZeRO-R activation options: none (0), Pa (1), Pa+cpu (2). Pa only matters with MP > 1; it partitions the
 * checkpoints of full recompute, which sequence parallelism shards already. */
static int ra_wanted(const walk *w, const shape *x, int64_t mp, int ra)
{
    const int pa = ra >= 1, pacpu = ra == 2;
    if (pacpu && !w->fw->pa_cpu)
        return 0;
    if (w->pacpu == 1) {
        if (!pacpu)
            return 0;
    } else if ((w->pacpu == 0 && pacpu) || (w->pa != ZP_DIM_ANY && pa != w->pa)) {
        return 0;
    }
    if ((x->recompute != ZP_RECOMPUTE_FULL || x->sp || w->r->base.ckpt_every > 1) && ra > 0)
        return 0; /* Pa partitions every block's checkpoint: not with every k-th block checkpointed */
    return !(mp == 1 && ra > 0 && w->pa != 1 && w->pacpu != 1); /* no MP group to partition across */
}

/* Offload: none, optimizer, params, as given and as the stage and the framework allow. */
static int off_wanted(const walk *w, int off)
{
    if ((w->off != ZP_DIM_ANY && off != w->off) || (off != ZP_OFFLOAD_NONE && !w->fw->offload))
        return 0;
    if (w->r->base.nvme && off == ZP_OFFLOAD_NONE)
        return 0; /* NVMe holds offloaded states: it implies offload */
    if (off != ZP_OFFLOAD_NONE && zp_plan_moments_saved(&w->r->base) > 0)
        return 0; /* narrower Adam moments are the GPU optimizer's (zp_plan_validate) */
    return !((off == ZP_OFFLOAD_OPTIMIZER && w->stage < 1) || (off == ZP_OFFLOAD_PARAMS && w->stage != 3));
}

/* The largest shard group of a plan inside one node: G dividing DP with G x DP's stride <= the node's GPUs,
 * below DP; 0 when none (DP fits a node already, or no such G above 1). */
static int64_t node_shard_group(const zp_search_req *r, const zp_plan *p)
{
    const int64_t gpn = r->cluster && r->cluster->gpus_per_node > 0 ? r->cluster->gpus_per_node : 1;
    const int64_t ds = zp_dims_stride(p->deg, ZP_DIM_DP);
    for (int64_t g = gpn / ds; g > 1; g--)
        if (g < p->dp && p->dp % g == 0)
            return g;
    return 0;
}

/* A candidate under hybrid sharding: its given shard group (kept where it divides DP, at ZeRO-2/3, without
 * EP or offload: zp_plan_validate), or with --shard-group auto full sharding and the node's shard group. */
static zp_status eval_shard_groups(walk *w, const zp_plan *p)
{
    const int hsdp = p->stage >= 2 && p->ep <= 1 && p->offload == ZP_OFFLOAD_NONE;
    if (p->shard_group > 0 && (p->dp % p->shard_group != 0 || !hsdp))
        return ZP_OK;
    zp_plan q = *p; /* eval_candidate may fill in the batch */
    ZP_TRY(eval_candidate(w->r, w->target, &q, &w->all));
    if (!w->r->shard_auto || !hsdp || p->shard_group > 0)
        return ZP_OK;
    q = *p;
    q.shard_group = node_shard_group(w->r, p);
    return q.shard_group > 0 ? eval_candidate(w->r, w->target, &q, &w->all) : ZP_OK;
}

/* Every candidate of one set of degrees. */
static zp_status walk_options(walk *w, const zp_dim_ctx *c)
{
    ZP_TRY(shapes_for(w->r, c, &w->sh));
    for (int k = 0; k < w->sh.n; k++)
        for (int ra = 0; ra < 3; ra++) {
            if (!ra_wanted(w, &w->sh.v[k], c->deg[ZP_DIM_TP], ra))
                continue;
            for (int off = 0; off <= 2; off++) {
                if (!off_wanted(w, off))
                    continue;
                zp_plan p;
                candidate_plan(w, c, &w->sh.v[k], ra, off, &p);
                ZP_TRY(eval_shard_groups(w, &p));
            }
        }
    return ZP_OK;
}

/* Dimension k of the walk's order and those after it, then the options. */
static zp_status walk_dims(walk *w, zp_dim_ctx *c, int k)
{
    if (k == w->norder)
        return walk_options(w, c);
    const zp_dim_id id = w->order[k];
    for (int64_t d = walk_next(w, c, id, 0); d > 0; d = walk_next(w, c, id, d)) {
        c->deg[id] = d;
        zp_status st = walk_dims(w, c, k + 1);
        if (st != ZP_OK)
            return st;
    }
    c->deg[id] = ZP_DIM_ANY;
    return ZP_OK;
}

/* Every candidate of the request, evaluated (memory, fit, analytic step). */
static zp_status walk_search(const zp_search_req *r, walk *w)
{
    /* Options given are constraints and the rest is searched; with --exact the rest takes its default
     * (no Pa, no offload, MP 1, no pipeline, no SP, full recompute), as a DeepSpeed config does. */
    w->r = r;
    w->fw = zp_framework_get(r->framework);
    const int open = r->exact ? 0 : ZP_DIM_ANY; /* what is not given: pinned off under --exact, else searched */
    w->pa = given(r, ZP_SEARCH_PA) ? r->base.pa : open;
    w->pacpu = given(r, ZP_SEARCH_PA_CPU) ? r->base.pa_cpu : open;
    w->off = given(r, ZP_SEARCH_OFFLOAD) ? (int)r->base.offload : (r->exact ? ZP_OFFLOAD_NONE : ZP_DIM_ANY);
    /* no batch option given: every candidate runs about the default batch, not the largest that fits */
    const uint32_t batch = ZP_SEARCH_GLOBAL_BATCH | ZP_SEARCH_MICRO_BATCH | ZP_SEARCH_ACCUM;
    w->target = r->default_batch && !r->exact && (r->searched & batch) == batch ? zp_search_default_batch(r->model) : 0;
    walk_order(w);
    for (int stage = 0; stage <= w->fw->max_stage; stage++) {
        if (given(r, ZP_SEARCH_STAGE) && stage != r->base.stage)
            continue;
        w->stage = stage;
        zp_dim_ctx c;
        zp_dims_ctx_init(&c, r->model, r->gpus, zp_cluster_domain(r->cluster), r->max_mp);
        ZP_TRY(walk_dims(w, &c, 0));
    }
    return ZP_OK;
}

zp_status zp_search_walk(const zp_search_req *r, zp_eval **out, int *n, int64_t *target)
{
    walk w = {0};
    zp_status st = walk_search(r, &w);
    free(w.sh.v);
    if (st != ZP_OK) {
        free(w.all.v);
        return st;
    }
    *out = w.all.v;
    *n = w.all.n;
    *target = w.target;
    return ZP_OK;
}
