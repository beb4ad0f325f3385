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
 * The interface a layout implements (zp_layout: its facts and hooks) is the builder's (sim/zp_builder.h):
 * the step's structure (sim/zp_schedule.c) calls the hooks at the points of the step where memory changes,
 * and they emit their ops through the builder. */
#ifndef ZP_LAYOUT_H
#define ZP_LAYOUT_H

#include <stddef.h>

#include "zp_builder.h"
#include "zp_model.h"
#include "zp_pipeline.h"
#include "zp_plan.h"
#include "zp_shard.h"

/* The layout of plan->impl, NULL for an unknown one. */
const zp_layout *zp_layout_get(zp_impl impl);
/* Stage 3 under DeepSpeed: parameters of one MP rank gathered at once (elements): the block in use and
 * min(stage3_prefetch_bucket_size, a block) prefetched, at most stage3_max_live_parameters but never
 * less than the largest tensor (DeepSpeed gathers an nn.Linear whole), at most the rank's parameters. */
double zp_layout_stage3_live(const zp_model *m, const zp_plan *p);
void zp_layout_facts_free(zp_layout_facts *f); /* accepts NULL */

#endif
