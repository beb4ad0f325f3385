#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "zp_cli.h"
#include "zp_io.h"

int zp_cli_fail_as(const char *name, zp_status st)
{
    const char *msg = zp_error_message();
    fprintf(stderr, "%s: %s\n", name, msg && *msg ? msg : zp_status_name(st));
    return zp_status_exit_code(st);
}

int zp_cli_fail(zp_status st) { return zp_cli_fail_as("zplan", st); }

zp_status zp_cli_out_open(const char *path, zp_cli_out *o)
{
    o->atomic = NULL;
    o->f = stdout;
    o->path = path;
    if (!path)
        return ZP_OK;
    zp_io_atomic *a;
    ZP_TRY(zp_io_atomic_open(path, &a));
    o->atomic = a;
    o->f = zp_io_atomic_file(a);
    return ZP_OK;
}

zp_status zp_cli_out_close(zp_cli_out *o, zp_status st)
{
    if (!o->atomic) {
        if (fflush(stdout) != 0 && st == ZP_OK)
            return ZP_FAIL(ZP_EIO, "writing to standard output failed");
        return st;
    }
    if (st != ZP_OK) {
        zp_io_atomic_abort(o->atomic);
        return st;
    }
    ZP_TRY(zp_io_atomic_commit(o->atomic));
    fprintf(stderr, "zplan: wrote %s\n", o->path);
    return ZP_OK;
}

int zp_cli_write_table(zp_table *t, zp_format fmt, const char *path)
{
    zp_cli_out o;
    zp_status st = zp_cli_out_open(path, &o);
    if (st == ZP_OK) {
        st = zp_table_write(t, o.f, fmt);
        st = zp_cli_out_close(&o, st);
    }
    zp_table_free(t);
    return st == ZP_OK ? 0 : zp_cli_fail(st);
}

zp_status zp_cli_check_output(const char *option, const char *path)
{
    if (!path || strcmp(path, "-") == 0)
        return ZP_OK;
    struct stat sb;
    if (path[0] == '\0')
        return ZP_FAIL(ZP_EINVAL, "%s: an empty file name", option);
    if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode))
        return ZP_FAIL(ZP_EINVAL, "%s: '%s' is a directory; give a file name in it (e.g. %s/%s)", option, path, path,
                       strcmp(option, "--report") == 0 ? "answer.html" : strcmp(option, "--trace") == 0 ? "step.json"
                       : strcmp(option, "--emit-ds-config") == 0                                          ? "ds_config.json"
                                                                                                          : "answer.txt");
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash) {
        if (slash == dir)
            slash[1] = '\0';
        else
            *slash = '\0';
        if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode))
            return ZP_FAIL(ZP_EINVAL, "%s: the directory '%s' of '%s' does not exist", option, dir, path);
    }
    return ZP_OK;
}
