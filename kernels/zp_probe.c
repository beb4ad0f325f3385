/* zp_probe.c — the reference work of zp_probe.h, timed with the one harness (common/zp_timing.h). */
#include "zp_probe.h"

#include <stdlib.h>

#define PROBE_G 256           /* the GEMMs: PROBE_G^3 */
#define PROBE_ROWS 256        /* the SwiGLU: (PROBE_ROWS, 2 PROBE_F) in, (PROBE_ROWS, PROBE_F) out */
#define PROBE_F 512
#define PROBE_TRIAD (1u << 20) /* floats per triad array */
#define PROBE_REPS 21

struct zp_probe {
    const zp_kernels_backend *be;
    const zp_nn_ops *nn;
    float *a, *b, *c;         /* PROBE_TRIAD floats each: the triad's arrays; a and b also hold the GEMMs' and
                                 the SwiGLU's operands (all smaller) */
    zp_kernels_clock clock;
};

static zp_status probe_fill(const zp_kernels_backend *be, float *dev, size_t n, float scale)
{
    float *h = malloc(n * sizeof(float));
    if (!h)
        return ZP_FAIL(ZP_ENOMEM, "out of memory");
    uint32_t x = 12345u;
    for (size_t i = 0; i < n; i++) {
        x = x * 1664525u + 1013904223u;
        h[i] = scale * ((float)(x >> 8) / 16777216.0f - 0.5f); /* in [-scale/2, scale/2): no drift, no subnormals */
    }
    zp_status st = be->copy_to_device(dev, h, n * sizeof(float));
    free(h);
    return st;
}

zp_status zp_probe_open(const zp_kernels_backend *be, const zp_nn_ops *nn, zp_probe **out)
{
    if (!be || !nn || !out)
        return ZP_FAIL(ZP_EINVAL, "zp_probe_open: NULL argument");
    zp_probe *p = calloc(1, sizeof *p);
    if (!p)
        return ZP_FAIL(ZP_ENOMEM, "out of memory");
    p->be = be, p->nn = nn, p->clock.be = be;
    float **bufs[] = {&p->a, &p->b, &p->c};
    zp_status st = ZP_OK;
    for (int i = 0; i < 3 && st == ZP_OK; i++)
        st = be->alloc(PROBE_TRIAD * sizeof(float), (void **)bufs[i]);
    for (int i = 0; i < 3 && st == ZP_OK; i++)
        st = probe_fill(be, *bufs[i], PROBE_TRIAD, 2.0f);
    if (st == ZP_OK)
        st = be->timer_create(&p->clock.timer);
    if (st != ZP_OK) {
        zp_probe_close(p);
        return st;
    }
    *out = p;
    return ZP_OK;
}

/* One sample: two GEMMs (c = a b, then a = c b: operands that stay of order 1), the SwiGLU of a into c, one
 * triad (a = b + 3 c over the whole arrays, rewritten from b each time: no drift). */
static zp_status probe_once(void *arg)
{
    zp_probe *p = arg;
    const zp_kernels_backend *be = p->be;
    const float s = 1.0f / PROBE_G;
    zp_gemm_args g = {.m = PROBE_G, .n = PROBE_G, .k = PROBE_G, .alpha = s, .beta = 0.0f, .a = p->a,
                      .lda = PROBE_G, .b = p->b, .ldb = PROBE_G, .c = p->c, .ldc = PROBE_G, .in_dtype = ZP_DT_F32};
    ZP_TRY(be->gemm(&g));
    g.a = p->c, g.c = p->a;
    ZP_TRY(be->gemm(&g));
    ZP_TRY(p->nn->glu_fwd(p->c, p->b, PROBE_ROWS, PROBE_F, ZP_GLU_SILU));
    return be->stream_triad(p->a, p->b, p->c, 3.0f, PROBE_TRIAD);
}

zp_status zp_probe_time(zp_probe *p, zp_comm *world, double *seconds, double *fastest, double *sync)
{
    if (!p || !world || !seconds)
        return ZP_FAIL(ZP_EINVAL, "zp_probe_time: NULL argument");
    zp_timing_opts o = {.warmup = 3, .reps = PROBE_REPS};
    zp_kernels_timing_hooks(&o, &p->clock, world);
    zp_timing_result r;
    ZP_TRY(zp_timing_run(&o, probe_once, p, &r));
    double med = r.median, lo = r.median;
    ZP_TRY(zp_comm_allreduce_double(world, &med, ZP_OP_MAX));
    ZP_TRY(zp_comm_allreduce_double(world, &lo, ZP_OP_MIN));
    *seconds = med;
    if (fastest)
        *fastest = lo;
    if (sync) { /* sample i of every rank started after the same barrier */
        const double n = (double)zp_comm_size(world);
        double lag = 0, mean = 0;
        for (int i = 0; i < r.reps; i++) {
            double mx = r.samples[i], sum = r.samples[i];
            ZP_TRY(zp_comm_allreduce_double(world, &mx, ZP_OP_MAX));
            ZP_TRY(zp_comm_allreduce_double(world, &sum, ZP_OP_SUM));
            lag += mx - sum / n, mean += sum / n;
        }
        *sync = mean > 0 ? lag / mean : 0;
    }
    return ZP_OK;
}

void zp_probe_close(zp_probe *p)
{
    if (!p)
        return;
    if (p->clock.timer)
        p->be->timer_free(p->clock.timer);
    p->be->free(p->a);
    p->be->free(p->b);
    p->be->free(p->c);
    free(p);
}
