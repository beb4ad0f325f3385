#include "zp_dsconfig.h"

#include "zp_dispatch.h"

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "zp_io.h"
#include "zp_launch.h" /* zp_launch_key_distance: how far a misspelt key is from one we read */

static void note(zp_ds_notes *n, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(zp_ds_notes *n, const char *fmt, ...)
{
    if (!n || n->n >= ZP_DS_MAX_NOTES)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(n->line[n->n++], sizeof n->line[0], fmt, ap);
    va_end(ap);
}

/* The keys zplan reads (and those it knows but that change nothing it models). */
static const char *const TOP_KEYS[] = {
    "train_batch_size", "train_micro_batch_size_per_gpu", "gradient_accumulation_steps", "fp16", "bf16",
    "bfloat16", "data_types",
    "zero_optimization", "activation_checkpointing",
    /* known, no effect on memory or step time as modelled: */
    "optimizer", "scheduler", "gradient_clipping", "steps_per_print", "wall_clock_breakdown", "prescale_gradients",
    "gradient_predivide_factor", "zero_allow_untested_optimizer", "logging", "tensorboard", "wandb", "csv_monitor",
    "flops_profiler", "comms_logger", "communication_data_type", "seed", "dump_state", "amp", NULL};
/* the first TOP_READS of them change the plan */
enum { TOP_READS = 9 };
static const char *const ZERO_KEYS[] = {
    "stage", "offload_optimizer", "offload_param", "cpu_offload", "cpu_offload_param", "cpu_offload_params",
    "overlap_comm", "contiguous_gradients", "reduce_bucket_size", "allgather_bucket_size", "reduce_scatter",
    "allgather_partitions", "stage3_prefetch_bucket_size", "stage3_max_live_parameters",
    "stage3_param_persistence_threshold", "sub_group_size", "mics_shard_size", "zero_hpz_partition_size",
    /* known, no effect as modelled: */
    "cpu_offload_use_pin_memory", "stage3_max_reuse_distance", "stage3_gather_16bit_weights_on_model_save",
    "stage3_gather_fp16_weights_on_model_save", "round_robin_gradients", "elastic_checkpoint",
    "load_from_fp32_weights", "ignore_unused_parameters", "memory_efficient_linear", NULL};
/* the first ZERO_READS change the plan (stage, offload, overlap, buckets, stage-3 limits, NVMe's sub-groups,
 * MiCS's and hpZ's groups) */
enum { ZERO_READS = 18 };
static const char *const ACT_KEYS[] = {"partition_activations", "cpu_checkpointing", "contiguous_memory_optimization",
                                       "number_checkpoints", "synchronize_checkpoint_boundary", "profile", NULL};

/* the first ACT_READS change the plan (Pa, Pa+cpu, MD's contiguous checkpoints, the checkpoints' count) */
enum { ACT_READS = 4 };

static int known(const char *const *keys, const char *k)
{
    for (int i = 0; keys[i]; i++)
        if (strcmp(keys[i], k) == 0)
            return 1;
    return 0;
}

/* Keys of obj that zplan does not know: a misspelling of one of the first `reads` keys (those that change the
 * plan: within 2 edits, or 1 for keys under 6 letters) is refused, naming the key it means, since ignoring
 * it would silently plan something else (a zero_optimisation section dropped is stage 0); any other
 * unknown key is ignored with a warning. */
static zp_status check_unknown(json_t *obj, const char *const *keys, int reads, const char *prefix,
                               zp_ds_notes *n)
{
    const char *k;
    json_t *v;
    json_object_foreach(obj, k, v)
    {
        (void)v;
        if (known(keys, k))
            continue;
        for (int i = 0; i < reads && keys[i]; i++)
            if (zp_launch_key_distance(k, keys[i]) <= (strlen(keys[i]) < 6 ? 1 : 2))
                return ZP_FAIL(ZP_EINVAL, "ds-config: unknown key %s%s: did you mean %s%s? (zplan reads that "
                                          "key, and it changes the plan: fix its name)",
                               prefix, k, prefix, keys[i]);
        note(n, "warning: unknown key %s%s ignored (not a DeepSpeed key zplan knows)", prefix, k);
    }
    return ZP_OK;
}

static int is_auto(json_t *v) { return json_is_string(v) && strcmp(json_string_value(v), "auto") == 0; }

/* A non-negative whole number, "auto" (*is_auto_out = 1), or absent (*present = 0). */
static zp_status get_count(json_t *obj, const char *key, const char *where, double max, double *out, int *present,
                           int *auto_out)
{
    json_t *v = json_object_get(obj, key);
    *present = v != NULL && !json_is_null(v);
    if (auto_out)
        *auto_out = 0;
    if (!*present)
        return ZP_OK;
    if (is_auto(v)) {
        if (!auto_out)
            return ZP_FAIL(ZP_EINVAL, "%s%s: \"auto\" is not accepted here", where, key);
        *auto_out = 1;
        return ZP_OK;
    }
    if (!json_is_number(v))
        return ZP_FAIL(ZP_EINVAL, "%s%s must be a number (or \"auto\")", where, key);
    double x = json_number_value(v);
    if (!isfinite(x) || x < 0 || x != floor(x) || x > max)
        return ZP_FAIL(ZP_EINVAL, "%s%s must be a whole number from 0 to %.0f (got %g)", where, key, max, x);
    *out = x;
    return ZP_OK;
}

static zp_status get_bool(json_t *obj, const char *key, const char *where, int *out, int *present)
{
    json_t *v = json_object_get(obj, key);
    *present = v != NULL && !json_is_null(v);
    if (!*present)
        return ZP_OK;
    if (!json_is_boolean(v))
        return ZP_FAIL(ZP_EINVAL, "%s%s must be true or false", where, key);
    *out = json_is_true(v);
    return ZP_OK;
}

/* A precision section, {"enabled": true | false | "auto", ...}: *on, or *is_auto; absent: neither. */
static zp_status get_enabled(json_t *root, const char *key, const char *name, int *on, int *is_auto_out)
{
    json_t *sec = json_object_get(root, key);
    *on = *is_auto_out = 0;
    if (!sec || json_is_null(sec))
        return ZP_OK;
    if (!json_is_object(sec))
        return ZP_FAIL(ZP_EINVAL, "%s: %s must be an object like {\"enabled\": true}", name, key);
    json_t *e = json_object_get(sec, "enabled");
    if (is_auto(e)) {
        *is_auto_out = 1;
        return ZP_OK;
    }
    if (e && !json_is_boolean(e))
        return ZP_FAIL(ZP_EINVAL, "%s: %s.enabled must be true, false or \"auto\"", name, key);
    *on = e ? json_is_true(e) : 0;
    return ZP_OK;
}

/* offload_optimizer / offload_param: {"device": "cpu"|"nvme"|"none", "pin_memory": bool} */
static zp_status get_offload(json_t *zo, const char *key, int *on, int *nvme, zp_ds_notes *n)
{
    json_t *o = json_object_get(zo, key);
    *on = 0;
    *nvme = 0;
    if (!o || json_is_null(o))
        return ZP_OK;
    if (!json_is_object(o))
        return ZP_FAIL(ZP_EINVAL, "zero_optimization.%s must be an object like {\"device\": \"cpu\"}", key);
    json_t *d = json_object_get(o, "device");
    const char *dev = json_is_string(d) ? json_string_value(d) : NULL;
    if (d && !dev)
        return ZP_FAIL(ZP_EINVAL, "zero_optimization.%s.device must be \"cpu\", \"nvme\" or \"none\"", key);
    if (!dev || strcmp(dev, "none") == 0)
        return ZP_OK;
    if (strcmp(dev, "cpu") == 0) {
        *on = 1;
    } else if (strcmp(dev, "nvme") == 0) {
        *on = 1;
        *nvme = 1; /* ZeRO-Infinity: the states on NVMe, swap buffers in host memory */
    } else {
        return ZP_FAIL(ZP_EINVAL, "zero_optimization.%s.device \"%s\": use \"cpu\", \"nvme\" or \"none\"", key, dev);
    }
    json_t *pin = json_object_get(o, "pin_memory");
    if (pin && !json_is_boolean(pin))
        return ZP_FAIL(ZP_EINVAL, "zero_optimization.%s.pin_memory must be true or false", key);
    if (pin && json_is_false(pin))
        note(n, "note: %s.pin_memory false: copies from pageable memory run slower than modelled (pinned)", key);
    const char *k;
    json_t *v;
    json_object_foreach(o, k, v)
    {
        (void)v;
        if (strcmp(k, "device") && strcmp(k, "pin_memory") && strcmp(k, "nvme_path") && strcmp(k, "buffer_count") &&
            strcmp(k, "buffer_size") && strcmp(k, "max_in_cpu") && strcmp(k, "fast_init") && strcmp(k, "pipeline") &&
            strcmp(k, "pipeline_read") && strcmp(k, "pipeline_write") && strcmp(k, "ratio"))
            note(n, "warning: unknown key zero_optimization.%s.%s ignored", key, k);
    }
    return ZP_OK;
}

/* ---- HJSON, as DeepSpeed reads it ---- */

typedef struct {
    char *s;
    size_t n, cap;
    int ok;
} sbuf;

static void put(sbuf *b, char c)
{
    if (!b->ok)
        return;
    if (b->n + 2 > b->cap) {
        size_t cap = b->cap ? 2 * b->cap : 256;
        char *ns = realloc(b->s, cap);
        if (!ns) {
            b->ok = 0;
            return;
        }
        b->s = ns;
        b->cap = cap;
    }
    b->s[b->n++] = c;
}

/* The last character written that is not white space, and where; -1 when none. */
static long last_sig(const sbuf *b)
{
    for (long i = (long)b->n - 1; i >= 0; i--)
        if (!strchr(" \t\r\n", b->s[i]))
            return i;
    return -1;
}

static int is_bare(char c) { return c && !strchr(" \t\r\n,:[]{}\"'#", c) && !(c == '/'); }

static int is_literal(const char *w, size_t n)
{
    static const char *const lit[] = {"true", "false", "null"};
    for (int i = 0; i < 3; i++)
        if (strlen(lit[i]) == n && strncmp(w, lit[i], n) == 0)
            return 1;
    char buf[64], *end;
    if (n == 0 || n >= sizeof buf)
        return 0;
    memcpy(buf, w, n);
    buf[n] = '\0';
    (void)strtod(buf, &end);
    return *end == '\0' && (isdigit((unsigned char)buf[0]) || buf[0] == '-' || buf[0] == '.');
}

/* A quoted string from t[i] (its quote, ' or "): written double-quoted, inner double quotes escaped; returns
 * the index after its closing quote. */
static size_t hj_string(const char *t, size_t i, sbuf *b)
{
    const char c = t[i];
    put(b, '"');
    for (i++; t[i] && t[i] != c; i++) {
        if (t[i] == '\\' && t[i + 1]) {
            put(b, t[i++]);
            put(b, t[i]);
        } else {
            if (t[i] == '"')
                put(b, '\\');
            put(b, t[i]);
        }
    }
    put(b, '"');
    return i + (t[i] ? 1 : 0);
}

/* A bare word from t[i]: a literal, a quoteless key, or a quoteless string to the end of the line (written
 * quoted); *after_value set when it made a token. Returns the index after it. */
static size_t hj_word(const char *t, size_t i, sbuf *b, int *after_value)
{
    long k = last_sig(b);
    const int is_value = k >= 0 && b->s[k] == ':';
    size_t j = i;
    if (is_value) {
        while (t[j] && t[j] != '\n' && t[j] != '\r' && t[j] != ',' && t[j] != '}' && t[j] != ']' && t[j] != '#' &&
               !(t[j] == '/' && (t[j + 1] == '/' || t[j + 1] == '*')))
            j++;
        while (j > i && strchr(" \t", t[j - 1]))
            j--;
    } else {
        while (is_bare(t[j]))
            j++;
    }
    if (j == i) { /* a character no JSON token starts with: jansson will say where */
        put(b, t[i]);
        return i + 1;
    }
    size_t after = j;
    while (t[after] && strchr(" \t", t[after]))
        after++;
    const int is_key = !is_value && t[after] == ':';
    if (!is_key && is_literal(t + i, j - i)) {
        for (size_t q = i; q < j; q++)
            put(b, t[q]);
    } else {
        put(b, '"');
        for (size_t q = i; q < j; q++) {
            if (t[q] == '"' || t[q] == '\\')
                put(b, '\\');
            put(b, t[q]);
        }
        put(b, '"');
    }
    *after_value = 1;
    return j;
}

/* A comment from t[i] (#, // to the end of the line; a block comment, its new lines kept): returns the index
 * after it, or i when none starts there. */
static size_t hj_comment(const char *t, size_t i, sbuf *b)
{
    if (t[i] == '#' || (t[i] == '/' && t[i + 1] == '/')) {
        while (t[i] && t[i] != '\n')
            i++;
        return i;
    }
    if (t[i] == '/' && t[i + 1] == '*') {
        for (i += 2; t[i] && !(t[i] == '*' && t[i + 1] == '/'); i++)
            if (t[i] == '\n')
                put(b, '\n');
        return i + (t[i] ? 2 : 0);
    }
    return i;
}

zp_status zp_dsconfig_hjson_to_json(const char *t, char **out)
{
    sbuf b = {.ok = 1};
    int after_value = 0; /* the last token ended a value or a key's string: a new one needs a comma first */
    for (size_t i = 0; t[i];) {
        char c = t[i];
        const size_t past_comment = hj_comment(t, i, &b);
        if (past_comment != i) {
            i = past_comment;
            continue;
        }
        if (strchr(" \t\r\n", c)) {
            put(&b, c);
            i++;
            continue;
        }
        const int starts_value = c == '"' || c == '\'' || c == '{' || c == '[' || is_bare(c);
        if (starts_value && after_value)
            put(&b, ','); /* HJSON: members and elements on their own lines need no comma */
        if (c == '}' || c == ']') {
            long k = last_sig(&b);
            if (k >= 0 && b.s[k] == ',')
                b.s[k] = ' '; /* a trailing comma */
            put(&b, c);
            after_value = 1;
            i++;
        } else if (c == ',' || c == ':' || c == '{' || c == '[') {
            put(&b, c);
            after_value = 0;
            i++;
        } else if (c == '"' || c == '\'') { /* a string: single quotes become double */
            i = hj_string(t, i, &b);
            after_value = 1;
        } else {
            i = hj_word(t, i, &b, &after_value);
        }
    }
    put(&b, '\0');
    if (!b.ok) {
        free(b.s);
        return ZP_FAIL(ZP_ENOMEM, "out of memory");
    }
    *out = b.s;
    return ZP_OK;
}

/* train_batch_size given with one of its factors (`part`, the micro-batch or the accumulation: `what`) but not
 * the other (the key `other`): that one is train_batch_size / (part x DP), which must be whole. */
static zp_status batch_factor(const char *name, double tbs, double part, double dp, const char *what, const char *other,
                              zp_ds_notes *notes, double *out)
{
    if (fmod(tbs, part * dp) != 0)
        return ZP_FAIL(ZP_EINVAL, "%s: train_batch_size %.0f is not a multiple of %s %.0f x data-parallel %.0f", name,
                       tbs, what, part, dp);
    *out = tbs / (part * dp);
    note(notes, "%s -> %.0f (train_batch_size / (%s x DP))", other, *out, what);
    return ZP_OK;
}

/* MP and PP as DeepSpeed configs leave them (1 unless given), checked against the GPUs: the data-parallel
 * degree in *dp (GPUs / (MP x PP)). */
static zp_status ds_parallel(zp_search_req *r, zp_ds_notes *notes, double *dp)
{
    zp_plan *b = &r->base;
    if (zp_search_req_searched(r, ZP_SEARCH_DIM(ZP_DIM_TP))) {
        b->mp = 1;
        zp_search_req_give(r, ZP_SEARCH_DIM(ZP_DIM_TP));
        note(notes, "model parallelism: 1 (DeepSpeed configs do not set it; give --mp for Megatron MP)");
    }
    /* DeepSpeed builds pipelines in the model's code (PipelineModule), not from its config: one stage unless
     * --pp. Sequence parallelism is a way to run the Megatron MP given with --mp: searched with it. */
    if (zp_search_req_searched(r, ZP_SEARCH_DIM(ZP_DIM_PP))) {
        b->pp = 1;
        zp_search_req_give(r, ZP_SEARCH_DIM(ZP_DIM_PP));
    }
    if (r->gpus % b->mp != 0)
        return ZP_FAIL(ZP_EINVAL, "--mp %lld does not divide the %lld GPUs", (long long)b->mp, (long long)r->gpus);
    if (r->gpus % (b->mp * b->pp) != 0)
        return ZP_FAIL(ZP_EINVAL, "--mp %lld x --pp %lld do not divide the %lld GPUs", (long long)b->mp,
                       (long long)b->pp, (long long)r->gpus);
    *dp = (double)(r->gpus / b->mp / b->pp);
    return ZP_OK;
}

/* precision: fp16, bf16 (or DeepSpeed's legacy "bfloat16"), "auto" resolved by the GPU; sets the bytes per
 * parameter and of the optimizer state */
static zp_status ds_precision(json_t *root, const char *name, zp_search_req *r, zp_ds_notes *notes)
{
    int f16 = 0, b16 = 0, f16_auto = 0, b16_auto = 0;
    ZP_TRY(get_enabled(root, "fp16", name, &f16, &f16_auto));
    const char *bkey = json_object_get(root, "bf16") ? "bf16" : "bfloat16";
    if (json_object_get(root, "bf16") && json_object_get(root, "bfloat16"))
        return ZP_FAIL(ZP_EINVAL, "%s: both bf16 and its legacy name bfloat16 are given: keep bf16", name);
    ZP_TRY(get_enabled(root, bkey, name, &b16, &b16_auto));
    if (f16 && b16)
        return ZP_FAIL(ZP_EINVAL, "%s: fp16.enabled and %s.enabled are both true: DeepSpeed refuses it (keep one)",
                       name, bkey);
    if ((f16_auto || b16_auto) && !f16 && !b16) {
        /* "auto" (the HuggingFace integration fills it in): mixed precision in the type the GPU computes
         * fast, bf16 where it has bf16 tensor cores */
        const int has = r->cluster && zp_cluster_has_bf16(r->cluster);
        b16 = has;
        f16 = !has;
        note(notes, "%s.enabled \"auto\" -> %s: the %s %s bf16 tensor cores (mixed precision in %s)",
             b16_auto ? bkey : "fp16", (b16_auto ? b16 : f16) ? "true" : "false",
             r->cluster ? r->cluster->gpu_name : "GPU", has ? "has" : "has no", has ? "bf16" : "fp16");
    }
    zp_search_req_give(r, ZP_SEARCH_BF16);
    if (f16 || b16) {
        r->base.param_bytes = 2;
        r->base.k_optimizer = 12;
        r->base.bf16 = b16;
    } else {
        r->base.param_bytes = 4;
        r->base.k_optimizer = 8;
        r->base.bf16 = 0;
        note(notes, "fp16 and bf16 disabled: fp32 training (4-byte parameters and gradients, Adam's m and v = 8 "
                    "bytes per parameter; GEMMs at the fp32 rate)");
    }
    return ZP_OK;
}

/* data_types.grad_accum_dtype: fp32 gradients (4 bytes) under half-precision parameters; else 0 (the
 * parameters' type). After ds_precision, which sets r->base.param_bytes. */
static zp_status ds_data_types(json_t *root, const char *name, zp_search_req *r)
{
    json_t *dtypes = json_object_get(root, "data_types");
    r->base.grad_bytes = 0;
    if (dtypes && !json_is_object(dtypes))
        return ZP_FAIL(ZP_EINVAL, "%s: data_types must be an object like {\"grad_accum_dtype\": \"fp32\"}", name);
    if (!dtypes)
        return ZP_OK;
    json_t *g = json_object_get(dtypes, "grad_accum_dtype");
    const char *gt = json_is_string(g) ? json_string_value(g) : NULL;
    if (g && !json_is_null(g) && !gt)
        return ZP_FAIL(ZP_EINVAL, "%s: data_types.grad_accum_dtype must be \"fp32\", \"fp16\" or \"bf16\"", name);
    if (gt && strcmp(gt, "fp32") == 0)
        r->base.grad_bytes = r->base.param_bytes == 2 ? 4.0 : 0.0;
    else if (gt && strcmp(gt, "fp16") && strcmp(gt, "bf16"))
        return ZP_FAIL(ZP_EINVAL, "%s: data_types.grad_accum_dtype \"%s\": use \"fp32\", \"fp16\" or \"bf16\"", name,
                       gt);
    return ZP_OK;
}

/* zero_optimization's offload: offload_optimizer / offload_param and DeepSpeed's deprecated booleans; sets
 * r->offload and r->base.nvme. `stage` is the section's ZeRO stage, 0 to 3. */
static zp_status ds_offload(json_t *zo, double stage, zp_search_req *r, zp_ds_notes *notes)
{
    int off_opt, off_par, b, nvme_opt, nvme_par, present;
    ZP_TRY(get_offload(zo, "offload_optimizer", &off_opt, &nvme_opt, notes));
    ZP_TRY(get_offload(zo, "offload_param", &off_par, &nvme_par, notes));
    r->base.nvme = (nvme_opt ? ZP_NVME_OPTIMIZER : 0) | (nvme_par ? ZP_NVME_PARAMS : 0);
    /* DeepSpeed's deprecated booleans (zero/config.py): cpu_offload, cpu_offload_param; zplan used to
     * read a misspelt cpu_offload_params, still accepted */
    static const char *const legacy[] = {"cpu_offload", "cpu_offload_param", "cpu_offload_params"};
    for (int k = 0; k < 3; k++) {
        if (get_bool(zo, legacy[k], "zero_optimization.", &b, &present) != ZP_OK)
            return ZP_FAIL(ZP_EINVAL, "zero_optimization.%s must be true or false", legacy[k]);
        if (present && b) {
            *(k == 0 ? &off_opt : &off_par) = 1;
            note(notes, "zero_optimization.%s (deprecated in DeepSpeed) -> %s.device \"cpu\"", legacy[k],
                 k == 0 ? "offload_optimizer" : "offload_param");
        }
    }
    if (off_par && stage != 3)
        return ZP_FAIL(ZP_EINVAL, "zero_optimization: parameter offload needs stage 3 (stage is %g)", stage);
    if (off_opt && stage < 1)
        return ZP_FAIL(ZP_EINVAL, "zero_optimization: optimizer offload needs stage 1, 2 or 3 (stage is %g)", stage);
    r->base.offload = off_par ? ZP_OFFLOAD_PARAMS : off_opt ? ZP_OFFLOAD_OPTIMIZER : ZP_OFFLOAD_NONE;
    zp_search_req_give(r, ZP_SEARCH_OFFLOAD);
    return ZP_OK;
}

/* zero_optimization's sizes, in elements: the reduce bucket (r->base.bucket) and stage 3's prefetch bucket, live
 * parameters and persistence threshold, each DeepSpeed's default when absent; "auto" as the HuggingFace
 * integration fills it in (from the hidden size). */
static zp_status ds_zero_sizes(json_t *zo, zp_search_req *r, zp_ds_notes *notes)
{
    double v;
    int a, present;
    ZP_TRY(get_count(zo, "reduce_bucket_size", "zero_optimization.", 1e15, &v, &present, &a));
    if (present && a) {
        r->base.bucket = (double)r->model->hidden * (double)r->model->hidden;
        note(notes, "zero_optimization.reduce_bucket_size \"auto\" -> hidden^2 = %.0f elements (as the "
                    "HuggingFace integration)", r->base.bucket);
    } else if (present) {
        if (v < 1)
            return ZP_FAIL(ZP_EINVAL, "zero_optimization.reduce_bucket_size must be at least 1");
        r->base.bucket = v;
    }
    ZP_TRY(get_count(zo, "allgather_bucket_size", "zero_optimization.", 1e15, &v, &present, &a));
    if (present && !a && v != r->base.bucket)
        note(notes, "note: allgather_bucket_size %.0f differs from reduce_bucket_size %.0f: zplan sizes both "
                    "buckets as reduce_bucket_size", v, r->base.bucket);
    ZP_TRY(get_count(zo, "stage3_prefetch_bucket_size", "zero_optimization.", 1e15, &v, &present, &a));
    r->base.stage3_prefetch = ZP_DEFAULT_PREFETCH; /* DeepSpeed's default */
    if (present && a) {
        r->base.stage3_prefetch = 0.9 * (double)r->model->hidden * (double)r->model->hidden;
        note(notes, "zero_optimization.stage3_prefetch_bucket_size \"auto\" -> 0.9 hidden^2 = %.0f elements",
             r->base.stage3_prefetch);
    } else if (present) {
        r->base.stage3_prefetch = v;
    }
    ZP_TRY(get_count(zo, "stage3_max_live_parameters", "zero_optimization.", 1e15, &v, &present, &a));
    r->base.stage3_max_live = ZP_DEFAULT_MAX_LIVE; /* DeepSpeed's default */
    if (present && !a)
        r->base.stage3_max_live = v;
    ZP_TRY(get_count(zo, "stage3_param_persistence_threshold", "zero_optimization.", 1e15, &v, &present, &a));
    r->base.persistence_threshold = ZP_DEFAULT_PERSISTENCE; /* DeepSpeed's default */
    if (present && a) {
        r->base.persistence_threshold = 10.0 * (double)r->model->hidden;
        note(notes, "zero_optimization.stage3_param_persistence_threshold \"auto\" -> 10 hidden = %.0f",
             r->base.persistence_threshold);
    } else if (present) {
        r->base.persistence_threshold = v;
    }
    return ZP_OK;
}

/* Hybrid sharding in a DeepSpeed config (stage 3's): MiCS (mics_shard_size, DeepSpeed's default -1: off)
 * shards every state within groups of that many ranks and replicates across them, as --shard-group models it
 * (FSDP2 HSDP's arithmetic); ZeRO++'s hpZ (zero_hpz_partition_size, default 1: off) keeps the primary
 * partition over all DP ranks and shards only a secondary copy of the parameters within G ranks, gathered
 * there for the backward: not modelled, so refused rather than planned as something else. */
static zp_status ds_shard_groups(json_t *zo, double stage, zp_search_req *r, zp_ds_notes *notes)
{
    json_t *v = json_object_get(zo, "mics_shard_size");
    if (v && json_is_integer(v) && json_integer_value(v) < 0) {
        v = NULL; /* -1: MiCS off */
    } else if (v && !json_is_null(v)) {
        double g = 0;
        int present;
        ZP_TRY(get_count(zo, "mics_shard_size", "zero_optimization.", 1e9, &g, &present, NULL));
        if (stage != 3)
            return ZP_FAIL(ZP_EINVAL, "zero_optimization.mics_shard_size %g: MiCS shards ZeRO-3's states (give stage "
                                      "3, or drop it)", g);
        if (g < 1)
            return ZP_FAIL(ZP_EINVAL, "zero_optimization.mics_shard_size must be at least 1 (or -1: off)");
        r->base.shard_group = (int64_t)g;
        note(notes, "zero_optimization.mics_shard_size %g -> --shard-group %g: states sharded within %g ranks, "
                    "gradients all-reduced across the groups", g, g, g);
    }
    double hpz = 1;
    int present;
    ZP_TRY(get_count(zo, "zero_hpz_partition_size", "zero_optimization.", 1e9, &hpz, &present, NULL));
    if (present && hpz > 1)
        return ZP_FAIL(ZP_EINVAL, "zero_optimization.zero_hpz_partition_size %g: ZeRO++'s hpZ (a secondary copy of "
                                  "the parameters sharded within %g ranks for the backward's gathers) is not "
                                  "modelled; drop it to plan without it, or plan MiCS/HSDP's sharding within %g "
                                  "ranks with mics_shard_size (--shard-group %g)", hpz, hpz, hpz, hpz);
    return ZP_OK;
}

/* A zero_optimization section (an object, not NULL): its stage, offload, overlap and sizes into r;
 * contiguous_gradients into *contiguous_grads (left as it is when absent). */
static zp_status ds_zero_section(json_t *zo, zp_search_req *r, zp_ds_notes *notes, int *contiguous_grads)
{
    double stage = 0;
    int present, sauto;
    ZP_TRY(check_unknown(zo, ZERO_KEYS, ZERO_READS, "zero_optimization.", notes));
    ZP_TRY(get_count(zo, "stage", "zero_optimization.", 3, &stage, &present, &sauto));
    if (sauto)
        return ZP_FAIL(ZP_EINVAL, "zero_optimization.stage \"auto\": give 0, 1, 2 or 3 (or leave the config out "
                                  "and let zplan search the stage)");
    ZP_TRY(ds_offload(zo, stage, r, notes));
    int overlap = stage == 3; /* DeepSpeed's default: overlap_comm on for stage 3 only */
    ZP_TRY(get_bool(zo, "overlap_comm", "zero_optimization.", &overlap, &present));
    ZP_TRY(get_bool(zo, "contiguous_gradients", "zero_optimization.", contiguous_grads, &present));
    ZP_TRY(ds_zero_sizes(zo, r, notes));
    ZP_TRY(ds_shard_groups(zo, stage, r, notes));
    r->base.stage = (int)stage;
    zp_search_req_give(r, ZP_SEARCH_STAGE);
    r->base.overlap_comm = overlap;
    return ZP_OK;
}

/* ZeRO: zero_optimization (an object, DeepSpeed's legacy true/false, or absent: stage 0) into r; whether
 * gradients are contiguous (ZeRO-R MD's half) into *contiguous_grads. */
static zp_status ds_zero(json_t *root, const char *name, zp_search_req *r, zp_ds_notes *notes, int *contiguous_grads)
{
    json_t *zo = json_object_get(root, "zero_optimization");
    json_t *legacy_zo = NULL; /* zero_optimization: true/false as the object it stands for */
    if (json_is_boolean(zo)) { /* DeepSpeed's oldest form: true is stage 1, false stage 0 */
        legacy_zo = json_pack("{s:i}", "stage", json_is_true(zo) ? 1 : 0);
        note(notes, "zero_optimization %s (the legacy boolean form) -> stage %d, as DeepSpeed reads it",
             json_is_true(zo) ? "true" : "false", json_is_true(zo) ? 1 : 0);
        zo = legacy_zo;
    }
    if (zo && !json_is_object(zo))
        return ZP_FAIL(ZP_EINVAL, "%s: zero_optimization must be an object like {\"stage\": 2} (or true/false)", name);
    r->base.cb = 1; /* DeepSpeed always reduces through constant-size buckets */
    r->base.bucket = 5e8;
    *contiguous_grads = 1;
    zp_status st = ZP_OK;
    if (zo) {
        st = ds_zero_section(zo, r, notes, contiguous_grads);
    } else {
        r->base.offload = ZP_OFFLOAD_NONE;
        note(notes, "no zero_optimization section: stage 0 (plain data parallelism), as DeepSpeed");
        r->base.stage = 0;
        zp_search_req_give(r, ZP_SEARCH_OFFLOAD | ZP_SEARCH_STAGE);
        r->base.overlap_comm = 0;
    }
    json_decref(legacy_zo);
    return st;
}

/* activation_checkpointing: ZeRO-R Pa and Pa+cpu, the recompute it implies, and ZeRO-R MD (contiguous
 * gradients, from ds_zero, and contiguous checkpoints) into r. */
static zp_status ds_activations(json_t *root, const char *name, int contiguous_grads, zp_search_req *r,
                                zp_ds_notes *notes)
{
    json_t *ac = json_object_get(root, "activation_checkpointing");
    int pa = 0, pacpu = 0, contiguous_ckpt = 0, present;
    if (ac && !json_is_object(ac))
        return ZP_FAIL(ZP_EINVAL, "%s: activation_checkpointing must be an object", name);
    if (ac) {
        ZP_TRY(check_unknown(ac, ACT_KEYS, ACT_READS, "activation_checkpointing.", notes));
        ZP_TRY(get_bool(ac, "partition_activations", "activation_checkpointing.", &pa, &present));
        ZP_TRY(get_bool(ac, "cpu_checkpointing", "activation_checkpointing.", &pacpu, &present));
        ZP_TRY(get_bool(ac, "contiguous_memory_optimization", "activation_checkpointing.", &contiguous_ckpt,
                        &present));
        double nck;
        int a;
        ZP_TRY(get_count(ac, "number_checkpoints", "activation_checkpointing.", 1e9, &nck, &present, &a));
        if (present && !a && nck == 0 && zp_search_req_searched(r, ZP_SEARCH_RECOMPUTE)) {
            /* no block checkpointed: no full recompute (Megatron's selective recompute is not DeepSpeed's to
             * say, so it stays open) */
            r->checkpoint = 0;
        } else if (present && !a && nck != (double)r->model->layers) {
            note(notes, "note: number_checkpoints %.0f; zplan checkpoints every one of the %lld blocks", nck,
                 (long long)r->model->layers);
        }
        if (pacpu && !pa) {
            note(notes, "cpu_checkpointing implies partitioned checkpoints here (ZeRO-R Pa+cpu)");
            pa = 1;
        }
    }
    if ((pa || pacpu) && !r->checkpoint)
        return ZP_FAIL(ZP_EINVAL, "activation_checkpointing partitions checkpoints: drop --no-checkpoint");
    r->base.pa = pa;
    r->base.pa_cpu = pacpu;
    zp_search_req_give(r, ZP_SEARCH_PA | ZP_SEARCH_PA_CPU);
    if (zp_search_req_searched(r, ZP_SEARCH_RECOMPUTE) && r->checkpoint)
        zp_search_req_give_recompute(r, ZP_RECOMPUTE_FULL);
    /* ZeRO-R MD: contiguous gradients and contiguous checkpoints */
    r->base.md = contiguous_grads && (contiguous_ckpt || !r->checkpoint);
    if (!r->base.md)
        note(notes, "MD off (contiguous_gradients %s, contiguous_memory_optimization %s): a fragmentation reserve is "
                    "counted", contiguous_grads ? "true" : "false", contiguous_ckpt ? "true" : "false");
    return ZP_OK;
}

/* The batch sizes given (tbs, mb, gas: train_batch_size, the micro-batch, the accumulation; has_*: given and
 * not "auto") against train_batch_size = micro x accumulation x DP, the missing ones derived (noted) into
 * *tbs, *mb, *gas. */
static zp_status ds_batch_derive(const char *name, double dp, int has_tbs, int has_mb, int has_gas, double *tbs,
                                 double *mb, double *gas, zp_ds_notes *notes)
{
    if ((has_tbs && *tbs < 1) || (has_mb && *mb < 1) || (has_gas && *gas < 1))
        return ZP_FAIL(ZP_EINVAL, "%s: batch sizes must be at least 1", name);
    if (has_tbs && has_mb && has_gas) {
        if (*tbs != *mb * *gas * dp)
            return ZP_FAIL(ZP_EINVAL,
                           "%s: train_batch_size must equal train_micro_batch_size_per_gpu x "
                           "gradient_accumulation_steps x data-parallel degree: %.0f != %.0f x %.0f x %.0f (GPUs / MP)",
                           name, *tbs, *mb, *gas, dp);
    } else if (has_tbs && has_mb) {
        ZP_TRY(batch_factor(name, *tbs, *mb, dp, "micro-batch", "gradient_accumulation_steps", notes, gas));
    } else if (has_tbs && has_gas) {
        ZP_TRY(batch_factor(name, *tbs, *gas, dp, "accumulation", "train_micro_batch_size_per_gpu", notes, mb));
    } else if (has_mb) {
        if (!has_gas)
            *gas = 1;
        *tbs = *mb * *gas * dp;
        note(notes, "train_batch_size -> %.0f (micro-batch x accumulation x DP)", *tbs);
    } else if (has_tbs) {
        if (fmod(*tbs, dp) != 0)
            return ZP_FAIL(ZP_EINVAL, "%s: train_batch_size %.0f is not a multiple of the data-parallel degree %.0f",
                           name, *tbs, dp);
        note(notes, "train_micro_batch_size_per_gpu \"auto\"/absent -> the largest that fits and divides %.0f / DP",
             *tbs);
    } else {
        note(notes, "batch sizes \"auto\"/absent -> zplan's default batch (GPT-3's tokens per step for the model's "
                    "size) over the micro-batches that fit");
    }
    return ZP_OK;
}

/* batch sizes: train_batch_size = micro x accumulation x DP; r's global batch and micro-batch where the config
 * fixes them ("auto" or absent: searched). */
static zp_status ds_batch(json_t *root, const char *name, double dp, zp_search_req *r, zp_ds_notes *notes)
{
    double tbs = 0, mb = 0, gas = 0;
    int has_tbs, has_mb, has_gas, a_tbs, a_mb, a_gas;
    ZP_TRY(get_count(root, "train_batch_size", "", 1e15, &tbs, &has_tbs, &a_tbs));
    ZP_TRY(get_count(root, "train_micro_batch_size_per_gpu", "", (double)ZP_MAX_MICRO_BATCH, &mb, &has_mb, &a_mb));
    ZP_TRY(get_count(root, "gradient_accumulation_steps", "", 1e9, &gas, &has_gas, &a_gas));
    has_tbs = has_tbs && !a_tbs;
    has_mb = has_mb && !a_mb;
    has_gas = has_gas && !a_gas;
    ZP_TRY(ds_batch_derive(name, dp, has_tbs, has_mb, has_gas, &tbs, &mb, &gas, notes));
    if (has_tbs || has_mb) {
        r->global_batch = (int64_t)tbs;
        zp_search_req_give(r, ZP_SEARCH_GLOBAL_BATCH);
    }
    if (has_mb || (has_tbs && has_gas)) {
        r->base.micro_batch = (int64_t)mb;
        zp_search_req_give(r, ZP_SEARCH_MICRO_BATCH);
    }
    return ZP_OK;
}

/* A DeepSpeed config's sections, in the order their notes are written. */
static zp_status ds_sections(json_t *root, const char *name, zp_search_req *r, zp_ds_notes *notes)
{
    double dp = 0;
    int contiguous_grads = 1;
    ZP_TRY(check_unknown(root, TOP_KEYS, TOP_READS, "", notes));
    ZP_TRY(ds_parallel(r, notes, &dp));
    ZP_TRY(ds_precision(root, name, r, notes));
    ZP_TRY(ds_data_types(root, name, r));
    ZP_TRY(ds_zero(root, name, r, notes, &contiguous_grads));
    ZP_TRY(ds_activations(root, name, contiguous_grads, r, notes));
    return ds_batch(root, name, dp, r, notes);
}

zp_status zp_dsconfig_parse(const char *text, const char *name, zp_search_req *r, zp_ds_notes *notes)
{
    json_error_t err;
    char *strict;
    ZP_TRY(zp_dsconfig_hjson_to_json(text, &strict));
    json_t *root = json_loads(strict, 0, &err);
    free(strict);
    if (!root)
        return ZP_FAIL(ZP_EINVAL, "%s: not valid JSON or HJSON (line %d: %s)", name, err.line, err.text);
    if (!json_is_object(root)) {
        json_decref(root);
        return ZP_FAIL(ZP_EINVAL, "%s: a DeepSpeed config is a JSON object", name);
    }
    zp_status st = ds_sections(root, name, r, notes);
    json_decref(root);
    return st;
}

zp_status zp_dsconfig_read(const char *path, zp_search_req *r, zp_ds_notes *notes)
{
    char *text = NULL;
    ZP_TRY(zp_io_read_file(path, 16u << 20, &text, NULL));
    zp_status st = zp_dsconfig_parse(text, path, r, notes);
    free(text);
    return st;
}

zp_status zp_dsconfig_check(const zp_plan *p)
{
    const char *no = p->sp                                               ? "Megatron-LM's sequence parallelism (SP)"
                     : zp_plan_recompute(p) == ZP_RECOMPUTE_SELECTIVE    ? "selective recompute"
                     : zp_plan_recompute(p) == ZP_RECOMPUTE_OP           ? "torchtitan's op-level recompute"
                     : p->checkpoint && p->ckpt_every > 1                ? "every k-th block checkpointed"
                     : p->pp > 1 && p->schedule == ZP_PP_INTERLEAVED     ? "the interleaved pipeline schedule"
                     : p->grad_accum_fusion                              ? "gradient accumulation fused into the GEMMs"
                     : p->pp > 1 && p->stage >= 2                        ? "ZeRO-2/3 beside pipeline stages"
                     : p->stage == 3 && !zp_plan_reshards(p)             ? "stage 3 keeping its parameters gathered"
                     : p->shard_group > 0 && p->stage != 3               ? "hybrid sharding at ZeRO stage 2"
                     : p->ep > 1 && p->dispatcher != ZP_DISPATCH_ALLTOALL ? "Megatron-core's or DeepEP's token dispatch "
                                                                           "(DeepSpeed-MoE all-to-alls a copy per token "
                                                                           "and expert)"
                     : p->ep > 1 && p->ep_overlap                        ? "EP all-to-alls beside another micro-batch"
                     : p->shared_overlap                                 ? "the shared experts beside the all-to-alls"
                     : p->act_fp8_store                                  ? "a SwiGLU's input stored as FP8"
                     : zp_plan_moments_saved(p) > 0                     ? "Adam's moments narrower than fp32"
                                                                         : NULL;
    if (no)
        return ZP_FAIL(ZP_EUNSUPPORTED, "the plan runs %s, which DeepSpeed does not (a DeepSpeed config cannot say it): "
                                        "plan with --framework deepspeed",
                       no);
    return ZP_OK;
}

json_t *zp_dsconfig_to_json(const zp_plan *p, int64_t layers)
{
    double tbs = (double)p->micro_batch * (double)p->grad_accum * (double)p->dp;
    json_t *zo = json_pack("{s:i, s:b, s:b, s:I, s:I}", "stage", p->stage, "overlap_comm", p->overlap_comm,
                           "contiguous_gradients", p->md, "reduce_bucket_size", (json_int_t)p->bucket,
                           "allgather_bucket_size", (json_int_t)p->bucket);
    if (p->offload != ZP_OFFLOAD_NONE)
        json_object_set_new(zo, "offload_optimizer", json_pack("{s:s, s:b}", "device",
                                                               p->nvme & ZP_NVME_OPTIMIZER ? "nvme" : "cpu",
                                                               "pin_memory", 1));
    if (p->offload == ZP_OFFLOAD_PARAMS)
        json_object_set_new(zo, "offload_param", json_pack("{s:s, s:b}", "device",
                                                           p->nvme & ZP_NVME_PARAMS ? "nvme" : "cpu", "pin_memory", 1));
    if (p->stage == 3) {
        json_object_set_new(zo, "stage3_max_live_parameters", json_integer((json_int_t)p->stage3_max_live));
        json_object_set_new(zo, "stage3_prefetch_bucket_size", json_integer((json_int_t)p->stage3_prefetch));
        json_object_set_new(zo, "stage3_param_persistence_threshold",
                            json_integer((json_int_t)p->persistence_threshold));
        if (p->shard_group > 0 && p->shard_group < p->dp) /* hybrid sharding: MiCS's groups */
            json_object_set_new(zo, "mics_shard_size", json_integer((json_int_t)p->shard_group));
    }
    /* precision: bf16 (no loss scaling) or fp16 with DeepSpeed's dynamic loss scaler; neither: fp32 */
    json_t *root = json_pack("{s:I, s:I, s:I}", "train_batch_size", (json_int_t)tbs, "train_micro_batch_size_per_gpu",
                             (json_int_t)p->micro_batch, "gradient_accumulation_steps", (json_int_t)p->grad_accum);
    const int half = p->param_bytes == 2.0;
    if (half && p->bf16)
        json_object_set_new(root, "bf16", json_pack("{s:b}", "enabled", 1));
    else
        json_object_set_new(root, "fp16", json_pack("{s:b, s:i, s:i, s:i, s:i}", "enabled", half, "loss_scale", 0,
                                                    "loss_scale_window", 1000, "hysteresis", 2, "min_loss_scale", 1));
    if (half && zp_plan_grad_bytes(p) == 4.0)
        json_object_set_new(root, "data_types", json_pack("{s:s}", "grad_accum_dtype", "fp32"));
    json_object_set_new(root, "zero_optimization", zo);
    json_object_set_new(root, "activation_checkpointing",
                        json_pack("{s:b, s:b, s:b, s:I}", "partition_activations", p->pa || p->pa_cpu,
                                  "cpu_checkpointing", p->pa_cpu, "contiguous_memory_optimization", p->md,
                                  "number_checkpoints", (json_int_t)(p->checkpoint ? layers : 0)));
    return root;
}

zp_status zp_dsconfig_write(const zp_plan *plan, int64_t layers, const char *path)
{
    json_t *j = zp_dsconfig_to_json(plan, layers);
    if (!j)
        return ZP_FAIL(ZP_ENOMEM, "out of memory");
    char *text = json_dumps(j, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    json_decref(j);
    if (!text)
        return ZP_FAIL(ZP_ENOMEM, "out of memory");
    size_t n = strlen(text);
    char *withnl = realloc(text, n + 2);
    if (!withnl) {
        free(text);
        return ZP_FAIL(ZP_ENOMEM, "out of memory");
    }
    withnl[n] = '\n';
    zp_status st = zp_io_write_file(path, withnl, n + 1);
    free(withnl);
    return st;
}
