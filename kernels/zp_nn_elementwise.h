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

/* Vectorisation hints for the row loops on the host (OpenMP SIMD; nothing on the device or without
 * OpenMP): reductions over a row may then run in vector lanes (sums in a different order than a
 * serial loop, the same for every rank and configuration). */
#if defined(_OPENMP) && !defined(__CUDACC__)
#define ZP_NN_SIMD_RED(op, ...) _Pragma(ZP_NN_STR(omp simd reduction(op : __VA_ARGS__)))
#define ZP_NN_SIMD_LOOP _Pragma("omp simd")
#define ZP_NN_STR(x) #x
#else
#define ZP_NN_SIMD_RED(op, ...)
#define ZP_NN_SIMD_LOOP
#endif

/* exp(x) for fp32 in plain arithmetic, so that loops over it vectorise (libm's expf does not without
 * -ffast-math): Cody-Waite reduction x = k ln2 + r, |r| <= ln2/2, k rounded by the 1.5 * 2^23 trick,
 * exp(r) by its degree-6 Taylor polynomial (truncation r^7/7! < 1.3e-7 relative), 2^k from the
 * exponent bits. Within 2 ulp of expf over [-87, 88]; x is clamped to that range (exp(-87) ~ 1.6e-38
 * stands for 0: callers use it for probabilities and sums of them). */
ZP_HD static inline float zp_expf(float x)
{
    /* comparisons, not fminf/fmaxf: those do not vectorise on x86 without -ffinite-math-only */
    x = x < -87.0f ? -87.0f : x;
    x = x > 88.0f ? 88.0f : x;
    const float magic = 12582912.0f; /* 1.5 * 2^23: adding it rounds to an integer (nearest even) */
    float k = (x * 1.44269504088896341f + magic) - magic;
    float r = x - k * 0.693145751953125f;  /* ln2 high part: k * hi is exact */
    r = r - k * 1.428606765330187e-06f;     /* ln2 low part */
    float p = 1.0f + r * (1.0f + r * (0.5f + r * (0.16666667f + r * (0.041666668f + r * (0.008333334f +
                                                                                  r * 0.0013888889f)))));
    return p * zp_f32_from_bits((uint32_t)((int32_t)k + 127) << 23);
}

/* GeLU, tanh approximation (GPT-2's "gelu_new"): 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))),
 * computed as x * sigmoid(2u) (0.5 (1 + tanh u) = 1 / (1 + exp(-2u)), an identity) with zp_expf. */
#define ZP_GELU_K 0.7978845608028654f /* sqrt(2/pi) */
#define ZP_GELU_C 0.044715f

ZP_HD static inline float zp_gelu(float x)
{
    float u = ZP_GELU_K * (x + ZP_GELU_C * x * x * x);
    return x / (1.0f + zp_expf(-2.0f * u));
}

/* d gelu / dx = s + x * 0.5 * sech^2(u) * du/dx with s = sigmoid(2u): 0.5 sech^2(u) = 2 s (1 - s). */
ZP_HD static inline float zp_gelu_grad(float x)
{
    float u = ZP_GELU_K * (x + ZP_GELU_C * x * x * x);
    float sg = 1.0f / (1.0f + zp_expf(-2.0f * u));
    return sg + 2.0f * x * sg * (1.0f - sg) * ZP_GELU_K * (1.0f + 3.0f * ZP_GELU_C * x * x);
}

/* LayerNorm epsilon (PyTorch nn.LayerNorm default). */
#define ZP_LN_EPS 1e-5f

/* One row of LayerNorm: out = (x - mean) * rstd * w + b; returns mean and rstd = 1/sqrt(var + eps)
 * (biased variance, as nn.LayerNorm). */
ZP_HD static inline void zp_layernorm_row(float *out, float *mean_out, float *rstd_out, const float *x,
                                          const float *w, const float *b, size_t C)
{
    float m = 0.0f;
    ZP_NN_SIMD_RED(+, m)
    for (size_t i = 0; i < C; i++)
        m += x[i];
    m /= (float)C;
    float v = 0.0f;
    ZP_NN_SIMD_RED(+, v)
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
    ZP_NN_SIMD_RED(+, g_mean, gx_mean)
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

/* RMSNorm epsilon (Llama's rms_norm_eps for the models zplan's executor runs). */
#define ZP_RMS_EPS 1e-5f

/* One row of RMSNorm (Zhang & Sennrich 2019; Llama): out = x * rstd * w, rstd = 1/sqrt(mean(x^2) + eps). */
ZP_HD static inline void zp_rmsnorm_row(float *out, float *rstd_out, const float *x, const float *w, size_t C)
{
    float q = 0.0f;
    ZP_NN_SIMD_RED(+, q)
    for (size_t i = 0; i < C; i++)
        q += x[i] * x[i];
    float r = 1.0f / sqrtf(q / (float)C + ZP_RMS_EPS);
    for (size_t i = 0; i < C; i++)
        out[i] = x[i] * r * w[i];
    *rstd_out = r;
}

/* Backward of one row: dx += rstd * (g - xhat * mean(g * xhat)), g = dout * w, xhat = x * rstd;
 * dw += dout * xhat when dw != NULL (the caller owns the accumulation across rows). */
ZP_HD static inline void zp_rmsnorm_row_bwd(float *dx, float *dw, const float *dout, const float *x, const float *w,
                                            float rstd, size_t C)
{
    float gx_mean = 0.0f;
    ZP_NN_SIMD_RED(+, gx_mean)
    for (size_t i = 0; i < C; i++)
        gx_mean += dout[i] * w[i] * x[i] * rstd;
    gx_mean /= (float)C;
    for (size_t i = 0; i < C; i++) {
        const float xhat = x[i] * rstd;
        if (dw)
            dw[i] += dout[i] * xhat;
        dx[i] += rstd * (dout[i] * w[i] - xhat * gx_mean);
    }
}

/* Causal softmax of row t (positions 0..t visible) of `scale * scores`, in place; the masked tail
 * t+1..T-1 is set to 0 so the next GEMM (probabilities . V) can run over the full row. */
ZP_HD static inline void zp_softmax_causal_row(float *row, size_t t, size_t T, float scale)
{
    float mx = -INFINITY;
    ZP_NN_SIMD_RED(max, mx)
    for (size_t j = 0; j <= t; j++) {
        float v = scale * row[j];
        mx = v > mx ? v : mx;
    }
    float s = 0.0f;
    ZP_NN_SIMD_RED(+, s)
    for (size_t j = 0; j <= t; j++) {
        float e = zp_expf(scale * row[j] - mx);
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
    ZP_NN_SIMD_RED(+, dot)
    for (size_t j = 0; j <= t; j++)
        dot += p[j] * d[j];
    for (size_t j = 0; j <= t; j++)
        d[j] = scale * p[j] * (d[j] - dot);
    for (size_t j = t + 1; j < T; j++)
        d[j] = 0.0f;
}

/* ---- vocabulary-parallel cross-entropy, one row of logits (V columns of this shard) ---- */

/* max_j l_j of one row. */
ZP_HD static inline float zp_xent_row_max(const float *l, size_t V)
{
    float m = -INFINITY;
    ZP_NN_SIMD_RED(max, m)
    for (size_t j = 0; j < V; j++)
        m = l[j] > m ? l[j] : m;
    return m;
}

/* sum_j exp(l_j - m) of one row. */
ZP_HD static inline float zp_xent_row_sumexp(const float *l, float m, size_t V)
{
    float s = 0.0f;
    ZP_NN_SIMD_RED(+, s)
    for (size_t j = 0; j < V; j++)
        s += zp_expf(l[j] - m);
    return s;
}

/* The target's logit when this shard holds column tgt - v0, else 0. */
ZP_HD static inline float zp_xent_row_pick(const float *l, int tgt, long v0, size_t V)
{
    long c = (long)tgt - v0;
    return (c >= 0 && (size_t)c < V) ? l[c] : 0.0f;
}

/* Loss of one row from the full-vocabulary statistics: log(se) + mx - lt. */
ZP_HD static inline float zp_xent_row_loss(float mx, float se, float lt) { return logf(se) + mx - lt; }

/* In place: l -> scale * (softmax(l) - onehot(tgt)), with mx, se the full-vocabulary statistics. */
ZP_HD static inline void zp_xent_row_bwd(float *l, float mx, float se, int tgt, long v0, size_t V, float scale)
{
    const float inv = scale / se;
    ZP_NN_SIMD_LOOP
    for (size_t j = 0; j < V; j++)
        l[j] = zp_expf(l[j] - mx) * inv;
    long c = (long)tgt - v0;
    if (c >= 0 && (size_t)c < V)
        l[c] -= scale;
}

/* ---- per-element and per-column bodies of the device kernels (one thread each) ----
 * The cuda backend's layer kernels (zp_nn_cuda.cu) are grid-stride loops over these; the cpu
 * backend's loops compute the same values in the same order (zp_nn_cpu.c), and the tests run them
 * on the host against plain references. idx is a flat index into an (N, C) tensor, c a column. */

/* Element idx = i*C + c of the embedding output: wte[tok_i - v0][c] (0 when another MP rank owns the
 * row) + wpe[i % T][c] (when wpe != NULL). */
ZP_HD static inline void zp_embed_fwd_at(float *out, const int *tok, size_t C, const float *wte, long v0,
                                         size_t vrows, const float *wpe, size_t T, size_t idx)
{
    const size_t i = idx / C, c = idx % C;
    const long r = (long)tok[i] - v0;
    float o = (r >= 0 && (size_t)r < vrows) ? wte[(size_t)r * C + c] : 0.0f;
    if (wpe)
        o += wpe[(i % T) * C + c];
    out[idx] = o;
}

/* Column c of the embedding backward: dwte[tok_i - v0][c] += dout[i][c] and dwpe[i % T][c] += dout[i][c]
 * for rows i in order (a scatter-add: one thread per column needs no atomics and sums in the order of
 * the serial host loop). */
ZP_HD static inline void zp_embed_bwd_col(float *dwte, float *dwpe, const int *tok, const float *dout, size_t N,
                                          size_t C, long v0, size_t vrows, size_t T, size_t c)
{
    for (size_t i = 0; i < N; i++) {
        const float d = dout[i * C + c];
        const long r = (long)tok[i] - v0;
        if (r >= 0 && (size_t)r < vrows)
            dwte[(size_t)r * C + c] += d;
        if (dwpe)
            dwpe[(i % T) * C + c] += d;
    }
}

/* Column c of the LayerNorm parameter gradients over N rows in order: dw += dout * xhat, db += dout
 * (zp_layernorm_row_bwd's dw, db terms; its dx term runs per row with dw = db = NULL). */
ZP_HD static inline void zp_layernorm_col_bwd(float *dw, float *db, const float *dout, const float *x,
                                              const float *mean, const float *rstd, size_t N, size_t C, size_t c)
{
    float w = dw[c], b = db[c];
    for (size_t i = 0; i < N; i++) {
        const float xhat = (x[i * C + c] - mean[i]) * rstd[i];
        w += dout[i * C + c] * xhat;
        b += dout[i * C + c];
    }
    dw[c] = w;
    db[c] = b;
}

/* Column c of the RMSNorm gain gradient over N rows in order: dw += dout * x * rstd. */
ZP_HD static inline void zp_rmsnorm_col_bwd(float *dw, const float *dout, const float *x, const float *rstd, size_t N,
                                            size_t C, size_t c)
{
    float w = dw[c];
    for (size_t i = 0; i < N; i++)
        w += dout[i * C + c] * (x[i * C + c] * rstd[i]); /* as the row's dout * xhat */
    dw[c] = w;
}

/* The gated MLP's activation (Shazeer 2020): out (N, F) = act(gate) * up from u (N, 2F) = [gate | up] per
 * row, act SiLU (x sigmoid(x): SwiGLU, Llama) or GeLU (GeGLU, Gemma): ZP_GLU_* (kernels/zp_nn.h). */
#ifndef ZP_GLU_SILU
#define ZP_GLU_SILU 0
#define ZP_GLU_GELU 1
#endif

ZP_HD static inline float zp_silu(float x) { return x / (1.0f + zp_expf(-x)); }
ZP_HD static inline float zp_silu_grad(float x)
{
    const float sg = 1.0f / (1.0f + zp_expf(-x));
    return sg * (1.0f + x * (1.0f - sg));
}

ZP_HD static inline void zp_glu_at(float *out, const float *u, size_t F, int act, size_t idx)
{
    const size_t i = idx / F, c = idx % F;
    const float g = u[i * 2 * F + c], v = u[i * 2 * F + F + c];
    out[idx] = (act == ZP_GLU_GELU ? zp_gelu(g) : zp_silu(g)) * v;
}

/* du (N, 2F) = [dout * up * act'(gate) | dout * act(gate)] at element idx of dout (N, F). */
ZP_HD static inline void zp_glu_bwd_at(float *du, const float *dout, const float *u, size_t F, int act, size_t idx)
{
    const size_t i = idx / F, c = idx % F;
    const float g = u[i * 2 * F + c], v = u[i * 2 * F + F + c], d = dout[idx];
    const float a = act == ZP_GLU_GELU ? zp_gelu(g) : zp_silu(g);
    const float da = act == ZP_GLU_GELU ? zp_gelu_grad(g) : zp_silu_grad(g);
    du[i * 2 * F + c] = d * v * da;
    du[i * 2 * F + F + c] = d * a;
}

/* Rotary position embedding (Su et al. 2021, the "rotate half" layout of GPT-NeoX and Llama): in each of
 * the first `heads` head vectors (width hd, even) of a row of leading dimension ld, element j < hd/2 pairs
 * with j + hd/2 and both turn by theta = pos * base^(-2j/hd), pos = row % T; sign -1 turns back (the
 * backward: a rotation's transpose is its inverse). idx runs over rows x heads x hd/2 pairs. */
ZP_HD static inline void zp_rope_at(float *x, size_t ld, size_t heads, size_t hd, size_t T, float base, float sign,
                                    size_t idx)
{
    const size_t half = hd / 2, j = idx % half, hh = (idx / half) % heads, row = idx / (half * heads);
    const float theta = (float)(row % T) * powf(base, -2.0f * (float)j / (float)hd) * sign;
    const float c = cosf(theta), s = sinf(theta);
    float *v = x + row * ld + hh * hd;
    const float a = v[j], b = v[j + half];
    v[j] = a * c - b * s;
    v[j + half] = b * c + a * s;
}

/* Mixture of experts, rows of C elements: a token's k (token, expert) pairs sit in slots slot[t·k + j] of a
 * row buffer (grouped by destination). gather: out row j = in row idx[j] (element e of n·C); combine: out
 * row t = sum over j of gate[t·k + j] (1 when gate is NULL) x rows[slot[t·k + j]] (element e of N·C), the sum
 * in j order; its backward per element (t, j, c) of N·k·C: drows[slot, c] = gate x dout[t, c], and per pair
 * (t, j): dgate = dout row t . rows[slot]. */
ZP_HD static inline void zp_moe_gather_at(float *out, const float *in, const int *idx, size_t C, size_t e)
{
    out[e] = in[(size_t)idx[e / C] * C + e % C];
}

ZP_HD static inline void zp_moe_combine_at(float *out, const float *rows, const int *slot, const float *gate, size_t k,
                                           size_t C, size_t e)
{
    const size_t t = e / C, c = e % C;
    float acc = 0.0f;
    for (size_t j = 0; j < k; j++)
        acc += (gate ? gate[t * k + j] : 1.0f) * rows[(size_t)slot[t * k + j] * C + c];
    out[e] = acc;
}

ZP_HD static inline void zp_moe_combine_bwd_at(float *drows, const float *dout, const int *slot, const float *gate,
                                               size_t k, size_t C, size_t e)
{
    const size_t p = e / C, c = e % C, t = p / k;
    drows[(size_t)slot[p] * C + c] = (gate ? gate[p] : 1.0f) * dout[t * C + c];
}

ZP_HD static inline void zp_moe_gate_grad_at(float *dgate, const float *dout, const float *rows, const int *slot,
                                             size_t k, size_t C, size_t p)
{
    const float *d = dout + (p / k) * C, *r = rows + (size_t)slot[p] * C;
    float acc = 0.0f;
    for (size_t c = 0; c < C; c++)
        acc += d[c] * r[c];
    dgate[p] = acc;
}

/* x[idx] += b[idx % C]. */
ZP_HD static inline void zp_bias_add_at(float *x, const float *b, size_t C, size_t idx) { x[idx] += b[idx % C]; }

/* db[c] += sum over rows i (in order) of d[i][c]. */
ZP_HD static inline void zp_bias_grad_col(float *db, const float *d, size_t N, size_t C, size_t c)
{
    float s = db[c];
    for (size_t i = 0; i < N; i++)
        s += d[i * C + c];
    db[c] = s;
}

/* out[idx] = a[idx] + b[idx] + bias[idx % C] (bias may be NULL). */
ZP_HD static inline void zp_residual_add_at(float *out, const float *a, const float *b, const float *bias, size_t C,
                                            size_t idx)
{
    out[idx] = a[idx] + b[idx] + (bias ? bias[idx % C] : 0.0f);
}

#endif
