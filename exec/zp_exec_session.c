/* zp_exec_session.c — one rank's session: its configuration, the layout of its parameters (shapes from
 * vocab/zp_tensors.h, shards from vocab/zp_shard.h), its schedule, its tensors (the schedule's setup, allocated
 * by running its alloc ops) with their initial values, and its communicators. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "zp_config.h"
#include "zp_dispatch.h"
#include "zp_exec_impl.h"
#include "zp_kernels_mpi.h"
#include "zp_pipeline.h"

/* ---- configuration ---- */

void zp_exec_config_default(zp_exec_config *c)
{
    memset(c, 0, sizeof *c);
    zp_plan_default(&c->plan, 1);
    c->plan.checkpoint = 0;
    c->plan.overlap_comm = 0;
    c->plan.param_bytes = 4.0;
    c->plan.k_optimizer = 8.0;
    c->plan.impl = ZP_IMPL_EXEC;
    c->steps = 3;
    c->seed = 1;
    c->lr = 1e-3;
    c->backend = "cpu";
}

/* Context parallelism as the executor runs it (zp_exec_cp.c, zp_exec_cp_ring.c): the ring and the all-gather
 * form, on the cpu backend, dense models without pipeline stages; the degree against the sequence and the ranks as the planner judges it
 * (vocab/zp_dims.c: twice CP divides the sequence, CP the DP ranks). */
static zp_status check_cp(const zp_exec_config *c, int ranks, int64_t pp)
{
    const zp_plan *p = &c->plan;
    if (p->cp <= 1)
        return ZP_OK;
    zp_dim_ctx ctx;
    zp_dims_ctx_init(&ctx, &c->model, ranks, 0, 0);
    ctx.deg[ZP_DIM_TP] = p->mp;
    ctx.deg[ZP_DIM_PP] = pp;
    ZP_TRY(zp_dims_get(ZP_DIM_CP)->check(&ctx, p->cp));
    if (!c->backend || strcmp(c->backend, "cpu") != 0)
        return ZP_FAIL(ZP_EUNSUPPORTED, "--cp with --backend %s: the executor runs context parallelism on "
                                        "--backend cpu", c->backend ? c->backend : "");
    if (pp > 1)
        return ZP_FAIL(ZP_EUNSUPPORTED, "--cp with --pp: the executor runs context parallelism without pipeline "
                                        "stages (the planner does both)");
    if (c->model.experts > 0)
        return ZP_FAIL(ZP_EUNSUPPORTED, "--cp with the mixture-of-experts model %s: the executor runs context "
                                        "parallelism on dense models (the planner does both)", c->model.name);
    return ZP_OK;
}

zp_status zp_exec_config_check(const zp_exec_config *c, int ranks)
{
    const zp_plan *p = &c->plan;
    const zp_model *m = &c->model;
    ZP_TRY(zp_model_validate(m));
    if (!zp_stage_get(p->stage))
        return ZP_FAIL(ZP_EINVAL, "--stage: %d is not a ZeRO stage (use 0, 1, 2 or 3)", p->stage);
    if (p->mp < 1)
        return ZP_FAIL(ZP_EINVAL, "--mp: must be at least 1");
    if (ranks % p->mp != 0)
        return ZP_FAIL(ZP_EINVAL, "--mp %lld does not divide the %d ranks", (long long)p->mp, ranks);
    const int64_t pp = p->pp > 1 ? p->pp : 1;
    if (ranks % (p->mp * pp) != 0)
        return ZP_FAIL(ZP_EINVAL, "--pp %lld x --mp %lld do not divide the %d ranks", (long long)pp, (long long)p->mp,
                       ranks);
    if (pp > 1 && p->schedule != ZP_PP_1F1B)
        return ZP_FAIL(ZP_EINVAL, "--schedule %s: the executor runs pipelines with 1F1B (--schedule 1f1b)",
                       zp_pp_schedule_name(p->schedule));
    if (pp > 1 && p->offload != ZP_OFFLOAD_NONE)
        return ZP_FAIL(ZP_EINVAL, "--offload with --pp: the executor runs pipelines without offload");
    if (pp > 1)
        ZP_TRY(zp_pp_check(m, p));
    if (p->sp)
        return ZP_FAIL(ZP_EINVAL, "--sp: the executor does not run sequence parallelism (the simulator does)");
    if (zp_plan_moments_saved(p) > 0)
        return ZP_FAIL(ZP_EINVAL, "--adam-moments: the executor keeps Adam's moments in fp32 (the simulator models "
                                  "narrower ones)");
    if (p->act_fp8_store)
        return ZP_FAIL(ZP_EINVAL, "--activation-func-fp8-input-store: the executor keeps a SwiGLU's input in the "
                                  "training type (the simulator models the FP8 store)");
    if (p->selective)
        return ZP_FAIL(ZP_EINVAL, "--recompute selective: the executor runs full recompute or none (the simulator "
                                  "does selective)");
    if (p->op_sac || p->ckpt_every > 1)
        return ZP_FAIL(ZP_EINVAL, "%s: the executor runs full recompute of every block or none (the simulator "
                                  "models torchtitan's modes)",
                       p->op_sac ? "--recompute op" : "--checkpoint-every");
    if (p->micro_batch < 1)
        return ZP_FAIL(ZP_EINVAL, "--micro-batch: must be at least 1");
    if (p->grad_accum < 1)
        return ZP_FAIL(ZP_EINVAL, "--grad-accum: must be at least 1");
    if (!(c->min_seconds >= 0 && c->min_seconds <= 3600))
        return ZP_FAIL(ZP_EINVAL, "--min-seconds: %g is not between 0 and 3600", c->min_seconds);
    if (c->steps < 1)
        return ZP_FAIL(ZP_EINVAL, "--steps: must be at least 1");
    if (p->pa_cpu)
        return ZP_FAIL(ZP_EINVAL, "--pa-cpu: the executor does not move checkpoints to the host");
    if (p->pa && !p->checkpoint)
        return ZP_FAIL(ZP_EINVAL, "--pa partitions activation checkpoints: it needs checkpointing (drop --no-checkpoint)");
    if (!(c->lr > 0) || !isfinite(c->lr))
        return ZP_FAIL(ZP_EINVAL, "--lr: must be positive");
    if (!c->backend || (strcmp(c->backend, "cpu") != 0 && strcmp(c->backend, "cuda") != 0))
        return ZP_FAIL(ZP_EINVAL, "--backend: '%s' is not a backend (cpu or cuda)", c->backend ? c->backend : "");
    if (p->offload == ZP_OFFLOAD_PARAMS)
        return ZP_FAIL(ZP_EINVAL, "--offload params is not executed (only optimizer offload)");
    if (p->ep > 1 && p->dispatcher != ZP_DISPATCH_ALLTOALL)
        return ZP_FAIL(ZP_EINVAL, "--moe-dispatcher %s: the executor dispatches the tokens with an all-to-all "
                                  "(--moe-dispatcher alltoall; the planner models the others)",
                       zp_dispatch_get(p->dispatcher) ? zp_dispatch_get(p->dispatcher)->name : "?");
    ZP_TRY(check_cp(c, ranks, pp));
    if (pp > 1 && p->stage >= 2)
        return ZP_FAIL(ZP_EINVAL, "ZeRO stage %d with pipeline stages (--pp %lld): the executor runs pipelines with "
                                  "ZeRO stage 0 or 1 (the planner models FSDP2 beside them)", p->stage, (long long)pp);
    if (p->shard_group > 0 || p->reshard != ZP_RESHARD_DEFAULT)
        return ZP_FAIL(ZP_EINVAL, "--shard-group / --reshard-after-forward: the executor shards over every DP rank "
                                  "and frees stage 3's parameters after the forward (the planner models both)");
    zp_plan q = *p;
    q.dp = ranks / p->mp / pp;
    ZP_TRY(zp_plan_validate(&q));
    zp_tensors_shape sh; /* the architectures and splits the executor runs (named when it does not) */
    ZP_TRY(zp_tensors_check(m, &q));
    ZP_TRY(zp_tensors_shape_get(m, &q, &sh));
    if (m->mtp_layers > 0)
        return ZP_FAIL(ZP_EUNSUPPORTED, "model %s has %lld multi-token prediction module%s: the executor trains the "
                                        "main model only (the planner models them; --mtp-layers 0 drops them)",
                       m->name, (long long)m->mtp_layers, m->mtp_layers == 1 ? "" : "s");
    if (sh.moe && pp > 1)
        return ZP_FAIL(ZP_EUNSUPPORTED, "--pp with the mixture-of-experts model %s: the executor runs experts "
                                        "without pipeline stages (the planner does)", m->name);
    if (sh.moe && p->offload != ZP_OFFLOAD_NONE)
        return ZP_FAIL(ZP_EUNSUPPORTED, "--offload with the mixture-of-experts model %s: the executor offloads "
                                        "dense models only (the planner does both)", m->name);
    /* the flat layout is indexed with size_t and BLAS takes int dimensions */
    double big = (double)m->vocab * (double)m->hidden + 12.0 * (double)m->hidden * (double)m->hidden;
    double act = (double)p->micro_batch * (double)m->seq * (double)(m->ffn > m->vocab ? m->ffn : m->vocab);
    if (big > 2e9 || act > 2e9 || (double)p->micro_batch * m->heads * m->seq * m->seq > 2e9)
        return ZP_FAIL(ZP_ERANGE, "model %s is too large for the executor on this host", m->name);
    return ZP_OK;
}

/* ---- the schedule's buffers ---- */

static size_t slots_of(const zp_exec_session *S, zp_buf b)
{
    const size_t k = (size_t)S->xs.slots; /* copies for the micro-batches in flight */
    switch (zp_buf_per_of(b)) {
    case ZP_PER_LAYER: return S->L * k;
    case ZP_PER_LAYER1: return (S->L + 1) * k;
    case ZP_PER_ITEM: return S->L + 2;
    default: return 1;
    }
}

static zp_status buffer_slot(zp_exec_session *S, const zp_op *o, void ***slot)
{
    if ((unsigned)o->buf >= ZP_NBUF || o->item < 0 || (size_t)o->item >= slots_of(S, o->buf))
        return ZP_FAIL(ZP_ERUNTIME, "schedule: buffer %s[%d] is not one of the executor's", zp_buf_name(o->buf),
                       o->item);
    *slot = &S->slot[o->buf][o->item];
    return ZP_OK;
}

/* Allocates the buffer the op names, zeroed (a stage-3 group is not: its gather writes all of it). */
zp_status x_alloc(zp_exec_session *S, const zp_op *o)
{
    void **slot;
    ZP_TRY(buffer_slot(S, o, &slot));
    if (*slot)
        return ZP_FAIL(ZP_ERUNTIME, "schedule: %s[%d] allocated twice", zp_buf_name(o->buf), o->item);
    *slot = zp_exec_mem_alloc(&S->mem, o->cat, (size_t)o->bytes, o->buf != ZP_BUF_GATHERED && o->buf != ZP_BUF_XGATHERED);
    return *slot ? ZP_OK
                 : ZP_FAIL(ZP_ENOMEM, "out of memory allocating %s (%.0f bytes)", zp_buf_name(o->buf), o->bytes);
}

zp_status x_free(zp_exec_session *S, const zp_op *o)
{
    void **slot;
    ZP_TRY(buffer_slot(S, o, &slot));
    zp_exec_mem_free(&S->mem, *slot);
    *slot = NULL;
    return ZP_OK;
}

/* ---- initial values: the GLOBAL tensors', so any split and any shard start from the same model ---- */

static uint64_t mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static double unif(uint64_t h) { return ((double)(h >> 11) + 0.5) * (1.0 / 9007199254740992.0); }

/* Standard normal of a global tensor element (Box-Muller on two hashed uniforms, splitmix64). */
static double normal_at(uint64_t seed, uint64_t tensor, uint64_t idx)
{
    uint64_t h = mix64(seed ^ mix64(tensor * 0x100000001b3ull ^ mix64(idx)));
    double u1 = unif(h), u2 = unif(mix64(h));
    return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}

/* Row r of this MP rank's column-split tensor (QKV, MLP up) as a row of the global tensor:
 *  - QKV rows [Q heads | K heads | V heads] of this rank, of the global [Q (NH hd) | K (KV hd) | V (KV hd)];
 *  - MLP up (f rows of this rank's `fl`, gated: [gate | up]) of the global [gate (F) | up (F)]. */
static size_t qkv_row(const zp_exec_session *S, size_t r)
{
    const size_t mr = (size_t)S->mr, qg = S->NH * S->hd, kvg = S->sh.KV * S->hd;
    if (r < S->Cq)
        return mr * S->Cq + r;
    r -= S->Cq;
    if (r < S->kvn)
        return qg + mr * S->kvn + r;
    return qg + kvg + mr * S->kvn + (r - S->kvn);
}

static size_t up_row(const zp_exec_session *S, size_t r, size_t fl, size_t F)
{
    const size_t mr = (size_t)S->mr;
    return r < fl ? mr * fl + r : F + mr * fl + (r - fl);
}

/* Value of element (r, c) of this MP rank's tensor `kind` of group `item` (0: the embedding and head
 * tensors, whatever group holds them): the global tensor's element (GPT-2's initialisation: N(0, 0.02),
 * residual projections scaled by 1/sqrt(2L), norms' gains 1). */
static float init_value(const zp_exec_session *S, int item, int kind, size_t r, size_t c)
{
    const size_t C = S->C, Fl = S->Fl, mr = (size_t)S->mr;
    const uint64_t tid = (uint64_t)item * 16u + (uint64_t)kind;
    double std = 0.02, base = 0.0;
    size_t g;
    if (item == 0) {
        switch (kind) {
        case ZP_TENSORS_E_WTE: case ZP_TENSORS_E_LMW: g = ((size_t)S->v0 + r) * C + c; break;
        case ZP_TENSORS_E_WPE: g = r * C + c; std = 0.01; break;
        case ZP_TENSORS_E_LNFW: g = c; base = 1.0; break;
        default: g = c; break; /* lnf_b */
        }
    } else {
        const double proj_std = 0.02 / sqrt(2.0 * (double)S->L);
        switch (kind) {
        case ZP_TENSORS_B_LN1W: case ZP_TENSORS_B_LN2W: g = c; base = 1.0; break;
        case ZP_TENSORS_B_LN1B: case ZP_TENSORS_B_LN2B: case ZP_TENSORS_B_PROJB: case ZP_TENSORS_B_FCPB:
            g = c; std = 0.01; break;
        case ZP_TENSORS_B_QKVW: g = qkv_row(S, r) * C + c; break;
        case ZP_TENSORS_B_QKVB: g = qkv_row(S, c); std = 0.01; break;
        case ZP_TENSORS_B_PROJW: g = r * S->NH * S->hd + mr * S->Cq + c; std = proj_std; break;
        case ZP_TENSORS_B_FCW: g = up_row(S, r, Fl, S->F) * C + c; break;
        case ZP_TENSORS_B_FCB: g = up_row(S, c, Fl, S->F); std = 0.01; break;
        case ZP_TENSORS_B_ROUTER: g = r * C + c; break;
        default: g = r * S->F + mr * Fl + c; std = proj_std; break; /* fcproj_w */
        }
    }
    return (float)(base + std * normal_at(S->cfg.seed, tid, g));
}

/* Element (r, c) of this rank's expert tensor `kind` of block l: local expert r / rows of the EP rank's
 * e_local, the global expert's element (expert tensors split over MP as the dense MLP's). */
static float init_expert(const zp_exec_session *S, int l, int kind, size_t r, size_t c)
{
    const zp_tensors_shape *h = &S->sh;
    const uint64_t tid = (uint64_t)(1000 + l) * 16u + (uint64_t)kind;
    const size_t rows = kind == ZP_TENSORS_X_UPW ? h->e_up : S->C, j = r / rows, rr = r % rows;
    const size_t eg = (size_t)S->er * h->e_local + j, mr = (size_t)S->mr;
    if (kind == ZP_TENSORS_X_UPW) {
        const size_t grows = h->gated ? 2 * h->F_e : h->F_e;
        return (float)(0.02 * normal_at(S->cfg.seed, tid, (eg * grows + up_row(S, rr, h->e_f, h->F_e)) * S->C + c));
    }
    const double proj_std = 0.02 / sqrt(2.0 * (double)S->L);
    return (float)(proj_std * normal_at(S->cfg.seed, tid, (eg * S->C + rr) * h->F_e + mr * h->e_f + c));
}

/* Columns of each tensor (rows = size / cols): vectors are one row. */
static size_t tensor_cols(const zp_exec_session *S, int item, int kind)
{
    if (item == 0)
        return S->C;
    switch (kind) {
    case ZP_TENSORS_B_PROJW: return S->Cq;
    case ZP_TENSORS_B_FCPW: return S->Fl;
    case ZP_TENSORS_B_QKVB: return S->qkvn;
    case ZP_TENSORS_B_FCB: return S->up;
    default: return S->C;
    }
}

/* Writes the initial values of flat elements [lo, hi) into dst (host memory): the stage's groups (the
 * embedding group as item 0, the blocks, an untied head group as item L + 1). */
static void init_range(const zp_exec_session *S, size_t lo, size_t hi, float *dst)
{
    const size_t L = S->L;
    for (size_t item = 0; item <= L + 1; item++) {
        const int blk = item >= 1 && item <= L;
        if (item == 0 ? !S->xs.emb
                      : item == L + 1 ? !S->xs.head
                                      : (item - 1 < (size_t)S->xs.l0 || item - 1 >= (size_t)(S->xs.l0 + S->xs.nl)))
            continue;
        const size_t base = zp_exec_item_lo(S, (int)item);
        const size_t *off = blk ? S->b_off : S->e_off;
        /* the kinds of the group: a block's, the embedding group's (all the E kinds when tied), the head's */
        const int k0 = item == L + 1 ? ZP_TENSORS_E_LNFW : 0;
        const int k1 = blk ? ZP_TENSORS_B_N : (item == 0 && S->xs.head) ? ZP_TENSORS_E_LNFW : ZP_TENSORS_E_N;
        for (int k = k0; k < k1; k++) {
            size_t a = base + off[k] - off[k0], b = base + off[k + 1] - off[k0];
            size_t x = a > lo ? a : lo, y = b < hi ? b : hi;
            size_t cols = tensor_cols(S, blk ? (int)item : 0, k);
            for (size_t i = x; i < y; i++) {
                size_t e = i - a;
                dst[i - lo] = init_value(S, blk ? (int)item : 0, k, e / cols, e % cols);
            }
        }
    }
}

/* The same for the routed experts' flat elements [lo, hi). */
static void init_range_x(const zp_exec_session *S, size_t lo, size_t hi, float *dst)
{
    for (int i = 0; i < S->xs.nl; i++)
        for (int k = 0; k < ZP_TENSORS_X_N; k++) {
            const size_t a = (size_t)i * S->xsz + S->x_off[k], b = (size_t)i * S->xsz + S->x_off[k + 1];
            const size_t x = a > lo ? a : lo, y = b < hi ? b : hi, cols = k == ZP_TENSORS_X_UPW ? S->C : S->sh.e_f;
            for (size_t j = x; j < y; j++)
                dst[j - lo] = init_expert(S, S->xs.l0 + i, k, (j - a) / cols, (j - a) % cols);
        }
}

/* The same into the backend's memory, through a host staging buffer of 16K floats (the dense layout, or
 * the experts' with `experts`). */
static zp_status init_range_dev(const zp_exec_session *S, size_t lo, size_t hi, float *dst, int experts)
{
    enum { CHUNK = 16384 };
    float *h = malloc(CHUNK * sizeof *h);
    if (!h)
        return ZP_FAIL(ZP_ENOMEM, "out of memory");
    zp_status st = ZP_OK;
    for (size_t a = lo; a < hi && st == ZP_OK; a += CHUNK) {
        size_t b = hi - a < CHUNK ? hi : a + CHUNK;
        if (experts)
            init_range_x(S, a, b, h);
        else
            init_range(S, a, b, h);
        st = S->be->copy_to_device(dst + (a - lo), h, (b - a) * sizeof *h);
    }
    free(h);
    return st;
}

/* Stage 3 initialises only this rank's shard (DeepSpeed's zero.Init); with ZeRO-Offload the host's master
 * copy starts from the same values as the device. */
static zp_status init_params(zp_exec_session *S)
{
    if (S->plan.stage < 3) {
        ZP_TRY(init_range_dev(S, 0, S->N, BUF(S, PARAMS, 0), 0));
        if (S->NX > 0)
            ZP_TRY(init_range_dev(S, 0, S->NX, BUF(S, XPARAMS, 0), 1));
    }
    for (int i = 0; S->plan.stage == 3 && i < S->xunits.n; i++) {
        const zp_unit *u = &S->xunits.u[i];
        ZP_TRY(init_range_dev(S, u->off, u->off + u->size, BUF(S, XPSHARD, 0) + u->shard_off, 1));
    }
    for (int i = 0; i < S->units.n; i++) {
        const zp_unit *u = &S->units.u[i];
        if (S->plan.stage == 3)
            ZP_TRY(init_range_dev(S, u->off, u->off + u->size, BUF(S, PSHARD, 0) + u->shard_off, 0));
        if (S->plan.offload == ZP_OFFLOAD_OPTIMIZER)
            init_range(S, u->off, u->off + u->size, BUF(S, H_MASTER, 0) + u->shard_off);
    }
    return ZP_OK;
}

/* Tokens of global sequence g of step `step`: a noisy arithmetic chain t' = 7t + 1 + {0,1,2} mod V,
 * deterministic from the seed, with structure a model can learn (the loss goes down). */
void zp_exec_tokens(zp_exec_session *S, int step)
{
    const size_t T1 = S->T + 1;
    for (size_t u = 0; u < S->GA; u++)
        for (size_t j = 0; j < S->B; j++) {
            /* the batch's replica: the CP ranks of a group share its sequences */
            uint64_t g = (uint64_t)(S->dr / S->cp) * S->B * S->GA + u * S->B + j;
            int *t = S->tok + (u * S->B + j) * T1;
            uint64_t h = mix64(S->cfg.seed * 0x9e37ull ^ mix64((uint64_t)step * 1000003ull + g));
            t[0] = (int)(h % S->V);
            for (size_t p = 1; p < T1; p++) {
                h = mix64(h);
                t[p] = (int)(((uint64_t)t[p - 1] * 7u + 1u + h % 3u) % S->V);
            }
        }
}

/* ---- the session ---- */

static zp_status split_comms(zp_exec_session *S)
{
#if ZP_HAVE_MPI
    /* MP groups: one (stage, DP rank); DP groups: one (stage, MP rank); the tied embedding: the first and
     * the last stage of one (DP rank, MP rank); EP groups: ep consecutive DP ranks of one (stage, MP rank)
     * (DeepSpeed-MoE's), EDP groups: the DP ranks of one (stage, MP rank) holding the same experts */
    MPI_Comm w = zp_comm_mpi(S->world), mpc, dpc, embc = MPI_COMM_NULL, epc = MPI_COMM_NULL, edpc = MPI_COMM_NULL;
    MPI_Comm cpc = MPI_COMM_NULL; /* CP groups: cp consecutive DP ranks of one (stage, MP rank) */
    const int place = S->dr * S->mp + S->mr, ends = S->pp > 1 && (S->pr == 0 || S->pr == S->pp - 1);
    const int moe = S->sh.moe, col = S->pr * S->mp + S->mr;
    if (MPI_Comm_split(w, S->pr * S->dp + S->dr, S->mr, &mpc) != MPI_SUCCESS ||
        MPI_Comm_split(w, col, S->dr, &dpc) != MPI_SUCCESS ||
        MPI_Comm_split(w, ends ? place : MPI_UNDEFINED, S->pr, &embc) != MPI_SUCCESS ||
        MPI_Comm_split(w, moe ? col * S->edp + S->edr : MPI_UNDEFINED, S->er, &epc) != MPI_SUCCESS ||
        MPI_Comm_split(w, moe ? col * S->ep + S->er : MPI_UNDEFINED, S->edr, &edpc) != MPI_SUCCESS ||
        MPI_Comm_split(w, S->cp > 1 ? col * S->dp + S->dr / S->cp : MPI_UNDEFINED, S->cr, &cpc) != MPI_SUCCESS)
        return ZP_FAIL(ZP_ERUNTIME, "MPI_Comm_split failed");
    zp_status st = zp_comm_from_mpi(S->be, mpc, &S->mpc);
    if (st == ZP_OK)
        st = zp_comm_from_mpi(S->be, dpc, &S->dpc);
    if (st == ZP_OK && embc != MPI_COMM_NULL)
        st = zp_comm_from_mpi(S->be, embc, &S->embc);
    if (st == ZP_OK && epc != MPI_COMM_NULL)
        st = zp_comm_from_mpi(S->be, epc, &S->epc);
    if (st == ZP_OK && edpc != MPI_COMM_NULL)
        st = zp_comm_from_mpi(S->be, edpc, &S->edpc);
    if (st == ZP_OK && cpc != MPI_COMM_NULL)
        st = zp_comm_from_mpi(S->be, cpc, &S->cpc);
    MPI_Comm_free(&mpc);
    MPI_Comm_free(&dpc);
    if (cpc != MPI_COMM_NULL)
        MPI_Comm_free(&cpc);
    if (embc != MPI_COMM_NULL)
        MPI_Comm_free(&embc);
    if (epc != MPI_COMM_NULL)
        MPI_Comm_free(&epc);
    if (edpc != MPI_COMM_NULL)
        MPI_Comm_free(&edpc);
    return st;
#else
    if (S->nranks != 1)
        return ZP_FAIL(ZP_EUNSUPPORTED, "this zplan was built without MPI");
    ZP_TRY(zp_comm_world(S->be, &S->mpc));
    if (S->sh.moe) {
        ZP_TRY(zp_comm_world(S->be, &S->epc));
        ZP_TRY(zp_comm_world(S->be, &S->edpc));
    }
    return zp_comm_world(S->be, &S->dpc);
#endif
}

/* Shapes, the flat layout and its units: group boundaries and the bucket boundaries from the top. */
static zp_status layout(zp_exec_session *S)
{
    const zp_tensors_shape *h = &S->sh;
    S->L = (size_t)S->m.layers;
    S->C = h->C;
    S->NH = h->NH;
    S->T = h->T;
    S->V = h->V;
    S->F = h->F;
    S->Cq = h->q_n;
    S->Fl = h->Fl;
    S->Vl = h->Vl;
    S->NHl = h->NHl;
    S->hd = h->hd;
    S->KVl = h->kvh;
    S->kvn = h->kv_n;
    S->qkvn = h->qkv_n;
    S->up = h->up;
    S->B = (size_t)S->plan.micro_batch;
    S->GA = (size_t)S->plan.grad_accum;
    S->Tl = S->T / (size_t)S->cp; /* the CP slice (zp_exec_config_check: 2 cp divides T) */
    S->BT = S->B * S->Tl;
    S->v0 = (long)((size_t)S->mr * S->Vl);
    for (int k = 0; k < ZP_TENSORS_E_N; k++)
        S->e_off[k + 1] = S->e_off[k] + h->emb[k];
    for (int k = 0; k < ZP_TENSORS_B_N; k++)
        S->b_off[k + 1] = S->b_off[k] + h->blk[k];
    for (int k = 0; k < ZP_TENSORS_X_N; k++)
        S->x_off[k + 1] = S->x_off[k] + h->xp[k];
    S->esz = S->xs.esz;
    S->hsz = S->xs.hsz;
    S->bsz = S->xs.bsz;
    S->xsz = S->xs.xsz;
    S->N = S->xs.n;
    S->NX = S->xs.nx;
    if (fabs(S->sched.params - (double)(S->N + S->NX)) > 0.5)
        return ZP_FAIL(ZP_ERUNTIME, "layout of %zu parameters disagrees with the schedule's %g", S->N + S->NX,
                       S->sched.params);
    S->bucket = (size_t)llround(S->sched.bucket_params);
    const int pa = S->plan.pa && S->mp > 1;
    S->ck_len = pa ? zp_shard_piece(S->BT * S->C, S->mp) : S->BT * S->C;
    if (S->NX > 0)
        ZP_TRY(zp_tensors_units_exp(&S->m, &S->plan, S->pr, S->bucket, S->edr, &S->xunits));
    return zp_tensors_units(&S->m, &S->plan, S->pr, S->bucket, S->dr, &S->units);
}

static zp_status setup_op(void *ctx, const zp_op *o)
{
    return x_alloc(ctx, o);
}

zp_status zp_exec_open(const zp_exec_config *c, zp_comm *world, zp_exec_session **out)
{
    *out = NULL;
    const int nranks = zp_comm_size(world);
    ZP_TRY(zp_exec_config_check(c, nranks));
    const zp_kernels_backend *be;
    ZP_TRY(zp_kernels_backend_get(c->backend, &be));
    ZP_TRY(be->init());
    const zp_nn_ops *nn;
    ZP_TRY(zp_nn_ops_get(be->name, &nn));
    zp_exec_session *S = calloc(1, sizeof *S);
    if (!S)
        return ZP_FAIL(ZP_ENOMEM, "out of memory");
    S->cfg = *c;
    S->m = c->model;
    S->plan = c->plan;
    S->plan.param_bytes = 4.0; /* fp32 on both backends */
    S->plan.k_optimizer = 8.0; /* Adam's m and v in fp32; the fp32 parameters are the master copy */
    S->plan.impl = ZP_IMPL_EXEC;
    S->be = be;
    S->nn = nn;
    S->mem.be = be;
    S->world = world;
    S->rank = zp_comm_rank(world);
    S->nranks = nranks;
    S->mp = (int)c->plan.mp;
    S->pp = c->plan.pp > 1 ? (int)c->plan.pp : 1;
    S->dp = nranks / S->mp / S->pp;
    S->plan.dp = S->dp;
    /* this rank's place in each group, by the dimension table's placement (TP innermost, then DP, the
     * pipeline outermost: vocab/zp_dims.h) */
    S->mr = (int)zp_dims_coord(S->plan.deg, S->rank, ZP_DIM_TP);
    S->dr = (int)zp_dims_coord(S->plan.deg, S->rank, ZP_DIM_DP);
    S->pr = (int)zp_dims_coord(S->plan.deg, S->rank, ZP_DIM_PP);
    S->cp = S->plan.cp > 1 ? (int)S->plan.cp : 1;
    S->cr = (int)zp_dims_coord(S->plan.deg, S->rank, ZP_DIM_CP); /* dr % cp: CP inside DP */
    const int pstride = (int)zp_dims_stride(S->plan.deg, ZP_DIM_PP); /* the next stage's rank is this far */
    S->next_rank = S->pr + 1 < S->pp ? S->rank + pstride : -1;
    S->prev_rank = S->pr > 0 ? S->rank - pstride : -1;
    S->tok_micro = -1;
    zp_status st = zp_tensors_shape_get(&S->m, &S->plan, &S->sh);
    S->ep = S->sh.moe ? (int)S->sh.ep : 1;
    S->er = S->dr % S->ep;
    S->edp = S->dp / S->ep;
    S->edr = S->dr / S->ep;
    if (st == ZP_OK)
        st = zp_tensors_stage_get(&S->m, &S->plan, S->pr, &S->xs);
    if (st == ZP_OK)
        st = split_comms(S);
    if (st == ZP_OK)
        st = zp_schedule_build_stage(&S->m, &S->plan, S->pr, &S->sched);
    if (st == ZP_OK)
        st = layout(S);
    for (int b = 0; st == ZP_OK && b < ZP_NBUF; b++)
        if (!(S->slot[b] = calloc(slots_of(S, (zp_buf)b), sizeof *S->slot[b])))
            st = ZP_FAIL(ZP_ENOMEM, "out of memory");
    /* every tensor the schedule holds from the start, then their first values */
    for (int i = 0; st == ZP_OK && i < S->sched.nsetup; i++)
        st = setup_op(S, &S->sched.setup[i]);
    if (st == ZP_OK)
        st = init_params(S);
    if (st == ZP_OK) {
        S->tok = calloc(S->GA * S->B * (S->T + 1), sizeof *S->tok);
        S->tok_h = calloc(2 * S->BT, sizeof *S->tok_h);
        if (!S->tok || !S->tok_h)
            st = ZP_FAIL(ZP_ENOMEM, "out of memory");
    }
    /* the micro-batch's token ids on the backend (2 BT ints, outside the categories: not a tensor of the
     * memory model) */
    if (st == ZP_OK)
        st = S->be->alloc(2 * S->BT * sizeof *S->tok_d, (void **)&S->tok_d);
    if (st == ZP_OK && S->sh.moe)
        st = zp_exec_moe_open(S);
    if (st == ZP_OK)
        st = zp_exec_cp_open(S);
    if (st == ZP_OK && S->pp > 1) /* a received slice, outside the categories as the token ids */
        st = S->be->alloc(S->BT * S->C / (size_t)S->mp * sizeof(float), (void **)&S->pp_slice);
    if (st == ZP_OK)
        *out = S;
    else
        zp_exec_close(S);
    return st;
}

void zp_exec_close(zp_exec_session *S)
{
    if (!S)
        return;
    for (int b = 0; b < ZP_NBUF; b++) {
        for (size_t i = 0; S->slot[b] && i < slots_of(S, (zp_buf)b); i++)
            zp_exec_mem_free(&S->mem, S->slot[b][i]);
        free(S->slot[b]);
    }
    zp_exec_mem_release(&S->mem);
    free(S->tok);
    free(S->tok_h);
    if (S->tok_d)
        S->be->free(S->tok_d);
    if (S->pp_slice)
        S->be->free(S->pp_slice);
    zp_exec_pipe_free(S);
    zp_exec_moe_close(S);
    zp_exec_cp_close(S);
    zp_comm_free(S->embc);
    zp_comm_free(S->epc);
    zp_comm_free(S->edpc);
    zp_units_free(&S->xunits);
    zp_schedule_free(&S->sched);
    zp_units_free(&S->units);
    zp_comm_free(S->mpc);
    zp_comm_free(S->dpc);
    free(S);
}
