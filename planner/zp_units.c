/* zp_units.c — tokens/s, MFU and a token budget's time, GPU-hours, energy and cost (zp_units.h). */
#include "zp_units.h"

double zp_units_model_flops_per_token(const zp_model *m)
{
    /* N: the parameters a token multiplies by (the input embedding is a lookup; a tied table is the LM
     * head's matrix, counted once) */
    const double embed_dim = (double)(m->embed_dim > 0 ? m->embed_dim : m->hidden);
    double n = zp_model_params_active(m) - zp_model_params_embedding(m);
    if (!m->untied)
        n += (double)m->vocab * embed_dim;
    /* 12LHQT: QK^T and AV, 2 x 2TQ FLOPs per head and layer forward, x3 with backward; Q the mean of the
     * query/key and value head sizes where they differ (MLA) */
    const double q = 0.5 * (double)(zp_model_head_dim(m) + zp_model_v_head_dim(m));
    return 6.0 * n + 12.0 * (double)m->layers * (double)m->heads * q * (double)m->seq;
}

void zp_units_fill(const zp_model *m, const zp_cluster *cl, zp_eval *e)
{
    const double gpus = (double)zp_plan_gpus(&e->plan);
    const double step = e->time.total; /* s */
    if (!(step > 0) || !(gpus > 0)) {
        e->tokens_per_s = e->tokens_per_s_per_gpu = e->model_tflops_per_gpu = e->mfu = 0;
        return;
    }
    e->tokens_per_s = e->global_batch * (double)m->seq / step;
    e->tokens_per_s_per_gpu = e->tokens_per_s / gpus;
    const double model_flops = zp_units_model_flops_per_token(m) * e->tokens_per_s_per_gpu; /* FLOP/s per GPU */
    e->model_tflops_per_gpu = model_flops / 1e12;
    const double peak = zp_cluster_peak_flops(cl, zp_plan_precision_name(&e->plan));
    e->mfu = peak > 0 ? model_flops / peak : 0;
}

void zp_units_train(const zp_eval *e, const zp_cluster *cl, double tokens, double price_per_gpu_hour,
                    zp_train_cost *out)
{
    const double gpus = (double)zp_plan_gpus(&e->plan);
    const double seconds = e->tokens_per_s > 0 ? tokens / e->tokens_per_s : 0;
    out->days = seconds / 86400.0;
    out->gpu_hours = gpus * seconds / 3600.0;
    out->energy_mwh = cl->tdp_w * out->gpu_hours / 1e6; /* W x h = Wh; 1e6 Wh = 1 MWh */
    out->cost_usd = price_per_gpu_hour > 0 ? out->gpu_hours * price_per_gpu_hour : 0;
}
