/* zp_calibrate.h — `zplan calibrate`: times the project's kernels on this machine (alone or
 * under mpirun) and fits the cost models of a device profile (sim/zp_profile.h).
 *
 * The CLI (`zplan calibrate`, src/zp_cli_calibrate.c) and programs that want the profile in memory
 * call zp_calibrate_run. Every rank of MPI_COMM_WORLD must call it; every rank returns the same
 * profile. */
#ifndef ZP_CALIBRATE_H
#define ZP_CALIBRATE_H

#include "zp_profile.h"
#include "zp_status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Progress: fraction done in [0, 1] and what is being measured. Called on every rank. */
typedef void (*zp_calibrate_progress_fn)(void *arg, double fraction, const char *what);

#define ZP_CALIBRATE_MAX_SHAPES 48
#define ZP_CALIBRATE_MAX_EXTRA 128
#define ZP_CALIBRATE_MAX_ATT 8

typedef struct {
    const char *backend;        /* "cpu" or "cuda" */
    int quick;                  /* fewer sizes and repetitions, collectives up to 64 MiB */
    int warmup;                 /* untimed runs before each measurement, >= 0 */
    int reps;                   /* timed repetitions per measurement, >= 1 (median, spread) */
    double max_coll_bytes;      /* largest collective buffer (bytes); capped by free memory */
    double min_coll_bytes;      /* smallest collective buffer (bytes) */
    int nshapes;                /* GEMM shapes to time */
    double shapes[ZP_CALIBRATE_MAX_SHAPES][3]; /* (m, n, k) of C(m,n) = A(m,k) B(k,n) */
    int nextra;                 /* cpu: more GEMM shapes timed in loops beside the executor's and the grid's, */
    double extra[ZP_CALIBRATE_MAX_EXTRA][3]; /* (m, n, k): a given model's (zplan calibrate --model) */
    int natt;                   /* cpu: a given model's attention GEMMs, timed as the executor batches them */
    double att[ZP_CALIBRATE_MAX_ATT][5]; /* (batch = sequences x heads, T, hd, ld = fused QKV width, Cq = Q width) */
    zp_calibrate_progress_fn progress; /* NULL: none */
    void *progress_arg;
} zp_calibrate_opts;

/* Defaults: backend cpu, warm-up 2, 7 repetitions, collectives 1 KiB..1 GiB, the GEMM shapes of
 * transformer layers for hidden sizes 512, 1024, 2048 at 2048 tokens. quick = 1: warm-up 1,
 * 3 repetitions, collectives to 64 MiB, hidden sizes 256, 512, 1024 at 512 tokens. */
void zp_calibrate_opts_default(zp_calibrate_opts *o, int quick);

/* The options of the cpu backend's default calibration, aimed at what `zplan exec` runs: the quick
 * calibration's layer shapes (hidden 256, 512, 1024 at 512 tokens) and collectives up to 64 MiB (the zoo's
 * exec models move at most tens of MB), with the full calibration's warm-up and repetitions. */
void zp_calibrate_opts_exec(zp_calibrate_opts *o);

/* Adds a model's attention to o->att (returns 0 when there already or too many, 1 when added): batch =
 * micro-batch x heads of one MP rank, sequence T, head size hd, the fused QKV row width ld and the Q width Cq
 * (exec/zp_exec_model.c's layout, heads 0..H-1 then their K and V). */
int zp_calibrate_add_attention(zp_calibrate_opts *o, double batch, double T, double hd, double ld, double Cq);

/* Adds (m, n, k) to o->extra unless there already or too many (returns 0 then, 1 when added). */
int zp_calibrate_add_extra(zp_calibrate_opts *o, double m, double n, double k);

/* The GEMM shapes of one transformer layer for each hidden size h at `tokens` = b*s rows:
 * QKV (tokens, 3h, h), attention projection (tokens, h, h), MLP up (tokens, 4h, h) and
 * down (tokens, h, 4h). Replaces o->shapes. ZP_ERANGE beyond ZP_CALIBRATE_MAX_SHAPES. */
zp_status zp_calibrate_set_layer_shapes(zp_calibrate_opts *o, const double *hidden, int nhidden, double tokens);

/* The GEMM shapes of the executor's zoo models (zplan exec: hidden 128 and 256, 256 tokens per
 * micro-batch, vocabulary 16h, per-head attention at sequence 128 and head width 32), which the cpu
 * calibration times in loops in addition to opts.shapes so that the simulator of `zplan exec
 * --validate` has the executor's own small GEMMs measured. Writes up to cap (m, n, k); returns the count. */
int zp_calibrate_exec_shapes(double (*out)[3], int cap);

/* A log-spaced grid of (m, n, k): rows 128, 512, 2048 x columns 64 .. 4096 x depth 32 .. 2048 (x4 steps), timed
 * in loops by the cpu calibration besides the layer and executor shapes, so that any small model's GEMM has
 * measured neighbours. Writes up to cap; returns the count (48). */
#define ZP_CALIBRATE_MAX_GRID 48
int zp_calibrate_grid_shapes(double (*out)[3], int cap);

/* Measures and fits; fills *out (the same on every rank). For the cpu backend also the executor's
 * layer kernels (profile "layer_kernels"). */
zp_status zp_calibrate_run(const zp_calibrate_opts *o, zp_profile *out);

#ifdef __cplusplus
}
#endif

#endif
