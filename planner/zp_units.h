/* zp_units.h — a plan's speed in a team's units: tokens per second (per GPU and per cluster), model FLOPs
 * utilisation (MFU, PaLM's appendix B), and what a token budget costs (days, GPU-hours, energy, dollars). */
#ifndef ZP_UNITS_H
#define ZP_UNITS_H

#include "zp_cluster.h"
#include "zp_model.h"
#include "zp_search.h"

/* What MFU counts, for reports and JSON ("mfu_definition"). */
#define ZP_MFU_DEFINITION                                                                                        \
    "PaLM B: 6N+12LHQT model FLOPs per token (Chowdhery et al. 2022, appendix B), N the active parameters "     \
    "(MoE: the top-k experts a token passes through) less the input embedding lookup (a tied LM head counted "   \
    "once), L layers, H heads, Q head size (MLA: (Q_k + Q_v)/2), T the sequence; attention not halved for "      \
    "causal masking; recompute not counted; divided by the step time and the GPU's dense peak of the plan's "    \
    "precision"

/* Board power of the GPUs: the assumption of every energy figure. */
#define ZP_ENERGY_DEFINITION                                                                                    \
    "GPU board power at TDP x GPUs x time to train; host, network and cooling excluded (PUE 1)"

/* The model FLOPs of one token, PaLM's 6N + 12LHQT at the model's sequence (FLOPs). */
double zp_units_model_flops_per_token(const zp_model *m);

/* Fills e's tokens_per_s, tokens_per_s_per_gpu, model_tflops_per_gpu and mfu from its step time, global
 * batch and plan (cluster: the GPU's peak of the plan's precision). */
void zp_units_fill(const zp_model *m, const zp_cluster *cl, zp_eval *e);

/* What training `tokens` tokens at e's speed takes. */
typedef struct {
    double days;       /* wall-clock time, days of 86,400 s */
    double gpu_hours;  /* GPUs x hours */
    double energy_mwh; /* ZP_ENERGY_DEFINITION, MWh */
    double cost_usd;   /* gpu_hours x the price; 0 when no price was given */
} zp_train_cost;

/* tokens > 0; price_per_gpu_hour: USD, 0 for none. */
void zp_units_train(const zp_eval *e, const zp_cluster *cl, double tokens, double price_per_gpu_hour,
                    zp_train_cost *out);

#endif
