/* zp_memory.h — the ZeRO memory model: per-GPU bytes by category for a model and a plan.
 *
 * Model states follow the ZeRO paper (Rajbhandari et al., SC'20, §3 and §5, Table 1): with Ψ
 * parameters, fp16 parameters 2Ψ, fp16 gradients 2Ψ and K·Ψ of optimizer states (mixed-precision
 * Adam: fp32 parameters, momentum, variance, K = 12); model parallelism Nm divides Ψ, the ZeRO
 * stages divide the partitioned states by Nd. Residual states follow §6 (ZeRO-R) and
 * Korthikanti et al. 2022 for activations. Each term's formula is in zp_memory.c. */
#ifndef ZP_MEMORY_H
#define ZP_MEMORY_H

#include "zp_model.h"
#include "zp_plan.h"

typedef struct {
    double params;        /* fp16 parameters held on the GPU */
    double grads;         /* fp16 gradients held on the GPU */
    double optimizer;     /* optimizer states on the GPU (fp32 master params, m, v) */
    double activations;   /* checkpoints + working activations of the block being (re)computed + logits */
    double checkpoints;   /*   of which: activation checkpoints kept on the GPU */
    double buffers;       /* fused communication buffers; stage 3's gathered parameters */
    double fragmentation; /* reserve lost to fragmentation without MD */
    double total;         /* the sum of the six categories above (checkpoints is inside activations) */
    double host;          /* host (CPU) memory per GPU: offloaded states, Pa+cpu checkpoints */
} zp_memory;

/* Fraction of the interleaved short- and long-lived tensors (activations, gradients, buffers) lost
 * to fragmentation without MD. ZeRO §6.3 reports out-of-memory "with over 30% of memory still
 * available" on very large models. */
#define ZP_FRAGMENTATION_FRACTION 0.30

/* Per-GPU memory of `model` trained with `plan`. */
zp_status zp_memory_estimate(const zp_model *model, const zp_plan *plan, zp_memory *out);

/* Per-rank memory of zplan's own executor (exec/) running `plan` (fp32: param_bytes 4, k_optimizer 8):
 *  - model states: Table 1 above on the executor's Megatron layout of one MP rank (LayerNorms,
 *    row-parallel biases and position embeddings replicated, the vocabulary split), each stage's
 *    partition padded to dp equal pieces per unit as the executor shards;
 *  - activations: Korthikanti et al. 2022 without dropout (no masks, the softmax output stored once):
 *    per block and token (4 + 12/t) elements plus a·s/t attention probabilities per token and row
 *    statistics of the two LayerNorms (4 elements), for every block, or with checkpointing one
 *    checkpoint per block (÷t with Pa) and the block being recomputed; plus the logits (V/t per
 *    token, their gradient in place), the final LayerNorm and the backward working tensors of one
 *    block (gradients of the residual stream, QKV, attention output and probabilities, MLP);
 *  - buffers: the executor's collective buffers: none at stage 0 (in-place all-reduce of contiguous
 *    gradient buckets); one piece and one gathered unit at stages 1-2; the gradient bucket backward
 *    writes into at stages 2-3; three consecutive parameter groups at stage 3 (previous, current, prefetched);
 *  - ZeRO-Offload (offload optimizer): optimizer 0 on the device; host = m and v (8 B) + fp32 master
 *    copy (4 B) + fp32 gradient partition (4 B) + fp16 copy of the updated partition (2 B) per element
 *    of the partition.
 * The executor reports what it allocated per category; this is what the planner's arithmetic says
 * it should be, and `zplan exec --validate` prints both. */
zp_status zp_memory_estimate_exec(const zp_model *model, const zp_plan *plan, zp_memory *out);

/* Table 1: model-state bytes per GPU, (2 + 2 + K)Ψ partitioned by stage over nd, Ψ divided by nm. */
double zp_memory_model_states(double psi, int stage, double nd, double nm, double k);
/* Table 2: the largest Ψ whose model states fit in gpu_mem bytes (inverse of the above). */
double zp_memory_max_params(int stage, double nd, double nm, double k, double gpu_mem);

/* Does the plan fit? Sets a one-line reason when it does not (reason may be NULL). */
int zp_memory_fits(const zp_memory *m, double gpu_mem, double host_mem_per_gpu, char *reason, int reason_len);

/* Largest micro-batch (<= cap) for which the plan fits; 0 when even 1 does not fit. The plan's
 * micro_batch is ignored. Memory is affine in the micro-batch, so this is exact, not a search. */
int64_t zp_memory_max_micro_batch(const zp_model *model, const zp_plan *plan, double gpu_mem,
                                  double host_mem_per_gpu, int64_t cap);

/* Largest model of the size class of `shape` (same hidden, heads, seq, vocab, ffn; layers varied)
 * that fits the plan; out->layers = 0 when not even one layer fits. */
zp_status zp_memory_largest_model(const zp_model *shape, const zp_plan *plan, double gpu_mem,
                                  double host_mem_per_gpu, zp_model *out);

/* The largest GPT-2-like model (zp_model_from_size: the paper's size classes) that fits the plan at its
 * micro-batch, activations, buffers and fragmentation counted: *params_out is its parameter count
 * (0 when nothing fits). Found by bisection on the size, to 0.5%. */
zp_status zp_memory_largest_fitting(const zp_plan *plan, double gpu_mem, double host_mem_per_gpu,
                                    double *params_out);

#endif
