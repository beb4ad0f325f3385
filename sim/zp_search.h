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

#define ZP_SEARCH_ANY (-1)
#define ZP_MAX_GPUS INT64_C(100000000)       /* 1e8: beyond any machine */
#define ZP_MAX_MICRO_BATCH INT64_C(1048576)  /* cap of the micro-batch search */
/* Largest cluster simulated in full (nodes; the full simulation takes ~0.05 s per node and plan). The
 * reduced simulation (zp_engine.h) has no limit: its cost does not grow with the nodes. A plan whose
 * reduction is not exact keeps the analytic estimate beyond this size. */
#define ZP_SIM_MAX_FULL_NODES 2048

/* One evaluated plan. */
typedef struct {
    zp_plan plan;
    zp_memory mem;
    int fits;
    char reason[192];     /* why it does not fit */
    zp_step_time time;    /* seconds per step (analytic terms, or the simulated breakdown) */
    double analytic_step_s; /* the analytic estimate, kept beside a simulated time */
    double global_batch;  /* sequences per step */
    double samples_per_s;
    double tflops_per_gpu; /* executed FLOPs (incl. recompute) per second per GPU, 1e12 */
    double pflops;         /* aggregate, 1e15 */
    const char *method;    /* "analytic" or "simgrid" */
    const char *sim;       /* simgrid: "reduced" (one node per role) or "full" (every node); NULL otherwise */
} zp_eval;

typedef struct {
    const zp_model *model;
    const zp_cluster *cluster;
    double gpu_mem;        /* bytes per GPU (the preset's unless overridden) */
    double host_mem;       /* host memory per node, bytes (<= 0: the preset's), shared by the job's GPUs
                              on the node (zp_cluster_host_per_gpu) */
    int64_t gpus;
    /* ZP_SEARCH_ANY (-1) leaves an option to the search. */
    int stage;
    int64_t mp;
    int64_t ep;            /* expert-parallel degree of an MoE model (-1: searched over powers of two) */
    double capacity_factor, moe_imbalance; /* MoE: the experts' token capacity and the busiest rank's load */
    int64_t micro_batch;
    int64_t global_batch;
    int64_t grad_accum;    /* micro-batches per step */
    int exact;             /* 1: what is not given takes its default instead of being searched (a DeepSpeed
                              config's semantics): MP 1, micro-batch from the global batch (or 1), no
                              accumulation, no Pa, no offload; the stage must be given */
    int pa, pa_cpu;        /* -1 search, 0 off, 1 on */
    int offload;           /* -1 search, or a zp_offload */
    int checkpoint;        /* 0 / 1: 0 pins no recompute (--no-checkpoint) */
    int recompute;         /* -1 search (full, selective, none; with checkpoint 0 none only), or a zp_recompute */
    int64_t pp;            /* pipeline stages: -1 search (needs a global batch or an accumulation: micro-batches
                              to fill the pipeline), or P */
    int pp_schedule;       /* -1 search (1F1B and interleaved; GPipe runs the same passes with more memory, so
                              it is only taken when given), or a zp_pp_schedule */
    int vstages;           /* -1 search (the divisors of the layers per stage), or v */
    int sp;                /* -1 search (with MP > 1 and no Pa), 0 off, 1 on */
    int cb, md;            /* 0 / 1 */
    double bucket;         /* elements */
    double k_optimizer;
    double param_bytes;    /* 2 (fp16/bf16) or 4 (fp32) */
    int overlap_comm;      /* 0 / 1 */
    double stage3_max_live, stage3_prefetch, persistence_threshold; /* stage-3 limits (DeepSpeed's defaults;
                                                                        0: none) */
    int nvme;              /* ZP_NVME_* mask: offloaded states on NVMe (ZeRO-Infinity) */
    int flash_attn;        /* the plans run FlashAttention (zp_plan.flash_attn) */
    /* Simulation (method "simgrid"); without it the step time is the analytic estimate. */
    int simulate;
    const zp_profile *profile;  /* kernel and link costs; NULL: the preset's built-in profile */
    const char *platform_file;  /* a user's SimGrid platform, or NULL */
    const char *trace_path;     /* write the recommended plan's step as a Chrome trace, or NULL */
    zp_sim_mode sim;            /* full, reduced, or AUTO (0): reduced where exact (zp_engine_pick) */
    double oversubscription;    /* a rail-optimized fat tree's leaf down/up ratio; <= 0: the preset's */
    int jobs;                   /* simulations at once; <= 0: the online CPUs */
    int max_simulated;          /* simulate at most this many fitting candidates (best analytic first) */
    int64_t max_mp;             /* largest MP degree searched; 0: the GPUs of a node (MP across nodes only
                                   when asked, as Megatron-LM baselines do) */
    /* Called as simulations finish (done of at most total), for a progress bar; may be NULL. */
    void (*progress)(void *ctx, int done, int total);
    void *progress_ctx;
} zp_search_req;

typedef struct {
    zp_eval *plans;   /* the plans that fit, best first, then those that do not */
    int n;
    int n_fit;
    int n_simulated;
    double sim_wall_s; /* wall time of the simulations */
} zp_search_result;

/* A request with every option open, for `gpus` GPUs of `cluster`. */
void zp_search_req_default(zp_search_req *r, const zp_model *model, const zp_cluster *cluster, int64_t gpus);
/* Checks the fixed options against each other and the model (MP divides GPUs and heads, ...). */
zp_status zp_search_validate(const zp_search_req *r);
/* Evaluates one fully specified plan (memory, fit, step time, throughput); host_mem: per node (<= 0: the
 * preset's). */
zp_status zp_search_eval(const zp_model *model, const zp_cluster *cluster, double gpu_mem, double host_mem,
                         const zp_plan *plan, zp_eval *out);
zp_status zp_search_run(const zp_search_req *r, zp_search_result *out);
void zp_search_result_free(zp_search_result *r);

#endif
