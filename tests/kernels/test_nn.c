/* The transformer layer kernels (zp_nn.h) against plain double-precision references on random
 * inputs, and their backward kernels against central finite differences of those references. */
#include <criterion/criterion.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "zp_nn.h"

#define KERNEL_RAND_SEED 777
#include "kernel_rand.h"

/* ---- references in double ---- */
static void ln_ref(double *out, const double *x, const double *w, const double *b, size_t N, size_t C)
{
    for (size_t i = 0; i < N; i++) {
        double m = 0, v = 0;
        for (size_t c = 0; c < C; c++)
            m += x[i * C + c];
        m /= (double)C;
        for (size_t c = 0; c < C; c++)
            v += (x[i * C + c] - m) * (x[i * C + c] - m);
        v /= (double)C;
        for (size_t c = 0; c < C; c++)
            out[i * C + c] = (x[i * C + c] - m) / sqrt(v + 1e-5) * w[c] + b[c];
    }
}
static double gelu_ref(double x) { return 0.5 * x * (1 + tanh(sqrt(2 / M_PI) * (x + 0.044715 * x * x * x))); }

static void softmax_ref(double *p, const double *s, size_t BH, size_t T, double scale)
{
    softmax_causal_ref(p, s, BH * T, T, scale);
}
static double xent_ref(const double *l, const int *tgt, size_t N, size_t V)
{
    double loss = 0;
    for (size_t i = 0; i < N; i++) {
        double mx = -INFINITY, z = 0;
        for (size_t j = 0; j < V; j++)
            mx = fmax(mx, l[i * V + j]);
        for (size_t j = 0; j < V; j++)
            z += exp(l[i * V + j] - mx);
        loss += log(z) + mx - l[i * V + (size_t)tgt[i]];
    }
    return loss;
}

static double *to_d(const float *f, size_t n)
{
    double *d = malloc(n * sizeof *d + 1);
    for (size_t i = 0; i < n; i++)
        d[i] = f[i];
    return d;
}

Test(nn, layernorm_forward_and_backward)
{
    const size_t N = 5, C = 24;
    float *x = frand_vec(N * C, 2.0), *w = frand_vec(C, 1.0), *b = frand_vec(C, 1.0), *dout = frand_vec(N * C, 1.0);
    for (size_t i = 0; i < N * C; i++)
        x[i] += 0.5f; /* non-zero mean */
    float out[5 * 24], mean[5], rstd[5];
    cr_assert_eq(zp_nn_layernorm_fwd(out, mean, rstd, x, w, b, N, C), 0);
    double *xd = to_d(x, N * C), *wd = to_d(w, C), *bd = to_d(b, C), ref[5 * 24];
    ln_ref(ref, xd, wd, bd, N, C);
    for (size_t i = 0; i < N * C; i++)
        cr_assert(close_to(out[i], ref[i], 1e-5, 1e-5), "ln out %zu: %g vs %g", i, out[i], ref[i]);

    /* backward: gradients of L = sum(dout * LN(x)) */
    float dx[5 * 24] = {0}, dw[24] = {0}, db[24] = {0};
    cr_assert_eq(zp_nn_layernorm_bwd(dx, dw, db, dout, x, w, mean, rstd, N, C), 0);
    const double h = 1e-6;
    double o1[5 * 24], o2[5 * 24];
    for (size_t k = 0; k < N * C + C; k++) {
        double *p = k < N * C ? &xd[k] : &wd[k - N * C], keep = *p, l1 = 0, l2 = 0;
        *p = keep + h;
        ln_ref(o1, xd, wd, bd, N, C);
        *p = keep - h;
        ln_ref(o2, xd, wd, bd, N, C);
        *p = keep;
        for (size_t i = 0; i < N * C; i++) {
            l1 += dout[i] * o1[i];
            l2 += dout[i] * o2[i];
        }
        double fd = (l1 - l2) / (2 * h), an = k < N * C ? dx[k] : dw[k - N * C];
        cr_assert(close_to(an, fd, 1e-3, 1e-4), "ln grad %zu: analytic %g vs finite difference %g", k, an, fd);
    }
    for (size_t c = 0; c < C; c++) { /* db = column sums of dout */
        double s = 0;
        for (size_t i = 0; i < N; i++)
            s += dout[i * C + c];
        cr_assert(close_to(db[c], s, 1e-5, 1e-6));
    }
    free(x), free(w), free(b), free(dout), free(xd), free(wd), free(bd);
}

Test(nn, gelu_forward_and_backward)
{
    const size_t n = 200;
    float *x = frand_vec(n, 4.0), out[200], d[200];
    cr_assert_eq(zp_nn_gelu_fwd(out, x, n), 0);
    for (size_t i = 0; i < n; i++) {
        cr_assert(close_to(out[i], gelu_ref(x[i]), 1e-5, 1e-6), "gelu(%g) = %g vs %g", x[i], out[i], gelu_ref(x[i]));
        d[i] = 1.0f;
    }
    cr_assert_eq(zp_nn_gelu_bwd(d, x, n), 0);
    for (size_t i = 0; i < n; i++) {
        double fd = (gelu_ref(x[i] + 1e-6) - gelu_ref(x[i] - 1e-6)) / 2e-6;
        cr_assert(close_to(d[i], fd, 1e-4, 1e-5), "gelu'(%g) = %g vs fd %g", x[i], d[i], fd);
    }
    free(x);
}

Test(nn, causal_softmax_forward_and_backward)
{
    const size_t BH = 3, T = 7, n = BH * T * T;
    const double scale = 0.35;
    float *s = frand_vec(n, 3.0), *dp = frand_vec(n, 1.0), p[3 * 7 * 7], d[3 * 7 * 7];
    memcpy(p, s, sizeof p);
    cr_assert_eq(zp_nn_softmax_causal_fwd(p, BH, T, (float)scale), 0);
    double *sd = to_d(s, n), ref[3 * 7 * 7], r1[3 * 7 * 7], r2[3 * 7 * 7];
    softmax_ref(ref, sd, BH, T, scale);
    for (size_t i = 0; i < n; i++)
        cr_assert(close_to(p[i], ref[i], 1e-5, 1e-7), "softmax %zu: %g vs %g", i, p[i], ref[i]);
    memcpy(d, dp, sizeof d);
    cr_assert_eq(zp_nn_softmax_causal_bwd(d, p, BH, T, (float)scale), 0);
    for (size_t k = 0; k < n; k++) {
        double keep = sd[k], l1 = 0, l2 = 0;
        sd[k] = keep + 1e-6;
        softmax_ref(r1, sd, BH, T, scale);
        sd[k] = keep - 1e-6;
        softmax_ref(r2, sd, BH, T, scale);
        sd[k] = keep;
        for (size_t i = 0; i < n; i++) {
            l1 += dp[i] * r1[i];
            l2 += dp[i] * r2[i];
        }
        double fd = (l1 - l2) / 2e-6;
        cr_assert(close_to(d[k], fd, 1e-3, 1e-5), "softmax grad %zu: %g vs fd %g", k, d[k], fd);
    }
    free(s), free(dp), free(sd);
}

/* The loss and gradient computed from two vocabulary shards equal the whole-vocabulary ones. */
Test(nn, vocab_parallel_cross_entropy)
{
    const size_t N = 6, V = 20, half = V / 2;
    float *l = frand_vec(N * V, 4.0);
    int tgt[6] = {0, 19, 9, 10, 3, 15};
    float sh[2][6 * 10], mx[2][6], se[2][6], lt[2][6], gmx[6], gse[6], glt[6];
    for (int r = 0; r < 2; r++) {
        for (size_t i = 0; i < N; i++)
            memcpy(sh[r] + i * half, l + i * V + (size_t)r * half, half * sizeof(float));
        cr_assert_eq(zp_nn_xent_rowmax(mx[r], sh[r], N, half), 0);
    }
    for (size_t i = 0; i < N; i++)
        gmx[i] = fmaxf(mx[0][i], mx[1][i]); /* the MP all-reduce(max) */
    for (int r = 0; r < 2; r++) {
        cr_assert_eq(zp_nn_xent_sumexp(se[r], sh[r], gmx, N, half), 0);
        cr_assert_eq(zp_nn_xent_pick(lt[r], sh[r], tgt, (long)(r * half), N, half), 0);
    }
    for (size_t i = 0; i < N; i++) {
        gse[i] = se[0][i] + se[1][i];
        glt[i] = lt[0][i] + lt[1][i];
    }
    double *ld = to_d(l, N * V);
    double loss = zp_nn_xent_loss_sum(gmx, gse, glt, N), ref = xent_ref(ld, tgt, N, V);
    cr_assert(close_to(loss, ref, 1e-5, 1e-6), "loss %g vs %g", loss, ref);
    const float scale = 0.25f;
    for (int r = 0; r < 2; r++)
        cr_assert_eq(zp_nn_xent_bwd(sh[r], gmx, gse, tgt, (long)(r * half), N, half, scale), 0);
    for (size_t k = 0; k < N * V; k++) {
        double keep = ld[k];
        ld[k] = keep + 1e-6;
        double l1 = xent_ref(ld, tgt, N, V);
        ld[k] = keep - 1e-6;
        double l2 = xent_ref(ld, tgt, N, V);
        ld[k] = keep;
        double fd = scale * (l1 - l2) / 2e-6;
        size_t i = k / V, j = k % V;
        double an = sh[j / half][i * half + j % half];
        cr_assert(close_to(an, fd, 1e-3, 1e-6), "xent grad (%zu, %zu): %g vs fd %g", i, j, an, fd);
    }
    free(l), free(ld);
}

Test(nn, embedding_gather_and_scatter_add)
{
    const size_t N = 8, C = 4, T = 4, V = 6;
    int tok[8] = {0, 5, 2, 2, 3, 1, 5, 0};
    float *wte = frand_vec(V * C, 1.0), *wpe = frand_vec(T * C, 1.0), *dout = frand_vec(N * C, 1.0);
    float out[8 * 4];
    /* the shard of rows [3, 6) on a model-parallel rank: other rows give 0 */
    cr_assert_eq(zp_nn_embed_fwd(out, tok, N, C, wte + 3 * C, 3, 3, wpe, T), 0);
    for (size_t i = 0; i < N; i++)
        for (size_t c = 0; c < C; c++) {
            float want = (tok[i] >= 3 ? wte[(size_t)tok[i] * C + c] : 0.0f) + wpe[(i % T) * C + c];
            cr_assert_eq(out[i * C + c], want);
        }
    float dwte[6 * 4] = {0}, dwpe[4 * 4] = {0};
    cr_assert_eq(zp_nn_embed_bwd(dwte, dwpe, tok, dout, N, C, 0, V, T), 0);
    for (size_t v = 0; v < V; v++)
        for (size_t c = 0; c < C; c++) {
            double s = 0;
            for (size_t i = 0; i < N; i++)
                if ((size_t)tok[i] == v)
                    s += dout[i * C + c];
            cr_assert(close_to(dwte[v * C + c], s, 1e-6, 1e-7));
        }
    for (size_t t = 0; t < T; t++)
        for (size_t c = 0; c < C; c++)
            cr_assert(close_to(dwpe[t * C + c], dout[t * C + c] + dout[(t + T) * C + c], 1e-6, 1e-7));
    free(wte), free(wpe), free(dout);
}

Test(nn, bias_and_residual)
{
    const size_t N = 3, C = 5;
    float *a = frand_vec(N * C, 1), *b = frand_vec(N * C, 1), *bias = frand_vec(C, 1), out[15], db[5] = {0};
    cr_assert_eq(zp_nn_residual_add(out, a, b, bias, N, C), 0);
    for (size_t i = 0; i < N * C; i++)
        cr_assert_eq(out[i], a[i] + b[i] + bias[i % C]);
    cr_assert_eq(zp_nn_bias_grad(db, a, N, C), 0);
    for (size_t c = 0; c < C; c++)
        cr_assert(close_to(db[c], (double)a[c] + a[C + c] + a[2 * C + c], 1e-6, 1e-7));
    memcpy(out, a, sizeof out);
    cr_assert_eq(zp_nn_bias_add(out, bias, N, C), 0);
    for (size_t i = 0; i < N * C; i++)
        cr_assert_eq(out[i], a[i] + bias[i % C]);
    cr_assert_neq(zp_nn_bias_add(NULL, bias, N, C), 0);
    free(a), free(b), free(bias);
}

/* Context parallelism's kernels (positions given) against the plain ones on the whole sequence: CP 2 over
 * T = 8 tokens in 4 chunks of 2, rank 0 holding chunks 0 and 3 (positions 0 1 6 7) and the key columns in the
 * gathered order, rank 0's slice then rank 1's (0 1 6 7 2 3 4 5). Each local row is the whole sequence's
 * row at its position, its columns permuted. */
Test(nn, positions_given_as_the_whole_sequence)
{
    enum { T = 8, TL = 4, BH = 3, HD = 4, LD = 10, H = 2, CC = 5 };
    const int qpos[TL] = {0, 1, 6, 7}, kpos[T] = {0, 1, 6, 7, 2, 3, 4, 5};
    const float scale = 0.4f;
    float *s = frand_vec(BH * T * T, 3.0), *d = frand_vec(BH * T * T, 1.0);
    float *ls = malloc(BH * TL * T * sizeof(float)), *ld = malloc(BH * TL * T * sizeof(float));
    for (size_t b = 0; b < BH; b++)
        for (size_t i = 0; i < TL; i++)
            for (size_t j = 0; j < T; j++) {
                ls[(b * TL + i) * T + j] = s[(b * T + (size_t)qpos[i]) * T + (size_t)kpos[j]];
                ld[(b * TL + i) * T + j] = d[(b * T + (size_t)qpos[i]) * T + (size_t)kpos[j]];
            }
    cr_assert_eq(zp_nn_softmax_causal_fwd(s, BH, T, scale), ZP_OK);
    cr_assert_eq(zp_nn_softmax_pos_fwd(ls, BH * TL, TL, T, qpos, kpos, scale), ZP_OK);
    cr_assert_eq(zp_nn_softmax_causal_bwd(d, s, BH, T, scale), ZP_OK);
    cr_assert_eq(zp_nn_softmax_pos_bwd(ld, ls, BH * TL, TL, T, qpos, kpos, scale), ZP_OK);
    for (size_t b = 0; b < BH; b++)
        for (size_t i = 0; i < TL; i++)
            for (size_t j = 0; j < T; j++) {
                const size_t g = (b * T + (size_t)qpos[i]) * T + (size_t)kpos[j], l = (b * TL + i) * T + j;
                cr_assert(close_to(ls[l], s[g], 1e-6, 1e-7), "softmax (%zu %zu %zu): %g vs %g", b, i, j, ls[l], s[g]);
                cr_assert(close_to(ld[l], d[g], 1e-5, 1e-7), "softmax bwd (%zu %zu %zu): %g vs %g", b, i, j, ld[l], d[g]);
            }
    /* rotary: two sequences of T rows, each local row turned as its position's row */
    float *x = frand_vec(2 * T * LD, 1.0), *lx = malloc(2 * TL * LD * sizeof(float));
    for (size_t b = 0; b < 2; b++)
        for (size_t i = 0; i < TL; i++)
            memcpy(lx + (b * TL + i) * LD, x + (b * T + (size_t)qpos[i]) * LD, LD * sizeof(float));
    cr_assert_eq(zp_nn_rope(x, 2 * T, LD, H, HD, T, 10000.0f, 0), ZP_OK);
    cr_assert_eq(zp_nn_rope_pos(lx, 2 * TL, LD, H, HD, qpos, TL, 10000.0f, 0), ZP_OK);
    for (size_t b = 0; b < 2; b++)
        for (size_t i = 0; i < TL; i++)
            for (size_t c = 0; c < LD; c++)
                cr_assert(close_to(lx[(b * TL + i) * LD + c], x[(b * T + (size_t)qpos[i]) * LD + c], 1e-6, 1e-7));
    /* learned positions: row i gets wpe[pos[i % TL]], and its gradient goes back there */
    float *wpe = frand_vec(T * CC, 1.0), *out = calloc(2 * TL * CC, sizeof(float)), *dw = calloc(T * CC, sizeof(float));
    cr_assert_eq(zp_nn_pos_add(out, wpe, qpos, 2 * TL, TL, CC), ZP_OK);
    cr_assert_eq(zp_nn_pos_add_bwd(dw, qpos, out, 2 * TL, TL, CC), ZP_OK);
    for (size_t i = 0; i < 2 * TL; i++)
        for (size_t c = 0; c < CC; c++)
            cr_assert_eq(out[i * CC + c], wpe[(size_t)qpos[i % TL] * CC + c]);
    for (size_t p = 0; p < T; p++) /* held positions twice (two sequences), the others not at all */
        cr_assert_eq(dw[p * CC], (p < 2 || p >= 6) ? 2.0f * wpe[p * CC] : 0.0f, "dwpe row %zu", p);
    cr_assert_neq(zp_nn_softmax_pos_fwd(ls, BH * TL, TL, T, NULL, kpos, scale), ZP_OK);
    free(s), free(d), free(ls), free(ld), free(x), free(lx), free(wpe), free(out), free(dw);
}

/* Ring attention's online softmax against the plain softmax over every key (zp_nn_softmax_pos_fwd / _bwd), on
 * random scores: rank 0 of CP 2 over T = 8 (queries at 0 1 6 7), the keys in two chunks of 4 (its own, 0 1 6 7,
 * and rank 1's, 2 3 4 5), merged in either order (rank 1's first leaves rows 0 and 1 without a key until the
 * second chunk). The output (probabilities . V), the probabilities recomputed from the log-sum-exp and the
 * scores' gradient from D = the row's dot of the output and its gradient equal the plain ones. */
static void online_merge_check(int first)
{
    enum { T = 8, TL = 4, BH = 3, HD = 5, R = BH * TL };
    const int qpos[TL] = {0, 1, 6, 7}, kpos[T] = {0, 1, 6, 7, 2, 3, 4, 5};
    const float scale = 0.45f;
    float *s = frand_vec(R * T, 3.0), *v = frand_vec(T * HD, 1.0), *dy = frand_vec(R * HD, 1.0);
    float p[R * T], dp[R * T], y[R * HD], yref[R * HD] = {0}, a[R * TL], d[R * TL];
    float mx[R], se[R], corr[R], D[R];
    memcpy(p, s, sizeof p);
    cr_assert_eq(zp_nn_softmax_pos_fwd(p, R, TL, T, qpos, kpos, scale), ZP_OK);
    for (size_t r = 0; r < R; r++) /* reference: y = p . v, dp = dy . v^T, then the softmax's backward */
        for (size_t j = 0; j < T; j++) {
            dp[r * T + j] = 0.0f;
            for (size_t c = 0; c < HD; c++) {
                yref[r * HD + c] += p[r * T + j] * v[j * HD + c];
                dp[r * T + j] += dy[r * HD + c] * v[j * HD + c];
            }
        }
    cr_assert_eq(zp_nn_softmax_pos_bwd(dp, p, R, TL, T, qpos, kpos, scale), ZP_OK);
    for (size_t r = 0; r < R; r++)
        mx[r] = -INFINITY, se[r] = 0.0f;
    memset(y, 0, sizeof y);
    for (int k = 0; k < 2; k++) {
        const size_t c0 = (size_t)((first + k) % 2) * TL;
        for (size_t r = 0; r < R; r++)
            memcpy(a + r * TL, s + r * T + c0, TL * sizeof(float));
        cr_assert_eq(zp_nn_softmax_online_fwd(a, mx, se, corr, R, TL, TL, qpos, kpos + c0, scale), ZP_OK);
        cr_assert_eq(zp_nn_scale_rows(y, HD, corr, R, HD), ZP_OK);
        for (size_t r = 0; r < R; r++)
            for (size_t j = 0; j < TL; j++)
                for (size_t c = 0; c < HD; c++)
                    y[r * HD + c] += a[r * TL + j] * v[(c0 + j) * HD + c];
    }
    cr_assert_eq(zp_nn_softmax_online_end(mx, se, R), ZP_OK);
    cr_assert_eq(zp_nn_scale_rows(y, HD, se, R, HD), ZP_OK);
    for (size_t i = 0; i < R * HD; i++)
        cr_assert(close_to(y[i], yref[i], 1e-5, 1e-6), "merged output [%zu]: %g vs %g", i, y[i], yref[i]);
    cr_assert_eq(zp_nn_row_dot(D, dy, HD, y, HD, R, HD), ZP_OK);
    for (size_t c0 = 0; c0 < T; c0 += TL) {
        for (size_t r = 0; r < R; r++) {
            memcpy(a + r * TL, s + r * T + c0, TL * sizeof(float));
            for (size_t j = 0; j < TL; j++) {
                d[r * TL + j] = 0.0f;
                for (size_t c = 0; c < HD; c++)
                    d[r * TL + j] += dy[r * HD + c] * v[(c0 + j) * HD + c];
            }
        }
        cr_assert_eq(zp_nn_softmax_lse_fwd(a, mx, R, TL, TL, qpos, kpos + c0, scale), ZP_OK);
        cr_assert_eq(zp_nn_softmax_lse_bwd(d, a, D, R, TL, scale), ZP_OK);
        for (size_t r = 0; r < R; r++)
            for (size_t j = 0; j < TL; j++) {
                const size_t g = r * T + c0 + j, l = r * TL + j;
                cr_assert(close_to(a[l], p[g], 1e-5, 1e-7), "probability (%zu %zu): %g vs %g", r, c0 + j, a[l], p[g]);
                cr_assert(close_to(d[l], dp[g], 1e-4, 1e-6), "score gradient (%zu %zu): %g vs %g", r, c0 + j, d[l],
                          dp[g]);
            }
    }
    free(s), free(v), free(dy);
}

Test(nn, online_softmax_merge_is_the_plain_softmax)
{
    online_merge_check(0);
    online_merge_check(1);
    float mx[1] = {-INFINITY}, se[1] = {0.0f};
    cr_assert_neq(zp_nn_softmax_online_end(mx, se, 1), ZP_OK, "a row without a key is refused");
    cr_assert_neq(zp_nn_softmax_online_fwd(NULL, mx, se, se, 1, 1, 1, NULL, NULL, 1.0f), ZP_OK);
}
