/* sim/zp_collcost.c against published nccl-tests: the all-reduce the simulator charges inside one node of a
 * preset (NCCL's protocol and algorithm choice by size, its latency floors, the NVSwitch bus bandwidth), each
 * figure beside its source. As the FlashAttention curves are held to their benchmarks (tests/sim/
 * test_device.c). Nothing here was fitted to an end-to-end training time. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "zp_collcost.h"
#include "zp_device.h"
#include "zp_engine.h"
#include "zp_fabric.h"

/* The model's time (s) of an all-reduce of `bytes` over a tensor-parallel group of g GPUs of preset `name`
 * (as Megatron-LM's per-layer all-reduces run): inside one node, or (across) a group spanning nodes, its
 * bytes on a rail added at the rail's bandwidth. */
static void mp_allreduce_setup(const char *name, int g, double bytes, zp_net *N, zp_op *o)
{
    const zp_cluster *c;
    cr_assert_eq(zp_cluster_find(name, &c), ZP_OK);
    static zp_profile p; /* the net points at it */
    zp_device_profile_builtin(c, &p);
    zp_plan pl;
    zp_plan_default(&pl, g);
    pl.mp = g;
    pl.dp = 1;
    zp_sim_input in = {.plan = &pl, .cluster = c, .profile = &p};
    cr_assert_eq(zp_fabric_setup(&in, 0, N), ZP_OK, "%s", zp_error_message());
    memset(o, 0, sizeof *o);
    o->type = ZP_OPK_MP_ALLREDUCE;
    o->bytes = bytes;
    o->batch = 1;
}

static double mp_allreduce_time(const char *name, int g, double bytes, int across)
{
    zp_net N;
    zp_op o;
    mp_allreduce_setup(name, g, bytes, &N, &o);
    const zp_group_shape *gs = zp_fabric_group(&N, ZP_GROUP_MP);
    if (!across)
        return zp_collcost_local_time(&N, &o, gs);
    cr_assert_gt(gs->k, 1, "%s: MP %d spans nodes", name, g);
    return zp_collcost_local_time(&N, &o, gs) + zp_collcost_rail_bytes(&N, &o, gs) / N.rail_bw;
}

static double allreduce_time(const char *name, int g, double bytes) { return mp_allreduce_time(name, g, bytes, 0); }

static void expect_near(const char *preset, int g, double bytes, double published_us, double tol)
{
    const double us = 1e6 * allreduce_time(preset, g, bytes);
    cr_expect(fabs(us / published_us - 1.0) <= tol, "%s, %d GPUs, %.0f B: model %.2f us, published %.2f us (%+.1f%%)",
              preset, g, bytes, us, published_us, 100.0 * (us / published_us - 1.0));
}

/* Latency-bound: nccl-tests all_reduce_perf on a DGX A100 (A100-SXM4, NVSwitch), NCCL_ALGO=Ring,
 * NCCL_MAX_NCHANNELS=1, -b 8 -e 128 (nccl-tests issue #123, "Understanding the latency of NCCL", 2022):
 * one time per GPU count, flat over 8-128 bytes. Within 10%. */
Test(nccl_tests, dgx_a100_small_allreduce_by_gpu_count)
{
    static const double published_us[] = {0, 0, 10.0, 13.76, 16.88, 20.8, 25.2, 29.5, 33.7};
    for (int g = 2; g <= 8; g++) {
        expect_near("dgx-a100", g, 8, published_us[g], 0.10);
        expect_near("dgx-a100", g, 128, published_us[g], 0.10);
    }
    /* 2 x A100-SXM4-40GB, all_reduce_perf -g 2, 32 bytes (NCCL issue #583, "AllReduce bandwidth change curve
     * with respect to data size", 2021): 10.14 us */
    expect_near("dgx-a100-40gb", 2, 32, 10.14, 0.10);
}

/* The protocol by size: LL at the smallest sizes, LL128 in between, Simple from tens of MB on 8 GPUs, and
 * the time never falls as the message grows. */
Test(nccl_tests, protocol_by_size_is_monotone)
{
    const char *presets[] = {"dgx-a100", "dgx-h100"};
    for (int i = 0; i < 2; i++) {
        double last = 0;
        for (double b = 8; b <= 8.6e9; b *= 2) {
            double t = allreduce_time(presets[i], 8, b);
            cr_expect_geq(t, last, "%s: %.0f B takes %g s, less than half of it (%g s)", presets[i], b, t, last);
            last = t;
        }
    }
}

/* Bandwidth-bound: 8 A100-SXM4 on NVSwitch reach 200-230 GB/s of bus bandwidth (nccl-tests issue #149) and
 * 208 GB/s (nccl-tests issue #178, all_reduce_perf -b 8 -e 12G on an 8 x A100 NVSwitch node); 215 GB/s, their
 * middle, is 8,740 us for 1 GiB and 2,185 us for 256 MiB (busbw = 2(n-1)/n S / t). Within 10%. */
Test(nccl_tests, dgx_a100_large_allreduce)
{
    const double gib = 1073741824.0, f = 2.0 * 7 / 8;
    expect_near("dgx-a100", 8, gib, 1e6 * f * gib / 215e9, 0.10);
    expect_near("dgx-a100", 8, gib / 4, 1e6 * f * gib / 4 / 215e9, 0.10);
}

/* 8 H100-SXM5 (DGX H100): a ring all-reduce (NCCL_ALGO=RING) reaches ~370 GB/s of bus bandwidth (NCCL's
 * maintainer in nccl-tests issue #212, "H100 all reduce performance is poor", 2024): 5,080 us for 1 GiB.
 * Within 10%. NVLink SHARP (NVLS, NCCL >= 2.17), NCCL's default there, reaches ~480 GB/s (the same thread;
 * 479.7 GB/s at 8 GiB on an 8 x H100 node with NCCL 2.24 in a published cluster benchmark): not modelled,
 * zplan's H100 all-reduces are rings. */
Test(nccl_tests, dgx_h100_large_ring_allreduce)
{
    const double gib = 1073741824.0, f = 2.0 * 7 / 8;
    expect_near("dgx-h100", 8, gib, 1e6 * f * gib / 370e9, 0.10);
}

/* 8 x MI300X (a full xGMI mesh, AMD's MI300X platform), rccl-tests all_reduce_perf -b 8 -e 16G -f 2 -g 1,
 * one process a GPU, RCCL 2.22.3, ROCm 6.3 (ROCm blog "Understanding RCCL Bandwidth and xGMI Performance on
 * AMD Instinct MI300X", 2025-03-02), out-of-place: 1 GiB in 5,970.6 us (busbw 314.7 GB/s), 16 GiB in
 * 94,254 us (319.0 GB/s), 8 MiB in 83.68 us, 16 MiB in 148.8 us, 1-32 KiB in 13.1-13.3 us. Within 5% where
 * bandwidth-bound, 15% at 8-16 MiB (NCCL's tuner latencies), 10% at the floor. */
Test(nccl_tests, mi300x_mesh_allreduce)
{
    const double gib = 1073741824.0, mib = 1048576.0;
    expect_near("mi300x-node", 8, gib, 5970.6, 0.05);
    expect_near("mi300x-node", 8, 16 * gib, 94254.0, 0.05);
    expect_near("mi300x-node", 8, 8 * mib, 83.68, 0.15);
    expect_near("mi300x-node", 8, 16 * mib, 148.8, 0.15);
    expect_near("mi300x-node", 8, 1024, 13.11, 0.10);
    expect_near("mi300x-node", 8, 32768, 13.31, 0.10);
}

/* No 2-GPU rccl-tests figure is published there: a 2-GPU ring runs over the one link between the pair, whose
 * TransferBench copy the same blog measures at 45.1-47.2 GB/s (46.55 on average over the 56 links). The
 * model's 2-GPU all-reduce bus bandwidth (busbw = 2(g-1)/g S / t = S / t) within 5% of that, a seventh of
 * the 8-GPU figure; and a 4-GPU group three links'. On a switch (dgx-h100) every group gets the whole port. */
Test(nccl_tests, mi300x_mesh_group_bandwidth)
{
    const double gib = 1073741824.0;
    const double bus2 = gib / allreduce_time("mi300x-node", 2, gib) / 1e9;
    const double bus4 = 1.5 * gib / allreduce_time("mi300x-node", 4, gib) / 1e9;
    const double bus8 = 1.75 * gib / allreduce_time("mi300x-node", 8, gib) / 1e9;
    cr_expect(fabs(bus2 / 46.55 - 1.0) <= 0.05, "2 x MI300X: busbw %.1f GB/s, TransferBench link 46.55", bus2);
    cr_expect(fabs(bus8 / bus2 - 7.0) <= 0.1, "8 GPUs %.1f GB/s, 2 GPUs %.1f: not 7 links to 1", bus8, bus2);
    cr_expect(fabs(bus4 / bus2 - 3.0) <= 0.1, "4 GPUs %.1f GB/s, 2 GPUs %.1f: not 3 links to 1", bus4, bus2);
    const double h2 = gib / allreduce_time("dgx-h100", 2, gib), h8 = 1.75 * gib / allreduce_time("dgx-h100", 8, gib);
    cr_expect(fabs(h2 / h8 - 1.0) <= 0.02, "NVSwitch: 2 GPUs %.1f GB/s, 8 GPUs %.1f", h2 / 1e9, h8 / 1e9);
}

/* Across nodes (issue #29 item 2): the model's time of an all-reduce over an MP group of g GPUs that spans
 * nodes (the collective's fixed part and NVSwitch bytes, then its bytes on a rail at the rail's bandwidth). */
static double allreduce_time_across(const char *name, int g, double bytes)
{
    return mp_allreduce_time(name, g, bytes, 1);
}

/* A ring across nodes carries each channel over one NIC at that NIC's rate: ~12 GB/s of bus bandwidth per
 * 100 Gb/s EDR NIC with NCCL_ALGO=RING, 24 with two, 47 GB/s over a DGX-1's four (NCCL's maintainer in NCCL
 * issue #307, "NCCL infiniband performance", March 2020, NCCL 2.5/2.6 on V100 nodes). dgx2 drives one ring per
 * collective across its nodes (vocab/zp_cluster.c, "Channels across nodes"), so an MP group over DGX-2 nodes
 * reaches one NIC's figure: 2(n-1)/n S / t within 20% of 12 GB/s for 1 GiB. n = 64 (four nodes), where 1 GiB
 * is above NCCL 2.4.8's tree threshold (69 MB: dgx2_nccl248_tree_or_ring) and runs as the ring; on two
 * nodes (n = 32, the ZeRO paper's MP 32 baseline) NCCL 2.4.8 runs a tree at every size, priced with the
 * ring's bytes (sim/zp_collcost.c tree24_choose): the same figure. */
Test(nccl_tests, dgx2_ring_across_nodes_at_one_nic)
{
    const double gib = 1073741824.0;
    for (int n = 32; n <= 64; n += 32) {
        const double t = allreduce_time_across("dgx2", n, gib), busbw = 2.0 * (n - 1) / n * gib / t;
        cr_expect(fabs(busbw / 12e9 - 1.0) <= 0.20, "dgx2, MP %d over %d nodes, 1 GiB: bus bandwidth %.1f GB/s, "
                  "NCCL #307 ~12 GB/s a NIC (%+.1f%%)", n, n / 16, busbw / 1e9, 100.0 * (busbw / 12e9 - 1.0));
    }
}

/* NCCL 2.4.8 (the ZeRO paper's) on dgx2 (issue #29 item 2): the all-reduce's algorithm across nodes is
 * NCCL 2.4.8's own choice (src/enqueue.cc getPatternInfo: the tree up to comm->treeThreshold, which
 * src/init.cc ncclTreeThreshold computes; tag v2.4.8-1), recomputed here from that function's figures for
 * a DGX-2 (NVLink, 16 channels: one ring per NIC, doubled across NVLink nodes): ring bandwidth 5000 B/us a
 * channel, tree 3/4 of it (x2 on 2 nodes), ring latency 6 us x (P - 1), tree 15 us x log2(k) + 4 us x
 * (P/k - 1). The Megatron-LM baselines' per-layer all-reduces (micro-batch x 1024 x hidden x 2 bytes, fp16)
 * are trees at MP 32 / 64 / 128 / 256 (2-16 DGX-2), a buffer above the threshold a ring. */
static zp_coll_plan dgx2_mp_allreduce_plan(int g, double bytes, double *lat_s)
{
    zp_net N;
    zp_op o;
    mp_allreduce_setup("dgx2", g, bytes, &N, &o);
    zp_coll_plan cp = zp_collcost_choose(&N, &o, zp_fabric_group(&N, ZP_GROUP_MP));
    *lat_s = cp.lat;
    return cp;
}

/* NCCL 2.4.8's threshold (bytes) for k nodes of 16 GPUs, 16 channels, from src/init.cc's formula. */
static double nccl248_threshold(int k)
{
    const double P = 16.0 * k, ringbw = 5000.0 * 16, treebw = ringbw * 0.75 * (k == 2 ? 2 : 1);
    const double ringlat = 6.0 * (P - 1), treelat = 15.0 * floor(log2(k)) + 4.0 * (P / k - 1);
    return treebw > ringbw ? HUGE_VAL : ringbw * treebw / (ringbw - treebw) * (ringlat - treelat);
}

Test(nccl_tests, dgx2_nccl248_tree_or_ring)
{
    cr_expect(isinf(nccl248_threshold(2)), "2 nodes: trees at every size");
    cr_expect(fabs(nccl248_threshold(4) / 69.12e6 - 1) < 1e-9, "4 nodes: %.4g B", nccl248_threshold(4));
    cr_expect(fabs(nccl248_threshold(8) / 157.68e6 - 1) < 1e-9, "8 nodes: %.4g B", nccl248_threshold(8));
    cr_expect(fabs(nccl248_threshold(16) / 338.4e6 - 1) < 1e-9, "16 nodes: %.4g B", nccl248_threshold(16));
    static const struct { int mp, micro, hidden; } runs[] = {
        {32, 4, 6144}, {64, 4, 6144}, {64, 2, 8192}, {128, 2, 8192}, {256, 1, 8192}};
    for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
        const double bytes = runs[i].micro * 1024.0 * runs[i].hidden * 2, k = runs[i].mp / 16;
        double lat;
        zp_coll_plan cp = dgx2_mp_allreduce_plan(runs[i].mp, bytes, &lat);
        cr_expect(cp.tree, "MP %d, %.0f B: NCCL 2.4.8 runs a tree (threshold %.4g B)", runs[i].mp, bytes,
                  nccl248_threshold((int)k));
        /* its latency, NCCL 2.4.8's own tree estimate: 15 us a level, 4 us a chain hop */
        const double want = (15.0 * floor(log2(k)) + 4.0 * 15) * 1e-6;
        cr_expect(fabs(lat / want - 1) < 1e-9, "MP %d: tree latency %.1f us, NCCL 2.4.8 %.1f us", runs[i].mp,
                  lat * 1e6, want * 1e6);
    }
    double lat;
    cr_expect(!dgx2_mp_allreduce_plan(64, 128e6, &lat).tree, "MP 64 (4 nodes), 128 MB > 69 MB: a ring");
    cr_expect(dgx2_mp_allreduce_plan(128, 128e6, &lat).tree, "MP 128 (8 nodes), 128 MB < 158 MB: a tree");
    cr_expect(!dgx2_mp_allreduce_plan(16, 50e6, &lat).tree, "MP 16 stays in a node: no tree");
}

/* A calibrated profile's collectives: a warm one (the tensor-parallel all-reduce, zp_op_info.warm) from its
 * hot points (back to back), the gradient all-reduce from its cold ones; past the hot points, both cold. */
Test(nccl_tests, warm_collectives_from_the_hot_points)
{
    zp_net N;
    zp_op o;
    mp_allreduce_setup("dgx-a100", 2, 65536, &N, &o);
    zp_profile p = *N.prof;
    zp_profile_coll_fit *f = &p.coll[ZP_PROFILE_ALLREDUCE][ZP_PROFILE_INTRA_NODE];
    *f = (zp_profile_coll_fit){.measured = 1, .nranks = 2, .latency_s = 15e-6, .busbw_gbs = 3, .npoints = 2,
                               .points = {{1024, 17e-6, 0}, {1 << 20, 220e-6, 0}}, .nhot = 2,
                               .hot = {{1024, 2e-6, 0}, {1 << 20, 130e-6, 0}}};
    N.prof = &p;
    const zp_group_shape *gs = zp_fabric_group(&N, ZP_GROUP_MP);
    const double warm = zp_collcost_profile_time(&N, &o, gs);
    o.type = ZP_OPK_GRAD_ALLREDUCE;
    const double cold = zp_collcost_profile_time(&N, &o, gs);
    cr_expect_float_eq(warm, zp_profile_collective_time_hot(&p, ZP_PROFILE_ALLREDUCE, ZP_PROFILE_INTRA_NODE, 65536, 2),
                       1e-15);
    cr_expect_float_eq(cold, zp_profile_collective_time_measured(&p, ZP_PROFILE_ALLREDUCE, ZP_PROFILE_INTRA_NODE,
                                                                 65536, 2), 1e-15);
    cr_expect_lt(warm, cold, "warm %g s, cold %g s", warm, cold);
    o.type = ZP_OPK_MP_ALLREDUCE;
    o.bytes = 4 << 20;
    cr_expect_float_eq(zp_collcost_profile_time(&N, &o, gs),
                       zp_profile_collective_time_measured(&p, ZP_PROFILE_ALLREDUCE, ZP_PROFILE_INTRA_NODE, 4 << 20, 2),
                       1e-15);
}
