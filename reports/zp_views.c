#include "zp_views.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zp_memory.h"
#include "zp_report.h"
#include "zp_size.h"

#define TRY_D(expr)                \
    do {                           \
        zp_status s_ = (expr);     \
        if (s_ != ZP_OK) {         \
            zp_table_free(t);      \
            zp_doc_free(d);        \
            return s_;             \
        }                          \
    } while (0)

/* The best fitting plan of a request; *found = 0 when none fits. */
static zp_status best_plan(const zp_search_req *r, zp_eval *best, int *found)
{
    zp_search_result res;
    ZP_TRY(zp_search_run(r, &res));
    *found = 0;
    for (int i = 0; i < res.n; i++) {
        if (res.plans[i].fits) {
            *best = res.plans[i];
            *found = 1;
            break;
        }
    }
    zp_search_result_free(&res);
    return ZP_OK;
}

/* The columns plan_row fills: stage, MP, micro-batch, global batch, step, tokens/s per GPU, MFU, executed
 * TFLOP/s per GPU, PFLOP/s, method. */
#define ZP_VIEW_PLAN_COLS 10

static zp_status plan_row(zp_table *t, int col, const zp_eval *e, int found)
{
    if (!found) {
        for (int c = col; c < col + ZP_VIEW_PLAN_COLS; c++)
            ZP_TRY(zp_table_set_str(t, c, c == col ? "does not fit" : ""));
        return ZP_OK;
    }
    char stage[24];
    snprintf(stage, sizeof stage, "%d %s", e->plan.stage, zp_stage_get(e->plan.stage)->name);
    ZP_TRY(zp_table_set_str(t, col, stage));
    ZP_TRY(zp_table_set_num(t, col + 1, (double)e->plan.mp, "%.0f"));
    ZP_TRY(zp_table_set_num(t, col + 2, (double)e->plan.micro_batch, "%.0f"));
    ZP_TRY(zp_table_set_num(t, col + 3, e->global_batch, "%.0f"));
    char step[48], mfu[32];
    zp_report_seconds(e->time.total, step, sizeof step);
    ZP_TRY(zp_table_set_num_text(t, col + 4, e->time.total, step));
    ZP_TRY(zp_table_set_num(t, col + 5, e->tokens_per_s_per_gpu, "%.0f"));
    snprintf(mfu, sizeof mfu, "%.1f%%", 100.0 * e->mfu);
    ZP_TRY(zp_table_set_num_text(t, col + 6, e->mfu, mfu));
    ZP_TRY(zp_table_set_num(t, col + 7, e->tflops_per_gpu, "%.1f"));
    ZP_TRY(zp_table_set_num(t, col + 8, e->pflops, "%.2f"));
    ZP_TRY(zp_table_set_str(t, col + 9, e->method));
    return ZP_OK;
}

zp_status zp_view_scaling_doc(const zp_model *model, const zp_cluster *cluster, const int64_t *gpus,
                              const zp_eval *best, const int *found, int n, zp_doc **out)
{
    char title[200];
    snprintf(title, sizeof title, "Scaling of %s on %s: throughput against GPUs", model->name, cluster->name);
    zp_doc *d = zp_doc_new(title);
    zp_table *t = NULL;
    if (!d)
        return ZP_FAIL(ZP_ENOMEM, "out of memory");
    TRY_D(zp_doc_add_text(d, "The best plan on each GPU count (options not given are searched). %s.", ZP_FLOP_CONVENTION));
    static const char *const keys[] = {"gpus", "stage", "mp", "micro_batch", "global_batch", "step_time_s",
                                       "tokens_per_s_per_gpu", "mfu", "tflops_per_gpu", "pflops", "method"};
    static const char *const heads[] = {"GPUs", "Stage", "MP", "Micro", "Global", "Step (s)", "Tokens/s/GPU", "MFU",
                                        "Exec TFLOPs/GPU", "PFLOPs", "Method"};
    t = zp_table_new("Best plan per GPU count", 11, keys, heads);
    if (!t) {
        zp_doc_free(d);
        return ZP_FAIL(ZP_ENOMEM, "out of memory");
    }
    zp_chart per, agg;
    zp_chart_init(&per, ZP_CHART_LINE, "TFLOPs per GPU against GPUs", "GPUs", "TFLOPs per GPU");
    zp_chart_init(&agg, ZP_CHART_LINE, "Aggregate PFLOPs against GPUs", "GPUs", "PFLOPs");
    per.nseries = agg.nseries = 1;
    snprintf(per.series[0], sizeof per.series[0], "%.60s", model->name);
    snprintf(agg.series[0], sizeof agg.series[0], "%.60s", model->name);
    per.logx = agg.logx = 1;
    for (int i = 0; i < n && i < ZP_CHART_MAX_POINTS; i++) {
        TRY_D(zp_table_add_row(t));
        TRY_D(zp_table_set_num(t, 0, (double)gpus[i], "%.0f"));
        TRY_D(plan_row(t, 1, &best[i], found[i]));
        per.x[i] = agg.x[i] = (double)gpus[i];
        snprintf(per.xcat[i], sizeof per.xcat[i], "%lld", (long long)gpus[i]);
        snprintf(agg.xcat[i], sizeof agg.xcat[i], "%lld", (long long)gpus[i]);
        per.y[0][i] = found[i] ? best[i].tflops_per_gpu : NAN;
        agg.y[0][i] = found[i] ? best[i].pflops : NAN;
        per.npoints = agg.npoints = i + 1;
    }
    double g0 = 0; /* one global batch across the points, or each point's says so */
    int differ = 0;
    for (int i = 0; i < n; i++)
        if (found[i]) {
            differ |= g0 > 0 && best[i].global_batch != g0;
            g0 = g0 > 0 ? g0 : best[i].global_batch;
        }
    if (differ)
        TRY_D(zp_table_add_note(t, "The global batch differs between the points: each runs the default batch rounded "
                                   "up to whole sequences per DP rank (its Global column); tokens/s and MFU compare "
                                   "them, --global-batch holds one."));
    zp_status st = zp_doc_add_table(d, t);
    t = NULL;
    if (st == ZP_OK)
        st = zp_doc_add_chart(d, &per);
    if (st == ZP_OK)
        st = zp_doc_add_chart(d, &agg);
    if (st != ZP_OK) {
        zp_doc_free(d);
        return st;
    }
    *out = d;
    return ZP_OK;
}

zp_status zp_view_sizes(const zp_search_req *base, const zp_model *models, int n, int64_t baseline_gpus, zp_doc **out)
{
    char title[200];
    snprintf(title, sizeof title, "Throughput against model size on %s: ZeRO and the MP-only baseline",
             base->cluster->name);
    zp_doc *d = zp_doc_new(title);
    zp_table *t = NULL;
    if (!d)
        return ZP_FAIL(ZP_ENOMEM, "out of memory");
    TRY_D(zp_doc_add_text(d, "ZeRO: the best plan on %lld GPUs (options not given are searched). Baseline: "
                             "Megatron-LM model parallelism with plain data parallelism on %lld GPUs (stage 0, no "
                             "ZeRO-R, MP up to the GPU count, across nodes when needed). %s.",
                          (long long)base->gpus, (long long)baseline_gpus, ZP_FLOP_CONVENTION));
    static const char *const keys[] = {"model", "params_b", "zero_stage", "zero_mp", "zero_micro_batch",
                                       "zero_global_batch", "zero_step_time_s", "zero_tokens_per_s_per_gpu",
                                       "zero_mfu", "zero_tflops_per_gpu", "zero_pflops", "zero_method",
                                       "baseline_mp", "baseline_micro_batch", "baseline_tflops_per_gpu", "speedup"};
    static const char *const heads[] = {"Model", "Params (B)", "ZeRO stage", "MP", "Micro", "Global", "Step (s)",
                                        "Tokens/s/GPU", "MFU", "Exec TFLOPs/GPU", "PFLOPs", "Method", "Baseline MP",
                                        "Micro", "Baseline TFLOPs/GPU", "Speed-up"};
    t = zp_table_new("ZeRO against the baseline, per model", 16, keys, heads);
    if (!t) {
        zp_doc_free(d);
        return ZP_FAIL(ZP_ENOMEM, "out of memory");
    }
    zp_chart c;
    zp_chart_init(&c, ZP_CHART_LINE, "TFLOPs per GPU against model size", "model (billions of parameters)",
                  "TFLOPs per GPU");
    c.nseries = 2;
    snprintf(c.series[0], sizeof c.series[0], "ZeRO (%lld GPUs)", (long long)base->gpus);
    snprintf(c.series[1], sizeof c.series[1], "baseline (%lld GPUs)", (long long)baseline_gpus);
    for (int i = 0; i < n && i < ZP_CHART_MAX_POINTS; i++) {
        zp_search_req z = *base, b = *base;
        z.model = b.model = &models[i];
        z.trace_path = b.trace_path = NULL;
        z.progress = b.progress = NULL;
        b.gpus = baseline_gpus;
        b.base.stage = 0;
        b.base.cb = b.base.md = 0;
        b.base.pa = b.base.pa_cpu = 0;
        b.base.offload = ZP_OFFLOAD_NONE;
        zp_search_req_give(&b, ZP_SEARCH_STAGE | ZP_SEARCH_PA | ZP_SEARCH_PA_CPU | ZP_SEARCH_OFFLOAD);
        zp_search_req_open(&b, ZP_SEARCH_DIM(ZP_DIM_TP));
        b.max_mp = baseline_gpus;
        zp_eval ez, eb;
        int fz, fb;
        TRY_D(best_plan(&z, &ez, &fz));
        TRY_D(best_plan(&b, &eb, &fb));
        double psi = zp_model_params(&models[i]);
        TRY_D(zp_table_add_row(t));
        TRY_D(zp_table_set_str(t, 0, models[i].name));
        TRY_D(zp_table_set_num(t, 1, psi / 1e9, "%.3g"));
        TRY_D(plan_row(t, 2, &ez, fz));
        /* plan_row wrote its ZP_VIEW_PLAN_COLS columns into 2..11 */
        const int bc = 2 + ZP_VIEW_PLAN_COLS;
        if (fb) {
            TRY_D(zp_table_set_num(t, bc, (double)eb.plan.mp, "%.0f"));
            TRY_D(zp_table_set_num(t, bc + 1, (double)eb.plan.micro_batch, "%.0f"));
            TRY_D(zp_table_set_num(t, bc + 2, eb.tflops_per_gpu, "%.1f"));
        } else {
            TRY_D(zp_table_set_str(t, bc, "does not fit"));
            TRY_D(zp_table_set_str(t, bc + 1, ""));
            TRY_D(zp_table_set_str(t, bc + 2, ""));
        }
        if (fz && fb)
            TRY_D(zp_table_set_num(t, bc + 3, ez.tflops_per_gpu / eb.tflops_per_gpu, "%.1fx"));
        else
            TRY_D(zp_table_set_str(t, bc + 3, ""));
        c.x[i] = psi / 1e9;
        snprintf(c.xcat[i], sizeof c.xcat[i], "%s", models[i].name);
        c.y[0][i] = fz ? ez.tflops_per_gpu : NAN;
        c.y[1][i] = fb ? eb.tflops_per_gpu : NAN;
        c.npoints = i + 1;
        if (base->progress)
            base->progress(base->progress_ctx, i + 1, n);
    }
    zp_status st = zp_doc_add_table(d, t);
    if (st == ZP_OK)
        st = zp_doc_add_chart(d, &c);
    if (st != ZP_OK) {
        zp_doc_free(d);
        return st;
    }
    *out = d;
    return ZP_OK;
}

/* The paper's ZeRO configurations (§10.5): C1 = Pos+CB+MD; C2 = C1+Pa; C3 = Pos+g+CB+MD; C4 = C3+Pa;
 * C5 = C4+Pa+cpu. */
static const struct {
    const char *name;
    int stage, pa, pa_cpu;
} g_configs[5] = {{"C1", 1, 0, 0}, {"C2", 1, 1, 0}, {"C3", 2, 0, 0}, {"C4", 2, 1, 0}, {"C5", 2, 1, 1}};

/* The configurations' table: memory and throughput columns named after their models. NULL: out of memory. */
static zp_table *configs_table(const zp_model *mem_model, const zp_model *speed_model)
{
    static const char *const keys[] = {"config", "stage", "pa", "pa_cpu", "largest_model_b", "memory_gb",
                                       "memory_fits", "micro_batch", "tflops_per_gpu", "method"};
    char mh[64], th[64];
    snprintf(mh, sizeof mh, "%.40s memory (GB/GPU)", mem_model->name);
    snprintf(th, sizeof th, "%.45s TFLOPs/GPU", speed_model->name);
    const char *heads[] = {"Config", "Stage", "Pa", "Pa+cpu", "Largest model (B)", mh, "Fits", "Micro", th, "Method"};
    return zp_table_new("Configurations", 10, keys, heads);
}

/* The fastest plan of speed_model under configuration p (its MP, stage, Pa, Pa+cpu; no offload; the
 * micro-batch searched): *e, or *found = 0 when none fits. */
static zp_status configs_speed(const zp_search_req *base, const zp_model *speed_model, const zp_plan *p, zp_eval *e,
                               int *found)
{
    zp_search_req r = *base;
    r.model = speed_model;
    r.base.mp = p->mp;
    r.base.stage = p->stage;
    r.base.pa = p->pa;
    r.base.pa_cpu = p->pa_cpu;
    r.base.offload = ZP_OFFLOAD_NONE;
    zp_search_req_give(&r, ZP_SEARCH_DIM(ZP_DIM_TP) | ZP_SEARCH_STAGE | ZP_SEARCH_PA | ZP_SEARCH_PA_CPU |
                               ZP_SEARCH_OFFLOAD);
    zp_search_req_open(&r, ZP_SEARCH_MICRO_BATCH);
    r.trace_path = NULL;
    r.progress = NULL;
    return best_plan(&r, e, found);
}

/* One configuration's row: p, the largest model that fits (parameters), the memory model's plan `mem` and
 * the fastest plan e (found = 0: none fits). */
static zp_status configs_row(zp_table *t, const char *name, const zp_plan *p, double largest, const zp_eval *mem,
                             const zp_eval *e, int found)
{
    ZP_TRY(zp_table_add_row(t));
    ZP_TRY(zp_table_set_str(t, 0, name));
    ZP_TRY(zp_table_set_num(t, 1, p->stage, "%.0f"));
    ZP_TRY(zp_table_set_bool(t, 2, p->pa));
    ZP_TRY(zp_table_set_bool(t, 3, p->pa_cpu));
    ZP_TRY(zp_table_set_num(t, 4, largest / 1e9, "%.3g"));
    ZP_TRY(zp_table_set_num(t, 5, mem->mem.total / 1e9, "%.1f"));
    ZP_TRY(zp_table_set_bool(t, 6, mem->fits));
    if (found) {
        ZP_TRY(zp_table_set_num(t, 7, (double)e->plan.micro_batch, "%.0f"));
        ZP_TRY(zp_table_set_num(t, 8, e->tflops_per_gpu, "%.1f"));
        ZP_TRY(zp_table_set_str(t, 9, e->method));
    } else {
        ZP_TRY(zp_table_set_str(t, 7, "-"));
        ZP_TRY(zp_table_set_str(t, 8, "does not fit"));
        ZP_TRY(zp_table_set_str(t, 9, ""));
    }
    return ZP_OK;
}

zp_status zp_view_configs(const zp_search_req *base, const zp_model *mem_model, int64_t mem_batch,
                          const zp_model *speed_model, zp_doc **out)
{
    int64_t mp = zp_search_req_given(base, ZP_SEARCH_DIM(ZP_DIM_TP)) ? base->base.mp : 16;
    if (base->gpus % mp != 0)
        return ZP_FAIL(ZP_EINVAL, "--mp: %lld does not divide the %lld GPUs", (long long)mp, (long long)base->gpus);
    char title[200];
    snprintf(title, sizeof title, "ZeRO-R configurations C1-C5 on %lld GPU%s of %s, MP %lld", (long long)base->gpus,
             zp_report_plural(base->gpus), base->cluster->name, (long long)mp);
    zp_doc *d = zp_doc_new(title);
    zp_table *t = NULL;
    if (!d)
        return ZP_FAIL(ZP_ENOMEM, "out of memory");
    TRY_D(zp_doc_add_text(d, "C1 = Pos+CB+MD, C2 = C1+Pa, C3 = Pos+g+CB+MD, C4 = C3+Pa, C5 = C4+Pa+cpu (ZeRO paper, "
                             "Figures 6-8). Largest model: GPT-2-like, micro-batch 1. Memory: %s at micro-batch %lld. "
                             "Throughput: %s at the largest micro-batch that fits. %s.",
                          mem_model->name, (long long)mem_batch, speed_model->name, ZP_FLOP_CONVENTION));
    t = configs_table(mem_model, speed_model);
    if (!t) {
        zp_doc_free(d);
        return ZP_FAIL(ZP_ENOMEM, "out of memory");
    }
    zp_chart big, speed, mem;
    zp_chart_init(&big, ZP_CHART_LINE, "Largest model that fits", "configuration", "billions of parameters");
    zp_chart_init(&speed, ZP_CHART_LINE, "Throughput", "configuration", "TFLOPs per GPU");
    big.nseries = speed.nseries = 1;
    snprintf(big.series[0], sizeof big.series[0], "MP %lld", (long long)mp);
    snprintf(speed.series[0], sizeof speed.series[0], "%.60s", speed_model->name);
    zp_eval mems[5];
    double host = zp_cluster_host_per_gpu(base->cluster, base->host_mem, base->gpus);
    for (int i = 0; i < 5; i++) {
        zp_plan p;
        zp_plan_default(&p, base->gpus / mp);
        p.mp = mp;
        p.stage = g_configs[i].stage;
        p.pa = g_configs[i].pa;
        p.pa_cpu = g_configs[i].pa_cpu;
        p.bucket = base->base.bucket;
        p.k_optimizer = base->base.k_optimizer;
        double largest = 0;
        TRY_D(zp_memory_largest_fitting(&p, base->gpu_mem, host, &largest));
        p.micro_batch = mem_batch;
        TRY_D(zp_search_eval(mem_model, base->cluster, base->gpu_mem, base->host_mem, &p, &mems[i]));
        zp_eval e;
        int found;
        TRY_D(configs_speed(base, speed_model, &p, &e, &found));
        TRY_D(configs_row(t, g_configs[i].name, &p, largest, &mems[i], &e, found));
        snprintf(big.xcat[i], sizeof big.xcat[i], "%s", g_configs[i].name);
        snprintf(speed.xcat[i], sizeof speed.xcat[i], "%s", g_configs[i].name);
        big.x[i] = speed.x[i] = i;
        big.y[0][i] = largest / 1e9;
        speed.y[0][i] = found ? e.tflops_per_gpu : NAN;
        if (base->progress)
            base->progress(base->progress_ctx, i + 1, 5);
    }
    big.npoints = speed.npoints = 5;
    zp_report_memory_chart(mems, 5, 5, base->gpu_mem, &mem);
    snprintf(mem.title, sizeof mem.title, "Memory per GPU of %s at micro-batch %lld", mem_model->name,
             (long long)mem_batch);
    for (int i = 0; i < 5; i++)
        snprintf(mem.xcat[i], sizeof mem.xcat[i], "%s", g_configs[i].name);
    zp_status st = zp_doc_add_table(d, t);
    if (st == ZP_OK)
        st = zp_doc_add_chart(d, &big);
    if (st == ZP_OK)
        st = zp_doc_add_chart(d, &mem);
    if (st == ZP_OK)
        st = zp_doc_add_chart(d, &speed);
    if (st != ZP_OK) {
        zp_doc_free(d);
        return st;
    }
    *out = d;
    return ZP_OK;
}

zp_status zp_view_memory(const zp_search_req *base, int top, zp_doc **out)
{
    zp_search_result res;
    ZP_TRY(zp_search_run(base, &res));
    zp_whatif w = {.model = base->model, .cluster = base->cluster, .gpus = base->gpus, .gpu_mem = base->gpu_mem,
                   .reserve = base->reserve, .result = &res, .top = top};
    char title[200];
    snprintf(title, sizeof title, "Memory of %s on %lld GPU%s of %s", base->model->name, (long long)base->gpus,
             zp_report_plural(base->gpus), base->cluster->name);
    zp_doc *d = zp_doc_new(title);
    zp_table *t = NULL;
    zp_status st = d ? ZP_OK : ZP_FAIL(ZP_ENOMEM, "out of memory");
    int best = -1;
    for (int i = 0; i < res.n && best < 0; i++)
        if (res.plans[i].fits)
            best = i;
    if (st == ZP_OK && best < 0)
        st = zp_doc_add_text(d, "No plan fits; the closest needs %.1f GB per GPU: %s.", res.plans[0].mem.total / 1e9,
                             res.plans[0].reason);
    if (st == ZP_OK) {
        const zp_eval *e = &res.plans[best >= 0 ? best : 0];
        char desc[200];
        snprintf(desc, sizeof desc, "stage %d (%s), MP %lld, DP %lld, micro-batch %lld%s%s", e->plan.stage,
                 zp_stage_get(e->plan.stage)->name, (long long)e->plan.mp, (long long)e->plan.dp,
                 (long long)e->plan.micro_batch, e->plan.pa_cpu ? ", Pa+cpu" : e->plan.pa ? ", Pa" : "",
                 e->plan.offload ? ", offload" : "");
        st = zp_doc_add_text(d, "%s plan: %s. GB = 1e9 bytes.", best >= 0 ? "Recommended" : "Closest", desc);
        if (st == ZP_OK)
            st = zp_report_memory_table(e, base->gpu_mem, base->reserve, &t);
        if (st == ZP_OK) {
            st = zp_doc_add_table(d, t);
            t = NULL;
        }
        if (st == ZP_OK && res.n_fit > 0) {
            zp_chart c;
            zp_report_memory_chart(res.plans, res.n_fit, top, base->gpu_mem, &c);
            st = zp_doc_add_chart(d, &c);
        }
    }
    (void)w;
    zp_search_result_free(&res);
    if (st != ZP_OK) {
        zp_doc_free(d);
        return st;
    }
    *out = d;
    return ZP_OK;
}

zp_status zp_view_sweep_table(const zp_sweep_cell *cells, const zp_sweep_row *rows, int n, int every_column,
                              zp_table **out)
{
    enum { C_CELL, C_MODEL, C_CLUSTER, C_GPUS, C_PLAN }; /* then the plan's columns, then the counts */
    const int np = zp_report_plan_ncols(), ncols = C_PLAN + np + 2;
    zp_col *cols = calloc((size_t)ncols, sizeof *cols);
    if (!cols)
        return ZP_FAIL(ZP_ENOMEM, "out of memory");
    int pp = every_column;
    for (int i = 0; i < n; i++)
        pp |= rows[i].found && rows[i].best.plan.pp > 1;
    cols[C_CELL] = (zp_col){"cell", "#", NULL, 0};
    cols[C_MODEL] = (zp_col){"model", "Model", NULL, 0};
    cols[C_CLUSTER] = (zp_col){"cluster", "Cluster", NULL, 0};
    cols[C_GPUS] = (zp_col){"gpus", "GPUs", NULL, 0};
    zp_report_plan_cols(cols + C_PLAN, pp);
    cols[C_PLAN + np] = (zp_col){"plans", NULL, NULL, 0};
    cols[C_PLAN + np + 1] = (zp_col){"plans_fit", NULL, NULL, 0};
    zp_table *t = zp_table_new_cols("Best plan per cell", ncols, cols);
    free(cols);
    if (!t)
        return ZP_FAIL(ZP_ENOMEM, "out of memory");
    zp_status st = ZP_OK;
    for (int i = 0; i < n && st == ZP_OK; i++) {
        const zp_sweep_row *r = &rows[i];
        const zp_sweep_cell *c = &cells[r->cell];
        const zp_eval e = zp_sweep_row_eval(r);
        st = zp_table_add_row(t);
        if (st == ZP_OK)
            st = zp_table_set_int(t, C_CELL, r->cell + 1);
        if (st == ZP_OK)
            st = zp_table_set_str(t, C_MODEL, r->model);
        if (st == ZP_OK)
            st = zp_table_set_str(t, C_CLUSTER, c->cluster);
        if (st == ZP_OK)
            st = zp_table_set_int(t, C_GPUS, c->gpus);
        if (st == ZP_OK)
            st = r->found ? zp_report_plan_cells(t, C_PLAN, &e)
                          : zp_report_plan_none(t, C_PLAN, r->plans ? "nothing fits" : "no plan", e.reason);
        if (st == ZP_OK)
            st = zp_table_set_int(t, C_PLAN + np, r->plans);
        if (st == ZP_OK)
            st = zp_table_set_int(t, C_PLAN + np + 1, r->plans_fit);
        if (st == ZP_OK && !r->found && !r->plans)
            st = zp_table_add_note(t, "#%d, %s on %lld GPUs of %s: %s", r->cell + 1, r->model, (long long)c->gpus,
                                   c->cluster, e.reason);
        else if (st == ZP_OK && !r->found)
            st = zp_table_add_note(t, "#%d, %s on %lld GPUs of %s: none of the %d plans fits; the closest (stage %d, "
                                      "MP %lld, micro-batch %lld): %s", r->cell + 1, r->model, (long long)c->gpus,
                                   c->cluster, r->plans, e.plan.stage, (long long)e.plan.mp,
                                   (long long)e.plan.micro_batch, e.reason);
    }
    int differ = 0; /* one global batch per model across its cells, or the table says not */
    for (int i = 0; i < n; i++)
        for (int j = 0; j < i && rows[i].found; j++)
            differ |= rows[j].found && strcmp(rows[i].model, rows[j].model) == 0 &&
                      rows[i].best.global_batch != rows[j].best.global_batch;
    if (st == ZP_OK && differ)
        st = zp_table_add_note(t, "A model's global batch differs between its cells: each runs the default batch "
                                  "rounded up to whole sequences per DP rank (its Global column); tokens/s and MFU "
                                  "compare them, --global-batch holds one.");
    if (st != ZP_OK) {
        zp_table_free(t);
        return st;
    }
    *out = t;
    return ZP_OK;
}

zp_status zp_view_sweep(const zp_sweep_cell *cells, const zp_sweep_row *rows, int n, zp_doc **out)
{
    char title[96];
    snprintf(title, sizeof title, "zplan sweep: the best plan of each of %d cell%s", n, n == 1 ? "" : "s");
    zp_doc *d = zp_doc_new(title);
    zp_table *t = NULL;
    if (!d)
        return ZP_FAIL(ZP_ENOMEM, "out of memory");
    zp_doc_set_json_digits(d, 8); /* as the what-if's plans */
    TRY_D(zp_doc_add_text(d, "Each cell is a what-if search (options not given are searched): its best plan, or "
                             "\"nothing fits\". %s.", ZP_FLOP_CONVENTION));
    TRY_D(zp_doc_set_key(d, "flop_convention", json_string(ZP_FLOP_CONVENTION)));
    TRY_D(zp_view_sweep_table(cells, rows, n, 0, &t));
    zp_status st = zp_doc_add_table(d, t);
    if (st == ZP_OK)
        st = zp_doc_set_key(d, "cells", NULL);
    if (st != ZP_OK) {
        zp_doc_free(d);
        return st;
    }
    *out = d;
    return ZP_OK;
}
