/* test_tpoverlap.c — TP communication overlapped with its GEMMs (zp_plan.tp_overlap, issue #28 point 3):
 * the schedule moves sequence parallelism's all-gathers and reduce-scatters to the tp stream in chunks with
 * the same FLOPs; the simulated step is faster with the exposed TP communication smaller but not zero; TE's
 * reduce-scatter kernel takes SMs from the GEMM beside it, copy-engine transfers none; bad plans are refused. */
#include <criterion/criterion.h>

#include "../zp_test.h"
#include <math.h>

#include "zp_device.h"
#include "zp_schedule.h"
#include "zp_simrun.h"
#include "zp_zoo.h"

/* TP t with sequence parallelism over dp ranks, selective recompute, micro-batch 1 x accum. */
static zp_plan tp_plan(int64_t dp, int64_t t, int64_t accum, int overlap)
{
    zp_plan p;
    zp_plan_default(&p, dp);
    p.mp = t;
    p.sp = 1;
    p.stage = 1;
    p.bf16 = 1;
    p.flash_attn = 1;
    zp_plan_set_recompute(&p, ZP_RECOMPUTE_SELECTIVE);
    p.grad_accum = accum;
    p.tp_overlap = overlap;
    return p;
}

/* A model with its sequence cut to `seq` tokens (the simulations stay short). */
static zp_model model_of(const char *name, int64_t seq)
{
    zp_model m = zp_zoo_find(name)->model;
    m.seq = seq;
    return m;
}

typedef struct {
    double mp_colls_compute; /* bytes of MP all-gathers / reduce-scatters / all-reduces on the compute stream */
    double tp_bytes;         /* bytes of the tp stream's transfers */
    int tp_ops, waits, signals;
} census;

static census count_ops(const zp_schedule *s)
{
    census c = {0};
    for (int st = 0; st < ZP_NSTREAMS; st++)
        for (int i = 0; i < s->n[st]; i++) {
            const zp_op *o = &s->ops[st][i];
            if (o->type == ZP_OPK_MP_ALLGATHER || o->type == ZP_OPK_MP_REDUCE_SCATTER || o->type == ZP_OPK_MP_ALLREDUCE)
                c.mp_colls_compute += o->bytes;
            if (st == ZP_STREAM_TP && zp_op_table[o->type].cls == ZP_OPC_COLL) {
                c.tp_bytes += o->bytes;
                c.tp_ops++;
            }
            if (o->channel == ZP_CH_TP_GO || o->channel == ZP_CH_TP_DONE) {
                c.waits += zp_op_table[o->type].cls == ZP_OPC_WAIT;
                c.signals += zp_op_table[o->type].cls == ZP_OPC_SIGNAL;
            }
        }
    return c;
}

/* The blocks' all-gathers and reduce-scatters leave the compute stream for the tp stream; the FLOPs and the
 * program order's validity (zp_schedule_build walks it: a token short deadlocks) are unchanged. Only the
 * embedding's and the LM head's collectives stay blocking (one reduce-scatter, one all-gather forward; one
 * reduce-scatter, one all-gather backward). */
Test(tpoverlap, schedule_moves_the_blocks_collectives_to_the_tp_stream)
{
    const zp_model m = model_of("llama-3-8b", 2048);
    for (int form = ZP_TP_OVERLAP_TE; form <= ZP_TP_OVERLAP_ASYNC; form++) {
        zp_plan off = tp_plan(1, 8, 1, ZP_TP_OVERLAP_OFF), on = tp_plan(1, 8, 1, form);
        zp_schedule a, b;
        cr_assert_eq(zp_schedule_build(&m, &off, &a), ZP_OK, "%s", zp_error_message());
        cr_assert_eq(zp_schedule_build(&m, &on, &b), ZP_OK, "%s", zp_error_message());
        const census ca = count_ops(&a), cb = count_ops(&b);
        const double Th = 2.0 * 2048 * 4096; /* one T x h 16-bit buffer */
        cr_expect_eq(ca.tp_ops, 0);
        cr_expect_eq(a.flops, b.flops, "%s: FLOPs %g != %g", zp_tp_overlap_name(form), b.flops, a.flops);
        /* embedding's reduce-scatter, the head's all-gather and reduce-scatter, the embedding gradient's
         * all-gather: 4 buffers stay */
        cr_expect(fabs(cb.mp_colls_compute - 4 * Th) < 1.0, "%s: %g B blocking, want %g", zp_tp_overlap_name(form),
                  cb.mp_colls_compute, 4 * Th);
        cr_expect_gt(cb.tp_ops, 0);
        cr_expect_eq(cb.waits, cb.signals, "%s: %d waits, %d signals", zp_tp_overlap_name(form), cb.waits, cb.signals);
        /* every block's 8 T x h collectives (4 forward, 4 backward; selective recompute adds none): the ring
         * steps carry 7/8 of an all-gather's buffer, TE's reduce-scatter chunks the whole buffer, async's
         * steps the 7 peers' eighths */
        const double per_block = form == ZP_TP_OVERLAP_TE ? 4 * 7.0 / 8 * Th + 4 * Th : 8 * 7.0 / 8 * Th;
        cr_expect(fabs(cb.tp_bytes - 32 * per_block) < 32.0, "%s: %g B on the tp stream, want %g",
                  zp_tp_overlap_name(form), cb.tp_bytes, 32 * per_block);
        zp_schedule_free(&a);
        zp_schedule_free(&b);
    }
}

/* A memory-only schedule (channels collapsed) and MoE and MLA models (their blocking collectives kept) build
 * with the overlap. */
Test(tpoverlap, other_models_and_memory_schedules_build)
{
    const char *models[] = {"mixtral-8x7b", "deepseek-v2-lite", "tiny-llama"};
    for (int i = 0; i < 3; i++) {
        const zp_model m = model_of(models[i], 512);
        zp_plan p = tp_plan(2, 2, 2, ZP_TP_OVERLAP_TE);
        zp_schedule s;
        cr_assert_eq(zp_schedule_build(&m, &p, &s), ZP_OK, "%s: %s", models[i], zp_error_message());
        zp_schedule_free(&s);
        cr_assert_eq(zp_schedule_build_memory(&m, &p, &s), ZP_OK, "%s: %s", models[i], zp_error_message());
        zp_schedule_free(&s);
    }
}

static zp_sim_result simulate(const zp_model *m, const zp_plan *p, const zp_cluster *c, int nccl_ctas)
{
    zp_profile prof;
    zp_device_profile_builtin(c, &prof);
    if (nccl_ctas >= 0)
        prof.dev.nccl_ctas = nccl_ctas;
    zp_sim_job j = {.in = {.model = m, .plan = p, .cluster = c, .profile = &prof}};
    cr_assert_eq(zp_simrun_one(&j), ZP_OK, "simulation failed: %s", zp_error_message());
    return j.res;
}

/* TP 8 with sequence parallelism on a DGX H100: overlapped, the step is shorter and the TP communication
 * the compute stream waits for (mp_comm) is smaller but not zero (the last reduce-scatter chunk, the steps
 * a GEMM chunk does not cover, the embedding's and the head's collectives); the kernels take longer (chunked
 * GEMMs, TE's reduce-scatter SMs). */
Test(tpoverlap, overlapped_step_is_faster_and_exposes_less)
{
    const zp_model m = model_of("llama-3-70b", 4096);
    const zp_cluster *c = zp_test_preset("dgx-h100");
    zp_plan off = tp_plan(2, 8, 2, ZP_TP_OVERLAP_OFF);
    const zp_sim_result r0 = simulate(&m, &off, c, -1);
    for (int form = ZP_TP_OVERLAP_TE; form <= ZP_TP_OVERLAP_ASYNC; form++) {
        zp_plan on = tp_plan(2, 8, 2, form);
        const zp_sim_result r1 = simulate(&m, &on, c, -1);
        const char *n = zp_tp_overlap_name(form);
        cr_expect_lt(r1.step_time, r0.step_time, "%s: step %g s, not overlapped %g s", n, r1.step_time, r0.step_time);
        cr_expect_lt(r1.mp_comm, 0.5 * r0.mp_comm, "%s: TP exposed %g s, not overlapped %g s", n, r1.mp_comm, r0.mp_comm);
        cr_expect_gt(r1.mp_comm, 0.0, "%s: nothing exposed", n);
        cr_expect_gt(r1.compute, r0.compute, "%s: kernels %g s, not overlapped %g s", n, r1.compute, r0.compute);
    }
}

/* TE's reduce-scatter kernel holds its SMs (zp_op_info.comm_sms) beside the GEMM: the kernels lose time to it
 * (nccl_contention) where the device model counts collectives' SMs, none without; async TP's copies are copy
 * engines: nothing lost (DP 1, stage 0: no NCCL collective runs beside the kernels). */
Test(tpoverlap, te_reduce_scatter_takes_sms_copy_engines_none)
{
    const zp_model m = model_of("llama-3-8b", 4096);
    const zp_cluster *c = zp_test_preset("dgx-h100");
    zp_plan te = tp_plan(1, 8, 1, ZP_TP_OVERLAP_TE), as = tp_plan(1, 8, 1, ZP_TP_OVERLAP_ASYNC);
    te.stage = as.stage = 0; /* DP 1 at stage 0: its all-reduces over one rank copy nothing */
    const zp_sim_result a = simulate(&m, &te, c, -1), b = simulate(&m, &te, c, 0), d = simulate(&m, &as, c, -1);
    cr_expect_gt(a.nccl_contention, 0.0);
    cr_expect_eq(b.nccl_contention, 0.0);
    cr_expect_leq(d.nccl_contention, 1e-12 * d.step_time, "async: %g s lost (TE %g s)", d.nccl_contention,
                  a.nccl_contention); /* SimGrid's rounding */
    cr_expect_gt(a.step_time, b.step_time);
    /* at most what 16 of 132 SMs held for the whole of the kernels would cost */
    cr_expect_leq(a.nccl_contention, b.compute * 16.0 / (132 - 16) * (1 + 1e-9));
}

/* Without sequence parallelism there is nothing TE overlaps: the plan is refused, naming --sp; unknown names
 * are refused naming the choices. */
Test(tpoverlap, bad_plans_refused)
{
    zp_plan p = tp_plan(1, 8, 1, ZP_TP_OVERLAP_TE);
    p.sp = 0;
    cr_expect_eq(zp_plan_validate(&p), ZP_EINVAL);
    cr_expect(strstr(zp_error_message(), "--sp") != NULL, "%s", zp_error_message());
    p.mp = 1; /* nothing to overlap at MP 1: allowed, changes nothing */
    cr_expect_eq(zp_plan_validate(&p), ZP_OK);
    zp_tp_overlap t;
    cr_expect_eq(zp_tp_overlap_parse("on", &t), ZP_OK);
    cr_expect_eq(t, ZP_TP_OVERLAP_TE);
    cr_expect_eq(zp_tp_overlap_parse("async", &t), ZP_OK);
    cr_expect_eq(t, ZP_TP_OVERLAP_ASYNC);
    cr_expect_eq(zp_tp_overlap_parse("ring", &t), ZP_EINVAL);
    cr_expect(strstr(zp_error_message(), "te") != NULL);
}

/* Megatron-core's --overlap-param-gather (zp_plan.overlap_param_gather): the stage-1 all-gather of the updated
 * parameters moves from after the optimizer to beside the first forward, bucket by bucket: the same bytes
 * gathered, the step shorter, the DP communication the compute stream waits for smaller. */
Test(tpoverlap, param_gather_beside_the_next_forward)
{
    const zp_model m = model_of("llama-3-8b", 4096);
    const zp_cluster *c = zp_test_preset("dgx-h100");
    zp_plan off = tp_plan(8, 2, 2, ZP_TP_OVERLAP_OFF), on = off;
    off.bucket = on.bucket = 1e8;
    on.overlap_param_gather = 1;
    zp_schedule a, b;
    cr_assert_eq(zp_schedule_build(&m, &off, &a), ZP_OK, "%s", zp_error_message());
    cr_assert_eq(zp_schedule_build(&m, &on, &b), ZP_OK, "%s", zp_error_message());
    double ga = 0, gb = 0;
    for (int i = 0; i < a.n[ZP_STREAM_COMM]; i++)
        ga += a.ops[ZP_STREAM_COMM][i].type == ZP_OPK_PARAM_ALLGATHER ? a.ops[ZP_STREAM_COMM][i].bytes : 0.0;
    for (int i = 0; i < b.n[ZP_STREAM_COMM]; i++)
        gb += b.ops[ZP_STREAM_COMM][i].type == ZP_OPK_PARAM_ALLGATHER ? b.ops[ZP_STREAM_COMM][i].bytes : 0.0;
    cr_expect_gt(ga, 0.0);
    cr_expect(fabs(ga - gb) <= 1e-9 * ga, "gathered %g B, overlapped %g B", ga, gb);
    cr_expect_eq(b.ops[ZP_STREAM_COMM][0].type, ZP_OPK_PARAM_ALLGATHER, "the comm stream starts with the gather");
    zp_schedule_free(&a);
    zp_schedule_free(&b);
    const zp_sim_result r0 = simulate(&m, &off, c, -1), r1 = simulate(&m, &on, c, -1);
    cr_expect_lt(r1.step_time, r0.step_time, "step %g s, after the optimizer %g s", r1.step_time, r0.step_time);
    cr_expect_lt(r1.dp_exposed, r0.dp_exposed, "DP exposed %g s, after the optimizer %g s", r1.dp_exposed,
                 r0.dp_exposed);
    /* stage 3 has no such all-gather: refused */
    on.stage = 3;
    cr_expect_eq(zp_plan_validate(&on), ZP_EINVAL);
}
