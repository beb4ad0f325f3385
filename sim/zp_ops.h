/* zp_ops.h — the typed operations of a step schedule: what kinds of operation exist (zp_opk, one row
 * each in zp_ops.def), what is known of each kind (zp_op_info: name for output, class, stream, time part,
 * cost function, measured kernels, collective kind and group, copy direction), the channels that order
 * the streams, the memory categories and the buffers that alloc and free ops name.
 *
 * The simulator (sim/zp_engine.c), the device cost model (sim/zp_device.c), the memory replay
 * (sim/zp_memory.c) and the executor (exec/) all dispatch on an op's kind through these tables; no code
 * compares an op's name. */
#ifndef ZP_OPS_H
#define ZP_OPS_H

#include "zp_coll.h"
#include "zp_model.h"
#include "zp_profile.h"

/* Streams of one rank: compute (the GPU's compute stream, which also runs the blocking Megatron MP
 * collectives), comm (the ZeRO-DP collectives: gradient buckets, stage-3 parameter gathers, the stage-1/2
 * parameter all-gather), pcie (host<->device copies), cpu (the host's CPU Adam with offload), cp (context
 * parallelism's K/V ring: TransformerEngine runs its point-to-point on streams of its own, so it never
 * queues behind a gradient reduction held for the pipeline's flush), tp (tensor-parallel transfers overlapped
 * with their GEMMs, zp_plan.tp_overlap: Transformer Engine's userbuffers and PyTorch's async TP drive them from
 * streams of their own beside the GEMM's), ep (an MoE block's all-to-alls beside the other micro-batch's
 * compute, zp_plan.ep_overlap: Megatron-core's combined 1F1B runs them on a stream of their own). */
typedef enum {
    ZP_STREAM_COMPUTE = 0,
    ZP_STREAM_COMM,
    ZP_STREAM_PCIE,
    ZP_STREAM_CPU,
    ZP_STREAM_CP,
    ZP_STREAM_TP,
    ZP_STREAM_EP,
    ZP_NSTREAMS
} zp_stream;

/* What an operation is for: the step-time breakdown and the trace group by it. SETUP: the allocations
 * made once before the first step (model states, the executor's tensors). */
typedef enum {
    ZP_PHASE_FORWARD,
    ZP_PHASE_RECOMPUTE,
    ZP_PHASE_BACKWARD,
    ZP_PHASE_OPTIMIZER,
    ZP_NPHASES,
    ZP_PHASE_SETUP = ZP_NPHASES
} zp_phase;

typedef enum {
    ZP_OPC_COMPUTE, /* a kernel (device or host CPU): costed by info->cost */
    ZP_OPC_COLL,    /* a collective on an MP or DP group */
    ZP_OPC_COPY,    /* a host<->device copy over PCIe */
    ZP_OPC_ALLOC,   /* memory: `bytes` of `cat` become live (buffer `buf`, index `item`) */
    ZP_OPC_FREE,    /* memory: the same buffer's bytes are released */
    ZP_OPC_SIGNAL,  /* adds a token to a channel */
    ZP_OPC_WAIT,    /* takes a token from a channel (blocks until one is there) */
    ZP_OPC_P2P,     /* point-to-point between pipeline stages: a send, a receive or an exchange with the
                       stage `item` (the op's peer), `bytes` per GPU */
    ZP_NOPC
} zp_opc;

/* The step-time parts (sim/zp_engine.h's breakdown, the executor's measured bins). */
typedef enum {
    ZP_PART_COMPUTE,   /* forward, recompute and backward kernels */
    ZP_PART_MP_COMM,   /* Megatron MP all-reduces, Pa all-gathers */
    ZP_PART_DP_COMM,   /* ZeRO-DP collectives (and waiting for them) */
    ZP_PART_OPTIMIZER, /* Adam, and with ZeRO-Offload its copies and the CPU's update */
    ZP_PART_OFFLOAD,   /* Pa+cpu checkpoint copies (and waiting for them) */
    ZP_PART_PP_COMM,   /* pipeline sends and receives: transfers and waiting for the neighbour stages (the
                          bubble), the tied embedding's gradient all-reduce between the first and last stage */
    ZP_PART_NONE,      /* takes no time: signal, wait (a wait counts as its channel's part), alloc, free */
    ZP_NPARTS
} zp_part;

/* The rank groups a collective runs over. Ranks are numbered MP fastest (Megatron): rank = d·mp + j for
 * DP index d and MP index j. MP: the mp ranks of one d; DP: the dp ranks of one j; with mixture of experts
 * (plan->ep > 1), EP: ep consecutive DP indices (the ranks that shard one block's experts between them,
 * exchanging tokens by all-to-all) and EDP: the dp/ep ranks holding the same experts (DP indices equal
 * modulo ep), over which the expert parameters' gradients are reduced and their states partitioned; with
 * context parallelism (plan->cp > 1), CP: cp consecutive DP indices that split each sequence; with hybrid
 * sharding (plan->shard_group G < dp), DP is the shard group (G consecutive DP indices, whose collectives
 * shard the states) and RDP the dp / G replicas of a shard (DP indices equal modulo G). A new
 * group is one row of ZP_GROUPS (its id and the name the trace and `zplan schedule` print). */
#define ZP_GROUPS(X) X(MP, "mp") X(DP, "dp") X(EP, "ep") X(EDP, "edp") X(CP, "cp") X(RDP, "replica")
typedef enum {
#define ZP_GROUP_ENUM(id, name) ZP_GROUP_##id,
    ZP_GROUPS(ZP_GROUP_ENUM)
#undef ZP_GROUP_ENUM
    ZP_NGROUPS
} zp_group;
typedef enum { ZP_COPY_D2H, ZP_COPY_H2D } zp_copy_dir;
/* What a point-to-point op does with its peer stage: send, receive, or both (an all-reduce of two). */
typedef enum { ZP_P2P_SEND, ZP_P2P_RECV, ZP_P2P_EXCHANGE } zp_p2p_kind;
/* A bias a GEMM adds (forward, over C's m·n) or reduces (weight gradient, over dY's k·n) on the host. */
typedef enum { ZP_BIAS_NONE, ZP_BIAS_FWD, ZP_BIAS_WGRAD } zp_bias;
/* A GEMM's operands that the step last touched long before it runs (zp_op_info.cold): bits of C = A . B.
 * 0 means the default, B and C: a linear layer's weight and its output buffer, its other input the op before's
 * output. A weight gradient's, dW = X^T . dY: the input the forward saved (A) and dW (C); dY is what the input
 * gradient before it just read. */
typedef enum {
    ZP_COLD_DEFAULT = 0,
    ZP_COLD_A = 1,
    ZP_COLD_B = 2,
    ZP_COLD_C = 4,
    ZP_COLD_WGRAD = ZP_COLD_A | ZP_COLD_C
} zp_cold;
/* How a tensor-parallel transfer overlapped with its GEMM (zp_plan.tp_overlap) is priced, inside the NVLink
 * domain (sim/zp_collcost.c): none (a collective as NCCL runs it), one chunk to the ring neighbour (a copy-
 * engine peer copy: bytes over NVLink plus one step's latency), or a chunk reduce-scattered by an SM kernel
 * reading its peers' pieces ((g-1)/g of the bytes over NVLink plus one step's latency). */
typedef enum { ZP_UB_NONE = 0, ZP_UB_P2P, ZP_UB_RS } zp_ub;

/* An op's part of the attention core when the plan runs FlashAttention (one kernel forward, one backward,
 * no s x s scores in memory): the op that carries the fused forward, the one that carries the backward,
 * or one absorbed into them (0 time). */
typedef enum { ZP_FLASH_NONE = 0, ZP_FLASH_FWD, ZP_FLASH_BWD, ZP_FLASH_FUSED } zp_flash;
/* A linear layer's GEMM that an FP8 recipe runs in FP8: Y = X.W (forward), dX = dY.W^T (input gradient),
 * dW = X^T.dY (weight gradient); each casts different operands (sim/zp_device.c). */
typedef enum { ZP_FP8_OP_NONE = 0, ZP_FP8_OP_FWD, ZP_FP8_OP_DGRAD, ZP_FP8_OP_WGRAD } zp_fp8_op;

/* Channels (counting semaphores per rank): X(ID, name, the part a compute-stream wait on it counts in). */
#define ZP_CHANNELS(X)                                                                                       \
    X(GATHERED, "gathered", DP_COMM)     /* stage 3: a block's parameters are gathered (comm -> compute) */   \
    X(GATHER_GO, "gather_go", DP_COMM)   /* stage 3: compute started the previous block: prefetch the next */ \
    X(CKPT_OUT, "ckpt_out", OFFLOAD)     /* Pa+cpu: a checkpoint partition is ready to go to the host */      \
    X(CKPT_IN_GO, "ckpt_in_go", OFFLOAD) /* Pa+cpu: backward reached the block above: fetch the checkpoint */ \
    X(CKPT_IN, "ckpt_in", OFFLOAD)       /* Pa+cpu: the checkpoint partition is back (pcie -> compute) */     \
    X(BUCKET, "bucket", DP_COMM)         /* a gradient bucket is complete (compute -> comm) */                \
    X(REDUCED, "reduced", DP_COMM)       /* a bucket has been reduced (comm -> compute, end of backward) */   \
    X(GRAD_HOST, "grad_host", OPTIMIZER) /* offload: a reduced bucket is on the host (pcie -> cpu) */         \
    X(BUCKET_D2H, "bucket_d2h", OPTIMIZER) /* offload: copy a reduced bucket's partition to the host */       \
    X(OPT_DONE, "opt_done", OPTIMIZER)   /* offload: the CPU Adam finished (cpu -> pcie) */                   \
    X(PARAMS_BACK, "params_back", OPTIMIZER) /* offload: updated parameters are back on the device */         \
    X(UPDATED, "updated", DP_COMM)       /* the optimizer step is done on the device (compute -> comm) */    \
    X(CP_KV, "cp_kv", MP_COMM)           /* CP: a block's K and V (or their gradients) are ready for the ring */ \
    X(CP_RING, "cp_ring", MP_COMM)       /* CP: the ring has passed every slice's K and V (comm -> compute) */ \
    X(TP_GO, "tp_go", MP_COMM)           /* TP overlap: a chunk's data is ready to move (compute -> tp) */      \
    X(TP_DONE, "tp_done", MP_COMM)       /* TP overlap: a chunk has moved (tp -> compute) */                   \
    X(EP_GO, "ep_go", MP_COMM)           /* EP overlap: an all-to-all's tokens are ready (compute -> ep) */     \
    X(EP_DONE, "ep_done", MP_COMM)       /* EP overlap: the all-to-all is done (ep -> compute) */               \
    X(PARAMS_GATHERED, "params_gathered", DP_COMM) /* overlap_param_gather: a bucket of the updated parameters \
                                                      is gathered (comm -> the first forward) */

typedef enum {
#define ZP_CH_ENUM(id, name, part) ZP_CH_##id,
    ZP_CHANNELS(ZP_CH_ENUM)
#undef ZP_CH_ENUM
    ZP_NCHANNELS
} zp_channel;

/* Memory categories of alloc ops, of the memory replay (sim/zp_memory.h) and of the executor's tracking
 * allocator. The device total is every category but HOST and NVME. */
typedef enum {
    ZP_MEM_PARAMS = 0,   /* parameters this rank holds (all, or its stage-3 shard) */
    ZP_MEM_GRADS,        /* gradients it keeps (all, or its stage-2/3 shard) */
    ZP_MEM_OPTIMIZER,    /* optimizer states on the device */
    ZP_MEM_ACTIVATIONS,  /* working activations, logits, backward working tensors */
    ZP_MEM_CHECKPOINTS,  /* activation checkpoints kept on the device */
    ZP_MEM_BUFFERS,      /* communication buffers, gradient buckets, stage-3 gathered parameters */
    ZP_MEM_FRAGMENTATION,/* what fragmentation makes unusable without ZeRO-R MD (ZeRO §6.3) */
    ZP_MEM_HOST,         /* host memory: offloaded states, Pa+cpu checkpoints; not on the device */
    ZP_MEM_NVME,         /* the node's NVMe drives: ZeRO-Infinity's offloaded states; not on the device */
    ZP_MEM_NCAT
} zp_mem_cat;

/* Buffers that alloc and free ops name (index = the op's `item`: a block, or a parameter group for
 * GATHERED). DeepSpeed's memory as the planner models it uses the first group; zplan's executor the
 * second, one per tensor it holds. `per` sizes the executor's table of slots. */
typedef enum { ZP_PER_ONE, ZP_PER_LAYER, ZP_PER_LAYER1, ZP_PER_ITEM } zp_buf_per;
#define ZP_BUFFERS(X)                                                                                       \
    /* the planner's DeepSpeed/Megatron model */                                                          \
    X(MODEL_PARAMS, "params", ZP_PER_ONE) X(PERSISTENT, "persistent_params", ZP_PER_ONE)                     \
    X(MODEL_GRADS, "grads", ZP_PER_ONE) X(OPT_STATES, "optimizer_states", ZP_PER_ONE)                        \
    X(HOST_GRADS, "host_fp32_grads", ZP_PER_ONE) X(FUSED, "fused_buffers", ZP_PER_ONE)                       \
    X(GATHER_POOL, "stage3_gathered", ZP_PER_ONE) X(CKPT, "checkpoint", ZP_PER_LAYER)                        \
    X(BLOCK_WORK, "block_working_set", ZP_PER_ONE) X(BLOCK_ACTS, "block_activations", ZP_PER_LAYER)          \
    X(FRAG, "fragmentation", ZP_PER_ONE) X(NVME_OPT, "nvme_optimizer_states", ZP_PER_ONE)                     \
    X(NVME_PARAMS, "nvme_params", ZP_PER_ONE) X(FP8_WEIGHTS, "fp8_weights", ZP_PER_ONE)                     \
    X(EP_COMM, "moe_dispatch_buffers", ZP_PER_ONE)                                                          \
    /* zplan's executor (exec/), one per tensor */                                                         \
    X(PARAMS, "params_flat", ZP_PER_ONE) X(PSHARD, "params_shard", ZP_PER_ONE)                               \
    X(GRADS, "grads_flat", ZP_PER_ONE) X(GSHARD, "grads_shard", ZP_PER_ONE) X(GWORK, "grad_bucket", ZP_PER_ONE) \
    X(OPT_M, "adam_m", ZP_PER_ONE) X(OPT_V, "adam_v", ZP_PER_ONE) X(H_MASTER, "host_master", ZP_PER_ONE)     \
    X(H_GRAD, "host_grads", ZP_PER_ONE) X(H_HALF, "host_fp16", ZP_PER_ONE) X(TMP, "piece", ZP_PER_ONE)       \
    X(GBUF, "gathered_bucket", ZP_PER_ONE) X(GATHERED, "gathered_group", ZP_PER_ITEM)                        \
    X(LN1, "ln1", ZP_PER_LAYER) X(LN1_MEAN, "ln1_mean", ZP_PER_LAYER) X(LN1_RSTD, "ln1_rstd", ZP_PER_LAYER)  \
    X(QKV, "qkv", ZP_PER_LAYER) X(ATT, "att", ZP_PER_LAYER) X(ATTY, "atty", ZP_PER_LAYER)                    \
    X(X1, "x1", ZP_PER_LAYER) X(LN2, "ln2", ZP_PER_LAYER) X(LN2_MEAN, "ln2_mean", ZP_PER_LAYER)              \
    X(LN2_RSTD, "ln2_rstd", ZP_PER_LAYER) X(FCH, "fch", ZP_PER_LAYER) X(FCHG, "fchg", ZP_PER_LAYER)          \
    X(RESID, "residual", ZP_PER_ONE) X(CK_REGION, "checkpoint_region", ZP_PER_ONE)                           \
    X(CK, "checkpoint_block", ZP_PER_LAYER) X(XIN_WORK, "pa_gathered", ZP_PER_ONE)                           \
    X(RES, "block_input", ZP_PER_LAYER1) X(PROJ, "proj", ZP_PER_ONE) X(LNF, "lnf", ZP_PER_ONE)               \
    X(LNF_MEAN, "lnf_mean", ZP_PER_ONE) X(LNF_RSTD, "lnf_rstd", ZP_PER_ONE) X(LOGITS, "logits", ZP_PER_ONE)  \
    X(XMX, "xent_max", ZP_PER_ONE) X(XSE, "xent_sumexp", ZP_PER_ONE) X(XLT, "xent_target", ZP_PER_ONE)       \
    X(DRES, "d_residual", ZP_PER_ONE) X(DLN, "d_ln", ZP_PER_ONE) X(DQKV, "d_qkv", ZP_PER_ONE)                \
    X(DATTY, "d_atty", ZP_PER_ONE) X(DATT, "d_att", ZP_PER_ONE) X(DFCH, "d_fch", ZP_PER_ONE)               \
    X(DGLU, "d_glu", ZP_PER_ONE)                                                                             \
    /* the executor's routed experts (a flat layout of their own, sharded over the EDP group) */           \
    X(XPARAMS, "expert_params_flat", ZP_PER_ONE) X(XPSHARD, "expert_params_shard", ZP_PER_ONE)               \
    X(XGRADS, "expert_grads_flat", ZP_PER_ONE) X(XGSHARD, "expert_grads_shard", ZP_PER_ONE)                  \
    X(XGWORK, "expert_grad_bucket", ZP_PER_ONE) X(XOPT_M, "expert_adam_m", ZP_PER_ONE)                       \
    X(XOPT_V, "expert_adam_v", ZP_PER_ONE) X(XGATHERED, "expert_gathered_group", ZP_PER_ITEM)                \
    /* a mixture-of-experts MLP's activations: kept per block, and one working copy */                    \
    X(RPROB, "router_probs", ZP_PER_LAYER) X(GATE, "router_gates", ZP_PER_LAYER)                             \
    X(XD, "moe_dispatched", ZP_PER_LAYER) X(EH, "expert_h", ZP_PER_LAYER) X(EA, "expert_act", ZP_PER_LAYER)   \
    X(RB, "moe_returned", ZP_PER_LAYER) X(MSEND, "moe_send", ZP_PER_ONE) X(MROWS, "moe_rows", ZP_PER_ONE)      \
    X(DEA, "d_expert_act", ZP_PER_ONE) X(DEH, "d_expert_h", ZP_PER_ONE) X(DGATE, "d_gates", ZP_PER_ONE)       \
    X(DRLOG, "d_router", ZP_PER_ONE)                                                                        \
    /* the executor's context parallelism (all-gather form): this rank's K and V rows, every CP rank's    \
     * gathered, and their gradients before the reduce-scatter hands each rank its rows back */          \
    X(CP_KV, "cp_kv_slice", ZP_PER_ONE) X(CP_KV_ALL, "cp_kv_gathered", ZP_PER_ONE)                          \
    X(CP_DKV_ALL, "cp_dkv_gathered", ZP_PER_ONE)                                                             \
    /* ... and its ring form: the K and V chunk in flight beside the one in hand, and their gradients' pair */ \
    X(CP_KV_NEXT, "cp_kv_in_flight", ZP_PER_ONE) X(CP_DKV, "cp_dkv_slice", ZP_PER_ONE)                        \
    X(CP_DKV_NEXT, "cp_dkv_in_flight", ZP_PER_ONE)

typedef enum {
#define ZP_BUF_ENUM(id, name, per) ZP_BUF_##id,
    ZP_BUFFERS(ZP_BUF_ENUM)
#undef ZP_BUF_ENUM
    ZP_NBUF
} zp_buf;

/* One operation of a schedule. */
typedef struct {
    int type;                  /* zp_opk (below) */
    zp_stream stream;
    zp_phase phase;
    int id;                    /* position in the step's program order (zp_schedule_walk), from 0 */
    int layer;                 /* block index, -1: embedding / LM head / whole model */
    int micro;                 /* micro-batch index */
    int item;                  /* parameter group of a stage-3 gather (0 the embedding, 1..L the blocks,
                                  L+1 the tied embedding again as the LM head); alloc/free: the buffer's
                                  index (a block, a group); -1 otherwise */
    double m, n, k;            /* GEMM C(m, n) = A(m, k) . B(k, n) per batch entry */
    double batch;              /* batched GEMM count (1 for a plain GEMM) */
    double flops;              /* FLOPs of a compute op (2 per multiply-add) */
    double elems;              /* element-wise: elements of the tensor the kernel walks (tokens x hidden,
                                  tokens x ffn, heads x seq x seq, tokens x vocabulary), per MP rank */
    int flash;                 /* 0, or 1 + the zp_flash_kernel_id whose FlashAttention the op is costed as
                                  part of (the plan runs it; zp_op_info.flash) */
    int nowait;                /* a pipeline send its stream does not wait for (overlap_p2p_comm: the
                                  transfer runs beside the next pass); 0 otherwise */
    double bytes;              /* element-wise: bytes moved; collective: buffer bytes per rank (nccl-tests
                                  size); copy: bytes; Adam: parameters updated; alloc/free: bytes */
    zp_channel channel;        /* signal / wait */
    zp_mem_cat cat;            /* alloc / free */
    zp_buf buf;                /* alloc / free */
} zp_op;

/* What a compute op costs, seconds, on a device profile; `gpus_per_cpu`: GPUs of a node whose CPU work
 * shares the node's CPU (ZeRO-Offload's Adam). Defined in sim/zp_device.c. */
struct zp_op_info;
typedef double (*zp_cost_fn)(const zp_profile *p, const zp_op *op, const struct zp_op_info *info, int gpus_per_cpu);
double zp_cost_gemm(const zp_profile *p, const zp_op *op, const struct zp_op_info *info, int gpus_per_cpu);
double zp_cost_bgemm(const zp_profile *p, const zp_op *op, const struct zp_op_info *info, int gpus_per_cpu);
double zp_cost_eltwise(const zp_profile *p, const zp_op *op, const struct zp_op_info *info, int gpus_per_cpu);
double zp_cost_adam(const zp_profile *p, const zp_op *op, const struct zp_op_info *info, int gpus_per_cpu);
double zp_cost_scaler_check(const zp_profile *p, const zp_op *op, const struct zp_op_info *info, int gpus_per_cpu);
double zp_cost_cpu_adam(const zp_profile *p, const zp_op *op, const struct zp_op_info *info, int gpus_per_cpu);
double zp_cost_nvme(const zp_profile *p, const zp_op *op, const struct zp_op_info *info, int gpus_per_cpu);

typedef struct zp_op_info {
    const char *name;
    zp_opc cls;
    zp_stream stream;
    zp_part part;
    zp_cost_fn cost;
    zp_profile_kernel kern[2];
    int nkern;
    double eltbytes;           /* element-wise: bytes the op's kernels move per element of op->elems, in
                                  16-bit activations (Megatron-LM's kernels, sim/zp_ops.def); 0: the
                                  builder's op->bytes */
    int launches;              /* kernels the op launches (0 counts as 1): each pays the device's launch and
                                  at least its host dispatch (zp_profile_device) */
    double eltbytes_unfused;   /* ... with Megatron-LM 2019's unfused kernels (a device model with
                                  unfused_kernels: the ZeRO paper's stack); 0: as fused */
    int launches_unfused;      /* ... and its launches; 0: as fused */
    double eltbytes_eager;     /* ... as PyTorch eager runs the op (torch.compile off, zp_plan.eager: each
                                  torch op its own kernel and HBM round trip), bytes per element of
                                  op->elems in 16-bit activations; 0: as fused (the same kernels either way) */
    int launches_eager;        /* ... and its kernels; 0: as fused */
    double dropbytes;          /* of eltbytes, the bytes per element its dropout moves (the mask, and the
                                  dropped copy where dropout is a kernel of its own): gone when the model
                                  has no dropout of the kind `dropout` names */
    unsigned dropout;          /* which dropout (ZP_DROPOUT_NO_HIDDEN or ZP_DROPOUT_NO_ATTN, zp_model.h) */
    zp_flash flash;            /* its part of FlashAttention's fused kernels */
    zp_bias bias;
    zp_fp8_op fp8;             /* a linear layer's GEMM that an FP8 recipe runs in FP8 */
    int warm;                  /* a collective of the activations the op before just wrote, recurring every few
                                  kernels (tensor parallelism's): priced from a profile's hot points (buffers in
                                  cache) where it has them; the others from its cold ones */
    unsigned cold;             /* a GEMM's operands the step last touched long before (zp_cold bits; 0: B and
                                  C): what a profile's gemm_cold_gbs prices on top of its hot loops */
    zp_coll_kind coll;
    zp_group group;
    int writes_new;            /* a collective whose output is a new buffer: over one rank it still costs a
                                  local copy (a reduce-scatter's input to its partition, a stage-3 group
                                  gathered from the shard) */
    zp_copy_dir dir;
    zp_p2p_kind p2p;
    zp_ub ub;                  /* a TP overlap transfer: how it is priced (zp_ub) */
    int comm_sms;              /* ... and the SMs it holds while it runs (0: copy engines) */
} zp_op_info;

typedef enum {
#define ZP_OP(id, exec, ...) ZP_OPK_##id,
#include "zp_ops.def"
#undef ZP_OP
    ZP_NOPK
} zp_opk;

extern const zp_op_info zp_op_table[ZP_NOPK];

/* The row of an op kind (NULL outside the table). */
const zp_op_info *zp_op_info_get(int type);
/* The op kind named `name` (output names, e.g. in a schedule file), -1 when unknown. */
int zp_op_find(const char *name);
const char *zp_op_name(const zp_op *op);
/* "compute", "collective", "copy", "alloc", "free", "signal", "wait", "p2p". */
const char *zp_opc_name(zp_opc c);
const char *zp_stream_name(zp_stream s);
const char *zp_phase_name(zp_phase p);        /* "forward", ..., "setup" */
const char *zp_part_name(zp_part p);          /* "compute", "mp_comm", "dp_comm", "optimizer", "offload",
                                                 "pp_comm", "none" */
const char *zp_channel_name(zp_channel c);
const char *zp_group_name(zp_group g);        /* "mp", "dp", "ep", "edp" */
zp_part zp_channel_part(zp_channel c);        /* the part a compute-stream wait on it counts in */
const char *zp_mem_cat_name(zp_mem_cat c);    /* "params", ..., "fragmentation", "host", "nvme" */
const char *zp_buf_name(zp_buf b);
zp_buf_per zp_buf_per_of(zp_buf b);
/* The part an op's time counts in: its kind's, or for a wait its channel's. */
zp_part zp_op_part(const zp_op *op);

#endif
