/* zp_quiet.c — the machine's busy time and load, and the judge of a measured window (zp_quiet.h). */
#include "zp_quiet.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "zp_time.h"

/* Busy CPU seconds of every core since boot, from /proc/stat's first line; -1 when unreadable. */
static double machine_busy_s(void)
{
    FILE *f = fopen("/proc/stat", "r");
    if (!f)
        return -1;
    unsigned long long v[8] = {0}; /* user nice system idle iowait irq softirq steal, in clock ticks */
    int got = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5],
                     &v[6], &v[7]);
    fclose(f);
    long hz = sysconf(_SC_CLK_TCK);
    if (got < 4 || hz <= 0)
        return -1;
    return (double)(v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) / (double)hz;
}

zp_status zp_quiet_sample_take(zp_quiet_sample *s)
{
    if (!s)
        return ZP_FAIL(ZP_EINVAL, "zp_quiet_sample_take: NULL");
    s->wall_s = zp_time_now_s();
    s->busy_s = machine_busy_s();
    struct rusage ru;
    s->own_cpu_s = getrusage(RUSAGE_SELF, &ru) == 0
                       ? (double)ru.ru_utime.tv_sec + 1e-6 * (double)ru.ru_utime.tv_usec +
                             (double)ru.ru_stime.tv_sec + 1e-6 * (double)ru.ru_stime.tv_usec
                       : 0.0;
    double l[1];
    s->load1 = getloadavg(l, 1) == 1 ? l[0] : -1;
    return ZP_OK;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The q-quantile of sorted x[0..n), linear between order statistics. */
static double quantile(const double *x, size_t n, double q)
{
    double pos = q * (double)(n - 1);
    size_t i = (size_t)floor(pos);
    if (i + 1 >= n)
        return x[n - 1];
    return x[i] + (pos - (double)i) * (x[i + 1] - x[i]);
}

zp_status zp_quiet_steps_of(const double *x, size_t n, zp_quiet_steps *out)
{
    if (!out || (n > 0 && !x))
        return ZP_FAIL(ZP_EINVAL, "zp_quiet_steps_of: NULL");
    out->n = n;
    if (n == 0) {
        out->min = out->q10 = out->median = out->q90 = out->max = NAN;
        return ZP_OK;
    }
    double *s = malloc(n * sizeof *s);
    if (!s)
        return ZP_FAIL(ZP_ENOMEM, "out of memory");
    memcpy(s, x, n * sizeof *s);
    qsort(s, n, sizeof *s, cmp_double);
    out->min = s[0];
    out->max = s[n - 1];
    out->q10 = quantile(s, n, 0.1);
    out->median = quantile(s, n, 0.5);
    out->q90 = quantile(s, n, 0.9);
    free(s);
    return ZP_OK;
}

/* Appends "; " and a formatted clause to the reason. */
static void add_reason(zp_quiet_verdict *v, const char *text)
{
    size_t len = strlen(v->reason);
    snprintf(v->reason + len, sizeof v->reason - len, "%s%s", len ? "; " : "", text);
}

/* The reference work now against the calibration's: the timing the farther from it (ratios compared as r or
 * 1/r, whichever is above 1). */
static void speed_judge(const zp_quiet_in *in, zp_quiet_verdict *out)
{
    double worst = 0, far = 1;
    for (int i = 0; i < 2; i++) {
        if (!(in->probe_s[i] > 0) || !(in->probe_cal_s > 0))
            continue;
        const double r = in->probe_s[i] / in->probe_cal_s, f = r >= 1 ? r : 1 / r;
        if (f > far)
            far = f, worst = in->probe_s[i];
    }
    if (!(worst > 0))
        return;
    out->speed_change = worst / in->probe_cal_s - 1;
    if (far - 1 > ZP_QUIET_MAX_SPEED_CHANGE) {
        char text[160];
        snprintf(text, sizeof text, "the machine ran %.2fx %s than while calibrating (reference work %.2f ms against "
                 "%.2f ms; bound %.0f%%)", far, worst > in->probe_cal_s ? "slower" : "faster", 1e3 * worst,
                 1e3 * in->probe_cal_s, 100 * ZP_QUIET_MAX_SPEED_CHANGE);
        add_reason(out, text);
    }
}

/* The slowest rank's reference work against the fastest's, around the steps. */
static void ranks_judge(const zp_quiet_in *in, zp_quiet_verdict *out)
{
    int worst = -1;
    for (int i = 0; i < 2; i++)
        if (in->probe_s[i] > 0 && in->probe_fast_s[i] > 0 &&
            in->probe_s[i] / in->probe_fast_s[i] - 1 > out->rank_spread) {
            out->rank_spread = in->probe_s[i] / in->probe_fast_s[i] - 1;
            worst = i;
        }
    if (worst >= 0 && out->rank_spread > ZP_QUIET_MAX_RANK_SPREAD) {
        char text[160];
        snprintf(text, sizeof text, "the ranks ran at different speeds (reference work %.2f ms on the slowest, %.2f "
                 "ms on the fastest; bound %.0f%%)", 1e3 * in->probe_s[worst], 1e3 * in->probe_fast_s[worst],
                 100 * ZP_QUIET_MAX_RANK_SPREAD);
        add_reason(out, text);
    }
}

zp_status zp_quiet_judge(const zp_quiet_in *in, zp_quiet_verdict *out)
{
    if (!in || !out || in->cores < 1)
        return ZP_FAIL(ZP_EINVAL, "zp_quiet_judge: NULL or no cores");
    memset(out, 0, sizeof *out);
    char text[120];
    out->others_cores = -1;
    if (in->busy_s >= 0 && in->wall_s > 0)
        out->others_cores = fmax(0.0, (in->busy_s - in->own_cpu_s) / in->wall_s);
    if (out->others_cores > ZP_QUIET_MAX_OTHERS_CORES) {
        snprintf(text, sizeof text, "other processes used %.2f cores (bound %.2f)", out->others_cores,
                 ZP_QUIET_MAX_OTHERS_CORES);
        add_reason(out, text);
    }
    out->load_limit = (in->procs > in->cores ? in->procs : in->cores) + ZP_QUIET_LOAD_MARGIN;
    if (in->load1 > out->load_limit) {
        snprintf(text, sizeof text, "load %.2f on %d cores (bound %.2f)", in->load1, in->cores, out->load_limit);
        add_reason(out, text);
    }
    const zp_quiet_steps *s = &in->steps;
    if (s->n >= 2 && s->median > 0)
        out->spread = (s->q90 - s->q10) / s->median;
    if (out->spread > ZP_QUIET_MAX_SPREAD) {
        snprintf(text, sizeof text, "steps spread %.0f%% of the median (q10..q90; bound %.0f%%)", 100 * out->spread,
                 100 * ZP_QUIET_MAX_SPREAD);
        add_reason(out, text);
    }
    if (s->n >= 2 && s->q10 > 0)
        out->median_lag = s->median / s->q10 - 1;
    if (out->median_lag > ZP_QUIET_MAX_MEDIAN_LAG) {
        snprintf(text, sizeof text, "the median step ran %.0f%% above the fastest tenth (a slower spell in the "
                 "window; bound %.0f%%)", 100 * out->median_lag, 100 * ZP_QUIET_MAX_MEDIAN_LAG);
        add_reason(out, text);
    }
    speed_judge(in, out);
    ranks_judge(in, out);
    out->quiet = out->reason[0] == '\0';
    return ZP_OK;
}

zp_status zp_quiet_judge_figures(int cores, int procs, double others_cores, double load1, zp_quiet_verdict *out)
{
    zp_quiet_in in = {.cores = cores, .procs = procs, .wall_s = 1.0, .busy_s = others_cores, .load1 = load1};
    in.steps.n = 0;
    return zp_quiet_judge(&in, out);
}
