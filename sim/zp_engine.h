/* zp_engine.h — the SimGrid interpreter of a step schedule.
 *
 * The cluster is a SimGrid platform (generated from the preset, or the user's own file). Ranks of a
 * plan are symmetric, so each node runs one actor per stream (compute, comm, pcie, cpu) standing for
 * all its GPUs; a node's cross-node flows leave from its rail 0 (every rail in use carries the same).
 *
 * Collectives (NCCL's algorithms as modelled here):
 *  - inside a node: a ring over NVSwitch, (g-1)/g of the buffer per phase at the per-GPU NVSwitch
 *    bandwidth plus (g-1) step latencies (all-reduce = reduce-scatter + all-gather phases); the
 *    NVSwitch is not shared with other nodes, so it is charged as time on the stream;
 *  - across nodes: hierarchical: the intra-node ring phase(s), and a ring over the group's nodes in
 *    which each node sends f(k-1)/k of the buffer (f = 2 for all-reduce, 1 otherwise) to the next
 *    node as real SimGrid flows over its rails (one flow per rail in use), so concurrent DP and MP
 *    groups contend for the InfiniBand links; plus f(k-1) step latencies;
 *  - trees (presets with tree_allreduce: NCCL >= 2.4 on dgx-a100 / dgx-h100): an all-reduce's inter-node
 *    part may run as NCCL's double binary tree instead: 2 log2i(k) step latencies (up and down the
 *    trees) instead of 2(k-1), and 2S per node (each node is interior in one tree and a leaf in the
 *    other: half the buffer up and down per tree) at 0.9 of the ring's bus bandwidth instead of
 *    2(k-1)/k S. As NCCL's tuner, the engine prices both uncontended (latency + bytes / bandwidth)
 *    and runs the faster: trees for small buffers over many nodes, rings for large ones (the crossover
 *    grows with k: ~ (k - 1 - log2 k) x latency x bandwidth). Rings only for reduce-scatter and
 *    all-gather (NCCL has no tree for them) and on flat-ring presets (dgx2). The tree's flows go to
 *    the ring neighbour, as every node's per-step traffic is the same;
 *  - flat rings (dgx2, NCCL 2.4.8 of the ZeRO paper): one ring through all P GPUs, each node's egress
 *    f(P-1)/P of the buffer, f(P-1) step latencies of the slowest hop; an all-reduce NCCL 2.4.8 runs as
 *    its tree (its own size threshold: every size on 2 nodes) pays the tree's latency instead (log2 k
 *    levels and the intra-node chain, NCCL 2.4.8's estimate) on the same bytes (sim/zp_collcost.c).
 *
 * Fabrics (zp_cluster.h): non-blocking (every flow limited by its own rails: a FATPIPE core), or a
 * rail-optimized fat tree: rail 0 of each scalable unit's `leaf_nodes` nodes hangs off one leaf
 * switch whose uplink (SPLITDUPLEX, leaf_nodes x rail bandwidth / oversubscription) a flow crosses
 * when its ring successor is under another leaf, the spine and core above being non-blocking. Nodes
 * are placed in rank order, so a ring over consecutive nodes crosses one uplink per leaf; strided DP
 * rings (MP across >= leaf_nodes nodes) cross at every node. Switch hop latencies (~0.1-0.2 us) are
 * left out beside the ~6 us NCCL step.
 *
 * Simulation size (zp_sim_mode): every node of a symmetric plan does the same thing at the same instants,
 * so the full simulation (every node, flows to ring successors through mailboxes) and the reduced one
 * (node 0 alone: its flows loop back through its own rail's up and down directions, the links a
 * predecessor's flow would load, to a peer host; the collectives keep the latencies and byte shares of
 * the whole group: k, g, G of the full topology) give the same step. Contention carries over exactly:
 * NVSwitch and PCIe are per node; on a non-blocking fabric a rail carries the node's own DP and MP flows
 * (its successor's are symmetric); on a rail-optimized fat tree the reduced platform gives node 0 its
 * share of its leaf's uplink (capacity / leaf) when every node's flows of a stream cross (max-min
 * sharing of identical flows is a quotient), and leaves uplinks out when no uplink can bind (crossing
 * flows x a rail's bandwidth <= capacity at every leaf). In the mixed fat-tree case (some nodes of a
 * leaf cross and the uplink binds: MP blocks over part of a leaf, oversubscribed) nodes differ by their
 * place, but the pattern repeats every T = lcm(leaf, MP block) nodes: the reduced simulation runs one
 * period, T nodes with their rings closed modulo T, exactly (tests compare both). Not exact, so AUTO
 * runs them in full: a user platform, and a mixed case whose nodes are no multiple of T (a last leaf
 * partly empty). The reduced simulation costs one node's (or one period's) activities, whatever the
 * cluster size.
 *
 * Pipeline stages (plan->pp > 1): each stage runs its own schedule (zp_schedule_build_stage) on its own
 * nodes (Megatron-LM's rank order: a stage's dp x mp GPUs are consecutive, so stages span whole nodes or
 * share one), and its point-to-point ops are real flows to the neighbour stage's node: over the sender's
 * and the receiver's rails across nodes, over their NVSwitch ports inside one. A send starts at once (the
 * receiver's mailbox takes it eagerly) and holds the sender's compute stream until it has arrived, as
 * Megatron-LM's blocking send; a receive waits for it. The bubble is what the stages wait for each other.
 * Every data-parallel replica of the pipeline is alike, so the reduced simulation runs one node per stage
 * (P nodes, each with the DP groups' shares of the whole topology). On a rail-optimized fat tree PP plans
 * are simulated in full. The breakdown is stage 0's (it ends last: its last backward closes the step);
 * the trace has one track (process) per stage.
 *
 * PCIe copies are flows between a GPU and its node's CPU host. Compute and element-wise kernels
 * take the time of the device profile (sim/zp_device.h).
 *
 * One simulation per process (a SimGrid limit): zp_simrun.h forks.
 *
 * The engine by concern, its state (zp_eng.h) passed explicitly: groups, placement and the fabric
 * analysis (zp_fabric.c), the collective cost model (zp_collcost.c), the stream actors (zp_actors.c), the
 * platform file and user platforms (zp_platform.c), the trace (zp_trace.c), the run (zp_engine.c). */
#ifndef ZP_ENGINE_H
#define ZP_ENGINE_H

#include "zp_cluster.h"
#include "zp_model.h"
#include "zp_plan.h"
#include "zp_profile.h"
#include "zp_schedule.h"

/* Which simulation runs: AUTO = REDUCED where it is exact (zp_engine_pick), FULL otherwise. */
typedef enum { ZP_SIM_AUTO = 0, ZP_SIM_FULL, ZP_SIM_REDUCED } zp_sim_mode;

typedef struct {
    const zp_model *model;
    const zp_plan *plan;
    const zp_cluster *cluster;  /* rails, channels, GPUs per node (and link figures without a profile) */
    const zp_profile *profile;  /* kernel and link costs */
    const char *platform_file;  /* a user's SimGrid platform (see README for the naming), or NULL */
    const char *trace_path;     /* write one step as Chrome trace-event JSON, or NULL */
    int no_overlap;             /* 1: a node runs one operation at a time (streams still ordered): the
                                   baseline that shows what overlap buys; needs MP within a node */
    zp_sim_mode sim;            /* full, reduced, or AUTO (0) */
    double oversubscription;    /* a rail-optimized fat tree's leaf down/up ratio; <= 0: the preset's */
    int every_micro_batch;      /* 1: simulate all micro-batches of a stage 0/1 pipeline, not two shorter
                                   steps extrapolated (zp_simrun_many; the tests compare the two) */
} zp_sim_input;

/* Stages whose kernel time the result reports one by one. */
#define ZP_ENGINE_MAX_STAGE_STATS 128

/* Seconds; the breakdown is of node 0's compute stream, the critical path of a symmetric step. */
typedef struct {
    double step_time;
    double compute;          /* forward, recompute and backward kernels (nccl_contention included) */
    double nccl_contention;  /* of compute: what the kernels lost to the SMs of NCCL collectives running
                                beside them (zp_profile_device.nccl_ctas) */
    double host_wait;        /* of the parts above: the compute stream idle, waiting for the host to dispatch
                                its next op (zp_device_host_time; sim/zp_actors.c) */
    double mp_comm;          /* Megatron MP all-reduces and Pa all-gathers (blocking, on the compute stream) */
    double dp_exposed;       /* waiting for ZeRO-DP collectives (gathers, reductions) + the tail after compute */
    double optimizer;        /* the Adam step (GPU), or waiting for the CPU Adam and its copies */
    double offload_exposed;  /* waiting for Pa+cpu checkpoint copies */
    double pp_exposed;       /* pipeline sends, receives (waiting for the other stages: the bubble) and the
                                tied embedding's all-reduce */
    double comm_busy;        /* time the comm stream spent in collectives */
    double pcie_busy;        /* time the PCIe stream spent copying */
    double flops_per_gpu;    /* executed FLOPs per GPU in the step (from the schedule) */
    double activities;       /* simulated operations, for the benchmarks */
    int reduced;             /* 1: the reduced simulation ran (one node per role), 0: every node */
    int nodes_simulated;     /* nodes instantiated in SimGrid */
    double tree_allreduces;  /* node 0's all-reduces across nodes run as NCCL trees (not rings) */
    int stages;              /* pipeline stages simulated (1 without PP) */
    double stage_busy[ZP_ENGINE_MAX_STAGE_STATS]; /* compute stream time in kernels per stage (the first ones) */
    double phase[ZP_NPHASES]; /* the compute stream's time by phase of what it ran or waited for (forward,
                                 recompute, backward, optimizer; the tail after it ended counts as optimizer):
                                 they add up to step_time */
    double kind[ZP_NOPK];    /* time in each kind of op (zp_ops.def's rows) on whichever stream ran it (a
                                collective on the comm stream too), waits not counted: the executor runs each
                                op in place, so `zplan exec --validate`'s per-kind table compares like with
                                like; they add up to more than step_time where streams overlap */
} zp_sim_result;

/* The simulation `in` gets (in->sim when FULL or REDUCED; under AUTO: REDUCED where it is exact, FULL
 * otherwise) without running it; `why` (may be NULL) says why the reduction is not exact (empty when it
 * is). ZP_EINVAL for REDUCED on a user platform (its nodes need not be alike). */
zp_status zp_engine_pick(const zp_sim_input *in, zp_sim_mode *mode, char *why, size_t len);
const char *zp_sim_mode_name(zp_sim_mode m); /* "auto", "full", "reduced" */
zp_status zp_sim_mode_parse(const char *s, zp_sim_mode *out);

/* Lower bounds of the step `in` would simulate from its schedule `sc` (non-pipeline plans on the presets;
 * zeros otherwise), without simulating: the compute stream's blocking collectives and the comm stream's
 * collectives (or the EP overlap stream's, the longer), each at the least time the simulation can give it
 * (the same cost functions, no contention).
 * The search adds the first to the kernels' time and takes the larger (tests/sim/test_bound.c). */
zp_status zp_engine_stream_bounds(const zp_sim_input *in, const zp_schedule *sc, double *compute_colls_s,
                                  double *comm_s);

/* The least time the simulation can give each op of stream `s` of `sc` (a schedule of in->plan, a pipeline
 * stage's included), into least[0 .. sc->n[s]): a collective's uncontended time (zp_collcost_least_time:
 * the same cost functions the simulation runs), 0 for every other op and for every op on a user platform
 * (its links are the user's). The search's pipeline bound adds the compute stream's blocking collectives
 * (expert all-to-alls, Megatron's MP collectives) to its kernels (tests/sim/test_bound.c). */
zp_status zp_engine_op_least(const zp_sim_input *in, const zp_schedule *sc, zp_stream s, double *least);

/* Runs one simulation in this process; call at most once per process. */
zp_status zp_engine_run(const zp_sim_input *in, zp_sim_result *out);
/* The same with a given schedule instead of the plan's (tests); the schedule is not freed. */
zp_status zp_engine_run_schedule(const zp_sim_input *in, const zp_schedule *sched, zp_sim_result *out);

/* Checks a user platform in a child process: it loads, and names GPU and CPU hosts as documented.
 * Sets *gpus_per_node and *nodes. */
zp_status zp_engine_check_platform(const char *path, int *gpus_per_node, int *nodes);
/* A platform that has not loaded within a time (120 s by default) is refused (the child is killed); this
 * changes that limit (seconds; <= 0 restores the default). For tests and fuzzing. */
void zp_engine_set_platform_timeout(double seconds);

#endif
