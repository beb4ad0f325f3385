#include "zp_io.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The temporary file is, where the kernel allows it (Linux O_TMPFILE), an unnamed file in the target's
 * directory: a writer killed at any point (SIGKILL, SIGXFSZ, power loss) leaves nothing behind. It gets a
 * name only once complete and synced (linkat through /proc/self/fd, then rename over the target: a named
 * temporary exists only between those two calls). Elsewhere a mkstemp file beside the target is used. */
struct zp_io_atomic {
    FILE *f;
    char *path;
    char *tmp;   /* the temporary's name (mkstemp) or the name it is linked to at commit (O_TMPFILE) */
    int unnamed; /* O_TMPFILE: no name until commit */
};

static char *dir_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        return strdup(".");
    if (slash == path)
        return strdup("/");
    return strndup(path, (size_t)(slash - path));
}

/* An unnamed file in the directory of `path`, or -1 (then mkstemp is used). */
static int open_unnamed(const char *path)
{
#ifdef O_TMPFILE
    if (access("/proc/self/fd", X_OK) != 0)
        return -1; /* it could not be given a name at commit */
    char *dir = dir_of(path);
    if (!dir)
        return -1;
    int fd = open(dir, O_TMPFILE | O_WRONLY | O_CLOEXEC, 0666); /* the umask applies */
    free(dir);
    return fd;
#else
    (void)path;
    return -1;
#endif
}

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
    a->tmp = malloc(n + 48);
    if (!a->path || !a->tmp) {
        zp_io_atomic_abort(a);
        return ZP_FAIL(ZP_ENOMEM, "out of memory");
    }
    int fd = open_unnamed(path);
    if (fd >= 0) {
        a->unnamed = 1;
    } else {
        snprintf(a->tmp, n + 48, "%s.tmpXXXXXX", path);
        fd = mkstemp(a->tmp);
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
    }
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

/* Gives the unnamed temporary a fresh name beside the target (a->tmp); errno on failure. */
static int link_unnamed(zp_io_atomic *a)
{
    char proc[64];
    snprintf(proc, sizeof proc, "/proc/self/fd/%d", fileno(a->f));
    size_t cap = strlen(a->path) + 48;
    for (unsigned i = 0; i < 1000; i++) {
        snprintf(a->tmp, cap, "%s.tmp%ld.%u", a->path, (long)getpid(), i);
        if (linkat(AT_FDCWD, proc, AT_FDCWD, a->tmp, AT_SYMLINK_FOLLOW) == 0) {
            a->unnamed = 0;
            return 0;
        }
        if (errno != EEXIST)
            return errno;
    }
    return EEXIST;
}

static void sync_dir(const char *path)
{
    char *dir = dir_of(path);
    if (!dir)
        return;
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    free(dir);
    if (fd >= 0) {
        fsync(fd); /* the rename itself reaches the disk (best effort) */
        close(fd);
    }
}

zp_status zp_io_atomic_commit(zp_io_atomic *a)
{
    int bad = ferror(a->f) || fflush(a->f) != 0 || fsync(fileno(a->f)) != 0;
    if (bad) {
        zp_io_atomic_abort(a);
        return ZP_FAIL(ZP_EIO, "writing failed (disk full?); the previous file is untouched");
    }
    if (a->unnamed) {
        int e = link_unnamed(a);
        if (e != 0) {
            zp_status st = ZP_FAIL(ZP_EIO, "cannot name the new '%s': %s; the previous file is untouched", a->path,
                                   strerror(e));
            zp_io_atomic_abort(a);
            return st;
        }
    }
    bad = fclose(a->f) != 0;
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
    sync_dir(a->path);
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
        fclose(a->f); /* an unnamed temporary disappears with its last descriptor */
    if (a->tmp && !a->unnamed)
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

char *zp_io_trim(char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    size_t n = strlen(s);
    while (n > 0 && isspace((unsigned char)s[n - 1]))
        s[--n] = '\0';
    return s;
}
