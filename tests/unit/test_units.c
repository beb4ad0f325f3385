/* A team's units (planner/zp_units.h) against hand arithmetic; this era's defaults (FlashAttention by GPU,
 * a config.json's pre-training sequence); the plans ranked by tokens/s; a dominated plan's step at least
 * its twin's; step times fixed-point. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "zp_device.h"
#include "zp_framework.h"
#include "zp_report.h"
#include "zp_search.h"
#include "zp_units.h"
#include "zp_zoo.h"

static const zp_cluster *cluster(const char *name)
{
    const zp_cluster *c;
    cr_assert_eq(zp_cluster_find(name, &c), ZP_OK);
    return c;
}

static const zp_model *zoo(const char *name)
{
    const zp_zoo_entry *e = zp_zoo_find(name);
    cr_assert(e, "%s", name);
    return &e->model;
}

#define NEAR(x, want, rel) cr_expect(fabs((x) - (want)) <= (rel) * fabs(want), "%s = %.10g, want %.10g", #x, (double)(x), (double)(want))

/* Llama-3-70B: N = 70,553,706,496 published, less the untied input embedding 128,256 x 8,192 =
 * 1,050,673,152: 69,503,033,344; 6N = 417,018,200,064; 12LHQT = 12 x 80 x 64 x 128 x 8,192 =
 * 64,424,509,440; in all 481,442,709,504 FLOPs per token. */
Test(units, palm_flops_per_token_by_hand)
{
    NEAR(zp_units_model_flops_per_token(zoo("llama-3-70b")), 481442709504.0, 1e-12);
    /* GPT-2-style tied head: N = every parameter less the learned positions (the tied table is the head) */
    const zp_model *g = zoo("gpt2-1.5B");
    const double n = zp_model_params(g) - (double)g->seq * (double)g->hidden;
    NEAR(zp_units_model_flops_per_token(g),
         6.0 * n + 12.0 * (double)g->layers * (double)g->hidden * (double)g->seq, 1e-12);
}

/* An MoE model counts the parameters a token passes through, not its total. */
Test(units, moe_counts_active_parameters)
{
    const zp_model *m = zoo("mixtral-8x7b");
    const double f = zp_units_model_flops_per_token(m);
    cr_expect_lt(f, 6.0 * zp_model_params(m) * 0.5, "%g", f);
    cr_expect_gt(f, 6.0 * (zp_model_params_active(m) - zp_model_params_embedding(m)), "%g", f);
}

/* The hand arithmetic: 256 sequences of 8,192 tokens every 30.762856 s on 64 H100: 1,065.18
 * tokens/s per GPU, 68,171.6 per cluster; 481.44 GFLOPs per token: 512.8 TFLOP/s, 51.85% of 989; 2T
 * tokens: 29,337,741 s = 339.56 days, 521,560 GPU-hours, x 700 W = 365.09 MWh, x $2 = $1,043,120. */
Test(units, tokens_mfu_and_budget_by_hand)
{
    const zp_model *m = zoo("llama-3-70b");
    const zp_cluster *c = cluster("dgx-h100");
    zp_eval e;
    memset(&e, 0, sizeof e);
    zp_plan_default(&e.plan, 64);
    e.plan.stage = 3;
    e.plan.mp = 4;
    e.plan.dp = 16;
    e.plan.bf16 = 1;
    e.global_batch = 256;
    e.time.total = 30.762856;
    zp_units_fill(m, c, &e);
    const double tps = 256.0 * 8192.0 / 30.762856;
    NEAR(e.tokens_per_s, tps, 1e-12);
    NEAR(e.tokens_per_s_per_gpu, tps / 64.0, 1e-12);
    NEAR(e.tokens_per_s_per_gpu, 1065.18, 1e-5);
    NEAR(e.model_tflops_per_gpu, 481442709504.0 * tps / 64.0 / 1e12, 1e-12);
    NEAR(e.mfu, 481442709504.0 * tps / 64.0 / 989e12, 1e-12);
    NEAR(e.mfu, 0.51853, 1e-4);
    zp_train_cost t;
    zp_units_train(&e, c, 2e12, 2.0, &t);
    const double s = 2e12 / tps;
    NEAR(t.days, s / 86400.0, 1e-12);
    NEAR(t.days, 339.557, 1e-5);
    NEAR(t.gpu_hours, 64.0 * s / 3600.0, 1e-12);
    NEAR(t.energy_mwh, 700.0 * 64.0 * s / 3600.0 / 1e6, 1e-12);
    NEAR(t.cost_usd, 2.0 * 64.0 * s / 3600.0, 1e-12);
    zp_units_train(&e, c, 2e12, 0, &t);
    cr_expect_eq(t.cost_usd, 0);
}

/* FlashAttention by default on the GPUs that run FlashAttention-2 (A100, H100, H200), not on V100; not in a
 * framework release without it; not with FlashAttention-1 and heads over 128. */
Test(units, flash_attention_default_by_gpu)
{
    zp_search_req r;
    zp_search_req_default(&r, zoo("llama-3-8b"), cluster("dgx-h100"), 8);
    cr_expect_eq(zp_search_flash_default(&r), 1);
    r.cluster = cluster("dgx-a100");
    cr_expect_eq(zp_search_flash_default(&r), 1);
    r.cluster = cluster("dgx-h200");
    cr_expect_eq(zp_search_flash_default(&r), 1);
    r.cluster = cluster("dgx2");
    cr_expect_eq(zp_search_flash_default(&r), 0);
    r.cluster = cluster("dgx-h100");
    for (int f = 0; f < ZP_NFRAMEWORKS; f++) {
        r.framework = f;
        const zp_framework *fw = zp_framework_get(f);
        cr_expect_eq(zp_search_flash_default(&r), f == ZP_FRAMEWORK_ANY || fw->flash, "%s", fw->name);
    }
    r.framework = ZP_FRAMEWORK_ANY;
    zp_search_req big;
    zp_search_req_default(&big, zoo("1T"), cluster("dgx-h100"), 3072); /* heads of 160 */
    big.base.flash_kernel = ZP_FLASH_KERNEL_FA1;
    cr_expect_eq(zp_search_flash_default(&big), 0);
}

/* The fitting plans of one kind (simulated, bounded, ...) are ranked by tokens/s, whatever their batch;
 * every dominated plan's step is at least the step of each plan without its extra work that runs its batch. */
Test(units, ranked_by_tokens_and_dominated_at_least_twin)
{
    zp_search_req r;
    zp_search_result res;
    zp_search_req_default(&r, zoo("13B"), cluster("dgx-a100"), 64);
    r.base.flash_attn = 1;
    r.simulate = 1;
    r.jobs = 2;
    cr_assert_eq(zp_search_run(&r, &res), ZP_OK, "%s", zp_error_message());
    int batches_differ = 0, dominated = 0;
    for (int i = 1; i < res.n_fit; i++) {
        const zp_eval *a = &res.plans[i - 1], *b = &res.plans[i];
        batches_differ |= a->global_batch != b->global_batch;
        if (strcmp(a->method, b->method) == 0 && a->dominated == b->dominated)
            cr_expect_geq(a->tokens_per_s, b->tokens_per_s, "plans %d and %d", i, i + 1);
    }
    cr_expect(batches_differ, "the search offers plans of different global batches");
    for (int i = 0; i < res.n_fit; i++) {
        const zp_eval *e = &res.plans[i];
        if (!e->dominated)
            continue;
        dominated++;
        for (int j = 0; j < res.n_fit; j++) {
            const zp_eval *q = &res.plans[j];
            if (q->dominated || q->plan.stage != e->plan.stage || q->plan.mp != e->plan.mp ||
                q->plan.micro_batch != e->plan.micro_batch || q->plan.grad_accum != e->plan.grad_accum ||
                q->plan.checkpoint != e->plan.checkpoint || q->plan.selective != e->plan.selective ||
                q->plan.sp != e->plan.sp || q->plan.pp != e->plan.pp || q->plan.ep != e->plan.ep || q->plan.pa ||
                q->plan.pa_cpu || q->plan.offload != ZP_OFFLOAD_NONE)
                continue;
            cr_expect_geq(e->time.total, q->time.total, "dominated plan %d's step below its twin %d's", i + 1, j + 1);
            cr_expect_leq(e->tokens_per_s, q->tokens_per_s);
        }
        cr_expect_leq(e->tokens_per_s, res.plans[0].tokens_per_s, "dominated plan %d faster than the best", i + 1);
    }
    cr_expect_gt(dominated, 0);
    zp_search_result_free(&res);
}

/* Step times read fixed-point: never an exponent. */
Test(units, seconds_fixed_point)
{
    char b[48];
    zp_report_seconds(1080.4, b, sizeof b);
    cr_expect_str_eq(b, "1080.4");
    zp_report_seconds(1.08e3, b, sizeof b);
    cr_expect_str_eq(b, "1080.0");
    zp_report_seconds(41.4919, b, sizeof b);
    cr_expect_str_eq(b, "41.49");
    zp_report_seconds(0.0123456, b, sizeof b);
    cr_expect_str_eq(b, "0.01235");
    zp_report_seconds(123456.7, b, sizeof b);
    cr_expect_str_eq(b, "123456.7");
    cr_expect_null(strchr(b, 'e'));
}

/* A config.json's sequence is its pre-training context: rope scaling's original, else
 * max_position_embeddings capped at 8,192 for rotary positions; the note says which. */
Test(units, hf_sequence_rule)
{
    zp_model m;
    cr_assert_eq(zp_model_from_hf_config(ZP_HF_DIR "/qwen2-7b.json", &m), ZP_OK, "%s", zp_error_message());
    cr_expect_eq(m.seq, ZP_MODEL_PRETRAIN_SEQ_CAP);
    cr_expect(strstr(m.seq_note, "capped at 8192"), "%s", m.seq_note);
    cr_expect_str_eq(zp_model_family(&m), "qwen2");
    cr_assert_eq(zp_model_from_hf_config(ZP_HF_DIR "/llama-3.1-8b.json", &m), ZP_OK);
    cr_expect_eq(m.seq, 8192);
    cr_expect(strstr(m.seq_note, "original_max_position_embeddings"), "%s", m.seq_note);
    cr_assert_eq(zp_model_from_hf_config(ZP_HF_DIR "/deepseek-v3.json", &m), ZP_OK);
    cr_expect_eq(m.seq, 4096);
    cr_expect_str_eq(zp_model_family(&m), "deepseek_v3");
    cr_assert_eq(zp_model_from_hf_config(ZP_HF_DIR "/phi-3-mini-4k.json", &m), ZP_OK);
    cr_expect_eq(m.seq, 4096);
    cr_assert_eq(zp_model_from_hf_config(ZP_HF_DIR "/gpt2.json", &m), ZP_OK); /* learned positions: the table */
    cr_expect_eq(m.seq, 1024);
    zp_model_origin o;
    cr_assert_eq(zp_model_resolve(ZP_HF_DIR "/qwen2-7b.json", 4096, &m, &o), ZP_OK);
    cr_expect_eq(m.seq, 4096);
    cr_expect(strstr(m.seq_note, "--seq"), "%s", m.seq_note);
    cr_expect_str_eq(zp_model_family(zoo("llama-3-70b")), "llama");
    cr_expect_str_eq(zp_model_family(zoo("100B")), "gpt");
}
