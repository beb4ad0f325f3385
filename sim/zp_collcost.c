/* zp_collcost.c — the collective cost model (zp_collcost.h): NCCL's tuner over the engine's group shapes
 * and link figures, the bytes a collective puts on NVSwitch and on a rail, and the plain ring and fitted
 * forms the analytic bound and the profile use. */
#include "zp_collcost.h"

#include <math.h>

#include "zp_fabric.h"

/* NCCL's tuner (src/graph/tuning.cc, ncclTopoTuneModel): a tree's bus bandwidth is 0.9 of the ring's
 * (busBw * .9) and its algorithm bandwidth busBw/2, so a tree all-reduce of S bytes takes 2S/(0.9 busBw)
 * against the ring's 2(k-1)/k S/busBw; its latency is 2 log2i(k) network steps against the ring's
 * 2(k-1) (log2i: the floor). */
#define ZP_TREE_BW_FRACTION 0.9

static const zp_op_info *info_of(const zp_op *op) { return &zp_op_table[op->type]; }

/* Ring passes over the buffer: 2 for an all-reduce (reduce-scatter + all-gather), 1 otherwise. */
static double coll_factor(const zp_op *op) { return zp_coll_get(info_of(op)->coll)->passes; }

/* Rails a cross-node collective of this group shape uses per node. */
static int coll_rails(const zp_net *N, const zp_group_shape *gs)
{
    int want = gs->G * N->channels;
    return want < N->rails ? want : N->rails;
}

/* NCCL's cost model (src/graph/tuning.cc, ncclTopoTuneModel and ncclTopoGetAlgoTime, NCCL 2.8-2.10), which
 * NCCL's tuner uses to pick an algorithm (ring, tree) and a protocol per collective and message size:
 *   time = baseLat[algo][proto] + steps inside nodes x hwLat[NVLink][algo][proto]
 *                               + steps across nodes x hwLat[network][algo][proto] + bytes / (busBw x fraction)
 * in us and GB/s. LL sends 4 bytes of data per 8 on the wire and flags every line (a quarter of the ring's
 * bus bandwidth, a tree's /3.8), LL128 120 of 128 bytes (0.92), Simple all of it with the largest latency;
 * a tree runs at 0.9 of the ring's bandwidth. Ring Simple all-reduces across nodes pay 1.9x their latency
 * at large sizes (the tuner's "plateau" factor). LL's intra-node hops cost 1.8x when nodes > 1. Where the
 * profile holds nccl-tests' measured LL floor over NVSwitch (dev.nccl_ll_base_s, nccl_ll_hop_s: a DGX
 * A100's, 6.0 us + 1.98 us a ring step, vocab/zp_cluster.c) LL takes those figures instead of the tuner's
 * 3.6 + 0.47 us, which NCCL uses to rank protocols, not to predict times. */
enum { P_LL = ZP_COLLCOST_LL, P_LL128 = ZP_COLLCOST_LL128, P_SIMPLE = ZP_COLLCOST_SIMPLE, NPROTO };
enum { A_TREE = 0, A_RING, NALGO };
static const double nccl_base_us[NALGO][NPROTO] = {{4.4, 4.4, 0.0}, {3.6, 10.0, 8.4}};
static const double nccl_hw_nvlink_us[NALGO][NPROTO] = {{0.52, 1.2, 28.0}, {0.47, 1.9, 3.4}};
static const double nccl_hw_net_us[NALGO][NPROTO] = {{5.0, 8.5, 50.0}, {2.7, 4.0, 9.6}};
static const double nccl_bw_frac[NALGO][NPROTO] = {{0.9 / 3.8, 0.9 * 0.915, 0.9}, {0.25, 0.92, 1.0}};

/* Ring passes over the buffer: 2 for an all-reduce (reduce-scatter + all-gather), 1 otherwise. */
static double coll_factor_kind(zp_coll_kind k) { return zp_coll_get(k)->passes; }

/* The tuner's uncontended time of (algo, proto) for `bytes` over the group, and its latency. The links:
 * the NVSwitch phase at nv_bw, the node's share over its rails at rail_bw (as the simulation's flows). */
static double nccl_time(const zp_net *N, const zp_op *op, const zp_group_shape *gs, int algo, int proto,
                        double *lat_out)
{
    const zp_coll_kind kind = info_of(op)->coll;
    const double f = coll_factor_kind(kind), P = (double)gs->g * gs->k, k = gs->k, g = gs->g;
    const int multi = gs->k > 1;
    double intra_steps, inter_steps;
    if (algo == A_TREE) { /* up and down: 2 (g-1) intra, 2 log2(k) network */
        intra_steps = 2.0 * (g - 1.0);
        inter_steps = 2.0 * floor(log2(k));
    } else {
        intra_steps = f * (P - 1.0) - f * (k - 1.0);
        inter_steps = f * (k - 1.0);
    }
    double base = nccl_base_us[algo][proto], hw_intra = nccl_hw_nvlink_us[algo][proto];
    const zp_profile *pr = N->prof;
    if (proto == P_LL && pr && pr->dev.nccl_ll_hop_s > 0) { /* nccl-tests' measured LL floor (zp_cluster.c) */
        base = pr->dev.nccl_ll_base_s * 1e6;
        hw_intra = pr->dev.nccl_ll_hop_s * 1e6;
    }
    hw_intra *= multi && proto == P_LL ? 1.8 : 1.0;
    double lat = (base + intra_steps * hw_intra + inter_steps * nccl_hw_net_us[algo][proto]) * 1e-6;
    if (algo == A_RING && proto == P_SIMPLE && multi && kind == ZP_COLL_ALLREDUCE && op->bytes >= P / 16.0 * 65536)
        lat *= 1.9;
    const double frac = nccl_bw_frac[algo][proto];
    double t = 0.0;
    if (g > 1 && !(multi && N->flat))
        t += f * (g - 1.0) / g * op->bytes / (zp_collcost_nv_bw(N, gs) * frac);
    if (multi) {
        double node = algo == A_TREE ? 2.0 * op->bytes * gs->G
                                     : f * (N->flat ? (P - 1.0) / P : (k - 1.0) / k) * op->bytes * gs->G;
        t += node / coll_rails(N, gs) / (N->rail_bw * frac);
    }
    *lat_out = lat;
    return lat + t;
}

double zp_collcost_nv_bw(const zp_net *N, const zp_group_shape *gs)
{
    if (!N->cluster || !N->cluster->intra_mesh)
        return N->nv_bw;
    return N->nv_bw * zp_cluster_group_share(N->cluster, gs->g);
}

/* A profile measured here (no GPU device model: MPI, or a calibrated machine): its fitted latency per ring
 * step (nv_lat, ib_lat), the ring at full bandwidth, and across nodes the double binary tree where its time
 * (2 log2i(k) steps, 2S per node at 0.9 of the bandwidth) beats the ring's 2(k-1) steps; a flat ring's
 * f(P-1) steps each last as long as its slowest hop. */
static zp_coll_plan coll_choose_measured(const zp_net *N, const zp_op *op, const zp_group_shape *gs)
{
    zp_coll_plan c = {.tree = 0, .proto = P_SIMPLE, .lat = 0, .frac = 1.0};
    const double f = coll_factor(op), k = gs->k;
    if (N->tree && gs->k >= 2 && info_of(op)->coll == ZP_COLL_ALLREDUCE) {
        double per_rail = op->bytes * gs->G / coll_rails(N, gs) / N->rail_bw; /* s to send S once */
        double ring = 2.0 * (k - 1.0) * N->ib_lat + 2.0 * (k - 1.0) / k * per_rail;
        double tree = 2.0 * floor(log2(k)) * N->ib_lat + 2.0 * per_rail / ZP_TREE_BW_FRACTION;
        c.tree = tree < ring;
    }
    if (c.tree)
        c.frac = ZP_TREE_BW_FRACTION;
    if (gs->k > 1 && N->flat) {
        c.lat = f * ((double)gs->g * gs->k - 1.0) * N->ib_lat;
        return c;
    }
    if (gs->g > 1)
        c.lat += f * (gs->g - 1.0) * N->nv_lat;
    if (gs->k > 1)
        c.lat += (c.tree ? 2.0 * floor(log2(k)) : f * (k - 1.0)) * N->ib_lat;
    return c;
}

/* NCCL 2.4.8 (the ZeRO paper's; tag v2.4.8-1) chose between its tree and its ring by a size threshold of
 * its own (src/enqueue.cc getPatternInfo: the tree when nBytes <= comm->treeThreshold), which
 * src/init.cc ncclTreeThreshold computes from the nodes k (tree masters), the ranks P and its channels
 * with these estimates, in us and MB/s, for GPUs with NVLink:
 *   ring bandwidth 5000 x channels, tree 3/4 of it (twice that on 2 nodes: a two-node tree puts half the
 *   ring's traffic on the network); ring latency 6 us x (P - 1); tree latency 15 us x log2i(k) up and down
 *   the inter-node binary tree + 4 us x (P/k - 1) along the intra-node chain;
 *   threshold = ringbw treebw / (ringbw - treebw) x (ringlat - treelat), every size when the tree's
 *   bandwidth is the larger (2 nodes), none when its latency is not the smaller.
 * On a DGX-2 (16 channels, two rings a NIC: zp_fabric.c) that is every size on 2 nodes, and 69 MB on 4
 * nodes of 16 GPUs (P 64), 158 MB on 8 (P 128), 338 MB on 16 (P 256): each per-layer tensor-parallel
 * all-reduce of the ZeRO paper's Megatron-LM baselines (micro-batch x 1024 x hidden x 2 bytes, fp16:
 * 17-50 MB) ran as a tree. Returns the threshold in bytes (HUGE_VAL: every size; 0: none). */
static double tree24_threshold(const zp_net *N, const zp_group_shape *gs)
{
    const double k = gs->k, P = (double)gs->g * gs->k;
    const double ringbw = 5000.0 * N->tree24_channels, treebw = ringbw * 0.75 * (gs->k == 2 ? 2.0 : 1.0);
    const double ringlat = 6.0 * (P - 1.0), treelat = 15.0 * floor(log2(k)) + 4.0 * (P / k - 1.0);
    if (gs->k < 2 || ringlat <= treelat)
        return 0.0;
    if (treebw > ringbw)
        return HUGE_VAL;
    return ringbw * treebw / (ringbw - treebw) * (ringlat - treelat);
}

/* NCCL 2.4.8's tree where its threshold says (tree24_threshold), priced by its latency: NCCL 2.4.8's own
 * estimate, 15 us a level of the inter-node tree and 4 us a hop of the intra-node chain (a DGX-2 pair of
 * nodes 75 us, 8 nodes 105 us, 16 nodes 120 us), in place of the flat ring's 2(P-1) steps at the tuner's
 * Simple latencies (8.4 us + 3.4 us a NVSwitch step + 9.6 us a network step, x1.9 at large sizes: 0.44 ms
 * for P 32, 1.8 ms for P 128, 3.6 ms for P 256, nccl_time). Its bytes stay the flat ring's on the
 * preset's rails (zp_collcost_rail_bytes: f(P-1)/P of the buffer a node, frac 1): dgx2's cross-node
 * bandwidth is one rail a collective (inter_channels; vocab/zp_cluster.c says why), not a figure of the
 * tree's, so how a tree's network bytes differ from a ring's (the same 2S a node beyond 2 nodes, half of
 * it on 2: NCCL issue #946) is left out there. 0 when the ring runs. */
static int tree24_choose(const zp_net *N, const zp_op *op, const zp_group_shape *gs, zp_coll_plan *out)
{
    if (!N->tree24 || gs->k < 2 || info_of(op)->coll != ZP_COLL_ALLREDUCE || op->bytes > tree24_threshold(N, gs))
        return 0;
    const double lat_us = 15.0 * floor(log2((double)gs->k)) + 4.0 * (gs->g - 1.0);
    *out = (zp_coll_plan){.tree = 1, .proto = P_SIMPLE, .lat = lat_us * 1e-6, .frac = 1.0};
    return 1;
}

/* NCCL's choice: the (algorithm, protocol) of least estimated time; trees for all-reduces across nodes on
 * presets that have them (NCCL 2.4.8's own rule on dgx2), LL128 where the preset's NCCL has it. */
zp_coll_plan zp_collcost_choose(const zp_net *N, const zp_op *op, const zp_group_shape *gs)
{
    zp_coll_plan best = {.tree = 0, .proto = P_SIMPLE, .lat = 0, .frac = 1.0};
    if (info_of(op)->ub != ZP_UB_NONE) { /* a TP overlap transfer: no NCCL; one step's synchronisation */
        best.lat = N->nv_lat;
        return best;
    }
    if (!N->nccl || info_of(op)->coll == ZP_COLL_ALLTOALL) /* all-to-all: grouped sends, no tuner */
        return coll_choose_measured(N, op, gs);
    if (tree24_choose(N, op, gs, &best)) /* NCCL 2.4.8's rule, not the tuner of NCCL >= 2.5 */
        return best;
    double tbest = HUGE_VAL;
    const int trees = N->tree && gs->k > 1 && info_of(op)->coll == ZP_COLL_ALLREDUCE;
    for (int a = trees ? A_TREE : A_RING; a < NALGO; a++)
        for (int p = 0; p < NPROTO; p++) {
            if (p == P_LL128 && !N->ll128)
                continue;
            double lat, t = nccl_time(N, op, gs, a, p, &lat);
            if (t < tbest) {
                tbest = t;
                best = (zp_coll_plan){.tree = a == A_TREE, .proto = p, .lat = lat, .frac = nccl_bw_frac[a][p]};
            }
        }
    return best;
}

/* Bytes each GPU sends over its NVSwitch port in the intra-node ring phase(s) of a collective:
 * f(g-1)/g of the buffer, at its protocol's fraction of the bandwidth (more bytes on the wire). A flat ring
 * across nodes pipelines its NVSwitch hops behind the slower InfiniBand hop: none counted. */
double zp_collcost_intra_bytes(const zp_net *N, const zp_op *op, const zp_group_shape *gs)
{
    if (gs->g <= 1 || (gs->k > 1 && N->flat))
        return 0.0;
    /* a TP overlap transfer (zp_ub): a chunk to the ring neighbour whole, or the peers' (g-1)/g of a chunk
     * read by the reduce-scatter kernel, at the NVLink bus bandwidth (nv_bw: the preset's NVLink bandwidth
     * times its NCCL efficiency, the bandwidth a copy engine or an SM kernel reaches over NVSwitch as
     * NCCL's rings do) */
    if (info_of(op)->ub == ZP_UB_P2P)
        return op->bytes;
    if (info_of(op)->ub == ZP_UB_RS)
        return (gs->g - 1.0) / gs->g * op->bytes;
    if (info_of(op)->coll == ZP_COLL_ALLTOALL && N->a2a_dedup) /* each GPU a token reaches, from the GPU it
                                                                   lands on in the node (DeepEP's forward) */
        return N->a2a_rank_share * (gs->g - 1.0) / gs->g * op->bytes;
    if (info_of(op)->coll == ZP_COLL_ALLTOALL) /* S/(g·k) to each of the g-1 others in the node */
        return (gs->g - 1.0) / ((double)gs->g * gs->k) * op->bytes;
    return coll_factor(op) * (gs->g - 1.0) / gs->g * op->bytes / zp_collcost_choose(N, op, gs).frac;
}

/* A collective within one node whose kind the profile measured (points, not only a fit) on exactly this
 * many ranks: the measured time of that kind at that size (zp_profile_collective_time_measured; a warm op,
 * tensor parallelism's, from the hot points where the profile has them: back to back, a 64 KB all-reduce on 2
 * cpu ranks took 22 us, after the caches were run through 68 us, and tiny-llama's in-step MP all-reduces of
 * 64 KB 22-73 us, bench/validate_readme.sh, 2026-11-27). Reduce-
 * scatter, all-gather and all-reduce differ a lot on shared-memory MPI, which one link figure cannot
 * express. -1 otherwise (the built-in presets hold no points: their link model below is unchanged). */
double zp_collcost_profile_time(const zp_net *N, const zp_op *op, const zp_group_shape *gs)
{
    const zp_coll_kind kind = info_of(op)->coll;
    if (gs->k > 1 || gs->g <= 1 || (unsigned)kind >= ZP_PROFILE_NCOLL || info_of(op)->ub != ZP_UB_NONE)
        return -1;
    const zp_profile *p = N->prof;
    const zp_profile_coll_fit *f = &p->coll[kind][ZP_PROFILE_INTRA_NODE];
    if (!f->measured || f->npoints < 2 || f->nranks != gs->g)
        return -1;
    const double hot = info_of(op)->warm ? zp_profile_collective_time_hot(p, (zp_profile_coll)kind,
                                                                           ZP_PROFILE_INTRA_NODE, op->bytes, gs->g)
                                         : -1;
    if (hot > 0)
        return hot;
    return zp_profile_collective_time_measured(p, (zp_profile_coll)kind, ZP_PROFILE_INTRA_NODE, op->bytes, gs->g);
}

/* A collective over one rank moves nothing between GPUs, but one whose output is a new buffer (a
 * reduce-scatter into the partition, stage 3's gather of a group from the shard: the table's writes_new)
 * still copies it once at the device's copy bandwidth (NCCL and MPI both copy). An all-reduce or a
 * stage 1-2 gather in place copies nothing. */
static double coll_self_time(const zp_net *N, const zp_op *op)
{
    if (!info_of(op)->writes_new)
        return 0.0;
    const zp_profile *p = N->prof;
    double bw = p && p->copy_gbs > 0 ? p->copy_gbs * 1e9 : 0.0; /* STREAM copy: read + write counted */
    return bw > 0 ? 2.0 * op->bytes / bw : 0.0;
}

/* Intra-node phases as time (NVSwitch uncontended) plus the latencies. */
double zp_collcost_local_time(const zp_net *N, const zp_op *op, const zp_group_shape *gs)
{
    if (gs->g <= 1 && gs->k <= 1)
        return coll_self_time(N, op);
    double t = zp_collcost_profile_time(N, op, gs);
    if (t >= 0)
        return t;
    return zp_collcost_intra_bytes(N, op, gs) / zp_collcost_nv_bw(N, gs) + zp_collcost_choose(N, op, gs).lat;
}

/* Bytes one rail carries: the node's G groups each send f(k-1)/k of the buffer (hierarchical ring),
 * f(P-1)/P of it (a flat ring of P = g*k GPUs leaves each node once) or, as a double binary tree, 2S
 * (interior in one tree, a leaf in the other, every node sends half the buffer up and down once per
 * tree: S up and S down), over N->channels rings spread over the rails in use; divided by the protocol's
 * fraction of the bandwidth (a tree's includes its 0.9). */
double zp_collcost_rail_bytes(const zp_net *N, const zp_op *op, const zp_group_shape *gs)
{
    double P = (double)gs->g * gs->k, node_bytes;
    const zp_coll_plan c = zp_collcost_choose(N, op, gs);
    if (info_of(op)->coll == ZP_COLL_ALLTOALL) {
        /* no hierarchy helps Megatron's all-to-all: each of the node's g members sends (k-1)/k of its
         * buffer to the other nodes; DeepEP sends a token once to each node it reaches */
        node_bytes = (gs->k - 1.0) / gs->k * op->bytes * gs->g * gs->G;
        if (N->a2a_dedup) /* a token crosses once to each other node it reaches (DeepEP) */
            node_bytes *= N->a2a_node_share;
    } else if (!N->flat && c.tree) {
        node_bytes = 2.0 * op->bytes * gs->G;
    } else {
        double share = N->flat ? (P - 1.0) / P : (gs->k - 1.0) / gs->k;
        node_bytes = coll_factor(op) * share * op->bytes * gs->G;
    }
    return node_bytes / coll_rails(N, gs) / c.frac;
}

/* The least time the simulation can give one collective op: what it sleeps (latency, NVSwitch bytes at
 * nv_bw, or a profile's measured time) and its rail bytes at the rail's bandwidth (a SimGrid flow is never
 * faster than its links). */
double zp_collcost_least_time(const zp_net *N, const zp_op *op)
{
    const zp_op_info *in = info_of(op);
    const zp_group_shape *gs = zp_fabric_group(N, in->group);
    if (gs->k <= 1 && !N->intra_flows)
        return zp_collcost_local_time(N, op, gs);
    double t = N->intra_flows ? -1.0 : zp_collcost_profile_time(N, op, gs);
    if (t < 0)
        t = zp_collcost_intra_bytes(N, op, gs) / zp_collcost_nv_bw(N, gs) + zp_collcost_choose(N, op, gs).lat;
    if (zp_collcost_pipelined(N, op, gs))
        return fmax(t, zp_collcost_rail_bytes(N, op, gs) / N->rail_bw);
    if (gs->k > 1)
        t += zp_collcost_rail_bytes(N, op, gs) / N->rail_bw;
    return t;
}

/* DeepEP's all-to-alls across nodes forward the tokens over NVLink as they arrive from the network ("without
 * being blocked by subsequently arriving tokens", DeepSeek-V3 report 3.2.2), and its combine reduces in the
 * node while the network sends: the NVLink phase runs beside the rails' flows, not before them. Where
 * NVSwitch flows contend with another group's (intra_flows) the phases stay one after the other. */
int zp_collcost_pipelined(const zp_net *N, const zp_op *op, const zp_group_shape *gs)
{
    return N->a2a_dedup && gs->k > 1 && !N->intra_flows && info_of(op)->coll == ZP_COLL_ALLTOALL;
}

/* The collectives of stream `s`, each at its least time (one after the other: their sum). */
double zp_collcost_stream_least(const zp_net *N, const zp_schedule *sc, zp_stream s)
{
    double t = 0.0, last_bytes = -1.0, last_t = 0.0;
    int last_type = -1;
    for (int i = 0; i < sc->n[s]; i++) {
        const zp_op *op = &sc->ops[s][i];
        if (info_of(op)->cls != ZP_OPC_COLL)
            continue;
        if (op->type != last_type || op->bytes != last_bytes) { /* its time depends on these alone */
            last_type = op->type;
            last_bytes = op->bytes;
            last_t = zp_collcost_least_time(N, op);
        }
        t += last_t;
    }
    return t;
}
