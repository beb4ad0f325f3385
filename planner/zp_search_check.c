/* zp_search_check.c — a search request checked before any plan is built (zp_search_validate): each option
 * against the model, the cluster, the framework's release and the other options, with the message that names
 * the fix; and the request's defaults (zp_search_req_default). */
#include "zp_search.h"

#include <stdio.h>
#include <string.h>

#include "zp_device.h"
#include "zp_dispatch.h"
#include "zp_fp8.h"
#include "zp_pipeline.h"
#include "zp_search_int.h"

void zp_search_req_give_recompute(zp_search_req *r, zp_recompute rc)
{
    r->base.checkpoint = rc == ZP_RECOMPUTE_FULL;
    r->base.selective = rc == ZP_RECOMPUTE_SELECTIVE;
    r->base.op_sac = rc == ZP_RECOMPUTE_OP;
    zp_search_req_give(r, ZP_SEARCH_RECOMPUTE);
}

/* The table's context of a request: its GPUs, model and node, the degrees it gives. */
static void dims_ctx(const zp_search_req *r, zp_dim_ctx *c)
{
    zp_dims_ctx_init(c, r->model, r->gpus, r->cluster ? zp_cluster_domain(r->cluster) : 0, r->max_mp);
    for (int d = 0; d < ZP_NDIMS; d++)
        c->deg[d] = zp_search_req_deg(r, d);
}

/* A given degree against its row's checks (zp_dims.h), the other given degrees known. */
static zp_status check_given(const zp_search_req *r, zp_dim_id id)
{
    const zp_dim_type *d = zp_dims_get(id);
    if (!deg_given(r, id) || !d->check)
        return ZP_OK;
    zp_dim_ctx c;
    dims_ctx(r, &c);
    return d->check(&c, r->base.deg[id]);
}

/* The pipeline, sequence-parallel and recompute options against each other, the GPUs and the model. */

/* zp_search_acc_fit: zp_search_int.h */
int zp_search_acc_fit(const zp_search_req *r, const zp_framework *f, int64_t P, int v, int64_t L)
{
    if (!f->pp_acc || zp_pp_uneven(&r->base) || (L + 2) % (P * v) != 0)
        return 0;
    zp_plan q = r->base;
    q.pp = P;
    q.vstages = v;
    q.pp_acc = ZP_PP_ACC_EMBED | ZP_PP_ACC_LOSS;
    return zp_pp_fits(r->model, &q) ? q.pp_acc : 0;
}

/* An uneven layout (--pp-first-layers, --pp-last-layers, --pp-layout) needs the stages given and must fit
 * the model at the chunks given (or those its entries imply: one per virtual stage); an interleaved
 * schedule asked for over layers no chunk count divides says so, naming the layout, not the batch. */
static zp_status validate_layout(const zp_search_req *r)
{
    const zp_plan *b = &r->base;
    const int64_t pp = r->base.pp, L = r->model ? r->model->layers : 0;
    const int pp_given = deg_given(r, ZP_DIM_PP), v_given = given(r, ZP_SEARCH_VSTAGES);
    if (zp_pp_uneven(b) && !pp_given)
        return ZP_FAIL(ZP_EINVAL, "%s: an uneven pipeline layout needs the stages (give --pp P)",
                       b->pp_layout ? "--pp-layout" : b->pp_first > 0 ? "--pp-first-layers" : "--pp-last-layers");
    if (!r->model || !pp_given)
        return ZP_OK;
    zp_plan q = *b;
    q.vstages = v_given ? b->vstages : 1;
    if (zp_pp_uneven(b)) {
        if (!v_given && b->pp_layout && b->pp_layout_n % pp == 0 && b->pp_layout_n > pp &&
            b->pp_layout_n / pp <= ZP_MAX_VSTAGES)
            q.vstages = (int)(b->pp_layout_n / pp); /* one entry per virtual stage */
        return zp_pp_check(r->model, &q);
    }
    const zp_framework *f = zp_framework_get(r->framework);
    if (pp > 1 && given(r, ZP_SEARCH_SCHEDULE) && b->schedule == ZP_PP_INTERLEAVED && !v_given) {
        for (int v = 2; v <= ZP_MAX_VSTAGES; v++)
            if (L % (pp * v) == 0 || (f && zp_search_acc_fit(r, f, pp, v, L)))
                return ZP_OK;
        return ZP_FAIL(ZP_EINVAL, "--schedule interleaved with --pp %lld: no number of model chunks divides the "
                                  "model's %lld layers evenly over the %lld stages (the layout, not the batch: give "
                                  "an uneven layout, --pp-layout or --pp-first-layers / --pp-last-layers, with "
                                  "--virtual-stages v)",
                       (long long)pp, (long long)L, (long long)pp);
    }
    return ZP_OK;
}

static zp_status validate_pipeline(const zp_search_req *r)
{
    const zp_plan *b = &r->base;
    const int64_t pp = b->pp;
    const int pp_given = deg_given(r, ZP_DIM_PP), sc_given = given(r, ZP_SEARCH_SCHEDULE);
    if (pp_given) {
        ZP_TRY(check_given(r, ZP_DIM_PP));
    }
    const int no_pp = !pp_given || pp == 1;
    if (sc_given && no_pp)
        return ZP_FAIL(ZP_EINVAL, "--schedule %s: a pipeline schedule needs pipeline stages (give --pp P >= 2)",
                       zp_pp_schedule_name(b->schedule));
    if (given(r, ZP_SEARCH_VSTAGES)) {
        if (no_pp)
            return ZP_FAIL(ZP_EINVAL, "--virtual-stages %d: model chunks need pipeline stages (give --pp P >= 2; "
                                      "the schedule is then interleaved)",
                           b->vstages);
        if (sc_given && b->schedule != ZP_PP_INTERLEAVED && b->vstages > 1)
            return ZP_FAIL(ZP_EINVAL, "--virtual-stages %d: model chunks are the interleaved schedule's, not %s's",
                           b->vstages, zp_pp_schedule_name(b->schedule));
        if (b->vstages < 1 || b->vstages > ZP_MAX_VSTAGES)
            return ZP_FAIL(ZP_EINVAL, "--virtual-stages: %d is not between 1 and %d", b->vstages, ZP_MAX_VSTAGES);
        if (pp > 1 && r->model) {
            zp_plan q;
            zp_plan_default(&q, 1);
            q.pp = pp;
            q.vstages = b->vstages;
            q.schedule = ZP_PP_INTERLEAVED;
            q.pp_first = r->base.pp_first; /* and the uneven layout given */
            q.pp_last = r->base.pp_last;
            q.pp_layout = r->base.pp_layout;
            q.pp_layout_n = r->base.pp_layout_n;
            const zp_framework *f = zp_framework_get(r->framework);
            const zp_status st = zp_pp_check(r->model, &q);
            if (st != ZP_OK && !(f && zp_search_acc_fit(r, f, pp, b->vstages, r->model->layers)))
                return st;
            zp_error_clear(); /* the split with the embedding and the loss counted fits */
        }
    }
    if (r->exact && sc_given && b->schedule == ZP_PP_INTERLEAVED && !given(r, ZP_SEARCH_VSTAGES))
        return ZP_FAIL(ZP_EINVAL,
                       "--exact --schedule interleaved: give --virtual-stages v (the model chunks per rank)");
    ZP_TRY(validate_layout(r));
    const int sp = given_on(r, ZP_SEARCH_SP, b->sp), pa = given_on(r, ZP_SEARCH_PA, b->pa) ||
                                                         given_on(r, ZP_SEARCH_PA_CPU, b->pa_cpu);
    if (sp && deg_given(r, ZP_DIM_TP) && b->mp == 1)
        return ZP_FAIL(ZP_EINVAL, "--sp shards activations over the MP group: it needs --mp > 1");
    if (sp && pa)
        return ZP_FAIL(ZP_EINVAL, "--sp shards the checkpoints over the MP group already: ZeRO-R --pa/--pa-cpu have "
                                  "nothing left to partition (drop one)");
    const int rc_other = given(r, ZP_SEARCH_RECOMPUTE) && zp_search_req_recompute(r) != ZP_RECOMPUTE_FULL;
    if (rc_other && pa)
        return ZP_FAIL(ZP_EINVAL, "--pa/--pa-cpu partition activation checkpoints: they need --recompute full");
    if (b->ckpt_every > 1 && rc_other)
        return ZP_FAIL(ZP_EINVAL, "--checkpoint-every %d checkpoints one block in %d whole: it needs --recompute "
                                  "full (drop --recompute %s)",
                       b->ckpt_every, b->ckpt_every, zp_recompute_name(zp_search_req_recompute(r)));
    if (b->ckpt_every > 1 && pa)
        return ZP_FAIL(ZP_EINVAL, "--checkpoint-every with --pa/--pa-cpu: ZeRO-R partitions every block's "
                                  "checkpoint (drop one)");
    return ZP_OK;
}

/* --tp-comm-overlap against the other options: it overlaps sequence parallelism's collectives, inside the
 * NVLink domain (Transformer Engine's userbuffers and PyTorch's symmetric memory map the peers' memory). */
static zp_status validate_tp_overlap(const zp_search_req *r)
{
    const zp_plan *b = &r->base;
    if (!given(r, ZP_SEARCH_TP_OVERLAP) || b->tp_overlap == ZP_TP_OVERLAP_OFF)
        return ZP_OK;
    if ((unsigned)b->tp_overlap >= ZP_NTP_OVERLAP)
        return ZP_FAIL(ZP_EINVAL, "--tp-comm-overlap: no overlap %d", b->tp_overlap);
    const char *name = zp_tp_overlap_name((zp_tp_overlap)b->tp_overlap);
    const int sp_given = given(r, ZP_SEARCH_SP);
    if (!(deg_given(r, ZP_DIM_TP) && b->mp == 1) &&
        ((sp_given && b->sp == 0) || (r->exact && !given_on(r, ZP_SEARCH_SP, b->sp))))
        return ZP_FAIL(ZP_EINVAL, "--tp-comm-overlap %s overlaps sequence parallelism's all-gathers and "
                                  "reduce-scatters: give --sp (Megatron-core asserts it), or drop the overlap",
                       name);
    if (deg_given(r, ZP_DIM_TP) && r->cluster && b->mp > r->cluster->gpus_per_node)
        return ZP_FAIL(ZP_EINVAL, "--tp-comm-overlap %s: MP %lld spans nodes of %d GPUs, and the overlapped "
                                  "transfers map the peers' memory over NVLink: use --mp %d or less, or drop the "
                                  "overlap",
                       name, (long long)b->mp, r->cluster->gpus_per_node, r->cluster->gpus_per_node);
    return ZP_OK;
}

/* --overlap-param-gather: the distributed optimizer's (stage 1-2) all-gather beside the next forward, with the
 * gradient reductions beside the backward (Megatron-core requires --overlap-grad-reduce with it). */
static zp_status validate_param_gather(const zp_search_req *r)
{
    if (!r->base.overlap_param_gather)
        return ZP_OK;
    if (given(r, ZP_SEARCH_STAGE) && r->base.stage != 1 && r->base.stage != 2)
        return ZP_FAIL(ZP_EINVAL, "--overlap-param-gather: ZeRO stage %d has no all-gather of the updated "
                                  "parameters to overlap (the distributed optimizer's: --stage 1 or 2)",
                       r->base.stage);
    if (!r->base.overlap_comm)
        return ZP_FAIL(ZP_EINVAL, "--overlap-param-gather needs the gradient reductions overlapped too (drop "
                                  "--no-overlap-comm: Megatron-core requires --overlap-grad-reduce with it)");
    if (given(r, ZP_SEARCH_OFFLOAD) && r->base.offload != ZP_OFFLOAD_NONE)
        return ZP_FAIL(ZP_EINVAL, "--overlap-param-gather with --offload: the parameters come back from the host "
                                  "after the CPU's update, not by an all-gather (drop one)");
    return ZP_OK;
}

/* The option of a plan only Megatron-core ("any") runs among those no framework row has a column for, or
 * NULL. */
static const char *megatron_core_option(const zp_search_req *r)
{
    const zp_plan *b = &r->base;
    return b->rc_modules || r->rc_auto      ? "Megatron-core's --recompute-modules"
           : b->act_fp8_store               ? "Megatron-core's --activation-func-fp8-input-store"
           : zp_plan_moments_saved(b) > 0   ? "Megatron-core's precision-aware optimizer (--adam-moments)"
                                            : NULL;
}

/* Options the framework's release does not have (--framework): refused, naming the option and the release.
 * The search then offers only what it has (shapes_for, schedules_for, zp_search_run). */
static zp_status validate_framework(const zp_search_req *r)
{
    const zp_framework *f = zp_framework_get(r->framework);
    if (!f)
        return ZP_FAIL(ZP_EINVAL, "--framework: no framework %d", r->framework);
    const zp_plan *b = &r->base;
    const int interleaved = (given(r, ZP_SEARCH_SCHEDULE) && b->schedule == ZP_PP_INTERLEAVED) ||
                            (given(r, ZP_SEARCH_VSTAGES) && b->vstages > 1);
    const int stage = given(r, ZP_SEARCH_STAGE) ? b->stage : -1, pp = deg_given(r, ZP_DIM_PP);
    const int rc = given(r, ZP_SEARCH_RECOMPUTE) ? (int)zp_search_req_recompute(r) : -1;
    if (interleaved && f->interleave_min_pp > 0 && pp && b->pp < f->interleave_min_pp)
        return ZP_FAIL(ZP_EINVAL, "--framework %s: %s runs the interleaved schedule with %d or more pipeline stages "
                                  "only (drop --schedule interleaved / --virtual-stages, or give --pp %d or more)",
                       f->name, f->what, f->interleave_min_pp, f->interleave_min_pp);
    if (stage > f->pp_max_stage && stage <= f->max_stage && pp && b->pp > 1)
        return ZP_FAIL(ZP_EINVAL, "--framework %s: --stage %d with --pp %lld: %s allows ZeRO stage %d at most beside "
                                  "pipeline stages (\"%s\"); use --stage %d or --pp 1, or plan for torchtitan's FSDP2 "
                                  "with pipelines: --framework any",
                       f->name, stage, (long long)b->pp, f->what, f->pp_max_stage,
                       f->pp_stage_why ? f->pp_stage_why : "its pipeline engine", f->pp_max_stage);
    const char *no = NULL;
    if (stage > f->max_stage)
        no = f->max_stage == 2 ? "ZeRO stage 3 (--stage)"
             : f->max_stage == 1 ? "ZeRO stages 2-3 (--stage)" : "ZeRO stages 1-3 (--stage)";
    else if (f->no_pipeline && pp && b->pp > 1)
        no = "pipeline stages (--pp; its pipeline engine came later)";
    else if (f->fp16_only && (given_on(r, ZP_SEARCH_BF16, b->bf16) || b->fp8))
        no = "bf16 or fp8 (--precision; fp16 with loss scaling only)";
    else if (given(r, ZP_SEARCH_OFFLOAD) && b->offload != ZP_OFFLOAD_NONE && !f->offload)
        no = "--offload";
    else if (r->base.nvme && !f->offload)
        no = "--offload-device nvme";
    else if (given_on(r, ZP_SEARCH_PA_CPU, b->pa_cpu) && !f->pa_cpu)
        no = "--pa-cpu";
    else if (r->model && r->model->experts > 0 && !f->moe)
        no = "mixture-of-experts layers (the model's)";
    else if (b->dispatcher != ZP_DISPATCH_ALLTOALL && !f->deepep)
        no = b->dispatcher == ZP_DISPATCH_ALLGATHER ? "Megatron-core's all-gather token dispatch (--moe-dispatcher)"
                                                    : "DeepEP's token dispatch (--moe-dispatcher)";
    else if (b->ep_overlap && !f->ep_overlap)
        no = "the EP all-to-alls beside another micro-batch (--overlap-moe-expert-parallel-comm)";
    else if (b->shared_overlap && !f->shared_overlap)
        no = "the shared experts beside the all-to-alls (--moe-shared-expert-overlap)";
    else if (r->framework != ZP_FRAMEWORK_ANY && megatron_core_option(r))
        no = megatron_core_option(r);
    else if (rc == ZP_RECOMPUTE_SELECTIVE && !f->selective)
        no = "--recompute selective";
    else if (given_on(r, ZP_SEARCH_SP, b->sp) && !f->sp)
        no = "--sp (Megatron-LM's sequence parallelism)";
    else if ((rc == ZP_RECOMPUTE_OP || b->ckpt_every > 1) && r->framework != ZP_FRAMEWORK_ANY)
        no = "torchtitan's checkpointing modes (--recompute op, --checkpoint-every)";
    else if (interleaved && f->interleave_min_pp == 0)
        no = "the interleaved schedule";
    else if (r->base.grad_accum_fusion && !f->fusion)
        no = "--grad-accum-fusion";
    else if (r->base.flash_attn && !f->flash)
        no = "FlashAttention (--flash-attention, --flash-kernel)";
    else if (given(r, ZP_SEARCH_TP_OVERLAP) && b->tp_overlap > ZP_TP_OVERLAP_OFF && f->tp_overlap == ZP_TP_OVERLAP_OFF)
        no = "TP communication overlap (--tp-comm-overlap)";
    else if (r->base.overlap_param_gather && !f->param_gather)
        no = "--overlap-param-gather";
    else if (r->base.reshard != ZP_RESHARD_DEFAULT && !f->fsdp_reshard)
        no = "FSDP2's reshard policies (--reshard-after-forward)";
    if (!no)
        return ZP_OK;
    return ZP_FAIL(ZP_EINVAL, "--framework %s: %s does not run %s (drop it, or plan for another framework: "
                              "--framework any)",
                   f->name, f->what, no);
}

/* Hybrid sharding (--shard-group G) against what is given: the stage, and DP when MP and PP are given (the
 * search keeps only the DP degrees G divides otherwise). */
static zp_status validate_shard_group(const zp_search_req *r)
{
    const int64_t g = r->base.shard_group;
    if (g == 0)
        return ZP_OK;
    if (g < 0)
        return ZP_FAIL(ZP_EINVAL, "--shard-group: %lld is not a number of DP ranks (give G >= 1)", (long long)g);
    if (given(r, ZP_SEARCH_STAGE) && r->base.stage < 2)
        return ZP_FAIL(ZP_EINVAL, "--shard-group %lld: hybrid sharding shards gradients and parameters: it needs "
                                  "--stage 2 or 3 (FSDP2 HSDP, MiCS)", (long long)g);
    const int both = deg_given(r, ZP_DIM_TP) && deg_given(r, ZP_DIM_PP);
    const int64_t mp = deg_given(r, ZP_DIM_TP) ? r->base.mp : 1, pp = deg_given(r, ZP_DIM_PP) ? r->base.pp : 1;
    const int64_t dp = r->gpus % (mp * pp) == 0 ? r->gpus / (mp * pp) : 0;
    if (both && dp > 0 && dp % g != 0)
        return ZP_FAIL(ZP_EINVAL, "--shard-group %lld does not divide the data-parallel degree %lld (GPUs / (MP x "
                                  "PP)): give a divisor of %lld, e.g. the GPUs of a node over MP",
                       (long long)g, (long long)dp, (long long)dp);
    if (r->gpus % g != 0)
        return ZP_FAIL(ZP_EINVAL, "--shard-group %lld does not divide the %lld GPUs, so no data-parallel degree: "
                                  "give a divisor of the data-parallel degree", (long long)g, (long long)r->gpus);
    return ZP_OK;
}

/* The FlashAttention kernel against the model's heads: FlashAttention-1 has no kernel for heads over 128. */
static zp_status validate_flash(const zp_search_req *r)
{
    const zp_flash_kernel *k = zp_flash_kernel_get(r->base.flash_kernel);
    if (!k)
        return ZP_FAIL(ZP_EINVAL, "--flash-kernel: no FlashAttention kernel %d", r->base.flash_kernel);
    const int64_t d = r->model ? zp_model_head_dim(r->model) : 0;
    if (r->base.flash_attn && k->max_head_dim > 0 && (double)d > k->max_head_dim)
        return ZP_FAIL(ZP_EINVAL, "--flash-kernel %s: the model's heads are %lld wide and %s has kernels up to %g "
                                  "(use --flash-kernel fa2, or no --flash-attention)",
                       k->name, (long long)d, k->name, k->max_head_dim);
    return ZP_OK;
}

int zp_search_flash_default(const zp_search_req *r)
{
    if (!r->cluster || !(r->cluster->flash_efficiency > 0))
        return 0; /* no FlashAttention-2 kernels for the GPU (V100: sm_70) */
    const zp_framework *f = zp_framework_get(r->framework);
    if (f && r->framework != ZP_FRAMEWORK_ANY && !f->flash)
        return 0; /* the release predates it */
    const zp_flash_kernel *k = zp_flash_kernel_get(r->base.flash_kernel);
    return !(r->model && k && k->max_head_dim > 0 && (double)zp_model_head_dim(r->model) > k->max_head_dim);
}

void zp_search_req_default(zp_search_req *r, const zp_model *model, const zp_cluster *cluster, int64_t gpus)
{
    memset(r, 0, sizeof *r);
    r->model = model;
    r->cluster = cluster;
    r->gpu_mem = cluster ? cluster->gpu_mem : 0.0;
    r->gpus = gpus;
    /* what is not searched starts at the plan's defaults (zp_plan_default, their one place); everything the
     * search decides is open but TP overlap, off unless asked */
    zp_plan_default(&r->base, gpus);
    r->searched = ZP_SEARCH_ALL & ~(uint32_t)ZP_SEARCH_TP_OVERLAP;
    r->checkpoint = r->base.checkpoint;
    r->max_simulated = 64;
    r->reserve = ZP_DEFAULT_RESERVE;
    r->default_batch = 1;
}

static int has_fp8(const zp_cluster *c) { return zp_cluster_has_fp8(c); }
static int has_fp8_mx(const zp_cluster *c) { return c->fp8_mx; }

/* The presets whose GPU has a capability, "a, b, c" into buf (for a message naming where to go). */
static void presets_with(int (*has)(const zp_cluster *), char *buf, size_t len)
{
    buf[0] = '\0';
    for (int i = 0, n = 0; i < zp_cluster_count(); i++)
        if (has(zp_cluster_get(i)))
            n += snprintf(buf + n, n < (int)len ? len - (size_t)n : 0, "%s%s", n ? ", " : "", zp_cluster_get(i)->name);
}

/* FP8 training needs FP8 tensor cores (Hopper on), MXFP8 block-scaled ones (Blackwell): the presets whose GPU
 * has them, for the message. */
static zp_status check_fp8(const zp_search_req *r)
{
    if (r->base.fp8 == ZP_FP8_NONE)
        return ZP_OK;
    const zp_fp8_info *f8 = zp_fp8_get(r->base.fp8);
    if (!f8)
        return ZP_FAIL(ZP_EINVAL, "--fp8-recipe: not a recipe (use %s)", zp_fp8_names());
    char have[256];
    if (r->cluster && zp_cluster_has_fp8(r->cluster) && f8->needs_mx && !r->cluster->fp8_mx) {
        presets_with(has_fp8_mx, have, sizeof have);
        return ZP_FAIL(ZP_EINVAL, "--fp8-recipe %s: the %s of --cluster %s has no tensor cores that apply block "
                                  "scales (MXFP8 needs Blackwell: %s; on this GPU use --fp8-recipe blockwise, "
                                  "delayed or current)",
                       f8->name, r->cluster->gpu_name, r->cluster->name, have);
    }
    if (!r->cluster || zp_cluster_has_fp8(r->cluster))
        return ZP_OK;
    presets_with(has_fp8, have, sizeof have);
    return ZP_FAIL(ZP_EINVAL, "--precision fp8: the %s of --cluster %s has no FP8 tensor cores (use bf16, or a "
                              "cluster whose GPU has them: %s)",
                   r->cluster->gpu_name, r->cluster->name, have);
}

/* --moe-shared-expert-overlap as Megatron-core's TransformerConfig takes it: with the all-to-all dispatcher
 * only, not with the combined 1F1B; without shared experts it does nothing (and Megatron-core runs it). */
static zp_status check_shared_overlap(const zp_search_req *r)
{
    if (!r->base.shared_overlap)
        return ZP_OK;
    if (r->model && r->model->experts <= 0)
        return ZP_FAIL(ZP_EINVAL, "--moe-shared-expert-overlap: model %s has no mixture-of-experts layers (leave it "
                                  "out for a dense model)", r->model->name);
    if (r->base.dispatcher != ZP_DISPATCH_ALLTOALL)
        return ZP_FAIL(ZP_EINVAL, "--moe-shared-expert-overlap: Megatron-core runs it with --moe-dispatcher alltoall "
                                  "only ('moe_shared_expert_overlap only works with alltoall token dispatcher'), "
                                  "not %s", zp_dispatch_get(r->base.dispatcher)->name);
    if (r->base.ep_overlap)
        return ZP_FAIL(ZP_EINVAL, "--moe-shared-expert-overlap with --overlap-moe-expert-parallel-comm: Megatron-core "
                                  "refuses the two together ('disable moe_shared_expert_overlap when enabling "
                                  "overlap_moe_expert_parallel_comm'); keep one");
    return ZP_OK;
}

/* --recompute-modules: selective recompute's (Megatron-core recomputes them only with --recompute-granularity
 * selective), each with something to recompute in the model: mla_up_proj needs MLA (Megatron-core raises
 * "mla_up_proj in recompute_modules is only supported with multi_latent_attention"); the MoE modules need MoE
 * blocks, shared_experts shared experts, mlp dense blocks (where there are none Megatron-core does nothing:
 * a module stated for nothing is a mistake to name). */
static zp_status check_rc_modules(const zp_search_req *r)
{
    const unsigned mods = r->base.rc_modules;
    if (r->rc_auto && (mods || (given(r, ZP_SEARCH_RECOMPUTE) && zp_search_req_recompute(r) != ZP_RECOMPUTE_SELECTIVE)))
        return ZP_FAIL(ZP_EINVAL, "--recompute-modules auto searches selective recompute's modules: not with %s",
                       mods ? "modules given" : zp_recompute_name(zp_search_req_recompute(r)));
    if (!mods)
        return ZP_OK;
    if (given(r, ZP_SEARCH_RECOMPUTE) && zp_search_req_recompute(r) != ZP_RECOMPUTE_SELECTIVE)
        return ZP_FAIL(ZP_EINVAL, "--recompute-modules names what selective recompute re-runs: it goes with "
                                  "--recompute selective, not %s",
                       zp_recompute_name(zp_search_req_recompute(r)));
    const zp_model *m = r->model;
    if (!m)
        return ZP_OK;
    const int64_t moe = zp_model_moe_blocks(m);
    const char *why = (mods & ZP_RCM_MLA_UP_PROJ) && m->attn != ZP_ATTN_MLA ? "mla_up_proj: it has no multi-latent "
                                                                              "attention"
                      : (mods & (ZP_RCM_MOE | ZP_RCM_MOE_ACT)) && moe == 0 ? "moe and moe_act: it has no MoE blocks"
                      : (mods & ZP_RCM_SHARED_EXPERTS) && (moe == 0 || m->shared_experts <= 0)
                          ? "shared_experts: it has no shared experts"
                      : (mods & ZP_RCM_MLP) && moe == m->layers ? "mlp: every block is an MoE block (use moe)"
                                                                : NULL;
    if (why)
        return ZP_FAIL(ZP_EINVAL, "--recompute-modules: nothing to recompute for %s in model %s (drop it)",
                       why, m->name);
    return ZP_OK;
}

/* --activation-func-fp8-input-store: Megatron-core's fused SwiGLU only (transformer_config.py; mlp.py passes
 * fp8_input_store to bias_swiglu_impl alone). --swiglu-fusion off: a model with a gated MLP. */
static zp_status check_act_fp8_store(const zp_search_req *r)
{
    const zp_model *m = r->model;
    if (m && !r->base.swiglu_fusion && m->mlp != ZP_MLP_GATED)
        return ZP_FAIL(ZP_EINVAL, "--swiglu-fusion off: model %s has %s MLPs, no SwiGLU to fuse (leave it out)",
                       m->name, zp_model_mlp_name(m->mlp));
    if (!r->base.act_fp8_store || !m)
        return ZP_OK;
    if (!(m->mlp == ZP_MLP_GATED && m->act == ZP_ACT_SILU))
        return ZP_FAIL(ZP_EINVAL, "--activation-func-fp8-input-store: Megatron-core stores a SwiGLU's input only "
                                  "('Storing activation input in FP8 is supported only for SwiGLU'); model %s has "
                                  "%s %s MLPs (leave it out)",
                       m->name, zp_model_mlp_name(m->mlp), zp_model_activation_name(m->act));
    if (!r->base.swiglu_fusion || r->base.eager)
        return ZP_FAIL(ZP_EINVAL, "--activation-func-fp8-input-store: Megatron-core keeps the FP8 input in its fused "
                                  "SwiGLU only (bias_swiglu_impl); with %s it does nothing (drop one)",
                       r->base.eager ? "--compile off" : "--swiglu-fusion off");
    return ZP_OK;
}

/* A token dispatcher other than the all-to-all needs routed experts to dispatch; DeepSeek-V3's FP8 dispatch
 * quantizes for FP8 expert GEMMs, so it goes with FP8 training. */
static zp_status check_dispatcher(const zp_search_req *r)
{
    const zp_dispatch_info *d = zp_dispatch_get(r->base.dispatcher);
    if (!d)
        return ZP_FAIL(ZP_EINVAL, "--moe-dispatcher: not a token dispatcher (use %s)", zp_dispatch_names());
    if (r->base.ep_overlap && r->model && r->model->experts <= 0)
        return ZP_FAIL(ZP_EINVAL, "--overlap-moe-expert-parallel-comm: model %s has no routed experts, so no "
                                  "all-to-alls to overlap (leave it out for a dense model)", r->model->name);
    if (r->base.ep_overlap && zp_search_req_given(r, ZP_SEARCH_DIM(ZP_DIM_EP)) && r->base.ep <= 1)
        return ZP_FAIL(ZP_EINVAL, "--overlap-moe-expert-parallel-comm overlaps the EP all-to-alls: give --ep above 1 "
                                  "(or leave --ep out to search it)");
    ZP_TRY(check_shared_overlap(r));
    if (r->base.dispatcher == ZP_DISPATCH_ALLTOALL)
        return ZP_OK;
    if (d->gather && r->base.ep_overlap) /* Megatron-core asserts alltoall or flex for the overlap */
        return ZP_FAIL(ZP_EINVAL, "--overlap-moe-expert-parallel-comm overlaps all-to-alls: Megatron-core runs it with "
                                  "--moe-dispatcher alltoall or deepep, not %s", d->name);
    if (r->model && r->model->experts <= 0)
        return ZP_FAIL(ZP_EINVAL, "--moe-dispatcher %s: model %s has no routed experts to dispatch (leave it out for a "
                                  "dense model)", d->name, r->model->name);
    if (d->fp8_out && r->base.fp8 == ZP_FP8_NONE)
        return ZP_FAIL(ZP_EINVAL, "--moe-dispatcher %s: the tokens are quantized to FP8 for FP8 expert GEMMs; add "
                                  "--precision fp8 (DeepSeek-V3's --fp8-recipe blockwise), or use --moe-dispatcher "
                                  "deepep", d->name);
    return ZP_OK;
}

zp_status zp_search_validate(const zp_search_req *r)
{
    if (r->gpus < 1)
        return ZP_FAIL(ZP_EINVAL, "--gpus: must be at least 1");
    if (r->gpus > ZP_MAX_GPUS)
        return ZP_FAIL(ZP_ERANGE, "--gpus: %lld is beyond any machine (at most %lld)", (long long)r->gpus,
                       (long long)ZP_MAX_GPUS);
    if (!(r->gpu_mem >= 1e6))
        return ZP_FAIL(ZP_EINVAL, "--gpu-mem: %.0f bytes is too small to hold anything (use e.g. 32G)", r->gpu_mem);
    if (!(r->reserve >= 0) || !(zp_search_usable_mem(r) >= 1e6))
        return ZP_FAIL(ZP_EINVAL, "--reserve: %.4g GB leaves nothing of the %.4g GB per GPU (the reserve is what the "
                                  "CUDA context, library workspaces and NCCL take; e.g. --reserve 2G)",
                       r->reserve / 1e9, r->gpu_mem / 1e9);
    const zp_plan *b = &r->base;
    if (given(r, ZP_SEARCH_STAGE) && !zp_stage_get(b->stage))
        return ZP_FAIL(ZP_EINVAL, "--stage: %d is not a ZeRO stage (use 0, 1, 2 or 3)", b->stage);
    if (deg_given(r, ZP_DIM_DP))
        return ZP_FAIL(ZP_EINVAL, "the data-parallel degree is what the other degrees leave of the GPUs: it is not "
                                  "given");
    for (int d = 0; d < ZP_NDIMS; d++) /* the given degrees, by their rows (PP with the pipeline's options) */
        if (d != ZP_DIM_PP)
            ZP_TRY(check_given(r, (zp_dim_id)d));
    ZP_TRY(validate_tp_overlap(r));
    ZP_TRY(validate_param_gather(r));
    ZP_TRY(check_fp8(r));
    ZP_TRY(check_dispatcher(r));
    if (!(r->base.capacity_factor > 0 && r->base.capacity_factor <= 64))
        return ZP_FAIL(ZP_EINVAL, "--capacity-factor: %g is not in (0, 64]", r->base.capacity_factor);
    if (!(r->base.moe_imbalance >= 1 && r->base.moe_imbalance <= 64))
        return ZP_FAIL(ZP_EINVAL, "--moe-imbalance: %g is not between 1 (even routing) and 64", r->base.moe_imbalance);
    const int mb = given(r, ZP_SEARCH_MICRO_BATCH), gb = given(r, ZP_SEARCH_GLOBAL_BATCH);
    if (mb && b->micro_batch < 1)
        return ZP_FAIL(ZP_EINVAL, "--micro-batch: must be at least 1");
    if (mb && b->micro_batch > ZP_MAX_MICRO_BATCH)
        return ZP_FAIL(ZP_ERANGE, "--micro-batch: at most %lld", (long long)ZP_MAX_MICRO_BATCH);
    if (gb && r->global_batch < 1)
        return ZP_FAIL(ZP_EINVAL, "--global-batch: must be at least 1");
    if (given(r, ZP_SEARCH_ACCUM) && b->grad_accum < 1)
        return ZP_FAIL(ZP_EINVAL, "--grad-accum: must be at least 1");
    if (r->exact && !given(r, ZP_SEARCH_STAGE))
        return ZP_FAIL(ZP_EINVAL, "--exact pins every option not given to its default, and a plan always names "
                                  "its ZeRO stage: give --stage too (as a DeepSpeed config does)");
    ZP_TRY(validate_pipeline(r));
    ZP_TRY(validate_flash(r));
    ZP_TRY(validate_framework(r));
    ZP_TRY(validate_shard_group(r));
    /* with --mp the batch is a multiple of the replicas: GPUs / MP, or GPUs / (MP x PP) when --pp is given,
     * over the ways a sequence is split that are given (one searched counts 1: the plans without it) */
    zp_dim_ctx c;
    dims_ctx(r, &c);
    const int64_t pp = deg_given(r, ZP_DIM_PP) && b->pp > 0 ? b->pp : 1;
    if (gb && deg_given(r, ZP_DIM_TP) && r->gpus % (b->mp * pp) == 0) {
        int64_t dp = r->gpus / b->mp / pp / zp_dims_seq_split(c.deg);
        if (r->global_batch % dp != 0)
            return ZP_FAIL(ZP_EINVAL, "--global-batch: %lld is not a multiple of the data-parallel degree %lld",
                           (long long)r->global_batch, (long long)dp);
        if (mb && r->global_batch % (dp * b->micro_batch) != 0)
            return ZP_FAIL(ZP_EINVAL,
                           "--global-batch: %lld must equal micro-batch %lld x accumulation x data-parallel %lld",
                           (long long)r->global_batch, (long long)b->micro_batch, (long long)dp);
    }
    if ((given_on(r, ZP_SEARCH_PA, b->pa) || given_on(r, ZP_SEARCH_PA_CPU, b->pa_cpu)) && !r->checkpoint)
        return ZP_FAIL(ZP_EINVAL, "--pa/--pa-cpu partition activation checkpoints: drop --no-checkpoint");
    const int off = given(r, ZP_SEARCH_OFFLOAD) ? (int)b->offload : -1, stage = given(r, ZP_SEARCH_STAGE);
    if (off == ZP_OFFLOAD_OPTIMIZER && stage && b->stage == 0)
        return ZP_FAIL(ZP_EINVAL, "--offload optimizer needs ZeRO stage 1, 2 or 3 (as in DeepSpeed)");
    if (off == ZP_OFFLOAD_PARAMS && stage && b->stage != 3)
        return ZP_FAIL(ZP_EINVAL, "--offload params needs ZeRO stage 3 (as in DeepSpeed)");
    if (r->base.grad_bytes != 0 && r->base.grad_bytes != 4.0 && r->base.grad_bytes != r->base.param_bytes)
        return ZP_FAIL(ZP_EINVAL, "--grad-accum-dtype: gradients are fp32 or the parameters' type");
    if (r->base.cb && !(r->base.bucket >= 1 && r->base.bucket <= 1e15))
        return ZP_FAIL(ZP_EINVAL, "--bucket: must be between 1 and 1e15 elements");
    if (r->cluster) {
        ZP_TRY(zp_cluster_check_size(r->cluster, r->gpus, r->oversubscription));
        int64_t gpn = zp_cluster_domain(r->cluster) > 0 ? zp_cluster_domain(r->cluster) : 1; /* simulated nodes */
        int64_t nodes = (r->gpus + gpn - 1) / gpn;
        if (r->simulate && r->sim == ZP_SIM_FULL && nodes > ZP_SIM_MAX_FULL_NODES)
            return ZP_FAIL(ZP_EINVAL,
                           "--sim full: %lld nodes are more than the %d the full simulation takes (drop --sim full: "
                           "the reduced simulation has no limit)",
                           (long long)nodes, ZP_SIM_MAX_FULL_NODES);
    }
    if (r->simulate && r->sim == ZP_SIM_REDUCED && r->platform_file)
        return ZP_FAIL(ZP_EINVAL, "--sim reduced: a user platform (--cluster FILE) is simulated in full (its nodes "
                                  "need not be alike)");
    if (given(r, ZP_SEARCH_RECOMPUTE) && zp_search_req_recompute(r) == ZP_RECOMPUTE_OP)
        ZP_TRY(zp_model_check_op_sac(r->model));
    ZP_TRY(check_rc_modules(r));
    ZP_TRY(check_act_fp8_store(r));
    if (zp_plan_moments_saved(&r->base) > 0 && given(r, ZP_SEARCH_OFFLOAD) &&
        r->base.offload != ZP_OFFLOAD_NONE)
        return ZP_FAIL(ZP_EINVAL, "--adam-moments %s with --offload %s: the offloaded optimizer (DeepSpeed's CPU Adam) "
                                  "keeps its moments in fp32 (drop one)",
                       zp_adam_moment_name(r->base.exp_avg_bytes), zp_offload_name(r->base.offload));
    return zp_model_validate(r->model);
}
