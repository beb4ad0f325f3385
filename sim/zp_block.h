/* zp_block.h — private to sim/: one transformer block's ops as one MP rank runs them, emitted on the
 * builder's streams (zp_emit.h) for block b->layer: attention (CP's K/V exchange beside it), the MLP or the
 * MoE layer (router, the EP all-to-alls, the routed and the shared experts), its forward, its backward, and
 * what selective and op-level recompute run again before its backward; and the LM head. The step around
 * them (passes, pipeline, gradients, optimizer) is zp_schedule.c's. */
#ifndef ZP_BLOCK_H
#define ZP_BLOCK_H

#include "zp_builder.h"

/* Block b->layer's forward (also its full recompute) and its backward. */
void zp_block_forward(zp_builder *b);
void zp_block_backward(zp_builder *b);
/* Before its backward: Megatron-core's selective recompute of zp_plan_rc_modules, or torchtitan's op-level
 * recompute (zp_model_op_sac). */
void zp_block_recompute_modules(zp_builder *b);
void zp_block_recompute_op(zp_builder *b);
/* The EP all-to-alls of this pass the compute stream has not waited for, waited for (EP overlap). */
void zp_block_ep_drain(zp_builder *b);
/* The LM head on T tokens, forward or backward (`norm`: its final norm first; `main`: the main head, whose
 * logits the layout keeps); an MTP module's eh_proj (2h -> h) and TP's gather of its output. */
void zp_block_lm_head(zp_builder *b, double T, int backward, int norm, int main);
void zp_block_mtp_proj(zp_builder *b, double T);

#endif
