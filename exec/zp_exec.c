/* zp_exec.c — the executor: one rank's model state, the GPT layers on the kernels/ backend, and the
 * interpreter of sim/'s step schedule.
 *
 * The schedule is interpreted cooperatively on one thread: the compute stream runs in order; after
 * every compute operation the other streams (comm, pcie, cpu) run every operation whose channel
 * waits are satisfied, as a GPU's streams would start work as soon as its events fire. Every rank
 * runs the same deterministic interpreter over the same schedule, so the collectives of each
 * communicator are issued in the same order everywhere. A schedule whose waits cannot all be
 * satisfied is reported as an error: the interpreter never hangs on its own account.
 *
 * What each operation does comes from its name, phase and layer (zp_op): "qkv" in the forward of
 * layer 3 is the QKV GEMM of block 3, "mp_allreduce" all-reduces over the MP group the partial sums
 * the previous row-parallel GEMM produced, "grad_reduce_scatter" reduces the next gradient bucket,
 * "param_allgather" with item j gathers parameter group j (stage 3) or the next updated bucket
 * (stages 1-2). With ZeRO-Offload the pcie stream's "grad_d2h" copies the next reduced bucket's
 * partition to the host, the cpu stream's "cpu_adam" runs the cpu backend's Adam on the host partition
 * and "param_h2d" brings the fp16 result back (see zp_exec.h).
 *
 * Tensors live in the backend's memory (host on cpu, device on cuda) and are touched only through the
 * backend (kernels, zero, copies) and its layer kernels (zp_nn_ops): the host holds the token ids of
 * the step, the schedule's state and, with offload, the optimizer partition.
 *
 * Layout of one MP rank's parameters (flat, fp32): group 0 = [wte (Vl, C), wpe (T, C), lnf_w (C),
 * lnf_b (C)], then group 1+l = block l = [ln1_w, ln1_b (C), qkv_w (3Cq, C), qkv_b (3Cq), proj_w (C, Cq),
 * proj_b (C), ln2_w, ln2_b (C), fc_w (Fl, C), fc_b (Fl), fcproj_w (C, Fl), fcproj_b (C)] with
 * Cq = C/mp, Fl = F/mp, Vl = V/mp (Megatron: QKV and fc column-split, proj and fcproj row-split, the
 * vocabulary split across the MP ranks, LayerNorms, row-parallel biases and wpe replicated).
 * Gradient buckets are filled from the top of this layout down, in the order backward completes
 * them (the last block first, the tied embedding last). */
#include "zp_exec.h"
#include "zp_watchdog.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "zp_config.h"
#include "zp_exec_shard.h"
#include "zp_kernels_mpi.h"
#include "zp_nn.h"

/* ---- tracking allocator ----
 * Allocates through the backend (device memory on cuda; ZP_MEM_HOST through its alloc_host: pinned
 * host memory), counts live bytes per category (the memory model's categories; the device total
 * leaves host memory out) and keeps the blocks it is given back in a small cache for reuse of the
 * same size, as PyTorch's caching allocator does on a GPU: stage 3 gathers and frees a parameter
 * group per block twice a step, and handing those to the C library each time cost page faults on
 * every reuse (16% of a stage-3 step on the CPU, measured with perf), work the real system never does
 * and the schedule does not model. The bookkeeping stays on the host (device memory cannot carry a
 * header the host reads): a table of live blocks, searched from the newest. */

typedef struct {
    void *p;
    size_t bytes; /* requested */
    size_t cap;   /* allocated, bytes (multiple of 64) */
    int cat;
} mem_blk;

enum { MEM_CACHE = 16 };

typedef struct {
    const zp_kernels_backend *be;
    double cur[ZP_MEM_NCAT], peak[ZP_MEM_NCAT], cur_total, peak_total; /* total: device categories only */
    mem_blk *live;
    size_t nlive, cap_live;
    mem_blk cache[MEM_CACHE]; /* freed blocks kept for reuse (not counted as live); p == NULL: empty */
} mem_track;

static int mem_is_host(int cat) { return cat == ZP_MEM_HOST; }

static void mem_release_blk(const mem_track *t, mem_blk *b)
{
    if (mem_is_host(b->cat))
        t->be->free_host(b->p);
    else
        t->be->free(b->p);
    b->p = NULL;
}

/* A block of `bytes` from the tracker; zeroed when `zero` (otherwise the caller writes all of it). */
static void *mem_alloc_bytes(mem_track *t, zp_mem_cat cat, size_t bytes, int zero)
{
    const size_t cap = ((bytes + 63) / 64) * 64 + 64;
    const int host = mem_is_host((int)cat);
    mem_blk b = {NULL, bytes, cap, (int)cat};
    for (int i = 0; i < MEM_CACHE && !b.p; i++)
        if (t->cache[i].p && t->cache[i].cap == cap && mem_is_host(t->cache[i].cat) == host) {
            b.p = t->cache[i].p;
            t->cache[i].p = NULL;
        }
    if (!b.p && (host ? t->be->alloc_host(cap, &b.p) : t->be->alloc(cap, &b.p)) != ZP_OK)
        return NULL;
    if (t->nlive == t->cap_live) {
        size_t n = t->cap_live ? 2 * t->cap_live : 64;
        mem_blk *nl = realloc(t->live, n * sizeof *nl);
        if (!nl) {
            mem_release_blk(t, &b);
            return NULL;
        }
        t->live = nl;
        t->cap_live = n;
    }
    if (zero && host)
        memset(b.p, 0, bytes);
    else if (zero && t->be->zero(b.p, bytes) != ZP_OK) {
        mem_release_blk(t, &b);
        return NULL;
    }
    t->live[t->nlive++] = b;
    t->cur[cat] += (double)bytes;
    if (t->cur[cat] > t->peak[cat])
        t->peak[cat] = t->cur[cat];
    if (!host) {
        t->cur_total += (double)bytes;
        if (t->cur_total > t->peak_total)
            t->peak_total = t->cur_total;
    }
    return b.p;
}

static float *mem_alloc_z(mem_track *t, zp_mem_cat cat, size_t nfloats, int zero)
{
    return mem_alloc_bytes(t, cat, nfloats * sizeof(float), zero);
}

static float *mem_alloc(mem_track *t, zp_mem_cat cat, size_t nfloats) { return mem_alloc_z(t, cat, nfloats, 1); }

static void mem_free(mem_track *t, void *p)
{
    if (!p)
        return;
    size_t i = t->nlive;
    while (i > 0 && t->live[i - 1].p != p)
        i--;
    if (i == 0)
        return; /* not the tracker's: nothing to do (never happens for the executor's own pointers) */
    mem_blk b = t->live[i - 1];
    t->live[i - 1] = t->live[--t->nlive];
    t->cur[b.cat] -= (double)b.bytes;
    if (!mem_is_host(b.cat))
        t->cur_total -= (double)b.bytes;
    for (int k = 0; k < MEM_CACHE; k++)
        if (!t->cache[k].p) {
            t->cache[k] = b;
            return;
        }
    mem_release_blk(t, &b);
}

/* Returns the cached blocks (and any still live) to the backend. */
static void mem_release(mem_track *t)
{
    for (int i = 0; i < MEM_CACHE; i++)
        if (t->cache[i].p)
            mem_release_blk(t, &t->cache[i]);
    for (size_t i = 0; i < t->nlive; i++)
        mem_release_blk(t, &t->live[i]);
    free(t->live);
    t->live = NULL;
    t->nlive = t->cap_live = 0;
}

const char *zp_mem_cat_name(zp_mem_cat c)
{
    static const char *const n[] = {"params", "grads", "optimizer", "activations", "buffers", "host"};
    return (unsigned)c < ZP_MEM_NCAT ? n[c] : "?";
}

/* ---- tensors of the layout ---- */

enum { E_WTE, E_WPE, E_LNFW, E_LNFB, E_N };
enum { B_LN1W, B_LN1B, B_QKVW, B_QKVB, B_PROJW, B_PROJB, B_LN2W, B_LN2B, B_FCW, B_FCB, B_FCPW, B_FCPB, B_N };

/* One layer's stored activations (BT = B*T tokens of the micro-batch, local widths). */
typedef struct {
    float *ln1, *ln1_mean, *ln1_rstd; /* (BT, C), (BT), (BT) */
    float *qkv;                       /* (BT, 3Cq): Q | K | V of this rank's heads */
    float *att;                       /* (B, NHl, T, T) causal softmax probabilities */
    float *atty;                      /* (BT, Cq) attention output before the projection */
    float *x1;                        /* (BT, C) residual after attention */
    float *ln2, *ln2_mean, *ln2_rstd; /* (BT, C), (BT), (BT) */
    float *fch, *fchg;                /* (BT, Fl) MLP pre- and post-GeLU */
} layer_acts;

typedef struct {
    double compute, mp_comm, dp_comm, optimizer, phase[ZP_NPHASES];
} times;

struct zp_exec_session {
    zp_exec_config cfg;
    zp_model m;
    zp_plan plan;
    const zp_kernels_backend *be;
    const zp_nn_ops *nn;              /* the layer kernels of the same backend */
    zp_comm *world, *mpc, *dpc;
    int rank, nranks, mr, dr, mp, dp;

    size_t L, C, NH, T, V, F, Cq, Fl, Vl, NHl, hd, B, BT, GA;
    long v0;                          /* first vocabulary row of this MP rank */
    size_t esz, bsz, N;               /* group 0 size, block size, total (flat) */
    size_t e_off[E_N + 1], b_off[B_N + 1];

    zp_schedule sched;
    int *sidx[ZP_NSTREAMS], scount[ZP_NSTREAMS];
    zp_units units;
    size_t bucket;                    /* elements per gradient bucket */

    mem_track mem;
    float *params;                    /* (N) stages 0-2 */
    float *pshard;                    /* (shard_size) stage 3 */
    float *grads;                     /* (N) stages 0-1 */
    float *gshard;                    /* (shard_size) stages 2-3: this rank's reduced gradients */
    float *gwork;                     /* (N + dp) stages 2-3: the gradient bucket backward writes into */
    float *opt_m, *opt_v;             /* Adam moments of this rank's optimizer partition (host with offload) */
    size_t opt_n;
    float *h_master;                  /* offload: (shard_size) host fp32 master parameters of the partition */
    float *h_grad;                    /* offload: (shard_size) host fp32 reduced gradient partition */
    uint16_t *h_half;                 /* offload: (shard_size) host fp16 copy of the updated partition */
    float *tmp;                       /* (max piece) one rank's piece, stages 1-3 */
    float *gbuf;                      /* (dp * max piece) stages 1-2: a gathered bucket */
    float **gathered;                 /* [L + 2] stage 3: gathered groups (item index), NULL when freed */
    int in_use;                       /* stage 3: the group compute is using, -1 none */
    float *cur_params;                /* parameters of the group in use */

    layer_acts *acts;                 /* L sets without checkpointing, 1 with */
    float **res;                      /* without checkpointing: res[l] (BT, C) input of block l, res[L] = xL */
    float *resid;                     /* with checkpointing: the residual stream (BT, C) */
    float *ck_region;                 /* with checkpointing: L checkpoints (MD: one contiguous region) */
    float **ck;                       /* [L] block inputs (BT, C), or this rank's Pa partition */
    size_t ck_len;                    /* floats per checkpoint stored */
    float *xin_work;                  /* Pa: gathered checkpoint (mp * piece) */
    float *proj;                      /* (BT, C) partial sums of the row-parallel GEMMs; recompute output */
    float *lnf, *lnf_mean, *lnf_rstd; /* (BT, C), (BT), (BT) */
    float *logits;                    /* (BT, Vl), then their gradient in place */
    float *xmx, *xse, *xlt;           /* (BT) cross-entropy statistics over the full vocabulary */
    float *dres, *dln, *dqkv, *datty, *datt, *dfch; /* backward working tensors */
    int *tok;                         /* (GA, B*(T+1)) host: this DP rank's token sequences of the step */
    int *tok_h, *tok_d;               /* (2 BT) inputs | targets of one micro-batch: host staging, backend */
    int tok_micro;                    /* micro-batch whose tokens tok_d holds, -1 none */

    /* per step */
    double loss_sum;
    float *pending;                   /* partial sums the next mp_allreduce reduces */
    size_t pending_n;
    int bucket_k, gather_k, d2h_k;
    times t;
    int step;
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- configuration ---- */

void zp_exec_config_default(zp_exec_config *c)
{
    memset(c, 0, sizeof *c);
    zp_plan_default(&c->plan, 1);
    c->plan.checkpoint = 0;
    c->plan.overlap_comm = 0;
    c->plan.param_bytes = 4.0;
    c->plan.k_optimizer = 8.0;
    c->steps = 3;
    c->seed = 1;
    c->lr = 1e-3;
    c->backend = "cpu";
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
    if (m->heads % p->mp != 0)
        return ZP_FAIL(ZP_EINVAL, "--mp %lld does not divide the %lld attention heads of %s", (long long)p->mp,
                       (long long)m->heads, m->name);
    if (m->vocab % p->mp != 0 || m->ffn % p->mp != 0)
        return ZP_FAIL(ZP_EINVAL, "--mp %lld must divide the vocabulary (%lld) and the MLP width (%lld)",
                       (long long)p->mp, (long long)m->vocab, (long long)m->ffn);
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
    if ((p->pa) && !p->checkpoint)
        return ZP_FAIL(ZP_EINVAL, "--pa partitions activation checkpoints: it needs --checkpoint-activations");
    if (!(c->lr > 0) || !isfinite(c->lr))
        return ZP_FAIL(ZP_EINVAL, "--lr: must be positive");
    if (!c->backend || (strcmp(c->backend, "cpu") != 0 && strcmp(c->backend, "cuda") != 0))
        return ZP_FAIL(ZP_EINVAL, "--backend: '%s' is not a backend (cpu or cuda)", c->backend ? c->backend : "");
    if (p->offload == ZP_OFFLOAD_PARAMS)
        return ZP_FAIL(ZP_EINVAL, "--offload params is not executed (only optimizer offload)");
    zp_plan q = *p;
    q.dp = ranks / p->mp;
    ZP_TRY(zp_plan_validate(&q));
    /* the flat layout is indexed with size_t and BLAS takes int dimensions */
    double big = (double)m->vocab * (double)m->hidden + 12.0 * (double)m->hidden * (double)m->hidden;
    double act = (double)p->micro_batch * (double)m->seq * (double)(m->ffn > m->vocab ? m->ffn : m->vocab);
    if (big > 2e9 || act > 2e9 || (double)p->micro_batch * m->heads * m->seq * m->seq > 2e9)
        return ZP_FAIL(ZP_ERANGE, "model %s is too large for the executor on this host", m->name);
    return ZP_OK;
}

zp_status zp_exec_group_params(const zp_model *m, int mp, double *items)
{
    if (mp < 1 || m->heads % mp || m->vocab % mp || m->ffn % mp)
        return ZP_FAIL(ZP_EINVAL, "mp %d does not split the model", mp);
    double C = (double)m->hidden, t = mp, F = (double)m->ffn;
    double emb = (double)m->vocab / t * C + (double)m->seq * C + 2 * C;
    double blk = 4 * C + 3 * C / t * C + 3 * C / t + C * C / t + C + F / t * C + F / t + C * F / t + C;
    items[0] = emb;
    for (int64_t l = 1; l <= m->layers; l++)
        items[l] = blk;
    items[m->layers + 1] = emb; /* the LM head gathers group 0 again (tied wte, final LayerNorm) */
    return ZP_OK;
}

/* ---- deterministic values from (seed, what, index): splitmix64 ---- */

static uint64_t mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

static double unif(uint64_t h) { return ((double)(h >> 11) + 0.5) * (1.0 / 9007199254740992.0); }

/* Standard normal of a global tensor element (Box-Muller on two hashed uniforms). */
static double normal_at(uint64_t seed, uint64_t tensor, uint64_t idx)
{
    uint64_t h = mix64(seed ^ mix64(tensor * 0x100000001b3ull ^ mix64(idx)));
    double u1 = unif(h), u2 = unif(mix64(h));
    return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}

/* Value of element (r, c) of this MP rank's tensor `kind` of group `item` (0: embedding group):
 * the GLOBAL tensor's element, so any split and any shard initialise the same model. */
static float init_value(const zp_exec_session *S, int item, int kind, size_t r, size_t c)
{
    const size_t C = S->C, Cq = S->Cq, Fl = S->Fl, mr = (size_t)S->mr;
    const uint64_t tid = (uint64_t)item * 16u + (uint64_t)kind;
    double std = 0.02, base = 0.0;
    size_t g;
    if (item == 0) {
        switch (kind) {
        case E_WTE: g = ((size_t)S->v0 + r) * C + c; break;
        case E_WPE: g = r * C + c; std = 0.01; break;
        case E_LNFW: g = c; base = 1.0; break;
        default: g = c; break; /* E_LNFB */
        }
    } else {
        const double proj_std = 0.02 / sqrt(2.0 * (double)S->L); /* GPT-2: residual projections scaled */
        switch (kind) {
        case B_LN1W: case B_LN2W: g = c; base = 1.0; break;
        case B_LN1B: case B_LN2B: case B_PROJB: case B_FCPB: g = c; std = 0.01; break;
        case B_QKVW: g = ((r / Cq) * C + mr * Cq + r % Cq) * C + c; break;
        case B_QKVB: g = (c / Cq) * C + mr * Cq + c % Cq; std = 0.01; break;
        case B_PROJW: g = r * C + mr * Cq + c; std = proj_std; break;
        case B_FCW: g = (mr * Fl + r) * C + c; break;
        case B_FCB: g = mr * Fl + c; std = 0.01; break;
        default: g = r * S->F + mr * Fl + c; std = proj_std; break; /* B_FCPW */
        }
    }
    return (float)(base + std * normal_at(S->cfg.seed, tid, g));
}

/* Columns of each tensor (rows = size / cols): vectors are one row. */
static size_t tensor_cols(const zp_exec_session *S, int item, int kind)
{
    if (item == 0)
        return kind == E_WTE || kind == E_WPE ? S->C : S->C;
    switch (kind) {
    case B_QKVW: case B_FCW: return S->C;
    case B_PROJW: return S->Cq;
    case B_FCPW: return S->Fl;
    case B_QKVB: return 3 * S->Cq;
    case B_FCB: return S->Fl;
    default: return S->C;
    }
}

/* Writes the initial values of flat elements [lo, hi) into dst. */
static void init_range(const zp_exec_session *S, size_t lo, size_t hi, float *dst)
{
    for (size_t item = 0; item <= S->L; item++) {
        size_t base = item == 0 ? 0 : S->esz + (item - 1) * S->bsz;
        const size_t *off = item == 0 ? S->e_off : S->b_off;
        int nk = item == 0 ? E_N : B_N;
        for (int k = 0; k < nk; k++) {
            size_t a = base + off[k], b = base + off[k + 1];
            size_t x = a > lo ? a : lo, y = b < hi ? b : hi;
            size_t cols = tensor_cols(S, (int)item, k);
            for (size_t i = x; i < y; i++) {
                size_t e = i - a;
                dst[i - lo] = init_value(S, (int)(item == 0 ? 0 : item), k, e / cols, e % cols);
            }
        }
    }
}

/* Writes the initial values of flat elements [lo, hi) into dst in the backend's memory, through a
 * host staging buffer of 16K floats. */
static zp_status init_range_dev(const zp_exec_session *S, size_t lo, size_t hi, float *dst)
{
    enum { CHUNK = 16384 };
    float *h = malloc(CHUNK * sizeof *h);
    if (!h)
        return ZP_FAIL(ZP_ENOMEM, "out of memory");
    zp_status st = ZP_OK;
    for (size_t a = lo; a < hi && st == ZP_OK; a += CHUNK) {
        size_t b = hi - a < CHUNK ? hi : a + CHUNK;
        init_range(S, a, b, h);
        st = S->be->copy_to_device(dst + (a - lo), h, (b - a) * sizeof *h);
    }
    free(h);
    return st;
}

/* Tokens of global sequence g of step `step`: a noisy arithmetic chain t' = 7t + 1 + {0,1,2} mod V,
 * deterministic from the seed, with structure a model can learn (the loss goes down). */
static void make_tokens(const zp_exec_session *S, int step)
{
    const size_t T1 = S->T + 1;
    for (size_t u = 0; u < S->GA; u++)
        for (size_t j = 0; j < S->B; j++) {
            uint64_t g = (uint64_t)S->dr * S->B * S->GA + u * S->B + j;
            int *t = S->tok + (u * S->B + j) * T1;
            uint64_t h = mix64(S->cfg.seed * 0x9e37ull ^ mix64((uint64_t)step * 1000003ull + g));
            t[0] = (int)(h % S->V);
            for (size_t p = 1; p < T1; p++) {
                h = mix64(h);
                t[p] = (int)(((uint64_t)t[p - 1] * 7u + 1u + h % 3u) % S->V);
            }
        }
}

/* ---- backend helpers ---- */

static zp_status gemm(const zp_exec_session *S, int ta, int tb, size_t m, size_t n, size_t k, float beta,
                      const float *a, size_t lda, const float *b, size_t ldb, float *c, size_t ldc)
{
    zp_gemm_args g = {.trans_a = ta, .trans_b = tb, .m = (int)m, .n = (int)n, .k = (int)k, .alpha = 1.0f,
                      .beta = beta, .a = a, .lda = (int)lda, .b = b, .ldb = (int)ldb, .c = c, .ldc = (int)ldc,
                      .in_dtype = ZP_DT_F32};
    return S->be->gemm(&g);
}

static zp_status mp_allreduce(zp_exec_session *S, float *x, size_t n, zp_redop op)
{
    if (S->mp == 1)
        return ZP_OK;
    return S->be->allreduce(S->mpc, x, x, n, ZP_DT_F32, op);
}

/* ---- parameter and gradient pointers ---- */

static size_t item_lo(const zp_exec_session *S, int item)
{
    if (item == 0 || item == (int)S->L + 1)
        return 0;
    return S->esz + (size_t)(item - 1) * S->bsz;
}

static size_t item_len(const zp_exec_session *S, int item)
{
    return (item == 0 || item == (int)S->L + 1) ? S->esz : S->bsz;
}

/* Parameter tensor `kind` of the group in use. */
static const float *W(const zp_exec_session *S, int block, int kind)
{
    return S->cur_params + (block ? S->b_off[kind] : S->e_off[kind]);
}

/* Gradient of tensor `kind` of group `item` (0 = embedding, 1 + l = block l). */
static float *G(const zp_exec_session *S, int item, int kind)
{
    float *base = S->plan.stage < 2 ? S->grads : S->gwork;
    return base + item_lo(S, item) + (item == 0 ? S->e_off[kind] : S->b_off[kind]);
}

/* Makes group `item` the one compute uses (stage 3: frees the group used before). */
static zp_status use_item(zp_exec_session *S, int item)
{
    if (S->plan.stage < 3) {
        if (item >= 0)
            S->cur_params = S->params + item_lo(S, item);
        return ZP_OK;
    }
    if (item == S->in_use && item >= 0) { /* (re-gathered meanwhile: follow the new buffer) */
        S->cur_params = S->gathered[item];
        return S->cur_params ? ZP_OK : ZP_FAIL(ZP_ERUNTIME, "schedule: group %d used after it was freed", item);
    }
    if (S->in_use >= 0) {
        mem_free(&S->mem, S->gathered[S->in_use]);
        S->gathered[S->in_use] = NULL;
    }
    S->in_use = item;
    if (item < 0)
        return ZP_OK;
    if (!S->gathered[item])
        return ZP_FAIL(ZP_ERUNTIME, "schedule: parameter group %d is used before it is gathered", item);
    S->cur_params = S->gathered[item];
    return ZP_OK;
}

/* ---- the layers ---- */

/* Where block l reads its input and writes its output in this phase. */
static void block_io(zp_exec_session *S, int l, zp_phase ph, float **xin, float **xout, layer_acts **A)
{
    if (!S->plan.checkpoint) {
        *xin = S->res[l];
        *xout = S->res[l + 1];
        *A = &S->acts[l];
        return;
    }
    *A = &S->acts[0];
    if (ph == ZP_PHASE_FORWARD) {
        *xin = S->resid;
        *xout = S->resid;
    } else {
        *xin = (S->plan.pa && S->mp > 1) ? S->xin_work : S->ck[l];
        *xout = S->proj; /* the recomputed block output is not needed: written over the scratch */
    }
}

static zp_status attn_gemms_fwd(zp_exec_session *S, layer_acts *A, int scores)
{
    const size_t T = S->T, hd = S->hd, ld = 3 * S->Cq;
    for (size_t b = 0; b < S->B; b++)
        for (size_t h = 0; h < S->NHl; h++) {
            const float *q = A->qkv + b * T * ld + h * hd, *k = q + S->Cq, *v = q + 2 * S->Cq;
            float *att = A->att + (b * S->NHl + h) * T * T;
            if (scores) /* att (T, T) = Q (T, hd) . K^T */
                ZP_TRY(gemm(S, 0, 1, T, T, hd, 0.0f, q, ld, k, ld, att, T));
            else /* atty (T, hd) = att (T, T) . V (T, hd) */
                ZP_TRY(gemm(S, 0, 0, T, hd, T, 0.0f, att, T, v, ld, A->atty + b * T * S->Cq + h * hd, S->Cq));
        }
    return ZP_OK;
}

static zp_status block_fwd_op(zp_exec_session *S, const zp_op *o)
{
    const int l = o->layer;
    float *xin, *xout;
    layer_acts *A;
    block_io(S, l, o->phase, &xin, &xout, &A);
    const size_t BT = S->BT, C = S->C, Cq = S->Cq, Fl = S->Fl;
    const char *n = o->name;
    if (strcmp(n, "layernorm1") == 0) {
        if (S->plan.checkpoint && o->phase == ZP_PHASE_FORWARD) {
            /* keep the block's input as its checkpoint (Pa: this MP rank's partition only) */
            size_t off = 0, sz = BT * C;
            if (S->plan.pa && S->mp > 1)
                zp_shard_range(0, BT * C, S->mp, S->mr, &off, &sz);
            ZP_TRY(S->be->copy_on_device(S->ck[l], xin + off, sz * sizeof(float)));
        }
        return S->nn->layernorm_fwd(A->ln1, A->ln1_mean, A->ln1_rstd, xin, W(S, 1, B_LN1W), W(S, 1, B_LN1B), BT, C);
    }
    if (strcmp(n, "qkv") == 0) { /* qkv (BT, 3Cq) = ln1 (BT, C) . qkv_w^T + qkv_b */
        ZP_TRY(gemm(S, 0, 1, BT, 3 * Cq, C, 0.0f, A->ln1, C, W(S, 1, B_QKVW), C, A->qkv, 3 * Cq));
        return S->nn->bias_add(A->qkv, W(S, 1, B_QKVB), BT, 3 * Cq);
    }
    if (strcmp(n, "attn_scores") == 0)
        return attn_gemms_fwd(S, A, 1);
    if (strcmp(n, "softmax_dropout") == 0) /* no dropout: p = 0 */
        return S->nn->softmax_causal_fwd(A->att, S->B * S->NHl, S->T, (float)(1.0 / sqrt((double)S->hd)));
    if (strcmp(n, "attn_context") == 0)
        return attn_gemms_fwd(S, A, 0);
    if (strcmp(n, "attn_proj") == 0) { /* proj (BT, C) = atty (BT, Cq) . proj_w^T: partial over MP ranks */
        ZP_TRY(gemm(S, 0, 1, BT, C, Cq, 0.0f, A->atty, Cq, W(S, 1, B_PROJW), Cq, S->proj, C));
        S->pending = S->proj;
        S->pending_n = BT * C;
        return ZP_OK;
    }
    if (strcmp(n, "residual_dropout_layernorm2") == 0) {
        ZP_TRY(S->nn->residual_add(A->x1, xin, S->proj, W(S, 1, B_PROJB), BT, C));
        return S->nn->layernorm_fwd(A->ln2, A->ln2_mean, A->ln2_rstd, A->x1, W(S, 1, B_LN2W), W(S, 1, B_LN2B), BT, C);
    }
    if (strcmp(n, "mlp_up") == 0) { /* fch (BT, Fl) = ln2 . fc_w^T + fc_b */
        ZP_TRY(gemm(S, 0, 1, BT, Fl, C, 0.0f, A->ln2, C, W(S, 1, B_FCW), C, A->fch, Fl));
        return S->nn->bias_add(A->fch, W(S, 1, B_FCB), BT, Fl);
    }
    if (strcmp(n, "gelu") == 0)
        return S->nn->gelu_fwd(A->fchg, A->fch, BT * Fl);
    if (strcmp(n, "mlp_down") == 0) { /* proj (BT, C) = fchg (BT, Fl) . fcproj_w^T: partial over MP ranks */
        ZP_TRY(gemm(S, 0, 1, BT, C, Fl, 0.0f, A->fchg, Fl, W(S, 1, B_FCPW), Fl, S->proj, C));
        S->pending = S->proj;
        S->pending_n = BT * C;
        return ZP_OK;
    }
    if (strcmp(n, "residual_dropout") == 0)
        return S->nn->residual_add(xout, A->x1, S->proj, W(S, 1, B_FCPB), BT, C);
    return ZP_FAIL(ZP_ERUNTIME, "schedule: unknown block operation '%s'", n);
}

static zp_status block_bwd_op(zp_exec_session *S, const zp_op *o)
{
    const int l = o->layer, it = l + 1;
    float *xin, *xout;
    layer_acts *A;
    block_io(S, l, ZP_PHASE_BACKWARD, &xin, &xout, &A);
    const size_t BT = S->BT, C = S->C, Cq = S->Cq, Fl = S->Fl, T = S->T, hd = S->hd, ld = 3 * Cq;
    const char *n = o->name;
    /* dres holds d(block output) on entry and d(block input) when layernorm1_bwd is done */
    if (strcmp(n, "residual_dropout_bwd") == 0)
        return S->nn->bias_grad(G(S, it, B_FCPB), S->dres, BT, C);
    if (strcmp(n, "mlp_down_dgrad") == 0) /* dfch (BT, Fl) = dres (BT, C) . fcproj_w (C, Fl) */
        return gemm(S, 0, 0, BT, Fl, C, 0.0f, S->dres, C, W(S, 1, B_FCPW), Fl, S->dfch, Fl);
    if (strcmp(n, "mlp_down_wgrad") == 0) /* dfcproj_w (C, Fl) += dres^T . fchg */
        return gemm(S, 1, 0, C, Fl, BT, 1.0f, S->dres, C, A->fchg, Fl, G(S, it, B_FCPW), Fl);
    if (strcmp(n, "gelu_bwd") == 0)
        return S->nn->gelu_bwd(S->dfch, A->fch, BT * Fl);
    if (strcmp(n, "mlp_up_dgrad") == 0) { /* dln (BT, C) = dfch (BT, Fl) . fc_w (Fl, C): partial */
        ZP_TRY(gemm(S, 0, 0, BT, C, Fl, 0.0f, S->dfch, Fl, W(S, 1, B_FCW), C, S->dln, C));
        S->pending = S->dln;
        S->pending_n = BT * C;
        return ZP_OK;
    }
    if (strcmp(n, "mlp_up_wgrad") == 0) { /* dfc_w (Fl, C) += dfch^T . ln2 */
        ZP_TRY(gemm(S, 1, 0, Fl, C, BT, 1.0f, S->dfch, Fl, A->ln2, C, G(S, it, B_FCW), C));
        return S->nn->bias_grad(G(S, it, B_FCB), S->dfch, BT, Fl);
    }
    if (strcmp(n, "layernorm2_bwd") == 0)
        return S->nn->layernorm_bwd(S->dres, G(S, it, B_LN2W), G(S, it, B_LN2B), S->dln, A->x1, W(S, 1, B_LN2W),
                                   A->ln2_mean, A->ln2_rstd, BT, C);
    if (strcmp(n, "attn_proj_dgrad") == 0) /* datty (BT, Cq) = dres (BT, C) . proj_w (C, Cq) */
        return gemm(S, 0, 0, BT, Cq, C, 0.0f, S->dres, C, W(S, 1, B_PROJW), Cq, S->datty, Cq);
    if (strcmp(n, "attn_proj_wgrad") == 0) { /* dproj_w (C, Cq) += dres^T . atty */
        ZP_TRY(gemm(S, 1, 0, C, Cq, BT, 1.0f, S->dres, C, A->atty, Cq, G(S, it, B_PROJW), Cq));
        return S->nn->bias_grad(G(S, it, B_PROJB), S->dres, BT, C);
    }
    int ctx_d = strcmp(n, "attn_context_dgrad") == 0, ctx_w = strcmp(n, "attn_context_wgrad") == 0;
    int sc_d = strcmp(n, "attn_scores_dgrad") == 0, sc_w = strcmp(n, "attn_scores_wgrad") == 0;
    if (ctx_d || ctx_w || sc_d || sc_w) {
        for (size_t b = 0; b < S->B; b++)
            for (size_t h = 0; h < S->NHl; h++) {
                size_t qo = b * T * ld + h * hd;
                const float *q = A->qkv + qo, *k = q + Cq, *v = q + 2 * Cq;
                float *dq = S->dqkv + qo, *dk = dq + Cq, *dv = dq + 2 * Cq;
                const float *att = A->att + (b * S->NHl + h) * T * T;
                float *datt = S->datt + (b * S->NHl + h) * T * T;
                const float *datty = S->datty + b * T * Cq + h * hd;
                if (ctx_d) /* datt (T, T) = datty (T, hd) . V^T */
                    ZP_TRY(gemm(S, 0, 1, T, T, hd, 0.0f, datty, Cq, v, ld, datt, T));
                else if (ctx_w) /* dV (T, hd) = att^T . datty */
                    ZP_TRY(gemm(S, 1, 0, T, hd, T, 0.0f, att, T, datty, Cq, dv, ld));
                else if (sc_d) /* dQ (T, hd) = dscores (T, T) . K */
                    ZP_TRY(gemm(S, 0, 0, T, hd, T, 0.0f, datt, T, k, ld, dq, ld));
                else /* dK (T, hd) = dscores^T . Q */
                    ZP_TRY(gemm(S, 1, 0, T, hd, T, 0.0f, datt, T, q, ld, dk, ld));
            }
        return ZP_OK;
    }
    if (strcmp(n, "softmax_dropout_bwd") == 0)
        return S->nn->softmax_causal_bwd(S->datt, A->att, S->B * S->NHl, T, (float)(1.0 / sqrt((double)hd)));
    if (strcmp(n, "qkv_dgrad") == 0) { /* dln (BT, C) = dqkv (BT, 3Cq) . qkv_w (3Cq, C): partial */
        ZP_TRY(gemm(S, 0, 0, BT, C, 3 * Cq, 0.0f, S->dqkv, 3 * Cq, W(S, 1, B_QKVW), C, S->dln, C));
        S->pending = S->dln;
        S->pending_n = BT * C;
        return ZP_OK;
    }
    if (strcmp(n, "qkv_wgrad") == 0) { /* dqkv_w (3Cq, C) += dqkv^T . ln1 */
        ZP_TRY(gemm(S, 1, 0, 3 * Cq, C, BT, 1.0f, S->dqkv, 3 * Cq, A->ln1, C, G(S, it, B_QKVW), C));
        return S->nn->bias_grad(G(S, it, B_QKVB), S->dqkv, BT, 3 * Cq);
    }
    if (strcmp(n, "layernorm1_bwd") == 0)
        return S->nn->layernorm_bwd(S->dres, G(S, it, B_LN1W), G(S, it, B_LN1B), S->dln, xin, W(S, 1, B_LN1W),
                                   A->ln1_mean, A->ln1_rstd, BT, C);
    return ZP_FAIL(ZP_ERUNTIME, "schedule: unknown block backward operation '%s'", n);
}

static const int *inputs(const zp_exec_session *S, int micro, size_t b)
{
    return S->tok + ((size_t)micro * S->B + b) * (S->T + 1);
}

/* Tokens (BT) and targets (BT) of a micro-batch into the backend's tok_d (inputs | targets), gathered
 * on the host and copied once per micro-batch. */
static zp_status micro_tokens(zp_exec_session *S, int micro)
{
    if (S->tok_micro == micro)
        return ZP_OK;
    int *in = S->tok_h, *tgt = S->tok_h + S->BT;
    for (size_t b = 0; b < S->B; b++) {
        const int *t = inputs(S, micro, b);
        memcpy(in + b * S->T, t, S->T * sizeof(int));
        memcpy(tgt + b * S->T, t + 1, S->T * sizeof(int));
    }
    ZP_TRY(S->be->copy_to_device(S->tok_d, S->tok_h, 2 * S->BT * sizeof(int)));
    S->tok_micro = micro;
    return ZP_OK;
}

static zp_status head_op(zp_exec_session *S, const zp_op *o)
{
    const size_t BT = S->BT, C = S->C, Vl = S->Vl;
    const char *n = o->name;
    float *x0 = S->plan.checkpoint ? S->resid : S->res[0];
    float *xL = S->plan.checkpoint ? S->resid : S->res[S->L];
    ZP_TRY(micro_tokens(S, o->micro));
    const int *in = S->tok_d, *tgt = S->tok_d + BT;
    if (strcmp(n, "embedding") == 0) {
        /* vocabulary-parallel: rows of other MP ranks give 0; wpe added once (MP rank 0) */
        ZP_TRY(S->nn->embed_fwd(x0, in, BT, C, W(S, 0, E_WTE), S->v0, Vl, S->mr == 0 ? W(S, 0, E_WPE) : NULL, S->T));
        S->pending = x0;
        S->pending_n = BT * C;
        return ZP_OK;
    }
    if (strcmp(n, "final_layernorm") == 0)
        return S->nn->layernorm_fwd(S->lnf, S->lnf_mean, S->lnf_rstd, xL, W(S, 0, E_LNFW), W(S, 0, E_LNFB), BT, C);
    if (strcmp(n, "lm_head") == 0) /* logits (BT, Vl) = lnf (BT, C) . wte^T (tied) */
        return gemm(S, 0, 1, BT, Vl, C, 0.0f, S->lnf, C, W(S, 0, E_WTE), C, S->logits, Vl);
    if (strcmp(n, "softmax_cross_entropy") == 0) {
        /* Megatron's vocabulary-parallel cross-entropy: three reductions of BT values over the MP group */
        ZP_TRY(S->nn->xent_rowmax(S->xmx, S->logits, BT, Vl));
        double t0 = now_s();
        ZP_TRY(mp_allreduce(S, S->xmx, BT, ZP_OP_MAX));
        S->t.mp_comm += now_s() - t0;
        ZP_TRY(S->nn->xent_sumexp(S->xse, S->logits, S->xmx, BT, Vl));
        ZP_TRY(S->nn->xent_pick(S->xlt, S->logits, tgt, S->v0, BT, Vl));
        t0 = now_s();
        ZP_TRY(mp_allreduce(S, S->xse, BT, ZP_OP_SUM));
        ZP_TRY(mp_allreduce(S, S->xlt, BT, ZP_OP_SUM));
        S->t.mp_comm += now_s() - t0;
        double sum = 0;
        ZP_TRY(S->nn->xent_loss_sum(S->xmx, S->xse, S->xlt, BT, &sum));
        S->loss_sum += sum;
        return ZP_OK;
    }
    if (strcmp(n, "softmax_cross_entropy_bwd") == 0) {
        /* a new micro-batch's backward: the gradient bucket starts empty */
        S->bucket_k = 0;
        if (S->plan.stage >= 2)
            ZP_TRY(S->be->zero(S->gwork, S->N * sizeof(float)));
        double tokens = (double)S->BT * (double)S->GA * (double)S->dp; /* mean over the global batch */
        return S->nn->xent_bwd(S->logits, S->xmx, S->xse, tgt, S->v0, BT, Vl, (float)(1.0 / tokens));
    }
    if (strcmp(n, "lm_head_dgrad") == 0) { /* dln (BT, C) = dlogits (BT, Vl) . wte (Vl, C): partial */
        ZP_TRY(gemm(S, 0, 0, BT, C, Vl, 0.0f, S->logits, Vl, W(S, 0, E_WTE), C, S->dln, C));
        S->pending = S->dln;
        S->pending_n = BT * C;
        return ZP_OK;
    }
    if (strcmp(n, "lm_head_wgrad") == 0) /* dwte (Vl, C) += dlogits^T . lnf */
        return gemm(S, 1, 0, Vl, C, BT, 1.0f, S->logits, Vl, S->lnf, C, G(S, 0, E_WTE), C);
    if (strcmp(n, "final_layernorm_bwd") == 0) {
        ZP_TRY(S->be->zero(S->dres, BT * C * sizeof(float)));
        return S->nn->layernorm_bwd(S->dres, G(S, 0, E_LNFW), G(S, 0, E_LNFB), S->dln, xL, W(S, 0, E_LNFW),
                                   S->lnf_mean, S->lnf_rstd, BT, C);
    }
    if (strcmp(n, "embedding_bwd") == 0) /* wpe is replicated: every MP rank gets the same gradient */
        return S->nn->embed_bwd(G(S, 0, E_WTE), G(S, 0, E_WPE), in, S->dres, BT, C, S->v0, Vl, S->T);
    return ZP_FAIL(ZP_ERUNTIME, "schedule: unknown operation '%s'", n);
}

/* ---- ZeRO collectives and the optimizer ---- */

/* The next gradient bucket of this micro-batch: [N - (k+1) bucket, N - k bucket), checked against the
 * schedule's size. */
static zp_status bucket_bounds(const zp_exec_session *S, int k, size_t *lo, size_t *hi)
{
    size_t top = (size_t)k * S->bucket;
    if (top >= S->N)
        return ZP_FAIL(ZP_ERUNTIME, "schedule: bucket %d beyond the %zu parameters", k, S->N);
    *hi = S->N - top;
    *lo = *hi > S->bucket ? *hi - S->bucket : 0;
    return ZP_OK;
}

static zp_status bucket_range(zp_exec_session *S, const zp_op *o, int k, size_t *lo, size_t *hi)
{
    ZP_TRY(bucket_bounds(S, k, lo, hi));
    double want = o->bytes / S->plan.param_bytes;
    if (fabs(want - (double)(*hi - *lo)) > 0.5)
        return ZP_FAIL(ZP_ERUNTIME, "schedule: bucket %d of %g parameters, the layout has %zu", k, want, *hi - *lo);
    return ZP_OK;
}

static zp_status reduce_bucket(zp_exec_session *S, const zp_op *o)
{
    size_t lo, hi;
    ZP_TRY(bucket_range(S, o, S->bucket_k++, &lo, &hi));
    if (o->coll == ZP_COLL_ALLREDUCE) /* stages 0-1: every rank keeps every reduced gradient */
        return S->dp > 1 ? S->be->allreduce(S->dpc, S->grads + lo, S->grads + lo, hi - lo, ZP_DT_F32, ZP_OP_SUM)
                         : ZP_OK;
    /* stages 2-3: one reduce-scatter per unit, straight from the bucket (pieces in rank order; the
     * padding of the last piece reads the next values of gwork, which has dp elements of slack). The
     * first micro-batch of the step lands in this rank's gradient shard directly; later ones arrive in
     * tmp and are added (DeepSpeed accumulates into the partition the same way). */
    for (int i = zp_units_find(&S->units, lo); i < S->units.n && S->units.u[i].hi <= hi; i++) {
        const zp_unit *u = &S->units.u[i];
        float *g = S->gshard + u->shard_off;
        if (o->micro == 0) {
            ZP_TRY(S->be->reduce_scatter(S->dpc, S->gwork + u->lo, g, u->piece, ZP_DT_F32, ZP_OP_SUM));
            continue;
        }
        ZP_TRY(S->be->reduce_scatter(S->dpc, S->gwork + u->lo, S->tmp, u->piece, ZP_DT_F32, ZP_OP_SUM));
        ZP_TRY(S->nn->add(g, S->tmp, u->size));
    }
    return ZP_OK;
}

/* Stages 1-2: all-gather the updated parameters of the next bucket, in place: each rank's piece of a
 * unit already sits where the unit's pieces in rank order put it. The last piece's padding (fewer than
 * dp elements past the unit) receives the last rank's values of whatever follows, so this rank's own
 * values there are saved (in tmp) and put back; a unit whose padding would run past the parameters
 * goes through tmp and gbuf instead. */
static zp_status gather_bucket(zp_exec_session *S, const zp_op *o)
{
    size_t lo, hi;
    ZP_TRY(bucket_range(S, o, S->gather_k++, &lo, &hi));
    for (int i = zp_units_find(&S->units, lo); i < S->units.n && S->units.u[i].hi <= hi; i++) {
        const zp_unit *u = &S->units.u[i];
        size_t end = u->lo + u->piece * (size_t)S->dp; /* end of the padded unit */
        size_t spill = end - u->hi; /* < dp, kept in tmp */
        if (end <= S->N && spill <= S->units.max_piece) {
            float *keep = S->tmp;
            ZP_TRY(S->be->copy_on_device(keep, S->params + u->hi, spill * sizeof(float)));
            float *mine = S->params + u->lo + (size_t)S->dr * u->piece;
            ZP_TRY(S->be->allgather(S->dpc, mine, S->params + u->lo, u->piece, ZP_DT_F32));
            ZP_TRY(S->be->copy_on_device(S->params + u->hi, keep, spill * sizeof(float)));
            continue;
        }
        ZP_TRY(S->be->zero(S->tmp, u->piece * sizeof(float)));
        ZP_TRY(S->be->copy_on_device(S->tmp, S->params + u->off, u->size * sizeof(float)));
        ZP_TRY(S->be->allgather(S->dpc, S->tmp, S->gbuf, u->piece, ZP_DT_F32));
        ZP_TRY(S->be->copy_on_device(S->params + u->lo, S->gbuf, (u->hi - u->lo) * sizeof(float)));
    }
    return ZP_OK;
}

/* Stage 3: gather parameter group `item` from every rank's shard into a new buffer. */
static zp_status gather_item(zp_exec_session *S, int item)
{
    if (item < 0 || item > (int)S->L + 1)
        return ZP_FAIL(ZP_ERUNTIME, "schedule: param_allgather of group %d", item);
    /* gathered again (stage 3 gathers the LM head for the forward and again for the backward): the
     * old copy goes, compute follows the new one at its next operation (use_item) */
    mem_free(&S->mem, S->gathered[item]);
    S->gathered[item] = NULL;
    size_t lo = item_lo(S, item), len = item_len(S, item);
    /* + dp: the last unit's padding spills past the group; earlier spills are overwritten in order */
    /* not zeroed: the all-gathers below write every element, the padding spill included */
    float *g = mem_alloc_z(&S->mem, ZP_MEM_BUFFERS, len + (size_t)S->dp, 0);
    if (!g)
        return ZP_FAIL(ZP_ENOMEM, "out of memory gathering parameter group %d", item);
    S->gathered[item] = g;
    for (int i = zp_units_find(&S->units, lo); i < S->units.n && S->units.u[i].hi <= lo + len; i++) {
        const zp_unit *u = &S->units.u[i];
        ZP_TRY(S->be->allgather(S->dpc, S->pshard + u->shard_off, g + (u->lo - lo), u->piece, ZP_DT_F32));
    }
    return ZP_OK;
}

/* One fused Adam step of n elements on backend `be` (the device's, or the cpu's for the host-side
 * optimizer of ZeRO-Offload, which also writes the fp16 copy `half`; NULL for none). */
static zp_status adam_on(zp_exec_session *S, const zp_kernels_backend *be, float *p, const float *g, float *m,
                         float *v, uint16_t *half, size_t n)
{
    if (n == 0)
        return ZP_OK;
    zp_adam_hparams hp = zp_adam_hparams_default();
    hp.lr = S->cfg.lr;
    hp.step = S->step + 1;
    zp_adam_buffers buf = {.n = n, .param = p, .grad = g, .m = m, .v = v, .half = half, .half_dtype = ZP_DT_F16};
    zp_adam_result r;
    return be->adam_step(&hp, &buf, &r);
}

static zp_status adam(zp_exec_session *S, float *p, const float *g, float *m, float *v, size_t n)
{
    return adam_on(S, S->be, p, g, m, v, NULL, n);
}

static zp_status optimizer_step(zp_exec_session *S)
{
    switch (S->plan.stage) {
    case 0: return adam(S, S->params, S->grads, S->opt_m, S->opt_v, S->N);
    case 3: return adam(S, S->pshard, S->gshard, S->opt_m, S->opt_v, S->units.shard_size);
    default:
        for (int i = 0; i < S->units.n; i++) {
            const zp_unit *u = &S->units.u[i];
            const float *g = S->plan.stage == 1 ? S->grads + u->off : S->gshard + u->shard_off;
            ZP_TRY(adam(S, S->params + u->off, g, S->opt_m + u->shard_off, S->opt_v + u->shard_off, u->size));
        }
        return ZP_OK;
    }
}

/* ---- ZeRO-Offload (the schedule's pcie and cpu streams) ----
 * Host buffers are in shard layout (shard_off), like the optimizer partition without offload. */

/* "grad_d2h": this rank's partition of the next reduced bucket (last micro-batch) to the host. */
static zp_status grad_d2h(zp_exec_session *S, const zp_op *o)
{
    size_t lo = 0, hi = 0;
    ZP_TRY(bucket_bounds(S, S->d2h_k++, &lo, &hi));
    double want = o->bytes / S->plan.param_bytes * (double)S->dp; /* the op moves one rank's share */
    if (fabs(want - (double)(hi - lo)) > 0.5)
        return ZP_FAIL(ZP_ERUNTIME, "schedule: grad_d2h of %g parameters' bucket, the layout has %zu", want, hi - lo);
    if (S->cfg.test_faults & ZP_EXEC_FAULT_NO_GRAD_D2H)
        return ZP_OK;
    for (int i = zp_units_find(&S->units, lo); i < S->units.n && S->units.u[i].hi <= hi; i++) {
        const zp_unit *u = &S->units.u[i];
        /* stage 1: whole all-reduced gradients, this rank's piece at u->off; stages 2-3: the shard */
        const float *g = S->plan.stage == 1 ? S->grads + u->off : S->gshard + u->shard_off;
        ZP_TRY(S->be->copy_to_host(S->h_grad + u->shard_off, g, u->size * sizeof(float)));
    }
    return ZP_OK;
}

/* "cpu_adam": the cpu backend's fused Adam over the whole partition on the host, writing the fp16
 * copy that goes back to the device (padding elements: gradient 0, parameter 0, unchanged). */
static zp_status offload_adam(zp_exec_session *S)
{
    return adam_on(S, &zp_kernels_cpu, S->h_master, S->h_grad, S->opt_m, S->opt_v, S->h_half, S->units.shard_size);
}

/* "param_h2d": the fp16 partition back to the device, unit by unit through tmp (max_piece floats
 * hold max_piece fp16 values), expanded there into the fp32 working parameters: the shard at stage 3,
 * this rank's pieces of the flat parameters at stages 1-2 (all-gathered next). */
static zp_status params_h2d(zp_exec_session *S)
{
    uint16_t *stage = (uint16_t *)S->tmp;
    for (int i = 0; i < S->units.n; i++) {
        const zp_unit *u = &S->units.u[i];
        if (u->size == 0)
            continue;
        float *dst = S->plan.stage == 3 ? S->pshard + u->shard_off : S->params + u->off;
        ZP_TRY(S->be->copy_to_device(stage, S->h_half + u->shard_off, u->size * sizeof *stage));
        ZP_TRY(S->nn->f16_to_f32(dst, stage, u->size));
    }
    return ZP_OK;
}

/* ---- one operation ---- */

static int op_item(const zp_exec_session *S, const zp_op *o)
{
    if (o->layer >= 0)
        return o->layer + 1;
    if (strcmp(o->name, "embedding") == 0)
        return 0;
    if (strcmp(o->name, "embedding_bwd") == 0 || strcmp(o->name, "adam") == 0)
        return -1;
    return (int)S->L + 1;
}

static zp_status exec_op(zp_exec_session *S, const zp_op *o)
{
    zp_comm_watchdog_beat(o->name); /* progress for the distributed-fault watchdog (a static label) */
    double t0 = now_s();
    double *bin = NULL;
    zp_status st = ZP_OK;
    if (o->kind == ZP_OP_COMPUTE && o->ckind == ZP_CK_ADAM) {
        ZP_TRY(use_item(S, -1));
        st = optimizer_step(S);
        bin = &S->t.optimizer;
    } else if (o->kind == ZP_OP_COMPUTE) {
        ZP_TRY(use_item(S, op_item(S, o)));
        if (o->layer >= 0)
            st = o->phase == ZP_PHASE_BACKWARD ? block_bwd_op(S, o) : block_fwd_op(S, o);
        else
            st = head_op(S, o);
        bin = &S->t.compute;
    } else if (o->kind == ZP_OP_COLL && strcmp(o->name, "mp_allreduce") == 0) {
        if (!S->pending)
            return ZP_FAIL(ZP_ERUNTIME, "schedule: mp_allreduce with no partial sums before it");
        st = mp_allreduce(S, S->pending, S->pending_n, ZP_OP_SUM);
        S->pending = NULL;
        bin = &S->t.mp_comm;
    } else if (o->kind == ZP_OP_COLL && strcmp(o->name, "pa_allgather") == 0) {
        /* Pa: the MP ranks' checkpoint partitions, in rank order, are the block's input */
        st = S->be->allgather(S->mpc, S->ck[o->layer], S->xin_work, S->ck_len, ZP_DT_F32);
        bin = &S->t.mp_comm;
    } else if (o->kind == ZP_OP_COLL && (strcmp(o->name, "grad_allreduce") == 0 ||
                                         strcmp(o->name, "grad_reduce_scatter") == 0)) {
        st = reduce_bucket(S, o);
        bin = &S->t.dp_comm;
    } else if (o->kind == ZP_OP_COLL && strcmp(o->name, "param_allgather") == 0) {
        st = o->item >= 0 ? gather_item(S, o->item) : gather_bucket(S, o);
        bin = &S->t.dp_comm;
    } else if (o->kind == ZP_OP_COPY && strcmp(o->name, "grad_d2h") == 0) {
        st = grad_d2h(S, o);
        bin = &S->t.optimizer;
    } else if (o->kind == ZP_OP_CPU && o->ckind == ZP_CK_ADAM) {
        st = offload_adam(S);
        bin = &S->t.optimizer;
    } else if (o->kind == ZP_OP_COPY && strcmp(o->name, "param_h2d") == 0) {
        st = params_h2d(S);
        bin = &S->t.optimizer;
    } else {
        return ZP_FAIL(ZP_EUNSUPPORTED, "schedule: the executor has no '%s' operation on the %s stream",
                       o->name, zp_stream_name(o->stream));
    }
    double dt = now_s() - t0;
    *bin += dt;
    S->t.phase[o->phase] += dt;
    return st;
}

/* Runs the step's schedule (see the top of this file). */
/* One op of any stream: a wait takes a token (or reports *blocked when there is none), a signal adds
 * one, anything else runs. */
static zp_status step_op(zp_exec_session *S, const zp_op *o, int *tok, int *blocked)
{
    *blocked = 0;
    if (o->kind == ZP_OP_WAIT) {
        if (tok[o->channel] == 0) {
            *blocked = 1;
            return ZP_OK;
        }
        tok[o->channel]--;
        return ZP_OK;
    }
    if (o->kind == ZP_OP_SIGNAL) {
        tok[o->channel]++;
        return ZP_OK;
    }
    return exec_op(S, o);
}

static zp_status run_schedule(zp_exec_session *S)
{
    int pos[ZP_NSTREAMS] = {0}, tok[ZP_NCHANNELS] = {0};
    const zp_op *ops = S->sched.ops;
    zp_status st = ZP_OK;
    for (;;) {
        int progress = 1;
        while (progress && st == ZP_OK) {
            progress = 0;
            for (int s = 1; s < ZP_NSTREAMS && st == ZP_OK; s++)
                while (pos[s] < S->scount[s] && st == ZP_OK) {
                    int blocked;
                    st = step_op(S, &ops[S->sidx[s][pos[s]]], tok, &blocked);
                    if (blocked)
                        break;
                    pos[s]++;
                    progress = 1;
                }
        }
        if (st != ZP_OK)
            break;
        if (pos[0] < S->scount[0]) {
            const zp_op *o = &ops[S->sidx[0][pos[0]]];
            int blocked;
            st = step_op(S, o, tok, &blocked);
            if (blocked) {
                st = ZP_FAIL(ZP_ERUNTIME, "schedule deadlock: compute waits on channel %d at operation %d",
                             (int)o->channel, pos[0]);
                break;
            }
            pos[0]++;
            continue;
        }
        for (int s = 1; s < ZP_NSTREAMS; s++)
            if (pos[s] < S->scount[s]) {
                st = ZP_FAIL(ZP_ERUNTIME, "schedule deadlock: stream %s stops at operation %d of %d",
                             zp_stream_name((zp_stream)s), pos[s], S->scount[s]);
                break;
            }
        break;
    }
    if (st == ZP_OK)
        st = use_item(S, -1);
    return st;
}

/* ---- session ---- */

static zp_status alloc_state(zp_exec_session *S)
{
    mem_track *t = &S->mem;
    const size_t BT = S->BT, C = S->C, L = S->L, att = S->B * S->NHl * S->T * S->T;
    const int st3 = S->plan.stage == 3;
#define ALLOC(ptr, cat, n)                                                        \
    do {                                                                          \
        if (!((ptr) = mem_alloc(t, (cat), (n))))                                  \
            return ZP_FAIL(ZP_ENOMEM, "out of memory allocating %s", #ptr);        \
    } while (0)
    /* model states */
    if (st3) {
        ALLOC(S->pshard, ZP_MEM_PARAMS, S->units.shard_size);
        for (int i = 0; i < S->units.n; i++) /* each rank initialises only its shard (zero.Init) */
            ZP_TRY(init_range_dev(S, S->units.u[i].off, S->units.u[i].off + S->units.u[i].size,
                                  S->pshard + S->units.u[i].shard_off));
    } else {
        ALLOC(S->params, ZP_MEM_PARAMS, S->N);
        ZP_TRY(init_range_dev(S, 0, S->N, S->params));
    }
    if (S->plan.stage < 2) {
        ALLOC(S->grads, ZP_MEM_GRADS, S->N);
    } else {
        ALLOC(S->gshard, ZP_MEM_GRADS, S->units.shard_size);
        ALLOC(S->gwork, ZP_MEM_BUFFERS, S->N + (size_t)S->dp);
    }
    S->opt_n = S->plan.stage == 0 ? S->N : S->units.shard_size;
    if (S->plan.offload == ZP_OFFLOAD_OPTIMIZER) {
        /* ZeRO-Offload: the partition's master copy, moments, gradients and fp16 copy on the host; the
         * master starts as the initial values (the device starts with the same values in fp32) */
        ALLOC(S->opt_m, ZP_MEM_HOST, S->opt_n);
        ALLOC(S->opt_v, ZP_MEM_HOST, S->opt_n);
        ALLOC(S->h_master, ZP_MEM_HOST, S->opt_n);
        ALLOC(S->h_grad, ZP_MEM_HOST, S->opt_n);
        if (!(S->h_half = mem_alloc_bytes(t, ZP_MEM_HOST, S->opt_n * sizeof *S->h_half, 1)))
            return ZP_FAIL(ZP_ENOMEM, "out of memory allocating the fp16 partition");
        for (int i = 0; i < S->units.n; i++)
            init_range(S, S->units.u[i].off, S->units.u[i].off + S->units.u[i].size, S->h_master + S->units.u[i].shard_off);
    } else {
        ALLOC(S->opt_m, ZP_MEM_OPTIMIZER, S->opt_n);
        ALLOC(S->opt_v, ZP_MEM_OPTIMIZER, S->opt_n);
    }
    if (S->plan.stage >= 1)
        ALLOC(S->tmp, ZP_MEM_BUFFERS, S->units.max_piece);
    if (S->plan.stage == 1 || S->plan.stage == 2)
        ALLOC(S->gbuf, ZP_MEM_BUFFERS, S->units.max_piece * (size_t)S->dp);
    /* activations */
    size_t nsets = S->plan.checkpoint ? 1 : L;
    S->acts = calloc(nsets, sizeof *S->acts);
    S->res = calloc(L + 1, sizeof *S->res);
    S->ck = calloc(L, sizeof *S->ck);
    S->gathered = calloc(L + 2, sizeof *S->gathered);
    S->tok = calloc(S->GA * S->B * (S->T + 1), sizeof *S->tok);
    S->tok_h = calloc(2 * BT, sizeof *S->tok_h);
    if (!S->acts || !S->res || !S->ck || !S->gathered || !S->tok || !S->tok_h)
        return ZP_FAIL(ZP_ENOMEM, "out of memory");
    /* the micro-batch's token ids on the backend (2 BT ints, outside the categories: not a tensor of
     * the memory model) */
    ZP_TRY(S->be->alloc(2 * BT * sizeof *S->tok_d, (void **)&S->tok_d));
    S->tok_micro = -1;
    for (size_t i = 0; i < nsets; i++) {
        layer_acts *A = &S->acts[i];
        ALLOC(A->ln1, ZP_MEM_ACTIVATIONS, BT * C);
        ALLOC(A->ln1_mean, ZP_MEM_ACTIVATIONS, BT);
        ALLOC(A->ln1_rstd, ZP_MEM_ACTIVATIONS, BT);
        ALLOC(A->qkv, ZP_MEM_ACTIVATIONS, BT * 3 * S->Cq);
        ALLOC(A->att, ZP_MEM_ACTIVATIONS, att);
        ALLOC(A->atty, ZP_MEM_ACTIVATIONS, BT * S->Cq);
        ALLOC(A->x1, ZP_MEM_ACTIVATIONS, BT * C);
        ALLOC(A->ln2, ZP_MEM_ACTIVATIONS, BT * C);
        ALLOC(A->ln2_mean, ZP_MEM_ACTIVATIONS, BT);
        ALLOC(A->ln2_rstd, ZP_MEM_ACTIVATIONS, BT);
        ALLOC(A->fch, ZP_MEM_ACTIVATIONS, BT * S->Fl);
        ALLOC(A->fchg, ZP_MEM_ACTIVATIONS, BT * S->Fl);
    }
    if (S->plan.checkpoint) {
        ALLOC(S->resid, ZP_MEM_ACTIVATIONS, BT * C);
        int pa = S->plan.pa && S->mp > 1;
        S->ck_len = pa ? zp_shard_piece(BT * C, S->mp) : BT * C;
        if (S->plan.md) { /* MD: all checkpoints in one contiguous region */
            ALLOC(S->ck_region, ZP_MEM_ACTIVATIONS, L * S->ck_len);
            for (size_t l = 0; l < L; l++)
                S->ck[l] = S->ck_region + l * S->ck_len;
        } else {
            for (size_t l = 0; l < L; l++)
                ALLOC(S->ck[l], ZP_MEM_ACTIVATIONS, S->ck_len);
        }
        if (pa)
            ALLOC(S->xin_work, ZP_MEM_ACTIVATIONS, S->ck_len * (size_t)S->mp);
    } else {
        for (size_t l = 0; l <= L; l++)
            ALLOC(S->res[l], ZP_MEM_ACTIVATIONS, BT * C);
    }
    ALLOC(S->proj, ZP_MEM_ACTIVATIONS, BT * C);
    ALLOC(S->lnf, ZP_MEM_ACTIVATIONS, BT * C);
    ALLOC(S->lnf_mean, ZP_MEM_ACTIVATIONS, BT);
    ALLOC(S->lnf_rstd, ZP_MEM_ACTIVATIONS, BT);
    ALLOC(S->logits, ZP_MEM_ACTIVATIONS, BT * S->Vl);
    ALLOC(S->xmx, ZP_MEM_ACTIVATIONS, BT);
    ALLOC(S->xse, ZP_MEM_ACTIVATIONS, BT);
    ALLOC(S->xlt, ZP_MEM_ACTIVATIONS, BT);
    ALLOC(S->dres, ZP_MEM_ACTIVATIONS, BT * C);
    ALLOC(S->dln, ZP_MEM_ACTIVATIONS, BT * C);
    ALLOC(S->dqkv, ZP_MEM_ACTIVATIONS, BT * 3 * S->Cq);
    ALLOC(S->datty, ZP_MEM_ACTIVATIONS, BT * S->Cq);
    ALLOC(S->datt, ZP_MEM_ACTIVATIONS, att);
    ALLOC(S->dfch, ZP_MEM_ACTIVATIONS, BT * S->Fl);
#undef ALLOC
    return ZP_OK;
}

static zp_status split_comms(zp_exec_session *S)
{
#if ZP_HAVE_MPI
    MPI_Comm w = zp_comm_mpi(S->world), mpc, dpc;
    if (MPI_Comm_split(w, S->dr, S->mr, &mpc) != MPI_SUCCESS || MPI_Comm_split(w, S->mr, S->dr, &dpc) != MPI_SUCCESS)
        return ZP_FAIL(ZP_ERUNTIME, "MPI_Comm_split failed");
    zp_status st = zp_comm_from_mpi(S->be, mpc, &S->mpc);
    if (st == ZP_OK)
        st = zp_comm_from_mpi(S->be, dpc, &S->dpc);
    MPI_Comm_free(&mpc);
    MPI_Comm_free(&dpc);
    return st;
#else
    if (S->nranks != 1)
        return ZP_FAIL(ZP_EUNSUPPORTED, "this zplan was built without MPI");
    ZP_TRY(zp_comm_world(S->be, &S->mpc));
    return zp_comm_world(S->be, &S->dpc);
#endif
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
    S->be = be;
    S->nn = nn;
    S->mem.be = be;
    S->world = world;
    S->rank = zp_comm_rank(world);
    S->nranks = nranks;
    S->mp = (int)c->plan.mp;
    S->dp = nranks / S->mp;
    S->plan.dp = S->dp;
    S->mr = S->rank % S->mp;
    S->dr = S->rank / S->mp;
    S->in_use = -1;
    const zp_model *m = &S->m;
    S->L = (size_t)m->layers;
    S->C = (size_t)m->hidden;
    S->NH = (size_t)m->heads;
    S->T = (size_t)m->seq;
    S->V = (size_t)m->vocab;
    S->F = (size_t)m->ffn;
    S->Cq = S->C / (size_t)S->mp;
    S->Fl = S->F / (size_t)S->mp;
    S->Vl = S->V / (size_t)S->mp;
    S->NHl = S->NH / (size_t)S->mp;
    S->hd = S->C / S->NH;
    S->B = (size_t)c->plan.micro_batch;
    S->GA = (size_t)c->plan.grad_accum;
    S->BT = S->B * S->T;
    S->v0 = (long)((size_t)S->mr * S->Vl);
    const size_t C = S->C, Cq = S->Cq, Fl = S->Fl;
    size_t es[E_N] = {S->Vl * C, S->T * C, C, C};
    size_t bs[B_N] = {C, C, 3 * Cq * C, 3 * Cq, C * Cq, C, C, C, Fl * C, Fl, C * Fl, C};
    for (int k = 0; k < E_N; k++)
        S->e_off[k + 1] = S->e_off[k] + es[k];
    for (int k = 0; k < B_N; k++)
        S->b_off[k + 1] = S->b_off[k] + bs[k];
    S->esz = S->e_off[E_N];
    S->bsz = S->b_off[B_N];
    S->N = S->esz + S->L * S->bsz;

    zp_status st = split_comms(S);
    double *items = malloc((S->L + 2) * sizeof *items);
    if (!items)
        st = ZP_FAIL(ZP_ENOMEM, "out of memory");
    if (st == ZP_OK)
        st = zp_exec_group_params(m, S->mp, items);
    if (st == ZP_OK) {
        if (fabs((items[0] + (double)S->L * items[1]) - (double)S->N) > 0.5)
            st = ZP_FAIL(ZP_ERUNTIME, "layout of %zu parameters disagrees with the group sizes", S->N);
    }
    if (st == ZP_OK)
        st = zp_schedule_build_items(m, &S->plan, items, &S->sched);
    if (st == ZP_OK) {
        S->bucket = (size_t)llround(S->sched.bucket_params);
        /* units: cut at every group boundary and every bucket boundary (from the top) */
        size_t nb = (S->N + S->bucket - 1) / S->bucket, nc = 0;
        size_t *all = malloc((S->L + 2 + nb) * sizeof *all);
        if (!all) {
            st = ZP_FAIL(ZP_ENOMEM, "out of memory");
        } else {
            for (size_t i = 0; i <= S->L; i++)
                all[nc++] = i == 0 ? 0 : S->esz + (i - 1) * S->bsz;
            for (size_t k = 1; k < nb; k++)
                all[nc++] = S->N - k * S->bucket;
            st = zp_units_build(S->N, all, (int)nc, S->dp, S->dr, &S->units);
            free(all);
        }
    }
    free(items);
    if (st == ZP_OK) {
        for (int s = 0; s < ZP_NSTREAMS; s++) {
            S->sidx[s] = malloc(((size_t)S->sched.n + 1) * sizeof(int));
            if (!S->sidx[s]) {
                st = ZP_FAIL(ZP_ENOMEM, "out of memory");
                break;
            }
        }
        for (int i = 0; st == ZP_OK && i < S->sched.n; i++) {
            int s = S->sched.ops[i].stream;
            S->sidx[s][S->scount[s]++] = i;
        }
    }
    if (st == ZP_OK)
        st = alloc_state(S);
    if (st != ZP_OK) {
        zp_exec_close(S);
        return st;
    }
    *out = S;
    return ZP_OK;
}

static void be_free_tokens(zp_exec_session *S)
{
    if (S->tok_d)
        S->be->free(S->tok_d);
    S->tok_d = NULL;
}

void zp_exec_close(zp_exec_session *S)
{
    if (!S)
        return;
    mem_track *t = &S->mem;
    mem_free(t, S->params);
    mem_free(t, S->pshard);
    mem_free(t, S->grads);
    mem_free(t, S->gshard);
    mem_free(t, S->gwork);
    mem_free(t, S->opt_m);
    mem_free(t, S->opt_v);
    mem_free(t, S->h_master);
    mem_free(t, S->h_grad);
    mem_free(t, S->h_half);
    mem_free(t, S->tmp);
    mem_free(t, S->gbuf);
    if (S->gathered)
        for (size_t i = 0; i < S->L + 2; i++)
            mem_free(t, S->gathered[i]);
    if (S->acts) {
        size_t nsets = S->plan.checkpoint ? 1 : S->L;
        for (size_t i = 0; i < nsets; i++) {
            layer_acts *A = &S->acts[i];
            float *p[] = {A->ln1, A->ln1_mean, A->ln1_rstd, A->qkv, A->att, A->atty, A->x1, A->ln2, A->ln2_mean,
                          A->ln2_rstd, A->fch, A->fchg};
            for (size_t k = 0; k < sizeof p / sizeof p[0]; k++)
                mem_free(t, p[k]);
        }
    }
    if (S->res)
        for (size_t l = 0; l <= S->L; l++)
            mem_free(t, S->res[l]);
    if (S->ck_region)
        mem_free(t, S->ck_region);
    else if (S->ck)
        for (size_t l = 0; l < S->L; l++)
            mem_free(t, S->ck[l]);
    float *q[] = {S->resid, S->xin_work, S->proj, S->lnf, S->lnf_mean, S->lnf_rstd, S->logits, S->xmx, S->xse,
                  S->xlt, S->dres, S->dln, S->dqkv, S->datty, S->datt, S->dfch};
    for (size_t k = 0; k < sizeof q / sizeof q[0]; k++)
        mem_free(t, q[k]);
    mem_release(t);
    free(S->acts);
    free(S->res);
    free(S->ck);
    free(S->gathered);
    free(S->tok);
    free(S->tok_h);
    be_free_tokens(S);
    for (int s = 0; s < ZP_NSTREAMS; s++)
        free(S->sidx[s]);
    zp_schedule_free(&S->sched);
    zp_units_free(&S->units);
    zp_comm_free(S->mpc);
    zp_comm_free(S->dpc);
    free(S);
}

/* Zeroes the step's gradients and runs the schedule; the global mean loss in *loss. */
static zp_status step_run(zp_exec_session *S, int step, double *loss)
{
    S->step = step;
    make_tokens(S, step);
    if (S->grads)
        ZP_TRY(S->be->zero(S->grads, S->N * sizeof(float)));
    if (S->gshard)
        ZP_TRY(S->be->zero(S->gshard, S->units.shard_size * sizeof(float)));
    S->loss_sum = 0;
    S->gather_k = 0;
    S->bucket_k = 0;
    S->d2h_k = 0;
    S->tok_micro = -1; /* new tokens this step */
    S->pending = NULL;
    memset(&S->t, 0, sizeof S->t);
    ZP_TRY(run_schedule(S));
    /* every MP rank of a DP group computed the same loss: sum over the world, divide by mp */
    double l = S->loss_sum;
    ZP_TRY(zp_comm_allreduce_double(S->world, &l, ZP_OP_SUM));
    *loss = l / (double)S->mp / ((double)S->BT * (double)S->GA * (double)S->dp);
    return ZP_OK;
}

zp_status zp_exec_train_step(zp_exec_session *S, int step, double *loss) { return step_run(S, step, loss); }

zp_status zp_exec_params(zp_exec_session *S, float **params, size_t *n)
{
    if (S->plan.stage == 3)
        return ZP_FAIL(ZP_EINVAL, "stage 3 holds only a shard of the parameters");
    *params = S->params;
    *n = S->N;
    return ZP_OK;
}

zp_status zp_exec_loss_grad(zp_exec_session *S, int step, double *loss, const float **grad, size_t *n)
{
    if (S->plan.stage > 1)
        return ZP_FAIL(ZP_EINVAL, "whole gradients exist at stages 0 and 1 only");
    /* the schedule without its optimizer: interpret it on a copy that stops before "adam" */
    zp_schedule full = S->sched;
    int keep[ZP_NSTREAMS];
    for (int s = 0; s < ZP_NSTREAMS; s++)
        keep[s] = S->scount[s];
    for (int s = 0; s < ZP_NSTREAMS; s++)
        for (int i = 0; i < S->scount[s]; i++)
            if (full.ops[S->sidx[s][i]].phase == ZP_PHASE_OPTIMIZER) {
                S->scount[s] = i;
                break;
            }
    zp_status st = step_run(S, step, loss);
    for (int s = 0; s < ZP_NSTREAMS; s++)
        S->scount[s] = keep[s];
    *grad = S->grads;
    *n = S->N;
    return st;
}

void zp_exec_result_free(zp_exec_result *r)
{
    if (!r)
        return;
    free(r->step);
    r->step = NULL;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

zp_status zp_exec_run(const zp_exec_config *c, zp_comm *world, zp_exec_result *out)
{
    memset(out, 0, sizeof *out);
    zp_exec_session *S;
    ZP_TRY(zp_exec_open(c, world, &S));
    out->ranks = S->nranks;
    out->dp = S->dp;
    out->mp = S->mp;
    out->params_per_rank = (double)S->N;
    int cap = c->steps, first = c->steps >= 2 || c->min_seconds > 0 ? 1 : 0, counted = 0, k = 0;
    out->step = calloc((size_t)cap, sizeof *out->step);
    double *times = calloc((size_t)cap, sizeof *times), measured = 0;
    zp_status st = (out->step && times) ? ZP_OK : ZP_FAIL(ZP_ENOMEM, "out of memory");
    /* every rank sees the same dt (the max over ranks), so every rank stops after the same step */
    for (; st == ZP_OK && (k < c->steps || (measured < c->min_seconds && k < ZP_EXEC_MAX_STEPS)); k++) {
        if (k == cap) {
            cap *= 2;
            zp_exec_step *ns = realloc(out->step, (size_t)cap * sizeof *ns);
            if (ns)
                out->step = ns;
            double *nt = ns ? realloc(times, (size_t)cap * sizeof *nt) : NULL;
            if (!nt) {
                st = ZP_FAIL(ZP_ENOMEM, "out of memory");
                break;
            }
            times = nt;
        }
        zp_comm_watchdog_beat("a training step"); /* progress for the distributed-fault watchdog */
        st = zp_comm_barrier(world);
        double t0 = now_s(), loss = 0;
        if (st == ZP_OK)
            st = step_run(S, k, &loss);
        double dt = now_s() - t0;
        if (st == ZP_OK)
            st = zp_comm_allreduce_double(world, &dt, ZP_OP_MAX);
        out->step[k].loss = loss;
        out->step[k].time_s = dt;
        times[k] = dt;
        if (st == ZP_OK && k >= first) {
            counted++;
            measured += dt;
            out->time.compute += S->t.compute;
            out->time.mp_comm += S->t.mp_comm;
            out->time.dp_comm += S->t.dp_comm;
            out->time.optimizer += S->t.optimizer;
            for (int p = 0; p < ZP_NPHASES; p++)
                out->time.phase[p] += S->t.phase[p];
        }
    }
    out->steps = k;
    if (st == ZP_OK) {
        double inv = 1.0 / (counted ? counted : 1);
        out->time.compute *= inv;
        out->time.mp_comm *= inv;
        out->time.dp_comm *= inv;
        out->time.optimizer *= inv;
        for (int p = 0; p < ZP_NPHASES; p++)
            out->time.phase[p] *= inv;
        int n = out->steps - first;
        qsort(times + first, (size_t)n, sizeof *times, cmp_double);
        out->measured_step_s = n % 2 ? times[first + n / 2] : 0.5 * (times[first + n / 2 - 1] + times[first + n / 2]);
        out->tokens_per_s = (double)S->BT * (double)S->GA * (double)S->dp / out->measured_step_s;
        /* rank 0's breakdown goes to everyone (rank 0 prints it) */
        double *bd[] = {&out->time.compute, &out->time.mp_comm, &out->time.dp_comm, &out->time.optimizer,
                        &out->time.phase[0], &out->time.phase[1], &out->time.phase[2], &out->time.phase[3]};
        for (size_t i = 0; st == ZP_OK && i < sizeof bd / sizeof bd[0]; i++) {
            if (S->rank != 0)
                *bd[i] = 0;
            st = zp_comm_allreduce_double(world, bd[i], ZP_OP_SUM);
        }
        for (int k = 0; st == ZP_OK && k < ZP_MEM_NCAT; k++) {
            out->peak[k] = S->mem.peak[k];
            st = zp_comm_allreduce_double(world, &out->peak[k], ZP_OP_MAX);
        }
        out->peak_total = S->mem.peak_total;
        if (st == ZP_OK)
            st = zp_comm_allreduce_double(world, &out->peak_total, ZP_OP_MAX);
    }
    free(times);
    zp_exec_close(S);
    if (st != ZP_OK)
        zp_exec_result_free(out);
    return st;
}
