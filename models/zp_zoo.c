#include "zp_zoo.h"

#include <ctype.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include <jansson.h>

#include "zp_io.h"
#include "zp_size.h"

#define V ZP_MODEL_DEFAULT_VOCAB
#define S ZP_MODEL_DEFAULT_SEQ
#define ZOO(nm, l, h, a, s, v, pub, src) \
    {{.name = nm, .layers = l, .hidden = h, .heads = a, .seq = s, .vocab = v, .ffn = 4 * (h)}, pub, src}

static const char ZERO_EXP[] = "ZeRO paper (Rajbhandari et al. SC'20), Table 4 experiment configuration";
static const char ZERO_FIG[] = "ZeRO paper, Figure 3/4 and Table 4 model sizes";

/* Heads of the Figure-3/4 sizes are not given in the paper: 1920 uses 16 heads (head size 120) and
 * 2304 uses 24 (head size 96), the usual head sizes of that era. */
static const zp_zoo_entry g_zoo[] = {
    ZOO("1.5B", 48, 1600, 16, S, V, 1.5576e9, ZERO_EXP), /* GPT-2 XL shape: published 1,557,611,200 */
    ZOO("8B", 72, 3072, 24, S, V, 8.3e9, ZERO_EXP),      /* Megatron-LM 8.3B shape */
    ZOO("20B", 98, 4096, 32, S, V, 20e9, ZERO_EXP),
    ZOO("40B", 88, 6144, 32, S, V, 40e9, ZERO_EXP),
    ZOO("60B", 132, 6144, 32, S, V, 60e9, ZERO_EXP),
    ZOO("80B", 100, 8192, 64, S, V, 80e9, ZERO_EXP),
    ZOO("100B", 125, 8192, 64, S, V, 100e9, ZERO_EXP),
    ZOO("120B", 150, 8192, 64, S, V, 120e9, ZERO_EXP),
    ZOO("140B", 175, 8192, 64, S, V, 140e9, ZERO_EXP),
    ZOO("170B", 212, 8192, 64, S, V, 170e9, ZERO_EXP),
    ZOO("1.16B", 24, 1920, 16, S, V, 1.16e9, ZERO_FIG),
    ZOO("1.6B", 34, 1920, 16, S, V, 1.6e9, ZERO_FIG),
    ZOO("2.5B", 54, 1920, 16, S, V, 2.5e9, ZERO_FIG),
    ZOO("4B", 64, 2304, 24, S, V, 4.2e9, ZERO_FIG),
    ZOO("6B", 52, 3072, 24, S, V, 6e9, ZERO_FIG),
    ZOO("10B", 50, 4096, 32, S, V, 10.3e9, ZERO_FIG),
    ZOO("11B", 54, 4096, 32, S, V, 11.1e9, ZERO_FIG),
    ZOO("12B", 58, 4096, 32, S, V, 11.9e9, ZERO_FIG),
    ZOO("13B", 62, 4096, 32, S, V, 12.7e9, ZERO_FIG),
    ZOO("60B-h8192", 75, 8192, 64, S, V, 60e9, ZERO_FIG),
    ZOO("gpt2-1.5B", 48, 1600, 25, S, V, 1.5576e9, "GPT-2 XL (Radford et al. 2019), 1,557,611,200 parameters"),
    ZOO("megatron-8.3B", 72, 3072, 32, S, 51200, 8.3e9, "Megatron-LM (Shoeybi et al. 2019), vocab padded to 51200"),
    ZOO("turing-nlg-17B", 78, 4256, 28, S, V, 17.2e9, "Turing-NLG (Microsoft, 2020)"),
    ZOO("gpt3-175B", 96, 12288, 96, 2048, V, 175e9, "GPT-3 (Brown et al. 2020), Table 2.1"),
    ZOO("1T", 128, 25600, 160, 2048, 51200, 1.008e12, "Megatron-LM 1T (Narayanan et al. 2021), Table 1"),
    /* Small decoders for `zplan exec` on a CPU (seconds per step); the count is the formula's. */
    ZOO("tiny", 2, 64, 4, 64, 512, 136960, "zplan exec test model: l=2 h=64 a=4 s=64 V=512"),
    ZOO("mini", 4, 128, 4, 128, 2048, 1071872, "zplan exec model: l=4 h=128 a=4 s=128 V=2048"),
    ZOO("small", 4, 256, 8, 128, 4096, 4240896, "zplan exec model: l=4 h=256 a=8 s=128 V=4096"),
};

int zp_zoo_count(void) { return (int)(sizeof g_zoo / sizeof g_zoo[0]); }

const zp_zoo_entry *zp_zoo_get(int i)
{
    return (i >= 0 && i < zp_zoo_count()) ? &g_zoo[i] : NULL;
}

const zp_zoo_entry *zp_zoo_find(const char *name)
{
    for (int i = 0; i < zp_zoo_count(); i++)
        if (strcasecmp(g_zoo[i].model.name, name) == 0)
            return &g_zoo[i];
    return NULL;
}

/* The paper's size classes: hidden size and heads by parameter count (upper bound inclusive). */
static const struct {
    double max_params;
    int64_t hidden, heads;
} g_classes[] = {
    {0.2e9, 768, 12},      /* GPT-2 small/medium range */
    {0.6e9, 1024, 16},     /* GPT-2 medium, 350M */
    {1.0e9, 1280, 20},     /* GPT-2 large, 774M */
    {3.0e9, 1920, 16},     /* ZeRO Fig. 3: 1.16B-2.5B */
    {5.0e9, 2304, 24},     /* ZeRO Fig. 3: 4B */
    {9.0e9, 3072, 24},     /* ZeRO: 6B-8B */
    {30e9, 4096, 32},      /* ZeRO: 10B-20B */
    {60e9, 6144, 32},      /* ZeRO: 40B-60B */
    {200e9, 8192, 64},     /* ZeRO: 80B-170B */
    {600e9, 12288, 96},    /* GPT-3 175B width */
    {HUGE_VAL, 25600, 160} /* Megatron 1T width */
};

zp_status zp_model_from_size(double params, zp_model *out)
{
    if (!(params > 0))
        return ZP_FAIL(ZP_EINVAL, "model size must be positive");
    if (params < 1)
        return ZP_FAIL(ZP_EINVAL, "model size %.3g: a model has at least one parameter", params);
    if (params > ZP_MODEL_MAX_PARAMS)
        return ZP_FAIL(ZP_ERANGE, "model size %.3g parameters is beyond what zplan accepts (at most %.0e)", params,
                       ZP_MODEL_MAX_PARAMS);
    size_t c = 0;
    while (params > g_classes[c].max_params)
        c++;
    int64_t h = g_classes[c].hidden;
    double l = round(params / (12.0 * (double)h * (double)h));
    if (l < 1)
        l = 1;
    /* Near the limit the embeddings can push round(params / 12h^2) blocks just past it: one block less. */
    zp_model probe = {.layers = (int64_t)l, .hidden = h, .heads = g_classes[c].heads, .seq = S, .vocab = V,
                      .ffn = 4 * h};
    while (probe.layers > 1 && zp_model_params(&probe) > ZP_MODEL_MAX_PARAMS)
        probe.layers--;
    l = (double)probe.layers;
    char name[32];
    zp_size_format(params, name, sizeof name);
    return zp_model_init(out, name, (int64_t)l, h, g_classes[c].heads, S, V, 4 * h);
}

/* Integer value of the first of `keys` present in `obj`; 0 when none. */
static zp_status hf_int(json_t *obj, const char *path, const char *const keys[], int64_t *out, int required)
{
    for (int i = 0; keys[i]; i++) {
        json_t *v = json_object_get(obj, keys[i]);
        if (!v || json_is_null(v))
            continue;
        if (json_is_integer(v)) {
            *out = json_integer_value(v);
        } else if (json_is_real(v) && json_real_value(v) == floor(json_real_value(v)) &&
                   fabs(json_real_value(v)) < 9e15) {
            *out = (int64_t)json_real_value(v);
        } else {
            return ZP_FAIL(ZP_EINVAL, "%s: key \"%s\" must be an integer", path, keys[i]);
        }
        if (*out <= 0)
            return ZP_FAIL(ZP_EINVAL, "%s: key \"%s\" must be positive (got %lld)", path, keys[i],
                           (long long)*out);
        return ZP_OK;
    }
    if (required)
        return ZP_FAIL(ZP_EINVAL, "%s: missing key \"%s\"", path, keys[0]);
    *out = 0;
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

zp_status zp_model_from_hf_json(const char *text, const char *path, zp_model *out)
{
    if (!text)
        return ZP_FAIL(ZP_EINVAL, "%s: no text", path ? path : "config.json");
    if (!path)
        path = "config.json";
    json_error_t err;
    json_t *root = json_loads(text, 0, &err);
    if (!root)
        return ZP_FAIL(ZP_EINVAL, "%s: not valid JSON (line %d, column %d: %s)", path, err.line, err.column,
                       err.text);
    if (!json_is_object(root)) {
        json_decref(root);
        return ZP_FAIL(ZP_EINVAL, "%s: a HuggingFace config.json must be a JSON object", path);
    }
    static const char *const k_layers[] = {"n_layer", "num_hidden_layers", "num_layers", "n_layers", NULL};
    static const char *const k_hidden[] = {"n_embd", "hidden_size", "d_model", NULL};
    static const char *const k_heads[] = {"n_head", "num_attention_heads", "n_heads", NULL};
    static const char *const k_vocab[] = {"vocab_size", NULL};
    static const char *const k_seq[] = {"n_positions", "max_position_embeddings", "n_ctx", "seq_length", NULL};
    static const char *const k_ffn[] = {"n_inner", "intermediate_size", "ffn_hidden_size", NULL};
    int64_t l, h, a, v, s, f;
    zp_status st = hf_int(root, path, k_layers, &l, 1);
    if (st == ZP_OK)
        st = hf_int(root, path, k_hidden, &h, 1);
    if (st == ZP_OK)
        st = hf_int(root, path, k_heads, &a, 1);
    if (st == ZP_OK)
        st = hf_int(root, path, k_vocab, &v, 0);
    if (st == ZP_OK)
        st = hf_int(root, path, k_seq, &s, 0);
    if (st == ZP_OK)
        st = hf_int(root, path, k_ffn, &f, 0);
    json_decref(root);
    if (st != ZP_OK)
        return st;
    const int64_t lim = INT32_MAX; /* as zp_model_validate, and before 4h is computed */
    if (l > lim || h > lim || a > lim || v > lim || s > lim || f > lim)
        return ZP_FAIL(ZP_ERANGE, "%s: a dimension exceeds 2^31-1", path);
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    char name[ZP_MODEL_NAME_LEN];
    utf8_name(base, name, sizeof name);
    return zp_model_init(out, name, l, h, a, s ? s : S, v ? v : V, f ? f : 4 * h);
}

zp_status zp_model_from_hf_config(const char *path, zp_model *out)
{
    char *text = NULL;
    ZP_TRY(zp_io_read_file(path, 16u << 20, &text, NULL));
    zp_status st = zp_model_from_hf_json(text, path, out);
    free(text);
    return st;
}

static int looks_like_size(const char *spec)
{
    /* digits, at most one '.', optional exponent, then letters: "37B", "1.2T", "350M", "1e21" */
    const char *p = spec;
    if (*p == '-' || *p == '+')
        return 1; /* let the size parser explain the sign */
    if (!isdigit((unsigned char)*p) && *p != '.')
        return 0;
    while (*p && (isdigit((unsigned char)*p) || *p == '.' || *p == 'e' || *p == 'E' ||
                  ((*p == '-' || *p == '+') && (p[-1] == 'e' || p[-1] == 'E'))))
        p++;
    while (*p && isalpha((unsigned char)*p))
        p++;
    return *p == '\0';
}

zp_status zp_model_resolve(const char *spec, int64_t seq, zp_model *out, zp_model_origin *origin)
{
    if (spec == NULL || *spec == '\0')
        return ZP_FAIL(ZP_EINVAL, "--model: empty value (a zoo name such as 100B, a size such as 37B, or a "
                                  "config.json path)");
    zp_model_origin o;
    const zp_zoo_entry *e = zp_zoo_find(spec);
    struct stat sb;
    if (e) {
        *out = e->model;
        o = ZP_MODEL_FROM_ZOO;
    } else if (strchr(spec, '/') || strstr(spec, ".json") || stat(spec, &sb) == 0) {
        ZP_TRY(zp_model_from_hf_config(spec, out));
        o = ZP_MODEL_FROM_FILE;
    } else if (looks_like_size(spec)) {
        double p;
        ZP_TRY(zp_size_parse(spec, "--model", &p));
        ZP_TRY(zp_model_from_size(p, out));
        o = ZP_MODEL_FROM_SIZE;
    } else {
        return ZP_FAIL(ZP_EINVAL,
                       "--model: unknown model '%s' (not in the zoo — see `zplan models` —, not a size such as "
                       "37B, and no such config.json)",
                       spec);
    }
    if (seq > 0) {
        out->seq = seq;
        ZP_TRY(zp_model_validate(out));
    }
    if (origin)
        *origin = o;
    return ZP_OK;
}
