/* `zplan --model M --gpus N ...`: the what-if search, and the answer in every format. */
#include <stdio.h>

#include <stdlib.h>

#include "zp_cli.h"
#include "zp_dsconfig.h"
#include "zp_megatron.h"

/* --emit-megatron-args: the best fitting plan Megatron-LM runs (stage 0-1, no offload, no host checkpoints). */
static zp_status emit_megatron(const zp_cli_plan *o, const zp_search_result *res)
{
    for (int i = 0; i < res->n; i++) {
        const zp_eval *e = &res->plans[i];
        if (!e->fits || zp_megatron_check(&e->plan) != ZP_OK)
            continue;
        ZP_TRY(zp_megatron_write(&o->model, &e->plan, o->a.emit_megatron));
        fprintf(stderr, "zplan: wrote %s: the Megatron-LM arguments of plan #%d%s\n", o->a.emit_megatron, i + 1,
                i == 0 ? " (the recommended one)" : " (the best one Megatron-LM runs)");
        return ZP_OK;
    }
    return ZP_FAIL(ZP_ERUNTIME, "no fitting plan is one Megatron-LM runs (ZeRO stage 0-1, no offload, no Pa+cpu): no "
                                "arguments written to %s",
                   o->a.emit_megatron);
}

int zp_cli_whatif(int argc, char **argv, const char *usage)
{
    zp_cli_plan o;
    zp_status st = zp_cli_plan_parse(ZP_CMD_WHATIF, "the what-if", argc, argv, &o);
    if (st != ZP_OK)
        return zp_cli_fail(st);
    if (o.a.help) {
        fputs(usage, stdout);
        return 0;
    }
    zp_search_result res;
    if ((st = zp_cli_plan_search(&o, &res)) != ZP_OK)
        return zp_cli_fail(st);
    if (o.a.emit_ds) {
        if (res.n_fit == 0) {
            zp_search_result_free(&res);
            return zp_cli_fail(ZP_FAIL(ZP_ERUNTIME, "no plan fits: no DeepSpeed config written to %s", o.a.emit_ds));
        }
        const zp_eval *best = NULL;
        for (int i = 0; i < res.n && !best; i++)
            if (res.plans[i].fits)
                best = &res.plans[i];
        if ((st = zp_dsconfig_write(&best->plan, o.model.layers, o.a.emit_ds)) != ZP_OK) {
            zp_search_result_free(&res);
            return zp_cli_fail(st);
        }
        if (best->plan.mp > 1)
            fprintf(stderr, "zplan: wrote %s; run it with Megatron model parallelism %lld "
                            "(--tensor-model-parallel-size %lld)\n",
                    o.a.emit_ds, (long long)best->plan.mp, (long long)best->plan.mp);
        if (best->plan.ep > 1) /* a DeepSpeed config has no key for it: the MoE layer takes it */
            fprintf(stderr, "zplan: wrote %s; build the MoE layers with expert parallelism %lld "
                            "(deepspeed.moe.layer.MoE(ep_size=%lld, capacity_factor=%g), the optimizer's parameter "
                            "groups split by split_params_into_different_moe_groups_for_optimizer; Megatron-LM: "
                            "--expert-model-parallel-size %lld)\n",
                    o.a.emit_ds, (long long)best->plan.ep, (long long)best->plan.ep, best->plan.capacity_factor,
                    (long long)best->plan.ep);
    }
    if (o.a.emit_megatron && (st = emit_megatron(&o, &res)) != ZP_OK) {
        zp_search_result_free(&res);
        return zp_cli_fail(st);
    }
    zp_whatif w;
    zp_cli_plan_whatif(&o, &res, &w);
    /* with pipeline stages, every stage's memory of the recommended plan */
    zp_memory *stage_mem = NULL;
    for (int i = 0; i < res.n; i++) {
        const zp_plan *bp = &res.plans[i].plan;
        if (!res.plans[i].fits)
            continue;
        if (bp->pp > 1 && (stage_mem = calloc((size_t)bp->pp, sizeof *stage_mem)) &&
            zp_memory_estimate_stages(&o.model, bp, stage_mem, (int)bp->pp) == ZP_OK) {
            w.stage_mem = stage_mem;
            w.nstages = (int)bp->pp;
        }
        break;
    }
    zp_cli_out out;
    st = zp_cli_out_open(o.a.out, &out);
    if (st == ZP_OK) {
        st = zp_report_whatif(out.f, o.a.fmt, &w);
        st = zp_cli_out_close(&out, st);
    }
    if (st == ZP_OK && o.a.report_html) {
        st = zp_cli_out_open(o.a.report_html, &out);
        if (st == ZP_OK) {
            st = zp_report_whatif(out.f, ZP_FMT_HTML, &w);
            st = zp_cli_out_close(&out, st);
        }
    }
    free(stage_mem);
    zp_search_result_free(&res);
    return st == ZP_OK ? 0 : zp_cli_fail(st);
}
