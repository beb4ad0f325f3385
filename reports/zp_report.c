#include "zp_report.h"

#include <math.h>
#include <string.h>

#include "zp_dispatch.h"
#include "zp_doc.h"
#include "zp_fp8.h"
#include "zp_framework.h"
#include "zp_gpu.h"
#include "zp_memory.h"
#include "zp_pipeline.h"
#include "zp_size.h"
#include "zp_units.h"
#include "zp_zoo.h"

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

void zp_report_gpus_label(const zp_cluster *cl, int64_t gpus, char *buf, size_t len)
{
    const int gpn = cl->gpus_per_node > 0 ? cl->gpus_per_node : 1;
    const int64_t nodes = (gpus + gpn - 1) / gpn;
    if (gpus < gpn && nodes == 1) /* part of one node */
        snprintf(buf, len, "%lld GPU%s (%lld of a node's %d %s)", (long long)gpus, zp_report_plural(gpus),
                 (long long)gpus, gpn, cl->gpu_name);
    else
        snprintf(buf, len, "%lld GPU%s (%lld node%s of %d %s)", (long long)gpus, zp_report_plural(gpus),
                 (long long)nodes, zp_report_plural(nodes), gpn, cl->gpu_name);
}

/* "32 GiB = 34.36 GB" for a whole number of GiB, else "40 GB". */
static void mem_text(double bytes, char *buf, size_t len)
{
    const double gib = bytes / 1073741824.0;
    if (gib >= 1 && fabs(gib - round(gib)) < 1e-9)
        snprintf(buf, len, "%.0f GiB = %.4g GB", gib, bytes / 1e9);
    else
        snprintf(buf, len, "%.4g GB", bytes / 1e9);
}

void zp_report_gpu_mem_label(const zp_cluster *cl, double gpu_mem, char *buf, size_t len)
{
    char own[64], given[64];
    mem_text(cl->gpu_mem, own, sizeof own);
    mem_text(gpu_mem, given, sizeof given);
    if (gpu_mem != cl->gpu_mem) /* --gpu-mem: say so beside the GPU's own, which differs */
        snprintf(buf, len, "%s per GPU (--gpu-mem; the %s has %s)", given, cl->gpu_name, own);
    else
        snprintf(buf, len, "%s per GPU", own);
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
                TRY_T(zp_table_set_num(t, 2 + s, zp_memory_model_states(psi[i], s, dp[j], 1, k) / 1e9, "%.2f"));
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
                                   "%.1f"));
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
            TRY_T(zp_table_set_num(t, 6 + v, fit / 1e9, "%.1f"));
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
    zp_table *t = new_table("Cluster presets (bandwidths per direction; sources in vocab/zp_cluster.c)", 9, keys, heads);
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

zp_status zp_report_gpus(zp_table **out)
{
    static const char *const keys[] = {"name", "fp16_tflops", "bf16_tflops", "fp8_tflops", "fp32_tflops", "hbm_gb",
                                       "hbm_tbs", "sms", "clock_mhz", "tdp_w", "nvlink_domain", "nvlink_gbs",
                                       "nic_gbits", "description"};
    static const char *const heads[] = {"Name", "FP16", "BF16", "FP8", "FP32", "HBM (GB)", "HBM (TB/s)", "SMs",
                                        "Clock (MHz)", "TDP (W)", "NVLink GPUs", "NVLink (GB/s)", "NIC (Gb/s)",
                                        "Description"};
    zp_table *t = new_table("GPU presets (dense TFLOP/s, 0: not supported; bandwidths per direction; every figure "
                            "with its source: zplan gpus NAME)",
                            14, keys, heads);
    if (!t)
        return ZP_FAIL(ZP_ENOMEM, "out of memory");
    for (int i = 0; i < zp_gpu_preset_count(); i++) {
        zp_gpu g;
        zp_status st = zp_gpu_preset(i, &g);
        if (st != ZP_OK) {
            zp_table_free(t);
            return st;
        }
        const double v[] = {g.fp16 / 1e12, g.bf16 / 1e12, g.fp8 / 1e12, g.fp32 / 1e12, g.hbm / 1e9, g.hbm_bw / 1e12,
                            g.sms, g.clock / 1e6, g.tdp_w, g.nvlink_domain, g.nvlink_bw / 1e9, g.nic_bw * 8 / 1e9};
        static const char *const fmt[] = {"%.0f", "%.0f", "%.0f", "%.1f", "%.0f", "%.2f",
                                          "%.0f", "%.0f", "%.0f", "%.0f", "%.0f", "%.0f"};
        TRY_T(zp_table_add_row(t));
        TRY_T(zp_table_set_str(t, 0, g.name));
        for (int k = 0; k < 12; k++)
            TRY_T(zp_table_set_num(t, k + 1, v[k], fmt[k]));
        TRY_T(zp_table_set_str(t, 13, g.description));
    }
    *out = t;
    return ZP_OK;
}

/* ---- what-if ---- */

void zp_report_ds_keys(const zp_plan *p, char *buf, size_t len)
{
    char mp[160] = "";
    int n = 0;
    if (p->mp > 1 || p->pp > 1 || p->sp)
        n += snprintf(mp + n, sizeof mp - (size_t)n, "; Megatron");
    if (p->mp > 1)
        n += snprintf(mp + n, sizeof mp - (size_t)n, " --tensor-model-parallel-size %lld", (long long)p->mp);
    if (p->pp > 1)
        n += snprintf(mp + n, sizeof mp - (size_t)n, " --pipeline-model-parallel-size %lld", (long long)p->pp);
    if (p->sp)
        snprintf(mp + n, sizeof mp - (size_t)n, " --sequence-parallel");
    snprintf(buf, len, "stage=%d%s%s%s%s%s%s", p->stage, p->offload != ZP_OFFLOAD_NONE ? " offload_optimizer=cpu" : "",
             p->offload == ZP_OFFLOAD_PARAMS ? " offload_param=cpu" : "",
             p->pa || p->pa_cpu ? " partition_activations=true" : "", p->pa_cpu ? " cpu_checkpointing=true" : "",
             p->md ? "" : " contiguous_gradients=false", mp);
}

zp_status zp_report_legend(zp_doc *d)
{
    static const char *const rows[][2] = {
        {"baseline / stage 0", "zero_optimization.stage 0: plain data parallelism, every GPU holds all states"},
        {"Pos / stage 1", "zero_optimization.stage 1: optimizer states partitioned across the DP ranks"},
        {"Pos+g / stage 2", "zero_optimization.stage 2: optimizer states and gradients partitioned"},
        {"Pos+g+p / stage 3", "zero_optimization.stage 3: optimizer states, gradients and parameters partitioned"},
        {"offload:optimizer", "zero_optimization.offload_optimizer.device \"cpu\" (ZeRO-Offload)"},
        {"offload:params", "zero_optimization.offload_param.device \"cpu\" (ZeRO-3 Offload, with the optimizer's)"},
        {"ckpt", "activation checkpointing: Megatron-LM --checkpoint-activations, DeepSpeed activation_checkpointing"},
        {"Pa", "activation_checkpointing.partition_activations: checkpoints split across the MP ranks"},
        {"Pa+cpu", "activation_checkpointing.cpu_checkpointing: the partitions in host memory"},
        {"CB", "zero_optimization.reduce_bucket_size / allgather_bucket_size: constant-size buffers (--bucket)"},
        {"MD", "zero_optimization.contiguous_gradients + activation_checkpointing.contiguous_memory_optimization"},
        {"MP", "Megatron-LM --tensor-model-parallel-size (DeepSpeed configs do not set it)"},
        {"PP", "Megatron-LM --pipeline-model-parallel-size (1f1b, gpipe; interleaved:vN: "
               "--num-layers-per-virtual-pipeline-stage)"},
        {"SP, sel-ckpt", "Megatron-LM --sequence-parallel, --recompute-granularity selective"},
        {"EPn", "experts sharded over n DP ranks: DeepSpeed MoE ep_size, Megatron-LM --expert-model-parallel-size"},
        {"CPn", "each sequence split over n DP ranks (ring attention): Megatron-LM --context-parallel-size"},
        {"DP", "the data-parallel degree (replicas of the batch): GPUs / (MP x PP x CP)"},
    };
    const int n = (int)(sizeof rows / sizeof rows[0]);
    ZP_TRY(zp_doc_add_list(d, "Legend (the ZeRO paper's names, and the DeepSpeed and Megatron-LM keys that set them):",
                           n, NULL));
    for (int i = 0; i < n; i++)
        ZP_TRY(zp_doc_add_entry(d, "%-19s %s", rows[i][0], rows[i][1]));
    zp_doc_only(d, ZP_FMT_BIT(ZP_FMT_TEXT) | ZP_FMT_BIT(ZP_FMT_MD) | ZP_FMT_BIT(ZP_FMT_HTML));
    return ZP_OK;
}

void zp_report_plan_options(const zp_plan *p, char *buf, size_t len)
{
    char pipe[48] = "", ep[64] = "";
    /* the dimensions inside another (EP: MoE experts sharded over EP ranks), by their tags */
    for (int d = 0, n = 0; d < ZP_NDIMS; d++) {
        const zp_dim_type *t = zp_dims_get((zp_dim_id)d);
        if (t->within != t->id && p->deg[d] > 1 && n < (int)sizeof ep)
            n += snprintf(ep + n, sizeof ep - (size_t)n, "%s%lld ", t->tag, (long long)p->deg[d]);
        if (d == ZP_DIM_EP && p->ep > 1 && p->dispatcher != ZP_DISPATCH_ALLTOALL && n < (int)sizeof ep)
            n += snprintf(ep + n, sizeof ep - (size_t)n, "%s ", zp_dispatch_get(p->dispatcher)->name);
        if (d == ZP_DIM_EP && p->ep > 1 && p->ep_overlap && n < (int)sizeof ep)
            n += snprintf(ep + n, sizeof ep - (size_t)n, "ep-overlap ");
        if (d == ZP_DIM_EP && p->ep > 1 && p->shared_overlap && n < (int)sizeof ep)
            n += snprintf(ep + n, sizeof ep - (size_t)n, "shared-overlap ");
    }
    if (p->pp > 1 && p->schedule == ZP_PP_INTERLEAVED) /* +emb/loss: those counted as layers (pp_acc) */
        snprintf(pipe, sizeof pipe, " interleaved:v%d%s", p->vstages, p->pp_acc ? " +emb/loss" : "");
    else if (p->pp > 1)
        snprintf(pipe, sizeof pipe, " %s", zp_pp_schedule_name(p->schedule));
    char ckpt[128]; /* torchtitan's modes: every k-th block ("ckpt/k"), op-level ("op-ckpt"); Megatron-core's
                       modules of selective recompute ("sel-ckpt:layernorm+mla_up_proj") */
    if (p->checkpoint && p->ckpt_every > 1) {
        snprintf(ckpt, sizeof ckpt, "ckpt/%d", p->ckpt_every);
    } else if (p->selective && p->rc_modules) {
        const int k = snprintf(ckpt, sizeof ckpt, "sel-ckpt:");
        zp_rc_module_text(p->rc_modules, "+", ckpt + k, sizeof ckpt - (size_t)k);
    } else {
        snprintf(ckpt, sizeof ckpt, "%s",
                 p->checkpoint ? "ckpt" : (p->selective ? "sel-ckpt" : (p->op_sac ? "op-ckpt" : "no-ckpt")));
    }
    /* TP communication overlapped with its GEMMs (--tp-comm-overlap), where the plan has TP to overlap */
    const int tpo = zp_plan_tp_overlapped(p);
    /* sharded data parallelism as FSDP2 runs it, where it differs from DeepSpeed's: hybrid shards of G ranks
     * (HSDPg) and stage 3's parameters kept gathered after the forward (keep-params) */
    char fsdp[48] = "";
    int n = 0;
    if (p->shard_group > 0 && p->shard_group < p->dp)
        n = snprintf(fsdp, sizeof fsdp, " HSDP%lld", (long long)p->shard_group);
    if (p->stage == 3 && !zp_plan_reshards(p) && n >= 0 && n < (int)sizeof fsdp)
        snprintf(fsdp + n, sizeof fsdp - (size_t)n, " keep-params");
    snprintf(buf, len, "%s%s%s%s%s%s%s%s%s%s%s%s%s%s", ep, p->pa_cpu ? "Pa+cpu " : (p->pa ? "Pa " : ""),
             p->cb ? "CB " : "", p->md ? "MD " : "", ckpt, p->act_fp8_store ? " act-fp8" : "",
             zp_plan_moments_saved(p) > 0 ? " adam-narrow" : "", p->sp ? " SP" : "",
             tpo ? " tp-overlap:" : "", tpo ? zp_tp_overlap_name((zp_tp_overlap)p->tp_overlap) : "", pipe, fsdp,
             p->offload != ZP_OFFLOAD_NONE ? " offload:" : "",
             p->offload != ZP_OFFLOAD_NONE ? zp_offload_name(p->offload) : "");
}

/* The columns of one plan, in the what-if's plans table and the sweep's: readers see the stage, MP, DP,
 * batch, options, memory, fit and speed; CSV and JSON get the data columns too. Their JSON keys are the
 * "plans" of the JSON contract (README). */
enum {
    P_STAGE, P_STAGE_NUM, P_MP, P_PP, P_DP, P_EP, P_CP, P_MICRO, P_ACCUM, P_GLOBAL, P_PA, P_PA_CPU, P_CB, P_MD,
    P_CKPT, P_BUCKET, P_OFFLOAD, P_SCHEDULE, P_VSTAGES, P_SP, P_RECOMPUTE, P_OPTIONS, P_MEM_PARAMS, P_MEM_GRADS,
    P_MEM_OPT, P_MEM_ACT, P_MEM_BUF, P_MEM_FRAG, P_GPU_GB, P_HOST_GB, P_FITS, P_STEP, P_SAMPLES, P_TOKENS_GPU, P_TOKENS, P_MFU, P_MODEL_TFLOPS, P_TFLOPS, P_PFLOPS,
    P_T_COMPUTE, P_T_MP, P_T_DP, P_T_OPT, P_T_OFFLOAD, P_T_PP, P_T_HOST, P_METHOD, P_SIM, P_UNSIM, P_PRECISION, P_GRAD_BYTES,
    P_REASON, P_FP8_RECIPE, P_PP_LAYOUT, P_DISPATCHER, P_EP_OVERLAP, P_SHARED_OVERLAP, P_RC_MODULES, P_ACT_FP8, P_ADAM_MOMENTS, P_P2P_OVERLAP, P_P2P_WARMUP_FLUSH, P_NCOLS
};

void zp_report_seconds(double s, char *buf, size_t len)
{
    int decimals = 1;
    if (s > 0 && isfinite(s)) {
        decimals = 3 - (int)floor(log10(s));
        decimals = decimals < 1 ? 1 : decimals > 9 ? 9 : decimals;
    }
    snprintf(buf, len, "%.*f", decimals, s);
}

/* A number shown as `mark` and the number (">=14.1"), exact in CSV and JSON. */
static zp_status set_bounded(zp_table *t, int col, double v, const char *mark, const char *fmt)
{
    char num[48], text[64];
    snprintf(num, sizeof num, fmt, v);
    snprintf(text, sizeof text, "%s%s", mark, num);
    return zp_table_set_num_text(t, col, v, text);
}

/* {CSV key, header, JSON key ("" none, NULL the CSV key)}; DATA: a JSON-only column */
#define DATA(json) {NULL, NULL, json, 0}
static const zp_col g_plan_cols[P_NCOLS] = {
    [P_STAGE] = {"stage", "Stage", ""}, /* "2 Pos+g"; JSON has the number */
    [P_STAGE_NUM] = DATA("stage"),
    [P_MP] = {"mp", "MP"},
    [P_PP] = DATA("pp"), /* a reader column ("PP", and in CSV) when a plan has pipeline stages */
    [P_DP] = {"dp", "DP"},
    [P_EP] = DATA("ep"), /* expert-parallel degree (1: dense, or every rank holds every expert) */
    [P_CP] = DATA("cp"), /* context-parallel degree: each sequence split over cp of the DP ranks (1: none) */
    [P_MICRO] = {"micro_batch", "Micro"},
    [P_ACCUM] = {"grad_accum", "Accum"},
    [P_GLOBAL] = {"global_batch", "Global"},
    [P_PA] = DATA("pa"), [P_PA_CPU] = DATA("pa_cpu"), [P_CB] = DATA("cb"), [P_MD] = DATA("md"),
    [P_CKPT] = DATA("checkpoint"), [P_BUCKET] = DATA("bucket"), [P_OFFLOAD] = DATA("offload"),
    [P_SCHEDULE] = DATA("schedule"), [P_VSTAGES] = DATA("virtual_stages"), [P_SP] = DATA("sp"),
    [P_RECOMPUTE] = DATA("recompute"),
    [P_OPTIONS] = {"options", "ZeRO-R / options", ""},
    [P_MEM_PARAMS] = DATA("memory_gb.params"), [P_MEM_GRADS] = DATA("memory_gb.grads"),
    [P_MEM_OPT] = DATA("memory_gb.optimizer"), [P_MEM_ACT] = DATA("memory_gb.activations"),
    [P_MEM_BUF] = DATA("memory_gb.buffers"), [P_MEM_FRAG] = DATA("memory_gb.fragmentation"),
    [P_GPU_GB] = {"gpu_mem_gb", "GPU GB", "memory_gb.total"},
    [P_HOST_GB] = {"host_mem_gb", "Host GB", "host_memory_gb"},
    [P_FITS] = {"fits", "Fits"},
    [P_STEP] = {"step_time_s", "Step (s)"},
    [P_SAMPLES] = {"samples_per_s", "Samples/s"},
    /* a team's units (planner/zp_units.h): tokens = global batch x sequence per step; MFU by PaLM's
       appendix B (model FLOPs, no recompute) beside the executed TFLOP/s (recompute included) */
    [P_TOKENS_GPU] = {"tokens_per_s_per_gpu", "Tokens/s/GPU"},
    [P_TOKENS] = {"tokens_per_s", NULL},
    [P_MFU] = {"mfu", "MFU"},
    [P_MODEL_TFLOPS] = {"model_tflops_per_gpu", NULL},
    [P_TFLOPS] = {"tflops_per_gpu", "Exec TFLOPs/GPU"},
    [P_PFLOPS] = {"pflops", "PFLOPs"},
    [P_T_COMPUTE] = DATA("time_breakdown_s.compute"), [P_T_MP] = DATA("time_breakdown_s.mp_comm"),
    [P_T_DP] = DATA("time_breakdown_s.dp_comm"), [P_T_OPT] = DATA("time_breakdown_s.optimizer"),
    [P_T_OFFLOAD] = DATA("time_breakdown_s.offload"), [P_T_PP] = DATA("time_breakdown_s.pp_comm"),
    /* of the parts above, the GPU waiting for the host's dispatch (simulated plans only) */
    [P_T_HOST] = {NULL, NULL, "time_breakdown_s.host_wait", ZP_COL_OMIT_UNSET},
    [P_METHOD] = {"method", "Method"},
    [P_SIM] = DATA("sim"), /* which simulation ran: "reduced" or "full"; null when none did */
    /* method "bound": why it was not simulated (step_time_s is then a lower bound) */
    [P_UNSIM] = {NULL, NULL, "unsimulated", ZP_COL_OMIT_UNSET},
    [P_PRECISION] = {"precision", NULL}, /* "fp16", "bf16" or "fp32" */
    [P_GRAD_BYTES] = {"grad_bytes", NULL}, /* bytes of a gradient element: 2, or 4 (fp32) */
    [P_REASON] = {NULL, NULL, "reason", ZP_COL_OMIT_UNSET}, /* plans that do not fit */
    [P_FP8_RECIPE] = {NULL, NULL, "fp8_recipe", ZP_COL_OMIT_UNSET}, /* FP8 training's recipe (precision "fp8") */
    /* an uneven pipeline layout, as the options that state it (zp_pp_layout_text): given, or the search's
       embedding and loss counted as layers (zp_plan.pp_acc) */
    [P_PP_LAYOUT] = {NULL, NULL, "pp_layout", ZP_COL_OMIT_UNSET},
    [P_DISPATCHER] = {NULL, NULL, "moe_dispatcher", ZP_COL_OMIT_UNSET}, /* an MoE plan's, when not alltoall */
    [P_EP_OVERLAP] = {NULL, NULL, "ep_overlap", ZP_COL_OMIT_UNSET}, /* true: the all-to-alls beside another pass */
    /* true: the shared experts beside the all-to-alls (--moe-shared-expert-overlap) */
    [P_SHARED_OVERLAP] = {NULL, NULL, "moe_shared_expert_overlap", ZP_COL_OMIT_UNSET},
    /* what selective recompute re-runs, where it is not the attention core alone: Megatron-core's names */
    [P_RC_MODULES] = {NULL, NULL, "recompute_modules", ZP_COL_OMIT_UNSET},
    /* true: a SwiGLU's input kept as FP8 for backward (--activation-func-fp8-input-store) */
    [P_ACT_FP8] = {NULL, NULL, "activation_func_fp8_input_store", ZP_COL_OMIT_UNSET},
    /* Adam's m and v types where not fp32 ("bf16", or "bf16,fp32": m's, then v's; --adam-moments) */
    [P_ADAM_MOMENTS] = {NULL, NULL, "adam_moments", ZP_COL_OMIT_UNSET},
    /* true: the interleaved schedule's steady-state pipeline sends beside the next pass (--overlap-p2p-comm,
     * Megatron-LM's default); absent without it or without that schedule */
    [P_P2P_OVERLAP] = {NULL, NULL, "overlap_p2p_comm", ZP_COL_OMIT_UNSET},
    /* true: the warm-up's and the flush's sends too (--overlap-p2p-comm all) */
    [P_P2P_WARMUP_FLUSH] = {NULL, NULL, "overlap_p2p_comm_warmup_flush", ZP_COL_OMIT_UNSET},
};
#undef DATA

int zp_report_plan_ncols(void) { return P_NCOLS; }

void zp_report_plan_cols(zp_col *cols, int pp)
{
    memcpy(cols, g_plan_cols, sizeof g_plan_cols);
    if (pp)
        cols[P_PP] = (zp_col){"pp", "PP", NULL, 0};
}

zp_status zp_report_plan_cells(zp_table *t, int col0, const zp_eval *e)
{
    const zp_plan *p = &e->plan;
    char opts[256], stage[32];
    zp_report_plan_options(p, opts, sizeof opts);
    snprintf(stage, sizeof stage, "%d %s", p->stage, zp_stage_get(p->stage)->name);
    ZP_TRY(zp_table_set_str(t, col0 + P_STAGE, stage));
    const long long ints[] = {p->stage, p->mp,          p->pp,          zp_plan_replicas(p),
                              p->ep,    p->cp,          p->micro_batch, p->grad_accum}; /* P_STAGE_NUM.. */
    for (int k = 0; k < 8; k++)
        ZP_TRY(zp_table_set_int(t, col0 + P_STAGE_NUM + k, ints[k]));
    ZP_TRY(zp_table_set_str(t, col0 + P_SCHEDULE, p->pp > 1 ? zp_pp_schedule_name(p->schedule) : "none"));
    ZP_TRY(zp_table_set_int(t, col0 + P_VSTAGES, p->vstages));
    ZP_TRY(zp_table_set_bool(t, col0 + P_SP, p->sp));
    ZP_TRY(zp_table_set_str(t, col0 + P_RECOMPUTE, zp_recompute_name(zp_plan_recompute(p))));
    ZP_TRY(zp_table_set_num(t, col0 + P_GLOBAL, e->global_batch, "%.0f"));
    const int flags[] = {p->pa, p->pa_cpu, p->cb, p->md, p->checkpoint}; /* P_PA.. */
    for (int k = 0; k < 5; k++)
        ZP_TRY(zp_table_set_bool(t, col0 + P_PA + k, flags[k]));
    ZP_TRY(zp_table_set_num(t, col0 + P_BUCKET, p->bucket, "%g"));
    ZP_TRY(zp_table_set_str(t, col0 + P_OFFLOAD, zp_offload_name(p->offload)));
    ZP_TRY(zp_table_set_str(t, col0 + P_OPTIONS, opts));
    const double gb[] = {e->mem.params,      e->mem.grads,   e->mem.optimizer,
                         e->mem.activations, e->mem.buffers, e->mem.fragmentation}; /* P_MEM_PARAMS.. */
    for (int k = 0; k < 6; k++)
        ZP_TRY(zp_table_set_num(t, col0 + P_MEM_PARAMS + k, gb[k] / 1e9, "%g"));
    ZP_TRY(zp_table_set_num(t, col0 + P_GPU_GB, e->mem.total / 1e9, "%.1f"));
    ZP_TRY(zp_table_set_num(t, col0 + P_HOST_GB, e->mem.host / 1e9, "%.1f"));
    ZP_TRY(zp_table_set_bool(t, col0 + P_FITS, e->fits));
    /* a bound reads as one: the step at least, the throughputs at most */
    const int bound = e->method && strcmp(e->method, "bound") == 0;
    char step[48], stext[64];
    zp_report_seconds(e->time.total, step, sizeof step);
    snprintf(stext, sizeof stext, "%s%s", bound ? ">=" : "", step);
    ZP_TRY(zp_table_set_num_text(t, col0 + P_STEP, e->time.total, stext));
    ZP_TRY(set_bounded(t, col0 + P_SAMPLES, e->samples_per_s, bound ? "<=" : "", "%.4g"));
    ZP_TRY(set_bounded(t, col0 + P_TOKENS_GPU, e->tokens_per_s_per_gpu, bound ? "<=" : "", "%.0f"));
    ZP_TRY(set_bounded(t, col0 + P_TOKENS, e->tokens_per_s, bound ? "<=" : "", "%.0f"));
    char mfu[48]; /* a fraction in CSV and JSON, a percentage to read */
    snprintf(mfu, sizeof mfu, "%s%.1f%%", bound ? "<=" : "", 100.0 * e->mfu);
    ZP_TRY(zp_table_set_num_text(t, col0 + P_MFU, e->mfu, mfu));
    ZP_TRY(set_bounded(t, col0 + P_MODEL_TFLOPS, e->model_tflops_per_gpu, bound ? "<=" : "", "%.1f"));
    ZP_TRY(set_bounded(t, col0 + P_TFLOPS, e->tflops_per_gpu, bound ? "<=" : "", "%.1f"));
    ZP_TRY(set_bounded(t, col0 + P_PFLOPS, e->pflops, bound ? "<=" : "", "%.2f"));
    const double ts[] = {e->time.compute, e->time.mp_comm, e->time.dp_comm, e->time.optimizer,
                         e->time.offload, e->time.pp_comm}; /* P_T_COMPUTE.. */
    for (int k = 0; k < 6; k++)
        ZP_TRY(zp_table_set_num(t, col0 + P_T_COMPUTE + k, ts[k], "%g"));
    if (e->time.host_wait > 0)
        ZP_TRY(zp_table_set_num(t, col0 + P_T_HOST, e->time.host_wait, "%g"));
    ZP_TRY(zp_table_set_str(t, col0 + P_METHOD, e->method));
    if (e->sim)
        ZP_TRY(zp_table_set_str(t, col0 + P_SIM, e->sim));
    if (e->unsimulated)
        ZP_TRY(zp_table_set_str(t, col0 + P_UNSIM, e->unsimulated));
    const zp_fp8_info *f8 = zp_fp8_get(p->fp8);
    ZP_TRY(zp_table_set_str(t, col0 + P_PRECISION, f8 ? "fp8" : zp_plan_precision_name(p)));
    if (f8)
        ZP_TRY(zp_table_set_str(t, col0 + P_FP8_RECIPE, f8->name));
    if (p->pp > 1 && zp_pp_uneven(p)) {
        char layout[512];
        zp_pp_layout_text(p, layout, sizeof layout);
        ZP_TRY(zp_table_set_str(t, col0 + P_PP_LAYOUT, layout));
    }
    ZP_TRY(zp_table_set_num(t, col0 + P_GRAD_BYTES, zp_plan_grad_bytes(p), "%g"));
    if (p->ep > 1 && p->dispatcher != ZP_DISPATCH_ALLTOALL)
        ZP_TRY(zp_table_set_str(t, col0 + P_DISPATCHER, zp_dispatch_get(p->dispatcher)->name));
    if (p->ep > 1 && p->ep_overlap)
        ZP_TRY(zp_table_set_bool(t, col0 + P_EP_OVERLAP, 1));
    if (p->shared_overlap)
        ZP_TRY(zp_table_set_bool(t, col0 + P_SHARED_OVERLAP, 1));
    if (p->act_fp8_store)
        ZP_TRY(zp_table_set_bool(t, col0 + P_ACT_FP8, 1));
    if (zp_plan_p2p_overlapped(p)) {
        ZP_TRY(zp_table_set_bool(t, col0 + P_P2P_OVERLAP, 1));
        if (p->overlap_p2p_warmup_flush)
            ZP_TRY(zp_table_set_bool(t, col0 + P_P2P_WARMUP_FLUSH, 1));
    }
    if (zp_plan_moments_saved(p) > 0) {
        const char *m = zp_adam_moment_name(p->exp_avg_bytes), *v = zp_adam_moment_name(p->exp_avg_sq_bytes);
        char both[16];
        snprintf(both, sizeof both, "%s%s%s", m, strcmp(m, v) ? "," : "", strcmp(m, v) ? v : "");
        ZP_TRY(zp_table_set_str(t, col0 + P_ADAM_MOMENTS, both));
    }
    if (p->selective && p->rc_modules) {
        char mods[128];
        zp_rc_module_text(p->rc_modules, ",", mods, sizeof mods);
        ZP_TRY(zp_table_set_str(t, col0 + P_RC_MODULES, mods));
    }
    if (!e->fits)
        ZP_TRY(zp_table_set_str(t, col0 + P_REASON, e->reason));
    return ZP_OK;
}

zp_status zp_report_plan_none(zp_table *t, int col0, const char *what, const char *reason)
{
    ZP_TRY(zp_table_set_str(t, col0 + P_OPTIONS, what));
    ZP_TRY(zp_table_set_bool(t, col0 + P_FITS, 0));
    return reason ? zp_table_set_str(t, col0 + P_REASON, reason) : ZP_OK;
}

/* The plans table: every plan (fitting first, best first) for CSV and JSON; readers see the best `top`
 * fitting ones: a rank column, then the plan's. */
/* With --train-tokens: what the budget takes at each plan's speed (JSON only: the text shows the
 * recommended plan's as a fact). */
enum { T_DAYS, T_GPU_HOURS, T_ENERGY, T_COST, T_NCOLS };
static const zp_col g_train_cols[T_NCOLS] = {
    [T_DAYS] = {NULL, NULL, "train_days", ZP_COL_OMIT_UNSET},
    [T_GPU_HOURS] = {NULL, NULL, "gpu_hours", ZP_COL_OMIT_UNSET},
    [T_ENERGY] = {NULL, NULL, "energy_mwh", ZP_COL_OMIT_UNSET},
    [T_COST] = {NULL, NULL, "cost_usd", ZP_COL_OMIT_UNSET},
};

static zp_status train_cells(zp_table *t, int col0, const zp_whatif *w, const zp_eval *e)
{
    if (!(w->train_tokens > 0) || !e->fits || !(e->tokens_per_s > 0))
        return ZP_OK;
    zp_train_cost c;
    zp_units_train(e, w->cluster, w->train_tokens, w->gpu_hour_price, &c);
    ZP_TRY(zp_table_set_num(t, col0 + T_DAYS, c.days, "%.1f"));
    ZP_TRY(zp_table_set_num(t, col0 + T_GPU_HOURS, c.gpu_hours, "%.0f"));
    ZP_TRY(zp_table_set_num(t, col0 + T_ENERGY, c.energy_mwh, "%.1f"));
    if (w->gpu_hour_price > 0)
        ZP_TRY(zp_table_set_num(t, col0 + T_COST, c.cost_usd, "%.0f"));
    return ZP_OK;
}

/* The plans table: every plan (fitting first, best first) for CSV and JSON; readers see the best `top`
 * fitting ones: a rank column, then the plan's. */
static zp_status plans_table(const zp_whatif *w, zp_table **out)
{
    int pp = 0;
    for (int i = 0; i < w->result->n; i++)
        pp |= w->result->plans[i].plan.pp > 1;
    zp_col cols[1 + P_NCOLS + T_NCOLS] = {{"rank", "#", "", 0}};
    zp_report_plan_cols(cols + 1, pp);
    memcpy(cols + 1 + P_NCOLS, g_train_cols, sizeof g_train_cols);
    zp_table *t = zp_table_new_cols("Plans that fit, best first", 1 + P_NCOLS + T_NCOLS, cols);
    if (!t)
        return ZP_FAIL(ZP_ENOMEM, "out of memory");
    int shown = 0;
    for (int i = 0; i < w->result->n; i++) {
        const zp_eval *e = &w->result->plans[i];
        TRY_T(zp_table_add_row(t));
        if (e->fits && !e->dominated && shown < w->top)
            shown++; /* dominated plans (the same batch with more extra work) are data only */
        else
            zp_table_hide_row(t);
        TRY_T(zp_table_set_num(t, 0, i + 1, "%.0f"));
        TRY_T(zp_report_plan_cells(t, 1, e));
        TRY_T(train_cells(t, 1 + P_NCOLS, w, e));
    }
    *out = t;
    return ZP_OK;
}

zp_status zp_report_memory_table(const zp_eval *e, double gpu_mem, double reserve, zp_table **out)
{
    static const char *const keys[] = {"category", "gb", "share"};
    static const char *const heads[] = {"Category", "GB per GPU", "Share"};
    zp_table *t = new_table("Memory per GPU of the recommended plan", 3, keys, heads);
    if (!t)
        return ZP_FAIL(ZP_ENOMEM, "out of memory");
    const char *dt = zp_plan_precision_name(&e->plan);
    char pname[48], gname[48];
    const zp_fp8_info *f8 = zp_fp8_get(e->plan.fp8);
    snprintf(pname, sizeof pname, "%s parameters%s", dt, f8 && f8->te ? " and FP8 copies" : "");
    snprintf(gname, sizeof gname, "%s gradients", zp_plan_grad_bytes(&e->plan) == 4.0 ? "fp32" : dt);
    const struct {
        const char *name;
        double v;
        int share; /* of the GPU's memory */
    } rows[] = {
        {pname, e->mem.params, 1},
        {gname, e->mem.grads, 1},
        {"optimizer states", e->mem.optimizer, 1},
        {"activations", e->mem.activations, 1},
        {"  of which checkpoints", e->mem.checkpoints, 1},
        {"buffers", e->mem.buffers, 1},
        {"fragmentation", e->mem.fragmentation, 1},
        {"total of the plan", e->mem.total, 1},
        {"reserve (CUDA context, NCCL, workspaces)", reserve, 1},
        {"free", gpu_mem - reserve - e->mem.total, 1},
        {"GPU memory", gpu_mem, 1},
        {"host memory (per GPU)", e->mem.host, 0},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        TRY_T(zp_table_add_row(t));
        TRY_T(zp_table_set_str(t, 0, rows[i].name));
        TRY_T(zp_table_set_num(t, 1, rows[i].v / 1e9, "%.2f"));
        if (rows[i].share)
            TRY_T(zp_table_set_num(t, 2, 100.0 * rows[i].v / gpu_mem, "%.1f%%"));
        else
            TRY_T(zp_table_set_str(t, 2, ""));
    }
    *out = t;
    return ZP_OK;
}

/* With pipeline stages: the memory of every stage of the recommended plan (the what-if reports the worst;
 * JSON has them all as "pipeline_stages"). */
static zp_status stages_table(const zp_whatif *w, zp_table **out)
{
    static const char *const keys[] = {"stage", "params", "grads", "optimizer", "activations", "buffers", "total"};
    static const char *const heads[] = {"Stage", "Params GB", "Grads GB", "Optimizer GB", "Activations GB",
                                        "Buffers GB", "Total GB"};
    zp_table *t = new_table("Memory per GPU of each pipeline stage of the recommended plan", 7, keys, heads);
    if (!t)
        return ZP_FAIL(ZP_ENOMEM, "out of memory");
    int worst = 0;
    for (int i = 0; i < w->nstages; i++) {
        const zp_memory *m = &w->stage_mem[i];
        if (m->total > w->stage_mem[worst].total)
            worst = i;
        TRY_T(zp_table_add_row(t));
        TRY_T(zp_table_set_int(t, 0, i));
        const double v[] = {m->params, m->grads, m->optimizer, m->activations, m->buffers, m->total};
        for (int k = 0; k < 6; k++)
            TRY_T(zp_table_set_num(t, 1 + k, v[k] / 1e9, "%.2f"));
    }
    TRY_T(zp_table_add_note(t, "stage %d needs the most (%.2f GB): the first stage holds the most micro-batches in "
                               "flight, the last the LM head and its logits",
                            worst, w->stage_mem[worst].total / 1e9));
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
    char opts[128];
    zp_report_plan_options(&e->plan, opts, sizeof opts);
    const zp_stage_info *si = zp_stage_get(e->plan.stage);
    char pp[256] = "", layout[192] = "";
    if (e->plan.pp > 1 && zp_pp_uneven(&e->plan)) { /* the uneven layout, as the options that state it */
        layout[0] = ',', layout[1] = ' ';
        zp_pp_layout_text(&e->plan, layout + 2, sizeof layout - 2);
    }
    if (e->plan.pp > 1 && e->plan.schedule == ZP_PP_INTERLEAVED)
        snprintf(pp, sizeof pp, ", PP %lld (interleaved, %d virtual stages%s)", (long long)e->plan.pp,
                 e->plan.vstages, layout);
    else if (e->plan.pp > 1)
        snprintf(pp, sizeof pp, ", PP %lld (%s%s)", (long long)e->plan.pp, zp_pp_schedule_name(e->plan.schedule),
                 layout);
    snprintf(buf, len, "ZeRO stage %d (%s), MP %lld%s, DP %lld, micro-batch %lld x %lld accumulation = global batch %.0f, %s",
             e->plan.stage, si->name, (long long)e->plan.mp, pp, (long long)zp_plan_replicas(&e->plan), (long long)e->plan.micro_batch,
             (long long)e->plan.grad_accum, e->global_batch, opts);
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

static json_t *fix_json(const zp_fix *f)
{
    const zp_eval *e = &f->plan;
    return json_pack("{s:s, s:s, s:i, s:I, s:I, s:I, s:I, s:f, s:b, s:b, s:s, s:f, s:f, s:f, s:f, s:f, s:f, s:s}",
                     "change",
                     f->change, "what", f->what, "stage", e->plan.stage, "mp", (json_int_t)e->plan.mp, "dp",
                     (json_int_t)e->plan.dp, "micro_batch", (json_int_t)e->plan.micro_batch, "grad_accum",
                     (json_int_t)e->plan.grad_accum, "global_batch", e->global_batch, "pa", e->plan.pa, "pa_cpu",
                     e->plan.pa_cpu, "offload", zp_offload_name(e->plan.offload), "memory_gb", e->mem.total / 1e9,
                     "host_memory_gb", e->mem.host / 1e9, "step_time_s", e->time.total, "tokens_per_s_per_gpu",
                     e->tokens_per_s_per_gpu, "mfu", e->mfu, "tflops_per_gpu", e->tflops_per_gpu, "method",
                     e->method);
}

/* No plan fits: why (the plan nearest to fitting), the largest micro-batch, sequence and model that fit
 * as given, and the changes of one option that make a plan fit (JSON: "near_miss"). */
static zp_status near_miss_items(zp_doc *d, const zp_whatif *w)
{
    const zp_near_miss *nm = w->near;
    if (!nm) {
        ZP_TRY(zp_doc_add_text(d, "No plan fits: %s on %lld GPUs with %.4g GB each.", w->model->name,
                               (long long)w->gpus, w->gpu_mem / 1e9));
        return ZP_OK;
    }
    const zp_eval *c = &nm->closest;
    char desc[512];
    describe_plan(c, desc, sizeof desc);
    ZP_TRY(zp_doc_add_text(d, "No plan fits the options given (exit status 3). The nearest: %s: %s.", desc, c->reason));
    zp_doc_strong(d);
    ZP_TRY(zp_doc_add_list(d, "As given, what fits instead:", 8, NULL));
    if (nm->max_micro_batch > 0)
        ZP_TRY(zp_doc_add_entry(d, "micro-batch %lld or less (--micro-batch %lld)", (long long)nm->max_micro_batch,
                                (long long)nm->max_micro_batch));
    if (nm->max_seq > 0)
        ZP_TRY(zp_doc_add_entry(d, "sequences of %lld tokens or less (--seq %lld)", (long long)nm->max_seq,
                                (long long)nm->max_seq));
    if (nm->max_layers > 0) {
        char ps[32];
        zp_size_format(nm->max_params, ps, sizeof ps);
        ZP_TRY(zp_doc_add_entry(d, "a model of this shape with %lld blocks or fewer (%s parameters; was %lld blocks)",
                                (long long)nm->max_layers, ps, (long long)w->model->layers));
    }
    if (nm->max_micro_batch <= 0 && nm->max_seq <= 0 && nm->max_layers <= 0)
        ZP_TRY(zp_doc_add_entry(d, "nothing: not one block of this model at micro-batch 1 and one token"));
    if (nm->nfix > 0) {
        ZP_TRY(zp_doc_add_list(d, "What fits with one change (the fastest first; more GPUs last):", ZP_NEAR_MAX_FIXES,
                               NULL));
        for (int i = 0; i < nm->nfix; i++) {
            const zp_fix *f = &nm->fix[i];
            const zp_eval *e = &f->plan;
            char opts[96];
            zp_report_plan_options(&e->plan, opts, sizeof opts);
            const int bound = strcmp(e->method, "bound") == 0;
            char step[48];
            zp_report_seconds(e->time.total, step, sizeof step);
            ZP_TRY(zp_doc_add_entry(d,
                                    "%s (%s): stage %d, MP %lld, DP %lld, micro-batch %lld x %lld = %.0f, %s; "
                                    "%.1f GB of %.1f GB usable; step %s%s s, %s%.1f TFLOPs/GPU (%s)",
                                    f->change, f->what, e->plan.stage, (long long)e->plan.mp, (long long)e->plan.dp,
                                    (long long)e->plan.micro_batch, (long long)e->plan.grad_accum, e->global_batch,
                                    opts, e->mem.total / 1e9, (w->gpu_mem - w->reserve) / 1e9, bound ? ">=" : "",
                                    step, bound ? "<=" : "", e->tflops_per_gpu, e->method));
        }
    } else {
        ZP_TRY(zp_doc_add_text(d, "No change of one option makes a plan fit, nor up to 64 times the GPUs: the model "
                                  "is too large for this cluster (see the largest that fits above)."));
    }
    json_t *fixes = json_array();
    for (int i = 0; i < nm->nfix && fixes; i++)
        json_array_append_new(fixes, fix_json(&nm->fix[i]));
    ZP_TRY(zp_doc_set_key(d, "near_miss",
                          json_pack("{s:f, s:s, s:I, s:I, s:I, s:f, s:o*}", "closest_memory_gb", c->mem.total / 1e9,
                                    "reason", c->reason, "max_micro_batch", (json_int_t)nm->max_micro_batch, "max_seq",
                                    (json_int_t)nm->max_seq, "max_layers", (json_int_t)nm->max_layers, "max_params",
                                    nm->max_params, "fixes", fixes)));
    return ZP_OK;
}

/* The "Precision" fact of a report: bytes per parameter and the GEMM peak of the plan's data type. */
zp_status zp_report_precision_fact(zp_doc *d, const zp_plan *p0, const zp_cluster *cl)
{
    const char *dt = zp_plan_precision_name(p0);
    const double per_param = 2.0 * p0->param_bytes / 2.0 + zp_plan_grad_bytes(p0) + zp_plan_optimizer_bytes(p0);
    const zp_fp8_info *f8 = zp_fp8_get(p0->fp8);
    if (f8) {
        char cache[128];
        snprintf(cache, sizeof cache, ", and %.5g more per linear parameter for the cached FP8 weights and %s",
                 zp_fp8_weight_cache_bytes(p0->fp8), f8->scale_weight > 0 ? "columnwise copies with their block scales"
                                                                       : "transposes");
        return zp_doc_add_fact(
            d, "Precision",
            "fp8 (recipe %s%s): the blocks' linear GEMMs in FP8 at %.0f TFLOP/s peak with the recipe's casts, "
            "attention, the LM head and the element-wise kernels in bf16 at %.0f; bf16 parameters, %s gradients, "
            "%g bytes of optimizer state: %g bytes per parameter%s (--precision, --fp8-recipe)",
            f8->name, f8->te ? ", Transformer Engine" : ", torchao float8 without torch.compile",
            zp_cluster_peak_flops(cl, "fp8") / 1e12, zp_cluster_peak_flops(cl, "bf16") / 1e12,
            zp_plan_grad_bytes(p0) == 4.0 ? "fp32" : "bf16", zp_plan_optimizer_bytes(p0), per_param,
            f8->te ? cache : p0->fp8_all_gather ? "; FSDP2 all-gathers the weights in FP8" : "");
    }
    return zp_doc_add_fact(
        d, "Precision",
        "%s%s: %g-byte parameters, %s gradients, %g bytes of optimizer state: %g bytes per parameter; GEMMs at "
        "%.0f TFLOP/s peak%s (--precision, --grad-accum-dtype)",
        dt, p0->param_bytes == 2.0 ? " mixed precision" : " training", p0->param_bytes,
        zp_plan_grad_bytes(p0) == 4.0 ? "fp32" : dt, zp_plan_optimizer_bytes(p0), per_param,
        zp_cluster_peak_flops(cl, dt) / 1e12,
        p0->param_bytes == 2.0 && p0->bf16 && !zp_cluster_has_bf16(cl)
            ? ", the fp32 rate: this GPU has no bf16 tensor cores (use fp16)"
            : "");
}

/* The what-if's Model and Cluster facts, with their JSON keys. */
/* The JSON contract's "model": its size, and its architecture as the plans are shaped from it (attention,
 * KV heads and head size, MLP, norm, positions; the routed experts, top-k and shared experts of an MoE
 * model) with the parameters a token passes through (active_params: params of a dense model). */
static json_t *model_json(const zp_model *m)
{
    json_t *o = json_pack("{s:s, s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:f}", "name", m->name, "family",
                          zp_model_family(m), "layers",
                          (json_int_t)m->layers, "hidden", (json_int_t)m->hidden, "heads", (json_int_t)m->heads,
                          "seq", (json_int_t)m->seq, "vocab", (json_int_t)m->vocab, "ffn", (json_int_t)m->ffn,
                          "params", zp_model_params(m));
    json_t *arch = json_pack("{s:f, s:s, s:I, s:I, s:s, s:s, s:s, s:I, s:I, s:I}", "active_params",
                             zp_model_params_active(m), "attention", zp_model_attention_name(m->attn), "kv_heads",
                             (json_int_t)zp_model_kv_heads(m), "head_dim", (json_int_t)zp_model_head_dim(m), "mlp",
                             zp_model_mlp_name(m->mlp), "norm", zp_model_norm_name(m->norm), "position",
                             zp_model_position_name(m->pos), "experts", (json_int_t)m->experts, "top_k",
                             (json_int_t)(m->experts > 0 ? m->top_k : 0), "shared_experts",
                             (json_int_t)m->shared_experts);
    if (!o || !arch || json_object_update(o, arch) != 0) {
        json_decref(o);
        o = NULL;
    }
    json_decref(arch);
    return o;
}

static zp_status whatif_model_cluster(zp_doc *d, const zp_whatif *w)
{
    const zp_model *m = w->model;
    const zp_cluster *cl = w->cluster;
    char ps[32];
    zp_size_format(zp_model_params(m), ps, sizeof ps);
    ZP_TRY(zp_doc_add_fact(d, "Model",
                           "%s: %lld layers, hidden %lld, %lld heads, seq %lld, vocab %lld, FFN %lld; "
                           "%.4g parameters (%s)%s%s",
                           m->name, (long long)m->layers, (long long)m->hidden, (long long)m->heads,
                           (long long)m->seq, (long long)m->vocab, (long long)m->ffn, zp_model_params(m), ps,
                           w->model_note ? "; " : "", w->model_note ? w->model_note : ""));
    ZP_TRY(zp_doc_set_key(d, "model", model_json(m)));
    char gpus[200], mem[200];
    zp_report_gpus_label(cl, w->gpus, gpus, sizeof gpus);
    zp_report_gpu_mem_label(cl, w->gpu_mem, mem, sizeof mem);
    ZP_TRY(zp_doc_add_fact(d, "Cluster",
                           "%s, %s, %s, %.4g GB usable by a plan (%.4g GB reserved for the CUDA context, library "
                           "workspaces and NCCL buffers: --reserve)",
                           cl->name, gpus, mem, (w->gpu_mem - w->reserve) / 1e9, w->reserve / 1e9));
    ZP_TRY(zp_doc_set_key(d, "cluster",
                          json_pack("{s:s, s:I, s:i, s:f, s:f}", "name", cl->name, "gpus", (json_int_t)w->gpus,
                                    "gpus_per_node", cl->gpus_per_node, "gpu_mem_gb", w->gpu_mem / 1e9,
                                    "reserve_gb", w->reserve / 1e9)));
    return ZP_OK;
}

/* The what-if's Method fact: simulation (with why some fitting plans show bounds), memory model alone when
 * nothing fits, or the analytic step time. */
static zp_status whatif_method(zp_doc *d, const zp_whatif *w)
{
    const zp_search_result *r = w->result;
    const zp_cluster *cl = w->cluster;
    if (r->n_simulated > 0 || r->n_pruned + r->n_dominated + r->n_capped + r->n_too_large > 0) {
        /* every fitting plan is simulated or shows a bound of what its simulation could give */
        char why[640] = "";
        int len = 0;
        if (r->n_pruned)
            len += snprintf(why + len, sizeof why - (size_t)len,
                            " %d cannot beat the best: their kernels or their collectives alone take longer than "
                            "its step (shown as "
                            "bounds, >=).", r->n_pruned);
        if (r->n_dominated && len < (int)sizeof why)
            len += snprintf(why + len, sizeof why - (size_t)len,
                            " %d run the same batch as another plan with more extra work (Pa, Pa+cpu, offload buy "
                            "memory, not speed; listed in --format json).", r->n_dominated);
        if (r->n_capped && len < (int)sizeof why)
            len += snprintf(why + len, sizeof why - (size_t)len,
                            " %d were left unsimulated, beyond the simulations allowed (shown as bounds, >=).",
                            r->n_capped);
        if (r->n_too_large && len < (int)sizeof why)
            snprintf(why + len, sizeof why - (size_t)len,
                     " %d need the full simulation, which takes at most %d nodes (shown as bounds, >=).",
                     r->n_too_large, ZP_SIM_MAX_FULL_NODES);
        ZP_TRY(zp_doc_add_fact(d, "Method",
                               "SimGrid simulation of one step (streams overlapped, collectives as flows: %s; %s) "
                               "for %d of the %d plans that fit.%s",
                               cl->flat_rings ? "flat NCCL rings across nodes"
                                              : "rings in a node, hierarchical across nodes",
                               w->profile_note ? w->profile_note : "built-in device profile", r->n_simulated,
                               r->n_fit, why));
    } else if (r->n_fit == 0)
        ZP_TRY(zp_doc_add_fact(d, "Method", "the memory model (the replay of each plan's step); no plan fits, so none "
                                            "was simulated."));
    else
        ZP_TRY(zp_doc_add_fact(d, "Method",
                               "analytic first-order step time (--analytic): compute at %.0f%% of the %.0f TFLOP/s "
                               "fp16 peak, every communication over its bandwidth, nothing overlapped.",
                               100 * cl->gemm_efficiency, cl->peak_flops / 1e12));
    return ZP_OK;
}

/* The global batches the shown plans run where they differ from the default batch (rounded up per DP
 * rank): ": the plans shown run 256 (and 288)" (each plan's Global column says its own), else "". */
static void batches_run(const zp_whatif *w, char *buf, size_t len)
{
    const zp_search_result *r = w->result;
    double seen[8];
    int n = 0, differ = 0, shown = 0;
    for (int i = 0; i < r->n && shown < w->top; i++) {
        const zp_eval *e = &r->plans[i];
        if (!e->fits || e->dominated)
            continue;
        shown++;
        differ |= e->global_batch != (double)r->default_batch;
        int k = 0;
        while (k < n && seen[k] != e->global_batch)
            k++;
        if (k == n && n < 8)
            seen[n++] = e->global_batch;
    }
    buf[0] = '\0';
    if (!differ || n == 0)
        return;
    size_t o = (size_t)snprintf(buf, len, ": the plans shown run %.0f", seen[0]);
    for (int k = 1; k < n && o < len; k++)
        o += (size_t)snprintf(buf + o, len - o, "%s%.0f", k == n - 1 ? " or " : ", ", seen[k]);
    if (o < len)
        snprintf(buf + o, len - o, " sequences (their Global column)");
}

/* Which attention the plans run: FlashAttention by default where the GPU has its kernels. */
static zp_status attention_fact(zp_doc *d, const zp_whatif *w)
{
    if (w->result->n == 0)
        return ZP_OK;
    const int fa = w->result->plans[0].plan.flash_attn;
    const int runs = w->cluster->flash_efficiency > 0;
    ZP_TRY(zp_doc_add_fact(d, "Attention", "%s", fa ? "FlashAttention's fused kernels (the default where the GPU runs "
                                                      "them; --no-flash-attention turns it off)"
                                               : runs ? "unfused: the s x s scores in memory (--flash-attention turns "
                                                        "FlashAttention on)"
                                                      : "unfused: the s x s scores in memory (this GPU has no "
                                                        "FlashAttention-2 kernels)"));
    ZP_TRY(zp_doc_set_key(d, "flash_attention", json_boolean(fa)));
    const zp_plan *p = &w->result->plans[0].plan;
    if (p->eager) { /* said only when asked: every answer before --compile reads the same */
        ZP_TRY(zp_doc_add_fact(d, "Kernels", "PyTorch eager: a block's elementwise ops as separate kernels, each with "
                                             "its launch, host dispatch and HBM round trip (torch.compile off: "
                                             "--compile off, or torchtitan's training.compile false)"));
        ZP_TRY(zp_doc_set_key(d, "compile", json_false()));
    }
    if (zp_plan_glu_fused(p) || w->model->mlp != ZP_MLP_GATED) /* the fused SwiGLU, the default, goes unsaid */
        return ZP_OK;
    const zp_framework *fw = zp_framework_get(w->framework);
    ZP_TRY(zp_doc_add_fact(d, "SwiGLU", "unfused: silu(gate) * up as PyTorch runs it, gate, up, the SiLU's output and "
                                        "the product kept for backward (%s)",
                           p->eager                       ? "torch.compile off"
                           : fw && !fw->swiglu_fusion     ? "the framework's own"
                                                          : "--swiglu-fusion off: Megatron-LM's --no-bias-swiglu-fusion"));
    return zp_doc_set_key(d, "swiglu_fusion", json_false());
}

/* The what-if's Framework (when one was given), Batch (when zplan chose it), Precision and FLOPs facts. */
static zp_status whatif_run_facts(zp_doc *d, const zp_whatif *w)
{
    const zp_search_result *r = w->result;
    const zp_model *m = w->model;
    const zp_framework *fw = zp_framework_get(w->framework);
    if (fw && w->framework != ZP_FRAMEWORK_ANY) {
        ZP_TRY(zp_doc_add_fact(d, "Framework", "%s: %s; only the plans it runs were searched (--framework)",
                               fw->name, fw->what));
        ZP_TRY(zp_doc_set_key(d, "framework", json_string(fw->name)));
    }
    if (r->default_batch > 0) {
        const double tokens = zp_search_default_batch_tokens(zp_model_params(m));
        char run[160];
        batches_run(w, run, sizeof run);
        ZP_TRY(zp_doc_add_fact(d, "Batch",
                               "%lld sequences of %lld tokens per step (%.3gM tokens: GPT-3's batch for a model of "
                               "this size, Brown et al. 2020), rounded up for each plan to whole sequences per DP "
                               "rank%s; --global-batch sets it.",
                               (long long)r->default_batch, (long long)m->seq, tokens / 1e6, run));
        ZP_TRY(zp_doc_set_key(d, "default_global_batch", json_integer(r->default_batch)));
    }
    ZP_TRY(attention_fact(d, w));
    if (r->n > 0)
        ZP_TRY(zp_report_precision_fact(d, &r->plans[0].plan, w->cluster));
    ZP_TRY(zp_doc_add_fact(d, "FLOPs", "%s.", ZP_FLOP_CONVENTION));
    ZP_TRY(zp_doc_set_key(d, "flop_convention", json_string(ZP_FLOP_CONVENTION)));
    ZP_TRY(zp_doc_add_fact(d, "MFU", "model FLOPs (PaLM's 6N+12LHQT, N the active parameters; no recompute; "
                                     "attention not halved for causal masking: %.4g per token) per second over the "
                                     "GPU's dense %s peak; tokens = global batch x %lld-token sequences",
                           zp_units_model_flops_per_token(m), r->n > 0 ? zp_plan_precision_name(&r->plans[0].plan) : "16-bit",
                           (long long)m->seq));
    ZP_TRY(zp_doc_set_key(d, "mfu_definition", json_string(ZP_MFU_DEFINITION)));
    ZP_TRY(zp_doc_add_text(d, "model FLOPs per token"));
    zp_doc_only(d, ZP_FMT_BIT(ZP_FMT_JSON));
    ZP_TRY(zp_doc_set_key(d, "model_flops_per_token", json_real(zp_units_model_flops_per_token(m))));
    return ZP_OK;
}

/* With --train-tokens: the budget at the recommended plan's speed (every plan's in JSON). */
static zp_status whatif_train_fact(zp_doc *d, const zp_whatif *w, const zp_eval *e)
{
    if (!(w->train_tokens > 0))
        return ZP_OK;
    ZP_TRY(zp_doc_add_text(d, "Train tokens"));
    zp_doc_only(d, ZP_FMT_BIT(ZP_FMT_JSON));
    ZP_TRY(zp_doc_set_key(d, "train_tokens", json_real(w->train_tokens)));
    ZP_TRY(zp_doc_add_text(d, "Energy: %s.", ZP_ENERGY_DEFINITION));
    zp_doc_only(d, ZP_FMT_BIT(ZP_FMT_JSON));
    ZP_TRY(zp_doc_set_key(d, "energy_definition", json_string(ZP_ENERGY_DEFINITION)));
    if (!e || !(e->tokens_per_s > 0))
        return ZP_OK;
    zp_train_cost c;
    zp_units_train(e, w->cluster, w->train_tokens, w->gpu_hour_price, &c);
    char tok[32], cost[96] = "";
    zp_size_format(w->train_tokens, tok, sizeof tok);
    if (w->gpu_hour_price > 0)
        snprintf(cost, sizeof cost, ", $%.0f at $%g per GPU-hour", c.cost_usd, w->gpu_hour_price);
    const int bound = strcmp(e->method, "bound") == 0;
    return zp_doc_add_text(d, "Training %s tokens at the recommended plan's %.0f tokens/s: %s%.1f days, %s%.0f "
                              "GPU-hours, %s%.1f MWh (%s, %.0f W per GPU)%s.",
                           tok, e->tokens_per_s, bound ? ">=" : "", c.days, bound ? ">=" : "", c.gpu_hours,
                           bound ? ">=" : "", c.energy_mwh, ZP_ENERGY_DEFINITION, w->cluster->tdp_w, cost);
}

/* The recommended plan, r->plans[best]: the fit count, the memory chart (HTML), its memory table, its
 * pipeline stages' table when replayed, and its description. */
static zp_status whatif_best(zp_doc *d, const zp_whatif *w, int best)
{
    const zp_search_result *r = w->result;
    zp_table *t;
    const zp_eval *e = &r->plans[best];
    ZP_TRY(zp_doc_add_text(d, "%d of %d candidate plans fit; showing the best %d.", r->n_fit, r->n,
                           r->n_fit < w->top ? r->n_fit : w->top));
    zp_chart c;
    zp_report_memory_chart(r->plans, r->n_fit, w->top, w->gpu_mem, &c);
    ZP_TRY(zp_doc_add_chart(d, &c));
    zp_doc_only(d, ZP_FMT_BIT(ZP_FMT_HTML));
    ZP_TRY(zp_report_memory_table(e, w->gpu_mem, w->reserve, &t));
    ZP_TRY(zp_doc_add_table(d, t));
    if (w->stage_mem && w->nstages > 1 && e->plan.pp == w->nstages) {
        ZP_TRY(stages_table(w, &t));
        ZP_TRY(zp_doc_add_table(d, t));
        ZP_TRY(zp_doc_set_key(d, "pipeline_stages", NULL));
    }
    char desc[512];
    describe_plan(e, desc, sizeof desc);
    char step[48];
    zp_report_seconds(e->time.total, step, sizeof step);
    ZP_TRY(zp_doc_add_text(d,
                           "Recommended: %s.\n  step %s s, %.4g samples/s, %.0f tokens/s per GPU (%.0f per "
                           "cluster), MFU %.1f%%, %.1f TFLOPs per GPU executed (recompute included), %.2f PFLOPs "
                           "aggregate (%s)",
                           desc, step, e->samples_per_s, e->tokens_per_s_per_gpu, e->tokens_per_s, 100.0 * e->mfu,
                           e->tflops_per_gpu, e->pflops, e->method));
    zp_doc_strong(d);
    ZP_TRY(zp_doc_set_key(d, "best", json_integer(best)));
    return whatif_train_fact(d, w, e);
}

/* "Does not fit": the plans that do not, as a list. */
static zp_status whatif_misfits(zp_doc *d, const zp_whatif *w)
{
    const zp_search_result *r = w->result;
    /* one line per stage and MP degree: the variant (ZeRO-R, offload) nearest to fitting, the others
     * counted (they differ in options, not in why) */
    ZP_TRY(zp_doc_add_list(d, "Does not fit (at micro-batch 1 or the one given; per stage and MP, the variant "
                              "nearest to fitting):", 12, "see --format json"));
    for (int i = 0; i < r->n; i++) {
        const zp_eval *e = &r->plans[i];
        if (e->fits)
            continue;
        int first = 1, others = 0;
        for (int j = 0; j < r->n; j++) {
            const zp_eval *x = &r->plans[j];
            if (j == i || x->fits || x->plan.stage != e->plan.stage || x->plan.mp != e->plan.mp)
                continue;
            if (j < i)
                first = 0; /* sorted by memory: the earlier one is nearer to fitting */
            else
                others++;
        }
        if (!first)
            continue;
        char opts[128], more[64] = "";
        zp_report_plan_options(&e->plan, opts, sizeof opts);
        if (others)
            snprintf(more, sizeof more, " (and %d variant%s needing more)", others, others == 1 ? "" : "s");
        ZP_TRY(zp_doc_add_entry(d, "stage %d (%s), MP %lld, %s: %s%s", e->plan.stage,
                                zp_stage_get(e->plan.stage)->name, (long long)e->plan.mp, opts, e->reason, more));
    }
    return ZP_OK;
}

/* The what-if's items, in order; every format renders them (README: text for reading, CSV the plans
 * table, JSON the contract {"model", "cluster", "plans", "best"} from the items with keys, HTML a page
 * with the memory chart). */
static zp_status whatif_items(zp_doc *d, const zp_whatif *w)
{
    const zp_search_result *r = w->result;
    /* the facts, each with its part of the JSON contract */
    ZP_TRY(whatif_model_cluster(d, w));
    ZP_TRY(whatif_method(d, w));
    ZP_TRY(whatif_run_facts(d, w));

    zp_table *t;
    ZP_TRY(plans_table(w, &t));
    ZP_TRY(zp_doc_add_table(d, t));
    ZP_TRY(zp_doc_set_key(d, "plans", NULL));
    const int best = best_index(r);
    if (best < 0) {
        zp_doc_only(d, ZP_FMT_BIT(ZP_FMT_CSV) | ZP_FMT_BIT(ZP_FMT_JSON)); /* no plan for readers */
        /* "best": null in an item of its own (set on the table, it took the place of "plans") */
        ZP_TRY(zp_doc_add_text(d, "no plan fits"));
        zp_doc_only(d, ZP_FMT_BIT(ZP_FMT_JSON));
        ZP_TRY(zp_doc_set_key(d, "best", json_null()));
        ZP_TRY(near_miss_items(d, w));
    } else {
        ZP_TRY(whatif_best(d, w, best));
    }
    if (r->n_fit < r->n)
        ZP_TRY(whatif_misfits(d, w));
    return zp_report_legend(d);
}

zp_status zp_report_doc_build(const char *title, zp_status (*items)(zp_doc *d, const void *ctx), const void *ctx,
                              zp_doc **out)
{
    zp_doc *d = zp_doc_new(title);
    if (!d)
        return ZP_FAIL(ZP_ENOMEM, "out of memory");
    zp_doc_set_json_digits(d, 8);
    zp_status st = items(d, ctx);
    if (st != ZP_OK) {
        zp_doc_free(d);
        return st;
    }
    *out = d;
    return ZP_OK;
}

static zp_status whatif_items_cb(zp_doc *d, const void *w) { return whatif_items(d, w); }

zp_status zp_report_whatif_doc(const zp_whatif *w, zp_doc **out)
{
    char title[256];
    snprintf(title, sizeof title, "zplan what-if: model %s on %lld GPU%s of %s", w->model->name, (long long)w->gpus,
             zp_report_plural(w->gpus), w->cluster->name);
    return zp_report_doc_build(title, whatif_items_cb, w, out);
}

json_t *zp_report_whatif_json(const zp_whatif *w)
{
    zp_doc *d;
    if (zp_report_whatif_doc(w, &d) != ZP_OK)
        return NULL;
    json_t *j = zp_doc_to_json(d);
    zp_doc_free(d);
    return j;
}

zp_status zp_report_whatif(FILE *f, zp_format fmt, const zp_whatif *w)
{
    zp_doc *d;
    ZP_TRY(zp_report_whatif_doc(w, &d));
    zp_status st = zp_doc_write(d, f, fmt);
    zp_doc_free(d);
    return st;
}
