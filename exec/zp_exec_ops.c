/* zp_exec_ops.c — the small operations every part of a step uses: a GEMM on the session's backend, the
 * model-parallel all-reduce, where a parameter group sits in the flat layout (its offset, its length, the
 * copy compute reads), which copy of the in-flight activations a micro-batch uses, a stored checkpoint.
 * The session (zp_exec_session.c) and the parts it opens (layers, ZeRO, MoE, pipeline) call them; they
 * call none of those parts. */
#include "zp_exec_impl.h"

zp_status zp_exec_gemm(const zp_exec_session *S, int ta, int tb, size_t m, size_t n, size_t k, float beta,
                       const float *a, size_t lda, const float *b, size_t ldb, float *c, size_t ldc)
{
    zp_gemm_args g = {.trans_a = ta, .trans_b = tb, .m = (int)m, .n = (int)n, .k = (int)k, .alpha = 1.0f,
                      .beta = beta, .a = a, .lda = (int)lda, .b = b, .ldb = (int)ldb, .c = c, .ldc = (int)ldc,
                      .in_dtype = ZP_DT_F32};
    return S->be->gemm(&g);
}

zp_status zp_exec_gemm_batched(const zp_exec_session *S, int ta, int tb, size_t m, size_t n, size_t k, float beta,
                               size_t lda, size_t ldb, size_t ldc, int batch, const float *const *a,
                               const float *const *b, float *const *c)
{
    zp_gemm_args g = {.trans_a = ta, .trans_b = tb, .m = (int)m, .n = (int)n, .k = (int)k, .alpha = 1.0f,
                      .beta = beta, .a = a[0], .lda = (int)lda, .b = b[0], .ldb = (int)ldb, .c = c[0],
                      .ldc = (int)ldc, .in_dtype = ZP_DT_F32};
    return S->be->gemm_batched(&g, batch, (const void *const *)a, (const void *const *)b, c);
}

zp_status zp_exec_mp_allreduce(zp_exec_session *S, float *x, size_t n, zp_redop op)
{
    return S->mp == 1 ? ZP_OK : S->be->allreduce(S->mpc, x, x, n, ZP_DT_F32, op);
}

size_t zp_exec_item_lo(const zp_exec_session *S, int item)
{
    if (item == (int)S->L + 1 && S->hsz > 0)
        return S->xs.head_off;
    if (item == 0 || item == (int)S->L + 1)
        return S->xs.emb_off;
    return S->xs.blk_off + (size_t)(item - 1 - S->xs.l0) * S->bsz;
}

size_t zp_exec_item_len(const zp_exec_session *S, int item)
{
    if (item == (int)S->L + 1 && S->hsz > 0)
        return S->hsz;
    return (item == 0 || item == (int)S->L + 1) ? S->esz : S->bsz;
}

float *zp_exec_group(const zp_exec_session *S, int item)
{
    if (S->plan.stage < 3)
        return BUF(S, PARAMS, 0) + zp_exec_item_lo(S, item);
    return item >= 0 && item <= (int)S->L + 1 ? BUF(S, GATHERED, item) : NULL;
}

int zp_exec_slot(const zp_exec_session *S, int micro) { return micro % S->xs.slots; }

float *zp_exec_ckpt(const zp_exec_session *S, int l, int micro)
{
    const int k = zp_exec_slot(S, micro);
    if (S->plan.md)
        return BUF(S, CK_REGION, 0) + ((size_t)(l - S->xs.l0) + (size_t)k * (size_t)S->xs.nl) * S->ck_len;
    return BUF(S, CK, l + (int)S->L * k);
}
