/* bench_kernels — the cpu backend's kernels side by side with the machine's limits, in one run:
 *   memory bandwidth (STREAM copy and triad) and the fused Adam's effective bandwidth (bytes
 *   counted: reads of fp32 param, grad, m, v; writes of fp32 param, m, v and the fp16 copy =
 *   30 B/param), printed as ratios; GEMM through the backend vs cblas_sgemm directly.
 * Prints "adam N PARAMS_PER_S" lines that bench/kernels.sh compares with PyTorch.
 * usage: bench_kernels [--quick] */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>

#include "zp_kernels.h"
#include "zp_stats.h"
#include "zp_time.h"

static float *falloc(size_t n, float v)
{
    float *p = NULL;
    if (zp_kernels_cpu.alloc(n * sizeof(float), (void **)&p) != ZP_OK) {
        fprintf(stderr, "bench_kernels: %s\n", zp_error_message());
        exit(1);
    }
    for (size_t i = 0; i < n; i++)
        p[i] = v;
    return p;
}

int main(int argc, char **argv)
{
    int quick = argc > 1 && strcmp(argv[1], "--quick") == 0;
    const int reps = quick ? 5 : 11;
    const zp_kernels_backend *be = &zp_kernels_cpu;
    printf("# zplan kernel bench: cpu backend, %d OpenMP threads, %s\n", zp_kernels_cpu_threads(),
           quick ? "quick" : "full");

    /* ---- memory bandwidth and Adam, interleaved: each Adam repetition runs between a copy and
     * a triad repetition, so all three see the same machine state ---- */
    const size_t nb = (size_t)32 << 20;
    float *a = falloc(nb, 0), *b = falloc(nb, 1), *c = falloc(nb, 2);
    printf("\nfused Adam with fp16 copy (30 B/param counted) vs STREAM (%zu floats) measured alongside\n", nb);
    printf("%10s %12s %9s %9s %9s %9s %9s %14s\n", "params", "params/s", "Adam GB/s", "copy", "triad", "vs triad",
           "vs copy", "+check GB/s");
    const size_t sizes[] = {(size_t)1 << 20, (size_t)4 << 20, (size_t)16 << 20, (size_t)32 << 20};
    const int nsizes = quick ? 3 : 4;
    for (int s = 0; s < nsizes; s++) {
        size_t n = sizes[s];
        float *p = falloc(n, 0.5f), *g = falloc(n, 1e-3f), *m = falloc(n, 0), *v = falloc(n, 0);
        uint16_t *h = NULL;
        zp_kernels_cpu.alloc(n * 2, (void **)&h);
        memset(h, 0, n * 2);
        zp_adam_hparams hp = zp_adam_hparams_default();
        zp_adam_buffers buf = {.n = n, .param = p, .grad = g, .m = m, .v = v, .half = h, .half_dtype = ZP_DT_F16};
        /* inner repetitions make each timed Adam sample >= ~20 ms */
        int inner = (int)((32u << 20) / n);
        double tc[64], tt[64], ta[64], tk[64];
        for (int r = -1; r < reps; r++) {
            double t0 = zp_time_now_s();
            be->stream_copy(a, b, nb);
            double t1 = zp_time_now_s();
            hp.grads_checked = 1; /* the trainer's overflow check, timed separately below */
            for (int i = 0; i < inner; i++)
                zp_adam_step_cpu(&hp, &buf, NULL);
            double t2 = zp_time_now_s();
            be->stream_triad(a, b, c, 3.0f, nb);
            double t3 = zp_time_now_s();
            hp.grads_checked = 0;
            for (int i = 0; i < inner; i++)
                zp_adam_step_cpu(&hp, &buf, NULL);
            double t4 = zp_time_now_s();
            if (r >= 0)
                tc[r] = t1 - t0, ta[r] = (t2 - t1) / inner, tt[r] = t3 - t2, tk[r] = (t4 - t3) / inner;
        }
        double copy = 8.0 * nb / zp_stats_median(tc, (size_t)reps) / 1e9;
        double triad = 12.0 * nb / zp_stats_median(tt, (size_t)reps) / 1e9;
        double t = zp_stats_median(ta, (size_t)reps);
        double gbs = (double)ZP_ADAM_BYTES_PER_PARAM * n / t / 1e9;
        double gbs_chk = (double)(ZP_ADAM_BYTES_PER_PARAM + 4) * n / zp_stats_median(tk, (size_t)reps) / 1e9;
        printf("%10zu %12.4g %9.1f %9.1f %9.1f %8.0f%% %8.0f%% %14.1f\n", n, n / t, gbs, copy, triad,
               100 * gbs / triad, 100 * gbs / copy, gbs_chk);
        printf("adam %zu %.6g\n", n, n / t);
        be->free(p), be->free(g), be->free(m), be->free(v), be->free(h);
    }
    be->free(a), be->free(b), be->free(c);

    /* ---- GEMM: backend vs OpenBLAS directly, same buffers, interleaved ---- */
    printf("\nGEMM fp32: backend vs cblas_sgemm (transformer layer shapes, tokens 2048)\n");
    printf("%24s %14s %14s %10s\n", "(m, n, k)", "backend GF/s", "OpenBLAS GF/s", "ratio");
    const int hs[] = {512, 1024, 2048};
    const int nh = quick ? 2 : 3;
    const int T = 2048;
    size_t maxe = (size_t)T * 4 * hs[nh - 1];
    float *A = falloc(maxe, 0.01f), *B = falloc((size_t)4 * hs[nh - 1] * hs[nh - 1], 0.01f), *C = falloc(maxe, 0);
    double worst = 1e9, sum_b = 0, sum_o = 0, log_sum = 0;
    int nshapes = 0;
    for (int i = 0; i < nh; i++) {
        int h = hs[i];
        int shapes[4][3] = {{T, 3 * h, h}, {T, h, h}, {T, 4 * h, h}, {T, h, 4 * h}};
        for (int s = 0; s < 4; s++) {
            int m = shapes[s][0], n = shapes[s][1], k = shapes[s][2];
            zp_gemm_args g = {.m = m, .n = n, .k = k, .alpha = 1, .beta = 0, .a = A, .lda = k, .b = B, .ldb = n,
                              .c = C, .ldc = n, .in_dtype = ZP_DT_F32};
            double tb = 0, to = 0;
            int r = quick ? 5 : 11;
            /* alternate the two so drift in clock or load hits both alike, and compare the fastest run of
             * each: on a shared machine noise only ever adds time, so the minimum is the code's speed */
            double tbs[16], tos[16];
            be->gemm(&g);
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f, A, k, B, n, 0.0f, C, n);
            for (int j = 0; j < r; j++) {
                double t0 = zp_time_now_s();
                be->gemm(&g);
                tbs[j] = zp_time_now_s() - t0;
                t0 = zp_time_now_s();
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f, A, k, B, n, 0.0f, C, n);
                tos[j] = zp_time_now_s() - t0;
            }
            tb = tbs[0], to = tos[0];
            for (int j = 1; j < r; j++)
                tb = fmin(tb, tbs[j]), to = fmin(to, tos[j]);
            double fl = 2.0 * m * n * k;
            char shape[32];
            snprintf(shape, sizeof shape, "(%d, %d, %d)", m, n, k);
            printf("%24s %14.1f %14.1f %9.3f\n", shape, fl / tb / 1e9, fl / to / 1e9, to / tb);
            worst = fmin(worst, to / tb);
            sum_b += tb;
            sum_o += to;
            log_sum += log(to / tb);
            nshapes++;
        }
    }
    /* A shape alone swings +-10% on a shared VM even for the same call; the sums and the geometric mean
     * over all shapes are what the target is judged on. */
    printf("all shapes: backend/OpenBLAS speed ratio %.3f (summed times), geometric mean %.3f (target within "
           "5%%: %s); worst single shape %.3f\n",
           sum_o / sum_b, exp(log_sum / nshapes), fabs(sum_o / sum_b - 1) <= 0.05 ? "met" : "MISSED", worst);
    be->free(A), be->free(B), be->free(C);
    return 0;
}
