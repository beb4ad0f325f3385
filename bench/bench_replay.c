/* bench_replay — what the memory of one plan costs: zp_memory_estimate (build the memory-only schedule,
 * replay its alloc/free ops) over the plans the what-if search of a model would screen, and beside it the
 * full schedule's build and replay. Prints microseconds per plan; the target is microseconds (tens), not
 * milliseconds: the search screens hundreds of plans, each at several micro-batches.
 * Timing: the harness (common/zp_timing.h), wall clock: the median of 20 passes over the plans.
 * Usage: bench_replay [model [gpus]]   (default 100B on 400 GPUs) */
#include <stdio.h>
#include <stdlib.h>

#include "zp_memory.h"
#include "zp_timing.h"
#include "zp_zoo.h"

typedef struct {
    const zp_model *m;
    const zp_plan *plans;
    int n;       /* plans in one pass */
    double sink; /* the memories summed: the work cannot be optimised away */
} pass_arg;

/* zp_memory_estimate of every plan. */
static zp_status pass_memory(void *p)
{
    pass_arg *a = p;
    for (int i = 0; i < a->n; i++) {
        zp_memory mem;
        if (zp_memory_estimate(a->m, &a->plans[i], &mem) == ZP_OK)
            a->sink += mem.total;
    }
    return ZP_OK;
}

/* The full schedule of every plan, built and replayed. */
static zp_status pass_full(void *p)
{
    pass_arg *a = p;
    for (int i = 0; i < a->n; i++) {
        zp_schedule s;
        zp_memory mem;
        if (zp_schedule_build(a->m, &a->plans[i], &s) == ZP_OK && zp_memory_replay(&s, &mem) == ZP_OK)
            a->sink += mem.total;
        zp_schedule_free(&s);
    }
    return ZP_OK;
}

/* Seconds per plan of a pass: the median of `reps` passes. */
static double per_plan(zp_timing_fn pass, pass_arg *a, int reps)
{
    zp_timing_opts o = {.warmup = 0, .reps = reps};
    zp_timing_result r;
    if (zp_timing_run(&o, pass, a, &r) != ZP_OK) {
        fprintf(stderr, "bench_replay: %s\n", zp_error_message());
        exit(1);
    }
    return r.median / a->n;
}

int main(int argc, char **argv)
{
    const char *name = argc > 1 ? argv[1] : "100B";
    const int64_t gpus = argc > 2 ? atoll(argv[2]) : 400;
    zp_model m;
    if (zp_model_resolve(name, 0, &m, NULL) != ZP_OK) {
        fprintf(stderr, "bench_replay: %s\n", zp_error_message());
        return 2;
    }
    /* the candidates of the search: stages x MP x {none, Pa, Pa+cpu} x micro-batches 1..64 */
    enum { NPLANS = 4 * 5 * 3 * 7 };
    static zp_plan plans[NPLANS];
    int n = 0;
    for (int stage = 0; stage <= 3; stage++)
        for (int64_t mp = 1; mp <= 16; mp *= 2)
            for (int ra = 0; ra < 3; ra++)
                for (int64_t b = 1; b <= 64; b *= 2) {
                    zp_plan *p = &plans[n++];
                    zp_plan_default(p, gpus / mp);
                    p->stage = stage;
                    p->mp = mp;
                    p->pa = ra >= 1;
                    p->pa_cpu = ra == 2;
                    p->micro_batch = b;
                }
    pass_arg mem = {&m, plans, n, 0}, full = {&m, plans, n < 40 ? n : 40, 0};
    double mem_only = per_plan(pass_memory, &mem, 20), per_full = per_plan(pass_full, &full, 1);
    printf("model %s (%lld layers) on %lld GPUs, %d plans\n", m.name, (long long)m.layers, (long long)gpus, n);
    printf("  memory of one plan (memory-only schedule, replayed)   %9.2f us\n", mem_only * 1e6);
    printf("  the full schedule built and replayed, for comparison  %9.2f us\n", per_full * 1e6);
    return mem.sink + full.sink > 0 ? 0 : 1;
}
