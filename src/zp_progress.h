/* zp_progress.h — a progress bar on stderr for long work, drawn only when stderr is a terminal
 * (nothing at all in pipes, files and CI logs). */
#ifndef ZP_PROGRESS_H
#define ZP_PROGRESS_H

typedef struct {
    int enabled;      /* stderr is a terminal */
    const char *what; /* "simulating plans" */
    double started;   /* monotonic seconds */
    int last_width;
} zp_progress;

void zp_progress_init(zp_progress *p, const char *what);
/* Redraws the bar: done of total (total 0: unknown). */
void zp_progress_update(zp_progress *p, int done, int total);
/* Erases the bar. */
void zp_progress_done(zp_progress *p);
/* Adapter for callbacks of the form (ctx, done, total). */
void zp_progress_cb(void *ctx, int done, int total);

#endif
