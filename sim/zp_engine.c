#include "zp_engine.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>
#include <simgrid/actor.h>
#include <simgrid/comm.h>
#include <simgrid/engine.h>
#include <simgrid/exec.h>
#include <simgrid/host.h>
#include <simgrid/mailbox.h>
#include <simgrid/mutex.h>
#include <simgrid/semaphore.h>
#include <xbt/log.h>

#include "zp_child.h"
#include "zp_device.h"
#include "zp_io.h"
#include "zp_memory.h"
#include "zp_pipeline.h"

/* Streams that can drive cross-node collectives: compute (Megatron MP across nodes) and comm (DP). */
enum { XS_COMPUTE = 0, XS_COMM = 1, NXS = 2 };

/* A group of ranks as the engine sees it from one node. */
typedef struct {
    int k;      /* nodes the group spans */
    int g;      /* members of the group inside one node */
    int G;      /* groups of this kind sharing one node's rails at the same time */
    int stride; /* node distance between consecutive members' nodes (DP across MP blocks) */
} group_shape;

/* NCCL's tuner (src/graph/tuning.cc, ncclTopoTuneModel): a tree's bus bandwidth is 0.9 of the ring's
 * (busBw * .9) and its algorithm bandwidth busBw/2, so a tree all-reduce of S bytes takes 2S/(0.9 busBw)
 * against the ring's 2(k-1)/k S/busBw; its latency is 2 log2i(k) network steps against the ring's
 * 2(k-1) (log2i: the floor). */
#define ZP_TREE_BW_FRACTION 0.9

/* What the engine derives from the plan, the cluster and the profile before SimGrid starts: the same
 * for the full and the reduced simulation, so both cost every collective alike. */
typedef struct {
    int nodes;       /* nodes of the whole plan (the rings and trees span them all) */
    int gpn, rails, gpr, channels, flat, tree;
    int intra_flows; /* MP and DP groups both have members inside a node: NVSwitch flows contend */
    double nv_bw, nv_lat, rail_bw, ib_lat;
    int nccl;        /* the profile is a GPU's device model: collectives by NCCL's cost model (protocols) */
    int ll128;       /* ... whose NCCL has the LL128 protocol */
    group_shape grp[ZP_NGROUPS]; /* by zp_group */
    int xs_group[NXS];   /* the group whose ring a stream's cross-node flows follow in the fabric analysis:
                            compute: MP, or EP when MP stays in a node; comm: DP */
    /* the fabric (rail 0; every rail alike) */
    int leaf;            /* nodes per leaf switch, 0: a non-blocking fabric */
    double up_bw;        /* a leaf's uplink capacity, B/s (effective, as rail_bw) */
    int crossing[NXS];   /* flows of the stream that cross a leaf uplink at the most loaded leaf */
    int exact;           /* the reduced simulation equals the full one (see zp_engine.h) */
    int period;          /* nodes the reduced simulation instantiates: 1 (every node alike) or a period of
                            the fat tree's pattern (nodes n and n + period alike) */
    int rep_cross[NXS];  /* period 1: the representative's flow of the stream crosses its leaf's uplink */
    double rep_up_bw;    /* period 1: the capacity of the representative's share of that uplink, B/s */
    char why[200];       /* why the reduction is not exact */
} net;

typedef struct {
    double ts, dur;
    int stream, stage;
    const zp_op *op;
    const char *label;
} trace_ev;

/* Point-to-point mailboxes of a node: activations from the stage before, gradients from the stage
 * after, the tied embedding's gradient from the other end of the pipeline. */
enum { PP_MB_ACT = 0, PP_MB_GRAD = 1, PP_MB_EMB = 2, NPPMB = 3 };

static struct {
    const zp_sim_input *in;
    const zp_schedule *sc;        /* [stage]: each pipeline stage's schedule */
    int stages;                   /* P */
    int per_stage;                /* nodes instantiated per stage: D (full), 1 or a period (reduced) */
    int stages_per_node;          /* pipeline stages sharing one physical node (their p2p over NVSwitch) */
    net n;
    int reduced;                  /* 1: one node per role (node 0), its flows looped back to it */
    int nsim;                     /* nodes instantiated: stages x per_stage (a node: one stage's GPUs there) */
    sg_host_t *gpu0, *gpu1, *cpu; /* [node]: gpu-<n>-0 (also rail 0's GPU), gpu-<n>-1, cpu-<n> */
    sg_host_t *peer;              /* reduced: [node * NXS + xs] where a node's cross-node flows of each stream go */
    sg_sem_t *ch;                 /* [node * ZP_NCHANNELS + c] */
    sg_mutex_t *busy;             /* [node]: held while an op runs, in no-overlap mode */
    sg_mailbox_t *mb;             /* [node * NXS + xs]: rail-0 flows of the compute and comm streams */
    sg_mailbox_t *ppmb;           /* [node * NPPMB + k]: pipeline point-to-point */
    char err[160];                /* a pipeline mismatch found while simulating (schedule bug) */
    int streams_started, streams_finished;
    double end_time;
    zp_sim_result res;
    trace_ev *tr;
    int ntr, captr;
    zp_memcount memc;            /* node 0's live bytes (the trace's memory curve) */
    struct {
        double ts, device, host;
    } *mem;
    int nmem, capmem;
    double activities;
    double nccl_frac;             /* share of a GPU's SMs one running NCCL collective holds (nccl_ctas / sms);
                                     0: compute is not slowed by overlapped collectives */
} E;

/* ---------------------------------------------------------------- groups and the fabric */

static int stage_of(int node) { return node / E.per_stage; }
static int local_of(int node) { return node % E.per_stage; }
/* The node of stage `stage` at the same place (local index) as `node`: its pipeline neighbour. */
static int node_at(int stage, int node) { return stage * E.per_stage + local_of(node); }

static void shape_groups(const zp_plan *p, net *N)
{
    int gpn = N->gpn;
    group_shape *mp = &N->grp[ZP_GROUP_MP], *dp = &N->grp[ZP_GROUP_DP];
    if (p->mp <= gpn) {
        *mp = (group_shape){.k = 1, .g = (int)p->mp, .G = gpn / (int)p->mp, .stride = 1};
        if (p->dp * p->mp <= gpn)
            *dp = (group_shape){.k = 1, .g = (int)p->dp, .G = (int)p->mp, .stride = 1};
        else
            *dp = (group_shape){.k = N->nodes, .g = gpn / (int)p->mp, .G = (int)p->mp, .stride = 1};
    } else {
        int kmp = (int)(p->mp / gpn);
        *mp = (group_shape){.k = kmp, .g = gpn, .G = 1, .stride = 1};
        *dp = (group_shape){.k = (int)p->dp, .g = 1, .G = gpn, .stride = kmp};
    }
    N->grp[ZP_GROUP_EP] = N->grp[ZP_GROUP_EDP] = (group_shape){.k = 1, .g = 1, .G = gpn, .stride = 1};
}

/* A group of n members whose consecutive members are S ranks apart (EP: ep members, S = mp; EDP: dp/ep
 * members, S = ep·mp), on nodes of gpn GPUs: contiguous runs of g members per node over k nodes, or one
 * member per node every S/gpn nodes. Refused when the group does not tile the nodes. */
static zp_status group_of(const char *what, int64_t n, int64_t S, int gpn, group_shape *out)
{
    if (n <= 1) {
        *out = (group_shape){.k = 1, .g = 1, .G = gpn, .stride = 1};
        return ZP_OK;
    }
    if (S >= gpn) {
        if (S % gpn != 0)
            return ZP_FAIL(ZP_EINVAL, "%s group: members %lld ranks apart do not line up with nodes of %d GPUs", what,
                           (long long)S, gpn);
        *out = (group_shape){.k = (int)n, .g = 1, .G = gpn, .stride = (int)(S / gpn)};
        return ZP_OK;
    }
    int64_t per = gpn / S, g = n < per ? n : per;
    if (gpn % S != 0 || n % g != 0)
        return ZP_FAIL(ZP_EINVAL, "%s group: %lld members %lld ranks apart do not tile nodes of %d GPUs", what,
                       (long long)n, (long long)S, gpn);
    *out = (group_shape){.k = (int)(n / g), .g = (int)g, .G = (int)(gpn / g), .stride = 1};
    return ZP_OK;
}

/* Mixture of experts: the EP and EDP groups, and which group's ring each stream's cross-node flows follow.
 * The compute stream carries MP's and EP's collectives, one after the other: at most one of them may
 * cross nodes. */
static zp_status shape_expert_groups(const zp_plan *p, net *N)
{
    N->xs_group[XS_COMPUTE] = ZP_GROUP_MP;
    N->xs_group[XS_COMM] = ZP_GROUP_DP;
    if (p->ep <= 1)
        return ZP_OK;
    ZP_TRY(group_of("EP", p->ep, p->mp, N->gpn, &N->grp[ZP_GROUP_EP]));
    ZP_TRY(group_of("EDP", p->dp / p->ep, p->ep * p->mp, N->gpn, &N->grp[ZP_GROUP_EDP]));
    if (N->grp[ZP_GROUP_EP].k > 1) {
        if (N->grp[ZP_GROUP_MP].k > 1)
            return ZP_FAIL(ZP_EINVAL, "--ep %lld with --mp %lld: MP and EP groups both span nodes; keep MP within a node "
                                      "(--mp <= %d)",
                           (long long)p->ep, (long long)p->mp, N->gpn);
        N->xs_group[XS_COMPUTE] = ZP_GROUP_EP;
    }
    return ZP_OK;
}

static int successor(const net *N, const group_shape *gs, int node)
{
    if (gs->stride == 1 && gs->k < N->nodes) { /* contiguous block of k nodes (MP across nodes) */
        int base = node - node % gs->k;
        return base + (node - base + 1) % gs->k;
    }
    return (node + gs->stride) % N->nodes;
}

static const group_shape *xs_shape(const net *N, int xs) { return &N->grp[N->xs_group[xs]]; }

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
static void fabric_analyse(const zp_cluster *c, double oversubscription, net *N)
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
    const int experts = N->grp[ZP_GROUP_EP].k > 1 || N->grp[ZP_GROUP_EDP].k > 1;
    const int leaves = (N->nodes + L - 1) / L;
    int all[NXS] = {1, 1}, none[NXS] = {1, 1}, worst_total = 0;
    for (int j = 0; j < leaves; j++) {
        int lo = j * L, hi = lo + L < N->nodes ? lo + L : N->nodes, total = 0;
        for (int xs = 0; xs < NXS; xs++) {
            const group_shape *gs = xs_shape(N, xs);
            if (gs->k <= 1) {
                all[xs] = 0;
                continue;
            }
            int m = 0;
            for (int node = lo; node < hi; node++)
                m += successor(N, gs, node) / L != j;
            if (m > N->crossing[xs])
                N->crossing[xs] = m;
            all[xs] &= m == hi - lo;
            none[xs] &= m == 0;
            total += m;
        }
        if (total > worst_total)
            worst_total = total;
    }
    if (!experts && worst_total * N->rail_bw <= N->up_bw * (1 + 1e-12))
        return; /* (a) */
    int sym = N->nodes % L == 0 && !experts;
    for (int xs = 0; xs < NXS; xs++)
        sym &= all[xs] || none[xs];
    if (sym) { /* (b) */
        for (int xs = 0; xs < NXS; xs++)
            N->rep_cross[xs] = N->crossing[xs] > 0;
        N->rep_up_bw = N->up_bw / L;
        return;
    }
    int64_t kmp = N->grp[ZP_GROUP_MP].k > 1 ? N->grp[ZP_GROUP_MP].k : 1;
    int64_t T = L / gcd64(L, kmp) * kmp;
    if (!experts && N->nodes % T == 0) { /* (c) */
        N->period = (int)T;
        return;
    }
    /* not exact; asked for anyway, one node takes the most loaded leaf's share: each ring paced by its
     * slowest hop (an upper bound of the step) */
    N->exact = 0;
    int mmax = N->crossing[XS_COMPUTE] > N->crossing[XS_COMM] ? N->crossing[XS_COMPUTE] : N->crossing[XS_COMM];
    for (int xs = 0; xs < NXS; xs++)
        N->rep_cross[xs] = N->crossing[xs] > 0;
    N->rep_up_bw = N->up_bw / (mmax > 0 ? mmax : 1);
    if (experts)
        snprintf(N->why, sizeof N->why, "expert-parallel groups span nodes of a fat tree");
    else
        snprintf(N->why, sizeof N->why,
                 "%d of a leaf's %d nodes send across its %.4g:1 uplinks, which bind, and %d nodes are no multiple "
                 "of the pattern's period (%lld nodes)",
                 worst_total, L, s, N->nodes, (long long)T);
}

/* The derived figures of a simulation; platform_gpn: GPUs per node of a user platform, or 0. */
static zp_status net_setup(const zp_sim_input *in, int platform_gpn, net *N)
{
    memset(N, 0, sizeof *N);
    const zp_cluster *c = in->cluster;
    const zp_plan *p = in->plan;
    const zp_profile *prof = in->profile;
    int64_t gpus = p->dp * p->mp;
    int gpn = platform_gpn > 0 ? platform_gpn : c->gpus_per_node;
    N->gpn = (int)(gpus < gpn ? gpus : gpn);
    int64_t nodes = (gpus + N->gpn - 1) / N->gpn;
    if (nodes > INT32_MAX / NXS)
        return ZP_FAIL(ZP_ERANGE, "%lld nodes are beyond the simulator", (long long)nodes);
    N->nodes = (int)nodes;
    if (p->mp > N->gpn && p->mp % N->gpn != 0)
        return ZP_FAIL(ZP_EINVAL, "MP %lld across nodes must be a multiple of the %d GPUs per node", (long long)p->mp,
                       N->gpn);
    N->rails = c->ib_rails < N->gpn ? c->ib_rails : N->gpn;
    if (N->rails < 1)
        N->rails = 1;
    N->gpr = N->gpn / N->rails;
    N->channels = c->inter_channels > 0 ? c->inter_channels : 1;
    N->flat = c->flat_rings;
    N->tree = c->tree_allreduce && !c->flat_rings;
    /* Link figures from the profile's collective fits (the built-in profile holds the preset's). */
    const zp_profile_coll_fit *intra = &prof->coll[ZP_PROFILE_ALLREDUCE][ZP_PROFILE_INTRA_NODE];
    const zp_profile_coll_fit *inter = &prof->coll[ZP_PROFILE_ALLREDUCE][ZP_PROFILE_INTER_NODE];
    N->nv_bw = intra->measured ? intra->busbw_gbs * 1e9 : c->nvlink_bw;
    N->nv_lat = intra->measured ? intra->latency_s / (intra->nranks > 1 ? intra->nranks - 1 : 1) : c->nvlink_latency;
    N->rail_bw = inter->measured ? inter->busbw_gbs * 1e9 / N->channels : c->ib_rail_bw * c->ib_efficiency;
    N->ib_lat = inter->measured ? inter->latency_s / (inter->nranks > 1 ? inter->nranks - 1 : 1) : c->ib_latency;
    N->nccl = prof->dev.sms > 0;
    N->ll128 = c->nccl_ll128;
    shape_groups(p, N);
    ZP_TRY(shape_expert_groups(p, N));
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

/* ---------------------------------------------------------------- collectives */

static const zp_op_info *info_of(const zp_op *op) { return &zp_op_table[op->type]; }

/* Ring passes over the buffer: 2 for an all-reduce (reduce-scatter + all-gather), 1 otherwise. */
static double coll_factor(const zp_op *op) { return zp_coll_get(info_of(op)->coll)->passes; }

/* Rails a cross-node collective of this group shape uses per node. */
static int coll_rails(const group_shape *gs)
{
    int want = gs->G * E.n.channels;
    return want < E.n.rails ? want : E.n.rails;
}

/* NCCL's cost model (src/graph/tuning.cc, ncclTopoTuneModel and ncclTopoGetAlgoTime, NCCL 2.8-2.10), which
 * NCCL's tuner uses to pick an algorithm (ring, tree) and a protocol per collective and message size:
 *   time = baseLat[algo][proto] + steps inside nodes x hwLat[NVLink][algo][proto]
 *                               + steps across nodes x hwLat[network][algo][proto] + bytes / (busBw x fraction)
 * in us and GB/s. LL sends 4 bytes of data per 8 on the wire and flags every line (a quarter of the ring's
 * bus bandwidth, a tree's /3.8), LL128 120 of 128 bytes (0.92), Simple all of it with the largest latency;
 * a tree runs at 0.9 of the ring's bandwidth. Ring Simple all-reduces across nodes pay 1.9x their latency
 * at large sizes (the tuner's "plateau" factor). LL's intra-node hops cost 1.8x when nodes > 1. */
enum { P_LL = 0, P_LL128, P_SIMPLE, NPROTO };
enum { A_TREE = 0, A_RING, NALGO };
static const double nccl_base_us[NALGO][NPROTO] = {{4.4, 4.4, 0.0}, {3.6, 10.0, 8.4}};
static const double nccl_hw_nvlink_us[NALGO][NPROTO] = {{0.52, 1.2, 28.0}, {0.47, 1.9, 3.4}};
static const double nccl_hw_net_us[NALGO][NPROTO] = {{5.0, 8.5, 50.0}, {2.7, 4.0, 9.6}};
static const double nccl_bw_frac[NALGO][NPROTO] = {{0.9 / 3.8, 0.9 * 0.915, 0.9}, {0.25, 0.92, 1.0}};

/* What NCCL runs for one collective op of node 0: algorithm, protocol, latency and the fraction of the
 * links' bandwidth its protocol gets. */
typedef struct {
    int tree;      /* the inter-node part as NCCL's double binary tree (all-reduce only) */
    int proto;     /* P_LL, P_LL128, P_SIMPLE */
    double lat;    /* s */
    double frac;   /* of the bus bandwidth */
} coll_plan;

/* Ring passes over the buffer: 2 for an all-reduce (reduce-scatter + all-gather), 1 otherwise. */
static double coll_factor_kind(zp_coll_kind k) { return zp_coll_get(k)->passes; }

/* The tuner's uncontended time of (algo, proto) for `bytes` over the group, and its latency. The links:
 * the NVSwitch phase at nv_bw, the node's share over its rails at rail_bw (as the simulation's flows). */
static double nccl_time(const zp_op *op, const group_shape *gs, int algo, int proto, double *lat_out)
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
    double hw_intra = nccl_hw_nvlink_us[algo][proto] * (multi && proto == P_LL ? 1.8 : 1.0);
    double lat = (nccl_base_us[algo][proto] + intra_steps * hw_intra + inter_steps * nccl_hw_net_us[algo][proto]) *
                 1e-6;
    if (algo == A_RING && proto == P_SIMPLE && multi && kind == ZP_COLL_ALLREDUCE && op->bytes >= P / 16.0 * 65536)
        lat *= 1.9;
    const double frac = nccl_bw_frac[algo][proto];
    double t = 0.0;
    if (g > 1 && !(multi && E.n.flat))
        t += f * (g - 1.0) / g * op->bytes / (E.n.nv_bw * frac);
    if (multi) {
        double node = algo == A_TREE ? 2.0 * op->bytes * gs->G
                                     : f * (E.n.flat ? (P - 1.0) / P : (k - 1.0) / k) * op->bytes * gs->G;
        t += node / coll_rails(gs) / (E.n.rail_bw * frac);
    }
    *lat_out = lat;
    return lat + t;
}

/* A profile measured here (no GPU device model: MPI, or a calibrated machine): its fitted latency per ring
 * step (nv_lat, ib_lat), the ring at full bandwidth, and across nodes the double binary tree where its time
 * (2 log2i(k) steps, 2S per node at 0.9 of the bandwidth) beats the ring's 2(k-1) steps; a flat ring's
 * f(P-1) steps each last as long as its slowest hop. */
static coll_plan coll_choose_measured(const zp_op *op, const group_shape *gs)
{
    coll_plan c = {.tree = 0, .proto = P_SIMPLE, .lat = 0, .frac = 1.0};
    const double f = coll_factor(op), k = gs->k;
    if (E.n.tree && gs->k >= 2 && info_of(op)->coll == ZP_COLL_ALLREDUCE) {
        double per_rail = op->bytes * gs->G / coll_rails(gs) / E.n.rail_bw; /* s to send S once */
        double ring = 2.0 * (k - 1.0) * E.n.ib_lat + 2.0 * (k - 1.0) / k * per_rail;
        double tree = 2.0 * floor(log2(k)) * E.n.ib_lat + 2.0 * per_rail / ZP_TREE_BW_FRACTION;
        c.tree = tree < ring;
    }
    if (c.tree)
        c.frac = ZP_TREE_BW_FRACTION;
    if (gs->k > 1 && E.n.flat) {
        c.lat = f * ((double)gs->g * gs->k - 1.0) * E.n.ib_lat;
        return c;
    }
    if (gs->g > 1)
        c.lat += f * (gs->g - 1.0) * E.n.nv_lat;
    if (gs->k > 1)
        c.lat += (c.tree ? 2.0 * floor(log2(k)) : f * (k - 1.0)) * E.n.ib_lat;
    return c;
}

/* NCCL's choice: the (algorithm, protocol) of least estimated time; trees for all-reduces across nodes on
 * presets that have them, LL128 where the preset's NCCL has it. */
static coll_plan coll_choose(const zp_op *op, const group_shape *gs)
{
    coll_plan best = {.tree = 0, .proto = P_SIMPLE, .lat = 0, .frac = 1.0};
    if (!E.n.nccl || info_of(op)->coll == ZP_COLL_ALLTOALL) /* all-to-all: grouped sends, no tuner */
        return coll_choose_measured(op, gs);
    double tbest = HUGE_VAL;
    const int trees = E.n.tree && gs->k > 1 && info_of(op)->coll == ZP_COLL_ALLREDUCE;
    for (int a = trees ? A_TREE : A_RING; a < NALGO; a++)
        for (int p = 0; p < NPROTO; p++) {
            if (p == P_LL128 && !E.n.ll128)
                continue;
            double lat, t = nccl_time(op, gs, a, p, &lat);
            if (t < tbest) {
                tbest = t;
                best = (coll_plan){.tree = a == A_TREE, .proto = p, .lat = lat, .frac = nccl_bw_frac[a][p]};
            }
        }
    return best;
}

static int coll_tree(const zp_op *op, const group_shape *gs) { return coll_choose(op, gs).tree; }

/* Bytes each GPU sends over its NVSwitch port in the intra-node ring phase(s) of a collective:
 * f(g-1)/g of the buffer, at its protocol's fraction of the bandwidth (more bytes on the wire). A flat ring
 * across nodes pipelines its NVSwitch hops behind the slower InfiniBand hop: none counted. */
static double coll_intra_bytes(const zp_op *op, const group_shape *gs)
{
    if (gs->g <= 1 || (gs->k > 1 && E.n.flat))
        return 0.0;
    if (info_of(op)->coll == ZP_COLL_ALLTOALL) /* S/(g·k) to each of the g-1 others in the node */
        return (gs->g - 1.0) / ((double)gs->g * gs->k) * op->bytes;
    return coll_factor(op) * (gs->g - 1.0) / gs->g * op->bytes / coll_choose(op, gs).frac;
}

/* The latency of a collective, s, by NCCL's model for its chosen algorithm and protocol. */
static double coll_latency(const zp_op *op, const group_shape *gs) { return coll_choose(op, gs).lat; }

/* A collective within one node whose kind the profile measured (points, not only a fit) on exactly this
 * many ranks: the measured time of that kind at that size (zp_profile_collective_time_measured). Reduce-
 * scatter, all-gather and all-reduce differ a lot on shared-memory MPI, which one link figure cannot
 * express. -1 otherwise (the built-in presets hold no points: their link model below is unchanged). */
static double coll_profile_time(const zp_op *op, const group_shape *gs)
{
    const zp_coll_kind kind = info_of(op)->coll;
    if (gs->k > 1 || gs->g <= 1 || (unsigned)kind >= ZP_PROFILE_NCOLL)
        return -1;
    const zp_profile *p = E.in->profile;
    const zp_profile_coll_fit *f = &p->coll[kind][ZP_PROFILE_INTRA_NODE];
    if (!f->measured || f->npoints < 2 || f->nranks != gs->g)
        return -1;
    return zp_profile_collective_time_measured(p, (zp_profile_coll)kind, ZP_PROFILE_INTRA_NODE, op->bytes, gs->g);
}

/* A collective over one rank moves nothing between GPUs, but one whose output is a new buffer (a
 * reduce-scatter into the partition, stage 3's gather of a group from the shard: the table's writes_new)
 * still copies it once at the device's copy bandwidth (NCCL and MPI both copy). An all-reduce or a
 * stage 1-2 gather in place copies nothing. */
static double coll_self_time(const zp_op *op)
{
    if (!info_of(op)->writes_new)
        return 0.0;
    const zp_profile *p = E.in->profile;
    double bw = p && p->copy_gbs > 0 ? p->copy_gbs * 1e9 : 0.0; /* STREAM copy: read + write counted */
    return bw > 0 ? 2.0 * op->bytes / bw : 0.0;
}

/* Intra-node phases as time (NVSwitch uncontended) plus the latencies. */
static double coll_local_time(const zp_op *op, const group_shape *gs)
{
    if (gs->g <= 1 && gs->k <= 1)
        return coll_self_time(op);
    double t = coll_profile_time(op, gs);
    return t >= 0 ? t : coll_intra_bytes(op, gs) / E.n.nv_bw + coll_latency(op, gs);
}

/* Bytes one rail carries: the node's G groups each send f(k-1)/k of the buffer (hierarchical ring),
 * f(P-1)/P of it (a flat ring of P = g*k GPUs leaves each node once) or, as a double binary tree, 2S
 * (interior in one tree, a leaf in the other, every node sends half the buffer up and down once per
 * tree: S up and S down), over E.n.channels rings spread over the rails in use; divided by the protocol's
 * fraction of the bandwidth (a tree's includes its 0.9). */
static double coll_rail_bytes(const zp_op *op, const group_shape *gs)
{
    double P = (double)gs->g * gs->k, node_bytes;
    const coll_plan c = coll_choose(op, gs);
    if (info_of(op)->coll == ZP_COLL_ALLTOALL) {
        /* no hierarchy helps an all-to-all: each of the node's g members sends (k-1)/k of its buffer to
         * the other nodes */
        node_bytes = (gs->k - 1.0) / gs->k * op->bytes * gs->g * gs->G;
    } else if (!E.n.flat && c.tree) {
        node_bytes = 2.0 * op->bytes * gs->G;
    } else {
        double share = E.n.flat ? (P - 1.0) / P : (gs->k - 1.0) / gs->k;
        node_bytes = coll_factor(op) * share * op->bytes * gs->G;
    }
    return node_bytes / coll_rails(gs) / c.frac;
}

/* ---------------------------------------------------------------- trace */

static void trace_add(int node, int stream, double ts, double dur, const zp_op *op, const char *label)
{
    if (!E.in->trace_path || local_of(node) != 0 || dur <= 0)
        return;
    if (E.ntr == E.captr) {
        int cap = E.captr ? 2 * E.captr : 4096;
        trace_ev *n = realloc(E.tr, (size_t)cap * sizeof *n);
        if (!n)
            return; /* the trace is best effort; the simulation goes on */
        E.tr = n;
        E.captr = cap;
    }
    E.tr[E.ntr++] = (trace_ev){.ts = ts, .dur = dur, .stream = stream, .stage = stage_of(node), .op = op,
                               .label = label};
}

/* An alloc or free of node 0 at time ts: a point of the trace's memory curve. */
static void trace_mem(int node, double ts, const zp_op *op, int alloc)
{
    if (!E.in->trace_path || node != 0)
        return;
    zp_memcount_add(&E.memc, op->cat, alloc ? op->bytes : -op->bytes);
    if (E.nmem == E.capmem) {
        int cap = E.capmem ? 2 * E.capmem : 1024;
        void *n = realloc(E.mem, (size_t)cap * sizeof *E.mem);
        if (!n)
            return;
        E.mem = n;
        E.capmem = cap;
    }
    if (E.nmem > 0 && E.mem[E.nmem - 1].ts == ts)
        E.nmem--; /* several changes at one instant: the last value stands */
    E.mem[E.nmem].ts = ts;
    E.mem[E.nmem].device = E.memc.cur_dev;
    E.mem[E.nmem].host = E.memc.cur[ZP_MEM_HOST];
    E.nmem++;
}

static zp_status trace_write(const char *path)
{
    json_t *events = json_array();
    static const char *const tnames[] = {"compute stream", "comm stream (ZeRO-DP)", "PCIe", "CPU"};
    /* one process (track group) per pipeline stage: its first node, every GPU of it. A stream waiting for
     * another (a bucket not yet reduced, a gather not yet done) is idle: its waits go on a track of their
     * own below it (tid ZP_NSTREAMS + stream), so a stream's track shows its work */
    int waits[ZP_NSTREAMS] = {0};
    for (int i = 0; i < E.ntr; i++)
        if (E.tr[i].op && info_of(E.tr[i].op)->cls == ZP_OPC_WAIT)
            waits[E.tr[i].stream] = 1;
    for (int st = 0; st < E.stages; st++) {
        for (int s = 0; s < ZP_NSTREAMS; s++) {
            char wname[64];
            snprintf(wname, sizeof wname, "%s: waiting", tnames[s]);
            json_array_append_new(events, json_pack("{s:s, s:s, s:i, s:i, s:{s:s}}", "name", "thread_name", "ph", "M",
                                                    "pid", st, "tid", s, "args", "name", tnames[s]));
            json_array_append_new(events, json_pack("{s:s, s:s, s:i, s:i, s:{s:i}}", "name", "thread_sort_index",
                                                    "ph", "M", "pid", st, "tid", s, "args", "sort_index", 2 * s));
            if (waits[s]) {
                json_array_append_new(events, json_pack("{s:s, s:s, s:i, s:i, s:{s:s}}", "name", "thread_name", "ph",
                                                        "M", "pid", st, "tid", ZP_NSTREAMS + s, "args", "name", wname));
                json_array_append_new(events, json_pack("{s:s, s:s, s:i, s:i, s:{s:i}}", "name", "thread_sort_index",
                                                        "ph", "M", "pid", st, "tid", ZP_NSTREAMS + s, "args",
                                                        "sort_index", 2 * s + 1));
            }
        }
        char pname[96];
        if (E.stages == 1)
            snprintf(pname, sizeof pname, "node 0 (every GPU of the node)");
        else
            snprintf(pname, sizeof pname, "pipeline stage %d (its first node, every GPU of it)", st);
        json_array_append_new(events, json_pack("{s:s, s:s, s:i, s:{s:s}}", "name", "process_name", "ph", "M", "pid",
                                                st, "args", "name", pname));
        if (E.stages > 1)
            json_array_append_new(events, json_pack("{s:s, s:s, s:i, s:{s:i}}", "name", "process_sort_index", "ph",
                                                    "M", "pid", st, "args", "sort_index", st));
    }
    for (int i = 0; i < E.ntr; i++) {
        const trace_ev *e = &E.tr[i];
        const zp_op *op = e->op;
        json_t *args = json_object();
        if (op) {
            json_object_set_new(args, "layer", json_integer(op->layer));
            json_object_set_new(args, "micro_batch", json_integer(op->micro));
            const zp_op_info *in = info_of(op);
            if (op->flops > 0) {
                json_object_set_new(args, "gemm_mnk_batch",
                                    json_pack("[f,f,f,f]", op->m, op->n, op->k, op->batch));
                json_object_set_new(args, "tflops", json_real(op->flops / e->dur / 1e12));
            } else if (in->cls == ZP_OPC_COLL || in->cls == ZP_OPC_COPY || in->cls == ZP_OPC_P2P) {
                json_object_set_new(args, "bytes", json_real(op->bytes));
                if (in->cls == ZP_OPC_P2P)
                    json_object_set_new(args, "peer_stage", json_integer(op->item));
                if (in->cls == ZP_OPC_COLL)
                    json_object_set_new(args, "group", json_string(zp_group_name(in->group)));
            }
        }
        const int wait = !op || info_of(op)->cls == ZP_OPC_WAIT;
        const char *cat = wait ? "wait" : zp_phase_name(op->phase);
        json_array_append_new(events, json_pack("{s:s, s:s, s:s, s:f, s:f, s:i, s:i, s:o}", "name", e->label, "cat",
                                                cat, "ph", "X", "ts", e->ts * 1e6, "dur", e->dur * 1e6, "pid", e->stage,
                                                "tid", wait ? ZP_NSTREAMS + e->stream : e->stream, "args", args));
    }
    /* the memory curve: node 0's live bytes as its streams allocate and free (Perfetto counter track) */
    for (int i = 0; i < E.nmem; i++)
        json_array_append_new(events, json_pack("{s:s, s:s, s:f, s:i, s:{s:f, s:f}}", "name", "memory per GPU (GB)",
                                                "ph", "C", "ts", E.mem[i].ts * 1e6, "pid", 0, "args", "device",
                                                E.mem[i].device / 1e9, "host", E.mem[i].host / 1e9));
    json_t *root = json_pack("{s:o, s:s}", "traceEvents", events, "displayTimeUnit", "ms");
    zp_io_atomic *a;
    zp_status st = zp_io_atomic_open(path, &a);
    if (st == ZP_OK) {
        if (json_dumpf(root, zp_io_atomic_file(a), JSON_COMPACT) != 0) {
            zp_io_atomic_abort(a);
            st = ZP_FAIL(ZP_EIO, "writing the trace '%s' failed", path);
        } else {
            st = zp_io_atomic_commit(a);
        }
    }
    json_decref(root);
    return st;
}

/* ---------------------------------------------------------------- actors */

/* The flows of a cross-node collective from `node`. Every rail in use carries the same bytes and
 * rail 0 is used by every collective, so rail 0 is the most loaded one and sets the collective's end:
 * the engine simulates the flow on rail 0 (the stream actor's own host, gpu-<n>-0) and the others are
 * identical by symmetry. Full simulation: sending to the ring successor and receiving from the
 * predecessor through mailboxes pairs neighbours as the ring does. Reduced: node 0 stands for every node,
 * which all send and receive alike at the same instants; its flow leaves through its rail's up
 * direction (and its leaf's uplink share when the stream's flows cross leaves) and comes back through
 * the down directions, as its predecessor's flow would: the same links under the same load. */
static void cross_node_flows(int node, int xs, const zp_op *op, const group_shape *gs)
{
    static char token; /* a mailbox payload must not be NULL */
    double bytes = coll_rail_bytes(op, gs);
    if (E.reduced && E.per_stage == 1) {
        sg_host_sendto(E.gpu0[node], E.peer[(size_t)node * NXS + (size_t)xs], bytes > 1 ? bytes : 1);
        E.activities += 1;
        return;
    }
    /* a period's ring closes on itself; a stage's rings stay in its nodes */
    int succ = node_at(stage_of(node), successor(&E.n, gs, local_of(node)) % E.per_stage);
    sg_comm_t put = sg_mailbox_put_async(E.mb[(size_t)succ * NXS + (size_t)xs], &token, (long)(bytes > 1 ? bytes : 1));
    sg_mailbox_get(E.mb[(size_t)node * NXS + (size_t)xs]);
    sg_comm_wait(put);
    E.activities += 2;
}

/* Adds `dur` seconds of node 0's stream `s` running (or waiting in) `op` to the breakdown: the compute
 * stream's time by phase and by the op's part (a wait's is its channel's), the other streams' busy time. */
static void account(zp_stream s, const zp_op *op, double dur)
{
    zp_sim_result *R = &E.res;
    const zp_opc cls = info_of(op)->cls;
    if (s == ZP_STREAM_COMPUTE) {
        R->phase[op->phase] += dur;
        switch (zp_op_part(op)) {
        case ZP_PART_COMPUTE: R->compute += dur; break;
        case ZP_PART_MP_COMM: R->mp_comm += dur; break;
        case ZP_PART_DP_COMM: R->dp_exposed += dur; break; /* DP work the compute stream waits for */
        case ZP_PART_OPTIMIZER: R->optimizer += dur; break;
        case ZP_PART_OFFLOAD: R->offload_exposed += dur; break;
        case ZP_PART_PP_COMM: R->pp_exposed += dur; break;
        default: break;
        }
    } else if (cls != ZP_OPC_WAIT) {
        if (s == ZP_STREAM_COMM)
            R->comm_busy += dur;
        else if (s == ZP_STREAM_PCIE || cls == ZP_OPC_COPY)
            R->pcie_busy += dur;
    }
}

static sg_sem_t channel(int node, zp_channel c) { return E.ch[(size_t)node * ZP_NCHANNELS + c]; }

/* Bytes a point-to-point op puts on its route: each GPU sends its own (Megatron-LM's scatter/gather: 1/t of
 * the activation per MP rank), so rail 0 carries those of the GPUs it serves; NVSwitch ports are per GPU. */
static double p2p_bytes(const zp_op *op, int cross_node)
{
    double b = op->bytes * (cross_node ? (double)E.n.gpr : 1.0);
    return b > 1 ? b : 1;
}

/* Pipeline stages `a` and `b` have their nodes in one physical node (p2p over NVSwitch). */
static int same_physical(int stage_a, int stage_b)
{
    return E.stages_per_node > 1 && stage_a / E.stages_per_node == stage_b / E.stages_per_node;
}

/* A send, receive or exchange with the neighbour node of stage op->item; a receive checks it gets the
 * micro-batch it expects (the two schedules must agree on the order). */
static void p2p_op(int node, const zp_op *op)
{
    const zp_op_info *in = info_of(op);
    const int peer = node_at(op->item, node), me = stage_of(node);
    const int k = in->p2p == ZP_P2P_EXCHANGE ? PP_MB_EMB : (op->type == ZP_OPK_PP_SEND_ACT || op->type == ZP_OPK_PP_RECV_ACT ? PP_MB_ACT : PP_MB_GRAD);
    const double bytes = p2p_bytes(op, !same_physical(me, op->item));
    sg_comm_t put = NULL;
    if (in->p2p != ZP_P2P_RECV) {
        put = sg_mailbox_put_async(E.ppmb[(size_t)peer * NPPMB + (size_t)k], (void *)op, (long)bytes);
        E.activities += 1;
    }
    if (in->p2p != ZP_P2P_SEND) {
        const zp_op *from = sg_mailbox_get(E.ppmb[(size_t)node * NPPMB + (size_t)k]);
        E.activities += 1;
        if (from && from->micro != op->micro && !E.err[0])
            snprintf(E.err, sizeof E.err,
                     "pipeline stage %d expected micro-batch %d from stage %d and got micro-batch %d (schedule bug)",
                     me, op->micro, op->item, from->micro);
    }
    if (put)
        sg_comm_wait(put);
}

/* NCCL's collective kernels run one CTA per channel, each on an SM of its own, for as long as the collective
 * lasts (NVIDIA's NCCL INFO logs: "24 coll channels" on 8-GPU A100 and H100 NVSwitch nodes; Nsight shows
 * ncclAllGather's 24 blocks beside a GEMM on an H100). Kernels overlapped with a collective get the other
 * SMs. The GPU host's speed stands for its SMs: a compute stream's kernels run as executions on it (their
 * device time x the host's speed, in flops), and each running collective holds a share nccl_ctas / sms of
 * it (an execution bounded to that rate), so SimGrid's sharing slows the kernels by what the collectives
 * hold for exactly as long as they overlap. A collective is not slowed by the kernels: its CTAs are
 * resident. Copies (copy engines) and the CPU hold no SMs. */
/* An execution holding the collective's share of this GPU for `seconds` (started). */
static sg_exec_t nccl_start(double seconds)
{
    const double rate = E.nccl_frac * sg_host_get_speed(sg_host_self());
    sg_exec_t x = sg_actor_exec_init(rate * seconds);
    sg_exec_set_bound(x, rate);
    sg_exec_start(x);
    E.activities += 1;
    return x;
}

/* A collective of flows: its share held until it ends (nccl_release cancels it); NULL when not modelled. */
static sg_exec_t nccl_hold(void) { return E.nccl_frac > 0 ? nccl_start(1e9) : NULL; }

static void nccl_release(sg_exec_t x)
{
    if (x)
        sg_exec_cancel(x);
}

/* Let a stream's coalesced time pass: its kernels `*kpending` as an execution that collectives running
 * beside it slow down (node 0 records what they lost, in compute and in the phase `kphase` of the last of
 * them), then the rest `*pending`. */
static void flush(int rec, double *pending, double *kpending, int kphase)
{
    if (*kpending > 0) {
        const double t0 = simgrid_get_clock();
        sg_actor_execute(*kpending * sg_host_get_speed(sg_host_self()));
        E.activities += 1;
        const double lost = simgrid_get_clock() - t0 - *kpending;
        if (rec && lost > 0) {
            E.res.compute += lost;
            E.res.nccl_contention += lost;
            E.res.phase[kphase] += lost;
        }
        *kpending = 0;
    }
    if (*pending > 0) {
        sg_actor_sleep_for(*pending);
        E.activities += 1;
        *pending = 0;
    }
}

static void stream_actor(int argc, char *argv[])
{
    (void)argc;
    const int node = atoi(argv[1]);
    const zp_stream s = (zp_stream)atoi(argv[2]);
    const int xs = s == ZP_STREAM_COMPUTE ? XS_COMPUTE : XS_COMM;
    const zp_profile *prof = E.in->profile;
    const int rec = node == 0;
    double pending = 0.0;     /* coalesced time of consecutive local ops not yet slept */
    double kpending = 0.0;    /* of the compute stream's coalesced kernels, under nccl_frac: run as an execution */
    int kphase = 0;           /* the phase of the last of them */
    double run_start = simgrid_get_clock();
    zp_sim_result *R = &E.res;
    E.streams_started++;

    const zp_schedule *sc = &E.sc[stage_of(node)];
    if (s == ZP_STREAM_COMPUTE)
        for (int k = 0; k < NPPMB; k++) { /* sends to this node start at once (Megatron's isend) */
            sg_mailbox_t mb = E.ppmb[(size_t)node * NPPMB + (size_t)k];
            sg_mailbox_set_receiver(sg_mailbox_get_name(mb));
        }
    for (int oi = 0; oi < sc->n[s]; oi++) {
        const zp_op *op = &sc->ops[s][oi];
        const zp_op_info *in = info_of(op);
        double local = -1.0; /* >= 0: the op is pure time on this stream */
        const group_shape *gs = &E.n.grp[in->group < ZP_NGROUPS ? in->group : ZP_GROUP_DP];
        switch (in->cls) {
        case ZP_OPC_ALLOC:
        case ZP_OPC_FREE: trace_mem(node, run_start + pending, op, in->cls == ZP_OPC_ALLOC); continue;
        case ZP_OPC_COMPUTE: local = zp_device_op_time(prof, op, E.n.gpn); break;
        case ZP_OPC_COLL:
            if (gs->k <= 1 && !E.n.intra_flows)
                local = coll_local_time(op, gs);
            break;
        default: break;
        }
        if (local >= 0.0) {
            double start = run_start + pending + kpending;
            if (E.busy) {
                /* no overlap: every op alone on the node, one at a time */
                double asked = simgrid_get_clock();
                sg_mutex_lock(E.busy[node]);
                start = simgrid_get_clock();
                if (rec && s == ZP_STREAM_COMPUTE) /* waiting for the node: still this phase's time */
                    R->phase[op->phase] += start - asked;
                if (local > 0)
                    sg_actor_sleep_for(local);
                sg_mutex_unlock(E.busy[node]);
                E.activities += 1;
                run_start = simgrid_get_clock();
            } else if (E.nccl_frac > 0 && in->cls == ZP_OPC_COLL && s != ZP_STREAM_COMPUTE && local > 0) {
                /* a collective beside the kernels: its CTAs held for its time (not coalesced) */
                flush(rec, &pending, &kpending, kphase);
                start = simgrid_get_clock();
                sg_exec_wait(nccl_start(local));
                run_start = simgrid_get_clock();
            } else if (E.nccl_frac > 0 && s == ZP_STREAM_COMPUTE && in->cls == ZP_OPC_COMPUTE) {
                kpending += local; /* coalesced kernels: run at the next interaction, beside any collective */
                kphase = op->phase;
            } else {
                pending += local; /* coalesced: slept at the next interaction */
            }
            trace_add(node, s, start, local, op, zp_op_name(op));
            if (rec)
                account(s, op, local);
            if (s == ZP_STREAM_COMPUTE && local_of(node) == 0 && stage_of(node) < ZP_ENGINE_MAX_STAGE_STATS &&
                zp_op_part(op) == ZP_PART_COMPUTE)
                R->stage_busy[stage_of(node)] += local;
            continue;
        }
        /* an op that interacts with other actors: first let the coalesced time pass */
        flush(rec, &pending, &kpending, kphase);
        double t0 = simgrid_get_clock();
        int locked = E.busy && (in->cls == ZP_OPC_COLL || in->cls == ZP_OPC_COPY);
        if (locked)
            sg_mutex_lock(E.busy[node]);
        switch (in->cls) {
        case ZP_OPC_COLL: {
            /* with MP and DP groups sharing a node's NVSwitch ports, the intra-node phases are flows
             * between the node's two representative GPUs, so they contend */
            sg_exec_t held = s != ZP_STREAM_COMPUTE ? nccl_hold() : NULL;
            double lat = coll_latency(op, gs), ib = coll_intra_bytes(op, gs);
            if (E.n.intra_flows) {
                if (lat > 0)
                    sg_actor_sleep_for(lat);
                if (ib > 0) {
                    sg_host_sendto(E.gpu0[node], E.gpu1[node], ib);
                    E.activities += 1;
                }
            } else {
                double lt = coll_profile_time(op, gs);
                if (lt < 0)
                    lt = ib / E.n.nv_bw + lat;
                if (lt > 0)
                    sg_actor_sleep_for(lt);
            }
            if (gs->k > 1) {
                if (rec && coll_tree(op, gs))
                    R->tree_allreduces += 1;
                cross_node_flows(node, xs, op, gs);
            }
            nccl_release(held);
            break;
        }
        case ZP_OPC_COPY:
            if (in->dir == ZP_COPY_D2H)
                sg_host_sendto(E.gpu0[node], E.cpu[node], op->bytes);
            else
                sg_host_sendto(E.cpu[node], E.gpu0[node], op->bytes);
            E.activities += 1;
            break;
        case ZP_OPC_P2P: p2p_op(node, op); break;
        case ZP_OPC_SIGNAL: sg_sem_release(channel(node, op->channel)); break;
        case ZP_OPC_WAIT: sg_sem_acquire(channel(node, op->channel)); break;
        default: break;
        }
        if (locked)
            sg_mutex_unlock(E.busy[node]);
        double dur = simgrid_get_clock() - t0;
        run_start = simgrid_get_clock();
        trace_add(node, s, t0, dur, op, zp_op_name(op));
        if (rec && dur > 0) {
            account(s, op, dur);
        }
    }
    flush(rec, &pending, &kpending, kphase);
    double now = simgrid_get_clock();
    if (rec && s == ZP_STREAM_COMPUTE)
        E.res.step_time = fmax(E.res.step_time, now); /* the tail is added once every stream ended */
    if (now > E.end_time)
        E.end_time = now;
    E.streams_finished++;
}

/* ---------------------------------------------------------------- platform */

/* One node's hosts and links: its GPUs, its CPU, PCIe, the NVSwitch ports of its two representative GPUs
 * and rail 0's NIC (the only rail simulated: the others carry the same flows). */
static void write_node(FILE *f, int n, double speed)
{
    for (int i = 0; i < E.n.gpn; i++)
        fprintf(f, "<host id=\"gpu-%d-%d\" speed=\"%.6gf\"/>\n", n, i, speed);
    fprintf(f, "<host id=\"cpu-%d\" speed=\"1e12f\"/>\n", n);
    fprintf(f, "<link id=\"pcie-%d\" bandwidth=\"%.6gBps\" latency=\"1us\" sharing_policy=\"SPLITDUPLEX\"/>\n", n,
            E.in->profile->h2d_gbs > 0 ? E.in->profile->h2d_gbs * 1e9 : 16e9);
    for (int i = 0; i < 2 && i < E.n.gpn; i++)
        fprintf(f, "<link id=\"nvs-%d-%d\" bandwidth=\"%.6gBps\" latency=\"0us\" sharing_policy=\"SPLITDUPLEX\"/>\n",
                n, i, E.n.nv_bw);
    fprintf(f, "<link id=\"rail-%d-0\" bandwidth=\"%.6gBps\" latency=\"0us\" sharing_policy=\"SPLITDUPLEX\"/>\n", n,
            E.n.rail_bw);
}

/* Its routes inside: PCIe, and NVSwitch between the representative GPUs (SimGrid wants every host and
 * link of a zone before its routes). */
static void write_node_routes(FILE *f, int n)
{
    fprintf(f, "<route src=\"gpu-%d-0\" dst=\"cpu-%d\" symmetrical=\"NO\"><link_ctn id=\"pcie-%d\" direction=\"UP\"/></route>\n", n, n, n);
    fprintf(f, "<route src=\"cpu-%d\" dst=\"gpu-%d-0\" symmetrical=\"NO\"><link_ctn id=\"pcie-%d\" direction=\"DOWN\"/></route>\n", n, n, n);
    if (E.n.gpn > 1)
        fprintf(f, "<route src=\"gpu-%d-0\" dst=\"gpu-%d-1\"><link_ctn id=\"nvs-%d-0\" direction=\"UP\"/>"
                   "<link_ctn id=\"nvs-%d-1\" direction=\"DOWN\"/></route>\n", n, n, n, n);
}

/* The route of a flow from node n's rail 0 (up) to node m's (down): through the non-blocking core, and
 * through both leaves' uplinks when `cross` (a rail-optimized fat tree, different leaves). */
static void write_route(FILE *f, const char *src, const char *dst, int n, int m, int cross, int leaf_n, int leaf_m)
{
    fprintf(f, "<route src=\"%s\" dst=\"%s\" symmetrical=\"NO\"><link_ctn id=\"rail-%d-0\" direction=\"UP\"/>", src,
            dst, n);
    if (cross)
        fprintf(f, "<link_ctn id=\"leaf-%d\" direction=\"UP\"/>", leaf_n);
    fprintf(f, "<link_ctn id=\"core\"/>");
    if (cross)
        fprintf(f, "<link_ctn id=\"leaf-%d\" direction=\"DOWN\"/>", leaf_m);
    fprintf(f, "<link_ctn id=\"rail-%d-0\" direction=\"DOWN\"/></route>\n", m);
}

/* The physical node of simulated node n (leaves are physical): stages sharing a node have one each. */
static int physical(int n) { return E.stages_per_node > 1 ? stage_of(n) / E.stages_per_node : n; }

/* Routes of pipeline point-to-point flows from node n to its neighbours' nodes (next and previous stage,
 * and the other end of the pipeline for the tied embedding): over NVSwitch inside a physical node, over
 * the rails across nodes. */
static void write_pp_routes(FILE *f, int n)
{
    const int P = E.stages, st = stage_of(n), L = E.n.leaf;
    int peers[3] = {(st + 1) % P, (st + P - 1) % P, st == 0 ? P - 1 : (st == P - 1 ? 0 : -1)};
    for (int i = 0; i < 3; i++) {
        if (peers[i] < 0 || peers[i] == st || (i == 2 && (peers[2] == peers[0] || peers[2] == peers[1])))
            continue;
        if (i == 1 && peers[1] == peers[0])
            continue;
        const int m = node_at(peers[i], n);
        char src[32], dst[32];
        snprintf(src, sizeof src, "gpu-%d-0", n);
        snprintf(dst, sizeof dst, "gpu-%d-0", m);
        if (same_physical(st, peers[i])) {
            fprintf(f, "<route src=\"%s\" dst=\"%s\" symmetrical=\"NO\"><link_ctn id=\"nvs-%d-0\" direction=\"UP\"/>"
                       "<link_ctn id=\"nvs-%d-0\" direction=\"DOWN\"/></route>\n", src, dst, n, m);
        } else {
            const int pn = physical(n), pm = physical(m);
            int cross = L > 0 && pn / L != pm / L;
            write_route(f, src, dst, n, m, cross, L > 0 ? pn / L : 0, L > 0 ? pm / L : 0);
        }
    }
}

/* Full: every node, and the routes to its ring successors (DP and MP groups); on a rail-optimized fat
 * tree, one uplink per leaf (rail 0's), of the leaf's down bandwidth / oversubscription.
 * Reduced to one node per stage: those nodes alone, and per node and stream a peer host reached through
 * the node's own rail up and down directions (and its leaf-uplink share, of capacity uplink / leaf when
 * that stream's flows cross). Reduced to a period of T nodes: the first T nodes and their leaves, each ring
 * closed modulo T (a successor m >= T is node m mod T), a flow crossing leaves when it does in the whole
 * cluster. Pipeline stages add their point-to-point routes. */
static void write_platform(FILE *f)
{
    fprintf(f, "<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
               "<platform version=\"4.1\">\n<zone id=\"cluster\" routing=\"Full\">\n");
    double speed = E.in->profile->peak_flops_fp16 > 0 ? E.in->profile->peak_flops_fp16 : 1e12;
    const int L = E.n.leaf;
    fprintf(f, "<link id=\"core\" bandwidth=\"1e18Bps\" latency=\"0us\" sharing_policy=\"FATPIPE\"/>\n");
    if (E.reduced && E.per_stage == 1) {
        for (int n = 0; n < E.nsim; n++)
            write_node(f, n, speed);
        if (E.n.rep_cross[XS_COMPUTE] || E.n.rep_cross[XS_COMM])
            fprintf(f, "<link id=\"leaf-0\" bandwidth=\"%.17gBps\" latency=\"0us\" sharing_policy=\"SPLITDUPLEX\"/>\n",
                    E.n.rep_up_bw);
        for (int n = 0; n < E.nsim; n++)
            for (int xs = 0; xs < NXS; xs++) {
                if (E.nsim == 1)
                    fprintf(f, "<host id=\"peer-%d\" speed=\"1e12f\"/>\n", xs);
                else
                    fprintf(f, "<host id=\"peer-%d-%d\" speed=\"1e12f\"/>\n", n, xs);
            }
        for (int n = 0; n < E.nsim; n++) {
            write_node_routes(f, n);
            for (int xs = 0; xs < NXS; xs++) {
                char src[32], peer[32];
                snprintf(src, sizeof src, "gpu-%d-0", n);
                if (E.nsim == 1)
                    snprintf(peer, sizeof peer, "peer-%d", xs);
                else
                    snprintf(peer, sizeof peer, "peer-%d-%d", n, xs);
                write_route(f, src, peer, n, n, E.n.rep_cross[xs], 0, 0);
            }
            if (E.stages > 1)
                write_pp_routes(f, n);
        }
    } else {
        for (int n = 0; n < E.nsim; n++)
            write_node(f, n, speed);
        for (int j = 0; L > 0 && j < (physical(E.nsim - 1) + L) / L; j++)
            fprintf(f, "<link id=\"leaf-%d\" bandwidth=\"%.17gBps\" latency=\"0us\" sharing_policy=\"SPLITDUPLEX\"/>\n",
                    j, E.n.up_bw);
        for (int n = 0; n < E.nsim; n++) {
            write_node_routes(f, n);
            /* the ring successors of every group that spans nodes (DP, MP, EP, EDP), each route once; in
             * the stage's own numbering (ln), the stages side by side in the cluster's */
            const int ln = local_of(n), base = n - ln;
            int succ[ZP_NGROUPS];
            for (int gi = 0; gi < ZP_NGROUPS; gi++) {
                const group_shape *gs = &E.n.grp[gi];
                succ[gi] = gs->k > 1 ? successor(&E.n, gs, ln) : -1;
                for (int j = 0; j < gi; j++)
                    if (succ[j] == succ[gi])
                        succ[gi] = -1;
            }
            for (int j = 0; j < ZP_NGROUPS; j++) {
                int m = succ[j];
                if (m < 0 || m == ln)
                    continue;
                int cross = L > 0 && (base + ln) / L != (base + m) / L; /* in the whole cluster's numbering */
                m = base + m % E.per_stage;
                char src[32], dst[32];
                snprintf(src, sizeof src, "gpu-%d-0", n);
                snprintf(dst, sizeof dst, "gpu-%d-0", m);
                write_route(f, src, dst, n, m, cross, L > 0 ? (base + ln) / L : 0, L > 0 ? (base + m - base) / L : 0);
            }
            if (E.stages > 1)
                write_pp_routes(f, n);
        }
    }
    fprintf(f, "</zone>\n</platform>\n");
}

static void simgrid_start(void)
{
    static char *args[] = {"zplan", "--cfg=network/model:CM02", "--cfg=network/crosstraffic:0",
                           "--cfg=contexts/stack-size:256", "--log=root.thres:critical",
                           "--log=xbt_cfg.thres:critical", NULL};
    int argc = 6;
    xbt_log_control_set("xbt_cfg.thres:critical");
    simgrid_init(&argc, args);
}

/* ---------------------------------------------------------------- run */

static zp_status pick_mode(const zp_sim_input *in, const net *N, zp_sim_mode *mode)
{
    if (in->sim == ZP_SIM_REDUCED && in->platform_file)
        return ZP_FAIL(ZP_EINVAL, "--sim reduced: a user platform (--cluster FILE) is simulated in full (its nodes "
                                  "need not be alike)");
    if (in->sim == ZP_SIM_FULL || in->sim == ZP_SIM_REDUCED)
        *mode = in->sim;
    else
        *mode = N->exact && N->period < N->nodes ? ZP_SIM_REDUCED : ZP_SIM_FULL;
    return ZP_OK;
}

zp_status zp_engine_pick(const zp_sim_input *in, zp_sim_mode *mode, char *why, size_t len)
{
    net N;
    if (why && len)
        why[0] = '\0';
    if (in->platform_file) {
        /* the platform's own node size does not change whether it is symmetric: not read here */
        memset(&N, 0, sizeof N);
        snprintf(N.why, sizeof N.why, "a user platform need not be symmetric");
    } else {
        ZP_TRY(net_setup(in, 0, &N));
    }
    ZP_TRY(pick_mode(in, &N, mode));
    if (why && len && (in->platform_file || !N.exact))
        snprintf(why, len, "%s", N.why);
    return ZP_OK;
}

const char *zp_sim_mode_name(zp_sim_mode m)
{
    static const char *const names[] = {"auto", "full", "reduced"};
    return (unsigned)m < sizeof names / sizeof names[0] ? names[m] : "?";
}

zp_status zp_sim_mode_parse(const char *s, zp_sim_mode *out)
{
    for (int m = ZP_SIM_AUTO; m <= ZP_SIM_REDUCED; m++)
        if (s && strcmp(s, zp_sim_mode_name((zp_sim_mode)m)) == 0) {
            *out = (zp_sim_mode)m;
            return ZP_OK;
        }
    return ZP_FAIL(ZP_EINVAL, "--sim: '%s' is not full, reduced or auto", s ? s : "");
}

static zp_status run_schedules(const zp_sim_input *in, const zp_schedule *scheds, int nstages, zp_sim_result *out);

zp_status zp_engine_run(const zp_sim_input *in, zp_sim_result *out)
{
    const int P = in->plan->pp > 1 ? (int)in->plan->pp : 1;
    zp_schedule *sc = calloc((size_t)P, sizeof *sc);
    if (!sc)
        return ZP_FAIL(ZP_ENOMEM, "out of memory building the schedules");
    zp_status st = ZP_OK;
    for (int s = 0; s < P && st == ZP_OK; s++)
        st = zp_schedule_build_stage(in->model, in->plan, s, &sc[s]);
    if (st == ZP_OK)
        st = run_schedules(in, sc, P, out);
    for (int s = 0; s < P; s++)
        zp_schedule_free(&sc[s]);
    free(sc);
    return st;
}

/* The least time the simulation can give one collective op: what it sleeps (latency, NVSwitch bytes at
 * nv_bw, or a profile's measured time) and its rail bytes at the rail's bandwidth (a SimGrid flow is never
 * faster than its links). */
static double coll_least_time(const zp_op *op)
{
    const zp_op_info *in = info_of(op);
    const group_shape *gs = &E.n.grp[in->group < ZP_NGROUPS ? in->group : ZP_GROUP_DP];
    if (gs->k <= 1 && !E.n.intra_flows)
        return coll_local_time(op, gs);
    double t = E.n.intra_flows ? -1.0 : coll_profile_time(op, gs);
    if (t < 0)
        t = coll_intra_bytes(op, gs) / E.n.nv_bw + coll_latency(op, gs);
    if (gs->k > 1)
        t += coll_rail_bytes(op, gs) / E.n.rail_bw;
    return t;
}

/* The collectives of stream `s`, each at its least time (one after the other: their sum). */
static double colls_least_time(const zp_schedule *sc, zp_stream s)
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
            last_t = coll_least_time(op);
        }
        t += last_t;
    }
    return t;
}

zp_status zp_engine_stream_bounds(const zp_sim_input *in, const zp_schedule *sc, double *compute_colls_s,
                                  double *comm_s)
{
    *compute_colls_s = *comm_s = 0.0;
    if (in->platform_file || in->plan->pp > 1)
        return ZP_OK; /* a user's links, a pipeline's stages: not bounded here */
    const zp_sim_input *in0 = E.in;
    const net n0 = E.n;
    E.in = in;
    zp_status st = net_setup(in, 0, &E.n);
    if (st == ZP_OK) {
        *compute_colls_s = colls_least_time(sc, ZP_STREAM_COMPUTE);
        *comm_s = colls_least_time(sc, ZP_STREAM_COMM);
    }
    E.in = in0;
    E.n = n0;
    return st;
}

zp_status zp_engine_run_schedule(const zp_sim_input *in, const zp_schedule *sched, zp_sim_result *out)
{
    if (in->plan->pp > 1)
        return ZP_FAIL(ZP_EINVAL, "a plan of %lld pipeline stages has one schedule per stage",
                       (long long)in->plan->pp);
    return run_schedules(in, sched, 1, out);
}

static zp_status run_schedules(const zp_sim_input *in, const zp_schedule *scheds, int nstages, zp_sim_result *out)
{
    memset(&E, 0, sizeof E);
    E.in = in;
    E.sc = scheds;
    E.stages = nstages;
    const zp_plan *p = in->plan;
    for (int st = 0; st < nstages; st++)
        for (int s = 0; s < ZP_NSTREAMS; s++)
            for (int i = 0; i < scheds[st].n[s]; i++)
                if (!zp_op_info_get(scheds[st].ops[s][i].type))
                    return ZP_FAIL(ZP_EINVAL, "schedule op %d of the %s stream has no valid kind", i,
                                   zp_stream_name((zp_stream)s));
    int64_t gpus = zp_plan_gpus(p);
    int platform_gpn = 0, platform_nodes = 0;
    if (in->platform_file)
        ZP_TRY(zp_engine_check_platform(in->platform_file, &platform_gpn, &platform_nodes));
    ZP_TRY(net_setup(in, platform_gpn, &E.n));
    E.stages_per_node = 1;
    if (nstages > 1) {
        zp_pp_place pl;
        ZP_TRY(zp_pp_place_get(p, platform_gpn > 0 ? platform_gpn : in->cluster->gpus_per_node, &pl));
        E.stages_per_node = pl.stages_per_node;
        if (in->platform_file && E.stages_per_node > 1)
            return ZP_FAIL(ZP_EINVAL, "--cluster %s: pipeline stages sharing a node are simulated on the presets only",
                           in->platform_file);
    }
    const int64_t phys_nodes = (int64_t)E.n.nodes * nstages / E.stages_per_node;
    if (in->platform_file && phys_nodes > platform_nodes) {
        return ZP_FAIL(ZP_EINVAL, "--cluster %s has %d nodes of %d GPUs: too few for %lld GPUs", in->platform_file,
                       platform_nodes, platform_gpn, (long long)gpus);
    }
    if (in->no_overlap && (E.n.grp[ZP_GROUP_MP].k > 1 || E.n.grp[ZP_GROUP_EP].k > 1))
        return ZP_FAIL(ZP_EINVAL, "the no-overlap mode needs MP and EP within a node");
    zp_sim_mode mode = ZP_SIM_FULL;
    ZP_TRY(pick_mode(in, &E.n, &mode));
    E.reduced = mode == ZP_SIM_REDUCED;
    E.per_stage = !E.reduced ? E.n.nodes : (E.n.exact ? (E.n.period < E.n.nodes ? E.n.period : E.n.nodes) : 1);
    if (nstages > 1 && E.reduced)
        E.per_stage = 1;
    if ((int64_t)E.per_stage * nstages > INT32_MAX / (ZP_NCHANNELS + NXS + NPPMB))
        return ZP_FAIL(ZP_ERANGE, "%lld nodes are beyond the simulator", (long long)E.per_stage * nstages);
    E.nsim = E.per_stage * nstages;
    /* the resident memory (setup) is live from the start */
    for (int i = 0; in->trace_path && i < scheds[0].nsetup; i++)
        trace_mem(0, 0.0, &scheds[0].setup[i], zp_op_table[scheds[0].setup[i].type].cls == ZP_OPC_ALLOC);

    simgrid_start();
    char path[64];
    int fd = -1;
    if (in->platform_file) {
        snprintf(path, sizeof path, "%s", "");
        simgrid_load_platform(in->platform_file);
    } else {
        fd = memfd_create("zplan-platform.xml", 0);
        FILE *f = fd >= 0 ? fdopen(dup(fd), "w") : NULL;
        if (!f) {
                return ZP_FAIL(ZP_ERUNTIME, "cannot create the platform file: %s", strerror(errno));
        }
        write_platform(f);
        fclose(f);
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
        simgrid_load_platform(path);
    }

    size_t N = (size_t)E.nsim;
    E.gpu0 = calloc(N, sizeof *E.gpu0);
    E.gpu1 = calloc(N, sizeof *E.gpu1);
    E.cpu = calloc(N, sizeof *E.cpu);
    E.ch = calloc(N * ZP_NCHANNELS, sizeof *E.ch);
    E.mb = calloc(N * NXS, sizeof *E.mb);
    E.ppmb = calloc(N * NPPMB, sizeof *E.ppmb);
    E.peer = calloc(N * NXS, sizeof *E.peer);
    {
        const zp_profile_device *d = &in->profile->dev;
        E.nccl_frac = !in->no_overlap && d->sms > 0 && d->nccl_ctas > 0 ? (double)d->nccl_ctas / d->sms : 0.0;
    }
    if (in->no_overlap) {
        E.busy = calloc(N, sizeof *E.busy);
        if (!E.busy)
            return ZP_FAIL(ZP_ENOMEM, "out of memory setting up the simulation");
        for (size_t n = 0; n < N; n++)
            E.busy[n] = sg_mutex_init();
    }
    if (!E.gpu0 || !E.gpu1 || !E.cpu || !E.ch || !E.mb || !E.ppmb || !E.peer)
        return ZP_FAIL(ZP_ENOMEM, "out of memory setting up the simulation");
    char name[64];
    for (size_t n = 0; n < N; n++) {
        snprintf(name, sizeof name, "gpu-%zu-0", n);
        E.gpu0[n] = sg_host_by_name(name);
        snprintf(name, sizeof name, "cpu-%zu", n);
        E.cpu[n] = sg_host_by_name(name);
        if (!E.gpu0[n] || !E.cpu[n])
            return ZP_FAIL(ZP_EINVAL, "platform: host gpu-%zu-0 or cpu-%zu is missing", n, n);
        snprintf(name, sizeof name, "gpu-%zu-1", n);
        E.gpu1[n] = sg_host_by_name(name);
        if (E.n.intra_flows && !E.gpu1[n])
            return ZP_FAIL(ZP_EINVAL, "platform: host %s is missing", name);
        for (int k = 0; k < ZP_NCHANNELS; k++)
            E.ch[n * ZP_NCHANNELS + (size_t)k] = sg_sem_init(0);
        for (size_t x = 0; x < NXS; x++) {
            snprintf(name, sizeof name, "mb-%zu-%zu", n, x);
            E.mb[n * NXS + x] = sg_mailbox_by_name(name);
        }
        for (size_t x = 0; x < NPPMB; x++) {
            snprintf(name, sizeof name, "pp-%zu-%zu", n, x);
            E.ppmb[n * NPPMB + x] = sg_mailbox_by_name(name);
        }
        for (int xs = 0; E.reduced && E.per_stage == 1 && xs < NXS; xs++) {
            if (E.nsim == 1)
                snprintf(name, sizeof name, "peer-%d", xs);
            else
                snprintf(name, sizeof name, "peer-%zu-%d", n, xs);
            E.peer[n * NXS + (size_t)xs] = sg_host_by_name(name);
        }
    }
    for (size_t n = 0; n < N; n++) {
        char a1[24], a2[24];
        snprintf(a1, sizeof a1, "%zu", n);
        for (int s = 0; s < ZP_NSTREAMS; s++) {
            snprintf(a2, sizeof a2, "%d", s);
            char *argv[] = {"stream", a1, a2, NULL};
            snprintf(name, sizeof name, "%s-%zu", zp_stream_name((zp_stream)s), n);
            sg_actor_create(name, s == ZP_STREAM_CPU ? E.cpu[n] : E.gpu0[n], stream_actor, 3, argv);
        }
    }
    simgrid_run();
    if (fd >= 0)
        close(fd);
    int expected = (int)N * ZP_NSTREAMS;
    if (E.streams_finished != expected) {
        return ZP_FAIL(ZP_ERUNTIME,
                       "the simulation deadlocked at t = %.6g s: %d of %d stream actors finished (schedule bug)",
                       simgrid_get_clock(), E.streams_finished, expected);
    }
    E.res.dp_exposed += E.end_time - E.res.step_time; /* the tail after the compute stream ended */
    E.res.phase[ZP_PHASE_OPTIMIZER] += E.end_time - E.res.step_time;
    E.res.step_time = E.end_time;
    for (int st = 0; st < nstages; st++)
        E.res.flops_per_gpu += E.sc[st].flops / nstages;
    E.res.activities = E.activities;
    E.res.reduced = E.reduced;
    E.res.nodes_simulated = E.nsim;
    E.res.stages = nstages;
    zp_status st = ZP_OK;
    if (E.err[0])
        st = ZP_FAIL(ZP_ERUNTIME, "%s", E.err);
    if (st == ZP_OK && in->trace_path)
        st = trace_write(in->trace_path);
    *out = E.res;
    free(E.tr);
    free(E.mem);
    return st;
}

/* ---------------------------------------------------------------- user platforms */

static double g_platform_timeout_s = ZP_PLATFORM_CHECK_TIMEOUT_S;

void zp_engine_set_platform_timeout(double seconds)
{
    g_platform_timeout_s = seconds > 0 ? seconds : ZP_PLATFORM_CHECK_TIMEOUT_S;
}

/* The disposable loader, in a child process (SimGrid may abort on a bad file and allows one platform
 * per process): into `result` (int[2]) the GPUs of node 0 and the nodes. */
static int load_platform(void *ctx, void *result)
{
    const char *path = ctx;
    int *counts = result;
    static char *args[] = {"zplan", "--log=root.thres:error", "--log=xbt_cfg.thres:critical", NULL};
    int argc = 3;
    simgrid_init(&argc, args);
    simgrid_load_platform(path);
    char name[64];
    while (counts[0] < 1000000) {
        snprintf(name, sizeof name, "gpu-0-%d", counts[0]);
        if (!sg_host_by_name(name))
            break;
        counts[0]++;
    }
    while (counts[1] < 100000000) {
        snprintf(name, sizeof name, "cpu-%d", counts[1]);
        if (!sg_host_by_name(name))
            break;
        snprintf(name, sizeof name, "gpu-%d-0", counts[1]);
        if (!sg_host_by_name(name))
            break;
        counts[1]++;
    }
    return 0;
}

zp_status zp_engine_check_platform(const char *path, int *gpus_per_node, int *nodes)
{
    if (path == NULL || *path == '\0')
        return ZP_FAIL(ZP_EINVAL, "--cluster: empty platform file name");
    if (access(path, R_OK) != 0)
        return ZP_FAIL(ZP_ENOENT, "--cluster: cannot read '%s': %s", path, strerror(errno));
    struct stat sb;
    if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode))
        return ZP_FAIL(ZP_EINVAL, "--cluster: '%s' is a directory, not a platform file", path);
    /* The loader dies of its own faults with the default action (not through handlers the parent
     * installed, e.g. a fuzzer's), and with the parent. Its stderr is read together with the counts
     * (SimGrid may write more than a pipe holds before the counts), within the time limit: a platform
     * that takes longer to load (or a child that hangs) is killed. */
    int counts[2] = {0, 0};
    zp_child c = {.fn = load_platform, .ctx = (void *)path, .result = counts, .result_size = sizeof counts,
                  .flags = ZP_CHILD_STDOUT_NULL | ZP_CHILD_CAPTURE_STDERR | ZP_CHILD_DEFAULT_FAULTS |
                           ZP_CHILD_DIE_WITH_PARENT,
                  .timeout_s = g_platform_timeout_s};
    ZP_TRY(zp_child_run(&c));
    if (c.timed_out)
        return ZP_FAIL(ZP_EINVAL, "--cluster: loading '%s' took more than %.0f s: refused (is it that large?)", path,
                       g_platform_timeout_s);
    if (!zp_child_ok(&c)) {
        /* keep SimGrid's own explanation: its first error line, without the log prefix */
        char *line = c.err, *best = NULL;
        while (line && *line) {
            char *nl = strchr(line, '\n');
            if (nl)
                *nl = '\0';
            char *tag = strstr(line, "ERROR] ");
            char *text = tag ? tag + 7 : line;
            if (*text && !strstr(text, "Exiting now")) {
                best = text;
                break;
            }
            line = nl ? nl + 1 : NULL;
        }
        return ZP_FAIL(ZP_EINVAL, "--cluster: '%s' is not a valid SimGrid platform%s%.300s", path,
                       best ? ": " : "", best ? best : "");
    }
    if (counts[0] < 1 || counts[1] < 1)
        return ZP_FAIL(ZP_EINVAL,
                       "--cluster: '%s' loads, but does not follow zplan's naming: GPU hosts gpu-<node>-<i> and "
                       "CPU hosts cpu-<node>, from 0 (see README)",
                       path);
    *gpus_per_node = counts[0];
    *nodes = counts[1];
    return ZP_OK;
}
