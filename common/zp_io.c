#include "zp_io.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct zp_io_atomic {
    FILE *f;
    char *path;
    char *tmp;
};

zp_status zp_io_atomic_open(const char *path, zp_io_atomic **out)
{
    if (path == NULL || *path == '\0')
        return ZP_FAIL(ZP_EINVAL, "empty output path");
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
        return ZP_FAIL(ZP_EINVAL, "output path '%s' is a directory", path);
    zp_io_atomic *a = calloc(1, sizeof *a);
    if (!a)
        return ZP_FAIL(ZP_ENOMEM, "out of memory");
    size_t n = strlen(path);
    a->path = strdup(path);
    a->tmp = malloc(n + 16);
    if (!a->path || !a->tmp) {
        zp_io_atomic_abort(a);
        return ZP_FAIL(ZP_ENOMEM, "out of memory");
    }
    snprintf(a->tmp, n + 16, "%s.tmpXXXXXX", path);
    int fd = mkstemp(a->tmp);
    if (fd < 0) {
        int e = errno;
        free(a->tmp);
        a->tmp = NULL;
        zp_io_atomic_abort(a);
        return ZP_FAIL(ZP_ENOENT, "cannot write '%s': %s", path, strerror(e));
    }
    /* mkstemp creates 0600; output files are ordinary user files. */
    mode_t mask = umask(0);
    umask(mask);
    fchmod(fd, 0666 & ~mask);
    a->f = fdopen(fd, "w");
    if (!a->f) {
        close(fd);
        zp_io_atomic_abort(a);
        return ZP_FAIL(ZP_EIO, "cannot write '%s'", path);
    }
    *out = a;
    return ZP_OK;
}

FILE *zp_io_atomic_file(zp_io_atomic *a) { return a->f; }

zp_status zp_io_atomic_commit(zp_io_atomic *a)
{
    int bad = ferror(a->f) || fflush(a->f) != 0 || fsync(fileno(a->f)) != 0;
    bad |= fclose(a->f) != 0;
    a->f = NULL;
    if (bad) {
        zp_io_atomic_abort(a);
        return ZP_FAIL(ZP_EIO, "writing failed (disk full?); the previous file is untouched");
    }
    if (rename(a->tmp, a->path) != 0) {
        int e = errno;
        zp_status st = ZP_FAIL(ZP_EIO, "cannot rename onto '%s': %s", a->path, strerror(e));
        zp_io_atomic_abort(a);
        return st;
    }
    free(a->tmp);
    free(a->path);
    free(a);
    return ZP_OK;
}

void zp_io_atomic_abort(zp_io_atomic *a)
{
    if (!a)
        return;
    if (a->f)
        fclose(a->f);
    if (a->tmp)
        unlink(a->tmp);
    free(a->tmp);
    free(a->path);
    free(a);
}

zp_status zp_io_write_file(const char *path, const void *data, size_t len)
{
    zp_io_atomic *a;
    ZP_TRY(zp_io_atomic_open(path, &a));
    if (len && fwrite(data, 1, len, a->f) != len) {
        zp_io_atomic_abort(a);
        return ZP_FAIL(ZP_EIO, "writing '%s' failed", path);
    }
    return zp_io_atomic_commit(a);
}

zp_status zp_io_read_file(const char *path, size_t max_bytes, char **out, size_t *len)
{
    struct stat st;
    if (stat(path, &st) != 0)
        return ZP_FAIL(ZP_ENOENT, "cannot read '%s': %s", path, strerror(errno));
    if (S_ISDIR(st.st_mode))
        return ZP_FAIL(ZP_EINVAL, "'%s' is a directory, not a file", path);
    FILE *f = fopen(path, "rb");
    if (!f)
        return ZP_FAIL(ZP_ENOENT, "cannot read '%s': %s", path, strerror(errno));
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap + 1);
    if (!buf) {
        fclose(f);
        return ZP_FAIL(ZP_ENOMEM, "out of memory");
    }
    for (;;) {
        if (n == cap) {
            if (cap >= max_bytes) {
                free(buf);
                fclose(f);
                return ZP_FAIL(ZP_EINVAL, "'%s' is larger than %zu bytes", path, max_bytes);
            }
            cap *= 2;
            char *nb = realloc(buf, cap + 1);
            if (!nb) {
                free(buf);
                fclose(f);
                return ZP_FAIL(ZP_ENOMEM, "out of memory");
            }
            buf = nb;
        }
        size_t r = fread(buf + n, 1, cap - n, f);
        n += r;
        if (r == 0)
            break;
    }
    int err = ferror(f);
    fclose(f);
    if (err) {
        free(buf);
        return ZP_FAIL(ZP_EIO, "reading '%s' failed", path);
    }
    if (n > max_bytes) {
        free(buf);
        return ZP_FAIL(ZP_EINVAL, "'%s' is larger than %zu bytes", path, max_bytes);
    }
    buf[n] = '\0';
    *out = buf;
    if (len)
        *len = n;
    return ZP_OK;
}
