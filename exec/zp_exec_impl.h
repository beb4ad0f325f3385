/* zp_exec_impl.h — private to exec/: one rank's session and the executor's parts, one job each:
 *   zp_exec_mem.c      the tracking allocator (the schedule's alloc and free ops land here)
 *   zp_exec_session.c  configuration, the layout of the parameters, the session's start and end
 *   zp_exec_ops.c      the small operations every part uses (GEMM, MP all-reduce, where a group sits)
 *   zp_exec_model.c    the layers: the model's forward and backward, op by op (reads like the model)
 *   zp_exec_zero.c     ZeRO: gradient buckets, parameter gathers, the optimizer and ZeRO-Offload
 *   zp_exec_moe.c      the routed experts (MoE): routing, the token exchange, the experts' layout
 *   zp_exec_pipe.c     pipeline parallelism: activations and gradients between stages, the tied embedding
 *   zp_exec_cp.c       context parallelism: each sequence's slices, K and V gathered, the attention over them
 *   zp_exec_cp_ring.c  its ring form: K and V passed round, merged by online softmax
 *   zp_exec_cp_rows.c  what both forms share: a slice's global positions, K and V columns copied out and back
 *   zp_exec_run.c      the op table, the interpreter of the schedule, steps and their measurement
 *
 * Layout of one MP rank's parameters (flat, fp32): group 0 = the embedding group, then group 1+l =
 * block l, each tensor where zp_tensors_shape_get puts it (vocab/zp_tensors.h); with pipeline stages the
 * stage's blocks, and the embedding group first on the first stage and on top on the last
 * (zp_tensors_stage_get). Gradient buckets are
 * filled from the top of this layout down, in the order backward completes them (the last block first,
 * the tied embedding last).
 *
 * Who calls whom, one way: run -> session and the parts (the op table); session -> mem, moe, pipe and cp
 * (their open and close); the parts (model, zero, moe, pipe) -> ops; ops and mem call no other file. */
#ifndef ZP_EXEC_IMPL_H
#define ZP_EXEC_IMPL_H

#include "zp_exec.h"
#include "zp_memory.h"
#include "zp_nn.h"
#include "zp_shard.h"
#include "zp_tensors.h"

/* ---- the tracking allocator ---- */
typedef struct {
    void *p;
    size_t bytes; /* requested */
    size_t cap;   /* allocated, bytes (multiple of 64) */
    int cat;
} zp_exec_blk;

enum { ZP_EXEC_MEM_CACHE = 16 };

typedef struct {
    const zp_kernels_backend *be;
    zp_memcount count;                          /* live bytes by category: the replay's accounting */
    zp_exec_blk *live;
    size_t nlive, cap_live;
    zp_exec_blk cache[ZP_EXEC_MEM_CACHE];      /* freed blocks kept for reuse; p == NULL: empty */
} zp_exec_mem;

/* A block of `bytes` in category `cat` (host memory for ZP_MEM_HOST), zeroed when `zero`; NULL when the
 * backend has no memory left. */
void *zp_exec_mem_alloc(zp_exec_mem *t, zp_mem_cat cat, size_t bytes, int zero);
void zp_exec_mem_free(zp_exec_mem *t, void *p); /* accepts NULL */
void zp_exec_mem_release(zp_exec_mem *t);      /* returns the cache and anything live to the backend */

/* ---- the session ---- */
typedef struct {
    double part[ZP_NPARTS];   /* seconds per step-time part */
    double phase[ZP_NPHASES];
    double kind[ZP_NOPK];     /* by the op's kind (zp_ops.def's row) */
    int kind_n[ZP_NOPK];      /* ops of the kind run */
} zp_exec_times;

struct zp_exec_session {
    zp_exec_config cfg;
    zp_model m;
    zp_plan plan;                     /* impl = ZP_IMPL_EXEC, fp32 (param_bytes 4, k_optimizer 8) */
    const zp_kernels_backend *be;
    const zp_nn_ops *nn;              /* the layer kernels of the same backend */
    zp_comm *world, *mpc, *dpc;
    int rank, nranks, mr, dr, mp, dp;
    int pp, pr;                       /* pipeline stages, this rank's (world rank = (pr·dp + dr)·mp + mr) */
    zp_tensors_stage xs;              /* its layout: groups, blocks, micro-batches in flight */
    int next_rank, prev_rank;         /* the world ranks of this (dp, mp) place on the next and previous stage */
    zp_comm *embc;                    /* the first and last stage of this place (the tied embedding), or NULL */
    float *pp_slice;                  /* (BT C / mp) a received slice on its way to the MP all-gather (backend) */
    float *pp_dest;                   /* the tensor the last receive fills (its all-gather completes it) */
    struct zp_exec_sends *sends;      /* sends not yet known to be delivered (zp_exec_pipe.c) */

    zp_tensors_shape sh;              /* the model's shapes on this MP rank (vocab/zp_tensors.h) */
    size_t L, C, NH, T, V, F, Cq, Fl, Vl, NHl, hd, B, BT, GA;
                                      /* Cq: this rank's Q width (heads/mp x head size; C/mp for GPT);
                                         T the sequence, BT = B Tl the tokens this rank holds */
    size_t Tl;                        /* tokens of each sequence on this rank: T, or T/cp (its CP slice) */
    size_t KVl, kvn, qkvn, up;        /* this rank's KV heads, K (= V) width, QKV width, fc_w rows */
    long v0;                          /* first vocabulary row of this MP rank */
    size_t esz, hsz, bsz, N;          /* embedding group, untied head group, block, total (flat) */
    size_t e_off[ZP_TENSORS_E_N + 1], b_off[ZP_TENSORS_B_N + 1];
    /* the routed experts (MoE): their own flat layout, reduced and partitioned over the EDP group */
    size_t xsz, NX, x_off[ZP_TENSORS_X_N + 1];
    int ep, er, edp, edr;             /* EP degree, this rank's place in its EP group, EDP degree and place */
    zp_comm *epc, *edpc;              /* the EP group (token exchange) and the EDP group (expert gradients) */
    zp_units xunits;                  /* this rank's pieces of the experts' units */
    struct zp_exec_route *route;      /* per activation set: the routing of its tokens (zp_exec_moe.c) */
    int nroute;
    float *route_h;                   /* (BT, E) host staging of the router's scores */
    int bucket_xk, gather_xk;
    /* context parallelism (cp > 1): this rank is CP rank cr of the cp DP ranks that share each sequence */
    int cp, cr;
    zp_comm *cpc;                     /* its CP group (NULL without CP) */
    int *qpos;                        /* (Tl) host: the global position of each local token of a sequence */
    int *kpos;                        /* (cp Tl) host: the global position of each gathered key column */

    zp_schedule sched;                /* the step (and the setup that allocates every tensor) */
    zp_units units;                   /* this rank's pieces of the units of the flat layout */
    size_t bucket;                    /* elements per gradient bucket */
    size_t ck_len;                    /* floats per stored checkpoint (this rank's Pa partition with Pa) */

    zp_exec_mem mem;
    void **slot[ZP_NBUF];             /* the schedule's buffers: slot[buf][index], NULL when not allocated */

    int *tok;                         /* (GA, B*(T+1)) host: this DP rank's token sequences of the step */
    int *tok_h, *tok_d;               /* (2 BT) inputs | targets of one micro-batch: host staging, backend */
    int tok_micro;                    /* micro-batch whose tokens tok_d holds, -1 none */

    /* per step */
    double loss_sum;
    float *pending;                   /* partial sums the next mp_allreduce reduces */
    size_t pending_n;
    int bucket_k, gather_k, d2h_k;
    zp_exec_times t;
    int step;
};

/* The schedule's buffer `id` (a ZP_BUF_ suffix), index i, as floats. */
#define BUF(S, id, i) ((float *)(S)->slot[ZP_BUF_##id][(i)])

/* An executor function per op kind (the second column of sim/zp_ops.def). */
typedef zp_status (*zp_exec_fn)(zp_exec_session *S, const zp_op *o);

/* ---- the small operations every part uses (zp_exec_ops.c) ---- */
/* Parameters of group `item` this rank computes with (stages 0-2: its slice of the flat parameters;
 * stage 3: the gathered copy); NULL when a stage-3 group is not gathered. */
float *zp_exec_group(const zp_exec_session *S, int item);
/* Offset of group `item` in the flat layout (0 and L+1: the embedding group). */
size_t zp_exec_item_lo(const zp_exec_session *S, int item);
size_t zp_exec_item_len(const zp_exec_session *S, int item);
/* Which copy of the in-flight activations micro-batch `micro` uses (0 without pipeline stages). */
int zp_exec_slot(const zp_exec_session *S, int micro);
/* Block l's stored checkpoint for micro-batch `micro` (this rank's Pa partition with Pa). */
float *zp_exec_ckpt(const zp_exec_session *S, int l, int micro);
zp_status zp_exec_gemm(const zp_exec_session *S, int ta, int tb, size_t m, size_t n, size_t k, float beta,
                       const float *a, size_t lda, const float *b, size_t ldb, float *c, size_t ldc);
/* `batch` fp32 GEMMs of one shape on a[i], b[i], c[i] (the backend's gemm_batched: one launch on cuda) */
zp_status zp_exec_gemm_batched(const zp_exec_session *S, int ta, int tb, size_t m, size_t n, size_t k, float beta,
                               size_t lda, size_t ldb, size_t ldc, int batch, const float *const *a,
                               const float *const *b, float *const *c);
zp_status zp_exec_mp_allreduce(zp_exec_session *S, float *x, size_t n, zp_redop op);

/* ---- the parts ---- */
/* Pipeline sends still in flight are completed (the end of a step); zp_exec_pipe.c. */
zp_status zp_exec_pipe_flush(zp_exec_session *S);
void zp_exec_pipe_free(zp_exec_session *S);
/* The routed experts' flat layout: block l's local experts (stage 3: the gathered copy, NULL when not
 * gathered), and their gradient; zp_exec_moe.c. */
float *zp_exec_xgroup(const zp_exec_session *S, int l);
float *zp_exec_xgrad(const zp_exec_session *S, int l);
/* The routing of every activation set, allocated once (zp_exec_moe.c). */
zp_status zp_exec_moe_open(zp_exec_session *S);
void zp_exec_moe_close(zp_exec_session *S);
/* Context parallelism (zp_exec_cp.c): the slices' positions, opened and closed with the session; the
 * attention of a block over the gathered K and V (the same GEMM steps as without CP, `which` a
 * ZP_EXEC_ATT_ step), its softmax; the rotary turn and learned positions by position. */
zp_status zp_exec_cp_open(zp_exec_session *S);
void zp_exec_cp_close(zp_exec_session *S);
/* (zp_exec_cp_rows.c) The global position of local token i of a sequence on CP rank r (Megatron-core's causal load balancing:
 * the sequence in 2 cp chunks, rank r holding chunks r and 2 cp - 1 - r). */
int zp_exec_cp_pos(size_t T, int cp, int r, size_t i);
enum { ZP_EXEC_ATT_SCORES, ZP_EXEC_ATT_CONTEXT, ZP_EXEC_ATT_CTX_DGRAD, ZP_EXEC_ATT_CTX_WGRAD,
       ZP_EXEC_ATT_SCORES_DGRAD, ZP_EXEC_ATT_SCORES_WGRAD };
zp_status zp_exec_cp_attention(zp_exec_session *S, int set, int which);
zp_status zp_exec_cp_softmax(zp_exec_session *S, int set, int backward);
/* The K | V columns (2 kvn wide) of the BT rows of qkv (ld qkvn) copied to (to_kv) or from the rows kv. */
zp_status zp_exec_cp_kv_rows(const zp_exec_session *S, float *qkv, float *kv, int to_kv);
/* The ring form (zp_exec_cp_ring.c; --cp-comm ring): whether this session runs it, and a block's whole ring
 * attention, forward (its output and rows' log-sum-exp) or backward (dQ, and this rank's dK and dV). */
int zp_exec_cp_ring(const zp_exec_session *S);
zp_status zp_exec_cp_ring_attention(zp_exec_session *S, int set, int backward);
/* This DP rank's token sequences of step `step` into S->tok (host). */
void zp_exec_tokens(zp_exec_session *S, int step);

/* The executor functions, by file (their rows: sim/zp_ops.def). */
#define ZP_OP(id, exec, ...) zp_status exec(zp_exec_session *S, const zp_op *o);
#include "zp_ops.def"
#undef ZP_OP

#endif
