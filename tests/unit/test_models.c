/* models/: parameter counts of the zoo, the FLOPs formula, sizes and HuggingFace configs. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "zp_model.h"
#include "zp_size.h"
#include "zp_zoo.h"

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
    p = write_tmp("{\"num_hidden_layers\":44,\"hidden_size\":6144,\"num_attention_heads\":64,"
                  "\"vocab_size\":50432,\"max_position_embeddings\":2048,\"intermediate_size\":24576}");
    cr_assert_eq(zp_model_from_hf_config(p, &m), ZP_OK, "%s", zp_error_message());
    cr_expect_eq(m.layers, 44);
    cr_expect_eq(m.ffn, 24576);
    cr_expect_eq(m.seq, 2048);
    unlink(p);
    p = write_tmp("{\"num_hidden_layers\":32,\"hidden_size\":4096,\"num_attention_heads\":32,"
                  "\"vocab_size\":32000,\"max_position_embeddings\":4096,\"intermediate_size\":11008}");
    cr_assert_eq(zp_model_from_hf_config(p, &m), ZP_OK);
    cr_expect_eq(m.ffn, 11008);
    cr_expect_eq(m.vocab, 32000);
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
