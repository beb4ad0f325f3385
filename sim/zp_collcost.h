/* zp_collcost.h — the one collective cost model: what the engine charges a collective (NCCL's tuner over
 * the group's shape and the fabric's links, zp_engine.h has the algorithms), the least time the
 * simulation can give it (the search's bounds); the closed forms it shares with the analytic bound and a
 * calibrated profile (a ring, a fitted latency and bus bandwidth) are common/zp_coll.h's. Seconds, bytes,
 * B/s (GB/s where named _gbs). Pure: no simulation runs here. */
#ifndef ZP_COLLCOST_H
#define ZP_COLLCOST_H

#include <stdint.h>

#include "zp_schedule.h"

typedef struct zp_net zp_net;                 /* zp_fabric.h */
typedef struct zp_group_shape zp_group_shape; /* zp_fabric.h */

/* NCCL's protocols, as zp_coll_plan.proto numbers them. */
enum { ZP_COLLCOST_LL = 0, ZP_COLLCOST_LL128 = 1, ZP_COLLCOST_SIMPLE = 2 };

/* What NCCL runs for one collective op of node 0: algorithm, protocol, latency and the fraction of the
 * links' bandwidth its protocol gets. */
typedef struct {
    int tree;      /* the inter-node part as NCCL's double binary tree (all-reduce only) */
    int proto;     /* ZP_COLLCOST_LL, _LL128, _SIMPLE */
    double lat;    /* s */
    double frac;   /* of the bus bandwidth */
} zp_coll_plan;

/* NCCL's choice for `op` over a group of shape gs: the (algorithm, protocol) of least estimated time; a
 * measured profile's (no device model) fitted latencies and the ring or, where faster, the tree. */
zp_coll_plan zp_collcost_choose(const zp_net *N, const zp_op *op, const zp_group_shape *gs);
/* Bytes each GPU sends over its NVSwitch port in the intra-node phase(s), over the protocol's fraction. */
double zp_collcost_intra_bytes(const zp_net *N, const zp_op *op, const zp_group_shape *gs);
/* A collective within one node whose kind the profile measured on exactly g ranks: its measured time; -1
 * otherwise. */
double zp_collcost_profile_time(const zp_net *N, const zp_op *op, const zp_group_shape *gs);
/* A collective within one node: its intra-node phases as time (NVSwitch uncontended) plus latencies, or
 * the profile's measured time; over one rank, the copy of a new output buffer. */
double zp_collcost_local_time(const zp_net *N, const zp_op *op, const zp_group_shape *gs);
/* The bus bandwidth of the group's intra-node phase, B/s: the node's (nv_bw) on a switch; on a full mesh
 * (MI300X's xGMI) the share of it the g-1 direct links among the group's g GPUs of a node carry
 * (zp_cluster_group_share). */
double zp_collcost_nv_bw(const zp_net *N, const zp_group_shape *gs);
/* Bytes one rail of a node carries for a cross-node collective, over the protocol's fraction. */
double zp_collcost_rail_bytes(const zp_net *N, const zp_op *op, const zp_group_shape *gs);
/* The least time the simulation can give collective `op` (no contention): what it sleeps (latency,
 * NVSwitch bytes at nv_bw, or a profile's measured time) and its rail bytes at the rail's bandwidth. */
double zp_collcost_least_time(const zp_net *N, const zp_op *op);
/* The collectives of stream `s` of schedule `sc`, each at the least time the simulation can give it
 * (no contention), added up. */
double zp_collcost_stream_least(const zp_net *N, const zp_schedule *sc, zp_stream s);

/* 1: the collective's NVLink phase runs beside its cross-node flows (DeepEP's all-to-alls across nodes): its
 * time is the longer of the two, not their sum. */
int zp_collcost_pipelined(const zp_net *N, const zp_op *op, const zp_group_shape *gs);

#endif
