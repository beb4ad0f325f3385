/* zp_exec_model.c — the decoder, op by op, as the schedule orders it: the embedding, each block's
 * forward (also its recompute) and backward, the head with Megatron's vocabulary-parallel cross-entropy.
 * GPT's block (LayerNorm, MHA, GeLU MLP, biases, learned positions, tied head) and today's (RMSNorm,
 * grouped-query attention, rotary positions, gated MLPs, no biases, an untied head), from the model's
 * shapes (zp_tensors_shape); a mixture-of-experts MLP is zp_exec_moe.c's.
 * Shapes per MP rank: BT = B·T tokens, C hidden, Cq = NHl·hd the Q width and Fl = F/mp the column-split
 * widths, kvn = KVl·hd the K (and V) width, qkvn = Cq + 2 kvn, up = Fl (gated: 2 Fl, [gate | up]),
 * Vl = V/mp vocabulary rows, NHl query heads of hd, each group of NHl/KVl sharing one KV head. Tensors are the schedule's buffers (BUF); parameters
 * come from the group in use (zp_exec_group), gradients go to the flat gradient (stages 0-1) or the
 * bucket backward writes into (stages 2-3). A row-parallel GEMM leaves partial sums in `pending` for the
 * MP all-reduce that follows it in the schedule. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "zp_exec_impl.h"
#include "zp_time.h"

enum {
    E_WTE = ZP_TENSORS_E_WTE, E_WPE = ZP_TENSORS_E_WPE, E_LNFW = ZP_TENSORS_E_LNFW, E_LNFB = ZP_TENSORS_E_LNFB,
    E_LMW = ZP_TENSORS_E_LMW
};
enum {
    B_LN1W = ZP_TENSORS_B_LN1W, B_LN1B = ZP_TENSORS_B_LN1B, B_QKVW = ZP_TENSORS_B_QKVW, B_QKVB = ZP_TENSORS_B_QKVB,
    B_PROJW = ZP_TENSORS_B_PROJW, B_PROJB = ZP_TENSORS_B_PROJB, B_LN2W = ZP_TENSORS_B_LN2W,
    B_LN2B = ZP_TENSORS_B_LN2B, B_FCW = ZP_TENSORS_B_FCW, B_FCB = ZP_TENSORS_B_FCB, B_FCPW = ZP_TENSORS_B_FCPW,
    B_FCPB = ZP_TENSORS_B_FCPB
};

/* Where tensor `kind` of the embedding and head tensors sits in its group: an untied head's (lnf, lm_w) in
 * the head group L + 1, the others in the embedding group. */
static int e_item(const zp_exec_session *S, int kind) { return S->hsz > 0 && kind >= E_LNFW ? (int)S->L + 1 : 0; }
static size_t e_at(const zp_exec_session *S, int kind)
{
    return S->e_off[kind] - (e_item(S, kind) ? S->e_off[E_LNFW] : 0);
}

/* Parameter tensor `kind` of block group `it` (1 + l), or of the embedding and head tensors as group `item`
 * (0 for the embedding, L + 1 for the head); callers check the group is there (NEED). Optional tensors
 * (biases, LayerNorm's bias, wpe) are NULL when the architecture has none. */
static const float *W(const zp_exec_session *S, int it, int kind) { return zp_exec_group(S, it) + S->b_off[kind]; }
static const float *Wopt(const zp_exec_session *S, int it, int kind)
{
    return S->b_off[kind + 1] > S->b_off[kind] ? W(S, it, kind) : NULL;
}
static const float *WE(const zp_exec_session *S, int item, int kind)
{
    if (S->e_off[kind + 1] == S->e_off[kind])
        return NULL;
    return zp_exec_group(S, S->hsz > 0 ? e_item(S, kind) : item) + e_at(S, kind);
}

/* Gradient of tensor `kind` of block group `it`, or of the embedding and head tensors (NULL: none). */
static float *grads(const zp_exec_session *S) { return S->plan.stage < 2 ? BUF(S, GRADS, 0) : BUF(S, GWORK, 0); }
static float *G(const zp_exec_session *S, int it, int kind)
{
    return grads(S) + zp_exec_item_lo(S, it) + S->b_off[kind];
}
static float *Gopt(const zp_exec_session *S, int it, int kind)
{
    return S->b_off[kind + 1] > S->b_off[kind] ? G(S, it, kind) : NULL;
}
static float *GE(const zp_exec_session *S, int kind)
{
    if (S->e_off[kind + 1] == S->e_off[kind])
        return NULL;
    return grads(S) + zp_exec_item_lo(S, e_item(S, kind)) + e_at(S, kind);
}

/* The block's norms: LayerNorm (gain and bias, mean and rstd kept) or RMSNorm (gain, rstd kept). */
static zp_status norm_fwd(const zp_exec_session *S, float *out, float *mean, float *rstd, const float *x,
                          const float *w, const float *b)
{
    if (S->sh.rms)
        return S->nn->rmsnorm_fwd(out, rstd, x, w, S->BT, S->C);
    return S->nn->layernorm_fwd(out, mean, rstd, x, w, b, S->BT, S->C);
}

static zp_status norm_bwd(const zp_exec_session *S, float *dx, float *dw, float *db, const float *dout,
                          const float *x, const float *w, const float *mean, const float *rstd)
{
    if (S->sh.rms)
        return S->nn->rmsnorm_bwd(dx, dw, dout, x, w, rstd, S->BT, S->C);
    return S->nn->layernorm_bwd(dx, dw, db, dout, x, w, mean, rstd, S->BT, S->C);
}

/* A per-layer buffer that the architecture may not have (LayerNorm's mean under RMSNorm): NULL. */
static float *opt_buf(const zp_exec_session *S, zp_buf id, int i) { return (float *)S->slot[id][i]; }

/* The group in use must be there: a stage-3 group the schedule has not gathered is a schedule bug. */
#define NEED(S, item)                                                                                   \
    do {                                                                                                \
        if (!zp_exec_group((S), (item)))                                                                \
            return ZP_FAIL(ZP_ERUNTIME, "schedule: parameter group %d is used before it is gathered", (item)); \
    } while (0)

static zp_status partial(zp_exec_session *S, float *x)
{
    S->pending = x;
    S->pending_n = S->BT * S->C;
    return ZP_OK;
}

/* ---- a block ---- */

/* Block l's stored activations and where it reads its input and writes its output in this phase. */
typedef struct {
    int l, it, set;                     /* block, its group, its activation set */
    float *xin, *xout;
} block_io;

static block_io io_of(const zp_exec_session *S, const zp_op *o)
{
    /* with pipeline stages, the copy of the micro-batch's slot among those in flight */
    const int k = zp_exec_slot(S, o->micro), L = (int)S->L;
    block_io b = {.l = o->layer, .it = o->layer + 1, .set = S->plan.checkpoint ? 0 : o->layer + L * k};
    if (!S->plan.checkpoint) {
        b.xin = BUF(S, RES, b.l + (L + 1) * k);
        b.xout = BUF(S, RES, b.l + 1 + (L + 1) * k);
    } else if (o->phase == ZP_PHASE_FORWARD) {
        b.xin = b.xout = BUF(S, RESID, 0);
    } else {
        b.xin = (S->plan.pa && S->mp > 1) ? BUF(S, XIN_WORK, 0) : zp_exec_ckpt(S, b.l, o->micro);
        b.xout = BUF(S, PROJ, 0); /* the recomputed block output is not needed: written over the scratch */
    }
    return b;
}

/* ---- the block's four Megatron linear layers, y (BT, n) = x (BT, k) . W^T + b ----
 * QKV and MLP-up are column-split (y holds this rank's columns; their bias is split with them); the
 * projection and MLP-down are row-split (y is a partial sum for the MP all-reduce that follows; their bias
 * is added after it, by the residual). Widths per MP rank; backward reads dY and writes dX. */
typedef enum { D_C, D_CQ, D_QKV, D_UP, D_FL } width;
typedef struct {
    zp_buf x, y, dy, dx;  /* input, output, their gradients */
    width k, n;           /* widths of x and y */
    int w, bias;          /* the weight and bias tensors (bias -1: after the all-reduce) */
} linear_layer;
enum { L_QKV, L_PROJ, L_UP, L_DOWN };
static const linear_layer LINEAR[] = {
    [L_QKV] = {ZP_BUF_LN1, ZP_BUF_QKV, ZP_BUF_DQKV, ZP_BUF_DLN, D_C, D_QKV, B_QKVW, B_QKVB},
    [L_PROJ] = {ZP_BUF_ATTY, ZP_BUF_PROJ, ZP_BUF_DRES, ZP_BUF_DATTY, D_CQ, D_C, B_PROJW, -1},
    [L_UP] = {ZP_BUF_LN2, ZP_BUF_FCH, ZP_BUF_DFCH, ZP_BUF_DLN, D_C, D_UP, B_FCW, B_FCB},
    [L_DOWN] = {ZP_BUF_FCHG, ZP_BUF_PROJ, ZP_BUF_DRES, ZP_BUF_DFCH, D_FL, D_C, B_FCPW, -1},
};

static size_t dim(const zp_exec_session *S, width d)
{
    const size_t w[] = {[D_C] = S->C, [D_CQ] = S->Cq, [D_QKV] = S->qkvn, [D_UP] = S->up, [D_FL] = S->Fl};
    return w[d];
}

/* A buffer of the block: its activation set's (stored per block), or the one working copy. */
static float *buf(const zp_exec_session *S, zp_buf id, const block_io *b)
{
    return (float *)S->slot[id][zp_buf_per_of(id) == ZP_PER_LAYER ? b->set : 0];
}

/* One pass of linear layer `which` for block o->layer:
 *  - FWD: y = x . W^T, then the bias (column-split) or the partial sum left for the all-reduce (row-split);
 *  - DGRAD: dX (BT, k) = dY (BT, n) . W (n, k), a partial sum when W is column-split (its input is whole on
 *    every rank);
 *  - WGRAD: dW (n, k) += dY^T . X, and the bias gradient (the column sums of dY) into `bias` unless -1 (a
 *    row-split layer's bias is added after the all-reduce: its gradient comes whole, elsewhere). */
enum { FWD, DGRAD, WGRAD };

static zp_status linear(zp_exec_session *S, const zp_op *o, int which, int pass, int bias)
{
    const linear_layer *L = &LINEAR[which];
    block_io b = io_of(S, o);
    if (pass != WGRAD)
        NEED(S, b.it);
    const size_t k = dim(S, L->k), n = dim(S, L->n), BT = S->BT;
    /* a gated MLP's down-projection reads the GLU's output and gives its gradient its own buffer */
    const zp_buf dxid = which == L_DOWN && S->sh.gated ? ZP_BUF_DGLU : L->dx;
    float *x = buf(S, L->x, &b), *y = buf(S, L->y, &b), *dy = buf(S, L->dy, &b), *dx = buf(S, dxid, &b);
    switch (pass) {
    case FWD:
        ZP_TRY(zp_exec_gemm(S, 0, 1, BT, n, k, 0.0f, x, k, W(S, b.it, L->w), k, y, n));
        if (L->bias < 0)
            return partial(S, y);
        return Wopt(S, b.it, L->bias) ? S->nn->bias_add(y, W(S, b.it, L->bias), BT, n) : ZP_OK;
    case DGRAD:
        ZP_TRY(zp_exec_gemm(S, 0, 0, BT, k, n, 0.0f, dy, n, W(S, b.it, L->w), k, dx, k));
        return L->bias >= 0 ? partial(S, dx) : ZP_OK;
    default:
        ZP_TRY(zp_exec_gemm(S, 1, 0, n, k, BT, 1.0f, dy, n, x, k, G(S, b.it, L->w), k));
        return bias >= 0 && Gopt(S, b.it, bias) ? S->nn->bias_grad(G(S, b.it, bias), dy, BT, n) : ZP_OK;
    }
}

/* ln1 (BT, C) = LayerNorm(x); under checkpointing the forward first keeps x as the block's checkpoint
 * (Pa: this MP rank's partition only). */
zp_status x_layernorm1(zp_exec_session *S, const zp_op *o)
{
    block_io b = io_of(S, o);
    NEED(S, b.it);
    const size_t BT = S->BT, C = S->C;
    if (S->plan.checkpoint && o->phase == ZP_PHASE_FORWARD) {
        size_t off = 0, sz = BT * C;
        if (S->plan.pa && S->mp > 1)
            zp_shard_range(0, BT * C, S->mp, S->mr, &off, &sz);
        ZP_TRY(S->be->copy_on_device(zp_exec_ckpt(S, b.l, o->micro), b.xin + off, sz * sizeof(float)));
    }
    return norm_fwd(S, BUF(S, LN1, b.set), opt_buf(S, ZP_BUF_LN1_MEAN, b.set), BUF(S, LN1_RSTD, b.set), b.xin,
                    W(S, b.it, B_LN1W), Wopt(S, b.it, B_LN1B));
}

zp_status x_rmsnorm1(zp_exec_session *S, const zp_op *o) { return x_layernorm1(S, o); }

/* qkv (BT, qkvn) = ln1 (BT, C) . qkv_w^T + qkv_b: [Q heads | K heads | V heads] per row */
zp_status x_qkv(zp_exec_session *S, const zp_op *o) { return linear(S, o, L_QKV, FWD, -1); }

/* Rotary positions: Q's and K's heads (the first NHl + KVl heads of each QKV row) turned by position, in
 * place; backward turns their gradients back (a rotation's transpose is its inverse). */
static zp_status rope(zp_exec_session *S, float *x, int inverse)
{
    if (S->cp > 1) /* a CP slice: its tokens' global positions */
        return S->nn->rope_pos(x, S->BT, S->qkvn, S->NHl + S->KVl, S->hd, S->qpos, S->Tl, 10000.0f, inverse);
    return S->nn->rope(x, S->BT, S->qkvn, S->NHl + S->KVl, S->hd, S->T, 10000.0f, inverse);
}

zp_status x_rope(zp_exec_session *S, const zp_op *o) { return rope(S, BUF(S, QKV, io_of(S, o).set), 0); }
zp_status x_rope_bwd(zp_exec_session *S, const zp_op *o)
{
    (void)o;
    return rope(S, BUF(S, DQKV, 0), 1);
}

/* Local head h's K and V within a QKV row: its group's KV head (grouped-query attention). */
static size_t kv_of(const zp_exec_session *S, size_t h) { return S->Cq + (h / (S->NHl / S->KVl)) * S->hd; }

/* The attention GEMMs of every sequence b and local head h as batched launches (a framework's one batched
 * kernel, not B x heads calls): pointer arrays of (b, h) pairs, B x NHl at most. */
typedef struct {
    int n;
    const float **a, **b;
    float **c;
} att_batch;

static zp_status att_batch_new(const zp_exec_session *S, att_batch *x)
{
    const size_t cap = S->B * S->NHl;
    x->n = 0;
    x->a = malloc(cap * sizeof *x->a), x->b = malloc(cap * sizeof *x->b), x->c = malloc(cap * sizeof *x->c);
    if (x->a && x->b && x->c)
        return ZP_OK;
    free(x->a), free(x->b), free(x->c);
    return ZP_FAIL(ZP_ENOMEM, "out of memory (attention pointers for %zu heads)", cap);
}

static void att_batch_add(att_batch *x, const float *a, const float *b, float *c)
{
    x->a[x->n] = a, x->b[x->n] = b, x->c[x->n] = c;
    x->n++;
}

static void att_batch_free(att_batch *x) { free(x->a), free(x->b), free(x->c); }

/* Per sequence and local head: scores att (T, T) = Q (T, hd) . K^T, or context atty (T, hd) = att . V; one
 * batched launch over every (sequence, head): their outputs are disjoint. */
static zp_status attention_fwd(zp_exec_session *S, const zp_op *o, int scores)
{
    const int set = io_of(S, o).set;
    if (S->cp > 1) /* against every CP slice's keys (zp_exec_cp.c) */
        return zp_exec_cp_attention(S, set, scores ? ZP_EXEC_ATT_SCORES : ZP_EXEC_ATT_CONTEXT);
    const size_t T = S->T, hd = S->hd, ld = S->qkvn;
    const float *qkv = BUF(S, QKV, set);
    float *att = BUF(S, ATT, set), *atty = BUF(S, ATTY, set);
    att_batch x;
    ZP_TRY(att_batch_new(S, &x));
    for (size_t b = 0; b < S->B; b++)
        for (size_t h = 0; h < S->NHl; h++) {
            const float *q = qkv + b * T * ld + h * hd, *k = qkv + b * T * ld + kv_of(S, h), *v = k + S->kvn;
            float *a = att + (b * S->NHl + h) * T * T;
            if (scores)
                att_batch_add(&x, q, k, a);
            else
                att_batch_add(&x, a, v, atty + b * T * S->Cq + h * hd);
        }
    zp_status st = scores ? zp_exec_gemm_batched(S, 0, 1, T, T, hd, 0.0f, ld, ld, T, x.n, x.a, x.b, x.c)
                          : zp_exec_gemm_batched(S, 0, 0, T, hd, T, 0.0f, T, ld, S->Cq, x.n, x.a, x.b, x.c);
    att_batch_free(&x);
    return st;
}

zp_status x_attn_scores(zp_exec_session *S, const zp_op *o) { return attention_fwd(S, o, 1); }

/* causal softmax of the scores scaled by 1/sqrt(hd), in place (no dropout: p = 0) */
zp_status x_softmax(zp_exec_session *S, const zp_op *o)
{
    if (S->cp > 1)
        return zp_exec_cp_softmax(S, io_of(S, o).set, 0);
    return S->nn->softmax_causal_fwd(BUF(S, ATT, io_of(S, o).set), S->B * S->NHl, S->T,
                                     (float)(1.0 / sqrt((double)S->hd)));
}

zp_status x_attn_context(zp_exec_session *S, const zp_op *o) { return attention_fwd(S, o, 0); }

/* proj (BT, C) = atty (BT, Cq) . proj_w^T: partial over the MP ranks */
zp_status x_attn_proj(zp_exec_session *S, const zp_op *o) { return linear(S, o, L_PROJ, FWD, -1); }

/* x1 = x + proj + proj_b; ln2 = LayerNorm(x1) */
zp_status x_resid_ln2(zp_exec_session *S, const zp_op *o)
{
    block_io b = io_of(S, o);
    NEED(S, b.it);
    const size_t BT = S->BT, C = S->C;
    float *x1 = BUF(S, X1, b.set);
    ZP_TRY(S->nn->residual_add(x1, b.xin, BUF(S, PROJ, 0), Wopt(S, b.it, B_PROJB), BT, C));
    return norm_fwd(S, BUF(S, LN2, b.set), opt_buf(S, ZP_BUF_LN2_MEAN, b.set), BUF(S, LN2_RSTD, b.set), x1,
                    W(S, b.it, B_LN2W), Wopt(S, b.it, B_LN2B));
}

zp_status x_resid_rms2(zp_exec_session *S, const zp_op *o) { return x_resid_ln2(S, o); }

/* fch (BT, up) = ln2 (BT, C) . fc_w^T + fc_b */
zp_status x_mlp_up(zp_exec_session *S, const zp_op *o) { return linear(S, o, L_UP, FWD, -1); }

zp_status x_gelu(zp_exec_session *S, const zp_op *o)
{
    const int set = io_of(S, o).set;
    return S->nn->gelu_fwd(BUF(S, FCHG, set), BUF(S, FCH, set), S->BT * S->Fl);
}

/* The gated MLP's activation: fchg (BT, Fl) = act(gate) * up of fch (BT, 2 Fl) = [gate | up]; SwiGLU, or
 * GeGLU for a GeLU activation. */
static int glu_act(const zp_exec_session *S) { return S->sh.act == ZP_ACT_GELU ? ZP_GLU_GELU : ZP_GLU_SILU; }

zp_status x_glu(zp_exec_session *S, const zp_op *o)
{
    const int set = io_of(S, o).set;
    return S->nn->glu_fwd(BUF(S, FCHG, set), BUF(S, FCH, set), S->BT, S->Fl, glu_act(S));
}

/* dfch (BT, 2 Fl) from dglu (BT, Fl), the gradient of the down-projection's input */
zp_status x_glu_bwd(zp_exec_session *S, const zp_op *o)
{
    return S->nn->glu_bwd(BUF(S, DFCH, 0), BUF(S, DGLU, 0), BUF(S, FCH, io_of(S, o).set), S->BT, S->Fl, glu_act(S));
}

/* proj (BT, C) = fchg (BT, Fl) . fcproj_w^T: partial over the MP ranks */
zp_status x_mlp_down(zp_exec_session *S, const zp_op *o) { return linear(S, o, L_DOWN, FWD, -1); }

/* the block's output = x1 + proj + fcproj_b */
zp_status x_resid(zp_exec_session *S, const zp_op *o)
{
    block_io b = io_of(S, o);
    NEED(S, b.it);
    return S->nn->residual_add(b.xout, BUF(S, X1, b.set), BUF(S, PROJ, 0), Wopt(S, b.it, B_FCPB), S->BT, S->C);
}

/* ---- a block's backward: dres holds d(block output) on entry, d(block input) after layernorm1_bwd ---- */

zp_status x_resid_bwd(zp_exec_session *S, const zp_op *o)
{
    float *g = Gopt(S, o->layer + 1, B_FCPB);
    return g ? S->nn->bias_grad(g, BUF(S, DRES, 0), S->BT, S->C) : ZP_OK;
}

/* dfch (BT, Fl) = dres (BT, C) . fcproj_w (C, Fl) */
zp_status x_mlp_down_dgrad(zp_exec_session *S, const zp_op *o) { return linear(S, o, L_DOWN, DGRAD, -1); }

/* dfcproj_w (C, Fl) += dres^T . fchg (its bias: residual_dropout_bwd) */
zp_status x_mlp_down_wgrad(zp_exec_session *S, const zp_op *o) { return linear(S, o, L_DOWN, WGRAD, -1); }

zp_status x_gelu_bwd(zp_exec_session *S, const zp_op *o)
{
    return S->nn->gelu_bwd(BUF(S, DFCH, 0), BUF(S, FCH, io_of(S, o).set), S->BT * S->Fl);
}

/* dln (BT, C) = dfch (BT, Fl) . fc_w (Fl, C): partial over the MP ranks */
zp_status x_mlp_up_dgrad(zp_exec_session *S, const zp_op *o) { return linear(S, o, L_UP, DGRAD, -1); }

/* dfc_w (Fl, C) += dfch^T . ln2; dfc_b = the column sums of dfch */
zp_status x_mlp_up_wgrad(zp_exec_session *S, const zp_op *o) { return linear(S, o, L_UP, WGRAD, B_FCB); }

zp_status x_layernorm2_bwd(zp_exec_session *S, const zp_op *o)
{
    block_io b = io_of(S, o);
    NEED(S, b.it);
    return norm_bwd(S, BUF(S, DRES, 0), G(S, b.it, B_LN2W), Gopt(S, b.it, B_LN2B), BUF(S, DLN, 0), BUF(S, X1, b.set),
                    W(S, b.it, B_LN2W), opt_buf(S, ZP_BUF_LN2_MEAN, b.set), BUF(S, LN2_RSTD, b.set));
}

zp_status x_rmsnorm2_bwd(zp_exec_session *S, const zp_op *o) { return x_layernorm2_bwd(S, o); }

/* datty (BT, Cq) = dres (BT, C) . proj_w (C, Cq) */
zp_status x_attn_proj_dgrad(zp_exec_session *S, const zp_op *o) { return linear(S, o, L_PROJ, DGRAD, -1); }

/* dproj_w (C, Cq) += dres^T . atty; dproj_b = the column sums of dres */
zp_status x_attn_proj_wgrad(zp_exec_session *S, const zp_op *o) { return linear(S, o, L_PROJ, WGRAD, B_PROJB); }

/* The attention GEMMs' backward per sequence and local head. */
enum { CTX_DGRAD, CTX_WGRAD, SCORES_DGRAD, SCORES_WGRAD };

/* The (sequence, head) pairs of one launch: every pair for the products whose outputs are per head (datt,
 * dQ); for dK and dV, which the Q heads of a KV group add into (grp = NHl / KVl > 1: grouped-query
 * attention), the j-th head of every group at once, the groups' j = 0, 1, ... launches in order, so that
 * each output is written by one product of a launch and the sums run in head order as before. */
static zp_status attention_bwd_launch(zp_exec_session *S, int set, int which, size_t j, att_batch *x)
{
    const size_t T = S->T, hd = S->hd, Cq = S->Cq, ld = S->qkvn, grp = S->NHl / S->KVl;
    const int per_group = which == CTX_WGRAD || which == SCORES_WGRAD;
    x->n = 0;
    for (size_t b = 0; b < S->B; b++)
        for (size_t h = 0; h < S->NHl; h++) {
            if (per_group && h % grp != j)
                continue;
            const size_t qo = b * T * ld + h * hd, ko = b * T * ld + kv_of(S, h);
            const float *q = BUF(S, QKV, set) + qo, *k = BUF(S, QKV, set) + ko, *v = k + S->kvn;
            float *dq = BUF(S, DQKV, 0) + qo, *dk = BUF(S, DQKV, 0) + ko, *dv = dk + S->kvn;
            const float *att = BUF(S, ATT, set) + (b * S->NHl + h) * T * T;
            float *datt = BUF(S, DATT, 0) + (b * S->NHl + h) * T * T;
            const float *datty = BUF(S, DATTY, 0) + b * T * Cq + h * hd;
            switch (which) {
            case CTX_DGRAD: att_batch_add(x, datty, v, datt); break; /* datt = datty . V^T */
            case CTX_WGRAD: att_batch_add(x, att, datty, dv); break;  /* dV (+)= att^T . datty */
            case SCORES_DGRAD: att_batch_add(x, datt, k, dq); break;  /* dQ = dscores . K */
            default: att_batch_add(x, datt, q, dk); break;            /* dK (+)= dscores^T . Q */
            }
        }
    const float acc = per_group && j > 0 ? 1.0f : 0.0f; /* the group's first head sets, the others add */
    switch (which) {
    case CTX_DGRAD: return zp_exec_gemm_batched(S, 0, 1, T, T, hd, 0.0f, Cq, ld, T, x->n, x->a, x->b, x->c);
    case CTX_WGRAD: return zp_exec_gemm_batched(S, 1, 0, T, hd, T, acc, T, Cq, ld, x->n, x->a, x->b, x->c);
    case SCORES_DGRAD: return zp_exec_gemm_batched(S, 0, 0, T, hd, T, 0.0f, T, ld, ld, x->n, x->a, x->b, x->c);
    default: return zp_exec_gemm_batched(S, 1, 0, T, hd, T, acc, T, ld, ld, x->n, x->a, x->b, x->c);
    }
}

static zp_status attention_bwd(zp_exec_session *S, const zp_op *o, int which)
{
    const int set = io_of(S, o).set;
    static const int cp_step[] = {[CTX_DGRAD] = ZP_EXEC_ATT_CTX_DGRAD, [CTX_WGRAD] = ZP_EXEC_ATT_CTX_WGRAD,
                                  [SCORES_DGRAD] = ZP_EXEC_ATT_SCORES_DGRAD,
                                  [SCORES_WGRAD] = ZP_EXEC_ATT_SCORES_WGRAD};
    if (S->cp > 1) /* K and V gradients into the gathered copy, reduce-scattered after (zp_exec_cp.c) */
        return zp_exec_cp_attention(S, set, cp_step[which]);
    const size_t launches = which == CTX_WGRAD || which == SCORES_WGRAD ? S->NHl / S->KVl : 1;
    att_batch x;
    ZP_TRY(att_batch_new(S, &x));
    zp_status st = ZP_OK;
    for (size_t j = 0; j < launches && st == ZP_OK; j++)
        st = attention_bwd_launch(S, set, which, j, &x);
    att_batch_free(&x);
    return st;
}

zp_status x_attn_context_dgrad(zp_exec_session *S, const zp_op *o) { return attention_bwd(S, o, CTX_DGRAD); }
zp_status x_attn_context_wgrad(zp_exec_session *S, const zp_op *o) { return attention_bwd(S, o, CTX_WGRAD); }

zp_status x_softmax_bwd(zp_exec_session *S, const zp_op *o)
{
    if (S->cp > 1)
        return zp_exec_cp_softmax(S, io_of(S, o).set, 1);
    return S->nn->softmax_causal_bwd(BUF(S, DATT, 0), BUF(S, ATT, io_of(S, o).set), S->B * S->NHl, S->T,
                                     (float)(1.0 / sqrt((double)S->hd)));
}

zp_status x_attn_scores_dgrad(zp_exec_session *S, const zp_op *o) { return attention_bwd(S, o, SCORES_DGRAD); }
zp_status x_attn_scores_wgrad(zp_exec_session *S, const zp_op *o) { return attention_bwd(S, o, SCORES_WGRAD); }

/* dln (BT, C) = dqkv (BT, qkvn) . qkv_w (qkvn, C): partial over the MP ranks */
zp_status x_qkv_dgrad(zp_exec_session *S, const zp_op *o) { return linear(S, o, L_QKV, DGRAD, -1); }

/* dqkv_w (qkvn, C) += dqkv^T . ln1; dqkv_b = the column sums of dqkv */
zp_status x_qkv_wgrad(zp_exec_session *S, const zp_op *o) { return linear(S, o, L_QKV, WGRAD, B_QKVB); }

zp_status x_layernorm1_bwd(zp_exec_session *S, const zp_op *o)
{
    block_io b = io_of(S, o);
    NEED(S, b.it);
    return norm_bwd(S, BUF(S, DRES, 0), G(S, b.it, B_LN1W), Gopt(S, b.it, B_LN1B), BUF(S, DLN, 0), b.xin,
                    W(S, b.it, B_LN1W), opt_buf(S, ZP_BUF_LN1_MEAN, b.set), BUF(S, LN1_RSTD, b.set));
}

zp_status x_rmsnorm1_bwd(zp_exec_session *S, const zp_op *o) { return x_layernorm1_bwd(S, o); }

/* ---- the embedding and the head ---- */

/* Tokens (BT) and targets (BT) of a micro-batch into the backend's tok_d (inputs | targets), gathered
 * on the host and copied once per micro-batch. */
static zp_status micro_tokens(zp_exec_session *S, int micro)
{
    if (S->tok_micro == micro)
        return ZP_OK;
    int *in = S->tok_h, *tgt = S->tok_h + S->BT;
    for (size_t b = 0; b < S->B; b++) {
        const int *t = S->tok + ((size_t)micro * S->B + b) * (S->T + 1);
        if (S->cp > 1) /* this CP rank's slice: its tokens at their global positions */
            for (size_t i = 0; i < S->Tl; i++) {
                in[b * S->Tl + i] = t[S->qpos[i]];
                tgt[b * S->Tl + i] = t[S->qpos[i] + 1];
            }
        else {
            memcpy(in + b * S->T, t, S->T * sizeof(int));
            memcpy(tgt + b * S->T, t + 1, S->T * sizeof(int));
        }
    }
    ZP_TRY(S->be->copy_to_device(S->tok_d, S->tok_h, 2 * S->BT * sizeof(int)));
    S->tok_micro = micro;
    return ZP_OK;
}

/* The first block's input and the last block's output of micro-batch `micro` (its slot's copy). */
static float *x0(const zp_exec_session *S, int micro)
{
    return S->plan.checkpoint ? BUF(S, RESID, 0) : BUF(S, RES, (int)(S->L + 1) * zp_exec_slot(S, micro));
}
static float *xL(const zp_exec_session *S, int micro)
{
    return S->plan.checkpoint ? BUF(S, RESID, 0) : BUF(S, RES, (int)S->L + (int)(S->L + 1) * zp_exec_slot(S, micro));
}

/* vocabulary-parallel: rows of other MP ranks give 0 (partial sums); wpe (learned positions) added once
 * (MP rank 0) */
zp_status x_embedding(zp_exec_session *S, const zp_op *o)
{
    NEED(S, 0);
    ZP_TRY(micro_tokens(S, o->micro));
    const float *wpe = S->mr == 0 ? WE(S, 0, E_WPE) : NULL;
    ZP_TRY(S->nn->embed_fwd(x0(S, o->micro), S->tok_d, S->BT, S->C, WE(S, 0, E_WTE), S->v0, S->Vl,
                            S->cp > 1 ? NULL : wpe, S->T));
    if (S->cp > 1 && wpe) /* a CP slice: its tokens' global positions */
        ZP_TRY(S->nn->pos_add(x0(S, o->micro), wpe, S->qpos, S->BT, S->Tl, S->C));
    return partial(S, x0(S, o->micro));
}

zp_status x_final_ln(zp_exec_session *S, const zp_op *o)
{
    const int it = (int)S->L + 1;
    NEED(S, it);
    return norm_fwd(S, BUF(S, LNF, 0), opt_buf(S, ZP_BUF_LNF_MEAN, 0), BUF(S, LNF_RSTD, 0), xL(S, o->micro),
                    WE(S, it, E_LNFW), WE(S, it, E_LNFB));
}

zp_status x_final_rms(zp_exec_session *S, const zp_op *o) { return x_final_ln(S, o); }

/* The LM head's weight (Vl, C): wte when tied, lm_w when not. */
static const float *head_w(const zp_exec_session *S)
{
    return WE(S, (int)S->L + 1, S->hsz > 0 ? E_LMW : E_WTE);
}

/* logits (BT, Vl) = lnf (BT, C) . head_w^T */
zp_status x_lm_head(zp_exec_session *S, const zp_op *o)
{
    (void)o;
    const int it = (int)S->L + 1;
    NEED(S, it);
    return zp_exec_gemm(S, 0, 1, S->BT, S->Vl, S->C, 0.0f, BUF(S, LNF, 0), S->C, head_w(S), S->C,
                        BUF(S, LOGITS, 0), S->Vl);
}

/* Megatron's vocabulary-parallel cross-entropy: three reductions of BT values over the MP group. */
zp_status x_xent(zp_exec_session *S, const zp_op *o)
{
    const size_t BT = S->BT, Vl = S->Vl;
    ZP_TRY(micro_tokens(S, o->micro));
    const int *tgt = S->tok_d + BT;
    float *logits = BUF(S, LOGITS, 0), *mx = BUF(S, XMX, 0), *se = BUF(S, XSE, 0), *lt = BUF(S, XLT, 0);
    ZP_TRY(S->nn->xent_rowmax(mx, logits, BT, Vl));
    double t0 = zp_time_now_s();
    ZP_TRY(zp_exec_mp_allreduce(S, mx, BT, ZP_OP_MAX));
    S->t.part[ZP_PART_MP_COMM] += zp_time_now_s() - t0;
    ZP_TRY(S->nn->xent_sumexp(se, logits, mx, BT, Vl));
    ZP_TRY(S->nn->xent_pick(lt, logits, tgt, S->v0, BT, Vl));
    t0 = zp_time_now_s();
    ZP_TRY(zp_exec_mp_allreduce(S, se, BT, ZP_OP_SUM));
    ZP_TRY(zp_exec_mp_allreduce(S, lt, BT, ZP_OP_SUM));
    S->t.part[ZP_PART_MP_COMM] += zp_time_now_s() - t0;
    double sum = 0;
    ZP_TRY(S->nn->xent_loss_sum(mx, se, lt, BT, &sum));
    S->loss_sum += sum;
    return ZP_OK;
}

/* A micro-batch's backward starts here: the gradient bucket starts empty; dlogits in place, scaled for the
 * mean over the global batch. */
zp_status x_xent_bwd(zp_exec_session *S, const zp_op *o)
{
    ZP_TRY(micro_tokens(S, o->micro));
    S->bucket_k = 0;
    if (S->plan.stage >= 2)
        ZP_TRY(S->be->zero(BUF(S, GWORK, 0), S->N * sizeof(float)));
    S->bucket_xk = 0;
    if (S->plan.stage >= 2 && S->NX > 0)
        ZP_TRY(S->be->zero(BUF(S, XGWORK, 0), S->NX * sizeof(float)));
    double tokens = (double)S->BT * (double)S->GA * (double)S->dp;
    return S->nn->xent_bwd(BUF(S, LOGITS, 0), BUF(S, XMX, 0), BUF(S, XSE, 0), S->tok_d + S->BT, S->v0, S->BT,
                           S->Vl, (float)(1.0 / tokens));
}

/* dln (BT, C) = dlogits (BT, Vl) . head_w (Vl, C): partial over the MP ranks */
zp_status x_lm_head_dgrad(zp_exec_session *S, const zp_op *o)
{
    (void)o;
    const int it = (int)S->L + 1;
    NEED(S, it);
    ZP_TRY(zp_exec_gemm(S, 0, 0, S->BT, S->C, S->Vl, 0.0f, BUF(S, LOGITS, 0), S->Vl, head_w(S), S->C,
                        BUF(S, DLN, 0), S->C));
    return partial(S, BUF(S, DLN, 0));
}

/* dhead_w (Vl, C) += dlogits^T . lnf */
zp_status x_lm_head_wgrad(zp_exec_session *S, const zp_op *o)
{
    (void)o;
    return zp_exec_gemm(S, 1, 0, S->Vl, S->C, S->BT, 1.0f, BUF(S, LOGITS, 0), S->Vl, BUF(S, LNF, 0), S->C,
                        GE(S, S->hsz > 0 ? E_LMW : E_WTE), S->C);
}

zp_status x_final_ln_bwd(zp_exec_session *S, const zp_op *o)
{
    const int it = (int)S->L + 1;
    NEED(S, it);
    ZP_TRY(S->be->zero(BUF(S, DRES, 0), S->BT * S->C * sizeof(float)));
    return norm_bwd(S, BUF(S, DRES, 0), GE(S, E_LNFW), GE(S, E_LNFB), BUF(S, DLN, 0), xL(S, o->micro),
                    WE(S, it, E_LNFW), opt_buf(S, ZP_BUF_LNF_MEAN, 0), BUF(S, LNF_RSTD, 0));
}

zp_status x_final_rms_bwd(zp_exec_session *S, const zp_op *o) { return x_final_ln_bwd(S, o); }

/* wte's rows of this rank and wpe when learned (replicated: every MP rank gets the same gradient) */
zp_status x_embedding_bwd(zp_exec_session *S, const zp_op *o)
{
    ZP_TRY(micro_tokens(S, o->micro));
    ZP_TRY(S->nn->embed_bwd(GE(S, E_WTE), S->cp > 1 ? NULL : GE(S, E_WPE), S->tok_d, BUF(S, DRES, 0), S->BT, S->C,
                            S->v0, S->Vl, S->T));
    if (S->cp > 1 && GE(S, E_WPE))
        ZP_TRY(S->nn->pos_add_bwd(GE(S, E_WPE), S->qpos, BUF(S, DRES, 0), S->BT, S->Tl, S->C));
    return ZP_OK;
}
