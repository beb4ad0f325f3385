/* zp_tensors.h — the tensors each rank of a plan holds when zplan's executor (exec/) runs it: their
 * shapes per MP rank, where they sit in the flat layout of a pipeline stage, and the units that layout is
 * cut into for the data-parallel shards. The executor computes with them, and the simulator's memory layout
 * of the executor (plan->impl ZP_IMPL_EXEC, "zplan-exec") allocates exactly these in the schedule it builds,
 * which the executor runs. */
#ifndef ZP_TENSORS_H
#define ZP_TENSORS_H

#include <stddef.h>

#include "zp_model.h"
#include "zp_plan.h"
#include "zp_shard.h"

/* The executor's parameter tensors of one MP rank (Megatron: QKV and MLP-up column-split, projection and
 * MLP-down row-split, the vocabulary split, norms, row-parallel biases, wpe and the router replicated), in
 * the order they sit in its flat layout, sized from the model description's block shape (vocab/zp_shape.h):
 * a tensor the architecture does not have (a bias of a bias-less linear, LayerNorm's bias under RMSNorm,
 * wpe under rotary positions, an untied head's weight when tied) has 0 elements.
 *  - the embedding group: wte (Vl, C), wpe (T, C); tied, also lnf_w, lnf_b (C): the LM head is wte;
 *  - untied, the head group (its own, group L + 1, on top of the blocks): lnf_w, lnf_b (C), lm_w (Vl, C);
 *  - a block: ln1_w, ln1_b (C), qkv_w (q_n + 2 kv_n, C) with rows [Q heads | K heads | V heads] of this
 *    rank, qkv_b, proj_w (C, q_n), proj_b (C), ln2_w, ln2_b (C), fc_w (up, C) (gated: rows [gate | up],
 *    up = 2 Fl), fc_b (up), fcproj_w (C, Fl), fcproj_b (C), router_w (E, C) (an MoE block: its MLP is the
 *    routed experts, fc_* are 0);
 *  - the routed experts of an MoE block (a flat layout of their own, reduced and partitioned over the EDP
 *    group): up_w (e_local, e_up, C) (gated: [gate | up] rows), down_w (e_local, C, e_f).
 * Widths per MP rank: q_n = heads/mp x head_dim, kv_n = kv_heads/mp x head_dim, Fl = F/mp, e_f = F_e/mp. */
enum { ZP_TENSORS_E_WTE, ZP_TENSORS_E_WPE, ZP_TENSORS_E_LNFW, ZP_TENSORS_E_LNFB, ZP_TENSORS_E_LMW, ZP_TENSORS_E_N };
enum {
    ZP_TENSORS_B_LN1W, ZP_TENSORS_B_LN1B, ZP_TENSORS_B_QKVW, ZP_TENSORS_B_QKVB, ZP_TENSORS_B_PROJW, ZP_TENSORS_B_PROJB,
    ZP_TENSORS_B_LN2W, ZP_TENSORS_B_LN2B, ZP_TENSORS_B_FCW, ZP_TENSORS_B_FCB, ZP_TENSORS_B_FCPW, ZP_TENSORS_B_FCPB,
    ZP_TENSORS_B_ROUTER, ZP_TENSORS_B_N
};
enum { ZP_TENSORS_X_UPW, ZP_TENSORS_X_DOWNW, ZP_TENSORS_X_N };

/* The shapes the executor runs a model with on one MP rank (of plan p), and its tensors' sizes. */
typedef struct {
    int rms, rotary, gated, untied, moe, act; /* RMSNorm, rotary positions, gated MLP, untied head, MoE, zp_activation */
    size_t C, T, V, Vl, F, Fl, up;          /* hidden, sequence, vocabulary (this rank's rows), MLP inner, fc_w rows */
    size_t NH, NHl, KV, kvh, hd;            /* query heads (this rank's), KV heads (this rank's), head size */
    size_t q_n, kv_n, qkv_n;                /* Q width, K (= V) width, fused QKV width on this rank */
    size_t E, k, ep, e_local, e_f, e_up, F_e; /* experts, top-k, EP degree, local experts, widths (per MP rank) */
    size_t emb[ZP_TENSORS_E_N], blk[ZP_TENSORS_B_N], xp[ZP_TENSORS_X_N];
} zp_tensors_shape;

/* Whether the executor runs `m` under `p`: ZP_OK, or ZP_EUNSUPPORTED / ZP_EINVAL naming the option or the
 * architecture it does not run (MLA, shared experts, MoE blocks beside dense ones, parallel blocks, ALiBi,
 * an MP degree not dividing the KV heads or the widths, EP not dividing the experts, ...). */
zp_status zp_tensors_check(const zp_model *m, const zp_plan *p);
/* The shape of `m` under `p` for the executor (widths divided as integers: checked by the above). */
zp_status zp_tensors_shape_get(const zp_model *m, const zp_plan *p, zp_tensors_shape *out);

/* Where a pipeline stage's groups sit in its flat layout (the whole model without pipeline stages): the
 * embedding group first on the first stage (and without stages), on top of the blocks on the last when the
 * head is tied (its gradient, the LM head's, completes first there: buckets go from the top), absent
 * between; the stage's blocks in order; an untied head group on top on the last stage. In-flight
 * micro-batches: a stage holds the activations of `slots` of them (1F1B: its warm-up + 1), in copies
 * indexed layer + L·slot. The routed experts' flat layout holds the stage's MoE blocks' local experts,
 * xsz each, in block order. */
typedef struct {
    size_t esz, bsz;    /* the embedding group's and a block's elements (per MP rank) */
    size_t hsz;         /* an untied head group's (0 when tied: the embedding group is the head) */
    size_t n;           /* the stage's flat parameters */
    int l0, nl;         /* its first block and how many */
    int emb;            /* 1: holds the embedding group */
    int head;           /* 1: holds the untied head group */
    size_t emb_off;     /* its offset (0, or nl·bsz on the last of several stages) */
    size_t blk_off;     /* offset of block l0 */
    size_t head_off;    /* offset of the head group */
    int slots;          /* micro-batches in flight */
    size_t xsz, nx;     /* the local experts' elements of one MoE block, of the stage */
} zp_tensors_stage;

/* The layout of `stage` of the plan (one model chunk per stage: the executor runs no interleaving). */
zp_status zp_tensors_stage_get(const zp_model *m, const zp_plan *p, int stage, zp_tensors_stage *out);

/* The units of the executor's flat layout of a stage (n = emb + L·blk elements without stages): cut at
 * every group boundary and at every bucket boundary from the top (buckets of `bucket` elements), each
 * split into plan->dp pieces; `rank`'s pieces (zp_shard.h). */
zp_status zp_tensors_units(const zp_model *m, const zp_plan *p, int stage, size_t bucket, int rank, zp_units *out);
/* The same for the routed experts' flat layout: cut at every block and bucket boundary, each unit split
 * into dp / ep pieces (the EDP group); `rank` is the rank in that group. */
zp_status zp_tensors_units_exp(const zp_model *m, const zp_plan *p, int stage, size_t bucket, int rank,
                               zp_units *out);

#endif
