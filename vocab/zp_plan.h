/* zp_plan.h — one parallel training configuration ("plan") of a model on a cluster:
 * ZeRO-DP stage, degrees, batch, ZeRO-R options and offload. Shared by the memory model, the
 * step-time models, the search and the executor. */
#ifndef ZP_PLAN_H
#define ZP_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include "zp_dims.h"
#include "zp_model.h"
#include "zp_status.h"

typedef enum {
    ZP_OFFLOAD_NONE = 0,
    ZP_OFFLOAD_OPTIMIZER, /* ZeRO-Offload: optimizer states and the Adam update on the CPU (stage >= 1) */
    ZP_OFFLOAD_PARAMS,    /* ZeRO-3 Offload: optimizer and fp16 parameters on the CPU (stage 3) */
} zp_offload;

/* Whose memory layout and numerics a plan's schedule describes (sim/zp_layout.h): the DeepSpeed/Megatron
 * system the planner models, or zplan's own executor (exec/: fp32, its exact tensors). */
typedef enum { ZP_IMPL_DEEPSPEED = 0, ZP_IMPL_EXEC } zp_impl;

/* Pipeline schedules (Narayanan et al. SC'21): GPipe (every forward, then every backward: the stage
 * holds all its micro-batches' activations), 1F1B (PipeDream-Flush: warm-up forwards, then one forward
 * and one backward alternately, so stage i holds at most P - i micro-batches), interleaved 1F1B
 * (Megatron-LM: each rank holds v model chunks, the bubble shrinks by v, activations and point-to-point
 * traffic grow). */
typedef enum { ZP_PP_1F1B = 0, ZP_PP_GPIPE, ZP_PP_INTERLEAVED, ZP_PP_NSCHEDULES } zp_pp_schedule;

const char *zp_pp_schedule_name(zp_pp_schedule s); /* "1f1b", "gpipe", "interleaved" */
zp_status zp_pp_schedule_parse(const char *text, zp_pp_schedule *out);

/* Activation recompute (Korthikanti et al. 2022): full (one checkpoint per block, the block recomputed in
 * backward), selective (Megatron-LM's: every activation kept but the attention core's, which backward
 * recomputes), none; and op (torchtitan's op-level selective checkpointing, selective_ac_option = "op": a
 * block keeps its input and the outputs of its compute-intensive ops, every other matmul's and the
 * attention's, and backward recomputes the other matmuls and every elementwise op; zp_plan_op_sac_*).
 * The search tries op only when asked (--recompute op). */
typedef enum { ZP_RECOMPUTE_FULL = 0, ZP_RECOMPUTE_SELECTIVE, ZP_RECOMPUTE_NONE, ZP_RECOMPUTE_OP, ZP_NRECOMPUTE } zp_recompute;

const char *zp_recompute_name(zp_recompute r); /* "full", "selective", "none", "op" */

/* What selective recompute re-runs: Megatron-core's --recompute-modules (transformer_config.py
 * recompute_modules, default ["core_attn"]), the ZP_RCM_* bits of a block's modules (models/zp_model.h).
 * core_attn, mlp, moe and shared_experts are checkpointed whole (their inputs kept, their forward run again
 * before their backward: mlp's and moe's with their TP and EP communication); layernorm, moe_act and
 * mla_up_proj discard their outputs after the consumer has used them and compute them again before its
 * backward (CheckpointWithoutOutput). A table, as the op kinds are (zp_rc_module_get); the bits make
 * zp_plan.rc_modules. */

typedef struct {
    const char *name;  /* Megatron-core's: "core_attn", "layernorm", ... */
    unsigned bit;      /* its zp_rc_module */
} zp_rc_module_info;

/* Row i of the table (NULL past its end), in Megatron-core's order. */
const zp_rc_module_info *zp_rc_module_get(int i);
/* A list of module names (spaces, commas, brackets and quotes between them: Megatron-LM's words, NeMo's
 * Python list) into bits; ZP_EINVAL naming an unknown module or an empty list (`what` names the option). */
zp_status zp_rc_module_parse(const char *text, const char *what, unsigned *out);
/* The names of `bits` in the table's order joined by `sep` into buf (len bytes); the characters written. */
int zp_rc_module_text(unsigned bits, const char *sep, char *buf, size_t len);

/* How context parallelism moves K and V: a ring (Megatron-core's default, cp_comm_type p2p: CP - 1 point-to-point
 * steps, each hidden behind the attention of the slice in hand) or an all-gather of every slice's K and V before
 * the attention and a reduce-scatter of their gradients after it (Llama 3's; Megatron-core's all_gather), which
 * the attention waits for. */
typedef enum { ZP_CP_RING = 0, ZP_CP_ALLGATHER, ZP_NCP_COMM } zp_cp_comm;

const char *zp_cp_comm_name(zp_cp_comm c);     /* "ring", "all-gather" */
const char *zp_cp_comm_megatron(zp_cp_comm c); /* Megatron-core's --cp-comm-type: "p2p", "all_gather" */
zp_status zp_cp_comm_parse(const char *text, zp_cp_comm *out); /* either name */
zp_status zp_recompute_parse(const char *text, zp_recompute *out);

/* Tensor-parallel communication overlapped with the GEMMs that consume or produce it (sequence parallelism's
 * all-gathers and reduce-scatters split into chunks, each beside a chunk of the GEMM; sim/zp_emit.c):
 *  TE: Transformer Engine's userbuffers as Megatron-core runs them (--tp-comm-overlap): the all-gather before
 *      a column-parallel GEMM (and before a row-parallel GEMM's input gradient) as a ring exchange of TP
 *      chunks over copy engines, the reduce-scatter after a row-parallel GEMM pipelined over 4 chunks by an
 *      SM kernel, the reduce-scatter of a column-parallel input gradient in bulk beside its weight gradient;
 *  ASYNC: PyTorch's async TP (torchtitan's enable_async_tensor_parallel, under torch.compile): all-gather-
 *      matmul and matmul-reduce-scatter micro-pipelined over TP chunks through symmetric memory, every
 *      transfer a copy-engine copy. */
typedef enum { ZP_TP_OVERLAP_OFF = 0, ZP_TP_OVERLAP_TE, ZP_TP_OVERLAP_ASYNC, ZP_NTP_OVERLAP } zp_tp_overlap;

const char *zp_tp_overlap_name(zp_tp_overlap t); /* "off", "te", "async" */
/* "off", "te" (or "on", "userbuffers": Megatron-core's), "async" (torchtitan's); ZP_EINVAL naming them. */
zp_status zp_tp_overlap_parse(const char *text, zp_tp_overlap *out);

/* Stage 3's parameters after a block's forward (FSDP2's reshard_after_forward, torchtitan's
 * fsdp_reshard_after_forward policy): "default" frees them unless the plan has pipeline stages (torchtitan's
 * apply_fsdp: "For PP, by default do not reshard after forward to avoid per-microbatch all-gathers"),
 * "always" frees them (gathered again for the backward, per micro-batch: DeepSpeed's stage 3), "never" keeps
 * them from their gather to the end of the step's backward. */
typedef enum { ZP_RESHARD_DEFAULT = 0, ZP_RESHARD_ALWAYS, ZP_RESHARD_NEVER, ZP_NRESHARD } zp_reshard;

const char *zp_reshard_name(zp_reshard r); /* "default", "always", "never" */
zp_status zp_reshard_parse(const char *text, zp_reshard *out); /* those, or on/off, true/false */

/* Most model chunks (virtual stages) per pipeline rank. */
#define ZP_MAX_VSTAGES 64

/* The ZeRO-DP stages as a const table (GSL-style strategies). */
typedef struct {
    int stage;
    const char *name;  /* paper's notation: "baseline", "Pos", "Pos+g", "Pos+g+p" */
    const char *title; /* "plain DP", "optimizer states partitioned", ... */
    int partitions_optimizer, partitions_grads, partitions_params;
    double dp_volume;  /* elements moved per DP rank per step in units of the local parameters: 2 or 3 */
} zp_stage_info;

const zp_stage_info *zp_stage_get(int stage); /* NULL outside 0..3 */

const char *zp_offload_name(zp_offload o); /* "none", "optimizer", "params" */
zp_status zp_offload_parse(const char *text, zp_offload *out);

/* Defaults: DeepSpeed's reduce/allgather bucket of 5e8 elements; Adam's K = 12. */
#define ZP_DEFAULT_BUCKET 5e8
#define ZP_ADAM_K 12.0
/* DeepSpeed's stage-3 defaults (deepspeed/runtime/zero/config.py): stage3_max_live_parameters 1e9,
 * stage3_prefetch_bucket_size 5e8, stage3_param_persistence_threshold 1e5 (elements). */
#define ZP_DEFAULT_MAX_LIVE 1e9
#define ZP_DEFAULT_PREFETCH 5e8
#define ZP_DEFAULT_PERSISTENCE 1e5
/* ZeRO-Infinity's NVMe swap buffers (DeepSpeed defaults): offload_param buffer_count 5 x buffer_size 1e8
 * fp16 elements; offload_optimizer buffer_count 4 x sub_group_size (1e9 elements) of fp32. */
#define ZP_NVME_PARAM_BUFFERS 5.0
#define ZP_NVME_PARAM_BUFFER_SIZE 1e8
#define ZP_NVME_OPT_BUFFERS 4.0
#define ZP_NVME_SUB_GROUP 1e9

/* Where offloaded states live (zp_plan.nvme, a mask): host memory unless their bit is set (ZeRO-Infinity:
 * offload_optimizer / offload_param device "nvme"). */
enum { ZP_NVME_OPTIMIZER = 1, ZP_NVME_PARAMS = 2 };

typedef struct {
    int stage;           /* ZeRO-DP stage 0..3 */
    /* The parallel degrees, indexed by the dimension table (vocab/zp_dims.h); each also by its name. */
    union {
        int64_t deg[ZP_NDIMS];
        struct {
            int64_t mp;  /* [ZP_DIM_TP] Nm: model (tensor) parallel degree */
            int64_t ep;  /* [ZP_DIM_EP] expert-parallel degree: divides dp and the routed experts; 1: every
                            rank holds all (mixture of experts: DeepSpeed-MoE, Megatron-core) */
            int64_t dp;  /* [ZP_DIM_DP] Nd: data-parallel degree */
            int64_t pp;  /* [ZP_DIM_PP] pipeline stages (1: none); gpus = dp * mp * pp */
            int64_t cp;  /* [ZP_DIM_CP] context-parallel degree: divides dp; each sequence split over cp
                            of the DP ranks, so the batch has dp / cp replicas (zp_plan_replicas) */
        };
    };
    zp_pp_schedule schedule; /* the pipeline schedule (with pp > 1) */
    int cp_comm;         /* a zp_cp_comm: how context parallelism (cp > 1) moves K and V */
    int vstages;         /* model chunks per pipeline rank: v >= 2 for the interleaved schedule, else 1 */
    int sp;              /* Megatron sequence parallelism over the MP group (LayerNorm, dropout sharded;
                            reduce-scatter and all-gather instead of all-reduce) */
    int selective;       /* selective recompute: the attention core recomputed in backward (checkpoint 0) */
    unsigned rc_modules; /* with selective: what it re-runs (ZP_RCM_* bits, Megatron-core's --recompute-modules);
                            0: its default, the attention core alone (zp_plan_rc_modules) */
    int64_t micro_batch; /* sequences per GPU (per MP group) per forward/backward */
    int64_t grad_accum;  /* micro-batches per step */
    int checkpoint;      /* full activation checkpointing (one checkpoint per block) */
    int pa;              /* ZeRO-R Pa: checkpoints partitioned across the MP group */
    int pa_cpu;          /* ZeRO-R Pa+cpu: the partitions live in host memory */
    int cb;              /* ZeRO-R CB: constant-size fused buffers of `bucket` elements */
    double bucket;       /* elements per fused communication bucket when cb */
    int md;              /* ZeRO-R MD: contiguous pre-allocated regions, no fragmentation */
    zp_offload offload;
    double k_optimizer;  /* optimizer bytes per parameter (mixed-precision Adam: 12; fp32 Adam: 8) */
    /* Adam's moments in another type (Megatron-core's precision-aware optimizer, --exp-avg-dtype and
       --exp-avg-sq-dtype; DeepSeek-V3's BF16 moments): bytes an element of m and of v; 0: fp32 (4) */
    double exp_avg_bytes, exp_avg_sq_bytes;
    double param_bytes;  /* bytes of a parameter and of a gradient: 2 (fp16/bf16) or 4 (fp32) */
    int bf16;            /* 16-bit parameters are bf16 (no loss scaling; GEMMs at the GPU's bf16 peak), else
                            fp16; meaningless with 4-byte parameters */
    double grad_bytes;   /* bytes of a gradient element when not param_bytes: 4 with 16-bit parameters keeps
                            the gradients (and their accumulation) in fp32 as Megatron-LM does (18 bytes per
                            parameter with Adam); 0: param_bytes (DeepSpeed's default: 16 bytes) */
    int overlap_comm;    /* gradient reductions (and stage-3 gathers) overlap compute on their own stream */
    double stage3_max_live; /* stage 3: most parameters gathered at once (elements; DeepSpeed's
                               stage3_max_live_parameters, default 1e9); 0: no limit */
    double stage3_prefetch; /* stage 3: parameters gathered ahead of use (elements; DeepSpeed's
                               stage3_prefetch_bucket_size, default 5e8); 0: one block ahead */
    double persistence_threshold; /* stage 3: tensors below this many elements stay whole on every rank */
    int nvme;            /* ZP_NVME_* mask: offloaded states on NVMe instead of host memory (ZeRO-Infinity) */
    int flash_attn;      /* attention as one fused kernel (FlashAttention): no s x s scores in memory, the
                            scores, softmax and context GEMMs costed as that kernel (zp_op_info.flash) */
    int grad_accum_fusion; /* the weight-gradient GEMMs accumulate into the gradients (beta 1: Megatron-core's
                              --gradient-accumulation-fusion, zplan's executor); 0: a separate add per
                              micro-batch (PyTorch's AccumulateGrad, DeepSpeed's ZeRO-0/1 with accumulation) */
    int flash_kernel;    /* which implementation (a zp_flash_kernel_id, sim/zp_device.h): FlashAttention-2 by
                            default */
    zp_impl impl;        /* whose memory the schedule's alloc ops describe (default: DeepSpeed's) */
    /* mixture of experts (DeepSpeed-MoE, Megatron-core): experts sharded over `ep` of the DP ranks */
    double capacity_factor; /* an expert's token buffer over its fair share (tokens x top_k / experts): the
                               rows its GEMMs run; 1 by default (DeepSpeed's training capacity factor) */
    double moe_imbalance;   /* the busiest EP rank's tokens over the mean (>= 1): routing is never even */
    int dispatcher;         /* a zp_dispatch_kind (vocab/zp_dispatch.h): how the tokens cross the EP group;
                               0: Megatron-core's all-to-all, a copy per (token, expert) */
    int ep_overlap;         /* the all-to-alls beside the other micro-batch's compute (Megatron-core's
                               --overlap-moe-expert-parallel-comm, its combined 1F1B: a forward and a backward of
                               two micro-batches interleaved layer by layer; DeepSeek's DualPipe alike); 0: they
                               block the compute stream */
    int shared_overlap;     /* the shared experts on a stream of their own beside the dispatch and combine
                               all-to-alls (Megatron-core's --moe-shared-expert-overlap); 0: after the combine */
    int tp_overlap;      /* a zp_tp_overlap: TP communication overlapped with its GEMMs (needs sp with mp > 1;
                            nothing to overlap at mp 1) */
    int overlap_p2p_comm; /* the interleaved schedule's steady-state sends between pipeline stages leave the
                             compute stream at once (Megatron-LM's default, --no-overlap-p2p-communication
                             to drop it): 1 by default, only the interleaved schedule uses it (Megatron-LM
                             clears it for any other) */
    int overlap_p2p_warmup_flush; /* with overlap_p2p_comm, the warm-up's and the flush's sends too (Megatron-LM's
                                     --overlap-p2p-communication-warmup-flush): every send leaves the compute
                                     stream at once */
    int overlap_param_gather; /* stage 1-2: the updated parameters' all-gather left for the next step's first
                                 forward, bucket by bucket beside it (Megatron-core's --overlap-param-gather
                                 with its distributed optimizer; needs overlap_comm) instead of after the
                                 optimizer */
    /* torchtitan's checkpointing modes (torchtitan/distributed/activation_checkpoint.py) */
    int ckpt_every;      /* with checkpoint: only every k-th block checkpointed (selective_ac_option = "k",
                            _apply_layer_sac: the blocks whose 1-based index is a multiple of k), the others
                            keep all their activations; 0 or 1: every block (zp_plan_block_checkpointed) */
    int op_sac;          /* op-level selective checkpointing (ZP_RECOMPUTE_OP; checkpoint and selective 0) */
    /* FP8 training (vocab/zp_fp8.h): the blocks' linear GEMMs in FP8 beside bf16 parameters */
    int fp8;             /* a zp_fp8_recipe; 0 (ZP_FP8_NONE): every GEMM in the 16-bit type */
    int fp8_all_gather;  /* FSDP2 with a torchao recipe: parameters all-gathered in FP8, 1 byte instead of 2 */
    int act_fp8_store;   /* Megatron-core's --activation-func-fp8-input-store: a SwiGLU's input (the gate and up
                            projections' output, a dense MLP's and the experts') kept for its backward as FP8, a
                            plain e4m3 cast of 1 byte an element (fused_bias_swiglu.py), not the training type */
    int swiglu_fusion;   /* a SwiGLU as one fused kernel that keeps only its input for backward (Megatron-core's
                            bias_swiglu_impl, on unless --no-bias-swiglu-fusion; torch.compile's fused kernel):
                            1 by default; 0, or with eager, PyTorch eager's silu(gate) * up, which keeps the
                            SiLU's output too (zp_plan_glu_fused) */
    /* Uneven pipeline stages (vocab/zp_pipeline.h); all 0 / NULL: the even split. */
    int pp_first, pp_last;  /* transformer layers of the first / the last pipeline stage (Megatron-core's
                               --decoder-first/last-pipeline-num-layers; 0: not given), the stages between
                               sharing the rest evenly */
    const int *pp_layout;   /* layers per stage (pp_layout_n == pp) or per virtual stage (pp * vstages, in
                               virtual-stage order c·P + s); not owned: the caller's, outliving the plan */
    int pp_layout_n;
    int pp_acc;             /* Megatron-core's --account-for-embedding-in-pipeline-split and
                               --account-for-loss-in-pipeline-split (ZP_PP_ACC_* bits, vocab/zp_pipeline.h):
                               the embedding and the loss counted as a layer each in the split, the layout the
                               search takes where the even split fails (Llama 3 405B's); 0: not */
    /* sharded data parallelism as FSDP2 runs it (torchtitan), beside pipelines and in hybrid shards */
    int reshard;         /* a zp_reshard: stage 3's gathered parameters freed after the forward or kept */
    int64_t shard_group; /* hybrid sharding: states sharded within groups of this many DP ranks and
                            replicated across dp / shard_group of them (FSDP2 HSDP, MiCS); 0: all dp */
    /* the fp16 loss scaler of Megatron-LM 2019 and DeepSpeed 2020 (--framework deepspeed-2020) */
    int serial_scaler;   /* each step, every gradient tensor of the rank's partition is checked for overflow
                            (x.float().sum(), then float(): a host sync) and its norm taken (.double().norm(),
                            then .item(): another) one tensor at a time (sim/zp_schedule.c, SCALER_CHECK) */
    /* torch.compile (issue #28 point 7) */
    int eager;           /* 1: torch.compile off, a block's elementwise ops as PyTorch eager's separate kernels
                            (zp_op_info.launches_eager: each its launch, host dispatch and HBM round trip);
                            0 (default): fused kernels (Inductor's under torch.compile, Megatron's own) */
    /* the interleaved schedule's warm-up as Megatron-LM v2 to Megatron-core 0.9 ran it (--framework
       megatron-2021; zp_pp_warmup) */
    int interleave_all_warmup; /* 1: with exactly P micro-batches every stage runs all its forwards, then all
                                  its backwards; 0 (default): Megatron-core's warm-up today, capped by the
                                  stage's passes */
} zp_plan;
_Static_assert(offsetof(zp_plan, cp) == offsetof(zp_plan, deg) + ZP_DIM_CP * sizeof(int64_t), "CP");

/* A plan with defaults: stage 0, dp = gpus, mp 1, micro-batch 1, checkpointing on, CB and MD on,
 * DeepSpeed's stage-3 limits. */
void zp_plan_default(zp_plan *p, int64_t gpus);
/* Bytes of one gradient element (grad_bytes, else param_bytes). */
double zp_plan_grad_bytes(const zp_plan *p);
/* The bytes a parameter Adam's moments save in a type narrower than fp32 (exp_avg_bytes, exp_avg_sq_bytes;
 * 0: fp32 both, > 0: Megatron-core's precision-aware optimizer), and the optimizer state bytes per parameter,
 * k_optimizer less those. */
double zp_plan_moments_saved(const zp_plan *p);
double zp_plan_optimizer_bytes(const zp_plan *p);
/* The bytes an element of an Adam moment of this type takes ("fp32" 4, "bf16" and "fp16" 2, "fp8" 1), 0 for
 * another word; and the type's name for a byte count. */
double zp_adam_moment_bytes(const char *type);
const char *zp_adam_moment_name(double bytes);
/* "fp16", "bf16" or "fp32": the training precision of the parameters. */
const char *zp_plan_precision_name(const zp_plan *p);

/* The recompute policy of a plan (from checkpoint and selective), and setting it. */
zp_recompute zp_plan_recompute(const zp_plan *p);
void zp_plan_set_recompute(zp_plan *p, zp_recompute r);
/* The modules selective recompute re-runs (ZP_RCM_* bits): rc_modules, or core_attn where that is 0; 0
 * without selective recompute. */
unsigned zp_plan_rc_modules(const zp_plan *p);
/* Whether block l (0-based, the model's) is checkpointed and recomputed whole: full recompute, every block
 * or every ckpt_every-th one (the blocks l with (l + 1) % k == 0, as torchtitan counts its wrappers). */
int zp_plan_block_checkpointed(const zp_plan *p, int64_t l);
/* The fraction of a model's L blocks that zp_plan_block_checkpointed checkpoints (0 without full recompute). */
double zp_plan_ckpt_fraction(const zp_plan *p, int64_t layers);
/* GPUs of the plan: dp * mp * pp. */
int64_t zp_plan_gpus(const zp_plan *p);
/* The replicas of the batch: dp over the ways a sequence is split (context parallelism), zp_dims_replicas. */
int64_t zp_plan_replicas(const zp_plan *p);
/* Global batch in sequences: micro_batch * grad_accum * replicas. */
double zp_plan_global_batch(const zp_plan *p);
/* Stage 3 frees its gathered parameters after each forward (the reshard policy resolved: "default" is
 * torchtitan's, keep them with pipeline stages); 0 below stage 3. */
int zp_plan_reshards(const zp_plan *p);
/* The DP ranks a ZeRO partition spans: the shard group of hybrid sharding, else dp. */
int64_t zp_plan_shard_degree(const zp_plan *p);
/* The plan's pipeline sends leave the compute stream (overlap_p2p_comm with the interleaved schedule over
 * pipeline stages: the steady state's, or with overlap_p2p_warmup_flush every one). */
int zp_plan_p2p_overlapped(const zp_plan *p);
/* A SwiGLU's backward keeps only its input, gate and up (and fc2 its output): swiglu_fusion without eager. Else
 * PyTorch eager's F.silu(gate) * up keeps gate, up, the SiLU's output and the product. */
int zp_plan_glu_fused(const zp_plan *p);
/* The plan overlaps TP communication: an overlap form asked (tp_overlap) and TP to overlap (mp > 1). */
int zp_plan_tp_overlapped(const zp_plan *p);
/* The micro-batches' gradients accumulate whole and are reduce-scattered once, after the last one (stage >= 2
 * with pipeline stages, as torch.distributed.pipelining runs FSDP2), instead of every micro-batch's. */
int zp_plan_grads_once(const zp_plan *p);
/* Consistency of the plan itself (stage range, Pa needs checkpointing, offload needs a stage, what
 * DeepSpeed and Megatron-LM allow with pipeline parallelism). */
zp_status zp_plan_validate(const zp_plan *p);

#endif
