#include "zp_progress.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "zp_time.h"

/* The launcher's stderr: an MPI rank's parent is mpirun (or its local daemon, whose stderr is
 * mpirun's on this node). */
static int launcher_on_terminal(void)
{
    static const char *const rank_vars[] = {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"};
    int mpi = 0;
    for (size_t i = 0; i < sizeof rank_vars / sizeof *rank_vars; i++)
        mpi |= getenv(rank_vars[i]) != NULL;
    if (!mpi)
        return 0;
    char path[64];
    snprintf(path, sizeof path, "/proc/%ld/fd/2", (long)getppid());
    int fd = open(path, O_WRONLY | O_NOCTTY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    int tty = isatty(fd);
    close(fd);
    return tty;
}

int zp_progress_terminal(void)
{
    const char *force = getenv("ZPLAN_PROGRESS");
    if (force && (strcmp(force, "0") == 0 || strcmp(force, "1") == 0))
        return force[0] == '1';
    return isatty(STDERR_FILENO) || launcher_on_terminal();
}

void zp_progress_init(zp_progress *p, const char *what)
{
    memset(p, 0, sizeof *p);
    p->enabled = zp_progress_terminal();
    p->what = what;
    p->started = zp_time_now_s();
}

void zp_progress_update(zp_progress *p, int done, int total)
{
    if (!p->enabled)
        return;
    p->done = done;
    p->total = total;
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

void zp_progress_finish(zp_progress *p, const char *summary)
{
    if (!p->enabled || p->last_width == 0)
        return;
    zp_progress_update(p, p->done, p->done); /* complete: the work left was ruled out, not abandoned */
    const int width = p->last_width;
    int n = fprintf(stderr, "\r%s: %s (%.1f s)", p->what, summary, zp_time_now_s() - p->started);
    if (n < width)
        fprintf(stderr, "%*s", width - n, "");
    fputc('\n', stderr);
    fflush(stderr);
    p->last_width = 0;
}

void zp_progress_cb(void *ctx, int done, int total) { zp_progress_update(ctx, done, total); }
