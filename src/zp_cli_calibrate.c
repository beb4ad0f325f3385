/* zp_cli_calibrate.c — `zplan calibrate`: options, progress bar, summary, exit codes. The only
 * part of calibrate/ that prints: the profile or a summary on stdout (rank 0), errors on stderr. */
#include "zp_calibrate.h"
#include "zp_cli.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "zp_config.h"
#include "zp_kernels.h"
#include "zp_progress.h"
#include "zp_quiet.h"
#include "zp_exec.h"
#include "zp_size.h"
#include "zp_tensors.h"
#include "zp_watchdog.h"
#include "zp_zoo.h"

static void usage(FILE *f)
{
    fputs("usage: zplan calibrate [--backend cpu|cuda] [--quick] [-o profile.json] [--model M[,M...]\n"
          "                       [--micro-batch b] [--seq s]] [--reps N] [--warmup N] [--max-bytes SIZE]\n"
          "                       [--hidden H,H,...] [--tokens N]\n"
          "\n"
          "Times this machine's kernels (memory bandwidth, fused Adam, GEMM over transformer-layer shapes,\n"
          "collectives within and across nodes) and fits the cost models of a device profile for\n"
          "`zplan --profile`. Run alone or under `mpirun -np N` (every rank measures; rank 0 writes).\n"
          "On cpu the default is aimed at `zplan exec --validate` with the same N: the zoo's exec models'\n"
          "GEMMs and layer kernels, a grid of small GEMMs around them, collectives up to 64 MiB.\n"
          "\n"
          "  --backend NAME   cpu (default) or cuda\n"
          "  --quick          fewer sizes and repetitions; collectives up to 64 MiB\n"
          "  -o, --output F   write the profile to F atomically (default: print it on stdout)\n"
          "  --model M[,M]    cpu: also time the GEMMs `zplan exec --model M` runs (zoo names or config.json\n"
          "                   files, comma-separated), per MP degree dividing N, at --micro-batch b (default 1)\n"
          "                   and --seq s (default the model's): give exec's --micro-batch and --seq\n"
          "  --reps N         timed repetitions per measurement (median and spread; default 7, quick 3)\n"
          "  --warmup N       untimed runs first (default 2, quick 1)\n"
          "  --max-bytes SIZE largest collective buffer, e.g. 256Mi (default: cpu 64Mi, cuda 1Gi; quick 64Mi;\n"
          "                   always capped by free memory)\n"
          "  --hidden LIST    hidden sizes whose layer GEMMs to time (default: cpu 256,512,1024, cuda\n"
          "                   512,1024,2048; quick 256,512,1024)\n"
          "  --tokens N       rows (micro-batch x sequence) of those GEMMs (default: cpu 512, cuda 2048;\n"
          "                   quick 512)\n"
          "  --timeout S      under mpirun: end the job, naming the rank, when a rank dies or makes no\n"
          "                   progress for S seconds (default 120); ranks must all get the same options\n"
          "  -h, --help       this help\n",
          f);
}

typedef struct {
    int rank0;
    int tty;
    int last;
} bar;

static void show_progress(void *arg, double frac, const char *what)
{
    bar *b = arg;
    zp_comm_watchdog_beat(what); /* every rank: a measurement completed */
    if (!b->rank0 || !b->tty)
        return;
    int pct = (int)floor(frac * 100 + 0.5);
    const int width = 30;
    int fill = (int)(frac * width + 0.5);
    char line[width + 1];
    for (int i = 0; i < width; i++)
        line[i] = i < fill ? '#' : ' ';
    line[width] = '\0';
    fprintf(stderr, "\r[%s] %3d%% %-40.40s", line, pct, what);
    if (frac >= 1.0)
        fputc('\n', stderr);
    fflush(stderr);
    b->last = pct;
}

static void summary(const zp_profile *p, const char *path)
{
    printf("profile written to %s (backend %s, %d rank%s on %d node%s)\n", path, p->backend, p->machine.ranks,
           p->machine.ranks == 1 ? "" : "s", p->machine.nodes, p->machine.nodes == 1 ? "" : "s");
    printf("  memory bandwidth   copy %.1f GB/s, triad %.1f GB/s per rank\n", p->copy_gbs, p->triad_gbs);
    printf("  fused Adam         %.3g params/s (%.0f B/param: %.1f GB/s)\n", p->adam_params_per_s,
           p->adam_bytes_per_param, p->adam_params_per_s * p->adam_bytes_per_param / 1e9);
    printf("  GEMM (%s)        peak %.1f GFLOP/s; model t = %.3g s + flops x %.3g s + bytes x %.3g s "
           "(residual %.1f%%)\n",
           p->gemm_dtype, zp_profile_peak_flops(p, p->gemm_dtype) / 1e9, p->gemm_t0_s, p->gemm_s_per_flop,
           p->gemm_s_per_byte, 100 * p->gemm_residual);
    if (p->gemm_cold_gbs > 0)
        printf("  GEMM cold operands %.1f GB/s (what the step last touched long before, on top of the loops)\n",
               p->gemm_cold_gbs);
    if (p->h2d_gbs > 0)
        printf("  host<->device      h2d %.1f GB/s, d2h %.1f GB/s\n", p->h2d_gbs, p->d2h_gbs);
    int any = 0;
    for (int s = 0; s < ZP_PROFILE_NSCOPE; s++)
        for (int k = 0; k < ZP_PROFILE_NCOLL; k++) {
            const zp_profile_coll_fit *f = &p->coll[k][s];
            if (!f->measured)
                continue;
            any = 1;
            printf("  %-14s %-10s latency %8.2f us, busbw %6.2f GB/s on %d ranks (residual %.0f%%)\n",
                   zp_profile_coll_name((zp_profile_coll)k), zp_profile_scope_name((zp_profile_scope)s),
                   f->latency_s * 1e6, f->busbw_gbs, f->nranks, 100 * f->residual);
        }
    if (!any)
        printf("  collectives        not measured (one rank per node and one node: run under mpirun -np N)\n");
    zp_quiet_verdict v;
    const zp_profile_machine *m = &p->machine;
    if (m->watched && zp_quiet_judge_figures(m->cores, m->ranks, m->others_cores, m->load1, &v) == ZP_OK) {
        printf("  machine            %s while calibrating (other processes %.2f cores, load %.2f on %d cores)\n",
               v.quiet ? "quiet" : "NOT QUIET", m->others_cores, m->load1, m->cores);
        if (!v.quiet)
            fprintf(stderr, "zplan calibrate: warning: the machine was not quiet while calibrating (%s): the profile "
                            "priced other processes' work too, and exec --validate will not judge against it; "
                            "calibrate again on an idle machine\n",
                    v.reason);
    }
}

static int fail(zp_status st)
{
    fprintf(stderr, "zplan calibrate: %s\n", zp_error_message());
    return zp_status_exit_code(st);
}

/* --hidden and --tokens: the layer GEMM shapes to time (the defaults of the mode for the one not given).
 * Returns 0, or the exit code (the message printed). */
static int calibrate_shapes(const zp_cli_args *a, zp_calibrate_opts *o)
{
    double hs[ZP_CALIBRATE_MAX_SHAPES / 4];
    int nh = 0;
    int64_t v;
    double t = a->quick ? 512 : 2048;
    if (a->hidden && zp_size_parse_list(a->hidden, "--hidden", hs, ZP_CALIBRATE_MAX_SHAPES / 4, &nh) != ZP_OK)
        return fail(ZP_EINVAL);
    if (!a->hidden) {
        const double qh[] = {256, 512, 1024}, fh[] = {512, 1024, 2048};
        memcpy(hs, a->quick ? qh : fh, sizeof qh);
        nh = 3;
    }
    if (a->tokens) {
        if (zp_size_parse_int(a->tokens, "--tokens", 1, 1000000, &v) != ZP_OK)
            return fail(ZP_EINVAL);
        t = (double)v;
    }
    zp_status st = zp_calibrate_set_layer_shapes(o, hs, nh, t);
    if (st != ZP_OK)
        return fail(st);
    return 0;
}

/* One linear of the executor, out x in at `rows` tokens: its forward C(rows, out) = X W^T, input gradient
 * (rows, in) and weight gradient (out, in) over the rows, as zp_exec_gemm runs them. */
static void add_linear(zp_calibrate_opts *o, double rows, double out, double in)
{
    zp_calibrate_add_extra(o, rows, out, in);
    zp_calibrate_add_extra(o, rows, in, out);
    zp_calibrate_add_extra(o, out, in, rows);
}

/* The GEMMs `zplan exec --model` runs on one MP rank of plan p (exec/zp_exec_model.c, zp_exec_moe.c). */
static void add_model_shapes(zp_calibrate_opts *o, const zp_tensors_shape *t, double mb)
{
    const double bt = mb * (double)t->T, T = (double)t->T, hd = (double)t->hd;
    add_linear(o, bt, (double)t->qkv_n, (double)t->C);
    add_linear(o, bt, (double)t->C, (double)t->q_n);
    zp_calibrate_add_extra(o, T, T, hd); /* attention scores, and their input gradient */
    zp_calibrate_add_extra(o, T, hd, T); /* context, dQ, dK, dV */
    /* the same, as the executor batches them over (sequence, head) from the fused QKV rows */
    zp_calibrate_add_attention(o, mb * (double)t->NHl, T, hd, (double)t->qkv_n, (double)t->q_n);
    if (t->moe) { /* the router (every token's scores over the E experts), and an expert's rows: the tokens
                   * of its share of the top-k, on average */
        const double rows = fmax(1.0, floor(bt * (double)t->k / (double)(t->E ? t->E : 1)));
        add_linear(o, bt, (double)t->E, (double)t->C);
        add_linear(o, rows, (double)t->e_up, (double)t->C);
        add_linear(o, rows, (double)t->C, (double)t->e_f);
    } else {
        add_linear(o, bt, (double)t->up, (double)t->C);
        add_linear(o, bt, (double)t->C, (double)t->Fl);
    }
    add_linear(o, bt, (double)t->Vl, (double)t->C); /* the LM head */
}

/* --model M[,M...] (cpu): each model's GEMMs for every MP degree dividing the launcher's ranks that the
 * executor runs, at --micro-batch (default 1) and --seq. Returns 0, or the exit code (the message printed). */
static int calibrate_models(const zp_cli_args *a, zp_calibrate_opts *o)
{
    if (strcmp(a->backend, "cpu") != 0) {
        fprintf(stderr, "zplan calibrate: --model times the cpu executor's GEMMs: give it with --backend cpu\n");
        return 2;
    }
    char list[1024];
    if (snprintf(list, sizeof list, "%s", a->model) >= (int)sizeof list)
        return fail(ZP_FAIL(ZP_EINVAL, "--model: the list is too long (at most 1023 characters)"));
    const int ranks = zp_cli_launch_size();
    const double mb = zp_search_req_given(&a->r, ZP_SEARCH_MICRO_BATCH) ? (double)a->r.base.micro_batch : 1.0;
    char *save = NULL;
    for (char *name = strtok_r(list, ",", &save); name; name = strtok_r(NULL, ",", &save)) {
        zp_exec_config cfg;
        zp_exec_config_default(&cfg);
        zp_model_origin origin;
        if (zp_model_resolve(name, a->seq, &cfg.model, &origin) != ZP_OK)
            return fail(ZP_EINVAL); /* the message names --model and the fix */
        int runs = 0;
        for (int mp = 1; mp <= ranks; mp++) {
            zp_tensors_shape t;
            cfg.plan.mp = mp;
            cfg.plan.dp = ranks / mp;
            if (ranks % mp != 0 || zp_tensors_check(&cfg.model, &cfg.plan) != ZP_OK ||
                zp_tensors_shape_get(&cfg.model, &cfg.plan, &t) != ZP_OK)
                continue;
            add_model_shapes(o, &t, mb);
            runs++;
        }
        if (runs == 0)
            return fail(ZP_FAIL(ZP_EINVAL, "--model %s: zplan exec does not run it on %d rank%s (zplan exec "
                                           "--model %s says why)", name, ranks, ranks == 1 ? "" : "s", name));
    }
    if (o->nextra >= ZP_CALIBRATE_MAX_EXTRA)
        fprintf(stderr, "zplan calibrate: warning: --model: more GEMM shapes than %d; the first are timed, the "
                        "others interpolated (give fewer models)\n", ZP_CALIBRATE_MAX_EXTRA);
    return 0;
}

/* The calibration options of the command line into *o (the mode's defaults for what is not given).
 * Returns 0, or the exit code (the message printed). */
static int calibrate_opts(const zp_cli_args *a, zp_calibrate_opts *o)
{
    if (strcmp(a->backend, "cpu") == 0 && !a->quick)
        zp_calibrate_opts_exec(o);
    else
        zp_calibrate_opts_default(o, a->quick);
    o->backend = a->backend;
    int64_t v;
    double d;
    if (a->reps) {
        if (zp_size_parse_int(a->reps, "--reps", 1, 64, &v) != ZP_OK)
            return fail(ZP_EINVAL);
        o->reps = (int)v;
    }
    if (a->warmup) {
        if (zp_size_parse_int(a->warmup, "--warmup", 0, 100, &v) != ZP_OK)
            return fail(ZP_EINVAL);
        o->warmup = (int)v;
    }
    if (a->max_bytes) {
        if (zp_size_parse(a->max_bytes, "--max-bytes", &d) != ZP_OK)
            return fail(ZP_EINVAL);
        if (d < o->min_coll_bytes) {
            fprintf(stderr, "zplan calibrate: --max-bytes must be at least %.0f\n", o->min_coll_bytes);
            return 2;
        }
        o->max_coll_bytes = d;
    }
    const int rc = a->hidden || a->tokens ? calibrate_shapes(a, o) : 0;
    if (rc != 0)
        return rc;
    return a->model ? calibrate_models(a, o) : 0;
}

/* Every rank must measure the same thing: ranks started with other options (o hashed) are refused, then
 * the watchdog watches (started here, running on success). */
static zp_status calibrate_watch(zp_comm *world, const zp_calibrate_opts *o, double timeout_s)
{
    char cfg[256 + 64 * (ZP_CALIBRATE_MAX_SHAPES + ZP_CALIBRATE_MAX_EXTRA)];
    int len = snprintf(cfg, sizeof cfg, "zplan %s calibrate backend=%s quick=%d warmup=%d reps=%d bytes=%.17g..%.17g",
                       ZP_VERSION, o->backend, o->quick, o->warmup, o->reps, o->min_coll_bytes, o->max_coll_bytes);
    for (int i = 0; i < o->nshapes && len > 0 && len < (int)sizeof cfg; i++)
        len += snprintf(cfg + len, sizeof cfg - (size_t)len, " %.17g,%.17g,%.17g", o->shapes[i][0], o->shapes[i][1],
                        o->shapes[i][2]);
    for (int i = 0; i < o->nextra && len > 0 && len < (int)sizeof cfg; i++)
        len += snprintf(cfg + len, sizeof cfg - (size_t)len, " x%.17g,%.17g,%.17g", o->extra[i][0], o->extra[i][1],
                        o->extra[i][2]);
    zp_status st = zp_comm_watchdog_start(world, timeout_s, "zplan calibrate");
    if (st == ZP_OK) {
        st = zp_comm_check_same_config(world, zp_config_hash(cfg, strlen(cfg), 0), "calibrate configuration");
        if (st != ZP_OK)
            zp_comm_watchdog_stop();
    }
    return st;
}

/* Rank 0's profile: written to `output` atomically (and summarised on stdout), or printed when NULL. */
static zp_status calibrate_output(const zp_profile *p, const char *output)
{
    zp_status st;
    if (output) {
        st = zp_profile_write(p, output);
        if (st == ZP_OK)
            summary(p, output);
        return st;
    }
    char *text = NULL;
    st = zp_profile_to_json(p, &text);
    if (st == ZP_OK) {
        if (fputs(text, stdout) == EOF || fputc('\n', stdout) == EOF || fflush(stdout) != 0)
            st = ZP_FAIL(ZP_EIO, "cannot write the profile to stdout");
        free(text);
    }
    return st;
}

int zp_calibrate_main(int argc, char **argv)
{
    zp_cli_args a;
    zp_status pst = zp_cli_args_parse(ZP_CMD_CALIBRATE, "zplan calibrate", argc, argv, &a);
    if (pst != ZP_OK) {
        fail(pst);
        usage(stderr);
        return 2;
    }
    if (a.help) {
        usage(stdout);
        return 0;
    }
    zp_calibrate_opts o;
    const int orc = calibrate_opts(&a, &o);
    if (orc != 0)
        return orc;

    zp_cli_launch_threads(); /* as exec does: the profile prices the threads the run will have */
    /* the backend first: "no CUDA device" before MPI is even started */
    const zp_kernels_backend *be;
    zp_status st = zp_kernels_backend_get(a.backend, &be);
    if (st == ZP_OK)
        st = be->init();
    if (st != ZP_OK)
        return fail(st);

    st = zp_kernels_mpi_init(&argc, &argv);
    if (st != ZP_OK)
        return fail(st);
    zp_comm *world = NULL;
    st = zp_comm_world(&zp_kernels_cpu, &world);
    int rank = zp_comm_rank(world);
    if (st != ZP_OK) {
        zp_comm_free(world);
        zp_kernels_mpi_finalize();
        return fail(st);
    }
    st = calibrate_watch(world, &o, a.timeout_s);
    zp_comm_free(world);
    if (st != ZP_OK) {
        if (rank == 0)
            fail(st);
        zp_kernels_mpi_finalize();
        return zp_status_exit_code(st);
    }
    bar b = {.rank0 = rank == 0, .tty = zp_progress_terminal(), .last = -1}; /* under mpirun too */
    o.progress = show_progress;
    o.progress_arg = &b;

    zp_profile p;
    st = zp_calibrate_run(&o, &p);
    if (st == ZP_OK && rank == 0)
        st = calibrate_output(&p, a.out);
    zp_comm_watchdog_stop();
    int code = 0;
    if (st != ZP_OK) {
        if (b.tty && rank == 0)
            fputc('\n', stderr);
        if (rank > 0)
            fprintf(stderr, "zplan calibrate: rank %d: %s\n", rank, zp_error_message());
        else
            fprintf(stderr, "zplan calibrate: %s\n", zp_error_message());
        code = zp_status_exit_code(st);
    }
    zp_kernels_mpi_finalize();
    return code;
}
