/* zp_io.h — atomic output files: everything zplan writes goes to a temporary file in
 * the target's directory and is renamed over the target only once complete and
 * flushed, so an interrupted write never damages what the user had. */
#ifndef ZP_IO_H
#define ZP_IO_H

#include <stddef.h>
#include <stdio.h>

#include "zp_status.h"

typedef struct zp_io_atomic zp_io_atomic;

/* Opens a temporary file beside `path`; write through zp_io_atomic_file(). */
zp_status zp_io_atomic_open(const char *path, zp_io_atomic **out);
FILE *zp_io_atomic_file(zp_io_atomic *a);
/* Flushes, fsyncs and renames over the target; frees `a` whatever happens. */
zp_status zp_io_atomic_commit(zp_io_atomic *a);
/* Removes the temporary file and frees `a`; accepts NULL. */
void zp_io_atomic_abort(zp_io_atomic *a);

/* Writes `len` bytes to `path` atomically. */
zp_status zp_io_write_file(const char *path, const void *data, size_t len);

/* Reads a whole file (at most `max_bytes`) into a NUL-terminated malloc'ed buffer. */
zp_status zp_io_read_file(const char *path, size_t max_bytes, char **out, size_t *len);

/* A line of text with the blanks (isspace: a CRLF file's '\r' too) cut off both ends, in place: the pointer
 * into s past the leading ones. */
char *zp_io_trim(char *s);

#endif
