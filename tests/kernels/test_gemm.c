/* GEMM through the cpu backend against a naive double-precision reference; backend lookup. */
#include <criterion/criterion.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "zp_elementwise.h"
#include "zp_kernels.h"

static unsigned seed = 12345;
static float frand(void)
{
    seed = seed * 1103515245u + 12345u;
    return (float)((seed >> 8) & 0xffff) / 32768.0f - 1.0f;
}

/* op(A)(i,p) with A stored row-major with leading dimension lda */
static double at(const float *a, int lda, int trans, int i, int p) { return trans ? a[p * lda + i] : a[i * lda + p]; }

static void check_gemm(int m, int n, int k, int ta, int tb, float alpha, float beta, int pad)
{
    int lda = (ta ? m : k) + pad, ldb = (tb ? k : n) + pad, ldc = n + pad;
    int arows = ta ? k : m, brows = tb ? n : k;
    float *a = malloc(sizeof(float) * (size_t)(arows * lda + 1));
    float *b = malloc(sizeof(float) * (size_t)(brows * ldb + 1));
    float *c = malloc(sizeof(float) * (size_t)(m * ldc + 1));
    double *ref = malloc(sizeof(double) * (size_t)(m * n + 1));
    for (int i = 0; i < arows * lda; i++)
        a[i] = frand();
    for (int i = 0; i < brows * ldb; i++)
        b[i] = frand();
    for (int i = 0; i < m * ldc; i++)
        c[i] = frand();
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            double s = 0;
            for (int p = 0; p < k; p++)
                s += at(a, lda, ta, i, p) * (tb ? b[j * ldb + p] : b[p * ldb + j]);
            ref[i * n + j] = alpha * s + beta * c[i * ldc + j];
        }
    zp_gemm_args g = {.trans_a = ta, .trans_b = tb, .m = m, .n = n, .k = k, .alpha = alpha, .beta = beta,
                      .a = a, .lda = lda, .b = b, .ldb = ldb, .c = c, .ldc = ldc, .in_dtype = ZP_DT_F32};
    cr_assert_eq(zp_kernels_cpu.gemm(&g), ZP_OK, "%s", zp_error_message());
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            double tol = 1e-6 * (k + 2) * (fabs(alpha) + fabs(beta));
            cr_assert(fabs(c[i * ldc + j] - ref[i * n + j]) <= tol, "(%d,%d,%d) ta=%d tb=%d C[%d,%d]=%.8g ref %.8g", m,
                      n, k, ta, tb, i, j, c[i * ldc + j], ref[i * n + j]);
        }
    free(a), free(b), free(c), free(ref);
}

Test(gemm, matches_naive_reference)
{
    const int shapes[][3] = {{1, 1, 1}, {7, 5, 3}, {64, 33, 17}, {3, 130, 257}, {96, 96, 96}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int ta = 0; ta < 2; ta++)
            for (int tb = 0; tb < 2; tb++) {
                check_gemm(shapes[s][0], shapes[s][1], shapes[s][2], ta, tb, 1.0f, 0.0f, 0);
                check_gemm(shapes[s][0], shapes[s][1], shapes[s][2], ta, tb, 0.5f, -0.25f, 3);
            }
}

static void check_16bit(zp_dtype dt)
{
    int m = 19, n = 23, k = 41;
    uint16_t *a = malloc(sizeof(uint16_t) * m * k), *b = malloc(sizeof(uint16_t) * k * n);
    float *c = calloc((size_t)m * n, sizeof(float));
    for (int i = 0; i < m * k; i++)
        a[i] = dt == ZP_DT_F16 ? zp_f32_to_f16(frand()) : zp_f32_to_bf16(frand());
    for (int i = 0; i < k * n; i++)
        b[i] = dt == ZP_DT_F16 ? zp_f32_to_f16(frand()) : zp_f32_to_bf16(frand());
    zp_gemm_args g = {.m = m, .n = n, .k = k, .alpha = 1, .beta = 0, .a = a, .lda = k, .b = b, .ldb = n, .c = c,
                      .ldc = n, .in_dtype = dt};
    cr_assert_eq(zp_gemm_cpu(&g), ZP_OK, "%s", zp_error_message());
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            double s = 0;
            for (int p = 0; p < k; p++)
                s += dt == ZP_DT_F16 ? (double)zp_f16_to_f32(a[i * k + p]) * zp_f16_to_f32(b[p * n + j])
                                    : (double)zp_bf16_to_f32(a[i * k + p]) * zp_bf16_to_f32(b[p * n + j]);
            cr_assert(fabs(c[i * n + j] - s) <= 1e-4 * k, "C[%d,%d] %.6g ref %.6g", i, j, c[i * n + j], s);
        }
    free(a), free(b), free(c);
}

Test(gemm, fp16_and_bf16_inputs)
{
    check_16bit(ZP_DT_F16);
    check_16bit(ZP_DT_BF16);
}

Test(gemm, bad_arguments_rejected)
{
    float x[4] = {0};
    zp_gemm_args g = {.m = 2, .n = 2, .k = 2, .alpha = 1, .a = x, .lda = 1, .b = x, .ldb = 2, .c = x, .ldc = 2};
    cr_assert_eq(zp_gemm_cpu(&g), ZP_EINVAL);
    cr_assert(strstr(zp_error_message(), "lda"));
    g.lda = 2;
    g.in_dtype = ZP_DT_U8;
    cr_assert_eq(zp_gemm_cpu(&g), ZP_EINVAL);
    g.in_dtype = ZP_DT_F32;
    g.m = -1;
    cr_assert_eq(zp_gemm_cpu(&g), ZP_EINVAL);
}

Test(backend, lookup)
{
    const zp_kernels_backend *be = NULL;
    cr_assert_eq(zp_kernels_backend_get("cpu", &be), ZP_OK);
    cr_assert_str_eq(be->name, "cpu");
    cr_assert_eq(be->init(), ZP_OK);
    cr_assert_eq(zp_kernels_backend_get("tpu", &be), ZP_EINVAL);
    cr_assert(strstr(zp_error_message(), "tpu"));
}

Test(backend, cuda_without_device_says_no_cuda_device)
{
    const zp_kernels_backend *be = NULL;
    zp_status st = zp_kernels_backend_get("cuda", &be);
    if (st == ZP_OK)
        st = be->init(); /* no GPU on this machine: must fail cleanly, not crash */
    if (st == ZP_OK)
        cr_skip_test("a CUDA device is present");
    cr_assert(st == ZP_ENODEV || st == ZP_EUNSUPPORTED, "status %d", st);
    cr_assert(strncmp(zp_error_message(), "no CUDA device: ", 16) == 0, "message: %s", zp_error_message());
    cr_assert_eq(zp_status_exit_code(st), 2);
}

Test(backend, stream_kernels)
{
    size_t n = 100001;
    float *a = malloc(n * 4), *b = malloc(n * 4), *c = malloc(n * 4);
    for (size_t i = 0; i < n; i++)
        b[i] = (float)i, c[i] = 2.0f;
    cr_assert_eq(zp_kernels_cpu.stream_copy(a, b, n), ZP_OK);
    cr_assert(memcmp(a, b, n * 4) == 0);
    cr_assert_eq(zp_kernels_cpu.stream_triad(a, b, c, 3.0f, n), ZP_OK);
    for (size_t i = 0; i < n; i++)
        cr_assert_eq(a[i], (float)i + 6.0f);
    free(a), free(b), free(c);
}

/* Attention's per-head products as one batched call: heads are column blocks of wider rows (the executor's
 * QKV layout: lda = heads x width), the outputs disjoint; each item equals one gemm call on it bit for bit
 * (the cpu backend loops), and the naive reference within the fp32 bound. */
Test(gemm, batched_is_one_gemm_per_item)
{
    enum { H = 3, B = 2, T = 9, D = 5 };
    const int ld = H * D;
    float *q = malloc(sizeof(float) * B * T * ld), *k = malloc(sizeof(float) * B * T * ld);
    float *c = malloc(sizeof(float) * B * H * T * T), *c1 = malloc(sizeof(float) * B * H * T * T);
    for (int i = 0; i < B * T * ld; i++)
        q[i] = frand(), k[i] = frand();
    float *c0 = malloc(sizeof(float) * B * H * T * T);
    for (int i = 0; i < B * H * T * T; i++)
        c0[i] = c[i] = c1[i] = frand();
    const float *a[B * H], *b[B * H];
    float *out[B * H];
    for (int i = 0; i < B * H; i++)
        a[i] = q + (i / H) * T * ld + (i % H) * D, b[i] = k + (i / H) * T * ld + (i % H) * D, out[i] = c + i * T * T;
    zp_gemm_args g = {.trans_b = 1, .m = T, .n = T, .k = D, .alpha = 1, .beta = 0.5f, .lda = ld, .ldb = ld,
                      .ldc = T, .in_dtype = ZP_DT_F32};
    cr_assert_eq(zp_kernels_cpu.gemm_batched(&g, B * H, (const void *const *)a, (const void *const *)b, out), ZP_OK,
                 "%s", zp_error_message());
    for (int i = 0; i < B * H; i++) {
        zp_gemm_args one = g;
        one.a = a[i], one.b = b[i], one.c = c1 + i * T * T;
        cr_assert_eq(zp_gemm_cpu(&one), ZP_OK);
        for (int r = 0; r < T; r++)
            for (int j = 0; j < T; j++) {
                double s = 0;
                for (int p = 0; p < D; p++)
                    s += (double)a[i][r * ld + p] * b[i][j * ld + p];
                const float got = out[i][r * T + j];
                cr_assert_eq(got, c1[i * T * T + r * T + j], "item %d C[%d,%d] differs from one call", i, r, j);
                const double ref = s + 0.5 * c0[i * T * T + r * T + j];
                cr_assert(fabs(got - ref) <= 1e-6 * (D + 2) * 1.5, "item %d C[%d,%d] = %.8g, reference %.8g", i, r,
                          j, got, ref);
            }
    }
    /* bad input: a negative batch, missing arrays; batch 0 does nothing */
    cr_assert_eq(zp_kernels_cpu.gemm_batched(&g, -1, (const void *const *)a, (const void *const *)b, out), ZP_EINVAL);
    cr_assert_eq(zp_kernels_cpu.gemm_batched(&g, 2, NULL, (const void *const *)b, out), ZP_EINVAL);
    cr_assert_eq(zp_kernels_cpu.gemm_batched(&g, 0, NULL, NULL, NULL), ZP_OK);
    free(q), free(k), free(c), free(c1), free(c0);
}
