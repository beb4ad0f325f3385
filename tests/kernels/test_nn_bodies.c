/* The bodies of the cuda backend's layer kernels (zp_nn_elementwise.h: one element, row or column per
 * device thread; kernels/zp_nn_cuda.cu is grid-stride loops over exactly these calls), run here on the
 * host in the decomposition the device uses, against plain double-precision references on random
 * inputs. No GPU runs here: this is how the device arithmetic is tested. Tolerances are relative to
 * the reference, a few fp32 roundings per accumulated term (rows of up to a few hundred elements);
 * check_rejects() shows each tolerance refuses a 1e-4 relative error, so a wrong body cannot pass. The
 * column sums are also compared bit for bit with the cpu table's kernels (same order, no FMA). */
#include <criterion/criterion.h>

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "zp_nn.h"
#include "zp_nn_elementwise.h"

#define KERNEL_RAND_SEED 4242
#include "kernel_rand.h"

static double *dzeros(size_t n) { return calloc(n + 1, sizeof(double)); }
static float *fzeros(size_t n) { return calloc(n + 1, sizeof(float)); }

/* Every element of got (float) against ref (double). */
static void expect_close(const char *what, const float *got, const double *ref, size_t n, double rtol, double atol)
{
    for (size_t i = 0; i < n; i++)
        cr_assert(close_to(got[i], ref[i], rtol, atol), "%s[%zu]: %.9g vs reference %.9g", what, i, (double)got[i],
                  ref[i]);
}

/* The tolerance would see a 1e-4 relative error of a typical value. */
static void check_rejects(double rtol, double atol, double typical)
{
    cr_assert(!close_to(typical * (1 + 1e-4), typical, rtol, atol), "tolerance rtol %g atol %g too loose", rtol, atol);
}

enum { N = 37, C = 48, T = 8, V = 53 };

Test(nn_bodies, embedding_forward_per_element)
{
    const long v0 = 10;
    const size_t vrows = 20;
    int tok[N];
    for (size_t i = 0; i < N; i++)
        tok[i] = (int)(i * 7 % 40); /* some rows belong to another MP rank's shard */
    float *wte = frand_vec(vrows * C, 0.5), *wpe = frand_vec(T * C, 0.5), *out = fzeros(N * C);
    double *ref = dzeros(N * C);
    for (int with_wpe = 0; with_wpe < 2; with_wpe++) {
        for (size_t idx = 0; idx < N * C; idx++)
            zp_embed_fwd_at(out, tok, C, wte, v0, vrows, with_wpe ? wpe : NULL, T, idx);
        for (size_t i = 0; i < N; i++)
            for (size_t c = 0; c < C; c++) {
                long r = tok[i] - v0;
                double w = (r >= 0 && r < (long)vrows) ? wte[r * C + c] : 0.0;
                ref[i * C + c] = w + (with_wpe ? wpe[(i % T) * C + c] : 0.0);
            }
        expect_close("embed", out, ref, N * C, 1e-7, 0); /* one fp32 addition */
    }
    check_rejects(1e-7, 0, 0.5);
    free(wte), free(wpe), free(out), free(ref);
}

Test(nn_bodies, embedding_backward_per_column)
{
    const long v0 = 5;
    const size_t vrows = 30;
    int tok[N];
    for (size_t i = 0; i < N; i++)
        tok[i] = (int)(i * 3 % 36); /* repeated rows: a scatter-add */
    float *dout = frand_vec(N * C, 1.0), *dwte = frand_vec(vrows * C, 0.1), *dwpe = frand_vec(T * C, 0.1);
    float *dwte_cpu = malloc(vrows * C * sizeof(float)), *dwpe_cpu = malloc(T * C * sizeof(float));
    memcpy(dwte_cpu, dwte, vrows * C * sizeof(float));
    memcpy(dwpe_cpu, dwpe, T * C * sizeof(float));
    double *rte = dzeros(vrows * C), *rpe = dzeros(T * C);
    for (size_t k = 0; k < vrows * C; k++)
        rte[k] = dwte[k];
    for (size_t k = 0; k < T * C; k++)
        rpe[k] = dwpe[k];
    for (size_t i = 0; i < N; i++)
        for (size_t c = 0; c < C; c++) {
            long r = tok[i] - v0;
            if (r >= 0 && r < (long)vrows)
                rte[r * C + c] += dout[i * C + c];
            rpe[(i % T) * C + c] += dout[i * C + c];
        }
    for (size_t c = 0; c < C; c++)
        zp_embed_bwd_col(dwte, dwpe, tok, dout, N, C, v0, vrows, T, c);
    expect_close("dwte", dwte, rte, vrows * C, 1e-6, 1e-6);
    expect_close("dwpe", dwpe, rpe, T * C, 1e-6, 1e-6);
    check_rejects(1e-6, 1e-6, 1.0);
    /* the same sums in the same order as the cpu kernel */
    cr_assert(zp_nn_ops_cpu.embed_bwd(dwte_cpu, dwpe_cpu, tok, dout, N, C, v0, vrows, T) == ZP_OK);
    cr_assert(memcmp(dwte, dwte_cpu, vrows * C * sizeof(float)) == 0, "dwte differs from the cpu kernel");
    cr_assert(memcmp(dwpe, dwpe_cpu, T * C * sizeof(float)) == 0, "dwpe differs from the cpu kernel");
    free(dout), free(dwte), free(dwpe), free(dwte_cpu), free(dwpe_cpu), free(rte), free(rpe);
}

/* Row i of x (N x C): its mean and (biased) variance, in double, as LayerNorm's references take them. */
static void row_stats(const float *x, size_t i, double *mean, double *var)
{
    double m = 0, v = 0;
    for (size_t c = 0; c < C; c++)
        m += x[i * C + c];
    m /= C;
    for (size_t c = 0; c < C; c++)
        v += (x[i * C + c] - m) * (x[i * C + c] - m);
    v /= C;
    *mean = m;
    *var = v;
}

/* LayerNorm backward in double: dx = rstd (g - mean g - xhat mean(g xhat)), g = dout w; dw = sum dout xhat,
 * db = sum dout; mean and rstd in double from x. */
static void ln_bwd_ref(double *dx, double *dw, double *db, const float *dout, const float *x, const float *w)
{
    for (size_t i = 0; i < N; i++) {
        double m, v;
        row_stats(x, i, &m, &v);
        double r = 1 / sqrt(v + 1e-5), gm = 0, gxm = 0;
        for (size_t c = 0; c < C; c++) {
            double xh = (x[i * C + c] - m) * r, g = (double)dout[i * C + c] * w[c];
            gm += g / C;
            gxm += g * xh / C;
        }
        for (size_t c = 0; c < C; c++) {
            double xh = (x[i * C + c] - m) * r, g = (double)dout[i * C + c] * w[c];
            dx[i * C + c] += r * (g - gm - xh * gxm);
            dw[c] += dout[i * C + c] * xh;
            db[c] += dout[i * C + c];
        }
    }
}

Test(nn_bodies, layernorm_rows_and_columns)
{
    float *x = frand_vec(N * C, 2.0), *w = frand_vec(C, 1.0), *b = frand_vec(C, 0.5), *dout = frand_vec(N * C, 1.0);
    float *out = fzeros(N * C), *mean = fzeros(N), *rstd = fzeros(N);
    /* forward: one row per thread */
    for (size_t i = 0; i < N; i++)
        zp_layernorm_row(out + i * C, mean + i, rstd + i, x + i * C, w, b, C);
    double *ref = dzeros(N * C);
    for (size_t i = 0; i < N; i++) {
        double m, v;
        row_stats(x, i, &m, &v);
        for (size_t c = 0; c < C; c++)
            ref[i * C + c] = (x[i * C + c] - m) / sqrt(v + 1e-5) * w[c] + b[c];
    }
    expect_close("layernorm", out, ref, N * C, 1e-5, 1e-6);
    /* backward: dx per row (dw, db NULL), then dw and db per column */
    float *dx = fzeros(N * C), *dw = fzeros(C), *db = fzeros(C);
    for (size_t i = 0; i < N; i++)
        zp_layernorm_row_bwd(dx + i * C, NULL, NULL, dout + i * C, x + i * C, w, mean[i], rstd[i], C);
    for (size_t c = 0; c < C; c++)
        zp_layernorm_col_bwd(dw, db, dout, x, mean, rstd, N, C, c);
    double *rdx = dzeros(N * C), *rdw = dzeros(C), *rdb = dzeros(C);
    ln_bwd_ref(rdx, rdw, rdb, dout, x, w);
    expect_close("layernorm dx", dx, rdx, N * C, 1e-4, 1e-5);
    expect_close("layernorm dw", dw, rdw, C, 1e-5, 1e-5);
    expect_close("layernorm db", db, rdb, C, 1e-5, 1e-5);
    check_rejects(1e-5, 1e-6, 1.0);
    check_rejects(1e-5, 1e-5, 1.0);
    /* the column decomposition gives the cpu kernel's dw, db bit for bit */
    float *dx2 = fzeros(N * C), *dw2 = fzeros(C), *db2 = fzeros(C);
    cr_assert(zp_nn_ops_cpu.layernorm_bwd(dx2, dw2, db2, dout, x, w, mean, rstd, N, C) == ZP_OK);
    cr_assert(memcmp(dw, dw2, C * sizeof(float)) == 0 && memcmp(db, db2, C * sizeof(float)) == 0,
              "column sums differ from the cpu kernel");
    free(x), free(w), free(b), free(dout), free(out), free(mean), free(rstd), free(ref), free(dx), free(dw), free(db);
    free(rdx), free(rdw), free(rdb), free(dx2), free(dw2), free(db2);
}

Test(nn_bodies, gelu_per_element)
{
    float *x = frand_vec(4096, 6.0);
    for (size_t i = 0; i < 4096; i++) {
        double u = sqrt(2 / M_PI) * (x[i] + 0.044715 * x[i] * x[i] * x[i]), th = tanh(u);
        double g = 0.5 * x[i] * (1 + th);
        double dg = 0.5 * (1 + th) + 0.5 * x[i] * (1 - th * th) * sqrt(2 / M_PI) * (1 + 3 * 0.044715 * x[i] * x[i]);
        cr_assert(close_to(zp_gelu(x[i]), g, 1e-5, 1e-6), "gelu(%g) = %g vs %g", x[i], zp_gelu(x[i]), g);
        cr_assert(close_to(zp_gelu_grad(x[i]), dg, 1e-5, 1e-6), "gelu'(%g) = %g vs %g", x[i], zp_gelu_grad(x[i]), dg);
    }
    check_rejects(1e-5, 1e-6, 1.0);
    free(x);
}

Test(nn_bodies, causal_softmax_per_row)
{
    const size_t BH = 5, R = BH * T;
    const float scale = 0.35f;
    float *s = frand_vec(R * T, 4.0), *p = malloc(R * T * sizeof(float)), *d = frand_vec(R * T, 1.0);
    memcpy(p, s, R * T * sizeof(float));
    for (size_t r = 0; r < R; r++) /* one row per thread, position r % T */
        zp_softmax_causal_row(p + r * T, r % T, T, scale);
    double *sd = dzeros(R * T), *ref = dzeros(R * T), *rd = dzeros(R * T);
    for (size_t i = 0; i < R * T; i++)
        sd[i] = s[i];
    softmax_causal_ref(ref, sd, R, T, scale);
    for (size_t r = 0; r < R; r++) {
        size_t t = r % T;
        double dot = 0;
        for (size_t j = 0; j <= t; j++)
            dot += ref[r * T + j] * d[r * T + j];
        for (size_t j = 0; j < T; j++)
            rd[r * T + j] = j <= t ? scale * ref[r * T + j] * (d[r * T + j] - dot) : 0.0;
    }
    expect_close("softmax", p, ref, R * T, 1e-5, 1e-7);
    for (size_t r = 0; r < R; r++)
        zp_softmax_causal_row_bwd(d + r * T, p + r * T, r % T, T, scale);
    expect_close("softmax bwd", d, rd, R * T, 1e-4, 1e-6);
    check_rejects(1e-5, 1e-7, 0.2);
    free(s), free(p), free(d), free(sd), free(ref), free(rd);
}

Test(nn_bodies, cross_entropy_per_row)
{
    const long v0 = 40; /* this shard: columns [40, 93) of the vocabulary */
    const float scale = 0.01f;
    float *l = frand_vec(N * V, 5.0), *mx = fzeros(N), *se = fzeros(N), *lt = fzeros(N);
    int tgt[N];
    for (size_t i = 0; i < N; i++)
        tgt[i] = (int)(i * 11 % 120); /* some targets in other shards */
    for (size_t i = 0; i < N; i++) {
        mx[i] = zp_xent_row_max(l + i * V, V);
        se[i] = zp_xent_row_sumexp(l + i * V, mx[i], V);
        lt[i] = zp_xent_row_pick(l + i * V, tgt[i], v0, V);
    }
    double loss = 0, rloss = 0;
    for (size_t i = 0; i < N; i++)
        loss += zp_xent_row_loss(mx[i], se[i], lt[i]);
    for (size_t i = 0; i < N; i++) {
        double m = -INFINITY, z = 0;
        for (size_t j = 0; j < V; j++)
            m = fmax(m, l[i * V + j]);
        for (size_t j = 0; j < V; j++)
            z += exp(l[i * V + j] - m);
        long c = tgt[i] - v0;
        double pick = (c >= 0 && c < V) ? l[i * V + c] : 0.0;
        cr_assert(mx[i] == (float)m, "row max %g vs %g", mx[i], m);
        cr_assert(close_to(se[i], z, 1e-5, 0), "row %zu sum of exp %g vs %g", i, se[i], z);
        cr_assert(lt[i] == (float)pick, "picked logit %g vs %g", lt[i], pick);
        rloss += log(z) + m - pick;
        /* backward in place: scale (softmax - onehot) */
        float *row = l + i * V;
        double *rg = dzeros(V);
        for (size_t j = 0; j < V; j++)
            rg[j] = scale * (exp(row[j] - m) / z - ((long)j == c ? 1.0 : 0.0));
        zp_xent_row_bwd(row, mx[i], se[i], tgt[i], v0, V, scale);
        expect_close("xent grad", row, rg, V, 1e-5, 1e-9);
        free(rg);
    }
    cr_assert(close_to(loss, rloss, 1e-6, 0), "loss sum %.9g vs %.9g", loss, rloss);
    check_rejects(1e-5, 0, 1.0);
    check_rejects(1e-6, 0, 100.0);
    free(l), free(mx), free(se), free(lt);
}

Test(nn_bodies, bias_and_residual)
{
    float *x = frand_vec(N * C, 1.0), *b = frand_vec(C, 1.0), *a = frand_vec(N * C, 1.0), *y = frand_vec(N * C, 1.0);
    float *out = fzeros(N * C), *db = frand_vec(C, 0.1), *db_cpu = malloc(C * sizeof(float));
    memcpy(db_cpu, db, C * sizeof(float));
    double *ref = dzeros(N * C), *rdb = dzeros(C);
    for (size_t k = 0; k < N * C; k++)
        ref[k] = (double)x[k] + b[k % C];
    for (size_t idx = 0; idx < N * C; idx++)
        zp_bias_add_at(x, b, C, idx);
    expect_close("bias add", x, ref, N * C, 1e-7, 0);
    for (int with_bias = 0; with_bias < 2; with_bias++) {
        for (size_t k = 0; k < N * C; k++)
            ref[k] = (double)a[k] + y[k] + (with_bias ? b[k % C] : 0.0);
        for (size_t idx = 0; idx < N * C; idx++)
            zp_residual_add_at(out, a, y, with_bias ? b : NULL, C, idx);
        expect_close("residual add", out, ref, N * C, 1e-6, 1e-7);
    }
    for (size_t c = 0; c < C; c++) {
        rdb[c] = db[c];
        for (size_t i = 0; i < N; i++)
            rdb[c] += a[i * C + c];
    }
    for (size_t c = 0; c < C; c++)
        zp_bias_grad_col(db, a, N, C, c);
    expect_close("bias grad", db, rdb, C, 1e-5, 1e-6);
    check_rejects(1e-5, 1e-6, 1.0);
    cr_assert(zp_nn_ops_cpu.bias_grad(db_cpu, a, N, C) == ZP_OK);
    cr_assert(memcmp(db, db_cpu, C * sizeof(float)) == 0, "bias grad differs from the cpu kernel");
    free(x), free(b), free(a), free(y), free(out), free(db), free(db_cpu), free(ref), free(rdb);
}

/* fp16 -> fp32 of every code against a decode of the fields in double (ZeRO-Offload's way back). */
Test(nn_bodies, fp16_expansion_all_codes)
{
    for (uint32_t h = 0; h < 65536; h++) {
        int s = (int)(h >> 15), e = (int)((h >> 10) & 31), f = (int)(h & 1023);
        float got = zp_f16_to_f32((uint16_t)h);
        if (e == 31 && f) {
            cr_assert(isnan(got), "code %04x: NaN expected", h);
            continue;
        }
        double ref = e == 31 ? INFINITY : e == 0 ? ldexp(f, -24) : ldexp(1024 + f, e - 25);
        ref = s ? -ref : ref;
        cr_assert(got == (float)ref, "code %04x: %g vs %g", h, got, ref);
    }
    /* and the cpu table's loop over it, with y += x */
    uint16_t src[5] = {0x3c00, 0xc000, 0x0001, 0x7bff, 0x3555};
    float dst[5], y[5] = {1, 2, 3, 4, 5}, add[5] = {0.5f, -2, 1e-3f, 0, 8};
    cr_assert(zp_nn_ops_cpu.f16_to_f32(dst, src, 5) == ZP_OK);
    cr_assert(dst[0] == 1.0f && dst[1] == -2.0f && dst[2] == 5.9604644775390625e-08f && dst[3] == 65504.0f);
    cr_assert(zp_nn_ops_cpu.add(y, add, 5) == ZP_OK);
    cr_assert(y[0] == 1.5f && y[1] == 0.0f && y[2] == 3.001f && y[3] == 4.0f && y[4] == 13.0f);
}

/* RMSNorm in double: out = x / sqrt(mean x^2 + eps) * w; backward dx = r (g - xhat mean(g xhat)), g = dout w,
 * dw = sum dout xhat. */
Test(nn_bodies, rmsnorm_rows_and_columns)
{
    float *x = frand_vec(N * C, 2.0), *w = frand_vec(C, 1.0), *dout = frand_vec(N * C, 1.0);
    float *out = fzeros(N * C), *rstd = fzeros(N);
    for (size_t i = 0; i < N; i++)
        zp_rmsnorm_row(out + i * C, rstd + i, x + i * C, w, C);
    double *ref = dzeros(N * C), *rdx = dzeros(N * C), *rdw = dzeros(C);
    for (size_t i = 0; i < N; i++) {
        double q = 0, gxm = 0;
        for (size_t c = 0; c < C; c++)
            q += (double)x[i * C + c] * x[i * C + c];
        double r = 1 / sqrt(q / C + 1e-5);
        for (size_t c = 0; c < C; c++) {
            ref[i * C + c] = x[i * C + c] * r * w[c];
            gxm += (double)dout[i * C + c] * w[c] * x[i * C + c] * r / C;
        }
        for (size_t c = 0; c < C; c++) {
            double xh = x[i * C + c] * r;
            rdx[i * C + c] = r * ((double)dout[i * C + c] * w[c] - xh * gxm);
            rdw[c] += dout[i * C + c] * xh;
        }
    }
    expect_close("rmsnorm", out, ref, N * C, 1e-5, 1e-6);
    float *dx = fzeros(N * C), *dw = fzeros(C);
    for (size_t i = 0; i < N; i++)
        zp_rmsnorm_row_bwd(dx + i * C, NULL, dout + i * C, x + i * C, w, rstd[i], C);
    for (size_t c = 0; c < C; c++)
        zp_rmsnorm_col_bwd(dw, dout, x, rstd, N, C, c);
    expect_close("rmsnorm dx", dx, rdx, N * C, 1e-4, 1e-5);
    expect_close("rmsnorm dw", dw, rdw, C, 1e-5, 1e-5);
    check_rejects(1e-5, 1e-6, 1.0);
    /* the cpu kernel: the same forward, and dw bit for bit as the column decomposition (row order) */
    float *out2 = fzeros(N * C), *rstd2 = fzeros(N), *dx2 = fzeros(N * C), *dw2 = fzeros(C);
    cr_assert(zp_nn_ops_cpu.rmsnorm_fwd(out2, rstd2, x, w, N, C) == ZP_OK);
    cr_assert(memcmp(out, out2, N * C * sizeof(float)) == 0 && memcmp(rstd, rstd2, N * sizeof(float)) == 0);
    cr_assert(zp_nn_ops_cpu.rmsnorm_bwd(dx2, dw2, dout, x, w, rstd, N, C) == ZP_OK);
    expect_close("rmsnorm dx (cpu)", dx2, rdx, N * C, 1e-4, 1e-5);
    cr_assert(memcmp(dw, dw2, C * sizeof(float)) == 0, "column sums differ from the cpu kernel");
    cr_assert(zp_nn_ops_cpu.rmsnorm_fwd(NULL, rstd2, x, w, N, C) == ZP_EINVAL);
    free(x), free(w), free(dout), free(out), free(rstd), free(ref), free(rdx), free(rdw), free(dx), free(dw);
    free(out2), free(rstd2), free(dx2), free(dw2);
}

/* SwiGLU and GeGLU against double: silu(g) = g / (1 + e^-g), gelu (tanh form); the backward against the
 * analytic derivatives, and a finite difference of the double forward. */
static double silu_d(double g) { return g / (1 + exp(-g)); }
static double gelu_d(double g) { return 0.5 * g * (1 + tanh(sqrt(2 / M_PI) * (g + 0.044715 * g * g * g))); }

Test(nn_bodies, glu_forward_and_backward)
{
    const size_t F = 19;
    for (int act = ZP_GLU_SILU; act <= ZP_GLU_GELU; act++) {
        float *u = frand_vec(N * 2 * F, 4.0), *dout = frand_vec(N * F, 1.0), *out = fzeros(N * F), *du = fzeros(N * 2 * F);
        cr_assert(zp_nn_ops_cpu.glu_fwd(out, u, N, F, act) == ZP_OK);
        cr_assert(zp_nn_ops_cpu.glu_bwd(du, dout, u, N, F, act) == ZP_OK);
        double *ref = dzeros(N * F), *rdu = dzeros(N * 2 * F);
        for (size_t i = 0; i < N; i++)
            for (size_t c = 0; c < F; c++) {
                double g = u[i * 2 * F + c], v = u[i * 2 * F + F + c], d = dout[i * F + c], e = 1e-4;
                double (*fa)(double) = act == ZP_GLU_GELU ? gelu_d : silu_d;
                ref[i * F + c] = fa(g) * v;
                rdu[i * 2 * F + c] = d * v * (fa(g + e) - fa(g - e)) / (2 * e); /* central difference */
                rdu[i * 2 * F + F + c] = d * fa(g);
            }
        expect_close(act ? "geglu" : "swiglu", out, ref, N * F, 1e-5, 1e-6);
        expect_close(act ? "geglu du" : "swiglu du", du, rdu, N * 2 * F, 3e-5, 2e-6);
        free(u), free(dout), free(out), free(du), free(ref), free(rdu);
    }
    check_rejects(3e-5, 2e-6, 1.0);
}

/* Rotary: each pair (j, j + hd/2) of a head turned by pos * base^(-2j/hd); the inverse turns it back; the
 * heads beyond `heads` and the columns beyond heads * hd (V in a fused row) are untouched. */
Test(nn_bodies, rope_turns_and_turns_back)
{
    const size_t heads = 3, hd = 8, ld = 5 * hd, rows = 2 * T;
    const float base = 10000.0f;
    float *x = frand_vec(rows * ld, 1.0), *y = malloc(rows * ld * sizeof(float));
    memcpy(y, x, rows * ld * sizeof(float));
    cr_assert(zp_nn_ops_cpu.rope(y, rows, ld, heads, hd, T, base, 0) == ZP_OK);
    double *ref = dzeros(rows * ld);
    for (size_t r = 0; r < rows; r++)
        for (size_t c = 0; c < ld; c++) {
            ref[r * ld + c] = x[r * ld + c];
            if (c >= heads * hd)
                continue;
            size_t hh = c / hd, j = c % hd, half = hd / 2, jj = j % half;
            double th = (double)(r % T) * pow(base, -2.0 * jj / hd);
            double a = x[r * ld + hh * hd + jj], b = x[r * ld + hh * hd + jj + half];
            ref[r * ld + c] = j < half ? a * cos(th) - b * sin(th) : b * cos(th) + a * sin(th);
        }
    expect_close("rope", y, ref, rows * ld, 1e-5, 2e-6);
    cr_assert(zp_nn_ops_cpu.rope(y, rows, ld, heads, hd, T, base, 1) == ZP_OK);
    double *orig = dzeros(rows * ld);
    for (size_t i = 0; i < rows * ld; i++)
        orig[i] = x[i];
    expect_close("rope inverse", y, orig, rows * ld, 1e-5, 2e-6);
    check_rejects(1e-5, 2e-6, 1.0);
    cr_assert(zp_nn_ops_cpu.rope(y, rows, ld, heads, 7, T, base, 0) == ZP_EINVAL, "odd head size accepted");
    cr_assert(zp_nn_ops_cpu.rope(y, rows, 2 * hd, heads, hd, T, base, 0) == ZP_EINVAL, "heads beyond the row");
    free(x), free(y), free(ref), free(orig);
}

/* MoE routing kernels against double references: a token's k rows at scattered slots, gathered, combined
 * with gates (and without), and the combine's backward (row gradients at the slots, the gates' gradients). */
Test(nn_bodies, moe_gather_combine_and_backward)
{
    const size_t Nt = 13, k = 3, Cc = 10, R = Nt * k;
    int slot[Nt * k], idx[Nt * k];
    for (size_t p = 0; p < R; p++) {
        slot[p] = (int)((p * 7 + 3) % R); /* a permutation of the R slots */
        idx[slot[p]] = (int)(p / k);      /* the row of slot s is token p / k's */
    }
    float *x = frand_vec(Nt * Cc, 1.0), *rows = fzeros(R * Cc), *gate = frand_vec(R, 1.0), *out = fzeros(Nt * Cc);
    cr_assert(zp_nn_ops_cpu.moe_gather(rows, x, idx, R, Cc) == ZP_OK);
    for (size_t s2 = 0; s2 < R; s2++)
        cr_assert(memcmp(rows + s2 * Cc, x + (size_t)idx[s2] * Cc, Cc * sizeof(float)) == 0, "gathered row %zu", s2);
    float *y = frand_vec(R * Cc, 1.0); /* the experts' outputs at the slots */
    double *ref = dzeros(Nt * Cc), *rsum = dzeros(Nt * Cc), *rdy = dzeros(R * Cc), *rdg = dzeros(R);
    float *dout = frand_vec(Nt * Cc, 1.0), *dy = fzeros(R * Cc), *dg = fzeros(R), *sum = fzeros(Nt * Cc);
    for (size_t t = 0; t < Nt; t++)
        for (size_t j = 0; j < k; j++) {
            size_t p = t * k + j, sl = (size_t)slot[p];
            for (size_t c = 0; c < Cc; c++) {
                ref[t * Cc + c] += (double)gate[p] * y[sl * Cc + c];
                rsum[t * Cc + c] += y[sl * Cc + c];
                rdy[sl * Cc + c] = (double)gate[p] * dout[t * Cc + c];
                rdg[p] += (double)dout[t * Cc + c] * y[sl * Cc + c];
            }
        }
    cr_assert(zp_nn_ops_cpu.moe_combine(out, y, slot, gate, Nt, k, Cc) == ZP_OK);
    expect_close("moe_combine", out, ref, Nt * Cc, 1e-6, 1e-6);
    cr_assert(zp_nn_ops_cpu.moe_combine(sum, y, slot, NULL, Nt, k, Cc) == ZP_OK);
    expect_close("moe_combine (no gates)", sum, rsum, Nt * Cc, 1e-6, 1e-6);
    cr_assert(zp_nn_ops_cpu.moe_combine_bwd(dy, dg, dout, y, slot, gate, Nt, k, Cc) == ZP_OK);
    expect_close("moe_combine_bwd rows", dy, rdy, R * Cc, 1e-6, 1e-7);
    expect_close("moe_combine_bwd gates", dg, rdg, R, 1e-5, 1e-6);
    check_rejects(1e-5, 1e-6, 1.0);
    cr_assert(zp_nn_ops_cpu.moe_combine(out, y, NULL, gate, Nt, k, Cc) == ZP_EINVAL);
    free(x), free(rows), free(gate), free(out), free(y), free(ref), free(rsum), free(rdy), free(rdg), free(dout);
    free(dy), free(dg), free(sum);
}

Test(nn_bodies, tables)
{
    const zp_nn_ops *o;
    cr_assert(zp_nn_ops_get("cpu", &o) == ZP_OK && o == &zp_nn_ops_cpu);
    cr_assert(zp_nn_ops_get("tpu", &o) == ZP_EINVAL);
#if ZP_HAVE_CUDA
    cr_assert(zp_nn_ops_get("cuda", &o) == ZP_OK && strcmp(o->name, "cuda") == 0);
    /* every entry of the cuda table is set (a missing one would crash the executor on a GPU) */
    cr_assert(o->embed_fwd && o->embed_bwd && o->layernorm_fwd && o->layernorm_bwd && o->gelu_fwd && o->gelu_bwd &&
              o->softmax_causal_fwd && o->softmax_causal_bwd && o->xent_rowmax && o->xent_sumexp && o->xent_pick &&
              o->xent_loss_sum && o->xent_bwd && o->bias_add && o->bias_grad && o->residual_add && o->add &&
              o->f16_to_f32 && o->rmsnorm_fwd && o->rmsnorm_bwd && o->glu_fwd && o->glu_bwd && o->rope && o->moe_gather &&
              o->moe_combine && o->moe_combine_bwd);
#else
    cr_assert(zp_nn_ops_get("cuda", &o) == ZP_EUNSUPPORTED);
#endif
}
