/* zp_schedule.h — one training step as a schedule: for one rank, an ordered list of operations on
 * named streams, with the dependencies the ZeRO stage implies expressed as counting channels
 * (signal adds a token, wait takes one, like CUDA events recorded and waited in order).
 *
 * Two interpreters read it: the simulator (sim/zp_engine.c: costs on a SimGrid platform) and the
 * executor (exec/: real kernels under MPI). Every rank of a plan runs the same schedule (ranks are
 * symmetric); shard offsets are the executor's business.
 *
 * Streams: compute (the GPU's compute stream, which also runs the blocking Megatron MP collectives),
 * comm (the ZeRO-DP collectives: gradient buckets, stage-3 parameter gathers, the stage-1/2
 * parameter all-gather), pcie (host<->device copies), cpu (the host's CPU Adam with offload). */
#ifndef ZP_SCHEDULE_H
#define ZP_SCHEDULE_H

#include "zp_coll.h"
#include "zp_model.h"
#include "zp_plan.h"

typedef enum { ZP_STREAM_COMPUTE = 0, ZP_STREAM_COMM, ZP_STREAM_PCIE, ZP_STREAM_CPU, ZP_NSTREAMS } zp_stream;

typedef enum {
    ZP_OP_COMPUTE,  /* a kernel on the device: GEMM, batched GEMM, element-wise, Adam */
    ZP_OP_COLL,     /* a collective on a group */
    ZP_OP_COPY,     /* host<->device copy over PCIe */
    ZP_OP_CPU,      /* work on the host CPU (Adam with offload) */
    ZP_OP_SIGNAL,   /* add a token to a channel */
    ZP_OP_WAIT,     /* take a token from a channel (block until one is there) */
} zp_op_kind;

typedef enum { ZP_CK_GEMM, ZP_CK_BGEMM, ZP_CK_ELEMENTWISE, ZP_CK_ADAM } zp_compute_kind;
typedef enum { ZP_GROUP_MP, ZP_GROUP_DP } zp_group;
typedef enum { ZP_COPY_D2H, ZP_COPY_H2D } zp_copy_dir;

/* What an operation is for: the step-time breakdown and the trace group by it. */
typedef enum {
    ZP_PHASE_FORWARD,
    ZP_PHASE_RECOMPUTE,
    ZP_PHASE_BACKWARD,
    ZP_PHASE_OPTIMIZER,
    ZP_NPHASES
} zp_phase;

/* Channels (counting semaphores per rank). */
typedef enum {
    ZP_CH_GATHERED,      /* stage 3: a block's parameters are gathered (comm -> compute) */
    ZP_CH_GATHER_GO,     /* stage 3: compute started the previous block: prefetch the next (compute -> comm) */
    ZP_CH_CKPT_OUT,      /* Pa+cpu: a checkpoint partition is ready to go to the host (compute -> pcie) */
    ZP_CH_CKPT_IN_GO,    /* Pa+cpu: backward reached the block above: fetch the checkpoint (compute -> pcie) */
    ZP_CH_CKPT_IN,       /* Pa+cpu: the checkpoint partition is back (pcie -> compute) */
    ZP_CH_BUCKET,        /* a gradient bucket is complete (compute -> comm) */
    ZP_CH_REDUCED,       /* a bucket has been reduced (comm -> compute at the end of backward) */
    ZP_CH_GRAD_HOST,     /* offload: a reduced bucket is on the host (pcie -> cpu) */
    ZP_CH_BUCKET_D2H,    /* offload: copy a reduced bucket's partition to the host (comm -> pcie) */
    ZP_CH_OPT_DONE,      /* offload: the CPU Adam finished (cpu -> pcie) */
    ZP_CH_PARAMS_BACK,   /* offload: updated fp16 parameters are back on the device (pcie -> comm/compute) */
    ZP_CH_UPDATED,       /* the optimizer step is done on the device (compute -> comm) */
    ZP_NCHANNELS
} zp_channel;

typedef struct {
    zp_op_kind kind;
    zp_stream stream;
    zp_phase phase;
    int layer;                 /* block index, -1: embedding / LM head / whole model */
    int micro;                 /* micro-batch index */
    const char *name;          /* static label: "qkv", "attn_scores", "mp_allreduce", "grad_bucket", ... */
    zp_compute_kind ckind;
    double m, n, k;            /* GEMM C(m, n) = A(m, k) . B(k, n) per batch entry */
    double batch;              /* batched GEMM count (1 for a plain GEMM) */
    double flops;              /* FLOPs of a compute op (2 per multiply-add) */
    double elems;              /* element-wise: elements of the tensor the kernel walks (tokens x hidden,
                                  tokens x ffn, heads x seq x seq, tokens x vocabulary), per MP rank */
    double bytes;              /* element-wise: bytes moved; collective: buffer bytes per rank (nccl-tests
                                  size); copy: bytes; Adam: parameters updated */
    zp_coll_kind coll;
    zp_group group;
    zp_copy_dir dir;
    zp_channel channel;        /* signal / wait */
    int item;                  /* param_allgather: the parameter group it gathers (0 the embedding, 1..L the
                                  blocks, L+1 the tied embedding again as the LM head); -1 for other ops */
} zp_op;

typedef struct {
    zp_op *ops;
    int n, cap;
    int buckets_per_micro;     /* gradient buckets per micro-batch */
    double bucket_params;      /* parameters per bucket (last one may be smaller) */
    double flops;              /* executed FLOPs of the step on this rank (sum of compute ops' flops) */
} zp_schedule;

/* Builds the step of `plan` for one rank. */
zp_status zp_schedule_build(const zp_model *model, const zp_plan *plan, zp_schedule *out);
/* The same with the exact parameter counts of one MP rank's groups, as an implementation lays them
 * out (the executor: Megatron replicates LayerNorms, row-parallel biases and position embeddings on
 * every MP rank, so its groups are not exactly the model's / mp): items[0] the embedding group with
 * the final LayerNorm, items[1..L] the blocks, items[L+1] what the LM head gathers. Gradient buckets
 * and gathers then cover exactly these counts. items == NULL: zp_schedule_build. */
zp_status zp_schedule_build_items(const zp_model *model, const zp_plan *plan, const double *items, zp_schedule *out);
void zp_schedule_free(zp_schedule *s); /* accepts NULL */

const char *zp_stream_name(zp_stream s);
const char *zp_phase_name(zp_phase p);
const char *zp_schedule_coll_name(zp_coll_kind c);

#endif
