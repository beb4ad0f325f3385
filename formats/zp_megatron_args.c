/* zp_megatron_args.c — Megatron-LM's pretrain_gpt.py arguments read as a launch (zp_launch.h): a file of
 * arguments (what --emit-megatron-args writes), or a launch script as Megatron-LM's examples are
 * (examples/gpt3/train_gpt3_175b_distributed.sh: NAME=value lines, bash arrays of arguments, comments,
 * backslash continuations, a torchrun line whose --nproc_per_node and --nnodes give the GPUs). Each command
 * line and each line of an array is a group: an option's values are the words after it in its group. $NAME
 * and ${NAME} take the file's NAME=value; a value left unset is refused where zplan reads it. */
#include <ctype.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "zp_dims.h"
#include "zp_launch.h"

#define MAX_VARS 64

typedef struct {
    char name[64], value[256];
} shvar;

typedef struct {
    shvar v[MAX_VARS];
    int n;
} shvars;

static zp_status set_norm(zp_launch *l, const zp_launch_entry *e)
{
    if (strcasecmp(e->value, "RMSNorm") == 0 || strcasecmp(e->value, "LayerNorm") == 0) {
        l->rmsnorm = strcasecmp(e->value, "RMSNorm") == 0;
        return ZP_OK;
    }
    return ZP_FAIL(ZP_EINVAL, "%s:%d: --normalization '%s': use LayerNorm or RMSNorm", l->name, e->line, e->value);
}

static zp_status set_pos(zp_launch *l, const zp_launch_entry *e)
{
    if (strcmp(e->value, "rope") == 0 || strcmp(e->value, "learned_absolute") == 0) {
        l->rope = strcmp(e->value, "rope") == 0;
        return ZP_OK;
    }
    return ZP_FAIL(ZP_EINVAL, "%s:%d: --position-embedding-type '%s': zplan reads rope and learned_absolute",
                   l->name, e->line, e->value);
}

static zp_status set_granularity(zp_launch *l, const zp_launch_entry *e)
{
    if (strcmp(e->value, "full") == 0 || strcmp(e->value, "selective") == 0) {
        l->recompute = e->value[0] == 'f' ? ZP_RECOMPUTE_FULL : ZP_RECOMPUTE_SELECTIVE;
        return ZP_OK;
    }
    return ZP_FAIL(ZP_EINVAL, "%s:%d: --recompute-granularity '%s': use full or selective", l->name, e->line,
                   e->value);
}

/* --moe-layer-recompute (deprecated in Megatron-core): selective recompute with moe among its modules
 * (transformer_config.py: "Do not set --moe-layer-recompute with full recompute granularity"). */
static zp_status set_moe_layer_recompute(zp_launch *l, const zp_launch_entry *e)
{
    if (l->recompute == ZP_RECOMPUTE_FULL)
        return ZP_FAIL(ZP_EINVAL, "%s:%d: --moe-layer-recompute with --recompute-granularity full: Megatron-core "
                                  "refuses the two together (drop one)", l->name, e->line);
    l->recompute = ZP_RECOMPUTE_SELECTIVE;
    l->moe_layer_rc = 1;
    return ZP_OK;
}

static zp_status set_cp_comm(zp_launch *l, const zp_launch_entry *e)
{
    zp_cp_comm c;
    if (zp_cp_comm_parse(e->value, &c) != ZP_OK)
        return ZP_FAIL(ZP_EINVAL, "%s:%d: --cp-comm-type '%s': zplan models p2p and all_gather", l->name, e->line,
                       e->value);
    l->cp_comm = (int)c;
    return ZP_OK;
}

/* Megatron-core's layout string unrolled as PipelineParallelLayerLayout.parse_str_to_list does it
 * (megatron/core/transformer/pipeline_parallel_layer_layout.py): commas dropped (cosmetic), then every
 * "(...)*N" (no parentheses inside), then every "x*N"; a launch script's quotes, blanks and the backslashes
 * it escapes them with for eval are dropped too. ZP_EINVAL when the result passes `cap` bytes. */
static zp_status layout_unroll(const char *in, char *out, size_t cap, const char *where)
{
    char a[4096], b[4096];
    size_t n = 0;
    for (const char *c = in; *c; c++)
        if (!strchr(", \t'\"\\", *c)) {
            if (n + 1 >= sizeof a)
                return ZP_FAIL(ZP_EINVAL, "%s: longer than %zu characters", where, sizeof a - 1);
            a[n++] = *c;
        }
    a[n] = '\0';
    for (int pass = 0; pass < 2; pass++) { /* pass 0: "(...)*N", pass 1: "x*N" */
        size_t o = 0;
        for (size_t i = 0; a[i];) {
            const char *body = a + i, *end = NULL;
            size_t blen = 1;
            if (pass == 0 && a[i] == '(' && (end = strchr(a + i, ')')) != NULL && end[1] == '*') {
                body = a + i + 1;
                blen = (size_t)(end - body);
                end += 1;
            } else if (pass == 1 && a[i + 1] == '*') {
                end = a + i + 1;
            } else {
                end = NULL;
            }
            char *num_end;
            const long k = end ? strtol(end + 1, &num_end, 10) : 1;
            if (!end || num_end == end + 1) { /* not a repetition: the character as it is */
                if (o + 1 >= sizeof b)
                    return ZP_FAIL(ZP_EINVAL, "%s: unrolls past %zu characters", where, sizeof b - 1);
                b[o++] = a[i++];
                continue;
            }
            if (k < 0 || (double)blen * (double)k + (double)o >= (double)sizeof b)
                return ZP_FAIL(ZP_EINVAL, "%s: unrolls past %zu characters", where, sizeof b - 1);
            for (long r = 0; r < k; r++, o += blen)
                memcpy(b + o, body, blen);
            i = (size_t)(num_end - a);
        }
        b[o] = '\0';
        memcpy(a, b, o + 1);
    }
    if (strlen(a) + 1 > cap)
        return ZP_FAIL(ZP_EINVAL, "%s: unrolls past %zu characters", where, cap - 1);
    memcpy(out, a, strlen(a) + 1);
    return ZP_OK;
}

/* --pipeline-model-parallel-layout (Megatron-core's custom layout): virtual stages split by "|", in
 * virtual-stage order, E the embedding (first), t a transformer layer, m an MTP module, L the loss (last),
 * with Megatron-core's repetitions (layout_unroll); the layers per virtual stage. zplan runs the MTP modules on
 * the last stage beside the loss (sim/zp_schedule.c mtp_forward): an m elsewhere (Megatron-core's standalone
 * MTP stage) is refused, naming it; how many there are is checked against --mtp-num-layers where the plan is
 * made (l->pp_layout_mtp). */
static zp_status set_pp_layout(zp_launch *l, const zp_launch_entry *e)
{
    char where[160], v[4096];
    snprintf(where, sizeof where, "%.100s:%d: --pipeline-model-parallel-layout", l->name, e->line);
    ZP_TRY(layout_unroll(e->value, v, sizeof v, where));
    int n = 0, count = 0, mtp = 0, mtp_stage = -1;
    for (size_t i = 0, len = strlen(v); i <= len; i++) {
        const char c = v[i];
        if (c == 't') {
            count++;
        } else if (c == 'm') {
            mtp++;
            mtp_stage = n;
        } else if (c == '|' || c == '\0') {
            if (n == ZP_PP_MAX_LAYOUT)
                return ZP_FAIL(ZP_EINVAL, "%s: more than %d stages", where, ZP_PP_MAX_LAYOUT);
            l->pp_layout[n++] = count;
            count = 0;
        } else if (!((c == 'E' && i == 0) || c == 'L')) {
            return ZP_FAIL(ZP_EINVAL, "%s '%s': zplan reads E (first), t, m, L (last), | and Megatron-core's "
                                      "'(...)*N' and 'x*N' repeats; '%c' is not one",
                           where, e->value, c);
        }
    }
    const char *L = strchr(v, 'L');
    if (L && (strchr(L, '|') || L[1]))
        return ZP_FAIL(ZP_EINVAL, "%s '%s': the loss (L) is the last layer of the last virtual stage", where,
                       e->value);
    if (mtp && (mtp_stage != n - 1 || strchr(strchr(v, 'm'), 't')))
        return ZP_FAIL(ZP_EINVAL, "%s '%s': zplan runs the MTP modules (m) after the last transformer layer on the "
                                  "last virtual stage, beside the loss; a standalone MTP stage is not modelled (move "
                                  "m to the last stage)",
                       where, e->value);
    l->pp_layout_n = n;
    l->pp_layout_mtp = mtp;
    return ZP_OK;
}

static zp_status set_recompute_layers(zp_launch *l, const zp_launch_entry *e)
{
    if (strcmp(e->value, "1") != 0)
        zp_launch_note(l, "line %d: --recompute-num-layers %s: zplan recomputes block by block (1)", e->line,
                       e->value);
    return ZP_OK;
}

/* FlashAttention: Transformer Engine's fused or flash backends (auto picks one on today's GPUs) */
static zp_status set_backend(zp_launch *l, const zp_launch_entry *e)
{
    static const char *const on[] = {"flash", "fused", "auto"}, *const off[] = {"unfused", "local"};
    for (int i = 0; i < 3; i++)
        if (strcmp(e->value, on[i]) == 0) {
            l->flash = 1;
            return ZP_OK;
        }
    for (int i = 0; i < 2; i++)
        if (strcmp(e->value, off[i]) == 0) {
            l->flash = 0;
            return ZP_OK;
        }
    return ZP_FAIL(ZP_EINVAL, "%s:%d: --attention-backend '%s': use flash, fused, unfused, local or auto", l->name,
                   e->line, e->value);
}

/* --vocab-file with --merge-file and no --tokenizer-type: GPT-2's BPE, as Megatron-LM's GPT examples */
static zp_status set_merge(zp_launch *l, const zp_launch_entry *e)
{
    (void)e;
    if (!l->tokenizer[0])
        snprintf(l->tokenizer, sizeof l->tokenizer, "GPT2BPETokenizer");
    return ZP_OK;
}

/* --fp8-format hybrid|e4m3: FP8 training (Transformer Engine; the format changes no cost zplan models). */
static zp_status set_fp8_format(zp_launch *l, const zp_launch_entry *e)
{
    if (strcmp(e->value, "hybrid") == 0 || strcmp(e->value, "e4m3") == 0) {
        l->fp8 = 1;
        return ZP_OK;
    }
    return ZP_FAIL(ZP_EINVAL, "%s:%d: --fp8-format '%s': use hybrid or e4m3", l->name, e->line, e->value);
}

/* --fp8-recipe delayed|tensorwise|blockwise|mxfp8 (Megatron-core's; another value exits 2). */
static zp_status set_fp8_recipe(zp_launch *l, const zp_launch_entry *e)
{
    return zp_launch_set_fp8_recipe(l, e, "");
}

/* --moe-token-dispatcher-type alltoall|flex|allgather (Megatron-core's choices). */
static zp_status set_dispatcher(zp_launch *l, const zp_launch_entry *e)
{
    return zp_launch_set_moe_dispatcher(l, e, "--moe-token-dispatcher-type");
}

/* One term of a --moe-layer-freq list: "[a, b, ...]" optionally "*N", appended to the pattern (1 where a block
 * is dense, as the list's 0). Returns the text after it, NULL when it is not one. */
static const char *freq_term(zp_launch *l, const char *s, int *n)
{
    while (*s == ' ')
        s++;
    if (*s != '[')
        return NULL;
    int start = *n, len = 0;
    for (s++;;) {
        while (*s == ' ')
            s++;
        if (*s != '0' && *s != '1')
            return NULL;
        if (*n >= ZP_LAUNCH_MAX_LAYERS)
            return NULL;
        l->moe_dense[(*n)++] = *s++ == '0';
        len++;
        while (*s == ' ')
            s++;
        if (*s == ']')
            break;
        if (*s++ != ',')
            return NULL;
    }
    s++;
    while (*s == ' ')
        s++;
    if (*s == '*') {
        char *end;
        const long r = strtol(s + 1, &end, 10);
        if (end == s + 1 || r < 0 || (long)len * r > ZP_LAUNCH_MAX_LAYERS - start)
            return NULL;
        for (long k = 1; k < r; k++)
            for (int i = 0; i < len; i++)
                l->moe_dense[(*n)++] = l->moe_dense[start + i];
        if (r == 0)
            *n = start;
        s = end;
    }
    return s;
}

/* --moe-layer-freq: k (MoE at the blocks i % k == 0), or a Python list of 0 (dense) and 1 (MoE) per block as
 * Megatron-core evaluates it: "[1,0,1,0]", "([0]*3+[1]*58)". */
static zp_status set_moe_freq(zp_launch *l, const zp_launch_entry *e)
{
    char *end;
    const long k = strtol(e->value, &end, 10);
    if (end != e->value && !*end) {
        if (k < 1)
            return ZP_FAIL(ZP_EINVAL, "%s:%d: --moe-layer-freq %ld: give a frequency from 1", l->name, e->line, k);
        l->moe_every = k;
        return ZP_OK;
    }
    const char *s = e->value;
    while (*s == ' ')
        s++;
    const int paren = *s == '(';
    s += paren;
    int n = 0;
    for (;;) {
        s = freq_term(l, s, &n);
        if (!s)
            break;
        while (*s == ' ')
            s++;
        if (*s != '+')
            break;
        s++;
    }
    if (s && paren)
        s = *s == ')' ? s + 1 : NULL;
    if (!s || *s || n == 0)
        return ZP_FAIL(ZP_EINVAL, "%s:%d: --moe-layer-freq '%s': give a frequency or a list of 0 (dense) and 1 (MoE) per "
                                  "layer, e.g. ([0]*3+[1]*58)",
                       l->name, e->line, e->value);
    l->moe_pattern = n;
    return ZP_OK;
}

/* --delay-wgrad-compute: beside the EP overlap, the weight gradients left to fill its gaps. */
static zp_status set_delay_wgrad(zp_launch *l, const zp_launch_entry *e)
{
    zp_launch_note(l, "line %d: --delay-wgrad-compute: the EP overlap is modelled without it", e->line);
    return ZP_OK;
}

/* Megatron-core's precision-aware optimizer (--use-precision-aware-optimizer) keeps Adam's moments, its main
 * parameters or its main gradients in another type. Adam's moments (--exp-avg-dtype, --exp-avg-sq-dtype: fp32,
 * bf16, fp16, fp8; DeepSeek-V3's recipe: bf16) are read into the plan (zp_plan.exp_avg_bytes, exp_avg_sq_bytes);
 * the main gradients (--main-grads-dtype) in fp32 or bf16: with bf16 Megatron-LM does not force the gradients'
 * accumulation and reduction into fp32 (megatron/training/arguments.py: accumulate_allreduce_grads_in_fp32 is
 * set for bf16 only while main_grads_dtype is fp32), so the gradient buffer is bf16 (zp_launch.main_grads_bf16); the
 * main parameters (--main-params-dtype) in fp32, zplan's: fp16, which would change the memory, is refused,
 * naming it. */
static zp_status set_moment_dtype(zp_launch *l, const zp_launch_entry *e)
{
    const double b = zp_adam_moment_bytes(e->value);
    if (!(b > 0))
        return ZP_FAIL(ZP_EINVAL, "%s:%d: --%s '%s': use fp32, bf16, fp16 or fp8", l->name, e->line, e->key, e->value);
    *(strstr(e->key, "-sq-") ? &l->exp_avg_sq_bytes : &l->exp_avg_bytes) = b == 4.0 ? 0.0 : b;
    return ZP_OK;
}

static zp_status set_opt_dtype(zp_launch *l, const zp_launch_entry *e)
{
    if (strcmp(e->value, "fp32") == 0)
        return ZP_OK;
    if (strcmp(e->key, "main-grads-dtype") == 0) {
        if (strcmp(e->value, "bf16") != 0)
            return ZP_FAIL(ZP_EINVAL, "%s:%d: --main-grads-dtype '%s': use fp32 or bf16 (Megatron-core's choices)",
                           l->name, e->line, e->value);
        l->main_grads_bf16 = 1;
        return ZP_OK;
    }
    return ZP_FAIL(ZP_EINVAL, "%s:%d: --%s %s: the precision-aware optimizer's main parameters in another type than "
                              "fp32 are not modelled (give fp32 or leave it out to plan so)",
                   l->name, e->line, e->key, e->value);
}

static zp_status set_rampup(zp_launch *l, const zp_launch_entry *e)
{
    zp_launch_note(l, "line %d: --rampup-batch-size %s: judged at the full global batch", e->line, e->value);
    return ZP_OK;
}

#define F(field) offsetof(zp_launch, field)
/* The arguments zplan reads (the degrees of the parallel dimensions come from vocab/zp_dims.c), and those it
 * knows change nothing it models. */
static const zp_launch_key g_keys[] = {
    {"num-layers", ZP_LK_INT, F(layers), 0, NULL, NULL},
    {"hidden-size", ZP_LK_INT, F(hidden), 0, NULL, NULL},
    {"num-attention-heads", ZP_LK_INT, F(heads), 0, NULL, NULL},
    {"ffn-hidden-size", ZP_LK_INT, F(ffn), 0, NULL, NULL},
    {"seq-length", ZP_LK_INT, F(seq), 0, NULL, NULL},
    {"max-position-embeddings", ZP_LK_INT, F(positions), 0, NULL, NULL},
    {"num-query-groups", ZP_LK_INT, F(kv_heads), 0, NULL, NULL},
    {"kv-channels", ZP_LK_INT, F(head_dim), 0, NULL, NULL},
    {"swiglu", ZP_LK_FLAG, F(swiglu), 1, NULL, NULL},
    {"normalization", ZP_LK_FN, 0, 0, set_norm, NULL},
    {"position-embedding-type", ZP_LK_FN, 0, 0, set_pos, NULL},
    {"use-rotary-position-embeddings", ZP_LK_FLAG, F(rope), 1, NULL, NULL},
    {"rotary-base", ZP_LK_REAL, F(rope_theta), 0, NULL, NULL},
    {"untie-embeddings-and-output-weights", ZP_LK_FLAG, F(untied), 1, NULL, NULL},
    {"disable-bias-linear", ZP_LK_FLAG, F(no_bias), 1, NULL, NULL},
    {"vocab-size", ZP_LK_INT, F(vocab), 0, NULL, NULL},
    {"make-vocab-size-divisible-by", ZP_LK_INT, F(vocab_multiple), 0, NULL, NULL},
    {"tokenizer-type", ZP_LK_STR, F(tokenizer), 0, NULL, NULL},
    {"merge-file", ZP_LK_FN, 0, 0, set_merge, NULL},
    {"hidden-dropout", ZP_LK_REAL, F(hidden_dropout), 0, NULL, NULL},
    {"attention-dropout", ZP_LK_REAL, F(attn_dropout), 0, NULL, NULL},
    {"num-experts", ZP_LK_INT, F(experts), 0, NULL, NULL},
    {"moe-router-topk", ZP_LK_INT, F(topk), 0, NULL, NULL},
    {"moe-ffn-hidden-size", ZP_LK_INT, F(moe_ffn), 0, NULL, NULL},
    {"moe-shared-expert-intermediate-size", ZP_LK_INT, F(shared_ffn), 0, NULL, NULL},
    {"moe-router-num-groups", ZP_LK_INT, F(route_groups), 0, NULL, NULL},
    {"moe-router-group-topk", ZP_LK_INT, F(route_topk), 0, NULL, NULL},
    {"moe-router-enable-expert-bias", ZP_LK_FLAG, F(router_bias), 1, NULL, NULL},
    {"moe-layer-freq", ZP_LK_FN, 0, 0, set_moe_freq, NULL},
    {"moe-token-dispatcher-type", ZP_LK_FN, 0, 0, set_dispatcher, NULL},
    {"moe-enable-deepep", ZP_LK_FLAG, F(deepep), 1, NULL, NULL},
    {"overlap-moe-expert-parallel-comm", ZP_LK_FLAG, F(ep_overlap), 1, NULL, NULL},
    {"delay-wgrad-compute", ZP_LK_FN, 0, 0, set_delay_wgrad, NULL},
    {"use-precision-aware-optimizer", ZP_LK_FLAG, F(precision_aware), 1, NULL, NULL},
    {"exp-avg-dtype", ZP_LK_FN, 0, 0, set_moment_dtype, NULL},
    {"exp-avg-sq-dtype", ZP_LK_FN, 0, 0, set_moment_dtype, NULL},
    {"main-params-dtype", ZP_LK_FN, 0, 0, set_opt_dtype, NULL},
    {"main-grads-dtype", ZP_LK_FN, 0, 0, set_opt_dtype, NULL},
    {"grad-reduce-in-bf16", ZP_LK_FLAG, F(grad_bf16), 1, NULL, NULL},
    {"moe-expert-capacity-factor", ZP_LK_REAL, F(capacity), 0, NULL, NULL},
    {"moe-shared-expert-overlap", ZP_LK_FLAG, F(shared_overlap), 1, NULL, NULL},
    {"activation-func-fp8-input-store", ZP_LK_FLAG, F(act_fp8_store), 1, NULL, NULL},
    {"no-bias-swiglu-fusion", ZP_LK_FLAG, F(swiglu_fusion), 0, NULL, NULL},
    {"multi-latent-attention", ZP_LK_FLAG, F(mla), 1, NULL, NULL},
    {"q-lora-rank", ZP_LK_INT, F(q_lora), 0, NULL, NULL},
    {"kv-lora-rank", ZP_LK_INT, F(kv_lora), 0, NULL, NULL},
    {"qk-head-dim", ZP_LK_INT, F(qk_head), 0, NULL, NULL},
    {"qk-pos-emb-head-dim", ZP_LK_INT, F(qk_pos), 0, NULL, NULL},
    {"v-head-dim", ZP_LK_INT, F(v_head), 0, NULL, NULL},
    {"mtp-num-layers", ZP_LK_INT, F(mtp), 0, NULL, NULL},
    /* MLA's latent norms are in zplan's MLA (DeepSeek's q_a_layernorm and kv_a_layernorm); YaRN's rotary
     * scaling, the norms' epsilon and the MTP loss's weight change no cost */
    {"qk-layernorm", ZP_LK_KNOWN, 0, 0, NULL, NULL},
    {"rotary-scaling-factor", ZP_LK_KNOWN, 0, 0, NULL, NULL},
    {"mscale", ZP_LK_KNOWN, 0, 0, NULL, NULL},
    {"mscale-all-dim", ZP_LK_KNOWN, 0, 0, NULL, NULL},
    {"norm-epsilon", ZP_LK_KNOWN, 0, 0, NULL, NULL},
    {"mtp-loss-scaling-factor", ZP_LK_KNOWN, 0, 0, NULL, NULL},
    /* the router's and the experts' kernels as modelled (a grouped GEMM, fused permutes), its losses */
    {"moe-grouped-gemm", ZP_LK_KNOWN, 0, 0, NULL, NULL},
    {"moe-permute-fusion", ZP_LK_KNOWN, 0, 0, NULL, NULL},
    {"moe-router-load-balancing-type", ZP_LK_KNOWN, 0, 0, NULL, NULL},
    {"moe-aux-loss-coeff", ZP_LK_KNOWN, 0, 0, NULL, NULL},
    {"moe-z-loss-coeff", ZP_LK_KNOWN, 0, 0, NULL, NULL},
    {"moe-router-score-function", ZP_LK_KNOWN, 0, 0, NULL, NULL},
    {"moe-router-topk-scaling-factor", ZP_LK_KNOWN, 0, 0, NULL, NULL},
    {"moe-router-pre-softmax", ZP_LK_KNOWN, 0, 0, NULL, NULL},
    {"moe-router-bias-update-rate", ZP_LK_KNOWN, 0, 0, NULL, NULL},
    {"moe-router-dtype", ZP_LK_KNOWN, 0, 0, NULL, NULL},
    {"moe-token-drop-policy", ZP_LK_KNOWN, 0, 0, NULL, NULL},
    {"moe-pad-expert-input-to-capacity", ZP_LK_KNOWN, 0, 0, NULL, NULL},
    {"context-parallel-size", ZP_LK_INT, F(cp), 0, NULL, NULL},
    {"cp-comm-type", ZP_LK_FN, 0, 0, set_cp_comm, NULL},
    {"num-layers-per-virtual-pipeline-stage", ZP_LK_INT, F(vp), 0, NULL, NULL},
    {"num-virtual-stages-per-pipeline-rank", ZP_LK_INT, F(vstages), 0, NULL, NULL},
    {"decoder-first-pipeline-num-layers", ZP_LK_INT, F(pp_first), 0, NULL, NULL},
    {"decoder-last-pipeline-num-layers", ZP_LK_INT, F(pp_last), 0, NULL, NULL},
    {"account-for-embedding-in-pipeline-split", ZP_LK_FLAG, F(pp_acc_emb), 1, NULL, NULL},
    {"account-for-loss-in-pipeline-split", ZP_LK_FLAG, F(pp_acc_loss), 1, NULL, NULL},
    {"pipeline-model-parallel-layout", ZP_LK_FN, 0, 0, set_pp_layout, NULL},
    {"sequence-parallel", ZP_LK_FLAG, F(sp), 1, NULL, NULL},
    {"micro-batch-size", ZP_LK_INT, F(micro_batch), 0, NULL, NULL},
    {"global-batch-size", ZP_LK_INT, F(global_batch), 0, NULL, NULL},
    {"rampup-batch-size", ZP_LK_FN, 0, 0, set_rampup, NULL},
    {"use-distributed-optimizer", ZP_LK_FLAG, F(stage), 1, NULL, NULL},
    {"recompute-granularity", ZP_LK_FN, 0, 0, set_granularity, NULL},
    {"recompute-modules", ZP_LK_FN, 0, 0, zp_launch_recompute_modules, NULL},
    {"moe-layer-recompute", ZP_LK_FN, 0, 0, set_moe_layer_recompute, NULL},
    {"recompute-activations", ZP_LK_FLAG, F(recompute), ZP_RECOMPUTE_SELECTIVE, NULL, NULL},
    {"checkpoint-activations", ZP_LK_FLAG, F(recompute), ZP_RECOMPUTE_FULL, NULL, NULL},
    {"recompute-num-layers", ZP_LK_FN, 0, 0, set_recompute_layers, NULL},
    {"checkpoint-num-layers", ZP_LK_FN, 0, 0, set_recompute_layers, NULL},
    {"fp16", ZP_LK_FLAG, F(precision), ZP_LAUNCH_FP16, NULL, NULL},
    {"bf16", ZP_LK_FLAG, F(precision), ZP_LAUNCH_BF16, NULL, NULL},
    {"accumulate-allreduce-grads-in-fp32", ZP_LK_FLAG, F(grad_fp32), 1, NULL, NULL},
    {"use-flash-attn", ZP_LK_FLAG, F(flash), 1, NULL, NULL},
    {"attention-backend", ZP_LK_FN, 0, 0, set_backend, NULL},
    {"no-gradient-accumulation-fusion", ZP_LK_FLAG, F(fusion), 0, NULL, NULL},
    {"overlap-grad-reduce", ZP_LK_FLAG, F(overlap), 1, NULL, NULL},
    {"tp-comm-overlap", ZP_LK_FLAG, F(tp_overlap), ZP_TP_OVERLAP_TE, NULL, NULL},
    {"overlap-param-gather", ZP_LK_FLAG, F(param_gather), 1, NULL, NULL},
    {"no-overlap-p2p-communication", ZP_LK_FLAG, F(p2p_overlap), 0, NULL, NULL},
    {"overlap-p2p-communication-warmup-flush", ZP_LK_FLAG, F(p2p_warmup_flush), 1, NULL, NULL},
    {"no-batch-p2p-communication", ZP_LK_KNOWN, 0, 0, NULL, NULL}, /* batched or not: the same transfers */
    {"fp8-format", ZP_LK_FN, 0, 0, set_fp8_format, NULL},
    {"fp8-recipe", ZP_LK_FN, 0, 0, set_fp8_recipe, NULL},
    {"fp8-margin", ZP_LK_KNOWN, 0, 0, NULL, NULL},
    {"fp8-interval", ZP_LK_KNOWN, 0, 0, NULL, NULL},
    {"fp8-amax-history-len", ZP_LK_KNOWN, 0, 0, NULL, NULL},
    {"fp8-amax-compute-algo", ZP_LK_KNOWN, 0, 0, NULL, NULL},
    {"fp8-param-gather", ZP_LK_REFUSE, 0, 0, NULL, "FP8 parameters (gathered and kept in FP8) are not modelled"},
    /* torchrun's: the GPUs */
    {"nproc_per_node", ZP_LK_INT, F(gpus_per_node), 0, NULL, NULL},
    {"nproc-per-node", ZP_LK_INT, F(gpus_per_node), 0, NULL, NULL},
    {"nnodes", ZP_LK_INT, F(nodes), 0, NULL, NULL},
    /* what zplan does not model, and that changes the answer */
    {"distribute-saved-activations", ZP_LK_FLAG, F(pa), 1, NULL, NULL},
    {"distribute-checkpointed-activations", ZP_LK_FLAG, F(pa), 1, NULL, NULL}, /* Megatron-LM v2's name */
    {"add-qkv-bias", ZP_LK_FLAG, F(qkv_bias), 1, NULL, NULL},
    {"cpu-offloading", ZP_LK_REFUSE, 0, 0, NULL, "Transformer Engine's activation offloading is not modelled"},
    /* known, no effect on memory or step time as modelled */
    {"group-query-attention", ZP_LK_KNOWN, 0, 0, NULL, NULL},
    {"recompute-method", ZP_LK_KNOWN, 0, 0, NULL, NULL},
    {"vocab-file", ZP_LK_KNOWN, 0, 0, NULL, NULL},
    {"master_addr", ZP_LK_KNOWN, 0, 0, NULL, NULL},
    {"master_port", ZP_LK_KNOWN, 0, 0, NULL, NULL},
    {"node_rank", ZP_LK_KNOWN, 0, 0, NULL, NULL},
    {"train-iters", ZP_LK_KNOWN, 0, 0, NULL, NULL},
    {"weight-decay", ZP_LK_KNOWN, 0, 0, NULL, NULL},
    {"adam-beta1", ZP_LK_KNOWN, 0, 0, NULL, NULL},
    {"adam-beta2", ZP_LK_KNOWN, 0, 0, NULL, NULL},
    {"init-method-std", ZP_LK_KNOWN, 0, 0, NULL, NULL},
    {"clip-grad", ZP_LK_KNOWN, 0, 0, NULL, NULL},
    {"lr", ZP_LK_KNOWN, 0, 0, NULL, NULL},
    {"min-lr", ZP_LK_KNOWN, 0, 0, NULL, NULL},
    {"lr-decay-style", ZP_LK_KNOWN, 0, 0, NULL, NULL},
    {"lr-warmup-fraction", ZP_LK_KNOWN, 0, 0, NULL, NULL},
    {"lr-decay-iters", ZP_LK_KNOWN, 0, 0, NULL, NULL},
    {"data-path", ZP_LK_KNOWN, 0, 0, NULL, NULL},
    {"split", ZP_LK_KNOWN, 0, 0, NULL, NULL},
    {"log-interval", ZP_LK_KNOWN, 0, 0, NULL, NULL},
    {"save-interval", ZP_LK_KNOWN, 0, 0, NULL, NULL},
    {"eval-interval", ZP_LK_KNOWN, 0, 0, NULL, NULL},
    {"save", ZP_LK_KNOWN, 0, 0, NULL, NULL},
    {"load", ZP_LK_KNOWN, 0, 0, NULL, NULL},
    {"eval-iters", ZP_LK_KNOWN, 0, 0, NULL, NULL},
    {"tensorboard-dir", ZP_LK_KNOWN, 0, 0, NULL, NULL},
    {NULL, 0, 0, 0, NULL, NULL},
};
#undef F

/* ---- the shell's words ---- */

static const char *var_get(const shvars *vs, const char *name, size_t n)
{
    for (int i = 0; i < vs->n; i++)
        if (strlen(vs->v[i].name) == n && strncmp(vs->v[i].name, name, n) == 0)
            return vs->v[i].value;
    return NULL;
}

/* A word with $NAME and ${NAME} of the file's variables replaced (others kept as written) into out. */
static void expand(const shvars *vs, const char *w, char *out, size_t len)
{
    size_t o = 0;
    for (size_t i = 0; w[i] && o + 1 < len;) {
        const int brace = w[i] == '$' && w[i + 1] == '{';
        if (w[i] == '$' && (brace || isalpha((unsigned char)w[i + 1]) || w[i + 1] == '_')) {
            size_t s = i + 1 + brace, e = s;
            while (isalnum((unsigned char)w[e]) || w[e] == '_')
                e++;
            const char *v = var_get(vs, w + s, e - s);
            if (v && (!brace || w[e] == '}')) {
                o += (size_t)snprintf(out + o, len - o, "%s", v);
                if (o >= len)
                    o = len - 1;
                i = e + brace;
                continue;
            }
        }
        out[o++] = w[i++];
    }
    out[o] = '\0';
}

/* The words of one logical line (quotes removed, a '#' word ends it) into w[] (at most max); returns how
 * many, or -1 when a quote is not closed. */
static int split_words(const char *s, char w[][256], int max)
{
    int n = 0;
    while (*s) {
        while (*s && isspace((unsigned char)*s))
            s++;
        if (!*s || *s == '#')
            break;
        size_t o = 0;
        while (*s && !isspace((unsigned char)*s)) {
            if (*s == '"' || *s == '\'') {
                const char q = *s++;
                while (*s && *s != q) {
                    if (o < 255)
                        w[n < max ? n : max - 1][o++] = *s;
                    s++;
                }
                if (!*s)
                    return -1;
                s++;
            } else {
                if (o < 255)
                    w[n < max ? n : max - 1][o++] = *s;
                s++;
            }
        }
        w[n < max ? n : max - 1][o] = '\0';
        if (n < max)
            n++;
    }
    return n;
}

/* NAME=value (optionally after `export`): a variable, its value expanded; returns 1 when it was one. A value
 * opening an array, NAME=(, is not (its words are arguments). */
static int assignment(shvars *vs, char w[][256], int n)
{
    const int at = n >= 1 && strcmp(w[0], "export") == 0;
    if (n != at + 1)
        return 0;
    const char *eq = strchr(w[at], '=');
    if (!eq || eq == w[at] || eq[1] == '(')
        return 0;
    for (const char *p = w[at]; p < eq; p++)
        if (!isalnum((unsigned char)*p) && *p != '_')
            return 0;
    if (vs->n < MAX_VARS) {
        shvar *v = &vs->v[vs->n++];
        snprintf(v->name, sizeof v->name, "%.*s", (int)(eq - w[at]), w[at]);
        expand(vs, eq + 1, v->value, sizeof v->value);
    }
    return 1;
}

/* An array written on one line, NAME=(--a 1 --b 2): the words after the parenthesis are arguments as on the
 * lines of one written over several; the opening word keeps NAME=( and the closing parenthesis is dropped
 * from the last word. Returns the words' count (one more when the first word held an argument). */
static int one_line_array(char w[][256], int n, int max)
{
    const int at = n >= 1 && strcmp(w[0], "export") == 0;
    char *open = n > at ? strstr(w[at], "=(") : NULL;
    if (!open)
        return n;
    const size_t last = strlen(w[n - 1]);
    if (last > 1 && w[n - 1][last - 1] == ')' && (n - 1 > at || open[2]))
        w[n - 1][last - 1] = '\0';
    if (open[2] && n < max) { /* NAME=(--first: the argument as a word of its own */
        memmove(w[at + 2], w[at + 1], (size_t)(n - at - 1) * sizeof w[0]);
        snprintf(w[at + 1], sizeof w[0], "%s", open + 2);
        open[2] = '\0';
        n++;
    }
    return n;
}

/* One group's words as entries: an option (--name or --name=value) and the words up to the next option. */
static zp_status group_entries(const shvars *vs, char w[][256], int n, int line, const char *name,
                               zp_launch_entries *en)
{
    for (int i = 0; i < n; i++) {
        if (strncmp(w[i], "--", 2) != 0 || !w[i][2])
            continue; /* a program, an array's parenthesis, ${ARRAY[@]}: not an argument */
        const char *k = w[i] + 2, *eq = strchr(k, '=');
        char val[256] = "";
        int has = 0;
        if (eq) {
            expand(vs, eq + 1, val, sizeof val);
            has = 1;
        }
        for (int j = i + 1; j < n && strncmp(w[j], "--", 2) != 0 && strcmp(w[j], ")") != 0; j++, i++) {
            char x[256];
            expand(vs, w[j], x, sizeof x);
            const size_t u = strlen(val), xn = strlen(x);
            if (u + 1 + xn >= sizeof val)
                return ZP_FAIL(ZP_EINVAL, "%s:%d: --%s: its value is longer than %zu characters", name, line, k,
                               sizeof val - 1);
            if (has)
                val[u] = ' ';
            memcpy(val + u + has, x, xn + 1);
            has = 1;
        }
        ZP_TRY(zp_launch_entries_add(en, name, line, k, eq ? (size_t)(eq - k) : strlen(k), val, strlen(val), has));
    }
    return ZP_OK;
}

/* The file's groups: logical lines (backslash continuations joined), each split into words. */
static zp_status scan(const char *text, const char *name, zp_launch_entries *en)
{
    static shvars vs; /* large: not on the stack (the fuzzers run it in a loop; one thread) */
    static char w[128][256];
    vs.n = 0;
    int line = 1;
    for (const char *p = text; *p;) {
        const int first = line;
        char buf[4096];
        size_t o = 0;
        for (; *p && *p != '\n'; p++) {
            if (*p == '\\' && p[1] == '\n') {
                p++;
                line++;
                continue;
            }
            if (o + 1 < sizeof buf)
                buf[o++] = *p == '\t' || *p == '\r' ? ' ' : *p;
        }
        buf[o] = '\0';
        if (*p == '\n') {
            p++;
            line++;
        }
        if (o + 1 >= sizeof buf)
            return ZP_FAIL(ZP_EINVAL, "%s:%d: line longer than %zu characters", name, first, sizeof buf - 1);
        int n = split_words(buf, w, 128);
        if (n < 0)
            return ZP_FAIL(ZP_EINVAL, "%s:%d: a quote is not closed", name, first);
        n = one_line_array(w, n, 128);
        if (!assignment(&vs, w, n))
            ZP_TRY(group_entries(&vs, w, n, first, name, en));
    }
    return ZP_OK;
}

/* The degrees of the dimensions by their Megatron-LM names in the table (vocab/zp_dims.c); an entry read here
 * is emptied so the key table skips it. */
static zp_status read_degrees(zp_launch *l, zp_launch_entries *en)
{
    for (int i = 0; i < en->n; i++)
        for (int d = 0; d < ZP_NDIMS; d++) {
            const zp_dim_type *t = zp_dims_get((zp_dim_id)d);
            if (!t->megatron || strcmp(t->megatron + 2, en->e[i].key) != 0)
                continue;
            char *end;
            const long long v = strtoll(en->e[i].value, &end, 10);
            if (!en->e[i].has_value || *end || v < 1 || v > (1LL << 30))
                return ZP_FAIL(ZP_EINVAL, "%s:%d: %s: '%s' is not a whole number from 1", l->name, en->e[i].line,
                               t->megatron, en->e[i].value);
            if (d == ZP_DIM_TP)
                l->tp = v;
            else if (d == ZP_DIM_PP)
                l->pp = v;
            else if (d == ZP_DIM_CP)
                l->cp = v;
            else if (d == ZP_DIM_EP)
                l->ep = v;
            else if (v > 1)
                return ZP_FAIL(ZP_EINVAL, "%s:%d: %s %lld: the %s dimension is not read from launches yet", l->name,
                               en->e[i].line, t->megatron, v, t->name);
            en->e[i].key[0] = '\0';
        }
    return ZP_OK;
}

zp_status zp_megatron_args_parse(const char *text, const char *name, zp_launch *l)
{
    zp_launch_init(l, ZP_LAUNCH_MEGATRON, name);
    zp_launch_entries en = {0};
    zp_status st = scan(text, l->name, &en);
    if (st == ZP_OK)
        st = read_degrees(l, &en);
    if (st == ZP_OK) {
        /* drop the entries read_degrees took */
        int k = 0;
        for (int i = 0; i < en.n; i++)
            if (en.e[i].key[0])
                en.e[k++] = en.e[i];
        en.n = k;
        st = zp_launch_apply(l, g_keys, &en, "--");
    }
    zp_launch_entries_free(&en);
    if (st == ZP_OK && l->layers == 0 && l->micro_batch == 0 && l->tp == 0)
        st = ZP_FAIL(ZP_EINVAL, "%s: no Megatron-LM arguments (--num-layers, --micro-batch-size, "
                                "--tensor-model-parallel-size, ...) in the file",
                     l->name);
    return st;
}
