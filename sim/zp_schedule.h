/* zp_schedule.h — one training step as a schedule: for one rank, ordered typed operations (sim/zp_ops.h)
 * on four streams, with the dependencies the ZeRO stage implies expressed as counting channels (signal
 * adds a token, wait takes one, like CUDA events recorded and waited in order), and the memory the step
 * holds as alloc and free operations with a category.
 *
 * Interpreters:
 *  - the simulator (sim/zp_engine.c): costs on a SimGrid platform;
 *  - the memory replay (sim/zp_memory.c): the peak of the live bytes, by category, in program order;
 *  - the executor (exec/): real kernels under MPI; it allocates its tensors by running the alloc ops.
 * Every rank of a pipeline stage runs the same schedule (the ranks of a stage are symmetric); with
 * pipeline parallelism each stage has its own (its layers, the embedding on the first, the head on the
 * last, its passes in the pipeline schedule's order with point-to-point sends and receives).
 *
 * Program order (zp_schedule_walk): the setup ops (the allocations made once before the first step:
 * model states, the executor's tensors), then the step as one thread runs its streams: every stream
 * other than compute runs each op whose waits are satisfied, as a GPU's streams start work as soon as
 * their events fire, then compute runs its next op; again until every stream is done. The executor runs
 * exactly this order, the replay measures it, `zplan schedule` prints it (op ids). */
#ifndef ZP_SCHEDULE_H
#define ZP_SCHEDULE_H

#include "zp_model.h"
#include "zp_ops.h"
#include "zp_plan.h"

typedef struct {
    zp_op *ops[ZP_NSTREAMS];   /* each stream's ops, in stream order */
    int n[ZP_NSTREAMS];
    zp_op *setup;              /* allocations before the first step, in order (stream compute, phase SETUP) */
    int nsetup;
    int nops;                  /* nsetup + the streams' ops: ids run 0..nops-1 */
    int buckets_per_micro;     /* gradient buckets per micro-batch */
    double bucket_params;      /* parameters per bucket (last one may be smaller) */
    double flops;              /* executed FLOPs of the step on this rank (sum of compute ops' flops; 0 when
                                  memory_only) */
    double params;             /* parameters of one MP rank the schedule's buckets and gathers cover */
    int memory_only;           /* built by zp_schedule_build_memory: alloc, free and channel ops only */
    int stage;                 /* the pipeline stage (0 without pipeline parallelism) */
} zp_schedule;

/* Most gradient buckets a rank's parameters may be cut into (a bucket of a few elements would make a
 * schedule of billions of ops; real buckets hold millions of elements). */
#define ZP_SCHEDULE_MAX_BUCKETS 1e6

/* A step of gradient accumulation is its first micro-step, m - 2 alike and its last, so whatever adds up
 * over it (the search's bound, the simulated step: zp_search_bound.c, zp_simrun.c) is affine in m: a step of more
 * than ZP_ACCUM_AFFINE_ABOVE micro-steps is taken from steps of ZP_ACCUM_SAMPLE and ZP_ACCUM_SAMPLE + 1. */
#define ZP_ACCUM_AFFINE_ABOVE 8
#define ZP_ACCUM_SAMPLE 3

/* Builds the step of `plan` for one rank. plan->impl picks whose memory the alloc ops describe: the
 * DeepSpeed/Megatron system the planner models (fp16, the ZeRO paper's categories) or zplan's executor
 * (its exact tensors and Megatron layout, sim/zp_layout.h). */
zp_status zp_schedule_build(const zp_model *model, const zp_plan *plan, zp_schedule *out);
/* The same for pipeline stage `stage` of plan->pp (zp_schedule_build is stage 0's). */
zp_status zp_schedule_build_stage(const zp_model *model, const zp_plan *plan, int stage, zp_schedule *out);
/* The same step with only what memory needs: alloc, free, signal and wait ops (the others take no
 * memory and do not change the program order of those that do), and of the micro-batches only the first
 * and the last (the ones between repeat the first's allocations exactly). Its replay equals the full
 * schedule's (a test checks it) at a small fraction of the cost: the search replays thousands of plans. */
zp_status zp_schedule_build_memory(const zp_model *model, const zp_plan *plan, zp_schedule *out);
zp_status zp_schedule_build_memory_stage(const zp_model *model, const zp_plan *plan, int stage, zp_schedule *out);
/* A sample of stage `stage`'s step: micro-batch 0's forward pass through each of its chunks, then their
 * backward passes, then the same of micro-batch 1 when the step has more than one (its ops' `micro` says
 * which), no optimizer. What the first micro-batch and each later one cost a stage, whatever the number of
 * micro-batches (the search's bounds): the builder treats every micro-batch after the first as the second
 * (the last one adds DP reductions, no kernel). Its ops are not numbered (id -1): a sample is summed, not
 * run. */
zp_status zp_schedule_build_sample(const zp_model *model, const zp_plan *plan, int stage, zp_schedule *out);
void zp_schedule_free(zp_schedule *s); /* accepts NULL */

/* Visits the setup ops (when with_setup) and then the step's ops in program order (see above). A
 * stream ends early at its first op of phase `stop_phase` (-1: none; the executor's gradient check stops
 * before the optimizer). A wait that can never be satisfied is a schedule bug: ZP_ERUNTIME naming the
 * stream and channel. `fn` returning non-OK stops the walk with its status. */
typedef zp_status (*zp_walk_fn)(void *ctx, const zp_op *op);
zp_status zp_schedule_walk(const zp_schedule *s, int with_setup, int stop_phase, zp_walk_fn fn, void *ctx);

/* The ops of a schedule written as JSON (`zplan schedule --format json`), in the file's (program) order:
 * each op's name must be a kind of the op table and its "kind" that kind's class, alloc and free ops need
 * a known "category"; ZP_EINVAL naming the op otherwise. *ops is malloc'ed (free it). */
zp_status zp_schedule_read_ops(const char *path, zp_op **ops, int *n);

#endif
