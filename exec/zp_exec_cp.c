/* zp_exec_cp.c — context parallelism (plan.cp > 1) in the all-gather form Llama 3 used (Dubey et al. 2024,
 * §3.3.2; Megatron-core's cp_comm_type all_gather): each of the cp DP ranks of a CP group holds a slice of
 * every sequence, Megatron-core's causal load balancing (the sequence cut into 2 cp chunks, rank r holding
 * chunks r and 2 cp - 1 - r, so every rank gets as many unmasked scores). Everything per token is the
 * slice's own (norms, MLP, embedding, loss); before a block's attention (forward, recompute and backward)
 * the ranks all-gather their K and V rows (cp_kv_ring ops, the schedule's, sim/zp_block.c
 * cp_kv_before), each rank's queries attend over every key whose global position is not after theirs, and
 * after the backward the gradients of the gathered K and V are reduce-scattered back to their owners
 * (cp_dkv_ring). The ring form (--cp-comm ring: K and V passed round with P2P, merged by online softmax) is
 * zp_exec_cp_ring.c's; the entry points here hand it the block's attention.
 *
 * Gathered layout (CP_KV_ALL, CP_DKV_ALL): cp blocks, block r = rank r's BT rows (sequence b's Tl local
 * tokens at rows b Tl ..), each row [K | V] of this MP rank's KV heads (2 kvn); a head's scores against
 * block r fill columns r Tl .. r Tl + Tl - 1 of its (Tl, cp Tl) score rows, and kpos gives those columns'
 * global positions, which the causal mask compares with the queries' (qpos). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "zp_exec_impl.h"

zp_status zp_exec_cp_open(zp_exec_session *S)
{
    if (S->cp <= 1)
        return ZP_OK;
    S->qpos = malloc(S->Tl * sizeof *S->qpos);
    S->kpos = malloc((size_t)S->cp * S->Tl * sizeof *S->kpos);
    if (!S->qpos || !S->kpos)
        return ZP_FAIL(ZP_ENOMEM, "out of memory");
    for (size_t i = 0; i < S->Tl; i++)
        S->qpos[i] = zp_exec_cp_pos(S->T, S->cp, S->cr, i);
    for (int r = 0; r < S->cp; r++)
        for (size_t i = 0; i < S->Tl; i++)
            S->kpos[(size_t)r * S->Tl + i] = zp_exec_cp_pos(S->T, S->cp, r, i);
    return ZP_OK;
}

void zp_exec_cp_close(zp_exec_session *S)
{
    free(S->qpos);
    free(S->kpos);
    S->qpos = S->kpos = NULL;
    zp_comm_free(S->cpc);
    S->cpc = NULL;
}

/* The activation set a block's op reads (zp_exec_model.c's io_of: one set under checkpointing). */
static int set_of(const zp_exec_session *S, const zp_op *o)
{
    return S->plan.checkpoint ? 0 : o->layer + (int)S->L * zp_exec_slot(S, o->micro);
}

/* cp_kv_ring (all-gather form): this rank's K and V rows of the block's activation set, gathered. */
zp_status x_cp_kv_gather(zp_exec_session *S, const zp_op *o)
{
    if (zp_exec_cp_ring(S)) /* the ring passes K and V inside the attention (zp_exec_cp_ring.c) */
        return ZP_OK;
    ZP_TRY(zp_exec_cp_kv_rows(S, BUF(S, QKV, set_of(S, o)), BUF(S, CP_KV, 0), 1));
    return S->be->allgather(S->cpc, BUF(S, CP_KV, 0), BUF(S, CP_KV_ALL, 0), S->BT * 2 * S->kvn, ZP_DT_F32);
}

/* cp_dkv_ring (all-gather form): the gathered K and V gradients summed over the CP group, this rank's rows
 * into the K and V columns of dqkv (the Q columns are the attention backward's). */
zp_status x_cp_dkv_scatter(zp_exec_session *S, const zp_op *o)
{
    (void)o;
    if (zp_exec_cp_ring(S)) /* the ring hands each rank its gradients inside the attention's backward */
        return ZP_OK;
    ZP_TRY(S->be->reduce_scatter(S->cpc, BUF(S, CP_DKV_ALL, 0), BUF(S, CP_KV, 0), S->BT * 2 * S->kvn, ZP_DT_F32,
                                 ZP_OP_SUM));
    return zp_exec_cp_kv_rows(S, BUF(S, DQKV, 0), BUF(S, CP_KV, 0), 0);
}

/* One (sequence, local head, gathered block) step of the attention GEMMs; shapes per step: q, dq (Tl, hd)
 * of ld qkvn; k, v, dk, dv (Tl, hd) of ld 2 kvn; a, d (Tl, Tl) column blocks of the (Tl, cp Tl) scores;
 * y, dy (Tl, hd) of ld Cq. first: the first block (sums over the blocks start there); acc: not the first
 * head of its KV group (the group's heads add their K and V gradients). */
typedef struct {
    const float *q, *k, *v, *a, *dy;
    float *att, *y, *dq, *dk, *dv, *datt;
    int first, acc;
} att_step;

static zp_status att_gemm(const zp_exec_session *S, const att_step *x, int which)
{
    const size_t Tl = S->Tl, hd = S->hd, ld = S->qkvn, kl = 2 * S->kvn, Tk = (size_t)S->cp * Tl, Cq = S->Cq;
    const float sum = x->first ? 0.0f : 1.0f, acc = x->acc ? 1.0f : 0.0f;
    switch (which) {
    case ZP_EXEC_ATT_SCORES: return zp_exec_gemm(S, 0, 1, Tl, Tl, hd, 0.0f, x->q, ld, x->k, kl, x->att, Tk);
    case ZP_EXEC_ATT_CONTEXT: return zp_exec_gemm(S, 0, 0, Tl, hd, Tl, sum, x->a, Tk, x->v, kl, x->y, Cq);
    case ZP_EXEC_ATT_CTX_DGRAD: return zp_exec_gemm(S, 0, 1, Tl, Tl, hd, 0.0f, x->dy, Cq, x->v, kl, x->datt, Tk);
    case ZP_EXEC_ATT_CTX_WGRAD: return zp_exec_gemm(S, 1, 0, Tl, hd, Tl, acc, x->a, Tk, x->dy, Cq, x->dv, kl);
    case ZP_EXEC_ATT_SCORES_DGRAD: return zp_exec_gemm(S, 0, 0, Tl, hd, Tl, sum, x->datt, Tk, x->k, kl, x->dq, ld);
    default: return zp_exec_gemm(S, 1, 0, Tl, hd, Tl, acc, x->datt, Tk, x->q, ld, x->dk, kl);
    }
}

zp_status zp_exec_cp_attention(zp_exec_session *S, int set, int which)
{
    if (zp_exec_cp_ring(S)) /* the whole ring in the first op of each direction, nothing left for the others */
        return which == ZP_EXEC_ATT_SCORES || which == ZP_EXEC_ATT_CTX_DGRAD
                   ? zp_exec_cp_ring_attention(S, set, which == ZP_EXEC_ATT_CTX_DGRAD)
                   : ZP_OK;
    const size_t Tl = S->Tl, hd = S->hd, ld = S->qkvn, kl = 2 * S->kvn, Tk = (size_t)S->cp * Tl;
    const size_t grp = S->NHl / S->KVl;
    const float *qkv = BUF(S, QKV, set), *kvall = BUF(S, CP_KV_ALL, 0);
    float *att = BUF(S, ATT, set), *datt = BUF(S, DATT, 0), *dkvall = BUF(S, CP_DKV_ALL, 0);
    for (size_t b = 0; b < S->B; b++)
        for (size_t h = 0; h < S->NHl; h++)
            for (int r = 0; r < S->cp; r++) {
                const size_t row = ((size_t)r * S->B + b) * Tl, kvo = row * kl + (h / grp) * hd;
                const size_t sc = (b * S->NHl + h) * Tl * Tk + (size_t)r * Tl, qo = b * Tl * ld + h * hd;
                att_step x = {.q = qkv + qo, .k = kvall + kvo, .v = kvall + kvo + S->kvn, .a = att + sc,
                              .dy = BUF(S, DATTY, 0) + b * Tl * S->Cq + h * hd, .att = att + sc,
                              .y = BUF(S, ATTY, set) + b * Tl * S->Cq + h * hd, .dq = BUF(S, DQKV, 0) + qo,
                              .dk = dkvall + kvo, .dv = dkvall + kvo + S->kvn, .datt = datt + sc,
                              .first = r == 0, .acc = h % grp != 0};
                ZP_TRY(att_gemm(S, &x, which));
            }
    return ZP_OK;
}

zp_status zp_exec_cp_softmax(zp_exec_session *S, int set, int backward)
{
    const size_t rows = S->B * S->NHl * S->Tl, Tk = (size_t)S->cp * S->Tl;
    const float scale = (float)(1.0 / sqrt((double)S->hd));
    if (zp_exec_cp_ring(S)) /* merged by online softmax inside the ring (zp_exec_cp_ring.c) */
        return ZP_OK;
    if (backward)
        return S->nn->softmax_pos_bwd(BUF(S, DATT, 0), BUF(S, ATT, set), rows, S->Tl, Tk, S->qpos, S->kpos, scale);
    return S->nn->softmax_pos_fwd(BUF(S, ATT, set), rows, S->Tl, Tk, S->qpos, S->kpos, scale);
}
