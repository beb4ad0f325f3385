/* zp_framework.c — the frameworks' table (zp_framework.h). Each limit of a release is a fact of its
 * history, checked in its repository:
 *  megatron-2021: Megatron-LM v2 (April 2021 to early 2022), the release of the SC'21 paper (Narayanan et
 *  al.): no ZeRO (the distributed optimizer came in 2022; ZeRO was DeepSpeed's), no offload or MoE, full
 *  checkpointing or none (--recompute-granularity selective: May 2022), no sequence parallelism (April
 *  2022), the interleaved schedule with more than 2 stages (arguments.py refused PP 2 from March 2021,
 *  commit 182841f7df, until May 2024), gradients all-reduced after the backward (--overlap-grad-reduce:
 *  August 2023), no gradient-accumulation fusion (February 2022), no FlashAttention; with bf16 parameters
 *  it accumulates and all-reduces gradients in fp32 (arguments.py sets accumulate_allreduce_grads_in_fp32);
 *  its interleaved schedule runs every forward, then every backward, on every stage when the micro-batches
 *  are exactly the stages (schedules.py, forward_backward_pipelining_with_interleaving: `if
 *  get_num_microbatches() == pipeline_parallel_size: ... all_warmup_microbatches = True`).
 *  deepspeed: DeepSpeed's engine with its pipeline engine (deepspeed.pipe: PipelineModule, whose
 *  TrainSchedule is 1F1B, no interleaving) and its activation checkpointing (deepspeed.checkpointing: whole
 *  blocks; partition_activations is Pa, cpu_checkpointing Pa+cpu): ZeRO 0-3 (with a pipeline 0-1, as every
 *  plan), offload, MoE (deepspeed.moe), no Megatron-LM sequence parallelism, no selective recompute, no
 *  fused accumulation.
 *  The embedding and the loss counted as layers in the pipeline split (pp_acc): Megatron-core's
 *  --account-for-embedding-in-pipeline-split / --account-for-loss-in-pipeline-split (merge request !1961,
 *  commit ef490839e8, February 2025) in "any"; no older release has them (Megatron-LM v2 and Megatron-DeepSpeed
 *  split the layers evenly, DeepSpeed's PipelineModule by its own partition_method).
 *  TP communication overlap (--tp-comm-overlap): Megatron-core with Transformer Engine's userbuffers (2023 on,
 *  sequence parallelism required) in "any"; neither Megatron-LM v2 nor DeepSpeed (no sequence parallelism)
 *  has it; nor Megatron-core's --overlap-param-gather (2023), whose distributed optimizer neither has.
 *  The interleaved schedule's pipeline sends beside the next pass (p2p_overlap): Megatron-LM's
 *  overlap_p2p_comm, on unless --no-overlap-p2p-communication, in "any"; Megatron-LM v2 waits for every
 *  batched send and receive and then the whole device (p2p_communication.py: req.wait(), then
 *  torch.cuda.synchronize() "to protect against race condition when using batch_isend_irecv()").
 *  A SwiGLU fused (swiglu_fusion): Megatron-core's MLP calls bias_swiglu_impl when bias_activation_fusion, which
 *  Megatron-LM sets from --bias-swiglu-fusion (on unless --no-bias-swiglu-fusion; NeMo's
 *  model.bias_activation_fusion); its SwiGLUFunction saves only its input (fused_bias_swiglu.py:
 *  ctx.save_for_backward(input)), in "any". Megatron-DeepSpeed's swiglu is F.silu(x[0]) * x[1] in eager PyTorch
 *  (megatron/model/transformer.py), which keeps the SiLU's output too; Megatron-LM v2 and the 2020 and 2022
 *  releases have no SwiGLU (GeLU), so a gated model stated on them is counted as eager PyTorch runs it.
 *  Sharded data parallelism beside pipelines (pp_max_stage): DeepSpeed's PipelineEngine.__init__ asserts
 * `self.zero_optimization_stage() < ZeroStageEnum.gradients, "ZeRO-2 and ZeRO-3 are incompatible with
 * pipeline parallelism"` (deepspeed/runtime/pipe/engine.py); Megatron-LM v2 has no ZeRO; torchtitan runs FSDP2
 * (ZeRO-3, or ZeRO-2 with reshard_after_forward False) beside torch.distributed.pipelining, and so "any"
 * admits stages 2 and 3 with pipeline stages (what they do to the step: sim/zp_schedule.c).
 *  deepspeed-2020: the ZeRO paper's DeepSpeed, v0.2.0 (tag v0.2.0, commit 96c4daab, June 2020; the paper's
 *  runs of spring 2020), with Megatron-LM 2019's model code (commit f86bb671, December 2019): ZeRO stages 0-2
 *  (deepspeed/pt/zero_optimizer_stage1.py, deepspeed_zero_optimizer.py; stage 3 came with ZeRO-Infinity in
 *  2021), no offload (ZeRO-Offload: v0.3.0, September 2020), no pipeline engine (deepspeed.pipe: v0.3.0),
 *  activation checkpointing of whole layers with Pa and Pa+cpu (deepspeed_checkpointing.py:
 *  partition_activations, cpu_checkpointing), fp16 only (deepspeed_config.py reads no bf16 section), no
 *  FlashAttention, no fused accumulation, no MoE. Its fp16 loss scaler checks every gradient tensor for
 *  overflow one at a time, `cpu_sum = float(x.float().sum())` (Megatron-LM 2019 megatron/fp16/loss_scaler.py
 *  DynamicLossScaler._has_inf_or_nan, copied in DeepSpeed's deepspeed_utils.py CheckOverflow and
 *  deepspeed_zero_optimizer.py), then all-reduces the flag; the gradient norm likewise per tensor
 *  (`param_norm.item()`): serial_scaler. Its ZeRO reductions ran on the compute stream unless the config
 *  asked otherwise (deepspeed_zero_config.py: ZERO_OPTIMIZATION_OVERLAP_COMM_DEFAULT = False; average_tensor
 *  takes torch.cuda.current_stream() then): overlap_off_default, --overlap-comm restores it. The memory-bound kernels of Megatron-LM 2019 (unfused) are the dgx2
 *  preset's (vocab/zp_cluster.c, unfused_kernels).
 *  megatron-deepspeed-2022: bigscience-workshop/Megatron-DeepSpeed with DeepSpeed 0.6-0.7 (2022, BLOOM-176B;
 *  MT-NLG-530B ran the same engine): the pipeline engine (deepspeed/runtime/pipe/engine.py of May 2022, commit
 *  6719b46b: TrainSchedule is 1F1B, no interleaving; its activations between stages are PartitionedTensors
 *  over the TP group, sent 1/t per rank and all-gathered on arrival, `is_pipe_partitioned =
 *  is_model_parallel`, as Megatron-LM's scatter-gather), ZeRO-1 at most beside it (the same assert as
 *  deepspeed), gradients reduced after the flush (_exec_reduce_grads, not overlapped), the tied embedding's
 *  all-reduce between the first and last stage (_exec_reduce_tied_grads), bf16 with fp32 gradient
 *  accumulation (deepspeed/runtime/bf16_optimizer.py, BF16_Optimizer: fp32_groups_gradients), Megatron's
 *  fused kernels of that year, no FlashAttention, no sequence parallelism, no selective recompute, no offload
 *  beside the pipeline.
 *  The host's side of a step is the same for every row: each runs its blocks as eager PyTorch modules
 *  (Megatron-LM's ColumnParallelLinear / RowParallelLinear and their autograd functions around the TP
 *  all-reduces, DeepSpeed's hooks), so a kernel of a block costs the host the preset's dispatch_block and a
 *  torch.distributed call its coll_dispatch (sim/zp_device.c, zp_device_host_time; measured on an H100 on
 *  2026-11-27). CUDA graphs (Megatron-core's --enable-cuda-graph, 2024 on: a block's kernels from one graph
 *  launch, 0.98 us of GPU time a kernel measured) and torch.compile's host side are no row's default and are
 *  not modelled. */
#include "zp_framework.h"
#include "zp_plan.h"

#include <stddef.h>
#include <strings.h>

static const zp_framework g_frameworks[ZP_NFRAMEWORKS] = {
    [ZP_FRAMEWORK_ANY] = {.name = "any",
                          .what = "every option zplan models (Megatron-core and DeepSpeed today)",
                          .max_stage = 3, .offload = 1, .pa_cpu = 1, .moe = 1, .deepep = 1, .ep_overlap = 1,
                          .shared_overlap = 1, .selective = 1, .sp = 1, .interleave_min_pp = 2, .overlap = 1,
                          .fusion = 1, .flash = 1, .pp_max_stage = 3,
                          .fsdp_reshard = 1, .tp_overlap = ZP_TP_OVERLAP_TE, .param_gather = 1, .pp_acc = 1,
                          .p2p_overlap = 1, .swiglu_fusion = 1},
    [ZP_FRAMEWORK_MEGATRON_2021] = {.name = "megatron-2021",
                                    .what = "Megatron-LM v2 (2021, the SC'21 paper's)",
                                    .max_stage = 0, .offload = 0, .pa_cpu = 0, .moe = 0, .selective = 0, .sp = 0,
                                    .interleave_min_pp = 3, .overlap = 0, .fusion = 0, .flash = 0,
                                    .bf16_fp32_grads = 1, .pp_max_stage = 0, .interleave_all_warmup = 1},
    [ZP_FRAMEWORK_DEEPSPEED] = {.name = "deepspeed",
                                .what = "DeepSpeed with its pipeline engine (deepspeed.pipe)",
                                .max_stage = 3, .offload = 1, .pa_cpu = 1, .moe = 1, .selective = 0, .sp = 0,
                                .interleave_min_pp = 0, .overlap = 1, .fusion = 0, .flash = 1, .pp_max_stage = 1,
                                .pp_stage_why = "ZeRO-2 and ZeRO-3 are incompatible with pipeline parallelism"},
    [ZP_FRAMEWORK_DEEPSPEED_2020] = {.name = "deepspeed-2020",
                                     .what = "DeepSpeed v0.2 with Megatron-LM 2019 (2020, the ZeRO paper's)",
                                     .max_stage = 2, .offload = 0, .pa_cpu = 1, .moe = 0, .selective = 0, .sp = 0,
                                     .interleave_min_pp = 0, .overlap = 1, .fusion = 0, .flash = 0, .pp_max_stage = 0,
                                     .fp16_only = 1, .serial_scaler = 1, .no_pipeline = 1, .overlap_off_default = 1},
    [ZP_FRAMEWORK_MEGATRON_DEEPSPEED_2022] = {.name = "megatron-deepspeed-2022",
                                              .what = "Megatron-DeepSpeed with DeepSpeed's pipeline engine (2022, "
                                                      "BLOOM's)",
                                              .max_stage = 1, .offload = 0, .pa_cpu = 1, .moe = 0, .selective = 0,
                                              .sp = 0, .interleave_min_pp = 0, .overlap = 0, .fusion = 0, .flash = 0,
                                              .bf16_fp32_grads = 1, .pp_max_stage = 1,
                                              .pp_stage_why = "ZeRO-2 and ZeRO-3 are incompatible with pipeline "
                                                              "parallelism"},
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
    return ZP_FAIL(ZP_EINVAL, "--framework: unknown framework '%s' (use any, megatron-2021, deepspeed, deepspeed-2020 or "
                                           "megatron-deepspeed-2022)", text);
}
