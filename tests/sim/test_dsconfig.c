/* sim/zp_dsconfig: DeepSpeed configs in and out. */
#include <criterion/criterion.h>
#include <string.h>

#include "zp_dsconfig.h"
#include "zp_zoo.h"

static const zp_cluster *dgx2(void)
{
    const zp_cluster *c;
    cr_assert_eq(zp_cluster_find("dgx2", &c), ZP_OK);
    return c;
}

static zp_search_req req(const char *model, int64_t gpus, int64_t mp)
{
    zp_search_req r;
    zp_search_req_default(&r, &zp_zoo_find(model)->model, dgx2(), gpus);
    r.mp = mp;
    return r;
}

static zp_eval first(zp_search_req *r)
{
    zp_search_result res;
    cr_assert_eq(zp_search_run(r, &res), ZP_OK, "%s", zp_error_message());
    zp_eval e = res.plans[0];
    zp_search_result_free(&res);
    return e;
}

Test(dsconfig, emit_and_read_back_is_the_same_plan)
{
    struct {
        const char *model;
        int64_t gpus, mp;
        int stage, pa, pacpu, off, md;
        int64_t micro, accum;
        double bucket;
    } cases[] = {
        {"100B", 400, 16, 2, 1, 0, 0, 1, 32, 1, 5e8},  {"8B", 64, 4, 1, 0, 0, 1, 1, 4, 8, 2e8},
        {"13B", 128, 1, 3, 0, 0, 2, 0, 2, 2, 1e8},     {"1.5B", 32, 2, 0, 1, 1, 0, 1, 16, 3, 5e7},
        {"20B", 64, 8, 3, 1, 1, 1, 1, 8, 1, 3e8},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        zp_plan p;
        zp_plan_default(&p, cases[i].gpus / cases[i].mp);
        p.mp = cases[i].mp;
        p.stage = cases[i].stage;
        p.pa = cases[i].pa;
        p.pa_cpu = cases[i].pacpu;
        p.offload = (zp_offload)cases[i].off;
        p.md = cases[i].md;
        p.micro_batch = cases[i].micro;
        p.grad_accum = cases[i].accum;
        p.bucket = cases[i].bucket;
        p.overlap_comm = i % 2;
        json_t *j = zp_dsconfig_to_json(&p, zp_zoo_find(cases[i].model)->model.layers);
        char *text = json_dumps(j, 0);
        json_decref(j);
        zp_search_req r = req(cases[i].model, cases[i].gpus, cases[i].mp);
        zp_ds_notes notes = {0};
        cr_assert_eq(zp_dsconfig_parse(text, "emitted", &r, &notes), ZP_OK, "case %zu: %s", i, zp_error_message());
        free(text);
        zp_eval e = first(&r);
        const zp_plan *q = &e.plan;
        cr_expect_eq(q->stage, p.stage, "case %zu stage", i);
        cr_expect_eq(q->mp, p.mp, "case %zu", i);
        cr_expect_eq(q->dp, p.dp, "case %zu", i);
        cr_expect_eq(q->micro_batch, p.micro_batch, "case %zu micro", i);
        cr_expect_eq(q->grad_accum, p.grad_accum, "case %zu accum", i);
        cr_expect_eq(q->pa, p.pa, "case %zu pa", i);
        cr_expect_eq(q->pa_cpu, p.pa_cpu, "case %zu pa_cpu", i);
        cr_expect_eq(q->offload, p.offload, "case %zu offload", i);
        cr_expect_eq(q->md, p.md, "case %zu md", i);
        cr_expect_eq(q->bucket, p.bucket, "case %zu bucket", i);
        cr_expect_eq(q->overlap_comm, p.overlap_comm, "case %zu overlap", i);
    }
}

static zp_status parse(const char *text, zp_search_req *r, zp_ds_notes *n)
{
    memset(n, 0, sizeof *n);
    return zp_dsconfig_parse(text, "test.json", r, n);
}

static int has_note(const zp_ds_notes *n, const char *what)
{
    for (int i = 0; i < n->n; i++)
        if (strstr(n->line[i], what))
            return 1;
    return 0;
}

Test(dsconfig, batch_rules_as_deepspeed)
{
    zp_ds_notes n;
    zp_search_req r = req("8B", 64, 4); /* DP 16 */
    cr_expect_eq(parse("{\"train_batch_size\": 100, \"train_micro_batch_size_per_gpu\": 2, "
                       "\"gradient_accumulation_steps\": 3}", &r, &n), ZP_EINVAL);
    cr_expect(strstr(zp_error_message(), "100 != 2 x 3 x 16"), "%s", zp_error_message());
    r = req("8B", 64, 4);
    cr_expect_eq(parse("{\"train_batch_size\": 96, \"train_micro_batch_size_per_gpu\": 2}", &r, &n), ZP_OK);
    cr_expect_eq(r.micro_batch, 2);
    cr_expect_eq(r.global_batch, 96);
    cr_expect(has_note(&n, "gradient_accumulation_steps -> 3"));
    r = req("8B", 64, 4);
    cr_expect_eq(parse("{\"train_batch_size\": 64, \"train_micro_batch_size_per_gpu\": \"auto\"}", &r, &n), ZP_OK);
    cr_expect_eq(r.micro_batch, ZP_SEARCH_ANY);
    cr_expect_eq(r.global_batch, 64);
    r = req("8B", 64, 4);
    cr_expect_eq(parse("{\"train_batch_size\": 10}", &r, &n), ZP_EINVAL);
    r = req("8B", 64, 4);
    cr_expect_eq(parse("{\"train_batch_size\": -4}", &r, &n), ZP_EINVAL);
    r = req("8B", 64, 4);
    cr_expect_eq(parse("{\"train_micro_batch_size_per_gpu\": 2.5}", &r, &n), ZP_EINVAL);
}

Test(dsconfig, keys_auto_unknown_and_nvme)
{
    zp_ds_notes n;
    zp_search_req r = req("20B", 64, 8);
    const char *cfg = "{\"zero_optimization\": {\"stage\": 3, \"offload_param\": {\"device\": \"nvme\", "
                      "\"nvme_path\": \"/local\"}, \"offload_optimizer\": {\"device\": \"cpu\", \"pin_memory\": true}, "
                      "\"reduce_bucket_size\": \"auto\", \"stage3_param_persistence_threshold\": \"auto\", "
                      "\"frobnicate\": 1}, \"fp16\": {\"enabled\": \"auto\"}, \"bogus_top\": {}, "
                      "\"activation_checkpointing\": {\"partition_activations\": true, \"cpu_checkpointing\": true, "
                      "\"contiguous_memory_optimization\": true}}";
    cr_assert_eq(parse(cfg, &r, &n), ZP_OK, "%s", zp_error_message());
    cr_expect_eq(r.stage, 3);
    cr_expect_eq(r.offload, ZP_OFFLOAD_PARAMS);
    cr_expect_eq(r.pa_cpu, 1);
    cr_expect_eq(r.bucket, 4096.0 * 4096.0);
    cr_expect_eq(r.persistence_threshold, 40960.0);
    cr_expect_eq(r.nvme, ZP_NVME_PARAMS); /* ZeRO-Infinity: the parameters on NVMe, the optimizer on the host */
    cr_expect_eq(r.stage3_max_live, 1e9);  /* DeepSpeed's defaults where the config is silent */
    cr_expect_eq(r.stage3_prefetch, 5e8);
    cr_expect(has_note(&n, "unknown key zero_optimization.frobnicate"));
    cr_expect(has_note(&n, "unknown key bogus_top"));
    cr_expect(has_note(&n, "reduce_bucket_size \"auto\""));
    /* legacy keys */
    r = req("8B", 64, 1);
    cr_assert_eq(parse("{\"zero_optimization\": {\"stage\": 2, \"cpu_offload\": true}}", &r, &n), ZP_OK);
    cr_expect_eq(r.offload, ZP_OFFLOAD_OPTIMIZER);
    r = req("8B", 64, 1);
    cr_assert_eq(parse("{\"fp16\": {\"enabled\": false}}", &r, &n), ZP_OK);
    cr_expect_eq(r.param_bytes, 4.0);
    cr_expect_eq(r.k_optimizer, 8.0);
}

Test(dsconfig, bad_configs)
{
    const char *bad[] = {
        "{", "[1]", "{\"zero_optimization\": 3}", "{\"zero_optimization\": {\"stage\": 4}}",
        "{\"zero_optimization\": {\"stage\": \"auto\"}}", "{\"zero_optimization\": {\"stage\": 2, \"offload_param\": "
        "{\"device\": \"cpu\"}}}", "{\"zero_optimization\": {\"stage\": 0, \"offload_optimizer\": {\"device\": \"cpu\"}}}",
        "{\"zero_optimization\": {\"stage\": 1, \"offload_optimizer\": {\"device\": \"tape\"}}}",
        "{\"fp16\": {\"enabled\": true}, \"bf16\": {\"enabled\": true}}", "{\"fp16\": true}",
        "{\"zero_optimization\": {\"overlap_comm\": \"yes\"}}", "{\"zero_optimization\": {\"reduce_bucket_size\": 0}}",
        "{\"activation_checkpointing\": {\"partition_activations\": 1}}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        zp_search_req r = req("8B", 64, 4);
        zp_ds_notes n;
        zp_status st = parse(bad[i], &r, &n);
        cr_expect_eq(zp_status_exit_code(st), 2, "accepted: %s", bad[i]);
    }
}
