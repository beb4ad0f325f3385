/* zp_torchtitan.c — a torchtitan job TOML (torchtitan/models/llama3/train_configs/llama3_8b.toml and its
 * kind) read as a launch (zp_launch.h), and a plan written as one.
 *
 * The TOML subset read: [section] and [a.b] headers, key = value with a basic or literal string, a number,
 * true/false, or an array (on one line or over several), comments. Anything else exits 2 naming the line.
 * The model is named, not sized ([model] name and flavor, torchtitan's own table): llama3 flavors map to
 * the zoo's llama-3 models, others need --model. */
#include <ctype.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "zp_dispatch.h"
#include "zp_fp8.h"
#include "zp_io.h"
#include "zp_launch.h"
#include "zp_torchtitan.h"

/* Sections whose keys change nothing zplan models (logging, data, checkpoints, the optimizer's rates). */
static const char *const g_quiet[] = {"job", "profiling", "metrics", "optimizer", "lr_scheduler", "checkpoint",
                                      "comm", "validation", "experimental", "memory_estimation", "fault_tolerance",
                                      NULL};

static zp_status set_mode(zp_launch *l, const zp_launch_entry *e)
{
    static const char *const modes[] = {"none", "selective", "full"};
    static const int rc[] = {ZP_RECOMPUTE_NONE, ZP_RECOMPUTE_SELECTIVE, ZP_RECOMPUTE_FULL};
    for (int i = 0; i < 3; i++)
        if (strcmp(e->value, modes[i]) == 0) {
            l->recompute = rc[i];
            return ZP_OK;
        }
    return ZP_FAIL(ZP_EINVAL, "%s:%d: activation_checkpoint.mode '%s': use none, selective or full", l->name, e->line,
                   e->value);
}

/* selective_ac_option (torchtitan/distributed/activation_checkpoint.py): "op", the op-level policy
 * (_apply_op_sac: zplan's --recompute op), or a whole number k, every k-th block wrapped in full checkpointing
 * (_apply_layer_sac: `ptd_checkpoint_wrapper._count % ac_freq == 0`, every block when k is 0; zplan's
 * --checkpoint-every k). torchtitan checks it with str.isdigit(): no sign, no spaces. */
static zp_status set_sac(zp_launch *l, const zp_launch_entry *e)
{
    if (strcmp(e->value, "op") == 0) {
        l->sac_op = 1;
        return ZP_OK;
    }
    const char *v = e->value;
    size_t n = strlen(v);
    int digits = n > 0 && n < 8;
    for (size_t i = 0; digits && i < n; i++)
        digits = isdigit((unsigned char)v[i]) != 0;
    if (!digits)
        return ZP_FAIL(ZP_EINVAL, "%s:%d: activation_checkpoint.selective_ac_option '%s': use 'op' or a whole "
                                  "number k (every k-th block checkpointed)",
                       l->name, e->line, v);
    l->sac_op = 0;
    l->sac_every = strtoll(v, NULL, 10);
    return ZP_OK;
}

/* training.compile (compile.enable in later torchtitan): torch.compile of each block, its elementwise ops fused
 * by Inductor; false, or not stated (torchtitan's default: torchtitan/config/job_config.py, Training.compile:
 * bool = False), runs them as PyTorch eager's separate kernels (zp_plan.eager, sim/zp_ops.def). */
static zp_status set_compile(zp_launch *l, const zp_launch_entry *e)
{
    if (strcasecmp(e->value, "true") == 0 || strcasecmp(e->value, "false") == 0) {
        l->compile = strcasecmp(e->value, "true") == 0;
        return ZP_OK;
    }
    return ZP_FAIL(ZP_EINVAL, "%s:%d: %s '%s': use true or false", l->name, e->line, e->key, e->value);
}

static zp_status set_param_dtype(zp_launch *l, const zp_launch_entry *e)
{
    if (strcmp(e->value, "bfloat16") == 0 || strcmp(e->value, "float32") == 0) {
        l->precision = e->value[0] == 'b' ? ZP_LAUNCH_BF16 : ZP_LAUNCH_FP32;
        return ZP_OK;
    }
    return ZP_FAIL(ZP_EINVAL, "%s:%d: training.mixed_precision_param '%s': use bfloat16 or float32", l->name, e->line,
                   e->value);
}

static zp_status set_reduce_dtype(zp_launch *l, const zp_launch_entry *e)
{
    if (strcmp(e->value, "float32") == 0 || strcmp(e->value, "bfloat16") == 0) {
        l->grad_fp32 = e->value[0] == 'f';
        return ZP_OK;
    }
    return ZP_FAIL(ZP_EINVAL, "%s:%d: training.mixed_precision_reduce '%s': use float32 or bfloat16", l->name,
                   e->line, e->value);
}

/* model.converters: "float8" swaps the linear layers for torchao's Float8Linear (FP8 training, its recipe
 * from [float8] recipe_name, tensorwise by default); MX formats are not modelled. */
static zp_status set_converters(zp_launch *l, const zp_launch_entry *e)
{
    if (strstr(e->value, "mx"))
        return ZP_FAIL(ZP_EINVAL, "%s:%d: model.converters %s: MX training is not modelled yet", l->name, e->line,
                       e->value);
    if (strstr(e->value, "float8")) {
        l->fp8 = 1;
        zp_launch_note(l, "line %d: float8: torchao's casts costed as eager kernels (torch.compile's fused casts "
                          "are not modelled)",
                       e->line);
    }
    return ZP_OK;
}

/* [float8] recipe_name: torchao's "tensorwise" or "rowwise" (others are not modelled: exit 2). */
static zp_status set_float8_recipe(zp_launch *l, const zp_launch_entry *e)
{
    if (zp_fp8_parse_torchao(e->value, &l->fp8_recipe) == ZP_OK)
        return ZP_OK;
    return ZP_FAIL(ZP_EINVAL, "%s:%d: float8.recipe_name \"%s\": zplan models torchao's tensorwise and rowwise "
                              "recipes",
                   l->name, e->line, e->value);
}

/* fsdp_reshard_after_forward: torchtitan's policy, "default" (keep the parameters gathered with pipeline
 * stages, else reshard), "always" or "never" (zp_reshard). */
static zp_status set_reshard(zp_launch *l, const zp_launch_entry *e)
{
    zp_reshard r;
    if (strcasecmp(e->value, "default") != 0 && strcasecmp(e->value, "always") != 0 &&
        strcasecmp(e->value, "never") != 0)
        return ZP_FAIL(ZP_EINVAL, "%s:%d: parallelism.fsdp_reshard_after_forward '%s': use default, always or never",
                       l->name, e->line, e->value);
    ZP_TRY(zp_reshard_parse(e->value, &r));
    l->reshard = (int)r;
    return ZP_OK;
}

static zp_status set_schedule(zp_launch *l, const zp_launch_entry *e)
{
    if (strcasecmp(e->value, "1F1B") == 0)
        return ZP_OK;
    if (strcasecmp(e->value, "Interleaved1F1B") == 0) {
        l->vstages = 2; /* torchtitan: two stages a rank by default (pipeline_parallel_layers_per_stage unset) */
        return ZP_OK;
    }
    return ZP_FAIL(ZP_EINVAL, "%s:%d: parallelism.pipeline_parallel_schedule '%s': zplan models 1F1B and "
                              "Interleaved1F1B",
                   l->name, e->line, e->value);
}

#define F(field) offsetof(zp_launch, field)
static const zp_launch_key g_keys[] = {
    {"model.name", ZP_LK_STR, F(tokenizer), 0, NULL, NULL}, /* kept in tokenizer[] until the flavor is read */
    {"model.flavor", ZP_LK_STR, F(zoo), 0, NULL, NULL},
    {"model.converters", ZP_LK_FN, 0, 0, set_converters, NULL},
    {"training.batch_size", ZP_LK_INT, F(micro_batch), 0, NULL, NULL},
    {"training.local_batch_size", ZP_LK_INT, F(micro_batch), 0, NULL, NULL},
    {"training.global_batch_size", ZP_LK_INT0, F(global_batch), 0, NULL, NULL},
    {"training.seq_len", ZP_LK_INT, F(seq), 0, NULL, NULL},
    {"training.mixed_precision_param", ZP_LK_FN, 0, 0, set_param_dtype, NULL},
    {"training.mixed_precision_reduce", ZP_LK_FN, 0, 0, set_reduce_dtype, NULL},
    {"parallelism.data_parallel_replicate_degree", ZP_LK_INT0, F(dp_replicate), 0, NULL, NULL},
    {"parallelism.data_parallel_shard_degree", ZP_LK_INT0, F(dp_shard), 0, NULL, NULL},
    {"parallelism.tensor_parallel_degree", ZP_LK_INT, F(tp), 0, NULL, NULL},
    {"parallelism.pipeline_parallel_degree", ZP_LK_INT, F(pp), 0, NULL, NULL},
    {"parallelism.context_parallel_degree", ZP_LK_INT, F(cp), 0, NULL, NULL},
    {"parallelism.pipeline_parallel_schedule", ZP_LK_FN, 0, 0, set_schedule, NULL},
    {"parallelism.pipeline_parallel_microbatch_size", ZP_LK_INT, F(grad_accum), 0, NULL, NULL}, /* see below */
    {"parallelism.pipeline_parallel_first_stage_less_layers", ZP_LK_INT0, F(tt_first_less), 0, NULL, NULL},
    {"parallelism.pipeline_parallel_last_stage_less_layers", ZP_LK_INT0, F(tt_last_less), 0, NULL, NULL},
    {"activation_checkpoint.mode", ZP_LK_FN, 0, 0, set_mode, NULL},
    {"activation_checkpoint.selective_ac_option", ZP_LK_FN, 0, 0, set_sac, NULL},
    {"parallelism.expert_parallel_degree", ZP_LK_INT, F(ep), 0, NULL, NULL},
    {"parallelism.expert_tensor_parallel_degree", ZP_LK_INT, F(etp), 0, NULL, NULL},
    {"parallelism.fsdp_reshard_after_forward", ZP_LK_FN, 0, 0, set_reshard, NULL},
    {"model.tokenizer_path", ZP_LK_KNOWN, 0, 0, NULL, NULL},
    {"model.hf_assets_path", ZP_LK_KNOWN, 0, 0, NULL, NULL},
    {"training.max_norm", ZP_LK_KNOWN, 0, 0, NULL, NULL},
    {"training.steps", ZP_LK_KNOWN, 0, 0, NULL, NULL},
    {"training.compile", ZP_LK_FN, 0, 0, set_compile, NULL},
    {"compile.enable", ZP_LK_FN, 0, 0, set_compile, NULL},
    {"compile.components", ZP_LK_KNOWN, 0, 0, NULL, NULL},
    {"compile.backend", ZP_LK_KNOWN, 0, 0, NULL, NULL},
    {"training.dataset", ZP_LK_KNOWN, 0, 0, NULL, NULL},
    {"training.dataset_path", ZP_LK_KNOWN, 0, 0, NULL, NULL},
    {"parallelism.enable_async_tensor_parallel", ZP_LK_BOOL, F(tp_overlap), ZP_TP_OVERLAP_ASYNC, NULL, NULL},
    {"parallelism.disable_loss_parallel", ZP_LK_KNOWN, 0, 0, NULL, NULL},
    {"float8.enable_fsdp_float8_all_gather", ZP_LK_BOOL, F(fp8_all_gather), 1, NULL, NULL},
    {"float8.recipe_name", ZP_LK_FN, 0, 0, set_float8_recipe, NULL},
    {"float8.precompute_float8_dynamic_scale_for_fsdp", ZP_LK_KNOWN, 0, 0, NULL, NULL},
    {"float8.filter_fqns", ZP_LK_KNOWN, 0, 0, NULL, NULL},
    {NULL, 0, 0, 0, NULL, NULL},
};
#undef F

/* ---- the TOML subset ---- */

/* A value as text: a string without its quotes (escapes kept), else as written up to a comment. Returns the
 * length, or -1 when a string is not closed. */
static long toml_value(const char *v, const char **start)
{
    if (*v == '"' || *v == '\'') {
        const char q = *v;
        const char *e = v + 1;
        while (*e && *e != q && *e != '\n')
            e += (q == '"' && *e == '\\' && e[1] && e[1] != '\n') ? 2 : 1;
        if (*e != q)
            return -1;
        *start = v + 1;
        return e - v - 1;
    }
    const char *e = v;
    while (*e && *e != '#' && *e != '\n')
        e++;
    while (e > v && isspace((unsigned char)e[-1]))
        e--;
    *start = v;
    return e - v;
}

/* What follows a closed string value: blanks and a comment only. */
static int rest_ok(const char *p)
{
    while (*p == ' ' || *p == '\t' || *p == '\r')
        p++;
    return *p == '\0' || *p == '\n' || *p == '#';
}

static int quiet(const char *section)
{
    for (int i = 0; g_quiet[i]; i++) {
        const size_t n = strlen(g_quiet[i]);
        if (strncmp(section, g_quiet[i], n) == 0 && (section[n] == '\0' || section[n] == '.'))
            return 1;
    }
    return 0;
}

/* A [section] header line into section[]. */
static zp_status toml_header(const char *p, const char *name, int line, char *section, size_t len)
{
    const char *e = strchr(p, ']');
    const char *nl = strchr(p, '\n');
    if (!e || (nl && e > nl) || p[1] == '[' || !rest_ok(e + 1) || e == p + 1 || (size_t)(e - p - 1) >= len)
        return ZP_FAIL(ZP_EINVAL, "%s:%d: a section header must be [name] (arrays of tables are not read)", name,
                       line);
    snprintf(section, len, "%.*s", (int)(e - p - 1), p + 1);
    for (char *c = section; *c; c++)
        if (!isalnum((unsigned char)*c) && *c != '_' && *c != '-' && *c != '.')
            return ZP_FAIL(ZP_EINVAL, "%s:%d: section name [%s]: letters, digits, _ - and . only", name, line,
                           section);
    return ZP_OK;
}

/* key = value at p: an entry "section.key" (kept unless the section is quiet); *next past the value (a
 * multi-line array's lines counted in *line). */
static zp_status toml_pair(const char *p, const char *name, int *line, const char *section, zp_launch_entries *en,
                           const char **next)
{
    const char *k = p;
    while (isalnum((unsigned char)*p) || *p == '_' || *p == '-')
        p++;
    const size_t klen = (size_t)(p - k);
    while (*p == ' ' || *p == '\t')
        p++;
    if (klen == 0 || *p != '=')
        return ZP_FAIL(ZP_EINVAL, "%s:%d: expected key = value", name, *line);
    p++;
    while (*p == ' ' || *p == '\t')
        p++;
    const int at = *line;
    const char *vs = p;
    long vlen;
    if (*p == '[') { /* an array, perhaps over several lines: kept as written */
        const char *e = p;
        while (*e && *e != ']') {
            if (*e == '\n')
                (*line)++;
            e++;
        }
        if (!*e)
            return ZP_FAIL(ZP_EINVAL, "%s:%d: an array is not closed with ]", name, at);
        vlen = e + 1 - p;
        *next = e + 1;
    } else {
        vlen = toml_value(p, &vs);
        if (vlen < 0 || (vs != p && !rest_ok(vs + vlen + 1)))
            return ZP_FAIL(ZP_EINVAL, "%s:%d: a string is not closed on its line", name, at);
        if (vlen == 0)
            return ZP_FAIL(ZP_EINVAL, "%s:%d: key %.*s has no value", name, at, (int)klen, k);
        *next = vs + vlen + (vs != p);
    }
    if (quiet(section))
        return ZP_OK;
    char key[160];
    const int n = snprintf(key, sizeof key, "%s%s%.*s", section, section[0] ? "." : "", (int)klen, k);
    if (n < 0 || (size_t)n >= sizeof key)
        return ZP_FAIL(ZP_EINVAL, "%s:%d: key too long", name, at);
    return zp_launch_entries_add(en, name, at, key, strlen(key), vs, (size_t)vlen, 1);
}

static zp_status toml_scan(const char *text, const char *name, zp_launch_entries *en)
{
    char section[96] = "";
    int line = 1;
    for (const char *p = text; *p;) {
        while (*p == ' ' || *p == '\t' || *p == '\r')
            p++;
        if (*p == '[') {
            ZP_TRY(toml_header(p, name, line, section, sizeof section));
        } else if (*p != '#' && *p != '\n' && *p) {
            const char *next = p;
            ZP_TRY(toml_pair(p, name, &line, section, en, &next));
            p = next;
            if (!rest_ok(p))
                return ZP_FAIL(ZP_EINVAL, "%s:%d: unexpected text after the value", name, line);
        }
        while (*p && *p != '\n')
            p++;
        if (*p == '\n') {
            p++;
            line++;
        }
    }
    return ZP_OK;
}

/* torchtitan's deepseek_v3 flavors (torchtitan/models/deepseek_v3/__init__.py) and the zoo's models of the
 * same shapes: 16B is DeepSeek-V2-Lite's (27 layers of 2048, 64 experts of 1408, top 6, 2 shared, no Q LoRA),
 * 236B DeepSeek-V2's (160 experts, 8 groups of which 3), 671B DeepSeek-V3's (256 experts, 8 groups of which 4);
 * torchtitan trains them without DeepSeek-V3's multi-token prediction module (zp_launch.no_mtp). */
static const struct {
    const char *flavor, *zoo;
} g_deepseek[] = {{"16B", "deepseek-v2-lite"}, {"236B", "deepseek-v2"}, {"671B", "deepseek-v3"}};

/* [model] name and flavor as a zoo model: torchtitan's llama3 flavors are the zoo's llama-3 models, its
 * deepseek_v3 flavors the table above. */
static void zoo_name(zp_launch *l)
{
    char flavor[64];
    snprintf(flavor, sizeof flavor, "%s", l->zoo);
    l->zoo[0] = '\0';
    if (strcmp(l->tokenizer, "llama3") == 0 && flavor[0]) {
        snprintf(l->zoo, sizeof l->zoo, "llama-3-%.55s", flavor);
        for (char *c = l->zoo; *c; c++)
            *c = (char)tolower((unsigned char)*c);
    }
    for (size_t i = 0; strcmp(l->tokenizer, "deepseek_v3") == 0 && i < sizeof g_deepseek / sizeof g_deepseek[0]; i++)
        if (strcmp(flavor, g_deepseek[i].flavor) == 0) {
            snprintf(l->zoo, sizeof l->zoo, "%s", g_deepseek[i].zoo);
            l->no_mtp = 1;
        }
    l->tokenizer[0] = '\0';
}

zp_status zp_torchtitan_parse(const char *text, const char *name, zp_launch *l)
{
    zp_launch_init(l, ZP_LAUNCH_TORCHTITAN, name);
    zp_launch_entries en = {0};
    zp_status st = toml_scan(text, l->name, &en);
    if (st == ZP_OK)
        st = zp_launch_apply(l, g_keys, &en, "");
    zp_launch_entries_free(&en);
    ZP_TRY(st);
    zoo_name(l);
    /* with a pipeline, torchtitan splits the local batch into micro-batches of pipeline_parallel_microbatch_size
     * (1 by default); without one, the local batch is the micro-batch */
    const int64_t pp_micro = l->grad_accum > 0 ? l->grad_accum : 1;
    l->grad_accum = 0;
    if (l->pp > 1 && l->micro_batch > 0) {
        if (l->micro_batch % pp_micro != 0)
            return ZP_FAIL(ZP_EINVAL, "%s: training.local_batch_size %lld is not a multiple of "
                                      "parallelism.pipeline_parallel_microbatch_size %lld",
                           l->name, (long long)l->micro_batch, (long long)pp_micro);
        l->grad_accum = l->micro_batch / pp_micro;
        l->micro_batch = pp_micro;
    }
    if (l->global_batch < 0)
        l->global_batch = 0; /* -1: the local batch x DP */
    if (l->dp_shard == 0)
        l->dp_shard = -1;
    return ZP_OK;
}

/* ---- out ---- */

/* The zoo's llama-3 models as torchtitan's llama3 flavors, its DeepSeek models as deepseek_v3's (the table
 * above); *name: torchtitan's model name. NULL: none. */
static const char *flavor_of(const zp_model *m, const char **name)
{
    static char f[32];
    if (strncmp(m->name, "llama-3-", 8) == 0) {
        snprintf(f, sizeof f, "%s", m->name + 8);
        for (char *c = f; *c; c++)
            *c = (char)toupper((unsigned char)*c);
        *name = "llama3";
        return f;
    }
    for (size_t i = 0; i < sizeof g_deepseek / sizeof g_deepseek[0]; i++)
        if (strcmp(m->name, g_deepseek[i].zoo) == 0) {
            *name = "deepseek_v3";
            return g_deepseek[i].flavor;
        }
    return NULL;
}

zp_status zp_torchtitan_check_model(const zp_model *m)
{
    const char *name = NULL;
    if (!flavor_of(m, &name))
        return ZP_FAIL(ZP_EUNSUPPORTED, "model %s is not a torchtitan llama3 or deepseek_v3 flavor (the zoo's "
                                        "llama-3-8b, -70b, -405b, deepseek-v2-lite, deepseek-v2, deepseek-v3): "
                                        "torchtitan sizes its models by flavor, not in the TOML",
                       m->name);
    if (m->mtp_layers > 0) /* the flavor reads back without it (zoo_name) */
        return ZP_FAIL(ZP_EUNSUPPORTED, "model %s has %lld multi-token prediction module%s, which torchtitan's "
                                        "deepseek_v3 has not: plan it with --mtp-layers 0",
                       m->name, (long long)m->mtp_layers, m->mtp_layers == 1 ? "" : "s");
    return ZP_OK;
}

/* torchtitan's MoE (torchtitan/models/moe): its token dispatch is an all-to-all, a copy per token and expert,
 * blocking. */
static zp_status check_experts(const zp_plan *p)
{
    if (p->ep > 1 && (p->dispatcher != ZP_DISPATCH_ALLTOALL || p->ep_overlap || p->shared_overlap))
        return ZP_FAIL(ZP_EUNSUPPORTED, "%s is Megatron-core's: torchtitan dispatches tokens with a blocking "
                                        "all-to-all (use --emit-megatron-args)",
                       p->dispatcher != ZP_DISPATCH_ALLTOALL ? "the token dispatcher planned"
                       : p->ep_overlap                       ? "--overlap-moe-expert-parallel-comm"
                                                             : "--moe-shared-expert-overlap");
    return ZP_OK;
}

zp_status zp_torchtitan_check(const zp_plan *p)
{
    if (p->offload != ZP_OFFLOAD_NONE || p->pa || p->pa_cpu)
        return ZP_FAIL(ZP_EUNSUPPORTED, "the plan uses %s, which torchtitan does not run",
                       p->offload != ZP_OFFLOAD_NONE ? "offload" : "ZeRO-R Pa");
    if (p->stage != 0 && p->stage != 3)
        return ZP_FAIL(ZP_EUNSUPPORTED, "ZeRO stage %d: torchtitan runs DDP (stage 0) or FSDP (stage 3)", p->stage);
    if (p->act_fp8_store || zp_plan_moments_saved(p) > 0)
        return ZP_FAIL(ZP_EUNSUPPORTED, "%s is Megatron-core's: torchtitan keeps %s (use --emit-megatron-args)",
                       p->act_fp8_store ? "--activation-func-fp8-input-store" : "--adam-moments",
                       p->act_fp8_store ? "a SwiGLU's input in the training type" : "Adam's moments in fp32");
    if (!p->swiglu_fusion && !p->eager)
        return ZP_FAIL(ZP_EUNSUPPORTED, "--swiglu-fusion off is Megatron-LM's --no-bias-swiglu-fusion: torchtitan "
                                        "fuses a SwiGLU under torch.compile and runs it eager without (use --compile "
                                        "off, or --emit-megatron-args)");
    if (p->selective)
        return ZP_FAIL(ZP_EUNSUPPORTED, "Megatron-LM's selective recompute (the attention core alone): torchtitan's "
                                        "selective modes are op-level (--recompute op) and every k-th block "
                                        "(--checkpoint-every k)");
    if (p->shard_group > 0 && p->shard_group % p->cp != 0)
        return ZP_FAIL(ZP_EUNSUPPORTED, "a shard group of %lld DP ranks with CP %lld: torchtitan's HSDP shards over "
                                        "whole CP groups (give a multiple of the CP degree)",
                       (long long)p->shard_group, (long long)p->cp);
    if (p->mp > 1 && !p->sp)
        return ZP_FAIL(ZP_EUNSUPPORTED, "TP %lld without sequence parallelism: torchtitan's TP always shards the "
                                        "norms along the sequence",
                       (long long)p->mp);
    if (p->grad_accum_fusion)
        return ZP_FAIL(ZP_EUNSUPPORTED, "gradient-accumulation fusion is Megatron-core's, not torchtitan's");
    if (p->param_bytes == 2 && !p->bf16)
        return ZP_FAIL(ZP_EUNSUPPORTED, "fp16 mixed precision: torchtitan's FSDP trains in bf16 or fp32");
    if (p->tp_overlap == ZP_TP_OVERLAP_TE && p->mp > 1)
        return ZP_FAIL(ZP_EUNSUPPORTED, "Transformer Engine's userbuffers (--tp-comm-overlap te) are Megatron-core's: "
                                        "torchtitan overlaps TP as async TP (--tp-comm-overlap async)");
    const zp_fp8_info *f8 = zp_fp8_get(p->fp8);
    if (f8 && !f8->torchao)
        return ZP_FAIL(ZP_EUNSUPPORTED, "FP8 recipe %s is Transformer Engine's, not torchtitan's (use --fp8-recipe "
                                        "torchao-tensorwise or torchao-rowwise, or --emit-megatron-args)",
                       f8->name);
    if (p->pp > 1 && p->schedule == ZP_PP_INTERLEAVED && p->vstages != 2)
        return ZP_FAIL(ZP_EUNSUPPORTED, "%d virtual stages: the torchtitan TOML zplan writes has 2", p->vstages);
    return ZP_OK;
}

zp_status zp_torchtitan_split(int64_t L, int64_t n, int64_t first_less, int64_t last_less, int *out)
{
    if (L < 1 || L > 1000000 || first_less < 0 || last_less < 0 || first_less > L || last_less > L)
        return ZP_FAIL(ZP_EINVAL, "torchtitan's pipeline split: pipeline_parallel_first/last_stage_less_layers %lld "
                                  "and %lld for %lld layers (each 0 to the layers)",
                       (long long)first_less, (long long)last_less, (long long)L);
    const int64_t all = L + first_less + last_less, per = n > 0 ? all / n : 0, extra = n > 0 ? all % n : 0;
    if (n < 1 || n > ZP_PP_MAX_LAYOUT)
        return ZP_FAIL(ZP_EINVAL, "torchtitan's pipeline split: %lld virtual stages, weights %lld and %lld",
                       (long long)n, (long long)first_less, (long long)last_less);
    if (per == 0)
        return ZP_FAIL(ZP_EINVAL, "torchtitan's pipeline split: %lld virtual stages for %lld effective layers "
                                  "(%lld layers + the embedding's %lld + the output's %lld) leave stages empty",
                       (long long)n, (long long)all, (long long)L, (long long)first_less, (long long)last_less);
    if (first_less > per || last_less > per)
        return ZP_FAIL(ZP_EINVAL, "torchtitan's pipeline split: a weight (%lld, %lld) above the %lld layers a virtual "
                                  "stage gets",
                       (long long)first_less, (long long)last_less, (long long)per);
    for (int64_t k = 0; k < n; k++)
        out[k] = (int)(per + (k < extra) - (k == 0 ? first_less : 0) - (k == n - 1 ? last_less : 0));
    return ZP_OK;
}

/* The weights of the embedding and the output (pipeline_parallel_first/last_stage_less_layers) under which
 * torchtitan splits the model as the plan does, trying its default (1, 1) first; ZP_EUNSUPPORTED when none
 * of 0 and 1 does. */
static zp_status split_weights(const zp_model *m, const zp_plan *p, int w[2])
{
    const int n = (int)p->pp * (p->schedule == ZP_PP_INTERLEAVED ? p->vstages : 1);
    int want[ZP_PP_MAX_LAYOUT], got[ZP_PP_MAX_LAYOUT];
    for (int k = 0; k < n; k++)
        want[k] = zp_pp_vstage_layers(m, p, k);
    static const int tries[4][2] = {{1, 1}, {0, 0}, {1, 0}, {0, 1}};
    for (int t = 0; t < 4; t++) {
        if (zp_torchtitan_split(m->layers, n, tries[t][0], tries[t][1], got) != ZP_OK) {
            zp_error_clear();
            continue;
        }
        if (memcmp(want, got, (size_t)n * sizeof *got) == 0) {
            w[0] = tries[t][0], w[1] = tries[t][1];
            return ZP_OK;
        }
    }
    char what[256];
    zp_pp_layout_text(p, what, sizeof what);
    return ZP_FAIL(ZP_EUNSUPPORTED, "the plan's pipeline layout (%s) is not one torchtitan's split makes with "
                                    "pipeline_parallel_first/last_stage_less_layers 0 or 1 (use --emit-megatron-args)",
                   zp_pp_uneven(p) ? what : "the even split");
}

zp_status zp_torchtitan_text(const zp_model *m, const zp_plan *p, const char *step, char *buf, size_t len)
{
    ZP_TRY(zp_torchtitan_check(p));
    ZP_TRY(zp_torchtitan_check_model(m));
    if (m->experts > 0)
        ZP_TRY(check_experts(p));
    const char *name = NULL, *flavor = flavor_of(m, &name);
    const zp_recompute rc = zp_plan_recompute(p);
    const int every = rc == ZP_RECOMPUTE_FULL && p->ckpt_every > 1; /* selective_ac_option = "k" */
    const char *mode = rc == ZP_RECOMPUTE_FULL && !every ? "full" : rc == ZP_RECOMPUTE_NONE ? "none" : "selective";
    char option[48] = ""; /* Megatron-LM's selective recompute is refused above: torchtitan has none */
    if (every)
        snprintf(option, sizeof option, "selective_ac_option = \"%d\"\n", p->ckpt_every);
    else if (rc == ZP_RECOMPUTE_OP)
        snprintf(option, sizeof option, "selective_ac_option = \"op\"\n");
    const long long local = p->micro_batch * (p->pp > 1 ? p->grad_accum : 1);
    /* compile = true unless the plan runs eager (async TP, which torchtitan runs under torch.compile only, is
     * refused with eager: zp_cli_opts.c) */
    const int async = p->tp_overlap == ZP_TP_OVERLAP_ASYNC && p->mp > 1;
    const int64_t rep = p->dp / zp_plan_shard_degree(p); /* HSDP's replicas of a shard group (1: FSDP) */
    int n = snprintf(buf, len,
                     "# torchtitan job of zplan's plan for %s: %lld GPUs = DP %lld x TP %lld x PP %lld%s%s\n"
                     "# model: %lld layers, hidden %lld, %lld heads (%lld KV), FFN %lld, vocab %lld, rope theta %g\n"
                     "[model]\nname = \"%s\"\nflavor = \"%s\"\n%s\n"
                     "[training]\nlocal_batch_size = %lld\nglobal_batch_size = %.0f\nseq_len = %lld\n"
                     "mixed_precision_param = \"%s\"\nmixed_precision_reduce = \"%s\"\ncompile = %s\n\n"
                     "[parallelism]\ndata_parallel_replicate_degree = %lld\ndata_parallel_shard_degree = %lld\n"
                     "tensor_parallel_degree = %lld\npipeline_parallel_degree = %lld\ncontext_parallel_degree = %lld\n%s",
                     m->name, (long long)zp_plan_gpus(p), (long long)p->dp, (long long)p->mp, (long long)p->pp,
                     step ? "; " : "", step ? step : "", (long long)m->layers, (long long)m->hidden,
                     (long long)m->heads, (long long)zp_model_kv_heads(m), (long long)m->ffn, (long long)m->vocab,
                     m->rope_theta > 0 ? m->rope_theta : 10000.0, name, flavor,
                     zp_fp8_get(p->fp8) ? "converters = [\"float8\"]\n" : "", local,
                     zp_plan_global_batch(p), (long long)m->seq, p->param_bytes == 4 ? "float32" : "bfloat16",
                     zp_plan_grad_bytes(p) == 4 ? "float32" : "bfloat16", p->eager ? "false" : "true",
                     (long long)(p->stage == 3 ? rep : zp_plan_replicas(p)),
                     (long long)(p->stage == 3 ? zp_plan_replicas(p) / rep : 1), (long long)p->mp, (long long)p->pp,
                     (long long)p->cp, async ? "enable_async_tensor_parallel = true\n" : "");
    if (n < 0 || (size_t)n >= len)
        return ZP_FAIL(ZP_ERANGE, "the torchtitan TOML needs more than %zu bytes", len);
    size_t used = (size_t)n;
    if (p->pp > 1) { /* with the split torchtitan makes as the plan does (split_weights) */
        int w[2];
        ZP_TRY(split_weights(m, p, w));
        used += (size_t)snprintf(buf + used, len - used,
                                 "pipeline_parallel_schedule = \"%s\"\npipeline_parallel_microbatch_size = %lld\n"
                                 "pipeline_parallel_first_stage_less_layers = %d\n"
                                 "pipeline_parallel_last_stage_less_layers = %d\n",
                                 p->schedule == ZP_PP_INTERLEAVED ? "Interleaved1F1B" : "1F1B",
                                 (long long)p->micro_batch, w[0], w[1]);
    }
    if (p->ep > 1 && used < len) /* the experts over EP, split over TP as the other layers (zp_launch_plan.c) */
        used += (size_t)snprintf(buf + used, len - used, "expert_parallel_degree = %lld\n", (long long)p->ep);
    if (p->ep > 1 && p->mp > 1 && used < len)
        used += (size_t)snprintf(buf + used, len - used, "expert_tensor_parallel_degree = %lld\n", (long long)p->mp);
    if (p->stage == 3 && p->reshard != ZP_RESHARD_DEFAULT && used < len)
        used += (size_t)snprintf(buf + used, len - used, "fsdp_reshard_after_forward = \"%s\"\n",
                                 zp_reshard_name((zp_reshard)p->reshard));
    if (used < len)
        used += (size_t)snprintf(buf + used, len - used, "\n[activation_checkpoint]\nmode = \"%s\"\n%s", mode,
                                 option);
    const zp_fp8_info *f8 = zp_fp8_get(p->fp8);
    if (f8 && used < len) /* torchao's Float8Linear: its recipe, and FSDP2's FP8 all-gather where planned */
        used += (size_t)snprintf(buf + used, len - used,
                                 "\n[float8]\nrecipe_name = \"%s\"\nenable_fsdp_float8_all_gather = %s\n",
                                 f8->torchao, p->fp8_all_gather ? "true" : "false");
    if (used >= len)
        return ZP_FAIL(ZP_ERANGE, "the torchtitan TOML needs more than %zu bytes", len);
    return ZP_OK;
}

zp_status zp_torchtitan_write(const zp_model *m, const zp_plan *p, const char *step, const char *path)
{
    char text[4096];
    ZP_TRY(zp_torchtitan_text(m, p, step, text, sizeof text));
    return zp_io_write_file(path, text, strlen(text));
}
