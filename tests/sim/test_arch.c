/* sim/ on today's architectures: the step schedule read from the model description (GQA, MLA, RMSNorm,
 * rotary, gated MLPs, parallel blocks, mixture of experts) and expert parallelism (EP and EDP groups,
 * all-to-alls) in the schedule, the memory and the engine. The FLOPs of a schedule are summed op by op
 * from the shapes of vocab/zp_shape.c and checked against the model's own arithmetic (models/zp_model.c,
 * from the tensor enumeration): two independent derivations. */
#include <criterion/criterion.h>

#include "../zp_test.h"
#include <math.h>
#include <string.h>

#include "zp_device.h"
#include "zp_memory.h"
#include "zp_schedule.h"
#include "zp_search.h"
#include "zp_shape.h"
#include "zp_simrun.h"
#include "zp_zoo.h"

static zp_model model(const char *name, int64_t seq)
{
    const zp_zoo_entry *e = zp_zoo_find(name);
    cr_assert(e, "zoo model %s missing", name);
    zp_model m = e->model;
    if (seq > 0)
        m.seq = seq;
    return m;
}

static zp_plan plan_of(int stage, int64_t dp, int64_t mp, int64_t ep, int64_t b)
{
    zp_plan p;
    zp_plan_default(&p, dp);
    p.stage = stage;
    p.mp = mp;
    p.ep = ep;
    p.micro_batch = b;
    return p;
}

/* Summed over the schedule's ops of one kind (all streams). */
static double sum_of(const zp_schedule *s, int type, int field_bytes, int *count)
{
    double v = 0;
    int n = 0;
    for (int st = 0; st < ZP_NSTREAMS; st++)
        for (int i = 0; i < s->n[st]; i++)
            if (s->ops[st][i].type == type) {
                v += field_bytes ? s->ops[st][i].bytes : s->ops[st][i].flops;
                n++;
            }
    if (count)
        *count = n;
    return v;
}

/* Every family: the schedule's FLOPs (MP 1) are the model's, with and without recomputation. Qwen-MoE's
 * shared-expert gate (h -> 1 per token) is the only GEMM the schedule leaves out: 1e-4 of the step. */
Test(arch, schedule_flops_match_the_model_for_every_family)
{
    const char *names[] = {"llama-2-70b", "llama-3-8b",  "mistral-7b",       "mixtral-8x7b", "qwen2-72b",
                           "gemma-7b",    "gemma-2-9b",  "qwen1.5-moe-a2.7b", "falcon-7b",    "falcon-40b",
                           "gpt-j-6b",    "gpt-neox-20b", "bloom-176b",       "deepseek-v2-lite", "phi-3-mini"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        zp_model m = model(names[i], 1024);
        for (int ck = 0; ck <= 1; ck++) {
            zp_plan p = plan_of(1, 4, 1, 1, 2);
            p.grad_accum = 2;
            p.checkpoint = ck;
            zp_schedule s;
            cr_assert_eq(zp_schedule_build(&m, &p, &s), ZP_OK, "%s: %s", names[i], zp_error_message());
            double want = zp_model_flops_iteration(&m, 2 * 2, ck);
            cr_expect(fabs(s.flops / want - 1) < 1e-4, "%s (checkpoint %d): schedule %.6g FLOPs, model %.6g (%+.3g%%)",
                      names[i], ck, s.flops, want, 100 * (s.flops / want - 1));
            zp_schedule_free(&s);
        }
    }
}

/* DeepSeek-V3's multi-token prediction module (cut to 4 blocks, its first dense): the schedule's FLOPs are the
 * model's with it, with and without recomputation; it runs on the last stage (eh_proj there, forward and
 * backward), and --mtp-layers 0's schedule is the model without it. */
Test(arch, mtp_module_in_the_schedule)
{
    zp_model m = model("deepseek-v3", 1024);
    m.layers = 4;
    m.dense_layers = 1;
    m.experts = 16;
    cr_assert_eq(m.mtp_layers, 1);
    for (int ck = 0; ck <= 1; ck++) {
        zp_plan p = plan_of(1, 4, 1, 1, 2);
        p.grad_accum = 2;
        p.checkpoint = ck;
        zp_schedule s;
        cr_assert_eq(zp_schedule_build(&m, &p, &s), ZP_OK, "%s", zp_error_message());
        double want = zp_model_flops_iteration(&m, 2 * 2, ck);
        cr_expect(fabs(s.flops / want - 1) < 1e-4, "checkpoint %d: schedule %.6g FLOPs, model %.6g (%+.3g%%)", ck,
                  s.flops, want, 100 * (s.flops / want - 1));
        int proj[3] = {0, 0, 0}; /* forward (and recompute), dgrad, wgrad */
        for (int i = 0; i < s.n[ZP_STREAM_COMPUTE]; i++) {
            const int k = s.ops[ZP_STREAM_COMPUTE][i].type;
            proj[0] += k == ZP_OPK_MTP_PROJ;
            proj[1] += k == ZP_OPK_MTP_PROJ_DGRAD;
            proj[2] += k == ZP_OPK_MTP_PROJ_WGRAD;
        }
        cr_expect(proj[0] == 2 * (1 + ck) && proj[1] == 2 && proj[2] == 2, "eh_proj %d %d %d", proj[0], proj[1],
                  proj[2]);
        zp_schedule_free(&s);
        zp_model none = m;
        none.mtp_layers = 0;
        cr_assert_eq(zp_schedule_build(&none, &p, &s), ZP_OK);
        want = zp_model_flops_iteration(&none, 2 * 2, ck);
        cr_expect(fabs(s.flops / want - 1) < 1e-4, "without MTP: schedule %.6g FLOPs, model %.6g", s.flops, want);
        zp_schedule_free(&s);
    }
}

/* The MTP module's weights: in the rank's parameters (its block's experts 1/EP), without pipeline stages and on
 * the last stage with them, there beside the copy of the word embedding Megatron-core builds for it; its
 * activations on that stage. */
Test(arch, mtp_module_weights)
{
    zp_model m = model("deepseek-v3", 1024);
    m.layers = 4;
    m.dense_layers = 1;
    m.experts = 16;
    zp_model none = m;
    none.mtp_layers = 0;
    double mtp, experts;
    zp_shape_mtp_params(&m, &mtp, &experts);
    cr_expect_float_eq(mtp, zp_model_params_mtp(&m), 1.0);
    cr_expect(experts > 0.5 * mtp && experts < mtp, "%g of %g", experts, mtp);
    zp_plan p = plan_of(0, 16, 1, 8, 1);
    zp_memory a, b;
    cr_assert_eq(zp_memory_estimate(&m, &p, &a), ZP_OK, "%s", zp_error_message());
    cr_assert_eq(zp_memory_estimate(&none, &p, &b), ZP_OK);
    const double want = mtp - experts * (1.0 - 1.0 / 8.0);
    cr_expect_float_eq(a.params - b.params, 2.0 * want, 1e-6 * a.params, "%g vs %g", a.params - b.params, 2.0 * want);
    p = plan_of(0, 8, 1, 8, 1);
    p.pp = 2;
    p.grad_accum = 4;
    zp_memory sa[2], sb[2];
    cr_assert_eq(zp_memory_estimate_stages(&m, &p, sa, 2), ZP_OK, "%s", zp_error_message());
    cr_assert_eq(zp_memory_estimate_stages(&none, &p, sb, 2), ZP_OK);
    cr_expect_float_eq(sa[0].params, sb[0].params, 1e-9 * sa[0].params, "the first stage holds none");
    const double last = want + zp_model_params_embedding(&m);
    cr_expect_float_eq(sa[1].params - sb[1].params, 2.0 * last, 1e-6 * sa[1].params, "last stage %g vs %g",
                       sa[1].params - sb[1].params, 2.0 * last);
    /* and its activations there: its logits (fp32, T x V) again, eh_proj's input, what its block keeps */
    const double T = 1024.0, logits = 4.0 * T * (double)m.vocab, floor = logits + 2.0 * T * 2.0 * (double)m.hidden;
    const double more = sa[1].activations - sb[1].activations;
    cr_expect(more > floor && more < floor + 2e9, "last stage's activations +%g B (at least %g)", more, floor);
    cr_expect_float_eq(sa[0].activations, sb[0].activations, 1e-9 * sa[0].activations);
}

/* With MP the split GEMMs divide by t; what every rank repeats (routers, MLA's down-projections, a KV head
 * replicated beyond the KV heads) adds: t x the rank's FLOPs is the model's or a little more. */
Test(arch, mp_splits_the_flops)
{
    const struct {
        const char *name;
        int64_t mp;
        double most; /* t x rank / model at most */
    } c[] = {{"llama-2-70b", 8, 1.0 + 1e-9}, {"llama-2-70b", 16, 1.05}, {"mixtral-8x7b", 8, 1.01},
             {"deepseek-v2-lite", 4, 1.1}, {"gpt-neox-20b", 8, 1.0 + 1e-9}};
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        zp_model m = model(c[i].name, 2048);
        zp_plan p = plan_of(2, 2, c[i].mp, 1, 1);
        zp_schedule s;
        cr_assert_eq(zp_schedule_build(&m, &p, &s), ZP_OK, "%s: %s", c[i].name, zp_error_message());
        double r = s.flops * (double)c[i].mp / zp_model_flops_iteration(&m, 1, 1);
        cr_expect(r >= 1.0 - 1e-9 && r <= c[i].most, "%s MP %lld: t x rank / model = %.6f", c[i].name,
                  (long long)c[i].mp, r);
        zp_schedule_free(&s);
    }
}

/* GQA: Llama-2-70B's fused QKV projection is (64 + 2 x 8) heads of 128 wide, split over MP; beyond the 8
 * KV heads each rank keeps one K and one V head (Megatron replicates them). */
Test(arch, gqa_projection_widths)
{
    zp_model m = model("llama-2-70b", 4096);
    const int64_t mps[] = {1, 8, 16};
    const double n_want[] = {(64 + 16) * 128.0, (64 + 16) * 128.0 / 8, 64 * 128.0 / 16 + 2 * 128.0};
    for (int i = 0; i < 3; i++) {
        zp_plan p = plan_of(1, 1, mps[i], 1, 1);
        zp_block_shape S;
        zp_shape_block(&m, &p, 0, &S);
        cr_expect_eq(S.qkv_n, n_want[i], "MP %lld: QKV width %g, want %g", (long long)mps[i], S.qkv_n, n_want[i]);
        cr_expect_eq(S.rope_n, S.q_n + S.kvh * 128.0);
    }
    /* MP 3 splits neither the 64 heads nor the 8 KV heads; MP 16 > 8 KV heads is legal (replicated) */
    cr_expect_eq(zp_dims_check_tp(&m, 3), ZP_EINVAL);
    cr_expect_eq(zp_dims_check_tp(&m, 16), ZP_OK);
    zp_model odd = m;
    odd.heads = 12, odd.kv_heads = 4, odd.hidden = 12 * 128;
    cr_expect_eq(zp_dims_check_tp(&odd, 6), ZP_EINVAL, "6 and 4 KV heads do not divide one another");
    cr_expect(strstr(zp_error_message(), "key/value heads"), "%s", zp_error_message());
}

/* The compute of an MoE step follows the ACTIVE parameters: Mixtral's expert GEMMs with top-2 of 8 are a
 * quarter of what the same model with all 8 experts active runs, and the whole step's kernels take about
 * 6 x active x tokens / (peak x GEMM efficiency): the rest (attention's s^2 terms, element-wise kernels)
 * adds at most a third at seq 4096. */
static double compute_time(const zp_model *m, const zp_plan *p, const zp_profile *prof, double *experts)
{
    zp_schedule s;
    cr_assert_eq(zp_schedule_build(m, p, &s), ZP_OK, "%s", zp_error_message());
    double t = 0;
    *experts = 0;
    for (int i = 0; i < s.n[ZP_STREAM_COMPUTE]; i++) {
        const zp_op *o = &s.ops[ZP_STREAM_COMPUTE][i];
        if (zp_op_part(o) != ZP_PART_COMPUTE)
            continue; /* forward and backward kernels only (not the optimizer) */
        double dt = zp_device_op_time(prof, o, 1);
        t += dt;
        if (o->type >= ZP_OPK_EXPERT_UP && o->type <= ZP_OPK_EXPERT_DOWN)
            *experts += dt;
        else if (o->type >= ZP_OPK_EXPERT_DOWN_DGRAD && o->type <= ZP_OPK_EXPERT_UP_WGRAD)
            *experts += dt;
    }
    zp_schedule_free(&s);
    return t;
}

Test(arch, moe_compute_follows_the_active_parameters)
{
    const zp_cluster *c = zp_test_preset("dgx-a100");
    zp_profile prof;
    zp_device_profile_builtin(c, &prof);
    zp_model m = model("mixtral-8x7b", 4096), all = m;
    all.top_k = all.experts;
    zp_plan p = plan_of(1, 8, 1, 8, 1);
    p.checkpoint = 0;
    double ex2, ex8;
    double t2 = compute_time(&m, &p, &prof, &ex2);
    (void)compute_time(&all, &p, &prof, &ex8);
    /* 4x the tokens per expert, within the per-kernel model's wave quantization of the two shapes */
    cr_expect(fabs(ex8 / ex2 - 4.0) < 0.12, "experts' GEMMs: top-8 / top-2 = %.3f, want 4", ex8 / ex2);
    const double tokens = 4096.0, active = zp_model_params_active(&m);
    const double ideal = 6.0 * active * tokens * prof.gemm_s_per_flop;
    /* beyond the GEMMs: the memory-bound kernels with their bytes and Megatron's unfused attention over 4096
     * tokens (the per-kernel model of #15) */
    cr_expect(t2 / ideal > 1.0 && t2 / ideal < 1.5, "Mixtral step kernels %.4g s vs 6 x %.4g active x %g tokens = %.4g s",
              t2, active, tokens, ideal);
    /* and a dense model of the same total size would take ~3.6x as long */
    cr_expect(t2 < 0.4 * 6.0 * zp_model_params(&m) * tokens * prof.gemm_s_per_flop);
    /* the executed FLOPs with capacity padding run longer, the useful FLOPs do not change */
    zp_plan pc = p;
    pc.capacity_factor = 1.25;
    pc.moe_imbalance = 1.2;
    zp_schedule s1, s2;
    cr_assert_eq(zp_schedule_build(&m, &p, &s1), ZP_OK);
    cr_assert_eq(zp_schedule_build(&m, &pc, &s2), ZP_OK);
    cr_expect(fabs(s2.flops / s1.flops - 1) < 1e-12, "useful FLOPs moved with the capacity factor");
    double exc;
    cr_expect_gt(compute_time(&m, &pc, &prof, &exc), t2);
    cr_expect(fabs(exc / ex2 - 1.5) < 0.05, "experts at cf 1.25 x imbalance 1.2: %.3f x", exc / ex2);
    zp_schedule_free(&s1);
    zp_schedule_free(&s2);
}

/* EP: per MoE block and micro-batch a dispatch and a combine all-to-all in forward (and the recompute) and
 * their gradients in backward, each of the rank's T·k·cf token copies of h fp16 over the EP group; none
 * without EP. The local experts' gradients are reduce-scattered over the EDP group: 2 bytes x the
 * experts' parameters a rank holds, E/ep of them. */
Test(arch, ep_all_to_alls_and_expert_reductions)
{
    zp_model m = model("mixtral-8x7b", 4096);
    zp_plan p = plan_of(2, 16, 1, 8, 1);
    zp_schedule s;
    cr_assert_eq(zp_schedule_build(&m, &p, &s), ZP_OK, "%s", zp_error_message());
    int n[4];
    const int kinds[4] = {ZP_OPK_A2A_DISPATCH, ZP_OPK_A2A_COMBINE, ZP_OPK_A2A_DISPATCH_BWD, ZP_OPK_A2A_COMBINE_BWD};
    const double one = 2.0 * 4096 * 2 * 4096; /* T·k·h fp16 */
    for (int i = 0; i < 4; i++) {
        double bytes = sum_of(&s, kinds[i], 1, &n[i]);
        int want = (i < 2 ? 2 : 1) * 32; /* forward + recompute, or backward, per MoE block */
        cr_expect_eq(n[i], want, "%s: %d all-to-alls, want %d", zp_op_table[kinds[i]].name, n[i], want);
        cr_expect_float_eq(bytes, want * one, 1e-6 * one);
        cr_expect_eq(zp_op_table[kinds[i]].group, ZP_GROUP_EP);
    }
    double held, all;
    zp_shape_params(&m, &p, &held, &all);
    double experts_rank = (all - held) / (1.0 - 1.0 / 8);
    double rs = sum_of(&s, ZP_OPK_GRAD_REDUCE_SCATTER_EXP, 1, NULL);
    cr_expect_float_eq(rs, 2.0 * experts_rank / 8, 1e-6 * rs, "expert reduce-scatter %.6g bytes", rs);
    double dense = sum_of(&s, ZP_OPK_GRAD_REDUCE_SCATTER, 1, NULL);
    cr_expect_float_eq(dense + rs, 2.0 * held, 1e-6 * held, "every held parameter's gradient reduced once");
    zp_schedule_free(&s);
    /* no EP: no all-to-all, the experts reduced over DP with the rest */
    p.ep = 1;
    cr_assert_eq(zp_schedule_build(&m, &p, &s), ZP_OK);
    cr_expect_eq(sum_of(&s, ZP_OPK_A2A_DISPATCH, 1, NULL), 0);
    cr_expect_eq(sum_of(&s, ZP_OPK_GRAD_REDUCE_SCATTER_EXP, 1, NULL), 0);
    cr_expect_float_eq(sum_of(&s, ZP_OPK_GRAD_REDUCE_SCATTER, 1, NULL), 2.0 * all, 1e-6 * all);
    zp_schedule_free(&s);
}

/* EP shards what a rank holds; ZeRO partitions the same total either way: stage 0 holds 1/ep of the
 * experts, stage 3's parameter shard is the same. */
Test(arch, ep_memory)
{
    zp_model m = model("mixtral-8x7b", 4096);
    zp_memory e1, e8;
    zp_plan p1 = plan_of(0, 16, 1, 1, 1), p8 = plan_of(0, 16, 1, 8, 1);
    cr_assert_eq(zp_memory_estimate(&m, &p1, &e1), ZP_OK, "%s", zp_error_message());
    cr_assert_eq(zp_memory_estimate(&m, &p8, &e8), ZP_OK, "%s", zp_error_message());
    double held, all;
    zp_shape_params(&m, &p8, &held, &all);
    cr_expect_float_eq(e1.params, 2.0 * zp_model_params(&m), 1e-3 * e1.params);
    cr_expect_float_eq(e8.params, 2.0 * held, 1e-3 * e8.params);
    cr_expect_lt(e8.params, 0.2 * e1.params, "EP 8 holds 1/8 of 45B expert parameters: %g vs %g GB", e8.params / 1e9,
                 e1.params / 1e9);
    p1.stage = p8.stage = 3;
    cr_assert_eq(zp_memory_estimate(&m, &p1, &e1), ZP_OK);
    cr_assert_eq(zp_memory_estimate(&m, &p8, &e8), ZP_OK);
    cr_expect_float_eq(e8.params, e1.params, 1e-9 * e1.params, "stage 3's shard: %g vs %g", e8.params, e1.params);
    cr_expect_float_eq(e8.optimizer, e1.optimizer, 1e-9 * e1.optimizer);
}

/* Bad plans: EP must divide the experts and the DP degree, a dense model has no experts to shard. */
Test(arch, ep_bad_inputs)
{
    zp_model m = model("mixtral-8x7b", 4096), dense = model("llama-3-8b", 4096);
    zp_plan p = plan_of(1, 12, 1, 8, 1);
    cr_expect_eq(zp_plan_validate(&p), ZP_EINVAL, "EP 8 with DP 12 accepted");
    cr_expect(strstr(zp_error_message(), "--ep"), "%s", zp_error_message());
    p = plan_of(1, 12, 1, 3, 1);
    cr_expect_eq(zp_dims_check_ep(&m, p.ep, p.dp), ZP_EINVAL, "EP 3 of 8 experts accepted");
    p = plan_of(1, 16, 1, 2, 1);
    cr_expect_eq(zp_dims_check_ep(&dense, p.ep, p.dp), ZP_EINVAL, "EP on a dense model accepted");
    zp_search_req r;
    zp_search_req_default(&r, &m, zp_test_preset("dgx-a100"), 64);
    r.base.ep = 16;
    zp_search_req_give(&r, ZP_SEARCH_DIM(ZP_DIM_EP));
    cr_expect_eq(zp_search_validate(&r), ZP_EINVAL, "EP 16 of 8 experts accepted");
    r.base.ep = 8;
    zp_search_req_give(&r, ZP_SEARCH_DIM(ZP_DIM_EP));
    r.base.mp = 16;
    zp_search_req_give(&r, ZP_SEARCH_DIM(ZP_DIM_TP));
    cr_expect_eq(zp_search_validate(&r), ZP_EINVAL, "EP 8 with DP 4 accepted");
    r.base.mp = 3;
    zp_search_req_give(&r, ZP_SEARCH_DIM(ZP_DIM_TP));
    zp_search_req_open(&r, ZP_SEARCH_DIM(ZP_DIM_EP));
    cr_expect_eq(zp_search_validate(&r), ZP_EINVAL, "MP 3 accepted");
}

static zp_sim_result simulate(const zp_model *m, const zp_plan *p, const zp_cluster *c, zp_status want)
{
    zp_profile prof;
    zp_device_profile_builtin(c, &prof);
    zp_sim_job j = {.in = {.model = m, .plan = p, .cluster = c, .profile = &prof}};
    cr_assert_eq(zp_simrun_many(&j, 1, 1), ZP_OK);
    cr_assert_eq(j.st, want, "simulation: %s", j.st ? j.err : "ok");
    return j.res;
}

/* The engine: EP inside a node and across two nodes completes; across nodes the all-to-alls cost more
 * (InfiniBand, not NVSwitch); MP and EP both across nodes are refused, naming what to change. */
Test(arch, engine_runs_expert_parallel_steps, .timeout = 300)
{
    zp_model m = model("mixtral-8x7b", 4096);
    m.layers = 4; /* the same blocks, fewer of them: a quick step */
    const zp_cluster *c = zp_test_preset("dgx-a100");
    zp_plan none = plan_of(2, 16, 1, 1, 1), in = plan_of(2, 16, 1, 8, 1), across = plan_of(2, 32, 1, 16, 1);
    (void)across;
    zp_model m16 = m;
    m16.experts = 16; /* 16 experts: EP 16 spans two 8-GPU nodes */
    zp_sim_result r0 = simulate(&m, &none, c, ZP_OK), r8 = simulate(&m, &in, c, ZP_OK);
    zp_sim_result r16 = simulate(&m16, &across, c, ZP_OK);
    cr_expect_gt(r8.mp_comm, r0.mp_comm, "EP 8's all-to-alls take time: %g vs %g s", r8.mp_comm, r0.mp_comm);
    cr_expect_gt(r16.mp_comm, 2 * r8.mp_comm, "EP across nodes: %g vs in a node %g s", r16.mp_comm, r8.mp_comm);
    cr_expect_geq(r16.step_time, r16.compute);
    zp_plan both = plan_of(2, 8, 16, 8, 1);
    (void)simulate(&m, &both, c, ZP_EINVAL);
}
