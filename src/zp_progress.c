#include "zp_progress.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "zp_time.h"

void zp_progress_init(zp_progress *p, const char *what)
{
    memset(p, 0, sizeof *p);
    p->enabled = isatty(STDERR_FILENO);
    p->what = what;
    p->started = zp_time_now_s();
}

void zp_progress_update(zp_progress *p, int done, int total)
{
    if (!p->enabled)
        return;
    char bar[41];
    int width = 40, fill = total > 0 ? (int)((double)done / total * width + 0.5) : 0;
    if (fill > width)
        fill = width;
    memset(bar, '#', (size_t)fill);
    memset(bar + fill, '.', (size_t)(width - fill));
    bar[width] = '\0';
    double t = zp_time_now_s() - p->started;
    int n = fprintf(stderr, "\r%s [%s] %d/%d  %.1f s", p->what, bar, done, total, t);
    if (n < p->last_width)
        fprintf(stderr, "%*s", p->last_width - n, "");
    p->last_width = n;
    fflush(stderr);
}

void zp_progress_done(zp_progress *p)
{
    if (!p->enabled || p->last_width == 0)
        return;
    fprintf(stderr, "\r%*s\r", p->last_width, "");
    fflush(stderr);
    p->last_width = 0;
}

void zp_progress_cb(void *ctx, int done, int total) { zp_progress_update(ctx, done, total); }
