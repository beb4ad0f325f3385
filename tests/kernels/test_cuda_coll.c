/* The cuda backend's NCCL collectives on device buffers, against the expected result; fp32, fp16 and
 * bf16; sum, max and min; in place and not; the world and the node-local communicator. Alone (one rank:
 * NCCL on one GPU) or under mpirun with one GPU per rank. A plain program, as test_coll_mpi.c (MPI does not
 * survive Criterion's fork): rank 0 prints "N passed, N failed", the exit code is the verdict; 77 (meson's
 * "skipped") without a CUDA device, or with more ranks than devices (NCCL refuses two ranks on one GPU). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "coll_check.h"

static int g_pass, g_fail, g_rank;
static const zp_kernels_backend *be = &zp_kernels_cuda;

static void test_collectives(zp_comm *c, zp_dtype dt, size_t count)
{
    int r = zp_comm_rank(c), n = zp_comm_size(c);
    size_t es = zp_dtype_size(dt), big = count * (size_t)n, bytes = big * es;
    char *hs = calloc(1, bytes + 8), *hr = calloc(1, bytes + 8);
    void *ds = NULL, *dr = NULL;
    OK(be->alloc(bytes, &ds));
    OK(be->alloc(bytes, &dr));
    if (!hs || !hr || !ds || !dr) {
        CHECK(0, "buffers of %zu bytes", bytes);
        goto out;
    }
    const char *tn = zp_dtype_name(dt);
    int bad;

    for (int op = ZP_OP_SUM; op <= ZP_OP_MIN; op++) {
        for (int inplace = 0; inplace <= 1; inplace++) {
            for (size_t i = 0; i < count; i++)
                put(hs, dt, i, val(r, i));
            OK(be->copy_to_device(ds, hs, count * es));
            void *out = inplace ? ds : dr;
            OK(be->allreduce(c, ds, out, count, dt, (zp_redop)op));
            OK(be->copy_to_host(hr, out, count * es));
            bad = 0;
            for (size_t i = 0; i < count; i++) {
                double want = op == ZP_OP_SUM ? n * (n - 1) / 2.0 + n * (double)(i % 7)
                              : op == ZP_OP_MAX ? val(n - 1, i)
                                                : val(0, i);
                bad += get(hr, dt, i) != want;
            }
            CHECK(!bad, "allreduce %s op %d%s count %zu: %d wrong", tn, op, inplace ? " in place" : "", count, bad);
        }
    }

    for (int op = ZP_OP_SUM; op <= ZP_OP_MIN; op++) {
        for (int inplace = 0; inplace <= 1; inplace++) {
            for (int b = 0; b < n; b++)
                for (size_t i = 0; i < count; i++)
                    put(hs, dt, (size_t)b * count + i, val(r + b, i));
            OK(be->copy_to_device(ds, hs, bytes));
            void *out = inplace ? (char *)ds + (size_t)r * count * es : dr;
            OK(be->reduce_scatter(c, ds, out, count, dt, (zp_redop)op));
            OK(be->copy_to_host(hr, out, count * es));
            bad = 0;
            for (size_t i = 0; i < count; i++) {
                double want = op == ZP_OP_SUM ? n * (n - 1) / 2.0 + n * (double)(r + (int)(i % 7))
                              : op == ZP_OP_MAX ? val(n - 1 + r, i)
                                                : val(r, i);
                bad += get(hr, dt, i) != want;
            }
            CHECK(!bad, "reduce_scatter %s op %d%s count %zu: %d wrong", tn, op, inplace ? " in place" : "", count,
                  bad);
        }
    }

    for (int inplace = 0; inplace <= 1; inplace++) {
        memset(hr, 0, bytes);
        for (size_t i = 0; i < count; i++)
            put(inplace ? hr : hs, dt, (inplace ? (size_t)r * count : 0) + i, val(3 * r + inplace, i));
        if (inplace)
            OK(be->copy_to_device(dr, hr, bytes));
        else
            OK(be->copy_to_device(ds, hs, count * es));
        const void *src = inplace ? (const void *)((char *)dr + (size_t)r * count * es) : ds;
        OK(be->allgather(c, src, dr, count, dt));
        OK(be->copy_to_host(hr, dr, bytes));
        bad = 0;
        for (int b = 0; b < n; b++)
            for (size_t i = 0; i < count; i++)
                bad += get(hr, dt, (size_t)b * count + i) != val(3 * b + inplace, i);
        CHECK(!bad, "allgather %s%s count %zu: %d wrong", tn, inplace ? " in place" : "", count, bad);
    }

    for (size_t i = 0; i < count; i++)
        put(hr, dt, i, val(r, i));
    OK(be->copy_to_device(dr, hr, count * es));
    OK(be->broadcast(c, dr, count, dt, n - 1));
    OK(be->copy_to_host(hr, dr, count * es));
    bad = 0;
    for (size_t i = 0; i < count; i++)
        bad += get(hr, dt, i) != val(n - 1, i);
    CHECK(!bad, "broadcast %s count %zu: %d wrong", tn, count, bad);

    /* all-to-all-v: uneven counts (some 0), every pair (3 count x n elements at most) */
    {
        size_t sc[64], sd[64], rc[64], rd[64];
        const size_t cap = 3 * count * (size_t)n + 2;
        void *h2 = malloc(cap * es), *g2 = malloc(cap * es), *d2 = NULL, *e2 = NULL;
        size_t got = a2a_layout(r, n, count, dt, h2, sc, sd, rc, rd);
        OK(be->alloc(cap * es, &d2));
        OK(be->alloc(cap * es, &e2));
        OK(be->copy_to_device(d2, h2, cap * es));
        OK(be->alltoallv(c, d2, sc, sd, e2, rc, rd, dt));
        OK(be->copy_to_host(g2, e2, got * es));
        bad = a2a_wrong(r, n, dt, g2, rc, rd);
        CHECK(!bad, "alltoallv %s count %zu: %d wrong", tn, count, bad);
        be->free(d2);
        be->free(e2);
        free(h2);
        free(g2);
    }
out:
    be->free(ds);
    be->free(dr);
    free(hs);
    free(hr);
}

int main(int argc, char **argv)
{
    /* the device first: no MPI start-up where there is nothing to test */
    if (be->init() != ZP_OK) {
        printf("SKIP: %s\n", zp_error_message());
        return 77;
    }
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess)
        devices = 0;
    if (zp_kernels_mpi_init(&argc, &argv) != ZP_OK) {
        fprintf(stderr, "MPI init: %s\n", zp_error_message());
        return 1;
    }
    zp_comm *world = NULL;
    zp_comm *cpu_world = NULL;
    if (zp_comm_world(&zp_kernels_cpu, &cpu_world) != ZP_OK) {
        fprintf(stderr, "world: %s\n", zp_error_message());
        return 1;
    }
    int n = zp_comm_size(cpu_world);
    g_rank = zp_comm_rank(cpu_world);
    zp_comm_free(cpu_world);
    if (n > devices) { /* every rank sees the same count on one node */
        if (g_rank == 0)
            printf("SKIP: %d ranks and %d CUDA device%s: NCCL needs one GPU per rank\n", n, devices,
                   devices == 1 ? "" : "s");
        zp_kernels_mpi_finalize();
        return 77;
    }
    if (zp_comm_world(be, &world) != ZP_OK) {
        fprintf(stderr, "rank %d: NCCL world: %s\n", g_rank, zp_error_message());
        zp_kernels_mpi_finalize();
        return 1;
    }

    const size_t counts[] = {1, 7, 1000, 65537, (size_t)1 << 22};
    const zp_dtype types[] = {ZP_DT_F32, ZP_DT_F16, ZP_DT_BF16};
    for (size_t t = 0; t < 3; t++)
        for (size_t k = 0; k < sizeof counts / sizeof counts[0]; k++)
            test_collectives(world, types[t], counts[k]);

    unsigned char sb[3] = {(unsigned char)g_rank, 1, 2}, rb[3 * 64];
    void *dsb = NULL, *drb = NULL;
    OK(be->alloc(sizeof sb, &dsb));
    OK(be->alloc(3 * (size_t)n, &drb));
    OK(be->copy_to_device(dsb, sb, sizeof sb));
    OK(be->allgather(world, dsb, drb, 3, ZP_DT_U8));
    OK(be->copy_to_host(rb, drb, 3 * (size_t)n));
    for (int b = 0; b < n; b++)
        CHECK(rb[3 * b] == b && rb[3 * b + 2] == 2, "u8 allgather block %d", b);
    CHECK(be->broadcast(world, dsb, 3, ZP_DT_U8, n) == ZP_EINVAL, "root out of range refused");
    be->free(dsb);
    be->free(drb);

    zp_comm *node = NULL;
    OK(zp_comm_split_node(world, &node));
    if (node)
        test_collectives(node, ZP_DT_F32, 33);
    zp_comm_free(node);

    double pass = g_pass, fail = g_fail;
    zp_comm_allreduce_double(world, &pass, ZP_OP_SUM);
    zp_comm_allreduce_double(world, &fail, ZP_OP_SUM);
    if (g_rank == 0)
        printf("NCCL collectives on %d rank%s: %.0f passed, %.0f failed\n", n, n == 1 ? "" : "s", pass, fail);
    zp_comm_free(world);
    zp_kernels_mpi_finalize();
    return fail > 0 ? 1 : 0;
}
