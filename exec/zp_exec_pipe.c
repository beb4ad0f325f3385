/* zp_exec_pipe.c — pipeline parallelism in the executor: a micro-batch's activation goes to the next
 * stage after its forward pass and its gradient back to the previous one after its backward pass, point
 * to point between the ranks of the same (DP rank, MP rank) place, as the schedule's pp_send / pp_recv ops
 * order them (1F1B). As Megatron-LM's scatter/gather, each MP rank sends only its 1/mp slice and the
 * receiving MP group all-gathers the slices (pp_allgather). Sends do not wait for the receiver (MPI_Isend
 * of a host copy; Megatron pairs them in batch_isend_irecv for the same reason: two neighbours that send
 * to each other at once must not both block), receives do; a step ends with every send delivered. The
 * tied embedding's gradient is summed over the first and the last stage (Megatron-LM's
 * allreduce_word_embedding_grads). */
#include <stdlib.h>
#include <string.h>

#include "zp_config.h"
#include "zp_exec_impl.h"
#include "zp_kernels_mpi.h"

#if ZP_HAVE_MPI
struct zp_exec_sends {
    MPI_Request *req;
    float **buf;
    int n, cap;
    float *recv;   /* host staging of a received slice */
};

enum { TAG_ACT = 7101, TAG_GRAD = 7102 };

/* The tensor a pipeline op sends from or receives into: the chunk's last block output (a send of its
 * activation) or first block input (a receive), or the block-input gradient d_residual. */
static float *pipe_tensor(const zp_exec_session *S, const zp_op *o)
{
    if (o->type == ZP_OPK_PP_SEND_GRAD || o->type == ZP_OPK_PP_RECV_GRAD)
        return BUF(S, DRES, 0);
    if (S->plan.checkpoint)
        return BUF(S, RESID, 0);
    const int L = (int)S->L, k = zp_exec_slot(S, o->micro);
    return BUF(S, RES, o->layer + (o->type == ZP_OPK_PP_SEND_ACT) + (L + 1) * k);
}

static zp_status sends_get(zp_exec_session *S, struct zp_exec_sends **out)
{
    if (!S->sends) {
        S->sends = calloc(1, sizeof *S->sends);
        if (!S->sends || !(S->sends->recv = malloc(S->BT * S->C / (size_t)S->mp * sizeof(float))))
            return ZP_FAIL(ZP_ENOMEM, "out of memory");
    }
    *out = S->sends;
    return ZP_OK;
}

/* Frees the staging of the sends already delivered. */
static void sends_reap(struct zp_exec_sends *q)
{
    int j = 0;
    for (int i = 0; i < q->n; i++) {
        int done = 0;
        MPI_Test(&q->req[i], &done, MPI_STATUS_IGNORE);
        if (done) {
            free(q->buf[i]);
            continue;
        }
        q->req[j] = q->req[i];
        q->buf[j++] = q->buf[i];
    }
    q->n = j;
}

zp_status x_pp_send(zp_exec_session *S, const zp_op *o)
{
    const int act = o->type == ZP_OPK_PP_SEND_ACT, peer = act ? S->next_rank : S->prev_rank;
    if (peer < 0)
        return ZP_FAIL(ZP_ERUNTIME, "schedule: stage %d sends to stage %d, which it does not have", S->pr, o->item);
    struct zp_exec_sends *q;
    ZP_TRY(sends_get(S, &q));
    sends_reap(q);
    if (q->n == q->cap) {
        int cap = q->cap ? 2 * q->cap : 8;
        MPI_Request *r = realloc(q->req, (size_t)cap * sizeof *r);
        if (r)
            q->req = r;
        float **b = r ? realloc(q->buf, (size_t)cap * sizeof *b) : NULL;
        if (!b)
            return ZP_FAIL(ZP_ENOMEM, "out of memory");
        q->buf = b;
        q->cap = cap;
    }
    size_t off, n;
    zp_shard_range(0, S->BT * S->C, S->mp, S->mr, &off, &n);
    float *h = malloc(n * sizeof *h);
    if (!h)
        return ZP_FAIL(ZP_ENOMEM, "out of memory");
    zp_status st = S->be->copy_to_host(h, pipe_tensor(S, o) + off, n * sizeof *h);
    if (st == ZP_OK && MPI_Isend(h, (int)n, MPI_FLOAT, peer, act ? TAG_ACT : TAG_GRAD, zp_comm_mpi(S->world),
                                 &q->req[q->n]) != MPI_SUCCESS)
        st = ZP_FAIL(ZP_ERUNTIME, "MPI_Isend to rank %d failed", peer);
    if (st != ZP_OK) {
        free(h);
        return st;
    }
    q->buf[q->n++] = h;
    return ZP_OK;
}

zp_status x_pp_recv(zp_exec_session *S, const zp_op *o)
{
    const int act = o->type == ZP_OPK_PP_RECV_ACT, peer = act ? S->prev_rank : S->next_rank;
    if (peer < 0)
        return ZP_FAIL(ZP_ERUNTIME, "schedule: stage %d receives from stage %d, which it does not have", S->pr,
                       o->item);
    struct zp_exec_sends *q;
    ZP_TRY(sends_get(S, &q));
    size_t off, n;
    zp_shard_range(0, S->BT * S->C, S->mp, S->mr, &off, &n);
    if (MPI_Recv(q->recv, (int)n, MPI_FLOAT, peer, act ? TAG_ACT : TAG_GRAD, zp_comm_mpi(S->world),
                 MPI_STATUS_IGNORE) != MPI_SUCCESS)
        return ZP_FAIL(ZP_ERUNTIME, "MPI_Recv from rank %d failed", peer);
    S->pp_dest = pipe_tensor(S, o);
    ZP_TRY(S->be->copy_to_device(S->pp_dest + off, q->recv, n * sizeof(float)));
    return S->mp > 1 ? S->be->copy_to_device(S->pp_slice, q->recv, n * sizeof(float)) : ZP_OK;
}

zp_status zp_exec_pipe_flush(zp_exec_session *S)
{
    struct zp_exec_sends *q = S->sends;
    if (!q || q->n == 0)
        return ZP_OK;
    int rc = MPI_Waitall(q->n, q->req, MPI_STATUSES_IGNORE);
    for (int i = 0; i < q->n; i++)
        free(q->buf[i]);
    q->n = 0;
    return rc == MPI_SUCCESS ? ZP_OK : ZP_FAIL(ZP_ERUNTIME, "a pipeline send failed");
}

void zp_exec_pipe_free(zp_exec_session *S)
{
    struct zp_exec_sends *q = S->sends;
    if (!q)
        return;
    for (int i = 0; i < q->n; i++) {
        MPI_Cancel(&q->req[i]);
        MPI_Request_free(&q->req[i]);
        free(q->buf[i]);
    }
    free(q->req);
    free(q->buf);
    free(q->recv);
    free(q);
    S->sends = NULL;
}
#else
zp_status x_pp_send(zp_exec_session *S, const zp_op *o)
{
    (void)S;
    (void)o;
    return ZP_FAIL(ZP_EUNSUPPORTED, "pipeline stages need MPI: this zplan was built without it");
}

zp_status x_pp_recv(zp_exec_session *S, const zp_op *o) { return x_pp_send(S, o); }
zp_status zp_exec_pipe_flush(zp_exec_session *S)
{
    (void)S;
    return ZP_OK;
}
void zp_exec_pipe_free(zp_exec_session *S) { (void)S; }
#endif

/* The MP group's slices of the received tensor, in rank order: the whole tensor on every MP rank. */
zp_status x_pp_allgather(zp_exec_session *S, const zp_op *o)
{
    (void)o;
    if (!S->pp_dest)
        return ZP_FAIL(ZP_ERUNTIME, "schedule: pp_allgather with no pipeline receive before it");
    zp_status st = S->be->allgather(S->mpc, S->pp_slice, S->pp_dest, S->BT * S->C / (size_t)S->mp, ZP_DT_F32);
    S->pp_dest = NULL;
    return st;
}

/* The embedding group's gradient (the first stage's from the embedding, the last stage's from the LM head
 * and the final norm) summed over the two: both then hold the whole gradient and update alike. */
zp_status x_embed_grad_allreduce(zp_exec_session *S, const zp_op *o)
{
    (void)o;
    if (!S->embc || !S->slot[ZP_BUF_GRADS][0])
        return ZP_FAIL(ZP_ERUNTIME, "schedule: embedding_grad_allreduce on a stage without the embedding group");
    float *g = BUF(S, GRADS, 0) + zp_exec_item_lo(S, 0);
    return S->be->allreduce(S->embc, g, g, S->esz, ZP_DT_F32, ZP_OP_SUM);
}
