/* bench_replay — what the memory of one plan costs: zp_memory_estimate (build the memory-only schedule,
 * replay its alloc/free ops) over the plans the what-if search of a model would screen, and beside it the
 * full schedule's build and replay. Prints microseconds per plan; the target is microseconds (tens), not
 * milliseconds: the search screens hundreds of plans, each at several micro-batches.
 * Usage: bench_replay [model [gpus]]   (default 100B on 400 GPUs) */
#include <stdio.h>
#include <stdlib.h>

#include "zp_memory.h"
#include "zp_time.h"
#include "zp_zoo.h"

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
    double sink = 0;
    int reps = 20;
    double t0 = zp_time_now_s();
    for (int r = 0; r < reps; r++)
        for (int i = 0; i < n; i++) {
            zp_memory mem;
            if (zp_memory_estimate(&m, &plans[i], &mem) == ZP_OK)
                sink += mem.total;
        }
    double mem_only = (zp_time_now_s() - t0) / (reps * n);
    t0 = zp_time_now_s();
    int full_n = n < 40 ? n : 40;
    for (int i = 0; i < full_n; i++) {
        zp_schedule s;
        zp_memory mem;
        if (zp_schedule_build(&m, &plans[i], &s) == ZP_OK && zp_memory_replay(&s, &mem) == ZP_OK)
            sink += mem.total;
        zp_schedule_free(&s);
    }
    double full = (zp_time_now_s() - t0) / full_n;
    printf("model %s (%lld layers) on %lld GPUs, %d plans\n", m.name, (long long)m.layers, (long long)gpus, n);
    printf("  memory of one plan (memory-only schedule, replayed)   %9.2f us\n", mem_only * 1e6);
    printf("  the full schedule built and replayed, for comparison  %9.2f us\n", full * 1e6);
    return sink > 0 ? 0 : 1;
}
