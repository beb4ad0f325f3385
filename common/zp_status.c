#include "zp_status.h"

#include <stdio.h>
#include <string.h>

static _Thread_local char g_msg[1024];
static _Thread_local char g_origin[256];

zp_status zp_error_set(zp_status st, const char *file, int line, const char *fmt, ...)
{
    /* formatted apart first: the arguments may hold the previous message ("...: %s", zp_error_message()) */
    char msg[sizeof g_msg];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    memcpy(g_msg, msg, sizeof msg);
    const char *base = strrchr(file, '/');
    snprintf(g_origin, sizeof g_origin, "%s:%d", base ? base + 1 : file, line);
    return st;
}

const char *zp_error_message(void) { return g_msg; }
const char *zp_error_origin(void) { return g_origin; }

void zp_error_clear(void)
{
    g_msg[0] = '\0';
    g_origin[0] = '\0';
}

const char *zp_status_name(zp_status st)
{
    static const char *const names[] = {
        [ZP_OK] = "ok",           [ZP_EINVAL] = "invalid input", [ZP_ENOENT] = "no such file",
        [ZP_ENODEV] = "no device", [ZP_ERANGE] = "out of range",  [ZP_ENOMEM] = "out of memory",
        [ZP_EIO] = "I/O error",   [ZP_ERUNTIME] = "run-time error", [ZP_EUNSUPPORTED] = "unsupported",
        [ZP_ENOFIT] = "no plan fits",
    };
    if ((unsigned)st < sizeof names / sizeof names[0] && names[st])
        return names[st];
    return "unknown status";
}

int zp_status_exit_code(zp_status st)
{
    switch (st) {
    case ZP_OK: return 0;
    case ZP_EINVAL:
    case ZP_ENOENT:
    case ZP_ENODEV:
    case ZP_ERANGE:
    case ZP_EUNSUPPORTED: return 2;
    case ZP_ENOFIT: return 3;
    default: return 1;
    }
}
