/* bench_coll — the cpu backend's collectives the nccl-tests way, under mpirun:
 * size, time, algbw = size / time, busbw = algbw * factor (2(n-1)/n all-reduce, (n-1)/n
 * reduce-scatter and all-gather, 1 broadcast), next to the memory bandwidth measured in the
 * same run. Timing: the harness (common/zp_timing.h), the backend's timer, a barrier before each sample.
 * usage: mpirun -np N bench_coll [MAX_BYTES] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zp_kernels.h"
#include "zp_timing.h"

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

    zp_kernels_clock clock = {be, t};

    /* memory bandwidth of every rank at once (what the collectives compete for): the best of 5 */
    size_t nb = (size_t)16 << 20;
    zp_stream_op st = {.be = &zp_kernels_cpu, .n = nb};
    CHECK(be->alloc(nb * 4, (void **)&st.a));
    CHECK(be->alloc(nb * 4, (void **)&st.b));
    CHECK(be->alloc(nb * 4, (void **)&st.c));
    memset(st.a, 0, nb * 4), memset(st.b, 0, nb * 4), memset(st.c, 0, nb * 4);
    const zp_timing_op stream[2] = {{zp_stream_copy_run, &st, 1}, {zp_stream_triad_run, &st, 1}};
    zp_timing_opts o = {.warmup = 0, .reps = 5};
    zp_kernels_timing_hooks(&o, &clock, w);
    zp_timing_result r[2];
    CHECK(zp_timing_run_ops(&o, stream, 2, r));
    double copy = 8.0 * nb / r[0].min / 1e9, triad = 12.0 * nb / r[1].min / 1e9;
    CHECK(zp_comm_allreduce_double(w, &copy, ZP_OP_SUM));
    CHECK(zp_comm_allreduce_double(w, &triad, ZP_OP_SUM));
    be->free(st.a), be->free(st.b), be->free(st.c);
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
            zp_coll_op a = {be, w, (zp_coll_kind)k, send, recv, cnt};
            o.warmup = 2;
            o.reps = sz > ((size_t)16 << 20) ? 5 : 20;
            CHECK(zp_timing_run(&o, zp_coll_op_run, &a, r));
            double med = r[0].median;
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
