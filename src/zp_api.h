/* zp_api.h — the command line as a library call, for the Python module (python/zplan, libzplan.so).
 *
 * zp_api_run runs exactly what `zplan ARGS` runs (zp_cli_main, the same dispatch, options, messages and
 * exit statuses) in this process, with its standard output and standard error collected in memory
 * instead of the process's: file descriptors 1 and 2 point at memory files for the call (so the
 * simulator's forked children, which inherit them, write there too) and are restored after it. Calls
 * are serialized (the descriptors are the process's); output other threads write to 1 or 2 meanwhile
 * lands in the collected text. Nothing exits: the status comes back. */
#ifndef ZP_API_H
#define ZP_API_H

#include <stddef.h>

/* Runs `argv[0] argv[1] ... argv[argc-1]` (argv[0] is the program's name, as main's). On return *out and
 * *err hold what it wrote to standard output and standard error, NUL-terminated (*out_len, *err_len:
 * their lengths without the NUL), to be freed with zp_api_free. Returns zplan's exit status: 0 ok,
 * 1 run-time failure, 2 bad usage or input, 3 no plan fits; -1 when the output could not be collected
 * (*err then says why, and nothing ran). */
int zp_api_run(int argc, const char *const *argv, char **out, size_t *out_len, char **err, size_t *err_len);
/* Frees what zp_api_run returned; NULL is accepted. */
void zp_api_free(void *p);
/* zplan's version ("0.1.0"). */
const char *zp_api_version(void);

#endif
