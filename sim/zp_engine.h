/* zp_engine.h — the SimGrid interpreter of a step schedule.
 *
 * The cluster is a SimGrid platform (generated from the preset, or the user's own file). Ranks of a
 * plan are symmetric, so each node runs one actor per stream (compute, comm, pcie, cpu) standing for
 * all its GPUs, plus one actor per InfiniBand rail and stream for the flows that leave the node.
 *
 * Collectives (NCCL's algorithms as modelled here):
 *  - inside a node: a ring over NVSwitch, (g-1)/g of the buffer per phase at the per-GPU NVSwitch
 *    bandwidth plus (g-1) step latencies (all-reduce = reduce-scatter + all-gather phases); the
 *    NVSwitch is not shared with other nodes, so it is charged as time on the stream;
 *  - across nodes: hierarchical: the intra-node ring phase(s), and a ring over the group's nodes in
 *    which each node sends f(k-1)/k of the buffer (f = 2 for all-reduce, 1 otherwise) to the next
 *    node as real SimGrid flows over its rails (one flow per rail in use), so concurrent DP and MP
 *    groups contend for the InfiniBand links; plus (k-1) step latencies.
 * PCIe copies are flows between a GPU and its node's CPU host. Compute and element-wise kernels
 * take the time of the device profile (sim/zp_device.h).
 *
 * One simulation per process (a SimGrid limit): zp_simrun.h forks. */
#ifndef ZP_ENGINE_H
#define ZP_ENGINE_H

#include "zp_cluster.h"
#include "zp_model.h"
#include "zp_plan.h"
#include "zp_profile.h"
#include "zp_schedule.h"

typedef struct {
    const zp_model *model;
    const zp_plan *plan;
    const zp_cluster *cluster;  /* rails, channels, GPUs per node (and link figures without a profile) */
    const zp_profile *profile;  /* kernel and link costs */
    const char *platform_file;  /* a user's SimGrid platform (see README for the naming), or NULL */
    const char *trace_path;     /* write one step as Chrome trace-event JSON, or NULL */
    int no_overlap;             /* 1: a node runs one operation at a time (streams still ordered): the
                                   baseline that shows what overlap buys; needs MP within a node */
} zp_sim_input;

/* Seconds; the breakdown is of node 0's compute stream, the critical path of a symmetric step. */
typedef struct {
    double step_time;
    double compute;          /* forward, recompute and backward kernels */
    double mp_comm;          /* Megatron MP all-reduces and Pa all-gathers (blocking, on the compute stream) */
    double dp_exposed;       /* waiting for ZeRO-DP collectives (gathers, reductions) + the tail after compute */
    double optimizer;        /* the Adam step (GPU), or waiting for the CPU Adam and its copies */
    double offload_exposed;  /* waiting for Pa+cpu checkpoint copies */
    double comm_busy;        /* time the comm stream spent in collectives */
    double pcie_busy;        /* time the PCIe stream spent copying */
    double flops_per_gpu;    /* executed FLOPs per GPU in the step (from the schedule) */
    double activities;       /* simulated operations, for the benchmarks */
    double phase[ZP_NPHASES]; /* the compute stream's time by phase of what it ran or waited for (forward,
                                 recompute, backward, optimizer; the tail after it ended counts as optimizer):
                                 they add up to step_time */
} zp_sim_result;

/* Runs one simulation in this process; call at most once per process. */
zp_status zp_engine_run(const zp_sim_input *in, zp_sim_result *out);
/* The same with a given schedule instead of the plan's (tests); the schedule is not freed. */
zp_status zp_engine_run_schedule(const zp_sim_input *in, const zp_schedule *sched, zp_sim_result *out);

/* Checks a user platform in a child process: it loads, and names GPU and CPU hosts as documented.
 * Sets *gpus_per_node and *nodes. */
zp_status zp_engine_check_platform(const char *path, int *gpus_per_node, int *nodes);
/* A platform that has not loaded within this time is refused (the child is killed). */
#define ZP_PLATFORM_CHECK_TIMEOUT_S 120.0
/* Changes that limit (seconds; <= 0 restores the default). For tests and fuzzing. */
void zp_engine_set_platform_timeout(double seconds);

#endif
