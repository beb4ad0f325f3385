/* zp_tensors.c — the executor's tensors of a plan (zp_tensors.h): which models and plans it runs, their
 * shapes per MP rank, the flat layout of a pipeline stage and its units. */
#include "zp_tensors.h"

#include <stdlib.h>
#include <string.h>

#include "zp_pipeline.h"

zp_status zp_tensors_check(const zp_model *m, const zp_plan *p)
{
    const char *nm = m->name;
    const int64_t t = p->mp > 0 ? p->mp : 1;
    /* what the executor's kernels and layout do not cover: refused by name, never run as another model */
    static const char *const why[] = {"multi-head latent attention (MLA)", "parallel attention+MLP blocks",
                                      "ALiBi positions", "LayerNorm without affine parameters",
                                      "four norms per block", "a model without a final norm",
                                      "an embedding norm", "an embedding width other than hidden",
                                      "an LM head bias", "shared experts", "a shared-expert gate",
                                      "a router bias", "dense blocks beside mixture-of-experts ones",
                                      "biases in the experts' MLPs"};
    const int moe_blocks = (int)zp_model_moe_blocks(m);
    const int refuse[] = {m->attn == ZP_ATTN_MLA, m->parallel != 0, m->pos == ZP_POS_ALIBI,
                          m->norm == ZP_NORM_PLAIN, m->block_norms == 4, m->no_final_norm != 0,
                          m->embed_norm != 0, m->embed_dim > 0 && m->embed_dim != m->hidden, m->lm_head_bias != 0,
                          m->experts > 0 && m->shared_experts > 0, m->experts > 0 && m->shared_gate != 0,
                          m->experts > 0 && m->router_bias != 0, moe_blocks > 0 && moe_blocks != m->layers,
                          moe_blocks > 0 && (m->nobias & (ZP_BIAS_MLP_UP | ZP_BIAS_MLP_DOWN)) !=
                                                (ZP_BIAS_MLP_UP | ZP_BIAS_MLP_DOWN)};
    for (size_t i = 0; i < sizeof refuse / sizeof refuse[0]; i++)
        if (refuse[i])
            return ZP_FAIL(ZP_EUNSUPPORTED, "--model %s: the executor does not run %s (the planner does)", nm, why[i]);
    const int64_t kv = zp_model_kv_heads(m);
    if (m->heads % t != 0)
        return ZP_FAIL(ZP_EINVAL, "--mp %lld does not divide the %lld attention heads of %s", (long long)t,
                       (long long)m->heads, nm);
    if (kv % t != 0)
        return ZP_FAIL(ZP_EUNSUPPORTED, "--mp %lld: the executor needs it to divide the %lld key/value heads of %s "
                                        "(it does not replicate KV heads)",
                       (long long)t, (long long)kv, nm);
    const int64_t fe = m->expert_ffn > 0 ? m->expert_ffn : m->ffn;
    if (m->vocab % t != 0 || m->ffn % t != 0 || (moe_blocks > 0 && fe % t != 0))
        return ZP_FAIL(ZP_EINVAL, "--mp %lld must divide the vocabulary (%lld) and the MLP width (%lld)", (long long)t,
                       (long long)m->vocab, (long long)(moe_blocks > 0 ? fe : m->ffn));
    const int64_t ep = p->ep > 0 ? p->ep : 1;
    if (ep > 1 && moe_blocks == 0)
        return ZP_FAIL(ZP_EINVAL, "--ep %lld: model '%s' has no experts to shard", (long long)ep, nm);
    if (moe_blocks > 0 && m->experts % ep != 0)
        return ZP_FAIL(ZP_EINVAL, "--ep %lld does not divide the %lld experts of %s", (long long)ep,
                       (long long)m->experts, nm);
    return ZP_OK;
}

/* The shapes (integer widths per rank: a model the executor would refuse still gets the layout its
 * schedule's memory is replayed with). */
zp_status zp_tensors_shape_get(const zp_model *m, const zp_plan *p, zp_tensors_shape *o)
{
    memset(o, 0, sizeof *o);
    const int64_t t = p->mp > 0 ? p->mp : 1, kv = zp_model_kv_heads(m);
    const int64_t fe = m->expert_ffn > 0 ? m->expert_ffn : m->ffn, ep = p->ep > 0 ? p->ep : 1;
    const int moe_blocks = (int)zp_model_moe_blocks(m);
    o->rms = m->norm == ZP_NORM_RMSNORM;
    o->rotary = m->pos == ZP_POS_ROTARY;
    o->gated = m->mlp == ZP_MLP_GATED;
    o->untied = m->untied != 0;
    o->moe = moe_blocks > 0;
    o->act = (int)m->act;
    o->C = (size_t)m->hidden;
    o->T = (size_t)m->seq;
    o->V = (size_t)m->vocab;
    o->Vl = o->V / (size_t)t;
    o->F = (size_t)m->ffn;
    o->Fl = o->F / (size_t)t;
    o->up = o->gated ? 2 * o->Fl : o->Fl;
    o->NH = (size_t)m->heads;
    o->NHl = o->NH / (size_t)t;
    o->KV = (size_t)kv;
    o->kvh = o->KV / (size_t)t;
    o->hd = (size_t)zp_model_head_dim(m);
    o->q_n = o->NHl * o->hd;
    o->kv_n = o->kvh * o->hd;
    o->qkv_n = o->q_n + 2 * o->kv_n;
    if (o->moe) {
        o->E = (size_t)m->experts;
        o->k = (size_t)m->top_k;
        o->ep = (size_t)ep;
        o->e_local = o->E / o->ep;
        o->F_e = (size_t)fe;
        o->e_f = o->F_e / (size_t)t;
        o->e_up = o->gated ? 2 * o->e_f : o->e_f;
    }
    const size_t C = o->C, lnb = o->rms ? 0 : C;
    const int qkvb = !(m->nobias & ZP_BIAS_QKV), projb = !(m->nobias & ZP_BIAS_ATTN_OUT);
    const int fcb = !(m->nobias & ZP_BIAS_MLP_UP), fcpb = !(m->nobias & ZP_BIAS_MLP_DOWN), mlp = !o->moe;
    /* learned positions: the sequence's, also when the plan splits it (context parallelism: the schedule's
     * model is the rank's slice, its `positions` the whole sequence's) */
    const size_t prow = zp_dims_seq_split(p->deg) > 1 && m->positions > 0 ? (size_t)m->positions : o->T;
    const size_t e[ZP_TENSORS_E_N] = {o->Vl * C, o->rotary ? 0 : prow * C, C, lnb, o->untied ? o->Vl * C : 0};
    const size_t k[ZP_TENSORS_B_N] = {C, lnb, o->qkv_n * C, qkvb ? o->qkv_n : 0, C * o->q_n, projb ? C : 0, C, lnb,
                                   mlp ? o->up * C : 0, mlp && fcb ? o->up : 0, mlp ? C * o->Fl : 0,
                                   mlp && fcpb ? C : 0, o->moe ? o->E * C : 0};
    const size_t x[ZP_TENSORS_X_N] = {o->e_local * o->e_up * C, o->e_local * C * o->e_f};
    memcpy(o->emb, e, sizeof e);
    memcpy(o->blk, k, sizeof k);
    memcpy(o->xp, x, sizeof x);
    return ZP_OK;
}

static size_t sum(const size_t *v, int n)
{
    size_t s = 0;
    for (int i = 0; i < n; i++)
        s += v[i];
    return s;
}

zp_status zp_tensors_stage_get(const zp_model *m, const zp_plan *p, int stage, zp_tensors_stage *out)
{
    zp_tensors_shape sh;
    ZP_TRY(zp_tensors_shape_get(m, p, &sh));
    memset(out, 0, sizeof *out);
    /* tied: one embedding group (the LM head is wte); untied: the embedding, and the head group */
    out->esz = sh.untied ? sum(sh.emb, ZP_TENSORS_E_LNFW) : sum(sh.emb, ZP_TENSORS_E_N);
    out->hsz = sh.untied ? sum(sh.emb + ZP_TENSORS_E_LNFW, ZP_TENSORS_E_N - ZP_TENSORS_E_LNFW) : 0;
    out->bsz = sum(sh.blk, ZP_TENSORS_B_N);
    out->xsz = sum(sh.xp, ZP_TENSORS_X_N);
    out->slots = 1;
    if (p->pp <= 1) {
        out->nl = (int)m->layers;
        out->emb = 1;
        out->head = sh.untied;
        out->blk_off = out->esz;
        out->head_off = out->esz + (size_t)out->nl * out->bsz;
        out->n = out->head_off + out->hsz;
        out->nx = (size_t)out->nl * out->xsz;
        return ZP_OK;
    }
    if (p->vstages > 1)
        return ZP_FAIL(ZP_EUNSUPPORTED, "the executor runs one model chunk per pipeline stage (no interleaving)");
    zp_pp_stage st;
    ZP_TRY(zp_pp_stage_get(m, p, stage, &st));
    out->l0 = st.first[0];
    out->nl = st.layers[0];
    out->emb = st.embedding || (st.head && !sh.untied);
    out->head = st.head && sh.untied;
    out->emb_off = st.embedding ? 0 : (size_t)out->nl * out->bsz;
    out->blk_off = st.embedding ? out->esz : 0;
    out->head_off = out->blk_off + (size_t)out->nl * out->bsz;
    out->n = (out->emb ? out->esz : 0) + (size_t)out->nl * out->bsz + (out->head ? out->hsz : 0);
    out->nx = (size_t)out->nl * out->xsz;
    const int w = zp_pp_warmup(p, stage);
    out->slots = w + 1 < p->grad_accum ? w + 1 : (int)p->grad_accum;
    return ZP_OK;
}

/* Units of a flat layout of n elements: cut where its groups start (`count` blocks every `stride` elements
 * from `first`, then the `nextra` offsets of `extra`) and at every bucket boundary from the top, each split
 * into `parts` pieces. */
static zp_status units_of(size_t n, size_t first, size_t stride, int count, const size_t *extra, int nextra,
                          size_t bucket, int parts, int rank, zp_units *out)
{
    const size_t nb = (n + bucket - 1) / bucket;
    if (bucket < 1 || nb > (size_t)1e8)
        return ZP_FAIL(ZP_ERANGE, "bucket of %zu elements: too many buckets", bucket);
    size_t *cuts = malloc(((size_t)count + (size_t)nextra + 1 + nb) * sizeof *cuts), nc = 0;
    if (!cuts)
        return ZP_FAIL(ZP_ENOMEM, "out of memory");
    for (int i = 0; i < count + nextra; i++) {
        const size_t c = i < count ? first + (size_t)i * stride : extra[i - count];
        if (c > 0 && c < n)
            cuts[nc++] = c;
    }
    for (size_t j = 1; j < nb; j++)
        cuts[nc++] = n - j * bucket;
    zp_status st = zp_units_build(n, cuts, (int)nc, parts, rank, out);
    free(cuts);
    return st;
}

zp_status zp_tensors_units(const zp_model *m, const zp_plan *p, int stage, size_t bucket, int rank, zp_units *out)
{
    zp_tensors_stage x;
    ZP_TRY(zp_tensors_stage_get(m, p, stage, &x));
    size_t extra[2]; /* after every block's start, the embedding group's and the head group's */
    int ne = 0;
    if (x.emb)
        extra[ne++] = x.emb_off;
    if (x.head)
        extra[ne++] = x.head_off;
    return units_of(x.n, x.blk_off, x.bsz, x.nl, extra, ne, bucket, (int)p->dp, rank, out);
}

zp_status zp_tensors_units_exp(const zp_model *m, const zp_plan *p, int stage, size_t bucket, int rank,
                               zp_units *out)
{
    zp_tensors_stage x;
    ZP_TRY(zp_tensors_stage_get(m, p, stage, &x));
    const int64_t ep = p->ep > 0 ? p->ep : 1;
    return units_of(x.nx, 0, x.xsz, x.nl, NULL, 0, bucket, (int)(p->dp / ep), rank, out);
}
