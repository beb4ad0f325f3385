/* zp_profile.c — the device profile's JSON reader and writer (jansson) and its cost models. */
#include "zp_profile.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "zp_coll.h"
#include "zp_io.h"

#define MAX_PROFILE_BYTES ((size_t)16 << 20)

static const char *const scope_names[ZP_PROFILE_NSCOPE] = {"intra_node", "inter_node"};

const char *zp_profile_coll_name(zp_profile_coll kind)
{
    return zp_coll_name((zp_coll_kind)kind);
}

const char *zp_profile_scope_name(zp_profile_scope scope)
{
    return (unsigned)scope < ZP_PROFILE_NSCOPE ? scope_names[scope] : "?";
}

double zp_profile_busbw_factor(zp_profile_coll kind, int nranks)
{
    return zp_coll_busbw_factor((zp_coll_kind)kind, nranks); /* the same kinds, in the same order */
}

void zp_profile_init(zp_profile *p)
{
    memset(p, 0, sizeof *p);
    snprintf(p->backend, sizeof p->backend, "cpu");
    snprintf(p->gemm_dtype, sizeof p->gemm_dtype, "fp32");
}

/* ---- models ---- */

double zp_profile_gemm_elem_bytes(const zp_profile *p) { return strcmp(p->gemm_dtype, "fp32") == 0 ? 4.0 : 2.0; }

double zp_profile_gemm_bytes(const zp_profile *p, double m, double n, double k)
{
    return zp_profile_gemm_elem_bytes(p) * (m * k + k * n) + 4.0 * m * n;
}

double zp_profile_gemm_fit_time(const zp_profile *p, double m, double n, double k)
{
    return p->gemm_t0_s + p->gemm_s_per_flop * 2.0 * m * n * k + p->gemm_s_per_byte * zp_profile_gemm_bytes(p, m, n, k);
}

/* cuBLAS's CTA tiles for 16-bit tensor-core GEMMs (rows x columns of C; CUTLASS/cuBLAS kernel names
 * ..._256x128_..., _128x128_, _128x64_, _64x64_) and their throughput relative to the largest: a tile of
 * tm x tn loads (tm + tn) operands per k for tm tn multiply-adds, so smaller tiles reuse less and run
 * further below the tensor cores' peak (NVIDIA, "Matrix Multiplication Background User's Guide": larger
 * tiles are more efficient, smaller ones win only where they fill the GPU). */
static const struct {
    double m, n, rel;
} g_tiles[] = {{256, 128, 1.0}, {128, 128, 0.95}, {128, 64, 0.85}, {64, 64, 0.70}};

/* A simulation asks for the same few shapes once per layer and micro-batch: the last ones are kept
 * (direct-mapped on the shape; the device's figures are part of the key). */
#define EFF_CACHE 64
static struct {
    double m, n, k, batch, max_eff, k_half;
    int sms;
    double eff;
} g_eff_cache[EFF_CACHE];

static double shape_efficiency(const zp_profile_device *d, double m, double n, double k, double batch);

double zp_profile_gemm_shape_efficiency(const zp_profile *p, double m, double n, double k, double batch)
{
    const zp_profile_device *d = &p->dev;
    if (d->sms <= 0 || !(m > 0 && n > 0 && k > 0))
        return 0;
    if (!(batch >= 1))
        batch = 1;
    uint64_t bm, bn, bk, bb; /* the doubles' bits: any value, no conversion */
    memcpy(&bm, &m, sizeof bm);
    memcpy(&bn, &n, sizeof bn);
    memcpy(&bk, &k, sizeof bk);
    memcpy(&bb, &batch, sizeof bb);
    const uint64_t h = (bm * 0x9E3779B97F4A7C15ull) ^ (bn * 0xC2B2AE3D27D4EB4Full) ^ (bk * 0x165667B19E3779F9ull) ^
                       (bb * 0x27D4EB2F165667C5ull);
    const size_t slot = (size_t)(h >> 58) % EFF_CACHE;
    if (g_eff_cache[slot].m == m && g_eff_cache[slot].n == n && g_eff_cache[slot].k == k &&
        g_eff_cache[slot].batch == batch && g_eff_cache[slot].sms == d->sms &&
        g_eff_cache[slot].max_eff == d->gemm_max_eff &&
        g_eff_cache[slot].k_half == d->k_half)
        return g_eff_cache[slot].eff;
    const double e = shape_efficiency(d, m, n, k, batch);
    g_eff_cache[slot].m = m;
    g_eff_cache[slot].n = n;
    g_eff_cache[slot].k = k;
    g_eff_cache[slot].batch = batch;
    g_eff_cache[slot].sms = d->sms;
    g_eff_cache[slot].max_eff = d->gemm_max_eff;
    g_eff_cache[slot].k_half = d->k_half;
    g_eff_cache[slot].eff = e;
    return e;
}

static double shape_efficiency(const zp_profile_device *d, double m, double n, double k, double batch)
{
    double best = 0;
    for (size_t i = 0; i < sizeof g_tiles / sizeof g_tiles[0]; i++) {
        const double tm = ceil(m / g_tiles[i].m), tn = ceil(n / g_tiles[i].n);
        const double tiles = tm * tn * batch;
        const double tile_q = m * n / (tm * g_tiles[i].m * tn * g_tiles[i].n); /* padding of the last tiles */
        const double waves = ceil(tiles / d->sms), wave_q = tiles / (waves * d->sms); /* the last wave's idle SMs */
        const double e = g_tiles[i].rel * tile_q * wave_q;
        if (e > best)
            best = e;
    }
    return d->gemm_max_eff * best * k / (k + d->k_half);
}

double zp_profile_gemm_peak(const zp_profile *p)
{
    const double typed = zp_profile_peak_flops(p, p->gemm_dtype);
    return typed > 0 ? typed : p->peak_flops_fp16 > 0 ? p->peak_flops_fp16 : 1e12;
}

/* The device model: the larger of the tensor cores' time at the shape's efficiency and the operands' and
 * result's 16-bit traffic, plus the launch. */
static double gemm_device_time(const zp_profile *p, double m, double n, double k, double batch)
{
    const double peak = zp_profile_gemm_peak(p);
    const double eff = zp_profile_gemm_shape_efficiency(p, m, n, k, batch);
    const double flops = 2.0 * m * n * k * batch, bytes = 2.0 * (m * k + k * n + m * n) * batch;
    const double bw = (p->copy_gbs > 0 ? p->copy_gbs : 100.0) * 1e9;
    return fmax(flops / (peak * eff), bytes / bw) + p->dev.launch_s;
}

double zp_profile_gemm_time_batched(const zp_profile *p, double m, double n, double k, double batch)
{
    if (p->dev.sms > 0)
        return gemm_device_time(p, m, n, k, batch);
    double one = zp_profile_gemm_time(p, m, n, k) - p->gemm_t0_s;
    return p->gemm_t0_s + batch * one;
}

double zp_profile_gemm_time(const zp_profile *p, double m, double n, double k)
{
    /* the measured shapes nearest in log space (insertion into the ZP_PROFILE_GEMM_IDW best) */
    double d[ZP_PROFILE_GEMM_IDW], r[ZP_PROFILE_GEMM_IDW];
    int nb = 0;
    if (m > 0 && n > 0 && k > 0)
        for (int i = 0; i < p->ngemm; i++) {
            const zp_profile_gemm_point *q = &p->gemm[i];
            if (!(q->m > 0 && q->n > 0 && q->k > 0 && q->flops_per_s > 0))
                continue;
            double di = fabs(log(m / q->m)) + fabs(log(n / q->n)) + fabs(log(k / q->k));
            int at = nb < ZP_PROFILE_GEMM_IDW ? nb++ : ZP_PROFILE_GEMM_IDW;
            while (at > 0 && d[at - 1] > di) {
                if (at < ZP_PROFILE_GEMM_IDW)
                    d[at] = d[at - 1], r[at] = r[at - 1];
                at--;
            }
            if (at < ZP_PROFILE_GEMM_IDW)
                d[at] = di, r[at] = q->flops_per_s;
        }
    if (nb == 0 || !(d[0] <= ZP_PROFILE_GEMM_NEAR))
        return p->dev.sms > 0 ? gemm_device_time(p, m, n, k, 1) : zp_profile_gemm_fit_time(p, m, n, k);
    double rate = r[0];
    if (d[0] > 1e-9) {
        double sw = 0, sl = 0;
        for (int i = 0; i < nb && d[i] <= 2.0 * ZP_PROFILE_GEMM_NEAR; i++) {
            double w = 1.0 / (d[i] * d[i]);
            sw += w;
            sl += w * log(r[i]);
        }
        rate = exp(sl / sw);
    }
    return 2.0 * m * n * k / rate;
}

double zp_profile_peak_flops(const zp_profile *p, const char *dtype)
{
    if (!dtype)
        return 0;
    if (strcmp(dtype, "fp32") == 0)
        return p->peak_flops_fp32;
    if (strcmp(dtype, "fp16") == 0)
        return p->peak_flops_fp16;
    if (strcmp(dtype, "bf16") == 0)
        return p->peak_flops_bf16;
    return 0;
}

double zp_profile_gemm_efficiency(const zp_profile *p, double m, double n, double k)
{
    double peak = zp_profile_peak_flops(p, p->gemm_dtype);
    double t = zp_profile_gemm_fit_time(p, m, n, k); /* the fit: smooth in the shape */
    double flops = 2.0 * m * n * k;
    if (!(peak > 0) || !(t > 0) || !(flops > 0))
        return 1.0;
    double e = flops / (t * peak);
    if (e > 1.0)
        e = 1.0;
    if (!(e > 1e-9))
        e = 1e-9;
    return e;
}

double zp_profile_collective_time(const zp_profile *p, zp_profile_coll kind, zp_profile_scope scope, double bytes,
                                  int nranks)
{
    if ((unsigned)kind >= ZP_PROFILE_NCOLL || (unsigned)scope >= ZP_PROFILE_NSCOPE)
        return -1;
    const zp_profile_coll_fit *f = &p->coll[kind][scope];
    if (!f->measured || !(f->busbw_gbs > 0) || f->nranks < 2)
        return -1;
    if (nranks <= 1)
        return 0;
    double lat = zp_coll_fit_latency(f->latency_s, f->nranks, nranks);
    return lat + zp_coll_bus_time(bytes, zp_profile_busbw_factor(kind, nranks), f->busbw_gbs);
}

/* Points in increasing size with positive times (the calibration writes them so; checked, not assumed). */
static int points_ordered(const zp_profile_coll_point *q, int n)
{
    for (int i = 1; i < n; i++)
        if (!(q[i].bytes > q[i - 1].bytes) || !(q[i - 1].bytes > 0) || !(q[i - 1].time_s > 0) || !(q[i].time_s > 0))
            return 0;
    return n >= 2;
}

/* The time at `bytes` between ordered points, log-log; the first point's below them, the last's above. */
static double points_time(const zp_profile_coll_point *q, int n, double bytes)
{
    if (bytes <= q[0].bytes)
        return q[0].time_s;
    if (bytes >= q[n - 1].bytes)
        return q[n - 1].time_s;
    int i = 1;
    while (q[i].bytes < bytes)
        i++;
    double x = (log(bytes) - log(q[i - 1].bytes)) / (log(q[i].bytes) - log(q[i - 1].bytes));
    return exp(log(q[i - 1].time_s) + x * (log(q[i].time_s) - log(q[i - 1].time_s)));
}

double zp_profile_collective_time_measured(const zp_profile *p, zp_profile_coll kind, zp_profile_scope scope,
                                           double bytes, int nranks)
{
    double fit = zp_profile_collective_time(p, kind, scope, bytes, nranks);
    if (fit <= 0)
        return fit;
    const zp_profile_coll_fit *f = &p->coll[kind][scope];
    if (f->nranks != nranks || f->npoints < 2 || !points_ordered(f->points, f->npoints))
        return fit;
    const zp_profile_coll_point *q = f->points;
    int last = f->npoints - 1;
    if (bytes >= q[last].bytes)
        return q[last].time_s + zp_coll_bus_time(bytes - q[last].bytes, zp_profile_busbw_factor(kind, nranks),
                                                     f->busbw_gbs);
    return points_time(q, f->npoints, bytes);
}

double zp_profile_collective_time_hot(const zp_profile *p, zp_profile_coll kind, zp_profile_scope scope, double bytes,
                                      int nranks)
{
    if ((unsigned)kind >= ZP_PROFILE_NCOLL || (unsigned)scope >= ZP_PROFILE_NSCOPE)
        return -1;
    const zp_profile_coll_fit *f = &p->coll[kind][scope];
    if (!f->measured || f->nranks != nranks || f->nhot < 2 || !points_ordered(f->hot, f->nhot) ||
        bytes > f->hot[f->nhot - 1].bytes)
        return -1;
    return points_time(f->hot, f->nhot, bytes);
}

static const char *const kernel_names[ZP_PROFILE_NKERNEL] = {
    "layernorm_fwd", "layernorm_bwd", "gelu_fwd",  "gelu_bwd",     "softmax_fwd", "softmax_bwd", "xent_fwd",
    "xent_bwd",      "embed_fwd",     "embed_bwd", "residual_add", "bias_add",    "bias_grad",
    "rmsnorm_fwd",   "rmsnorm_bwd",   "glu_fwd",   "glu_bwd",      "rope_fwd",    "rope_bwd",
    "moe_gather",    "moe_combine",   "moe_combine_bwd"};

const char *zp_profile_kernel_name(zp_profile_kernel k)
{
    return (unsigned)k < ZP_PROFILE_NKERNEL ? kernel_names[k] : "?";
}

double zp_profile_kernel_time(const zp_profile *p, zp_profile_kernel k, double elems)
{
    if ((unsigned)k >= ZP_PROFILE_NKERNEL || !p->kernels[k].measured)
        return -1;
    return p->kernels[k].t0_s + elems * p->kernels[k].s_per_elem;
}

zp_status zp_profile_scale_compute(zp_profile *p, double f)
{
    if (!(f > 0) || !isfinite(f))
        return ZP_FAIL(ZP_EINVAL, "profile: compute scale factor must be a finite number > 0 (got %g)", f);
    p->copy_gbs /= f;
    p->triad_gbs /= f;
    p->peak_flops_fp32 /= f;
    p->peak_flops_fp16 /= f;
    p->peak_flops_bf16 /= f;
    p->adam_params_per_s /= f;
    p->cpu_adam_params_per_s /= f;
    for (int i = 0; i < p->nadam; i++)
        p->adam[i].params_per_s /= f;
    for (int i = 0; i < p->ngemm; i++)
        p->gemm[i].flops_per_s /= f;
    p->gemm_t0_s *= f;
    p->gemm_s_per_flop *= f;
    p->gemm_s_per_byte *= f;
    p->gemm_cold_gbs /= f;
    for (int k = 0; k < ZP_PROFILE_NKERNEL; k++) {
        p->kernels[k].t0_s *= f;
        p->kernels[k].s_per_elem *= f;
    }
    p->dev.launch_s *= f;
    p->dev.dispatch_s *= f;
    p->dev.dispatch_block_s *= f;
    p->dev.coll_dispatch_s *= f;
    p->host_kernel_s *= f;
    p->host_gemm_s *= f;
    return ZP_OK;
}

double zp_profile_adam_time(const zp_profile *p, double n, int cpu)
{
    double rate = cpu ? p->cpu_adam_params_per_s : p->adam_params_per_s;
    if (!(rate > 0))
        return -1;
    /* the device's measured sizes, in increasing order: a partition that stays in cache updates faster than
     * the large ones the fitted rate comes from, so between points the rate is interpolated in log size,
     * below the smallest the smallest's rate, beyond the largest the fit */
    const zp_profile_adam_point *q = p->adam;
    int np = cpu && p->adam_params_per_s != p->cpu_adam_params_per_s ? 0 : p->nadam;
    for (int i = 0; i < np; i++)
        if (!(q[i].n > 0 && q[i].params_per_s > 0) || (i > 0 && !(q[i].n > q[i - 1].n)))
            np = 0;
    if (np >= 2 && n > 0 && n < q[np - 1].n) {
        if (n <= q[0].n)
            return n / q[0].params_per_s;
        int i = 1;
        while (q[i].n < n)
            i++;
        double x = (log(n) - log(q[i - 1].n)) / (log(q[i].n) - log(q[i - 1].n));
        rate = exp(log(q[i - 1].params_per_s) + x * (log(q[i].params_per_s) - log(q[i - 1].params_per_s)));
    }
    return n / rate;
}

/* ---- validation ---- */

static zp_status bad_num(const char *key, double v)
{
    return ZP_FAIL(ZP_EINVAL, "profile: %s must be a finite number >= 0 (got %g)", key, v);
}

#define CHECK_NUM(v, key)                    \
    do {                                     \
        if (!isfinite(v) || (v) < 0)         \
            return bad_num(key, v);          \
    } while (0)

/* A collective's points `what` under `key`: at most ZP_PROFILE_MAX_POINTS, each of finite numbers >= 0. */
static zp_status check_points(const char *key, const char *what, const zp_profile_coll_point *q, int n)
{
    if (n < 0 || n > ZP_PROFILE_MAX_POINTS)
        return ZP_FAIL(ZP_EINVAL, "profile: %s.%s: %d entries (at most %d)", key, what, n, ZP_PROFILE_MAX_POINTS);
    for (int i = 0; i < n; i++)
        if (!isfinite(q[i].bytes) || q[i].bytes < 0 || !isfinite(q[i].time_s) || q[i].time_s < 0 ||
            !isfinite(q[i].spread) || q[i].spread < 0)
            return ZP_FAIL(ZP_EINVAL, "profile: %s.%s[%d] must hold finite numbers >= 0", key, what, i);
    return ZP_OK;
}

zp_status zp_profile_validate(const zp_profile *p)
{
    if (strcmp(p->backend, "cpu") != 0 && strcmp(p->backend, "cuda") != 0)
        return ZP_FAIL(ZP_EINVAL, "profile: backend must be \"cpu\" or \"cuda\" (got \"%s\")", p->backend);
    if (p->machine.cores < 0 || p->machine.gpu_count < 0 || p->machine.nodes < 0 || p->machine.ranks < 0)
        return ZP_FAIL(ZP_EINVAL, "profile: machine counts must be >= 0");
    CHECK_NUM(p->copy_gbs, "memory_bw_gbs.copy");
    CHECK_NUM(p->triad_gbs, "memory_bw_gbs.triad");
    CHECK_NUM(p->h2d_gbs, "host_device_gbs.h2d");
    CHECK_NUM(p->d2h_gbs, "host_device_gbs.d2h");
    CHECK_NUM(p->peak_flops_fp32, "compute.peak_flops_fp32");
    CHECK_NUM(p->peak_flops_fp16, "compute.peak_flops_fp16");
    CHECK_NUM(p->peak_flops_bf16, "compute.peak_flops_bf16");
    CHECK_NUM(p->adam_params_per_s, "adam.params_per_s");
    CHECK_NUM(p->adam_bytes_per_param, "adam.bytes_per_param");
    CHECK_NUM(p->cpu_adam_params_per_s, "adam.cpu_params_per_s");
    if (p->nadam < 0 || p->nadam > ZP_PROFILE_MAX_ADAM)
        return ZP_FAIL(ZP_EINVAL, "profile: adam.points: %d entries (at most %d)", p->nadam, ZP_PROFILE_MAX_ADAM);
    for (int i = 0; i < p->nadam; i++) {
        CHECK_NUM(p->adam[i].n, "adam.points[].n");
        CHECK_NUM(p->adam[i].params_per_s, "adam.points[].params_per_s");
        CHECK_NUM(p->adam[i].spread, "adam.points[].spread");
    }
    if (p->ngemm < 1 || p->ngemm > ZP_PROFILE_MAX_GEMM)
        return ZP_FAIL(ZP_EINVAL, "profile: gemm: %d points (need 1 to %d)", p->ngemm, ZP_PROFILE_MAX_GEMM);
    for (int i = 0; i < p->ngemm; i++) {
        const zp_profile_gemm_point *g = &p->gemm[i];
        CHECK_NUM(g->m, "gemm[].m");
        CHECK_NUM(g->n, "gemm[].n");
        CHECK_NUM(g->k, "gemm[].k");
        CHECK_NUM(g->flops_per_s, "gemm[].flops_per_s");
        CHECK_NUM(g->spread, "gemm[].spread");
    }
    if (strcmp(p->gemm_dtype, "fp32") != 0 && strcmp(p->gemm_dtype, "fp16") != 0 && strcmp(p->gemm_dtype, "bf16") != 0)
        return ZP_FAIL(ZP_EINVAL, "profile: gemm_model.dtype must be fp32, fp16 or bf16 (got \"%s\")", p->gemm_dtype);
    CHECK_NUM(p->gemm_t0_s, "gemm_model.t0_s");
    CHECK_NUM(p->gemm_s_per_flop, "gemm_model.s_per_flop");
    CHECK_NUM(p->gemm_s_per_byte, "gemm_model.s_per_byte");
    CHECK_NUM(p->gemm_cold_gbs, "gemm_model.cold_gbs");
    CHECK_NUM(p->gemm_residual, "gemm_model.residual");
    for (int k = 0; k < ZP_PROFILE_NKERNEL; k++) {
        const zp_profile_kernel_fit *f = &p->kernels[k];
        if (!f->measured)
            continue;
        if (!isfinite(f->t0_s) || f->t0_s < 0 || !isfinite(f->s_per_elem) || f->s_per_elem < 0 ||
            !isfinite(f->elems) || f->elems < 0)
            return ZP_FAIL(ZP_EINVAL, "profile: layer_kernels.%s must hold finite numbers >= 0", kernel_names[k]);
    }
    if (p->dev.sms < 0 || p->dev.sms > 100000)
        return ZP_FAIL(ZP_EINVAL, "profile: device_model.sms must be 0 to 100000 (got %d)", p->dev.sms);
    if (p->dev.sms > 0 && !(p->dev.gemm_max_eff > 0 && p->dev.gemm_max_eff <= 1))
        return ZP_FAIL(ZP_EINVAL, "profile: device_model.gemm_max_efficiency must be in (0, 1] (got %g)",
                       p->dev.gemm_max_eff);
    CHECK_NUM(p->dev.k_half, "device_model.k_half");
    CHECK_NUM(p->dev.launch_s, "device_model.launch_s");
    CHECK_NUM(p->dev.dispatch_s, "device_model.dispatch_s");
    CHECK_NUM(p->dev.nccl_ll_base_s, "device_model.nccl_ll_base_s");
    CHECK_NUM(p->dev.nccl_ll_hop_s, "device_model.nccl_ll_hop_s");
    CHECK_NUM(p->dev.flash_seq_half, "device_model.flash_seq_half");
    if (!(p->dev.flash_eff >= 0 && p->dev.flash_eff <= 1))
        return ZP_FAIL(ZP_EINVAL, "profile: device_model.flash_efficiency must be in [0, 1] (got %g)", p->dev.flash_eff);
    if (p->dev.nccl_ctas < 0 || (p->dev.nccl_ctas > 0 && p->dev.nccl_ctas >= p->dev.sms))
        return ZP_FAIL(ZP_EINVAL, "profile: device_model.nccl_ctas must be 0 to sms - 1 = %d (got %d)",
                       p->dev.sms > 0 ? p->dev.sms - 1 : 0, p->dev.nccl_ctas);
    CHECK_NUM(p->nvme_read_gbs, "nvme_gbs.read");
    CHECK_NUM(p->nvme_write_gbs, "nvme_gbs.write");
    CHECK_NUM(p->host_kernel_s, "host_calls.kernel_s");
    CHECK_NUM(p->host_gemm_s, "host_calls.gemm_s");
    for (int c = 0; c < ZP_PROFILE_NCOLL; c++)
        for (int s = 0; s < ZP_PROFILE_NSCOPE; s++) {
            const zp_profile_coll_fit *f = &p->coll[c][s];
            if (!f->measured)
                continue;
            char key[96];
            snprintf(key, sizeof key, "collectives.%s.%s", zp_coll_name((zp_coll_kind)c), scope_names[s]);
            if (f->nranks < 2)
                return ZP_FAIL(ZP_EINVAL, "profile: %s.nranks must be >= 2 (got %d)", key, f->nranks);
            if (!isfinite(f->latency_s) || f->latency_s < 0)
                return ZP_FAIL(ZP_EINVAL, "profile: %s.latency_s must be a finite number >= 0", key);
            if (!isfinite(f->busbw_gbs) || f->busbw_gbs <= 0)
                return ZP_FAIL(ZP_EINVAL, "profile: %s.busbw_gbs must be a finite number > 0", key);
            if (!isfinite(f->residual) || f->residual < 0)
                return ZP_FAIL(ZP_EINVAL, "profile: %s.residual must be a finite number >= 0", key);
            ZP_TRY(check_points(key, "points", f->points, f->npoints));
            ZP_TRY(check_points(key, "hot_points", f->hot, f->nhot));
        }
    return ZP_OK;
}

/* ---- reading ---- */

typedef struct {
    const char *name; /* file name for messages */
} rd;

static zp_status need(const rd *r, json_t *obj, const char *parent, const char *key, json_t **out)
{
    json_t *v = json_object_get(obj, key);
    if (!v)
        return ZP_FAIL(ZP_EINVAL, "profile '%s': missing key '%s%s%s'", r->name, parent, *parent ? "." : "", key);
    *out = v;
    return ZP_OK;
}

static zp_status need_object(const rd *r, json_t *obj, const char *parent, const char *key, json_t **out)
{
    ZP_TRY(need(r, obj, parent, key, out));
    if (!json_is_object(*out))
        return ZP_FAIL(ZP_EINVAL, "profile '%s': '%s%s%s' must be an object", r->name, parent, *parent ? "." : "",
                       key);
    return ZP_OK;
}

/* The first key of `obj` that is none of names[0..n) (NULL: all are), with the names as "a, b, c" in `list`
 * for the message that refuses it. */
static const char *unknown_key(json_t *obj, const char *const *names, int n, char *list, size_t len)
{
    const char *key;
    json_t *val;
    json_object_foreach(obj, key, val) {
        int known = 0;
        for (int i = 0; i < n && !known; i++)
            known = strcmp(key, names[i]) == 0;
        if (known)
            continue;
        list[0] = '\0';
        for (int i = 0; i < n; i++)
            snprintf(list + strlen(list), len - strlen(list), "%s%s", i ? ", " : "", names[i]);
        return key;
    }
    return NULL;
}

/* An object's keys must all be ones zplan reads: a misspelled key (e.g. device_model.nccl_channels) would
 * otherwise be dropped silently and the answer computed from the preset's figure instead. names: NULL-ended. */
static zp_status only_keys(const rd *r, json_t *obj, const char *parent, const char *const *names)
{
    int n = 0;
    while (names[n])
        n++;
    char list[384];
    const char *key = unknown_key(obj, names, n, list, sizeof list);
    if (key)
        return ZP_FAIL(ZP_EINVAL, "profile '%s': unknown key '%s%s%s' (zplan reads %s %s%s); remove or correct it",
                       r->name, parent, *parent ? "." : "", key, list, *parent ? "in " : "at the top level", parent);
    return ZP_OK;
}

static zp_status get_num(const rd *r, json_t *obj, const char *parent, const char *key, double *out)
{
    json_t *v = NULL;
    ZP_TRY(need(r, obj, parent, key, &v));
    if (!json_is_number(v))
        return ZP_FAIL(ZP_EINVAL, "profile '%s': '%s%s%s' must be a number", r->name, parent, *parent ? "." : "", key);
    double x = json_number_value(v);
    if (!isfinite(x) || x < 0)
        return ZP_FAIL(ZP_EINVAL, "profile '%s': '%s%s%s' must be a finite number >= 0 (got %g)", r->name, parent,
                       *parent ? "." : "", key, x);
    *out = x;
    return ZP_OK;
}

static zp_status get_int(const rd *r, json_t *obj, const char *parent, const char *key, int *out)
{
    double x;
    ZP_TRY(get_num(r, obj, parent, key, &x));
    if (x != floor(x) || x > 1e9)
        return ZP_FAIL(ZP_EINVAL, "profile '%s': '%s%s%s' must be a whole number (got %g)", r->name, parent,
                       *parent ? "." : "", key, x);
    *out = (int)x;
    return ZP_OK;
}

static zp_status get_str(const rd *r, json_t *obj, const char *parent, const char *key, char *buf, size_t len)
{
    json_t *v = NULL;
    ZP_TRY(need(r, obj, parent, key, &v));
    if (!json_is_string(v))
        return ZP_FAIL(ZP_EINVAL, "profile '%s': '%s%s%s' must be a string", r->name, parent, *parent ? "." : "", key);
    /* Keep what fits, cut at a UTF-8 character boundary: the profile must stay writable (jansson refuses
     * invalid UTF-8 when it is written back). */
    const char *s = json_string_value(v);
    size_t n = strlen(s);
    if (n >= len) {
        n = len - 1;
        while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
            n--; /* s[n] is a continuation byte: the character starting before it does not fit */
    }
    memcpy(buf, s, n);
    buf[n] = '\0';
    return ZP_OK;
}

static zp_status get_array(const rd *r, json_t *obj, const char *parent, const char *key, size_t max, json_t **out)
{
    ZP_TRY(need(r, obj, parent, key, out));
    if (!json_is_array(*out))
        return ZP_FAIL(ZP_EINVAL, "profile '%s': '%s%s%s' must be an array", r->name, parent, *parent ? "." : "", key);
    if (json_array_size(*out) > max)
        return ZP_FAIL(ZP_EINVAL, "profile '%s': '%s%s%s' has %zu entries (at most %zu)", r->name, parent,
                       *parent ? "." : "", key, json_array_size(*out), max);
    return ZP_OK;
}

static zp_status element_object(const rd *r, json_t *arr, size_t i, const char *path, json_t **out)
{
    *out = json_array_get(arr, i);
    if (!json_is_object(*out))
        return ZP_FAIL(ZP_EINVAL, "profile '%s': '%s[%zu]' must be an object", r->name, path, i);
    return ZP_OK;
}

static zp_status read_machine(const rd *r, json_t *root, zp_profile_machine *m)
{
    json_t *o = NULL, *lib = NULL;
    ZP_TRY(need_object(r, root, "", "machine", &o));
    ZP_TRY(get_str(r, o, "machine", "cpu_model", m->cpu_model, sizeof m->cpu_model));
    ZP_TRY(get_int(r, o, "machine", "cores", &m->cores));
    ZP_TRY(get_str(r, o, "machine", "gpu", m->gpu, sizeof m->gpu));
    ZP_TRY(get_int(r, o, "machine", "gpu_count", &m->gpu_count));
    ZP_TRY(get_int(r, o, "machine", "nodes", &m->nodes));
    ZP_TRY(get_int(r, o, "machine", "ranks", &m->ranks));
    ZP_TRY(get_str(r, o, "machine", "hostname", m->hostname, sizeof m->hostname));
    ZP_TRY(get_str(r, o, "machine", "measured_at", m->measured_at, sizeof m->measured_at));
    ZP_TRY(get_str(r, o, "machine", "zplan_version", m->zplan_version, sizeof m->zplan_version));
    json_t *w = json_object_get(o, "while_calibrating");
    if (w) {
        if (!json_is_object(w))
            return ZP_FAIL(ZP_EINVAL, "profile '%s': 'machine.while_calibrating' must be an object", r->name);
        ZP_TRY(get_num(r, w, "machine.while_calibrating", "others_cores", &m->others_cores));
        ZP_TRY(get_num(r, w, "machine.while_calibrating", "load_1min", &m->load1));
        m->watched = 1;
    }
    json_t *pr = json_object_get(o, "probe");
    if (pr) {
        if (!json_is_object(pr))
            return ZP_FAIL(ZP_EINVAL, "profile '%s': 'machine.probe' must be an object", r->name);
        ZP_TRY(only_keys(r, pr, "machine.probe", (const char *const[]){"s", "drift", "sync", NULL}));
        ZP_TRY(get_num(r, pr, "machine.probe", "s", &m->probe_s));
        ZP_TRY(get_num(r, pr, "machine.probe", "drift", &m->probe_drift));
        if (json_object_get(pr, "sync")) {
            ZP_TRY(get_num(r, pr, "machine.probe", "sync", &m->probe_sync));
            if (!(m->probe_sync >= 0 && m->probe_sync < 1))
                return ZP_FAIL(ZP_EINVAL, "profile '%s': 'machine.probe.sync' must be in [0, 1) (got %g)", r->name,
                               m->probe_sync);
        }
        if (!(m->probe_s > 0) || !(m->probe_drift >= 0) || !isfinite(m->probe_s) || !isfinite(m->probe_drift))
            return ZP_FAIL(ZP_EINVAL, "profile '%s': 'machine.probe' needs s > 0 and drift >= 0 (got %g, %g)",
                           r->name, m->probe_s, m->probe_drift);
    }
    ZP_TRY(need_object(r, o, "machine", "libraries", &lib));
    ZP_TRY(get_str(r, lib, "machine.libraries", "blas", m->blas, sizeof m->blas));
    ZP_TRY(get_str(r, lib, "machine.libraries", "mpi", m->mpi, sizeof m->mpi));
    ZP_TRY(get_str(r, lib, "machine.libraries", "cuda", m->cuda, sizeof m->cuda));
    ZP_TRY(get_str(r, lib, "machine.libraries", "nccl", m->nccl, sizeof m->nccl));
    return ZP_OK;
}

/* A collective's array `key` of points ({bytes, time_s, spread}, at most ZP_PROFILE_MAX_POINTS) in scope object
 * sc at `path`, into q[*n]. */
static zp_status read_points(const rd *r, json_t *sc, const char *path, const char *key, zp_profile_coll_point *q,
                             int *n)
{
    json_t *pts = NULL;
    ZP_TRY(get_array(r, sc, path, key, ZP_PROFILE_MAX_POINTS, &pts));
    *n = (int)json_array_size(pts);
    char ppath[128];
    snprintf(ppath, sizeof ppath, "%s.%s", path, key);
    for (int i = 0; i < *n; i++) {
        json_t *e = NULL;
        ZP_TRY(element_object(r, pts, (size_t)i, ppath, &e));
        char epath[160];
        snprintf(epath, sizeof epath, "%s[%d]", ppath, i);
        ZP_TRY(get_num(r, e, epath, "bytes", &q[i].bytes));
        ZP_TRY(get_num(r, e, epath, "time_s", &q[i].time_s));
        ZP_TRY(get_num(r, e, epath, "spread", &q[i].spread));
    }
    return ZP_OK;
}

static zp_status read_collectives(const rd *r, json_t *root, zp_profile *p)
{
    json_t *colls = NULL;
    ZP_TRY(need_object(r, root, "", "collectives", &colls));
    for (int c = 0; c < ZP_PROFILE_NCOLL; c++) {
        json_t *kind = NULL;
        ZP_TRY(need_object(r, colls, "collectives", zp_coll_name((zp_coll_kind)c), &kind));
        for (int s = 0; s < ZP_PROFILE_NSCOPE; s++) {
            json_t *sc = json_object_get(kind, scope_names[s]);
            zp_profile_coll_fit *f = &p->coll[c][s];
            if (!sc)
                continue;
            char path[96];
            snprintf(path, sizeof path, "collectives.%s.%s", zp_coll_name((zp_coll_kind)c), scope_names[s]);
            if (!json_is_object(sc))
                return ZP_FAIL(ZP_EINVAL, "profile '%s': '%s' must be an object", r->name, path);
            f->measured = 1;
            ZP_TRY(get_int(r, sc, path, "nranks", &f->nranks));
            if (f->nranks < 2)
                return ZP_FAIL(ZP_EINVAL, "profile '%s': '%s.nranks' must be >= 2 (got %d)", r->name, path,
                               f->nranks);
            ZP_TRY(get_num(r, sc, path, "latency_s", &f->latency_s));
            ZP_TRY(get_num(r, sc, path, "busbw_gbs", &f->busbw_gbs));
            if (!(f->busbw_gbs > 0))
                return ZP_FAIL(ZP_EINVAL, "profile '%s': '%s.busbw_gbs' must be > 0", r->name, path);
            ZP_TRY(get_num(r, sc, path, "residual", &f->residual));
            ZP_TRY(read_points(r, sc, path, "points", f->points, &f->npoints));
            if (json_object_get(sc, "hot_points"))
                ZP_TRY(read_points(r, sc, path, "hot_points", f->hot, &f->nhot));
        }
    }
    return ZP_OK;
}

/* "layer_kernels": optional, and so is each kernel in it; a kernel that is there must be complete. */
static zp_status read_kernels(const rd *r, json_t *root, zp_profile *p)
{
    json_t *o = json_object_get(root, "layer_kernels");
    if (!o)
        return ZP_OK;
    if (!json_is_object(o))
        return ZP_FAIL(ZP_EINVAL, "profile '%s': layer_kernels must be an object", r->name);
    /* a kernel the cost model does not know would be silently unused: refused, naming it */
    char list[256];
    const char *key = unknown_key(o, kernel_names, ZP_PROFILE_NKERNEL, list, sizeof list);
    if (key)
        return ZP_FAIL(ZP_EINVAL, "profile '%s': layer_kernels.%s is not a kernel zplan knows (%s)", r->name, key,
                       list);
    for (int k = 0; k < ZP_PROFILE_NKERNEL; k++) {
        json_t *e = json_object_get(o, kernel_names[k]);
        if (!e)
            continue;
        char path[64];
        snprintf(path, sizeof path, "layer_kernels.%s", kernel_names[k]);
        if (!json_is_object(e))
            return ZP_FAIL(ZP_EINVAL, "profile '%s': %s must be an object", r->name, path);
        zp_profile_kernel_fit *f = &p->kernels[k];
        ZP_TRY(get_num(r, e, path, "t0_s", &f->t0_s));
        ZP_TRY(get_num(r, e, path, "s_per_elem", &f->s_per_elem));
        ZP_TRY(get_num(r, e, path, "elems", &f->elems));
        f->measured = 1;
    }
    return ZP_OK;
}

/* "device_model", "nvme_gbs" and "host_calls": optional; complete when there. */
static zp_status read_device(const rd *r, json_t *root, zp_profile *p)
{
    json_t *o = json_object_get(root, "device_model");
    if (o) {
        if (!json_is_object(o))
            return ZP_FAIL(ZP_EINVAL, "profile '%s': device_model must be an object", r->name);
        static const char *const dev_keys[] = {"sms", "gemm_max_efficiency", "k_half", "launch_s", "dispatch_s",
                                               "unfused_kernels", "flash_efficiency", "flash_seq_half", "nccl_ctas",
                                               "nccl_ll_base_s", "nccl_ll_hop_s", NULL};
        ZP_TRY(only_keys(r, o, "device_model", dev_keys));
        ZP_TRY(get_int(r, o, "device_model", "sms", &p->dev.sms));
        ZP_TRY(get_num(r, o, "device_model", "gemm_max_efficiency", &p->dev.gemm_max_eff));
        ZP_TRY(get_num(r, o, "device_model", "k_half", &p->dev.k_half));
        ZP_TRY(get_num(r, o, "device_model", "launch_s", &p->dev.launch_s));
        ZP_TRY(get_num(r, o, "device_model", "dispatch_s", &p->dev.dispatch_s));
        json_t *u = json_object_get(o, "unfused_kernels");
        if (u && !json_is_boolean(u))
            return ZP_FAIL(ZP_EINVAL, "profile '%s': device_model.unfused_kernels must be true or false", r->name);
        p->dev.unfused_kernels = u && json_is_true(u);
        if (json_object_get(o, "flash_efficiency"))
            ZP_TRY(get_num(r, o, "device_model", "flash_efficiency", &p->dev.flash_eff));
        if (json_object_get(o, "flash_seq_half"))
            ZP_TRY(get_num(r, o, "device_model", "flash_seq_half", &p->dev.flash_seq_half));
        if (json_object_get(o, "nccl_ctas"))
            ZP_TRY(get_int(r, o, "device_model", "nccl_ctas", &p->dev.nccl_ctas));
        if (json_object_get(o, "nccl_ll_base_s"))
            ZP_TRY(get_num(r, o, "device_model", "nccl_ll_base_s", &p->dev.nccl_ll_base_s));
        if (json_object_get(o, "nccl_ll_hop_s"))
            ZP_TRY(get_num(r, o, "device_model", "nccl_ll_hop_s", &p->dev.nccl_ll_hop_s));
    }
    o = json_object_get(root, "nvme_gbs");
    if (o) {
        if (!json_is_object(o))
            return ZP_FAIL(ZP_EINVAL, "profile '%s': nvme_gbs must be an object", r->name);
        static const char *const nvme_keys[] = {"read", "write", NULL};
        ZP_TRY(only_keys(r, o, "nvme_gbs", nvme_keys));
        ZP_TRY(get_num(r, o, "nvme_gbs", "read", &p->nvme_read_gbs));
        ZP_TRY(get_num(r, o, "nvme_gbs", "write", &p->nvme_write_gbs));
    }
    o = json_object_get(root, "host_calls");
    if (o) {
        if (!json_is_object(o))
            return ZP_FAIL(ZP_EINVAL, "profile '%s': host_calls must be an object", r->name);
        static const char *const host_keys[] = {"kernel_s", "gemm_s", NULL};
        ZP_TRY(only_keys(r, o, "host_calls", host_keys));
        ZP_TRY(get_num(r, o, "host_calls", "kernel_s", &p->host_kernel_s));
        ZP_TRY(get_num(r, o, "host_calls", "gemm_s", &p->host_gemm_s));
    }
    return ZP_OK;
}

/* The header: an object of format ZP_PROFILE_FORMAT, version ZP_PROFILE_VERSION, only the keys a profile has;
 * "machine" and "backend" (cpu or cuda). */
static zp_status read_header(const rd *r, json_t *root, zp_profile *p)
{
    if (!json_is_object(root))
        return ZP_FAIL(ZP_EINVAL, "profile '%s': the top level must be an object", r->name);
    char fmt[32];
    int version = 0;
    ZP_TRY(get_str(r, root, "", "format", fmt, sizeof fmt));
    if (strcmp(fmt, ZP_PROFILE_FORMAT) != 0)
        return ZP_FAIL(ZP_EINVAL, "profile '%s': 'format' must be \"%s\" (got \"%s\")", r->name, ZP_PROFILE_FORMAT,
                       fmt);
    ZP_TRY(get_int(r, root, "", "version", &version));
    if (version != ZP_PROFILE_VERSION)
        return ZP_FAIL(ZP_EINVAL, "profile '%s': 'version' %d is not supported (this zplan reads %d)", r->name,
                       version, ZP_PROFILE_VERSION);
    static const char *const root_keys[] = {"format", "version", "machine", "backend", "memory_bw_gbs",
                                            "host_device_gbs", "compute", "adam", "gemm", "gemm_model",
                                            "collectives", "layer_kernels", "device_model", "nvme_gbs", "host_calls", NULL};
    ZP_TRY(only_keys(r, root, "", root_keys));
    ZP_TRY(read_machine(r, root, &p->machine));
    ZP_TRY(get_str(r, root, "", "backend", p->backend, sizeof p->backend));
    if (strcmp(p->backend, "cpu") != 0 && strcmp(p->backend, "cuda") != 0)
        return ZP_FAIL(ZP_EINVAL, "profile '%s': 'backend' must be \"cpu\" or \"cuda\" (got \"%s\")", r->name,
                       p->backend);
    return ZP_OK;
}

/* "memory_bw_gbs", "host_device_gbs" (GB/s) and "compute" (peak FLOP/s per precision). */
static zp_status read_rates(const rd *r, json_t *root, zp_profile *p)
{
    json_t *o = NULL;
    ZP_TRY(need_object(r, root, "", "memory_bw_gbs", &o));
    ZP_TRY(only_keys(r, o, "memory_bw_gbs", (const char *const[]){"copy", "triad", NULL}));
    ZP_TRY(get_num(r, o, "memory_bw_gbs", "copy", &p->copy_gbs));
    ZP_TRY(get_num(r, o, "memory_bw_gbs", "triad", &p->triad_gbs));
    ZP_TRY(need_object(r, root, "", "host_device_gbs", &o));
    ZP_TRY(only_keys(r, o, "host_device_gbs", (const char *const[]){"h2d", "d2h", NULL}));
    ZP_TRY(get_num(r, o, "host_device_gbs", "h2d", &p->h2d_gbs));
    ZP_TRY(get_num(r, o, "host_device_gbs", "d2h", &p->d2h_gbs));
    ZP_TRY(need_object(r, root, "", "compute", &o));
    ZP_TRY(only_keys(r, o, "compute",
                     (const char *const[]){"peak_flops_fp32", "peak_flops_fp16", "peak_flops_bf16", NULL}));
    ZP_TRY(get_num(r, o, "compute", "peak_flops_fp32", &p->peak_flops_fp32));
    ZP_TRY(get_num(r, o, "compute", "peak_flops_fp16", &p->peak_flops_fp16));
    ZP_TRY(get_num(r, o, "compute", "peak_flops_bf16", &p->peak_flops_bf16));
    return ZP_OK;
}

/* "adam": the fused Adam's rates (parameters/s, bytes per parameter, the host's) and its measured points. */
static zp_status read_adam(const rd *r, json_t *root, zp_profile *p)
{
    json_t *o = NULL;
    ZP_TRY(need_object(r, root, "", "adam", &o));
    ZP_TRY(only_keys(r, o, "adam",
                     (const char *const[]){"params_per_s", "bytes_per_param", "cpu_params_per_s", "points", NULL}));
    ZP_TRY(get_num(r, o, "adam", "params_per_s", &p->adam_params_per_s));
    ZP_TRY(get_num(r, o, "adam", "bytes_per_param", &p->adam_bytes_per_param));
    ZP_TRY(get_num(r, o, "adam", "cpu_params_per_s", &p->cpu_adam_params_per_s));
    json_t *arr = NULL;
    ZP_TRY(get_array(r, o, "adam", "points", ZP_PROFILE_MAX_ADAM, &arr));
    p->nadam = (int)json_array_size(arr);
    for (int i = 0; i < p->nadam; i++) {
        json_t *e = NULL;
        char path[48];
        snprintf(path, sizeof path, "adam.points[%d]", i);
        ZP_TRY(element_object(r, arr, (size_t)i, "adam.points", &e));
        ZP_TRY(get_num(r, e, path, "n", &p->adam[i].n));
        ZP_TRY(get_num(r, e, path, "params_per_s", &p->adam[i].params_per_s));
        ZP_TRY(get_num(r, e, path, "spread", &p->adam[i].spread));
    }
    return ZP_OK;
}

/* "gemm" (at least one measured shape, flop/s each) and "gemm_model" (the fit: t0 s + s/flop + s/byte). */
static zp_status read_gemm(const rd *r, json_t *root, zp_profile *p)
{
    json_t *arr = NULL, *o = NULL;
    ZP_TRY(get_array(r, root, "", "gemm", ZP_PROFILE_MAX_GEMM, &arr));
    p->ngemm = (int)json_array_size(arr);
    if (p->ngemm < 1)
        return ZP_FAIL(ZP_EINVAL, "profile '%s': 'gemm' must hold at least one measured shape", r->name);
    for (int i = 0; i < p->ngemm; i++) {
        json_t *e = NULL;
        char path[32];
        snprintf(path, sizeof path, "gemm[%d]", i);
        ZP_TRY(element_object(r, arr, (size_t)i, "gemm", &e));
        ZP_TRY(get_num(r, e, path, "m", &p->gemm[i].m));
        ZP_TRY(get_num(r, e, path, "n", &p->gemm[i].n));
        ZP_TRY(get_num(r, e, path, "k", &p->gemm[i].k));
        ZP_TRY(get_num(r, e, path, "flops_per_s", &p->gemm[i].flops_per_s));
        ZP_TRY(get_num(r, e, path, "spread", &p->gemm[i].spread));
    }
    ZP_TRY(need_object(r, root, "", "gemm_model", &o));
    ZP_TRY(only_keys(r, o, "gemm_model",
                     (const char *const[]){"dtype", "t0_s", "s_per_flop", "s_per_byte", "residual", "cold_gbs",
                                           NULL}));
    ZP_TRY(get_str(r, o, "gemm_model", "dtype", p->gemm_dtype, sizeof p->gemm_dtype));
    ZP_TRY(get_num(r, o, "gemm_model", "t0_s", &p->gemm_t0_s));
    ZP_TRY(get_num(r, o, "gemm_model", "s_per_flop", &p->gemm_s_per_flop));
    ZP_TRY(get_num(r, o, "gemm_model", "s_per_byte", &p->gemm_s_per_byte));
    ZP_TRY(get_num(r, o, "gemm_model", "residual", &p->gemm_residual));
    if (json_object_get(o, "cold_gbs"))
        ZP_TRY(get_num(r, o, "gemm_model", "cold_gbs", &p->gemm_cold_gbs));
    return ZP_OK;
}

static zp_status read_root(const rd *r, json_t *root, zp_profile *p)
{
    ZP_TRY(read_header(r, root, p));
    ZP_TRY(read_rates(r, root, p));
    ZP_TRY(read_adam(r, root, p));
    ZP_TRY(read_gemm(r, root, p));
    ZP_TRY(read_collectives(r, root, p));
    ZP_TRY(read_kernels(r, root, p));
    ZP_TRY(read_device(r, root, p));
    zp_status st = zp_profile_validate(p);
    if (st != ZP_OK) {
        char msg[512];
        snprintf(msg, sizeof msg, "%s", zp_error_message());
        return ZP_FAIL(st, "profile '%s': %s", r->name, msg);
    }
    return ZP_OK;
}

zp_status zp_profile_parse(const char *text, size_t len, const char *name, zp_profile *out)
{
    if (!text || !out)
        return ZP_FAIL(ZP_EINVAL, "profile: NULL argument");
    rd r = {.name = name ? name : "<string>"};
    json_error_t err;
    /* JSON_DISABLE_EOF_CHECK off: trailing garbage is an error; NaN/Infinity are not JSON. */
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &err);
    if (!root)
        return ZP_FAIL(ZP_EINVAL, "profile '%s': invalid JSON at line %d column %d: %s", r.name, err.line, err.column,
                       err.text);
    zp_profile p;
    zp_profile_init(&p);
    zp_status st = read_root(&r, root, &p);
    json_decref(root);
    if (st == ZP_OK)
        *out = p;
    return st;
}

zp_status zp_profile_read(const char *path, zp_profile *out)
{
    char *text = NULL;
    size_t len = 0;
    ZP_TRY(zp_io_read_file(path, MAX_PROFILE_BYTES, &text, &len));
    zp_status st = zp_profile_parse(text, len, path, out);
    free(text);
    return st;
}

/* ---- writing ---- */

static int put(json_t *o, const char *key, json_t *v) { return v ? json_object_set_new(o, key, v) : -1; }

/* The writers of to_json, one per part: each adds its keys to root in the order a profile lists them and
 * returns nonzero when one could not be made (out of memory). */

/* "machine": where and with what the profile was measured. */
static int put_machine(json_t *root, const zp_profile *p)
{
    int bad = 0;
    const zp_profile_machine *m = &p->machine;
    json_t *mach = json_object(), *lib = json_object();
    bad |= put(mach, "cpu_model", json_string(m->cpu_model));
    bad |= put(mach, "cores", json_integer(m->cores));
    bad |= put(mach, "gpu", json_string(m->gpu));
    bad |= put(mach, "gpu_count", json_integer(m->gpu_count));
    bad |= put(mach, "nodes", json_integer(m->nodes));
    bad |= put(mach, "ranks", json_integer(m->ranks));
    bad |= put(mach, "hostname", json_string(m->hostname));
    bad |= put(mach, "measured_at", json_string(m->measured_at));
    bad |= put(mach, "zplan_version", json_string(m->zplan_version));
    if (m->watched)
        bad |= put(mach, "while_calibrating",
                   json_pack("{s:f, s:f}", "others_cores", m->others_cores, "load_1min", m->load1));
    if (m->probe_s > 0)
        bad |= put(mach, "probe", m->probe_sync > 0 ? json_pack("{s:f, s:f, s:f}", "s", m->probe_s, "drift",
                                                                 m->probe_drift, "sync", m->probe_sync)
                                                     : json_pack("{s:f, s:f}", "s", m->probe_s, "drift", m->probe_drift));
    bad |= put(lib, "blas", json_string(m->blas));
    bad |= put(lib, "mpi", json_string(m->mpi));
    bad |= put(lib, "cuda", json_string(m->cuda));
    bad |= put(lib, "nccl", json_string(m->nccl));
    bad |= put(mach, "libraries", lib);
    bad |= put(root, "machine", mach);
    return bad;
}

/* "memory_bw_gbs", "host_device_gbs" (GB/s) and "compute" (peak FLOP/s per precision). */
static int put_rates(json_t *root, const zp_profile *p)
{
    int bad = 0;
    json_t *o = json_object();
    bad |= put(o, "copy", json_real(p->copy_gbs));
    bad |= put(o, "triad", json_real(p->triad_gbs));
    bad |= put(root, "memory_bw_gbs", o);
    o = json_object();
    bad |= put(o, "h2d", json_real(p->h2d_gbs));
    bad |= put(o, "d2h", json_real(p->d2h_gbs));
    bad |= put(root, "host_device_gbs", o);
    o = json_object();
    bad |= put(o, "peak_flops_fp32", json_real(p->peak_flops_fp32));
    bad |= put(o, "peak_flops_fp16", json_real(p->peak_flops_fp16));
    bad |= put(o, "peak_flops_bf16", json_real(p->peak_flops_bf16));
    bad |= put(root, "compute", o);
    return bad;
}

/* "adam": rates and measured points. */
static int put_adam(json_t *root, const zp_profile *p)
{
    int bad = 0;
    json_t *o = json_object();
    bad |= put(o, "params_per_s", json_real(p->adam_params_per_s));
    bad |= put(o, "bytes_per_param", json_real(p->adam_bytes_per_param));
    bad |= put(o, "cpu_params_per_s", json_real(p->cpu_adam_params_per_s));
    json_t *arr = json_array();
    for (int i = 0; i < p->nadam; i++) {
        json_t *e = json_object();
        bad |= put(e, "n", json_real(p->adam[i].n));
        bad |= put(e, "params_per_s", json_real(p->adam[i].params_per_s));
        bad |= put(e, "spread", json_real(p->adam[i].spread));
        bad |= json_array_append_new(arr, e);
    }
    bad |= put(o, "points", arr);
    bad |= put(root, "adam", o);
    return bad;
}

/* "gemm" (the measured shapes) and "gemm_model" (the fit). */
static int put_gemm(json_t *root, const zp_profile *p)
{
    int bad = 0;
    json_t *arr = json_array();
    for (int i = 0; i < p->ngemm; i++) {
        json_t *e = json_object();
        bad |= put(e, "m", json_real(p->gemm[i].m));
        bad |= put(e, "n", json_real(p->gemm[i].n));
        bad |= put(e, "k", json_real(p->gemm[i].k));
        bad |= put(e, "flops_per_s", json_real(p->gemm[i].flops_per_s));
        bad |= put(e, "spread", json_real(p->gemm[i].spread));
        bad |= json_array_append_new(arr, e);
    }
    bad |= put(root, "gemm", arr);
    json_t *o = json_object();
    bad |= put(o, "dtype", json_string(p->gemm_dtype));
    bad |= put(o, "t0_s", json_real(p->gemm_t0_s));
    bad |= put(o, "s_per_flop", json_real(p->gemm_s_per_flop));
    bad |= put(o, "s_per_byte", json_real(p->gemm_s_per_byte));
    bad |= put(o, "residual", json_real(p->gemm_residual));
    if (p->gemm_cold_gbs > 0)
        bad |= put(o, "cold_gbs", json_real(p->gemm_cold_gbs));
    bad |= put(root, "gemm_model", o);
    return bad;
}

/* "collectives": each kind's measured scopes, with their points. */
static int put_collectives(json_t *root, const zp_profile *p)
{
    int bad = 0;
    json_t *colls = json_object();
    for (int c = 0; c < ZP_PROFILE_NCOLL; c++) {
        json_t *kind = json_object();
        for (int s = 0; s < ZP_PROFILE_NSCOPE; s++) {
            const zp_profile_coll_fit *f = &p->coll[c][s];
            if (!f->measured)
                continue;
            json_t *sc = json_object();
            bad |= put(sc, "nranks", json_integer(f->nranks));
            bad |= put(sc, "latency_s", json_real(f->latency_s));
            bad |= put(sc, "busbw_gbs", json_real(f->busbw_gbs));
            bad |= put(sc, "residual", json_real(f->residual));
            json_t *pts = json_array();
            for (int i = 0; i < f->npoints; i++) {
                json_t *e = json_object();
                bad |= put(e, "bytes", json_real(f->points[i].bytes));
                bad |= put(e, "time_s", json_real(f->points[i].time_s));
                bad |= put(e, "spread", json_real(f->points[i].spread));
                bad |= json_array_append_new(pts, e);
            }
            bad |= put(sc, "points", pts);
            if (f->nhot > 0) {
                json_t *hot = json_array();
                for (int i = 0; i < f->nhot; i++)
                    bad |= json_array_append_new(hot, json_pack("{s:f, s:f, s:f}", "bytes", f->hot[i].bytes,
                                                                "time_s", f->hot[i].time_s, "spread",
                                                                f->hot[i].spread));
                bad |= put(sc, "hot_points", hot);
            }
            bad |= put(kind, scope_names[s], sc);
        }
        bad |= put(colls, zp_coll_name((zp_coll_kind)c), kind);
    }
    bad |= put(root, "collectives", colls);
    return bad;
}

/* "layer_kernels", written only when measured: older readers and diffs see nothing new otherwise. */
static int put_kernels(json_t *root, const zp_profile *p)
{
    int bad = 0, nk = 0;
    for (int k = 0; k < ZP_PROFILE_NKERNEL; k++)
        nk += p->kernels[k].measured != 0;
    if (nk == 0)
        return 0;
    json_t *ks = json_object();
    for (int k = 0; k < ZP_PROFILE_NKERNEL; k++) {
        const zp_profile_kernel_fit *f = &p->kernels[k];
        if (!f->measured)
            continue;
        bad |= put(ks, kernel_names[k], json_pack("{s:f, s:f, s:f}", "t0_s", f->t0_s, "s_per_elem", f->s_per_elem,
                                                  "elems", f->elems));
    }
    bad |= put(root, "layer_kernels", ks);
    return bad;
}

/* "device_model", "nvme_gbs" and "host_calls", when known. */
static int put_device(json_t *root, const zp_profile *p)
{
    int bad = 0;
    if (p->dev.sms > 0) {
        json_t *d = json_object();
        bad |= put(d, "sms", json_integer(p->dev.sms));
        bad |= put(d, "gemm_max_efficiency", json_real(p->dev.gemm_max_eff));
        bad |= put(d, "k_half", json_real(p->dev.k_half));
        bad |= put(d, "launch_s", json_real(p->dev.launch_s));
        bad |= put(d, "dispatch_s", json_real(p->dev.dispatch_s));
        if (p->dev.unfused_kernels)
            bad |= put(d, "unfused_kernels", json_true());
        if (p->dev.flash_eff > 0)
            bad |= put(d, "flash_efficiency", json_real(p->dev.flash_eff));
        if (p->dev.flash_seq_half > 0)
            bad |= put(d, "flash_seq_half", json_real(p->dev.flash_seq_half));
        if (p->dev.nccl_ctas > 0)
            bad |= put(d, "nccl_ctas", json_integer(p->dev.nccl_ctas));
        if (p->dev.nccl_ll_base_s > 0 || p->dev.nccl_ll_hop_s > 0) {
            bad |= put(d, "nccl_ll_base_s", json_real(p->dev.nccl_ll_base_s));
            bad |= put(d, "nccl_ll_hop_s", json_real(p->dev.nccl_ll_hop_s));
        }
        bad |= put(root, "device_model", d);
    }
    if (p->nvme_read_gbs > 0 || p->nvme_write_gbs > 0) {
        json_t *d = json_object();
        bad |= put(d, "read", json_real(p->nvme_read_gbs));
        bad |= put(d, "write", json_real(p->nvme_write_gbs));
        bad |= put(root, "nvme_gbs", d);
    }
    if (p->host_kernel_s > 0 || p->host_gemm_s > 0) {
        json_t *d = json_object();
        bad |= put(d, "kernel_s", json_real(p->host_kernel_s));
        bad |= put(d, "gemm_s", json_real(p->host_gemm_s));
        bad |= put(root, "host_calls", d);
    }
    return bad;
}

static json_t *to_json(const zp_profile *p)
{
    int bad = 0;
    json_t *root = json_object();
    if (!root)
        return NULL;
    bad |= put(root, "format", json_string(ZP_PROFILE_FORMAT));
    bad |= put(root, "version", json_integer(ZP_PROFILE_VERSION));
    bad |= put_machine(root, p);
    bad |= put(root, "backend", json_string(p->backend));
    bad |= put_rates(root, p);
    bad |= put_adam(root, p);
    bad |= put_gemm(root, p);
    bad |= put_collectives(root, p);
    bad |= put_kernels(root, p);
    bad |= put_device(root, p);
    if (bad) {
        json_decref(root);
        return NULL;
    }
    return root;
}

zp_status zp_profile_to_json(const zp_profile *p, char **out)
{
    if (!p || !out)
        return ZP_FAIL(ZP_EINVAL, "profile: NULL argument");
    ZP_TRY(zp_profile_validate(p));
    json_t *root = to_json(p);
    if (!root)
        return ZP_FAIL(ZP_ENOMEM, "profile: out of memory building the JSON");
    /* 17 significant digits: doubles round-trip exactly */
    char *text = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17));
    json_decref(root);
    if (!text)
        return ZP_FAIL(ZP_ENOMEM, "profile: out of memory serialising the JSON");
    *out = text;
    return ZP_OK;
}

zp_status zp_profile_write(const zp_profile *p, const char *path)
{
    if (!p || !path)
        return ZP_FAIL(ZP_EINVAL, "profile: NULL argument");
    char *text = NULL;
    ZP_TRY(zp_profile_to_json(p, &text));
    zp_io_atomic *a = NULL;
    zp_status st = zp_io_atomic_open(path, &a);
    if (st != ZP_OK) {
        free(text);
        return st;
    }
    FILE *f = zp_io_atomic_file(a);
    if (fputs(text, f) == EOF || fputc('\n', f) == EOF) {
        free(text);
        zp_io_atomic_abort(a);
        return ZP_FAIL(ZP_EIO, "cannot write profile '%s'", path);
    }
    free(text);
    return zp_io_atomic_commit(a);
}

void zp_profile_for_dtype(const zp_profile *in, const char *dtype, zp_profile *out)
{
    *out = *in;
    const double have = zp_profile_peak_flops(in, in->gemm_dtype), want = zp_profile_peak_flops(in, dtype);
    if (!(have > 0 && want > 0) || have == want)
        return;
    const double slower = have / want; /* > 1: the training type computes slower than the measured one */
    out->gemm_s_per_flop *= slower;
    for (int i = 0; i < out->ngemm; i++)
        out->gemm[i].flops_per_s /= slower;
    snprintf(out->gemm_dtype, sizeof out->gemm_dtype, "%s", dtype);
}
