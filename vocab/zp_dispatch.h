/* zp_dispatch.h — an MoE block's token dispatchers as data: how the tokens reach the ranks that hold their
 * experts over the EP group, and come back (a row per dispatcher, as zp_fp8.h's recipes). What a dispatcher
 * moves per token depends on where the token's top_k experts sit: zp_dispatch_spread gives the expected
 * nodes and ranks a token reaches under the model's routing (group-limited or not). The simulator turns
 * that into bytes on NVLink and on the rails (sim/zp_collcost.c); this table only says what each does. */
#ifndef ZP_DISPATCH_H
#define ZP_DISPATCH_H

#include <stdint.h>

#include "zp_model.h"
#include "zp_status.h"

typedef enum {
    ZP_DISPATCH_ALLTOALL = 0, /* Megatron-core's MoEAlltoAllTokenDispatcher (the default) */
    ZP_DISPATCH_DEEPEP,       /* Megatron-core's flex dispatcher on DeepEP */
    ZP_DISPATCH_DEEPEP_FP8,   /* DeepSeek-V3's: DeepEP, the tokens sent to the experts in FP8 */
    ZP_DISPATCH_ALLGATHER,    /* Megatron-core's MoEAllGatherTokenDispatcher (its default when none is given) */
    ZP_NDISPATCH
} zp_dispatch_kind;

typedef struct {
    const char *name;     /* --moe-dispatcher value */
    const char *megatron; /* Megatron-core's --moe-token-dispatcher-type for it; NULL: not Megatron's */
    int deepep;           /* ... with --moe-enable-deepep */
    int dedup;            /* a token crosses to a node once and, inside it, to a GPU once, whatever its experts
                             there (DeepEP: RDMA to the same-rail GPU of each node, then NVLink to each GPU that
                             holds one of its experts); the combine sums a token's outputs in a GPU and a node
                             before they cross back. 0: one copy per (token, expert), each sent directly */
    int gather;           /* every rank all-gathers the EP group's tokens, keeps those its experts take, and
                             reduce-scatters the experts' outputs back: each rank receives the (EP - 1) other
                             ranks' tokens whole, whatever their routing (and the gradients the reverse) */
    int fp8_out;          /* the tokens toward the experts (dispatch, and the combine's gradient in backward) in
                             FP8 with an FP32 scale per 1x128 block: 1 + 4/128 bytes an element; back in bf16 */
} zp_dispatch_info;

/* The row (NULL out of range). */
const zp_dispatch_info *zp_dispatch_get(int kind);
/* A dispatcher by its --moe-dispatcher name (case-insensitive); ZP_EINVAL naming the dispatchers. */
zp_status zp_dispatch_parse(const char *name, int *out);
/* "alltoall, allgather, deepep, deepep-fp8": for messages and --help. */
const char *zp_dispatch_names(void);
/* Bytes an element of hidden state takes toward the experts (dir 0: dispatch forward, combine backward)
 * or back from them (dir 1), under dispatcher `kind`: 2 (bf16), or FP8 with its scales. */
double zp_dispatch_elt_bytes(int kind, int dir);

/* Device memory a dispatcher's communication buffers hold per GPU over an EP group of `ep` ranks, hidden
 * size `hidden`, bytes: DeepEP's NVLink and RDMA buffers as Megatron-core sizes them (fused_a2a.py get_buffer:
 * the larger of DeepEP's dispatch and combine configurations' size hints), 0 for the others (the all-gather
 * dispatcher's buffer depends on the tokens: zp_block_shape.a2a_bytes). */
double zp_dispatch_buffer_bytes(int kind, int64_t ep, int64_t hidden);

/* The expected number of `units` (equal blocks of consecutive experts: an EP group's ranks or its nodes;
 * units divides the experts) that one token's top_k experts fall in, the token's groups (route_topk of
 * route_groups) and its experts in them taken uniformly: even routing, as zplan assumes elsewhere
 * (--moe-imbalance aside). A model without group-limited routing: its top_k of all experts. */
double zp_dispatch_spread(const zp_model *m, int64_t units);
/* What dispatcher `kind` sends of a token's top_k copies to `units` (as zp_dispatch_spread), per copy: its
 * spread over top_k where a token goes to a unit once (dedup), 1 where each copy goes on its own. */
double zp_dispatch_share(const zp_model *m, int kind, int64_t units);

#endif
