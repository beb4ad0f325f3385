/* MoE token dispatchers (vocab/zp_dispatch.h): the expected nodes and ranks a token reaches under group-
 * limited routing, checked against a brute-force enumeration of every routing outcome; the bytes each
 * dispatcher puts in the schedule and on the links (sim/zp_collcost.c); the engine's step with each; and the
 * inputs that are refused. */
#include <criterion/criterion.h>

#include "../zp_test.h"
#include <math.h>
#include <string.h>

#include "zp_collcost.h"
#include "zp_device.h"
#include "zp_dispatch.h"
#include "zp_fabric.h"
#include "zp_framework.h"
#include "zp_megatron.h"
#include "zp_memory.h"
#include "zp_schedule.h"
#include "zp_search.h"
#include "zp_simrun.h"
#include "zp_zoo.h"

/* Every subset of `k` of the `n` items in `set` (bit masks), summing f over them; returns the count. */
static double subsets(const int *items, int n, int k, int start, unsigned chosen, int units, int per_unit,
                      double *sum)
{
    if (k == 0) {
        unsigned seen = 0;
        for (int i = 0; i < 32; i++)
            if (chosen & (1u << i))
                seen |= 1u << (i / per_unit);
        *sum += __builtin_popcount(seen);
        return 1.0;
    }
    double count = 0;
    for (int i = start; i <= n - k; i++)
        count += subsets(items, n, k - 1, i + 1, chosen | (1u << items[i]), units, per_unit, sum);
    return count;
}

/* The mean number of units hit, over every choice of M of G groups (each equally likely) and every choice of
 * k of the chosen groups' experts (each equally likely): the routing zp_dispatch_spread assumes. */
static double brute_spread(int E, int k, int G, int M, int units)
{
    const int s = E / G;
    double total = 0, outcomes = 0;
    for (unsigned g = 0; g < (1u << G); g++) {
        if (__builtin_popcount(g) != M)
            continue;
        int items[32], n = 0;
        for (int j = 0; j < G; j++)
            if (g & (1u << j))
                for (int e = 0; e < s; e++)
                    items[n++] = j * s + e;
        double sum = 0, c = subsets(items, n, k, 0, 0, units, E / units, &sum);
        total += sum / c;
        outcomes += 1;
    }
    return total / outcomes;
}

Test(dispatch, spread_matches_enumeration)
{
    static const struct {
        int E, k, G, M, units;
    } c[] = {
        {16, 4, 4, 2, 4}, {16, 4, 4, 2, 8}, {16, 4, 4, 2, 2}, {16, 4, 8, 3, 2}, {16, 3, 8, 3, 16},
        {8, 2, 1, 1, 4},  {12, 3, 3, 1, 6}, {16, 2, 1, 1, 2}, {24, 6, 4, 3, 3}, {24, 6, 6, 2, 4},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        zp_model m = {.name = "t", .experts = c[i].E, .top_k = c[i].k};
        if (c[i].G > 1) {
            m.route_groups = c[i].G;
            m.route_topk = c[i].M;
        }
        const double want = brute_spread(c[i].E, c[i].k, c[i].G, c[i].M, c[i].units);
        const double got = zp_dispatch_spread(&m, c[i].units);
        cr_expect(fabs(got - want) < 1e-12, "E %d k %d groups %d of %d, %d units: %.15g, enumerated %.15g", c[i].E,
                  c[i].k, c[i].M, c[i].G, c[i].units, got, want);
    }
}

/* DeepSeek-V3 over EP 64 on 8 nodes: a token's 8 experts in at most 4 nodes (its config's topk_group), and
 * without the group limit (n_group 1) in up to 8 of them. */
Test(dispatch, deepseek_v3_reaches_at_most_four_nodes)
{
    zp_model m = zp_zoo_find("deepseek-v3")->model;
    cr_expect_eq(m.route_groups, 8);
    cr_expect_eq(m.route_topk, 4);
    const double nodes = zp_dispatch_spread(&m, 8), ranks = zp_dispatch_spread(&m, 64);
    cr_expect(nodes > 3.5 && nodes <= 4.0, "%g nodes", nodes);
    cr_expect(ranks > nodes && ranks <= 8.0, "%g ranks", ranks);
    zp_model free_routing = m;
    free_routing.route_groups = free_routing.route_topk = 0;
    const double free_nodes = zp_dispatch_spread(&free_routing, 8);
    cr_expect(free_nodes > nodes + 1.5 && free_nodes < 8.0, "%g nodes without the limit", free_nodes);
    cr_expect_eq(zp_dispatch_spread(&m, 1), 1.0);
}

Test(dispatch, rows_and_bytes)
{
    cr_expect_eq(zp_dispatch_elt_bytes(ZP_DISPATCH_ALLTOALL, 0), 2.0);
    cr_expect_eq(zp_dispatch_elt_bytes(ZP_DISPATCH_DEEPEP, 0), 2.0);
    cr_expect_eq(zp_dispatch_elt_bytes(ZP_DISPATCH_DEEPEP_FP8, 0), 1.0 + 4.0 / 128.0);
    cr_expect_eq(zp_dispatch_elt_bytes(ZP_DISPATCH_DEEPEP_FP8, 1), 2.0);
    int k = -1;
    cr_expect_eq(zp_dispatch_parse("DeepEP", &k), ZP_OK);
    cr_expect_eq(k, ZP_DISPATCH_DEEPEP);
    cr_expect_eq(zp_dispatch_parse("nccl", &k), ZP_EINVAL);
    cr_expect(strstr(zp_error_message(), "deepep-fp8"), "%s", zp_error_message());
    cr_expect_str_eq(zp_dispatch_get(ZP_DISPATCH_DEEPEP)->megatron, "flex");
    cr_expect_null(zp_dispatch_get(ZP_NDISPATCH));
    cr_expect_eq(zp_dispatch_parse("allgather", &k), ZP_OK);
    cr_expect_eq(k, ZP_DISPATCH_ALLGATHER);
    cr_expect_str_eq(zp_dispatch_get(k)->megatron, "allgather");
    cr_expect(zp_dispatch_get(k)->gather && !zp_dispatch_get(k)->dedup);
    cr_expect_eq(zp_dispatch_share(&zp_zoo_find("deepseek-v3")->model, k, 8), 1.0);
}

static zp_plan moe_plan(int64_t dp, int64_t ep, int dispatcher)
{
    zp_plan p;
    zp_plan_default(&p, dp);
    p.stage = 1;
    p.ep = ep;
    p.micro_batch = 1;
    p.dispatcher = dispatcher;
    return p;
}

static double kind_bytes(const zp_schedule *s, int type)
{
    for (int st = 0; st < ZP_NSTREAMS; st++)
        for (int i = 0; i < s->n[st]; i++)
            if (s->ops[st][i].type == type)
                return s->ops[st][i].bytes;
    return 0;
}

/* deepep-fp8: the tokens toward the experts (dispatch forward, the combine's gradient) in FP8 with their
 * scales, the way back in bf16; alltoall and deepep both bf16 both ways. */
Test(dispatch, schedule_bytes_by_direction)
{
    zp_model m = zp_zoo_find("deepseek-v3")->model;
    m.layers = 5;
    m.seq = 1024;
    const double copies = 1024.0 * 8 * 7168; /* T·k·h */
    static const struct {
        int kind, op;
        double elt;
    } c[] = {
        {ZP_DISPATCH_ALLTOALL, ZP_OPK_A2A_DISPATCH, 2.0},
        {ZP_DISPATCH_DEEPEP, ZP_OPK_A2A_COMBINE_BWD, 2.0},
        {ZP_DISPATCH_DEEPEP_FP8, ZP_OPK_A2A_DISPATCH, 1.03125},
        {ZP_DISPATCH_DEEPEP_FP8, ZP_OPK_A2A_COMBINE_BWD, 1.03125},
        {ZP_DISPATCH_DEEPEP_FP8, ZP_OPK_A2A_COMBINE, 2.0},
        {ZP_DISPATCH_DEEPEP_FP8, ZP_OPK_A2A_DISPATCH_BWD, 2.0},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        zp_plan p = moe_plan(64, 64, c[i].kind);
        zp_schedule s;
        cr_assert_eq(zp_schedule_build(&m, &p, &s), ZP_OK, "%s", zp_error_message());
        cr_expect_float_eq(kind_bytes(&s, c[i].op), c[i].elt * copies, 1e-9 * copies, "%s %s",
                           zp_dispatch_get(c[i].kind)->name, zp_op_table[c[i].op].name);
        zp_schedule_free(&s);
    }
}

/* The links: across nodes DeepEP sends a token once to each other node it reaches (the node share of
 * Megatron's per-copy bytes), forwards it over NVLink to each GPU that holds one of its experts, and runs
 * the two beside each other: the least time is the longer of them, not their sum. */
Test(dispatch, link_bytes_and_pipelining)
{
    zp_model m = zp_zoo_find("deepseek-v3")->model;
    const zp_cluster *c = zp_test_preset("dgx-h100");
    static zp_profile prof;
    zp_device_profile_builtin(c, &prof);
    zp_op o = {.type = ZP_OPK_A2A_COMBINE, .bytes = 4096.0 * 8 * 7168 * 2, .batch = 1};
    double rail[2], intra[2], least[2];
    for (int d = 0; d < 2; d++) {
        zp_plan p = moe_plan(64, 64, d ? ZP_DISPATCH_DEEPEP : ZP_DISPATCH_ALLTOALL);
        zp_sim_input in = {.model = &m, .plan = &p, .cluster = c, .profile = &prof};
        zp_net N;
        cr_assert_eq(zp_fabric_setup(&in, 0, &N), ZP_OK, "%s", zp_error_message());
        const zp_group_shape *gs = zp_fabric_group(&N, ZP_GROUP_EP);
        cr_assert_eq(gs->k, 8);
        cr_assert_eq(gs->g, 8);
        rail[d] = zp_collcost_rail_bytes(&N, &o, gs);
        intra[d] = zp_collcost_intra_bytes(&N, &o, gs);
        least[d] = zp_collcost_least_time(&N, &o);
        cr_expect_eq(zp_collcost_pipelined(&N, &o, gs), d);
        if (d) {
            const double t_nv = intra[d] / zp_collcost_nv_bw(&N, gs) + zp_collcost_choose(&N, &o, gs).lat;
            cr_expect_float_eq(least[d], fmax(t_nv, rail[d] / N.rail_bw), 1e-12 * least[d]);
        }
    }
    const double node_share = zp_dispatch_spread(&m, 8) / 8.0, rank_share = zp_dispatch_spread(&m, 64) / 8.0;
    cr_expect_float_eq(rail[1], rail[0] * node_share, 1e-9 * rail[0], "rail bytes %g vs %g", rail[1], rail[0]);
    cr_expect_float_eq(intra[1], rank_share * 7.0 / 8.0 * o.bytes, 1e-9 * o.bytes);
    cr_expect_float_eq(intra[0], 7.0 / 64.0 * o.bytes, 1e-9 * o.bytes);
    cr_expect_lt(least[1], 0.6 * least[0], "DeepEP %g s vs all-to-all %g s", least[1], least[0]);
}

static zp_sim_result simulate(const zp_model *m, const zp_plan *p, const zp_cluster *c)
{
    zp_profile prof;
    zp_device_profile_builtin(c, &prof);
    zp_sim_job j = {.in = {.model = m, .plan = p, .cluster = c, .profile = &prof}};
    cr_assert_eq(zp_simrun_many(&j, 1, 1), ZP_OK);
    cr_assert_eq(j.st, ZP_OK, "simulation: %s", j.st ? j.err : "ok");
    return j.res;
}

/* The engine: EP 16 over two nodes; DeepEP's step is shorter than the all-to-all's and FP8 dispatch shorter
 * still; the compute is the same. Inside one node (no network) DeepEP still sends a token once per GPU. */
Test(dispatch, engine_steps, .timeout = 300)
{
    zp_model m = zp_zoo_find("mixtral-8x7b")->model;
    m.layers = 4;
    m.experts = 16;
    const zp_cluster *c = zp_test_preset("dgx-h100");
    zp_sim_result r[3];
    for (int d = 0; d < 3; d++) {
        zp_plan p = moe_plan(32, 16, d);
        p.fp8 = d == ZP_DISPATCH_DEEPEP_FP8 ? 1 : 0;
        r[d] = simulate(&m, &p, c);
    }
    cr_expect_lt(r[1].step_time, r[0].step_time, "deepep %g s vs alltoall %g s", r[1].step_time, r[0].step_time);
    cr_expect_lt(r[1].mp_comm, 0.8 * r[0].mp_comm, "all-to-alls: deepep %g s vs alltoall %g s", r[1].mp_comm,
                 r[0].mp_comm);
    cr_expect_lt(r[2].mp_comm, r[1].mp_comm, "FP8 dispatch %g s vs bf16 %g s", r[2].mp_comm, r[1].mp_comm);
    zp_plan in0 = moe_plan(8, 8, ZP_DISPATCH_ALLTOALL), in1 = moe_plan(8, 8, ZP_DISPATCH_DEEPEP);
    m.experts = 8;
    zp_sim_result a = simulate(&m, &in0, c), b = simulate(&m, &in1, c);
    cr_expect_leq(b.mp_comm, a.mp_comm, "in a node: deepep %g s vs alltoall %g s", b.mp_comm, a.mp_comm);
}

/* Megatron-core's all-gather dispatcher: each MoE block's four all-to-alls become two all-gathers (the tokens
 * forward, the output gradients backward) and two reduce-scatters, each of the EP group's T h 16-bit
 * elements whole (routing and capacity aside); inside a DGX H100 node (EP 8, Mixtral's top-2) their least
 * times are EP / k = 4 times the all-to-alls' within 15% (the same NVLink, ring latencies apart). Its
 * global gather buffer (EP T h 16-bit elements) is in the rank's buffers. */
Test(dispatch, allgather_moves_the_group_tokens_whole)
{
    zp_model m = zp_zoo_find("mixtral-8x7b")->model;
    m.layers = 2;
    const zp_cluster *c = zp_test_preset("dgx-h100");
    static zp_profile prof;
    zp_device_profile_builtin(c, &prof);
    double least[2] = {0, 0}, buffers[2] = {0, 0};
    for (int d = 0; d < 2; d++) {
        zp_plan p = moe_plan(8, 8, d ? ZP_DISPATCH_ALLGATHER : ZP_DISPATCH_ALLTOALL);
        p.capacity_factor = 1.25; /* the all-gather ignores it */
        zp_plan_set_recompute(&p, ZP_RECOMPUTE_NONE);
        zp_schedule s;
        cr_assert_eq(zp_schedule_build(&m, &p, &s), ZP_OK, "%s", zp_error_message());
        zp_sim_input in = {.model = &m, .plan = &p, .cluster = c, .profile = &prof};
        zp_net N;
        cr_assert_eq(zp_fabric_setup(&in, 0, &N), ZP_OK, "%s", zp_error_message());
        int count[ZP_COLL_COUNT] = {0};
        for (int st = 0; st < ZP_NSTREAMS; st++)
            for (int i = 0; i < s.n[st]; i++) {
                const zp_op *o = &s.ops[st][i];
                if (zp_op_table[o->type].group != ZP_GROUP_EP || zp_op_table[o->type].cls != ZP_OPC_COLL)
                    continue;
                count[zp_op_table[o->type].coll]++;
                least[d] += zp_collcost_least_time(&N, o);
                if (d)
                    cr_expect_float_eq(o->bytes, 2.0 * m.seq * m.hidden * 8, 1e-9 * o->bytes, "%s: %g bytes",
                                       zp_op_table[o->type].name, o->bytes);
            }
        cr_expect_eq(count[ZP_COLL_ALLTOALL], d ? 0 : 4 * 2);
        cr_expect_eq(count[ZP_COLL_ALLGATHER], d ? 2 * 2 : 0);
        cr_expect_eq(count[ZP_COLL_REDUCE_SCATTER], d ? 2 * 2 : 0);
        zp_schedule_free(&s);
        zp_memory mem;
        cr_assert_eq(zp_memory_estimate(&m, &p, &mem), ZP_OK, "%s", zp_error_message());
        buffers[d] = mem.buffers;
    }
    cr_expect_float_eq(buffers[1] - buffers[0], 2.0 * m.seq * m.hidden * 8, 1e-6 * buffers[1], "buffers %g vs %g",
                       buffers[1], buffers[0]);
    const double ratio = least[1] / least[0] * 1.25; /* the all-to-all's copies at capacity 1.25 */
    cr_expect(ratio > 4.0 * 0.85 && ratio < 4.0 * 1.15, "all-gather / all-to-all %g", ratio);
}

/* DeepEP's buffers as Megatron-core asks for them (DeepEP's csrc/config.hpp size hints over its dispatch and
 * combine configurations, worked by hand here): DeepSeek-V3's hidden 7168 over EP 64 (8 nodes of 8: the
 * NVLink buffer 10 channels x 8 peers x 288 tokens x (14336 + 8 + 2048) B and counters, the RDMA buffer 10 x 8
 * x 140 (128 aligned to 28) x 2 x (14336 + 8 + 2048 + 16) B, counters and 1 MiB): 746,277,120 bytes; inside
 * a node (EP 8) no RDMA buffer; none for the all-to-all. In the rank's buffers. */
Test(dispatch, deepep_buffers)
{
    cr_expect_float_eq(zp_dispatch_buffer_bytes(ZP_DISPATCH_DEEPEP, 64, 7168), 746277120.0, 0.5);
    cr_expect_float_eq(zp_dispatch_buffer_bytes(ZP_DISPATCH_DEEPEP_FP8, 64, 7168), 746277120.0, 0.5);
    cr_expect_float_eq(zp_dispatch_buffer_bytes(ZP_DISPATCH_DEEPEP, 8, 7168), 335709824.0, 0.5);
    cr_expect_eq(zp_dispatch_buffer_bytes(ZP_DISPATCH_ALLTOALL, 64, 7168), 0.0);
    cr_expect_eq(zp_dispatch_buffer_bytes(ZP_DISPATCH_DEEPEP, 1, 7168), 0.0);
    zp_model m = zp_zoo_find("deepseek-v3")->model;
    double buffers[2];
    for (int d = 0; d < 2; d++) {
        zp_plan p = moe_plan(128, 64, d ? ZP_DISPATCH_DEEPEP : ZP_DISPATCH_ALLTOALL);
        zp_memory mem;
        cr_assert_eq(zp_memory_estimate(&m, &p, &mem), ZP_OK, "%s", zp_error_message());
        buffers[d] = mem.buffers;
    }
    cr_expect_float_eq(buffers[1] - buffers[0], 746277120.0, 1.0, "buffers %g vs %g", buffers[1], buffers[0]);
}

/* Refused: a dispatcher for a dense model, FP8 dispatch without FP8 training, an unknown row. */
Test(dispatch, bad_inputs)
{
    const zp_cluster *c = zp_test_preset("dgx-h100");
    zp_search_req r;
    zp_search_req_default(&r, &zp_zoo_find("llama-3-8b")->model, c, 64);
    r.base.dispatcher = ZP_DISPATCH_DEEPEP;
    cr_expect_eq(zp_search_validate(&r), ZP_EINVAL);
    cr_expect(strstr(zp_error_message(), "no routed experts"), "%s", zp_error_message());
    zp_search_req_default(&r, &zp_zoo_find("deepseek-v3")->model, c, 2048);
    r.base.dispatcher = ZP_DISPATCH_DEEPEP_FP8;
    cr_expect_eq(zp_search_validate(&r), ZP_EINVAL);
    cr_expect(strstr(zp_error_message(), "--precision fp8"), "%s", zp_error_message());
    r.base.fp8 = 1;
    cr_expect_eq(zp_search_validate(&r), ZP_OK, "%s", zp_error_message());
    r.base.dispatcher = ZP_DISPATCH_ALLGATHER; /* Megatron-core overlaps all-to-alls only */
    r.base.ep_overlap = 1;
    cr_expect_eq(zp_search_validate(&r), ZP_EINVAL);
    cr_expect(strstr(zp_error_message(), "alltoall or deepep"), "%s", zp_error_message());
    r.base.ep_overlap = 0;
    zp_plan p = moe_plan(64, 64, ZP_NDISPATCH);
    cr_expect_eq(zp_plan_validate(&p), ZP_EINVAL);
    /* group-limited routing that does not hold top_k, or a group count that does not divide the experts */
    zp_model m = zp_zoo_find("deepseek-v3")->model;
    m.route_topk = 0;
    cr_expect_eq(zp_model_validate(&m), ZP_EINVAL);
    m.route_topk = 1;
    m.route_groups = 64; /* 1 group of 4 experts cannot hold 8 */
    cr_expect_eq(zp_model_validate(&m), ZP_EINVAL);
    cr_expect(strstr(zp_error_message(), "top_k"), "%s", zp_error_message());
    m.route_groups = 7;
    m.route_topk = 4;
    cr_expect_eq(zp_model_validate(&m), ZP_EINVAL);
}

/* EP overlap (--overlap-moe-expert-parallel-comm): the all-to-alls of the passes that have a partner go to
 * the EP stream; without pipeline stages every pass but the first forward and the last backward. */
Test(dispatch, overlap_pairs_the_passes)
{
    zp_model m = zp_zoo_find("mixtral-8x7b")->model;
    m.layers = 2;
    zp_plan p = moe_plan(16, 8, ZP_DISPATCH_ALLTOALL);
    p.grad_accum = 4;
    p.ep_overlap = 1;
    zp_plan_set_recompute(&p, ZP_RECOMPUTE_NONE);
    zp_schedule s;
    cr_assert_eq(zp_schedule_build(&m, &p, &s), ZP_OK, "%s", zp_error_message());
    int on[ZP_NSTREAMS] = {0};
    for (int st = 0; st < ZP_NSTREAMS; st++)
        for (int i = 0; i < s.n[st]; i++)
            if (zp_op_table[s.ops[st][i].type].coll == ZP_COLL_ALLTOALL)
                on[st]++;
    /* 8 passes, 2 all-to-alls per MoE block and pass, 2 blocks: 6 paired passes on the EP stream */
    cr_expect_eq(on[ZP_STREAM_EP], 6 * 2 * 2, "%d on the EP stream", on[ZP_STREAM_EP]);
    cr_expect_eq(on[ZP_STREAM_COMPUTE], 2 * 2 * 2, "%d on the compute stream", on[ZP_STREAM_COMPUTE]);
    zp_schedule_free(&s);
    p.grad_accum = 1; /* one micro-batch: nothing to pair with */
    cr_assert_eq(zp_schedule_build(&m, &p, &s), ZP_OK);
    for (int i = 0; i < s.n[ZP_STREAM_EP]; i++)
        cr_expect_neq(zp_op_table[s.ops[ZP_STREAM_EP][i].type].cls, ZP_OPC_COLL);
    zp_schedule_free(&s);
}

/* The engine: the overlapped step is shorter, by at most the all-to-alls' time; the kernels are the same
 * work (they lose a little to the SMs the transfers hold). */
Test(dispatch, overlap_engine_step, .timeout = 300)
{
    zp_model m = zp_zoo_find("mixtral-8x7b")->model;
    m.layers = 4;
    m.experts = 16;
    m.seq = 4096;
    const zp_cluster *c = zp_test_preset("dgx-h100");
    zp_plan p = moe_plan(32, 16, ZP_DISPATCH_ALLTOALL);
    p.grad_accum = 4;
    zp_sim_result a = simulate(&m, &p, c);
    p.ep_overlap = 1;
    zp_sim_result o = simulate(&m, &p, c);
    cr_expect_lt(o.step_time, 0.95 * a.step_time, "overlapped %g s vs blocking %g s", o.step_time, a.step_time);
    cr_expect_gt(o.step_time, a.step_time - a.mp_comm, "overlapped %g s below blocking %g s less its all-to-alls %g s",
                 o.step_time, a.step_time, a.mp_comm);
    cr_expect_geq(o.compute, a.compute * (1.0 - 1e-9), "kernels %g s vs %g s", o.compute, a.compute);
}

/* Megatron-core's rules for its combined 1F1B: no full recompute, and interleaving beside pipeline stages. */
Test(dispatch, overlap_megatron_rules)
{
    zp_plan p = moe_plan(16, 8, ZP_DISPATCH_ALLTOALL);
    p.ep_overlap = 1;
    zp_plan_set_recompute(&p, ZP_RECOMPUTE_SELECTIVE);
    cr_expect_eq(zp_megatron_check(&p), ZP_OK, "%s", zp_error_message());
    zp_plan_set_recompute(&p, ZP_RECOMPUTE_FULL);
    cr_expect_eq(zp_megatron_check(&p), ZP_EUNSUPPORTED);
    cr_expect(strstr(zp_error_message(), "full"), "%s", zp_error_message());
    zp_plan_set_recompute(&p, ZP_RECOMPUTE_NONE);
    p.pp = 2;
    p.dp = 8;
    p.schedule = ZP_PP_1F1B;
    cr_expect_eq(zp_megatron_check(&p), ZP_EUNSUPPORTED);
    cr_expect(strstr(zp_error_message(), "interleaved"), "%s", zp_error_message());
    const zp_cluster *c = zp_test_preset("dgx-h100");
    zp_search_req r;
    zp_search_req_default(&r, &zp_zoo_find("llama-3-8b")->model, c, 64);
    r.base.ep_overlap = 1;
    cr_expect_eq(zp_search_validate(&r), ZP_EINVAL);
    cr_expect(strstr(zp_error_message(), "no routed experts"), "%s", zp_error_message());
}

/* DeepSeek-V2-Lite cut to 3 blocks (its first dense, two MoE blocks of 64 experts and 2 shared experts). */
static zp_model shared_model(void)
{
    zp_model m = zp_zoo_find("deepseek-v2-lite")->model;
    m.layers = 3;
    m.seq = 4096;
    return m;
}

/* The compute stream's op kinds between each EP_GO signal and its EP_DONE wait, counted; *beside: how many
 * of them are the shared experts' GEMMs. */
static int ep_stretches(const zp_schedule *s, int *beside)
{
    int n = 0, open = 0;
    *beside = 0;
    for (int i = 0; i < s->n[ZP_STREAM_COMPUTE]; i++) {
        const zp_op *op = &s->ops[ZP_STREAM_COMPUTE][i];
        if (zp_op_table[op->type].cls == ZP_OPC_SIGNAL && op->channel == ZP_CH_EP_GO)
            open = 1, n++;
        else if (zp_op_table[op->type].cls == ZP_OPC_WAIT && op->channel == ZP_CH_EP_DONE)
            open = 0;
        else if (open && (op->type == ZP_OPK_MLP_UP || op->type == ZP_OPK_MLP_DOWN ||
                          op->type == ZP_OPK_MLP_UP_DGRAD || op->type == ZP_OPK_MLP_DOWN_DGRAD ||
                          op->type == ZP_OPK_MLP_UP_WGRAD || op->type == ZP_OPK_MLP_DOWN_WGRAD))
            (*beside)++;
    }
    return n;
}

/* --moe-shared-expert-overlap (Megatron-core's shared_experts.py): per MoE block and micro-batch the dispatch
 * and the combine all-to-alls of the forward and the combine's in backward go to the EP stream, each with
 * the shared experts' part beside it (up; down; their whole backward: 2 + 1 + 4 GEMMs); the dispatch's
 * backward all-to-all stays on the compute stream; the op kinds and their work are the same as without. */
Test(dispatch, shared_overlap_schedule)
{
    zp_model m = shared_model();
    zp_plan p = moe_plan(8, 8, ZP_DISPATCH_ALLTOALL);
    zp_plan_set_recompute(&p, ZP_RECOMPUTE_NONE);
    zp_schedule a, o;
    cr_assert_eq(zp_schedule_build(&m, &p, &a), ZP_OK, "%s", zp_error_message());
    p.shared_overlap = 1;
    cr_assert_eq(zp_schedule_build(&m, &p, &o), ZP_OK, "%s", zp_error_message());
    int on[ZP_NSTREAMS] = {0}, beside = 0;
    for (int st = 0; st < ZP_NSTREAMS; st++)
        for (int i = 0; i < o.n[st]; i++)
            if (zp_op_table[o.ops[st][i].type].coll == ZP_COLL_ALLTOALL)
                on[st]++;
    cr_expect_eq(on[ZP_STREAM_EP], 2 * 3, "%d on the EP stream", on[ZP_STREAM_EP]);
    cr_expect_eq(on[ZP_STREAM_COMPUTE], 2 * 1, "%d on the compute stream", on[ZP_STREAM_COMPUTE]);
    cr_expect_eq(ep_stretches(&o, &beside), 2 * 3);
    cr_expect_eq(beside, 2 * (1 + 1 + 4), "%d shared-expert GEMMs beside the all-to-alls", beside);
    cr_expect_eq(ep_stretches(&a, &beside), 0);
    for (int k = 0; k < ZP_NOPK; k++) {
        double w[2] = {0, 0};
        const zp_schedule *s[2] = {&a, &o};
        for (int j = 0; j < 2; j++)
            for (int st = 0; st < ZP_NSTREAMS; st++)
                for (int i = 0; i < s[j]->n[st]; i++)
                    if (s[j]->ops[st][i].type == k)
                        w[j] += s[j]->ops[st][i].flops + s[j]->ops[st][i].bytes;
        cr_expect_float_eq(w[1], w[0], 1e-9 * (w[0] + 1), "%s: %g vs %g", zp_op_table[k].name, w[1], w[0]);
    }
    zp_schedule_free(&a);
    zp_schedule_free(&o);
    /* without EP there is no all-to-all to hide behind: the shared experts run in line */
    zp_plan q = moe_plan(8, 1, ZP_DISPATCH_ALLTOALL);
    q.shared_overlap = 1;
    cr_assert_eq(zp_schedule_build(&m, &q, &o), ZP_OK);
    cr_expect_eq(ep_stretches(&o, &beside), 0);
    zp_schedule_free(&o);
}

/* The engine, EP 16 over two DGX H100 nodes: the step is shorter with the shared experts beside the
 * all-to-alls, and no shorter than the same model without shared experts at all (their kernels hidden
 * entirely is the most it can gain). */
Test(dispatch, shared_overlap_engine_step, .timeout = 300)
{
    zp_model m = shared_model();
    const zp_cluster *c = zp_test_preset("dgx-h100");
    zp_plan p = moe_plan(16, 16, ZP_DISPATCH_ALLTOALL);
    p.grad_accum = 2;
    zp_sim_result a = simulate(&m, &p, c);
    p.shared_overlap = 1;
    zp_sim_result o = simulate(&m, &p, c);
    zp_model none = m;
    none.shared_experts = 0;
    p.shared_overlap = 0;
    zp_sim_result z = simulate(&none, &p, c);
    cr_expect_lt(o.step_time, a.step_time * (1.0 - 1e-3), "beside %g s vs in line %g s", o.step_time, a.step_time);
    cr_expect_gt(o.step_time, z.step_time, "beside %g s vs no shared experts %g s", o.step_time, z.step_time);
}

/* Megatron-core's rules (transformer_config.py): the all-to-all dispatcher only, not with the combined 1F1B;
 * a dense model has nothing to overlap; DeepSpeed has no such option. Megatron-LM arguments carry it. */
Test(dispatch, shared_overlap_rules)
{
    const zp_cluster *c = zp_test_preset("dgx-h100");
    zp_search_req r;
    zp_search_req_default(&r, &zp_zoo_find("llama-3-8b")->model, c, 64);
    r.base.shared_overlap = 1;
    cr_expect_eq(zp_search_validate(&r), ZP_EINVAL);
    cr_expect(strstr(zp_error_message(), "no mixture-of-experts"), "%s", zp_error_message());
    zp_search_req_default(&r, &zp_zoo_find("deepseek-v3")->model, c, 2048);
    r.base.shared_overlap = 1;
    cr_expect_eq(zp_search_validate(&r), ZP_OK, "%s", zp_error_message());
    r.base.dispatcher = ZP_DISPATCH_DEEPEP;
    cr_expect_eq(zp_search_validate(&r), ZP_EINVAL);
    cr_expect(strstr(zp_error_message(), "alltoall only"), "%s", zp_error_message());
    r.base.dispatcher = ZP_DISPATCH_ALLTOALL;
    r.base.ep_overlap = 1;
    cr_expect_eq(zp_search_validate(&r), ZP_EINVAL);
    cr_expect(strstr(zp_error_message(), "together"), "%s", zp_error_message());
    r.base.ep_overlap = 0;
    r.framework = ZP_FRAMEWORK_DEEPSPEED;
    cr_expect_eq(zp_search_validate(&r), ZP_EINVAL);
    cr_expect(strstr(zp_error_message(), "--moe-shared-expert-overlap"), "%s", zp_error_message());
    zp_model mx = zp_zoo_find("mixtral-8x7b")->model; /* no shared experts: stated, changes nothing */
    zp_plan p = moe_plan(8, 8, ZP_DISPATCH_ALLTOALL);
    p.shared_overlap = 1;
    char args[4096];
    cr_assert_eq(zp_megatron_args(&mx, &p, args, sizeof args), ZP_OK, "%s", zp_error_message());
    cr_expect(strstr(args, " --moe-shared-expert-overlap"), "%s", args);
}
