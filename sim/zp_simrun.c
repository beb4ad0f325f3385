#include "zp_simrun.h"

#include <errno.h>
#include <poll.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

typedef struct {
    zp_status st;
    zp_sim_result res;
    char err[256];
} wire;

typedef struct {
    pid_t pid;
    int fd;
    int job;
} child;

static void run_child(zp_sim_job *job, int fd)
{
    wire w;
    memset(&w, 0, sizeof w);
    /* SimGrid writes to stdout and stderr on its own; the parent's output must stay clean */
    int devnull = open("/dev/null", O_WRONLY);
    if (devnull >= 0) {
        dup2(devnull, 1);
        dup2(devnull, 2);
    }
    w.st = zp_engine_run(&job->in, &w.res);
    if (w.st != ZP_OK)
        snprintf(w.err, sizeof w.err, "%s", zp_error_message());
    ssize_t n = write(fd, &w, sizeof w);
    _exit(n == (ssize_t)sizeof w ? 0 : 3);
}

static zp_status start(zp_sim_job *jobs, int j, child *c)
{
    int p[2];
    if (pipe(p) != 0)
        return ZP_FAIL(ZP_ERUNTIME, "pipe: %s", strerror(errno));
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        close(p[0]);
        close(p[1]);
        return ZP_FAIL(ZP_ERUNTIME, "fork: %s", strerror(errno));
    }
    if (pid == 0) {
        close(p[0]);
        run_child(&jobs[j], p[1]);
    }
    close(p[1]);
    c->pid = pid;
    c->fd = p[0];
    c->job = j;
    return ZP_OK;
}

static void finish(zp_sim_job *jobs, child *c)
{
    zp_sim_job *job = &jobs[c->job];
    wire w;
    size_t got = 0;
    while (got < sizeof w) {
        ssize_t r = read(c->fd, (char *)&w + got, sizeof w - got);
        if (r <= 0) {
            if (r < 0 && errno == EINTR)
                continue;
            break;
        }
        got += (size_t)r;
    }
    close(c->fd);
    int status = 0;
    while (waitpid(c->pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (got == sizeof w) {
        job->st = w.st;
        job->res = w.res;
        snprintf(job->err, sizeof job->err, "%s", w.err);
    } else {
        job->st = ZP_ERUNTIME;
        if (WIFSIGNALED(status))
            snprintf(job->err, sizeof job->err, "the simulation process died (signal %d: %s)", WTERMSIG(status),
                     strsignal(WTERMSIG(status)));
        else
            snprintf(job->err, sizeof job->err, "the simulation process failed (exit %d)",
                     WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    }
}

zp_status zp_simrun_many(zp_sim_job *jobs, int n, int parallel)
{
    if (parallel <= 0) {
        long cpus = sysconf(_SC_NPROCESSORS_ONLN);
        parallel = cpus > 0 ? (int)cpus : 1;
    }
    if (parallel > n)
        parallel = n;
    if (parallel > 64)
        parallel = 64;
    child *kids = calloc((size_t)(parallel > 0 ? parallel : 1), sizeof *kids);
    if (!kids)
        return ZP_FAIL(ZP_ENOMEM, "out of memory");
    int next = 0, running = 0;
    zp_status st = ZP_OK;
    while ((next < n && st == ZP_OK) || running > 0) {
        while (running < parallel && next < n && st == ZP_OK) {
            st = start(jobs, next, &kids[running]);
            if (st == ZP_OK) {
                running++;
                next++;
            }
        }
        if (running == 0)
            break;
        /* collect whichever child has written its result (or died: its pipe closes) */
        struct pollfd fds[64];
        int nf = running < 64 ? running : 64;
        for (int i = 0; i < nf; i++)
            fds[i] = (struct pollfd){.fd = kids[i].fd, .events = POLLIN};
        if (poll(fds, (nfds_t)nf, -1) < 0) {
            if (errno == EINTR)
                continue;
            fds[0].revents = POLLIN; /* cannot poll: fall back to a blocking read of the oldest */
        }
        for (int i = nf - 1; i >= 0; i--) {
            if (fds[i].revents) {
                finish(jobs, &kids[i]);
                kids[i] = kids[--running];
            }
        }
    }
    free(kids);
    return st;
}

zp_status zp_simrun_one(zp_sim_job *job)
{
    ZP_TRY(zp_simrun_many(job, 1, 1));
    if (job->st != ZP_OK)
        return ZP_FAIL(job->st, "%s", job->err);
    return ZP_OK;
}
