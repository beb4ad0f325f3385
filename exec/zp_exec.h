/* zp_exec.h — the executor: trains a decoder for real under MPI with the kernels/ backend: GPT's block, or
 * today's (grouped-query attention, RMSNorm, rotary positions, gated MLPs, no biases, an untied head,
 * mixture-of-experts MLPs with expert parallelism; vocab/zp_tensors.h's zp_tensors_check says which),
 * driven by sim/'s step schedule (the same schedule the simulator interprets), with ZeRO stages 0-3,
 * Megatron model parallelism, activation checkpointing and ZeRO-R Pa. Its tensors are the schedule's: it
 * allocates and frees them by running the schedule's alloc and free ops (the "zplan-exec" layout,
 * sim/zp_layout.c, vocab/zp_tensors.h) through a tracking allocator that counts by the same categories, so
 * the memory the replay predicts is the memory held, and a kernel that needs more than its tensor has
 * overruns it.
 *
 * Ranks: world rank w is model-parallel rank w % mp of data-parallel rank (w / mp) % dp of pipeline stage
 * w / (mp dp) (Megatron-LM's order: MP groups are consecutive ranks, inside a node; stages outermost).
 * Pipeline stages (plan.pp > 1, 1F1B, stages 0-1) exchange activations and gradients point to point.
 *
 * Numerics: fp32 parameters, gradients and activations (param_bytes 4); Adam with fp32 m and v
 * (8 bytes per parameter, k_optimizer 8); no dropout. The loss is the mean cross-entropy over the
 * global batch (micro_batch x grad_accum x dp sequences), so ZeRO stages, MP, checkpointing and
 * the number of ranks change memory and time, never the math.
 *
 * Backends: every tensor lives in the backend's memory and every kernel (GEMM, layer kernels of
 * zp_nn_ops, collectives, Adam) runs there: host memory on cpu, device memory on cuda.
 *
 * ZeRO-Offload (plan.offload == ZP_OFFLOAD_OPTIMIZER, stages 1-3): the fp32 master parameters of this
 * rank's partition, Adam's m and v and the gradient partition live in host memory (pinned on cuda);
 * after backward the reduced gradient partition goes device -> host, the cpu backend's Adam updates
 * the master copy on the host and writes an fp16 copy, and that comes back host -> device, where it is
 * expanded into the device's fp32 working parameters. The device's parameters are therefore the fp16
 * rounding of the master copy after the first step: the math differs from the run without offload by
 * that rounding only. On the cpu backend this is an emulation ("device" and host are both host memory,
 * the copies memcpy), the same data movement and arithmetic. */
#ifndef ZP_EXEC_H
#define ZP_EXEC_H

#include <stddef.h>
#include <stdint.h>

#include "zp_kernels.h"
#include "zp_model.h"
#include "zp_plan.h"
#include "zp_quiet.h"
#include "zp_schedule.h"
#include "zp_status.h"

typedef struct {
    zp_model model;          /* resolved model (seq already applied) */
    zp_plan plan;            /* stage, mp, micro_batch, grad_accum, checkpoint, pa, cb/bucket, md, offload,
                                overlap_comm; dp is set from the ranks; param_bytes/k_optimizer are forced
                                to fp32 (4 / 8) */
    int steps;               /* training steps, >= 1 */
    double min_seconds;      /* 0, or: keep training past `steps` until the steps after the first add up to
                                this many seconds (at most ZP_EXEC_MAX_STEPS steps), so that the median
                                step spans the slow and fast spells of a shared machine */
    uint64_t seed;           /* parameters and synthetic tokens */
    double lr;               /* Adam learning rate */
    const char *backend;     /* "cpu" (the tested path) or "cuda" */
    int probe;               /* 1: time the reference work of kernels/zp_probe.h before the first step and after
                                the last (--validate: this machine's speed beside the calibration's) */
    unsigned test_faults;    /* tests only: ZP_EXEC_FAULT_* bits break the executor on purpose, to show
                                that a test would see it; 0 otherwise */
} zp_exec_config;

#define ZP_EXEC_MAX_STEPS 100000

/* ZeRO-Offload skips the device -> host copy of the reduced gradients (the host Adam then sees zeros). */
#define ZP_EXEC_FAULT_NO_GRAD_D2H 1u

/* Defaults: stage 0, mp 1, micro-batch 1, grad_accum 1, no checkpointing, no Pa, CB with the default
 * bucket, MD on, no offload, overlap_comm off (this executor runs one stream at a time: a
 * blocking collective cannot overlap compute, so the prediction it is checked against must not
 * assume it), 3 steps, seed 1, lr 1e-3, backend cpu. */
void zp_exec_config_default(zp_exec_config *c);

/* Checks the configuration against `ranks` processes before anything runs: ZP_EINVAL with a message
 * (mp dividing ranks and heads and the vocabulary, stage, micro-batch, Pa needs checkpointing...). */
zp_status zp_exec_config_check(const zp_exec_config *c, int ranks);

/* What a run measured. Times are the slowest rank's (seconds). */
typedef struct {
    double loss;             /* mean cross-entropy over the global batch, before this step's update */
    double time_s;           /* wall time of the step */
} zp_exec_step;

/* Time of one step by what it was spent on (the simulator's breakdown, sim/zp_engine.h). */
typedef struct {
    double compute;          /* forward, recompute and backward kernels */
    double mp_comm;          /* Megatron all-reduces, Pa all-gathers, vocab-parallel loss reductions */
    double dp_comm;          /* ZeRO-DP collectives (all exposed: one stream at a time) */
    double optimizer;        /* Adam */
    double pp_comm;          /* pipeline sends and receives (waiting for the other stages included) */
    double phase[ZP_NPHASES];/* by the schedule's phase (forward, recompute, backward, optimizer) */
    double kind[ZP_NOPK];    /* by the op's kind (sim/zp_ops.def's rows), the compute stream's ops */
    double kind_n[ZP_NOPK];  /* ops of each kind in one step */
} zp_exec_breakdown;

/* Most pipeline stages whose memory a result reports one by one. */
#define ZP_EXEC_MAX_STAGES 64

typedef struct {
    int ranks, dp, mp, pp;
    int steps;
    zp_exec_step *step;      /* steps entries (malloc'ed; zp_exec_result_free) */
    zp_exec_breakdown time;  /* mean over the measured steps (all but the first when there are >= 2) of
                                rank 0's breakdown */
    double measured_step_s;  /* median step time over the same steps */
    zp_quiet_in quiet;       /* the machine over the measured steps: their min/q10/median/q90/max (s), the
                                wall time, the machine's busy CPU seconds and the run's own (every rank's,
                                summed; busy -1 when the ranks span nodes), the load at the end, the cores
                                and the ranks on this machine; with config.probe, the reference work before the
                                first step and after the last (probe_s, probe_fast_s); for zp_quiet_judge, once
                                the caller sets probe_cal_s from its profile */
    double peak[ZP_MEM_NCAT];/* largest rank's peak bytes per category (zp_mem_cat, sim/zp_ops.h) */
    double peak_activations; /* largest rank's peak of activations + checkpoints */
    double peak_total;       /* largest rank's peak of the device total (every category but host) */
    double params_per_rank;  /* parameters of one MP rank (the flat layout) */
    double tokens_per_s;     /* global batch tokens / measured step time */
    double stage_peak_total[ZP_EXEC_MAX_STAGES]; /* with pipeline stages: each stage's largest rank's device
                                                    total (the first ZP_EXEC_MAX_STAGES stages) */
    double stage_peak_activations[ZP_EXEC_MAX_STAGES];
} zp_exec_result;

void zp_exec_result_free(zp_exec_result *r); /* accepts NULL */

/* Trains `c->steps` steps on the processes of `world` (collective over it). Every rank gets the
 * result (reductions included). */
zp_status zp_exec_run(const zp_exec_config *c, zp_comm *world, zp_exec_result *out);

/* ---- one rank's session, for tests (gradient checks) ---- */
typedef struct zp_exec_session zp_exec_session;
zp_status zp_exec_open(const zp_exec_config *c, zp_comm *world, zp_exec_session **out);
void zp_exec_close(zp_exec_session *s); /* accepts NULL */
/* Forward and backward of step `step`'s batch without the optimizer: the mean loss and, for stage 0
 * or 1, the reduced gradient of every parameter in the flat layout (*grad, *n; owned by the session,
 * in the backend's memory: host memory on cpu). */
zp_status zp_exec_loss_grad(zp_exec_session *s, int step, double *loss, const float **grad, size_t *n);
/* The flat parameters of a stage 0-2 session (this MP rank's, in the backend's memory), writable for
 * perturbation. */
zp_status zp_exec_params(zp_exec_session *s, float **params, size_t *n);
/* The routed experts' flat parameters of a stage 0-2 session of a mixture-of-experts model (this rank's
 * local experts, writable), and after zp_exec_loss_grad at stage 0-1 their reduced gradient; n = 0 for a
 * dense model. */
zp_status zp_exec_expert_params(zp_exec_session *s, float **params, size_t *n);
zp_status zp_exec_expert_grad(zp_exec_session *s, const float **grad, size_t *n);
/* One full training step (schedule interpreted, optimizer included); the loss before the update. */
zp_status zp_exec_train_step(zp_exec_session *s, int step, double *loss);

#endif
