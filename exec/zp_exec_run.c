/* zp_exec_run.c — the interpreter of the step schedule and the measured run.
 *
 * The schedule is run in its program order (zp_schedule_walk, sim/zp_schedule.h): on one thread, every
 * stream other than compute runs each operation whose channel waits are satisfied, as a GPU's streams
 * start work as soon as their events fire, then compute runs its next operation. Every rank runs the same
 * deterministic order over the same schedule, so the collectives of each communicator are issued in the
 * same order everywhere; a schedule whose waits cannot all be satisfied is reported as an error, never a
 * hang. What an operation does is its kind's executor function (the second column of sim/zp_ops.def);
 * its time goes to its kind's part and its phase. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "zp_exec_impl.h"
#include "zp_probe.h"
#include "zp_stats.h"
#include "zp_time.h"
#include "zp_watchdog.h"

/* signal and wait: the walk keeps the channels' tokens; nothing to run */
zp_status x_sync(zp_exec_session *S, const zp_op *o)
{
    (void)S;
    (void)o;
    return ZP_OK;
}

/* the kinds the executor does not implement (Pa+cpu's checkpoint copies, ZeRO-3 Offload's parameter
 * fetch): refused by zp_exec_config_check before a schedule holds them */
zp_status x_unsupported(zp_exec_session *S, const zp_op *o)
{
    (void)S;
    return ZP_FAIL(ZP_EUNSUPPORTED, "schedule: the executor has no '%s' operation", zp_op_name(o));
}

static const zp_exec_fn g_exec[ZP_NOPK] = {
#define ZP_OP(id, exec, ...) [ZP_OPK_##id] = exec,
#include "zp_ops.def"
#undef ZP_OP
};

/* Runs one op and bins its time: by its part (what the compute stream spent; a collective inside an op,
 * the cross-entropy's MP reductions, is binned by that op into mp_comm) and by its phase. */
static zp_status exec_op(void *ctx, const zp_op *o)
{
    zp_exec_session *S = ctx;
    const zp_op_info *in = zp_op_info_get(o->type);
    if (!in)
        return ZP_FAIL(ZP_ERUNTIME, "schedule: an operation of unknown kind %d", o->type);
    if (in->cls == ZP_OPC_SIGNAL || in->cls == ZP_OPC_WAIT)
        return ZP_OK;
    zp_comm_watchdog_beat(in->name); /* progress for the distributed-fault watchdog (a static label) */
    const double t0 = zp_time_now_s(), inner0 = S->t.part[ZP_PART_MP_COMM];
    zp_status st = g_exec[o->type](S, o);
    const double dt = zp_time_now_s() - t0, inner = S->t.part[ZP_PART_MP_COMM] - inner0;
    const zp_part part = zp_op_part(o);
    if (part < ZP_PART_NONE) {
        S->t.part[part] += dt - (part == ZP_PART_MP_COMM ? 0.0 : inner);
        S->t.phase[o->phase] += dt;
        S->t.kind[o->type] += dt;
        S->t.kind_n[o->type]++;
    }
    return st;
}

/* Zeroes the step's gradients and runs the schedule (each stream up to its first op of `stop_phase`, -1:
 * all); the global mean loss in *loss. */
static zp_status step_run(zp_exec_session *S, int step, int stop_phase, double *loss)
{
    S->step = step;
    zp_exec_tokens(S, step);
    if (S->slot[ZP_BUF_GRADS][0])
        ZP_TRY(S->be->zero(BUF(S, GRADS, 0), S->N * sizeof(float)));
    if (S->slot[ZP_BUF_GSHARD][0])
        ZP_TRY(S->be->zero(BUF(S, GSHARD, 0), S->units.shard_size * sizeof(float)));
    if (S->slot[ZP_BUF_XGRADS][0])
        ZP_TRY(S->be->zero(BUF(S, XGRADS, 0), S->NX * sizeof(float)));
    if (S->slot[ZP_BUF_XGSHARD][0])
        ZP_TRY(S->be->zero(BUF(S, XGSHARD, 0), S->xunits.shard_size * sizeof(float)));
    S->loss_sum = 0;
    S->gather_k = S->bucket_k = S->d2h_k = S->gather_xk = S->bucket_xk = 0;
    S->tok_micro = -1; /* new tokens this step */
    S->pending = NULL;
    memset(&S->t, 0, sizeof S->t);
    ZP_TRY(zp_schedule_walk(&S->sched, 0, stop_phase, exec_op, S));
    ZP_TRY(zp_exec_pipe_flush(S)); /* every pipeline send of the step delivered */
    /* every MP rank of a DP group computed the same loss: sum over the world, divide by mp */
    double l = S->loss_sum;
    ZP_TRY(zp_comm_allreduce_double(S->world, &l, ZP_OP_SUM));
    *loss = l / (double)S->mp / ((double)S->BT * (double)S->GA * (double)S->dp);
    return ZP_OK;
}

zp_status zp_exec_train_step(zp_exec_session *S, int step, double *loss) { return step_run(S, step, -1, loss); }

zp_status zp_exec_params(zp_exec_session *S, float **params, size_t *n)
{
    if (S->plan.stage == 3)
        return ZP_FAIL(ZP_EINVAL, "stage 3 holds only a shard of the parameters");
    *params = BUF(S, PARAMS, 0);
    *n = S->N;
    return ZP_OK;
}

zp_status zp_exec_expert_params(zp_exec_session *S, float **params, size_t *n)
{
    if (S->plan.stage == 3)
        return ZP_FAIL(ZP_EINVAL, "stage 3 holds only a shard of the parameters");
    *params = S->NX ? BUF(S, XPARAMS, 0) : NULL;
    *n = S->NX;
    return ZP_OK;
}

zp_status zp_exec_expert_grad(zp_exec_session *S, const float **grad, size_t *n)
{
    if (S->plan.stage > 1)
        return ZP_FAIL(ZP_EINVAL, "whole gradients exist at stages 0 and 1 only");
    *grad = S->NX ? BUF(S, XGRADS, 0) : NULL;
    *n = S->NX;
    return ZP_OK;
}

zp_status zp_exec_loss_grad(zp_exec_session *S, int step, double *loss, const float **grad, size_t *n)
{
    if (S->plan.stage > 1)
        return ZP_FAIL(ZP_EINVAL, "whole gradients exist at stages 0 and 1 only");
    ZP_TRY(step_run(S, step, ZP_PHASE_OPTIMIZER, loss)); /* the step without its optimizer */
    *grad = BUF(S, GRADS, 0);
    *n = S->N;
    return ZP_OK;
}

void zp_exec_result_free(zp_exec_result *r)
{
    if (!r)
        return;
    free(r->step);
    r->step = NULL;
}

/* The machine over the measured steps (q0 at their start, q1 at their end, on every rank): the run's own
 * CPU time summed over the ranks, the machine's busy time and load as rank 0 read them (unknown, -1, when
 * the ranks span nodes: one machine's /proc says nothing of the others). */
static zp_status quiet_window(zp_exec_session *S, const zp_quiet_sample *q0, const zp_quiet_sample *q1,
                              zp_quiet_in *q)
{
    int nodes = 1;
    ZP_TRY(zp_comm_node_count(S->world, &nodes));
    double cores = (double)sysconf(_SC_NPROCESSORS_ONLN);
    q->cores = cores >= 1 ? (int)cores : 1;
    q->procs = S->nranks;
    q->wall_s = q1->wall_s - q0->wall_s;
    q->own_cpu_s = q1->own_cpu_s - q0->own_cpu_s;
    q->busy_s = nodes == 1 && q0->busy_s >= 0 && q1->busy_s >= 0 ? q1->busy_s - q0->busy_s : -1;
    q->load1 = nodes == 1 ? q1->load1 : -1;
    if (S->rank != 0)
        q->busy_s = q->load1 = q->wall_s = 0;
    ZP_TRY(zp_comm_allreduce_double(S->world, &q->own_cpu_s, ZP_OP_SUM));
    ZP_TRY(zp_comm_allreduce_double(S->world, &q->busy_s, ZP_OP_SUM));
    ZP_TRY(zp_comm_allreduce_double(S->world, &q->load1, ZP_OP_SUM));
    return zp_comm_allreduce_double(S->world, &q->wall_s, ZP_OP_SUM);
}

/* The measured run's summary, reduced over the ranks: rank 0's breakdown goes to everyone (rank 0
 * prints it), memory is the largest rank's. */
static zp_status summarize(zp_exec_session *S, zp_exec_result *out, double *times, int first, int counted)
{
    double inv = 1.0 / (counted ? counted : 1);
    double *bd[] = {&out->time.compute, &out->time.mp_comm, &out->time.dp_comm, &out->time.optimizer,
                    &out->time.pp_comm, &out->time.phase[0], &out->time.phase[1], &out->time.phase[2],
                    &out->time.phase[3]};
    int n = out->steps - first;
    ZP_TRY(zp_quiet_steps_of(times + first, (size_t)n, &out->quiet.steps));
    out->measured_step_s = zp_stats_median(times + first, (size_t)n);
    out->tokens_per_s = (double)S->BT * (double)S->GA * (double)S->dp / out->measured_step_s;
    for (int t = 0; t < ZP_NOPK; t++) /* rank 0's own, which it prints: no reduction */
        out->time.kind[t] *= inv;
    for (size_t i = 0; i < sizeof bd / sizeof bd[0]; i++) {
        *bd[i] *= inv;
        if (S->rank != 0)
            *bd[i] = 0;
        ZP_TRY(zp_comm_allreduce_double(S->world, bd[i], ZP_OP_SUM));
    }
    const zp_memcount *c = &S->mem.count;
    for (int k = 0; k < ZP_MEM_NCAT; k++) {
        out->peak[k] = c->peak[k];
        ZP_TRY(zp_comm_allreduce_double(S->world, &out->peak[k], ZP_OP_MAX));
    }
    out->peak_activations = c->peak_act;
    out->peak_total = c->peak_dev;
    for (int s = 0; s < S->pp && s < ZP_EXEC_MAX_STAGES; s++) { /* each stage's largest rank */
        out->stage_peak_total[s] = s == S->pr ? c->peak_dev : 0.0;
        out->stage_peak_activations[s] = s == S->pr ? c->peak_act : 0.0;
        ZP_TRY(zp_comm_allreduce_double(S->world, &out->stage_peak_total[s], ZP_OP_MAX));
        ZP_TRY(zp_comm_allreduce_double(S->world, &out->stage_peak_activations[s], ZP_OP_MAX));
    }
    ZP_TRY(zp_comm_allreduce_double(S->world, &out->peak_activations, ZP_OP_MAX));
    return zp_comm_allreduce_double(S->world, &out->peak_total, ZP_OP_MAX);
}

zp_status zp_exec_run(const zp_exec_config *c, zp_comm *world, zp_exec_result *out)
{
    memset(out, 0, sizeof *out);
    zp_exec_session *S;
    ZP_TRY(zp_exec_open(c, world, &S));
    out->ranks = S->nranks;
    out->dp = S->dp;
    out->mp = S->mp;
    out->pp = S->pp;
    out->params_per_rank = (double)S->N;
    int cap = c->steps, first = c->steps >= 2 || c->min_seconds > 0 ? 1 : 0, counted = 0, k = 0;
    out->step = calloc((size_t)cap, sizeof *out->step);
    double *times = calloc((size_t)cap, sizeof *times), measured = 0;
    zp_quiet_sample q0 = {0}, q1;
    zp_status st = (out->step && times) ? ZP_OK : ZP_FAIL(ZP_ENOMEM, "out of memory");
    zp_probe *probe = NULL; /* the reference work, outside the steps and their memory count */
    if (st == ZP_OK && c->probe && (st = zp_probe_open(S->be, S->nn, &probe)) == ZP_OK)
        st = zp_probe_time(probe, world, &out->quiet.probe_s[0], &out->quiet.probe_fast_s[0], NULL);
    /* every rank sees the same dt (the max over ranks), so every rank stops after the same step */
    for (; st == ZP_OK && (k < c->steps || (measured < c->min_seconds && k < ZP_EXEC_MAX_STEPS)); k++) {
        if (k == cap) {
            cap *= 2;
            zp_exec_step *ns = realloc(out->step, (size_t)cap * sizeof *ns);
            if (ns)
                out->step = ns;
            double *nt = ns ? realloc(times, (size_t)cap * sizeof *nt) : NULL;
            if (!nt) {
                st = ZP_FAIL(ZP_ENOMEM, "out of memory");
                break;
            }
            times = nt;
        }
        zp_comm_watchdog_beat("a training step"); /* progress for the distributed-fault watchdog */
        st = zp_comm_barrier(world);
        if (k == first)
            zp_quiet_sample_take(&q0);
        double t0 = zp_time_now_s(), loss = 0;
        if (st == ZP_OK)
            st = step_run(S, k, -1, &loss);
        double dt = zp_time_now_s() - t0;
        if (st == ZP_OK)
            st = zp_comm_allreduce_double(world, &dt, ZP_OP_MAX);
        out->step[k].loss = loss;
        out->step[k].time_s = dt;
        times[k] = dt;
        if (st == ZP_OK && k >= first) {
            counted++;
            measured += dt;
            out->time.compute += S->t.part[ZP_PART_COMPUTE];
            out->time.mp_comm += S->t.part[ZP_PART_MP_COMM];
            out->time.dp_comm += S->t.part[ZP_PART_DP_COMM];
            out->time.optimizer += S->t.part[ZP_PART_OPTIMIZER];
            out->time.pp_comm += S->t.part[ZP_PART_PP_COMM];
            for (int p = 0; p < ZP_NPHASES; p++)
                out->time.phase[p] += S->t.phase[p];
            for (int t = 0; t < ZP_NOPK; t++) {
                out->time.kind[t] += S->t.kind[t];
                out->time.kind_n[t] = S->t.kind_n[t];
            }
        }
    }
    out->steps = k;
    zp_quiet_sample_take(&q1);
    if (st == ZP_OK && probe)
        st = zp_probe_time(probe, world, &out->quiet.probe_s[1], &out->quiet.probe_fast_s[1], NULL);
    zp_probe_close(probe);
    if (st == ZP_OK)
        st = quiet_window(S, &q0, &q1, &out->quiet);
    if (st == ZP_OK)
        st = summarize(S, out, times, first, counted);
    free(times);
    zp_exec_close(S);
    if (st != ZP_OK)
        zp_exec_result_free(out);
    return st;
}
