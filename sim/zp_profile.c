/* zp_profile.c — the device profile's cost models (GEMMs, collectives, layer kernels, Adam) and its
 * validation; its JSON is zp_profile_read.c's and zp_profile_write.c's. */
#include "zp_profile.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zp_coll.h"

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
