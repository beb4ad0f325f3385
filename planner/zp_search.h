/* zp_search.h — the plan search: every (stage, MP degree, ZeRO-R options, offload) the user left
 * open, each at the largest micro-batch that fits, screened by the memory model and ranked by
 * throughput. */
#ifndef ZP_SEARCH_H
#define ZP_SEARCH_H

#include "zp_analytic.h"
#include "zp_cluster.h"
#include "zp_engine.h"
#include "zp_memory.h"
#include "zp_model.h"
#include "zp_plan.h"
#include "zp_profile.h"

/* What a request leaves to the search (zp_search_req.searched): one bit per dimension of the table
 * (ZP_SEARCH_DIM(d), vocab/zp_dims.h; DP's is always set: it is what the others leave) and one per option.
 * A clear bit: the base plan's value is given (or, under exact, the default pinned). */
#define ZP_SEARCH_DIM(d) (UINT32_C(1) << (d))
enum {
    ZP_SEARCH_STAGE = 1u << (ZP_NDIMS + 0),     /* the ZeRO stage: 0 to the framework's highest */
    ZP_SEARCH_MICRO_BATCH = 1u << (ZP_NDIMS + 1),  /* the largest that fits (or the default batch's) */
    ZP_SEARCH_GLOBAL_BATCH = 1u << (ZP_NDIMS + 2), /* no global batch given: it follows from the others */
    ZP_SEARCH_ACCUM = 1u << (ZP_NDIMS + 3),     /* micro-batches per step */
    ZP_SEARCH_PA = 1u << (ZP_NDIMS + 4),        /* ZeRO-R Pa on and off */
    ZP_SEARCH_PA_CPU = 1u << (ZP_NDIMS + 5),    /* Pa+cpu on and off */
    ZP_SEARCH_OFFLOAD = 1u << (ZP_NDIMS + 6),   /* none, optimizer, params */
    ZP_SEARCH_RECOMPUTE = 1u << (ZP_NDIMS + 7), /* full, selective, none (with checkpoint 0 none only) */
    ZP_SEARCH_SCHEDULE = 1u << (ZP_NDIMS + 8),  /* 1F1B and interleaved (GPipe runs the same passes with more
                                                   memory, so it is only taken when given) */
    ZP_SEARCH_VSTAGES = 1u << (ZP_NDIMS + 9),   /* the divisors of the layers per stage */
    ZP_SEARCH_SP = 1u << (ZP_NDIMS + 10),       /* sequence parallelism, with MP > 1 and no Pa */
    ZP_SEARCH_BF16 = 1u << (ZP_NDIMS + 11),     /* the 16-bit type by the GPU (bf16 where it has bf16 tensor
                                                   cores: A100, H100; fp16 on V100), as DeepSpeed's "auto" */
    ZP_SEARCH_TP_OVERLAP = 1u << (ZP_NDIMS + 12), /* TP communication overlapped with its GEMMs (--tp-comm-overlap):
                                                   off and the framework's form (zp_framework.tp_overlap) both,
                                                   where a plan can run it; given (the default: off, as
                                                   Megatron-core's and torchtitan's), the base plan's form on every
                                                   plan that can run it (sequence parallelism over an MP group
                                                   inside one node: MP > 1 plans are then sequence-parallel) */
    ZP_SEARCH_ALL = (1u << (ZP_NDIMS + 13)) - 1u
};
_Static_assert(ZP_NDIMS + 13 <= 32, "the search mask is 32 bits");
#define ZP_MAX_GPUS INT64_C(100000000)       /* 1e8: beyond any machine */
#define ZP_MAX_MICRO_BATCH INT64_C(1048576)  /* cap of the micro-batch search */
/* Largest cluster simulated in full (nodes; the full simulation takes ~0.05 s per node and plan). The
 * reduced simulation (zp_engine.h) has no limit: its cost does not grow with the nodes. A plan whose
 * reduction is not exact keeps the analytic estimate beyond this size. */
#define ZP_SIM_MAX_FULL_NODES 2048
/* Memory per GPU that a plan leaves free, bytes (--reserve): what the training process holds besides the
 * tensors the memory model counts. The CUDA context: 0.29 GB with lazy module loading (CUDA >= 11.7, the
 * default from CUDA 12.2 and PyTorch 1.13), 0.67 GB loaded eagerly (measured in pytorch/pytorch#86509);
 * cuBLAS workspaces: 8 MiB per handle and stream by default, 32 MiB on Hopper (PyTorch's
 * CUBLAS_WORKSPACE_CONFIG); NCCL: each communicator's channels hold a FIFO per peer connection
 * (NCCL_BUFFSIZE 4 MiB for the Simple protocol, plus the LL and LL128 buffers), linear in the channels
 * (NVIDIA/nccl#986): 1.06 GB for one communicator of 8 H100 before its first all-to-all
 * (NVIDIA/nccl#1685), ~1.6 GB once an all-reduce ran (NVIDIA/nccl#864); a plan has a DP and an MP
 * communicator. 2 GB: a context (~0.5 GB), workspaces (~0.1 GB) and ~1.4 GB of NCCL buffers. */
#define ZP_DEFAULT_RESERVE 2e9
/* One evaluated plan. */
typedef struct {
    zp_plan plan;
    zp_memory mem;
    int fits;
    char reason[192];     /* why it does not fit */
    zp_step_time time;    /* seconds per step (analytic terms, or the simulated breakdown) */
    double analytic_step_s; /* the analytic estimate, kept beside a simulated time */
    double bound_s;       /* a lower bound of the simulated step, s: the compute stream's kernels and blocking
                             collectives, or the comm stream's collectives, alone (zp_search_step_bound); 0
                             when not computed */
    double global_batch;  /* sequences per step */
    double samples_per_s;
    double tflops_per_gpu; /* executed FLOPs (incl. recompute) per second per GPU, 1e12 */
    double pflops;         /* aggregate, 1e15 */
    double tokens_per_s;          /* global batch x sequence / step, the cluster's (zp_units_fill) */
    double tokens_per_s_per_gpu;  /* ... per GPU */
    double model_tflops_per_gpu;  /* PaLM's model FLOPs (no recompute) per second per GPU, 1e12 */
    double mfu;                   /* model_tflops_per_gpu over the GPU's peak of the plan's precision, 0-1 */
    const char *method;    /* "simgrid" (simulated), "bound" (not simulated: time.total is bound_s, a lower
                              bound, and the throughputs are upper bounds) or "analytic" (--analytic) */
    const char *unsimulated; /* "bound": why it was not simulated (one phrase), else NULL */
    int dominated;         /* not simulated: another fitting plan runs the same batch with less extra work */
    const char *sim;       /* simgrid: "reduced" (one node per role) or "full" (every node); NULL otherwise */
} zp_eval;

typedef struct {
    const zp_model *model;
    const zp_cluster *cluster;
    double gpu_mem;        /* bytes per GPU (the preset's unless overridden) */
    double host_mem;       /* host memory per node, bytes (<= 0: the preset's), shared by the job's GPUs
                              on the node (zp_cluster_host_per_gpu) */
    int64_t gpus;
    /* The base plan: every candidate starts from it (zp_plan_default's values unless an option or a config
     * changed them: MoE capacity and imbalance, CB and its bucket, MD, optimizer bytes K, parameter and
     * gradient bytes, overlap, the stage-3 limits, NVMe, FlashAttention and its kernel, accumulation
     * fusion). What the search decides (the stage, the degrees, the shape, ZeRO-R, offload, the batch) is
     * set on it per candidate: `searched` says which of those are open; a given one is the base plan's
     * value (the stage, deg[], micro_batch, grad_accum, pa, pa_cpu, offload, the recompute fields, schedule,
     * vstages, sp, bf16, tp_overlap) with its bit clear (zp_search_req_give). */
    zp_plan base;
    uint32_t searched;     /* ZP_SEARCH_* bits: what is left to the search */
    int64_t global_batch;  /* sequences per step, when ZP_SEARCH_GLOBAL_BATCH is clear (the plan holds no global
                              batch: it is micro-batch x accumulation x replicas) */
    int exact;             /* 1: what is not given takes its default instead of being searched (a DeepSpeed
                              config's semantics): MP 1, micro-batch from the global batch (or 1), no
                              accumulation, no Pa, no offload; the stage must be given */
    int checkpoint;        /* 0 / 1: 0 pins no recompute (--no-checkpoint) */
    int framework;         /* a zp_framework_id (0: any): the plans its release can run (--framework) */
    /* Simulation (method "simgrid"); without it the step time is the analytic estimate. */
    int simulate;
    const zp_profile *profile;  /* kernel and link costs; NULL: the preset's built-in profile */
    const char *platform_file;  /* a user's SimGrid platform, or NULL */
    const char *trace_path;     /* write the recommended plan's step as a Chrome trace, or NULL */
    zp_sim_mode sim;            /* full, reduced, or AUTO (0): reduced where exact (zp_engine_pick) */
    double oversubscription;    /* a rail-optimized fat tree's leaf down/up ratio; <= 0: the preset's */
    int jobs;                   /* simulations at once; <= 0: the online CPUs */
    int max_simulated;          /* simulate at most this many fitting candidates (best analytic first) */
    double reserve;             /* bytes per GPU a plan must leave free (ZP_DEFAULT_RESERVE) */
    int default_batch;          /* 1: with no batch option given, the default batch (zp_search_default_batch);
                                   0: the largest micro-batch that fits, no accumulation */
    int64_t max_mp;             /* largest MP degree searched; 0: the GPUs of a node (MP across nodes only
                                   when asked, as Megatron-LM baselines do) */
    /* Called as simulations finish (done of at most total), for a progress bar; may be NULL. */
    void (*progress)(void *ctx, int done, int total);
    void *progress_ctx;
    int shard_auto;             /* hybrid sharding searched (--shard-group auto): the full DP group and the
                                   largest shard group inside a node, for stages 2 and 3 */
    int rc_auto;                /* selective recompute's modules searched (--recompute-modules auto): each
                                   selective plan with every set of zp_search_rc_ladder; 0: base.rc_modules */
    /* search speed (issue #28) */
    int bound_shown;            /* > 0: the answer shows the figures of only the best bound_shown fitting plans
                                   not dominated (the text and Markdown answers: --top), so a dominated plan (the
                                   same batch as a plan with less extra work) gets no bound of its own (its step
                                   is its twin's: raise_dominated), and the others' bounds are lazy: a floor
                                   (zp_search_step_floor) first, the bound where it can be simulated or shown;
                                   every figure shown the same. 0 (default): every fitting plan's bound */
} zp_search_req;

typedef struct {
    zp_eval *plans;   /* the plans that fit, best first, then those that do not */
    int n;
    int n_fit;
    int n_simulated;
    int64_t default_batch; /* the default batch every candidate ran (sequences), 0 when options fixed it */
    /* fitting plans not simulated, by why: their bound (zp_search_step_bound) is no better than the best simulated step
       (branch and bound); the same batch as another plan with more extra work (dominated); past
       max_simulated; needing the full simulation beyond ZP_SIM_MAX_FULL_NODES nodes */
    int n_pruned, n_dominated, n_capped, n_too_large;
    double sim_wall_s; /* wall time of the simulations */
} zp_search_result;

/* Whether the request leaves `bits` (one or more ZP_SEARCH_*) to the search, and giving them (the values are
 * the base plan's, set by the caller) or leaving them open again. */
static inline int zp_search_req_searched(const zp_search_req *r, uint32_t bits) { return (r->searched & bits) != 0; }
static inline int zp_search_req_given(const zp_search_req *r, uint32_t bits) { return (r->searched & bits) == 0; }
static inline void zp_search_req_give(zp_search_req *r, uint32_t bits) { r->searched &= ~bits; }
static inline void zp_search_req_open(zp_search_req *r, uint32_t bits) { r->searched |= bits; }
/* A given degree of dimension d (the base plan's), or ZP_DIM_ANY when searched: the table's context form. */
static inline int64_t zp_search_req_deg(const zp_search_req *r, int d)
{
    return zp_search_req_searched(r, ZP_SEARCH_DIM(d)) ? ZP_DIM_ANY : r->base.deg[d];
}
/* The recompute policy given (its bit clear): the base plan's (zp_plan_recompute), and giving one without
 * touching the base plan's every-k-th-block count (zp_plan_set_recompute would clear it). */
static inline zp_recompute zp_search_req_recompute(const zp_search_req *r) { return zp_plan_recompute(&r->base); }
void zp_search_req_give_recompute(zp_search_req *r, zp_recompute rc);

/* Memory per GPU a plan may use, bytes: the GPU's less the reserve. */
static inline double zp_search_usable_mem(const zp_search_req *r) { return r->gpu_mem - r->reserve; }

/* The 16-bit type of the request's plans: the base plan's bf16 given, or by the GPU (zp_cluster_has_bf16). */
int zp_search_bf16(const zp_search_req *r);

/* The default global batch of a model when no batch option is given: the tokens per step of GPT-3's
 * runs by model size (zp_search_default_batch_tokens, Brown et al. 2020), in sequences of the model's
 * length (at least 1). Each candidate runs ceil(that / DP) sequences per DP rank. */
double zp_search_default_batch_tokens(double params);
int64_t zp_search_default_batch(const zp_model *model);

/* FlashAttention by default (1) where the request can run it: the GPU has FlashAttention-2 kernels (the
 * preset's flash_efficiency > 0: A100, H100, H200; not V100), the framework release (if one is given) has it,
 * and the kernel takes the model's head size. The CLI's search commands take it unless --flash-attention,
 * --flash-kernel or --no-flash-attention is given. */
int zp_search_flash_default(const zp_search_req *r);

/* A request with every option open, for `gpus` GPUs of `cluster`. */
void zp_search_req_default(zp_search_req *r, const zp_model *model, const zp_cluster *cluster, int64_t gpus);
/* Checks the fixed options against each other and the model (MP divides GPUs and heads, ...). */
zp_status zp_search_validate(const zp_search_req *r);
/* Evaluates one fully specified plan (memory, fit, step time, throughput); host_mem: per node (<= 0: the
 * preset's). */
zp_status zp_search_eval(const zp_model *model, const zp_cluster *cluster, double gpu_mem, double host_mem,
                         const zp_plan *plan, zp_eval *out);
zp_status zp_search_run(const zp_search_req *r, zp_search_result *out);
/* A lower bound of the simulated step time of `plan`, s: each stream runs its ops one after the other, each
 * priced by the cost function the simulator uses at its least (uncontended) time, so the step lasts at
 * least the compute stream's kernels and blocking collectives (Megatron's MP all-reduces), and at least the
 * comm stream's collectives (zp_engine_stream_bounds; on the presets: a `platform_file`'s links are the
 * user's, and only the kernels count there); a pipeline's stages: each stage's compute stream (its kernels
 * and its blocking MP collectives: the expert all-to-alls, Megatron's MP collectives) with the passes that
 * must precede and follow it; less a relative 1e-6 for the simulator's clock rounding; 0 (a bound still) when the
 * schedule cannot be built. */
double zp_search_step_bound(const zp_model *model, const zp_profile *prof, const zp_plan *plan,
                            const zp_cluster *cluster, const char *platform_file);
/* The same from every micro-step's ops (zp_search_step_bound sums a step of more than 8 micro-steps from
 * steps of 3 and 4, the sums being affine in them; the tests compare the two). */
double zp_search_step_bound_every(const zp_model *model, const zp_profile *prof, const zp_plan *plan,
                                  const zp_cluster *cluster, const char *platform_file);
/* A cheap lower bound of zp_search_step_bound, s (its GEMMs and blocking MP collectives alone, a pipeline
 * stage 1 / PP of them): the search's lazy bounds (bound_shown) order and prune the plans by it, and compute
 * a plan's own bound only where it can matter. */
double zp_search_step_floor(const zp_model *model, const zp_profile *prof, const zp_plan *plan,
                            const zp_cluster *cluster, const char *platform_file);
/* --recompute-modules auto: the module sets (ZP_RCM_* bits, 0 for Megatron-core's default, core_attn) the
 * search tries with selective recompute, for model m: at most ZP_RC_LADDER, the first the default, each
 * adding to the one before what m has (zp_search_walk.c says which and why). Returns how many. */
enum { ZP_RC_LADDER = 4 };
int zp_search_rc_ladder(const zp_model *m, unsigned out[ZP_RC_LADDER]);
void zp_search_result_free(zp_search_result *r);

#endif
