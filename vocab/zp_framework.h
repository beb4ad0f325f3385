/* zp_framework.h — what a training framework (a release of it) can run, as a strategy table
 * (--framework): the search offers only those plans, and a plan option the framework does not have is
 * refused. Row 0, "any", is every option zplan models: the search as it is without --framework. */
#ifndef ZP_FRAMEWORK_H
#define ZP_FRAMEWORK_H

#include "zp_status.h"

typedef struct {
    const char *name;      /* --framework value */
    const char *what;      /* the release, for --help and messages */
    int max_stage;         /* the highest ZeRO stage it runs (0: plain data parallelism only) */
    int offload;           /* ZeRO-Offload / ZeRO-Infinity (--offload) */
    int pa_cpu;            /* checkpoints in host memory (--pa-cpu) */
    int moe;               /* mixture-of-experts layers */
    int deepep;            /* Megatron-core's token dispatchers beside the all-to-all (--moe-dispatcher deepep,
                              deepep-fp8, allgather) */
    int ep_overlap;        /* the EP all-to-alls beside another micro-batch (--overlap-moe-expert-parallel-comm) */
    int shared_overlap;    /* the shared experts beside the all-to-alls (--moe-shared-expert-overlap) */
    int selective;         /* selective recompute (--recompute selective) */
    int sp;                /* Megatron-LM's sequence parallelism (--sp) */
    int interleave_min_pp; /* the interleaved 1F1B schedule from this many pipeline stages; 0: none */
    int overlap;           /* gradient reduction beside the backward (--overlap-comm) */
    int fusion;            /* accumulation inside the weight-gradient GEMM (--grad-accum-fusion) */
    int flash;             /* FlashAttention (--flash-attention) */
    int bf16_fp32_grads;   /* bf16 parameters get fp32 gradients, accumulated and reduced in fp32 */
    int param_gather;      /* the parameter all-gather beside the next forward (--overlap-param-gather) */
    int p2p_overlap;       /* the interleaved schedule's steady-state pipeline sends beside the next pass
                              (--overlap-p2p-comm: Megatron-LM's overlap_p2p_comm, on by default) */
    int swiglu_fusion;     /* a SwiGLU as one fused kernel keeping only its input for backward (Megatron-core's
                              bias_swiglu_impl: --swiglu-fusion, Megatron-LM's --no-bias-swiglu-fusion) */
    int tp_overlap;        /* its form of TP communication overlapped with the GEMMs (a zp_tp_overlap, off by
                              default in every release: --tp-comm-overlap); 0: none */
    int pp_max_stage;      /* the highest ZeRO stage it runs beside pipeline stages (--pp > 1) */
    int pp_acc;            /* the embedding and the loss counted as a layer each in an interleaved split that
                              does not divide (zp_plan.pp_acc: Megatron-core's --account-for-*-in-pipeline-split) */
    const char *pp_stage_why; /* why not higher, quoted from its source (NULL: no limit of its own) */
    int fsdp_reshard;      /* FSDP2's reshard_after_forward choice (--reshard-after-forward never/always) */
    /* the releases of 2020-2022 (deepspeed-2020, megatron-deepspeed-2022): what their code costs */
    int fp16_only;         /* no bf16 (fp16 with dynamic loss scaling; --precision bf16 refused) */
    int serial_scaler;     /* the fp16 loss scaler's overflow check and the gradient norm run tensor by tensor,
                              each tensor ending in a host sync (zp_plan.serial_scaler) */
    int no_pipeline;       /* no pipeline engine (--pp > 1 refused, never searched) */
    int overlap_off_default; /* gradient reductions on the compute stream unless --overlap-comm is given (the
                                release's default overlap_comm false) */
    int interleave_all_warmup; /* its interleaved schedule runs every forward, then every backward, when the
                                  micro-batches are exactly the pipeline stages (zp_plan.interleave_all_warmup) */
} zp_framework;

typedef enum {
    ZP_FRAMEWORK_ANY = 0,
    ZP_FRAMEWORK_MEGATRON_2021,
    ZP_FRAMEWORK_DEEPSPEED,
    ZP_FRAMEWORK_DEEPSPEED_2020,
    ZP_FRAMEWORK_MEGATRON_DEEPSPEED_2022,
    ZP_NFRAMEWORKS
} zp_framework_id;

/* The row of an id (NULL outside the table). */
const zp_framework *zp_framework_get(int id);
/* The id named `text` (any case); else ZP_EINVAL naming the choices. */
zp_status zp_framework_parse(const char *text, int *id);

#endif
