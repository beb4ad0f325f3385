/* zp_builder.h — private to sim/: the schedule builder, shared by the step's structure (zp_schedule.c, a
 * block's ops from zp_block.c, each op from zp_emit.c) and the memory layouts (zp_layout.c) that emit its
 * alloc and free ops: the interface a layout implements (its facts of a plan's parameters, its hooks), the
 * builder's state (the op lists being built, where in the step it is) and its appending functions
 * (zp_builder.c). It knows neither the step's structure nor any layout: zp_schedule.c -> zp_layout.c ->
 * zp_builder.c, and zp_schedule.c -> zp_block.c -> zp_emit.c -> zp_builder.c. */
#ifndef ZP_BUILDER_H
#define ZP_BUILDER_H

#include <stddef.h>

#include "zp_model.h"
#include "zp_ops.h"
#include "zp_pipeline.h"
#include "zp_plan.h"

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
    size_t nx, xshard, xmax_piece; /* the routed experts' flat layout: elements, shard, largest piece */
} zp_layout_facts;

struct zp_builder;
/* A memory layout: the facts it knows of a plan's parameters, and its hooks, which the step's structure
 * (zp_schedule.c) calls at the points of the step where memory changes (they emit alloc and free ops
 * with zp_builder_mem). The layouts are zp_layout.c's (zp_layout_get). */
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

typedef struct {
    zp_op *v;
    int n, cap;
} zp_opvec;

typedef struct zp_builder {
    const zp_model *m;
    const zp_plan *p;
    const zp_layout *lay;
    zp_layout_facts f;         /* parameter groups and (executor) shard sizes of this plan */
    zp_opvec s[ZP_NSTREAMS];
    zp_opvec setup;
    zp_status st;
    int memory_only;
    int collapse;              /* memory-only with a layout whose step memory is all on the compute stream:
                                  channels are left out (they cannot reorder compute-stream ops) and the
                                  blocks, all alike, are built once standing for all of them (`repeat`) */
    double repeat;             /* blocks the current one stands for (1 unless collapsed) */
    double flops;
    int micro;
    zp_phase phase;
    int layer;
    int item;                  /* the parameter group the compute stream uses (stage 3), -1 none */
    char *live;                /* [L + 2] stage-3 groups gathered and not yet freed (the executor's layout) */
    zp_pp_stage pps;           /* the pipeline stage this schedule is of (the whole model without PP) */
    int pass_head;             /* the current pass runs the LM head (its logits live until its backward ends) */
    int work_live;             /* the deepspeed layout's one-block working set is allocated */
    int reduced_pending;       /* REDUCED tokens the compute stream has not waited for yet */
    int flush_pending;         /* buckets whose reduction waits for the pipeline flush (passes_end) */
    int last_buckets;          /* buckets closed in the passes of the last micro-batch (offload copies them) */
    double tp_ag;              /* TP overlap: bytes of a sequence-parallel all-gather waiting for the GEMM that
                                  consumes it (0: none; zp_emit.c's zp_emit_mp_gather) */
    int pg_left;               /* overlap_param_gather: gathered buckets the first forward has not waited for */
    double pg_bucket;          /* ... their parameters each */
    double pg_asked, pg_ready; /* ... parameters the first forward has reached, and those waited for */
    int ep_async;              /* EP overlap: this pass is paired with another micro-batch's (zp_schedule.c) */
    int ep_pending;            /* ... all-to-alls on the EP stream the compute stream has not waited for */
    int p2p_async;             /* this pass's send leaves the compute stream at once (zp_plan.overlap_p2p_comm:
                                  p2p_nowait, zp_schedule.c) */
} zp_builder;

/* Appends an op of kind `type` on stream `s` (the setup list when s < 0) with the builder's micro-batch,
 * phase and layer; NULL after a failure (recorded in b->st). */
zp_op *zp_builder_push(zp_builder *b, int s, int type);
/* An alloc (bytes > 0) or free of buffer `buf`, index `index`, in category `cat`, on stream `s`
 * (-1: setup). */
void zp_builder_mem(zp_builder *b, int s, int alloc, zp_buf buf, int index, zp_mem_cat cat, double bytes);

#endif
