/* zp_exec_cp_ring.c — context parallelism's ring form (--cp-comm ring, the default; Megatron-core's
 * cp_comm_type p2p, TransformerEngine's AttnFuncWithCPAndKVP2P in context_parallel.py): the cp ranks of a CP
 * group hold their slices as the all-gather form does (zp_exec_cp.c: Megatron-core's causal load balancing,
 * chunks r and 2 cp - 1 - r), but no rank ever holds the gathered sequence. Forward, each rank's K and V rows
 * go round the ring, cp - 1 point-to-point passes (CP rank r sends to r + 1 and receives from r - 1, the pass
 * posted before the attention of the chunk in hand and waited for after it, so the two overlap); the queries
 * attend over one chunk at a time and the softmax over every key is merged chunk by chunk by online softmax
 * (running max and sum per query row; zp_nn_softmax_online_fwd), the output rescaled as the max moves. What
 * the backward keeps is each row's log-sum-exp (in ATT, flash attention's saved statistic), not the scores.
 * Backward, K and V go round again with their gradients' accumulator beside them: each rank adds its
 * queries' share of the chunk in hand's dK and dV and passes the accumulator on (cp passes: the last lands it
 * at its owner), the probabilities recomputed from the log-sum-exp (zp_nn_softmax_lse_fwd) and the scores'
 * gradient taken against D = the row's dot of the output and its gradient (zp_nn_softmax_lse_bwd).
 *
 * Where the work runs: the whole ring runs inside the block's first attention op (attn_scores forward,
 * attn_context_dgrad backward); the schedule's other attention ops and its cp_kv_ring / cp_dkv_ring ops have
 * nothing left to do (their time is the first op's). On the cpu backend (the only one the executor runs CP
 * on, zp_exec_config_check) device memory is host memory, so MPI sends from and receives into the buffers
 * themselves. Memory: the schedule's (sim/zp_layout.c ex_cp_tensors, ex_att_sizes): the chunk in hand and the
 * one in flight (CP_KV, CP_KV_NEXT), their gradients' pair (CP_DKV, CP_DKV_NEXT), the rows' log-sum-exp per
 * block and one (sequence, head)'s working chunk (DATT). */
#include <math.h>
#include <stdlib.h>

#include "zp_config.h"
#include "zp_exec_impl.h"
#include "zp_kernels_mpi.h"

int zp_exec_cp_ring(const zp_exec_session *S) { return S->cp > 1 && S->plan.cp_comm == ZP_CP_RING; }

/* One (sequence, local head) of a chunk: its offsets into this rank's Q (ld qkvn), the chunk's K and V (rows
 * of 2 kvn: sequence b's Tl rows at b Tl), the output and its gradient (ld Cq), and its rows' statistics. */
typedef struct {
    size_t q, kv, y, rows;
} ring_at;

static ring_at ring_offsets(const zp_exec_session *S, size_t b, size_t h)
{
    const size_t grp = S->NHl / S->KVl;
    return (ring_at){.q = b * S->Tl * S->qkvn + h * S->hd, .kv = b * S->Tl * 2 * S->kvn + (h / grp) * S->hd,
                     .y = b * S->Tl * S->Cq + h * S->hd, .rows = (b * S->NHl + h) * S->Tl};
}

/* Forward over the chunk kv of CP rank src: per (sequence, head) the scores (Tl, Tl) into the working chunk
 * p, merged into the running max (in lse) and sum se; the output so far rescaled by corr, then += p . V. */
static zp_status ring_fwd_chunk(zp_exec_session *S, int set, const float *kv, int src, int first)
{
    const size_t Tl = S->Tl, hd = S->hd, kl = 2 * S->kvn;
    const float scale = (float)(1.0 / sqrt((double)hd));
    const float *qkv = BUF(S, QKV, set);
    float *lse = BUF(S, ATT, set), *p = BUF(S, DATT, 0), *se = p + 2 * Tl * Tl, *corr = se + S->B * S->NHl * Tl;
    for (size_t b = 0; b < S->B; b++)
        for (size_t h = 0; h < S->NHl; h++) {
            const ring_at a = ring_offsets(S, b, h);
            float *y = BUF(S, ATTY, set) + a.y;
            ZP_TRY(zp_exec_gemm(S, 0, 1, Tl, Tl, hd, 0.0f, qkv + a.q, S->qkvn, kv + a.kv, kl, p, Tl));
            ZP_TRY(S->nn->softmax_online_fwd(p, lse + a.rows, se + a.rows, corr, Tl, Tl, Tl, S->qpos,
                                             S->kpos + (size_t)src * Tl, scale));
            if (!first)
                ZP_TRY(S->nn->scale_rows(y, S->Cq, corr, Tl, hd));
            ZP_TRY(zp_exec_gemm(S, 0, 0, Tl, hd, Tl, first ? 0.0f : 1.0f, p, Tl, kv + a.kv + S->kvn, kl, y, S->Cq));
        }
    return ZP_OK;
}

/* Backward over the chunk kv of CP rank src, its gradients' accumulator dkv: per (sequence, head) the
 * probabilities p recomputed, dV += p^T dY, dp = dY V^T turned into the scores' gradient ds (in place),
 * dQ (+)= ds K, dK += ds^T Q (the heads of a KV group add into the same dK and dV). */
static zp_status ring_bwd_chunk(zp_exec_session *S, int set, const float *kv, float *dkv, int src, int first)
{
    const size_t Tl = S->Tl, hd = S->hd, kl = 2 * S->kvn, ld = S->qkvn, Cq = S->Cq;
    const float scale = (float)(1.0 / sqrt((double)hd));
    const float *qkv = BUF(S, QKV, set), *lse = BUF(S, ATT, set);
    float *p = BUF(S, DATT, 0), *dp = p + Tl * Tl, *D = p + 2 * Tl * Tl;
    for (size_t b = 0; b < S->B; b++)
        for (size_t h = 0; h < S->NHl; h++) {
            const ring_at a = ring_offsets(S, b, h);
            const float *q = qkv + a.q, *k = kv + a.kv, *v = k + S->kvn, *dy = BUF(S, DATTY, 0) + a.y;
            float *dq = BUF(S, DQKV, 0) + a.q, *dk = dkv + a.kv, *dv = dk + S->kvn;
            ZP_TRY(zp_exec_gemm(S, 0, 1, Tl, Tl, hd, 0.0f, q, ld, k, kl, p, Tl));
            ZP_TRY(S->nn->softmax_lse_fwd(p, lse + a.rows, Tl, Tl, Tl, S->qpos, S->kpos + (size_t)src * Tl, scale));
            ZP_TRY(zp_exec_gemm(S, 1, 0, Tl, hd, Tl, 1.0f, p, Tl, dy, Cq, dv, kl));
            ZP_TRY(zp_exec_gemm(S, 0, 1, Tl, Tl, hd, 0.0f, dy, Cq, v, kl, dp, Tl));
            ZP_TRY(S->nn->softmax_lse_bwd(dp, p, D + a.rows, Tl, Tl, scale));
            ZP_TRY(zp_exec_gemm(S, 0, 0, Tl, hd, Tl, first ? 0.0f : 1.0f, dp, Tl, k, kl, dq, ld));
            ZP_TRY(zp_exec_gemm(S, 1, 0, Tl, hd, Tl, 1.0f, dp, Tl, q, ld, dk, kl));
        }
    return ZP_OK;
}

#if ZP_HAVE_MPI
enum { TAG_KV = 7201, TAG_DKV = 7202 };

/* Posts one pass round the ring: n floats from send to CP rank cr + 1, into recv from CP rank cr - 1. */
static zp_status ring_post(const zp_exec_session *S, const float *send, float *recv, size_t n, int tag,
                           MPI_Request req[2])
{
    MPI_Comm c = zp_comm_mpi(S->cpc);
    const int next = (S->cr + 1) % S->cp, prev = (S->cr + S->cp - 1) % S->cp;
    if (MPI_Irecv(recv, (int)n, MPI_FLOAT, prev, tag, c, &req[0]) != MPI_SUCCESS ||
        MPI_Isend(send, (int)n, MPI_FLOAT, next, tag, c, &req[1]) != MPI_SUCCESS)
        return ZP_FAIL(ZP_ERUNTIME, "context parallelism: the ring's pass from CP rank %d to %d failed", S->cr, next);
    return ZP_OK;
}

static zp_status ring_wait(MPI_Request req[2])
{
    if (MPI_Waitall(2, req, MPI_STATUSES_IGNORE) != MPI_SUCCESS)
        return ZP_FAIL(ZP_ERUNTIME, "context parallelism: the ring's pass did not complete");
    return ZP_OK;
}

static void swap(float **a, float **b)
{
    float *t = *a;
    *a = *b;
    *b = t;
}

/* Forward: K and V passed cp - 1 times, each pass beside the attention of the chunk in hand; then each
 * row's output divided by its sum and its log-sum-exp kept. */
static zp_status ring_forward(zp_exec_session *S, int set, float *kv[2])
{
    const size_t n = S->BT * 2 * S->kvn, rows = S->B * S->NHl * S->Tl, Tl = S->Tl;
    float *lse = BUF(S, ATT, set), *se = BUF(S, DATT, 0) + 2 * Tl * Tl;
    for (size_t r = 0; r < rows; r++) /* host memory: the cpu backend */
        lse[r] = -INFINITY, se[r] = 0.0f;
    for (int s = 0, src = S->cr; s < S->cp; s++, src = (src + S->cp - 1) % S->cp) {
        MPI_Request req[2];
        if (s < S->cp - 1)
            ZP_TRY(ring_post(S, kv[0], kv[1], n, TAG_KV, req));
        ZP_TRY(ring_fwd_chunk(S, set, kv[0], src, s == 0));
        if (s < S->cp - 1)
            ZP_TRY(ring_wait(req));
        swap(&kv[0], &kv[1]);
    }
    ZP_TRY(S->nn->softmax_online_end(lse, se, rows));
    for (size_t b = 0; b < S->B; b++)
        for (size_t h = 0; h < S->NHl; h++) {
            const ring_at a = ring_offsets(S, b, h);
            ZP_TRY(S->nn->scale_rows(BUF(S, ATTY, set) + a.y, S->Cq, se + a.rows, Tl, S->hd));
        }
    return ZP_OK;
}

/* Backward: D per row first; K and V passed cp - 1 times, the gradients' accumulator cp times (after the
 * chunk's share is added), so each rank ends holding its own chunk's dK and dV. */
static zp_status ring_backward(zp_exec_session *S, int set, float *kv[2], float *dkv[2])
{
    const size_t n = S->BT * 2 * S->kvn, Tl = S->Tl;
    float *D = BUF(S, DATT, 0) + 2 * Tl * Tl;
    for (size_t b = 0; b < S->B; b++)
        for (size_t h = 0; h < S->NHl; h++) {
            const ring_at a = ring_offsets(S, b, h);
            ZP_TRY(S->nn->row_dot(D + a.rows, BUF(S, DATTY, 0) + a.y, S->Cq, BUF(S, ATTY, set) + a.y, S->Cq, Tl,
                                  S->hd));
        }
    ZP_TRY(S->be->zero(dkv[0], n * sizeof(float)));
    for (int s = 0, src = S->cr; s < S->cp; s++, src = (src + S->cp - 1) % S->cp) {
        MPI_Request req[2], dreq[2];
        if (s < S->cp - 1)
            ZP_TRY(ring_post(S, kv[0], kv[1], n, TAG_KV, req));
        ZP_TRY(ring_bwd_chunk(S, set, kv[0], dkv[0], src, s == 0));
        ZP_TRY(ring_post(S, dkv[0], dkv[1], n, TAG_DKV, dreq));
        if (s < S->cp - 1)
            ZP_TRY(ring_wait(req));
        ZP_TRY(ring_wait(dreq));
        swap(&kv[0], &kv[1]);
        swap(&dkv[0], &dkv[1]);
    }
    return zp_exec_cp_kv_rows(S, BUF(S, DQKV, 0), dkv[0], 0);
}

zp_status zp_exec_cp_ring_attention(zp_exec_session *S, int set, int backward)
{
    float *kv[2] = {BUF(S, CP_KV, 0), BUF(S, CP_KV_NEXT, 0)}, *dkv[2] = {BUF(S, CP_DKV, 0), BUF(S, CP_DKV_NEXT, 0)};
    ZP_TRY(zp_exec_cp_kv_rows(S, BUF(S, QKV, set), kv[0], 1));
    return backward ? ring_backward(S, set, kv, dkv) : ring_forward(S, set, kv);
}
#else
zp_status zp_exec_cp_ring_attention(zp_exec_session *S, int set, int backward)
{
    (void)S, (void)set, (void)backward, (void)ring_fwd_chunk, (void)ring_bwd_chunk;
    return ZP_FAIL(ZP_EUNSUPPORTED, "--cp-comm ring: the executor passes K and V round the ring with MPI, and this "
                                    "build has none");
}
#endif
