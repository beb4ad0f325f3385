/* zp_schedule_impl.h — private to sim/: the schedule builder's state, shared by the step's structure
 * (zp_schedule.c) and the memory layouts that emit its alloc and free ops (zp_layout.c). */
#ifndef ZP_SCHEDULE_IMPL_H
#define ZP_SCHEDULE_IMPL_H

#include "zp_layout.h"
#include "zp_pipeline.h"
#include "zp_schedule.h"

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
} zp_builder;

/* Appends an op of kind `type` on stream `s` (the setup list when s < 0) with the builder's micro-batch,
 * phase and layer; NULL after a failure (recorded in b->st). */
zp_op *zp_builder_push(zp_builder *b, int s, int type);
/* An alloc (bytes > 0) or free of buffer `buf`, index `index`, in category `cat`, on stream `s`
 * (-1: setup). */
void zp_builder_mem(zp_builder *b, int s, int alloc, zp_buf buf, int index, zp_mem_cat cat, double bytes);

#endif
