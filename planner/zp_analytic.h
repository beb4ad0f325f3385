/* zp_analytic.h — the first-order step-time estimate ("analytic" method): compute at the preset's
 * achievable fraction of peak, plus every communication volume over its bandwidth, nothing overlapped.
 * It is the fast screen of the search and the fallback the simulator is compared against. */
#ifndef ZP_ANALYTIC_H
#define ZP_ANALYTIC_H

#include "zp_cluster.h"
#include "zp_model.h"
#include "zp_plan.h"

/* Seconds of one training step (all micro-batches and the optimizer step), by kind. */
typedef struct {
    double compute;   /* forward, backward and recompute of the local model shard */
    double mp_comm;   /* Megatron all-reduces (and Pa all-gathers) inside the MP group */
    double dp_comm;   /* ZeRO-DP reduce-scatter / all-reduce / all-gather of gradients and parameters */
    double optimizer; /* the Adam update of the local partition (GPU or CPU) */
    double offload;   /* PCIe traffic of offload and Pa+cpu */
    double pp_comm;   /* pipeline sends and receives, and waiting for the other stages (the bubble) */
    double total;
    double host_wait; /* of the parts above: the GPU idle, waiting for the host to dispatch its next op (the
                         simulation's host queue, sim/zp_actors.c); 0 in the analytic estimate */
} zp_step_time;

/* Bandwidth (B/s per GPU, bus bandwidth of a ring) of a collective among `n` GPUs placed `stride`
 * apart (MP groups are contiguous: stride 1; DP groups are strided by mp). */
double zp_analytic_group_bw(const zp_cluster *c, int64_t n, int64_t stride, double *latency);

/* FLOPs a step of `batch` sequences executes (recompute included: Megatron-LM 2021's convention): full
 * recompute runs every block's forward again (of every k-th with ckpt_every), selective recompute the
 * attention core's (Q K^T and A V of every head) and its other modules' GEMMs (zp_model_flops_rc_modules),
 * op-level recompute every second GEMM. The analytic step prices these; the TFLOP/s of an estimated,
 * simulated or bounded plan count them. */
double zp_analytic_flops_executed(const zp_model *model, const zp_plan *plan, double batch);
zp_status zp_analytic_step(const zp_model *model, const zp_plan *plan, const zp_cluster *cluster,
                           zp_step_time *out);

#endif
