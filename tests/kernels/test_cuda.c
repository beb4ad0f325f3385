/* The cuda backend on a real GPU, each kernel against its CPU reference: GEMM (fp32 through TF32, fp16,
 * bf16; transposes, padded leading dimensions, alpha and beta) against a double-precision product of the
 * same rounded inputs; fused Adam/AdamW and the overflow check against the cpu backend on the same state;
 * the STREAM kernels, copies, zeroing and pinned memory; every layer kernel of zp_nn_ops_cuda against
 * zp_nn_ops_cpu on the same inputs; the CUDA-event timer. The NCCL collectives need MPI, which does not
 * survive Criterion's fork: they are tests/kernels/test_cuda_coll.c.
 *
 * Without a device (this project's CI machines) every test is skipped with the backend's "no CUDA
 * device: ..." message; `gpu-bundle/gpu-check` runs this suite on a GPU machine (README, "The GPU check"). */
#include <criterion/criterion.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "zp_elementwise.h"
#include "zp_kernels.h"
#include "zp_nn.h"

static const zp_kernels_backend *g_be;
static const zp_nn_ops *g_nn;

/* The cuda backend, or the test is skipped (no device). */
static void need_cuda(void)
{
    cr_assert_eq(zp_kernels_backend_get("cuda", &g_be), ZP_OK, "%s", zp_error_message());
    if (g_be->init() != ZP_OK)
        cr_skip_test("%s", zp_error_message());
    cr_assert_eq(zp_nn_ops_get("cuda", &g_nn), ZP_OK, "%s", zp_error_message());
}

#define OK(expr) cr_assert_eq((expr), ZP_OK, "%s: %s", #expr, zp_error_message())

static void *up(const void *host, size_t bytes)
{
    void *d = NULL;
    OK(g_be->alloc(bytes, &d));
    OK(g_be->copy_to_device(d, host, bytes));
    return d;
}

static void down(void *host, const void *dev, size_t bytes) { OK(g_be->copy_to_host(host, dev, bytes)); }

#define KERNEL_RAND_SEED 4242
#include "kernel_rand.h"

/* ---- device basics ---- */

Test(cuda, device_name_and_timer)
{
    need_cuda();
    char name[256] = "";
    OK(g_be->device_name(name, sizeof name));
    cr_assert(name[0], "empty device name");
    zp_timer *t = NULL;
    OK(g_be->timer_create(&t));
    size_t n = (size_t)1 << 24;
    float *a, *b;
    OK(g_be->alloc(n * 4, (void **)&a));
    OK(g_be->alloc(n * 4, (void **)&b));
    OK(g_be->zero(b, n * 4));
    double s = -1;
    OK(g_be->timer_start(t));
    OK(g_be->stream_copy(a, b, n));
    OK(g_be->timer_stop(t, &s));
    cr_assert(s > 0 && s < 10, "a 64 MiB copy took %g s by the CUDA-event timer", s);
    g_be->timer_free(t);
    g_be->free(a);
    g_be->free(b);
    g_be->free(NULL); /* accepts NULL */
}

Test(cuda, copies_zero_and_pinned_memory)
{
    need_cuda();
    const size_t n = 100003;
    float *h = frand_vec(n, 1), *back = malloc(n * 4);
    float *d = up(h, n * 4), *d2 = NULL;
    OK(g_be->alloc(n * 4, (void **)&d2));
    OK(g_be->copy_on_device(d2, d, n * 4));
    down(back, d2, n * 4);
    cr_assert(memcmp(back, h, n * 4) == 0, "host -> device -> device -> host changed the data");
    OK(g_be->zero(d2, 4 * 1000));
    down(back, d2, n * 4);
    for (size_t i = 0; i < n; i++)
        cr_assert_eq(back[i], i < 1000 ? 0.0f : h[i], "zero: element %zu", i);
    float *pin = NULL;
    OK(g_be->alloc_host(n * 4, (void **)&pin));
    OK(g_be->copy_to_host(pin, d, n * 4));
    cr_assert(memcmp(pin, h, n * 4) == 0, "device -> pinned host changed the data");
    g_be->free_host(pin);
    g_be->free_host(NULL);
    g_be->free(d);
    g_be->free(d2);
    free(h), free(back);
}

Test(cuda, stream_copy_and_triad)
{
    need_cuda();
    const size_t n = (size_t)3 << 20 | 5;
    float *b = frand_vec(n, 1), *c = frand_vec(n, 1), *out = malloc(n * 4);
    float *db = up(b, n * 4), *dc = up(c, n * 4), *da = NULL;
    OK(g_be->alloc(n * 4, (void **)&da));
    OK(g_be->stream_copy(da, db, n));
    down(out, da, n * 4);
    cr_assert(memcmp(out, b, n * 4) == 0, "stream copy");
    OK(g_be->stream_triad(da, db, dc, 3.0f, n));
    down(out, da, n * 4);
    for (size_t i = 0; i < n; i++) /* b + 3c: at most one rounding apart (FMA or not) */
        cr_assert(close_to(out[i], (double)b[i] + 3.0 * c[i], 2e-7, 1e-7), "triad %zu: %g", i, out[i]);
    g_be->free(da), g_be->free(db), g_be->free(dc);
    free(b), free(c), free(out);
}

/* ---- GEMM ---- */

static double in_val(const void *buf, zp_dtype dt, size_t i)
{
    if (dt == ZP_DT_F32)
        return ((const float *)buf)[i];
    if (dt == ZP_DT_F16)
        return zp_f16_to_f32(((const uint16_t *)buf)[i]);
    return zp_bf16_to_f32(((const uint16_t *)buf)[i]);
}

static void *rand_in(size_t n, zp_dtype dt)
{
    size_t es = zp_dtype_size(dt);
    void *v = malloc(n * es + 4);
    cr_assert(v);
    for (size_t i = 0; i < n; i++) {
        float x = (float)drand();
        if (dt == ZP_DT_F32)
            ((float *)v)[i] = x;
        else if (dt == ZP_DT_F16)
            ((uint16_t *)v)[i] = zp_f32_to_f16(x);
        else
            ((uint16_t *)v)[i] = zp_f32_to_bf16(x);
    }
    return v;
}

/* C = alpha op(A) op(B) + beta C on the GPU against the double product of the same (rounded) inputs.
 * Bound per element: fp32 inputs run on TF32 tensor cores (10-bit mantissa: each product within ~2^-10
 * relative, 2^-10 if truncated), 16-bit inputs multiply exactly and accumulate in fp32 (tensor cores add
 * with less than IEEE care: 1e-4 of the sum of magnitudes). */
static void check_gemm(zp_dtype dt, int m, int n, int k, int ta, int tb, float alpha, float beta, int pad)
{
    int lda = (ta ? m : k) + pad, ldb = (tb ? k : n) + pad, ldc = n + pad;
    size_t na = (size_t)(ta ? k : m) * lda, nb = (size_t)(tb ? n : k) * ldb, nc = (size_t)m * ldc;
    size_t es = zp_dtype_size(dt);
    void *a = rand_in(na, dt), *b = rand_in(nb, dt);
    float *c = frand_vec(nc, 1), *out = malloc(nc * 4);
    void *da = up(a, na * es), *db = up(b, nb * es);
    float *dc = up(c, nc * 4);
    zp_gemm_args g = {.trans_a = ta, .trans_b = tb, .m = m, .n = n, .k = k, .alpha = alpha, .beta = beta, .a = da,
                      .lda = lda, .b = db, .ldb = ldb, .c = dc, .ldc = ldc, .in_dtype = dt};
    OK(g_be->gemm(&g));
    down(out, dc, nc * 4);
    double rel = dt == ZP_DT_F32 ? 5e-3 : 1e-4;
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            double s = 0, mag = 0;
            for (int p = 0; p < k; p++) {
                double x = ta ? in_val(a, dt, (size_t)p * lda + i) : in_val(a, dt, (size_t)i * lda + p);
                double y = tb ? in_val(b, dt, (size_t)j * ldb + p) : in_val(b, dt, (size_t)p * ldb + j);
                s += x * y;
                mag += fabs(x * y);
            }
            double ref = alpha * s + beta * c[(size_t)i * ldc + j];
            double tol = rel * fabs(alpha) * mag + 1e-6 * (fabs(alpha) * mag + fabs(beta)) + 1e-6;
            double got = out[(size_t)i * ldc + j];
            cr_assert(fabs(got - ref) <= tol, "%s (%d,%d,%d) ta=%d tb=%d pad=%d C[%d,%d] = %.8g, reference %.8g",
                      zp_dtype_name(dt), m, n, k, ta, tb, pad, i, j, got, ref);
        }
    /* the padding between rows is never written */
    for (int i = 0; i < m; i++)
        for (int j = n; j < ldc; j++)
            cr_assert_eq(out[(size_t)i * ldc + j], c[(size_t)i * ldc + j], "padding C[%d,%d] written", i, j);
    g_be->free(da), g_be->free(db), g_be->free(dc);
    free(a), free(b), free(c), free(out);
}

static void gemm_suite(zp_dtype dt)
{
    need_cuda();
    const int shapes[][3] = {{1, 1, 1}, {7, 5, 3}, {37, 53, 29}, {64, 48, 96}, {128, 256, 200}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int ta = 0; ta < 2; ta++)
            for (int tb = 0; tb < 2; tb++) {
                check_gemm(dt, shapes[s][0], shapes[s][1], shapes[s][2], ta, tb, 1.0f, 0.0f, 0);
                check_gemm(dt, shapes[s][0], shapes[s][1], shapes[s][2], ta, tb, 0.5f, -0.25f, 8);
            }
    /* a transformer-layer shape: MLP up-projection of 256 tokens at hidden 256 */
    check_gemm(dt, 256, 1024, 256, 0, 0, 1.0f, 0.0f, 0);
}

Test(cuda, gemm_fp32_tf32) { gemm_suite(ZP_DT_F32); }
Test(cuda, gemm_fp16) { gemm_suite(ZP_DT_F16); }
Test(cuda, gemm_bf16) { gemm_suite(ZP_DT_BF16); }

/* Attention's products of every (sequence, head) as one cublasGemmBatchedEx: heads are column blocks of
 * rows lda = heads x width wide (the executor's QKV layout), outputs disjoint; each item against the double
 * product of its inputs (TF32 bound, as check_gemm), including beta's accumulation (dK += ...). */
Test(cuda, gemm_batched_attention_products)
{
    need_cuda();
    enum { H = 4, B = 3, T = 33, D = 16 };
    const int ld = H * D;
    const size_t nq = (size_t)B * T * ld, nc = (size_t)B * H * T * T;
    float *q = frand_vec(nq, 1), *k = frand_vec(nq, 1), *c = frand_vec(nc, 1), *out = malloc(nc * 4);
    float *dq = up(q, nq * 4), *dk = up(k, nq * 4), *dc = up(c, nc * 4);
    const void *a[B * H], *b[B * H];
    float *o[B * H];
    for (int i = 0; i < B * H; i++) {
        const size_t off = (size_t)(i / H) * T * ld + (size_t)(i % H) * D;
        a[i] = dq + off, b[i] = dk + off, o[i] = dc + (size_t)i * T * T;
    }
    zp_gemm_args g = {.trans_b = 1, .m = T, .n = T, .k = D, .alpha = 1, .beta = 0.5f, .lda = ld, .ldb = ld,
                      .ldc = T, .in_dtype = ZP_DT_F32};
    OK(g_be->gemm_batched(&g, B * H, a, b, o));
    down(out, dc, nc * 4);
    for (int i = 0; i < B * H; i++) {
        const size_t off = (size_t)(i / H) * T * ld + (size_t)(i % H) * D;
        for (int r = 0; r < T; r++)
            for (int j = 0; j < T; j++) {
                double s = 0, mag = 0;
                for (int p = 0; p < D; p++) {
                    const double x = q[off + (size_t)r * ld + p], y = k[off + (size_t)j * ld + p];
                    s += x * y, mag += fabs(x * y);
                }
                const size_t at = (size_t)i * T * T + (size_t)r * T + j;
                const double ref = s + 0.5 * c[at];
                cr_assert(fabs(out[at] - ref) <= 5e-3 * mag + 1e-6 * (mag + 0.5) + 1e-6,
                          "item %d C[%d,%d] = %.8g, reference %.8g", i, r, j, out[at], ref);
            }
    }
    cr_assert_eq(g_be->gemm_batched(&g, -1, a, b, o), ZP_EINVAL);
    g_be->free(dq), g_be->free(dk), g_be->free(dc);
    free(q), free(k), free(c), free(out);
}

Test(cuda, gemm_bad_arguments_rejected)
{
    need_cuda();
    zp_gemm_args g = {.m = 2, .n = 2, .k = 2, .alpha = 1, .a = (void *)16, .lda = 1, .b = (void *)16, .ldb = 2,
                      .c = (float *)16, .ldc = 2};
    cr_assert_eq(g_be->gemm(&g), ZP_EINVAL);
    cr_assert(strstr(zp_error_message(), "lda"), "%s", zp_error_message());
}

/* ---- fused Adam ---- */

typedef struct {
    size_t n;
    float *p, *g, *m, *v;
    uint16_t *h;
} adam_host;

static adam_host adam_host_new(size_t n, float gscale)
{
    adam_host s = {.n = n, .p = frand_vec(n, 1), .g = frand_vec(n, gscale), .m = frand_vec(n, 0.01f),
                   .v = malloc(n * 4 + 4), .h = calloc(n + 1, 2)};
    for (size_t i = 0; i < n; i++)
        s.v[i] = 1e-4f * fabsf((float)drand());
    return s;
}

static void adam_host_free(adam_host *s) { free(s->p), free(s->g), free(s->m), free(s->v), free(s->h); }

/* The same steps on the cpu backend and on the GPU from the same state; every array must agree to an ulp
 * or two (the arithmetic is the shared zp_elementwise.h; nvcc may contract a multiply-add into an FMA). */
static void adam_compare(size_t n, zp_adam_hparams hp, zp_dtype half, int steps, float gscale)
{
    need_cuda();
    adam_host c = adam_host_new(n, gscale);
    float *dp = up(c.p, n * 4), *dg = up(c.g, n * 4), *dm = up(c.m, n * 4), *dv = up(c.v, n * 4);
    uint16_t *dh = up(c.h, n * 2);
    zp_adam_buffers hb = {.n = n, .param = c.p, .grad = c.g, .m = c.m, .v = c.v, .half = c.h, .half_dtype = half};
    zp_adam_buffers db = {.n = n, .param = dp, .grad = dg, .m = dm, .v = dv, .half = dh, .half_dtype = half};
    for (int s = 1; s <= steps; s++) {
        hp.step = s;
        zp_adam_result rc = {1, 1}, rd = {1, 1};
        OK(zp_adam_step_cpu(&hp, &hb, &rc));
        OK(g_be->adam_step(&hp, &db, &rd));
        cr_assert(!rc.overflow && !rd.overflow, "step %d overflowed (cpu %d, cuda %d)", s, rc.overflow, rd.overflow);
    }
    float *p = malloc(n * 4), *m = malloc(n * 4), *v = malloc(n * 4);
    uint16_t *h = malloc(n * 2);
    down(p, dp, n * 4), down(m, dm, n * 4), down(v, dv, n * 4), down(h, dh, n * 2);
    /* m = b1 m + (1 - b1) g cancels where the step's gradient undoes the last: an FMA's one-ulp difference
     * of the terms is then a large fraction of a tiny m (seen on an H100: m -7.40576e-05 against -7.40578e-05,
     * terms ~0.05). So the absolute floor is a few ulp of the array's largest moment, not of the element. */
    double mmax = 0, vmax = 0;
    for (size_t i = 0; i < n; i++)
        mmax = fmax(mmax, fabs(c.m[i])), vmax = fmax(vmax, fabs(c.v[i]));
    for (size_t i = 0; i < n; i++) {
        cr_assert(close_to(p[i], c.p[i], 1e-6, 1e-9), "param %zu: cuda %.9g cpu %.9g", i, p[i], c.p[i]);
        cr_assert(close_to(m[i], c.m[i], 1e-6, fmax(1e-12, 2.5e-7 * mmax)), "m %zu: cuda %.9g cpu %.9g", i, m[i],
                  c.m[i]);
        cr_assert(close_to(v[i], c.v[i], 1e-6, fmax(1e-15, 2.5e-7 * vmax)), "v %zu: cuda %.9g cpu %.9g", i, v[i],
                  c.v[i]);
        double hv = half == ZP_DT_F16 ? zp_f16_to_f32(h[i]) : zp_bf16_to_f32(h[i]);
        double hc = half == ZP_DT_F16 ? zp_f16_to_f32(c.h[i]) : zp_bf16_to_f32(c.h[i]);
        double ulp = fabs(hc) * (half == ZP_DT_F16 ? 1.0 / 1024 : 1.0 / 128) + 1e-7;
        cr_assert(fabs(hv - hc) <= ulp, "16-bit copy %zu: cuda %.6g cpu %.6g", i, hv, hc);
    }
    g_be->free(dp), g_be->free(dg), g_be->free(dm), g_be->free(dv), g_be->free(dh);
    free(p), free(m), free(v), free(h);
    adam_host_free(&c);
}

Test(cuda, adam_matches_cpu_fp16_copy)
{
    zp_adam_hparams hp = zp_adam_hparams_default();
    adam_compare(1, hp, ZP_DT_F16, 1, 1.0f);
    adam_compare(100003, hp, ZP_DT_F16, 3, 1.0f);
}

Test(cuda, adamw_loss_scale_clip_matches_cpu_bf16_copy)
{
    zp_adam_hparams hp = zp_adam_hparams_default();
    hp.adamw = 1;
    hp.weight_decay = 0.01;
    hp.loss_scale = 1024;
    hp.clip = 0.5;
    hp.lr = 3e-4;
    adam_compare((size_t)1 << 20 | 3, hp, ZP_DT_BF16, 2, 1024.0f);
    hp.grads_checked = 1;
    hp.bias_correction = 0;
    adam_compare(4099, hp, ZP_DT_BF16, 2, 1024.0f);
}

Test(cuda, adam_overflow_skips_the_step_and_grad_check_counts)
{
    need_cuda();
    const size_t n = 70001;
    adam_host c = adam_host_new(n, 1);
    c.g[5] = NAN, c.g[n - 1] = INFINITY, c.g[n / 2] = -INFINITY;
    float *dp = up(c.p, n * 4), *dg = up(c.g, n * 4), *dm = up(c.m, n * 4), *dv = up(c.v, n * 4);
    uint16_t *dh = up(c.h, n * 2);
    size_t bad = 0;
    OK(g_be->grad_check(dg, n, &bad));
    cr_assert_eq(bad, 3, "grad_check counted %zu non-finite gradients, not 3", bad);
    zp_adam_hparams hp = zp_adam_hparams_default();
    zp_adam_buffers db = {.n = n, .param = dp, .grad = dg, .m = dm, .v = dv, .half = dh, .half_dtype = ZP_DT_F16};
    zp_adam_result r = {0, 0};
    OK(g_be->adam_step(&hp, &db, &r));
    cr_assert(r.overflow && r.nonfinite == 3, "overflow %d nonfinite %zu", r.overflow, r.nonfinite);
    float *p = malloc(n * 4), *m = malloc(n * 4);
    down(p, dp, n * 4), down(m, dm, n * 4);
    cr_assert(memcmp(p, c.p, n * 4) == 0 && memcmp(m, c.m, n * 4) == 0, "a skipped step changed the state");
    g_be->free(dp), g_be->free(dg), g_be->free(dm), g_be->free(dv), g_be->free(dh);
    free(p), free(m);
    adam_host_free(&c);
}

/* ---- layer kernels: zp_nn_ops_cuda against zp_nn_ops_cpu ---- */

static void same(const float *gpu_dev, const float *cpu, size_t n, double rtol, double atol, const char *what)
{
    float *g = malloc(n * 4 + 4);
    down(g, gpu_dev, n * 4);
    for (size_t i = 0; i < n; i++)
        cr_assert(close_to(g[i], cpu[i], rtol, atol), "%s[%zu]: cuda %.9g cpu %.9g", what, i, g[i], cpu[i]);
    free(g);
}

static float *zeros(size_t n) { return calloc(n + 1, sizeof(float)); }

static float *dev_zeros(size_t n)
{
    float *d = NULL;
    OK(g_be->alloc(n * 4, (void **)&d));
    OK(g_be->zero(d, n * 4));
    return d;
}

/* Frees the device buffers listed (a test's, at its end). */
static void dev_free_n(void *const *dev, size_t n)
{
    for (size_t i = 0; i < n; i++)
        g_be->free(dev[i]);
}
#define DEV_FREE(...) dev_free_n((void *const[]){__VA_ARGS__}, sizeof((void *[]){__VA_ARGS__}) / sizeof(void *))

Test(cuda, nn_embedding)
{
    need_cuda();
    const size_t N = 300, C = 96, T = 100, V = 500, vrows = 250;
    const long v0 = 200;
    int *tok = malloc(N * sizeof(int));
    for (size_t i = 0; i < N; i++)
        tok[i] = (int)((i * 7919) % V);
    float *wte = frand_vec(vrows * C, 1), *wpe = frand_vec(T * C, 1), *dout = frand_vec(N * C, 1);
    int *dtok = up(tok, N * sizeof(int));
    float *dwte = up(wte, vrows * C * 4), *dwpe = up(wpe, T * C * 4), *ddout = up(dout, N * C * 4);
    float *out = zeros(N * C), *dout_ = dev_zeros(N * C);
    OK(zp_nn_ops_cpu.embed_fwd(out, tok, N, C, wte, v0, vrows, wpe, T));
    OK(g_nn->embed_fwd(dout_, dtok, N, C, dwte, v0, vrows, dwpe, T));
    same(dout_, out, N * C, 0, 0, "embed_fwd");
    float *gw = zeros(vrows * C), *gp = zeros(T * C), *dgw = dev_zeros(vrows * C), *dgp = dev_zeros(T * C);
    OK(zp_nn_ops_cpu.embed_bwd(gw, gp, tok, dout, N, C, v0, vrows, T));
    OK(g_nn->embed_bwd(dgw, dgp, dtok, ddout, N, C, v0, vrows, T));
    same(dgw, gw, vrows * C, 1e-6, 1e-6, "embed_bwd dwte");
    same(dgp, gp, T * C, 1e-6, 1e-6, "embed_bwd dwpe");
    DEV_FREE(dtok, dwte, dwpe, ddout, dout_, dgw, dgp);
    free(tok), free(wte), free(wpe), free(dout), free(out), free(gw), free(gp);
}

Test(cuda, nn_layernorm)
{
    need_cuda();
    const size_t N = 257, C = 384;
    float *x = frand_vec(N * C, 2), *w = frand_vec(C, 1), *b = frand_vec(C, 1), *dout = frand_vec(N * C, 1);
    float *dx = up(x, N * C * 4), *dw = up(w, C * 4), *dbb = up(b, C * 4), *dd = up(dout, N * C * 4);
    float *out = zeros(N * C), *mean = zeros(N), *rstd = zeros(N);
    float *gout = dev_zeros(N * C), *gmean = dev_zeros(N), *grstd = dev_zeros(N);
    OK(zp_nn_ops_cpu.layernorm_fwd(out, mean, rstd, x, w, b, N, C));
    OK(g_nn->layernorm_fwd(gout, gmean, grstd, dx, dw, dbb, N, C));
    same(gout, out, N * C, 1e-5, 1e-5, "layernorm_fwd out");
    same(gmean, mean, N, 1e-5, 1e-6, "layernorm_fwd mean");
    same(grstd, rstd, N, 1e-5, 1e-6, "layernorm_fwd rstd");
    float *gx = zeros(N * C), *gw = zeros(C), *gb = zeros(C);
    float *dgx = dev_zeros(N * C), *dgw = dev_zeros(C), *dgb = dev_zeros(C);
    OK(zp_nn_ops_cpu.layernorm_bwd(gx, gw, gb, dout, x, w, mean, rstd, N, C));
    OK(g_nn->layernorm_bwd(dgx, dgw, dgb, dd, dx, dw, gmean, grstd, N, C));
    same(dgx, gx, N * C, 1e-4, 1e-5, "layernorm_bwd dx");
    same(dgw, gw, C, 1e-4, 1e-4, "layernorm_bwd dw");
    same(dgb, gb, C, 1e-5, 1e-5, "layernorm_bwd db");
    DEV_FREE(dx, dw, dbb, dd, gout, gmean, grstd, dgx, dgw, dgb);
    free(x), free(w), free(b), free(dout), free(out), free(mean), free(rstd), free(gx), free(gw), free(gb);
}

Test(cuda, nn_rmsnorm_glu_rope)
{
    need_cuda();
    const size_t N = 257, C = 384, F = 200, heads = 5, hd = 64, T = 100;
    float *x = frand_vec(N * C, 2), *w = frand_vec(C, 1), *dout = frand_vec(N * C, 1);
    float *dx = up(x, N * C * 4), *dw = up(w, C * 4), *dd = up(dout, N * C * 4);
    float *out = zeros(N * C), *rstd = zeros(N), *gout = dev_zeros(N * C), *grstd = dev_zeros(N);
    OK(zp_nn_ops_cpu.rmsnorm_fwd(out, rstd, x, w, N, C));
    OK(g_nn->rmsnorm_fwd(gout, grstd, dx, dw, N, C));
    same(gout, out, N * C, 1e-5, 1e-5, "rmsnorm_fwd out");
    same(grstd, rstd, N, 1e-5, 1e-6, "rmsnorm_fwd rstd");
    float *gx = zeros(N * C), *gw = zeros(C), *dgx = dev_zeros(N * C), *dgw = dev_zeros(C);
    OK(zp_nn_ops_cpu.rmsnorm_bwd(gx, gw, dout, x, w, rstd, N, C));
    OK(g_nn->rmsnorm_bwd(dgx, dgw, dd, dx, dw, grstd, N, C));
    same(dgx, gx, N * C, 1e-4, 1e-5, "rmsnorm_bwd dx");
    same(dgw, gw, C, 1e-4, 1e-4, "rmsnorm_bwd dw");
    /* SwiGLU and GeGLU */
    float *u = frand_vec(N * 2 * F, 4), *gd = frand_vec(N * F, 1), *o = zeros(N * F), *du = zeros(N * 2 * F);
    float *du_ = up(u, N * 2 * F * 4), *dgd = up(gd, N * F * 4), *go = dev_zeros(N * F), *gdu = dev_zeros(N * 2 * F);
    for (int act = ZP_GLU_SILU; act <= ZP_GLU_GELU; act++) {
        OK(zp_nn_ops_cpu.glu_fwd(o, u, N, F, act));
        OK(g_nn->glu_fwd(go, du_, N, F, act));
        same(go, o, N * F, 1e-5, 1e-6, "glu_fwd");
        OK(zp_nn_ops_cpu.glu_bwd(du, gd, u, N, F, act));
        OK(g_nn->glu_bwd(gdu, dgd, du_, N, F, act));
        same(gdu, du, N * 2 * F, 1e-5, 1e-6, "glu_bwd");
    }
    /* rotary over the first `heads` heads of rows of C columns, forward then back */
    float *r = frand_vec(N * C, 1), *dr = up(r, N * C * 4);
    OK(zp_nn_ops_cpu.rope(r, N, C, heads, hd, T, 10000.0f, 0));
    OK(g_nn->rope(dr, N, C, heads, hd, T, 10000.0f, 0));
    same(dr, r, N * C, 1e-5, 1e-5, "rope");
    OK(zp_nn_ops_cpu.rope(r, N, C, heads, hd, T, 10000.0f, 1));
    OK(g_nn->rope(dr, N, C, heads, hd, T, 10000.0f, 1));
    same(dr, r, N * C, 1e-5, 1e-5, "rope inverse");
    DEV_FREE(dx, dw, dd, gout, grstd, dgx, dgw, du_, dgd, go, gdu, dr);
    free(x), free(w), free(dout), free(out), free(rstd), free(gx), free(gw), free(u), free(gd), free(o), free(du);
    free(r);
}

Test(cuda, nn_moe_routing)
{
    need_cuda();
    const size_t Nt = 300, k = 2, C = 96, R = Nt * k;
    int *slot = malloc(R * sizeof(int)), *idx = malloc(R * sizeof(int));
    for (size_t p = 0; p < R; p++) {
        slot[p] = (int)((p * 7919 + 11) % R);
        idx[slot[p]] = (int)(p / k);
    }
    int *dslot = up(slot, R * sizeof(int)), *didx = up(idx, R * sizeof(int));
    float *x = frand_vec(Nt * C, 1), *y = frand_vec(R * C, 1), *gate = frand_vec(R, 1), *dout = frand_vec(Nt * C, 1);
    float *dx = up(x, Nt * C * 4), *dy = up(y, R * C * 4), *dg = up(gate, R * 4), *dd = up(dout, Nt * C * 4);
    float *rows = zeros(R * C), *grows = dev_zeros(R * C), *out = zeros(Nt * C), *gout = dev_zeros(Nt * C);
    OK(zp_nn_ops_cpu.moe_gather(rows, x, idx, R, C));
    OK(g_nn->moe_gather(grows, dx, didx, R, C));
    same(grows, rows, R * C, 0, 0, "moe_gather");
    OK(zp_nn_ops_cpu.moe_combine(out, y, slot, gate, Nt, k, C));
    OK(g_nn->moe_combine(gout, dy, dslot, dg, Nt, k, C));
    same(gout, out, Nt * C, 1e-6, 1e-6, "moe_combine");
    float *drows = zeros(R * C), *gdrows = dev_zeros(R * C), *dgt = zeros(R), *gdgt = dev_zeros(R);
    OK(zp_nn_ops_cpu.moe_combine_bwd(drows, dgt, dout, y, slot, gate, Nt, k, C));
    OK(g_nn->moe_combine_bwd(gdrows, gdgt, dd, dy, dslot, dg, Nt, k, C));
    same(gdrows, drows, R * C, 1e-6, 1e-7, "moe_combine_bwd rows");
    same(gdgt, dgt, R, 1e-5, 1e-6, "moe_combine_bwd gates");
    DEV_FREE(dslot, didx, dx, dy, dg, dd, grows, gout, gdrows, gdgt);
    free(slot), free(idx), free(x), free(y), free(gate), free(dout), free(rows), free(out), free(drows), free(dgt);
}

Test(cuda, nn_gelu)
{
    need_cuda();
    const size_t n = 100003;
    float *x = frand_vec(n, 4), *d = frand_vec(n, 1), *out = zeros(n);
    float *dx = up(x, n * 4), *dd = up(d, n * 4), *gout = dev_zeros(n);
    OK(zp_nn_ops_cpu.gelu_fwd(out, x, n));
    OK(g_nn->gelu_fwd(gout, dx, n));
    same(gout, out, n, 1e-5, 1e-6, "gelu_fwd");
    OK(zp_nn_ops_cpu.gelu_bwd(d, x, n));
    OK(g_nn->gelu_bwd(dd, dx, n));
    same(dd, d, n, 1e-5, 1e-6, "gelu_bwd");
    g_be->free(dx), g_be->free(dd), g_be->free(gout);
    free(x), free(d), free(out);
}

Test(cuda, nn_causal_softmax)
{
    need_cuda();
    const size_t BH = 12, T = 128;
    const float scale = 0.125f;
    float *s = frand_vec(BH * T * T, 8), *d = frand_vec(BH * T * T, 1);
    float *ds = up(s, BH * T * T * 4), *dd = up(d, BH * T * T * 4);
    OK(zp_nn_ops_cpu.softmax_causal_fwd(s, BH, T, scale));
    OK(g_nn->softmax_causal_fwd(ds, BH, T, scale));
    same(ds, s, BH * T * T, 1e-5, 1e-7, "softmax_causal_fwd");
    OK(zp_nn_ops_cpu.softmax_causal_bwd(d, s, BH, T, scale));
    OK(g_nn->softmax_causal_bwd(dd, ds, BH, T, scale));
    same(dd, d, BH * T * T, 1e-4, 1e-6, "softmax_causal_bwd");
    g_be->free(ds), g_be->free(dd);
    free(s), free(d);
}

Test(cuda, nn_cross_entropy)
{
    need_cuda();
    const size_t N = 200, V = 3000;
    const long v0 = 1000; /* this shard holds columns [1000, 4000) of the vocabulary */
    float *l = frand_vec(N * V, 6);
    int *tgt = malloc(N * sizeof(int));
    for (size_t i = 0; i < N; i++)
        tgt[i] = (int)((i * 104729) % 5000); /* some targets outside the shard */
    float *dl = up(l, N * V * 4);
    int *dt = up(tgt, N * sizeof(int));
    float *mx = zeros(N), *se = zeros(N), *lt = zeros(N);
    float *gmx = dev_zeros(N), *gse = dev_zeros(N), *glt = dev_zeros(N);
    OK(zp_nn_ops_cpu.xent_rowmax(mx, l, N, V));
    OK(g_nn->xent_rowmax(gmx, dl, N, V));
    same(gmx, mx, N, 0, 0, "xent_rowmax");
    OK(zp_nn_ops_cpu.xent_sumexp(se, l, mx, N, V));
    OK(g_nn->xent_sumexp(gse, dl, gmx, N, V));
    same(gse, se, N, 1e-5, 1e-6, "xent_sumexp");
    OK(zp_nn_ops_cpu.xent_pick(lt, l, tgt, v0, N, V));
    OK(g_nn->xent_pick(glt, dl, dt, v0, N, V));
    same(glt, lt, N, 0, 0, "xent_pick");
    double sc = 0, sg = 0;
    OK(zp_nn_ops_cpu.xent_loss_sum(mx, se, lt, N, &sc));
    OK(g_nn->xent_loss_sum(gmx, gse, glt, N, &sg));
    cr_assert(close_to(sg, sc, 1e-6, 1e-6), "xent_loss_sum: cuda %.9g cpu %.9g", sg, sc);
    OK(zp_nn_ops_cpu.xent_bwd(l, mx, se, tgt, v0, N, V, 0.25f));
    OK(g_nn->xent_bwd(dl, gmx, gse, dt, v0, N, V, 0.25f));
    same(dl, l, N * V, 1e-5, 1e-8, "xent_bwd");
    DEV_FREE(dl, dt, gmx, gse, glt);
    free(l), free(tgt), free(mx), free(se), free(lt);
}

Test(cuda, nn_bias_residual_add_and_f16)
{
    need_cuda();
    const size_t N = 301, C = 257, n = N * C;
    float *a = frand_vec(n, 1), *b = frand_vec(n, 1), *bias = frand_vec(C, 1);
    float *da = up(a, n * 4), *dbb = up(b, n * 4), *dbias = up(bias, C * 4);
    float *out = zeros(n), *gout = dev_zeros(n);
    OK(zp_nn_ops_cpu.residual_add(out, a, b, bias, N, C));
    OK(g_nn->residual_add(gout, da, dbb, dbias, N, C));
    same(gout, out, n, 2e-7, 1e-7, "residual_add");
    OK(zp_nn_ops_cpu.residual_add(out, a, b, NULL, N, C));
    OK(g_nn->residual_add(gout, da, dbb, NULL, N, C));
    same(gout, out, n, 0, 0, "residual_add without bias");
    OK(zp_nn_ops_cpu.bias_add(out, bias, N, C));
    OK(g_nn->bias_add(gout, dbias, N, C));
    same(gout, out, n, 0, 0, "bias_add");
    float *db = zeros(C), *gdb = dev_zeros(C);
    OK(zp_nn_ops_cpu.bias_grad(db, a, N, C));
    OK(g_nn->bias_grad(gdb, da, N, C));
    same(gdb, db, C, 1e-6, 1e-6, "bias_grad");
    OK(zp_nn_ops_cpu.add(out, a, n));
    OK(g_nn->add(gout, da, n));
    same(gout, out, n, 0, 0, "add");
    uint16_t *h = malloc(n * 2);
    for (size_t i = 0; i < n; i++)
        h[i] = zp_f32_to_f16(a[i] * 100.0f);
    uint16_t *dh = up(h, n * 2);
    OK(zp_nn_ops_cpu.f16_to_f32(out, h, n));
    OK(g_nn->f16_to_f32(gout, dh, n));
    same(gout, out, n, 0, 0, "f16_to_f32");
    DEV_FREE(da, dbb, dbias, gout, gdb, dh);
    free(a), free(b), free(bias), free(out), free(db), free(h);
}
