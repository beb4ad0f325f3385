/* zp_nn_cuda.cu — the transformer layer kernels of zp_nn.h on a CUDA device (the cuda table of
 * zp_nn_ops). Every kernel is a grid-stride loop over one body from zp_nn_elementwise.h (per element,
 * per row or per column), the arithmetic the cpu backend runs and the CPU tests check:
 *   - element-wise (embedding, GeLU, bias and residual adds, fp16 expansion): one thread per element;
 *   - row-wise (LayerNorm, causal softmax, cross-entropy): one thread per row, the row in a loop;
 *   - column sums (LayerNorm, bias and embedding parameter gradients): one thread per column, the rows
 *     in order, so no atomics and the same summation order as the host's serial loops.
 * Correctness first: a thread per row walks its row serially (no shared-memory reductions). Kernels
 * run on the default stream, as the cuBLAS GEMMs and cudaMemcpy of the cuda backend do, so they are
 * ordered with them. Buffers are device memory; launch errors come back as zp_status. */
#include <cuda_runtime.h>

#include "zp_cuda_launch.h"

#include <stdlib.h>

#include "zp_nn.h"
#include "zp_nn_elementwise.h"

namespace {

using zp_cuda::grid_for;
using zp_cuda::kThreads;

zp_status launched(const char *what)
{
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess)
        return zp_error_set(ZP_ERUNTIME, __FILE__, __LINE__, "%s kernel launch failed: %s", what,
                            cudaGetErrorString(e));
    return ZP_OK;
}

#define NN_CHECK(cond, what)                                                                      \
    do {                                                                                          \
        if (!(cond))                                                                              \
            return zp_error_set(ZP_EINVAL, __FILE__, __LINE__, "%s: %s", __func__, what);         \
    } while (0)

/* ---- kernels ---- */

__global__ void embed_fwd_k(float *out, const int *tok, size_t N, size_t C, const float *wte, long v0, size_t vrows,
                            const float *wpe, size_t T)
{
    ZP_GRID_LOOP(idx, N * C)
    zp_embed_fwd_at(out, tok, C, wte, v0, vrows, wpe, T, idx);
}

__global__ void embed_bwd_k(float *dwte, float *dwpe, const int *tok, const float *dout, size_t N, size_t C, long v0,
                            size_t vrows, size_t T)
{
    ZP_GRID_LOOP(c, C)
    zp_embed_bwd_col(dwte, dwpe, tok, dout, N, C, v0, vrows, T, c);
}

__global__ void layernorm_fwd_k(float *out, float *mean, float *rstd, const float *x, const float *w, const float *b,
                                size_t N, size_t C)
{
    ZP_GRID_LOOP(i, N)
    zp_layernorm_row(out + i * C, mean + i, rstd + i, x + i * C, w, b, C);
}

__global__ void layernorm_bwd_dx_k(float *dx, const float *dout, const float *x, const float *w, const float *mean,
                                   const float *rstd, size_t N, size_t C)
{
    ZP_GRID_LOOP(i, N)
    zp_layernorm_row_bwd(dx + i * C, NULL, NULL, dout + i * C, x + i * C, w, mean[i], rstd[i], C);
}

__global__ void layernorm_bwd_dw_k(float *dw, float *db, const float *dout, const float *x, const float *mean,
                                   const float *rstd, size_t N, size_t C)
{
    ZP_GRID_LOOP(c, C)
    zp_layernorm_col_bwd(dw, db, dout, x, mean, rstd, N, C, c);
}

__global__ void gelu_fwd_k(float *out, const float *x, size_t n)
{
    ZP_GRID_LOOP(i, n)
    out[i] = zp_gelu(x[i]);
}

__global__ void gelu_bwd_k(float *d, const float *x, size_t n)
{
    ZP_GRID_LOOP(i, n)
    d[i] *= zp_gelu_grad(x[i]);
}

__global__ void softmax_fwd_k(float *att, size_t R, size_t T, float scale)
{
    ZP_GRID_LOOP(r, R)
    zp_softmax_causal_row(att + r * T, r % T, T, scale);
}

__global__ void softmax_bwd_k(float *d, const float *att, size_t R, size_t T, float scale)
{
    ZP_GRID_LOOP(r, R)
    zp_softmax_causal_row_bwd(d + r * T, att + r * T, r % T, T, scale);
}

__global__ void xent_rowmax_k(float *mx, const float *l, size_t N, size_t V)
{
    ZP_GRID_LOOP(i, N)
    mx[i] = zp_xent_row_max(l + i * V, V);
}

__global__ void xent_sumexp_k(float *se, const float *l, const float *mx, size_t N, size_t V)
{
    ZP_GRID_LOOP(i, N)
    se[i] = zp_xent_row_sumexp(l + i * V, mx[i], V);
}

__global__ void xent_pick_k(float *lt, const float *l, const int *tgt, long v0, size_t N, size_t V)
{
    ZP_GRID_LOOP(i, N)
    lt[i] = zp_xent_row_pick(l + i * V, tgt[i], v0, V);
}

__global__ void xent_bwd_k(float *l, const float *mx, const float *se, const int *tgt, long v0, size_t N, size_t V,
                           float scale)
{
    ZP_GRID_LOOP(i, N)
    zp_xent_row_bwd(l + i * V, mx[i], se[i], tgt[i], v0, V, scale);
}

__global__ void bias_add_k(float *x, const float *b, size_t N, size_t C)
{
    ZP_GRID_LOOP(idx, N * C)
    zp_bias_add_at(x, b, C, idx);
}

__global__ void bias_grad_k(float *db, const float *d, size_t N, size_t C)
{
    ZP_GRID_LOOP(c, C)
    zp_bias_grad_col(db, d, N, C, c);
}

__global__ void residual_add_k(float *out, const float *a, const float *b, const float *bias, size_t N, size_t C)
{
    ZP_GRID_LOOP(idx, N * C)
    zp_residual_add_at(out, a, b, bias, C, idx);
}

__global__ void rmsnorm_fwd_k(float *out, float *rstd, const float *x, const float *w, size_t N, size_t C)
{
    ZP_GRID_LOOP(i, N)
    zp_rmsnorm_row(out + i * C, rstd + i, x + i * C, w, C);
}

/* dx per row, then dw per column (the column sum in row order, as the CPU's) */
__global__ void rmsnorm_bwd_dx_k(float *dx, const float *dout, const float *x, const float *w, const float *rstd,
                                 size_t N, size_t C)
{
    ZP_GRID_LOOP(i, N)
    zp_rmsnorm_row_bwd(dx + i * C, NULL, dout + i * C, x + i * C, w, rstd[i], C);
}

__global__ void rmsnorm_bwd_dw_k(float *dw, const float *dout, const float *x, const float *rstd, size_t N, size_t C)
{
    ZP_GRID_LOOP(c, C)
    zp_rmsnorm_col_bwd(dw, dout, x, rstd, N, C, c);
}

__global__ void glu_fwd_k(float *out, const float *u, size_t N, size_t F, int act)
{
    ZP_GRID_LOOP(i, N * F)
    zp_glu_at(out, u, F, act, i);
}

__global__ void glu_bwd_k(float *du, const float *dout, const float *u, size_t N, size_t F, int act)
{
    ZP_GRID_LOOP(i, N * F)
    zp_glu_bwd_at(du, dout, u, F, act, i);
}

__global__ void rope_k(float *x, size_t n, size_t ld, size_t heads, size_t hd, size_t T, float base, float sign)
{
    ZP_GRID_LOOP(i, n)
    zp_rope_at(x, ld, heads, hd, T, base, sign, i);
}

__global__ void moe_gather_k(float *out, const float *in, const int *idx, size_t n, size_t C)
{
    ZP_GRID_LOOP(e, n * C)
    zp_moe_gather_at(out, in, idx, C, e);
}

__global__ void moe_combine_k(float *out, const float *rows, const int *slot, const float *gate, size_t N, size_t k,
                              size_t C)
{
    ZP_GRID_LOOP(e, N * C)
    zp_moe_combine_at(out, rows, slot, gate, k, C, e);
}

__global__ void moe_combine_bwd_k(float *drows, const float *dout, const int *slot, const float *gate, size_t N,
                                  size_t k, size_t C)
{
    ZP_GRID_LOOP(e, N * k * C)
    zp_moe_combine_bwd_at(drows, dout, slot, gate, k, C, e);
}

__global__ void moe_gate_grad_k(float *dgate, const float *dout, const float *rows, const int *slot, size_t N, size_t k,
                                size_t C)
{
    ZP_GRID_LOOP(p, N * k)
    zp_moe_gate_grad_at(dgate, dout, rows, slot, k, C, p);
}

__global__ void add_k(float *y, const float *x, size_t n)
{
    ZP_GRID_LOOP(i, n)
    y[i] += x[i];
}

__global__ void f16_k(float *dst, const uint16_t *src, size_t n)
{
    ZP_GRID_LOOP(i, n)
    dst[i] = zp_f16_to_f32(src[i]);
}

/* ---- host wrappers: the zp_nn.h signatures ---- */

zp_status embed_fwd(float *out, const int *tok, size_t N, size_t C, const float *wte, long v0, size_t vrows,
                    const float *wpe, size_t T)
{
    NN_CHECK(out && tok && wte && C > 0 && T > 0, "NULL buffer or empty shape");
    if (N == 0)
        return ZP_OK;
    embed_fwd_k<<<grid_for(N * C), kThreads>>>(out, tok, N, C, wte, v0, vrows, wpe, T);
    return launched("embed_fwd");
}

zp_status embed_bwd(float *dwte, float *dwpe, const int *tok, const float *dout, size_t N, size_t C, long v0,
                    size_t vrows, size_t T)
{
    NN_CHECK(dwte && tok && dout && C > 0 && T > 0, "NULL buffer or empty shape");
    embed_bwd_k<<<grid_for(C), kThreads>>>(dwte, dwpe, tok, dout, N, C, v0, vrows, T);
    return launched("embed_bwd");
}

zp_status layernorm_fwd(float *out, float *mean, float *rstd, const float *x, const float *w, const float *b, size_t N,
                        size_t C)
{
    NN_CHECK(out && mean && rstd && x && w && b && C > 0, "NULL buffer or empty shape");
    if (N == 0)
        return ZP_OK;
    layernorm_fwd_k<<<grid_for(N), kThreads>>>(out, mean, rstd, x, w, b, N, C);
    return launched("layernorm_fwd");
}

zp_status layernorm_bwd(float *dx, float *dw, float *db, const float *dout, const float *x, const float *w,
                        const float *mean, const float *rstd, size_t N, size_t C)
{
    NN_CHECK(dx && dw && db && dout && x && w && mean && rstd && C > 0, "NULL buffer or empty shape");
    if (N == 0)
        return ZP_OK;
    layernorm_bwd_dx_k<<<grid_for(N), kThreads>>>(dx, dout, x, w, mean, rstd, N, C);
    ZP_TRY(launched("layernorm_bwd (dx)"));
    layernorm_bwd_dw_k<<<grid_for(C), kThreads>>>(dw, db, dout, x, mean, rstd, N, C);
    return launched("layernorm_bwd (dw, db)");
}

zp_status gelu_fwd(float *out, const float *x, size_t n)
{
    NN_CHECK(out && x, "NULL buffer");
    if (n == 0)
        return ZP_OK;
    gelu_fwd_k<<<grid_for(n), kThreads>>>(out, x, n);
    return launched("gelu_fwd");
}

zp_status gelu_bwd(float *d, const float *x, size_t n)
{
    NN_CHECK(d && x, "NULL buffer");
    if (n == 0)
        return ZP_OK;
    gelu_bwd_k<<<grid_for(n), kThreads>>>(d, x, n);
    return launched("gelu_bwd");
}

zp_status softmax_fwd(float *att, size_t BH, size_t T, float scale)
{
    NN_CHECK(att && T > 0, "NULL buffer or empty shape");
    if (BH == 0)
        return ZP_OK;
    softmax_fwd_k<<<grid_for(BH * T), kThreads>>>(att, BH * T, T, scale);
    return launched("softmax_causal_fwd");
}

zp_status softmax_bwd(float *d, const float *att, size_t BH, size_t T, float scale)
{
    NN_CHECK(d && att && T > 0, "NULL buffer or empty shape");
    if (BH == 0)
        return ZP_OK;
    softmax_bwd_k<<<grid_for(BH * T), kThreads>>>(d, att, BH * T, T, scale);
    return launched("softmax_causal_bwd");
}

zp_status xent_rowmax(float *mx, const float *logits, size_t N, size_t V)
{
    NN_CHECK(mx && logits && V > 0, "NULL buffer or empty shape");
    if (N == 0)
        return ZP_OK;
    xent_rowmax_k<<<grid_for(N), kThreads>>>(mx, logits, N, V);
    return launched("xent_rowmax");
}

zp_status xent_sumexp(float *se, const float *logits, const float *mx, size_t N, size_t V)
{
    NN_CHECK(se && logits && mx && V > 0, "NULL buffer or empty shape");
    if (N == 0)
        return ZP_OK;
    xent_sumexp_k<<<grid_for(N), kThreads>>>(se, logits, mx, N, V);
    return launched("xent_sumexp");
}

zp_status xent_pick(float *lt, const float *logits, const int *tgt, long v0, size_t N, size_t V)
{
    NN_CHECK(lt && logits && tgt && V > 0, "NULL buffer or empty shape");
    if (N == 0)
        return ZP_OK;
    xent_pick_k<<<grid_for(N), kThreads>>>(lt, logits, tgt, v0, N, V);
    return launched("xent_pick");
}

/* The N row statistics (3 x N floats, a few KB) come to the host and are summed there in double, as
 * the cpu backend sums them: the loss is a host value. */
zp_status xent_loss_sum(const float *mx, const float *se, const float *lt, size_t N, double *sum)
{
    NN_CHECK(mx && se && lt && sum, "NULL buffer");
    *sum = 0.0;
    if (N == 0)
        return ZP_OK;
    float *h = (float *)malloc(3 * N * sizeof *h);
    if (!h)
        return zp_error_set(ZP_ENOMEM, __FILE__, __LINE__, "out of memory");
    const float *src[3] = {mx, se, lt};
    for (int k = 0; k < 3; k++) {
        cudaError_t e = cudaMemcpy(h + (size_t)k * N, src[k], N * sizeof *h, cudaMemcpyDeviceToHost);
        if (e != cudaSuccess) {
            free(h);
            return zp_error_set(ZP_ERUNTIME, __FILE__, __LINE__, "cudaMemcpy of the loss statistics failed: %s",
                                cudaGetErrorString(e));
        }
    }
    double s = 0.0;
    for (size_t i = 0; i < N; i++)
        s += (double)zp_xent_row_loss(h[i], h[N + i], h[2 * N + i]);
    free(h);
    *sum = s;
    return ZP_OK;
}

zp_status xent_bwd(float *logits, const float *mx, const float *se, const int *tgt, long v0, size_t N, size_t V,
                   float scale)
{
    NN_CHECK(logits && mx && se && tgt && V > 0, "NULL buffer or empty shape");
    if (N == 0)
        return ZP_OK;
    xent_bwd_k<<<grid_for(N), kThreads>>>(logits, mx, se, tgt, v0, N, V, scale);
    return launched("xent_bwd");
}

zp_status bias_add(float *x, const float *b, size_t N, size_t C)
{
    NN_CHECK(x && b && C > 0, "NULL buffer or empty shape");
    if (N == 0)
        return ZP_OK;
    bias_add_k<<<grid_for(N * C), kThreads>>>(x, b, N, C);
    return launched("bias_add");
}

zp_status bias_grad(float *db, const float *d, size_t N, size_t C)
{
    NN_CHECK(db && d && C > 0, "NULL buffer or empty shape");
    bias_grad_k<<<grid_for(C), kThreads>>>(db, d, N, C);
    return launched("bias_grad");
}

zp_status residual_add(float *out, const float *a, const float *b, const float *bias, size_t N, size_t C)
{
    NN_CHECK(out && a && b && C > 0, "NULL buffer or empty shape");
    if (N == 0)
        return ZP_OK;
    residual_add_k<<<grid_for(N * C), kThreads>>>(out, a, b, bias, N, C);
    return launched("residual_add");
}

zp_status rmsnorm_fwd(float *out, float *rstd, const float *x, const float *w, size_t N, size_t C)
{
    NN_CHECK(out && rstd && x && w && C > 0, "NULL buffer or empty shape");
    if (N == 0)
        return ZP_OK;
    rmsnorm_fwd_k<<<grid_for(N), kThreads>>>(out, rstd, x, w, N, C);
    return launched("rmsnorm_fwd");
}

zp_status rmsnorm_bwd(float *dx, float *dw, const float *dout, const float *x, const float *w, const float *rstd,
                      size_t N, size_t C)
{
    NN_CHECK(dx && dw && dout && x && w && rstd && C > 0, "NULL buffer or empty shape");
    if (N == 0)
        return ZP_OK;
    rmsnorm_bwd_dx_k<<<grid_for(N), kThreads>>>(dx, dout, x, w, rstd, N, C);
    ZP_TRY(launched("rmsnorm_bwd (dx)"));
    rmsnorm_bwd_dw_k<<<grid_for(C), kThreads>>>(dw, dout, x, rstd, N, C);
    return launched("rmsnorm_bwd (dw)");
}

zp_status glu_fwd(float *out, const float *u, size_t N, size_t F, int act)
{
    NN_CHECK(out && u && F > 0, "NULL buffer or empty shape");
    if (N == 0)
        return ZP_OK;
    glu_fwd_k<<<grid_for(N * F), kThreads>>>(out, u, N, F, act);
    return launched("glu_fwd");
}

zp_status glu_bwd(float *du, const float *dout, const float *u, size_t N, size_t F, int act)
{
    NN_CHECK(du && dout && u && F > 0, "NULL buffer or empty shape");
    if (N == 0)
        return ZP_OK;
    glu_bwd_k<<<grid_for(N * F), kThreads>>>(du, dout, u, N, F, act);
    return launched("glu_bwd");
}

zp_status rope(float *x, size_t N, size_t ld, size_t heads, size_t hd, size_t T, float base, int inverse)
{
    NN_CHECK(x && hd >= 2 && hd % 2 == 0 && T > 0 && heads * hd <= ld, "NULL buffer or bad shape");
    const size_t n = N * heads * (hd / 2);
    if (n == 0)
        return ZP_OK;
    rope_k<<<grid_for(n), kThreads>>>(x, n, ld, heads, hd, T, base, inverse ? -1.0f : 1.0f);
    return launched("rope");
}

zp_status moe_gather(float *out, const float *in, const int *idx, size_t n, size_t C)
{
    NN_CHECK(out && in && (idx || n == 0) && C > 0, "NULL buffer or empty shape");
    if (n == 0)
        return ZP_OK;
    moe_gather_k<<<grid_for(n * C), kThreads>>>(out, in, idx, n, C);
    return launched("moe_gather");
}

zp_status moe_combine(float *out, const float *rows, const int *slot, const float *gate, size_t N, size_t k, size_t C)
{
    NN_CHECK(out && rows && slot && k > 0 && C > 0, "NULL buffer or empty shape");
    if (N == 0)
        return ZP_OK;
    moe_combine_k<<<grid_for(N * C), kThreads>>>(out, rows, slot, gate, N, k, C);
    return launched("moe_combine");
}

zp_status moe_combine_bwd(float *drows, float *dgate, const float *dout, const float *rows, const int *slot,
                          const float *gate, size_t N, size_t k, size_t C)
{
    NN_CHECK(drows && dout && slot && k > 0 && C > 0 && (!dgate || rows), "NULL buffer or empty shape");
    if (N == 0)
        return ZP_OK;
    moe_combine_bwd_k<<<grid_for(N * k * C), kThreads>>>(drows, dout, slot, gate, N, k, C);
    ZP_TRY(launched("moe_combine_bwd"));
    if (!dgate)
        return ZP_OK;
    moe_gate_grad_k<<<grid_for(N * k), kThreads>>>(dgate, dout, rows, slot, N, k, C);
    return launched("moe_combine_bwd (gates)");
}

zp_status add(float *y, const float *x, size_t n)
{
    NN_CHECK(y && x, "NULL buffer");
    if (n == 0)
        return ZP_OK;
    add_k<<<grid_for(n), kThreads>>>(y, x, n);
    return launched("add");
}

zp_status f16_to_f32(float *dst, const uint16_t *src, size_t n)
{
    NN_CHECK(dst && src, "NULL buffer");
    if (n == 0)
        return ZP_OK;
    f16_k<<<grid_for(n), kThreads>>>(dst, src, n);
    return launched("f16_to_f32");
}

/* Fields by name (C++ before C++20 has no designated initialisers). */
zp_nn_ops make_ops()
{
    zp_nn_ops o = {};
    o.name = "cuda";
    o.embed_fwd = embed_fwd;
    o.embed_bwd = embed_bwd;
    o.layernorm_fwd = layernorm_fwd;
    o.layernorm_bwd = layernorm_bwd;
    o.gelu_fwd = gelu_fwd;
    o.gelu_bwd = gelu_bwd;
    o.softmax_causal_fwd = softmax_fwd;
    o.softmax_causal_bwd = softmax_bwd;
    o.xent_rowmax = xent_rowmax;
    o.xent_sumexp = xent_sumexp;
    o.xent_pick = xent_pick;
    o.xent_loss_sum = xent_loss_sum;
    o.xent_bwd = xent_bwd;
    o.bias_add = bias_add;
    o.bias_grad = bias_grad;
    o.residual_add = residual_add;
    o.rmsnorm_fwd = rmsnorm_fwd;
    o.rmsnorm_bwd = rmsnorm_bwd;
    o.glu_fwd = glu_fwd;
    o.glu_bwd = glu_bwd;
    o.rope = rope;
    o.moe_gather = moe_gather;
    o.moe_combine = moe_combine;
    o.moe_combine_bwd = moe_combine_bwd;
    o.add = add;
    o.f16_to_f32 = f16_to_f32;
    return o;
}

} // namespace

extern "C" const zp_nn_ops zp_nn_ops_cuda = make_ops();
