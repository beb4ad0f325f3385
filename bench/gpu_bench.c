/* zp_gpu_bench — the cuda backend's kernels side by side with what the GPU reaches without zplan, in one
 * run, as JSON (the figures `gpu-bundle/gpu-check` judges; README, "The GPU check"):
 *   copy          a plain device-to-device cudaMemcpy and the backend's copy kernel (bytes read + written);
 *   adam          the fused Adam step (30 B/param counted: fp32 param, grad, m, v read; param, m, v and the
 *                 fp16 copy written) over sizes; fraction_of_copy = its GB/s / the better copy's GB/s;
 *   gemm          per input type (fp16, bf16, fp32 through TF32) and transformer-layer shape, the backend's
 *                 GEMM against a plain cublasGemmEx loop of the same call (own handle, no checks), calls
 *                 alternated; fraction = plain time / backend time, per shape and over the sum of shapes;
 *   nccl          the backend's NCCL collectives on a one-rank communicator (this GPU alone): time, algbw;
 *   host_device   pageable and pinned host <-> device copies.
 * Timing: the harness (common/zp_timing.h) with CUDA events on the default stream around loops of calls
 * lasting >= 20 ms, the median of 5.
 * usage: zp_gpu_bench [--quick] [-o FILE]     exit 0 ok, 1 run-time failure, 2 bad usage or no CUDA device
 *        zp_gpu_bench --probe                 only says whether the cuda backend can use a GPU (its name, or why not) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <jansson.h>

#include "zp_config.h"
#include "zp_elementwise.h"
#include "zp_io.h"
#include "zp_kernels.h"
#include "zp_timing.h"

static const zp_kernels_backend *be;
static zp_kernels_clock bench_clock; /* be's timer: CUDA events on the default stream */

static void die(const char *what)
{
    fprintf(stderr, "zp_gpu_bench: %s: %s\n", what, zp_error_message());
    exit(1);
}

#define TRY(expr)                    \
    do {                             \
        if ((expr) != ZP_OK)         \
            die(#expr);              \
    } while (0)

static void die_call(const char *call, const char *error, const char *file, int line)
{
    fprintf(stderr, "zp_gpu_bench: %s failed: %s (%s:%d)\n", call, error, file, line);
    exit(1);
}

/* A CUDA or cuBLAS call whose result r_ passes `ok`, or the run ends naming it and `error` of r_. */
#define CHECKED(type, call, ok, error)                                     \
    do {                                                                   \
        type r_ = (call);                                                  \
        if (!(ok))                                                         \
            die_call(#call, (error), __FILE__, __LINE__);                  \
    } while (0)
#define CUDA(call) CHECKED(cudaError_t, call, r_ == cudaSuccess, cudaGetErrorString(r_))
#define CUBLAS(call) CHECKED(cublasStatus_t, call, r_ == CUBLAS_STATUS_SUCCESS, cublasGetStatusString(r_))

/* Calls of fn per timed sample so that a sample lasts >= 20 ms: one warm call, one timed call. */
static int loop_size(zp_timing_fn fn, void *arg)
{
    zp_timing_opts o = {.warmup = 1, .reps = 1};
    zp_kernels_timing_hooks(&o, &bench_clock, NULL);
    zp_timing_result r;
    TRY(zp_timing_run(&o, fn, arg, &r));
    return zp_timing_inner(r.samples[0], 0.02, 3, 2000);
}

/* Seconds per call of each of n (<= 2) operations timed alternately (a, b, a, b, ...: all see the same
 * clocks and temperature) by the harness: loops of calls lasting >= 20 ms, the median of 5. */
static void per_call_ops(zp_timing_op *ops, int n, double *seconds)
{
    for (int k = 0; k < n; k++)
        ops[k].inner = loop_size(ops[k].fn, ops[k].ctx);
    zp_timing_opts o = {.warmup = 0, .reps = 5};
    zp_kernels_timing_hooks(&o, &bench_clock, NULL);
    zp_timing_result r[2];
    TRY(zp_timing_run_ops(&o, ops, n, r));
    for (int k = 0; k < n; k++)
        seconds[k] = r[k].median;
}

static double per_call(zp_timing_fn fn, void *arg)
{
    zp_timing_op op = {fn, arg, 1};
    double t;
    per_call_ops(&op, 1, &t);
    return t;
}

static void *dalloc(size_t bytes)
{
    void *p = NULL;
    TRY(be->alloc(bytes, &p));
    return p;
}

/* Fills device memory with a repeated 4 MiB host pattern of small random values of type dt. */
static void dfill(void *d, size_t bytes, zp_dtype dt)
{
    size_t chunk = (size_t)4 << 20;
    unsigned char *h = malloc(chunk);
    if (!h) {
        fprintf(stderr, "zp_gpu_bench: out of host memory\n");
        exit(1);
    }
    unsigned s = 12345;
    for (size_t i = 0; i < chunk / 4; i++) {
        s = s * 1103515245u + 12345u;
        float x = ((float)((s >> 8) & 0xffff) / 32768.0f - 1.0f) * 0.1f;
        if (dt == ZP_DT_F32) {
            memcpy(h + 4 * i, &x, 4);
        } else {
            uint16_t v = dt == ZP_DT_F16 ? zp_f32_to_f16(x) : zp_f32_to_bf16(x);
            memcpy(h + 4 * i, &v, 2);
            memcpy(h + 4 * i + 2, &v, 2);
        }
    }
    for (size_t off = 0; off < bytes; off += chunk)
        TRY(be->copy_to_device((char *)d + off, h, bytes - off < chunk ? bytes - off : chunk));
    free(h);
}

/* ---- copy ---- */

typedef struct {
    void *a, *b;
    size_t bytes;
} copy_arg;

static zp_status op_memcpy(void *p)
{
    copy_arg *c = p;
    CUDA(cudaMemcpyAsync(c->a, c->b, c->bytes, cudaMemcpyDeviceToDevice, 0));
    return ZP_OK;
}

static zp_status op_copy_kernel(void *p)
{
    copy_arg *c = p;
    return be->stream_copy(c->a, c->b, c->bytes / 4);
}

static double bench_copy(json_t *root, size_t bytes)
{
    copy_arg c = {dalloc(bytes), dalloc(bytes), bytes};
    dfill(c.b, bytes, ZP_DT_F32);
    zp_timing_op ops[2] = {{op_memcpy, &c, 1}, {op_copy_kernel, &c, 1}};
    double t[2];
    per_call_ops(ops, 2, t);
    const double tm = t[0], tk = t[1];
    be->free(c.a), be->free(c.b);
    double gm = 2.0 * bytes / tm / 1e9, gk = 2.0 * bytes / tk / 1e9;
    json_object_set_new(root, "copy", json_pack("{s:I,s:f,s:f,s:f,s:s}", "bytes", (json_int_t)bytes, "memcpy_gbs", gm,
                                                "kernel_gbs", gk, "reference_gbs", fmax(gm, gk), "counted",
                                                "bytes read + bytes written"));
    fprintf(stderr, "copy %zu B: cudaMemcpy %.0f GB/s, copy kernel %.0f GB/s\n", bytes, gm, gk);
    return fmax(gm, gk);
}

/* ---- Adam ---- */

static void bench_adam(json_t *root, const size_t *sizes, int nsizes, double copy_gbs)
{
    size_t nmax = sizes[nsizes - 1];
    float *p = dalloc(nmax * 4), *g = dalloc(nmax * 4), *m = dalloc(nmax * 4), *v = dalloc(nmax * 4);
    uint16_t *h = dalloc(nmax * 2);
    dfill(p, nmax * 4, ZP_DT_F32), dfill(g, nmax * 4, ZP_DT_F32);
    TRY(be->zero(m, nmax * 4));
    TRY(be->zero(v, nmax * 4));
    json_t *pts = json_array();
    double last_gbs = 0, last_check_gbs = 0;
    for (int i = 0; i < nsizes; i++) {
        zp_adam_op a = {.be = be,
                        .hp = zp_adam_hparams_default(),
                      .b = {.n = sizes[i], .param = p, .grad = g, .m = m, .v = v, .half = h, .half_dtype = ZP_DT_F16}};
        a.hp.weight_decay = 0.01;
        a.hp.grads_checked = 1; /* the kernel alone (the trainer checks once for all partitions) */
        double t = per_call(zp_adam_op_run, &a);
        a.hp.grads_checked = 0; /* and with the backend's own NaN/inf check first */
        double tc = per_call(zp_adam_op_run, &a);
        double gbs = (double)ZP_ADAM_BYTES_PER_PARAM * sizes[i] / t / 1e9;
        double gbs_c = (double)ZP_ADAM_BYTES_PER_PARAM * sizes[i] / tc / 1e9;
        json_array_append_new(pts, json_pack("{s:I,s:f,s:f,s:f,s:f}", "params", (json_int_t)sizes[i], "time_s", t,
                                             "params_per_s", sizes[i] / t, "gbs", gbs, "gbs_with_check", gbs_c));
        fprintf(stderr, "adam %zu params: %.0f GB/s (%.0f with the check)\n", sizes[i], gbs, gbs_c);
        last_gbs = gbs, last_check_gbs = gbs_c;
    }
    be->free(p), be->free(g), be->free(m), be->free(v), be->free(h);
    json_object_set_new(root, "adam",
                        json_pack("{s:i,s:o,s:f,s:f,s:f,s:f}", "bytes_per_param", ZP_ADAM_BYTES_PER_PARAM, "points",
                                  pts, "gbs", last_gbs, "gbs_with_check", last_check_gbs, "copy_gbs", copy_gbs,
                                  "fraction_of_copy", copy_gbs > 0 ? last_gbs / copy_gbs : 0));
}

/* ---- GEMM ---- */

typedef struct {
    zp_gemm_args g;
    cublasHandle_t h;
    cudaDataType_t t;
    cublasComputeType_t ct;
} gemm_arg;

static zp_status op_gemm_backend(void *p)
{
    gemm_arg *a = p;
    return be->gemm(&a->g);
}

/* The same product as the backend computes (row-major C = A B as column-major C^T = B^T A^T), straight. */
static zp_status op_gemm_plain(void *p)
{
    gemm_arg *a = p;
    const zp_gemm_args *g = &a->g;
    CUBLAS(cublasGemmEx(a->h, CUBLAS_OP_N, CUBLAS_OP_N, g->n, g->m, g->k, &g->alpha, g->b, a->t, g->ldb, g->a, a->t,
                        g->lda, &g->beta, g->c, CUDA_R_32F, g->ldc, a->ct, CUBLAS_GEMM_DEFAULT));
    return ZP_OK;
}

static void bench_gemm(json_t *root, const int *hidden, int nh, int tokens)
{
    double amax = 0, bmax = 0, cmax = 0;
    for (int i = 0; i < nh; i++) {
        double h = hidden[i], T = tokens;
        amax = fmax(amax, T * 4 * h), bmax = fmax(bmax, 4 * h * h), cmax = fmax(cmax, T * 4 * h);
    }
    cublasHandle_t handle;
    CUBLAS(cublasCreate(&handle));
    json_t *out = json_object();
    const zp_dtype types[] = {ZP_DT_F16, ZP_DT_BF16, ZP_DT_F32};
    for (int ti = 0; ti < 3; ti++) {
        zp_dtype dt = types[ti];
        size_t es = zp_dtype_size(dt);
        void *A = dalloc((size_t)amax * es), *B = dalloc((size_t)bmax * es);
        float *C = dalloc((size_t)cmax * 4);
        dfill(A, (size_t)amax * es, dt), dfill(B, (size_t)bmax * es, dt);
        TRY(be->zero(C, (size_t)cmax * 4));
        json_t *shapes = json_array();
        double sum_b = 0, sum_p = 0, best = 0;
        for (int i = 0; i < nh; i++) {
            const int h = hidden[i], T = tokens;
            const int sh[4][3] = {{T, 3 * h, h}, {T, h, h}, {T, 4 * h, h}, {T, h, 4 * h}};
            const char *names[4] = {"qkv", "proj", "mlp_up", "mlp_down"};
            for (int s = 0; s < 4; s++) {
                int m = sh[s][0], n = sh[s][1], k = sh[s][2];
                gemm_arg a = {.g = {.m = m, .n = n, .k = k, .alpha = 1, .beta = 0, .a = A, .lda = k, .b = B, .ldb = n,
                                    .c = C, .ldc = n, .in_dtype = dt},
                              .h = handle,
                              .t = dt == ZP_DT_F16 ? CUDA_R_16F : dt == ZP_DT_BF16 ? CUDA_R_16BF : CUDA_R_32F,
                              .ct = dt == ZP_DT_F32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F};
                zp_timing_op ops[2] = {{op_gemm_backend, &a, 1}, {op_gemm_plain, &a, 1}};
                double t[2];
                per_call_ops(ops, 2, t);
                const double tb = t[0], tp = t[1];
                double fl = 2.0 * m * n * k;
                sum_b += tb, sum_p += tp;
                best = fmax(best, fl / tb);
                json_array_append_new(shapes, json_pack("{s:s,s:i,s:i,s:i,s:i,s:f,s:f,s:f,s:f,s:f}", "name", names[s],
                                                        "hidden", h, "m", m, "n", n, "k", k, "backend_s", tb, "plain_s",
                                                        tp, "backend_tflops", fl / tb / 1e12, "plain_tflops",
                                                        fl / tp / 1e12, "fraction", tp / tb));
                fprintf(stderr, "gemm %s (%d, %d, %d): backend %.1f TFLOP/s, plain cublasGemmEx %.1f TFLOP/s\n",
                        zp_dtype_name(dt), m, n, k, fl / tb / 1e12, fl / tp / 1e12);
            }
        }
        json_object_set_new(out, zp_dtype_name(dt),
                            json_pack("{s:o,s:f,s:f,s:s}", "shapes", shapes, "fraction", sum_p / sum_b,
                                      "best_backend_tflops", best / 1e12, "compute",
                                      dt == ZP_DT_F32 ? "fp32 in, TF32 tensor ops" : "16-bit in, fp32 accumulate"));
        be->free(A), be->free(B), be->free(C);
    }
    CUBLAS(cublasDestroy(handle));
    json_object_set_new(out, "tokens", json_integer(tokens));
    json_object_set_new(root, "gemm", out);
}

/* ---- NCCL on this GPU alone ---- */

static void bench_nccl(json_t *root, int *argc, char ***argv, size_t maxb)
{
#if ZP_HAVE_NCCL && ZP_HAVE_MPI
    TRY(zp_kernels_mpi_init(argc, argv));
    zp_comm *c = NULL;
    TRY(zp_comm_world(be, &c));
    void *send = dalloc(maxb), *recv = dalloc(maxb);
    dfill(send, maxb, ZP_DT_F32);
    json_t *out = json_object();
    for (int k = 0; k < ZP_COLL_MEASURED; k++) {
        json_t *pts = json_array();
        for (size_t b = (size_t)1 << 20; b <= maxb; b *= 16) {
            zp_coll_op a = {be, c, (zp_coll_kind)k, send, recv, b / 4}; /* one rank: count = the whole buffer */
            double t = per_call(zp_coll_op_run, &a);
            json_array_append_new(pts, json_pack("{s:I,s:f,s:f}", "bytes", (json_int_t)b, "time_s", t, "algbw_gbs",
                                                 b / t / 1e9));
        }
        json_object_set_new(out, zp_coll_name((zp_coll_kind)k), pts);
    }
    json_object_set_new(out, "ranks", json_integer(zp_comm_size(c)));
    json_object_set_new(root, "nccl", out);
    be->free(send), be->free(recv);
    zp_comm_free(c);
    fprintf(stderr, "nccl: %d collectives on one rank timed\n", ZP_COLL_MEASURED);
#else
    (void)argc, (void)argv, (void)maxb;
    json_object_set_new(root, "nccl", json_pack("{s:s}", "skipped", "this build has no NCCL or no MPI"));
#endif
}

/* ---- host <-> device ---- */

static void bench_host_device(json_t *root, size_t bytes)
{
    void *dev = dalloc(bytes), *pinned = NULL, *pageable = malloc(bytes);
    TRY(be->alloc_host(bytes, &pinned));
    if (!pageable) {
        fprintf(stderr, "zp_gpu_bench: out of host memory\n");
        exit(1);
    }
    memset(pageable, 1, bytes);
    memset(pinned, 1, bytes);
    json_t *out = json_object();
    for (int pin = 0; pin < 2; pin++)
        for (int dir = 0; dir < 2; dir++) {
            zp_copy_op a = {be, pin ? pinned : pageable, dev, bytes, dir == 0};
            double t = per_call(zp_copy_op_run, &a);
            char key[32];
            snprintf(key, sizeof key, "%s_%s_gbs", dir == 0 ? "h2d" : "d2h", pin ? "pinned" : "pageable");
            json_object_set_new(out, key, json_real(bytes / t / 1e9));
        }
    json_object_set_new(out, "bytes", json_integer((json_int_t)bytes));
    json_object_set_new(root, "host_device", out);
    be->free(dev);
    be->free_host(pinned);
    free(pageable);
}

int main(int argc, char **argv)
{
    int quick = 0, probe = 0;
    const char *output = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0)
            quick = 1;
        else if (strcmp(argv[i], "--probe") == 0)
            probe = 1;
        else if (strcmp(argv[i], "-o") == 0 && i + 1 < argc)
            output = argv[++i];
        else {
            fprintf(stderr, "usage: zp_gpu_bench [--quick] [-o FILE] | --probe\n");
            return 2;
        }
    }
    be = &zp_kernels_cuda;
    if (be->init() != ZP_OK) {
        fprintf(stderr, "zp_gpu_bench: %s\n", zp_error_message());
        return 2;
    }
    if (probe) {
        char name[256] = "";
        int drv = 0, rt = 0;
        if (be->device_name(name, sizeof name) != ZP_OK) {
            fprintf(stderr, "zp_gpu_bench: %s\n", zp_error_message());
            return 2;
        }
        cudaDriverGetVersion(&drv);
        cudaRuntimeGetVersion(&rt);
        printf("%s (CUDA driver API %d, runtime %d)\n", name, drv, rt);
        return 0;
    }
    bench_clock.be = be;
    TRY(be->timer_create(&bench_clock.timer));

    json_t *root = json_object();
    struct cudaDeviceProp prop;
    int dev = 0, drv = 0, rt = 0;
    CUDA(cudaGetDevice(&dev));
    CUDA(cudaGetDeviceProperties(&prop, dev));
    CUDA(cudaDriverGetVersion(&drv));
    CUDA(cudaRuntimeGetVersion(&rt));
    char blas[128], mpi[128], cuda[64], nccl[64];
    zp_kernels_versions(blas, sizeof blas, mpi, sizeof mpi, cuda, sizeof cuda, nccl, sizeof nccl);
    json_object_set_new(root, "device",
                        json_pack("{s:s,s:i,s:i,s:i,s:I,s:i,s:i,s:s,s:s,s:s}", "name", prop.name, "cc_major",
                                  prop.major, "cc_minor", prop.minor, "sms", prop.multiProcessorCount, "memory_bytes",
                                  (json_int_t)prop.totalGlobalMem, "driver_api", drv, "runtime_api", rt, "cuda", cuda,
                                  "nccl", nccl, "zplan", ZP_VERSION));
    json_object_set_new(root, "quick", json_boolean(quick));
    fprintf(stderr, "zp_gpu_bench on %s (%s)\n", prop.name, quick ? "quick" : "full");

    double copy_gbs = bench_copy(root, quick ? (size_t)64 << 20 : (size_t)1 << 30);
    const size_t adam_full[] = {(size_t)16 << 20, (size_t)64 << 20, (size_t)256 << 20};
    const size_t adam_quick[] = {(size_t)1 << 20, (size_t)4 << 20};
    bench_adam(root, quick ? adam_quick : adam_full, quick ? 2 : 3, copy_gbs);
    const int hid_full[] = {1024, 2048, 4096, 8192}, hid_quick[] = {256, 512};
    bench_gemm(root, quick ? hid_quick : hid_full, quick ? 2 : 4, quick ? 512 : 8192);
    bench_host_device(root, quick ? (size_t)16 << 20 : (size_t)256 << 20);
    bench_nccl(root, &argc, &argv, quick ? (size_t)16 << 20 : (size_t)1 << 30);

    be->timer_free(bench_clock.timer);
    char *text = json_dumps(root, JSON_INDENT(2) | JSON_REAL_PRECISION(8));
    json_decref(root);
    int rc = 0;
    if (!text) {
        fprintf(stderr, "zp_gpu_bench: out of memory\n");
        rc = 1;
    } else if (output) {
        if (zp_io_write_file(output, text, strlen(text)) != ZP_OK) {
            fprintf(stderr, "zp_gpu_bench: %s\n", zp_error_message());
            rc = 1;
        }
    } else {
        puts(text);
    }
    free(text);
    zp_kernels_mpi_finalize();
    return rc;
}
