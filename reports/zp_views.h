/* zp_views.h — the plan-based reports: scaling over GPU counts (the ZeRO paper's Figure 3 view),
 * throughput against model size for ZeRO and an MP-only baseline (Figure 2), the ZeRO-R
 * configurations C1-C5 (Figures 6-8), and the memory breakdown of one plan. Each runs the sim/ search
 * for the numbers and returns a document (tables and charts) for any format. */
#ifndef ZP_VIEWS_H
#define ZP_VIEWS_H

#include "zp_doc.h"
#include "zp_search.h"

/* The best plan of `base` (its model, cluster and options) on each GPU count. */
zp_status zp_view_scaling(const zp_search_req *base, const int64_t *gpus, int n, zp_doc **out);
/* Per model: ZeRO (base's options) on base->gpus GPUs, and the Megatron-LM baseline (stage 0, no
 * ZeRO-R, MP up to the GPU count) on baseline_gpus GPUs. */
zp_status zp_view_sizes(const zp_search_req *base, const zp_model *models, int n, int64_t baseline_gpus,
                        zp_doc **out);
/* C1-C5 of the paper on base->gpus GPUs with MP base->mp (16 when open): the largest model that fits
 * (micro-batch 1), the memory of `mem_model` at micro-batch `mem_batch`, and the simulated throughput of
 * `speed_model` at the largest micro-batch that fits. */
zp_status zp_view_configs(const zp_search_req *base, const zp_model *mem_model, int64_t mem_batch,
                          const zp_model *speed_model, zp_doc **out);
/* The memory per category of the recommended plan, and of the top `top` plans as stacked bars. */
zp_status zp_view_memory(const zp_search_req *base, int top, zp_doc **out);

#endif
