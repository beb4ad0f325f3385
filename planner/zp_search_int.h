/* zp_search_int.h — what the plan search's own files share and nothing else includes: the request's given-bit
 * tests and the layout help the checks (zp_search_check.c) and the walk (zp_search_walk.c) both use; the walk
 * the search runs (zp_search_run.c); one plan's figures (zp_search_eval.c); the bounds' memo tables and the
 * two memo'd bounds its screening calls (zp_search_bound.c). */
#ifndef ZP_SEARCH_INT_H
#define ZP_SEARCH_INT_H

#include <stddef.h>
#include <stdint.h>

#include "zp_framework.h"
#include "zp_search.h"

/* Whether the request gives `bits` (their values are the base plan's) / a dimension's degree. */
static inline int given(const zp_search_req *r, uint32_t bits) { return zp_search_req_given(r, bits); }
static inline int deg_given(const zp_search_req *r, zp_dim_id d) { return given(r, ZP_SEARCH_DIM(d)); }
/* A given on/off option that is on (--sp, --pa, --pa-cpu). */
static inline int given_on(const zp_search_req *r, uint32_t bit, int value) { return given(r, bit) && value == 1; }

/* Where no layout is given and v chunks on P stages do not divide the L layers: the embedding and the loss
 * counted as a layer each, where the framework's release does that and L + 2 divides (zp_plan.pp_acc); 0
 * otherwise. */
int zp_search_acc_fit(const zp_search_req *r, const zp_framework *f, int64_t P, int v, int64_t L);

/* ---- Candidates (zp_search_walk.c) --------------------------------------------------------------- */

/* Every candidate the request leaves open, evaluated (memory, analytic step) at its batches: *out (malloc'd,
 * *n of them, unsorted; the caller frees it), *target the default batch they run (0: the options fix it). */
zp_status zp_search_walk(const zp_search_req *r, zp_eval **out, int *n, int64_t *target);

/* ---- A plan's figures (zp_search_eval.c) ---------------------------------------------------------- */

/* zp_search_eval with the plan's memory given when `known` is not NULL (its zp_memory_estimate, computed
 * before: the pipeline search's bisection estimates the very plans it then evaluates). */
zp_status zp_search_eval_known(const zp_model *model, const zp_cluster *cluster, double gpu_mem, double host_mem,
                               const zp_plan *plan, const zp_memory *known, zp_eval *out);
/* An evaluated plan's analytic time replaced by its simulated step `s`, its throughputs and FLOP/s with it. */
void zp_search_eval_simulated(const zp_model *model, zp_eval *e, const zp_sim_result *s);

/* ---- Bounds (zp_search_bound.c) ------------------------------------------------------------------ */

/* The same op repeats once per layer and micro-batch: one bound's costs, memoized on what a cost function
 * reads of an op (its kind and sizes; zp_device_op_time reads op->type, flash, m, n, k, batch, flops, elems
 * and bytes, and nothing else: the memo returns the very double op_bound_s would). One table per bound
 * (step_bound), shared by the schedules it builds: a pipeline's stages, the two short steps of an
 * accumulation. A table for the whole search was slower: 3 MB looked up at random misses the caches, where
 * 96 KB stays in them. */
#define ZP_SEARCH_OPMEMO 1024 /* a power of two */
typedef struct {
    int type, flash, used;
    double m, n, k, batch, flops, elems, bytes, t;
} zp_search_opmemo;

typedef struct {
    zp_search_opmemo *v;
    size_t n; /* entries */
} zp_search_opmemo_tab;
/* An empty table of ZP_SEARCH_OPMEMO entries (v NULL when out of memory: every op is then priced); free(v). */
zp_search_opmemo_tab zp_search_opmemo_new(void);

/* The floors of the plans' shapes (zp_search_floor_memo): each shape's GEMMs and MP collectives once. */
enum { ZP_SEARCH_FLOOR_COLLS = 16 }; /* distinct collectives kept per shape: one more is left out (a lower floor) */
typedef struct {
    int64_t mp, b, ep, cp;
    int sp, tpo;
    double g[2];            /* s: micro-batches 0 and 1's GEMMs */
    int ncoll;
    zp_op coll[ZP_SEARCH_FLOOR_COLLS]; /* ... their MP collectives, each kind and size once */
    int count[ZP_SEARCH_FLOOR_COLLS][2];
} zp_search_floor;

typedef struct {
    zp_search_floor *v;
    int n, cap;
} zp_search_floors;

/* zp_search_step_bound with the kernel-time memo `memo` (NULL: every op priced; the same figures) and, with
 * every_micro_step, each micro-step and stage built (the reference its shortcuts are checked against); 0 where
 * the plan's schedule cannot be built. */
double zp_search_bound_memo(const zp_model *model, const zp_profile *prof, const zp_plan *plan,
                            const zp_cluster *cluster, const char *platform_file, int every_micro_step,
                            const zp_search_opmemo_tab *memo);
/* zp_search_step_floor with the memo and the shapes' floors found so far (gf, grown here). */
double zp_search_floor_memo(const zp_model *model, const zp_profile *prof, const zp_plan *p, const zp_cluster *cluster,
                            const char *platform_file, const zp_search_opmemo_tab *memo, zp_search_floors *gf);

#endif
