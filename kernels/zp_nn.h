/* zp_nn.h — the element-wise and row-wise kernels of a GPT decoder's forward and backward. GEMMs are
 * the backend's (zp_kernels.h); these are the rest: embedding gather / scatter-add, LayerNorm, GeLU,
 * causal softmax, vocabulary-parallel cross-entropy, bias and residual adds, and the few element-wise
 * helpers the executor needs on its tensors (y += x, fp16 -> fp32). The per-element arithmetic is in
 * zp_nn_elementwise.h, shared by both implementations:
 *   - zp_nn_* below: the cpu backend's (host memory, OpenMP over rows), zp_nn_cpu.c;
 *   - zp_nn_ops: a table of the same kernels per backend (zp_nn_ops_get("cpu" | "cuda")): the cpu
 *     table calls zp_nn_*, the cuda table (zp_nn_cuda.cu) runs them as CUDA kernels on device memory.
 *
 * Kernels take shapes and buffers, never models. All tensors are row-major fp32; "rows" is the
 * number of tokens N = batch * seq unless said otherwise. Backward kernels ACCUMULATE into
 * parameter gradients (dw += ...) and, where documented, into input gradients, so callers zero
 * what they own. Every function returns ZP_EINVAL on NULL buffers or empty shapes it cannot take. */
#ifndef ZP_NN_H
#define ZP_NN_H

#include <stddef.h>
#include <stdint.h>

#include "zp_config.h"
#include "zp_status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* out (N, C) = wte[tok - v0] (zero when the token is outside [v0, v0 + vrows): another model-parallel
 * rank owns its row) + wpe[i % T] when wpe != NULL. tok (N), wte (vrows, C), wpe (T, C). */
zp_status zp_nn_embed_fwd(float *out, const int *tok, size_t N, size_t C, const float *wte, long v0, size_t vrows,
                          const float *wpe, size_t T);
/* dwte[tok - v0] += dout (tokens of this shard only); dwpe[i % T] += dout when dwpe != NULL. */
zp_status zp_nn_embed_bwd(float *dwte, float *dwpe, const int *tok, const float *dout, size_t N, size_t C, long v0,
                          size_t vrows, size_t T);

/* out (N, C) = LayerNorm(x) * w + b; mean, rstd (N) kept for the backward. */
zp_status zp_nn_layernorm_fwd(float *out, float *mean, float *rstd, const float *x, const float *w, const float *b,
                              size_t N, size_t C);
/* dx (N, C) += d LN / dx . dout; dw, db (C) += parameter gradients. */
zp_status zp_nn_layernorm_bwd(float *dx, float *dw, float *db, const float *dout, const float *x, const float *w,
                              const float *mean, const float *rstd, size_t N, size_t C);

/* out (n) = gelu(x); in place allowed. */
zp_status zp_nn_gelu_fwd(float *out, const float *x, size_t n);
/* d (n) = gelu'(x) * d, in place on the incoming gradient. */
zp_status zp_nn_gelu_bwd(float *d, const float *x, size_t n);

/* att (BH, T, T): scores in, causal softmax(scale * scores) out, masked entries 0. */
zp_status zp_nn_softmax_causal_fwd(float *att, size_t BH, size_t T, float scale);
/* d (BH, T, T): gradient of the probabilities in, gradient of the raw scores out (scale applied). */
zp_status zp_nn_softmax_causal_bwd(float *d, const float *att, size_t BH, size_t T, float scale);

/* Cross-entropy over a vocabulary split into column shards (Megatron's vocab-parallel loss):
 * logits (N, V) hold columns [v0, v0 + V) of the full vocabulary. With full-vocabulary statistics
 * mx = max_j l_j, se = sum_j exp(l_j - mx) and the target's logit lt (each reduced over the shards by
 * the caller: max, sum, sum), the loss of row i is log(se_i) + mx_i - lt_i. */
zp_status zp_nn_xent_rowmax(float *mx, const float *logits, size_t N, size_t V);
zp_status zp_nn_xent_sumexp(float *se, const float *logits, const float *mx, size_t N, size_t V);
/* lt[i] = logits[i, tgt[i] - v0] when this shard holds the target, else 0. */
zp_status zp_nn_xent_pick(float *lt, const float *logits, const int *tgt, long v0, size_t N, size_t V);
/* sum_i (log se_i + mx_i - lt_i), in double. */
double zp_nn_xent_loss_sum(const float *mx, const float *se, const float *lt, size_t N);
/* In place: logits -> scale * (softmax - onehot(tgt)), the gradient of scale * sum_i loss_i. */
zp_status zp_nn_xent_bwd(float *logits, const float *mx, const float *se, const int *tgt, long v0, size_t N,
                         size_t V, float scale);

/* x (N, C) += b (C) on every row. */
zp_status zp_nn_bias_add(float *x, const float *b, size_t N, size_t C);
/* db (C) += sum over rows of d (N, C). */
zp_status zp_nn_bias_grad(float *db, const float *d, size_t N, size_t C);
/* out (N, C) = a + b + bias (bias (C) may be NULL); out may alias a or b. */
zp_status zp_nn_residual_add(float *out, const float *a, const float *b, const float *bias, size_t N, size_t C);

/* Today's architectures (Llama and after). The gated MLP's activations: */
#ifndef ZP_GLU_SILU
#define ZP_GLU_SILU 0 /* SwiGLU (Llama, Mistral, Qwen, DeepSeek) */
#define ZP_GLU_GELU 1 /* GeGLU (Gemma) */
#endif
/* out (N, C) = RMSNorm(x) * w; rstd (N) kept for the backward. */
zp_status zp_nn_rmsnorm_fwd(float *out, float *rstd, const float *x, const float *w, size_t N, size_t C);
/* dx (N, C) += d RMSNorm / dx . dout; dw (C) += the gain's gradient. */
zp_status zp_nn_rmsnorm_bwd(float *dx, float *dw, const float *dout, const float *x, const float *w, const float *rstd,
                            size_t N, size_t C);
/* Gated MLP activation: out (N, F) = act(gate) * up from u (N, 2F) = [gate | up] per row; act ZP_GLU_SILU
 * (SwiGLU) or ZP_GLU_GELU (GeGLU). */
zp_status zp_nn_glu_fwd(float *out, const float *u, size_t N, size_t F, int act);
/* du (N, 2F) = the gradient of u given dout (N, F) (overwritten, not accumulated). */
zp_status zp_nn_glu_bwd(float *du, const float *dout, const float *u, size_t N, size_t F, int act);
/* Rotary embedding, in place, of the first `heads` heads (width hd) of each of N rows of leading dimension
 * ld, position = row % T, base (10000); inverse != 0 turns back (the backward of the gradient). */
zp_status zp_nn_rope(float *x, size_t N, size_t ld, size_t heads, size_t hd, size_t T, float base, int inverse);

/* Context parallelism: a rank holds a slice of each sequence (T local tokens per sequence, not contiguous
 * under causal load balancing) and attends over every slice's keys, so positions are given, not row % T.
 * qpos (Tq) and kpos (Tk): global token positions (int arrays) of the local queries and of the key columns.
 * att (rows = BH * Tq, Tk): scores in, softmax(scale * scores) over the keys with kpos <= qpos[row % Tq]
 * out, the others 0 (the causal mask by global position); its backward as zp_nn_softmax_causal_bwd's. */
zp_status zp_nn_softmax_pos_fwd(float *att, size_t rows, size_t Tq, size_t Tk, const int *qpos, const int *kpos,
                                float scale);
zp_status zp_nn_softmax_pos_bwd(float *d, const float *att, size_t rows, size_t Tq, size_t Tk, const int *qpos,
                                const int *kpos, float scale);
/* Ring attention (context parallelism's ring form, exec/zp_exec_cp.c): the keys come one chunk at a time and
 * the softmax over all of them is merged chunk by chunk (online softmax: Milakov & Gimelshein 2018;
 * FlashAttention, Dao et al. 2022, Algorithm 1). Rows, Tq, qpos and kpos as zp_nn_softmax_pos_fwd's, Tk the
 * chunk's keys.
 * - online_fwd: att (rows, Tk) the chunk's raw scores in, exp(scale s - m) out (masked keys 0), m the row's
 *   running max over every chunk so far, updated in mx (rows; start at -INFINITY); se (rows; start at 0) the
 *   running sum of the exponentials, rescaled to m and increased by this chunk's; corr (rows) = exp(m_old - m),
 *   what the output accumulated over the earlier chunks is multiplied by before att . V is added (0 on the
 *   first chunk; 1 while a row has no unmasked key yet).
 * - online_end: after the last chunk, se <- 1 / se (the output's row scale) and mx <- mx + log(se), the rows'
 *   log-sum-exp (what the backward keeps instead of the probabilities).
 * - lse_fwd: att (rows, Tk) raw scores in, the probabilities exp(scale s - lse) out (masked keys 0): the
 *   backward's chunk of the softmax, recomputed from the saved log-sum-exp.
 * - lse_bwd: d (rows, Tk) the probabilities' gradient in, the raw scores' out, in place: scale p (d - D),
 *   D (rows) = sum over every key of p d = the row's dot of the output and its gradient (zp_nn_row_dot).
 * - row_dot: out (rows) = the dot of row r of a (ld lda) and of b (ld ldb), cols wide.
 * - scale_rows: x (rows, cols; ld) row r multiplied by f[r], in place. */
zp_status zp_nn_softmax_online_fwd(float *att, float *mx, float *se, float *corr, size_t rows, size_t Tq, size_t Tk,
                                   const int *qpos, const int *kpos, float scale);
zp_status zp_nn_softmax_online_end(float *mx, float *se, size_t rows);
zp_status zp_nn_softmax_lse_fwd(float *att, const float *lse, size_t rows, size_t Tq, size_t Tk, const int *qpos,
                                const int *kpos, float scale);
zp_status zp_nn_softmax_lse_bwd(float *d, const float *att, const float *D, size_t rows, size_t Tk, float scale);
zp_status zp_nn_row_dot(float *out, const float *a, size_t lda, const float *b, size_t ldb, size_t rows,
                        size_t cols);
zp_status zp_nn_scale_rows(float *x, size_t ld, const float *f, size_t rows, size_t cols);
/* zp_nn_rope with position pos[row % T] (pos (T)). */
zp_status zp_nn_rope_pos(float *x, size_t N, size_t ld, size_t heads, size_t hd, const int *pos, size_t T,
                         float base, int inverse);
/* Learned positions: out (N, C) row i += wpe[pos[i % T]]; its backward dwpe[pos[i % T]] += dout row i (rows
 * in order). */
zp_status zp_nn_pos_add(float *out, const float *wpe, const int *pos, size_t N, size_t T, size_t C);
zp_status zp_nn_pos_add_bwd(float *dwpe, const int *pos, const float *dout, size_t N, size_t T, size_t C);

/* Mixture of experts (rows of C; idx and slot are int arrays): out (n, C) row j = in row idx[j]; out (N, C)
 * row t = sum over j < k of gate[t k + j] (1 when gate is NULL) x rows row slot[t k + j]; its backward writes
 * drows at the N k slots (gate x dout) and, when dgate is not NULL, dgate (N k) = dout row . rows slot. */
zp_status zp_nn_moe_gather(float *out, const float *in, const int *idx, size_t n, size_t C);
zp_status zp_nn_moe_combine(float *out, const float *rows, const int *slot, const float *gate, size_t N, size_t k,
                            size_t C);
zp_status zp_nn_moe_combine_bwd(float *drows, float *dgate, const float *dout, const float *rows, const int *slot,
                                const float *gate, size_t N, size_t k, size_t C);

/* ---- the layer kernels of one backend ----
 * Buffers live in that backend's memory (zp_kernels_backend.alloc); token arrays (tok, tgt) too.
 * Shapes and semantics are those of the zp_nn_* functions above. */
typedef struct zp_nn_ops {
    const char *name; /* the backend's name: "cpu", "cuda" */
    zp_status (*embed_fwd)(float *out, const int *tok, size_t N, size_t C, const float *wte, long v0, size_t vrows,
                           const float *wpe, size_t T);
    zp_status (*embed_bwd)(float *dwte, float *dwpe, const int *tok, const float *dout, size_t N, size_t C, long v0,
                           size_t vrows, size_t T);
    zp_status (*layernorm_fwd)(float *out, float *mean, float *rstd, const float *x, const float *w, const float *b,
                               size_t N, size_t C);
    zp_status (*layernorm_bwd)(float *dx, float *dw, float *db, const float *dout, const float *x, const float *w,
                               const float *mean, const float *rstd, size_t N, size_t C);
    zp_status (*gelu_fwd)(float *out, const float *x, size_t n);
    zp_status (*gelu_bwd)(float *d, const float *x, size_t n);
    zp_status (*softmax_causal_fwd)(float *att, size_t BH, size_t T, float scale);
    zp_status (*softmax_causal_bwd)(float *d, const float *att, size_t BH, size_t T, float scale);
    zp_status (*xent_rowmax)(float *mx, const float *logits, size_t N, size_t V);
    zp_status (*xent_sumexp)(float *se, const float *logits, const float *mx, size_t N, size_t V);
    zp_status (*xent_pick)(float *lt, const float *logits, const int *tgt, long v0, size_t N, size_t V);
    /* *sum (host) = sum_i (log se_i + mx_i - lt_i) in double; cuda copies the N statistics to the host */
    zp_status (*xent_loss_sum)(const float *mx, const float *se, const float *lt, size_t N, double *sum);
    zp_status (*xent_bwd)(float *logits, const float *mx, const float *se, const int *tgt, long v0, size_t N, size_t V,
                          float scale);
    zp_status (*bias_add)(float *x, const float *b, size_t N, size_t C);
    zp_status (*bias_grad)(float *db, const float *d, size_t N, size_t C);
    zp_status (*residual_add)(float *out, const float *a, const float *b, const float *bias, size_t N, size_t C);
    zp_status (*rmsnorm_fwd)(float *out, float *rstd, const float *x, const float *w, size_t N, size_t C);
    zp_status (*rmsnorm_bwd)(float *dx, float *dw, const float *dout, const float *x, const float *w,
                             const float *rstd, size_t N, size_t C);
    zp_status (*glu_fwd)(float *out, const float *u, size_t N, size_t F, int act);
    zp_status (*glu_bwd)(float *du, const float *dout, const float *u, size_t N, size_t F, int act);
    zp_status (*rope)(float *x, size_t N, size_t ld, size_t heads, size_t hd, size_t T, float base, int inverse);
    zp_status (*moe_gather)(float *out, const float *in, const int *idx, size_t n, size_t C);
    zp_status (*moe_combine)(float *out, const float *rows, const int *slot, const float *gate, size_t N, size_t k,
                             size_t C);
    zp_status (*moe_combine_bwd)(float *drows, float *dgate, const float *dout, const float *rows, const int *slot,
                                 const float *gate, size_t N, size_t k, size_t C);
    /* y (n) += x (n): gradient accumulation of later micro-batches into the shard */
    zp_status (*add)(float *y, const float *x, size_t n);
    /* dst (n) = fp32 of the IEEE fp16 values src (n): ZeRO-Offload's parameters back on the device */
    zp_status (*f16_to_f32)(float *dst, const uint16_t *src, size_t n);
    /* context parallelism's kernels (zp_nn_softmax_pos_fwd ...): NULL where the backend has none (cuda) */
    zp_status (*softmax_pos_fwd)(float *att, size_t rows, size_t Tq, size_t Tk, const int *qpos, const int *kpos,
                                 float scale);
    zp_status (*softmax_pos_bwd)(float *d, const float *att, size_t rows, size_t Tq, size_t Tk, const int *qpos,
                                 const int *kpos, float scale);
    zp_status (*rope_pos)(float *x, size_t N, size_t ld, size_t heads, size_t hd, const int *pos, size_t T,
                          float base, int inverse);
    zp_status (*pos_add)(float *out, const float *wpe, const int *pos, size_t N, size_t T, size_t C);
    zp_status (*pos_add_bwd)(float *dwpe, const int *pos, const float *dout, size_t N, size_t T, size_t C);
    /* the ring form's (zp_nn_softmax_online_fwd ...): NULL where the backend has none (cuda) */
    zp_status (*softmax_online_fwd)(float *att, float *mx, float *se, float *corr, size_t rows, size_t Tq, size_t Tk,
                                    const int *qpos, const int *kpos, float scale);
    zp_status (*softmax_online_end)(float *mx, float *se, size_t rows);
    zp_status (*softmax_lse_fwd)(float *att, const float *lse, size_t rows, size_t Tq, size_t Tk, const int *qpos,
                                 const int *kpos, float scale);
    zp_status (*softmax_lse_bwd)(float *d, const float *att, const float *D, size_t rows, size_t Tk, float scale);
    zp_status (*row_dot)(float *out, const float *a, size_t lda, const float *b, size_t ldb, size_t rows, size_t cols);
    zp_status (*scale_rows)(float *x, size_t ld, const float *f, size_t rows, size_t cols);
} zp_nn_ops;

extern const zp_nn_ops zp_nn_ops_cpu;
#if ZP_HAVE_CUDA
extern const zp_nn_ops zp_nn_ops_cuda;
#endif
/* The table of backend `name` ("cpu", "cuda"); ZP_EUNSUPPORTED for cuda in a build without CUDA,
 * ZP_EINVAL for an unknown name. */
zp_status zp_nn_ops_get(const char *name, const zp_nn_ops **out);

#ifdef __cplusplus
}
#endif

#endif
