#include <stdio.h>

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
    return zp_io_atomic_commit(o->atomic);
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
