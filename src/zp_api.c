/* zp_api.c — the command line as a library call (zp_api.h): zp_cli_main with descriptors 1 and 2 on
 * memory files. */
#include "zp_api.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "zp_cli.h"
#include "zp_config.h"

#define ZP_API_EXPORT __attribute__((visibility("default")))

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;

/* One of the process's standard descriptors on a memory file for the call. */
typedef struct {
    int target; /* 1 or 2 */
    int saved;  /* a duplicate of the original, -1 when the process had it closed */
    int mem;    /* the memory file, -1 when none */
} capture;

static int capture_begin(capture *c, int target)
{
    c->target = target;
    c->saved = -1;
    c->mem = memfd_create(target == 1 ? "zplan-stdout" : "zplan-stderr", MFD_CLOEXEC);
    if (c->mem < 0)
        return -1;
    c->saved = fcntl(target, F_DUPFD_CLOEXEC, 3);
    if (dup2(c->mem, target) < 0) {
        const int e = errno;
        close(c->mem);
        c->mem = -1;
        if (c->saved >= 0)
            close(c->saved);
        c->saved = -1;
        errno = e;
        return -1;
    }
    return 0;
}

/* Puts the original descriptor back and returns what was written (malloc'd, NUL-terminated; NULL when
 * it cannot be read back). */
static char *capture_end(capture *c, size_t *len)
{
    *len = 0;
    if (c->mem < 0)
        return NULL;
    if (c->saved >= 0) {
        dup2(c->saved, c->target);
        close(c->saved);
    } else {
        close(c->target);
    }
    char *buf = NULL;
    const off_t size = lseek(c->mem, 0, SEEK_END);
    if (size >= 0 && (buf = malloc((size_t)size + 1)) != NULL) {
        size_t got = 0;
        while (got < (size_t)size) {
            const ssize_t n = pread(c->mem, buf + got, (size_t)size - got, (off_t)got);
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0)
                break;
            got += (size_t)n;
        }
        buf[got] = '\0';
        *len = got;
    }
    close(c->mem);
    c->mem = -1;
    return buf;
}

static char *dup_message(const char *what, int e, size_t *len)
{
    char msg[256];
    const int n = snprintf(msg, sizeof msg, "zplan: %s: %s\n", what, strerror(e));
    *len = n > 0 ? (size_t)n : 0;
    return strdup(msg);
}

ZP_API_EXPORT int zp_api_run(int argc, const char *const *argv, char **out, size_t *out_len, char **err,
                             size_t *err_len)
{
    *out = *err = NULL;
    *out_len = *err_len = 0;
    if (argc < 1 || !argv) {
        *err = dup_message("zp_api_run", EINVAL, err_len);
        return -1;
    }
    /* the command line's own copy: its parser takes char ** as main's */
    char **args = calloc((size_t)argc + 1, sizeof *args);
    if (!args) {
        *err = dup_message("zp_api_run", ENOMEM, err_len);
        return -1;
    }
    for (int i = 0; i < argc; i++)
        args[i] = (char *)argv[i];

    pthread_mutex_lock(&g_lock);
    fflush(stdout);
    fflush(stderr);
    capture co, ce;
    int rc;
    if (capture_begin(&co, 1) != 0) {
        *err = dup_message("cannot collect the standard output", errno, err_len);
        rc = -1;
    } else if (capture_begin(&ce, 2) != 0) {
        const int e = errno;
        free(capture_end(&co, out_len));
        *out_len = 0;
        *err = dup_message("cannot collect the standard error", e, err_len);
        rc = -1;
    } else {
        rc = zp_cli_main(argc, args);
        fflush(stdout);
        fflush(stderr);
        *out = capture_end(&co, out_len);
        *err = capture_end(&ce, err_len);
    }
    pthread_mutex_unlock(&g_lock);
    free(args);
    return rc;
}

ZP_API_EXPORT void zp_api_free(void *p) { free(p); }

ZP_API_EXPORT const char *zp_api_version(void) { return ZP_VERSION; }
