/* zp_framework.c — the frameworks' table (zp_framework.h). Each limit of a release is a fact of its
 * history, checked in its repository:
 *  megatron-2021: Megatron-LM v2 (April 2021 to early 2022), the release of the SC'21 paper (Narayanan et
 *  al.): no ZeRO (the distributed optimizer came in 2022; ZeRO was DeepSpeed's), no offload or MoE, full
 *  checkpointing or none (--recompute-granularity selective: May 2022), no sequence parallelism (April
 *  2022), the interleaved schedule with more than 2 stages (arguments.py refused PP 2 from March 2021,
 *  commit 182841f7df, until May 2024), gradients all-reduced after the backward (--overlap-grad-reduce:
 *  August 2023), no gradient-accumulation fusion (February 2022), no FlashAttention; with bf16 parameters
 *  it accumulates and all-reduces gradients in fp32 (arguments.py sets accumulate_allreduce_grads_in_fp32).
 *  deepspeed: DeepSpeed's engine with its pipeline engine (deepspeed.pipe: PipelineModule, whose
 *  TrainSchedule is 1F1B, no interleaving) and its activation checkpointing (deepspeed.checkpointing: whole
 *  blocks; partition_activations is Pa, cpu_checkpointing Pa+cpu): ZeRO 0-3 (with a pipeline 0-1, as every
 *  plan), offload, MoE (deepspeed.moe), no Megatron-LM sequence parallelism, no selective recompute, no
 *  fused accumulation.
 *  TP communication overlap (--tp-comm-overlap): Megatron-core with Transformer Engine's userbuffers (2023 on,
 *  sequence parallelism required) in "any"; neither Megatron-LM v2 nor DeepSpeed (no sequence parallelism)
 *  has it; nor Megatron-core's --overlap-param-gather (2023), whose distributed optimizer neither has.
 *  Sharded data parallelism beside pipelines (pp_max_stage): DeepSpeed's PipelineEngine.__init__ asserts
 * `self.zero_optimization_stage() < ZeroStageEnum.gradients, "ZeRO-2 and ZeRO-3 are incompatible with
 * pipeline parallelism"` (deepspeed/runtime/pipe/engine.py); Megatron-LM v2 has no ZeRO; torchtitan runs FSDP2
 * (ZeRO-3, or ZeRO-2 with reshard_after_forward False) beside torch.distributed.pipelining, and so "any"
 * admits stages 2 and 3 with pipeline stages (what they do to the step: sim/zp_schedule.c). */
#include "zp_framework.h"
#include "zp_plan.h"

#include <stddef.h>
#include <strings.h>

static const zp_framework g_frameworks[ZP_NFRAMEWORKS] = {
    [ZP_FRAMEWORK_ANY] = {.name = "any",
                          .what = "every option zplan models (Megatron-core and DeepSpeed today)",
                          .max_stage = 3, .offload = 1, .pa_cpu = 1, .moe = 1, .selective = 1, .sp = 1,
                          .interleave_min_pp = 2, .overlap = 1, .fusion = 1, .flash = 1, .pp_max_stage = 3,
                          .fsdp_reshard = 1, .tp_overlap = ZP_TP_OVERLAP_TE, .param_gather = 1},
    [ZP_FRAMEWORK_MEGATRON_2021] = {.name = "megatron-2021",
                                    .what = "Megatron-LM v2 (2021, the SC'21 paper's)",
                                    .max_stage = 0, .offload = 0, .pa_cpu = 0, .moe = 0, .selective = 0, .sp = 0,
                                    .interleave_min_pp = 3, .overlap = 0, .fusion = 0, .flash = 0,
                                    .bf16_fp32_grads = 1, .pp_max_stage = 0},
    [ZP_FRAMEWORK_DEEPSPEED] = {.name = "deepspeed",
                                .what = "DeepSpeed with its pipeline engine (deepspeed.pipe)",
                                .max_stage = 3, .offload = 1, .pa_cpu = 1, .moe = 1, .selective = 0, .sp = 0,
                                .interleave_min_pp = 0, .overlap = 1, .fusion = 0, .flash = 1, .pp_max_stage = 1,
                                .pp_stage_why = "ZeRO-2 and ZeRO-3 are incompatible with pipeline parallelism"},
};

const zp_framework *zp_framework_get(int id)
{
    return id >= 0 && id < ZP_NFRAMEWORKS ? &g_frameworks[id] : NULL;
}

zp_status zp_framework_parse(const char *text, int *id)
{
    for (int i = 0; i < ZP_NFRAMEWORKS; i++)
        if (strcasecmp(text, g_frameworks[i].name) == 0) {
            *id = i;
            return ZP_OK;
        }
    return ZP_FAIL(ZP_EINVAL, "--framework: unknown framework '%s' (use any, megatron-2021 or deepspeed)", text);
}
