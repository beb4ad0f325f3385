/* zp_timing.c — the timing harness (zp_timing.h). */
#include "zp_timing.h"

#include <math.h>
#include <string.h>

#include "zp_stats.h"
#include "zp_time.h"

zp_timing_opts zp_timing_opts_default(void)
{
    return (zp_timing_opts){.warmup = 1, .reps = 5};
}

int zp_timing_inner(double per_call_s, double target_s, int lo, int hi)
{
    double n = ceil(target_s / (per_call_s > 1e-7 ? per_call_s : 1e-7));
    return n < lo ? lo : n > hi ? hi : (int)n;
}

static int inner_of(const zp_timing_op *op) { return op->inner > 1 ? op->inner : 1; }

static zp_status calls(const zp_timing_op *op)
{
    for (int i = 0; i < inner_of(op); i++)
        ZP_TRY(op->fn(op->ctx));
    return ZP_OK;
}

/* Seconds of one sample (inner calls) of op, by the clock of o. */
static zp_status sample(const zp_timing_opts *o, const zp_timing_op *op, double *seconds)
{
    const int hooked = o->clock_start && o->clock_stop;
    double t0 = 0;
    if (hooked)
        ZP_TRY(o->clock_start(o->clock_ctx));
    else
        t0 = zp_time_now_s();
    ZP_TRY(calls(op));
    if (hooked)
        return o->clock_stop(o->clock_ctx, seconds);
    *seconds = zp_time_now_s() - t0;
    return ZP_OK;
}

/* min, median and max of r's samples (the median of a copy: the samples stay in the order taken). */
static void summarise(zp_timing_result *r)
{
    double sorted[ZP_TIMING_MAX_REPS];
    memcpy(sorted, r->samples, (size_t)r->reps * sizeof sorted[0]);
    r->median = zp_stats_median(sorted, (size_t)r->reps); /* sorts: [0] is the min */
    r->min = sorted[0];
    r->max = sorted[r->reps - 1];
}

zp_status zp_timing_run_ops(const zp_timing_opts *o, const zp_timing_op *ops, int nops, zp_timing_result *out)
{
    if (!o || !ops || !out || nops < 1)
        return ZP_FAIL(ZP_EINVAL, "timing: NULL argument or no operation");
    if (o->warmup < 0 || o->reps < 1 || o->reps > ZP_TIMING_MAX_REPS)
        return ZP_FAIL(ZP_EINVAL, "timing: warm-up must be >= 0 and repetitions in 1..%d (got %d, %d)",
                       ZP_TIMING_MAX_REPS, o->warmup, o->reps);
    for (int w = 0; w < o->warmup; w++)
        for (int k = 0; k < nops; k++)
            ZP_TRY(calls(&ops[k]));
    for (int r = 0; r < o->reps; r++) {
        if (o->barrier)
            ZP_TRY(o->barrier(o->barrier_ctx));
        for (int k = 0; k < nops; k++) {
            double t = 0;
            ZP_TRY(sample(o, &ops[k], &t));
            out[k].samples[r] = t / inner_of(&ops[k]);
        }
    }
    for (int k = 0; k < nops; k++) {
        out[k].reps = o->reps;
        summarise(&out[k]);
    }
    return ZP_OK;
}

zp_status zp_timing_run(const zp_timing_opts *o, zp_timing_fn fn, void *ctx, zp_timing_result *out)
{
    const zp_timing_op op = {fn, ctx, 1};
    return zp_timing_run_ops(o, &op, 1, out);
}
