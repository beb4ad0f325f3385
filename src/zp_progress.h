/* zp_progress.h — a progress bar on stderr for long work, drawn only when stderr reaches a terminal
 * (nothing at all in pipes, files and CI logs). */
#ifndef ZP_PROGRESS_H
#define ZP_PROGRESS_H

typedef struct {
    int enabled;      /* stderr reaches a terminal (zp_progress_terminal) */
    const char *what; /* "simulating plans" */
    double started;   /* monotonic seconds */
    int last_width;
    int done, total;  /* the last update */
} zp_progress;

/* 1 when progress should be drawn: stderr is a terminal, or this process is a rank started by mpirun
 * (Open MPI, MPICH, PMIx) whose launcher's stderr is one (mpirun forwards the ranks' stderr through a
 * pipe, so the rank's own isatty is false). ZPLAN_PROGRESS=0 or 1 forces it off or on. */
int zp_progress_terminal(void);

void zp_progress_init(zp_progress *p, const char *what);
/* Redraws the bar: done of total (total 0: unknown). */
void zp_progress_update(zp_progress *p, int done, int total);
/* Erases the bar (work abandoned, or an answer follows on the same terminal). */
void zp_progress_done(zp_progress *p);
/* Ends the bar for good: redraws it complete and replaces it with one line, "<what>: <summary> (<s> s)",
 * kept on stderr (only when a bar was drawn). */
void zp_progress_finish(zp_progress *p, const char *summary);
/* Adapter for callbacks of the form (ctx, done, total). */
void zp_progress_cb(void *ctx, int done, int total);

#endif
