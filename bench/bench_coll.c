/* bench_coll — the cpu backend's collectives the nccl-tests way, under mpirun:
 * size, time, algbw = size / time, busbw = algbw * factor (2(n-1)/n all-reduce, (n-1)/n
 * reduce-scatter and all-gather, 1 broadcast), next to the memory bandwidth measured in the
 * same run. usage: mpirun -np N bench_coll [MAX_BYTES] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zp_kernels.h"
#include "zp_stats.h"

#define CHECK(expr)                                                                  \
    do {                                                                             \
        zp_status st_ = (expr);                                                      \
        if (st_ != ZP_OK) {                                                          \
            fprintf(stderr, "bench_coll: %s (%s)\n", zp_error_message(), #expr);     \
            return 1;                                                                \
        }                                                                            \
    } while (0)

int main(int argc, char **argv)
{
    double maxb = argc > 1 ? atof(argv[1]) : 256.0 * (1 << 20);
    const zp_kernels_backend *be = &zp_kernels_cpu;
    CHECK(zp_kernels_mpi_init(&argc, &argv));
    zp_comm *w;
    CHECK(zp_comm_world(be, &w));
    int rank = zp_comm_rank(w), n = zp_comm_size(w);
    zp_timer *t;
    CHECK(be->timer_create(&t));

    /* memory bandwidth of every rank at once (what the collectives compete for) */
    size_t nb = (size_t)16 << 20;
    float *a, *b, *c;
    CHECK(be->alloc(nb * 4, (void **)&a));
    CHECK(be->alloc(nb * 4, (void **)&b));
    CHECK(be->alloc(nb * 4, (void **)&c));
    memset(a, 0, nb * 4), memset(b, 0, nb * 4), memset(c, 0, nb * 4);
    double best_copy = 1e9, best_triad = 1e9, s;
    for (int r = 0; r < 5; r++) {
        CHECK(zp_comm_barrier(w));
        CHECK(be->timer_start(t));
        CHECK(be->stream_copy(a, b, nb));
        CHECK(be->timer_stop(t, &s));
        best_copy = s < best_copy ? s : best_copy;
        CHECK(be->timer_start(t));
        CHECK(be->stream_triad(a, b, c, 3.0f, nb));
        CHECK(be->timer_stop(t, &s));
        best_triad = s < best_triad ? s : best_triad;
    }
    double copy = 8.0 * nb / best_copy / 1e9, triad = 12.0 * nb / best_triad / 1e9;
    CHECK(zp_comm_allreduce_double(w, &copy, ZP_OP_SUM));
    CHECK(zp_comm_allreduce_double(w, &triad, ZP_OP_SUM));
    be->free(a), be->free(b), be->free(c);
    if (rank == 0)
        printf("# %d ranks; memory bandwidth, all ranks together: copy %.1f GB/s, triad %.1f GB/s\n", n, copy, triad);

    void *send, *recv;
    CHECK(be->alloc((size_t)maxb, &send));
    CHECK(be->alloc((size_t)maxb, &recv));
    memset(send, 0, (size_t)maxb), memset(recv, 0, (size_t)maxb);
    for (int k = 0; k < ZP_COLL_MEASURED; k++) {
        if (rank == 0)
            printf("\n# %s (fp32, sum)\n%12s %12s %12s %10s %10s %12s\n", zp_coll_name((zp_coll_kind)k), "size(B)",
                   "count", "time(us)", "algbw", "busbw", "busbw/triad");
        for (double bytes = 1024; bytes <= maxb; bytes *= 4) {
            size_t unit = 4 * (size_t)n, sz = ((size_t)bytes + unit - 1) / unit * unit, cnt = sz / 4;
            int reps = sz > ((size_t)16 << 20) ? 5 : 20;
            double ts[32];
            for (int r = -2; r < reps; r++) {
                CHECK(zp_comm_barrier(w));
                CHECK(be->timer_start(t));
                switch (k) {
                case ZP_COLL_ALLREDUCE: CHECK(be->allreduce(w, send, recv, cnt, ZP_DT_F32, ZP_OP_SUM)); break;
                case ZP_COLL_REDUCE_SCATTER:
                    CHECK(be->reduce_scatter(w, send, recv, cnt / n, ZP_DT_F32, ZP_OP_SUM));
                    break;
                case ZP_COLL_ALLGATHER: CHECK(be->allgather(w, send, recv, cnt / n, ZP_DT_F32)); break;
                default: CHECK(be->broadcast(w, send, cnt, ZP_DT_F32, 0)); break;
                }
                CHECK(be->timer_stop(t, &s));
                if (r >= 0)
                    ts[r] = s;
            }
            double med = zp_stats_median(ts, (size_t)reps);
            CHECK(zp_comm_allreduce_double(w, &med, ZP_OP_MAX));
            double alg = sz / med / 1e9, bus = alg * zp_coll_busbw_factor((zp_coll_kind)k, n);
            if (rank == 0)
                printf("%12zu %12zu %12.1f %10.2f %10.2f %11.1f%%\n", sz, cnt, med * 1e6, alg, bus,
                       100 * bus / triad);
        }
    }
    be->free(send), be->free(recv);
    be->timer_free(t);
    zp_comm_free(w);
    zp_kernels_mpi_finalize();
    return 0;
}
