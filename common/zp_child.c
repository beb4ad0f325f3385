#include "zp_child.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "zp_time.h"

#define MAX_FDS 128 /* pipes polled at once: 2 per child, 64 children */

/* Writes all of buf; 0 on success. */
static int write_all(int fd, const void *buf, size_t n)
{
    const char *p = buf;
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

static void to_devnull(int target)
{
    int fd = open("/dev/null", O_WRONLY);
    if (fd >= 0) {
        dup2(fd, target);
        if (fd != target)
            close(fd);
    }
}

/* The child's side: never returns. */
static void child_main(zp_child *c, int res_w, int err_w)
{
    if (c->flags & ZP_CHILD_DEFAULT_FAULTS) {
        static const int fatal[] = {SIGABRT, SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP};
        for (size_t i = 0; i < sizeof fatal / sizeof fatal[0]; i++)
            signal(fatal[i], SIG_DFL);
    }
    if (c->flags & ZP_CHILD_DIE_WITH_PARENT)
        prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (err_w >= 0) {
        dup2(err_w, 2);
        close(err_w);
    } else if (c->flags & ZP_CHILD_STDERR_NULL) {
        to_devnull(2);
    }
    if (c->flags & ZP_CHILD_STDOUT_NULL)
        to_devnull(1);
    if (c->result_size > 0)
        memset(c->result, 0, c->result_size);
    int code = c->fn(c->ctx, c->result);
    if (c->result_size > 0 && write_all(res_w, c->result, c->result_size) != 0)
        _exit(ZP_CHILD_EXIT_NO_RESULT);
    _exit(code);
}

zp_status zp_child_start(zp_child *c)
{
    c->pid = 0;
    c->fd[0] = c->fd[1] = -1;
    c->result_len = c->err_len = 0;
    c->err[0] = '\0';
    c->timed_out = 0;
    c->status = 0;
    /* O_CLOEXEC: a child that execs closes its ends at once (the parent then waits for its exit, not for
     * whatever it starts), and children started later do not inherit this one's pipes. */
    int res[2], err[2] = {-1, -1};
    if (pipe2(res, O_CLOEXEC) != 0)
        return ZP_FAIL(ZP_ERUNTIME, "pipe: %s", strerror(errno));
    if ((c->flags & ZP_CHILD_CAPTURE_STDERR) && pipe2(err, O_CLOEXEC) != 0) {
        int e = errno;
        close(res[0]);
        close(res[1]);
        return ZP_FAIL(ZP_ERUNTIME, "pipe: %s", strerror(e));
    }
    fflush(NULL); /* the child must not write this process's buffered output again */
    pid_t pid = fork();
    if (pid < 0) {
        int e = errno;
        close(res[0]);
        close(res[1]);
        if (err[0] >= 0) {
            close(err[0]);
            close(err[1]);
        }
        return ZP_FAIL(ZP_ERUNTIME, "fork: %s", strerror(e));
    }
    if (pid == 0) {
        close(res[0]);
        if (err[0] >= 0)
            close(err[0]);
        child_main(c, res[1], err[1]);
    }
    close(res[1]);
    if (err[1] >= 0)
        close(err[1]);
    c->pid = pid;
    c->fd[0] = res[0];
    c->fd[1] = err[0];
    c->deadline = c->timeout_s > 0 ? zp_time_now_s() + c->timeout_s : 0;
    return ZP_OK;
}

static void close_pipes(zp_child *c)
{
    for (int i = 0; i < 2; i++) {
        if (c->fd[i] >= 0)
            close(c->fd[i]);
        c->fd[i] = -1;
    }
}

/* Closes the pipes, kills the child when `kill_it`, and reaps it. */
static void reap(zp_child *c, int kill_it)
{
    close_pipes(c);
    if (kill_it)
        kill(c->pid, SIGKILL);
    int status = 0;
    while (waitpid(c->pid, &status, 0) < 0 && errno == EINTR)
        ;
    c->status = status;
    c->pid = 0;
    c->err[c->err_len] = '\0';
}

/* Reads what is there from pipe i of c (the result up to its size, stderr up to ZP_CHILD_ERR_MAX - 1,
 * the rest dropped); closes the pipe at its end or on an error. */
static void drain(zp_child *c, int i)
{
    char chunk[4096];
    ssize_t r = read(c->fd[i], chunk, sizeof chunk);
    if (r > 0) {
        char *dst = i == 0 ? (char *)c->result : c->err;
        size_t *len = i == 0 ? &c->result_len : &c->err_len;
        size_t cap = i == 0 ? c->result_size : sizeof c->err - 1;
        size_t take = *len < cap ? cap - *len : 0;
        if (take > (size_t)r)
            take = (size_t)r;
        memcpy(dst + *len, chunk, take);
        *len += take;
    } else if (r == 0 || (errno != EINTR && errno != EAGAIN)) {
        close(c->fd[i]);
        c->fd[i] = -1;
    }
}

zp_status zp_child_wait_any(zp_child *children, int n, int *which)
{
    for (;;) {
        /* a child whose pipes are closed, or whose time is up, has finished */
        const double now = zp_time_now_s();
        double wait_s = -1;
        int running = 0;
        for (int i = 0; i < n; i++) {
            zp_child *c = &children[i];
            if (c->pid <= 0)
                continue;
            running++;
            int timed_out = c->timeout_s > 0 && c->deadline - now <= 0;
            if (timed_out || (c->fd[0] < 0 && c->fd[1] < 0)) {
                c->timed_out = timed_out;
                reap(c, timed_out);
                *which = i;
                return ZP_OK;
            }
            if (c->timeout_s > 0 && (wait_s < 0 || c->deadline - now < wait_s))
                wait_s = c->deadline - now;
        }
        if (running == 0)
            return ZP_FAIL(ZP_ERUNTIME, "no child process to wait for");
        struct pollfd pf[MAX_FDS];
        int owner[MAX_FDS], pipe_of[MAX_FDS], np = 0;
        for (int i = 0; i < n; i++)
            for (int k = 0; k < 2 && children[i].pid > 0; k++)
                if (children[i].fd[k] >= 0 && np < MAX_FDS) {
                    pf[np] = (struct pollfd){.fd = children[i].fd[k], .events = POLLIN};
                    owner[np] = i;
                    pipe_of[np++] = k;
                }
        /* milliseconds, rounded up so that the deadline has passed when poll returns; at most an hour a
         * call (the loop polls again) so that the conversion cannot overflow */
        int ms = wait_s < 0 ? -1 : wait_s > 3600 ? 3600 * 1000 : (int)(wait_s * 1000) + 1;
        int rc = poll(pf, (nfds_t)np, ms);
        if (rc < 0) {
            if (errno == EINTR)
                continue;
            pf[0].revents = POLLIN; /* cannot poll: fall back to a blocking read of the first pipe */
        }
        for (int j = 0; j < np; j++)
            if (pf[j].revents & (POLLIN | POLLHUP | POLLERR | POLLNVAL))
                drain(&children[owner[j]], pipe_of[j]);
    }
}

zp_status zp_child_run(zp_child *c)
{
    ZP_TRY(zp_child_start(c));
    int which;
    return zp_child_wait_any(c, 1, &which);
}

void zp_child_kill(zp_child *c)
{
    if (c->pid > 0)
        reap(c, 1);
}

int zp_child_ok(const zp_child *c)
{
    return !c->timed_out && WIFEXITED(c->status) && WEXITSTATUS(c->status) == 0 && c->result_len == c->result_size;
}

void zp_child_describe(const zp_child *c, char *buf, size_t len)
{
    if (c->timed_out)
        snprintf(buf, len, "was killed after %g s (time limit)", c->timeout_s);
    else if (WIFSIGNALED(c->status))
        snprintf(buf, len, "died (signal %d: %s)", WTERMSIG(c->status), strsignal(WTERMSIG(c->status)));
    else
        snprintf(buf, len, "failed (exit %d)", WIFEXITED(c->status) ? WEXITSTATUS(c->status) : -1);
}
