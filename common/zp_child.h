/* zp_child.h — work in a child process with a time limit: fork, pipes and poll, once.
 *
 * Work that must not run in this process (SimGrid allows one simulation per process and may abort on a
 * bad platform; a program to exec) runs as a function in a forked child. The function fills a result of
 * a fixed size, which the child writes to a pipe; its stderr can be collected too. The parent reads both
 * pipes together (a child that writes more than a pipe holds to one of them before the other never
 * blocks), until the child has closed them or its time is up: then it is killed with SIGKILL. Every
 * child is reaped (waitpid) before its zp_child is reported finished.
 *
 *     zp_child c = {.fn = load, .ctx = path, .result = &counts, .result_size = sizeof counts,
 *                   .flags = ZP_CHILD_STDOUT_NULL | ZP_CHILD_CAPTURE_STDERR, .timeout_s = 30};
 *     ZP_TRY(zp_child_run(&c));
 *     if (c.timed_out) ...; else if (!zp_child_ok(&c)) ... c.err ...
 */
#ifndef ZP_CHILD_H
#define ZP_CHILD_H

#include <stddef.h>
#include <sys/types.h>

#include "zp_status.h"

/* Runs in the child. `result` is the child's copy of the zp_child's result buffer, zeroed; what the
 * function leaves there is sent to the parent when it returns. The return value is the child's exit
 * status (the function may also exec or _exit itself). */
typedef int (*zp_child_fn)(void *ctx, void *result);

enum {
    ZP_CHILD_STDOUT_NULL = 1 << 0,     /* the child's stdout goes to /dev/null */
    ZP_CHILD_STDERR_NULL = 1 << 1,     /* the child's stderr goes to /dev/null */
    ZP_CHILD_CAPTURE_STDERR = 1 << 2,  /* the child's stderr is collected in `err` */
    ZP_CHILD_DEFAULT_FAULTS = 1 << 3,  /* the child dies of SIGSEGV, SIGABRT, ... with the default action,
                                          not through handlers this process installed (e.g. a fuzzer's) */
    ZP_CHILD_DIE_WITH_PARENT = 1 << 4, /* the child is killed (SIGKILL) when this process dies */
};

/* The child's exit status when it could not send its whole result. */
#define ZP_CHILD_EXIT_NO_RESULT 3
/* Bytes of stderr kept (with the terminating NUL); the rest is read and dropped. */
#define ZP_CHILD_ERR_MAX 4096

typedef struct {
    /* set by the caller */
    zp_child_fn fn;
    void *ctx;
    void *result;        /* result_size bytes, filled from the child's result; NULL when result_size is 0 */
    size_t result_size;
    unsigned flags;      /* ZP_CHILD_* */
    double timeout_s;    /* > 0: the child is killed (SIGKILL) this many seconds after it started */
    /* set by zp_child_start and the waits */
    pid_t pid;           /* > 0 while the child runs (not yet reaped) */
    int fd[2];           /* result and stderr pipes, -1 when closed */
    double deadline;     /* zp_time_now_s() by which it must have finished (timeout_s > 0) */
    size_t result_len;   /* bytes of the result received: result_size when the child sent it all */
    char err[ZP_CHILD_ERR_MAX]; /* its stderr (ZP_CHILD_CAPTURE_STDERR), NUL-terminated */
    size_t err_len;
    int timed_out;       /* killed because its time was up */
    int status;          /* waitpid's status once finished */
} zp_child;

/* Forks the child and starts fn in it. Fails (nothing left running) when a pipe or the fork cannot be
 * made: "pipe: ..." or "fork: ...". */
zp_status zp_child_start(zp_child *c);

/* Waits until one of the n children (those not started or already finished are skipped) finishes:
 * it has closed its pipes, or its time is up (then it is killed); reads what they write meanwhile.
 * The finished child is reaped and its index stored in *which. Fails when none of them is running. */
zp_status zp_child_wait_any(zp_child *children, int n, int *which);

/* Starts one child and waits for it to finish. */
zp_status zp_child_run(zp_child *c);

/* Kills (SIGKILL) and reaps a child still running; nothing for a finished one. */
void zp_child_kill(zp_child *c);

/* 1 when the finished child exited with status 0 and sent its whole result. */
int zp_child_ok(const zp_child *c);

/* How a finished child ended, to follow "the ... process": "failed (exit 3)", "died (signal 11:
 * Segmentation fault)", "was killed after 30 s (time limit)". */
void zp_child_describe(const zp_child *c, char *buf, size_t len);

#endif
