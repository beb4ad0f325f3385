/* common/: the monotonic clock, the median, the timing harness, the child-process runner. */
#include <criterion/criterion.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "zp_child.h"
#include "zp_stats.h"
#include "zp_time.h"
#include "zp_timing.h"

/* ---- clock ---- */

Test(time, monotonic_and_in_seconds)
{
    double t0 = zp_time_now_s();
    struct timespec d = {.tv_sec = 0, .tv_nsec = 50 * 1000 * 1000};
    nanosleep(&d, NULL);
    double t1 = zp_time_now_s();
    cr_expect_geq(t1 - t0, 0.049, "slept 50 ms, measured %g s", t1 - t0);
    cr_expect_lt(t1 - t0, 5.0, "slept 50 ms, measured %g s", t1 - t0);
    cr_expect_geq(zp_time_now_s(), t1);
}

/* ---- median ---- */

Test(stats, median_odd_count_is_the_middle)
{
    double x[] = {3, 1, 2, 9, -4};
    cr_expect_eq(zp_stats_median(x, 5), 2);
    for (int i = 1; i < 5; i++)
        cr_expect_leq(x[i - 1], x[i], "sorted in place");
}

Test(stats, median_even_count_is_the_mean_of_the_middle_two)
{
    double x[] = {4, 1, 3, 2};
    cr_expect_eq(zp_stats_median(x, 4), 2.5);
    double y[] = {10, 0};
    cr_expect_eq(zp_stats_median(y, 2), 5);
}

Test(stats, median_of_one_and_of_none)
{
    double x[] = {7.25};
    cr_expect_eq(zp_stats_median(x, 1), 7.25);
    cr_expect(isnan(zp_stats_median(x, 0)));
}

/* ---- timing harness ---- */

typedef struct {
    char log[128];           /* what ran, in order: a/b the operations, | barrier, [ ] the clock */
    const double *stops;     /* what the clock reads at each stop */
    int nstops;
} timing_trace;

static void trace_add(timing_trace *t, char c) { t->log[strlen(t->log)] = c; }
static zp_status op_a(void *p) { trace_add(p, 'a'); return ZP_OK; }
static zp_status op_b(void *p) { trace_add(p, 'b'); return ZP_OK; }
static zp_status trace_barrier(void *p) { trace_add(p, '|'); return ZP_OK; }
static zp_status trace_start(void *p) { trace_add(p, '['); return ZP_OK; }

static zp_status trace_stop(void *p, double *seconds)
{
    timing_trace *t = p;
    trace_add(t, ']');
    *seconds = t->stops[t->nstops++];
    return ZP_OK;
}

Test(timing, warm_up_barrier_interleaving_and_statistics)
{
    static const double stops[] = {4, 1, 8, 3, 6, 2}; /* a (2 calls a sample), b, a, b, a, b */
    timing_trace t = {.stops = stops};
    zp_timing_opts o = {.warmup = 1, .reps = 3, .barrier = trace_barrier, .barrier_ctx = &t,
                        .clock_start = trace_start, .clock_stop = trace_stop, .clock_ctx = &t};
    const zp_timing_op ops[2] = {{op_a, &t, 2}, {op_b, &t, 0}};
    zp_timing_result r[2];
    cr_assert_eq(zp_timing_run_ops(&o, ops, 2, r), ZP_OK);
    cr_expect_str_eq(t.log, "aab|[aa][b]|[aa][b]|[aa][b]");
    cr_expect_eq(r[0].reps, 3);
    cr_expect(r[0].samples[0] == 2 && r[0].samples[1] == 4 && r[0].samples[2] == 3, "per call, in order taken");
    cr_expect(r[0].min == 2 && r[0].median == 3 && r[0].max == 4);
    cr_expect(r[1].min == 1 && r[1].median == 2 && r[1].max == 3);
}

Test(timing, wall_clock_and_bad_options)
{
    timing_trace t = {0};
    zp_timing_opts o = zp_timing_opts_default();
    zp_timing_result r;
    cr_assert_eq(zp_timing_run(&o, op_a, &t, &r), ZP_OK);
    cr_expect_str_eq(t.log, "aaaaaa", "1 warm-up and 5 samples of one call");
    cr_expect(r.reps == 5 && r.min >= 0 && r.min <= r.median && r.median <= r.max && r.max < 1);
    o.reps = ZP_TIMING_MAX_REPS + 1;
    cr_expect_eq(zp_timing_run(&o, op_a, &t, &r), ZP_EINVAL);
    o.reps = 1, o.warmup = -1;
    cr_expect_eq(zp_timing_run(&o, op_a, &t, &r), ZP_EINVAL);
}

Test(timing, inner_calls_for_a_target)
{
    cr_expect_eq(zp_timing_inner(1e-3, 0.02, 3, 2000), 20);
    cr_expect_eq(zp_timing_inner(1e-3, 0.0205, 1, 2000), 21, "rounded up");
    cr_expect_eq(zp_timing_inner(0, 0.03, 1, 20000), 20000, "below 100 ns counts as 100 ns, then clamped");
    cr_expect_eq(zp_timing_inner(1.0, 0.02, 3, 2000), 3);
}

/* ---- child runner ---- */

static void expect_described(const zp_child *c, const char *want)
{
    char msg[128];
    zp_child_describe(c, msg, sizeof msg);
    cr_expect_str_eq(msg, want);
}

static int answer(void *ctx, void *result)
{
    *(int *)result = *(int *)ctx * 2;
    return 0;
}

Test(child, result_comes_back)
{
    int in = 21, out = -1;
    zp_child c = {.fn = answer, .ctx = &in, .result = &out, .result_size = sizeof out};
    cr_assert_eq(zp_child_run(&c), ZP_OK, "%s", zp_error_message());
    cr_expect(zp_child_ok(&c));
    cr_expect_eq(out, 42);
    cr_expect_eq(c.pid, 0, "reaped");
    cr_expect_eq(c.fd[0], -1);
}

static int sleeper(void *ctx, void *result)
{
    (void)ctx;
    (void)result;
    sleep(30);
    return 0;
}

Test(child, timeout_kills_the_child)
{
    int out;
    zp_child c = {.fn = sleeper, .result = &out, .result_size = sizeof out, .timeout_s = 0.2};
    double t0 = zp_time_now_s();
    cr_assert_eq(zp_child_run(&c), ZP_OK);
    double dt = zp_time_now_s() - t0;
    cr_expect(c.timed_out);
    cr_expect(!zp_child_ok(&c));
    cr_expect(WIFSIGNALED(c.status) && WTERMSIG(c.status) == SIGKILL);
    cr_expect_geq(dt, 0.19);
    cr_expect_lt(dt, 10, "killed at its time limit, not at its end (%g s)", dt);
    expect_described(&c, "was killed after 0.2 s (time limit)");
}

static int crasher(void *ctx, void *result)
{
    (void)ctx;
    (void)result;
    fputs("about to crash\n", stderr);
    fflush(stderr);
    raise(SIGSEGV);
    return 0;
}

Test(child, crash_is_reported_with_its_signal_and_stderr)
{
    int out;
    zp_child c = {.fn = crasher, .result = &out, .result_size = sizeof out,
                  .flags = ZP_CHILD_CAPTURE_STDERR | ZP_CHILD_DEFAULT_FAULTS | ZP_CHILD_DIE_WITH_PARENT,
                  .timeout_s = 60};
    cr_assert_eq(zp_child_run(&c), ZP_OK);
    cr_expect(!c.timed_out);
    cr_expect(!zp_child_ok(&c));
    cr_expect_eq(c.result_len, 0);
    cr_expect(WIFSIGNALED(c.status) && WTERMSIG(c.status) == SIGSEGV);
    cr_expect_str_eq(c.err, "about to crash\n");
    char want[128];
    snprintf(want, sizeof want, "died (signal %d: %s)", SIGSEGV, strsignal(SIGSEGV));
    expect_described(&c, want);
}

/* 1 MiB on stderr before the result: more than a pipe holds (64 KiB), so the parent must read stderr
 * while it waits for the result. The result is larger than a pipe too. */
typedef struct {
    unsigned char bytes[200 * 1024];
} big_result;

static int chatty(void *ctx, void *result)
{
    (void)ctx;
    static char line[1024];
    memset(line, 'x', sizeof line - 1);
    line[sizeof line - 2] = '\n';
    for (int i = 0; i < 1024; i++)
        fputs(line, stderr);
    fflush(stderr);
    big_result *r = result;
    for (size_t i = 0; i < sizeof r->bytes; i++)
        r->bytes[i] = (unsigned char)(i * 7);
    return 0;
}

Test(child, more_than_a_pipe_holds)
{
    static big_result out;
    zp_child c = {.fn = chatty, .result = &out, .result_size = sizeof out, .flags = ZP_CHILD_CAPTURE_STDERR,
                  .timeout_s = 60};
    cr_assert_eq(zp_child_run(&c), ZP_OK);
    cr_expect(!c.timed_out, "the child blocked on a full pipe");
    cr_expect(zp_child_ok(&c));
    cr_expect_eq(c.err_len, ZP_CHILD_ERR_MAX - 1, "stderr kept up to its cap");
    cr_expect_eq(strlen(c.err), ZP_CHILD_ERR_MAX - 1);
    int same = 1;
    for (size_t i = 0; i < sizeof out.bytes; i++)
        same &= out.bytes[i] == (unsigned char)(i * 7);
    cr_expect(same, "the whole result arrived");
}

static int exit_code(void *ctx, void *result)
{
    (void)result;
    execlp("sh", "sh", "-c", (const char *)ctx, (char *)NULL);
    return 127;
}

Test(child, exec_and_exit_status)
{
    zp_child c = {.fn = exit_code, .ctx = "echo ignored; exit 7", .flags = ZP_CHILD_STDOUT_NULL};
    cr_assert_eq(zp_child_run(&c), ZP_OK);
    cr_expect(WIFEXITED(c.status) && WEXITSTATUS(c.status) == 7);
    expect_described(&c, "failed (exit 7)");
}

static int no_result(void *ctx, void *result)
{
    (void)ctx;
    (void)result;
    _exit(0); /* before the runner sends the result */
}

Test(child, missing_result_is_not_ok)
{
    int out;
    zp_child c = {.fn = no_result, .result = &out, .result_size = sizeof out};
    cr_assert_eq(zp_child_run(&c), ZP_OK);
    cr_expect(WIFEXITED(c.status) && WEXITSTATUS(c.status) == 0);
    cr_expect_eq(c.result_len, 0);
    cr_expect(!zp_child_ok(&c));
}

static int nap_then_answer(void *ctx, void *result)
{
    struct timespec d = {.tv_sec = 0, .tv_nsec = *(int *)ctx * 1000L * 1000L};
    nanosleep(&d, NULL);
    *(int *)result = *(int *)ctx;
    return 0;
}

Test(child, wait_any_returns_children_as_they_finish)
{
    int naps[3] = {600, 10, 300}, out[3] = {0, 0, 0};
    zp_child c[3];
    for (int i = 0; i < 3; i++) {
        c[i] = (zp_child){.fn = nap_then_answer, .ctx = &naps[i], .result = &out[i], .result_size = sizeof out[i],
                          .timeout_s = 60};
        cr_assert_eq(zp_child_start(&c[i]), ZP_OK);
    }
    int order[3];
    for (int k = 0; k < 3; k++) {
        cr_assert_eq(zp_child_wait_any(c, 3, &order[k]), ZP_OK);
        cr_expect(zp_child_ok(&c[order[k]]));
        cr_expect_eq(out[order[k]], naps[order[k]]);
    }
    cr_expect_eq(order[0], 1);
    cr_expect_eq(order[1], 2);
    cr_expect_eq(order[2], 0);
    int which;
    cr_expect_neq(zp_child_wait_any(c, 3, &which), ZP_OK, "none left to wait for");
}

Test(child, kill_a_running_child)
{
    int out;
    zp_child c = {.fn = sleeper, .result = &out, .result_size = sizeof out};
    cr_assert_eq(zp_child_start(&c), ZP_OK);
    zp_child_kill(&c);
    cr_expect_eq(c.pid, 0);
    cr_expect(WIFSIGNALED(c.status) && WTERMSIG(c.status) == SIGKILL);
    zp_child_kill(&c); /* a finished child: nothing */
}

/* ---- quiet: the step statistics and the judge of a measured window (common/zp_quiet.h) ---- */

#include "zp_quiet.h"

Test(quiet, steps_min_quantiles_median_max_without_changing_the_input)
{
    double x[] = {0.050, 0.010, 0.030, 0.020, 0.040};
    zp_quiet_steps s;
    cr_assert_eq(zp_quiet_steps_of(x, 5, &s), ZP_OK);
    cr_expect_eq(s.n, 5);
    cr_expect_float_eq(s.min, 0.010, 1e-15);
    cr_expect_float_eq(s.median, 0.030, 1e-15);
    cr_expect_float_eq(s.max, 0.050, 1e-15);
    cr_expect_float_eq(s.q10, 0.014, 1e-12, "0.1 x 4 = 0.4 of the way from 0.010 to 0.020: %g", s.q10);
    cr_expect_float_eq(s.q90, 0.046, 1e-12, "%g", s.q90);
    cr_expect_float_eq(x[0], 0.050, 0, "the input keeps its order");
    double even[] = {4, 1, 3, 2};
    cr_assert_eq(zp_quiet_steps_of(even, 4, &s), ZP_OK);
    cr_expect_float_eq(s.median, 2.5, 1e-15);
    cr_assert_eq(zp_quiet_steps_of(NULL, 0, &s), ZP_OK);
    cr_expect(isnan(s.median));
    cr_expect_neq(zp_quiet_steps_of(NULL, 3, &s), ZP_OK);
}

/* An idle 2-core machine running 2 ranks for 2 s: the ranks used 3.96 core-seconds of the 4.0 busy. */
static zp_quiet_in idle_run(void)
{
    zp_quiet_in in = {.cores = 2, .procs = 2, .wall_s = 2.0, .busy_s = 4.0, .own_cpu_s = 3.96, .load1 = 1.9};
    double t[40];
    for (int i = 0; i < 40; i++)
        t[i] = 0.050 * (1 + 0.1 * ((i * 7) % 5 - 2) / 2.0); /* 0.045 .. 0.055 s */
    zp_quiet_steps_of(t, 40, &in.steps);
    return in;
}

Test(quiet, an_idle_run_is_quiet)
{
    zp_quiet_in in = idle_run();
    zp_quiet_verdict v;
    cr_assert_eq(zp_quiet_judge(&in, &v), ZP_OK);
    cr_expect(v.quiet, "%s", v.reason);
    cr_expect_str_empty(v.reason);
    cr_expect_float_eq(v.others_cores, 0.02, 1e-9);
    cr_expect_float_eq(v.load_limit, 2.5, 1e-12);
    cr_expect_lt(v.spread, 0.25);
}

Test(quiet, a_process_hogging_a_core_is_not_quiet)
{
    zp_quiet_in in = idle_run();
    in.own_cpu_s = 2.7; /* the ranks got 1.35 of the 2 cores, the hog the rest */
    zp_quiet_verdict v;
    cr_assert_eq(zp_quiet_judge(&in, &v), ZP_OK);
    cr_expect_not(v.quiet);
    cr_expect_float_eq(v.others_cores, 0.65, 1e-9);
    cr_expect(strstr(v.reason, "other processes used 0.65 cores") != NULL, "%s", v.reason);
}

Test(quiet, a_load_above_the_cores_is_not_quiet_and_own_ranks_raise_the_bound)
{
    zp_quiet_in in = idle_run();
    in.load1 = 3.2; /* the run's 2 ranks and more than one process beside them */
    zp_quiet_verdict v;
    cr_assert_eq(zp_quiet_judge(&in, &v), ZP_OK);
    cr_expect_not(v.quiet);
    cr_expect(strstr(v.reason, "load 3.20 on 2 cores (bound 2.50)") != NULL, "%s", v.reason);
    in.procs = 4; /* 4 ranks on 2 cores make a load of 4 themselves */
    cr_assert_eq(zp_quiet_judge(&in, &v), ZP_OK);
    cr_expect(v.quiet, "%s", v.reason);
    cr_expect_float_eq(v.load_limit, 4.5, 1e-12);
}

Test(quiet, steps_that_spread_widely_are_not_quiet_and_one_outlier_is_forgiven)
{
    zp_quiet_in in = idle_run();
    double t[20];
    for (int i = 0; i < 20; i++)
        t[i] = i % 2 ? 0.040 : 0.080; /* half the steps twice as long as the others */
    zp_quiet_steps_of(t, 20, &in.steps);
    zp_quiet_verdict v;
    cr_assert_eq(zp_quiet_judge(&in, &v), ZP_OK);
    cr_expect_not(v.quiet);
    cr_expect(strstr(v.reason, "steps spread") != NULL, "%s", v.reason);
    for (int i = 0; i < 20; i++)
        t[i] = 0.050;
    t[7] = 0.500; /* one step preempted: q90 stays */
    zp_quiet_steps_of(t, 20, &in.steps);
    cr_assert_eq(zp_quiet_judge(&in, &v), ZP_OK);
    cr_expect(v.quiet, "%s", v.reason);
}

Test(quiet, a_median_that_left_the_fast_steps_is_not_quiet)
{
    zp_quiet_in in = idle_run();
    double t[40];
    for (int i = 0; i < 40; i++) /* 15 steps at 4.2 ms, then a spell: 25 at 6.0 ms (median 6.0, q10 4.2) */
        t[i] = i < 15 ? 0.0042 : 0.0060;
    zp_quiet_steps_of(t, 40, &in.steps);
    zp_quiet_verdict v;
    cr_assert_eq(zp_quiet_judge(&in, &v), ZP_OK);
    cr_expect_not(v.quiet);
    cr_expect_float_eq(v.median_lag, 0.0060 / 0.0042 - 1, 1e-9);
    cr_expect(strstr(v.reason, "the median step ran 43% above the fastest tenth") != NULL, "%s", v.reason);
    cr_expect(strstr(v.reason, "steps spread") == NULL, "%s", v.reason); /* 43% of the median: within 50% */
    for (int i = 0; i < 40; i++) /* a quiet window with a tail: 36 steps within 8%, 4 preempted at 3x */
        t[i] = i % 10 == 9 ? 0.0126 : 0.0042 * (1 + 0.02 * (i % 5));
    zp_quiet_steps_of(t, 40, &in.steps);
    cr_assert_eq(zp_quiet_judge(&in, &v), ZP_OK);
    cr_expect(v.quiet, "%s", v.reason);
    cr_expect_lt(v.median_lag, 0.15);
}

Test(quiet, unknown_figures_are_not_held_against_a_run_and_every_failed_check_is_named)
{
    zp_quiet_in in = idle_run();
    in.busy_s = -1;
    in.load1 = -1;
    zp_quiet_verdict v;
    cr_assert_eq(zp_quiet_judge(&in, &v), ZP_OK);
    cr_expect(v.quiet);
    cr_expect_lt(v.others_cores, 0);
    in = idle_run();
    in.own_cpu_s = 1.0;
    in.load1 = 4.0;
    cr_assert_eq(zp_quiet_judge(&in, &v), ZP_OK);
    cr_expect(strstr(v.reason, "other processes") && strstr(v.reason, "; load 4.00"), "%s", v.reason);
    in.cores = 0;
    cr_expect_neq(zp_quiet_judge(&in, &v), ZP_OK);
    cr_expect_neq(zp_quiet_judge(NULL, &v), ZP_OK);
}

/* The reference work (kernels/zp_probe.h) timed around the steps against the calibration's (issue #31): a spell
 * of a slow machine that neither the load nor the other processes show is named; within the bound, or unknown,
 * it is not held against the run. */
Test(quiet, a_machine_slower_or_faster_than_while_calibrating_is_not_quiet)
{
    zp_quiet_in in = idle_run();
    in.probe_cal_s = 0.0025;
    in.probe_s[0] = 0.0026, in.probe_s[1] = 0.00245; /* +4%, -2%: within 40% */
    zp_quiet_verdict v;
    cr_assert_eq(zp_quiet_judge(&in, &v), ZP_OK);
    cr_expect(v.quiet, "%s", v.reason);
    cr_expect_float_eq(v.speed_change, 0.04, 1e-9);
    in.probe_s[1] = 0.0050; /* the neighbour took the cores before the last step */
    cr_assert_eq(zp_quiet_judge(&in, &v), ZP_OK);
    cr_expect_not(v.quiet);
    cr_expect_float_eq(v.speed_change, 1.0, 1e-9);
    cr_expect(strstr(v.reason, "the machine ran 2.00x slower than while calibrating (reference work 5.00 ms against "
                               "2.50 ms; bound 40%)") != NULL, "%s", v.reason);
    in.probe_s[0] = 0.0017, in.probe_s[1] = 0.0025; /* 1.47x faster: the calibration was the slow one */
    cr_assert_eq(zp_quiet_judge(&in, &v), ZP_OK);
    cr_expect_not(v.quiet);
    cr_expect(strstr(v.reason, "1.47x faster") != NULL, "%s", v.reason);
    in.probe_cal_s = 0; /* an older profile: nothing to compare with */
    cr_assert_eq(zp_quiet_judge(&in, &v), ZP_OK);
    cr_expect(v.quiet, "%s", v.reason);
    cr_expect_eq(v.speed_change, 0.0);
}

/* Ranks running the same reference work at different speeds (one core shared with a neighbour): named, with both
 * figures, past 50%. */
Test(quiet, ranks_at_different_speeds_are_not_quiet)
{
    zp_quiet_in in = idle_run();
    in.probe_s[0] = 0.0026, in.probe_fast_s[0] = 0.0025; /* +4% */
    in.probe_s[1] = 0.0030, in.probe_fast_s[1] = 0.0025; /* +20% */
    zp_quiet_verdict v;
    cr_assert_eq(zp_quiet_judge(&in, &v), ZP_OK);
    cr_expect(v.quiet, "%s", v.reason);
    cr_expect_float_eq(v.rank_spread, 0.2, 1e-9);
    in.probe_s[1] = 0.0040; /* +60% after the steps */
    cr_assert_eq(zp_quiet_judge(&in, &v), ZP_OK);
    cr_expect_not(v.quiet);
    cr_expect(strstr(v.reason, "the ranks ran at different speeds (reference work 4.00 ms on the slowest, 2.50 ms on "
                               "the fastest; bound 50%)") != NULL, "%s", v.reason);
    in.probe_fast_s[0] = in.probe_fast_s[1] = 0; /* not timed */
    cr_assert_eq(zp_quiet_judge(&in, &v), ZP_OK);
    cr_expect(v.quiet, "%s", v.reason);
}

Test(quiet, the_sampler_reads_this_machine)
{
    zp_quiet_sample a, b;
    cr_assert_eq(zp_quiet_sample_take(&a), ZP_OK);
    volatile double x = 0;
    for (int i = 0; i < 20000000; i++)
        x += i * 1e-9;
    cr_assert_eq(zp_quiet_sample_take(&b), ZP_OK);
    cr_expect_gt(b.wall_s, a.wall_s);
    cr_expect_geq(b.own_cpu_s, a.own_cpu_s);
    cr_expect_geq(a.busy_s, 0, "/proc/stat read");
    cr_expect_geq(b.busy_s, a.busy_s);
    cr_expect_geq(a.load1, 0, "/proc/loadavg read");
    cr_expect_neq(zp_quiet_sample_take(NULL), ZP_OK);
}
