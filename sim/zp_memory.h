/* zp_memory.h — per-GPU memory of a plan, by category: the replay of its step schedule's alloc and free
 * ops (one computation for the what-if, the search's fits test, the executor's expectation and the
 * trace's memory curve; the bytes of each category are the layouts' in sim/zp_layout.c, after the ZeRO
 * paper, Rajbhandari et al. SC'20 §5-6, and Korthikanti et al. 2022). Also the paper's closed forms of
 * Table 1 and 2 (model states only), and the fits test and searches built on the replay. */
#ifndef ZP_MEMORY_H
#define ZP_MEMORY_H

#include "zp_model.h"
#include "zp_plan.h"
#include "zp_schedule.h"

/* Fraction of the interleaved short- and long-lived tensors (activations, gradients, buffers) lost
 * to fragmentation without MD. ZeRO §6.3 reports out-of-memory "with over 30% of memory still
 * available" on very large models. */
#define ZP_FRAGMENTATION_FRACTION 0.30

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
    double nvme;          /* NVMe per GPU: ZeRO-Infinity's offloaded states */
    /* each category's own peak over the step, what a tracking allocator reports per category (the fields
     * above are the categories at the moment the device total peaks, so they add up to it) */
    double peak[ZP_MEM_NCAT];
    double peak_activations; /* peak of activations + checkpoints together */
} zp_memory;

/* Live bytes by category as allocations come and go: the replay of a schedule and the executor's
 * tracking allocator both count with it, so "peak" means the same for the prediction and the measure. */
typedef struct {
    double cur[ZP_MEM_NCAT], peak[ZP_MEM_NCAT];
    double cur_dev, peak_dev;        /* the device total: every category but HOST */
    double at_peak[ZP_MEM_NCAT];     /* the categories when cur_dev last rose to peak_dev */
    double cur_act, peak_act;        /* activations + checkpoints */
} zp_memcount;

/* Adds `bytes` (negative: released) to category `cat`. */
void zp_memcount_add(zp_memcount *c, zp_mem_cat cat, double bytes);
/* The peaks as a zp_memory. */
void zp_memcount_result(const zp_memcount *c, zp_memory *out);

/* Per-GPU memory of `model` trained with `plan`: the replay of its step's alloc and free ops in program
 * order (zp_schedule_build_memory), setup included; whose memory is plan->impl's (sim/zp_layout.h:
 * DeepSpeed's as the ZeRO paper counts it, or zplan's executor's). */
zp_status zp_memory_estimate(const zp_model *model, const zp_plan *plan, zp_memory *out);
/* With pipeline stages (plan->pp > 1) that of the stage that needs the most device memory (host: the most of
 * any stage). Every stage's into out[0..pp-1] (n: room in out): */
zp_status zp_memory_estimate_stages(const zp_model *model, const zp_plan *plan, zp_memory *out, int n);
/* The replay of any schedule (setup, then the step in program order). */
zp_status zp_memory_replay(const zp_schedule *s, zp_memory *out);
/* The replay of ops already in program order (a schedule read back from JSON). */
zp_status zp_memory_replay_ops(const zp_op *ops, int n, zp_memory *out);

/* Table 1: model-state bytes per GPU, (2 + 2 + K)Ψ partitioned by stage over nd, Ψ divided by nm. */
double zp_memory_model_states(double psi, int stage, double nd, double nm, double k);
/* Table 2: the largest Ψ whose model states fit in gpu_mem bytes (inverse of the above). */
double zp_memory_max_params(int stage, double nd, double nm, double k, double gpu_mem);

/* Does the plan fit? Sets a one-line reason when it does not (reason may be NULL). */
int zp_memory_fits(const zp_memory *m, double gpu_mem, double host_mem_per_gpu, char *reason, int reason_len);
/* zp_memory_fits of the plan's zp_memory_estimate (0 too where the estimate fails), the pipeline stages
 * estimated in turn and the first above gpu_mem or host_mem_per_gpu ending it: a plan that does not fit
 * costs the stages up to that one. `hint` (may be NULL): a stage to estimate first (-1: none), set to the
 * stage that did not fit; a test of the same plan at other batches gives it on. Where the plan fits, *out
 * (NULL: not wanted) is its zp_memory_estimate. */
int zp_memory_fits_plan(const zp_model *model, const zp_plan *plan, double gpu_mem, double host_mem_per_gpu,
                        int *hint, zp_memory *out);

/* Largest micro-batch (<= cap) for which the plan fits; 0 when even 1 does not fit. The plan's
 * micro_batch is ignored. Every allocation is affine in the micro-batch, so the peak is convex in it: the
 * line through micro-batches 1 and 2 bounds the answer from above, checked and bisected down. */
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
