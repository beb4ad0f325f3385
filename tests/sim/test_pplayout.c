/* Uneven pipeline stages (vocab/zp_pipeline.h): the layers each stage and virtual stage gets, the layouts
 * refused (naming the layout), the embedding and the LM head as the edge stages' own ops, the slowest stage
 * setting the simulated step, and Megatron-core's arguments written and read back. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "zp_analytic.h"
#include "zp_device.h"
#include "zp_framework.h"
#include "zp_launch.h"
#include "zp_megatron.h"
#include "zp_memory.h"
#include "zp_pipeline.h"
#include "zp_schedule.h"
#include "zp_search.h"
#include "zp_simrun.h"
#include "zp_torchtitan.h"
#include "zp_zoo.h"
#include "../zp_test.h"

static const zp_model *model(const char *name) { return &zp_zoo_find(name)->model; }

static zp_plan pp_plan(int64_t pp, int v)
{
    zp_plan p;
    zp_plan_default(&p, pp);
    p.dp = 1;
    p.pp = pp;
    p.stage = 1;
    p.vstages = v;
    p.schedule = v > 1 ? ZP_PP_INTERLEAVED : ZP_PP_1F1B;
    p.grad_accum = 2 * pp;
    return p;
}

/* Megatron-core's first/last: Llama 3 405B's 126 layers on 16 stages, 7 on the edges, 8 between. */
Test(pplayout, first_last_sum_to_the_layers)
{
    const zp_model *m = model("llama-3-405b");
    zp_plan p = pp_plan(16, 1);
    p.pp_first = p.pp_last = 7;
    cr_assert_eq(zp_pp_check(m, &p), ZP_OK, "%s", zp_error_message());
    int next = 0;
    for (int s = 0; s < 16; s++) {
        zp_pp_stage st;
        cr_assert_eq(zp_pp_stage_get(m, &p, s, &st), ZP_OK);
        cr_expect_eq(st.layers[0], s == 0 || s == 15 ? 7 : 8, "stage %d: %d layers", s, st.layers[0]);
        cr_expect_eq(st.first[0], next);
        next += st.layers[0];
        cr_expect_eq(st.embedding, s == 0);
        cr_expect_eq(st.head, s == 15);
    }
    cr_expect_eq(next, 126);
    /* only one given: the other stages share the rest */
    p.pp_last = 0;
    p.pp_first = 6; /* 120 over 15 */
    cr_assert_eq(zp_pp_check(m, &p), ZP_OK, "%s", zp_error_message());
    cr_expect_eq(zp_pp_vstage_layers(m, &p, 0), 6);
    cr_expect_eq(zp_pp_vstage_layers(m, &p, 15), 8);
}

/* Interleaving over uneven stages: Llama 3's first and last model chunks hold only the embedding and only
 * the head (one entry per virtual stage, chunk c of stage s is virtual stage c·P + s). */
Test(pplayout, virtual_stages_with_an_embedding_only_chunk)
{
    const zp_model *m = model("llama-3-405b");
    zp_plan p = pp_plan(16, 8);
    int layout[128];
    layout[0] = layout[127] = 0;
    for (int k = 1; k < 127; k++)
        layout[k] = 1;
    p.pp_layout = layout;
    p.pp_layout_n = 128;
    cr_assert_eq(zp_pp_check(m, &p), ZP_OK, "%s", zp_error_message());
    zp_pp_stage st;
    cr_assert_eq(zp_pp_stage_get(m, &p, 0, &st), ZP_OK);
    cr_expect(st.embedding && st.layers[0] == 0 && st.first[0] == 0);
    cr_expect(st.layers[1] == 1 && st.first[1] == 15, "chunk 1: layer %d", st.first[1]); /* virtual stage 16 */
    cr_assert_eq(zp_pp_stage_get(m, &p, 15, &st), ZP_OK);
    cr_expect(st.head && st.layers[7] == 0 && st.first[7] == 126);
    cr_expect(st.layers[0] == 1 && st.first[0] == 14);
    /* per stage with chunks: each stage's layers divide over them */
    int per_stage[16] = {8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 6};
    p.pp_layout = per_stage;
    p.pp_layout_n = 16;
    p.vstages = 2;
    cr_assert_eq(zp_pp_check(m, &p), ZP_OK, "%s", zp_error_message());
    cr_assert_eq(zp_pp_stage_get(m, &p, 15, &st), ZP_OK);
    cr_expect(st.layers[0] == 3 && st.layers[1] == 3 && st.first[1] == 123);
}

static void expect_refused(const zp_model *m, const zp_plan *p, const char *what)
{
    cr_expect_eq(zp_pp_check(m, p), ZP_EINVAL);
    cr_expect(strstr(zp_error_message(), what) != NULL, "'%s' not in: %s", what, zp_error_message());
}

/* Megatron-core's accounting of the embedding and the loss as a layer each (zp_plan.pp_acc): 126 + 2 layers
 * over 16 x 8 virtual stages is Llama 3's 0,1*126,0, stage for stage the same chunks as that layout given;
 * one part counted alone, and a count that does not divide, refused naming the arguments. */
Test(pplayout, embedding_and_loss_counted_as_layers)
{
    const zp_model *m = model("llama-3-405b");
    zp_plan p = pp_plan(16, 8), q = pp_plan(16, 8);
    p.pp_acc = ZP_PP_ACC_EMBED | ZP_PP_ACC_LOSS;
    int layout[128];
    for (int k = 0; k < 128; k++)
        layout[k] = k == 0 || k == 127 ? 0 : 1;
    q.pp_layout = layout;
    q.pp_layout_n = 128;
    cr_assert(zp_pp_uneven(&p));
    cr_assert_eq(zp_pp_check(m, &p), ZP_OK, "%s", zp_error_message());
    for (int k = 0; k < 128; k++)
        cr_expect_eq(zp_pp_vstage_layers(m, &p, k), layout[k], "virtual stage %d", k);
    for (int s = 0; s < 16; s++) {
        zp_pp_stage a, b;
        cr_assert_eq(zp_pp_stage_get(m, &p, s, &a), ZP_OK);
        cr_assert_eq(zp_pp_stage_get(m, &q, s, &b), ZP_OK);
        cr_expect(memcmp(&a, &b, sizeof a) == 0, "stage %d differs from the layout given", s);
    }
    char text[160];
    zp_pp_layout_text(&p, text, sizeof text);
    cr_expect_str_eq(text, "--account-for-embedding-in-pipeline-split --account-for-loss-in-pipeline-split");
    /* 32 layers + the embedding = 33 over 3 x 11 virtual stages: the first the embedding alone, one layer on
     * every other */
    const zp_model *g = model("llama-3-8b");
    zp_plan e = pp_plan(3, 11);
    e.pp_acc = ZP_PP_ACC_EMBED;
    cr_assert_eq(zp_pp_check(g, &e), ZP_OK, "%s", zp_error_message());
    cr_expect(zp_pp_vstage_layers(g, &e, 0) == 0 && zp_pp_vstage_layers(g, &e, 1) == 1 &&
              zp_pp_vstage_layers(g, &e, 32) == 1);
    p.vstages = 3; /* 128 over 48 virtual stages */
    expect_refused(m, &p, "--account-for-embedding-in-pipeline-split --account-for-loss-in-pipeline-split: the 128 "
                          "layers with the embedding and the loss counted must divide over the 48 virtual stages");
}

/* The search takes the accounting where no v divides the layers and the framework's release has it: Llama 3
 * 405B at PP 16, interleaved, finds v 8 (0,1*126,0); Megatron-LM v2 (megatron-2021) does not. */
Test(pplayout, searched_where_no_chunk_count_divides, .timeout = 120)
{
    zp_search_req r;
    zp_search_req_default(&r, model("llama-3-405b"), zp_test_preset("dgx-h100"), 8192);
    r.base.mp = 8;
    zp_search_req_give(&r, ZP_SEARCH_DIM(ZP_DIM_TP));
    r.base.pp = 16;
    zp_search_req_give(&r, ZP_SEARCH_DIM(ZP_DIM_PP));
    r.base.schedule = ZP_PP_INTERLEAVED;
    zp_search_req_give(&r, ZP_SEARCH_SCHEDULE);
    r.global_batch = 2048;
    zp_search_req_give(&r, ZP_SEARCH_GLOBAL_BATCH);
    r.simulate = 0;
    zp_search_result res;
    cr_assert_eq(zp_search_run(&r, &res), ZP_OK, "%s", zp_error_message());
    int acc8 = 0, other = 0;
    for (int i = 0; i < res.n; i++) {
        const zp_plan *p = &res.plans[i].plan;
        acc8 += p->pp_acc == (ZP_PP_ACC_EMBED | ZP_PP_ACC_LOSS) && p->vstages == 8;
        other += p->pp_acc == 0;
    }
    cr_expect_gt(acc8, 0);
    cr_expect_eq(other, 0, "%d plans without the accounting: no v divides 126 over 16 stages", other);
    zp_search_result_free(&res);
    r.framework = ZP_FRAMEWORK_MEGATRON_2021;
    cr_expect_eq(zp_search_run(&r, &res), ZP_EINVAL);
    cr_expect(strstr(zp_error_message(), "no number of model chunks divides") != NULL, "%s", zp_error_message());
}

/* A layout that does not sum to the layers, gives a stage no layer or a middle virtual stage none, or
 * leaves layers that do not divide, is refused, naming the layout. */
Test(pplayout, bad_layouts_name_the_layout)
{
    const zp_model *m = model("llama-3-405b");
    zp_plan p = pp_plan(16, 1);
    int layout[16];
    for (int s = 0; s < 16; s++)
        layout[s] = 8;
    p.pp_layout = layout;
    p.pp_layout_n = 16;
    expect_refused(m, &p, "--pp-layout 8*16: 128 layers in all, but the model has 126");
    layout[0] = 0;
    layout[1] = 6;
    expect_refused(m, &p, "--pp-layout 0,6,8*14: stage 0 gets 0 layers");
    p.pp_layout_n = 15;
    expect_refused(m, &p, "15 entries, but the pipeline has 16 stages");
    p.pp_layout = NULL;
    p.pp_layout_n = 0;
    p.pp_first = 7;
    p.pp_last = 8;
    expect_refused(m, &p, "--pp-first-layers 7 --pp-last-layers 8: the other 111 of the model's 126 layers do not "
                          "divide evenly over the 14 other stages");
    p.pp_last = 7;
    p.vstages = 2;
    p.schedule = ZP_PP_INTERLEAVED;
    expect_refused(m, &p, "stage 0 gets 7 layers; with --virtual-stages");
    int v[32];
    for (int k = 0; k < 32; k++)
        v[k] = 4;
    v[0] = 0;
    v[1] = 0;
    v[31] = 2; /* sums to 126 */
    p.pp_first = p.pp_last = 0;
    p.pp_layout = v;
    p.pp_layout_n = 32;
    expect_refused(m, &p, "virtual stage 1 gets 0 layers");
}

Test(pplayout, layout_text_parsed)
{
    int out[64], n = 0;
    cr_assert_eq(zp_pp_layout_parse("7,8*14,7", out, 64, &n), ZP_OK, "%s", zp_error_message());
    cr_expect(n == 16 && out[0] == 7 && out[1] == 8 && out[14] == 8 && out[15] == 7);
    cr_expect_eq(zp_pp_layout_parse("7,x", out, 64, &n), ZP_EINVAL);
    cr_expect(strstr(zp_error_message(), "--pp-layout 7,x: 'x' is not a layer count") != NULL, "%s",
              zp_error_message());
    cr_expect_eq(zp_pp_layout_parse("7,", out, 64, &n), ZP_EINVAL);
    cr_expect_eq(zp_pp_layout_parse("3*0", out, 64, &n), ZP_EINVAL);
    cr_expect_eq(zp_pp_layout_parse("1*65", out, 64, &n), ZP_EINVAL);
    cr_expect_eq(zp_pp_layout_parse("-1,2", out, 64, &n), ZP_EINVAL);
}

/* Kernels of one kind in a stage's schedule. */
static int count_ops(const zp_model *m, const zp_plan *p, int stage, int type)
{
    zp_schedule sc;
    cr_assert_eq(zp_schedule_build_stage(m, p, stage, &sc), ZP_OK, "%s", zp_error_message());
    int n = 0;
    for (int i = 0; i < sc.n[ZP_STREAM_COMPUTE]; i++)
        n += sc.ops[ZP_STREAM_COMPUTE][i].type == type;
    zp_schedule_free(&sc);
    return n;
}

/* The embedding runs on the first stage and the LM head on the last, once a micro-batch, as their own ops,
 * also where their model chunk holds no block. */
Test(pplayout, embedding_and_head_on_the_edge_stages)
{
    const zp_model *m = model("llama-3-8b"); /* 32 layers: 2 stages x 17 chunks, the edge chunks empty */
    zp_plan p = pp_plan(2, 17);
    int layout[34];
    for (int k = 0; k < 34; k++)
        layout[k] = k == 0 || k == 33 ? 0 : 1;
    p.pp_layout = layout;
    p.pp_layout_n = 34;
    cr_assert_eq(zp_pp_check(m, &p), ZP_OK, "%s", zp_error_message());
    cr_expect_eq(count_ops(m, &p, 0, ZP_OPK_EMBEDDING), 4);
    cr_expect_eq(count_ops(m, &p, 1, ZP_OPK_EMBEDDING), 0);
    cr_expect_eq(count_ops(m, &p, 1, ZP_OPK_LM_HEAD), 4);
    cr_expect_eq(count_ops(m, &p, 0, ZP_OPK_LM_HEAD), 0);
    /* one layer fewer on each edge stage: fewer block kernels there, the same edge ops */
    zp_plan q = pp_plan(4, 1);
    q.pp_first = q.pp_last = 7;
    const int first = count_ops(m, &q, 0, ZP_OPK_LM_HEAD) + count_ops(m, &q, 0, ZP_OPK_EMBEDDING);
    cr_expect_eq(first, 8, "embedding once a micro-batch on stage 0: %d", first);
    cr_expect_eq(count_ops(m, &q, 3, ZP_OPK_LM_HEAD), 8);
}

/* Memory per stage follows the layout: the plan's memory is its worst stage, wherever the layout puts it
 * (here stage 5: 9 blocks, 3 micro-batches in flight under 1F1B, after four other block counts). */
Test(pplayout, memory_is_the_worst_stage)
{
    const zp_model *m = model("llama-3-8b");
    zp_plan p = pp_plan(8, 1);
    zp_plan_set_recompute(&p, ZP_RECOMPUTE_NONE);
    int layout[8] = {1, 2, 3, 4, 5, 9, 7, 1};
    p.pp_layout = layout;
    p.pp_layout_n = 8;
    zp_memory per[8], worst;
    cr_assert_eq(zp_memory_estimate_stages(m, &p, per, 8), ZP_OK, "%s", zp_error_message());
    cr_assert_eq(zp_memory_estimate(m, &p, &worst), ZP_OK, "%s", zp_error_message());
    int at = 0;
    for (int s = 1; s < 8; s++)
        at = per[s].total > per[at].total ? s : at;
    cr_expect_eq(at, 5, "the worst stage is %d", at);
    cr_expect_eq(worst.total, per[at].total, "%.3f GB, the worst stage %.3f GB", worst.total / 1e9,
                 per[at].total / 1e9);
    /* one block each: the first stage holds 8 micro-batches in flight, the last one (and its logits) */
    cr_expect(per[0].activations > per[7].activations);
}

/* The virtual micro-batches stage s of an interleaved pipeline holds at its peak: its warm-up, Megatron-core's
 * (P - s - 1)·2 + (v - 1)·P (get_pp_rank_microbatches) at most the m·v it runs, and the steady state's first
 * forward, which runs before the first backward: all m·v when the warm-up reaches them. */
static int64_t in_flight(int64_t P, int64_t v, int64_t m, int64_t s)
{
    const int64_t w = (P - s - 1) * 2 + (v - 1) * P, total = m * v;
    return w >= total ? total : w + 1;
}

/* One block's activations of the plan (no recompute, no SP, MP 1): Korthikanti's bytes, zp_model's, less the
 * SiLU's output a fused SwiGLU does not keep. */
static double layer_bytes(const zp_model *m, const zp_plan *p)
{
    const double mb = (double)p->micro_batch;
    return zp_model_activation_bytes_layer(m, mb, p->mp) -
           (zp_plan_glu_fused(p) ? zp_model_glu_fused_saved_layer(m, mb, p->mp) : 0.0);
}

/* The interleaved schedule's peak activations on every stage but the last (whose LM head adds its logits),
 * pinned to the count above times a chunk's L/(P·v) blocks, for schedules the warm-up does not cap (m = 2P,
 * 4P), and for m = P, where it caps the stages s <= P/2 - 1 at m·v and the later ones run 1F1B. Stage 0's
 * is Korthikanti et al. 2022's L·(1 + (P - 1)/(P·v)) blocks (§4.2.3) when nothing caps it. */
Test(pplayout, interleaved_peak_is_the_warmup_plus_one)
{
    const zp_model *m = model("llama-3-8b"); /* 32 blocks */
    static const struct {
        int P, v, m;
    } cases[] = {{4, 2, 8}, {4, 4, 16}, {8, 4, 16}, {8, 2, 32}, {4, 2, 4}, {8, 2, 8}, {8, 4, 8}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const int P = cases[i].P, v = cases[i].v;
        zp_plan p = pp_plan(P, v);
        p.grad_accum = cases[i].m;
        zp_plan_set_recompute(&p, ZP_RECOMPUTE_NONE);
        const double chunk = (double)m->layers / (P * v), A = layer_bytes(m, &p);
        zp_memory mem[8];
        cr_assert_eq(zp_memory_estimate_stages(m, &p, mem, 8), ZP_OK, "%s", zp_error_message());
        for (int s = 0; s < P - 1; s++) {
            const double want = (double)in_flight(P, v, cases[i].m, s) * chunk * A;
            cr_expect(fabs(mem[s].peak_activations - want) <= 1e-9 * want,
                      "P %d v %d m %d stage %d: %.6g GB, want %.6g", P, v, cases[i].m, s,
                      mem[s].peak_activations / 1e9, want / 1e9);
        }
        if (cases[i].m >= 2 * P) {
            const double korthikanti = (double)m->layers * (1.0 + (P - 1.0) / (P * v)) * A;
            cr_expect(fabs(mem[0].peak_activations - korthikanti) <= 1e-9 * korthikanti, "P %d v %d: %.6g GB vs %.6g",
                      P, v, mem[0].peak_activations / 1e9, korthikanti / 1e9);
        }
    }
}

/* m = P: Megatron-core's warm-up caps only the early stages (stage P - 1 warms up (v - 1)·P); Megatron-LM v2
 * (--framework megatron-2021) ran every forward first on every stage, holding all m·v. */
Test(pplayout, interleaved_cap_at_m_equal_p)
{
    zp_plan p = pp_plan(8, 4);
    p.grad_accum = 8;
    const int64_t core[8] = {32, 32, 32, 32, 30, 28, 26, 24};
    for (int s = 0; s < 8; s++)
        cr_expect_eq(zp_pp_warmup(&p, s), core[s], "stage %d: %lld", s, (long long)zp_pp_warmup(&p, s));
    p.interleave_all_warmup = 1;
    for (int s = 0; s < 8; s++)
        cr_expect_eq(zp_pp_warmup(&p, s), 32, "stage %d", s);
    p.grad_accum = 16; /* the rule is m = P's alone */
    cr_expect_eq(zp_pp_warmup(&p, 7), 24);
    cr_expect_eq(zp_framework_get(ZP_FRAMEWORK_MEGATRON_2021)->interleave_all_warmup, 1);
    cr_expect_eq(zp_framework_get(ZP_FRAMEWORK_ANY)->interleave_all_warmup, 0);
    /* the later stages' memory: 1F1B from the (v - 1)·P + 1-th forward instead of every one */
    const zp_model *m = model("llama-3-8b");
    p.grad_accum = 8;
    zp_plan_set_recompute(&p, ZP_RECOMPUTE_NONE);
    zp_memory all[8], core_mem[8];
    cr_assert_eq(zp_memory_estimate_stages(m, &p, all, 8), ZP_OK, "%s", zp_error_message());
    p.interleave_all_warmup = 0;
    cr_assert_eq(zp_memory_estimate_stages(m, &p, core_mem, 8), ZP_OK, "%s", zp_error_message());
    const double A = layer_bytes(m, &p); /* one block a chunk */
    cr_expect(fabs(all[6].peak_activations - 32 * A) <= 1e-9 * 32 * A, "%.6g GB", all[6].peak_activations / 1e9);
    cr_expect(fabs(core_mem[6].peak_activations - 27 * A) <= 1e-9 * 27 * A, "%.6g GB",
              core_mem[6].peak_activations / 1e9);
}

/* Llama 3 405B as Table 4's 8K rows ran it (Dubey et al. 2024 §3.3.2): 16 stages of 8 one-layer chunks, the
 * first only the embedding and the last only the head (--pp-layout 0,1*126,0), TP 8 with sequence
 * parallelism, FlashAttention, no recompute, 32 micro-batches of one sequence. A block keeps Korthikanti's
 * terms for Llama's shape, all ÷t with SP: the two norms' inputs, the attention's and the MLP's inputs (2h
 * each), Q and the output (2·128·128 each), K and V (2·8·128 each: 8 KV heads), the SwiGLU's gate, up and
 * product (3·2f, f = 3.25h: Megatron-core's fused bias_swiglu keeps its input and fc2 the product; PyTorch
 * eager keeps the SiLU's output too, 4·2f), no dropout, no s² scores: 31.75·s·h/t bytes, 532.7 MB (eager's
 * 38.25·s·h/t, 641.7 MB, with --swiglu-fusion off). Stage 1, whose chunks
 * each hold a block, holds Megatron-core's 2·14 + 7·16 + 1 = 141 virtual micro-batches (Korthikanti's
 * L(1 + (P - 1)/(P·v)) = 140.8 blocks for the even split); stage 0 the 16 in flight of each of its 7
 * one-block chunks (its embedding chunk keeps none): 112. */
Test(pplayout, llama3_405b_interleaved_activations)
{
    const zp_model *m = model("llama-3-405b");
    zp_plan p = pp_plan(16, 8);
    int layout[128];
    layout[0] = layout[127] = 0;
    for (int k = 1; k < 127; k++)
        layout[k] = 1;
    p.pp_layout = layout;
    p.pp_layout_n = 128;
    p.mp = 8;
    p.sp = 1;
    p.flash_attn = 1;
    p.grad_accum = 32;
    zp_plan_set_recompute(&p, ZP_RECOMPUTE_NONE);
    const double block = 31.75 * 8192.0 * 16384.0 / 8.0, eager = 38.25 * 8192.0 * 16384.0 / 8.0;
    cr_expect(fabs(block - 532.7e6) < 0.1e6 && fabs(eager - 641.7e6) < 0.1e6, "%.1f MB", block / 1e6);
    zp_memory mem[16];
    p.swiglu_fusion = 0;
    cr_assert_eq(zp_memory_estimate_stages(m, &p, mem, 16), ZP_OK, "%s", zp_error_message());
    cr_expect(fabs(mem[1].peak_activations - 141 * eager) <= 1e-9 * 141 * eager, "unfused: %.3f GB",
              mem[1].peak_activations / 1e9);
    p.swiglu_fusion = 1;
    cr_assert_eq(zp_memory_estimate_stages(m, &p, mem, 16), ZP_OK, "%s", zp_error_message());
    cr_expect(fabs(mem[0].peak_activations - 112 * block) <= 1e-9 * 112 * block, "stage 0: %.3f GB",
              mem[0].peak_activations / 1e9);
    for (int s = 1; s < 15; s++) {
        const double want = (double)in_flight(16, 8, 32, s) * block;
        cr_expect(fabs(mem[s].peak_activations - want) <= 1e-9 * want, "stage %d: %.3f GB, want %.3f", s,
                  mem[s].peak_activations / 1e9, want / 1e9);
    }
    cr_expect(fabs(mem[1].peak_activations - 141 * block) <= 1e-9 * 141 * block);
}

/* Plan p of model m simulated on DGX H100s. */
static zp_sim_result sim_of(const zp_model *m, const zp_plan *p)
{
    const zp_cluster *c = zp_test_preset("dgx-h100");
    zp_profile prof;
    zp_device_profile_builtin(c, &prof);
    zp_sim_job j = {.in = {.model = m, .plan = p, .cluster = c, .profile = &prof}};
    cr_assert_eq(zp_simrun_one(&j), ZP_OK, "%s", zp_error_message());
    cr_assert_eq(j.st, ZP_OK, "%s", j.err);
    return j.res;
}

static double step_of(const zp_model *m, const zp_plan *p) { return sim_of(m, p).step_time; }

/* 4 stages of v chunks, TP 8 with SP (a stage a DGX H100 node), 8 micro-batches. */
static zp_plan node_stages_plan(int v)
{
    zp_plan p = pp_plan(4, v);
    p.mp = 8;
    p.sp = 1;
    p.grad_accum = 8;
    return p;
}

/* The slowest stage sets the simulated step: moving layers onto one stage slows the step by about what that
 * stage gained, wherever that stage is. */
Test(pplayout, slowest_stage_sets_the_step, .timeout = 120)
{
    const zp_model *m = model("llama-3-8b");
    zp_plan p = node_stages_plan(1);
    int even[4] = {8, 8, 8, 8}, heavy_first[4] = {14, 6, 6, 6}, heavy_mid[4] = {6, 6, 14, 6};
    p.pp_layout_n = 4;
    p.pp_layout = even;
    const double t_even = step_of(m, &p);
    p.pp_layout = heavy_first;
    const double t_first = step_of(m, &p);
    p.pp_layout = heavy_mid;
    const double t_mid = step_of(m, &p);
    /* 1F1B with m micro-batches: about (m + P - 1) passes of the slowest stage. Evenly split, that is the last
     * (8 blocks and the LM head: 128,256 x 4,096 weights, about 2.4 blocks' GEMM FLOPs), so 14 blocks take
     * about 14 / 10.4 = 1.35 times as long */
    cr_expect(t_first > 1.2 * t_even && t_mid > 1.2 * t_even, "even %.3f s, 14 first %.3f s, 14 third %.3f s",
              t_even, t_first, t_mid);
    cr_expect(t_first < 1.15 * t_mid && t_mid < 1.15 * t_first, "14 first %.3f s, 14 third %.3f s", t_first, t_mid);
    /* and a block moved off the last stage, which carries the head, shortens the step */
    int lighter_last[4] = {9, 8, 8, 7};
    p.pp_layout = lighter_last;
    const double t_lighter = step_of(m, &p);
    cr_expect(t_lighter < 0.98 * t_even, "even %.3f s, 9,8,8,7 %.3f s", t_even, t_lighter);
}

/* The analytic estimate prices the default split of stages that do not divide the layers (Llama 3 405B's 126
 * on 16: 7 on the edges, 8 between) as the same layout stated: by its fullest stage. */
Test(pplayout, analytic_prices_the_default_split)
{
    const zp_model *m = model("llama-3-405b");
    const zp_cluster *c = zp_test_preset("dgx-h100");
    zp_plan p = pp_plan(16, 1);
    p.mp = 8;
    p.sp = 1;
    zp_step_time implicit, stated;
    cr_assert_eq(zp_analytic_step(m, &p, c, &implicit), ZP_OK, "%s", zp_error_message());
    int layout[16] = {7, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 7};
    p.pp_layout_n = 16;
    p.pp_layout = layout;
    cr_assert_eq(zp_analytic_step(m, &p, c, &stated), ZP_OK, "%s", zp_error_message());
    cr_expect_float_eq(implicit.total, stated.total, 1e-12 * stated.total, "%g vs %g s", implicit.total, stated.total);
}

/* Megatron-core's arguments for each form a layout takes, read back as the same layout. */
static void round_trip(const zp_model *m, const zp_plan *p, const char *expect, zp_search_req *r)
{
    char a[4096];
    cr_assert_eq(zp_megatron_args(m, p, a, sizeof a), ZP_OK, "%s", zp_error_message());
    cr_expect(strstr(a, expect) != NULL, "'%s' not in %s", expect, a);
    static zp_launch l;
    cr_assert_eq(zp_megatron_args_parse(a, "args", &l), ZP_OK, "%s", zp_error_message());
    zp_model lm;
    int stated = 0;
    cr_assert_eq(zp_launch_model(&l, &lm, &stated), ZP_OK, "%s", zp_error_message());
    const zp_cluster *cl = NULL;
    cr_assert_eq(zp_cluster_find("dgx-h100", &cl), ZP_OK);
    zp_search_req_default(r, m, cl, zp_plan_gpus(p));
    cr_assert_eq(zp_launch_request(&l, r), ZP_OK, "%s", zp_error_message());
    cr_expect_eq(r->base.pp, p->pp);
    /* the launch gives the stages, their schedule and chunks: the base plan holds them, their bits clear */
    cr_expect(zp_search_req_given(r, ZP_SEARCH_DIM(ZP_DIM_PP) | ZP_SEARCH_SCHEDULE | ZP_SEARCH_VSTAGES));
    const zp_plan q = r->base;
    for (int k = 0; k < p->pp * p->vstages; k++)
        cr_expect_eq(zp_pp_vstage_layers(m, &q, k), zp_pp_vstage_layers(m, p, k), "virtual stage %d", k);
}

Test(pplayout, megatron_args_round_trip)
{
    const zp_model *m = model("llama-3-405b");
    zp_plan p = pp_plan(16, 1);
    p.mp = 8;
    p.sp = 1;
    p.bf16 = 1;
    p.pp_first = p.pp_last = 7;
    zp_search_req r;
    round_trip(m, &p, "--pipeline-model-parallel-size 16 --decoder-first-pipeline-num-layers 7 "
                      "--decoder-last-pipeline-num-layers 7",
               &r);
    cr_expect(r.base.pp_first == 7 && r.base.pp_last == 7 && r.base.schedule == ZP_PP_1F1B);
    /* Llama 3's: the embedding and the loss as a layer each */
    int layout[128];
    for (int k = 0; k < 128; k++)
        layout[k] = k == 0 || k == 127 ? 0 : 1;
    p = pp_plan(16, 8);
    p.mp = 8;
    p.pp_layout = layout;
    p.pp_layout_n = 128;
    round_trip(m, &p, "--num-virtual-stages-per-pipeline-rank 8 --account-for-embedding-in-pipeline-split "
                      "--account-for-loss-in-pipeline-split",
               &r);
    cr_expect(r.base.schedule == ZP_PP_INTERLEAVED && r.base.vstages == 8);
    /* anything else: the custom layout, a letter a layer */
    const zp_model *s = model("llama-3-8b");
    int odd[8] = {3, 5, 4, 4, 4, 4, 5, 3};
    p = pp_plan(4, 2);
    p.pp_layout = odd;
    p.pp_layout_n = 8;
    round_trip(s, &p, "--pipeline-model-parallel-layout \"Ettt|ttttt|tttt|tttt|tttt|tttt|ttttt|tttL\"", &r);
    /* Megatron-core's repetitions unrolled as parse_str_to_list does (NVIDIA's DeepSeek-V3 layout at PP 4 x VPP 4,
     * the MTP module beside the loss; a launch script's eval escapes), and what zplan does not read refused,
     * naming it: a standalone MTP stage, a letter that is no layer, a layout that unrolls past any plan */
    static zp_launch l;
    const char *nv = "--num-layers 61\n--pipeline-model-parallel-layout \"Et*4|(tttt|)*14tmL\"\n";
    cr_assert_eq(zp_megatron_args_parse(nv, "a", &l), ZP_OK, "%s", zp_error_message());
    cr_expect(l.pp_layout_n == 16 && l.pp_layout[0] == 4 && l.pp_layout[14] == 4 && l.pp_layout[15] == 1 &&
              l.pp_layout_mtp == 1, "%d stages, last %d, %d MTP", l.pp_layout_n, l.pp_layout[15], l.pp_layout_mtp);
    const char *esc = "--num-layers 61\n--pipeline-model-parallel-layout 'Et\\|\\(tt\\|\\)*30L'\n";
    cr_assert_eq(zp_megatron_args_parse(esc, "a", &l), ZP_OK, "%s", zp_error_message());
    cr_expect(l.pp_layout_n == 32 && l.pp_layout[0] == 1 && l.pp_layout[30] == 2 && l.pp_layout[31] == 0 &&
              l.pp_layout_mtp == 0);
    static const struct {
        const char *layout, *msg;
    } bad[] = {{"E|(tt|)*2,m|L", "a standalone MTP stage is not modelled"},
               {"E|tmt|L", "a standalone MTP stage is not modelled"},
               {"Ex|L", "'x' is not one"},
               {"E|L|t", "the loss (L) is the last layer"},
               {"E(t)*99999|L", "unrolls past"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char text[128];
        snprintf(text, sizeof text, "--num-layers 4\n--pipeline-model-parallel-layout \"%s\"\n", bad[i].layout);
        cr_expect_eq(zp_megatron_args_parse(text, "a", &l), ZP_EINVAL, "%s", bad[i].layout);
        cr_expect(strstr(zp_error_message(), bad[i].msg) != NULL, "%s: %s", bad[i].layout, zp_error_message());
    }
}

/* torchtitan's split (_generate_llm_fqn_per_model_part): its docstring's example (3 layers on 2 stages with the
 * embedding and the output weighing 2 each: 2 and 1 layers), its default weights on Llama 3 8B's 32 layers
 * over 8 virtual stages (34 weighted: the first two get 5, the first and the last less 1), the even split at
 * weights 0, and its refusals (stages left empty, a weight above a stage's share). */
Test(pplayout, torchtitan_split)
{
    int out[16];
    cr_assert_eq(zp_torchtitan_split(3, 2, 2, 2, out), ZP_OK, "%s", zp_error_message());
    cr_expect(out[0] == 2 && out[1] == 1, "%d %d", out[0], out[1]);
    cr_assert_eq(zp_torchtitan_split(32, 8, 1, 1, out), ZP_OK);
    const int want[8] = {4, 5, 4, 4, 4, 4, 4, 3};
    cr_expect(memcmp(out, want, sizeof want) == 0);
    cr_assert_eq(zp_torchtitan_split(32, 8, 0, 0, out), ZP_OK);
    for (int k = 0; k < 8; k++)
        cr_expect_eq(out[k], 4);
    int l3[128]; /* Llama 3 405B over 16 x 8: 0,1*126,0, the accounting zp_plan.pp_acc states */
    cr_assert_eq(zp_torchtitan_split(126, 128, 1, 1, l3), ZP_OK);
    cr_expect(l3[0] == 0 && l3[1] == 1 && l3[126] == 1 && l3[127] == 0);
    cr_expect_eq(zp_torchtitan_split(3, 16, 1, 1, out), ZP_EINVAL);
    cr_expect(strstr(zp_error_message(), "leave stages empty") != NULL, "%s", zp_error_message());
    cr_expect_eq(zp_torchtitan_split(6, 4, 3, 0, out), ZP_EINVAL);
    cr_expect(strstr(zp_error_message(), "above the 2 layers") != NULL, "%s", zp_error_message());
}

/* The sends of a stage's schedule: all, and those its compute stream does not wait for. */
static void count_sends(const zp_model *m, const zp_plan *p, int stage, int *sends, int *nowait)
{
    zp_schedule sc;
    cr_assert_eq(zp_schedule_build_stage(m, p, stage, &sc), ZP_OK, "%s", zp_error_message());
    *sends = *nowait = 0;
    for (int i = 0; i < sc.n[ZP_STREAM_COMPUTE]; i++) {
        const zp_op *o = &sc.ops[ZP_STREAM_COMPUTE][i];
        if (zp_op_table[o->type].cls == ZP_OPC_P2P && zp_op_table[o->type].p2p == ZP_P2P_SEND) {
            *sends += 1;
            *nowait += o->nowait;
        }
        if (o->nowait && zp_op_table[o->type].p2p != ZP_P2P_SEND)
            cr_expect_fail("op %d (%s) not waited for, but it is not a send", i, zp_op_table[o->type].name);
    }
    zp_schedule_free(&sc);
}

/* Megatron-core's overlap_p2p_comm (its default with the interleaved schedule): the steady state's sends
 * leave the compute stream, the warm-up's and the cool-down's are waited for. 8 micro-batches on 4 stages
 * of 2 chunks: stage 1 runs (4 - 1 - 1)·2 + (2 - 1)·4 = 8 warm-up forwards of its 16, so 8 forward-backward
 * pairs in the steady state, 16 sends not waited for; its 8 warm-up forwards and 8 cool-down backwards send
 * and wait. Stage 3 warms up with 0 + 4 = 4: 12 pairs, forwards 4-15 and backwards 0-11; its second chunk
 * (forwards 4-7 and 12-15: chunks take turns every P = 4) ends the model and sends nothing, so 4 + 12 sends
 * are not waited for. With the warm-up's and the flush's too (--overlap-p2p-communication-warmup-flush), none
 * is. Off, or on the 1F1B schedule, every send is waited for. */
Test(pplayout, steady_state_sends_not_waited)
{
    const zp_model *m = model("llama-3-8b");
    zp_plan p = pp_plan(4, 2);
    p.grad_accum = 8;
    int sends, nowait;
    count_sends(m, &p, 1, &sends, &nowait);
    cr_expect_eq(sends, 32, "stage 1: %d sends", sends);
    cr_expect_eq(nowait, 16, "stage 1: %d sends not waited for", nowait);
    count_sends(m, &p, 3, &sends, &nowait);
    cr_expect_eq(sends, 32 - 8, "stage 3: %d sends (its last chunk's 8 forwards send nothing)", sends);
    cr_expect_eq(nowait, 16, "stage 3: %d sends not waited for", nowait);
    p.overlap_p2p_warmup_flush = 1;
    count_sends(m, &p, 1, &sends, &nowait);
    cr_expect(sends == 32 && nowait == 32, "warm-up and flush too: %d sends, %d not waited for", sends, nowait);
    p.overlap_p2p_warmup_flush = 0;
    p.overlap_p2p_comm = 0;
    count_sends(m, &p, 1, &sends, &nowait);
    cr_expect_eq(nowait, 0, "off: %d sends not waited for", nowait);
    zp_plan q = pp_plan(4, 1);
    q.grad_accum = 8;
    count_sends(m, &q, 1, &sends, &nowait);
    cr_expect(sends == 16 && nowait == 0, "1F1B: %d sends, %d not waited for", sends, nowait);
}

/* The sends left to run beside the next pass shorten the step by no more than the pipeline time the compute
 * stream spent (the bubble and the sends): Llama 3 8B, TP 8 with SP inside a node, 4 stages on 4 nodes, 2
 * chunks, 8 micro-batches of 8K tokens (32 MiB activations a GPU, over InfiniBand). */
Test(pplayout, overlapped_sends_shorten_the_step, .timeout = 120)
{
    const zp_model *m = model("llama-3-8b");
    zp_plan p = node_stages_plan(2);
    p.checkpoint = 0;
    const zp_sim_result on = sim_of(m, &p);
    p.overlap_p2p_comm = 0;
    const zp_sim_result off = sim_of(m, &p);
    const double saved = off.step_time - on.step_time;
    cr_expect(saved > 0, "on %.4f s, off %.4f s", on.step_time, off.step_time);
    cr_expect(saved <= off.pp_exposed - on.pp_exposed + 1e-9 && on.pp_exposed < off.pp_exposed,
              "saved %.4f s; pipeline time exposed %.4f s on, %.4f s off", saved, on.pp_exposed, off.pp_exposed);
    cr_expect(on.compute == off.compute || fabs(on.compute / off.compute - 1) < 1e-9,
              "the kernels are the same: %.6f s on, %.6f s off", on.compute, off.compute);
}
