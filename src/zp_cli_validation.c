/* zp_cli_validation.c — `zplan report validation`: predicted vs measured over a sweep.
 *
 * For every rank count N it calibrates this machine under `mpirun -np N` (unless --profile is
 * given), then for every model and ZeRO stage runs `mpirun -np N zplan exec ... --validate --format
 * json` and collects the prediction (SimGrid step, memory model) and the measurement (wall time,
 * tracking allocator) into one table, with the median step-time error and the largest memory error
 * per category against the targets (15% and 5%). Each run is a separate process tree: SimGrid's one
 * simulation per process and MPI's one initialisation per process are both respected, and a run that
 * hangs is killed by `timeout`. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>

#include "zp_child.h"
#include "zp_cli.h"
#include "zp_progress.h"
#include "zp_size.h"
#include "zp_stats.h"
#include "zp_table.h"

int zp_cli_report_validation(int argc, char **argv);

static const char VAL_USAGE[] =
    "Usage: zplan report validation [options]\n"
    "Runs `mpirun -np N zplan exec --validate` over a sweep and tabulates predicted vs measured step time\n"
    "and memory per category (errors = (predicted - measured) / measured).\n"
    "  --models LIST      zoo models (default mini,small)\n"
    "  --ranks LIST       rank counts (default 1,2,4)\n"
    "  --stages LIST      ZeRO stages (default 0,1,2,3)\n"
    "  --micro-batch b    sequences per rank (default 2)\n"
    "  --steps k          steps per run at least (default 5; the first is not measured)\n"
    "  --min-seconds S    and more until the measured steps took S seconds (default 2: the median step\n"
    "                     then spans a shared machine's slow and fast spells)\n"
    "  --profile FILE     profile for every run (default: `zplan calibrate` under mpirun -np N, per N)\n"
    "  --quick            calibrate with `zplan calibrate --quick` (seconds instead of minutes, noisier)\n"
    "  --format F         text (default), md, csv, json, html\n"
    "  -o, --output FILE  write the table to FILE\n";

typedef struct {
    char *const *argv;
    const char *out_path;
    int threads;
} run_req;

/* In the child: the environment, stdout, then exec. */
static int run_exec(void *ctx, void *result)
{
    (void)result;
    const run_req *q = ctx;
    char t[16];
    snprintf(t, sizeof t, "%d", q->threads);
    setenv("OMP_NUM_THREADS", t, 1);
    setenv("OPENBLAS_NUM_THREADS", t, 1);
    setenv("OMPI_MCA_mpi_yield_when_idle", "1", 1);
    if (!freopen(q->out_path ? q->out_path : "/dev/null", "w", stdout))
        return 127;
    execvp(q->argv[0], q->argv);
    return 127;
}

/* Runs argv (NULL-terminated) with stdout to `out_path` (or /dev/null) and stderr kept; exit code,
 * -1 when it could not run. OMP_NUM_THREADS is set to `threads` in the child. No time limit here: the
 * command is `timeout` (which stops mpirun with SIGTERM, so that it takes its ranks down). */
static int run(char *const argv[], const char *out_path, int threads)
{
    run_req q = {argv, out_path, threads};
    zp_child c = {.fn = run_exec, .ctx = &q};
    if (zp_child_run(&c) != ZP_OK)
        return -1;
    return WIFEXITED(c.status) ? WEXITSTATUS(c.status) : -1;
}

/* timeout SECONDS mpirun [--allow-run-as-root] --oversubscribe --bind-to none -np N SELF args... */
static int mpirun(const char *self, int np, const char *const *args, const char *out_path, int threads)
{
    char *argv[64];
    int n = 0;
    char nps[16];
    snprintf(nps, sizeof nps, "%d", np);
    argv[n++] = "timeout";
    argv[n++] = "900";
    argv[n++] = "mpirun";
    if (getuid() == 0)
        argv[n++] = "--allow-run-as-root";
    argv[n++] = "--oversubscribe";
    argv[n++] = "--bind-to";
    argv[n++] = "none";
    argv[n++] = "-np";
    argv[n++] = nps;
    argv[n++] = (char *)self;
    for (int i = 0; args[i] && n < 62; i++)
        argv[n++] = (char *)args[i];
    argv[n] = NULL;
    return run(argv, out_path, threads);
}

static int split_list(char *s, char **items, int cap)
{
    int n = 0;
    for (char *save = NULL, *t = strtok_r(s, ",", &save); t && n < cap; t = strtok_r(NULL, ",", &save))
        items[n++] = t;
    return n;
}

static double jnum(json_t *o, const char *a, const char *b)
{
    json_t *x = json_object_get(o, a);
    if (b)
        x = json_object_get(x, b);
    return json_is_number(x) ? json_number_value(x) : NAN;
}

/* The sweep of `zplan report validation`: its options, lists split in place, and what the runs gathered. */
typedef struct {
    char models_buf[512], ranks_buf[128], stages_buf[64]; /* --models, --ranks, --stages, split in place */
    char *models[32];
    int nm, nr, ns;
    int ranks[16], stages[8];
    const char *profile; /* --profile, or NULL: calibrate per rank count */
    int64_t mb, steps;   /* sequences per rank; steps per run at least */
    double min_seconds;
    int quick;
    char self[4096];                      /* this zplan, run under mpirun */
    char dir[sizeof "/tmp/zplan-validation-XXXXXX"]; /* scratch: profiles, each run's JSON */
    zp_table *t;
    double step_err[512], mem_err_max[5]; /* |step-time error| per run; largest |memory error| per category */
    int nerr, failures;
    zp_progress bar;
    int total, done; /* runs (calibrations included) to make, made */
} val_sweep;

static const char *const VAL_CATS[5] = {"params", "grads", "optimizer", "activations", "buffers"};

/* The options into s: --steps, the lists (ranks 1..64, stages 0..3, none empty), the micro-batch. */
static zp_status val_parse(const zp_cli_args *a, val_sweep *s)
{
    if (a->steps < 2 || a->steps > 1000)
        return ZP_FAIL(ZP_EINVAL, "--steps: %lld is not 2 to 1000 (the first step is not measured)",
                       (long long)a->steps);
    snprintf(s->models_buf, sizeof s->models_buf, "%s", a->models);
    snprintf(s->ranks_buf, sizeof s->ranks_buf, "%s", a->ranks);
    snprintf(s->stages_buf, sizeof s->stages_buf, "%s", a->stages);
    s->profile = a->profile;
    s->mb = zp_search_req_given(&a->r, ZP_SEARCH_MICRO_BATCH) ? a->r.base.micro_batch : 2;
    s->steps = a->steps;
    s->min_seconds = a->min_seconds;
    s->quick = a->quick;
    char *ranks_s[16], *stages_s[8];
    s->nm = split_list(s->models_buf, s->models, 32);
    s->nr = split_list(s->ranks_buf, ranks_s, 16);
    s->ns = split_list(s->stages_buf, stages_s, 8);
    for (int i = 0; i < s->nr; i++) {
        s->ranks[i] = atoi(ranks_s[i]);
        if (s->ranks[i] < 1 || s->ranks[i] > 64)
            return ZP_FAIL(ZP_EINVAL, "--ranks: '%s' is not a rank count in 1..64", ranks_s[i]);
    }
    for (int i = 0; i < s->ns; i++) {
        s->stages[i] = atoi(stages_s[i]);
        if (s->stages[i] < 0 || s->stages[i] > 3 || strlen(stages_s[i]) != 1)
            return ZP_FAIL(ZP_EINVAL, "--stages: '%s' is not a ZeRO stage", stages_s[i]);
    }
    if (s->nm == 0 || s->nr == 0 || s->ns == 0)
        return ZP_FAIL(ZP_EINVAL, "report validation: empty --models, --ranks or --stages");
    return ZP_OK;
}

/* This executable's path, the scratch folder and the (empty) table. */
static zp_status val_start(val_sweep *s)
{
    ssize_t len = readlink("/proc/self/exe", s->self, sizeof s->self - 1);
    if (len <= 0)
        return ZP_FAIL(ZP_ERUNTIME, "cannot find the zplan executable (/proc/self/exe)");
    s->self[len] = '\0';
    snprintf(s->dir, sizeof s->dir, "/tmp/zplan-validation-XXXXXX");
    if (!mkdtemp(s->dir))
        return ZP_FAIL(ZP_ERUNTIME, "mkdtemp: %s", strerror(errno));
    static const char *const keys[] = {"model", "ranks", "stage", "measured_step_s", "predicted_step_s",
                                       "step_error", "params_error", "grads_error", "optimizer_error",
                                       "activations_error", "buffers_error", "tokens_per_s", "loss_at_step_k"};
    static const char *const heads[] = {"model", "N", "stage", "measured s", "predicted s", "step err",
                                        "params err", "grads err", "optim err", "act err", "buf err",
                                        "tokens/s", "loss @k"};
    s->t = zp_table_new("Validation: zplan exec measured vs predicted (SimGrid step, memory model)", 13, keys,
                        heads);
    if (!s->t)
        return ZP_FAIL(ZP_ENOMEM, "out of memory");
    return ZP_OK;
}

/* Calibrates this machine under mpirun -np np into `prof` (the file); 0, or -1 (reported, counted) when it
 * failed. */
static int val_calibrate(val_sweep *s, int np, const char *prof, int threads)
{
    /* the full calibration's repetitions (7 of 30 ms loops) over the quick one's sizes (collectives
     * up to 64 MiB, the executor's buckets being smaller): its predictions of one configuration
     * agreed within 2.5%, where --quick's (3 repetitions of 10 ms) spread over 0.107-0.121 s
     * (measured on this VM, back to back) */
    const char *full[] = {"calibrate", "--max-bytes", "64Mi", "--hidden", "256,512,1024", "--tokens", "512",
                          "-o", prof, NULL};
    const char *fast[] = {"calibrate", "--quick", "-o", prof, NULL};
    const char *const *args = s->quick ? fast : full;
    int crc = mpirun(s->self, np, args, NULL, threads);
    zp_progress_update(&s->bar, ++s->done, s->total);
    if (crc != 0) {
        zp_progress_done(&s->bar);
        fprintf(stderr, "zplan report validation: calibration on %d ranks failed\n", np);
        s->failures++;
        return -1;
    }
    return 0;
}

/* The table's row of one run's JSON report j (v: its "validation"), its errors gathered. */
static void val_add_row(val_sweep *s, const char *model, int np, int stage, json_t *j, json_t *v)
{
    zp_table *t = s->t;
    zp_table_add_row(t);
    zp_table_set_str(t, 0, model);
    zp_table_set_num(t, 1, np, "%.0f");
    zp_table_set_num(t, 2, stage, "%.0f");
    zp_table_set_num(t, 3, jnum(v, "measured_step_s", NULL), "%.4f");
    zp_table_set_num(t, 4, jnum(v, "predicted_step_s", NULL), "%.4f");
    double se = jnum(v, "step_error", NULL);
    zp_table_set_num(t, 5, se, "%+.3f");
    if (s->nerr < 512)
        s->step_err[s->nerr++] = fabs(se);
    for (int c = 0; c < 5; c++) {
        double e = jnum(v, "memory_error", VAL_CATS[c]);
        zp_table_set_num(t, 6 + c, e, "%+.3f");
        if (fabs(e) > s->mem_err_max[c])
            s->mem_err_max[c] = fabs(e);
    }
    zp_table_set_num(t, 11, jnum(j, "tokens_per_s", NULL), "%.0f");
    json_t *st = json_object_get(j, "steps");
    /* the loss after step k = --steps, which every run reaches (--min-seconds runs on past it by a
     * number of steps that depends on the speed): the same for every stage at one N */
    zp_table_set_num(t, 12, jnum(json_array_get(st, (size_t)s->steps - 1), "loss", NULL), "%.5f");
}

/* One `zplan exec --validate` of model mi at stage si on np ranks with profile `prof`: a row, or a failure
 * reported and counted. */
static void val_run_one(val_sweep *s, int np, const char *prof, int threads, int mi, int si)
{
    char stage[8], mbs[24], ks[24], secs[32], path[4300];
    snprintf(stage, sizeof stage, "%d", s->stages[si]);
    snprintf(mbs, sizeof mbs, "%lld", (long long)s->mb);
    snprintf(ks, sizeof ks, "%lld", (long long)s->steps);
    snprintf(secs, sizeof secs, "%g", s->min_seconds);
    snprintf(path, sizeof path, "%s/run.json", s->dir);
    const char *args[] = {"exec", "--model", s->models[mi], "--stage", stage, "--micro-batch", mbs,
                          "--steps", ks, "--min-seconds", secs, "--validate", "--profile", prof,
                          "--format", "json", NULL};
    int rc = mpirun(s->self, np, args, path, threads);
    zp_progress_update(&s->bar, ++s->done, s->total);
    json_error_t je;
    json_t *j = rc == 0 ? json_load_file(path, 0, &je) : NULL;
    json_t *v = json_object_get(j, "validation");
    if (!j || !json_is_number(json_object_get(v, "step_error"))) {
        zp_progress_done(&s->bar);
        fprintf(stderr, "zplan report validation: %s on %d ranks, stage %d: run failed (exit %d)\n",
                s->models[mi], np, s->stages[si], rc);
        s->failures++;
        json_decref(j);
        return;
    }
    val_add_row(s, s->models[mi], np, s->stages[si], j, v);
    json_decref(j);
}

/* Every rank count: its calibration (unless --profile), then every model and stage. */
static void val_sweep_all(val_sweep *s)
{
    for (int ri = 0; ri < s->nr; ri++) {
        /* one thread per rank: OpenMP and OpenBLAS threads on top of oversubscribed ranks spin against each
         * other (measured 3x slower steps on 2 cores) */
        int np = s->ranks[ri], threads = 1;
        char prof[4200];
        if (s->profile) {
            snprintf(prof, sizeof prof, "%s", s->profile);
        } else {
            snprintf(prof, sizeof prof, "%s/profile-np%d.json", s->dir, np);
            if (val_calibrate(s, np, prof, threads) != 0)
                continue;
        }
        for (int mi = 0; mi < s->nm; mi++)
            for (int si = 0; si < s->ns; si++)
                val_run_one(s, np, prof, threads, mi, si);
    }
}

/* The table's notes: the errors against their targets, the conditions of the runs, the failures. */
static void val_add_notes(val_sweep *s, long cores)
{
    zp_table *t = s->t;
    if (s->nerr > 0) {
        double med = zp_stats_median(s->step_err, (size_t)s->nerr);
        zp_table_add_note(t, "median |step-time error| %.1f%% over %d runs (target <= 15%%: %s)", 100 * med, s->nerr,
                          med <= 0.15 ? "met" : "MISSED");
        for (int c = 0; c < 5; c++)
            zp_table_add_note(t, "largest |%s memory error| %.2f%% (target <= 5%%: %s)", VAL_CATS[c],
                              100 * s->mem_err_max[c], s->mem_err_max[c] <= 0.05 ? "met" : "MISSED");
    }
    zp_table_add_note(t, "fp32 on the cpu backend, %lld sequences per rank, %ld cores, 1 OpenMP/BLAS thread per rank; %s",
                      (long long)s->mb, cores, s->profile ? "one given profile" : "profile calibrated per N");
    zp_table_add_note(t, "each run: at least %lld steps and %g s of measured steps, the median step without the "
                         "first; loss @k: after step %lld",
                      (long long)s->steps, s->min_seconds, (long long)s->steps);
    if (s->failures)
        zp_table_add_note(t, "%d run(s) failed (see the messages above)", s->failures);
}

int zp_cli_report_validation(int argc, char **argv)
{
    zp_cli_args a;
    zp_status pst = zp_cli_args_parse(ZP_CMD_VALIDATION, "zplan report validation", argc, argv, &a);
    if (pst != ZP_OK)
        return zp_cli_fail(pst);
    if (a.help) {
        fputs(VAL_USAGE, stdout);
        return 0;
    }
    val_sweep s;
    memset(&s, 0, sizeof s);
    if ((pst = val_parse(&a, &s)) != ZP_OK)
        return zp_cli_fail(pst);
    const long cores = sysconf(_SC_NPROCESSORS_ONLN);
    if ((pst = val_start(&s)) != ZP_OK)
        return zp_cli_fail(pst);
    /* a progress bar on stderr when it is a terminal, nothing otherwise (failures are still reported) */
    zp_progress_init(&s.bar, "validation");
    s.total = s.nr * (s.nm * s.ns + (s.profile ? 0 : 1));
    zp_progress_update(&s.bar, 0, s.total);
    val_sweep_all(&s);
    char summary[64];
    snprintf(summary, sizeof summary, "%d run%s", s.done, s.done == 1 ? "" : "s");
    zp_progress_finish(&s.bar, summary);
    val_add_notes(&s, cores);
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", s.dir);
    if (system(cmd) != 0)
        fprintf(stderr, "zplan report validation: could not remove %s\n", s.dir);
    int rc = zp_cli_write_table(s.t, a.fmt, a.out); /* frees t */
    if (rc == 0 && (s.failures || s.nerr == 0))
        rc = 1;
    return rc;
}
