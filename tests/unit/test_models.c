/* models/: parameter counts of the zoo, the FLOPs formula, sizes and HuggingFace configs. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "zp_model.h"
#include "zp_size.h"
#include "zp_zoo.h"

#ifndef ZP_HF_DIR
#define ZP_HF_DIR "tests/models/hf"
#endif

Test(models, zoo_matches_published_sizes)
{
    cr_assert_geq(zp_zoo_count(), 25);
    for (int i = 0; i < zp_zoo_count(); i++) {
        const zp_zoo_entry *e = zp_zoo_get(i);
        double p = zp_model_params(&e->model);
        cr_expect_leq(fabs(p - e->published_params) / e->published_params, 0.02, "%s: %.4g vs published %.4g",
                      e->model.name, p, e->published_params);
        cr_expect_eq(zp_model_validate(&e->model), ZP_OK, "%s invalid", e->model.name);
    }
}

Test(models, zoo_has_every_paper_configuration)
{
    const char *names[] = {"1.5B", "8B", "20B", "40B", "60B", "80B", "100B", "120B", "140B", "170B",
                           "gpt2-1.5B", "megatron-8.3B", "turing-nlg-17B", "gpt3-175B", "1T", "1.16B", "2.5B",
                           "4B", "6B", "10B", "13B"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        cr_expect_not_null(zp_zoo_find(names[i]), "missing %s", names[i]);
    const zp_zoo_entry *e = zp_zoo_find("100b");
    cr_assert_not_null(e);
    cr_expect_eq(e->model.layers, 125);
    cr_expect_eq(e->model.hidden, 8192);
    cr_expect_eq(e->model.heads, 64);
}

Test(models, exact_parameter_count_gpt2_xl)
{
    /* GPT-2 XL: 1,557,611,200 parameters with V = 50257, s = 1024, l = 48, h = 1600. */
    const zp_zoo_entry *e = zp_zoo_find("gpt2-1.5B");
    cr_assert_not_null(e);
    cr_expect_eq(zp_model_params(&e->model), 1557611200.0);
    cr_expect_eq(zp_model_params_layer(&e->model), 12.0 * 1600 * 1600 + 13.0 * 1600);
    cr_expect_eq(zp_model_params_largest_layer(&e->model), 50257.0 * 1600); /* the embedding */
}

Test(models, flops_hand_computed)
{
    /* l = 2, h = 4, a = 2, s = 8, V = 10, B = 3 with recompute:
     * 96*B*s*l*h^2*(1 + s/6h + V/16lh) = 96*3*8*2*16*(1 + 8/24 + 10/128) = 73728 * 1.411458333 = 104064 */
    zp_model m;
    cr_assert_eq(zp_model_init(&m, "t", 2, 4, 2, 8, 10, 0), ZP_OK);
    cr_expect_float_eq(zp_model_flops_iteration(&m, 3, 1), 104064.0, 1e-9);
    /* by hand, per block forward: 2*B*s*12h^2 + 4*B*s^2*h = 2*24*192 + 4*3*64*4 = 9216 + 3072 = 12288;
     * logits 2*B*s*h*V = 1920; without recompute 3*(2*12288) + 3*1920 = 79488 */
    cr_expect_float_eq(zp_model_flops_forward_layer(&m, 3), 12288.0, 1e-12);
    cr_expect_float_eq(zp_model_flops_forward_logits(&m, 3), 1920.0, 1e-12);
    cr_expect_float_eq(zp_model_flops_iteration(&m, 3, 0), 79488.0, 1e-12);
}

Test(models, flops_formula_on_100B)
{
    const zp_model *m = &zp_zoo_find("100B")->model;
    double B = 800, s = 1024, l = 125, h = 8192, V = 50257;
    double ref = 96 * B * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h));
    cr_expect_leq(fabs(zp_model_flops_iteration(m, B, 1) - ref) / ref, 1e-12);
}

Test(models, activations_korthikanti)
{
    zp_model m;
    cr_assert_eq(zp_model_init(&m, "t", 1, 1024, 16, 2048, 50257, 0), ZP_OK);
    double sbh = 2048.0 * 4 * 1024;
    cr_expect_float_eq(zp_model_activation_bytes_layer(&m, 4, 1), sbh * (34 + 5.0 * 16 * 2048 / 1024), 1e-9);
    cr_expect_float_eq(zp_model_activation_bytes_layer(&m, 4, 8), sbh * (10 + 3 + 5.0 * 16 * 2048 / (1024 * 8)),
                       1e-9);
    cr_expect_float_eq(zp_model_checkpoint_bytes_layer(&m, 4), 2 * sbh, 1e-12);
}

Test(models, from_size)
{
    zp_model m;
    zp_model_origin o;
    cr_assert_eq(zp_model_resolve("37B", 0, &m, &o), ZP_OK);
    cr_expect_eq(o, ZP_MODEL_FROM_SIZE);
    cr_expect_eq(m.hidden, 6144);
    cr_expect_eq(m.layers, 82); /* round(37e9 / (12 * 6144^2)) = round(81.7) */
    cr_expect_leq(fabs(zp_model_params(&m) - 37e9) / 37e9, 0.02);
    cr_assert_eq(zp_model_resolve("350M", 0, &m, &o), ZP_OK);
    cr_expect_eq(m.hidden, 1024);
    cr_assert_eq(zp_model_resolve("1.2T", 0, &m, &o), ZP_OK);
    cr_expect_eq(m.hidden, 25600);
    cr_expect_leq(fabs(zp_model_params(&m) - 1.2e12) / 1.2e12, 0.02);
    cr_assert_eq(zp_model_resolve("100B", 2048, &m, &o), ZP_OK);
    cr_expect_eq(o, ZP_MODEL_FROM_ZOO);
    cr_expect_eq(m.seq, 2048);
}

Test(models, bad_specs)
{
    zp_model m;
    const char *bad[] = {"-5B", "1e400B", "abc", "", "5Q", "0B", "1e30B", "nan", "inf", "0x10B"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        zp_status st = zp_model_resolve(bad[i], 0, &m, NULL);
        cr_expect_neq(st, ZP_OK, "'%s' accepted", bad[i]);
        cr_expect_eq(zp_status_exit_code(st), 2, "'%s' not a usage error", bad[i]);
        cr_expect_gt(strlen(zp_error_message()), 10);
    }
    /* a bare number has no unit: 70 is neither 70 parameters nor 70B (it planned a 46.5M model) */
    const char *bare[] = {"70", "1.5", "1e9", "0"};
    for (size_t i = 0; i < sizeof bare / sizeof bare[0]; i++) {
        cr_expect_eq(zp_model_resolve(bare[i], 0, &m, NULL), ZP_EINVAL, "'%s' accepted", bare[i]);
        cr_expect(strstr(zp_error_message(), "without a unit"), "%s", zp_error_message());
    }
}

static char *write_tmp(const char *text)
{
    static char path[64];
    strcpy(path, "/tmp/zp_hf_XXXXXX.json");
    int fd = mkstemps(path, 5);
    cr_assert_geq(fd, 0);
    cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    return path;
}

Test(models, hf_config_gpt2_neox_llama)
{
    zp_model m;
    char *p = write_tmp("{\"model_type\":\"gpt2\",\"n_layer\":48,\"n_embd\":1600,\"n_head\":25,"
                        "\"vocab_size\":50257,\"n_positions\":1024,\"n_inner\":null}");
    cr_assert_eq(zp_model_resolve(p, 0, &m, NULL), ZP_OK, "%s", zp_error_message());
    cr_expect_eq(zp_model_params(&m), 1557611200.0);
    unlink(p);
    /* without model_type, GPT-2's own keys are unambiguous */
    p = write_tmp("{\"n_layer\":48,\"n_embd\":1600,\"n_head\":25,\"vocab_size\":50257,\"n_positions\":1024}");
    cr_assert_eq(zp_model_from_hf_config(p, &m), ZP_OK, "%s", zp_error_message());
    cr_expect_eq(zp_model_params(&m), 1557611200.0);
    unlink(p);
    p = write_tmp("{\"model_type\":\"gpt_neox\",\"num_hidden_layers\":44,\"hidden_size\":6144,"
                  "\"num_attention_heads\":64,\"vocab_size\":50432,\"max_position_embeddings\":2048,"
                  "\"intermediate_size\":24576}");
    cr_assert_eq(zp_model_from_hf_config(p, &m), ZP_OK, "%s", zp_error_message());
    cr_expect_eq(m.layers, 44);
    cr_expect_eq(m.ffn, 24576);
    cr_expect_eq(m.seq, 2048);
    cr_expect_eq(zp_model_params(&m), 20554567680.0); /* GPT-NeoX-20B: untied, biases, parallel block */
    unlink(p);
    p = write_tmp("{\"model_type\":\"llama\",\"num_hidden_layers\":32,\"hidden_size\":4096,"
                  "\"num_attention_heads\":32,\"vocab_size\":32000,\"max_position_embeddings\":4096,"
                  "\"intermediate_size\":11008}");
    cr_assert_eq(zp_model_from_hf_config(p, &m), ZP_OK);
    cr_expect_eq(m.ffn, 11008);
    cr_expect_eq(m.vocab, 32000);
    cr_expect_eq(zp_model_params(&m), 6738415616.0); /* Llama-2-7B */
    unlink(p);
    /* the same keys without model_type: llama, neox and opt read them alike and size them differently */
    p = write_tmp("{\"num_hidden_layers\":32,\"hidden_size\":4096,\"num_attention_heads\":32,"
                  "\"intermediate_size\":11008}");
    cr_expect_eq(zp_model_from_hf_config(p, &m), ZP_EINVAL);
    cr_expect_not_null(strstr(zp_error_message(), "model_type"), "%s", zp_error_message());
    unlink(p);
}

Test(models, hf_config_bad)
{
    const char *bad[] = {"{", "[]", "{\"n_layer\":2}", "{\"n_layer\":-2,\"n_embd\":8,\"n_head\":2}",
                         "{\"n_layer\":\"two\",\"n_embd\":8,\"n_head\":2}", "{\"n_layer\":2,\"n_embd\":8,\"n_head\":3}",
                         "", "{\"n_layer\":2.5,\"n_embd\":8,\"n_head\":2}"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        zp_model m;
        char *p = write_tmp(bad[i]);
        zp_status st = zp_model_from_hf_config(p, &m);
        cr_expect_eq(zp_status_exit_code(st), 2, "config '%s' accepted", bad[i]);
        unlink(p);
    }
    zp_model m;
    cr_expect_eq(zp_model_from_hf_config("/nonexistent/config.json", &m), ZP_ENOENT);
    cr_expect_eq(zp_model_from_hf_config("/tmp", &m), ZP_EINVAL);
}

/* DeepSeek's group-limited routing keys: read together; one without the other, or groups that do not divide
 * the experts or hold top_k, are refused. */
Test(models, hf_route_groups)
{
    const char *head = "{\"model_type\":\"deepseek_v3\",\"num_hidden_layers\":4,\"hidden_size\":256,"
                       "\"num_attention_heads\":4,\"intermediate_size\":512,\"vocab_size\":1000,"
                       "\"max_position_embeddings\":1024,\"moe_intermediate_size\":64,\"n_routed_experts\":32,"
                       "\"num_experts_per_tok\":4,\"n_shared_experts\":1,\"q_lora_rank\":64,\"kv_lora_rank\":32,"
                       "\"qk_nope_head_dim\":16,\"qk_rope_head_dim\":8,\"v_head_dim\":16";
    static const struct {
        const char *tail;
        int ok;
        int64_t groups, topk;
    } c[] = {{",\"n_group\":8,\"topk_group\":2}", 1, 8, 2}, {"}", 1, 0, 0},
             {",\"n_group\":8}", 0, 0, 0},                    {",\"n_group\":6,\"topk_group\":2}", 0, 0, 0},
             {",\"n_group\":32,\"topk_group\":2}", 0, 0, 0}};
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        char text[1024];
        snprintf(text, sizeof text, "%s%s", head, c[i].tail);
        char *p = write_tmp(text);
        zp_model m;
        zp_status st = zp_model_resolve(p, 0, &m, NULL);
        if (c[i].ok) {
            cr_expect_eq(st, ZP_OK, "%s: %s", c[i].tail, zp_error_message());
            cr_expect_eq(m.route_groups, c[i].groups, "%s", c[i].tail);
            cr_expect_eq(m.route_topk, c[i].topk, "%s", c[i].tail);
        } else {
            cr_expect_eq(zp_status_exit_code(st), 2, "%s accepted", c[i].tail);
        }
        unlink(p);
    }
}

Test(sizes, suffixes)
{
    double v;
    cr_assert_eq(zp_size_parse("32G", "x", &v), ZP_OK);
    cr_expect_eq(v, 32e9);
    cr_assert_eq(zp_size_parse("1.5B", "x", &v), ZP_OK);
    cr_expect_eq(v, 1.5e9);
    cr_assert_eq(zp_size_parse("500M", "x", &v), ZP_OK);
    cr_expect_eq(v, 5e8);
    cr_assert_eq(zp_size_parse("1K", "x", &v), ZP_OK);
    cr_expect_eq(v, 1e3);
    cr_assert_eq(zp_size_parse("32GiB", "x", &v), ZP_OK);
    cr_expect_eq(v, 32.0 * (1 << 30));
    cr_assert_eq(zp_size_parse("32GB", "x", &v), ZP_OK);
    cr_expect_eq(v, 32e9);
    int64_t n;
    cr_expect_eq(zp_size_parse_int("1M", "x", 1, 100000000, &n), ZP_OK);
    cr_expect_eq(n, 1000000);
    cr_expect_eq(zp_size_parse_int("2.5", "x", 1, 100, &n), ZP_EINVAL);
    cr_expect_eq(zp_size_parse_int("0", "x", 1, 100, &n), ZP_EINVAL);
    cr_expect_eq(zp_size_parse_int("1e9", "x", 1, 100, &n), ZP_ERANGE);
    cr_expect_eq(zp_size_parse_range("2.5", "x", 0, 3600, &v), ZP_OK);
    cr_expect_eq(v, 2.5);
    cr_expect_eq(zp_size_parse_range("0", "x", 0, 3600, &v), ZP_OK);
    cr_expect_eq(zp_size_parse_range("3601", "x", 0, 3600, &v), ZP_ERANGE);
    cr_expect_eq(zp_size_parse_range("0.5", "x", 1, 10, &v), ZP_ERANGE);
    cr_expect_neq(zp_size_parse_range("-1", "x", -5, 5, &v), ZP_OK); /* signs are refused as in zp_size_parse */
    cr_expect_neq(zp_size_parse("", "x", &v), ZP_OK);
    cr_expect_neq(zp_size_parse("12X", "x", &v), ZP_OK);
    cr_expect_neq(zp_size_parse("1e999", "x", &v), ZP_OK);
}

/* ---- Architectures: published config.json files and their published parameter counts ---------- */

/* Each fixture is the model's config.json as published on the HuggingFace hub. Expected totals, and where
 * they come from (a bf16/fp16 checkpoint's model.safetensors.index.json "total_size" is 2 bytes a
 * parameter):
 *  - Llama-2-7B 6,738,415,616 and Llama-2-70B 68,976,648,192: transformers' num_parameters() of
 *    meta-llama/Llama-2-{7b,70b}-hf as reported by the model catalogues (issue #13 quotes the 70B);
 *  - Llama-3-8B and Llama-3.1-8B 8,030,261,248: Meta-Llama-3-8B's index total_size 16,060,522,496 / 2;
 *  - Llama-3.2-1B 1,235,814,400 (tied embeddings, head_dim 64): the HF safetensors total;
 *  - Mistral-7B-v0.1 7,241,732,096: index total_size 14,483,464,192 / 2;
 *  - Mixtral-8x7B-v0.1 46,702,792,704 total (index total_size 93,405,585,408 / 2), 12,879,925,248 active
 *    (issue #13; Mistral AI's 12.9B);
 *  - Qwen2-7B 7,615,616,512 (index total_size 15,231,233,024 / 2); Qwen2-0.5B 494,032,768 (tied);
 *  - Qwen1.5-MoE-A2.7B 14,315,784,192 total (keras-hub preset "params"), 2.7B active (its name);
 *  - Gemma-7B 8,537,680,896 and Gemma-2-9B 9,241,705,984: keras-hub presets and the HF safetensors totals;
 *  - Phi-3-mini-4k 3,821,079,552: keras-hub preset and the HF safetensors total;
 *  - Falcon-7B 6,921,720,704 and Falcon-40B 41,303,293,952: the HF hub totals 7,217,189,760 and
 *    41,835,970,560 count the checkpoint, which stores the tied LM head a second time (65024 x h):
 *    7,217,189,760 - 65024 x 4544 and 41,835,970,560 - 65024 x 8192;
 *  - GPT-NeoX-20B 20,554,567,680: the GPT-NeoX README (n_parameters);
 *  - GPT-J-6B 6,050,882,784: transformers' count of EleutherAI/gpt-j-6b (the card's 6,053,381,344 counts
 *    the original JAX checkpoint);
 *  - GPT-2 124,439,808: the 124M checkpoint (498 MB of fp32);
 *  - OPT-125m 125,239,296 and OPT-350m 331,196,416 (projected 512-wide embedding, post-LN): transformers'
 *    counts of facebook/opt-{125m,350m};
 *  - BLOOM-560m 559,214,592: the HF safetensors F16 parameter count (huggingface_hub's tests);
 *  - DeepSeek-V2-Lite 15,706,484,224 (plain Q projection: q_lora_rank null): the checkpoint's count;
 *    2.4B activated (DeepSeek, without the 0.2B input embedding);
 *  - DeepSeek-V3 671,026,419,200: the main model's checkpoint tensors (README_WEIGHTS.md: 671B; the
 *    e_score_correction_bias of the 58 MoE layers included, as DeepSeek's modeling_deepseek.py holds it),
 *    37B activated (README) and an MTP module of 11.5B unique parameters besides (README_WEIGHTS.md). */
static const struct {
    const char *file;
    double total, active; /* active 0: dense */
} g_hf_cases[] = {
    {"llama-2-7b.json", 6738415616.0, 0},
    {"llama-2-70b.json", 68976648192.0, 0},
    {"llama-3-8b.json", 8030261248.0, 0},
    {"llama-3.1-8b.json", 8030261248.0, 0},
    {"llama-3.2-1b.json", 1235814400.0, 0},
    {"mistral-7b.json", 7241732096.0, 0},
    {"mixtral-8x7b.json", 46702792704.0, 12879925248.0},
    {"qwen2-7b.json", 7615616512.0, 0},
    {"qwen2-0.5b.json", 494032768.0, 0},
    {"qwen1.5-moe-a2.7b.json", 14315784192.0, 2689173504.0},
    {"gemma-7b.json", 8537680896.0, 0},
    {"gemma-2-9b.json", 9241705984.0, 0},
    {"phi-3-mini-4k.json", 3821079552.0, 0},
    {"falcon-7b.json", 7217189760.0 - 65024.0 * 4544, 0},
    {"falcon-40b.json", 41835970560.0 - 65024.0 * 8192, 0},
    {"gpt-neox-20b.json", 20554567680.0, 0},
    {"gpt-j-6b.json", 6050882784.0, 0},
    {"gpt2.json", 124439808.0, 0},
    {"opt-125m.json", 125239296.0, 0},
    {"opt-350m.json", 331196416.0, 0},
    {"bloom-560m.json", 559214592.0, 0},
    {"deepseek-v2-lite.json", 15706484224.0, 0},
    {"deepseek-v3.json", 671026419200.0, 0},
};

static zp_model load_fixture(const char *file)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", ZP_HF_DIR, file);
    zp_model m;
    zp_status st = zp_model_from_hf_config(path, &m);
    cr_assert_eq(st, ZP_OK, "%s: %s", file, zp_error_message());
    return m;
}

Test(models, hf_published_counts)
{
    for (size_t i = 0; i < sizeof g_hf_cases / sizeof g_hf_cases[0]; i++) {
        zp_model m = load_fixture(g_hf_cases[i].file);
        cr_expect_eq(zp_model_params(&m), g_hf_cases[i].total, "%s: %.0f, published %.0f", g_hf_cases[i].file,
                     zp_model_params(&m), g_hf_cases[i].total);
        if (g_hf_cases[i].active > 0)
            cr_expect_eq(zp_model_params_active(&m), g_hf_cases[i].active, "%s active: %.0f, expected %.0f",
                         g_hf_cases[i].file, zp_model_params_active(&m), g_hf_cases[i].active);
        else if (m.experts == 0)
            cr_expect_eq(zp_model_params_active(&m), zp_model_params(&m), "%s", g_hf_cases[i].file);
        cr_expect_eq(zp_model_validate(&m), ZP_OK, "%s", g_hf_cases[i].file);
    }
}

Test(models, hf_issue_13_models)
{
    /* the three numbers of the issue, which zplan sized as 59.36B, 6.47B and 6.17B */
    zp_model m = load_fixture("llama-2-70b.json");
    cr_expect_eq(zp_model_params(&m), 68976648192.0);
    cr_expect_eq(zp_model_kv_heads(&m), 8);
    cr_expect_eq(zp_model_kv_width(&m), 2 * 8 * 128);
    m = load_fixture("llama-3-8b.json");
    cr_expect_eq(zp_model_params(&m), 8030261248.0);
    m = load_fixture("mixtral-8x7b.json");
    cr_expect_eq(zp_model_params(&m), 46702792704.0);
    cr_expect_eq(zp_model_params_active(&m), 12879925248.0);
    cr_expect_eq(zp_model_moe_blocks(&m), 32);
}

Test(models, hf_family_semantics)
{
    zp_model m = load_fixture("llama-3.1-8b.json");
    cr_expect_eq(m.seq, 8192, "Llama-3.1's pre-training context (rope_scaling), not 131072");
    m = load_fixture("falcon-7b.json");
    cr_expect_eq(zp_model_kv_heads(&m), 1); /* multi_query */
    cr_expect_eq(m.block_norms, 1);         /* one LayerNorm for the parallel block */
    m = load_fixture("falcon-40b.json");
    cr_expect_eq(zp_model_kv_heads(&m), 8);
    cr_expect_eq(m.block_norms, 2); /* new_decoder_architecture: ln_attn and ln_mlp */
    /* the custom-code names of the same checkpoints: n_head_kv means the new decoder architecture */
    cr_assert_eq(zp_model_from_hf_json("{\"model_type\":\"RefinedWebModel\",\"n_layer\":32,\"hidden_size\":4544,"
                                       "\"n_head\":71,\"multi_query\":true,\"parallel_attn\":true,\"bias\":false,"
                                       "\"vocab_size\":65024}", "rw7.json", &m), ZP_OK, "%s", zp_error_message());
    cr_expect_eq(zp_model_params(&m), 6921720704.0);
    cr_assert_eq(zp_model_from_hf_json("{\"model_type\":\"RefinedWeb\",\"n_layer\":60,\"hidden_size\":8192,"
                                       "\"n_head\":128,\"n_head_kv\":8,\"parallel_attn\":true,\"bias\":false,"
                                       "\"vocab_size\":65024}", "rw40.json", &m), ZP_OK, "%s", zp_error_message());
    cr_expect_eq(zp_model_params(&m), 41303293952.0);
    m = load_fixture("opt-350m.json");
    cr_expect_eq(m.embed_dim, 512);
    cr_expect_eq(m.positions, 2050); /* OPT's offset of 2 */
    cr_expect(m.no_final_norm);
    m = load_fixture("gemma-7b.json");
    cr_expect_eq(zp_model_head_dim(&m), 256); /* 16 x 256 = 4096 != hidden 3072 */
    cr_expect(!m.untied);
    m = load_fixture("qwen2-7b.json");
    cr_expect_eq(m.nobias, (unsigned)(ZP_BIAS_ATTN_OUT | ZP_BIAS_MLP_UP | ZP_BIAS_MLP_DOWN));
    m = load_fixture("deepseek-v2-lite.json");
    cr_expect_eq(m.q_lora_rank, 0); /* null: a plain query projection */
    cr_expect_eq(zp_model_moe_blocks(&m), 26);
    cr_expect(!zp_model_block_is_moe(&m, 0));
    cr_expect(zp_model_block_is_moe(&m, 1));
    /* DeepSeek's 2.4B activated leave out the input embedding */
    double act = zp_model_params_active(&m) - (double)m.vocab * (double)m.hidden;
    cr_expect_leq(fabs(act - 2.4e9) / 2.4e9, 0.03, "%.0f", act);
    m = load_fixture("deepseek-v3.json");
    cr_expect_eq(m.mtp_layers, 1);
    cr_expect(m.router_bias);
    cr_expect_eq(zp_model_kv_width(&m), 512 + 64); /* MLA caches the latent and the shared rope key */
    cr_expect_eq(zp_model_moe_blocks(&m), 58);
    /* one MTP module: 11.5B unique (its block), plus norms and the 2h -> h projection */
    cr_expect_eq(zp_model_params_mtp(&m), 11507286272.0 + 2.0 * 7168 * 7168 + 3.0 * 7168);
    act = zp_model_params_active(&m) - (double)m.vocab * (double)m.hidden;
    cr_expect_leq(fabs(act - 37e9) / 37e9, 0.02, "%.0f", act);
}

/* ---- Zoo: the published models by name ------------------------------------------------------- */

Test(models, zoo_published_models_exact)
{
    static const struct {
        const char *name, *fixture; /* fixture: the same model's config.json, or NULL */
    } cases[] = {
        {"llama-2-7b", "llama-2-7b.json"}, {"llama-2-13b", NULL},   {"llama-2-70b", "llama-2-70b.json"},
        {"llama-3-8b", "llama-3-8b.json"}, {"llama-3-70b", NULL},   {"llama-3-405b", NULL},
        {"mistral-7b", "mistral-7b.json"}, {"mixtral-8x7b", "mixtral-8x7b.json"}, {"mixtral-8x22b", NULL},
        {"qwen2-72b", NULL}, {"qwen1.5-moe-a2.7b", "qwen1.5-moe-a2.7b.json"}, {"gemma-7b", "gemma-7b.json"},
        {"gemma-2-9b", "gemma-2-9b.json"}, {"phi-3-mini", "phi-3-mini-4k.json"}, {"falcon-7b", "falcon-7b.json"},
        {"falcon-40b", "falcon-40b.json"}, {"gpt-neox-20b", "gpt-neox-20b.json"}, {"gpt-j-6b", "gpt-j-6b.json"},
        {"bloom-176b", NULL}, {"deepseek-v2-lite", "deepseek-v2-lite.json"}, {"deepseek-v2", NULL},
        {"deepseek-v3", "deepseek-v3.json"},
    };
    /* Totals without a fixture: Llama-2-13B 13,015,864,320 and Llama-3-70B 70,553,706,496 (HF safetensors
     * totals), Llama-3.1-405B 405,853,388,800 (HF safetensors total), Mixtral-8x22B 140,620,634,112 (HF
     * count of mistral-community/Mixtral-8x22B-v0.1), Qwen2-72B 72,706,203,648 (keras-hub preset), BLOOM
     * 176,247,271,424 (BigScience), DeepSeek-V2 235,741,434,880 (HF count), as in the zoo's entries. */
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const zp_zoo_entry *e = zp_zoo_find(cases[i].name);
        cr_assert_not_null(e, "%s missing", cases[i].name);
        cr_expect_eq(zp_model_validate(&e->model), ZP_OK, "%s: %s", cases[i].name, zp_error_message());
        cr_expect_eq(zp_model_params(&e->model), e->published_params, "%s: %.0f vs published %.0f", cases[i].name,
                     zp_model_params(&e->model), e->published_params);
        if (e->published_active > 0) {
            double act = zp_model_params_active(&e->model);
            if (e->model.attn == ZP_ATTN_MLA) /* DeepSeek's convention: without the input embedding */
                act -= (double)e->model.vocab * (double)e->model.hidden;
            cr_expect_leq(fabs(act - e->published_active) / e->published_active, 0.03, "%s active %.0f vs %.0f",
                          cases[i].name, act, e->published_active);
        }
        if (cases[i].fixture) {
            zp_model m = load_fixture(cases[i].fixture);
            cr_expect_eq(zp_model_params(&m), zp_model_params(&e->model), "%s: zoo and config.json differ",
                         cases[i].name);
            cr_expect_eq(zp_model_params_active(&m), zp_model_params_active(&e->model), "%s", cases[i].name);
            cr_expect_eq(zp_model_flops_token(&m) > 0, 1);
            cr_expect_eq(zp_model_kv_width(&m), zp_model_kv_width(&e->model), "%s", cases[i].name);
            cr_expect_eq(m.route_groups, e->model.route_groups, "%s: n_group", cases[i].name);
            cr_expect_eq(m.route_topk, e->model.route_topk, "%s: topk_group", cases[i].name);
        }
    }
    cr_expect_eq(zp_zoo_find("mixtral-8x7b")->published_active, 12879925248.0);
    cr_expect_eq(zp_model_params_active(&zp_zoo_find("mixtral-8x7b")->model), 12879925248.0);
}

/* ---- The one enumeration: GPT's numbers as before, splits, small tensors, FLOPs ------------------ */

Test(models, gpt_counts_unchanged)
{
    cr_expect(zp_model_is_gpt(&zp_zoo_find("100B")->model));
    cr_expect(zp_model_is_gpt(&zp_zoo_find("tiny")->model));
    cr_expect(!zp_model_is_gpt(&zp_zoo_find("llama-2-7b")->model));
    cr_expect(!zp_model_is_gpt(&zp_zoo_find("gpt-neox-20b")->model)); /* untied, rotary, parallel */
    zp_model g2 = load_fixture("gpt2.json");
    cr_expect(zp_model_is_gpt(&g2));
    /* every GPT in the zoo: the Megatron formulas zplan used before the enumeration */
    for (int i = 0; i < zp_zoo_count(); i++) {
        const zp_model *m = &zp_zoo_get(i)->model;
        if (m->qkv_separate || m->mlp || m->untied || m->pos || m->norm || m->nobias || m->experts)
            continue;
        double h = (double)m->hidden, f = (double)m->ffn, V = (double)m->vocab, s = (double)m->seq;
        double layer = 4.0 * h * h + 2.0 * h * f + 9.0 * h + f;
        cr_expect_eq(zp_model_params_layer(m), layer, "%s", m->name);
        cr_expect_eq(zp_model_params_embedding(m), (V + s) * h, "%s", m->name);
        cr_expect_eq(zp_model_params_head(m), 2.0 * h, "%s", m->name);
        cr_expect_eq(zp_model_params(m), (double)m->layers * layer + (V + s) * h + 2.0 * h, "%s", m->name);
        cr_expect_eq(zp_model_params_largest_layer(m), layer > V * h ? layer : V * h, "%s", m->name);
        for (int64_t t = 1; t <= 8; t *= 2) {
            /* per block: QKV bias 3h/t and MLP-up bias f/t split; projection and MLP-down biases and the
             * two LayerNorms (4 x h) whole; the final LayerNorm 2h */
            const double thr[] = {100, 1e5, 10.0 * h};
            for (size_t k = 0; k < 3; k++) {
                const double ten[] = {3.0 * h / t, f / t, h, h, h, h, h, h};
                double per = 0;
                for (size_t j = 0; j < 8; j++)
                    per += ten[j] < thr[k] ? ten[j] : 0;
                double want = (double)m->layers * per + (h < thr[k] ? 2.0 * h : 0);
                cr_expect_float_eq(zp_model_params_small_tensors(m, t, thr[k]), want, want * 1e-15 + 1e-9,
                                   "%s t=%lld thr=%g", m->name, (long long)t, thr[k]);
            }
        }
    }
}

Test(models, tensor_enumeration_and_tp_splits)
{
    const zp_model *m = &zp_zoo_find("llama-2-70b")->model;
    zp_tensor t[ZP_MODEL_MAX_TENSORS];
    int n = zp_model_tensors(m, ZP_SECTION_BLOCK_DENSE, t, ZP_MODEL_MAX_TENSORS);
    cr_assert_eq(n, 9); /* 2 RMSNorms, q, k, v, o, gate, up, down: no biases */
    double sum = 0;
    for (int i = 0; i < n; i++) {
        sum += zp_tensor_numel(&t[i]);
        if (strcmp(t[i].name, "attn.k.weight") == 0) {
            cr_expect_eq(t[i].rows, 8 * 128); /* GQA: 8 KV heads of 128 */
            cr_expect_eq(t[i].split, ZP_TP_COLUMN);
        }
        if (strcmp(t[i].name, "mlp.down.weight") == 0)
            cr_expect_eq(t[i].split, ZP_TP_ROW);
        if (t[i].kind == ZP_TENSOR_NORM)
            cr_expect_eq(t[i].split, ZP_TP_REPLICATED);
    }
    cr_expect_eq(sum, zp_model_params_layer(m));
    cr_expect_eq(zp_model_tensors(m, ZP_SECTION_BLOCK_MOE, t, ZP_MODEL_MAX_TENSORS), 0);
    /* per MP rank: everything but the norms (2 per block + the final one) splits 8 ways */
    double norms = 80.0 * 2 * 8192 + 8192;
    cr_expect_eq(zp_model_params_rank(m, 8), (zp_model_params(m) - norms) / 8 + norms);
    cr_expect_eq(zp_model_params_rank(m, 1), zp_model_params(m));
    /* the largest group: a block (856M) beats the 262M embedding */
    cr_expect_eq(zp_model_params_largest_layer(m), zp_model_params_layer(m));
    /* a buffer too small is filled as far as it goes and the count says how many there are */
    cr_expect_eq(zp_model_tensors(m, ZP_SECTION_BLOCK_DENSE, t, 2), 9);
    cr_expect_eq(zp_model_tensors(m, ZP_SECTION_BLOCK_DENSE, NULL, 0), 9);

    const zp_model *d = &zp_zoo_find("deepseek-v3")->model;
    n = zp_model_tensors(d, ZP_SECTION_BLOCK_MOE, t, ZP_MODEL_MAX_TENSORS);
    int routed = 0;
    for (int i = 0; i < n; i++)
        if (t[i].routed) {
            cr_expect_eq(t[i].copies, 256);
            routed++;
        }
    cr_expect_eq(routed, 3); /* gate, up, down of the routed experts */
    cr_expect_eq(zp_model_params_block(d, 0), zp_model_params_block(d, 2));
    cr_expect_gt(zp_model_params_block(d, 3), 10 * zp_model_params_block(d, 2));
    cr_expect_eq(zp_model_params_largest_layer(d), zp_model_params_block(d, 60));
    /* the router bias (256) is a vector below any threshold: stage 3 keeps it whole */
    cr_expect_gt(zp_model_params_small_tensors(d, 1, 1000), 58.0 * 256);
}

Test(models, moe_layer_selection)
{
    /* Qwen2-MoE: (i + 1) % decoder_sparse_step == 0 and i not in mlp_only_layers */
    char *p = write_tmp("{\"model_type\":\"qwen2_moe\",\"num_hidden_layers\":10,\"hidden_size\":64,"
                        "\"num_attention_heads\":4,\"num_key_value_heads\":4,\"intermediate_size\":128,\"moe_intermediate_size\":32,"
                        "\"shared_expert_intermediate_size\":64,\"num_experts\":8,\"num_experts_per_tok\":2,"
                        "\"decoder_sparse_step\":2,\"mlp_only_layers\":[3,4,3],\"vocab_size\":100}");
    zp_model m;
    cr_assert_eq(zp_model_from_hf_config(p, &m), ZP_OK, "%s", zp_error_message());
    unlink(p);
    int64_t n = 0;
    for (int64_t i = 0; i < m.layers; i++) {
        int want = (i + 1) % 2 == 0 && i != 3 && i != 4;
        cr_expect_eq(zp_model_block_is_moe(&m, i), want, "block %lld", (long long)i);
        n += want;
    }
    cr_expect_eq(zp_model_moe_blocks(&m), n); /* 1, 5, 7, 9 */
    cr_expect_eq(n, 4);
    double total = zp_model_params_embedding(&m) + zp_model_params_head(&m);
    for (int64_t i = 0; i < m.layers; i++)
        total += zp_model_params_block(&m, i);
    cr_expect_eq(zp_model_params(&m), total);
    /* DeepSeek: i >= first_k_dense_replace and i % moe_layer_freq == 0 */
    zp_model d = zp_zoo_find("deepseek-v2-lite")->model;
    d.moe_every = 3;
    d.dense_layers = 4;
    cr_assert_eq(zp_model_validate(&d), ZP_OK, "%s", zp_error_message());
    n = 0;
    for (int64_t i = 0; i < d.layers; i++)
        n += zp_model_block_is_moe(&d, i) == (i >= 4 && i % 3 == 0) ? (i >= 4 && i % 3 == 0) : -1000;
    cr_expect_eq(zp_model_moe_blocks(&d), n);
}

Test(models, flops_from_active_gemms)
{
    /* Llama-2-70B: every weight but the input embedding is a GEMM; attention 2*s*a*(2 x 128) a layer */
    const zp_model *m = &zp_zoo_find("llama-2-70b")->model;
    double s = (double)m->seq;
    double gemm = zp_model_params(m) - 32000.0 * 8192 - 80.0 * 2 * 8192 - 8192; /* minus embedding and norms */
    double want = 2.0 * gemm + 2.0 * 80 * s * 64 * 256;
    cr_expect_eq(zp_model_flops_token(m), want);
    /* the same per iteration: 3 passes of blocks and logits without recompute */
    double it = zp_model_flops_iteration(m, 2, 0);
    cr_expect_leq(fabs(it - 3.0 * 2 * s * want) / it, 1e-12);
    /* Mixtral: the 6 unused experts of 8 do no work; the router (8 x 4096) does */
    const zp_model *x = &zp_zoo_find("mixtral-8x7b")->model;
    double act = zp_model_params_active(x) - 32000.0 * 4096 - 32.0 * 2 * 4096 - 4096;
    cr_expect_eq(zp_model_flops_token(x), 2.0 * act + 2.0 * 32 * (double)x->seq * 32 * 256);
    /* GPT: the Megatron formula as before (flops_formula_on_100B), and per token 2N + attention */
    const zp_model *g = &zp_zoo_find("gpt2-1.5B")->model;
    double N = zp_model_params(g) - (50257.0 + 1024) * 1600 - 48.0 * (9 * 1600 + 6400) - 3200; /* biases, norms */
    cr_expect_eq(zp_model_flops_token(g), 2.0 * (N + 50257.0 * 1600) + 2.0 * 48 * 1024 * 2 * 1600);
    /* MLA: 128 heads of q/k 192 and v 128 */
    const zp_model *d = &zp_zoo_find("deepseek-v3")->model;
    cr_expect_eq(zp_model_head_dim(d), 192);
    cr_expect_eq(zp_model_v_head_dim(d), 128);
    cr_expect_gt(zp_model_flops_iteration(d, 1, 1), zp_model_flops_iteration(d, 1, 0));
}

Test(models, activations_follow_the_description)
{
    /* GQA keeps smaller K and V; a gated MLP keeps more than a plain one of the same width */
    zp_model a = zp_zoo_find("llama-2-70b")->model, b = a;
    b.kv_heads = 0;
    cr_expect_lt(zp_model_activation_bytes_layer(&a, 1, 1), zp_model_activation_bytes_layer(&b, 1, 1));
    b = a;
    b.mlp = ZP_MLP_PLAIN;
    cr_expect_gt(zp_model_activation_bytes_layer(&a, 1, 1), zp_model_activation_bytes_layer(&b, 1, 1));
    /* a dense block of DeepSeek-V3 differs from an MoE one; the mean weighs 3 and 58 */
    const zp_model *d = &zp_zoo_find("deepseek-v3")->model;
    double dn = zp_model_activation_bytes_block(d, 0, 1, 1), mo = zp_model_activation_bytes_block(d, 10, 1, 1);
    cr_expect_neq(dn, mo);
    cr_expect_float_eq(zp_model_activation_bytes_layer(d, 1, 1), (3 * dn + 58 * mo) / 61, 1e-3);
}

/* ---- Bad descriptions and bad config.json ------------------------------------------------------ */

static void expect_invalid(const zp_model *m, const char *field)
{
    cr_expect_eq(zp_model_validate(m), ZP_EINVAL, "%s accepted", field);
    cr_expect_not_null(strstr(zp_error_message(), field), "message '%s' does not name %s", zp_error_message(), field);
}

Test(models, validate_new_fields)
{
    zp_model m = zp_zoo_find("llama-2-70b")->model;
    m.kv_heads = 7;
    expect_invalid(&m, "kv_heads");
    m = zp_zoo_find("mixtral-8x7b")->model;
    m.top_k = 9;
    expect_invalid(&m, "top_k");
    m.top_k = 0;
    expect_invalid(&m, "top_k");
    m = zp_zoo_find("llama-2-7b")->model;
    m.top_k = 2; /* without experts */
    expect_invalid(&m, "top_k");
    m = zp_zoo_find("deepseek-v3")->model;
    m.kv_lora_rank = 0;
    expect_invalid(&m, "kv_lora_rank");
    m = zp_zoo_find("deepseek-v3")->model;
    m.moe_every = 2;
    m.moe_phase = 2;
    expect_invalid(&m, "moe_phase");
    m = zp_zoo_find("llama-2-7b")->model;
    m.head_dim = -1;
    expect_invalid(&m, "head_dim");
    m.head_dim = 0;
    m.block_norms = 5;
    expect_invalid(&m, "block_norms");
    m.block_norms = 0;
    m.q_lora_rank = 64; /* latent attention fields on a standard attention */
    expect_invalid(&m, "q_lora_rank");
    zp_model g;
    cr_assert_eq(zp_model_init(&g, "g", 2, 64, 4, 64, 100, 0), ZP_OK);
    g.positions = 32; /* seq 64 > 32 learned positions */
    expect_invalid(&g, "learned positions");
}

Test(models, hf_bad_keys_name_the_key)
{
    static const struct {
        const char *json, *named;
    } cases[] = {
        /* a size key of the wrong type */
        {"{\"model_type\":\"llama\",\"num_hidden_layers\":2,\"hidden_size\":64,\"num_attention_heads\":4,"
         "\"num_key_value_heads\":\"2\"}", "num_key_value_heads"},
        {"{\"model_type\":\"llama\",\"num_hidden_layers\":2,\"hidden_size\":64,\"num_attention_heads\":4,"
         "\"tie_word_embeddings\":\"yes\"}", "tie_word_embeddings"},
        {"{\"model_type\":\"mixtral\",\"num_hidden_layers\":2,\"hidden_size\":64,\"num_attention_heads\":4,"
         "\"num_local_experts\":8.5}", "num_local_experts"},
        /* heads not divisible by KV heads; top-k above the experts */
        {"{\"model_type\":\"llama\",\"num_hidden_layers\":2,\"hidden_size\":64,\"num_attention_heads\":4,"
         "\"num_key_value_heads\":3}", "num_key_value_heads"},
        {"{\"model_type\":\"mixtral\",\"num_hidden_layers\":2,\"hidden_size\":64,\"num_attention_heads\":4,"
         "\"num_key_value_heads\":4,\"num_local_experts\":4,\"num_experts_per_tok\":5}", "num_experts_per_tok"},
        /* an unknown key that would change the size, and a known one the family does not read */
        {"{\"model_type\":\"llama\",\"num_hidden_layers\":2,\"hidden_size\":64,\"num_attention_heads\":4,"
         "\"num_shared_layers\":2}", "num_shared_layers"},
        {"{\"model_type\":\"llama\",\"num_hidden_layers\":2,\"hidden_size\":64,\"num_attention_heads\":4,"
         "\"num_local_experts\":8}", "num_local_experts"},
        {"{\"model_type\":\"mistral\",\"num_hidden_layers\":2,\"hidden_size\":64,\"num_attention_heads\":4,"
         "\"num_key_value_heads\":4,\"attention_bias\":true}", "attention_bias"},
        /* an unknown model_type lists the supported ones */
        {"{\"model_type\":\"mamba\",\"num_hidden_layers\":2}", "deepseek_v3"},
        {"{\"model_type\":7,\"num_hidden_layers\":2}", "model_type"},
        /* aliases that disagree; a missing dimension */
        {"{\"model_type\":\"gpt2\",\"n_layer\":2,\"num_hidden_layers\":3,\"n_embd\":64,\"n_head\":4}", "n_layer"},
        {"{\"model_type\":\"gemma\",\"num_hidden_layers\":2,\"hidden_size\":64}", "num_attention_heads"},
        {"{\"model_type\":\"gpt2\",\"n_layer\":2,\"n_embd\":64,\"n_head\":4,\"add_cross_attention\":true}",
         "add_cross_attention"},
        {"{\"model_type\":\"qwen2_moe\",\"num_hidden_layers\":2,\"hidden_size\":64,\"num_attention_heads\":4,"
         "\"mlp_only_layers\":[1,\"x\"]}", "mlp_only_layers"},
        {"{\"model_type\":\"deepseek_v2\",\"num_hidden_layers\":2,\"hidden_size\":64,\"num_attention_heads\":4}",
         "num_experts_per_tok"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        zp_model m;
        zp_status st = zp_model_from_hf_json(cases[i].json, "bad.json", &m);
        cr_expect_eq(st, ZP_EINVAL, "case %zu accepted: %s", i, cases[i].json);
        cr_expect_eq(zp_status_exit_code(st), 2);
        cr_expect_not_null(strstr(zp_error_message(), cases[i].named), "case %zu: '%s' does not name %s", i,
                           zp_error_message(), cases[i].named);
        cr_expect_null(strchr(zp_error_message(), '\n'), "case %zu: a message is one line", i);
    }
}

Test(models, hf_accepts_keys_that_change_no_size)
{
    /* rope scaling objects, dropouts, token ids, a quantization block, an unknown tuning key */
    const char *ok = "{\"model_type\":\"llama\",\"num_hidden_layers\":2,\"hidden_size\":64,\"num_attention_heads\":4,"
                     "\"rope_scaling\":{\"rope_type\":\"llama3\",\"factor\":8.0,\"original_max_position_embeddings\":"
                     "8192},\"rope_theta\":500000.0,\"initializer_range\":0.02,\"torch_dtype\":\"bfloat16\","
                     "\"attention_dropout\":0.0,\"eos_token_id\":[1,2],\"quantization_config\":{\"bits\":4},"
                     "\"my_custom_dropout\":0.1,\"use_fancy_kernels\":true}";
    zp_model m;
    cr_expect_eq(zp_model_from_hf_json(ok, "ok.json", &m), ZP_OK, "%s", zp_error_message());
    /* every family is selected by its model_type: a config with another family's names is refused, naming
     * a key, never read as something else */
    cr_expect_geq(zp_hf_family_count(), 16);
    for (int i = 0; i < zp_hf_family_count(); i++) {
        char js[256];
        snprintf(js, sizeof js, "{\"model_type\":\"%s\",\"num_hidden_layers\":2,\"hidden_size\":64,"
                                "\"num_attention_heads\":4,\"n_layer\":2,\"n_embd\":64,\"n_head\":4}",
                 zp_hf_family_name(i));
        zp_status st = zp_model_from_hf_json(js, "f.json", &m);
        cr_expect(st == ZP_OK || (st == ZP_EINVAL && strchr(zp_error_message(), '"')), "%s: %s",
                  zp_hf_family_name(i), zp_error_message());
    }
}

/* Dropout probabilities decide the masks a block keeps: GPT-2 with resid_pdrop/attn_pdrop 0.1 keeps
 * Megatron-LM's (2·s·b·h after the attention and the MLP, a·s²·b on the probabilities), with both at 0 (MPT)
 * none; Llama has none of its own; a probability that is not in [0, 1) is refused, naming the key. */
Test(models, hf_dropout_decides_the_masks)
{
    const char *base = "{\"model_type\":\"gpt2\",\"n_layer\":2,\"n_embd\":64,\"n_head\":4,\"n_positions\":128";
    char js[384];
    zp_model with, none, attn_only, m;
    snprintf(js, sizeof js, "%s,\"resid_pdrop\":0.1,\"attn_pdrop\":0.1}", base);
    cr_assert_eq(zp_model_from_hf_json(js, "d.json", &with), ZP_OK, "%s", zp_error_message());
    cr_expect_eq(with.no_dropout, 0u);
    snprintf(js, sizeof js, "%s,\"resid_pdrop\":0,\"embd_pdrop\":0,\"attn_pdrop\":0.0}", base);
    cr_assert_eq(zp_model_from_hf_json(js, "d.json", &none), ZP_OK, "%s", zp_error_message());
    cr_expect_eq(none.no_dropout, ZP_DROPOUT_NO_HIDDEN | ZP_DROPOUT_NO_ATTN);
    snprintf(js, sizeof js, "%s,\"resid_pdrop\":0,\"attn_pdrop\":0.1}", base);
    cr_assert_eq(zp_model_from_hf_json(js, "d.json", &attn_only), ZP_OK, "%s", zp_error_message());
    cr_expect_eq(attn_only.no_dropout, ZP_DROPOUT_NO_HIDDEN);
    /* no key: GPT-2's own defaults (0.1) keep every mask */
    snprintf(js, sizeof js, "%s}", base);
    cr_assert_eq(zp_model_from_hf_json(js, "d.json", &m), ZP_OK, "%s", zp_error_message());
    cr_expect_eq(m.no_dropout, 0u);
    /* bytes: s·b·h·2 (hidden masks) and a·s²·b (probability mask) per block, b = 3, no MP */
    const double s = 128, h = 64, a = 4, b = 3;
    cr_expect_float_eq(zp_model_activation_bytes_layer(&with, b, 1) - zp_model_activation_bytes_layer(&attn_only, b, 1),
                       2.0 * s * b * h, 1e-6);
    cr_expect_float_eq(zp_model_activation_bytes_layer(&attn_only, b, 1) - zp_model_activation_bytes_layer(&none, b, 1),
                       a * s * s * b, 1e-6);
    cr_expect_eq(zp_model_score_bytes(&with), 5.0);
    cr_expect_eq(zp_model_score_bytes(&none), 4.0);
    /* Llama: no dropout in the architecture; a config asking for one gets its masks */
    cr_expect_eq(zp_zoo_find("llama-2-7b")->model.no_dropout, ZP_DROPOUT_NO_HIDDEN | ZP_DROPOUT_NO_ATTN);
    const char *ll = "{\"model_type\":\"llama\",\"num_hidden_layers\":2,\"hidden_size\":64,\"num_attention_heads\":4";
    snprintf(js, sizeof js, "%s,\"attention_dropout\":0.1}", ll);
    cr_assert_eq(zp_model_from_hf_json(js, "d.json", &m), ZP_OK, "%s", zp_error_message());
    cr_expect_eq(m.no_dropout, ZP_DROPOUT_NO_HIDDEN);
    /* not a probability: refused, naming the key */
    static const char *const bad[] = {"\"resid_pdrop\":\"0.1\"", "\"attn_pdrop\":1.0", "\"hidden_dropout\":-0.1",
                                      "\"attention_dropout\":true"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(js, sizeof js, "%s,%s}", base, bad[i]);
        cr_expect_eq(zp_model_from_hf_json(js, "d.json", &m), ZP_EINVAL, "%s accepted", bad[i]);
        char key[32];
        snprintf(key, sizeof key, "%.*s", (int)(strchr(bad[i] + 1, '"') - bad[i] + 1), bad[i]);
        cr_expect_not_null(strstr(zp_error_message(), key), "'%s' does not name %s", zp_error_message(), key);
    }
}

/* More published models, given by their size keys only (as their config.json has them), each family's
 * variants: tied Qwen, MQA Gemma, GQA with 10 KV heads, a 2048-wide OPT, BLOOM, GPT-2 sizes. Expected
 * counts: HF safetensors totals / model catalogues (Qwen2.5-3B 3,085,938,688, Qwen2.5-14B 14,770,033,664,
 * Gemma-2-2B 2,614,341,888, Gemma-2-27B 27,227,128,320, CodeGemma-2B 2,506,172,416, Phi-3-medium
 * 13,960,238,080, Phi-4 14,659,507,200, Mistral-7B-v0.3 7,248,023,552, Llama-3.2-3B 3,212,749,824,
 * SmolLM-135M 134,515,008, TinyLlama 1,100,048,384, CodeLlama-7B 6,738,546,688), BigScience's BLOOM
 * sizes (1,065,314,304 and 7,069,016,064), DeepSpeed-Chat's count of facebook/opt-1.3b (1,315,758,080),
 * GPT-2 medium and large (354,823,168 and 774,030,080). */
Test(models, hf_more_published_counts)
{
    static const struct {
        const char *json;
        double total;
    } cases[] = {
        {"{\"model_type\":\"qwen2\",\"hidden_size\":2048,\"intermediate_size\":11008,\"num_hidden_layers\":36,"
         "\"num_attention_heads\":16,\"num_key_value_heads\":2,\"vocab_size\":151936,\"tie_word_embeddings\":true}",
         3085938688.0},
        {"{\"model_type\":\"qwen2\",\"hidden_size\":5120,\"intermediate_size\":13824,\"num_hidden_layers\":48,"
         "\"num_attention_heads\":40,\"num_key_value_heads\":8,\"vocab_size\":152064,\"tie_word_embeddings\":false}",
         14770033664.0},
        {"{\"model_type\":\"gemma2\",\"hidden_size\":2304,\"intermediate_size\":9216,\"num_hidden_layers\":26,"
         "\"num_attention_heads\":8,\"num_key_value_heads\":4,\"head_dim\":256,\"vocab_size\":256000}", 2614341888.0},
        {"{\"model_type\":\"gemma2\",\"hidden_size\":4608,\"intermediate_size\":36864,\"num_hidden_layers\":46,"
         "\"num_attention_heads\":32,\"num_key_value_heads\":16,\"head_dim\":128,\"vocab_size\":256000}",
         27227128320.0},
        {"{\"model_type\":\"gemma\",\"hidden_size\":2048,\"intermediate_size\":16384,\"num_hidden_layers\":18,"
         "\"num_attention_heads\":8,\"num_key_value_heads\":1,\"head_dim\":256,\"vocab_size\":256000}", 2506172416.0},
        {"{\"model_type\":\"phi3\",\"hidden_size\":5120,\"intermediate_size\":17920,\"num_hidden_layers\":40,"
         "\"num_attention_heads\":40,\"num_key_value_heads\":10,\"vocab_size\":32064}", 13960238080.0},
        {"{\"model_type\":\"phi3\",\"hidden_size\":5120,\"intermediate_size\":17920,\"num_hidden_layers\":40,"
         "\"num_attention_heads\":40,\"num_key_value_heads\":10,\"vocab_size\":100352}", 14659507200.0},
        {"{\"model_type\":\"mistral\",\"hidden_size\":4096,\"intermediate_size\":14336,\"num_hidden_layers\":32,"
         "\"num_attention_heads\":32,\"num_key_value_heads\":8,\"vocab_size\":32768}", 7248023552.0},
        {"{\"model_type\":\"llama\",\"hidden_size\":3072,\"intermediate_size\":8192,\"num_hidden_layers\":28,"
         "\"num_attention_heads\":24,\"num_key_value_heads\":8,\"vocab_size\":128256,\"tie_word_embeddings\":true}",
         3212749824.0},
        {"{\"model_type\":\"llama\",\"hidden_size\":576,\"intermediate_size\":1536,\"num_hidden_layers\":30,"
         "\"num_attention_heads\":9,\"num_key_value_heads\":3,\"vocab_size\":49152,\"tie_word_embeddings\":true}",
         134515008.0},
        {"{\"model_type\":\"llama\",\"hidden_size\":2048,\"intermediate_size\":5632,\"num_hidden_layers\":22,"
         "\"num_attention_heads\":32,\"num_key_value_heads\":4,\"vocab_size\":32000}", 1100048384.0},
        {"{\"model_type\":\"llama\",\"hidden_size\":4096,\"intermediate_size\":11008,\"num_hidden_layers\":32,"
         "\"num_attention_heads\":32,\"num_key_value_heads\":32,\"vocab_size\":32016}", 6738546688.0},
        {"{\"model_type\":\"bloom\",\"hidden_size\":1536,\"n_layer\":24,\"n_head\":16,\"vocab_size\":250880}",
         1065314304.0},
        {"{\"model_type\":\"bloom\",\"hidden_size\":4096,\"n_layer\":30,\"n_head\":32,\"vocab_size\":250880}",
         7069016064.0},
        {"{\"model_type\":\"opt\",\"hidden_size\":2048,\"ffn_dim\":8192,\"num_hidden_layers\":24,"
         "\"num_attention_heads\":32,\"vocab_size\":50272,\"word_embed_proj_dim\":2048,\"do_layer_norm_before\":true}",
         1315758080.0},
        {"{\"model_type\":\"gpt2\",\"n_embd\":1024,\"n_layer\":24,\"n_head\":16,\"vocab_size\":50257,"
         "\"n_positions\":1024}", 354823168.0},
        {"{\"model_type\":\"gpt2\",\"n_embd\":1280,\"n_layer\":36,\"n_head\":20,\"vocab_size\":50257,"
         "\"n_positions\":1024}", 774030080.0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        zp_model m;
        cr_assert_eq(zp_model_from_hf_json(cases[i].json, "more.json", &m), ZP_OK, "case %zu: %s", i,
                     zp_error_message());
        cr_expect_eq(zp_model_params(&m), cases[i].total, "case %zu: %.0f, published %.0f", i, zp_model_params(&m),
                     cases[i].total);
    }
}

/* torchtitan's op-level selective recompute runs every second matmul of a block again (wk, wo, w3 of Llama's
 * wq wk wv wo w1 w3 w2): more than Megatron-LM's selective recompute (the attention core's two batched GEMMs)
 * at Llama 3 8B's 8192 tokens, less than the whole forward of every block (full recompute). */
Test(models, op_sac_recompute_between_selective_and_full)
{
    const zp_model *m = &zp_zoo_find("llama-3-8b")->model;
    const double s = (double)m->seq, b = 1.0;
    const double full = zp_model_flops_iteration(m, b, 1) - zp_model_flops_iteration(m, b, 0);
    const double selective = b * (double)m->layers * 2.0 * s * s * (double)m->heads *
                             (double)(zp_model_head_dim(m) + zp_model_v_head_dim(m));
    const double op = zp_model_flops_op_sac_recompute(m, b);
    cr_expect_gt(op, selective);
    cr_expect_lt(op, full);
    /* 2·tokens·L·(h·kv·d + h·h + h·f) for Llama 3 8B: h 4096, 8 KV heads of 128, f 14336 */
    cr_expect_float_eq(op, 2.0 * s * 32.0 * (4096.0 * 1024.0 + 4096.0 * 4096.0 + 4096.0 * 14336.0), 1.0);
    cr_expect_eq(zp_model_check_op_sac(m), ZP_OK);
    cr_expect_eq(zp_model_check_op_sac(&zp_zoo_find("mixtral-8x7b")->model), ZP_OK);
    cr_expect_eq(zp_model_check_op_sac(&zp_zoo_find("deepseek-v3")->model), ZP_EUNSUPPORTED); /* its MTP module */
}

/* Which matmuls torchtitan's op-level recompute keeps: the odd-numbered aten.mm of a block in its modules'
 * order, w2 never run again (the replay stops at its input), the routed experts' grouped GEMMs always. */
Test(models, op_sac_keeps_every_other_matmul_in_torchtitans_order)
{
    zp_op_sac o;
    zp_model_op_sac(&zp_zoo_find("llama-3-8b")->model, 0, &o);
    cr_expect_eq(o.kept, ZP_SAC_WQ | ZP_SAC_WV | ZP_SAC_W1 | ZP_SAC_W2);
    cr_expect_eq(o.rerun, ZP_SAC_WK | ZP_SAC_WO | ZP_SAC_W3);
    zp_model v3 = zp_zoo_find("deepseek-v3")->model; /* wq_a wq_b wkv_a wkv_b wo | gate w1 w3 w2 */
    zp_model_op_sac(&v3, 1, &o);
    cr_expect_eq(o.kept, ZP_SAC_WQ_A | ZP_SAC_WKV_A | ZP_SAC_WO | ZP_SAC_W1 | ZP_SAC_W2);
    cr_expect_eq(o.rerun, ZP_SAC_WQ_B | ZP_SAC_WKV_B | ZP_SAC_ROUTER | ZP_SAC_W3 | ZP_SAC_EXPERTS);
    zp_model_op_sac(&v3, 0, &o); /* its dense blocks: wq_a wq_b wkv_a wkv_b wo | w1 w3 w2 */
    cr_expect_eq(o.rerun, ZP_SAC_WQ_B | ZP_SAC_WKV_B | ZP_SAC_W1);
    cr_expect_eq(o.kept, ZP_SAC_WQ_A | ZP_SAC_WKV_A | ZP_SAC_WO | ZP_SAC_W3);
    zp_model_op_sac(&zp_zoo_find("deepseek-v2-lite")->model, 1, &o); /* wq wkv_a wkv_b wo | gate w1 w3 w2 */
    cr_expect_eq(o.rerun, ZP_SAC_WKV_A | ZP_SAC_WO | ZP_SAC_W1 | ZP_SAC_EXPERTS);
    zp_model_op_sac(&zp_zoo_find("mixtral-8x7b")->model, 1, &o); /* wq wk wv wo | gate: no shared experts */
    cr_expect_eq(o.has, ZP_SAC_WQ | ZP_SAC_WK | ZP_SAC_WV | ZP_SAC_WO | ZP_SAC_ROUTER | ZP_SAC_EXPERTS);
    cr_expect_eq(o.kept, ZP_SAC_WQ | ZP_SAC_WV | ZP_SAC_ROUTER);
    /* the recompute's FLOPs: Mixtral's wk, wo and its top 2 experts' three matrices, 32 blocks */
    const zp_model *mx = &zp_zoo_find("mixtral-8x7b")->model;
    const double h = 4096.0, tokens = (double)mx->seq;
    cr_expect_float_eq(zp_model_flops_op_sac_recompute(mx, 1.0),
                       2.0 * tokens * 32.0 * (h * 1024.0 + h * h + 3.0 * h * 2.0 * 14336.0), 1e-9 * 1e15);
}
