/* zp_fabric.h — what the engine derives from a plan, its cluster and its profile before SimGrid starts:
 * the process groups as one node sees them (placement in Megatron-LM's rank order: MP innermost, then DP;
 * EP and EDP over the MP blocks), the link figures, and which flows of a rail-optimized fat tree cross leaf
 * uplinks (whether the reduced simulation is exact, see zp_engine.h). The same for the full and the
 * reduced simulation, so both cost every collective alike (zp_collcost.h). */
#ifndef ZP_FABRIC_H
#define ZP_FABRIC_H

#include "zp_engine.h"

/* Streams that can drive cross-node collectives: compute (Megatron MP across nodes) and comm (DP). */
enum { ZP_XS_COMPUTE = 0, ZP_XS_COMM = 1, ZP_NXS = 2 };

/* A group of ranks as the engine sees it from one node. */
typedef struct zp_group_shape {
    int k;      /* nodes the group spans */
    int g;      /* members of the group inside one node */
    int G;      /* groups of this kind sharing one node's rails at the same time */
    int stride; /* node distance between consecutive members' nodes (DP across MP blocks) */
} zp_group_shape;

typedef struct zp_net {
    const zp_profile *prof; /* kernel and link costs (the input's) */
    int nodes;       /* nodes of the whole plan (the rings and trees span them all) */
    int gpn, rails, gpr, channels, flat, tree;
    int intra_flows; /* MP and DP groups both have members inside a node: NVSwitch flows contend */
    double nv_bw, nv_lat, rail_bw, ib_lat; /* B/s and s per ring step */
    int nccl;        /* the profile is a GPU's device model: collectives by NCCL's cost model (protocols) */
    int ll128;       /* ... whose NCCL has the LL128 protocol */
    zp_group_shape grp[ZP_NGROUPS]; /* by zp_group */
    int xs_group[ZP_NXS]; /* the group whose ring a stream's cross-node flows follow in the fabric analysis:
                             compute: MP, or EP when MP stays in a node; comm: DP */
    /* the fabric (rail 0; every rail alike) */
    int leaf;            /* nodes per leaf switch, 0: a non-blocking fabric */
    double up_bw;        /* a leaf's uplink capacity, B/s (effective, as rail_bw) */
    int crossing[ZP_NXS]; /* flows of the stream that cross a leaf uplink at the most loaded leaf */
    int exact;           /* the reduced simulation equals the full one (see zp_engine.h) */
    int period;          /* nodes the reduced simulation instantiates: 1 (every node alike) or a period of
                            the fat tree's pattern (nodes n and n + period alike) */
    int rep_cross[ZP_NXS]; /* period 1: the representative's flow of the stream crosses its leaf's uplink */
    double rep_up_bw;    /* period 1: the capacity of the representative's share of that uplink, B/s */
    char why[200];       /* why the reduction is not exact */
    const zp_cluster *cluster; /* the domain's topology: a group's share of nv_bw (zp_collcost_nv_bw) */
    int tree24;          /* all-reduces across nodes choose between NCCL 2.4.8's tree and ring by its own rule */
    int tree24_channels; /* ... and the channels NCCL 2.4.8 counts there: two rings a NIC (zp_collcost.c) */
    /* the MoE token dispatcher (vocab/zp_dispatch.h) where it sends a token once per node and per GPU: */
    int a2a_dedup;         /* 1: the all-to-alls' bytes are the shares below; 0: one copy per (token, expert) */
    double a2a_node_share; /* the nodes of the EP group a token reaches, per copy of it (zp_dispatch_spread
                              over the group's nodes / top_k, <= 1) */
    double a2a_rank_share; /* ... and the EP ranks it reaches, per copy */
} zp_net;

/* The derived figures of a simulation into *N; platform_gpn: GPUs per node of a user platform, or 0.
 * ZP_EINVAL when the plan's groups do not tile the nodes, ZP_ERANGE beyond the simulator. */
zp_status zp_fabric_setup(const zp_sim_input *in, int platform_gpn, zp_net *N);

/* The node after `node` (0 .. N->nodes - 1) on the ring of a group of shape gs. */
int zp_fabric_successor(const zp_net *N, const zp_group_shape *gs, int node);

/* The shape of the group an op of this kind runs over (DP for ops of no group). */
static inline const zp_group_shape *zp_fabric_group(const zp_net *N, int group)
{
    return &N->grp[group < ZP_NGROUPS ? group : ZP_GROUP_DP];
}

#endif
