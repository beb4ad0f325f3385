/* zp_shape.h — the per-rank shapes of one block under a plan: what each GEMM of the block multiplies on
 * one MP rank, read from the model description (models/zp_model.h) as Megatron-LM splits it:
 *  - attention: query heads a/t per rank; key/value heads kv/t per rank when t divides kv, else (t a
 *    multiple of kv) each rank holds one KV head, replicated on t/kv ranks (Megatron-LM's GQA); the output
 *    projection row-split over the local heads' V width; MLA (DeepSeek): the down-projections (q_a, kv_a)
 *    whole on every rank, the up-projections (q_b, kv_b) split by heads;
 *  - MLP: up (and gate: two matrices) column-split, down row-split, a dense block's f/t or, in an MoE block,
 *    each routed expert's f_e/t (expert tensor parallelism = MP, Megatron-core's default) and the shared
 *    experts' together as one dense MLP;
 *  - MoE: the router (h -> E) whole on every rank; experts sharded over the plan's EP degree (E/ep local
 *    experts); a rank's T tokens each go to top_k experts, so after the dispatch all-to-all the busiest rank
 *    runs T·k·cf·λ token-expert rows (cf the capacity factor, λ the load imbalance) over its local experts.
 * Legal splits: t divides the query heads and t and kv divide one another (zp_shape_check). */
#ifndef ZP_SHAPE_H
#define ZP_SHAPE_H

#include "zp_model.h"
#include "zp_plan.h"

typedef struct {
    int moe, mla, gated, rms, rotary, parallel, one_norm;
    double B, s, T, t;        /* sequences, sequence length, tokens B·s of the micro-batch, MP degree */
    double h;                 /* hidden */
    double qh, kvh;           /* query and key/value heads on this rank */
    double dqk, dv;           /* per-head Q/K width and V width */
    double bh;                /* attention's batched GEMMs: sequences x this rank's query heads, B·a/t, times
                                 the slices a sequence is split into (each slice's keys a block) */
    double q_n, kv_n;         /* this rank's Q projection width (qh·dqk) and K+V width (kvh·(dqk + dv)) */
    double qkv_n;             /* the fused projection's width on this rank: q_n + kv_n (3h/t for GPT) */
    double rope_n;            /* elements per token the rotary embedding turns: Q and K heads' rotary part */
    double o_k;               /* the output projection's input width on this rank: qh·dv */
    double q_rank, kv_rank, rope; /* MLA: the query and key/value latents, the shared rotary key width */
    double f;                 /* MLP inner width on this rank (dense block, or the shared experts of an MoE one) */
    /* MoE */
    double E, k, e_local;     /* routed experts, experts per token, experts on this rank (E/ep) */
    double e_f;               /* one routed expert's inner width on this rank */
    double e_rows;            /* token-expert rows the busiest rank runs per local expert */
    double a2a_bytes[2];      /* bytes of the token copies a rank hands one all-to-all (its T·k·cf copies of
                                 h): [0] toward the experts (dispatch, the combine's gradient), [1] back from
                                 them (combine, the dispatch's gradient); bf16, or FP8 with its scales toward
                                 the experts under deepep-fp8 (zp_dispatch_elt_bytes). What crosses which link
                                 is the dispatcher's (zp_dispatch.h, sim/zp_collcost.c) */
} zp_block_shape;

/* Parameters of block i: all of them and those of its routed experts (every expert), whole-model counts.
 * A function of the block's kind alone (zp_model_block_is_moe: dense or MoE), which the memory layout relies
 * on to sum each kind once a stage (tests/unit/test_memory.c: block_params_are_their_kinds). */
void zp_shape_block_params(const zp_model *m, int64_t i, double *all, double *experts);
/* Parameters of one MP rank under plan p: `held`, what it holds before ZeRO partitions anything (the
 * routed experts 1/ep of them), and `partitioned`, the model's parameters over the MP degree, which
 * ZeRO spreads over the DP ranks (dense over DP, experts over the dp/ep ranks holding the same experts:
 * either way partitioned / dp on each rank). Equal without EP. */
void zp_shape_params(const zp_model *m, const zp_plan *p, double *held, double *partitioned);
/* The multi-token prediction modules' parameters (zp_model_params_mtp: their blocks, projections and norms),
 * whole-model counts, and those of their blocks' routed experts; on the last pipeline stage beside the head. */
void zp_shape_mtp_params(const zp_model *m, double *all, double *experts);

/* The shape of block `block` (0-based) of `m` under plan `p`; `m` as one rank runs it (with context
 * parallelism, its slice of each sequence: sim/zp_schedule.c's build). */
void zp_shape_block(const zp_model *m, const zp_plan *p, int64_t block, zp_block_shape *out);

#endif
