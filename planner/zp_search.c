#include "zp_search.h"

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include "zp_collcost.h"
#include "zp_device.h"
#include "zp_device_fp8.h"
#include "zp_dispatch.h"
#include "zp_fp8.h"
#include "zp_fabric.h"
#include "zp_framework.h"
#include "zp_pipeline.h"
#include "zp_shape.h"
#include "zp_simrun.h"
#include "zp_time.h"
#include "zp_units.h"

/* Whether the request gives `bits` (their values are the base plan's) / a dimension's degree. */
static inline int given(const zp_search_req *r, uint32_t bits) { return zp_search_req_given(r, bits); }
static inline int deg_given(const zp_search_req *r, zp_dim_id d) { return given(r, ZP_SEARCH_DIM(d)); }
/* A given on/off option that is on (--sp, --pa, --pa-cpu). */
static inline int given_on(const zp_search_req *r, uint32_t bit, int value) { return given(r, bit) && value == 1; }

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

/* Where no layout is given and v chunks on P stages do not divide the L layers: the embedding and the loss
 * counted as a layer each, where the framework's release does that and L + 2 divides (zp_plan.pp_acc); 0
 * otherwise. */
static int acc_fit(const zp_search_req *r, const zp_framework *f, int64_t P, int v, int64_t L)
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
            if (L % (pp * v) == 0 || (f && acc_fit(r, f, pp, v, L)))
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
            if (st != ZP_OK && !(f && acc_fit(r, f, pp, b->vstages, r->model->layers)))
                return st;
            zp_error_clear(); /* the split with the embedding and the loss counted fits */
        }
    }
    if (r->exact && sc_given && b->schedule == ZP_PP_INTERLEAVED && !given(r, ZP_SEARCH_VSTAGES))
        return ZP_FAIL(ZP_EINVAL, "--exact --schedule interleaved: give --virtual-stages v (the model chunks per rank)");
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

/* FLOPs a step executes (recompute included: Megatron-LM 2021's convention): full recompute runs every
 * block's forward again, selective recompute the attention core's (Q K^T and A V of every head) and its
 * other modules' GEMMs (zp_model_flops_rc_modules). */
static double flops_executed(const zp_model *model, const zp_plan *plan, double batch)
{
    double f = zp_model_flops_iteration(model, batch, plan->checkpoint);
    if (plan->checkpoint && plan->ckpt_every > 1) { /* only the checkpointed blocks run their forward again */
        const double none = zp_model_flops_iteration(model, batch, 0);
        f = none + zp_plan_ckpt_fraction(plan, model->layers) * (f - none);
    }
    if (plan->op_sac)
        f += zp_model_flops_op_sac_recompute(model, batch);
    f += zp_model_flops_rc_modules(model, zp_plan_rc_modules(plan), batch);
    if (zp_plan_rc_modules(plan) & ZP_RCM_CORE_ATTN) {
        const double s = (double)model->seq;
        f += batch * (double)model->layers * 2.0 * s * s * (double)model->heads *
             (double)(zp_model_head_dim(model) + zp_model_v_head_dim(model));
    }
    return f;
}

/* zp_search_eval, the plan's memory given when `known` is not NULL (its zp_memory_estimate, computed before:
 * the pipeline search's bisection estimates the very plans it then evaluates). */
static zp_status search_eval(const zp_model *model, const zp_cluster *cluster, double gpu_mem, double host_mem,
                             const zp_plan *plan, const zp_memory *known, zp_eval *out)
{
    memset(out, 0, sizeof *out);
    out->plan = *plan;
    if (known)
        out->mem = *known;
    else
        ZP_TRY(zp_memory_estimate(model, plan, &out->mem));
    const double host = zp_cluster_host_per_gpu(cluster, host_mem, zp_plan_gpus(plan));
    out->fits = zp_memory_fits(&out->mem, gpu_mem, host, out->reason, sizeof out->reason);
    const double nvme = zp_cluster_nvme_per_gpu(cluster, zp_plan_gpus(plan));
    if (out->fits && out->mem.nvme > nvme) {
        out->fits = 0;
        snprintf(out->reason, sizeof out->reason, "NVMe %.0f GB > %.0f GB per GPU's share of the node's drives",
                 out->mem.nvme / 1e9, nvme / 1e9);
    }
    ZP_TRY(zp_analytic_step(model, plan, cluster, &out->time));
    out->global_batch = zp_plan_global_batch(plan);
    double gpus = (double)zp_plan_gpus(plan);
    out->samples_per_s = out->global_batch / out->time.total;
    out->tflops_per_gpu = flops_executed(model, plan, out->global_batch) / (out->time.total * gpus) / 1e12;
    out->pflops = out->tflops_per_gpu * gpus / 1e3;
    out->method = "analytic";
    out->analytic_step_s = out->time.total;
    zp_units_fill(model, cluster, out);
    return ZP_OK;
}

zp_status zp_search_eval(const zp_model *model, const zp_cluster *cluster, double gpu_mem, double host_mem,
                         const zp_plan *plan, zp_eval *out)
{
    return search_eval(model, cluster, gpu_mem, host_mem, plan, NULL, out);
}

/* Replaces the analytic time of an evaluated plan by a simulated one. */
static void apply_sim(const zp_model *model, zp_eval *e, const zp_sim_result *s)
{
    double gpus = (double)zp_plan_gpus(&e->plan);
    e->time.compute = s->compute;
    e->time.mp_comm = s->mp_comm;
    e->time.dp_comm = s->dp_exposed;
    e->time.optimizer = s->optimizer;
    e->time.offload = s->offload_exposed;
    e->time.pp_comm = s->pp_exposed;
    e->time.host_wait = s->host_wait;
    e->time.total = s->step_time;
    e->samples_per_s = e->global_batch / s->step_time;
    e->tflops_per_gpu = flops_executed(model, &e->plan, e->global_batch) / (s->step_time * gpus) / 1e12;
    e->pflops = e->tflops_per_gpu * gpus / 1e3;
    e->method = "simgrid";
    e->sim = s->reduced ? "reduced" : "full";
}

/* Time the compute stream certainly spends in op: a kernel's (0 for what is not a kernel). Megatron MP
 * collectives are left out: priced by the profile's fit they came out above the simulator's ring in 2 of
 * 1,000 random plans (tests/sim/test_bound.c), and a bound must never exceed the simulated step. */
static double op_bound_s(const zp_profile *prof, const zp_op *op, int64_t mp, int gpus_per_node)
{
    (void)mp;
    (void)gpus_per_node;
    return zp_device_op_time(prof, op, 1);
}

/* The same op repeats once per layer and micro-batch: one bound's costs, memoized on what a cost function
 * reads of an op (its kind and sizes; zp_device_op_time reads op->type, flash, m, n, k, batch, flops, elems
 * and bytes, and nothing else: the memo returns the very double op_bound_s would). One table per bound
 * (step_bound), shared by the schedules it builds: a pipeline's stages, the two short steps of an
 * accumulation. A table for the whole search was slower: 3 MB looked up at random misses the caches, where
 * 96 KB stays in them. */
#define OPMEMO 1024 /* a power of two */
typedef struct {
    int type, flash, used;
    double m, n, k, batch, flops, elems, bytes, t;
} opmemo;

typedef struct {
    opmemo *v;
    size_t n; /* entries */
} opmemo_tab;

static double op_bound_memo(const opmemo_tab *tab, const zp_profile *prof, const zp_op *op, int64_t mp, int gpn)
{
    if (!tab || !tab->v)
        return op_bound_s(prof, op, mp, gpn);
    const double f[7] = {op->m, op->n, op->k, op->batch, op->flops, op->elems, op->bytes};
    uint64_t h = (uint64_t)(unsigned)op->type * 0x9E3779B97F4A7C15ull ^ (uint64_t)(unsigned)op->flash;
    for (int i = 0; i < 7; i++) {
        uint64_t b;
        memcpy(&b, &f[i], sizeof b);
        h = (h ^ b) * 0x100000001B3ull;
    }
    const size_t mask = tab->n - 1; /* n a power of two (OPMEMO): no division per look-up */
    for (size_t j = (size_t)(h >> 40) & mask, tries = 0; tries < 8; j = (j + 1) & mask, tries++) {
        opmemo *e = &tab->v[j];
        if (!e->used) {
            *e = (opmemo){.type = op->type, .flash = op->flash, .used = 1, .m = f[0], .n = f[1], .k = f[2],
                          .batch = f[3], .flops = f[4], .elems = f[5], .bytes = f[6]};
            e->t = op_bound_s(prof, op, mp, gpn);
            return e->t;
        }
        if (e->type == op->type && e->flash == op->flash && e->m == f[0] && e->n == f[1] && e->k == f[2] &&
            e->batch == f[3] && e->flops == f[4] && e->elems == f[5] && e->bytes == f[6])
            return e->t;
    }
    return op_bound_s(prof, op, mp, gpn); /* a full neighbourhood: not kept */
}

/* One pipeline stage's sums for its bound: w[u] what micro-batches 0 and 1 run through every chunk, f and
 * b micro-batch 0's forward and a later one's backward through chunk 0 (pipeline_bound_s); 0 when its
 * sample schedule cannot be built. */
typedef struct {
    double w[2], f, b;
} stage_sums;

/* EP overlap (sim/zp_schedule.c): the compute stream signals EP_GO as it hands the EP stream an all-to-all
 * (idle then: the previous one was waited for) and waits on EP_DONE for it before the next, so the stretch
 * between lasts at least the all-to-all's least time a. While the all-to-all runs it holds a share f of the
 * SMs (the device's NCCL CTAs, sim/zp_actors.c), and kernels beside it run at 1 - f: of the stretch's
 * kernels K and other ops N, either the kernels all ran beside it (at least N + K / (1 - f)) or it ended
 * first, after at least a - N of them had run beside it (at least N + K + f (a - N)); so the stretch lasts
 * at least max(a, N + K + f min(K, a - N)). t[] holds the compute stream's ops' least times; each EP_DONE
 * wait's is set to what that adds to them. Returns the waits' sum. */
static double ep_waits(const zp_sim_input *in, const zp_schedule *sc, double *t)
{
    const int ne = sc->n[ZP_STREAM_EP];
    if (ne == 0)
        return 0.0;
    double *el = malloc((size_t)ne * sizeof *el);
    if (!el || zp_engine_op_least(in, sc, ZP_STREAM_EP, el) != ZP_OK) {
        free(el);
        return 0.0; /* no extra: a lower bound still */
    }
    const zp_profile_device *d = &in->profile->dev;
    const double f = d->sms > 0 && d->nccl_ctas > 0 && d->nccl_ctas < d->sms ? (double)d->nccl_ctas / d->sms : 0.0;
    int k = 0; /* the EP stream's next collective */
    double kern = 0.0, other = 0.0, pending = 0.0, waited = 0.0;
    for (int i = 0; i < sc->n[ZP_STREAM_COMPUTE]; i++) {
        const zp_op *op = &sc->ops[ZP_STREAM_COMPUTE][i];
        const zp_opc cls = zp_op_table[op->type].cls;
        if (cls == ZP_OPC_SIGNAL && op->channel == ZP_CH_EP_GO) {
            while (k < ne && zp_op_table[sc->ops[ZP_STREAM_EP][k].type].cls != ZP_OPC_COLL)
                k++;
            pending = k < ne ? el[k++] : 0.0;
            kern = other = 0.0;
        } else if (cls == ZP_OPC_WAIT && op->channel == ZP_CH_EP_DONE) {
            const double lost = pending > 0 ? f * fmin(kern, fmax(0.0, pending - other)) : 0.0;
            t[i] = fmax(0.0, fmax(pending, other + kern + lost) - (other + kern));
            waited += t[i];
            pending = kern = other = 0.0;
        } else if (cls == ZP_OPC_COMPUTE) {
            kern += t[i];
        } else {
            other += t[i];
        }
    }
    free(el);
    return waited;
}

/* An op's least time t into the sums: every chunk's of its micro-batch (0, or 1 for a later one), and chunk
 * 0's forward of micro-batch 0 or backward of a later one. */
static void stage_sums_add(stage_sums *out, const zp_pp_stage *st, const zp_op *op, double t, int later)
{
    const int u = op->micro > 0;
    out->w[u] += t;
    if (op->layer < 0 || (op->layer >= st->first[0] && op->layer < st->first[0] + st->layers[0])) {
        if (op->phase == ZP_PHASE_FORWARD && u == 0)
            out->f += t;
        else if (op->phase != ZP_PHASE_FORWARD && u == later)
            out->b += t;
    }
}

static int stage_sums_get(const zp_model *model, const zp_profile *prof, const zp_plan *plan, const zp_sim_input *in,
                          const zp_pp_stage *st, int gpn, const opmemo_tab *memo, stage_sums *out)
{
    const int later = plan->grad_accum > 1;
    zp_schedule sc;
    if (zp_schedule_build_sample(model, plan, st->stage, &sc) != ZP_OK)
        return 0;
    const int n = sc.n[ZP_STREAM_COMPUTE];
    double *least = malloc((size_t)(n > 0 ? n : 1) * sizeof *least);
    if (!least || zp_engine_op_least(in, &sc, ZP_STREAM_COMPUTE, least) != ZP_OK) {
        free(least);
        zp_schedule_free(&sc);
        return 0;
    }
    *out = (stage_sums){{0, 0}, 0, 0};
    for (int i = 0; i < n; i++) {
        const zp_op *op = &sc.ops[ZP_STREAM_COMPUTE][i];
        least[i] = op_bound_memo(memo, prof, op, plan->mp, gpn) + (zp_op_part(op) == ZP_PART_MP_COMM ? least[i] : 0.0);
    }
    (void)ep_waits(in, &sc, least); /* the sample runs every pass paired: the least the compute stream can hold */
    for (int i = 0; i < n; i++)
        stage_sums_add(out, st, &sc.ops[ZP_STREAM_COMPUTE][i], least[i], later);
    free(least);
    zp_schedule_free(&sc);
    return 1;
}

/* Stages a and b build the same sample ops but for the layers' numbers: neither holds the embedding or
 * the head (nor, then, their tied gradient's all-reduce), their chunks hold as many blocks, and the blocks
 * in the same places are alike in everything a block's ops depend on its number for: MoE or dense
 * (zp_model_block_is_moe: DeepSeek-V3's first 3 dense blocks, moe_every) and checkpointed or not
 * (zp_plan_block_checkpointed: ckpt_every). An op's costs read its kind and sizes, never its layer
 * (op_bound_memo), the stage's parameters and optimizer follow from its blocks, and its P2P peers are
 * not in the bound (PP part, not a kernel), so a's sums are b's, to the bit (tests/unit/test_search.c). */
static int stages_alike(const zp_model *model, const zp_plan *plan, const zp_pp_stage *a, const zp_pp_stage *b)
{
    if (a->embedding || a->head || b->embedding || b->head || a->chunks != b->chunks)
        return 0;
    for (int c = 0; c < a->chunks; c++) {
        if (a->layers[c] != b->layers[c])
            return 0;
        for (int i = 0; i < a->layers[c]; i++) {
            const int64_t x = a->first[c] + i, y = b->first[c] + i;
            if (zp_model_block_is_moe(model, x) != zp_model_block_is_moe(model, y) ||
                zp_plan_block_checkpointed(plan, x) != zp_plan_block_checkpointed(plan, y))
                return 0;
        }
    }
    return 1;
}

/* A lower bound of a pipeline plan's step: stage s runs its own compute stream W_s (its kernels and its
 * blocking collectives: the expert all-to-alls and Megatron's MP collectives, each at its least time) for
 * each of the m micro-batches, cannot start before micro-batch 0 went forward through chunk 0 of the stages
 * before it, and its last backward (micro-batch m-1, chunk 0) still has to go back through them: step >=
 * max_s (sum_{i<s} f_i + W_s + sum_{i<s} b_i), f_i micro-batch 0's forward and b_i a later micro-batch's
 * backward (recompute included) of chunk 0 of stage i, W_s = W0_s + (m - 1) W1_s, W0 and W1 what
 * micro-batches 0 and 1 run through every chunk (zp_schedule_build_sample): each later one runs micro-batch
 * 1's kernels (and adds its gradients into the accumulated ones, which the first does not). For P stages
 * alike this is (m + (P-1)/v) passes of a stage: the bubble, from dependencies. Only the collectives of the
 * MP part count (every micro-batch's, on the compute stream: the DP collectives are not every one's).
 * A stage alike a stage already summed (stages_alike) takes its sums instead of building its sample
 * (`reuse`; 0 builds every stage's): deepseek-v3 on 2,048 GPUs, 6,193 pipeline bounds, most stages alike. */
static double pipeline_bound_s(const zp_model *model, const zp_profile *prof, const zp_plan *plan,
                               const zp_cluster *cluster, const char *platform_file, const opmemo_tab *memo, int reuse)
{
    enum { KEPT = 4 }; /* distinct stages kept: the middle ones of up to a few layouts */
    const int P = (int)plan->pp, gpn = cluster->gpus_per_node, later = plan->grad_accum > 1;
    const zp_sim_input in = {.model = model, .plan = plan, .cluster = cluster, .profile = prof,
                             .platform_file = platform_file};
    zp_pp_stage kept_st[KEPT];
    stage_sums kept[KEPT];
    int nkept = 0;
    double sum_f = 0, sum_b = 0, best = 0;
    for (int s = 0; s < P; s++) {
        zp_pp_stage st;
        if (zp_pp_stage_get(model, plan, s, &st) != ZP_OK)
            return 0.0;
        stage_sums x;
        int k = 0;
        while (reuse && k < nkept && !stages_alike(model, plan, &kept_st[k], &st))
            k++;
        if (reuse && k < nkept) {
            x = kept[k];
        } else {
            if (!stage_sums_get(model, prof, plan, &in, &st, gpn, memo, &x))
                return 0.0;
            if (reuse && nkept < KEPT && !st.embedding && !st.head) {
                kept_st[nkept] = st;
                kept[nkept++] = x;
            }
        }
        best = fmax(best, sum_f + x.w[0] + x.w[later] * (double)(plan->grad_accum - 1) + sum_b);
        sum_f += x.f;
        sum_b += x.b;
    }
    return best;
}

/* A non-pipeline plan's sums over its schedule: the compute stream's kernels, its collectives, the comm
 * stream's collectives, each op at its least time. 0 when the schedule cannot be built. */
static int stream_sums(const zp_model *model, const zp_profile *prof, const zp_plan *plan, const zp_cluster *cluster,
                       const char *platform_file, const opmemo_tab *memo, double sum[3])
{
    sum[0] = sum[1] = sum[2] = 0.0;
    zp_schedule sc;
    if (zp_schedule_build(model, plan, &sc) != ZP_OK)
        return 0;
    zp_sim_input in = {.model = model, .plan = plan, .cluster = cluster, .profile = prof,
                       .platform_file = platform_file};
    /* EP overlap: every op's least time (its collective's too) for the waits on the all-to-alls (ep_waits) */
    const int n = sc.n[ZP_STREAM_COMPUTE];
    double *t = sc.n[ZP_STREAM_EP] > 0 && !platform_file ? malloc((size_t)(n > 0 ? n : 1) * sizeof *t) : NULL;
    if (t && zp_engine_op_least(&in, &sc, ZP_STREAM_COMPUTE, t) != ZP_OK) {
        free(t);
        t = NULL;
    }
    for (int i = 0; i < n; i++) {
        const double k = op_bound_memo(memo, prof, &sc.ops[ZP_STREAM_COMPUTE][i], plan->mp, cluster->gpus_per_node);
        sum[0] += k;
        if (t)
            t[i] += k;
    }
    if (zp_engine_stream_bounds(&in, &sc, &sum[1], &sum[2]) != ZP_OK)
        sum[1] = sum[2] = 0.0;
    if (t)
        sum[0] += ep_waits(&in, &sc, t);
    free(t);
    zp_schedule_free(&sc);
    return 1;
}

static double step_bound_memo(const zp_model *model, const zp_profile *prof, const zp_plan *plan,
                              const zp_cluster *cluster, const char *platform_file, int every_micro_step,
                              const opmemo_tab *memo)
{
    double t = 0.0;
    if (plan->pp > 1) {
        /* every_micro_step: each stage built as well (the reference the shortcuts are checked against) */
        t = pipeline_bound_s(model, prof, plan, cluster, platform_file, memo, !every_micro_step);
    } else {
        double sum[3];
        const int64_t m = plan->grad_accum;
        if (!every_micro_step && m > ZP_ACCUM_AFFINE_ABOVE) {
            /* every sum is affine in the micro-steps (zp_schedule.h): taken at two short steps */
            zp_plan pa = *plan, pb = *plan;
            pa.grad_accum = ZP_ACCUM_SAMPLE;
            pb.grad_accum = ZP_ACCUM_SAMPLE + 1;
            double sa[3], sb[3];
            if (!stream_sums(model, prof, &pa, cluster, platform_file, memo, sa) ||
                !stream_sums(model, prof, &pb, cluster, platform_file, memo, sb))
                return 0.0;
            for (int i = 0; i < 3; i++)
                sum[i] = sa[i] + (double)(m - ZP_ACCUM_SAMPLE) * (sb[i] - sa[i]);
        } else if (!stream_sums(model, prof, plan, cluster, platform_file, memo, sum)) {
            return 0.0;
        }
        /* the streams run their ops one after another: the compute stream its kernels and its blocking
         * collectives (Megatron's MP all-reduces), the comm stream its collectives, each op no faster than
         * the simulation can run it alone */
        t = fmax(sum[0] + sum[1], sum[2]);
    }
    /* SimGrid's clock adds the same durations in another order (coalesced runs of local ops) and rounds
     * each event to its timing precision: a plan that overlaps nothing simulates to exactly the bound's sum
     * but for that rounding (found at 3.5e-9 relative); allow 1e-6, far below any difference that matters
     * (and the affine sums' rounding) */
    return t * (1.0 - 1e-6);
}

static double step_bound(const zp_model *model, const zp_profile *prof, const zp_plan *plan,
                         const zp_cluster *cluster, const char *platform_file, int every_micro_step)
{
    opmemo_tab memo = {calloc(OPMEMO, sizeof(opmemo)), OPMEMO}; /* NULL: every op priced (the same figures) */
    const double t = step_bound_memo(model, prof, plan, cluster, platform_file, every_micro_step, &memo);
    free(memo.v);
    return t;
}

double zp_search_step_bound(const zp_model *model, const zp_profile *prof, const zp_plan *plan,
                            const zp_cluster *cluster, const char *platform_file)
{
    return step_bound(model, prof, plan, cluster, platform_file, 0);
}

double zp_search_step_bound_every(const zp_model *model, const zp_profile *prof, const zp_plan *plan,
                                  const zp_cluster *cluster, const char *platform_file)
{
    return step_bound(model, prof, plan, cluster, platform_file, 1);
}

/* Upper bound of a plan's simulated throughput, samples/s (HUGE_VAL: no bound known). */
static double throughput_bound(const zp_eval *e)
{
    return e->bound_s > 0 ? e->global_batch / e->bound_s : HUGE_VAL;
}

/* A plan left unsimulated shows its bound: the step at least bound_s, the throughputs at most. */
static void apply_bound(const zp_model *model, zp_eval *e, const char *why)
{
    e->unsimulated = why;
    if (!(e->bound_s > 0))
        return; /* no bound known: it keeps its analytic estimate */
    double gpus = (double)zp_plan_gpus(&e->plan);
    memset(&e->time, 0, sizeof e->time);
    e->time.compute = e->time.total = e->bound_s;
    e->samples_per_s = e->global_batch / e->bound_s;
    e->tflops_per_gpu =
        zp_model_flops_iteration(model, e->global_batch, e->plan.checkpoint) / (e->bound_s * gpus) / 1e12;
    e->pflops = e->tflops_per_gpu * gpus / 1e3;
    e->method = "bound";
}

typedef struct {
    int idx;
    double bound; /* samples/s at most: from the plan's bound, or from its floor (floor_bound) */
    int floor;    /* 1: bound is the floor's, the plan's own bound not yet computed */
} cand;

/* A fitting plan is dominated when another fitting plan runs the same batch (stage, MP, micro-batch,
 * accumulation, checkpointing) with a subset of its extra work: Pa adds an all-gather per block,
 * Pa+cpu adds PCIe copies, offload replaces the GPU Adam by the CPU's and adds copies. Those options
 * buy memory (a larger micro-batch: another candidate), never speed at the same batch. Plan j of out
 * dominates plan i: j fits, runs i's batch, and its extra work is a strict subset of i's. */
static int dominates(const zp_search_result *out, int j, int i)
{
    const zp_plan *p = &out->plans[i].plan, *q = &out->plans[j].plan;
    if (j == i || !out->plans[j].fits || q->stage != p->stage || q->mp != p->mp || q->ep != p->ep ||
        q->micro_batch != p->micro_batch || q->grad_accum != p->grad_accum || q->checkpoint != p->checkpoint ||
        q->selective != p->selective || q->rc_modules != p->rc_modules || q->sp != p->sp || q->pp != p->pp ||
        q->schedule != p->schedule || q->vstages != p->vstages)
        return 0;
    int work = p->pa + p->pa_cpu + (p->offload != ZP_OFFLOAD_NONE) + (p->offload == ZP_OFFLOAD_PARAMS);
    int qwork = q->pa + q->pa_cpu + (q->offload != ZP_OFFLOAD_NONE) + (q->offload == ZP_OFFLOAD_PARAMS);
    int subset = q->pa <= p->pa && q->pa_cpu <= p->pa_cpu &&
                 (q->offload == ZP_OFFLOAD_NONE || q->offload == p->offload ||
                  (q->offload == ZP_OFFLOAD_OPTIMIZER && p->offload == ZP_OFFLOAD_PARAMS));
    return subset && qwork < work;
}

/* The plans that may dominate one another run the same batch: equal in every field dominates() compares
 * besides the extra work. Sorting the plans' indices by those fields puts each plan's possible twins in one
 * run of `order`, so that a plan is checked against its run instead of every plan (deepseek-v3 on 2,048
 * GPUs at 15,360 sequences: 9,992 plans, 1e8 pairs before). dominates() still decides each pair, so the
 * answers are the pairwise loop's. run_lo[i] and run_hi[i]: plan i's run in `order`. */
typedef struct {
    int *order, *run_lo, *run_hi;
} twins;

static int cmp_batch(const void *a, const void *b, void *ctx)
{
    const zp_search_result *out = ctx;
    const zp_plan *p = &out->plans[*(const int *)a].plan, *q = &out->plans[*(const int *)b].plan;
    const int64_t x[12] = {p->stage, p->mp, p->ep, p->micro_batch, p->grad_accum, p->checkpoint, p->selective,
                           p->rc_modules, p->sp, p->pp, p->schedule, p->vstages};
    const int64_t y[12] = {q->stage, q->mp, q->ep, q->micro_batch, q->grad_accum, q->checkpoint, q->selective,
                           q->rc_modules, q->sp, q->pp, q->schedule, q->vstages};
    for (int k = 0; k < 12; k++)
        if (x[k] != y[k])
            return x[k] < y[k] ? -1 : 1;
    return 0;
}

static void twins_free(twins *t)
{
    free(t->order);
    free(t->run_lo);
    free(t->run_hi);
    memset(t, 0, sizeof *t);
}

static zp_status twins_find(const zp_search_result *out, twins *t)
{
    const size_t n = (size_t)(out->n > 0 ? out->n : 1);
    t->order = malloc(n * sizeof *t->order);
    t->run_lo = malloc(n * sizeof *t->run_lo);
    t->run_hi = malloc(n * sizeof *t->run_hi);
    if (!t->order || !t->run_lo || !t->run_hi) {
        twins_free(t);
        return ZP_FAIL(ZP_ENOMEM, "out of memory");
    }
    for (int i = 0; i < out->n; i++)
        t->order[i] = i;
    qsort_r(t->order, (size_t)out->n, sizeof *t->order, cmp_batch, (void *)out);
    for (int lo = 0, hi; lo < out->n; lo = hi) {
        for (hi = lo + 1; hi < out->n && cmp_batch(&t->order[lo], &t->order[hi], (void *)out) == 0; hi++)
            ;
        for (int k = lo; k < hi; k++) {
            t->run_lo[t->order[k]] = lo;
            t->run_hi[t->order[k]] = hi;
        }
    }
    return ZP_OK;
}

static int dominated(const zp_search_result *out, const twins *t, int i)
{
    for (int k = t->run_lo[i]; k < t->run_hi[i]; k++)
        if (dominates(out, t->order[k], i))
            return 1;
    return 0;
}

/* A dominated plan runs its twin's step and more: its step is at least the slowest step of the plans that
 * dominate it and are not dominated themselves (a least-work dominator is one), not only its own bound.
 * Those twins' steps are final (simulated or bounded) when this runs. */
static void raise_dominated(const zp_model *model, zp_search_result *out, const twins *t)
{
    for (int i = 0; i < out->n; i++) {
        zp_eval *e = &out->plans[i];
        if (!e->fits || !e->dominated)
            continue;
        double twin = 0; /* s */
        for (int k = t->run_lo[i]; k < t->run_hi[i]; k++) {
            const int j = t->order[k];
            if (!out->plans[j].dominated && dominates(out, j, i) && out->plans[j].time.total > twin)
                twin = out->plans[j].time.total;
        }
        if (twin > e->bound_s) {
            e->bound_s = twin;
            apply_bound(model, e, e->unsimulated);
        }
    }
}

static int cmp_cand(const void *a, const void *b)
{
    const cand *x = a, *y = b;
    return x->bound < y->bound ? 1 : (x->bound > y->bound ? -1 : x->idx - y->idx);
}

/* Simulates the fitting plans, most promising first, in rounds of `jobs` processes; a plan whose
 * throughput bound is below the best simulated throughput cannot win and is not simulated (branch and
 * bound). Every fitting plan left unsimulated shows its bound (method "bound"), so no figure shown is
 * better than what the simulation could give it. Then simulates the recommended plan once more to write
 * its trace. */
/* The profile that prices the request's plans: the user's or the preset's, for the plans' precision (bf16
 * without bf16 tensor cores, fp32 training). */
static void search_profile(const zp_search_req *r, zp_profile *builtin, zp_profile *typed)
{
    const zp_profile *prof = r->profile;
    if (!prof) {
        zp_device_profile_builtin(r->cluster, builtin);
        prof = builtin;
    }
    zp_plan probe = r->base; /* every candidate's precision: the base plan's, bf16 as resolved */
    probe.bf16 = zp_search_bf16(r);
    zp_profile_for_dtype(prof, zp_plan_precision_name(&probe), typed);
    if (r->base.fp8 && r->cluster) /* the linear layers' GEMMs at the FP8 rate */
        zp_device_profile_fp8(r->cluster, r->base.fp8, r->base.fp8_all_gather, typed);
    typed->eager = r->base.eager; /* torch.compile off: the blocks' elementwise ops as eager's kernels */
}

/* What makes plans' ops alike (MP, micro-batch, EP, CP, SP, PP, TP overlap): -1, 0 or 1 as p's shape is
 * before, the same as or after q's. */
static int shape_cmp(const zp_plan *p, const zp_plan *q)
{
    const int64_t x[7] = {p->mp, p->micro_batch, p->ep, p->cp, p->sp, p->pp, p->tp_overlap};
    const int64_t y[7] = {q->mp, q->micro_batch, q->ep, q->cp, q->sp, q->pp, q->tp_overlap};
    for (int k = 0; k < 7; k++)
        if (x[k] != y[k])
            return x[k] < y[k] ? -1 : 1;
    return 0;
}

/* Plan indices by shape, then index. */
static int cmp_shape(const void *a, const void *b, void *ctx)
{
    const zp_search_result *out = ctx;
    const int i = *(const int *)a, j = *(const int *)b;
    const int c = shape_cmp(&out->plans[i].plan, &out->plans[j].plan);
    return c ? c : i - j;
}

/* A cheap lower bound of a plan's bound (step_bound_memo), for the search's lazy bounds (bound_shown):
 * its floor, the linear layers' GEMMs and the blocking MP collectives (the expert all-to-alls, Megatron's
 * MP collectives) alone. Every micro-batch of every plan runs the GEMMs of the blocks and the head and
 * the blocks' MP collectives at sizes set by MP, micro-batch, EP, CP, SP and the TP overlap
 * (zp_shape_block; recompute, Pa, offload, the ZeRO stage and pipelines add ops around them, never take
 * one away). So with T the least of micro-batches 0 and 1's time in those ops in a plan of one stage, no
 * recompute, no extra work and 2 micro-batches (micro-batch 1 with what it caches from micro-batch 0:
 * FP8's weight casts), a step of m micro-batches over P stages holds at least m T of them, and its
 * slowest stage's compute stream at least m T / P: the floor, m T / P, is at most the bound (the
 * non-pipeline bound's compute stream, the pipeline bound's max over its stages), the collectives at the
 * least time both take (zp_collcost_least_time, on the plan's own fabric). Scaled by 1 - 1e-5 against the
 * sums' rounding and the bound's own 1 - 1e-6. tests/unit/test_search.c checks floor <= bound over every
 * fitting plan of searches. The GEMMs and the collectives' kinds and sizes are kept per shape. */
enum { FLOOR_COLLS = 16 }; /* distinct collectives kept per shape: one more is left out (a lower floor) */
typedef struct {
    int64_t mp, b, ep, cp;
    int sp, tpo;
    double g[2];            /* s: micro-batches 0 and 1's GEMMs */
    int ncoll;
    zp_op coll[FLOOR_COLLS]; /* ... their MP collectives, each kind and size once */
    int count[FLOOR_COLLS][2];
} gemm_floor;

typedef struct {
    gemm_floor *v;
    int n, cap;
} gemm_floors;

static void floor_pass(const zp_model *model, const zp_profile *prof, const zp_plan *plan, const zp_cluster *cluster,
                       const opmemo_tab *memo, gemm_floor *f)
{
    zp_plan q = *plan;
    q.pp = 1;
    q.vstages = 1;
    q.schedule = ZP_PP_1F1B;
    q.pp_first = q.pp_last = q.pp_layout_n = q.pp_acc = 0; /* one stage: no layout */
    q.pp_layout = NULL;
    q.grad_accum = 2;
    q.pa = q.pa_cpu = 0;
    q.offload = ZP_OFFLOAD_NONE;
    zp_plan_set_recompute(&q, ZP_RECOMPUTE_NONE);
    zp_schedule sc;
    if (zp_schedule_build(model, &q, &sc) != ZP_OK)
        return; /* no floor: 0 */
    for (int i = 0; i < sc.n[ZP_STREAM_COMPUTE]; i++) {
        const zp_op *op = &sc.ops[ZP_STREAM_COMPUTE][i];
        if (op->micro < 0 || op->micro > 1)
            continue;
        if (zp_op_table[op->type].cost == zp_cost_gemm) {
            f->g[op->micro] += op_bound_memo(memo, prof, op, q.mp, cluster->gpus_per_node);
        } else if (zp_op_table[op->type].cls == ZP_OPC_COLL && zp_op_part(op) == ZP_PART_MP_COMM &&
                   !(q.ep_overlap && zp_op_table[op->type].coll == ZP_COLL_ALLTOALL)) {
            /* (with EP overlap a step's all-to-alls may all be hidden: none in the floor) */
            int k = 0;
            while (k < f->ncoll && (f->coll[k].type != op->type || f->coll[k].bytes != op->bytes))
                k++;
            if (k == f->ncoll && f->ncoll < FLOOR_COLLS)
                f->coll[f->ncoll++] = *op;
            if (k < f->ncoll)
                f->count[k][op->micro]++;
        }
    }
    zp_schedule_free(&sc);
}

static double floor_bound(const zp_model *model, const zp_profile *prof, const zp_plan *p, const zp_cluster *cluster,
                          const char *platform_file, const opmemo_tab *memo, gemm_floors *gf)
{
    int i = 0;
    while (i < gf->n && !(gf->v[i].mp == p->mp && gf->v[i].b == p->micro_batch && gf->v[i].ep == p->ep &&
                          gf->v[i].cp == p->cp && gf->v[i].sp == p->sp && gf->v[i].tpo == p->tp_overlap))
        i++;
    if (i == gf->n) {
        if (gf->n == gf->cap) {
            const int cap = gf->cap ? 2 * gf->cap : 64;
            gemm_floor *nv = realloc(gf->v, (size_t)cap * sizeof *nv);
            if (!nv)
                return 0.0; /* no floor: the plan gets its bound */
            gf->v = nv;
            gf->cap = cap;
        }
        gemm_floor *f = &gf->v[gf->n++];
        memset(f, 0, sizeof *f);
        *f = (gemm_floor){.mp = p->mp, .b = p->micro_batch, .ep = p->ep, .cp = p->cp, .sp = p->sp,
                          .tpo = p->tp_overlap};
        floor_pass(model, prof, p, cluster, memo, f);
    }
    const gemm_floor *f = &gf->v[i];
    double t[2] = {f->g[0], f->g[1]};
    if (f->ncoll > 0 && !platform_file) { /* a user's links: the bound has no collectives either */
        const zp_sim_input in = {.model = model, .plan = p, .cluster = cluster, .profile = prof};
        zp_net n;
        if (zp_fabric_setup(&in, 0, &n) == ZP_OK)
            for (int k = 0; k < f->ncoll; k++) {
                const double c = zp_collcost_least_time(&n, &f->coll[k]);
                t[0] += c * f->count[k][0];
                t[1] += c * f->count[k][1];
            }
    }
    return (double)p->grad_accum * fmin(t[0], t[1]) / (double)(p->pp > 0 ? p->pp : 1) * (1.0 - 1e-5);
}

double zp_search_step_floor(const zp_model *model, const zp_profile *prof, const zp_plan *plan,
                            const zp_cluster *cluster, const char *platform_file)
{
    gemm_floors gf = {0};
    const double t = floor_bound(model, prof, plan, cluster, platform_file, NULL, &gf);
    free(gf.v);
    return t;
}

/* Every fitting plan's bound (zp_search_step_bound), the plans taken by the shape of their ops
 * (cmp_shape) so that one kernel-time memo serves a run of plans alike, emptied where the shape changes:
 * the memo returns the very doubles it was given (op_bound_memo), so the bounds are those of each plan
 * alone (tests/unit/test_search.c). deepseek-v3 on 2,048 GPUs: 7,987 bounds, half of them in the same
 * GEMMs as the plan before. With bound_shown the dominated plans (marked before) get none: 3,354
 * bounds there instead of 7,987. */
static zp_status bound_plans(const zp_search_req *r, const zp_profile *prof, zp_search_result *out,
                             unsigned char *floor)
{
    gemm_floors gf = {0};
    int *order = malloc((size_t)(out->n > 0 ? out->n : 1) * sizeof *order), n = 0;
    opmemo_tab memo = {calloc(OPMEMO, sizeof(opmemo)), OPMEMO};
    if (!order || !memo.v) {
        free(order);
        free(memo.v);
        return ZP_FAIL(ZP_ENOMEM, "out of memory");
    }
    for (int i = 0; i < out->n; i++)
        if (out->plans[i].fits && !(r->bound_shown > 0 && out->plans[i].dominated))
            order[n++] = i;
    qsort_r(order, (size_t)n, sizeof *order, cmp_shape, out);
    for (int k = 0; k < n; k++) {
        zp_eval *e = &out->plans[order[k]];
        if (k > 0 && shape_cmp(&out->plans[order[k - 1]].plan, &e->plan) != 0)
            memset(memo.v, 0, OPMEMO * sizeof *memo.v); /* another shape: other ops */
        if (floor) { /* lazy: the floor now, the bound where it is needed (settle) */
            e->bound_s = floor_bound(r->model, prof, &e->plan, r->cluster, r->platform_file, &memo, &gf);
            floor[order[k]] = 1;
        } else {
            e->bound_s = step_bound_memo(r->model, prof, &e->plan, r->cluster, r->platform_file, 0, &memo);
        }
    }
    free(gf.v);
    free(order);
    free(memo.v);
    return ZP_OK;
}

/* The fitting plans worth simulating, into c (as many as fit), each with its bound: not those dominated,
 * nor (beyond ZP_SIM_MAX_FULL_NODES nodes) those whose reduced simulation is not exact. */
static zp_status screen_plans(const zp_search_req *r, const zp_profile *prof, zp_search_result *out,
                              const twins *tw, unsigned char *floor, cand *c, int *ncand)
{
    const int64_t gpn = zp_cluster_domain(r->cluster); /* the simulation's nodes are NVLink domains */
    const int too_large = (r->gpus + gpn - 1) / gpn > ZP_SIM_MAX_FULL_NODES; /* for the full simulation */
    for (int i = 0; i < out->n; i++) /* first: bound_plans may leave them out */
        if (out->plans[i].fits && dominated(out, tw, i)) {
            out->plans[i].unsimulated = "the same batch as a plan with less extra work (Pa, Pa+cpu and offload "
                                        "buy memory, not speed)";
            out->plans[i].dominated = 1;
            out->n_dominated++;
        }
    ZP_TRY(bound_plans(r, prof, out, floor));
    *ncand = 0;
    for (int i = 0; i < out->n; i++) {
        zp_eval *e = &out->plans[i];
        if (!e->fits || e->dominated)
            continue;
        if (too_large) { /* only plans whose reduced simulation is exact (or asked for): the others keep
                            their bound */
            zp_sim_input in = {.model = r->model, .plan = &e->plan, .cluster = r->cluster,
                               .profile = prof, .platform_file = r->platform_file, .sim = r->sim,
                               .oversubscription = r->oversubscription};
            zp_sim_mode mode;
            zp_status st = zp_engine_pick(&in, &mode, NULL, 0);
            if (st != ZP_OK)
                return st;
            if (mode != ZP_SIM_REDUCED) {
                e->unsimulated = "it needs the full simulation, which takes at most 2048 nodes";
                out->n_too_large++;
                continue;
            }
        }
        c[(*ncand)++] = (cand){.idx = i, .bound = throughput_bound(e), .floor = floor && floor[i]};
    }
    qsort(c, (size_t)*ncand, sizeof *c, cmp_cand);
    return ZP_OK;
}

/* The simulation rounds' state: candidates by bound, the jobs of a round, the best so far. */
typedef struct {
    cand *c;
    int nc, next, done;
    zp_sim_job *jobs;
    int *which;
    int at_once;
    double best;           /* samples/s */
    int best_idx;
    zp_sim_input best_in;
    twins tw;              /* the plans' runs of possible twins (dominated, raise_dominated) */
    unsigned char *floor;  /* lazy bounds (bound_shown > 0): per plan, 1 while its bound_s is its floor; else NULL */
    opmemo_tab memo;       /* ... the kernel-time memo of the bounds computed then */
    int memo_idx;          /* ... the plan whose shape the memo holds (-1: none) */
} rounds;

/* Lazy bounds: plan i's own bound in place of its floor (its throughput bound falls or stays). */
static void tighten(const zp_search_req *r, const zp_profile *prof, zp_search_result *out, rounds *R, int i)
{
    zp_eval *e = &out->plans[i];
    if (R->memo_idx >= 0 && shape_cmp(&out->plans[R->memo_idx].plan, &e->plan) != 0)
        memset(R->memo.v, 0, OPMEMO * sizeof *R->memo.v); /* another shape: other ops */
    R->memo_idx = i;
    e->bound_s = step_bound_memo(r->model, prof, &e->plan, r->cluster, r->platform_file, 0,
                                 R->memo.v ? &R->memo : NULL);
    R->floor[i] = 0;
}

/* c[at..n) sorted by cmp_cand on their bounds, floors or not: until c[at] holds a plan's own bound, that
 * plan's bound is computed and it moves back to its place. Then c[at] is the candidate that sorting every
 * plan's own bound would have put there: a floor's throughput is at least its plan's, so no plan behind
 * c[at] has a bound above it (ties by index, as cmp_cand). */
static void settle(const zp_search_req *r, const zp_profile *prof, zp_search_result *out, rounds *R, cand *c, int at,
                   int n)
{
    while (at < n && c[at].floor) {
        cand x = c[at];
        tighten(r, prof, out, R, x.idx);
        x.bound = throughput_bound(&out->plans[x.idx]);
        x.floor = 0;
        int j = at;
        for (; j + 1 < n && cmp_cand(&c[j + 1], &x) < 0; j++)
            c[j] = c[j + 1];
        c[j] = x;
    }
}

/* One round: up to at_once candidates whose bound can still beat the best, simulated at once; 0 in *n when
 * none is left. */
static zp_status simulate_round(const zp_search_req *r, const zp_profile *prof, zp_search_result *out, rounds *R,
                                int *n)
{
    *n = 0;
    while (*n < R->at_once && R->next < R->nc && R->done + *n < r->max_simulated) {
        if (R->floor)
            settle(r, prof, out, R, R->c, R->next, R->nc);
        const cand *k = &R->c[R->next];
        if (k->bound <= R->best)
            break; /* sorted by bound: no later candidate can win either */
        R->next++;
        R->which[*n] = k->idx;
        R->jobs[*n] = (zp_sim_job){.in = {.model = r->model, .plan = &out->plans[k->idx].plan, .cluster = r->cluster,
                                          .profile = prof, .platform_file = r->platform_file, .sim = r->sim,
                                          .oversubscription = r->oversubscription}};
        (*n)++;
    }
    if (*n == 0)
        return ZP_OK;
    ZP_TRY(zp_simrun_many(R->jobs, *n, *n));
    for (int j = 0; j < *n; j++) {
        zp_eval *e = &out->plans[R->which[j]];
        if (R->jobs[j].st != ZP_OK)
            return ZP_FAIL(R->jobs[j].st, "simulating stage %d, MP %lld, micro-batch %lld: %s", e->plan.stage,
                           (long long)e->plan.mp, (long long)e->plan.micro_batch, R->jobs[j].err);
        apply_sim(r->model, e, &R->jobs[j].res);
        if (e->samples_per_s > R->best) {
            R->best = e->samples_per_s;
            R->best_idx = R->which[j];
            R->best_in = R->jobs[j].in;
        }
    }
    return ZP_OK;
}

/* Lazy bounds: the answer shows the best bound_shown fitting plans not dominated, the simulated ones first
 * (cmp_eval), then those bounded by throughput. The unsimulated ones that can be among those get their own
 * bound: in the order of their bounds (settle), until bound_shown - simulated of them have one and the
 * next one's floor is below the last one's bound (ties computed too: cmp_eval orders them by plan). A plan
 * left with its floor is bounded below the rows shown, as its own bound would be. */
static zp_status show_bounds(const zp_search_req *r, const zp_profile *prof, zp_search_result *out, rounds *R)
{
    const int want = r->bound_shown - R->done;
    if (!R->floor || want <= 0)
        return ZP_OK;
    cand *c = malloc((size_t)(out->n > 0 ? out->n : 1) * sizeof *c);
    if (!c)
        return ZP_FAIL(ZP_ENOMEM, "out of memory");
    int n = 0, found = 0;
    for (int i = 0; i < out->n; i++) {
        const zp_eval *e = &out->plans[i];
        if (e->fits && !e->dominated && e->unsimulated)
            c[n++] = (cand){.idx = i, .bound = throughput_bound(e), .floor = R->floor[i]};
    }
    qsort(c, (size_t)n, sizeof *c, cmp_cand);
    double last = HUGE_VAL; /* samples/s: the bound of the last row shown */
    for (int at = 0; at < n && !(found >= want && c[at].bound < last); at++) {
        settle(r, prof, out, R, c, at, n);
        if (found < want && out->plans[c[at].idx].bound_s > 0) { /* a row with no bound is not ranked so */
            found++;
            last = c[at].bound;
        }
    }
    free(c);
    return ZP_OK;
}

/* Why each candidate left unsimulated was: beaten by its bound, or past the simulations allowed; every
 * fitting plan left unsimulated then shows its bound. A floor at or below the best is its plan's bound's
 * verdict too; one above it is replaced by the plan's bound to tell. */
static zp_status mark_unsimulated(const zp_search_req *r, const zp_profile *prof, zp_search_result *out, rounds *R)
{
    for (int k = R->next; k < R->nc; k++) {
        zp_eval *e = &out->plans[R->c[k].idx];
        if (R->c[k].floor && R->c[k].bound > R->best) {
            tighten(r, prof, out, R, R->c[k].idx);
            R->c[k].bound = throughput_bound(e);
            R->c[k].floor = 0;
        }
        if (R->c[k].bound <= R->best) {
            e->unsimulated = "its kernels alone, or its collectives alone, take longer than the best simulated step";
            out->n_pruned++;
        } else {
            e->unsimulated = "more plans than the simulations allowed";
            out->n_capped++;
        }
    }
    ZP_TRY(show_bounds(r, prof, out, R));
    for (int i = 0; i < out->n; i++)
        if (out->plans[i].fits && out->plans[i].unsimulated)
            apply_bound(r->model, &out->plans[i], out->plans[i].unsimulated);
    raise_dominated(r->model, out, &R->tw);
    return ZP_OK;
}

static zp_status simulate_plans(const zp_search_req *r, zp_search_result *out)
{
    zp_profile builtin, typed;
    search_profile(r, &builtin, &typed);
    const zp_profile *prof = &typed;
    int nfit = 0;
    for (int i = 0; i < out->n; i++)
        nfit += out->plans[i].fits;
    if (nfit == 0)
        return ZP_OK; /* nothing to simulate */
    rounds R = {.best_idx = -1, .memo_idx = -1};
    if (r->bound_shown > 0) { /* lazy bounds: the floors first (bound_plans), the bounds as needed */
        R.floor = calloc((size_t)out->n, 1);
        R.memo = (opmemo_tab){calloc(OPMEMO, sizeof(opmemo)), OPMEMO}; /* NULL: every op priced alike */
    }
    R.at_once = r->jobs > 0 ? r->jobs : (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (R.at_once < 1)
        R.at_once = 1;
    R.c = calloc((size_t)nfit, sizeof *R.c);
    R.jobs = calloc((size_t)R.at_once, sizeof *R.jobs);
    R.which = calloc((size_t)R.at_once, sizeof *R.which);
    zp_status st = !R.c || !R.jobs || !R.which || (r->bound_shown > 0 && !R.floor) ? ZP_FAIL(ZP_ENOMEM, "out of memory") : twins_find(out, &R.tw);
    const int ready = st == ZP_OK;
    if (st == ZP_OK)
        st = screen_plans(r, prof, out, &R.tw, R.floor, R.c, &R.nc);
#ifdef __GLIBC__
    /* every simulation is a fork of this process, which copies its page tables: the schedules the walk and
     * the bounds built and freed leave ~250 MB of free heap mapped (deepseek-v3 at 15,360 sequences), so
     * give it back first (no figure changes: only free pages go) */
    malloc_trim(0);
#endif
    const double t0 = zp_time_now_s();
    while (st == ZP_OK && R.next < R.nc && R.done < r->max_simulated) {
        int n;
        st = simulate_round(r, prof, out, &R, &n);
        if (n == 0)
            break;
        R.done += n;
        if (r->progress && R.floor) /* the next candidate's own bound */
            settle(r, prof, out, &R, R.c, R.next, R.nc);
        if (r->progress) /* the total shrinks to what will run once the bound ends the search */
            r->progress(r->progress_ctx, R.done,
                        R.next >= R.nc || R.c[R.next].bound <= R.best ? R.done
                                                                      : (R.nc < r->max_simulated ? R.nc : r->max_simulated));
    }
    out->n_simulated = R.done;
    if (ready) {
        const zp_status mst = mark_unsimulated(r, prof, out, &R);
        if (st == ZP_OK)
            st = mst;
    }
    if (st == ZP_OK && r->trace_path && R.best_idx >= 0) {
        zp_sim_job tj = {.in = R.best_in};
        tj.in.trace_path = r->trace_path;
        st = zp_simrun_one(&tj);
    }
    out->sim_wall_s = zp_time_now_s() - t0;
    free(R.c);
    free(R.jobs);
    free(R.which);
    twins_free(&R.tw);
    free(R.floor);
    free(R.memo.v);
    return st;
}



/* Appends x to a growable array (a struct of v, n, cap: elements of x's type), its room doubled from `first`
 * when full; returns ZP_ENOMEM from the caller (the array kept) when the memory is not there. */
#define VEC_PUSH(vec, x, first)                                                                                \
    do {                                                                                                       \
        if ((vec)->n == (vec)->cap) {                                                                          \
            const int cap_ = (vec)->cap ? 2 * (vec)->cap : (first);                                            \
            void *nv_ = realloc((vec)->v, (size_t)cap_ * sizeof *(vec)->v);                                    \
            if (!nv_)                                                                                          \
                return ZP_FAIL(ZP_ENOMEM, "out of memory");                                                    \
            (vec)->v = nv_;                                                                                    \
            (vec)->cap = cap_;                                                                                 \
        }                                                                                                      \
        (vec)->v[(vec)->n++] = (x);                                                                            \
    } while (0)

typedef struct {
    zp_eval *v;
    int n, cap;
} evec;

static zp_status evec_push(evec *e, const zp_eval *x)
{
    VEC_PUSH(e, *x, 64);
    return ZP_OK;
}

/* Largest divisor of n that is <= limit (n >= 1, limit >= 1). */
static int64_t largest_divisor_le(int64_t n, int64_t limit)
{
    for (int64_t d = limit < n ? limit : n; d > 1; d--)
        if (n % d == 0)
            return d;
    return 1;
}

static zp_status push_eval_known(const zp_search_req *r, zp_plan *p, int64_t b, int64_t accum, const zp_memory *known,
                                 evec *out)
{
    p->micro_batch = b;
    p->grad_accum = accum;
    zp_eval e;
    ZP_TRY(search_eval(r->model, r->cluster, zp_search_usable_mem(r), r->host_mem, p, known, &e));
    return evec_push(out, &e);
}

static zp_status push_eval(const zp_search_req *r, zp_plan *p, int64_t b, int64_t accum, evec *out)
{
    return push_eval_known(r, p, b, accum, NULL, out);
}

/* A micro-batch b of a pipeline plan with `per_rank` sequences per DP rank: it divides them, and the
 * interleaved schedule needs the micro-batches a multiple of the stages. */
static int pipeline_micro_ok(const zp_plan *p, int64_t per_rank, int64_t b)
{
    if (per_rank % b != 0)
        return 0;
    return p->schedule != ZP_PP_INTERLEAVED || (per_rank / b) % p->pp == 0;
}

/* The fits tests of one pipeline candidate at its micro-batches: eval_pipeline changes only the plan's
 * micro-batch and accumulation, so (b, m) keys the test (zp_memory_estimate is a function of the model and
 * the plan), and the micro-batches its bisection tried are not estimated again when evaluated. The test
 * stops at the first stage above the memory (zp_memory_fits_plan), so a plan that does not fit has no
 * estimate kept (evaluated, it is estimated anew), but at micro-batch 1, estimated whole: a candidate that
 * does not fit there is evaluated there to say why. */
#define PIPE_MEMO 64
typedef struct {
    int n;
    int64_t b[PIPE_MEMO], m[PIPE_MEMO];
    int fits[PIPE_MEMO], known[PIPE_MEMO]; /* known: mem is the plan's zp_memory_estimate */
    zp_memory mem[PIPE_MEMO];
    int hint; /* the stage where the last test that failed stopped (zp_memory_fits_plan), -1 at first */
} pipe_memo;

static int pipe_memo_find(const pipe_memo *pm, int64_t b, int64_t m)
{
    for (int i = 0; i < pm->n; i++)
        if (pm->b[i] == b && pm->m[i] == m)
            return i;
    return -1;
}

static int pipe_memo_fits(pipe_memo *pm, const zp_search_req *r, const zp_plan *p)
{
    const int k = pipe_memo_find(pm, p->micro_batch, p->grad_accum);
    if (k >= 0)
        return pm->fits[k];
    const double usable = zp_search_usable_mem(r), host = zp_cluster_host_per_gpu(r->cluster, r->host_mem, r->gpus);
    zp_memory m;
    int known, fits;
    if (p->micro_batch == 1) {
        known = zp_memory_estimate(r->model, p, &m) == ZP_OK;
        fits = known && zp_memory_fits(&m, usable, host, NULL, 0);
    } else {
        known = fits = zp_memory_fits_plan(r->model, p, usable, host, &pm->hint, &m);
    }
    const int i = pm->n < PIPE_MEMO ? pm->n++ : PIPE_MEMO - 1; /* full: the last slot is reused */
    pm->b[i] = p->micro_batch;
    pm->m[i] = p->grad_accum;
    pm->fits[i] = fits;
    pm->known[i] = known;
    if (known)
        pm->mem[i] = m;
    return fits;
}

/* A pipeline plan at a fixed global batch: the micro-batch sets how many micro-batches fill the pipeline
 * (m = per_rank / b) and so what every stage holds in flight, so the fitting test runs at each b with its
 * own m (memory never shrinks as b grows at a fixed per_rank: the micro-batches in flight x b do not).
 * The largest b that fits, and the smaller powers of two (a smaller micro-batch shrinks the bubble, and
 * can win over the GEMMs' efficiency). */
static int pipeline_fits(const zp_search_req *r, zp_plan *p, int64_t per_rank, int64_t b, pipe_memo *pm)
{
    p->micro_batch = b;
    p->grad_accum = per_rank / b > 0 ? per_rank / b : 1;
    return pipe_memo_fits(pm, r, p);
}

/* push_eval of a pipeline candidate at micro-batch b, its memory from the memo when estimated before. */
static zp_status push_pipeline(const zp_search_req *r, zp_plan *p, int64_t b, int64_t accum, pipe_memo *pm,
                               evec *out)
{
    const int k = pipe_memo_find(pm, b, accum);
    return push_eval_known(r, p, b, accum, k >= 0 && pm->known[k] ? &pm->mem[k] : NULL, out);
}

static zp_status eval_pipeline(const zp_search_req *r, zp_plan *p, int64_t per_rank, evec *out)
{
    if (p->schedule == ZP_PP_INTERLEAVED && per_rank % p->pp != 0)
        return ZP_OK; /* no micro-batch makes the micro-batches a multiple of the stages */
    pipe_memo pm = {.n = 0, .hint = -1};
    /* the largest b that fits, by bisection (memory grows with b), then the largest b below it that the
     * batch and the schedule take */
    int64_t lo = 0, hi = (per_rank < ZP_MAX_MICRO_BATCH ? per_rank : ZP_MAX_MICRO_BATCH) + 1;
    while (hi - lo > 1) {
        const int64_t mid = lo + (hi - lo) / 2;
        if (pipeline_fits(r, p, per_rank, mid, &pm))
            lo = mid;
        else
            hi = mid;
    }
    int64_t best = 0;
    for (int64_t b = lo; b >= 1 && !best; b--)
        if (pipeline_micro_ok(p, per_rank, b) && pipeline_fits(r, p, per_rank, b, &pm))
            best = b;
    if (!best) /* does not fit even at 1: evaluated there to say why */
        return push_pipeline(r, p, 1, per_rank, &pm, out);
    ZP_TRY(push_pipeline(r, p, best, per_rank / best, &pm, out));
    for (int64_t b = 1; b < best; b *= 2)
        if (pipeline_micro_ok(p, per_rank, b))
            ZP_TRY(push_pipeline(r, p, b, per_rank / b, &pm, out));
    return ZP_OK;
}

/* Evaluates one candidate: the micro-batch the options fix (given; the global batch over the
 * accumulation given; with --exact the global batch over DP, else 1), or the largest that fits (with a
 * global batch: that divides it) and the next smaller one (half of it, or the next divisor): a smaller
 * micro-batch can win when it lets gradient accumulation or communication overlap differ. With the
 * default batch (`target` sequences, no batch option given) each DP rank runs ceil(target / DP)
 * sequences or a little more: the fewest accumulation steps whose micro-batch fits, the micro-batch
 * balanced over them (and one step more as the smaller candidate). */
static zp_status eval_candidate(const zp_search_req *r, int64_t target, zp_plan *p, evec *out)
{
    const double host = zp_cluster_host_per_gpu(r->cluster, r->host_mem, r->gpus), usable = zp_search_usable_mem(r);
    const int accum_given = given(r, ZP_SEARCH_ACCUM);
    const int64_t given_accum = accum_given ? r->base.grad_accum : 1;
    if (target > 0) {
        const int64_t replicas = zp_plan_replicas(p);
        int64_t per = (target + replicas - 1) / replicas;
        if (p->pp > 1) { /* whole micro-batches per pipeline flush; interleaving wants a multiple of the stages */
            if (p->schedule == ZP_PP_INTERLEAVED)
                per = (per + p->pp - 1) / p->pp * p->pp;
            return eval_pipeline(r, p, per, out);
        }
        int64_t b = zp_memory_max_micro_batch(r->model, p, usable, host, per);
        if (b < 1)
            return push_eval(r, p, 1, per, out); /* does not fit even at 1: evaluated there to say why */
        int64_t accum = (per + b - 1) / b;
        b = (per + accum - 1) / accum;
        ZP_TRY(push_eval(r, p, b, accum, out));
        int64_t smaller = (per + accum) / (accum + 1); /* ceil(per / (accum + 1)) */
        if (b > 1 && smaller < b)
            ZP_TRY(push_eval(r, p, smaller, accum + 1, out));
        return ZP_OK;
    }
    int64_t per_rank = 0; /* sequences per DP rank per step, when the global batch is fixed */
    if (given(r, ZP_SEARCH_GLOBAL_BATCH)) {
        if (r->global_batch % zp_plan_replicas(p) != 0)
            return ZP_OK; /* these degrees cannot keep the batch */
        per_rank = r->global_batch / zp_plan_replicas(p);
    }
    int64_t fixed = given(r, ZP_SEARCH_MICRO_BATCH) ? r->base.micro_batch : 0; /* 0: searched */
    if (!fixed && per_rank && accum_given) {
        if (per_rank % given_accum != 0)
            return ZP_OK;
        fixed = per_rank / given_accum;
    }
    if (!fixed && r->exact)
        fixed = per_rank ? per_rank : 1;
    if (fixed) {
        if (per_rank && per_rank % fixed != 0)
            return ZP_OK;
        const int64_t m = per_rank ? per_rank / fixed : given_accum;
        if (p->pp > 1 && p->schedule == ZP_PP_INTERLEAVED && m % p->pp != 0)
            return ZP_OK; /* the interleaved schedule needs the micro-batches a multiple of the stages */
        return push_eval(r, p, fixed, m, out);
    }
    if (p->pp > 1 && !per_rank && p->schedule == ZP_PP_INTERLEAVED && given_accum % p->pp != 0)
        return ZP_OK;
    if (p->pp > 1 && per_rank)
        return eval_pipeline(r, p, per_rank, out);
    if (p->grad_accum < 1 || accum_given)
        p->grad_accum = given_accum;
    int64_t cap = per_rank ? per_rank : ZP_MAX_MICRO_BATCH;
    int64_t b = zp_memory_max_micro_batch(r->model, p, usable, host, cap);
    if (b < 1)
        return push_eval(r, p, 1, per_rank ? per_rank : given_accum, out); /* evaluated at 1 to say why */
    if (per_rank)
        b = largest_divisor_le(per_rank, b);
    ZP_TRY(push_eval(r, p, b, per_rank ? per_rank / b : given_accum, out));
    int64_t smaller = per_rank ? largest_divisor_le(per_rank, b - 1) : b / 2;
    if (b > 1 && smaller >= 1 && smaller < b)
        ZP_TRY(push_eval(r, p, smaller, per_rank ? per_rank / smaller : given_accum, out));
    return ZP_OK;
}

int zp_search_bf16(const zp_search_req *r)
{
    if (given(r, ZP_SEARCH_BF16))
        return r->base.bf16;
    const zp_framework *f = zp_framework_get(r->framework);
    return !(f && f->fp16_only) && r->cluster && zp_cluster_has_bf16(r->cluster);
}

/* The default global batch in tokens: GPT-3's batch for its largest model not larger than this one
 * (Brown et al. 2020, Table 2.1: 0.5M tokens from 125M to 760M parameters, 1M at 1.3B and 2.7B, 2M at
 * 6.7B and 13B, 3.2M at 175B), the batch a team training a model of that size would start from. */
double zp_search_default_batch_tokens(double params)
{
    return params >= 175e9 ? 3.2e6 : params >= 6.7e9 ? 2e6 : params >= 1.3e9 ? 1e6 : 0.5e6;
}

int64_t zp_search_default_batch(const zp_model *model)
{
    double seqs = floor(zp_search_default_batch_tokens(zp_model_params(model)) / (double)model->seq + 0.5);
    return seqs < 1 ? 1 : (int64_t)seqs;
}

static int method_rank(const zp_eval *e)
{
    return strcmp(e->method, "simgrid") == 0 ? 0 : e->dominated ? 2 : strcmp(e->method, "bound") == 0 ? 1 : 3;
}

static int cmp_eval(const void *a, const void *b)
{
    const zp_eval *x = a, *y = b;
    if (x->fits != y->fits)
        return y->fits - x->fits;
    /* simulated plans before those bounded, bounded before those dominated and those only estimated: a
     * bound is never ranked above a simulated plan it has not beaten */
    int xs = method_rank(x), ys = method_rank(y);
    if (x->fits && xs != ys)
        return xs - ys;
    if (x->fits) { /* by tokens/s: plans of different global batches compare by throughput, not step */
        if (x->tokens_per_s != y->tokens_per_s)
            return x->tokens_per_s < y->tokens_per_s ? 1 : -1;
    } else if (x->mem.total != y->mem.total) {
        return x->mem.total < y->mem.total ? -1 : 1; /* closest to fitting first */
    }
    /* ties: the simpler plan first (lower stage, no offload, fewer options) */
    if (x->plan.stage != y->plan.stage)
        return x->plan.stage - y->plan.stage;
    if (x->plan.offload != y->plan.offload)
        return (int)x->plan.offload - (int)y->plan.offload;
    if (x->plan.mp != y->plan.mp)
        return x->plan.mp < y->plan.mp ? -1 : 1;
    if (x->plan.pa + x->plan.pa_cpu != y->plan.pa + y->plan.pa_cpu)
        return (x->plan.pa + x->plan.pa_cpu) - (y->plan.pa + y->plan.pa_cpu);
    if (x->plan.ep != y->plan.ep)
        return x->plan.ep < y->plan.ep ? -1 : 1;
    if (x->plan.pp != y->plan.pp)
        return x->plan.pp < y->plan.pp ? -1 : 1;
    if (x->plan.vstages != y->plan.vstages)
        return x->plan.vstages - y->plan.vstages;
    if (x->plan.sp != y->plan.sp)
        return x->plan.sp - y->plan.sp;
    return (int)zp_plan_recompute(&x->plan) - (int)zp_plan_recompute(&y->plan);
}

/* What a candidate's parallel shape adds to stage and MP: pipeline stages, schedule and chunks, sequence
 * parallelism, recompute. */
typedef struct {
    int64_t pp;
    zp_pp_schedule schedule;
    int vstages;
    int sp;
    zp_recompute recompute;
    int tp_overlap;    /* a zp_tp_overlap */
    int pp_acc;        /* the embedding and the loss counted in the split (zp_plan.pp_acc) */
    unsigned rc_modules; /* selective recompute's modules under --recompute-modules auto (zp_plan.rc_modules) */
} shape;

typedef struct {
    shape *v;
    int n, cap;
} shapes;

static zp_status shapes_push(shapes *x, shape s)
{
    VEC_PUSH(x, s, 32);
    return ZP_OK;
}

/* v chunks on each of P stages fit the model: they divide its layers evenly, or the uneven layout given
 * fits them. */
static int chunks_fit(const zp_search_req *r, int64_t P, int v, int64_t L)
{
    if (!zp_pp_uneven(&r->base))
        return v == 1 || L % (P * v) == 0;
    zp_plan q = r->base;
    q.pp = P;
    q.vstages = v;
    return zp_pp_fits(r->model, &q);
}

/* Schedules and chunks for P stages: the ones given; else 1F1B and interleaved 1F1B with every v >= 2 that
 * divides the layers per stage, or that divides them with the embedding and the loss counted (acc_fit)
 * (GPipe runs the same passes as 1F1B holding more micro-batches: taken when given only). */
static zp_status schedules_for(const zp_search_req *r, shape base, shapes *out)
{
    if (base.pp == 1) {
        base.schedule = ZP_PP_1F1B;
        base.vstages = 1;
        return shapes_push(out, base);
    }
    for (int sc = 0; sc < ZP_PP_NSCHEDULES; sc++) {
        if (given(r, ZP_SEARCH_SCHEDULE) ? sc != (int)r->base.schedule
                                         : (sc == ZP_PP_GPIPE || (r->exact && sc != ZP_PP_1F1B) ||
                                            (given(r, ZP_SEARCH_VSTAGES) && r->base.vstages > 1 &&
                                             sc != ZP_PP_INTERLEAVED)))
            continue;
        base.schedule = (zp_pp_schedule)sc;
        if (sc != ZP_PP_INTERLEAVED) {
            base.vstages = 1;
            if (!chunks_fit(r, base.pp, 1, r->model->layers))
                continue; /* a layout of virtual stages: interleaved only */
            ZP_TRY(shapes_push(out, base));
            continue;
        }
        const zp_framework *f = zp_framework_get(r->framework); /* valid: zp_search_validate */
        if (f->interleave_min_pp == 0 || base.pp < f->interleave_min_pp)
            continue; /* not in the framework's release (validate_framework refused it given) */
        const int64_t L = r->model->layers;
        for (int v = 2; v <= ZP_MAX_VSTAGES; v++) {
            if (given(r, ZP_SEARCH_VSTAGES) && v != r->base.vstages)
                continue;
            const int even = chunks_fit(r, base.pp, v, L);
            base.pp_acc = even ? 0 : acc_fit(r, f, base.pp, v, L);
            if (!even && !base.pp_acc)
                continue;
            base.vstages = v;
            ZP_TRY(shapes_push(out, base));
        }
        base.pp_acc = 0;
    }
    return ZP_OK;
}

/* TP overlap `tpo` for a shape of MP degree mp with sequence parallelism sp: the one asked (on every plan
 * that can run it: sequence-parallel over an MP group inside a node; an MP 1 plan has nothing to overlap), or
 * searched (ZP_SEARCH_TP_OVERLAP) off and the framework's form both, where a plan can run it. */
static int tp_overlap_wanted(const zp_search_req *r, const zp_framework *f, int64_t mp, int sp, int tpo)
{
    const int can = sp && mp > 1 && r->cluster && mp <= r->cluster->gpus_per_node;
    if (r->base.eager && tpo == ZP_TP_OVERLAP_ASYNC) /* torchtitan's async TP runs under torch.compile only */
        return 0;
    if (!given(r, ZP_SEARCH_TP_OVERLAP))
        return tpo == ZP_TP_OVERLAP_OFF || (can && tpo == f->tp_overlap);
    return tpo == (can ? r->base.tp_overlap : ZP_TP_OVERLAP_OFF);
}

/* --recompute-modules auto: selective recompute's module sets, cheapest recompute first, each adding what
 * the model has to the one before (Megatron-core's modules, vocab/zp_plan.c; what each keeps and costs again:
 * models/zp_model.c zp_model_rc_saved_layer, sim/zp_schedule.c modules_recompute):
 *  1. core_attn, Megatron-core's default (0);
 *  2. layernorm and moe_act: their forward again is elementwise kernels only, no GEMM;
 *  3. and mla_up_proj: MLA's Q, K and V up-projections, GEMMs of the latent width (DeepSeek-V3's recipe,
 *     report §3.3.2, is sets 2 and 3's modules);
 *  4. and mlp and shared_experts: the dense MLPs' and the shared experts' GEMMs.
 * The experts' own GEMMs (moe) are left to full recompute. A set the model adds nothing to is skipped. */
int zp_search_rc_ladder(const zp_model *m, unsigned out[ZP_RC_LADDER])
{
    const int64_t moe = m ? zp_model_moe_blocks(m) : 0;
    const unsigned step[ZP_RC_LADDER] = {
        0u, ZP_RCM_LAYERNORM | (moe > 0 ? (unsigned)ZP_RCM_MOE_ACT : 0u),
        m && m->attn == ZP_ATTN_MLA ? (unsigned)ZP_RCM_MLA_UP_PROJ : 0u,
        (m && moe < m->layers ? (unsigned)ZP_RCM_MLP : 0u) |
            (moe > 0 && m->shared_experts > 0 ? (unsigned)ZP_RCM_SHARED_EXPERTS : 0u)};
    int n = 0;
    unsigned have = 0u;
    for (int k = 0; k < ZP_RC_LADDER; k++)
        if (k == 0 || (step[k] & ~have)) {
            have |= step[k];
            out[n++] = have;
        }
    return n;
}

/* Every shape of (stage, degrees): sequence parallelism, recompute, TP overlap, schedule and chunks. */
static zp_status shapes_for(const zp_search_req *r, const zp_dim_ctx *c, shapes *out)
{
    out->n = 0;
    const int64_t mp = c->deg[ZP_DIM_TP], pp = c->deg[ZP_DIM_PP];
    const zp_framework *f = zp_framework_get(r->framework); /* valid: zp_search_validate */
    const int sp_given = given(r, ZP_SEARCH_SP), rc_given = given(r, ZP_SEARCH_RECOMPUTE);
    const int rc_asked = rc_given ? (int)zp_search_req_recompute(r) : -1;
    for (int sp = 0; sp <= 1; sp++) {
        if (sp_given ? sp != r->base.sp : (sp && (r->exact || mp == 1 || !f->sp)))
            continue;
        if (given(r, ZP_SEARCH_TP_OVERLAP) && r->base.tp_overlap > ZP_TP_OVERLAP_OFF && mp > 1 && !sp && !sp_given)
            continue; /* overlap asked: its plans are sequence-parallel (Megatron-core asserts it) */
        for (int rc = 0; rc < ZP_NRECOMPUTE; rc++) {
            /* checkpoint 0 without a recompute: no full recompute (a DeepSpeed config of no checkpoints) */
            int want = rc_given ? rc == rc_asked
                                : (!r->checkpoint ? rc != ZP_RECOMPUTE_FULL && (!r->exact || rc == ZP_RECOMPUTE_NONE)
                                                  : (!r->exact || rc == ZP_RECOMPUTE_FULL));
            if (!want || (rc == ZP_RECOMPUTE_SELECTIVE && !f->selective))
                continue;
            if (rc == ZP_RECOMPUTE_OP && rc_asked != ZP_RECOMPUTE_OP) /* torchtitan's: only when asked */
                continue;
            unsigned sets[ZP_RC_LADDER] = {0};
            const int nsets = rc == ZP_RECOMPUTE_SELECTIVE && r->rc_auto ? zp_search_rc_ladder(r->model, sets) : 1;
            for (int tpo = 0; tpo < ZP_NTP_OVERLAP; tpo++) {
                if (!tp_overlap_wanted(r, f, mp, sp, tpo))
                    continue;
                for (int k = 0; k < nsets; k++) {
                    shape base = {.pp = pp, .sp = sp, .recompute = (zp_recompute)rc, .tp_overlap = tpo,
                                  .rc_modules = sets[k]};
                    ZP_TRY(schedules_for(r, base, out));
                }
            }
        }
    }
    return ZP_OK;
}

/* The search: a walk over the dimension table (each dimension's degrees, given or searched), then over the
 * options of each set of degrees (shapes, ZeRO-R, offload), each candidate at its batches (eval_candidate). */
typedef struct {
    const zp_search_req *r;
    const zp_framework *fw;
    int stage;
    int64_t target;        /* the default batch every candidate runs, 0 when options fix it */
    int pa, pacpu, off;    /* given (or pinned by --exact), or ZP_DIM_ANY: searched */
    zp_dim_id order[ZP_NDIMS];
    int norder;
    shapes sh;
    evec all;
} walk;

/* The dimensions the search decides, from the table: first those that multiply the GPUs (TP, PP; DP is what
 * they leave), then those inside another (EP inside DP), whose range depends on it. */
static void walk_order(walk *w)
{
    w->norder = 0;
    for (int pass = 0; pass < 2; pass++)
        for (int d = 0; d < ZP_NDIMS; d++) {
            const zp_dim_type *t = zp_dims_get((zp_dim_id)d);
            if (t->next && (t->within == t->id) == (pass == 0))
                w->order[w->norder++] = t->id;
        }
}

/* What the request adds to the table's range: a pipeline needs micro-batches to fill it (a global batch
 * or an accumulation) unless given, ZeRO stage 0 or 1 (DeepSpeed's pipeline engine) unless stage and
 * pipeline are both given (torchtitan runs FSDP2 beside pipelines), and a DP degree
 * that divides the global batch. */
static int request_takes(const walk *w, const zp_dim_ctx *c, zp_dim_id id, int64_t d)
{
    const zp_search_req *r = w->r;
    if (id != ZP_DIM_PP || d == 1)
        return 1;
    if (w->fw->no_pipeline)
        return 0; /* the release has no pipeline engine */
    const int fill = given(r, ZP_SEARCH_GLOBAL_BATCH) || given(r, ZP_SEARCH_ACCUM);
    if (!deg_given(r, ZP_DIM_PP) && (r->exact || !fill))
        return 0;
    /* ZeRO-2/3 beside pipeline stages (torchtitan's FSDP2) when both are given (a shard group given asks for
     * them) and the framework runs them; not searched, so a search without them offers what it always has */
    const int sharded = given(r, ZP_SEARCH_STAGE) || r->base.shard_group > 0;
    if (w->stage >= 2 && (!sharded || !deg_given(r, ZP_DIM_PP) || w->stage > w->fw->pp_max_stage))
        return 0;
    const int64_t dp = r->gpus / c->deg[ZP_DIM_TP] / d;
    return !given(r, ZP_SEARCH_GLOBAL_BATCH) || r->global_batch % dp == 0;
}

/* The next degree of dimension `id` after `prev` (0: the first), 0 when none: the given one (or 1 under
 * --exact) if the decided degrees admit it, else the row's range. */
static int64_t walk_next(const walk *w, const zp_dim_ctx *c, zp_dim_id id, int64_t prev)
{
    const zp_dim_type *t = zp_dims_get(id);
    const int pinned = deg_given(w->r, id) || w->r->exact; /* --exact: what is not given is 1 */
    const int64_t fixed = deg_given(w->r, id) ? w->r->base.deg[id] : 1;
    if (pinned)
        return prev == 0 && (!t->admits || t->admits(c, fixed)) && request_takes(w, c, id, fixed) ? fixed : 0;
    for (int64_t d = t->next(c, prev); d > 0; d = t->next(c, d))
        if (request_takes(w, c, id, d))
            return d;
    return 0;
}

/* A candidate's plan: the degrees and shape decided, the ZeRO-R and offload choice, the rest the
 * request's. */
static void candidate_plan(const walk *w, const zp_dim_ctx *c, const shape *x, int ra, int off, zp_plan *p)
{
    const zp_search_req *r = w->r;
    *p = r->base;
    p->micro_batch = p->grad_accum = 1; /* the batch is eval_candidate's */
    for (int d = 0; d < ZP_NDIMS; d++)
        p->deg[d] = c->deg[d];
    p->dp = r->gpus / zp_dims_gpus(c->deg);
    p->stage = w->stage;
    p->schedule = x->schedule;
    p->vstages = x->vstages;
    p->pp_acc = x->pp_acc;
    p->sp = x->sp;
    p->tp_overlap = x->tp_overlap;
    zp_plan_set_recompute(p, x->recompute);
    if (r->rc_auto)
        p->rc_modules = x->rc_modules;
    p->pa = ra >= 1;
    p->pa_cpu = ra == 2;
    p->offload = (zp_offload)off;
    p->bf16 = zp_search_bf16(r);
    /* what the framework's release forces: fp32 gradients beside bf16 (Megatron-LM v2), no overlap */
    p->grad_bytes = p->bf16 && p->param_bytes == 2.0 && w->fw->bf16_fp32_grads ? 4.0 : r->base.grad_bytes;
    p->overlap_comm = r->base.overlap_comm && w->fw->overlap;
    /* the fp16 loss scaler's per-tensor checks (deepspeed-2020); bf16 and fp32 have no loss scaling */
    p->serial_scaler = w->fw->serial_scaler && !p->bf16 && p->param_bytes == 2.0;
    p->interleave_all_warmup = w->fw->interleave_all_warmup; /* Megatron-LM v2's warm-up at m = P */
    p->overlap_p2p_comm = r->base.overlap_p2p_comm && w->fw->p2p_overlap;
    p->overlap_p2p_warmup_flush = r->base.overlap_p2p_warmup_flush && p->overlap_p2p_comm;
    p->swiglu_fusion = r->base.swiglu_fusion && w->fw->swiglu_fusion;
    p->overlap_param_gather = r->base.overlap_param_gather && p->overlap_comm && (p->stage == 1 || p->stage == 2) &&
                              p->offload == ZP_OFFLOAD_NONE;
    p->nvme = off == ZP_OFFLOAD_NONE ? 0 : (off == ZP_OFFLOAD_PARAMS ? r->base.nvme : r->base.nvme & ZP_NVME_OPTIMIZER);
}

/* ZeRO-R activation options: none (0), Pa (1), Pa+cpu (2). Pa only matters with MP > 1; it partitions the
 * checkpoints of full recompute, which sequence parallelism shards already. */
static int ra_wanted(const walk *w, const shape *x, int64_t mp, int ra)
{
    const int pa = ra >= 1, pacpu = ra == 2;
    if (pacpu && !w->fw->pa_cpu)
        return 0;
    if (w->pacpu == 1) {
        if (!pacpu)
            return 0;
    } else if ((w->pacpu == 0 && pacpu) || (w->pa != ZP_DIM_ANY && pa != w->pa)) {
        return 0;
    }
    if ((x->recompute != ZP_RECOMPUTE_FULL || x->sp || w->r->base.ckpt_every > 1) && ra > 0)
        return 0; /* Pa partitions every block's checkpoint: not with every k-th block checkpointed */
    return !(mp == 1 && ra > 0 && w->pa != 1 && w->pacpu != 1); /* no MP group to partition across */
}

/* Offload: none, optimizer, params, as given and as the stage and the framework allow. */
static int off_wanted(const walk *w, int off)
{
    if ((w->off != ZP_DIM_ANY && off != w->off) || (off != ZP_OFFLOAD_NONE && !w->fw->offload))
        return 0;
    if (w->r->base.nvme && off == ZP_OFFLOAD_NONE)
        return 0; /* NVMe holds offloaded states: it implies offload */
    if (off != ZP_OFFLOAD_NONE && zp_plan_moments_saved(&w->r->base) > 0)
        return 0; /* narrower Adam moments are the GPU optimizer's (zp_plan_validate) */
    return !((off == ZP_OFFLOAD_OPTIMIZER && w->stage < 1) || (off == ZP_OFFLOAD_PARAMS && w->stage != 3));
}

/* The largest shard group of a plan inside one node: G dividing DP with G x DP's stride <= the node's GPUs,
 * below DP; 0 when none (DP fits a node already, or no such G above 1). */
static int64_t node_shard_group(const zp_search_req *r, const zp_plan *p)
{
    const int64_t gpn = r->cluster && r->cluster->gpus_per_node > 0 ? r->cluster->gpus_per_node : 1;
    const int64_t ds = zp_dims_stride(p->deg, ZP_DIM_DP);
    for (int64_t g = gpn / ds; g > 1; g--)
        if (g < p->dp && p->dp % g == 0)
            return g;
    return 0;
}

/* A candidate under hybrid sharding: its given shard group (kept where it divides DP, at ZeRO-2/3, without
 * EP or offload: zp_plan_validate), or with --shard-group auto full sharding and the node's shard group. */
static zp_status eval_shard_groups(walk *w, const zp_plan *p)
{
    const int hsdp = p->stage >= 2 && p->ep <= 1 && p->offload == ZP_OFFLOAD_NONE;
    if (p->shard_group > 0 && (p->dp % p->shard_group != 0 || !hsdp))
        return ZP_OK;
    zp_plan q = *p; /* eval_candidate may fill in the batch */
    ZP_TRY(eval_candidate(w->r, w->target, &q, &w->all));
    if (!w->r->shard_auto || !hsdp || p->shard_group > 0)
        return ZP_OK;
    q = *p;
    q.shard_group = node_shard_group(w->r, p);
    return q.shard_group > 0 ? eval_candidate(w->r, w->target, &q, &w->all) : ZP_OK;
}

/* Every candidate of one set of degrees. */
static zp_status walk_options(walk *w, const zp_dim_ctx *c)
{
    ZP_TRY(shapes_for(w->r, c, &w->sh));
    for (int k = 0; k < w->sh.n; k++)
        for (int ra = 0; ra < 3; ra++) {
            if (!ra_wanted(w, &w->sh.v[k], c->deg[ZP_DIM_TP], ra))
                continue;
            for (int off = 0; off <= 2; off++) {
                if (!off_wanted(w, off))
                    continue;
                zp_plan p;
                candidate_plan(w, c, &w->sh.v[k], ra, off, &p);
                ZP_TRY(eval_shard_groups(w, &p));
            }
        }
    return ZP_OK;
}

/* Dimension k of the walk's order and those after it, then the options. */
static zp_status walk_dims(walk *w, zp_dim_ctx *c, int k)
{
    if (k == w->norder)
        return walk_options(w, c);
    const zp_dim_id id = w->order[k];
    for (int64_t d = walk_next(w, c, id, 0); d > 0; d = walk_next(w, c, id, d)) {
        c->deg[id] = d;
        zp_status st = walk_dims(w, c, k + 1);
        if (st != ZP_OK)
            return st;
    }
    c->deg[id] = ZP_DIM_ANY;
    return ZP_OK;
}

/* Every candidate of the request, evaluated (memory, fit, analytic step). */
static zp_status walk_search(const zp_search_req *r, walk *w)
{
    /* Options given are constraints and the rest is searched; with --exact the rest takes its default
     * (no Pa, no offload, MP 1, no pipeline, no SP, full recompute), as a DeepSpeed config does. */
    w->r = r;
    w->fw = zp_framework_get(r->framework);
    const int open = r->exact ? 0 : ZP_DIM_ANY; /* what is not given: pinned off under --exact, else searched */
    w->pa = given(r, ZP_SEARCH_PA) ? r->base.pa : open;
    w->pacpu = given(r, ZP_SEARCH_PA_CPU) ? r->base.pa_cpu : open;
    w->off = given(r, ZP_SEARCH_OFFLOAD) ? (int)r->base.offload : (r->exact ? ZP_OFFLOAD_NONE : ZP_DIM_ANY);
    /* no batch option given: every candidate runs about the default batch, not the largest that fits */
    const uint32_t batch = ZP_SEARCH_GLOBAL_BATCH | ZP_SEARCH_MICRO_BATCH | ZP_SEARCH_ACCUM;
    w->target = r->default_batch && !r->exact && (r->searched & batch) == batch ? zp_search_default_batch(r->model) : 0;
    walk_order(w);
    for (int stage = 0; stage <= w->fw->max_stage; stage++) {
        if (given(r, ZP_SEARCH_STAGE) && stage != r->base.stage)
            continue;
        w->stage = stage;
        zp_dim_ctx c;
        zp_dims_ctx_init(&c, r->model, r->gpus, zp_cluster_domain(r->cluster), r->max_mp);
        ZP_TRY(walk_dims(w, &c, 0));
    }
    return ZP_OK;
}

zp_status zp_search_run(const zp_search_req *r, zp_search_result *out)
{
    memset(out, 0, sizeof *out);
    ZP_TRY(zp_search_validate(r));
    walk w = {0};
    zp_status st = walk_search(r, &w);
    free(w.sh.v);
    if (st != ZP_OK) {
        free(w.all.v);
        return st;
    }
    evec all = w.all;
    if (all.n == 0) {
        free(all.v);
        if (deg_given(r, ZP_DIM_EP) && r->base.ep > 1)
            return ZP_FAIL(ZP_EINVAL, "no plan satisfies the given options: --ep %lld must divide the data-parallel "
                                      "degree (GPUs / MP) of some MP degree searched", (long long)r->base.ep);
        return ZP_FAIL(ZP_EINVAL, "no plan satisfies the given options (check --global-batch against the "
                                  "data-parallel degrees: GPUs / (MP x PP); the interleaved schedule needs the "
                                  "micro-batches per step a multiple of --pp)");
    }
    qsort(all.v, (size_t)all.n, sizeof *all.v, cmp_eval);
    out->default_batch = w.target;
    out->plans = all.v;
    out->n = all.n;
    for (int i = 0; i < all.n; i++)
        out->n_fit += all.v[i].fits;
    if (r->simulate) {
        zp_status sst = simulate_plans(r, out);
        if (sst != ZP_OK) {
            zp_search_result_free(out);
            return sst;
        }
        for (int i = 0; i < out->n; i++) /* the simulated or bounded steps' tokens/s and MFU */
            zp_units_fill(r->model, r->cluster, &out->plans[i]);
        qsort(out->plans, (size_t)out->n, sizeof *out->plans, cmp_eval);
    }
    return ZP_OK;
}

void zp_search_result_free(zp_search_result *r)
{
    if (!r)
        return;
    free(r->plans);
    r->plans = NULL;
    r->n = r->n_fit = 0;
}
