/* zp_verdict.h — a verdict on a launch a team already has: its exact plan against the best plan its
 * framework runs at the same global batch, and the one change of the launch (one setting: the ZeRO stage,
 * the TP or PP degree, the micro-batch, the recompute, SP, offload) that gets most of the difference.
 * Every step compared is simulated (or analytic under --analytic), never a bound: a candidate the search
 * left as a bound is simulated alone before it is chosen. */
#ifndef ZP_VERDICT_H
#define ZP_VERDICT_H

#include "zp_search.h"

typedef enum {
    ZP_KNOB_STAGE = 0, /* the ZeRO stage */
    ZP_KNOB_TP,        /* the TP degree, with SP (a way of running TP) */
    ZP_KNOB_PP,        /* the pipeline stages, with the schedule and its chunks */
    ZP_KNOB_MICRO,     /* the micro-batch (the accumulation follows from the global batch) */
    ZP_KNOB_RECOMPUTE, /* full, selective or no recompute */
    ZP_KNOB_SP,        /* sequence parallelism */
    ZP_KNOB_OFFLOAD,   /* offload and ZeRO-R Pa / Pa+cpu */
    ZP_NKNOBS
} zp_knob;

/* "stage", "tp", "pp", "micro", "recompute", "sp", "offload" */
const char *zp_knob_name(zp_knob k);

/* Which plans the launch's framework runs (ctx: the caller's, e.g. a launch kind). */
typedef int (*zp_verdict_runs)(int ctx, const zp_plan *p);

typedef struct {
    int has_best;
    zp_eval best;      /* the best fitting plan the framework runs, at the launch's global batch */
    int has_change;
    zp_knob change;    /* the one setting changed */
    zp_eval changed;   /* the launch with that one change, at its best */
    int searches;      /* searches run for the verdict */
} zp_verdict;

/* The best fitting plan that runs among the plans of `res` (the result of request q): in its order, a
 * candidate left as a bound simulated alone (by q's settings) before it is taken, the walk ending at a bound
 * no better than the best step found. *index: its place in res (-1: none); searches (may be NULL) counts
 * the simulations run. */
zp_status zp_verdict_best_in(const zp_search_req *q, const zp_search_result *res, zp_verdict_runs runs, int ctx,
                             zp_eval *out, int *index, int *searches);
/* The verdict on `launch` (the evaluated plan of `pinned`, the request that pinned it exactly: its model,
 * cluster, GPUs, precision and base options are the verdict's). runs may be NULL (every plan). */
zp_status zp_verdict_find(const zp_search_req *pinned, const zp_eval *launch, zp_verdict_runs runs, int ctx,
                          zp_verdict *v);

#endif
