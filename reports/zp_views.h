/* zp_views.h — the plan-based reports: scaling over GPU counts (the ZeRO paper's Figure 3 view),
 * throughput against model size for ZeRO and an MP-only baseline (Figure 2), the ZeRO-R
 * configurations C1-C5 (Figures 6-8), and the memory breakdown of one plan. Each runs the sim/ search
 * for the numbers and returns a document (tables and charts) for any format. */
#ifndef ZP_VIEWS_H
#define ZP_VIEWS_H

#include "zp_doc.h"
#include "zp_search.h"
#include "zp_sweep.h"

/* The scaling report (throughput against GPUs) from the best plans a sweep found (zplan sweep --report
 * scaling, zplan report scaling): best[i] on gpus[i] GPUs when found[i], else none fits; at most
 * ZP_CHART_MAX_POINTS counts. */
zp_status zp_view_scaling_doc(const zp_model *model, const zp_cluster *cluster, const int64_t *gpus,
                              const zp_eval *best, const int *found, int n, zp_doc **out);
/* Per model: ZeRO (base's options) on base->gpus GPUs, and the Megatron-LM baseline (stage 0, no
 * ZeRO-R, MP up to the GPU count) on baseline_gpus GPUs. */
zp_status zp_view_sizes(const zp_search_req *base, const zp_model *models, int n, int64_t baseline_gpus,
                        zp_doc **out);
/* C1-C5 of the paper on base->gpus GPUs with MP base->mp (16 when open): the largest model that fits
 * (micro-batch 1), the memory of `mem_model` at micro-batch `mem_batch`, and the simulated throughput of
 * `speed_model` at the largest micro-batch that fits. */
zp_status zp_view_configs(const zp_search_req *base, const zp_model *mem_model, int64_t mem_batch,
                          const zp_model *speed_model, zp_doc **out);
/* The sweep's table: a row per cell (rows[i] answers cells[rows[i].cell]): the cell (#, model, cluster,
 * GPUs), then the columns of its best plan as the what-if's plans table has them (zp_report_plan_cols),
 * and how many plans were evaluated and fit (data); a cell where nothing fits says so, with the closest
 * plan's reason in JSON and in a note. */
zp_status zp_view_sweep_table(const zp_sweep_cell *cells, const zp_sweep_row *rows, int n, zp_table **out);
/* The sweep's document: the table, its FLOP convention; JSON {"flop_convention", "cells": [...]}. */
zp_status zp_view_sweep(const zp_sweep_cell *cells, const zp_sweep_row *rows, int n, zp_doc **out);
/* The memory per category of the recommended plan, and of the top `top` plans as stacked bars. */
zp_status zp_view_memory(const zp_search_req *base, int top, zp_doc **out);

#endif
