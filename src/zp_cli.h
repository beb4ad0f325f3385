/* zp_cli.h — the CLI's commands; each returns the process exit code (0, 1 or 2). */
#ifndef ZP_CLI_H
#define ZP_CLI_H

#include <stdio.h>

#include "zp_report.h"
#include "zp_search.h"
#include "zp_status.h"
#include "zp_table.h"
#include "zp_zoo.h"

#include "zp_cli_opts.h"
#include "zp_launch.h"
#include "zp_gpu.h"

/* A command's options with what they resolve to: the model, the cluster, the costs. */
typedef struct {
    zp_cli_args a;
    /* resolved by zp_cli_plan_resolve */
    zp_model model;
    zp_model_origin origin;
    const zp_cluster *cluster;
    zp_profile profile;
    double gpu_mem;
    char model_note[512], profile_note[300];
    int prepared;  /* zp_cli_plan_prepare ran */
    zp_launch launch; /* --megatron-args / --torchtitan / --nemo: the launch read (a.launch set) */
    char gpus_buf[32]; /* --gpus as the launch states it, when not given */
    /* --gpu: the cluster with that GPU (o->cluster points here), the GPU it points into, its name */
    zp_cluster gpu_cluster;
    zp_gpu gpu;
    char gpu_cluster_name[128];
} zp_cli_plan;

/* Parses the options of `cmd` (zp_cli_opts.h) into o->a. */
zp_status zp_cli_plan_parse(zp_cli_cmd cmd, const char *name, int argc, char **argv, zp_cli_plan *o);
/* A plan command: parses (messages name it `name`; bad options reported as `fail_as`, exit 2), prints
 * `usage` for --help (exit 0), else returns body(o)'s exit code. */
int zp_cli_plan_main(zp_cli_cmd cmd, const char *name, const char *fail_as, const char *usage, int argc, char **argv,
                     int (*body)(zp_cli_plan *o));
/* Resolves cluster, profile, GPU memory and model; need_gpus 1 parses --gpus as one count. */
zp_status zp_cli_plan_resolve(zp_cli_plan *o, int need_model, int need_gpus);
/* Resolves (zp_cli_plan_resolve(o, 1, 1)) and applies --ds-config: the request of the what-if options,
 * ready to search (zp_cli_plan_search calls it unless it ran). */
zp_status zp_cli_plan_prepare(zp_cli_plan *o);
/* ZP_EINVAL, naming the option, when `path` cannot be an output file (a directory, or in a directory that
 * does not exist): checked before any work, so that a bad path never follows a printed answer. */
zp_status zp_cli_check_output(const char *option, const char *path);
void zp_cli_plan_whatif(zp_cli_plan *o, const zp_search_result *res, zp_whatif *w);
/* Parses, resolves and searches the plans of the what-if options (with a progress bar on a terminal),
 * reading --ds-config when given; the result is the what-if's. */
zp_status zp_cli_plan_search(zp_cli_plan *o, zp_search_result *res);

/* The whole command line (zplan.c): argv as main's, argv[0] the program; returns the exit status. */
int zp_cli_main(int argc, char **argv);
int zp_cli_whatif(int argc, char **argv, const char *usage);
/* The verdict on a launch (--megatron-args, --torchtitan, --nemo, --ds-config) whose exact plan `res` holds
 * (its first plan): against the best its framework runs, and the one change that gets most of it; printed
 * to `f`. */
zp_status zp_cli_verdict(zp_cli_plan *o, const zp_search_result *res, FILE *f);
int zp_cli_list(int argc, char **argv);
int zp_cli_report(int argc, char **argv);
int zp_cli_schedule(int argc, char **argv);
int zp_cli_compare(int argc, char **argv);   /* zplan compare */
int zp_exec_main(int argc, char **argv);      /* zplan exec (argv[0] = "exec") */
int zp_calibrate_main(int argc, char **argv); /* zplan calibrate */
int zp_cli_sweep(int argc, char **argv);      /* zplan sweep (argv[0] = "sweep") */
/* zplan report KIND made by a sweep (argv[0] = KIND; KIND "scaling"); --help prints `usage`. */
int zp_cli_sweep_report(const char *kind, int argc, char **argv, const char *usage);

/* Prints "zplan: <message>" for a failed status and returns its exit code. */
int zp_cli_fail(zp_status st);
/* The same with the command's name: "zplan exec: <message>". */
int zp_cli_fail_as(const char *name, zp_status st);
/* Opens the output: stdout when path is NULL, else an atomic temporary beside path; closing it renames the
 * temporary into place and says "zplan: wrote PATH" on stderr (a user is told of every file written). */
typedef struct {
    FILE *f;
    void *atomic;
    const char *path;
} zp_cli_out;
zp_status zp_cli_out_open(const char *path, zp_cli_out *o);
zp_status zp_cli_out_close(zp_cli_out *o, zp_status st);
/* The rank count the launcher (mpirun) announces in the environment, and this process's rank: known
 * before MPI starts (1 and 0 without a launcher). */
int zp_cli_launch_size(void);
int zp_cli_launch_rank(void);
/* The ranks the launcher started on this machine (dflt without a launcher that says). */
int zp_cli_launch_local_size(int dflt);
/* Under a launcher with several ranks on this machine, and unless OMP_NUM_THREADS or OPENBLAS_NUM_THREADS
 * says otherwise: each rank's kernels get cores / ranks threads (at least 1), as calibrate and exec must
 * agree on and as the benches set by hand (OpenMP threads of oversubscribed ranks spin against each other),
 * and MPI yields when idle (OMPI_MCA_mpi_yield_when_idle, unless set). Call before MPI starts. Returns
 * the threads set, 0 when left as they were. */
int zp_cli_launch_threads(void);
/* A command's exit under a launcher: a bad input (rc 2) found on every rank before MPI started meets
 * the other ranks in MPI first, so that mpirun does not end the job before each has printed why.
 * Returns rc. */
int zp_cli_launch_exit(int argc, char **argv, int rc);
/* Writes one table to the output. */
int zp_cli_write_table(zp_table *t, zp_format fmt, const char *path);

#endif
