#include "zp_report.h"

#include <math.h>
#include <string.h>

#include "zp_doc.h"
#include "zp_memory.h"
#include "zp_size.h"

#define TRY_T(expr)                 \
    do {                            \
        zp_status s_ = (expr);      \
        if (s_ != ZP_OK) {          \
            zp_table_free(t);       \
            return s_;              \
        }                           \
    } while (0)

static zp_table *new_table(const char *title, int n, const char *const *k, const char *const *h)
{
    return zp_table_new(title, n, k, h);
}

zp_status zp_report_table1(const double *psi, const char *const *names, int npsi, const double *dp, int ndp,
                           double k, zp_table **out)
{
    static const char *const keys[] = {"model", "params", "dp", "pos_gb", "pos_g_gb", "pos_g_p_gb"};
    static const char *const heads[] = {"Model", "Params", "DP", "Pos (GB)", "Pos+g (GB)", "Pos+g+p (GB)"};
    zp_table *t = new_table("Table 1: model-state memory per GPU (GB = 1e9 bytes)", 6, keys, heads);
    if (!t)
        return ZP_FAIL(ZP_ENOMEM, "out of memory");
    for (int i = 0; i < npsi; i++) {
        for (int j = 0; j < ndp; j++) {
            TRY_T(zp_table_add_row(t));
            TRY_T(zp_table_set_str(t, 0, names[i]));
            char ps[32];
            zp_size_format(psi[i], ps, sizeof ps);
            TRY_T(zp_table_set_num_text(t, 1, psi[i], ps));
            TRY_T(zp_table_set_num(t, 2, dp[j], "%.0f"));
            for (int s = 1; s <= 3; s++)
                TRY_T(zp_table_set_num(t, 2 + s, zp_memory_model_states(psi[i], s, dp[j], 1, k) / 1e9, "%.5g"));
        }
    }
    TRY_T(zp_table_add_note(t, "Pos = 4Ψ + KΨ/Nd, Pos+g = 2Ψ + (K+2)Ψ/Nd, Pos+g+p = (K+4)Ψ/Nd, K = %g "
                               "(ZeRO paper, Table 1); Nd = 1 is the baseline 16Ψ.", k));
    *out = t;
    return ZP_OK;
}

zp_status zp_report_table2(double gpu_mem, const double *mp, int nmp, double dp, double k, zp_table **out)
{
    static const char *const keys[] = {"mp", "gpus", "baseline_b", "pos_b", "pos_g_b", "pos_g_p_b",
                                       "baseline_real_b", "pos_real_b"};
    static const char *const heads[] = {"MP", "GPUs", "Baseline (B)", "Pos (B)", "Pos+g (B)", "Pos+g+p (B)",
                                        "Baseline fits (B)", "Pos fits (B)"};
    char title[160];
    snprintf(title, sizeof title,
             "Table 2: largest model (billions of parameters) on %.4g GB per GPU, DP %g",
             gpu_mem / 1e9, dp);
    zp_table *t = new_table(title, 8, keys, heads);
    if (!t)
        return ZP_FAIL(ZP_ENOMEM, "out of memory");
    for (int i = 0; i < nmp; i++) {
        TRY_T(zp_table_add_row(t));
        TRY_T(zp_table_set_num(t, 0, mp[i], "%.0f"));
        TRY_T(zp_table_set_num(t, 1, mp[i] * dp, "%.0f"));
        for (int s = 0; s <= 3; s++)
            TRY_T(zp_table_set_num(t, 2 + s, zp_memory_max_params(s, s == 0 ? 1 : dp, mp[i], k, gpu_mem) / 1e9,
                                   "%.4g"));
        /* What really fits: GPT-2-like models of the paper's size classes at micro-batch 1 with
         * checkpointing. The baseline is Megatron-LM data parallelism (fp32 fused buffers, no
         * defragmentation); Pos is ZeRO-100B with ZeRO-R (CB, MD, and Pa when MP > 1). */
        for (int v = 0; v < 2; v++) {
            zp_plan p;
            zp_plan_default(&p, (int64_t)dp);
            p.mp = (int64_t)mp[i];
            p.k_optimizer = k;
            p.stage = v == 0 ? 0 : 1;
            p.cb = p.md = v == 1;
            p.pa = v == 1 && p.mp > 1;
            double fit = 0;
            TRY_T(zp_memory_largest_fitting(&p, gpu_mem, HUGE_VAL, &fit));
            TRY_T(zp_table_set_num(t, 6 + v, fit / 1e9, "%.3g"));
        }
    }
    TRY_T(zp_table_add_note(t, "Theoretical columns: model states only (fp16 params and grads, K = %g bytes of "
                               "optimizer state per parameter).", k));
    TRY_T(zp_table_add_note(t, "\"fits\" columns: the largest GPT-2-like model that fits with activations "
                               "(micro-batch 1, checkpointing), buffers and fragmentation counted; baseline = "
                               "Megatron-LM DP (fp32 fused buffer, no MD), Pos = ZeRO-100B (CB, MD, Pa)."));
    *out = t;
    return ZP_OK;
}

zp_status zp_report_models(zp_table **out)
{
    static const char *const keys[] = {"name", "layers", "hidden", "heads", "seq", "vocab", "params", "source"};
    static const char *const heads[] = {"Name", "Layers", "Hidden", "Heads", "Seq", "Vocab", "Params", "Source"};
    zp_table *t = new_table("Model zoo (GPT-style decoders; --model also takes a size such as 37B or a config.json)",
                            8, keys, heads);
    if (!t)
        return ZP_FAIL(ZP_ENOMEM, "out of memory");
    for (int i = 0; i < zp_zoo_count(); i++) {
        const zp_zoo_entry *e = zp_zoo_get(i);
        char p[32];
        zp_size_format(zp_model_params(&e->model), p, sizeof p);
        TRY_T(zp_table_add_row(t));
        TRY_T(zp_table_set_str(t, 0, e->model.name));
        TRY_T(zp_table_set_num(t, 1, (double)e->model.layers, "%.0f"));
        TRY_T(zp_table_set_num(t, 2, (double)e->model.hidden, "%.0f"));
        TRY_T(zp_table_set_num(t, 3, (double)e->model.heads, "%.0f"));
        TRY_T(zp_table_set_num(t, 4, (double)e->model.seq, "%.0f"));
        TRY_T(zp_table_set_num(t, 5, (double)e->model.vocab, "%.0f"));
        TRY_T(zp_table_set_num_text(t, 6, zp_model_params(&e->model), p));
        TRY_T(zp_table_set_str(t, 7, e->source));
    }
    *out = t;
    return ZP_OK;
}

zp_status zp_report_clusters(zp_table **out)
{
    static const char *const keys[] = {"name", "gpu", "gpus_per_node", "gpu_mem_gb", "peak_tflops",
                                       "nvswitch_gbs", "ib_gbs_per_node", "pcie_gbs", "description"};
    static const char *const heads[] = {"Name", "GPU", "GPUs/node", "GPU mem (GB)", "Peak (TFLOP/s)",
                                        "NVSwitch (GB/s/GPU)", "IB (GB/s/node)", "PCIe (GB/s)", "Description"};
    zp_table *t = new_table("Cluster presets (bandwidths per direction; sources in sim/zp_cluster.c)", 9, keys, heads);
    if (!t)
        return ZP_FAIL(ZP_ENOMEM, "out of memory");
    for (int i = 0; i < zp_cluster_count(); i++) {
        const zp_cluster *c = zp_cluster_get(i);
        TRY_T(zp_table_add_row(t));
        TRY_T(zp_table_set_str(t, 0, c->name));
        TRY_T(zp_table_set_str(t, 1, c->gpu_name));
        TRY_T(zp_table_set_num(t, 2, c->gpus_per_node, "%.0f"));
        TRY_T(zp_table_set_num(t, 3, c->gpu_mem / 1e9, "%.0f"));
        TRY_T(zp_table_set_num(t, 4, c->peak_flops / 1e12, "%.0f"));
        TRY_T(zp_table_set_num(t, 5, c->nvlink_bw / 1e9, "%.0f"));
        TRY_T(zp_table_set_num(t, 6, zp_cluster_node_ib_bw(c) / 1e9, "%.0f"));
        TRY_T(zp_table_set_num(t, 7, c->pcie_bw / 1e9, "%.0f"));
        TRY_T(zp_table_set_str(t, 8, c->description));
    }
    *out = t;
    return ZP_OK;
}

/* ---- what-if ---- */

static void plan_options(const zp_plan *p, char *buf, size_t len)
{
    snprintf(buf, len, "%s%s%s%s%s%s", p->pa_cpu ? "Pa+cpu " : (p->pa ? "Pa " : ""), p->cb ? "CB " : "",
             p->md ? "MD " : "", p->checkpoint ? "ckpt" : "no-ckpt",
             p->offload != ZP_OFFLOAD_NONE ? " offload:" : "",
             p->offload != ZP_OFFLOAD_NONE ? zp_offload_name(p->offload) : "");
}

static zp_status plans_table(const zp_whatif *w, int only_fit, int limit, zp_table **out)
{
    static const char *const keys[] = {"rank", "stage", "mp", "dp", "micro_batch", "grad_accum", "global_batch",
                                       "options", "gpu_mem_gb", "host_mem_gb", "fits", "step_time_s",
                                       "samples_per_s", "tflops_per_gpu", "pflops", "method"};
    static const char *const heads[] = {"#", "Stage", "MP", "DP", "Micro", "Accum", "Global", "ZeRO-R / options",
                                        "GPU GB", "Host GB", "Fits", "Step (s)", "Samples/s", "TFLOPs/GPU",
                                        "PFLOPs", "Method"};
    zp_table *t = new_table(only_fit ? "Plans that fit, best first" : "Plans", 16, keys, heads);
    if (!t)
        return ZP_FAIL(ZP_ENOMEM, "out of memory");
    int shown = 0;
    for (int i = 0; i < w->result->n && shown < limit; i++) {
        const zp_eval *e = &w->result->plans[i];
        if (only_fit && !e->fits)
            continue;
        char opts[96], stage[32];
        plan_options(&e->plan, opts, sizeof opts);
        snprintf(stage, sizeof stage, "%d %s", e->plan.stage, zp_stage_get(e->plan.stage)->name);
        TRY_T(zp_table_add_row(t));
        TRY_T(zp_table_set_num(t, 0, i + 1, "%.0f"));
        TRY_T(zp_table_set_str(t, 1, stage));
        TRY_T(zp_table_set_num(t, 2, (double)e->plan.mp, "%.0f"));
        TRY_T(zp_table_set_num(t, 3, (double)e->plan.dp, "%.0f"));
        TRY_T(zp_table_set_num(t, 4, (double)e->plan.micro_batch, "%.0f"));
        TRY_T(zp_table_set_num(t, 5, (double)e->plan.grad_accum, "%.0f"));
        TRY_T(zp_table_set_num(t, 6, e->global_batch, "%.0f"));
        TRY_T(zp_table_set_str(t, 7, opts));
        TRY_T(zp_table_set_num(t, 8, e->mem.total / 1e9, "%.1f"));
        TRY_T(zp_table_set_num(t, 9, e->mem.host / 1e9, "%.1f"));
        TRY_T(zp_table_set_bool(t, 10, e->fits));
        TRY_T(zp_table_set_num(t, 11, e->time.total, "%.3g"));
        TRY_T(zp_table_set_num(t, 12, e->samples_per_s, "%.4g"));
        TRY_T(zp_table_set_num(t, 13, e->tflops_per_gpu, "%.1f"));
        TRY_T(zp_table_set_num(t, 14, e->pflops, "%.2f"));
        TRY_T(zp_table_set_str(t, 15, e->method));
        shown++;
    }
    *out = t;
    return ZP_OK;
}

zp_status zp_report_memory_table(const zp_eval *e, double gpu_mem, zp_table **out)
{
    static const char *const keys[] = {"category", "gb", "share"};
    static const char *const heads[] = {"Category", "GB per GPU", "Share"};
    zp_table *t = new_table("Memory per GPU of the recommended plan", 3, keys, heads);
    if (!t)
        return ZP_FAIL(ZP_ENOMEM, "out of memory");
    const struct {
        const char *name;
        double v;
    } rows[] = {
        {"fp16 parameters", e->mem.params},
        {"fp16 gradients", e->mem.grads},
        {"optimizer states", e->mem.optimizer},
        {"activations", e->mem.activations},
        {"  of which checkpoints", e->mem.checkpoints},
        {"buffers", e->mem.buffers},
        {"fragmentation", e->mem.fragmentation},
        {"total", e->mem.total},
        {"GPU memory", gpu_mem},
        {"host memory (per GPU)", e->mem.host},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        TRY_T(zp_table_add_row(t));
        TRY_T(zp_table_set_str(t, 0, rows[i].name));
        TRY_T(zp_table_set_num(t, 1, rows[i].v / 1e9, "%.2f"));
        if (i < 8)
            TRY_T(zp_table_set_num(t, 2, 100.0 * rows[i].v / gpu_mem, "%.1f%%"));
        else
            TRY_T(zp_table_set_str(t, 2, ""));
    }
    *out = t;
    return ZP_OK;
}

static int best_index(const zp_search_result *r)
{
    for (int i = 0; i < r->n; i++)
        if (r->plans[i].fits)
            return i;
    return -1;
}

static void describe_plan(const zp_eval *e, char *buf, size_t len)
{
    char opts[96];
    plan_options(&e->plan, opts, sizeof opts);
    const zp_stage_info *si = zp_stage_get(e->plan.stage);
    snprintf(buf, len, "ZeRO stage %d (%s), MP %lld, DP %lld, micro-batch %lld x %lld accumulation = global batch %.0f, %s",
             e->plan.stage, si->name, (long long)e->plan.mp, (long long)e->plan.dp, (long long)e->plan.micro_batch,
             (long long)e->plan.grad_accum, e->global_batch, opts);
}

json_t *zp_report_whatif_json(const zp_whatif *w)
{
    const zp_model *m = w->model;
    json_t *root = json_object();
    json_object_set_new(root, "model",
                        json_pack("{s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:f}", "name", m->name, "layers",
                                  (json_int_t)m->layers, "hidden", (json_int_t)m->hidden, "heads",
                                  (json_int_t)m->heads, "seq", (json_int_t)m->seq, "vocab", (json_int_t)m->vocab,
                                  "ffn", (json_int_t)m->ffn, "params", zp_model_params(m)));
    json_object_set_new(root, "cluster",
                        json_pack("{s:s, s:I, s:i, s:f}", "name", w->cluster->name, "gpus", (json_int_t)w->gpus,
                                  "gpus_per_node", w->cluster->gpus_per_node, "gpu_mem_gb", w->gpu_mem / 1e9));
    json_t *plans = json_array();
    for (int i = 0; i < w->result->n; i++) {
        const zp_eval *e = &w->result->plans[i];
        const zp_plan *p = &e->plan;
        json_t *mem = json_pack("{s:f, s:f, s:f, s:f, s:f, s:f, s:f}", "params", e->mem.params / 1e9, "grads",
                                e->mem.grads / 1e9, "optimizer", e->mem.optimizer / 1e9, "activations",
                                e->mem.activations / 1e9, "buffers", e->mem.buffers / 1e9, "fragmentation",
                                e->mem.fragmentation / 1e9, "total", e->mem.total / 1e9);
        json_t *time = json_pack("{s:f, s:f, s:f, s:f, s:f}", "compute", e->time.compute, "mp_comm",
                                 e->time.mp_comm, "dp_comm", e->time.dp_comm, "optimizer", e->time.optimizer,
                                 "offload", e->time.offload);
        json_t *o = json_pack("{s:i, s:I, s:I, s:I, s:I, s:f, s:b, s:b, s:b, s:b, s:b, s:f, s:s, s:o, s:f, "
                              "s:b, s:f, s:f, s:f, s:f, s:o, s:s}",
                              "stage", p->stage, "mp", (json_int_t)p->mp, "dp", (json_int_t)p->dp, "micro_batch",
                              (json_int_t)p->micro_batch, "grad_accum", (json_int_t)p->grad_accum, "global_batch",
                              e->global_batch, "pa", p->pa, "pa_cpu", p->pa_cpu, "cb", p->cb, "md", p->md,
                              "checkpoint", p->checkpoint, "bucket", p->bucket, "offload",
                              zp_offload_name(p->offload), "memory_gb", mem, "host_memory_gb", e->mem.host / 1e9,
                              "fits", e->fits, "step_time_s", e->time.total, "samples_per_s", e->samples_per_s,
                              "tflops_per_gpu", e->tflops_per_gpu, "pflops", e->pflops, "time_breakdown_s", time,
                              "method", e->method);
        json_object_set_new(o, "sim", e->sim ? json_string(e->sim) : json_null()); /* which simulation ran */
        if (!e->fits)
            json_object_set_new(o, "reason", json_string(e->reason));
        json_array_append_new(plans, o);
    }
    json_object_set_new(root, "plans", plans);
    int best = best_index(w->result);
    json_object_set_new(root, "best", best >= 0 ? json_integer(best) : json_null());
    json_object_set_new(root, "flop_convention", json_string(ZP_FLOP_CONVENTION));
    return root;
}

static zp_status write_tables(FILE *f, zp_format fmt, zp_table *t)
{
    zp_status st = zp_table_write(t, f, fmt);
    zp_table_free(t);
    if (st == ZP_OK && fmt != ZP_FMT_CSV)
        fputc('\n', f);
    return st;
}

/* Stacked bars of the memory categories of the first `n` fitting plans (GB per GPU). */
void zp_report_memory_chart(const zp_eval *plans, int count, int n, double gpu_mem, zp_chart *c)
{
    zp_chart_init(c, ZP_CHART_STACKED_BAR, "Memory per GPU by category", "plan", "GB per GPU");
    static const char *const cats[] = {"fp16 parameters", "fp16 gradients", "optimizer states", "activations",
                                       "buffers", "fragmentation"};
    c->nseries = 6;
    for (int s = 0; s < 6; s++)
        snprintf(c->series[s], sizeof c->series[s], "%s", cats[s]);
    int p = 0;
    for (int i = 0; i < count && p < n && p < ZP_CHART_MAX_POINTS; i++) {
        const zp_eval *e = &plans[i];
        snprintf(c->xcat[p], sizeof c->xcat[p], "#%d s%d mp%lld b%lld", i + 1, e->plan.stage, (long long)e->plan.mp,
                 (long long)e->plan.micro_batch);
        const double v[6] = {e->mem.params, e->mem.grads, e->mem.optimizer, e->mem.activations, e->mem.buffers,
                             e->mem.fragmentation};
        for (int s = 0; s < 6; s++)
            c->y[s][p] = v[s] / 1e9;
        p++;
    }
    c->npoints = p;
    c->hline = gpu_mem / 1e9;
    snprintf(c->hline_label, sizeof c->hline_label, "GPU memory %.4g GB", gpu_mem / 1e9);
}

static zp_status whatif_html(FILE *f, const zp_whatif *w)
{
    const zp_search_result *r = w->result;
    const zp_model *m = w->model;
    char title[200];
    snprintf(title, sizeof title, "zplan what-if: %s on %lld GPUs of %s", m->name, (long long)w->gpus, w->cluster->name);
    zp_doc *d = zp_doc_new(title);
    if (!d)
        return ZP_FAIL(ZP_ENOMEM, "out of memory");
    zp_status st = zp_doc_add_text(d, "Model %s: %lld layers, hidden %lld, %lld heads, sequence %lld, vocabulary %lld; "
                                      "%.4g parameters%s%s.",
                                   m->name, (long long)m->layers, (long long)m->hidden, (long long)m->heads,
                                   (long long)m->seq, (long long)m->vocab, zp_model_params(m),
                                   w->model_note ? "; " : "", w->model_note ? w->model_note : "");
    if (st == ZP_OK)
        st = zp_doc_add_text(d, "Cluster %s: %lld GPUs (%d per node, %s), %.4g GB per GPU. Step times: %s. %s.",
                             w->cluster->name, (long long)w->gpus, w->cluster->gpus_per_node, w->cluster->gpu_name,
                             w->gpu_mem / 1e9,
                             r->n_simulated > 0 ? "SimGrid simulation of one step" : "analytic first-order estimate",
                             ZP_FLOP_CONVENTION);
    int best = best_index(r);
    zp_table *t;
    if (st == ZP_OK && best >= 0) {
        char desc[256];
        describe_plan(&r->plans[best], desc, sizeof desc);
        const zp_eval *e = &r->plans[best];
        st = zp_doc_add_text(d, "Recommended: %s: step %.3g s, %.4g samples/s, %.1f TFLOPs per GPU, %.2f PFLOPs.", desc,
                             e->time.total, e->samples_per_s, e->tflops_per_gpu, e->pflops);
        if (st == ZP_OK && (st = plans_table(w, 1, w->top, &t)) == ZP_OK)
            st = zp_doc_add_table(d, t);
        if (st == ZP_OK) {
            zp_chart c;
            zp_report_memory_chart(r->plans, r->n_fit, w->top, w->gpu_mem, &c);
            st = zp_doc_add_chart(d, &c);
        }
        if (st == ZP_OK && (st = zp_report_memory_table(e, w->gpu_mem, &t)) == ZP_OK)
            st = zp_doc_add_table(d, t);
    } else if (st == ZP_OK) {
        st = zp_doc_add_text(d, "No plan fits.");
    }
    if (st == ZP_OK && r->n_fit < r->n) {
        static const char *const keys[] = {"stage", "mp", "options", "reason"};
        static const char *const heads[] = {"Stage", "MP", "Options", "Why it does not fit"};
        t = zp_table_new("Plans that do not fit", 4, keys, heads);
        for (int i = 0; t && i < r->n && st == ZP_OK; i++) {
            const zp_eval *e = &r->plans[i];
            if (e->fits)
                continue;
            char opts[96];
            plan_options(&e->plan, opts, sizeof opts);
            st = zp_table_add_row(t);
            if (st == ZP_OK)
                st = zp_table_set_num(t, 0, e->plan.stage, "%.0f");
            if (st == ZP_OK)
                st = zp_table_set_num(t, 1, (double)e->plan.mp, "%.0f");
            if (st == ZP_OK)
                st = zp_table_set_str(t, 2, opts);
            if (st == ZP_OK)
                st = zp_table_set_str(t, 3, e->reason);
        }
        if (st == ZP_OK)
            st = zp_doc_add_table(d, t);
        else
            zp_table_free(t);
    }
    if (st == ZP_OK)
        st = zp_doc_write(d, f, ZP_FMT_HTML);
    zp_doc_free(d);
    return st;
}

zp_status zp_report_whatif(FILE *f, zp_format fmt, const zp_whatif *w)
{
    const zp_search_result *r = w->result;
    if (fmt == ZP_FMT_HTML)
        return whatif_html(f, w);
    if (fmt == ZP_FMT_JSON) {
        json_t *j = zp_report_whatif_json(w);
        int rc = j ? json_dumpf(j, f, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(8)) : -1;
        json_decref(j);
        fputc('\n', f);
        return rc == 0 ? ZP_OK : ZP_FAIL(ZP_EIO, "writing JSON failed");
    }
    zp_table *t;
    if (fmt == ZP_FMT_CSV) {
        ZP_TRY(plans_table(w, 0, r->n, &t));
        return write_tables(f, fmt, t);
    }
    const zp_model *m = w->model;
    char ps[32];
    zp_size_format(zp_model_params(m), ps, sizeof ps);
    const char *h = fmt == ZP_FMT_MD ? "## " : "";
    fprintf(f, "%szplan what-if: model %s on %lld GPUs of %s\n\n", h, m->name, (long long)w->gpus, w->cluster->name);
    fprintf(f, "Model:   %s: %lld layers, hidden %lld, %lld heads, seq %lld, vocab %lld, FFN %lld; %.4g parameters (%s)%s%s\n",
            m->name, (long long)m->layers, (long long)m->hidden, (long long)m->heads, (long long)m->seq,
            (long long)m->vocab, (long long)m->ffn, zp_model_params(m), ps, w->model_note ? "; " : "",
            w->model_note ? w->model_note : "");
    int64_t nodes = (w->gpus + w->cluster->gpus_per_node - 1) / w->cluster->gpus_per_node;
    fprintf(f, "Cluster: %s, %lld GPUs (%lld nodes x %d %s), %.4g GB per GPU\n", w->cluster->name,
            (long long)w->gpus, (long long)nodes, w->cluster->gpus_per_node, w->cluster->gpu_name, w->gpu_mem / 1e9);
    if (r->n_simulated > 0)
        fprintf(f, "Method:  SimGrid simulation of one step (streams overlapped, collectives as flows: %s; %s) "
                   "for %d of the %d plans that fit; the others cannot beat the best (their kernels alone take "
                   "longer).\n",
                w->cluster->flat_rings ? "flat NCCL rings across nodes" : "rings in a node, hierarchical across nodes",
                w->profile_note ? w->profile_note : "built-in device profile", r->n_simulated, r->n_fit);
    else
        fprintf(f, "Method:  analytic first-order step time%s: compute at %.0f%% of the %.0f TFLOP/s fp16 peak, every "
                   "communication over its bandwidth, nothing overlapped.\n",
                (w->gpus + w->cluster->gpus_per_node - 1) / w->cluster->gpus_per_node > ZP_SIM_MAX_FULL_NODES
                    ? " (more nodes than the full simulator takes, and these plans are not symmetric enough for "
                      "the reduced one)"
                    : "",
                100 * w->cluster->gemm_efficiency, w->cluster->peak_flops / 1e12);
    fprintf(f, "FLOPs:   %s.\n\n", ZP_FLOP_CONVENTION);

    int best = best_index(r);
    if (best >= 0) {
        ZP_TRY(plans_table(w, 1, w->top, &t));
        ZP_TRY(write_tables(f, fmt, t));
        fprintf(f, "%s%d of %d candidate plans fit; showing the best %d.\n\n", fmt == ZP_FMT_MD ? "" : "",
                r->n_fit, r->n, r->n_fit < w->top ? r->n_fit : w->top);
        ZP_TRY(zp_report_memory_table(&r->plans[best], w->gpu_mem, &t));
        ZP_TRY(write_tables(f, fmt, t));
        char desc[256];
        describe_plan(&r->plans[best], desc, sizeof desc);
        fprintf(f, "%sRecommended: %s.\n", fmt == ZP_FMT_MD ? "**" : "", desc);
        const zp_eval *e = &r->plans[best];
        fprintf(f, "  step %.3g s, %.4g samples/s, %.1f TFLOPs per GPU, %.2f PFLOPs aggregate (%s)%s\n\n",
                e->time.total, e->samples_per_s, e->tflops_per_gpu, e->pflops, e->method,
                fmt == ZP_FMT_MD ? "**" : "");
    } else {
        fprintf(f, "No plan fits: %s on %lld GPUs with %.4g GB each.\n\n", m->name, (long long)w->gpus,
                w->gpu_mem / 1e9);
    }
    int shown = 0;
    for (int i = 0; i < r->n; i++) {
        const zp_eval *e = &r->plans[i];
        if (e->fits)
            continue;
        if (shown == 0)
            fprintf(f, "%sDoes not fit (at micro-batch %s):\n", h, "1 or the one given");
        char opts[96];
        plan_options(&e->plan, opts, sizeof opts);
        if (shown < 12)
            fprintf(f, "  - stage %d (%s), MP %lld, %s: %s\n", e->plan.stage, zp_stage_get(e->plan.stage)->name,
                    (long long)e->plan.mp, opts, e->reason);
        shown++;
    }
    if (shown > 12)
        fprintf(f, "  ... and %d more (see --format json)\n", shown - 12);
    return ferror(f) ? ZP_FAIL(ZP_EIO, "write failed") : ZP_OK;
}
