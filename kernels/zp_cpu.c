/* zp_cpu.c — the cpu backend: fused Adam (OpenMP threads, SIMD), CBLAS GEMM, STREAM kernels,
 * wall-clock timers. Collectives are in zp_comm.c. Compiled at -O3 (see meson.build); the hot
 * loops are cloned for AVX-512, AVX2 and baseline x86-64 and picked at load time. */
#include "zp_kernels_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>

#include "zp_time.h"

#ifdef _OPENMP
#include <omp.h>
#define ZP_PRAGMA(x) _Pragma(#x)
#define ZP_OMP(x) ZP_PRAGMA(omp x)
#else
#define ZP_OMP(x)
#endif

/* Function multi-versioning (x86-64 with GCC/Clang and ifunc): one clone per ISA. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && defined(__linux__)
#define ZP_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define ZP_CLONES
#endif

/* Elements per scheduling chunk: 16 Ki floats = 64 KiB per array, a multiple of every
 * vector width, so threads never split a cache line. */
#define ZP_CHUNK ((size_t)16384)

int zp_kernels_cpu_threads(void)
{
#ifdef _OPENMP
    return omp_get_max_threads();
#else
    return 1;
#endif
}

void zp_kernels_cpu_set_threads(int n)
{
    if (n < 1)
        n = 1;
#ifdef _OPENMP
    omp_set_num_threads(n);
#endif
    openblas_set_num_threads(n);
}

/* ---- Adam ---- */

ZP_CLONES static void adam_range_plain(zp_adam_coeffs c, float *restrict p, const float *restrict g,
                                       float *restrict m, float *restrict v, size_t n)
{
    ZP_OMP(simd)
    for (size_t i = 0; i < n; i++)
        zp_adam_update(c, &p[i], g[i], &m[i], &v[i]);
}

ZP_CLONES static void adam_range_f16(zp_adam_coeffs c, float *restrict p, const float *restrict g,
                                     float *restrict m, float *restrict v, uint16_t *restrict h, size_t n)
{
    ZP_OMP(simd)
    for (size_t i = 0; i < n; i++)
        h[i] = zp_f32_to_f16(zp_adam_update(c, &p[i], g[i], &m[i], &v[i]));
}

ZP_CLONES static void adam_range_bf16(zp_adam_coeffs c, float *restrict p, const float *restrict g,
                                      float *restrict m, float *restrict v, uint16_t *restrict h, size_t n)
{
    ZP_OMP(simd)
    for (size_t i = 0; i < n; i++)
        h[i] = zp_f32_to_bf16(zp_adam_update(c, &p[i], g[i], &m[i], &v[i]));
}

ZP_CLONES static size_t count_nonfinite(const float *restrict g, size_t n)
{
    size_t bad = 0;
    ZP_OMP(simd reduction(+ : bad))
    for (size_t i = 0; i < n; i++)
        bad += !zp_f32_is_finite(g[i]);
    return bad;
}

zp_status zp_adam_grad_check_cpu(const float *grad, size_t n, size_t *nonfinite)
{
    if (!nonfinite || (n > 0 && !grad))
        return ZP_FAIL(ZP_EINVAL, "grad_check: NULL argument");
    size_t nchunks = (n + ZP_CHUNK - 1) / ZP_CHUNK;
    size_t bad = 0;
    ZP_OMP(parallel for schedule(static) reduction(+ : bad))
    for (size_t ch = 0; ch < nchunks; ch++) {
        size_t lo = ch * ZP_CHUNK;
        size_t len = n - lo < ZP_CHUNK ? n - lo : ZP_CHUNK;
        bad += count_nonfinite(grad + lo, len);
    }
    *nonfinite = bad;
    return ZP_OK;
}

zp_status zp_adam_step_cpu(const zp_adam_hparams *hp, const zp_adam_buffers *b, zp_adam_result *res)
{
    ZP_TRY(zp_adam_hparams_check(hp));
    ZP_TRY(zp_adam_buffers_check(b));
    zp_adam_result r = {0, 0};
    if (!hp->grads_checked) {
        ZP_TRY(zp_adam_grad_check_cpu(b->grad, b->n, &r.nonfinite));
        if (r.nonfinite > 0) {
            /* NaN/inf policy: skip the whole step, touch nothing, report the overflow. */
            r.overflow = 1;
            if (res)
                *res = r;
            return ZP_OK;
        }
    }
    const zp_adam_coeffs c = zp_adam_coeffs_make(hp);
    const size_t n = b->n;
    const size_t nchunks = (n + ZP_CHUNK - 1) / ZP_CHUNK;
    float *p = b->param, *m = b->m, *v = b->v;
    const float *g = b->grad;
    uint16_t *h = b->half;
    const int kind = !h ? 0 : b->half_dtype == ZP_DT_F16 ? 1 : 2;
    ZP_OMP(parallel for schedule(static))
    for (size_t ch = 0; ch < nchunks; ch++) {
        size_t lo = ch * ZP_CHUNK;
        size_t len = n - lo < ZP_CHUNK ? n - lo : ZP_CHUNK;
        if (kind == 0)
            adam_range_plain(c, p + lo, g + lo, m + lo, v + lo, len);
        else if (kind == 1)
            adam_range_f16(c, p + lo, g + lo, m + lo, v + lo, h + lo, len);
        else
            adam_range_bf16(c, p + lo, g + lo, m + lo, v + lo, h + lo, len);
    }
    if (res)
        *res = r;
    return ZP_OK;
}

/* ---- GEMM ---- */

/* Widens a 16-bit (rows, cols) matrix with leading dimension ld to a packed fp32 one. */
static void widen(float *restrict dst, const uint16_t *restrict src, int rows, int cols, int ld, zp_dtype dt)
{
    ZP_OMP(parallel for schedule(static))
    for (int i = 0; i < rows; i++) {
        const uint16_t *s = src + (size_t)i * ld;
        float *d = dst + (size_t)i * cols;
        if (dt == ZP_DT_F16)
            for (int j = 0; j < cols; j++)
                d[j] = zp_f16_to_f32(s[j]);
        else
            for (int j = 0; j < cols; j++)
                d[j] = zp_bf16_to_f32(s[j]);
    }
}

zp_status zp_gemm_cpu(const zp_gemm_args *g)
{
    ZP_TRY(zp_gemm_args_check(g));
    if (g->m == 0 || g->n == 0)
        return ZP_OK;
    const enum CBLAS_TRANSPOSE ta = g->trans_a ? CblasTrans : CblasNoTrans;
    const enum CBLAS_TRANSPOSE tb = g->trans_b ? CblasTrans : CblasNoTrans;
    if (g->in_dtype == ZP_DT_F32) {
        cblas_sgemm(CblasRowMajor, ta, tb, g->m, g->n, g->k, g->alpha, (const float *)g->a, g->lda,
                    (const float *)g->b, g->ldb, g->beta, g->c, g->ldc);
        return ZP_OK;
    }
    /* fp16/bf16 inputs: OpenBLAS has no 16-bit GEMM in this build, so widen A and B to fp32
     * (exact) and accumulate in fp32, as the tensor-core path does. */
    const int arows = g->trans_a ? g->k : g->m, acols = g->trans_a ? g->m : g->k;
    const int brows = g->trans_b ? g->n : g->k, bcols = g->trans_b ? g->k : g->n;
    float *a = malloc(sizeof(float) * ((size_t)arows * acols + 1));
    float *b = malloc(sizeof(float) * ((size_t)brows * bcols + 1));
    if (!a || !b) {
        free(a);
        free(b);
        return ZP_FAIL(ZP_ENOMEM, "gemm: cannot allocate fp32 copies of A and B");
    }
    widen(a, g->a, arows, acols, g->lda, g->in_dtype);
    widen(b, g->b, brows, bcols, g->ldb, g->in_dtype);
    cblas_sgemm(CblasRowMajor, ta, tb, g->m, g->n, g->k, g->alpha, a, acols > 0 ? acols : 1, b,
                bcols > 0 ? bcols : 1, g->beta, g->c, g->ldc);
    free(a);
    free(b);
    return ZP_OK;
}

zp_status zp_gemm_batched_cpu(const zp_gemm_args *g, int batch, const void *const *a, const void *const *b,
                              float *const *c)
{
    ZP_TRY(zp_gemm_batch_check(batch, a, b, c));
    for (int i = 0; i < batch; i++) {
        zp_gemm_args one = *g;
        one.a = a[i], one.b = b[i], one.c = c[i];
        ZP_TRY(zp_gemm_cpu(&one));
    }
    return ZP_OK;
}

/* ---- STREAM kernels ---- */

ZP_CLONES static void copy_range(float *restrict a, const float *restrict b, size_t n)
{
    ZP_OMP(simd)
    for (size_t i = 0; i < n; i++)
        a[i] = b[i];
}

ZP_CLONES static void triad_range(float *restrict a, const float *restrict b, const float *restrict c, float s,
                                  size_t n)
{
    ZP_OMP(simd)
    for (size_t i = 0; i < n; i++)
        a[i] = b[i] + s * c[i];
}

static zp_status cpu_stream_copy(float *a, const float *b, size_t n)
{
    if (n > 0 && (!a || !b))
        return ZP_FAIL(ZP_EINVAL, "stream_copy: NULL array");
    size_t nchunks = (n + ZP_CHUNK - 1) / ZP_CHUNK;
    ZP_OMP(parallel for schedule(static))
    for (size_t ch = 0; ch < nchunks; ch++) {
        size_t lo = ch * ZP_CHUNK;
        copy_range(a + lo, b + lo, n - lo < ZP_CHUNK ? n - lo : ZP_CHUNK);
    }
    return ZP_OK;
}

static zp_status cpu_stream_triad(float *a, const float *b, const float *c, float s, size_t n)
{
    if (n > 0 && (!a || !b || !c))
        return ZP_FAIL(ZP_EINVAL, "stream_triad: NULL array");
    size_t nchunks = (n + ZP_CHUNK - 1) / ZP_CHUNK;
    ZP_OMP(parallel for schedule(static))
    for (size_t ch = 0; ch < nchunks; ch++) {
        size_t lo = ch * ZP_CHUNK;
        triad_range(a + lo, b + lo, c + lo, s, n - lo < ZP_CHUNK ? n - lo : ZP_CHUNK);
    }
    return ZP_OK;
}

/* ---- memory, device, timers ---- */

static zp_status cpu_init(void) { return ZP_OK; }

static zp_status cpu_device_name(char *buf, size_t len)
{
    if (!buf || len == 0)
        return ZP_FAIL(ZP_EINVAL, "device_name: no buffer");
    snprintf(buf, len, "cpu");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return ZP_OK;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "model name", 10) == 0) {
            const char *colon = strchr(line, ':');
            if (colon) {
                colon++;
                while (*colon == ' ' || *colon == '\t')
                    colon++;
                snprintf(buf, len, "%s", colon);
                buf[strcspn(buf, "\n")] = '\0';
            }
            break;
        }
    }
    fclose(f);
    return ZP_OK;
}

static zp_status cpu_alloc(size_t bytes, void **out)
{
    if (!out)
        return ZP_FAIL(ZP_EINVAL, "alloc: NULL output");
    void *p = NULL;
    int rc = posix_memalign(&p, 64, bytes ? bytes : 64);
    if (rc != 0)
        return ZP_FAIL(ZP_ENOMEM, "cannot allocate %zu bytes of host memory", bytes);
    *out = p;
    return ZP_OK;
}

static void cpu_free(void *p) { free(p); }

static zp_status cpu_copy(void *dst, const void *src, size_t bytes)
{
    if (bytes > 0 && (!dst || !src))
        return ZP_FAIL(ZP_EINVAL, "copy: NULL pointer");
    if (bytes > 0)
        memcpy(dst, src, bytes);
    return ZP_OK;
}

static zp_status cpu_zero(void *p, size_t bytes)
{
    if (bytes > 0 && !p)
        return ZP_FAIL(ZP_EINVAL, "zero: NULL pointer");
    if (bytes > 0)
        memset(p, 0, bytes);
    return ZP_OK;
}

static zp_status cpu_sync(void) { return ZP_OK; }

struct zp_timer {
    double t0; /* zp_time_now_s() at start, seconds */
};

static zp_status cpu_timer_create(zp_timer **out)
{
    zp_timer *t = calloc(1, sizeof *t);
    if (!t)
        return ZP_FAIL(ZP_ENOMEM, "out of memory");
    *out = t;
    return ZP_OK;
}

static void cpu_timer_free(zp_timer *t) { free(t); }

static zp_status cpu_timer_start(zp_timer *t)
{
    t->t0 = zp_time_now_s();
    return ZP_OK;
}

static zp_status cpu_timer_stop(zp_timer *t, double *seconds)
{
    *seconds = zp_time_now_s() - t->t0;
    return ZP_OK;
}

/* Collectives of the cpu backend (zp_comm.c). */
zp_status zp_cpu_allreduce(zp_comm *c, const void *send, void *recv, size_t count, zp_dtype dt, zp_redop op);
zp_status zp_cpu_reduce_scatter(zp_comm *c, const void *send, void *recv, size_t count, zp_dtype dt,
                                zp_redop op);
zp_status zp_cpu_allgather(zp_comm *c, const void *send, void *recv, size_t count, zp_dtype dt);
zp_status zp_cpu_broadcast(zp_comm *c, void *buf, size_t count, zp_dtype dt, int root);
zp_status zp_cpu_alltoallv(zp_comm *c, const void *send, const size_t *scount, const size_t *sdispl, void *recv,
                           const size_t *rcount, const size_t *rdispl, zp_dtype dt);

const zp_kernels_backend zp_kernels_cpu = {
    .name = "cpu",
    .description = "host CPU: OpenMP fused Adam, OpenBLAS GEMM, MPI collectives",
    .init = cpu_init,
    .device_name = cpu_device_name,
    .alloc = cpu_alloc,
    .free = cpu_free,
    .copy_to_device = cpu_copy,
    .copy_to_host = cpu_copy,
    .copy_on_device = cpu_copy,
    .zero = cpu_zero,
    .alloc_host = cpu_alloc, /* the "device" is the host: the same aligned memory */
    .free_host = cpu_free,
    .sync = cpu_sync,
    .stream_copy = cpu_stream_copy,
    .stream_triad = cpu_stream_triad,
    .grad_check = zp_adam_grad_check_cpu,
    .adam_step = zp_adam_step_cpu,
    .gemm = zp_gemm_cpu,
    .gemm_batched = zp_gemm_batched_cpu,
    .allreduce = zp_cpu_allreduce,
    .reduce_scatter = zp_cpu_reduce_scatter,
    .allgather = zp_cpu_allgather,
    .broadcast = zp_cpu_broadcast,
    .alltoallv = zp_cpu_alltoallv,
    .comm_attach = NULL,
    .comm_detach = NULL,
    .timer_create = cpu_timer_create,
    .timer_free = cpu_timer_free,
    .timer_start = cpu_timer_start,
    .timer_stop = cpu_timer_stop,
};
