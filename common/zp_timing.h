/* zp_timing.h — the one timing harness of calibrate and the benches: warm-up samples, then repetitions
 * each after an optional barrier, each timed by a clock (the wall clock, or a hook such as a backend's
 * CUDA-event timer), with the min, median and max seconds per call.
 *
 *     zp_timing_opts o = zp_timing_opts_default();   // warm-up 1, 5 repetitions, wall clock, no barrier
 *     zp_timing_result r;
 *     zp_status st = zp_timing_run(&o, my_op, &my_ctx, &r);   // r.median: seconds per call
 *
 * A sample is `inner` calls timed together (1 unless said; a short kernel is looped so that a sample
 * lasts long enough for the clock), reported per call. Several operations can be timed interleaved
 * (a, b, a, b, ...: all see the same clocks, load and temperature) with zp_timing_run_ops. The hooks are
 * function pointers so that this module needs nothing of MPI or CUDA: kernels/zp_kernels.h fills them
 * from a backend's timer and a communicator's barrier (zp_kernels_timing_hooks). Cross-rank statistics
 * are the caller's: the samples are kept in the order taken, repetition i of every rank being the same
 * barrier round. */
#ifndef ZP_TIMING_H
#define ZP_TIMING_H

#include "zp_status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ZP_TIMING_MAX_REPS 64

/* An operation to time: one call of fn(ctx). */
typedef zp_status (*zp_timing_fn)(void *ctx);

typedef struct {
    int warmup;                                   /* untimed samples (of each operation) first, >= 0 */
    int reps;                                     /* timed samples (of each operation), 1..ZP_TIMING_MAX_REPS */
    zp_status (*barrier)(void *ctx);              /* before each round of samples; NULL: none */
    void *barrier_ctx;
    zp_status (*clock_start)(void *ctx);          /* NULL (both): the wall clock, zp_time_now_s */
    zp_status (*clock_stop)(void *ctx, double *seconds); /* seconds since clock_start (waits for the work) */
    void *clock_ctx;
} zp_timing_opts;

/* One operation of zp_timing_run_ops. */
typedef struct {
    zp_timing_fn fn;
    void *ctx;
    int inner;                                    /* calls per timed sample, >= 1 (0 counts as 1) */
} zp_timing_op;

typedef struct {
    int reps;                                     /* samples taken */
    double samples[ZP_TIMING_MAX_REPS];           /* (reps) seconds per call of each sample, in the order taken */
    double min, median, max;                      /* of samples, seconds per call */
} zp_timing_result;

/* Warm-up 1, 5 repetitions, the wall clock, no barrier. */
zp_timing_opts zp_timing_opts_default(void);

/* Times one operation, one call per sample. ZP_EINVAL for bad options; fn's failure is returned as is. */
zp_status zp_timing_run(const zp_timing_opts *o, zp_timing_fn fn, void *ctx, zp_timing_result *out);

/* Times nops operations interleaved: the warm-up samples (one of each operation in order, warmup times),
 * then per repetition one barrier and one sample of each operation in order. out has nops results. */
zp_status zp_timing_run_ops(const zp_timing_opts *o, const zp_timing_op *ops, int nops, zp_timing_result *out);

/* Calls per sample so that a sample of calls lasting per_call_s each lasts about target_s:
 * ceil(target_s / per_call_s) (per_call_s taken as >= 100 ns) clamped to [lo, hi]. */
int zp_timing_inner(double per_call_s, double target_s, int lo, int hi);

#ifdef __cplusplus
}
#endif

#endif
