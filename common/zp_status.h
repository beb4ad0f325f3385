/* zp_status.h — status codes and the last-error message shared by every zplan library.
 *
 * Library code never prints and never exits: it records a one-line message with its
 * origin (file:line) and returns a status up the stack; only the CLI turns the status
 * into a message on stderr and an exit code (zp_status_exit_code). */
#ifndef ZP_STATUS_H
#define ZP_STATUS_H

#include <stdarg.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    ZP_OK = 0,
    ZP_EINVAL,       /* bad user input: option value, file content (exit 2) */
    ZP_ENOENT,       /* a file the user named is missing or unreadable (exit 2) */
    ZP_ENODEV,       /* the backend's device is absent, e.g. no CUDA GPU (exit 2) */
    ZP_ERANGE,       /* a value out of the range zplan can represent (exit 2) */
    ZP_ENOMEM,       /* allocation failed (exit 1) */
    ZP_EIO,          /* writing or reading failed at run time (exit 1) */
    ZP_ERUNTIME,     /* anything else that went wrong at run time (exit 1) */
    ZP_EUNSUPPORTED, /* asked for something this build does not have (exit 2) */
    ZP_ENOFIT        /* the question is valid and the answer is that no plan fits (exit 3) */
} zp_status;

/* Records the message of the failure being returned; returns `st` so that
 * `return zp_error_set(...)` reads naturally. Thread-local. */
zp_status zp_error_set(zp_status st, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* The message of the last failure (without file:line), "" if none. */
const char *zp_error_message(void);
/* "file:line" of the last failure, for --verbose and debugging. */
const char *zp_error_origin(void);
void zp_error_clear(void);

const char *zp_status_name(zp_status st);
/* 0 ok, 2 for bad usage or input (and missing device), 1 for run-time failures, 3 when no plan fits. */
int zp_status_exit_code(zp_status st);

#define ZP_FAIL(st, ...) zp_error_set((st), __FILE__, __LINE__, __VA_ARGS__)
/* Propagate a failing status unchanged (its message is already recorded). */
#define ZP_TRY(expr)                      \
    do {                                  \
        zp_status zp_try_st_ = (expr);    \
        if (zp_try_st_ != ZP_OK)          \
            return zp_try_st_;            \
    } while (0)

#ifdef __cplusplus
}
#endif

#endif
