/* formats/zp_dsconfig: DeepSpeed configs in and out. */
#include <criterion/criterion.h>
#include <string.h>

#include "zp_dsconfig.h"
#include "zp_launch.h"
#include "zp_megatron.h"
#include "zp_zoo.h"
#include "../zp_test.h"

static const zp_cluster *dgx2(void)
{
    const zp_cluster *c = zp_test_preset("dgx2");
    return c;
}

static zp_search_req req(const char *model, int64_t gpus, int64_t mp)
{
    zp_search_req r;
    zp_search_req_default(&r, &zp_zoo_find(model)->model, dgx2(), gpus);
    r.base.mp = mp;
    zp_search_req_give(&r, ZP_SEARCH_DIM(ZP_DIM_TP));
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
    cr_expect_eq(r.base.micro_batch, 2);
    cr_expect_eq(r.global_batch, 96);
    cr_expect(has_note(&n, "gradient_accumulation_steps -> 3"));
    r = req("8B", 64, 4);
    cr_expect_eq(parse("{\"train_batch_size\": 64, \"train_micro_batch_size_per_gpu\": \"auto\"}", &r, &n), ZP_OK);
    cr_expect(zp_search_req_searched(&r, ZP_SEARCH_MICRO_BATCH));
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
    cr_expect_eq(r.base.stage, 3);
    cr_expect_eq(r.base.offload, ZP_OFFLOAD_PARAMS);
    cr_expect_eq(r.base.pa_cpu, 1);
    cr_expect_eq(r.base.bucket, 4096.0 * 4096.0);
    cr_expect_eq(r.base.persistence_threshold, 40960.0);
    cr_expect_eq(r.base.nvme, ZP_NVME_PARAMS); /* ZeRO-Infinity: the parameters on NVMe, the optimizer on the host */
    cr_expect_eq(r.base.stage3_max_live, 1e9);  /* DeepSpeed's defaults where the config is silent */
    cr_expect_eq(r.base.stage3_prefetch, 5e8);
    cr_expect(has_note(&n, "unknown key zero_optimization.frobnicate"));
    cr_expect(has_note(&n, "unknown key bogus_top"));
    cr_expect(has_note(&n, "reduce_bucket_size \"auto\""));
    /* legacy keys */
    r = req("8B", 64, 1);
    cr_assert_eq(parse("{\"zero_optimization\": {\"stage\": 2, \"cpu_offload\": true}}", &r, &n), ZP_OK);
    cr_expect_eq(r.base.offload, ZP_OFFLOAD_OPTIMIZER);
    r = req("8B", 64, 1);
    cr_assert_eq(parse("{\"fp16\": {\"enabled\": false}}", &r, &n), ZP_OK);
    cr_expect_eq(r.base.param_bytes, 4.0);
    cr_expect_eq(r.base.k_optimizer, 8.0);
}

/* A misspelled key that zplan reads is refused, naming the key it means: ignored, it would plan something else
 * (zero_optimisation dropped is stage 0). A misspelled key that changes nothing modelled, or a key far from
 * every key zplan knows, is still a warning. */
Test(dsconfig, misspelled_keys_that_change_the_plan)
{
    zp_search_req r;
    zp_ds_notes n;
    const struct {
        const char *cfg, *means;
    } bad[] = {
        {"{\"train_batch_size\": 16, \"zero_optimisation\": {\"stage\": 3}}", "did you mean zero_optimization?"},
        {"{\"zero_optimization\": {\"stag\": 3}}", "did you mean zero_optimization.stage?"},
        {"{\"zero_optimization\": {\"stage\": 2, \"Overlap_comm\": false}}", "zero_optimization.overlap_comm?"},
        {"{\"fp61\": {\"enabled\": true}}", "did you mean fp16?"},
        {"{\"train_micro_batch_size_per_gp\": 2}", "did you mean train_micro_batch_size_per_gpu?"},
        {"{\"activation_checkpointing\": {\"partition_activation\": true}}",
         "activation_checkpointing.partition_activations?"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        zp_search_req_default(&r, NULL, NULL, 16);
        cr_expect_eq(parse(bad[i].cfg, &r, &n), ZP_EINVAL, "%s accepted", bad[i].cfg);
        cr_expect(strstr(zp_error_message(), bad[i].means), "%s: %s", bad[i].cfg, zp_error_message());
    }
    const char *warned[] = {"{\"wall_clock_breakdwn\": true}", "{\"zero_optimization\": {\"elastic_checkpont\": 1}}",
                            "{\"fp8\": {\"enabled\": true}}", "{\"bogus_top\": 1}"};
    for (size_t i = 0; i < sizeof warned / sizeof warned[0]; i++) {
        zp_search_req_default(&r, NULL, NULL, 16);
        cr_expect_eq(parse(warned[i], &r, &n), ZP_OK, "%s: %s", warned[i], zp_error_message());
        cr_expect(has_note(&n, "unknown key"), "%s: no warning", warned[i]);
    }
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

static zp_search_req req_on(const char *model, const char *cluster, int64_t gpus)
{
    const zp_cluster *c;
    cr_assert_eq(zp_cluster_find(cluster, &c), ZP_OK);
    zp_search_req r;
    zp_search_req_default(&r, &zp_zoo_find(model)->model, c, gpus);
    r.base.mp = 1;
    zp_search_req_give(&r, ZP_SEARCH_DIM(ZP_DIM_TP));
    return r;
}

/* Issue #18 case 5: the precision sections as DeepSpeed and the HuggingFace integration read them. */
Test(dsconfig, precision_auto_legacy_and_grad_dtype)
{
    zp_ds_notes n;
    /* "auto" follows the GPU: bf16 on an A100 (it used to become fp32, priced at fp16), fp16 on a V100 */
    zp_search_req r = req_on("13B", "dgx-a100", 64);
    cr_assert_eq(parse("{\"bf16\": {\"enabled\": \"auto\"}, \"fp16\": {\"enabled\": \"auto\"}}", &r, &n), ZP_OK);
    cr_expect_eq(r.base.param_bytes, 2.0);
    cr_expect_eq(r.base.bf16, 1);
    cr_expect(has_note(&n, "bf16.enabled \"auto\" -> true"));
    r = req_on("13B", "dgx2", 64);
    cr_assert_eq(parse("{\"bf16\": {\"enabled\": \"auto\"}}", &r, &n), ZP_OK);
    cr_expect_eq(r.base.param_bytes, 2.0);
    cr_expect_eq(r.base.bf16, 0);
    cr_expect(has_note(&n, "has no bf16 tensor cores"));
    /* DeepSpeed's legacy "bfloat16" key (it used to be ignored: fp32) */
    r = req_on("13B", "dgx-a100", 64);
    cr_assert_eq(parse("{\"bfloat16\": {\"enabled\": true}}", &r, &n), ZP_OK);
    cr_expect_eq(r.base.bf16, 1);
    cr_expect_eq(r.base.param_bytes, 2.0);
    r = req_on("13B", "dgx-a100", 64);
    cr_expect_eq(parse("{\"bfloat16\": {\"enabled\": 1}}", &r, &n), ZP_EINVAL);
    cr_expect(strstr(zp_error_message(), "bfloat16.enabled"), "names the user's key: %s", zp_error_message());
    /* fp32 gradient accumulation */
    r = req_on("13B", "dgx-a100", 64);
    cr_assert_eq(parse("{\"bf16\": {\"enabled\": true}, \"data_types\": {\"grad_accum_dtype\": \"fp32\"}}", &r, &n),
                 ZP_OK);
    cr_expect_eq(r.base.grad_bytes, 4.0);
    r = req_on("13B", "dgx-a100", 64);
    cr_expect_eq(parse("{\"data_types\": {\"grad_accum_dtype\": \"fp8\"}}", &r, &n), ZP_EINVAL);
    /* the legacy boolean zero_optimization */
    r = req_on("13B", "dgx-a100", 64);
    cr_assert_eq(parse("{\"zero_optimization\": true}", &r, &n), ZP_OK);
    cr_expect_eq(r.base.stage, 1);
    r = req_on("13B", "dgx-a100", 64);
    cr_assert_eq(parse("{\"zero_optimization\": {\"stage\": 3, \"cpu_offload\": true, \"cpu_offload_param\": true}}",
                       &r, &n), ZP_OK);
    cr_expect_eq(r.base.offload, ZP_OFFLOAD_PARAMS);
}

/* DeepSpeed loads configs with hjson: comments, trailing commas, missing commas, quoteless keys and values. */
Test(dsconfig, hjson_as_deepspeed_reads_it)
{
    const char *hj = "// a HuggingFace example, edited by hand\n"
                     "{\n"
                     "  # batch\n"
                     "  \"train_micro_batch_size_per_gpu\": 4,\n"
                     "  gradient_accumulation_steps: 2\n"
                     "  \"bf16\": {\"enabled\": true,},\n"
                     "  /* ZeRO-3 with\n     CPU offload */\n"
                     "  zero_optimization: {\n"
                     "    stage: 3\n"
                     "    offload_optimizer: { device: cpu, pin_memory: true }\n"
                     "    'overlap_comm': true,\n"
                     "  },\n"
                     "  \"activation_checkpointing\": {\"partition_activations\": false, \"number_checkpoints\": 62,},\n"
                     "}\n";
    zp_search_req r = req_on("13B", "dgx-a100", 64);
    zp_ds_notes n;
    cr_assert_eq(parse(hj, &r, &n), ZP_OK, "%s", zp_error_message());
    cr_expect_eq(r.base.micro_batch, 4);
    cr_expect_eq(r.global_batch, 4 * 2 * 64);
    cr_expect_eq(r.base.bf16, 1);
    cr_expect_eq(r.base.stage, 3);
    cr_expect_eq(r.base.offload, ZP_OFFLOAD_OPTIMIZER);
    cr_expect_eq(r.base.overlap_comm, 1);
    /* strict JSON is unchanged in meaning; a broken file still says where */
    char *out;
    cr_assert_eq(zp_dsconfig_hjson_to_json("{\"a\": [1, -2.5e3, \"x\"], \"b\": {\"c\": null}}", &out), ZP_OK);
    json_error_t err;
    json_t *j = json_loads(out, 0, &err);
    cr_assert_not_null(j, "%s: %s", out, err.text);
    cr_expect_eq(json_number_value(json_array_get(json_object_get(j, "a"), 1)), -2500.0);
    cr_expect_str_eq(json_string_value(json_array_get(json_object_get(j, "a"), 2)), "x");
    json_decref(j);
    free(out);
    r = req_on("13B", "dgx-a100", 64);
    cr_expect_eq(parse("{\n\"zero_optimization\": {\"stage\": 2\n\n", &r, &n), ZP_EINVAL);
    cr_expect(strstr(zp_error_message(), "line"), "%s", zp_error_message());
}

/* Emitted precision reads back as the same recipe: bf16 (A100, H100), fp16 (V100), fp32 gradients, fp32. */
Test(dsconfig, precision_round_trip)
{
    struct {
        const char *cluster;
        int bf16;
        double pbytes, gbytes, k;
    } cases[] = {{"dgx-a100", 1, 2, 0, 12}, {"dgx2", 0, 2, 0, 12}, {"dgx-h100", 1, 2, 4, 12}, {"dgx2", 0, 4, 0, 8}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        zp_plan p;
        zp_plan_default(&p, 64);
        p.stage = 2;
        p.offload = ZP_OFFLOAD_OPTIMIZER;
        p.micro_batch = 4;
        p.grad_accum = 2;
        p.bf16 = cases[i].bf16;
        p.param_bytes = cases[i].pbytes;
        p.grad_bytes = cases[i].gbytes;
        p.k_optimizer = cases[i].k;
        json_t *j = zp_dsconfig_to_json(&p, 40);
        cr_expect_eq(json_object_get(j, "bf16") != NULL, p.bf16 && p.param_bytes == 2, "case %zu", i);
        char *text = json_dumps(j, 0);
        json_decref(j);
        zp_search_req r = req_on("13B", cases[i].cluster, 64);
        zp_ds_notes n;
        cr_assert_eq(parse(text, &r, &n), ZP_OK, "%s", zp_error_message());
        free(text);
        zp_eval e = first(&r);
        cr_expect_eq(e.plan.bf16, p.bf16, "case %zu bf16", i);
        cr_expect_eq(e.plan.param_bytes, p.param_bytes, "case %zu", i);
        cr_expect_eq(zp_plan_grad_bytes(&e.plan), zp_plan_grad_bytes(&p), "case %zu grads", i);
        cr_expect_eq(e.plan.k_optimizer, p.k_optimizer, "case %zu", i);
        cr_expect_eq(e.plan.offload, p.offload, "case %zu", i);
        cr_expect_eq(e.plan.micro_batch, 4, "case %zu", i);
        cr_expect_eq(e.plan.grad_accum, 2, "case %zu", i);
    }
}

/* ---- Megatron-LM arguments (formats/zp_megatron) ---- */

static int has(const char *args, const char *flag)
{
    const size_t n = strlen(flag);
    for (const char *q = strstr(args, flag); q; q = strstr(q + 1, flag))
        if ((q == args || q[-1] == ' ') && (q[n] == ' ' || q[n] == '\0'))
            return 1;
    return 0;
}

/* A plan of stage, DP and MP whose layers are cut into pp pipeline stages of 2 model chunks each (the
 * interleaved schedule), a micro-batch of 1. */
static zp_plan interleaved_plan(int stage, int64_t dp, int64_t mp, int64_t pp)
{
    zp_plan p = zp_test_plan(stage, dp, mp, 1);
    p.pp = pp;
    p.schedule = ZP_PP_INTERLEAVED;
    p.vstages = 2;
    return p;
}

/* A Llama plan states its architecture (GQA, SwiGLU, RMSNorm, rope, untied head, no biases, no dropout), its
 * precision (bf16; fp32 gradients as --accumulate-allreduce-grads-in-fp32), FlashAttention, the interleaved
 * schedule's layers per virtual stage and the distributed optimizer; a GPT plan in fp16 none of those. */
Test(megatron, states_the_architecture_and_the_precision)
{
    const zp_model *llama = &zp_zoo_find("llama-2-70b")->model;
    zp_plan p = interleaved_plan(1, 16, 8, 2);
    p.bf16 = 1;
    p.grad_bytes = 4.0;
    p.flash_attn = 1;
    char a[1024];
    cr_assert_eq(zp_megatron_args(llama, &p, a, sizeof a), ZP_OK, "%s", zp_error_message());
    const char *want[] = {"--group-query-attention", "--num-query-groups 8", "--swiglu", "--normalization RMSNorm",
                          "--position-embedding-type rope", "--untie-embeddings-and-output-weights",
                          "--disable-bias-linear", "--hidden-dropout 0", "--attention-dropout 0", "--use-flash-attn",
                          "--tensor-model-parallel-size 8", "--pipeline-model-parallel-size 2",
                          "--num-layers-per-virtual-pipeline-stage 20", "--use-distributed-optimizer", "--bf16",
                          "--accumulate-allreduce-grads-in-fp32", "--rotary-base 10000", "--vocab-size 32000",
                          "--make-vocab-size-divisible-by 1"};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        cr_expect(strstr(a, want[i]) != NULL, "missing %s in: %s", want[i], a);
    cr_expect(!has(a, "--fp16"), "%s", a);

    const zp_model *gpt = &zp_zoo_find("1.5B")->model;
    zp_plan q;
    zp_plan_default(&q, 16);
    q.bf16 = 0;
    cr_assert_eq(zp_megatron_args(gpt, &q, a, sizeof a), ZP_OK, "%s", zp_error_message());
    cr_expect(has(a, "--fp16"), "%s", a);
    const char *none[] = {"--bf16", "--swiglu", "--group-query-attention", "--normalization", "--use-flash-attn", "--rotary-base",
                          "--disable-bias-linear", "--accumulate-allreduce-grads-in-fp32", "--use-distributed-optimizer"};
    for (size_t i = 0; i < sizeof none / sizeof none[0]; i++)
        cr_expect(!has(a, none[i]), "unexpected %s in: %s", none[i], a);
}

/* What Megatron-LM's arguments cannot state is refused, saying what: ALiBi (BLOOM), GeGLU (Gemma), MLA
 * (DeepSeek-V3), parallel blocks (Falcon), shared experts (Qwen-MoE); and ZeRO stage 2 plans. */
Test(megatron, refuses_what_it_cannot_state)
{
    const struct {
        const char *model, *why;
    } cases[] = {{"bloom-176b", "ALiBi"}, {"gemma-7b", "SwiGLU"}, {"falcon-7b", "parallel"},
                 {"qwen1.5-moe-a2.7b", "gated shared expert"}};
    zp_plan p;
    zp_plan_default(&p, 8);
    char a[1024];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cr_expect_eq(zp_megatron_args(&zp_zoo_find(cases[i].model)->model, &p, a, sizeof a), ZP_EUNSUPPORTED,
                     "%s", cases[i].model);
        cr_expect(strstr(zp_error_message(), cases[i].why) != NULL, "%s: %s", cases[i].model, zp_error_message());
    }
    p.stage = 2;
    cr_expect_eq(zp_megatron_args(&zp_zoo_find("1.5B")->model, &p, a, sizeof a), ZP_EUNSUPPORTED);
}

/* DeepSeek-V3 stated whole: latent attention with every size, the shared expert, its three dense blocks as a
 * --moe-layer-freq list, group-limited routing with the router's bias, MTP. */
Test(megatron, states_deepseek_v3)
{
    zp_plan p;
    zp_plan_default(&p, 8);
    p.stage = 1;
    p.ep = 8;
    char a[4096];
    cr_assert_eq(zp_megatron_args(&zp_zoo_find("deepseek-v3")->model, &p, a, sizeof a), ZP_OK, "%s",
                 zp_error_message());
    const char *want[] = {"--multi-latent-attention --q-lora-rank 1536 --kv-lora-rank 512 --qk-head-dim 128 "
                          "--qk-pos-emb-head-dim 64 --v-head-dim 128 --qk-layernorm",
                          "--num-experts 256 --moe-router-topk 8 --expert-model-parallel-size 8",
                          "--moe-ffn-hidden-size 2048 --moe-shared-expert-intermediate-size 2048",
                          "--moe-router-enable-expert-bias --moe-router-num-groups 8 --moe-router-group-topk 4",
                          "--moe-layer-freq \"([0]*3+[1]*58)\" --mtp-num-layers 1", "--ffn-hidden-size 18432"};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        cr_expect(strstr(a, want[i]), "no '%s' in %s", want[i], a);
    cr_expect_null(strstr(a, "--group-query-attention"), "%s", a);
    zp_model m = zp_zoo_find("deepseek-v2-lite")->model; /* 2 shared experts of 1408: one of 2816 */
    cr_assert_eq(zp_megatron_args(&m, &p, a, sizeof a), ZP_OK, "%s", zp_error_message());
    cr_expect(strstr(a, "--moe-shared-expert-intermediate-size 2816 ") && !strstr(a, "--q-lora-rank"), "%s", a);
    m.moe_every = 2; /* MoE at the even blocks after the dense first: a list */
    cr_assert_eq(zp_megatron_args(&m, &p, a, sizeof a), ZP_OK, "%s", zp_error_message());
    cr_expect(strstr(a, "--moe-layer-freq \"([0]*2+[1]*1+[0]*1+[1]*1+"), "%s", a);
    m.dense_layers = 0;
    cr_assert_eq(zp_megatron_args(&m, &p, a, sizeof a), ZP_OK, "%s", zp_error_message());
    cr_expect(strstr(a, "--moe-layer-freq 2 "), "%s", a);
}

/* Megatron-LM v2 (--framework megatron-2021) names its arguments otherwise and fewer: full recompute is
 * --checkpoint-activations, no distributed optimizer, SP, selective recompute, fusion or FlashAttention
 * flags; bf16 plans say --accumulate-allreduce-grads-in-fp32 (v2 forces it); only GPTs. */
Test(megatron, v2_arguments)
{
    const zp_model *gpt = &zp_zoo_find("1.5B")->model;
    zp_plan p = interleaved_plan(0, 4, 2, 4);
    p.bf16 = 0;
    zp_plan_set_recompute(&p, ZP_RECOMPUTE_FULL);
    char a[1024];
    cr_assert_eq(zp_megatron_args_v2(gpt, &p, a, sizeof a), ZP_OK, "%s", zp_error_message());
    const char *want[] = {"--checkpoint-activations", "--checkpoint-num-layers 1", "--tensor-model-parallel-size 2",
                          "--pipeline-model-parallel-size 4", "--num-layers-per-virtual-pipeline-stage 6", "--fp16"};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        cr_expect(strstr(a, want[i]) != NULL, "missing %s in: %s", want[i], a);
    const char *none[] = {"--recompute-granularity", "--use-distributed-optimizer", "--no-gradient-accumulation-fusion",
                          "--overlap-grad-reduce", "--sequence-parallel", "--use-flash-attn", "--bf16",
                          "--accumulate-allreduce-grads-in-fp32"};
    for (size_t i = 0; i < sizeof none / sizeof none[0]; i++)
        cr_expect(!has(a, none[i]), "unexpected %s in: %s", none[i], a);
    p.bf16 = 1;
    p.grad_bytes = 4.0;
    cr_assert_eq(zp_megatron_args_v2(gpt, &p, a, sizeof a), ZP_OK, "%s", zp_error_message());
    cr_expect(has(a, "--bf16") && has(a, "--accumulate-allreduce-grads-in-fp32"), "%s", a);
    p.stage = 1;
    cr_expect_eq(zp_megatron_args_v2(gpt, &p, a, sizeof a), ZP_EUNSUPPORTED);
    p.stage = 0;
    p.sp = 1;
    cr_expect_eq(zp_megatron_args_v2(gpt, &p, a, sizeof a), ZP_EUNSUPPORTED);
    p.sp = 0;
    cr_expect_eq(zp_megatron_args_v2(&zp_zoo_find("llama-2-7b")->model, &p, a, sizeof a), ZP_EUNSUPPORTED);
    cr_expect(strstr(zp_error_message(), "GPTs only") != NULL, "%s", zp_error_message());
}

/* ---- launches read back (formats/zp_launch.h) ---- */

/* Plan p of model src written as Megatron-LM's arguments and read back: the model into *m (stated, the same
 * parameters) and the launch's request on 64 GPUs of dgx-a100 into *r (m must outlive r). */
static void megatron_read_back(const zp_model *src, const zp_plan *p, zp_model *m, zp_search_req *r)
{
    char a[1024];
    cr_assert_eq(zp_megatron_args(src, p, a, sizeof a), ZP_OK, "%s", zp_error_message());
    zp_launch l;
    cr_assert_eq(zp_megatron_args_parse(a, "args", &l), ZP_OK, "%s", zp_error_message());
    int stated = 0;
    cr_assert_eq(zp_launch_model(&l, m, &stated), ZP_OK, "%s", zp_error_message());
    cr_assert(stated);
    cr_expect_eq(zp_model_params(m), zp_model_params(src), "%.0f != %.0f", zp_model_params(m), zp_model_params(src));
    zp_search_req_default(r, m, zp_test_preset("dgx-a100"), 64);
    cr_assert_eq(zp_launch_request(&l, r), ZP_OK, "%s", zp_error_message());
}

/* Megatron-LM's arguments zplan writes read back as the same model (to the parameter) and the same plan. */
Test(launch, megatron_args_round_trip)
{
    const zp_model *llama = &zp_zoo_find("llama-3-8b")->model;
    zp_plan p = zp_test_plan(1, 16, 4, 2);
    p.sp = 1;
    p.grad_accum = 4;
    p.bf16 = 1;
    p.grad_bytes = 4.0;
    zp_plan_set_recompute(&p, ZP_RECOMPUTE_SELECTIVE);
    zp_model m;
    zp_search_req r;
    megatron_read_back(llama, &p, &m, &r);
    cr_expect_eq(m.rope_theta, 500000.0);
    cr_expect(r.base.stage == 1 && r.base.mp == 4 && r.base.pp == 1 && r.base.sp == 1 && r.base.micro_batch == 2 &&
              r.base.grad_accum == 4);
    cr_expect(zp_search_req_given(&r, ZP_SEARCH_STAGE | ZP_SEARCH_DIM(ZP_DIM_TP) | ZP_SEARCH_DIM(ZP_DIM_PP) |
                                          ZP_SEARCH_SP | ZP_SEARCH_MICRO_BATCH | ZP_SEARCH_ACCUM |
                                          ZP_SEARCH_RECOMPUTE | ZP_SEARCH_BF16),
              "the launch's plan given, not searched");
    cr_expect(zp_search_req_recompute(&r) == ZP_RECOMPUTE_SELECTIVE && r.base.bf16 == 1 && r.base.grad_bytes == 4.0);
}

/* A misspelt key that would change the answer is refused, naming the line and the key it means; a key zplan
 * does not know otherwise is noted; a value left to a shell variable is refused where it is read. */
Test(launch, megatron_args_refuse)
{
    zp_launch l;
    cr_expect_eq(zp_megatron_args_parse("--num-layers 2\n--hiden-size 64\n", "a", &l), ZP_EINVAL);
    cr_expect(strstr(zp_error_message(), "a:2: unknown key --hiden-size: did you mean --hidden-size") != NULL, "%s",
              zp_error_message());
    cr_expect_eq(zp_megatron_args_parse("N=4\n--num-layers $N --hidden-size ${H} --some-new-flag\n", "b", &l),
                 ZP_EINVAL);
    cr_expect(strstr(zp_error_message(), "b:2: --hidden-size: its value '${H}'") != NULL, "%s", zp_error_message());
    cr_assert_eq(zp_megatron_args_parse("N=4\n--num-layers $N --some-new-flag\n", "c", &l), ZP_OK, "%s",
                 zp_error_message());
    cr_expect_eq(l.layers, 4);
    cr_expect(l.notes.n == 1 && strstr(l.notes.line[0], "--some-new-flag") != NULL);
    cr_expect_eq(zp_megatron_args_parse("--num-layers 2 'unclosed\n", "d", &l), ZP_EINVAL);
}

/* TOML: sections, strings of both quotes, arrays over several lines, comments; quiet sections ignored. */
Test(launch, torchtitan_toml)
{
    zp_launch l;
    const char *t = "[job]\ndescription = \"x # not a comment\"\n[model]\nname = 'llama3' # c\nflavor = \"70B\"\n"
                    "converters = [\n  \"x\",\n]\n[training]\nlocal_batch_size = 2\nseq_len = 4096\n"
                    "[parallelism]\ntensor_parallel_degree = 8\npipeline_parallel_degree = 2\n"
                    "pipeline_parallel_microbatch_size = 1\n[activation_checkpoint]\nmode = \"full\"\n";
    cr_assert_eq(zp_torchtitan_parse(t, "t", &l), ZP_OK, "%s", zp_error_message());
    cr_expect_str_eq(l.zoo, "llama-3-70b");
    cr_expect(l.tp == 8 && l.pp == 2 && l.seq == 4096 && l.micro_batch == 1 && l.grad_accum == 2);
    cr_expect_eq(l.recompute, ZP_RECOMPUTE_FULL);
    cr_expect_eq(zp_torchtitan_parse("[training]\nseq_len = \"8192\n", "u", &l), ZP_EINVAL);
    cr_expect_eq(zp_torchtitan_parse("[training]\nseq_len 8192\n", "v", &l), ZP_EINVAL);
    cr_expect(strstr(zp_error_message(), "v:2:") != NULL, "%s", zp_error_message());
}

/* YAML: nesting by indentation, ${.key} and ${a.b} resolved, null unstated, sequences skipped. */
Test(launch, nemo_yaml)
{
    zp_launch l;
    const char *y = "trainer:\n  devices: 8\n  num_nodes: 2\n  precision: bf16\nmodel:\n  micro_batch_size: 1\n"
                    "  global_batch_size: 64\n  encoder_seq_length: 2048\n  max_position_embeddings: ${.encoder_seq_length}\n"
                    "  num_layers: 4\n  hidden_size: 256\n  num_attention_heads: 8\n  kv_channels: null\n"
                    "  tensor_model_parallel_size: ${model.num_layers}\n  optim:\n    name: distributed_fused_adam\n"
                    "    betas:\n    - 0.9\n    - 0.95\n";
    cr_assert_eq(zp_nemo_parse(y, "y", &l), ZP_OK, "%s", zp_error_message());
    cr_expect(l.gpus_per_node == 8 && l.nodes == 2 && zp_launch_gpus(&l) == 16);
    cr_expect(l.positions == 2048 && l.tp == 4 && l.stage == 1 && l.head_dim == 0);
    cr_expect_eq(l.precision, ZP_LAUNCH_BF16);
    cr_expect_eq(zp_nemo_parse("model:\n  num_layers: [\n", "z", &l), ZP_EINVAL);
}

/* What a DeepSpeed config cannot say is refused, naming it. */
Test(launch, dsconfig_check)
{
    zp_plan p;
    zp_plan_default(&p, 16);
    cr_expect_eq(zp_dsconfig_check(&p), ZP_OK);
    zp_plan_set_recompute(&p, ZP_RECOMPUTE_SELECTIVE);
    cr_expect_eq(zp_dsconfig_check(&p), ZP_EUNSUPPORTED);
    cr_expect(strstr(zp_error_message(), "selective recompute") != NULL, "%s", zp_error_message());
}

/* Qwen2's QKV biases (--disable-bias-linear --add-qkv-bias) and checkpoints split over TP
 * (--distribute-saved-activations) read back as they were written. */
Test(launch, megatron_args_qkv_bias_and_pa)
{
    const zp_model *qwen = &zp_zoo_find("qwen2-72b")->model;
    zp_plan p = zp_test_plan(0, 8, 8, 1);
    p.pa = 1;
    zp_plan_set_recompute(&p, ZP_RECOMPUTE_FULL);
    zp_model m;
    zp_search_req r;
    megatron_read_back(qwen, &p, &m, &r);
    cr_expect(r.base.pa == 1 && zp_search_req_recompute(&r) == ZP_RECOMPUTE_FULL && r.base.mp == 8);
}
