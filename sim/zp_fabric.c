/* zp_fabric.c — process groups, placement and the fabric analysis of a simulation (zp_fabric.h). */
#include "zp_fabric.h"

#include <stdio.h>
#include <string.h>

#include "zp_dispatch.h"

/* The MP (TP) and DP groups on nodes of gpn GPUs, placed in the dimension table's order (vocab/zp_dims.h):
 * TP's members adjacent, DP's members `ds` ranks apart (ds = zp_dims_stride(DP) = the TP degree): within a
 * node when TP x DP fits one, else DP runs across nodes (one member per node every ds / gpn nodes when TP
 * spans nodes). */
static void shape_groups(const zp_plan *p, zp_net *N)
{
    int gpn = N->gpn;
    zp_group_shape *mp = &N->grp[ZP_GROUP_MP], *dp = &N->grp[ZP_GROUP_DP];
    const int ds = (int)zp_dims_stride(p->deg, ZP_DIM_DP);
    if (p->mp <= gpn) {
        *mp = (zp_group_shape){.k = 1, .g = (int)p->mp, .G = gpn / (int)p->mp, .stride = 1};
        if (p->dp * ds <= gpn)
            *dp = (zp_group_shape){.k = 1, .g = (int)p->dp, .G = ds, .stride = 1};
        else
            *dp = (zp_group_shape){.k = N->nodes, .g = gpn / ds, .G = ds, .stride = 1};
    } else {
        int kmp = (int)(p->mp / gpn);
        *mp = (zp_group_shape){.k = kmp, .g = gpn, .G = 1, .stride = 1};
        *dp = (zp_group_shape){.k = (int)p->dp, .g = 1, .G = gpn, .stride = ds / gpn};
    }
    N->grp[ZP_GROUP_EP] = N->grp[ZP_GROUP_EDP] = (zp_group_shape){.k = 1, .g = 1, .G = gpn, .stride = 1};
    N->grp[ZP_GROUP_RDP] = N->grp[ZP_GROUP_EP];
}

/* A group of n members whose consecutive members are S ranks apart (EP: ep members, S = mp; EDP: dp/ep
 * members, S = ep·mp), on nodes of gpn GPUs: contiguous runs of g members per node over k nodes, or one
 * member per node every S/gpn nodes. Refused when the group does not tile the nodes. */
static zp_status group_of(const char *what, int64_t n, int64_t S, int gpn, zp_group_shape *out)
{
    if (n <= 1) {
        *out = (zp_group_shape){.k = 1, .g = 1, .G = gpn, .stride = 1};
        return ZP_OK;
    }
    if (S >= gpn) {
        if (S % gpn != 0)
            return ZP_FAIL(ZP_EINVAL, "%s group: members %lld ranks apart do not line up with nodes of %d GPUs", what,
                           (long long)S, gpn);
        *out = (zp_group_shape){.k = (int)n, .g = 1, .G = gpn, .stride = (int)(S / gpn)};
        return ZP_OK;
    }
    int64_t per = gpn / S, g = n < per ? n : per;
    if (gpn % S != 0 || n % g != 0)
        return ZP_FAIL(ZP_EINVAL, "%s group: %lld members %lld ranks apart do not tile nodes of %d GPUs", what,
                       (long long)n, (long long)S, gpn);
    *out = (zp_group_shape){.k = (int)(n / g), .g = (int)g, .G = (int)(gpn / g), .stride = 1};
    return ZP_OK;
}

/* Hybrid sharding (shard group G < dp): DP's collectives run over the shard group, G consecutive DP
 * indices (inside a node when G times DP's stride fits one), and the shards' all-reduce over the replicas,
 * G DP indices apart. The comm stream's cross-node ring is the shard group's when it spans nodes, else the
 * replicas'. */
static zp_status shape_shard_groups(const zp_plan *p, zp_net *N)
{
    const int64_t g = zp_plan_shard_degree(p), ds = zp_dims_stride(p->deg, ZP_DIM_DP);
    if (g >= p->dp)
        return ZP_OK;
    ZP_TRY(group_of("shard", g, ds, N->gpn, &N->grp[ZP_GROUP_DP]));
    ZP_TRY(group_of("replica", p->dp / g, g * ds, N->gpn, &N->grp[ZP_GROUP_RDP]));
    N->xs_group[ZP_XS_COMM] = N->grp[ZP_GROUP_DP].k > 1 ? ZP_GROUP_DP : ZP_GROUP_RDP;
    return ZP_OK;
}

/* Mixture of experts: the EP and EDP groups, and which group's ring each stream's cross-node flows follow.
 * The compute stream carries MP's and EP's collectives, one after the other: at most one of them may
 * cross nodes. */
static zp_status shape_expert_groups(const zp_plan *p, zp_net *N)
{
    N->xs_group[ZP_XS_COMPUTE] = ZP_GROUP_MP;
    N->xs_group[ZP_XS_COMM] = ZP_GROUP_DP;
    /* context parallelism's ring: CP consecutive DP indices, its stride (the TP degree) apart */
    ZP_TRY(group_of("CP", p->cp, zp_dims_stride(p->deg, ZP_DIM_CP), N->gpn, &N->grp[ZP_GROUP_CP]));
    if (p->ep <= 1) { /* every rank holds every expert: the expert-data-parallel group is the DP group (the
                         executor all-reduces the experts' gradients over it; a group of one cost nothing) */
        N->grp[ZP_GROUP_EDP] = N->grp[ZP_GROUP_DP];
        return ZP_OK;
    }
    /* the table's placement: EP's members are its stride apart (the TP degree), the expert-data-parallel
     * group's EP times that */
    const int64_t es = zp_dims_stride(p->deg, ZP_DIM_EP);
    ZP_TRY(group_of("EP", p->ep, es, N->gpn, &N->grp[ZP_GROUP_EP]));
    ZP_TRY(group_of("EDP", p->dp / p->ep, p->ep * es, N->gpn, &N->grp[ZP_GROUP_EDP]));
    if (N->grp[ZP_GROUP_EP].k > 1) {
        if (N->grp[ZP_GROUP_MP].k > 1)
            return ZP_FAIL(ZP_EINVAL, "--ep %lld with --mp %lld: MP and EP groups both span nodes; keep MP within a node "
                                      "(--mp <= %d)",
                           (long long)p->ep, (long long)p->mp, N->gpn);
        N->xs_group[ZP_XS_COMPUTE] = ZP_GROUP_EP;
    }
    return ZP_OK;
}

/* A dispatcher that sends a token once per node and per GPU (DeepEP): the nodes and ranks of the EP group a
 * token's top_k copies reach, per copy, under the model's routing. */
static void shape_dispatch(const zp_sim_input *in, zp_net *N)
{
    const zp_plan *p = in->plan;
    const zp_model *m = in->model;
    const zp_dispatch_info *d = zp_dispatch_get(p->dispatcher);
    if (!d || !d->dedup || p->ep <= 1 || !m || m->experts <= 0 || m->top_k <= 0)
        return;
    N->a2a_dedup = 1;
    N->a2a_node_share = zp_dispatch_share(m, p->dispatcher, N->grp[ZP_GROUP_EP].k);
    N->a2a_rank_share = zp_dispatch_share(m, p->dispatcher, p->ep);
}

int zp_fabric_successor(const zp_net *N, const zp_group_shape *gs, int node)
{
    if (gs->stride == 1 && gs->k < N->nodes) { /* contiguous block of k nodes (MP across nodes) */
        int base = node - node % gs->k;
        return base + (node - base + 1) % gs->k;
    }
    return (node + gs->stride) % N->nodes;
}

static const zp_group_shape *xs_shape(const zp_net *N, int xs) { return &N->grp[N->xs_group[xs]]; }

static int64_t gcd64(int64_t a, int64_t b) { return b ? gcd64(b, a % b) : a; }

/* Which flows of a rail-optimized fat tree cross leaf uplinks, and which reduction is exact there.
 * Every node sends one flow per stream with a cross-node group to its ring successor (the same in the
 * full simulation); a flow between nodes of different leaves crosses both leaves' uplinks. Exact:
 *  (a) no uplink can bind: at every leaf, (crossing flows) x (a rail's bandwidth, the most one flow
 *      gets) <= the uplink's capacity; every flow is then limited by its own rails only, as every node's
 *      are alike: one node, its flows skip the uplinks;
 *  (b) every leaf is full and a stream's flows cross at every node or at none: each uplink carries
 *      leaf x (a node's crossing flows), and max-min sharing of identical flows gives each node 1/leaf
 *      of it: one node, whose crossing flows share one uplink of capacity / leaf;
 *  (c) otherwise nodes differ by their place in the leaf (a leaf's edge nodes cross, the others do not:
 *      MP over part of a leaf, oversubscribed), but the pattern repeats: leaves, MP blocks (kmp nodes)
 *      and rings (successor = n + stride, or the next in the block) are invariant under a shift by
 *      T = lcm(leaf, kmp) nodes, so when T divides the nodes, node n + jT does what node n does at the
 *      same instants: T nodes with rings closed modulo T, the leaves' real uplinks and each flow's
 *      crossing taken from the whole cluster's numbering, are exact.
 * Not exact: a last leaf left partly empty (no shift symmetry); the full simulation runs then. */
static void fabric_analyse(const zp_cluster *c, double oversubscription, zp_net *N)
{
    N->exact = 1;
    N->period = 1;
    N->leaf = 0;
    if (c->fabric != ZP_FABRIC_RAIL_FAT_TREE || c->leaf_nodes < 1)
        return; /* non-blocking: every node alike */
    const int L = c->leaf_nodes;
    const double s = oversubscription > 0 ? oversubscription : (c->oversubscription >= 1 ? c->oversubscription : 1);
    N->leaf = L;
    N->up_bw = L / s * N->rail_bw;
    /* expert groups' rings cross leaves in patterns of their own: none of the symmetry arguments is made */
    const int ep = N->grp[ZP_GROUP_EP].k * N->grp[ZP_GROUP_EP].g > 1; /* EP 1: EDP is the DP group, its rings */
    const int experts = N->grp[ZP_GROUP_EP].k > 1 || (ep && N->grp[ZP_GROUP_EDP].k > 1);
    const int replicas = N->grp[ZP_GROUP_RDP].k > 1; /* hybrid sharding's replicas: rings of their own too */
    const int own_rings = experts || replicas;
    const int leaves = (N->nodes + L - 1) / L;
    int all[ZP_NXS] = {1, 1}, none[ZP_NXS] = {1, 1}, worst_total = 0;
    for (int j = 0; j < leaves; j++) {
        int lo = j * L, hi = lo + L < N->nodes ? lo + L : N->nodes, total = 0;
        for (int xs = 0; xs < ZP_NXS; xs++) {
            const zp_group_shape *gs = xs_shape(N, xs);
            if (gs->k <= 1) {
                all[xs] = 0;
                continue;
            }
            int m = 0;
            for (int node = lo; node < hi; node++)
                m += zp_fabric_successor(N, gs, node) / L != j;
            if (m > N->crossing[xs])
                N->crossing[xs] = m;
            all[xs] &= m == hi - lo;
            none[xs] &= m == 0;
            total += m;
        }
        if (total > worst_total)
            worst_total = total;
    }
    if (!own_rings && worst_total * N->rail_bw <= N->up_bw * (1 + 1e-12))
        return; /* (a) */
    int sym = N->nodes % L == 0 && !own_rings;
    for (int xs = 0; xs < ZP_NXS; xs++)
        sym &= all[xs] || none[xs];
    if (sym) { /* (b) */
        for (int xs = 0; xs < ZP_NXS; xs++)
            N->rep_cross[xs] = N->crossing[xs] > 0;
        N->rep_up_bw = N->up_bw / L;
        return;
    }
    int64_t kmp = N->grp[ZP_GROUP_MP].k > 1 ? N->grp[ZP_GROUP_MP].k : 1;
    int64_t T = L / gcd64(L, kmp) * kmp;
    if (!own_rings && N->nodes % T == 0) { /* (c) */
        N->period = (int)T;
        return;
    }
    /* not exact; asked for anyway, one node takes the most loaded leaf's share: each ring paced by its
     * slowest hop (an upper bound of the step) */
    N->exact = 0;
    const int *cr = N->crossing;
    int mmax = cr[ZP_XS_COMPUTE] > cr[ZP_XS_COMM] ? cr[ZP_XS_COMPUTE] : cr[ZP_XS_COMM];
    for (int xs = 0; xs < ZP_NXS; xs++)
        N->rep_cross[xs] = N->crossing[xs] > 0;
    N->rep_up_bw = N->up_bw / (mmax > 0 ? mmax : 1);
    if (own_rings)
        snprintf(N->why, sizeof N->why, "%s span nodes of a fat tree",
                 experts ? "expert-parallel groups" : "hybrid sharding's replica groups");
    else
        snprintf(N->why, sizeof N->why,
                 "%d of a leaf's %d nodes send across its %.4g:1 uplinks, which bind, and %d nodes are no multiple "
                 "of the pattern's period (%lld nodes)",
                 worst_total, L, s, N->nodes, (long long)T);
}

/* The derived figures of a simulation; platform_gpn: GPUs per node of a user platform, or 0. */
zp_status zp_fabric_setup(const zp_sim_input *in, int platform_gpn, zp_net *N)
{
    memset(N, 0, sizeof *N);
    N->prof = in->profile;
    const zp_cluster *c = in->cluster;
    const zp_plan *p = in->plan;
    const zp_profile *prof = in->profile;
    int64_t gpus = p->dp * p->mp;
    int gpn = platform_gpn > 0 ? platform_gpn : zp_cluster_domain(c); /* a node: one NVLink domain */
    N->gpn = (int)(gpus < gpn ? gpus : gpn);
    int64_t nodes = (gpus + N->gpn - 1) / N->gpn;
    if (nodes > INT32_MAX / ZP_NXS)
        return ZP_FAIL(ZP_ERANGE, "%lld nodes are beyond the simulator", (long long)nodes);
    N->nodes = (int)nodes;
    if (p->mp > N->gpn && p->mp % N->gpn != 0)
        return ZP_FAIL(ZP_EINVAL, "MP %lld across nodes must be a multiple of the %d GPUs per node", (long long)p->mp,
                       N->gpn);
    const int rails = platform_gpn > 0 ? c->ib_rails : zp_cluster_domain_rails(c);
    N->rails = rails < N->gpn ? rails : N->gpn;
    if (N->rails < 1)
        N->rails = 1;
    N->gpr = N->gpn / N->rails;
    N->channels = c->inter_channels > 0 ? c->inter_channels : 1;
    N->flat = c->flat_rings;
    N->tree = c->tree_allreduce && !c->flat_rings;
    N->tree24 = c->nccl24_trees;
    /* NCCL 2.4.8 builds one ring per NIC across nodes (src/transport/net.cc netGetRings: each ring enters a
     * node through a card no earlier ring used) and doubles them across NVLink nodes (src/misc/rings.cc:
     * copyRings(nrings, nrings*2) "in case of multinode+NVLink"), at most MAXCHANNELS = 16: 16 on a DGX-2's
     * 8 NICs. Its tree threshold counts them (the bandwidth the simulation gives the rails is inter_channels') */
    N->tree24_channels = 2 * c->ib_rails < 16 ? 2 * c->ib_rails : 16;
    /* Link figures from the profile's collective fits (the built-in profile holds the preset's). */
    const zp_profile_coll_fit *intra = &prof->coll[ZP_PROFILE_ALLREDUCE][ZP_PROFILE_INTRA_NODE];
    const zp_profile_coll_fit *inter = &prof->coll[ZP_PROFILE_ALLREDUCE][ZP_PROFILE_INTER_NODE];
    N->nv_bw = intra->measured ? intra->busbw_gbs * 1e9 : c->nvlink_bw;
    N->nv_lat = intra->measured ? intra->latency_s / (intra->nranks > 1 ? intra->nranks - 1 : 1) : c->nvlink_latency;
    N->rail_bw = inter->measured ? inter->busbw_gbs * 1e9 / N->channels : c->ib_rail_bw * c->ib_efficiency;
    N->ib_lat = inter->measured ? inter->latency_s / (inter->nranks > 1 ? inter->nranks - 1 : 1) : c->ib_latency;
    N->cluster = c;
    N->nccl = prof->dev.sms > 0;
    N->ll128 = c->nccl_ll128;
    shape_groups(p, N);
    ZP_TRY(shape_expert_groups(p, N));
    shape_dispatch(in, N);
    ZP_TRY(shape_shard_groups(p, N));
    N->intra_flows = N->grp[ZP_GROUP_MP].g > 1 && N->grp[ZP_GROUP_DP].g > 1 && N->gpn > 1;
    if (in->platform_file) {
        N->exact = 0;
        snprintf(N->why, sizeof N->why, "a user platform need not be symmetric");
        return ZP_OK;
    }
    fabric_analyse(c, in->oversubscription, N);
    if (p->pp > 1 && N->leaf > 0) {
        N->exact = 0;
        snprintf(N->why, sizeof N->why, "pipeline stages on a rail-optimized fat tree are simulated in full");
    }
    return ZP_OK;
}
