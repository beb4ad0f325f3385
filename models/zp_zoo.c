#include "zp_zoo.h"

#include <ctype.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "zp_arch.h"
#include "zp_size.h"

#define V ZP_MODEL_DEFAULT_VOCAB
#define S ZP_MODEL_DEFAULT_SEQ
#define ZOO(nm, l, h, a, s, v, pub, src) \
    {{.name = nm, .layers = l, .hidden = h, .heads = a, .seq = s, .vocab = v, .ffn = 4 * (h)}, pub, src, 0}

/* Published models: the family's architecture (zp_arch.h) and the dimensions of its HuggingFace
 * config.json (tests/models/hf/ holds the files; tests/unit/test_models.c checks both against the
 * published counts). seq is the pre-training context. */
#define LLAMA(nm, l, h, a, kv, f, v, s)                                                                        \
    {.name = nm, .layers = l, .hidden = h, .heads = a, .seq = s, .vocab = v, .ffn = f, .kv_heads = kv, ZP_ARCH_LLAMA}
/* Llama 3 (rope_theta 500000 in meta-llama/Meta-Llama-3-8B's config.json) */
#define LLAMA3(nm, l, h, a, kv, f, v, s)                                                                       \
    {.name = nm, .layers = l, .hidden = h, .heads = a, .seq = s, .vocab = v, .ffn = f, .kv_heads = kv,          \
     .rope_theta = 500000, ZP_ARCH_LLAMA}
#define MOE(nm, l, h, a, kv, f, v, s, e, k)                                                                    \
    {.name = nm, .layers = l, .hidden = h, .heads = a, .seq = s, .vocab = v, .ffn = f, .kv_heads = kv,          \
     .experts = e, .top_k = k, .rope_theta = 1e6, ZP_ARCH_LLAMA} /* Mixtral's rope_theta (its config.json) */
/* ng, tg: the config's n_group and topk_group (group-limited routing) */
#define DEEPSEEK(nm, l, h, a, f, v, s, ql, ef, e, k, sh, dense, rb, mtp, ng, tg)                                \
    {.name = nm, .layers = l, .hidden = h, .heads = a, .seq = s, .vocab = v, .ffn = f, .attn = ZP_ATTN_MLA,       \
     .q_lora_rank = ql, .kv_lora_rank = 512, .qk_nope_dim = 128, .qk_rope_dim = 64, .v_head_dim = 128,           \
     .expert_ffn = ef, .experts = e, .top_k = k, .shared_experts = sh, .dense_layers = dense, .router_bias = rb,   \
     .mtp_layers = mtp, .route_groups = ng, .route_topk = tg, ZP_ARCH_LLAMA}

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
    /* ... and of today's architectures: Llama's (GQA 4/2, SwiGLU, RMSNorm, rotary, untied head, no biases) and
     * Mixtral's (4 experts, top-2) */
    {LLAMA("tiny-llama", 2, 64, 4, 2, 176, 512, 64), 158016, "zplan exec test model: Llama layout, l=2 h=64 a=4 kv=2 "
     "f=176 s=64 V=512", 0},
    {MOE("tiny-moe", 2, 64, 4, 2, 128, 512, 64, 4, 2), 287552, "zplan exec test model: Mixtral layout, l=2 h=64 a=4 kv=2, "
     "4 experts of f=128, top-2, s=64 V=512", 189248},
    /* Published models with their exact total (the HF checkpoint's count; sources in test_models.c) and the
     * active count as published: exact for Mixtral 8x7B, rounded elsewhere. DeepSeek's active counts leave
     * out the input embedding (a lookup), Mistral's and Qwen's keep it. */
    {LLAMA("llama-2-7b", 32, 4096, 32, 0, 11008, 32000, 4096), 6738415616.0,
     "Llama 2 7B (Touvron et al. 2023), HF meta-llama/Llama-2-7b-hf", 0},
    {LLAMA("llama-2-13b", 40, 5120, 40, 0, 13824, 32000, 4096), 13015864320.0,
     "Llama 2 13B (Touvron et al. 2023), HF meta-llama/Llama-2-13b-hf", 0},
    {LLAMA("llama-2-70b", 80, 8192, 64, 8, 28672, 32000, 4096), 68976648192.0,
     "Llama 2 70B (Touvron et al. 2023), GQA 8 KV heads, HF meta-llama/Llama-2-70b-hf", 0},
    {LLAMA3("llama-3-8b", 32, 4096, 32, 8, 14336, 128256, 8192), 8030261248.0,
     "Llama 3 8B (Meta 2024), HF meta-llama/Meta-Llama-3-8B", 0},
    {LLAMA3("llama-3-70b", 80, 8192, 64, 8, 28672, 128256, 8192), 70553706496.0,
     "Llama 3 70B (Meta 2024), HF meta-llama/Meta-Llama-3-70B", 0},
    {LLAMA3("llama-3-405b", 126, 16384, 128, 8, 53248, 128256, 8192), 405853388800.0,
     "Llama 3.1 405B (Meta 2024), HF meta-llama/Llama-3.1-405B", 0},
    {LLAMA("mistral-7b", 32, 4096, 32, 8, 14336, 32000, 8192), 7241732096.0,
     "Mistral 7B (Jiang et al. 2023), HF mistralai/Mistral-7B-v0.1", 0},
    {MOE("mixtral-8x7b", 32, 4096, 32, 8, 14336, 32000, 32768, 8, 2), 46702792704.0,
     "Mixtral 8x7B (Jiang et al. 2024), top-2 of 8 experts, HF mistralai/Mixtral-8x7B-v0.1", 12879925248.0},
    {MOE("mixtral-8x22b", 56, 6144, 48, 8, 16384, 32000, 65536, 8, 2), 140620634112.0,
     "Mixtral 8x22B (Mistral AI 2024), top-2 of 8 experts, HF mistralai/Mixtral-8x22B-v0.1", 39e9},
    {{.name = "qwen2-72b", .layers = 80, .hidden = 8192, .heads = 64, .seq = 32768, .vocab = 152064, .ffn = 29568,
      .kv_heads = 8, ZP_ARCH_QWEN2}, 72706203648.0, "Qwen2 72B (Qwen team 2024), QKV biases, HF Qwen/Qwen2-72B", 0},
    {{.name = "qwen1.5-moe-a2.7b", .layers = 24, .hidden = 2048, .heads = 16, .seq = 8192, .vocab = 151936,
      .ffn = 5632, .experts = 60, .top_k = 4, .expert_ffn = 1408, .shared_experts = 1, .shared_ffn = 5632,
      .shared_gate = 1, ZP_ARCH_QWEN2}, 14315784192.0,
     "Qwen1.5-MoE-A2.7B (Qwen team 2024), 4 of 60 experts + shared, HF Qwen/Qwen1.5-MoE-A2.7B", 2.7e9},
    {{.name = "gemma-7b", .layers = 28, .hidden = 3072, .heads = 16, .seq = 8192, .vocab = 256000, .ffn = 24576,
      .head_dim = 256, ZP_ARCH_GEMMA}, 8537680896.0, "Gemma 7B (Google 2024), head size 256, HF google/gemma-7b", 0},
    {{.name = "gemma-2-9b", .layers = 42, .hidden = 3584, .heads = 16, .seq = 8192, .vocab = 256000, .ffn = 14336,
      .kv_heads = 8, .head_dim = 256, .block_norms = 4, ZP_ARCH_GEMMA}, 9241705984.0,
     "Gemma 2 9B (Google 2024), HF google/gemma-2-9b", 0},
    {{.name = "phi-3-mini", .layers = 32, .hidden = 3072, .heads = 32, .seq = 4096, .vocab = 32064, .ffn = 8192,
      ZP_ARCH_PHI3}, 3821079552.0, "Phi-3-mini 3.8B (Microsoft 2024), HF microsoft/Phi-3-mini-4k-instruct", 0},
    {{.name = "falcon-7b", .layers = 32, .hidden = 4544, .heads = 71, .seq = 2048, .vocab = 65024, .ffn = 18176,
      .kv_heads = 1, ZP_ARCH_FALCON}, 6921720704.0, "Falcon-7B (TII 2023), multi-query, HF tiiuae/falcon-7b", 0},
    {{.name = "falcon-40b", .layers = 60, .hidden = 8192, .heads = 128, .seq = 2048, .vocab = 65024, .ffn = 32768,
      .kv_heads = 8, .nobias = ZP_BIAS_ALL, .pos = ZP_POS_ROTARY, .parallel = 1, .block_norms = 2}, 41303293952.0,
     "Falcon-40B (TII 2023), 8 KV heads, two norms, HF tiiuae/falcon-40b", 0},
    {{.name = "gpt-neox-20b", .layers = 44, .hidden = 6144, .heads = 64, .seq = 2048, .vocab = 50432, .ffn = 24576,
      ZP_ARCH_NEOX}, 20554567680.0, "GPT-NeoX-20B (Black et al. 2022), HF EleutherAI/gpt-neox-20b", 0},
    {{.name = "gpt-j-6b", .layers = 28, .hidden = 4096, .heads = 16, .seq = 2048, .vocab = 50400, .ffn = 16384,
      ZP_ARCH_GPTJ}, 6050882784.0, "GPT-J-6B (Wang and Komatsuzaki 2021), HF EleutherAI/gpt-j-6b", 0},
    {{.name = "bloom-176b", .layers = 70, .hidden = 14336, .heads = 112, .seq = 2048, .vocab = 250880, .ffn = 57344,
      ZP_ARCH_BLOOM}, 176247271424.0, "BLOOM 176B (BigScience 2022), ALiBi, HF bigscience/bloom", 0},
    {DEEPSEEK("deepseek-v2-lite", 27, 2048, 16, 10944, 102400, 4096, 0, 1408, 64, 6, 2, 1, 0, 0, 1, 1), 15706484224.0,
     "DeepSeek-V2-Lite (DeepSeek-AI 2024), MLA, 6 of 64 experts + 2 shared, HF deepseek-ai/DeepSeek-V2-Lite",
     2.4e9},
    {DEEPSEEK("deepseek-v2", 60, 5120, 128, 12288, 102400, 4096, 1536, 1536, 160, 6, 2, 1, 0, 0, 8, 3), 235741434880.0,
     "DeepSeek-V2 (DeepSeek-AI 2024), MLA, 6 of 160 experts + 2 shared, HF deepseek-ai/DeepSeek-V2",
     21e9},
    {DEEPSEEK("deepseek-v3", 61, 7168, 128, 18432, 129280, 4096, 1536, 2048, 256, 8, 1, 3, 1, 1, 8, 4), 671026419200.0,
     "DeepSeek-V3 (DeepSeek-AI 2024), MLA, 8 of 256 experts + 1 shared, 1 MTP module, HF deepseek-ai/DeepSeek-V3",
     37e9},
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
        const char last = spec[strlen(spec) - 1];
        if (isdigit((unsigned char)last) || last == '.')
            return ZP_FAIL(ZP_EINVAL, "--model: '%s' is a number without a unit: give the parameters with one "
                                      "(%sB for billions, %sM for millions), a zoo name or a config.json",
                           spec, spec, spec);
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
        if (o == ZP_MODEL_FROM_FILE && out->seq != seq)
            snprintf(out->seq_note, sizeof out->seq_note, "sequence %lld: --seq (the config gave %lld)",
                     (long long)seq, (long long)out->seq);
        out->seq = seq;
        ZP_TRY(zp_model_validate(out));
    }
    if (origin)
        *origin = o;
    return ZP_OK;
}

const char *zp_model_family(const zp_model *m)
{
    if (m->family)
        return m->family;
    /* the zoo's published models by their names' prefix, as HuggingFace's model_type names the family */
    static const struct {
        const char *prefix, *family;
    } names[] = {{"llama", "llama"},         {"mistral", "mistral"},   {"mixtral", "mixtral"},
                 {"qwen1.5-moe", "qwen2_moe"}, {"qwen2", "qwen2"},       {"gemma-2", "gemma2"},
                 {"gemma", "gemma"},         {"phi-3", "phi3"},        {"falcon", "falcon"},
                 {"gpt-neox", "gpt_neox"},   {"gpt-j", "gptj"},        {"bloom", "bloom"},
                 {"deepseek-v2", "deepseek_v2"}, {"deepseek-v3", "deepseek_v3"}, {"opt", "opt"},
                 {"gpt2", "gpt2"},           {"tiny-llama", "llama"},  {"tiny-moe", "mixtral"}};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strncmp(m->name, names[i].prefix, strlen(names[i].prefix)) == 0)
            return names[i].family;
    return "gpt"; /* the ZeRO paper's and Megatron-LM's GPT shapes, and models generated from a size */
}
