/* zp_eng.h — the state of one simulation, shared by the engine's parts (run: zp_engine.c, stream
 * actors: zp_actors.c, platform file: zp_platform.c) and passed explicitly: the run owns it, the actors
 * get it as their data (sg_actor_self_get_data). Private to sim/. */
#ifndef ZP_ENG_H
#define ZP_ENG_H

#include <stdio.h>

#include <simgrid/forward.h>

#include "zp_engine.h"
#include "zp_fabric.h"
#include "zp_trace.h"

/* Point-to-point mailboxes of a node: activations from the stage before, gradients from the stage
 * after, the tied embedding's gradient from the other end of the pipeline. */
enum { ZP_PP_MB_ACT = 0, ZP_PP_MB_GRAD = 1, ZP_PP_MB_EMB = 2, ZP_NPPMB = 3 };

typedef struct {
    const zp_sim_input *in;
    const zp_schedule *sc;        /* [stage]: each pipeline stage's schedule */
    int stages;                   /* P */
    int per_stage;                /* nodes instantiated per stage: D (full), 1 or a period (reduced) */
    int stages_per_node;          /* pipeline stages sharing one physical node (their p2p over NVSwitch) */
    zp_net n;
    int reduced;                  /* 1: one node per role (node 0), its flows looped back to it */
    int nsim;                     /* nodes instantiated: stages x per_stage (a node: one stage's GPUs there) */
    sg_host_t *gpu0, *gpu1, *cpu; /* [node]: gpu-<n>-0 (also rail 0's GPU), gpu-<n>-1, cpu-<n> */
    sg_host_t *peer;              /* reduced: [node * ZP_NXS + xs] where a node's cross-node flows of each stream go */
    sg_sem_t *ch;                 /* [node * ZP_NCHANNELS + c] */
    sg_mutex_t *busy;             /* [node]: held while an op runs, in no-overlap mode */
    sg_mailbox_t *mb;             /* [node * ZP_NXS + xs]: rail-0 flows of the compute and comm streams */
    sg_mailbox_t *ppmb;           /* [node * ZP_NPPMB + k]: pipeline point-to-point */
    char err[160];                /* a pipeline mismatch found while simulating (schedule bug) */
    int streams_started, streams_finished;
    double end_time;
    zp_sim_result res;
    zp_trace tr;                  /* the step's trace, when in->trace_path */
    double activities;
    double nccl_frac;             /* share of a GPU's SMs one running NCCL collective holds (nccl_ctas / sms);
                                     0: compute is not slowed by overlapped collectives */
    double sync_frac;             /* the profile's machine.probe.sync: the slowest rank's lag behind the average
                                     one, as a fraction of the work since they last met (0: none, the presets) */
    double *since;                /* [node * ZP_NGROUPS + group]: compute-stream kernel time since the group's
                                     last collective (with sync_frac > 0) */
} zp_eng;

/* The pipeline stage of a simulated node, and its place (local index) in the stage. */
static inline int zp_eng_stage_of(const zp_eng *E, int node) { return node / E->per_stage; }
static inline int zp_eng_local_of(const zp_eng *E, int node) { return node % E->per_stage; }
/* The node of stage `stage` at the same place as `node`: its pipeline neighbour. */
static inline int zp_eng_node_at(const zp_eng *E, int stage, int node)
{
    return stage * E->per_stage + zp_eng_local_of(E, node);
}
/* Pipeline stages `a` and `b` have their nodes in one physical node (p2p over NVSwitch). */
static inline int zp_eng_same_physical(const zp_eng *E, int stage_a, int stage_b)
{
    return E->stages_per_node > 1 && stage_a / E->stages_per_node == stage_b / E->stages_per_node;
}

/* The stream actors of every simulated node (their hosts, channels and mailboxes set up in E), created
 * with E as their data; they run when SimGrid runs. */
void zp_actors_create(zp_eng *E);

/* The SimGrid platform of the simulation as XML (zp_platform.c). */
void zp_platform_write(FILE *f, const zp_eng *E);
/* Starts SimGrid with the engine's configuration (CM02 network model, no cross traffic). */
void zp_platform_simgrid_start(void);

#endif
