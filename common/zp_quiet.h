/* zp_quiet.h — was this machine quiet while something was measured? A measured time is only worth
 * comparing with a prediction when nothing else ran beside it: other processes' CPU time, a load above the
 * cores, or steps that spread widely each mean the figure measured other people's work too.
 *
 *     zp_quiet_sample a, b;
 *     zp_quiet_sample_take(&a);  ... the measured work ...  zp_quiet_sample_take(&b);
 *     zp_quiet_in in = {.cores = 2, .procs = 2, ...};   // from b - a, the own CPU summed over the ranks
 *     zp_quiet_verdict v;
 *     zp_quiet_judge(&in, &v);   // v.quiet, v.reason
 *
 * The judge is a pure function of its figures (tested with made-up loads); only the sampler reads /proc. */
#ifndef ZP_QUIET_H
#define ZP_QUIET_H

#include <stddef.h>

#include "zp_status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Not quiet when other processes used more than this many cores on average over the window: 0.25 core
 * (an idle machine's daemons and the launcher use a few hundredths; one process hogging a core, 1). */
#define ZP_QUIET_MAX_OTHERS_CORES 0.25
/* Not quiet when the 1-minute load average exceeds the cores (or the run's own processes, when they are
 * more) by more than this: the run's own ranks make a load of about their count. */
#define ZP_QUIET_LOAD_MARGIN 0.5
/* Not quiet when the middle 80% of the steps spread more than this fraction of the median,
 * (q90 - q10) / median: this VM's idle steps swing -20%..+40% in spells, whose middle 80% stay within
 * about a third of the median. */
#define ZP_QUIET_MAX_SPREAD 0.5
/* Not quiet when the median step ran more than this fraction longer than the fastest tenth (median / q10 - 1):
 * the same step repeated on a machine of one speed bunches at its bottom, and a median that far above it means
 * that over 40% of the steps ran in a slower spell than the rest, so the window's median is a mix of two
 * machines by a margin as wide as the verdict's tolerance (15%). Spells come with no load and no other
 * process; a spell that covers every step shows in the reference work instead (ZP_QUIET_MAX_SPEED_CHANGE).
 * Seen here: 72 runs of bench/validate_readme.sh on an idle machine (2026-11-27), all within 8% but one at 39%,
 * which measured a tiny-moe step -25% off with min 4.2 and median 6.0 ms (the other repeats, 4.2-4.3 ms); over
 * 504 earlier runs the median of it was 4% and its 90th percentile 17%. */
#define ZP_QUIET_MAX_MEDIAN_LAG 0.15

/* Not quiet when the reference work (kernels/zp_probe.h), timed before the first step and after the last, ran
 * more than this fraction slower or faster than the calibration's median of it (the larger of the two ratios and
 * their inverses, minus 1): the machine the prediction was calibrated on is then not the one measured. A 2-core
 * VM whose neighbour takes the physical cores shows neither load nor other processes' CPU. The bound catches such
 * spells only: the probe's own spread here is wide and says little of a run's error (2026-11-27,
 * bench/validate_readme.sh, 72 runs: |change| median 9%, 90th percentile 19%, one at 62%; the runs past 25%
 * erred no more than the others), and a spell that took the machine for seconds ran a 4-layer GPT-2 step at
 * 315 ms against 175-197 ms before and after. */
#define ZP_QUIET_MAX_SPEED_CHANGE 0.40

/* Not quiet when, around the steps, the slowest rank ran the same reference work more than this fraction slower
 * than the fastest: one rank's core ran at half speed or worse (shared with a neighbour), and the step waits for
 * it at every collective. Only a gross imbalance: the probe's ranks differ by a few percent to a third on this VM
 * without the run's error following (2026-11-27, bench/validate_readme.sh, 72 runs: rank spread median 11%, 90th
 * percentile 21%, largest 35%; median |step error| 8.3% under 10% spread, 10.7% at 15-20%, 7.1% at 20-30%). */
#define ZP_QUIET_MAX_RANK_SPREAD 0.50

/* One reading of the machine and of this process. */
typedef struct {
    double wall_s;    /* the monotonic clock, seconds */
    double busy_s;    /* CPU seconds this machine's cores spent not idle since boot (/proc/stat: user, nice,
                         system, irq, softirq, steal); < 0 unknown */
    double own_cpu_s; /* CPU seconds of this process, every thread, user + system (getrusage) */
    double load1;     /* the 1-minute load average (/proc/loadavg); < 0 unknown */
} zp_quiet_sample;

/* Fills *s; figures it cannot read are -1. Never fails (ZP_EINVAL for s NULL). */
zp_status zp_quiet_sample_take(zp_quiet_sample *s);

/* Step times in order statistics: min, 10th percentile, median, 90th percentile, max, seconds (linear
 * interpolation between order statistics; every figure NAN for n = 0). x is not changed. */
typedef struct {
    size_t n;
    double min, q10, median, q90, max;
} zp_quiet_steps;
zp_status zp_quiet_steps_of(const double *x, size_t n, zp_quiet_steps *out);

/* What the judge looks at. */
typedef struct {
    int cores;          /* this machine's online cores */
    int procs;          /* the run's own busy processes on this machine (its ranks) */
    double wall_s;      /* the measured window, seconds */
    double busy_s;      /* the machine's busy CPU seconds over the window; < 0 unknown */
    double own_cpu_s;   /* the run's own CPU seconds over the window, all its ranks on this machine */
    double load1;       /* 1-minute load average at the window's end; < 0 unknown */
    zp_quiet_steps steps;
    double probe_cal_s; /* the calibration's time of the reference work (kernels/zp_probe.h); 0: unknown */
    double probe_s[2];  /* the same work timed before the first step and after the last (the slowest rank's
                           median); 0: not timed */
    double probe_fast_s[2]; /* the same on the fastest rank; 0: not timed */
} zp_quiet_in;

typedef struct {
    int quiet;              /* 1: every check passed; 0: at least one failed (reason says which) */
    double others_cores;    /* (busy - own) / wall: cores' worth of CPU other processes used; < 0 unknown */
    double load_limit;      /* the load above which it is not quiet */
    double spread;          /* (q90 - q10) / median of the steps; 0 with fewer than 2 steps */
    double median_lag;      /* median / q10 - 1 of the steps: how far the median lies above the fastest tenth;
                               0 with fewer than 2 steps */
    double speed_change;    /* probe_s / probe_cal_s - 1 of the two timings the farther from the calibration's
                               (> 0: slower now); 0 when unknown */
    double rank_spread;     /* probe_s / probe_fast_s - 1, the larger of the two: how much slower the slowest rank
                               ran the reference work than the fastest; 0 when unknown */
    char reason[400];       /* "" when quiet; otherwise each failed check with its figure and its bound */
} zp_quiet_verdict;

/* Judges in: not quiet when others_cores > ZP_QUIET_MAX_OTHERS_CORES, load1 > max(cores, procs) +
 * ZP_QUIET_LOAD_MARGIN, spread > ZP_QUIET_MAX_SPREAD, median_lag > ZP_QUIET_MAX_MEDIAN_LAG, the speed changed
 * by more than ZP_QUIET_MAX_SPEED_CHANGE, or the ranks' speeds differ by more than ZP_QUIET_MAX_RANK_SPREAD.
 * Unknown figures are not held against it. ZP_EINVAL for NULL or cores < 1. */
zp_status zp_quiet_judge(const zp_quiet_in *in, zp_quiet_verdict *out);

/* A calibration's reading (others' cores, load at the end; zp_profile's machine.while_calibrating) judged as
 * a window of no steps on `cores` cores with `procs` ranks. */
zp_status zp_quiet_judge_figures(int cores, int procs, double others_cores, double load1, zp_quiet_verdict *out);

#ifdef __cplusplus
}
#endif

#endif
