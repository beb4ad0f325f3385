#include "zp_shape.h"

#include "zp_dispatch.h"

#include <string.h>

void zp_shape_block(const zp_model *m, const zp_plan *p, int64_t block, zp_block_shape *o)
{
    memset(o, 0, sizeof *o);
    const double t = (double)(p->mp > 0 ? p->mp : 1), kv = (double)zp_model_kv_heads(m);
    o->moe = zp_model_block_is_moe(m, block);
    o->mla = m->attn == ZP_ATTN_MLA;
    o->gated = m->mlp == ZP_MLP_GATED;
    o->rms = m->norm == ZP_NORM_RMSNORM;
    o->rotary = m->pos == ZP_POS_ROTARY;
    o->parallel = m->parallel;
    o->one_norm = m->parallel && m->block_norms == 1;
    o->B = (double)p->micro_batch;
    o->s = (double)m->seq;
    o->T = o->B * o->s;
    o->t = t;
    o->h = (double)m->hidden;
    o->qh = (double)m->heads / t;
    o->kvh = o->mla ? o->qh : (kv >= t ? kv / t : 1.0); /* one replicated KV head per rank when t > kv */
    o->dqk = (double)zp_model_head_dim(m);
    o->dv = (double)zp_model_v_head_dim(m);
    /* whole-model products first, then / t: GPT's widths come out as 3h/t, h/t exactly */
    const double a = (double)m->heads;
    /* with the sequence split (context parallelism: m is the rank's slice) the slice's queries meet every
     * slice's keys, one attention block each (ring attention), so the balanced causal work is 1/split */
    o->bh = o->B * a / t * (double)zp_dims_seq_split(p->deg);
    o->q_n = a * o->dqk / t;
    o->kv_n = kv >= t ? kv * (o->dqk + o->dv) / t : o->dqk + o->dv;
    o->o_k = a * o->dv / t;
    if (o->mla) {
        o->q_rank = (double)m->q_lora_rank;
        o->kv_rank = (double)m->kv_lora_rank;
        o->rope = (double)m->qk_rope_dim;
        o->kv_n = a * ((double)m->qk_nope_dim + o->dv) / t; /* kv_b: each local head's K (no rope) and V */
    }
    o->qkv_n = (o->mla ? a * o->dqk : a * o->dqk + (kv >= t ? kv * (o->dqk + o->dv) : t * (o->dqk + o->dv))) / t;
    if (o->rotary)
        o->rope_n = o->mla ? o->qh * o->rope + o->rope : o->q_n + o->kvh * o->dqk;
    if (!o->moe) {
        o->f = (double)m->ffn / t;
        return;
    }
    const double ep = (double)(p->ep > 0 ? p->ep : 1);
    o->E = (double)m->experts;
    o->k = (double)m->top_k;
    o->e_local = o->E / ep;
    o->e_f = (double)(m->expert_ffn > 0 ? m->expert_ffn : m->ffn) / t;
    const double shared_f = (double)(m->shared_ffn > 0 ? m->shared_ffn : (m->expert_ffn > 0 ? m->expert_ffn : m->ffn));
    o->f = (double)m->shared_experts * shared_f / t;
    /* a rank's T tokens x k go out; over the EP group each expert gets T·k·ep/E of them, cf-padded, and the
     * busiest rank λ times the mean */
    o->e_rows = o->T * o->k * ep / o->E * p->capacity_factor * p->moe_imbalance;
    const zp_dispatch_info *d = zp_dispatch_get(p->dispatcher);
    for (int dir = 0; dir < 2; dir++) /* the all-gather's buffer: the EP group's tokens, each once */
        o->a2a_bytes[dir] = d && d->gather ? 2.0 * o->T * o->h * ep
                                           : zp_dispatch_elt_bytes(p->dispatcher, dir) * o->T * o->k * p->capacity_factor * o->h;
}

/* The routed experts' parameters of one MoE block (every MoE block has the same). */
static double moe_block_experts(const zp_model *m)
{
    zp_tensor t[ZP_MODEL_MAX_TENSORS];
    int n = zp_model_tensors(m, ZP_SECTION_BLOCK_MOE, t, ZP_MODEL_MAX_TENSORS);
    double e = 0;
    for (int k = 0; k < n && k < ZP_MODEL_MAX_TENSORS; k++)
        if (t[k].routed)
            e += zp_tensor_numel(&t[k]);
    return e;
}

void zp_shape_block_params(const zp_model *m, int64_t i, double *all, double *experts)
{
    *all = zp_model_params_block(m, i);
    *experts = zp_model_block_is_moe(m, i) ? moe_block_experts(m) : 0.0;
}

void zp_shape_mtp_params(const zp_model *m, double *all, double *experts)
{
    *all = zp_model_params_mtp(m);
    *experts = 0.0;
    for (int64_t k = 0; k < m->mtp_layers; k++)
        if (zp_model_block_is_moe(m, m->layers + k))
            *experts += moe_block_experts(m);
}

void zp_shape_params(const zp_model *m, const zp_plan *p, double *held, double *partitioned)
{
    const double t = (double)(p->mp > 0 ? p->mp : 1), ep = (double)(p->ep > 0 ? p->ep : 1);
    double mtp, mtp_experts;
    zp_shape_mtp_params(m, &mtp, &mtp_experts);
    *partitioned = (zp_model_params(m) + mtp) / t;
    *held = *partitioned;
    if (ep > 1 && zp_model_moe_blocks(m) > 0)
        *held -= (1.0 - 1.0 / ep) * (moe_block_experts(m) * (double)zp_model_moe_blocks(m) + mtp_experts) / t;
}
