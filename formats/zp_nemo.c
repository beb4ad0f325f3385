/* zp_nemo.c — a NeMo (Megatron GPT) YAML read as a launch (zp_launch.h):
 * examples/nlp/language_modeling/conf/megatron_gpt_config.yaml and NeMo-Framework-Launcher's
 * conf/training/gpt3/ (its YAMLs) name the same keys (trainer.devices, model.tensor_model_parallel_size, ...).
 *
 * The YAML subset read: block mappings by indentation (spaces), key: value with plain, single- or
 * double-quoted scalars, flow sequences or mappings kept as text, block sequences (- item) and block scalars
 * (| >) skipped, comments, a leading ---. OmegaConf's ${a.b} and ${.b} interpolations of another key are
 * resolved; others (${multiply:...}) are refused where zplan reads the key. null and ~ leave a key unstated.
 * Anything else exits 2 naming the line. */
#include <ctype.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "zp_launch.h"

#define MAX_DEPTH 16

/* Sections whose keys change nothing zplan models. */
static const char *const g_quiet[] = {"exp_manager", "model.data", "model.optim.sched", "model.nsys_profile",
                                      "model.tokenizer.model", "hydra", NULL};

static zp_status set_precision(zp_launch *l, const zp_launch_entry *e)
{
    static const char *const v16[] = {"16", "16-mixed", "fp16"}, *const vb[] = {"bf16", "bf16-mixed"},
                             *const v32[] = {"32", "32-true", "fp32"};
    for (int i = 0; i < 3; i++) {
        if (strcmp(e->value, v16[i]) == 0)
            l->precision = ZP_LAUNCH_FP16;
        else if (i < 2 && strcmp(e->value, vb[i]) == 0)
            l->precision = ZP_LAUNCH_BF16;
        else if (strcmp(e->value, v32[i]) == 0)
            l->precision = ZP_LAUNCH_FP32;
        else
            continue;
        return ZP_OK;
    }
    return ZP_FAIL(ZP_EINVAL, "%s:%d: trainer.precision '%s': use 16, bf16 or 32 (or their -mixed forms)", l->name,
                   e->line, e->value);
}

static zp_status set_granularity(zp_launch *l, const zp_launch_entry *e)
{
    if (strcmp(e->value, "full") == 0 || strcmp(e->value, "selective") == 0) {
        l->recompute = e->value[0] == 'f' ? ZP_RECOMPUTE_FULL : ZP_RECOMPUTE_SELECTIVE;
        return ZP_OK;
    }
    return ZP_FAIL(ZP_EINVAL, "%s:%d: model.activations_checkpoint_granularity '%s': use full, selective or null",
                   l->name, e->line, e->value);
}

static zp_status set_ckpt_layers(zp_launch *l, const zp_launch_entry *e)
{
    if (strcmp(e->value, "1") != 0)
        zp_launch_note(l, "line %d: activations_checkpoint_num_layers %s: zplan recomputes block by block (1)",
                       e->line, e->value);
    return ZP_OK;
}

static zp_status set_norm(zp_launch *l, const zp_launch_entry *e)
{
    if (strcasecmp(e->value, "layernorm") == 0 || strcasecmp(e->value, "rmsnorm") == 0) {
        l->rmsnorm = tolower((unsigned char)e->value[0]) == 'r';
        return ZP_OK;
    }
    return ZP_FAIL(ZP_EINVAL, "%s:%d: model.normalization '%s': use layernorm or rmsnorm", l->name, e->line,
                   e->value);
}

static zp_status set_activation(zp_launch *l, const zp_launch_entry *e)
{
    if (strcmp(e->value, "gelu") == 0 || strcmp(e->value, "swiglu") == 0 || strcmp(e->value, "fast-swiglu") == 0) {
        l->swiglu = e->value[0] != 'g';
        return ZP_OK;
    }
    return ZP_FAIL(ZP_EINVAL, "%s:%d: model.activation '%s': zplan reads gelu, swiglu and fast-swiglu", l->name,
                   e->line, e->value);
}

static zp_status set_pos(zp_launch *l, const zp_launch_entry *e)
{
    if (strcmp(e->value, "rope") == 0 || strcmp(e->value, "learned_absolute") == 0) {
        l->rope = e->value[0] == 'r';
        return ZP_OK;
    }
    return ZP_FAIL(ZP_EINVAL, "%s:%d: model.position_embedding_type '%s': zplan reads rope and learned_absolute",
                   l->name, e->line, e->value);
}

/* NeMo's Megatron optimizers: distributed_fused_adam shards the optimizer states (ZeRO stage 1) */
static zp_status set_optim(zp_launch *l, const zp_launch_entry *e)
{
    l->stage = strcmp(e->value, "distributed_fused_adam") == 0 ? 1 : 0;
    return ZP_OK;
}

/* A YAML boolean into *on; ZP_EINVAL naming the key otherwise. */
static zp_status yaml_bool(const zp_launch *l, const zp_launch_entry *e, int *on)
{
    *on = strcasecmp(e->value, "true") == 0;
    if (!*on && strcasecmp(e->value, "false") != 0)
        return ZP_FAIL(ZP_EINVAL, "%s:%d: %s: '%s' is not true or false", l->name, e->line, e->key, e->value);
    return ZP_OK;
}

/* model.fsdp, model.fp8_params: true changes the answer and is not modelled */
static zp_status set_refused_if_true(zp_launch *l, const zp_launch_entry *e)
{
    int on;
    ZP_TRY(yaml_bool(l, e, &on));
    if (on)
        return ZP_FAIL(ZP_EINVAL, "%s:%d: %s true: %s", l->name, e->line, e->key,
                       strstr(e->key, "fp8") ? "FP8 parameters (kept and gathered in FP8) are not modelled"
                                             : "NeMo's torch FSDP launches are not read yet (torchtitan's are)");
    return ZP_OK;
}

/* model.moe_token_dispatcher_type: Megatron-core's names (alltoall, flex, allgather) */
static zp_status set_moe_dispatcher(zp_launch *l, const zp_launch_entry *e)
{
    return zp_launch_set_moe_dispatcher(l, e, "model.moe_token_dispatcher_type");
}

/* model.fp8_recipe: NeMo passes Megatron-core's names (delayed, tensorwise, blockwise, mxfp8) */
static zp_status set_fp8_recipe(zp_launch *l, const zp_launch_entry *e)
{
    return zp_launch_set_fp8_recipe(l, e, "model.fp8_recipe: ");
}

/* model.fp8_wgrad false: the weight gradients' GEMMs in bf16, which zplan does not model */
static zp_status set_fp8_wgrad(zp_launch *l, const zp_launch_entry *e)
{
    int on;
    ZP_TRY(yaml_bool(l, e, &on));
    if (!on)
        return ZP_FAIL(ZP_EINVAL, "%s:%d: model.fp8_wgrad false: weight gradients in bf16 beside FP8 forward and "
                                  "input gradients are not modelled (drop the key: true is the default)",
                       l->name, e->line);
    return ZP_OK;
}

static zp_status set_rampup(zp_launch *l, const zp_launch_entry *e)
{
    zp_launch_note(l, "line %d: model.rampup_batch_size %s: judged at the full global batch", e->line, e->value);
    return ZP_OK;
}

/* model.mcore_gpt: Megatron-core's layers, whose attention is Transformer Engine's fused (flash) kernel unless
 * use_flash_attention says otherwise */
static zp_status set_mcore(zp_launch *l, const zp_launch_entry *e)
{
    if (strcasecmp(e->value, "true") == 0 && l->flash == ZP_LAUNCH_UNSET)
        l->flash = 1;
    return ZP_OK;
}

#define F(field) offsetof(zp_launch, field)
static const zp_launch_key g_keys[] = {
    {"trainer.devices", ZP_LK_INT, F(gpus_per_node), 0, NULL, NULL},
    {"trainer.num_nodes", ZP_LK_INT, F(nodes), 0, NULL, NULL},
    {"trainer.precision", ZP_LK_FN, 0, 0, set_precision, NULL},
    {"model.micro_batch_size", ZP_LK_INT, F(micro_batch), 0, NULL, NULL},
    {"model.global_batch_size", ZP_LK_INT, F(global_batch), 0, NULL, NULL},
    {"model.tensor_model_parallel_size", ZP_LK_INT, F(tp), 0, NULL, NULL},
    {"model.pipeline_model_parallel_size", ZP_LK_INT, F(pp), 0, NULL, NULL},
    {"model.virtual_pipeline_model_parallel_size", ZP_LK_INT, F(vstages), 0, NULL, NULL},
    {"model.context_parallel_size", ZP_LK_INT, F(cp), 0, NULL, NULL},
    {"model.sequence_parallel", ZP_LK_BOOL, F(sp), 1, NULL, NULL},
    {"model.encoder_seq_length", ZP_LK_INT, F(seq), 0, NULL, NULL},
    {"model.max_position_embeddings", ZP_LK_INT, F(positions), 0, NULL, NULL},
    {"model.num_layers", ZP_LK_INT, F(layers), 0, NULL, NULL},
    {"model.hidden_size", ZP_LK_INT, F(hidden), 0, NULL, NULL},
    {"model.ffn_hidden_size", ZP_LK_INT, F(ffn), 0, NULL, NULL},
    {"model.num_attention_heads", ZP_LK_INT, F(heads), 0, NULL, NULL},
    {"model.num_query_groups", ZP_LK_INT, F(kv_heads), 0, NULL, NULL},
    {"model.kv_channels", ZP_LK_INT, F(head_dim), 0, NULL, NULL},
    {"model.hidden_dropout", ZP_LK_REAL, F(hidden_dropout), 0, NULL, NULL},
    {"model.attention_dropout", ZP_LK_REAL, F(attn_dropout), 0, NULL, NULL},
    {"model.make_vocab_size_divisible_by", ZP_LK_INT, F(vocab_multiple), 0, NULL, NULL},
    {"model.tokenizer.type", ZP_LK_STR, F(tokenizer), 0, NULL, NULL},
    {"model.normalization", ZP_LK_FN, 0, 0, set_norm, NULL},
    {"model.activation", ZP_LK_FN, 0, 0, set_activation, NULL},
    {"model.bias", ZP_LK_BOOL, F(no_bias), 0, NULL, NULL},
    {"model.share_embeddings_and_output_weights", ZP_LK_BOOL, F(untied), 0, NULL, NULL},
    {"model.position_embedding_type", ZP_LK_FN, 0, 0, set_pos, NULL},
    {"model.rotary_base", ZP_LK_REAL, F(rope_theta), 0, NULL, NULL},
    {"model.activations_checkpoint_granularity", ZP_LK_FN, 0, 0, set_granularity, NULL},
    {"model.recompute_modules", ZP_LK_FN, 0, 0, zp_launch_recompute_modules, NULL},
    {"model.activations_checkpoint_num_layers", ZP_LK_FN, 0, 0, set_ckpt_layers, NULL},
    {"model.gradient_accumulation_fusion", ZP_LK_BOOL, F(fusion), 1, NULL, NULL},
    {"model.use_flash_attention", ZP_LK_BOOL, F(flash), 1, NULL, NULL},
    {"model.optim.name", ZP_LK_FN, 0, 0, set_optim, NULL},
    {"model.num_moe_experts", ZP_LK_INT, F(experts), 0, NULL, NULL},
    {"model.moe_router_topk", ZP_LK_INT, F(topk), 0, NULL, NULL},
    {"model.moe_ffn_hidden_size", ZP_LK_INT, F(moe_ffn), 0, NULL, NULL},
    {"model.moe_shared_expert_intermediate_size", ZP_LK_INT, F(shared_ffn), 0, NULL, NULL},
    {"model.moe_router_num_groups", ZP_LK_INT, F(route_groups), 0, NULL, NULL},
    {"model.moe_router_group_topk", ZP_LK_INT, F(route_topk), 0, NULL, NULL},
    {"model.moe_router_enable_expert_bias", ZP_LK_BOOL, F(router_bias), 1, NULL, NULL},
    {"model.expert_model_parallel_size", ZP_LK_INT, F(ep), 0, NULL, NULL},
    {"model.moe_token_dispatcher_type", ZP_LK_FN, 0, 0, set_moe_dispatcher, NULL},
    {"model.moe_enable_deepep", ZP_LK_BOOL, F(deepep), 1, NULL, NULL},
    {"model.overlap_moe_expert_parallel_comm", ZP_LK_BOOL, F(ep_overlap), 1, NULL, NULL},
    {"model.moe_expert_capacity_factor", ZP_LK_REAL, F(capacity), 0, NULL, NULL},
    {"model.moe_shared_expert_overlap", ZP_LK_BOOL, F(shared_overlap), 1, NULL, NULL},
    {"model.activation_func_fp8_input_store", ZP_LK_BOOL, F(act_fp8_store), 1, NULL, NULL},
    {"model.bias_activation_fusion", ZP_LK_BOOL, F(swiglu_fusion), 1, NULL, NULL},
    /* multi-head latent attention and MTP: Megatron-core's names (formats/zp_launch_plan.c, launch_mla) */
    {"model.multi_latent_attention", ZP_LK_BOOL, F(mla), 1, NULL, NULL},
    {"model.q_lora_rank", ZP_LK_INT, F(q_lora), 0, NULL, NULL},
    {"model.kv_lora_rank", ZP_LK_INT, F(kv_lora), 0, NULL, NULL},
    {"model.qk_head_dim", ZP_LK_INT, F(qk_head), 0, NULL, NULL},
    {"model.qk_pos_emb_head_dim", ZP_LK_INT, F(qk_pos), 0, NULL, NULL},
    {"model.v_head_dim", ZP_LK_INT, F(v_head), 0, NULL, NULL},
    {"model.mtp_num_layers", ZP_LK_INT, F(mtp), 0, NULL, NULL},
    {"model.moe_router_load_balancing_type", ZP_LK_KNOWN, 0, 0, NULL, NULL}, /* the router's losses and fusions */
    {"model.moe_aux_loss_coeff", ZP_LK_KNOWN, 0, 0, NULL, NULL},
    {"model.moe_z_loss_coeff", ZP_LK_KNOWN, 0, 0, NULL, NULL},
    {"model.moe_grouped_gemm", ZP_LK_KNOWN, 0, 0, NULL, NULL},
    {"model.moe_router_pre_softmax", ZP_LK_KNOWN, 0, 0, NULL, NULL},
    {"model.moe_token_drop_policy", ZP_LK_KNOWN, 0, 0, NULL, NULL},
    {"model.moe_pad_expert_input_to_capacity", ZP_LK_KNOWN, 0, 0, NULL, NULL},
    {"model.moe_per_layer_logging", ZP_LK_KNOWN, 0, 0, NULL, NULL},
    {"model.optim.overlap_grad_sync", ZP_LK_BOOL, F(overlap), 1, NULL, NULL},
    {"model.ub_tp_comm_overlap", ZP_LK_BOOL, F(tp_overlap), ZP_TP_OVERLAP_TE, NULL, NULL},
    {"model.optim.overlap_param_sync", ZP_LK_BOOL, F(param_gather), 1, NULL, NULL},
    {"model.overlap_p2p_comm", ZP_LK_BOOL, F(p2p_overlap), 1, NULL, NULL},
    {"model.overlap_p2p_comm_warmup_flush", ZP_LK_BOOL, F(p2p_warmup_flush), 1, NULL, NULL},
    {"model.batch_p2p_comm", ZP_LK_KNOWN, 0, 0, NULL, NULL}, /* batched or not: the same transfers */
    {"model.fp8", ZP_LK_BOOL, F(fp8), 1, NULL, NULL}, /* TE's FP8 linear layers; delayed unless fp8_recipe says */
    {"model.fp8_recipe", ZP_LK_FN, 0, 0, set_fp8_recipe, NULL},
    {"model.fp8_wgrad", ZP_LK_FN, 0, 0, set_fp8_wgrad, NULL},
    {"model.fp8_params", ZP_LK_FN, 0, 0, set_refused_if_true, NULL},
    {"model.fp8_e4m3", ZP_LK_KNOWN, 0, 0, NULL, NULL}, /* the FP8 formats change no cost zplan models */
    {"model.fp8_hybrid", ZP_LK_KNOWN, 0, 0, NULL, NULL},
    {"model.fp8_margin", ZP_LK_KNOWN, 0, 0, NULL, NULL},
    {"model.fp8_interval", ZP_LK_KNOWN, 0, 0, NULL, NULL},
    {"model.fp8_amax_history_len", ZP_LK_KNOWN, 0, 0, NULL, NULL},
    {"model.fp8_amax_compute_algo", ZP_LK_KNOWN, 0, 0, NULL, NULL},
    {"model.fsdp", ZP_LK_FN, 0, 0, set_refused_if_true, NULL},
    {"model.rampup_batch_size", ZP_LK_FN, 0, 0, set_rampup, NULL},
    {"model.mcore_gpt", ZP_LK_FN, 0, 0, set_mcore, NULL},
    {"model.transformer_engine", ZP_LK_KNOWN, 0, 0, NULL, NULL},
    {"trainer.accumulate_grad_batches", ZP_LK_KNOWN, 0, 0, NULL, NULL}, /* NeMo derives it from the batch */
    {"model.activations_checkpoint_method", ZP_LK_KNOWN, 0, 0, NULL, NULL},
    {"model.megatron_amp_O2", ZP_LK_KNOWN, 0, 0, NULL, NULL},
    {"model.optim.lr", ZP_LK_KNOWN, 0, 0, NULL, NULL},
    {"model.optim.weight_decay", ZP_LK_KNOWN, 0, 0, NULL, NULL},
    {"model.optim.betas", ZP_LK_KNOWN, 0, 0, NULL, NULL},
    {NULL, 0, 0, 0, NULL, NULL},
};
#undef F

static int quiet(const char *key)
{
    for (int i = 0; g_quiet[i]; i++) {
        const size_t n = strlen(g_quiet[i]);
        if (strncmp(key, g_quiet[i], n) == 0 && (key[n] == '\0' || key[n] == '.'))
            return 1;
    }
    return 0;
}

/* The scalar after "key:" (p at its first character, the line's end at e): quotes removed, a comment cut;
 * into out and len. ZP_EINVAL when a quote is not closed. */
static zp_status yaml_scalar(const char *p, const char *e, const char *name, int line, const char **out, size_t *len)
{
    if (*p == '"' || *p == '\'') {
        const char *q = p + 1;
        while (q < e && *q != *p)
            q++;
        if (q >= e)
            return ZP_FAIL(ZP_EINVAL, "%s:%d: a quoted value is not closed on its line", name, line);
        *out = p + 1;
        *len = (size_t)(q - p - 1);
        return ZP_OK;
    }
    const char *c = p;
    while (c < e && !(*c == '#' && (c == p || c[-1] == ' ' || c[-1] == '\t')))
        c++;
    while (c > p && isspace((unsigned char)c[-1]))
        c--;
    *out = p;
    *len = (size_t)(c - p);
    return ZP_OK;
}

typedef struct {
    int indent[MAX_DEPTH];
    char key[MAX_DEPTH][96];
    int depth;
    int block_indent; /* inside a block scalar or sequence: lines indented more than this are skipped; -1 */
} ypath;

/* One "key: value" line at indentation ind (p at the key, e its end). */
static zp_status yaml_line(ypath *y, const char *p, const char *e, int ind, const char *name, int line,
                           zp_launch_entries *en)
{
    while (y->depth > 0 && y->indent[y->depth - 1] >= ind)
        y->depth--;
    const char *k = p;
    while (p < e && (isalnum((unsigned char)*p) || *p == '_' || *p == '-' || *p == '.'))
        p++;
    if (p == k || p >= e || *p != ':' || (p + 1 < e && p[1] != ' ' && p[1] != '\t'))
        return ZP_FAIL(ZP_EINVAL, "%s:%d: expected key: value (zplan reads a subset of YAML: block mappings)", name,
                       line);
    char key[200];
    size_t n = 0;
    for (int i = 0; i < y->depth && n < sizeof key; i++) {
        const size_t kl = strlen(y->key[i]);
        if (n + kl + 1 >= sizeof key)
            n = sizeof key; /* too long: refused below */
        else {
            memcpy(key + n, y->key[i], kl);
            key[n + kl] = '.';
            n += kl + 1;
        }
    }
    if (n + (size_t)(p - k) >= sizeof key || (size_t)(p - k) >= sizeof y->key[0] || y->depth >= MAX_DEPTH)
        return ZP_FAIL(ZP_EINVAL, "%s:%d: key nested too deep or too long", name, line);
    snprintf(key + n, sizeof key - n, "%.*s", (int)(p - k), k);
    p++;
    while (p < e && (*p == ' ' || *p == '\t'))
        p++;
    const char *v = p;
    size_t vlen = 0;
    ZP_TRY(yaml_scalar(p, e, name, line, &v, &vlen));
    if (vlen == 0 || ((*v == '|' || *v == '>') && vlen <= 2)) { /* a mapping, a sequence or a block scalar */
        if (vlen > 0)
            y->block_indent = ind;
        y->indent[y->depth] = ind;
        snprintf(y->key[y->depth++], sizeof y->key[0], "%.*s", (int)(p - k - 1), k);
        return ZP_OK;
    }
    if (quiet(key) || (vlen == 4 && strncasecmp(v, "null", 4) == 0) || (vlen == 1 && *v == '~'))
        return ZP_OK;
    return zp_launch_entries_add(en, name, line, key, strlen(key), v, vlen, 1);
}

static zp_status yaml_scan(const char *text, const char *name, zp_launch_entries *en)
{
    ypath y = {.block_indent = -1};
    int line = 1;
    for (const char *p = text; *p; line++) {
        const char *e = strchr(p, '\n');
        if (!e)
            e = p + strlen(p);
        const char *s = p;
        while (s < e && *s == ' ')
            s++;
        if (s < e && *s == '\t')
            return ZP_FAIL(ZP_EINVAL, "%s:%d: a tab in the indentation (YAML indents with spaces)", name, line);
        const int ind = (int)(s - p), blank = s >= e || *s == '#' || *s == '\r';
        if (!blank && y.block_indent >= 0 && ind > y.block_indent) {
            /* a line of a block scalar: skipped */
        } else if (!blank && *s == '-' && (s + 1 >= e || s[1] == ' ' || s[1] == '\r')) {
            if (line == 1 || y.depth == 0)
                return ZP_FAIL(ZP_EINVAL, "%s:%d: a sequence item outside a key", name, line);
        } else if (!blank && strncmp(s, "---", 3) == 0 && line == 1) {
            /* the document's start */
        } else if (!blank) {
            y.block_indent = -1;
            ZP_TRY(yaml_line(&y, s, e > s && e[-1] == '\r' ? e - 1 : e, ind, name, line, en));
        }
        p = *e ? e + 1 : e;
    }
    return ZP_OK;
}

/* The value of the key an interpolation names: ${a.b} (absolute) or ${.b} (beside `key`); NULL when none. */
static const char *lookup(const zp_launch_entries *en, const char *key, const char *ref, size_t n)
{
    char target[300];
    if (ref[0] == '.') {
        const char *dot = strrchr(key, '.');
        snprintf(target, sizeof target, "%.*s%.*s", dot ? (int)(dot - key) : 0, key, (int)(dot ? n : n - 1),
                 ref + !dot);
    } else {
        snprintf(target, sizeof target, "%.*s", (int)n, ref);
    }
    for (int j = 0; j < en->n; j++)
        if (strcmp(en->e[j].key, target) == 0)
            return en->e[j].value;
    return NULL;
}

/* One pass over a value: each innermost ${a.b} or ${.b} of another key replaced by its value, and
 * ${multiply:X, Y} of two numbers (NeMo's resolver) by their product. Returns 1 when it changed. */
static int resolve_value(const zp_launch_entries *en, zp_launch_entry *x)
{
    char *v = x->value, out[sizeof x->value];
    for (char *p = strstr(v, "${"); p; p = strstr(p + 2, "${")) {
        char *e = strchr(p + 2, '}');
        if (!e)
            return 0;
        const size_t n = (size_t)(e - p - 2);
        if (memchr(p + 2, '$', n))
            continue; /* not innermost */
        const char *rep = NULL;
        char prod[64];
        double a, b;
        char *end;
        if (strncmp(p + 2, "multiply:", 9) == 0) {
            a = strtod(p + 11, &end);
            if (end == p + 11 || *end != ',')
                continue;
            b = strtod(end + 1, &end);
            while (*end == ' ')
                end++;
            if (end != e || !(a * b < 1e15) || a * b != (double)(long long)(a * b))
                continue;
            snprintf(prod, sizeof prod, "%lld", (long long)(a * b));
            rep = prod;
        } else if (!memchr(p + 2, ':', n)) {
            rep = lookup(en, x->key, p + 2, n);
        }
        if (!rep || strstr(rep, "${"))
            continue;
        const int k = snprintf(out, sizeof out, "%.*s%s%s", (int)(p - v), v, rep, e + 1);
        if (k < 0 || (size_t)k >= sizeof out)
            return 0;
        memcpy(v, out, (size_t)k + 1);
        return 1;
    }
    return 0;
}

/* OmegaConf's interpolations of other keys and NeMo's multiply, resolved (a few levels deep). */
static void resolve(zp_launch_entries *en)
{
    for (int pass = 0; pass < 4; pass++) {
        int changed = 0;
        for (int i = 0; i < en->n; i++)
            for (int k = 0; k < 4 && resolve_value(en, &en->e[i]); k++)
                changed = 1;
        if (!changed)
            break;
    }
}

zp_status zp_nemo_parse(const char *text, const char *name, zp_launch *l)
{
    zp_launch_init(l, ZP_LAUNCH_NEMO, name);
    zp_launch_entries en = {0};
    zp_status st = yaml_scan(text, l->name, &en);
    if (st == ZP_OK) {
        resolve(&en);
        st = zp_launch_apply(l, g_keys, &en, "");
    }
    zp_launch_entries_free(&en);
    if (st == ZP_OK && l->layers == 0 && l->micro_batch == 0)
        st = ZP_FAIL(ZP_EINVAL, "%s: no NeMo model keys (model.num_layers, model.micro_batch_size, ...) in the file",
                     l->name);
    return st;
}
