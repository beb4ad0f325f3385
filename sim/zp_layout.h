/* zp_layout.h — whose memory a schedule's alloc and free ops describe (plan->impl), as strategy tables:
 *
 *  - "deepspeed": the DeepSpeed/Megatron-LM system the planner models, by the ZeRO paper's categories
 *    (Rajbhandari et al. SC'20 §5-6, Korthikanti et al. 2022 for activations): fp16 parameters and
 *    gradients, K bytes of optimizer state per parameter, checkpoints of 2sbh per block, the working
 *    activations of one block, logits, CB buckets or the fp32 fused buffer, stage 3's gathered
 *    parameters, and without MD a fragmentation reserve beside every short-lived allocation;
 *  - "zplan-exec": zplan's own executor (exec/), one alloc per tensor it holds, with its Megatron
 *    layout and data-parallel shards: the executor allocates by running these ops, so what it holds is
 *    what the schedule says.
 *
 * The hooks are called by the builder (sim/zp_schedule.c) at the points of the step where memory
 * changes. */
#ifndef ZP_LAYOUT_H
#define ZP_LAYOUT_H

#include <stddef.h>

#include "zp_model.h"
#include "zp_pipeline.h"
#include "zp_plan.h"
#include "zp_shard.h"

/* What a layout knows of a plan's parameters, per MP rank (and pipeline stage: groups of other stages are
 * 0). */
typedef struct {
    double *gather;     /* [L + 2] parameters a stage-3 gather of group i brings (0 the embedding, 1..L the
                           blocks, L+1 the tied embedding as the LM head) */
    double *grad;       /* [L + 2] parameters whose gradients group i completes in backward (0: the embedding
                           group, last; L+1: an untied LM head and the final norm, first; 0 when tied; with
                           pipeline stages, the last stage's final norm and head, with its own copy of a tied
                           word embedding, complete after the head's backward) */
    double *gather_exp; /* [L + 2] with EP > 1: the local experts' parameters of group i (an EDP gather); 0
                           otherwise (the experts are then in gather[]) */
    double *grad_exp;   /* [L + 2] ... and their gradients (reduced over the EDP group) */
    double psi_exp;     /* the sum of grad_exp[]: the routed experts' parameters one rank holds (EP > 1) */
    double psi;         /* parameters one MP rank (of its stage) holds before ZeRO partitions them: the sum of
                           grad[] and grad_exp[] */
    double psi_all;     /* the model's parameters over the MP degree (of the stage), which ZeRO partitions over
                           the DP ranks (psi_all / dp each); psi_all = psi without expert parallelism */
    /* the executor's flat layout (zplan-exec only) */
    size_t n;           /* flat parameters of one MP rank */
    size_t bucket;      /* elements per gradient bucket */
    size_t shard;       /* this rank's shard (its pieces of every unit, padded), elements */
    size_t max_piece;   /* the largest piece of a unit */
} zp_layout_facts;

struct zp_builder;
typedef struct {
    const char *name;
    int compute_only;          /* 1: the step's allocs and frees are all on the compute stream, so their
                                  program order is that stream's order whatever the others do */
    zp_status (*facts)(const zp_model *m, const zp_plan *p, const zp_pp_stage *st, zp_layout_facts *f);
    void (*setup)(struct zp_builder *b);                  /* resident allocations, before the first step */
    void (*block_begin)(struct zp_builder *b, int l);      /* the forward (not the recompute) of block l starts */
    void (*block_end)(struct zp_builder *b, int l);        /* ... ends: block l's checkpoint is stored */
    void (*block_done)(struct zp_builder *b, int l);       /* block l's backward is done */
    void (*logits)(struct zp_builder *b);                  /* the LM head is about to write the logits */
    void (*micro_end)(struct zp_builder *b);               /* the micro-batch's backward is done */
    void (*gather)(struct zp_builder *b, int s, int item); /* stage 3: group `item` is gathered next on stream s */
    void (*use)(struct zp_builder *b, int item);           /* stage 3: compute switches to group item (-1: none) */
} zp_layout;

const zp_layout *zp_layout_get(zp_impl impl);
/* Stage 3 under DeepSpeed: parameters of one MP rank gathered at once (elements): the block in use and
 * min(stage3_prefetch_bucket_size, a block) prefetched, at most stage3_max_live_parameters but never
 * less than the largest tensor (DeepSpeed gathers an nn.Linear whole), at most the rank's parameters. */
double zp_layout_stage3_live(const zp_model *m, const zp_plan *p);
void zp_layout_facts_free(zp_layout_facts *f); /* accepts NULL */

/* The executor's parameter tensors of one MP rank (Megatron: QKV and MLP-up column-split, projection and
 * MLP-down row-split, the vocabulary split, LayerNorms, row-parallel biases and wpe replicated), in the
 * order they sit in its flat layout: group 0 = the embedding group, then each block. Sizes in elements;
 * Cq = C/mp, Fl = F/mp, Vl = V/mp. */
enum { ZP_EXEC_E_WTE, ZP_EXEC_E_WPE, ZP_EXEC_E_LNFW, ZP_EXEC_E_LNFB, ZP_EXEC_E_N };
enum {
    ZP_EXEC_B_LN1W, ZP_EXEC_B_LN1B, ZP_EXEC_B_QKVW, ZP_EXEC_B_QKVB, ZP_EXEC_B_PROJW, ZP_EXEC_B_PROJB,
    ZP_EXEC_B_LN2W, ZP_EXEC_B_LN2B, ZP_EXEC_B_FCW, ZP_EXEC_B_FCB, ZP_EXEC_B_FCPW, ZP_EXEC_B_FCPB, ZP_EXEC_B_N
};
/* emb: wte (Vl, C), wpe (T, C), lnf_w (C), lnf_b (C); blk: ln1_w, ln1_b (C), qkv_w (3Cq, C), qkv_b (3Cq),
 * proj_w (C, Cq), proj_b (C), ln2_w, ln2_b (C), fc_w (Fl, C), fc_b (Fl), fcproj_w (C, Fl), fcproj_b (C). */
void zp_layout_exec_tensors(const zp_model *m, int64_t mp, size_t emb[ZP_EXEC_E_N], size_t blk[ZP_EXEC_B_N]);

/* Where a pipeline stage's groups sit in its flat layout (the whole model without pipeline stages): the
 * embedding group first on the first stage (and without stages), on top of the blocks on the last (its
 * gradient, the LM head's, completes first there: buckets go from the top), absent between; the stage's
 * blocks in order. In-flight micro-batches: a stage holds the activations of `slots` of them (1F1B: its
 * warm-up + 1), in copies indexed layer + L·slot. */
typedef struct {
    size_t esz, bsz;    /* the embedding group's and a block's elements (per MP rank) */
    size_t n;           /* the stage's flat parameters */
    int l0, nl;         /* its first block and how many */
    int emb;            /* 1: holds the embedding group */
    size_t emb_off;     /* its offset (0, or nl·bsz on the last of several stages) */
    size_t blk_off;     /* offset of block l0 */
    int slots;          /* micro-batches in flight */
} zp_exec_stage;

/* The layout of `stage` of the plan (one model chunk per stage: the executor runs no interleaving). */
zp_status zp_layout_exec_stage(const zp_model *m, const zp_plan *p, int stage, zp_exec_stage *out);

/* The units of the executor's flat layout of a stage (n = emb + L·blk elements without stages): cut at
 * every group boundary and at every bucket boundary from the top (buckets of `bucket` elements), each
 * split into plan->dp pieces; `rank`'s pieces (zp_shard.h). */
zp_status zp_layout_exec_units(const zp_model *m, const zp_plan *p, int stage, size_t bucket, int rank,
                               zp_units *out);

#endif
