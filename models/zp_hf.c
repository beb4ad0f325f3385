/* zp_hf.c — HuggingFace config.json → zp_model, for the families people train.
 *
 * The families are rows of one const table (g_families): model_type, the JSON keys the family's
 * transformers configuration reads that change the size (each mapped to one canonical key, with the
 * attribute_map aliases), their transformers defaults, the architecture (zp_arch.h) and, where the
 * family has semantics that are not a key-to-field mapping (Falcon's fused QKV layouts, OPT's
 * projected embedding, DeepSeek's router bias), a hook. Semantics follow transformers'
 * modeling_<family>.py (v4.4x-5.x):
 *  - a size key of the wrong type, a size key the family does not read, or an unknown key whose name
 *    says it sizes something (layers, heads, experts, ...) is ZP_EINVAL naming the key: never a
 *    silently different model;
 *  - keys that change no size (rope_theta, token ids, dtype, ...) are accepted; dropout probabilities
 *    decide which masks the memory counts (read_dropout: a mask goes only where its key says 0);
 *  - layers, hidden size and heads are required; every other size key takes transformers' default;
 *  - without model_type only GPT-2's own keys (n_layer, n_embd, n_head, n_inner, n_positions,
 *    vocab_size, ...) are unambiguous: such a file is read as gpt2; any other key asks for model_type;
 *  - the sequence length is the pre-training context: rope_scaling.original_max_position_embeddings when
 *    rope scaling extends it (Llama-3.1, DeepSeek-V3); else max_position_embeddings (n_positions), capped
 *    at ZP_MODEL_PRETRAIN_SEQ_CAP (8,192) for rotary and ALiBi models, whose max_position_embeddings
 *    states a long-context extension (Qwen2-7B: 32,768, pre-trained at 4,096); learned positions take
 *    their table's length. m->seq_note says which; --seq sets another.
 * Only the causal LM is sized (an LM head; not a classification head). */
#include "zp_zoo.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "zp_arch.h"
#include "zp_io.h"

/* ---- Canonical keys ----------------------------------------------------------------------------- */

typedef enum {
    K_LAYERS, K_HIDDEN, K_HEADS, K_KV_HEADS, K_HEAD_DIM, K_FFN, K_VOCAB, K_POSITIONS,
    K_TIE, K_ATTN_BIAS, K_MLP_BIAS, K_QKV_BIAS, K_BIAS, K_ACT,
    K_PARALLEL, K_NEW_ARCH, K_MULTI_QUERY, K_ALIBI, K_NUM_LN,
    K_EXPERTS, K_TOPK, K_MOE_FFN, K_SHARED_EXPERTS, K_SHARED_FFN, K_DENSE_LAYERS, K_MOE_FREQ, K_SPARSE_STEP,
    K_MLP_ONLY, K_TOPK_METHOD, K_GROUPS, K_GROUP_TOPK,
    K_Q_LORA, K_KV_LORA, K_QK_NOPE, K_QK_ROPE, K_V_HEAD, K_MTP,
    K_EMBED_PROJ, K_LN_BEFORE, K_REMOVE_FINAL_LN, K_LN_AFFINE, K_CROSS_ATTN, K_SEQ,
    K_COUNT
} hf_key_id;

typedef enum { T_INT, T_BOOL, T_STR, T_INTLIST } hf_type;

/* Each canonical key's JSON type, smallest value, and whether null is meaningful (transformers' None). */
static const struct {
    hf_type type;
    int64_t min;
    int nullable;
} g_keys[K_COUNT] = {
    [K_LAYERS] = {T_INT, 1, 0},      [K_HIDDEN] = {T_INT, 1, 0},       [K_HEADS] = {T_INT, 1, 0},
    [K_KV_HEADS] = {T_INT, 1, 1},    [K_HEAD_DIM] = {T_INT, 1, 1},     [K_FFN] = {T_INT, 1, 1},
    [K_VOCAB] = {T_INT, 1, 0},       [K_POSITIONS] = {T_INT, 1, 0},    [K_TIE] = {T_BOOL, 0, 0},
    [K_ATTN_BIAS] = {T_BOOL, 0, 0},  [K_MLP_BIAS] = {T_BOOL, 0, 0},    [K_QKV_BIAS] = {T_BOOL, 0, 0},
    [K_BIAS] = {T_BOOL, 0, 1},       [K_ACT] = {T_STR, 0, 1},          [K_PARALLEL] = {T_BOOL, 0, 1},
    [K_NEW_ARCH] = {T_BOOL, 0, 1},   [K_MULTI_QUERY] = {T_BOOL, 0, 1}, [K_ALIBI] = {T_BOOL, 0, 1},
    [K_NUM_LN] = {T_INT, 1, 1},      [K_EXPERTS] = {T_INT, 0, 1},      [K_TOPK] = {T_INT, 1, 1},
    [K_MOE_FFN] = {T_INT, 1, 1},     [K_SHARED_EXPERTS] = {T_INT, 0, 1}, [K_SHARED_FFN] = {T_INT, 0, 0},
    [K_DENSE_LAYERS] = {T_INT, 0, 1}, [K_MOE_FREQ] = {T_INT, 1, 1},    [K_SPARSE_STEP] = {T_INT, 1, 0},
    [K_MLP_ONLY] = {T_INTLIST, 0, 1}, [K_TOPK_METHOD] = {T_STR, 0, 1}, [K_Q_LORA] = {T_INT, 1, 1},
    [K_GROUPS] = {T_INT, 1, 1},      [K_GROUP_TOPK] = {T_INT, 1, 1},
    [K_KV_LORA] = {T_INT, 1, 0},     [K_QK_NOPE] = {T_INT, 0, 0},      [K_QK_ROPE] = {T_INT, 1, 0},
    [K_V_HEAD] = {T_INT, 1, 0},      [K_MTP] = {T_INT, 0, 0},          [K_EMBED_PROJ] = {T_INT, 1, 1},
    [K_LN_BEFORE] = {T_BOOL, 0, 0},  [K_REMOVE_FINAL_LN] = {T_BOOL, 0, 0}, [K_LN_AFFINE] = {T_BOOL, 0, 0},
    [K_CROSS_ATTN] = {T_BOOL, 0, 0}, [K_SEQ] = {T_INT, 1, 1},
};

/* A JSON key of a family and the canonical key it sets; `alias` marks transformers' attribute_map
 * names (hidden_size for gpt2's n_embd), which a file without model_type may not use. */
typedef struct {
    const char *json;
    hf_key_id id;
    int alias;
} hf_key;

typedef struct {
    hf_key_id id;
    int64_t value;
} hf_default;

/* What the file said: a value per canonical key, with the JSON key that gave it. */
typedef struct {
    const char *path, *model_type;
    int present[K_COUNT], null[K_COUNT];
    int64_t v[K_COUNT];
    const char *s[K_COUNT];
    const char *src[K_COUNT];
    int32_t list[ZP_MODEL_MAX_DENSE_LIST];
    int nlist;
    int64_t original_ctx; /* rope scaling's pre-training context, 0 when none */
} hf_vals;

typedef struct hf_family hf_family;
struct hf_family {
    const char *model_type;
    const hf_key *keys;         /* NULL-terminated */
    const hf_default *defaults; /* K_COUNT-terminated */
    const char *const *nonsize; /* family keys that change no size, NULL-terminated (may be NULL) */
    zp_model arch;              /* the family's architecture (zp_arch.h); dimensions filled from the file */
    /* Family semantics beyond the mapping; NULL for none. */
    zp_status (*hook)(const hf_family *f, const hf_vals *x, zp_model *m);
    int legacy;                 /* an old name of the family (Falcon's custom-code RefinedWeb*): not listed, and
                                 * kv heads given (n_head_kv) mean the new decoder architecture */
};

/* ---- Values ------------------------------------------------------------------------------------ */

static int64_t val(const hf_family *f, const hf_vals *x, hf_key_id id, int64_t fallback)
{
    if (x->present[id] && !x->null[id])
        return x->v[id];
    if (x->present[id]) /* null: the caller's meaning of None */
        return fallback;
    for (const hf_default *d = f->defaults; d && d->id != K_COUNT; d++)
        if (d->id == id)
            return d->value;
    return fallback;
}

/* Whether the file or the family's defaults give the key a value. */
static int has_val(const hf_family *f, const hf_vals *x, hf_key_id id)
{
    if (x->present[id])
        return !x->null[id];
    for (const hf_default *d = f->defaults; d && d->id != K_COUNT; d++)
        if (d->id == id)
            return 1;
    return 0;
}

/* Whether the family reads the key at all. */
static int reads(const hf_family *f, hf_key_id id)
{
    for (const hf_key *k = f->keys; k->json; k++)
        if (k->id == id)
            return 1;
    return 0;
}

/* The JSON name of a canonical key in this family, for messages. */
static const char *key_name(const hf_family *f, const hf_vals *x, hf_key_id id)
{
    if (x->src[id])
        return x->src[id];
    for (const hf_key *k = f->keys; k->json; k++)
        if (k->id == id)
            return k->json;
    return "?";
}

static zp_activation act_of(const char *s, zp_activation fallback)
{
    static const struct {
        const char *name;
        zp_activation act;
    } acts[] = {{"silu", ZP_ACT_SILU},       {"swish", ZP_ACT_SILU},         {"gelu", ZP_ACT_GELU},
                {"gelu_new", ZP_ACT_GELU},   {"gelu_pytorch_tanh", ZP_ACT_GELU}, {"gelu_fast", ZP_ACT_GELU},
                {"gelu_accurate", ZP_ACT_GELU}, {"quick_gelu", ZP_ACT_GELU}, {"gelu_python", ZP_ACT_GELU},
                {"relu", ZP_ACT_RELU}};
    if (!s)
        return fallback;
    for (size_t i = 0; i < sizeof acts / sizeof acts[0]; i++)
        if (strcmp(s, acts[i].name) == 0)
            return acts[i].act;
    return ZP_ACT_OTHER;
}

/* ---- Family hooks ------------------------------------------------------------------------------ */

/* Falcon (modeling_falcon.py): the fused QKV is (heads + 2 kv) x head_dim wide with
 * new_decoder_architecture, (heads + 2) heads with multi_query, 3h otherwise; a parallel block has
 * one norm, two with num_ln_in_parallel_attn == 2 (the default of the new architecture); a sequential
 * block two. Old custom-code configs (model_type RefinedWeb*) name kv heads n_head_kv, whose presence
 * means the new architecture (transformers' convert_custom_code_checkpoint.py). */
static zp_status hook_falcon(const hf_family *f, const hf_vals *x, zp_model *m)
{
    int new_arch = (int)val(f, x, K_NEW_ARCH, 0);
    if (f->legacy && !x->present[K_NEW_ARCH])
        new_arch = x->present[K_KV_HEADS];
    int mq = (int)val(f, x, K_MULTI_QUERY, 1), par = (int)val(f, x, K_PARALLEL, 1);
    if (new_arch)
        m->kv_heads = val(f, x, K_KV_HEADS, m->heads);
    else
        m->kv_heads = mq ? 1 : m->heads;
    if (m->kv_heads <= 0 || m->kv_heads > m->heads || m->heads % m->kv_heads != 0)
        return ZP_FAIL(ZP_EINVAL, "%s: key \"%s\" (%lld) must divide the %lld attention heads", x->path,
                       key_name(f, x, K_KV_HEADS), (long long)m->kv_heads, (long long)m->heads);
    int64_t nln = val(f, x, K_NUM_LN, new_arch ? 2 : 1);
    if (x->present[K_NUM_LN] && !x->null[K_NUM_LN] && nln != 1 && nln != 2)
        return ZP_FAIL(ZP_EINVAL, "%s: key \"num_ln_in_parallel_attn\" must be 1 or 2 (got %lld)", x->path,
                       (long long)nln);
    m->parallel = par;
    m->block_norms = par ? (nln == 2 ? 2 : 1) : 2;
    m->nobias = val(f, x, K_BIAS, 0) ? 0 : ZP_BIAS_ALL;
    m->pos = val(f, x, K_ALIBI, 0) ? ZP_POS_ALIBI : ZP_POS_ROTARY;
    return ZP_OK;
}

/* OPT (modeling_opt.py): positions table max_position_embeddings + 2 (the padding offset); a token
 * embedding of word_embed_proj_dim with bias-less projections in and out when it differs from h;
 * no final norm for post-LN models (do_layer_norm_before false, OPT-350m); enable_bias for every
 * linear; LayerNorms without parameters when layer_norm_elementwise_affine is false. */
static zp_status hook_opt(const hf_family *f, const hf_vals *x, zp_model *m)
{
    m->positions = m->seq + 2;
    int64_t e = val(f, x, K_EMBED_PROJ, m->hidden);
    m->embed_dim = e == m->hidden ? 0 : e;
    m->no_final_norm = !val(f, x, K_LN_BEFORE, 1) || val(f, x, K_REMOVE_FINAL_LN, 0);
    m->nobias = val(f, x, K_BIAS, 1) ? 0 : ZP_BIAS_ALL;
    m->norm = val(f, x, K_LN_AFFINE, 1) ? ZP_NORM_LAYERNORM : ZP_NORM_PLAIN;
    return ZP_OK;
}

/* GPT-2: cross-attention blocks (add_cross_attention) belong to an encoder-decoder. */
static zp_status hook_gpt2(const hf_family *f, const hf_vals *x, zp_model *m)
{
    (void)m;
    if (val(f, x, K_CROSS_ATTN, 0))
        return ZP_FAIL(ZP_EINVAL, "%s: key \"add_cross_attention\" true (cross-attention in every block) is not "
                                  "supported: zplan sizes decoder-only models", x->path);
    return ZP_OK;
}

/* BLOOM's MLP is 4h whatever n_inner says (modeling_bloom.py ignores it): a value would be ambiguous. */
static zp_status hook_bloom(const hf_family *f, const hf_vals *x, zp_model *m)
{
    if (x->present[K_FFN] && !x->null[K_FFN] && x->v[K_FFN] != 4 * m->hidden)
        return ZP_FAIL(ZP_EINVAL, "%s: key \"%s\" (%lld): BLOOM's MLP is 4 x hidden (%lld) in transformers, which "
                                  "ignores the key", x->path, key_name(f, x, K_FFN), (long long)x->v[K_FFN],
                       (long long)(4 * m->hidden));
    m->ffn = 4 * m->hidden;
    return ZP_OK;
}

/* Phi-3's attention has no bias whatever attention_bias says (qkv_proj and o_proj are bias=False). */
static zp_status hook_phi3(const hf_family *f, const hf_vals *x, zp_model *m)
{
    (void)m;
    if (val(f, x, K_ATTN_BIAS, 0))
        return ZP_FAIL(ZP_EINVAL, "%s: key \"attention_bias\" true: transformers' Phi-3 has no attention bias, "
                                  "so the size is ambiguous", x->path);
    return ZP_OK;
}

/* DeepSeek-V3's router keeps a per-expert score-correction bias with topk_method noaux_tc (its only
 * method; DeepSeek's modeling_deepseek.py holds it as a parameter, transformers as a buffer). */
static zp_status hook_deepseek_v3(const hf_family *f, const hf_vals *x, zp_model *m)
{
    (void)f;
    const char *method = x->present[K_TOPK_METHOD] && !x->null[K_TOPK_METHOD] ? x->s[K_TOPK_METHOD] : "noaux_tc";
    m->router_bias = m->experts > 0 && strcmp(method, "noaux_tc") == 0;
    return ZP_OK;
}

/* ---- The families ------------------------------------------------------------------------------ */

#define KEYS_DECODER                                                                                        \
    {"num_hidden_layers", K_LAYERS, 0}, {"hidden_size", K_HIDDEN, 0}, {"num_attention_heads", K_HEADS, 0},  \
        {"intermediate_size", K_FFN, 0}, {"vocab_size", K_VOCAB, 0},                                        \
        {"max_position_embeddings", K_POSITIONS, 0}, {"tie_word_embeddings", K_TIE, 0}, {"hidden_act", K_ACT, 0}

static const hf_key k_llama[] = {KEYS_DECODER, {"num_key_value_heads", K_KV_HEADS, 0}, {"head_dim", K_HEAD_DIM, 0},
                                 {"attention_bias", K_ATTN_BIAS, 0}, {"mlp_bias", K_MLP_BIAS, 0}, {NULL, 0, 0}};
static const hf_key k_mistral[] = {KEYS_DECODER, {"num_key_value_heads", K_KV_HEADS, 0}, {"head_dim", K_HEAD_DIM, 0},
                                   {NULL, 0, 0}};
static const hf_key k_mixtral[] = {KEYS_DECODER, {"num_key_value_heads", K_KV_HEADS, 0}, {"head_dim", K_HEAD_DIM, 0},
                                   {"num_local_experts", K_EXPERTS, 0}, {"num_experts", K_EXPERTS, 1},
                                   {"num_experts_per_tok", K_TOPK, 0}, {NULL, 0, 0}};
static const hf_key k_qwen2[] = {KEYS_DECODER, {"num_key_value_heads", K_KV_HEADS, 0}, {"head_dim", K_HEAD_DIM, 0},
                                 {NULL, 0, 0}};
static const hf_key k_qwen2_moe[] = {KEYS_DECODER, {"num_key_value_heads", K_KV_HEADS, 0},
                                     {"head_dim", K_HEAD_DIM, 0}, {"num_experts", K_EXPERTS, 0},
                                     {"num_experts_per_tok", K_TOPK, 0}, {"moe_intermediate_size", K_MOE_FFN, 0},
                                     {"shared_expert_intermediate_size", K_SHARED_FFN, 0},
                                     {"decoder_sparse_step", K_SPARSE_STEP, 0}, {"mlp_only_layers", K_MLP_ONLY, 0},
                                     {"qkv_bias", K_QKV_BIAS, 0}, {NULL, 0, 0}};
static const hf_key k_gemma[] = {KEYS_DECODER, {"num_key_value_heads", K_KV_HEADS, 0}, {"head_dim", K_HEAD_DIM, 0},
                                 {"attention_bias", K_ATTN_BIAS, 0}, {NULL, 0, 0}};
static const hf_key k_phi3[] = {KEYS_DECODER, {"num_key_value_heads", K_KV_HEADS, 0}, {"head_dim", K_HEAD_DIM, 0},
                                {"attention_bias", K_ATTN_BIAS, 0}, {NULL, 0, 0}};
#define KEYS_DEEPSEEK                                                                                         \
    KEYS_DECODER, {"moe_intermediate_size", K_MOE_FFN, 0}, {"n_routed_experts", K_EXPERTS, 0},                \
        {"num_experts_per_tok", K_TOPK, 0}, {"n_shared_experts", K_SHARED_EXPERTS, 0},                        \
        {"first_k_dense_replace", K_DENSE_LAYERS, 0}, {"moe_layer_freq", K_MOE_FREQ, 0},                      \
        {"q_lora_rank", K_Q_LORA, 0}, {"kv_lora_rank", K_KV_LORA, 0}, {"qk_nope_head_dim", K_QK_NOPE, 0},     \
        {"qk_rope_head_dim", K_QK_ROPE, 0}, {"v_head_dim", K_V_HEAD, 0}, {"attention_bias", K_ATTN_BIAS, 0},  \
        {"topk_method", K_TOPK_METHOD, 0}, {"n_group", K_GROUPS, 0}, {"topk_group", K_GROUP_TOPK, 0}
static const hf_key k_deepseek_v2[] = {KEYS_DEEPSEEK, {"num_experts", K_EXPERTS, 1}, {"mlp_bias", K_MLP_BIAS, 0},
                                       {NULL, 0, 0}};
static const hf_key k_deepseek_v3[] = {KEYS_DEEPSEEK, {"num_local_experts", K_EXPERTS, 1},
                                       {"num_nextn_predict_layers", K_MTP, 0}, {"num_mtp_layers", K_MTP, 1},
                                       {NULL, 0, 0}};
static const hf_key k_falcon[] = {{"num_hidden_layers", K_LAYERS, 0}, {"n_layer", K_LAYERS, 1},
                                  {"hidden_size", K_HIDDEN, 0}, {"n_embed", K_HIDDEN, 1},
                                  {"num_attention_heads", K_HEADS, 0}, {"n_head", K_HEADS, 1},
                                  {"num_kv_heads", K_KV_HEADS, 0}, {"n_head_kv", K_KV_HEADS, 1},
                                  {"ffn_hidden_size", K_FFN, 0}, {"vocab_size", K_VOCAB, 0},
                                  {"max_position_embeddings", K_POSITIONS, 0}, {"tie_word_embeddings", K_TIE, 0},
                                  {"multi_query", K_MULTI_QUERY, 0}, {"new_decoder_architecture", K_NEW_ARCH, 0},
                                  {"parallel_attn", K_PARALLEL, 0}, {"bias", K_BIAS, 0}, {"alibi", K_ALIBI, 0},
                                  {"num_ln_in_parallel_attn", K_NUM_LN, 0}, {"activation", K_ACT, 0}, {NULL, 0, 0}};
static const hf_key k_neox[] = {KEYS_DECODER, {"attention_bias", K_ATTN_BIAS, 0},
                                {"use_parallel_residual", K_PARALLEL, 0}, {NULL, 0, 0}};
static const hf_key k_gptj[] = {{"n_layer", K_LAYERS, 0}, {"num_hidden_layers", K_LAYERS, 1},
                                {"n_embd", K_HIDDEN, 0}, {"hidden_size", K_HIDDEN, 1},
                                {"n_head", K_HEADS, 0}, {"num_attention_heads", K_HEADS, 1},
                                {"n_inner", K_FFN, 0}, {"vocab_size", K_VOCAB, 0},
                                {"n_positions", K_POSITIONS, 0}, {"max_position_embeddings", K_POSITIONS, 1},
                                {"tie_word_embeddings", K_TIE, 0}, {"activation_function", K_ACT, 0}, {NULL, 0, 0}};
static const hf_key k_gpt2[] = {{"n_layer", K_LAYERS, 0}, {"num_hidden_layers", K_LAYERS, 1},
                                {"n_embd", K_HIDDEN, 0}, {"hidden_size", K_HIDDEN, 1},
                                {"n_head", K_HEADS, 0}, {"num_attention_heads", K_HEADS, 1},
                                {"n_inner", K_FFN, 0}, {"vocab_size", K_VOCAB, 0},
                                {"n_positions", K_POSITIONS, 0}, {"max_position_embeddings", K_POSITIONS, 1},
                                {"tie_word_embeddings", K_TIE, 0}, {"add_cross_attention", K_CROSS_ATTN, 0},
                                {"activation_function", K_ACT, 0}, {NULL, 0, 0}};
static const hf_key k_opt[] = {{"num_hidden_layers", K_LAYERS, 0}, {"hidden_size", K_HIDDEN, 0},
                               {"num_attention_heads", K_HEADS, 0}, {"ffn_dim", K_FFN, 0},
                               {"vocab_size", K_VOCAB, 0}, {"max_position_embeddings", K_POSITIONS, 0},
                               {"word_embed_proj_dim", K_EMBED_PROJ, 0}, {"do_layer_norm_before", K_LN_BEFORE, 0},
                               {"_remove_final_layer_norm", K_REMOVE_FINAL_LN, 0}, {"enable_bias", K_BIAS, 0},
                               {"layer_norm_elementwise_affine", K_LN_AFFINE, 0}, {"tie_word_embeddings", K_TIE, 0},
                               {"activation_function", K_ACT, 0}, {NULL, 0, 0}};
static const hf_key k_bloom[] = {{"n_layer", K_LAYERS, 0}, {"num_hidden_layers", K_LAYERS, 1},
                                 {"hidden_size", K_HIDDEN, 0}, {"n_embed", K_HIDDEN, 1},
                                 {"n_head", K_HEADS, 0}, {"num_attention_heads", K_HEADS, 1},
                                 {"vocab_size", K_VOCAB, 0}, {"tie_word_embeddings", K_TIE, 0},
                                 {"n_inner", K_FFN, 0}, {"seq_length", K_SEQ, 0},
                                 {"max_position_embeddings", K_POSITIONS, 0}, {NULL, 0, 0}};

/* transformers' defaults (configuration_<family>.py) for the keys a file may leave out. */
#define END {K_COUNT, 0}
static const hf_default d_llama[] = {{K_FFN, 11008}, {K_VOCAB, 32000}, {K_POSITIONS, 2048}, END};
static const hf_default d_mistral[] = {{K_FFN, 14336}, {K_KV_HEADS, 8}, {K_VOCAB, 32000}, {K_POSITIONS, 131072}, END};
static const hf_default d_mixtral[] = {{K_FFN, 14336}, {K_KV_HEADS, 8}, {K_VOCAB, 32000}, {K_POSITIONS, 131072},
                                       {K_EXPERTS, 8}, {K_TOPK, 2}, END};
static const hf_default d_qwen2[] = {{K_FFN, 22016}, {K_KV_HEADS, 32}, {K_VOCAB, 151936}, {K_POSITIONS, 32768}, END};
static const hf_default d_qwen2_moe[] = {{K_FFN, 5632}, {K_KV_HEADS, 16}, {K_VOCAB, 151936}, {K_POSITIONS, 32768},
                                         {K_EXPERTS, 60}, {K_TOPK, 4}, {K_MOE_FFN, 1408}, {K_SHARED_FFN, 5632},
                                         {K_SPARSE_STEP, 1}, {K_QKV_BIAS, 1}, END};
static const hf_default d_gemma[] = {{K_FFN, 24576}, {K_KV_HEADS, 16}, {K_HEAD_DIM, 256}, {K_VOCAB, 256000},
                                     {K_POSITIONS, 8192}, {K_TIE, 1}, END};
static const hf_default d_gemma2[] = {{K_FFN, 9216}, {K_KV_HEADS, 4}, {K_HEAD_DIM, 256}, {K_VOCAB, 256000},
                                      {K_POSITIONS, 8192}, {K_TIE, 1}, END};
static const hf_default d_phi3[] = {{K_FFN, 8192}, {K_VOCAB, 32064}, {K_POSITIONS, 4096}, END};
static const hf_default d_deepseek_v2[] = {{K_FFN, 11008}, {K_VOCAB, 102400}, {K_POSITIONS, 2048}, {K_MOE_FFN, 1407},
                                           {K_EXPERTS, 64}, {K_SHARED_EXPERTS, 2}, {K_DENSE_LAYERS, 0},
                                           {K_MOE_FREQ, 1}, {K_Q_LORA, 1536}, {K_KV_LORA, 512}, {K_QK_NOPE, 128},
                                           {K_QK_ROPE, 64}, {K_V_HEAD, 128}, END};
static const hf_default d_deepseek_v3[] = {{K_FFN, 18432}, {K_VOCAB, 129280}, {K_POSITIONS, 4096}, {K_MOE_FFN, 2048},
                                           {K_EXPERTS, 256}, {K_TOPK, 8}, {K_SHARED_EXPERTS, 1},
                                           {K_DENSE_LAYERS, 3}, {K_MOE_FREQ, 1}, {K_Q_LORA, 1536}, {K_KV_LORA, 512},
                                           {K_QK_NOPE, 128}, {K_QK_ROPE, 64}, {K_V_HEAD, 128}, END};
static const hf_default d_falcon[] = {{K_VOCAB, 65024}, {K_POSITIONS, 2048}, {K_TIE, 1}, END};
static const hf_default d_neox[] = {{K_FFN, 24576}, {K_VOCAB, 50432}, {K_POSITIONS, 2048}, {K_ATTN_BIAS, 1},
                                    {K_PARALLEL, 1}, END};
static const hf_default d_gptj[] = {{K_VOCAB, 50400}, {K_POSITIONS, 2048}, END};
static const hf_default d_gpt2[] = {{K_VOCAB, 50257}, {K_POSITIONS, 1024}, {K_TIE, 1}, END};
static const hf_default d_opt[] = {{K_FFN, 3072}, {K_VOCAB, 50272}, {K_POSITIONS, 2048}, {K_TIE, 1}, END};
static const hf_default d_bloom[] = {{K_VOCAB, 250880}, {K_SEQ, 2048}, {K_TIE, 1}, END};

/* Keys a family reads that change no size. */
static const char *const n_latent[] = {"num_key_value_heads", "head_dim", NULL}; /* MLA ignores both */
static const char *const n_neox[] = {"rotary_pct", "rotary_emb_base", NULL};

static const hf_family g_families[] = {
    {"llama", k_llama, d_llama, NULL, {ZP_ARCH_LLAMA}, NULL, 0},
    {"mistral", k_mistral, d_mistral, NULL, {ZP_ARCH_LLAMA}, NULL, 0},
    {"mixtral", k_mixtral, d_mixtral, NULL, {ZP_ARCH_LLAMA}, NULL, 0},
    {"qwen2", k_qwen2, d_qwen2, NULL, {ZP_ARCH_QWEN2}, NULL, 0},
    {"qwen2_moe", k_qwen2_moe, d_qwen2_moe, NULL, {ZP_ARCH_QWEN2, .shared_experts = 1, .shared_gate = 1}, NULL, 0},
    {"gemma", k_gemma, d_gemma, NULL, {ZP_ARCH_GEMMA}, NULL, 0},
    {"gemma2", k_gemma, d_gemma2, NULL, {ZP_ARCH_GEMMA, .block_norms = 4}, NULL, 0},
    {"phi3", k_phi3, d_phi3, NULL, {ZP_ARCH_PHI3}, hook_phi3, 0},
    {"falcon", k_falcon, d_falcon, NULL, {ZP_ARCH_FALCON}, hook_falcon, 0},
    {"RefinedWebModel", k_falcon, d_falcon, NULL, {ZP_ARCH_FALCON}, hook_falcon, 1},
    {"RefinedWeb", k_falcon, d_falcon, NULL, {ZP_ARCH_FALCON}, hook_falcon, 1},
    {"gpt_neox", k_neox, d_neox, n_neox, {ZP_ARCH_NEOX}, NULL, 0},
    {"gptj", k_gptj, d_gptj, NULL, {ZP_ARCH_GPTJ}, NULL, 0},
    {"gpt2", k_gpt2, d_gpt2, NULL, {.pos = ZP_POS_LEARNED}, hook_gpt2, 0},
    {"opt", k_opt, d_opt, NULL, {ZP_ARCH_OPT}, hook_opt, 0},
    {"bloom", k_bloom, d_bloom, NULL, {ZP_ARCH_BLOOM}, hook_bloom, 0},
    {"deepseek_v2", k_deepseek_v2, d_deepseek_v2, n_latent, {ZP_ARCH_LLAMA, .attn = ZP_ATTN_MLA}, NULL, 0},
    {"deepseek_v3", k_deepseek_v3, d_deepseek_v3, n_latent, {ZP_ARCH_LLAMA, .attn = ZP_ATTN_MLA}, hook_deepseek_v3, 0},
};
#define N_FAMILIES (sizeof g_families / sizeof g_families[0])

/* Keys that never change a size: PretrainedConfig's own, generation settings, numerics, rope and
 * attention-window options, MoE training options, fused-kernel switches. */
static const char *const g_nonsize[] = {
    "_name_or_path", "architectures", "auto_map", "model_type", "transformers_version", "torch_dtype", "dtype",
    "use_cache", "bos_token_id", "eos_token_id", "pad_token_id", "unk_token_id", "sep_token_id",
    "decoder_start_token_id", "initializer_range", "init_std", "initializer_factor", "rms_norm_eps",
    "layer_norm_eps", "layer_norm_epsilon", "rope_theta", "rope_scaling", "rope_parameters", "rope_interleave",
    "rotary_dim", "rotary_pct", "rotary_emb_base", "partial_rotary_factor", "original_max_position_embeddings",
    "attention_dropout", "hidden_dropout", "dropout", "resid_pdrop", "embd_pdrop", "attn_pdrop",
    "classifier_dropout", "activation_dropout", "layerdrop", "summary_first_dropout", "sliding_window",
    "use_sliding_window", "max_window_layers", "layer_types", "sliding_window_pattern", "attn_logit_softcapping",
    "final_logit_softcapping", "query_pre_attn_scalar", "cache_implementation", "router_aux_loss_coef",
    "router_jitter_noise", "output_router_logits", "norm_topk_prob", "routed_scaling_factor", "scoring_func",
    "ep_size", "aux_loss_alpha", "seq_aux", "quantization_config", "pretraining_tp",
    "is_decoder", "output_attentions", "output_hidden_states", "return_dict", "use_return_dict", "torchscript",
    "use_bfloat16", "chunk_size_feed_forward", "tf_legacy_loss", "problem_type", "id2label", "label2id",
    "num_labels", "finetuning_task", "task_specific_params", "tokenizer_class", "prefix", "max_length",
    "min_length", "do_sample", "early_stopping", "num_beams", "num_beam_groups", "diversity_penalty", "temperature",
    "top_k", "top_p", "typical_p", "repetition_penalty", "length_penalty", "no_repeat_ngram_size",
    "encoder_no_repeat_ngram_size", "bad_words_ids", "num_return_sequences", "output_scores",
    "return_dict_in_generate", "forced_bos_token_id", "forced_eos_token_id", "remove_invalid_values",
    "exponential_decay_length_penalty", "suppress_tokens", "begin_suppress_tokens", "hidden_act",
    "hidden_activation", "activation_function", "activation", "_attn_implementation", "attn_implementation",
    "_commit_hash", "_from_model_config", "attention_softmax_in_fp32", "bias_dropout_fusion",
    "masked_softmax_fusion", "skip_bias_add", "skip_bias_add_qkv", "offset_alibi", "slow_but_exact",
    "apply_residual_connection_post_layernorm", "scale_attn_weights", "scale_attn_by_inverse_layer_idx",
    "reorder_and_upcast_attn", "summary_type", "summary_use_proj", "summary_activation", "summary_proj_to_labels",
    "n_ctx", "seq_length", "max_sequence_length", "use_bidirectional_attention", "use_flash_attn",
    "use_flash_attention_2", "gradient_checkpointing", "keys_to_ignore_at_inference", NULL};

/* Fragments of an unknown key's name: one that sizes something, and one that only tunes (these win). */
static const char *const g_size_words[] = {
    "layer", "hidden", "head", "size", "dim", "num_", "n_", "vocab", "expert", "rank", "inner", "intermediate",
    "ffn", "embed", "embd", "proj", "bias", "tie", "norm", "mlp", "moe", "lora", "share", "parallel", "kv",
    "query", "multi", "width", "block", "gate", "router", "dense", "sparse", "mtp", "nextn", "position",
    "cross", "alibi", "encoder", "decoder", "adapter", "lm_head", NULL};
static const char *const g_tuning_words[] = {
    "dropout", "pdrop", "eps", "token_id", "rope", "rotary", "theta", "init", "dtype", "cache", "softcap",
    "window", "loss", "coef", "jitter", "output_", "return_", "aux", "label", "temperature", "penalty", "beam",
    "sample", "scalar", "fusion", "implementation", "version", "fp32", "logit", "prob", "scal", "factor",
    "alpha", "multiplier", "checkpoint", NULL};

static int in_list(const char *const *list, const char *key)
{
    for (int i = 0; list && list[i]; i++)
        if (strcmp(list[i], key) == 0)
            return 1;
    return 0;
}

static int has_word(const char *const *words, const char *key)
{
    for (int i = 0; words[i]; i++)
        if (strstr(key, words[i]))
            return 1;
    return 0;
}

static int looks_like_size(const char *key) { return has_word(g_size_words, key) && !has_word(g_tuning_words, key); }

static const hf_family *family_find(const char *model_type)
{
    for (size_t i = 0; i < N_FAMILIES; i++)
        if (strcmp(g_families[i].model_type, model_type) == 0)
            return &g_families[i];
    return NULL;
}

/* "llama, mistral, ..." for messages (the legacy names are left out). */
static void family_list(char *buf, size_t len)
{
    size_t o = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < N_FAMILIES && o < len; i++) {
        if (g_families[i].legacy)
            continue;
        o += (size_t)snprintf(buf + o, len - o, "%s%s", o ? ", " : "", g_families[i].model_type);
    }
}

/* ---- Reading one key ------------------------------------------------------------------------------ */

static zp_status read_int(json_t *v, const char *path, const char *key, int64_t min, int64_t *out)
{
    if (json_is_integer(v)) {
        *out = json_integer_value(v);
    } else if (json_is_real(v) && json_real_value(v) == floor(json_real_value(v)) && fabs(json_real_value(v)) < 9e15) {
        *out = (int64_t)json_real_value(v);
    } else {
        return ZP_FAIL(ZP_EINVAL, "%s: key \"%s\" must be an integer", path, key);
    }
    if (*out < min)
        return ZP_FAIL(ZP_EINVAL, "%s: key \"%s\" must be %s (got %lld)", path, key,
                       min > 0 ? "positive" : "at least 0", (long long)*out);
    if (*out > INT32_MAX) /* as zp_model_validate: every dimension below 2^31 */
        return ZP_FAIL(ZP_ERANGE, "%s: key \"%s\" (%lld) exceeds 2^31-1", path, key, (long long)*out);
    return ZP_OK;
}

static zp_status read_key(hf_vals *x, const char *key, hf_key_id id, json_t *v)
{
    int null = json_is_null(v);
    if (null && !g_keys[id].nullable)
        return ZP_FAIL(ZP_EINVAL, "%s: key \"%s\" must not be null", x->path, key);
    int64_t iv = 0;
    const char *sv = NULL;
    if (!null) {
        switch (g_keys[id].type) {
        case T_INT:
            ZP_TRY(read_int(v, x->path, key, g_keys[id].min, &iv));
            break;
        case T_BOOL:
            if (!json_is_boolean(v))
                return ZP_FAIL(ZP_EINVAL, "%s: key \"%s\" must be true or false", x->path, key);
            iv = json_is_true(v);
            break;
        case T_STR:
            if (!json_is_string(v))
                return ZP_FAIL(ZP_EINVAL, "%s: key \"%s\" must be a string", x->path, key);
            sv = json_string_value(v);
            break;
        case T_INTLIST:
            if (!json_is_array(v))
                return ZP_FAIL(ZP_EINVAL, "%s: key \"%s\" must be a list of layer indices", x->path, key);
            if (json_array_size(v) > ZP_MODEL_MAX_DENSE_LIST)
                return ZP_FAIL(ZP_EINVAL, "%s: key \"%s\" lists %zu layers; zplan takes at most %d", x->path, key,
                               json_array_size(v), ZP_MODEL_MAX_DENSE_LIST);
            x->nlist = 0;
            for (size_t i = 0; i < json_array_size(v); i++) {
                int64_t li;
                ZP_TRY(read_int(json_array_get(v, i), x->path, key, 0, &li));
                x->list[x->nlist++] = (int32_t)li;
            }
            iv = x->nlist;
            break;
        }
    }
    if (x->present[id]) { /* an alias gave it already: both must say the same */
        int same = x->null[id] == null && (null || (sv ? (x->s[id] && strcmp(sv, x->s[id]) == 0) : x->v[id] == iv));
        if (!same || g_keys[id].type == T_INTLIST)
            return ZP_FAIL(ZP_EINVAL, "%s: keys \"%s\" and \"%s\" both set the same dimension, differently", x->path,
                           x->src[id], key);
    }
    x->present[id] = 1;
    x->null[id] = null;
    x->v[id] = iv;
    x->s[id] = sv;
    x->src[id] = key;
    return ZP_OK;
}

/* rope_scaling (or Phi-3's top-level key) may name the context the model was pre-trained with. */
static void read_original_ctx(json_t *root, hf_vals *x)
{
    json_t *rs = json_object_get(root, "rope_scaling");
    json_t *o = json_is_object(rs) ? json_object_get(rs, "original_max_position_embeddings") : NULL;
    if (!json_is_integer(o))
        o = json_object_get(root, "original_max_position_embeddings");
    if (json_is_integer(o) && json_integer_value(o) > 0 && json_integer_value(o) <= INT32_MAX)
        x->original_ctx = json_integer_value(o);
}

/* ---- The model -------------------------------------------------------------------------------------- */

static zp_status require(const hf_family *f, const hf_vals *x, hf_key_id id)
{
    if (!x->present[id])
        return ZP_FAIL(ZP_EINVAL, "%s: missing key \"%s\" (model_type %s)", x->path, key_name(f, x, id),
                       f->model_type);
    return ZP_OK;
}

/* The sequence: the pre-training context (the rule in the header comment), and why into m->seq_note. */
static int64_t pretraining_seq(const hf_family *f, const hf_vals *x, zp_model *m)
{
    const char *key = key_name(f, x, K_POSITIONS);
    int64_t ctx = val(f, x, K_POSITIONS, 0);
    if (ctx == 0) {
        key = has_val(f, x, K_SEQ) ? key_name(f, x, K_SEQ) : "GPT-2's default";
        ctx = val(f, x, K_SEQ, ZP_MODEL_DEFAULT_SEQ);
    }
    if (m->pos != ZP_POS_LEARNED && x->original_ctx > 0 && x->original_ctx < ctx) {
        snprintf(m->seq_note, sizeof m->seq_note, "sequence %lld: rope_scaling's original_max_position_embeddings "
                 "(the pre-training context; %s %lld is its extension)", (long long)x->original_ctx, key,
                 (long long)ctx);
        ctx = x->original_ctx;
    } else if (m->pos != ZP_POS_LEARNED && ctx > ZP_MODEL_PRETRAIN_SEQ_CAP) {
        snprintf(m->seq_note, sizeof m->seq_note, "sequence %d: %s %lld capped at %d, a pre-training context (the "
                 "longer one is a long-context extension)", ZP_MODEL_PRETRAIN_SEQ_CAP, key, (long long)ctx,
                 ZP_MODEL_PRETRAIN_SEQ_CAP);
        ctx = ZP_MODEL_PRETRAIN_SEQ_CAP;
    } else {
        snprintf(m->seq_note, sizeof m->seq_note, "sequence %lld: %s", (long long)ctx, key);
    }
    return ctx;
}

static zp_status build(const hf_family *f, const hf_vals *x, zp_model *m)
{
    ZP_TRY(require(f, x, K_LAYERS));
    ZP_TRY(require(f, x, K_HIDDEN));
    ZP_TRY(require(f, x, K_HEADS));
    *m = f->arch;
    m->layers = x->v[K_LAYERS];
    m->hidden = x->v[K_HIDDEN];
    m->heads = x->v[K_HEADS];
    m->ffn = val(f, x, K_FFN, 4 * m->hidden); /* n_inner / ffn_hidden_size null: 4h */
    m->vocab = val(f, x, K_VOCAB, ZP_MODEL_DEFAULT_VOCAB);
    m->act = act_of(x->s[K_ACT], f->arch.act);
    if (m->attn == ZP_ATTN_STANDARD) {
        int64_t kv = val(f, x, K_KV_HEADS, 0); /* null: as many as the query heads */
        m->kv_heads = kv == m->heads ? 0 : kv;
        int64_t hd = val(f, x, K_HEAD_DIM, 0);
        m->head_dim = (hd > 0 && hd * m->heads == m->hidden) ? 0 : hd;
        if (m->kv_heads > 0 && (m->kv_heads > m->heads || m->heads % m->kv_heads != 0))
            return ZP_FAIL(ZP_EINVAL, "%s: key \"%s\" (%lld) must divide \"%s\" (%lld)", x->path,
                           key_name(f, x, K_KV_HEADS), (long long)m->kv_heads, key_name(f, x, K_HEADS),
                           (long long)m->heads);
        if (m->head_dim == 0 && m->hidden % m->heads != 0)
            return ZP_FAIL(ZP_EINVAL, "%s: key \"%s\" (%lld) must divide \"%s\" (%lld)", x->path,
                           key_name(f, x, K_HEADS), (long long)m->heads, key_name(f, x, K_HIDDEN),
                           (long long)m->hidden);
    } else {
        m->q_lora_rank = val(f, x, K_Q_LORA, 0); /* null: a plain query projection */
        m->kv_lora_rank = val(f, x, K_KV_LORA, 0);
        m->qk_nope_dim = val(f, x, K_QK_NOPE, 0);
        m->qk_rope_dim = val(f, x, K_QK_ROPE, 0);
        m->v_head_dim = val(f, x, K_V_HEAD, m->qk_nope_dim);
    }
    m->untied = !val(f, x, K_TIE, !f->arch.untied);
    /* Biases the family's keys switch on or off (attention_bias, mlp_bias, qkv_bias). */
    if (has_val(f, x, K_ATTN_BIAS)) {
        if (val(f, x, K_ATTN_BIAS, 0))
            m->nobias &= ~(unsigned)(ZP_BIAS_QKV | ZP_BIAS_ATTN_OUT);
        else
            m->nobias |= ZP_BIAS_QKV | ZP_BIAS_ATTN_OUT;
    }
    if (has_val(f, x, K_MLP_BIAS)) {
        if (val(f, x, K_MLP_BIAS, 0))
            m->nobias &= ~(unsigned)(ZP_BIAS_MLP_UP | ZP_BIAS_MLP_DOWN);
        else
            m->nobias |= ZP_BIAS_MLP_UP | ZP_BIAS_MLP_DOWN;
    }
    if (has_val(f, x, K_QKV_BIAS)) {
        if (val(f, x, K_QKV_BIAS, 0))
            m->nobias &= ~(unsigned)ZP_BIAS_QKV;
        else
            m->nobias |= ZP_BIAS_QKV;
    }
    if (has_val(f, x, K_PARALLEL)) /* NeoX's use_parallel_residual; Falcon's hook reads parallel_attn */
        m->parallel = (int)val(f, x, K_PARALLEL, 1);

    /* Mixture of experts. */
    m->experts = val(f, x, K_EXPERTS, 0); /* null (DeepSeek's n_routed_experts None): dense */
    m->shared_experts = m->shared_gate = 0;
    if (m->experts > 0) {
        m->top_k = val(f, x, K_TOPK, 0);
        if (m->top_k <= 0)
            return ZP_FAIL(ZP_EINVAL, "%s: key \"%s\" is needed with %lld experts", x->path,
                           key_name(f, x, K_TOPK), (long long)m->experts);
        if (m->top_k > m->experts)
            return ZP_FAIL(ZP_EINVAL, "%s: key \"%s\" (%lld) exceeds the %lld experts (\"%s\")", x->path,
                           key_name(f, x, K_TOPK), (long long)m->top_k, (long long)m->experts,
                           key_name(f, x, K_EXPERTS));
        int64_t ef = val(f, x, K_MOE_FFN, 0); /* Mixtral: experts of intermediate_size */
        m->expert_ffn = ef == m->ffn ? 0 : ef;
        if (reads(f, K_SHARED_EXPERTS)) /* DeepSeek: n shared experts of the expert size, merged */
            m->shared_experts = val(f, x, K_SHARED_EXPERTS, 0);
        if (f->arch.shared_experts) { /* Qwen2-MoE: one shared expert of its own size, with a sigmoid gate */
            m->shared_ffn = val(f, x, K_SHARED_FFN, 0);
            m->shared_experts = m->shared_ffn > 0;
            m->shared_gate = m->shared_ffn > 0;
        }
        m->dense_layers = val(f, x, K_DENSE_LAYERS, 0);
        /* DeepSeek's group-limited routing (n_group groups, the best topk_group of them; 1 and 1: none) */
        m->route_groups = val(f, x, K_GROUPS, 0);
        m->route_topk = val(f, x, K_GROUP_TOPK, 0);
        if ((m->route_groups > 0) != (m->route_topk > 0))
            return ZP_FAIL(ZP_EINVAL, "%s: keys \"n_group\" and \"topk_group\" come together (group-limited "
                                      "routing)", x->path);
        int64_t freq = 1, phase = 0;
        if (has_val(f, x, K_MOE_FREQ)) {
            freq = val(f, x, K_MOE_FREQ, 1); /* DeepSeek: layer_idx % moe_layer_freq == 0 */
        } else if (has_val(f, x, K_SPARSE_STEP)) {
            freq = val(f, x, K_SPARSE_STEP, 1); /* Qwen2-MoE: (layer_idx + 1) % decoder_sparse_step == 0 */
            phase = freq - 1;
        }
        m->moe_every = freq > 1 ? freq : 0;
        m->moe_phase = freq > 1 ? phase : 0;
        m->n_dense_list = x->nlist;
        memcpy(m->dense_list, x->list, sizeof x->list);
    }
    m->mtp_layers = val(f, x, K_MTP, 0);

    m->seq = pretraining_seq(f, x, m);
    m->family = f->model_type;
    if (m->pos == ZP_POS_LEARNED)
        m->positions = m->seq;
    if (f->hook)
        ZP_TRY(f->hook(f, x, m));
    return ZP_OK;
}

/* Length of the valid UTF-8 sequence at s (1-4), 0 when s does not start one. */
static size_t utf8_len(const unsigned char *s)
{
    if (s[0] < 0x80)
        return 1;
    size_t n = (s[0] & 0xE0) == 0xC0 ? 2 : (s[0] & 0xF0) == 0xE0 ? 3 : (s[0] & 0xF8) == 0xF0 ? 4 : 0;
    if (n == 0 || (n == 2 && s[0] < 0xC2) || (n == 4 && s[0] > 0xF4))
        return 0;
    for (size_t i = 1; i < n; i++)
        if ((s[i] & 0xC0) != 0x80)
            return 0;
    if ((n == 3 && s[0] == 0xE0 && s[1] < 0xA0) || (n == 3 && s[0] == 0xED && s[1] >= 0xA0) ||
        (n == 4 && s[0] == 0xF0 && s[1] < 0x90) || (n == 4 && s[0] == 0xF4 && s[1] >= 0x90))
        return 0;
    return n;
}

/* The model's name from a file name: valid UTF-8 (a byte that is not is shown as '?'), control characters
 * as '?', cut at a character boundary to fit `len` (reports print it and write it into JSON). */
static void utf8_name(const char *src, char *dst, size_t len)
{
    const unsigned char *s = (const unsigned char *)src;
    size_t o = 0;
    while (*s) {
        size_t n = utf8_len(s);
        if (n == 0 || (n == 1 && (*s < 0x20 || *s == 0x7F))) {
            if (o + 1 >= len)
                break;
            dst[o++] = '?';
            s++;
            continue;
        }
        if (o + n >= len)
            break;
        memcpy(dst + o, s, n);
        o += n;
        s += n;
    }
    dst[o] = '\0';
}

/* A string from the file, fit for a one-line message: control characters (a JSON key may hold "\n",
 * jansson's error text may quote one) and bytes that are not UTF-8 shown as '?', cut to fit `len` at a
 * character boundary. */
static const char *printable(const char *src, char *buf, size_t len)
{
    utf8_name(src, buf, len);
    return buf;
}

/* Dropout probabilities decide which masks a block keeps (zp_model.no_dropout): a family's hidden-dropout
 * key (GPT-2's resid_pdrop, BLOOM's and Falcon's hidden_dropout, OPT's dropout) and its attention-dropout key
 * (attn_pdrop, attention_dropout). A mask is dropped where a key present says 0, or where the architecture
 * has no such dropout (zp_arch.h: Llama, Qwen2, Gemma); otherwise a family keeps Megatron-LM's masks. A
 * probability that is not a number in [0, 1) is refused, naming the key: it would change the memory. */
static const struct {
    const char *key;
    unsigned mask;
} g_dropout_keys[] = {
    {"resid_pdrop", ZP_DROPOUT_NO_HIDDEN}, {"hidden_dropout", ZP_DROPOUT_NO_HIDDEN},
    {"dropout", ZP_DROPOUT_NO_HIDDEN},     {"attn_pdrop", ZP_DROPOUT_NO_ATTN},
    {"attention_dropout", ZP_DROPOUT_NO_ATTN},
};

static zp_status read_dropout(json_t *root, const char *path, zp_model *m)
{
    unsigned seen = 0, nonzero = 0;
    for (size_t i = 0; i < sizeof g_dropout_keys / sizeof g_dropout_keys[0]; i++) {
        json_t *v = json_object_get(root, g_dropout_keys[i].key);
        if (!v || json_is_null(v))
            continue;
        double p = json_is_number(v) ? json_number_value(v) : -1.0;
        if (!(p >= 0.0 && p < 1.0))
            return ZP_FAIL(ZP_EINVAL, "%s: key \"%s\" must be a dropout probability in [0, 1)", path,
                           g_dropout_keys[i].key);
        seen |= g_dropout_keys[i].mask;
        if (p > 0.0)
            nonzero |= g_dropout_keys[i].mask;
    }
    /* the architecture's own (Llama has no dropout at all), and any key at 0; a key above 0 puts the mask back */
    m->no_dropout = (m->no_dropout | seen) & ~nonzero;
    return ZP_OK;
}

/* Reads every key of the object against the family; `implicit`: no model_type (GPT-2 keys only). */
static zp_status read_keys(json_t *root, const hf_family *f, int implicit, hf_vals *x)
{
    const char *key;
    json_t *v;
    char supported[256];
    json_object_foreach(root, key, v) {
        const hf_key *k = f->keys;
        while (k->json && strcmp(k->json, key) != 0)
            k++;
        if (k->json && !(implicit && k->alias)) {
            ZP_TRY(read_key(x, key, k->id, v));
            continue;
        }
        if (in_list(g_nonsize, key) || in_list(f->nonsize, key))
            continue;
        if (!looks_like_size(key))
            continue;
        char shown[64];
        if (implicit) {
            family_list(supported, sizeof supported);
            return ZP_FAIL(ZP_EINVAL, "%s: no \"model_type\", and key \"%s\" is not GPT-2's: families name it "
                                      "alike but size it differently; add \"model_type\" (one of %s)",
                           x->path, printable(key, shown, sizeof shown), supported);
        }
        return ZP_FAIL(ZP_EINVAL, "%s: key \"%s\" is not understood for model_type \"%s\" and may change the "
                                  "model's size; zplan refuses rather than size a different model", x->path,
                       printable(key, shown, sizeof shown), f->model_type);
    }
    return ZP_OK;
}

zp_status zp_model_from_hf_json(const char *text, const char *path, zp_model *out)
{
    if (!text)
        return ZP_FAIL(ZP_EINVAL, "%s: no text", path ? path : "config.json");
    if (!path)
        path = "config.json";
    json_error_t err;
    json_t *root = json_loads(text, 0, &err);
    if (!root) {
        char shown[sizeof err.text];
        return ZP_FAIL(ZP_EINVAL, "%s: not valid JSON (line %d, column %d: %s)", path, err.line, err.column,
                       printable(err.text, shown, sizeof shown));
    }
    if (!json_is_object(root)) {
        json_decref(root);
        return ZP_FAIL(ZP_EINVAL, "%s: a HuggingFace config.json must be a JSON object", path);
    }
    zp_status st = ZP_OK;
    hf_vals *x = calloc(1, sizeof *x);
    if (!x) {
        json_decref(root);
        return ZP_FAIL(ZP_ENOMEM, "out of memory");
    }
    x->path = path;
    json_t *mt = json_object_get(root, "model_type");
    const hf_family *f = NULL;
    int implicit = 0;
    if (mt == NULL) {
        f = family_find("gpt2");
        implicit = 1;
    } else if (!json_is_string(mt)) {
        st = ZP_FAIL(ZP_EINVAL, "%s: key \"model_type\" must be a string", path);
    } else if ((f = family_find(json_string_value(mt))) == NULL) {
        char supported[256], shown[64];
        family_list(supported, sizeof supported);
        st = ZP_FAIL(ZP_EINVAL, "%s: model_type \"%s\" is not supported (supported: %s)", path,
                     printable(json_string_value(mt), shown, sizeof shown), supported);
    }
    zp_model m;
    if (st == ZP_OK) {
        x->model_type = f->model_type;
        read_original_ctx(root, x);
        st = read_keys(root, f, implicit, x);
    }
    if (st == ZP_OK)
        st = build(f, x, &m);
    if (st == ZP_OK)
        st = read_dropout(root, path, &m);
    json_t *theta = json_object_get(root, "rope_theta"); /* changes no size: kept for the emitted launches */
    if (st == ZP_OK && json_is_number(theta) && json_number_value(theta) > 0 && json_number_value(theta) < 1e12)
        m.rope_theta = json_number_value(theta);
    free(x);
    json_decref(root);
    ZP_TRY(st);
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    utf8_name(base, m.name, sizeof m.name);
    ZP_TRY(zp_model_validate(&m));
    *out = m;
    return ZP_OK;
}

zp_status zp_model_from_hf_config(const char *path, zp_model *out)
{
    char *text = NULL;
    ZP_TRY(zp_io_read_file(path, 16u << 20, &text, NULL));
    zp_status st = zp_model_from_hf_json(text, path, out);
    free(text);
    return st;
}

int zp_hf_family_count(void) { return (int)N_FAMILIES; }

const char *zp_hf_family_name(int i) { return (i >= 0 && i < (int)N_FAMILIES) ? g_families[i].model_type : NULL; }
