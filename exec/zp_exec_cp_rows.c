/* zp_exec_cp_rows.c — where a context-parallel slice's tokens are, shared by the all-gather form
 * (zp_exec_cp.c) and the ring form (zp_exec_cp_ring.c), which both call down here and not into each other:
 * a local token's global position under Megatron-core's causal load balancing, and the K | V columns of a
 * block's QKV rows copied out of or back into a contiguous buffer. */
#include "zp_exec_impl.h"

int zp_exec_cp_pos(size_t T, int cp, int r, size_t i)
{
    const size_t half = T / (2 * (size_t)cp), chunk = i < half ? (size_t)r : (size_t)(2 * cp - 1 - r);
    return (int)(chunk * half + i % half);
}

/* Copies the K | V columns (2 kvn wide) of the BT rows of qkv (ld qkvn) to or from kv (rows of 2 kvn). */
zp_status zp_exec_cp_kv_rows(const zp_exec_session *S, float *qkv, float *kv, int to_kv)
{
    const size_t w = 2 * S->kvn;
    for (size_t t = 0; t < S->BT; t++) {
        float *a = qkv + t * S->qkvn + S->Cq, *b = kv + t * w;
        ZP_TRY(S->be->copy_on_device(to_kv ? b : a, to_kv ? a : b, w * sizeof(float)));
    }
    return ZP_OK;
}
