/* zp_nearmiss.h — what to change when no plan fits (issue #18): for the plan nearest to fitting, the
 * largest micro-batch, sequence and model of the same shape that fit as given; and the changes of one
 * option (stage, MP, offload, Pa, micro-batch, batch, checkpointing, more GPUs) that make a plan fit,
 * each with the best plan it gives. Also the largest model of a shape that any plan fits (--max-model).
 *
 * Every change is a search with that option opened (planner/zp_search.h): first the memory test alone
 * (analytic, no simulation), then, for the changes that fit, the simulation of a few of their best plans
 * when the request simulates, so that the figures shown are the search's own (simulated or a bound). */
#ifndef ZP_NEARMISS_H
#define ZP_NEARMISS_H

#include "zp_search.h"

#define ZP_NEAR_MAX_FIXES 12

typedef struct {
    char change[96]; /* the options to give instead, as typed: "--mp 16", "--offload optimizer", "--gpus 800" */
    char what[96];   /* what changes, in words: "model parallelism (was 1)" */
    int more_gpus;   /* 1: the change buys hardware (listed last) */
    zp_eval plan;    /* the best plan with the change */
} zp_fix;

typedef struct {
    zp_eval closest;         /* the plan that needs the least memory (the first that does not fit) */
    int64_t max_micro_batch; /* the largest micro-batch at which `closest` fits; 0: not even 1 */
    int64_t max_seq;         /* the largest sequence (tokens) at which it fits at its micro-batch; 0: none */
    int64_t max_layers;      /* the largest number of blocks of the model's shape that it fits; 0: none */
    double max_params;       /* the parameters of that model */
    int nfix;
    zp_fix fix[ZP_NEAR_MAX_FIXES]; /* the fastest first; those that buy GPUs last */
} zp_near_miss;

/* When `res` (the search of `r`) has no fitting plan: the answer above. ZP_OK with out->nfix = 0 when
 * nothing found fits either. */
zp_status zp_near_miss_find(const zp_search_req *r, const zp_search_result *res, zp_near_miss *out);

/* The largest model of `r->model`'s shape (hidden, heads, sequence, vocabulary, FFN kept; blocks varied)
 * for which the search of `r` finds a fitting plan: *layers (0 when not one block fits) and the model
 * itself in *out. Memory grows with the blocks, so this bisects on them with the memory test alone. */
zp_status zp_near_miss_max_model(const zp_search_req *r, zp_model *out, int64_t *layers);

#endif
