/* zp_calibrate.c — the measurements of `zplan calibrate` and the fits that turn them into a
 * device profile. Every rank runs every measurement in the same order (collectives need it);
 * each timed repetition starts after a barrier; statistics are medians per rank, then
 * min/avg/max across ranks (collectives keep the slowest rank's median). */
#include "zp_calibrate.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "zp_elementwise.h"
#include "zp_fit.h"
#include "zp_kernels.h"
#include "zp_nn.h"
#include "zp_probe.h"
#include "zp_quiet.h"
#include "zp_stats.h"
#include "zp_time.h"
#include "zp_timing.h"

typedef struct {
    const zp_calibrate_opts *o;
    const zp_kernels_backend *be;
    zp_comm *world;
    zp_kernels_clock clock; /* the backend's timer (clock.be: the backend being timed) */
    double done, total; /* progress units */
    float *evict;           /* NULL, or 3 x evict_n floats of the backend's memory run through before each
                               repetition (collectives only: cold_barrier) */
    size_t evict_n;
    const zp_coll_op *hot;  /* the collective being timed: its send buffer is rewritten after the eviction */
} cal;

/* Statistics of one measurement over repetitions and ranks. */
typedef struct {
    double med_avg;  /* mean over ranks of each rank's median time */
    double med_max;  /* slowest rank's median time */
    double max_med;  /* median over repetitions of the slowest rank's time in that repetition */
    double min, max; /* fastest and slowest single repetition on any rank */
} stat;

/* The barrier before each repetition of a collective, after a triad over c->evict (loads and stores through
 * twice the last-level cache) and a rewrite of the collective's send buffer: as in a training step, where the
 * op before a collective has just written what it sends (a GEMM's output, backward's gradients) and the rest of
 * the step's compute has run through the caches. Back to back, the same buffers stay in the caches and the
 * collective looks 2-6x faster than in a step: 2 cpu ranks, in place, medians of 101: 64 KB 22 us warm, 68 us
 * this way; 256 KB 69 / 111 us; 1 MB 160 (~620 in place) / 282 us; the executor's in-step 632 KB gradient
 * all-reduce, barrier first, 225-274 us against 102 warm. (A memset does not evict: glibc's large memsets
 * store around the caches.) */
typedef struct {
    cal *c;
    zp_comm *comm;
} cold_sync;

#define CAL_MAX_OPS 4 /* operations timed together (time_ops, time_loops) */
/* passes of the parts a spell of this shared VM can bias (the bandwidths, the layer kernels; nn_cal) */
#define CAL_NN_PASSES 3

static zp_status cold_barrier(void *p)
{
    const cold_sync *s = p;
    const cal *c = s->c;
    const size_t n = c->evict_n;
    ZP_TRY(c->be->stream_triad(c->evict, c->evict + n, c->evict + 2 * n, 1.0f, n));
    if (c->hot)
        ZP_TRY(c->be->stream_copy(c->hot->send, c->evict + n, c->hot->count < n ? c->hot->count : n));
    ZP_TRY(c->be->sync());
    return zp_comm_barrier(s->comm);
}

/* o's clock (the backend's) and its barrier of `comm`, after the eviction when c->evict is set (cs: its data,
 * which must outlive o's runs) */
static void timing_hooks(cal *c, zp_timing_opts *o, zp_comm *comm, cold_sync *cs)
{
    zp_kernels_timing_hooks(o, &c->clock, comm);
    *cs = (cold_sync){c, comm};
    if (c->evict)
        o->barrier = cold_barrier, o->barrier_ctx = cs;
}

static void progress(cal *c, const char *what)
{
    if (c->o->progress)
        c->o->progress(c->o->progress_arg, c->total > 0 ? c->done / c->total : 1.0, what);
}

/* Times nops operations (each `inner` calls per sample) interleaved with the harness (common/zp_timing.h): a
 * first sample of each after a barrier of every rank, warm-up, then repetitions each after a barrier of
 * `sync_comm` (every rank takes part); repetitions are cut (to >= 3) when one round is long so a measurement
 * stays within ~3 s (~1 s quick); all ranks agree on the count. Interleaved operations see the same spells of
 * this shared machine (a neighbour that halves the cores' speed for seconds), so their ratio holds when their
 * times do not. Times per call, out[nops]. */
static zp_status time_ops(cal *c, zp_comm *sync_comm, const zp_timing_op *ops, int nops, stat *out)
{
    zp_timing_opts o = {.warmup = 0, .reps = 1};
    cold_sync cs;
    timing_hooks(c, &o, c->world, &cs);
    zp_timing_result r[CAL_MAX_OPS];
    if (nops < 1 || nops > CAL_MAX_OPS)
        return ZP_FAIL(ZP_EINVAL, "calibrate: %d operations timed together (1 to %d)", nops, CAL_MAX_OPS);
    ZP_TRY(zp_timing_run_ops(&o, ops, nops, r));
    double first = 0; /* seconds of one round */
    for (int k = 0; k < nops; k++)
        first += r[k].samples[0] * (ops[k].inner > 0 ? ops[k].inner : 1);
    ZP_TRY(zp_comm_allreduce_double(c->world, &first, ZP_OP_MAX));
    int reps = c->o->reps;
    double budget = c->o->quick ? 1.0 : 3.0;
    if (first * reps > budget) {
        int n = (int)(budget / (first > 0 ? first : 1e-9));
        reps = n < 3 ? 3 : n < reps ? n : reps;
    }
    o.warmup = c->o->warmup > 1 ? c->o->warmup - 1 : 0; /* the first sample was one */
    o.reps = reps < ZP_TIMING_MAX_REPS ? reps : ZP_TIMING_MAX_REPS;
    timing_hooks(c, &o, sync_comm, &cs);
    ZP_TRY(zp_timing_run_ops(&o, ops, nops, r));
    /* a collective ends for everyone when its slowest rank is done: the slowest rank of each repetition,
     * then the median (max_med). When the ranks outnumber the cores a different rank can be the slow one
     * in each repetition (the one the scheduler left out), and each rank's own median then misses it. */
    for (int k = 0; k < nops; k++) {
        const zp_timing_result *q = &r[k];
        double worst[ZP_TIMING_MAX_REPS];
        memcpy(worst, q->samples, (size_t)q->reps * sizeof q->samples[0]);
        for (int i = 0; i < q->reps; i++)
            ZP_TRY(zp_comm_allreduce_double(c->world, &worst[i], ZP_OP_MAX));
        stat s = {q->median, q->median, zp_stats_median(worst, (size_t)q->reps), q->min, q->max};
        ZP_TRY(zp_comm_allreduce_double(c->world, &s.med_avg, ZP_OP_SUM));
        s.med_avg /= zp_comm_size(c->world);
        ZP_TRY(zp_comm_allreduce_double(c->world, &s.med_max, ZP_OP_MAX));
        ZP_TRY(zp_comm_allreduce_double(c->world, &s.min, ZP_OP_MIN));
        ZP_TRY(zp_comm_allreduce_double(c->world, &s.max, ZP_OP_MAX));
        out[k] = s;
    }
    return ZP_OK;
}

/* One operation, `inner` calls of fn per sample: time_ops. */
static zp_status time_op(cal *c, zp_comm *sync_comm, zp_timing_fn fn, void *arg, int inner, stat *out)
{
    const zp_timing_op op = {fn, arg, inner};
    return time_ops(c, sync_comm, &op, 1, out);
}

static double spread_of(const stat *s, double med) { return med > 0 ? (s->max - s->min) / med : 0; }

/* ---- short kernels: timed in loops ----
 * A kernel of a few microseconds to a millisecond is repeated so that one timed sample lasts
 * >= 10 ms (30 ms full): the per-call time then includes the call overheads the executor pays on
 * every call, and, when the ranks outnumber the cores, the time slices the ranks share (a single
 * call often runs inside one slice and would look as fast as on an idle machine). Every rank runs
 * the loop at once, as every rank of the executor computes at once; the slowest rank's median is
 * kept (the executor's ranks meet at every collective). */
static zp_status time_loops(cal *c, zp_timing_fn fn, void *const *args, int n, double *per_call, double *spread)
{
    zp_timing_op ops[CAL_MAX_OPS];
    stat s[CAL_MAX_OPS];
    if (n < 1 || n > CAL_MAX_OPS)
        return ZP_FAIL(ZP_EINVAL, "calibrate: %d loops timed together (1 to %d)", n, CAL_MAX_OPS);
    for (int k = 0; k < n; k++) {
        zp_timing_opts o = {.warmup = 1, .reps = 1}; /* warm (pages, caches), then one call timed */
        zp_kernels_timing_hooks(&o, &c->clock, NULL);
        zp_timing_result r;
        ZP_TRY(zp_timing_run(&o, fn, args[k], &r));
        double first = r.samples[0];
        ZP_TRY(zp_comm_allreduce_double(c->world, &first, ZP_OP_MAX));
        ops[k] = (zp_timing_op){fn, args[k], zp_timing_inner(first, c->o->quick ? 0.01 : 0.03, 1, 20000)};
    }
    ZP_TRY(time_ops(c, c->world, ops, n, s));
    for (int k = 0; k < n; k++) {
        per_call[k] = s[k].med_max;
        spread[k] = spread_of(&s[k], s[k].med_max);
    }
    return ZP_OK;
}

static zp_status time_loop(cal *c, zp_timing_fn fn, void *arg, double *per_call, double *spread)
{
    void *const args[1] = {arg};
    return time_loops(c, fn, args, 1, per_call, spread);
}

/* ---- buffers ---- */

static zp_status dev_alloc_fill(const zp_kernels_backend *be, size_t bytes, float value, void **out)
{
    ZP_TRY(be->alloc(bytes, out));
    size_t chunk = (size_t)4 << 20;
    float *host = malloc(chunk);
    if (!host) {
        be->free(*out);
        return ZP_FAIL(ZP_ENOMEM, "out of memory");
    }
    for (size_t i = 0; i < chunk / sizeof(float); i++)
        host[i] = value;
    zp_status st = ZP_OK;
    for (size_t off = 0; off < bytes && st == ZP_OK; off += chunk)
        st = be->copy_to_device((char *)*out + off, host, bytes - off < chunk ? bytes - off : chunk);
    free(host);
    if (st != ZP_OK)
        be->free(*out);
    return st;
}

/* ---- memory bandwidth ---- */

/* The STREAM copy and triad once, GB/s per rank (gbs[0] copy, gbs[1] triad). */
static zp_status measure_bandwidth(cal *c, double gbs[2])
{
    size_t n = c->o->quick ? ((size_t)8 << 20) : ((size_t)32 << 20);
    zp_stream_op s = {.be = c->be, .n = n};
    zp_status st = dev_alloc_fill(c->be, n * 4, 0.0f, (void **)&s.a);
    if (st == ZP_OK && (st = dev_alloc_fill(c->be, n * 4, 1.0f, (void **)&s.b)) != ZP_OK)
        c->be->free(s.a);
    if (st == ZP_OK && (st = dev_alloc_fill(c->be, n * 4, 2.0f, (void **)&s.c)) != ZP_OK) {
        c->be->free(s.a);
        c->be->free(s.b);
    }
    ZP_TRY(st);
    stat sc, stt;
    progress(c, "memory bandwidth: copy");
    st = time_op(c, c->world, zp_stream_copy_run, &s, 1, &sc);
    c->done += 1;
    if (st == ZP_OK) {
        progress(c, "memory bandwidth: triad");
        st = time_op(c, c->world, zp_stream_triad_run, &s, 1, &stt);
        c->done += 1;
    }
    c->be->free(s.a);
    c->be->free(s.b);
    c->be->free(s.c);
    ZP_TRY(st);
    gbs[0] = 2.0 * 4.0 * (double)n / sc.med_avg / 1e9;
    gbs[1] = 3.0 * 4.0 * (double)n / stt.med_avg / 1e9;
    return ZP_OK;
}

/* The bandwidths are measured CAL_NN_PASSES times beside the layer kernels' passes and the median kept: the
 * triad prices the GEMMs' cold operands (sim/zp_device.c), and one measurement in a spell moved it by a third
 * (2026-11-27, five calibrations on an idle machine, one measurement each: triad 14.1, 14.2, 16.1, 16.6 and
 * 21.4 GB/s). */
typedef struct {
    double gbs[2][CAL_NN_PASSES]; /* copy [0] and triad [1], GB/s, each measurement */
    int n;
} cal_bandwidth;

static zp_status bandwidth_take(cal *c, cal_bandwidth *b)
{
    if (b->n >= CAL_NN_PASSES)
        return ZP_OK;
    double g[2];
    ZP_TRY(measure_bandwidth(c, g));
    b->gbs[0][b->n] = g[0], b->gbs[1][b->n] = g[1];
    b->n++;
    return ZP_OK;
}

/* the medians (each row sorted in place) */
static void bandwidth_record(cal_bandwidth *b, zp_profile *p)
{
    if (b->n > 0) {
        p->copy_gbs = zp_stats_median(b->gbs[0], (size_t)b->n);
        p->triad_gbs = zp_stats_median(b->gbs[1], (size_t)b->n);
    }
}

/* ---- Adam ---- */

/* Times the fused step over sizes[] on backend be as the executor runs it: the device's step over fp32
 * parameters with its overflow check of the gradients (half 0), or the host's step of ZeRO-Offload, which also
 * writes the fp16 copy that goes back to the device (half 1). (Until 2026-11-27 every step was timed with the
 * fp16 copy and without the check: on this machine's cpu twice the time of the executor's step, 455 against
 * 920 M parameters/s at 4 M.) Fills points and the fitted rate. */
static zp_status measure_adam_on(cal *c, const zp_kernels_backend *be, int half, const double *sizes, int nsizes,
                                 zp_profile_adam_point *pts, double *rate)
{
    size_t nmax = (size_t)sizes[nsizes - 1];
    zp_adam_op a = {.be = be, .hp = zp_adam_hparams_default()};
    a.hp.weight_decay = 0.01;
    void *bufs[5] = {0};
    const float vals[5] = {0.5f, 1e-3f, 0.0f, 0.0f, 0.0f};
    zp_status st = ZP_OK;
    for (int i = 0; i < 5 && st == ZP_OK; i++)
        st = dev_alloc_fill(be, nmax * (i == 4 ? 2 : 4), vals[i], &bufs[i]);
    double ns[ZP_PROFILE_MAX_ADAM], ts[ZP_PROFILE_MAX_ADAM];
    /* another backend (the host's Adam under --backend cuda) is timed by its own timer: a timer belongs to
     * the backend that made it (a cpu timer_start on CUDA events overwrote their handles, and the next CUDA
     * sample crashed in cudaEventRecord: seen on an H100, 2026-11-27) */
    const zp_kernels_clock saved = c->clock;
    if (be != saved.be) {
        c->clock = (zp_kernels_clock){.be = be};
        if (st == ZP_OK)
            st = be->timer_create(&c->clock.timer);
    }
    for (int i = 0; i < nsizes && st == ZP_OK; i++) {
        a.b = (zp_adam_buffers){.n = (size_t)sizes[i], .param = bufs[0], .grad = bufs[1], .m = bufs[2], .v = bufs[3],
                                .half = half ? bufs[4] : NULL, .half_dtype = ZP_DT_F16};
        stat s;
        progress(c, "fused Adam");
        st = time_op(c, c->world, zp_adam_op_run, &a, 1, &s);
        c->done += 1;
        if (st == ZP_OK) {
            ns[i] = sizes[i];
            ts[i] = s.med_avg;
            if (pts)
                pts[i] = (zp_profile_adam_point){sizes[i], sizes[i] / s.med_avg, spread_of(&s, s.med_avg)};
        }
    }
    if (be != saved.be && c->clock.timer)
        be->timer_free(c->clock.timer);
    c->clock = saved;
    for (int i = 0; i < 5; i++)
        be->free(bufs[i]);
    ZP_TRY(st);
    double t0, resid;
    /* a line through the points; when noise leaves it no slope (two points of the host's Adam on a loaded
     * machine: the larger one timed faster), the largest size's own rate */
    if (nsizes >= 2 && zp_fit_rate(ns, ts, nsizes, rate, &t0, &resid) == ZP_OK)
        return ZP_OK;
    zp_error_clear();
    *rate = ns[nsizes - 1] / ts[nsizes - 1];
    return ZP_OK;
}

static zp_status measure_adam(cal *c, zp_profile *p)
{
    /* from partitions that stay in cache (64K parameters: 1.4 MB of states) to ones far beyond it: a ZeRO rank's
     * partition is the model over the ranks, often small on this machine */
    static const double full[] = {1 << 16, 1 << 18, 1 << 20, 4 << 20, 16 << 20, 32 << 20};
    static const double quick[] = {1 << 16, 1 << 18, 1 << 20, 4 << 20, 8 << 20};
    const double *sizes = c->o->quick ? quick : full;
    int n = c->o->quick ? 5 : 6;
    ZP_TRY(measure_adam_on(c, c->be, 0, sizes, n, p->adam, &p->adam_params_per_s));
    p->nadam = n;
    p->adam_bytes_per_param = ZP_ADAM_BYTES_PER_PARAM;
    ZP_TRY(measure_adam_on(c, &zp_kernels_cpu, 1, sizes + n - 2, 2, NULL, &p->cpu_adam_params_per_s));
    return ZP_OK;
}

/* ---- GEMM ---- */

typedef struct {
    const zp_kernels_backend *be;
    zp_gemm_args g;
} gemm_arg;

static zp_status op_gemm(void *p)
{
    gemm_arg *a = p;
    return a->be->gemm(&a->g);
}

/* ---- a model's attention GEMMs, as the executor batches them ----
 * exec/zp_exec_model.c runs each attention GEMM as one batched call over (sequence, head) pairs, reading Q, K
 * and V as column blocks of the fused QKV rows (leading dimension ld) and writing the context into rows of Cq:
 * strided operands and transposed ones, B x heads small products per call (tiny-llama: 16 of 64 x 64 x 16).
 * Timed as plain square loops they came out 2-3x fast (in the step: 3.7 us per head product against 1.5
 * timed alone, 2026-11-27). The six forms (scores, context; their input and weight gradients) with the
 * executor's transposes, leading dimensions and addresses (each product its own sequence's rows and its own
 * head's scores), and the K and V gradients of grouped-query attention as the executor launches them: one
 * call per head of a group, adding into the group's gradient. The per-product time of each shape (two forms
 * share (T, T, hd), four (T, hd, T): their mean) replaces the table's point of that shape.
 * What this does not close (tiny-moe, micro-batch 4, 2026-11-27): in the step the forms still take 1.3-2.9x
 * the loop's time per product (context_wgrad 3.7 us against 1.3), as with every reading one sequence's rows
 * before; rotating the loop over copies of the buffers so that they come from L3 (3.6 MB) leaves it unchanged,
 * from beyond L3 (14 MB a rank) adds 30%: what the step lacks is operands last touched long before, in DRAM
 * (a per-operand reuse model, not this loop, would price that). */
enum { ATT_SCORES, ATT_CONTEXT, ATT_CTX_DGRAD, ATT_CTX_WGRAD, ATT_SCORES_DGRAD, ATT_SCORES_WGRAD, ATT_NFORMS };

typedef struct {
    const zp_kernels_backend *be;
    int form;
    size_t Bs, NH, KV, T, hd, ld, Cq; /* sequences, local Q heads, K/V heads, rows, head width, QKV and Q widths */
    float *qkv, *dqkv;                /* (Bs, T, ld) */
    float *att, *datt;                /* (Bs x NH, T, T) */
    float *atty, *datty;              /* (Bs, T, Cq) */
    const void **a, **b;
    float **c; /* Bs x NH entries */
} att_call;

/* One launch of a form: launch j of a weight gradient takes the j-th head of every K/V group. */
static zp_status att_launch(att_call *x, size_t j)
{
    const size_t T = x->T, hd = x->hd, ld = x->ld, Cq = x->Cq, grp = x->NH / x->KV, kvn = x->KV * hd;
    const int per_group = x->form == ATT_CTX_WGRAD || x->form == ATT_SCORES_WGRAD;
    int n = 0;
    for (size_t b = 0; b < x->Bs; b++)
        for (size_t h = 0; h < x->NH; h++) {
            if (per_group && h % grp != j)
                continue;
            const size_t qo = b * T * ld + h * hd, ko = b * T * ld + Cq + (h / grp) * hd;
            const size_t so = (b * x->NH + h) * T * T, yo = b * T * Cq + h * hd;
            const float *src[ATT_NFORMS][2] = {
                {x->qkv + qo, x->qkv + ko},         {x->att + so, x->qkv + ko + kvn}, {x->datty + yo, x->qkv + ko + kvn},
                {x->att + so, x->datty + yo},       {x->datt + so, x->qkv + ko},      {x->datt + so, x->qkv + qo}};
            float *dst[ATT_NFORMS] = {x->att + so,           x->atty + yo,     x->datt + so,
                                      x->dqkv + ko + kvn, x->dqkv + qo, x->dqkv + ko};
            x->a[n] = src[x->form][0], x->b[n] = src[x->form][1], x->c[n] = dst[x->form];
            n++;
        }
    /* exec/zp_exec_model.c attention_fwd and attention_bwd_launch: (ta, tb, m, n, k, lda, ldb, ldc) */
    static const int tr[ATT_NFORMS][2] = {{0, 1}, {0, 0}, {0, 1}, {1, 0}, {0, 0}, {1, 0}};
    const size_t dims[ATT_NFORMS][6] = {{T, T, hd, ld, ld, T},   {T, hd, T, T, ld, Cq}, {T, T, hd, Cq, ld, T},
                                        {T, hd, T, T, Cq, ld},   {T, hd, T, T, ld, ld}, {T, hd, T, T, ld, ld}};
    const size_t *d = dims[x->form];
    zp_gemm_args g = {.trans_a = tr[x->form][0], .trans_b = tr[x->form][1], .m = (int)d[0], .n = (int)d[1],
                      .k = (int)d[2], .alpha = 1, .beta = per_group && j > 0 ? 1.0f : 0.0f, .a = x->a[0],
                      .lda = (int)d[3], .b = x->b[0], .ldb = (int)d[4], .c = x->c[0], .ldc = (int)d[5],
                      .in_dtype = ZP_DT_F32};
    return x->be->gemm_batched(&g, n, (const void *const *)x->a, (const void *const *)x->b, x->c);
}

static zp_status att_call_run(void *p)
{
    att_call *x = p;
    const size_t launches = x->form == ATT_CTX_WGRAD || x->form == ATT_SCORES_WGRAD ? x->NH / x->KV : 1;
    for (size_t j = 0; j < launches; j++)
        ZP_TRY(att_launch(x, j));
    return ZP_OK;
}

/* The table's point of shape (m, n, k) set to rate (replaced, or added). */
static void gemm_point_set(zp_profile *p, double m, double n, double k, double rate)
{
    for (int i = 0; i < p->ngemm; i++)
        if (p->gemm[i].m == m && p->gemm[i].n == n && p->gemm[i].k == k) {
            p->gemm[i].flops_per_s = rate;
            return;
        }
    if (p->ngemm < ZP_PROFILE_MAX_GEMM)
        p->gemm[p->ngemm++] = (zp_profile_gemm_point){m, n, k, rate, 0};
}

static zp_status measure_attention(cal *c, zp_profile *p)
{
    for (int a = 0; a < c->o->natt; a++) {
        const double *s = c->o->att[a]; /* (batch, T, hd, ld, Cq): zp_calibrate_add_attention checked them */
        att_call x = {.be = c->be, .T = (size_t)s[1], .hd = (size_t)s[2], .ld = (size_t)s[3], .Cq = (size_t)s[4]};
        x.NH = x.Cq / x.hd, x.KV = (x.ld - x.Cq) / (2 * x.hd), x.Bs = (size_t)s[0] / x.NH;
        const size_t nrow = x.Bs * x.T, nprod = x.Bs * x.NH, nsq = nprod * x.T * x.T;
        float **bufs[6] = {&x.qkv, &x.dqkv, &x.att, &x.datt, &x.atty, &x.datty};
        const size_t len[6] = {nrow * x.ld, nrow * x.ld, nsq, nsq, nrow * x.Cq, nrow * x.Cq};
        zp_status st = ZP_OK;
        for (int i = 0; i < 6 && st == ZP_OK; i++)
            if ((st = dev_alloc_fill(c->be, len[i] * sizeof(float), 0.01f, (void **)bufs[i])) != ZP_OK)
                *bufs[i] = NULL; /* freed there */
        x.a = malloc(nprod * sizeof *x.a), x.b = malloc(nprod * sizeof *x.b), x.c = malloc(nprod * sizeof *x.c);
        if (st == ZP_OK && !(x.a && x.b && x.c))
            st = ZP_FAIL(ZP_ENOMEM, "out of memory");
        double tt = 0, tc = 0; /* per product: the (T, T, hd) forms' sum and the (T, hd, T) forms' */
        for (x.form = 0; x.form < ATT_NFORMS && st == ZP_OK; x.form++) {
            double t, sp;
            progress(c, "attention GEMMs (the executor's batches)");
            st = time_loop(c, att_call_run, &x, &t, &sp);
            c->done += 1;
            *(x.form == ATT_SCORES || x.form == ATT_CTX_DGRAD ? &tt : &tc) += t / (double)nprod;
        }
        for (int i = 0; i < 6; i++)
            if (*bufs[i])
                c->be->free(*bufs[i]);
        free(x.a), free(x.b), free(x.c);
        ZP_TRY(st);
        const double flops = 2.0 * x.T * x.T * x.hd;
        gemm_point_set(p, x.T, x.T, x.hd, flops / (tt / 2));
        gemm_point_set(p, x.T, x.hd, x.T, flops / (tc / 4));
    }
    return ZP_OK;
}

static zp_status measure_gemm(cal *c, zp_profile *p)
{
    const int cuda = c->be != &zp_kernels_cpu;
    const zp_dtype dt = cuda ? ZP_DT_F16 : ZP_DT_F32;
    snprintf(p->gemm_dtype, sizeof p->gemm_dtype, "%s", zp_dtype_name(dt));
    double amax = 0, bmax = 0, cmax = 0;
    for (int i = 0; i < c->o->nshapes; i++) {
        double m = c->o->shapes[i][0], n = c->o->shapes[i][1], k = c->o->shapes[i][2];
        if (!(m >= 1 && n >= 1 && k >= 1) || m > 1e6 || n > 1e6 || k > 1e6)
            return ZP_FAIL(ZP_EINVAL, "GEMM shape %d (%g, %g, %g) is not a valid (m, n, k)", i, m, n, k);
        amax = fmax(amax, m * k), bmax = fmax(bmax, k * n), cmax = fmax(cmax, m * n);
    }
    for (int i = 0; i < c->o->nextra && !cuda; i++) { /* a given model's shapes */
        double m = c->o->extra[i][0], n = c->o->extra[i][1], k = c->o->extra[i][2];
        if (!(m >= 1 && n >= 1 && k >= 1) || m > 1e6 || n > 1e6 || k > 1e6)
            return ZP_FAIL(ZP_EINVAL, "GEMM shape (%g, %g, %g) is not a valid (m, n, k)", m, n, k);
        amax = fmax(amax, m * k), bmax = fmax(bmax, k * n), cmax = fmax(cmax, m * n);
    }
    size_t es = zp_dtype_size(dt);
    void *A = NULL, *B = NULL, *C = NULL;
    /* 16-bit inputs: fill each 32-bit word with two fp16 0.01 */
    uint16_t one16 = zp_f32_to_f16(0.01f);
    float fill16;
    uint32_t pair = ((uint32_t)one16 << 16) | one16;
    memcpy(&fill16, &pair, sizeof fill16);
    zp_status st = dev_alloc_fill(c->be, (size_t)amax * es + 4, es == 4 ? 0.01f : fill16, &A);
    if (st == ZP_OK)
        st = dev_alloc_fill(c->be, (size_t)bmax * es + 4, es == 4 ? 0.01f : fill16, &B);
    if (st == ZP_OK)
        st = dev_alloc_fill(c->be, (size_t)cmax * 4, 0.0f, &C);
    p->ngemm = 0;
    for (int i = 0; i < c->o->nshapes && st == ZP_OK; i++) {
        int m = (int)c->o->shapes[i][0], n = (int)c->o->shapes[i][1], k = (int)c->o->shapes[i][2];
        gemm_arg g = {.be = c->be,
                      .g = {.m = m, .n = n, .k = k, .alpha = 1, .beta = 0, .a = A, .lda = k, .b = B, .ldb = n,
                            .c = C, .ldc = n, .in_dtype = dt}};
        stat s;
        progress(c, "GEMM");
        st = time_op(c, c->world, op_gemm, &g, 1, &s);
        c->done += 1;
        if (st == ZP_OK && p->ngemm < ZP_PROFILE_MAX_GEMM) {
            double flops = 2.0 * m * n * k;
            p->gemm[p->ngemm++] = (zp_profile_gemm_point){m, n, k, flops / s.med_avg, spread_of(&s, s.med_avg)};
        }
    }
    /* the executor's own GEMMs (cpu backend): the layers of its zoo models (hidden 128 and 256, vocabulary
     * 16h) at micro-batch 2 x sequence 128 = 256 rows, forward, input- and weight-gradient shapes, and the
     * per-head attention GEMMs (sequence 128, head width 32); then a grid in log space over the shapes a
     * small model's layers have (rows: tokens; columns and depth: widths), so that a shape none of the
     * others is near still has measured neighbours: the executor's shapes of models the calibration never
     * saw are interpolated between them (zp_profile_gemm_time). Timed in loops (time_loop). */
    if (!cuda && st == ZP_OK) {
        double ex[32 + ZP_CALIBRATE_MAX_EXTRA + ZP_CALIBRATE_MAX_GRID][3];
        int nex = zp_calibrate_exec_shapes(ex, 32);
        memcpy(ex + nex, c->o->extra, (size_t)c->o->nextra * sizeof ex[0]); /* a given model's, before the grid */
        nex += c->o->nextra;
        nex += zp_calibrate_grid_shapes(ex + nex, ZP_CALIBRATE_MAX_GRID);
        gemm_arg g = {.be = c->be, .g = {.alpha = 1, .beta = 0, .a = A, .b = B, .c = C, .in_dtype = dt}};
        for (int i = 0; i < nex && st == ZP_OK && p->ngemm < ZP_PROFILE_MAX_GEMM; i++) {
            int m = (int)ex[i][0], n = (int)ex[i][1], k = (int)ex[i][2];
            if ((double)m * k > amax || (double)k * n > bmax || (double)m * n > cmax)
                continue;
            g.g.m = m, g.g.n = n, g.g.k = k, g.g.lda = k, g.g.ldb = n, g.g.ldc = n;
            progress(c, "GEMM (executor and grid shapes)");
            double t, sp;
            st = time_loop(c, op_gemm, &g, &t, &sp);
            c->done += 1;
            if (st == ZP_OK)
                p->gemm[p->ngemm++] = (zp_profile_gemm_point){m, n, k, 2.0 * m * n * k / t, sp};
        }
    }
    if (!cuda && st == ZP_OK)
        st = measure_attention(c, p);
    if (st == ZP_OK)
        st = zp_fit_gemm(p);
    c->be->free(A);
    c->be->free(B);
    c->be->free(C);
    ZP_TRY(st);
    double best = 0;
    for (int i = 0; i < p->ngemm; i++)
        best = fmax(best, p->gemm[i].flops_per_s);
    double asym = p->gemm_s_per_flop > 0 ? 1.0 / p->gemm_s_per_flop : 0;
    double peak = fmax(best, asym);
    if (cuda) {
        p->peak_flops_fp16 = peak;
        p->peak_flops_bf16 = peak; /* tensor cores run bf16 at the fp16 rate */
        p->peak_flops_fp32 = 0;
    } else {
        /* the cpu backend computes in fp32 (16-bit inputs are widened) */
        p->peak_flops_fp32 = p->peak_flops_fp16 = p->peak_flops_bf16 = peak;
    }
    return ZP_OK;
}

/* ---- the executor's layer kernels (kernels/zp_nn.h) ---- */

typedef struct {
    zp_profile_kernel k;
    const zp_nn_ops *nn;          /* the backend's layer kernels (the executor's S->nn) */
    const zp_kernels_backend *be; /* whose memory the buffers are in */
    float *a, *b, *c, *w, *wb, *st1, *st2, *st3;
    int *tok;
    int *perm, *slot;  /* MoE: the copies' tokens in expert order, and each copy's row (a permutation) */
    size_t rows, cols; /* elements = rows * cols (softmax: rows = heads x seq, cols = seq; MoE: copies x hidden) */
    size_t scale;      /* the sizes' factor: 1 on the host, NN_DEVICE_SCALE on a device */
    int copy_only;     /* 1: only the fresh copy that precedes an in-place kernel (nn_fresh_src), timed apart */
} nn_arg;

#define NN_C 256     /* hidden of the measured LayerNorm, residual, embedding rows */
#define NN_T 128     /* sequence of the measured softmax and embedding */
#define NN_V 4096    /* vocabulary of the measured cross-entropy */
#define NN_MAXF (1u << 20) /* floats per buffer at scale 1 (x scale at a larger one) */
/* A device backend's kernels are timed at 8x the host's sizes, 8 and 64 times the executor's 256 tokens: a
 * GPU kernel's time is flat until its threads fill the GPU and linear after, so a line through sizes below
 * the executor's over-predicts it (seen on an H100, 2026-11-27: the cross-entropy's 1,024 x 4,096 logits,
 * timed at 32 and 256 rows, came out 4.5 ms against 1.4 ms run). */
#define NN_DEVICE_SCALE 8
#define NN_TOPK 2    /* experts per token of the measured MoE gather and combine (Mixtral's top-2) */
#define NN_MOE_C 64  /* hidden of the measured MoE rows (tiny-moe's) */

/* The kernels that work in place on b: each call first copies fresh values into b (from the returned buffer),
 * and the copy's own time, measured interleaved, is taken off. Called over and over on their own output they
 * would drift: a gradient multiplied by gelu'(x) or by scale x p at every call sinks into subnormal floats,
 * which the cpu computes on many times slower (gelu_bwd calibrated at 2.4 ns per element against 1.3 in the
 * executor's step, 2026-11-27), and then to zeros. NULL for the others. */
static const float *nn_fresh_src(const nn_arg *a)
{
    switch (a->k) {
    case ZP_KERNEL_SOFTMAX_FWD: /* scores in, probabilities out */
    case ZP_KERNEL_XENT_BWD: return a->a; /* logits in, their gradient out */
    case ZP_KERNEL_GELU_BWD:
    case ZP_KERNEL_SOFTMAX_BWD: return a->c; /* a gradient in, scaled in place */
    default: return NULL;
    }
}

static zp_status op_nn(void *p)
{
    nn_arg *a = p;
    const zp_nn_ops *nn = a->nn;
    const size_t R = a->rows, C = a->cols;
    const float *fresh = nn_fresh_src(a);
    if (fresh)
        ZP_TRY(a->be->copy_on_device(a->b, fresh, R * C * sizeof(float)));
    if (a->copy_only)
        return ZP_OK;
    switch (a->k) {
    case ZP_KERNEL_LAYERNORM_FWD: return nn->layernorm_fwd(a->b, a->st1, a->st2, a->a, a->w, a->wb, R, C);
    case ZP_KERNEL_LAYERNORM_BWD:
        return nn->layernorm_bwd(a->c, a->w, a->wb, a->b, a->a, a->w, a->st1, a->st2, R, C);
    case ZP_KERNEL_GELU_FWD: return nn->gelu_fwd(a->b, a->a, R * C);
    case ZP_KERNEL_GELU_BWD: return nn->gelu_bwd(a->b, a->a, R * C);
    case ZP_KERNEL_SOFTMAX_FWD: return nn->softmax_causal_fwd(a->b, R / C, C, 0.125f);
    case ZP_KERNEL_SOFTMAX_BWD: return nn->softmax_causal_bwd(a->b, a->a, R / C, C, 0.125f);
    case ZP_KERNEL_XENT_FWD:
        ZP_TRY(nn->xent_rowmax(a->st1, a->a, R, C));
        ZP_TRY(nn->xent_sumexp(a->st2, a->a, a->st1, R, C));
        return nn->xent_pick(a->st3, a->a, a->tok, 0, R, C);
    case ZP_KERNEL_XENT_BWD: return nn->xent_bwd(a->b, a->st1, a->st2, a->tok, 0, R, C, 1e-3f);
    case ZP_KERNEL_EMBED_FWD: return nn->embed_fwd(a->b, a->tok, R, C, a->a, 0, NN_V, a->c, NN_T);
    case ZP_KERNEL_EMBED_BWD: return nn->embed_bwd(a->b, a->c, a->tok, a->a, R, C, 0, NN_V, NN_T);
    case ZP_KERNEL_RESIDUAL_ADD: return nn->residual_add(a->b, a->a, a->c, a->w, R, C);
    case ZP_KERNEL_BIAS_ADD: return nn->bias_add(a->b, a->w, R, C);
    case ZP_KERNEL_BIAS_GRAD: return nn->bias_grad(a->w, a->a, R, C);
    case ZP_KERNEL_RMSNORM_FWD: return nn->rmsnorm_fwd(a->b, a->st1, a->a, a->w, R, C);
    case ZP_KERNEL_RMSNORM_BWD: return nn->rmsnorm_bwd(a->c, a->wb, a->b, a->a, a->w, a->st2, R, C);
    case ZP_KERNEL_GLU_FWD: return nn->glu_fwd(a->b, a->a, R, C, ZP_GLU_SILU); /* u (R, 2C) -> (R, C) */
    case ZP_KERNEL_GLU_BWD: return nn->glu_bwd(a->st3, a->b, a->a, R, C, ZP_GLU_SILU);
    case ZP_KERNEL_ROPE_FWD: /* Q and K of R tokens: heads of 64 over C columns, in place (a rotation) */
    case ZP_KERNEL_ROPE_BWD: return nn->rope(a->c, R, C, C / 64, 64, NN_T, 10000.0f, a->k == ZP_KERNEL_ROPE_BWD);
    /* R token copies of width C, NN_TOPK per token (zp_exec_moe.c's permute, combine and their backward) */
    case ZP_KERNEL_MOE_GATHER: return nn->moe_gather(a->b, a->a, a->perm, R, C);
    case ZP_KERNEL_MOE_COMBINE: return nn->moe_combine(a->b, a->a, a->slot, a->c, R / NN_TOPK, NN_TOPK, C);
    case ZP_KERNEL_MOE_COMBINE_BWD:
        return nn->moe_combine_bwd(a->b, a->st1, a->c, a->a, a->slot, a->w, R / NN_TOPK, NN_TOPK, C);
    default: return ZP_FAIL(ZP_EINVAL, "calibrate: layer kernel %d", (int)a->k);
    }
}

/* Rows x columns of the two sizes each kernel is timed at (t = t0 + elements * s_per_elem fitted through
 * them): the executor's shapes (mini and small at micro-batch 2 are 256 tokens) and 8x larger. */
static void nn_shape(zp_profile_kernel k, int big, size_t scale, size_t *rows, size_t *cols)
{
    size_t f = (big ? 8 : 1) * scale;
    switch (k) {
    case ZP_KERNEL_SOFTMAX_FWD:
    case ZP_KERNEL_SOFTMAX_BWD: *rows = 8 * f * NN_T, *cols = NN_T; break; /* 8 or 64 (sequence, head) pairs */
    case ZP_KERNEL_XENT_FWD:
    case ZP_KERNEL_XENT_BWD: *rows = 32 * f, *cols = NN_V; break;
    case ZP_KERNEL_GELU_FWD:
    case ZP_KERNEL_GELU_BWD:
    case ZP_KERNEL_BIAS_ADD:
    case ZP_KERNEL_BIAS_GRAD:
    case ZP_KERNEL_GLU_FWD:
    case ZP_KERNEL_GLU_BWD: *rows = 64 * f, *cols = 4 * NN_C; break; /* GLU: the (tokens, ffn) output */
    case ZP_KERNEL_ROPE_FWD:
    case ZP_KERNEL_ROPE_BWD: *rows = 64 * f, *cols = 2 * NN_C; break; /* Q and K of width NN_C each */
    case ZP_KERNEL_MOE_GATHER:
    case ZP_KERNEL_MOE_COMBINE:
    case ZP_KERNEL_MOE_COMBINE_BWD: *rows = 512 * f, *cols = NN_MOE_C; break; /* 256 tokens' top-2 copies */
    default: *rows = 64 * f, *cols = NN_C; break;
    }
}

/* The buffers of nn_arg in the backend's memory, filled with values of a trained layer's order of magnitude
 * (made on the host, copied over); perm and slot (MoE) stay on the host until nn_moe_order. */
static zp_status nn_buffers_new(nn_arg *a, int **perm_host, int **slot_host)
{
    const size_t maxf = NN_MAXF * a->scale; /* the largest: 8M floats at scale 8 (softmax, cross-entropy) */
    float **bufs[] = {&a->a, &a->b, &a->c, &a->w, &a->wb, &a->st1, &a->st2, &a->st3};
    float *h = malloc(maxf * sizeof(float));
    int *tok = malloc(maxf * sizeof(int));
    *perm_host = malloc(maxf / NN_MOE_C * sizeof(int));
    *slot_host = malloc(maxf / NN_MOE_C * sizeof(int));
    zp_status st = h && tok && *perm_host && *slot_host ? ZP_OK : ZP_FAIL(ZP_ENOMEM, "out of memory");
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0] && st == ZP_OK; i++)
        st = a->be->alloc(maxf * sizeof(float), (void **)bufs[i]);
    if (st == ZP_OK)
        st = a->be->alloc(maxf * sizeof(int), (void **)&a->tok);
    if (st == ZP_OK)
        st = a->be->alloc(maxf / NN_MOE_C * sizeof(int), (void **)&a->perm);
    if (st == ZP_OK)
        st = a->be->alloc(maxf / NN_MOE_C * sizeof(int), (void **)&a->slot);
    /* per buffer: a = 4u - 2, c = 0.5u, w = 1, wb = 0, st1 = 0, st2 = 1, st3 = 0 (u uniform in [0, 1)) */
    const float fill[8][2] = {{4, -2}, {0, 0}, {0.5f, 0}, {0, 1}, {0, 0}, {0, 0}, {0, 1}, {0, 0}};
    for (size_t b = 0; b < sizeof bufs / sizeof bufs[0] && st == ZP_OK; b++) {
        uint64_t x = 0x9e3779b97f4a7c15ull;
        for (size_t i = 0; i < maxf; i++) {
            x = x * 6364136223846793005ull + 1442695040888963407ull;
            const float u = (float)((x >> 40) & 0xffffff) / 16777216.0f;
            h[i] = fill[b][0] * u + fill[b][1];
            if (b == 0)
                tok[i] = (int)((x >> 20) % NN_V);
        }
        st = a->be->copy_to_device(*bufs[b], h, maxf * sizeof(float));
    }
    if (st == ZP_OK)
        st = a->be->copy_to_device(a->tok, tok, maxf * sizeof(int));
    free(h);
    free(tok);
    return st;
}

static void nn_buffers_free(nn_arg *a)
{
    float *bufs[] = {a->a, a->b, a->c, a->w, a->wb, a->st1, a->st2, a->st3};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        a->be->free(bufs[i]);
    a->be->free(a->tok);
    a->be->free(a->perm);
    a->be->free(a->slot);
}

/* MoE copies spread over the experts as a router spreads them: row j of the expert-sorted order is a copy of
 * a token far from j's (rows: a power of two, the multiplier odd: a bijection). */
static zp_status nn_moe_order(nn_arg *a, int *perm, int *slot)
{
    for (size_t j = 0; j < a->rows; j++) {
        slot[j] = (int)((j * 2654435761u) % a->rows);
        perm[slot[j]] = (int)(j / NN_TOPK);
    }
    ZP_TRY(a->be->copy_to_device(a->slot, slot, a->rows * sizeof(int)));
    return a->be->copy_to_device(a->perm, perm, a->rows * sizeof(int));
}

/* The layer kernels are timed in CAL_NN_PASSES passes spread over the calibration (before the Adam and GEMM
 * parts, after them, after the collectives), and each size's time is the median of its passes: this shared VM
 * changes speed in spells of seconds that a single pass of ~10 s can sit in (2026-11-27, four calibrations on an
 * idle machine: one pass in a slow spell put every kernel's slope 30-55% above the other three's, glu_fwd 8.7
 * ns per element against 6.5, and that repeat's tiny-moe steps came out +23..+27%); a spell now has to cover
 * two of the three passes. */
typedef struct {
    nn_arg a;                /* the buffers, shared by every kernel and pass */
    int *perm, *slot;        /* MoE orders, host side (nn_moe_order) */
    double n[ZP_PROFILE_NKERNEL][2];                 /* elements of each kernel's small and big size */
    double t[ZP_PROFILE_NKERNEL][2][CAL_NN_PASSES];  /* seconds per call at each size, each pass */
    int passes;                                      /* passes taken */
} nn_cal;

static zp_status nn_cal_open(cal *c, nn_cal *nc)
{
    memset(nc, 0, sizeof *nc);
    nc->a = (nn_arg){.be = c->be, .scale = c->be == &zp_kernels_cpu ? 1 : NN_DEVICE_SCALE};
    ZP_TRY(zp_nn_ops_get(c->be->name, &nc->a.nn));
    return nn_buffers_new(&nc->a, &nc->perm, &nc->slot);
}

static void nn_cal_close(nn_cal *nc)
{
    nn_buffers_free(&nc->a);
    free(nc->perm);
    free(nc->slot);
}

/* Kernel k at its two sizes, interleaved (one spell of a slow machine then shifts both, not the line's
 * slope): seconds per call in t[2], elements in n[2]. The two sizes share the buffers (the small shape's rows
 * are the big one's first); the MoE kernels' orders of the two sizes lie apart in perm and slot. */
static zp_status nn_time_kernel(cal *c, nn_cal *nc, int k, double n[2], double t[2])
{
    nn_arg sz[2] = {nc->a, nc->a}; /* small, big */
    for (int big = 0; big < 2; big++) {
        sz[big].k = (zp_profile_kernel)k;
        nn_shape(sz[big].k, big, nc->a.scale, &sz[big].rows, &sz[big].cols);
        n[big] = (double)sz[big].rows * (double)sz[big].cols;
    }
    sz[0].perm = nc->a.perm + sz[1].rows, sz[0].slot = nc->a.slot + sz[1].rows;
    for (int big = 0; big < 2 && k >= ZP_KERNEL_MOE_GATHER; big++)
        ZP_TRY(nn_moe_order(&sz[big], nc->perm, nc->slot));
    if (k == ZP_KERNEL_XENT_BWD) { /* statistics of these logits, as the forward leaves */
        nn_arg fwd = sz[1];
        fwd.k = ZP_KERNEL_XENT_FWD;
        ZP_TRY(op_nn(&fwd));
    }
    char what[80];
    snprintf(what, sizeof what, "layer kernel %s (pass %d of %d)", zp_profile_kernel_name((zp_profile_kernel)k),
             nc->passes + 1, CAL_NN_PASSES);
    progress(c, what);
    nn_arg cp[2] = {sz[0], sz[1]}; /* the fresh copies alone, for the in-place kernels */
    cp[0].copy_only = cp[1].copy_only = 1;
    void *const args[CAL_MAX_OPS] = {&sz[0], &sz[1], &cp[0], &cp[1]};
    const int ncopy = nn_fresh_src(&sz[0]) ? 2 : 0;
    double tc[CAL_MAX_OPS], spc[CAL_MAX_OPS];
    zp_status st = time_loops(c, op_nn, args, 2 + ncopy, tc, spc);
    c->done += 2;
    ZP_TRY(st);
    for (int i = 0; i < 2; i++)
        t[i] = ncopy ? fmax(tc[i] - tc[2 + i], 0.05 * tc[i]) : tc[i];
    return ZP_OK;
}

/* One pass over every layer kernel of the backend (the cpu's loops or the cuda kernels the executor runs). */
static zp_status nn_cal_pass(cal *c, nn_cal *nc)
{
    if (nc->passes >= CAL_NN_PASSES)
        return ZP_OK;
    for (int k = 0; k < ZP_PROFILE_NKERNEL; k++) {
        double t[2];
        ZP_TRY(nn_time_kernel(c, nc, k, nc->n[k], t));
        nc->t[k][0][nc->passes] = t[0], nc->t[k][1][nc->passes] = t[1];
    }
    nc->passes++;
    return ZP_OK;
}

/* Each kernel's t = t0 + elements x s_per_elem through its two sizes' median times over the passes (each
 * size's passes sorted in place). */
static void nn_cal_fit(nn_cal *nc, zp_profile *p)
{
    for (int k = 0; k < ZP_PROFILE_NKERNEL && nc->passes > 0; k++) {
        const double t[2] = {zp_stats_median(nc->t[k][0], (size_t)nc->passes),
                             zp_stats_median(nc->t[k][1], (size_t)nc->passes)};
        const double *n = nc->n[k];
        /* straight line through the two sizes; a negative intercept (noise) is clamped to 0 with the
         * slope of the larger size */
        double slope = (t[1] - t[0]) / (n[1] - n[0]);
        double t0 = t[0] - slope * n[0];
        if (!(slope > 0) || !(t0 >= 0)) {
            t0 = 0;
            slope = t[1] / n[1];
        }
        p->kernels[k] = (zp_profile_kernel_fit){1, t0, slope, n[1]};
    }
}

/* ---- collectives ---- */

static int coll_sizes(const cal *c, double maxb, double *sizes, int cap)
{
    int n = 0;
    for (double s = c->o->min_coll_bytes; s <= maxb * 1.0001 && n < cap; s *= 4)
        sizes[n++] = s;
    return n;
}

/* f's latency and bus bandwidth through the n points (bytes, seconds); 1 when fitted, 0 when the time does not
 * grow with the size (left unmeasured). Timed cold, the small sizes' misses vary and the fit's 1/t^2 weights
 * favour them: when the line through every point has no slope, the larger half's, where the bandwidth shows;
 * still none (a loaded machine, two repetitions a size: calibrate_cli under CI's load left the broadcast
 * unmeasured), the line from the smallest size to the largest, whose times the noise cannot swap (the points
 * themselves are what the simulation reads within their range). */
static int fit_collective(const double *xs, const double *ts, int n, double factor, zp_profile_coll_fit *f)
{
    if (zp_fit_collective(xs, ts, n, factor, &f->latency_s, &f->busbw_gbs, &f->residual) == ZP_OK)
        return 1;
    zp_error_clear();
    if (n >= 4 && zp_fit_collective(xs + n / 2, ts + n / 2, n - n / 2, factor, &f->latency_s, &f->busbw_gbs,
                                    &f->residual) == ZP_OK)
        return 1;
    zp_error_clear();
    if (n < 2 || !(ts[n - 1] > ts[0]) || !(xs[n - 1] > xs[0]))
        return 0;
    const double b = (ts[n - 1] - ts[0]) / (xs[n - 1] - xs[0]);
    f->latency_s = fmax(0.0, ts[0] - b * xs[0]);
    f->busbw_gbs = factor / b / 1e9;
    f->residual = 1.0;
    return 1;
}

/* Collective k of `bytes` (a whole buffer) over comm; the all-reduce in place, as the executor's buckets and
 * DDP's are reduced. */
static zp_coll_op coll_at(cal *c, zp_comm *comm, zp_coll_kind k, void *send, void *recv, double bytes)
{
    return (zp_coll_op){.be = c->be, .comm = comm, .kind = k, .send = send,
                        .recv = k == ZP_COLL_ALLREDUCE ? send : recv, .count = (size_t)bytes / 4};
}

/* The collective back to back, its buffers in cache (no pass through the caches, no rewrite of what it sends)
 * as a tensor-parallel collective finds the activations the GEMM before it just wrote, at the sizes up to the
 * last-level cache (c->evict_n: a third of twice it), at the sizes of f's points: the profile's hot points
 * (zp_op_info.warm). */
static zp_status measure_hot(cal *c, zp_profile_coll_fit *f, zp_comm *comm, zp_coll_kind k, void *send, void *recv)
{
    const double llc = 1.5 * (double)c->evict_n * sizeof(float);
    float *evict = c->evict;
    c->evict = NULL;
    zp_status st = ZP_OK;
    f->nhot = 0;
    for (int i = 0; i < f->npoints && f->points[i].bytes <= llc && st == ZP_OK; i++) {
        zp_coll_op a = coll_at(c, comm, k, send, recv, f->points[i].bytes);
        char what[96];
        snprintf(what, sizeof what, "%s back to back", zp_coll_name(k));
        progress(c, what);
        stat s;
        if ((st = time_op(c, comm, zp_coll_op_run, &a, 1, &s)) == ZP_OK)
            f->hot[f->nhot++] = (zp_profile_coll_point){f->points[i].bytes, s.max_med, spread_of(&s, s.max_med)};
    }
    c->evict = evict;
    return st;
}

static zp_status measure_scope(cal *c, zp_profile *p, zp_comm *comm, zp_profile_scope scope, double maxb, void *send,
                               void *recv)
{
    double sizes[ZP_PROFILE_MAX_POINTS];
    int ns = coll_sizes(c, maxb, sizes, ZP_PROFILE_MAX_POINTS);
    int nr = zp_comm_size(comm);
    for (int k = 0; k < ZP_COLL_MEASURED; k++) {
        zp_profile_coll_fit *f = &p->coll[k][scope];
        memset(f, 0, sizeof *f);
        double xs[ZP_PROFILE_MAX_POINTS], ts[ZP_PROFILE_MAX_POINTS];
        for (int i = 0; i < ns; i++) {
            /* whole buffer, a multiple of 4 * nranks bytes */
            size_t unit = 4 * (size_t)nr;
            size_t bytes = ((size_t)sizes[i] + unit - 1) / unit * unit;
            zp_coll_op a = coll_at(c, comm, (zp_coll_kind)k, send, recv, (double)bytes);
            char what[96];
            snprintf(what, sizeof what, "%s %s", zp_coll_name((zp_coll_kind)k), zp_profile_scope_name(scope));
            progress(c, what);
            stat s;
            c->hot = &a;
            zp_status st = time_op(c, comm, zp_coll_op_run, &a, 1, &s);
            c->hot = NULL;
            ZP_TRY(st);
            c->done += 1;
            f->points[i] = (zp_profile_coll_point){(double)bytes, s.max_med, spread_of(&s, s.max_med)};
            xs[i] = (double)bytes;
            ts[i] = s.max_med;
        }
        f->npoints = ns;
        f->nranks = nr;
        f->measured = fit_collective(xs, ts, ns, zp_coll_busbw_factor((zp_coll_kind)k, nr), f);
        if (scope == ZP_PROFILE_INTRA_NODE)
            ZP_TRY(measure_hot(c, f, comm, (zp_coll_kind)k, send, recv));
    }
    return ZP_OK;
}

/* Floats of each third of the eviction buffer: the three together twice the last-level cache of a cpu core
 * (sysfs's index3, the L3 a core shares; 32 MiB here; 32 MiB when unknown), within 16..256 MiB, for the cpu
 * backend; 256 MiB for a device backend (five times an H100's 50 MB L2). */
static size_t evict_floats(const zp_kernels_backend *be)
{
    double bytes = 256.0 * (1 << 20);
    if (be == &zp_kernels_cpu) {
        double llc = 0;
        char unit = 0;
        FILE *f = fopen("/sys/devices/system/cpu/cpu0/cache/index3/size", "r");
        if (f) {
            if (fscanf(f, "%lf%c", &llc, &unit) >= 1)
                llc *= unit == 'K' ? 1024.0 : unit == 'M' ? 1048576.0 : 1.0;
            fclose(f);
        }
        bytes = fmin(fmax(2 * (llc > 0 ? llc : 32.0 * (1 << 20)), 16.0 * (1 << 20)), 256.0 * (1 << 20));
    }
    return (size_t)(bytes / 3 / sizeof(float));
}

static zp_status measure_collectives(cal *c, zp_profile *p, zp_comm *node, zp_comm *cross, double maxb)
{
    void *send = NULL, *recv = NULL;
    ZP_TRY(dev_alloc_fill(c->be, (size_t)maxb, 1.0f, &send));
    zp_status st = dev_alloc_fill(c->be, (size_t)maxb, 0.0f, &recv);
    c->evict_n = evict_floats(c->be);
    if (st == ZP_OK)
        st = dev_alloc_fill(c->be, 3 * c->evict_n * sizeof(float), 1.0f, (void **)&c->evict);
    /* every rank runs both scopes' loops (same order everywhere); a scope is recorded only when
     * its communicators have >= 2 ranks on every rank */
    int node_ok = zp_comm_size(node) >= 2, cross_ok = zp_comm_size(cross) >= 2;
    double min_node = node_ok, min_cross = cross_ok;
    if (st == ZP_OK)
        st = zp_comm_allreduce_double(c->world, &min_node, ZP_OP_MIN);
    if (st == ZP_OK)
        st = zp_comm_allreduce_double(c->world, &min_cross, ZP_OP_MIN);
    if (st == ZP_OK && min_node > 0)
        st = measure_scope(c, p, node, ZP_PROFILE_INTRA_NODE, maxb, send, recv);
    if (st == ZP_OK && min_cross > 0)
        st = measure_scope(c, p, cross, ZP_PROFILE_INTER_NODE, maxb, send, recv);
    c->be->free(send);
    c->be->free(recv);
    c->be->free(c->evict);
    c->evict = NULL;
    return st;
}

/* ---- host <-> device ---- */

static zp_status measure_host_device(cal *c, zp_profile *p)
{
    size_t bytes = c->o->quick ? ((size_t)64 << 20) : ((size_t)256 << 20);
    zp_copy_op a = {.be = c->be, .bytes = bytes};
    a.host = calloc(1, bytes);
    if (!a.host)
        return ZP_FAIL(ZP_ENOMEM, "out of memory");
    zp_status st = c->be->alloc(bytes, &a.dev);
    stat s;
    if (st == ZP_OK) {
        a.to_device = 1;
        progress(c, "host to device");
        st = time_op(c, c->world, zp_copy_op_run, &a, 1, &s);
        p->h2d_gbs = st == ZP_OK ? bytes / s.med_avg / 1e9 : 0;
    }
    if (st == ZP_OK) {
        a.to_device = 0;
        progress(c, "device to host");
        st = time_op(c, c->world, zp_copy_op_run, &a, 1, &s);
        p->d2h_gbs = st == ZP_OK ? bytes / s.med_avg / 1e9 : 0;
    }
    c->done += 2;
    c->be->free(a.dev);
    free(a.host);
    return st;
}

/* ---- the host's side of a device backend ---- */

typedef struct {
    cal *c;
    float *a, *b;
    zp_gemm_args g;
} host_call;

static zp_status call_kernel(host_call *h) { return h->c->be->stream_copy(h->a, h->b, 1); }
static zp_status call_gemm(host_call *h) { return h->c->be->gemm(&h->g); }

/* Host seconds per call: n calls back to back, nothing waited on (the kernels queue on the device, whose
 * tiny kernels take ~2 us each: the host is the slower side), the host clock around the loop, then the
 * device drained (a timer sample) before the next repetition; the median of 5 after a warm-up loop. */
static zp_status host_per_call(host_call *h, zp_status (*fn)(host_call *), int n, double *out)
{
    double t[6];
    for (int r = 0; r < 6; r++) {
        const double t0 = zp_time_now_s();
        for (int i = 0; i < n; i++)
            ZP_TRY(fn(h));
        t[r] = (zp_time_now_s() - t0) / n;
        double drained;
        ZP_TRY(h->c->be->timer_start(h->c->clock.timer));
        ZP_TRY(h->c->be->timer_stop(h->c->clock.timer, &drained));
    }
    *out = zp_stats_median(t + 1, 5);
    return ZP_OK;
}

/* What the executor's calls cost the host on a device backend (the profile's "host_calls"): a kernel
 * through the backend (a one-element STREAM copy) and a cuBLAS GEMM of an attention head's size (64^3 fp32),
 * the mean over ranks. The simulation queues them ahead of the device (zp_device_host_time): a small model's
 * step on a GPU is bound by them. */
static zp_status measure_host_calls(cal *c, zp_profile *p)
{
    host_call h = {.c = c};
    const int n = c->o->quick ? 200 : 1000, d = 64;
    zp_status st = c->be->alloc(sizeof(float) * d * d * 3, (void **)&h.a);
    if (st != ZP_OK)
        return st;
    h.b = h.a + d * d;
    st = c->be->zero(h.a, sizeof(float) * d * d * 3);
    h.g = (zp_gemm_args){.m = d, .n = d, .k = d, .alpha = 1, .a = h.a, .lda = d, .b = h.b, .ldb = d,
                         .c = h.a + 2 * d * d, .ldc = d, .in_dtype = ZP_DT_F32};
    progress(c, "host calls");
    if (st == ZP_OK)
        st = host_per_call(&h, call_kernel, n, &p->host_kernel_s);
    if (st == ZP_OK)
        st = host_per_call(&h, call_gemm, n, &p->host_gemm_s);
    c->be->free(h.a);
    const double size = zp_comm_size(c->world);
    if (st == ZP_OK)
        st = zp_comm_allreduce_double(c->world, &p->host_kernel_s, ZP_OP_SUM);
    if (st == ZP_OK)
        st = zp_comm_allreduce_double(c->world, &p->host_gemm_s, ZP_OP_SUM);
    p->host_kernel_s /= size, p->host_gemm_s /= size;
    c->done += 2;
    return st;
}

/* ---- options ---- */

int zp_calibrate_grid_shapes(double (*out)[3], int cap)
{
    static const double rows[] = {128, 512, 2048}, cols[] = {64, 256, 1024, 4096}, depth[] = {32, 128, 512, 2048};
    int n = 0;
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 4; j++)
            for (int l = 0; l < 4 && n < cap; l++, n++) {
                out[n][0] = rows[i];
                out[n][1] = cols[j];
                out[n][2] = depth[l];
            }
    return n;
}

int zp_calibrate_exec_shapes(double (*out)[3], int cap)
{
    int n = 0;
    const double T = 256, s = 128, hd = 32;
    for (int i = 0; i < 2; i++) {
        const double h = i == 0 ? 128 : 256, V = 16 * h;
        const double sh[12][3] = {
            {T, 3 * h, h}, {T, h, h},     {T, 4 * h, h},     {T, h, 4 * h}, /* forward (and dgrad) */
            {T, h, 3 * h},                                                  /* QKV input gradient */
            {3 * h, h, T}, {h, h, T},     {4 * h, h, T},     {h, 4 * h, T}, /* weight gradients */
            {T, V, h},     {T, h, V},     {V, h, T}};                       /* LM head */
        for (int j = 0; j < 12 && n < cap; j++, n++)
            memcpy(out[n], sh[j], sizeof sh[j]);
    }
    const double at[2][3] = {{s, s, hd}, {s, hd, s}}; /* attention scores, context */
    for (int j = 0; j < 2 && n < cap; j++, n++)
        memcpy(out[n], at[j], sizeof at[j]);
    return n;
}

zp_status zp_calibrate_set_layer_shapes(zp_calibrate_opts *o, const double *hidden, int nhidden, double tokens)
{
    if (nhidden * 4 > ZP_CALIBRATE_MAX_SHAPES)
        return ZP_FAIL(ZP_ERANGE, "at most %d hidden sizes", ZP_CALIBRATE_MAX_SHAPES / 4);
    if (!(tokens >= 1 && tokens <= 1e6))
        return ZP_FAIL(ZP_EINVAL, "tokens must be in 1..1e6 (got %g)", tokens);
    int n = 0;
    for (int i = 0; i < nhidden; i++) {
        double h = hidden[i];
        if (!(h >= 1 && h <= 65536 && h == floor(h)))
            return ZP_FAIL(ZP_EINVAL, "hidden size must be a whole number in 1..65536 (got %g)", h);
        const double shapes[4][3] = {{tokens, 3 * h, h}, {tokens, h, h}, {tokens, 4 * h, h}, {tokens, h, 4 * h}};
        memcpy(o->shapes[n], shapes, sizeof shapes);
        n += 4;
    }
    o->nshapes = n;
    return ZP_OK;
}

void zp_calibrate_opts_exec(zp_calibrate_opts *o)
{
    zp_calibrate_opts_default(o, 0);
    o->max_coll_bytes = 64.0 * (1 << 20);
    const double h[] = {256, 512, 1024};
    zp_calibrate_set_layer_shapes(o, h, 3, 512);
}

int zp_calibrate_add_attention(zp_calibrate_opts *o, double batch, double T, double hd, double ld, double Cq)
{
    if (!(batch >= 1 && T >= 1 && hd >= 1 && ld >= 3 * hd && Cq >= hd && ld >= Cq) || batch * T * T > 1 << 26)
        return 0;
    /* the executor's layout: Cq = heads x hd, ld = Cq + 2 x K/V heads x hd, the heads a multiple of the K/V
     * heads, batch = sequences x heads */
    const double nh = Cq / hd, kv = (ld - Cq) / (2 * hd);
    if (nh != floor(nh) || kv != floor(kv) || kv < 1 || fmod(nh, kv) != 0 || fmod(batch, nh) != 0)
        return 0;
    const double a[5] = {batch, T, hd, ld, Cq};
    for (int i = 0; i < o->natt; i++)
        if (memcmp(o->att[i], a, sizeof a) == 0)
            return 0;
    if (o->natt >= ZP_CALIBRATE_MAX_ATT)
        return 0;
    memcpy(o->att[o->natt++], a, sizeof a);
    return 1;
}

int zp_calibrate_add_extra(zp_calibrate_opts *o, double m, double n, double k)
{
    if (!(m >= 1 && n >= 1 && k >= 1))
        return 0;
    for (int i = 0; i < o->nextra; i++)
        if (o->extra[i][0] == m && o->extra[i][1] == n && o->extra[i][2] == k)
            return 0;
    if (o->nextra >= ZP_CALIBRATE_MAX_EXTRA)
        return 0;
    o->extra[o->nextra][0] = m, o->extra[o->nextra][1] = n, o->extra[o->nextra][2] = k;
    o->nextra++;
    return 1;
}

void zp_calibrate_opts_default(zp_calibrate_opts *o, int quick)
{
    memset(o, 0, sizeof *o);
    o->backend = "cpu";
    o->quick = quick;
    o->warmup = quick ? 1 : 2;
    o->reps = quick ? 3 : 7;
    o->min_coll_bytes = 1024;
    o->max_coll_bytes = quick ? 64.0 * (1 << 20) : 1024.0 * (1 << 20);
    const double full_h[] = {512, 1024, 2048}, quick_h[] = {256, 512, 1024};
    zp_calibrate_set_layer_shapes(o, quick ? quick_h : full_h, 3, quick ? 512 : 2048);
}

/* ---- machine ---- */

static void fill_machine(cal *c, zp_profile *p, int nodes)
{
    zp_profile_machine *m = &p->machine;
    zp_kernels_cpu.device_name(m->cpu_model, sizeof m->cpu_model);
    m->cores = (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (c->be != &zp_kernels_cpu) {
        c->be->device_name(m->gpu, sizeof m->gpu);
        m->gpu_count = 1;
    }
    m->nodes = nodes;
    m->ranks = zp_comm_size(c->world);
    gethostname(m->hostname, sizeof m->hostname - 1);
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(m->measured_at, sizeof m->measured_at, "%Y-%m-%dT%H:%M:%SZ", &tm);
    snprintf(m->zplan_version, sizeof m->zplan_version, "%s", ZP_VERSION);
    zp_kernels_versions(m->blas, sizeof m->blas, m->mpi, sizeof m->mpi, m->cuda, sizeof m->cuda, m->nccl,
                        sizeof m->nccl);
}

/* The machine over the calibration (q0 at its start, on every rank): other processes' CPU, the machine's
 * busy time less every rank's own, and the load at the end, as rank 0 read them (one node only). */
static zp_status watched(cal *c, zp_profile *p, const zp_quiet_sample *q0, int nodes)
{
    zp_quiet_sample q1;
    zp_quiet_sample_take(&q1);
    double own = q1.own_cpu_s - q0->own_cpu_s, busy = q1.busy_s - q0->busy_s, load = q1.load1;
    const int rank0 = zp_comm_rank(c->world) == 0;
    if (!rank0)
        busy = load = 0;
    ZP_TRY(zp_comm_allreduce_double(c->world, &own, ZP_OP_SUM));
    ZP_TRY(zp_comm_allreduce_double(c->world, &busy, ZP_OP_SUM));
    ZP_TRY(zp_comm_allreduce_double(c->world, &load, ZP_OP_SUM));
    const double wall = q1.wall_s - q0->wall_s;
    if (nodes != 1 || q0->busy_s < 0 || q1.busy_s < 0 || load < 0 || !(wall > 0))
        return ZP_OK; /* not known: the profile says nothing */
    p->machine.watched = 1;
    p->machine.others_cores = fmax(0.0, (busy - own) / wall);
    p->machine.load1 = load;
    return ZP_OK;
}

/* ---- the machine's speed: the reference work of kernels/zp_probe.h between the parts ---- */

#define CAL_MAX_PROBES 8

typedef struct {
    zp_probe *probe;
    double s[CAL_MAX_PROBES];    /* seconds of each timing, in order */
    double sync[CAL_MAX_PROBES]; /* each timing's lag of the slowest rank, a fraction (zp_probe_time) */
    int n;
} cal_probes;

static zp_status probe_take(cal *c, cal_probes *pr)
{
    if (!pr->probe || pr->n >= CAL_MAX_PROBES)
        return ZP_OK;
    progress(c, "reference work");
    ZP_TRY(zp_probe_time(pr->probe, c->world, &pr->s[pr->n], NULL, &pr->sync[pr->n]));
    pr->n++;
    return ZP_OK;
}

/* machine.probe: the timings' median, and (max - min) / min */
static void probe_record(const cal_probes *pr, zp_profile *p)
{
    if (pr->n < 1)
        return;
    double lo = pr->s[0], hi = pr->s[0];
    for (int i = 1; i < pr->n; i++)
        lo = fmin(lo, pr->s[i]), hi = fmax(hi, pr->s[i]);
    double s[CAL_MAX_PROBES];
    memcpy(s, pr->s, (size_t)pr->n * sizeof s[0]);
    p->machine.probe_s = zp_stats_median(s, (size_t)pr->n);
    p->machine.probe_drift = lo > 0 ? (hi - lo) / lo : 0;
    memcpy(s, pr->sync, (size_t)pr->n * sizeof s[0]);
    p->machine.probe_sync = zp_stats_median(s, (size_t)pr->n); /* 0 on one rank */
}

/* Free memory per rank on this node for the collectives' two buffers. */
static double coll_bytes_cap(zp_comm *node)
{
    long pages = sysconf(_SC_AVPHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
    if (pages <= 0 || psz <= 0)
        return 1e18;
    int local = zp_comm_size(node) > 0 ? zp_comm_size(node) : 1;
    return (double)pages * (double)psz / local / 4.0; /* two buffers, half the memory left free */
}

/* Progress units of the whole calibration (progress(): c->done / c->total). */
static double cal_total(cal *c, zp_comm *node, zp_comm *cross, double maxb)
{
    const zp_calibrate_opts *o = c->o;
    const int cpu = c->be == &zp_kernels_cpu;
    double sizes[ZP_PROFILE_MAX_POINTS], ex[32][3];
    const int ncoll = coll_sizes(c, maxb, sizes, ZP_PROFILE_MAX_POINTS);
    const int scopes = (zp_comm_size(node) >= 2) + (zp_comm_size(cross) >= 2);
    const int nex = cpu ? zp_calibrate_exec_shapes(ex, 32) + o->nextra + ZP_CALIBRATE_MAX_GRID : 0;
    return 2.0 * CAL_NN_PASSES + (o->quick ? 5 : 6) + 2 /* the host's Adam */ + (cpu ? 0 : 6) + o->nshapes + nex +
           (cpu ? 6.0 * o->natt : 0) + 2.0 * CAL_NN_PASSES * ZP_PROFILE_NKERNEL +
           (double)scopes * ZP_COLL_MEASURED * ncoll;
}

/* The parts, the reference work before each: the bandwidths and the layer kernels in CAL_NN_PASSES passes
 * (first, after the Adam and GEMM parts, after the collectives), their medians kept. */
static zp_status measure_parts(cal *c, zp_profile *p, zp_comm *node, zp_comm *cross, double maxb, cal_probes *pr)
{
    const int cpu = c->be == &zp_kernels_cpu;
    cal_bandwidth bw = {0};
    nn_cal nc;
    zp_status st = nn_cal_open(c, &nc);
    for (int pass = 0; pass < CAL_NN_PASSES && st == ZP_OK; pass++) {
        if ((st = probe_take(c, pr)) == ZP_OK && (st = bandwidth_take(c, &bw)) == ZP_OK)
            st = nn_cal_pass(c, &nc);
        if (st == ZP_OK && pass == 0 && (st = probe_take(c, pr)) == ZP_OK)
            st = measure_adam(c, p);
        if (st == ZP_OK && pass == 0 && (st = probe_take(c, pr)) == ZP_OK)
            st = measure_gemm(c, p);
        if (st == ZP_OK && pass == 1 && !cpu && (st = measure_host_device(c, p)) == ZP_OK)
            st = measure_host_calls(c, p);
        if (st == ZP_OK && pass == 1 && (st = probe_take(c, pr)) == ZP_OK)
            st = measure_collectives(c, p, node, cross, maxb);
    }
    nn_cal_close(&nc); /* its buffers, whatever nn_cal_open returned */
    if (st != ZP_OK)
        return st;
    bandwidth_record(&bw, p);
    if (cpu)                           /* its loops keep the operands in cache; the step's come from */
        p->gemm_cold_gbs = p->triad_gbs; /* memory (zp_profile.h, sim/zp_device.c cold_time) */
    nn_cal_fit(&nc, p);
    return ZP_OK;
}

zp_status zp_calibrate_run(const zp_calibrate_opts *o, zp_profile *out)
{
    if (!o || !out)
        return ZP_FAIL(ZP_EINVAL, "calibrate: NULL argument");
    if (o->reps < 1 || o->warmup < 0)
        return ZP_FAIL(ZP_EINVAL, "calibrate: repetitions must be >= 1 and warm-up >= 0");
    if (!(o->min_coll_bytes >= 4) || !(o->max_coll_bytes >= o->min_coll_bytes))
        return ZP_FAIL(ZP_EINVAL, "calibrate: collective sizes must satisfy 4 <= min <= max");
    if (o->nshapes < 1)
        return ZP_FAIL(ZP_EINVAL, "calibrate: no GEMM shapes");
    cal c = {.o = o};
    ZP_TRY(zp_kernels_backend_get(o->backend ? o->backend : "cpu", &c.be));
    ZP_TRY(c.be->init());
    ZP_TRY(zp_comm_world(c.be, &c.world));
    zp_comm *node = NULL, *cross = NULL;
    zp_status st = zp_comm_split_node(c.world, &node);
    if (st == ZP_OK)
        st = zp_comm_split_cross(c.world, &cross);
    int nodes = 1;
    if (st == ZP_OK)
        st = zp_comm_node_count(c.world, &nodes);
    c.clock.be = c.be;
    if (st == ZP_OK)
        st = c.be->timer_create(&c.clock.timer);

    zp_profile p;
    zp_quiet_sample q0 = {0};
    zp_profile_init(&p);
    snprintf(p.backend, sizeof p.backend, "%s", c.be->name);
    double maxb = 0;
    if (st == ZP_OK) {
        maxb = fmin(o->max_coll_bytes, coll_bytes_cap(node));
        st = zp_comm_allreduce_double(c.world, &maxb, ZP_OP_MIN);
    }
    if (st == ZP_OK) {
        c.total = cal_total(&c, node, cross, maxb);
        fill_machine(&c, &p, nodes);
        zp_quiet_sample_take(&q0);
    }
    /* the reference work before each part and after the last: the machine's speed over the calibration */
    cal_probes pr = {0};
    const zp_nn_ops *nn = NULL;
    if (st == ZP_OK)
        st = zp_nn_ops_get(c.be->name, &nn);
    if (st == ZP_OK)
        st = zp_probe_open(c.be, nn, &pr.probe);
    if (st == ZP_OK)
        st = measure_parts(&c, &p, node, cross, maxb, &pr);
    if (st == ZP_OK && (st = probe_take(&c, &pr)) == ZP_OK)
        st = watched(&c, &p, &q0, nodes);
    probe_record(&pr, &p);
    zp_probe_close(pr.probe);
    if (st == ZP_OK) {
        c.done = c.total;
        progress(&c, "done");
        st = zp_profile_validate(&p);
    }
    if (c.clock.timer)
        c.be->timer_free(c.clock.timer);
    zp_comm_free(cross);
    zp_comm_free(node);
    zp_comm_free(c.world);
    if (st == ZP_OK)
        *out = p;
    return st;
}
