/* zp_report.h — the reports zplan prints: the paper's Table 1 and Table 2, the model zoo, the
 * cluster presets, and the what-if answer. Reports format what sim/ and models/ compute. */
#ifndef ZP_REPORT_H
#define ZP_REPORT_H

#include <stdio.h>

#include "zp_cluster.h"
#include "zp_nearmiss.h"
#include "zp_doc.h"
#include "zp_search.h"
#include "zp_svg.h"
#include "zp_table.h"
#include "zp_zoo.h"

/* The FLOP convention every TFLOPs figure follows, printed beside it. */
#define ZP_FLOP_CONVENTION                                                                             \
    "TFLOPs count the FLOPs executed per iteration, recompute included (Megatron-LM 2021 convention: " \
    "96*B*s*l*h^2*(1 + s/6h + V/16lh) with checkpointing)"

/* "s" after a count other than 1 ("1 GPU", "8 GPUs"). */
static inline const char *zp_report_plural(int64_t n) { return n == 1 ? "" : "s"; }
/* The job's GPUs on the cluster: "400 GPUs (25 nodes of 16 V100-SXM3-32GB)", "8 GPUs (1 node of 8 ...)",
 * "1 GPU (1 of a node's 16 V100-SXM3-32GB)". */
void zp_report_gpus_label(const zp_cluster *cl, int64_t gpus, char *buf, size_t len);
/* Memory per GPU: the GPU's own ("32 GiB = 34.36 GB per GPU", GiB where the vendor's GB are), or with
 * --gpu-mem what the user gave beside the GPU's own ("40 GB per GPU (--gpu-mem; the A100-SXM4-80GB has
 * 80 GiB = 85.9 GB)"). */
void zp_report_gpu_mem_label(const zp_cluster *cl, double gpu_mem, char *buf, size_t len);

/* Table 1: model-state GB per GPU for each Ψ in `psi` (labels in `names`) and DP degree in `dp`. */
zp_status zp_report_table1(const double *psi, const char *const *names, int npsi, const double *dp, int ndp,
                           double k, zp_table **out);
/* Table 2: the largest model (billions of parameters) whose model states fit in gpu_mem, per MP degree. */
zp_status zp_report_table2(double gpu_mem, const double *mp, int nmp, double dp, double k, zp_table **out);
zp_status zp_report_models(zp_table **out);
zp_status zp_report_clusters(zp_table **out);
/* The GPU presets (gpus/ folder, vocab/zp_gpu.h) with their key figures. */
zp_status zp_report_gpus(zp_table **out);

typedef struct {
    const zp_model *model;
    const char *model_note;    /* e.g. "generated from size 37B" or NULL */
    const zp_cluster *cluster;
    int64_t gpus;
    double gpu_mem;
    double reserve;            /* bytes per GPU left free (--reserve) */
    const zp_search_result *result;
    const zp_near_miss *near;  /* when no plan fits: what would (zp_near_miss_find), or NULL */
    int top;                   /* fitting plans to show */
    const char *profile_note;  /* "profile <file>" when costs come from a calibrated profile */
    const zp_memory *stage_mem; /* with pipeline stages: the recommended plan's memory of each stage, or NULL */
    int nstages;
    int framework;             /* the zp_framework_id the plans were limited to (--framework; 0: any) */
    double train_tokens;       /* a token budget to price per plan (--train-tokens; 0: none) */
    double gpu_hour_price;     /* USD per GPU-hour (--gpu-hour-price; 0: none) */
    const char *seq_note;      /* which sequence was taken and why (an HF config's), or NULL */
} zp_whatif;

/* The what-if answer in any format: one document (zp_report_whatif_doc) that every format renders. */
zp_status zp_report_whatif(FILE *f, zp_format fmt, const zp_whatif *w);
/* That document: the model, cluster and method as facts, the plans table (readers see the best w->top
 * fitting plans, CSV and JSON all), the memory of the recommended plan (table, and chart in HTML), the
 * recommendation and the plans that do not fit. */
zp_status zp_report_whatif_doc(const zp_whatif *w, zp_doc **out);
/* The columns of one plan, as the what-if's plans table has them (and the sweep's rows): their count,
 * and their descriptions into cols[0..count) (pp: PP is a reader column, some plan has pipeline
 * stages); zp_report_plan_cells fills them for plan `e` from column col0 of the table's last row;
 * zp_report_plan_none marks them "does not fit": the options column says `what`, fits is false and
 * JSON's "reason" is `reason` (may be NULL). */
int zp_report_plan_ncols(void);
void zp_report_plan_cols(zp_col *cols, int pp);
zp_status zp_report_plan_cells(zp_table *t, int col0, const zp_eval *e);
zp_status zp_report_plan_none(zp_table *t, int col0, const char *what, const char *reason);
/* The per-category memory table of one plan on GPUs of gpu_mem bytes of which `reserve` are left free. */
zp_status zp_report_memory_table(const zp_eval *e, double gpu_mem, double reserve, zp_table **out);
/* Stacked bars of the memory categories of the first n of `plans` (GB per GPU), GPU memory as a line. */
void zp_report_memory_chart(const zp_eval *plans, int count, int n, double gpu_mem, zp_chart *c);
/* A plan's options as the tables show them: "EP2 Pa CB MD ckpt SP 1f1b offload:optimizer". */
void zp_report_plan_options(const zp_plan *p, char *buf, size_t len);
/* The DeepSpeed config keys that select a plan's ZeRO options, as one line:
 * "stage=3 offload_optimizer=cpu partition_activations=true ..." (and Megatron-LM's MP). */
void zp_report_ds_keys(const zp_plan *p, char *buf, size_t len);
/* A duration in seconds as a reader sees it, fixed-point (never an exponent: 1080.4, 41.49, 0.01234): about
 * four significant digits, at least one decimal. */
void zp_report_seconds(double s, char *buf, size_t len);
/* A legend of the paper's names (Pos, Pos+g, Pos+g+p, Pa, Pa+cpu, CB, MD, offload, ckpt, MP) with the
 * DeepSpeed and Megatron-LM keys that set them (text, Markdown and HTML; not in CSV or JSON). */
zp_status zp_report_legend(zp_doc *d);
/* The "Precision" fact (bytes per parameter, the GEMM peak) of the plans a report shows, from one of them. */
zp_status zp_report_precision_fact(zp_doc *d, const zp_plan *p0, const zp_cluster *cl);

/* A document titled `title` (JSON reals to 8 digits) filled by items(d, ctx); freed on failure. */
zp_status zp_report_doc_build(const char *title, zp_status (*items)(zp_doc *d, const void *ctx), const void *ctx,
                              zp_doc **out);

/* zplan compare: the best plan of each choice (stage, MP, offload, micro-batch), side by side. */
typedef struct {
    char label[96];       /* the choice, as options: "--stage 2 --mp 4" */
    int found;            /* a plan fits */
    zp_eval plan;         /* the best plan, or the nearest to fitting */
} zp_compare_entry;
typedef struct {
    const zp_model *model;
    const zp_cluster *cluster;
    int64_t gpus;
    double gpu_mem, reserve;
    int n;
    const zp_compare_entry *entries;
} zp_compare;
zp_status zp_report_compare_doc(const zp_compare *c, zp_doc **out);

/* The what-if as the JSON contract: {"model", "cluster", "plans", "best"}: the document's JSON (new
 * reference; NULL when out of memory). */
json_t *zp_report_whatif_json(const zp_whatif *w);

#endif
