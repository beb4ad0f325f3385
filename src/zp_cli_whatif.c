/* `zplan --model M --gpus N ...`: the what-if search, and the answer in every format. Exit status 3 when
 * no plan fits (the answer then says what would). */
#include <stdio.h>

#include <stdlib.h>
#include <string.h>

#include "zp_cli.h"
#include "zp_dsconfig.h"
#include "zp_framework.h"
#include "zp_megatron.h"
#include "zp_nearmiss.h"
#include "zp_size.h"
#include "zp_torchtitan.h"
#include "zp_verdict.h"

static int runs(int kind, const zp_plan *p) { return zp_launch_runs((zp_launch_kind)kind, p); }

/* --emit-megatron-args, --emit-torchtitan: the best fitting plan the framework runs (Megatron-LM: stage 0-1,
 * no offload, no host checkpoints; torchtitan: DDP or FSDP, TP with SP), written with its simulated step (a
 * plan the search left as a bound is simulated first: zp_verdict_best_in). */
static zp_status emit_launch(zp_cli_plan *o, const zp_search_result *res, int torchtitan)
{
    const char *path = torchtitan ? o->a.emit_torchtitan : o->a.emit_megatron;
    const char *what = torchtitan ? "torchtitan job TOML" : "Megatron-LM arguments";
    int i = -1;
    zp_eval best;
    const zp_eval *e = &best;
    ZP_TRY(zp_verdict_best_in(&o->a.r, res, runs, torchtitan ? ZP_LAUNCH_TORCHTITAN : ZP_LAUNCH_MEGATRON, &best, &i,
                              NULL));
    if (i < 0)
        return ZP_FAIL(ZP_ERUNTIME, "no fitting, simulated plan is one %s runs (%s): no %s written to %s",
                       torchtitan ? "torchtitan" : "Megatron-LM",
                       torchtitan ? "DDP or FSDP, no offload or Pa, TP with SP"
                                  : "ZeRO stage 0-1, no offload, no Pa+cpu",
                       what, path);
    char step[96];
    snprintf(step, sizeof step, "step %.3g s, %.1f TFLOP/s per GPU (%s)", e->time.total, e->tflops_per_gpu,
             e->method ? e->method : "analytic");
    if (torchtitan)
        ZP_TRY(zp_torchtitan_write(&o->model, &e->plan, step, path));
    else
        ZP_TRY(zp_megatron_write_for(&o->model, &e->plan, o->a.r.framework, step, path));
    fprintf(stderr, "zplan: wrote %s: the %s of plan #%d%s, %s\n", path, what, i + 1,
            i == 0 ? " (the recommended one)" : torchtitan ? " (the best one torchtitan runs)"
                                                           : " (the best one Megatron-LM runs)",
            step);
    return ZP_OK;
}

/* What the framework a launch is written for does whatever the plan: Megatron-LM keeps bf16 models' gradients
 * in fp32 (arguments.py forces accumulate_allreduce_grads_in_fp32 with --bf16); torchtitan's SDPA runs
 * FlashAttention and its FSDP reduces in fp32 by default. The search prices its plans so, unless the options
 * said otherwise, so that the plan written is the plan simulated. */
static zp_status emit_conditions(zp_cli_plan *o)
{
    ZP_TRY(zp_cli_plan_prepare(o));
    zp_search_req *r = &o->a.r;
    const int op = zp_search_req_given(r, ZP_SEARCH_RECOMPUTE) && zp_search_req_recompute(r) == ZP_RECOMPUTE_OP;
    if (o->a.emit_megatron && (op || r->base.ckpt_every > 1))
        return ZP_FAIL(ZP_EINVAL, "--emit-megatron-args: %s is torchtitan's, not Megatron-LM's (use --emit-torchtitan)",
                       op ? "--recompute op" : "--checkpoint-every");
    const int narrow = zp_plan_moments_saved(&r->base) > 0;
    if (o->a.emit_torchtitan && (r->base.act_fp8_store || r->base.rc_modules || narrow))
        return ZP_FAIL(ZP_EINVAL, "--emit-torchtitan: %s is Megatron-core's: torchtitan has no such option (use "
                                  "--emit-megatron-args)",
                       r->base.act_fp8_store ? "--activation-func-fp8-input-store"
                       : narrow              ? "--adam-moments"
                                             : "--recompute-modules");
    if (o->a.emit_torchtitan && !r->base.swiglu_fusion && !r->base.eager)
        return ZP_FAIL(ZP_EINVAL, "--emit-torchtitan: --swiglu-fusion off is Megatron-LM's --no-bias-swiglu-fusion: "
                                  "torchtitan fuses a SwiGLU under torch.compile and runs it eager without (use "
                                  "--compile off, or --emit-megatron-args)");
    const int half = r->base.param_bytes == 2.0;
    if ((o->a.emit_torchtitan || (o->a.emit_megatron && zp_search_bf16(r))) && half && r->base.grad_bytes == 0) {
        r->base.grad_bytes = 4.0;
        fprintf(stderr, "zplan: %s: gradients in fp32 beside 16-bit parameters, as %s does\n",
                o->a.emit_torchtitan ? "--emit-torchtitan" : "--emit-megatron-args",
                o->a.emit_torchtitan ? "torchtitan's FSDP (mixed_precision_reduce float32)"
                                     : "Megatron-LM with --bf16");
    }
    if (o->a.emit_torchtitan && !r->base.flash_attn) {
        r->base.flash_attn = 1;
        fprintf(stderr, "zplan: --emit-torchtitan: attention as FlashAttention, as torchtitan's SDPA runs it\n");
    }
    return ZP_OK;
}

/* --max-model: the model becomes the largest of its shape (blocks varied) that a plan fits. */
static zp_status max_model(zp_cli_plan *o)
{
    zp_model big;
    int64_t layers;
    const int64_t asked = o->model.layers;
    ZP_TRY(zp_near_miss_max_model(&o->a.r, &big, &layers));
    if (layers == 0) {
        o->model.layers = 1; /* not one block fits: the answer is the near miss of a one-block model */
        snprintf(o->model_note, sizeof o->model_note, "--max-model: not one block of this shape fits");
        return ZP_OK;
    }
    o->model = big;
    char ps[32];
    zp_size_format(zp_model_params(&big), ps, sizeof ps);
    snprintf(o->model_note, sizeof o->model_note,
             "--max-model: the largest of this shape that fits has %lld blocks (%s parameters; %lld blocks do "
             "not fit; --model gave %lld)",
             (long long)layers, ps, (long long)layers + 1, (long long)asked);
    return ZP_OK;
}

static zp_status write_answer(const char *path, zp_format fmt, const zp_whatif *w)
{
    zp_cli_out out;
    ZP_TRY(zp_cli_out_open(path, &out));
    return zp_cli_out_close(&out, zp_report_whatif(out.f, fmt, w));
}

/* A model that torchtitan's TOML or Megatron-LM's arguments cannot state fails whichever plan is best: checked
 * before anything is printed. */
static zp_status launch_check(const zp_cli_plan *o)
{
    if (o->a.emit_torchtitan)
        ZP_TRY(zp_torchtitan_check_model(&o->model));
    if (o->a.emit_megatron)
        ZP_TRY(o->a.r.framework == ZP_FRAMEWORK_MEGATRON_2021 ? zp_megatron_check_model_v2(&o->model)
                                                             : zp_megatron_check_model(&o->model));
    return ZP_OK;
}

/* The launch files the best plan is written as (--emit-ds-config, --emit-megatron-args, --emit-torchtitan);
 * with no plan that fits, none (report_unwritten says so). */
static zp_status emit_files(zp_cli_plan *o, const zp_search_result *res, const zp_eval *best)
{
    if (!best)
        return ZP_OK;
    if (o->a.emit_ds) {
        ZP_TRY(zp_dsconfig_check(&best->plan));
        ZP_TRY(zp_dsconfig_write(&best->plan, o->model.layers, o->a.emit_ds));
        if (best->plan.mp > 1)
            fprintf(stderr, "zplan: wrote %s; run it with Megatron model parallelism %lld "
                            "(--tensor-model-parallel-size %lld)\n",
                    o->a.emit_ds, (long long)best->plan.mp, (long long)best->plan.mp);
        if (best->plan.ep > 1) /* a DeepSpeed config has no key for it: the MoE layer takes it */
            fprintf(stderr, "zplan: wrote %s; build the MoE layers with expert parallelism %lld "
                            "(deepspeed.moe.layer.MoE(ep_size=%lld, capacity_factor=%g), the optimizer's parameter "
                            "groups split by split_params_into_different_moe_groups_for_optimizer; Megatron-LM: "
                            "--expert-model-parallel-size %lld)\n",
                    o->a.emit_ds, (long long)best->plan.ep, (long long)best->plan.ep, best->plan.capacity_factor,
                    (long long)best->plan.ep);
    }
    if (o->a.emit_megatron)
        ZP_TRY(emit_launch(o, res, 0));
    if (o->a.emit_torchtitan)
        ZP_TRY(emit_launch(o, res, 1));
    return ZP_OK;
}

/* The answer (--format, and --report's HTML beside it), with every pipeline stage's memory of the recommended
 * plan, or the near miss when none fits; a launch judged (--ds-config, --megatron-args): its verdict after. */
static zp_status answer(zp_cli_plan *o, const zp_search_result *res, const zp_eval *best, const zp_near_miss *near)
{
    zp_whatif w;
    zp_cli_plan_whatif(o, res, &w);
    w.near = best ? NULL : near;
    zp_memory *stage_mem = NULL;
    if (best && best->plan.pp > 1 && (stage_mem = calloc((size_t)best->plan.pp, sizeof *stage_mem)) &&
        zp_memory_estimate_stages(&o->model, &best->plan, stage_mem, (int)best->plan.pp) == ZP_OK) {
        w.stage_mem = stage_mem;
        w.nstages = (int)best->plan.pp;
    }
    zp_status st = write_answer(o->a.out, o->a.fmt, &w);
    if (st == ZP_OK && o->a.report_html)
        st = write_answer(o->a.report_html, ZP_FMT_HTML, &w);
    /* on stdout with the text answer, else on stderr */
    if (st == ZP_OK && (o->a.launch || o->a.ds_config))
        st = zp_cli_verdict(o, res, !o->a.out && o->a.fmt == ZP_FMT_TEXT ? stdout : stderr);
    free(stage_mem);
    return st;
}

/* What was not written, said once the answer is out; the exit status. */
static int report_unwritten(const zp_cli_plan *o, const zp_eval *best, int traced)
{
    if (o->a.r.trace_path && traced)
        fprintf(stderr, "zplan: wrote %s: the recommended plan's simulated step as a Chrome trace (Perfetto)\n",
                o->a.r.trace_path);
    else if (o->a.r.trace_path)
        fprintf(stderr, "zplan: %s: no trace written to %s\n", best ? "no plan was simulated" : "no plan fits",
                o->a.r.trace_path);
    if (best)
        return 0;
    if (o->a.emit_ds)
        fprintf(stderr, "zplan: no plan fits: no DeepSpeed config written to %s\n", o->a.emit_ds);
    if (o->a.emit_megatron)
        fprintf(stderr, "zplan: no plan fits: no Megatron-LM arguments written to %s\n", o->a.emit_megatron);
    return zp_status_exit_code(ZP_ENOFIT);
}

static int zp_cli_whatif_body(zp_cli_plan *op)
{
    zp_cli_plan o = *op; /* by value: the request points at o.model */
    o.a.r.model = &o.model;
    zp_status st = ZP_OK;
    if (o.a.max_model) {
        if ((st = zp_cli_plan_prepare(&o)) != ZP_OK || (st = max_model(&o)) != ZP_OK)
            return zp_cli_fail(st);
    }
    /* a DeepSpeed config says only what DeepSpeed runs: the search stays within it */
    if (o.a.emit_ds && o.a.r.framework == ZP_FRAMEWORK_ANY) {
        o.a.r.framework = ZP_FRAMEWORK_DEEPSPEED;
        fprintf(stderr, "zplan: --emit-ds-config: planning within --framework deepspeed (what a DeepSpeed config "
                        "can say)\n");
    }
    if ((o.a.emit_megatron || o.a.emit_torchtitan) && (st = emit_conditions(&o)) != ZP_OK)
        return zp_cli_fail(st);
    /* the text and Markdown answers never show a dominated plan's figures (hidden rows: CSV and JSON hold
     * them; the HTML report's chart, a launch's verdict and the emitters' choice of plan may read them): no
     * bound of its own for those */
    const int text = (o.a.fmt == ZP_FMT_TEXT || o.a.fmt == ZP_FMT_MD) && !o.a.report_html && !o.a.launch &&
                     !o.a.ds_config && !o.a.emit_megatron && !o.a.emit_torchtitan && !o.a.emit_ds;
    o.a.r.bound_shown = text ? o.a.top : 0;
    zp_search_result res;
    if ((st = zp_cli_plan_search(&o, &res)) != ZP_OK)
        return zp_cli_fail(st);
    const zp_eval *best = NULL;
    for (int i = 0; i < res.n && !best; i++)
        if (res.plans[i].fits)
            best = &res.plans[i];
    zp_near_miss near;
    const int traced = best && res.n_simulated > 0; /* the search simulated the best plan again to trace it */
    if ((st = launch_check(&o)) != ZP_OK || (!best && (st = zp_near_miss_find(&o.a.r, &res, &near)) != ZP_OK))
        goto out;
    if ((st = emit_files(&o, &res, best)) == ZP_OK)
        st = answer(&o, &res, best, &near);
out:
    zp_search_result_free(&res);
    return st != ZP_OK ? zp_cli_fail(st) : report_unwritten(&o, best, traced);
}

int zp_cli_whatif(int argc, char **argv, const char *usage)
{
    return zp_cli_plan_main(ZP_CMD_WHATIF, "the what-if", "zplan", usage, argc, argv, zp_cli_whatif_body);
}
