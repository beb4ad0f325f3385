/* Each collective of the cpu backend under mpirun (-np 2 and -np 4 in meson test), against
 * the expected result; fp32, fp16 and bf16; in place and not; node and cross communicators.
 * Not a Criterion test (Criterion forks each test, MPI does not survive that): a plain
 * program whose rank 0 prints "N passed, N failed" and whose exit code is the verdict. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coll_check.h"

static int g_pass, g_fail, g_rank;

static void test_collectives(zp_comm *c, zp_dtype dt, size_t count)
{
    const zp_kernels_backend *be = &zp_kernels_cpu;
    int r = zp_comm_rank(c), n = zp_comm_size(c);
    size_t es = zp_dtype_size(dt), big = count * (size_t)n;
    void *send = malloc(big * es + 1), *recv = malloc(big * es + 1);
    const char *tn = zp_dtype_name(dt);

    /* all-reduce: sum, max, min; then in place */
    for (int op = ZP_OP_SUM; op <= ZP_OP_MIN; op++) {
        for (size_t i = 0; i < count; i++)
            put(send, dt, i, val(r, i));
        OK(be->allreduce(c, send, recv, count, dt, (zp_redop)op));
        int bad = 0;
        for (size_t i = 0; i < count && !bad; i++) {
            double want = op == ZP_OP_SUM ? n * (n - 1) / 2.0 + n * (double)(i % 7)
                          : op == ZP_OP_MAX ? val(n - 1, i) : val(0, i);
            if (get(recv, dt, i) != want) {
                bad = 1;
                CHECK(0, "allreduce %s op %d count %zu elem %zu: %g want %g", tn, op, count, i, get(recv, dt, i), want);
            }
        }
        CHECK(!bad, "allreduce");
    }
    for (size_t i = 0; i < count; i++)
        put(recv, dt, i, val(r, i));
    OK(be->allreduce(c, recv, recv, count, dt, ZP_OP_SUM));
    int bad = 0;
    for (size_t i = 0; i < count; i++)
        bad += get(recv, dt, i) != n * (n - 1) / 2.0 + n * (double)(i % 7);
    CHECK(!bad, "in-place allreduce %s count %zu: %d wrong", tn, count, bad);

    /* reduce-scatter: block b of rank q holds q + b + i%7; rank r gets the sum (max, min) over q of
     * block r; then in place, into the rank's own block of the send buffer (NCCL's in-place form) */
    for (int op = ZP_OP_SUM; op <= ZP_OP_MIN; op++) {
        for (int inplace = 0; inplace <= 1; inplace++) {
            for (int b = 0; b < n; b++)
                for (size_t i = 0; i < count; i++)
                    put(send, dt, (size_t)b * count + i, val(r + b, i));
            void *out = inplace ? (char *)send + (size_t)r * count * es : recv;
            OK(be->reduce_scatter(c, send, out, count, dt, (zp_redop)op));
            bad = 0;
            for (size_t i = 0; i < count; i++) {
                double want = op == ZP_OP_SUM ? n * (n - 1) / 2.0 + n * (double)(r + (int)(i % 7))
                              : op == ZP_OP_MAX ? val(n - 1 + r, i) : val(r, i);
                bad += get(out, dt, i) != want;
            }
            CHECK(!bad, "reduce_scatter %s op %d%s count %zu: %d wrong", tn, op, inplace ? " in place" : "", count,
                  bad);
        }
    }

    /* all-gather, then in place (own block already in recv) */
    for (size_t i = 0; i < count; i++)
        put(send, dt, i, val(3 * r, i));
    OK(be->allgather(c, send, recv, count, dt));
    bad = 0;
    for (int b = 0; b < n; b++)
        for (size_t i = 0; i < count; i++)
            bad += get(recv, dt, (size_t)b * count + i) != val(3 * b, i);
    CHECK(!bad, "allgather %s count %zu: %d wrong", tn, count, bad);
    memset(recv, 0, big * es);
    for (size_t i = 0; i < count; i++)
        put(recv, dt, (size_t)r * count + i, val(5 * r, i));
    OK(be->allgather(c, (char *)recv + (size_t)r * count * es, recv, count, dt));
    bad = 0;
    for (int b = 0; b < n; b++)
        for (size_t i = 0; i < count; i++)
            bad += get(recv, dt, (size_t)b * count + i) != val(5 * b, i);
    CHECK(!bad, "in-place allgather %s count %zu: %d wrong", tn, count, bad);

    /* broadcast from the last rank */
    for (size_t i = 0; i < count; i++)
        put(recv, dt, i, val(r, i));
    OK(be->broadcast(c, recv, count, dt, n - 1));
    bad = 0;
    for (size_t i = 0; i < count; i++)
        bad += get(recv, dt, i) != val(n - 1, i);
    CHECK(!bad, "broadcast %s count %zu: %d wrong", tn, count, bad);

    /* all-to-all-v: uneven counts (some 0), every pair */
    size_t sc[64], sd[64], rc[64], rd[64];
    void *s2 = malloc(3 * count * (size_t)n * es + 64), *r2 = malloc(3 * count * (size_t)n * es + 64);
    a2a_layout(r, n, count, dt, s2, sc, sd, rc, rd);
    OK(be->alltoallv(c, s2, sc, sd, r2, rc, rd, dt));
    bad = a2a_wrong(r, n, dt, r2, rc, rd);
    CHECK(!bad, "alltoallv %s count %zu: %d wrong", tn, count, bad);
    free(s2);
    free(r2);

    free(send);
    free(recv);
}

int main(int argc, char **argv)
{
    if (zp_kernels_mpi_init(&argc, &argv) != ZP_OK) {
        fprintf(stderr, "MPI init: %s\n", zp_error_message());
        return 1;
    }
    zp_comm *world = NULL;
    if (zp_comm_world(&zp_kernels_cpu, &world) != ZP_OK) {
        fprintf(stderr, "world: %s\n", zp_error_message());
        return 1;
    }
    g_rank = zp_comm_rank(world);
    int n = zp_comm_size(world);

    const size_t counts[] = {1, 7, 1000, 65537};
    const zp_dtype types[] = {ZP_DT_F32, ZP_DT_F16, ZP_DT_BF16};
    for (size_t t = 0; t < 3; t++)
        for (size_t k = 0; k < 4; k++)
            test_collectives(world, types[t], counts[k]);

    /* bytes: gather and broadcast only; reducing them is refused */
    unsigned char sb[3] = {(unsigned char)g_rank, 1, 2}, rb[3 * 64];
    OK(zp_kernels_cpu.allgather(world, sb, rb, 3, ZP_DT_U8));
    for (int b = 0; b < n; b++)
        CHECK(rb[3 * b] == b && rb[3 * b + 2] == 2, "u8 allgather block %d", b);
    CHECK(zp_kernels_cpu.allreduce(world, sb, rb, 3, ZP_DT_U8, ZP_OP_SUM) == ZP_EINVAL, "u8 allreduce refused");
    CHECK(zp_kernels_cpu.broadcast(world, sb, 3, ZP_DT_U8, n) == ZP_EINVAL, "root out of range refused");

    /* node-local and cross-node communicators: one node here */
    zp_comm *node = NULL, *cross = NULL;
    OK(zp_comm_split_node(world, &node));
    OK(zp_comm_split_cross(world, &cross));
    int nodes = 0;
    OK(zp_comm_node_count(world, &nodes));
    CHECK(nodes >= 1 && zp_comm_size(node) * nodes == n, "node split: %d ranks x %d nodes != %d",
          zp_comm_size(node), nodes, n);
    CHECK(zp_comm_size(cross) == nodes, "cross split size %d, nodes %d", zp_comm_size(cross), nodes);
    if (node)
        test_collectives(node, ZP_DT_F32, 33);

    double x = g_rank + 1.0;
    OK(zp_comm_allreduce_double(world, &x, ZP_OP_MAX));
    CHECK(x == n, "allreduce_double max %g", x);
    OK(zp_comm_barrier(world));

    zp_comm_free(node);
    zp_comm_free(cross);
    /* gather the verdicts */
    double pass = g_pass, fail = g_fail;
    zp_comm_allreduce_double(world, &pass, ZP_OP_SUM);
    zp_comm_allreduce_double(world, &fail, ZP_OP_SUM);
    if (g_rank == 0)
        printf("collectives on %d ranks: %.0f passed, %.0f failed\n", n, pass, fail);
    zp_comm_free(world);
    zp_kernels_mpi_finalize();
    return fail > 0 ? 1 : 0;
}
