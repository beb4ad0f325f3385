/* Fused Adam/AdamW (cpu backend and the shared element header) against a plain
 * double-precision reference; fp16/bf16 conversions; the NaN/inf policy. */
#include <criterion/criterion.h>

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "zp_elementwise.h"
#include "zp_kernels.h"

/* xorshift64*: deterministic inputs */
static uint64_t rng_state = 88172645463325252ull;
static double urand(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return (double)((rng_state * 2685821657736338717ull) >> 11) * 0x1.0p-53;
}
static double nrand(void) { return sqrt(-2.0 * log(urand() + 1e-300)) * cos(6.283185307179586 * urand()); }

/* double reference of one element of PyTorch's Adam/AdamW */
static double g_ref_gv; /* the last reference step's effective gradient, for error bounds */
static void ref_step(const zp_adam_hparams *hp, double *p, double g, double *m, double *v)
{
    double bc1 = hp->bias_correction ? 1 - pow(hp->beta1, hp->step) : 1;
    double bc2 = hp->bias_correction ? 1 - pow(hp->beta2, hp->step) : 1;
    g = g / hp->loss_scale * hp->clip;
    if (hp->adamw)
        *p *= 1 - hp->lr * hp->weight_decay;
    else
        g += hp->weight_decay * *p;
    g_ref_gv = g;
    *m = hp->beta1 * *m + (1 - hp->beta1) * g;
    *v = hp->beta2 * *v + (1 - hp->beta2) * g * g;
    *p -= hp->lr / bc1 * *m / (sqrt(*v) / sqrt(bc2) + hp->eps);
}

typedef struct {
    size_t n;
    float *p, *g, *m, *v;
    uint16_t *h;
    double *rp, *rm, *rv;
} state;

static state state_new(size_t n, double gscale)
{
    state s = {.n = n};
    s.p = malloc(n * sizeof *s.p);
    s.g = malloc(n * sizeof *s.g);
    s.m = malloc(n * sizeof *s.m);
    s.v = malloc(n * sizeof *s.v);
    s.h = malloc(n * sizeof *s.h);
    s.rp = malloc(n * sizeof *s.rp);
    s.rm = calloc(n, sizeof *s.rm);
    s.rv = calloc(n, sizeof *s.rv);
    cr_assert(s.p && s.g && s.m && s.v && s.h && s.rp && s.rm && s.rv);
    for (size_t i = 0; i < n; i++) {
        s.p[i] = (float)nrand();
        s.rp[i] = s.p[i];
        s.m[i] = 0;
        s.v[i] = 0;
        s.g[i] = (float)(nrand() * gscale);
    }
    return s;
}

static void state_free(state *s)
{
    free(s->p), free(s->g), free(s->m), free(s->v), free(s->h), free(s->rp), free(s->rm), free(s->rv);
}

/* Runs `steps` steps with fresh random gradients (scaled by gscale) on both sides and
 * compares every element after each step. */
static void run_and_compare(size_t n, zp_adam_hparams hp, double gscale, int steps, zp_dtype half)
{
    state s = state_new(n, gscale);
    for (int t = 1; t <= steps; t++) {
        hp.step = t;
        if (t > 1)
            for (size_t i = 0; i < n; i++)
                s.g[i] = (float)(nrand() * gscale);
        zp_adam_buffers b = {.n = n, .param = s.p, .grad = s.g, .m = s.m, .v = s.v, .half = s.h, .half_dtype = half};
        zp_adam_result r;
        cr_assert_eq(zp_adam_step_cpu(&hp, &b, &r), ZP_OK, "%s", zp_error_message());
        cr_assert_eq(r.overflow, 0);
        for (size_t i = 0; i < n; i++) {
            double p0 = s.rp[i], m0 = fabs(s.rm[i]);
            /* magnitude of the terms of the effective gradient (cancellation with L2 decay) */
            double gu = fabs(s.g[i] / hp.loss_scale * hp.clip) + fabs(hp.adamw ? 0 : hp.weight_decay * p0);
            ref_step(&hp, &s.rp[i], s.g[i], &s.rm[i], &s.rv[i]);
            double upd = fabs(s.rp[i] - p0);
            double tol = 4e-7 * fabs(s.rp[i]) * t + 2e-5 * upd + 1e-4 * hp.lr * t;
            cr_assert(fabs(s.p[i] - s.rp[i]) <= tol, "n=%zu step %d elem %zu: param %.9g ref %.9g (tol %.3g)", n,
                      t, i, s.p[i], s.rp[i], tol);
            /* fp32 rounding of each term (cancellation in m), fp32 subnormals (tiny v) */
            cr_assert(fabs(s.m[i] - s.rm[i]) <= 1e-6 * (m0 + gu) * t + 1e-44, "m[%zu] %.9g ref %.9g", i, s.m[i],
                      s.rm[i]);
            double vtol = 2e-6 * fabs(s.rv[i]) * t + 8 * 6e-8 * (1 - hp.beta2) * fabs(g_ref_gv) * gu * t + 3e-45;
            cr_assert(fabs(s.v[i] - s.rv[i]) <= vtol, "v[%zu] %.9g ref %.9g", i,
                      s.v[i], s.rv[i]);
            uint16_t want = half == ZP_DT_BF16 ? zp_f32_to_bf16(s.p[i]) : zp_f32_to_f16(s.p[i]);
            cr_assert_eq(s.h[i], want, "16-bit copy of elem %zu", i);
        }
    }
    state_free(&s);
}

/* run_and_compare on sizes from one element to a few vector widths plus a ragged tail. */
static void run_every_size(zp_adam_hparams hp, double gscale, int steps, zp_dtype half)
{
    static const size_t sizes[] = {1, 7, 1023, 16385, 100003};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        run_and_compare(sizes[i], hp, gscale, steps, half);
}

Test(adam, adam_matches_double_reference)
{
    zp_adam_hparams hp = zp_adam_hparams_default();
    hp.weight_decay = 0.01;
    run_every_size(hp, 1.0, 3, ZP_DT_F16);
}

Test(adam, adamw_with_loss_scale_and_clip_bf16)
{
    zp_adam_hparams hp = zp_adam_hparams_default();
    hp.adamw = 1;
    hp.weight_decay = 0.1;
    hp.lr = 3e-4;
    hp.loss_scale = 65536.0;
    hp.clip = 0.37;
    run_every_size(hp, 65536.0, 3, ZP_DT_BF16);
}

Test(adam, no_bias_correction_and_tiny_grads)
{
    zp_adam_hparams hp = zp_adam_hparams_default();
    hp.bias_correction = 0;
    run_and_compare(4099, hp, 1e-20, 2, ZP_DT_F16);
}

Test(adam, huge_grads_stay_finite)
{
    /* loss-scaled gradients up to ~1e15: unscaled ~1e10, squares fit fp32 */
    zp_adam_hparams hp = zp_adam_hparams_default();
    hp.loss_scale = 1e5;
    run_and_compare(1001, hp, 1e15, 2, ZP_DT_F16);
}

Test(adam, zero_and_negative_grads)
{
    size_t n = 257;
    state s = state_new(n, 1.0);
    for (size_t i = 0; i < n; i++)
        s.g[i] = i % 3 == 0 ? 0.0f : -fabsf(s.g[i]);
    zp_adam_hparams hp = zp_adam_hparams_default();
    zp_adam_buffers b = {.n = n, .param = s.p, .grad = s.g, .m = s.m, .v = s.v, .half = NULL};
    cr_assert_eq(zp_adam_step_cpu(&hp, &b, NULL), ZP_OK);
    for (size_t i = 0; i < n; i++) {
        ref_step(&hp, &s.rp[i], s.g[i], &s.rm[i], &s.rv[i]);
        if (i % 3 == 0) /* zero gradient, no decay: parameter unchanged bit for bit */
            cr_assert_eq(s.p[i], (float)s.rp[i]);
        else /* first step of Adam moves each parameter by ~lr against the gradient's sign */
            cr_assert(s.p[i] > (float)s.rp[i] - 1e-6f && fabs(s.p[i] - s.rp[i]) < 1e-6, "elem %zu", i);
    }
    state_free(&s);
}

static void check_policy(float bad)
{
    size_t n = 5000;
    state s = state_new(n, 1.0);
    s.g[4321] = bad;
    float *p0 = malloc(n * sizeof *p0);
    memcpy(p0, s.p, n * sizeof *p0);
    memset(s.h, 0xab, n * sizeof *s.h);
    zp_adam_hparams hp = zp_adam_hparams_default();
    zp_adam_buffers b = {.n = n, .param = s.p, .grad = s.g, .m = s.m, .v = s.v, .half = s.h, .half_dtype = ZP_DT_F16};
    zp_adam_result r;
    cr_assert_eq(zp_adam_step_cpu(&hp, &b, &r), ZP_OK);
    cr_assert_eq(r.overflow, 1);
    cr_assert_eq(r.nonfinite, 1);
    cr_assert(memcmp(p0, s.p, n * sizeof *p0) == 0, "parameters changed on overflow");
    for (size_t i = 0; i < n; i++) {
        cr_assert_eq(s.m[i], 0.0f);
        cr_assert_eq(s.v[i], 0.0f);
        cr_assert_eq(s.h[i], 0xabab);
    }
    size_t nf = 0;
    cr_assert_eq(zp_adam_grad_check_cpu(s.g, n, &nf), ZP_OK);
    cr_assert_eq(nf, 1);
    free(p0);
    state_free(&s);
}

Test(adam, nan_grad_skips_step) { check_policy(NAN); }
Test(adam, inf_grad_skips_step) { check_policy(INFINITY); }
Test(adam, neg_inf_grad_skips_step) { check_policy(-INFINITY); }

Test(adam, prechecked_grads_trust_the_caller)
{
    /* grads_checked = 1: the caller agreed there is no overflow; the step runs (and a NaN
     * gradient then poisons only its own element). */
    size_t n = 100;
    state s = state_new(n, 1.0);
    s.g[10] = NAN;
    zp_adam_hparams hp = zp_adam_hparams_default();
    hp.grads_checked = 1;
    zp_adam_buffers b = {.n = n, .param = s.p, .grad = s.g, .m = s.m, .v = s.v};
    zp_adam_result r;
    cr_assert_eq(zp_adam_step_cpu(&hp, &b, &r), ZP_OK);
    cr_assert_eq(r.overflow, 0);
    cr_assert(isnan(s.p[10]));
    cr_assert(isfinite(s.p[11]) && s.p[11] != (float)s.rp[11]);
    state_free(&s);
}

Test(adam, squares_overflowing_fp32_freeze_the_element)
{
    /* finite but (1-beta2)*g*g beyond fp32 (|g| > ~6e20): v saturates to inf, the update is m/inf = 0 */
    float p = 1.5f, m = 0, v = 0;
    zp_adam_hparams hp = zp_adam_hparams_default();
    zp_adam_buffers b = {.n = 1, .param = &p, .grad = &(float){1e30f}, .m = &m, .v = &v};
    cr_assert_eq(zp_adam_step_cpu(&hp, &b, NULL), ZP_OK);
    cr_assert_eq(p, 1.5f);
    cr_assert(isinf(v));
}

Test(adam, bad_hyperparameters_rejected)
{
    float x = 0;
    zp_adam_buffers b = {.n = 1, .param = &x, .grad = &x, .m = &x, .v = &x};
    zp_adam_hparams hp = zp_adam_hparams_default();
    hp.beta1 = 1.0;
    cr_assert_eq(zp_adam_step_cpu(&hp, &b, NULL), ZP_EINVAL);
    cr_assert(strstr(zp_error_message(), "beta1"));
    hp = zp_adam_hparams_default();
    hp.loss_scale = 0;
    cr_assert_eq(zp_adam_step_cpu(&hp, &b, NULL), ZP_EINVAL);
    cr_assert(strstr(zp_error_message(), "loss_scale"));
    hp = zp_adam_hparams_default();
    hp.step = 0;
    cr_assert_eq(zp_adam_step_cpu(&hp, &b, NULL), ZP_EINVAL);
    hp = zp_adam_hparams_default();
    b.param = NULL;
    cr_assert_eq(zp_adam_step_cpu(&hp, &b, NULL), ZP_EINVAL);
    b.param = &x;
    b.half = (uint16_t *)&x;
    b.half_dtype = ZP_DT_F32;
    cr_assert_eq(zp_adam_step_cpu(&hp, &b, NULL), ZP_EINVAL);
}

/* ---- conversions ---- */

static float next_up(float f) { return nextafterf(f, INFINITY); }
static float next_down(float f) { return nextafterf(f, -INFINITY); }

Test(convert, fp16_roundtrip_all_values)
{
    for (uint32_t h = 0; h < 65536; h++) {
        float f = zp_f16_to_f32((uint16_t)h);
        uint16_t back = zp_f32_to_f16(f);
        if (isnan(f))
            cr_assert((back & 0x7c00) == 0x7c00 && (back & 0x3ff) != 0 && (back & 0x8000) == (h & 0x8000));
        else
            cr_assert_eq(back, h, "0x%04x -> %a -> 0x%04x", h, f, back);
    }
}

Test(convert, fp16_round_to_nearest_even_at_every_midpoint)
{
    /* consecutive positive finite fp16 values a < b: the midpoint rounds to the even one,
     * one fp32 ulp either side rounds to the nearer */
    for (uint32_t h = 0; h < 0x7bff; h++) {
        double a = zp_f16_to_f32((uint16_t)h), b = zp_f16_to_f32((uint16_t)(h + 1));
        float mid = (float)((a + b) / 2); /* exact in fp32 */
        uint16_t even = (h & 1) ? (uint16_t)(h + 1) : (uint16_t)h;
        cr_assert_eq(zp_f32_to_f16(mid), even, "midpoint after 0x%04x", h);
        cr_assert_eq(zp_f32_to_f16(next_down(mid)), h);
        cr_assert_eq(zp_f32_to_f16(next_up(mid)), h + 1);
        cr_assert_eq(zp_f32_to_f16(-mid), even | 0x8000);
    }
    cr_assert_eq(zp_f32_to_f16(65504.0f), 0x7bff);
    cr_assert_eq(zp_f32_to_f16(next_down(65520.0f)), 0x7bff);
    cr_assert_eq(zp_f32_to_f16(65520.0f), 0x7c00);
    cr_assert_eq(zp_f32_to_f16(1e10f), 0x7c00);
    cr_assert_eq(zp_f32_to_f16(-INFINITY), 0xfc00);
    cr_assert_eq(zp_f32_to_f16(1e-10f), 0x0000); /* below half the smallest subnormal */
    cr_assert_eq(zp_f32_to_f16(-0.0f), 0x8000);
    cr_assert_eq(zp_f32_to_f16(NAN) & 0x7e00, 0x7e00);
}

Test(convert, bf16_roundtrip_and_rounding)
{
    for (uint32_t b = 0; b < 65536; b++) {
        float f = zp_bf16_to_f32((uint16_t)b);
        uint16_t back = zp_f32_to_bf16(f);
        if (isnan(f)) {
            cr_assert(isnan(zp_bf16_to_f32(back)));
            continue;
        }
        cr_assert_eq(back, b);
        if ((b & 0x7fff) >= 0x7f7f)
            continue;
        float nxt = zp_bf16_to_f32((uint16_t)(b + 1));
        float mid = (float)(((double)f + (double)nxt) / 2);
        uint16_t even = (b & 1) ? (uint16_t)(b + 1) : (uint16_t)b;
        cr_assert_eq(zp_f32_to_bf16(mid), even, "midpoint after 0x%04x", b);
        cr_assert_eq(zp_f32_to_bf16(signbit(f) ? next_up(mid) : next_down(mid)), b);
    }
    cr_assert_eq(zp_f32_to_bf16(3.4028235e38f), 0x7f80); /* rounds up to inf */
}
