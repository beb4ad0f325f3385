/* zp_report_compare.c — `zplan compare`: the best plan of each choice side by side, one row each, with
 * the DeepSpeed keys that select it (see zp_report.h). */
#include <string.h>

#include "zp_report.h"

enum {
    C_CHOICE, C_FITS, C_STAGE, C_MP, C_DP, C_MICRO, C_ACCUM, C_GLOBAL, C_OPTIONS, C_DS, C_GPU_GB, C_HOST_GB, C_STEP,
    C_SAMPLES, C_TOKENS_GPU, C_MFU, C_TFLOPS, C_METHOD, C_REASON, C_NCOLS
};

/* v shown as `num` (already formatted), after `mark` when bound; exact in CSV and JSON */
static zp_status set_bounded_text(zp_table *t, int col, double v, int bound, const char *mark, const char *num)
{
    char text[64];
    snprintf(text, sizeof text, "%s%s", bound ? mark : "", num);
    return zp_table_set_num_text(t, col, v, text);
}

static zp_status set_bounded(zp_table *t, int col, double v, int bound, const char *mark, const char *fmt)
{
    char num[48];
    snprintf(num, sizeof num, fmt, v);
    return set_bounded_text(t, col, v, bound, mark, num);
}

static zp_status compare_table(const zp_compare *c, zp_table **out)
{
    static const zp_col cols[C_NCOLS] = {
        [C_CHOICE] = {"choice", "Choice"},
        [C_FITS] = {"fits", "Fits"},
        [C_STAGE] = {"stage", "Stage"},
        [C_MP] = {"mp", "MP"},
        [C_DP] = {"dp", "DP"},
        [C_MICRO] = {"micro_batch", "Micro"},
        [C_ACCUM] = {"grad_accum", "Accum"},
        [C_GLOBAL] = {"global_batch", "Global"},
        [C_OPTIONS] = {"options", "ZeRO-R / options"},
        [C_DS] = {"deepspeed", "DeepSpeed keys"},
        [C_GPU_GB] = {"gpu_mem_gb", "GPU GB"},
        [C_HOST_GB] = {"host_mem_gb", "Host GB"},
        [C_STEP] = {"step_time_s", "Step (s)"},
        [C_SAMPLES] = {"samples_per_s", "Samples/s"},
        [C_TOKENS_GPU] = {"tokens_per_s_per_gpu", "Tokens/s/GPU"},
        [C_MFU] = {"mfu", "MFU"},
        [C_TFLOPS] = {"tflops_per_gpu", "Exec TFLOPs/GPU"},
        [C_METHOD] = {"method", "Method"},
        [C_REASON] = {"reason", "Why not", NULL, ZP_COL_OMIT_UNSET},
    };
    zp_table *t = zp_table_new_cols("The best plan of each choice", C_NCOLS, cols);
    if (!t)
        return ZP_FAIL(ZP_ENOMEM, "out of memory");
    zp_status st = ZP_OK;
#define TRY_C(expr)            \
    do {                       \
        if ((st = (expr)) != ZP_OK) \
            goto fail;         \
    } while (0)
    for (int i = 0; i < c->n; i++) {
        const zp_compare_entry *e = &c->entries[i];
        const zp_eval *v = &e->plan;
        const zp_plan *p = &v->plan;
        char stage[32], opts[128], ds[320];
        snprintf(stage, sizeof stage, "%d %s", p->stage, zp_stage_get(p->stage)->name);
        zp_report_plan_options(p, opts, sizeof opts);
        zp_report_ds_keys(p, ds, sizeof ds);
        TRY_C(zp_table_add_row(t));
        TRY_C(zp_table_set_str(t, C_CHOICE, e->label));
        TRY_C(zp_table_set_bool(t, C_FITS, e->found));
        TRY_C(zp_table_set_str(t, C_STAGE, stage));
        TRY_C(zp_table_set_int(t, C_MP, p->mp));
        TRY_C(zp_table_set_int(t, C_DP, zp_plan_replicas(p)));
        TRY_C(zp_table_set_int(t, C_MICRO, p->micro_batch));
        TRY_C(zp_table_set_int(t, C_ACCUM, p->grad_accum));
        TRY_C(zp_table_set_num(t, C_GLOBAL, v->global_batch, "%.0f"));
        TRY_C(zp_table_set_str(t, C_OPTIONS, opts));
        TRY_C(zp_table_set_str(t, C_DS, ds));
        TRY_C(zp_table_set_num(t, C_GPU_GB, v->mem.total / 1e9, "%.1f"));
        TRY_C(zp_table_set_num(t, C_HOST_GB, v->mem.host / 1e9, "%.1f"));
        if (e->found) {
            const int bound = strcmp(v->method, "bound") == 0;
            char step[48], mfu[32];
            zp_report_seconds(v->time.total, step, sizeof step);
            TRY_C(set_bounded_text(t, C_STEP, v->time.total, bound, ">=", step));
            TRY_C(set_bounded(t, C_SAMPLES, v->samples_per_s, bound, "<=", "%.4g"));
            TRY_C(set_bounded(t, C_TOKENS_GPU, v->tokens_per_s_per_gpu, bound, "<=", "%.0f"));
            snprintf(mfu, sizeof mfu, "%.1f%%", 100.0 * v->mfu);
            TRY_C(set_bounded_text(t, C_MFU, v->mfu, bound, "<=", mfu));
            TRY_C(set_bounded(t, C_TFLOPS, v->tflops_per_gpu, bound, "<=", "%.1f"));
            TRY_C(zp_table_set_str(t, C_METHOD, v->method));
        } else {
            for (int k = C_STEP; k <= C_METHOD; k++)
                TRY_C(zp_table_set_str(t, k, "-"));
            TRY_C(zp_table_set_str(t, C_REASON, v->reason));
        }
    }
    TRY_C(zp_table_add_note(t, "Each row is the best plan the search finds with that choice fixed and everything "
                               "else as given or searched; a plan that does not fit shows the one nearest to "
                               "fitting and why. GB = 1e9 bytes; usable per GPU: %.4g GB (%.4g GB reserved).",
                            (c->gpu_mem - c->reserve) / 1e9, c->reserve / 1e9));
#undef TRY_C
    *out = t;
    return ZP_OK;
fail:
    zp_table_free(t);
    return st;
}

static zp_status compare_items(zp_doc *d, const void *ctx)
{
    const zp_compare *c = ctx;
    for (int i = 0; i < c->n; i++)
        if (c->entries[i].found) { /* the rows share --precision: one line, from the first that has a plan */
            ZP_TRY(zp_report_precision_fact(d, &c->entries[i].plan.plan, c->cluster));
            break;
        }
    zp_table *t = NULL;
    ZP_TRY(compare_table(c, &t));
    ZP_TRY(zp_doc_add_table(d, t));
    ZP_TRY(zp_doc_set_key(d, "plans", NULL));
    zp_eval fit[ZP_CHART_MAX_POINTS];
    int nfit = 0;
    for (int i = 0; i < c->n && nfit < ZP_CHART_MAX_POINTS; i++)
        if (c->entries[i].found)
            fit[nfit++] = c->entries[i].plan;
    if (nfit > 0) { /* HTML: the memory of each choice's plan as stacked bars */
        zp_chart ch;
        zp_report_memory_chart(fit, nfit, nfit, c->gpu_mem, &ch);
        for (int i = 0, k = 0; i < c->n && k < nfit; i++)
            if (c->entries[i].found)
                snprintf(ch.xcat[k++], sizeof ch.xcat[0], "%.39s", c->entries[i].label);
        ZP_TRY(zp_doc_add_chart(d, &ch));
        zp_doc_only(d, ZP_FMT_BIT(ZP_FMT_HTML));
    }
    return zp_report_legend(d);
}

zp_status zp_report_compare_doc(const zp_compare *c, zp_doc **out)
{
    char title[256];
    snprintf(title, sizeof title, "zplan compare: model %s on %lld GPU%s of %s", c->model->name, (long long)c->gpus,
             zp_report_plural(c->gpus),
             c->cluster->name);
    return zp_report_doc_build(title, compare_items, c, out);
}
