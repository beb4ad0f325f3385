/* zp_cli_verdict.c — the verdict on a launch a team already has (--megatron-args, --torchtitan, --nemo,
 * --ds-config): its step against the best plan its framework runs at the same global batch, and the one
 * change that gets most of the difference, named as the launch's own file names it (planner/zp_verdict.h). */
#include <stdio.h>
#include <string.h>

#include "zp_cli.h"
#include "zp_dispatch.h"
#include "zp_framework.h"
#include "zp_verdict.h"

static int runs(int kind, const zp_plan *p) { return zp_launch_runs((zp_launch_kind)kind, p); }

/* A step in seconds, three significant figures, and whole seconds from 1,000 s (never an exponent). */
typedef struct {
    char s[32];
} step_text;
static step_text step_of(double seconds)
{
    step_text t;
    snprintf(t.s, sizeof t.s, seconds < 999.5 ? "%.3g" : "%.0f", seconds);
    return t;
}

/* A plan in words: "ZeRO stage 1, TP 4 with SP, PP 8 (interleaved, 12 chunks a rank), DP 32, micro-batch 2 x 24,
 * selective recompute". */
static void describe(const zp_plan *p, char *buf, size_t len)
{
    const int tpo = zp_plan_tp_overlapped(p); /* --tp-comm-overlap */
    int n = snprintf(buf, len, "ZeRO stage %d, TP %lld%s%s%s", p->stage, (long long)p->mp, p->sp ? " with SP" : "",
                     tpo ? " overlapped " : "", tpo ? zp_tp_overlap_name((zp_tp_overlap)p->tp_overlap) : "");
    if (p->pp > 1 && n > 0 && (size_t)n < len)
        n += snprintf(buf + n, len - (size_t)n, ", PP %lld (%s, %d chunk%s a rank)", (long long)p->pp,
                      zp_pp_schedule_name(p->schedule), p->vstages, p->vstages == 1 ? "" : "s");
    if (p->cp > 1 && n > 0 && (size_t)n < len) /* context parallelism: DP below counts the batch's replicas */
        n += snprintf(buf + n, len - (size_t)n, ", CP %lld", (long long)p->cp);
    if (p->ep > 1 && n > 0 && (size_t)n < len) /* expert parallelism, its dispatcher and overlap */
        n += snprintf(buf + n, len - (size_t)n, ", EP %lld (%s%s)", (long long)p->ep,
                      zp_dispatch_get(p->dispatcher) ? zp_dispatch_get(p->dispatcher)->name : "?",
                      p->ep_overlap ? ", overlapped" : p->shared_overlap ? ", shared experts beside" : "");
    if (n > 0 && (size_t)n < len)
        n += snprintf(buf + n, len - (size_t)n, ", DP %lld, micro-batch %lld x %lld, %s recompute",
                      (long long)zp_plan_replicas(p),
                      (long long)p->micro_batch, (long long)p->grad_accum,
                      zp_plan_recompute(p) == ZP_RECOMPUTE_NONE ? "no" : zp_recompute_name(zp_plan_recompute(p)));
    if (p->selective && p->rc_modules && n > 0 && (size_t)n < len) { /* Megatron-core's --recompute-modules */
        n += snprintf(buf + n, len - (size_t)n, " of ");
        if (n > 0 && (size_t)n < len)
            n += zp_rc_module_text(p->rc_modules, ", ", buf + n, len - (size_t)n);
    }
    if (p->act_fp8_store && n > 0 && (size_t)n < len) /* --activation-func-fp8-input-store */
        n += snprintf(buf + n, len - (size_t)n, ", SwiGLU input kept in FP8");
    if (p->checkpoint && p->ckpt_every > 1 && n > 0 && (size_t)n < len) /* torchtitan's selective_ac_option k */
        n += snprintf(buf + n, len - (size_t)n, " of every %d%s block", p->ckpt_every,
                      p->ckpt_every == 2 ? "nd" : p->ckpt_every == 3 ? "rd" : "th");
    if (p->offload != ZP_OFFLOAD_NONE && n > 0 && (size_t)n < len)
        n += snprintf(buf + n, len - (size_t)n, ", offload %s", zp_offload_name(p->offload));
    if ((p->pa || p->pa_cpu) && n > 0 && (size_t)n < len)
        snprintf(buf + n, len - (size_t)n, ", %s", p->pa_cpu ? "Pa+cpu" : "Pa");
}

/* One setting's value in a plan, for "from -> to". */
static void knob_value(zp_knob k, const zp_plan *p, char *buf, size_t len)
{
    switch (k) {
    case ZP_KNOB_STAGE: snprintf(buf, len, "stage %d", p->stage); break;
    case ZP_KNOB_TP: snprintf(buf, len, "%lld%s", (long long)p->mp, p->sp ? " with SP" : ""); break;
    case ZP_KNOB_PP:
        snprintf(buf, len, "%lld (%s, %d chunk%s)", (long long)p->pp, zp_pp_schedule_name(p->schedule), p->vstages,
                 p->vstages == 1 ? "" : "s");
        break;
    case ZP_KNOB_MICRO: snprintf(buf, len, "%lld (x %lld)", (long long)p->micro_batch, (long long)p->grad_accum); break;
    case ZP_KNOB_RECOMPUTE:
        if (p->checkpoint && p->ckpt_every > 1)
            snprintf(buf, len, "full of every %d blocks", p->ckpt_every);
        else
            snprintf(buf, len, "%s", zp_recompute_name(zp_plan_recompute(p)));
        break;
    case ZP_KNOB_SP: snprintf(buf, len, "%s", p->sp ? "on" : "off"); break;
    default: snprintf(buf, len, "%s%s", zp_offload_name(p->offload), p->pa_cpu ? ", Pa+cpu" : p->pa ? ", Pa" : "");
    }
}

static void print_change(FILE *f, zp_launch_kind kind, const zp_eval *launch, const zp_verdict *v)
{
    char from[96], to[96];
    knob_value(v->change, &launch->plan, from, sizeof from);
    knob_value(v->change, &v->changed.plan, to, sizeof to);
    fprintf(f, "  one change:  %s: %s -> %s: %s s a step, %.1f%% MFU, %.1f TFLOP/s per GPU executed",
            zp_launch_key_of(kind, zp_knob_name(v->change)), from, to, step_of(v->changed.time.total).s,
            100.0 * v->changed.mfu, v->changed.tflops_per_gpu);
    if (launch->fits && v->has_best && launch->time.total > v->best.time.total)
        fprintf(f, " (%.0f%% of the gain)\n", 100.0 * (launch->time.total - v->changed.time.total) /
                                                  (launch->time.total - v->best.time.total));
    else
        fprintf(f, "%s\n", launch->fits ? "" : " (it fits)");
}

zp_status zp_cli_verdict(zp_cli_plan *o, const zp_search_result *res, FILE *f)
{
    const zp_launch_kind kind = o->a.launch ? (zp_launch_kind)o->a.launch_kind : ZP_LAUNCH_DEEPSPEED;
    const char *file = o->a.launch ? o->a.launch : o->a.ds_config;
    if (res->n == 0) {
        fprintf(f, "\nVerdict on %s (%s): its plan could not be evaluated\n", file, zp_launch_kind_name(kind));
        return ZP_OK;
    }
    const zp_eval *launch = &res->plans[0]; /* the launch's plan (a DeepSpeed config's "auto": its best) */
    zp_search_req req = o->a.r;
    if (kind == ZP_LAUNCH_DEEPSPEED)
        req.framework = ZP_FRAMEWORK_DEEPSPEED;
    zp_verdict v;
    ZP_TRY(zp_verdict_find(&req, launch, runs, (int)kind, &v));
    char desc[320];
    describe(&launch->plan, desc, sizeof desc);
    fprintf(f, "\nVerdict on %s (%s, %lld GPU%s, global batch %.0f)\n", file, zp_launch_kind_name(kind),
            (long long)o->a.r.gpus, o->a.r.gpus == 1 ? "" : "s", zp_plan_global_batch(&launch->plan));
    if (launch->fits)
        fprintf(f, "  your launch: %s s a step, %.1f%% MFU, %.1f TFLOP/s per GPU executed (%s): %s\n",
                step_of(launch->time.total).s, 100.0 * launch->mfu, launch->tflops_per_gpu,
                launch->method ? launch->method : "analytic", desc);
    else
        fprintf(f, "  your launch: does not fit: %s (%s)\n", launch->reason, desc);
    if (!v.has_best) {
        fprintf(f, "  best:        no plan %s runs fits at this batch\n", zp_launch_kind_name(kind));
        return ZP_OK;
    }
    describe(&v.best.plan, desc, sizeof desc);
    if (launch->fits && v.best.time.total >= launch->time.total * 0.99) {
        fprintf(f, "  best:        your launch (no plan its framework runs is 1%% faster at this batch; %d searches)\n",
                v.searches);
        return ZP_OK;
    }
    fprintf(f, "  best:        %s s a step, %.1f%% MFU, %.1f TFLOP/s per GPU executed: %s", step_of(v.best.time.total).s,
            100.0 * v.best.mfu, v.best.tflops_per_gpu, desc);
    if (launch->fits)
        fprintf(f, " (%.2fx faster, %.0f%% less time a step)\n", launch->time.total / v.best.time.total,
                100.0 * (1.0 - v.best.time.total / launch->time.total));
    else
        fputc('\n', f);
    if (v.has_change)
        print_change(f, kind, launch, &v);
    else
        fprintf(f, "  one change:  none of the launch's settings alone gets any of it (it takes several)\n");
    return ZP_OK;
}
