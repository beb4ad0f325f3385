/* zp_nn_elementwise.h — the per-element and per-row arithmetic of the transformer layers
 * (GeLU, LayerNorm, causal softmax, cross-entropy), `static inline` and ZP_HD so the cpu loops
 * (zp_nn_cpu.c), the tests and CUDA kernels compile the same source.
 *
 * Conventions: rows are contiguous, fp32 throughout, statistics accumulated in fp32 as PyTorch does
 * on the CPU for fp32 tensors. */
#ifndef ZP_NN_ELEMENTWISE_H
#define ZP_NN_ELEMENTWISE_H

#include <math.h>
#include <stddef.h>

#include "zp_elementwise.h" /* ZP_HD */

/* GeLU, tanh approximation (GPT-2's "gelu_new"): 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))). */
#define ZP_GELU_K 0.7978845608028654f /* sqrt(2/pi) */
#define ZP_GELU_C 0.044715f

ZP_HD static inline float zp_gelu(float x)
{
    float u = ZP_GELU_K * (x + ZP_GELU_C * x * x * x);
    return 0.5f * x * (1.0f + tanhf(u));
}

/* d gelu / dx. */
ZP_HD static inline float zp_gelu_grad(float x)
{
    float u = ZP_GELU_K * (x + ZP_GELU_C * x * x * x);
    float th = tanhf(u);
    float sech2 = 1.0f - th * th;
    return 0.5f * (1.0f + th) + 0.5f * x * sech2 * ZP_GELU_K * (1.0f + 3.0f * ZP_GELU_C * x * x);
}

/* LayerNorm epsilon (PyTorch nn.LayerNorm default). */
#define ZP_LN_EPS 1e-5f

/* One row of LayerNorm: out = (x - mean) * rstd * w + b; returns mean and rstd = 1/sqrt(var + eps)
 * (biased variance, as nn.LayerNorm). */
ZP_HD static inline void zp_layernorm_row(float *out, float *mean_out, float *rstd_out, const float *x,
                                          const float *w, const float *b, size_t C)
{
    float m = 0.0f;
    for (size_t i = 0; i < C; i++)
        m += x[i];
    m /= (float)C;
    float v = 0.0f;
    for (size_t i = 0; i < C; i++) {
        float d = x[i] - m;
        v += d * d;
    }
    v /= (float)C;
    float r = 1.0f / sqrtf(v + ZP_LN_EPS);
    for (size_t i = 0; i < C; i++)
        out[i] = (x[i] - m) * r * w[i] + b[i];
    *mean_out = m;
    *rstd_out = r;
}

/* Backward of one row: dx += rstd * (g - mean(g) - xhat * mean(g * xhat)), g = dout * w;
 * dw += dout * xhat, db += dout (the caller owns the accumulation across rows). */
ZP_HD static inline void zp_layernorm_row_bwd(float *dx, float *dw, float *db, const float *dout, const float *x,
                                              const float *w, float mean, float rstd, size_t C)
{
    float g_mean = 0.0f, gx_mean = 0.0f;
    for (size_t i = 0; i < C; i++) {
        float xhat = (x[i] - mean) * rstd;
        float g = dout[i] * w[i];
        g_mean += g;
        gx_mean += g * xhat;
    }
    g_mean /= (float)C;
    gx_mean /= (float)C;
    for (size_t i = 0; i < C; i++) {
        float xhat = (x[i] - mean) * rstd;
        float g = dout[i] * w[i];
        if (dw)
            dw[i] += dout[i] * xhat;
        if (db)
            db[i] += dout[i];
        dx[i] += rstd * (g - g_mean - xhat * gx_mean);
    }
}

/* Causal softmax of row t (positions 0..t visible) of `scale * scores`, in place; the masked tail
 * t+1..T-1 is set to 0 so the next GEMM (probabilities . V) can run over the full row. */
ZP_HD static inline void zp_softmax_causal_row(float *row, size_t t, size_t T, float scale)
{
    float mx = -INFINITY;
    for (size_t j = 0; j <= t; j++)
        mx = fmaxf(mx, scale * row[j]);
    float s = 0.0f;
    for (size_t j = 0; j <= t; j++) {
        float e = expf(scale * row[j] - mx);
        row[j] = e;
        s += e;
    }
    float inv = 1.0f / s;
    for (size_t j = 0; j <= t; j++)
        row[j] *= inv;
    for (size_t j = t + 1; j < T; j++)
        row[j] = 0.0f;
}

/* Backward of one causal softmax row, in place on d: d_score = scale * p * (d - sum_j p_j d_j);
 * masked positions get 0. */
ZP_HD static inline void zp_softmax_causal_row_bwd(float *d, const float *p, size_t t, size_t T, float scale)
{
    float dot = 0.0f;
    for (size_t j = 0; j <= t; j++)
        dot += p[j] * d[j];
    for (size_t j = 0; j <= t; j++)
        d[j] = scale * p[j] * (d[j] - dot);
    for (size_t j = t + 1; j < T; j++)
        d[j] = 0.0f;
}

#endif
