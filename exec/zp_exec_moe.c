/* zp_exec_moe.c — a mixture-of-experts MLP (Mixtral's), op by op as the schedule orders it:
 *  - router: scores (BT, E) = ln2 . router_w^T (whole on every MP rank);
 *  - top-k (on the host): softmax over the E experts, the k largest kept and renormalized over the selected
 *    (gate = p_e / sum of the selected p), each token's k copies sorted by expert into the send buffer;
 *  - dispatch: the copies go to the EP ranks holding their experts (the counts exchanged first, then one
 *    all-to-all of the rows); each rank runs its e_local experts' GEMMs over the rows it received, segment
 *    by segment (rows from one source rank for one expert are contiguous), up (and gate), the activation,
 *    down; the rows go back (all-to-all) and are summed per token, weighted by the gates.
 * No token is dropped: every copy is computed (the buffers are sized for the worst case, every token of the
 * EP group on this rank's experts; the planner's capacity factor is a cost, not a limit here). With MP the
 * experts are split as the dense MLP (up column-, down row-split): the combined output is a partial sum
 * for the MP all-reduce that follows, and so are the gates' gradients (all-reduced here, before the
 * router's backward, so every MP rank computes the same router gradient) and the dispatched rows'
 * gradients (the router's share of d ln2 is added on MP rank 0 only, before the MP all-reduce).
 * Without EP (ep = 1) the dispatch is the identity: the copies land in the experts' input directly.
 * The routing (expert ids, permutation, counts) is host and backend int arrays outside the memory
 * categories, as the token ids are. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "zp_config.h"
#include "zp_exec_impl.h"
#include "zp_time.h"
#if ZP_HAVE_MPI
#include "zp_kernels_mpi.h"
#endif

/* The routing of one activation set (a block's, or the one recomputed under checkpointing). */
struct zp_exec_route {
    int *sel;                 /* (BT k) host: the expert of token copy t k + i (global id) */
    float *gate;              /* (BT k) host: its gate */
    int *perm, *slot;         /* (BT k) host: send row j holds token perm[j]; copy t k + i is send row slot[.] */
    int *perm_d, *slot_d;     /* the same in the backend's memory */
    int *scnt;                /* (ep, e_local) rows sent to EP rank d for its local expert j */
    int *rcnt;                /* (ep, e_local) rows received from EP rank s for local expert j */
    size_t *sc, *sd, *rc, *rd;/* (ep) all-to-all counts and offsets in elements (rows x C) */
    size_t R;                 /* rows received */
};

typedef struct zp_exec_route route;

static route *route_of(const zp_exec_session *S, const zp_op *o)
{
    const int k = zp_exec_slot(S, o->micro), L = (int)S->L;
    const int set = S->plan.checkpoint ? 0 : o->layer + L * k;
    return &S->route[set];
}

static int set_of(const zp_exec_session *S, const zp_op *o)
{
    return S->plan.checkpoint ? 0 : o->layer + (int)S->L * zp_exec_slot(S, o->micro);
}

#define SETBUF(S, id, o) ((float *)(S)->slot[ZP_BUF_##id][set_of((S), (o))])

zp_status zp_exec_moe_open(zp_exec_session *S)
{
    const size_t n = S->BT * S->sh.k, ep = (size_t)S->ep, el = S->sh.e_local;
    S->nroute = S->plan.checkpoint ? 1 : (int)S->L * S->xs.slots;
    S->route = calloc((size_t)S->nroute, sizeof *S->route);
    S->route_h = malloc(S->BT * S->sh.E * sizeof *S->route_h);
    if (!S->route || !S->route_h)
        return ZP_FAIL(ZP_ENOMEM, "out of memory");
    for (int i = 0; i < S->nroute; i++) {
        route *r = &S->route[i];
        r->sel = calloc(n, sizeof *r->sel);
        r->gate = calloc(n, sizeof *r->gate);
        r->perm = calloc(n, sizeof *r->perm);
        r->slot = calloc(n, sizeof *r->slot);
        r->scnt = calloc(ep * el, sizeof *r->scnt);
        r->rcnt = calloc(ep * el, sizeof *r->rcnt);
        r->sc = calloc(4 * ep, sizeof *r->sc);
        if (!r->sel || !r->gate || !r->perm || !r->slot || !r->scnt || !r->rcnt || !r->sc)
            return ZP_FAIL(ZP_ENOMEM, "out of memory");
        r->sd = r->sc + ep;
        r->rc = r->sc + 2 * ep;
        r->rd = r->sc + 3 * ep;
        ZP_TRY(S->be->alloc(n * sizeof(int), (void **)&r->perm_d));
        ZP_TRY(S->be->alloc(n * sizeof(int), (void **)&r->slot_d));
    }
    return ZP_OK;
}

void zp_exec_moe_close(zp_exec_session *S)
{
    for (int i = 0; S->route && i < S->nroute; i++) {
        route *r = &S->route[i];
        free(r->sel);
        free(r->gate);
        free(r->perm);
        free(r->slot);
        free(r->scnt);
        free(r->rcnt);
        free(r->sc);
        if (r->perm_d)
            S->be->free(r->perm_d);
        if (r->slot_d)
            S->be->free(r->slot_d);
    }
    free(S->route);
    free(S->route_h);
    S->route = NULL;
    S->route_h = NULL;
}

/* Block l's local experts in the experts' flat layout (the gathered copy at stage 3), and their gradient. */
float *zp_exec_xgroup(const zp_exec_session *S, int l)
{
    if (S->plan.stage < 3)
        return BUF(S, XPARAMS, 0) + (size_t)(l - S->xs.l0) * S->xsz;
    return (float *)S->slot[ZP_BUF_XGATHERED][l + 1];
}

float *zp_exec_xgrad(const zp_exec_session *S, int l)
{
    float *g = S->plan.stage < 2 ? BUF(S, XGRADS, 0) : BUF(S, XGWORK, 0);
    return g + (size_t)(l - S->xs.l0) * S->xsz;
}

/* Local expert j's tensor `kind` of block l, and its gradient. */
static size_t x_each(const zp_exec_session *S, int kind)
{
    return (S->x_off[kind + 1] - S->x_off[kind]) / S->sh.e_local;
}
static const float *XW(const zp_exec_session *S, int l, int kind, size_t j)
{
    return zp_exec_xgroup(S, l) + S->x_off[kind] + j * x_each(S, kind);
}
static float *XG(const zp_exec_session *S, int l, int kind, size_t j)
{
    return zp_exec_xgrad(S, l) + S->x_off[kind] + j * x_each(S, kind);
}

#define NEEDX(S, l)                                                                                    \
    do {                                                                                               \
        if (!zp_exec_group((S), (l) + 1) || ((S)->plan.stage == 3 && !zp_exec_xgroup((S), (l))))      \
            return ZP_FAIL(ZP_ERUNTIME, "schedule: block %d's parameters are used before they are gathered", (l)); \
    } while (0)

/* The router's weight (E, C) of block l: a tensor of the block's group. */
static const float *router_w(const zp_exec_session *S, int l)
{
    return zp_exec_group(S, l + 1) + S->b_off[ZP_TENSORS_B_ROUTER];
}

/* ---- forward ---- */

/* scores (BT, E) = ln2 (BT, C) . router_w^T */
zp_status x_router(zp_exec_session *S, const zp_op *o)
{
    NEEDX(S, o->layer);
    return zp_exec_gemm(S, 0, 1, S->BT, S->sh.E, S->C, 0.0f, SETBUF(S, LN2, o), S->C, router_w(S, o->layer), S->C,
                        SETBUF(S, RPROB, o), S->sh.E);
}

/* Softmax, top-k renormalized, the copies sorted by expert (stable: token order within an expert); the
 * probabilities back into the set's RPROB, the gates into GATE. */
zp_status x_topk(zp_exec_session *S, const zp_op *o)
{
    const size_t BT = S->BT, E = S->sh.E, K = S->sh.k, el = S->sh.e_local, ep = (size_t)S->ep;
    route *r = route_of(S, o);
    float *p = S->route_h;
    ZP_TRY(S->be->copy_to_host(p, SETBUF(S, RPROB, o), BT * E * sizeof *p));
    for (size_t t = 0; t < BT; t++) {
        float *x = p + t * E, mx = x[0];
        for (size_t e = 1; e < E; e++)
            mx = x[e] > mx ? x[e] : mx;
        double sum = 0;
        for (size_t e = 0; e < E; e++)
            sum += (x[e] = expf(x[e] - mx));
        for (size_t e = 0; e < E; e++)
            x[e] = (float)(x[e] / sum);
        double sel = 0;
        for (size_t i = 0; i < K; i++) { /* the i-th largest not yet chosen (lowest id on ties) */
            int best = -1;
            for (size_t e = 0; e < E; e++) {
                int taken = 0;
                for (size_t j = 0; j < i; j++)
                    taken |= r->sel[t * K + j] == (int)e;
                if (!taken && (best < 0 || x[e] > x[best]))
                    best = (int)e;
            }
            r->sel[t * K + i] = best;
            sel += x[best];
        }
        for (size_t i = 0; i < K; i++)
            r->gate[t * K + i] = (float)(x[r->sel[t * K + i]] / sel);
    }
    /* counting sort of the copies by expert: send row order = expert order (EP rank major, local expert
     * minor), token order within */
    size_t *start = calloc(E + 1, sizeof *start);
    if (!start)
        return ZP_FAIL(ZP_ENOMEM, "out of memory");
    for (size_t j = 0; j < BT * K; j++)
        start[r->sel[j] + 1]++;
    for (size_t e = 0; e < E; e++) {
        r->scnt[e] = (int)start[e + 1]; /* e = d e_local + j */
        start[e + 1] += start[e];
    }
    for (size_t j = 0; j < BT * K; j++) {
        const size_t row = start[r->sel[j]]++;
        r->perm[row] = (int)(j / K);
        r->slot[j] = (int)row;
    }
    free(start);
    size_t off = 0;
    for (size_t d = 0; d < ep; d++) {
        size_t rows = 0;
        for (size_t j = 0; j < el; j++)
            rows += (size_t)r->scnt[d * el + j];
        r->sc[d] = rows * S->C;
        r->sd[d] = off * S->C;
        off += rows;
    }
    if (ep == 1) { /* no exchange: this rank's copies are its experts' rows */
        memcpy(r->rcnt, r->scnt, el * sizeof *r->rcnt);
        r->R = BT * K;
    }
    ZP_TRY(S->be->copy_to_device(SETBUF(S, RPROB, o), p, BT * E * sizeof *p));
    ZP_TRY(S->be->copy_to_device(SETBUF(S, GATE, o), r->gate, BT * K * sizeof(float)));
    ZP_TRY(S->be->copy_to_device(r->perm_d, r->perm, BT * K * sizeof(int)));
    return S->be->copy_to_device(r->slot_d, r->slot, BT * K * sizeof(int));
}

/* Where the copies go: the send buffer with EP, the experts' input directly without. */
static float *send_rows(const zp_exec_session *S, const zp_op *o)
{
    return S->ep > 1 ? BUF(S, MSEND, 0) : SETBUF(S, XD, o);
}
/* Where the experts' output rows go: the working rows with EP (sent back), the returned rows without. */
static float *out_rows(const zp_exec_session *S, const zp_op *o)
{
    return S->ep > 1 ? BUF(S, MROWS, 0) : SETBUF(S, RB, o);
}

zp_status x_moe_permute(zp_exec_session *S, const zp_op *o)
{
    return S->nn->moe_gather(send_rows(S, o), SETBUF(S, LN2, o), route_of(S, o)->perm_d, S->BT * S->sh.k, S->C);
}

/* The counts first (every EP rank's rows per destination expert), then the rows. */
zp_status x_a2a_dispatch(zp_exec_session *S, const zp_op *o)
{
    route *r = route_of(S, o);
    const size_t ep = (size_t)S->ep, el = S->sh.e_local;
#if ZP_HAVE_MPI
    int *all = malloc(ep * ep * el * sizeof *all);
    if (!all)
        return ZP_FAIL(ZP_ENOMEM, "out of memory");
    if (MPI_Allgather(r->scnt, (int)(ep * el), MPI_INT, all, (int)(ep * el), MPI_INT, zp_comm_mpi(S->epc)) !=
        MPI_SUCCESS) {
        free(all);
        return ZP_FAIL(ZP_ERUNTIME, "MPI_Allgather of the expert counts failed");
    }
    size_t off = 0;
    for (size_t s = 0; s < ep; s++) {
        size_t rows = 0;
        for (size_t j = 0; j < el; j++)
            rows += (size_t)(r->rcnt[s * el + j] = all[(s * ep + (size_t)S->er) * el + j]);
        r->rc[s] = rows * S->C;
        r->rd[s] = off * S->C;
        off += rows;
    }
    free(all);
    r->R = off;
#else
    (void)ep;
    (void)el;
    return ZP_FAIL(ZP_EUNSUPPORTED, "expert parallelism needs MPI");
#endif
    if (r->R > ep * S->BT * S->sh.k)
        return ZP_FAIL(ZP_ERUNTIME, "MoE: %zu rows received, more than the %zu the buffers hold", r->R,
                       ep * S->BT * S->sh.k);
    return S->be->alltoallv(S->epc, BUF(S, MSEND, 0), r->sc, r->sd, SETBUF(S, XD, o), r->rc, r->rd, ZP_DT_F32);
}

/* One GEMM per (source rank, local expert) segment of the received rows: fn(S, l, j, row0, rows). */
typedef zp_status (*segment_fn)(zp_exec_session *S, const zp_op *o, size_t j, size_t row0, size_t rows);

static zp_status segments(zp_exec_session *S, const zp_op *o, segment_fn fn)
{
    NEEDX(S, o->layer);
    const route *r = route_of(S, o);
    const size_t el = S->sh.e_local;
    size_t row = 0;
    for (size_t s = 0; s < (size_t)S->ep; s++)
        for (size_t j = 0; j < el; j++) {
            const size_t n = (size_t)r->rcnt[s * el + j];
            if (n > 0)
                ZP_TRY(fn(S, o, j, row, n));
            row += n;
        }
    return ZP_OK;
}

/* eh (rows, e_up) = xd (rows, C) . up_w_j^T */
static zp_status seg_up(zp_exec_session *S, const zp_op *o, size_t j, size_t r0, size_t n)
{
    const size_t C = S->C, u = S->sh.e_up;
    return zp_exec_gemm(S, 0, 1, n, u, C, 0.0f, SETBUF(S, XD, o) + r0 * C, C, XW(S, o->layer, ZP_TENSORS_X_UPW, j), C,
                        SETBUF(S, EH, o) + r0 * u, u);
}

/* out (rows, C) = ea (rows, e_f) . down_w_j^T: a partial sum over the MP ranks */
static zp_status seg_down(zp_exec_session *S, const zp_op *o, size_t j, size_t r0, size_t n)
{
    const size_t C = S->C, f = S->sh.e_f;
    return zp_exec_gemm(S, 0, 1, n, C, f, 0.0f, SETBUF(S, EA, o) + r0 * f, f, XW(S, o->layer, ZP_TENSORS_X_DOWNW, j), f,
                        out_rows(S, o) + r0 * C, C);
}

zp_status x_expert_up(zp_exec_session *S, const zp_op *o) { return segments(S, o, seg_up); }
zp_status x_expert_down(zp_exec_session *S, const zp_op *o) { return segments(S, o, seg_down); }

static int glu_act(const zp_exec_session *S) { return S->sh.act == ZP_ACT_GELU ? ZP_GLU_GELU : ZP_GLU_SILU; }

zp_status x_expert_glu(zp_exec_session *S, const zp_op *o)
{
    const size_t R = route_of(S, o)->R;
    return R ? S->nn->glu_fwd(SETBUF(S, EA, o), SETBUF(S, EH, o), R, S->sh.e_f, glu_act(S)) : ZP_OK;
}

zp_status x_expert_gelu(zp_exec_session *S, const zp_op *o)
{
    const size_t R = route_of(S, o)->R;
    return R ? S->nn->gelu_fwd(SETBUF(S, EA, o), SETBUF(S, EH, o), R * S->sh.e_f) : ZP_OK;
}

/* The rows back to the ranks they came from (the dispatch's counts reversed). */
zp_status x_a2a_combine(zp_exec_session *S, const zp_op *o)
{
    const route *r = route_of(S, o);
    return S->be->alltoallv(S->epc, BUF(S, MROWS, 0), r->rc, r->rd, SETBUF(S, RB, o), r->sc, r->sd, ZP_DT_F32);
}

/* proj (BT, C) = sum over each token's k copies of gate x row: partial over the MP ranks */
zp_status x_moe_combine(zp_exec_session *S, const zp_op *o)
{
    ZP_TRY(S->nn->moe_combine(BUF(S, PROJ, 0), SETBUF(S, RB, o), route_of(S, o)->slot_d, SETBUF(S, GATE, o), S->BT,
                              S->sh.k, S->C));
    S->pending = BUF(S, PROJ, 0);
    S->pending_n = S->BT * S->C;
    return ZP_OK;
}

/* ---- backward: dres holds d(block output) = d(MoE output) ---- */

/* d rows (BT k, C) = gate x dres of the token, into the send buffer with EP (sent back to the experts), the
 * experts' output gradient directly without; dgate (BT k) = dres . row */
static float *drow_back(const zp_exec_session *S) { return S->ep > 1 ? BUF(S, MSEND, 0) : BUF(S, MROWS, 0); }

zp_status x_moe_combine_bwd(zp_exec_session *S, const zp_op *o)
{
    return S->nn->moe_combine_bwd(drow_back(S), BUF(S, DGATE, 0), BUF(S, DRES, 0), SETBUF(S, RB, o),
                                  route_of(S, o)->slot_d, SETBUF(S, GATE, o), S->BT, S->sh.k, S->C);
}

zp_status x_a2a_combine_bwd(zp_exec_session *S, const zp_op *o)
{
    const route *r = route_of(S, o);
    return S->be->alltoallv(S->epc, BUF(S, MSEND, 0), r->sc, r->sd, BUF(S, MROWS, 0), r->rc, r->rd, ZP_DT_F32);
}

/* dea (rows, e_f) = deo (rows, C) . down_w_j (C, e_f) */
static zp_status seg_down_dgrad(zp_exec_session *S, const zp_op *o, size_t j, size_t r0, size_t n)
{
    const size_t C = S->C, f = S->sh.e_f;
    return zp_exec_gemm(S, 0, 0, n, f, C, 0.0f, BUF(S, MROWS, 0) + r0 * C, C, XW(S, o->layer, ZP_TENSORS_X_DOWNW, j), f,
                        BUF(S, DEA, 0) + r0 * f, f);
}

/* d down_w_j (C, e_f) += deo^T . ea */
static zp_status seg_down_wgrad(zp_exec_session *S, const zp_op *o, size_t j, size_t r0, size_t n)
{
    const size_t C = S->C, f = S->sh.e_f;
    return zp_exec_gemm(S, 1, 0, C, f, n, 1.0f, BUF(S, MROWS, 0) + r0 * C, C, SETBUF(S, EA, o) + r0 * f, f,
                        XG(S, o->layer, ZP_TENSORS_X_DOWNW, j), f);
}

/* The gradient of the experts' hidden rows: a gated MLP's own buffer, GeLU's in place */
static float *deh(const zp_exec_session *S) { return S->sh.gated ? BUF(S, DEH, 0) : BUF(S, DEA, 0); }
/* Where the dispatched rows' gradient goes: the working rows with EP (sent back), the send buffer without */
static float *dxd(const zp_exec_session *S) { return S->ep > 1 ? BUF(S, MROWS, 0) : BUF(S, MSEND, 0); }

/* dxd (rows, C) = deh (rows, e_up) . up_w_j (e_up, C): a partial sum over the MP ranks */
static zp_status seg_up_dgrad(zp_exec_session *S, const zp_op *o, size_t j, size_t r0, size_t n)
{
    const size_t C = S->C, u = S->sh.e_up;
    return zp_exec_gemm(S, 0, 0, n, C, u, 0.0f, deh(S) + r0 * u, u, XW(S, o->layer, ZP_TENSORS_X_UPW, j), C,
                        dxd(S) + r0 * C, C);
}

/* d up_w_j (e_up, C) += deh^T . xd */
static zp_status seg_up_wgrad(zp_exec_session *S, const zp_op *o, size_t j, size_t r0, size_t n)
{
    const size_t C = S->C, u = S->sh.e_up;
    return zp_exec_gemm(S, 1, 0, u, C, n, 1.0f, deh(S) + r0 * u, u, SETBUF(S, XD, o) + r0 * C, C,
                        XG(S, o->layer, ZP_TENSORS_X_UPW, j), C);
}

zp_status x_expert_down_dgrad(zp_exec_session *S, const zp_op *o) { return segments(S, o, seg_down_dgrad); }
zp_status x_expert_down_wgrad(zp_exec_session *S, const zp_op *o) { return segments(S, o, seg_down_wgrad); }
zp_status x_expert_up_dgrad(zp_exec_session *S, const zp_op *o) { return segments(S, o, seg_up_dgrad); }
zp_status x_expert_up_wgrad(zp_exec_session *S, const zp_op *o) { return segments(S, o, seg_up_wgrad); }

zp_status x_expert_glu_bwd(zp_exec_session *S, const zp_op *o)
{
    const size_t R = route_of(S, o)->R;
    return R ? S->nn->glu_bwd(BUF(S, DEH, 0), BUF(S, DEA, 0), SETBUF(S, EH, o), R, S->sh.e_f, glu_act(S)) : ZP_OK;
}

zp_status x_expert_gelu_bwd(zp_exec_session *S, const zp_op *o)
{
    const size_t R = route_of(S, o)->R;
    return R ? S->nn->gelu_bwd(BUF(S, DEA, 0), SETBUF(S, EH, o), R * S->sh.e_f) : ZP_OK;
}

zp_status x_a2a_dispatch_bwd(zp_exec_session *S, const zp_op *o)
{
    const route *r = route_of(S, o);
    return S->be->alltoallv(S->epc, BUF(S, MROWS, 0), r->rc, r->rd, BUF(S, MSEND, 0), r->sc, r->sd, ZP_DT_F32);
}

/* dln (BT, C) = the sum of each token's copies' gradients (a partial sum over the MP ranks) */
zp_status x_moe_permute_bwd(zp_exec_session *S, const zp_op *o)
{
    return S->nn->moe_combine(BUF(S, DLN, 0), BUF(S, MSEND, 0), route_of(S, o)->slot_d, NULL, S->BT, S->sh.k, S->C);
}

/* The gates' gradients summed over the MP ranks (each holds a partial of every expert row): the schedule's
 * router_dgate_allreduce, before the router's backward (MP > 1 only). */
zp_status x_router_dgate_allreduce(zp_exec_session *S, const zp_op *o)
{
    (void)o;
    return zp_exec_mp_allreduce(S, BUF(S, DGATE, 0), S->BT * S->sh.k, ZP_OP_SUM);
}

/* The gates' gradient (whole: summed over the MP ranks before) through the renormalization and the softmax:
 * with s the sum of the selected p, dp_e = (dgate_e - sum_i dgate_i gate_i) / s for a selected e (0
 * otherwise), dscore = p (dp - p . dp). On the host. */
zp_status x_topk_bwd(zp_exec_session *S, const zp_op *o)
{
    const size_t BT = S->BT, E = S->sh.E, K = S->sh.k;
    const route *r = route_of(S, o);
    float *p = S->route_h, *dg = malloc(BT * K * sizeof *dg), *dp = malloc(E * sizeof *dp);
    zp_status st = dg && dp ? ZP_OK : ZP_FAIL(ZP_ENOMEM, "out of memory");
    if (st == ZP_OK)
        st = S->be->copy_to_host(p, SETBUF(S, RPROB, o), BT * E * sizeof *p);
    if (st == ZP_OK)
        st = S->be->copy_to_host(dg, BUF(S, DGATE, 0), BT * K * sizeof *dg);
    for (size_t t = 0; st == ZP_OK && t < BT; t++) {
        float *x = p + t * E;
        const int *sel = r->sel + t * K;
        const float *g = r->gate + t * K, *d = dg + t * K;
        double s = 0, dot = 0;
        for (size_t i = 0; i < K; i++) {
            s += x[sel[i]];
            dot += (double)d[i] * g[i];
        }
        memset(dp, 0, E * sizeof *dp);
        for (size_t i = 0; i < K; i++)
            dp[sel[i]] = (float)((d[i] - dot) / s);
        double pdp = 0;
        for (size_t e = 0; e < E; e++)
            pdp += (double)x[e] * dp[e];
        for (size_t e = 0; e < E; e++)
            x[e] = (float)(x[e] * (dp[e] - pdp)); /* the scores' gradient, in place of p */
    }
    if (st == ZP_OK)
        st = S->be->copy_to_device(BUF(S, DRLOG, 0), p, BT * E * sizeof *p);
    free(dg);
    free(dp);
    return st;
}

/* dln += dscores (BT, E) . router_w (E, C), on MP rank 0 only (dln is then all-reduced over the MP group,
 * whose other ranks hold the experts' partial sums) */
zp_status x_router_dgrad(zp_exec_session *S, const zp_op *o)
{
    NEEDX(S, o->layer);
    if (S->mr == 0)
        ZP_TRY(zp_exec_gemm(S, 0, 0, S->BT, S->C, S->sh.E, 1.0f, BUF(S, DRLOG, 0), S->sh.E, router_w(S, o->layer),
                            S->C, BUF(S, DLN, 0), S->C));
    S->pending = BUF(S, DLN, 0);
    S->pending_n = S->BT * S->C;
    return ZP_OK;
}

/* drouter_w (E, C) += dscores^T . ln2 (the same on every MP rank: the router is replicated) */
zp_status x_router_wgrad(zp_exec_session *S, const zp_op *o)
{
    float *g = (S->plan.stage < 2 ? BUF(S, GRADS, 0) : BUF(S, GWORK, 0)) + zp_exec_item_lo(S, o->layer + 1) +
               S->b_off[ZP_TENSORS_B_ROUTER];
    return zp_exec_gemm(S, 1, 0, S->sh.E, S->C, S->BT, 1.0f, BUF(S, DRLOG, 0), S->sh.E, SETBUF(S, LN2, o), S->C, g,
                        S->C);
}
