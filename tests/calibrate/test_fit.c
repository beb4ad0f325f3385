/* The GSL fits recover known latency, bandwidth, GEMM and Adam models from synthetic noisy data. */
#include <criterion/criterion.h>

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "zp_calibrate.h"
#include "zp_fit.h"
#include "zp_profile.h"

static uint64_t s = 0x9e3779b97f4a7c15ull;
static double urand(void)
{
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    return (double)(s >> 11) * 0x1.0p-53;
}
/* multiplicative noise: relative sigma */
static double noisy(double x, double sigma)
{
    double g = sqrt(-2 * log(urand() + 1e-300)) * cos(6.283185307179586 * urand());
    return x * (1 + sigma * g);
}

static int make_coll(double lat, double gbs, double factor, double sigma, double *x, double *t)
{
    int n = 0;
    for (double b = 1024; b <= 1024.0 * 1024 * 1024; b *= 4, n++) {
        x[n] = b;
        t[n] = noisy(lat + b * factor / (gbs * 1e9), sigma);
    }
    return n;
}

Test(fit, collective_exact)
{
    double x[32], t[32], lat, bw, res;
    int n = make_coll(7e-6, 2.5, 1.5, 0, x, t);
    cr_assert_eq(zp_fit_collective(x, t, n, 1.5, &lat, &bw, &res), ZP_OK, "%s", zp_error_message());
    cr_assert(fabs(lat - 7e-6) < 1e-12, "latency %g", lat);
    cr_assert(fabs(bw - 2.5) < 1e-9, "busbw %g", bw);
    cr_assert(res < 1e-9);
}

Test(fit, collective_noisy_recovers_latency_and_bandwidth)
{
    const double lats[] = {2e-6, 5e-6, 30e-6}, bws[] = {1.5, 12.0, 150.0};
    for (int trial = 0; trial < 3; trial++) {
        double x[32], t[32], lat, bw, res;
        int n = make_coll(lats[trial], bws[trial], 1.0, 0.03, x, t);
        cr_assert_eq(zp_fit_collective(x, t, n, 1.0, &lat, &bw, &res), ZP_OK);
        cr_assert(fabs(lat / lats[trial] - 1) < 0.10, "trial %d latency %g want %g", trial, lat, lats[trial]);
        cr_assert(fabs(bw / bws[trial] - 1) < 0.06, "trial %d busbw %g want %g", trial, bw, bws[trial]);
        cr_assert(res > 0.005 && res < 0.08, "residual %g for 3%% noise", res);
    }
}

Test(fit, collective_negative_latency_clamped)
{
    /* pure bandwidth with a time offset below zero: intercept would be negative */
    double x[8], t[8];
    for (int i = 0; i < 8; i++) {
        x[i] = 1e6 * (i + 1);
        t[i] = x[i] / 1e9 - 1e-5 * (i == 0);
    }
    double lat, bw, res;
    cr_assert_eq(zp_fit_collective(x, t, 8, 1.0, &lat, &bw, &res), ZP_OK);
    cr_assert_eq(lat, 0.0);
    cr_assert(fabs(bw - 1.0) < 0.05, "bw %g", bw);
}

Test(fit, collective_bad_data_rejected)
{
    double x[3] = {1024, 1024, 1024}, t[3] = {1e-5, 1e-5, 1e-5}, lat, bw, res;
    cr_assert_eq(zp_fit_collective(x, t, 3, 1.0, &lat, &bw, &res), ZP_EINVAL);
    double x2[3] = {1e3, 1e6, 1e9}, t2[3] = {1e-3, 1e-4, 1e-5};
    cr_assert_eq(zp_fit_collective(x2, t2, 3, 1.0, &lat, &bw, &res), ZP_ERANGE);
    double t3[3] = {1e-3, NAN, 1e-2};
    cr_assert_eq(zp_fit_collective(x2, t3, 3, 1.0, &lat, &bw, &res), ZP_EINVAL);
    cr_assert_eq(zp_fit_collective(x2, t2, 1, 1.0, &lat, &bw, &res), ZP_EINVAL);
}

Test(fit, gemm_model_recovered)
{
    zp_profile p;
    zp_profile_init(&p);
    const double t0 = 20e-6, spf = 1.0 / 150e9, spb = 1.0 / 20e9;
    const double hs[] = {128, 256, 512, 1024, 2048}, toks[] = {64, 512, 4096};
    for (int a = 0; a < 5; a++)
        for (int b = 0; b < 3; b++) {
            double h = hs[a], T = toks[b];
            double shapes[3][3] = {{T, 3 * h, h}, {T, h, h}, {T, 4 * h, h}};
            for (int k = 0; k < 3; k++) {
                zp_profile_gemm_point *g = &p.gemm[p.ngemm++];
                g->m = shapes[k][0], g->n = shapes[k][1], g->k = shapes[k][2];
                double flops = 2 * g->m * g->n * g->k;
                double t = noisy(t0 + spf * flops + spb * zp_profile_gemm_bytes(&p, g->m, g->n, g->k), 0.02);
                g->flops_per_s = flops / t;
            }
        }
    cr_assert_eq(zp_fit_gemm(&p), ZP_OK, "%s", zp_error_message());
    cr_assert(fabs(p.gemm_s_per_flop / spf - 1) < 0.05, "s_per_flop %g want %g", p.gemm_s_per_flop, spf);
    cr_assert(fabs(p.gemm_s_per_byte / spb - 1) < 0.25, "s_per_byte %g want %g", p.gemm_s_per_byte, spb);
    cr_assert(fabs(p.gemm_t0_s / t0 - 1) < 0.25, "t0 %g want %g", p.gemm_t0_s, t0);
    cr_assert(p.gemm_residual < 0.04, "residual %g", p.gemm_residual);
    /* efficiency: a smooth, increasing function of size, in (0, 1] */
    p.peak_flops_fp32 = 1.0 / spf;
    double prev = 0;
    for (double h = 64; h <= 16384; h *= 2) {
        double e = zp_profile_gemm_efficiency(&p, 2048, 4 * h, h);
        cr_assert(e > prev && e <= 1.0, "efficiency at h=%g: %g (previous %g)", h, e, prev);
        prev = e;
    }
    cr_assert(prev > 0.9, "large GEMMs approach the peak: %g", prev);
    cr_assert(zp_profile_gemm_efficiency(&p, 16, 16, 16) < 0.01);
}

Test(fit, gemm_negative_terms_dropped)
{
    /* pure throughput data: every kept coefficient is >= 0 */
    zp_profile p;
    zp_profile_init(&p);
    for (int i = 0; i < 6; i++) {
        zp_profile_gemm_point *g = &p.gemm[p.ngemm++];
        g->m = 256 << i, g->n = 256, g->k = 256;
        g->flops_per_s = noisy(100e9, 0.01);
    }
    cr_assert_eq(zp_fit_gemm(&p), ZP_OK);
    cr_assert(p.gemm_t0_s >= 0 && p.gemm_s_per_byte >= 0 && p.gemm_s_per_flop > 0);
    cr_assert(fabs(1 / p.gemm_s_per_flop / 100e9 - 1) < 0.03, "rate %g", 1 / p.gemm_s_per_flop);
    p.ngemm = 0;
    cr_assert_eq(zp_fit_gemm(&p), ZP_EINVAL);
}

Test(fit, adam_rate)
{
    double n[5], t[5], rate, t0, res;
    for (int i = 0; i < 5; i++) {
        n[i] = (double)(1 << 20) * (1 << (2 * i));
        t[i] = noisy(3e-5 + n[i] / 1.2e9, 0.02);
    }
    cr_assert_eq(zp_fit_rate(n, t, 5, &rate, &t0, &res), ZP_OK);
    cr_assert(fabs(rate / 1.2e9 - 1) < 0.04, "rate %g", rate);
}

/* A model's attention for the executor's batched timing: kept once, within its bounds (ld holds Q, K and V of
 * at least one head; at most ZP_CALIBRATE_MAX_ATT). */
Test(fit, attention_shapes_kept_once_and_checked)
{
    zp_calibrate_opts o;
    zp_calibrate_opts_default(&o, 1);
    cr_assert_eq(o.natt, 0);
    cr_expect_eq(zp_calibrate_add_attention(&o, 16, 64, 16, 128, 64), 1); /* tiny-llama at micro-batch 4 */
    cr_expect_eq(zp_calibrate_add_attention(&o, 16, 64, 16, 128, 64), 0, "a duplicate kept");
    cr_expect_eq(zp_calibrate_add_attention(&o, 0, 64, 16, 128, 64), 0, "no products");
    cr_expect_eq(zp_calibrate_add_attention(&o, 16, 64, 16, 32, 16), 0, "ld narrower than Q, K and V");
    cr_expect_eq(zp_calibrate_add_attention(&o, 16, 64, 16, 64, 128), 0, "Q wider than the fused rows");
    cr_expect_eq(zp_calibrate_add_attention(&o, 18, 64, 16, 128, 64), 0, "sequences x 4 heads");
    cr_expect_eq(zp_calibrate_add_attention(&o, 16, 64, 16, 128, 56), 0, "Q not whole heads");
    cr_expect_eq(zp_calibrate_add_attention(&o, 16, 64, 16, 120, 64), 0, "K and V not whole heads");
    cr_expect_eq(zp_calibrate_add_attention(&o, 12, 64, 16, 112, 48), 0, "3 heads over 2 K/V heads");
    cr_expect_eq(o.natt, 1);
    cr_expect_eq(o.att[0][0], 16);
    cr_expect_eq(o.att[0][3], 128);
    for (int i = 2; i < 2 * ZP_CALIBRATE_MAX_ATT; i++)
        zp_calibrate_add_attention(&o, 4 * i, 64, 16, 128, 64);
    cr_expect_eq(o.natt, ZP_CALIBRATE_MAX_ATT);
}
