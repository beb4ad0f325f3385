/* sim/ search and reports/ what-if JSON contract. */
#include <criterion/criterion.h>
#include <math.h>

#include <string.h>

#include "zp_device.h"
#include "zp_device_fp8.h"
#include "zp_fp8.h"
#include "zp_nearmiss.h"
#include "zp_report.h"
#include "zp_search.h"
#include "zp_framework.h"
#include "zp_zoo.h"
#include "../zp_test.h"

static const zp_cluster *dgx2(void)
{
    const zp_cluster *c = zp_test_preset("dgx2");
    return c;
}

/* MODEL on GPUS GPUs of dgx2, every option searched, into *res (with *r the request). */
static void search_dgx2(const char *model, int64_t gpus, zp_search_req *r, zp_search_result *res)
{
    zp_search_req_default(r, &zp_zoo_find(model)->model, dgx2(), gpus);
    cr_assert_eq(zp_search_run(r, res), ZP_OK, "%s", zp_error_message());
}

/* 100B on 400 GPUs of dgx2 with stage, MP and micro-batch given, searched into *res. */
static void search_100b(int stage, int64_t mp, int64_t micro, zp_search_req *r, zp_search_result *res)
{
    zp_search_req_default(r, &zp_zoo_find("100B")->model, dgx2(), 400);
    r->base.stage = stage;
    zp_search_req_give(r, ZP_SEARCH_STAGE);
    r->base.mp = mp;
    zp_search_req_give(r, ZP_SEARCH_DIM(ZP_DIM_TP));
    r->base.micro_batch = micro;
    zp_search_req_give(r, ZP_SEARCH_MICRO_BATCH);
    if (stage == 2) { /* the paper's plan: Pa, no offload */
        r->base.pa = 1;
        zp_search_req_give(r, ZP_SEARCH_PA);
        r->base.pa_cpu = 0;
        zp_search_req_give(r, ZP_SEARCH_PA_CPU);
        r->base.offload = ZP_OFFLOAD_NONE;
        zp_search_req_give(r, ZP_SEARCH_OFFLOAD);
    }
    cr_assert_eq(zp_search_run(r, res), ZP_OK, "%s", zp_error_message());
}

Test(search, every_option_given_is_plans0)
{
    zp_search_req r;
    zp_search_result res;
    search_100b(2, 16, 32, &r, &res);
    cr_assert_eq(res.n, 1);
    const zp_plan *p = &res.plans[0].plan;
    cr_expect_eq(p->stage, 2);
    cr_expect_eq(p->mp, 16);
    cr_expect_eq(p->dp, 25);
    cr_expect_eq(p->micro_batch, 32);
    cr_expect_eq(p->pa, 1);
    cr_expect_eq(res.plans[0].global_batch, 800);
    cr_expect(res.plans[0].fits);
    zp_search_result_free(&res);
}

Test(search, global_batch_kept_with_accumulation)
{
    const zp_model *m = &zp_zoo_find("1.5B")->model;
    zp_search_req r;
    zp_search_req_default(&r, m, dgx2(), 64);
    r.global_batch = 4096;
    zp_search_req_give(&r, ZP_SEARCH_GLOBAL_BATCH);
    zp_search_result res;
    cr_assert_eq(zp_search_run(&r, &res), ZP_OK, "%s", zp_error_message());
    cr_assert_gt(res.n_fit, 0);
    for (int i = 0; i < res.n; i++) {
        const zp_eval *e = &res.plans[i];
        cr_expect_eq(e->global_batch, 4096, "plan %d batch %g", i, e->global_batch);
        cr_expect_eq(e->plan.micro_batch * e->plan.grad_accum * e->plan.dp, 4096);
    }
    zp_search_result_free(&res);
}

Test(search, ranked_fitting_first_by_throughput)
{
    zp_search_req r;
    zp_search_result res;
    search_dgx2("20B", 128, &r, &res);
    cr_assert_gt(res.n_fit, 0);
    for (int i = 1; i < res.n; i++) {
        cr_expect(res.plans[i - 1].fits >= res.plans[i].fits);
        if (res.plans[i].fits)
            cr_expect_geq(res.plans[i - 1].samples_per_s, res.plans[i].samples_per_s);
    }
    /* plain DP of 20B cannot fit in 32 GB */
    for (int i = 0; i < res.n; i++)
        if (res.plans[i].plan.stage == 0 && res.plans[i].plan.mp == 1)
            cr_expect(!res.plans[i].fits);
    zp_search_result_free(&res);
}

Test(search, huge_but_valid_has_no_overflow)
{
    zp_search_req r;
    zp_search_result res;
    search_dgx2("1T", 1000000, &r, &res);
    for (int i = 0; i < res.n; i++) {
        const zp_eval *e = &res.plans[i];
        cr_expect(isfinite(e->mem.total) && isfinite(e->time.total) && isfinite(e->tflops_per_gpu));
        cr_expect_gt(e->time.total, 0);
    }
    cr_expect_gt(res.n_fit, 0);
    zp_search_result_free(&res);
}

/* The request is a base plan and a mask: a new request leaves every decision to the search (TP overlap off
 * unless asked) over zp_plan_default's plan; a value given is the base plan's with its bit clear, and opening
 * the bit again searches it, whatever the base plan holds. */
Test(search, request_is_base_plan_and_mask)
{
    const zp_model *m = &zp_zoo_find("1.5B")->model;
    zp_search_req r;
    zp_search_req_default(&r, m, dgx2(), 64);
    zp_plan def;
    zp_plan_default(&def, 64);
    cr_expect_eq(memcmp(&r.base, &def, sizeof def), 0, "the base plan is zp_plan_default's");
    for (int d = 0; d < ZP_NDIMS; d++)
        cr_expect(zp_search_req_searched(&r, ZP_SEARCH_DIM(d)), "dimension %d searched", d);
    cr_expect(zp_search_req_searched(&r, ZP_SEARCH_STAGE | ZP_SEARCH_MICRO_BATCH | ZP_SEARCH_GLOBAL_BATCH));
    cr_expect(zp_search_req_given(&r, ZP_SEARCH_TP_OVERLAP) && r.base.tp_overlap == ZP_TP_OVERLAP_OFF);
    cr_expect_eq(zp_search_req_deg(&r, ZP_DIM_TP), ZP_DIM_ANY);
    r.simulate = 0;
    r.base.stage = 2;
    r.base.mp = 4;
    zp_search_req_give(&r, ZP_SEARCH_STAGE | ZP_SEARCH_DIM(ZP_DIM_TP));
    cr_expect_eq(zp_search_req_deg(&r, ZP_DIM_TP), 4);
    zp_search_result res;
    cr_assert_eq(zp_search_run(&r, &res), ZP_OK, "%s", zp_error_message());
    cr_assert_gt(res.n, 0);
    for (int i = 0; i < res.n; i++)
        cr_expect(res.plans[i].plan.stage == 2 && res.plans[i].plan.mp == 4, "plan %d: stage %d, MP %lld", i,
                  res.plans[i].plan.stage, (long long)res.plans[i].plan.mp);
    zp_search_result_free(&res);
    zp_search_req_open(&r, ZP_SEARCH_STAGE); /* the base plan still says 2: no longer a constraint */
    cr_assert_eq(zp_search_run(&r, &res), ZP_OK, "%s", zp_error_message());
    int other = 0;
    for (int i = 0; i < res.n; i++)
        other += res.plans[i].plan.stage != 2 && res.plans[i].plan.mp == 4;
    cr_expect_gt(other, 0, "the stage searched again");
    zp_search_result_free(&res);
    /* a given recompute leaves --checkpoint-every's count alone (zp_plan_set_recompute would clear it) */
    r.base.ckpt_every = 2;
    zp_search_req_give_recompute(&r, ZP_RECOMPUTE_SELECTIVE);
    cr_expect(r.base.ckpt_every == 2 && zp_search_req_recompute(&r) == ZP_RECOMPUTE_SELECTIVE);
    cr_expect_eq(zp_search_run(&r, &res), ZP_EINVAL, "--checkpoint-every needs full recompute");
}

Test(search, bad_requests)
{
    const zp_model *m = &zp_zoo_find("1.5B")->model;
    zp_search_req r;
    zp_search_result res;
    zp_search_req_default(&r, m, dgx2(), 64);
    r.base.mp = 3;
    zp_search_req_give(&r, ZP_SEARCH_DIM(ZP_DIM_TP));
    cr_expect_eq(zp_search_run(&r, &res), ZP_EINVAL);
    r.base.mp = 128;
    zp_search_req_give(&r, ZP_SEARCH_DIM(ZP_DIM_TP));
    cr_expect_eq(zp_search_run(&r, &res), ZP_EINVAL);
    r.base.mp = 32; /* divides 64 GPUs but not GPT-2's 16 heads */
    zp_search_req_give(&r, ZP_SEARCH_DIM(ZP_DIM_TP));
    cr_expect_eq(zp_search_run(&r, &res), ZP_EINVAL);
    zp_search_req_default(&r, m, dgx2(), 0);
    cr_expect_eq(zp_search_run(&r, &res), ZP_EINVAL);
    zp_search_req_default(&r, m, dgx2(), 64);
    r.base.stage = 4;
    zp_search_req_give(&r, ZP_SEARCH_STAGE);
    cr_expect_eq(zp_search_run(&r, &res), ZP_EINVAL);
    zp_search_req_default(&r, m, dgx2(), 64);
    r.base.mp = 1;
    zp_search_req_give(&r, ZP_SEARCH_DIM(ZP_DIM_TP));
    r.global_batch = 100; /* not a multiple of DP 64 */
    zp_search_req_give(&r, ZP_SEARCH_GLOBAL_BATCH);
    cr_expect_eq(zp_search_run(&r, &res), ZP_EINVAL);
    zp_search_req_default(&r, m, dgx2(), 64);
    r.gpu_mem = 1;
    cr_expect_eq(zp_search_run(&r, &res), ZP_EINVAL);
}

Test(search, json_contract)
{
    zp_search_req r;
    zp_search_result res;
    search_dgx2("8B", 64, &r, &res);
    zp_whatif w = {.model = r.model, .cluster = dgx2(), .gpus = 64, .gpu_mem = 32e9, .result = &res, .top = 5};
    json_t *j = zp_report_whatif_json(&w);
    cr_assert_not_null(j);
    const char *mk[] = {"name", "layers", "hidden", "heads", "seq", "vocab", "params", "active_params", "attention",
                        "kv_heads", "head_dim", "mlp", "norm", "position", "experts", "top_k", "shared_experts"};
    for (int i = 0; i < 17; i++)
        cr_expect_not_null(json_object_get(json_object_get(j, "model"), mk[i]), "model.%s", mk[i]);
    const char *ck[] = {"name", "gpus", "gpus_per_node", "gpu_mem_gb"};
    for (int i = 0; i < 4; i++)
        cr_expect_not_null(json_object_get(json_object_get(j, "cluster"), ck[i]), "cluster.%s", ck[i]);
    json_t *plans = json_object_get(j, "plans");
    cr_assert(json_is_array(plans));
    cr_assert_gt(json_array_size(plans), 0);
    const char *pk[] = {"stage", "mp", "dp", "micro_batch", "global_batch", "pa", "pa_cpu", "offload", "memory_gb",
                        "host_memory_gb", "fits", "step_time_s", "tflops_per_gpu", "pflops", "method"};
    const char *memk[] = {"params", "grads", "optimizer", "activations", "buffers", "fragmentation", "total"};
    json_t *p0 = json_array_get(plans, 0);
    for (size_t i = 0; i < sizeof pk / sizeof pk[0]; i++)
        cr_expect_not_null(json_object_get(p0, pk[i]), "plans[0].%s", pk[i]);
    for (size_t i = 0; i < 7; i++)
        cr_expect(json_is_number(json_object_get(json_object_get(p0, "memory_gb"), memk[i])), "memory_gb.%s", memk[i]);
    /* the types a JSON consumer reads them with */
    const char *ints[] = {"stage", "mp", "dp", "micro_batch", "grad_accum"};
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++)
        cr_expect(json_is_integer(json_object_get(p0, ints[i])), "plans[0].%s is an integer", ints[i]);
    cr_expect(json_is_boolean(json_object_get(p0, "pa")) && json_is_boolean(json_object_get(p0, "fits")));
    cr_expect(json_is_string(json_object_get(p0, "offload")));
    cr_expect(json_is_number(json_object_get(json_object_get(p0, "time_breakdown_s"), "compute")));
    cr_expect_null(json_object_get(p0, "reason"), "a plan that fits has no reason");
    cr_expect_null(json_object_get(p0, "options"), "readers' columns stay out of the contract");
    cr_expect(json_is_string(json_object_get(j, "flop_convention")));
    cr_expect_eq(json_array_size(plans), (size_t)res.n, "every plan, not only the ones shown");
    json_t *best = json_object_get(j, "best");
    cr_assert(json_is_integer(best));
    cr_expect(json_is_true(json_object_get(json_array_get(plans, (size_t)json_integer_value(best)), "fits")));
    cr_expect_str_eq(json_string_value(json_object_get(p0, "method")), "analytic");
    json_decref(j);
    zp_search_result_free(&res);
}

/* An MoE model's JSON says its architecture and the parameters a token passes through (Mixtral 8x7B: 46.7B,
 * 12.9B active, 8 experts, top-2, 8 KV heads of 128). */
Test(search, json_model_architecture)
{
    const zp_cluster *h100 = zp_test_preset("dgx-h100");
    zp_search_req r;
    zp_search_result res;
    zp_search_req_default(&r, &zp_zoo_find("mixtral-8x7b")->model, h100, 64);
    cr_assert_eq(zp_search_run(&r, &res), ZP_OK, "%s", zp_error_message());
    zp_whatif w = {.model = r.model, .cluster = h100, .gpus = 64, .gpu_mem = 80e9, .result = &res, .top = 1};
    json_t *j = zp_report_whatif_json(&w), *m = json_object_get(j, "model");
    cr_assert_not_null(m);
    cr_expect_float_eq(json_real_value(json_object_get(m, "active_params")), 12.88e9, 0.01e9);
    cr_expect_lt(json_real_value(json_object_get(m, "active_params")), json_real_value(json_object_get(m, "params")));
    cr_expect_eq(json_integer_value(json_object_get(m, "experts")), 8);
    cr_expect_eq(json_integer_value(json_object_get(m, "top_k")), 2);
    cr_expect_eq(json_integer_value(json_object_get(m, "kv_heads")), 8);
    cr_expect_str_eq(json_string_value(json_object_get(m, "mlp")), "gated");
    json_decref(j);
    zp_search_result_free(&res);
}

/* When no plan fits (exit 3), the contract still has "plans" (every plan evaluated, none fitting) beside
 * "best": null and the near misses; "best" once took the place of "plans". */
Test(search, json_contract_when_nothing_fits)
{
    zp_search_req r;
    zp_search_result res;
    search_100b(3, 1, 200, &r, &res);
    cr_assert_eq(res.n_fit, 0);
    zp_whatif w = {.model = r.model, .cluster = dgx2(), .gpus = 400, .gpu_mem = 32e9, .result = &res, .top = 5};
    json_t *j = zp_report_whatif_json(&w);
    cr_assert_not_null(j);
    json_t *plans = json_object_get(j, "plans");
    cr_assert(json_is_array(plans), "no plans key when nothing fits");
    cr_expect_eq(json_array_size(plans), (size_t)res.n);
    cr_expect(json_is_false(json_object_get(json_array_get(plans, 0), "fits")));
    cr_expect(json_is_null(json_object_get(j, "best")));
    json_decref(j);
    zp_search_result_free(&res);
}

/* Issue #18 case 3: with no batch option the what-if proposes the batch a team would pick (GPT-3's tokens
 * per step by size), not the largest that fits, and every plan leaves the reserve free. 13B on 8 x 80 GB
 * used to get micro-batch 50 at 79.9 GB. */
Test(search, default_batch_and_reserve)
{
    const zp_cluster *a100 = zp_test_preset("dgx-a100");
    const zp_model *m = &zp_zoo_find("13B")->model;
    zp_search_req r;
    zp_search_req_default(&r, m, a100, 8);
    cr_expect_float_eq(r.reserve, ZP_DEFAULT_RESERVE, 1);
    zp_search_result res;
    cr_assert_eq(zp_search_run(&r, &res), ZP_OK, "%s", zp_error_message());
    const int64_t target = zp_search_default_batch(m); /* 2M tokens of 1024 */
    cr_expect_eq(target, 1953);
    cr_expect_eq(res.default_batch, target);
    cr_assert_gt(res.n_fit, 0);
    for (int i = 0; i < res.n; i++) {
        const zp_eval *e = &res.plans[i];
        const int64_t per = (target + e->plan.dp - 1) / e->plan.dp;
        cr_expect_geq(e->global_batch, target);
        cr_expect_lt(e->global_batch, (double)(per + e->plan.grad_accum) * e->plan.dp, "plan %d: %g", i,
                     e->global_batch);
        if (e->fits)
            cr_expect_leq(e->mem.total, a100->gpu_mem - ZP_DEFAULT_RESERVE, "plan %d eats into the reserve", i);
    }
    zp_search_result_free(&res);
    /* the rule by size: GPT-3's batches (Brown et al. 2020, Table 2.1) */
    cr_expect_float_eq(zp_search_default_batch_tokens(125e6), 0.5e6, 1);
    cr_expect_float_eq(zp_search_default_batch_tokens(1.5e9), 1e6, 1);
    cr_expect_float_eq(zp_search_default_batch_tokens(13e9), 2e6, 1);
    cr_expect_float_eq(zp_search_default_batch_tokens(175e9), 3.2e6, 1);
    /* a reserve larger than the GPU is refused; none at all is allowed */
    zp_search_req_default(&r, m, a100, 8);
    r.reserve = a100->gpu_mem;
    cr_expect_eq(zp_search_validate(&r), ZP_EINVAL);
    r.reserve = 0;
    cr_expect_eq(zp_search_validate(&r), ZP_OK);
}

/* Issue #18 case 2: a plan that does not fit says what would: the largest micro-batch and sequence that
 * fit as given (and one more does not), and changes of one option whose best plan fits. */
Test(search, near_miss)
{
    zp_search_req r;
    zp_search_result res;
    search_100b(3, 1, 200, &r, &res);
    const zp_model *m = r.model;
    cr_assert_eq(res.n_fit, 0);
    zp_near_miss nm;
    cr_assert_eq(zp_near_miss_find(&r, &res, &nm), ZP_OK, "%s", zp_error_message());
    const double usable = zp_search_usable_mem(&r), host = dgx2()->host_mem / dgx2()->gpus_per_node;
    cr_assert_gt(nm.max_micro_batch, 0);
    zp_plan p = nm.closest.plan;
    zp_memory mem;
    p.micro_batch = nm.max_micro_batch;
    cr_assert_eq(zp_memory_estimate(m, &p, &mem), ZP_OK);
    cr_expect(zp_memory_fits(&mem, usable, host, NULL, 0));
    p.micro_batch = nm.max_micro_batch + 1;
    cr_assert_eq(zp_memory_estimate(m, &p, &mem), ZP_OK);
    cr_expect(!zp_memory_fits(&mem, usable, host, NULL, 0));
    cr_assert_gt(nm.max_seq, 0);
    cr_expect_lt(nm.max_seq, m->seq);
    cr_assert_gt(nm.nfix, 0);
    int mp_fix = 0;
    for (int i = 0; i < nm.nfix; i++) {
        cr_expect(nm.fix[i].plan.fits, "fix %s does not fit", nm.fix[i].change);
        mp_fix |= strncmp(nm.fix[i].change, "--mp ", 5) == 0;
    }
    cr_expect(mp_fix, "more model parallelism keeps micro-batch 200 and fits");
    zp_search_result_free(&res);
}

/* --max-model: the largest model of a shape that a plan fits; one block more fits none. */
Test(search, max_model)
{
    const zp_cluster *a100 = zp_test_preset("dgx-a100");
    zp_search_req r;
    zp_search_req_default(&r, &zp_zoo_find("13B")->model, a100, 8);
    r.base.offload = ZP_OFFLOAD_NONE;
    zp_search_req_give(&r, ZP_SEARCH_OFFLOAD);
    zp_model big;
    int64_t layers;
    cr_assert_eq(zp_near_miss_max_model(&r, &big, &layers), ZP_OK, "%s", zp_error_message());
    cr_assert_gt(layers, 62);
    cr_expect_eq(big.layers, layers);
    zp_search_result res;
    r.model = &big;
    cr_assert_eq(zp_search_run(&r, &res), ZP_OK);
    cr_expect_gt(res.n_fit, 0);
    zp_search_result_free(&res);
    big.layers = layers + 1;
    cr_assert_eq(zp_search_run(&r, &res), ZP_OK);
    cr_expect_eq(res.n_fit, 0);
    zp_search_result_free(&res);
}

/* Every plan a search over 1.5B on 64 A100s (global batch 512: pipelines searched) evaluates, for one
 * --framework: the counts of plans with a property, into n[]. */
enum { F_ALL, F_STAGE_GT0, F_SP, F_SELECTIVE, F_OFFLOAD, F_PACPU, F_OVERLAP, F_INTERLEAVED_PP2, F_INTERLEAVED,
       F_PP2, F_FP32_GRADS, F_NCOUNTS };
static zp_status framework_search(int framework, int n[F_NCOUNTS])
{
    const zp_cluster *c = zp_test_preset("dgx-a100");
    zp_search_req r;
    zp_search_req_default(&r, &zp_zoo_find("1.5B")->model, c, 64);
    r.global_batch = 512;
    zp_search_req_give(&r, ZP_SEARCH_GLOBAL_BATCH);
    r.simulate = 0;
    r.framework = framework;
    zp_search_result res;
    zp_status st = zp_search_run(&r, &res);
    memset(n, 0, sizeof(int) * F_NCOUNTS);
    if (st != ZP_OK)
        return st;
    for (int i = 0; i < res.n; i++) {
        const zp_plan *p = &res.plans[i].plan;
        n[F_ALL]++;
        n[F_STAGE_GT0] += p->stage > 0;
        n[F_SP] += p->sp;
        n[F_SELECTIVE] += zp_plan_recompute(p) == ZP_RECOMPUTE_SELECTIVE;
        n[F_OFFLOAD] += p->offload != ZP_OFFLOAD_NONE;
        n[F_PACPU] += p->pa_cpu;
        n[F_OVERLAP] += p->overlap_comm;
        n[F_INTERLEAVED] += p->pp > 1 && p->schedule == ZP_PP_INTERLEAVED;
        n[F_INTERLEAVED_PP2] += p->pp == 2 && p->schedule == ZP_PP_INTERLEAVED;
        n[F_PP2] += p->pp == 2;
        n[F_FP32_GRADS] += zp_plan_grad_bytes(p) == 4.0;
    }
    zp_search_result_free(&res);
    return ZP_OK;
}

/* --framework: the search offers only what the release runs (megatron-2021: ZeRO stage 0, full or no
 * recompute, no SP, no offload or Pa+cpu, gradients reduced after the backward, interleaving from 3 stages;
 * deepspeed: no interleaving, no SP, no selective recompute), "any" everything; an option the release does
 * not run is refused. */
Test(search, framework_limits_the_plans)
{
    int any[F_NCOUNTS], m21[F_NCOUNTS], ds[F_NCOUNTS];
    cr_assert_eq(framework_search(ZP_FRAMEWORK_ANY, any), ZP_OK, "%s", zp_error_message());
    cr_assert_eq(framework_search(ZP_FRAMEWORK_MEGATRON_2021, m21), ZP_OK, "%s", zp_error_message());
    cr_assert_eq(framework_search(ZP_FRAMEWORK_DEEPSPEED, ds), ZP_OK, "%s", zp_error_message());
    /* without a framework every option is offered (so the limits below are not vacuous); bf16 (the A100's)
     * gradients stay bf16, where Megatron-LM v2 makes them fp32 */
    cr_expect_eq(any[F_FP32_GRADS], 0);
    cr_expect_eq(m21[F_FP32_GRADS], m21[F_ALL]);
    for (int k = F_STAGE_GT0; k < F_FP32_GRADS; k++)
        cr_expect_gt(any[k], 0, "any: no plan has property %d", k);
    cr_expect_gt(m21[F_ALL], 0);
    cr_expect_gt(m21[F_PP2], 0);
    cr_expect_gt(m21[F_INTERLEAVED], 0, "megatron-2021 interleaves with 4 stages");
    /* what each release never runs: no plan of it has the property */
    static const int m21_none[] = {F_INTERLEAVED_PP2, F_STAGE_GT0, F_SP, F_SELECTIVE, F_OFFLOAD, F_PACPU, F_OVERLAP};
    static const int ds_none[] = {F_INTERLEAVED, F_SP, F_SELECTIVE};
    for (size_t i = 0; i < sizeof m21_none / sizeof m21_none[0]; i++)
        cr_expect_eq(m21[m21_none[i]], 0, "megatron-2021: %d plans have property %d", m21[m21_none[i]], m21_none[i]);
    for (size_t i = 0; i < sizeof ds_none / sizeof ds_none[0]; i++)
        cr_expect_eq(ds[ds_none[i]], 0, "deepspeed: %d plans have property %d", ds[ds_none[i]], ds_none[i]);
    cr_expect_gt(ds[F_STAGE_GT0], 0);
    cr_expect_gt(ds[F_PP2], 0);
    /* given options the release does not run */
    const zp_cluster *c = zp_test_preset("dgx-a100");
    zp_search_req r;
    zp_search_result res;
    zp_search_req_default(&r, &zp_zoo_find("1.5B")->model, c, 64);
    r.simulate = 0;
    r.framework = ZP_FRAMEWORK_MEGATRON_2021;
    r.base.sp = 1;
    zp_search_req_give(&r, ZP_SEARCH_SP);
    cr_expect_eq(zp_search_run(&r, &res), ZP_EINVAL);
    cr_expect(strstr(zp_error_message(), "megatron-2021") != NULL, "%s", zp_error_message());
    zp_search_req_open(&r, ZP_SEARCH_SP);
    r.global_batch = 512;
    zp_search_req_give(&r, ZP_SEARCH_GLOBAL_BATCH);
    r.base.pp = 2;
    zp_search_req_give(&r, ZP_SEARCH_DIM(ZP_DIM_PP));
    r.base.schedule = ZP_PP_INTERLEAVED;
    zp_search_req_give(&r, ZP_SEARCH_SCHEDULE);
    cr_expect_eq(zp_search_run(&r, &res), ZP_EINVAL);
    cr_expect(strstr(zp_error_message(), "3 or more") != NULL, "%s", zp_error_message());
    r.base.pp = 4;
    zp_search_req_give(&r, ZP_SEARCH_DIM(ZP_DIM_PP));
    cr_assert_eq(zp_search_run(&r, &res), ZP_OK, "%s", zp_error_message());
    zp_search_result_free(&res);
    r.framework = ZP_FRAMEWORK_DEEPSPEED;
    cr_expect_eq(zp_search_run(&r, &res), ZP_EINVAL);
    zp_search_req_open(&r, ZP_SEARCH_SCHEDULE);
    r.base.stage = 3;
    zp_search_req_give(&r, ZP_SEARCH_STAGE);
    r.base.pp = 1;
    zp_search_req_give(&r, ZP_SEARCH_DIM(ZP_DIM_PP));
    cr_assert_eq(zp_search_run(&r, &res), ZP_OK, "%s", zp_error_message());
    zp_search_result_free(&res);
    r.framework = ZP_FRAMEWORK_MEGATRON_2021;
    cr_expect_eq(zp_search_run(&r, &res), ZP_EINVAL, "megatron-2021 has no ZeRO stage 3");
    /* ZeRO-3 beside pipeline stages: DeepSpeed's pipeline engine refuses it (its assertion, quoted); torchtitan
     * runs FSDP2 with pipelines, so "any" offers it when both are given */
    r.base.pp = 4;
    zp_search_req_give(&r, ZP_SEARCH_DIM(ZP_DIM_PP));
    r.framework = ZP_FRAMEWORK_DEEPSPEED;
    cr_expect_eq(zp_search_run(&r, &res), ZP_EINVAL);
    cr_expect(strstr(zp_error_message(), "\"ZeRO-2 and ZeRO-3 are incompatible with pipeline parallelism\"") != NULL,
              "%s", zp_error_message());
    r.framework = ZP_FRAMEWORK_ANY;
    cr_assert_eq(zp_search_run(&r, &res), ZP_OK, "%s", zp_error_message());
    cr_expect_gt(res.n, 0);
    for (int i = 0; i < res.n; i++)
        cr_expect(res.plans[i].plan.stage == 3 && res.plans[i].plan.pp == 4 && !zp_plan_reshards(&res.plans[i].plan));
    zp_search_result_free(&res);
    zp_search_req_open(&r, ZP_SEARCH_STAGE); /* not searched: the stages a pipeline always had */
    cr_assert_eq(zp_search_run(&r, &res), ZP_OK, "%s", zp_error_message());
    for (int i = 0; i < res.n; i++)
        cr_expect_leq(res.plans[i].plan.stage, 1);
    zp_search_result_free(&res);
}

/* The search's shortcuts (issue #28's speed) change no figure: with pipelines, experts and a fixed batch, every
 * fitting plan not dominated keeps the very bound zp_search_step_bound computes alone (its kernel-time memo
 * returns what each op's cost function would), every plan's memory is a fresh zp_memory_estimate's (the pipeline
 * bisection's estimates are reused), and a plan is dominated exactly when the pairwise rule finds it a twin
 * (the search looks only among the plans of its batch). */
static int same_batch(const zp_plan *p, const zp_plan *q)
{
    return q->stage == p->stage && q->mp == p->mp && q->ep == p->ep && q->micro_batch == p->micro_batch &&
           q->grad_accum == p->grad_accum && q->checkpoint == p->checkpoint && q->selective == p->selective &&
           q->sp == p->sp && q->pp == p->pp && q->schedule == p->schedule && q->vstages == p->vstages;
}

static int extra_work(const zp_plan *p)
{
    return p->pa + p->pa_cpu + (p->offload != ZP_OFFLOAD_NONE) + (p->offload == ZP_OFFLOAD_PARAMS);
}

Test(search, shortcuts_change_no_figure)
{
    const zp_cluster *c = zp_test_preset("dgx-a100");
    zp_search_req r;
    zp_search_result res;
    zp_search_req_default(&r, &zp_zoo_find("mixtral-8x7b")->model, c, 16);
    r.global_batch = 64;
    zp_search_req_give(&r, ZP_SEARCH_GLOBAL_BATCH);
    r.simulate = 1;
    r.jobs = 2;
    r.max_simulated = 2; /* the bounds and the dominated plans are screened before any simulation */
    cr_assert_eq(zp_search_run(&r, &res), ZP_OK, "%s", zp_error_message());
    zp_profile builtin, typed;
    zp_device_profile_builtin(c, &builtin);
    int pipelines = 0, dominated = 0, checked = 0;
    for (int i = 0; i < res.n; i++) {
        const zp_eval *e = &res.plans[i];
        zp_memory m;
        cr_assert_eq(zp_memory_estimate(r.model, &e->plan, &m), ZP_OK);
        cr_expect(m.total == e->mem.total && m.host == e->mem.host, "plan %d's memory", i);
        pipelines += e->plan.pp > 1;
        if (!e->fits)
            continue;
        int twin = 0;
        for (int j = 0; j < res.n && !twin; j++) {
            const zp_eval *q = &res.plans[j];
            const int subset = q->plan.pa <= e->plan.pa && q->plan.pa_cpu <= e->plan.pa_cpu &&
                               (q->plan.offload == ZP_OFFLOAD_NONE || q->plan.offload == e->plan.offload ||
                                (q->plan.offload == ZP_OFFLOAD_OPTIMIZER && e->plan.offload == ZP_OFFLOAD_PARAMS));
            twin = j != i && q->fits && same_batch(&e->plan, &q->plan) && subset &&
                   extra_work(&q->plan) < extra_work(&e->plan);
        }
        cr_expect_eq(e->dominated, twin, "plan %d: dominated %d, the pairwise rule says %d", i, e->dominated, twin);
        dominated += twin;
        if (e->dominated)
            continue; /* its bound may have been raised to its twin's step */
        zp_profile_for_dtype(&builtin, zp_plan_precision_name(&e->plan), &typed);
        const double alone = zp_search_step_bound(r.model, &typed, &e->plan, c, NULL);
        cr_expect(e->bound_s == alone, "plan %d's bound %.17g, alone %.17g", i, e->bound_s, alone);
        checked++;
    }
    cr_expect_gt(pipelines, 0);
    cr_expect_gt(dominated, 0);
    cr_expect_gt(checked, 10);
    zp_search_result_free(&res);
}

/* A pipeline bound takes a stage's sums from an alike stage already summed (pipeline_bound_s, stages_alike)
 * instead of building its sample: the very doubles that building every stage gives
 * (zp_search_step_bound_every builds each), over DeepSeek-V3's uneven stages (3 dense blocks first, 61
 * blocks) as the search lays them out, interleaved where they divide, and with torchtitan's every-k-th-block
 * checkpointing. */
Test(search, pipeline_stage_reuse_changes_no_bound)
{
    const zp_cluster *c;
    cr_assert_eq(zp_cluster_find("dgx-h100", &c), ZP_OK);
    zp_search_req r;
    zp_search_result res;
    zp_search_req_default(&r, &zp_zoo_find("deepseek-v3")->model, c, 256);
    r.global_batch = 1024;
    zp_search_req_give(&r, ZP_SEARCH_GLOBAL_BATCH);
    r.simulate = 0; /* the plans only */
    cr_assert_eq(zp_search_run(&r, &res), ZP_OK, "%s", zp_error_message());
    zp_profile builtin, typed;
    zp_device_profile_builtin(c, &builtin);
    int checked = 0, interleaved = 0, every = 0;
    for (int i = 0; i < res.n && checked < 240; i++) {
        zp_plan p = res.plans[i].plan;
        if (!res.plans[i].fits || p.pp <= 1 || i % 3 != 0)
            continue;
        zp_profile_for_dtype(&builtin, zp_plan_precision_name(&p), &typed);
        for (int k = 0; k < 3; k++) {
            zp_plan q = p;
            if (k == 1) { /* every third block checkpointed */
                if (zp_plan_recompute(&q) != ZP_RECOMPUTE_FULL || q.pa || q.pa_cpu)
                    continue;
                q.ckpt_every = 3;
            } else if (k == 2) { /* interleaved over 2 chunks a stage */
                q.vstages = 2;
                q.schedule = ZP_PP_INTERLEAVED;
            }
            if (k > 0 && zp_plan_validate(&q) != ZP_OK)
                continue;
            const double kept = zp_search_step_bound(r.model, &typed, &q, c, NULL);
            const double built = zp_search_step_bound_every(r.model, &typed, &q, c, NULL);
            if (k == 2 && !(built > 0))
                continue; /* the blocks do not divide into that layout */
            cr_expect(kept > 0 && kept == built, "plan %d (PP %lld, v %d, every %d): %.17g with stages reused, "
                      "%.17g built", i, (long long)q.pp, q.vstages, q.ckpt_every, kept, built);
            checked++;
            every += q.ckpt_every > 1;
            interleaved += q.vstages > 1;
        }
    }
    cr_expect_gt(checked, 100);
    (void)interleaved; /* DeepSeek-V3's 61 blocks lay out interleaved on none of these (counted, not required) */
    cr_expect_gt(every, 0);
    zp_search_result_free(&res);
}

/* A plan's executed TFLOP/s count the same FLOPs whichever figure priced its step (simulated, bounded, or the
 * analytic estimate): Llama 3 8B at 8K on 16 H100s, where selective recompute's plans run the attention core's
 * Q K^T and A V again, 2·s²·a·(dqk + dv) a sequence and block beyond the forward and backward of no recompute
 * (a bound's row counted them not, before). */
Test(search, executed_flops_alike_for_every_method)
{
    const zp_cluster *c = zp_test_preset("dgx-h100");
    const zp_model *m = &zp_zoo_find("llama-3-8b")->model;
    zp_search_req r;
    zp_search_result res;
    zp_search_req_default(&r, m, c, 16);
    r.simulate = 1;
    r.jobs = 2;
    r.max_simulated = 3;
    r.bound_shown = 3;
    cr_assert_eq(zp_search_run(&r, &res), ZP_OK, "%s", zp_error_message());
    int seen[3] = {0, 0, 0}; /* simgrid, bound, analytic: selective plans checked */
    const double s = (double)m->seq, core = 2.0 * s * s * (double)m->heads *
                                            (double)(zp_model_head_dim(m) + zp_model_v_head_dim(m));
    for (int i = 0; i < res.n; i++) {
        const zp_eval *e = &res.plans[i];
        if (!e->fits || !e->plan.selective || e->plan.rc_modules || e->time.total <= 0)
            continue;
        const double B = e->global_batch, gpus = (double)zp_plan_gpus(&e->plan);
        const double want = zp_model_flops_iteration(m, B, 0) + B * (double)m->layers * core;
        const double got = e->tflops_per_gpu * 1e12 * e->time.total * gpus;
        cr_expect(fabs(got / want - 1.0) < 1e-9, "plan %d (%s): %.6g FLOPs executed, want %.6g", i, e->method, got,
                  want);
        seen[strcmp(e->method, "simgrid") == 0 ? 0 : strcmp(e->method, "bound") == 0 ? 1 : 2]++;
    }
    cr_expect_gt(seen[1], 0, "a bounded selective plan");
    cr_expect_gt(seen[0] + seen[2], 0, "a simulated or estimated selective plan");
    zp_search_result_free(&res);
}

/* The analytic estimate prices what a step executes: selective recompute's attention core run again takes
 * compute time in proportion to its FLOPs (it took none: the estimate ranked sel-ckpt level with no recompute,
 * the same step and more TFLOP/s). Llama 3 8B at 8K, ZeRO-1 on 16 H100s, micro-batch 1. */
Test(search, analytic_step_prices_the_recompute)
{
    const zp_cluster *c = zp_test_preset("dgx-h100");
    const zp_model *m = &zp_zoo_find("llama-3-8b")->model;
    zp_plan p = zp_test_plan(1, 16, 1, 1);
    p.flash_attn = 1;
    p.grad_accum = 4;
    zp_step_time none, sel;
    zp_plan_set_recompute(&p, ZP_RECOMPUTE_NONE);
    cr_assert_eq(zp_analytic_step(m, &p, c, &none), ZP_OK, "%s", zp_error_message());
    const double f_none = zp_analytic_flops_executed(m, &p, 4.0);
    zp_plan_set_recompute(&p, ZP_RECOMPUTE_SELECTIVE);
    cr_assert_eq(zp_analytic_step(m, &p, c, &sel), ZP_OK, "%s", zp_error_message());
    const double f_sel = zp_analytic_flops_executed(m, &p, 4.0);
    cr_expect_gt(f_sel, f_none);
    cr_expect(fabs(sel.compute / none.compute - f_sel / f_none) < 1e-9, "compute %.6g vs %.6g s, FLOPs x %.6g",
              sel.compute, none.compute, f_sel / f_none);
    cr_expect_gt(sel.total, none.total);
}

/* bound_shown (the text answer's request) changes no row the answer shows: the best bound_shown fitting
 * plans not dominated keep their places and figures; the others show at most their own bound (a floor, or
 * their twin's step for a dominated one), never more. */
Test(search, bound_shown_changes_no_shown_figure)
{
    const zp_cluster *c;
    cr_assert_eq(zp_cluster_find("dgx-a100", &c), ZP_OK);
    zp_search_req r;
    zp_search_result all, shown;
    zp_search_req_default(&r, &zp_zoo_find("mixtral-8x7b")->model, c, 16);
    r.global_batch = 64;
    zp_search_req_give(&r, ZP_SEARCH_GLOBAL_BATCH);
    r.simulate = 1;
    r.jobs = 2;
    r.max_simulated = 3;
    cr_assert_eq(zp_search_run(&r, &all), ZP_OK, "%s", zp_error_message());
    r.bound_shown = 5;
    cr_assert_eq(zp_search_run(&r, &shown), ZP_OK, "%s", zp_error_message());
    cr_assert_eq(all.n, shown.n);
    cr_expect_eq(all.n_dominated, shown.n_dominated);
    cr_expect_eq(all.n_pruned, shown.n_pruned);
    cr_expect_eq(all.n_simulated, shown.n_simulated);
    int compared = 0, dominated = 0;
    for (int i = 0; i < all.n; i++) {
        const zp_eval *a = &all.plans[i], *s = &shown.plans[i];
        if (a->fits && a->dominated) {
            cr_expect(s->dominated && s->time.total > 0, "plan %d: dominated, step %g", i, s->time.total);
            dominated++;
            continue;
        }
        if (a->fits && compared >= r.bound_shown) { /* a row not shown: a lower bound still */
            cr_expect(s->time.total <= a->time.total, "plan %d: %.17g > %.17g", i, s->time.total, a->time.total);
            continue;
        }
        cr_expect(a->plan.stage == s->plan.stage && a->plan.mp == s->plan.mp && a->plan.pp == s->plan.pp &&
                      a->plan.ep == s->plan.ep && a->plan.micro_batch == s->plan.micro_batch &&
                      a->plan.offload == s->plan.offload && a->plan.pa == s->plan.pa,
                  "plan %d moved", i);
        cr_expect(a->time.total == s->time.total && a->bound_s == s->bound_s && a->tokens_per_s == s->tokens_per_s,
                  "plan %d: step %.17g, %.17g with bound_shown", i, a->time.total, s->time.total);
        compared += a->fits;
    }
    cr_expect_eq(compared, r.bound_shown);
    cr_expect_gt(dominated, 0);
    zp_search_result_free(&all);
    zp_search_result_free(&shown);
}

/* The lazy bounds' floor (zp_search_step_floor) is a lower bound of the bound itself, plan by plan: MoE with
 * expert parallelism and pipelines (DeepSeek-V3), MoE on A100s (Mixtral), FP8 (its weight casts cached after
 * the first micro-batch), recompute, Pa and offload as the searches find them. */
static int floors_below(const char *model, const char *cluster, int64_t gpus, int64_t batch, int fp8)
{
    const zp_cluster *c;
    cr_assert_eq(zp_cluster_find(cluster, &c), ZP_OK);
    zp_search_req r;
    zp_search_result res;
    zp_search_req_default(&r, &zp_zoo_find(model)->model, c, gpus);
    r.global_batch = batch;
    zp_search_req_give(&r, ZP_SEARCH_GLOBAL_BATCH);
    r.simulate = 0;
    if (fp8) {
        r.base.fp8 = ZP_FP8_DELAYED;
    }
    cr_assert_eq(zp_search_run(&r, &res), ZP_OK, "%s", zp_error_message());
    zp_profile builtin, typed;
    zp_device_profile_builtin(c, &builtin);
    int checked = 0;
    for (int i = 0; i < res.n && checked < 300; i++) {
        const zp_eval *e = &res.plans[i];
        if (!e->fits || i % 2)
            continue;
        zp_profile_for_dtype(&builtin, zp_plan_precision_name(&e->plan), &typed);
        if (fp8)
            zp_device_profile_fp8(c, e->plan.fp8, e->plan.fp8_all_gather, &typed);
        const double fl = zp_search_step_floor(r.model, &typed, &e->plan, c, NULL);
        const double b = zp_search_step_bound(r.model, &typed, &e->plan, c, NULL);
        cr_expect(fl > 0 && fl <= b, "%s plan %d (stage %d MP %lld PP %lld EP %lld b %lld m %lld): floor %.17g, bound "
                  "%.17g", model, i, e->plan.stage, (long long)e->plan.mp, (long long)e->plan.pp, (long long)e->plan.ep,
                  (long long)e->plan.micro_batch, (long long)e->plan.grad_accum, fl, b);
        checked++;
    }
    zp_search_result_free(&res);
    return checked;
}

Test(search, floor_is_below_the_bound)
{
    cr_expect_gt(floors_below("deepseek-v3", "dgx-h100", 256, 1024, 0), 100);
    cr_expect_gt(floors_below("mixtral-8x7b", "dgx-a100", 64, 256, 0), 50);
    cr_expect_gt(floors_below("llama-3-8b", "dgx-h100", 64, 512, 1), 50);
}

/* --recompute-modules auto's module sets (zp_search_rc_ladder): Megatron-core's default first, then each
 * adding what the model has, in the order of what their recompute costs: Llama 3 8B (dense, no MLA) the
 * norms, then the MLPs; Mixtral (every block MoE, no shared experts, no MLA) the norms and the experts'
 * activation, nothing after; DeepSeek-V3 every step, its second and third sets DeepSeek's own recipe
 * (layernorm, moe_act, mla_up_proj: report §3.3.2), its fourth the dense MLPs and the shared experts. */
Test(search, recompute_module_sets_by_model)
{
    unsigned s[ZP_RC_LADDER];
    int n = zp_search_rc_ladder(&zp_zoo_find("llama-3-8b")->model, s);
    cr_expect_eq(n, 3, "llama-3-8b: %d sets", n);
    cr_expect(s[0] == 0u && s[1] == ZP_RCM_LAYERNORM && s[2] == (ZP_RCM_LAYERNORM | ZP_RCM_MLP),
              "llama-3-8b: %#x %#x %#x", s[0], s[1], s[2]);
    n = zp_search_rc_ladder(&zp_zoo_find("mixtral-8x7b")->model, s);
    cr_expect(n == 2 && s[0] == 0u && s[1] == (ZP_RCM_LAYERNORM | ZP_RCM_MOE_ACT), "mixtral-8x7b: %d sets, %#x",
              n, s[1]);
    n = zp_search_rc_ladder(&zp_zoo_find("deepseek-v3")->model, s);
    const unsigned ds = ZP_RCM_LAYERNORM | ZP_RCM_MOE_ACT | ZP_RCM_MLA_UP_PROJ;
    cr_expect(n == 4 && s[1] == (ZP_RCM_LAYERNORM | ZP_RCM_MOE_ACT) && s[2] == ds &&
                  s[3] == (ds | ZP_RCM_MLP | ZP_RCM_SHARED_EXPERTS),
              "deepseek-v3: %d sets, %#x %#x %#x", n, s[1], s[2], s[3]);
}

/* The search with --recompute-modules auto tries each set with selective recompute beside no and full
 * recompute, and its plans carry their sets; without it every selective plan is the default's. */
Test(search, recompute_modules_auto_searched)
{
    zp_search_req r;
    zp_search_result res;
    zp_search_req_default(&r, &zp_zoo_find("llama-3-8b")->model, zp_test_preset("dgx-h100"), 8);
    r.simulate = 0;
    r.rc_auto = 1;
    cr_assert_eq(zp_search_run(&r, &res), ZP_OK, "%s", zp_error_message());
    int seen[3] = {0};
    for (int i = 0; i < res.n; i++) {
        const zp_plan *p = &res.plans[i].plan;
        if (!p->selective)
            continue;
        seen[0] += p->rc_modules == 0u;
        seen[1] += p->rc_modules == ZP_RCM_LAYERNORM;
        seen[2] += p->rc_modules == (ZP_RCM_LAYERNORM | ZP_RCM_MLP);
        cr_expect(p->rc_modules == 0u || p->rc_modules == ZP_RCM_LAYERNORM ||
                      p->rc_modules == (ZP_RCM_LAYERNORM | ZP_RCM_MLP),
                  "plan %d: modules %#x", i, p->rc_modules);
    }
    cr_expect(seen[0] > 0 && seen[0] == seen[1] && seen[1] == seen[2], "plans by set: %d %d %d", seen[0], seen[1],
              seen[2]);
    zp_search_result_free(&res);
    r.rc_auto = 0;
    cr_assert_eq(zp_search_run(&r, &res), ZP_OK, "%s", zp_error_message());
    for (int i = 0; i < res.n; i++)
        cr_expect_eq(res.plans[i].plan.rc_modules, 0u, "without auto, plan %d: modules %#x", i,
                     res.plans[i].plan.rc_modules);
    zp_search_result_free(&res);
}
