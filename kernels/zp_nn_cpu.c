/* zp_nn_cpu.c — the transformer layer kernels of zp_nn.h on the host: loops over rows (OpenMP),
 * the row arithmetic from zp_nn_elementwise.h. */
#include "zp_nn.h"

#include <math.h>
#include <string.h>

#include "zp_nn_elementwise.h"

#ifdef _OPENMP
#define ZP_NN_PAR _Pragma("omp parallel for schedule(static)")
#define ZP_NN_SIMD _Pragma("omp simd")
#define ZP_NN_SIMD_SUM_S _Pragma("omp simd reduction(+:s)")
#else
#define ZP_NN_PAR
#define ZP_NN_SIMD
#define ZP_NN_SIMD_SUM_S
#endif

#define NN_CHECK(cond, what)                                        \
    do {                                                            \
        if (!(cond))                                                \
            return ZP_FAIL(ZP_EINVAL, "%s: %s", __func__, what);    \
    } while (0)

zp_status zp_nn_embed_fwd(float *out, const int *tok, size_t N, size_t C, const float *wte, long v0, size_t vrows,
                          const float *wpe, size_t T)
{
    NN_CHECK(out && tok && wte && C > 0 && T > 0, "NULL buffer or empty shape");
    ZP_NN_PAR
    for (size_t i = 0; i < N; i++) {
        float *o = out + i * C;
        long r = (long)tok[i] - v0;
        if (r >= 0 && (size_t)r < vrows)
            memcpy(o, wte + (size_t)r * C, C * sizeof *o);
        else
            memset(o, 0, C * sizeof *o);
        if (wpe) {
            const float *p = wpe + (i % T) * C;
            for (size_t c = 0; c < C; c++)
                o[c] += p[c];
        }
    }
    return ZP_OK;
}

zp_status zp_nn_embed_bwd(float *dwte, float *dwpe, const int *tok, const float *dout, size_t N, size_t C, long v0,
                          size_t vrows, size_t T)
{
    NN_CHECK(dwte && tok && dout && C > 0 && T > 0, "NULL buffer or empty shape");
    /* serial over rows: two tokens may share a row of dwte (a scatter-add) */
    for (size_t i = 0; i < N; i++) {
        const float *d = dout + i * C;
        long r = (long)tok[i] - v0;
        if (r >= 0 && (size_t)r < vrows) {
            float *w = dwte + (size_t)r * C;
            for (size_t c = 0; c < C; c++)
                w[c] += d[c];
        }
        if (dwpe) {
            float *p = dwpe + (i % T) * C;
            for (size_t c = 0; c < C; c++)
                p[c] += d[c];
        }
    }
    return ZP_OK;
}

zp_status zp_nn_layernorm_fwd(float *out, float *mean, float *rstd, const float *x, const float *w, const float *b,
                              size_t N, size_t C)
{
    NN_CHECK(out && mean && rstd && x && w && b && C > 0, "NULL buffer or empty shape");
    ZP_NN_PAR
    for (size_t i = 0; i < N; i++)
        zp_layernorm_row(out + i * C, mean + i, rstd + i, x + i * C, w, b, C);
    return ZP_OK;
}

zp_status zp_nn_layernorm_bwd(float *dx, float *dw, float *db, const float *dout, const float *x, const float *w,
                              const float *mean, const float *rstd, size_t N, size_t C)
{
    NN_CHECK(dx && dw && db && dout && x && w && mean && rstd && C > 0, "NULL buffer or empty shape");
    /* serial: dw and db accumulate over rows (a per-thread reduction would change the sum order
     * with the thread count, and results must not depend on it) */
    for (size_t i = 0; i < N; i++)
        zp_layernorm_row_bwd(dx + i * C, dw, db, dout + i * C, x + i * C, w, mean[i], rstd[i], C);
    return ZP_OK;
}

zp_status zp_nn_gelu_fwd(float *out, const float *x, size_t n)
{
    NN_CHECK(out && x, "NULL buffer");
    ZP_NN_SIMD
    for (size_t i = 0; i < n; i++)
        out[i] = zp_gelu(x[i]);
    return ZP_OK;
}

zp_status zp_nn_gelu_bwd(float *d, const float *x, size_t n)
{
    NN_CHECK(d && x, "NULL buffer");
    ZP_NN_SIMD
    for (size_t i = 0; i < n; i++)
        d[i] *= zp_gelu_grad(x[i]);
    return ZP_OK;
}

zp_status zp_nn_softmax_causal_fwd(float *att, size_t BH, size_t T, float scale)
{
    NN_CHECK(att && T > 0, "NULL buffer or empty shape");
    ZP_NN_PAR
    for (size_t r = 0; r < BH * T; r++)
        zp_softmax_causal_row(att + r * T, r % T, T, scale);
    return ZP_OK;
}

zp_status zp_nn_softmax_causal_bwd(float *d, const float *att, size_t BH, size_t T, float scale)
{
    NN_CHECK(d && att && T > 0, "NULL buffer or empty shape");
    ZP_NN_PAR
    for (size_t r = 0; r < BH * T; r++)
        zp_softmax_causal_row_bwd(d + r * T, att + r * T, r % T, T, scale);
    return ZP_OK;
}

zp_status zp_nn_xent_rowmax(float *mx, const float *logits, size_t N, size_t V)
{
    NN_CHECK(mx && logits && V > 0, "NULL buffer or empty shape");
    ZP_NN_PAR
    for (size_t i = 0; i < N; i++) {
        const float *l = logits + i * V;
        float m = -INFINITY;
        for (size_t j = 0; j < V; j++)
            m = fmaxf(m, l[j]);
        mx[i] = m;
    }
    return ZP_OK;
}

zp_status zp_nn_xent_sumexp(float *se, const float *logits, const float *mx, size_t N, size_t V)
{
    NN_CHECK(se && logits && mx && V > 0, "NULL buffer or empty shape");
    ZP_NN_PAR
    for (size_t i = 0; i < N; i++) {
        const float *l = logits + i * V;
        float s = 0.0f, m = mx[i];
        ZP_NN_SIMD_SUM_S
        for (size_t j = 0; j < V; j++)
            s += zp_expf(l[j] - m);
        se[i] = s;
    }
    return ZP_OK;
}

zp_status zp_nn_xent_pick(float *lt, const float *logits, const int *tgt, long v0, size_t N, size_t V)
{
    NN_CHECK(lt && logits && tgt && V > 0, "NULL buffer or empty shape");
    for (size_t i = 0; i < N; i++) {
        long c = (long)tgt[i] - v0;
        lt[i] = (c >= 0 && (size_t)c < V) ? logits[i * V + (size_t)c] : 0.0f;
    }
    return ZP_OK;
}

double zp_nn_xent_loss_sum(const float *mx, const float *se, const float *lt, size_t N)
{
    double s = 0.0;
    for (size_t i = 0; i < N; i++)
        s += (double)(logf(se[i]) + mx[i] - lt[i]);
    return s;
}

zp_status zp_nn_xent_bwd(float *logits, const float *mx, const float *se, const int *tgt, long v0, size_t N,
                         size_t V, float scale)
{
    NN_CHECK(logits && mx && se && tgt && V > 0, "NULL buffer or empty shape");
    ZP_NN_PAR
    for (size_t i = 0; i < N; i++) {
        float *l = logits + i * V;
        float inv = scale / se[i], m = mx[i];
        ZP_NN_SIMD
        for (size_t j = 0; j < V; j++)
            l[j] = zp_expf(l[j] - m) * inv;
        long c = (long)tgt[i] - v0;
        if (c >= 0 && (size_t)c < V)
            l[c] -= scale;
    }
    return ZP_OK;
}

zp_status zp_nn_bias_add(float *x, const float *b, size_t N, size_t C)
{
    NN_CHECK(x && b && C > 0, "NULL buffer or empty shape");
    ZP_NN_PAR
    for (size_t i = 0; i < N; i++)
        for (size_t c = 0; c < C; c++)
            x[i * C + c] += b[c];
    return ZP_OK;
}

zp_status zp_nn_bias_grad(float *db, const float *d, size_t N, size_t C)
{
    NN_CHECK(db && d && C > 0, "NULL buffer or empty shape");
    for (size_t i = 0; i < N; i++)
        for (size_t c = 0; c < C; c++)
            db[c] += d[i * C + c];
    return ZP_OK;
}

zp_status zp_nn_residual_add(float *out, const float *a, const float *b, const float *bias, size_t N, size_t C)
{
    NN_CHECK(out && a && b && C > 0, "NULL buffer or empty shape");
    ZP_NN_PAR
    for (size_t i = 0; i < N; i++)
        for (size_t c = 0; c < C; c++)
            out[i * C + c] = a[i * C + c] + b[i * C + c] + (bias ? bias[c] : 0.0f);
    return ZP_OK;
}
