#include "zp_model.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* ---- Architecture strategy tables ------------------------------------------------------------ */

/* MLP kinds: how many (f x h) matrices one MLP of inner size f holds, and its activation bytes per
 * token and unit of f (fp16, Korthikanti's accounting): plain keeps the activation's input and output
 * (2 + 2); gated keeps gate and up outputs, the activation's output and the product (4 x 2), as PyTorch
 * eager's autograd does (a fused SwiGLU keeps 3: zp_model_glu_fused_saved_layer). */
static const struct {
    const char *name;
    int matrices;
    double act_bytes;
} g_mlp[ZP_MLP_COUNT] = {
    [ZP_MLP_PLAIN] = {"plain", 2, 4.0},
    [ZP_MLP_GATED] = {"gated", 3, 8.0},
};

/* Norm kinds: parameters per unit of width (gain, bias). */
static const struct {
    const char *name;
    int gain, bias;
} g_norm[ZP_NORM_COUNT] = {
    [ZP_NORM_LAYERNORM] = {"layernorm", 1, 1},
    [ZP_NORM_RMSNORM] = {"rmsnorm", 1, 0},
    [ZP_NORM_PLAIN] = {"layernorm-plain", 0, 0},
};

static const struct {
    const char *name;
    int learned; /* a table of parameters */
} g_pos[ZP_POS_COUNT] = {
    [ZP_POS_LEARNED] = {"learned", 1},
    [ZP_POS_ROTARY] = {"rotary", 0},
    [ZP_POS_ALIBI] = {"alibi", 0},
};

static const char *const g_act_names[ZP_ACT_COUNT] = {
    [ZP_ACT_GELU] = "gelu", [ZP_ACT_SILU] = "silu", [ZP_ACT_RELU] = "relu", [ZP_ACT_OTHER] = "other"};

/* ---- The tensor list a part is written to --------------------------------------------------- */

typedef struct {
    zp_tensor *out;
    int cap, n;
} tlist;

static void add(tlist *l, const char *name, int64_t rows, int64_t cols, int64_t copies, int routed,
                zp_tensor_kind kind, zp_tp_split split)
{
    if (rows <= 0 || cols <= 0 || copies <= 0)
        return;
    if (l->n < l->cap)
        l->out[l->n] = (zp_tensor){.name = name, .rows = rows, .cols = cols, .copies = copies, .routed = routed,
                                   .kind = kind, .split = split};
    l->n++;
}

/* A linear layer out x in and its bias (out): a column-parallel layer splits its bias with its rows;
 * a row-parallel layer's bias is added after the all-reduce, whole on every rank. */
static void add_linear(tlist *l, const char *w, const char *b, int64_t out, int64_t in, int bias, zp_tp_split split,
                       int64_t copies, int routed)
{
    add(l, w, out, in, copies, routed, ZP_TENSOR_MATRIX, split);
    if (bias)
        add(l, b, out, 1, copies, routed, ZP_TENSOR_BIAS, split == ZP_TP_COLUMN ? ZP_TP_COLUMN : ZP_TP_REPLICATED);
}

static void add_norm(tlist *l, const zp_model *m, const char *const names[2], int64_t width)
{
    if (g_norm[m->norm].gain)
        add(l, names[0], width, 1, 1, 0, ZP_TENSOR_NORM, ZP_TP_REPLICATED);
    if (g_norm[m->norm].bias)
        add(l, names[1], width, 1, 1, 0, ZP_TENSOR_NORM, ZP_TP_REPLICATED);
}

static int has_bias(const zp_model *m, unsigned which) { return (m->nobias & which) == 0; }

/* ---- Attention kinds ------------------------------------------------------------------------ */

static void attn_standard(const zp_model *m, tlist *l)
{
    const int64_t h = m->hidden, q = m->heads * zp_model_head_dim(m), kv = zp_model_kv_heads(m) * zp_model_head_dim(m);
    const int qb = has_bias(m, ZP_BIAS_QKV);
    if (m->qkv_separate) {
        add_linear(l, "attn.q.weight", "attn.q.bias", q, h, qb, ZP_TP_COLUMN, 1, 0);
        add_linear(l, "attn.k.weight", "attn.k.bias", kv, h, qb, ZP_TP_COLUMN, 1, 0);
        add_linear(l, "attn.v.weight", "attn.v.bias", kv, h, qb, ZP_TP_COLUMN, 1, 0);
    } else {
        add_linear(l, "attn.qkv.weight", "attn.qkv.bias", q + 2 * kv, h, qb, ZP_TP_COLUMN, 1, 0);
    }
    add_linear(l, "attn.proj.weight", "attn.proj.bias", h, q, has_bias(m, ZP_BIAS_ATTN_OUT), ZP_TP_ROW, 1, 0);
}

/* DeepSeek-V2/V3: the down-projections (q_a, kv_a) are small and replicated; the up-projections split
 * by heads. */
static void attn_mla(const zp_model *m, tlist *l)
{
    static const char *const q_norm[2] = {"attn.q_a_norm.weight", "attn.q_a_norm.bias"};
    static const char *const kv_norm[2] = {"attn.kv_a_norm.weight", "attn.kv_a_norm.bias"};
    const int64_t h = m->hidden, a = m->heads, qk = m->qk_nope_dim + m->qk_rope_dim;
    const int db = has_bias(m, ZP_BIAS_QKV);
    if (m->q_lora_rank > 0) {
        add_linear(l, "attn.q_a.weight", "attn.q_a.bias", m->q_lora_rank, h, db, ZP_TP_REPLICATED, 1, 0);
        add_norm(l, m, q_norm, m->q_lora_rank);
        add_linear(l, "attn.q_b.weight", NULL, a * qk, m->q_lora_rank, 0, ZP_TP_COLUMN, 1, 0);
    } else {
        add_linear(l, "attn.q.weight", NULL, a * qk, h, 0, ZP_TP_COLUMN, 1, 0);
    }
    add_linear(l, "attn.kv_a.weight", "attn.kv_a.bias", m->kv_lora_rank + m->qk_rope_dim, h, db, ZP_TP_REPLICATED, 1, 0);
    add_norm(l, m, kv_norm, m->kv_lora_rank);
    add_linear(l, "attn.kv_b.weight", NULL, a * (m->qk_nope_dim + m->v_head_dim), m->kv_lora_rank, 0, ZP_TP_COLUMN, 1, 0);
    add_linear(l, "attn.proj.weight", "attn.proj.bias", h, a * m->v_head_dim, has_bias(m, ZP_BIAS_ATTN_OUT), ZP_TP_ROW,
               1, 0);
}

static const struct {
    const char *name;
    void (*tensors)(const zp_model *m, tlist *l);
} g_attn[ZP_ATTN_COUNT] = {
    [ZP_ATTN_STANDARD] = {"standard", attn_standard},
    [ZP_ATTN_MLA] = {"mla", attn_mla},
};

/* ---- MLPs: a block's dense MLP, the routed experts, the shared experts ----------------------- */

enum { MLP_DENSE, MLP_ROUTED, MLP_SHARED, MLP_ROLES };
static const char *const g_mlp_names[MLP_ROLES][8] = {
    /* gate w, gate b, up w, up b, down w, down b, gate_up w, gate_up b */
    {"mlp.gate.weight", "mlp.gate.bias", "mlp.up.weight", "mlp.up.bias", "mlp.down.weight", "mlp.down.bias",
     "mlp.gate_up.weight", "mlp.gate_up.bias"},
    {"moe.experts.gate.weight", "moe.experts.gate.bias", "moe.experts.up.weight", "moe.experts.up.bias",
     "moe.experts.down.weight", "moe.experts.down.bias", "moe.experts.gate_up.weight", "moe.experts.gate_up.bias"},
    {"moe.shared.gate.weight", "moe.shared.gate.bias", "moe.shared.up.weight", "moe.shared.up.bias",
     "moe.shared.down.weight", "moe.shared.down.bias", "moe.shared.gate_up.weight", "moe.shared.gate_up.bias"},
};

static void add_mlp(const zp_model *m, tlist *l, int role, int64_t f, int64_t copies)
{
    const char *const *nm = g_mlp_names[role];
    const int64_t h = m->hidden;
    const int routed = role == MLP_ROUTED, ub = has_bias(m, ZP_BIAS_MLP_UP);
    if (m->mlp == ZP_MLP_GATED && m->gate_up_fused) {
        add_linear(l, nm[6], nm[7], 2 * f, h, ub, ZP_TP_COLUMN, copies, routed);
    } else {
        if (m->mlp == ZP_MLP_GATED)
            add_linear(l, nm[0], nm[1], f, h, ub, ZP_TP_COLUMN, copies, routed);
        add_linear(l, nm[2], nm[3], f, h, ub, ZP_TP_COLUMN, copies, routed);
    }
    add_linear(l, nm[4], nm[5], h, f, has_bias(m, ZP_BIAS_MLP_DOWN), ZP_TP_ROW, copies, routed);
}

static int64_t expert_ffn(const zp_model *m) { return m->expert_ffn > 0 ? m->expert_ffn : m->ffn; }
static int64_t shared_ffn(const zp_model *m) { return m->shared_ffn > 0 ? m->shared_ffn : expert_ffn(m); }
/* The MLP width an MoE block's token runs through: its top_k routed experts', its shared experts'. */
static double routed_width(const zp_model *m) { return (double)m->top_k * (double)expert_ffn(m); }
static double shared_width(const zp_model *m) { return (double)m->shared_experts * (double)shared_ffn(m); }
int64_t zp_model_expert_ffn(const zp_model *m) { return expert_ffn(m); }
int64_t zp_model_shared_ffn(const zp_model *m) { return shared_ffn(m); }
static int block_norms(const zp_model *m) { return m->block_norms > 0 ? m->block_norms : 2; }
static int64_t embed_dim(const zp_model *m) { return m->embed_dim > 0 ? m->embed_dim : m->hidden; }
static int64_t position_rows(const zp_model *m) { return m->positions > 0 ? m->positions : m->seq; }

static void block_tensors(const zp_model *m, tlist *l, int moe)
{
    static const char *const ln[4][2] = {{"ln_1.weight", "ln_1.bias"},
                                         {"ln_2.weight", "ln_2.bias"},
                                         {"ln_3.weight", "ln_3.bias"},
                                         {"ln_4.weight", "ln_4.bias"}};
    const int norms = block_norms(m);
    for (int i = 0; i < norms && i < 4; i++)
        add_norm(l, m, ln[i], m->hidden);
    g_attn[m->attn].tensors(m, l);
    if (!moe) {
        add_mlp(m, l, MLP_DENSE, m->ffn, 1);
        return;
    }
    add(l, "moe.router.weight", m->experts, m->hidden, 1, 0, ZP_TENSOR_ROUTER, ZP_TP_REPLICATED);
    if (m->router_bias)
        add(l, "moe.router.bias", m->experts, 1, 1, 0, ZP_TENSOR_ROUTER, ZP_TP_REPLICATED);
    add_mlp(m, l, MLP_ROUTED, expert_ffn(m), m->experts);
    if (m->shared_experts > 0) /* DeepSeek and Qwen hold the shared experts as one MLP of their summed width */
        add_mlp(m, l, MLP_SHARED, m->shared_experts * shared_ffn(m), 1);
    if (m->shared_gate)
        add(l, "moe.shared_gate.weight", 1, m->hidden, 1, 0, ZP_TENSOR_ROUTER, ZP_TP_REPLICATED);
}

int zp_model_tensors(const zp_model *m, zp_model_section part, zp_tensor *out, int cap)
{
    static const char *const emb_norm[2] = {"embed_norm.weight", "embed_norm.bias"};
    static const char *const final_norm[2] = {"ln_f.weight", "ln_f.bias"};
    static const char *const mtp_norms[3][2] = {
        {"mtp.enorm.weight", "mtp.enorm.bias"}, {"mtp.hnorm.weight", "mtp.hnorm.bias"},
        {"mtp.norm.weight", "mtp.norm.bias"}};
    tlist l = {.out = out, .cap = out ? cap : 0, .n = 0};
    const int64_t h = m->hidden, E = embed_dim(m);
    switch (part) {
    case ZP_SECTION_EMBEDDING:
        add(&l, "wte.weight", m->vocab, E, 1, 0, ZP_TENSOR_LOOKUP, ZP_TP_VOCAB);
        if (g_pos[m->pos].learned)
            add(&l, "wpe.weight", position_rows(m), h, 1, 0, ZP_TENSOR_LOOKUP, ZP_TP_REPLICATED);
        if (m->embed_norm)
            add_norm(&l, m, emb_norm, E);
        if (E != h)
            add_linear(&l, "project_in.weight", NULL, h, E, 0, ZP_TP_REPLICATED, 1, 0);
        break;
    case ZP_SECTION_BLOCK_DENSE:
        block_tensors(m, &l, 0);
        break;
    case ZP_SECTION_BLOCK_MOE:
        if (m->experts > 0)
            block_tensors(m, &l, 1);
        break;
    case ZP_SECTION_HEAD:
        if (!m->no_final_norm)
            add_norm(&l, m, final_norm, h);
        if (E != h)
            add_linear(&l, "project_out.weight", NULL, E, h, 0, ZP_TP_REPLICATED, 1, 0);
        if (m->untied)
            add(&l, "lm_head.weight", m->vocab, E, 1, 0, ZP_TENSOR_MATRIX, ZP_TP_VOCAB);
        if (m->lm_head_bias)
            add(&l, "lm_head.bias", m->vocab, 1, 1, 0, ZP_TENSOR_BIAS, ZP_TP_VOCAB);
        break;
    case ZP_SECTION_MTP:
        if (m->mtp_layers > 0) {
            add_norm(&l, m, mtp_norms[0], h);
            add_norm(&l, m, mtp_norms[1], h);
            add_linear(&l, "mtp.eh_proj.weight", NULL, h, 2 * h, 0, ZP_TP_COLUMN, 1, 0);
            add_norm(&l, m, mtp_norms[2], h);
        }
        break;
    default:
        break;
    }
    return l.n;
}

double zp_tensor_numel(const zp_tensor *t) { return (double)t->rows * (double)t->cols * (double)t->copies; }

double zp_tensor_numel_rank(const zp_tensor *t, int64_t mp)
{
    double n = zp_tensor_numel(t);
    return (t->split == ZP_TP_REPLICATED || mp <= 1) ? n : n / (double)mp;
}

/* Sums over one part. What a tensor contributes: */
enum {
    SUM_ALL,       /* every element */
    SUM_ACTIVE,    /* a routed tensor top_k of its copies */
    SUM_GEMM,      /* multiply-adds per token: active weight matrices and routers (not lookups, vectors) */
};

static double part_sum(const zp_model *m, zp_model_section part, int what)
{
    zp_tensor t[ZP_MODEL_MAX_TENSORS];
    int n = zp_model_tensors(m, part, t, ZP_MODEL_MAX_TENSORS);
    double s = 0;
    for (int i = 0; i < n && i < ZP_MODEL_MAX_TENSORS; i++) {
        double e = zp_tensor_numel(&t[i]);
        if (what != SUM_ALL && t[i].routed)
            e = (double)t[i].rows * (double)t[i].cols * (double)m->top_k;
        if (what == SUM_GEMM && !(t[i].kind == ZP_TENSOR_MATRIX || (t[i].kind == ZP_TENSOR_ROUTER && t[i].cols > 1)))
            continue;
        s += e;
    }
    return s;
}

/* ---- Layer kinds ---------------------------------------------------------------------------- */

static int in_dense_list(const zp_model *m, int64_t i)
{
    for (int k = 0; k < m->n_dense_list && k < ZP_MODEL_MAX_DENSE_LIST; k++)
        if (m->dense_list[k] == i)
            return 1;
    return 0;
}

/* MoE by the frequency rule alone (without the explicit list). */
static int moe_by_rule(const zp_model *m, int64_t i)
{
    if (m->experts <= 0 || i < m->dense_layers)
        return 0;
    return m->moe_every <= 1 || i % m->moe_every == m->moe_phase;
}

int zp_model_block_is_moe(const zp_model *m, int64_t i) { return moe_by_rule(m, i) && !in_dense_list(m, i); }

/* Blocks i in [0, x) with i % e == p. */
static int64_t count_phase(int64_t x, int64_t e, int64_t p) { return x > p ? (x - p - 1) / e + 1 : 0; }

int64_t zp_model_moe_blocks(const zp_model *m)
{
    if (m->experts <= 0)
        return 0;
    int64_t d = m->dense_layers < m->layers ? (m->dense_layers > 0 ? m->dense_layers : 0) : m->layers, n;
    if (m->moe_every <= 1)
        n = m->layers - d;
    else
        n = count_phase(m->layers, m->moe_every, m->moe_phase) - count_phase(d, m->moe_every, m->moe_phase);
    for (int k = 0; k < m->n_dense_list && k < ZP_MODEL_MAX_DENSE_LIST; k++) {
        int64_t i = m->dense_list[k];
        int dup = 0;
        for (int j = 0; j < k; j++)
            dup |= m->dense_list[j] == i;
        if (!dup && i < m->layers && moe_by_rule(m, i))
            n--;
    }
    return n;
}

int zp_model_is_gpt(const zp_model *m)
{
    return m->attn == ZP_ATTN_STANDARD && zp_model_kv_heads(m) == m->heads &&
           zp_model_head_dim(m) * m->heads == m->hidden && m->mlp == ZP_MLP_PLAIN && m->act == ZP_ACT_GELU &&
           m->norm == ZP_NORM_LAYERNORM && block_norms(m) == 2 && !m->parallel && !m->no_final_norm &&
           m->nobias == 0 && m->pos == ZP_POS_LEARNED && !m->untied && !m->lm_head_bias && !m->embed_norm &&
           embed_dim(m) == m->hidden && m->experts == 0 && m->mtp_layers == 0;
}

int64_t zp_model_kv_heads(const zp_model *m)
{
    return (m->attn == ZP_ATTN_MLA || m->kv_heads <= 0) ? m->heads : m->kv_heads;
}

int64_t zp_model_head_dim(const zp_model *m)
{
    if (m->attn == ZP_ATTN_MLA)
        return m->qk_nope_dim + m->qk_rope_dim;
    return m->head_dim > 0 ? m->head_dim : (m->heads > 0 ? m->hidden / m->heads : 0);
}

int64_t zp_model_v_head_dim(const zp_model *m)
{
    return m->attn == ZP_ATTN_MLA ? m->v_head_dim : zp_model_head_dim(m);
}

int64_t zp_model_kv_width(const zp_model *m)
{
    if (m->attn == ZP_ATTN_MLA)
        return m->kv_lora_rank + m->qk_rope_dim;
    return 2 * zp_model_kv_heads(m) * zp_model_head_dim(m);
}

/* ---- Parameter counts ----------------------------------------------------------------------- */

/* Blocks of each kind (dense, MoE). */
static void block_counts(const zp_model *m, double *dense, double *moe)
{
    int64_t nm = zp_model_moe_blocks(m);
    *moe = (double)nm;
    *dense = (double)(m->layers - nm);
}

/* A per-block quantity summed over the blocks: n_dense * dense + n_moe * moe (GPT: l * block). */
static double over_blocks(const zp_model *m, double dense_v, double moe_v)
{
    double nd, nm;
    block_counts(m, &nd, &nm);
    return nm == 0 ? nd * dense_v : nd * dense_v + nm * moe_v;
}

/* The mean block; exactly the block of a model with one kind of block. */
static double mean_block(const zp_model *m, double dense_v, double moe_v)
{
    double nd, nm;
    block_counts(m, &nd, &nm);
    if (nm == 0)
        return dense_v;
    if (nd == 0)
        return moe_v;
    return (nd * dense_v + nm * moe_v) / (double)m->layers;
}

double zp_model_params_block(const zp_model *m, int64_t i)
{
    return part_sum(m, zp_model_block_is_moe(m, i) ? ZP_SECTION_BLOCK_MOE : ZP_SECTION_BLOCK_DENSE, SUM_ALL);
}

double zp_model_params_layer(const zp_model *m)
{
    return mean_block(m, part_sum(m, ZP_SECTION_BLOCK_DENSE, SUM_ALL), part_sum(m, ZP_SECTION_BLOCK_MOE, SUM_ALL));
}

double zp_model_params_embedding(const zp_model *m) { return part_sum(m, ZP_SECTION_EMBEDDING, SUM_ALL); }

double zp_model_params_head(const zp_model *m) { return part_sum(m, ZP_SECTION_HEAD, SUM_ALL); }

static double params_total(const zp_model *m, int what)
{
    double blocks = over_blocks(m, part_sum(m, ZP_SECTION_BLOCK_DENSE, what), part_sum(m, ZP_SECTION_BLOCK_MOE, what));
    return blocks + part_sum(m, ZP_SECTION_EMBEDDING, what) + part_sum(m, ZP_SECTION_HEAD, what);
}

double zp_model_params(const zp_model *m) { return params_total(m, SUM_ALL); }

double zp_model_params_active(const zp_model *m) { return params_total(m, SUM_ACTIVE); }

double zp_model_params_mtp(const zp_model *m)
{
    double p = 0;
    for (int64_t k = 0; k < m->mtp_layers; k++)
        p += part_sum(m, ZP_SECTION_MTP, SUM_ALL) + zp_model_params_block(m, m->layers + k);
    return p;
}

double zp_model_params_largest_layer(const zp_model *m)
{
    double best = part_sum(m, ZP_SECTION_BLOCK_DENSE, SUM_ALL);
    if (zp_model_moe_blocks(m) > 0) {
        double moe = part_sum(m, ZP_SECTION_BLOCK_MOE, SUM_ALL);
        if (zp_model_moe_blocks(m) == m->layers || moe > best)
            best = moe;
    }
    double emb = (double)m->vocab * (double)embed_dim(m); /* the token embedding, and an untied LM head */
    return best > emb ? best : emb;
}

double zp_model_params_largest_tensor_rank(const zp_model *m, int64_t mp)
{
    double best = 0;
    for (int part = ZP_SECTION_EMBEDDING; part <= ZP_SECTION_HEAD; part++) {
        zp_tensor t[ZP_MODEL_MAX_TENSORS];
        int n = zp_model_tensors(m, (zp_model_section)part, t, ZP_MODEL_MAX_TENSORS);
        for (int i = 0; i < n && i < ZP_MODEL_MAX_TENSORS; i++) {
            double one = zp_tensor_numel_rank(&t[i], mp) / (double)(t[i].copies > 0 ? t[i].copies : 1);
            if (one > best)
                best = one;
        }
    }
    return best;
}

static double rank_sum(const zp_model *m, zp_model_section part, int64_t mp, double threshold)
{
    zp_tensor t[ZP_MODEL_MAX_TENSORS];
    int n = zp_model_tensors(m, part, t, ZP_MODEL_MAX_TENSORS);
    double s = 0;
    for (int i = 0; i < n && i < ZP_MODEL_MAX_TENSORS; i++) {
        double e = zp_tensor_numel_rank(&t[i], mp);
        if (threshold > 0) {
            /* small vectors: one copy's elements decide (DeepSpeed looks at each parameter) */
            int vector = t[i].cols == 1 || t[i].rows == 1;
            double one = e / (double)t[i].copies;
            if (!vector || !(one < threshold))
                continue;
        }
        s += e;
    }
    return s;
}

double zp_model_params_rank(const zp_model *m, int64_t mp)
{
    return over_blocks(m, rank_sum(m, ZP_SECTION_BLOCK_DENSE, mp, 0), rank_sum(m, ZP_SECTION_BLOCK_MOE, mp, 0)) +
           rank_sum(m, ZP_SECTION_EMBEDDING, mp, 0) + rank_sum(m, ZP_SECTION_HEAD, mp, 0);
}

double zp_model_params_small_tensors(const zp_model *m, int64_t mp, double threshold)
{
    if (!(threshold > 0))
        return 0;
    return over_blocks(m, rank_sum(m, ZP_SECTION_BLOCK_DENSE, mp, threshold),
                       rank_sum(m, ZP_SECTION_BLOCK_MOE, mp, threshold)) +
           rank_sum(m, ZP_SECTION_EMBEDDING, mp, threshold) + rank_sum(m, ZP_SECTION_HEAD, mp, threshold);
}

/* ---- FLOPs ---------------------------------------------------------------------------------- */

/* Attention's multiply-adds per token: Q K^T over seq keys and A V, for every query head. */
static double attn_macs_token(const zp_model *m)
{
    return (double)m->seq * (double)m->heads * (double)(zp_model_head_dim(m) + zp_model_v_head_dim(m));
}

static double block_flops(const zp_model *m, int moe, double batch)
{
    double tokens = batch * (double)m->seq;
    double gemm = 2.0 * tokens * part_sum(m, moe ? ZP_SECTION_BLOCK_MOE : ZP_SECTION_BLOCK_DENSE, SUM_GEMM);
    return gemm + 2.0 * batch * (double)m->seq * attn_macs_token(m);
}

double zp_model_flops_forward_block(const zp_model *m, int64_t i, double batch)
{
    return block_flops(m, zp_model_block_is_moe(m, i), batch);
}

double zp_model_flops_forward_layer(const zp_model *m, double batch)
{
    return mean_block(m, block_flops(m, 0, batch), zp_model_moe_blocks(m) ? block_flops(m, 1, batch) : 0);
}

/* GEMM multiply-adds per token outside the blocks: the LM head (the token embedding when tied) and
 * OPT's projections. */
static double outer_gemm(const zp_model *m)
{
    double g = part_sum(m, ZP_SECTION_HEAD, SUM_GEMM) + part_sum(m, ZP_SECTION_EMBEDDING, SUM_GEMM);
    if (!m->untied)
        g += (double)m->vocab * (double)embed_dim(m);
    return g;
}

double zp_model_flops_forward_logits(const zp_model *m, double batch)
{
    if (m->untied == 0 && embed_dim(m) == m->hidden) /* GPT: 2*b*s*h*V, computed as always */
        return 2.0 * batch * (double)m->seq * (double)m->hidden * (double)m->vocab;
    return 2.0 * batch * (double)m->seq * outer_gemm(m);
}

double zp_model_flops_token(const zp_model *m)
{
    double blocks = over_blocks(m, part_sum(m, ZP_SECTION_BLOCK_DENSE, SUM_GEMM), part_sum(m, ZP_SECTION_BLOCK_MOE, SUM_GEMM));
    return 2.0 * (blocks + outer_gemm(m)) + 2.0 * (double)m->layers * attn_macs_token(m);
}

double zp_model_flops_iteration(const zp_model *m, double batch, int recompute)
{
    double layers = over_blocks(m, block_flops(m, 0, batch), zp_model_moe_blocks(m) ? block_flops(m, 1, batch) : 0);
    double logits = zp_model_flops_forward_logits(m, batch);
    double passes = recompute ? 4.0 : 3.0; /* forward, backward (2x), and the recomputed forward */
    double mtp = 0, mtp_logits = 0;
    for (int64_t k = 0; k < m->mtp_layers; k++) {
        /* each module: its block and its projection (2h -> h) recomputed as a block, then the shared head */
        mtp += zp_model_flops_forward_block(m, m->layers + k, batch) +
               2.0 * batch * (double)m->seq * part_sum(m, ZP_SECTION_MTP, SUM_GEMM);
        mtp_logits += logits;
    }
    return passes * (layers + mtp) + 3.0 * (logits + mtp_logits);
}

/* The matmuls of a block in torchtitan's order (zp_model.h): attention's, then the dense MLP's or the MoE
 * gate and the shared experts'. */
static int op_sac_order(const zp_model *m, int moe, unsigned *seq)
{
    static const unsigned gqa[] = {ZP_SAC_WQ, ZP_SAC_WK, ZP_SAC_WV, ZP_SAC_WO};
    static const unsigned mla_q[] = {ZP_SAC_WQ_A, ZP_SAC_WQ_B, ZP_SAC_WKV_A, ZP_SAC_WKV_B, ZP_SAC_WO};
    static const unsigned mla[] = {ZP_SAC_WQ, ZP_SAC_WKV_A, ZP_SAC_WKV_B, ZP_SAC_WO};
    const unsigned *attn = m->attn != ZP_ATTN_MLA ? gqa : m->q_lora_rank > 0 ? mla_q : mla;
    int n = m->attn == ZP_ATTN_MLA && m->q_lora_rank > 0 ? 5 : 4;
    for (int i = 0; i < n; i++)
        seq[i] = attn[i];
    if (moe)
        seq[n++] = ZP_SAC_ROUTER;
    if (!moe || m->shared_experts > 0) {
        seq[n++] = ZP_SAC_W1;
        if (m->mlp == ZP_MLP_GATED)
            seq[n++] = ZP_SAC_W3;
        seq[n++] = ZP_SAC_W2;
    }
    return n;
}

void zp_model_op_sac(const zp_model *m, int moe, zp_op_sac *out)
{
    unsigned seq[12];
    const int n = op_sac_order(m, moe, seq);
    *out = (zp_op_sac){0};
    for (int i = 0; i < n; i++) {
        out->has |= seq[i];
        if (i % 2 == 0) /* the 1st, 3rd, ... */
            out->kept |= seq[i];
        else
            out->rerun |= seq[i];
    }
    out->rerun &= ~(unsigned)ZP_SAC_W2; /* the replay stops at its input */
    if (moe) {
        out->has |= ZP_SAC_EXPERTS;
        out->rerun |= ZP_SAC_EXPERTS;
    }
}

zp_status zp_model_check_op_sac(const zp_model *m)
{
    if (m->parallel)
        return ZP_FAIL(ZP_EUNSUPPORTED, "--recompute op: zplan models torchtitan's op-level recompute of its "
                                        "blocks (attention, then the MLP or the MoE layer); model '%s' has "
                                        "parallel attention and MLP: use --recompute full, selective or none",
                       m->name);
    if (m->mtp_layers > 0)
        return ZP_FAIL(ZP_EUNSUPPORTED, "--recompute op: torchtitan's models have no multi-token prediction "
                                        "module; model '%s' has %lld: plan it with --mtp-layers 0",
                       m->name, (long long)m->mtp_layers);
    return ZP_OK;
}

/* Multiply-adds per token of the matmuls (and routed experts) in `parts` of a dense or an MoE block, summed
 * in torchtitan's order. */
static double op_sac_macs(const zp_model *m, int moe, unsigned parts)
{
    const double h = (double)m->hidden, a = (double)m->heads, kv = (double)zp_model_kv_heads(m);
    const double d = (double)zp_model_head_dim(m), dv = (double)zp_model_v_head_dim(m);
    const double f = moe ? shared_width(m) : (double)m->ffn;
    const double kv_b = (double)m->kv_lora_rank * a * ((double)m->qk_nope_dim + dv);
    const struct {
        unsigned bit;
        double macs;
    } w[] = {{ZP_SAC_WQ, h * a * d},
             {ZP_SAC_WK, h * kv * d},
             {ZP_SAC_WV, h * kv * dv},
             {ZP_SAC_WQ_A, h * (double)m->q_lora_rank},
             {ZP_SAC_WQ_B, (double)m->q_lora_rank * a * d},
             {ZP_SAC_WKV_A, h * (double)(m->kv_lora_rank + m->qk_rope_dim)},
             {ZP_SAC_WKV_B, kv_b},
             {ZP_SAC_WO, a * dv * h},
             {ZP_SAC_ROUTER, h * (double)m->experts},
             {ZP_SAC_W1, h * f},
             {ZP_SAC_W3, h * f},
             {ZP_SAC_W2, f * h},
             {ZP_SAC_EXPERTS, (double)g_mlp[m->mlp].matrices * h * routed_width(m)}};
    double macs = 0.0;
    for (size_t i = 0; i < sizeof w / sizeof w[0]; i++)
        if (parts & w[i].bit)
            macs += w[i].macs;
    return macs;
}

double zp_model_flops_op_sac_recompute(const zp_model *m, double batch)
{
    const double tokens = batch * (double)m->seq;
    double nd, nm;
    block_counts(m, &nd, &nm);
    zp_op_sac dense, moe;
    zp_model_op_sac(m, 0, &dense);
    zp_model_op_sac(m, 1, &moe);
    const double f = 2.0 * tokens * nd * op_sac_macs(m, 0, dense.rerun);
    return nm > 0 ? f + 2.0 * tokens * nm * op_sac_macs(m, 1, moe.rerun) : f;
}

/* ---- Activations ---------------------------------------------------------------------------- */

/* Korthikanti's per-token bytes of a block as s*b*h*(R + S/t + 5*a*s/(h*t)): R the replicated terms
 * (norm inputs, the attention's and the MLP's inputs, dropout masks, MoE routing), S those split by
 * tensor parallelism (Q, K, V, the attention output, the MLP's inner activations), in units of h. */
static double block_activation(const zp_model *m, int moe, double batch, int64_t mp)
{
    const double s = (double)m->seq, h = (double)m->hidden, a = (double)m->heads, t = (double)(mp > 0 ? mp : 1);
    const double dqk = (double)zp_model_head_dim(m), dv = (double)zp_model_v_head_dim(m);
    const double kv = (double)zp_model_kv_heads(m);
    double R = 2.0 * block_norms(m) + 2.0 /* attention input */;
    if (!(m->no_dropout & ZP_DROPOUT_NO_HIDDEN))
        R += 2.0; /* dropout masks after the attention and the MLP, 1 byte each */
    if (!(m->parallel && block_norms(m) == 1))
        R += 2.0; /* the MLP's input, unless it is the attention's (one shared norm) */
    double S = (2.0 * a * dqk + 2.0 * kv * dqk + 2.0 * kv * dv + 2.0 * a * dv) / h;
    if (m->attn == ZP_ATTN_MLA) /* the latents and their norms' outputs */
        R += (4.0 * (double)m->q_lora_rank + 4.0 * (double)m->kv_lora_rank + 2.0 * (double)m->qk_rope_dim) / h;
    const double per_f = g_mlp[m->mlp].act_bytes;
    if (!moe) {
        S += per_f * (double)m->ffn / h;
    } else {
        const double k = (double)m->top_k, E = (double)m->experts;
        R += 4.0 * E / h + 2.0 * k; /* fp32 router logits; the tokens copied to their k experts */
        S += per_f * (routed_width(m) + shared_width(m)) / h;
    }
    return s * batch * h * (R + S / t + zp_model_score_bytes(m) * a * s / (h * t));
}

double zp_model_score_bytes(const zp_model *m) { return (m->no_dropout & ZP_DROPOUT_NO_ATTN) ? 4.0 : 5.0; }

double zp_model_activation_bytes_block(const zp_model *m, int64_t i, double batch, int64_t mp)
{
    return block_activation(m, zp_model_block_is_moe(m, i), batch, mp);
}

double zp_model_activation_bytes_layer(const zp_model *m, double batch, int64_t mp)
{
    return mean_block(m, block_activation(m, 0, batch, mp),
                      zp_model_moe_blocks(m) ? block_activation(m, 1, batch, mp) : 0);
}

/* What selective recompute of one Megatron-core module (zp_rc_module) no longer keeps of a block, in the
 * terms of block_activation (R replicated, S split over t, units of s·b·h bytes): layernorm the two norms'
 * outputs (the attention's and the MLP's input), mla_up_proj Q, K and V (the attention output stays: the
 * projection saves it), mlp a dense block's inner activations, moe an MoE layer's whole (router logits, the
 * tokens' copies, every expert's inner activations, the shared experts' too), moe_act the routed experts'
 * activation output, shared_experts the shared experts' inner activations. `gin` is the bytes an element of
 * a GEMM's saved input takes (2, or FP8's copy with its scales): the norms' outputs, the tokens' copies and
 * the activation outputs are such inputs. The attention core is the layout's (it depends on FlashAttention). */
static double block_rc_saved(const zp_model *m, int moe, unsigned module, double batch, int64_t mp, double gin,
                             unsigned glu)
{
    const double s = (double)m->seq, h = (double)m->hidden, a = (double)m->heads, t = (double)(mp > 0 ? mp : 1);
    const double dqk = (double)zp_model_head_dim(m), dv = (double)zp_model_v_head_dim(m);
    const double kv = (double)zp_model_kv_heads(m), k = (double)m->top_k;
    /* per f: fc2's input as kept; a SwiGLU's input (2 elements) in FP8 where it is stored so, no SiLU output
     * where the SwiGLU is fused */
    const int gated = m->mlp == ZP_MLP_GATED;
    const double inner = g_mlp[m->mlp].act_bytes - 2.0 + gin - (gated && (glu & ZP_GLU_FP8_INPUT) ? 2.0 : 0.0) -
                         (gated && (glu & ZP_GLU_FUSED) ? 2.0 : 0.0);
    const double routed = routed_width(m), shared = shared_width(m);
    double R = 0.0, S = 0.0;
    switch (module) {
    case ZP_RCM_LAYERNORM: R = gin * (m->parallel && block_norms(m) == 1 ? 1.0 : 2.0); break;
    case ZP_RCM_MLA_UP_PROJ:
        if (m->attn == ZP_ATTN_MLA)
            S = (2.0 * a * dqk + 2.0 * kv * dqk + 2.0 * kv * dv) / h;
        break;
    case ZP_RCM_MLP: S = moe ? 0.0 : inner * (double)m->ffn / h; break;
    case ZP_RCM_MOE:
        if (moe) {
            R = 4.0 * (double)m->experts / h + gin * k;
            S = inner * (routed + shared) / h;
        }
        break;
    case ZP_RCM_MOE_ACT: S = moe ? gin * routed / h : 0.0; break;
    case ZP_RCM_SHARED_EXPERTS: S = moe ? inner * shared / h : 0.0; break;
    default: break;
    }
    return s * batch * h * (R + S / t);
}

double zp_model_rc_saved_layer(const zp_model *m, unsigned module, double batch, int64_t mp, double gin, unsigned glu)
{
    return mean_block(m, block_rc_saved(m, 0, module, batch, mp, gin, glu),
                      zp_model_moe_blocks(m) ? block_rc_saved(m, 1, module, batch, mp, gin, glu) : 0);
}

/* `bytes` per unit of a gated MLP's width a token, over the width f of block `moe` (a dense MLP's, or the
 * routed and shared experts' together), per MP rank; 0 for a model without gated MLPs. */
static double block_glu_bytes(const zp_model *m, int moe, double batch, int64_t mp, double bytes)
{
    const double t = (double)(mp > 0 ? mp : 1);
    const double f = moe ? routed_width(m) + shared_width(m) : (double)m->ffn;
    return m->mlp == ZP_MLP_GATED ? (double)m->seq * batch * bytes * f / t : 0.0;
}

static double glu_bytes_layer(const zp_model *m, double batch, int64_t mp, double bytes)
{
    return mean_block(m, block_glu_bytes(m, 0, batch, mp, bytes),
                      zp_model_moe_blocks(m) ? block_glu_bytes(m, 1, batch, mp, bytes) : 0);
}

/* A SwiGLU's input stored as FP8 (--activation-func-fp8-input-store): its 2f elements a token (gate and up)
 * take 1 byte less each. */
double zp_model_glu_fp8_saved_layer(const zp_model *m, double batch, int64_t mp)
{
    return glu_bytes_layer(m, batch, mp, 2.0 * 1.0);
}

/* The SiLU's output of a gated MLP, f elements of 2 bytes a token: eager's autograd keeps it for the
 * product's backward; Megatron-core's SwiGLUFunction keeps gate and up only and recomputes it. */
double zp_model_glu_fused_saved_layer(const zp_model *m, double batch, int64_t mp)
{
    return glu_bytes_layer(m, batch, mp, 1.0 * 2.0);
}

/* GEMM multiply-adds per token the modules' recompute runs again in one block (the elementwise ones count
 * no FLOPs): MLA's up-projections (or its plain Q projection), a dense MLP, an MoE layer's router, experts
 * and shared experts, the shared experts alone. */
static double block_rc_macs(const zp_model *m, int moe, unsigned mods)
{
    const double h = (double)m->hidden, a = (double)m->heads, mats = (double)g_mlp[m->mlp].matrices;
    const double routed = routed_width(m), shared = shared_width(m);
    double macs = 0.0;
    if ((mods & ZP_RCM_MLA_UP_PROJ) && m->attn == ZP_ATTN_MLA)
        macs += (m->q_lora_rank > 0 ? (double)m->q_lora_rank : h) * a * (double)zp_model_head_dim(m) +
                (double)m->kv_lora_rank * a * (double)(m->qk_nope_dim + zp_model_v_head_dim(m));
    if ((mods & ZP_RCM_MLP) && !moe)
        macs += mats * h * (double)m->ffn;
    if ((mods & ZP_RCM_MOE) && moe)
        macs += h * (double)m->experts + mats * h * (routed + shared);
    else if ((mods & ZP_RCM_SHARED_EXPERTS) && moe)
        macs += mats * h * shared;
    return macs;
}

double zp_model_flops_rc_modules(const zp_model *m, unsigned mods, double batch)
{
    if (!(mods & (ZP_RCM_MLA_UP_PROJ | ZP_RCM_MLP | ZP_RCM_MOE | ZP_RCM_SHARED_EXPERTS)))
        return 0.0; /* the others run no GEMM again (the attention core's are the caller's) */
    double macs = 0.0;
    for (int64_t i = 0; i < m->layers + m->mtp_layers; i++)
        macs += block_rc_macs(m, zp_model_block_is_moe(m, i), mods);
    return 2.0 * batch * (double)m->seq * macs;
}

double zp_model_checkpoint_bytes_layer(const zp_model *m, double batch)
{
    return 2.0 * (double)m->seq * batch * (double)m->hidden;
}

/* ---- Names, init, validation ------------------------------------------------------------------ */

const char *zp_model_mlp_name(zp_mlp_kind k) { return (unsigned)k < ZP_MLP_COUNT ? g_mlp[k].name : "?"; }
const char *zp_model_activation_name(zp_activation a) { return (unsigned)a < ZP_ACT_COUNT ? g_act_names[a] : "?"; }
const char *zp_model_position_name(zp_position p) { return (unsigned)p < ZP_POS_COUNT ? g_pos[p].name : "?"; }
const char *zp_model_norm_name(zp_norm n) { return (unsigned)n < ZP_NORM_COUNT ? g_norm[n].name : "?"; }
const char *zp_model_attention_name(zp_attention a) { return (unsigned)a < ZP_ATTN_COUNT ? g_attn[a].name : "?"; }

zp_status zp_model_init(zp_model *m, const char *name, int64_t layers, int64_t hidden, int64_t heads, int64_t seq,
                        int64_t vocab, int64_t ffn)
{
    memset(m, 0, sizeof *m);
    snprintf(m->name, sizeof m->name, "%s", name ? name : "custom");
    m->layers = layers;
    m->hidden = hidden;
    m->heads = heads;
    m->seq = seq;
    m->vocab = vocab;
    m->ffn = ffn > 0 ? ffn : (hidden > 0 && hidden <= INT64_MAX / 4 ? 4 * hidden : 0); /* 0: refused below */
    return zp_model_validate(m);
}

/* A field that must lie in [lo, hi]; the message names it. */
static zp_status in_range(const zp_model *m, const char *field, const char *what, int64_t v, int64_t lo, int64_t hi)
{
    if (v >= lo && v <= hi)
        return ZP_OK;
    if (hi == INT64_MAX)
        return ZP_FAIL(ZP_EINVAL, "model '%s': %s (%s) must not be negative (got %lld)", m->name, field, what,
                       (long long)v);
    return ZP_FAIL(ZP_EINVAL, "model '%s': %s (%s) must be between %lld and %lld (got %lld)", m->name, field, what,
                   (long long)lo, (long long)hi, (long long)v);
}
#define RANGE(field, lo, hi, what) ZP_TRY(in_range(m, #field, what, m->field, lo, hi))

/* Group-limited routing: groups that divide the experts, a token's groups among them, holding its top_k. */
static zp_status validate_route_groups(const zp_model *m)
{
    if (m->route_groups == 0 && m->route_topk == 0)
        return ZP_OK;
    if (m->route_groups < 1 || m->experts % m->route_groups != 0)
        return ZP_FAIL(ZP_EINVAL, "model '%s': route_groups (%lld) must divide the %lld experts", m->name,
                       (long long)m->route_groups, (long long)m->experts);
    if (m->route_topk < 1 || m->route_topk > m->route_groups)
        return ZP_FAIL(ZP_EINVAL, "model '%s': route_topk (%lld) must be between 1 and route_groups (%lld)",
                       m->name, (long long)m->route_topk, (long long)m->route_groups);
    if (m->route_topk * (m->experts / m->route_groups) < m->top_k)
        return ZP_FAIL(ZP_EINVAL, "model '%s': %lld of %lld groups of %lld experts hold fewer than top_k (%lld)",
                       m->name, (long long)m->route_topk, (long long)m->route_groups,
                       (long long)(m->experts / m->route_groups), (long long)m->top_k);
    return ZP_OK;
}

static zp_status validate_moe(const zp_model *m)
{
    if (m->experts == 0) {
        if (m->top_k != 0 || m->expert_ffn != 0 || m->shared_experts != 0 || m->shared_gate || m->router_bias ||
            m->route_groups != 0 || m->route_topk != 0)
            return ZP_FAIL(ZP_EINVAL, "model '%s': top_k, expert_ffn, shared_experts, shared_gate, router_bias and "
                                      "route_groups need routed experts (experts is 0)", m->name);
        return ZP_OK;
    }
    if (m->top_k < 1 || m->top_k > m->experts)
        return ZP_FAIL(ZP_EINVAL, "model '%s': top_k (%lld) must be between 1 and experts (%lld)", m->name,
                       (long long)m->top_k, (long long)m->experts);
    ZP_TRY(validate_route_groups(m));
    if (m->moe_every > 1 && (m->moe_phase < 0 || m->moe_phase >= m->moe_every))
        return ZP_FAIL(ZP_EINVAL, "model '%s': moe_phase (%lld) must be below moe_every (%lld)", m->name,
                       (long long)m->moe_phase, (long long)m->moe_every);
    if (m->moe_every <= 1 && m->moe_phase != 0)
        return ZP_FAIL(ZP_EINVAL, "model '%s': moe_phase (%lld) needs moe_every above 1", m->name,
                       (long long)m->moe_phase);
    if (m->n_dense_list < 0 || m->n_dense_list > ZP_MODEL_MAX_DENSE_LIST)
        return ZP_FAIL(ZP_EINVAL, "model '%s': dense_list holds at most %d layers", m->name, ZP_MODEL_MAX_DENSE_LIST);
    for (int k = 0; k < m->n_dense_list; k++)
        if (m->dense_list[k] < 0)
            return ZP_FAIL(ZP_EINVAL, "model '%s': dense_list entry %d is negative (%d)", m->name, k,
                           (int)m->dense_list[k]);
    return ZP_OK;
}

static zp_status validate_mla(const zp_model *m)
{
    if (m->attn != ZP_ATTN_MLA) {
        if (m->q_lora_rank || m->kv_lora_rank || m->qk_nope_dim || m->qk_rope_dim || m->v_head_dim)
            return ZP_FAIL(ZP_EINVAL, "model '%s': q_lora_rank, kv_lora_rank, qk_nope_dim, qk_rope_dim and "
                                      "v_head_dim describe latent attention (attn mla)", m->name);
        return ZP_OK;
    }
    if (m->kv_lora_rank <= 0)
        return ZP_FAIL(ZP_EINVAL, "model '%s': kv_lora_rank must be positive under latent attention (got %lld)",
                       m->name, (long long)m->kv_lora_rank);
    if (m->qk_rope_dim <= 0 || m->v_head_dim <= 0)
        return ZP_FAIL(ZP_EINVAL, "model '%s': qk_rope_dim and v_head_dim must be positive under latent attention",
                       m->name);
    return ZP_OK;
}

zp_status zp_model_validate(const zp_model *m)
{
    if (m->layers <= 0)
        return ZP_FAIL(ZP_EINVAL, "model '%s': layers must be positive (got %lld)", m->name, (long long)m->layers);
    if (m->hidden <= 0)
        return ZP_FAIL(ZP_EINVAL, "model '%s': hidden size must be positive (got %lld)", m->name,
                       (long long)m->hidden);
    if (m->heads <= 0)
        return ZP_FAIL(ZP_EINVAL, "model '%s': heads must be positive (got %lld)", m->name, (long long)m->heads);
    if (m->head_dim == 0 && m->attn == ZP_ATTN_STANDARD && m->hidden % m->heads != 0)
        return ZP_FAIL(ZP_EINVAL, "model '%s': heads (%lld) must divide the hidden size (%lld)", m->name,
                       (long long)m->heads, (long long)m->hidden);
    if (m->seq <= 0)
        return ZP_FAIL(ZP_EINVAL, "model '%s': sequence length must be positive (got %lld)", m->name,
                       (long long)m->seq);
    if (m->vocab <= 0)
        return ZP_FAIL(ZP_EINVAL, "model '%s': vocabulary must be positive (got %lld)", m->name,
                       (long long)m->vocab);
    if (m->ffn <= 0)
        return ZP_FAIL(ZP_EINVAL, "model '%s': FFN size must be positive (got %lld)", m->name, (long long)m->ffn);
    if ((unsigned)m->attn >= ZP_ATTN_COUNT || (unsigned)m->mlp >= ZP_MLP_COUNT || (unsigned)m->act >= ZP_ACT_COUNT ||
        (unsigned)m->pos >= ZP_POS_COUNT || (unsigned)m->norm >= ZP_NORM_COUNT || m->nobias > ZP_BIAS_ALL)
        return ZP_FAIL(ZP_EINVAL, "model '%s': an architecture field (attn, mlp, act, pos, norm, nobias) is out of "
                                  "range", m->name);
    RANGE(kv_heads, 0, INT64_MAX, "key/value heads");
    if (m->kv_heads > 0 && m->attn == ZP_ATTN_STANDARD && (m->kv_heads > m->heads || m->heads % m->kv_heads != 0))
        return ZP_FAIL(ZP_EINVAL, "model '%s': kv_heads (%lld) must divide heads (%lld)", m->name,
                       (long long)m->kv_heads, (long long)m->heads);
    RANGE(head_dim, 0, INT64_MAX, "head size");
    RANGE(block_norms, 0, 4, "norms per block; 0 means 2");
    RANGE(positions, 0, INT64_MAX, "learned positions");
    RANGE(embed_dim, 0, INT64_MAX, "embedding width");
    RANGE(experts, 0, INT64_MAX, "routed experts");
    RANGE(top_k, 0, INT64_MAX, "experts per token");
    RANGE(expert_ffn, 0, INT64_MAX, "expert FFN size");
    RANGE(shared_experts, 0, INT64_MAX, "shared experts");
    RANGE(shared_ffn, 0, INT64_MAX, "shared expert FFN size");
    RANGE(dense_layers, 0, INT64_MAX, "leading dense layers");
    RANGE(moe_every, 0, INT64_MAX, "MoE layer frequency");
    RANGE(mtp_layers, 0, 64, "multi-token-prediction modules");
    RANGE(q_lora_rank, 0, INT64_MAX, "query rank");
    RANGE(kv_lora_rank, 0, INT64_MAX, "key/value rank");
    RANGE(qk_nope_dim, 0, INT64_MAX, "query/key width without rotary");
    RANGE(qk_rope_dim, 0, INT64_MAX, "query/key rotary width");
    RANGE(v_head_dim, 0, INT64_MAX, "value head size");
    ZP_TRY(validate_moe(m));
    ZP_TRY(validate_mla(m));
    /* Every dimension below 2^31 keeps every product of two of them exact in a double. */
    const double lim = 2147483647.0;
    const int64_t dims[] = {m->layers, m->hidden, m->heads, m->seq, m->vocab, m->ffn, m->kv_heads, m->head_dim,
                            m->positions, m->embed_dim, m->experts, m->expert_ffn, m->shared_experts, m->shared_ffn,
                            m->dense_layers, m->moe_every, m->q_lora_rank, m->kv_lora_rank, m->qk_nope_dim,
                            m->qk_rope_dim, m->v_head_dim};
    for (size_t i = 0; i < sizeof dims / sizeof dims[0]; i++)
        if ((double)dims[i] > lim)
            return ZP_FAIL(ZP_ERANGE, "model '%s': a dimension exceeds 2^31-1", m->name);
    /* Products of three (heads x head size x hidden, experts x FFN x hidden) are checked by the total. */
    if ((double)m->heads * (double)zp_model_head_dim(m) > lim || (double)m->experts * (double)expert_ffn(m) > 1e12)
        return ZP_FAIL(ZP_ERANGE, "model '%s': heads x head size or experts x expert FFN is too large", m->name);
    if (g_pos[m->pos].learned && m->positions > 0 && m->seq > m->positions)
        return ZP_FAIL(ZP_EINVAL, "model '%s': sequence length %lld exceeds its %lld learned positions", m->name,
                       (long long)m->seq, (long long)m->positions);
    double p = zp_model_params(m) + zp_model_params_mtp(m);
    if (!(p <= ZP_MODEL_MAX_PARAMS))
        return ZP_FAIL(ZP_ERANGE, "model '%s' has %.3g parameters; zplan accepts at most %.0e", m->name, p,
                       ZP_MODEL_MAX_PARAMS);
    return ZP_OK;
}
