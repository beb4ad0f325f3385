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
