/* zp_nn_cpu.c — the transformer layer kernels of zp_nn.h on the host: loops over rows (OpenMP),
 * the row arithmetic from zp_nn_elementwise.h. */
/* no-trapping-math for every function of this file, the inlined row arithmetic included: lets GCC
 * if-convert the comparisons of the exp clamp and of the row maxima, so those loops vectorise
 * (nothing here reads the floating-point exception flags). */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("no-trapping-math")
#endif
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

/* Function multi-versioning (x86-64, GCC, ifunc): the row loops get an AVX2/FMA clone (8 lanes)
 * next to the baseline SSE2 one; the loader picks one per machine, so every rank of a run computes
 * the same arithmetic. The OpenMP-parallel kernels call these per chunk of rows. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && defined(__linux__)
#define ZP_NN_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define ZP_NN_CLONES
#endif

/* Rows per OpenMP chunk of the row kernels. */
#define NN_ROWS 32

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

ZP_NN_CLONES static void layernorm_rows(float *out, float *mean, float *rstd, const float *x, const float *w,
                                        const float *b, size_t r0, size_t r1, size_t C)
{
    for (size_t i = r0; i < r1; i++)
        zp_layernorm_row(out + i * C, mean + i, rstd + i, x + i * C, w, b, C);
}

ZP_NN_CLONES static void layernorm_rows_bwd(float *dx, float *dw, float *db, const float *dout, const float *x,
                                            const float *w, const float *mean, const float *rstd, size_t N, size_t C)
{
    for (size_t i = 0; i < N; i++)
        zp_layernorm_row_bwd(dx + i * C, dw, db, dout + i * C, x + i * C, w, mean[i], rstd[i], C);
}

zp_status zp_nn_layernorm_fwd(float *out, float *mean, float *rstd, const float *x, const float *w, const float *b,
                              size_t N, size_t C)
{
    NN_CHECK(out && mean && rstd && x && w && b && C > 0, "NULL buffer or empty shape");
    const size_t chunks = (N + NN_ROWS - 1) / NN_ROWS;
    ZP_NN_PAR
    for (size_t k = 0; k < chunks; k++)
        layernorm_rows(out, mean, rstd, x, w, b, k * NN_ROWS, k * NN_ROWS + NN_ROWS < N ? k * NN_ROWS + NN_ROWS : N, C);
    return ZP_OK;
}

zp_status zp_nn_layernorm_bwd(float *dx, float *dw, float *db, const float *dout, const float *x, const float *w,
                              const float *mean, const float *rstd, size_t N, size_t C)
{
    NN_CHECK(dx && dw && db && dout && x && w && mean && rstd && C > 0, "NULL buffer or empty shape");
    /* serial: dw and db accumulate over rows (a per-thread reduction would change the sum order
     * with the thread count, and results must not depend on it) */
    layernorm_rows_bwd(dx, dw, db, dout, x, w, mean, rstd, N, C);
    return ZP_OK;
}

zp_status zp_nn_rmsnorm_fwd(float *out, float *rstd, const float *x, const float *w, size_t N, size_t C)
{
    NN_CHECK(out && rstd && x && w && C > 0, "NULL buffer or empty shape");
    ZP_NN_PAR
    for (size_t i = 0; i < N; i++)
        zp_rmsnorm_row(out + i * C, rstd + i, x + i * C, w, C);
    return ZP_OK;
}

zp_status zp_nn_rmsnorm_bwd(float *dx, float *dw, const float *dout, const float *x, const float *w, const float *rstd,
                            size_t N, size_t C)
{
    NN_CHECK(dx && dw && dout && x && w && rstd && C > 0, "NULL buffer or empty shape");
    /* serial: dw accumulates over rows (the sum order must not depend on the thread count) */
    for (size_t i = 0; i < N; i++)
        zp_rmsnorm_row_bwd(dx + i * C, dw, dout + i * C, x + i * C, w, rstd[i], C);
    return ZP_OK;
}

zp_status zp_nn_glu_fwd(float *out, const float *u, size_t N, size_t F, int act)
{
    NN_CHECK(out && u && F > 0, "NULL buffer or empty shape");
    ZP_NN_PAR
    for (size_t i = 0; i < N * F; i++)
        zp_glu_at(out, u, F, act, i);
    return ZP_OK;
}

zp_status zp_nn_glu_bwd(float *du, const float *dout, const float *u, size_t N, size_t F, int act)
{
    NN_CHECK(du && dout && u && F > 0, "NULL buffer or empty shape");
    ZP_NN_PAR
    for (size_t i = 0; i < N * F; i++)
        zp_glu_bwd_at(du, dout, u, F, act, i);
    return ZP_OK;
}

zp_status zp_nn_rope(float *x, size_t N, size_t ld, size_t heads, size_t hd, size_t T, float base, int inverse)
{
    NN_CHECK(x && hd >= 2 && hd % 2 == 0 && T > 0 && heads * hd <= ld, "NULL buffer or bad shape");
    const size_t n = N * heads * (hd / 2);
    ZP_NN_PAR
    for (size_t i = 0; i < n; i++)
        zp_rope_at(x, ld, heads, hd, T, base, inverse ? -1.0f : 1.0f, i);
    return ZP_OK;
}

zp_status zp_nn_moe_gather(float *out, const float *in, const int *idx, size_t n, size_t C)
{
    NN_CHECK(out && in && (idx || n == 0) && C > 0, "NULL buffer or empty shape");
    ZP_NN_PAR
    for (size_t e = 0; e < n * C; e++)
        zp_moe_gather_at(out, in, idx, C, e);
    return ZP_OK;
}

zp_status zp_nn_moe_combine(float *out, const float *rows, const int *slot, const float *gate, size_t N, size_t k,
                            size_t C)
{
    NN_CHECK(out && rows && slot && k > 0 && C > 0, "NULL buffer or empty shape");
    ZP_NN_PAR
    for (size_t e = 0; e < N * C; e++)
        zp_moe_combine_at(out, rows, slot, gate, k, C, e);
    return ZP_OK;
}

zp_status zp_nn_moe_combine_bwd(float *drows, float *dgate, const float *dout, const float *rows, const int *slot,
                                const float *gate, size_t N, size_t k, size_t C)
{
    NN_CHECK(drows && dout && slot && k > 0 && C > 0 && (!dgate || rows), "NULL buffer or empty shape");
    ZP_NN_PAR
    for (size_t e = 0; e < N * k * C; e++)
        zp_moe_combine_bwd_at(drows, dout, slot, gate, k, C, e);
    if (dgate) {
        ZP_NN_PAR
        for (size_t p = 0; p < N * k; p++)
            zp_moe_gate_grad_at(dgate, dout, rows, slot, k, C, p);
    }
    return ZP_OK;
}

ZP_NN_CLONES static void gelu_range(float *out, const float *x, size_t n)
{
    ZP_NN_SIMD
    for (size_t i = 0; i < n; i++)
        out[i] = zp_gelu(x[i]);
}

ZP_NN_CLONES static void gelu_bwd_range(float *d, const float *x, size_t n)
{
    ZP_NN_SIMD
    for (size_t i = 0; i < n; i++)
        d[i] *= zp_gelu_grad(x[i]);
}

zp_status zp_nn_gelu_fwd(float *out, const float *x, size_t n)
{
    NN_CHECK(out && x, "NULL buffer");
    gelu_range(out, x, n);
    return ZP_OK;
}

zp_status zp_nn_gelu_bwd(float *d, const float *x, size_t n)
{
    NN_CHECK(d && x, "NULL buffer");
    gelu_bwd_range(d, x, n);
    return ZP_OK;
}

ZP_NN_CLONES static void softmax_rows(float *att, size_t r0, size_t r1, size_t T, float scale)
{
    for (size_t r = r0; r < r1; r++)
        zp_softmax_causal_row(att + r * T, r % T, T, scale);
}

ZP_NN_CLONES static void softmax_rows_bwd(float *d, const float *att, size_t r0, size_t r1, size_t T, float scale)
{
    for (size_t r = r0; r < r1; r++)
        zp_softmax_causal_row_bwd(d + r * T, att + r * T, r % T, T, scale);
}

zp_status zp_nn_softmax_causal_fwd(float *att, size_t BH, size_t T, float scale)
{
    NN_CHECK(att && T > 0, "NULL buffer or empty shape");
    const size_t R = BH * T, chunks = (R + NN_ROWS - 1) / NN_ROWS;
    ZP_NN_PAR
    for (size_t k = 0; k < chunks; k++)
        softmax_rows(att, k * NN_ROWS, k * NN_ROWS + NN_ROWS < R ? k * NN_ROWS + NN_ROWS : R, T, scale);
    return ZP_OK;
}

zp_status zp_nn_softmax_causal_bwd(float *d, const float *att, size_t BH, size_t T, float scale)
{
    NN_CHECK(d && att && T > 0, "NULL buffer or empty shape");
    const size_t R = BH * T, chunks = (R + NN_ROWS - 1) / NN_ROWS;
    ZP_NN_PAR
    for (size_t k = 0; k < chunks; k++)
        softmax_rows_bwd(d, att, k * NN_ROWS, k * NN_ROWS + NN_ROWS < R ? k * NN_ROWS + NN_ROWS : R, T, scale);
    return ZP_OK;
}

/* The row arithmetic is zp_nn_elementwise.h's; these wrappers give it the AVX2 clone. */
ZP_NN_CLONES static float row_max(const float *l, size_t V) { return zp_xent_row_max(l, V); }

ZP_NN_CLONES static float row_sumexp(const float *l, float m, size_t V) { return zp_xent_row_sumexp(l, m, V); }

ZP_NN_CLONES static void row_bwd(float *l, float mx, float se, int tgt, long v0, size_t V, float scale)
{
    zp_xent_row_bwd(l, mx, se, tgt, v0, V, scale);
}

zp_status zp_nn_xent_rowmax(float *mx, const float *logits, size_t N, size_t V)
{
    NN_CHECK(mx && logits && V > 0, "NULL buffer or empty shape");
    ZP_NN_PAR
    for (size_t i = 0; i < N; i++)
        mx[i] = row_max(logits + i * V, V);
    return ZP_OK;
}

zp_status zp_nn_xent_sumexp(float *se, const float *logits, const float *mx, size_t N, size_t V)
{
    NN_CHECK(se && logits && mx && V > 0, "NULL buffer or empty shape");
    ZP_NN_PAR
    for (size_t i = 0; i < N; i++)
        se[i] = row_sumexp(logits + i * V, mx[i], V);
    return ZP_OK;
}

zp_status zp_nn_xent_pick(float *lt, const float *logits, const int *tgt, long v0, size_t N, size_t V)
{
    NN_CHECK(lt && logits && tgt && V > 0, "NULL buffer or empty shape");
    for (size_t i = 0; i < N; i++)
        lt[i] = zp_xent_row_pick(logits + i * V, tgt[i], v0, V);
    return ZP_OK;
}

double zp_nn_xent_loss_sum(const float *mx, const float *se, const float *lt, size_t N)
{
    double s = 0.0;
    for (size_t i = 0; i < N; i++)
        s += (double)zp_xent_row_loss(mx[i], se[i], lt[i]);
    return s;
}

zp_status zp_nn_xent_bwd(float *logits, const float *mx, const float *se, const int *tgt, long v0, size_t N,
                         size_t V, float scale)
{
    NN_CHECK(logits && mx && se && tgt && V > 0, "NULL buffer or empty shape");
    ZP_NN_PAR
    for (size_t i = 0; i < N; i++)
        row_bwd(logits + i * V, mx[i], se[i], tgt[i], v0, V, scale);
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

ZP_NN_CLONES static void bias_grad_rows(float *restrict db, const float *restrict d, size_t N, size_t C)
{
    for (size_t i = 0; i < N; i++)
        for (size_t c = 0; c < C; c++)
            db[c] += d[i * C + c];
}

zp_status zp_nn_bias_grad(float *db, const float *d, size_t N, size_t C)
{
    NN_CHECK(db && d && C > 0, "NULL buffer or empty shape");
    bias_grad_rows(db, d, N, C);
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

/* ---- the cpu table (zp_nn.h) ---- */

static zp_status cpu_loss_sum(const float *mx, const float *se, const float *lt, size_t N, double *sum)
{
    NN_CHECK(mx && se && lt && sum, "NULL buffer");
    *sum = zp_nn_xent_loss_sum(mx, se, lt, N);
    return ZP_OK;
}

ZP_NN_CLONES static void add_range(float *restrict y, const float *restrict x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        y[i] += x[i];
}

static zp_status cpu_add(float *y, const float *x, size_t n)
{
    NN_CHECK(y && x, "NULL buffer");
    add_range(y, x, n);
    return ZP_OK;
}

ZP_NN_CLONES static void f16_range(float *restrict dst, const uint16_t *restrict src, size_t n)
{
    for (size_t i = 0; i < n; i++)
        dst[i] = zp_f16_to_f32(src[i]);
}

static zp_status cpu_f16_to_f32(float *dst, const uint16_t *src, size_t n)
{
    NN_CHECK(dst && src, "NULL buffer");
    f16_range(dst, src, n);
    return ZP_OK;
}

/* ---- context parallelism: positions given ---- */

/* Causal softmax of one row over the keys whose position is at most t (kpos (Tk)), in place; the others 0. */
static void softmax_pos_row(float *row, const int *kpos, int t, size_t Tk, float scale)
{
    float mx = -INFINITY, s = 0.0f;
    for (size_t j = 0; j < Tk; j++)
        if (kpos[j] <= t && scale * row[j] > mx)
            mx = scale * row[j];
    for (size_t j = 0; j < Tk; j++) {
        const float e = kpos[j] <= t ? zp_expf(scale * row[j] - mx) : 0.0f;
        row[j] = e;
        s += e;
    }
    const float inv = 1.0f / s;
    for (size_t j = 0; j < Tk; j++)
        row[j] *= inv;
}

/* Its backward, in place on d: d_score = scale * p * (d - sum_j p_j d_j), masked keys 0 (p is 0 there). */
static void softmax_pos_row_bwd(float *d, const float *p, const int *kpos, int t, size_t Tk, float scale)
{
    float dot = 0.0f;
    for (size_t j = 0; j < Tk; j++)
        dot += p[j] * d[j];
    for (size_t j = 0; j < Tk; j++)
        d[j] = kpos[j] <= t ? scale * p[j] * (d[j] - dot) : 0.0f;
}

zp_status zp_nn_softmax_pos_fwd(float *att, size_t rows, size_t Tq, size_t Tk, const int *qpos, const int *kpos,
                                float scale)
{
    NN_CHECK(att && qpos && kpos && Tq > 0 && Tk > 0, "NULL buffer or empty shape");
    ZP_NN_PAR
    for (size_t r = 0; r < rows; r++)
        softmax_pos_row(att + r * Tk, kpos, qpos[r % Tq], Tk, scale);
    return ZP_OK;
}

zp_status zp_nn_softmax_pos_bwd(float *d, const float *att, size_t rows, size_t Tq, size_t Tk, const int *qpos,
                                const int *kpos, float scale)
{
    NN_CHECK(d && att && qpos && kpos && Tq > 0 && Tk > 0, "NULL buffer or empty shape");
    ZP_NN_PAR
    for (size_t r = 0; r < rows; r++)
        softmax_pos_row_bwd(d + r * Tk, att + r * Tk, kpos, qpos[r % Tq], Tk, scale);
    return ZP_OK;
}

/* ---- ring attention: key chunks merged by online softmax (zp_nn.h) ---- */

/* One row of a chunk: its unmasked scores' max joins the running max, the exponentials are taken against it. */
static void online_row(float *row, float *mx, float *se, float *corr, const int *kpos, int t, size_t Tk, float scale)
{
    float m = *mx, s = 0.0f;
    for (size_t j = 0; j < Tk; j++)
        if (kpos[j] <= t && scale * row[j] > m)
            m = scale * row[j];
    if (m == -INFINITY) { /* no unmasked key so far: nothing to merge */
        memset(row, 0, Tk * sizeof *row);
        *corr = 1.0f;
        return;
    }
    for (size_t j = 0; j < Tk; j++) {
        const float e = kpos[j] <= t ? zp_expf(scale * row[j] - m) : 0.0f;
        row[j] = e;
        s += e;
    }
    *corr = *mx == -INFINITY ? 0.0f : zp_expf(*mx - m);
    *se = *se * *corr + s;
    *mx = m;
}

zp_status zp_nn_softmax_online_fwd(float *att, float *mx, float *se, float *corr, size_t rows, size_t Tq, size_t Tk,
                                   const int *qpos, const int *kpos, float scale)
{
    NN_CHECK(att && mx && se && corr && qpos && kpos && Tq > 0 && Tk > 0, "NULL buffer or empty shape");
    ZP_NN_PAR
    for (size_t r = 0; r < rows; r++)
        online_row(att + r * Tk, mx + r, se + r, corr + r, kpos, qpos[r % Tq], Tk, scale);
    return ZP_OK;
}

zp_status zp_nn_softmax_online_end(float *mx, float *se, size_t rows)
{
    NN_CHECK(mx && se, "NULL buffer");
    for (size_t r = 0; r < rows; r++) {
        if (!(se[r] > 0.0f))
            return ZP_FAIL(ZP_EINVAL, "online softmax: row %zu has no unmasked key", r);
        mx[r] += logf(se[r]);
        se[r] = 1.0f / se[r];
    }
    return ZP_OK;
}

zp_status zp_nn_softmax_lse_fwd(float *att, const float *lse, size_t rows, size_t Tq, size_t Tk, const int *qpos,
                                const int *kpos, float scale)
{
    NN_CHECK(att && lse && qpos && kpos && Tq > 0 && Tk > 0, "NULL buffer or empty shape");
    ZP_NN_PAR
    for (size_t r = 0; r < rows; r++) {
        float *row = att + r * Tk;
        const int t = qpos[r % Tq];
        for (size_t j = 0; j < Tk; j++)
            row[j] = kpos[j] <= t ? zp_expf(scale * row[j] - lse[r]) : 0.0f;
    }
    return ZP_OK;
}

zp_status zp_nn_softmax_lse_bwd(float *d, const float *att, const float *D, size_t rows, size_t Tk, float scale)
{
    NN_CHECK(d && att && D, "NULL buffer");
    ZP_NN_PAR
    for (size_t r = 0; r < rows; r++)
        for (size_t j = 0; j < Tk; j++)
            d[r * Tk + j] = scale * att[r * Tk + j] * (d[r * Tk + j] - D[r]);
    return ZP_OK;
}

zp_status zp_nn_row_dot(float *out, const float *a, size_t lda, const float *b, size_t ldb, size_t rows, size_t cols)
{
    NN_CHECK(out && a && b, "NULL buffer");
    ZP_NN_PAR
    for (size_t r = 0; r < rows; r++) {
        float s = 0.0f;
        for (size_t c = 0; c < cols; c++)
            s += a[r * lda + c] * b[r * ldb + c];
        out[r] = s;
    }
    return ZP_OK;
}

zp_status zp_nn_scale_rows(float *x, size_t ld, const float *f, size_t rows, size_t cols)
{
    NN_CHECK(x && f, "NULL buffer");
    ZP_NN_PAR
    for (size_t r = 0; r < rows; r++)
        for (size_t c = 0; c < cols; c++)
            x[r * ld + c] *= f[r];
    return ZP_OK;
}

/* zp_rope_at's turn with the row's position from pos. */
zp_status zp_nn_rope_pos(float *x, size_t N, size_t ld, size_t heads, size_t hd, const int *pos, size_t T,
                         float base, int inverse)
{
    NN_CHECK(x && pos && hd >= 2 && hd % 2 == 0 && T > 0 && heads * hd <= ld, "NULL buffer or bad shape");
    const size_t half = hd / 2, n = N * heads * half;
    const float sign = inverse ? -1.0f : 1.0f;
    ZP_NN_PAR
    for (size_t i = 0; i < n; i++) {
        const size_t j = i % half, hh = (i / half) % heads, row = i / (half * heads);
        const float theta = (float)pos[row % T] * powf(base, -2.0f * (float)j / (float)hd) * sign;
        const float c = cosf(theta), s = sinf(theta);
        float *v = x + row * ld + hh * hd;
        const float a = v[j], b = v[j + half];
        v[j] = a * c - b * s;
        v[j + half] = b * c + a * s;
    }
    return ZP_OK;
}

zp_status zp_nn_pos_add(float *out, const float *wpe, const int *pos, size_t N, size_t T, size_t C)
{
    NN_CHECK(out && wpe && pos && T > 0 && C > 0, "NULL buffer or empty shape");
    ZP_NN_PAR
    for (size_t i = 0; i < N; i++) {
        const float *p = wpe + (size_t)pos[i % T] * C;
        for (size_t c = 0; c < C; c++)
            out[i * C + c] += p[c];
    }
    return ZP_OK;
}

zp_status zp_nn_pos_add_bwd(float *dwpe, const int *pos, const float *dout, size_t N, size_t T, size_t C)
{
    NN_CHECK(dwpe && pos && dout && T > 0 && C > 0, "NULL buffer or empty shape");
    for (size_t i = 0; i < N; i++) { /* serial: a scatter-add, in row order */
        float *p = dwpe + (size_t)pos[i % T] * C;
        for (size_t c = 0; c < C; c++)
            p[c] += dout[i * C + c];
    }
    return ZP_OK;
}

const zp_nn_ops zp_nn_ops_cpu = {
    .name = "cpu",
    .embed_fwd = zp_nn_embed_fwd,
    .embed_bwd = zp_nn_embed_bwd,
    .layernorm_fwd = zp_nn_layernorm_fwd,
    .layernorm_bwd = zp_nn_layernorm_bwd,
    .gelu_fwd = zp_nn_gelu_fwd,
    .gelu_bwd = zp_nn_gelu_bwd,
    .softmax_causal_fwd = zp_nn_softmax_causal_fwd,
    .softmax_causal_bwd = zp_nn_softmax_causal_bwd,
    .xent_rowmax = zp_nn_xent_rowmax,
    .xent_sumexp = zp_nn_xent_sumexp,
    .xent_pick = zp_nn_xent_pick,
    .xent_loss_sum = cpu_loss_sum,
    .xent_bwd = zp_nn_xent_bwd,
    .bias_add = zp_nn_bias_add,
    .bias_grad = zp_nn_bias_grad,
    .residual_add = zp_nn_residual_add,
    .rmsnorm_fwd = zp_nn_rmsnorm_fwd,
    .rmsnorm_bwd = zp_nn_rmsnorm_bwd,
    .glu_fwd = zp_nn_glu_fwd,
    .glu_bwd = zp_nn_glu_bwd,
    .rope = zp_nn_rope,
    .moe_gather = zp_nn_moe_gather,
    .moe_combine = zp_nn_moe_combine,
    .moe_combine_bwd = zp_nn_moe_combine_bwd,
    .add = cpu_add,
    .f16_to_f32 = cpu_f16_to_f32,
    .softmax_pos_fwd = zp_nn_softmax_pos_fwd,
    .softmax_pos_bwd = zp_nn_softmax_pos_bwd,
    .rope_pos = zp_nn_rope_pos,
    .pos_add = zp_nn_pos_add,
    .pos_add_bwd = zp_nn_pos_add_bwd,
    .softmax_online_fwd = zp_nn_softmax_online_fwd,
    .softmax_online_end = zp_nn_softmax_online_end,
    .softmax_lse_fwd = zp_nn_softmax_lse_fwd,
    .softmax_lse_bwd = zp_nn_softmax_lse_bwd,
    .row_dot = zp_nn_row_dot,
    .scale_rows = zp_nn_scale_rows,
};

zp_status zp_nn_ops_get(const char *name, const zp_nn_ops **out)
{
    if (name && strcmp(name, "cpu") == 0) {
        *out = &zp_nn_ops_cpu;
        return ZP_OK;
    }
    if (name && strcmp(name, "cuda") == 0) {
#if ZP_HAVE_CUDA
        *out = &zp_nn_ops_cuda;
        return ZP_OK;
#else
        return ZP_FAIL(ZP_EUNSUPPORTED, "this zplan was built without CUDA");
#endif
    }
    return ZP_FAIL(ZP_EINVAL, "no layer kernels for backend '%s'", name ? name : "");
}
